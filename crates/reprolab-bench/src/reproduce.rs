//! `bench reproduce`: one row per bug, and the reports. Two kinds of run:
//! * **verify** (no model): each bundled bug's reference reproduction must be confirmed and its
//!   near-miss rejected, and the symptom class read from the report must be the annotated one;
//! * **reproduce** (a model): the generate-run-refine loop per bug; the reproduction rate by
//!   symptom, framework and root cause, with attempts, calls, tokens, cost and time per bug.

use reprolab_report::{Cell, Report, Table};
pub use reprolab_reproduce::bench::{Check, ReproduceRow, VerifyRow};

use crate::agg::{fmt2, mean, pct, section, string_table};

fn mark(ok: Option<bool>) -> Cell {
    match ok {
        Some(true) => Cell::from("yes"),
        Some(false) => Cell::marked("NO", true),
        None => Cell::from("-"),
    }
}

/// The verify report: confirmation and rejection rates, symptom extraction, per bug.
pub fn verify_report(rows: &[VerifyRow]) -> Report {
    let refs: Vec<&Check> = rows.iter().filter_map(|r| r.reference.as_ref()).collect();
    let misses: Vec<&Check> = rows.iter().filter_map(|r| r.near_miss.as_ref()).collect();
    let annotated: Vec<&VerifyRow> = rows
        .iter()
        .filter(|r| r.symptom_annotated.is_some())
        .collect();
    let symptom_ok = annotated
        .iter()
        .filter(|r| {
            symptom_matches(
                r.symptom_annotated.as_deref().unwrap_or(""),
                &r.symptom_extracted,
            )
        })
        .count();
    let summary = string_table(&[
        vec!["measure".into(), "value".into()],
        vec![
            "reference reproductions confirmed".into(),
            pct(refs.iter().filter(|c| c.reproduced).count(), refs.len()),
        ],
        vec![
            "near-misses rejected".into(),
            pct(
                misses.iter().filter(|c| !c.reproduced).count(),
                misses.len(),
            ),
        ],
        vec![
            "symptom class read from the report as annotated".into(),
            pct(symptom_ok, annotated.len()),
        ],
        vec![
            "seconds per bug (mean)".into(),
            fmt2(mean(&rows.iter().map(|r| r.time_s).collect::<Vec<_>>())),
        ],
    ]);
    let per_bug = Table {
        caption: "Per bug: the reference must reproduce, the near-miss must not.".into(),
        headers: [
            "bug",
            "symptom (annotated / read)",
            "reference",
            "near-miss",
            "near-miss rejected because",
        ]
        .map(String::from)
        .to_vec(),
        rows: rows
            .iter()
            .map(|r| {
                vec![
                    Cell::from(r.id.clone()),
                    Cell::from(format!(
                        "{} / {}",
                        r.symptom_annotated.as_deref().unwrap_or("-"),
                        r.symptom_extracted
                    )),
                    mark(r.reference.as_ref().map(|c| c.reproduced)),
                    mark(r.near_miss.as_ref().map(|c| !c.reproduced)),
                    Cell::from(
                        r.near_miss
                            .as_ref()
                            .map(|c| c.reason.clone())
                            .unwrap_or_default(),
                    ),
                ]
            })
            .collect(),
    };
    Report {
        title: "Bug reproduction: verifying the bundled references and near-misses".into(),
        sections: vec![
            section(
                "Summary",
                vec![format!(
                    "{} bugs. Each script ran in the sandbox once per seed and was judged by the \
                     verdict rules of docs/reproduce.md; `NO` marks a failure.",
                    rows.len()
                )],
                vec![summary],
            ),
            section("Per bug", vec![], vec![per_bug]),
        ],
    }
}

/// Annotations use `code-inspection` where the rules see a value or an unchanged quantity.
fn symptom_matches(annotated: &str, extracted: &str) -> bool {
    annotated == extracted
        || (annotated == "code-inspection"
            && ["value", "no-change", "unknown"].contains(&extracted))
}

/// A rate table grouped by `key`.
fn rate_by(rows: &[ReproduceRow], caption: &str, key: impl Fn(&ReproduceRow) -> String) -> Table {
    let groups = crate::agg::first_seen(rows, &key);
    let mut table = vec![vec![caption.to_string(), "reproduced".into()]];
    for g in groups {
        let members: Vec<&ReproduceRow> = rows.iter().filter(|r| key(r) == g).collect();
        table.push(vec![
            g,
            pct(
                members.iter().filter(|r| r.reproduced).count(),
                members.len(),
            ),
        ]);
    }
    table.push(vec![
        "all".into(),
        pct(rows.iter().filter(|r| r.reproduced).count(), rows.len()),
    ]);
    string_table(&table)
}

