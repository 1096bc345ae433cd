//! `reprolab reproduce` and `bench reproduce`: wiring of the reproduce crate — the settings from
//! the command line, the warm workers, the store and the model, progress, what is printed and
//! the exit code. The preparation, the flows and the per-bug work are `reprolab_reproduce`'s.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use reprolab_bench::ResultsFile;
use reprolab_bench::reproduce::{ReproduceRow, VerifyRow};
use reprolab_reproduce::generate::{self, Model};
use reprolab_reproduce::run::{ScriptRunner, WarmPools};
use reprolab_reproduce::{
    BugReport, Options, Prepared, Verdict, bench as per_bug, prepare, report, verify,
};
use reprolab_store::Store;

use crate::cli::{
    Backend, BenchReproduceArgs, Global, ReproduceArgs, ReproduceCommand, ReproduceVerifyArgs,
};
use crate::context;
use crate::error::Infrastructure;
use crate::progress::{self, Steps};

pub async fn run(g: &Global, a: &ReproduceArgs) -> Result<ExitCode> {
    let cold = match &a.command {
        Some(ReproduceCommand::Verify(v)) => v.run.cold,
        None => a.run.cold,
    };
    let warm = warm_pools(g, cold, workers(g)).await?;
    let result = match &a.command {
        Some(ReproduceCommand::Verify(v)) => verify_cmd(g, v, warm.as_ref()).await,
        None => generate_cmd(g, a, warm.as_ref()).await,
    };
    if let Some(w) = warm {
        w.shutdown().await;
    }
    result
}

/// Warm workers for script runs (`size` of them, started when a run misses the cache), unless
/// `--cold`; with `--backend ray`, the cluster's slots for runs in the managed environment.
pub async fn warm_pools(g: &Global, cold: bool, size: usize) -> Result<Option<WarmPools>> {
    if cold {
        return Ok(None);
    }
    Ok(Some(match g.backend {
        Backend::Local => WarmPools::new(size),
        Backend::Ray => {
            let env = context::python_env(g).await?;
            WarmPools::with_ray(size, Arc::new(context::ray_executor(g, &env).await?))
        }
    }))
}

fn workers(g: &Global) -> usize {
    g.workers.unwrap_or_else(reprolab_exec::default_workers)
}

/// Load and prepare the report at `path`, the settings checked first.
async fn prepare_path(g: &Global, path: &Path, o: &Options) -> Result<Prepared> {
    o.check()?;
    prepare_report(g, report::load(path)?, o).await
}

/// Prepare `report` off the async runtime (installing packages may take minutes), the
/// installer's lines on a spinner; the notes on the environment printed.
async fn prepare_report(g: &Global, report: BugReport, o: &Options) -> Result<Prepared> {
    let (env, o, json) = (context::env_options(g), o.clone(), g.json);
    let p = tokio::task::spawn_blocking(move || {
        let sp = progress::spinner("python env", json);
        let p = prepare::prepare(report, &o, &env, &|line: &str| {
            sp.set_message(line.to_string())
        });
        sp.finish_and_clear();
        p
    })
    .await
    .context(Infrastructure("preparing the Python environment"))??;
    for note in p.notes() {
        eprintln!("note: {note}");
    }
    Ok(p)
}

/// The runner for `p` with the user's limits.
fn runner<'a>(
    g: &Global,
    p: &'a Prepared,
    o: &Options,
    store: Option<&'a Store>,
    warm: Option<&'a WarmPools>,
) -> ScriptRunner<'a> {
    p.runner(o.limits(), workers(g), store, warm)
}

/// The store for script runs, unless `--no-cache`.
fn store(g: &Global) -> Result<Option<Store>> {
    (!g.no_cache).then(|| context::open_store(g)).transpose()
}

