//! One whole repair, as `reprolab repair` and `bench repair` run it: the faulty config's
//! trainings (the budget's time reference, cached for validation), a search by one [`Engine`],
//! validation of the best patch on the holdout split, optionally its minimisation, and the
//! verdict: repaired only when the holdout validation confirms the patch (significantly better
//! than the faulty config), whatever the search split said.
//! Localisation reaches the engines that use it (`guided`, `llm-refine`) as a function, so this
//! crate does not depend on the localisation crate.
//!
//! A time budget `m×` multiplies the larger of the faulty config's and the subject's default
//! config's mean training time (its `[fix]`, when it has one; only its training time is used):
//! `m×` buys at least `m` full trainings of the default config, so that a fault whose own
//! training is short (few epochs, a huge batch) gets the same work as any other.

use std::sync::Arc;

use reprolab_core::manifest::Subject;
use reprolab_core::{Config, Split, Suspect};
use reprolab_llm::ChatModel;
use reprolab_search::join::join_all;
use reprolab_search::{self as search, Budget, Objective, SearchResult, SearchSettings, Trace};
use reprolab_stats::Verdict;
use serde::Serialize;

use crate::guided::{suggested_configs, suspicion_prior};
use crate::llm::{LlmRepairOptions, Suggestion, llm_repair};
use crate::rules::{RulesOptions, rules_with};
use crate::{Minimized, RepairError, RulesResult, Validation, guided, minimize, validate};

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
    /// In-training pruning of the search's trials (`random`, `tpe` and `bohb`; the other
    /// engines train every trial to its end). Validation and minimisation never prune.
    pub prune: Option<search::PercentilePruner>,
}

impl Engine {
    /// Whether the engine's search prunes trials when asked to (`RepairSpec::prune`).
    pub fn prunes(self) -> bool {
        matches!(self, Engine::Random | Engine::Tpe | Engine::Bohb)
    }
}

/// The budget a repair had, in the units people read: the multiple, and the seconds and
/// trainings it bought.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BudgetReport {
    /// As given: `10x` or `50 trials`.
    pub spec: String,
    /// The multiple of a time budget.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub multiple: Option<f64>,
    /// The faulty config's mean training time (its validation trainings), seconds.
    pub faulty_s: f64,
    /// The default config's mean training time (the subject's `[fix]`), seconds; `None`
    /// without one (the faulty config is the default then).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_s: Option<f64>,
    /// The training time one unit of the multiple stands for: the larger of the two.
    pub reference_s: f64,
    /// The time budget, seconds of summed training time: multiple × reference_s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seconds: Option<f64>,
    /// What the time budget buys in full trainings of the default config (the faulty config
    /// without one): at least the multiple.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trainings: Option<f64>,
    /// Summed training time the search spent, seconds (it may pass `seconds` by less than one
    /// trial).
    pub spent_s: f64,
}

impl BudgetReport {
    /// The budget of `budget` over these training times; `spent_s` is filled in after the search.
    pub fn new(budget: Budget, faulty_s: f64, default_s: Option<f64>) -> BudgetReport {
        let reference_s = default_s.map_or(faulty_s, |d| d.max(faulty_s));
        let multiple = match budget {
            Budget::TimeMultiple(m) => Some(m),
            Budget::Trials(_) => None,
        };
        let seconds = multiple.map(|m| m * reference_s);
        let unit = default_s.unwrap_or(faulty_s);
        BudgetReport {
            spec: budget.to_string(),
            multiple,
            faulty_s,
            default_s,
            reference_s,
            seconds,
            trainings: seconds.filter(|_| unit > 0.0).map(|s| s / unit),
            spent_s: 0.0,
        }
    }

    /// One line for people, e.g. `10x = 13.0 s of training = 10.0 trainings of the default
    /// config (1.30 s each; the faulty config trains in 0.06 s)`.
    pub fn describe(&self) -> String {
        let Some(seconds) = self.seconds else {
            return format!(
                "{} (the faulty config trains in {:.2} s)",
                self.spec, self.faulty_s
            );
        };
        let what = match self.default_s {
            Some(d) => format!(
                "trainings of the default config ({d:.2} s each; the faulty config trains in {:.2} s)",
                self.faulty_s
            ),
            None => format!(
                "trainings of the faulty config ({:.2} s each)",
                self.faulty_s
            ),
        };
        format!(
            "{} = {seconds:.1} s of training = {:.1} {what}",
            self.spec,
            self.trainings.unwrap_or(0.0)
        )
    }
}

/// Everything one repair produced.
#[derive(Debug, Serialize)]
pub struct RepairRun {
    pub engine: Engine,
    /// The training time the budget multiplies: the larger of the faulty config's and the
    /// default config's mean training time (see [`BudgetReport`]).
    pub time_ref_s: f64,
    pub budget: BudgetReport,
    /// Whether the holdout validation confirmed a patch: significantly better than the faulty
    /// config (Wilcoxon p < 0.05, |d| ≥ 0.5, in the goal's direction). Never true on the
    /// search split alone.
    pub repaired: bool,
    /// The verdict in words, e.g. `not repaired: the best patch found was not better on the
    /// holdout (IR -0.55, p = 0.43, d = -0.31)`.
    pub verdict: String,
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

impl RepairRun {
    /// The patch the verdict is about: the minimised patch when the holdout confirmed it, else
    /// the search's best patch (`None` when the search found none).
    pub fn final_patch(&self) -> Option<&Config> {
        match &self.minimized {
            Some(m) if m.validation.significant => Some(&m.result.patch),
            _ => self.search.patch(),
        }
    }

