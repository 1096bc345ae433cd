//! `bench repair`: one row per (fault, engine, budget, repeat) cell, the study's Table 9 (patched
//! metric per fault), Figure 3 (improvement rate per engine and budget) and a summary per engine
//! and budget, the holdout runs per fault ([`runs`]) and the anytime curves ([`anytime`]). When faults have alternative ground truths (`alternatives.json`), AJ is also
//! given against the best-matching variant ("AJ after").

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::PathBuf;

use anyhow::Result;
use reprolab_core::manifest::{Goal, Subject};
use reprolab_core::{FaultLabel, FaultType};
use reprolab_neutrality::{Alternatives, best_aj};
use reprolab_repair::{Validation, gt_types, patch_diff};
use reprolab_report::{Cell, Figure, Report, Section, Table, svg};
use serde::{Deserialize, Serialize};

use crate::agg::{first_seen, fmt2, fmt3, mean, median};

/// Which cell a row is: a fault repaired by an engine under a budget, the `repeat`-th time.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CellId {
    pub fault: String,
    pub engine: String,
    pub budget: String,
    pub repeat: usize,
}

impl CellId {
    /// `fault|engine|budget|repeat`, the key a resumed benchmark skips done cells by.
    pub fn key(&self) -> String {
        format!(
            "{}|{}|{}|{}",
            self.fault, self.engine, self.budget, self.repeat
        )
    }
}

/// One (fault, engine, budget, repeat) cell.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Row {
    pub fault: String,
    pub engine: String,
    pub budget: String,
    pub repeat: usize,
    pub goal: Goal,
    pub faulty_mean: f64,
    /// Holdout mean of the patched config (the faulty mean when no patch was found).
    pub patched_mean: f64,
    pub patched_std: f64,
    pub gt_mean: Option<f64>,
    pub significant: bool,
    pub ir: Option<f64>,
    pub complexity: f64,
    pub changed: usize,
    pub gt_changed: usize,
    pub aj: Option<f64>,
    pub trials: usize,
    /// Trials the search's pruner stopped early (included in `trials`); 0 in rows written
    /// before pruning existed (and left out of the line when 0).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub pruned: usize,
    pub spent_s: f64,
    /// The time budget in seconds (the multiple times the larger of the faulty and the default
    /// config's training time); `None` for a trial budget or in rows written before it existed.
    #[serde(default)]
    pub budget_s: Option<f64>,
    /// After `--minimize` (significant patches only).
    pub min_changed: Option<usize>,
    pub min_ir: Option<f64>,
    pub min_significant: Option<bool>,
    /// The (normalised) fault types the patch changes (empty without a patch); `None` in rows
    /// written before this field existed.
    #[serde(default)]
    pub patch_types: Option<Vec<FaultType>>,
    /// AJ against the best ground-truth variant (the known fix or an alternative); recomputed
    /// whenever the report is written. Equal to `aj` for a fault without alternatives.
    #[serde(default)]
    pub aj_after: Option<f64>,
    /// `[spent seconds, best search score so far]` after each trial ([`anytime::history`]);
    /// empty in rows written before it was recorded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<[f64; 2]>,
    /// The validation's holdout runs ([`runs::Runs`]); `None` without a patch and in rows
    /// written before they were kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runs: Option<runs::Runs>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// What one repair of a cell produced, as the row needs it.
#[derive(Debug, Clone, Copy)]
pub struct RepairOutcome<'a> {
    /// The validation of the best patch; `None` when the search found nothing better than the
    /// faulty config.
    pub validation: Option<&'a Validation>,
    /// The holdout mean of the faulty config (the validation's when there is one).
    pub faulty_mean: f64,
    pub trials: usize,
    /// Trials stopped early by the pruner.
    pub pruned: usize,
    pub spent_s: f64,
    /// The time budget in seconds (`None` for a trial budget).
    pub budget_s: Option<f64>,
    /// The minimised patch's changed hyperparameters and its validation.
    pub minimized: Option<(usize, &'a Validation)>,
    /// The search's best-so-far against time spent ([`anytime::history`]).
    pub history: &'a [[f64; 2]],
}

