//! The LLM repair engines. `llm`: the study's prompt, `samples` answers at one temperature,
//! each answer read into a patch and trained once on the search split. `llm-refine`: the same
//! for `rounds` rounds, each round's prompt carrying the localisation result, the allowed
//! values and the measured outcome of every earlier attempt (generate–validate–refine).
//!
//! The caller validates the best trial on the holdout split like every other engine's, so an
//! LLM patch is judged by the same retrainings and the same test.

use std::collections::HashSet;

use reprolab_core::{Config, ProgramView, Subject};
use reprolab_llm::{ChatModel, ChatRequest, Message, parse};
use serde::{Deserialize, Serialize};

use super::coerce::{Rejection, coerce_patch};
use super::prompt::{Feedback, refine_prompt, repair_prompt};
use reprolab_search::space::apply_patch;
use reprolab_search::{Objective, SearchResult, SearchSettings, Stop, Study, Trial};

use crate::RepairError;
use crate::metrics::patch_diff;

/// How the model is asked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LlmRepairOptions {
    /// Answers per round (the request's `n`).
    pub samples: u32,
    pub temperature: f64,
    /// 1 for `llm`; more for `llm-refine`.
    pub rounds: u32,
    pub max_tokens: u32,
}

impl Default for LlmRepairOptions {
    fn default() -> Self {
        LlmRepairOptions {
            samples: 5,
            temperature: 0.5,
            rounds: 1,
            max_tokens: 1024,
        }
    }
}

/// One answer of the model and what became of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Suggestion {
    pub round: u32,
    pub sample: u32,
    /// The model's raw answer.
    pub answer: String,
    /// The accepted changes (empty when nothing usable was proposed).
    pub patch: Config,
    pub rejected: Vec<Rejection>,
    /// Why no JSON could be read from the answer, if none could.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parse_error: Option<String>,
    /// The trial that trained it; `None` when it was unusable, a repeat, or out of budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trial: Option<usize>,
}

/// A search result with the model's answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LlmRepairResult {
    pub search: SearchResult,
    pub suggestions: Vec<Suggestion>,
    /// Why the model stopped being asked early (budget exceeded, provider error), if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llm_error: Option<String>,
}

/// Runs `llm` (`opts.rounds == 1`) or `llm-refine`. `localisation` is the ranked suspect list
/// shown to the model from the second prompt on (`llm-refine` only).
pub async fn llm_repair<O: Objective>(
    obj: &O,
    subject: &Subject,
    model: &dyn ChatModel,
    settings: &SearchSettings,
    opts: &LlmRepairOptions,
    localisation: Option<&str>,
) -> Result<LlmRepairResult, RepairError> {
    let view = ProgramView::of(subject, &subject.config)
        .map_err(|e| RepairError::Settings(reprolab_core::chain(&e)))?;
    let refine = opts.rounds > 1;
    let engine = if refine { "llm-refine" } else { "llm" };
    let goal = subject.metric.goal;
    let mut study = Study::start(obj, subject, settings).await?;
    let faulty_value = study.trials()[0].value;
    let mut stop = study.reached(&study.trials()[0]).then_some(Stop::StopAt);
    let mut seen: HashSet<String> = HashSet::from([subject.config.canonical_json()]);
    let mut suggestions = Vec::new();
    let mut history: Vec<Feedback> = Vec::new();
    let mut llm_error = None;
    for round in 1..=opts.rounds.max(1) {
        if stop.is_some() {
            break;
        }
        let prompt = if refine {
            refine_prompt(
                &view,
                goal,
                &subject.metric.name,
                &subject.space,
                localisation,
                &history,
            )
        } else {
            repair_prompt(&view, goal, &subject.metric.name)
        };
        let request = ChatRequest {
            messages: vec![Message::user(prompt)],
            temperature: opts.temperature,
            max_tokens: opts.max_tokens,
            n: opts.samples.max(1),
            seed: Some(settings.seed.wrapping_add(round as u64)),
            json_mode: false,
        };
        let response = match model.chat(&request).await {
            Ok(r) => r,
            Err(e) => {
                llm_error = Some(e.to_string());
                stop = Some(Stop::Llm);
                break;
            }
        };
        // Read every answer; queue the new, usable ones.
        let first = suggestions.len();
        let mut queue: Vec<(usize, Config)> = Vec::new();
        for (i, choice) in response.choices.iter().enumerate() {
            let mut s = Suggestion {
                round,
                sample: i as u32,
                answer: choice.text.clone(),
                patch: Config::default(),
                rejected: Vec::new(),
                parse_error: None,
                trial: None,
            };
            match parse::extract_json(&choice.text) {
                Ok(value) => {
                    let c = coerce_patch(&subject.space, &subject.config, &value);
                    s.patch = c.patch;
                    s.rejected = c.rejected;
                }
                Err(e) => s.parse_error = Some(e.to_string()),
            }
            if !s.patch.is_empty() {
                let config = apply_patch(&subject.config, &s.patch);
                if seen.insert(config.canonical_json()) {
                    queue.push((suggestions.len(), config));
                }
            }
            suggestions.push(s);
        }
        // Train them, as many at a time as the settings allow, within the budget.
        // Fewer than `parallel` at a time when the time left holds fewer (Meter::allowance).
        let mut next = 0;
        while next < queue.len() {
            let k = study.allowance(settings.parallel.max(1).min(queue.len() - next));
            if k == 0 {
                stop = Some(Stop::Budget);
                break;
            }
            let chunk = &queue[next..next + k];
            next += k;
            let items = chunk.iter().map(|(_, c)| (c.clone(), None)).collect();
            for ((si, _), t) in chunk.iter().zip(study.evaluate(obj, items).await?) {
                suggestions[*si].trial = Some(t.number);
                if study.tell(t) {
                    stop = Some(Stop::StopAt);
                }
            }
        }
        history.extend(
            suggestions[first..]
                .iter()
                .map(|s| feedback(s, &subject.config, study.trials(), faulty_value)),
        );
    }
    let search = study.finish(engine, stop.unwrap_or(Stop::Suggestions));
    Ok(LlmRepairResult {
        search,
        suggestions,
        llm_error,
    })
}

/// What the model is told about one of its answers.
fn feedback(
    s: &Suggestion,
    faulty: &Config,
    trials: &[Trial],
    faulty_value: Option<f64>,
) -> Feedback {
    let changes = patch_diff(faulty, &apply_patch(faulty, &s.patch))
        .iter()
        .map(|(k, from, to)| format!("{k}: {from} -> {to}"))
        .collect::<Vec<_>>()
        .join(", ");
    let base = faulty_value.map_or("failed".into(), |v| format!("{v:.4}"));
    let mut outcome = match s.trial.and_then(|n| trials.iter().find(|t| t.number == n)) {
        Some(t) => match t.value {
            Some(v) => format!("metric {v:.4} (faulty config: {base})"),
            None => "the training failed (crash, NaN or timeout)".to_string(),
        },
        None if s.patch.is_empty() => "no change the program accepts".to_string(),
        None => "not trained (a repeat of an earlier attempt, or no budget left)".to_string(),
    };
    if let Some(e) = &s.parse_error {
        outcome.push_str(&format!("; the answer held no readable JSON ({e})"));
    }
    for r in &s.rejected {
        outcome.push_str(&format!("; rejected {}: {}", r.key, r.reason));
    }
    Feedback { changes, outcome }
}
