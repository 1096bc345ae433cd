//! `reprolab bench paper`: the verifier over the bundled papers (reference and mutated
//! implementations against the gold fingerprint), rubric grades from the verifications, and
//! with a model, the judge for what no check decides and the recall of extracted fingerprints.

use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use reprolab_bench::ResultsFile;
use reprolab_bench::paper::{Implemented, PaperRow, Recall, report, row, targets_met};
use reprolab_paper::benchmark::BundledPaper;
use reprolab_paper::{Paper, extract};

use reprolab_paper::implement::{self, Brief, Options};
use reprolab_paper::rubric::scores_from_verification;

use super::{Checking, check_votes, event_line, lineage_code};
use crate::cli::{BenchPaperArgs, Global};
use crate::llm::LlmSession;
use crate::progress;

pub async fn bench(g: &Global, a: &BenchPaperArgs) -> Result<ExitCode> {
    check_votes(a.check.votes)?;
    let mut papers = BundledPaper::load_all(&a.benchmark)?;
    papers.retain(|p| a.only.is_empty() || a.only.contains(&p.name));
    if papers.is_empty() {
        bail!(
            "--only {}: no paper of {} has such a name",
            a.only.join(","),
            a.benchmark.display()
        );
    }
    let checking = Checking::open(g, &a.check).await?;
    let verifier = checking.verifier(a.check.timeout)?;
    let session = checking.session.as_ref();
    let model = session.map(|s| s.model.name());
    let (mut results, done) = ResultsFile::open::<PaperRow>(&a.out)?;
    let mut rows: Vec<PaperRow> = done.into_iter().filter(|r| r.model == model).collect();
    let pb = progress::bar(papers.len() as u64, "papers", g.json);
    for paper in &papers {
        if rows.iter().any(|r| r.paper == paper.name) {
            pb.inc(1);
            continue;
        }
        pb.set_message(paper.name.clone());
        let started = std::time::Instant::now();
        let before = session.map(|s| s.meter.snapshot().calls);
        let document = Paper::load(&paper.paper)?;
        let text = &document.text;
        let judge = checking.judge(text, &a.check);
        let reference = verifier
            .verify(&paper.fingerprint, &paper.reference, judge.as_ref(), |_| {})
            .await?;
        let mutated = verifier
            .verify(&paper.fingerprint, &paper.mutated, judge.as_ref(), |_| {})
            .await?;
        let mut r = row(paper, &reference, &mutated);
        if let Some(s) = session {
            let ex = extract::extract(s.model.as_ref(), &document, 2048, |_| {}).await;
            r.recall = Some(Recall {
                gold: paper.fingerprint.criteria.len(),
                recalled: extract::recalled(&paper.fingerprint, &ex.fingerprint).len(),
                extracted: ex.fingerprint.criteria.len(),
                dropped: ex.dropped.len(),
            });
            r.implementation = Some(implement_one(&checking, s, a, paper, &document, &pb).await?);
            r.llm_calls = s.meter.snapshot().calls - before.unwrap_or(0);
        }
        r.model = model.clone();
        r.time_s = started.elapsed().as_secs_f64();
        let dir = a.out.join(&paper.name);
        std::fs::create_dir_all(&dir)
            .and_then(|_| {
                for (name, v) in [("reference", &reference), ("mutated", &mutated)] {
                    std::fs::write(
                        dir.join(format!("{name}.verification.json")),
                        serde_json::to_string_pretty(v).unwrap_or_default(),
                    )?;
                }
                Ok(())
            })
            .with_context(|| format!("writing the verifications into {}", dir.display()))?;
        progress::line(&pb, &r.line());
        results.append(&r)?;
        rows.push(r);
        pb.inc(1);
    }
    pb.finish_and_clear();
    checking.close().await;
    super::super::publish(g, &a.out, &report(&rows), &rows)?;
    Ok(if targets_met(&rows) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The paper implemented by the model from its gold fingerprint into OUT/<paper>/impl (resumed
/// if it is there), with the corpus of bundled papers as lineage; the last round's verification
/// graded on the rubric.
async fn implement_one(
    checking: &Checking,
    session: &LlmSession,
    a: &BenchPaperArgs,
    paper: &BundledPaper,
    document: &Paper,
    pb: &indicatif::ProgressBar,
) -> Result<Implemented> {
    let started = std::time::Instant::now();
    let before = session.meter.snapshot();
    let out = a.out.join(&paper.name).join("impl");
    let lineage = lineage_code(document, Some(&a.benchmark), 5, None).await?;
    let judge = checking.judge(&document.text, &a.check);
    let workshop = checking.workshop(
        checking.verifier(a.check.timeout)?,
        &paper.fingerprint,
        judge.as_ref(),
        300.0,
    );
    let brief = Brief {
        title: &document.title,
        paper: &document.text,
        fingerprint: &paper.fingerprint,
        lineage: &lineage,
    };
    let opts = Options {
        rounds: a.rounds,
        ..Options::default()
    };
    let state = implement::implement(
        session.model.as_ref(),
        &brief,
        &out,
        &workshop,
        &opts,
        |e| progress::line(pb, &format!("{}: {}", paper.name, event_line(&e))),
    )
    .await?;
    let last = state.rounds.last();
    let grade = implement::last_verification(&out, &state).map(|v| {
        paper
            .rubric
            .grade(&scores_from_verification(&paper.rubric, &v))
    });
    let after = session.meter.snapshot();
    Ok(Implemented {
        rounds: state.rounds.len(),
        passed: state.passed(),
        smoke_ok: last.is_some_and(|r| r.smoke.ok),
        pass: last.map_or(0, |r| r.pass),
        fail: last.map_or(0, |r| r.fail),
        undecided: last.map_or(0, |r| r.undecided),
        rubric_score: grade.as_ref().map_or(0.0, |g| g.score),
        rubric_over_scored: grade.and_then(|g| g.score_over_valid),
        stopped: state.stopped.clone().unwrap_or_default(),
        calls: after.calls - before.calls,
        prompt_tokens: after.prompt_tokens - before.prompt_tokens,
        completion_tokens: after.completion_tokens - before.completion_tokens,
        cost_usd: after.cost_usd - before.cost_usd,
        time_s: started.elapsed().as_secs_f64(),
    })
}
