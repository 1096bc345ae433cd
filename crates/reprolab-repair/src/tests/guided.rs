//! FL-guided repair, guided by synthetic suspects on synthetic objectives.

use std::cell::Cell;
use std::collections::BTreeSet;

use reprolab_core::{Param, ParamKind, SearchSpace, Subject, Suspect};
use reprolab_search::{
    Budget, SearchResult, SearchSettings, TpeSampler, Trial, search, trial_seed,
};
use serde_json::{Value, json};

use super::*;
use crate::guided::{PRIOR_WEIGHT, guided, suggested_changes, suspected_space, suspicion_prior};
use crate::patch_diff;

fn suspect(label: &str, confidence: f64, suggestion: Option<&str>) -> Suspect {
    Suspect::new(
        label.parse().unwrap(),
        confidence,
        "synthetic",
        "a test suspect",
    )
    .suggest(suggestion.map(String::from))
}

fn changed(subject: &Subject, t: &Trial) -> BTreeSet<String> {
    patch_diff(&subject.config, &t.config)
        .into_iter()
        .map(|(k, _, _)| k)
        .collect()
}

fn keys(xs: &[&str]) -> BTreeSet<String> {
    xs.iter().map(|s| s.to_string()).collect()
}

fn run(
    obj: &Synth,
    subject: &Subject,
    budget: Budget,
    seed: u64,
    suspects: &[Suspect],
) -> SearchResult {
    let s = SearchSettings {
        budget,
        seed,
        ..SearchSettings::default()
    };
    block_on(guided(obj, subject, &s, |_, _| suspects.to_vec())).unwrap()
}

#[test]
fn the_suspected_space_follows_fault_types_layers_and_the_threshold() {
    let subject = study_subject(true);
    let names = |suspects: &[Suspect]| -> Vec<String> {
        suspected_space(&subject, suspects)
            .params
            .into_iter()
            .map(|p| p.name)
            .collect()
    };
    // ARM counts as ACH; a labelled layer keeps only that layer's parameter; below the
    // threshold (WCI at 0.3) nothing is suspected; space order is kept.
    let suspects = [
        suspect("HLR", 0.6, None),
        suspect("ACH(2)", 0.8, None),
        suspect("WCI", 0.3, None),
        suspect("ARM(1)", 0.7, None),
    ];
    assert_eq!(names(&suspects), vec!["act1", "act2", "lr"]);
    // A type without layers suspects every layer.
    assert_eq!(
        names(&[suspect("ACH", 0.5, None)]),
        vec!["act0", "act1", "act2"]
    );
    assert!(names(&[]).is_empty());
}

#[test]
fn the_prior_weighs_suspected_parameters_by_their_highest_confidence() {
    let subject = study_subject(true);
    let suspects = [
        suspect("HLR", 0.6, None),
        suspect("HLR", 0.9, None),
        suspect("ACH(2)", 0.3, None),
        suspect("WCI", 0.2, None), // below NEXT_THRESHOLD: no weight
    ];
    let prior = suspicion_prior(&subject, &suspects);
    assert_eq!(
        prior,
        vec![
            ("act2".to_string(), 1.0 + PRIOR_WEIGHT * 0.3),
            ("lr".to_string(), 1.0 + PRIOR_WEIGHT * 0.9),
        ]
    );
    assert!(suspicion_prior(&subject, &[]).is_empty());
}

#[test]
fn suggestions_are_read_in_rank_order_and_checked_against_the_space() {
    let subject = study_subject(true);
    let suspects = [
        suspect(
            "ACH(2)",
            0.9,
            Some("act2: sigmoid -> softmax, lr: 3 -> 0.005"),
        ),
        // The first suggestion for a key wins.
        suspect("HLR", 0.7, Some("lr: 3 -> 0.01")),
        // Below the threshold.
        suspect("OCH", 0.2, Some("optimizer: adam -> sgd")),
        // Not values of the space, or not a change at all.
        suspect("HBS", 0.6, Some("batch_size: 32 -> 33")),
        suspect("ACH(0)", 0.6, Some("act0: relu -> nonsense, just a remark")),
    ];
    assert_eq!(
        suggested_changes(&subject, &suspects),
        vec![
            ("act2".to_string(), json!("softmax")),
            ("lr".to_string(), json!(0.005)),
        ]
    );
}