impl Row {
    /// The row of `cell` of `subject` (its `[fix]` gives the ground truth). Without a patch, a
    /// fault with a known fix scores IR 0 and AJ 0. `aj_after` is left for [`aj_after`].
    pub fn new(cell: &CellId, subject: &Subject, out: &RepairOutcome<'_>) -> Row {
        let (v, faulty_mean) = (out.validation, out.faulty_mean);
        let has_fix = subject.fix.is_some();
        Row {
            fault: cell.fault.clone(),
            engine: cell.engine.clone(),
            budget: cell.budget.clone(),
            repeat: cell.repeat,
            goal: subject.metric.goal,
            faulty_mean,
            patched_mean: v.map_or(faulty_mean, |v| v.patch.mean),
            patched_std: v.map_or(0.0, |v| v.patch.std),
            gt_mean: v.and_then(|v| v.gt.as_ref().map(|g| g.mean)),
            significant: v.is_some_and(|v| v.significant),
            ir: match v {
                Some(v) => v.ir,
                None if has_fix => Some(0.0),
                None => None,
            },
            complexity: v.map_or(0.0, |v| v.complexity),
            changed: v.map_or(0, |v| v.changed.len()),
            gt_changed: gt_changed(subject),
            aj: match v {
                Some(v) => v.aj,
                None if has_fix => Some(0.0),
                None => None,
            },
            trials: out.trials,
            pruned: out.pruned,
            spent_s: out.spent_s,
            budget_s: out.budget_s,
            min_changed: out.minimized.map(|(c, _)| c),
            min_ir: out.minimized.and_then(|(_, m)| m.ir),
            min_significant: out.minimized.map(|(_, m)| m.significant),
            patch_types: Some(v.map_or(Vec::new(), |v| v.patch_types.clone())),
            aj_after: None,
            history: out.history.to_vec(),
            runs: v.map(|v| runs::Runs::of(v, subject)),
        }
    }

    pub fn cell(&self) -> CellId {
        CellId {
            fault: self.fault.clone(),
            engine: self.engine.clone(),
            budget: self.budget.clone(),
            repeat: self.repeat,
        }
    }
}

/// What the budgets meant when the rows were measured: rows written before `budget_s` existed
/// were budgeted on the faulty program's training time alone.
fn budget_meaning(rows: &[Row]) -> String {
    if rows.iter().all(|r| r.budget_s.is_none()) {
        return "multiples of the faulty program's mean training time, counted as summed training time".into();
    }
    format!(
        "multiples of the larger of the faulty and the default (fixed) program's mean training time, so that m× buys at least m full trainings of the default program, counted as summed training time; a search passes its budget by less than one trial{}",
        budget_seconds(rows)
    )
}

/// `; mean budget per cell: 10x 13.2 s, 20x 26.4 s` over the rows that recorded one.
fn budget_seconds(rows: &[Row]) -> String {
    let parts: Vec<String> = first_seen(rows, |r| r.budget.clone())
        .into_iter()
        .filter_map(|b| {
            let secs: Vec<f64> = rows
                .iter()
                .filter(|r| r.budget == b)
                .filter_map(|r| r.budget_s)
                .collect();
            mean(&secs).map(|m| format!("{b} {m:.1} s"))
        })
        .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!("; mean budget per cell: {}", parts.join(", "))
    }
}

/// Hyperparameters the known fix changes (0 without one).
pub fn gt_changed(subject: &Subject) -> usize {
    subject
        .fix
        .as_ref()
        .map_or(0, |f| patch_diff(&subject.config, &f.config).len())
}

/// Per fault name: its ground-truth types and the label sets of its alternative ground truths
/// (empty without `alternatives.json`).
pub type Variants = BTreeMap<String, (BTreeSet<FaultType>, Vec<Vec<FaultLabel>>)>;

/// The variants of the faults in `dirs`.
pub fn read_variants(dirs: &[PathBuf]) -> Result<Variants> {
    let mut variants = BTreeMap::new();
    for dir in dirs {
        let subject = Subject::load(dir)?;
        let alts = Alternatives::read(dir)?
            .map(|a| a.variants())
            .unwrap_or_default();
        variants.insert(subject.name.clone(), (gt_types(&subject), alts));
    }
    Ok(variants)
}

