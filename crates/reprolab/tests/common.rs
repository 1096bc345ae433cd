//! Helpers for the integration tests: run the real binary on real subjects, each test with its
//! own store, all sharing the managed Python environment (provisioned once, under a file lock).

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

pub fn subject(name: &str) -> PathBuf {
    repo().join("subjects").join(name)
}

/// A reprolab command with a private store in `dir`, training on one worker unless the test
/// asks for more with `-j`: the test harness already runs tests side by side on every core, and
/// each further worker would only add its own Python start (seconds of CPU, TensorFlow's more)
/// to a machine that is busy anyway. Results do not depend on the number of workers.
pub fn reprolab(dir: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_reprolab"));
    cmd.current_dir(dir)
        .env("REPROLAB_WORKERS", "1")
        .arg("--store")
        .arg(dir.join("store.db"));
    cmd
}

/// A reprolab command with a private store and none of the developer's LLM settings (model,
/// config, keys, hosts), so that a test talks only to the model it names.
pub fn reprolab_without_llm_settings(dir: &Path) -> Command {
    let mut c = reprolab(dir);
    for var in [
        "REPROLAB_LLM",
        "REPROLAB_LLM_CONFIG",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "ANTHROPIC_API_KEY",
        "OLLAMA_HOST",
        "REPROLAB_LOG",
    ] {
        c.env_remove(var);
    }
    c
}

pub fn run(cmd: &mut Command) -> Output {
    let out = cmd.output().expect("reprolab runs");
    eprintln!(
        "$ {:?}\nexit {:?}\n--- stdout\n{}\n--- stderr\n{}",
        cmd,
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

pub fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).expect("stdout is JSON")
}

/// `reprolab bench localize --json --engines static --out OUT [ARGS] FAULTS` in `dir`.
pub fn run_bench_localize_static(dir: &Path, out: &Path, faults: &Path, args: &[&str]) -> Output {
    run(reprolab(dir)
        .args(["bench", "localize", "--json", "--engines", "static"])
        .args(args)
        .arg("--out")
        .arg(out)
        .arg(faults))
}

/// [`run_bench_localize_static`] without more arguments, which must succeed: its JSON output.
pub fn bench_localize_static(dir: &Path, out: &Path, faults: &Path) -> serde_json::Value {
    let done = run_bench_localize_static(dir, out, faults, &[]);
    assert!(done.status.success());
    json(&done)
}

/// The `alternatives.json` a neutrality analysis stored in `fault`, checked to list as many
/// alternatives as its summary `s` counts in Table 4.
pub fn stored_alternatives(fault: &Path, s: &serde_json::Value) -> serde_json::Value {
    let text = std::fs::read_to_string(fault.join("alternatives.json")).unwrap();
    let stored: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        stored["alternatives"].as_array().unwrap().len() as u64,
        s["table4"]["alternatives"].as_u64().unwrap(),
        "{stored}"
    );
    stored
}

/// Every run's outcome in an `eval --json` answer, in seed order.
pub fn outcomes(v: &serde_json::Value) -> Vec<serde_json::Value> {
    v["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["outcome"].clone())
        .collect()
}

/// The outcome kinds of the `outcomes` fixture's `by_seed` behaviour, seed by seed (its
/// `BY_SEED`: ok, raise, sleep, allocate, nan, print, segfault, exit, wrong_type); seeds 9 and 10
/// (network, secrets) depend on the machine's isolation.
pub const BY_SEED_KINDS: [&str; 9] = [
    "ok",
    "exception",
    "timeout",
    "oom",
    "nan",
    "output_limit",
    "crash",
    "crash",
    "exception",
];

/// Write a config JSON file into `dir` and return its path.
pub fn config_file(dir: &Path, name: &str, value: serde_json::Value) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, value.to_string()).unwrap();
    p
}

/// Processes whose command line has `tag` as a whole argument: how a test finds processes its
/// hostile subject or answer started (they exec `sleep TAG` or carry TAG otherwise).
pub fn tagged(tag: &str) -> Vec<i32> {
    reprolab_exec::proctree::with_argument(tag)
}

/// Why the Keras tests cannot run here, or None when the managed environment imports Keras.
pub fn keras_missing(dir: &Path) -> Option<String> {
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

/// Why the TensorFlow backend cannot be tested here, or None once `reprolab env --tensorflow`
/// has installed tensorflow-cpu (a no-op when it is there) and Keras imports on it.
pub fn tensorflow_missing(dir: &Path) -> Option<String> {
    if let Some(reason) = keras_missing(dir) {
        return Some(reason);
    }
    let out = run(reprolab(dir).args(["env", "--tensorflow"]));
    let last_line = |bytes: &[u8]| {
        String::from_utf8_lossy(bytes)
            .lines()
            .rfind(|l| !l.trim().is_empty())
            .unwrap_or("")
            .to_string()
    };
    if !out.status.success() {
        return Some(format!(
            "tensorflow-cpu cannot be installed: {}",
            last_line(&out.stderr)
        ));
    }
    let python = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let check = std::process::Command::new(&python)
        .args([
            "-c",
            "import keras, tensorflow; print(keras.backend.backend())",
        ])
        .env("KERAS_BACKEND", "tensorflow")
        .output();
    match check {
        Ok(o) if o.status.success() => None,
        Ok(o) => Some(format!(
            "{python} cannot import keras on tensorflow: {}",
            last_line(&o.stderr)
        )),
        Err(e) => Some(format!("cannot run {python:?}: {e}")),
    }
}

/// `name`'s config with 10 epochs and `changes` applied, written to `file` in `dir`.
pub fn short_config_of(dir: &Path, name: &str, changes: serde_json::Value, file: &str) -> PathBuf {
    let subject_dir = subject(name);
    let mut config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(subject_dir.join("config.json")).unwrap())
            .unwrap();
    config["epochs"] = serde_json::json!(10);
    for (k, v) in changes.as_object().unwrap() {
        config[k] = v.clone();
    }
    config_file(dir, file, config)
}