    /// The validation of [`final_patch`](RepairRun::final_patch).
    pub fn final_validation(&self) -> Option<&Validation> {
        match &self.minimized {
            Some(m) if m.validation.significant => Some(&m.validation),
            _ => self.validation.as_ref(),
        }
    }
}

/// `p = 0.012` (`p < 0.001` below).
fn p_text(p: f64) -> String {
    if p < 0.001 {
        "p < 0.001".into()
    } else {
        format!("p = {p:.3}")
    }
}

/// `IR 0.93, p = 0.002, d = 1.85` (IR left out when there is none).
fn stats_text(v: &Validation) -> String {
    let ir = v.ir.map_or(String::new(), |x| format!("IR {x:.2}, "));
    format!("{ir}{}, d = {:.2}", p_text(v.p_value), v.cohens_d)
}

/// Whether the repair is confirmed, and why, in words: repaired only when the holdout
/// validation of the final patch says significantly better than the faulty config.
pub fn verdict(
    validation: Option<&Validation>,
    minimized: Option<&MinimizedRun>,
) -> (bool, String) {
    let Some(v) = validation else {
        return (
            false,
            "not repaired: no trial beat the faulty config on the search split".into(),
        );
    };
    if !v.significant {
        let how = match v.verdict {
            Verdict::Worse => "was significantly worse",
            _ => "was not significantly better",
        };
        return (
            false,
            format!(
                "not repaired: the best patch found {how} on the holdout ({}, {} retrainings each)",
                stats_text(v),
                v.runs
            ),
        );
    }
    match minimized {
        Some(m) if m.validation.significant => (
            true,
            format!(
                "repaired: the minimised patch ({} of {} changes) is significantly better than the faulty config on the holdout ({})",
                m.validation.changed.len(),
                v.changed.len(),
                stats_text(&m.validation)
            ),
        ),
        Some(m) => (
            true,
            format!(
                "repaired: the patch is significantly better than the faulty config on the holdout ({}); its minimised version was not ({}), so the full patch is kept",
                stats_text(v),
                stats_text(&m.validation)
            ),
        ),
        None => (
            true,
            format!(
                "repaired: the patch is significantly better than the faulty config on the holdout ({})",
                stats_text(v)
            ),
        ),
    }
}

/// Mean duration of `runs`, seconds.
fn mean_duration(runs: &[(Option<f64>, f64)]) -> f64 {
    runs.iter().map(|(_, d)| d).sum::<f64>() / runs.len().max(1) as f64
}

/// Search, validate, minimise. `localize` ranks suspects from a traced training of the
/// faulty config (used by `guided` and `llm-refine`).
pub async fn repair<O: Objective>(
    obj: &O,
    subject: &Subject,
    spec: &RepairSpec,
    localize: impl Fn(&Subject, &Trace) -> Vec<Suspect>,
) -> Result<RepairRun, RepairError> {
    // The faulty config's and the default config's validation runs double as the budget's
    // time reference (and are cached for the validation below).
    let seeds: Vec<u64> = (0..spec.runs as u64).collect();
    let mut configs = vec![&subject.config];
    if let Some(fix) = &subject.fix {
        configs.push(&fix.config);
    }
    let mut timed = Vec::new();
    for r in join_all(
        configs
            .iter()
            .map(|c| obj.evaluate(c, &seeds, Split::Holdout, None))
            .collect(),
    )
    .await
    {
        timed.push(mean_duration(&r.map_err(RepairError::Objective)?));
    }
    let default_s = timed.get(1).copied().filter(|d| d.is_finite() && *d > 0.0);
    let mut budget = BudgetReport::new(spec.budget, timed[0], default_s);
    let time_ref_s = budget.reference_s;
    let settings = SearchSettings {
        budget: spec.budget,
        seed: spec.seed,
        stop_at: spec.stop_at,
        parallel: spec.parallel,
        time_ref_s: Some(time_ref_s),
        prune: spec.prune.filter(|_| spec.engine.prunes()),
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
        Engine::Bohb => {
            // Localisation's suspects as bohb's prior over which hyperparameters to change, and
            // its suggested changes as the first configs proposed.
            let trace = obj
                .trace(&subject.config, settings.seed)
                .await
                .map_err(RepairError::Objective)?;
            let suspects = localize(subject, &trace);
            let opt = search::BohbOptions {
                prior: suspicion_prior(subject, &suspects),
                enqueued: suggested_configs(subject, &suspects),
                ..search::BohbOptions::default()
            };
            (
                search::bohb_with(obj, subject, &settings, &opt).await?,
                None,
            )
        }
        Engine::Rules => {
            let opt = RulesOptions {
                confirm_runs: spec.runs,
            };
            let r = rules_with(obj, subject, &settings, &opt).await?;
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
    budget.spent_s = search.spent_s;
    let (repaired, verdict) = verdict(validation.as_ref(), minimized.as_ref());
    Ok(RepairRun {
        engine: spec.engine,
        time_ref_s,
        budget,
        repaired,
        verdict,
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
