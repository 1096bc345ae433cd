//! Unit tests on synthetic objectives (no Python).

use std::cell::Cell;
use std::future::Future;
use std::path::{Path, PathBuf};

use reprolab_core::{
    Config, FaultLabel, FaultType, Goal, Param, ParamKind, SearchSpace, Split, Subject,
};
use reprolab_search::testing::{block_on, noise};
use serde_json::{Value, json};

use crate::*;

// ---------------------------------------------------------------- helpers

fn subject_dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../subjects")
        .join(name)
}

fn digits() -> Subject {
    Subject::load(&subject_dir("digits-mlp")).unwrap()
}

fn sample(mean: f64, spread: f64, n: usize, stream: u64) -> Vec<Option<f64>> {
    (0..n as u64)
        .map(|s| Some(mean + spread * noise(s, stream)))
        .collect()
}

struct Synth<F: Fn(&Config, u64) -> Option<f64>> {
    f: F,
    calls: Cell<usize>,
}

impl<F: Fn(&Config, u64) -> Option<f64>> Synth<F> {
    fn new(f: F) -> Self {
        Synth {
            f,
            calls: Cell::new(0),
        }
    }
}

impl<F: Fn(&Config, u64) -> Option<f64>> Trainer for Synth<F> {
    fn train(
        &self,
        config: &Config,
        seeds: &[u64],
        _split: Split,
    ) -> impl Future<Output = Result<Vec<Option<f64>>, crate::TrainError>> {
        self.calls.set(self.calls.get() + seeds.len());
        let out: Vec<Option<f64>> = seeds.iter().map(|s| (self.f)(config, *s)).collect();
        std::future::ready(Ok(out))
    }
}

fn f64_of(c: &Config, k: &str) -> f64 {
    c.get(k).and_then(Value::as_f64).unwrap()
}

fn str_of<'c>(c: &'c Config, k: &str) -> &'c str {
    c.get(k).and_then(Value::as_str).unwrap()
}

fn targets(ms: &[Mutation], param: &str) -> Vec<Value> {
    ms.iter()
        .filter(|m| m.param == param)
        .map(|m| m.to.clone())
        .collect()
}

fn param(name: &str, kind: ParamKind, fault: FaultType, layer: Option<u32>) -> Param {
    Param {
        name: name.into(),
        kind,
        fault: Some(fault),
        layer,
    }
}

// ---------------------------------------------------------------- operators

#[test]
fn candidates_on_digits_mlp() {
    let s = digits();
    let (space, cfg) = (&s.space, &s.config);
    let c = |op| candidates(op, space, cfg).unwrap();

    let hbs = c(FaultType::HBS);
    assert_eq!(
        targets(&hbs, "batch_size"),
        vec![json!(64), json!(256), json!(512)]
    );
    assert!(hbs.iter().all(|m| m.label.to_string() == "HBS"));

    let hlr = c(FaultType::HLR);
    assert_eq!(targets(&hlr, "lr"), vec![json!(10.0), json!(1e-6)]);
    assert_eq!(hlr[0].from, json!(0.001));
    assert_eq!(hlr[0].label.to_string(), "HLR");

    // HNE: the smallest listed epochs (the bound the search starts from).
    let hne = c(FaultType::HNE);
    assert_eq!(targets(&hne, "epochs"), vec![json!(10)]);

    let ach = c(FaultType::ACH);
    assert_eq!(ach.len(), 30);
    let act2 = targets(&ach, "act2");
    assert_eq!(act2.len(), 10);
    assert!(!act2.contains(&json!("softmax")) && act2.contains(&json!("sigmoid")));
    let labels: Vec<String> = ach.iter().map(|m| m.label.to_string()).collect();
    assert_eq!(labels[0], "ACH(0)");
    assert_eq!(labels[29], "ACH(2)");

    let arm = c(FaultType::ARM);
    assert_eq!(arm.len(), 3);
    assert!(arm.iter().all(|m| m.to == json!("linear")));
    let labels: Vec<String> = arm.iter().map(|m| m.label.to_string()).collect();
    assert_eq!(labels, ["ARM(0)", "ARM(1)", "ARM(2)"]);

    assert_eq!(c(FaultType::WCI).len(), 36);
    assert_eq!(c(FaultType::BCI).len(), 36);
    assert_eq!(c(FaultType::BCI)[0].label.to_string(), "BCI(0)");
    assert_eq!(c(FaultType::LCH).len(), 12);

    let och = c(FaultType::OCH);
    assert_eq!(
        targets(&och, "optimizer"),
        vec![
            json!("sgd"),
            json!("rmsprop"),
            json!("adagrad"),
            json!("adamax"),
            json!("nadam")
        ]
    );

    let lrm = c(FaultType::LRM);
    assert_eq!(targets(&lrm, "layer1"), vec![json!(0)]);
    assert_eq!(lrm[0].label.to_string(), "LRM(1)");
    let lad = c(FaultType::LAD);
    assert_eq!(targets(&lad, "layer1"), vec![json!(2)]);
    assert_eq!(lad[0].label.to_string(), "LAD(1)");

    let lcn = c(FaultType::LCN);
    assert_eq!(targets(&lcn, "unit0"), vec![json!(32), json!(128)]);
    assert_eq!(lcn.len(), 4);
    assert_eq!(lcn[2].label.to_string(), "LCN(1)");

    // Every mutant lies in its parameter's domain and changes the config.
    for op in FaultType::ALL {
        for m in candidates(op, space, cfg).unwrap_or_default() {
            let p = space.get(&m.param).unwrap();
            assert!(p.contains(&m.to), "{op}: {} outside the domain", m.id());
            assert_ne!(m.apply(cfg), *cfg);
            assert!(space.validate(&m.apply(cfg)).is_empty());
        }
    }
}

