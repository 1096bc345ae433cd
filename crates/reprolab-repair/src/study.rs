//! The study loop: the faulty config is trial 0; then `parallel` configs are asked, trained
//! together, and told (appended to the history), until the budget is spent or a trial reaches
//! `stop_at`.

use std::cmp::Ordering;

use reprolab_core::{Config, Goal, Split, Subject};
use serde::{Deserialize, Serialize};

use crate::budget::{Meter, SearchSettings};
use crate::join::join_all;
use crate::sampler::Sampler;
use crate::space::{apply_patch, changed_count};
use crate::{Objective, RepairError, Trial, trial_seed};
use reprolab_core::fnum;

/// Why a search ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stop {
    /// The budget is spent.
    Budget,
    /// A full-fidelity trial reached `stop_at`.
    StopAt,
    /// Rules: the faulty config's trace shows no symptom.
    NoSymptom,
    /// Rules: a re-trace of the repaired config shows no symptom left.
    Repaired,
    /// Rules: no applicable fix improved on the best config so far.
    NoFix,
    /// LLM: every usable suggestion was trained.
    Suggestions,
    /// LLM: the model could not be asked further (token or cost budget, provider error).
    Llm,
}

/// What a search found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchResult {
    /// `random`, `tpe`, `bohb` or `rules`.
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
            let (x, y) = (a.value.unwrap(), b.value.unwrap());
            if goal.better(x, y) {
                Ordering::Less
            } else if goal.better(y, x) {
                Ordering::Greater
            } else {
                changed_count(&subject.config, &a.config)
                    .cmp(&changed_count(&subject.config, &b.config))
                    .then(a.number.cmp(&b.number))
            }
        })
        .cloned()
}

/// Whether a trial reaches `stop_at` (full fidelity only).
pub(crate) fn reached(goal: Goal, stop_at: Option<f64>, t: &Trial) -> bool {
    match (stop_at, t.value) {
        (Some(target), Some(v)) if t.is_full() => goal.better_or_equal(v, target),
        _ => false,
    }
}

/// Trains the given `(number, config, epochs)` trials concurrently on the search split, one
/// seed each (`seed * 1000 + number`).
pub(crate) async fn run_trials<O: Objective>(
    obj: &O,
    seed: u64,
    items: Vec<(usize, Config, Option<u64>)>,
) -> Result<Vec<Trial>, RepairError> {
    let seeds: Vec<[u64; 1]> = items
        .iter()
        .map(|(n, _, _)| [trial_seed(seed, *n)])
        .collect();
    let futures: Vec<_> = items
        .iter()
        .zip(&seeds)
        .map(|((_, config, epochs), sd)| obj.evaluate(config, sd, Split::Search, *epochs))
        .collect();
    let results = join_all(futures).await;
    let mut out = Vec::with_capacity(items.len());
    for ((number, config, epochs), (r, sd)) in
        items.into_iter().zip(results.into_iter().zip(&seeds))
    {
        let runs = r.map_err(RepairError::Objective)?;
        let (value, duration_s) = runs.first().copied().ok_or_else(|| {
            RepairError::Objective("the objective returned no result for a seed".into())
        })?;
        out.push(Trial {
            number,
            config,
            value: value.filter(|v| v.is_finite()),
            duration_s: if duration_s.is_finite() {
                duration_s.max(0.0)
            } else {
                0.0
            },
            epochs,
            seed: sd[0],
        });
    }
    Ok(out)
}

/// Trains the faulty config as trial 0 and starts the meter.
pub(crate) async fn start<O: Objective>(
    obj: &O,
    subject: &Subject,
    s: &SearchSettings,
) -> Result<(Trial, Meter), RepairError> {
    s.check()?;
    if subject.space.is_empty() {
        return Err(RepairError::EmptySpace);
    }
    let t0 = run_trials(obj, s.seed, vec![(0, subject.config.clone(), None)])
        .await?
        .remove(0);
    let mut meter = Meter::new(s.budget);
    meter.spend(t0.duration_s);
    meter.set_reference(s.time_ref_s.unwrap_or(t0.duration_s))?;
    Ok((t0, meter))
}

/// The finished result.
pub(crate) fn finish(
    engine: &str,
    subject: &Subject,
    trials: Vec<Trial>,
    meter: &Meter,
    stop: Stop,
) -> SearchResult {
    SearchResult {
        engine: engine.to_string(),
        goal: subject.metric.goal,
        best: pick_best(subject, &trials),
        trials,
        spent_s: meter.spent_s,
        budget_s: meter.limit_s,
        stop,
    }
}

/// The study loop with any [`Sampler`]: trial 0 is the faulty config; then batches of
/// `s.parallel` asked configs (each completed over the faulty config, so keys outside the
/// space keep their values) are trained together and appended, until the budget is spent or a
/// trial reaches `s.stop_at`.
pub async fn search<O: Objective, S: Sampler>(
    obj: &O,
    subject: &Subject,
    sampler: &mut S,
    s: &SearchSettings,
) -> Result<SearchResult, RepairError> {
    let goal = subject.metric.goal;
    let (t0, mut meter) = start(obj, subject, s).await?;
    let mut stop = reached(goal, s.stop_at, &t0).then_some(Stop::StopAt);
    let mut trials = vec![t0];
    while stop.is_none() {
        let k = meter.allowance(s.parallel);
        if k == 0 {
            stop = Some(Stop::Budget);
            break;
        }
        let items: Vec<(usize, Config, Option<u64>)> = (0..k)
            .map(|i| {
                let asked = sampler.ask(&subject.space, &trials);
                (trials.len() + i, apply_patch(&subject.config, &asked), None)
            })
            .collect();
        for t in run_trials(obj, s.seed, items).await? {
            meter.spend(t.duration_s);
            if reached(goal, s.stop_at, &t) {
                stop = Some(Stop::StopAt);
            }
            trials.push(t);
        }
    }
    Ok(finish(
        sampler.name(),
        subject,
        trials,
        &meter,
        stop.unwrap_or(Stop::Budget),
    ))
}
