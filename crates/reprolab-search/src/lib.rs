//! The search layer: Optuna-like hyperparameter search over a subject's config, independent of
//! what the search is for (repair, neutrality analysis, …) and of how training runs.
//!
//! Every training goes through an [`Objective`] (the binary wires the real executor with its
//! cache and warm pool; tests use the synthetic objectives of `testing`). A [`Study`] holds
//! the trials so far, the faulty config first: an engine *asks* for configs (a [`Sampler`],
//! or its own proposals), [`Study::evaluate`]s them concurrently and [`Study::tell`]s the
//! results. Budgets are counted as the *sum* of the trainings' durations, so that parallel
//! workers do not change what a search sees. A [`Pruner`] decides from intermediate values
//! (the values trials reported at a step: an epoch, a rung) whether a trial goes on.
//!
//! Module map:
//! * [`space`]: sampling one hyperparameter or a whole config (uniform, scaled, near the faulty
//!   config), value transforms, applying patches.
//! * [`sampler`]: the ask/tell [`Sampler`] trait and [`RandomSampler`]; [`tpe`]: [`TpeSampler`].
//! * [`pruner`]: the [`Pruner`] trait and [`SuccessiveHalving`].
//! * [`budget`]: [`Budget`], [`SearchSettings`] and the meter that spends them.
//! * [`study`]: the [`Study`] (ask/evaluate/tell) and the plain study loop [`search`].
//! * [`mod@confirm`]: re-training the best few configs with fresh seeds and picking by mean
//!   (against the winner's curse of a single lucky training).
//! * [`mod@bohb`]: Hyperband brackets of successive halving with TPE proposals ([`bohb()`]).
//! * [`join`]: running an objective's futures concurrently without an async runtime.
//! * `testing` (feature `testing`): synthetic objectives and subjects for engine tests.
//!
//! Depends on `reprolab-core` (subjects, configs, spaces) and `reprolab-rng` (the seeded
//! stream) only: no executor, no statistics, no LLM. Repair engines (`reprolab-repair`) and
//! the neutrality analysis (`reprolab-neutrality`) are built on it.

pub mod bohb;
pub mod budget;
pub mod confirm;
pub mod join;
pub mod pruner;
pub mod sampler;
pub mod space;
pub mod study;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod tpe;

#[cfg(test)]
mod tests;

use std::future::Future;

use reprolab_core::{Config, Split, fnum};
use serde::{Deserialize, Serialize};

pub use bohb::{BohbOptions, bohb, bohb_with};
pub use budget::{Budget, SearchSettings};
pub use confirm::{FINALISTS, best_by_mean, confirm, finalists};
pub use pruner::{PercentilePruner, Pruner, SuccessiveHalving, prune_at};
pub use sampler::{RandomSampler, Sampler};
pub use space::apply_patch;
pub use study::{SearchResult, Stop, Study, pick_best, search, search_from};
pub use tpe::TpeSampler;

/// One instrumented training, as [`Objective::trace`] returns it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Trace {
    /// The per-epoch records (JSON objects as in `docs/architecture.md`: `loss, acc, val_loss,
    /// val_acc, nan, layers[…]`), in epoch order.
    pub epochs: Vec<serde_json::Value>,
    /// Whether the training finished (`false`: an exception, a timeout, …).
    pub finished: bool,
}

/// What a search sees of training. Implemented by the binary over the real executor (cache,
/// warm pool); by tests with synthetic objectives (`testing::Synth`).
pub trait Objective {
    /// Trains `config` once per seed. `epochs` `Some(e)` overrides the number of epochs (BOHB's
    /// fidelity: the implementation sets `config["epochs"] = e`). Returns, per seed, the metric
    /// on `split` (`None` if the training failed) and the training's duration in seconds (the
    /// recorded duration also when the result comes from a cache, so budgets stay the same).
    /// `Err` only when training could not be attempted at all: it aborts the search.
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

    /// One training of `config` with `seed`, as [`evaluate`](Objective::evaluate), that stops
    /// early when its per-epoch values of the searched metric fall behind `thresholds` (the rule
    /// of [`prune_at`]; empty: never), and returns its curve (the per-epoch values, for the
    /// pruner's next thresholds). The default trains fully and reports no curve: an objective
    /// without per-epoch values is never pruned.
    fn evaluate_pruned(
        &self,
        config: &Config,
        seed: u64,
        split: Split,
        epochs: Option<u64>,
        thresholds: &[Option<f64>],
    ) -> impl Future<Output = Result<Evaluated, String>> {
        let _ = thresholds;
        async move { Evaluated::full(&self.evaluate(config, &[seed], split, epochs).await?) }
    }
}

/// One training as [`Objective::evaluate_pruned`] returns it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Evaluated {
    /// The metric on the split; `None` when the training failed or was pruned.
    pub value: Option<f64>,
    /// Seconds it trained (up to the epoch it was pruned at).
    pub duration_s: f64,
    /// Its per-epoch values of the searched metric (`None`: not finite), as far as it trained.
    pub curve: Vec<Option<f64>>,
    /// Where it was pruned, when it was.
    pub pruned: Option<PrunedAt>,
}

impl Evaluated {
    /// The one training of [`Objective::evaluate`]'s answer for a single seed, run to its end.
    pub fn full(runs: &[(Option<f64>, f64)]) -> Result<Evaluated, String> {
        let (value, duration_s) = runs
            .first()
            .copied()
            .ok_or_else(|| "the objective returned no result for a seed".to_string())?;
        Ok(Evaluated {
            value,
            duration_s,
            ..Evaluated::default()
        })
    }
}

/// Where a training was pruned: the epoch (0-based) and its best value so far.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PrunedAt {
    pub epoch: u64,
    #[serde(default, with = "fnum::opt_float")]
    pub value: Option<f64>,
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
    /// Stopped early by the study's pruner (its `value` is then `None`: a pruned trial is never
    /// a best, a patch or evidence of a repair).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pruned: Option<PrunedAt>,
    /// A re-training of the config of this earlier trial with a fresh seed ([`confirm`]):
    /// the config's score is then the mean of its runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirms: Option<usize>,
    /// Its per-epoch values of the searched metric, when the objective reported them (the
    /// pruner's input; not serialised).
    #[serde(skip)]
    pub curve: Vec<Option<f64>>,
}

impl Trial {
    /// Whether the trial trained the config fully (not a low-fidelity BOHB trial).
    pub fn is_full(&self) -> bool {
        self.epochs.is_none()
    }
}

/// Why a search could not run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SearchError {
    /// The objective could not train at all (broken environment).
    #[error("training failed: {0}")]
    Objective(String),
    /// Bad settings (zero budget, zero workers, …).
    #[error("invalid settings: {0}")]
    Settings(String),
    /// The subject's search space has no parameters.
    #[error("the subject's search space is empty: nothing to search")]
    EmptySpace,
}

/// The study's seed of trial `number`: `seed * 1000 + number`.
pub fn trial_seed(seed: u64, number: usize) -> u64 {
    seed.wrapping_mul(1000).wrapping_add(number as u64)
}
