//! Helpers of the crate's unit tests: a sample result and function tasks.

use crate::outcome::{Failure, Role, SampleResult, Status};
use crate::task::{DataType, Labels, Stage, Task, TaskType};

/// A result of sample `sample` of task `t` (3 of 3 tests, 0.25 s of them), with an
/// `AssertionError` of a long first line unless it passed.
pub fn result(sample: u32, status: Status, wall_s: f64) -> SampleResult {
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

/// Function task `t` without wrong solutions.
pub fn task() -> Task {
    function_task("t", &[])
}

/// A function task `id` (entry point `f`) with these known-wrong solutions.
pub fn function_task(id: &str, wrong: &[&str]) -> Task {
    let line = serde_json::json!({
        "id": id, "prompt": "p", "entry_point": "f", "reference": "def f(): pass",
        "test": "def test_f(): pass", "wrong": wrong,
        "labels": {"stage": "training", "task": "general", "data": "image"},
    });
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tasks.jsonl");
    std::fs::write(&path, line.to_string()).unwrap();
    crate::load_tasks(&path).unwrap().remove(0)
}