#[test]
fn not_applicable_operators_say_why() {
    let s = digits();
    let na = |op| candidates(op, &s.space, &s.config).unwrap_err();
    let e = na(FaultType::HDB).with_subject("digits-mlp");
    assert_eq!(
        e.to_string(),
        "HDB cannot apply to digits-mlp: its space declares no parameter with fault HDB (a \
         full-batch switch)"
    );
    assert_eq!(e.operator, FaultType::HDB);
    for op in [FaultType::RAW, FaultType::LCF, FaultType::CPP] {
        let e = na(op);
        assert!(
            e.to_string()
                .contains(&format!("no parameter with fault {op}")),
            "{e}"
        );
    }
    // No activation is linear: nothing to add one to.
    let e = na(FaultType::AAL);
    assert!(
        e.reason.contains("'act0' = \"relu\" is not \"linear\""),
        "{e}"
    );
    assert!(
        e.to_string()
            .starts_with("AAL cannot apply to this subject")
    );
}

#[test]
fn operators_follow_the_current_config() {
    let s = digits();
    let mut cfg = s.config.clone();
    cfg.insert("act2", json!("linear"));
    cfg.insert("layer1", json!(0));
    cfg.insert("epochs", json!(10));
    cfg.insert("batch_size", json!(512));
    let aal = candidates(FaultType::AAL, &s.space, &cfg).unwrap();
    assert_eq!(aal.len(), 10);
    assert!(
        aal.iter()
            .all(|m| m.param == "act2" && m.label.to_string() == "AAL(2)")
    );
    assert_eq!(candidates(FaultType::ARM, &s.space, &cfg).unwrap().len(), 2);
    let e = candidates(FaultType::LRM, &s.space, &cfg).unwrap_err();
    assert!(e.reason.contains("no smaller value"), "{e}");
    assert_eq!(
        targets(
            &candidates(FaultType::LAD, &s.space, &cfg).unwrap(),
            "layer1"
        ),
        vec![json!(1), json!(2)]
    );
    let e = candidates(FaultType::HNE, &s.space, &cfg).unwrap_err();
    assert!(e.reason.contains("already the smallest"), "{e}");
    assert_eq!(
        targets(
            &candidates(FaultType::HBS, &s.space, &cfg).unwrap(),
            "batch_size"
        ),
        vec![json!(32), json!(64), json!(256)]
    );
}

#[test]
fn operators_on_other_parameter_kinds() {
    let space = SearchSpace {
        params: vec![
            param(
                "bs",
                ParamKind::Int { low: 1, high: 100 },
                FaultType::HBS,
                None,
            ),
            param(
                "lr",
                ParamKind::LogFloat {
                    low: 1e-4,
                    high: 1.0,
                },
                FaultType::HLR,
                None,
            ),
            param(
                "epochs",
                ParamKind::Int { low: 0, high: 200 },
                FaultType::HNE,
                None,
            ),
            param(
                "full_batch",
                ParamKind::Choice {
                    values: vec![json!(false), json!(true)],
                },
                FaultType::HDB,
                None,
            ),
            param(
                "opt",
                ParamKind::Choice {
                    values: vec![json!("adam"), json!("adadelta"), json!("sgd")],
                },
                FaultType::OCH,
                None,
            ),
            param(
                "reg1",
                ParamKind::Choice {
                    values: vec![json!(null), json!("l1"), json!("l2"), json!("l1_l2")],
                },
                FaultType::RAW,
                Some(1),
            ),
            param(
                "scale",
                ParamKind::Float {
                    low: 0.0,
                    high: 1.0,
                },
                FaultType::CPP,
                None,
            ),
        ],
    };
    let cfg: Config = serde_json::from_value(json!({
        "bs": 50, "lr": 1.0, "epochs": 20, "full_batch": false, "opt": "adam",
        "reg1": null, "scale": 0.5
    }))
    .unwrap();
    assert!(space.validate(&cfg).is_empty());
    let c = |op| candidates(op, &space, &cfg);
    assert_eq!(
        targets(&c(FaultType::HBS).unwrap(), "bs"),
        vec![json!(32), json!(64)]
    );
    // lr at its high bound: only the way down.
    assert_eq!(
        targets(&c(FaultType::HLR).unwrap(), "lr"),
        vec![json!(1e-4)]
    );
    // HNE on an int goes down to max(low, 1).
    assert_eq!(
        targets(&c(FaultType::HNE).unwrap(), "epochs"),
        vec![json!(1)]
    );
    assert_eq!(
        targets(&c(FaultType::HDB).unwrap(), "full_batch"),
        vec![json!(true)]
    );
    // adadelta is not one of DeepCrime's optimisers.
    assert_eq!(
        targets(&c(FaultType::OCH).unwrap(), "opt"),
        vec![json!("sgd")]
    );
    let raw = c(FaultType::RAW).unwrap();
    assert_eq!(raw.len(), 3);
    assert_eq!(raw[0].label.to_string(), "RAW(1)");
    assert_eq!(raw[2].id(), "RAW-reg1-l1_l2");
    // Exhaustive operators cannot enumerate a continuous parameter.
    let e = c(FaultType::CPP).unwrap_err();
    assert!(e.reason.contains("'scale' is a number in [0, 1]"), "{e}");
    let e = c(FaultType::LRM).unwrap_err();
    assert!(
        e.reason.contains("no parameter with fault LAD or LRM"),
        "{e}"
    );
    let e = c(FaultType::ARM).unwrap_err();
    assert!(e.reason.contains("fault ACH"), "{e}");
}

