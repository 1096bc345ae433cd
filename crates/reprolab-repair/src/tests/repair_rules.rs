//! Symptom detection (`reprolab_core::symptoms`, tested here on the traces the rules engine
//! sees), fix mapping and the rules engine.

use reprolab_core::{Goal, Subject};
use serde_json::{Value, json};

use super::*;
use crate::rules;
use crate::rules::{fixes, hidden_acts};
use reprolab_core::symptoms::{SymptomKind, detect, oscillations, parse_trace};
use reprolab_search::{Budget, SearchSettings, Stop};

/// The values the fixes that change `param` first set it to, in order.
fn values_of(fixes: &[Result<rules::Fix, rules::Skip>], param: &str) -> Vec<Value> {
    fixes
        .iter()
        .flatten()
        .filter(|f| f.changes[0].0 == param)
        .map(|f| f.changes[0].1.clone())
        .collect()
}

fn kinds(t: &Trace) -> Vec<SymptomKind> {
    detect(&parse_trace(&t.epochs))
        .iter()
        .map(|s| s.kind)
        .collect()
}

fn three_layers(g0: f64, g2: f64) -> impl Fn(usize) -> Vec<Value> {
    move |_| {
        vec![
            layer("0", "sigmoid", g0, 0.1),
            layer("1", "sigmoid", (g0 * g2).sqrt(), 0.1),
            layer("2", "softmax", g2, 0.0),
        ]
    }
}

const GOOD_ACC: [f64; 6] = [0.5, 0.7, 0.8, 0.85, 0.88, 0.9];
/// Converged: the last fall is under 2%, so nothing is still improving.
const GOOD_LOSS: [f64; 6] = [1.5, 0.9, 0.6, 0.45, 0.44, 0.438];

/// Flat, low accuracy: slow convergence.
const FLAT_ACC: [f64; 6] = [0.30, 0.305, 0.31, 0.312, 0.315, 0.317];

#[test]
fn a_healthy_trace_shows_nothing() {
    assert!(kinds(&healthy_trace()).is_empty());
    assert!(kinds(&Trace::default()).is_empty());
}

