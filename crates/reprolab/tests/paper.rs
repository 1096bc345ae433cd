//! `reprolab paper grade` end to end: PaperBench's aggregation from leaf scores, Code-Dev, and
//! errors that name the file and the node; `reprolab paper lineage` on a small corpus.

mod common;

use common::*;
use reprolab_llm::fake::{FakeReply, FakeServer, Flavor};
use reprolab_paper::online::fake::{FakeAnswer, FakeWeb};
use serde_json::json;

/// `reprolab paper grade . --rubric R --scores S EXTRA` in `dir`.
fn grade(
    dir: &std::path::Path,
    r: &std::path::Path,
    s: &std::path::Path,
    extra: &[&str],
) -> std::process::Output {
    run(reprolab(dir)
        .args(["paper", "grade", "."])
        .arg("--rubric")
        .arg(r)
        .arg("--scores")
        .arg(s)
        .args(extra))
}

fn rubric() -> serde_json::Value {
    let leaf = |id: &str, w: f64, cat: &str| json!({"id": id, "requirements": id, "weight": w, "sub_tasks": [], "task_category": cat});
    json!({"id": "root", "requirements": "paper", "weight": 1, "sub_tasks": [
        {"id": "a", "requirements": "method", "weight": 3, "sub_tasks": [
            leaf("a1", 1.0, "Code Development"), leaf("a2", 1.0, "Code Execution")]},
        {"id": "b", "requirements": "eval", "weight": 1, "sub_tasks": [
            leaf("b1", 2.0, "Code Development"), leaf("b2", 1.0, "Result Analysis")]}
    ]})
}

