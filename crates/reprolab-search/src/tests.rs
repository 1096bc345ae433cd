//! Samplers, the study loop, budgets and BOHB, on synthetic objectives.

use reprolab_core::{Goal, Param, ParamKind, SearchSpace, Split, Subject};
use serde_json::json;

use crate::space::apply_patch;
use crate::testing::*;
use crate::{
    BohbOptions, Budget, RandomSampler, Sampler, SearchResult, SearchSettings, Stop, TpeSampler,
    Trial, bohb_with, search, search_from,
};

fn settings(budget: Budget, seed: u64) -> SearchSettings {
    SearchSettings {
        budget,
        seed,
        ..SearchSettings::default()
    }
}

fn best_value(r: &SearchResult) -> f64 {
    r.best
        .as_ref()
        .and_then(|t| t.value)
        .unwrap_or(f64::NEG_INFINITY)
}

/// A space with every parameter kind.
/// A search of `subject` over the study's synthetic objective.
fn search_study<S: Sampler>(
    subject: &Subject,
    sampler: &mut S,
    s: &SearchSettings,
) -> SearchResult {
    block_on(search(&Synth::study(), subject, sampler, s)).unwrap()
}

fn mixed_space() -> SearchSpace {
    let mut s = study_space(false);
    s.params.push(Param {
        name: "units".into(),
        kind: ParamKind::Int { low: 1, high: 7 },
        fault: None,
        layer: None,
    });
    s.params.push(Param {
        name: "dropout".into(),
        kind: ParamKind::Float {
            low: 0.0,
            high: 0.5,
        },
        fault: None,
        layer: None,
    });
    s.params.push(Param {
        name: "wd".into(),
        kind: ParamKind::LogFloat {
            low: 1e-5,
            high: 1e-1,
        },
        fault: None,
        layer: None,
    });
    s
}

#[test]
fn samplers_propose_only_in_space_configs() {
    let space = mixed_space();
    let faulty = apply_patch(
        &study_faulty(),
        &cfg(json!({"units": 3, "dropout": 0.1, "wd": 0.001})),
    );
    assert!(space.validate(&faulty).is_empty());
    let samplers: Vec<Box<dyn Sampler>> = vec![
        Box::new(RandomSampler::new(1)),
        Box::new(TpeSampler::new(1, Goal::Max)),
        Box::new(TpeSampler::new(2, Goal::Min)),
    ];
    for mut sampler in samplers {
        let mut history = vec![Trial {
            number: 0,
            config: faulty.clone(),
            value: Some(0.1),
            duration_s: 1.0,
            epochs: None,
            seed: 0,
            pruned: None,
            confirms: None,
            curve: Vec::new(),
        }];
        for i in 1..60 {
            let c = sampler.ask(&space, &history);
            let issues = space.validate(&c);
            assert!(issues.is_empty(), "{}: {issues:?} in {c}", sampler.name());
            assert_eq!(
                c.keys().collect::<Vec<_>>(),
                space.names().collect::<Vec<_>>()
            );
            let value = if i % 7 == 0 {
                None // failed trainings are part of the history too
            } else {
                Some(
                    study_metric(&c, i as u64, 1.0)
                        + 0.01 * f64::from(c.0["units"].as_i64().unwrap() as i32),
                )
            };
            history.push(Trial {
                number: i,
                config: c,
                value,
                duration_s: 1.0,
                epochs: None,
                seed: i as u64,
                pruned: None,
                confirms: None,
                curve: Vec::new(),
            });
        }
    }
}