/// The reproduce report of one model.
pub fn reproduce_report(rows: &[ReproduceRow]) -> Report {
    let model = rows.first().map(|r| r.model.clone()).unwrap_or_default();
    let per =
        |f: &dyn Fn(&ReproduceRow) -> f64| fmt2(mean(&rows.iter().map(f).collect::<Vec<_>>()));
    let costs: Vec<f64> = rows.iter().filter_map(|r| r.cost_usd).collect();
    let cost = sum_or_dash(&costs, rows.len());
    let effort = string_table(&[
        vec!["per bug (mean)".into(), "value".into()],
        vec!["attempts".into(), per(&|r| r.attempts as f64)],
        vec!["LLM calls".into(), per(&|r| r.calls as f64)],
        vec!["prompt tokens".into(), per(&|r| r.prompt_tokens as f64)],
        vec![
            "completion tokens".into(),
            per(&|r| r.completion_tokens as f64),
        ],
        vec!["cost (USD)".into(), cost],
        vec!["seconds".into(), per(&|r| r.time_s)],
    ]);
    let per_bug = Table {
        caption: "Per bug.".into(),
        headers: ["bug", "symptom", "reproduced", "attempts", "seconds", "why"]
            .map(String::from)
            .to_vec(),
        rows: rows
            .iter()
            .map(|r| {
                vec![
                    Cell::from(r.id.clone()),
                    Cell::from(r.symptom.clone()),
                    Cell::marked(if r.reproduced { "yes" } else { "no" }, r.reproduced),
                    Cell::from(r.attempts.to_string()),
                    Cell::from(format!("{:.0}", r.time_s)),
                    Cell::from(r.reason.clone()),
                ]
            })
            .collect(),
    };
    Report {
        title: format!("Bug reproduction with {model}"),
        sections: vec![
            section(
                "Reproduction rate",
                vec![
                    "A bug counts as reproduced only when a generated script, run in the sandbox \
                     with every seed, shows the reported symptom by the verdict rules \
                     (docs/reproduce.md); no LLM judges."
                        .into(),
                ],
                vec![
                    rate_by(rows, "symptom", |r| r.symptom.clone()),
                    rate_by(rows, "framework", |r| r.framework.clone()),
                    rate_by(rows, "root cause", |r| r.root_cause.clone()),
                ],
            ),
            section("Effort", vec![], vec![effort]),
            section("Per bug", vec![], vec![per_bug]),
        ],
    }
}

fn sum_or_dash(costs: &[f64], n: usize) -> String {
    if costs.is_empty() || n == 0 {
        "- (price unknown)".into()
    } else {
        format!("{:.4}", costs.iter().sum::<f64>() / n as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(reproduced: bool) -> Option<Check> {
        Some(Check {
            reproduced,
            showing: if reproduced { 5 } else { 0 },
            runs: 5,
            reason: "r".into(),
        })
    }

    #[test]
    fn verify_rates_count_confirmations_and_rejections() {
        let rows = vec![
            VerifyRow {
                id: "a".into(),
                symptom_annotated: Some("error".into()),
                symptom_extracted: "error".into(),
                reference: check(true),
                near_miss: check(false),
                time_s: 2.0,
            },
            VerifyRow {
                id: "b".into(),
                symptom_annotated: Some("code-inspection".into()),
                symptom_extracted: "value".into(),
                reference: check(false),
                near_miss: check(true),
                time_s: 4.0,
            },
        ];
        let md = verify_report(&rows).to_markdown();
        assert!(
            md.contains("reference reproductions confirmed | 1/2 (50.0%)"),
            "{md}"
        );
        assert!(md.contains("near-misses rejected | 1/2 (50.0%)"));
        assert!(md.contains("as annotated | 2/2 (100.0%)"));
        assert!(md.contains("**NO**"));
    }

    #[test]
    fn reproduce_rates_group_by_symptom_framework_and_cause() {
        let row = |id: &str, symptom: &str, ok: bool| ReproduceRow {
            id: id.into(),
            model: "m".into(),
            framework: "pytorch".into(),
            symptom: symptom.into(),
            root_cause: "shape".into(),
            reproduced: ok,
            attempts: 2,
            calls: 2,
            prompt_tokens: 100,
            completion_tokens: 50,
            cost_usd: None,
            time_s: 10.0,
            reason: "x".into(),
        };
        let rows = vec![
            row("a", "error", true),
            row("b", "error", false),
            row("c", "nan", false),
        ];
        let md = reproduce_report(&rows).to_markdown();
        assert!(md.contains("| error | 1/2 (50.0%) |"), "{md}");
        assert!(md.contains("| nan | 0/1 (0.0%) |"));
        assert!(md.contains("| all | 1/3 (33.3%) |"));
        assert!(md.contains("price unknown"));
    }
}
