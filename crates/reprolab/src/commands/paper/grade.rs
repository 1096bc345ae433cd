//! `reprolab paper grade`: a PaperBench rubric graded from given scores, a verification and the
//! LLM judge, in that order.

use std::process::ExitCode;

use anyhow::{Result, bail};
use reprolab_paper::checks::Outcome;
use reprolab_paper::judge::LlmJudge;
use reprolab_paper::rubric::{
    Grade, LeafScore, Rubric, parse_scores, read_verification, scores_from_verification,
};
use reprolab_paper::verify::Judge;

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
        rubric.code_dev()
    } else {
        rubric
    };
    let mut scores = match &a.scores {
        Some(path) => {
            let scores = parse_scores(path)?;
            // With --code-dev, scores of the removed leaves are expected, and ignored.
            if !a.code_dev {
                rubric.check_score_ids(&scores, path)?;
            }
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
            let r = judge.judge(&leaf.as_criterion(), &a.submission).await;
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
