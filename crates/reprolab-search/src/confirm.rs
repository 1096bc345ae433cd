//! Confirming the finalists: a search keeps the trial with the best *single* training, and on a
//! noisy objective that is often a lucky one (the winner's curse). On D6, guided repair kept a
//! learning rate that trained to accuracy 1.0 once and to 0.5 on ten holdout retrainings, and
//! the tie-break toward fewer changes picked, among several 1.0s, the shortest and least robust
//! training. [`confirm`] re-trains the best few distinct configs with fresh seeds, as a race,
//! within a budget of its own, and picks the config with the best *mean* ([`best_by_mean`]; a
//! config outside the race counts with its one run, so finalists that all fall back below it
//! leave it the patch): SMAC's intensification in its simplest form. It runs on the search split
//! only, so the holdout validation that follows still judges one config, chosen without it.
use std::cmp::Ordering;

use reprolab_core::{Config, Subject};

use crate::budget::{Budget, Meter, SearchSettings};
use crate::pruner::rank;
use crate::space::changed_count;
use crate::study::{SearchResult, pick_best, run_trials};
use crate::{SearchError, Trial};

/// How many of the best distinct configs are re-trained.
pub const FINALISTS: usize = 3;

/// After the first round, how many of the leading finalists race on.
pub const RACING: usize = 2;

/// At most this many runs per finalist (its search trial included).
pub const MAX_RUNS: usize = 6;

/// The best `n` distinct configs among `trials` that scored better than the faulty config
/// (trial 0) on the search split (full fidelity; never the faulty config itself), in
/// [`pick_best`]'s order of their first trial.
pub fn finalists(subject: &Subject, trials: &[Trial], n: usize) -> Vec<Config> {
    let goal = subject.metric.goal;
    let faulty = trials.iter().find(|t| t.number == 0).and_then(|t| t.value);
    let mut pool: Vec<Trial> = trials
        .iter()
        .filter(|t| t.number != 0 && t.config != subject.config)
        .filter(|t| rank(goal, t.value, faulty) == Ordering::Less)
        .cloned()
        .collect();
    let mut out: Vec<Config> = Vec::new();
    while out.len() < n {
        let Some(best) = pick_best(subject, &pool) else {
            break;
        };
        pool.retain(|t| t.config != best.config);
        out.push(best.config);
    }
    out
}

/// Re-trains the finalists of `result` (see [`finalists`]) with fresh seeds (numbered on after
/// the last trial), `settings.parallel` at a time, as a race: first every finalist once, then
/// the [`RACING`] leaders by mean, round after round, while `budget` lasts (a time budget is a
/// multiple of `time_ref_s`, passed by less than one trial, as in a study) and a leader has
/// fewer than [`MAX_RUNS`] runs. A lucky leader falls back as its runs come in; a steady one
/// stays ahead. The new trials are appended (`confirms` names the trial they repeat), their
/// time added to `spent_s`, and the best becomes [`best_by_mean`]'s. Fewer than two finalists
/// leave the result as it is: there is nothing to choose between (and the holdout validation
/// that follows retrains a lone one anyway).
pub async fn confirm<O: crate::Objective>(
    obj: &O,
    subject: &Subject,
    mut result: SearchResult,
    budget: Budget,
    time_ref_s: f64,
    settings: &SearchSettings,
) -> Result<SearchResult, SearchError> {
    let chosen = finalists(subject, &result.trials, FINALISTS);
    if chosen.len() < 2 {
        return Ok(result);
    }
    let mut meter = Meter::new(budget);
    meter.set_reference(time_ref_s)?;
    // A round trains its whole batch (`parallel` at a time) before the finalists are ranked
    // again: every finalist once first, then the leaders.
    'rounds: loop {
        let mut ranked: Vec<Runs> = chosen.iter().map(|c| Runs::of(&result.trials, c)).collect();
        ranked.sort_by(|a, b| a.order(b, subject));
        let mut batch: Vec<Runs> = if ranked.iter().any(|r| r.runs() == 1) {
            ranked.into_iter().filter(|r| r.runs() == 1).collect()
        } else {
            ranked
                .into_iter()
                .take(RACING)
                .filter(|r| r.runs() < MAX_RUNS)
                .collect()
        };
        if batch.is_empty() {
            break;
        }
        while !batch.is_empty() {
            let k = meter.allowance(settings.parallel.max(1).min(batch.len()));
            if k == 0 {
                break 'rounds;
            }
            let next = result.trials.len();
            let chunk: Vec<Runs> = batch.drain(..k).collect();
            let items = chunk
                .iter()
                .enumerate()
                .map(|(j, r)| (next + j, r.first.config.clone(), None))
                .collect();
            let trained = run_trials(obj, settings.seed, items, None).await?;
            for (mut t, r) in trained.into_iter().zip(&chunk) {
                meter.spend(t.duration_s);
                result.spent_s += t.duration_s;
                t.confirms = Some(r.first.number);
                result.trials.push(t);
            }
        }
    }
    result.best = best_by_mean(subject, &result.trials);
    Ok(result)
}

