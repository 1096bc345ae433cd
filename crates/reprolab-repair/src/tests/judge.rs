//! Validation statistics, IR / AJ / complexity, and ddmin.

use std::collections::BTreeSet;

use reprolab_core::{Config, FaultType, Goal, SearchSpace, Split, Subject};
use reprolab_stats::Verdict;
use serde_json::json;

use super::*;
use crate::{asymmetric_jaccard, complexity, ir, minimize, patch_diff, validate};

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn ir_is_signed_towards_improvement_for_both_goals() {
    assert!(close(ir(0.805, 0.505, 0.905, Goal::Max).unwrap(), 0.75));
    assert!(close(ir(0.405, 0.505, 0.905, Goal::Max).unwrap(), -0.25));
    // Losses: lower is better; an improvement is still positive.
    assert!(close(ir(1.5, 2.0, 1.0, Goal::Min).unwrap(), 0.5));
    assert!(close(ir(2.5, 2.0, 1.0, Goal::Min).unwrap(), -0.5));
    // Better than the ground truth: IR > 1.
    assert!(close(ir(0.5, 2.0, 1.0, Goal::Min).unwrap(), 1.5));
    assert!(close(ir(0.95, 0.5, 0.9, Goal::Max).unwrap(), 1.125));
    // No ground-truth gap: undefined.
    assert_eq!(ir(0.7, 0.5, 0.5, Goal::Max), None);
    assert_eq!(ir(f64::NAN, 0.5, 0.9, Goal::Max), None);
}

#[test]
fn ir_reproduces_the_studys_table9_for_accuracy_and_for_losses() {
    // Accuracy (goal max), Table 9: D1 HEBO 0.52 → 0.76 against GT 1.00: 0.24 / 0.48.
    assert!(close(ir(0.76, 0.52, 1.00, Goal::Max).unwrap(), 0.5));
    // D4 HEBO reaches the GT's 0.94 from 0.10: IR 1.
    assert!(close(ir(0.94, 0.10, 0.94, Goal::Max).unwrap(), 1.0));
    // Regression losses (goal min): "as effective as the GT" must still read 1, and a better
    // loss than the GT's more than 1 — the sign reversal makes both differences positive; it
    // does not flip the ratio. D7 BOHB: MAE 7.20 → 0.49, GT 0.13: 6.71 / 7.07.
    assert!(close(ir(0.49, 7.20, 0.13, Goal::Min).unwrap(), 6.71 / 7.07));
    // U1 GPT-4: 0.184 → 0.032, GT 0.046: 0.152 / 0.138 ≈ 1.10 (> 1: better than the GT).
    let u1 = ir(0.032, 0.184, 0.046, Goal::Min).unwrap();
    assert!(close(u1, 0.152 / 0.138) && u1 > 1.0);
    // A loss the patch made worse is negative.
    assert!(ir(7.5, 7.20, 0.13, Goal::Min).unwrap() < 0.0);
}

#[test]
fn ir_is_undefined_when_the_fix_scores_as_the_fault_for_either_goal() {
    // M_GT = M_fault: the denominator of (M_patch − M_fault) / (M_GT − M_fault) is 0.
    assert_eq!(ir(0.3, 0.5, 0.5, Goal::Min), None);
    assert_eq!(ir(0.5, 0.5, 0.5, Goal::Min), None);
    assert_eq!(ir(0.5, 0.5, 0.5, Goal::Max), None);
    // A ground truth worse than the faulty config (holdout noise) keeps the formula's sign:
    // patch +0.1, GT −0.05 → −2.
    assert!(close(ir(0.6, 0.5, 0.45, Goal::Max).unwrap(), -2.0));
}

#[test]
fn aj_counts_fault_types_with_the_studys_merges() {
    let set = |xs: &[FaultType]| xs.iter().copied().collect::<BTreeSet<_>>();
    use FaultType::*;
    assert_eq!(
        asymmetric_jaccard(&set(&[ACH, HBS]), &set(&[ACH, HLR])),
        Some(0.5)
    );
    // ARM and AAL count as ACH, LRM as LAD.
    assert_eq!(
        asymmetric_jaccard(&set(&[ACH]), &set(&[ARM, HLR])),
        Some(0.5)
    );
    assert_eq!(asymmetric_jaccard(&set(&[AAL]), &set(&[ACH])), Some(1.0));
    assert_eq!(
        asymmetric_jaccard(&set(&[LAD, OCH]), &set(&[LRM])),
        Some(1.0)
    );
    assert_eq!(
        asymmetric_jaccard(&set(&[]), &set(&[HLR, LCH, OCH])),
        Some(0.0)
    );
    assert_eq!(asymmetric_jaccard(&set(&[HLR]), &set(&[])), None);
}