fn exit_for(v: &Verdict) -> ExitCode {
    if v.reproduced {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn print_verdict(p: &Prepared, verdict: &Verdict, out: Option<&Path>) {
    println!("report   {} ({})", p.report.id, p.report.path.display());
    println!(
        "symptom  {}: {}",
        verdict.symptom.as_str(),
        verdict.expected
    );
    println!(
        "env      Python {}, {}{}",
        p.resolution.python,
        p.resolution.requirements().trim_end().replace('\n', ", "),
        if p.resolution.managed {
            ""
        } else {
            " (built for the report)"
        }
    );
    // Runs that ended the same way are one line.
    let groups = verdict.run_groups();
    for (shows, why, seeds) in groups {
        let seeds: Vec<String> = seeds.iter().map(u64::to_string).collect();
        let verb = if shows { "show it" } else { "do not" };
        println!("  seeds {:<9} {verb}: {why}", seeds.join(","));
    }
    println!("verdict  {}", verdict.summary());
    if let Some(dir) = out {
        println!("wrote    {}", dir.display());
    }
}

async fn verify_cmd(
    g: &Global,
    a: &ReproduceVerifyArgs,
    warm: Option<&WarmPools>,
) -> Result<ExitCode> {
    let script = std::fs::read_to_string(&a.script)
        .with_context(|| format!("{}: cannot read the script", a.script.display()))?;
    let o = a.run.options();
    let mut p = prepare_path(g, &a.report, &o).await?;
    // The script may import modules beside it.
    if let Some(dir) = a.script.parent().filter(|d| !d.as_os_str().is_empty()) {
        p.add_import_dir(dir);
    }
    let store = store(g)?;
    let runner = runner(g, &p, &o, store.as_ref(), warm);
    let minimize = a.run.minimize(a.minimize);
    let steps = Steps::new(g.json);
    let judged = verify::given(&p, &runner, &a.script, script, minimize, &steps).await;
    if let Some(dir) = &a.out {
        judged.write(&p, dir)?;
    }
    if g.json {
        println!("{}", serde_json::to_string(&judged.file(&p))?);
    } else {
        print_verdict(&p, &judged.verdict, a.out.as_deref());
    }
    Ok(exit_for(&judged.verdict))
}

async fn generate_cmd(g: &Global, a: &ReproduceArgs, warm: Option<&WarmPools>) -> Result<ExitCode> {
    let report_path = a.report.as_ref().expect("clap requires REPORT");
    let agent = a.agent.options()?;
    let o = a.run.options();
    let p = prepare_path(g, report_path, &o).await?;
    let store = store(g)?;
    let session = crate::llm::open(g, &a.llm, crate::llm::local_factory(g), None)?;
    let runner = runner(g, &p, &o, store.as_ref(), warm);
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("reproductions").join(&p.report.id));
    let model = Model {
        chat: session.model.as_ref(),
        meter: &session.meter,
        agent: &agent,
        context: a.agent.context,
    };
    let pb = progress::bar(agent.attempts as u64, "attempts", g.json);
    let mut on_attempt = |at: &reprolab_reproduce::agent::Attempt| {
        let line = match (&at.verdict, &at.problem) {
            (Some(v), _) => v.summary(),
            (None, Some(problem)) => problem.clone(),
            (None, None) => String::new(),
        };
        progress::line(
            &pb,
            &format!("attempt {}/{}: {line}", at.number, agent.attempts),
        );
        pb.inc(1);
    };
    let minimize = a.run.minimize(!a.no_minimize);
    let steps = Steps::new(g.json);
    let generated =
        generate::generate(&model, &p, &runner, minimize, &out, &steps, &mut on_attempt).await;
    pb.finish_and_clear();
    let generated = generated?;
    let result = &generated.reproduction;
    let Some(judged) = &generated.judged else {
        let why = result.why_unjudged();
        if g.json {
            println!(
                "{}",
                serde_json::json!({"report": p.report.path.display().to_string(), "reproduced": false, "reason": why, "origin": generated.origin})
            );
        } else {
            println!("report   {} ({})", p.report.id, p.report.path.display());
            println!("verdict  not reproduced: {why}");
            println!("wrote    {}", generated.attempts_path.display());
        }
        return Ok(if result.stopped.is_some() {
            ExitCode::from(3)
        } else {
            ExitCode::from(1)
        });
    };
    if g.json {
        println!("{}", serde_json::to_string(&judged.file(&p))?);
    } else {
        print_verdict(&p, &judged.verdict, Some(&out));
        if let Some(o) = &judged.opinion {
            let said = match o.reproduced {
                Some(true) => "shows the bug",
                Some(false) => "does not show the bug",
                None => "no clear answer",
            };
            println!(
                "opinion  {} says it {said}: {} ({})",
                o.model, o.reason, o.label
            );
        }
        if !result.context.is_empty() {
            let names: Vec<String> = result
                .context
                .iter()
                .map(|s| format!("{} ({})", s.qualname, s.file))
                .collect();
            println!("context  {}", names.join(", "));
        }
        let meter = &generated.meter;
        println!(
            "llm      {} calls, {} tokens{}",
            meter.calls,
            meter.prompt_tokens + meter.completion_tokens,
            if meter.cost_usd > 0.0 {
                format!(", ${:.4}", meter.cost_usd)
            } else {
                String::new()
            }
        );
    }
    Ok(exit_for(&judged.verdict))
}

/// `bench reproduce`: verify the bundled references and near-misses, or run a model over every
/// report; rows are appended as bugs finish, so a killed run resumes.
pub async fn bench(g: &Global, a: &BenchReproduceArgs) -> Result<ExitCode> {
    let o = a.run.options();
    o.check()?;
    let reports = per_bug::select(report::load_all(&a.benchmark)?, &a.only);
    if reports.is_empty() {
        bail!(
            "--only {}: no bug of {} has such an id",
            a.only.join(","),
            a.benchmark.display()
        );
    }
    let warm = warm_pools(g, a.run.cold, workers(g)).await?;
    let result = if a.verify_only {
        bench_verify(g, a, &o, reports, warm.as_ref()).await
    } else {
        bench_llm(g, a, &o, reports, warm.as_ref()).await
    };
    if let Some(w) = warm {
        w.shutdown().await;
    }
    result
}

async fn bench_verify(
    g: &Global,
    a: &BenchReproduceArgs,
    o: &Options,
    reports: Vec<BugReport>,
    warm: Option<&WarmPools>,
) -> Result<ExitCode> {
    let (mut results, mut rows) = ResultsFile::open::<VerifyRow>(&a.out)?;
    let store = store(g)?;
    let pb = progress::bar(reports.len() as u64, "bugs", g.json);
    for report in reports {
        if !rows.iter().any(|r| r.id == report.id) {
            let started = Instant::now();
            let p = prepare_report(g, report, o).await?;
            let runner = runner(g, &p, o, store.as_ref(), warm);
            let row = per_bug::verify_bug(&p, &runner, started).await;
            progress::line(&pb, &row.line());
            results.append(&row)?;
            rows.push(row);
        }
        pb.inc(1);
    }
    pb.finish_and_clear();
    super::publish(
        g,
        &a.out,
        &reprolab_bench::reproduce::verify_report(&rows),
        &rows,
    )?;
    let all_ok = rows.iter().all(|r| r.reference_ok() && r.near_miss_ok());
    Ok(if all_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

async fn bench_llm(
    g: &Global,
    a: &BenchReproduceArgs,
    o: &Options,
    reports: Vec<BugReport>,
    warm: Option<&WarmPools>,
) -> Result<ExitCode> {
    let session = crate::llm::open(g, &a.llm, crate::llm::local_factory(g), None)?;
    let agent = a.agent.options()?;
    let model = Model {
        chat: session.model.as_ref(),
        meter: &session.meter,
        agent: &agent,
        context: a.agent.context,
    };
    let name = model.chat.name();
    let (mut results, done) = ResultsFile::open::<ReproduceRow>(&a.out)?;
    let mut rows: Vec<ReproduceRow> = done.into_iter().filter(|r| r.model == name).collect();
    let store = store(g)?;
    let steps = Steps::new(g.json);
    let pb = progress::bar(reports.len() as u64, "bugs", g.json);
    for report in reports {
        if rows.iter().any(|r| r.id == report.id) {
            pb.inc(1);
            continue;
        }
        let started = Instant::now();
        let p = prepare_report(g, report, o).await?;
        let runner = runner(g, &p, o, store.as_ref(), warm);
        let bug = per_bug::reproduce_bug(&model, &p, &runner, &a.out, started, &steps).await?;
        progress::line(&pb, &bug.row.line());
        results.append(&bug.row)?;
        rows.push(bug.row);
        pb.inc(1);
        if let Some(unreachable) = bug.unreachable {
            return Err(anyhow::Error::from(unreachable));
        }
    }
    pb.finish_and_clear();
    super::publish(
        g,
        &a.out,
        &reprolab_bench::reproduce::reproduce_report(&rows),
        &rows,
    )?;
    Ok(ExitCode::SUCCESS)
}