/// AJ against the best ground-truth variant (the row's own AJ when the fault has none).
pub fn aj_after(row: &Row, variants: &Variants) -> Option<f64> {
    match (variants.get(&row.fault), &row.patch_types) {
        (Some((_, alts)), _) if alts.is_empty() => row.aj,
        (Some((gt, alts)), Some(types)) => best_aj(&types.iter().copied().collect(), gt, alts),
        _ => None,
    }
}

/// How the benchmark was run, as the report's setup and table order need it.
#[derive(Debug, Clone)]
pub struct Setup {
    pub benchmark: PathBuf,
    /// Engine names (serde names) in the order asked for.
    pub engines: Vec<String>,
    /// Budgets as written (`10x`, `50`) in the order asked for.
    pub budgets: Vec<String>,
    pub repeats: usize,
    pub runs: usize,
}

/// The rows of a finished benchmark, ready for the report.
#[derive(Debug, Clone)]
pub struct Results {
    pub rows: Vec<Row>,
    /// Faults with alternative ground truths.
    pub with_alternatives: usize,
}

/// Keeps the rows of the faults in `variants` (the results file may hold others), rescores AJ
/// after against them (read when the report is written: an analysis may have run since an
/// earlier row was written), and orders them as the tables show them: by budget and engine (the
/// order of `setup`), fault, repeat.
pub fn finish(mut rows: Vec<Row>, variants: &Variants, setup: &Setup) -> Results {
    rows.retain(|r| variants.contains_key(&r.fault));
    for r in rows.iter_mut() {
        r.aj_after = aj_after(r, variants);
    }
    sort_rows(&mut rows, setup);
    Results {
        rows,
        with_alternatives: variants.values().filter(|(_, a)| !a.is_empty()).count(),
    }
}

/// Tables follow the order of `--engines` and `--budgets`, whatever order the cells ran in.
pub fn sort_rows(rows: &mut [Row], setup: &Setup) {
    let pos = |list: &[String], x: &str| list.iter().position(|e| e == x).unwrap_or(usize::MAX);
    rows.sort_by_key(|r| {
        (
            pos(&setup.budgets, &r.budget),
            pos(&setup.engines, &r.engine),
            r.fault.clone(),
            r.repeat,
        )
    });
}

/// Median IR per fault (rows) and engine × budget (columns), outlined where most repeats gave a
/// significant patch: which engine repairs which fault, at a glance.
fn ir_heatmap(rows: &[Row]) -> Figure {
    let faults = first_seen(rows, |r| r.fault.clone());
    let columns = groups(rows);
    let cells = faults
        .iter()
        .map(|fault| {
            columns
                .iter()
                .map(|(_, rs)| {
                    let mine: Vec<&&Row> = rs.iter().filter(|r| &r.fault == fault).collect();
                    let significant = mine.iter().filter(|r| r.significant).count();
                    svg::HeatCell {
                        value: crate::agg::median(mine.iter().filter_map(|r| r.ir).collect()),
                        mark: !mine.is_empty() && 2 * significant > mine.len(),
                    }
                })
                .collect()
        })
        .collect::<Vec<_>>();
    let labels: Vec<String> = columns
        .iter()
        .map(|((e, b), _)| format!("{e} {b}"))
        .collect();
    Figure {
        name: "ir-heatmap".into(),
        caption: "Median IR per fault and engine × budget over repeats (red below 0, green towards 1; outlined and bold: a significant patch in most repeats; -: no IR, the fault has no known fix)".into(),
        svg: svg::heatmap("Improvement rate per fault", &faults, &labels, &cells, (-1.0, 1.0)),
    }
}

/// The rows per (engine, budget), in the order engines and budgets appear.
pub fn groups(rows: &[Row]) -> Vec<((String, String), Vec<&Row>)> {
    first_seen(rows, |r| (r.engine.clone(), r.budget.clone()))
        .into_iter()
        .map(|k| {
            let v = rows
                .iter()
                .filter(|r| r.engine == k.0 && r.budget == k.1)
                .collect();
            (k, v)
        })
        .collect()
}

