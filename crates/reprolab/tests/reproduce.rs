//! `reprolab reproduce` end to end: the real binary, real scripts run in the sandbox with the
//! managed environment, and for the LLM loop a fake OpenAI-compatible server on loopback.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use reprolab_llm::fake::{FakeReply, FakeServer, Flavor};

const REPORT: &str = "# BCELoss crashes when the batch is flattened\n\nTraining my discriminator fails:\n\n```\nTraceback (most recent call last):\n  File \"train.py\", line 40, in <module>\n    loss = criterion(out, label)\n  File \"/usr/lib/python3.11/site-packages/torch/nn/functional.py\", line 3621, in binary_cross_entropy\n    raise ValueError(\nValueError: Using a target size (torch.Size([16])) that is different to the input size (torch.Size([400])) is deprecated. Please ensure they have the same size.\n```\n\nEnvironment: torch 2.15.0, Python 3.11\n";

const GOOD: &str = "import torch\nout = torch.sigmoid(torch.randn(400))\nlabel = torch.ones(16)\ntorch.nn.BCELoss()(out, label)\n";
const OTHER_SHAPES: &str = "import torch\nout = torch.sigmoid(torch.randn(8))\nlabel = torch.ones(4)\ntorch.nn.BCELoss()(out, label)\n";
const OWN_RAISE: &str = "raise ValueError('Using a target size (torch.Size([16])) that is different to the input size (torch.Size([400])) is deprecated. Please ensure they have the same size.')\n";
const CLEAN: &str = "import torch\nprint(torch.nn.BCELoss()(torch.sigmoid(torch.randn(16)), torch.ones(16)).item())\n";

fn cmd(dir: &Path) -> Command {
    reprolab_without_llm_settings(dir)
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn verify(dir: &Path, script: &str, extra: &[&str]) -> std::process::Output {
    let report = write(dir, "report.md", REPORT);
    let script = write(dir, &format!("s{}.py", script.len()), script);
    run(cmd(dir)
        .args(["reproduce", "verify"])
        .arg(&report)
        .arg(&script)
        .args(["--runs", "3"])
        .args(extra))
}

#[test]
fn verify_confirms_a_real_reproduction_and_caches_its_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let out_dir = tmp.path().join("out");
    let out = verify(tmp.path(), GOOD, &["--out", out_dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("reproduced (3/3 runs)"), "{stdout}");
    for f in [
        "reproduce.py",
        "requirements.txt",
        "observed.txt",
        "verdict.json",
    ] {
        assert!(out_dir.join(f).is_file(), "{f} written");
    }
    let reqs = std::fs::read_to_string(out_dir.join("requirements.txt")).unwrap();
    assert!(reqs.contains("torch==2.15.0"), "{reqs}");
    let observed = std::fs::read_to_string(out_dir.join("observed.txt")).unwrap();
    assert!(observed.contains("torch/nn/functional.py"), "{observed}");
    let verdict: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("verdict.json")).unwrap())
            .unwrap();
    assert_eq!(verdict["reproduced"], true);
    assert_eq!(verdict["verdict"]["symptom"], "error");

    // The second verify runs nothing: every run comes from the store.
    let store = reprolab_store::Store::open(&tmp.path().join("store.db")).unwrap();
    assert_eq!(store.count_script_runs().unwrap(), 3);
    drop(store);
    let again = verify(tmp.path(), GOOD, &["--json"]);
    assert_eq!(again.status.code(), Some(0));
    assert_eq!(json(&again)["verdict"]["showing"], 3);
    let store = reprolab_store::Store::open(&tmp.path().join("store.db")).unwrap();
    assert_eq!(store.count_script_runs().unwrap(), 3);
}

