//! A whole repair (`run::repair`) on the synthetic study objective.

use reprolab_search::Budget;

use super::*;
use crate::llm::LlmRepairOptions;
use crate::run::{Engine, RepairSpec, repair};

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
    }
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
