//! Every static rule fires on a crafted faulty config and stays quiet on the four bundled
//! correct subjects.

mod common;

use common::*;
use reprolab_localize::{rank_to_types, static_rules};
use serde_json::json;

#[test]
fn quiet_on_every_correct_subject() {
    for name in CORRECT {
        let s = subject(name);
        let found = static_rules(&s, &s.config);
        assert!(found.is_empty(), "{name}: {}", show(&found));
    }
}

#[test]
fn softmax_with_binary_cross_entropy() {
    let s = subject("cancer-binary");
    let found = static_rules(&s, &config(&s, json!({"act2": "softmax"})));
    let a = expect(&found, "ACH(2)", "out-softmax-binary-ce", 0.7);
    assert_eq!(a.suggestion.as_deref(), Some("act2: softmax -> sigmoid"));
    let l = expect(&found, "LCH", "out-softmax-binary-ce", 0.4);
    assert!(l.confidence < 0.5);
    assert_eq!(rank_to_types(&found, 5), vec![label("ACH(2)")]);
    // An explicit single output unit makes it certain.
    let found = static_rules(&s, &config(&s, json!({"act2": "softmax", "unit2": 1})));
    expect(&found, "ACH(2)", "out-softmax-binary-ce", 0.9);
}

#[test]
fn sigmoid_with_categorical_cross_entropy() {
    let s = subject("cancer-binary");
    let found = static_rules(&s, &config(&s, json!({"loss": "categorical_crossentropy"})));
    let l = expect(&found, "LCH", "out-sigmoid-categorical-ce", 0.7);
    assert_eq!(
        l.suggestion.as_deref(),
        Some("loss: categorical_crossentropy -> binary_crossentropy")
    );
    let a = expect(&found, "ACH(2)", "out-sigmoid-categorical-ce", 0.4);
    assert!(a.confidence < 0.5);
    assert_eq!(rank_to_types(&found, 5), vec![label("LCH")]);
}

#[test]
fn non_probability_output_with_cross_entropy() {
    let s = subject("digits-mlp");
    let found = static_rules(&s, &config(&s, json!({"act2": "linear"})));
    let a = expect(&found, "ACH(2)", "out-not-probability-ce", 0.8);
    assert_eq!(a.suggestion.as_deref(), Some("act2: linear -> softmax"));
    let s = subject("cancer-binary");
    let found = static_rules(&s, &config(&s, json!({"act2": "relu"})));
    let a = expect(&found, "ACH(2)", "out-not-probability-ce", 0.8);
    assert_eq!(a.suggestion.as_deref(), Some("act2: relu -> sigmoid"));
    let s = subject("digits-cnn");
    let found = static_rules(&s, &config(&s, json!({"act3": "elu"})));
    expect(&found, "ACH(3)", "out-not-probability-ce", 0.8);
}

#[test]
fn unbounded_output_with_a_distance_loss() {
    let s = subject("digits-mlp");
    let found = static_rules(
        &s,
        &config(&s, json!({"act2": "linear", "loss": "mean_squared_error"})),
    );
    expect(&found, "ACH(2)", "out-unbounded-distance", 0.5);
    expect(&found, "LCH", "loss-classification", 0.5);
}

#[test]
fn unsuitable_classification_losses() {
    let s = subject("cancer-binary");
    for (loss, conf) in [
        ("mean_absolute_percentage_error", 0.7),
        ("mean_squared_logarithmic_error", 0.7),
        ("poisson", 0.7),
        ("kullback_leibler_divergence", 0.7),
        ("hinge", 0.5),
        ("squared_hinge", 0.5),
        ("mean_absolute_error", 0.55),
    ] {
        let found = static_rules(&s, &config(&s, json!({ "loss": loss })));
        let l = expect(&found, "LCH", "loss-classification", conf);
        assert_eq!(
            l.suggestion.as_deref(),
            Some(format!("loss: {loss} -> binary_crossentropy").as_str()),
            "{loss}"
        );
        assert!(rank_to_types(&found, 5).contains(&label("LCH")), "{loss}");
    }
    // KLD behind a softmax over one-hot labels is categorical cross-entropy: a weak hint only.
    let s = subject("digits-mlp");
    let found = static_rules(
        &s,
        &config(&s, json!({"loss": "kullback_leibler_divergence"})),
    );
    let l = expect(&found, "LCH", "loss-classification", 0.3);
    assert!(l.confidence < 0.5);
}

#[test]
fn unsuitable_regression_losses() {
    let s = subject("diabetes-regression");
    for (loss, conf) in [
        ("categorical_crossentropy", 0.85),
        ("binary_crossentropy", 0.85),
        ("hinge", 0.85),
        ("categorical_hinge", 0.85),
        ("kullback_leibler_divergence", 0.85),
        ("poisson", 0.5),
        ("mean_squared_logarithmic_error", 0.4),
        ("mean_absolute_percentage_error", 0.35),
    ] {
        let found = static_rules(&s, &config(&s, json!({ "loss": loss })));
        let l = expect(&found, "LCH", "loss-regression", conf);
        assert_eq!(
            l.suggestion.as_deref(),
            Some(format!("loss: {loss} -> mean_squared_error").as_str())
        );
    }
}

