//! `reprolab paper grade`: a PaperBench rubric graded from given scores, a verification and the
//! LLM judge, in that order.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use reprolab_paper::checks::Outcome;
use reprolab_paper::fingerprint::Criterion;
use reprolab_paper::judge::LlmJudge;
use reprolab_paper::rubric::{Grade, LeafScore, Rubric, parse_scores, scores_from_verification};
use reprolab_paper::verify::{Judge, Verification};

use super::check_votes;
use crate::cli::{Global, PaperGradeArgs};
use crate::progress;

pub async fn grade(g: &Global, a: &PaperGradeArgs) -> Result<ExitCode> {
    if !a.submission.is_dir() {
        bail!(
            "{}: the submission is not a directory",
            a.submission.display()
        );
    }
    check_votes(a.votes)?;
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
            write_probes: false,
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