#[test]
fn mutation_apply_and_id() {
    let s = digits();
    let m = Mutation {
        operator: FaultType::ACH,
        param: "act2".into(),
        from: json!("softmax"),
        to: json!("sigmoid"),
        label: "ACH(2)".parse().unwrap(),
    };
    let mutant = m.apply(&s.config);
    assert_eq!(mutant.get("act2"), Some(&json!("sigmoid")));
    assert_eq!(s.config.diff(&mutant).len(), 1);
    // Key order is kept.
    assert!(mutant.keys().eq(s.config.keys()));
    assert_eq!(m.id(), "ACH-act2-sigmoid");
    let lr = Mutation {
        operator: FaultType::HLR,
        param: "lr".into(),
        from: json!(0.001),
        to: json!(3.16),
        label: FaultLabel::new(FaultType::HLR),
    };
    assert_eq!(lr.id(), "HLR-lr-3.16");
    assert_eq!(
        Mutation {
            to: json!(10.0),
            ..lr.clone()
        }
        .id(),
        "HLR-lr-10"
    );
    assert_eq!(
        Mutation {
            to: json!(1e-6),
            ..lr.clone()
        }
        .id(),
        "HLR-lr-1e-6"
    );
    assert_eq!(
        Mutation {
            param: "a b/c".into(),
            to: json!([1, "x"]),
            ..lr
        }
        .id(),
        "HLR-a_b_c-_1__x__"
    );
    let j = serde_json::to_value(&m).unwrap();
    assert_eq!(
        j,
        json!({"operator": "ACH", "param": "act2", "from": "softmax", "to": "sigmoid", "label": "ACH(2)"})
    );
    assert_eq!(serde_json::from_value::<Mutation>(j).unwrap(), m);
}

#[test]
fn operator_lists_parse() {
    assert_eq!(
        parse_operators("HLR, ach,HLR").unwrap(),
        vec![FaultType::HLR, FaultType::ACH]
    );
    assert_eq!(parse_operators("all").unwrap().len(), 17);
    let e = parse_operators("HLR,XYZ").unwrap_err().to_string();
    assert!(e.contains("XYZ"), "{e}");
    assert!(parse_operators(" , ").is_err());
    assert!(is_searched(FaultType::HNE) && !is_searched(FaultType::HBS));
}

// ---------------------------------------------------------------- killing criterion

#[test]
fn clearly_worse_is_killed_by_both_tests() {
    let orig = sample(0.95, 0.01, 20, 1);
    let muts = sample(0.85, 0.01, 20, 2);
    for test in [KillTest::Glm, KillTest::Wilcoxon] {
        let s = KillSettings {
            test,
            ..KillSettings::default()
        };
        let d = kill(&orig, &muts, Goal::Max, &s);
        assert!(d.killed, "{test}: {d:?}");
        assert!(d.p_value < 1e-5, "{d:?}");
        assert!(d.cohens_d > 5.0);
        assert!((d.original_mean - 0.95).abs() < 0.01);
        assert!((d.mutant_mean - 0.85).abs() < 0.01);
        assert_eq!((d.original_n, d.mutant_n, d.mutant_failures), (20, 20, 0));
        assert!(d.p_glm.is_some() && d.p_wilcoxon.is_some());
        assert_eq!(verdict(&d, Goal::Max, &Filter::default()), Verdict::TooHard);
        assert_eq!(verdict(&d, Goal::Max, &Filter::none()), Verdict::Killed);
    }
}

#[test]
fn same_or_better_is_not_killed() {
    let s = KillSettings::default();
    let orig = sample(0.95, 0.01, 20, 1);
    let same = sample(0.95, 0.01, 20, 3);
    let d = kill(&orig, &same, Goal::Max, &s);
    assert!(!d.killed && d.p_value > 0.05, "{d:?}");
    assert_eq!(verdict(&d, Goal::Max, &s.filter), Verdict::NotKilled);
    // Identical runs: no difference at all.
    let d = kill(&orig, &orig, Goal::Max, &s);
    assert_eq!((d.p_value, d.cohens_d, d.killed), (1.0, 0.0, false));
    // Significantly better is not a fault.
    let better = sample(0.99, 0.003, 20, 4);
    let d = kill(&orig, &better, Goal::Max, &s);
    assert!(d.p_value < 0.05 && d.cohens_d < -0.5 && !d.killed, "{d:?}");
}

