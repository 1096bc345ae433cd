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

/// `30m`, `90s`, `1h`, `1.5h`: a number and a unit (s, m, h).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let expected = "expected a number with a unit, like 30m, 90s or 1h";
    let split = t
        .find(|c: char| c.is_ascii_alphabetic())
        .ok_or_else(|| format!("{t:?} has no unit; {expected}"))?;
    let (num, unit) = t.split_at(split);
    let x: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("{num:?} is not a number; {expected}"))?;
    let scale = match unit.trim() {
        "s" | "sec" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        u => return Err(format!("unknown unit {u:?}; {expected}")),
    };
    if !(x.is_finite() && x > 0.0) {
        return Err(format!("{t:?} is not a positive duration; {expected}"));
    }
    Ok(Duration::from_secs_f64(x * scale))
}

pub async fn run(g: &Global, a: &NeutralityArgs) -> Result<ExitCode> {
    let budget = match (&a.budget, a.nodes) {
        (Some(b), _) => Some(parse_duration(b).map_err(|e| anyhow!("--budget {b:?}: {e}"))?),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_need_a_unit() {
        assert_eq!(parse_duration("30m").unwrap(), Duration::from_secs(1800));
        assert_eq!(parse_duration("90s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration(" 1.5h ").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse_duration("2 min").unwrap(), Duration::from_secs(120));
        for bad in ["30", "m", "-1m", "0s", "3d", "x5m"] {
            let e = parse_duration(bad).unwrap_err();
            assert!(e.contains("like 30m"), "{bad}: {e}");
        }
    }
}
