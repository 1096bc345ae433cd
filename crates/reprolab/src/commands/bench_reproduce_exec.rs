//! `reprolab bench-reproduce-exec`: reproduction runs per minute through warm workers (a forked
//! child of a worker that imported torch once) against a fresh `python -m reprolab.repro` per
//! run, on the same reference scripts, seeds and parallelism, in the same invocation, no cache.
//! It also checks that both ways observed the same thing.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use reprolab_reproduce::Observation;
use reprolab_reproduce::run::{ScriptRunner, WarmPools, default_limits};
use serde_json::json;

use crate::cli::{BenchReproduceExecArgs, Global};
use crate::context;
use crate::plural::count;
use crate::table::render;

/// Reference scripts of benchmarks/bugs that need only the managed environment: an exception,
/// a warning, a NaN.
pub const DEFAULT_SCRIPTS: [&str; 3] = [
    "benchmarks/bugs/02-bce-target-size/reference.py",
    "benchmarks/bugs/18-mse-broadcast-warning/reference.py",
    "benchmarks/bugs/20-nan-log-zero-aggregation/reference.py",
];

pub async fn run(g: &Global, a: &BenchReproduceExecArgs) -> Result<ExitCode> {
    if a.runs == 0 {
        bail!("--runs must be at least 1");
    }
    let paths: Vec<PathBuf> = if a.scripts.is_empty() {
        DEFAULT_SCRIPTS.iter().map(PathBuf::from).collect()
    } else {
        a.scripts.clone()
    };
    let scripts: Vec<(String, String)> = paths
        .iter()
        .map(|p| {
            std::fs::read_to_string(p)
                .map(|s| (p.display().to_string(), s))
                .with_context(|| format!("{}: cannot read the script", p.display()))
        })
        .collect::<Result<_>>()?;
    let env = context::python_env(g).await?;
    let workers = g.workers.unwrap_or_else(reprolab_exec::default_workers);
    let seeds: Vec<u64> = (1..=a.runs as u64).collect();
    let total = scripts.len() * seeds.len();
    let runner = |warm| ScriptRunner {
        env: &env,
        limits: default_limits(),
        paths: Vec::new(),
        parallel: workers,
        store: None,
        warm,
    };

    // Warm: first one run per worker so that every worker has imported torch (reported apart).
    let pools = WarmPools::new(workers);
    let warm_runner = runner(Some(&pools));
    let t0 = Instant::now();
    let warmup: Vec<u64> = (1000..1000 + workers as u64).collect();
    warm_runner.run("warm-up", &scripts[0].1, &warmup).await;
    let startup_s = t0.elapsed().as_secs_f64();
    let t1 = Instant::now();
    let mut warm_obs = Vec::new();
    for (name, script) in &scripts {
        warm_obs.push(warm_runner.run(name, script, &seeds).await);
    }
    let warm_s = t1.elapsed().as_secs_f64();
    pools.shutdown().await;

    let cold_runner = runner(None);
    let t2 = Instant::now();
    let mut cold_obs = Vec::new();
    for (name, script) in &scripts {
        cold_obs.push(cold_runner.run(name, script, &seeds).await);
    }
    let cold_s = t2.elapsed().as_secs_f64();

    let differ: Vec<String> = scripts
        .iter()
        .zip(warm_obs.iter().zip(&cold_obs))
        .flat_map(|((name, _), (w, c))| {
            w.iter()
                .zip(c)
                .filter(|(w, c)| w.comparable() != c.comparable())
                .map(move |(w, c)| {
                    format!(
                        "{name} seed {}: warm {} / fresh {}",
                        w.seed,
                        w.headline(),
                        c.headline()
                    )
                })
        })
        .collect();
    let per_min = |n: usize, s: f64| n as f64 * 60.0 / s;
    let mean = |o: &[Vec<Observation>]| {
        o.iter().flatten().map(|o| o.duration_s).sum::<f64>() / total as f64
    };
    let (warm_rpm, cold_rpm) = (per_min(total, warm_s), per_min(total, cold_s));
    let with_startup_rpm = per_min(total + workers, startup_s + warm_s);
    if g.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({
                "scripts": paths, "runs_per_script": a.runs, "workers": workers,
                "warm": {"wall_s": warm_s, "runs_per_min": warm_rpm, "mean_run_s": mean(&warm_obs), "startup_s": startup_s, "runs_per_min_with_startup": with_startup_rpm},
                "cold": {"wall_s": cold_s, "runs_per_min": cold_rpm, "mean_run_s": mean(&cold_obs)},
                "ratio": warm_rpm / cold_rpm, "ratio_with_startup": with_startup_rpm / cold_rpm,
                "different_observations": differ,
            }))?
        );
    } else {
        println!(
            "{} x {} = {} per method on {}\n",
            count(scripts.len(), "script"),
            count(a.runs, "seed"),
            count(total, "run"),
            count(workers, "worker")
        );
        let rows = vec![
            ["method", "wall", "runs/min", "per run"]
                .map(String::from)
                .to_vec(),
            vec![
                "warm worker".into(),
                format!("{warm_s:.1} s"),
                format!("{warm_rpm:.1}"),
                format!("{:.2} s", mean(&warm_obs)),
            ],
            vec![
                "fresh process".into(),
                format!("{cold_s:.1} s"),
                format!("{cold_rpm:.1}"),
                format!("{:.2} s", mean(&cold_obs)),
            ],
        ];
        print!("{}", render(&rows));
        println!("\nratio warm / fresh: {:.2}x", warm_rpm / cold_rpm);
        println!(
            "counting the workers' start-up ({startup_s:.1} s for {workers} warm-up runs): {:.2}x",
            with_startup_rpm / cold_rpm
        );
        if differ.is_empty() {
            println!("every run observed the same thing warm and fresh");
        } else {
            println!(
                "\n{} runs observed something else warm than fresh:",
                differ.len()
            );
            for d in &differ {
                println!("  {d}");
            }
        }
    }
    Ok(if differ.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
