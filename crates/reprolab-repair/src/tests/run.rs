//! A whole repair (`run::repair`) on the synthetic study objective.

use std::future::Future;

use reprolab_core::{Config, Goal, Split};
use reprolab_search::{Budget, Objective};
use serde_json::json;

use super::*;
use crate::llm::LlmRepairOptions;
use crate::run::{Engine, RepairSpec, repair, verdict};

fn spec(engine: Engine, minimize: bool) -> RepairSpec {
    RepairSpec {
        engine,
        budget: Budget::Trials(30),
        seed: 1,
        runs: 6,
        minimize,
        stop_at: None,
        parallel: 1,
        llm: None,
        llm_options: LlmRepairOptions::default(),
        prune: None,
    }
}

#[test]
fn a_pruned_trial_is_never_the_patch() {
    let subject = study_subject(true);
    for engine in [Engine::Random, Engine::Bohb] {
        for seed in 0..3 {
            let spec = RepairSpec {
                budget: Budget::TimeMultiple(20.0),
                seed,
                prune: Some(reprolab_search::PercentilePruner::median()),
                ..spec(engine, false)
            };
            let obj = Synth::study();
            let run = block_on(repair(&obj, &subject, &spec, |_, _| Vec::new())).unwrap();
            let pruned: Vec<_> = run
                .search
                .trials
                .iter()
                .filter(|t| t.pruned.is_some())
                .collect();
            assert!(!pruned.is_empty(), "{engine:?} seed {seed}: nothing pruned");
            assert!(pruned.iter().all(|t| t.value.is_none()));
            let best = run.search.best.as_ref().unwrap();
            assert!(best.pruned.is_none(), "{engine:?}: a pruned best");
            if let Some(patch) = run.final_patch() {
                assert!(
                    !pruned
                        .iter()
                        .any(|t| &t.config == patch && t.number == best.number),
                    "{engine:?}: the patch is a pruned trial"
                );
            }
            // Validation retrains fully: every call after the search has no fidelity and
            // holdout/search splits as before (pruning is the search's only).
            assert!(run.validation.is_some());
        }
    }
    // Engines that do not prune ignore it.
    let spec = RepairSpec {
        prune: Some(reprolab_search::PercentilePruner::median()),
        ..spec(Engine::Guided, false)
    };
    let run = block_on(repair(&Synth::study(), &subject, &spec, |_, _| Vec::new())).unwrap();
    assert!(run.search.trials.iter().all(|t| t.pruned.is_none()));
}

#[test]
fn a_repair_searches_validates_and_minimises() {
    let subject = study_subject(true);
    let obj = Synth::study();
    let run = block_on(repair(&obj, &subject, &spec(Engine::Tpe, true), |_, _| {
        Vec::new()
    }))
    .unwrap();
    assert_eq!(run.engine, Engine::Tpe);
    assert!(run.time_ref_s >= 0.0);
    let v = run
        .validation
        .as_ref()
        .expect("TPE beats the faulty config");
    assert_eq!(v.runs, 6);
    if let Some(m) = &run.minimized {
        assert!(m.result.changed.len() <= v.changed.len());
    }
    // Repaired exactly when the holdout validation of the final patch confirms it.
    let fv = run.final_validation().unwrap();
    assert!(fv.significant, "{fv:?}");
    assert!(run.repaired);
    assert!(run.verdict.starts_with("repaired: "), "{}", run.verdict);
    assert!(
        run.verdict.contains("on the holdout (IR "),
        "{}",
        run.verdict
    );
    // A trial budget states no seconds.
    assert_eq!(run.budget.spec, "30 trials");
    assert_eq!(run.budget.seconds, None);
    // The same seed repeats the same search.
    let again = block_on(repair(&obj, &subject, &spec(Engine::Tpe, true), |_, _| {
        Vec::new()
    }))
    .unwrap();
    assert_eq!(
        serde_json::to_value(&run.search).unwrap(),
        serde_json::to_value(&again.search).unwrap()
    );
}

