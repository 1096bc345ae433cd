//! `reprolab init` on a plain PyTorch script in a temporary directory: the files it writes, the
//! check training, and the explanations when the script does not meet the contract.

mod common;

use std::path::Path;

use common::*;

/// A small PyTorch training on scikit-learn's digits, a few seconds on one core.
const SCRIPT: &str = r#"
import torch
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split


def accuracy(model, x, y):
    with torch.no_grad():
        return float((model(x).argmax(1) == y).float().mean())


def train(config, seed):
    torch.manual_seed(seed)
    torch.set_num_threads(1)
    x, y = load_digits(return_X_y=True)
    x = torch.tensor(x / 16.0, dtype=torch.float32)
    y = torch.tensor(y)
    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=0.3, random_state=0)
    model = torch.nn.Sequential(torch.nn.Linear(64, config.get("hidden", 32)), torch.nn.ReLU(),
                                torch.nn.Linear(config.get("hidden", 32), 10))
    opt = torch.optim.Adam(model.parameters(), lr=config.get("lr", 0.01))
    for _ in range(config["epochs"]):
        for i in range(0, len(x_tr), config["batch_size"]):
            xb, yb = x_tr[i:i + config["batch_size"]], y_tr[i:i + config["batch_size"]]
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(xb), yb).backward()
            opt.step()
    half = len(x_te) // 2
    return {"search": accuracy(model, x_te[:half], y_te[:half]),
            "holdout": accuracy(model, x_te[half:], y_te[half:])}


if __name__ == "__main__":
    print(train({"epochs": 3, "batch_size": 64}, 0))
"#;

fn script_dir(root: &Path, script: &str) -> std::path::PathBuf {
    subject_dir(root, "my-model", "train.py", script)
}

/// A directory `name` in `root` holding one script.
fn subject_dir(root: &Path, name: &str, file: &str, script: &str) -> std::path::PathBuf {
    let dir = root.join(name);
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join(file), script).unwrap();
    dir
}

#[test]
fn init_writes_a_subject_that_trains() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = script_dir(tmp.path(), SCRIPT);
    let out = run(reprolab(tmp.path()).arg("init").arg(&dir));
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("entry train.py:train"), "{stdout}");
    assert!(
        stdout.contains("check: one training (seed 0) passed"),
        "{stdout}"
    );

    let manifest = std::fs::read_to_string(dir.join("reprolab.toml")).unwrap();
    assert!(manifest.contains("name = \"my-model\""), "{manifest}");
    assert!(
        manifest.contains("callable = \"train.py:train\""),
        "{manifest}"
    );
    assert!(manifest.contains("fault = \"HLR\""), "{manifest}");
    assert!(manifest.contains("fault = \"HBS\""), "{manifest}");
    let config: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("config.json")).unwrap()).unwrap();
    // .get defaults and the __main__ call's literal dict
    assert_eq!(
        config,
        serde_json::json!({"hidden": 32, "lr": 0.01, "epochs": 3, "batch_size": 64})
    );
    assert!(dir.join("README.md").is_file());

    // A second init keeps every file, says so, and checks again.
    std::fs::write(dir.join("README.md"), "mine\n").unwrap();
    let again = run(reprolab(tmp.path()).arg("init").arg(&dir));
    assert_eq!(again.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&again.stdout);
    assert!(
        stdout.contains("kept (already there; --force overwrites)"),
        "{stdout}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("README.md")).unwrap(),
        "mine\n"
    );
}

#[test]
fn a_script_without_the_function_is_explained_and_nothing_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = script_dir(
        tmp.path(),
        "def main():\n    print('training')\n\n\ndef fit(model, data):\n    return model\n",
    );
    let out = run(reprolab(tmp.path()).arg("init").arg(&dir));
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("FUNCTION(config, seed)"), "{stderr}");
    assert!(stderr.contains("\"holdout\""), "{stderr}");
    assert!(stderr.contains("main() at line 1"), "{stderr}");
    assert!(stderr.contains("fit(model, data) at line 5"), "{stderr}");
    assert!(stderr.contains("--entry"), "{stderr}");
    assert!(!dir.join("reprolab.toml").exists());
}

