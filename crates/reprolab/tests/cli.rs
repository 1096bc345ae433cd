//! The verbs end to end on the bundled subjects: eval, the cache after a kill, compare, trace,
//! env, manifest errors and exit codes.

mod common;

use std::time::{Duration, Instant};

use common::*;
use serde_json::json;

#[test]
fn eval_reports_both_splits_and_every_run() {
    let tmp = tempfile::tempdir().unwrap();
    let out = run(reprolab(tmp.path())
        .args(["eval", "--json", "--runs", "3"])
        .arg(subject("digits-mlp")));
    assert!(out.status.success());
    let v = json(&out);
    assert_eq!(v["runs"].as_array().unwrap().len(), 3);
    let seeds: Vec<u64> = v["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["seed"].as_u64().unwrap())
        .collect();
    assert_eq!(seeds, vec![0, 1, 2]);
    for split in ["search", "holdout"] {
        let s = &v["summary"][split];
        assert_eq!(s["n"], 3);
        assert!(
            s["mean"].as_f64().unwrap() > 0.8,
            "digits-mlp should learn: {s}"
        );
        assert!(s["ci95"][0].as_f64().unwrap() <= s["mean"].as_f64().unwrap());
    }
    // Distinct seeds give distinct trainings.
    let holdouts: Vec<f64> = v["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["outcome"]["holdout"].as_f64().unwrap())
        .collect();
    assert!(
        holdouts.iter().any(|h| *h != holdouts[0])
            || v["runs"][0]["outcome"]["search"] != v["runs"][1]["outcome"]["search"]
    );

    // The same command again is answered from the store.
    let again = json(&run(reprolab(tmp.path())
        .args(["eval", "--json", "--runs", "3"])
        .arg(subject("digits-mlp"))));
    assert_eq!(again["cached"], 3);
    assert_eq!(again["summary"], v["summary"]);
    // --no-cache retrains.
    let fresh = json(&run(reprolab(tmp.path())
        .args(["eval", "--json", "--runs", "1", "--no-cache"])
        .arg(subject("digits-mlp"))));
    assert_eq!(fresh["cached"], 0);
}

#[test]
fn a_killed_eval_resumes_without_retraining() {
    let tmp = tempfile::tempdir().unwrap();
    let store_path = tmp.path().join("store.db");
    let mut child = reprolab(tmp.path())
        .args(["eval", "--json", "--runs", "8", "-j", "1"])
        .arg(subject("digits-mlp"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(300);
    let finished_before_kill = loop {
        assert!(Instant::now() < deadline, "no evaluation finished in time");
        std::thread::sleep(Duration::from_millis(100));
        if let Ok(store) = reprolab_store::Store::open(&store_path) {
            let n = store.count_evaluations().unwrap();
            if n >= 2 {
                break n;
            }
        }
    };
    child.kill().unwrap();
    child.wait().unwrap();
    let store = reprolab_store::Store::open(&store_path).unwrap();
    let kept = store.count_evaluations().unwrap();
    assert!(kept >= finished_before_kill);
    drop(store);

    let v = json(&run(reprolab(tmp.path())
        .args(["eval", "--json", "--runs", "8"])
        .arg(subject("digits-mlp"))));
    assert_eq!(
        v["cached"].as_u64().unwrap(),
        kept,
        "every evaluation finished before the kill is reused"
    );
    assert_eq!(v["failed"], 0);
    assert_eq!(v["summary"]["holdout"]["n"], 8);
}

#[test]
fn compare_finds_a_broken_learning_rate_worse_and_a_config_equivalent_to_itself() {
    let tmp = tempfile::tempdir().unwrap();
    let subject_dir = subject("digits-mlp");
    let mut config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(subject_dir.join("config.json")).unwrap())
            .unwrap();
    config["lr"] = json!(5.0);
    let faulty = config_file(tmp.path(), "faulty.json", config);
    let out = run(reprolab(tmp.path())
        .args(["compare", "--json", "--runs", "6", "--b"])
        .arg(&faulty)
        .arg(&subject_dir));
    assert_eq!(
        out.status.code(),
        Some(1),
        "a worse B is a negative verdict"
    );
    let v = json(&out);
    assert_eq!(v["comparison"]["verdict"], "worse", "{v}");
    assert!(v["comparison"]["cohens_d"].as_f64().unwrap() < -0.5);
    assert_eq!(v["diff"][0]["key"], "lr");

    // The same config: not significantly different, and equivalent within a margin (TOST).
    let same = run(reprolab(tmp.path())
        .args([
            "compare", "--json", "--runs", "6", "--margin", "0.01", "--b",
        ])
        .arg(subject_dir.join("config.json"))
        .arg(&subject_dir));
    let v = json(&same);
    assert_eq!(v["comparison"]["verdict"], "not_significant");
    assert_eq!(v["comparison"]["equivalence"]["equivalent"], true, "{v}");
    assert_eq!(v["comparison"]["equivalence"]["p_value"], 1.0 / 64.0);
    // The broken learning rate is not equivalent within the same margin (cached runs).
    let text = run(reprolab(tmp.path())
        .args(["compare", "--runs", "6", "--margin", "0.01", "--b"])
        .arg(&faulty)
        .arg(&subject_dir));
    let stdout = String::from_utf8_lossy(&text.stdout);
    assert!(
        stdout.contains("equivalence: not shown within ±0.01"),
        "{stdout}"
    );
    assert_eq!(
        v["a"]["runs"][0]["cached"], true,
        "the A runs of the first comparison were reused"
    );
}

#[test]
fn trace_records_per_epoch_and_per_layer_signals() {
    let tmp = tempfile::tempdir().unwrap();
    let out_file = tmp.path().join("trace.json");
    let out = run(reprolab(tmp.path())
        .args(["trace", "--out"])
        .arg(&out_file)
        .arg(subject("digits-mlp")));
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("grad_norm"), "{text}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out_file).unwrap()).unwrap();
    let epochs = v["epochs"].as_array().unwrap();
    assert!(epochs.len() >= 2);
    let layers = epochs[0]["layers"].as_array().unwrap();
    assert!(layers.len() >= 2);
    for l in layers {
        assert!(l["grad_norm"].as_f64().unwrap() > 0.0, "{l}");
        assert!(l["weight_norm"].as_f64().unwrap() > 0.0, "{l}");
    }
    assert!(epochs[0]["loss"].as_f64().is_some());
    assert_eq!(epochs[0]["nan"], false);

    // Beside the JSON, a page of plots: learning curves and one line per layer.
    let html = std::fs::read_to_string(out_file.with_extension("html")).unwrap();
    assert!(text.contains("trace.html"), "{text}");
    for caption in [
        "Loss per epoch",
        "Metrics per epoch",
        "Gradient norm per layer",
    ] {
        assert!(html.contains(caption), "{caption}");
    }
    let svg_start = html.find("Gradient norm per layer</text>").unwrap();
    let svg_end = svg_start + html[svg_start..].find("</svg>").unwrap();
    assert_eq!(
        html[svg_start..svg_end].matches("<polyline").count(),
        layers.len(),
        "one gradient-norm line per layer"
    );
}

#[test]
fn trace_flags_nan_from_a_huge_learning_rate() {
    let tmp = tempfile::tempdir().unwrap();
    let subject_dir = subject("digits-mlp");
    let mut config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(subject_dir.join("config.json")).unwrap())
            .unwrap();
    config["lr"] = json!(10.0);
    config["optimizer"] = json!("sgd");
    config["loss"] = json!("mean_squared_error");
    config["act0"] = json!("exponential");
    config["act1"] = json!("exponential");
    config["act2"] = json!("linear");
    let cfg = config_file(tmp.path(), "c.json", config);
    let out = run(reprolab(tmp.path())
        .args(["trace", "--json", "--config"])
        .arg(&cfg)
        .arg(&subject_dir));
    let v = json(&out);
    let any_nan = v["epochs"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["nan"] == true);
    let diverged = v["outcome"]["status"] != "ok";
    assert!(any_nan || diverged, "an exploding training is flagged: {v}");
}

#[test]
fn env_reports_the_managed_environment() {
    let tmp = tempfile::tempdir().unwrap();
    let out = run(reprolab(tmp.path()).args(["env", "--json"]));
    assert!(out.status.success());
    let v = json(&out);
    assert_eq!(v["managed"], true);
    assert!(v["python_version"].as_str().unwrap().starts_with("3."));
    assert_eq!(v["credentials_scrubbed"], true);
}

#[test]
fn manifest_errors_name_file_key_found_and_expected() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("broken");
    std::fs::create_dir(&dir).unwrap();
    for f in ["train.py", "reprolab.toml"] {
        std::fs::copy(fixture("outcomes").join(f), dir.join(f)).unwrap();
    }
    std::fs::write(dir.join("config.json"), r#"{"behavior": "explode"}"#).unwrap();
    let out = run(reprolab(tmp.path()).arg("eval").arg(&dir));
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("config.json") && err.contains("behavior") && err.contains("explode"),
        "{err}"
    );

    let toml = std::fs::read_to_string(dir.join("reprolab.toml"))
        .unwrap()
        .replace("task = \"classification\"", "task = \"clasification\"");
    std::fs::write(dir.join("reprolab.toml"), toml).unwrap();
    let out = run(reprolab(tmp.path()).arg("eval").arg(&dir));
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("reprolab.toml") && err.contains("task") && err.contains("clasification"),
        "{err}"
    );

    let out = run(reprolab(tmp.path())
        .arg("eval")
        .arg(tmp.path().join("missing")));
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn usage_errors_exit_2_and_help_teaches() {
    let tmp = tempfile::tempdir().unwrap();
    let out = run(reprolab(tmp.path()).args(["eval"]));
    assert_eq!(out.status.code(), Some(2));
    for verb in ["eval", "compare", "trace", "env", "bench-exec"] {
        let out = run(reprolab(tmp.path()).args([verb, "--help"]));
        assert!(out.status.success());
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("Example"),
            "{verb} --help has an example"
        );
    }
}

