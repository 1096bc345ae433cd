//! `reprolab codegen validate | run | report | bench`: wiring of reprolab-codegen to the command
//! line, progress bars and printed summaries.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use reprolab_codegen::checks::{self, Measured, RunnerComparison, failure_text};
use reprolab_codegen::generations::{
    Generation, attach_expected, load_earlier_generations, load_generations, missing_samples,
    reference_answers, select_generations, tasks_with_answers,
};
use reprolab_codegen::harness::{OnDone, by_task};
use reprolab_codegen::llm::{LlmClassifier, LlmGenerator};
use reprolab_codegen::metrics::Summary;
use reprolab_codegen::refine::Classifier;
use reprolab_codegen::report::{RunInfo, summary_notes, summary_rows};
use reprolab_codegen::rundir::{self, Appender};
use reprolab_codegen::task::{Task, select};
use reprolab_codegen::{
    Generator, Harness, Options, SampleResult, Status, TimeoutPolicy, load_tasks,
};
use reprolab_exec::PythonEnv;
use reprolab_store::Store;
use serde_json::json;

use crate::cli::{
    Backend, CodegenBenchArgs, CodegenCommand, CodegenLimits, CodegenReportArgs, CodegenRunArgs,
    CodegenValidateArgs, Global,
};
use crate::context;
use crate::progress;
use crate::table::render;

pub async fn run(g: &Global, c: &CodegenCommand) -> Result<ExitCode> {
    match c {
        CodegenCommand::Validate(a) => validate(g, a).await,
        CodegenCommand::Run(a) => run_answers(g, a).await,
        CodegenCommand::Report(a) => report(g, a),
        CodegenCommand::Bench(a) => bench(g, a).await,
    }
}

fn llm_generator(g: &Global, a: &crate::llm::LlmArgs) -> Result<Box<dyn Generator>> {
    let model = crate::llm::chat_model(g, a)?;
    Ok(Box::new(LlmGenerator(model)))
}

/// The classifier of `--classify-llm SPEC`: the LLM stack of `--llm` with another model (the
/// other `--llm-*` flags apply), its answers stored in the run store.
fn llm_classifier(g: &Global, a: &crate::llm::LlmArgs, spec: &str) -> Result<Classifier> {
    let args = crate::llm::LlmArgs {
        llm: Some(spec.to_string()),
        ..a.clone()
    };
    let model = crate::llm::chat_model(g, &args)?;
    Ok(Classifier::new(
        Arc::new(LlmClassifier(model)),
        Some(context::open_store(g)?),
        !g.no_cache,
    ))
}

/// Refine the failure labels of `results` with `classifier`, with a progress bar.
async fn classify_failures(
    g: &Global,
    classifier: &Classifier,
    tasks: &[Arc<Task>],
    results: &mut [SampleResult],
) -> Result<()> {
    let n = Classifier::failures(results);
    let pb = progress::bar(n as u64, "classifying failures", g.json);
    classifier
        .refine_all(tasks, results, &|_| pb.inc(1))
        .await?;
    pb.finish_and_clear();
    Ok(())
}

fn load(path: &Path, only: &[String]) -> Result<(Vec<Arc<Task>>, HashSet<String>)> {
    let tasks = load_tasks(path).with_context(|| path.display().to_string())?;
    let all: HashSet<String> = tasks.iter().map(|t| t.id.clone()).collect();
    let tasks = select(tasks, only)?;
    Ok((tasks.into_iter().map(Arc::new).collect(), all))
}

fn options(g: &Global, l: &CodegenLimits, fresh: bool) -> Result<Options> {
    let opts = Options {
        workers: g
            .workers
            .unwrap_or_else(reprolab_exec::default_workers)
            .max(1),
        fresh,
        memory_mb: l.memory_mb,
        output_mb: l.output_mb,
        max_procs: l.max_procs,
        timeout: TimeoutPolicy {
            factor: l.timeout_factor,
            slack_s: l.timeout_slack,
            min_s: l.timeout_min,
        },
        read_cache: !g.no_cache,
    };
    opts.validate(g.backend == Backend::Ray)?;
    Ok(opts)
}