#[test]
fn grade_aggregates_as_paperbench_and_reduces_to_code_dev() {
    let tmp = tempfile::tempdir().unwrap();
    let r = config_file(tmp.path(), "rubric.json", rubric());
    let s = config_file(
        tmp.path(),
        "scores.json",
        json!({"a1": 1, "a2": 0, "b1": 1, "b2": null}),
    );
    let out = grade(tmp.path(), &r, &s, &["--json"]);
    assert_eq!(out.status.code(), Some(0));
    let g = &json(&out)["grade"];
    let expected = (3.0 * 0.5 + 2.0 / 3.0) / 4.0;
    assert!(
        (g["score"].as_f64().unwrap() - expected).abs() < 1e-9,
        "{g}"
    );
    assert_eq!(g["invalid_leaves"], 1);
    assert_eq!(g["valid_score"], false);
    assert!((g["score_over_valid"].as_f64().unwrap() - (3.0 * 0.5 + 1.0) / 4.0).abs() < 1e-9);

    let out = grade(tmp.path(), &r, &s, &["--code-dev", "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let g = &json(&out)["grade"];
    assert_eq!(g["leaves"], 2);
    assert!((g["score"].as_f64().unwrap() - 1.0).abs() < 1e-9);
}

#[test]
fn a_broken_rubric_or_score_file_is_an_input_error() {
    let tmp = tempfile::tempdir().unwrap();
    let mut bad = rubric();
    bad["sub_tasks"][0]["sub_tasks"][0]["weight"] = json!(-2);
    let r = config_file(tmp.path(), "rubric.json", bad);
    let s = config_file(tmp.path(), "scores.json", json!({"a1": 1}));
    let out = grade(tmp.path(), &r, &s, &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("rubric.json: node a1: weight is -2"));
    let r = config_file(tmp.path(), "rubric.json", rubric());
    let s = config_file(tmp.path(), "scores.json", json!({"zz": 1}));
    let out = grade(tmp.path(), &r, &s, &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("leaves the rubric does not have: zz"));
}

/// A paper, its fingerprint and code in `dir`: C1 holds (a constant and a probe), C2 does not
/// (momentum 0.8), C3 has no check, C4 is not grounded in the paper, C5's probe cannot import.
fn small_paper(dir: &std::path::Path) {
    std::fs::create_dir_all(dir.join("code")).unwrap();
    std::fs::write(
        dir.join("paper.md"),
        "# Tiny\nWe set the smoothing\nfactor to 0.1. The loss averages over the batch.\nOptimise with SGD and momentum 0.9.\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("code/sm.py"),
        "import torch\nEPSILON = 0.1\ndef smooth(y, k, eps=EPSILON):\n    return (1 - eps) * torch.nn.functional.one_hot(y, k).float() + eps / k\nopt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1, momentum=0.8)\n",
    )
    .unwrap();
    let probe = "import torch\nfrom sm import smooth\nt = smooth(torch.tensor([0]), 4)\nassert abs(t[0, 0].item() - 0.925) < 1e-6, f'expected 0.925, got {t[0, 0].item()}'";
    config_file(
        dir,
        "fingerprint.json",
        json!({"criteria": [
            {"id": "C1", "fact": "eps = 0.1", "scope": "loss", "category": "hyperparameter",
             "source": "We set the smoothing factor to 0.1.",
             "checks": [{"static": {"value": {"names": ["epsilon"], "equals": 0.1}}}, {"probe": probe}]},
            {"id": "C2", "fact": "SGD with momentum 0.9", "scope": "optimiser", "category": "hyperparameter",
             "source": "Optimise with SGD and momentum 0.9.",
             "checks": [{"static": {"call": {"callee": "torch.optim.SGD", "args": {"momentum": 0.9}}}}]},
            {"id": "C3", "fact": "the loss is a batch mean", "scope": "loss", "category": "algorithm",
             "source": "The loss averages over the batch."},
            {"id": "C4", "fact": "ghost", "scope": "", "category": "data", "source": "Not in the paper."},
            {"id": "C5", "fact": "a probe for other code", "scope": "", "category": "algorithm",
             "source": "The loss averages", "checks": [{"probe": "from elsewhere import x"}]}
        ]}),
    );
}

/// The verdict on criterion `id` of `paper verify --json`'s output.
fn verdict_of(v: &serde_json::Value, id: &str) -> serde_json::Value {
    v["verification"]["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["id"] == id)
        .cloned()
        .unwrap_or_else(|| panic!("no verdict for {id}: {v}"))
}

/// `verdict` has `outcome`, was decided by `by`, and its evidence lines contain `evidence`, in
/// order.
fn assert_decided(verdict: &serde_json::Value, outcome: &str, by: &str, evidence: &[&str]) {
    assert_eq!(verdict["outcome"], outcome, "{verdict}");
    assert_eq!(verdict["decided_by"], by, "{verdict}");
    for (i, part) in evidence.iter().enumerate() {
        let line = verdict["evidence"][i].as_str().unwrap_or_default();
        assert!(
            line.contains(part),
            "evidence {i} lacks {part:?}: {verdict}"
        );
    }
}

#[test]
fn verify_decides_by_constants_calls_and_probes_and_shows_the_evidence() {
    let tmp = tempfile::tempdir().unwrap();
    small_paper(tmp.path());
    let out = run(reprolab(tmp.path()).args([
        "--json", "paper", "verify", "paper.md", "code", "--out", "out",
    ]));
    assert_eq!(out.status.code(), Some(1), "C2 fails");
    let v = json(&out);
    let verdict = |id: &str| verdict_of(&v, id);
    assert_eq!(verdict("C1")["outcome"], "pass");
    assert_eq!(verdict("C1")["decided_by"], "static");
    // Both checks of C1 ran: the constant and the probe (which imports the code and passes).
    assert_eq!(verdict("C1")["checks"][1]["checker"], "execution");
    assert_eq!(verdict("C1")["checks"][1]["outcome"], "pass");
    assert_eq!(verdict("C2")["outcome"], "fail");
    let evidence = verdict("C2")["evidence"].to_string();
    assert!(
        evidence.contains("sm.py:5") && evidence.contains("momentum=0.8"),
        "{evidence}"
    );
    assert_eq!(verdict("C3")["outcome"], "undecided");
    assert_eq!(verdict("C5")["outcome"], "undecided");
    assert!(
        verdict("C5")["evidence"][0]
            .as_str()
            .unwrap()
            .contains("ModuleNotFoundError")
    );
    assert_eq!(v["dropped"][0]["id"], "C4");
    assert!(tmp.path().join("out/verification.json").is_file());

    // Fixed code: no criterion fails, exit 0; the probe's assertion message is the evidence of
    // a wrong formula.
    let sm = tmp.path().join("code/sm.py");
    let fixed = std::fs::read_to_string(&sm)
        .unwrap()
        .replace("momentum=0.8", "momentum=0.9");
    std::fs::write(&sm, fixed.replace("(1 - eps) *", "(1 - 2 * eps) *")).unwrap();
    let out = run(reprolab(tmp.path()).args(["--json", "paper", "verify", "paper.md", "code"]));
    let v = json(&out);
    let c1 = &v["verification"]["verdicts"][0];
    assert_decided(c1, "fail", "execution", &["expected 0.925"]);
    std::fs::write(&sm, fixed).unwrap();
    let out = run(reprolab(tmp.path()).args(["paper", "verify", "paper.md", "code"]));
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("2 pass, 0 fail, 2 undecided of 4 criteria"),
        "{text}"
    );
}

/// `reprolab --json paper verify paper.md code EXTRA --llm` in `dir` (a [`small_paper`]), the
/// judge being the fake `server`: the JSON it prints.
fn verify_with_judge(
    dir: &std::path::Path,
    server: &FakeServer,
    extra: &[&str],
) -> serde_json::Value {
    let out = run(reprolab_without_llm_settings(dir)
        .args(["--json", "paper", "verify", "paper.md", "code"])
        .args(extra)
        .arg("--llm")
        .arg(format!("openai:fake@{}", server.base_url())));
    json(&out)
}

#[test]
fn the_judge_decides_only_what_no_check_did_by_majority_of_its_votes() {
    let tmp = tempfile::tempdir().unwrap();
    small_paper(tmp.path());
    let answer = |score: u8| {
        FakeReply::Text(format!(
            "# Expectations\nThe loss is a mean over the batch.\n# Reality\nsm.py:4 builds targets only (vote {score})\n# Score\n{score}\n"
        ))
    };
    // C3 (no checks) and C5 (its probe cannot run) reach the judge, 3 votes each.
    let server = FakeServer::start_background(
        Flavor::OpenAi,
        [
            answer(0),
            answer(1),
            answer(0),
            answer(1),
            FakeReply::Text("no idea".into()),
            answer(1),
        ],
    );
    let v = verify_with_judge(tmp.path(), &server, &["--judge-only"]);
    assert_decided(
        &verdict_of(&v, "C3"),
        "fail",
        "judge",
        &["1 of 3 votes", "sm.py:4 builds targets only (vote 0)"],
    );
    let c5 = verdict_of(&v, "C5");
    assert_eq!(
        c5["outcome"], "pass",
        "an unreadable vote counts for neither side: {c5}"
    );
    let requests = server.requests();
    assert_eq!(
        requests.len(),
        6,
        "criteria decided by a check never reach the judge"
    );
    let first = requests[0].body["messages"].to_string();
    assert!(
        first.contains("The loss averages over the batch.") && first.contains("### sm.py"),
        "{first}"
    );
    assert_ne!(
        requests[0].body["seed"], requests[1].body["seed"],
        "votes are distinct requests"
    );
}

#[test]
fn fingerprint_keeps_grounded_how_to_criteria_that_verify_can_then_check() {
    let tmp = tempfile::tempdir().unwrap();
    small_paper(tmp.path());
    let answer = json!({"criteria": [
        {"fact": "The smoothing factor is 0.1.", "scope": "loss", "category": "hyperparameter",
         "source": "We set the smoothing factor to 0.1.", "value": {"names": ["epsilon", "eps"], "equals": 0.1}},
        {"fact": "Momentum is 0.9.", "scope": "optimiser", "category": "hyperparameter",
         "source": "Optimise with SGD and momentum 0.95.", "value": {"names": ["momentum"], "equals": 0.95}},
        {"fact": "It beats the baseline.", "scope": "", "category": "result", "source": "The loss averages over the batch."}
    ]});
    let server =
        FakeServer::start_background(Flavor::OpenAi, [FakeReply::Text(answer.to_string())]);
    let spec = format!("openai:fake@{}", server.base_url());
    let out = run(reprolab_without_llm_settings(tmp.path()).args([
        "paper",
        "fingerprint",
        "paper.md",
        "--out",
        "fp.json",
        "--llm",
        &spec,
    ]));
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("not in the paper") && stderr.contains("result or claim"),
        "{stderr}"
    );
    let fp: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.path().join("fp.json")).unwrap())
            .unwrap();
    assert_eq!(fp["criteria"].as_array().unwrap().len(), 1, "{fp}");
    assert_eq!(fp["criteria"][0]["id"], "C1");
    // The file is not replaced without --force.
    let again = run(reprolab_without_llm_settings(tmp.path()).args([
        "paper",
        "fingerprint",
        "paper.md",
        "--out",
        "fp.json",
        "--llm",
        &spec,
    ]));
    assert_eq!(again.status.code(), Some(2));
    // The extracted constant is checked statically.
    let out = run(reprolab(tmp.path()).args([
        "--json",
        "paper",
        "verify",
        "paper.md",
        "code",
        "--fingerprint",
        "fp.json",
    ]));
    let v = json(&out);
    assert_eq!(v["verification"]["verdicts"][0]["outcome"], "pass");
    assert_eq!(v["verification"]["verdicts"][0]["decided_by"], "static");
}

