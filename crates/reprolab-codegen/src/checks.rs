//! Judging the benchmark itself: whether a task is valid (its reference passes enough tests,
//! its known-wrong solutions are caught), and how the warm and the fresh runners compare on the
//! same samples (`codegen bench`).

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::json;

use crate::outcome::{SampleResult, Status};
use crate::task::{Task, TaskKind};

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

/// One task as `codegen validate` judged it.
#[derive(Debug, Clone)]
pub struct TaskCheck {
    pub task_id: String,
    pub kind: &'static str,
    pub reference: SampleResult,
    /// Its wrong solutions' results (empty when they were not run).
    pub wrong: Vec<SampleResult>,
    pub validity: Validity,
}

/// The known-wrong solutions `codegen validate --wrong` runs for `tasks` (function tasks'
/// `wrong` lists; repository tasks have none).
pub fn wrong_solution_count(tasks: &[Arc<Task>]) -> usize {
    tasks
        .iter()
        .map(|t| match &t.kind {
            TaskKind::Function { wrong, .. } => wrong.len(),
            TaskKind::Repository { .. } => 0,
        })
        .sum()
}

/// Judges every task by its reference's result in `references` (one per task) and, when
/// `wrongs` is given (`--wrong`), its wrong solutions' results.
pub fn check_tasks(
    tasks: &[Arc<Task>],
    references: &HashMap<String, SampleResult>,
    wrongs: Option<&HashMap<String, Vec<SampleResult>>>,
) -> Vec<TaskCheck> {
    tasks
        .iter()
        .map(|t| {
            let reference = references[&t.id].clone();
            let wrong = wrongs
                .and_then(|w| w.get(&t.id).cloned())
                .unwrap_or_default();
            let validity = validity(t, &reference, wrongs.is_some().then_some(wrong.as_slice()));
            TaskCheck {
                task_id: t.id.clone(),
                kind: t.kind_name(),
                reference,
                wrong,
                validity,
            }
        })
        .collect()
}

/// How many of `checks` found problems.
pub fn invalid_count(checks: &[TaskCheck]) -> usize {
    checks
        .iter()
        .filter(|c| !c.validity.problems.is_empty())
        .count()
}

/// A table's header row.
fn header(columns: &[&str]) -> Vec<String> {
    columns.iter().map(|c| c.to_string()).collect()
}

/// The table `codegen validate` prints: header, then one row per task.
pub fn validation_rows(checks: &[TaskCheck]) -> Vec<Vec<String>> {
    let mut rows = vec![header(&[
        "task",
        "kind",
        "reference",
        "tests",
        "time",
        "wrong",
        "problems",
    ])];
    for c in checks {
        let r = &c.reference;
        let problems = &c.validity.problems;
        rows.push(vec![
            c.task_id.clone(),
            c.kind.into(),
            r.status.name().into(),
            format!("{}/{}", r.passed, r.total),
            format!("{:.2} s", r.wall_s),
            c.validity
                .wrong_caught
                .map_or("-".into(), |(caught, n)| format!("{caught}/{n} caught")),
            if problems.is_empty() {
                "ok".into()
            } else {
                problems.join("; ")
            },
        ]);
    }
    rows
}

/// `codegen validate --json`: `{"tasks": [...], "invalid": N}`.
pub fn validation_json(checks: &[TaskCheck]) -> serde_json::Value {
    let tasks: Vec<serde_json::Value> = checks
        .iter()
        .map(|c| {
            let problems = &c.validity.problems;
            json!({
                "task_id": c.task_id, "kind": c.kind, "valid": problems.is_empty(),
                "problems": problems, "reference": c.reference, "wrong": c.wrong,
            })
        })
        .collect();
    json!({"tasks": tasks, "invalid": invalid_count(checks)})
}

/// One runner's measurement in `codegen bench`: its start-up (runners importing, references
/// run), the samples' wall time, their results and the warm runners' import times.
#[derive(Debug, Clone)]
pub struct Measured {
    pub startup_s: f64,
    pub wall_s: f64,
    pub results: Vec<SampleResult>,
    pub import_s: Vec<f64>,
}

