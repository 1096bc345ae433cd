//! Keras 3 subjects end to end: `reprolab eval` and `reprolab trace` train the bundled
//! digits-mlp-keras (real Keras models, few epochs) through the warm workers, and
//! digits-mlp-keras-tf the same on Keras' TensorFlow backend (with `localize`); `repair` on a
//! TensorFlow fault and `neutrality` on a torch-backend one, both made from those subjects (lr 5).
//! Skipped, with the reason printed, when the managed environment cannot import Keras, or
//! TensorFlow cannot be installed into it.

mod common;

use common::*;
use serde_json::{Value, json};

/// The subject's config with the fewest epochs its search space allows.
fn short_config(dir: &std::path::Path) -> std::path::PathBuf {
    short_config_of(dir, "digits-mlp-keras", json!({}), "short.json")
}

/// A faulty copy of the bundled subject `name` in `dir/faults/ID`: its config with 10 epochs and
/// `changes` applied, the subject's own config (also with 10 epochs) as the known fix of
/// `faults` (a `[fix]` table, as the benchmark's faults have).
fn keras_fault(
    dir: &std::path::Path,
    name: &str,
    id: &str,
    changes: Value,
    faults: &[&str],
) -> std::path::PathBuf {
    let src = subject(name);
    let fault = dir.join("faults").join(id);
    std::fs::create_dir_all(&fault).unwrap();
    std::fs::copy(src.join("train.py"), fault.join("train.py")).unwrap();
    let fixed = short_config_of(dir, name, json!({}), "fixed.json");
    std::fs::rename(fixed, fault.join("fixed.json")).unwrap();
    let faulty = short_config_of(dir, name, changes, "config.json");
    std::fs::rename(faulty, fault.join("config.json")).unwrap();
    let manifest = std::fs::read_to_string(src.join("reprolab.toml"))
        .unwrap()
        .replace(&format!("name = \"{name}\""), &format!("name = \"{id}\""));
    std::fs::write(
        fault.join("reprolab.toml"),
        format!("{manifest}\n[fix]\nconfig = \"fixed.json\"\nfaults = {faults:?}\n"),
    )
    .unwrap();
    fault
}

