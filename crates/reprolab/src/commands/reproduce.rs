//! `reprolab reproduce`: wiring of the reproduce crate — the report, the environment for its
//! versions, the script runner with the store, the model, and what is printed.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use reprolab_exec::PythonEnv;
use reprolab_exec::spec_env::{AsOf, Pin, Resolution, ensure_spec};
use reprolab_reproduce::agent::{self, Attempt};
use reprolab_reproduce::context::{self as code, ContextOptions, Snippet};
use reprolab_reproduce::opinion;
use reprolab_reproduce::outputs::{self, VerdictFile};
use reprolab_reproduce::run::{ScriptRunner, WarmPools, default_limits};
use reprolab_reproduce::{BugReport, Facts, Verdict, dating, facts, report, verify};
use reprolab_store::Store;
use serde_json::json;

use reprolab_bench::ResultsFile;
use reprolab_bench::reproduce::{Check, ReproduceRow, VerifyRow};

use crate::cli::{
    Backend, BenchReproduceArgs, Global, ReproduceArgs, ReproduceCommand, ReproduceRunOptions,
    ReproduceVerifyArgs,
};
use crate::context;
use crate::error::Infrastructure;
use crate::progress;

pub async fn run(g: &Global, a: &ReproduceArgs) -> Result<ExitCode> {
    let cold = match &a.command {
        Some(ReproduceCommand::Verify(v)) => v.run.cold,
        None => a.run.cold,
    };
    let warm = warm_pools(g, cold).await?;
    let result = match &a.command {
        Some(ReproduceCommand::Verify(v)) => verify_cmd(g, v, warm.as_ref()).await,
        None => generate_cmd(g, a, warm.as_ref()).await,
    };
    if let Some(w) = warm {
        w.shutdown().await;
    }
    result
}

/// Warm workers for the script runs (started when a run misses the cache), unless `--cold`;
/// with `--backend ray`, the cluster's slots for reports that run in the managed environment.
async fn warm_pools(g: &Global, cold: bool) -> Result<Option<WarmPools>> {
    if cold {
        return Ok(None);
    }
    let size = g.workers.unwrap_or_else(reprolab_exec::default_workers);
    Ok(Some(match g.backend {
        Backend::Local => WarmPools::new(size),
        Backend::Ray => {
            let env = context::python_env(g).await?;
            WarmPools::with_ray(size, Arc::new(context::ray_executor(g, &env).await?))
        }
    }))
}

/// What every reproduce verb prepares: the report and its facts, the environment for its
/// versions, the seeds.
struct Prepared {
    report: BugReport,
    facts: Facts,
    env: PythonEnv,
    resolution: Resolution,
    seeds: Vec<u64>,
    paths: Vec<PathBuf>,
}

impl Prepared {
    /// What the model loop works on.
    fn case<'a>(&'a self, context: &'a [Snippet]) -> agent::Case<'a> {
        agent::Case {
            report: &self.report,
            facts: &self.facts,
            env: &self.resolution,
            seeds: &self.seeds,
            context,
        }
    }
}

async fn prepare(g: &Global, report_path: &Path, o: &ReproduceRunOptions) -> Result<Prepared> {
    check_options(o)?;
    prepare_report(g, report::load(report_path)?, o).await
}

fn check_options(o: &ReproduceRunOptions) -> Result<()> {
    if o.runs == 0 || o.runs > 100 {
        bail!("--runs is {}; expected 1 to 100", o.runs);
    }
    if !(o.timeout.is_finite() && o.timeout > 0.0) {
        bail!("--timeout is {}; expected seconds > 0", o.timeout);
    }
    if let Some(repo) = &o.repo
        && !repo.is_dir()
    {
        bail!("--repo {}: not a directory", repo.display());
    }
    if let Some(day) = &o.as_of {
        AsOf::check_date(day).map_err(|e| anyhow::anyhow!("--as-of {e}"))?;
    }
    Ok(())
}

