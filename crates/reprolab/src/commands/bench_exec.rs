//! `reprolab bench-exec`: trainings per minute through the warm worker pool against the obvious
//! alternative, one fresh `python train.py` per training, measured in the same run with the same
//! parallelism and no cache.

use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Result, bail};
use reprolab_core::manifest::Entry;
use reprolab_exec::{Evaluator, Mode};
use reprolab_store::Store;
use serde_json::json;

use super::run_seeds;
use crate::cli::{BenchExecArgs, Global};
use crate::context;
use crate::plural::count;
use crate::table::render;

const COLD_TEMPLATE: &str = "{python} train.py --config {config} --seed {seed} --out {result}";

pub async fn run(g: &Global, a: &BenchExecArgs) -> Result<ExitCode> {
    if a.runs == 0 {
        bail!("--runs must be at least 1");
    }
    let subject = context::load_subject(&a.subject)?;
    let env = context::python_env(g).await?;
    let workers = g.workers.unwrap_or_else(reprolab_exec::default_workers);
    let scratch = tempfile::tempdir()?;
    let store = || Store::open(&scratch.path().join("bench.db"));
    let seeds: Vec<u64> = (0..a.runs as u64).collect();

    // Warm pool: first a round of one training per worker so every worker has imported torch
    // (its start-up is reported apart), then the measured trainings.
    let warm = Evaluator::new(env.clone(), store()?, workers, false)?;
    let t0 = Instant::now();
    let startup_seeds: Vec<u64> = (1000..1000 + workers as u64).collect();
    run_seeds(
        &warm,
        &subject,
        &subject.config,
        &startup_seeds,
        Mode::Eval,
        "warm-up",
        g.json,
    )
    .await?;
    let startup_s = t0.elapsed().as_secs_f64();
    let t1 = Instant::now();
    let warm_runs = run_seeds(
        &warm,
        &subject,
        &subject.config,
        &seeds,
        Mode::Eval,
        "warm pool",
        g.json,
    )
    .await?;
    let warm_s = t1.elapsed().as_secs_f64();
    warm.shutdown().await;

    let mut cold_subject = subject.clone();
    cold_subject.entry = Entry::Command {
        template: COLD_TEMPLATE.into(),
    };
    let cold = Evaluator::new(env, store()?, workers, false)?;
    let t2 = Instant::now();
    let cold_runs = run_seeds(
        &cold,
        &cold_subject,
        &subject.config,
        &seeds,
        Mode::Eval,
        "cold process",
        g.json,
    )
    .await?;
    let cold_s = t2.elapsed().as_secs_f64();
    cold.shutdown().await;

    let failures = warm_runs
        .iter()
        .chain(&cold_runs)
        .filter(|e| !e.record.outcome.is_ok())
        .count();
    let per_min = |n: usize, s: f64| n as f64 * 60.0 / s;
    let mean_train = |r: &[reprolab_exec::Evaluation]| {
        r.iter().map(|e| e.record.duration_s).sum::<f64>() / r.len() as f64
    };
    let (warm_tpm, cold_tpm) = (per_min(a.runs, warm_s), per_min(a.runs, cold_s));
    let with_startup_tpm = per_min(a.runs + workers, startup_s + warm_s);
    if g.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({
                "subject": subject.name, "runs": a.runs, "workers": workers, "failures": failures,
                "warm": {"wall_s": warm_s, "trainings_per_min": warm_tpm, "mean_training_s": mean_train(&warm_runs), "startup_s": startup_s, "trainings_per_min_with_startup": with_startup_tpm},
                "cold": {"wall_s": cold_s, "trainings_per_min": cold_tpm, "mean_training_s": mean_train(&cold_runs)},
                "ratio": warm_tpm / cold_tpm, "ratio_with_startup": with_startup_tpm / cold_tpm,
            }))?
        );
    } else {
        println!(
            "{}: {} per method on {}\n",
            subject.name,
            count(a.runs, "training"),
            count(workers, "worker")
        );
        let rows = vec![
            ["method", "wall", "trainings/min", "per training"]
                .map(String::from)
                .to_vec(),
            vec![
                "warm pool".into(),
                format!("{warm_s:.1} s"),
                format!("{warm_tpm:.1}"),
                format!("{:.2} s", mean_train(&warm_runs)),
            ],
            vec![
                "fresh process".into(),
                format!("{cold_s:.1} s"),
                format!("{cold_tpm:.1}"),
                format!("{:.2} s", mean_train(&cold_runs)),
            ],
        ];
        print!("{}", render(&rows));
        println!("\nratio warm / fresh: {:.2}x", warm_tpm / cold_tpm);
        println!(
            "counting the pool's start-up ({startup_s:.1} s for {workers} warm-up trainings): {:.2}x",
            with_startup_tpm / cold_tpm
        );
        if failures > 0 {
            println!("\n{failures} trainings failed: the figures above are not comparable");
        }
    }
    Ok(if failures > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
