//! A Keras program that hard-codes its layers: config.json names only the training settings, and
//! the rules read the architecture from the trace's `model` record instead (`program.rs`).

mod common;

use common::*;
use reprolab_core::Config;
use reprolab_localize::{localize, rank_to_types, static_rules, static_rules_traced};
use serde_json::{Value, json};

/// Training settings only: nothing of the layers, the loss or the optimizer.
fn settings_only() -> Config {
    serde_json::from_value(json!({"batch_size": 32, "epochs": 20})).unwrap()
}

/// Three epochs of a healthy-looking training whose first record carries the architecture, as
/// the Keras callback writes it: a sigmoid output under categorical cross-entropy.
fn trace(output: &str, loss: &str) -> Vec<Value> {
    let model = json!({
        "backend": "torch",
        "layers": [
            {"name": "dense", "kind": "Dense", "units": 64, "activation": "relu",
             "kernel_initializer": "glorot_uniform", "bias_initializer": "zeros"},
            {"name": "dense_1", "kind": "Dense", "units": 10, "activation": "linear",
             "kernel_initializer": "glorot_uniform", "bias_initializer": "zeros"},
            {"name": "act", "kind": "Activation", "activation": output}
        ],
        "loss": loss, "optimizer": "adam", "learning_rate": 0.001
    });
    (0..3)
        .map(|e| {
            let mut r = json!({"epoch": e, "loss": 1.0 / (e as f64 + 1.0),
                               "acc": 0.5 + 0.1 * e as f64});
            if e == 0 {
                r["model"] = model.clone();
            }
            r
        })
        .collect()
}

#[test]
fn the_traced_model_is_checked_where_the_config_is_silent() {
    let s = subject("digits-mlp-keras");
    let config = settings_only();
    // The config alone gives the rules nothing to read.
    assert!(static_rules(&s, &config).is_empty());

    let found = static_rules_traced(&s, &config, &trace("sigmoid", "categorical_crossentropy"));
    // The Activation layer after the linear Dense is the output layer's activation (layer 1),
    // and its 10 units (read from the model) make softmax the likelier fix than the loss.
    let a = expect(&found, "ACH(1)", "out-sigmoid-categorical-ce", 0.7);
    // The change is one to the program's code, which the suggestion says.
    assert_eq!(
        a.suggestion.as_deref(),
        Some("act1 (in the program, not in the config): sigmoid -> softmax")
    );
    assert!(a.evidence.contains("over 10 units"), "{}", a.evidence);
    let l = expect(&found, "LCH", "out-sigmoid-categorical-ce", 0.4);
    assert!(l.confidence < 0.5);

    // localize with the trace reads the same facts.
    let merged = localize(
        &s,
        &config,
        Some(&trace("sigmoid", "categorical_crossentropy")),
    );
    assert_eq!(rank_to_types(&merged, 5), vec![label("ACH(1)")]);
}

#[test]
fn a_correct_traced_model_raises_nothing() {
    let s = subject("digits-mlp-keras");
    let found = static_rules_traced(
        &s,
        &settings_only(),
        &trace("softmax", "categorical_crossentropy"),
    );
    assert!(found.is_empty(), "{}", show(&found));
}
