//! The strategies' view of training: `reprolab_faults::Trainer` over the real evaluator (warm
//! pool, cache), counting what was trained and what came from the cache.

use std::cell::Cell;

use indicatif::ProgressBar;
use reprolab_core::Split;
use reprolab_core::manifest::{Config, Subject};
use reprolab_exec::{Evaluator, Mode};

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

impl reprolab_faults::Trainer for EvalTrainer<'_> {
    async fn train(
        &self,
        config: &Config,
        seeds: &[u64],
        split: Split,
    ) -> Result<Vec<Option<f64>>, String> {
        let mut on_done = |e: &reprolab_exec::Evaluation| {
            if e.cached {
                self.cached.set(self.cached.get() + 1);
            } else {
                self.trained.set(self.trained.get() + 1);
            }
            self.progress.inc(1);
        };
        self.progress.inc_length(seeds.len() as u64);
        let evals = self
            .ev
            .run(self.subject, config, seeds, Mode::Eval, &mut on_done)
            .await
            .map_err(|e| e.to_string())?;
        Ok(evals
            .iter()
            .map(|e| e.record.outcome.metric(split))
            .collect())
    }
}