#[test]
fn suggestions_come_first_then_tpe_on_the_suspected_parameters() {
    let subject = study_subject(true);
    let suspects = [suspect(
        "ACH(2)",
        0.9,
        Some("act2: sigmoid -> softmax, lr: 3 -> 0.005"),
    )];
    let obj = Synth::study();
    let r = run(&obj, &subject, Budget::Trials(20), 3, &suspects);
    // One traced training for localisation.
    assert_eq!(obj.traces.get(), 1);
    assert_eq!(r.engine, "guided");
    // All suggested changes together, then each alone.
    let mut all = subject.config.clone();
    all.insert("act2", json!("softmax"));
    all.insert("lr", json!(0.005));
    assert_eq!(r.trials[1].config, all);
    assert_eq!(changed(&subject, &r.trials[2]), keys(&["act2"]));
    assert_eq!(changed(&subject, &r.trials[3]), keys(&["lr"]));
    // The search gets 16 of the 20 trials, half per phase; the second phase goes on from the
    // first's trials (the faulty config is not trained again) with seeds of its own, numbered
    // after them. The last 4 re-train finalists.
    assert_eq!(r.trials.len(), 20);
    assert!(r.trials.iter().enumerate().all(|(i, t)| t.number == i));
    assert_eq!(r.trials[7].seed, trial_seed(3, 7));
    assert_eq!(r.trials[8].seed, trial_seed(3 + 7919, 8));
    assert!(r.trials[..16].iter().all(|t| t.confirms.is_none()));
    for t in &r.trials[16..] {
        let of = t.confirms.expect("a confirmation");
        assert_eq!(t.config, r.trials[of].config);
        assert_eq!(t.seed, trial_seed(3 + 2 * 7919, t.number));
    }
    // The first phase improved, so both phases search the suspected parameters (act2, plus lr
    // that a suggestion names) only.
    for t in &r.trials {
        assert!(
            changed(&subject, t).is_subset(&keys(&["act2", "lr"])),
            "{t:?}"
        );
    }
    assert!(r.best.as_ref().unwrap().value.unwrap() > 0.9);
    // Every training is counted, once.
    let durations: f64 = r.trials.iter().map(|t| t.duration_s).sum();
    assert!((r.spent_s - durations).abs() < 1e-9);
    // Same seed, same proposals.
    let again = run(&Synth::study(), &subject, Budget::Trials(20), 3, &suspects);
    assert_eq!(again, r);
}

#[test]
fn after_an_improvement_the_second_half_adds_the_next_suspects() {
    // Two causes: the output activation (named) and the epochs (ranked below the threshold).
    // Fixing act2 helps; only fixing both reaches the top.
    let obj = Synth::new(|c, _, _| {
        let out = c.get("act2") == Some(&json!("softmax"));
        let long = c.get("epochs").and_then(Value::as_i64).unwrap_or(0) >= 18;
        Some(0.1 + if out { 0.4 } else { 0.0 } + if out && long { 0.4 } else { 0.0 })
    });
    let subject = study_subject(true);
    let suspects = [
        suspect("ACH(2)", 0.9, Some("act2: sigmoid -> softmax")),
        suspect("HNE", 0.3, None),
        suspect("WCI", 0.1, None),
    ];
    // 32 of the 40 trials search, 16 per phase.
    let r = run(&obj, &subject, Budget::Trials(40), 2, &suspects);
    let (first, second) = r.trials.split_at(16);
    for t in first {
        assert!(changed(&subject, t).is_subset(&keys(&["act2"])), "{t:?}");
    }
    for t in second {
        assert!(
            changed(&subject, t).is_subset(&keys(&["act2", "epochs"])),
            "the second half adds HNE, not WCI (0.1): {t:?}"
        );
    }
    assert!(
        r.best.as_ref().unwrap().value.unwrap() > 0.85,
        "{:?}",
        r.best
    );
}

