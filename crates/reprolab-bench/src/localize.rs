//! `bench localize`: RC, PR and F3 of the localisation engines against a fault benchmark's
//! ground truth, per fault and averaged over artificial and real faults (the study's Table 5
//! layout), with time per fault and stability over repeated runs. Faults with alternative
//! ground truths (`alternatives.json`, from `reprolab neutrality`) are also scored against the
//! variant with the highest RC (the study's Tables 6 and 7: before / after).

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use anyhow::Result;
use reprolab_core::FaultLabel;
use reprolab_core::manifest::Subject;
use reprolab_localize::{self as loc, Suspect};
use reprolab_neutrality::Alternatives;
use reprolab_report::{Cell, Report, Section, Table};
use serde::{Deserialize, Serialize};

use crate::agg::string_table;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Row {
    pub fault: String,
    pub origin: String,
    pub engine: String,
    pub gt: Vec<String>,
    /// The answer: the mode over the repeats.
    pub answer: Vec<String>,
    pub rc: f64,
    pub pr: f64,
    pub f3: f64,
    /// Share of repeats whose answer equals the mode.
    pub stability: f64,
    pub repeats: usize,
    /// Mean seconds per run: training (recorded duration) plus analysis.
    pub seconds: f64,
    /// After counting alternative ground truths: the variant scored against (the known fix's
    /// labels when it scores best or when the fault has no alternatives) and its RC, PR, F3.
    /// Recomputed from `answer` every time the report is written.
    #[serde(default)]
    pub gt_after: Vec<String>,
    #[serde(default)]
    pub rc_after: f64,
    #[serde(default)]
    pub pr_after: f64,
    #[serde(default)]
    pub f3_after: f64,
    /// Alternative ground-truth label sets of the fault (0: none known).
    #[serde(default)]
    pub variants: usize,
    /// LLM engine: share of the model's reasons mapped to a fault type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mapped: Option<f64>,
}

/// What an engine answered for one fault over its repeats.
#[derive(Debug, Clone, Default)]
pub struct Answers {
    pub fault: String,
    /// `mutation` or `real`.
    pub origin: String,
    pub engine: String,
    /// The fault's known labels (its `[fix]`).
    pub gt: Vec<FaultLabel>,
    /// One answer per repeat (see [`answer_types`]).
    pub answers: Vec<Vec<String>>,
    /// Seconds over all repeats.
    pub seconds: f64,
    /// The LLM engine's share of mapped reasons and the stability of its own vote.
    pub llm: Option<(f64, f64)>,
}

/// An engine's answer: the fault types of its suspects with confidence at or above the
/// threshold, at most 5, sorted.
pub fn answer_types(suspects: &[Suspect]) -> Vec<String> {
    let mut ans: Vec<String> = loc::rank_to_types(suspects, 5)
        .iter()
        .map(|l| l.to_string())
        .collect();
    ans.sort();
    ans
}

/// The most frequent answer and how many repeats gave it (among equally frequent answers, the
/// last in sorted order).
pub fn vote(answers: &[Vec<String>]) -> (Vec<String>, usize) {
    let mut counts: BTreeMap<&Vec<String>, usize> = BTreeMap::new();
    for ans in answers {
        *counts.entry(ans).or_default() += 1;
    }
    counts
        .iter()
        .max_by_key(|(_, n)| **n)
        .map(|(m, n)| ((*m).clone(), *n))
        .unwrap_or_default()
}

impl Row {
    /// The row of one (fault, engine): the vote over the repeats scored against the known fix;
    /// "after" equals "before" until [`score_after`].
    pub fn new(a: &Answers) -> Row {
        let repeats = a.answers.len().max(1);
        let (mode, n) = vote(&a.answers);
        let labels: Vec<FaultLabel> = mode.iter().filter_map(|s| s.parse().ok()).collect();
        let score = loc::score(&labels, &a.gt);
        Row {
            fault: a.fault.clone(),
            origin: a.origin.clone(),
            engine: a.engine.clone(),
            gt: a.gt.iter().map(|l| l.to_string()).collect(),
            answer: mode,
            rc: score.rc,
            pr: score.pr,
            f3: score.f3,
            stability: a.llm.map_or(n as f64 / repeats as f64, |l| l.1),
            repeats,
            seconds: a.seconds / repeats as f64,
            gt_after: Vec::new(),
            rc_after: score.rc,
            pr_after: score.pr,
            f3_after: score.f3,
            variants: 0,
            mapped: a.llm.map(|l| l.0),
        }
    }
}

/// The ground-truth variants of a fault: its `[fix]` labels first, then the distinct label sets
/// of its alternatives (none when it has no `alternatives.json`).
pub fn gt_variants(dir: &Path, subject: &Subject) -> Result<Vec<Vec<FaultLabel>>> {
    let gt = subject
        .fix
        .as_ref()
        .map(|f| f.faults.clone())
        .unwrap_or_default();
    let mut out = vec![gt];
    if let Some(alts) = Alternatives::read(dir)? {
        for v in alts.variants() {
            if !out.contains(&v) {
                out.push(v);
            }
        }
    }
    Ok(out)
}