#[test]
fn grade_scores_leaves_from_a_verification_and_judges_the_rest() {
    let tmp = tempfile::tempdir().unwrap();
    small_paper(tmp.path());
    let out = run(reprolab(tmp.path()).args(["paper", "verify", "paper.md", "code", "--out", "v"]));
    assert_eq!(out.status.code(), Some(1));
    let leaf = |id: &str, criteria: &[&str]| json!({"id": id, "requirements": format!("requirement {id}"), "weight": 1, "sub_tasks": [], "task_category": "Code Development", "criteria": criteria});
    let rubric = config_file(
        tmp.path(),
        "rubric.json",
        json!({"id": "root", "requirements": "tiny", "weight": 1, "sub_tasks": [
            leaf("smoothing", &["C1"]), leaf("optimiser", &["C2"]), leaf("batch-mean", &["C3"])]}),
    );
    let grade = |extra: &[&str]| {
        run(reprolab_without_llm_settings(tmp.path())
            .args([
                "--json",
                "paper",
                "grade",
                "code",
                "--verification",
                "v/verification.json",
            ])
            .arg("--rubric")
            .arg(&rubric)
            .args(extra))
    };
    let g = json(&grade(&[]));
    // C1 passes, C2 fails, C3 is undecided: its leaf is invalid without a judge.
    assert!(
        (g["grade"]["score"].as_f64().unwrap() - 1.0 / 3.0).abs() < 1e-9,
        "{g}"
    );
    assert_eq!(g["grade"]["invalid_leaves"], 1);
    let server = FakeServer::start_background(
        Flavor::OpenAi,
        [FakeReply::Text(
            "# Expectations\nmean\n# Reality\nsm.py:4\n# Score\n1".into(),
        )],
    );
    let g = json(&grade(&[
        "--llm",
        &format!("openai:fake@{}", server.base_url()),
    ]));
    assert!(
        (g["grade"]["score"].as_f64().unwrap() - 2.0 / 3.0).abs() < 1e-9,
        "{g}"
    );
    assert_eq!(g["grade"]["invalid_leaves"], 0);
    assert_eq!(
        server.requests().len(),
        1,
        "only the unscored leaf is judged"
    );
}

/// The target of the verifier without a model: on the bundled papers, every violation a static
/// check or a probe can see is caught, and no criterion fails where there is no violation.
#[test]
fn the_bundled_papers_violations_are_caught_without_false_alarms() {
    let tmp = tempfile::tempdir().unwrap();
    let bench = repo().join("benchmarks/papers");
    let out = run(reprolab(tmp.path())
        .args(["--json", "bench", "paper"])
        .arg(&bench)
        .args(["--out", "bp"]));
    assert_eq!(out.status.code(), Some(0), "targets met");
    let rows = json(&out);
    let rows = rows.as_array().unwrap();
    assert!(rows.len() >= 6, "at least six papers");
    for r in rows {
        assert_eq!(r["false_alarms_reference"], json!([]), "{r}");
        assert_eq!(r["false_alarms_mutated"], json!([]), "{r}");
        for v in r["violations"].as_array().unwrap() {
            if v["detectable_by"] != "judge" {
                assert_eq!(v["caught"], true, "{}: {v}", r["paper"]);
                assert_eq!(v["caught_by"], v["detectable_by"], "{}: {v}", r["paper"]);
            }
        }
        assert_eq!(r["reference"]["fail"], 0);
    }
    let report = std::fs::read_to_string(tmp.path().join("bp/report.md")).unwrap();
    assert!(report.contains("| violations a static check or a probe can see, caught |"));
    // A second run resumes from results.jsonl: nothing is verified again.
    let again = run(reprolab(tmp.path())
        .args(["--json", "bench", "paper"])
        .arg(&bench)
        .args(["--out", "bp"]));
    assert_eq!(json(&again).as_array().unwrap().len(), rows.len());
}

