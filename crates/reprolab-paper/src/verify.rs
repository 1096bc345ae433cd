//! The verifier: every criterion of a fingerprint decided against a code directory by the
//! strongest checker that applies. Static checks (the code's constants and calls) and execution
//! probes (run in the sandbox by a [`Prober`]) come first; a criterion none of them decides goes
//! to the [`Judge`] when there is one, else stays undecided. A criterion fails when any check
//! fails, passes when one passes and none fails.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::checks::{CheckResult, Checker, Outcome, check_static};
use crate::codefacts::CodeFacts;
use crate::fingerprint::{Check, Criterion, Fingerprint};

/// How a probe's run ended.
#[derive(Debug, Clone, PartialEq)]
pub enum ProbeRun {
    /// It exited normally: the criterion holds.
    Passed,
    /// It raised `AssertionError`: the message says what was expected and what was found.
    AssertionFailed(String),
    /// Anything else (an import the code lacks, a crash, a timeout): decides nothing.
    Error(String),
}

// The verifier awaits these in place (never spawns them), so their futures need not be `Send`.
/// Runs a probe with `code_dir` importable and as its working directory, in the sandbox.
#[allow(async_fn_in_trait)]
pub trait Prober {
    async fn probe(&self, code_dir: &Path, script: &str) -> ProbeRun;
}

/// Decides a criterion no check decided, e.g. an LLM reading the paper and the code. Before
/// judging, it may write a probe for it ([`Judge::probe_for`]): running the probe then decides,
/// as any probe would, and the judge is asked only if the probe cannot run.
#[allow(async_fn_in_trait)]
pub trait Judge {
    async fn judge(&self, criterion: &Criterion, code_dir: &Path) -> CheckResult;

    /// A probe for `criterion` written against the code in `code_dir`, if one can be.
    async fn probe_for(&self, _criterion: &Criterion, _code_dir: &Path) -> Option<String> {
        None
    }
}

/// No judge: what no check decides stays undecided.
pub struct NoJudge;

impl Judge for NoJudge {
    async fn judge(&self, _: &Criterion, _: &Path) -> CheckResult {
        CheckResult {
            checker: Checker::Judge,
            outcome: Outcome::Undecided,
            evidence: vec!["no check applies and no judge was given (--llm)".into()],
        }
    }
}

/// One criterion's verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub id: String,
    pub fact: String,
    pub category: String,
    pub outcome: Outcome,
    /// The checker whose result decided; `None` when undecided.
    pub decided_by: Option<Checker>,
    /// The deciding check's evidence (or, undecided, why nothing decided).
    pub evidence: Vec<String>,
    /// Every check that ran.
    pub checks: Vec<CheckResult>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verification {
    pub verdicts: Vec<Verdict>,
    /// Files of the code that do not parse (their facts are missing).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub syntax_errors: Vec<String>,
}

impl Verification {
    pub fn count(&self, outcome: Outcome) -> usize {
        self.verdicts
            .iter()
            .filter(|v| v.outcome == outcome)
            .count()
    }

    /// How many criteria each checker decided.
    pub fn decided_by(&self) -> BTreeMap<Checker, usize> {
        let mut out = BTreeMap::new();
        for c in self.verdicts.iter().filter_map(|v| v.decided_by) {
            *out.entry(c).or_insert(0) += 1;
        }
        out
    }

    pub fn get(&self, id: &str) -> Option<&Verdict> {
        self.verdicts.iter().find(|v| v.id == id)
    }
}

/// Verify every criterion of `fingerprint` against `code_dir`, whose static facts are `facts`.
/// `on_verdict` sees each verdict as it is reached (progress).
pub async fn verify(
    fingerprint: &Fingerprint,
    facts: &CodeFacts,
    code_dir: &Path,
    prober: &impl Prober,
    judge: &impl Judge,
    mut on_verdict: impl FnMut(&Verdict),
) -> Verification {
    let mut verdicts = Vec::with_capacity(fingerprint.criteria.len());
    for criterion in &fingerprint.criteria {
        let mut checks = Vec::new();
        for check in &criterion.checks {
            checks.push(match check {
                Check::Static(s) => check_static(s, facts),
                Check::Probe(script) => probe_result(prober.probe(code_dir, script).await),
            });
        }
        if !decided(&checks)
            && let Some(script) = judge.probe_for(criterion, code_dir).await
        {
            let mut result = probe_result(prober.probe(code_dir, &script).await);
            result
                .evidence
                .push(format!("the probe, written by the judge:\n{script}"));
            checks.push(result);
        }
        if !decided(&checks) {
            checks.push(judge.judge(criterion, code_dir).await);
        }
        let verdict = decide(criterion, checks);
        on_verdict(&verdict);
        verdicts.push(verdict);
    }
    Verification {
        verdicts,
        syntax_errors: facts.syntax_errors.clone(),
    }
}

fn decided(checks: &[CheckResult]) -> bool {
    checks.iter().any(|c| c.outcome != Outcome::Undecided)
}

fn probe_result(run: ProbeRun) -> CheckResult {
    let (outcome, evidence) = match run {
        ProbeRun::Passed => (Outcome::Pass, "the probe ran to the end".to_string()),
        ProbeRun::AssertionFailed(m) if m.trim().is_empty() => (
            Outcome::Fail,
            "the probe's assertion failed (no message)".into(),
        ),
        ProbeRun::AssertionFailed(m) => (Outcome::Fail, m),
        ProbeRun::Error(e) => (Outcome::Undecided, format!("the probe could not run: {e}")),
    };
    CheckResult {
        checker: Checker::Execution,
        outcome,
        evidence: vec![evidence],
    }
}

