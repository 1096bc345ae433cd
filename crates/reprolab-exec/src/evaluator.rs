//! Evaluations with a memory: every finished evaluation goes into the store under a content hash
//! of (subject code, config, seed, mode, environment), so that a repeated or resumed command
//! never retrains what it already knows. Misses run in parallel on the warm pool (callable
//! subjects) or as cold processes (command subjects).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use reprolab_core::manifest::{Config, Entry, Subject};
use reprolab_store::{EvaluationRecord, Store, StoreError};
use sha2::{Digest, Sha256};
use tokio::sync::{OnceCell, Semaphore};
use tokio::task::JoinSet;

use crate::Mode;
use crate::env::PythonEnv;
use crate::pool::{Job, WorkerPool};
use crate::result::Finished;
use crate::script::run_command;

/// One evaluation as the caller sees it.
#[derive(Debug, Clone)]
pub struct Evaluation {
    pub record: EvaluationRecord,
    /// Answered from the store without training.
    pub cached: bool,
}

struct Inner {
    env: PythonEnv,
    workers: usize,
    pool: OnceCell<WorkerPool>,
    script_slots: Semaphore,
    scratch: PathBuf,
}

pub struct Evaluator {
    inner: Arc<Inner>,
    store: Arc<Mutex<Store>>,
    read_cache: bool,
    _scratch: crate::scratch::Scratch,
}

impl Evaluator {
    /// `workers` parallel evaluations; `read_cache = false` retrains even what the store knows
    /// (results are still written).
    pub fn new(
        env: PythonEnv,
        store: Store,
        workers: usize,
        read_cache: bool,
    ) -> std::io::Result<Evaluator> {
        let scratch = crate::scratch::Scratch::new("eval")?;
        let workers = workers.max(1);
        Ok(Evaluator {
            inner: Arc::new(Inner {
                env,
                workers,
                pool: OnceCell::new(),
                script_slots: Semaphore::new(workers),
                scratch: scratch.path().to_path_buf(),
            }),
            store: Arc::new(Mutex::new(store)),
            read_cache,
            _scratch: scratch,
        })
    }

    pub fn env(&self) -> &PythonEnv {
        &self.inner.env
    }

    pub fn workers(&self) -> usize {
        self.inner.workers
    }

    /// The store, for commands that record more than evaluations.
    pub fn store(&self) -> Arc<Mutex<Store>> {
        self.store.clone()
    }

    /// Start the warm workers now, so their torch imports overlap with other work.
    pub async fn warm_up(&self) {
        self.inner.pool().await;
    }

    /// The cache key of one evaluation.
    pub fn cache_key(&self, source_hash: &str, config: &Config, seed: u64, mode: Mode) -> String {
        let mut h = Sha256::new();
        for part in [
            source_hash,
            &config.canonical_json(),
            &seed.to_string(),
            mode.as_str(),
            &self.inner.env.id,
        ] {
            h.update((part.len() as u64).to_le_bytes());
            h.update(part.as_bytes());
        }
        hex::encode(h.finalize())
    }

    /// Evaluate `config` once per seed; results come back in the order of `seeds`.
    /// `on_done` is called as each evaluation finishes (cached ones first).
    pub async fn run(
        &self,
        subject: &Subject,
        config: &Config,
        seeds: &[u64],
        mode: Mode,
        on_done: &mut dyn FnMut(&Evaluation),
    ) -> Result<Vec<Evaluation>, EvalError> {
        let source_hash = subject.source_hash().map_err(|e| EvalError::Source {
            dir: subject.dir.display().to_string(),
            source: e,
        })?;
        let mut results: Vec<Option<Evaluation>> = vec![None; seeds.len()];
        let mut tasks = JoinSet::new();
        for (i, &seed) in seeds.iter().enumerate() {
            let key = self.cache_key(&source_hash, config, seed, mode);
            if self.read_cache {
                let hit = match self.store.lock().unwrap().get_evaluation(&key) {
                    // A damaged row is a cache miss: retrained, and replaced when stored.
                    Err(e @ StoreError::BadRecord { .. }) => {
                        tracing::warn!("{e}; evaluating again");
                        None
                    }
                    other => other?,
                };
                if let Some(record) = hit.filter(|r| r.outcome.is_cacheable()) {
                    let e = Evaluation {
                        record,
                        cached: true,
                    };
                    on_done(&e);
                    results[i] = Some(e);
                    continue;
                }
            }
            let inner = self.inner.clone();
            let (entry, dir, limits) = (subject.entry.clone(), subject.dir.clone(), subject.limits);
            let config_json = serde_json::Value::Object(config.0.clone());
            tasks.spawn(async move {
                let finished = inner
                    .evaluate(&entry, dir, config_json, seed, mode, limits)
                    .await;
                (i, key, seed, finished)
            });
        }
        while let Some(joined) = tasks.join_next().await {
            let (i, key, seed, finished) = joined.map_err(|e| EvalError::Task(e.to_string()))?;
            let record = EvaluationRecord {
                key,
                subject: subject.name.clone(),
                config: serde_json::Value::Object(config.0.clone()),
                seed,
                mode: mode.as_str().to_string(),
                outcome: finished.outcome,
                duration_s: finished.duration_s,
                epochs: finished.epochs,
                output_tail: finished.output_tail,
                created_at: String::new(),
            };
            // Stored the moment it finishes: a kill after this line loses nothing.
            self.store.lock().unwrap().put_evaluation(&record)?;
            let e = Evaluation {
                record,
                cached: false,
            };
            on_done(&e);
            results[i] = Some(e);
        }
        Ok(results
            .into_iter()
            .map(|r| r.expect("every seed evaluated"))
            .collect())
    }

    /// Stop the workers.
    pub async fn shutdown(self) {
        if let Ok(inner) = Arc::try_unwrap(self.inner)
            && let Some(pool) = inner.pool.into_inner()
        {
            pool.shutdown().await;
        }
    }
}

impl Inner {
    async fn pool(&self) -> &WorkerPool {
        self.pool
            .get_or_init(|| async {
                WorkerPool::start(self.env.clone(), self.workers, self.scratch.join("pool"))
            })
            .await
    }

    async fn evaluate(
        &self,
        entry: &Entry,
        dir: PathBuf,
        config: serde_json::Value,
        seed: u64,
        mode: Mode,
        limits: reprolab_core::manifest::Limits,
    ) -> Finished {
        match entry {
            Entry::Callable { file, function } => {
                let job = Job {
                    subject_dir: dir,
                    entry: format!("{file}:{function}"),
                    config,
                    seed,
                    mode,
                    limits,
                };
                self.pool().await.eval(job).await
            }
            Entry::Command { template } => {
                let _slot = self
                    .script_slots
                    .acquire()
                    .await
                    .expect("semaphore never closed");
                let workdir = tempfile::Builder::new()
                    .prefix("s")
                    .tempdir_in(&self.scratch)
                    .or_else(|_| {
                        std::fs::create_dir_all(&self.scratch)?;
                        tempfile::Builder::new()
                            .prefix("s")
                            .tempdir_in(&self.scratch)
                    });
                match workdir {
                    Ok(w) => {
                        run_command(
                            &self.env,
                            &dir,
                            template,
                            &config,
                            seed,
                            mode,
                            &limits,
                            w.path(),
                        )
                        .await
                    }
                    Err(e) => crate::worker::infra(format!("cannot create a work directory: {e}")),
                }
            }
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("cannot read the subject's files in {dir}")]
    Source {
        dir: String,
        #[source]
        source: std::io::Error,
    },
    #[error("an evaluation task failed: {0}")]
    Task(String),
}
