//! `reprolab paper`: wiring of the paper crate.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use reprolab_paper::checks::Outcome;
use reprolab_paper::fingerprint::{Criterion, Dropped, Fingerprint};
use reprolab_paper::judge::LlmJudge;
use reprolab_paper::rubric::{Grade, LeafScore, Rubric, parse_scores, scores_from_verification};
use reprolab_paper::verify::{Judge, NoJudge, ProbeRun, Prober, Verdict, Verification, verify};
use reprolab_paper::{codefacts, extract};
use reprolab_reproduce::observe::RunStatus;
use reprolab_reproduce::run::{ScriptRunner, WarmPools, default_limits};

use crate::cli::{Global, PaperFingerprintArgs, PaperGradeArgs, PaperVerifyArgs};
use crate::error::Infrastructure;
use crate::{context, progress, table};

pub async fn grade(g: &Global, a: &PaperGradeArgs) -> Result<ExitCode> {
    if !a.submission.is_dir() {
        bail!(
            "{}: the submission is not a directory",
            a.submission.display()
        );
    }
    if a.votes == 0 || a.votes > 15 {
        bail!("--votes is {}; expected 1 to 15", a.votes);
    }
    let rubric = Rubric::load(&a.rubric)?;
    let rubric = if a.code_dev {
        rubric.code_dev().with_context(|| {
            format!(
                "{}: --code-dev: the rubric has no Code Development leaf",
                a.rubric.display()
            )
        })?
    } else {
        rubric
    };
    let mut scores = match &a.scores {
        Some(path) => {
            let scores = parse_scores(path)?;
            check_leaf_ids(&rubric, &scores, path, a.code_dev)?;
            scores
        }
        None => Default::default(),
    };
    if let Some(path) = &a.verification {
        let verification = read_verification(path)?;
        for (id, s) in scores_from_verification(&rubric, &verification) {
            scores.entry(id).or_insert(s);
        }
    }
    if a.llm.llm.is_some() {
        let session = crate::llm::open(g, &a.llm, crate::llm::local_factory(g), None)?;
        let judge = LlmJudge {
            model: session.model.as_ref(),
            paper: "",
            votes: a.votes,
            max_tokens: 1024,
        };
        let unscored: Vec<&Rubric> = rubric
            .leaves()
            .into_iter()
            .filter(|l| !scores.contains_key(&l.id))
            .collect();
        let bar = progress::bar(unscored.len() as u64, "leaves judged", g.json);
        for leaf in unscored {
            bar.set_message(leaf.id.clone());
            let r = judge.judge(&leaf_as_criterion(leaf), &a.submission).await;
            let score = match r.outcome {
                Outcome::Pass => Some(1.0),
                Outcome::Fail => Some(0.0),
                Outcome::Undecided => None,
            };
            scores.insert(
                leaf.id.clone(),
                LeafScore {
                    score,
                    explanation: r.evidence.join(" | "),
                },
            );
            bar.inc(1);
        }
        bar.finish_and_clear();
    }
    let graded = rubric.grade(&scores);
    if g.json {
        println!(
            "{}",
            serde_json::json!({"submission": a.submission.display().to_string(), "code_dev": a.code_dev, "grade": graded})
        );
    } else {
        print_tree(&graded, 0);
        println!(
            "score {:.4} ({} leaves{}){}",
            graded.score,
            graded.leaves,
            if a.code_dev { ", Code-Dev" } else { "" },
            match (graded.invalid_leaves, graded.score_over_valid) {
                (0, _) => String::new(),
                (n, Some(s)) =>
                    format!("; {n} leaves not judged count 0; over the judged leaves: {s:.4}"),
                (n, None) => format!("; none of the {n} leaves was judged"),
            }
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Scores for leaves the rubric lacks are a mistake in the file (with --code-dev they may be
/// the removed leaves' scores, and are ignored).
fn check_leaf_ids(
    rubric: &Rubric,
    scores: &BTreeMap<String, LeafScore>,
    path: &Path,
    code_dev: bool,
) -> Result<()> {
    let known: std::collections::HashSet<&str> =
        rubric.leaves().iter().map(|l| l.id.as_str()).collect();
    let unknown: Vec<&str> = scores
        .keys()
        .map(|k| k.as_str())
        .filter(|k| !known.contains(k))
        .collect();
    if !unknown.is_empty() && !code_dev {
        bail!(
            "{}: scores for leaves the rubric does not have: {}",
            path.display(),
            unknown.join(", ")
        );
    }
    Ok(())
}

/// The verification of `paper verify --out` (verification.json), or a bare verification.
fn read_verification(path: &Path) -> Result<Verification> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("{}: cannot read the verification", path.display()))?;
    let value: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{}: not JSON", path.display()))?;
    let inner = value.get("verification").cloned().unwrap_or(value);
    serde_json::from_value(inner).with_context(|| {
        format!(
            "{}: not a verification (expected the verification.json of `reprolab paper verify --out`)",
            path.display()
        )
    })
}

/// A rubric leaf put to the judge as a criterion: its requirement is the fact.
fn leaf_as_criterion(leaf: &Rubric) -> Criterion {
    Criterion {
        id: leaf.id.clone(),
        fact: leaf.requirements.clone(),
        scope: leaf.task_category.clone().unwrap_or_default(),
        category: "algorithm".into(),
        source: leaf.requirements.clone(),
        checks: Vec::new(),
    }
}

fn print_tree(g: &Grade, depth: usize) {
    let flag = if g.valid_score {
        ""
    } else {
        "  (not all judged)"
    };
    println!(
        "{}{}  w={}  {:.3}{flag}",
        "  ".repeat(depth),
        g.id,
        g.weight,
        g.score
    );
    for c in &g.sub_tasks {
        print_tree(c, depth + 1);
    }
}

/// `reprolab paper verify`: the fingerprint's criteria decided against a code directory.
pub async fn verify_cmd(g: &Global, a: &PaperVerifyArgs) -> Result<ExitCode> {
    if !a.code.is_dir() {
        bail!(
            "{}: the code to verify is not a directory",
            a.code.display()
        );
    }
    if !(a.timeout.is_finite() && a.timeout > 0.0) {
        bail!("--timeout is {}; expected seconds > 0", a.timeout);
    }
    let paper_text = std::fs::read_to_string(&a.paper)
        .with_context(|| format!("{}: cannot read the paper", a.paper.display()))?;
    let (fingerprint, dropped) =
        grounded_fingerprint(&a.paper, &paper_text, a.fingerprint.as_deref())?;
    let env = context::python_env(g).await?;
    let code = std::path::absolute(&a.code).unwrap_or_else(|_| a.code.clone());
    let facts = {
        let (python, pythonpath, code) = (env.python.clone(), env.pythonpath.clone(), code.clone());
        tokio::task::spawn_blocking(move || {
            codefacts::extract(&python, pythonpath.as_deref(), &code)
        })
        .await
        .context(Infrastructure("reading the code's facts"))??
    };
    let store = (!g.no_cache).then(|| context::open_store(g)).transpose()?;
    let warm = (!a.cold).then(|| WarmPools::new(1));
    let prober = SandboxProber {
        runner: ScriptRunner {
            env: &env,
            limits: reprolab_core::manifest::Limits {
                timeout_s: a.timeout,
                ..default_limits()
            },
            paths: Vec::new(),
            parallel: 1,
            store: store.as_ref(),
            warm: warm.as_ref(),
        },
        code_hash: reprolab_core::hash::hash_tree(&code)
            .with_context(|| format!("{}: cannot read the code", code.display()))?,
    };
    if a.votes == 0 || a.votes > 15 {
        bail!("--votes is {}; expected 1 to 15", a.votes);
    }
    let session = a
        .llm
        .llm
        .is_some()
        .then(|| crate::llm::open(g, &a.llm, crate::llm::local_factory(g), None))
        .transpose()?;
    let bar = progress::bar(fingerprint.criteria.len() as u64, "criteria", g.json);
    let on_verdict = |v: &Verdict| {
        bar.set_message(v.id.clone());
        bar.inc(1);
    };
    let verification = match &session {
        Some(s) => {
            let judge = LlmJudge {
                model: s.model.as_ref(),
                paper: &paper_text,
                votes: a.votes,
                max_tokens: 1024,
            };
            verify(&fingerprint, &facts, &code, &prober, &judge, on_verdict).await
        }
        None => verify(&fingerprint, &facts, &code, &prober, &NoJudge, on_verdict).await,
    };
    bar.finish_and_clear();
    if let Some(w) = &warm {
        w.shutdown().await;
    }
    let report = serde_json::json!({
        "paper": a.paper.display().to_string(),
        "code": a.code.display().to_string(),
        "verification": &verification,
        "dropped": dropped,
    });
    if let Some(dir) = &a.out {
        std::fs::create_dir_all(dir)
            .and_then(|_| {
                std::fs::write(
                    dir.join("verification.json"),
                    serde_json::to_string_pretty(&report).unwrap_or_default(),
                )
            })
            .with_context(|| format!("writing verification.json into {}", dir.display()))?;
    }
    if g.json {
        println!("{report}");
    } else {
        print_verification(&verification, &dropped);
    }
    Ok(if verification.count(Outcome::Fail) > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The fingerprint (given, or `fingerprint.json` beside the paper) with the criteria whose
/// source is not in the paper dropped, and merged duplicates.
fn grounded_fingerprint(
    paper: &Path,
    text: &str,
    given: Option<&Path>,
) -> Result<(Fingerprint, Vec<Dropped>)> {
    let path: PathBuf = match given {
        Some(p) => p.to_path_buf(),
        None => {
            let beside = paper.with_file_name("fingerprint.json");
            if !beside.is_file() {
                bail!(
                    "{}: no fingerprint: give --fingerprint FILE (there is no fingerprint.json beside the paper)",
                    paper.display()
                );
            }
            beside
        }
    };
    let mut fingerprint = Fingerprint::load(&path)?;
    let mut dropped = fingerprint.ground(text);
    dropped.extend(fingerprint.dedupe());
    for d in &dropped {
        eprintln!("note: criterion {} left out: {}", d.id, d.reason);
    }
    Ok((fingerprint, dropped))
}

/// Probes run as reproduction scripts: one seed, in the sandbox, cached under the script, which
/// carries the code's content hash (an edited implementation is probed again).
struct SandboxProber<'a> {
    runner: ScriptRunner<'a>,
    code_hash: String,
}

impl Prober for SandboxProber<'_> {
    async fn probe(&self, code_dir: &Path, script: &str) -> ProbeRun {
        let dir = serde_json::to_string(&code_dir.display().to_string()).unwrap_or_default();
        let wrapped = format!(
            "# reprolab paper probe; code {}\nimport os as _os, sys as _sys\n_os.chdir({dir})\n_sys.path.insert(0, {dir})\n{script}\n",
            self.code_hash
        );
        let runs = self.runner.run("paper probe", &wrapped, &[0]).await;
        let Some(run) = runs.first() else {
            return ProbeRun::Error("the probe did not run".into());
        };
        match (run.status, run.exceptions.first()) {
            (RunStatus::Ok, _) => ProbeRun::Passed,
            (RunStatus::Exception, Some(e)) if e.type_name == "AssertionError" => {
                ProbeRun::AssertionFailed(e.message.clone())
            }
            _ => ProbeRun::Error(run.headline()),
        }
    }
}

fn print_verification(v: &Verification, dropped: &[Dropped]) {
    let header = [
        "criterion",
        "verdict",
        "checker",
        "category",
        "fact",
        "evidence",
    ];
    let mut rows: Vec<Vec<String>> = vec![header.iter().map(|h| h.to_string()).collect()];
    rows.extend(v.verdicts.iter().map(|d| {
        vec![
            d.id.clone(),
            outcome_word(d).into(),
            d.decided_by.map_or("-", |c| c.as_str()).into(),
            d.category.clone(),
            clip(&d.fact, 60),
            clip(&d.evidence.join("; "), 90),
        ]
    }));
    print!("{}", table::render(&rows));
    let by: Vec<String> = v
        .decided_by()
        .iter()
        .map(|(c, n)| format!("{} {n}", c.as_str()))
        .collect();
    println!(
        "{} pass, {} fail, {} undecided of {} criteria; decided by: {}{}",
        v.count(Outcome::Pass),
        v.count(Outcome::Fail),
        v.count(Outcome::Undecided),
        v.verdicts.len(),
        if by.is_empty() {
            "none".into()
        } else {
            by.join(", ")
        },
        if dropped.is_empty() {
            String::new()
        } else {
            format!("; {} left out of the fingerprint", dropped.len())
        }
    );
    if !v.syntax_errors.is_empty() {
        println!(
            "files that do not parse (not checked statically): {}",
            v.syntax_errors.join(", ")
        );
    }
}

fn outcome_word(v: &Verdict) -> &'static str {
    match v.outcome {
        Outcome::Pass => "pass",
        Outcome::Fail => "FAIL",
        Outcome::Undecided => "undecided",
    }
}

fn clip(s: &str, n: usize) -> String {
    let s = s.lines().next().unwrap_or("");
    if s.chars().count() <= n {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(n - 1).collect::<String>())
    }
}