/// A progress bar whose message counts statuses.
fn bar_callback(pb: &indicatif::ProgressBar) -> impl Fn(&SampleResult) + Send + Sync + '_ {
    let counts = std::sync::Mutex::new(HashMap::<Status, usize>::new());
    move |r: &SampleResult| {
        let mut c = counts.lock().unwrap();
        *c.entry(r.status).or_default() += 1;
        let msg: Vec<String> = Status::ALL
            .iter()
            .filter_map(|s| c.get(s).map(|n| format!("{} {n}", s.name())))
            .collect();
        pb.set_message(msg.join(", "));
        pb.inc(1);
    }
}

/// The harness of validate and run: samples on the local runners, or with `--backend ray` on
/// the cluster's slots (started now, so that a cluster that cannot be reached fails at once).
async fn harness(g: &Global, env: PythonEnv, store: Store, opts: Options) -> Result<Harness> {
    Ok(match g.backend {
        Backend::Local => Harness::new(env, Some(store), opts)?,
        Backend::Ray => {
            let ray = context::ray_executor(g, &env).await?;
            Harness::on_ray(env, Some(store), opts, Arc::new(ray))?
        }
    })
}

// ------------------------------------------------------------------------------- validate

async fn validate(g: &Global, a: &CodegenValidateArgs) -> Result<ExitCode> {
    let (tasks, _) = load(&a.tasks, &a.limits.only)?;
    let opts = options(g, &a.limits, a.fresh)?;
    let env = context::python_env(g).await?;
    let store = context::open_store(g)?;
    // Local runners start when a reference must really run: a validation the store answers
    // starts none.
    let harness = harness(g, env, store, opts).await?;

    let pb = progress::bar(tasks.len() as u64, "references", g.json);
    let cb = bar_callback(&pb);
    let refs = harness.references(&tasks, &cb).await?;
    pb.finish_and_clear();
    let by_task = by_task(&refs);

    let mut wrongs: HashMap<String, Vec<SampleResult>> = HashMap::new();
    if a.wrong {
        let n = checks::wrong_solution_count(&tasks);
        let pb = progress::bar(n as u64, "wrong solutions", g.json);
        let cb = bar_callback(&pb);
        for r in harness.wrong_solutions(&tasks, &by_task, &cb).await? {
            wrongs.entry(r.task_id.clone()).or_default().push(r);
        }
        pb.finish_and_clear();
    }
    harness.shutdown().await;

    let checked = checks::check_tasks(&tasks, &by_task, a.wrong.then_some(&wrongs));
    let invalid = checks::invalid_count(&checked);
    if g.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&checks::validation_json(&checked))?
        );
    } else {
        print!("{}", render(&checks::validation_rows(&checked)));
        println!(
            "\n{} of {} tasks valid{}",
            tasks.len() - invalid,
            tasks.len(),
            if invalid > 0 {
                "; fix or drop the others before benchmarking"
            } else {
                ""
            }
        );
    }
    Ok(if invalid == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

// ------------------------------------------------------------------------------- run

async fn run_answers(g: &Global, a: &CodegenRunArgs) -> Result<ExitCode> {
    let (tasks, all_ids) = load(&a.tasks, &a.limits.only)?;
    if a.samples == Some(0) {
        bail!("--samples must be at least 1");
    }
    let opts = options(g, &a.limits, a.fresh)?;
    std::fs::create_dir_all(&a.out).with_context(|| format!("creating {}", a.out.display()))?;
    let generator = match &a.generations {
        None => Some(llm_generator(g, &a.llm)?),
        Some(_) => None,
    };
    let classifier = a
        .classify_llm
        .as_deref()
        .map(|spec| llm_classifier(g, &a.llm, spec))
        .transpose()?;
    let env = context::python_env(g).await?;
    let mut info = RunInfo {
        tasks_file: a.tasks.display().to_string(),
        source: match (&a.generations, &generator) {
            (Some(f), _) => format!("generations {}", f.display()),
            (None, Some(m)) => format!("llm {}", m.name()),
            (None, None) => String::new(),
        },
        samples: a.samples,
        temperature: generator.as_ref().map(|_| a.temperature),
        mode: opts.mode_name(g.backend == Backend::Ray).into(),
        workers: opts.workers,
        memory_mb: opts.memory_mb,
        output_mb: opts.output_mb,
        timeout: opts.timeout_text(),
        started_at: reprolab_store::now_rfc3339(),
        finished_at: String::new(),
        environment: env.id.clone(),
        expected_samples: None,
    };
    let store = context::open_store(g)?;
    let harness = harness(g, env, store, opts).await?;
    info.workers = harness.options().workers;
    rundir::write_run_info(&a.out, &info)?;

    // The answers: a file, or the model (resuming from what an earlier run generated).
    let gens: Vec<Generation> = match (&a.generations, &generator) {
        (Some(file), _) => {
            let gens = load_generations(file).with_context(|| file.display().to_string())?;
            select_generations(gens, &tasks, &all_ids, a.samples)?
        }
        (None, Some(model)) => {
            let path = a.out.join(rundir::GENERATIONS_FILE);
            let existing = load_earlier_generations(&path)?;
            let n = a.samples.unwrap_or(1);
            let pb = progress::bar(tasks.len() as u64, "generating", g.json);
            let all = reprolab_codegen::generate::generate_missing(
                model.as_ref(),
                &tasks,
                n,
                a.temperature,
                existing,
                &path,
                &|_, _| pb.inc(1),
            )
            .await?;
            pb.finish_and_clear();
            select_generations(all, &tasks, &all_ids, Some(n))?
        }
        (None, None) => bail!("give --generations FILE or --llm SPEC"),
    };
    if let Some(n) = a.samples {
        for (task, have) in missing_samples(&tasks, &gens, n) {
            eprintln!("warning: task {task} has {have} of the {n} samples asked for");
        }
    }
    info.expected_samples = Some(gens.len());
    rundir::write_run_info(&a.out, &info)?;
    let tasks = tasks_with_answers(tasks, &gens);
    if tasks.is_empty() {
        bail!("no answer in the generations belongs to the selected tasks");
    }

    // Runners start when a sample must really run: a run the store answers starts none.
    let pb = progress::bar(tasks.len() as u64, "references", g.json);
    let cb = bar_callback(&pb);
    let refs = harness.references(&tasks, &cb).await?;
    pb.finish_and_clear();
    rundir::write_jsonl(&a.out.join(rundir::REFERENCES_FILE), &refs)?;
    let by_task = by_task(&refs);
    for r in refs.iter().filter(|r| r.status != Status::Pass) {
        progress::line(
            &pb,
            &format!(
                "warning: task {} is left out: its reference {} ({})",
                r.task_id,
                r.status.name(),
                failure_text(r)
            ),
        );
    }

    let results_path = a.out.join(rundir::RESULTS_FILE);
    let appender = Appender::create(&results_path)?;
    let pb = progress::bar(gens.len() as u64, "samples", g.json);
    let bar = bar_callback(&pb);
    let cb = |r: &SampleResult| {
        appender.push(r);
        bar(r);
    };
    let on_done: OnDone = &cb;
    let mut results = harness
        .generations(&tasks, &gens, &by_task, on_done)
        .await?;
    pb.finish_and_clear();
    attach_expected(&mut results, &gens);
    let runners_started = harness.runners_started();
    harness.shutdown().await;
    if let Some(classifier) = &classifier {
        classify_failures(g, classifier, &tasks, &mut results).await?;
    }
    rundir::write_jsonl(&results_path, &results)?;
    info.finished_at = reprolab_store::now_rfc3339();
    rundir::write_run_info(&a.out, &info)?;
    let rundir::Rendered { summary, html, .. } =
        rundir::render(&a.out, "Code generation benchmark")?;
    let cached = results.iter().filter(|r| r.cached).count();
    if g.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({"summary": summary, "cached": cached,
                        "runners_started": runners_started, "report": html}))?
        );
    } else {
        print_summary(&summary);
        println!(
            "\n{} samples ({} reused from the store); report: {}",
            results.len(),
            cached,
            html.display()
        );
    }
    if let Some(c) = summary.classifier.as_ref().filter(|c| c.failed > 0) {
        eprintln!(
            "{} classifier calls failed (those failures keep the rules' label); rerun the same \
             command to ask again",
            c.failed
        );
    }
    let infra = summary.statuses.get(&Status::Infra).copied().unwrap_or(0);
    if infra > 0 {
        eprintln!(
            "{infra} samples hit infrastructure errors; rerun the same command to retry them"
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

fn print_summary(s: &Summary) {
    print!("{}", render(&summary_rows(s)));
    for line in summary_notes(s) {
        println!("{line}");
    }
}

// ------------------------------------------------------------------------------- report

fn report(g: &Global, a: &CodegenReportArgs) -> Result<ExitCode> {
    let rundir::Rendered {
        summary,
        html,
        incomplete,
    } = rundir::render(&a.dir, "Code generation benchmark")?;
    if g.json {
        println!(
            "{}",
            serde_json::to_string_pretty(
                &json!({"summary": summary, "report": html, "complete": incomplete.is_none(), "incomplete": incomplete})
            )?
        );
    } else {
        if let Some(why) = &incomplete {
            println!("{why}\n");
        }
        print_summary(&summary);
        println!("\nreport: {}", html.display());
    }
    Ok(ExitCode::SUCCESS)
}

// ------------------------------------------------------------------------------- bench

async fn measure(
    g: &Global,
    env: &reprolab_exec::PythonEnv,
    opts: Options,
    tasks: &[Arc<Task>],
    gens: &[Generation],
    label: &str,
) -> Result<Measured> {
    let harness = Harness::new(env.clone(), None, opts)?;
    // Start-up (warm runners importing torch) and the references (needed for the time limits)
    // are measured apart from the samples.
    let t0 = Instant::now();
    harness.warm_up().await;
    let pb = progress::bar(tasks.len() as u64, &format!("{label}: references"), g.json);
    let cb = bar_callback(&pb);
    let refs = harness.references(tasks, &cb).await?;
    pb.finish_and_clear();
    let startup_s = t0.elapsed().as_secs_f64();
    let by_task = by_task(&refs);
    let pb = progress::bar(gens.len() as u64, &format!("{label}: samples"), g.json);
    let cb = bar_callback(&pb);
    let t1 = Instant::now();
    let results = harness.generations(tasks, gens, &by_task, &cb).await?;
    let wall_s = t1.elapsed().as_secs_f64();
    pb.finish_and_clear();
    let import_s = harness.runner_import_times();
    harness.shutdown().await;
    Ok(Measured {
        startup_s,
        wall_s,
        results,
        import_s,
    })
}

async fn bench(g: &Global, a: &CodegenBenchArgs) -> Result<ExitCode> {
    if g.backend == Backend::Ray {
        bail!(
            "codegen bench compares this machine's warm runners with fresh processes; run it \
             without --backend ray (codegen validate and run take it)"
        );
    }
    let (tasks, all_ids) = load(&a.tasks, &a.limits.only)?;
    let gens: Vec<Generation> = match &a.generations {
        Some(file) => {
            let gens = load_generations(file).with_context(|| file.display().to_string())?;
            select_generations(gens, &tasks, &all_ids, None)?
        }
        None => {
            if a.repeat == 0 {
                bail!("--repeat must be at least 1");
            }
            reference_answers(&tasks, a.repeat)
        }
    };
    if gens.is_empty() {
        bail!("nothing to run: no answers for the selected tasks");
    }
    let mut opts = options(g, &a.limits, false)?;
    opts.read_cache = false;
    let env = context::python_env(g).await?;
    let warm = measure(g, &env, opts.clone(), &tasks, &gens, "warm").await?;
    let fresh = measure(
        g,
        &env,
        Options {
            fresh: true,
            ..opts.clone()
        },
        &tasks,
        &gens,
        "fresh",
    )
    .await?;

    let comparison = RunnerComparison {
        samples: gens.len(),
        workers: opts.workers,
        warm,
        fresh,
    };
    if g.json {
        println!("{}", serde_json::to_string_pretty(&comparison.to_json())?);
    } else {
        println!("{}\n", comparison.heading());
        print!("{}", render(&comparison.rows()));
        println!();
        for line in comparison.notes() {
            println!("{line}");
        }
    }
    Ok(if comparison.infra() > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