#[test]
fn goal_min_kills_higher_losses() {
    let s = KillSettings::default();
    let orig = sample(1.0, 0.05, 20, 1);
    let worse = sample(2.0, 0.05, 20, 2);
    let d = kill(&orig, &worse, Goal::Min, &s);
    assert!(d.killed && d.cohens_d < -0.5, "{d:?}");
    assert_eq!(verdict(&d, Goal::Min, &s.filter), Verdict::Killed);
    let lower = sample(0.5, 0.05, 20, 2);
    let d = kill(&orig, &lower, Goal::Min, &s);
    assert!(!d.killed && d.cohens_d > 0.5 && d.p_value < 0.05, "{d:?}");
    // The same lower loss would be a kill for goal max (lower accuracy).
    assert!(kill(&orig, &lower, Goal::Max, &s).killed);
}

#[test]
fn glm_and_wilcoxon_can_disagree() {
    // With 5 runs the exact two-sided Wilcoxon p-value is at least 2/32 = 0.0625: it can never
    // kill, while the GLM's z-test can.
    let orig = sample(0.95, 0.01, 5, 1);
    let muts = sample(0.80, 0.01, 5, 2);
    let glm = KillSettings {
        runs: 5,
        ..KillSettings::default()
    };
    let wil = KillSettings {
        test: KillTest::Wilcoxon,
        ..glm.clone()
    };
    let a = kill(&orig, &muts, Goal::Max, &glm);
    let b = kill(&orig, &muts, Goal::Max, &wil);
    assert!(a.killed && !b.killed);
    assert_eq!(a.p_glm, b.p_glm);
    assert_eq!(b.p_wilcoxon, Some(0.0625));
    assert_eq!(b.p_value, 0.0625);
}

#[test]
fn failed_runs() {
    let s = KillSettings::default();
    let orig = sample(0.95, 0.01, 20, 1);
    let d = kill(&orig, &[None; 20], Goal::Max, &s);
    assert!(!d.killed && d.never_trains());
    assert_eq!(d.note.as_deref(), Some("mutant never trains"));
    assert_eq!(d.mutant_failures, 20);
    assert_eq!(verdict(&d, Goal::Max, &s.filter), Verdict::NeverTrains);
    // NaN / inf count as failures; the finished runs are judged.
    let mut muts = sample(0.5, 0.01, 20, 2);
    muts[0] = None;
    muts[1] = Some(f64::NAN);
    muts[2] = Some(f64::INFINITY);
    for test in [KillTest::Glm, KillTest::Wilcoxon] {
        let d = kill(&orig, &muts, Goal::Max, &KillSettings { test, ..s.clone() });
        assert!(d.killed, "{d:?}");
        assert_eq!((d.mutant_n, d.mutant_failures), (17, 3));
        assert_eq!(verdict(&d, Goal::Max, &s.filter), Verdict::Killed);
    }
    // The decision serializes (NaN mean of a never-training mutant included).
    let never = kill(&orig, &[None; 20], Goal::Max, &s);
    let j = serde_json::to_string(&never).unwrap();
    let back: KillDecision = serde_json::from_str(&j).unwrap();
    assert!(back.mutant_mean.is_nan() && back.cohens_d.is_nan());
}

#[test]
fn filters() {
    let f = Filter::default();
    assert_eq!(f.classify(Goal::Max, 0.95, 0.90), Verdict::TooHard);
    assert_eq!(f.classify(Goal::Max, 0.95, 0.85), Verdict::Killed); // exactly 0.10
    assert_eq!(f.classify(Goal::Max, 0.95, 0.50), Verdict::Killed);
    assert_eq!(f.classify(Goal::Max, 0.95, 0.15), Verdict::Killed); // exactly 0.80
    assert_eq!(f.classify(Goal::Max, 0.95, 0.10), Verdict::TooEasy);
    assert_eq!(f.classify(Goal::Min, 100.0, 140.0), Verdict::TooHard);
    assert_eq!(f.classify(Goal::Min, 100.0, 150.0), Verdict::Killed);
    assert_eq!(f.classify(Goal::Min, 100.0, 500.0), Verdict::Killed);
    assert_eq!(f.classify(Goal::Min, 100.0, 501.0), Verdict::TooEasy);
    // A ratio to a non-positive loss means nothing: kept.
    assert_eq!(f.classify(Goal::Min, 0.0, 3.0), Verdict::Killed);
    assert_eq!(
        Filter::none().classify(Goal::Max, 1.0, 0.0),
        Verdict::Killed
    );
    assert_eq!(
        serde_json::to_string(&Verdict::TooEasy).unwrap(),
        "\"too_easy\""
    );
    assert_eq!(
        serde_json::to_string(&Verdict::NeverTrains).unwrap(),
        "\"never_trains\""
    );
    assert_eq!("Wilcoxon".parse::<KillTest>().unwrap(), KillTest::Wilcoxon);
    assert!("t".parse::<KillTest>().is_err());
}

// ---------------------------------------------------------------- campaigns

/// Accuracy 0.95 for lr < 0.05, 0.3 above: the threshold DeepCrime's search should find.
fn lr_objective(c: &Config, seed: u64) -> Option<f64> {
    let lr = f64_of(c, "lr");
    let base = if lr < 0.05 { 0.95 } else { 0.3 };
    Some(base + 0.01 * noise(seed, 7))
}

