//! What a traced training says about the program itself, for the rules that read a config.
//!
//! A Keras program records its architecture in the first trace record of each `fit` (`model`:
//! `model.layers` and `model.compile` in Keras' own names, `docs/keras.md`). A program written in
//! the study's style names the same facts in config.json (`act<i>`, `ki<i>`, `loss`, …), but one
//! that hard-codes its layers does not, and the static rules would then see nothing to check.
//! [`complete`] fills the study-style keys the config lacks from that record, so every rule
//! reads the program as it ran; the keys it filled are kept, so that a suggestion can say the
//! change belongs in the program, not in config.json.

use std::collections::BTreeSet;

use reprolab_core::Config;
use serde_json::Value;

/// A config completed with the traced program's own facts.
#[derive(Debug, Clone, PartialEq)]
pub struct Completed {
    /// The config's keys, plus those read from the traced model.
    pub config: Config,
    /// The keys read from the traced model (absent from the config).
    pub from_program: BTreeSet<String>,
}

/// Layers that only apply an activation to the previous layer's output (`Dense(10)` followed by
/// `Activation("softmax")` is the study's `act<i> = softmax`), with the activation each applies
/// (`None`: the layer's own `activation` field names it).
const ACTIVATION_LAYERS: [(&str, Option<&str>); 6] = [
    ("Activation", None),
    ("ReLU", Some("relu")),
    ("Softmax", Some("softmax")),
    ("LeakyReLU", Some("leaky_relu")),
    ("ELU", Some("elu")),
    ("PReLU", Some("prelu")),
];

/// The first `model` record of a trace (Keras programs write one per `fit`), if any.
pub fn traced_model(trace: &[Value]) -> Option<&Value> {
    trace
        .iter()
        .find_map(|r| r.get("model").filter(|m| m.is_object()))
}

/// `config` completed from the trace's `model` record; unchanged when the trace has none.
///
/// Layer keys (`act<i>`, `ki<i>`, `bi<i>`, `unit<i>`, one index per layer that has an
/// activation, in model order) are filled only when the config has none of them: a config that
/// describes some layers has its own numbering, which the model's need not match. `loss`,
/// `optimizer` and `lr` are filled one by one where the config lacks them.
pub fn complete(config: &Config, trace: &[Value]) -> Completed {
    let mut out = Completed {
        config: config.clone(),
        from_program: BTreeSet::new(),
    };
    let Some(model) = traced_model(trace) else {
        return out;
    };
    let mut fill = |key: String, value: Value| {
        if !value.is_null() && config.get(&key).is_none() {
            out.config.0.insert(key.clone(), value);
            out.from_program.insert(key);
        }
    };
    let names_layers = ["act", "ki", "bi", "unit"]
        .iter()
        .any(|p| !crate::arch::indexed(config, p).is_empty());
    if !names_layers {
        for (i, layer) in layers(model).iter().enumerate() {
            fill(format!("act{i}"), Value::from(layer.activation.clone()));
            for (key, field) in [("ki", "kernel_initializer"), ("bi", "bias_initializer")] {
                fill(
                    format!("{key}{i}"),
                    layer.entry.get(field).cloned().unwrap_or_default(),
                );
            }
            fill(
                format!("unit{i}"),
                layer.entry.get("units").cloned().unwrap_or_default(),
            );
        }
    }
    for (key, field) in [
        ("loss", "loss"),
        ("optimizer", "optimizer"),
        ("lr", "learning_rate"),
    ] {
        fill(
            key.to_string(),
            model.get(field).cloned().unwrap_or_default(),
        );
    }
    out
}

/// A layer in the study's sense: one with an activation, the activation layer that follows a
/// linear one folded into it.
struct Layer<'m> {
    entry: &'m Value,
    activation: String,
}