#[test]
fn errors_exit_2_on_bad_input_and_print_json_with_json() {
    let tmp = tempfile::tempdir().unwrap();
    let kind_and_message = |out: &std::process::Output| {
        assert_eq!(out.status.code(), Some(2));
        let v = json(out);
        let obj = v["error"].as_object().expect("an error object");
        assert_eq!(obj.len(), 2, "{v}");
        (
            obj["kind"].as_str().unwrap().to_string(),
            obj["message"].as_str().unwrap().to_string(),
        )
    };
    // A subject that does not exist: input.
    let out = run(reprolab(tmp.path())
        .args(["--json", "eval"])
        .arg(tmp.path().join("missing")));
    let (kind, message) = kind_and_message(&out);
    assert_eq!(kind, "input");
    assert!(message.contains("missing"), "{message}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("error: "));
    // A flag out of range, and a missing argument: usage.
    let out = run(reprolab(tmp.path())
        .args(["compare", "--json", "--runs", "1", "--b", "b.json"])
        .arg(subject("digits-mlp")));
    let (kind, message) = kind_and_message(&out);
    assert_eq!(
        (kind.as_str(), message.as_str()),
        ("usage", "--runs must be at least 2 to compare")
    );
    let out = run(reprolab(tmp.path()).args(["eval", "--json"]));
    let (kind, message) = kind_and_message(&out);
    assert_eq!(kind, "usage");
    assert!(message.contains("SUBJECT"), "{message}");
    // Without --json the error goes to stderr only.
    let out = run(reprolab(tmp.path())
        .arg("eval")
        .arg(tmp.path().join("missing")));
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
}

#[test]
fn the_top_level_help_documents_the_exit_codes() {
    let tmp = tempfile::tempdir().unwrap();
    let out = run(reprolab(tmp.path()).arg("--help"));
    assert!(out.status.success());
    // Wrapped to the terminal's width: compare words.
    let help = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(help.contains("2 usage or input error"), "{help}");
    assert!(help.contains("3 infrastructure"), "{help}");
}

#[test]
fn every_bundled_subject_trains() {
    let tmp = tempfile::tempdir().unwrap();
    for name in [
        "digits-mlp",
        "digits-cnn",
        "cancer-binary",
        "diabetes-regression",
    ] {
        let out = run(reprolab(tmp.path())
            .args(["eval", "--json", "--runs", "2"])
            .arg(subject(name)));
        assert!(out.status.success(), "{name}");
        let v = json(&out);
        assert_eq!(v["failed"], 0, "{name}");
    }
}

#[test]
fn python_package_tests_pass_in_the_managed_environment() {
    let tmp = tempfile::tempdir().unwrap();
    let out = run(reprolab(tmp.path()).args(["env", "--python-path"]));
    let python = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let status = std::process::Command::new(python)
        .args([
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "python/tests",
        ])
        .current_dir(repo())
        .env("PYTHONPATH", repo().join("python"))
        .status()
        .unwrap();
    assert!(status.success());
}
