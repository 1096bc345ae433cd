//! `reprolab bench-exec`: trainings per minute through the warm worker pool against an
//! alternative measured in the same run, with the same parallelism and no cache: one fresh
//! `python train.py` per training (the obvious alternative; `--backend local`) or the Ray backend
//! on the same machine (`--backend ray`: what going through Ray costs per training).

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Result, bail};
use reprolab_core::manifest::{Entry, Subject};
use reprolab_exec::{Evaluation, Evaluator, Mode};
use reprolab_store::Store;
use serde_json::{Value, json};

use super::run_seeds;
use crate::cli::{Backend, BenchExecArgs, Global};
use crate::context;
use crate::plural::count;
use crate::table::render;

const COLD_TEMPLATE: &str = "{python} train.py --config {config} --seed {seed} --out {result}";

/// One method's measurement.
struct Measured {
    label: String,
    /// Start-up: the first round of one training per worker (torch imports, a Ray head).
    startup_s: f64,
    wall_s: f64,
    runs: Vec<Evaluation>,
}

impl Measured {
    fn per_min(&self) -> f64 {
        self.runs.len() as f64 * 60.0 / self.wall_s
    }

    fn mean_training_s(&self) -> f64 {
        self.runs.iter().map(|e| e.record.duration_s).sum::<f64>() / self.runs.len() as f64
    }

    fn json(&self) -> Value {
        json!({"wall_s": self.wall_s, "trainings_per_min": self.per_min(),
               "mean_training_s": self.mean_training_s(), "startup_s": self.startup_s})
    }
}

/// Train `seeds` through `ev`; with `warm_up`, one training per worker first, timed apart.
async fn measure(
    ev: Evaluator,
    subject: &Subject,
    seeds: &[u64],
    label: &str,
    warm_up: bool,
    json: bool,
) -> Result<Measured> {
    let t0 = Instant::now();
    if warm_up {
        let startup: Vec<u64> = (1000..1000 + ev.workers() as u64).collect();
        run_seeds(
            &ev,
            subject,
            &subject.config,
            &startup,
            Mode::Eval,
            "warm-up",
            json,
        )
        .await?;
    }
    let startup_s = t0.elapsed().as_secs_f64();
    let t1 = Instant::now();
    let runs = run_seeds(
        &ev,
        subject,
        &subject.config,
        seeds,
        Mode::Eval,
        label,
        json,
    )
    .await?;
    let wall_s = t1.elapsed().as_secs_f64();
    ev.shutdown().await;
    Ok(Measured {
        label: label.to_string(),
        startup_s,
        wall_s,
        runs,
    })
}

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

    let warm_ev = Evaluator::new(env.clone(), store()?, workers, false)?;
    let warm = measure(warm_ev, &subject, &seeds, "warm pool", true, g.json).await?;
    let other = match g.backend {
        Backend::Local => {
            let mut cold_subject = subject.clone();
            cold_subject.entry = Entry::Command {
                template: COLD_TEMPLATE.into(),
            };
            let cold = Evaluator::new(env, store()?, workers, false)?;
            measure(cold, &cold_subject, &seeds, "fresh process", false, g.json).await?
        }
        Backend::Ray => {
            let t0 = Instant::now();
            let ray = context::ray_executor(g, &env).await?;
            let head_s = t0.elapsed().as_secs_f64();
            let label = format!(
                "ray ({} on {})",
                count(ray.cluster.slots, "slot"),
                count(ray.cluster.nodes, "node")
            );
            let ev = Evaluator::with_executor(Arc::new(ray), env, store()?, false);
            let mut m = measure(ev, &subject, &seeds, &label, true, g.json).await?;
            m.startup_s += head_s;
            m
        }
    };
    report(g, a, &subject, workers, &warm, &other)
}

fn report(
    g: &Global,
    a: &BenchExecArgs,
    subject: &Subject,
    workers: usize,
    warm: &Measured,
    other: &Measured,
) -> Result<ExitCode> {
    let failures = warm
        .runs
        .iter()
        .chain(&other.runs)
        .filter(|e| !e.record.outcome.is_ok())
        .count();
    // Against a fresh process: how many times faster the pool is. Against Ray: how many times
    // longer a training takes through Ray (its overhead), start-up apart.
    let ray = g.backend == Backend::Ray;
    let ratio = if ray {
        other.wall_s / warm.wall_s
    } else {
        warm.per_min() / other.per_min()
    };
    let with_startup =
        |m: &Measured| (m.runs.len() + workers) as f64 * 60.0 / (m.startup_s + m.wall_s);
    if g.json {
        let mut out = json!({
            "subject": subject.name, "runs": a.runs, "workers": workers, "failures": failures,
            "warm": warm.json(),
        });
        if ray {
            out["ray"] = other.json();
            out["ray"]["label"] = json!(other.label);
            out["ray_overhead"] = json!(ratio);
        } else {
            out["warm"]["trainings_per_min_with_startup"] = json!(with_startup(warm));
            out["cold"] = other.json();
            out["ratio"] = json!(ratio);
            out["ratio_with_startup"] = json!(with_startup(warm) / other.per_min());
        }
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        println!(
            "{}: {} per method on {}\n",
            subject.name,
            count(a.runs, "training"),
            count(workers, "worker")
        );
        let mut rows = vec![
            [
                "method",
                "start-up",
                "wall",
                "trainings/min",
                "per training",
            ]
            .map(String::from)
            .to_vec(),
        ];
        for m in [warm, other] {
            rows.push(vec![
                m.label.clone(),
                format!("{:.1} s", m.startup_s),
                format!("{:.1} s", m.wall_s),
                format!("{:.1}", m.per_min()),
                format!("{:.2} s", m.mean_training_s()),
            ]);
        }
        print!("{}", render(&rows));
        if ray {
            println!(
                "\nRay's overhead: a batch takes {ratio:.2}x the warm pool's wall time \
                 (start-up apart)"
            );
        } else {
            println!("\nratio warm / fresh: {ratio:.2}x");
            println!(
                "counting the pool's start-up ({:.1} s for {workers} warm-up trainings): {:.2}x",
                warm.startup_s,
                with_startup(warm) / other.per_min()
            );
        }
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