#[test]
fn hlr_binary_search_finds_the_threshold() {
    let s = digits();
    let t = Synth::new(lr_objective);
    let settings = KillSettings::default();
    let mut lines = Vec::new();
    let r = block_on(run_campaign(
        &t,
        &s,
        &[FaultType::HLR],
        &settings,
        &mut |l| lines.push(l.to_string()),
    ))
    .unwrap();
    // Up: bound 10 (killed), then 0.1 (killed), 0.01, 0.0316 (not). Down: bound 1e-6 (not).
    let tried: Vec<f64> = r
        .mutants
        .iter()
        .map(|m| m.mutation.to.as_f64().unwrap())
        .collect();
    assert_eq!(tried, vec![10.0, 0.1, 0.01, 0.0316, 1e-6]);
    let kept: Vec<&MutantResult> = r.kept().collect();
    assert_eq!(kept.len(), 1);
    let v = kept[0].mutation.to.as_f64().unwrap();
    // Within one grid step (a factor (10 / 0.001)^(1/8)) above the true threshold 0.05.
    let step = (10.0f64 / 0.001).powf(1.0 / 8.0);
    assert!(v >= 0.05 && v / step < 0.05, "{v}");
    assert_eq!(kept[0].mutation.id(), "HLR-lr-0.1");
    assert_eq!(kept[0].verdict, Verdict::Killed);
    assert!(kept[0].selected);
    // The bound is killed but not selected (too easy to be the pick anyway: 0.65 drop is fine,
    // but the search keeps the hardest).
    assert!(r.mutants[0].decision.killed && !r.mutants[0].selected && !r.mutants[0].kept);
    assert_eq!(r.points_evaluated, 5);
    // 8 grid points per direction: up trained 4, down trained 1.
    assert_eq!(r.points_skipped_by_search, (8 - 4) + (8 - 1));
    assert_eq!(r.trainings_requested, 20 * 6);
    assert_eq!(t.calls.get(), 20 * 6);
    let op = &r.operators[0];
    assert_eq!(
        (op.op, op.candidates, op.evaluated, op.killed, op.kept),
        (FaultType::HLR, 2, 5, 2, 1)
    );
    assert_eq!(lines.len(), 6, "{lines:?}");
    assert!(
        lines[0].starts_with("original digits-mlp: accuracy 0.95"),
        "{lines:?}"
    );
    assert!(
        lines[2].contains("lr: 0.001 -> 0.1 [search]: killed"),
        "{lines:?}"
    );
}

#[test]
fn search_steps_zero_keeps_the_bound_and_discrete_search_is_exact() {
    let s = digits();
    // HNE over the listed epochs [10, 12, 14, 16] below 20: accuracy drops below 14 epochs.
    let t = Synth::new(|c: &Config, seed| {
        let e = f64_of(c, "epochs");
        Some(if e < 14.0 { 0.6 } else { 0.95 } + 0.01 * noise(seed, 3))
    });
    let r = block_on(run_campaign(
        &t,
        &s,
        &[FaultType::HNE],
        &KillSettings::default(),
        &mut |_| {},
    ))
    .unwrap();
    let tried: Vec<i64> = r
        .mutants
        .iter()
        .map(|m| m.mutation.to.as_i64().unwrap())
        .collect();
    // Bound 10 (killed), then index 1 of [16, 14, 12, 10] = 14 (not), then 12 (killed).
    assert_eq!(tried, vec![10, 14, 12]);
    let kept: Vec<_> = r.kept().map(|m| m.mutation.id()).collect();
    assert_eq!(kept, ["HNE-epochs-12"]);
    assert_eq!(r.points_skipped_by_search, 4 - 3);

    let t = Synth::new(lr_objective);
    let settings = KillSettings {
        search_steps: 0,
        ..KillSettings::default()
    };
    let r = block_on(run_campaign(
        &t,
        &s,
        &[FaultType::HLR],
        &settings,
        &mut |_| {},
    ))
    .unwrap();
    let kept: Vec<_> = r.kept().map(|m| m.mutation.id()).collect();
    assert_eq!(kept, ["HLR-lr-10"]);
    assert_eq!(r.points_skipped_by_search, 0);
}

/// act2 != softmax or a sigmoid in layer 0 hurts; everything else is as good as the original.
fn act_objective(c: &Config, seed: u64) -> Option<f64> {
    let act2 = str_of(c, "act2");
    let act0 = str_of(c, "act0");
    let base = match (act0, act2) {
        (_, "exponential") => return None, // never trains
        (_, "linear") => 0.05,             // too easy: a 0.9 drop
        (_, a) if a != "softmax" => 0.6,
        ("sigmoid", _) => 0.9, // too hard: a 0.05 drop
        _ => 0.95,
    };
    Some(base + 0.01 * noise(seed, 11))
}