#[test]
fn guided_gets_the_localisation_it_is_given_and_llm_engines_need_a_model() {
    let subject = study_subject(true);
    let obj = Synth::study();
    let asked = std::cell::Cell::new(0);
    block_on(repair(
        &obj,
        &subject,
        &spec(Engine::Guided, false),
        |_, _| {
            asked.set(asked.get() + 1);
            Vec::new()
        },
    ))
    .unwrap();
    assert_eq!(asked.get(), 1);
    let e = block_on(repair(&obj, &subject, &spec(Engine::Llm, false), |_, _| {
        Vec::new()
    }))
    .expect_err("no model");
    assert!(e.to_string().contains("needs a model"), "{e}");
}

type HoldoutFn = Box<dyn Fn(&Config, u64) -> Option<f64>>;

/// A synthetic objective whose holdout split disagrees with its search split: `inner` on the
/// search split, `holdout` on the holdout split; durations as `Synth` (0.1 s per epoch).
struct TwoSplits {
    inner: Synth,
    holdout: HoldoutFn,
}

impl Objective for TwoSplits {
    fn evaluate(
        &self,
        config: &Config,
        seeds: &[u64],
        split: Split,
        epochs: Option<u64>,
    ) -> impl Future<Output = Result<Vec<(Option<f64>, f64)>, String>> {
        let mut out = block_on(self.inner.evaluate(config, seeds, split, epochs)).unwrap();
        if split == Split::Holdout {
            for ((v, _), seed) in out.iter_mut().zip(seeds) {
                *v = (self.holdout)(config, *seed);
            }
        }
        std::future::ready(Ok(out))
    }

    fn trace(&self, config: &Config, seed: u64) -> impl Future<Output = Result<Trace, String>> {
        self.inner.trace(config, seed)
    }
}

#[test]
fn a_search_gain_the_holdout_refuses_is_not_a_repair() {
    // The case: any change edges the faulty config on the search split (0.504 against
    // 0.496, a constant predictor), but is worse on the holdout; the known fix is better there.
    let subject = study_subject(true);
    let faulty = subject.config.clone();
    let fix = subject.fix.as_ref().unwrap().config.clone();
    let search_faulty = faulty.clone();
    let obj = TwoSplits {
        inner: Synth::new(move |c, seed, _| {
            let base = if *c == search_faulty { 0.496 } else { 0.504 };
            Some(base + 0.001 * noise(seed, config_stream(c)))
        }),
        holdout: Box::new(move |c, seed| {
            let base = if *c == faulty {
                0.5
            } else if *c == fix {
                0.9
            } else {
                0.45
            };
            Some(base + 0.01 * noise(seed, config_stream(c)))
        }),
    };
    for engine in [Engine::Random, Engine::Tpe, Engine::Bohb] {
        let spec = RepairSpec {
            budget: Budget::Trials(6),
            ..spec(engine, true)
        };
        let run = block_on(repair(&obj, &subject, &spec, |_, _| Vec::new())).unwrap();
        // The search did return a best patch, better on the search split …
        assert!(run.search.patch().is_some(), "{engine:?}");
        let v = run.validation.as_ref().unwrap();
        // … that the holdout refuses: not repaired, and said so with the numbers.
        assert!(!v.significant && v.ir.unwrap() < 0.0, "{v:?}");
        assert!(!run.repaired, "{engine:?}");
        assert!(
            run.verdict.starts_with(
                "not repaired: the best patch found was significantly worse on the holdout (IR -"
            ),
            "{}",
            run.verdict
        );
        assert!(run.verdict.contains("p = "), "{}", run.verdict);
        // Minimisation is only tried on a confirmed patch.
        assert!(run.minimized.is_none());
    }
    // No patch at all.
    assert_eq!(
        verdict(None, None),
        (
            false,
            "not repaired: no trial beat the faulty config on the search split".to_string()
        )
    );
}