#[test]
fn random_and_tpe_find_the_good_region() {
    // Log-uniform lr: the region (act2 softmax and lr in [1e-3, 1e-2]) has probability 1/77.
    let subject = study_subject(true);
    for seed in 0..3 {
        let obj = Synth::study();
        let s = settings(Budget::Trials(300), seed);
        let r = block_on(search(&obj, &subject, &mut RandomSampler::new(seed), &s)).unwrap();
        assert_eq!(r.engine, "random");
        assert!(
            best_value(&r) > 0.9,
            "random seed {seed}: {}",
            best_value(&r)
        );

        let obj = Synth::study();
        let s = settings(Budget::Trials(80), seed);
        let r = block_on(search(
            &obj,
            &subject,
            &mut TpeSampler::new(seed, Goal::Max),
            &s,
        ))
        .unwrap();
        assert_eq!(r.engine, "tpe");
        assert!(best_value(&r) > 0.9, "tpe seed {seed}: {}", best_value(&r));
        let best = r.best.unwrap();
        assert_eq!(best.config.0["act2"], json!("softmax"));
        let lr = best.config.0["lr"].as_f64().unwrap();
        assert!((1e-3..=1e-2).contains(&lr), "{lr}");
    }
}

#[test]
fn tpe_beats_random_on_average() {
    // The study's space: lr ~ uniform(1e-6, 10) for random; the TPE models it in log space.
    let subject = study_subject(false);
    let (mut tpe_sum, mut random_sum) = (0.0, 0.0);
    let seeds = 0..6u64;
    for seed in seeds.clone() {
        let s = settings(Budget::Trials(40), seed);
        let r = search_study(&subject, &mut RandomSampler::new(seed), &s);
        random_sum += best_value(&r);
        let t = search_study(&subject, &mut TpeSampler::new(seed, Goal::Max), &s);
        tpe_sum += best_value(&t);
    }
    let n = seeds.count() as f64;
    let (tpe, random) = (tpe_sum / n, random_sum / n);
    assert!(
        tpe > random + 0.05,
        "mean best: tpe {tpe:.3} vs random {random:.3}"
    );
}

#[test]
fn budget_in_trials_counts_the_faulty_trial_and_seeds_trials() {
    let subject = study_subject(false);
    let obj = Synth::study();
    let s = SearchSettings {
        budget: Budget::Trials(7),
        seed: 4,
        parallel: 3,
        ..SearchSettings::default()
    };
    let r = block_on(search(&obj, &subject, &mut RandomSampler::new(4), &s)).unwrap();
    assert_eq!(r.trials.len(), 7);
    assert_eq!(r.stop, Stop::Budget);
    assert_eq!(r.budget_s, None);
    assert_eq!(r.trials[0].config, subject.config);
    assert_eq!(r.trials[0].number, 0);
    for (i, t) in r.trials.iter().enumerate() {
        assert_eq!(t.number, i);
        assert_eq!(t.seed, 4000 + i as u64);
        assert!(t.is_full());
    }
    let calls = obj.calls.borrow();
    assert_eq!(calls.len(), 7);
    assert!(
        calls
            .iter()
            .all(|c| c.2 == Split::Search && c.3.is_none() && c.1.len() == 1)
    );
    assert_eq!(calls[3].1, vec![4003]);
    let spent: f64 = r.trials.iter().map(|t| t.duration_s).sum();
    assert!((r.spent_s - spent).abs() < 1e-9);
}