#[test]
fn warm_workers_and_fresh_processes_give_the_same_verdict() {
    let tmp = tempfile::tempdir().unwrap();
    let warning = "import warnings\nimport torch\nwarnings.warn('Using a target size that is different')\nprint('done')\n";
    for script in [GOOD, OTHER_SHAPES, OWN_RAISE, warning] {
        let verdicts: Vec<serde_json::Value> = [&[][..], &["--cold"][..]]
            .iter()
            .map(|how| {
                let out = verify(
                    tmp.path(),
                    script,
                    &[&["--json", "--no-cache"], *how].concat(),
                );
                assert!(matches!(out.status.code(), Some(0 | 1)), "{out:?}");
                json(&out)["verdict"].clone()
            })
            .collect();
        assert_eq!(verdicts[0], verdicts[1], "{script}");
    }
}

#[test]
fn verify_rejects_near_misses_with_the_reason() {
    let tmp = tempfile::tempdir().unwrap();
    for (script, reason) in [
        (OTHER_SHAPES, "[16]"),
        (OWN_RAISE, "own `raise` statement"),
        (CLEAN, "without raising ValueError"),
    ] {
        let out = verify(tmp.path(), script, &[]);
        assert_eq!(out.status.code(), Some(1), "{script}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains("not reproduced (0/3 runs)") && stdout.contains(reason),
            "{stdout}"
        );
    }
}