#[test]
fn each_symptom_is_detected_on_a_crafted_trace() {
    // Vanishing: ratio 1e-5 / 0.1 = 1e-4 < 1e-3 and ‖g_first‖ = 1e-5 < 1e-4.
    let t = trace_of(&GOOD_ACC, &GOOD_LOSS, three_layers(1e-5, 0.1));
    assert_eq!(kinds(&t), vec![SymptomKind::VanishingGradient]);
    let s = &detect(&parse_trace(&t.epochs))[0];
    assert_eq!(s.name, "vanishing_gradient");
    assert!(
        s.evidence.contains("epoch 0") && s.evidence.contains("1.00e-5"),
        "{}",
        s.evidence
    );
    // Small ratio but first gradient not below 1e-4: not vanishing.
    let t = trace_of(&GOOD_ACC, &GOOD_LOSS, three_layers(2e-4, 1.0));
    assert!(kinds(&t).is_empty());

    // Exploding: ratio 8 / 0.1 = 80 > 70.
    let t = trace_of(&GOOD_ACC, &GOOD_LOSS, three_layers(8.0, 0.1));
    assert_eq!(kinds(&t), vec![SymptomKind::ExplodingGradient]);
    let t = trace_of(&GOOD_ACC, &GOOD_LOSS, three_layers(6.0, 0.1));
    assert!(kinds(&t).is_empty());
    // A NaN gradient written as a string.
    let mut t = healthy_trace();
    t.epochs[2]["layers"][0]["grad_norm"] = json!("nan");
    assert_eq!(kinds(&t), vec![SymptomKind::ExplodingGradient]);

    // NaN in training, and a huge loss.
    let mut t = healthy_trace();
    t.epochs[3]["nan"] = json!(true);
    assert_eq!(kinds(&t), vec![SymptomKind::NanLoss]);
    let big = [2.0, 50.0, 1500.0, 900.0, 800.0, 800.0];
    let t = trace_of(&GOOD_ACC, &big, |_| {
        healthy_trace().epochs[0]["layers"]
            .as_array()
            .unwrap()
            .clone()
    });
    let found = detect(&parse_trace(&t.epochs));
    assert_eq!(found.len(), 1);
    assert!(
        found[0].evidence.contains("epoch 2"),
        "{}",
        found[0].evidence
    );

    // Dying ReLU: 80% zero gradients in a relu layer; not in a non-relu layer.
    let t = trace_of(&GOOD_ACC, &GOOD_LOSS, |i| {
        vec![
            layer("0", "relu", 0.05, if i == 4 { 0.8 } else { 0.3 }),
            layer("1", "tanh", 0.08, 0.9),
            layer("2", "softmax", 0.1, 0.0),
        ]
    });
    assert_eq!(kinds(&t), vec![SymptomKind::DyingRelu]);
    let t = trace_of(&GOOD_ACC, &GOOD_LOSS, |_| {
        vec![
            layer("0", "tanh", 0.05, 0.9),
            layer("1", "softmax", 0.1, 0.0),
        ]
    });
    assert!(kinds(&t).is_empty());

    // Unstable: accuracy zigzags by 0.1.
    let zig = [0.5, 0.6, 0.5, 0.6, 0.5, 0.6, 0.5, 0.6, 0.5, 0.6];
    let t = trace_of(&zig, &[0.5; 10], three_layers(0.05, 0.1));
    assert_eq!(kinds(&t), vec![SymptomKind::Unstable]);
    assert_eq!(oscillations(&zig, 0.03), 7);
    // Small wiggles (0.02) do not count.
    let small = [0.8, 0.82, 0.8, 0.82, 0.8, 0.82, 0.8, 0.82];
    assert_eq!(oscillations(&small, 0.03), 0);

    // Not converging: below 0.6 and no epoch gains 0.01.
    let t = trace_of(&FLAT_ACC, &[2.3; 6], three_layers(0.05, 0.1));
    assert_eq!(kinds(&t), vec![SymptomKind::NotConverging]);
    // Low but learning (a 0.05 gain): not flagged.
    let t = trace_of(
        &[0.3, 0.35, 0.4, 0.45, 0.5, 0.55],
        &[2.3; 6],
        three_layers(0.05, 0.1),
    );
    assert!(kinds(&t).is_empty());

    // Several symptoms come out in AutoTrainer's order.
    let t = trace_of(&FLAT_ACC, &[2.3; 6], three_layers(1e-6, 0.1));
    assert_eq!(
        kinds(&t),
        vec![SymptomKind::VanishingGradient, SymptomKind::NotConverging]
    );
}

#[test]
fn fixes_are_mapped_into_the_space() {
    let space = study_space(false);
    let names: Vec<&str> = hidden_acts(&space)
        .iter()
        .map(|p| p.name.as_str())
        .collect();
    assert_eq!(names, vec!["act0", "act1"]);
    let faulty = study_faulty();

    let v = fixes(SymptomKind::VanishingGradient, &space, &faulty);
    let first = v[0].as_ref().unwrap();
    assert_eq!(first.description, "act0=selu, act1=selu");
    assert_eq!(
        first.changes,
        vec![
            ("act0".into(), json!("selu")),
            ("act1".into(), json!("selu"))
        ]
    );
    // act0 and act1 are relu already.
    let skipped = |f: &Result<rules::Fix, rules::Skip>| f.as_ref().unwrap_err().to_string();
    assert!(skipped(&v[1]).contains("already"), "{:?}", v[1]);
    assert!(skipped(&v[2]).contains("batch normalisation"));

    // Dying ReLU: initialisers over every kernel-initialiser parameter; leaky_relu is not a
    // value of the space.
    let d = fixes(SymptomKind::DyingRelu, &space, &faulty);
    let inits: Vec<&str> = d.iter().flatten().map(|f| f.description.as_str()).collect();
    assert!(
        inits.contains(&"ki0=he_uniform, ki1=he_uniform, ki2=he_uniform"),
        "{inits:?}"
    );
    assert!(skipped(d.last().unwrap()).contains("\"leaky_relu\" is not a value"));

    // Unstable: lr ×0.1 ×0.01 ×0.001 from the current 3.0; batch sizes 32 (current) … 256.
    let u = fixes(SymptomKind::Unstable, &space, &faulty);
    let lrs = values_of(&u, "lr");
    assert_eq!(lrs, vec![json!(0.3), json!(0.03), json!(0.003)]);
    let batches = values_of(&u, "batch_size");
    assert_eq!(batches, vec![json!(64), json!(128), json!(256)]);
    assert!(skipped(&u[0]).contains("already")); // optimizer is adam

    // Not converging: lr for the current optimiser (adam: 0.001 · 10^j); for sgd 0.01 · 10^j.
    let n = fixes(SymptomKind::NotConverging, &space, &faulty);
    let lrs = values_of(&n, "lr");
    assert_eq!(lrs, vec![json!(0.001), json!(0.01), json!(0.1)]);
    let mut sgd = faulty.clone();
    sgd.insert("optimizer", json!("sgd"));
    let n = fixes(SymptomKind::NotConverging, &space, &sgd);
    let lrs = values_of(&n, "lr");
    assert_eq!(lrs, vec![json!(0.01), json!(0.1), json!(1.0)]);

    // A space without selu in its activations skips the fix with a note.
    let mut no_selu = space.clone();
    for p in &mut no_selu.params {
        if let reprolab_core::ParamKind::Choice { values } = &mut p.kind {
            values.retain(|v| v != "selu");
        }
    }
    let v = fixes(SymptomKind::VanishingGradient, &no_selu, &faulty);
    assert!(skipped(&v[0]).contains("\"selu\" is not a value of act0, act1"));
}