#[test]
fn complexity_and_diff_count_changed_hyperparameters() {
    let space = study_space(false); // 10 parameters
    let faulty = study_faulty();
    let mut patch = faulty.clone();
    patch.insert("act2", json!("softmax"));
    patch.insert("lr", json!(0.003));
    patch.insert("batch_size", json!(32.0)); // same value: no change
    let d = patch_diff(&faulty, &patch);
    assert_eq!(
        d,
        vec![
            ("act2".into(), json!("sigmoid"), json!("softmax")),
            ("lr".into(), json!(3.0), json!(0.003)),
        ]
    );
    assert!(close(complexity(&faulty, &patch, &space), 0.2));
    assert_eq!(complexity(&faulty, &faulty, &space), 0.0);
    assert_eq!(
        complexity(&Config::new(), &Config::new(), &SearchSpace::default()),
        0.0
    );
}

/// Per-seed metrics by config: faulty 0.50/0.51 alternating, patch +0.3, ground truth +0.4.
fn table_objective() -> Synth {
    Synth::new(|c, seed, _| {
        let wiggle = 0.01 * (seed % 2) as f64;
        let act2 = c.0["act2"] == json!("softmax");
        let lr = c.0["lr"].as_f64().unwrap() < 0.1;
        let bs = c.0["batch_size"] == json!(64);
        Some(
            0.5 + wiggle
                + if act2 && lr {
                    0.4
                } else if act2 && bs {
                    0.3
                } else {
                    0.0
                },
        )
    })
}

#[test]
fn validation_statistics_match_hand_computed_values() {
    let subject = study_subject(false); // GT: act2 softmax, lr 0.003; labels ACH(2), HLR
    let obj = table_objective();
    // A partial patch: just the changed keys.
    let patch = cfg(json!({"act2": "softmax", "batch_size": 64}));
    let v = block_on(validate(&obj, &subject, &patch, 10)).unwrap();
    assert_eq!(v.runs, 10);
    // Holdout split, seeds 0..10, for faulty, patch and ground truth.
    {
        let calls = obj.calls.borrow();
        assert_eq!(calls.len(), 3);
        assert!(
            calls
                .iter()
                .all(|c| c.2 == Split::Holdout && c.1 == (0..10).collect::<Vec<u64>>())
        );
    }
    assert!(close(v.faulty.mean, 0.505));
    assert!(close(v.patch.mean, 0.805));
    assert!(close(v.gt.as_ref().unwrap().mean, 0.905));
    // σ: five 0.50 and five 0.51 → sqrt(10 · 0.005² / 9).
    let sd = (10.0 * 0.005f64.powi(2) / 9.0).sqrt();
    assert!(close(v.patch.std, sd) && close(v.faulty.std, sd));
    // All ten paired differences are +0.3 (tied ranks): exact p = 2 / 2^10.
    assert!(close(v.p_value, 2.0 / 1024.0), "{}", v.p_value);
    assert!(close(v.cohens_d, 0.3 / sd), "{}", v.cohens_d);
    assert!(v.significant);
    assert_eq!(v.verdict, Verdict::Better);
    assert!(close(v.ir.unwrap(), 0.75));
    assert!(close(v.complexity, 0.2));
    assert_eq!(v.changed, vec!["act2", "batch_size"]);
    assert_eq!(v.patch_types, vec![FaultType::HBS, FaultType::ACH]);
    assert_eq!(v.gt_types, vec![FaultType::HLR, FaultType::ACH]);
    assert_eq!(v.aj, Some(0.5));
    let j = serde_json::to_value(&v).unwrap();
    assert_eq!(j["verdict"], json!("better"));
    assert_eq!(j["patch"]["samples"].as_array().unwrap().len(), 10);

    // The faulty config as "patch": no difference, not significant, IR 0.
    let v = block_on(validate(&obj, &subject, &Config::new(), 10)).unwrap();
    assert_eq!(v.p_value, 1.0);
    assert!(!v.significant);
    assert_eq!(v.verdict, Verdict::NotSignificant);
    assert_eq!(v.ir, Some(0.0));
    assert_eq!(v.aj, Some(0.0));

    // Out-of-space patches and too few runs are refused.
    assert!(block_on(validate(&obj, &subject, &cfg(json!({"act2": "nope"})), 10)).is_err());
    assert!(block_on(validate(&obj, &subject, &cfg(json!({"zzz": 1})), 10)).is_err());
    assert!(block_on(validate(&obj, &subject, &patch, 1)).is_err());
}

