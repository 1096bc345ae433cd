//! `reproduce REPORT`: a model's loop over a prepared report, and what follows its best
//! attempt: the shortest script that still shows the bug, a model's opinion where the rules see
//! only numbers, and the files. The bench's per-bug loop shares the model's side
//! ([`Model`], [`code_context`], [`origin`]).

use std::path::{Path, PathBuf};

use reprolab_llm::{ChatModel, Meter, MeterSnapshot};
use serde_json::json;

use crate::agent::{self, AgentOptions, Attempt, Reproduction};
use crate::context::Snippet;
use crate::minimize::shorten;
use crate::opinion;
use crate::outputs::{self, Judged, OutputError};
use crate::prepare::Prepared;
use crate::progress::Progress;
use crate::run::ScriptRunner;

/// The model that writes reproductions, and how it is asked.
pub struct Model<'a> {
    pub chat: &'a dyn ChatModel,
    /// Counts the calls, tokens and dollars of `chat`.
    pub meter: &'a Meter,
    pub agent: &'a AgentOptions,
    /// Definitions of code context in the prompt (0: none).
    pub context: usize,
}

/// What a generate run produced.
pub struct Generated {
    pub reproduction: Reproduction,
    /// `attempts.json`: every answer, pre-check and verdict.
    pub attempts_path: PathBuf,
    /// The model's usage after the loop.
    pub meter: MeterSnapshot,
    /// The best attempt, minimised, with its opinion, as written; `None` when no attempt was
    /// judged.
    pub judged: Option<Judged>,
    /// How the script came about (also when none was judged).
    pub origin: serde_json::Value,
}

/// The code context for the prompt (see [`Prepared::code_context`]). Indexing problems are a
/// note, never the end of the run: the model can work without context.
pub async fn code_context(p: &Prepared, k: usize, progress: &dyn Progress) -> Vec<Snippet> {
    p.code_context(k).await.unwrap_or_else(|e| {
        progress.note(&format!("no code context: {}", reprolab_core::chain(&e)));
        Vec::new()
    })
}

/// What the verdict's origin says about the loop: the model, the attempt shown, with `meter`
/// the loop's length, stop and usage, and the context (each snippet's file, name, score and
/// why).
pub fn origin(
    model: &str,
    result: &Reproduction,
    meter: Option<&MeterSnapshot>,
) -> serde_json::Value {
    let mut origin = json!({"model": model, "attempt": result.best().map(|b| b.number)});
    if let Some(meter) = meter {
        origin["attempts"] = json!(result.attempts.len());
        origin["stopped"] = json!(result.stopped);
        origin["llm"] = json!(meter);
    }
    let context: Vec<serde_json::Value> = result
        .context
        .iter()
        .map(|s| json!({"file": s.file, "name": s.qualname, "score": s.score, "why": s.why}))
        .collect();
    origin["context"] = context.into();
    origin
}

/// The best attempt as a judged script, when it was judged.
pub fn best(result: &Reproduction, origin: serde_json::Value) -> Option<Judged> {
    let b = result.best()?;
    let (script, verdict) = (b.script.clone()?, b.verdict.clone()?);
    Some(Judged::new(script, b.runs.clone(), verdict, origin))
}

/// Run the loop on `p` and finish its best attempt: minimised within `minimize` candidates
/// (when given and it reproduces the bug), with the model's opinion on a silent report, all
/// written into `out`. `on_attempt` sees each attempt as it is judged.
pub async fn generate(
    model: &Model<'_>,
    p: &Prepared,
    runner: &ScriptRunner<'_>,
    minimize: Option<usize>,
    out: &Path,
    progress: &dyn Progress,
    on_attempt: &mut dyn FnMut(&Attempt),
) -> Result<Generated, OutputError> {
    let snippets = code_context(p, model.context, progress).await;
    let case = p.case(&snippets);
    let result = agent::reproduce(model.chat, &case, runner, model.agent, on_attempt).await;
    let attempts_path = outputs::write_attempts(out, &result)?;
    let meter = model.meter.snapshot();
    let origin = origin(&model.chat.name(), &result, Some(&meter));
    let mut judged = best(&result, origin.clone());
    if let Some(j) = judged.take() {
        let j = match (minimize, j.verdict.reproduced) {
            (Some(budget), true) => {
                let number = result.best().map_or(0, |b| b.number);
                let label = format!("reproduce {} attempt {number}", p.report.id);
                let s = shorten(p, runner, &j.script, &label, budget, progress).await;
                j.shortened(s)
            }
            _ => j,
        };
        let j = with_opinion(model.chat, p, j).await;
        j.write(p, out)?;
        judged = Some(j);
    }
    Ok(Generated {
        reproduction: result,
        attempts_path,
        meter,
        judged,
        origin,
    })
}

/// Where the rules see only numbers, the model's reading is kept beside the verdict.
async fn with_opinion(model: &dyn ChatModel, p: &Prepared, mut j: Judged) -> Judged {
    if opinion::wanted(p.facts.symptom) {
        let observed = outputs::observed_text(&j.runs, &j.verdict);
        j.opinion = Some(opinion::ask(model, &p.report.text, &j.script, &observed).await);
    }
    j
}
