//! Shared helpers of the integration tests: the bundled subjects, crafted configs and traces.
#![allow(dead_code)]

use std::path::PathBuf;

use reprolab_core::{Config, FaultLabel, Subject};
use reprolab_localize::Suspect;
use serde_json::{Value, json};

pub const CORRECT: [&str; 4] = [
    "cancer-binary",
    "diabetes-regression",
    "digits-cnn",
    "digits-mlp",
];

pub fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub fn subject(name: &str) -> Subject {
    Subject::load(&workspace().join("subjects").join(name))
        .unwrap_or_else(|e| panic!("loading subject {name}: {e}"))
}

/// The subject's own config with some keys replaced.
pub fn config(s: &Subject, changes: Value) -> Config {
    let mut c = s.config.clone();
    for (k, v) in changes.as_object().expect("an object of changes") {
        c.insert(k.clone(), v.clone());
    }
    c
}

pub fn label(s: &str) -> FaultLabel {
    s.parse().unwrap()
}

/// The suspect with this label, if any.
pub fn find<'a>(list: &'a [Suspect], l: &str) -> Option<&'a Suspect> {
    let l = label(l);
    list.iter().find(|s| s.label == l)
}

/// Asserts a suspect with this label, from this source, with at least this confidence.
pub fn expect<'a>(list: &'a [Suspect], l: &str, source: &str, min_conf: f64) -> &'a Suspect {
    let s = find(list, l).unwrap_or_else(|| panic!("no suspect {l} in {}", show(list)));
    assert!(
        s.source.split('+').any(|x| x == source),
        "{l}: source {} lacks {source}; {}",
        s.source,
        show(list)
    );
    assert!(
        s.confidence >= min_conf - 1e-9,
        "{l}: confidence {} < {min_conf}; {}",
        s.confidence,
        show(list)
    );
    assert!((0.0..=1.0).contains(&s.confidence));
    assert!(!s.evidence.is_empty());
    s
}

pub fn show(list: &[Suspect]) -> String {
    let lines: Vec<String> = list.iter().map(|s| format!("  {s}")).collect();
    format!("[\n{}\n]", lines.join("\n"))
}

pub fn sources(list: &[Suspect]) -> Vec<String> {
    list.iter()
        .flat_map(|s| s.source.split('+').map(String::from).collect::<Vec<_>>())
        .collect()
}

/// A healthy trace: loss falling to a plateau, accuracy rising to 0.95 (omitted for
/// regression), layers with moderate gradients, few dead units, no saturation, changing weights.
/// `acts` are the activations of the parametrised layers in model order (the last is the
/// output); `classes` sets the softmax output's constant mean |out| (1/classes).
pub fn healthy(n: usize, acts: &[&str], regression: bool, classes: usize) -> Vec<Value> {
    (0..n)
        .map(|e| {
            let t = e as f64;
            // converges within the run, whatever its length
            let tau = (n as f64 / 8.0).min(1.5);
            let loss = 0.1 + 2.0 * (-t / (n as f64 / 16.0).min(2.0)).exp();
            let acc = 0.95 - 0.6 * (-t / tau).exp();
            let layers: Vec<Value> = acts
                .iter()
                .enumerate()
                .map(|(j, act)| {
                    let last = j + 1 == acts.len();
                    let out = match (*act, last) {
                        ("softmax", true) => 1.0 / classes as f64,
                        _ => 0.5 + 0.01 * t,
                    };
                    json!({
                        "name": (2 * j).to_string(), "kind": "Linear", "act": act,
                        "weight_norm": 5.0 + 0.1 * t + j as f64, "grad_norm": 0.5 - 0.01 * t,
                        "grad_zero_frac": 0.1, "dead_frac": if *act == "relu" { 0.1 } else { 0.0 },
                        "saturated_frac": 0.0, "mean_abs_out": out
                    })
                })
                .collect();
            let mut r = json!({"epoch": e, "loss": loss, "val_loss": loss + 0.05, "nan": false,
                               "layers": layers});
            if !regression {
                r["acc"] = json!(acc);
                r["val_acc"] = json!(acc - 0.01);
            }
            r
        })
        .collect()
}

/// Sets `field` of layer `j` in every epoch to `f(epoch)`.
pub fn set_layer(trace: &mut [Value], j: usize, field: &str, f: impl Fn(usize) -> Value) {
    for (e, r) in trace.iter_mut().enumerate() {
        r["layers"][j][field] = f(e);
    }
}

/// Sets an epoch field in every epoch to `f(epoch)`.
pub fn set(trace: &mut [Value], field: &str, f: impl Fn(usize) -> Value) {
    for (e, r) in trace.iter_mut().enumerate() {
        r[field] = f(e);
    }
}

/// The epochs of a bundled real trace fixture (`tests/data/<name>-trace.json`).
pub fn fixture(name: &str) -> Vec<Value> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(format!("{name}-trace.json"));
    let text = std::fs::read_to_string(&path).unwrap();
    serde_json::from_str(&text).unwrap()
}
