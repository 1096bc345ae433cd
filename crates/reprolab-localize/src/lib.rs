//! Rule-based fault localisation for subjects written in the study's config style (reference
//! `fl-repair.md` §1, §4, §8; `docs/localize.md`).
//!
//! Two engines produce ranked [`Suspect`]s — a fault type with layer indices, a confidence in
//! [0, 1], the evidence (rule or symptom with the observed numbers) and a suggested change:
//!
//! * [`static_rules`]: NeuraLint/UMLAUT-style checks of the config alone (output activation vs
//!   loss vs task, missing non-linearities, constant initialisers, learning rate vs optimiser,
//!   batch size, epochs). No training.
//! * [`dynamic_monitors`]: AutoTrainer/DeepDiagnosis-style checks of one traced training
//!   (`docs/architecture.md`, "Trace record"), reusing AutoTrainer's checks in
//!   `reprolab_core::symptoms` (shared with the rules repair engine).
//!
//! [`merge`] combines lists (noisy-or of confidences), [`rank_to_types`] turns a ranking into the
//! localisation answer, and [`rc`], [`pr`], [`f3`] score it against a ground truth over fault
//! types, as the study did (§4).
//!
//! Neither engine reads a subject's ground truth (`[fix]`, `fixed.json`, `fault.json`) or its
//! directory name: only the config, the search space, the task and metric, and the trace.
//!
//! Module map:
//! * this file: [`localize`] (static + dynamic, merged), [`merge`], [`rank_to_types`], the FL
//!   metrics; [`Suspect`] and [`THRESHOLD`] are `reprolab_core`'s (shared with FL-guided repair).
//! * [`rules`]: the static rules; [`monitors`]: the dynamic monitors and [`layer_map`];
//!   `arch` (private): the layer structure a config describes; [`program`]: the config completed
//!   with what a trace records of the program itself (a Keras model's layers, loss, optimizer).
//! * [`llm`]: localisation by an LLM, its answer mapped onto the space.
//!
//! Depends on `reprolab-core` and `reprolab-llm` only (not on `reprolab-repair`).

mod arch;
pub mod llm;
pub mod monitors;
pub mod program;
pub mod rules;

use std::collections::BTreeSet;

use reprolab_core::{Config, FaultLabel, FaultType, Subject, normalize_type};
use serde::{Deserialize, Serialize};

pub use monitors::{LayerMap, dynamic_monitors, layer_map};
pub use rules::{static_rules, static_rules_traced};

pub use reprolab_core::suspect::{Suspect, THRESHOLD};

/// Static and dynamic suspects merged: [`static_rules`], or with a trace
/// [`static_rules_traced`] (the config completed with what the trace records of the program)
/// and [`dynamic_monitors`].
pub fn localize(
    subject: &Subject,
    config: &Config,
    trace: Option<&[serde_json::Value]>,
) -> Vec<Suspect> {
    let lists = match trace {
        None => vec![static_rules(subject, config)],
        Some(t) => vec![
            static_rules_traced(subject, config, t),
            dynamic_monitors(subject, config, t),
        ],
    };
    merge(&lists)
}

/// Merges suspect lists: suspects with the same fault type and layers become one, with
/// confidence `1 − Π(1 − cᵢ)` (independent evidence adds up), the distinct evidences joined with
/// `"; "`, the distinct sources with `+`, and the suggestion of the most confident contributor
/// (the first one given on ties; the first available when that one has none). The result is
/// ranked by confidence, highest first; the sort is stable, so ties keep the order in which
/// their first contributor appears (list by list).
pub fn merge(lists: &[Vec<Suspect>]) -> Vec<Suspect> {
    struct Acc {
        s: Suspect,
        keep: f64,
        best: f64,
        evidences: Vec<String>,
        sources: Vec<String>,
    }
    let mut acc: Vec<Acc> = Vec::new();
    for s in lists.iter().flatten() {
        let c = if s.confidence.is_nan() {
            0.0
        } else {
            s.confidence.clamp(0.0, 1.0)
        };
        match acc.iter_mut().find(|a| a.s.label == s.label) {
            None => acc.push(Acc {
                s: s.clone(),
                keep: 1.0 - c,
                best: c,
                evidences: vec![s.evidence.clone()],
                sources: vec![s.source.clone()],
            }),
            Some(a) => {
                a.keep *= 1.0 - c;
                if !a.evidences.contains(&s.evidence) {
                    a.evidences.push(s.evidence.clone());
                }
                if !a.sources.contains(&s.source) {
                    a.sources.push(s.source.clone());
                }
                if s.suggestion.is_some() && (c > a.best || a.s.suggestion.is_none()) {
                    a.s.suggestion = s.suggestion.clone();
                }
                a.best = a.best.max(c);
            }
        }
    }
    let mut out: Vec<Suspect> = acc
        .into_iter()
        .map(|a| Suspect {
            confidence: (1.0 - a.keep).clamp(0.0, 1.0),
            evidence: a.evidences.join("; "),
            source: a.sources.join("+"),
            ..a.s
        })
        .collect();
    out.sort_by(|a, b| b.confidence.total_cmp(&a.confidence));
    out
}

