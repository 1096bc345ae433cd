//! One module per verb.

pub mod bench_exec;
pub mod bench_localize;
pub mod bench_repair;
pub mod bench_reproduce_exec;
pub mod codegen;
pub mod compare;
pub mod env;
pub mod eval;
pub mod faults;
pub mod init;
pub mod llm;
pub mod localize;
pub mod mutate;
pub mod neutrality;
pub mod paper;
pub mod repair;
pub mod reproduce;
pub mod trace;

use anyhow::Result;
use reprolab_core::Split;
use reprolab_core::manifest::{Config, Metric, Subject};
use reprolab_exec::{Evaluation, Evaluator, Mode};
use reprolab_stats::Summary;
use serde::Serialize;

use crate::progress;

/// Evaluate `config` on `seeds` with a progress bar that says how many came from the cache.
pub async fn run_seeds(
    ev: &Evaluator,
    subject: &Subject,
    config: &Config,
    seeds: &[u64],
    mode: Mode,
    label: &str,
    json: bool,
) -> Result<Vec<Evaluation>> {
    let pb = progress::bar(seeds.len() as u64, label, json);
    let (mut cached, mut failed) = (0, 0);
    let mut on_done = |e: &Evaluation| {
        cached += e.cached as usize;
        failed += !e.record.outcome.is_ok() as usize;
        pb.set_message(format!("{cached} cached, {failed} failed"));
        pb.inc(1);
    };
    let result = ev.run(subject, config, seeds, mode, &mut on_done).await;
    pb.finish_and_clear();
    Ok(result?)
}

/// Metric values of the finished runs on one split.
pub fn metrics(evals: &[Evaluation], split: Split) -> Vec<f64> {
    evals
        .iter()
        .filter_map(|e| e.record.outcome.metric(split))
        .collect()
}

/// Per-run line of the JSON output.
#[derive(Serialize)]
pub struct RunJson<'a> {
    pub seed: u64,
    pub outcome: &'a reprolab_core::Outcome,
    pub duration_s: f64,
    pub cached: bool,
}

pub fn runs_json(evals: &[Evaluation]) -> Vec<RunJson<'_>> {
    evals
        .iter()
        .map(|e| RunJson {
            seed: e.record.seed,
            outcome: &e.record.outcome,
            duration_s: e.record.duration_s,
            cached: e.cached,
        })
        .collect()
}

/// Summary of one split, its CI cut to the values the metric can take; `None` when no run
/// finished.
pub fn summary(evals: &[Evaluation], split: Split, metric: &Metric) -> Option<Summary> {
    let xs = metrics(evals, split);
    (!xs.is_empty()).then(|| {
        let s = reprolab_stats::summarize(&xs);
        match metric.range(&xs) {
            Some(range) => s.within(range),
            None => s,
        }
    })
}

/// `[lo, hi]` with 4 decimals.
pub fn ci(s: &Summary) -> String {
    format!("[{:.4}, {:.4}]", s.ci95.0, s.ci95.1)
}

pub use reprolab_bench::serde_name;

/// The seeds `first, first+1, …` of `runs` trainings; an error (not an empty list) when they
/// would pass the largest seed.
pub fn seed_range(first: u64, runs: usize) -> anyhow::Result<Vec<u64>> {
    anyhow::ensure!(runs >= 1, "--runs must be at least 1");
    let last = (runs as u64)
        .checked_sub(1)
        .and_then(|n| first.checked_add(n))
        .ok_or_else(|| {
            anyhow::anyhow!(
                "--seed {first} with --runs {runs}: seeds would pass {} (use a smaller --seed)",
                u64::MAX
            )
        })?;
    Ok((first..=last).collect())
}

/// `--json` of a bench whose report has its own summary table: `{"rows": [...], "report": PATH}`.
pub fn print_rows_and_report<T: Serialize>(rows: &[T], report: &std::path::Path) -> Result<()> {
    let json = serde_json::json!({"rows": rows, "report": report});
    println!("{}", serde_json::to_string_pretty(&json)?);
    Ok(())
}

/// Write a bench's report (report.md, report.html) into `out` and print it (or, with --json,
/// the rows).
pub fn publish<T: Serialize>(
    g: &crate::cli::Global,
    out: &std::path::Path,
    report: &reprolab_bench::Report,
    rows: &[T],
) -> Result<()> {
    use anyhow::Context;
    let path = report
        .write(out)
        .with_context(|| format!("writing the report into {}", out.display()))?;
    if g.json {
        println!("{}", serde_json::to_string(rows)?);
    } else {
        println!("{}", report.to_markdown());
        println!("wrote {}", path.display());
    }
    Ok(())
}