async fn prepare_report(
    g: &Global,
    report: BugReport,
    o: &ReproduceRunOptions,
) -> Result<Prepared> {
    let mut user_pins = o
        .packages
        .iter()
        .map(|p| Pin::parse(p).map_err(|e| anyhow::anyhow!("--package {e}")))
        .collect::<Result<Vec<_>>>()?;
    // A bundled bug's bug.json states the environment it was written for.
    for pin in meta_packages(&report)? {
        if !user_pins.iter().any(|p| p.name == pin.name) {
            user_pins.push(pin);
        }
    }
    let facts = facts::extract(&report.text);
    let pins = verify::pins_for(&facts, &user_pins);
    let mut paths: Vec<PathBuf> = o.repo.iter().cloned().collect();
    paths.extend(report.code_dir.iter().cloned());
    let as_of = as_of(&report, o, &paths);
    let opts = context::env_options(g);
    let json = g.json;
    let (env, resolution) = tokio::task::spawn_blocking(move || {
        let sp = progress::spinner("python env", json);
        let r = ensure_spec(&opts, &pins, as_of.as_ref(), &|line: &str| {
            sp.set_message(line.to_string())
        });
        sp.finish_and_clear();
        r
    })
    .await
    .context(Infrastructure("preparing the Python environment"))?
    .context("preparing the Python environment for the report's versions")?;
    for s in &resolution.substitutions {
        eprintln!(
            "note: {} cannot be used ({}); running with {}",
            s.requested,
            s.why,
            s.used.as_deref().unwrap_or("none installed")
        );
    }
    if let Some(a) = &resolution.as_of {
        eprintln!(
            "note: no version stated for {}; using the releases current on {} (from {})",
            a.packages.join(", "),
            a.date,
            a.source
        );
    }
    let paths = paths
        .into_iter()
        .map(|p| std::path::absolute(&p).unwrap_or(p))
        .collect();
    Ok(Prepared {
        report,
        facts,
        env,
        resolution,
        seeds: (1..=o.runs as u64).collect(),
        paths,
    })
}

/// The day the report's unversioned frameworks are taken from: `--as-of`, else the report's
/// date, else its commit's in a local checkout.
fn as_of(report: &BugReport, o: &ReproduceRunOptions, repos: &[PathBuf]) -> Option<AsOf> {
    let dated = match &o.as_of {
        Some(day) => Some(dating::Dated {
            date: day.clone(),
            source: "--as-of".into(),
        }),
        None => dating::stated_date(report)
            .filter(|d| AsOf::check_date(&d.date).is_ok())
            .or_else(|| dating::commit(report).and_then(|h| dating::commit_date(&h, repos))),
    }?;
    Some(AsOf {
        date: dated.date,
        packages: dating::frameworks(report),
        source: dated.source,
    })
}

/// `packages` of a bundled bug's `bug.json` (a JSON report's own `packages` field too).
fn meta_packages(report: &BugReport) -> Result<Vec<Pin>> {
    let Some(list) = report.meta.as_ref().and_then(|m| m.get("packages")) else {
        return Ok(Vec::new());
    };
    let where_ = || {
        format!(
            "{}: field `packages`",
            report.path.with_file_name("bug.json").display()
        )
    };
    let items = list
        .as_array()
        .with_context(|| format!("{}: expected a list of \"NAME==VERSION\" strings", where_()))?;
    items
        .iter()
        .map(|v| {
            let text = v.as_str().unwrap_or_default();
            Pin::parse(text).map_err(|e| anyhow::anyhow!("{}: {e}", where_()))
        })
        .collect()
}

