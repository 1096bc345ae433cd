//! One whole repair, as `reprolab repair` and `bench repair` run it: the faulty config's
//! trainings (the budget's time reference, cached for validation), a search by one [`Engine`],
//! validation of the best patch on the holdout split, and optionally its minimisation.
//! Localisation reaches the engines that use it (`guided`, `llm-refine`) as a function, so this
//! crate does not depend on the localisation crate.

use std::sync::Arc;

use reprolab_core::manifest::Subject;
use reprolab_core::{Split, Suspect};
use reprolab_llm::ChatModel;
use reprolab_search::{self as search, Budget, Objective, SearchResult, SearchSettings, Trace};
use serde::Serialize;

use crate::llm::{LlmRepairOptions, Suggestion, llm_repair};
use crate::{Minimized, RepairError, RulesResult, Validation, guided, minimize, rules, validate};

/// A repair engine, by the name reports and result files use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    Random,
    Tpe,
    Bohb,
    Rules,
    Guided,
    Llm,
    #[serde(rename = "llm-refine")]
    LlmRefine,
}

impl Engine {
    /// The engine's name as the command line and reports write it (`llm-refine`).
    pub fn name(self) -> &'static str {
        match self {
            Engine::Random => "random",
            Engine::Tpe => "tpe",
            Engine::Bohb => "bohb",
            Engine::Rules => "rules",
            Engine::Guided => "guided",
            Engine::Llm => "llm",
            Engine::LlmRefine => "llm-refine",
        }
    }

    /// Whether the engine asks a model (and needs one).
    pub fn needs_llm(self) -> bool {
        matches!(self, Engine::Llm | Engine::LlmRefine)
    }
}

/// What to run.
pub struct RepairSpec {
    pub engine: Engine,
    pub budget: Budget,
    pub seed: u64,
    /// Trainings per config for validation (and of the faulty config for the time reference).
    pub runs: usize,
    pub minimize: bool,
    pub stop_at: Option<f64>,
    pub parallel: usize,
    /// The model of the LLM engines, and how they ask it.
    pub llm: Option<Arc<dyn ChatModel>>,
    pub llm_options: LlmRepairOptions,
}

/// Everything one repair produced.
#[derive(Debug, Serialize)]
pub struct RepairRun {
    pub engine: Engine,
    /// The faulty config's mean training time that the budget multiplies.
    pub time_ref_s: f64,
    pub search: SearchResult,
    /// What the rules engine saw and tried.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rules: Option<RulesResult>,
    /// The validation of the best patch; `None` when the search found nothing better than the
    /// faulty config.
    pub validation: Option<Validation>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub minimized: Option<MinimizedRun>,
    /// The LLM engines' answers and what became of each.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub llm: Option<LlmRun>,
}

#[derive(Debug, Serialize)]
pub struct LlmRun {
    pub suggestions: Vec<Suggestion>,
    /// Why the model stopped being asked early, if it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct MinimizedRun {
    pub result: Minimized,
    pub validation: Validation,
}

/// Search, validate, minimise. `localize` ranks suspects from a traced training of the
/// faulty config (used by `guided` and `llm-refine`).
pub async fn repair<O: Objective>(
    obj: &O,
    subject: &Subject,
    spec: &RepairSpec,
    localize: impl Fn(&Subject, &Trace) -> Vec<Suspect>,
) -> Result<RepairRun, RepairError> {
    // The faulty config's validation runs double as the budget's time reference (and are cached
    // for the validation below).
    let seeds: Vec<u64> = (0..spec.runs as u64).collect();
    let faulty = obj
        .evaluate(&subject.config, &seeds, Split::Holdout, None)
        .await
        .map_err(RepairError::Objective)?;
    let time_ref_s = faulty.iter().map(|(_, d)| d).sum::<f64>() / faulty.len().max(1) as f64;
    let settings = SearchSettings {
        budget: spec.budget,
        seed: spec.seed,
        stop_at: spec.stop_at,
        parallel: spec.parallel,
        time_ref_s: Some(time_ref_s),
    };
    let mut llm = None;
    let (search, rules) = match spec.engine {
        Engine::Random => (
            search::search(
                obj,
                subject,
                &mut search::RandomSampler::new(spec.seed),
                &settings,
            )
            .await?,
            None,
        ),
        Engine::Tpe => (
            search::search(
                obj,
                subject,
                &mut search::TpeSampler::new(spec.seed, subject.metric.goal),
                &settings,
            )
            .await?,
            None,
        ),
        Engine::Bohb => (search::bohb(obj, subject, &settings).await?, None),
        Engine::Rules => {
            let r = rules(obj, subject, &settings).await?;
            (r.result.clone(), Some(r))
        }
        Engine::Guided => (guided(obj, subject, &settings, &localize).await?, None),
        Engine::Llm | Engine::LlmRefine => {
            let model = spec.llm.as_deref().ok_or_else(|| {
                RepairError::Settings(format!(
                    "the {} engine needs a model: pass --llm",
                    spec.engine.name()
                ))
            })?;
            let refine = spec.engine == Engine::LlmRefine;
            let localisation = if refine {
                let trace = obj
                    .trace(&subject.config, settings.seed)
                    .await
                    .map_err(RepairError::Objective)?;
                Some(localisation_text(&localize(subject, &trace)))
            } else {
                None
            };
            let opts = LlmRepairOptions {
                rounds: if refine {
                    spec.llm_options.rounds.max(2)
                } else {
                    1
                },
                ..spec.llm_options.clone()
            };
            let r = llm_repair(
                obj,
                subject,
                model,
                &settings,
                &opts,
                localisation.as_deref(),
            )
            .await?;
            llm = Some(LlmRun {
                suggestions: r.suggestions,
                error: r.llm_error,
            });
            (r.search, None)
        }
    };
    let validation = match search.patch() {
        Some(patch) => Some(validate(obj, subject, patch, spec.runs).await?),
        None => None,
    };
    let minimized = match (&validation, search.patch()) {
        (Some(v), Some(patch)) if spec.minimize && v.significant && v.changed.len() > 1 => {
            let result = minimize(obj, subject, patch, spec.runs).await?;
            let validation = validate(obj, subject, &result.patch, spec.runs).await?;
            Some(MinimizedRun { result, validation })
        }
        _ => None,
    };
    Ok(RepairRun {
        engine: spec.engine,
        time_ref_s,
        search,
        rules,
        validation,
        minimized,
        llm,
    })
}

/// What `llm-refine` tells the model of localisation: the ranked suspects, one per line.
pub fn localisation_text(suspects: &[Suspect]) -> String {
    suspects
        .iter()
        .take(8)
        .map(|s| {
            let mut line = format!(
                "- {} (confidence {:.2}): {}",
                s.label, s.confidence, s.evidence
            );
            if let Some(sug) = &s.suggestion {
                line.push_str(&format!("; suggested: {sug}"));
            }
            line
        })
        .collect::<Vec<_>>()
        .join("\n")
}