#[test]
fn hostile_scripts_are_outcomes_not_hangs() {
    let tmp = tempfile::tempdir().unwrap();
    let hang = "import time\nwhile True:\n    time.sleep(0.1)\n";
    let out = verify(tmp.path(), hang, &["--timeout", "3"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("timeout"));
    let flood = "import sys\nwhile True:\n    sys.stdout.write('x' * 65536)\n";
    let out = verify(tmp.path(), flood, &["--timeout", "60"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("output-limit"));
    let crash = "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n";
    let out = verify(tmp.path(), crash, &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("crashed"));
}

#[test]
fn bad_input_exits_2_naming_what_is_wrong() {
    let tmp = tempfile::tempdir().unwrap();
    let script = write(tmp.path(), "s.py", GOOD);
    let refused = |report: &Path, extra: &[&str], says: &str| {
        let out = run(cmd(tmp.path())
            .args(["reproduce", "verify"])
            .arg(report)
            .arg(&script)
            .args(extra));
        assert_eq!(out.status.code(), Some(2), "{says}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(says), "{stderr}");
    };
    refused(Path::new("missing.md"), &[], "missing.md");
    let no_text = write(tmp.path(), "r.json", r#"{"url": "x"}"#);
    refused(&no_text, &[], "bug_report");
    let report = write(tmp.path(), "r.md", REPORT);
    refused(
        &report,
        &["--package", "torch>=2"],
        "--package `torch>=2`: expected NAME==VERSION",
    );
    refused(
        &report,
        &["--as-of", "2023-13-01"],
        "--as-of `2023-13-01`: expected a date as YYYY-MM-DD",
    );
}

fn fenced(code: &str) -> String {
    format!("Here is the script:\n```python\n{code}```\n")
}

/// The planning answer every loop asks for first (unless `--no-plan`).
fn plan() -> FakeReply {
    FakeReply::Text(
        "```json\n[\"Make an output of shape (400,) and a target of shape (16,)\", \"Call torch.nn.BCELoss on them so that the library raises the ValueError\"]\n```".into(),
    )
}

/// `reprolab reproduce REPORT --llm <the fake server> --out DIR/repro ARGS`.
fn reproduce_with(dir: &Path, server: &FakeServer, args: &[&str]) -> std::process::Output {
    let report = write(dir, "report.md", REPORT);
    run(cmd(dir)
        .arg("reproduce")
        .arg(&report)
        .args(args)
        .arg("--out")
        .arg(dir.join("repro"))
        .arg("--llm")
        .arg(format!("openai:fake@{}", server.base_url())))
}

fn read_json(path: PathBuf) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn the_llm_loop_feeds_back_real_outcomes_until_the_bug_shows() {
    let tmp = tempfile::tempdir().unwrap();
    let server = FakeServer::start_background(
        Flavor::OpenAi,
        [
            plan(),
            FakeReply::Text("I think the shapes differ.".into()),
            FakeReply::Text(fenced(CLEAN)),
            FakeReply::Text(fenced(GOOD)),
        ],
    );
    let out = reproduce_with(
        tmp.path(),
        &server,
        &["--runs", "3", "--attempts", "4", "--no-minimize"],
    );
    assert_eq!(out.status.code(), Some(0));
    let out_dir = tmp.path().join("repro");
    assert_eq!(
        std::fs::read_to_string(out_dir.join("reproduce.py")).unwrap(),
        GOOD
    );
    let attempts = read_json(out_dir.join("attempts.json"));
    assert_eq!(attempts["attempts"].as_array().unwrap().len(), 3);
    assert_eq!(attempts["reproduced_by"], 2);
    assert_eq!(
        attempts["attempts"][0]["problem"],
        "the answer holds no Python code"
    );
    assert_eq!(
        attempts["plan"]["steps"][0],
        "Make an output of shape (400,) and a target of shape (16,)"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 4, "the plan, then three attempts");
    let last = requests[3].body["messages"].to_string();
    assert!(
        last.contains("without raising ValueError"),
        "the third attempt's prompt carries the second attempt's real outcome: {last}"
    );
    let planning = requests[0].body["messages"].to_string();
    assert!(
        planning.contains("torch 2.15.0")
            && planning.contains("never `raise`")
            && planning.contains("Do not write the script yet"),
        "{planning}"
    );
    let first = requests[1].body["messages"].to_string();
    assert!(
        first.contains("1. Make an output of shape (400,)") && !first.contains("Do not write"),
        "every attempt follows the plan: {first}"
    );
}

/// A script that imports a package the environment lacks is answered by the static pre-check,
/// without a run; the next attempt's prompt carries the finding.
#[test]
fn the_pre_check_answers_a_pointless_script_without_running_it() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = "import torch\nimport tensorflow_addons_not_here as tfa\nout = torch.sigmoid(torch.randn(400))\n";
    let server = FakeServer::start_background(
        Flavor::OpenAi,
        [
            FakeReply::Text(fenced(missing)),
            FakeReply::Text(fenced(&format!("{GOOD}print(undefined_later)\n"))),
        ],
    );
    let out = reproduce_with(
        tmp.path(),
        &server,
        &[
            "--runs",
            "2",
            "--attempts",
            "2",
            "--no-minimize",
            "--no-plan",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let attempts = read_json(tmp.path().join("repro/attempts.json"));
    assert!(attempts.get("plan").is_none(), "--no-plan asks for none");
    let first = &attempts["attempts"][0];
    assert!(first["verdict"].is_null(), "not run: {first}");
    assert_eq!(first["precheck"][0]["kind"], "missing-module");
    assert_eq!(first["precheck"][0]["line"], 2);
    assert!(
        first["problem"]
            .as_str()
            .unwrap()
            .starts_with("not run: line 2: `tensorflow_addons_not_here` cannot be imported"),
        "{first}"
    );
    // The second script reproduces before its undefined name is reached: advisory only.
    let second = &attempts["attempts"][1];
    assert_eq!(second["verdict"]["reproduced"], true, "{second}");
    assert_eq!(second["precheck"][0]["kind"], "undefined-name");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let feedback = requests[1].body["messages"].to_string();
    assert!(
        feedback.contains("I did not run your script")
            && feedback.contains("tensorflow_addons_not_here"),
        "{feedback}"
    );
    let store = reprolab_store::Store::open(&tmp.path().join("store.db")).unwrap();
    assert_eq!(
        store.count_script_runs().unwrap(),
        2,
        "only the second script ran, once per seed"
    );
}

#[test]
fn the_llm_loop_gives_an_honest_no_when_every_attempt_fails() {
    let tmp = tempfile::tempdir().unwrap();
    let server = FakeServer::start_background(Flavor::OpenAi, []);
    server.set_fallback(FakeReply::Text(fenced(OWN_RAISE)));
    let out = reproduce_with(tmp.path(), &server, &["--runs", "1", "--attempts", "2"]);
    assert_eq!(out.status.code(), Some(1));
    let verdict = read_json(tmp.path().join("repro/verdict.json"));
    assert_eq!(verdict["reproduced"], false);
    let reason = verdict["verdict"]["reasons"][0].as_str().unwrap();
    assert!(reason.contains("own `raise`"), "{reason}");

    // A model that cannot be reached: exit 3, the attempt recorded.
    let dead = FakeServer::start_background(Flavor::OpenAi, []);
    dead.set_fallback(FakeReply::Status(500, None));
    let out = reproduce_with(tmp.path(), &dead, &["--runs", "1", "--llm-attempts", "1"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stdout).contains("the model call failed"));
}

#[test]
fn a_reproduction_from_the_model_is_minimised() {
    let tmp = tempfile::tempdir().unwrap();
    let padded = format!(
        "import os
import math
print('setting up')
unused = [math.sqrt(i) for i in range(3)]
{GOOD}print('done')
"
    );
    let server =
        FakeServer::start_background(Flavor::OpenAi, [plan(), FakeReply::Text(fenced(&padded))]);
    let out = reproduce_with(tmp.path(), &server, &["--runs", "1"]);
    assert_eq!(out.status.code(), Some(0));
    let out_dir = tmp.path().join("repro");
    assert_eq!(
        std::fs::read_to_string(out_dir.join("reproduce.py")).unwrap(),
        GOOD
    );
    assert_eq!(
        std::fs::read_to_string(out_dir.join("reproduce.full.py")).unwrap(),
        padded
    );
    let verdict = read_json(out_dir.join("verdict.json"));
    assert_eq!(verdict["reproduced"], true);
    assert_eq!(verdict["origin"]["minimized"]["removed"], 5);
}

#[test]
fn the_prompt_holds_the_repos_definitions_that_the_traceback_names() {
    let tmp = tempfile::tempdir().unwrap();
    let repo_dir = tmp.path().join("project");
    std::fs::create_dir_all(repo_dir.join("gan")).unwrap();
    std::fs::write(
        repo_dir.join("gan/heads.py"),
        "import torch\n\n\ndef discriminator_head(features):\n    out = torch.sigmoid(features)\n    return out.view(-1)\n\n\ndef load_checkpoint(model, path):\n    state = torch.load(path, map_location='cpu')\n    model.load_state_dict(state['model'])\n",
    )
    .unwrap();
    std::fs::write(repo_dir.join("gan/broken.py"), "def oops(:\n").unwrap();
    let text = REPORT.replace(
        "  File \"train.py\", line 40, in <module>\n    loss = criterion(out, label)\n",
        "  File \"train.py\", line 40, in <module>\n    loss = criterion(discriminator_head(feats), label)\n  File \"gan/heads.py\", line 6, in discriminator_head\n    return out.view(-1)\n",
    );
    let report = write(tmp.path(), "report.md", &text);
    let out_dir = tmp.path().join("repro");
    // `reproduce --context N` with a fake model that plans, then writes the good script.
    let reproduce = |context: &str| {
        let server =
            FakeServer::start_background(Flavor::OpenAi, [plan(), FakeReply::Text(fenced(GOOD))]);
        let out = run(cmd(tmp.path())
            .args(["reproduce"])
            .arg(&report)
            .arg("--repo")
            .arg(&repo_dir)
            .args([
                "--runs",
                "1",
                "--no-minimize",
                "--context",
                context,
                "--out",
            ])
            .arg(&out_dir)
            .arg("--llm")
            .arg(format!("openai:fake@{}", server.base_url())));
        (server, out)
    };
    let (server, out) = reproduce("1");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let requests = server.requests();
    let first = requests[0].body["messages"][1]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        first.contains("<context file=\"gan/heads.py\" name=\"discriminator_head\" lines=\"4-6\">\ndef discriminator_head(features):"),
        "{first}"
    );
    assert!(!first.contains("load_checkpoint"), "{first}");
    let verdict: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("verdict.json")).unwrap())
            .unwrap();
    let given = &verdict["origin"]["context"];
    assert_eq!(given.as_array().unwrap().len(), 1, "{given}");
    assert_eq!(given[0]["file"], "gan/heads.py");
    assert_eq!(given[0]["name"], "discriminator_head");
    assert_eq!(given[0]["why"], "traceback");
    assert!(given[0]["score"].as_f64().unwrap() > 0.0);
    let attempts: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("attempts.json")).unwrap())
            .unwrap();
    assert_eq!(attempts["context"][0]["name"], "discriminator_head");

    // --context 0: no code in the prompt.
    let (server, out) = reproduce("0");
    assert_eq!(out.status.code(), Some(0));
    let first = server.requests()[0].body["messages"].to_string();
    assert!(!first.contains("<context"), "{first}");
}

