//! The `[space]` entry `init` proposes for one config key: for the hyperparameters the study
//! knows by name (lr, batch_size, epochs, optimizer, activation, loss, units, initialisers), the
//! study's values and fault type, as in the bundled subjects; for any other key, a choice of its
//! current value alone (valid, and searched by nothing until the user widens it).

use serde_json::Value;

use reprolab_core::vocabulary::{ACTIVATIONS, BATCH_SIZES, INITIALIZERS, LOSSES, OPTIMIZERS};

/// The study's hyperparameters, by the names scripts give them; a name may end in a
/// layer index (`act1`, `unit0`), kept for the layer-specific fault types.
enum Known {
    LearningRate,
    BatchSize,
    Epochs,
    Choice {
        fault: &'static str,
        values: &'static [&'static str],
    },
    Units,
}

/// The hyperparameters the study chooses among values for: the names scripts give them, the
/// fault type and the study's values.
const CHOICES: [(&[&str], &str, &[&str]); 5] = [
    (
        &["optimizer", "optimiser", "optim", "opt"],
        "OCH",
        OPTIMIZERS,
    ),
    (
        &["loss", "loss_fn", "loss_function", "criterion"],
        "LCH",
        LOSSES,
    ),
    (&["act", "activation", "activation_fn"], "ACH", ACTIVATIONS),
    (
        &["ki", "kernel_init", "kernel_initializer", "weight_init"],
        "WCI",
        INITIALIZERS,
    ),
    (
        &["bi", "bias_init", "bias_initializer"],
        "BCI",
        INITIALIZERS,
    ),
];

fn known(name: &str) -> Option<(Known, Option<u32>)> {
    let lower = name.to_ascii_lowercase();
    let stem = lower.trim_end_matches(|c: char| c.is_ascii_digit());
    // Empty when there are no digits, which parses to no layer.
    let layer = lower[stem.len()..].parse::<u32>().ok();
    let stem = stem.trim_end_matches('_');
    let kind = match stem {
        "lr" | "learning_rate" | "learningrate" => Known::LearningRate,
        "batch_size" | "batchsize" | "bs" => Known::BatchSize,
        "epochs" | "num_epochs" | "n_epochs" | "max_epochs" | "nb_epoch" | "epoch" => Known::Epochs,
        "unit" | "units" | "hidden" | "hidden_size" | "hidden_units" => Known::Units,
        _ => {
            let (_, fault, values) = CHOICES.iter().find(|(names, ..)| names.contains(&stem))?;
            Known::Choice { fault, values }
        }
    };
    // Only layer-specific fault types take a layer (HLR(1) is not a label).
    let layered = matches!(kind, Known::Units)
        || matches!(kind, Known::Choice { fault, .. } if ["ACH", "WCI", "BCI"].contains(&fault));
    Some((kind, if layered { layer } else { None }))
}

/// One space entry: the TOML inline table and whether it came from the study's vocabulary.
pub struct Entry {
    pub toml: String,
    pub known: bool,
}

/// The space entry for `name` whose current value is `value`, among the script's `choices` when
/// it accepts only those (argparse's `choices`); `None` when the value cannot be written in TOML
/// (null).
pub fn entry(name: &str, value: &Value, choices: Option<&[Value]>) -> Option<Entry> {
    let current = toml_value(value)?;
    if let Some(choices) = choices.filter(|c| c.contains(value)) {
        return among_choices(name, choices);
    }
    let fallback = || Entry {
        toml: format!("{{ type = \"choice\", values = [{current}] }}"),
        known: false,
    };
    let Some((kind, layer)) = known(name) else {
        return Some(fallback());
    };
    let layer = layer.map_or(String::new(), |l| format!(", layer = {l}"));
    let table = match (kind, value) {
        (Known::LearningRate, Value::Number(n)) => {
            let v = n.as_f64()?;
            // The study's range, widened to hold the script's value, on a log scale: a
            // learning rate acts per decade, and the study's uniform draws put nine in ten
            // above 1, where few programs train at all.
            format!(
                "{{ type = \"log-float\", low = {}, high = {}, fault = \"HLR\" }}",
                float(v.min(1e-6)),
                float(v.max(10.0))
            )
        }
        (Known::BatchSize, Value::Number(n)) if n.is_i64() => {
            let v = n.as_i64()?;
            let mut values = BATCH_SIZES.to_vec();
            if !values.contains(&v) {
                values.push(v);
                values.sort_unstable();
            }
            let values: Vec<String> = values.iter().map(i64::to_string).collect();
            format!(
                "{{ type = \"choice\", values = [{}], fault = \"HBS\" }}",
                values.join(", ")
            )
        }
        (Known::Epochs, Value::Number(n)) if n.as_i64().is_some_and(|v| v >= 1) => {
            // From one epoch to four times the script's: room to find too few and too many.
            let v = n.as_i64()?;
            format!(
                "{{ type = \"int\", low = 1, high = {}, fault = \"HNE\" }}",
                v.saturating_mul(4)
            )
        }
        (Known::Units, Value::Number(n)) if n.as_i64().is_some_and(|v| v >= 2) => {
            // The study's {u/2, u, 2u}.
            let v = n.as_i64()?;
            format!(
                "{{ type = \"choice\", values = [{}, {v}, {}], fault = \"LCN\"{layer} }}",
                v / 2,
                v.saturating_mul(2)
            )
        }
        (Known::Choice { fault, values }, Value::String(_)) => {
            let mut values: Vec<String> = values.iter().map(|v| format!("\"{v}\"")).collect();
            if !values.contains(&current) {
                values.push(current.clone());
            }
            format!(
                "{{ type = \"choice\", values = [{}], fault = \"{fault}\"{layer} }}",
                values.join(", ")
            )
        }
        // A known name with a value of another type: not the hyperparameter the study means.
        _ => return Some(fallback()),
    };
    Some(Entry {
        toml: table,
        known: true,
    })
}