#[test]
fn bounded_regression_outputs() {
    let s = subject("diabetes-regression");
    for (act, conf) in [
        ("softmax", 0.9),
        ("sigmoid", 0.8),
        ("tanh", 0.8),
        ("relu", 0.45),
        ("selu", 0.35),
    ] {
        let found = static_rules(&s, &config(&s, json!({ "act2": act })));
        let a = expect(&found, "ACH(2)", "out-bounded-regression", conf);
        assert_eq!(
            a.suggestion.as_deref(),
            Some(format!("act2: {act} -> linear").as_str())
        );
    }
    let found = static_rules(&s, &config(&s, json!({"act2": "softmax"})));
    assert_eq!(rank_to_types(&found, 5), vec![label("ACH(2)")]);
}

#[test]
fn hidden_linear_layers() {
    let s = subject("digits-mlp");
    let found = static_rules(&s, &config(&s, json!({"act0": "linear"})));
    let a = expect(&found, "ACH(0)", "hidden-linear", 0.6);
    assert_eq!(a.suggestion.as_deref(), Some("act0: linear -> relu"));
    let found = static_rules(&s, &config(&s, json!({"act0": "linear", "act1": "linear"})));
    let a = expect(&found, "ACH(0,1)", "hidden-linear", 0.7);
    assert_eq!(
        a.suggestion.as_deref(),
        Some("act0: linear -> relu, act1: linear -> relu")
    );
    // A block that is not built (layer1 = 0) has no activation to blame.
    let found = static_rules(&s, &config(&s, json!({"act1": "linear", "layer1": 0})));
    assert!(found.is_empty(), "{}", show(&found));
    // Convolutions too.
    let s = subject("digits-cnn");
    let found = static_rules(&s, &config(&s, json!({"act0": "linear", "act1": "linear"})));
    expect(&found, "ACH(0,1)", "hidden-linear", 0.6);
}

#[test]
fn softmax_or_exponential_in_a_hidden_layer() {
    let s = subject("digits-mlp");
    let found = static_rules(&s, &config(&s, json!({"act1": "softmax"})));
    let a = expect(&found, "ACH(1)", "hidden-softmax", 0.6);
    assert_eq!(a.suggestion.as_deref(), Some("act1: softmax -> relu"));
    let found = static_rules(&s, &config(&s, json!({"act0": "exponential"})));
    expect(&found, "ACH(0)", "hidden-exponential", 0.5);
}

#[test]
fn constant_kernel_initialisers() {
    let s = subject("digits-mlp");
    for init in ["zeros", "ones", "constant"] {
        let found = static_rules(&s, &config(&s, json!({ "ki1": init })));
        let w = expect(&found, "WCI(1)", "kernel-init-constant", 0.7);
        assert_eq!(
            w.suggestion.as_deref(),
            Some(format!("ki1: {init} -> he_uniform").as_str())
        );
    }
    let found = static_rules(&s, &config(&s, json!({"ki2": "zeros"})));
    let w = expect(&found, "WCI(2)", "kernel-init-constant", 0.5);
    assert!(w.confidence < 0.7);
}

#[test]
fn bias_initialisers() {
    let s = subject("cancer-binary");
    let found = static_rules(&s, &config(&s, json!({"bi0": "ones"})));
    let b = expect(&found, "BCI(0)", "bias-init", 0.3);
    assert!(b.confidence < 0.5, "low confidence");
    assert_eq!(b.suggestion.as_deref(), Some("bi0: ones -> zeros"));
    assert!(rank_to_types(&found, 5).is_empty());
    let found = static_rules(&s, &config(&s, json!({"bi1": "orthogonal"})));
    expect(&found, "BCI(1)", "bias-init", 0.8);
    // Random bias initialisers are fine.
    let found = static_rules(&s, &config(&s, json!({"bi1": "random_normal"})));
    assert!(found.is_empty(), "{}", show(&found));
}

