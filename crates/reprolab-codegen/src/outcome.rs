//! What one evaluated sample came to: its status, every test's outcome with the exception's
//! type, message and traceback, the first failure, its taxonomy label, and timings.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::extract::Origin;
use crate::refine::{Refinement, Verdict};
use crate::task::Labels;
use crate::taxonomy::{Behaviour, ExpectedLabel, Label};

/// The status of a sample, from best to least informative. Timeouts, memory and output limits
/// and infrastructure errors are kept apart from test failures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Every test that ran passed (at least one ran).
    Pass,
    /// At least one test failed or errored.
    Fail,
    /// The tests could not be collected (the candidate does not import: syntax error, missing
    /// module, …), no test was found, or the test process died.
    Error,
    Timeout,
    Oom,
    OutputLimit,
    /// Wrote more than the disk limit into its work directory.
    DiskLimit,
    /// Nothing in the answer looks like code.
    NoCode,
    /// The generated definition could not be put into the repository file.
    PatchError,
    /// reprolab could not run the sample (worker failure, disk): not the code's fault; retried
    /// by the next run and left out of pass@k.
    Infra,
}

impl Status {
    pub const ALL: &'static [Status] = &[
        Status::Pass,
        Status::Fail,
        Status::Error,
        Status::Timeout,
        Status::Oom,
        Status::OutputLimit,
        Status::DiskLimit,
        Status::NoCode,
        Status::PatchError,
        Status::Infra,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Fail => "fail",
            Status::Error => "error",
            Status::Timeout => "timeout",
            Status::Oom => "oom",
            Status::OutputLimit => "output_limit",
            Status::DiskLimit => "disk_limit",
            Status::NoCode => "no_code",
            Status::PatchError => "patch_error",
            Status::Infra => "infra",
        }
    }
}

/// One pytest test's outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestOutcome {
    pub nodeid: String,
    /// `passed`, `failed`, `error` (setup/teardown failed) or `skipped`.
    pub outcome: String,
    pub duration_s: f64,
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceback: Option<String>,
    #[serde(default)]
    pub oom: bool,
    /// For a failed test of a function task: the generated function next to the reference on
    /// the test's calls (see [`Behaviour`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub behaviour: Option<Behaviour>,
}

/// The failure a sample is judged by: the first failing test, or what stopped the tests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Failure {
    /// Exception type (`RuntimeError`, `SyntaxError`, `ProcessCrash`, …).
    #[serde(rename = "type")]
    pub kind: String,
    pub message: String,
    pub traceback: String,
    /// The test it happened in, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodeid: Option<String>,
}

/// What a sample is: a task's reference, one of its wrong solutions, or a generated sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Reference,
    Wrong,
    Sample,
}

/// One evaluated sample: a line of `results.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SampleResult {
    pub task_id: String,
    pub role: Role,
    /// The sample's index (the wrong solution's index for `wrong`, 0 for the reference).
    pub sample: u32,
    pub status: Status,
    pub labels: Labels,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extraction: Option<Origin>,
    /// The code that was run (after extraction), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    pub tests: Vec<TestOutcome>,
    /// Tests passed and tests judged (skipped tests are not judged).
    pub passed: u32,
    pub total: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<Failure>,
    /// The failure's label: the rules', or an LLM classifier's where it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub taxonomy: Option<Label>,
    /// The LLM classifier's opinion and the rules' label, when one was asked (`--classify-llm`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refinement: Option<Refinement>,
    /// The label the generations file expects for this answer (`expected_label`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected: Option<ExpectedLabel>,
    /// Harness wall time for the sample: work directory, start, pytest, result.
    pub wall_s: f64,
    /// The tests' own run time as pytest reports it (setup + call + teardown of every test).
    pub tests_s: f64,
    /// The time limit the sample ran under.
    pub timeout_s: f64,
    pub peak_mb: u64,
    /// The end of what the test run printed.
    #[serde(default)]
    pub output_tail: String,
    /// Answered from the store without running.
    #[serde(default)]
    pub cached: bool,
    /// The cache key.
    pub key: String,
}

impl Judged {
    /// The behaviour finding to label the failure by: the failing test's, or when that one
    /// says nothing, the first informative one of another failed test.
    pub fn behaviour(&self) -> Option<&Behaviour> {
        let nodeid = self.failure.as_ref().and_then(|f| f.nodeid.as_deref());
        let failed = || {
            self.tests
                .iter()
                .filter(|t| t.outcome == "failed" || t.outcome == "error")
        };
        failed()
            .find(|t| Some(t.nodeid.as_str()) == nodeid)
            .and_then(|t| t.behaviour.as_ref())
            .filter(|b| b.is_informative())
            .or_else(|| {
                failed()
                    .filter_map(|t| t.behaviour.as_ref())
                    .find(|b| b.is_informative())
            })
    }
}

