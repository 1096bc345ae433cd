//! The anytime view of a repair benchmark (what hyperparameter-optimisation users read first):
//! how far each engine has got, against how much of its budget it has spent.
//!
//! A cell's history is its best search score after each trial against the training time spent
//! so far. To put faults on one scale, a fault's progress is measured from its faulty config
//! (trial 0) towards the best search score any cell of that fault reached: 0 is no better than
//! the fault, 1 as good as the best anyone found. An engine's curve is the median over its cells
//! at each fraction of the budget.

use reprolab_core::manifest::Goal;
use reprolab_report::{Figure, svg};

use super::Row;

/// Points at which the curves are read: 0, 5 %, …, 100 % of the budget.
const GRID: usize = 20;

/// `[spent seconds, best search score so far]` after each trial that had a score, from the
/// trials' `(search score, training seconds)` in the order they ran (the faulty config first).
pub fn history(trials: impl IntoIterator<Item = (Option<f64>, f64)>, goal: Goal) -> Vec<[f64; 2]> {
    let mut spent = 0.0;
    let mut best: Option<f64> = None;
    let mut out = Vec::new();
    for (value, duration_s) in trials {
        spent += duration_s;
        if let Some(v) = value.filter(|v| v.is_finite()) {
            best = Some(best.map_or(v, |b| if better(v, b, goal) { v } else { b }));
        }
        if let Some(b) = best {
            out.push([spent, b]);
        }
    }
    out
}

fn better(a: f64, b: f64, goal: Goal) -> bool {
    match goal {
        Goal::Max => a > b,
        Goal::Min => a < b,
    }
}

/// The best score of `row`'s history at `spent` seconds (the last point at or before it).
fn at(row: &Row, spent: f64) -> Option<f64> {
    row.history
        .iter()
        .take_while(|p| p[0] <= spent + 1e-9)
        .last()
        .map(|p| p[1])
}

/// A cell's progress (0 = the faulty config, 1 = the best of its fault) at each grid point.
fn progress(row: &Row, best_of_fault: f64) -> Option<Vec<f64>> {
    let start = row.history.first()?[1];
    let span = best_of_fault - start;
    if !span.is_finite() || span.abs() < 1e-12 {
        return None; // nobody improved on this fault: it says nothing about speed
    }
    let end = row
        .budget_s
        .unwrap_or_else(|| row.history.last().map_or(0.0, |p| p[0]));
    Some(
        (0..=GRID)
            .map(|i| {
                let spent = end * i as f64 / GRID as f64;
                at(row, spent).map_or(0.0, |b| ((b - start) / span).clamp(0.0, 1.0))
            })
            .collect(),
    )
}

/// One figure per budget, one line per engine; `None` when no row has a history (rows written
/// before histories were recorded).
pub fn figures(rows: &[Row]) -> Option<Vec<Figure>> {
    if rows.iter().all(|r| r.history.is_empty()) {
        return None;
    }
    let mut best_of_fault: Vec<(&str, f64)> = Vec::new();
    for r in rows {
        let Some(last) = r.history.last() else {
            continue;
        };
        match best_of_fault.iter_mut().find(|(f, _)| *f == r.fault) {
            Some((_, b)) if better(last[1], *b, r.goal) => *b = last[1],
            Some(_) => {}
            None => best_of_fault.push((&r.fault, last[1])),
        }
    }
    let budgets = crate::agg::first_seen(rows, |r| r.budget.clone());
    let engines = crate::agg::first_seen(rows, |r| r.engine.clone());
    let figures = budgets
        .iter()
        .map(|budget| {
            let series: Vec<(String, Vec<(f64, f64)>)> = engines
                .iter()
                .map(|engine| {
                    let cells: Vec<Vec<f64>> = rows
                        .iter()
                        .filter(|r| &r.budget == budget && &r.engine == engine)
                        .filter_map(|r| {
                            let best = best_of_fault.iter().find(|(f, _)| *f == r.fault)?.1;
                            progress(r, best)
                        })
                        .collect();
                    let points = (0..=GRID)
                        .filter_map(|i| {
                            let at_i: Vec<f64> = cells.iter().map(|c| c[i]).collect();
                            let m = crate::agg::median(at_i)?;
                            Some((100.0 * i as f64 / GRID as f64, m))
                        })
                        .collect();
                    (format!("{engine} ({} cells)", cells.len()), points)
                })
                .collect();
            Figure {
                name: format!("anytime-{budget}"),
                caption: format!(
                    "Anytime at {budget}: median progress against the share of the budget spent \
                     (0 = the faulty config's search score, 1 = the best any engine reached on \
                     that fault; faults no engine improved are left out)"
                ),
                svg: svg::line_chart(
                    &format!("Best so far, {budget}"),
                    "% of budget spent",
                    "progress (median)",
                    &series,
                    false,
                ),
            }
        })
        .collect();
    Some(figures)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_keeps_the_best_so_far_against_time_spent() {
        let h = history(
            [
                (Some(0.5), 1.0),
                (None, 2.0),
                (Some(0.4), 1.0),
                (Some(0.9), 1.0),
            ],
            Goal::Max,
        );
        assert_eq!(h, vec![[1.0, 0.5], [3.0, 0.5], [4.0, 0.5], [5.0, 0.9]]);
        let h = history([(None, 1.0), (Some(3.0), 1.0), (Some(2.0), 1.0)], Goal::Min);
        assert_eq!(h, vec![[2.0, 3.0], [3.0, 2.0]]);
    }
}
