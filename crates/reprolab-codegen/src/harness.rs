//! The evaluation pipeline: extract the code of every answer (one batched `ast.parse`), look each
//! sample up in the store, patch repository files for the misses (one batched `locate`), run the
//! rest in parallel in the sandbox, judge, label failures and store every result the moment it
//! is known, so that an interrupted run loses nothing and a rerun reuses everything.
//!
//! Time limits come from the reference solution: a task's samples get
//! `clamp(factor × reference wall time + slack, min, task timeout)`, so a slow machine does not
//! turn correct code into timeouts and a fast one does not wait minutes for an infinite loop.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use reprolab_core::manifest::Limits;
use reprolab_exec::{Executor, PythonEnv, RayExecutor};
use reprolab_store::{Store, StoreError};
use sha2::{Digest, Sha256};
use tokio::sync::{OnceCell, Semaphore};
use tokio::task::JoinSet;

use crate::extract::{self, Extraction, Origin};
use crate::generations::Generation;
use crate::outcome::{Failure, Judged, Role, SampleResult, Status, judge};
use crate::patch::{self, Located, PatchError};
use crate::repo::copy_repo;
use crate::runner::{AstHelper, Backend, FreshRunner, RunnerError, TestRequest, WarmPool};
use crate::task::{Task, TaskKind};
use crate::taxonomy::{self, Evidence};

/// How time limits follow the reference's run time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TimeoutPolicy {
    pub factor: f64,
    pub slack_s: f64,
    pub min_s: f64,
}

impl Default for TimeoutPolicy {
    fn default() -> Self {
        TimeoutPolicy {
            factor: 4.0,
            slack_s: 2.0,
            min_s: 5.0,
        }
    }
}

impl TimeoutPolicy {
    /// `clamp(factor × reference wall + slack, min, task timeout)`; the task's own bound when
    /// the reference did not pass (its time says nothing).
    pub fn limit(&self, task_timeout_s: f64, reference_wall_s: Option<f64>) -> f64 {
        match reference_wall_s {
            Some(w) => (self.factor * w + self.slack_s)
                .max(self.min_s)
                .min(task_timeout_s),
            None => task_timeout_s,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Options {
    /// Samples run in parallel.
    pub workers: usize,
    /// One fresh `python -m pytest` per sample instead of the warm runners.
    pub fresh: bool,
    /// Bound on the private memory a sample's processes add, in MiB.
    pub memory_mb: u64,
    /// Bound on what a sample prints, in MiB.
    pub output_mb: u64,
    /// Processes or threads a sample may add (0: no bound).
    pub max_procs: u32,
    pub timeout: TimeoutPolicy,
    /// Reuse stored results (results are stored either way).
    pub read_cache: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            workers: reprolab_exec::default_workers(),
            fresh: false,
            memory_mb: 2048,
            output_mb: 4,
            max_procs: 512,
            timeout: TimeoutPolicy::default(),
            read_cache: true,
        }
    }
}

/// Why the limits given for a run cannot be used (the flags of `codegen validate | run | bench`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum OptionsError {
    /// A time setting is negative or not a number.
    #[error("{flag} must be a non-negative number of seconds, got {value}")]
    Seconds { flag: &'static str, value: f64 },
    /// A memory or output bound of zero.
    #[error("--memory-mb and --output-mb must be at least 1")]
    ZeroBound,
    /// Fresh processes asked for on a Ray cluster, where every sample runs in a warm runner.
    #[error(
        "--fresh runs pytest in fresh local processes; with --backend ray every sample runs \
         in a warm runner on the cluster (drop one of the two)"
    )]
    FreshOnRay,
}

impl Options {
    /// Checks the limits (time settings finite and non-negative, memory and output bounds at
    /// least 1 MiB) and that fresh processes are not asked for on a Ray cluster (`on_ray`).
    pub fn validate(&self, on_ray: bool) -> Result<(), OptionsError> {
        let t = &self.timeout;
        for (flag, value) in [
            ("--timeout-factor", t.factor),
            ("--timeout-slack", t.slack_s),
            ("--timeout-min", t.min_s),
        ] {
            if !value.is_finite() || value < 0.0 {
                return Err(OptionsError::Seconds { flag, value });
            }
        }
        if self.memory_mb == 0 || self.output_mb == 0 {
            return Err(OptionsError::ZeroBound);
        }
        if self.fresh && on_ray {
            return Err(OptionsError::FreshOnRay);
        }
        Ok(())
    }