fn fenced(code: &str) -> FakeReply {
    FakeReply::Text(format!("Here it is:\n```python\n{code}```\n"))
}

#[test]
fn implement_plans_writes_and_revises_until_no_criterion_fails_then_resumes_as_done() {
    let tmp = tempfile::tempdir().unwrap();
    small_paper(tmp.path());
    let sm = "import torch\nEPSILON = 0.1\n\ndef smooth(y, k, eps=EPSILON):\n    return (1 - eps) * torch.nn.functional.one_hot(y, k).float() + eps / k\n\nopt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1, momentum=0.8)\n";
    let train = "import sys\nimport torch\nfrom sm import smooth\n\nif __name__ == '__main__':\n    t = smooth(torch.tensor([1, 2]), 4)\n    loss = -(t * torch.log_softmax(torch.zeros(2, 4), 1)).sum(1).mean()\n    print(f'loss: {loss.item():.4f}')\n";
    let server = FakeServer::start_background(
        Flavor::OpenAi,
        [
            FakeReply::Text(json!({"files": [{"path": "sm.py", "purpose": "smoothing"}, {"path": "train.py", "purpose": "entry"}], "entry": "train.py"}).to_string()),
            fenced(sm),
            fenced(train),
            FakeReply::Text("Plan: sm.py: momentum 0.9.\n\nsm.py\n<<<<<<< SEARCH\nopt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1, momentum=0.8)\n=======\nopt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1, momentum=0.9)\n>>>>>>> REPLACE\n".into()),
        ],
    );
    let implement = |spec: &str| {
        run(reprolab_without_llm_settings(tmp.path()).args([
            "--json",
            "paper",
            "implement",
            "paper.md",
            "--out",
            "impl",
            "--llm",
            spec,
        ]))
    };
    let out = implement(&format!("openai:fake@{}", server.base_url()));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json(&out);
    let rounds = v["implementation"]["rounds"].as_array().unwrap();
    assert_eq!(rounds.len(), 2, "{v}");
    assert_eq!(rounds[0]["failed"], json!(["C2"]));
    assert_eq!(rounds[0]["smoke"]["ok"], true, "{}", rounds[0]["smoke"]);
    assert_eq!(rounds[0]["files_changed"], json!(["sm.py"]));
    assert_eq!(rounds[1]["fail"], 0);
    let impl_dir = tmp.path().join("impl");
    assert!(
        std::fs::read_to_string(impl_dir.join("sm.py"))
            .unwrap()
            .contains("momentum=0.9")
    );
    assert!(
        std::fs::read_to_string(impl_dir.join(".rounds/0/code/sm.py"))
            .unwrap()
            .contains("momentum=0.8")
    );
    assert!(impl_dir.join(".rounds/1/revision.md").is_file());
    assert!(impl_dir.join(".rounds/2/verification.json").is_file());
    assert_eq!(server.requests().len(), 4);
    // The revision prompt carries the failing criterion's evidence.
    let revision = server.requests()[3].body["messages"].to_string();
    assert!(
        revision.contains("momentum=0.8") && revision.contains("C2"),
        "{revision}"
    );
    // Run again: it is done, nothing is asked.
    let dead = FakeServer::start_background(Flavor::OpenAi, []);
    dead.set_fallback(FakeReply::Status(500, None));
    let again = implement(&format!("openai:fake@{}", dead.base_url()));
    assert_eq!(again.status.code(), Some(0));
    assert_eq!(dead.request_count(), 0);
}

#[test]
fn the_judge_writes_a_probe_first_and_running_it_decides() {
    let tmp = tempfile::tempdir().unwrap();
    small_paper(tmp.path());
    let probe = "import torch\nfrom sm import smooth\ns = round(smooth(torch.tensor([0]), 4).sum().item(), 3)\nassert abs(s - 2) < 1e-6, f'expected rows summing to 2, found {s}'\n";
    let vote = FakeReply::Text("# Reality\nsm.py:4\n# Score\n1".into());
    // C3: a probe that fails; C5: no probe can check it, so three votes.
    let server = FakeServer::start_background(
        Flavor::OpenAi,
        [
            fenced(probe),
            FakeReply::Text("NONE".into()),
            vote.clone(),
            vote.clone(),
            vote,
        ],
    );
    let v = verify_with_judge(tmp.path(), &server, &[]);
    assert_decided(
        &verdict_of(&v, "C3"),
        "fail",
        "execution",
        &["found 1", "written by the judge"],
    );
    let c5 = verdict_of(&v, "C5");
    assert_eq!(c5["decided_by"], "judge", "{c5}");
    assert_eq!(server.requests().len(), 5);
}

