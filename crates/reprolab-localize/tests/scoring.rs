//! RC / PR / F3 against hand-computed values; merge and ranking.

mod common;

use std::collections::BTreeSet;

use common::*;
use reprolab_core::FaultType::{self, *};
use reprolab_localize::{
    Suspect, THRESHOLD, f3, localize, merge, pr, rank_to_types, rc, score, score_best, static_rules,
};
use serde_json::json;

fn set(ts: &[FaultType]) -> BTreeSet<FaultType> {
    ts.iter().copied().collect()
}

fn close(a: f64, b: f64) {
    assert!((a - b).abs() < 1e-12, "{a} != {b}");
}

fn sus(l: &str, c: f64, source: &str) -> Suspect {
    Suspect::new(label(l), c, source, format!("{source} saw {l}"))
}

#[test]
fn rc_pr_f3_by_hand() {
    // found {ACH, HLR}, gt {ACH}: RC 1, PR 0.5, F3 = 10·0.5·1/(4.5+1) = 0.9090…
    let (found, gt) = (set(&[ACH, HLR]), set(&[ACH]));
    close(rc(&found, &gt), 1.0);
    close(pr(&found, &gt), 0.5);
    close(f3(0.5, 1.0), 10.0 * 0.5 / 5.5);
    close(f3(0.5, 1.0), 0.9090909090909091);
    // found {LCH}, gt {ACH, LCH, HLR}: RC 1/3, PR 1, F3 = 10/3/(9+1/3) = 0.357142…
    let (found, gt) = (set(&[LCH]), set(&[ACH, LCH, HLR]));
    close(rc(&found, &gt), 1.0 / 3.0);
    close(pr(&found, &gt), 1.0);
    close(f3(1.0, 1.0 / 3.0), (10.0 / 3.0) / (9.0 + 1.0 / 3.0));
    close(f3(1.0, 1.0 / 3.0), 0.35714285714285715);
    // found {OCH, HNE}, gt {OCH, LCH, ACH, HNE, HBS}: RC 0.4, PR 1, F3 = 4/9.4
    let (found, gt) = (set(&[OCH, HNE]), set(&[OCH, LCH, ACH, HNE, HBS]));
    close(rc(&found, &gt), 0.4);
    close(pr(&found, &gt), 1.0);
    close(f3(1.0, 0.4), 4.0 / 9.4);
    // Nothing found: PR 0, RC 0, F3 0.
    close(pr(&set(&[]), &gt), 0.0);
    close(rc(&set(&[]), &gt), 0.0);
    close(f3(0.0, 0.0), 0.0);
    // Perfect.
    close(f3(1.0, 1.0), 1.0);
    // Empty ground truth: RC 0.
    close(rc(&set(&[ACH]), &set(&[])), 0.0);
}

#[test]
fn scoring_normalises_types_and_ignores_layers() {
    // ARM/AAL count as ACH, LRM as LAD.
    let (found, gt) = (set(&[ACH, LAD]), set(&[AAL, LRM]));
    close(rc(&found, &gt), 1.0);
    close(pr(&found, &gt), 1.0);
    let s = score(&[label("ACH(1)"), label("HLR")], &[label("ARM(2)")]);
    close(s.rc, 1.0);
    close(s.pr, 0.5);
    close(s.f3, 0.9090909090909091);
}

#[test]
fn score_best_picks_the_variant_with_the_highest_recall() {
    let found = [label("HBS"), label("HLR")];
    // The known fix: {ACH, LCH} (RC 0); alternatives: {HLR, ACH} (RC 0.5), {HBS} (RC 1, PR
    // 0.5), {HLR, HBS} (RC 1, PR 1: the best).
    let variants = vec![
        vec![label("ACH(2)"), label("LCH")],
        vec![label("HLR"), label("ACH(0)")],
        vec![label("HBS")],
        vec![label("HLR"), label("HBS")],
    ];
    let (i, s) = score_best(&found, &variants);
    assert_eq!(i, 3);
    close(s.rc, 1.0);
    close(s.pr, 1.0);
    // Equal RC: the higher F3 wins; a full tie keeps the earliest (the known fix).
    let (i, s) = score_best(&found, &variants[..3]);
    assert_eq!(i, 2);
    close(s.pr, 0.5);
    let same = vec![vec![label("HBS")], vec![label("HBS")]];
    assert_eq!(score_best(&found, &same).0, 0);
    // Without alternatives it is the plain score.
    assert_eq!(
        score_best(&found, &variants[..1]).1,
        score(&found, &variants[0])
    );
    assert_eq!(score_best(&found, &[]).0, 0);
}

