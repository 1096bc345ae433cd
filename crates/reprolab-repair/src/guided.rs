//! FL-guided repair: localise the fault (the subject's config and one traced training of it),
//! try the changes localisation suggests, then spend the rest of half the budget with TPE on the
//! suspected parameters only. When that found an improvement, the second half searches them
//! together with the next suspects (confidence at or above [`NEXT_THRESHOLD`]): a fault with two
//! causes (too few epochs beside a wrong output) is repaired only when both are; when it found
//! none, the second half searches the whole space. When nothing was suspected the whole budget
//! goes to a TPE search of the whole space. A time budget's second
//! half is what the first half left, so that together they pass it by less than one trial.
//!
//! Localisation is passed in ([`guided`]'s `localize`; the binary wires
//! `reprolab_localize::localize`), so this crate does not depend on the localisation crate and
//! tests can guide the engine with synthetic suspects.

use std::collections::VecDeque;

use reprolab_core::{Config, ParamKind, SearchSpace, Subject, Suspect, THRESHOLD, normalize_type};
use reprolab_search::{
    Budget, Objective, Sampler, SearchResult, SearchSettings, TpeSampler, Trace, Trial, pick_best,
    search,
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
        .filter(|p| {
            let Some(fault) = p.fault else { return false };
            wanted.iter().any(|s| {
                normalize_type(s.label.fault) == normalize_type(fault)
                    && (s.label.layers.is_empty()
                        || p.layer.is_none_or(|l| s.label.layers.contains(&l)))
            })
        })
        .cloned()
        .collect();
    SearchSpace { params }
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
/// dropped), renumbered.
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
    // The suggested changes are tried first: all of them together, then each alone.
    let changes = suggested_changes(subject, &suspects);
    for (key, _) in &changes {
        if narrowed.space.get(key).is_none()
            && let Some(p) = subject.space.get(key)
        {
            narrowed.space.params.push(p.clone());
        }
    }
    let mut queue = VecDeque::new();
    let mut all = subject.config.clone();
    for (k, v) in &changes {
        all.insert(k.clone(), v.clone());
    }
    if !changes.is_empty() {
        queue.push_back(all);
    }
    if changes.len() > 1 {
        for (k, v) in &changes {
            let mut one = subject.config.clone();
            one.insert(k.clone(), v.clone());
            queue.push_back(one);
        }
    }
    let half = match &settings.budget {
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
    let widened = {
        let mut w = narrowed.clone();
        for p in suspected_space_at(subject, &suspects, NEXT_THRESHOLD).params {
            if w.space.get(&p.name).is_none() {
                w.space.params.push(p);
            }
        }
        w
    };
    let second_subject = if first.as_ref().is_some_and(|r| r.patch().is_some()) {
        &widened
    } else {
        subject
    };
    // A time budget: the second half gets what the first left (its overshoot included), so
    // that the two together overshoot the whole budget by less than one trial, as one search.
    let mut wide = SearchSettings {
        seed: settings.seed + 7919,
        ..phase
    };
    if first.is_none() {
        // Nothing suspected: the whole budget goes to the wide search.
        wide.budget = settings.budget;
    }
    let mut whole_s = None;
    if let (Budget::TimeMultiple(m), Some(f)) = (settings.budget, &first)
        && let Some(half_s) = f.budget_s
    {
        let reference = half_s / (m / 2.0);
        let left = m * reference - f.spent_s;
        whole_s = Some(m * reference);
        if left <= 0.0 {
            return Ok(SearchResult {
                engine: "guided".into(),
                budget_s: whole_s,
                ..f.clone()
            });
        }
        wide.budget = Budget::TimeMultiple(left / reference);
        wide.time_ref_s = Some(reference);
    }
    let second = search(obj, second_subject, &mut tpe(wide.seed), &wide).await?;
    let Some(first) = first else {
        return Ok(SearchResult {
            engine: "guided".into(),
            ..second
        });
    };
    let mut trials = first.trials;
    let offset = trials.len() - 1;
    trials.extend(second.trials.into_iter().skip(1).map(|mut t| {
        t.number += offset;
        t
    }));
    Ok(SearchResult {
        engine: "guided".into(),
        goal: subject.metric.goal,
        best: pick_best(subject, &trials),
        spent_s: first.spent_s + second.spent_s,
        budget_s: whole_s.or(first.budget_s.zip(second.budget_s).map(|(a, b)| a + b)),
        stop: second.stop,
        trials,
    })
}
