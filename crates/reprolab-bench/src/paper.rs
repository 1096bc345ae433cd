//! `bench paper`: one row per bundled paper. Its gold fingerprint is verified against the
//! reference implementation (every criterion should pass: a failure is a false alarm) and the
//! mutated one (each listed violation should fail: caught or missed, and by which checker);
//! the rubric is graded from each verification; with a model, the fingerprint the model extracts
//! is scored for recall against the gold criteria.

use std::collections::BTreeMap;

use reprolab_paper::benchmark::BundledPaper;
use reprolab_paper::rubric::scores_from_verification;
use reprolab_paper::{Outcome, Verification};
use reprolab_report::{Cell, Report, Table};
use serde::{Deserialize, Serialize};

use crate::agg::{fmt2, pct, section, string_table};

/// One implementation's verification, summed up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Side {
    pub pass: usize,
    pub fail: usize,
    pub undecided: usize,
    /// Criteria decided per checker (static, execution, judge).
    pub decided_by: BTreeMap<String, usize>,
    /// PaperBench's score of the rubric graded from the verification (unscored leaves 0).
    pub rubric_score: f64,
    /// The score over the leaves the verification scored.
    pub rubric_over_scored: Option<f64>,
    pub rubric_unscored_leaves: usize,
}

/// A known violation of the mutated implementation and whether the verifier caught it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Caught {
    pub criterion: String,
    pub kind: String,
    /// The checker the benchmark says can see it.
    pub detectable_by: String,
    pub caught: bool,
    pub caught_by: Option<String>,
}

/// The model's fingerprint against the gold one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recall {
    pub gold: usize,
    pub recalled: usize,
    pub extracted: usize,
    pub dropped: usize,
}

/// The paper implemented by the model (`paper implement` with the gold fingerprint).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Implemented {
    pub rounds: usize,
    /// The last round's smoke run passed and no criterion failed.
    pub passed: bool,
    pub smoke_ok: bool,
    pub pass: usize,
    pub fail: usize,
    pub undecided: usize,
    /// The rubric graded from the last round's verification.
    pub rubric_score: f64,
    pub rubric_over_scored: Option<f64>,
    pub stopped: String,
    pub calls: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub cost_usd: f64,
    pub time_s: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PaperRow {
    pub paper: String,
    /// The judge / extraction model, if any.
    pub model: Option<String>,
    pub criteria: usize,
    pub reference: Side,
    pub mutated: Side,
    pub violations: Vec<Caught>,
    /// Criteria that fail on the reference implementation.
    pub false_alarms_reference: Vec<String>,
    /// Criteria without a violation that fail on the mutated implementation.
    pub false_alarms_mutated: Vec<String>,
    pub recall: Option<Recall>,
    #[serde(default)]
    pub implementation: Option<Implemented>,
    pub llm_calls: u64,
    pub time_s: f64,
}

fn side(paper: &BundledPaper, v: &Verification) -> Side {
    let grade = paper
        .rubric
        .grade(&scores_from_verification(&paper.rubric, v));
    Side {
        pass: v.count(Outcome::Pass),
        fail: v.count(Outcome::Fail),
        undecided: v.count(Outcome::Undecided),
        decided_by: v
            .decided_by()
            .into_iter()
            .map(|(c, n)| (c.as_str().to_string(), n))
            .collect(),
        rubric_score: grade.score,
        rubric_over_scored: grade.score_over_valid,
        rubric_unscored_leaves: grade.invalid_leaves,
    }
}

fn failing(v: &Verification) -> impl Iterator<Item = &str> {
    v.verdicts
        .iter()
        .filter(|d| d.outcome == Outcome::Fail)
        .map(|d| d.id.as_str())
}

