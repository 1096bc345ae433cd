//! A paper's fingerprint (RePro): atomic, verifiable criteria, each a fact with its scope, a
//! category, the sentence of the paper it came from, and optionally the checks that let a
//! machine decide it (benchmarks/papers/README.md has the format).
//!
//! Two rules keep a fingerprint honest: a criterion whose source sentence is not in the paper
//! is dropped as ungrounded ([`Fingerprint::ground`]), and criteria stating the same fact are
//! merged ([`Fingerprint::dedupe`]).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What a criterion is about (RePro's categories).
pub const CATEGORIES: &[&str] = &[
    "data",
    "preprocessing",
    "hyperparameter",
    "architecture",
    "algorithm",
    "evaluation",
    "package",
];

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fingerprint {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub paper: String,
    pub criteria: Vec<Criterion>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Criterion {
    pub id: String,
    pub fact: String,
    #[serde(default)]
    pub scope: String,
    pub category: String,
    /// The paper's words the criterion came from, verbatim.
    pub source: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<Check>,
}

/// One way to decide a criterion without a judge.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Check {
    Static(StaticCheck),
    /// Python run in the sandbox with the code importable: passes when it exits normally,
    /// fails on `AssertionError`, decides nothing on any other error.
    Probe(String),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StaticCheck {
    Value(ValueCheck),
    Call(CallCheck),
}

/// A named constant has a value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ValueCheck {
    pub names: Vec<String>,
    pub equals: Value,
    /// Substrings of the scope (`Class.method`) the value must be in; empty: anywhere.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub within: Vec<String>,
}

/// A call is made, with these arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallCheck {
    pub callee: String,
    /// Keyword arguments by name, positional ones by their index ("0", "1", ...).
    #[serde(default)]
    pub args: serde_json::Map<String, Value>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub within: Vec<String>,
    /// `"fail"`: no such call at all fails the criterion (a step the paper requires is
    /// missing); otherwise it decides nothing (the code may do it another way).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub absent: Option<Absent>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Absent {
    Fail,
    Undecided,
}

#[derive(Debug, thiserror::Error)]
pub enum FingerprintError {
    #[error("{}: cannot read the fingerprint", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: not a fingerprint ({detail}); expected {{\"criteria\": [{{id, fact, scope, category, source, checks}}]}} (benchmarks/papers/README.md)", path.display())]
    Json { path: PathBuf, detail: String },
    #[error("{}: criterion {id}: {problem}", path.display())]
    Invalid {
        path: PathBuf,
        id: String,
        problem: String,
    },
}

/// A criterion left out of a fingerprint, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Dropped {
    pub id: String,
    pub fact: String,
    pub reason: String,
}