/// Fills the row's "after" scores from its answer and the fault's variants.
pub fn score_after(row: &mut Row, variants: &[Vec<FaultLabel>]) {
    let answer: Vec<FaultLabel> = row.answer.iter().filter_map(|s| s.parse().ok()).collect();
    let (i, s) = loc::score_best(&answer, variants);
    row.gt_after = variants
        .get(i)
        .map(|v| v.iter().map(|l| l.to_string()).collect())
        .unwrap_or_default();
    (row.rc_after, row.pr_after, row.f3_after) = (s.rc, s.pr, s.f3);
    row.variants = variants.len().saturating_sub(1);
}

/// Ground-truth variants per fault name.
pub type Variants = BTreeMap<String, Vec<Vec<FaultLabel>>>;

/// The variants of the faults in `dirs` that load (read when the report is written: an analysis
/// may have run since an earlier, resumed, row was written).
pub fn read_variants(dirs: &[PathBuf]) -> Result<Variants> {
    let mut variants = BTreeMap::new();
    for dir in dirs {
        if let Ok(s) = Subject::load(dir) {
            let v = gt_variants(dir, &s)?;
            variants.insert(s.name, v);
        }
    }
    Ok(variants)
}

/// The (fault, engine) pairs `rows` already holds.
pub fn done(rows: &[Row]) -> HashSet<(String, String)> {
    rows.iter()
        .map(|r| (r.fault.clone(), r.engine.clone()))
        .collect()
}

/// How the benchmark was run.
#[derive(Debug, Clone)]
pub struct Setup {
    pub benchmark: PathBuf,
    /// Engine names (serde names) in the order asked for.
    pub engines: Vec<String>,
    pub repeats: usize,
}

/// The rows of a finished benchmark, rescored, with what the report says about them.
#[derive(Debug, Clone)]
pub struct Results {
    pub rows: Vec<Row>,
    /// Faults in the benchmark, and those with alternative ground truths.
    pub faults: usize,
    pub with_alternatives: usize,
}

/// Keeps the rows of the faults in `variants` and scores them "after" against their variants.
pub fn finish(mut rows: Vec<Row>, variants: &Variants) -> Results {
    rows.retain(|r| variants.contains_key(&r.fault));
    for r in &mut rows {
        score_after(r, &variants[&r.fault]);
    }
    Results {
        rows,
        faults: variants.len(),
        with_alternatives: variants.values().filter(|v| v.len() > 1).count(),
    }
}

fn avg(v: &[f64]) -> String {
    crate::agg::fmt2(crate::agg::mean(v))
}

/// Table 5 (first row: the headers): per engine, RC and F3 over artificial, real (and, when
/// there are any, manual) faults and all of them, stability, seconds per fault and the LLM's
/// mapped share.
pub fn summary_rows(rows: &[Row], engines: &[String]) -> Vec<Vec<String>> {
    let mut groups = vec![("artificial", "mutation"), ("real", "real")];
    if rows.iter().any(|r| r.origin == "manual") {
        groups.push(("manual", "manual"));
    }
    let mut headers = vec!["engine".to_string(), "faults".to_string()];
    for (set, _) in &groups {
        headers.push(format!("RC {set}"));
        headers.push(format!("F3 {set}"));
    }
    headers.extend(
        [
            "RC all",
            "PR all",
            "F3 all",
            "stability",
            "s per fault",
            "mapped",
        ]
        .map(String::from),
    );
    let mut out = vec![headers];
    for name in engines {
        let rs: Vec<&Row> = rows.iter().filter(|r| &r.engine == name).collect();
        let of = |origin: Option<&str>, f: fn(&Row) -> f64| {
            avg(&rs
                .iter()
                .filter(|r| origin.is_none_or(|o| r.origin == o))
                .map(|r| f(r))
                .collect::<Vec<_>>())
        };
        let mut row = vec![name.clone(), rs.len().to_string()];
        for (_, origin) in &groups {
            row.push(of(Some(origin), |r| r.rc));
            row.push(of(Some(origin), |r| r.f3));
        }
        row.extend([
            of(None, |r| r.rc),
            of(None, |r| r.pr),
            of(None, |r| r.f3),
            of(None, |r| r.stability),
            of(None, |r| r.seconds),
            avg(&rs.iter().filter_map(|r| r.mapped).collect::<Vec<_>>()),
        ]);
        out.push(row);
    }
    out
}