    /// The time limits in words, as `run.json` records them.
    pub fn timeout_text(&self) -> String {
        format!(
            "time {}x reference + {} s, at least {} s, at most the task's timeout_s",
            self.timeout.factor, self.timeout.slack_s, self.timeout.min_s
        )
    }

    /// Where samples run, as `run.json` records it: `ray` on a cluster (`on_ray`), else `fresh`
    /// or `warm`.
    pub fn mode_name(&self, on_ray: bool) -> &'static str {
        match (on_ray, self.fresh) {
            (true, _) => "ray",
            (false, true) => "fresh",
            (false, false) => "warm",
        }
    }
}

/// Results by task id (one per task: the references).
pub fn by_task(results: &[SampleResult]) -> HashMap<String, SampleResult> {
    results
        .iter()
        .map(|r| (r.task_id.clone(), r.clone()))
        .collect()
}

#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Helper(#[from] RunnerError),
    #[error("cannot read the repository of task {task}")]
    Repository {
        task: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot create a scratch directory: {0}")]
    Scratch(std::io::Error),
    #[error("an evaluation task failed: {0}")]
    Join(String),
}

/// Called as each result is known (stored ones first).
pub type OnDone<'a> = &'a (dyn Fn(&SampleResult) + Send + Sync);

struct Inner {
    env: PythonEnv,
    opts: Options,
    helper: AstHelper,
    backend: OnceCell<Backend>,
    scratch: reprolab_exec::scratch::Scratch,
    counter: AtomicU64,
    slots: Semaphore,
}

pub struct Harness {
    inner: Arc<Inner>,
    store: Option<Arc<Mutex<Store>>>,
    fingerprints: Mutex<HashMap<String, String>>,
}

/// A sample to run.
#[derive(Debug, Clone)]
struct Job {
    task: Arc<Task>,
    role: Role,
    sample: u32,
    extraction: Option<Origin>,
    /// The candidate's code; `None` for a repository task's reference (the file as it is).
    code: Option<String>,
    /// The repository file with the candidate in it (repository samples).
    patched: Option<String>,
    timeout_s: f64,
    key: String,
}

enum Pending {
    Done(Box<SampleResult>),
    Run(Box<Job>),
}

impl Harness {
    pub fn new(
        env: PythonEnv,
        store: Option<Store>,
        opts: Options,
    ) -> Result<Harness, HarnessError> {
        let scratch =
            reprolab_exec::scratch::Scratch::new("codegen").map_err(HarnessError::Scratch)?;
        let workers = opts.workers.max(1);
        Ok(Harness {
            inner: Arc::new(Inner {
                helper: AstHelper::new(env.clone(), scratch.path().join("helper")),
                env,
                opts,
                backend: OnceCell::new(),
                scratch,
                counter: AtomicU64::new(0),
                slots: Semaphore::new(workers),
            }),
            store: store.map(|s| Arc::new(Mutex::new(s))),
            fingerprints: Mutex::new(HashMap::new()),
        })
    }

    /// A harness whose samples run on the slots of `ray` (`--backend ray`), as many at once as
    /// the cluster has slots; the AST helper stays local.
    pub fn on_ray(
        env: PythonEnv,
        store: Option<Store>,
        opts: Options,
        ray: Arc<RayExecutor>,
    ) -> Result<Harness, HarnessError> {
        let workers = ray.parallelism();
        let mut harness = Harness::new(env, store, Options { workers, ..opts })?;
        let inner = Arc::get_mut(&mut harness.inner).expect("a new harness is not shared");
        inner.backend = OnceCell::new_with(Some(Backend::Ray(ray)));
        Ok(harness)
    }

    pub fn options(&self) -> &Options {
        &self.inner.opts
    }

    /// Start the test runners now (their imports overlap with other work).
    pub async fn warm_up(&self) {
        self.inner.backend().await;
    }

    /// Whether test runners were started (only when a sample or reference had to run).
    pub fn runners_started(&self) -> bool {
        self.inner.backend.get().is_some()
    }

    /// Import times of the warm runners started so far (seconds each).
    pub fn runner_import_times(&self) -> Vec<f64> {
        self.inner
            .backend
            .get()
            .map(|b| b.import_times())
            .unwrap_or_default()
    }