/// `reprolab paper fingerprint`: the paper's criteria, extracted by the model, settled by rules.
pub async fn fingerprint(g: &Global, a: &PaperFingerprintArgs) -> Result<ExitCode> {
    let text = std::fs::read_to_string(&a.paper)
        .with_context(|| format!("{}: cannot read the paper", a.paper.display()))?;
    if a.out.exists() && !a.force {
        bail!(
            "{}: already exists; pass --force to replace it or --out FILE",
            a.out.display()
        );
    }
    let chunks = extract::chunks(&text);
    if chunks.is_empty() {
        bail!("{}: the paper has no text", a.paper.display());
    }
    let title = chunks[0].heading.clone();
    let session = crate::llm::open(g, &a.llm, crate::llm::local_factory(g), None)?;
    let bar = progress::bar(chunks.len() as u64, "sections", g.json);
    let extraction = extract::extract(
        session.model.as_ref(),
        &title,
        &text,
        &chunks,
        a.max_tokens,
        |c| {
            bar.set_message(c.heading.clone());
            bar.inc(1);
        },
    )
    .await;
    bar.finish_and_clear();
    let mut fp = extraction.fingerprint.clone();
    fp.paper = title;
    std::fs::write(&a.out, serde_json::to_string_pretty(&fp)? + "\n")
        .with_context(|| format!("writing {}", a.out.display()))?;
    if g.json {
        println!(
            "{}",
            serde_json::json!({"out": a.out.display().to_string(), "extraction": extraction,
                               "llm": session.meter.snapshot()})
        );
        return Ok(ExitCode::SUCCESS);
    }
    for d in &extraction.dropped {
        eprintln!("dropped: {} ({})", clip(&d.fact, 80), d.reason);
    }
    for u in &extraction.unreadable {
        eprintln!("warning: no criteria read from section {u}");
    }
    let with_checks = fp.criteria.iter().filter(|c| !c.checks.is_empty()).count();
    println!(
        "{} criteria ({} with a static check) from {} sections; {} dropped; written to {}",
        fp.criteria.len(),
        with_checks,
        extraction.calls,
        extraction.dropped.len(),
        a.out.display()
    );
    Ok(ExitCode::SUCCESS)
}