/// Without `--repo`, a pinned package that is not a framework is the code: its installed source
/// (networkx comes with torch in the managed environment).
#[test]
fn a_pinned_packages_installed_source_is_the_context() {
    let tmp = tempfile::tempdir().unwrap();
    let text = "# shortest_path fails for a node that exists\n\n```\nTraceback (most recent call last):\n  File \"main.py\", line 9, in <module>\n    nx.shortest_path(G, 0, 5)\n  File \"/usr/lib/python3.11/site-packages/networkx/algorithms/shortest_paths/generic.py\", line 150, in shortest_path\n    paths = nx.bidirectional_shortest_path(G, source, target)\nnetworkx.exception.NetworkXError: Either source 0 or target 5 is not in G\n```\n\nEnvironment: torch 2.15.0, networkx 3.6.1\n";
    let report = write(tmp.path(), "report.md", text);
    let server =
        FakeServer::start_background(Flavor::OpenAi, [plan(), FakeReply::Text(fenced(GOOD))]);
    let out_dir = tmp.path().join("repro");
    let out = run(cmd(tmp.path())
        .args(["reproduce"])
        .arg(&report)
        .args([
            "--package",
            "networkx==3.6.1",
            "--runs",
            "1",
            "--attempts",
            "1",
        ])
        .args(["--no-minimize", "--context", "1", "--out"])
        .arg(&out_dir)
        .arg("--llm")
        .arg(format!("openai:fake@{}", server.base_url())));
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let first = server.requests()[0].body["messages"][1]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        first.contains(
            "<context file=\"algorithms/shortest_paths/generic.py\" name=\"shortest_path\""
        ),
        "{first}"
    );
    assert_eq!(first.matches("<context file=").count(), 1, "{first}");
}

