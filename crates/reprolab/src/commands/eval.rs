//! `reprolab eval`: train a subject N times and summarise its metric on both splits.

use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Result, bail};
use reprolab_core::Split;
use reprolab_exec::{Evaluation, Mode};
use serde_json::json;

use super::{ci, run_seeds, runs_json, summary};
use crate::cli::{EvalArgs, Global};
use crate::context;
use crate::plural::count;
use crate::table::{num, render};

pub async fn run(g: &Global, a: &EvalArgs) -> Result<ExitCode> {
    if a.runs == 0 {
        bail!("--runs must be at least 1");
    }
    let subject = context::load_subject(&a.subject)?;
    let (config, config_path) = context::load_config(&subject, a.config.as_deref())?;
    let ev = context::evaluator(g).await?;
    let seeds = super::seed_range(a.seed, a.runs)?;
    let start = Instant::now();
    let evals = run_seeds(
        &ev,
        &subject,
        &config,
        &seeds,
        Mode::Eval,
        &subject.name,
        g.json,
    )
    .await?;
    let wall = start.elapsed().as_secs_f64();
    let workers = ev.workers();
    ev.shutdown().await;

    let failed = evals.iter().filter(|e| !e.record.outcome.is_ok()).count();
    let cached = evals.iter().filter(|e| e.cached).count();
    let (search, holdout) = (
        summary(&evals, Split::Search, &subject.metric),
        summary(&evals, Split::Holdout, &subject.metric),
    );
    if g.json {
        let out = json!({
            "subject": subject.name, "metric": subject.metric.name, "goal": subject.metric.goal,
            "config_path": config_path, "config": config, "runs": runs_json(&evals),
            "summary": {"search": search, "holdout": holdout},
            "failed": failed, "cached": cached, "wall_s": wall, "workers": workers,
            "sandbox": reprolab_exec::sandbox::isolation(),
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        println!(
            "{} ({}, {} {}) with {}: {}, {} trained, {} cached, {} failed, {:.1} s on {}\n",
            subject.name,
            subject.task_name(),
            subject.metric.name,
            subject.metric.goal_name(),
            config_path.display(),
            count(evals.len(), "run"),
            evals.len() - cached,
            cached,
            failed,
            wall,
            count(workers, "worker")
        );
        let mut rows = vec![
            ["split", "n", "mean", "std", "95% CI", "min", "max"]
                .map(String::from)
                .to_vec(),
        ];
        for (name, s) in [("search", &search), ("holdout", &holdout)] {
            if let Some(s) = s {
                rows.push(vec![
                    name.into(),
                    s.n.to_string(),
                    num(Some(s.mean)),
                    num(Some(s.std)),
                    ci(s),
                    num(Some(s.min)),
                    num(Some(s.max)),
                ]);
            }
        }
        print!("{}", render(&rows));
        println!();
        let mut rows = vec![
            ["seed", "search", "holdout", "time", "outcome"]
                .map(String::from)
                .to_vec(),
        ];
        for e in &evals {
            let o = &e.record.outcome;
            rows.push(vec![
                e.record.seed.to_string(),
                num(o.metric(Split::Search)),
                num(o.metric(Split::Holdout)),
                if e.cached {
                    format!("{:.2} s (cached)", e.record.duration_s)
                } else {
                    format!("{:.2} s", e.record.duration_s)
                },
                if o.is_ok() { "ok".into() } else { o.summary() },
            ]);
        }
        print!("{}", render(&rows));
        if let Some(shown) = evals.iter().find_map(Evaluation::failure_report) {
            println!("\n{shown}");
        }
    }
    Ok(if failed > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
