//! `reprolab localize`: ranked suspected faults from static rules and one traced training.

use std::process::ExitCode;

use anyhow::{Context, Result, anyhow};
use reprolab_core::manifest::{Config, Subject};
use reprolab_exec::Mode;
use reprolab_llm::ChatModel;
use reprolab_localize::llm::{LlmFlOptions, LlmLocalization};
use reprolab_localize::{self as loc, Suspect};
use serde_json::json;

use crate::cli::{Global, LocalizeArgs, LocalizeEngine};
use crate::context;
use crate::table::render;
use reprolab_exec::Evaluator;

/// What an engine found.
pub struct Localized {
    pub suspects: Vec<Suspect>,
    /// The traced training's duration, when the engine trained.
    pub training_s: Option<f64>,
    /// Per-epoch records the traced training logged, when the engine trained (0: the program
    /// does not call `reprolab.log_epoch`, so the dynamic monitors had nothing to read).
    pub epochs: Option<usize>,
    /// The LLM engine's answers, mapping and vote.
    pub llm: Option<LlmLocalization>,
    /// Config keys the engines read from the traced program instead (a Keras model's layers,
    /// loss, optimizer: `reprolab_localize::program`), because config.json does not name them.
    pub from_program: Vec<String>,
}

/// The engine's suspects for `config`; the trace (when the engine needs one) is one training;
/// the LLM engine needs `llm`.
pub async fn suspects(
    ev: Option<&Evaluator>,
    llm: Option<(&dyn ChatModel, &LlmFlOptions)>,
    subject: &Subject,
    config: &Config,
    engine: LocalizeEngine,
    seed: u64,
) -> Result<Localized> {
    if engine == LocalizeEngine::Llm {
        let (model, opts) =
            llm.ok_or_else(|| anyhow!("the llm engine needs a model: pass --llm"))?;
        let found = loc::llm::llm_localize(model, subject, config, opts)
            .await
            .with_context(|| format!("LLM localisation of {}", subject.name))?;
        return Ok(Localized {
            suspects: found.suspects.clone(),
            training_s: None,
            epochs: None,
            llm: Some(found),
            from_program: Vec::new(),
        });
    }
    let trace = match (engine, ev) {
        (LocalizeEngine::Static, _) => None,
        (_, None) => {
            let engine = super::serde_name(engine);
            return Err(anyhow!("the {engine} engine needs a training"));
        }
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
        LocalizeEngine::Llm => unreachable!("answered above"),
    };
    let from_program = trace.as_ref().map_or_else(Vec::new, |t| {
        loc::program::complete(config, &t.0)
            .from_program
            .into_iter()
            .collect()
    });
    Ok(Localized {
        suspects: list,
        from_program,
        epochs: trace.as_ref().map(|t| t.0.len()),
        training_s: trace.map(|t| t.1),
        llm: None,
    })
}

pub async fn run(g: &Global, a: &LocalizeArgs) -> Result<ExitCode> {
    let subject = context::load_subject(&a.subject)?;
    let (config, config_path) = context::load_config(&subject, a.config.as_deref())?;
    let ev = match a.engine {
        LocalizeEngine::Static | LocalizeEngine::Llm => None,
        _ => Some(context::evaluator(g).await?),
    };
    let model = if a.engine == LocalizeEngine::Llm {
        Some(crate::llm::chat_model(g, &a.llm)?)
    } else {
        None
    };
    let opts = a.llm_localize.options();
    let sp = crate::progress::spinner("localize", g.json);
    sp.set_message(match (&ev, &model) {
        (Some(_), _) => "one instrumented training",
        (None, Some(_)) => "asking the LLM",
        (None, None) => "static rules",
    });
    let found = suspects(
        ev.as_ref(),
        model.as_deref().map(|m| (m, &opts)),
        &subject,
        &config,
        a.engine,
        a.seed,
    )
    .await?;
    let (list, trained_s) = (found.suspects, found.training_s);
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
                "epochs_recorded": found.epochs, "llm": found.llm,
                "from_program": found.from_program,
            }))?
        );
    } else {
        println!(
            "{} with {} ({} engine{})\n",
            subject.name,
            config_path.display(),
            super::serde_name(a.engine),
            trained_s.map_or(String::new(), |s| format!(", one training of {s:.2} s"))
        );
        if let Some(l) = &found.llm {
            println!(
                "{} answers, {} reasons, {:.0}% mapped to fault types, stability {:.2}",
                l.answers.len(),
                l.answers.iter().map(|a| a.reasons.len()).sum::<usize>(),
                100.0 * l.mapped_fraction,
                l.stability
            );
            for u in l.unmapped.iter().take(5) {
                println!(
                    "  unmapped advice: {}",
                    u.chars().take(160).collect::<String>()
                );
            }
            println!();
        }
        if !found.from_program.is_empty() {
            println!(
                "read from the traced model, not in {}: {}\n",
                config_path.display(),
                found.from_program.join(", ")
            );
        }
        if found.epochs == Some(0) {
            println!(
                "note: the training logged no epochs (the program does not call \
                 reprolab.log_epoch(epoch, loss=…, acc=…) nor reprolab.watch(model)), so the \
                 dynamic monitors had nothing to read and only the static rules, which read \
                 config.json, judged it. See README, \"Bring your own training script\".\n"
            );
        }
        if list.is_empty() {
            println!(
                "no suspect: nothing in the config{} looks faulty to these engines",
                if found.epochs == Some(0) {
                    ""
                } else {
                    " or the training"
                }
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
