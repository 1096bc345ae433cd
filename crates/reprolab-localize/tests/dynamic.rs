//! Every dynamic monitor fires on a crafted trace and stays quiet on healthy traces: crafted
//! ones and real traces of the bundled correct subjects (tests/data, from `reprolab trace`).

mod common;

use common::*;
use reprolab_core::symptoms::parse_trace;
use reprolab_localize::{dynamic_monitors, layer_map, rank_to_types};
use serde_json::{Value, json};

const MLP: [&str; 3] = ["relu", "relu", "softmax"];
const BIN: [&str; 3] = ["relu", "relu", "sigmoid"];
const REG: [&str; 3] = ["relu", "relu", "linear"];

#[test]
fn quiet_on_crafted_healthy_traces() {
    for (name, acts, regression, classes) in [
        ("digits-mlp", MLP, false, 10),
        ("cancer-binary", BIN, false, 1),
        ("diabetes-regression", REG, true, 1),
    ] {
        let s = subject(name);
        for n in [1, 3, 8, 20, 40] {
            let t = healthy(n, &acts, regression, classes);
            let found = dynamic_monitors(&s, &s.config, &t);
            assert!(found.is_empty(), "{name} {n} epochs: {}", show(&found));
        }
    }
    let s = subject("digits-mlp");
    assert!(dynamic_monitors(&s, &s.config, &[]).is_empty());
}

#[test]
fn quiet_on_real_traces_of_the_correct_subjects() {
    for name in ["digits-mlp", "cancer-binary", "diabetes-regression"] {
        let s = subject(name);
        let t = fixture(name);
        assert!(t.len() >= 20);
        let found = dynamic_monitors(&s, &s.config, &t);
        assert!(found.is_empty(), "{name}: {}", show(&found));
    }
}

#[test]
fn nan_loss() {
    let s = subject("digits-mlp");
    let c = config(&s, json!({"act0": "exponential"}));
    let mut t = healthy(10, &["exponential", "relu", "softmax"], false, 10);
    t[4]["nan"] = json!(true);
    t[4]["loss"] = json!("nan");
    let found = dynamic_monitors(&s, &c, &t);
    let h = expect(&found, "HLR", "nan-loss", 0.75);
    assert_eq!(h.suggestion.as_deref(), Some("lr: 0.001 -> 0.0001"));
    expect(&found, "ACH(0)", "nan-loss", 0.5);
    // Non-finite weights alone (null weight norm after finite ones).
    let mut t = healthy(10, &MLP, false, 10);
    for r in t.iter_mut().skip(6) {
        r["layers"][1]["weight_norm"] = Value::Null;
    }
    let found = dynamic_monitors(&s, &s.config, &t);
    let h = expect(&found, "HLR", "nan-loss", 0.75);
    assert!(h.evidence.contains("epoch 6"), "{}", h.evidence);
}

#[test]
fn nan_from_the_start_or_a_huge_finite_loss() {
    // NaN in the very first epoch at a usual learning rate: the loss is the suspect as much.
    let s = subject("diabetes-regression");
    let c = config(&s, json!({"loss": "categorical_crossentropy"}));
    let mut t = healthy(10, &REG, true, 1);
    set(&mut t, "nan", |_| json!(true));
    set(&mut t, "loss", |_| Value::Null);
    let found = dynamic_monitors(&s, &c, &t);
    let l = expect(&found, "LCH", "nan-loss", 0.45);
    assert_eq!(
        l.suggestion.as_deref(),
        Some("loss: categorical_crossentropy -> mean_squared_error")
    );
    let h = expect(&found, "HLR", "nan-loss", 0.45);
    assert!(h.confidence < 0.5);
    // ... but at a learning rate far outside the usual range, the learning rate.
    let c = config(&s, json!({"optimizer": "sgd", "lr": 3.0}));
    let found = dynamic_monitors(&s, &c, &t);
    expect(&found, "HLR", "nan-loss", 0.75);
    // A finite loss >= 1e3 from the start that does not grow is the loss' scale (MAPE on 0/1).
    let s = subject("cancer-binary");
    let c = config(&s, json!({"loss": "mean_absolute_percentage_error"}));
    let mut t = healthy(10, &BIN, false, 1);
    set(&mut t, "loss", |e| json!(1.5e8 * (1.0 - 0.01 * e as f64)));
    let found = dynamic_monitors(&s, &c, &t);
    let l = expect(&found, "LCH", "nan-loss", 0.45);
    assert_eq!(
        l.suggestion.as_deref(),
        Some("loss: mean_absolute_percentage_error -> binary_crossentropy")
    );
    assert!(
        find(&found, "HLR").unwrap().confidence < 0.5,
        "{}",
        show(&found)
    );
}

#[test]
fn exploding_gradient() {
    let s = subject("digits-mlp");
    let mut t = healthy(10, &MLP, false, 10);
    set_layer(&mut t, 0, "grad_norm", |e| {
        json!(if e >= 3 { 80.0 } else { 0.5 })
    });
    set_layer(&mut t, 2, "grad_norm", |_| json!(0.5));
    let found = dynamic_monitors(&s, &s.config, &t);
    let h = expect(&found, "HLR", "exploding-gradient", 0.7);
    // The config's layer numbers (act0 … act2), not the model's module indices (0, 2, 4).
    assert!(h.evidence.contains("(layers 0 and 2)"), "{}", h.evidence);
    assert!(rank_to_types(&found, 3).contains(&label("HLR")));
}