/// A choice of the values the script accepts, with the study's fault type when the name is one
/// of its hyperparameters.
fn among_choices(name: &str, choices: &[Value]) -> Option<Entry> {
    let values: Option<Vec<String>> = choices.iter().map(toml_value).collect();
    let values = values?.join(", ");
    let Some((kind, layer)) = known(name) else {
        return Some(Entry {
            toml: format!("{{ type = \"choice\", values = [{values}] }}"),
            known: false,
        });
    };
    let fault = match kind {
        Known::LearningRate => "HLR",
        Known::BatchSize => "HBS",
        Known::Epochs => "HNE",
        Known::Units => "LCN",
        Known::Choice { fault, .. } => fault,
    };
    let layer = layer.map_or(String::new(), |l| format!(", layer = {l}"));
    Some(Entry {
        toml: format!("{{ type = \"choice\", values = [{values}], fault = \"{fault}\"{layer} }}"),
        known: true,
    })
}

/// A float as TOML writes it (always with a `.` or an exponent, so it stays a float).
fn float(v: f64) -> String {
    let s = format!("{v:?}");
    if s.contains(['.', 'e', 'E']) {
        s
    } else {
        format!("{s}.0")
    }
}

/// A JSON value as a TOML value: JSON's string escapes are a subset of TOML's basic strings',
/// and its numbers are valid TOML numbers; objects become inline tables. `None` for null, which
/// TOML cannot write.
pub fn toml_value(v: &Value) -> Option<String> {
    Some(match v {
        Value::Null => return None,
        Value::Bool(b) => b.to_string(),
        Value::Number(n) if n.is_f64() => float(n.as_f64()?),
        Value::Number(n) => n.to_string(),
        Value::String(_) => v.to_string(),
        Value::Array(items) => {
            let items: Option<Vec<String>> = items.iter().map(toml_value).collect();
            format!("[{}]", items?.join(", "))
        }
        Value::Object(map) => {
            let items: Option<Vec<String>> = map
                .iter()
                .map(|(k, v)| Some(format!("{} = {}", Value::from(k.as_str()), toml_value(v)?)))
                .collect();
            format!("{{ {} }}", items?.join(", "))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_study_s_hyperparameters_get_its_values_holding_the_script_s() {
        let lr = entry("learning_rate", &json!(0.05), None).unwrap();
        assert!(lr.known);
        assert_eq!(
            lr.toml,
            "{ type = \"log-float\", low = 1e-6, high = 10.0, fault = \"HLR\" }"
        );
        let bs = entry("batch_size", &json!(100), None).unwrap();
        assert!(
            bs.toml.contains("[16, 32, 64, 100, 128, 256, 512]"),
            "{}",
            bs.toml
        );
        let act = entry("act1", &json!("gelu"), None).unwrap();
        assert!(
            act.toml
                .ends_with("\"linear\", \"gelu\"], fault = \"ACH\", layer = 1 }")
        );
        let epochs = entry("epochs", &json!(5), None).unwrap();
        assert_eq!(
            epochs.toml,
            "{ type = \"int\", low = 1, high = 20, fault = \"HNE\" }"
        );
        // Not layer-specific: no layer even with digits.
        assert!(
            !entry("lr2", &json!(0.1), None)
                .unwrap()
                .toml
                .contains("layer")
        );
        // Each choice hyperparameter by one of its other names.
        for (name, fault) in [
            ("optim", "OCH"),
            ("criterion", "LCH"),
            ("activation_fn", "ACH"),
            ("weight_init", "WCI"),
            ("bias_initializer", "BCI"),
        ] {
            let e = entry(name, &json!("x"), None).unwrap();
            assert!(
                e.known && e.toml.contains(&format!("fault = \"{fault}\"")),
                "{name}"
            );
        }
    }

    #[test]
    fn other_keys_and_mistyped_known_ones_get_their_value_alone() {
        let e = entry("dropout", &json!(0.5), None).unwrap();
        assert!(!e.known);
        assert_eq!(e.toml, "{ type = \"choice\", values = [0.5] }");
        assert!(!entry("optimizer", &json!(3), None).unwrap().known);
        assert!(entry("x", &json!(null), None).is_none());
    }

    #[test]
    fn a_script_s_choices_bound_the_values() {
        let choices = [json!("adadelta"), json!("sgd")];
        let opt = entry("optimizer", &json!("sgd"), Some(&choices)).unwrap();
        assert!(opt.known);
        assert_eq!(
            opt.toml,
            "{ type = \"choice\", values = [\"adadelta\", \"sgd\"], fault = \"OCH\" }"
        );
        let arch = entry("arch", &json!("b"), Some(&[json!("a"), json!("b")])).unwrap();
        assert_eq!(arch.toml, "{ type = \"choice\", values = [\"a\", \"b\"] }");
        // A default outside its choices: the choices cannot hold the current config.
        let odd = entry("optimizer", &json!("adam"), Some(&choices)).unwrap();
        assert!(odd.toml.contains("\"adam\""), "{}", odd.toml);
    }

    #[test]
    fn json_values_become_toml() {
        assert_eq!(toml_value(&json!("a\"b")).unwrap(), "\"a\\\"b\"");
        assert_eq!(toml_value(&json!(2.0)).unwrap(), "2.0");
        assert_eq!(toml_value(&json!([1, "x"])).unwrap(), "[1, \"x\"]");
        assert_eq!(
            toml_value(&json!({"a b": true})).unwrap(),
            "{ \"a b\" = true }"
        );
    }
}