    /// Stop the runners and the helper.
    pub async fn shutdown(self) {
        if let Some(b) = self.inner.backend.get() {
            b.shutdown().await;
        }
        self.inner.helper.shutdown().await;
    }

    fn fingerprint(&self, task: &Task) -> Result<String, HarnessError> {
        let mut cache = self.fingerprints.lock().unwrap();
        if let Some(f) = cache.get(&task.id) {
            return Ok(f.clone());
        }
        let f = task
            .fingerprint()
            .map_err(|source| HarnessError::Repository {
                task: task.id.clone(),
                source,
            })?;
        cache.insert(task.id.clone(), f.clone());
        Ok(f)
    }

    /// The cache key of one sample: task, role and index, code, limits, runner mode, environment.
    fn key(
        &self,
        task: &Task,
        role: Role,
        sample: u32,
        code: &str,
        timeout_s: f64,
    ) -> Result<String, HarnessError> {
        let o = &self.inner.opts;
        let parts = [
            "codegen-v5".to_string(), // v5: behaviour findings say whether a shape differs by one slice at an end (off by one), and find a reshape for a permute exactly
            self.fingerprint(task)?,
            format!("{role:?}"),
            sample.to_string(),
            code.to_string(),
            self.inner.env.id.clone(),
            if o.fresh { "fresh" } else { "warm" }.to_string(),
            format!("{timeout_s:.3}"),
            o.memory_mb.to_string(),
            o.output_mb.to_string(),
            o.max_procs.to_string(),
        ];
        let mut h = Sha256::new();
        for p in &parts {
            h.update((p.len() as u64).to_le_bytes());
            h.update(p.as_bytes());
        }
        Ok(hex::encode(h.finalize()))
    }

    fn cached(&self, key: &str) -> Result<Option<SampleResult>, HarnessError> {
        if !self.inner.opts.read_cache {
            return Ok(None);
        }
        let Some(store) = &self.store else {
            return Ok(None);
        };
        let hit = store.lock().unwrap().get_codegen_result(key)?;
        Ok(hit
            .and_then(|v| serde_json::from_value::<SampleResult>(v).ok())
            .filter(|r| r.is_cacheable())
            .map(|mut r| {
                r.cached = true;
                r
            }))
    }

    fn store_result(&self, r: &SampleResult) -> Result<(), HarnessError> {
        if let Some(store) = &self.store
            && r.is_cacheable()
            && !r.cached
        {
            let v = serde_json::to_value(r).expect("a result serialises");
            let sample = match r.role {
                Role::Reference => -1,
                Role::Wrong => -2 - r.sample as i64,
                Role::Sample => r.sample as i64,
            };
            store.lock().unwrap().put_codegen_result(
                &r.key,
                &r.task_id,
                sample,
                r.status.name(),
                &v,
            )?;
        }
        Ok(())
    }

    /// A job, or its stored result.
    #[allow(clippy::too_many_arguments)]
    fn job(
        &self,
        task: &Arc<Task>,
        role: Role,
        sample: u32,
        extraction: Option<Origin>,
        code: Option<String>,
        timeout_s: f64,
    ) -> Result<Pending, HarnessError> {
        let key = self.key(task, role, sample, code.as_deref().unwrap_or(""), timeout_s)?;
        if let Some(hit) = self.cached(&key)? {
            return Ok(Pending::Done(Box::new(hit)));
        }
        Ok(Pending::Run(Box::new(Job {
            task: task.clone(),
            role,
            sample,
            extraction,
            code,
            patched: None,
            timeout_s,
            key,
        })))
    }

    /// Run every task's reference solution (the repository as it is, for repository tasks)
    /// under the task's own time limit.
    pub async fn references(
        &self,
        tasks: &[Arc<Task>],
        on_done: OnDone<'_>,
    ) -> Result<Vec<SampleResult>, HarnessError> {
        let mut pending = Vec::new();
        for t in tasks {
            let code = match &t.kind {
                TaskKind::Function { reference, .. } => Some(reference.clone()),
                TaskKind::Repository { .. } => None,
            };
            pending.push(self.job(t, Role::Reference, 0, None, code, t.timeout_s)?);
        }
        // A repository reference is only meaningful if the target exists where the task says.
        let repo_jobs: Vec<usize> = pending
            .iter()
            .enumerate()
            .filter(|(_, p)| matches!(p, Pending::Run(j) if j.task.is_repository()))
            .map(|(i, _)| i)
            .collect();
        if !repo_jobs.is_empty() {
            let mut items = Vec::new();
            for &i in &repo_jobs {
                let Pending::Run(j) = &pending[i] else {
                    unreachable!()
                };
                items.push(original_source(&j.task)?);
            }
            let located = self.inner.helper.locate(&items).await?;
            for (&i, loc) in repo_jobs.iter().zip(located) {
                let Pending::Run(j) = &pending[i] else {
                    unreachable!()
                };
                if let Some(e) = target_missing(&j.task, &loc) {
                    let r =
                        self.result(j, Judged::without_tests(Status::Error, Some(e)), 0.0, None);
                    self.store_result(&r)?;
                    pending[i] = Pending::Done(Box::new(r));
                }
            }
        }
        self.finish(pending, on_done).await
    }

