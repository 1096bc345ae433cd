//! Repair of a faulty subject's config: search engines (random, TPE, BOHB), AutoTrainer-style
//! rules, statistical validation of a patch on the holdout split, and patch minimisation by
//! delta debugging.
//!
//! Every training goes through an [`Objective`] (the binary wires the real executor with its
//! cache and warm pool; tests use synthetic objectives). Budgets are counted as the *sum* of
//! the trainings' durations, so that parallel workers do not change what a search sees.
//!
//! One module per job:
//! * [`space`]: sampling one hyperparameter, value transforms, applying patches.
//! * [`sampler`]: the ask/tell [`Sampler`] trait and [`RandomSampler`]; [`tpe`]: [`TpeSampler`].
//! * [`budget`]: [`Budget`], [`SearchSettings`] and the meter that spends them.
//! * [`study`]: the study loop [`search`]; [`mod@bohb`]: Hyperband + TPE ([`bohb()`]).
//! * [`symptoms`]: AutoTrainer's training-trace checks; [`mod@rules`]: its fixes, validated by
//!   retraining ([`rules()`]).
//! * [`mod@validate`]: [`validate()`] a patch on the holdout split (significance, IR, AJ, complexity).
//! * [`mod@minimize`]: [`minimize()`] a patch with Zeller's ddmin.
//! * [`metrics`]: [`patch_diff`], [`ir`], [`complexity`], [`asymmetric_jaccard`].
//! * [`neutrality`]: Algorithm 1's BFS for alternative ground truths ([`neutrality::analyse`]),
//!   the neutrality decision with sequential testing, `alternatives.json`, the graph in DOT.

pub mod bohb;
pub mod budget;
use reprolab_core::fnum;
mod join;
pub mod llm;
pub mod metrics;
pub mod minimize;
pub mod neutrality;
pub mod rules;
pub mod sampler;
pub mod space;
pub mod study;
pub mod symptoms;
pub mod tpe;
pub mod validate;

#[cfg(test)]
mod tests;

use std::future::Future;

use reprolab_core::{Config, Split};
use serde::{Deserialize, Serialize};

pub use bohb::{BohbOptions, bohb, bohb_with};
pub use budget::{Budget, SearchSettings};
pub use metrics::{
    asymmetric_jaccard, changed_types, complexity, gt_types, ir, normalize_type, patch_diff,
};
pub use minimize::{DdTest, Minimized, minimize};
pub use rules::{Attempt, Fix, RulesResult, fixes, rules};
pub use sampler::{RandomSampler, Sampler};
pub use space::apply_patch;
pub use study::{SearchResult, Stop, search};
pub use symptoms::{
    EpochRecord, LayerRecord, Symptom, SymptomKind, Thresholds, detect, detect_with, parse_trace,
};
pub use tpe::TpeSampler;
pub use validate::{Group, Validation, validate};

/// One instrumented training, as [`Objective::trace`] returns it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Trace {
    /// The per-epoch records (JSON objects as in `docs/architecture.md`: `loss, acc, val_loss,
    /// val_acc, nan, layers[…]`), in epoch order.
    pub epochs: Vec<serde_json::Value>,
    /// Whether the training finished (`false`: an exception, a timeout, …).
    pub finished: bool,
}

/// What the search sees of training. Implemented by the binary over the real executor (cache,
/// warm pool); by tests with synthetic objectives.
pub trait Objective {
    /// Trains `config` once per seed. `epochs` `Some(e)` overrides the number of epochs (BOHB's
    /// fidelity: the implementation sets `config["epochs"] = e`). Returns, per seed, the metric
    /// on `split` (`None` if the training failed) and the training's duration in seconds (the
    /// recorded duration also when the result comes from a cache, so budgets stay the same).
    /// `Err` only when training could not be attempted at all: it aborts the repair.
    fn evaluate(
        &self,
        config: &Config,
        seeds: &[u64],
        split: Split,
        epochs: Option<u64>,
    ) -> impl Future<Output = Result<Vec<(Option<f64>, f64)>, String>>;

    /// One instrumented training of `config` with `seed`: the per-epoch trace records and
    /// whether the training finished.
    fn trace(&self, config: &Config, seed: u64) -> impl Future<Output = Result<Trace, String>>;
}

/// One evaluated configuration of a search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trial {
    /// 0 for the faulty config, then in the order trials were asked.
    pub number: usize,
    /// The full config (every key of the subject's config).
    pub config: Config,
    /// The metric on the search split; `None` when the training failed.
    #[serde(default, with = "fnum::opt_float")]
    pub value: Option<f64>,
    /// Training time in seconds, as the objective reported it.
    pub duration_s: f64,
    /// Fidelity: the number of epochs it was trained for when lower than the config's own
    /// (BOHB); `None` = full training.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epochs: Option<u64>,
    /// The training seed: `settings.seed * 1000 + number`.
    pub seed: u64,
}

impl Trial {
    /// Whether the trial trained the config fully (not a low-fidelity BOHB trial).
    pub fn is_full(&self) -> bool {
        self.epochs.is_none()
    }
}

/// Why a repair could not run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RepairError {
    /// The objective could not train at all (broken environment).
    #[error("training failed: {0}")]
    Objective(String),
    /// Bad settings (zero budget, zero workers, too few runs, …).
    #[error("invalid settings: {0}")]
    Settings(String),
    /// The patch does not fit the subject's search space.
    #[error("invalid patch: {0}")]
    Patch(String),
    /// The subject's search space has no parameters.
    #[error("the subject's search space is empty: nothing to search")]
    EmptySpace,
}

/// The study's seed of trial `number`: `seed * 1000 + number`.
pub fn trial_seed(seed: u64, number: usize) -> u64 {
    seed.wrapping_mul(1000).wrapping_add(number as u64)
}

/// Converts the core crate's goal into the stats crate's.
pub(crate) fn stats_goal(goal: reprolab_core::Goal) -> reprolab_stats::Goal {
    match goal {
        reprolab_core::Goal::Max => reprolab_stats::Goal::Max,
        reprolab_core::Goal::Min => reprolab_stats::Goal::Min,
    }
}
