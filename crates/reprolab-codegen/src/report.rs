//! The run report (Markdown and self-contained HTML with SVG bar charts): overall pass@k and
//! partial pass rate, status counts, Deep-Bench's Tables 3–5 (by stage, task and data type), the
//! failure taxonomy in the layout of its appendix F (Table 6) with what an LLM classifier changed,
//! per-task rows and the harness's cost per sample.

use reprolab_report::{Cell, Figure, Report, Section, Table, svg};
use serde::{Deserialize, Serialize};

use crate::metrics::{Agreement, Classified, GroupRow, Summary};
use crate::outcome::Status;
use crate::taxonomy::{Category, Subtype};

/// What the run was, for the report's header (also `run.json` of the run directory).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RunInfo {
    pub tasks_file: String,
    /// `generations FILE` or `llm SPEC`.
    pub source: String,
    pub samples: Option<u32>,
    pub temperature: Option<f64>,
    /// `warm` or `fresh`.
    pub mode: String,
    pub workers: usize,
    pub memory_mb: u64,
    pub output_mb: u64,
    pub timeout: String,
    pub started_at: String,
    #[serde(default)]
    pub finished_at: String,
    #[serde(default)]
    pub environment: String,
    /// Samples the run set out to evaluate (known once the answers are loaded).
    #[serde(default)]
    pub expected_samples: Option<usize>,
}

impl RunInfo {
    /// Why the run's numbers are not final (it was interrupted or killed before every sample
    /// finished), or `None` when it finished. `results` is how many results are on disk.
    pub fn incomplete(&self, results: usize) -> Option<String> {
        let expected = self
            .expected_samples
            .map_or(String::new(), |n| format!(" of {n}"));
        if self.finished_at.is_empty() || self.expected_samples.is_some_and(|n| results < n) {
            Some(format!(
                "INCOMPLETE RUN: {results}{expected} samples finished (the run was interrupted); \
                 the numbers cover only those. Run the same `codegen run` with this --out to \
                 finish it."
            ))
        } else {
            None
        }
    }
}

fn pct(x: f64) -> String {
    format!("{:.1}", 100.0 * x)
}

fn opt_pct(x: Option<f64>) -> String {
    x.map_or("–".into(), pct)
}

fn group_table(caption: &str, first: &str, rows: &[GroupRow], ks: &[u64]) -> Table {
    let mut headers = vec![first.to_string(), "tasks".into(), "samples".into()];
    headers.extend(ks.iter().map(|k| format!("pass@{k} (%)")));
    headers.push("partial (%)".into());
    Table {
        caption: caption.into(),
        headers,
        rows: rows
            .iter()
            .map(|g| {
                let mut r: Vec<Cell> = vec![
                    g.title.clone().into(),
                    g.tasks.to_string().into(),
                    g.samples.to_string().into(),
                ];
                r.extend(g.pass_at.iter().map(|p| Cell::from(opt_pct(p.value))));
                r.push(opt_pct(g.partial).into());
                r
            })
            .collect(),
    }
}

fn group_figure(name: &str, title: &str, rows: &[GroupRow], ks: &[u64]) -> Option<Figure> {
    if !ks.contains(&1) {
        return None;
    }
    let bars: Vec<(String, f64)> = rows
        .iter()
        .filter(|g| g.tasks > 0)
        .map(|g| (g.title.clone(), 100.0 * g.pass_at[0].value.unwrap_or(0.0)))
        .collect();
    Some(Figure {
        name: name.into(),
        caption: format!("pass@1 (%) {title}"),
        svg: svg::bar_chart(&format!("pass@1 {title}"), "pass@1 (%)", &bars, Some(100.0)),
    })
}