/// The whole bundled benchmark, as `bench reproduce --verify-only` runs it (5 seeds, warm
/// workers): every reference confirmed, every near-miss rejected, and the symptom class read from
/// each report as annotated save bug 19's (docs/reproduce.md says why).
#[test]
fn the_whole_bundled_benchmark_verifies() {
    let tmp = tempfile::tempdir().unwrap();
    let out = run(cmd(tmp.path())
        .args(["bench", "reproduce"])
        .arg(repo().join("benchmarks/bugs"))
        .args(["--verify-only", "--out"])
        .arg(tmp.path().join("bench"))
        .arg("--json"));
    assert_eq!(
        out.status.code(),
        Some(0),
        "every reference confirmed, every near-miss rejected"
    );
    let rows = json(&out);
    let rows = rows.as_array().unwrap();
    assert!(rows.len() >= 28);
    for row in rows {
        assert_eq!(row["reference"]["reproduced"], true, "{row}");
        assert_eq!(row["near_miss"]["reproduced"], false, "{row}");
        assert_eq!(
            row["reference"]["showing"], 5,
            "stable over the seeds: {row}"
        );
    }
    let misread: Vec<&str> = rows
        .iter()
        .filter(|r| {
            let (a, e) = (
                r["symptom_annotated"].as_str().unwrap_or(""),
                r["symptom_extracted"].as_str().unwrap_or(""),
            );
            a != e && !(a == "code-inspection" && e == "value")
        })
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(misread, vec!["19-keras-softmax-single-unit"]);
}

