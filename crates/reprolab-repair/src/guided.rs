//! FL-guided repair: localise the fault (the subject's config and one traced training of it),
//! try the changes localisation suggests, then spend the rest of the search's first half with
//! TPE on the suspected parameters only. When that found an improvement, the second half
//! searches them together with the next suspects (confidence at or above [`NEXT_THRESHOLD`]): a
//! fault with two causes (too few epochs beside a wrong output) is repaired only when both are;
//! when it found none, the second half searches the whole space. The second half goes on from
//! the first's trials (its TPE's history; the faulty config is not trained again). When nothing
//! was suspected the whole search goes to a TPE search of the whole space. The search gets all
//! but [`CONFIRM_SHARE`] of the budget; what it leaves re-trains its best few configs with fresh
//! seeds, and the best by mean is the patch ([`reprolab_search::confirm`]); with fewer than two
//! configs better than the faulty one there is nothing to choose between, and that share goes on
//! searching instead. Each part of a time budget gets what the one before left, so that together
//! they pass it by less than one trial.
//! Floats spanning several decades (the study's lr) are searched on a log scale ([`log_scaled`]).
//!
//! Localisation is passed in ([`guided`]'s `localize`; the binary wires
//! `reprolab_localize::localize`), so this crate does not depend on the localisation crate and
//! tests can guide the engine with synthetic suspects.

use std::collections::VecDeque;

use reprolab_core::{
    Config, Param, ParamKind, SearchSpace, Subject, Suspect, THRESHOLD, normalize_type,
};
use reprolab_search::{
    Budget, FINALISTS, Objective, Sampler, SearchResult, SearchSettings, TpeSampler, Trace, Trial,
    confirm, finalists, search, search_from,
};
use serde_json::Value;

use crate::RepairError;

/// Confidence of the suspects the second half adds when the first found an improvement: the
/// ones localisation names below its answer's threshold (a second cause it ranks lower).
pub const NEXT_THRESHOLD: f64 = 0.25;

/// The space restricted to the parameters whose fault type (and layer, when the suspect names
/// layers) localisation suspects with confidence at or above [`THRESHOLD`].
pub fn suspected_space(subject: &Subject, suspects: &[Suspect]) -> SearchSpace {
    suspected_space_at(subject, suspects, THRESHOLD)
}

/// [`suspected_space`] for suspects with confidence at or above `threshold`.
pub fn suspected_space_at(subject: &Subject, suspects: &[Suspect], threshold: f64) -> SearchSpace {
    let wanted: Vec<&Suspect> = suspects
        .iter()
        .filter(|s| s.confidence >= threshold)
        .collect();
    let params = subject
        .space
        .params
        .iter()
        .filter(|p| wanted.iter().any(|s| suspects_param(s, p)))
        .cloned()
        .collect();
    SearchSpace { params }
}

/// How much more likely a suspected hyperparameter is redrawn than an unsuspected one, per unit
/// of the suspect's confidence (see [`suspicion_prior`]).
pub const PRIOR_WEIGHT: f64 = 20.0;

/// A prior over the hyperparameters at fault for a search that proposes changes near the faulty
/// config (bohb's [`reprolab_search::BohbOptions::prior`]): each parameter a suspect with
/// confidence at or above [`NEXT_THRESHOLD`] names weighs `1 + PRIOR_WEIGHT × confidence` (the
/// highest such suspect's), every other parameter 1, so the search still reaches causes
/// localisation missed.
pub fn suspicion_prior(subject: &Subject, suspects: &[Suspect]) -> Vec<(String, f64)> {
    subject
        .space
        .params
        .iter()
        .filter_map(|p| {
            let confidence = suspects
                .iter()
                .filter(|s| s.confidence >= NEXT_THRESHOLD && suspects_param(s, p))
                .map(|s| s.confidence)
                .fold(None, |a: Option<f64>, c| Some(a.map_or(c, |a| a.max(c))))?;
            Some((p.name.clone(), 1.0 + PRIOR_WEIGHT * confidence))
        })
        .collect()
}

/// Whether `s` suspects the hyperparameter `p`: its fault type, and its layer when `s` names
/// layers.
fn suspects_param(s: &Suspect, p: &Param) -> bool {
    p.fault.is_some_and(|fault| {
        normalize_type(s.label.fault) == normalize_type(fault)
            && (s.label.layers.is_empty() || p.layer.is_none_or(|l| s.label.layers.contains(&l)))
    })
}