#[test]
fn a_result_without_holdout_fails_the_check_with_what_to_change() {
    let tmp = tempfile::tempdir().unwrap();
    let script = SCRIPT.replace(
        r#""holdout": accuracy(model, x_te[half:], y_te[half:])"#,
        r#""test": accuracy(model, x_te[half:], y_te[half:])"#,
    );
    let dir = script_dir(tmp.path(), &script);
    let out = run(reprolab(tmp.path()).arg("init").arg(&dir));
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("check: one training (seed 0) failed"),
        "{stdout}"
    );
    assert!(stdout.contains("no 'holdout' key"), "{stdout}");
    assert!(stdout.contains("to change:"), "{stdout}");
    assert!(stdout.contains("Traceback"), "{stdout}");
}

/// A command-line script in the style of PyTorch's examples (argparse options, `main()`), with
/// the one line reprolab needs: `reprolab.result(...)`.
const CLI_SCRIPT: &str = r#"
import argparse

import torch
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import reprolab


def accuracy(model, x, y):
    with torch.no_grad():
        return float((model(x).argmax(1) == y).float().mean())


def main():
    parser = argparse.ArgumentParser(description="digits MLP")
    parser.add_argument("--batch-size", type=int, default=64, help="input batch size")
    parser.add_argument("--epochs", type=int, default=3, help="number of epochs")
    parser.add_argument("--lr", type=float, default=0.01, help="learning rate")
    parser.add_argument("--optimizer", default="adam", choices=["adam", "sgd"])
    parser.add_argument("--no-cuda", action="store_true", default=False)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--log-interval", type=int, default=10)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    x, y = load_digits(return_X_y=True)
    x = torch.tensor(x / 16.0, dtype=torch.float32)
    y = torch.tensor(y)
    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=0.3, random_state=0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.ReLU(), torch.nn.Linear(32, 10))
    make = torch.optim.Adam if args.optimizer == "adam" else torch.optim.SGD
    opt = make(model.parameters(), lr=args.lr)
    for epoch in range(args.epochs):
        for i in range(0, len(x_tr), args.batch_size):
            xb, yb = x_tr[i:i + args.batch_size], y_tr[i:i + args.batch_size]
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(xb), yb).backward()
            opt.step()
    half = len(x_te) // 2
    reprolab.result(search=accuracy(model, x_te[:half], y_te[:half]),
                    holdout=accuracy(model, x_te[half:], y_te[half:]))


if __name__ == "__main__":
    main()
"#;

fn cli_dir(root: &Path, script: &str) -> std::path::PathBuf {
    subject_dir(root, "mnist-like", "main.py", script)
}

#[test]
fn an_argparse_script_becomes_a_subject_with_one_added_line() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = cli_dir(tmp.path(), CLI_SCRIPT);
    let out = run(reprolab(tmp.path()).arg("init").arg(&dir));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("entry reprolab_entry.py:train"), "{stdout}");
    assert!(
        stdout.contains("main.py declares a command line") && stdout.contains("seed as --seed"),
        "{stdout}"
    );
    assert!(
        stdout.contains("options left at main.py's values") && stdout.contains("log_interval"),
        "{stdout}"
    );
    assert!(
        stdout.contains("check: one training (seed 0) passed"),
        "{stdout}"
    );
    let config: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("config.json")).unwrap()).unwrap();
    assert_eq!(
        config,
        serde_json::json!({"batch_size": 64, "epochs": 3, "lr": 0.01, "optimizer": "adam"})
    );
    let manifest = std::fs::read_to_string(dir.join("reprolab.toml")).unwrap();
    assert!(
        manifest.contains("callable = \"reprolab_entry.py:train\""),
        "{manifest}"
    );
    // The script's choices bound the optimizer, with the study's fault type.
    assert!(
        manifest.contains(
            "\"optimizer\" = { type = \"choice\", values = [\"adam\", \"sgd\"], fault = \"OCH\" }"
        ),
        "{manifest}"
    );
    let entry = std::fs::read_to_string(dir.join("reprolab_entry.py")).unwrap();
    assert!(
        entry.contains("\"batch_size\": \"--batch-size\","),
        "{entry}"
    );

    // The options reach the script: a learning rate too small to learn anything in three
    // epochs leaves the accuracy near chance, where the default reaches far above it.
    let measure = |dir: &Path| -> f64 {
        let out = run(reprolab(tmp.path())
            .args(["eval", "--runs", "1", "--json"])
            .arg(dir));
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        v["summary"]["holdout"]["mean"]
            .as_f64()
            .unwrap_or_else(|| panic!("{v}"))
    };
    let trained = measure(&dir);
    std::fs::write(
        dir.join("config.json"),
        r#"{"batch_size": 64, "epochs": 3, "lr": 1e-06, "optimizer": "sgd"}"#,
    )
    .unwrap();
    let untrained = measure(&dir);
    assert!(trained > 0.8 && untrained < 0.3, "{trained} {untrained}");
}

