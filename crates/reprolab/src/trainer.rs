//! The strategies' view of training: `reprolab_faults::Trainer` and `reprolab_search::Objective`
//! over [`reprolab_exec::trainer::SubjectTrainer`] (warm pool, cache, counts), with a progress
//! bar. Only these trait impls live here: reprolab-exec may not depend on the strategy crates
//! that define the traits, nor they on it, and Rust's orphan rule keeps an impl of a foreign
//! trait for a foreign type out of any third crate but the binary's newtype.

use std::ops::Deref;

use indicatif::ProgressBar;
use reprolab_core::manifest::{Config, Subject};
use reprolab_core::{Outcome, Split};
use reprolab_exec::Evaluator;
use reprolab_exec::trainer::{Progress, SubjectTrainer};

pub struct EvalTrainer<'a>(SubjectTrainer<'a>);

impl<'a> EvalTrainer<'a> {
    pub fn new(ev: &'a Evaluator, subject: &'a Subject, progress: ProgressBar) -> Self {
        EvalTrainer(
            SubjectTrainer::new(ev, subject).on_progress(move |p| match p {
                Progress::Queued(n) => progress.inc_length(n),
                Progress::Done => progress.inc(1),
            }),
        )
    }
}

impl<'a> Deref for EvalTrainer<'a> {
    type Target = SubjectTrainer<'a>;

    fn deref(&self) -> &SubjectTrainer<'a> {
        &self.0
    }
}

impl reprolab_faults::Trainer for EvalTrainer<'_> {
    async fn train(
        &self,
        config: &Config,
        seeds: &[u64],
        split: Split,
    ) -> Result<Vec<Option<f64>>, reprolab_faults::TrainError> {
        Ok(self.0.metrics(config, seeds, split).await?)
    }
}

impl reprolab_search::Objective for EvalTrainer<'_> {
    async fn evaluate(
        &self,
        config: &Config,
        seeds: &[u64],
        split: Split,
        epochs: Option<u64>,
    ) -> Result<Vec<(Option<f64>, f64)>, String> {
        self.0
            .timed_metrics(config, seeds, split, epochs)
            .await
            .map_err(|e| e.to_string())
    }

    async fn evaluate_pruned(
        &self,
        config: &Config,
        seed: u64,
        split: Split,
        epochs: Option<u64>,
        thresholds: &[Option<f64>],
    ) -> Result<reprolab_search::Evaluated, String> {
        let (e, curve) = self
            .0
            .pruned_metric(config, seed, epochs, thresholds)
            .await
            .map_err(|e| e.to_string())?;
        let pruned = match e.record.outcome {
            Outcome::Pruned { epoch, value } => Some(reprolab_search::PrunedAt { epoch, value }),
            _ => None,
        };
        Ok(reprolab_search::Evaluated {
            value: e.record.outcome.metric(split),
            duration_s: e.record.duration_s,
            curve,
            pruned,
        })
    }

    async fn trace(&self, config: &Config, seed: u64) -> Result<reprolab_search::Trace, String> {
        let record = self
            .0
            .trace(config, seed)
            .await
            .map_err(|e| e.to_string())?
            .record;
        Ok(reprolab_search::Trace {
            finished: record.outcome.is_ok(),
            epochs: record.epochs,
        })
    }
}