/// The localisation answer: suspects with confidence `≥` [`THRESHOLD`], in ranking order
/// (highest confidence first, stable), grouped by fault type normalised with
/// [`normalize_type`] (`ARM`/`AAL` → `ACH`, `LRM` → `LAD`) — the layers of a group are the union
/// of its suspects' layers — and at most `max` types. Pass a [`merge`]d list so that confidences
/// from several rules have been combined.
pub fn rank_to_types(suspects: &[Suspect], max: usize) -> Vec<FaultLabel> {
    let mut ranked: Vec<&Suspect> = suspects
        .iter()
        .filter(|s| s.confidence >= THRESHOLD)
        .collect();
    ranked.sort_by(|a, b| b.confidence.total_cmp(&a.confidence));
    let mut groups: Vec<(FaultType, BTreeSet<u32>)> = Vec::new();
    for s in ranked {
        let t = normalize_type(s.label.fault);
        match groups.iter_mut().find(|(g, _)| *g == t) {
            Some((_, layers)) => layers.extend(s.label.layers.iter().copied()),
            None => {
                if groups.len() >= max {
                    continue;
                }
                groups.push((t, s.label.layers.iter().copied().collect()));
            }
        }
    }
    groups
        .into_iter()
        .map(|(t, layers)| {
            if t.is_layer_specific() {
                FaultLabel::with_layers(t, layers)
            } else {
                FaultLabel::new(t)
            }
        })
        .collect()
}

/// The normalised fault types of labels ([`normalize_type`]; layers dropped).
pub fn types_of<'a>(labels: impl IntoIterator<Item = &'a FaultLabel>) -> BTreeSet<FaultType> {
    labels
        .into_iter()
        .map(|l| normalize_type(l.fault))
        .collect()
}

fn normalized(set: &BTreeSet<FaultType>) -> BTreeSet<FaultType> {
    set.iter().copied().map(normalize_type).collect()
}

/// Recall `RC = |FT_loc ∩ FT_gt| / |FT_gt|` over normalised fault types; 0 when the ground
/// truth is empty.
pub fn rc(found: &BTreeSet<FaultType>, gt: &BTreeSet<FaultType>) -> f64 {
    let (f, g) = (normalized(found), normalized(gt));
    if g.is_empty() {
        return 0.0;
    }
    f.intersection(&g).count() as f64 / g.len() as f64
}

/// Precision `PR = |FT_loc ∩ FT_gt| / |FT_loc|` over normalised fault types; 0 when nothing
/// was found.
pub fn pr(found: &BTreeSet<FaultType>, gt: &BTreeSet<FaultType>) -> f64 {
    let (f, g) = (normalized(found), normalized(gt));
    if f.is_empty() {
        return 0.0;
    }
    f.intersection(&g).count() as f64 / f.len() as f64
}

/// `F3 = (1 + 3²)·PR·RC / (3²·PR + RC) = 10·PR·RC / (9·PR + RC)`; 0 when both are 0.
pub fn f3(pr: f64, rc: f64) -> f64 {
    let den = 9.0 * pr + rc;
    if den <= 0.0 {
        return 0.0;
    }
    10.0 * pr * rc / den
}

/// RC, PR and F3 of one localisation answer.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Score {
    pub rc: f64,
    pub pr: f64,
    pub f3: f64,
}

/// Scores an answer (labels) against ground-truth labels over normalised fault types.
pub fn score(found: &[FaultLabel], gt: &[FaultLabel]) -> Score {
    let (f, g) = (types_of(found), types_of(gt));
    let (rc, pr) = (rc(&f, &g), pr(&f, &g));
    Score {
        rc,
        pr,
        f3: f3(pr, rc),
    }
}

