//! Evaluations with a memory: every finished evaluation goes into the store under a content hash
//! of (subject code, config, seed, mode, environment), so that a repeated or resumed command
//! never retrains what it already knows. Misses go to an [`Executor`] (by default the local
//! one: the warm pool for callable subjects, cold processes for command subjects).

use std::sync::{Arc, Mutex};

use reprolab_core::manifest::{Config, KerasBackend, Subject};
use reprolab_core::{Outcome, PruneSpec};
use reprolab_store::{EvaluationRecord, Store, StoreError};
use sha2::{Digest, Sha256};
use tokio::task::JoinSet;

use crate::Mode;
use crate::env::{EnvError, PythonEnv, TENSORFLOW};
use crate::executor::{EvalRequest, Executor, LocalExecutor};

/// One evaluation as the caller sees it.
#[derive(Debug, Clone)]
pub struct Evaluation {
    pub record: EvaluationRecord,
    /// Answered from the store without training.
    pub cached: bool,
}

impl Evaluation {
    /// How a failed run is shown to people: its traceback, or its last output when it raised
    /// nothing (a crash, a timeout); `None` for a finished run or a failure that left nothing to
    /// show.
    pub fn failure_report(&self) -> Option<String> {
        let seed = self.record.seed;
        match &self.record.outcome {
            Outcome::Ok { .. } => None,
            Outcome::Exception { traceback, .. } => Some(format!(
                "first failure (seed {seed}):\n{}",
                traceback.trim_end()
            )),
            _ if !self.record.output_tail.is_empty() => Some(format!(
                "first failure (seed {seed}), last output:\n{}",
                self.record.output_tail.trim_end()
            )),
            _ => None,
        }
    }
}

pub struct Evaluator {
    executor: Arc<dyn Executor>,
    env: PythonEnv,
    store: Arc<Mutex<Store>>,
    read_cache: bool,
    /// Set once TensorFlow is importable (installed at the first evaluation that needs it).
    tensorflow: tokio::sync::OnceCell<()>,
    /// The subjects' package lists already made importable (`[environment] packages`).
    packages_ready: tokio::sync::Mutex<std::collections::HashSet<Vec<String>>>,
}

impl Evaluator {
    /// `workers` parallel evaluations on this machine ([`LocalExecutor`]); `read_cache = false`
    /// retrains even what the store knows (results are still written).
    pub fn new(
        env: PythonEnv,
        store: Store,
        workers: usize,
        read_cache: bool,
    ) -> std::io::Result<Evaluator> {
        let local = LocalExecutor::new(env.clone(), workers)?;
        Ok(Evaluator::with_executor(
            Arc::new(local),
            env,
            store,
            read_cache,
        ))
    }

    /// The cache and the store in front of any executor. `env` identifies the environment the
    /// executor trains in (its id is part of every cache key).
    pub fn with_executor(
        executor: Arc<dyn Executor>,
        env: PythonEnv,
        store: Store,
        read_cache: bool,
    ) -> Evaluator {
        Evaluator {
            executor,
            env,
            store: Arc::new(Mutex::new(store)),
            read_cache,
            tensorflow: tokio::sync::OnceCell::new(),
            packages_ready: tokio::sync::Mutex::new(std::collections::HashSet::new()),
        }
    }

    pub fn env(&self) -> &PythonEnv {
        &self.env
    }

    pub fn workers(&self) -> usize {
        self.executor.parallelism()
    }

    /// The store, for commands that record more than evaluations.
    pub fn store(&self) -> Arc<Mutex<Store>> {
        self.store.clone()
    }

    /// The cache key of one evaluation.
    pub fn cache_key(&self, source_hash: &str, config: &Config, seed: u64, mode: Mode) -> String {
        self.cache_key_pruned(source_hash, config, seed, mode, None)
    }

