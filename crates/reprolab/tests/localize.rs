//! `localize` and `bench localize` end to end.

mod common;

use common::*;

#[test]
fn static_localisation_finds_the_real_d4_faults_without_training() {
    let tmp = tempfile::tempdir().unwrap();
    let out = run(reprolab(tmp.path())
        .args(["localize", "--json", "--engine", "static"])
        .arg(repo().join("benchmarks/faults/real/D4")));
    assert!(out.status.success());
    let v = json(&out);
    assert!(
        v["training_s"].is_null(),
        "static localisation trains nothing"
    );
    let answer: Vec<&str> = v["answer"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap())
        .collect();
    for t in ["HLR", "LCH"] {
        assert!(answer.contains(&t), "{answer:?}");
    }
    assert!(answer.iter().any(|a| a.starts_with("ACH")), "{answer:?}");
    for s in v["suspects"].as_array().unwrap() {
        assert!(!s["evidence"].as_str().unwrap().is_empty());
    }
}

#[test]
fn dynamic_localisation_traces_once_and_stays_quiet_on_a_correct_subject() {
    let tmp = tempfile::tempdir().unwrap();
    let out = run(reprolab(tmp.path())
        .args(["localize", "--json", "--engine", "all"])
        .arg(subject("digits-mlp")));
    assert!(out.status.success());
    let v = json(&out);
    assert!(v["training_s"].as_f64().unwrap() > 0.0);
    assert_eq!(
        v["answer"].as_array().unwrap().len(),
        0,
        "a correct subject has no confident suspect: {v}"
    );
}

#[test]
fn bench_localize_scores_the_real_faults() {
    let tmp = tempfile::tempdir().unwrap();
    let out_dir = tmp.path().join("bl");
    let v = bench_localize_static(tmp.path(), &out_dir, &repo().join("benchmarks/faults/real"));
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 6);
    for r in rows {
        let (rc, pr, f3) = (
            r["rc"].as_f64().unwrap(),
            r["pr"].as_f64().unwrap(),
            r["f3"].as_f64().unwrap(),
        );
        assert!(
            (0.0..=1.0).contains(&rc) && (0.0..=1.0).contains(&pr) && (0.0..=1.0).contains(&f3)
        );
    }
    assert!(
        std::fs::read_to_string(out_dir.join("report.md"))
            .unwrap()
            .contains("Table 5")
    );
}

/// `--only` keeps the faults whose path contains one of its parts; a selection of none is an
/// input error that names the parts.
#[test]
fn bench_localize_scores_only_the_selected_faults() {
    let tmp = tempfile::tempdir().unwrap();
    let real = repo().join("benchmarks/faults/real");
    let bench = |only: &str, out: &str| {
        run_bench_localize_static(tmp.path(), &tmp.path().join(out), &real, &["--only", only])
    };
    let done = bench("real/D1,real/D4", "two");
    assert!(done.status.success());
    let v = json(&done);
    let faults: Vec<&str> = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["fault"].as_str().unwrap())
        .collect();
    assert_eq!(faults, ["real-D1", "real-D4"], "{v}");
    let none = bench("D42", "none");
    assert_eq!(none.status.code(), Some(2));
    let err = String::from_utf8_lossy(&none.stderr);
    assert!(err.contains("--only D42"), "{err}");
}

/// The held-out GRU fault trains 3 epochs of batch 512 (a few updates in all): its real trace
/// counts the optimizer updates and the `few-updates` monitor names the batch size and the
/// epochs from it.
#[test]
fn a_training_too_short_to_learn_is_localised_from_its_update_count() {
    let tmp = tempfile::tempdir().unwrap();
    let out = run(reprolab(tmp.path())
        .args(["localize", "--json", "--engine", "dynamic"])
        .arg(repo().join("benchmarks/faults-heldout/H6")));
    assert!(out.status.success());
    let v = json(&out);
    let few: Vec<&serde_json::Value> = v["suspects"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["source"] == "few-updates")
        .collect();
    let labels: Vec<&str> = few.iter().map(|s| s["label"].as_str().unwrap()).collect();
    assert_eq!(labels, ["HBS", "HNE"], "{v}");
    let evidence = few[0]["evidence"].as_str().unwrap();
    assert!(
        evidence.contains("optimizer updates in 3 epochs"),
        "{evidence}"
    );
    assert_eq!(few[0]["suggestion"], "batch_size: 512 -> 32");
}