#[test]
fn a_search_goes_on_from_earlier_trials_without_training_them_again() {
    let subject = study_subject(false);
    let first = search_study(
        &subject,
        &mut RandomSampler::new(1),
        &settings(Budget::Trials(5), 1),
    );
    /// A sampler that records the history it is shown.
    struct Seen(Vec<usize>, RandomSampler);
    impl Sampler for Seen {
        fn ask(&mut self, space: &SearchSpace, history: &[Trial]) -> crate::Config {
            self.0.push(history.len());
            self.1.ask(space, history)
        }
        fn name(&self) -> &'static str {
            "seen"
        }
    }
    let obj = Synth::study();
    let mut seen = Seen(Vec::new(), RandomSampler::new(2));
    let r = block_on(search_from(
        &obj,
        &subject,
        &mut seen,
        &settings(Budget::Trials(3), 2),
        first.trials.clone(),
    ))
    .unwrap();
    // Three new trainings, none of them the faulty config again; the sampler saw the first
    // search's five trials from its first question on.
    assert_eq!(obj.calls.borrow().len(), 3);
    assert_eq!(seen.0, vec![5, 6, 7]);
    assert_eq!(r.trials[..5], first.trials[..]);
    assert_eq!(r.trials.len(), 8);
    for (i, t) in r.trials.iter().enumerate().skip(5) {
        assert_eq!(t.number, i);
        assert_eq!(t.seed, 2000 + i as u64);
    }
    // Its spending is its own; the best is over every trial.
    let new_s: f64 = r.trials[5..].iter().map(|t| t.duration_s).sum();
    assert!((r.spent_s - new_s).abs() < 1e-9);
    assert!(best_value(&r) >= best_value(&first));
    // A prior trial at the target ends it before anything is trained.
    let reached = settings(Budget::Trials(3), 2);
    let stop_at = SearchSettings {
        stop_at: first.best.as_ref().and_then(|t| t.value),
        ..reached
    };
    let obj = Synth::study();
    let done = block_on(search_from(
        &obj,
        &subject,
        &mut RandomSampler::new(2),
        &stop_at,
        first.trials.clone(),
    ))
    .unwrap();
    assert_eq!((done.stop, done.trials.len()), (Stop::StopAt, 5));
    assert!(obj.calls.borrow().is_empty());
    // Without the faulty trial first there is nothing to go on from.
    let err = block_on(search_from(
        &obj,
        &subject,
        &mut RandomSampler::new(2),
        &settings(Budget::Trials(3), 2),
        first.trials[1..].to_vec(),
    ));
    assert!(err.is_err());
}

#[test]
fn budget_as_time_multiple_sums_durations() {
    let subject = study_subject(false);
    // Faulty: 9 epochs = 0.9 s, so 5x = 4.5 s of summed training time.
    let s = settings(Budget::TimeMultiple(5.0), 1);
    for parallel in [1, 4] {
        let obj = Synth::study();
        let s = SearchSettings {
            parallel,
            ..s.clone()
        };
        let r = block_on(search(&obj, &subject, &mut RandomSampler::new(1), &s)).unwrap();
        assert_eq!(r.budget_s.map(|b| (b * 1e9).round() / 1e9), Some(4.5));
        assert!(r.spent_s >= 4.5);
        // The last trial started within the budget (with one worker).
        let last = r.trials.last().unwrap();
        if parallel == 1 {
            assert!(r.spent_s - last.duration_s < 4.5, "{}", r.spent_s);
        }
        assert_eq!(r.trials[0].config, subject.config);
    }
    // An explicit reference time replaces trial 0's duration.
    let s = SearchSettings {
        time_ref_s: Some(2.0),
        ..s
    };
    let r = search_study(&subject, &mut RandomSampler::new(1), &s);
    assert_eq!(r.budget_s, Some(10.0));
    assert!(r.spent_s >= 10.0);
    // Bad settings are refused.
    let bad = SearchSettings {
        parallel: 0,
        ..SearchSettings::default()
    };
    assert!(
        block_on(search(
            &Synth::study(),
            &subject,
            &mut RandomSampler::new(1),
            &bad
        ))
        .is_err()
    );
}

/// The overshoot of every time-budgeted search: spent − budget, and the longest trial.
fn overshoot(r: &SearchResult) -> (f64, f64) {
    let longest = r.trials.iter().map(|t| t.duration_s).fold(0.0, f64::max);
    (r.spent_s - r.budget_s.unwrap(), longest)
}

/// The study's search by each engine (random, TPE, BOHB) with settings `s`.
fn every_engine(subject: &Subject, seed: u64, s: &SearchSettings) -> [SearchResult; 3] {
    [
        search_study(subject, &mut RandomSampler::new(seed), s),
        search_study(subject, &mut TpeSampler::new(seed, Goal::Max), s),
        block_on(bohb_with(
            &Synth::study(),
            subject,
            s,
            &BohbOptions::default(),
        ))
        .unwrap(),
    ]
}

