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
        // Repaired (exit 0, a patch file) exactly when the holdout validation confirms the
        // final patch; the verdict says which, in words.
        let repaired = v["repaired"].as_bool().unwrap();
        assert_eq!(repaired, out.status.code() == Some(0), "{engine}");
        assert_eq!(run["repaired"], repaired);
        let verdict = v["verdict"].as_str().unwrap();
        assert_eq!(verdict.starts_with("repaired: "), repaired, "{verdict}");
        let confirmed = run["minimized"]["validation"]["significant"] == true
            || run["validation"]["significant"] == true;
        assert_eq!(repaired, confirmed, "{engine}: {verdict}");
        assert_eq!(v["patch_file"].is_string(), repaired, "{engine}");
        if !repaired && run["validation"].is_object() {
            assert!(
                verdict.starts_with("not repaired: the best patch found was "),
                "{verdict}"
            );
        }
        assert_eq!(run["budget"]["spec"], "6 trials");
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
        }
        if engine == "rules" {
            assert!(run["rules"].is_object());
            // Four runs cannot confirm a gain (the exact Wilcoxon p is at least 0.125), so the
            // rules engine never stops as repaired here.
            assert_ne!(run["search"]["stop"], "repaired");
        }
    }
}

#[test]
fn a_time_budget_is_stated_in_seconds_and_trainings_of_the_default_config() {
    let tmp = tempfile::tempdir().unwrap();
    let out = run(reprolab(tmp.path())
        .args([
            "repair", "--engine", "random", "--budget", "3x", "--runs", "2", "--seed", "3",
        ])
        .arg(d7()));
    assert!(matches!(out.status.code(), Some(0) | Some(1)));
    let text = String::from_utf8_lossy(&out.stdout);
    // D7 has a [fix]: the budget is counted in trainings of it.
    let line = text
        .lines()
        .find(|l| l.starts_with("budget: 3x = "))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        line.contains(" s of training = ") && line.contains("trainings of the default config ("),
        "{line}"
    );
    // The verdict comes last but for the file and cache lines; two runs confirm nothing.
    assert!(
        text.lines().any(|l| l.starts_with("not repaired: ")),
        "{text}"
    );
    assert!(!text.contains("patched config written to"), "{text}");
    assert!(text.contains("no patched config written"), "{text}");

    let out = run(reprolab(tmp.path())
        .args([
            "repair", "--json", "--engine", "random", "--budget", "3x", "--runs", "2", "--seed",
            "3",
        ])
        .arg(d7()));
    let v = json(&out);
    let b = &v["run"]["budget"];
    let f = |k: &str| b[k].as_f64().unwrap_or_else(|| panic!("{k}: {b}"));
    assert_eq!(b["spec"], "3x");
    assert_eq!(f("multiple"), 3.0);
    assert!(
        (f("reference_s") - f("faulty_s").max(f("default_s"))).abs() < 1e-9,
        "{b}"
    );
    assert!((f("seconds") - 3.0 * f("reference_s")).abs() < 1e-6, "{b}");
    assert!(f("trainings") >= 3.0 - 1e-9, "{b}");
    assert_eq!(v["run"]["search"]["budget_s"].as_f64(), Some(f("seconds")));
    assert_eq!(v["repaired"], false, "two runs cannot confirm a repair");
    assert!(v["patch_file"].is_null());
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
            "4x,8x",
            // Two arms of the grid's four: 8x never runs.
            "--arms",
            "random@4x,bohb@4x",
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
    let done = before.lines().count();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains(&format!("resuming: {done} of 4 cells are already in")),
        "{said}"
    );
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
    assert!(
        html.contains("Anytime at 4x"),
        "the anytime curves of rows with histories"
    );
    // The report names the arms that ran, not the grid's: no 8x anywhere.
    let md = std::fs::read_to_string(out_dir.join("report.md")).unwrap();
    assert!(!md.contains("8x"), "{md}");

    // An arm outside the grid is a usage error that lists the grid.
    let out = run(reprolab(tmp.path())
        .args([
            "bench",
            "repair",
            "--engines",
            "random",
            "--budgets",
            "4x",
            "--arms",
            "bohb@4x",
            "--out",
        ])
        .arg(tmp.path().join("other"))
        .arg(repo().join("benchmarks/faults/real")));
    assert_eq!(out.status.code(), Some(2));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("\"bohb@4x\"") && said.contains("random@4x"),
        "{said}"
    );
}

#[test]
fn pruned_trials_are_recorded_and_never_the_patch() {
    // D7 logs val_mae (goal min) per epoch: after 5 finished trials, random search's median
    // pruner stops the trainings behind the median curve.
    let tmp = tempfile::tempdir().unwrap();
    let out = run(reprolab(tmp.path())
        .args([
            "repair", "--json", "--engine", "random", "--trials", "14", "--runs", "3", "--seed",
            "2", "--prune", "median",
        ])
        .arg(d7()));
    assert!(matches!(out.status.code(), Some(0) | Some(1)));
    let v = json(&out);
    let search = &v["run"]["search"];
    let trials = search["trials"].as_array().unwrap();
    assert_eq!(trials.len(), 14);
    // The first five finished trials set the thresholds: none of them is pruned.
    assert!(trials[..5].iter().all(|t| t.get("pruned").is_none()));
    let pruned: Vec<&serde_json::Value> = trials
        .iter()
        .filter(|t| t.get("pruned").is_some())
        .collect();
    assert!(!pruned.is_empty(), "nothing pruned: {search}");
    for t in &pruned {
        // Recorded as pruned, with the epoch it stopped at, and no result.
        assert!(t["pruned"]["epoch"].as_u64().is_some(), "{t}");
        assert!(t["value"].is_null(), "{t}");
    }
    // The best trial, and so the patch, is a trial that trained to its end.
    if let Some(best) = search["best"].as_object() {
        assert!(best.get("pruned").is_none(), "{best:?}");
        assert!(
            !pruned.iter().any(|t| t["number"] == best["number"]),
            "the best is a pruned trial"
        );
    }
    // The store holds the pruned trainings as such, with the epochs they ran.
    let db = rusqlite::Connection::open(tmp.path().join("store.db")).unwrap();
    let stored: Vec<(String, String)> = db
        .prepare("SELECT outcome, epochs FROM evaluations WHERE outcome_kind = 'pruned'")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        stored.len(),
        pruned.len(),
        "one stored evaluation per pruned trial"
    );
    for (outcome, epochs) in &stored {
        let o: serde_json::Value = serde_json::from_str(outcome).unwrap();
        let e: Vec<serde_json::Value> = serde_json::from_str(epochs).unwrap();
        assert_eq!(e.len() as u64, o["epoch"].as_u64().unwrap() + 1, "{o}");
    }
    // Without --prune the same search trains every trial to its end (and never reads a pruned
    // result from the cache).
    let out = run(reprolab(tmp.path())
        .args([
            "repair", "--json", "--engine", "random", "--trials", "14", "--runs", "3", "--seed",
            "2",
        ])
        .arg(d7()));
    let v = json(&out);
    let trials = v["run"]["search"]["trials"].as_array().unwrap();
    assert!(trials.iter().all(|t| t.get("pruned").is_none()));
}
