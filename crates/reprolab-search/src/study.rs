//! The study: the faulty config is trial 0; then an engine asks for configs, the study trains
//! them together ([`Study::evaluate`]) and is told the results ([`Study::tell`]), until the
//! budget is spent or a trial reaches `stop_at`. [`search`] is the plain loop with a
//! [`Sampler`]: `parallel` configs asked, trained and told per round.

use reprolab_core::{Config, Goal, Split, Subject};
use serde::{Deserialize, Serialize};

use crate::budget::{Budget, Meter, SearchSettings};
use crate::join::join_all;
use crate::pruner::rank;
use crate::sampler::Sampler;
use crate::space::{EPOCHS_KEY, apply_patch, changed_count, count_at};
use crate::{Evaluated, Objective, SearchError, Trial, trial_seed};
use reprolab_core::fnum;

/// Why a search ended (the reasons of every engine built on the study).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stop {
    /// The budget is spent.
    Budget,
    /// A full-fidelity trial reached `stop_at`.
    StopAt,
    /// Rules: the faulty config's trace shows no symptom.
    NoSymptom,
    /// Rules: a re-trace of the repaired config shows no symptom left, and repeated
    /// trainings confirm its gain over the faulty config on the search split.
    Repaired,
    /// Rules: no symptom is left, but repeated trainings do not confirm a significant gain over
    /// the faulty config on the search split.
    Unconfirmed,
    /// Rules: no applicable fix improved on the best config so far.
    NoFix,
    /// LLM: every usable suggestion was trained.
    Suggestions,
    /// LLM: the model could not be asked further (token or cost budget, provider error).
    Llm,
}

/// Why the search stopped, in words for people.
impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Stop::Budget => "the budget is spent",
            Stop::StopAt => "a trial reached the target",
            Stop::NoSymptom => "the faulty config's trace shows no symptom",
            Stop::Repaired => {
                "the repaired config's trace shows no symptom left and its gain is significant on the search split"
            }
            Stop::Unconfirmed => {
                "no symptom left, but the gain over the faulty config is not significant on the search split"
            }
            Stop::NoFix => "no applicable fix improved on the best config",
            Stop::Suggestions => "every usable suggestion was trained",
            Stop::Llm => "the model could not be asked further",
        })
    }
}

/// What a search found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchResult {
    /// The engine: `random`, `tpe`, `bohb`, `rules`, `guided`, `llm`, `llm-refine`.
    pub engine: String,
    pub goal: Goal,
    /// Every trial in order; `trials[0]` is the faulty config.
    pub trials: Vec<Trial>,
    /// The best full-fidelity trial by value (goal-aware); ties go to the trial that changes
    /// fewer hyperparameters of the faulty config, then to the earlier one. `None` when no
    /// full-fidelity trial finished.
    pub best: Option<Trial>,
    /// Sum of the trials' training durations, seconds.
    pub spent_s: f64,
    /// The time budget in seconds (`None` for a trial budget).
    #[serde(default, with = "fnum::opt_float")]
    pub budget_s: Option<f64>,
    pub stop: Stop,
}

impl SearchResult {
    /// The best trial's config when it differs from the faulty config.
    pub fn patch(&self) -> Option<&Config> {
        self.best
            .as_ref()
            .filter(|b| b.number != 0)
            .map(|b| &b.config)
    }
}

/// The best full-fidelity trial (see [`SearchResult::best`]).
pub fn pick_best(subject: &Subject, trials: &[Trial]) -> Option<Trial> {
    let goal = subject.metric.goal;
    trials
        .iter()
        .filter(|t| t.is_full() && t.value.is_some_and(f64::is_finite))
        .min_by(|a, b| {
            rank(goal, a.value, b.value)
                .then_with(|| {
                    changed_count(&subject.config, &a.config)
                        .cmp(&changed_count(&subject.config, &b.config))
                })
                .then(a.number.cmp(&b.number))
        })
        .cloned()
}

/// Whether a trial reaches `stop_at` (full fidelity only).
fn reached(goal: Goal, stop_at: Option<f64>, t: &Trial) -> bool {
    match (stop_at, t.value) {
        (Some(target), Some(v)) if t.is_full() => goal.better_or_equal(v, target),
        _ => false,
    }
}

