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

/// One `eval` of the fixture's `by_seed` behaviour over `runs` seeds (seed i behaves as the
/// fixture's `BY_SEED[i]`): every outcome kind from one command and one worker pool. The exit
/// code says that runs failed.
fn outcomes_by_seed(subject: &str, runs: usize) -> Vec<serde_json::Value> {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = config_file(tmp.path(), "c.json", json!({ "behavior": "by_seed" }));
    let out = run(reprolab(tmp.path())
        .args([
            "eval",
            "--json",
            "--no-cache",
            "--runs",
            &runs.to_string(),
            "--config",
        ])
        .arg(&cfg)
        .arg(fixture(subject)));
    assert_eq!(out.status.code(), Some(1), "failed runs exit 1: {out:?}");
    outcomes(&json(&out))
}

#[test]
fn warm_worker_records_every_outcome_kind() {
    let kinds = BY_SEED_KINDS;
    let outcomes = outcomes_by_seed("outcomes", kinds.len());
    for (seed, (o, kind)) in outcomes.iter().zip(kinds).enumerate() {
        assert_eq!(o["status"], kind, "seed {seed}: {o}");
    }
    let wrong_type = &outcomes[8];
    assert_eq!(wrong_type["type"], "ReprolabContractError");
    assert!(
        wrong_type["message"]
            .as_str()
            .unwrap()
            .contains("must return a dict"),
        "{wrong_type}"
    );
    // A lone successful run exits 0.
    assert_eq!(outcome_of("outcomes", "ok")["status"], "ok");
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
    // The fixture run as a plain script through its command template (seeds 0..8).
    let kinds = &BY_SEED_KINDS[..8];
    let outcomes = outcomes_by_seed("outcomes-script", kinds.len());
    for (seed, (o, kind)) in outcomes.iter().zip(kinds).enumerate() {
        assert_eq!(o["status"], *kind, "seed {seed}: {o}");
    }
}

#[test]
fn a_run_that_fills_its_disk_is_stopped_at_the_limit() {
    for subject in ["outcomes", "outcomes-script"] {
        let o = outcome_of(subject, "write_disk");
        assert_eq!(o["status"], "disk_limit", "{subject}: {o}");
        assert_eq!(o["limit_mb"], 64, "{subject}: {o}");
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