#[test]
fn no_search_overshoots_its_time_budget_by_a_trial() {
    // Durations vary threefold (epochs 9..27 at 0.1 s each) and the faulty config is the
    // cheapest: the case where a batch started on the faulty config's cost overshot most.
    let subject = study_subject(true);
    for m in [2.0, 3.0, 10.0] {
        for seed in 0..4 {
            // One worker: a trial starts only with time left, so the overshoot is less than
            // the last trial, whatever the durations.
            let s = settings(Budget::TimeMultiple(m), seed);
            let runs = every_engine(&subject, seed, &s);
            for r in &runs {
                let (over, _) = overshoot(r);
                let last = r.trials.last().unwrap().duration_s;
                assert!(
                    over >= 0.0 && over < last,
                    "{m}x seed {seed}: {over} {last}"
                );
            }
            // Four workers, with a reference as long as the longest training (what the
            // repair's floor gives): batches are cut to ceil(left / longest), so the
            // overshoot stays below one trial.
            let s = SearchSettings {
                parallel: 4,
                time_ref_s: Some(2.7),
                ..s
            };
            let runs = every_engine(&subject, seed, &s);
            for r in &runs {
                let (over, longest) = overshoot(r);
                assert!(
                    over >= 0.0 && over < longest,
                    "{} {m}x seed {seed}: {over} {longest}",
                    r.engine
                );
            }
        }
    }
}

#[test]
fn stop_at_ends_the_search_early() {
    let subject = study_subject(true);
    let obj = Synth::study();
    let s = SearchSettings {
        budget: Budget::Trials(500),
        seed: 2,
        stop_at: Some(0.9),
        ..SearchSettings::default()
    };
    let r = block_on(search(
        &obj,
        &subject,
        &mut TpeSampler::new(2, Goal::Max),
        &s,
    ))
    .unwrap();
    assert_eq!(r.stop, Stop::StopAt);
    assert!(r.trials.len() < 500);
    let last = r.trials.last().unwrap();
    assert!(last.value.unwrap() >= 0.9);
    assert!(
        r.trials[..r.trials.len() - 1]
            .iter()
            .all(|t| t.value.unwrap() < 0.9)
    );
    assert_eq!(r.best.unwrap().number, last.number);
}

#[test]
fn best_prefers_fewer_changes_on_ties() {
    // A metric that only looks at act2: every softmax config ties.
    let subject = study_subject(false);
    let obj = Synth::new(|c, _, _| {
        Some(if c.0["act2"] == json!("softmax") {
            0.9
        } else {
            0.1
        })
    });
    let s = settings(Budget::Trials(150), 3);
    let r = block_on(search(&obj, &subject, &mut RandomSampler::new(3), &s)).unwrap();
    let best = r.best.unwrap();
    let changes = |t: &Trial| crate::space::patch_diff(&subject.config, &t.config).len();
    let min = r
        .trials
        .iter()
        .filter(|t| t.value == Some(0.9))
        .map(changes)
        .min()
        .unwrap();
    assert_eq!(changes(&best), min);
}

