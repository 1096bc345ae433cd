//! `reprolab localize`: ranked suspected faults from static rules and one traced training.

use std::process::ExitCode;

use anyhow::{Result, anyhow};
use reprolab_core::manifest::{Config, Subject};
use reprolab_exec::Mode;
use reprolab_localize::{self as loc, Suspect};
use serde_json::json;

use crate::cli::{Global, LocalizeArgs, LocalizeEngine};
use crate::context;
use crate::table::render;
use reprolab_exec::Evaluator;

/// The engine's suspects for `config`; the trace (when the engine needs one) is one training.
pub async fn suspects(
    ev: Option<&Evaluator>,
    subject: &Subject,
    config: &Config,
    engine: LocalizeEngine,
    seed: u64,
) -> Result<(Vec<Suspect>, Option<f64>)> {
    let trace = match (engine, ev) {
        (LocalizeEngine::Static, _) => None,
        (_, None) => return Err(anyhow!("the {engine:?} engine needs a training")),
        (_, Some(ev)) => {
            let evals = ev
                .run(subject, config, &[seed], Mode::Trace, &mut |_| {})
                .await?;
            Some((evals[0].record.epochs.clone(), evals[0].record.duration_s))
        }
    };
    let list = match engine {
        LocalizeEngine::Static => loc::static_rules(subject, config),
        LocalizeEngine::Dynamic => {
            loc::dynamic_monitors(subject, config, &trace.as_ref().unwrap().0)
        }
        LocalizeEngine::All => {
            loc::localize(subject, config, trace.as_ref().map(|t| t.0.as_slice()))
        }
    };
    Ok((list, trace.map(|t| t.1)))
}

pub async fn run(g: &Global, a: &LocalizeArgs) -> Result<ExitCode> {
    let subject = context::load_subject(&a.subject)?;
    let (config, config_path) = context::load_config(&subject, a.config.as_deref())?;
    let ev = match a.engine {
        LocalizeEngine::Static => None,
        _ => Some(context::evaluator(g).await?),
    };
    let sp = crate::progress::spinner("localize", g.json);
    sp.set_message(if ev.is_some() {
        "one instrumented training"
    } else {
        "static rules"
    });
    let (list, trained_s) = suspects(ev.as_ref(), &subject, &config, a.engine, a.seed).await?;
    sp.finish_and_clear();
    if let Some(ev) = ev {
        ev.shutdown().await;
    }
    let answer = loc::rank_to_types(&list, 5);
    if g.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({
                "subject": subject.name, "config_path": config_path, "engine": a.engine,
                "suspects": list, "answer": answer.iter().map(|l| l.to_string()).collect::<Vec<_>>(),
                "threshold": loc::THRESHOLD, "training_s": trained_s,
            }))?
        );
    } else {
        println!(
            "{} with {} ({:?} engine{})\n",
            subject.name,
            config_path.display(),
            a.engine,
            trained_s.map_or(String::new(), |s| format!(", one training of {s:.2} s"))
        );
        if list.is_empty() {
            println!(
                "no suspect: nothing in the config or the training looks faulty to these engines"
            );
        } else {
            let mut rows = vec![
                ["#", "fault", "confidence", "suggestion", "evidence"]
                    .map(String::from)
                    .to_vec(),
            ];
            for (i, s) in list.iter().enumerate() {
                rows.push(vec![
                    (i + 1).to_string(),
                    s.label.to_string(),
                    format!("{:.2}", s.confidence),
                    s.suggestion.clone().unwrap_or_default(),
                    format!("{} [{}]", s.evidence, s.source),
                ]);
            }
            print!("{}", render(&rows));
            println!(
                "\nanswer (confidence >= {}): {}",
                loc::THRESHOLD,
                if answer.is_empty() {
                    "-".into()
                } else {
                    answer
                        .iter()
                        .map(|l| l.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