fn layers(model: &Value) -> Vec<Layer<'_>> {
    let mut out: Vec<Layer> = Vec::new();
    for entry in model
        .get("layers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let kind = entry.get("kind").and_then(Value::as_str).unwrap_or("");
        let own = entry.get("activation").and_then(Value::as_str);
        if let Some((_, applies)) = ACTIVATION_LAYERS.iter().find(|(k, _)| *k == kind) {
            let applied = applies.or(own);
            if let (Some(prev), Some(act)) = (out.last_mut(), applied)
                && prev.activation == "linear"
            {
                prev.activation = act.to_string();
            }
            continue;
        }
        if let Some(act) = own {
            out.push(Layer {
                entry,
                activation: act.to_string(),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn config(v: Value) -> Config {
        serde_json::from_value(v).unwrap()
    }

    fn trace_of(model: Value) -> Vec<Value> {
        vec![
            json!({"epoch": 0, "loss": 1.0, "model": model}),
            json!({"epoch": 1, "loss": 0.9}),
        ]
    }

    fn keras_model() -> Value {
        json!({
            "backend": "torch",
            "layers": [
                {"name": "flatten", "kind": "Flatten"},
                {"name": "dense", "kind": "Dense", "units": 64, "activation": "relu",
                 "kernel_initializer": "glorot_uniform", "bias_initializer": "zeros"},
                {"name": "dropout", "kind": "Dropout", "rate": 0.2},
                {"name": "dense_1", "kind": "Dense", "units": 10, "activation": "linear",
                 "kernel_initializer": "zeros", "bias_initializer": "zeros"},
                {"name": "activation", "kind": "Activation", "activation": "sigmoid"}
            ],
            "loss": "categorical_crossentropy", "optimizer": "sgd", "learning_rate": 0.0001
        })
    }

    #[test]
    fn a_config_without_layers_gets_the_models_in_study_numbering() {
        let c = complete(&config(json!({"epochs": 5})), &trace_of(keras_model()));
        let expect = config(json!({
            "epochs": 5,
            "act0": "relu", "ki0": "glorot_uniform", "bi0": "zeros", "unit0": 64,
            // the Activation layer after a linear Dense is that layer's activation
            "act1": "sigmoid", "ki1": "zeros", "bi1": "zeros", "unit1": 10,
            "loss": "categorical_crossentropy", "optimizer": "sgd", "lr": 0.0001
        }));
        assert_eq!(c.config, expect);
        assert_eq!(c.from_program.len(), 11);
        assert!(!c.from_program.contains("epochs"));
    }

    #[test]
    fn the_configs_own_keys_win_and_its_layer_numbering_is_kept() {
        let own = config(json!({"act0": "tanh", "lr": 0.01}));
        let c = complete(&own, &trace_of(keras_model()));
        assert_eq!(c.config.get("act0"), Some(&json!("tanh")));
        assert_eq!(c.config.get("lr"), Some(&json!(0.01)));
        // layers are the config's to number: none is added beside its act0
        assert!(c.config.get("act1").is_none() && c.config.get("ki0").is_none());
        assert_eq!(
            c.from_program,
            ["loss", "optimizer"]
                .map(String::from)
                .into_iter()
                .collect()
        );
    }

    #[test]
    fn a_trace_without_a_model_record_leaves_the_config_alone() {
        let own = config(json!({"lr": 0.01}));
        let trace = vec![json!({"epoch": 0, "loss": 1.0})];
        let c = complete(&own, &trace);
        assert_eq!(c.config, own);
        assert!(c.from_program.is_empty());
        assert!(traced_model(&trace).is_none());
    }

    #[test]
    fn an_activation_layer_after_a_nonlinear_one_is_not_folded_in() {
        let model = json!({"layers": [
            {"kind": "Dense", "units": 8, "activation": "tanh"},
            {"kind": "ReLU"},
            {"kind": "Dense", "units": 1, "activation": "linear"},
            {"kind": "Softmax"}
        ]});
        let c = complete(&Config::default(), &trace_of(model));
        assert_eq!(c.config.get("act0"), Some(&json!("tanh")));
        assert_eq!(c.config.get("act1"), Some(&json!("softmax")));
        assert!(c.config.get("loss").is_none(), "a null field is not a fact");
    }
}