#[test]
fn bohb_is_cheaper_per_config_and_finds_the_region() {
    // The study's space (lr ~ uniform(1e-6, 10) for random search).
    let subject = study_subject(false);
    let seeds = 0..6u64;
    let (mut found, mut random_found, mut bohb10, mut random20) = (0, 0, 0.0, 0.0);
    for seed in seeds.clone() {
        let s = settings(Budget::TimeMultiple(30.0), seed);
        let obj = Synth::study();
        // Three rungs (the paper's shape), so that low fidelities dominate the cost.
        let three_rungs = crate::BohbOptions {
            s_max: 2,
            ..Default::default()
        };
        let b = block_on(crate::bohb_with(&obj, &subject, &s, &three_rungs)).unwrap();
        assert_eq!(b.engine, "bohb");
        assert_eq!(b.trials[0].config, subject.config);
        assert!(b.trials[0].is_full());
        assert!(b.spent_s >= 27.0 && b.budget_s.is_some());
        // Low-fidelity trials train fewer epochs than the config's own, and cost less.
        let low: Vec<&Trial> = b.trials.iter().filter(|t| !t.is_full()).collect();
        assert!(!low.is_empty());
        for t in &low {
            assert!(t.epochs.unwrap() < epochs_of(&t.config));
            assert!((t.duration_s - 0.1 * t.epochs.unwrap() as f64).abs() < 1e-9);
        }
        let calls = obj.calls.borrow();
        assert_eq!(calls.len(), b.trials.len());
        assert!(calls.iter().zip(&b.trials).all(|(c, t)| c.3 == t.epochs));
        // Distinct configs looked at: more than a full-fidelity search can afford.
        let mut configs: Vec<String> = b.trials.iter().map(|t| t.config.canonical_json()).collect();
        configs.sort();
        configs.dedup();
        let per_config = b.spent_s / configs.len() as f64;
        let r = search_study(&subject, &mut RandomSampler::new(seed), &s);
        let random_per_config = r.spent_s / r.trials.len() as f64;
        random_found += usize::from(best_value(&r) > 0.9);
        assert!(
            per_config < 0.75 * random_per_config,
            "seed {seed}: {per_config} s per config vs random's {random_per_config}"
        );
        assert!(
            configs.len() > r.trials.len(),
            "bohb {} vs random {}",
            configs.len(),
            r.trials.len()
        );
        // The best is a full-fidelity trial.
        let best = b.best.unwrap();
        assert!(best.is_full());
        found += usize::from(best.value.unwrap() > 0.9);
        // Half the budget against random search's 20x.
        let s10 = settings(Budget::TimeMultiple(10.0), seed);
        bohb10 += best_value(
            &block_on(crate::bohb_with(
                &Synth::study(),
                &subject,
                &s10,
                &three_rungs,
            ))
            .unwrap(),
        );
        let s20 = settings(Budget::TimeMultiple(20.0), seed);
        random20 += best_value(
            &block_on(search(
                &Synth::study(),
                &subject,
                &mut RandomSampler::new(seed),
                &s20,
            ))
            .unwrap(),
        );
    }
    // The region (softmax and lr in [1e-3, 1e-2]) is 1/11 x 1/7 of the log-scaled space and
    // 1/11 x 1e-3 of the uniform one random search draws from.
    assert!(
        found >= 2 && found > random_found,
        "bohb found the region in {found} of 6 runs, random search in {random_found}"
    );
    assert!(
        bohb10 > random20,
        "mean best: bohb 10x {bohb10} vs random 20x {random20} (sums)"
    );
}

#[test]
fn bohb_without_a_fidelity_key_trains_fully() {
    let subject = study_subject(true);
    let opt = BohbOptions {
        fidelity_key: "no_such_key".into(),
        ..BohbOptions::default()
    };
    let r = block_on(bohb_with(
        &Synth::study(),
        &subject,
        &settings(Budget::Trials(20), 0),
        &opt,
    ))
    .unwrap();
    assert_eq!(r.trials.len(), 20);
    assert!(r.trials.iter().all(Trial::is_full));
}