/// The row of one paper from the verifications of its two implementations.
pub fn row(paper: &BundledPaper, reference: &Verification, mutated: &Verification) -> PaperRow {
    let violations = paper
        .violations
        .iter()
        .map(|v| {
            let verdict = mutated.get(&v.criterion);
            let caught = verdict.is_some_and(|d| d.outcome == Outcome::Fail);
            Caught {
                criterion: v.criterion.clone(),
                kind: v.kind.clone(),
                detectable_by: v.detectable_by.clone(),
                caught,
                caught_by: verdict
                    .filter(|_| caught)
                    .and_then(|d| d.decided_by)
                    .map(|c| c.as_str().to_string()),
            }
        })
        .collect();
    PaperRow {
        paper: paper.name.clone(),
        model: None,
        criteria: paper.fingerprint.criteria.len(),
        reference: side(paper, reference),
        mutated: side(paper, mutated),
        violations,
        false_alarms_reference: failing(reference).map(str::to_string).collect(),
        false_alarms_mutated: failing(mutated)
            .filter(|id| paper.violation(id).is_none())
            .map(str::to_string)
            .collect(),
        recall: None,
        implementation: None,
        llm_calls: 0,
        time_s: 0.0,
    }
}

impl PaperRow {
    /// One progress line.
    pub fn line(&self) -> String {
        let caught = self.violations.iter().filter(|v| v.caught).count();
        format!(
            "{}: {caught}/{} violations caught, {} false alarms",
            self.paper,
            self.violations.len(),
            self.false_alarms_reference.len() + self.false_alarms_mutated.len()
        )
    }

    fn machine_detectable(&self) -> impl Iterator<Item = &Caught> {
        self.violations
            .iter()
            .filter(|v| v.detectable_by != "judge")
    }
}

/// The targets: every machine-detectable violation caught, no false alarm.
pub fn targets_met(rows: &[PaperRow]) -> bool {
    rows.iter().all(|r| {
        r.machine_detectable().all(|v| v.caught)
            && r.false_alarms_reference.is_empty()
            && r.false_alarms_mutated.is_empty()
    })
}

pub fn report(rows: &[PaperRow]) -> Report {
    let all: Vec<&Caught> = rows.iter().flat_map(|r| &r.violations).collect();
    let machine: Vec<&Caught> = rows.iter().flat_map(|r| r.machine_detectable()).collect();
    let judge_only: Vec<&Caught> = all
        .iter()
        .copied()
        .filter(|v| v.detectable_by == "judge")
        .collect();
    let count = |v: &[&Caught]| v.iter().filter(|c| c.caught).count();
    let false_ref: usize = rows.iter().map(|r| r.false_alarms_reference.len()).sum();
    let false_mut: usize = rows.iter().map(|r| r.false_alarms_mutated.len()).sum();
    let criteria: usize = rows.iter().map(|r| r.criteria).sum();
    let mut by_checker: BTreeMap<String, usize> = BTreeMap::new();
    for r in rows {
        for (c, n) in r.reference.decided_by.iter().chain(&r.mutated.decided_by) {
            *by_checker.entry(c.clone()).or_default() += n;
        }
    }
    let undecided: usize = rows
        .iter()
        .map(|r| r.reference.undecided + r.mutated.undecided)
        .sum();
    let mut summary = vec![
        vec!["measure".into(), "value".into()],
        vec![
            "violations a static check or a probe can see, caught".into(),
            pct(count(&machine), machine.len()),
        ],
        vec![
            "violations only a judge can see, caught".into(),
            pct(count(&judge_only), judge_only.len()),
        ],
        vec![
            "false alarms on reference implementations".into(),
            format!("{false_ref} of {criteria} criteria"),
        ],
        vec![
            "false alarms on mutated implementations (criteria not violated)".into(),
            false_mut.to_string(),
        ],
    ];
    for (c, n) in &by_checker {
        summary.push(vec![
            format!("criterion verdicts decided by {c} (both implementations)"),
            n.to_string(),
        ]);
    }
    summary.push(vec![
        "criterion verdicts left undecided (both implementations)".into(),
        undecided.to_string(),
    ]);
    let recalls: Vec<&Recall> = rows.iter().filter_map(|r| r.recall.as_ref()).collect();
    if !recalls.is_empty() {
        summary.push(vec![
            "gold criteria recalled by the extracted fingerprints".into(),
            pct(
                recalls.iter().map(|r| r.recalled).sum(),
                recalls.iter().map(|r| r.gold).sum(),
            ),
        ]);
    }
    let per_paper = Table {
        caption: "Per paper: verdicts on the reference and the mutated implementation (pass / \
                  fail / undecided), the rubric graded from each verification (PaperBench's \
                  score, unscored leaves counting 0; in brackets the score over the scored leaves), the violations caught."
            .into(),
        headers: [
            "paper",
            "criteria",
            "reference p/f/u",
            "mutated p/f/u",
            "rubric reference",
            "rubric mutated",
            "violations caught",
            "false alarms",
        ]
        .map(String::from)
        .to_vec(),
        rows: rows
            .iter()
            .map(|r| {
                let alarms = r.false_alarms_reference.len() + r.false_alarms_mutated.len();
                vec![
                    Cell::from(r.paper.clone()),
                    Cell::from(r.criteria.to_string()),
                    Cell::from(pfu(&r.reference)),
                    Cell::from(pfu(&r.mutated)),
                    Cell::from(rubric(&r.reference)),
                    Cell::from(rubric(&r.mutated)),
                    Cell::from(format!(
                        "{}/{}",
                        r.violations.iter().filter(|v| v.caught).count(),
                        r.violations.len()
                    )),
                    Cell::marked(alarms.to_string(), alarms > 0),
                ]
            })
            .collect(),
    };
    let per_violation = Table {
        caption: "Each known violation: the checker meant to see it and the one that caught it."
            .into(),
        headers: ["paper", "criterion", "kind", "detectable by", "caught by"]
            .map(String::from)
            .to_vec(),
        rows: rows
            .iter()
            .flat_map(|r| {
                r.violations.iter().map(|v| {
                    vec![
                        Cell::from(r.paper.clone()),
                        Cell::from(v.criterion.clone()),
                        Cell::from(v.kind.clone()),
                        Cell::from(v.detectable_by.clone()),
                        match &v.caught_by {
                            Some(c) => Cell::from(c.clone()),
                            None => Cell::marked("missed", v.detectable_by != "judge"),
                        },
                    ]
                })
            })
            .collect(),
    };
    let mut sections = vec![
        section(
            "Summary",
            vec![format!(
                "{} papers, {criteria} gold criteria. Each criterion is decided by the \
                     strongest checker that applies: static (constants and calls read with ast), \
                     execution (a probe run in the sandbox), then the LLM judge when one is given.",
                rows.len()
            )],
            vec![string_table(&summary)],
        ),
        section("Per paper", vec![], vec![per_paper]),
        section("Violations", vec![], vec![per_violation]),
    ];
    if let Some(s) = implementations(rows) {
        sections.push(s);
    }
    Report {
        title: "Paper reproduction: the verifier on the bundled papers".into(),
        sections,
    }
}