/// Agreement with the expected labels: a sentence, per expected category, and a confusion table
/// (rows: expected category; columns: the category given).
fn agreement_parts(a: &Agreement) -> (String, Vec<Table>) {
    let mut text = format!(
        "{} failing samples carry an expected label; {} got its category ({}).",
        a.labelled,
        a.agreed,
        pct(a.rate)
    );
    if a.subtype_labelled > 0 {
        text.push_str(&format!(
            " Of the {} that name a subtype, {} got category and subtype.",
            a.subtype_labelled, a.subtype_agreed
        ));
    }
    if a.not_failing > 0 {
        text.push_str(&format!(
            " {} samples with an expected label did not fail and are not scored.",
            a.not_failing
        ));
    }
    let per = Table {
        caption: "Taxonomy agreement per expected category".into(),
        headers: vec![
            "expected category".into(),
            "labelled".into(),
            "agreed".into(),
            "agreement".into(),
        ],
        rows: a
            .per_label
            .iter()
            .map(|r| {
                vec![
                    Cell::from(r.category_title.clone()),
                    Cell::from(r.labelled.to_string()),
                    Cell::from(r.agreed.to_string()),
                    Cell::from(pct(r.agreed as f64 / r.labelled.max(1) as f64)),
                ]
            })
            .collect(),
    };
    let mut given: Vec<Category> = a.confusion.iter().map(|c| c.given).collect();
    given.sort();
    given.dedup();
    let mut headers = vec!["expected \\ given".to_string()];
    headers.extend(given.iter().map(|c| c.title().to_string()));
    let rows = a
        .per_label
        .iter()
        .map(|r| {
            let mut row = vec![Cell::from(r.category_title.clone())];
            row.extend(given.iter().map(|g| {
                let n = a
                    .confusion
                    .iter()
                    .find(|c| c.expected == r.category && c.given == *g)
                    .map_or(0, |c| c.count);
                Cell::from(if n == 0 {
                    "·".to_string()
                } else {
                    n.to_string()
                })
            }));
            row
        })
        .collect();
    let confusion = Table {
        caption: "Confusion of expected and given categories".into(),
        headers,
        rows,
    };
    (text, vec![per, confusion])
}

/// Rows of the behaviour evidence table at most.
const BEHAVIOUR_ROWS: usize = 200;

/// What the LLM classifier did, in a sentence.
fn classifier_text(c: &Classified) -> String {
    format!(
        "An LLM classifier ({}) was asked about {} of these failures with the task's prompt, the code and \
         the evidence: {} answers named a label of the taxonomy, which the distribution above uses; {} of \
         them differ from the rules' label (below). {} answers named no valid label and {} calls failed; \
         those failures keep the rules' label.",
        c.models.join(", "),
        c.asked,
        c.labelled,
        c.changed,
        c.unparsed,
        c.failed
    )
}

fn changes_table(c: &Classified) -> Table {
    let name = |(cat, sub): (Category, Subtype)| format!("{} / {}", cat.title(), sub.title());
    Table {
        caption: "Labels the LLM classifier changed".into(),
        headers: vec![
            "rules' label".into(),
            "classifier's label".into(),
            "failures".into(),
        ],
        rows: c
            .changes
            .iter()
            .map(|x| {
                vec![
                    Cell::from(name(x.rules)),
                    Cell::from(name(x.classifier)),
                    Cell::from(x.count.to_string()),
                ]
            })
            .collect(),
    }
}