#[test]
fn pruning_stops_trials_behind_the_median_and_never_picks_them() {
    let subject = study_subject(true);
    let pruned_settings = |budget, seed| SearchSettings {
        prune: Some(crate::PercentilePruner::median()),
        ..settings(budget, seed)
    };
    for seed in 0..3u64 {
        let s = pruned_settings(Budget::Trials(40), seed);
        let obj = Synth::study();
        let r = block_on(search(&obj, &subject, &mut RandomSampler::new(seed), &s)).unwrap();
        assert_eq!(r.trials.len(), 40);
        // The first n_startup_trials (5) complete trials set no thresholds: never pruned.
        assert!(r.trials[..5].iter().all(|t| t.pruned.is_none()));
        let pruned: Vec<&Trial> = r.trials.iter().filter(|t| t.pruned.is_some()).collect();
        assert!(!pruned.is_empty(), "seed {seed}: nothing pruned");
        for t in &pruned {
            let at = t.pruned.unwrap();
            // No result, and it trained (and cost) only up to the epoch it was pruned at.
            assert_eq!(t.value, None);
            assert!((t.duration_s - 0.1 * (at.epoch + 1) as f64).abs() < 1e-9);
            assert_eq!(t.curve.len() as u64, at.epoch + 1);
        }
        let best = r.best.as_ref().unwrap();
        assert!(best.pruned.is_none() && best.value.is_some());
        // Pruned trials are cheaper: the study spent less than its 40 trainings in full.
        let full: f64 = r
            .trials
            .iter()
            .map(|t| 0.1 * epochs_of(&t.config) as f64)
            .sum();
        assert!(r.spent_s < full - 0.05, "{} of {full}", r.spent_s);
        // The JSON says which trials were pruned.
        let j = serde_json::to_value(&r).unwrap();
        let marked = j["trials"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t.get("pruned").is_some())
            .count();
        assert_eq!(marked, pruned.len());

        // BOHB with a pruner: same rules; the best is a full, unpruned trial.
        let s = pruned_settings(Budget::TimeMultiple(20.0), seed);
        let b = block_on(crate::bohb(&Synth::study(), &subject, &s)).unwrap();
        let best = b.best.unwrap();
        assert!(best.pruned.is_none() && best.is_full());
        assert!(
            b.trials
                .iter()
                .filter(|t| t.pruned.is_some())
                .all(|t| t.value.is_none())
        );

        // Without a pruner nothing changes: the same trials as before, none pruned, no curve.
        let plain = settings(Budget::Trials(40), seed);
        let obj = Synth::study();
        let r = block_on(search(
            &obj,
            &subject,
            &mut RandomSampler::new(seed),
            &plain,
        ))
        .unwrap();
        assert!(
            r.trials
                .iter()
                .all(|t| t.pruned.is_none() && t.curve.is_empty())
        );
    }
}

#[test]
fn a_pruned_search_reaches_a_full_search_best_for_less() {
    // On the synthetic curve (monotone in the epochs), pruning with the median keeps the best
    // configs: with the same sampler seed and the same number of trials, random search with
    // pruning finds the same best value and spends less.
    let subject = study_subject(true);
    for seed in 0..4u64 {
        let plain = settings(Budget::Trials(30), seed);
        let pruned = SearchSettings {
            prune: Some(crate::PercentilePruner::median()),
            ..plain.clone()
        };
        let a = search_study(&subject, &mut RandomSampler::new(seed), &plain);
        let b = search_study(&subject, &mut RandomSampler::new(seed), &pruned);
        assert!(b.spent_s < a.spent_s, "seed {seed}");
        assert!(
            best_value(&b) >= best_value(&a) - 1e-12,
            "seed {seed}: {} vs {}",
            best_value(&b),
            best_value(&a)
        );
    }
}

/// The study's synthetic accuracy with a slow start in the good region: a config with softmax
/// and a good lr sits below every other config for the first quarter of its epochs (a learning rate
/// that warms up, a loss that needs a few epochs to settle) and then passes every other config,
/// which learn at once and plateau lower.
fn late_bloomer(c: &crate::Config, seed: u64, frac: f64) -> f64 {
    let act2 = c.get("act2").and_then(serde_json::Value::as_str) == Some("softmax");
    let good = if act2 {
        lr_bump(
            c.get("lr")
                .and_then(serde_json::Value::as_f64)
                .unwrap_or(1.0),
        )
    } else {
        0.0
    };
    let plain = study_metric(c, seed, 1.0).min(0.6);
    let jitter = 0.01 * noise(seed, config_stream(c));
    if good > 0.0 {
        if frac <= 0.25 {
            0.05 + jitter
        } else {
            0.6 + 0.35 * good + jitter
        }
    } else {
        plain
    }
}

