//! `reprolab bench localize`: RC, PR and F3 of the localisation engines against a fault
//! benchmark's ground truth (the study's Tables 5 and 7; reprolab-bench scores the answers and
//! builds the report). The engines never see the ground truth: answers are scored after.

use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Result, bail};
use reprolab_bench::ResultsFile;
use reprolab_bench::localize::{self as bench, Answers, Row, Setup};
use reprolab_core::manifest::Subject;

use super::localize::suspects;
use super::serde_name;
use crate::cli::{BenchLocalizeArgs, Global, LocalizeEngine};
use crate::context;
use crate::progress;

pub async fn run(g: &Global, a: &BenchLocalizeArgs) -> Result<ExitCode> {
    if a.repeats == 0 {
        bail!("--repeats must be at least 1");
    }
    let faults = reprolab_bench::faults::read_selected(&a.benchmark, &a.only)?;
    if faults.is_empty() {
        bail!(
            "{}: no faulty subjects here{}",
            a.benchmark.display(),
            if a.only.is_empty() {
                String::new()
            } else {
                format!(" whose path contains one of --only {}", a.only.join(","))
            }
        );
    }
    let (mut out, mut rows) = ResultsFile::open::<Row>(&a.out)?;
    let done = bench::done(&rows);
    let model = if a.engines.contains(&LocalizeEngine::Llm) {
        Some(crate::llm::chat_model(g, &a.llm)?)
    } else {
        None
    };
    let llm_opts = a.llm_localize.options();
    let ev = context::evaluator(g).await?;
    let pb = progress::bar(
        (faults.len() * a.engines.len()) as u64,
        "bench localize",
        g.json,
    );
    for (dir, record) in &faults {
        let subject = Subject::load(dir)?;
        for &engine in &a.engines {
            let name = serde_name(engine);
            if done.contains(&(subject.name.clone(), name.clone())) {
                pb.inc(1);
                continue;
            }
            // The LLM engine votes over its own --llm-repeats answers in one run; its stability
            // is that vote's.
            let repeats = match engine {
                LocalizeEngine::Static | LocalizeEngine::Llm => 1,
                _ => a.repeats,
            };
            let mut answers = Answers {
                fault: subject.name.clone(),
                origin: record
                    .as_ref()
                    .map_or("real".into(), |r| serde_name(r.origin)),
                engine: name,
                gt: subject
                    .fix
                    .as_ref()
                    .map(|f| f.faults.clone())
                    .unwrap_or_default(),
                ..Answers::default()
            };
            for seed in 0..repeats as u64 {
                let t0 = Instant::now();
                let llm = model.as_deref().map(|m| (m, &llm_opts));
                let found =
                    suspects(Some(&ev), llm, &subject, &subject.config, engine, seed).await?;
                answers.llm = found.llm.as_ref().map(|l| (l.mapped_fraction, l.stability));
                // Count the training's own duration, not whether the cache answered.
                answers.seconds += found
                    .training_s
                    .unwrap_or_else(|| t0.elapsed().as_secs_f64());
                answers.answers.push(bench::answer_types(&found.suspects));
            }
            let mut row = Row::new(&answers);
            // Scored after the engine answered: the ground truth never reaches the engines.
            bench::score_after(&mut row, &bench::gt_variants(dir, &subject)?);
            out.append(&row)?;
            rows.push(row);
            pb.inc(1);
        }
    }
    pb.finish_and_clear();
    ev.shutdown().await;
    // Ground-truth variants per fault, read again now: an analysis may have run since an
    // earlier (resumed) row was written.
    let variants = bench::read_variants(&reprolab_bench::faults::dirs(&faults))?;
    let finished = bench::finish(rows, &variants);
    let setup = Setup {
        benchmark: a.benchmark.clone(),
        engines: a.engines.iter().map(|e| serde_name(*e)).collect(),
        repeats: a.repeats,
    };
    let html = bench::build_report(&finished, &setup).write(&a.out)?;
    if g.json {
        super::print_rows_and_report(&finished.rows, &html)?;
    } else {
        print!(
            "{}",
            crate::table::render(&bench::summary_rows(&finished.rows, &setup.engines))
        );
        if finished.with_alternatives > 0 {
            println!(
                "\nbefore / after alternative ground truths ({} faults have them):",
                finished.with_alternatives
            );
            print!(
                "{}",
                crate::table::render(&bench::before_after_rows(&finished.rows, &setup.engines))
            );
        }
        println!("\nreport: {}", html.display());
    }
    Ok(ExitCode::SUCCESS)
}