    /// Run every wrong solution of the function tasks, with limits scaled from `references`.
    pub async fn wrong_solutions(
        &self,
        tasks: &[Arc<Task>],
        references: &HashMap<String, SampleResult>,
        on_done: OnDone<'_>,
    ) -> Result<Vec<SampleResult>, HarnessError> {
        let mut pending = Vec::new();
        for t in tasks {
            if let TaskKind::Function { wrong, .. } = &t.kind {
                let timeout = self.sample_timeout(t, references.get(&t.id));
                for (i, code) in wrong.iter().enumerate() {
                    pending.push(self.job(
                        t,
                        Role::Wrong,
                        i as u32,
                        None,
                        Some(code.clone()),
                        timeout,
                    )?);
                }
            }
        }
        self.finish(pending, on_done).await
    }

    /// The time limit of a task's samples.
    pub fn sample_timeout(&self, task: &Task, reference: Option<&SampleResult>) -> f64 {
        let wall = reference
            .filter(|r| r.status == Status::Pass)
            .map(|r| r.wall_s);
        self.inner.opts.timeout.limit(task.timeout_s, wall)
    }

    /// Evaluate model answers: extract, look up, patch, run.
    pub async fn generations(
        &self,
        tasks: &[Arc<Task>],
        gens: &[Generation],
        references: &HashMap<String, SampleResult>,
        on_done: OnDone<'_>,
    ) -> Result<Vec<SampleResult>, HarnessError> {
        let by_id: HashMap<&str, &Arc<Task>> = tasks.iter().map(|t| (t.id.as_str(), t)).collect();
        let extractions = self.extract_all(gens).await?;
        let mut pending = Vec::new();
        for (g, extraction) in gens.iter().zip(extractions) {
            let Some(task) = by_id.get(g.task_id.as_str()) else {
                continue;
            };
            let timeout = self.sample_timeout(task, references.get(&task.id));
            match extraction {
                Extraction::NoCode => {
                    let key = self.key(
                        task,
                        Role::Sample,
                        g.sample,
                        &format!("no_code:{}", g.completion),
                        timeout,
                    )?;
                    let job = Job {
                        task: (*task).clone(),
                        role: Role::Sample,
                        sample: g.sample,
                        extraction: None,
                        code: None,
                        patched: None,
                        timeout_s: timeout,
                        key,
                    };
                    let r =
                        self.result(&job, Judged::without_tests(Status::NoCode, None), 0.0, None);
                    pending.push(Pending::Done(Box::new(r)));
                }
                Extraction::Code { code, origin, .. } => {
                    pending.push(self.job(
                        task,
                        Role::Sample,
                        g.sample,
                        Some(origin),
                        Some(code),
                        timeout,
                    )?);
                }
            }
        }
        self.patch_all(&mut pending).await?;
        self.finish(pending, on_done).await
    }

    async fn extract_all(&self, gens: &[Generation]) -> Result<Vec<Extraction>, HarnessError> {
        let cands: Vec<Vec<extract::Candidate>> = gens
            .iter()
            .map(|g| extract::candidates(&g.completion))
            .collect();
        let sources: Vec<String> = cands.iter().flatten().map(|c| c.code.clone()).collect();
        let parsed = if sources.is_empty() {
            Vec::new()
        } else {
            self.inner.helper.parse(&sources).await?
        };
        let mut at = 0;
        Ok(cands
            .iter()
            .map(|c| {
                let ok: Vec<bool> = parsed[at..at + c.len()].iter().map(|(ok, _)| *ok).collect();
                at += c.len();
                extract::choose(c, &ok)
            })
            .collect())
    }

