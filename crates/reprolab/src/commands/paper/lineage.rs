//! `reprolab paper lineage`: a paper's references resolved in a local corpus, ranked by
//! relevance to its method.

use std::process::ExitCode;

use anyhow::{Result, bail};
use reprolab_paper::lineage::{Resolved, resolve};
use reprolab_paper::{Corpus, Lineage, Paper};

use super::clip;
use crate::cli::{Global, PaperLineageArgs};

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