fn runner<'a>(
    g: &Global,
    p: &'a Prepared,
    o: &ReproduceRunOptions,
    store: Option<&'a Store>,
    warm: Option<&'a WarmPools>,
) -> ScriptRunner<'a> {
    ScriptRunner {
        env: &p.env,
        limits: reprolab_core::manifest::Limits {
            timeout_s: o.timeout,
            memory_mb: o.memory_mb,
            ..default_limits()
        },
        paths: p.paths.clone(),
        parallel: match warm {
            Some(w) => w.parallelism(&p.env),
            None => g.workers.unwrap_or_else(reprolab_exec::default_workers),
        },
        store,
        warm,
    }
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
    let mut groups: Vec<(bool, &str, Vec<u64>)> = Vec::new();
    for r in &verdict.per_run {
        match groups
            .iter_mut()
            .find(|(s, why, _)| *s == r.shows && *why == r.reason)
        {
            Some(g) => g.2.push(r.seed),
            None => groups.push((r.shows, &r.reason, vec![r.seed])),
        }
    }
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
    let mut p = prepare(g, &a.report, &a.run).await?;
    // The script may import modules beside it.
    if let Some(dir) = a.script.parent().filter(|d| !d.as_os_str().is_empty()) {
        p.paths
            .push(std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf()));
    }
    let store = (!g.no_cache).then(|| context::open_store(g)).transpose()?;
    let runner = runner(g, &p, &a.run, store.as_ref(), warm);
    let sp = progress::spinner(
        &format!("running {} x{}", a.script.display(), p.seeds.len()),
        g.json,
    );
    let label = format!("verify {} {}", p.report.id, a.script.display());
    let (runs, verdict) =
        verify::verify(&p.facts, &p.report.text, &script, &runner, &label, &p.seeds).await;
    sp.finish_and_clear();
    let mut origin = json!({"given": a.script.display().to_string()});
    let (script, runs, verdict) = if a.minimize && verdict.reproduced {
        let shortest = shorten(g, &p, &runner, &script, &label, a.run.minimize_budget).await;
        origin["minimized"] = shortest.summary.clone();
        match shortest.verdict {
            Some(v) => (shortest.script, shortest.runs, v),
            None => (script.clone(), runs, verdict),
        }
    } else {
        (script.clone(), runs, verdict)
    };
    let file = VerdictFile {
        report: p.report.path.display().to_string(),
        reproduced: verdict.reproduced,
        verdict: &verdict,
        environment: &p.resolution,
        facts: &p.facts,
        origin,
        llm_opinion: None,
    };
    if let Some(dir) = &a.out {
        outputs::write(dir, &script, &runs, &file)
            .with_context(|| format!("writing the results into {}", dir.display()))?;
        if a.minimize {
            let full = std::fs::read_to_string(&a.script).unwrap_or_default();
            std::fs::write(dir.join("reproduce.full.py"), full)
                .with_context(|| format!("writing into {}", dir.display()))?;
        }
    }
    if g.json {
        println!("{}", serde_json::to_string(&file)?);
    } else {
        print_verdict(&p, &verdict, a.out.as_deref());
    }
    Ok(exit_for(&verdict))
}

/// The shortest version of a reproducing script, re-judged (from the cache) for its runs.
struct Shortest {
    script: String,
    runs: Vec<reprolab_reproduce::Observation>,
    verdict: Option<Verdict>,
    summary: serde_json::Value,
}

async fn shorten(
    g: &Global,
    p: &Prepared,
    runner: &ScriptRunner<'_>,
    script: &str,
    label: &str,
    budget: usize,
) -> Shortest {
    let sp = progress::spinner("minimising the reproduction", g.json);
    let result = reprolab_reproduce::minimize::minimize_script(
        &p.facts,
        &p.report.text,
        script,
        runner,
        &p.seeds,
        label,
        budget,
    )
    .await;
    sp.finish_and_clear();
    match result {
        Ok(m) if m.removed > 0 => {
            let (runs, verdict) =
                verify::verify(&p.facts, &p.report.text, &m.script, runner, label, &p.seeds).await;
            let summary = json!({"statements": m.statements, "removed": m.removed,
                "candidates_judged": m.tests, "budget_exhausted": m.exhausted});
            if !g.json {
                eprintln!(
                    "minimised: {} of {} statements removed ({} candidates judged{})",
                    m.removed,
                    m.statements,
                    m.tests,
                    if m.exhausted {
                        ", budget exhausted"
                    } else {
                        ""
                    }
                );
            }
            Shortest {
                script: m.script,
                runs,
                verdict: Some(verdict),
                summary,
            }
        }
        Ok(m) => Shortest {
            script: script.to_string(),
            runs: Vec::new(),
            verdict: None,
            summary: json!({"statements": m.statements, "removed": 0, "candidates_judged": m.tests}),
        },
        Err(e) => Shortest {
            script: script.to_string(),
            runs: Vec::new(),
            verdict: None,
            summary: json!({"error": e}),
        },
    }
}