/// The study subject whose fix trains three times longer (27 epochs against 9): the faulty
/// program's own training is short.
fn short_fault() -> reprolab_core::Subject {
    let mut fixed = study_faulty();
    fixed.insert("act2", json!("softmax"));
    fixed.insert("lr", json!(0.003));
    fixed.insert("epochs", json!(27));
    subject(
        study_space(true),
        study_faulty(),
        Goal::Max,
        Some((fixed, vec!["ACH(2)", "HLR", "HNE"])),
    )
}

#[test]
fn a_budget_buys_the_same_trainings_of_the_default_config_on_a_short_fault() {
    let subject = short_fault();
    let obj = Synth::study();
    let mut trials = Vec::new();
    for m in [10.0, 20.0] {
        let spec = RepairSpec {
            budget: Budget::TimeMultiple(m),
            ..spec(Engine::Random, false)
        };
        let run = block_on(repair(&obj, &subject, &spec, |_, _| Vec::new())).unwrap();
        let b = &run.budget;
        // The faulty config trains in 0.9 s, the default (fixed) config in 2.7 s: m× is m
        // trainings of the default config, not m of the faulty one.
        assert!((b.faulty_s - 0.9).abs() < 1e-9 && (b.default_s.unwrap() - 2.7).abs() < 1e-9);
        assert!((b.reference_s - 2.7).abs() < 1e-9 && (run.time_ref_s - 2.7).abs() < 1e-9);
        assert!((b.seconds.unwrap() - 2.7 * m).abs() < 1e-9, "{b:?}");
        assert!((b.trainings.unwrap() - m).abs() < 1e-9, "{b:?}");
        assert_eq!(run.search.budget_s, b.seconds);
        assert_eq!(b.spent_s, run.search.spent_s);
        assert!(
            b.describe().starts_with(&format!("{m}x = {:.1} s of training = {m:.1} trainings of the default config (2.70 s each; the faulty config trains in 0.90 s)", 2.7 * m)),
            "{}",
            b.describe()
        );
        trials.push(run.search.trials.len());
    }
    assert!(trials[1] > trials[0], "20x buys more than 10x: {trials:?}");

    // Without a default config the faulty config's training time is the unit.
    let mut no_fix = short_fault();
    no_fix.fix = None;
    let spec = RepairSpec {
        budget: Budget::TimeMultiple(10.0),
        ..spec(Engine::Random, false)
    };
    let run = block_on(repair(&obj, &no_fix, &spec, |_, _| Vec::new())).unwrap();
    assert_eq!(run.budget.default_s, None);
    assert!((run.budget.seconds.unwrap() - 9.0).abs() < 1e-9);
    assert!(
        run.budget
            .describe()
            .contains("10.0 trainings of the faulty config (0.90 s each)")
    );
}

#[test]
fn no_engine_overshoots_its_time_budget_by_more_than_one_training() {
    let subject = short_fault();
    for engine in [
        Engine::Random,
        Engine::Tpe,
        Engine::Bohb,
        Engine::Guided,
        Engine::Rules,
    ] {
        for (m, parallel, seed) in [(3.0, 1, 1), (10.0, 1, 2), (10.0, 4, 3), (20.0, 3, 4)] {
            let spec = RepairSpec {
                budget: Budget::TimeMultiple(m),
                parallel,
                seed,
                ..spec(engine, false)
            };
            let run =
                block_on(repair(&Synth::study(), &subject, &spec, |_, _| Vec::new())).unwrap();
            let budget = run.budget.seconds.unwrap();
            assert!(
                (run.search.budget_s.unwrap() - budget).abs() < 1e-9,
                "{engine:?}: {:?} {budget}",
                run.search.budget_s
            );
            // Trainings here last 0.9 to 2.7 s (the default config's 2.7 s is the longest).
            let over = run.search.spent_s - budget;
            assert!(over < 2.7, "{engine:?} {m}x x{parallel}: {over}");
        }
    }
}
