//! The LLM engines end to end: `localize --engine llm`, `repair --engine llm` and
//! `repair --engine llm-refine`, the real binary training a real faulty subject (real fault D7:
//! a linear regression whose learning rate is 100× too small) against a scripted fake
//! OpenAI-compatible server on loopback. Also checks what the model is shown: the program and
//! its config, never the ground truth.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use reprolab_llm::fake::{FakeReply, FakeServer, Flavor};

fn d7() -> PathBuf {
    repo().join("benchmarks/faults/real/D7")
}

/// A `reprolab` command whose `--llm` (through `REPROLAB_LLM`) is the fake server.
fn cmd(dir: &Path, server: &FakeServer) -> Command {
    let mut c = reprolab(dir);
    for var in ["REPROLAB_LLM_CONFIG", "OPENAI_API_KEY", "OPENAI_BASE_URL"] {
        c.env_remove(var);
    }
    c.env("REPROLAB_LLM", format!("openai:fake@{}", server.base_url()));
    c
}

/// The user prompts the server received, in order.
fn prompts(server: &FakeServer) -> Vec<String> {
    server
        .requests()
        .iter()
        .map(|r| {
            r.body["messages"]
                .as_array()
                .and_then(|m| m.last())
                .and_then(|m| m["content"].as_str())
                .unwrap_or_default()
                .to_string()
        })
        .collect()
}

/// Nothing of the ground truth or the fault's name reaches the model.
fn assert_no_ground_truth(prompt: &str) {
    let fixed = std::fs::read_to_string(d7().join("fixed.json")).unwrap();
    assert!(!prompt.contains(fixed.trim()), "the fixed config leaked");
    for leak in ["real-D7", "fault.json", "fixed.json", "[fix]"] {
        assert!(!prompt.contains(leak), "{leak:?} leaked into the prompt");
    }
}

#[test]
fn llm_localisation_maps_reasons_and_votes() {
    let tmp = tempfile::tempdir().unwrap();
    let server = FakeServer::start_background(
        Flavor::OpenAi,
        [
            FakeReply::Choices(vec![
                "Yes, there are faults.\n1. The learning rate of 0.001 is too low for this problem.\n2. The code lacks comments.".into(),
                "1. **Learning rate** too small: training does not converge in 200 epochs.\n2. Use Adam instead of RMSprop.".into(),
                "I think the model is fine.".into(),
            ]),
            // The mapping calls: one readable answer, one that is not JSON (keywords take
            // over), one mapping nothing.
            FakeReply::Text("```json\n{\"items\": [{\"item\": 1, \"types\": [\"HLR\"]}, {\"item\": 2, \"types\": []}],}\n```".into()),
            FakeReply::Text("the first is HLR and the second OCH".into()),
            FakeReply::Text("{\"items\": []}".into()),
        ],
    );
    let out = run(cmd(tmp.path(), &server)
        .args(["--json", "localize"])
        .arg(d7())
        .args(["--engine", "llm", "--llm-repeats", "3"]));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json(&out);
    assert_eq!(v["answer"], serde_json::json!(["HLR"]));
    let suspects = v["suspects"].as_array().unwrap();
    assert_eq!(suspects[0]["label"], "HLR");
    assert!((suspects[0]["confidence"].as_f64().unwrap() - 2.0 / 3.0).abs() < 1e-9);
    // OCH came from the keyword fallback in one answer of three: below the vote threshold.
    assert!(suspects.iter().any(|s| s["label"] == "OCH"));
    let llm = &v["llm"];
    assert_eq!(llm["unmapped"].as_array().unwrap().len(), 2);
    assert!((llm["mapped_fraction"].as_f64().unwrap() - 3.0 / 5.0).abs() < 1e-9);
    // One FL request with n = 3, then one mapping request per answer.
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    assert_eq!(requests[0].body["n"], 3);
    let p = &prompts(&server)[0];
    assert!(p.starts_with("The code below is designed for a regression trained on linear-5x"));
    assert!(p.contains("def train(config"), "the program is shown");
    assert!(p.contains("\"lr\": 0.001"), "the config is shown");
    assert_no_ground_truth(p);
    assert!(prompts(&server)[1].contains("- HLR: wrong learning rate"));
}

