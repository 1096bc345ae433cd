//! The search space: every hyperparameter of a subject's config, typed, with the fault type it
//! belongs to and its layer.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::config::Config;
use crate::error::did_you_mean;
use crate::fault::{FaultLabel, FaultType};

/// The typed hyperparameters of a subject, in manifest order.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SearchSpace {
    pub params: Vec<Param>,
}

/// One hyperparameter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Param {
    pub name: String,
    #[serde(flatten)]
    pub kind: ParamKind,
    /// The fault type a wrong value of this hyperparameter is (`lr` → `HLR`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<FaultType>,
    /// The layer the hyperparameter belongs to (`act1` → 1); only with `fault`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layer: Option<u32>,
}

/// The domain of a hyperparameter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum ParamKind {
    /// One of a list of JSON values (numbers, strings, booleans, …).
    Choice { values: Vec<Value> },
    /// An integer in `[low, high]`.
    Int { low: i64, high: i64 },
    /// A number in `[low, high]`, sampled uniformly.
    Float { low: f64, high: f64 },
    /// A number in `[low, high]` (`0 < low`), sampled uniformly in log space.
    LogFloat { low: f64, high: f64 },
}

impl ParamKind {
    /// The manifest's name of the kind: `choice`, `int`, `float`, `log-float`.
    pub fn type_name(&self) -> &'static str {
        match self {
            ParamKind::Choice { .. } => "choice",
            ParamKind::Int { .. } => "int",
            ParamKind::Float { .. } => "float",
            ParamKind::LogFloat { .. } => "log-float",
        }
    }
}

impl Param {
    /// Whether `v` lies in the domain. Strict about types: an `int` parameter takes only JSON
    /// integers (`2.5` and also `2.0` are outside it, as Python would see a float); a `float` or
    /// `log-float` parameter takes any finite number (`1` is fine); a `choice` parameter takes a
    /// value equal to one of its values, where an integer choice needs an integer and a float
    /// choice takes any number of the same value.
    pub fn contains(&self, v: &Value) -> bool {
        match &self.kind {
            ParamKind::Choice { values } => values.iter().any(|c| choice_matches(c, v)),
            ParamKind::Int { low, high } => v.as_i64().is_some_and(|x| *low <= x && x <= *high),
            ParamKind::Float { low, high } | ParamKind::LogFloat { low, high } => v
                .as_f64()
                .is_some_and(|x| x.is_finite() && *low <= x && x <= *high),
        }
    }

    /// A tolerant version of [`contains`](Self::contains) for values from untrusted sources
    /// (LLM output, hand edits): returns the value in its canonical form when it lies in the
    /// domain up to number representation (`2.0` for an `int` parameter becomes `2`; `32.0`
    /// for a choice of integers becomes `32`), `None` otherwise.
    pub fn normalize(&self, v: &Value) -> Option<Value> {
        if self.contains(v) {
            return Some(v.clone());
        }
        match &self.kind {
            ParamKind::Choice { values } => {
                let x = v.as_f64()?;
                values.iter().find(|c| c.as_f64() == Some(x)).cloned()
            }
            ParamKind::Int { low, high } => {
                let x = v.as_f64()?;
                if x.fract() == 0.0 && (*low as f64) <= x && x <= (*high as f64) {
                    Some(Value::from(x as i64))
                } else {
                    None
                }
            }
            ParamKind::Float { .. } | ParamKind::LogFloat { .. } => None,
        }
    }

    /// The domain for humans: `one of [16, 32, 64]`, `an integer in [0, 2]`,
    /// `a number in [1e-6, 10]`, `a number in [1e-6, 10] (log scale)`.
    pub fn describe_domain(&self) -> String {
        match &self.kind {
            ParamKind::Choice { values } => format!("one of {}", format_list(values)),
            ParamKind::Int { low, high } => format!("an integer in [{low}, {high}]"),
            ParamKind::Float { low, high } => {
                format!("a number in [{}, {}]", format_f64(*low), format_f64(*high))
            }
            ParamKind::LogFloat { low, high } => format!(
                "a number in [{}, {}] (log scale)",
                format_f64(*low),
                format_f64(*high)
            ),
        }
    }

    /// The fault label a wrong value of this parameter stands for (`ACH(1)`, `HLR`), if any.
    pub fn label(&self) -> Option<FaultLabel> {
        self.fault.map(|f| FaultLabel::with_layers(f, self.layer))
    }
}

fn choice_matches(choice: &Value, v: &Value) -> bool {
    match (choice, v) {
        (Value::Number(c), Value::Number(x)) => {
            if c.is_f64() {
                x.as_f64() == c.as_f64()
            } else {
                // An integer choice takes only an integer of the same value.
                !x.is_f64() && (c.as_i64() == x.as_i64() && c.as_u64() == x.as_u64())
            }
        }
        _ => choice == v,
    }
}

