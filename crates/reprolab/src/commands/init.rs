//! `reprolab init`: make a subject of an existing training script (find the callable, write
//! the manifest, config and README), then train it once to check the contract. The scaffolding
//! is `reprolab_scaffold`'s; this module wires the flags, runs the check and prints.

use std::process::ExitCode;

use anyhow::{Result, bail};
use reprolab_core::Split;
use reprolab_core::manifest::Subject;
use reprolab_exec::Mode;
use reprolab_scaffold as scaffold;
use serde_json::json;

use crate::cli::{Global, InitArgs};
use crate::context;
use crate::table::num;

pub async fn run(g: &Global, a: &InitArgs) -> Result<ExitCode> {
    if !a.dir.is_dir() {
        bail!(
            "{}: not a directory; give the directory of the training script",
            a.dir.display()
        );
    }
    let env = context::python_env(g).await?;
    let entry = scaffold::choose(&env, &a.dir, a.entry.as_deref())?;
    let name = scaffold::subject_name(&a.dir);
    let files = scaffold::scaffold(&name, &entry);
    let written = scaffold::write(&a.dir, &files, a.force)?;
    let notes = scaffold::notes(&entry, &files, &written);
    if !g.json {
        println!("{name}: entry {}", entry.spec());
        if !written.written.is_empty() {
            println!(
                "wrote {} in {}",
                scaffold::file_names(&written.written),
                a.dir.display()
            );
        }
        for n in &notes {
            println!("{n}");
        }
    }

    // The check: the subject as written must load, and train once.
    let subject = Subject::load(&a.dir)?;
    let ev = context::evaluator(g).await?;
    let evals = super::run_seeds(
        &ev,
        &subject,
        &subject.config,
        &[0],
        Mode::Eval,
        "check",
        g.json,
    )
    .await?;
    ev.shutdown().await;
    let e = evals
        .first()
        .ok_or_else(|| anyhow::anyhow!("the check training returned nothing"))?;
    let outcome = &e.record.outcome;
    let advice = scaffold::advice(&subject, outcome);
    if g.json {
        let out = json!({
            "subject": name, "entry": entry.spec(),
            "written": written.written, "kept": written.kept,
            "known": files.known, "unvalued": files.unvalued, "dynamic": entry.dynamic,
            "script": entry.script.as_ref().map(|s| json!({
                "file": entry.file,
                "via": match s.via {
                    scaffold::script_entry::Via::Options => "options",
                    scaffold::script_entry::Via::Constants => "constants",
                },
                "seed": s.seed_option, "defaulted": s.defaulted, "positional": s.positional,
                "skipped": s.skipped, "calls_result": s.calls_result,
            })),
            "check": {"outcome": outcome, "duration_s": e.record.duration_s, "advice": advice},
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else if advice.is_none() {
        println!(
            "\ncheck: one training (seed 0) passed in {:.1} s: {} {} on search, {} on holdout",
            e.record.duration_s,
            subject.metric.name,
            num(outcome.metric(Split::Search)),
            num(outcome.metric(Split::Holdout)),
        );
        let dir = a.dir.display();
        println!(
            "next: reprolab eval {dir} --runs 10; reprolab localize {dir}; reprolab repair \
             {dir}; with a known fix in [fix], reprolab faults {dir} --measure 10"
        );
    } else {
        println!(
            "\ncheck: one training (seed 0) failed: {}",
            outcome.summary()
        );
        if let Some(shown) = e.failure_report() {
            println!("{shown}");
        }
    }
    match advice {
        None => Ok(ExitCode::SUCCESS),
        Some(advice) => {
            if !g.json {
                println!("\nto change: {advice}");
            }
            Ok(ExitCode::from(1))
        }
    }
}