impl SampleResult {
    /// Share of the judged tests that passed (0 when none ran).
    pub fn partial(&self) -> f64 {
        if self.total == 0 {
            0.0
        } else {
            self.passed as f64 / self.total as f64
        }
    }

    /// Whether an LLM classifier replaced the rules' label with another category or subtype.
    pub fn relabelled(&self) -> bool {
        match (&self.refinement, &self.taxonomy) {
            (Some(f), Some(l)) => {
                f.verdict == Verdict::Labelled
                    && (l.category, l.subtype) != (f.rules.category, f.rules.subtype)
            }
            _ => false,
        }
    }

    /// Whether this result may be stored and reused: everything except infrastructure errors.
    pub fn is_cacheable(&self) -> bool {
        self.status != Status::Infra
    }
}

/// What a finished test process told, before the sample's identity is attached.
#[derive(Debug, Clone, PartialEq)]
pub struct Judged {
    pub status: Status,
    pub tests: Vec<TestOutcome>,
    pub passed: u32,
    pub total: u32,
    pub failure: Option<Failure>,
    pub tests_s: f64,
}

impl Judged {
    pub fn without_tests(status: Status, failure: Option<Failure>) -> Judged {
        Judged {
            status,
            tests: Vec::new(),
            passed: 0,
            total: 0,
            failure,
            tests_s: 0.0,
        }
    }
}

/// How the test process ended, as the watchdog saw it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Ending {
    Exited {
        code: Option<i32>,
        signal: Option<i32>,
    },
    Timeout,
    Memory,
    Output,
    Disk,
    /// The runner that ran the sample died under it on every try: the sample's code killed it.
    RunnerKilled,
}

fn failure_from(v: &Value, nodeid: Option<String>) -> Failure {
    let s = |k: &str| v[k].as_str().unwrap_or("").to_string();
    Failure {
        kind: v["type"].as_str().unwrap_or("Exception").to_string(),
        message: s("message"),
        traceback: s("traceback"),
        nodeid,
    }
}

