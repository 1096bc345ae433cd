//! The strategies' view of training: `reprolab_faults::Trainer` and `reprolab_search::Objective`
//! over the real evaluator (warm pool, cache), counting what was trained and what was cached.

use std::cell::Cell;

use indicatif::ProgressBar;
use reprolab_core::Split;
use reprolab_core::manifest::{Config, Subject};
use reprolab_exec::{Evaluation, Evaluator, Mode};

pub struct EvalTrainer<'a> {
    pub ev: &'a Evaluator,
    pub subject: &'a Subject,
    pub trained: Cell<usize>,
    pub cached: Cell<usize>,
    pub progress: ProgressBar,
}

impl<'a> EvalTrainer<'a> {
    pub fn new(ev: &'a Evaluator, subject: &'a Subject, progress: ProgressBar) -> Self {
        EvalTrainer {
            ev,
            subject,
            trained: Cell::new(0),
            cached: Cell::new(0),
            progress,
        }
    }
}

impl EvalTrainer<'_> {
    /// Evaluate with counting and progress.
    async fn run(
        &self,
        config: &Config,
        seeds: &[u64],
        mode: Mode,
    ) -> Result<Vec<Evaluation>, String> {
        let mut on_done = |e: &Evaluation| {
            let counter = if e.cached {
                &self.cached
            } else {
                &self.trained
            };
            counter.set(counter.get() + 1);
            self.progress.inc(1);
        };
        self.progress.inc_length(seeds.len() as u64);
        self.ev
            .run(self.subject, config, seeds, mode, &mut on_done)
            .await
            .map_err(|e| e.to_string())
    }
}

impl reprolab_faults::Trainer for EvalTrainer<'_> {
    async fn train(
        &self,
        config: &Config,
        seeds: &[u64],
        split: Split,
    ) -> Result<Vec<Option<f64>>, String> {
        let evals = self.run(config, seeds, Mode::Eval).await?;
        Ok(evals
            .iter()
            .map(|e| e.record.outcome.metric(split))
            .collect())
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
        let mut config = config.clone();
        if let Some(e) = epochs {
            // Fidelity: the same config trained for fewer epochs (a distinct cache entry).
            config.insert("epochs", serde_json::json!(e));
        }
        let evals = self.run(&config, seeds, Mode::Eval).await?;
        Ok(evals
            .iter()
            .map(|e| (e.record.outcome.metric(split), e.record.duration_s))
            .collect())
    }

    async fn trace(&self, config: &Config, seed: u64) -> Result<reprolab_search::Trace, String> {
        let evals = self.run(config, &[seed], Mode::Trace).await?;
        let record = &evals[0].record;
        Ok(reprolab_search::Trace {
            epochs: record.epochs.clone(),
            finished: record.outcome.is_ok(),
        })
    }
}