#[test]
fn campaign_end_to_end() {
    let s = digits();
    let t = Synth::new(act_objective);
    let settings = KillSettings::default();
    let ops = [
        FaultType::ACH,
        FaultType::ARM,
        FaultType::HDB,
        FaultType::ACH,
    ];
    let r = block_on(run_campaign(&t, &s, &ops, &settings, &mut |_| {})).unwrap();
    assert_eq!(r.subject, "digits-mlp");
    assert_eq!(r.goal, Goal::Max);
    assert_eq!(r.operators.len(), 3); // duplicates dropped
    let ach = &r.operators[0];
    assert_eq!((ach.candidates, ach.evaluated), (30, 30));
    // act2: 10 others; linear too easy, exponential never trains, 8 killed and kept.
    // act0 = sigmoid: killed, too hard.
    assert_eq!((ach.killed, ach.kept, ach.never_trains), (10, 8, 1));
    let arm = &r.operators[1];
    assert_eq!((arm.candidates, arm.evaluated, arm.kept), (3, 3, 0));
    let hdb = &r.operators[2];
    assert!(
        hdb.not_applicable
            .as_deref()
            .unwrap()
            .starts_with("HDB cannot apply to digits-mlp")
    );
    assert_eq!(hdb.evaluated, 0);
    let by_id = |id: &str| r.mutants.iter().find(|m| m.mutation.id() == id).unwrap();
    assert_eq!(by_id("ACH-act0-sigmoid").verdict, Verdict::TooHard);
    assert_eq!(by_id("ACH-act2-linear").verdict, Verdict::TooEasy);
    assert_eq!(by_id("ACH-act2-exponential").verdict, Verdict::NeverTrains);
    assert_eq!(by_id("ACH-act2-sigmoid").verdict, Verdict::Killed);
    assert!(by_id("ACH-act2-sigmoid").kept);
    assert_eq!(by_id("ARM-act2-linear").verdict, Verdict::TooEasy);
    // ARM's act*-linear configs repeat ACH's: trained once.
    assert_eq!(r.trainings_requested, 20 * (1 + 30));
    assert_eq!(r.points_evaluated, 33);
    assert_eq!(r.points_skipped_by_search, 0);
    // The report round-trips through JSON (NaN means of never-training mutants included).
    let j = serde_json::to_string_pretty(&r).unwrap();
    let back: CampaignReport = serde_json::from_str(&j).unwrap();
    assert_eq!(back.mutants.len(), r.mutants.len());
    assert_eq!(back.operators, r.operators);
    assert!(back.mutants.iter().any(|m| m.decision.mutant_mean.is_nan()));
}

#[test]
fn same_config_from_two_operators_is_kept_once() {
    let s = digits();
    let t = Synth::new(|c: &Config, seed| {
        let base = if str_of(c, "act0") == "linear" {
            0.6
        } else {
            0.95
        };
        Some(base + 0.01 * noise(seed, 13))
    });
    let r = block_on(run_campaign(
        &t,
        &s,
        &[FaultType::ACH, FaultType::ARM],
        &KillSettings::default(),
        &mut |_| {},
    ))
    .unwrap();
    let kept: Vec<String> = r.kept().map(|m| m.mutation.id()).collect();
    assert_eq!(kept, ["ARM-act0-linear"]);
    let ach = r
        .mutants
        .iter()
        .find(|m| m.mutation.id() == "ACH-act0-linear")
        .unwrap();
    assert_eq!(ach.verdict, Verdict::Killed);
    assert!(!ach.kept);
    assert_eq!(ach.duplicate_of.as_deref(), Some("ARM-act0-linear"));
    assert_eq!((r.operators[0].kept, r.operators[1].kept), (0, 1));
    assert_eq!(r.trainings_requested, 20 * 31);
}

#[test]
fn campaign_errors() {
    let s = digits();
    let dead = Synth::new(|_: &Config, _| None);
    let e = block_on(run_campaign(
        &dead,
        &s,
        &[FaultType::HLR],
        &KillSettings::default(),
        &mut |_| {},
    ))
    .unwrap_err()
    .to_string();
    assert!(e.contains("finished 0 of 20"), "{e}");
    let ok = Synth::new(lr_objective);
    let e = block_on(run_campaign(
        &ok,
        &s,
        &[FaultType::HLR],
        &KillSettings {
            runs: 1,
            ..KillSettings::default()
        },
        &mut |_| {},
    ))
    .unwrap_err()
    .to_string();
    assert!(e.contains("runs = 1"), "{e}");

    struct Broken;
    impl Trainer for Broken {
        async fn train(
            &self,
            _: &Config,
            _: &[u64],
            _: Split,
        ) -> Result<Vec<Option<f64>>, crate::TrainError> {
            Err("no python".into())
        }
    }
    let e = block_on(run_campaign(
        &Broken,
        &s,
        &[FaultType::HLR],
        &KillSettings::default(),
        &mut |_| {},
    ))
    .unwrap_err();
    let e = reprolab_core::chain(&e);
    assert!(e.contains("no python"), "{e}");
}

#[test]
fn regression_campaign_uses_loss_ratios() {
    let s = Subject::load(&subject_dir("diabetes-regression")).unwrap();
    assert_eq!(s.metric.goal, Goal::Min);
    // Loss 3000 with the original optimiser; sgd triples it (kept), adagrad is 1.2x (too
    // hard), rmsprop 10x (too easy), nadam is better (not killed).
    let t = Synth::new(|c: &Config, seed| {
        let base = match str_of(c, "optimizer") {
            "sgd" => 9000.0,
            "adagrad" => 3600.0,
            "rmsprop" => 30000.0,
            "nadam" => 2000.0,
            _ => 3000.0,
        };
        Some(base * (1.0 + 0.02 * noise(seed, 5)))
    });
    let r = block_on(run_campaign(
        &t,
        &s,
        &[FaultType::OCH],
        &KillSettings::default(),
        &mut |_| {},
    ))
    .unwrap();
    let v = |id: &str| {
        r.mutants
            .iter()
            .find(|m| m.mutation.id() == id)
            .unwrap()
            .verdict
    };
    assert_eq!(v("OCH-optimizer-sgd"), Verdict::Killed);
    assert_eq!(v("OCH-optimizer-adagrad"), Verdict::TooHard);
    assert_eq!(v("OCH-optimizer-rmsprop"), Verdict::TooEasy);
    assert_eq!(v("OCH-optimizer-nadam"), Verdict::NotKilled);
    assert_eq!(v("OCH-optimizer-adamax"), Verdict::NotKilled);
    assert_eq!(r.kept().count(), 1);
}