/// `reprolab paper lineage PAPER --corpus CORPUS EXTRA` in `dir`.
fn lineage(
    dir: &std::path::Path,
    paper: &std::path::Path,
    corpus: &std::path::Path,
    extra: &[&str],
) -> std::process::Output {
    run(reprolab(dir)
        .args(["paper", "lineage"])
        .arg(paper)
        .arg("--corpus")
        .arg(corpus)
        .args(extra))
}

/// The fixture corpus: four papers; paired-interpolation cites two others, an optimizer
/// (generic) and a paper that is not in the corpus.
fn corpus() -> (std::path::PathBuf, std::path::PathBuf) {
    let corpus = fixture("paper-corpus");
    (corpus.join("paired-interpolation/paper.md"), corpus)
}

#[test]
fn lineage_resolves_ranks_and_lists_code_and_the_unresolved() {
    let tmp = tempfile::tempdir().unwrap();
    let (paper, corpus) = corpus();
    let out = lineage(tmp.path(), &paper, &corpus, &["--top", "1", "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let l = json(&out);
    assert_eq!(l["excluded_self"], "paired-interpolation");
    assert_eq!(l["query"], "the section \"Method\"");
    // The label-smoothing paper is what the method builds on; early stopping ranks below it.
    let top = &l["resolved"][0];
    assert_eq!(top["entry"], "softened-targets");
    assert_eq!(top["rank"], 1);
    assert_eq!(top["matched_by"], "title");
    assert_eq!(top["authors"], json!(["Ashdown", "Okafor"]));
    assert_eq!(
        top["code_files"],
        json!(["code/smooth.py", "code/train.py"])
    );
    let below = &l["below_top"][0];
    assert_eq!(below["entry"], "early-stopping.md");
    assert_eq!(below["rank"], 2);
    assert!(top["score"].as_f64().unwrap() > below["score"].as_f64().unwrap());
    // Not cited, so not listed, though in the corpus.
    assert!(!l.to_string().contains("weight-averaging"));
    let unresolved = l["unresolved"].as_array().unwrap();
    assert_eq!(unresolved.len(), 2);
    assert_eq!(unresolved[0]["reason"], "not in the corpus");
    assert_eq!(unresolved[0]["generic"], "optimizer");
    assert_eq!(unresolved[1]["generic"], serde_json::Value::Null);
    assert_eq!(unresolved[1]["reference"]["year"], 2022);

    let out = lineage(tmp.path(), &paper, &corpus, &[]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("offline: only the corpus was searched"),
        "{text}"
    );
    assert!(text.contains("rank    score  title"), "{text}");
    assert!(text.contains("Ashdown, Okafor 2024"), "{text}");
    assert!(text.contains("unresolved references (2):"), "{text}");
    assert!(text.contains("generic: optimizer"), "{text}");
}

#[test]
fn lineage_input_errors_exit_2_and_name_the_path() {
    let tmp = tempfile::tempdir().unwrap();
    let (paper, corpus) = corpus();
    let out = lineage(tmp.path(), &paper, &tmp.path().join("no-corpus"), &[]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no-corpus: the corpus is not a directory"),
        "{err}"
    );
    let out = lineage(tmp.path(), &paper, &corpus, &["--top", "0"]);
    assert_eq!(out.status.code(), Some(2));
    let scan = tmp.path().join("scan.pdf");
    std::fs::write(&scan, "%PDF-1.4\nnot a real PDF").unwrap();
    let out = lineage(tmp.path(), &scan, &corpus, &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("scan.pdf: cannot read the PDF"));
}

/// The fake arXiv and GitHub of `paper lineage --online`: the fixture paper's reference the
/// corpus lacks (Yilmaz 2022) is on arXiv, and its code on GitHub (found by the search).
fn lineage_web() -> FakeWeb {
    let web = FakeWeb::start();
    web.route(
        "/api/query",
        &["ti:\"curriculum ordering for noisy annotations\""],
        FakeAnswer::atom(
            r#"<?xml version="1.0" encoding="UTF-8"?>
<feed xmlns="http://www.w3.org/2005/Atom" xmlns:arxiv="http://arxiv.org/schemas/atom">
  <title type="html">ArXiv Query: search_query=ti:"curriculum ordering for noisy annotations"</title>
  <entry>
    <id>http://arxiv.org/abs/2203.01234v2</id>
    <published>2022-03-02T18:00:00Z</published>
    <title>Curriculum Ordering for Noisy
      Annotations</title>
    <summary>We order training examples by the agreement of their annotations, and interpolate
pairs of examples early in training.</summary>
    <author><name>Tuba Yilmaz</name></author>
    <link href="http://arxiv.org/abs/2203.01234v2" rel="alternate" type="text/html"/>
  </entry>
</feed>"#,
        ),
    );
    web.route(
        "/search/repositories",
        &["q=curriculum ordering for noisy annotations"],
        FakeAnswer::json(
            r#"{"total_count": 1, "incomplete_results": false, "items": [{"full_name": "tyilmaz/curriculum-ordering",
            "html_url": "https://github.com/tyilmaz/curriculum-ordering", "name": "curriculum-ordering",
            "description": "Code of Curriculum Ordering for Noisy Annotations (2022)",
            "default_branch": "main"}]}"#,
        ),
    );
    // The method's code is in a package folder, beside tests and docs.
    web.repository(
        "tyilmaz/curriculum-ordering",
        "main",
        &[
            ("README.md", "# Curriculum ordering\n"),
            (
                "curriculum.py",
                "def order(examples): return sorted(examples)\n",
            ),
            ("curriculum_ordering/models/agreement.py", AGREEMENT_PY),
            ("tests/test_curriculum.py", "def test_order(): pass\n"),
            ("docs/conf.py", "project = 'curriculum'\n"),
        ],
    );
    web
}

