//! What the engines read from a config written in the study's style (`act<i>`, `ki<i>`, `bi<i>`,
//! `unit<i>`, `layer<i>`, `optimizer`, `lr`, `loss`, `batch_size`, `epochs`), plus suggestion
//! helpers that only propose values the subject's search space accepts.

use std::collections::{BTreeMap, BTreeSet};

use reprolab_core::{Config, ParamKind, Subject};
use serde_json::Value;

/// Activations that map outputs into a bounded range (the symptom checks' own list).
pub(crate) use reprolab_core::symptoms::SQUASHING;
/// Activations whose gradient vanishes for large |x| (the saturation monitor's kinds).
pub(crate) const SATURATING: [&str; 4] = ["sigmoid", "tanh", "softsign", "hard_sigmoid"];
/// Activations that give a probability per output unit.
pub(crate) const PROBABILITY: [&str; 3] = ["sigmoid", "softmax", "hard_sigmoid"];
/// Activations without an upper bound (no squashing).
pub(crate) const UNBOUNDED: [&str; 6] =
    ["linear", "relu", "elu", "selu", "softplus", "exponential"];

pub(crate) const CROSS_ENTROPY: [&str; 3] = [
    "categorical_crossentropy",
    "sparse_categorical_crossentropy",
    "binary_crossentropy",
];
pub(crate) const CATEGORICAL_CE: [&str; 2] = [
    "categorical_crossentropy",
    "sparse_categorical_crossentropy",
];
pub(crate) const HINGE: [&str; 3] = ["hinge", "squared_hinge", "categorical_hinge"];
/// Regression-style losses (a distance between prediction and target).
pub(crate) const DISTANCE: [&str; 6] = [
    "mean_squared_error",
    "mean_absolute_error",
    "mean_absolute_percentage_error",
    "mean_squared_logarithmic_error",
    "logcosh",
    "poisson",
];

/// Canonical lowercase spelling of a name from a config (`None`/`null` activation → `linear`,
/// Keras loss aliases → full names).
pub(crate) fn canon(name: &str) -> String {
    let n = name.trim().to_ascii_lowercase().replace(['-', ' '], "_");
    match n.as_str() {
        "mse" => "mean_squared_error".into(),
        "mae" => "mean_absolute_error".into(),
        "mape" => "mean_absolute_percentage_error".into(),
        "msle" => "mean_squared_logarithmic_error".into(),
        "kld" | "kl_divergence" => "kullback_leibler_divergence".into(),
        "log_cosh" => "logcosh".into(),
        "none" | "identity" => "linear".into(),
        _ => n,
    }
}

/// The architecture and training settings a config describes.
pub(crate) struct Arch<'a> {
    pub subject: &'a Subject,
    pub config: &'a Config,
    /// `act<i>` values (canonical), by layer index.
    pub acts: BTreeMap<u32, String>,
    /// The output layer's index: the largest `act<i>` index.
    pub last: Option<u32>,
    /// Keys the config lacks that were read from the traced program (`crate::program`): a
    /// change to one of them is a change to the program's code.
    pub from_program: BTreeSet<String>,
}

impl<'a> Arch<'a> {
    pub fn new(subject: &'a Subject, config: &'a Config) -> Self {
        let acts: BTreeMap<u32, String> = indexed(config, "act")
            .into_iter()
            .map(|(i, v)| {
                let name = match v {
                    Value::Null => "linear".to_string(),
                    Value::String(s) => canon(s),
                    other => canon(&other.to_string()),
                };
                (i, name)
            })
            .collect();
        let last = acts.keys().next_back().copied();
        Arch {
            subject,
            config,
            acts,
            last,
            from_program: BTreeSet::new(),
        }
    }

    /// A config completed from the traced program ([`crate::program::complete`]).
    pub fn with_program(
        subject: &'a Subject,
        config: &'a Config,
        from_program: BTreeSet<String>,
    ) -> Self {
        Arch {
            from_program,
            ..Arch::new(subject, config)
        }
    }

    pub fn str(&self, key: &str) -> Option<String> {
        match self.config.get(key)? {
            Value::String(s) => Some(canon(s)),
            Value::Null => None,
            other => Some(canon(&other.to_string())),
        }
    }

    pub fn num(&self, key: &str) -> Option<f64> {
        self.config.get(key).and_then(Value::as_f64)
    }

    pub fn loss(&self) -> Option<String> {
        self.str("loss")
    }

    pub fn optimizer(&self) -> Option<String> {
        self.str("optimizer")
    }

    pub fn last_act(&self) -> Option<(u32, &str)> {
        let i = self.last?;
        Some((i, self.acts.get(&i)?.as_str()))
    }

