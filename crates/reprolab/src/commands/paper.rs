//! `reprolab paper`: wiring of the paper crate.

use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use reprolab_paper::Paper;
use reprolab_paper::lineage::{Corpus, Lineage, Resolved, resolve};
use reprolab_paper::rubric::{Grade, Rubric, parse_scores};

use crate::cli::{Global, PaperGradeArgs, PaperLineageArgs};

pub fn grade(g: &Global, a: &PaperGradeArgs) -> Result<ExitCode> {
    if !a.submission.is_dir() {
        bail!(
            "{}: the submission is not a directory",
            a.submission.display()
        );
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
    let scores = parse_scores(&a.scores)?;
    let known: std::collections::HashSet<&str> =
        rubric.leaves().iter().map(|l| l.id.as_str()).collect();
    let unknown: Vec<&String> = scores
        .keys()
        .filter(|k| !known.contains(k.as_str()))
        .collect();
    if !unknown.is_empty() && !a.code_dev {
        bail!(
            "{}: scores for leaves the rubric does not have: {}",
            a.scores.display(),
            unknown
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
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

pub fn lineage(g: &Global, a: &PaperLineageArgs) -> Result<ExitCode> {
    if a.top == 0 {
        bail!("--top must be at least 1");
    }
    let paper = Paper::load(&a.paper)?;
    let corpus = Corpus::load(&a.corpus)?;
    let lineage = resolve(&paper, &corpus, a.top);
    if g.json {
        println!("{}", serde_json::to_string(&lineage)?);
    } else {
        print_lineage(&lineage);
    }
    Ok(ExitCode::SUCCESS)
}

fn print_lineage(l: &Lineage) {
    println!(
        "lineage of \"{}\" in {} (ranked against {}; offline: only the corpus was searched)",
        l.title,
        l.corpus.display(),
        l.query
    );
    if let Some(id) = &l.excluded_self {
        println!("left out: {id} (the paper itself)");
    }
    if l.resolved.is_empty() {
        println!("no reference is in the corpus");
    } else {
        println!();
        print_resolved(&l.resolved);
    }
    if !l.below_top.is_empty() {
        println!(
            "\n{} more resolved, below the top {}:",
            l.below_top.len(),
            l.top
        );
        print_resolved(&l.below_top);
    }
    if !l.unresolved.is_empty() {
        println!("\nunresolved references ({}):", l.unresolved.len());
        for u in &l.unresolved {
            let generic = u
                .generic
                .map(|k| format!("; generic: {k}"))
                .unwrap_or_default();
            println!("  {} ({}{generic})", u.reference.raw, u.reason);
        }
    }
    for s in &l.skipped {
        eprintln!(
            "warning: {}: not read as a paper: {}",
            s.path.display(),
            s.reason
        );
    }
}

const TITLE_WIDTH: usize = 48;
const AUTHORS_WIDTH: usize = 24;

fn print_resolved(rows: &[Resolved]) {
    println!(
        "{:>4}  {:>7}  {:<TITLE_WIDTH$}  {:<AUTHORS_WIDTH$}  {:>4}  matched by",
        "rank", "score", "title", "authors, year", "code"
    );
    for r in rows {
        let authors = match r.year {
            Some(y) => format!("{} {y}", r.authors.join(", ")),
            None => r.authors.join(", "),
        };
        println!(
            "{:>4}  {:>7.3}  {:<TITLE_WIDTH$}  {:<AUTHORS_WIDTH$}  {:>4}  {}",
            r.rank,
            r.score,
            clip(&r.title, TITLE_WIDTH),
            clip(&authors, AUTHORS_WIDTH),
            r.code_files.len(),
            r.matched_by.label()
        );
    }
}

/// `s` cut to `width` characters, with an ellipsis when cut.
fn clip(s: &str, width: usize) -> String {
    if s.chars().count() <= width {
        return s.to_string();
    }
    let kept: String = s.chars().take(width - 1).collect();
    format!("{kept}…")
}
