//! `reprolab codegen` on small fixture tasks (tests/fixtures/codegen): every sample status —
//! pass, fail, error, timeout, oom, output_limit, no_code, patch_error — from answers that loop,
//! allocate without bound, fork 200 children, print megabytes and try the network; per-test
//! outcomes and taxonomy labels; pass@k against hand-computed values; repository tasks patched in
//! a copy; resuming from the store; task validation; the warm-vs-fresh benchmark.

mod common;

use std::collections::HashMap;
use std::path::Path;

use common::*;
use serde_json::Value;

fn codegen_fixture(name: &str) -> std::path::PathBuf {
    fixture("codegen").join(name)
}

fn read_jsonl(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Whether this machine can cut processes off the network (`unshare -rn`).
fn isolation_available() -> bool {
    std::process::Command::new("unshare")
        .args(["-rn", "true"])
        .status()
        .is_ok_and(|s| s.success())
}

/// Run the fixture, watching for the forker's children (tagged `sleep` processes): returns the
/// output and the most of them seen at once during the run.
fn run_fixture(dir: &Path, out: &Path) -> (std::process::Output, usize) {
    let tag = format!("600.{}{}", std::process::id(), dir.to_string_lossy().len());
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watcher = {
        let (stop, tag) = (stop.clone(), tag.clone());
        std::thread::spawn(move || {
            let mut most = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                most = most.max(tagged(&tag).len());
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            most
        })
    };
    let output = run_fixture_tagged(dir, out, &tag);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let most = watcher.join().unwrap();
    assert!(
        tagged(&tag).is_empty(),
        "the forker's children outlived the run"
    );
    (output, most)
}

fn run_fixture_tagged(dir: &Path, out: &Path, tag: &str) -> std::process::Output {
    run(reprolab(dir)
        .env("TMPDIR", dir)
        .env("REPROLAB_PASS_ENV", "REPROLAB_TEST_TAG")
        .env("REPROLAB_TEST_TAG", tag)
        // A minimum limit of 8 s (the fixture's own bound for fn/scale) keeps verdicts stable on
        // a loaded machine; loops and forks still end at the limit.
        .args([
            "codegen",
            "run",
            "--json",
            "-j",
            "2",
            "--memory-mb",
            "300",
            "--output-mb",
            "1",
            "--timeout-min",
            "8",
        ])
        .arg(codegen_fixture("tasks.jsonl"))
        .arg("--generations")
        .arg(codegen_fixture("generations.jsonl"))
        .arg("--out")
        .arg(out))
}

#[test]
fn run_judges_every_kind_of_answer_and_resumes_from_the_store() {
    let tmp = tempfile::tempdir().unwrap();
    let out_dir = tmp.path().join("out");
    let (out, forked) = run_fixture(tmp.path(), &out_dir);
    assert_eq!(out.status.code(), Some(0), "no infrastructure error");

    let results = read_jsonl(&out_dir.join("results.jsonl"));
    assert_eq!(results.len(), 18);
    let by: HashMap<(String, u64), &Value> = results
        .iter()
        .map(|r| {
            (
                (
                    r["task_id"].as_str().unwrap().to_string(),
                    r["sample"].as_u64().unwrap(),
                ),
                r,
            )
        })
        .collect();
    let get = |task: &str, s: u64| by[&(task.to_string(), s)];
    let status = |task: &str, s: u64| get(task, s)["status"].as_str().unwrap().to_string();
    let expect = |task: &str, s: u64, want: &str| {
        let r = get(task, s);
        assert_eq!(r["status"], want, "{task} sample {s}: {r:#}");
    };
    let failure_type = |task: &str, s: u64| {
        get(task, s)["failure"]["type"]
            .as_str()
            .unwrap_or("")
            .to_string()
    };
    let rule = |task: &str, s: u64| {
        get(task, s)["taxonomy"]["rule"]
            .as_str()
            .unwrap_or("")
            .to_string()
    };

    // fn/scale: one answer of every kind
    expect("fn/scale", 0, "pass");
    assert_eq!(get("fn/scale", 0)["extraction"], "python_block");
    expect("fn/scale", 1, "fail");
    expect("fn/scale", 2, "no_code");
    expect("fn/scale", 3, "error");
    assert_eq!(failure_type("fn/scale", 3), "SyntaxError");
    assert_eq!(get("fn/scale", 3)["taxonomy"]["category"], "syntax_error");
    expect("fn/scale", 4, "timeout");
    expect("fn/scale", 5, "oom");
    expect("fn/scale", 6, "output_limit");
    if isolation_available() {
        expect("fn/scale", 7, "fail");
        assert_eq!(failure_type("fn/scale", 7), "OSError");
        assert_eq!(rule("fn/scale", 7), "network");
    }
    expect("fn/scale", 8, "fail");
    assert_eq!(failure_type("fn/scale", 8), "NameError");
    assert_eq!(
        get("fn/scale", 8)["taxonomy"]["category"],
        "hallucinated_object"
    );
    expect("fn/scale", 9, "fail");
    // a shape assertion: labelled by what the code did (the output shapes differ from the
    // reference's on the test's call), the same label the assertion's rule gave
    assert_eq!(rule("fn/scale", 9), "behaviour_shape");
    assert_eq!(
        get("fn/scale", 9)["taxonomy"]["subtype"],
        "shape_dimension_mismatch"
    );

    // Per-test outcomes with the exception's type, message and traceback.
    let wrong = get("fn/scale", 1);
    let tests = wrong["tests"].as_array().unwrap();
    assert_eq!(tests.len(), 3);
    assert_eq!(
        (wrong["passed"].as_u64(), wrong["total"].as_u64()),
        (Some(1), Some(3))
    );
    let failed = tests.iter().find(|t| t["outcome"] == "failed").unwrap();
    assert_eq!(failed["type"], "AssertionError");
    assert!(
        failed["traceback"]
            .as_str()
            .unwrap()
            .contains("test_task.py"),
        "{failed}"
    );

    // An answer without fences that parses is code.
    expect("fn/moving_average", 0, "pass");
    assert_eq!(get("fn/moving_average", 0)["extraction"], "raw_text");
    expect("fn/moving_average", 1, "fail");

    // 200 forked children: whatever the verdict, none may outlive the sample.
    let forker = status("fn/forker", 0);
    assert!(forker == "pass" || forker == "timeout", "forker: {forker}");
    // run_fixture checked that none survived; here that there were some.
    assert!(forked > 0, "the forker forked");

    // Repository tasks: the definition is replaced in a copy, never in the fixture.
    expect("repo/clip", 0, "pass");
    expect("repo/clip", 1, "patch_error");
    assert_eq!(rule("repo/clip", 1), "no_definition");
    expect("repo/clip", 2, "fail");
    assert_eq!(
        (
            get("repo/clip", 2)["passed"].as_u64(),
            get("repo/clip", 2)["total"].as_u64()
        ),
        (Some(2), Some(3))
    );
    expect("repo/scaler_apply", 0, "pass");
    expect("repo/scaler_apply", 1, "pass");
    let ops = std::fs::read_to_string(codegen_fixture("repos/tiny/pkg/ops.py")).unwrap();
    assert!(ops.contains("return torch.clamp(x, min=lo, max=hi)") && !ops.contains("_bounded"));

    // pass@k: fn/scale has n = 10 samples, c = 1 → pass@1 = 0.1,
    // pass@5 = 1 − C(9,5)/C(10,5) = 1 − 126/252 = 0.5, pass@10 = 1.
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("summary.json")).unwrap())
            .unwrap();
    let scale = summary["per_task"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["task_id"] == "fn/scale")
        .unwrap();
    let pass_at = |row: &Value, k: u64| {
        row["pass_at"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["k"] == k)
            .unwrap()["value"]
            .as_f64()
            .unwrap()
    };
    assert_eq!(
        (scale["n"].as_u64(), scale["c"].as_u64()),
        (Some(10), Some(1))
    );
    assert!((pass_at(scale, 1) - 0.1).abs() < 1e-12);
    assert!((pass_at(scale, 5) - 0.5).abs() < 1e-12);
    assert!((pass_at(scale, 10) - 1.0).abs() < 1e-12);
    // Overall pass@1 is the mean over tasks of c/n; only k = 1 is reported (some n < 5).
    let mut per_task: HashMap<&str, (f64, f64)> = HashMap::new();
    for r in &results {
        let e = per_task.entry(r["task_id"].as_str().unwrap()).or_default();
        e.0 += 1.0;
        e.1 += (r["status"] == "pass") as u8 as f64;
    }
    let expected = per_task.values().map(|(n, c)| c / n).sum::<f64>() / per_task.len() as f64;
    assert_eq!(summary["ks"], serde_json::json!([1]));
    assert!((summary["pass_at"][0]["value"].as_f64().unwrap() - expected).abs() < 1e-12);
    // One shape for pass@k everywhere: {k, value} overall, per task and per group.
    for group in summary["by_stage"].as_array().unwrap() {
        assert_eq!(group["pass_at"][0]["k"], 1, "{group}");
        assert!(group["pass_at"][0].get("value").is_some(), "{group}");
    }
    assert_eq!(summary["statuses"]["infra"], 0);

    // Reports
    let md = std::fs::read_to_string(out_dir.join("report.md")).unwrap();
    for needle in [
        "Deep-Bench Table 3",
        "Deep-Bench Table 5",
        "Distribution of failures",
        "output_limit",
        "Harness",
    ] {
        assert!(md.contains(needle), "report.md lacks {needle}");
    }
    let html = std::fs::read_to_string(out_dir.join("report.html")).unwrap();
    assert!(html.contains("<svg") && !html.contains("<script"));

    // Second run: everything that ran comes from the store, with the same verdicts.
    let (again, _) = run_fixture(tmp.path(), &out_dir);
    assert_eq!(again.status.code(), Some(0));
    let v = json(&again);
    let ran = results.iter().filter(|r| r["status"] != "no_code").count() as u64;
    assert_eq!(v["cached"].as_u64(), Some(ran), "every sample reused");
    assert_eq!(
        v["runners_started"], false,
        "nothing ran, so no test runner was started"
    );
    let results2 = read_jsonl(&out_dir.join("results.jsonl"));
    let statuses = |rs: &[Value]| {
        rs.iter()
            .map(|r| r["status"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(statuses(&results), statuses(&results2));

    // The report is re-rendered from the run directory alone.
    let rep = run(reprolab(tmp.path())
        .args(["codegen", "report", "--json"])
        .arg(&out_dir));
    assert_eq!(rep.status.code(), Some(0));
    assert_eq!(json(&rep)["summary"]["pass_at"], summary["pass_at"]);
}

#[test]
fn validate_flags_failing_references_weak_tests_and_missing_targets() {
    let tmp = tempfile::tempdir().unwrap();
    let out = run(reprolab(tmp.path())
        .args(["codegen", "validate", "--json", "--wrong", "-j", "1"])
        .arg(codegen_fixture("broken.jsonl")));
    assert_eq!(out.status.code(), Some(1), "invalid tasks exit 1");
    let v = json(&out);
    let problems = |id: &str| -> String {
        v["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["task_id"] == id)
            .unwrap()["problems"]
            .to_string()
    };
    assert!(
        problems("bad/import").contains("ModuleNotFoundError"),
        "{}",
        problems("bad/import")
    );
    assert!(
        problems("bad/weak").contains("wrong[0] passes every test"),
        "{}",
        problems("bad/weak")
    );
    assert!(
        problems("bad/few_tests").contains("expected at least 3"),
        "{}",
        problems("bad/few_tests")
    );
    assert!(
        problems("bad/missing_target").contains("TargetMissing"),
        "{}",
        problems("bad/missing_target")
    );
    assert_eq!(v["invalid"], 4);
}

#[test]
fn the_fixture_tasks_are_valid_and_their_wrong_solutions_are_caught() {
    let tmp = tempfile::tempdir().unwrap();
    let out = run(reprolab(tmp.path())
        .args(["codegen", "validate", "--wrong", "-j", "1"])
        .arg(codegen_fixture("tasks.jsonl")));
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("5 of 5 tasks valid"), "{text}");
    assert!(text.contains("1/1 caught"), "{text}");
}

#[test]
fn task_file_errors_name_the_line_and_the_field() {
    let tmp = tempfile::tempdir().unwrap();
    let bad = tmp.path().join("tasks.jsonl");
    std::fs::write(
        &bad,
        "{\"id\": \"a\", \"prompt\": \"p\", \"entry_point\": \"f\", \"reference\": \"x\", \"test\": \"y\", \
         \"labels\": {\"stage\": \"pretraining\", \"task\": \"general\", \"data\": \"image\"}}\n",
    )
    .unwrap();
    let out = run(reprolab(tmp.path()).args(["codegen", "validate"]).arg(&bad));
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("tasks.jsonl:1: field `labels.stage`: found \"pretraining\", expected one of: pre_post_processing"),
        "{err}"
    );
}

#[test]
fn bench_compares_warm_runners_with_fresh_processes() {
    let tmp = tempfile::tempdir().unwrap();
    let out = run(reprolab(tmp.path())
        .env("TMPDIR", tmp.path())
        .args([
            "codegen",
            "bench",
            "--json",
            "-j",
            "2",
            "--repeat",
            "2",
            "--only",
            "fn/moving_average",
        ])
        .arg(codegen_fixture("tasks.jsonl")));
    assert_eq!(out.status.code(), Some(0));
    let v = json(&out);
    assert_eq!(v["samples"], 2);
    for mode in ["warm", "fresh"] {
        assert!(v[mode]["samples_per_min"].as_f64().unwrap() > 0.0, "{v}");
        assert!(v[mode]["mean_overhead_s"].as_f64().unwrap() >= 0.0, "{v}");
    }
    assert_eq!(v["status_disagreements"], 0, "{v}");
    assert!(v["throughput_ratio"].as_f64().unwrap() > 0.0);
}

#[test]
fn help_shows_examples() {
    let tmp = tempfile::tempdir().unwrap();
    for verb in ["validate", "run", "report", "bench"] {
        let out = run(reprolab(tmp.path()).args(["codegen", verb, "--help"]));
        assert_eq!(out.status.code(), Some(0));
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("Example"),
            "{verb}"
        );
    }
}

