//! Every outcome kind is recorded — ok, exception, timeout, OOM, NaN, output flood, crash — for
//! warm-worker subjects and for plain-script subjects, and a misbehaving run never hangs reprolab.

mod common;

use common::*;
use serde_json::json;

/// Evaluate the outcomes fixture once with `behavior` and return the run's outcome JSON.
fn outcome_of(subject: &str, behavior: &str) -> serde_json::Value {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = config_file(tmp.path(), "c.json", json!({ "behavior": behavior }));
    let out = run(reprolab(tmp.path())
        .args(["eval", "--json", "--runs", "1", "-j", "1", "--config"])
        .arg(&cfg)
        .arg(fixture(subject)));
    let v = json(&out);
    let ok = v["runs"][0]["outcome"]["status"] == "ok";
    assert_eq!(
        out.status.code(),
        Some(if ok { 0 } else { 1 }),
        "exit code follows the outcome"
    );
    v["runs"][0]["outcome"].clone()
}

#[test]
fn warm_worker_records_every_outcome_kind() {
    let cases = [
        ("ok", "ok"),
        ("raise", "exception"),
        ("sleep", "timeout"),
        ("allocate", "oom"),
        ("nan", "nan"),
        ("print", "output_limit"),
        ("segfault", "crash"),
        ("exit", "crash"),
        ("wrong_type", "exception"),
    ];
    for (behavior, kind) in cases {
        let o = outcome_of("outcomes", behavior);
        assert_eq!(o["status"], kind, "behavior {behavior}: {o}");
        if behavior == "wrong_type" {
            assert_eq!(o["type"], "ReprolabContractError");
            assert!(
                o["message"]
                    .as_str()
                    .unwrap()
                    .contains("must return a dict"),
                "{o}"
            );
        }
    }
}

#[test]
fn exception_carries_type_message_and_traceback() {
    let o = outcome_of("outcomes", "raise");
    assert_eq!(o["type"], "ValueError");
    assert_eq!(o["message"], "the subject failed on purpose");
    assert!(
        o["traceback"]
            .as_str()
            .unwrap()
            .contains("raise ValueError")
    );
}

#[test]
fn plain_scripts_get_the_same_outcomes() {
    for (behavior, kind) in [
        ("ok", "ok"),
        ("raise", "exception"),
        ("sleep", "timeout"),
        ("allocate", "oom"),
        ("print", "output_limit"),
        ("exit", "crash"),
    ] {
        let o = outcome_of("outcomes-script", behavior);
        assert_eq!(o["status"], kind, "behavior {behavior}: {o}");
    }
}

#[test]
fn subject_code_sees_no_credentials() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = config_file(tmp.path(), "c.json", json!({ "behavior": "secrets" }));
    // Credentials are not passed even when REPROLAB_PASS_ENV asks for them: by word, by
    // `_`-segment, or by a value that is a URL with a password.
    let out = run(reprolab(tmp.path())
        .env("OPENAI_API_KEY", "sk-test")
        .env("GITHUB_TOKEN", "t")
        .env(
            "REPROLAB_PASS_ENV",
            "DATABASE_URL,GH_PAT,SERVICE_CREDS,MY_DB",
        )
        .env("DATABASE_URL", "postgres://u:p@h/db")
        .env("GH_PAT", "ghp_x")
        .env("SERVICE_CREDS", "x")
        .env("MY_DB", "postgres://admin:hunter2@db/x")
        .args(["eval", "--json", "--runs", "1", "-j", "1", "--config"])
        .arg(&cfg)
        .arg(fixture("outcomes")));
    let v = json(&out);
    assert_eq!(v["runs"][0]["outcome"]["search"], 0.0, "{v}");
}

#[test]
fn subject_code_has_no_network_when_isolation_is_active() {
    let tmp = tempfile::tempdir().unwrap();
    let env = json(&run(reprolab(tmp.path()).args(["env", "--json"])));
    if env["network_isolation"] != true {
        eprintln!("network isolation is not available here; nothing to check");
        return;
    }
    let o = outcome_of("outcomes", "network");
    assert_eq!(o["status"], "exception", "{o}");
}

/// Run the fixture with `behavior` on seeds 0..3 with one worker; return the outcome kinds.
/// Without the sandbox's namespaces and Landlock, so that subject code can reach its worker
/// (tests/sandbox.rs checks that with them it cannot).
fn kinds_over_three_seeds(behavior: &str) -> Vec<String> {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = config_file(tmp.path(), "c.json", json!({ "behavior": behavior }));
    let out = run(reprolab(tmp.path())
        .env("REPROLAB_NO_ISOLATION", "1")
        .args(["eval", "--json", "--runs", "3", "-j", "1", "--config"])
        .arg(&cfg)
        .arg(fixture("outcomes")));
    let v = json(&out);
    v["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["outcome"]["status"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_dead_worker_is_replaced() {
    let kinds = kinds_over_three_seeds("kill_worker_on_seed0");
    assert_eq!(
        kinds,
        ["crash", "ok", "ok"],
        "seed 0 kills its worker (retried once: a crash of that code), the others run on a \
         fresh one"
    );
}

#[test]
fn a_hung_worker_is_replaced() {
    let kinds = kinds_over_three_seeds("hang_worker_on_seed0");
    assert_eq!(kinds, ["timeout", "ok", "ok"]);
}

#[test]
fn an_external_interpreter_can_be_used() {
    let tmp = tempfile::tempdir().unwrap();
    let python =
        String::from_utf8(run(reprolab(tmp.path()).args(["env", "--python-path"])).stdout).unwrap();
    let env = json(&run(reprolab(tmp.path()).args([
        "env",
        "--json",
        "--python",
        python.trim(),
    ])));
    assert_eq!(env["managed"], false);
    let out = run(reprolab(tmp.path())
        .args([
            "eval",
            "--json",
            "--runs",
            "1",
            "-j",
            "1",
            "--python",
            python.trim(),
        ])
        .arg(fixture("outcomes")));
    assert_eq!(json(&out)["runs"][0]["outcome"]["status"], "ok");
}
