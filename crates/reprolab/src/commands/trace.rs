//! `reprolab trace`: one instrumented training; per-epoch dynamics on screen and as JSON.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use reprolab_bench::trace::{cell, epoch_rows, layer_rows, model_line, nan_epochs, plots};
use reprolab_exec::Mode;
use serde_json::json;

use super::run_seeds;
use crate::cli::{Global, TraceArgs};
use crate::context;
use crate::table::render;

pub async fn run(g: &Global, a: &TraceArgs) -> Result<ExitCode> {
    let subject = context::load_subject(&a.subject)?;
    let (config, config_path) = context::load_config(&subject, a.config.as_deref())?;
    let ev = context::evaluator(g).await?;
    let evals = run_seeds(
        &ev,
        &subject,
        &config,
        &[a.seed],
        Mode::Trace,
        "trace",
        g.json,
    )
    .await?;
    ev.shutdown().await;
    let e = &evals[0].record;
    let out_path = a.out.clone().unwrap_or_else(|| {
        PathBuf::from(".reprolab")
            .join("traces")
            .join(format!("{}-seed{}.json", subject.name, a.seed))
    });
    let doc = json!({
        "subject": subject.name, "config_path": config_path, "config": config, "seed": a.seed,
        "outcome": e.outcome, "duration_s": e.duration_s, "epochs": e.epochs,
    });
    if let Some(dir) = out_path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    std::fs::write(&out_path, serde_json::to_string_pretty(&doc)?)
        .with_context(|| format!("writing {}", out_path.display()))?;
    let summary = format!(
        "{} with {}: {} in {:.2} s",
        subject.name,
        config_path.file_name().map_or_else(
            || config_path.display().to_string(),
            |f| f.to_string_lossy().into()
        ),
        e.outcome.summary(),
        e.duration_s
    );
    let html_path = out_path.with_extension("html");
    std::fs::write(
        &html_path,
        plots(&subject.name, a.seed, &summary, &e.epochs).to_html(),
    )
    .with_context(|| format!("writing {}", html_path.display()))?;

    if g.json {
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        println!(
            "{} seed {} with {}: {} in {:.2} s\n",
            subject.name,
            a.seed,
            config_path.display(),
            e.outcome.summary(),
            e.duration_s
        );
        if e.epochs.is_empty() {
            println!("no per-epoch records: the subject does not call reprolab.log_epoch");
        } else {
            print!("{}", render(&epoch_rows(&e.epochs)));
            let first = &e.epochs[0];
            if let Some(model) = first.get("model") {
                println!("\nmodel (Keras): {}", model_line(model));
            }
            let last = &e.epochs[e.epochs.len() - 1];
            if first.get("layers").is_some() {
                println!(
                    "\nlayers at epoch {}:\n{}",
                    cell(&first["epoch"]),
                    render(&layer_rows(first))
                );
                if e.epochs.len() > 1 {
                    println!(
                        "layers at epoch {}:\n{}",
                        cell(&last["epoch"]),
                        render(&layer_rows(last))
                    );
                }
            }
            let nan = nan_epochs(&e.epochs);
            if !nan.is_empty() {
                println!("NaN/Inf in loss or weights at epochs: {}", nan.join(", "));
            }
        }
        if let reprolab_core::Outcome::Exception { traceback, .. } = &e.outcome {
            println!("\n{}", traceback.trim_end());
        }
        println!(
            "\ntrace saved to {} (plots: {})",
            out_path.display(),
            html_path.display()
        );
    }
    Ok(if e.outcome.is_ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