#[test]
fn vanishing_gradient() {
    let s = subject("digits-mlp");
    let c = config(&s, json!({"act0": "sigmoid", "act1": "tanh"}));
    let mut t = healthy(10, &["sigmoid", "tanh", "softmax"], false, 10);
    set_layer(&mut t, 0, "grad_norm", |_| json!(1e-6));
    let found = dynamic_monitors(&s, &c, &t);
    let a = expect(&found, "ACH(0)", "vanishing-gradient", 0.6);
    assert_eq!(a.suggestion.as_deref(), Some("act0: sigmoid -> relu"));
    expect(&found, "ACH(1)", "vanishing-gradient", 0.6);
    expect(&found, "WCI(0)", "vanishing-gradient", 0.35);
    // Through ReLU layers that die later in training (a large learning rate): the dying ReLUs
    // explain the vanishing gradient; the initialiser stays below the threshold.
    let mut t = healthy(10, &MLP, false, 10);
    set_layer(&mut t, 0, "grad_norm", |e| {
        json!(if e < 3 { 0.5 } else { 1e-6 })
    });
    for j in 0..2 {
        set_layer(&mut t, j, "dead_frac", |e| {
            json!(if e < 3 { 0.1 } else { 0.95 })
        });
    }
    let found = dynamic_monitors(&s, &s.config, &t);
    let w = expect(&found, "WCI(0)", "vanishing-gradient", 0.15);
    assert!(w.confidence < 0.5, "{}", show(&found));
    assert!(w.evidence.contains("dead ReLU"), "{}", w.evidence);
    expect(&found, "HLR", "dying-relu", 0.5);
}

#[test]
fn dying_relu() {
    let s = subject("digits-mlp");
    let mut t = healthy(10, &MLP, false, 10);
    set_layer(&mut t, 1, "dead_frac", |e| {
        json!(if e >= 2 { 0.8 } else { 0.3 })
    });
    let found = dynamic_monitors(&s, &s.config, &t);
    let a = expect(&found, "ACH(1)", "dying-relu", 0.45);
    assert_eq!(a.suggestion.as_deref(), Some("act1: relu -> selu"));
    expect(&found, "HLR", "dying-relu", 0.5);
    expect(&found, "WCI(1)", "dying-relu", 0.3);
    assert!(find(&found, "ACH(0)").is_none());
    // grad_zero_frac counts too
    let mut t = healthy(10, &MLP, false, 10);
    set_layer(&mut t, 0, "grad_zero_frac", |_| json!(0.75));
    let found = dynamic_monitors(&s, &s.config, &t);
    expect(&found, "ACH(0)", "dying-relu", 0.45);
    // ... but not when nothing flows back from above (the next layer is dead).
    let mut t = healthy(10, &MLP, false, 10);
    set_layer(&mut t, 0, "grad_zero_frac", |_| json!(1.0));
    set_layer(&mut t, 1, "dead_frac", |_| json!(0.95));
    let found = dynamic_monitors(&s, &s.config, &t);
    assert!(find(&found, "ACH(0)").is_none(), "{}", show(&found));
    expect(&found, "WCI(1)", "dying-relu", 0.55);
}

#[test]
fn dead_from_the_initial_weights_points_at_the_initialiser() {
    let s = subject("cancer-binary");
    let c = config(&s, json!({"ki0": "zeros"}));
    let mut t = healthy(10, &BIN, false, 1);
    set_layer(&mut t, 0, "dead_frac", |_| json!(1.0));
    set_layer(&mut t, 0, "weight_norm", |_| json!(0.0));
    let found = dynamic_monitors(&s, &c, &t);
    let w = expect(&found, "WCI(0)", "dying-relu", 0.55);
    assert!(w.evidence.contains("initial weights"), "{}", w.evidence);
    let a = find(&found, "ACH(0)").unwrap();
    assert!(a.confidence < 0.5);
    assert!(find(&found, "HLR").is_none(), "{}", show(&found));
}

#[test]
fn no_gradient_at_the_output() {
    // sigmoid + categorical cross-entropy on one unit: the loss is constant, every gradient 0.
    let s = subject("cancer-binary");
    let c = config(&s, json!({"loss": "categorical_crossentropy"}));
    let mut t = healthy(10, &BIN, false, 1);
    for j in 0..3 {
        set_layer(&mut t, j, "grad_norm", |_| json!(0.0));
        set_layer(&mut t, j, "grad_zero_frac", |_| json!(1.0));
        set_layer(&mut t, j, "weight_norm", |_| json!(3.0));
    }
    set(&mut t, "loss", |_| json!(7.5e-8));
    set(&mut t, "acc", |_| json!(0.44));
    set(&mut t, "val_acc", |_| json!(0.375));
    let found = dynamic_monitors(&s, &c, &t);
    let l = expect(&found, "LCH", "output-no-gradient", 0.6);
    assert_eq!(
        l.suggestion.as_deref(),
        Some("loss: categorical_crossentropy -> binary_crossentropy")
    );
    assert_eq!(found[0].label, label("LCH"), "{}", show(&found));
    // zero gradients that come from above are not a dying ReLU
    assert!(
        !sources(&found).contains(&"dying-relu".to_string()),
        "{}",
        show(&found)
    );
    // the generic monitors are explained
    assert!(
        find(&found, "HLR").unwrap().confidence < 0.5,
        "{}",
        show(&found)
    );
    assert_eq!(
        rank_to_types(&found, 5),
        vec![label("LCH")],
        "{}",
        show(&found)
    );
    // With a saturated output the weights blew up instead.
    let mut t2 = t.clone();
    set_layer(&mut t2, 2, "saturated_frac", |_| json!(1.0));
    let found = dynamic_monitors(&s, &s.config, &t2);
    expect(&found, "HLR", "output-no-gradient", 0.4);
    assert!(
        find(&found, "LCH").is_none_or(|l| l.confidence < 0.5),
        "{}",
        show(&found)
    );
}