/// The nested model file of the fake repository: what `implement --online` must show the model.
const AGREEMENT_PY: &str =
    "def agreement_weights(annotations):\n    return [len(set(a)) for a in annotations]\n";

/// `paper lineage PAPER --corpus CORPUS --json EXTRA` with arXiv and GitHub at `web` (arXiv's
/// delay off, a GitHub token set).
fn lineage_at(dir: &std::path::Path, web: &str, extra: &[&str]) -> std::process::Output {
    let (paper, corpus) = corpus();
    run(reprolab(dir)
        .args(["paper", "lineage"])
        .arg(&paper)
        .arg("--corpus")
        .arg(&corpus)
        .arg("--json")
        .env("REPROLAB_ARXIV_URL", format!("{web}/api/query"))
        .env("REPROLAB_GITHUB_API_URL", web)
        .env("REPROLAB_ARXIV_DELAY", "0")
        .env("GITHUB_TOKEN", "ghp-test")
        .env_remove("REPROLAB_LINEAGE_CACHE")
        .args(extra))
}

#[test]
fn lineage_online_finds_what_the_corpus_lacks_with_its_code_and_reruns_from_the_cache() {
    let tmp = tempfile::tempdir().unwrap();
    let web = lineage_web();
    let out = lineage_at(tmp.path(), &web.url(), &["--online"]);
    assert_eq!(out.status.code(), Some(0));
    let l = json(&out);
    let rows: Vec<&serde_json::Value> = l["resolved"].as_array().unwrap().iter().collect();
    assert_eq!(rows.len(), 3, "{l}");
    let row = |entry: &str| *rows.iter().find(|r| r["entry"] == entry).unwrap();
    assert_eq!(row("softened-targets")["resolved_in"], "corpus");
    assert_eq!(row("softened-targets")["code_from"], "corpus");
    let found = row("arxiv:2203.01234");
    assert_eq!(found["resolved_in"], "arxiv");
    assert_eq!(found["url"], "http://arxiv.org/abs/2203.01234v2");
    assert_eq!(found["title"], "Curriculum Ordering for Noisy Annotations");
    assert_eq!(found["authors"], json!(["Yilmaz"]));
    assert_eq!(found["year"], 2022);
    assert_eq!(found["code_from"], "github");
    assert_eq!(
        found["code_url"],
        "https://github.com/tyilmaz/curriculum-ordering"
    );
    // The README, then the code most relevant to the papers (the nested model first); not the
    // tests, not the docs.
    assert_eq!(
        found["code_files"],
        json!([
            "code/README.md",
            "code/curriculum_ordering/models/agreement.py",
            "code/curriculum.py"
        ])
    );
    let root = std::path::PathBuf::from(found["code_root"].as_str().unwrap());
    assert_eq!(
        root,
        std::path::Path::new(".reprolab/lineage-cache/papers/arxiv-2203.01234")
    );
    assert!(tmp.path().join(&root).join("code/curriculum.py").is_file());
    assert_eq!(
        std::fs::read_to_string(
            tmp.path()
                .join(&root)
                .join("code/curriculum_ordering/models/agreement.py")
        )
        .unwrap(),
        AGREEMENT_PY
    );
    let unresolved = l["unresolved"].as_array().unwrap();
    assert_eq!(unresolved.len(), 1);
    assert_eq!(
        unresolved[0]["reason"],
        "not in the corpus; not looked up online: a tool, not method lineage"
    );
    assert_eq!(l["online"]["network"], true);
    assert_eq!(l["online"]["looked_up"], 1);
    let requests = web.requests();
    // arXiv, the search (it names the default branch), the whole file tree, three files; the
    // token only where GitHub's API is.
    assert_eq!(requests.len(), 6, "{requests:?}");
    assert_eq!(
        requests[2].path,
        "/repos/tyilmaz/curriculum-ordering/git/trees/main"
    );
    assert!(requests[0].authorization.is_none());
    assert_eq!(
        requests[1].authorization.as_deref(),
        Some("Bearer ghp-test")
    );

    // Again: everything from the cache, no request.
    let out = lineage_at(tmp.path(), &web.url(), &["--online"]);
    assert_eq!(out.status.code(), Some(0));
    let again = json(&out);
    assert_eq!(web.requests().len(), 6);
    assert_eq!(again["online"]["requests"], 0);
    assert_eq!(again["online"]["from_cache"], 6);
    assert_eq!(again["resolved"], l["resolved"]);

    // Offline (no --online), the cache of that run is read, and nothing is asked.
    let out = lineage_at(tmp.path(), &web.url(), &[]);
    assert_eq!(out.status.code(), Some(0));
    let offline = json(&out);
    assert_eq!(web.requests().len(), 6);
    assert_eq!(offline["online"]["network"], false);
    assert_eq!(offline["resolved"].as_array().unwrap().len(), 3);

    let (paper, corpus) = corpus();
    let out = run(reprolab(tmp.path())
        .args(["paper", "lineage"])
        .arg(&paper)
        .arg("--corpus")
        .arg(&corpus)
        .arg("--online")
        .env("REPROLAB_ARXIV_URL", format!("{}/api/query", web.url()))
        .env("REPROLAB_GITHUB_API_URL", web.url())
        .env("REPROLAB_ARXIV_DELAY", "0"));
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("online: 1 references looked up on arXiv and GitHub"),
        "{text}"
    );
    assert!(
        text.contains(
            "arXiv: http://arxiv.org/abs/2203.01234v2; code: \
             https://github.com/tyilmaz/curriculum-ordering"
        ),
        "{text}"
    );
}

