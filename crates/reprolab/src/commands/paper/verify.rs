//! `reprolab paper verify`: a fingerprint's criteria decided against a code directory, shown as
//! a table with the checker and the evidence of each.

use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use reprolab_paper::Paper;
use reprolab_paper::checks::Outcome;
use reprolab_paper::fingerprint::Dropped;
use reprolab_paper::verify::{Verdict, Verification};

use super::{Checking, check_votes, clip, grounded_fingerprint};
use crate::cli::{Global, PaperVerifyArgs};
use crate::{progress, table};

/// `reprolab paper verify`: the fingerprint's criteria decided against a code directory.
pub async fn verify_cmd(g: &Global, a: &PaperVerifyArgs) -> Result<ExitCode> {
    if !a.code.is_dir() {
        bail!(
            "{}: the code to verify is not a directory",
            a.code.display()
        );
    }
    check_votes(a.check.votes)?;
    let paper = Paper::load(&a.paper)?;
    let (fingerprint, dropped) =
        grounded_fingerprint(&a.paper, &paper.text, a.fingerprint.as_deref())?;
    let checking = Checking::open(g, &a.check).await?;
    let judge = checking.judge(&paper.text, &a.check);
    let bar = progress::bar(fingerprint.criteria.len() as u64, "criteria", g.json);
    let verification = checking
        .verifier(a.check.timeout)?
        .verify(&fingerprint, &a.code, judge.as_ref(), |v| {
            bar.set_message(v.id.clone());
            bar.inc(1);
        })
        .await;
    bar.finish_and_clear();
    checking.close().await;
    let verification = verification?;
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
