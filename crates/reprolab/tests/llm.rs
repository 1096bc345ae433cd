//! `reprolab llm chat` and `reprolab llm calls` end to end: the real binary against a fake
//! OpenAI-compatible server running in this test process (real HTTP on loopback), recording,
//! replaying without the server, replay misses, and keys kept out of every output and the store.

mod common;

use std::path::Path;
use std::process::Command;

use common::*;
use reprolab_llm::fake::{FakeReply, FakeServer, Flavor};

fn cmd(dir: &Path) -> Command {
    reprolab_without_llm_settings(dir)
}

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn chat_prints_answers_and_sends_the_options() {
    let tmp = tempfile::tempdir().unwrap();
    let server = FakeServer::start_background(Flavor::OpenAi, [FakeReply::Text("bonjour".into())]);
    let spec = format!("openai:fake-model@{}", server.base_url());
    let out = run(cmd(tmp.path())
        .args([
            "llm",
            "chat",
            "say hi",
            "--n",
            "2",
            "--temperature",
            "0.5",
            "--llm",
        ])
        .arg(&spec));
    assert!(out.status.success());
    assert_eq!(
        stdout(&out),
        "--- choice 1 ---\nbonjour\n--- choice 2 ---\nbonjour\n"
    );
    assert!(
        stderr(&out).contains("2 prompt + 2 completion tokens"),
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out)
            .contains("LLM usage, openai:fake-model: 1 call, 2 prompt + 2 completion tokens"),
        "what the command's calls cost, per model: {}",
        stderr(&out)
    );
    let sent = &server.requests()[0];
    assert_eq!(sent.body["n"], 2);
    assert_eq!(sent.body["temperature"], 0.5);
    assert_eq!(sent.body["model"], "fake-model");

    // --json, --json-mode and the spec from the environment.
    server.push(FakeReply::Text("Sure: {'lr': 0.01, 'ok': True,}".into()));
    let out = run(cmd(tmp.path())
        .args([
            "--json",
            "llm",
            "chat",
            "config?",
            "--json-mode",
            "--system",
            "be terse",
        ])
        .env("REPROLAB_LLM", &spec));
    assert!(out.status.success());
    let v = json(&out);
    assert_eq!(v["model"], format!("openai:fake-model"));
    assert_eq!(
        v["choices"][0]["parsed"],
        serde_json::json!({"lr": 0.01, "ok": true})
    );
    assert_eq!(v["replayed"], false);
    assert_eq!(v["request_hash"].as_str().unwrap().len(), 64);
    let sent = &server.requests()[1];
    assert_eq!(sent.body["response_format"]["type"], "json_object");
    assert_eq!(sent.body["messages"][0]["role"], "system");
}

#[test]
fn record_then_replay_offline_then_miss() {
    let tmp = tempfile::tempdir().unwrap();
    let cassettes = tmp.path().join("cassettes");
    let server = FakeServer::start_background(Flavor::OpenAi, []);
    let spec = format!("openai:fake-model@{}", server.base_url());
    let recorded = run(cmd(tmp.path())
        .args(["--json", "llm", "chat", "what is a learning rate", "--llm"])
        .arg(&spec)
        .arg("--llm-record")
        .arg(&cassettes));
    assert!(recorded.status.success());
    let recorded = json(&recorded);
    assert_eq!(recorded["choices"][0]["text"], "what is a learning rate");
    drop(server); // Replay must not need it.

    let replay = format!("replay:{}", cassettes.display());
    let out = run(cmd(tmp.path())
        .args(["--json", "llm", "chat", "what is a learning rate", "--llm"])
        .arg(&replay));
    assert!(out.status.success());
    let v = json(&out);
    assert_eq!(v["replayed"], true);
    assert_eq!(v["choices"], recorded["choices"]);
    assert_eq!(v["usage"], recorded["usage"]);
    assert_eq!(v["request_hash"], recorded["request_hash"]);

    // Another prompt (or the same prompt at another temperature) was never recorded.
    for extra in [
        vec!["what is momentum"],
        vec!["what is a learning rate", "--temperature", "0.7"],
    ] {
        let out = run(cmd(tmp.path())
            .args(["llm", "chat"])
            .args(&extra)
            .arg("--llm")
            .arg(&replay));
        assert_eq!(out.status.code(), Some(2));
        let err = stderr(&out);
        assert!(err.contains("no recording for request"), "{err}");
        assert!(err.contains(&cassettes.display().to_string()), "{err}");
        assert!(err.contains(extra[0]), "{err}");
        assert!(err.contains("--llm-record"), "{err}");
    }

    // Every call, the failed replays included, is in the store.
    let out = run(cmd(tmp.path()).args(["--json", "llm", "calls"]));
    let calls = json(&out);
    let calls = calls.as_array().unwrap();
    assert_eq!(calls.len(), 4);
    assert!(calls[0]["error"].as_str().unwrap().contains("no recording"));
    assert_eq!(calls[2]["replayed"], true);
    assert_eq!(calls[3]["replayed"], false);
    assert_eq!(calls[3]["model"], "openai:fake-model");
    assert_eq!(calls[3]["prompt_tokens"], 5);
    let table = stdout(&run(cmd(tmp.path()).args(["llm", "calls", "--limit", "2"])));
    assert!(table.contains("error: no recording"), "{table}");
    assert!(
        table.contains("2 calls shown, 0 tokens, $0.000000"),
        "{table}"
    );
}

