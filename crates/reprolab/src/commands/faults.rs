//! `reprolab faults`: list a fault benchmark; `--measure N` (re)measures faulty vs fixed.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result, anyhow};
use reprolab_core::manifest::{Config, Subject};
use reprolab_core::{Outcome, Split};
use reprolab_exec::Mode;
use reprolab_faults::{FaultRecord, GroupStats, KillSettings, Origin};
use serde_json::json;

use crate::cli::{FaultsArgs, Global};
use crate::context;
use crate::error::Infrastructure;
use crate::progress;
use crate::table::{effect, p_value, render};
use crate::trainer::EvalTrainer;

fn stats(g: &Option<GroupStats>) -> String {
    g.as_ref()
        .map_or("-".into(), |g| format!("{:.4} ± {:.4}", g.mean, g.std))
}

/// Cohen's d of a measured fault, "no variance" when neither group varies.
fn d_text(r: &FaultRecord) -> String {
    let constant = |g: &Option<GroupStats>| g.as_ref().is_some_and(|g| g.std == 0.0);
    effect(r.cohens_d, constant(&r.faulty) && constant(&r.fixed))
}

/// Why a fault cannot be measured: the user's program failed, as `eval` would show it (exit 1,
/// like a failed `eval`; nothing is written).
struct ProgramFailure(String);

/// Which of a fault's two configs is trained.
#[derive(Clone, Copy)]
enum Role {
    Faulty,
    Fixed,
}

/// The metric of each run of `config` on `split`, or why its runs measure nothing: any failed
/// run of the fixed config (the ground truth must train), or not one finished run of the faulty
/// config (a fault may crash or give NaN on some seeds; the finished runs are its statistics).
/// A run that reprolab itself failed is an infrastructure error.
async fn train_config(
    trainer: &EvalTrainer<'_>,
    config: &Config,
    config_path: &Path,
    seeds: &[u64],
    split: Split,
    role: Role,
) -> Result<Result<Vec<Option<f64>>, ProgramFailure>> {
    let evals = trainer.run(config, seeds, Mode::Eval).await?;
    if let Some(e) = evals
        .iter()
        .find(|e| matches!(e.record.outcome, Outcome::Infra { .. }))
    {
        return Err(anyhow!("{}", e.record.outcome.summary()))
            .context(Infrastructure("training a fault"));
    }
    let failed = match role {
        Role::Fixed => evals.iter().find(|e| !e.record.outcome.is_ok()),
        Role::Faulty if evals.iter().any(|e| e.record.outcome.is_ok()) => None,
        Role::Faulty => evals.first(),
    };
    if let Some(e) = failed {
        let dir = &trainer.subject.dir;
        let file = config_path
            .strip_prefix(dir)
            .unwrap_or(config_path)
            .display();
        let what = match role {
            Role::Fixed => format!("the fixed config ({file}) failed"),
            Role::Faulty => format!("no run of the faulty config ({file}) finished; it failed"),
        };
        let mut message = format!(
            "{}: {what} on seed {}: {}; nothing measured, {} left unchanged",
            dir.display(),
            e.record.seed,
            e.record.outcome.summary(),
            reprolab_faults::FAULT_FILE,
        );
        if let Some(shown) = e.failure_report() {
            message = format!("{message}\n{shown}");
        }
        return Ok(Err(ProgramFailure(message)));
    }
    Ok(Ok(evals
        .iter()
        .map(|e| e.record.outcome.metric(split))
        .collect()))
}