/// For a suspect that suggests no change of its own: the other value of each two-valued
/// choice it suspects (a switch such as D9's `label_scale` in {1, 255}, whose only repair is
/// flipping it), when the faulty config holds one of the two.
pub fn switched(subject: &Subject, suspects: &[Suspect]) -> Vec<(String, Value)> {
    let mut out: Vec<(String, Value)> = Vec::new();
    for s in suspects.iter().filter(|s| s.confidence >= THRESHOLD) {
        if s.suggestion.as_deref().is_some_and(|x| !x.is_empty()) {
            continue;
        }
        for p in subject.space.params.iter().filter(|p| suspects_param(s, p)) {
            let ParamKind::Choice { values } = &p.kind else {
                continue;
            };
            let [a, b] = values.as_slice() else { continue };
            let other = match subject.config.get(&p.name) {
                Some(v) if p.contains(v) && v == a => b,
                Some(v) if p.contains(v) && v == b => a,
                _ => continue,
            };
            if !out.iter().any(|(k, _)| k == &p.name) {
                out.push((p.name.clone(), other.clone()));
            }
        }
    }
    out
}

/// The changes localisation suggests ("act0: linear -> relu, lr: 3 -> 0.01"), in rank order,
/// that the space accepts; the first suggestion for a key wins.
pub fn suggested_changes(subject: &Subject, suspects: &[Suspect]) -> Vec<(String, Value)> {
    let mut out: Vec<(String, Value)> = Vec::new();
    for s in suspects.iter().filter(|s| s.confidence >= THRESHOLD) {
        for part in s.suggestion.as_deref().unwrap_or("").split(", ") {
            let Some((key, change)) = part.split_once(": ") else {
                continue;
            };
            let Some((_, to)) = change.split_once(" -> ") else {
                continue;
            };
            let value = serde_json::from_str(to).unwrap_or_else(|_| Value::from(to));
            let accepted = subject.space.get(key).is_some_and(|p| p.contains(&value));
            if accepted && !out.iter().any(|(k, _)| k == key) {
                out.push((key.to_string(), value));
            }
        }
    }
    out
}

/// Share of the budget kept to re-train the search's finalists with fresh seeds
/// ([`reprolab_search::confirm`]): the best of single trainings is often a lucky one.
pub const CONFIRM_SHARE: f64 = 0.2;

/// A float range spanning at least this ratio (`high / low`, `low > 0`) is searched on a log
/// scale: three decades or more.
pub const LOG_SCALE_RATIO: f64 = 1e3;

/// `space` with every float spanning [`LOG_SCALE_RATIO`] or more sampled uniformly in log space,
/// over the same bounds (the same configs stay allowed). The study's space draws lr uniformly
/// from [1e-6, 10], which puts nine draws in ten above 1, where most optimizers diverge; a rate
/// is a scale, so guided repair gives each decade the same weight. A lucky run at such a rate
/// (1.0 once, 0.5 on ten holdout retrainings) was what guided returned on D6.
pub fn log_scaled(mut space: SearchSpace) -> SearchSpace {
    for p in &mut space.params {
        if let ParamKind::Float { low, high } = p.kind
            && low > 0.0
            && high / low >= LOG_SCALE_RATIO
        {
            p.kind = ParamKind::LogFloat { low, high };
        }
    }
    space
}

/// The changes guided tries before searching: localisation's suggestions, then the suspected
/// switches flipped (see [`switched`]), one per key.
fn first_changes(subject: &Subject, suspects: &[Suspect]) -> Vec<(String, Value)> {
    let mut changes = suggested_changes(subject, suspects);
    for (key, value) in switched(subject, suspects) {
        if !changes.iter().any(|(k, _)| k == &key) {
            changes.push((key, value));
        }
    }
    changes
}

/// The configs localisation suggests trying first, in order (see [`first_changes`] and
/// [`tried_first`]): what guided tries before searching, and what bohb enqueues.
pub fn suggested_configs(subject: &Subject, suspects: &[Suspect]) -> Vec<Config> {
    tried_first(subject, &first_changes(subject, suspects)).into()
}

/// The configs tried first: all `changes` together, then (when there are several) each alone.
fn tried_first(subject: &Subject, changes: &[(String, Value)]) -> VecDeque<Config> {
    let with = |kv: &[(String, Value)]| {
        let mut c = subject.config.clone();
        for (k, v) in kv {
            c.insert(k.clone(), v.clone());
        }
        c
    };
    let mut queue = VecDeque::new();
    if !changes.is_empty() {
        queue.push_back(with(changes));
    }
    if changes.len() > 1 {
        queue.extend(changes.iter().map(|kv| with(std::slice::from_ref(kv))));
    }
    queue
}