#[test]
fn a_silent_bug_gets_the_models_opinion_beside_the_verdict() {
    let tmp = tempfile::tempdir().unwrap();
    let report = write(
        tmp.path(),
        "nan.md",
        "# Loss is nan\n\nThe loss becomes nan on the first step.\n\nEnvironment: torch 2.15.0\n",
    );
    let script = "import torch, reprolab\nzero = torch.zeros(1)\nreprolab.report(loss=(torch.log(zero) - torch.log(zero)).item())\n";
    let server = FakeServer::start_background(
        Flavor::OpenAi,
        [
            plan(),
            FakeReply::Text(fenced(script)),
            FakeReply::Text("{\"reproduced\": false, \"reason\": \"made-up doubt\"}".into()),
        ],
    );
    let out = run(cmd(tmp.path())
        .arg("reproduce")
        .arg(&report)
        .args(["--runs", "1", "--no-minimize", "--out"])
        .arg(tmp.path().join("repro"))
        .arg("--llm")
        .arg(format!("openai:fake@{}", server.base_url())));
    assert_eq!(
        out.status.code(),
        Some(0),
        "the rules decide: the loss is NaN"
    );
    let verdict = read_json(tmp.path().join("repro/verdict.json"));
    assert_eq!(verdict["reproduced"], true);
    assert_eq!(verdict["llm_opinion"]["reproduced"], false);
    assert_eq!(
        verdict["llm_opinion"]["label"],
        "an LLM's opinion, not the verdict"
    );
    let judged = server.requests()[2].body["messages"].to_string();
    assert!(
        judged.contains("reported loss: NaN") || judged.contains("loss is NaN"),
        "the judge sees what ran: {judged}"
    );
}

/// SmolLM2-135M's real answers for three bundled bugs (recorded with `--llm-record` by the
/// command below, release build) replayed offline through the bench, end to end with a real
/// model: asked for a plan, it writes code, which holds no steps, so each attempt gets the task
/// alone; each attempt's answer is cut at 768 tokens in the middle of a statement, and the
/// pre-check answers it without a run. Re-record after changing a prompt:
/// `reprolab bench reproduce benchmarks/bugs --llm local:smollm2 --llm-record DIR --attempts 1
///  --max-tokens 768 --runs 3 --only 02-bce-target-size,20-nan-log-zero-aggregation,09-numpy-requires-grad`
#[test]
fn smollm2_recorded_answers_replay_through_the_bench() {
    let tmp = tempfile::tempdir().unwrap();
    let out = run(cmd(tmp.path())
        .args(["bench", "reproduce"])
        .arg(repo().join("benchmarks/bugs"))
        .args([
            "--attempts",
            "1",
            "--max-tokens",
            "768",
            "--runs",
            "3",
            "--only",
        ])
        .arg("02-bce-target-size,20-nan-log-zero-aggregation,09-numpy-requires-grad")
        .arg("--out")
        .arg(tmp.path().join("bench"))
        .arg("--llm")
        .arg(format!(
            "replay:{}",
            fixture("cassettes/smollm2-reproduce").display()
        ))
        .arg("--json"));
    assert_eq!(out.status.code(), Some(0));
    let rows = json(&out);
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 3);
    for row in rows {
        assert_eq!(row["attempts"], 1, "{row}");
        assert_eq!(row["calls"], 2, "the plan and the attempt replayed: {row}");
        let attempts = read_json(
            tmp.path()
                .join("bench")
                .join(row["id"].as_str().unwrap())
                .join("attempts.json"),
        );
        assert_eq!(
            attempts["plan"]["problem"], "the planning answer held no steps",
            "{attempts}"
        );
        assert_eq!(
            row["reproduced"], false,
            "SmolLM2 reproduces none of them: {row}"
        );
        let reason = row["reason"].as_str().unwrap();
        assert!(
            reason.starts_with("not run: line ") && reason.contains("SyntaxError"),
            "{row}"
        );
    }
    let store = reprolab_store::Store::open(&tmp.path().join("store.db")).unwrap();
    assert_eq!(store.count_script_runs().unwrap(), 0, "nothing was run");
    let report = std::fs::read_to_string(tmp.path().join("bench/report.md")).unwrap();
    assert!(report.contains("| all | 0/3 (0.0%) |"), "{report}");
}