#[test]
fn validation_for_a_loss_and_without_ground_truth() {
    // Goal min: loss 2.0 (faulty) → 1.0 with act2 softmax; failed training on seed 3 of the
    // patch.
    let obj = Synth::new(|c, seed, _| {
        let softmax = c.0["act2"] == json!("softmax");
        if softmax && seed == 3 {
            return None;
        }
        Some(if softmax { 1.0 } else { 2.0 } + 0.01 * noise(seed, 9))
    });
    let subject = subject(study_space(false), study_faulty(), Goal::Min, None);
    let v = block_on(validate(
        &obj,
        &subject,
        &cfg(json!({"act2": "softmax"})),
        8,
    ))
    .unwrap();
    assert_eq!(v.patch.n, 7);
    assert_eq!(v.patch.samples[3], None);
    assert!(v.cohens_d < -0.5);
    assert!(v.significant);
    assert_eq!(v.gt, None);
    assert_eq!(v.ir, None);
    assert_eq!(v.aj, None);
    // All 7 paired differences negative: exact p = 2 / 2^7.
    assert!(close(v.p_value, 2.0 / 128.0), "{}", v.p_value);
}

/// Eight binary hyperparameters `p0..p7`; only `p2` and `p5` matter (additively).
fn ddmin_setup() -> (Subject, Config, Synth) {
    let params = (0..8)
        .map(|i| {
            choice(
                &format!("p{i}"),
                vec![json!("a"), json!("b")],
                FaultType::HLR,
                None,
            )
        })
        .collect();
    let faulty: Config = (0..8).map(|i| (format!("p{i}"), json!("a"))).collect();
    let patch: Config = (0..8).map(|i| (format!("p{i}"), json!("b"))).collect();
    let obj = Synth::new(|c, seed, _| {
        let on = |k: &str| f64::from(c.0[k] == json!("b"));
        Some(
            0.5 + 0.2 * on("p2")
                + 0.2 * on("p5")
                + 0.02 * noise(seed, 1)
                + 0.001 * noise(seed, config_stream(c)),
        )
    });
    (
        subject(SearchSpace { params }, faulty, Goal::Max, None),
        patch,
        obj,
    )
}

#[test]
fn ddmin_keeps_exactly_the_changes_that_matter() {
    let (subject, patch, obj) = ddmin_setup();
    let m = block_on(minimize(&obj, &subject, &patch, 10)).unwrap();
    assert_eq!(m.changed, vec!["p2", "p5"]);
    assert!(m.one_minimal);
    assert_eq!(m.original.len(), 8);
    assert_eq!(m.patch.0["p2"], json!("b"));
    assert_eq!(m.patch.0["p0"], json!("a"));
    assert!(m.note.is_none());
    // The full patch was tested first and passed; every training ran on the search split.
    assert_eq!(m.tests[0].subset.len(), 8);
    assert!(m.tests[0].passed);
    assert!(
        obj.calls
            .borrow()
            .iter()
            .all(|c| c.2 == Split::Search && c.1.len() == 10)
    );
    // 1-minimal: each single change alone was tested and failed (it is significantly worse
    // than the full patch).
    for k in ["p2", "p5"] {
        let t = m
            .tests
            .iter()
            .find(|t| t.subset == vec![k.to_string()])
            .unwrap();
        assert!(!t.passed, "{t:?}");
        assert!(t.d_vs_patch < -0.5 && t.p_vs_patch < 0.05);
    }
    // No subset was trained twice, and the tests are fewer than the 2^8 subsets.
    assert_eq!(m.trainings, obj.trainings());
    assert_eq!(m.trainings, 10 * (m.tests.len() + 1));
    assert!(m.tests.len() < 30, "{}", m.tests.len());
    // The minimised patch re-minimises to itself.
    let again = block_on(minimize(&obj, &subject, &m.patch, 10)).unwrap();
    assert_eq!(again.changed, vec!["p2", "p5"]);
}

#[test]
fn ddmin_leaves_a_patch_that_does_not_help() {
    let (subject, _, obj) = ddmin_setup();
    let useless: Config = [
        ("p0".to_string(), json!("b")),
        ("p1".to_string(), json!("b")),
    ]
    .into_iter()
    .collect();
    let m = block_on(minimize(&obj, &subject, &useless, 10)).unwrap();
    assert_eq!(m.changed, vec!["p0", "p1"]);
    assert!(!m.one_minimal);
    assert!(m.note.unwrap().contains("not significantly better"));
    assert_eq!(m.tests.len(), 1);
    let one = block_on(minimize(&obj, &subject, &cfg(json!({"p5": "b"})), 10)).unwrap();
    assert_eq!(one.changed, vec!["p5"]);
    assert!(one.one_minimal);
}