#[test]
fn merge_deduplicates_and_ranks() {
    let a = vec![
        sus("HLR", 0.5, "lr-range"),
        sus("ACH(2)", 0.6, "out-softmax-binary-ce")
            .suggest(Some("act2: softmax -> sigmoid".into())),
        sus("OCH", 0.3, "optimizer-slow"),
    ];
    let b = vec![
        sus("ACH(2)", 0.5, "output-pinned"),
        sus("HLR", 0.4, "unstable").suggest(Some("lr: 0.1 -> 0.01".into())),
        sus("ACH(1)", 0.3, "saturation"),
        sus("HBS", 0.3, "unstable"),
    ];
    let m = merge(&[a, b]);
    let labels: Vec<String> = m.iter().map(|s| s.label.to_string()).collect();
    // ACH(2): 1 − 0.4·0.5 = 0.8; HLR: 1 − 0.5·0.6 = 0.7; then the 0.3s in first-seen order.
    assert_eq!(labels, ["ACH(2)", "HLR", "OCH", "ACH(1)", "HBS"]);
    close(m[0].confidence, 0.8);
    close(m[1].confidence, 0.7);
    assert_eq!(m[0].source, "out-softmax-binary-ce+output-pinned");
    assert_eq!(
        m[0].evidence,
        "out-softmax-binary-ce saw ACH(2); output-pinned saw ACH(2)"
    );
    assert_eq!(m[0].suggestion.as_deref(), Some("act2: softmax -> sigmoid"));
    // The most confident contributor had no suggestion: the other one's is kept.
    assert_eq!(m[1].suggestion.as_deref(), Some("lr: 0.1 -> 0.01"));
    // Same evidence twice is kept once; merge of one list is a ranking.
    let m = merge(&[vec![
        sus("HNE", 0.2, "x"),
        sus("HNE", 0.5, "x"),
        sus("LCH", 0.6, "y"),
    ]]);
    assert_eq!(m.len(), 2);
    assert_eq!(m[0].label, label("HNE"));
    close(m[0].confidence, 0.6);
    assert_eq!(m[0].source, "x");
    assert_eq!(m[0].evidence, "x saw HNE");
    assert!(merge(&[]).is_empty());
}

#[test]
fn rank_to_types_thresholds_groups_and_caps() {
    close(THRESHOLD, 0.5);
    let list = merge(&[vec![
        sus("ACH(2)", 0.9, "a"),
        sus("LCH", 0.7, "b"),
        sus("ACH(0)", 0.6, "c"),
        sus("ARM(1)", 0.55, "c"),
        sus("HLR", 0.5, "d"),
        sus("HNE", 0.49, "e"),
    ]]);
    // ACH groups ACH(2), ACH(0) and ARM(1) (normalised), layers unioned.
    assert_eq!(
        rank_to_types(&list, 10),
        vec![label("ACH(0,1,2)"), label("LCH"), label("HLR")]
    );
    assert_eq!(
        rank_to_types(&list, 2),
        vec![label("ACH(0,1,2)"), label("LCH")]
    );
    assert!(rank_to_types(&list, 0).is_empty());
    assert!(rank_to_types(&[sus("HNE", 0.49, "e")], 5).is_empty());
}

#[test]
fn localize_merges_both_engines() {
    let s = subject("cancer-binary");
    let c = config(&s, json!({"act2": "softmax"}));
    let t = {
        let mut t = healthy(10, &["relu", "relu", "softmax"], false, 1);
        set_layer(&mut t, 2, "mean_abs_out", |_| json!(1.0));
        t
    };
    let both = localize(&s, &c, Some(&t));
    assert_eq!(both[0].label, label("ACH(2)"));
    // 1 − (1 − 0.7)(1 − 0.85) = 0.955
    close(both[0].confidence, 0.955);
    assert_eq!(both[0].source, "out-softmax-binary-ce+output-pinned");
    assert_eq!(localize(&s, &c, None), static_rules(&s, &c));
}