#[test]
fn an_argparse_script_without_its_result_line_is_told_what_to_add() {
    let tmp = tempfile::tempdir().unwrap();
    let script = CLI_SCRIPT
        .replace("    reprolab.result(", "    print(dict(")
        .replace(
            "holdout=accuracy(model, x_te[half:], y_te[half:]))",
            "holdout=accuracy(model, x_te[half:], y_te[half:])))",
        );
    let dir = cli_dir(tmp.path(), &script);
    let out = run(reprolab(tmp.path()).arg("init").arg(&dir));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("main.py must report its metric"),
        "{stdout}"
    );
    assert!(
        stdout.contains("to change: the script must report its metric"),
        "{stdout}"
    );
    assert!(stdout.contains("ScriptResultMissing"), "{stdout}");
}

#[test]
fn entry_naming_a_script_without_options_is_explained() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = cli_dir(tmp.path(), "print('training')\n");
    let out = run(reprolab(tmp.path())
        .args(["init", "--entry", "main.py"])
        .arg(&dir));
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("declares no option with argparse"),
        "{stderr}"
    );
    assert!(stderr.contains("--entry main.py:FUNCTION"), "{stderr}");
    assert!(!dir.join("reprolab.toml").exists());
}

/// A script with no function and no options: its hyperparameters are top-level constants.
const CONSTANTS_SCRIPT: &str = r#"
import torch
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import reprolab

SEED = 1
LEARNING_RATE = 0.01
BATCH_SIZE = 64
EPOCHS: int = 3
DATA_DIR = "./data"

torch.manual_seed(SEED)
x, y = load_digits(return_X_y=True)
x = torch.tensor(x / 16.0, dtype=torch.float32)
y = torch.tensor(y)
x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=0.3, random_state=0)
model = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.ReLU(), torch.nn.Linear(32, 10))
opt = torch.optim.Adam(model.parameters(), lr=LEARNING_RATE)
for epoch in range(EPOCHS):
    for i in range(0, len(x_tr), BATCH_SIZE):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x_tr[i:i + BATCH_SIZE]), y_tr[i:i + BATCH_SIZE])
        loss.backward()
        opt.step()
with torch.no_grad():
    correct = (model(x_te).argmax(1) == y_te).float()
half = len(x_te) // 2
reprolab.result(search=float(correct[:half].mean()), holdout=float(correct[half:].mean()))
"#;