/// One config's full-fidelity runs: its first trial, the finished runs' values, and whether
/// any run failed.
struct Runs {
    first: Trial,
    values: Vec<f64>,
    failed: bool,
}

impl Runs {
    /// The runs of `config` among `trials` (it has at least one).
    fn of(trials: &[Trial], config: &Config) -> Runs {
        let runs: Vec<&Trial> = trials
            .iter()
            .filter(|t| t.is_full() && &t.config == config)
            .collect();
        let values: Vec<f64> = runs
            .iter()
            .filter_map(|t| t.value.filter(|v| v.is_finite()))
            .collect();
        Runs {
            failed: values.len() < runs.len(),
            values,
            first: (*runs.first().expect("a config with a trial")).clone(),
        }
    }

    fn runs(&self) -> usize {
        self.values.len() + usize::from(self.failed)
    }

    fn mean(&self) -> Option<f64> {
        (!self.values.is_empty())
            .then(|| self.values.iter().sum::<f64>() / self.values.len() as f64)
    }

    /// Best first: never failed, then the better mean, more runs, fewer changes of the faulty
    /// config, the earlier first trial.
    fn order(&self, other: &Runs, subject: &Subject) -> Ordering {
        self.failed
            .cmp(&other.failed)
            .then_with(|| rank(subject.metric.goal, self.mean(), other.mean()))
            .then(other.values.len().cmp(&self.values.len()))
            .then_with(|| {
                changed_count(&subject.config, &self.first.config)
                    .cmp(&changed_count(&subject.config, &other.first.config))
            })
            .then(self.first.number.cmp(&other.first.number))
    }
}