#[test]
fn lineage_without_online_asks_nothing_and_is_unchanged() {
    let tmp = tempfile::tempdir().unwrap();
    let web = lineage_web();
    let plain = json(&lineage(tmp.path(), &corpus().0, &corpus().1, &["--json"]));
    // The URLs point at a live server, and at a closed port: no flag, no request, same answer.
    let out = lineage_at(tmp.path(), &web.url(), &[]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(json(&out), plain);
    assert_eq!(web.requests().len(), 0);
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let out = lineage_at(tmp.path(), &format!("http://127.0.0.1:{port}"), &[]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(json(&out), plain);
    assert!(plain["online"].is_null());
    assert!(!tmp.path().join(".reprolab/lineage-cache").exists());
}

#[test]
fn lineage_online_without_a_corpus_reports_an_unreachable_arxiv_per_reference() {
    let tmp = tempfile::tempdir().unwrap();
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let (paper, _) = corpus();
    let base = format!("http://127.0.0.1:{port}");
    let out = run(reprolab(tmp.path())
        .args(["--json", "paper", "lineage"])
        .arg(&paper)
        .args(["--online", "--arxiv-delay", "0", "--arxiv-url"])
        .arg(format!("{base}/api/query"))
        .arg("--github-api-url")
        .arg(&base)
        .arg("--lineage-cache")
        .arg(tmp.path().join("cache")));
    assert_eq!(out.status.code(), Some(0));
    let l = json(&out);
    assert!(l["corpus"].is_null());
    assert_eq!(l["resolved"], json!([]));
    let reasons: Vec<&str> = l["unresolved"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["reason"].as_str().unwrap())
        .collect();
    assert_eq!(reasons.len(), 4, "{reasons:?}");
    assert_eq!(
        reasons
            .iter()
            .filter(|r| r.starts_with("arXiv look-up failed: cannot connect to"))
            .count(),
        3,
        "{reasons:?}"
    );
    assert_eq!(
        reasons[2],
        "not looked up online: a tool, not method lineage"
    );
    // Three attempts at the first reference; the host is then known to be down.
    assert_eq!(l["online"]["requests"], 3);

    // Neither a corpus nor --online: nothing to search.
    let out = run(reprolab(tmp.path()).args(["paper", "lineage"]).arg(&paper));
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--corpus"));
}

/// `paper implement --lineage CORPUS --online`: the code of a cited paper the corpus lacks, found
/// on arXiv and GitHub and fetched from a package folder of its repository, is in the model's
/// prompts; a second run (another --out, another model) reads it all from the cache and asks
/// the network nothing.
#[test]
fn implement_online_shows_the_model_nested_code_from_github_then_runs_from_the_cache() {
    let tmp = tempfile::tempdir().unwrap();
    let web = lineage_web();
    let (paper, corpus) = corpus();
    // One criterion without checks: undecided, so the first draft whose smoke run passes ends
    // the loop.
    let fingerprint = config_file(
        tmp.path(),
        "fingerprint.json",
        json!({"criteria": [
            {"id": "C1", "fact": "targets keep 0.9 of their mass", "scope": "labels",
             "category": "preprocessing", "source": "the one-hot target keeps 0.9 of its mass"}
        ]}),
    );
    let model = || {
        FakeServer::start_background(
            Flavor::OpenAi,
            [
                FakeReply::Text(
                    json!({"files": [{"path": "train.py", "purpose": "entry"}], "entry": "train.py"})
                        .to_string(),
                ),
                fenced("print('loss: 0.5')\n"),
            ],
        )
    };
    let implement = |server: &FakeServer, out: &str| {
        run(reprolab_without_llm_settings(tmp.path())
            .args(["--json", "paper", "implement"])
            .arg(&paper)
            .arg("--fingerprint")
            .arg(&fingerprint)
            .args(["--rounds", "1", "--out", out, "--lineage"])
            .arg(&corpus)
            .arg("--online")
            .env("REPROLAB_ARXIV_URL", format!("{}/api/query", web.url()))
            .env("REPROLAB_GITHUB_API_URL", web.url())
            .env("REPROLAB_ARXIV_DELAY", "0")
            .env_remove("REPROLAB_GITHUB_RAW_URL")
            .env_remove("REPROLAB_LINEAGE_CACHE")
            .env_remove("GITHUB_TOKEN")
            .arg("--llm")
            .arg(format!("openai:fake@{}", server.base_url())))
    };
    // Both prompts (the plan, the file) carry the nested file, under its repository path, and
    // not the repository's tests.
    let shows_nested_code = |server: &FakeServer| {
        let requests = server.requests();
        assert_eq!(requests.len(), 2, "the plan and one file");
        for r in &requests {
            let prompt = r.body["messages"].to_string();
            assert!(
                prompt
                    .contains("### arxiv:2203.01234/code/curriculum_ordering/models/agreement.py")
                    && prompt.contains("def agreement_weights(annotations):"),
                "{prompt}"
            );
            assert!(!prompt.contains("def test_order"), "{prompt}");
        }
    };

    let first = model();
    let out = implement(&first, "impl");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        json(&out)["implementation"]["rounds"][0]["smoke"]["ok"],
        true
    );
    shows_nested_code(&first);
    let asked = web.requests().len();
    assert!(
        web.requests().iter().any(|r| r.path
            == "/raw/tyilmaz/curriculum-ordering/main/curriculum_ordering/models/agreement.py"),
        "{:?}",
        web.requests()
    );

    let second = model();
    let out = implement(&second, "impl-again");
    assert_eq!(out.status.code(), Some(0));
    shows_nested_code(&second);
    assert_eq!(web.requests().len(), asked, "the cache answers everything");
}

#[test]
fn implement_falls_back_to_one_file_without_a_plan_and_a_dead_model_stops_it_resumably() {
    let tmp = tempfile::tempdir().unwrap();
    small_paper(tmp.path());
    let implement = |server: &FakeServer, out: &str| {
        run(reprolab_without_llm_settings(tmp.path())
            .args([
                "--json",
                "paper",
                "implement",
                "paper.md",
                "--rounds",
                "1",
                "--llm-attempts",
                "1",
                "--out",
                out,
                "--llm",
            ])
            .arg(format!("openai:fake@{}", server.base_url())))
    };
    let dead = FakeServer::start_background(Flavor::OpenAi, []);
    dead.set_fallback(FakeReply::Status(500, None));
    let out = implement(&dead, "down");
    assert_eq!(
        out.status.code(),
        Some(3),
        "a model that cannot be asked is infrastructure"
    );
    let state: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(tmp.path().join("down/implementation.json"))
            .unwrap_or_else(|_| "{}".into()),
    )
    .unwrap();
    assert!(
        state["plan"].is_null(),
        "nothing is recorded as done: {state}"
    );

    let train = "import torch\n\nif __name__ == '__main__':\n    print('loss: 0.25')\n";
    let server = FakeServer::start_background(
        Flavor::OpenAi,
        [
            FakeReply::Text("I would write some files.".into()),
            FakeReply::Text("Sure!".into()),
            fenced(train),
        ],
    );
    let out = implement(&server, "weak");
    let v = json(&out);
    let plan = &v["implementation"]["plan"];
    assert!(
        plan["fallback"]
            .as_str()
            .unwrap()
            .contains("no usable plan"),
        "{plan}"
    );
    assert_eq!(plan["entry"], "train.py");
    assert_eq!(v["implementation"]["rounds"][0]["smoke"]["ok"], true, "{v}");
    assert_eq!(server.requests().len(), 3);
}