#[test]
fn a_script_of_constants_runs_with_the_config_in_their_place() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = subject_dir(tmp.path(), "plain", "train.py", CONSTANTS_SCRIPT);
    let out = run(reprolab(tmp.path()).arg("init").arg(&dir));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("train.py sets its hyperparameters as top-level constants")
            && stdout.contains("seed as SEED")
            && stdout.contains("DATA_DIR"),
        "{stdout}"
    );
    let config: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("config.json")).unwrap()).unwrap();
    assert_eq!(
        config,
        serde_json::json!({"LEARNING_RATE": 0.01, "BATCH_SIZE": 64, "EPOCHS": 3})
    );
    let manifest = std::fs::read_to_string(dir.join("reprolab.toml")).unwrap();
    assert!(manifest.contains("fault = \"HLR\""), "{manifest}");

    // The config's values replace the script's: too small a learning rate learns nothing.
    std::fs::write(
        dir.join("config.json"),
        r#"{"LEARNING_RATE": 1e-06, "BATCH_SIZE": 64, "EPOCHS": 3}"#,
    )
    .unwrap();
    let out = run(reprolab(tmp.path())
        .args(["eval", "--runs", "1", "--json"])
        .arg(&dir));
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let untrained = v["summary"]["holdout"]["mean"].as_f64().unwrap();
    let trained = stdout
        .split(" on holdout")
        .next()
        .and_then(|s| s.rsplit(' ').next())
        .and_then(|s| s.parse::<f64>().ok())
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(trained > 0.8 && untrained < 0.3, "{trained} {untrained}");

    // --json says how the script runs.
    let out = run(reprolab(tmp.path()).args(["init", "--json"]).arg(&dir));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["entry"], "reprolab_entry.py:train", "{v}");
    assert_eq!(v["script"]["via"], "constants", "{v}");
    assert_eq!(v["script"]["seed"], "SEED", "{v}");
    assert_eq!(
        v["script"]["defaulted"],
        serde_json::json!(["DATA_DIR"]),
        "{v}"
    );
}

#[test]
fn a_notebook_of_constants_runs_as_its_code_cells() {
    let tmp = tempfile::tempdir().unwrap();
    // The constants script as a notebook: a markdown cell, a magic, the code in two cells.
    let (head, body) = CONSTANTS_SCRIPT
        .split_once("torch.manual_seed(SEED)")
        .unwrap();
    let notebook = serde_json::json!({
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": ["# Digits\n"]},
            {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": 1,
             "source": format!("%matplotlib inline\n{head}")},
            {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": 2,
             "source": format!("torch.manual_seed(SEED){body}")},
        ],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5,
    });
    let dir = subject_dir(
        tmp.path(),
        "nb",
        "digits.ipynb",
        &serde_json::to_string(&notebook).unwrap(),
    );
    let out = run(reprolab(tmp.path()).arg("init").arg(&dir));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("digits.ipynb sets its hyperparameters as top-level constants"),
        "{stdout}"
    );
    assert!(
        stdout.contains("check: one training (seed 0) passed"),
        "{stdout}"
    );
    let entry = std::fs::read_to_string(dir.join("reprolab_entry.py")).unwrap();
    assert!(entry.contains("the code cells of digits.ipynb"), "{entry}");
    let config: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("config.json")).unwrap()).unwrap();
    assert_eq!(
        config,
        serde_json::json!({"LEARNING_RATE": 0.01, "BATCH_SIZE": 64, "EPOCHS": 3})
    );
}

#[test]
fn a_package_the_environment_lacks_is_named_with_where_to_pin_it() {
    let tmp = tempfile::tempdir().unwrap();
    let script = format!("import helpers\nimport reprolab_absent_pkg\n{SCRIPT}");
    let dir = script_dir(tmp.path(), &script);
    // The script's own module beside it is not a package to install.
    std::fs::write(dir.join("helpers.py"), "X = 1\n").unwrap();
    let out = run(reprolab(tmp.path()).arg("init").arg(&dir));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout
            .contains("train.py imports what the managed environment lacks: reprolab_absent_pkg;"),
        "{stdout}"
    );
    assert!(
        stdout.contains("to change: the program imports a package"),
        "{stdout}"
    );
    let manifest = std::fs::read_to_string(dir.join("reprolab.toml")).unwrap();
    assert!(
        manifest.contains("# packages = [\"reprolab_absent_pkg==VERSION\"]"),
        "{manifest}"
    );
}
