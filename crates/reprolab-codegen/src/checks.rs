//! Judging the benchmark itself: whether a task is valid (its reference passes enough tests,
//! its known-wrong solutions are caught), and how the warm and the fresh runners compare on the
//! same samples (`codegen bench`).

use std::collections::HashMap;

use crate::outcome::{SampleResult, Status};
use crate::task::Task;

/// The failure in one line: its type and the first 100 characters of its message's first line
/// (empty without a failure).
pub fn failure_text(r: &SampleResult) -> String {
    match &r.failure {
        Some(f) => {
            let first = f.message.lines().next().unwrap_or("");
            let short: String = first.chars().take(100).collect();
            format!("{}: {short}", f.kind)
        }
        None => String::new(),
    }
}

/// What validation found about one task.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Validity {
    /// Empty when the task is valid.
    pub problems: Vec<String>,
    /// Known-wrong solutions caught (failed or errored) and run, when they were checked.
    pub wrong_caught: Option<(usize, usize)>,
}

/// Judges a task by its reference's result (it must pass, with at least 3 tests for a function
/// task) and, when checked, its wrong solutions' (each must be caught: not pass, and run).
pub fn validity(
    task: &Task,
    reference: &SampleResult,
    wrongs: Option<&[SampleResult]>,
) -> Validity {
    let mut problems = Vec::new();
    let r = reference;
    if r.status != Status::Pass {
        problems.push(format!(
            "reference {}: {}",
            r.status.name(),
            failure_text(r)
        ));
    }
    if !task.is_repository() && r.status == Status::Pass && r.total < 3 {
        problems.push(format!(
            "the test has {} test(s), expected at least 3",
            r.total
        ));
    }
    let mut wrong_caught = None;
    if let Some(w) = wrongs.filter(|w| !w.is_empty()) {
        let caught = w
            .iter()
            .filter(|x| x.status != Status::Pass && x.status != Status::Infra)
            .count();
        wrong_caught = Some((caught, w.len()));
        for x in w {
            match x.status {
                Status::Pass => problems.push(format!(
                    "wrong[{}] passes every test: the tests are weak",
                    x.sample
                )),
                Status::Infra => problems.push(format!(
                    "wrong[{}] could not be run: {}",
                    x.sample,
                    failure_text(x)
                )),
                _ => {}
            }
        }
    }
    Validity {
        problems,
        wrong_caught,
    }
}

/// Mean seconds per sample that ran (infrastructure errors and samples that did not start
/// left out): harness wall time, the tests' own time, and the rest (the runner's overhead).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SampleTimes {
    pub wall_s: f64,
    pub tests_s: f64,
    pub overhead_s: f64,
}

impl SampleTimes {
    pub fn of(results: &[SampleResult]) -> SampleTimes {
        let run: Vec<&SampleResult> = results
            .iter()
            .filter(|r| r.wall_s > 0.0 && r.status != Status::Infra)
            .collect();
        let k = run.len().max(1) as f64;
        let wall_s = run.iter().map(|r| r.wall_s).sum::<f64>() / k;
        let tests_s = run.iter().map(|r| r.tests_s).sum::<f64>() / k;
        SampleTimes {
            wall_s,
            tests_s,
            overhead_s: wall_s - tests_s,
        }
    }
}

/// Samples (task, index) of `a` whose status differs in `b` (or that `b` lacks).
pub fn status_disagreements(a: &[SampleResult], b: &[SampleResult]) -> usize {
    let status_of = |rs: &[SampleResult]| {
        rs.iter()
            .map(|r| ((r.task_id.clone(), r.sample), r.status))
            .collect::<HashMap<_, _>>()
    };
    let (sa, sb) = (status_of(a), status_of(b));
    sa.iter().filter(|(k, s)| sb.get(*k) != Some(*s)).count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::{Failure, Role};
    use crate::task::{DataType, Labels, Stage, TaskType};

    fn result(sample: u32, status: Status, wall_s: f64) -> SampleResult {
        SampleResult {
            task_id: "t".into(),
            role: Role::Wrong,
            sample,
            status,
            labels: Labels {
                stage: Stage::Training,
                task: TaskType::General,
                data: DataType::Image,
            },
            extraction: None,
            code: None,
            tests: vec![],
            passed: 3,
            total: 3,
            failure: (status != Status::Pass).then(|| Failure {
                kind: "AssertionError".into(),
                message: format!("{}\nsecond line", "x".repeat(120)),
                traceback: String::new(),
                nodeid: None,
            }),
            taxonomy: None,
            refinement: None,
            expected: None,
            wall_s,
            tests_s: 0.25,
            timeout_s: 5.0,
            peak_mb: 0,
            output_tail: String::new(),
            cached: false,
            key: format!("k{sample}"),
        }
    }

    fn task() -> Task {
        let line = r#"{"id": "t", "prompt": "p", "entry_point": "f", "reference": "def f(): pass", "test": "def test_f(): pass", "labels": {"stage": "training", "task": "general", "data": "image"}}"#;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tasks.jsonl");
        std::fs::write(&path, line).unwrap();
        crate::load_tasks(&path).unwrap().remove(0)
    }

    #[test]
    fn failures_print_in_one_short_line() {
        let text = failure_text(&result(0, Status::Fail, 1.0));
        assert_eq!(text, format!("AssertionError: {}", "x".repeat(100)));
        assert_eq!(failure_text(&result(0, Status::Pass, 1.0)), "");
    }

    #[test]
    fn a_task_needs_a_passing_reference_with_three_tests_and_caught_wrong_solutions() {
        let t = task();
        let good = result(0, Status::Pass, 1.0);
        assert_eq!(validity(&t, &good, None), Validity::default());
        let mut few = good.clone();
        few.total = 2;
        assert_eq!(
            validity(&t, &few, None).problems,
            ["the test has 2 test(s), expected at least 3"]
        );
        let wrongs = [
            result(0, Status::Fail, 1.0),
            result(1, Status::Pass, 1.0),
            result(2, Status::Infra, 1.0),
        ];
        let v = validity(&t, &good, Some(&wrongs));
        assert_eq!(v.wrong_caught, Some((1, 3)));
        assert_eq!(v.problems.len(), 2);
        assert!(v.problems[0].starts_with("wrong[1] passes every test"));
        assert!(v.problems[1].starts_with("wrong[2] could not be run: AssertionError"));
        let bad = validity(&t, &result(0, Status::Error, 1.0), Some(&[]));
        assert_eq!(bad.wrong_caught, None);
        assert!(bad.problems[0].starts_with("reference error: AssertionError"));
    }

    #[test]
    fn runner_times_leave_out_what_did_not_run_and_disagreements_count() {
        let a = [
            result(0, Status::Pass, 1.25),
            result(1, Status::Fail, 0.75),
            result(2, Status::Infra, 9.0),
            result(3, Status::Pass, 0.0),
        ];
        let t = SampleTimes::of(&a);
        assert_eq!((t.wall_s, t.tests_s, t.overhead_s), (1.0, 0.25, 0.75));
        let mut b = a.to_vec();
        b[1].status = Status::Timeout;
        b.pop();
        assert_eq!(status_disagreements(&a, &b), 2);
        assert_eq!(status_disagreements(&a, &a), 0);
    }
}