/// The summary per engine and budget (first row: the headers); `after` adds "mean AJ after".
/// What describes a patch (changed, complexity, AJ) is averaged over the significant patches
/// only, as the study's Figures 4 and 5 do: a patch the holdout did not confirm is no repair, and
/// its ingredients say nothing about the fault.
pub fn summary_rows(rows: &[Row], after: bool) -> Vec<Vec<String>> {
    let mut headers = vec![
        "engine",
        "budget",
        "cells",
        "significant",
        "median IR",
        "mean changed",
        "mean GT changed",
        "mean complexity",
        "mean AJ",
    ];
    if after {
        headers.push("mean AJ after");
    }
    headers.push("minimised changed");
    let mut out = vec![headers.into_iter().map(String::from).collect::<Vec<_>>()];
    for ((engine, budget), rs) in groups(rows) {
        let over_significant = |f: fn(&Row) -> Option<f64>| -> Vec<f64> {
            rs.iter()
                .filter(|r| r.significant)
                .filter_map(|r| f(r))
                .collect()
        };
        let irs: Vec<f64> = rs.iter().filter_map(|r| r.ir).collect();
        let sig = rs.iter().filter(|r| r.significant).count();
        let minc: Vec<f64> = rs
            .iter()
            .filter_map(|r| r.min_changed.map(|c| c as f64))
            .collect();
        let mut line = vec![
            engine,
            budget,
            rs.len().to_string(),
            format!("{sig}/{}", rs.len()),
            fmt2(median(irs)),
            fmt2(mean(&over_significant(|r| Some(r.changed as f64)))),
            fmt2(mean(&over_significant(|r| Some(r.gt_changed as f64)))),
            fmt2(mean(&over_significant(|r| Some(r.complexity)))),
            fmt2(mean(&over_significant(|r| r.aj))),
        ];
        if after {
            line.push(fmt2(mean(&over_significant(|r| r.aj_after))));
        }
        line.push(fmt2(mean(&minc)));
        out.push(line);
    }
    out
}

/// Table 9: the patched metric's mean ± σ over repeats per fault and (engine, budget); bold when
/// most repeats are significant.
pub fn table9(rows: &[Row]) -> Table {
    let cols: Vec<(String, String)> = groups(rows).into_iter().map(|(k, _)| k).collect();
    let mut headers = vec![
        "fault".to_string(),
        "goal".into(),
        "faulty".into(),
        "ground truth".into(),
    ];
    headers.extend(cols.iter().map(|(e, b)| format!("{e} {b}")));
    let mut t9 = Table {
        caption: "Patched metric on the holdout split: mean ± σ over repeats (goal: whether higher or lower is better; bold: significant improvement in most repeats)".into(),
        headers,
        rows: Vec::new(),
    };
    for f in first_seen(rows, |r| r.fault.clone()) {
        let fr: Vec<&Row> = rows.iter().filter(|r| r.fault == f).collect();
        let goal = match fr[0].goal {
            Goal::Max => "max ↑",
            Goal::Min => "min ↓",
        };
        let mut line: Vec<Cell> = vec![
            f.clone().into(),
            goal.into(),
            fmt3(mean(&fr.iter().map(|r| r.faulty_mean).collect::<Vec<_>>())).into(),
            fmt3(fr.iter().find_map(|r| r.gt_mean)).into(),
        ];
        for (e, b) in &cols {
            let cell: Vec<&&Row> = fr
                .iter()
                .filter(|r| &r.engine == e && &r.budget == b)
                .collect();
            let vals: Vec<f64> = cell.iter().map(|r| r.patched_mean).collect();
            let sig = cell.iter().filter(|r| r.significant).count();
            let text = match mean(&vals) {
                Some(m) => format!("{m:.3} ± {:.3}", reprolab_stats::summarize(&vals).std),
                None => "-".into(),
            };
            line.push(Cell::marked(text, sig * 2 > cell.len()));
        }
        t9.rows.push(line);
    }
    t9
}