#[test]
fn run_generates_with_an_llm_and_resumes_without_asking_again() {
    use reprolab_llm::fake::{FakeReply, FakeServer, Flavor};
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    // Two answers for fn/scale: a correct one in prose with a fence, and a wrong one.
    let server = FakeServer::start_background(
        Flavor::OpenAi,
        [FakeReply::Choices(vec![
            "Here you go:\n```python\nimport torch\n\ndef scale(x, factor):\n    return x * factor\n```\nHope it helps.".into(),
            "```python\ndef scale(x, factor):\n    return x + factor\n```".into(),
        ])],
    );
    let go = || {
        let mut c = reprolab(tmp.path());
        c.env_remove("REPROLAB_LLM_CONFIG")
            .env("TMPDIR", tmp.path())
            .env("REPROLAB_LLM", format!("openai:fake@{}", server.base_url()))
            .args([
                "codegen",
                "run",
                "--json",
                "--samples",
                "2",
                "--temperature",
                "0.8",
                "--only",
                "fn/scale",
            ])
            .arg(codegen_fixture("tasks.jsonl"))
            .arg("--out")
            .arg(&out);
        run(&mut c)
    };
    let first = go();
    assert!(
        first.status.code().is_some(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let results = read_jsonl(&out.join("results.jsonl"));
    let mut statuses: Vec<String> = results
        .iter()
        .map(|r| r["status"].as_str().unwrap_or_default().to_string())
        .collect();
    statuses.sort();
    assert_eq!(statuses, ["fail", "pass"], "{results:?}");
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].body["n"], 2);
    assert_eq!(requests[0].body["temperature"], 0.8);
    let prompt = requests[0].body["messages"][0]["content"].as_str().unwrap();
    assert!(prompt.contains("def scale(x: torch.Tensor, factor: float)"));
    // A rerun reads the generations back: the model is not asked again.
    let second = go();
    assert_eq!(second.status.code(), first.status.code());
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn classify_llm_refines_failure_labels_and_keeps_the_rules_label() {
    use reprolab_llm::fake::{FakeReply, FakeServer, Flavor};
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let answers = tmp.path().join("answers.jsonl");
    // fn/scale: a pass and three failures of different kinds (assertion, NameError, syntax).
    let bodies = [
        "def scale(x, factor):\n    return x * factor\n",
        "def scale(x, factor):\n    return x + factor\n",
        "def scale(x, factor):\n    return np.multiply(x, factor)\n",
        "def scale(x, factor:\n    return x * factor\n",
    ];
    let lines: String = bodies
        .iter()
        .enumerate()
        .map(|(i, code)| {
            let completion = format!("```python\n{code}```\n");
            format!(
                "{}\n",
                serde_json::json!({"task_id": "fn/scale", "sample": i, "completion": completion})
            )
        })
        .collect();
    std::fs::write(&answers, lines).unwrap();
    // None of these failures' rules gives silly_mistake, so the classifier's label is a change.
    // The three calls run concurrently: which failure gets which reply is not fixed.
    let relabel = "{\"category\": \"silly_mistake\", \"subtype\": \"not_dl_related\"}";
    let server = FakeServer::start_background(
        Flavor::OpenAi,
        [
            FakeReply::Text(format!("```json\n{relabel}\n```")),
            FakeReply::Text("It is hard to say what went wrong here.".into()),
            FakeReply::Status(500, None),
        ],
    );
    let go = || {
        let mut c = reprolab(tmp.path());
        c.env_remove("REPROLAB_LLM")
            .env_remove("REPROLAB_LLM_CONFIG")
            .env("TMPDIR", tmp.path())
            .args([
                "codegen",
                "run",
                "--json",
                "--timeout-min",
                "8",
                "--llm-attempts",
                "1",
                "--only",
                "fn/scale",
                "--classify-llm",
            ])
            .arg(format!("openai:fake@{}", server.base_url()))
            .arg(codegen_fixture("tasks.jsonl"))
            .arg("--generations")
            .arg(&answers)
            .arg("--out")
            .arg(&out);
        run(&mut c)
    };
    let first = go();
    assert_eq!(
        first.status.code(),
        Some(0),
        "a failed classifier call is no error"
    );
    assert!(
        String::from_utf8_lossy(&first.stderr).contains("1 classifier calls failed"),
        "the failed call is reported"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "one call per failure, none for the pass");
    let prompt = requests[0].body["messages"][0]["content"].as_str().unwrap();
    assert!(prompt.contains("Deep-Bench") && prompt.contains("def scale(x, factor"));
    assert_eq!(requests[0].body["temperature"], 0.0);

    let verdicts = |results: &[Value]| {
        let mut v: Vec<String> = results
            .iter()
            .filter_map(|r| r["refinement"]["verdict"].as_str().map(String::from))
            .collect();
        v.sort();
        v
    };
    let results = read_jsonl(&out.join("results.jsonl"));
    assert_eq!(verdicts(&results), ["failed", "labelled", "unparsed"]);
    for r in &results {
        let rules = &r["refinement"]["rules"];
        match r["refinement"]["verdict"].as_str() {
            None => assert_eq!(r["status"], "pass", "{r:#}"),
            Some("labelled") => {
                assert_eq!(r["taxonomy"]["category"], "silly_mistake", "{r:#}");
                assert_eq!(r["taxonomy"]["source"], "llm");
                assert_eq!(r["taxonomy"]["rule"], rules["rule"], "the rule is kept");
                assert_eq!(rules["source"], "rules");
            }
            Some(_) => assert_eq!(&r["taxonomy"], rules, "the rules' label stands: {r:#}"),
        }
    }
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let c = &summary["classifier"];
    let counts: Vec<u64> = ["asked", "labelled", "changed", "unparsed", "failed"]
        .iter()
        .map(|k| c[k].as_u64().unwrap())
        .collect();
    assert_eq!(counts, [3, 1, 1, 1, 1], "{c:#}");
    assert_eq!(c["models"], serde_json::json!(["openai:fake"]));
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        md.contains("Labels the LLM classifier changed") && md.contains("Silly Mistake"),
        "{md}"
    );

    // A rerun runs no test and asks only about the failure whose call failed.
    server.push(FakeReply::Text(relabel.into()));
    let second = go();
    assert_eq!(second.status.code(), Some(0));
    assert_eq!(json(&second)["cached"], 4, "every sample reused");
    assert_eq!(server.requests().len(), 4);
    let results = read_jsonl(&out.join("results.jsonl"));
    assert_eq!(verdicts(&results), ["labelled", "labelled", "unparsed"]);
}