    /// Put the generated definitions into the repository files of the repository samples that
    /// will run; those that cannot be patched become `patch_error` results.
    async fn patch_all(&self, pending: &mut [Pending]) -> Result<(), HarnessError> {
        let idx: Vec<usize> = pending
            .iter()
            .enumerate()
            .filter(
                |(_, p)| matches!(p, Pending::Run(j) if j.task.is_repository() && j.code.is_some()),
            )
            .map(|(i, _)| i)
            .collect();
        if idx.is_empty() {
            return Ok(());
        }
        // Originals once per task, then every generated answer.
        let mut items: Vec<(String, String)> = Vec::new();
        let mut original_at: HashMap<String, usize> = HashMap::new();
        for &i in &idx {
            let Pending::Run(j) = &pending[i] else {
                unreachable!()
            };
            if !original_at.contains_key(&j.task.id) {
                original_at.insert(j.task.id.clone(), items.len());
                items.push(original_source(&j.task)?);
            }
        }
        let gen_start = items.len();
        for &i in &idx {
            let Pending::Run(j) = &pending[i] else {
                unreachable!()
            };
            items.push((
                j.code.clone().unwrap_or_default(),
                j.task.target_name().to_string(),
            ));
        }
        let located = self.inner.helper.locate(&items).await?;
        for (n, &i) in idx.iter().enumerate() {
            let Pending::Run(j) = &mut pending[i] else {
                unreachable!()
            };
            let TaskKind::Repository {
                file,
                function,
                class,
                ..
            } = &j.task.kind
            else {
                unreachable!()
            };
            let o = original_at[&j.task.id];
            let spliced = patch::splice(
                file,
                &items[o].0,
                &located[o],
                j.code.as_deref().unwrap_or(""),
                &located[gen_start + n],
                function,
                class.as_deref(),
            );
            match spliced {
                Ok(text) => j.patched = Some(text),
                Err(e) => {
                    let kind = match &e {
                        PatchError::GeneratedSyntax { kind, .. } => kind.clone(),
                        PatchError::NoDefinition { .. } => "NoDefinition".into(),
                        PatchError::TargetMissing { .. } | PatchError::OriginalSyntax { .. } => {
                            "TargetMissing".into()
                        }
                    };
                    let failure = Failure {
                        kind,
                        message: e.to_string(),
                        traceback: String::new(),
                        nodeid: None,
                    };
                    let r = self.result(
                        j,
                        Judged::without_tests(Status::PatchError, Some(failure)),
                        0.0,
                        None,
                    );
                    self.store_result(&r)?;
                    pending[i] = Pending::Done(Box::new(r));
                }
            }
        }
        Ok(())
    }

    /// Report what is known, run the rest in parallel, store each result as it comes.
    async fn finish(
        &self,
        pending: Vec<Pending>,
        on_done: OnDone<'_>,
    ) -> Result<Vec<SampleResult>, HarnessError> {
        let mut results: Vec<Option<SampleResult>> = vec![None; pending.len()];
        let mut set = JoinSet::new();
        for (i, p) in pending.into_iter().enumerate() {
            match p {
                Pending::Done(r) => {
                    on_done(&r);
                    results[i] = Some(*r);
                }
                Pending::Run(job) => {
                    let inner = self.inner.clone();
                    set.spawn(async move { (i, inner.execute(*job).await) });
                }
            }
        }
        while let Some(joined) = set.join_next().await {
            let (i, r) = joined.map_err(|e| HarnessError::Join(e.to_string()))?;
            self.store_result(&r)?;
            on_done(&r);
            results[i] = Some(r);
        }
        Ok(results
            .into_iter()
            .map(|r| r.expect("every sample finished"))
            .collect())
    }

    fn result(
        &self,
        job: &Job,
        judged: Judged,
        wall_s: f64,
        run: Option<&crate::runner::TestRun>,
    ) -> SampleResult {
        build_result(job, judged, wall_s, run)
    }
}

/// The repository file of a task and the name to locate in it.
fn original_source(task: &Task) -> Result<(String, String), HarnessError> {
    let TaskKind::Repository {
        repo,
        file,
        function,
        ..
    } = &task.kind
    else {
        unreachable!("only repository tasks are patched")
    };
    let text =
        std::fs::read_to_string(repo.join(file)).map_err(|source| HarnessError::Repository {
            task: task.id.clone(),
            source,
        })?;
    Ok((text, function.clone()))
}

