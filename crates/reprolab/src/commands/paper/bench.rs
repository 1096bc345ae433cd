//! `reprolab bench paper`: the verifier over the bundled papers (reference and mutated
//! implementations against the gold fingerprint), rubric grades from the verifications, and
//! with a model, the judge for what no check decides and the recall of extracted fingerprints.

use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use reprolab_bench::ResultsFile;
use reprolab_bench::paper::{PaperRow, Recall, report, row, targets_met};
use reprolab_paper::benchmark::BundledPaper;
use reprolab_paper::{Paper, extract};

use super::Checking;
use crate::cli::{BenchPaperArgs, Global};
use crate::progress;

pub async fn bench(g: &Global, a: &BenchPaperArgs) -> Result<ExitCode> {
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
    let verifier = checking.verifier(&a.check)?;
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