impl Fingerprint {
    /// Read and check a fingerprint file.
    pub fn load(path: &Path) -> Result<Fingerprint, FingerprintError> {
        let text = std::fs::read_to_string(path).map_err(|source| FingerprintError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let fp: Fingerprint = serde_json::from_str(&text).map_err(|e| FingerprintError::Json {
            path: path.to_path_buf(),
            detail: e.to_string(),
        })?;
        fp.check(path)?;
        Ok(fp)
    }

    fn check(&self, path: &Path) -> Result<(), FingerprintError> {
        let mut ids = HashSet::new();
        for c in &self.criteria {
            let bad = |problem: String| FingerprintError::Invalid {
                path: path.to_path_buf(),
                id: c.id.clone(),
                problem,
            };
            if c.id.trim().is_empty() {
                return Err(bad("the id is empty".into()));
            }
            if !ids.insert(c.id.as_str()) {
                return Err(bad("the id appears twice; ids must be unique".into()));
            }
            if c.fact.trim().is_empty() {
                return Err(bad(
                    "`fact` is empty; expected one verifiable statement".into()
                ));
            }
            if c.source.trim().is_empty() {
                return Err(bad(
                    "`source` is empty; expected the paper's sentence the fact comes from".into(),
                ));
            }
            if !CATEGORIES.contains(&c.category.as_str()) {
                return Err(bad(format!(
                    "`category` is {:?}; expected one of {}",
                    c.category,
                    CATEGORIES.join(", ")
                )));
            }
            for check in &c.checks {
                match check {
                    Check::Static(StaticCheck::Value(v)) if v.names.is_empty() => {
                        return Err(bad("a value check has no `names`".into()));
                    }
                    Check::Static(StaticCheck::Call(call)) if call.callee.trim().is_empty() => {
                        return Err(bad("a call check has an empty `callee`".into()));
                    }
                    Check::Probe(p) if p.trim().is_empty() => {
                        return Err(bad("a probe is empty".into()));
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }

    /// Keep the criteria whose source is in `paper` (whitespace, case and typographic quotes
    /// aside: PDF extraction and Markdown wrapping change those, not the words); return the
    /// dropped ones.
    pub fn ground(&mut self, paper: &str) -> Vec<Dropped> {
        let text = normalize(paper);
        let mut dropped = Vec::new();
        self.criteria.retain(|c| {
            let found = text.contains(&normalize(&c.source));
            if !found {
                dropped.push(Dropped {
                    id: c.id.clone(),
                    fact: c.fact.clone(),
                    reason: "its source sentence is not in the paper".into(),
                });
            }
            found
        });
        dropped
    }

    /// Merge criteria that state the same fact in the same scope (the first one stays, with
    /// the checks of both); return the merged ones.
    pub fn dedupe(&mut self) -> Vec<Dropped> {
        let mut kept: Vec<Criterion> = Vec::new();
        let mut dropped = Vec::new();
        for c in std::mem::take(&mut self.criteria) {
            let key = (normalize(&c.fact), normalize(&c.scope));
            match kept
                .iter_mut()
                .find(|k| (normalize(&k.fact), normalize(&k.scope)) == key)
            {
                Some(k) => {
                    for check in c.checks {
                        if !k.checks.contains(&check) {
                            k.checks.push(check);
                        }
                    }
                    dropped.push(Dropped {
                        id: c.id,
                        fact: c.fact,
                        reason: format!("the same fact as {}", k.id),
                    });
                }
                None => kept.push(c),
            }
        }
        self.criteria = kept;
        dropped
    }
}

/// Lower case, typographic quotes and dashes made plain, runs of whitespace and Markdown
/// emphasis collapsed.
pub fn normalize(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut space = false;
    for ch in s.chars() {
        let ch = match ch {
            '\u{2018}' | '\u{2019}' => '\'',
            '\u{201c}' | '\u{201d}' => '"',
            '\u{2013}' | '\u{2014}' => '-',
            '*' | '_' | '`' => continue,
            c => c,
        };
        if ch.is_whitespace() {
            space = !out.is_empty();
            continue;
        }
        if space {
            out.push(' ');
            space = false;
        }
        out.extend(ch.to_lowercase());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn criterion(id: &str, fact: &str, source: &str) -> Criterion {
        Criterion {
            id: id.into(),
            fact: fact.into(),
            scope: "training".into(),
            category: "hyperparameter".into(),
            source: source.into(),
            checks: Vec::new(),
        }
    }

    #[test]
    fn checks_parse_in_the_documented_shape() {
        let fp: Fingerprint = serde_json::from_str(
            r#"{"criteria": [{"id": "C1", "fact": "eps is 0.1", "scope": "loss",
                "category": "hyperparameter", "source": "We set eps to 0.1.",
                "checks": [{"static": {"value": {"names": ["eps"], "equals": 0.1}}},
                           {"static": {"call": {"callee": "torch.optim.SGD",
                                                "args": {"momentum": 0.9}, "absent": "fail"}}},
                           {"probe": "assert True"}]}]}"#,
        )
        .unwrap();
        let checks = &fp.criteria[0].checks;
        assert!(matches!(&checks[0], Check::Static(StaticCheck::Value(v)) if v.names == ["eps"]));
        assert!(
            matches!(&checks[1], Check::Static(StaticCheck::Call(c)) if c.absent == Some(Absent::Fail))
        );
        assert_eq!(checks[2], Check::Probe("assert True".into()));
    }

    #[test]
    fn bad_fingerprints_name_the_criterion_and_the_field() {
        let dir = std::env::temp_dir().join(format!("fp-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("fingerprint.json");
        let write = |s: &str| std::fs::write(&path, s).unwrap();
        write(r#"{"criteria": [{"id": "C1", "fact": "x", "category": "vibes", "source": "y"}]}"#);
        let e = Fingerprint::load(&path).unwrap_err().to_string();
        assert!(
            e.contains("criterion C1") && e.contains("`category` is \"vibes\""),
            "{e}"
        );
        write(
            r#"{"criteria": [{"id": "C1", "fact": "x", "category": "data", "source": "y"},
                             {"id": "C1", "fact": "z", "category": "data", "source": "y"}]}"#,
        );
        let e = Fingerprint::load(&path).unwrap_err().to_string();
        assert!(e.contains("appears twice"), "{e}");
        write(
            r#"{"criteria": [{"id": "C1", "fact": "x", "category": "data", "source": "y",
                  "checks": [{"static": {"value": {"names": ["a"], "equals": 1, "whithin": []}}}]}]}"#,
        );
        let e = Fingerprint::load(&path).unwrap_err().to_string();
        assert!(e.contains("whithin"), "{e}");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn ungrounded_criteria_are_dropped_and_wrapping_does_not_matter() {
        let paper = "We train for 30 epochs.\nThe smoothing\n   factor is **0.1** in all \u{201c}runs\u{201d}.";
        let mut fp = Fingerprint {
            paper: String::new(),
            criteria: vec![
                criterion(
                    "C1",
                    "eps 0.1",
                    "The smoothing factor is 0.1 in all \"runs\".",
                ),
                criterion("C2", "lr", "We use a learning rate of 0.3."),
            ],
        };
        let dropped = fp.ground(paper);
        assert_eq!(fp.criteria.len(), 1);
        assert_eq!(dropped[0].id, "C2");
    }

    #[test]
    fn the_same_fact_twice_is_merged_with_its_checks() {
        let mut a = criterion("C1", "The learning rate is 0.1.", "s");
        a.checks.push(Check::Probe("assert 1".into()));
        let mut b = criterion("C2", "the learning  rate is 0.1.", "t");
        b.checks.push(Check::Probe("assert 2".into()));
        let mut fp = Fingerprint {
            paper: String::new(),
            criteria: vec![a, b, criterion("C3", "Batch size 64.", "u")],
        };
        let dropped = fp.dedupe();
        assert_eq!(dropped.len(), 1);
        assert_eq!(fp.criteria.len(), 2);
        assert_eq!(fp.criteria[0].checks.len(), 2);
    }
}