/// Any failing check fails the criterion; otherwise a passing one passes it. The deciding
/// check is the first of that outcome, in the order the checks ran (static, probes, judge).
fn decide(criterion: &Criterion, checks: Vec<CheckResult>) -> Verdict {
    let outcome = if checks.iter().any(|c| c.outcome == Outcome::Fail) {
        Outcome::Fail
    } else if checks.iter().any(|c| c.outcome == Outcome::Pass) {
        Outcome::Pass
    } else {
        Outcome::Undecided
    };
    let decider = checks.iter().find(|c| c.outcome == outcome);
    let evidence = match (outcome, decider) {
        (Outcome::Undecided, _) | (_, None) => {
            checks.iter().flat_map(|c| c.evidence.clone()).collect()
        }
        (_, Some(d)) => d.evidence.clone(),
    };
    Verdict {
        id: criterion.id.clone(),
        fact: criterion.fact.clone(),
        category: criterion.category.clone(),
        outcome,
        decided_by: (outcome != Outcome::Undecided)
            .then(|| decider.map(|d| d.checker))
            .flatten(),
        evidence,
        checks,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codefacts::ValueFact;
    use crate::fingerprint::{StaticCheck, ValueCheck};
    use serde_json::json;

    /// Answers a probe by its text: "pass", "fail: message" or anything else = an error.
    struct ScriptedProber;

    impl Prober for ScriptedProber {
        async fn probe(&self, _: &Path, script: &str) -> ProbeRun {
            match script.split_once(':') {
                _ if script == "pass" => ProbeRun::Passed,
                Some(("fail", m)) => ProbeRun::AssertionFailed(m.trim().into()),
                _ => ProbeRun::Error("ModuleNotFoundError: No module named 'x'".into()),
            }
        }
    }

    struct Approves;

    impl Judge for Approves {
        async fn probe_for(&self, c: &Criterion, _: &Path) -> Option<String> {
            (c.id == "writable").then(|| "fail: found 2".to_string())
        }

        async fn judge(&self, _: &Criterion, _: &Path) -> CheckResult {
            CheckResult {
                checker: Checker::Judge,
                outcome: Outcome::Pass,
                evidence: vec!["looks right".into()],
            }
        }
    }

    fn criterion(id: &str, checks: Vec<Check>) -> Criterion {
        Criterion {
            id: id.into(),
            fact: format!("fact {id}"),
            scope: String::new(),
            category: "hyperparameter".into(),
            source: "s".into(),
            checks,
        }
    }

    fn eps(equals: f64) -> Check {
        Check::Static(StaticCheck::Value(ValueCheck {
            names: vec!["eps".into()],
            equals: json!(equals),
            within: vec![],
        }))
    }

    async fn run(criteria: Vec<Criterion>, judge: &impl Judge) -> Verification {
        let facts = CodeFacts {
            values: vec![ValueFact {
                file: "m.py".into(),
                line: 1,
                scope: String::new(),
                name: "eps".into(),
                value: json!(0.1),
                kind: "assign".into(),
            }],
            ..CodeFacts::default()
        };
        let fp = Fingerprint {
            paper: String::new(),
            criteria,
        };
        verify(&fp, &facts, Path::new("."), &ScriptedProber, judge, |_| {}).await
    }

    #[tokio::test]
    async fn checks_combine_fail_first_then_pass_then_the_judge() {
        let v = run(
            vec![
                criterion("static-pass", vec![eps(0.1)]),
                criterion(
                    "probe-fails",
                    vec![eps(0.1), Check::Probe("fail: got 3".into())],
                ),
                criterion("probe-error", vec![Check::Probe("boom".into())]),
                criterion("nothing", vec![]),
            ],
            &NoJudge,
        )
        .await;
        let out = |id| v.get(id).unwrap();
        assert_eq!(out("static-pass").outcome, Outcome::Pass);
        assert_eq!(out("static-pass").decided_by, Some(Checker::Static));
        assert_eq!(out("probe-fails").outcome, Outcome::Fail);
        assert_eq!(out("probe-fails").decided_by, Some(Checker::Execution));
        assert_eq!(out("probe-fails").evidence, ["got 3"]);
        assert_eq!(out("probe-error").outcome, Outcome::Undecided);
        assert!(out("probe-error").evidence[0].contains("could not run"));
        assert_eq!(out("nothing").outcome, Outcome::Undecided);
        assert_eq!(v.decided_by()[&Checker::Static], 1);
    }

    #[tokio::test]
    async fn the_judge_sees_only_what_no_check_decided() {
        let v = run(
            vec![
                criterion("static-fail", vec![eps(0.3)]),
                criterion("nothing", vec![]),
                criterion("writable", vec![]),
            ],
            &Approves,
        )
        .await;
        let written = v.get("writable").unwrap();
        assert_eq!(written.outcome, Outcome::Fail);
        assert_eq!(written.decided_by, Some(Checker::Execution));
        assert_eq!(
            written.checks.len(),
            1,
            "a probe that decides spares the judge"
        );
        assert!(written.checks[0].evidence[1].contains("written by the judge"));
        assert_eq!(v.get("static-fail").unwrap().outcome, Outcome::Fail);
        assert_eq!(v.get("static-fail").unwrap().checks.len(), 1);
        assert_eq!(v.get("nothing").unwrap().decided_by, Some(Checker::Judge));
    }
}