/// Accuracy 0.2 with sigmoid in layer 0, 0.5 with selu, 0.9 with relu … and vanishing
/// gradients in the trace while act0 is sigmoid.
fn vanishing_objective(selu: f64, tanh: f64) -> Synth {
    Synth::new(move |c, seed, _| {
        let base = match c.0["act0"].as_str().unwrap() {
            "sigmoid" => 0.2,
            "selu" => selu,
            "tanh" => tanh,
            "relu" => 0.85,
            _ => 0.3,
        };
        Some(base + 0.005 * noise(seed, config_stream(c)))
    })
    .with_trace(|c, _| {
        if c.0["act0"] == json!("sigmoid") {
            trace_of(&GOOD_ACC, &GOOD_LOSS, three_layers(1e-6, 0.1))
        } else {
            healthy_trace()
        }
    })
}

fn sigmoid_subject() -> Subject {
    let mut faulty = study_faulty();
    faulty.insert("act0", json!("sigmoid"));
    faulty.insert("act1", json!("sigmoid"));
    faulty.insert("act2", json!("softmax"));
    subject(study_space(false), faulty, Goal::Max, None)
}

#[test]
fn rules_repair_vanishing_gradients_by_retraining() {
    let subject = sigmoid_subject();
    let obj = vanishing_objective(0.9, 0.3);
    let s = SearchSettings {
        budget: Budget::TimeMultiple(20.0),
        seed: 1,
        ..SearchSettings::default()
    };
    let r = block_on(rules(&obj, &subject, &s)).unwrap();
    assert!(!r.no_symptom);
    assert_eq!(r.symptoms.len(), 1);
    assert_eq!(r.symptoms[0].kind, SymptomKind::VanishingGradient);
    assert_eq!(r.attempts.len(), 1);
    let a = &r.attempts[0];
    assert_eq!(a.fix, "act0=selu, act1=selu");
    assert!(a.accepted);
    // The fix was validated by a fresh training on the search split (trial 1, its own seed).
    assert_eq!(a.trial.number, 1);
    assert_eq!(a.trial.seed, 1001);
    let calls = obj.calls.borrow();
    assert_eq!(calls.len(), 4);
    assert_eq!(calls[1].0.0["act0"], json!("selu"));
    assert_eq!(calls[1].2, reprolab_core::Split::Search);
    // Re-traced: nothing left; then the gain is confirmed by 10 trainings of the faulty and
    // the repaired config on the search split (seeds 0..10, the validation's seeds).
    assert_eq!(obj.traces.get(), 2);
    assert!(r.remaining.is_empty());
    for (call, act) in calls[2..].iter().zip(["sigmoid", "selu"]) {
        assert_eq!(call.0.0["act0"], json!(act));
        assert_eq!(call.1, (0..10).collect::<Vec<u64>>());
        assert_eq!(call.2, reprolab_core::Split::Search);
    }
    let c = r.confirmation.as_ref().unwrap();
    assert!(
        c.significant && c.p_value < 0.05 && c.cohens_d > 0.5,
        "{c:?}"
    );
    assert_eq!(r.result.stop, Stop::Repaired);
    assert_eq!(r.result.engine, "rules");
    let best = r.result.best.unwrap();
    assert_eq!(best.config.0["act0"], json!("selu"));
    // Traces are charged to the time budget: two trainings' worth plus two trials; the
    // confirmation is validation's work, not the search's.
    let trials: f64 = r.result.trials.iter().map(|t| t.duration_s).sum();
    assert!((r.result.spent_s - (trials + 2.0 * 0.9)).abs() < 1e-9);
}