#[test]
fn saturation_of_hidden_layers_only() {
    let s = subject("digits-mlp");
    let c = config(&s, json!({"act0": "tanh"}));
    let mut t = healthy(12, &["tanh", "relu", "softmax"], false, 10);
    set_layer(&mut t, 0, "saturated_frac", |e| {
        json!(if e >= 4 { 0.8 } else { 0.1 })
    });
    let found = dynamic_monitors(&s, &c, &t);
    let a = expect(&found, "ACH(0)", "saturation", 0.55);
    assert!(a.evidence.contains("8 of 12"), "{}", a.evidence);
    expect(&found, "WCI(0)", "saturation", 0.35);
    // A confident sigmoid output is not a fault.
    let s = subject("cancer-binary");
    let mut t = healthy(12, &BIN, false, 1);
    set_layer(&mut t, 2, "saturated_frac", |_| json!(0.9));
    assert!(dynamic_monitors(&s, &s.config, &t).is_empty());
}

#[test]
fn zero_gradient() {
    let s = subject("digits-mlp");
    let mut t = healthy(10, &MLP, false, 10);
    set_layer(&mut t, 1, "grad_norm", |_| json!(0.0));
    let found = dynamic_monitors(&s, &s.config, &t);
    let w = expect(&found, "WCI(1)", "zero-gradient", 0.45);
    assert_eq!(
        w.suggestion.as_deref(),
        Some("ki1: glorot_uniform -> he_uniform")
    );
    expect(&found, "ACH(1)", "zero-gradient", 0.4);
}

#[test]
fn zero_weights_and_blocked_layers() {
    // ki1 = zeros: layer 1 has no weights and is dead; layer 0 gets no gradient through it.
    let s = subject("cancer-binary");
    let c = config(&s, json!({"ki1": "zeros"}));
    let mut t = healthy(10, &BIN, false, 1);
    set_layer(&mut t, 1, "weight_norm", |_| json!(0.0));
    set_layer(&mut t, 1, "dead_frac", |_| json!(1.0));
    for j in 0..2 {
        set_layer(&mut t, j, "grad_norm", |_| json!(0.0));
        set_layer(&mut t, j, "grad_zero_frac", |_| json!(1.0));
    }
    set_layer(&mut t, 2, "weight_norm", |_| json!(1.2));
    set_layer(&mut t, 0, "weight_norm", |_| json!(5.0));
    let found = dynamic_monitors(&s, &c, &t);
    expect(&found, "WCI(1)", "zero-weights", 0.6);
    expect(&found, "WCI(1)", "zero-gradient", 0.45);
    assert!(find(&found, "ACH(0)").is_none(), "{}", show(&found));
    assert!(
        find(&found, "WCI(0)").is_none_or(|w| w.confidence < 0.5),
        "{}",
        show(&found)
    );
    // The unchanged weights are explained by the frozen layer, not by the learning rate.
    let h = find(&found, "HLR").unwrap();
    assert!(h.confidence < 0.5, "{}", show(&found));
    assert_eq!(
        rank_to_types(&found, 5),
        vec![label("WCI(1)")],
        "{}",
        show(&found)
    );
}

#[test]
fn only_a_relu_gated_layer_that_is_mostly_dead_blocks_the_gradient() {
    // Layer 0 gets no gradient in any epoch; layer 1's units are <= 0 for the whole batch.
    let s = subject("digits-mlp");
    let blocked_by = |act1: &str| {
        let c = config(&s, json!({ "act1": act1 }));
        let mut t = healthy(10, &["relu", act1, "softmax"], false, 10);
        set_layer(&mut t, 0, "grad_norm", |_| json!(0.0));
        set_layer(&mut t, 1, "dead_frac", |_| json!(1.0));
        dynamic_monitors(&s, &c, &t)
    };
    let from_zero_gradient = |found: &[reprolab_localize::Suspect], l: &str| {
        find(found, l).is_some_and(|w| w.source.split('+').any(|x| x == "zero-gradient"))
    };
    // A dead relu layer passes no gradient: layer 0's zero gradient is its consequence.
    let found = blocked_by("relu");
    assert!(!from_zero_gradient(&found, "WCI(0)"), "{}", show(&found));
    expect(&found, "ACH(1)", "dying-relu", 0.35);
    // A tanh (or linear) unit with negative outputs still passes gradient: layer 0's own.
    for act in ["tanh", "linear"] {
        let found = blocked_by(act);
        expect(&found, "WCI(0)", "zero-gradient", 0.45);
        expect(&found, "ACH(0)", "zero-gradient", 0.4);
        assert!(
            !sources(&found).iter().any(|x| x == "dying-relu"),
            "{act}: {}",
            show(&found)
        );
    }
}

