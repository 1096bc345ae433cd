//! `faults --measure` on a fault whose program cannot train: it stops with the first failing
//! run's traceback (as `eval` shows it), exits 1 and writes no measurement.

mod common;

use std::path::{Path, PathBuf};

use common::*;

/// A one-fault benchmark in `root`: the tiny linear subject with a fix and a fault record, its
/// train.py edited by `break_it`. Returns the benchmark directory and the fault's directory.
fn broken_benchmark(root: &Path, break_it: impl Fn(&str) -> String) -> (PathBuf, PathBuf) {
    let bench = root.join("bench");
    let fault = bench.join("broken");
    std::fs::create_dir_all(&fault).unwrap();
    let src = fixture("tiny-linear");
    for file in ["config.json", "reprolab.toml", "train.py"] {
        std::fs::copy(src.join(file), fault.join(file)).unwrap();
    }
    let config: serde_json::Value =
        serde_json::from_slice(&std::fs::read(src.join("config.json")).unwrap()).unwrap();
    let mut fixed = config.clone();
    fixed["lr"] = serde_json::json!(0.01);
    config_file(&fault, "fixed.json", fixed);
    let manifest = std::fs::read_to_string(fault.join("reprolab.toml")).unwrap();
    std::fs::write(
        fault.join("reprolab.toml"),
        format!("{manifest}\n[fix]\nconfig = \"fixed.json\"\nfaults = [\"HLR\"]\n"),
    )
    .unwrap();
    let train = std::fs::read_to_string(fault.join("train.py")).unwrap();
    let broken = break_it(&train);
    assert_ne!(broken, train, "the edit breaks train.py");
    std::fs::write(fault.join("train.py"), broken).unwrap();
    std::fs::write(
        fault.join("fault.json"),
        r#"{"id": "broken", "subject": "tiny-linear", "origin": "real", "faults": ["HLR"]}"#,
    )
    .unwrap();
    (bench, fault)
}

fn assert_fails_loudly(break_it: impl Fn(&str) -> String, expected: &[&str]) {
    let tmp = tempfile::tempdir().unwrap();
    let (bench, fault) = broken_benchmark(tmp.path(), break_it);
    let before = std::fs::read(fault.join("fault.json")).unwrap();
    let out = run(reprolab(tmp.path())
        .args(["faults", "--measure", "2"])
        .arg(&bench));
    assert_eq!(out.status.code(), Some(1), "the program failed: exit 1");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("Traceback (most recent call last)"),
        "{stderr}"
    );
    for text in expected {
        assert!(stderr.contains(text), "{text:?} in {stderr}");
    }
    assert!(stderr.contains("fault.json left unchanged"), "{stderr}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("NaN"));
    assert_eq!(std::fs::read(fault.join("fault.json")).unwrap(), before);
}

#[test]
fn a_train_py_that_raises_stops_the_measurement_with_its_traceback() {
    assert_fails_loudly(
        |t| t.replace(r#"config["lr"]"#, r#"config["learning_rate"]"#),
        &["KeyError", "learning_rate", "train.py"],
    );
}

#[test]
fn a_result_without_holdout_stops_the_measurement() {
    assert_fails_loudly(
        |t| t.replace(r#", "holdout": holdout_mae}"#, "}"),
        &["no 'holdout' key"],
    );
}
