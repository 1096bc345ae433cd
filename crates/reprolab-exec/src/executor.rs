//! Where evaluations run, behind one interface: [`Executor`]. The [`Evaluator`] puts the
//! evaluation cache in front of whichever executor it is given and writes every finished
//! evaluation to the store, so an executor only runs what it is asked. [`LocalExecutor`] (the
//! default) runs callable subjects on the warm worker pool and command subjects as cold
//! sandboxed processes; a distributed backend (Ray) implements the same trait.
//!
//! [`Evaluator`]: crate::Evaluator

use std::path::PathBuf;

use async_trait::async_trait;
use reprolab_core::manifest::{Entry, Framework, KerasBackend, Limits};
use tokio::sync::{OnceCell, Semaphore};

use crate::Mode;
use crate::env::PythonEnv;
use crate::pool::{Job, WorkerPool};
use crate::result::Finished;
use crate::scratch::Scratch;
use crate::script::run_command;
use crate::worker::infra;

/// One evaluation to run: a subject's entry with a config and a seed, under limits.
#[derive(Debug, Clone)]
pub struct EvalRequest {
    pub subject_dir: PathBuf,
    /// The subject's content hash, as in the cache key: a remote executor ships the subject once
    /// per hash instead of reading its files again for every evaluation.
    pub source_hash: String,
    pub entry: Entry,
    /// What the worker prepares around the entry (Keras: its import, seeding and reprolab's
    /// callback on `model.fit`).
    pub framework: Framework,
    /// The backend a Keras subject's worker imports Keras on.
    pub backend: KerasBackend,
    pub config: serde_json::Value,
    pub seed: u64,
    pub mode: Mode,
    pub limits: Limits,
    /// In-training pruning: the training stops with `Outcome::Pruned` at the first epoch whose
    /// value falls behind the spec's threshold (eval mode only; `None`: it trains to its end).
    pub prune: Option<reprolab_core::PruneSpec>,
}

/// Runs evaluations. Every failure of the subject or of the machinery is a [`Finished`] with
/// its outcome (`infra` for the executor's own), never an error: a caller always gets a result
/// to record. Cancelling is dropping the future: a queued evaluation never starts, a started
/// one has its processes killed, and nothing is recorded.
#[async_trait]
pub trait Executor: Send + Sync {
    /// Run one evaluation (queued behind others when all slots are busy).
    async fn run(&self, request: EvalRequest) -> Finished;

    /// How many evaluations run at once.
    fn parallelism(&self) -> usize;

    /// Stop workers cleanly (the executor is not used afterwards).
    async fn shutdown(&self) {}
}

/// The local machine: a warm worker pool for callable subjects, cold processes for command
/// subjects, `parallelism` at a time each, in a scratch directory that does not outlive it.
pub struct LocalExecutor {
    env: PythonEnv,
    workers: usize,
    pool: OnceCell<WorkerPool>,
    pool_stopped: tokio::sync::Mutex<bool>,
    script_slots: Semaphore,
    scratch: Scratch,
}

impl LocalExecutor {
    pub fn new(env: PythonEnv, workers: usize) -> std::io::Result<LocalExecutor> {
        let workers = workers.max(1);
        Ok(LocalExecutor {
            env,
            workers,
            pool: OnceCell::new(),
            pool_stopped: tokio::sync::Mutex::new(false),
            script_slots: Semaphore::new(workers),
            scratch: Scratch::new("eval")?,
        })
    }

    /// [`WorkerPool::worker_failures`] of the warm pool (0 before it starts).
    pub fn worker_failures(&self) -> u64 {
        self.pool.get().map_or(0, WorkerPool::worker_failures)
    }

    async fn pool(&self) -> &WorkerPool {
        self.pool
            .get_or_init(|| async {
                WorkerPool::start(
                    self.env.clone(),
                    self.workers,
                    self.scratch.path().join("pool"),
                )
            })
            .await
    }

    async fn run_script(&self, template: &str, request: &EvalRequest) -> Finished {
        let _slot = self
            .script_slots
            .acquire()
            .await
            .expect("semaphore never closed");
        let workdir = tempfile::Builder::new()
            .prefix("s")
            .tempdir_in(self.scratch.path());
        match workdir {
            Ok(w) => {
                run_command(
                    &self.env,
                    &request.subject_dir,
                    template,
                    &request.config,
                    request.seed,
                    request.mode,
                    &request.limits,
                    request.prune.as_ref(),
                    w.path(),
                )
                .await
            }
            Err(e) => infra(format!("cannot create a work directory: {e}")),
        }
    }
}

#[async_trait]
impl Executor for LocalExecutor {
    async fn run(&self, request: EvalRequest) -> Finished {
        match &request.entry {
            Entry::Callable { file, function } => {
                let job = Job {
                    subject_dir: request.subject_dir.clone(),
                    entry: format!("{file}:{function}"),
                    framework: request.framework,
                    backend: request.backend,
                    config: request.config.clone(),
                    seed: request.seed,
                    mode: request.mode,
                    limits: request.limits,
                    prune: request.prune.clone(),
                };
                self.pool().await.eval(job).await
            }
            Entry::Command { template } => self.run_script(template, &request).await,
        }
    }

    fn parallelism(&self) -> usize {
        self.workers
    }

    async fn shutdown(&self) {
        let mut stopped = self.pool_stopped.lock().await;
        if !*stopped && let Some(pool) = self.pool.get() {
            pool.stop().await;
        }
        *stopped = true;
    }
}