/// The failure of a repository task whose file lacks its target.
fn target_missing(task: &Task, loc: &Located) -> Option<Failure> {
    let TaskKind::Repository {
        file,
        function,
        class,
        ..
    } = &task.kind
    else {
        return None;
    };
    let found = match class {
        None => loc
            .toplevel
            .iter()
            .any(|t| t.kind == "def" && t.name.as_deref() == Some(function)),
        Some(c) => loc.methods.iter().any(|m| &m.class == c),
    };
    (loc.error.is_some() || !found).then(|| {
        let what = match class {
            Some(c) => format!("method `{c}.{function}`"),
            None => format!("top-level function `{function}`"),
        };
        Failure {
            kind: "TargetMissing".into(),
            message: match &loc.error {
                Some(e) => format!("{file} does not parse: {e}"),
                None => format!("{file} defines no {what}; fix the task's function/class"),
            },
            traceback: String::new(),
            nodeid: None,
        }
    })
}

fn build_result(
    job: &Job,
    judged: Judged,
    wall_s: f64,
    run: Option<&crate::runner::TestRun>,
) -> SampleResult {
    let taxonomy = if job.role == Role::Sample || job.role == Role::Wrong {
        let f = judged.failure.as_ref();
        taxonomy::classify(&Evidence {
            status: judged.status,
            kind: f.map_or("", |f| f.kind.as_str()),
            message: f.map_or("", |f| f.message.as_str()),
            traceback: f.map_or("", |f| f.traceback.as_str()),
            behaviour: judged.behaviour(),
        })
    } else {
        None
    };
    SampleResult {
        task_id: job.task.id.clone(),
        role: job.role,
        sample: job.sample,
        status: judged.status,
        labels: job.task.labels,
        extraction: job.extraction,
        code: job.code.clone(),
        tests: judged.tests,
        passed: judged.passed,
        total: judged.total,
        failure: judged.failure,
        taxonomy,
        refinement: None,
        expected: None,
        wall_s,
        tests_s: judged.tests_s,
        timeout_s: job.timeout_s,
        peak_mb: run.map_or(0, |r| r.peak_mb),
        output_tail: run.map(|r| r.output_tail.clone()).unwrap_or_default(),
        cached: false,
        key: job.key.clone(),
    }
}

impl Inner {
    async fn backend(&self) -> &Backend {
        self.backend
            .get_or_init(|| async {
                if self.opts.fresh {
                    Backend::Fresh(FreshRunner::new(self.env.clone(), self.opts.workers))
                } else {
                    Backend::Warm(WarmPool::start(
                        self.env.clone(),
                        self.opts.workers,
                        self.scratch.path().to_path_buf(),
                    ))
                }
            })
            .await
    }

    async fn execute(self: Arc<Self>, job: Job) -> SampleResult {
        let _slot = self.slots.acquire().await.expect("never closed");
        let t0 = Instant::now();
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        let workdir = self.scratch.path().join(format!("s{n}"));
        let outcome = match self.prepare(&job, &workdir, n) {
            Ok(req) => self
                .backend()
                .await
                .run(&req)
                .await
                .map_err(|e| reprolab_core::chain(&e)),
            Err(e) => Err(format!("cannot prepare {}: {e}", workdir.display())),
        };
        let (judged, run) = match outcome {
            Ok(run) => (
                judge(run.ending, run.record.as_ref(), &run.output_tail),
                Some(run),
            ),
            Err(message) => (
                Judged::without_tests(
                    Status::Infra,
                    Some(Failure {
                        kind: "InfrastructureError".into(),
                        message,
                        traceback: String::new(),
                        nodeid: None,
                    }),
                ),
                None,
            ),
        };
        let _ = std::fs::remove_dir_all(&workdir);
        let waited = run.as_ref().map_or(0.0, |r| r.waited.as_secs_f64());
        build_result(
            &job,
            judged,
            (t0.elapsed().as_secs_f64() - waited).max(0.0),
            run.as_ref(),
        )
    }