/// A model that answers nothing useful to anything: every step records what it got (no probe,
/// unreadable votes, no criteria, the one-file plan, an empty file that fails its smoke run) and
/// the bench row still comes out, with the implementation's rounds and calls.
#[test]
fn bench_paper_with_a_useless_model_records_every_step_as_an_outcome() {
    let tmp = tempfile::tempdir().unwrap();
    let server = FakeServer::start_background(Flavor::OpenAi, []);
    server.set_fallback(FakeReply::Text("NONE".into()));
    let out = run(reprolab_without_llm_settings(tmp.path())
        .args(["--json", "bench", "paper"])
        .arg(repo().join("benchmarks/papers"))
        .args([
            "--only",
            "label-smoothing",
            "--rounds",
            "1",
            "--votes",
            "1",
            "--out",
            "bp",
            "--llm",
        ])
        .arg(format!("openai:fake@{}", server.base_url())));
    let rows = json(&out);
    let row = &rows[0];
    assert_eq!(
        row["violations"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|v| v["caught"] == true)
            .count(),
        2,
        "{row}"
    );
    assert_eq!(row["recall"]["extracted"], 0, "{row}");
    let implemented = &row["implementation"];
    assert_eq!(implemented["rounds"], 1, "{row}");
    assert_eq!(implemented["passed"], false);
    assert_eq!(implemented["smoke_ok"], false);
    assert!(
        implemented["calls"].as_u64().unwrap() >= 3,
        "plan twice and the file: {row}"
    );
    let plan: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            tmp.path()
                .join("bp/label-smoothing/impl/implementation.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert!(plan["plan"]["fallback"].is_string(), "{plan}");
    let report = std::fs::read_to_string(tmp.path().join("bp/report.md")).unwrap();
    assert!(report.contains("## Implementations"), "{report}");
}

/// The embedded model (SmolLM2-135M) through the whole implement loop, replayed from its
/// recorded answers: it gives no usable plan (the one-file fallback), writes a file that prints
/// no loss, edits nothing; the loop records each step and ends after its rounds, without a
/// crash. Recorded with `--llm local:smollm2 --llm-record DIR --rounds 2 --max-tokens 768`.
#[test]
fn the_embedded_model_runs_the_implement_loop_end_to_end_replayed() {
    let tmp = tempfile::tempdir().unwrap();
    let out = run(reprolab_without_llm_settings(tmp.path())
        .args(["--json", "paper", "implement"])
        .arg(repo().join("benchmarks/papers/label-smoothing/paper.md"))
        .args([
            "--rounds",
            "2",
            "--max-tokens",
            "768",
            "--out",
            "impl",
            "--llm",
        ])
        .arg(format!(
            "replay:{}",
            fixture("cassettes/smollm2-paper").display()
        )));
    assert_eq!(out.status.code(), Some(1), "it does not pass");
    let v = json(&out);
    assert_eq!(v["llm"]["calls"], 4);
    assert_eq!(
        v["llm"]["replayed"], 4,
        "every answer replayed: {}",
        v["llm"]
    );
    let state = &v["implementation"];
    assert!(state["plan"]["fallback"].is_string(), "{state}");
    assert_eq!(state["rounds"].as_array().unwrap().len(), 2);
    assert_eq!(state["stopped"], "2 rounds spent");
    assert_eq!(
        state["rounds"][1]["failed"],
        json!(["C4"]),
        "no SGD call: {state}"
    );
}