/// The code context for the prompt: the definitions of `--repo` and the report's own code, else
/// of the pinned packages that are not frameworks, ranked against the report. Indexing problems
/// are a note, never the end of the run: the model can work without context.
async fn code_context(p: &Prepared, k: usize) -> Vec<Snippet> {
    if k == 0 {
        return Vec::new();
    }
    let python = p.env.python.clone();
    let pythonpath = p.env.pythonpath.clone();
    let roots = p.paths.clone();
    let packages = code::context_packages(p.resolution.installed.keys());
    let found = tokio::task::spawn_blocking(move || {
        let pp = pythonpath.as_deref();
        let roots = if roots.is_empty() {
            code::package_dirs(&python, pp, &packages)?
        } else {
            roots
        };
        code::index(&python, pp, &roots)
    })
    .await;
    let index = match found {
        Ok(Ok(index)) => index,
        Ok(Err(e)) => {
            eprintln!("note: no code context: {}", reprolab_core::chain(&e));
            return Vec::new();
        }
        Err(e) => {
            eprintln!("note: no code context: {e}");
            return Vec::new();
        }
    };
    let opts = ContextOptions {
        k,
        ..ContextOptions::default()
    };
    code::select(&index, &p.report.text, &p.facts, &opts)
}

/// What the verdict's origin says about the context: each snippet's file, name, score and why.
fn context_origin(snippets: &[Snippet]) -> serde_json::Value {
    snippets
        .iter()
        .map(|s| json!({"file": s.file, "name": s.qualname, "score": s.score, "why": s.why}))
        .collect()
}