#[test]
fn a_saturating_layer_with_negative_outputs_is_not_dead_at_the_initial_weights() {
    // A tanh layer without gradient whose outputs are all negative from the first batch: the
    // activation is still a suspect (a relu layer dead from the start points at the weights).
    let s = subject("digits-mlp");
    for (act, ach) in [("tanh", true), ("relu", false)] {
        let c = config(&s, json!({ "act1": act }));
        let mut t = healthy(10, &["relu", act, "softmax"], false, 10);
        set_layer(&mut t, 1, "grad_norm", |_| json!(0.0));
        set_layer(&mut t, 1, "dead_frac", |_| json!(1.0));
        let found = dynamic_monitors(&s, &c, &t);
        expect(&found, "WCI(1)", "zero-gradient", 0.45);
        let zero_grad_ach = find(&found, "ACH(1)")
            .is_some_and(|a| a.source.split('+').any(|x| x == "zero-gradient"));
        assert_eq!(zero_grad_ach, ach, "{act}: {}", show(&found));
    }
}

#[test]
fn unchanged_weights() {
    let s = subject("digits-mlp");
    let mut t = healthy(10, &MLP, false, 10);
    for j in 0..3 {
        set_layer(&mut t, j, "weight_norm", |e| {
            json!(if e < 3 { 5.0 + e as f64 } else { 9.0 })
        });
    }
    let found = dynamic_monitors(&s, &s.config, &t);
    let h = expect(&found, "HLR", "unchanged-weights", 0.5);
    assert!(h.evidence.contains("7 consecutive"), "{}", h.evidence);
    expect(&found, "OCH", "unchanged-weights", 0.35);
}

#[test]
fn flat_and_diverging_loss() {
    let s = subject("diabetes-regression");
    let mut t = healthy(10, &REG, true, 1);
    set(&mut t, "loss", |_| json!(0.9));
    set(&mut t, "val_loss", |_| json!(0.95));
    let found = dynamic_monitors(&s, &s.config, &t);
    expect(&found, "HLR", "loss-flat", 0.45);
    expect(&found, "OCH", "loss-flat", 0.35);
    expect(&found, "LCH", "loss-flat", 0.35);
    let mut t = healthy(10, &REG, true, 1);
    set(&mut t, "loss", |e| json!(0.5 + (e as f64) * 0.5));
    set(&mut t, "val_loss", |e| json!(0.5 + (e as f64) * 0.5));
    let found = dynamic_monitors(&s, &s.config, &t);
    let h = expect(&found, "HLR", "loss-diverging", 0.6);
    assert_eq!(h.suggestion.as_deref(), Some("lr: 0.001 -> 0.0001"));
}

#[test]
fn flat_accuracy() {
    let s = subject("cancer-binary");
    let mut t = healthy(10, &BIN, false, 1);
    set(&mut t, "acc", |_| json!(0.625));
    set(&mut t, "val_acc", |_| json!(0.625));
    set(&mut t, "loss", |e| json!(0.69 - 0.002 * e as f64));
    let found = dynamic_monitors(&s, &s.config, &t);
    expect(&found, "LCH", "acc-flat", 0.4);
    expect(&found, "ACH(2)", "acc-flat", 0.4);
    expect(&found, "HLR", "acc-flat", 0.3);
    // Perfect from the first epoch on, with a falling loss: not stuck.
    let mut t = healthy(10, &BIN, false, 1);
    set(&mut t, "acc", |_| json!(1.0));
    set(&mut t, "val_acc", |_| json!(1.0));
    let found = dynamic_monitors(&s, &s.config, &t);
    assert!(found.is_empty(), "{}", show(&found));
    // Perfect from the first epoch on while the loss falls slowly (D6-keras on some seeds: 2-D
    // points an easy line separates, the outputs near 0.5): right answers, not constant ones.
    set(&mut t, "loss", |e| json!(0.66 - 0.0005 * e as f64));
    let found = dynamic_monitors(&s, &s.config, &t);
    assert!(
        found.iter().all(|x| !x.source.contains("acc-flat")),
        "{}",
        show(&found)
    );
}

#[test]
fn not_converging() {
    let s = subject("digits-mlp");
    let mut t = healthy(20, &MLP, false, 10);
    set(&mut t, "acc", |e| json!(0.3 + 0.005 * e as f64));
    set(&mut t, "val_acc", |e| json!(0.29 + 0.004 * e as f64));
    let found = dynamic_monitors(&s, &s.config, &t);
    expect(&found, "HLR", "not-converging", 0.45);
    expect(&found, "OCH", "not-converging", 0.4);
    let h = expect(&found, "HNE", "not-converging", 0.3);
    assert_eq!(h.suggestion.as_deref(), Some("epochs: 20 -> 33"));
}

#[test]
fn oscillating_accuracy() {
    let s = subject("digits-mlp");
    let mut t = healthy(20, &MLP, false, 10);
    set(&mut t, "acc", |e| {
        json!(if e % 2 == 0 { 0.80 } else { 0.88 })
    });
    let found = dynamic_monitors(&s, &s.config, &t);
    expect(&found, "HLR", "unstable", 0.45);
    let b = expect(&found, "HBS", "unstable", 0.4);
    assert_eq!(b.suggestion.as_deref(), Some("batch_size: 32 -> 128"));
}

