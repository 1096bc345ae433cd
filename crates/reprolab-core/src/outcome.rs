//! What one evaluation (one training of a subject with one config and one seed) ended as.

use serde::{Deserialize, Serialize};

/// The result of one evaluation. A crash, timeout or OOM of user code is an outcome, never an
/// error of reprolab: every evaluation ends in exactly one of these.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Outcome {
    /// Training finished and both metrics are finite.
    Ok { search: f64, holdout: f64 },
    /// Training finished but a metric is NaN or infinite (stored as null when not a number).
    Nan {
        search: Option<f64>,
        holdout: Option<f64>,
    },
    /// The subject raised a Python exception.
    Exception {
        #[serde(rename = "type")]
        kind: String,
        message: String,
        traceback: String,
    },
    /// The wall-clock limit was hit; the process group was killed.
    Timeout { limit_s: f64 },
    /// The memory bound was hit (watchdog kill or an allocation failure).
    Oom { limit_mb: u64, peak_mb: u64 },
    /// The subject printed more than the output cap.
    OutputLimit { limit_mb: u64 },
    /// The subject wrote more than the disk cap into its work directory.
    DiskLimit { limit_mb: u64 },
    /// The process died by a signal or exited without writing a result.
    Crash {
        exit_code: Option<i32>,
        signal: Option<i32>,
        detail: String,
    },
    /// reprolab itself (the worker, the environment) failed; not the subject's fault.
    Infra { message: String },
    /// The training was stopped early by a pruner: at `epoch` (0-based, the position of the
    /// `log_epoch` call) its best value of the pruned metric so far, `value` (`None`: not
    /// finite), was worse than the request's threshold (see [`PruneSpec`]). Not a result: it has
    /// no metric, so it is never a search's best, a patch or evidence of a repair.
    Pruned { epoch: u64, value: Option<f64> },
}

/// What a pruned training checks at each epoch: the per-epoch record's `key` (e.g. `val_acc`)
/// against `thresholds[epoch]` (the position of the `log_epoch` call; `None` or past the end:
/// no check). The training stops with [`Outcome::Pruned`] at the first epoch whose best value
/// so far (goal-aware; a key that is present but not finite counts as worst) is worse than the
/// threshold. Computed by a search's pruner from the trials already finished; part of the cache
/// key when present.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PruneSpec {
    pub key: String,
    pub goal: crate::Goal,
    pub thresholds: Vec<Option<f64>>,
}

impl PruneSpec {
    /// Whether the spec can prune at all (some threshold is set).
    pub fn is_active(&self) -> bool {
        self.thresholds.iter().any(Option::is_some)
    }

    /// The per-epoch record key the pruner watches for a subject's metric: `val_acc` for
    /// `accuracy` (reprolab's short name, as `log_epoch` and the Keras callback write it),
    /// `val_<name>` otherwise (`val_mse`).
    pub fn key_for_metric(metric: &str) -> String {
        match metric {
            "accuracy" | "acc" => "val_acc".into(),
            m => format!("val_{m}"),
        }
    }
}