// ---------------------------------------------------------------- writing mutants

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

#[test]
fn write_mutants_and_read_benchmark() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("digits-mlp");
    copy_dir(&subject_dir("digits-mlp"), &src);
    // Entries that must not be copied.
    std::fs::create_dir_all(src.join("__pycache__")).unwrap();
    std::fs::write(src.join("__pycache__/train.pyc"), "x").unwrap();
    std::fs::create_dir_all(src.join(".reprolab")).unwrap();
    std::fs::write(src.join(".reprolab/store.db"), "x").unwrap();
    std::fs::write(src.join(".hidden"), "x").unwrap();
    std::fs::create_dir_all(src.join("data")).unwrap();
    std::fs::write(src.join("data/notes.txt"), "kept").unwrap();
    let s = Subject::load(&src).unwrap();

    let t = Synth::new(|c: &Config, seed| {
        let a = lr_objective(c, seed)?;
        let b = act_objective(c, seed)?;
        Some(a.min(b))
    });
    let r = block_on(run_campaign(
        &t,
        &s,
        &[FaultType::HLR, FaultType::ACH, FaultType::LRM],
        &KillSettings::default(),
        &mut |_| {},
    ))
    .unwrap();
    let kept: Vec<String> = r.kept().map(|m| m.mutation.id()).collect();
    assert_eq!(kept.len(), 9, "{kept:?}"); // HLR-lr-0.1 and 8 ACH on act2
    let out = tmp.path().join("out");
    let dirs = write_mutants(&r, &s, &out).unwrap();
    assert_eq!(dirs.len(), 9);
    assert!(out.join("campaign.json").is_file());
    let back: CampaignReport =
        serde_json::from_str(&std::fs::read_to_string(out.join("campaign.json")).unwrap()).unwrap();
    assert_eq!(back.mutants.len(), r.mutants.len());

    let dir = out.join("digits-mlp-ACH-act2-sigmoid");
    assert!(dirs.contains(&dir));
    let m = Subject::load(&dir).unwrap();
    assert_eq!(m.name, "digits-mlp-ACH-act2-sigmoid");
    assert_eq!(m.config.get("act2"), Some(&json!("sigmoid")));
    assert_eq!(m.config.diff(&s.config).len(), 1);
    let fix = m.fix.as_ref().unwrap();
    assert_eq!(fix.config, s.config);
    assert_eq!(fix.faults, vec!["ACH(2)".parse::<FaultLabel>().unwrap()]);
    assert!(fix.config_path.ends_with("fixed.json"));
    // Same space, same order, same everything else.
    assert_eq!(m.space, s.space);
    assert_eq!(
        (&m.metric, &m.entry, &m.limits),
        (&s.metric, &s.entry, &s.limits)
    );
    assert_eq!((&m.description, &m.dataset), (&s.description, &s.dataset));
    assert!(dir.join("train.py").is_file() && dir.join("README.md").is_file());
    assert_eq!(
        std::fs::read_to_string(dir.join("data/notes.txt")).unwrap(),
        "kept"
    );
    for gone in ["__pycache__", ".reprolab", ".hidden"] {
        assert!(!dir.join(gone).exists(), "{gone} was copied");
    }
    let toml_text = std::fs::read_to_string(dir.join("reprolab.toml")).unwrap();
    assert!(
        toml_text.starts_with("name = \"digits-mlp-ACH-act2-sigmoid\"\n"),
        "{toml_text}"
    );
    assert!(
        toml_text.contains("[fix]\nconfig = \"fixed.json\"\nfaults = [\"ACH(2)\"]\n"),
        "{toml_text}"
    );
    let config_text = std::fs::read_to_string(dir.join("config.json")).unwrap();
    assert!(
        config_text.starts_with("{\n  \"unit0\": 64,"),
        "{config_text}"
    );

    let rec = FaultRecord::read(&dir.join("fault.json")).unwrap();
    assert_eq!(rec.id, "digits-mlp-ACH-act2-sigmoid");
    assert_eq!(rec.subject, "digits-mlp");
    assert_eq!(rec.origin, Origin::Mutation);
    assert_eq!(rec.faults, fix.faults);
    let mr = rec.mutation.as_ref().unwrap();
    assert_eq!(
        (mr.operator, mr.param.as_str(), &mr.from, &mr.to),
        (FaultType::ACH, "act2", &json!("softmax"), &json!("sigmoid"))
    );
    assert_eq!(rec.split, Some(Split::Search));
    assert_eq!((rec.runs, rec.test), (Some(20), Some(KillTest::Glm)));
    let (faulty, fixed) = (rec.faulty.unwrap(), rec.fixed.unwrap());
    assert!((faulty.mean - 0.6).abs() < 0.01 && (fixed.mean - 0.95).abs() < 0.01);
    assert_eq!((faulty.n, fixed.n), (20, 20));
    assert!(rec.p_value.unwrap() < 0.05 && rec.cohens_d.unwrap() > 0.5);
    let raw: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("fault.json")).unwrap()).unwrap();
    assert_eq!(raw["origin"], "mutation");
    assert_eq!(raw["faults"], json!(["ACH(2)"]));
    assert_eq!(raw["test"], "glm");
    assert_eq!(raw["split"], "search");

    let hlr = Subject::load(&out.join("digits-mlp-HLR-lr-0.1")).unwrap();
    assert_eq!(hlr.config.get("lr"), Some(&json!(0.1)));
    assert_eq!(hlr.fix.unwrap().faults[0].to_string(), "HLR");

    // Writing again replaces the earlier mutants; a foreign directory is not overwritten.
    assert_eq!(write_mutants(&r, &s, &out).unwrap().len(), 9);
    std::fs::remove_file(dir.join("fault.json")).unwrap();
    let e = write_mutants(&r, &s, &out).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::AlreadyExists);
    assert_eq!(
        write_mutants(&r, &s, &tmp.path().join("out2"))
            .unwrap()
            .len(),
        9
    );

    // read_benchmark: every faulty subject below a directory, with its fault.json if any.
    let bench = tmp.path().join("bench");
    std::fs::create_dir_all(bench.join("mutants")).unwrap();
    std::fs::rename(tmp.path().join("out2"), bench.join("mutants/digits")).unwrap();
    // A real fault without fault.json, a correct subject (no [fix]), a hidden directory.
    let real = bench.join("real/D1");
    copy_dir(&bench.join("mutants/digits/digits-mlp-HLR-lr-0.1"), &real);
    std::fs::remove_file(real.join("fault.json")).unwrap();
    copy_dir(&subject_dir("digits-mlp"), &bench.join("correct"));
    copy_dir(&dir, &bench.join(".trash/x"));
    let found = read_benchmark(&bench).unwrap();
    assert_eq!(found.len(), 10);
    let paths: Vec<&PathBuf> = found.iter().map(|(p, _)| p).collect();
    let mut sorted = paths.clone();
    sorted.sort();
    assert_eq!(paths, sorted);
    assert_eq!(found.last().unwrap().0, real);
    assert!(found.last().unwrap().1.is_none());
    assert!(
        found[..9]
            .iter()
            .all(|(_, r)| r.as_ref().unwrap().origin == Origin::Mutation)
    );
    // A broken fault.json is an error naming the file.
    std::fs::write(real.join("fault.json"), "{\"id\": 1}").unwrap();
    let e = read_benchmark(&bench).unwrap_err();
    assert!(e.to_string().contains("D1/fault.json"), "{e}");
}