#[test]
fn llm_repair_coerces_answers_and_validates_the_best() {
    let tmp = tempfile::tempdir().unwrap();
    let server = FakeServer::start_background(
        Flavor::OpenAi,
        [FakeReply::Choices(vec![
            "Here is the repair:\n```json\n{\"lr\": \"1e-1\"}\n```".into(),
            "Sure! {'lr': 100, 'optimizer': 'Adam',}".into(),
            "I cannot help with that.".into(),
        ])],
    );
    let out = run(cmd(tmp.path(), &server)
        .args(["--json", "repair"])
        .arg(d7())
        .args([
            "--engine",
            "llm",
            "--samples",
            "3",
            "--budget",
            "50x",
            "--runs",
            "6",
        ]));
    let v = json(&out);
    let suggestions = v["run"]["llm"]["suggestions"].as_array().unwrap();
    assert_eq!(suggestions.len(), 3);
    assert_eq!(suggestions[0]["patch"], serde_json::json!({"lr": 0.1}));
    // lr = 100 is outside the space [1e-6, 10]: rejected with the reason; Adam is coerced.
    assert_eq!(
        suggestions[1]["patch"],
        serde_json::json!({"optimizer": "adam"})
    );
    assert_eq!(suggestions[1]["rejected"][0]["key"], "lr");
    assert!(
        suggestions[1]["rejected"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("[1e-6, 10]")
    );
    assert!(suggestions[2]["parse_error"].is_string());
    // Two distinct usable patches trained after the faulty config.
    let search = &v["run"]["search"];
    assert_eq!(search["engine"], "llm");
    assert_eq!(search["trials"].as_array().unwrap().len(), 3);
    assert_eq!(search["stop"], "suggestions");
    // lr 0.1 is the ground truth's fix: it is the best trial and it validates.
    assert_eq!(search["best"]["config"]["lr"], 0.1);
    let val = &v["run"]["validation"];
    assert_eq!(val["significant"], true, "{val}");
    assert!(out.status.success());
    assert_eq!(v["repaired"], true);
    assert!(v["verdict"].as_str().unwrap().starts_with("repaired: "));
    let p = &prompts(&server)[0];
    assert!(p.starts_with("The following code is designed for a regression trained on linear-5x"));
    assert!(p.contains("in order to reduce the mae"));
    assert_no_ground_truth(p);
}

#[test]
fn llm_refine_feeds_measured_outcomes_back() {
    let tmp = tempfile::tempdir().unwrap();
    let server = FakeServer::start_background(
        Flavor::OpenAi,
        [
            FakeReply::Text("{\"optimizer\": \"sgd\"}".into()),
            FakeReply::Text("{\"lr\": 0.1}".into()),
        ],
    );
    let out = run(cmd(tmp.path(), &server)
        .args(["--json", "repair"])
        .arg(d7())
        .args([
            "--engine",
            "llm-refine",
            "--samples",
            "1",
            "--rounds",
            "2",
            "--budget",
            "50x",
            "--runs",
            "6",
        ]));
    let v = json(&out);
    assert_eq!(v["run"]["search"]["engine"], "llm-refine");
    let p = prompts(&server);
    assert_eq!(p.len(), 2);
    // The first prompt already has the allowed values and the localisation result.
    assert!(p[0].contains("- lr: a number in [1e-6, 10]"));
    assert!(p[0].contains("fault-localisation tool"));
    assert!(!p[0].contains("Earlier repair attempts"));
    // The second carries the first attempt and its measured metric.
    assert!(p[1].contains("Earlier repair attempts"));
    assert!(
        p[1].contains("1. optimizer: \"rmsprop\" -> \"sgd\" => metric "),
        "{}",
        p[1]
    );
    assert!(p[1].contains("(faulty config: "));
    for prompt in &p {
        assert_no_ground_truth(prompt);
    }
    assert_eq!(v["run"]["search"]["best"]["config"]["lr"], 0.1);
}

#[test]
fn llm_engines_without_a_model_say_so() {
    let tmp = tempfile::tempdir().unwrap();
    let mut c = reprolab(tmp.path());
    c.env_remove("REPROLAB_LLM")
        .env_remove("REPROLAB_LLM_CONFIG");
    let out = run(c.arg("localize").arg(d7()).args(["--engine", "llm"]));
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("pass --llm"));
}