    /// How many times layer `i` is built: the value of `layer<i>` when the config has it (an
    /// optional repeated block, 0..2), else 1.
    pub fn multiplicity(&self, i: u32) -> u64 {
        match self.config.get(&format!("layer{i}")) {
            Some(v) => v.as_u64().unwrap_or(1),
            None => 1,
        }
    }

    /// Whether layer `i` exists in the built model (its repeat count is not 0).
    pub fn present(&self, i: u32) -> bool {
        self.multiplicity(i) > 0
    }

    /// Hidden layers (every `act<i>` index below the output's) that are built.
    pub fn hidden(&self) -> Vec<(u32, &str)> {
        let Some(last) = self.last else {
            return Vec::new();
        };
        self.acts
            .iter()
            .filter(|(i, _)| **i < last && self.present(**i))
            .map(|(i, a)| (*i, a.as_str()))
            .collect()
    }

    /// `"key: from -> to"` for the first candidate the space accepts for `key` (any candidate
    /// when the space does not know the key), `None` when no candidate is accepted or the
    /// candidate equals the current value.
    pub fn suggest(&self, key: &str, candidates: &[Value]) -> Option<String> {
        let current = self.config.get(key);
        let param = self.subject.space.get(key);
        let pick = candidates.iter().find(|c| {
            current.is_none_or(|cur| !same(cur, c)) && param.is_none_or(|p| p.contains(c))
        })?;
        Some(match current {
            Some(cur) if self.from_program.contains(key) => format!(
                "{key} (in the program, not in the config): {} -> {}",
                show(cur),
                show(pick)
            ),
            Some(cur) => format!("{key}: {} -> {}", show(cur), show(pick)),
            // The program fixes it itself: the change goes into its code, not config.json.
            None => format!(
                "{key} (not in the config; in the program) -> {}",
                show(pick)
            ),
        })
    }

    pub fn suggest_str(&self, key: &str, candidates: &[&str]) -> Option<String> {
        let vals: Vec<Value> = candidates.iter().map(|s| Value::from(*s)).collect();
        self.suggest(key, &vals)
    }

    /// A learning rate for `optimizer` inside the space: its usual default first, then values
    /// closer to the current one.
    pub fn suggest_lr(&self, candidates: &[f64]) -> Option<String> {
        let vals: Vec<Value> = candidates.iter().map(|x| Value::from(*x)).collect();
        self.suggest("lr", &vals)
    }

    /// The numeric values of a `choice` parameter, sorted.
    pub fn choice_numbers(&self, key: &str) -> Option<Vec<f64>> {
        let p = self.subject.space.get(key)?;
        let ParamKind::Choice { values } = &p.kind else {
            return None;
        };
        let mut xs: Vec<f64> = values.iter().filter_map(Value::as_f64).collect();
        if xs.is_empty() {
            return None;
        }
        xs.sort_by(f64::total_cmp);
        Some(xs)
    }

    /// The value of the space's `choice` list for `key` closest to `target` (as JSON, the
    /// list's own form).
    pub fn choice_value_near(&self, key: &str, target: f64) -> Option<Value> {
        let p = self.subject.space.get(key)?;
        let ParamKind::Choice { values } = &p.kind else {
            return None;
        };
        values
            .iter()
            .filter(|v| v.as_f64().is_some())
            .min_by(|a, b| {
                let da = (a.as_f64().unwrap() - target).abs();
                let db = (b.as_f64().unwrap() - target).abs();
                da.total_cmp(&db)
            })
            .cloned()
    }
}

/// `<prefix><i>` keys of a config with an integer suffix: index → value.
pub(crate) fn indexed<'c>(config: &'c Config, prefix: &str) -> BTreeMap<u32, &'c Value> {
    config
        .iter()
        .filter_map(|(k, v)| {
            let rest = k.strip_prefix(prefix)?;
            if rest.is_empty() || !rest.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            Some((rest.parse().ok()?, v))
        })
        .collect()
}

fn same(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => x == y,
        _ => match (a.as_str(), b.as_str()) {
            (Some(x), Some(y)) => canon(x) == canon(y),
            _ => a == b,
        },
    }
}

pub(crate) fn show(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => match n.as_f64() {
            Some(x) if n.is_f64() => fmt_num(x),
            _ => n.to_string(),
        },
        other => other.to_string(),
    }
}

/// A number for humans: `0.001`, `3`, `1e-7`, `2.5e4`.
pub(crate) fn fmt_num(x: f64) -> String {
    if !x.is_finite() {
        return x.to_string();
    }
    if x == 0.0 {
        return "0".into();
    }
    let a = x.abs();
    if !(1e-4..1e5).contains(&a) {
        return format!("{x:.2e}");
    }
    // four significant digits, trailing zeros dropped
    let digits = (3 - a.log10().floor() as i32).clamp(0, 10) as usize;
    let s = format!("{x:.digits$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}