#[test]
fn rules_do_not_stop_as_repaired_on_a_one_training_gain() {
    // selu clears the symptom and wins its single search training (seed 1001) by chance, but
    // trains no better than sigmoid on any other seed: the engine must not call it repaired.
    let subject = sigmoid_subject();
    let obj = vanishing_objective(0.2, 0.2);
    let obj = Synth {
        metric: Box::new(|c, seed, _| {
            let lucky = c.0["act0"] == json!("selu") && seed == 1001;
            Some(if lucky {
                0.4
            } else {
                0.2 + 0.01 * noise(seed, 7)
            })
        }),
        ..obj
    };
    let s = SearchSettings {
        budget: Budget::Trials(10),
        seed: 1,
        ..SearchSettings::default()
    };
    let r = block_on(rules(&obj, &subject, &s)).unwrap();
    assert!(r.attempts[0].accepted, "{:?}", r.attempts);
    assert!(r.remaining.is_empty());
    let c = r.confirmation.as_ref().unwrap();
    assert!(!c.significant, "{c:?}");
    assert_eq!(r.result.stop, Stop::Unconfirmed);
    assert!(
        r.notes.iter().any(|n| n.contains("not confirmed")),
        "{:?}",
        r.notes
    );
    // Too few confirmation runs are refused.
    let e = block_on(rules::rules_with(
        &obj,
        &subject,
        &s,
        &rules::RulesOptions { confirm_runs: 1 },
    ))
    .unwrap_err();
    assert!(e.to_string().contains("confirm_runs"), "{e}");
}

#[test]
fn rules_keep_only_fixes_that_beat_the_best_so_far() {
    // selu is worse than sigmoid here: rejected; relu is better: kept.
    let subject = sigmoid_subject();
    let obj = vanishing_objective(0.1, 0.3);
    let s = SearchSettings {
        budget: Budget::Trials(10),
        ..SearchSettings::default()
    };
    let r = block_on(rules(&obj, &subject, &s)).unwrap();
    let tried: Vec<(&str, bool)> = r
        .attempts
        .iter()
        .map(|a| (a.fix.as_str(), a.accepted))
        .collect();
    assert_eq!(
        tried,
        vec![
            ("act0=selu, act1=selu", false),
            ("act0=relu, act1=relu", true)
        ]
    );
    assert!(
        r.notes.iter().any(|n| n.contains("batch normalisation")),
        "{:?}",
        r.notes
    );
    assert_eq!(r.result.stop, Stop::Repaired);
    assert_eq!(r.result.best.unwrap().config.0["act0"], json!("relu"));

    // No fix helps: the engine stops with NoFix, best stays the faulty config.
    let obj = vanishing_objective(0.1, 0.1);
    let obj = Synth {
        metric: Box::new(|c, _, _| {
            Some(if c.0["act0"] == json!("sigmoid") {
                0.5
            } else {
                0.2
            })
        }),
        ..obj
    };
    let r = block_on(rules(&obj, &subject, &s)).unwrap();
    assert_eq!(r.result.stop, Stop::NoFix);
    assert!(r.attempts.iter().all(|a| !a.accepted));
    assert_eq!(r.attempts.len(), 2); // selu, relu; batch normalisation is not in the space
    assert_eq!(r.result.best.unwrap().number, 0);

    // A trial budget ends the attempts.
    let s1 = SearchSettings {
        budget: Budget::Trials(2),
        ..SearchSettings::default()
    };
    let r = block_on(rules(&obj, &subject, &s1)).unwrap();
    assert_eq!(r.attempts.len(), 1);
    assert_eq!(r.result.stop, Stop::Budget);
}