/// Train faulty and fixed `runs` times and fill the record's measurements; the record is left
/// as it was when the program fails.
async fn measure(
    trainer: &EvalTrainer<'_>,
    subject: &Subject,
    record: &mut FaultRecord,
    runs: usize,
    split: Split,
) -> Result<Result<(), ProgramFailure>> {
    let fix = subject
        .fix
        .as_ref()
        .ok_or_else(|| anyhow!("{}: no [fix] table", subject.manifest_path.display()))?;
    let settings = KillSettings {
        runs,
        split,
        ..KillSettings::default()
    };
    let seeds = settings.seeds();
    let faulty = train_config(
        trainer,
        &subject.config,
        &subject.config_path,
        &seeds,
        split,
        Role::Faulty,
    )
    .await?;
    let faulty = match faulty {
        Ok(metrics) => metrics,
        Err(failure) => return Ok(Err(failure)),
    };
    let fixed = train_config(
        trainer,
        &fix.config,
        &fix.config_path,
        &seeds,
        split,
        Role::Fixed,
    )
    .await?;
    let fixed = match fixed {
        Ok(metrics) => metrics,
        Err(failure) => return Ok(Err(failure)),
    };
    let d = reprolab_faults::kill(&fixed, &faulty, subject.metric.goal, &settings);
    record.split = Some(split);
    record.runs = Some(runs);
    record.metric = Some(subject.metric.name.clone());
    record.goal = Some(subject.metric.goal);
    record.faulty = Some(GroupStats {
        mean: d.mutant_mean,
        std: d.mutant_std,
        n: d.mutant_n,
    });
    record.fixed = Some(GroupStats {
        mean: d.original_mean,
        std: d.original_std,
        n: d.original_n,
    });
    record.p_value = Some(d.p_value);
    record.test = Some(settings.test);
    record.cohens_d = Some(d.cohens_d);
    Ok(Ok(()))
}

fn blank_record(dir: &Path, subject: &Subject) -> FaultRecord {
    let id = dir
        .file_name()
        .map_or(subject.name.clone(), |n| n.to_string_lossy().into_owned());
    serde_json::from_value(json!({
        "id": id, "subject": subject.name, "origin": Origin::Real,
        "faults": subject.fix.as_ref().map(|f| f.faults.clone()).unwrap_or_default(),
    }))
    .expect("a minimal fault record")
}

pub async fn run(g: &Global, a: &FaultsArgs) -> Result<ExitCode> {
    let found = reprolab_faults::read_benchmark(&a.dir)?;
    if found.is_empty() {
        anyhow::bail!(
            "{}: no faulty subjects here (a subject directory whose reprolab.toml has a [fix] table)",
            a.dir.display()
        );
    }
    let mut rows: Vec<(String, FaultRecord)> = Vec::new();
    if let Some(runs) = a.measure {
        let ev = context::evaluator(g).await?;
        let pb = progress::bar(0, "measure", g.json);
        for (dir, record) in found {
            let subject = Subject::load(&dir)?;
            let mut record = record.unwrap_or_else(|| blank_record(&dir, &subject));
            pb.set_message(record.id.clone());
            let trainer = EvalTrainer::new(&ev, &subject, pb.clone());
            if let Err(ProgramFailure(message)) =
                measure(&trainer, &subject, &mut record, runs, a.split.split()).await?
            {
                pb.finish_and_clear();
                ev.shutdown().await;
                return Ok(crate::error::report(
                    crate::error::Kind::Program,
                    &message,
                    g.json,
                ));
            }
            let path = dir.join(reprolab_faults::FAULT_FILE);
            std::fs::write(&path, serde_json::to_string_pretty(&record)?)
                .with_context(|| format!("writing {}", path.display()))?;
            rows.push((dir.display().to_string(), record));
        }
        pb.finish_and_clear();
        ev.shutdown().await;
    } else {
        for (dir, record) in found {
            let record = match record {
                Some(r) => r,
                None => blank_record(&dir, &Subject::load(&dir)?),
            };
            rows.push((dir.display().to_string(), record));
        }
    }
    if g.json {
        let list: Vec<_> = rows
            .iter()
            .map(|(dir, r)| json!({"dir": dir, "fault": r}))
            .collect();
        println!("{}", serde_json::to_string_pretty(&list)?);
    } else {
        let mut table = vec![
            [
                "id", "subject", "faults", "origin", "faulty", "fixed", "p", "d", "runs",
            ]
            .map(String::from)
            .to_vec(),
        ];
        for (_, r) in &rows {
            table.push(vec![
                r.id.clone(),
                r.subject.clone(),
                r.faults
                    .iter()
                    .map(|f| f.to_string())
                    .collect::<Vec<_>>()
                    .join(" "),
                super::serde_name(r.origin),
                stats(&r.faulty),
                stats(&r.fixed),
                p_value(r.p_value),
                d_text(r),
                r.runs.map_or("-".into(), |n| n.to_string()),
            ]);
        }
        print!("{}", render(&table));
        println!(
            "\n{} in {}",
            crate::plural::count(rows.len(), "fault"),
            a.dir.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}