/// A float for humans: integral values without a fraction (`10`), others in their shortest
/// round-trip form (`0.001`, `1e-6`).
pub fn format_f64(x: f64) -> String {
    if x.is_finite() && x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        match serde_json::Number::from_f64(x) {
            Some(n) => n.to_string(),
            None => x.to_string(),
        }
    }
}

/// A JSON value for humans (compact JSON, strings quoted).
pub fn format_value(v: &Value) -> String {
    serde_json::to_string(v).unwrap_or_else(|_| v.to_string())
}

/// `[16, 32, "relu"]`.
pub fn format_list(values: &[Value]) -> String {
    let items: Vec<String> = values.iter().map(format_value).collect();
    format!("[{}]", items.join(", "))
}

impl SearchSpace {
    /// The parameter of this name.
    pub fn get(&self, name: &str) -> Option<&Param> {
        self.params.iter().find(|p| p.name == name)
    }

    /// Parameter names in manifest order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.params.iter().map(|p| p.name.as_str())
    }

    pub fn iter(&self) -> impl Iterator<Item = &Param> {
        self.params.iter()
    }

    pub fn len(&self) -> usize {
        self.params.len()
    }

    pub fn is_empty(&self) -> bool {
        self.params.is_empty()
    }

    /// The parameters that belong to a fault type.
    pub fn with_fault(&self, fault: FaultType) -> impl Iterator<Item = &Param> {
        self.params.iter().filter(move |p| p.fault == Some(fault))
    }

    /// Every problem of `config` against this space, not just the first: keys not in the
    /// space and values outside their domain (in config order), then space parameters missing
    /// from the config (in manifest order). Empty when the config is valid.
    pub fn validate(&self, config: &Config) -> Vec<ConfigIssue> {
        let mut issues = Vec::new();
        for (key, value) in config.iter() {
            match self.get(key) {
                None => issues.push(ConfigIssue {
                    key: key.clone(),
                    kind: ConfigIssueKind::NotInSpace,
                    found: Some(value.clone()),
                    expected: "no such key: every config key must be a parameter of [space]"
                        .to_string(),
                    hint: did_you_mean(key, self.names()).or_else(|| {
                        Some(
                            "add it to [space] in reprolab.toml or remove it from the config"
                                .to_string(),
                        )
                    }),
                }),
                Some(p) if !p.contains(value) => issues.push(ConfigIssue {
                    key: key.clone(),
                    kind: ConfigIssueKind::OutOfDomain,
                    found: Some(value.clone()),
                    expected: p.describe_domain(),
                    hint: Some(format!("space.{key}")),
                }),
                Some(_) => {}
            }
        }
        for p in &self.params {
            if !config.contains_key(&p.name) {
                issues.push(ConfigIssue {
                    key: p.name.clone(),
                    kind: ConfigIssueKind::Missing,
                    found: None,
                    expected: p.describe_domain(),
                    hint: Some(format!("space.{}", p.name)),
                });
            }
        }
        issues
    }
}

/// One problem of a config against a search space.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigIssue {
    /// The config key (hyperparameter name).
    pub key: String,
    pub kind: ConfigIssueKind,
    /// The value found; `None` when the key is missing.
    pub found: Option<Value>,
    /// What was expected, e.g. `one of [16, 32, 64]`.
    pub expected: String,
    /// Extra help: the space entry (`space.lr`) or a "did you mean" suggestion.
    pub hint: Option<String>,
}

/// The kinds of [`ConfigIssue`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigIssueKind {
    /// The config has a key that is not a parameter of the space.
    NotInSpace,
    /// A parameter of the space is missing from the config.
    Missing,
    /// The value lies outside the parameter's domain (or has the wrong type).
    OutOfDomain,
}

