//! Training as the strategies see it: one subject's configs trained on seeds through the
//! evaluator (warm pool, cache), counting what was trained now and what the cache answered, and
//! telling a progress hook as trainings are queued and finish. The strategy crates' traits
//! (`reprolab_faults::Trainer`, `reprolab_repair::Objective`) are implemented over it by the
//! binary: this crate may not depend on them.

use std::cell::Cell;

use reprolab_core::manifest::{Config, Subject};
use reprolab_core::{PruneSpec, Split};

use crate::{EvalError, Evaluation, Evaluator, Mode};

/// What the progress hook is told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// This many more trainings were asked for.
    Queued(u64),
    /// One of them finished (trained or from the cache).
    Done,
}

/// A subject's trainings through an evaluator, counted.
pub struct SubjectTrainer<'a> {
    pub ev: &'a Evaluator,
    pub subject: &'a Subject,
    /// Trainings run now, and answered by the cache.
    pub trained: Cell<usize>,
    pub cached: Cell<usize>,
    /// `'static`: it outlives the borrows, so the evaluator can be shut down while the
    /// trainer is still in scope.
    progress: Box<dyn Fn(Progress)>,
}

impl<'a> SubjectTrainer<'a> {
    pub fn new(ev: &'a Evaluator, subject: &'a Subject) -> Self {
        SubjectTrainer {
            ev,
            subject,
            trained: Cell::new(0),
            cached: Cell::new(0),
            progress: Box::new(|_| {}),
        }
    }

    /// Tells `hook` as trainings are queued and finish.
    pub fn on_progress(mut self, hook: impl Fn(Progress) + 'static) -> Self {
        self.progress = Box::new(hook);
        self
    }

    /// Evaluates `config` on `seeds`, counting and telling progress.
    pub async fn run(
        &self,
        config: &Config,
        seeds: &[u64],
        mode: Mode,
    ) -> Result<Vec<Evaluation>, EvalError> {
        self.run_pruned(config, seeds, mode, None).await
    }

    /// [`run`](SubjectTrainer::run) with in-training pruning (see [`Evaluator::run_pruned`]).
    pub async fn run_pruned(
        &self,
        config: &Config,
        seeds: &[u64],
        mode: Mode,
        prune: Option<&PruneSpec>,
    ) -> Result<Vec<Evaluation>, EvalError> {
        let mut on_done = |e: &Evaluation| {
            let counter = if e.cached {
                &self.cached
            } else {
                &self.trained
            };
            counter.set(counter.get() + 1);
            (self.progress)(Progress::Done);
        };
        (self.progress)(Progress::Queued(seeds.len() as u64));
        self.ev
            .run_pruned(self.subject, config, seeds, mode, prune, &mut on_done)
            .await
    }

    /// One training on the search pruned by `thresholds` (empty: never) on the subject's
    /// per-epoch key of its metric ([`PruneSpec::key_for_metric`]), with `epochs` as in
    /// [`timed_metrics`](SubjectTrainer::timed_metrics). Returns the evaluation and its curve:
    /// that key's value per epoch record (`None` where missing or not finite).
    pub async fn pruned_metric(
        &self,
        config: &Config,
        seed: u64,
        epochs: Option<u64>,
        thresholds: &[Option<f64>],
    ) -> Result<(Evaluation, Vec<Option<f64>>), EvalError> {
        let config = with_epochs(config, epochs);
        let spec = PruneSpec {
            key: PruneSpec::key_for_metric(&self.subject.metric.name),
            goal: self.subject.metric.goal,
            thresholds: thresholds.to_vec(),
        };
        let e = self
            .run_pruned(&config, &[seed], Mode::Eval, Some(&spec))
            .await?
            .pop()
            .ok_or_else(|| EvalError::Task("the training returned nothing".into()))?;
        let curve = e
            .record
            .epochs
            .iter()
            .map(|r| {
                r.get(&spec.key)
                    .and_then(|v| v.as_f64())
                    .filter(|v| v.is_finite())
            })
            .collect();
        Ok((e, curve))
    }

    /// The metric on `split` of each seed's training (`None` for a failed one).
    pub async fn metrics(
        &self,
        config: &Config,
        seeds: &[u64],
        split: Split,
    ) -> Result<Vec<Option<f64>>, EvalError> {
        let evals = self.run(config, seeds, Mode::Eval).await?;
        Ok(evals
            .iter()
            .map(|e| e.record.outcome.metric(split))
            .collect())
    }

    /// The metric and the training's duration in seconds per seed; with `epochs`, the same
    /// config trained for that many epochs (a lower fidelity, and a distinct cache entry).
    pub async fn timed_metrics(
        &self,
        config: &Config,
        seeds: &[u64],
        split: Split,
        epochs: Option<u64>,
    ) -> Result<Vec<(Option<f64>, f64)>, EvalError> {
        let config = with_epochs(config, epochs);
        let evals = self.run(&config, seeds, Mode::Eval).await?;
        Ok(evals
            .iter()
            .map(|e| (e.record.outcome.metric(split), e.record.duration_s))
            .collect())
    }

    /// One instrumented training.
    pub async fn trace(&self, config: &Config, seed: u64) -> Result<Evaluation, EvalError> {
        let mut evals = self.run(config, &[seed], Mode::Trace).await?;
        evals
            .pop()
            .ok_or_else(|| EvalError::Task("the traced training returned nothing".into()))
    }
}

/// `config` with its `epochs` set (unchanged without).
pub fn with_epochs(config: &Config, epochs: Option<u64>) -> Config {
    let mut config = config.clone();
    if let Some(e) = epochs {
        config.insert("epochs", serde_json::json!(e));
    }
    config
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lower_fidelity_sets_the_epochs_only() {
        let mut c = Config::default();
        c.insert("lr", serde_json::json!(0.1));
        assert_eq!(with_epochs(&c, None), c);
        let low = with_epochs(&c, Some(3));
        assert_eq!(low.get("epochs"), Some(&serde_json::json!(3)));
        assert_eq!(low.get("lr"), Some(&serde_json::json!(0.1)));
    }
}