#[test]
fn rules_say_no_symptom_on_a_healthy_config() {
    let subject = study_subject(false);
    let obj = Synth::study();
    let r = block_on(rules(&obj, &subject, &SearchSettings::default())).unwrap();
    assert!(r.no_symptom);
    assert!(r.symptoms.is_empty() && r.attempts.is_empty());
    assert_eq!(r.result.stop, Stop::NoSymptom);
    assert_eq!(r.result.trials.len(), 1);
    assert_eq!(obj.traces.get(), 1);
}

#[test]
fn an_output_without_gradient_and_a_loss_still_falling_are_symptoms() {
    // A softmax over one unit: every gradient is exactly 0 (and the ReLUs look dead).
    let t = trace_of(&FLAT_ACC, &[1.9; 6], |_| {
        vec![
            layer("0", "relu", 0.0, 1.0),
            layer("1", "relu", 0.0, 1.0),
            layer("2", "softmax", 0.0, 1.0),
        ]
    });
    let k = kinds(&t);
    assert_eq!(k[0], SymptomKind::NoGradient, "{k:?}");
    assert!(k.contains(&SymptomKind::DyingRelu), "{k:?}");
    // Near miss: one layer with a gradient.
    let t = trace_of(&GOOD_ACC, &GOOD_LOSS, |_| {
        vec![
            layer("0", "relu", 0.0, 0.2),
            layer("1", "softmax", 0.1, 0.0),
        ]
    });
    assert!(!kinds(&t).contains(&SymptomKind::NoGradient));

    // Too few epochs: the loss falls by 20% in the last one.
    let short = [2.0, 1.6, 1.3, 1.1, 0.9, 0.72];
    let t = trace_of(&GOOD_ACC, &short, three_layers(0.05, 0.1));
    assert_eq!(kinds(&t), vec![SymptomKind::StillImproving]);
    let s = detect(&parse_trace(&t.epochs));
    assert!(
        s[0].evidence.contains("the last by 20.0%"),
        "{}",
        s[0].evidence
    );
    // Near misses: a 1% last fall (converged), and a rise in the last three epochs.
    let flat = [2.0, 1.0, 0.6, 0.5, 0.45, 0.4455];
    let bumpy = [2.0, 1.6, 1.3, 1.35, 0.9, 0.72];
    for losses in [flat, bumpy] {
        let t = trace_of(&GOOD_ACC, &losses, three_layers(0.05, 0.1));
        assert!(kinds(&t).is_empty(), "{losses:?}: {:?}", kinds(&t));
    }
}