#[test]
fn still_improving_at_the_end() {
    let s = subject("digits-mlp");
    let mut t = healthy(20, &MLP, false, 10);
    set(&mut t, "acc", |e| json!(0.5 + 0.02 * e as f64));
    set(&mut t, "val_acc", |e| json!(0.48 + 0.02 * e as f64));
    let found = dynamic_monitors(&s, &s.config, &t);
    let h = expect(&found, "HNE", "still-improving", 0.6);
    assert_eq!(h.suggestion.as_deref(), Some("epochs: 20 -> 33"));
    assert!(find(&found, "HLR").is_none() && find(&found, "HBS").is_none());
    // Where the config says why it is slow: small lr, large batches, a slow optimiser.
    let c = config(
        &s,
        json!({"lr": 0.0004, "batch_size": 512, "optimizer": "adagrad"}),
    );
    let found = dynamic_monitors(&s, &c, &t);
    expect(&found, "HNE", "still-improving", 0.6);
    let b = expect(&found, "HBS", "still-improving", 0.5);
    assert_eq!(b.suggestion.as_deref(), Some("batch_size: 512 -> 32"));
    let h = expect(&found, "HLR", "still-improving", 0.5);
    assert_eq!(h.suggestion.as_deref(), Some("lr: 0.0004 -> 0.01"));
    expect(&found, "OCH", "still-improving", 0.35);
    // A classifier whose validation accuracy is flat but whose validation loss still falls.
    let mut t = healthy(20, &MLP, false, 10);
    set(&mut t, "val_loss", |e| json!(1.0 - 0.03 * e as f64));
    let found = dynamic_monitors(&s, &s.config, &t);
    let h = expect(&found, "HNE", "still-improving", 0.45);
    assert!(
        h.evidence.starts_with("val_loss still improves"),
        "{}",
        h.evidence
    );
    // A regression whose validation loss still falls.
    let s = subject("diabetes-regression");
    let mut t = healthy(20, &REG, true, 1);
    set(&mut t, "val_loss", |e| json!(2.0 - 0.06 * e as f64));
    let found = dynamic_monitors(&s, &s.config, &t);
    expect(&found, "HNE", "still-improving", 0.45);
}

#[test]
fn few_updates_blame_the_batch_size_and_the_epochs() {
    let s = subject("digits-mlp");
    let c = config(&s, json!({"batch_size": 512, "epochs": 3}));
    // 3 epochs of 3 updates, the loss still near its start.
    let mut t = healthy(3, &MLP, false, 10);
    set(&mut t, "steps", |_| json!(3));
    set(&mut t, "loss", |e| json!(2.3 - 0.05 * e as f64));
    let found = dynamic_monitors(&s, &c, &t);
    let b = expect(&found, "HBS", "few-updates", 0.6);
    assert_eq!(b.suggestion.as_deref(), Some("batch_size: 512 -> 32"));
    assert!(
        b.evidence.contains("9 optimizer updates in 3 epochs"),
        "{}",
        b.evidence
    );
    expect(&found, "HNE", "few-updates", 0.55);
    // Enough updates per epoch but too few epochs: the batch size is a weak suspect.
    set(&mut t, "steps", |_| json!(20));
    let found = dynamic_monitors(&s, &c, &t);
    expect(&found, "HBS", "few-updates", 0.3);
    expect(&found, "HNE", "few-updates", 0.55);
    // At batch 32 a small dataset makes few updates per epoch: only the epochs are to blame.
    let small = config(&s, json!({"batch_size": 32, "epochs": 3}));
    set(&mut t, "steps", |_| json!(3));
    let found = dynamic_monitors(&s, &small, &t);
    assert!(find(&found, "HBS").is_none(), "{}", show(&found));
    expect(&found, "HNE", "few-updates", 0.55);
    // Quiet with enough updates, and without counts.
    set(&mut t, "steps", |_| json!(40));
    assert!(find(&dynamic_monitors(&s, &c, &t), "HBS").is_none());
    let t = healthy(3, &MLP, false, 10);
    assert!(find(&dynamic_monitors(&s, &c, &t), "HBS").is_none());
}

#[test]
fn pinned_softmax_output() {
    let s = subject("cancer-binary");
    let c = config(&s, json!({"act2": "softmax"}));
    let mut t = healthy(10, &["relu", "relu", "softmax"], false, 1);
    set_layer(&mut t, 2, "mean_abs_out", |_| json!(1.0));
    set_layer(&mut t, 2, "grad_norm", |_| json!(0.0));
    for j in 0..3 {
        set_layer(&mut t, j, "weight_norm", |_| json!(4.0));
    }
    set(&mut t, "loss", |_| json!(5.9));
    set(&mut t, "acc", |_| json!(0.625));
    set(&mut t, "val_acc", |_| json!(0.625));
    let found = dynamic_monitors(&s, &c, &t);
    let a = expect(&found, "ACH(2)", "output-pinned", 0.85);
    assert_eq!(a.suggestion.as_deref(), Some("act2: softmax -> sigmoid"));
    assert_eq!(found[0].label, label("ACH(2)"), "{}", show(&found));
    // The generic "nothing moves" monitors report at half confidence.
    let h = find(&found, "HLR").unwrap();
    assert!(h.evidence.contains("explained by the output layer"));
    assert_eq!(
        rank_to_types(&found, 5),
        vec![label("ACH(2)")],
        "{}",
        show(&found)
    );
    // One epoch is enough: a softmax over one unit is 1 by construction.
    let found = dynamic_monitors(&s, &c, &t[..1]);
    expect(&found, "ACH(2)", "output-pinned", 0.85);
    // Near miss: one epoch of a softmax over ten units (mean |out| 0.1).
    let s = subject("digits-mlp");
    let t = healthy(1, &MLP, false, 10);
    assert!(dynamic_monitors(&s, &s.config, &t).is_empty());
}