/// Trains the given `(number, config, epochs)` trials concurrently on the search split, one
/// seed each (`seed * 1000 + number`). With `thresholds` (a study with a pruner: one list per
/// item), each goes through [`Objective::evaluate_pruned`] and may stop early; without,
/// through [`Objective::evaluate`] as always.
pub(crate) async fn run_trials<O: Objective>(
    obj: &O,
    seed: u64,
    items: Vec<(usize, Config, Option<u64>)>,
    thresholds: Option<Vec<Vec<Option<f64>>>>,
) -> Result<Vec<Trial>, SearchError> {
    let seeds: Vec<[u64; 1]> = items
        .iter()
        .map(|(n, _, _)| [trial_seed(seed, *n)])
        .collect();
    let results: Vec<Result<Evaluated, String>> = match thresholds {
        None => {
            let futures: Vec<_> = items
                .iter()
                .zip(&seeds)
                .map(|((_, config, epochs), sd)| obj.evaluate(config, sd, Split::Search, *epochs))
                .collect();
            join_all(futures)
                .await
                .into_iter()
                .map(|r| Evaluated::full(&r?))
                .collect()
        }
        Some(th) => {
            let futures: Vec<_> = items
                .iter()
                .zip(&seeds)
                .zip(&th)
                .map(|(((_, config, epochs), sd), th)| {
                    obj.evaluate_pruned(config, sd[0], Split::Search, *epochs, th)
                })
                .collect();
            join_all(futures).await
        }
    };
    let mut out = Vec::with_capacity(items.len());
    for ((number, config, epochs), (r, sd)) in
        items.into_iter().zip(results.into_iter().zip(&seeds))
    {
        let e = r.map_err(SearchError::Objective)?;
        out.push(Trial {
            number,
            config,
            // A pruned training has no result, whatever the objective said.
            value: e.value.filter(|v| v.is_finite() && e.pruned.is_none()),
            duration_s: if e.duration_s.is_finite() {
                e.duration_s.max(0.0)
            } else {
                0.0
            },
            epochs,
            seed: sd[0],
            pruned: e.pruned,
            confirms: None,
            curve: e.curve,
        });
    }
    Ok(out)
}

/// A search in progress over one subject: the trials so far (the faulty config first) and the
/// budget they spent. Engines ask for configs however they like (a [`Sampler`], AutoTrainer's
/// rules, an LLM), [`evaluate`](Study::evaluate) them and [`tell`](Study::tell) the results
/// until [`allowance`](Study::allowance) is 0, then [`finish`](Study::finish).
#[derive(Debug, Clone)]
pub struct Study<'a> {
    subject: &'a Subject,
    settings: &'a SearchSettings,
    trials: Vec<Trial>,
    meter: Meter,
}

impl<'a> Study<'a> {
    /// Checks the settings, trains the faulty config as trial 0 and starts the meter (the time
    /// reference is `settings.time_ref_s`, or trial 0's duration).
    pub async fn start<O: Objective>(
        obj: &O,
        subject: &'a Subject,
        settings: &'a SearchSettings,
    ) -> Result<Study<'a>, SearchError> {
        settings.check()?;
        if subject.space.is_empty() {
            return Err(SearchError::EmptySpace);
        }
        // With a pruner, trial 0 reports its curve too (no thresholds yet: it is never pruned).
        let t0 = run_trials(
            obj,
            settings.seed,
            vec![(0, subject.config.clone(), None)],
            settings.prune.as_ref().map(|_| vec![Vec::new()]),
        )
        .await?
        .remove(0);
        let mut meter = Meter::new(settings.budget);
        meter.spend(t0.duration_s);
        meter.set_reference(settings.time_ref_s.unwrap_or(t0.duration_s))?;
        Ok(Study {
            subject,
            settings,
            trials: vec![t0],
            meter,
        })
    }

    /// A study that goes on from `prior` (an earlier search of the same faulty config, its
    /// trial 0 first) without training anything: its trials are the model's history and the new
    /// ones are numbered after them; only the new ones spend `settings.budget` (the time
    /// reference is `settings.time_ref_s`, or the prior faulty trial's duration). A search in
    /// phases uses it so that a phase neither retrains the faulty config nor forgets what the
    /// phases before it saw.
    pub fn resume(
        subject: &'a Subject,
        settings: &'a SearchSettings,
        prior: Vec<Trial>,
    ) -> Result<Study<'a>, SearchError> {
        settings.check()?;
        if subject.space.is_empty() {
            return Err(SearchError::EmptySpace);
        }
        let Some(t0) = prior.first().filter(|t| t.number == 0) else {
            return Err(SearchError::Settings(
                "a resumed study needs the prior search's trials, the faulty config first".into(),
            ));
        };
        let mut meter = Meter::new(settings.budget);
        meter.set_reference(settings.time_ref_s.unwrap_or(t0.duration_s))?;
        Ok(Study {
            subject,
            settings,
            trials: prior,
            meter,
        })
    }

    /// Every trial told so far; `trials()[0]` is the faulty config.
    pub fn trials(&self) -> &[Trial] {
        &self.trials
    }

    /// How many more trials may start now (see [`Meter::allowance`]).
    pub fn allowance(&self, want: usize) -> usize {
        self.meter.allowance(want)
    }

    /// Whether the budget allows no further trial.
    pub fn exhausted(&self) -> bool {
        self.meter.exhausted()
    }

    /// The share of the budget spent so far (see [`Meter::spent_fraction`]).
    pub fn spent_fraction(&self) -> f64 {
        self.meter.spent_fraction()
    }

    /// What is left of the budget, in its own units (see [`Meter::left`]).
    pub fn budget_left(&self) -> Budget {
        self.meter.left()
    }

    /// Seconds one unit of a time budget stands for (0 for a trial budget).
    pub fn time_reference_s(&self) -> f64 {
        self.meter.reference_s()
    }

    /// Charges training that is not a trial (a rules engine's trace) to the budget.
    pub fn charge(&mut self, duration_s: f64) {
        self.meter.charge(duration_s);
    }

    /// Whether `t` reaches the settings' `stop_at` (full-fidelity trials only).
    pub fn reached(&self, t: &Trial) -> bool {
        reached(self.subject.metric.goal, self.settings.stop_at, t)
    }

    /// Trains `(config, epochs)` items concurrently on the search split as the next trials
    /// (numbered on from the last trial told, one seed each: `seed * 1000 + number`); `epochs`
    /// `Some(e)` is a low-fidelity training. The trials are returned, not yet told.
    pub async fn evaluate<O: Objective>(
        &self,
        obj: &O,
        items: Vec<(Config, Option<u64>)>,
    ) -> Result<Vec<Trial>, SearchError> {
        let first = self.trials.len();
        let thresholds = self.settings.prune.is_some().then(|| {
            items
                .iter()
                .map(|(config, epochs)| self.thresholds(config, *epochs).unwrap_or_default())
                .collect()
        });
        let numbered = items
            .into_iter()
            .enumerate()
            .map(|(j, (config, epochs))| (first + j, config, epochs))
            .collect();
        run_trials(obj, self.settings.seed, numbered, thresholds).await
    }

    /// The per-epoch thresholds the settings' pruner sets for the next trial of `config`
    /// trained for `epochs` (`None`: its own, the config's `epochs`), from the curves of the
    /// trials finished so far (completed ones only: failed and pruned trials do not count; see
    /// [`crate::PercentilePruner::for_trial`]); `None` without a pruner.
    pub fn thresholds(&self, config: &Config, epochs: Option<u64>) -> Option<Vec<Option<f64>>> {
        let pruner = self.settings.prune.as_ref()?;
        let curves: Vec<&[Option<f64>]> = self
            .trials
            .iter()
            .filter(|t| t.value.is_some() && t.pruned.is_none())
            .map(|t| t.curve.as_slice())
            .collect();
        let full = count_at(config, EPOCHS_KEY);
        Some(pruner.for_trial(self.subject.metric.goal, &curves, full, epochs))
    }

    /// Records a trained trial: spends its duration and appends it. Returns whether it
    /// reaches `stop_at`.
    pub fn tell(&mut self, t: Trial) -> bool {
        self.meter.spend(t.duration_s);
        let hit = self.reached(&t);
        self.trials.push(t);
        hit
    }

    /// The result, under the name `engine`.
    pub fn finish(self, engine: &str, stop: Stop) -> SearchResult {
        SearchResult {
            engine: engine.to_string(),
            goal: self.subject.metric.goal,
            best: pick_best(self.subject, &self.trials),
            trials: self.trials,
            spent_s: self.meter.spent_s,
            budget_s: self.meter.limit_s,
            stop,
        }
    }
}