#[test]
fn the_new_rules_set_the_output_for_the_loss_and_more_epochs() {
    let mut space = study_space(false);
    space.params.push(reprolab_core::Param {
        name: "loss".into(),
        kind: reprolab_core::ParamKind::Choice {
            values: vec![
                json!("categorical_crossentropy"),
                json!("mean_squared_error"),
            ],
        },
        fault: Some(reprolab_core::FaultType::LCH),
        layer: None,
    });
    let mut faulty = study_faulty();
    faulty.insert("loss", json!("categorical_crossentropy"));
    // act2 is sigmoid under a categorical cross-entropy: softmax.
    let f = fixes(SymptomKind::NoGradient, &space, &faulty);
    assert_eq!(values_of(&f, "act2"), vec![json!("softmax")]);
    assert_eq!(rules::output_act(&space).unwrap().name, "act2");
    // Regression under softmax (the study's AAL fault): linear.
    let mut regression = faulty.clone();
    regression.insert("loss", json!("mean_squared_error"));
    regression.insert("act2", json!("softmax"));
    let f = fixes(SymptomKind::NoGradient, &space, &regression);
    assert_eq!(values_of(&f, "act2"), vec![json!("linear")]);
    // The output already fits: skipped.
    let mut fits = faulty.clone();
    fits.insert("act2", json!("softmax"));
    let f = fixes(SymptomKind::NoGradient, &space, &fits);
    assert!(
        f[0].as_ref().unwrap_err().to_string().contains("already"),
        "{f:?}"
    );

    // Still improving at 9 epochs: 18 (×2), then 27 (×4 = 36, the largest the space has).
    let s = fixes(SymptomKind::StillImproving, &space, &faulty);
    assert_eq!(values_of(&s, "epochs"), vec![json!(18), json!(27)]);
    // lr 3.0 × 10 is outside [1e-6, 10]: skipped, saying so.
    assert!(values_of(&s, "lr").is_empty());
    assert!(
        s[2].as_ref().unwrap_err().to_string().contains("outside"),
        "{s:?}"
    );
    let mut at_most = faulty.clone();
    at_most.insert("epochs", json!(27));
    let s = fixes(SymptomKind::StillImproving, &space, &at_most);
    assert!(
        s[0].as_ref().unwrap_err().to_string().contains("already"),
        "{s:?}"
    );

    // A regression pinned at a bounded output: the output its loss expects.
    let f = fixes(SymptomKind::BoundedOutput, &space, &regression);
    assert_eq!(values_of(&f, "act2"), vec![json!("linear")]);
    // A linear model: every hidden activation relu, then tanh, then selu.
    let mut linear = faulty.clone();
    for act in rules::hidden_acts(&space) {
        linear.insert(&act.name, json!("linear"));
    }
    let f = fixes(SymptomKind::LinearModel, &space, &linear);
    assert_eq!(
        values_of(&f, "act0"),
        vec![json!("relu"), json!("tanh"), json!("selu")]
    );

    // Few updates: more of them per epoch first (batch 32), then epochs ×4 and ×2.
    let mut large = faulty.clone();
    large.insert("batch_size", json!(512));
    let s = fixes(SymptomKind::FewUpdates, &space, &large);
    assert_eq!(values_of(&s, "batch_size"), vec![json!(32)]);
    assert_eq!(values_of(&s, "epochs"), vec![json!(27), json!(18)]);

    // Stuck predictions under a regression loss on a softmax output (H8's fault): the loss the
    // output expects first, then the output for the loss.
    let mut stuck = faulty.clone();
    stuck.insert("loss", json!("mean_squared_error"));
    stuck.insert("act2", json!("softmax"));
    let s = fixes(SymptomKind::StuckPredictions, &space, &stuck);
    assert_eq!(
        values_of(&s, "loss"),
        vec![json!("categorical_crossentropy")]
    );
    assert_eq!(values_of(&s, "act2"), vec![json!("linear")]);
    // A linear output has no classification loss of its own: skipped, with the reason.
    let mut linear_out = stuck.clone();
    linear_out.insert("act2", json!("linear"));
    let s = fixes(SymptomKind::StuckPredictions, &space, &linear_out);
    assert!(
        s[0].as_ref()
            .unwrap_err()
            .to_string()
            .contains("no classification loss"),
        "{s:?}"
    );
    // A diverged training: the optimizer's usual learning rate first, then smaller steps.
    let mut huge = faulty.clone();
    huge.insert("optimizer", json!("adam"));
    huge.insert("lr", json!(5.0));
    let s = fixes(SymptomKind::Diverged, &space, &huge);
    assert_eq!(
        values_of(&s, "lr"),
        vec![json!(0.001), json!(0.5), json!(0.05), json!(0.005)],
        "{s:?}"
    );
    // A crawling loss: a stronger optimizer first, then a larger learning rate.
    let mut adadelta = faulty.clone();
    adadelta.insert("optimizer", json!("adadelta"));
    adadelta.insert("lr", json!(0.001));
    let s = fixes(SymptomKind::CrawlingLoss, &space, &adadelta);
    assert!(
        s[0].as_ref()
            .unwrap()
            .description
            .starts_with("optimizer=adam"),
        "{s:?}"
    );
    assert!(
        s[1].as_ref().unwrap().description.starts_with("lr="),
        "{s:?}"
    );
}