/// The search metric of each run of `reprolab eval --json` (none may fail).
fn search_metrics(v: &Value) -> Vec<f64> {
    assert_eq!(v["failed"], 0, "{v}");
    v["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["outcome"]["search"].as_f64().unwrap())
        .collect()
}

/// digits-mlp-keras-tf: finite metrics that learn, the same again when retrained with the same
/// seeds, a trace with per-layer gradients (by tf.GradientTape) that trains the evaluated model,
/// and `localize` naming the learning rate of lr = 5 (as on the torch twin).
#[test]
fn keras_tensorflow_subject_evaluates_deterministically_traces_and_localizes() {
    let tmp = tempfile::tempdir().unwrap();
    if let Some(reason) = tensorflow_missing(tmp.path()) {
        eprintln!(
            "SKIPPED keras_tensorflow_subject_evaluates_deterministically_traces_and_localizes: \
             {reason}"
        );
        return;
    }
    let name = "digits-mlp-keras-tf";
    let cfg = short_config_of(tmp.path(), name, json!({}), "short.json");
    let eval = |extra: &[&str]| {
        json(&run(reprolab(tmp.path())
            .args(["eval", "--json", "--runs", "2", "--config"])
            .arg(&cfg)
            .args(extra)
            .arg(subject(name))))
    };
    let first = eval(&[]);
    let metrics = search_metrics(&first);
    for m in &metrics {
        assert!(
            m.is_finite() && *m > 0.8,
            "Keras on TensorFlow learns: {first}"
        );
    }
    assert_eq!(
        search_metrics(&eval(&["--no-cache"])),
        metrics,
        "the same seeds train the same models"
    );

    let t = keras_trace(tmp.path(), &cfg, name, "tensorflow");
    let epochs = t["epochs"].as_array().unwrap();
    for e in epochs {
        assert!(e["loss"].as_f64().unwrap().is_finite(), "{e}");
        assert_eq!(e["nan"], false);
        let layers = e["layers"].as_array().unwrap();
        assert_eq!(layers.len(), 3, "{e}");
        for l in layers {
            assert!(l["grad_norm"].as_f64().unwrap() > 0.0, "{l}");
            assert!(l["weight_norm"].as_f64().unwrap() > 0.0, "{l}");
            assert!(l["mean_abs_out"].as_f64().is_some(), "{l}");
        }
    }
    assert_eq!(
        t["outcome"]["search"],
        first["runs"][0]["outcome"]["search"]
    );

    // The config the torch twin was measured with (docs/keras.md), but lr = 5.
    let high_lr = short_config_of(
        tmp.path(),
        name,
        json!({"lr": 5.0, "epochs": 20}),
        "high-lr.json",
    );
    let v = json(&run(reprolab(tmp.path())
        .args(["localize", "--json", "--engine", "all", "--config"])
        .arg(&high_lr)
        .arg(subject(name))));
    assert_eq!(v["answer"][0], "HLR", "{v}");
}

/// `reprolab trace` of the bundled Keras subject `name` with `cfg`: its summary names the Keras
/// model and the backend it trained on, and its trace file holds ten epochs on that backend.
fn keras_trace(dir: &std::path::Path, cfg: &std::path::Path, name: &str, backend: &str) -> Value {
    let out_file = dir.join("trace.json");
    let out = run(reprolab(dir)
        .args(["trace", "--config"])
        .arg(cfg)
        .arg("--out")
        .arg(&out_file)
        .arg(subject(name)));
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("model (Keras): Dense(64, relu)"), "{text}");
    assert!(text.contains(&format!("; backend {backend}")), "{text}");
    let t: Value = serde_json::from_str(&std::fs::read_to_string(&out_file).unwrap()).unwrap();
    assert_eq!(t["epochs"].as_array().unwrap().len(), 10);
    assert_eq!(t["epochs"][0]["model"]["backend"], backend);
    t
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

    let t = keras_trace(tmp.path(), &cfg, "digits-mlp-keras", "torch");
    let epochs = t["epochs"].as_array().unwrap();
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
        search_metrics(&v)
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

/// `reprolab repair` on a Keras fault that trains on TensorFlow: digits-mlp-keras-tf with lr = 5
/// (HLR; the subject's own lr 0.001 is the known fix), the rules engine and a tiny budget (2
/// trials). The trace shows the divergence (a loss of ~2e4 in epoch 0, then hidden layers
/// without gradient), whose first fix is the optimizer's usual rate; every validation run
/// finishes and the patch is confirmed on the holdout split; the validation's trainings are the
/// ones `eval` finds in the cache, and a trace of the patch shows Keras on TensorFlow training the
/// model the validation's first run trained.
#[test]
fn keras_tensorflow_fault_is_repaired() {
    let tmp = tempfile::tempdir().unwrap();
    if let Some(reason) = tensorflow_missing(tmp.path()) {
        eprintln!("SKIPPED keras_tensorflow_fault_is_repaired: {reason}");
        return;
    }
    let fault = keras_fault(
        tmp.path(),
        "digits-mlp-keras-tf",
        "digits-tf-HLR",
        json!({"lr": 5.0}),
        &["HLR"],
    );
    let runs = 6;
    let out = run(reprolab(tmp.path())
        .args([
            "repair", "--json", "--engine", "rules", "--trials", "2", "--runs",
        ])
        .arg(runs.to_string())
        .arg(&fault));
    let v = json(&out);
    let val = &v["run"]["validation"];
    for group in ["faulty", "patch", "gt"] {
        let samples = val[group]["samples"].as_array().unwrap();
        assert_eq!(samples.len(), runs, "{group}: {val}");
        assert!(
            samples
                .iter()
                .all(|s| s.as_f64().is_some_and(f64::is_finite)),
            "every {group} run finished: {val}"
        );
    }
    assert_eq!(v["repaired"], true, "{}", v["verdict"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(val["gt_types"], json!(["HLR"]), "{val}");
    let rules = &v["run"]["rules"];
    assert_eq!(rules["symptoms"][0]["name"], "diverged", "{rules}");
    assert_eq!(
        rules["attempts"][0]["fix"], "lr=0.001 (for adam)",
        "{rules}"
    );
    assert_eq!(rules["attempts"][0]["accepted"], true, "{rules}");
    let patch_file = tmp.path().join(v["patch_file"].as_str().unwrap());

    // The validation's runs of the patch: in the cache (nothing trains), the same holdout values.
    let e = json(&run(reprolab(tmp.path())
        .args(["eval", "--json", "--runs"])
        .arg(runs.to_string())
        .arg("--config")
        .arg(&patch_file)
        .arg(&fault)));
    let evaluated: Vec<&Value> = e["runs"].as_array().unwrap().iter().collect();
    assert!(evaluated.iter().all(|r| r["cached"] == true), "{e}");
    let holdout: Vec<f64> = evaluated
        .iter()
        .map(|r| r["outcome"]["holdout"].as_f64().unwrap())
        .collect();
    let validated: Vec<f64> = val["patch"]["samples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_f64().unwrap())
        .collect();
    assert_eq!(holdout, validated);
    // Seed 0 traced: Keras on TensorFlow, the model of the validation's first run.
    let out_file = tmp.path().join("trace.json");
    let out = run(reprolab(tmp.path())
        .args(["trace", "--config"])
        .arg(&patch_file)
        .arg("--out")
        .arg(&out_file)
        .arg(&fault));
    assert!(out.status.success());
    let t: Value = serde_json::from_str(&std::fs::read_to_string(&out_file).unwrap()).unwrap();
    assert_eq!(t["epochs"][0]["model"]["backend"], "tensorflow");
    assert_eq!(t["outcome"]["holdout"].as_f64(), Some(validated[0]));
}

/// `reprolab neutrality` on a Keras fault (digits-mlp-keras with lr = 5, the subject's lr 0.001
/// as the known fix), with few runs and nodes: the BFS starts from the fix, every neighbour
/// tried is trained by Keras and judged, each alternative found restores the learning rate and
/// changes one hyperparameter of the fix, and a rerun trains nothing.
#[test]
fn neutrality_on_a_keras_fault() {
    let tmp = tempfile::tempdir().unwrap();
    if let Some(reason) = keras_missing(tmp.path()) {
        eprintln!("SKIPPED neutrality_on_a_keras_fault: {reason}");
        return;
    }
    let fault = keras_fault(
        tmp.path(),
        "digits-mlp-keras",
        "digits-keras-HLR",
        json!({"lr": 5.0}),
        &["HLR"],
    );
    let neutrality = || {
        let out = run(reprolab(tmp.path())
            .args([
                "neutrality",
                "--json",
                "--nodes",
                "3",
                "--runs",
                "3",
                "--out",
            ])
            .arg(tmp.path().join("graph"))
            .arg(&fault));
        assert!(out.status.success());
        json(&out)
    };
    let v = neutrality();
    let s = &v["summary"];
    assert_eq!(s["tried"], 3, "{s}");
    assert_eq!(s["stop"], "nodes");
    assert_eq!(s["runs"], 3);
    // The fix's runs, then 3 per neighbour (one stage: 3 runs are the minimum).
    assert_eq!(s["trainings"], 3 + 3 * 3, "{s}");
    assert_eq!(s["trained"], s["trainings"]);

    let graph: Value = serde_json::from_str(
        &std::fs::read_to_string(tmp.path().join("graph/graph.json")).unwrap(),
    )
    .unwrap();
    let nodes = graph["result"]["nodes"].as_array().unwrap();
    assert_eq!(
        nodes[0]["config"]["lr"], 0.001,
        "the BFS starts from the fix"
    );
    let stored = stored_alternatives(&fault, s);
    let alts = stored["alternatives"].as_array().unwrap();
    assert!(!alts.is_empty(), "a fix has neutral neighbours: {s}");
    for a in alts {
        // The first neighbours of the fix change unit0, then act0 (space order).
        assert_eq!(a["patch"]["lr"], 0.001, "{a}");
        assert_eq!(a["patch"].as_object().unwrap().len(), 2, "{a}");
        assert_eq!(a["complexity"], 1, "{a}");
        assert_eq!(a["faults"][0], "HLR", "{a}");
    }

    let again = neutrality();
    assert_eq!(again["summary"]["trained"], 0, "{}", again["summary"]);
    assert_eq!(
        again["alternatives"]["alternatives"],
        stored["alternatives"]
    );
}

/// A Keras program that hard-codes its layers (config.json names only epochs and batch size):
/// `localize --engine all` reads the architecture from the trace's `model` record, names the
/// keys it read there, and finds the sigmoid output under categorical cross-entropy that the
/// static engine, reading the config alone, cannot see.
#[test]
fn localize_reads_a_hardcoded_keras_architecture_from_the_trace() {
    let tmp = tempfile::tempdir().unwrap();
    if let Some(reason) = keras_missing(tmp.path()) {
        eprintln!("SKIPPED localize_reads_a_hardcoded_keras_architecture_from_the_trace: {reason}");
        return;
    }
    let dir = tmp.path().join("hardcoded");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("train.py"),
        r#"import keras
import numpy as np
from sklearn.datasets import load_digits


def train(config, seed):
    keras.utils.set_random_seed(seed)
    x, y = load_digits(return_X_y=True)
    x = (x / 16.0).astype(np.float32)
    model = keras.Sequential([keras.Input(shape=(64,)),
                              keras.layers.Dense(32, activation="relu"),
                              keras.layers.Dense(10),
                              keras.layers.Activation("sigmoid")])
    model.compile(optimizer=keras.optimizers.Adam(learning_rate=0.001),
                  loss="categorical_crossentropy", metrics=["accuracy"])
    model.fit(x[:1200], keras.utils.to_categorical(y[:1200], 10), epochs=config["epochs"],
              batch_size=config["batch_size"], verbose=0)
    acc = float(np.mean(model.predict(x[1200:], verbose=0).argmax(axis=1) == y[1200:]))
    return {"search": acc, "holdout": acc}
"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("config.json"),
        r#"{"batch_size": 64, "epochs": 3}"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("reprolab.toml"),
        r#"name = "hardcoded-keras"
task = "classification"
framework = "keras"
config = "config.json"

[dataset]
name = "digits"

[entry]
callable = "train.py:train"

[metric]
name = "accuracy"
goal = "max"

[space]
batch_size = { type = "choice", values = [32, 64], fault = "HBS" }
epochs = { type = "choice", values = [3, 6], fault = "HNE" }
"#,
    )
    .unwrap();

    let local = |engine: &str| {
        json(&run(reprolab(tmp.path())
            .args(["localize", "--json", "--engine", engine])
            .arg(&dir)))
    };
    let alone = local("static");
    assert_eq!(alone["answer"], json!([]), "{alone}");
    let traced = local("all");
    let read: Vec<&str> = traced["from_program"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap())
        .collect();
    for key in ["act0", "act1", "unit1", "ki0", "loss", "optimizer", "lr"] {
        assert!(
            read.contains(&key),
            "{key} not read from the model: {traced}"
        );
    }
    assert_eq!(traced["answer"][0], "ACH(1)", "{traced}");
    let top = &traced["suspects"][0];
    assert_eq!(
        top["suggestion"], "act1 (in the program, not in the config): sigmoid -> softmax",
        "{top}"
    );
}