/// The study loop with any [`Sampler`]: trial 0 is the faulty config; then batches of
/// `s.parallel` asked configs (each completed over the faulty config, so keys outside the
/// space keep their values) are trained together and told, until the budget is spent or a
/// trial reaches `s.stop_at`.
pub async fn search<O: Objective, S: Sampler>(
    obj: &O,
    subject: &Subject,
    sampler: &mut S,
    s: &SearchSettings,
) -> Result<SearchResult, SearchError> {
    let study = Study::start(obj, subject, s).await?;
    run_study(obj, subject, sampler, s, study).await
}

/// [`search`] going on from `prior`, the trials of an earlier search of the same faulty config
/// (see [`Study::resume`]): the sampler sees them as history, nothing is trained again, and a
/// prior trial that reached `s.stop_at` ends it at once. The result holds the prior trials and
/// the new ones; its `spent_s` and `budget_s` are the new search's.
pub async fn search_from<O: Objective, S: Sampler>(
    obj: &O,
    subject: &Subject,
    sampler: &mut S,
    s: &SearchSettings,
    prior: Vec<Trial>,
) -> Result<SearchResult, SearchError> {
    let study = Study::resume(subject, s, prior)?;
    run_study(obj, subject, sampler, s, study).await
}

/// The study loop of [`search`] and [`search_from`].
async fn run_study<O: Objective, S: Sampler>(
    obj: &O,
    subject: &Subject,
    sampler: &mut S,
    s: &SearchSettings,
    mut study: Study<'_>,
) -> Result<SearchResult, SearchError> {
    let mut stop = study
        .trials()
        .iter()
        .any(|t| study.reached(t))
        .then_some(Stop::StopAt);
    while stop.is_none() {
        let k = study.allowance(s.parallel);
        if k == 0 {
            stop = Some(Stop::Budget);
            break;
        }
        let items: Vec<(Config, Option<u64>)> = (0..k)
            .map(|_| {
                let asked = sampler.ask(&subject.space, study.trials());
                (apply_patch(&subject.config, &asked), None)
            })
            .collect();
        for t in study.evaluate(obj, items).await? {
            if study.tell(t) {
                stop = Some(Stop::StopAt);
            }
        }
    }
    Ok(study.finish(sampler.name(), stop.unwrap_or(Stop::Budget)))
}