/// The model's implementations, when the run had a model.
fn implementations(rows: &[PaperRow]) -> Option<reprolab_report::Section> {
    let done: Vec<(&PaperRow, &Implemented)> = rows
        .iter()
        .filter_map(|r| r.implementation.as_ref().map(|i| (r, i)))
        .collect();
    if done.is_empty() {
        return None;
    }
    let model = done[0].0.model.clone().unwrap_or_default();
    let table = Table {
        caption: format!(
            "Each paper implemented by {model} from the gold fingerprint (paper implement): \
             rounds, the last round's smoke run and verdicts (pass/fail/undecided), the rubric \
             graded from its verification, the model's calls, tokens and cost."
        ),
        headers: [
            "paper",
            "rounds",
            "passed",
            "smoke",
            "p/f/u",
            "rubric",
            "calls",
            "tokens",
            "cost (USD)",
            "minutes",
        ]
        .map(String::from)
        .to_vec(),
        rows: done
            .iter()
            .map(|(r, i)| {
                vec![
                    Cell::from(r.paper.clone()),
                    Cell::from(i.rounds.to_string()),
                    Cell::from(if i.passed { "yes" } else { "no" }),
                    Cell::from(if i.smoke_ok { "ok" } else { "fails" }),
                    Cell::from(format!("{}/{}/{}", i.pass, i.fail, i.undecided)),
                    Cell::from(fmt2(Some(i.rubric_score))),
                    Cell::from(i.calls.to_string()),
                    Cell::from((i.prompt_tokens + i.completion_tokens).to_string()),
                    Cell::from(format!("{:.4}", i.cost_usd)),
                    Cell::from(fmt2(Some(i.time_s / 60.0))),
                ]
            })
            .collect(),
    };
    let passed = done.iter().filter(|(_, i)| i.passed).count();
    Some(section(
        "Implementations",
        vec![format!(
            "{} of {} implementations passed (the smoke run works and no criterion fails).",
            passed,
            done.len()
        )],
        vec![table],
    ))
}