/// A sampler that first proposes the given configs (as Optuna's `enqueue_trial`), then asks TPE.
struct Enqueued {
    queue: VecDeque<Config>,
    tpe: TpeSampler,
}

impl Sampler for Enqueued {
    fn ask(&mut self, space: &SearchSpace, history: &[Trial]) -> Config {
        match self.queue.pop_front() {
            Some(full) => space
                .params
                .iter()
                .filter_map(|p| full.get(&p.name).map(|v| (p.name.clone(), v.clone())))
                .collect(),
            None => self.tpe.ask(space, history),
        }
    }

    fn name(&self) -> &'static str {
        "guided"
    }
}

/// The `guided` engine (see the module documentation). `localize` ranks the suspects of the
/// subject's config given one traced training of it (seed `settings.seed`). The result is one
/// search record: the first phase's trials, then the second's (its repeat of the faulty config
/// dropped), renumbered, then the finalists' confirmations.
pub async fn guided<O: Objective>(
    obj: &O,
    subject: &Subject,
    settings: &SearchSettings,
    localize: impl Fn(&Subject, &Trace) -> Vec<Suspect>,
) -> Result<SearchResult, RepairError> {
    let trace = obj
        .trace(&subject.config, settings.seed)
        .await
        .map_err(RepairError::Objective)?;
    let suspects = localize(subject, &trace);
    let whole = {
        let mut w = subject.clone();
        w.space = log_scaled(w.space);
        w
    };
    let subject = &whole;
    let mut narrowed = subject.clone();
    narrowed.space = suspected_space(subject, &suspects);
    let changes = first_changes(subject, &suspects);
    for (key, _) in &changes {
        if narrowed.space.get(key).is_none()
            && let Some(p) = subject.space.get(key)
        {
            narrowed.space.params.push(p.clone());
        }
    }
    let queue = tried_first(subject, &changes);
    // The search gets all but CONFIRM_SHARE of the budget, in two halves.
    let (search_budget, confirm_trials) = match settings.budget {
        Budget::Trials(n) => {
            let c = (n as f64 * CONFIRM_SHARE).round() as usize;
            (Budget::Trials(n - c), c)
        }
        Budget::TimeMultiple(m) => (Budget::TimeMultiple(m * (1.0 - CONFIRM_SHARE)), 0),
    };
    let half = match search_budget {
        Budget::Trials(n) => Budget::Trials((n / 2).max(2)),
        Budget::TimeMultiple(m) => Budget::TimeMultiple(m / 2.0),
    };
    let phase = SearchSettings {
        budget: half,
        ..settings.clone()
    };
    let tpe = |seed| TpeSampler::new(seed, subject.metric.goal);
    let first = if narrowed.space.params.is_empty() {
        None
    } else {
        let mut sampler = Enqueued {
            queue,
            tpe: tpe(settings.seed),
        };
        Some(search(obj, &narrowed, &mut sampler, &phase).await?)
    };
    let (found, last) = match first {
        // Nothing suspected: the whole search budget goes to a search of the whole space.
        None => {
            let wide = SearchSettings {
                budget: search_budget,
                seed: settings.seed + 7919,
                ..settings.clone()
            };
            let found = search(obj, subject, &mut tpe(wide.seed), &wide).await?;
            (found, subject.clone())
        }
        Some(first) => {
            let second_subject = if first.patch().is_some() {
                widened(subject, &narrowed, &suspects)
            } else {
                subject.clone()
            };
            let found = second_half(obj, &second_subject, first, search_budget, &phase).await?;
            (found, second_subject)
        }
    };
    let mut confirming = Confirming::new(settings.budget, confirm_trials, &found);
    // Fewer than two finalists leave nothing to choose between: the confirmation's share goes
    // on searching (over the last phase's space, with everything seen so far as history).
    let found = if finalists(subject, &found.trials, FINALISTS).len() < 2
        && !confirming.budget.is_empty()
    {
        search_on(obj, &last, found, &mut confirming, settings).await?
    } else {
        found
    };
    let seeds = SearchSettings {
        seed: settings.seed + 2 * 7919,
        ..settings.clone()
    };
    let whole_s = confirming.whole_s.or(found.budget_s);
    let confirmed = confirm(
        obj,
        subject,
        found,
        confirming.budget,
        confirming.reference,
        &seeds,
    )
    .await?;
    Ok(SearchResult {
        engine: "guided".into(),
        budget_s: whole_s,
        ..confirmed
    })
}