#[test]
fn nothing_suspected_is_a_tpe_search_of_the_whole_space() {
    let subject = study_subject(true);
    let obj = Synth::study();
    let r = run(&obj, &subject, Budget::Trials(20), 5, &[]);
    // The search part of the budget (16 of 20 trials) is one TPE search; its finalists are
    // then re-trained.
    let s = SearchSettings {
        budget: Budget::Trials(16),
        seed: 5 + 7919,
        ..SearchSettings::default()
    };
    let tpe = block_on(search(
        &Synth::study(),
        &subject,
        &mut TpeSampler::new(5 + 7919, subject.metric.goal),
        &s,
    ))
    .unwrap();
    assert_eq!(r.engine, "guided");
    assert_eq!(r.trials[..16], tpe.trials[..]);
    assert!(r.trials[16..].iter().all(|t| t.confirms.is_some()));
    // Without a first phase the wide search gets the whole budget, a time budget too.
    let t = run(&obj, &subject, Budget::TimeMultiple(10.0), 5, &[]);
    assert_eq!(t.budget_s, Some(10.0 * t.trials[0].duration_s));
}

#[test]
fn a_wrong_suspicion_is_widened_to_the_whole_space() {
    // Only act2 matters, without noise: changing the optimizer never beats the faulty config.
    let obj = Synth::new(|c, _, _| {
        Some(if c.get("act2") == Some(&json!("softmax")) {
            0.9
        } else {
            0.1
        })
    });
    let subject = study_subject(true);
    let traces = Cell::new(0);
    let s = SearchSettings {
        budget: Budget::Trials(40),
        seed: 2,
        ..SearchSettings::default()
    };
    let r = block_on(guided(&obj, &subject, &s, |subj, trace| {
        // Localisation sees the subject and the faulty config's trace.
        assert_eq!(subj.name, subject.name);
        assert!(trace.finished && !trace.epochs.is_empty());
        traces.set(traces.get() + 1);
        vec![suspect("OCH", 0.9, None)]
    }))
    .unwrap();
    assert_eq!(traces.get(), 1);
    let (first, second) = r.trials.split_at(16);
    for t in first {
        assert!(
            changed(&subject, t).is_subset(&keys(&["optimizer"])),
            "{t:?}"
        );
    }
    assert!(
        second
            .iter()
            .any(|t| !changed(&subject, t).is_subset(&keys(&["optimizer"]))),
        "the second phase searched the whole space"
    );
    assert!(
        second
            .iter()
            .any(|t| t.config.get("act2") == Some(&json!("softmax")))
    );
    assert!(
        r.best
            .as_ref()
            .is_some_and(|b| b.config.get("act2") == Some(&Value::from("softmax")))
    );
}

#[test]
fn a_rate_drawn_uniformly_in_the_space_is_searched_on_a_log_scale() {
    // The study's space draws lr uniformly from [1e-6, 10]: nine draws in ten land above 1.
    // Only a rate between 1e-3 and 1e-1 repairs this fault (two decades of seven).
    let obj = Synth::new(|c, _, _| {
        let lr = c.get("lr").and_then(Value::as_f64).unwrap_or(0.0);
        Some(if (1e-3..=1e-1).contains(&lr) {
            0.9
        } else {
            0.1
        })
    });
    let subject = study_subject(false);
    let r = run(
        &obj,
        &subject,
        Budget::Trials(30),
        4,
        &[suspect("HLR", 0.9, None)],
    );
    let rates: Vec<f64> = r.trials[1..]
        .iter()
        .filter_map(|t| t.config.get("lr").and_then(Value::as_f64))
        .collect();
    let below_one = rates.iter().filter(|&&lr| lr < 1.0).count();
    assert!(
        below_one * 2 > rates.len(),
        "most rates below 1 on a log scale: {rates:?}"
    );
    assert!(r.best.unwrap().value.unwrap() > 0.5);
    // The bounds are the space's: no rate outside [1e-6, 10].
    assert!(rates.iter().all(|lr| (1e-6..=10.0).contains(lr)));
    // Floats spanning fewer than three decades keep their scale.
    let narrow = crate::guided::log_scaled(SearchSpace {
        params: vec![Param {
            name: "dropout".into(),
            kind: ParamKind::Float {
                low: 0.01,
                high: 0.5,
            },
            fault: None,
            layer: None,
        }],
    });
    assert!(matches!(narrow.params[0].kind, ParamKind::Float { .. }));
}