/// PaperBench's score, and the score over the scored leaves when some were not.
fn rubric(s: &Side) -> String {
    match (s.rubric_unscored_leaves, s.rubric_over_scored) {
        (0, _) | (_, None) => fmt2(Some(s.rubric_score)),
        (n, over) => format!(
            "{} ({} over scored; {n} unscored)",
            fmt2(Some(s.rubric_score)),
            fmt2(over)
        ),
    }
}

fn pfu(s: &Side) -> String {
    format!("{}/{}/{}", s.pass, s.fail, s.undecided)
}

#[cfg(test)]
mod tests {
    use super::*;
    use reprolab_paper::benchmark::Violation;
    use reprolab_paper::fingerprint::{Criterion, Fingerprint};
    use reprolab_paper::{Checker, Rubric, Verdict};

    fn paper() -> BundledPaper {
        let criterion = |id: &str| Criterion {
            id: id.into(),
            fact: id.into(),
            scope: String::new(),
            category: "algorithm".into(),
            source: id.into(),
            checks: vec![],
        };
        let leaf = |id: &str| Rubric {
            id: id.into(),
            requirements: id.into(),
            weight: 1.0,
            sub_tasks: vec![],
            task_category: Some("Code Development".into()),
            finegrained_task_category: None,
            criteria: vec![id.into()],
        };
        let violation = |id: &str, by: &str| Violation {
            criterion: id.into(),
            kind: "wrong constant".into(),
            what: String::new(),
            r#where: String::new(),
            detectable_by: by.into(),
        };
        BundledPaper {
            name: "p".into(),
            dir: "p".into(),
            paper: "p/paper.md".into(),
            fingerprint: Fingerprint {
                paper: String::new(),
                criteria: vec![criterion("C1"), criterion("C2"), criterion("C3")],
            },
            rubric: Rubric {
                id: "root".into(),
                requirements: String::new(),
                weight: 1.0,
                sub_tasks: vec![leaf("C1"), leaf("C2"), leaf("C3")],
                task_category: None,
                finegrained_task_category: None,
                criteria: vec![],
            },
            reference: "p/reference".into(),
            mutated: "p/mutated".into(),
            violations: vec![violation("C1", "static"), violation("C2", "judge")],
        }
    }

    fn verification(outcomes: &[Outcome]) -> Verification {
        Verification {
            verdicts: outcomes
                .iter()
                .enumerate()
                .map(|(i, o)| Verdict {
                    id: format!("C{}", i + 1),
                    fact: String::new(),
                    category: "algorithm".into(),
                    outcome: *o,
                    decided_by: (*o != Outcome::Undecided).then_some(Checker::Static),
                    evidence: vec![],
                    checks: vec![],
                })
                .collect(),
            syntax_errors: vec![],
        }
    }

    #[test]
    fn violations_caught_and_false_alarms_are_told_apart() {
        use Outcome::*;
        let p = paper();
        let r = row(
            &p,
            &verification(&[Pass, Pass, Undecided]),
            &verification(&[Fail, Undecided, Fail]),
        );
        assert!(r.violations[0].caught);
        assert_eq!(r.violations[0].caught_by.as_deref(), Some("static"));
        assert!(!r.violations[1].caught);
        assert_eq!(r.false_alarms_mutated, ["C3"]);
        assert!(r.false_alarms_reference.is_empty());
        assert!((r.reference.rubric_score - 2.0 / 3.0).abs() < 1e-9);
        assert_eq!(r.reference.rubric_unscored_leaves, 1);
        assert!(
            !targets_met(std::slice::from_ref(&r)),
            "a false alarm misses the target"
        );
        let ok = row(
            &p,
            &verification(&[Pass, Pass, Pass]),
            &verification(&[Fail, Undecided, Pass]),
        );
        assert!(
            targets_met(&[ok]),
            "a judge-only violation may be missed without a judge"
        );
        let md = report(&[r]).to_markdown();
        assert!(
            md.contains("| violations a static check or a probe can see, caught | 1/1 (100.0%) |"),
            "{md}"
        );
    }
}
