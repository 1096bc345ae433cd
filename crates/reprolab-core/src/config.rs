//! A subject's configuration: a JSON object mapping hyperparameter names to values.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A configuration: hyperparameter name → JSON value, in the order of its file.
///
/// Serializes as the plain JSON object. Equality is key-order-insensitive.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Config(pub Map<String, Value>);

impl Config {
    /// An empty configuration.
    pub fn new() -> Self {
        Config(Map::new())
    }

    /// Parses a JSON text that must be an object.
    pub fn from_json_str(text: &str) -> Result<Config, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// The value of a hyperparameter.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.get(key)
    }

    /// Sets a hyperparameter, returning its previous value. A new key goes last.
    pub fn insert(&mut self, key: impl Into<String>, value: Value) -> Option<Value> {
        self.0.insert(key.into(), value)
    }

    /// Whether the configuration has this hyperparameter.
    pub fn contains_key(&self, key: &str) -> bool {
        self.0.contains_key(key)
    }

    /// The hyperparameter names, in file order.
    pub fn keys(&self) -> impl Iterator<Item = &String> {
        self.0.keys()
    }

    /// (name, value) pairs, in file order.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &Value)> {
        self.0.iter()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Compact JSON with the keys of every object (nested ones too) sorted: the same
    /// configuration always gives the same text, whatever the key order of its file. This is
    /// what goes into cache keys. Numbers keep their JSON form (`1` and `1.0` differ, as they do
    /// for Python).
    pub fn canonical_json(&self) -> String {
        let sorted = sort_keys(&Value::Object(self.0.clone()));
        serde_json::to_string(&sorted).expect("a JSON value always serializes")
    }

    /// The keys whose values differ: `(key, value in self, value in other)`, `None` where the
    /// key is absent. Keys of `self` first (in its order), then keys only in `other`.
    pub fn diff(&self, other: &Config) -> Vec<(String, Option<Value>, Option<Value>)> {
        let mut out = Vec::new();
        for (k, v) in &self.0 {
            match other.0.get(k) {
                Some(w) if w == v => {}
                w => out.push((k.clone(), Some(v.clone()), w.cloned())),
            }
        }
        for (k, w) in &other.0 {
            if !self.0.contains_key(k) {
                out.push((k.clone(), None, Some(w.clone())));
            }
        }
        out
    }
}

impl fmt::Display for Config {
    /// Compact JSON in file order.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = serde_json::to_string(&self.0).map_err(|_| fmt::Error)?;
        f.write_str(&text)
    }
}

impl From<Map<String, Value>> for Config {
    fn from(map: Map<String, Value>) -> Self {
        Config(map)
    }
}

impl FromIterator<(String, Value)> for Config {
    fn from_iter<I: IntoIterator<Item = (String, Value)>>(iter: I) -> Self {
        Config(iter.into_iter().collect())
    }
}

fn sort_keys(v: &Value) -> Value {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let mut out = Map::new();
            for k in keys {
                out.insert(k.clone(), sort_keys(&map[k]));
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(sort_keys).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cfg(v: Value) -> Config {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn canonical_json_sorts_keys_recursively() {
        let a = cfg(json!({"lr": 0.1, "act": "relu", "nested": {"b": 1, "a": [{"z": 1, "y": 2}]}}));
        let b = cfg(json!({"nested": {"a": [{"y": 2, "z": 1}], "b": 1}, "act": "relu", "lr": 0.1}));
        assert_eq!(a.canonical_json(), b.canonical_json());
        assert_eq!(
            a.canonical_json(),
            r#"{"act":"relu","lr":0.1,"nested":{"a":[{"y":2,"z":1}],"b":1}}"#
        );
        // File order is kept elsewhere.
        assert_eq!(a.keys().next().unwrap(), "lr");
        assert_eq!(
            a.to_string(),
            r#"{"lr":0.1,"act":"relu","nested":{"b":1,"a":[{"z":1,"y":2}]}}"#
        );
        assert_eq!(a, b);
    }

    #[test]
    fn diff_lists_changed_added_and_removed_keys() {
        let a = cfg(json!({"lr": 0.1, "act": "relu", "bs": 32}));
        let b = cfg(json!({"lr": 0.01, "act": "relu", "epochs": 5}));
        assert_eq!(
            a.diff(&b),
            vec![
                ("lr".to_string(), Some(json!(0.1)), Some(json!(0.01))),
                ("bs".to_string(), Some(json!(32)), None),
                ("epochs".to_string(), None, Some(json!(5))),
            ]
        );
        assert!(a.diff(&a).is_empty());
    }

    #[test]
    fn serde_is_transparent() {
        let c = Config::from_json_str(r#"{"a": 1}"#).unwrap();
        assert_eq!(c.get("a"), Some(&json!(1)));
        assert_eq!(serde_json::to_string(&c).unwrap(), r#"{"a":1}"#);
        assert!(Config::from_json_str("[1]").is_err());
    }
}