impl fmt::Display for ConfigIssue {
    /// `key 'batch_size': found 48, expected one of [16, 32, 64] (space.batch_size)`
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "key '{}': ", self.key)?;
        match &self.found {
            Some(v) => write!(f, "found {}", format_value(v))?,
            None => f.write_str("missing")?,
        }
        write!(f, ", expected {}", self.expected)?;
        if let Some(h) = &self.hint {
            write!(f, " ({h})")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn p(name: &str, kind: ParamKind) -> Param {
        Param {
            name: name.into(),
            kind,
            fault: None,
            layer: None,
        }
    }

    #[test]
    fn contains_is_strict_about_types() {
        let int = p("layers", ParamKind::Int { low: 0, high: 2 });
        assert!(int.contains(&json!(0)) && int.contains(&json!(2)));
        assert!(!int.contains(&json!(3)) && !int.contains(&json!(-1)));
        assert!(!int.contains(&json!(2.5)));
        assert!(!int.contains(&json!(2.0)));
        assert!(!int.contains(&json!("1")));
        assert_eq!(int.normalize(&json!(2.0)), Some(json!(2)));
        assert_eq!(int.normalize(&json!(2.5)), None);

        let float = p(
            "lr",
            ParamKind::Float {
                low: 1e-6,
                high: 10.0,
            },
        );
        assert!(float.contains(&json!(1)) && float.contains(&json!(0.5)));
        assert!(!float.contains(&json!(0.0)) && !float.contains(&json!(11)));
        assert!(!float.contains(&json!(true)));

        let log = p(
            "lr",
            ParamKind::LogFloat {
                low: 1e-6,
                high: 10.0,
            },
        );
        assert!(log.contains(&json!(1e-6)) && !log.contains(&json!(1e-7)));

        let choice = p(
            "bs",
            ParamKind::Choice {
                values: vec![json!(16), json!(32), json!(0.5), json!("relu")],
            },
        );
        assert!(choice.contains(&json!(32)) && choice.contains(&json!("relu")));
        assert!(choice.contains(&json!(0.5)));
        assert!(!choice.contains(&json!(48)) && !choice.contains(&json!("tanh")));
        assert!(!choice.contains(&json!(32.0)));
        assert_eq!(choice.normalize(&json!(32.0)), Some(json!(32)));
        let fchoice = p(
            "x",
            ParamKind::Choice {
                values: vec![json!(1.0)],
            },
        );
        assert!(fchoice.contains(&json!(1)));
    }

    #[test]
    fn describe_domain_reads_well() {
        let choice = p(
            "bs",
            ParamKind::Choice {
                values: vec![json!(16), json!(32), json!(64)],
            },
        );
        assert_eq!(choice.describe_domain(), "one of [16, 32, 64]");
        let act = p(
            "a",
            ParamKind::Choice {
                values: vec![json!("relu"), json!("tanh")],
            },
        );
        assert_eq!(act.describe_domain(), r#"one of ["relu", "tanh"]"#);
        let float = p(
            "lr",
            ParamKind::Float {
                low: 1e-6,
                high: 10.0,
            },
        );
        assert_eq!(float.describe_domain(), "a number in [1e-6, 10]");
        let log = p(
            "lr",
            ParamKind::LogFloat {
                low: 0.001,
                high: 0.5,
            },
        );
        assert_eq!(
            log.describe_domain(),
            "a number in [0.001, 0.5] (log scale)"
        );
        let int = p("l", ParamKind::Int { low: 0, high: 2 });
        assert_eq!(int.describe_domain(), "an integer in [0, 2]");
    }

    #[test]
    fn validate_collects_every_issue() {
        let space = SearchSpace {
            params: vec![
                p(
                    "lr",
                    ParamKind::Float {
                        low: 1e-6,
                        high: 10.0,
                    },
                ),
                p(
                    "batch_size",
                    ParamKind::Choice {
                        values: vec![json!(16), json!(32)],
                    },
                ),
                p("epochs", ParamKind::Int { low: 1, high: 100 }),
            ],
        };
        let cfg: Config = serde_json::from_value(json!({"lrr": 0.1, "batch_size": 48})).unwrap();
        let issues = space.validate(&cfg);
        let kinds: Vec<_> = issues.iter().map(|i| (i.key.as_str(), i.kind)).collect();
        assert_eq!(
            kinds,
            vec![
                ("lrr", ConfigIssueKind::NotInSpace),
                ("batch_size", ConfigIssueKind::OutOfDomain),
                ("lr", ConfigIssueKind::Missing),
                ("epochs", ConfigIssueKind::Missing),
            ]
        );
        assert_eq!(
            issues[1].to_string(),
            "key 'batch_size': found 48, expected one of [16, 32] (space.batch_size)"
        );
        assert!(
            issues[0].to_string().contains("did you mean 'lr'?"),
            "{}",
            issues[0]
        );
        assert!(
            issues[2]
                .to_string()
                .starts_with("key 'lr': missing, expected a number")
        );
        let ok: Config =
            serde_json::from_value(json!({"lr": 1, "batch_size": 16, "epochs": 5})).unwrap();
        assert!(space.validate(&ok).is_empty());
    }

    #[test]
    fn params_serialize_with_a_type_tag() {
        let mut param = p(
            "lr",
            ParamKind::LogFloat {
                low: 0.001,
                high: 1.0,
            },
        );
        param.fault = Some(FaultType::HLR);
        let j = serde_json::to_value(&param).unwrap();
        assert_eq!(
            j,
            json!({"name": "lr", "type": "log-float", "low": 0.001, "high": 1.0, "fault": "HLR"})
        );
        let back: Param = serde_json::from_value(j).unwrap();
        assert_eq!(back, param);
        assert_eq!(param.label().unwrap().to_string(), "HLR");
    }
}
