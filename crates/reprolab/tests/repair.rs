//! Repair end to end on a tiny real fault (D7: y = 5x with a learning rate too small), every
//! engine, and `bench repair` resuming after a kill.

mod common;

use std::time::{Duration, Instant};

use common::*;

fn d7() -> std::path::PathBuf {
    repo().join("benchmarks/faults/real/D7")
}

#[test]
fn every_engine_repairs_a_tiny_fault_end_to_end() {
    let tmp = tempfile::tempdir().unwrap();
    for engine in ["random", "tpe", "bohb", "rules", "guided"] {
        let out = run(reprolab(tmp.path())
            .args([
                "repair", "--json", "--engine", engine, "--trials", "6", "--runs", "4",
            ])
            .arg(d7()));
        assert!(matches!(out.status.code(), Some(0) | Some(1)), "{engine}");
        let v = json(&out);
        let run = &v["run"];
        assert_eq!(run["search"]["engine"], engine);
        let trials = run["search"]["trials"].as_array().unwrap();
        assert!(!trials.is_empty(), "{engine}");
        assert_eq!(
            trials[0]["number"], 0,
            "the faulty config is the first trial"
        );
        if let Some(val) = run["validation"].as_object() {
            assert_eq!(val["runs"], 4);
            assert!(val["complexity"].as_f64().unwrap() > 0.0);
            // D7's ground truth is known: IR is computed against it.
            assert!(val["gt"].is_object());
            assert!(v["patch_file"].is_string());
        }
        if engine == "rules" {
            assert!(run["rules"].is_object());
        }
    }
}

#[test]
fn repair_with_minimize_keeps_a_significant_smaller_patch() {
    let tmp = tempfile::tempdir().unwrap();
    let out = run(reprolab(tmp.path())
        .args([
            "repair",
            "--json",
            "--engine",
            "random",
            "--trials",
            "12",
            "--runs",
            "6",
            "--seed",
            "1",
            "--minimize",
        ])
        .arg(d7()));
    let v = json(&out);
    let run = &v["run"];
    if run["validation"]["significant"] == true
        && run["validation"]["changed"].as_array().unwrap().len() > 1
    {
        let m = &run["minimized"];
        assert!(
            m["result"]["changed"].as_array().unwrap().len()
                <= run["validation"]["changed"].as_array().unwrap().len()
        );
        assert_eq!(m["validation"]["significant"], true, "{m}");
    }
}

#[test]
fn bench_repair_writes_the_report_and_resumes_after_a_kill() {
    let tmp = tempfile::tempdir().unwrap();
    let out_dir = tmp.path().join("bench");
    let args = |cmd: &mut std::process::Command| {
        cmd.args([
            "bench",
            "repair",
            "--engines",
            "random,bohb",
            "--budgets",
            "4x",
            "--repeats",
            "2",
            "--runs",
            "3",
            "--only",
            "D7",
            "--out",
        ])
        .arg(&out_dir)
        .arg(repo().join("benchmarks/faults/real"));
    };
    let mut cmd = reprolab(tmp.path());
    args(&mut cmd);
    let mut child = cmd
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let results = out_dir.join("results.jsonl");
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        assert!(Instant::now() < deadline, "no cell finished in time");
        std::thread::sleep(Duration::from_millis(200));
        if std::fs::read_to_string(&results).is_ok_and(|s| s.lines().count() >= 1) {
            break;
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let before = std::fs::read_to_string(&results).unwrap();
    let first = before.lines().next().unwrap().to_string();

    let mut cmd = reprolab(tmp.path());
    args(&mut cmd);
    let out = run(&mut cmd);
    assert!(out.status.success());
    let after = std::fs::read_to_string(&results).unwrap();
    assert_eq!(
        after.lines().count(),
        4,
        "2 engines x 1 budget x 2 repeats, each once"
    );
    assert_eq!(
        after.lines().next().unwrap(),
        first,
        "finished cells are not recomputed"
    );
    let html = std::fs::read_to_string(out_dir.join("report.html")).unwrap();
    assert!(html.contains("<svg") && html.contains("Table 9"));
    assert!(out_dir.join("report.md").exists());
}