    /// Write the sample's files into `workdir/src` and describe the pytest run.
    fn prepare(&self, job: &Job, workdir: &Path, n: u64) -> std::io::Result<TestRequest> {
        let src = workdir.join("src");
        let (args, check): (Vec<String>, Vec<String>) = match &job.task.kind {
            TaskKind::Function {
                test,
                reference,
                entry_point,
                ..
            } => {
                std::fs::create_dir_all(&src)?;
                std::fs::write(src.join("solution.py"), job.code.as_deref().unwrap_or(""))?;
                std::fs::write(src.join("test_task.py"), test)?;
                // Stops pytest's search for a configuration above the scratch directory.
                std::fs::write(src.join("pytest.ini"), "[pytest]\n")?;
                let mut args = vec!["test_task.py".to_string()];
                if job.role != Role::Reference {
                    // Behaviour evidence: on a failed test the plugin runs the reference (outside
                    // the tests' directory, so they cannot import it) on the test's calls.
                    let path = workdir.join("reference.py");
                    std::fs::write(&path, reference)?;
                    args.extend([
                        "--reprolab-reference".to_string(),
                        path.to_string_lossy().into_owned(),
                        "--reprolab-entry".to_string(),
                        entry_point.clone(),
                    ]);
                }
                (args, vec!["solution.py".into()])
            }
            TaskKind::Repository {
                repo, file, tests, ..
            } => {
                copy_repo(repo, &src)?;
                if let Some(patched) = &job.patched {
                    std::fs::write(src.join(file), patched)?;
                }
                (tests.clone(), vec![file.clone()])
            }
        };
        let mut all_args = vec!["--rootdir".to_string(), src.to_string_lossy().into_owned()];
        all_args.extend(args);
        Ok(TestRequest {
            id: format!("s{n}"),
            workdir: workdir.to_path_buf(),
            cwd: src,
            args: all_args,
            check,
            limits: Limits {
                timeout_s: job.timeout_s,
                memory_mb: self.opts.memory_mb,
                output_mb: self.opts.output_mb,
                // A test run writes little; a generated answer that fills the disk is stopped
                // long before it does harm.
                disk_mb: 1024,
            },
            max_procs: self.opts.max_procs,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_scale_with_the_reference_and_stay_in_bounds() {
        let p = TimeoutPolicy::default();
        assert_eq!(p.limit(60.0, Some(1.0)), 6.0);
        assert_eq!(p.limit(60.0, Some(0.1)), 5.0, "at least the minimum");
        assert_eq!(p.limit(30.0, Some(20.0)), 30.0, "at most the task's bound");
        assert_eq!(
            p.limit(3.0, Some(0.1)),
            3.0,
            "the task's bound wins over the minimum"
        );
        assert_eq!(
            p.limit(60.0, None),
            60.0,
            "no passing reference: the task's bound"
        );
    }

    #[test]
    fn options_are_checked_and_described() {
        let ok = Options::default();
        assert_eq!(ok.validate(false), Ok(()));
        assert_eq!(ok.validate(true), Ok(()));
        assert_eq!(ok.mode_name(false), "warm");
        assert_eq!(ok.mode_name(true), "ray");
        assert_eq!(
            ok.timeout_text(),
            "time 4x reference + 2 s, at least 5 s, at most the task's timeout_s"
        );
        let mut slack = Options::default();
        slack.timeout.slack_s = -1.0;
        let e = slack.validate(false).unwrap_err();
        assert_eq!(
            e.to_string(),
            "--timeout-slack must be a non-negative number of seconds, got -1"
        );
        let mut factor = Options::default();
        factor.timeout.factor = f64::NAN;
        assert!(matches!(
            factor.validate(false),
            Err(OptionsError::Seconds {
                flag: "--timeout-factor",
                ..
            })
        ));
        let no_output = Options {
            output_mb: 0,
            ..Options::default()
        };
        assert_eq!(no_output.validate(false), Err(OptionsError::ZeroBound));
        let fresh = Options {
            fresh: true,
            ..Options::default()
        };
        assert_eq!(fresh.mode_name(false), "fresh");
        assert_eq!(fresh.validate(false), Ok(()));
        assert_eq!(fresh.validate(true), Err(OptionsError::FreshOnRay));
    }

    #[test]
    fn references_are_found_by_task() {
        let mut a = crate::testing::result(0, Status::Pass, 1.0);
        a.task_id = "a".into();
        let b = crate::testing::result(0, Status::Fail, 2.0);
        let by = by_task(&[a, b]);
        assert_eq!(by.len(), 2);
        assert_eq!(by["a"].status, Status::Pass);
        assert_eq!(by["t"].wall_s, 2.0);
    }
}
