//! `reprolab init`: make a subject of an existing training script (find the callable, write
//! the manifest, config and README), then train it once to check the contract.

mod check;
mod files;
mod scan;
mod space;

use std::process::ExitCode;

use anyhow::{Result, bail};
use reprolab_core::Split;
use reprolab_core::manifest::Subject;
use reprolab_exec::Mode;
use serde_json::json;

use crate::cli::{Global, InitArgs};
use crate::context;
use crate::table::num;

/// The files' names (they all lie in the subject directory, named once).
fn shown(paths: &[std::path::PathBuf]) -> String {
    paths
        .iter()
        .map(|p| {
            p.file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
        })
        .collect::<Vec<_>>()
        .join(", ")
}

pub async fn run(g: &Global, a: &InitArgs) -> Result<ExitCode> {
    if !a.dir.is_dir() {
        bail!(
            "{}: not a directory; give the directory of the training script",
            a.dir.display()
        );
    }
    let env = context::python_env(g).await?;
    let entry = scan::choose(&env, &a.dir, a.entry.as_deref())?;
    let name = files::subject_name(&a.dir);
    let scaffold = files::scaffold(&name, &entry);
    let written = files::write(&a.dir, &scaffold, a.force)?;

    let mut notes = Vec::new();
    if !written.kept.is_empty() {
        notes.push(format!(
            "kept (already there; --force overwrites): {}",
            shown(&written.kept)
        ));
    }
    // What the scaffold says about the space and the config holds only where it wrote them.
    let manifest_written = written.written.iter().any(|p| p.ends_with("reprolab.toml"));
    if manifest_written && !scaffold.known.is_empty() {
        notes.push(format!(
            "the study's values and fault types for: {}",
            scaffold.known.join(", ")
        ));
    }
    if manifest_written && !scaffold.unvalued.is_empty() {
        notes.push(format!(
            "read without a literal value, left out of config.json and [space] (add them): {}",
            scaffold.unvalued.join(", ")
        ));
    }
    if entry.dynamic > 0 {
        notes.push(format!(
            "{} config reads with a computed key (like config[f\"act{{i}}\"]): add those keys \
             to config.json and [space] by hand",
            entry.dynamic
        ));
    }
    if !g.json {
        println!("{name}: entry {}", entry.spec());
        if !written.written.is_empty() {
            println!("wrote {} in {}", shown(&written.written), a.dir.display());
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
    let advice = check::advice(&subject, outcome);
    if g.json {
        let out = json!({
            "subject": name, "entry": entry.spec(),
            "written": written.written, "kept": written.kept,
            "known": scaffold.known, "unvalued": scaffold.unvalued, "dynamic": entry.dynamic,
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
            "next: reprolab eval {dir} --runs 10; reprolab localize {dir}; with a known fix in \
             [fix], reprolab faults and reprolab repair"
        );
    } else {
        println!(
            "\ncheck: one training (seed 0) failed: {}",
            outcome.summary()
        );
        if let Some(shown) = super::failure_report(e) {
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
