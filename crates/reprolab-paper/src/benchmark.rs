//! The bundled paper benchmark (benchmarks/papers/README.md): per paper its text, gold
//! fingerprint, rubric, a reference implementation that passes every criterion and a mutated one
//! with known violations.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::fingerprint::{Fingerprint, FingerprintError};
use crate::rubric::{Rubric, RubricError};

/// One known violation of the mutated implementation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Violation {
    pub criterion: String,
    pub kind: String,
    pub what: String,
    #[serde(default)]
    pub r#where: String,
    /// The checker meant to catch it: static, execution or judge.
    #[serde(default)]
    pub detectable_by: String,
}

#[derive(Debug, Deserialize)]
struct Mutations {
    violations: Vec<Violation>,
}

#[derive(Debug, Clone)]
pub struct BundledPaper {
    pub name: String,
    pub dir: PathBuf,
    pub paper: PathBuf,
    pub fingerprint: Fingerprint,
    pub rubric: Rubric,
    pub reference: PathBuf,
    pub mutated: PathBuf,
    pub violations: Vec<Violation>,
}

#[derive(Debug, thiserror::Error)]
pub enum BenchmarkError {
    #[error("{}: cannot read the paper benchmark", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: {problem}", path.display())]
    Invalid { path: PathBuf, problem: String },
    #[error(transparent)]
    Fingerprint(#[from] FingerprintError),
    #[error(transparent)]
    Rubric(#[from] RubricError),
}

impl BundledPaper {
    /// Read and check one paper directory.
    pub fn load(dir: &Path) -> Result<BundledPaper, BenchmarkError> {
        let invalid = |path: PathBuf, problem: &str| BenchmarkError::Invalid {
            path,
            problem: problem.to_string(),
        };
        for (name, is_dir) in [("paper.md", false), ("reference", true), ("mutated", true)] {
            let p = dir.join(name);
            if (is_dir && !p.is_dir()) || (!is_dir && !p.is_file()) {
                return Err(invalid(
                    p,
                    "missing (benchmarks/papers/README.md lists a paper's files)",
                ));
            }
        }
        let fingerprint = Fingerprint::load(&dir.join("fingerprint.json"))?;
        let rubric = Rubric::load(&dir.join("rubric.json"))?;
        let mutations_path = dir.join("mutations.json");
        let text =
            std::fs::read_to_string(&mutations_path).map_err(|source| BenchmarkError::Read {
                path: mutations_path.clone(),
                source,
            })?;
        let mutations: Mutations = serde_json::from_str(&text).map_err(|e| {
            invalid(
                mutations_path.clone(),
                &format!("expected {{\"violations\": [{{criterion, kind, what, where, detectable_by}}]}} ({e})"),
            )
        })?;
        for v in &mutations.violations {
            if !fingerprint.criteria.iter().any(|c| c.id == v.criterion) {
                return Err(invalid(
                    mutations_path.clone(),
                    &format!(
                        "violation of {}: the fingerprint has no such criterion",
                        v.criterion
                    ),
                ));
            }
        }
        for leaf in rubric.leaves() {
            if let Some(id) = leaf
                .criteria
                .iter()
                .find(|id| !fingerprint.criteria.iter().any(|c| &&c.id == id))
            {
                return Err(invalid(
                    dir.join("rubric.json"),
                    &format!(
                        "leaf {} names criterion {id}, which the fingerprint lacks",
                        leaf.id
                    ),
                ));
            }
        }
        Ok(BundledPaper {
            name: dir
                .file_name()
                .map(|n| n.to_string_lossy().to_string())
                .unwrap_or_default(),
            dir: dir.to_path_buf(),
            paper: dir.join("paper.md"),
            fingerprint,
            rubric,
            reference: dir.join("reference"),
            mutated: dir.join("mutated"),
            violations: mutations.violations,
        })
    }

    /// Every paper directory of `dir` (those holding a paper.md), by name.
    pub fn load_all(dir: &Path) -> Result<Vec<BundledPaper>, BenchmarkError> {
        let entries = std::fs::read_dir(dir).map_err(|source| BenchmarkError::Read {
            path: dir.to_path_buf(),
            source,
        })?;
        let mut dirs: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.join("paper.md").is_file())
            .collect();
        dirs.sort();
        if dirs.is_empty() {
            return Err(BenchmarkError::Invalid {
                path: dir.to_path_buf(),
                problem: "no paper directory (a directory with a paper.md) in it".into(),
            });
        }
        dirs.iter().map(|d| BundledPaper::load(d)).collect()
    }

    /// The violation of criterion `id`, if the mutated implementation has one.
    pub fn violation(&self, id: &str) -> Option<&Violation> {
        self.violations.iter().find(|v| v.criterion == id)
    }
}