#[test]
fn learning_rate_out_of_range() {
    let s = subject("digits-mlp");
    let found = static_rules(&s, &config(&s, json!({"optimizer": "sgd", "lr": 3.0})));
    let h = expect(&found, "HLR", "lr-range", 0.7);
    assert_eq!(h.suggestion.as_deref(), Some("lr: 3 -> 0.01"));
    let found = static_rules(&s, &config(&s, json!({"lr": 0.5})));
    let h = expect(&found, "HLR", "lr-range", 0.7);
    assert_eq!(h.suggestion.as_deref(), Some("lr: 0.5 -> 0.001"));
    let found = static_rules(&s, &config(&s, json!({"lr": 1e-7})));
    expect(&found, "HLR", "lr-range", 0.8);
    let found = static_rules(
        &s,
        &config(&s, json!({"optimizer": "adadelta", "lr": 20.0})),
    );
    expect(&found, "HLR", "lr-range", 0.6);
    // In range: quiet (sgd 0.1, rmsprop 0.01, adagrad 0.05).
    for (opt, lr) in [
        ("sgd", 0.1),
        ("rmsprop", 0.01),
        ("adagrad", 0.05),
        ("nadam", 0.002),
    ] {
        let found = static_rules(&s, &config(&s, json!({"optimizer": opt, "lr": lr})));
        assert!(found.is_empty(), "{opt} {lr}: {}", show(&found));
    }
}

#[test]
fn small_learning_rate_for_the_epoch_budget() {
    let s = subject("digits-mlp");
    let found = static_rules(&s, &config(&s, json!({"lr": 3.16e-5})));
    let h = expect(&found, "HLR", "lr-small-for-budget", 0.5);
    assert_eq!(h.suggestion.as_deref(), Some("lr: 3.16e-5 -> 0.001"));
    // 1e-4 is a common adam setting; and a long training may get there.
    let found = static_rules(&s, &config(&s, json!({"lr": 1e-4})));
    assert!(found.is_empty(), "{}", show(&found));
    let found = static_rules(&s, &config(&s, json!({"lr": 3.16e-5, "epochs": 500})));
    assert!(found.is_empty(), "{}", show(&found));
    // High but in range: a hint only.
    let found = static_rules(&s, &config(&s, json!({"lr": 0.0316})));
    let h = expect(&found, "HLR", "lr-high-for-optimizer", 0.35);
    assert!(h.confidence < 0.5);
    assert_eq!(h.suggestion.as_deref(), Some("lr: 0.0316 -> 0.001"));
}

#[test]
fn slow_optimiser_settings() {
    let s = subject("cancer-binary");
    let found = static_rules(&s, &config(&s, json!({"optimizer": "sgd"})));
    let o = expect(&found, "OCH", "optimizer-slow", 0.5);
    assert_eq!(o.suggestion.as_deref(), Some("optimizer: sgd -> adam"));
    let h = expect(&found, "HLR", "optimizer-slow", 0.3);
    assert!(h.confidence < 0.5);
    assert_eq!(rank_to_types(&found, 5), vec![label("OCH")]);
    let found = static_rules(&s, &config(&s, json!({"optimizer": "adadelta"})));
    let o = expect(&found, "OCH", "optimizer-slow", 0.35);
    assert!(o.confidence < 0.5);
    let found = static_rules(&s, &config(&s, json!({"optimizer": "adagrad"})));
    expect(&found, "OCH", "optimizer-slow", 0.35);
}

#[test]
fn batch_size_one() {
    let s = subject("digits-mlp");
    let found = static_rules(&s, &config(&s, json!({"batch_size": 1})));
    let b = expect(&found, "HBS", "batch-size-one", 0.5);
    assert_eq!(b.suggestion.as_deref(), Some("batch_size: 1 -> 32"));
}

#[test]
fn too_few_epochs() {
    let s = subject("digits-mlp"); // epochs list 10..39, median 20
    let found = static_rules(&s, &config(&s, json!({"epochs": 10})));
    let h = expect(&found, "HNE", "few-epochs", 0.4);
    assert!(h.confidence < 0.5, "low confidence");
    assert_eq!(h.suggestion.as_deref(), Some("epochs: 10 -> 20"));
    let found = static_rules(&s, &config(&s, json!({"epochs": 1})));
    expect(&found, "HNE", "few-epochs", 0.45);
    let s = subject("cancer-binary"); // 16..54, median 30: 16 is the smallest, not <= 15
    let found = static_rules(&s, &config(&s, json!({"epochs": 16})));
    expect(&found, "HNE", "few-epochs", 0.3);
    let found = static_rules(&s, &config(&s, json!({"epochs": 25})));
    assert!(found.is_empty(), "{}", show(&found));
}

#[test]
fn suggestions_stay_in_the_space() {
    // Every suggested value must be accepted by the subject's search space.
    let s = subject("digits-mlp");
    let c = config(
        &s,
        json!({"act0": "linear", "ki1": "zeros", "optimizer": "sgd", "lr": 5.0, "epochs": 10}),
    );
    for sus in static_rules(&s, &c) {
        let Some(sugg) = &sus.suggestion else {
            continue;
        };
        for part in sugg.split(", ") {
            let (key, change) = part.split_once(": ").unwrap();
            let to = change.split(" -> ").nth(1).unwrap();
            let v: serde_json::Value =
                serde_json::from_str(to).unwrap_or_else(|_| serde_json::Value::from(to));
            assert!(
                s.space.get(key).unwrap().contains(&v),
                "{sus}: {to} not in space.{key}"
            );
        }
    }
}
