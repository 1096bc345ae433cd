//! `reprolab faults`: list a fault benchmark; `--measure N` (re)measures faulty vs fixed.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result, anyhow};
use reprolab_core::manifest::Subject;
use reprolab_faults::{FaultRecord, GroupStats, KillSettings, Origin};
use serde_json::json;

use crate::cli::{FaultsArgs, Global};
use crate::context;
use crate::progress;
use crate::table::render;
use crate::trainer::EvalTrainer;
use reprolab_faults::Trainer;

fn stats(g: &Option<GroupStats>) -> String {
    g.as_ref()
        .map_or("-".into(), |g| format!("{:.4} ± {:.4}", g.mean, g.std))
}

/// Train faulty and fixed `runs` times and fill the record's measurements.
async fn measure(
    trainer: &EvalTrainer<'_>,
    subject: &Subject,
    record: &mut FaultRecord,
    runs: usize,
    split: reprolab_core::Split,
) -> Result<()> {
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
    let faulty = trainer
        .train(&subject.config, &seeds, split)
        .await
        .map_err(|e| anyhow!(e))?;
    let fixed = trainer
        .train(&fix.config, &seeds, split)
        .await
        .map_err(|e| anyhow!(e))?;
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
    Ok(())
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
            measure(&trainer, &subject, &mut record, runs, a.split.split()).await?;
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
                r.p_value.map_or("-".into(), |p| format!("{p:.2e}")),
                r.cohens_d.map_or("-".into(), |d| format!("{d:.2}")),
                r.runs.map_or("-".into(), |n| n.to_string()),
            ]);
        }
        print!("{}", render(&table));
        println!("\n{} faults in {}", rows.len(), a.dir.display());
    }
    Ok(ExitCode::SUCCESS)
}
