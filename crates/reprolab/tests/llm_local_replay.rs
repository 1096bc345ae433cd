//! Every LLM path, offline, on real model output: answers recorded from the embedded
//! SmolLM2-135M (`--llm local:smollm2`) and replayed here with `--llm replay:DIR`, through
//! `localize --engine llm`, `repair --engine llm`, `repair --engine llm-refine` and
//! `codegen run --llm`. The small model's answers are mostly prose that describes the code; the
//! point is that the pipelines take whatever it emits without a crash and report it.
//!
//! A changed prompt changes the request hash and the replay fails with a "no recording" error.
//! Re-record from the repository root with (each command exactly as the test runs it):
//!
//! ```sh
//! R=crates/reprolab/tests/fixtures/cassettes/smollm2; D7=benchmarks/faults/real/D7
//! reprolab localize $D7 --engine llm --llm local:smollm2 --llm-record $R
//! reprolab repair $D7 --engine llm --samples 2 --temperature 0.7 --budget 20x --runs 6 --llm local:smollm2 --llm-record $R
//! reprolab repair $D7 --engine llm-refine --samples 1 --rounds 2 --budget 20x --runs 6 --llm local:smollm2 --llm-record $R
//! reprolab codegen run --samples 1 --only fn/scale,fn/moving_average,repo/clip \
//!   crates/reprolab/tests/fixtures/codegen/tasks.jsonl --out /tmp/cg --llm local:smollm2 --llm-record $R
//! ```

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::*;

fn cassettes() -> PathBuf {
    fixture("cassettes/smollm2")
}

fn d7() -> PathBuf {
    repo().join("benchmarks/faults/real/D7")
}

/// A `reprolab` command answering from the SmolLM2 recordings only.
fn cmd(dir: &Path) -> Command {
    let mut c = reprolab(dir);
    for var in ["REPROLAB_LLM_CONFIG", "OPENAI_API_KEY", "OPENAI_BASE_URL"] {
        c.env_remove(var);
    }
    c.env("REPROLAB_LLM", format!("replay:{}", cassettes().display()));
    c
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Exit 0 (a result) or 1 (a negative verdict), never a usage error or a crash; and no
/// request went unanswered by the recordings.
fn assert_finished(out: &Output) {
    let err = stderr(out);
    assert!(!err.contains("no recording"), "a prompt changed: {err}");
    assert!(matches!(out.status.code(), Some(0 | 1)), "{err}");
}

#[test]
fn local_model_localisation_replays_offline() {
    let tmp = tempfile::tempdir().unwrap();
    let out = run(cmd(tmp.path())
        .args(["--json", "localize"])
        .arg(d7())
        .args(["--engine", "llm"]));
    assert_finished(&out);
    let v = json(&out);
    assert_eq!(v["engine"], "llm");
    assert!(v["answer"].is_array());
    let llm = &v["llm"];
    assert_eq!(llm["answers"].as_array().unwrap().len(), 5, "{llm}");
    let mapped = llm["mapped_fraction"].as_f64().unwrap_or(0.0);
    assert!((0.0..=1.0).contains(&mapped));
}

/// `repair D7 ENGINE_ARGS --budget 20x --runs 6 --json` from the recordings: its JSON, after
/// checking that it finished.
fn repair_d7(engine_args: &[&str]) -> serde_json::Value {
    let tmp = tempfile::tempdir().unwrap();
    let out = run(cmd(tmp.path())
        .args(["--json", "repair"])
        .arg(d7())
        .args(engine_args)
        .args(["--budget", "20x", "--runs", "6"]));
    assert_finished(&out);
    json(&out)
}

#[test]
fn local_model_repair_replays_offline() {
    let v = repair_d7(&["--engine", "llm", "--samples", "2", "--temperature", "0.7"]);
    let suggestions = v["run"]["llm"]["suggestions"].as_array().unwrap();
    assert_eq!(suggestions.len(), 2);
    for s in suggestions {
        // Each answer is either used (a patch in the space) or its problem is recorded.
        assert!(
            s["patch"].is_object() || s["parse_error"].is_string() || s["rejected"].is_array(),
            "{s}"
        );
    }
    // The faulty config is trial 0; every usable patch is one more trial.
    let usable = suggestions
        .iter()
        .filter(|s| s["patch"].as_object().is_some_and(|p| !p.is_empty()))
        .count();
    let search = &v["run"]["search"];
    assert_eq!(search["engine"], "llm");
    assert!(
        search["trials"].as_array().unwrap().len() <= 1 + usable,
        "{search}"
    );
}

#[test]
fn local_model_refine_replays_offline() {
    let v = repair_d7(&["--engine", "llm-refine", "--samples", "1", "--rounds", "2"]);
    assert_eq!(v["run"]["search"]["engine"], "llm-refine");
    assert_eq!(v["run"]["llm"]["suggestions"].as_array().unwrap().len(), 2);
}

#[test]
fn local_model_codegen_replays_offline() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let out = run(cmd(tmp.path())
        .env("TMPDIR", tmp.path())
        .args(["codegen", "run", "--json", "--samples", "1", "--only"])
        .arg("fn/scale,fn/moving_average,repo/clip")
        .arg(fixture("codegen/tasks.jsonl"))
        .arg("--out")
        .arg(&dir));
    assert_finished(&out);
    let results = std::fs::read_to_string(dir.join("results.jsonl")).unwrap();
    let rows: Vec<serde_json::Value> = results
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 3);
    for r in &rows {
        assert!(r["status"].is_string(), "{r}");
    }
    assert!(dir.join("report.md").is_file());
}
