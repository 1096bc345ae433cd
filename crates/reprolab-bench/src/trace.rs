//! The views of `reprolab trace`: its per-epoch records (`epochs.jsonl`, see
//! docs/architecture.md) as tables of cells, the architecture line of a Keras subject and the
//! page of plots (learning curves, per-layer gradient and weight norms, dead ReLU fractions).

use reprolab_report::{Figure, Report, Section, svg};
use serde_json::Value;

/// A record's value as a table cell: `-` for null, integers as they are, floats with 4
/// decimals (in scientific notation when tiny or huge).
pub fn cell(v: &Value) -> String {
    match v {
        Value::Null => "-".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) if n.is_i64() || n.is_u64() => n.to_string(),
        Value::Number(n) => {
            let x = n.as_f64().unwrap_or(f64::NAN);
            if x != 0.0 && (x.abs() < 1e-3 || x.abs() >= 1e4) {
                format!("{x:.2e}")
            } else {
                format!("{x:.4}")
            }
        }
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The per-epoch table: header (`epoch`, then every scalar key in the order first seen), then
/// one row per record. `layers` and a Keras fit's `model` have their own views.
pub fn epoch_rows(epochs: &[Value]) -> Vec<Vec<String>> {
    let mut keys: Vec<String> = vec!["epoch".into()];
    for rec in epochs {
        for (k, v) in rec.as_object().into_iter().flatten() {
            let scalar = !(v.is_object() || v.is_array());
            if scalar && k != "epoch" && !keys.contains(k) {
                keys.push(k.clone());
            }
        }
    }
    let mut rows = vec![keys.clone()];
    for rec in epochs {
        rows.push(keys.iter().map(|k| cell(&rec[k.as_str()])).collect());
    }
    rows
}

/// The per-layer table of one epoch record: header, then one row per layer.
pub fn layer_rows(epoch: &Value) -> Vec<Vec<String>> {
    let cols = [
        "name",
        "kind",
        "act",
        "weight_norm",
        "grad_norm",
        "grad_zero_frac",
        "dead_frac",
        "saturated_frac",
        "mean_abs_out",
    ];
    let mut rows = vec![cols.map(String::from).to_vec()];
    for layer in epoch["layers"].as_array().into_iter().flatten() {
        rows.push(cols.iter().map(|c| cell(&layer[*c])).collect());
    }
    rows
}

/// One line for the architecture a Keras subject's first trace record carries:
/// `Dense(64, relu) → Dense(10, softmax); loss categorical_crossentropy; optimizer adam;
/// backend torch`.
pub fn model_line(model: &Value) -> String {
    let layers: Vec<String> = model["layers"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|l| {
            let args: Vec<String> = ["units", "filters", "rate", "activation"]
                .iter()
                .filter_map(|k| l.get(*k).map(cell))
                .collect();
            format!("{}({})", cell(&l["kind"]), args.join(", "))
        })
        .collect();
    let line = format!(
        "{}; loss {}; optimizer {}",
        layers.join(" → "),
        cell(&model["loss"]),
        cell(&model["optimizer"])
    );
    // Records from before the backend was recorded have none.
    match model["backend"].as_str() {
        Some(backend) => format!("{line}; backend {backend}"),
        None => line,
    }
}

/// The epochs (as cells) whose record says NaN/Inf was seen.
pub fn nan_epochs(epochs: &[Value]) -> Vec<String> {
    epochs
        .iter()
        .filter(|r| r["nan"] == true)
        .map(|r| cell(&r["epoch"]))
        .collect()
}

/// `(x, y)` of `key` in every epoch record that has it as a number (NaN where it is null).
fn curve(epochs: &[Value], key: impl Fn(&Value) -> Option<&Value>) -> Vec<(f64, f64)> {
    epochs
        .iter()
        .filter_map(|r| {
            let x = r["epoch"].as_f64()?;
            let v = key(r)?;
            (v.is_number() || v.is_null()).then(|| (x, v.as_f64().unwrap_or(f64::NAN)))
        })
        .collect()
}

/// The trace as a page of plots: learning curves (with `summary` above them), then per-layer
/// gradient norms (log scale), weight norms and dead ReLU fractions over the epochs, each
/// where some value is finite and not zero.
pub fn plots(subject: &str, seed: u64, summary: &str, epochs: &[Value]) -> Report {
    let mut scalars: Vec<String> = Vec::new();
    for rec in epochs {
        for (k, v) in rec.as_object().into_iter().flatten() {
            if v.is_number() && k != "epoch" && !scalars.contains(k) {
                scalars.push(k.clone());
            }
        }
    }
    let series = |keys: &[&String]| -> Vec<(String, Vec<(f64, f64)>)> {
        keys.iter()
            .map(|k| ((*k).clone(), curve(epochs, |r| r.get(k.as_str()))))
            .collect()
    };
    let (losses, metrics): (Vec<&String>, Vec<&String>) =
        scalars.iter().partition(|k| k.contains("loss"));
    let mut curves = Section {
        heading: "Learning curves".into(),
        paragraphs: vec![summary.to_string()],
        ..Section::default()
    };
    for (name, title, keys) in [("loss", "Loss", &losses), ("metrics", "Metrics", &metrics)] {
        if !keys.is_empty() {
            curves.figures.push(Figure {
                name: name.into(),
                caption: format!("{title} per epoch"),
                svg: svg::line_chart(title, "epoch", name, &series(keys), false),
            });
        }
    }
    let mut sections = vec![curves];
    let layer_names: Vec<String> = epochs
        .first()
        .and_then(|r| r["layers"].as_array())
        .into_iter()
        .flatten()
        .map(|l| {
            let act = l["act"]
                .as_str()
                .map(|a| format!(" {a}"))
                .unwrap_or_default();
            format!("{} {}{act}", cell(&l["name"]), cell(&l["kind"]))
        })
        .collect();
    if !layer_names.is_empty() {
        let per_layer = |field: &str| -> Vec<(String, Vec<(f64, f64)>)> {
            layer_names
                .iter()
                .enumerate()
                .map(|(i, n)| (n.clone(), curve(epochs, |r| r["layers"].get(i)?.get(field))))
                .collect()
        };
        let mut layers = Section {
            heading: "Layers".into(),
            ..Section::default()
        };
        for (field, title, log) in [
            ("grad_norm", "Gradient norm per layer", true),
            ("weight_norm", "Weight norm per layer", false),
            ("dead_frac", "Dead ReLU fraction per layer", false),
        ] {
            let data = per_layer(field);
            if data
                .iter()
                .any(|(_, p)| p.iter().any(|(_, y)| y.is_finite() && *y != 0.0))
            {
                layers.figures.push(Figure {
                    name: field.into(),
                    caption: title.into(),
                    svg: svg::line_chart(title, "epoch", field, &data, log),
                });
            }
        }
        sections.push(layers);
    }
    Report {
        title: format!("{subject} seed {seed}: training dynamics"),
        sections,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn epochs() -> Vec<Value> {
        let layer = |g: f64| {
            json!({"name": "0", "kind": "Linear", "act": "relu", "weight_norm": 3.1,
                   "grad_norm": g, "grad_zero_frac": 0.1, "dead_frac": 0.0,
                   "saturated_frac": null, "mean_abs_out": 0.8})
        };
        vec![
            json!({"epoch": 0, "loss": 2.5, "acc": 0.1, "nan": false, "layers": [layer(0.02)],
                   "model": {"layers": [{"kind": "Dense", "units": 64, "activation": "relu"},
                                        {"kind": "Dropout", "rate": 0.5}],
                             "loss": "mse", "optimizer": "adam", "backend": "torch"}}),
            json!({"epoch": 1, "loss": null, "acc": 0.00001, "nan": true, "steps": 40,
                   "layers": [layer(0.0)]}),
        ]
    }

    #[test]
    fn cells_show_nulls_integers_and_small_or_large_floats() {
        let cases = [
            (json!(null), "-"),
            (json!(true), "true"),
            (json!(40), "40"),
            (json!(0.5), "0.5000"),
            (json!(0.0), "0.0000"),
            (json!(0.00001), "1.00e-5"),
            (json!(12345.0), "1.23e4"),
            (json!("relu"), "relu"),
            (json!([1]), "[1]"),
        ];
        for (value, shown) in cases {
            assert_eq!(cell(&value), shown, "{value}");
        }
    }

    #[test]
    fn the_epoch_table_has_every_scalar_key_in_the_order_first_seen() {
        let rows = epoch_rows(&epochs());
        assert_eq!(rows[0], ["epoch", "loss", "acc", "nan", "steps"]);
        assert_eq!(rows[1], ["0", "2.5000", "0.1000", "false", "-"]);
        assert_eq!(rows[2], ["1", "-", "1.00e-5", "true", "40"]);
        assert_eq!(nan_epochs(&epochs()), ["1"]);
    }

    #[test]
    fn layers_and_the_keras_model_read_as_rows_and_a_line() {
        let e = epochs();
        let rows = layer_rows(&e[0]);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0][0], "name");
        assert_eq!(
            rows[1],
            [
                "0", "Linear", "relu", "3.1000", "0.0200", "0.1000", "0.0000", "-", "0.8000"
            ]
        );
        assert_eq!(
            model_line(&e[0]["model"]),
            "Dense(64, relu) → Dropout(0.5000); loss mse; optimizer adam; backend torch"
        );
        let old = json!({"layers": [], "loss": "mse", "optimizer": "sgd"});
        assert_eq!(model_line(&old), "; loss mse; optimizer sgd");
    }

    #[test]
    fn the_plots_have_curves_and_the_layers_that_moved() {
        let r = plots("s", 3, "summary line", &epochs());
        assert_eq!(r.title, "s seed 3: training dynamics");
        assert_eq!(r.sections[0].paragraphs, ["summary line"]);
        let names = |i: usize| -> Vec<String> {
            r.sections[i]
                .figures
                .iter()
                .map(|f| f.name.clone())
                .collect()
        };
        assert_eq!(names(0), ["loss", "metrics"]);
        // Dead fractions are all zero: no figure.
        assert_eq!(names(1), ["grad_norm", "weight_norm"]);
        let bare = plots("s", 0, "", &[json!({"epoch": 0})]);
        assert_eq!(bare.sections.len(), 1);
        assert!(bare.sections[0].figures.is_empty());
    }
}