/// The targets the study's claims set: bohb and guided at 10x against random at 20x (median
/// IR), and minimised patches against the ground truth's size.
pub fn targets(rows: &[Row]) -> Vec<String> {
    let gs = groups(rows);
    let median_of = |e: &str, b: &str| {
        gs.iter()
            .find(|((ge, gb), _)| ge == e && gb == b)
            .and_then(|(_, rs)| median(rs.iter().filter_map(|r| r.ir).collect()))
    };
    let met = |ok: bool| if ok { "met" } else { "not met" };
    let mut targets = Vec::new();
    for engine in ["bohb", "guided"] {
        if let (Some(r20), Some(x10)) = (median_of("random", "20x"), median_of(engine, "10x")) {
            targets.push(format!(
                "Median IR: {engine} at 10x = {x10:.2}, random at 20x = {r20:.2} (target: {engine} at 10x >= random at 20x: {}).",
                met(x10 >= r20)
            ));
        }
    }
    let minimized: Vec<&Row> = rows.iter().filter(|r| r.min_changed.is_some()).collect();
    if !minimized.is_empty() {
        let of = |f: fn(&Row) -> f64| {
            mean(&minimized.iter().map(|r| f(r)).collect::<Vec<_>>()).unwrap_or(0.0)
        };
        let mc = of(|r| r.min_changed.unwrap_or(0) as f64);
        let gc = of(|r| r.gt_changed as f64);
        targets.push(format!(
            "Minimised patches change {mc:.2} hyperparameters on average against {gc:.2} in the ground truth ({:.2}x; target <= 2x).",
            if gc > 0.0 { mc / gc } else { f64::NAN }
        ));
    }
    targets
}

/// The report: setup, targets, Table 9, Figure 3 with the summary per engine and budget.
pub fn build_report(results: &Results, setup: &Setup) -> Report {
    let (rows, with_alternatives) = (&results.rows, results.with_alternatives);
    let summary = summary_rows(rows, with_alternatives > 0);
    let t_summary = Table {
        caption: if with_alternatives > 0 {
            format!(
                "Per engine and budget (changed, complexity and AJ over significant patches). AJ after: against the best-matching ground-truth variant; {with_alternatives} faults have alternative ground truths (alternatives.json), the others score the same."
            )
        } else {
            "Per engine and budget (changed, complexity and AJ over significant patches)".into()
        },
        ..crate::agg::string_table(&summary)
    };
    let ir_groups: Vec<(String, Vec<f64>)> = groups(rows)
        .iter()
        .map(|((e, b), rs)| (format!("{e} {b}"), rs.iter().filter_map(|r| r.ir).collect()))
        .collect();
    let fig3 = Figure {
        name: "ir".into(),
        caption: "Figure 3: improvement rate (IR) per engine and budget, over faults and repeats (axis limited to [-1, 1.5]; values beyond are counted as off-scale)"
            .into(),
        svg: svg::boxplot_in("Improvement rate", "IR", &ir_groups, Some((-1.0, 1.5))),
    };
    let mut fig3_section_figures = vec![fig3];
    let faults = first_seen(rows, |r| r.fault.clone()).len();
    fig3_section_figures.push(ir_heatmap(rows));
    let anytime = anytime::figures(rows).map(|figures| Section {
        heading: "Anytime: best so far against budget spent".into(),
        figures,
        ..Section::default()
    });
    Report {
        title: format!(
            "Repair benchmark: {}",
            crate::faults::benchmark_name(&setup.benchmark)
        ),
        sections: vec![
            Section {
                heading: "Setup".into(),
                paragraphs: vec![format!(
                    "{} faults, engines {}, budgets {} ({}), {} repeats, {} validation retrainings per config on the holdout split. Significant: Wilcoxon p < 0.05 and |d| >= 0.5, better than the faulty config.",
                    faults,
                    setup.engines.join("/"),
                    setup.budgets.join("/"),
                    budget_meaning(rows),
                    setup.repeats,
                    setup.runs
                )],
                ..Section::default()
            },
            Section {
                heading: "Targets".into(),
                paragraphs: targets(rows),
                ..Section::default()
            },
            Section {
                heading: "Table 9: patched metric per fault".into(),
                tables: vec![table9(rows)],
                ..Section::default()
            },
            Section {
                heading: "Figure 3: improvement rate".into(),
                figures: fig3_section_figures,
                tables: vec![t_summary],
                ..Section::default()
            },
        ]
        .into_iter()
        .chain(runs::section(rows))
        .chain(anytime)
        .collect(),
    }
}

/// The keys of the cells `rows` already holds.
pub fn done(rows: &[Row]) -> HashSet<String> {
    rows.iter().map(|r| r.cell().key()).collect()
}

pub mod anytime;
pub mod grid;
pub mod runs;
#[cfg(test)]
mod tests;