#[test]
fn pinned_sigmoid_and_constant_outputs() {
    let s = subject("cancer-binary");
    let c = config(&s, json!({"loss": "kullback_leibler_divergence"}));
    let mut t = healthy(10, &BIN, false, 1);
    set_layer(&mut t, 2, "mean_abs_out", |e| {
        json!(if e == 0 {
            0.7
        } else {
            0.995 + 0.0001 * e as f64
        })
    });
    let found = dynamic_monitors(&s, &c, &t);
    let l = expect(&found, "LCH", "output-pinned", 0.5);
    assert_eq!(
        l.suggestion.as_deref(),
        Some("loss: kullback_leibler_divergence -> binary_crossentropy")
    );
    expect(&found, "ACH(2)", "output-pinned", 0.35);
    let s = subject("diabetes-regression");
    let mut t = healthy(10, &REG, true, 1);
    set_layer(&mut t, 2, "mean_abs_out", |_| json!(0.3));
    let found = dynamic_monitors(&s, &s.config, &t);
    expect(&found, "ACH(2)", "output-pinned", 0.5);
    expect(&found, "LCH", "output-pinned", 0.45);
}

#[test]
fn large_activations() {
    let s = subject("digits-mlp");
    let c = config(&s, json!({"act1": "exponential"}));
    let mut t = healthy(10, &["relu", "exponential", "softmax"], false, 10);
    set_layer(&mut t, 1, "mean_abs_out", |e| json!(5.0 * (e + 1) as f64));
    let found = dynamic_monitors(&s, &c, &t);
    expect(&found, "ACH(1)", "large-activations", 0.5);
    expect(&found, "HLR", "large-activations", 0.4);
    // Small at the first batch, huge later: the learning rate blew the weights up.
    let mut t = healthy(10, &MLP, false, 10);
    set_layer(&mut t, 0, "mean_abs_out", |e| {
        json!(if e == 0 { 0.4 } else { 300.0 })
    });
    let found = dynamic_monitors(&s, &s.config, &t);
    let h = expect(&found, "HLR", "large-activations", 0.55);
    assert!(h.evidence.contains("blow"), "{}", h.evidence);
    // Large from the first batch: initialiser or input scaling.
    let mut t = healthy(10, &MLP, false, 10);
    set_layer(&mut t, 0, "mean_abs_out", |_| json!(25.0));
    let found = dynamic_monitors(&s, &s.config, &t);
    expect(&found, "WCI(0)", "large-activations", 0.35);
    expect(&found, "CPP", "large-activations", 0.3);
    assert!(find(&found, "HLR").is_none());
}

#[test]
fn layer_map_follows_the_config_structure() {
    let s = subject("digits-mlp");
    let layers = |acts: &[&str]| parse_trace(&healthy(1, acts, false, 10))[0].layers.clone();
    // layer1 = 1: three Linear layers.
    let m = layer_map(&s.config, &layers(&MLP));
    assert_eq!((m.indices, m.how), (vec![0, 1, 2], "structure"));
    // layer1 = 2: the repeated block makes an extra Linear layer.
    let c = config(&s, json!({"layer1": 2}));
    let m = layer_map(&c, &layers(&["relu", "relu", "relu", "softmax"]));
    assert_eq!((m.indices, m.how), (vec![0, 1, 1, 2], "structure"));
    // layer1 = 0: no layer 1.
    let c = config(&s, json!({"layer1": 0}));
    let m = layer_map(&c, &layers(&["relu", "softmax"]));
    assert_eq!(m.indices, vec![0, 2]);
    // A trace that does not fit the structure: matched by activation names.
    let c = config(&s, json!({"act0": "tanh", "act1": "relu"}));
    let m = layer_map(&c, &layers(&["tanh", "relu", "relu", "relu", "softmax"]));
    assert_eq!((m.indices, m.how), (vec![0, 1, 1, 1, 2], "activations"));
    // The convolutional subject: Conv, Conv, Linear x layer2, Linear.
    let s = subject("digits-cnn");
    let m = layer_map(&s.config, &layers(&["relu", "relu", "relu", "softmax"]));
    assert_eq!(m.indices, vec![0, 1, 2, 3]);
    // Monitors report config indices: a dead second copy of the repeated block is layer 1.
    let s = subject("digits-mlp");
    let c = config(&s, json!({"layer1": 2}));
    let mut t = healthy(10, &["relu", "relu", "relu", "softmax"], false, 10);
    set_layer(&mut t, 2, "dead_frac", |e| {
        json!(if e >= 2 { 0.9 } else { 0.2 })
    });
    let found = dynamic_monitors(&s, &c, &t);
    expect(&found, "ACH(1)", "dying-relu", 0.45);
}

