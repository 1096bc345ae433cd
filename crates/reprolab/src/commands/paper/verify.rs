//! `reprolab paper verify`: a fingerprint's criteria decided against a code directory, shown as
//! a table with the checker and the evidence of each.

use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use reprolab_paper::Paper;
use reprolab_paper::checks::Outcome;
use reprolab_paper::fingerprint::Dropped;
use reprolab_paper::judge::LlmJudge;
use reprolab_paper::verify::{Verdict, Verification};
use reprolab_reproduce::run::WarmPools;

use super::{Verifier, check_votes, clip, grounded_fingerprint};
use crate::cli::{Global, PaperVerifyArgs};
use crate::{context, progress, table};

/// `reprolab paper verify`: the fingerprint's criteria decided against a code directory.
pub async fn verify_cmd(g: &Global, a: &PaperVerifyArgs) -> Result<ExitCode> {
    if !a.code.is_dir() {
        bail!(
            "{}: the code to verify is not a directory",
            a.code.display()
        );
    }
    check_votes(a.votes)?;
    let paper = Paper::load(&a.paper)?;
    let paper_text = &paper.text;
    let (fingerprint, dropped) =
        grounded_fingerprint(&a.paper, paper_text, a.fingerprint.as_deref())?;
    let env = context::python_env(g).await?;
    let store = (!g.no_cache).then(|| context::open_store(g)).transpose()?;
    let warm = (!a.cold).then(|| WarmPools::new(1));
    let verifier = Verifier::new(&env, store.as_ref(), warm.as_ref(), a.timeout)?;
    let session = a
        .llm
        .llm
        .is_some()
        .then(|| crate::llm::open(g, &a.llm, crate::llm::local_factory(g), None))
        .transpose()?;
    let judge = session.as_ref().map(|s| LlmJudge {
        model: s.model.as_ref(),
        paper: paper_text,
        votes: a.votes,
        max_tokens: 1024,
        write_probes: !a.judge_only,
    });
    let bar = progress::bar(fingerprint.criteria.len() as u64, "criteria", g.json);
    let verification = verifier
        .verify(&fingerprint, &a.code, judge.as_ref(), |v| {
            bar.set_message(v.id.clone());
            bar.inc(1);
        })
        .await;
    bar.finish_and_clear();
    if let Some(w) = &warm {
        w.shutdown().await;
    }
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