impl Measured {
    /// Samples per minute over the samples' wall time.
    fn per_min(&self, samples: usize) -> f64 {
        samples as f64 * 60.0 / self.wall_s
    }
}

/// The warm runners against fresh processes on the same `samples` (`codegen bench`).
#[derive(Debug, Clone)]
pub struct RunnerComparison {
    pub samples: usize,
    pub workers: usize,
    pub warm: Measured,
    pub fresh: Measured,
}

impl RunnerComparison {
    fn import_mean(&self) -> f64 {
        let i = &self.warm.import_s;
        if i.is_empty() {
            0.0
        } else {
            i.iter().sum::<f64>() / i.len() as f64
        }
    }

    /// Samples whose status differs between the two runners.
    pub fn disagreements(&self) -> usize {
        status_disagreements(&self.warm.results, &self.fresh.results)
    }

    /// Samples of either runner that hit infrastructure errors.
    pub fn infra(&self) -> usize {
        self.warm
            .results
            .iter()
            .chain(&self.fresh.results)
            .filter(|r| r.status == Status::Infra)
            .count()
    }

    /// `codegen bench --json`.
    pub fn to_json(&self) -> serde_json::Value {
        let (warm, fresh) = (&self.warm, &self.fresh);
        let (w, f) = (
            SampleTimes::of(&warm.results),
            SampleTimes::of(&fresh.results),
        );
        let (wtp, ftp) = (warm.per_min(self.samples), fresh.per_min(self.samples));
        json!({
            "samples": self.samples, "workers": self.workers,
            "status_disagreements": self.disagreements(),
            "warm": {"wall_s": warm.wall_s, "samples_per_min": wtp, "mean_sample_wall_s": w.wall_s,
                     "mean_tests_s": w.tests_s, "mean_overhead_s": w.overhead_s,
                     "startup_s": warm.startup_s, "runner_import_s": self.import_mean()},
            "fresh": {"wall_s": fresh.wall_s, "samples_per_min": ftp, "mean_sample_wall_s": f.wall_s,
                      "mean_tests_s": f.tests_s, "mean_overhead_s": f.overhead_s,
                      "startup_s": fresh.startup_s},
            "throughput_ratio": wtp / ftp, "overhead_ratio": f.overhead_s / w.overhead_s.max(1e-9),
        })
    }

    /// The line above the table.
    pub fn heading(&self) -> String {
        format!(
            "{} samples per runner, {} in parallel",
            self.samples, self.workers
        )
    }

    /// The table: header, the warm runner, the fresh processes.
    pub fn rows(&self) -> Vec<Vec<String>> {
        let row = |name: &str, m: &Measured| {
            let t = SampleTimes::of(&m.results);
            vec![
                name.into(),
                format!("{:.1} s", m.wall_s),
                format!("{:.1}", m.per_min(self.samples)),
                format!("{:.3} s", t.wall_s),
                format!("{:.3} s", t.tests_s),
                format!("{:.3} s", t.overhead_s),
            ]
        };
        vec![
            header(&[
                "runner",
                "wall",
                "samples/min",
                "per sample",
                "tests' own",
                "overhead/sample",
            ]),
            row("warm (fork per sample)", &self.warm),
            row("fresh process", &self.fresh),
        ]
    }

