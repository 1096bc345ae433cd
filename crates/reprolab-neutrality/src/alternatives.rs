//! Alternative ground truths of a fault, as stored next to it in `alternatives.json`, and the
//! study's Table 4 figures about them.
//!
//! Each alternative is written as a fix of the *faulty* config (the changes that turn the
//! faulty config into the alternative, and their fault labels, like the manifest's `[fix]
//! faults`) and as its distance from the known fix (the study's complexity). Localisation and
//! repair engines never read this file: only the benchmarks do, to score an answer against the
//! ground-truth variant that suits it best (the study's §5).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use reprolab_core::{Config, FaultLabel, FaultType, Goal, SearchSpace, Split, Subject};
use serde::{Deserialize, Serialize};

use super::{NeutralityResult, NeutralityStop};
use reprolab_core::fnum;
use reprolab_core::normalize_type;
use reprolab_repair::{asymmetric_jaccard, patch_diff};

/// The file in a fault's directory.
pub const ALTERNATIVES_FILE: &str = "alternatives.json";

/// One alternative ground truth.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Alternative {
    /// Its node in the analysis's graph (`graph.json`).
    pub node: usize,
    /// The changes from the faulty config: the alternative as a patch.
    pub patch: Config,
    /// The fault labels of those changes (fault type with the layers of the changed
    /// parameters), like the manifest's `[fix] faults`.
    pub faults: Vec<FaultLabel>,
    /// The changes from the known fix.
    pub from_gt: Config,
    /// Hyperparameters that differ from the known fix (the study's complexity).
    pub complexity: usize,
    #[serde(with = "fnum::float")]
    pub mean: f64,
    #[serde(with = "fnum::float")]
    pub std: f64,
    /// Mean minus the known fix's mean, signed so that positive is better (for a loss: the
    /// fix's mean minus this one).
    #[serde(with = "fnum::float")]
    pub improvement: f64,
    /// Significantly better than the known fix.
    pub better_than_gt: bool,
}

/// `alternatives.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Alternatives {
    /// The faulty subject's name.
    pub fault: String,
    pub metric: String,
    pub goal: Goal,
    pub split: Split,
    /// Trainings per config (seeds `0..runs`).
    pub runs: usize,
    /// The known fix's mean and std over its runs.
    #[serde(with = "fnum::float")]
    pub gt_mean: f64,
    #[serde(with = "fnum::float")]
    pub gt_std: f64,
    /// Hyperparameters in the search space (the study's number in parentheses).
    pub hyperparameters: usize,
    /// Nodes of the neutrality graph (the root not counted), neighbours tried, trainings asked.
    pub nodes: usize,
    pub tried: usize,
    pub trainings: usize,
    pub stop: NeutralityStop,
    pub alternatives: Vec<Alternative>,
}

/// The study's Table 4 row of one fault.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Table4 {
    pub nodes: usize,
    pub alternatives: usize,
    /// Mean complexity of the alternatives; `None` without any.
    pub complexity: Option<f64>,
    pub hyperparameters: usize,
    /// Mean improvement over the known fix; `None` without any.
    pub improvement: Option<f64>,
}

/// Why `alternatives.json` could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum AlternativesError {
    #[error("{}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: not a valid alternatives file", path.display())]
    Json {
        path: PathBuf,
        source: serde_json::Error,
    },
}

/// The fault labels of the changes from `faulty` to `config`: one label per fault type of the
/// changed parameters (as each parameter declares it), carrying the layers of all of them
/// (`act0` and `act1` changed: `ACH(0,1)`). Parameters without a fault type contribute nothing.
pub fn change_labels(space: &SearchSpace, faulty: &Config, config: &Config) -> Vec<FaultLabel> {
    let mut by_type: BTreeMap<FaultType, BTreeSet<u32>> = BTreeMap::new();
    for (key, _, _) in patch_diff(faulty, config) {
        if let Some(p) = space.get(&key)
            && let Some(f) = p.fault
        {
            let layers = by_type.entry(f).or_default();
            if f.is_layer_specific() {
                layers.extend(p.layer);
            }
        }
    }
    by_type
        .into_iter()
        .map(|(f, layers)| FaultLabel::with_layers(f, layers))
        .collect()
}