    /// The cache key of one evaluation under a pruner: the plain key without one (or with one
    /// that sets no threshold), a key of its own with one, so that a request without
    /// thresholds never gets a pruned result, nor one with other thresholds.
    pub fn cache_key_pruned(
        &self,
        source_hash: &str,
        config: &Config,
        seed: u64,
        mode: Mode,
        prune: Option<&PruneSpec>,
    ) -> String {
        let prune = prune.filter(|p| p.is_active()).map(|p| {
            format!(
                "prune:{}",
                serde_json::to_string(p).expect("a prune spec serialises")
            )
        });
        let (config, seed) = (config.canonical_json(), seed.to_string());
        let mut parts = vec![source_hash, &config, &seed, mode.as_str(), &self.env.id];
        if let Some(p) = &prune {
            parts.push(p);
        }
        let mut h = Sha256::new();
        for part in parts {
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
        self.run_pruned(subject, config, seeds, mode, None, on_done)
            .await
    }

    /// [`run`](Evaluator::run) with in-training pruning (eval mode; ignored in trace mode): a
    /// training whose per-epoch values fall behind `prune`'s thresholds ends as
    /// `Outcome::Pruned`. Cached under its own key ([`cache_key_pruned`]); a training that ran
    /// to its end despite the thresholds is the same training as without them, so it is stored
    /// under the plain key too.
    ///
    /// [`cache_key_pruned`]: Evaluator::cache_key_pruned
    pub async fn run_pruned(
        &self,
        subject: &Subject,
        config: &Config,
        seeds: &[u64],
        mode: Mode,
        prune: Option<&PruneSpec>,
        on_done: &mut dyn FnMut(&Evaluation),
    ) -> Result<Vec<Evaluation>, EvalError> {
        let prune = prune.filter(|p| mode == Mode::Eval && p.is_active());
        let source_hash = subject.source_hash().map_err(|e| EvalError::Source {
            dir: subject.dir.display().to_string(),
            source: e,
        })?;
        let source_hash = with_extras(source_hash, subject.backend);
        let mut results: Vec<Option<Evaluation>> = vec![None; seeds.len()];
        let mut tasks = JoinSet::new();
        for (i, &seed) in seeds.iter().enumerate() {
            let key = self.cache_key_pruned(&source_hash, config, seed, mode, prune);
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
            self.ensure_backend(subject.backend).await?;
            self.ensure_packages(subject).await?;
            let executor = self.executor.clone();
            let request = EvalRequest {
                subject_dir: subject.dir.clone(),
                source_hash: source_hash.clone(),
                entry: subject.entry.clone(),
                framework: subject.framework,
                backend: subject.backend,
                config: serde_json::Value::Object(config.0.clone()),
                seed,
                mode,
                limits: subject.limits,
                prune: prune.cloned(),
            };
            tasks.spawn(async move { (i, key, seed, executor.run(request).await) });
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
            if prune.is_some() && record.outcome.is_cacheable() && !is_pruned(&record.outcome) {
                let plain = EvaluationRecord {
                    key: self.cache_key(&source_hash, config, seed, mode),
                    ..record.clone()
                };
                self.store.lock().unwrap().put_evaluation(&plain)?;
            }
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

    /// Install what `backend` needs into the environment before its first training (never for
    /// answers the cache has): TensorFlow for `backend = "tensorflow"`, once per evaluator.
    async fn ensure_backend(&self, backend: KerasBackend) -> Result<(), EvalError> {
        if backend != KerasBackend::Tensorflow {
            return Ok(());
        }
        self.tensorflow
            .get_or_try_init(|| async {
                // Minutes on first use (a few hundred MB from PyPI).
                install_logged(self.env.clone(), TENSORFLOW.spec(), |env, progress| {
                    crate::env::ensure_tensorflow(env, progress)
                })
                .await
            })
            .await
            .map(|_| ())
    }

    /// Make the packages `subject` names importable, once per list and evaluator (installed on
    /// first use, minutes for a large one, so said where it shows). On a remote executor the
    /// nodes' environments must have them: only this machine's is changed.
    async fn ensure_packages(&self, subject: &Subject) -> Result<(), EvalError> {
        if subject.packages.is_empty() {
            return Ok(());
        }
        let specs: Vec<String> = subject.packages.iter().map(|p| p.install_spec()).collect();
        let mut ready = self.packages_ready.lock().await;
        if ready.contains(&specs) {
            return Ok(());
        }
        let packages = subject.packages.clone();
        let needed_by = format!("subject {}", subject.name);
        install_logged(self.env.clone(), specs.join(", "), move |env, progress| {
            crate::env::ensure_packages(env, &packages, &needed_by, progress)
        })
        .await?;
        ready.insert(specs);
        Ok(())
    }

    /// Stop the workers.
    pub async fn shutdown(self) {
        self.executor.shutdown().await;
    }
}

/// Run an installation into `env` on a blocking thread: its first line is a warning (the first
/// use of a package can take minutes, so it is said where it shows), the rest info.
async fn install_logged(
    env: PythonEnv,
    spec: String,
    install: impl FnOnce(&PythonEnv, crate::env::Progress) -> Result<(), EnvError> + Send + 'static,
) -> Result<(), EvalError> {
    tokio::task::spawn_blocking(move || {
        let first = std::cell::Cell::new(true);
        install(&env, &|line| {
            if first.replace(false) {
                tracing::warn!("{line}");
            } else {
                tracing::info!("{line}");
            }
        })
    })
    .await
    .map_err(|e| EvalError::Task(e.to_string()))?
    .map_err(|source| EvalError::Extra { spec, source })
}

/// The source hash of a subject that runs on an optional extra, with the extra's pinned release:
/// the environment's id covers only its lock, so another TensorFlow pin must not reuse the
/// trainings of this one. A torch subject's hash is unchanged.
fn with_extras(source_hash: String, backend: KerasBackend) -> String {
    match backend {
        KerasBackend::Torch => source_hash,
        KerasBackend::Tensorflow => format!("{source_hash}+{}", TENSORFLOW.spec()),
    }
}

fn is_pruned(o: &Outcome) -> bool {
    matches!(o, Outcome::Pruned { .. })
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
    /// An optional package the subject needs could not be installed.
    #[error("the subject needs {spec}, which could not be made importable")]
    Extra {
        spec: String,
        #[source]
        source: EnvError,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::Finished;
    use reprolab_core::Outcome;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn a_failure_shows_its_traceback_else_its_last_output() {
        let with = |outcome: Outcome, tail: &str| Evaluation {
            record: EvaluationRecord {
                key: String::new(),
                subject: "s".into(),
                config: serde_json::Value::Null,
                seed: 3,
                mode: "eval".into(),
                outcome,
                duration_s: 1.0,
                epochs: Vec::new(),
                output_tail: tail.into(),
                created_at: String::new(),
            },
            cached: false,
        };
        let ok = Outcome::Ok {
            search: 0.5,
            holdout: 0.5,
        };
        assert_eq!(with(ok, "printed").failure_report(), None);
        let raised = Outcome::Exception {
            kind: "ValueError".into(),
            message: "m".into(),
            traceback: "Traceback\nValueError: m\n".into(),
        };
        assert_eq!(
            with(raised, "printed").failure_report().unwrap(),
            "first failure (seed 3):\nTraceback\nValueError: m"
        );
        let timeout = || Outcome::Timeout { limit_s: 1.0 };
        assert_eq!(
            with(timeout(), "epoch 1\n").failure_report().unwrap(),
            "first failure (seed 3), last output:\nepoch 1"
        );
        assert_eq!(with(timeout(), "").failure_report(), None);
    }

    #[test]
    fn a_tensorflow_subject_is_keyed_by_the_pinned_release_too() {
        assert_eq!(with_extras("abc".into(), KerasBackend::Torch), "abc");
        let tf = with_extras("abc".into(), KerasBackend::Tensorflow);
        assert_eq!(tf, format!("abc+tensorflow-cpu=={}", TENSORFLOW.version));
    }

    /// An executor that trains nothing: metric = seed / 100, counting the requests it gets; a
    /// request with thresholds is pruned at epoch 1 when its seed is odd.
    struct Arithmetic(AtomicUsize);

    #[async_trait::async_trait]
    impl Executor for Arithmetic {
        async fn run(&self, request: EvalRequest) -> Finished {
            self.0.fetch_add(1, Ordering::Relaxed);
            let x = request.seed as f64 / 100.0;
            Finished {
                outcome: match &request.prune {
                    Some(_) if request.seed % 2 == 1 => Outcome::Pruned {
                        epoch: 1,
                        value: Some(x),
                    },
                    _ => Outcome::Ok {
                        search: x,
                        holdout: x,
                    },
                },
                epochs: Vec::new(),
                output_tail: String::new(),
                duration_s: 0.0,
            }
        }

        fn parallelism(&self) -> usize {
            3
        }
    }

    /// An evaluator with the cache and a fresh store in front of [`Arithmetic`], and a subject.
    fn arithmetic_evaluator() -> (tempfile::TempDir, Subject, Arc<Arithmetic>, Evaluator) {
        let dir = tempfile::tempdir().unwrap();
        let subject = Subject::load(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../subjects/cancer-binary"),
        )
        .unwrap();
        let env = PythonEnv {
            python: "python3".into(),
            root: None,
            python_version: "3.11".into(),
            pythonpath: None,
            id: "test".into(),
        };
        let executor = Arc::new(Arithmetic(AtomicUsize::new(0)));
        let store = Store::open(&dir.path().join("s.db")).unwrap();
        let ev = Evaluator::with_executor(executor.clone(), env, store, true);
        (dir, subject, executor, ev)
    }

    #[tokio::test]
    async fn any_executor_gets_the_cache_and_the_store_in_front() {
        let (_dir, subject, executor, ev) = arithmetic_evaluator();
        assert_eq!(ev.workers(), 3);
        let mut seen = 0;
        for round in 0..2 {
            let evals = ev
                .run(
                    &subject,
                    &subject.config,
                    &[1, 2, 3],
                    Mode::Eval,
                    &mut |_| seen += 1,
                )
                .await
                .unwrap();
            let metrics: Vec<f64> = evals
                .iter()
                .map(|e| {
                    e.record
                        .outcome
                        .metric(reprolab_core::Split::Search)
                        .unwrap()
                })
                .collect();
            assert_eq!(metrics, [0.01, 0.02, 0.03]);
            assert!(evals.iter().all(|e| e.cached == (round == 1)));
        }
        assert_eq!(seen, 6);
        assert_eq!(
            executor.0.load(Ordering::Relaxed),
            3,
            "the second round came from the store"
        );
    }

    #[tokio::test]
    async fn a_pruned_result_is_cached_under_its_own_key() {
        let (_dir, subject, executor, ev) = arithmetic_evaluator();
        let spec = PruneSpec {
            key: "val_acc".into(),
            goal: reprolab_core::Goal::Max,
            thresholds: vec![None, Some(0.5)],
        };
        let kinds = |evals: &[Evaluation]| -> Vec<&'static str> {
            evals.iter().map(|e| e.record.outcome.kind()).collect()
        };
        // Seeds 1 and 2 under the thresholds.
        let run_pruned = async || {
            ev.run_pruned(
                &subject,
                &subject.config,
                &[1, 2],
                Mode::Eval,
                Some(&spec),
                &mut |_| {},
            )
            .await
            .unwrap()
        };
        let pruned = run_pruned().await;
        assert_eq!(kinds(&pruned), ["pruned", "ok"]);
        assert_eq!(executor.0.load(Ordering::Relaxed), 2);
        // Without thresholds: seed 1 is trained again (a pruned result is not a result), seed 2
        // ran to its end under the thresholds, which is the same training: cached.
        let plain = ev
            .run(&subject, &subject.config, &[1, 2], Mode::Eval, &mut |_| {})
            .await
            .unwrap();
        assert_eq!(kinds(&plain), ["ok", "ok"]);
        assert!(!plain[0].cached && plain[1].cached);
        assert_eq!(executor.0.load(Ordering::Relaxed), 3);
        // The same thresholds again: both from the cache, seed 1 still pruned.
        let again = run_pruned().await;
        assert_eq!(kinds(&again), ["pruned", "ok"]);
        assert!(again.iter().all(|e| e.cached));
        // Other thresholds, or a trace: keys of their own / no pruning.
        let other = PruneSpec {
            thresholds: vec![None, Some(0.6)],
            ..spec.clone()
        };
        let src = subject.source_hash().unwrap();
        assert_ne!(
            ev.cache_key_pruned(&src, &subject.config, 1, Mode::Eval, Some(&spec)),
            ev.cache_key_pruned(&src, &subject.config, 1, Mode::Eval, Some(&other))
        );
        let inactive = PruneSpec {
            thresholds: vec![None],
            ..spec.clone()
        };
        assert_eq!(
            ev.cache_key_pruned(&src, &subject.config, 1, Mode::Eval, Some(&inactive)),
            ev.cache_key(&src, &subject.config, 1, Mode::Eval)
        );
        let traced = ev
            .run_pruned(
                &subject,
                &subject.config,
                &[3],
                Mode::Trace,
                Some(&spec),
                &mut |_| {},
            )
            .await
            .unwrap();
        assert_eq!(kinds(&traced), ["ok"], "a trace is never pruned");
    }
}