/// Build the report of a run.
/// The report of a run; `incomplete` (see [`RunInfo::incomplete`]) heads it when set.
pub fn build(title: &str, info: &RunInfo, s: &Summary, incomplete: Option<&str>) -> Report {
    let mut sections = Vec::new();

    // Overview
    let mut headers = vec!["tasks".to_string(), "samples".into()];
    headers.extend(s.ks.iter().map(|k| format!("pass@{k} (%)")));
    headers.push("partial pass rate (%)".into());
    let mut row: Vec<Cell> = vec![s.tasks.to_string().into(), s.samples.to_string().into()];
    row.extend(s.pass_at.iter().map(|p| Cell::from(pct(p.value))));
    row.push(pct(s.partial).into());
    let mut paragraphs: Vec<String> = incomplete.map(str::to_string).into_iter().collect();
    paragraphs.push(format!(
        "Tasks: {}. Answers: {}. Samples per task: {}. Temperature: {}. Runner: {} ({} in parallel), \
         limits: {}, {} MiB of memory, {} MiB of output. Started {}{}.",
        info.tasks_file,
        info.source,
        info.samples
            .map_or("all in the file".into(), |n| n.to_string()),
        info.temperature.map_or("–".into(), |t| t.to_string()),
        info.mode,
        info.workers,
        info.timeout,
        info.memory_mb,
        info.output_mb,
        info.started_at,
        if info.finished_at.is_empty() {
            String::new()
        } else {
            format!(", finished {}", info.finished_at)
        },
    ));
    paragraphs.push(
        "pass@k is the unbiased estimator 1 − C(n−c, k)/C(n, k) averaged over tasks, reported for the k that \
         every task reaches (n ≥ k). The partial pass rate is the share of a task's tests a sample passes, \
         averaged over samples, then tasks. Samples with infrastructure errors are not counted in n."
            .into(),
    );
    if !s.excluded.is_empty() {
        paragraphs.push(format!(
            "{} task(s) are left out of every number because their reference does not pass or no sample \
             could be run: {}.",
            s.excluded.len(),
            s.excluded
                .iter()
                .map(|e| format!("{} ({})", e.task_id, e.reason))
                .collect::<Vec<_>>()
                .join("; ")
        ));
    }
    let status_table = Table {
        caption: "Samples by status (timeouts, resource limits and infrastructure errors apart from failures)".into(),
        headers: Status::ALL.iter().map(|st| st.name().to_string()).collect(),
        rows: vec![Status::ALL
            .iter()
            .map(|st| Cell::from(s.statuses.get(st).copied().unwrap_or(0).to_string()))
            .collect()],
    };
    let status_bars: Vec<(String, f64)> = Status::ALL
        .iter()
        .map(|st| {
            (
                st.name().to_string(),
                s.statuses.get(st).copied().unwrap_or(0) as f64,
            )
        })
        .collect();
    sections.push(Section {
        heading: "Overall".into(),
        paragraphs,
        tables: vec![
            Table {
                caption: "Overall (Deep-Bench Table 2)".into(),
                headers,
                rows: vec![row],
            },
            status_table,
        ],
        figures: vec![Figure {
            name: "statuses".into(),
            caption: "Samples by status".into(),
            svg: svg::bar_chart("Samples by status", "samples", &status_bars, None),
        }],
    });

    // Tables 3–5
    for (heading, caption, first, rows, name, title) in [
        (
            "By stage",
            "pass@k by pipeline stage (Deep-Bench Table 3)",
            "stage",
            &s.by_stage,
            "by_stage",
            "by stage",
        ),
        (
            "By task",
            "pass@k by ML task (Deep-Bench Table 4)",
            "task",
            &s.by_task,
            "by_task",
            "by task",
        ),
        (
            "By data type",
            "pass@k by input data type (Deep-Bench Table 5)",
            "data",
            &s.by_data,
            "by_data",
            "by data type",
        ),
    ] {
        sections.push(Section {
            heading: heading.into(),
            paragraphs: vec![],
            tables: vec![group_table(caption, first, rows, &s.ks)],
            figures: group_figure(name, title, rows, &s.ks).into_iter().collect(),
        });
    }

    // Taxonomy
    let mut tax_rows = Vec::new();
    let mut last_cat = None;
    for t in &s.taxonomy {
        let first = last_cat != Some(t.category);
        last_cat = Some(t.category);
        tax_rows.push(vec![
            Cell::from(if first {
                t.category_title.clone()
            } else {
                String::new()
            }),
            t.subtype_title.clone().into(),
            t.count.to_string().into(),
            Cell::from(if first {
                t.category_total.to_string()
            } else {
                String::new()
            }),
        ]);
    }
    let mut cats: Vec<(String, f64)> = Vec::new();
    for t in &s.taxonomy {
        if cats.last().is_none_or(|(c, _)| *c != t.category_title) {
            cats.push((t.category_title.clone(), t.category_total as f64));
        }
    }
    cats.sort_by(|a, b| b.1.total_cmp(&a.1));
    let rules_rows: Vec<Vec<Cell>> = {
        let mut r: Vec<(&String, &u64)> = s.rules.iter().collect();
        r.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        r.into_iter()
            .map(|(rule, n)| vec![Cell::from(rule.clone()), Cell::from(n.to_string())])
            .collect()
    };
    let mut paragraphs = vec![format!(
        "{} failing samples labelled with Deep-Bench's categories and DL-specific subtypes (appendix E) \
         from their evidence: status, exception type, message and traceback. The rules that fired are \
         listed below; `fallback` counts failures no specific rule recognised.",
        s.failures
    )];
    let mut tables = vec![
        Table {
            caption: "Distribution of failures (Deep-Bench appendix F, Table 6)".into(),
            headers: vec![
                "category".into(),
                "DL-related subtype".into(),
                "#".into(),
                "category total".into(),
            ],
            rows: tax_rows,
        },
        Table {
            caption: "Rules that labelled the failures".into(),
            headers: vec!["rule".into(), "failures".into()],
            rows: rules_rows,
        },
    ];
    if let Some(a) = &s.agreement {
        let (text, t) = agreement_parts(a);
        paragraphs.push(text);
        tables.extend(t);
    }
    if !s.behaviour.is_empty() {
        paragraphs.push(format!(
            "{} failures were labelled by what the code did: on the failing test's calls the \
             generated and the reference function ran on the same arguments and were compared \
             (exception and where it was raised, output kind, shape, dtype, values, arguments \
             the generation never reads, branches the reference takes). Their evidence is below{}.",
            s.behaviour.len(),
            if s.behaviour.len() > BEHAVIOUR_ROWS {
                format!(" (the first {BEHAVIOUR_ROWS})")
            } else {
                String::new()
            }
        ));
        let with_expected = s.behaviour.iter().any(|b| b.expected.is_some());
        let mut headers = vec![
            "task".to_string(),
            "sample".into(),
            "label".into(),
            "rule".into(),
        ];
        if with_expected {
            headers.push("expected".into());
        }
        headers.push("evidence".into());
        tables.push(Table {
            caption: "Behaviour evidence".into(),
            headers,
            rows: s
                .behaviour
                .iter()
                .take(BEHAVIOUR_ROWS)
                .map(|b| {
                    let mut row = vec![
                        Cell::from(b.task_id.clone()),
                        Cell::from(b.sample.to_string()),
                        Cell::from(format!("{} / {}", b.category.title(), b.subtype.title())),
                        Cell::from(b.rule.clone()),
                    ];
                    if with_expected {
                        row.push(Cell::from(
                            b.expected.map_or("–", |c| c.title()).to_string(),
                        ));
                    }
                    row.push(Cell::from(b.evidence.clone()));
                    row
                })
                .collect(),
        });
    }
    if let Some(c) = &s.classifier {
        paragraphs.push(classifier_text(c));
        if !c.changes.is_empty() {
            tables.push(changes_table(c));
        }
    }
    sections.push(Section {
        heading: "Failure taxonomy".into(),
        paragraphs,
        tables,
        figures: (!cats.is_empty())
            .then(|| Figure {
                name: "taxonomy".into(),
                caption: "Failures by category".into(),
                svg: svg::bar_chart("Failures by category", "failures", &cats, None),
            })
            .into_iter()
            .collect(),
    });

    // Per task
    let mut headers = vec!["task".to_string(), "stage".into(), "n".into(), "c".into()];
    headers.extend(s.ks.iter().map(|k| format!("pass@{k} (%)")));
    headers.push("partial (%)".into());
    headers.push("statuses".into());
    let rows = s
        .per_task
        .iter()
        .map(|t| {
            let mut r: Vec<Cell> = vec![
                t.task_id.clone().into(),
                crate::task::LabelValue::name(t.labels.stage)
                    .to_string()
                    .into(),
                t.n.to_string().into(),
                t.c.to_string().into(),
            ];
            r.extend(s.ks.iter().map(|k| {
                Cell::from(opt_pct(
                    t.pass_at.iter().find(|p| p.k == *k).map(|p| p.value),
                ))
            }));
            r.push(pct(t.partial).into());
            r.push(
                t.statuses
                    .iter()
                    .map(|(st, n)| format!("{} {n}", st.name()))
                    .collect::<Vec<_>>()
                    .join(", ")
                    .into(),
            );
            r
        })
        .collect();
    sections.push(Section {
        heading: "Per task".into(),
        paragraphs: vec![],
        tables: vec![Table {
            caption: String::new(),
            headers,
            rows,
        }],
        figures: vec![],
    });

    // Harness cost
    let t = &s.timing;
    sections.push(Section {
        heading: "Harness".into(),
        paragraphs: vec![format!(
            "{} samples were run in this invocation (the rest came from the store or needed no run). Per sample: \
             {:.3} s wall on average, of which the tests' own time is {:.3} s; harness overhead (wall minus \
             the tests' time) {:.3} s on average, {:.3} s median. Environment {}.",
            t.samples_run, t.mean_wall_s, t.mean_tests_s, t.mean_overhead_s, t.median_overhead_s, info.environment
        )],
        tables: vec![],
        figures: vec![],
    });

    Report {
        title: title.into(),
        sections,
    }
}