impl Outcome {
    /// Short lowercase name, as used in tables and JSON (`ok`, `timeout`, …).
    pub fn kind(&self) -> &'static str {
        match self {
            Outcome::Ok { .. } => "ok",
            Outcome::Nan { .. } => "nan",
            Outcome::Exception { .. } => "exception",
            Outcome::Timeout { .. } => "timeout",
            Outcome::Oom { .. } => "oom",
            Outcome::OutputLimit { .. } => "output_limit",
            Outcome::DiskLimit { .. } => "disk_limit",
            Outcome::Crash { .. } => "crash",
            Outcome::Infra { .. } => "infra",
            Outcome::Pruned { .. } => "pruned",
        }
    }

    pub fn is_ok(&self) -> bool {
        matches!(self, Outcome::Ok { .. })
    }

    /// Deterministic outcomes are worth caching; the others depend on load and limits.
    pub fn is_cacheable(&self) -> bool {
        matches!(
            self,
            Outcome::Ok { .. }
                | Outcome::Nan { .. }
                | Outcome::Exception { .. }
                | Outcome::Pruned { .. }
        )
    }

    /// The metric on the given split, when training finished with finite metrics.
    pub fn metric(&self, split: Split) -> Option<f64> {
        match self {
            Outcome::Ok { search, holdout } => Some(match split {
                Split::Search => *search,
                Split::Holdout => *holdout,
            }),
            _ => None,
        }
    }

    /// One line for humans: `ok`, `exception: ValueError: bad shape`, `timeout after 60 s`, …
    pub fn summary(&self) -> String {
        match self {
            Outcome::Ok { search, holdout } => {
                format!("ok (search {search:.4}, holdout {holdout:.4})")
            }
            Outcome::Nan { .. } => "nan: a metric is NaN or infinite".into(),
            Outcome::Exception { kind, message, .. } => {
                let first = message.lines().next().unwrap_or("");
                format!("exception: {kind}: {first}")
            }
            Outcome::Timeout { limit_s } => format!("timeout after {limit_s} s"),
            Outcome::Oom { limit_mb, peak_mb } => {
                format!("oom: {peak_mb} MB resident, limit {limit_mb} MB")
            }
            Outcome::OutputLimit { limit_mb } => {
                format!("output_limit: printed more than {limit_mb} MB")
            }
            Outcome::DiskLimit { limit_mb } => {
                format!("disk_limit: wrote more than {limit_mb} MB")
            }
            Outcome::Crash {
                exit_code,
                signal,
                detail,
            } => match (signal, exit_code) {
                (Some(sig), _) => format!("crash: killed by signal {sig} {detail}")
                    .trim_end()
                    .to_string(),
                (None, Some(code)) => format!("crash: exit code {code} without a result {detail}")
                    .trim_end()
                    .to_string(),
                _ => format!("crash: {detail}"),
            },
            Outcome::Infra { message } => format!("infra: {message}"),
            Outcome::Pruned { epoch, value } => match value {
                Some(v) => format!("pruned at epoch {epoch} (best so far {v:.4})"),
                None => format!("pruned at epoch {epoch} (no finite value)"),
            },
        }
    }
}

/// The two halves of a subject's test set (split 80/20 as in the study).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Split {
    /// 80%: guides searches.
    Search,
    /// 20%: judges final results.
    #[default]
    Holdout,
}

impl std::fmt::Display for Split {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Split::Search => "search",
            Split::Holdout => "holdout",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcome_json_is_tagged_by_status() {
        let o = Outcome::Exception {
            kind: "ValueError".into(),
            message: "bad".into(),
            traceback: "tb".into(),
        };
        let j = serde_json::to_value(&o).unwrap();
        assert_eq!(j["status"], "exception");
        assert_eq!(j["type"], "ValueError");
        let back: Outcome = serde_json::from_value(j).unwrap();
        assert_eq!(back, o);
    }

    #[test]
    fn only_deterministic_outcomes_are_cacheable() {
        assert!(
            Outcome::Ok {
                search: 1.0,
                holdout: 1.0
            }
            .is_cacheable()
        );
        assert!(!Outcome::Timeout { limit_s: 1.0 }.is_cacheable());
        // Cached under its own key (the thresholds are part of it): deterministic too.
        let pruned = Outcome::Pruned {
            epoch: 3,
            value: Some(0.4),
        };
        assert!(pruned.is_cacheable());
        assert_eq!(pruned.metric(Split::Search), None);
        let j = serde_json::to_value(&pruned).unwrap();
        assert_eq!(j["status"], "pruned");
        assert_eq!(serde_json::from_value::<Outcome>(j).unwrap(), pruned);
        assert!(
            !Outcome::Infra {
                message: String::new()
            }
            .is_cacheable()
        );
    }
}
