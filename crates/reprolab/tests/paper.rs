//! `reprolab paper grade` end to end: PaperBench's aggregation from leaf scores, Code-Dev, and
//! errors that name the file and the node; `reprolab paper lineage` on a small corpus.

mod common;

use common::*;
use serde_json::json;

/// `reprolab paper grade . --rubric R --scores S EXTRA` in `dir`.
fn grade(
    dir: &std::path::Path,
    r: &std::path::Path,
    s: &std::path::Path,
    extra: &[&str],
) -> std::process::Output {
    run(reprolab(dir)
        .args(["paper", "grade", "."])
        .arg("--rubric")
        .arg(r)
        .arg("--scores")
        .arg(s)
        .args(extra))
}

fn rubric() -> serde_json::Value {
    let leaf = |id: &str, w: f64, cat: &str| json!({"id": id, "requirements": id, "weight": w, "sub_tasks": [], "task_category": cat});
    json!({"id": "root", "requirements": "paper", "weight": 1, "sub_tasks": [
        {"id": "a", "requirements": "method", "weight": 3, "sub_tasks": [
            leaf("a1", 1.0, "Code Development"), leaf("a2", 1.0, "Code Execution")]},
        {"id": "b", "requirements": "eval", "weight": 1, "sub_tasks": [
            leaf("b1", 2.0, "Code Development"), leaf("b2", 1.0, "Result Analysis")]}
    ]})
}

#[test]
fn grade_aggregates_as_paperbench_and_reduces_to_code_dev() {
    let tmp = tempfile::tempdir().unwrap();
    let r = config_file(tmp.path(), "rubric.json", rubric());
    let s = config_file(
        tmp.path(),
        "scores.json",
        json!({"a1": 1, "a2": 0, "b1": 1, "b2": null}),
    );
    let out = grade(tmp.path(), &r, &s, &["--json"]);
    assert_eq!(out.status.code(), Some(0));
    let g = &json(&out)["grade"];
    let expected = (3.0 * 0.5 + 2.0 / 3.0) / 4.0;
    assert!(
        (g["score"].as_f64().unwrap() - expected).abs() < 1e-9,
        "{g}"
    );
    assert_eq!(g["invalid_leaves"], 1);
    assert_eq!(g["valid_score"], false);
    assert!((g["score_over_valid"].as_f64().unwrap() - (3.0 * 0.5 + 1.0) / 4.0).abs() < 1e-9);

    let out = grade(tmp.path(), &r, &s, &["--code-dev", "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let g = &json(&out)["grade"];
    assert_eq!(g["leaves"], 2);
    assert!((g["score"].as_f64().unwrap() - 1.0).abs() < 1e-9);
}

#[test]
fn a_broken_rubric_or_score_file_is_an_input_error() {
    let tmp = tempfile::tempdir().unwrap();
    let mut bad = rubric();
    bad["sub_tasks"][0]["sub_tasks"][0]["weight"] = json!(-2);
    let r = config_file(tmp.path(), "rubric.json", bad);
    let s = config_file(tmp.path(), "scores.json", json!({"a1": 1}));
    let out = grade(tmp.path(), &r, &s, &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("rubric.json: node a1: weight is -2"));
    let r = config_file(tmp.path(), "rubric.json", rubric());
    let s = config_file(tmp.path(), "scores.json", json!({"zz": 1}));
    let out = grade(tmp.path(), &r, &s, &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("leaves the rubric does not have: zz"));
}

/// `reprolab paper lineage PAPER --corpus CORPUS EXTRA` in `dir`.
fn lineage(
    dir: &std::path::Path,
    paper: &std::path::Path,
    corpus: &std::path::Path,
    extra: &[&str],
) -> std::process::Output {
    run(reprolab(dir)
        .args(["paper", "lineage"])
        .arg(paper)
        .arg("--corpus")
        .arg(corpus)
        .args(extra))
}

/// The fixture corpus: four papers; paired-interpolation cites two others, an optimizer
/// (generic) and a paper that is not in the corpus.
fn corpus() -> (std::path::PathBuf, std::path::PathBuf) {
    let corpus = fixture("paper-corpus");
    (corpus.join("paired-interpolation/paper.md"), corpus)
}

#[test]
fn lineage_resolves_ranks_and_lists_code_and_the_unresolved() {
    let tmp = tempfile::tempdir().unwrap();
    let (paper, corpus) = corpus();
    let out = lineage(tmp.path(), &paper, &corpus, &["--top", "1", "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let l = json(&out);
    assert_eq!(l["excluded_self"], "paired-interpolation");
    assert_eq!(l["query"], "the section \"Method\"");
    // The label-smoothing paper is what the method builds on; early stopping ranks below it.
    let top = &l["resolved"][0];
    assert_eq!(top["entry"], "softened-targets");
    assert_eq!(top["rank"], 1);
    assert_eq!(top["matched_by"], "title");
    assert_eq!(top["authors"], json!(["Ashdown", "Okafor"]));
    assert_eq!(
        top["code_files"],
        json!(["code/smooth.py", "code/train.py"])
    );
    let below = &l["below_top"][0];
    assert_eq!(below["entry"], "early-stopping.md");
    assert_eq!(below["rank"], 2);
    assert!(top["score"].as_f64().unwrap() > below["score"].as_f64().unwrap());
    // Not cited, so not listed, though in the corpus.
    assert!(!l.to_string().contains("weight-averaging"));
    let unresolved = l["unresolved"].as_array().unwrap();
    assert_eq!(unresolved.len(), 2);
    assert_eq!(unresolved[0]["reason"], "not in the corpus");
    assert_eq!(unresolved[0]["generic"], "optimizer");
    assert_eq!(unresolved[1]["generic"], serde_json::Value::Null);
    assert_eq!(unresolved[1]["reference"]["year"], 2022);

    let out = lineage(tmp.path(), &paper, &corpus, &[]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("offline: only the corpus was searched"),
        "{text}"
    );
    assert!(text.contains("rank    score  title"), "{text}");
    assert!(text.contains("Ashdown, Okafor 2024"), "{text}");
    assert!(text.contains("unresolved references (2):"), "{text}");
    assert!(text.contains("generic: optimizer"), "{text}");
}

#[test]
fn lineage_input_errors_exit_2_and_name_the_path() {
    let tmp = tempfile::tempdir().unwrap();
    let (paper, corpus) = corpus();
    let out = lineage(tmp.path(), &paper, &tmp.path().join("no-corpus"), &[]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no-corpus: the corpus is not a directory"),
        "{err}"
    );
    let out = lineage(tmp.path(), &paper, &corpus, &["--top", "0"]);
    assert_eq!(out.status.code(), Some(2));
    let scan = tmp.path().join("scan.pdf");
    std::fs::write(&scan, "%PDF-1.4\nnot a real PDF").unwrap();
    let out = lineage(tmp.path(), &scan, &corpus, &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("scan.pdf: cannot read the PDF"));
}
