//! `reprolab trace`: one instrumented training; per-epoch dynamics on screen and as JSON.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use reprolab_exec::Mode;
use serde_json::{Value, json};

use super::run_seeds;
use crate::cli::{Global, TraceArgs};
use crate::context;
use crate::table::render;
use reprolab_report::{Figure, Report, Section, svg};

fn cell(v: &Value) -> String {
    match v {
        Value::Null => "-".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) if n.is_i64() || n.is_u64() => n.to_string(),
        Value::Number(n) => {
            let x = n.as_f64().unwrap_or(f64::NAN);
            if x != 0.0 && (x.abs() < 1e-3 || x.abs() >= 1e4) {
                format!("{x:.2e}")
            } else {
                format!("{x:.4}")
            }
        }
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Per-layer table of one epoch record.
fn layer_table(epoch: &Value) -> String {
    let cols = [
        "name",
        "kind",
        "act",
        "weight_norm",
        "grad_norm",
        "grad_zero_frac",
        "dead_frac",
        "saturated_frac",
        "mean_abs_out",
    ];
    let mut rows = vec![cols.map(String::from).to_vec()];
    for layer in epoch["layers"].as_array().into_iter().flatten() {
        rows.push(cols.iter().map(|c| cell(&layer[*c])).collect());
    }
    render(&rows)
}

/// One line for the architecture a Keras subject's first trace record carries:
/// `Dense(64, relu) → Dense(10, softmax); loss categorical_crossentropy; optimizer adam;
/// backend torch`.
fn model_line(model: &Value) -> String {
    let layers: Vec<String> = model["layers"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|l| {
            let args: Vec<String> = ["units", "filters", "rate", "activation"]
                .iter()
                .filter_map(|k| l.get(*k).map(cell))
                .collect();
            format!("{}({})", cell(&l["kind"]), args.join(", "))
        })
        .collect();
    let line = format!(
        "{}; loss {}; optimizer {}",
        layers.join(" → "),
        cell(&model["loss"]),
        cell(&model["optimizer"])
    );
    // Records from before the backend was recorded have none.
    match model["backend"].as_str() {
        Some(backend) => format!("{line}; backend {backend}"),
        None => line,
    }
}

/// `(x, y)` of `key` in every epoch record that has it as a number (NaN where it is null).
fn curve(epochs: &[Value], key: impl Fn(&Value) -> Option<&Value>) -> Vec<(f64, f64)> {
    epochs
        .iter()
        .filter_map(|r| {
            let x = r["epoch"].as_f64()?;
            let v = key(r)?;
            (v.is_number() || v.is_null()).then(|| (x, v.as_f64().unwrap_or(f64::NAN)))
        })
        .collect()
}

/// The trace as a page of plots: learning curves, then per-layer gradient norms (log scale),
/// weight norms and dead ReLU fractions over the epochs.
fn plots(subject: &str, seed: u64, summary: &str, epochs: &[Value]) -> Report {
    let mut scalars: Vec<String> = Vec::new();
    for rec in epochs {
        for (k, v) in rec.as_object().into_iter().flatten() {
            if v.is_number() && k != "epoch" && !scalars.contains(k) {
                scalars.push(k.clone());
            }
        }
    }
    let series = |keys: &[&String]| -> Vec<(String, Vec<(f64, f64)>)> {
        keys.iter()
            .map(|k| ((*k).clone(), curve(epochs, |r| r.get(k.as_str()))))
            .collect()
    };
    let (losses, metrics): (Vec<&String>, Vec<&String>) =
        scalars.iter().partition(|k| k.contains("loss"));
    let mut curves = Section {
        heading: "Learning curves".into(),
        paragraphs: vec![summary.to_string()],
        ..Section::default()
    };
    for (name, title, keys) in [("loss", "Loss", &losses), ("metrics", "Metrics", &metrics)] {
        if !keys.is_empty() {
            curves.figures.push(Figure {
                name: name.into(),
                caption: format!("{title} per epoch"),
                svg: svg::line_chart(title, "epoch", name, &series(keys), false),
            });
        }
    }
    let mut sections = vec![curves];
    let layer_names: Vec<String> = epochs
        .first()
        .and_then(|r| r["layers"].as_array())
        .into_iter()
        .flatten()
        .map(|l| {
            let act = l["act"]
                .as_str()
                .map(|a| format!(" {a}"))
                .unwrap_or_default();
            format!("{} {}{act}", cell(&l["name"]), cell(&l["kind"]))
        })
        .collect();
    if !layer_names.is_empty() {
        let per_layer = |field: &str| -> Vec<(String, Vec<(f64, f64)>)> {
            layer_names
                .iter()
                .enumerate()
                .map(|(i, n)| (n.clone(), curve(epochs, |r| r["layers"].get(i)?.get(field))))
                .collect()
        };
        let mut layers = Section {
            heading: "Layers".into(),
            ..Section::default()
        };
        for (field, title, log) in [
            ("grad_norm", "Gradient norm per layer", true),
            ("weight_norm", "Weight norm per layer", false),
            ("dead_frac", "Dead ReLU fraction per layer", false),
        ] {
            let data = per_layer(field);
            if data
                .iter()
                .any(|(_, p)| p.iter().any(|(_, y)| y.is_finite() && *y != 0.0))
            {
                layers.figures.push(Figure {
                    name: field.into(),
                    caption: title.into(),
                    svg: svg::line_chart(title, "epoch", field, &data, log),
                });
            }
        }
        sections.push(layers);
    }
    Report {
        title: format!("{subject} seed {seed}: training dynamics"),
        sections,
    }
}

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
            let mut keys: Vec<String> = vec!["epoch".into()];
            for rec in &e.epochs {
                // Scalars only: `layers` has its own table, a Keras fit's `model` its own line.
                for (k, v) in rec.as_object().into_iter().flatten() {
                    let scalar = !(v.is_object() || v.is_array());
                    if scalar && k != "epoch" && !keys.contains(k) {
                        keys.push(k.clone());
                    }
                }
            }
            let mut rows = vec![keys.clone()];
            for rec in &e.epochs {
                rows.push(keys.iter().map(|k| cell(&rec[k.as_str()])).collect());
            }
            print!("{}", render(&rows));
            let first = &e.epochs[0];
            if let Some(model) = first.get("model") {
                println!("\nmodel (Keras): {}", model_line(model));
            }
            let last = &e.epochs[e.epochs.len() - 1];
            if first.get("layers").is_some() {
                println!(
                    "\nlayers at epoch {}:\n{}",
                    cell(&first["epoch"]),
                    layer_table(first)
                );
                if e.epochs.len() > 1 {
                    println!(
                        "layers at epoch {}:\n{}",
                        cell(&last["epoch"]),
                        layer_table(last)
                    );
                }
            }
            let nan: Vec<String> = e
                .epochs
                .iter()
                .filter(|r| r["nan"] == true)
                .map(|r| cell(&r["epoch"]))
                .collect();
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
