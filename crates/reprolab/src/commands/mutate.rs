//! `reprolab mutate`: DeepCrime-style mutants of a correct subject, kept when statistically killed.

use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use reprolab_faults::{Filter, KillSettings, KillTest, Verdict};
use serde_json::json;

use crate::cli::{Global, KillTestArg, MutateArgs};
use crate::context;
use crate::progress;
use crate::table::{effect, num, p_value, render};
use crate::trainer::EvalTrainer;

pub async fn run(g: &Global, a: &MutateArgs) -> Result<ExitCode> {
    if a.runs < 2 {
        bail!("--runs must be at least 2");
    }
    let subject = context::load_subject(&a.subject)?;
    let ops = reprolab_faults::parse_operators(&a.operators)
        .map_err(|e| anyhow::anyhow!("--operators: {e}"))?;
    let settings = KillSettings {
        runs: a.runs,
        test: match a.test {
            KillTestArg::Glm => KillTest::Glm,
            KillTestArg::Wilcoxon => KillTest::Wilcoxon,
        },
        search_steps: a.search_steps,
        filter: Filter {
            min_drop: a.min_drop,
            max_drop: a.max_drop,
            min_loss_ratio: a.min_loss_ratio,
            max_loss_ratio: a.max_loss_ratio,
        },
        ..KillSettings::default()
    };
    let ev = context::evaluator(g).await?;
    let pb = progress::bar(0, "mutate", g.json);
    let trainer = EvalTrainer::new(&ev, &subject, pb.clone());
    let start = Instant::now();
    let mut on_line = |line: &str| {
        if g.json {
            return;
        }
        progress::line(&pb, line);
    };
    let report = reprolab_faults::run_campaign(&trainer, &subject, &ops, &settings, &mut on_line)
        .await
        .with_context(|| format!("mutating {}", subject.name))?;
    pb.finish_and_clear();
    let wall = start.elapsed().as_secs_f64();
    let (trained, cached) = (trainer.trained.get(), trainer.cached.get());
    ev.shutdown().await;
    let written = reprolab_faults::write_mutants(&report, &subject, &a.out)
        .with_context(|| format!("writing mutants to {}", a.out.display()))?;
    let saved_by_search = report.points_skipped_by_search * a.runs;

    if g.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({
                "report": report, "written": written, "wall_s": wall, "trained": trained, "cached": cached,
                "trainings_saved_by_search": saved_by_search,
            }))?
        );
    } else {
        println!(
            "\n{}: original {} {} ± {} over {} runs ({} split)\n",
            subject.name,
            subject.metric.name,
            num(Some(report.original.mean)),
            num(Some(report.original.std)),
            report.original.n,
            settings.split
        );
        let mut rows = vec![
            [
                "operator",
                "candidates",
                "evaluated",
                "killed",
                "kept",
                "note",
            ]
            .map(String::from)
            .to_vec(),
        ];
        for o in &report.operators {
            rows.push(vec![
                o.op.to_string(),
                o.candidates.to_string(),
                o.evaluated.to_string(),
                o.killed.to_string(),
                o.kept.to_string(),
                o.not_applicable.clone().unwrap_or_default(),
            ]);
        }
        print!("{}", render(&rows));
        let mut rows = vec![
            ["kept mutant", "label", "mutant", "p", "d"]
                .map(String::from)
                .to_vec(),
        ];
        for m in report.kept() {
            rows.push(vec![
                m.mutation.id(),
                m.mutation.label.to_string(),
                format!(
                    "{} ± {}",
                    num(Some(m.decision.mutant_mean)),
                    num(Some(m.decision.mutant_std))
                ),
                p_value(Some(m.decision.p_value)),
                effect(
                    Some(m.decision.cohens_d),
                    m.decision.mutant_std == 0.0 && m.decision.original_std == 0.0,
                ),
            ]);
        }
        println!();
        print!("{}", render(&rows));
        let count = |v: Verdict| {
            report
                .mutants
                .iter()
                .filter(|m| m.selected && m.verdict == v)
                .count()
        };
        println!(
            "\n{} kept; not kept: {} too easy, {} too hard, {} not killed, {} never train",
            written.len(),
            count(Verdict::TooEasy),
            count(Verdict::TooHard),
            count(Verdict::NotKilled),
            count(Verdict::NeverTrains)
        );
        println!(
            "trainings: {} requested, {trained} run, {cached} from the cache; binary search skipped {} grid points ({saved_by_search} trainings); {:.1} s",
            report.trainings_requested, report.points_skipped_by_search, wall
        );
        println!("written to {}", a.out.display());
    }
    Ok(ExitCode::SUCCESS)
}
