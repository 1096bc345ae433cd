//! Per-fault run distributions: what the holdout validation's retrainings of the faulty config,
//! each engine's patches and the known fix looked like, with the mean's 95% CI, so that a reader
//! sees the spread behind an improvement rate (a mean of 0.95 from ten runs near 0.95, or from
//! nine at 1.0 and one at 0.5).
//!
//! A row keeps its validation's runs ([`Runs`]). The faulty config's and the fix's runs are the
//! same in every row of a fault (same seeds, the cache), so the first row that has them speaks
//! for the fault; an engine's patched runs are pooled over its repeats (each repeat may have
//! found another patch). A cell whose search found no patch has no validation and adds nothing;
//! the table counts such cells.

use reprolab_core::manifest::{Goal, Metric, Subject};
use reprolab_repair::Validation;
use reprolab_report::{Figure, Section, Table, svg};
use reprolab_stats::summarize;
use serde::{Deserialize, Serialize};

use super::Row;
use crate::agg::{first_seen, string_table};

/// The values a metric can take, `(low, high)`.
type Range = (f64, f64);

/// The holdout runs of a row's validation, per seed (`null`: a failed training).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Runs {
    pub faulty: Vec<Option<f64>>,
    pub patched: Vec<Option<f64>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gt: Option<Vec<Option<f64>>>,
    /// The metric's name, which says what values it can take (`Metric::range`): the CIs are
    /// cut to them.
    pub metric: String,
}

impl Runs {
    /// The runs of `v`, for `subject`'s metric.
    pub fn of(v: &Validation, subject: &Subject) -> Runs {
        Runs {
            faulty: v.faulty.samples.clone(),
            patched: v.patch.samples.clone(),
            gt: v.gt.as_ref().map(|g| g.samples.clone()),
            metric: subject.metric.name.clone(),
        }
    }

    /// The values the metric can take, when its name says so and all these runs agree.
    fn range(&self, goal: Goal) -> Option<Range> {
        let all: Vec<f64> = [&self.faulty, &self.patched]
            .into_iter()
            .chain(self.gt.as_ref())
            .flat_map(|xs| finished(xs))
            .collect();
        let metric = Metric {
            name: self.metric.clone(),
            goal,
        };
        metric.range(&all)
    }
}

fn finished(xs: &[Option<f64>]) -> Vec<f64> {
    xs.iter().flatten().copied().collect()
}

/// One box of a fault's figure: its label, finished values, and the cells it came from.
struct Group {
    label: String,
    values: Vec<f64>,
    cells: usize,
    without_patch: usize,
}

/// The groups of one fault: faulty, each engine × budget (patched runs pooled over repeats),
/// the known fix.
fn fault_groups(rows: &[&Row]) -> Option<(Vec<Group>, Option<Range>)> {
    let first = rows.iter().find_map(|r| r.runs.as_ref())?;
    let mut out = vec![Group {
        label: "faulty".into(),
        values: finished(&first.faulty),
        cells: 1,
        without_patch: 0,
    }];
    for (engine, budget) in first_seen(rows, |r| (r.engine.clone(), r.budget.clone())) {
        let cells: Vec<&&Row> = rows
            .iter()
            .filter(|r| r.engine == engine && r.budget == budget)
            .collect();
        out.push(Group {
            label: format!("{engine} {budget}"),
            values: cells
                .iter()
                .filter_map(|r| r.runs.as_ref())
                .flat_map(|r| finished(&r.patched))
                .collect(),
            cells: cells.len(),
            without_patch: cells.iter().filter(|r| r.runs.is_none()).count(),
        });
    }
    if let Some(gt) = &first.gt {
        out.push(Group {
            label: "known fix".into(),
            values: finished(gt),
            cells: 1,
            without_patch: 0,
        });
    }
    Some((out, first.range(rows[0].goal)))
}

/// `mean [lo, hi]` of the values with the CI cut to `range`, or "-".
fn mean_ci(values: &[f64], range: Option<Range>) -> (String, String) {
    if values.is_empty() {
        return ("-".into(), "-".into());
    }
    let s = summarize(values);
    let s = match range {
        Some(r) => s.within(r),
        None => s,
    };
    (
        format!("{:.4}", s.mean),
        format!("[{:.4}, {:.4}]", s.ci95.0, s.ci95.1),
    )
}

/// The section, `None` when no row kept its runs (rows written before they were recorded).
pub fn section(rows: &[Row]) -> Option<Section> {
    let mut figures = Vec::new();
    let mut table = vec![
        [
            "fault", "runs of", "cells", "no patch", "runs", "mean", "95% CI",
        ]
        .map(String::from)
        .to_vec(),
    ];
    for fault in first_seen(rows, |r| r.fault.clone()) {
        let of_fault: Vec<&Row> = rows.iter().filter(|r| r.fault == fault).collect();
        let Some((groups, range)) = fault_groups(&of_fault) else {
            continue;
        };
        let goal = of_fault[0].goal;
        let metric = of_fault
            .iter()
            .find_map(|r| r.runs.as_ref())
            .map_or("metric", |r| r.metric.as_str());
        let y_label = format!("holdout {metric}");
        for g in &groups {
            let (mean, ci) = mean_ci(&g.values, range);
            table.push(vec![
                fault.clone(),
                g.label.clone(),
                g.cells.to_string(),
                g.without_patch.to_string(),
                g.values.len().to_string(),
                mean,
                ci,
            ]);
        }
        let boxes: Vec<(String, Vec<f64>)> =
            groups.into_iter().map(|g| (g.label, g.values)).collect();
        figures.push(Figure {
            name: format!("runs-{fault}"),
            caption: format!(
                "{fault}: holdout runs of the faulty config, of each engine's patches (pooled over \
                 repeats) and of the known fix ({} is better)",
                goal.as_str()
            ),
            svg: svg::boxplot(&fault, &y_label, &boxes),
        });
    }
    if figures.is_empty() {
        return None;
    }
    Some(Section {
        heading: "Runs per fault".into(),
        paragraphs: vec![
            "The validation's retrainings on the holdout split (seeds 0..runs): the faulty config \
             and the known fix once per fault, each engine and budget's patched config pooled \
             over its repeats. 95% CI: the t interval of the mean, cut to the values the metric \
             can take (an accuracy's to [0, 1]). A cell whose search found no patch had no \
             validation: it is counted under \"no patch\" and adds no runs."
                .into(),
        ],
        tables: vec![Table {
            caption: "Runs per fault: mean and 95% CI of the mean".into(),
            ..string_table(&table)
        }],
        figures,
    })
}