/// The summary's table as `codegen run` and `codegen report` print it: header (tasks,
/// samples, pass@k, partial) and one row.
pub fn summary_rows(s: &Summary) -> Vec<Vec<String>> {
    let mut head = vec!["tasks".to_string(), "samples".into()];
    head.extend(s.ks.iter().map(|k| format!("pass@{k}")));
    head.push("partial".into());
    let mut row = vec![s.tasks.to_string(), s.samples.to_string()];
    row.extend(s.pass_at.iter().map(|p| format!("{:.1}%", 100.0 * p.value)));
    row.push(format!("{:.1}%", 100.0 * s.partial));
    vec![head, row]
}

/// The lines printed below [`summary_rows`]' table: statuses, tasks left out, failures by
/// category (most first), the taxonomy's agreement and the classifier's work, each when there
/// is something to say.
pub fn summary_notes(s: &Summary) -> Vec<String> {
    let mut notes = Vec::new();
    let statuses: Vec<String> = Status::ALL
        .iter()
        .filter_map(|st| {
            s.statuses
                .get(st)
                .filter(|n| **n > 0)
                .map(|n| format!("{} {n}", st.name()))
        })
        .collect();
    notes.push(format!("statuses: {}", statuses.join(", ")));
    if !s.excluded.is_empty() {
        notes.push(format!(
            "left out: {}",
            s.excluded
                .iter()
                .map(|e| e.task_id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if s.failures > 0 {
        let mut cats: Vec<(&str, u64)> = Vec::new();
        for t in &s.taxonomy {
            if cats.last().is_none_or(|(c, _)| *c != t.category_title) {
                cats.push((&t.category_title, t.category_total));
            }
        }
        cats.sort_by_key(|c| std::cmp::Reverse(c.1));
        let text: Vec<String> = cats.iter().map(|(c, n)| format!("{c} {n}")).collect();
        notes.push(format!("failures: {}", text.join(", ")));
    }
    if let Some(a) = &s.agreement {
        notes.push(format!(
            "taxonomy agreement: {}/{} labelled failures ({:.1}%)",
            a.agreed,
            a.labelled,
            100.0 * a.rate
        ));
    }
    if let Some(c) = &s.classifier {
        let Classified {
            asked,
            labelled,
            changed,
            unparsed,
            failed,
            ..
        } = c;
        let models = c.models.join(", ");
        notes.push(format!(
            "classifier {models}: asked about {asked} failures, {labelled} labelled ({changed} \
             changed), {unparsed} without a valid label, {failed} failed"
        ));
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::{Role, SampleResult};
    use crate::testing::result;

    fn sample(i: u32, status: Status) -> SampleResult {
        SampleResult {
            role: Role::Sample,
            ..result(i, status, 1.0)
        }
    }

    #[test]
    fn the_printed_summary_has_pass_at_k_statuses_and_what_was_left_out() {
        let reference = SampleResult {
            role: Role::Reference,
            ..result(0, Status::Pass, 1.0)
        };
        let samples = [sample(0, Status::Pass), sample(1, Status::Fail)];
        let s = crate::summarize(&samples, &[reference]);
        let rows = summary_rows(&s);
        assert_eq!(rows[0][..2], ["tasks", "samples"]);
        assert_eq!(rows[0].last().unwrap(), "partial");
        assert_eq!(rows[0].len(), s.ks.len() + 3);
        assert_eq!(rows[1][..2], ["1", "2"]);
        assert_eq!(rows[1][2], "50.0%", "pass@1 of one pass in two");
        let notes = summary_notes(&s);
        assert_eq!(notes[0], "statuses: pass 1, fail 1");
        assert!(
            !notes.iter().any(|n| n.starts_with("left out")),
            "{notes:?}"
        );

        // A task whose reference fails is left out.
        let failing = SampleResult {
            role: Role::Reference,
            ..result(0, Status::Fail, 1.0)
        };
        let s = crate::summarize(&samples, &[failing]);
        let notes = summary_notes(&s);
        assert_eq!(notes[0], "statuses: ");
        assert!(notes.contains(&"left out: t".to_string()), "{notes:?}");
    }
}