async fn generate_cmd(g: &Global, a: &ReproduceArgs, warm: Option<&WarmPools>) -> Result<ExitCode> {
    let report_path = a.report.as_ref().expect("clap requires REPORT");
    let opts = a.agent.options()?;
    let p = prepare(g, report_path, &a.run).await?;
    let store = (!g.no_cache).then(|| context::open_store(g)).transpose()?;
    let session = crate::llm::open(g, &a.llm, crate::llm::local_factory(g), None)?;
    let snippets = code_context(&p, a.agent.context).await;
    let runner = runner(g, &p, &a.run, store.as_ref(), warm);
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("reproductions").join(&p.report.id));
    let pb = progress::bar(opts.attempts as u64, "attempts", g.json);
    let mut on_attempt = |at: &Attempt| {
        let line = match (&at.verdict, &at.problem) {
            (Some(v), _) => v.summary(),
            (None, Some(problem)) => problem.clone(),
            (None, None) => String::new(),
        };
        progress::line(
            &pb,
            &format!("attempt {}/{}: {line}", at.number, opts.attempts),
        );
        pb.inc(1);
    };
    let result = agent::reproduce(
        session.model.as_ref(),
        &p.case(&snippets),
        &runner,
        &opts,
        &mut on_attempt,
    )
    .await;
    pb.finish_and_clear();
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let attempts_path = out.join("attempts.json");
    std::fs::write(
        &attempts_path,
        serde_json::to_string_pretty(&result)? + "\n",
    )
    .with_context(|| format!("writing {}", attempts_path.display()))?;
    let meter = session.meter.snapshot();
    let origin = json!({
        "model": session.model.name(),
        "attempt": result.best().map(|b| b.number),
        "attempts": result.attempts.len(),
        "stopped": result.stopped,
        "llm": meter,
        "context": context_origin(&result.context),
    });
    let Some(best) = result.best() else {
        let why = result.why_unjudged();
        if g.json {
            println!(
                "{}",
                json!({"report": p.report.path.display().to_string(), "reproduced": false, "reason": why, "origin": origin})
            );
        } else {
            println!("report   {} ({})", p.report.id, p.report.path.display());
            println!("verdict  not reproduced: {why}");
            println!("wrote    {}", attempts_path.display());
        }
        return Ok(if result.stopped.is_some() {
            ExitCode::from(3)
        } else {
            ExitCode::from(1)
        });
    };
    let mut verdict = best.verdict.clone().expect("best attempts are judged");
    let mut script = best.script.clone().unwrap_or_default();
    let mut runs = best.runs.clone();
    let mut origin = origin;
    if verdict.reproduced && !a.no_minimize {
        let label = format!("reproduce {} attempt {}", p.report.id, best.number);
        let shortest = shorten(g, &p, &runner, &script, &label, a.run.minimize_budget).await;
        origin["minimized"] = shortest.summary.clone();
        std::fs::create_dir_all(&out).ok();
        std::fs::write(out.join("reproduce.full.py"), &script)
            .with_context(|| format!("writing into {}", out.display()))?;
        if let Some(v) = shortest.verdict {
            (script, runs, verdict) = (shortest.script, shortest.runs, v);
        }
    }
    let verdict = &verdict;
    // Where the rules see only numbers, the model's reading is kept beside the verdict.
    let llm_opinion = if opinion::wanted(p.facts.symptom) {
        let observed = outputs::observed_text(&runs, verdict);
        Some(opinion::ask(session.model.as_ref(), &p.report.text, &script, &observed).await)
    } else {
        None
    };
    let file = VerdictFile {
        report: p.report.path.display().to_string(),
        reproduced: verdict.reproduced,
        verdict,
        environment: &p.resolution,
        facts: &p.facts,
        origin,
        llm_opinion,
    };
    outputs::write(&out, &script, &runs, &file)
        .with_context(|| format!("writing the results into {}", out.display()))?;
    if g.json {
        println!("{}", serde_json::to_string(&file)?);
    } else {
        print_verdict(&p, verdict, Some(&out));
        if let Some(o) = &file.llm_opinion {
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
    Ok(exit_for(verdict))
}

/// `bench reproduce`: verify the bundled references and near-misses, or run a model over every
/// report; rows are appended as bugs finish, so a killed run resumes.
pub async fn bench(g: &Global, a: &BenchReproduceArgs) -> Result<ExitCode> {
    check_options(&a.run)?;
    let mut reports = report::load_all(&a.benchmark)?;
    reports.retain(|r| {
        a.only.is_empty()
            || a.only.iter().any(|o| match o.strip_suffix('*') {
                Some(prefix) => r.id.starts_with(prefix),
                None => r.id == *o,
            })
    });
    if reports.is_empty() {
        bail!(
            "--only {}: no bug of {} has such an id",
            a.only.join(","),
            a.benchmark.display()
        );
    }
    let warm = warm_pools(g, a.run.cold).await?;
    let result = if a.verify_only {
        bench_verify(g, a, reports, warm.as_ref()).await
    } else {
        bench_llm(g, a, reports, warm.as_ref()).await
    };
    if let Some(w) = warm {
        w.shutdown().await;
    }
    result
}

fn check_of(v: &Verdict) -> Check {
    Check {
        reproduced: v.reproduced,
        showing: v.showing,
        runs: v.runs,
        reason: v
            .reasons
            .first()
            .or_else(|| v.per_run.first().map(|r| &r.reason))
            .cloned()
            .unwrap_or_default(),
    }
}

fn meta_str(r: &BugReport, key: &str) -> Option<String> {
    r.meta.as_ref()?.get(key)?.as_str().map(str::to_string)
}

async fn bench_verify(
    g: &Global,
    a: &BenchReproduceArgs,
    reports: Vec<BugReport>,
    warm: Option<&WarmPools>,
) -> Result<ExitCode> {
    let (mut results, done) = ResultsFile::open::<VerifyRow>(&a.out)?;
    let mut rows: Vec<VerifyRow> = done;
    let store = (!g.no_cache).then(|| context::open_store(g)).transpose()?;
    let pb = progress::bar(reports.len() as u64, "bugs", g.json);
    for report in reports {
        if rows.iter().any(|r| r.id == report.id) {
            pb.inc(1);
            continue;
        }
        let started = std::time::Instant::now();
        let dir = report
            .path
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        let id = report.id.clone();
        let annotated = meta_str(&report, "symptom");
        let p = prepare_report(g, report, &a.run).await?;
        let runner = runner(g, &p, &a.run, store.as_ref(), warm);
        let mut checks = Vec::new();
        for name in ["reference.py", "near_miss.py"] {
            let path = dir.join(name);
            let check = match std::fs::read_to_string(&path) {
                Ok(script) => {
                    let label = format!("bench verify {id} {name}");
                    let (_, v) = verify::verify(
                        &p.facts,
                        &p.report.text,
                        &script,
                        &runner,
                        &label,
                        &p.seeds,
                    )
                    .await;
                    Some(check_of(&v))
                }
                Err(_) => None,
            };
            checks.push(check);
        }
        let near_miss = checks.pop().flatten();
        let reference = checks.pop().flatten();
        let row = VerifyRow {
            id,
            symptom_annotated: annotated,
            symptom_extracted: p.facts.symptom.as_str().to_string(),
            reference,
            near_miss,
            time_s: started.elapsed().as_secs_f64(),
        };
        progress::line(&pb, &row.line());
        results.append(&row)?;
        rows.push(row);
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
    reports: Vec<BugReport>,
    warm: Option<&WarmPools>,
) -> Result<ExitCode> {
    let session = crate::llm::open(g, &a.llm, crate::llm::local_factory(g), None)?;
    let model = session.model.name();
    let (mut results, done) = ResultsFile::open::<ReproduceRow>(&a.out)?;
    let mut rows: Vec<ReproduceRow> = done.into_iter().filter(|r| r.model == model).collect();
    let store = (!g.no_cache).then(|| context::open_store(g)).transpose()?;
    let opts = a.agent.options()?;
    let pb = progress::bar(reports.len() as u64, "bugs", g.json);
    for report in reports {
        if rows.iter().any(|r| r.id == report.id) {
            pb.inc(1);
            continue;
        }
        let started = std::time::Instant::now();
        let before = session.meter.snapshot();
        let p = prepare_report(g, report, &a.run).await?;
        let runner = runner(g, &p, &a.run, store.as_ref(), warm);
        let snippets = code_context(&p, a.agent.context).await;
        let result = agent::reproduce(
            session.model.as_ref(),
            &p.case(&snippets),
            &runner,
            &opts,
            &mut |_| {},
        )
        .await;
        let after = session.meter.snapshot();
        let dir = a.out.join(&p.report.id);
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        std::fs::write(
            dir.join("attempts.json"),
            serde_json::to_string_pretty(&result)?,
        )
        .with_context(|| format!("writing into {}", dir.display()))?;
        let best = result.best();
        if let Some(b) = best
            && let (Some(script), Some(v)) = (&b.script, &b.verdict)
        {
            let file = VerdictFile {
                report: p.report.path.display().to_string(),
                reproduced: v.reproduced,
                verdict: v,
                environment: &p.resolution,
                facts: &p.facts,
                origin: json!({"model": model, "attempt": b.number,
                    "context": context_origin(&result.context)}),
                llm_opinion: None,
            };
            outputs::write(&dir, script, &b.runs, &file)
                .with_context(|| format!("writing into {}", dir.display()))?;
        }
        let reason = match (best.and_then(|b| b.verdict.as_ref()), &result.stopped) {
            (_, Some(stop)) => stop.clone(),
            (Some(v), None) => v.summary(),
            (None, None) => result.why_unjudged(),
        };
        let cost = after.cost_usd - before.cost_usd;
        let row = ReproduceRow {
            id: p.report.id.clone(),
            model: model.clone(),
            framework: meta_str(&p.report, "framework").unwrap_or_else(|| "unknown".into()),
            symptom: meta_str(&p.report, "symptom")
                .or_else(|| meta_str(&p.report, "symptom_type"))
                .unwrap_or_else(|| p.facts.symptom.as_str().to_string()),
            root_cause: meta_str(&p.report, "root_cause")
                .or_else(|| meta_str(&p.report, "root_cause_kind"))
                .unwrap_or_else(|| "unknown".into()),
            reproduced: result.reproduced_by.is_some(),
            attempts: result.attempts.len() as u32,
            calls: after.calls + after.failed - before.calls - before.failed,
            prompt_tokens: after.prompt_tokens - before.prompt_tokens,
            completion_tokens: after.completion_tokens - before.completion_tokens,
            cost_usd: (cost > 0.0).then_some(cost),
            time_s: started.elapsed().as_secs_f64(),
            reason,
        };
        progress::line(&pb, &row.line());
        results.append(&row)?;
        rows.push(row);
        pb.inc(1);
        // A model that cannot be reached stops the bench, keeping what finished.
        if let Some(stop) = &result.stopped
            && result.attempts.len() <= 1
            && !stop.contains("budget")
        {
            return Err(anyhow::anyhow!("{stop}").context(Infrastructure("asking the model")));
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