/// Answers for fn/scale: sample 0 kills the process that runs it (its parent), sample 1 is right.
fn parent_killing_generations(dir: &Path) -> std::path::PathBuf {
    let kill = "```python\nimport os, signal\n\n\ndef scale(x, factor):\n    os.kill(os.getppid(), signal.SIGKILL)\n    return x * factor\n```\n";
    let good = "```python\ndef scale(x, factor):\n    return x * factor\n```\n";
    let path = dir.join("gens.jsonl");
    let lines: Vec<String> = [kill, good]
        .iter()
        .enumerate()
        .map(|(i, c)| {
            serde_json::json!({"task_id": "fn/scale", "sample": i, "completion": c}).to_string()
        })
        .collect();
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

#[test]
fn a_sample_that_kills_its_runner_is_a_counted_failure_and_reprolab_survives() {
    for (fresh, isolation) in [(false, "0"), (false, "1"), (true, "0"), (true, "1")] {
        let tmp = tempfile::tempdir().unwrap();
        let gens = parent_killing_generations(tmp.path());
        let out_dir = tmp.path().join("out");
        let mut cmd = reprolab(tmp.path());
        cmd.env("TMPDIR", tmp.path())
            .env(
                "REPROLAB_NO_ISOLATION",
                if isolation == "1" { "0" } else { "1" },
            )
            // A fresh pytest imports torch per sample: seconds on a loaded machine.
            .args(["codegen", "run", "--json", "-j", "1", "--timeout-min", "60"]);
        if fresh {
            cmd.arg("--fresh");
        }
        let out = run(cmd
            .arg(codegen_fixture("tasks.jsonl"))
            .arg("--generations")
            .arg(&gens)
            .arg("--out")
            .arg(&out_dir));
        let what = format!("fresh {fresh}, isolation {isolation}");
        assert_eq!(out.status.code(), Some(0), "{what}: reprolab finished");
        let results = read_jsonl(&out_dir.join("results.jsonl"));
        assert_eq!(results.len(), 2, "{what}");
        let sample = |i: u64| {
            results
                .iter()
                .find(|r| r["sample"] == i)
                .unwrap_or_else(|| panic!("{what}: no sample {i}"))
        };
        // A fresh pytest imports torch per sample and the task's own bound caps the time limit:
        // on a loaded machine the good sample may time out. Either way it is counted.
        let good = sample(1)["status"].as_str().unwrap();
        assert!(
            good == "pass" || (fresh && good == "timeout"),
            "{what}: {good}"
        );
        let killer = sample(0)["status"].as_str().unwrap();
        if fresh && isolation == "0" {
            // Without namespaces or Landlock the signal reaches the `reprolab.sandbox` parent
            // (not reprolab); seen once to miss it (the sample then passed). What must hold:
            // reprolab survived (exit 0 above) and the sample is counted, not `infra`.
            assert_ne!(killer, "infra", "{what}: {:#}", sample(0));
        } else {
            assert!(
                ["error", "fail"].contains(&killer) || (fresh && killer == "timeout"),
                "{what}: the killing sample is a failure of its code, counted: {:#}",
                sample(0)
            );
        }
        if !fresh {
            let summary = json(&out);
            assert_eq!(
                summary["summary"]["pass_at"][0]["value"], 0.5,
                "{what}: {summary}"
            );
        }
    }
}

#[test]
fn report_says_when_a_run_is_incomplete() {
    let tmp = tempfile::tempdir().unwrap();
    let gens = parent_killing_generations(tmp.path());
    let out_dir = tmp.path().join("out");
    let out = run(reprolab(tmp.path())
        .env("TMPDIR", tmp.path())
        .args(["codegen", "run", "--json", "-j", "1"])
        .arg(codegen_fixture("tasks.jsonl"))
        .arg("--generations")
        .arg(&gens)
        .arg("--out")
        .arg(&out_dir));
    assert_eq!(out.status.code(), Some(0));
    let report = |dir: &Path| {
        json(&run(reprolab(tmp.path())
            .args(["codegen", "report", "--json"])
            .arg(dir)))
    };
    assert_eq!(report(&out_dir)["complete"], true);
    // What a killed run leaves: run.json not finished, one of two results.
    let run_file = out_dir.join("run.json");
    let mut info: Value =
        serde_json::from_str(&std::fs::read_to_string(&run_file).unwrap()).unwrap();
    info["finished_at"] = "".into();
    std::fs::write(&run_file, info.to_string()).unwrap();
    let results = std::fs::read_to_string(out_dir.join("results.jsonl")).unwrap();
    std::fs::write(
        out_dir.join("results.jsonl"),
        results.lines().nth(1).unwrap(),
    )
    .unwrap();
    let v = report(&out_dir);
    assert_eq!(v["complete"], false, "{v}");
    assert!(
        v["incomplete"].as_str().unwrap().contains("1 of 2 samples"),
        "{v}"
    );
    let md = std::fs::read_to_string(out_dir.join("report.md")).unwrap();
    assert!(md.contains("INCOMPLETE RUN"), "{md}");
}

/// Answers that carry the failure label they should get (Deep-Bench titles as aliases).
fn labelled_generations(dir: &Path) -> std::path::PathBuf {
    let lines = [
        serde_json::json!({"task_id": "fn/scale", "sample": 0,
            "completion": "```python\ndef scale(x, factor):\n    return torch.mul(x, factor)\n```",
            "expected_label": "Hallucinated object"}),
        serde_json::json!({"task_id": "fn/scale", "sample": 1,
            "completion": "```python\nimport torch\n\ndef scale(x, factor):\n    return x.numpy() * factor\n```",
            "expected_label": {"category": "Misinterpretation", "subtype": "incorrect DL library usage"}}),
        serde_json::json!({"task_id": "fn/scale", "sample": 2,
            "completion": "```python\nimport torch\n\ndef scale(x, factor):\n    return x * factor\n```",
            "expected_label": "Silly mistake"}),
    ];
    let path = dir.join("labelled.jsonl");
    let text: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    std::fs::write(&path, text.join("\n") + "\n").unwrap();
    path
}

#[test]
fn labelled_generations_score_taxonomy_agreement() {
    let tmp = tempfile::tempdir().unwrap();
    let gens = labelled_generations(tmp.path());
    let out_dir = tmp.path().join("out");
    let out = run(reprolab(tmp.path())
        .env("TMPDIR", tmp.path())
        .args(["codegen", "run", "--json", "-j", "1", "--only", "fn/scale"])
        .arg(codegen_fixture("tasks.jsonl"))
        .arg("--generations")
        .arg(&gens)
        .arg("--out")
        .arg(&out_dir));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("summary.json")).unwrap())
            .unwrap();
    let a = &summary["agreement"];
    assert_eq!(a["labelled"], 2, "{a:#}");
    assert_eq!(a["not_failing"], 1, "{a:#}");
    // the missing import: hallucinated object (the NameError's rule); x.numpy(): the generated
    // function returns an array where the reference returns a tensor (a behaviour rule), where
    // the assertion's TypeError alone made the evidence rules say wrong input type
    assert_eq!(a["agreed"], 2, "{a:#}");
    let results = read_jsonl(&out_dir.join("results.jsonl"));
    assert_eq!(results[0]["expected"]["category"], "hallucinated_object");
    let numpy = &results[1]["taxonomy"];
    assert_eq!(numpy["rule"], "behaviour_type", "{numpy:#}");
    assert!(
        numpy["evidence"].as_str().unwrap().contains("ndarray"),
        "{numpy:#}"
    );
    assert!(
        results[1]["tests"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["behaviour"]["finding"] == "type"),
        "{:#}",
        results[1]
    );
    let md = std::fs::read_to_string(out_dir.join("report.md")).unwrap();
    for needle in [
        "Taxonomy agreement per expected category",
        "Confusion of expected and given categories",
        "Behaviour evidence",
    ] {
        assert!(md.contains(needle), "report.md lacks {needle}:\n{md}");
    }
    // A misspelt field names the file, the line and the field, with a suggestion.
    std::fs::write(
        tmp.path().join("typo.jsonl"),
        "{\"task_id\": \"fn/scale\", \"sample\": 0, \"completion\": \"x\", \"expected_lable\": \"misinterpretation\"}\n",
    )
    .unwrap();
    let bad = run(reprolab(tmp.path())
        .args(["codegen", "run", "-j", "1"])
        .arg(codegen_fixture("tasks.jsonl"))
        .arg("--generations")
        .arg(tmp.path().join("typo.jsonl"))
        .arg("--out")
        .arg(tmp.path().join("out2")));
    assert_ne!(bad.status.code(), Some(0));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        err.contains("typo.jsonl:1: field `expected_lable`: unknown field")
            && err.contains("(did you mean 'expected_label'?)"),
        "{err}"
    );
}