    /// The lines below the table: the ratios, the warm runners' start-up and, when there are
    /// any, the disagreements.
    pub fn notes(&self) -> Vec<String> {
        let (w, f) = (
            SampleTimes::of(&self.warm.results),
            SampleTimes::of(&self.fresh.results),
        );
        let (wtp, ftp) = (
            self.warm.per_min(self.samples),
            self.fresh.per_min(self.samples),
        );
        let mut notes = vec![
            format!(
                "throughput warm / fresh: {:.1}x; overhead per sample fresh / warm: {:.1}x",
                wtp / ftp,
                f.overhead_s / w.overhead_s.max(1e-9)
            ),
            format!(
                "warm runners' start-up: {:.1} s import each, {:.1} s until the references had run (not in the figures above)",
                self.import_mean(),
                self.warm.startup_s
            ),
        ];
        let disagree = self.disagreements();
        if disagree > 0 {
            notes.push(format!(
                "{disagree} samples got different statuses in the two runners (timeouts under load?)"
            ));
        }
        notes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{function_task, result, task};

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

    #[test]
    fn validation_judges_every_task_into_rows_and_json() {
        let tasks: Vec<Arc<Task>> = vec![
            Arc::new(function_task("a", &["def f(): return 0"])),
            Arc::new(function_task("b", &[])),
        ];
        assert_eq!(wrong_solution_count(&tasks), 1);
        let mut refs = HashMap::new();
        let mut pass = result(0, Status::Pass, 1.5);
        pass.task_id = "a".into();
        refs.insert("a".to_string(), pass);
        let mut fail = result(0, Status::Fail, 0.5);
        fail.task_id = "b".into();
        refs.insert("b".to_string(), fail);

        // Without --wrong: no wrong solutions, `-` in their column.
        let checked = check_tasks(&tasks, &refs, None);
        assert_eq!(invalid_count(&checked), 1);
        let rows = validation_rows(&checked);
        assert_eq!(
            rows[0].join(","),
            "task,kind,reference,tests,time,wrong,problems"
        );
        assert_eq!(
            rows[1],
            ["a", "function", "pass", "3/3", "1.50 s", "-", "ok"]
        );
        assert_eq!(rows[2][2], "fail");
        assert!(
            rows[2][6].starts_with("reference fail: AssertionError"),
            "{rows:?}"
        );

        // With --wrong: a wrong solution that passes makes its task invalid.
        let mut wrongs = HashMap::new();
        let mut passes = result(0, Status::Pass, 1.0);
        passes.task_id = "a".into();
        wrongs.insert("a".to_string(), vec![passes]);
        let checked = check_tasks(&tasks, &refs, Some(&wrongs));
        assert_eq!(checked[0].validity.wrong_caught, Some((0, 1)));
        assert_eq!(checked[1].validity.wrong_caught, None);
        let v = validation_json(&checked);
        assert_eq!(v["invalid"], 2);
        assert_eq!(v["tasks"][0]["task_id"], "a");
        assert_eq!(v["tasks"][0]["valid"], false);
        assert_eq!(v["tasks"][0]["wrong"].as_array().unwrap().len(), 1);
        assert_eq!(v["tasks"][1]["wrong"], serde_json::json!([]));
        assert_eq!(validation_rows(&checked)[1][5], "0/1 caught");
    }

    #[test]
    fn the_runner_comparison_has_ratios_rows_and_notes() {
        let measured = |wall_s: f64, per_sample: f64, status: Status| Measured {
            startup_s: 4.0,
            wall_s,
            results: vec![
                result(0, Status::Pass, per_sample),
                result(1, status, per_sample),
            ],
            import_s: vec![2.0, 3.0],
        };
        let c = RunnerComparison {
            samples: 2,
            workers: 4,
            warm: measured(1.0, 0.5, Status::Pass),
            fresh: measured(4.0, 1.25, Status::Infra),
        };
        assert_eq!(c.heading(), "2 samples per runner, 4 in parallel");
        assert_eq!(c.disagreements(), 1);
        assert_eq!(c.infra(), 1);
        let rows = c.rows();
        assert_eq!(
            rows[1],
            [
                "warm (fork per sample)",
                "1.0 s",
                "120.0",
                "0.500 s",
                "0.250 s",
                "0.250 s"
            ]
        );
        // The fresh runner's infrastructure error is left out of its times.
        assert_eq!(
            rows[2],
            [
                "fresh process",
                "4.0 s",
                "30.0",
                "1.250 s",
                "0.250 s",
                "1.000 s"
            ]
        );
        assert_eq!(
            c.notes(),
            [
                "throughput warm / fresh: 4.0x; overhead per sample fresh / warm: 4.0x",
                "warm runners' start-up: 2.5 s import each, 4.0 s until the references had run (not in the figures above)",
                "1 samples got different statuses in the two runners (timeouts under load?)",
            ]
        );
        let v = c.to_json();
        assert_eq!(v["throughput_ratio"], 4.0);
        assert_eq!(v["warm"]["runner_import_s"], 2.5);
        assert_eq!(v["fresh"]["mean_overhead_s"], 1.0);
        assert_eq!(v["status_disagreements"], 1);
    }
}