/// Fewer than two finalists leave nothing to choose between: the confirmation's share goes on
/// searching `subject` (the last phase's space) from `found`'s trials, and is spent.
async fn search_on<O: Objective>(
    obj: &O,
    subject: &Subject,
    found: SearchResult,
    confirming: &mut Confirming,
    settings: &SearchSettings,
) -> Result<SearchResult, RepairError> {
    let more = SearchSettings {
        budget: confirming.budget,
        seed: settings.seed + 3 * 7919,
        time_ref_s: Some(confirming.reference).filter(|r| *r > 0.0),
        ..settings.clone()
    };
    let (before, spent_s, budget_s) = (found.trials.len(), found.spent_s, found.budget_s);
    let tpe = &mut TpeSampler::new(more.seed, subject.metric.goal);
    let went_on = search_from(obj, subject, tpe, &more, found.trials).await?;
    confirming.spend(went_on.trials.len() - before, went_on.spent_s);
    Ok(SearchResult {
        engine: "guided".into(),
        spent_s: spent_s + went_on.spent_s,
        budget_s,
        ..went_on
    })
}

/// What the search left of the whole budget, for confirming its finalists (or, with fewer
/// than two, for searching on): a time budget's rest as a multiple of the search's time
/// reference, or the trials set aside.
struct Confirming {
    budget: Budget,
    /// Seconds one unit of a time budget stands for (0 for a trial budget).
    reference: f64,
    /// The whole budget in seconds (`None` for a trial budget).
    whole_s: Option<f64>,
}

impl Confirming {
    fn new(whole: Budget, confirm_trials: usize, found: &SearchResult) -> Confirming {
        match (whole, found.budget_s) {
            (Budget::TimeMultiple(m), Some(search_s)) => {
                let reference = search_s / (m * (1.0 - CONFIRM_SHARE));
                let left = m * reference - found.spent_s;
                Confirming {
                    budget: Budget::TimeMultiple(left.max(0.0) / reference),
                    reference,
                    whole_s: Some(m * reference),
                }
            }
            _ => Confirming {
                budget: Budget::Trials(confirm_trials),
                reference: 0.0,
                whole_s: None,
            },
        }
    }

    /// Takes `trials` trials that spent `spent_s` seconds off the budget.
    fn spend(&mut self, trials: usize, spent_s: f64) {
        self.budget = match self.budget {
            Budget::Trials(n) => Budget::Trials(n.saturating_sub(trials)),
            Budget::TimeMultiple(m) => {
                Budget::TimeMultiple((m - spent_s / self.reference).max(0.0))
            }
        };
    }
}

/// The subject's space narrowed to the suspects, plus the next suspects (confidence at or
/// above [`NEXT_THRESHOLD`]).
fn widened(subject: &Subject, narrowed: &Subject, suspects: &[Suspect]) -> Subject {
    let mut w = narrowed.clone();
    for p in suspected_space_at(subject, suspects, NEXT_THRESHOLD).params {
        if w.space.get(&p.name).is_none() {
            w.space.params.push(p);
        }
    }
    w
}

/// The second half of the search, over `subject`, after the `first`: one search record, the
/// first's trials then the second's (its repeat of the faulty config dropped), renumbered. A
/// time budget's second half gets what the first left of `search_budget` (its overshoot
/// included), so that the two together overshoot it by less than one trial, as one search.
async fn second_half<O: Objective>(
    obj: &O,
    subject: &Subject,
    first: SearchResult,
    search_budget: Budget,
    phase: &SearchSettings,
) -> Result<SearchResult, RepairError> {
    let mut wide = SearchSettings {
        seed: phase.seed + 7919,
        ..phase.clone()
    };
    let mut whole_s = None;
    if let (Budget::TimeMultiple(m), Some(half_s)) = (search_budget, first.budget_s) {
        let reference = half_s / (m / 2.0);
        let left = m * reference - first.spent_s;
        whole_s = Some(m * reference);
        if left <= 0.0 {
            return Ok(SearchResult {
                engine: "guided".into(),
                budget_s: whole_s,
                ..first
            });
        }
        wide.budget = Budget::TimeMultiple(left / reference);
        wide.time_ref_s = Some(reference);
    }
    let tpe = &mut TpeSampler::new(wide.seed, subject.metric.goal);
    let (first_spent_s, first_budget_s) = (first.spent_s, first.budget_s);
    let second = search_from(obj, subject, tpe, &wide, first.trials).await?;
    Ok(SearchResult {
        engine: "guided".into(),
        spent_s: first_spent_s + second.spent_s,
        budget_s: whole_s.or(first_budget_s.zip(second.budget_s).map(|(a, b)| a + b)),
        ..second
    })
}