/// The best config by the mean of its finished full-fidelity runs (a config trained once counts
/// with its one run), where a config whose training failed in any run ranks after every config
/// that never failed; ties go to more runs, then fewer changes, then the earlier first trial.
/// The returned trial is that config's first, with the mean as its value.
pub fn best_by_mean(subject: &Subject, trials: &[Trial]) -> Option<Trial> {
    let mut configs: Vec<&Config> = Vec::new();
    for t in trials.iter().filter(|t| t.is_full()) {
        if !configs.contains(&&t.config) {
            configs.push(&t.config);
        }
    }
    configs
        .into_iter()
        .map(|c| Runs::of(trials, c))
        .filter(|r| r.mean().is_some())
        .min_by(|a, b| a.order(b, subject))
        .map(|r| Trial {
            value: r.mean(),
            ..r.first
        })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::testing::{Synth, block_on, study_faulty, study_subject};
    use crate::{Stop, trial_seed};

    /// The faulty config with `key` set to `value`.
    fn with(key: &str, value: serde_json::Value) -> Config {
        let mut c = study_faulty();
        c.insert(key, value);
        c
    }

    fn trial(number: usize, config: Config, value: Option<f64>) -> Trial {
        Trial {
            number,
            config,
            value,
            duration_s: 0.9,
            epochs: None,
            seed: number as u64,
            pruned: None,
            confirms: None,
            curve: Vec::new(),
        }
    }

    /// A search that found a lucky config (`lucky`: 1.0 once, 0.5 on every other seed), a
    /// steady one (`steady`: 0.9) and a worse one than the faulty config's 0.5.
    fn found() -> (SearchResult, Config, Config) {
        let lucky = with("act2", json!("softmax"));
        let steady = with("act2", json!("linear"));
        let trials = vec![
            trial(0, study_faulty(), Some(0.5)),
            trial(1, lucky.clone(), Some(1.0)),
            trial(2, steady.clone(), Some(0.9)),
            trial(3, with("act2", json!("tanh")), Some(0.4)),
        ];
        let result = SearchResult {
            engine: "test".into(),
            goal: reprolab_core::Goal::Max,
            best: Some(trials[1].clone()),
            spent_s: 3.6,
            budget_s: None,
            stop: Stop::Budget,
            trials,
        };
        (result, lucky, steady)
    }

    fn objective(lucky: Config, steady: Config) -> Synth {
        Synth::new(move |c, _, _| {
            Some(if *c == steady {
                0.9
            } else if *c == lucky {
                0.5
            } else {
                0.1
            })
        })
    }

    /// `confirm` of `found` on `obj` for the study subject: `budget` over a `reference` training
    /// time, with the default settings but `seed`.
    fn confirmed(
        obj: &Synth,
        found: SearchResult,
        budget: Budget,
        reference: f64,
        seed: u64,
    ) -> SearchResult {
        let settings = SearchSettings {
            seed,
            ..SearchSettings::default()
        };
        block_on(confirm(
            obj,
            &study_subject(true),
            found,
            budget,
            reference,
            &settings,
        ))
        .unwrap()
    }

    #[test]
    fn finalists_beat_the_faulty_config_and_are_distinct() {
        let subject = study_subject(true);
        let (mut r, lucky, steady) = found();
        r.trials.push(trial(4, lucky.clone(), Some(1.0)));
        assert_eq!(finalists(&subject, &r.trials, 3), vec![lucky, steady]);
    }

    #[test]
    fn a_lucky_best_loses_to_a_steady_one_once_both_are_retrained() {
        let (r, lucky, steady) = found();
        let obj = objective(lucky.clone(), steady.clone());
        let c = confirmed(&obj, r, Budget::Trials(4), 0.0, 7);
        // Both once (lucky first, by its single 1.0); then the leaders by mean: steady (0.9)
        // ahead of lucky (0.75). Fresh seeds, numbered on.
        let new = &c.trials[4..];
        assert_eq!(new.len(), 4);
        for (t, (of, config)) in
            new.iter()
                .zip([(1, &lucky), (2, &steady), (2, &steady), (1, &lucky)])
        {
            assert_eq!((t.confirms, &t.config), (Some(of), config));
            assert_eq!(t.seed, trial_seed(7, t.number));
        }
        assert!((c.spent_s - (3.6 + 4.0 * 0.9)).abs() < 1e-9);
        // lucky: (1.0 + 0.5 + 0.5) / 3 against steady's 0.9.
        let best = c.best.unwrap();
        assert_eq!((best.number, best.value), (2, Some(0.9)));
    }

    #[test]
    fn the_leaders_race_on_until_their_runs_are_capped() {
        let (mut r, lucky, steady) = found();
        // A third finalist, steadily 0.7: it overtakes lucky once lucky's runs come in.
        let fair = with("act2", json!("relu"));
        r.trials.push(trial(4, fair.clone(), Some(0.7)));
        let obj = Synth::new({
            let (lucky, steady, fair) = (lucky.clone(), steady.clone(), fair.clone());
            move |c, _, _| {
                Some(match c {
                    c if *c == steady => 0.9,
                    c if *c == fair => 0.7,
                    c if *c == lucky => 0.5,
                    _ => 0.1,
                })
            }
        });
        let c = confirmed(&obj, r, Budget::Trials(40), 0.0, 0);
        let runs = |config: &Config| c.trials.iter().filter(|t| &t.config == config).count();
        // lucky: 1.0, 0.5 (0.75, ahead of fair's 0.7), 0.5 (0.67, behind): three runs.
        assert_eq!(runs(&lucky), 3);
        // steady leads throughout and is capped; fair races on beside it to the cap too.
        assert_eq!((runs(&steady), runs(&fair)), (MAX_RUNS, MAX_RUNS));
        // The config worse than the faulty one is never retrained; the budget is not used up.
        assert_eq!(runs(&with("act2", json!("tanh"))), 1);
        assert_eq!(c.trials.len(), 5 + 2 + 2 * (MAX_RUNS - 1));
        assert_eq!(c.best.unwrap().config, steady);
    }

    #[test]
    fn a_time_budget_is_passed_by_less_than_one_training() {
        let (r, lucky, steady) = found();
        let obj = objective(lucky, steady);
        // 1.5 trainings' worth of 0.9 s: two start, the second while time is left.
        let c = confirmed(&obj, r, Budget::TimeMultiple(1.5), 0.9, 0);
        assert_eq!(c.trials.len(), 6);
        // No time left: nothing is retrained, and the best stays the one of single runs.
        let (r, lucky, steady) = found();
        let none = confirmed(
            &objective(lucky, steady),
            r.clone(),
            Budget::TimeMultiple(0.0),
            0.9,
            0,
        );
        assert_eq!(none.trials, r.trials);
    }

    #[test]
    fn a_lone_finalist_is_left_to_the_validation() {
        let (mut r, lucky, steady) = found();
        r.trials.remove(2);
        let c = confirmed(
            &objective(lucky, steady),
            r.clone(),
            Budget::Trials(4),
            0.0,
            0,
        );
        assert_eq!(c, r);
    }

    #[test]
    fn a_config_that_failed_once_ranks_after_those_that_never_failed() {
        let subject = study_subject(true);
        let (a, b) = (with("lr", json!(0.01)), with("lr", json!(0.1)));
        let trials = vec![
            trial(0, study_faulty(), Some(0.5)),
            trial(1, a.clone(), Some(1.0)),
            trial(2, b.clone(), Some(0.8)),
            trial(3, a, None),
        ];
        let best = best_by_mean(&subject, &trials).unwrap();
        assert_eq!((best.config, best.value), (b, Some(0.8)));
        // Ties on the mean go to more runs.
        let c = with("lr", json!(0.2));
        let trials = vec![
            trial(0, study_faulty(), Some(0.5)),
            trial(1, with("lr", json!(0.3)), Some(0.8)),
            trial(2, c.clone(), Some(0.8)),
            trial(3, c, Some(0.8)),
        ];
        assert_eq!(best_by_mean(&subject, &trials).unwrap().number, 2);
    }
}