/// Judge a finished test process from how it ended and the plugin's record (`result.json`,
/// `None` when it wrote none). A broken limit wins over whatever the process wrote.
pub fn judge(ending: Ending, record: Option<&Value>, output_tail: &str) -> Judged {
    match ending {
        Ending::Timeout => return Judged::without_tests(Status::Timeout, None),
        Ending::Memory => return Judged::without_tests(Status::Oom, None),
        Ending::Output => return Judged::without_tests(Status::OutputLimit, None),
        Ending::Disk => return Judged::without_tests(Status::DiskLimit, None),
        Ending::RunnerKilled => {
            return Judged::without_tests(
                Status::Error,
                Some(Failure {
                    kind: "ProcessCrash".into(),
                    message: "the sample's code killed the runner that ran it (on every try)"
                        .into(),
                    traceback: output_tail.to_string(),
                    nodeid: None,
                }),
            );
        }
        Ending::Exited { .. } => {}
    }
    let crash = |detail: String| {
        Judged::without_tests(
            Status::Error,
            Some(Failure {
                kind: "ProcessCrash".into(),
                message: detail,
                traceback: output_tail.to_string(),
                nodeid: None,
            }),
        )
    };
    let Some(record) = record else {
        let how = match ending {
            Ending::Exited {
                signal: Some(sig), ..
            } => format!("killed by signal {sig}"),
            Ending::Exited { code: Some(c), .. } => format!("exit code {c}"),
            _ => "an unknown cause".into(),
        };
        return crash(format!(
            "the test process ended ({how}) before pytest wrote its results"
        ));
    };
    if record["status"] != "done" {
        return crash(format!(
            "pytest stopped before running tests (exit code {})",
            record["exit_code"]
        ));
    }
    let tests: Vec<TestOutcome> =
        serde_json::from_value(record["tests"].clone()).unwrap_or_default();
    let collect_errors = record["collect_errors"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let tests_s = record["tests_s"].as_f64().unwrap_or(0.0);
    let passed = tests.iter().filter(|t| t.outcome == "passed").count() as u32;
    let total = tests.iter().filter(|t| t.outcome != "skipped").count() as u32;
    let oom = tests.iter().any(|t| t.oom) || collect_errors.iter().any(|c| c["oom"] == true);
    let judged = |status, failure| Judged {
        status,
        tests: tests.clone(),
        passed,
        total,
        failure,
        tests_s,
    };
    if oom {
        // An allocation failed (the soft memory cap): a memory verdict, not a test failure.
        return judged(Status::Oom, None);
    }
    if let Some(pre) = record.get("precheck").filter(|p| !p.is_null()) {
        return judged(Status::Error, Some(failure_from(pre, None)));
    }
    if let Some(c) = collect_errors.first() {
        let nodeid = c["nodeid"].as_str().map(String::from);
        return judged(Status::Error, Some(failure_from(c, nodeid)));
    }
    if total == 0 {
        return judged(
            Status::Error,
            Some(Failure {
                kind: "NoTestsRan".into(),
                message: format!(
                    "pytest ran no test (exit code {}); check the test file or node ids",
                    record["exit_code"]
                ),
                traceback: output_tail.to_string(),
                nodeid: None,
            }),
        );
    }
    match tests
        .iter()
        .find(|t| t.outcome == "failed" || t.outcome == "error")
    {
        None => judged(Status::Pass, None),
        Some(t) => judged(
            Status::Fail,
            Some(Failure {
                kind: t.kind.clone().unwrap_or_else(|| "Exception".into()),
                message: t.message.clone().unwrap_or_default(),
                traceback: t.traceback.clone().unwrap_or_default(),
                nodeid: Some(t.nodeid.clone()),
            }),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn exited() -> Ending {
        Ending::Exited {
            code: Some(0),
            signal: None,
        }
    }

    fn test(nodeid: &str, outcome: &str) -> Value {
        json!({"nodeid": nodeid, "outcome": outcome, "duration_s": 0.1,
               "type": if outcome == "passed" { Value::Null } else { json!("AssertionError") },
               "message": "assert 1 == 2", "traceback": "tb", "oom": false})
    }

    fn record(tests: Vec<Value>) -> Value {
        json!({"status": "done", "exit_code": 1, "tests_s": 0.3, "tests": tests,
               "collect_errors": [], "precheck": null})
    }

    #[test]
    fn all_passed_is_pass_and_skips_are_not_judged() {
        let r = record(vec![
            test("t::a", "passed"),
            test("t::b", "passed"),
            test("t::c", "skipped"),
        ]);
        let j = judge(exited(), Some(&r), "");
        assert_eq!((j.status, j.passed, j.total), (Status::Pass, 2, 2));
        assert_eq!(j.failure, None);
        assert_eq!(j.tests_s, 0.3);
    }

    #[test]
    fn a_failed_test_is_fail_with_its_exception() {
        let r = record(vec![
            test("t::a", "passed"),
            test("t::b", "failed"),
            test("t::c", "error"),
        ]);
        let j = judge(exited(), Some(&r), "");
        assert_eq!((j.status, j.passed, j.total), (Status::Fail, 1, 3));
        let f = j.failure.unwrap();
        assert_eq!(
            (f.kind.as_str(), f.nodeid.as_deref()),
            ("AssertionError", Some("t::b"))
        );
    }

    #[test]
    fn collection_errors_and_syntax_prechecks_are_errors() {
        let mut r = record(vec![]);
        r["collect_errors"] = json!([{"nodeid": "test_task.py", "type": "ModuleNotFoundError",
                                      "message": "No module named 'tensorflow'", "traceback": "", "oom": false}]);
        let j = judge(exited(), Some(&r), "");
        assert_eq!(j.status, Status::Error);
        assert_eq!(j.failure.unwrap().kind, "ModuleNotFoundError");
        r["precheck"] = json!({"type": "SyntaxError", "message": "invalid syntax (solution.py, line 2)", "traceback": ""});
        let j = judge(exited(), Some(&r), "");
        assert_eq!(j.failure.unwrap().kind, "SyntaxError");
    }

    #[test]
    fn limits_win_and_allocation_failures_are_oom() {
        let r = record(vec![test("t::a", "passed")]);
        assert_eq!(judge(Ending::Timeout, Some(&r), "").status, Status::Timeout);
        assert_eq!(judge(Ending::Memory, None, "").status, Status::Oom);
        assert_eq!(judge(Ending::Output, None, "").status, Status::OutputLimit);
        let mut t = test("t::a", "failed");
        t["type"] = json!("MemoryError");
        t["oom"] = json!(true);
        assert_eq!(
            judge(exited(), Some(&record(vec![t])), "").status,
            Status::Oom
        );
    }

    #[test]
    fn no_record_is_a_crash_and_no_tests_is_an_error() {
        let j = judge(
            Ending::Exited {
                code: None,
                signal: Some(11),
            },
            None,
            "Fatal Python error",
        );
        assert_eq!(j.status, Status::Error);
        let f = j.failure.unwrap();
        assert_eq!(f.kind, "ProcessCrash");
        assert!(f.message.contains("signal 11") && f.traceback.contains("Fatal"));
        let j = judge(exited(), Some(&record(vec![])), "");
        assert_eq!(j.failure.unwrap().kind, "NoTestsRan");
        let j = judge(
            exited(),
            Some(&json!({"status": "no_result", "exit_code": 4})),
            "",
        );
        assert!(j.failure.unwrap().message.contains("exit code 4"));
    }
}
