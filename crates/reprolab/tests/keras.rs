//! Keras 3 subjects end to end: `reprolab eval` and `reprolab trace` train the bundled
//! digits-mlp-keras (real Keras models, few epochs) through the warm workers. Skipped, with the
//! reason printed, when the managed environment cannot import Keras.

mod common;

use common::*;
use serde_json::{Value, json};

/// Why the Keras tests cannot run here, or None when the managed environment imports Keras.
fn keras_missing(dir: &std::path::Path) -> Option<String> {
    let out = run(reprolab(dir).args(["env", "--python-path"]));
    let python = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let check = std::process::Command::new(&python)
        .args(["-c", "import keras; print(keras.__version__)"])
        .env("KERAS_BACKEND", "torch")
        .output();
    match check {
        Err(e) => Some(format!(
            "cannot run the managed interpreter {python:?}: {e}"
        )),
        Ok(o) if !o.status.success() => Some(format!(
            "{python} cannot import keras: {}",
            String::from_utf8_lossy(&o.stderr)
                .lines()
                .last()
                .unwrap_or("")
        )),
        Ok(_) => None,
    }
}

/// The subject's config with the fewest epochs its search space allows.
fn short_config(dir: &std::path::Path) -> std::path::PathBuf {
    let subject_dir = subject("digits-mlp-keras");
    let mut config: Value =
        serde_json::from_str(&std::fs::read_to_string(subject_dir.join("config.json")).unwrap())
            .unwrap();
    config["epochs"] = json!(10);
    config_file(dir, "short.json", config)
}

#[test]
fn keras_subject_evaluates_and_traces() {
    let tmp = tempfile::tempdir().unwrap();
    if let Some(reason) = keras_missing(tmp.path()) {
        eprintln!("SKIPPED keras_subject_evaluates_and_traces: {reason}");
        return;
    }
    let cfg = short_config(tmp.path());

    let v = json(&run(reprolab(tmp.path())
        .args(["eval", "--json", "--runs", "2", "--config"])
        .arg(&cfg)
        .arg(subject("digits-mlp-keras"))));
    assert_eq!(v["failed"], 0, "{v}");
    for r in v["runs"].as_array().unwrap() {
        let search = r["outcome"]["search"].as_f64().unwrap();
        assert!(
            search.is_finite() && search > 0.8,
            "Keras digits-mlp learns: {r}"
        );
    }

    let out_file = tmp.path().join("trace.json");
    let out = run(reprolab(tmp.path())
        .args(["trace", "--config"])
        .arg(&cfg)
        .arg("--out")
        .arg(&out_file)
        .arg(subject("digits-mlp-keras")));
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("model (Keras): Dense(64, relu)"), "{text}");
    let t: Value = serde_json::from_str(&std::fs::read_to_string(&out_file).unwrap()).unwrap();
    let epochs = t["epochs"].as_array().unwrap();
    assert_eq!(epochs.len(), 10);
    for (i, e) in epochs.iter().enumerate() {
        assert_eq!(e["epoch"], i);
        assert!(e["loss"].as_f64().unwrap().is_finite(), "{e}");
        assert!(
            e["acc"].as_f64().is_some() && e["val_acc"].as_f64().is_some(),
            "{e}"
        );
        assert_eq!(e["nan"], false);
        let layers = e["layers"].as_array().unwrap();
        let kinds: Vec<&str> = layers.iter().map(|l| l["kind"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["Dense", "Dense", "Dense"]);
        for l in layers {
            assert!(l["grad_norm"].as_f64().unwrap() > 0.0, "{l}");
            assert!(l["weight_norm"].as_f64().unwrap() > 0.0, "{l}");
        }
    }
    assert_eq!(epochs[0]["model"]["loss"], "categorical_crossentropy");
    // A trace trains the model an evaluation trains (seed 0 both times).
    assert_eq!(t["outcome"]["search"], v["runs"][0]["outcome"]["search"]);
}

/// The bundled Keras real faults (benchmarks/faults/real-keras): listed as real faults with their
/// measured records, and one of them, D1-keras (one epoch), trained for 2 runs of its faulty and
/// of its fixed config: the softmax over one unit predicts True for every row, the fix learns.
#[test]
fn keras_real_fault_evaluates_and_its_fix_is_better() {
    let tmp = tempfile::tempdir().unwrap();
    let bench = repo().join("benchmarks/faults/real-keras");
    let out = run(reprolab(tmp.path()).args(["faults", "--json"]).arg(&bench));
    assert!(out.status.success());
    let list = json(&out);
    let faults = list.as_array().unwrap();
    assert_eq!(faults.len(), 6, "{list}");
    for f in faults {
        let rec = &f["fault"];
        assert_eq!(rec["origin"], "real", "{f}");
        assert!(rec["id"].as_str().unwrap().ends_with("-keras"), "{f}");
        assert!(rec["runs"].as_u64().is_some(), "measured: {f}");
    }
    if let Some(reason) = keras_missing(tmp.path()) {
        eprintln!("SKIPPED keras_real_fault_evaluates_and_its_fix_is_better: {reason}");
        return;
    }

    let fault = bench.join("D1-keras");
    let search = |config: &str| -> Vec<f64> {
        let v = json(&run(reprolab(tmp.path())
            .args(["eval", "--json", "--runs", "2", "--config"])
            .arg(fault.join(config))
            .arg(&fault)));
        assert_eq!(v["failed"], 0, "{v}");
        v["runs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["outcome"]["search"].as_f64().unwrap())
            .collect()
    };
    for acc in search("config.json") {
        // 82 of the 160 search rows are True.
        assert!(
            (acc - 0.5125).abs() < 1e-9,
            "the faulty program predicts True: {acc}"
        );
    }
    for acc in search("fixed.json") {
        assert!(acc > 0.9, "the fixed program learns: {acc}");
    }
}