/// The study's Table 7: RC, PR and F3 before and after alternative ground truths, per engine
/// and fault set.
pub fn before_after_rows(rows: &[Row], engines: &[String]) -> Vec<Vec<String>> {
    let mut out = vec![
        [
            "engine",
            "faults",
            "RC before",
            "RC after",
            "PR before",
            "PR after",
            "F3 before",
            "F3 after",
        ]
        .map(String::from)
        .to_vec(),
    ];
    for name in engines {
        for (set, origin) in [
            ("artificial", Some("mutation")),
            ("real", Some("real")),
            ("manual", Some("manual")),
            ("all", None),
        ] {
            let rs: Vec<&Row> = rows
                .iter()
                .filter(|r| &r.engine == name && origin.is_none_or(|o| r.origin == o))
                .collect();
            if rs.is_empty() {
                continue;
            }
            let col = |f: fn(&Row) -> f64| avg(&rs.iter().map(|r| f(r)).collect::<Vec<_>>());
            out.push(vec![
                name.clone(),
                format!("{set} ({})", rs.len()),
                col(|r| r.rc),
                col(|r| r.rc_after),
                col(|r| r.pr),
                col(|r| r.pr_after),
                col(|r| r.f3),
                col(|r| r.f3_after),
            ]);
        }
    }
    out
}

/// The per-fault table, with the "after" columns when `after`.
pub fn per_fault_table(rows: &[Row], after: bool) -> Table {
    let mut headers: Vec<String> = [
        "fault",
        "engine",
        "ground truth",
        "answer",
        "RC",
        "PR",
        "F3",
    ]
    .map(String::from)
    .to_vec();
    if after {
        headers
            .extend(["GT variant (after)", "RC after", "PR after", "F3 after"].map(String::from));
    }
    headers.extend(["stability", "s"].map(String::from));
    let table_rows = rows
        .iter()
        .map(|r| {
            let mut line: Vec<Cell> = vec![
                r.fault.clone().into(),
                r.engine.clone().into(),
                r.gt.join(" ").into(),
                r.answer.join(" ").into(),
                Cell::marked(format!("{:.2}", r.rc), r.rc >= 1.0),
                format!("{:.2}", r.pr).into(),
                format!("{:.2}", r.f3).into(),
            ];
            if after {
                line.push(
                    if r.variants == 0 {
                        "-".to_string()
                    } else {
                        format!("{} (of {})", r.gt_after.join(" "), r.variants + 1)
                    }
                    .into(),
                );
                line.push(Cell::marked(
                    format!("{:.2}", r.rc_after),
                    r.rc_after > r.rc,
                ));
                line.push(format!("{:.2}", r.pr_after).into());
                line.push(format!("{:.2}", r.f3_after).into());
            }
            line.push(format!("{:.2}", r.stability).into());
            line.push(format!("{:.2}", r.seconds).into());
            line
        })
        .collect();
    Table {
        caption: if after {
            "Bold RC: every ground-truth fault found; bold RC after: higher than before.".into()
        } else {
            "Bold RC: every ground-truth fault found.".into()
        },
        headers,
        rows: table_rows,
    }
}

/// Table 5, Table 7 (only when some fault has alternative ground truths) and the per-fault
/// table (with the "after" columns only then).
pub fn build_report(results: &Results, setup: &Setup) -> Report {
    let (rows, with_alternatives) = (&results.rows, results.with_alternatives);
    let after = with_alternatives > 0;
    let mut sections = vec![Section {
        heading: "Table 5: RC, PR and F3 (β = 3), averaged per fault".into(),
        paragraphs: vec![format!(
            "Answers are the fault types of the suspects with confidence >= {}, at most 5; types are compared as in the study (ARM/AAL count as ACH, LRM as LAD); engines that train answer with the mode of {} runs (distinct seeds). The engines never read the ground truth.",
            loc::THRESHOLD,
            setup.repeats
        )],
        tables: vec![string_table(&summary_rows(rows, &setup.engines))],
        ..Section::default()
    }];
    if after {
        sections.push(Section {
            heading: "Table 7: before / after neutrality analysis".into(),
            paragraphs: vec![format!(
                "{with_alternatives} of {} faults have alternative ground truths (alternatives.json from `reprolab neutrality`). After: each answer is scored against the ground-truth variant with the highest RC (then F3, then PR), the known fix included, as in the study's Tables 6 and 7; faults without alternatives score the same before and after.",
                results.faults
            )],
            tables: vec![string_table(&before_after_rows(rows, &setup.engines))],
            ..Section::default()
        });
    }
    sections.push(Section {
        heading: "Scores and confusions per engine".into(),
        figures: vec![confusion::scores_figure(rows, &setup.engines)],
        tables: setup
            .engines
            .iter()
            .map(|e| {
                let mine: Vec<&Row> = rows.iter().filter(|r| &r.engine == e).collect();
                confusion::table(e, &mine)
            })
            .collect(),
        ..Section::default()
    });
    sections.push(Section {
        heading: "Per fault".into(),
        tables: vec![per_fault_table(rows, after)],
        ..Section::default()
    });
    Report {
        title: format!(
            "Localisation benchmark: {}",
            crate::faults::benchmark_name(&setup.benchmark)
        ),
        sections,
    }
}

pub mod confusion;
#[cfg(test)]
mod tests;