fn diff_config(from: &Config, to: &Config) -> Config {
    patch_diff(from, to)
        .into_iter()
        .map(|(k, _, v)| (k, v))
        .collect()
}

impl Alternatives {
    /// The alternatives an analysis of `subject` found. An alternative identical to the faulty
    /// config (possible only when the fault is not significantly worse than its fix on this
    /// split) is left out: it fixes nothing.
    pub fn from_result(subject: &Subject, result: &NeutralityResult) -> Alternatives {
        let root = result.root();
        let goal = result.goal;
        let alternatives = result
            .alternatives()
            .filter_map(|n| {
                let patch = diff_config(&subject.config, &n.config);
                if patch.is_empty() {
                    return None;
                }
                let from_gt = diff_config(&root.config, &n.config);
                Some(Alternative {
                    node: n.id,
                    faults: change_labels(&subject.space, &subject.config, &n.config),
                    complexity: from_gt.len(),
                    from_gt,
                    patch,
                    mean: n.runs.mean,
                    std: n.runs.std,
                    improvement: goal.sign() * (n.runs.mean - root.runs.mean),
                    better_than_gt: n.decision.is_some_and(|d| d.better_than_gt),
                })
            })
            .collect();
        Alternatives {
            fault: subject.name.clone(),
            metric: subject.metric.name.clone(),
            goal,
            split: result.split,
            runs: result.runs,
            gt_mean: root.runs.mean,
            gt_std: root.runs.std,
            hyperparameters: subject.space.len(),
            nodes: result.graph_size(),
            tried: result.tried(),
            trainings: result.trainings,
            stop: result.stop,
            alternatives,
        }
    }

    /// `dir/alternatives.json`.
    pub fn path(dir: &Path) -> PathBuf {
        dir.join(ALTERNATIVES_FILE)
    }

    /// The alternatives stored in a fault directory; `None` when it has no file.
    pub fn read(dir: &Path) -> Result<Option<Alternatives>, AlternativesError> {
        let path = Self::path(dir);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(AlternativesError::Io { path, source }),
        };
        serde_json::from_str(&text)
            .map(Some)
            .map_err(|source| AlternativesError::Json { path, source })
    }

    /// Writes `dir/alternatives.json` (pretty JSON), replacing an earlier analysis's file.
    pub fn write(&self, dir: &Path) -> Result<PathBuf, AlternativesError> {
        let path = Self::path(dir);
        let text = serde_json::to_string_pretty(self).expect("alternatives serialize") + "\n";
        std::fs::write(&path, text).map_err(|source| AlternativesError::Io {
            path: path.clone(),
            source,
        })?;
        Ok(path)
    }

    /// The distinct fault-label sets of the alternatives, in the order found: the ground-truth
    /// variants besides the known fix's labels.
    pub fn variants(&self) -> Vec<Vec<FaultLabel>> {
        let mut out: Vec<Vec<FaultLabel>> = Vec::new();
        for a in &self.alternatives {
            if !a.faults.is_empty() && !out.contains(&a.faults) {
                out.push(a.faults.clone());
            }
        }
        out
    }

    /// Table 4 of the study for this fault.
    pub fn table4(&self) -> Table4 {
        let n = self.alternatives.len();
        let mean = |f: fn(&Alternative) -> f64| {
            (n > 0).then(|| self.alternatives.iter().map(f).sum::<f64>() / n as f64)
        };
        Table4 {
            nodes: self.nodes,
            alternatives: n,
            complexity: mean(|a| a.complexity as f64),
            hyperparameters: self.hyperparameters,
            improvement: mean(|a| a.improvement),
        }
    }
}

/// AJ of a patch against the best ground-truth variant: the known fix's types and each
/// alternative's (the study scores against the variant that matches best). `None` when no
/// variant has a type.
pub fn best_aj(
    patch_types: &BTreeSet<FaultType>,
    gt_types: &BTreeSet<FaultType>,
    alternatives: &[Vec<FaultLabel>],
) -> Option<f64> {
    std::iter::once(gt_types.clone())
        .chain(
            alternatives
                .iter()
                .map(|labels| labels.iter().map(|l| normalize_type(l.fault)).collect()),
        )
        .filter_map(|gt| asymmetric_jaccard(patch_types, &gt))
        .max_by(f64::total_cmp)
}