#[test]
fn the_warm_up_keeps_slow_starters_that_optuna_s_median_prunes() {
    // Trials are pruned on their first noisy epochs by Optuna's MedianPruner (no warm-up): a
    // config that starts slowly and ends best is stopped before it passes the others, so the
    // pruned search misses the region an unpruned one finds. The warm-up of a third of the
    // epochs keeps it.
    let subject = study_subject(true);
    let (mut warm_found, mut optuna_found, mut plain_found) = (0, 0, 0);
    for seed in 0..6u64 {
        let run = |pruner: Option<crate::PercentilePruner>| {
            let s = SearchSettings {
                prune: pruner,
                ..settings(Budget::Trials(40), seed)
            };
            let obj = Synth::new(|c, s, f| Some(late_bloomer(c, s, f)));
            block_on(crate::bohb(&obj, &subject, &s)).unwrap()
        };
        let found = |r: &SearchResult| usize::from(best_value(r) > 0.8);
        let warm = run(Some(crate::PercentilePruner::median()));
        // Never pruned in the first third of its epochs, nor at its last.
        for t in warm.trials.iter().filter(|t| t.pruned.is_some()) {
            let e = epochs_of(&t.config);
            let at = t.pruned.unwrap().epoch;
            assert!(
                at >= e.div_ceil(3) && at + 1 < t.epochs.unwrap_or(e),
                "{at} of {e}"
            );
        }
        warm_found += found(&warm);
        optuna_found += found(&run(Some(crate::PercentilePruner::optuna_median())));
        plain_found += found(&run(None));
    }
    assert!(
        warm_found >= plain_found && warm_found > optuna_found,
        "found the region: warm-up {warm_found}, optuna {optuna_found}, unpruned {plain_found} of 6"
    );
}

#[test]
fn bohb_leaves_its_confirmation_share_to_a_race_among_its_finalists() {
    let subject = study_subject(true);
    for seed in 0..3u64 {
        let s = settings(Budget::Trials(30), seed);
        let r = block_on(crate::bohb(&Synth::study(), &subject, &s)).unwrap();
        assert!(
            r.trials.len() <= 30,
            "seed {seed}: {} trials",
            r.trials.len()
        );
        let repeats: Vec<&Trial> = r.trials.iter().filter(|t| t.confirms.is_some()).collect();
        assert!(!repeats.is_empty(), "seed {seed}: no confirmation");
        // The search stopped at 80% of the budget at the earliest, and only then confirmed.
        let first = r.trials.iter().position(|t| t.confirms.is_some()).unwrap();
        assert!(first >= 24, "seed {seed}: confirmation from trial {first}");
        assert!(r.trials[first..].iter().all(|t| t.confirms.is_some()));
        for t in &repeats {
            let of = &r.trials[t.confirms.unwrap()];
            assert!(t.is_full() && of.is_full() && t.config == of.config);
        }
        assert_eq!(r.best, crate::best_by_mean(&subject, &r.trials));

        let off = BohbOptions {
            confirm_share: 0.0,
            ..BohbOptions::default()
        };
        let plain = block_on(bohb_with(&Synth::study(), &subject, &s, &off)).unwrap();
        assert_eq!(plain.trials.len(), 30);
        assert!(plain.trials.iter().all(|t| t.confirms.is_none()));
    }
}

#[test]
fn bohb_proposes_its_enqueued_configs_first_and_finds_the_fix_they_hold() {
    let subject = study_subject(true);
    let mut fix = study_faulty();
    fix.insert("act2", serde_json::json!("softmax"));
    fix.insert("lr", serde_json::json!(0.005));
    let opt = BohbOptions {
        enqueued: vec![fix.clone()],
        ..BohbOptions::default()
    };
    let r = block_on(bohb_with(
        &Synth::study(),
        &subject,
        &settings(Budget::Trials(12), 0),
        &opt,
    ))
    .unwrap();
    assert_eq!(
        r.trials[1].config, fix,
        "the enqueued config is the first proposal"
    );
    assert_eq!(r.best.unwrap().config, fix);
}