#[test]
fn keys_stay_out_of_output_logs_and_store() {
    let tmp = tempfile::tempdir().unwrap();
    let key = "sk-integration-secret-4242";
    let server = FakeServer::start_background(Flavor::OpenAi, [FakeReply::Text("fine".into())]);
    server.require_key(key);
    let spec = format!("openai:m@{}", server.base_url());
    let out = run(cmd(tmp.path())
        .args(["-vvv", "llm", "chat", "hello", "--llm"])
        .arg(&spec)
        .arg("--llm-record")
        .arg(tmp.path().join("rec"))
        .env("OPENAI_API_KEY", key)
        .env("REPROLAB_LOG", "trace"));
    assert!(out.status.success());
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some(format!("Bearer {key}").as_str())
    );
    // A wrong key: the server echoes it back in its 401 body.
    let out2 = run(cmd(tmp.path())
        .args(["-vvv", "llm", "chat", "hello again", "--llm"])
        .arg(&spec)
        .env("OPENAI_API_KEY", format!("{key}-wrong")));
    assert_eq!(out2.status.code(), Some(2));
    assert!(stderr(&out2).contains("HTTP 401"), "{}", stderr(&out2));
    for o in [&out, &out2] {
        assert!(!stdout(o).contains(key) && !stderr(o).contains(key));
    }
    let mut files = vec![tmp.path().join("store.db"), tmp.path().join("store.db-wal")];
    files.extend(
        std::fs::read_dir(tmp.path().join("rec"))
            .unwrap()
            .map(|e| e.unwrap().path()),
    );
    for f in files.iter().filter(|f| f.exists()) {
        let bytes = std::fs::read(f).unwrap();
        assert!(
            !bytes.windows(key.len()).any(|w| w == key.as_bytes()),
            "key found in {}",
            f.display()
        );
    }
}

#[test]
fn configuration_errors_say_what_to_do() {
    let tmp = tempfile::tempdir().unwrap();
    let cases: [(&[&str], &str); 4] = [
        (&["llm", "chat", "x"], "no LLM chosen"),
        (
            &[
                "llm",
                "chat",
                "x",
                "--llm",
                "anthropic:claude-3-5-haiku-latest",
            ],
            "ANTHROPIC_API_KEY",
        ),
        (
            &["llm", "chat", "x", "--llm", "openai:gpt-4o-mini"],
            "OPENAI_API_KEY",
        ),
        (&["llm", "chat", "x", "--llm", "gpt4"], "has no provider"),
    ];
    for (args, needle) in cases {
        let out = run(cmd(tmp.path()).args(args));
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(stderr(&out).contains(needle), "{args:?}: {}", stderr(&out));
    }
    let out = run(cmd(tmp.path()).args(["llm", "chat", "x", "--llm", "replay:/nonexistent/rec"]));
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("does not exist"), "{}", stderr(&out));
}

#[test]
fn config_file_names_a_provider_and_the_default_spec() {
    let tmp = tempfile::tempdir().unwrap();
    let server =
        FakeServer::start_background(Flavor::OpenAi, [FakeReply::Text("from config".into())]);
    let cfg = tmp.path().join("llm.toml");
    std::fs::write(
        &cfg,
        format!(
            "llm = \"lab\"\n[providers.lab]\nbase_url = \"{}\"\nmodel = \"lab-model\"\n\
             price_in_per_mtok = 1000000.0\nprice_out_per_mtok = 0.0\n",
            server.base_url()
        ),
    )
    .unwrap();
    let out = run(cmd(tmp.path())
        .args(["--json", "llm", "chat", "one two three", "--llm-config"])
        .arg(&cfg));
    assert!(out.status.success());
    let v = json(&out);
    assert_eq!(v["model"], "lab:lab-model");
    assert_eq!(v["choices"][0]["text"], "from config");
    assert_eq!(v["cost_usd"], 3.0);

    std::fs::write(&cfg, "[providers.lab]\nbase_uri = \"x\"\n").unwrap();
    let out = run(cmd(tmp.path())
        .args(["llm", "chat", "x", "--llm", "lab:m", "--llm-config"])
        .arg(&cfg));
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("llm.toml") && err.contains("base_uri"),
        "{err}"
    );
}

#[test]
fn token_budget_refuses_the_call() {
    let tmp = tempfile::tempdir().unwrap();
    let server = FakeServer::start_background(Flavor::OpenAi, []);
    let out = run(cmd(tmp.path())
        .args(["llm", "chat", "x", "--llm-max-tokens-budget", "0", "--llm"])
        .arg(format!("openai:m@{}", server.base_url())));
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("LLM budget exceeded"),
        "{}",
        stderr(&out)
    );
    assert_eq!(server.request_count(), 0);
}