#[test]
fn steady_descent_points_at_the_step_size_and_the_epochs() {
    // A regression whose loss falls at a constant pace to the end, covering a quarter of its
    // first value: the step size (adam at its usual lr) and the epochs.
    let s = subject("diabetes-regression");
    let mut t = healthy(40, &REG, true, 1);
    set(&mut t, "loss", |e| json!(100.0 - 0.7 * e as f64));
    set(&mut t, "val_loss", |e| json!(104.0 - 0.7 * e as f64));
    let found = dynamic_monitors(&s, &s.config, &t);
    let h = expect(&found, "HLR", "steady-descent", 0.55);
    assert_eq!(h.suggestion.as_deref(), Some("lr: 0.001 -> 0.01"));
    expect(&found, "HNE", "steady-descent", 0.5);
    assert!(find(&found, "OCH").is_none(), "{}", show(&found));
    let mut types = rank_to_types(&found, 5);
    types.sort_by_key(|l| l.to_string());
    assert_eq!(types, vec![label("HLR"), label("HNE")], "{}", show(&found));
    // With sgd (a slow optimiser) the optimiser is a suspect too, below the threshold, and it
    // takes the blame before the epochs.
    let c = config(&s, json!({"optimizer": "sgd", "lr": 0.01}));
    let found = dynamic_monitors(&s, &c, &t);
    expect(&found, "OCH", "steady-descent", 0.3);
    assert!(
        find(&found, "HNE").unwrap().confidence < 0.5,
        "{}",
        show(&found)
    );
    // An lr far below the usual one explains the pace: HLR, and HNE below the threshold.
    let c = config(&s, json!({"lr": 3.16e-5}));
    let found = dynamic_monitors(&s, &c, &t);
    expect(&found, "HLR", "steady-descent", 0.55);
    assert!(
        find(&found, "HNE").unwrap().confidence < 0.5,
        "{}",
        show(&found)
    );
    // With still-improving (the same symptom, the validation loss still falls) a label counts
    // once, at the larger confidence.
    // (t's validation loss falls 8% over the last quarter: still-improving's HNE 0.45.)
    let found = dynamic_monitors(&s, &c, &t);
    let h = expect(&found, "HNE", "still-improving", 0.45);
    assert!(h.source.contains("steady-descent"), "{}", show(&found));
    assert!(h.confidence < 0.5, "{}", show(&found));
    // Above the optimiser's usual lr, the step size is a weak suspect only.
    let c = config(&s, json!({"lr": 0.01}));
    let found = dynamic_monitors(&s, &c, &t);
    assert!(find(&found, "HLR").unwrap().confidence < 0.5);
    // Near misses: a loss that decelerates (late pace < half the early one), one that has
    // already more than halved, a flat one (< 0.5% in all), and an oscillating one.
    for loss in [
        (0..40)
            .map(|e| 60.0 + 40.0 * (-(e as f64) / 10.0).exp())
            .collect::<Vec<_>>(),
        (0..40).map(|e| 100.0 - 1.5 * e as f64).collect(),
        (0..40).map(|e| 100.0 - 0.01 * e as f64).collect(),
        (0..40)
            .map(|e| 100.0 - 0.7 * e as f64 + if e % 2 == 0 { 2.0 } else { 0.0 })
            .collect(),
    ] {
        let mut t = healthy(40, &REG, true, 1);
        set(&mut t, "loss", |e| json!(loss[e]));
        set(&mut t, "val_loss", |e| json!(loss[e] + 4.0));
        let found = dynamic_monitors(&s, &s.config, &t);
        assert!(
            !sources(&found).contains(&"steady-descent".to_string()),
            "{loss:?}: {}",
            show(&found)
        );
    }
}

#[test]
fn training_and_validation_disagree() {
    // Training labels prepared differently: the training loss goes to 0 and the accuracy to 1,
    // the validation curves never move from chance.
    let s = subject("digits-mlp");
    let mut t = healthy(20, &MLP, false, 10);
    set(&mut t, "loss", |e| json!(if e == 0 { 0.3 } else { 0.0 }));
    set(&mut t, "acc", |e| json!(if e == 0 { 0.98 } else { 1.0 }));
    set(&mut t, "val_loss", |e| json!(14.5 + 0.001 * e as f64));
    set(&mut t, "val_acc", |_| json!(0.0995));
    let found = dynamic_monitors(&s, &s.config, &t);
    expect(&found, "CPP", "train-val-mismatch", 0.6);
    assert_eq!(
        rank_to_types(&found, 5),
        vec![label("CPP")],
        "{}",
        show(&found)
    );
    // Keras scores the training accuracy against the transformed labels: it stays low too.
    set(&mut t, "acc", |_| json!(0.0986));
    let found = dynamic_monitors(&s, &s.config, &t);
    expect(&found, "CPP", "train-val-mismatch", 0.6);
    // Near misses: a validation accuracy that is good from the first epoch on (a quick fit, then
    // overfitting), and overfitting (the validation loss falls first, then rises).
    set(&mut t, "val_acc", |_| json!(0.93));
    let found = dynamic_monitors(&s, &s.config, &t);
    assert!(find(&found, "CPP").is_none(), "{}", show(&found));
    let mut t = healthy(20, &MLP, false, 10);
    set(&mut t, "loss", |e| json!(2.0 * 0.6f64.powi(e as i32)));
    set(&mut t, "val_loss", |e| {
        json!(2.0 - 0.2 * (e.min(5) as f64) + 0.1 * (e.saturating_sub(5) as f64))
    });
    let found = dynamic_monitors(&s, &s.config, &t);
    assert!(find(&found, "CPP").is_none(), "{}", show(&found));
}