#[test]
fn a_suspected_switch_without_a_suggestion_is_flipped_first() {
    // D9's shape: the labels are scaled by a switch in {1, 255} (CPP), and localisation names
    // CPP without a value, beside an output activation it has a suggestion for.
    let mut subject = study_subject(true);
    subject.space.params.push(choice(
        "label_scale",
        vec![json!(1), json!(255)],
        reprolab_core::FaultType::CPP,
        None,
    ));
    subject.config.insert("label_scale", json!(255));
    let obj = Synth::new(|c, _, _| {
        Some(if c.get("label_scale") == Some(&json!(1)) {
            0.9
        } else {
            0.1
        })
    });
    let suspects = [
        suspect("ACH(2)", 0.6, Some("act2: sigmoid -> softmax")),
        suspect("CPP", 0.6, None),
    ];
    let r = run(&obj, &subject, Budget::Trials(10), 1, &suspects);
    assert_eq!(
        changed(&subject, &r.trials[1]),
        keys(&["act2", "label_scale"])
    );
    assert_eq!(changed(&subject, &r.trials[2]), keys(&["act2"]));
    assert_eq!(changed(&subject, &r.trials[3]), keys(&["label_scale"]));
    assert_eq!(r.trials[3].value, Some(0.9));
    // Only a suspect without a suggestion of its own, and only a two-valued choice, is flipped.
    let with_suggestion = [suspect("CPP", 0.6, Some("lr: 3 -> 0.01"))];
    assert!(crate::guided::switched(&subject, &with_suggestion).is_empty());
    assert!(crate::guided::switched(&subject, &[suspect("OCH", 0.9, None)]).is_empty());
}

#[test]
fn without_two_finalists_the_confirmation_share_goes_on_searching() {
    // Nothing beats the faulty config: there is nothing to confirm, so the 4 trials set aside
    // for confirmation search on (over the last phase's space, seeds of their own).
    let obj = Synth::new(|_, _, _| Some(0.1));
    let subject = study_subject(true);
    let r = run(
        &obj,
        &subject,
        Budget::Trials(20),
        5,
        &[suspect("OCH", 0.9, None)],
    );
    assert_eq!(r.trials.len(), 20);
    assert!(r.trials.iter().all(|t| t.confirms.is_none()));
    assert!(r.trials.iter().enumerate().all(|(i, t)| t.number == i));
    assert_eq!(r.trials[16].seed, trial_seed(5 + 3 * 7919, 16));
    assert_eq!(obj.trainings(), 20);
    // A time budget too: the search spends the whole of it, passing it by less than a trial.
    let obj = Synth::new(|_, _, _| Some(0.1));
    let t = run(
        &obj,
        &subject,
        Budget::TimeMultiple(10.0),
        5,
        &[suspect("OCH", 0.9, None)],
    );
    let whole = t.budget_s.unwrap();
    assert!(t.spent_s >= whole - 1e-9, "{} of {whole}", t.spent_s);
    let last = t.trials.last().unwrap().duration_s;
    assert!(t.spent_s < whole + last, "{} of {whole}", t.spent_s);
}