#[test]
fn manifest_rewrite_keeps_order_and_replaces_fix() {
    // What the rewrite leaves as it is, in both texts.
    let sections = r#"
[dataset]
name = "d"

[entry]
callable = "train.py:train"

[metric]
name = "accuracy"
goal = "max"

[space]
zeta = { type = "choice", values = ["a", "b"], fault = "ACH", layer = 1 }
"#;
    let text = format!(
        r#"# a comment
name = "x"
task = "classification"
framework = "pytorch"
config = "conf.json"
{sections}alpha = {{ type = "float", low = 1e-6, high = 10.0, fault = "HLR" }}

[fix]
config = "old.json"
faults = ["HLR"]
"#
    );
    let label: FaultLabel = "ACH(1)".parse().unwrap();
    let out = crate::output::mutant_manifest(&text, "x-ACH-zeta-b", &label).unwrap();
    let want = format!(
        r#"name = "x-ACH-zeta-b"
task = "classification"
framework = "pytorch"
config = "config.json"
{sections}alpha = {{ type = "float", low = 0.000001, high = 10.0, fault = "HLR" }}

[fix]
config = "fixed.json"
faults = ["ACH(1)"]
"#
    );
    assert_eq!(out, want);
    // Inline tables and quoted keys survive.
    let text = "name = \"y\"\nmetric = { name = \"mae\", goal = \"min\" }\n[space]\n\"odd key\" = { type = \"int\", low = 0, high = 2 }\n";
    let out = crate::output::mutant_manifest(text, "y2", &label).unwrap();
    let t: toml::Table = toml::from_str(&out).unwrap();
    assert_eq!(t["metric"]["goal"].as_str(), Some("min"));
    assert_eq!(t["space"]["odd key"]["high"].as_integer(), Some(2));
    assert_eq!(t["fix"]["faults"][0].as_str(), Some("ACH(1)"));
}

#[test]
fn a_hand_made_fault_of_several_parameters_has_origin_manual() {
    let rec: FaultRecord = serde_json::from_value(serde_json::json!({
        "id": "two-causes", "subject": "digits-mlp", "origin": "manual",
        "faults": ["HNE", "ACH(2)"], "description": "few epochs and a sigmoid output"
    }))
    .unwrap();
    assert_eq!(rec.origin, Origin::Manual);
    assert_eq!(rec.faults.len(), 2);
    let bad = serde_json::from_value::<FaultRecord>(serde_json::json!({
        "id": "x", "subject": "s", "origin": "handmade", "faults": []
    }))
    .unwrap_err()
    .to_string();
    assert!(bad.contains("mutation") && bad.contains("manual"), "{bad}");
}