#[test]
fn silent_output_cross_checked_against_a_blow_up_and_a_fit() {
    // The output gets no gradient after the weights blew up (norm x50): the learning rate, not
    // a dead output layer or the loss.
    let s = subject("digits-mlp");
    let mut t = healthy(10, &MLP, false, 10);
    set_layer(&mut t, 2, "grad_norm", |e| {
        json!(if e < 2 { 0.5 } else { 0.0 })
    });
    set_layer(&mut t, 1, "weight_norm", |e| {
        json!(if e < 2 { 5.0 } else { 250.0 })
    });
    let found = dynamic_monitors(&s, &s.config, &t);
    let h = expect(&found, "HLR", "output-no-gradient", 0.6);
    assert!(h.evidence.contains("blew up"), "{}", h.evidence);
    assert!(
        find(&found, "LCH").is_none_or(|l| l.confidence < 0.5),
        "{}",
        show(&found)
    );
    assert!(
        find(&found, "ACH(2)").is_none_or(|a| a.confidence < 0.5),
        "{}",
        show(&found)
    );
    // Near miss: the same silent output without a blow-up still blames the output layer.
    let mut t = healthy(10, &MLP, false, 10);
    set_layer(&mut t, 2, "grad_norm", |e| {
        json!(if e < 2 { 0.5 } else { 0.0 })
    });
    let found = dynamic_monitors(&s, &s.config, &t);
    expect(&found, "ACH(2)", "output-no-gradient", 0.7);
    assert!(
        find(&found, "HLR").is_none_or(|h| h.confidence < 0.5),
        "{}",
        show(&found)
    );
    // A training loss fitted to ~0 (accuracy 1): no gradient is left, nothing is dead.
    let mut t = healthy(10, &MLP, false, 10);
    set_layer(&mut t, 2, "grad_norm", |e| {
        json!(if e < 2 { 0.5 } else { 0.0 })
    });
    set(&mut t, "loss", |e| json!(if e == 0 { 0.3 } else { 0.0 }));
    set(&mut t, "acc", |_| json!(1.0));
    let found = dynamic_monitors(&s, &s.config, &t);
    assert!(
        !sources(&found).contains(&"output-no-gradient".to_string()),
        "{}",
        show(&found)
    );
}

#[test]
fn bounded_output_on_a_regression_target() {
    let s = subject("diabetes-regression");
    let c = config(&s, json!({"act2": "sigmoid"}));
    // The sigmoid output sits at its bound while the loss stays high.
    let mut t = healthy(20, &["relu", "relu", "sigmoid"], true, 1);
    set_layer(&mut t, 2, "mean_abs_out", |_| json!(0.97));
    set(&mut t, "loss", |e| {
        json!(25000.0 - if e < 3 { 100.0 * e as f64 } else { 300.0 })
    });
    let found = dynamic_monitors(&s, &c, &t);
    let a = expect(&found, "ACH(2)", "bounded-regression-output", 0.7);
    assert_eq!(a.suggestion.as_deref(), Some("act2: sigmoid -> linear"));
    // Saturated in most epochs.
    let mut t = healthy(20, &["relu", "relu", "tanh"], true, 1);
    set_layer(&mut t, 2, "saturated_frac", |_| json!(0.8));
    let c = config(&s, json!({"act2": "tanh"}));
    let found = dynamic_monitors(&s, &c, &t);
    expect(&found, "ACH(2)", "bounded-regression-output", 0.7);
    // Near miss: a squashing output that learns (unsaturated, inside its bound, loss falling
    // through the second half), and a linear output at the same numbers.
    let mut t = healthy(20, &["relu", "relu", "tanh"], true, 1);
    set(&mut t, "loss", |e| json!(2.0 - 0.09 * e as f64));
    let found = dynamic_monitors(&s, &c, &t);
    assert!(find(&found, "ACH(2)").is_none(), "{}", show(&found));
    let mut t = healthy(20, &REG, true, 1);
    set_layer(&mut t, 2, "mean_abs_out", |e| json!(0.97 + 0.01 * e as f64));
    let found = dynamic_monitors(&s, &s.config, &t);
    assert!(find(&found, "ACH(2)").is_none(), "{}", show(&found));
}

#[test]
fn a_second_cause_is_not_explained_away() {
    // A softmax output without gradient explains the stall (not-converging's HNE at 30%), but
    // the validation loss still falls at the end: the epochs are a second cause, scored on
    // their own evidence.
    let s = subject("digits-mlp");
    let mut t = healthy(20, &MLP, false, 10);
    set_layer(&mut t, 2, "grad_norm", |e| {
        json!(if e < 2 { 0.5 } else { 0.0 })
    });
    set(&mut t, "acc", |e| json!(0.3 + 0.001 * e as f64));
    set(&mut t, "val_acc", |e| json!(0.29 + 0.001 * e as f64));
    let mut stalled = t.clone();
    set(&mut t, "val_loss", |e| json!(1.0 - 0.03 * e as f64));
    let found = dynamic_monitors(&s, &s.config, &t);
    expect(&found, "ACH(2)", "output-no-gradient", 0.7);
    let h = expect(&found, "HNE", "still-improving", 0.5);
    assert!(h.source.contains("not-converging"), "{}", show(&found));
    assert!(h.evidence.contains("kept"), "{}", h.evidence);
    let types = rank_to_types(&found, 5);
    assert!(types.contains(&label("HNE")), "{}", show(&found));
    // Near miss: without the independent evidence the stall stays explained by the output.
    set(&mut stalled, "val_loss", |_| json!(1.0));
    let found = dynamic_monitors(&s, &s.config, &stalled);
    expect(&found, "ACH(2)", "output-no-gradient", 0.7);
    assert!(
        find(&found, "HNE").is_none_or(|h| h.confidence < 0.5),
        "{}",
        show(&found)
    );
}