/// Scores an answer against several ground-truth variants (the known fix's labels first, then
/// the alternative ground truths of a neutrality analysis) and keeps the variant with the
/// highest RC, then F3, then PR; the earliest on a full tie. This is the study's §5 rule: an
/// answer is matched with the most similar ground truth. `(index of the variant, its score)`;
/// `(0, all zeros)` without variants.
pub fn score_best(found: &[FaultLabel], variants: &[Vec<FaultLabel>]) -> (usize, Score) {
    let key = |s: &Score| (s.rc, s.f3, s.pr);
    let mut best = (
        0,
        Score {
            rc: 0.0,
            pr: 0.0,
            f3: 0.0,
        },
    );
    for (i, gt) in variants.iter().enumerate() {
        let s = score(found, gt);
        if i == 0 || key(&s) > key(&best.1) {
            best = (i, s);
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(s: &[&str]) -> Vec<FaultLabel> {
        s.iter().map(|l| l.parse().unwrap()).collect()
    }

    fn close(a: f64, b: f64) {
        assert!((a - b).abs() < 1e-12, "{a} != {b}");
    }

    /// Rows of the study's Table 5 recomputed from the tools' outputs in its appendix
    /// (Tables 10–12): same RC and PR, F3 to the printed two decimals.
    #[test]
    fn score_reproduces_rows_of_the_studys_table5() {
        let d3 = labels(&["OCH", "LCH", "ACH(0,1)", "HNE", "HBS"]);
        let d4 = labels(&["ACH(0,1)", "LCH", "HLR"]);
        // (answer, ground truth, RC, PR, F3 by hand, F3 as printed)
        let cases = [
            // DeepFD D3: RC 1/5, PR 1/2, F3 = 1 / 4.7 (0.21)
            (
                labels(&["OCH", "HLR"]),
                d3.clone(),
                0.2,
                0.5,
                1.0 / 4.7,
                0.21,
            ),
            // DeepFD D6: RC 2/4, PR 2/3, F3 = (10/3) / 6.5 (0.51)
            (
                labels(&["OCH", "HLR", "HNE"]),
                labels(&["HLR", "HNE", "LCH", "ACH(1)"]),
                0.5,
                2.0 / 3.0,
                (10.0 / 3.0) / 6.5,
                0.51,
            ),
            // DeepFD D1: a layer-less ACH finds ACH(7) (0 layers named: the study counted it).
            (labels(&["ACH"]), labels(&["ACH(7)"]), 1.0, 1.0, 1.0, 1.0),
            // NeuraLint D3: ACH(1) finds ACH(0,1); RC 2/5, PR 2/3, F3 = (8/3) / 6.4 (0.42)
            (
                labels(&["ACH(1)", "LCH", "LCN(0)"]),
                d3,
                0.4,
                2.0 / 3.0,
                (8.0 / 3.0) / 6.4,
                0.42,
            ),
            // NeuraLint D4: RC 1/3, PR 1/2, F3 = (5/3) / (4.5 + 1/3) (0.34)
            (
                labels(&["ACH(0)", "BCI(0,1)"]),
                d4,
                1.0 / 3.0,
                0.5,
                (5.0 / 3.0) / (4.5 + 1.0 / 3.0),
                0.34,
            ),
            // GPT-4 M2: its ARM(7) counted for the ground truth ACH(7); RC 1, PR 1/3.
            (
                labels(&["ARM(7)", "HLR", "HNE"]),
                labels(&["ACH(7)"]),
                1.0,
                1.0 / 3.0,
                (10.0 / 3.0) / 4.0,
                0.83,
            ),
        ];
        for (found, gt, rc, pr, f, printed) in cases {
            let s = score(&found, &gt);
            close(s.rc, rc);
            close(s.pr, pr);
            close(s.f3, f);
            assert!((s.f3 - printed).abs() < 0.005, "{found:?}: F3 {}", s.f3);
        }
    }

    #[test]
    fn an_empty_answer_scores_zero() {
        // The study's '-' (nothing found) and 'N/A' rows: RC, PR and F3 all 0.
        let s = score(&[], &labels(&["HLR", "ACH(2)"]));
        assert_eq!((s.rc, s.pr, s.f3), (0.0, 0.0, 0.0));
    }

    #[test]
    fn a_fault_type_counts_once_however_many_labels_and_layers_name_it() {
        // ACH(0,1) is one ground-truth fault in the study (D3 has #F = 5); written as two
        // labels it is still one: |GT| = 2 here, and an answer naming ACH twice names it once.
        let s = score(
            &labels(&["ACH(1)", "ACH(3)"]),
            &labels(&["ACH(0)", "ACH(1)", "HLR"]),
        );
        close(s.rc, 0.5);
        close(s.pr, 1.0);
        close(s.f3, 5.0 / 9.5);
    }

    #[test]
    fn score_best_takes_the_highest_recall_even_at_a_lower_f3() {
        // The rule is the highest RC (reference §4), not the best F3. Ten answered types; the
        // known fix has 6 types, 5 of them answered: RC 5/6, PR 1/2, F3 = 25/32. An alternative
        // {HBS}: RC 1, PR 1/10, F3 = 1/1.9 — lower F3, but it is the one scored against.
        let found = labels(&[
            "HBS", "HLR", "HNE", "ACH", "RAW", "WCI", "LCH", "OCH", "LAD", "LCN",
        ]);
        let known = labels(&["HBS", "HLR", "HNE", "ACH(0)", "RAW(1)", "BCI(0)"]);
        close(score(&found, &known).f3, 25.0 / 32.0);
        let (i, s) = score_best(&found, &[known, labels(&["HBS"])]);
        assert_eq!(i, 1);
        close(s.rc, 1.0);
        close(s.pr, 0.1);
        close(s.f3, 1.0 / 1.9);
    }
}
