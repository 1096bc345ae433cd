//! `reprolab neutrality`: the study's neutrality analysis of one faulty subject — BFS from its
//! known fix for alternative ground truths — with the graph written as JSON, DOT and SVG, and
//! the alternatives stored next to the fault for the benchmarks.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use reprolab_bench::neutrality::{
    Summary, best_alternatives, best_alternatives_heading, write_graph,
};
use reprolab_neutrality::{self as neutrality, Alternatives, NeutralitySettings};

use crate::cli::{Global, NeutralityArgs};
use crate::context;
use crate::progress;
use crate::table::render;
use crate::trainer::EvalTrainer;

/// The wall-clock budget when neither `--budget` nor `--nodes` is given.
const DEFAULT_BUDGET: Duration = Duration::from_secs(30 * 60);

pub async fn run(g: &Global, a: &NeutralityArgs) -> Result<ExitCode> {
    let budget = match (&a.budget, a.nodes) {
        (Some(b), _) => {
            Some(neutrality::parse_duration(b).map_err(|e| anyhow!("--budget {b:?}: {e}"))?)
        }
        (None, None) => Some(DEFAULT_BUDGET),
        (None, Some(_)) => None,
    };
    if a.runs < 3 {
        bail!("--runs must be at least 3 (the study trains every node 10 times)");
    }
    if a.top_k == 0 {
        bail!("--top-k must be at least 1");
    }
    let subject = context::load_subject(&a.subject)?;
    if subject.fix.is_none() {
        bail!(
            "{}: no [fix] table: the analysis starts from the known fix of a faulty subject \
             (its fixed config and fault labels)",
            subject.manifest_path.display()
        );
    }
    let out = a.out.clone().unwrap_or_else(|| {
        PathBuf::from(".reprolab")
            .join("neutrality")
            .join(&subject.name)
    });
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let ev = context::evaluator(g).await?;
    let workers = ev.workers();
    let t0 = Instant::now();
    let pb = progress::bar(0, "neutrality", g.json);
    let trainer = EvalTrainer::new(&ev, &subject, pb.clone());
    let settings = NeutralitySettings {
        runs: a.runs,
        top_k: a.top_k,
        split: a.split.split(),
        sequential: !a.no_sequential,
        max_tried: a.nodes,
        deadline: budget.map(|b| t0 + b),
        // Enough neighbours in flight that every worker stays busy between their stages.
        parallel: 2 * workers,
        ..NeutralitySettings::default()
    };
    let mut on_level = |l: &neutrality::LevelProgress| {
        progress::line(
            &pb,
            &format!(
                "depth {}: {} tried, {} in the graph, {} alternative GTs, {} trainings, {} queued ({:.0} s)",
                l.depth,
                l.tried,
                l.graph,
                l.alternatives,
                l.trainings,
                l.queued,
                t0.elapsed().as_secs_f64()
            ),
        );
    };
    let result = neutrality::analyse(&trainer, &subject, &settings, &mut on_level)
        .await
        .with_context(|| subject.name.clone())?;
    pb.finish_and_clear();
    let wall_s = t0.elapsed().as_secs_f64();
    let (trained, cached) = (trainer.trained.get(), trainer.cached.get());
    ev.shutdown().await;

    let alternatives = Alternatives::from_result(&subject, &result);
    let store_dir = if a.no_store { &out } else { &subject.dir };
    let alternatives_file = alternatives.write(store_dir)?;
    let graph = write_graph(&out, &subject, &result, wall_s, trained, cached)?;
    let summary = Summary {
        subject: subject.name.clone(),
        fault_dir: subject.dir.clone(),
        table4: alternatives.table4(),
        tried: result.tried(),
        levels: result.levels,
        trainings: result.trainings,
        trained,
        cached,
        saved: result.saved,
        stopped_early: result.stopped_early(),
        unfinished: result.unfinished(),
        stop: result.stop,
        wall_s,
        runs: result.runs,
        top_k: result.top_k,
        split: result.split,
        sequential: result.sequential,
        budget_s: budget.map(|b| b.as_secs_f64()),
        max_nodes: a.nodes,
        workers,
        alternatives_file,
        graph,
    };
    let summary_path = out.join("summary.json");
    std::fs::write(
        &summary_path,
        serde_json::to_string_pretty(&summary)? + "\n",
    )
    .with_context(|| format!("writing {}", summary_path.display()))?;
    if g.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "summary": summary, "alternatives": alternatives,
            }))?
        );
    } else {
        print_summary(&summary, &alternatives);
    }
    Ok(ExitCode::SUCCESS)
}

fn print_summary(s: &Summary, alts: &Alternatives) {
    println!("{}", s.heading());
    print!("{}", render(&s.rows()));
    println!("{}", s.stop_line());
    if !alts.alternatives.is_empty() {
        println!("\n{}", best_alternatives_heading(alts));
        print!("{}", render(&best_alternatives(alts)));
    }
    println!("\nalternatives: {}", s.alternatives_file.display());
    println!(
        "graph: {}, {}, {}",
        s.graph[0].display(),
        s.graph[1].display(),
        s.graph[2].display()
    );
}
