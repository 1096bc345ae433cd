//! A pool of warm workers fed from one queue. A worker starts when a queued task finds no idle
//! one (so a command that runs one training on a 32-core machine imports torch once, and a batch
//! of N starts min(N, size) workers whose imports overlap), stays warm for the pool's life, and
//! is replaced when it dies or hangs; an evaluation it was running is retried once.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::Value;
use tokio::sync::{Mutex, mpsc, oneshot};

use crate::Mode;
use crate::env::PythonEnv;
use crate::result::{Exit, Finished, OUTPUT_TAIL_BYTES, read_tail};
use crate::supervise::Violation;
use crate::worker::{ForkError, Forked, Request, Worker, infra, killed_its_worker};
use reprolab_core::manifest::{Framework, KerasBackend, Limits};

/// One evaluation for the pool.
#[derive(Debug, Clone)]
pub struct Job {
    pub subject_dir: PathBuf,
    /// `file.py:function`.
    pub entry: String,
    pub framework: Framework,
    pub backend: KerasBackend,
    pub config: Value,
    pub seed: u64,
    pub mode: Mode,
    pub limits: Limits,
    pub prune: Option<reprolab_core::PruneSpec>,
}

/// A bug-reproduction script for the pool: run once by `reprolab.repro` in a forked child of a
/// warm worker, as `python -m reprolab.repro` would run it in a fresh process.
#[derive(Debug, Clone)]
pub struct ScriptJob {
    /// The script's source, written to `reproduce.py` in the run's work directory.
    pub source: String,
    pub seed: u64,
    /// Directories the script may import from besides its own.
    pub paths: Vec<PathBuf>,
    pub limits: Limits,
    /// An existing directory of the caller's that receives the files the run wrote to its output
    /// directory (`observed.json`, `reported.jsonl`) before the work directory is removed.
    pub keep: PathBuf,
}

/// How a script run ended (what it recorded is in [`ScriptJob::keep`]).
#[derive(Debug, Clone)]
pub struct ScriptRun {
    /// Default (no code, no signal) when it was killed for a limit and its worker then went.
    pub exit: Exit,
    pub violation: Option<Violation>,
    pub peak_mb: u64,
    pub duration_s: f64,
    /// The end of what it printed (stdout and stderr together).
    pub output_tail: String,
    /// The directory it ran in (gone by now), for callers that take it out of the output.
    pub workdir: PathBuf,
}

/// Why a script run has no result.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ScriptFailure {
    /// reprolab could not run it (no worker, no work directory): the machinery, not the script.
    #[error("{0}")]
    Infra(String),
    /// Its worker died while it ran, on every try: the script's doing (it may kill its parent).
    #[error("the worker running this script died during it, on each of {tries} tries: {message}")]
    KilledWorker { tries: usize, message: String },
}

enum Queued {
    Eval {
        job: Job,
        reply: oneshot::Sender<Finished>,
    },
    Script {
        job: ScriptJob,
        reply: oneshot::Sender<Result<ScriptRun, ScriptFailure>>,
    },
}

pub struct WorkerPool {
    /// `None` once stopped.
    tx: std::sync::Mutex<Option<mpsc::UnboundedSender<Queued>>>,
    /// The slots started so far (at most `size`), each serving the queue with one worker.
    slots: std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>,
    size: usize,
    /// What every slot shares.
    shared: Serve,
}

/// Queued tasks no slot has taken yet, and slots waiting for one: a task that finds fewer
/// idle slots than tasks waiting starts a slot (while there are fewer than the pool's size).
#[derive(Default)]
struct Demand {
    waiting: usize,
    idle: usize,
}

impl WorkerPool {
    /// A pool of at most `size` workers, started as tasks come (see the module's comment);
    /// evaluations run in fresh directories under `scratch`.
    pub fn start(env: PythonEnv, size: usize, scratch: PathBuf) -> WorkerPool {
        let (tx, rx) = mpsc::unbounded_channel::<Queued>();
        WorkerPool {
            tx: std::sync::Mutex::new(Some(tx)),
            slots: std::sync::Mutex::new(Vec::new()),
            size: size.max(1),
            shared: Serve {
                env,
                rx: Arc::new(Mutex::new(rx)),
                scratch,
                counter: Arc::new(AtomicU64::new(0)),
                failures: Arc::new(AtomicU64::new(0)),
                demand: Arc::new(std::sync::Mutex::new(Demand::default())),
            },
        }
    }

    pub fn size(&self) -> usize {
        self.size
    }

    /// How many workers have been started (slots, each keeping one worker warm).
    pub fn started(&self) -> usize {
        self.slots.lock().unwrap().len()
    }

    /// How many tries failed because their worker broke (it died, hung or refused the request,
    /// e.g. a Keras request for the other backend) and was replaced. A worker replaced because
    /// it holds the other Keras backend, before the request is sent, is not a failure.
    pub fn worker_failures(&self) -> u64 {
        self.shared.failures.load(Ordering::Relaxed)
    }

    /// Queue a task, starting a slot for it when every started one is busy.
    fn send(&self, queued: Queued) -> bool {
        let tx = self.tx.lock().unwrap();
        let Some(tx) = tx.as_ref() else {
            return false;
        };
        let mut demand = self.shared.demand.lock().unwrap();
        if tx.send(queued).is_err() {
            return false;
        }
        demand.waiting += 1;
        let mut slots = self.slots.lock().unwrap();
        if demand.waiting > demand.idle && slots.len() < self.size {
            let (slot, ctx) = (slots.len(), self.shared.clone());
            slots.push(tokio::spawn(async move { serve(slot, ctx).await }));
        }
        true
    }

    /// Run one evaluation (queued behind others when all workers are busy).
    pub async fn eval(&self, job: Job) -> Finished {
        let (reply, rx) = oneshot::channel();
        if !self.send(Queued::Eval { job, reply }) {
            return infra("the worker pool has shut down".into());
        }
        rx.await
            .unwrap_or_else(|_| infra("a worker task ended without an answer".into()))
    }

    /// Run a reproduction script once (queued like evaluations). A worker that dies or hangs is
    /// replaced and the run retried once, as for evaluations.
    pub async fn run_script(&self, job: ScriptJob) -> Result<ScriptRun, ScriptFailure> {
        let (reply, rx) = oneshot::channel();
        if !self.send(Queued::Script { job, reply }) {
            return Err(ScriptFailure::Infra("the worker pool has shut down".into()));
        }
        rx.await.unwrap_or_else(|_| {
            Err(ScriptFailure::Infra(
                "a worker task ended without an answer".into(),
            ))
        })
    }

    /// Stop all workers cleanly (after the evaluations already queued); later evaluations get
    /// an `infra` outcome.
    pub async fn stop(&self) {
        drop(self.tx.lock().unwrap().take());
        let slots = std::mem::take(&mut *self.slots.lock().unwrap());
        for t in slots {
            let _ = t.await;
        }
    }
}

/// What each worker's task shares with the pool.
#[derive(Clone)]
struct Serve {
    env: PythonEnv,
    rx: Arc<Mutex<mpsc::UnboundedReceiver<Queued>>>,
    scratch: PathBuf,
    counter: Arc<AtomicU64>,
    /// Tries that failed because the worker broke (died, hung, refused the request).
    failures: Arc<AtomicU64>,
    demand: Arc<std::sync::Mutex<Demand>>,
}

async fn serve(slot: usize, ctx: Serve) {
    let Serve {
        env,
        rx,
        scratch,
        counter,
        failures,
        demand,
    } = ctx;
    // Each worker's own directory: the only place its evaluations can write.
    let scratch = scratch.join(format!("w{slot}"));
    let mut worker: Option<Worker> = match Worker::spawn(&env, &scratch).await {
        Ok(w) => Some(w),
        Err(e) => {
            tracing::warn!(slot, "worker failed to start: {e}");
            None
        }
    };
    loop {
        demand.lock().unwrap().idle += 1;
        let next = rx.lock().await.recv().await;
        {
            let mut d = demand.lock().unwrap();
            d.idle -= 1;
            d.waiting -= usize::from(next.is_some());
        }
        let Some(queued) = next else {
            break;
        };
        let n = counter.fetch_add(1, Ordering::Relaxed);
        let id = format!("e{n}");
        let workdir = scratch.join(&id);
        // A caller that went away cancels its run: skipped while queued, its child ended if it
        // started (`closed()`), so that the worker is free for what is still wanted.
        let (task, mut reply) = queued.split();
        if reply.is_closed() {
            continue;
        }
        let result = run_with_retry(
            &env,
            &scratch,
            &mut worker,
            &task,
            &id,
            &failures,
            reply.closed(),
        )
        .await;
        reply.send(result, &workdir);
        let _ = std::fs::remove_dir_all(&workdir);
    }
    if let Some(w) = worker {
        w.shutdown().await;
    }
}

/// What a worker is asked to do.
enum Task {
    Eval(Job),
    Script(ScriptJob),
}

/// Who waits for a task's answer.
enum Reply {
    Eval(oneshot::Sender<Finished>),
    /// With the job's `keep`, where the run's files go.
    Script(oneshot::Sender<Result<ScriptRun, ScriptFailure>>, PathBuf),
}

impl Queued {
    fn split(self) -> (Task, Reply) {
        match self {
            Queued::Eval { job, reply } => (Task::Eval(job), Reply::Eval(reply)),
            Queued::Script { job, reply } => {
                let keep = job.keep.clone();
                (Task::Script(job), Reply::Script(reply, keep))
            }
        }
    }
}

impl Reply {
    fn is_closed(&self) -> bool {
        match self {
            Reply::Eval(r) => r.is_closed(),
            Reply::Script(r, _) => r.is_closed(),
        }
    }

    /// Resolves when the caller has gone.
    async fn closed(&mut self) {
        match self {
            Reply::Eval(r) => r.closed().await,
            Reply::Script(r, _) => r.closed().await,
        }
    }

    /// Answer with what the task's run came to (nothing when it was cancelled); a script run's
    /// files go to `keep` before `workdir` is removed.
    fn send(self, result: Result<Done, Failed>, workdir: &Path) {
        if matches!(result, Err(Failed::Cancelled)) {
            return;
        }
        match self {
            Reply::Eval(r) => {
                let _ = r.send(match result {
                    Ok(Done::Eval(f)) => f,
                    Err(Failed::KilledWorker(tries, message)) => killed_its_worker(tries, &message),
                    Err(Failed::Infra(message)) => infra(message),
                    Ok(Done::Script(_)) | Err(Failed::Cancelled) => {
                        unreachable!("an evaluation answers with its result")
                    }
                });
            }
            Reply::Script(r, keep) => {
                let _ = r.send(match result {
                    Ok(Done::Script(forked)) => Ok(script_run(forked, workdir, &keep)),
                    Err(Failed::KilledWorker(tries, message)) => {
                        Err(ScriptFailure::KilledWorker { tries, message })
                    }
                    Err(Failed::Infra(message)) => Err(ScriptFailure::Infra(message)),
                    Ok(Done::Eval(_)) | Err(Failed::Cancelled) => {
                        unreachable!("a script run answers with its process")
                    }
                });
            }
        }
    }
}

enum Done {
    Eval(Finished),
    Script(Forked),
}

enum Failed {
    /// The worker died during the task on each of this many tries.
    KilledWorker(usize, String),
    Infra(String),
    /// The caller went away while it ran.
    Cancelled,
}

/// Where a script run's files go in its work directory.
const SCRIPT_FILE: &str = "reproduce.py";
const SCRIPT_OUT: &str = "observed";

/// Hand the files of a finished script run over to `keep` and read its output's end.
fn script_run(forked: Forked, workdir: &Path, keep: &Path) -> ScriptRun {
    if let Ok(entries) = std::fs::read_dir(workdir.join(SCRIPT_OUT)) {
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_file()) {
                let _ = std::fs::copy(entry.path(), keep.join(entry.file_name()));
            }
        }
    }
    ScriptRun {
        exit: forked.exit.unwrap_or_default(),
        violation: forked.violation,
        peak_mb: forked.peak_mb,
        duration_s: forked.elapsed.as_secs_f64(),
        output_tail: read_tail(&workdir.join("output.log"), OUTPUT_TAIL_BYTES),
        workdir: workdir.to_path_buf(),
    }
}

/// Prepare the work directory of a task (a script run's script and output directory).
fn prepare(task: &Task, workdir: &Path) -> std::io::Result<()> {
    let _ = std::fs::remove_dir_all(workdir);
    std::fs::create_dir_all(workdir)?;
    if let Task::Script(job) = task {
        std::fs::write(workdir.join(SCRIPT_FILE), &job.source)?;
        std::fs::create_dir(workdir.join(SCRIPT_OUT))?;
    }
    Ok(())
}

async fn run_with_retry(
    env: &PythonEnv,
    scratch: &Path,
    worker: &mut Option<Worker>,
    task: &Task,
    id: &str,
    failures: &AtomicU64,
    cancel: impl Future<Output = ()>,
) -> Result<Done, Failed> {
    const TRIES: usize = 2;
    // The task's work directory, as its caller names it (`serve` clears it afterwards).
    let workdir = &scratch.join(id);
    tokio::pin!(cancel);
    let mut last_error = String::new();
    let mut died_during = 0;
    for _attempt in 0..TRIES {
        if let Err(e) = prepare(task, workdir) {
            return Err(Failed::Infra(format!(
                "cannot prepare {}: {e}",
                workdir.display()
            )));
        }
        if let (Task::Eval(job), Some(w)) = (task, worker.as_ref())
            && !w.can_run(job.framework, job.backend)
        {
            // Keras' backend is fixed at its import: a worker that holds the other one makes
            // way for a fresh one (a rare switch: one command rarely mixes backends).
            worker.take().unwrap().shutdown().await;
        }
        if !worker.as_mut().is_some_and(|w| w.alive()) {
            if let Some(mut dead) = worker.take() {
                dead.kill().await;
            }
            match Worker::spawn(env, scratch).await {
                Ok(w) => *worker = Some(w),
                Err(e) => return Err(Failed::Infra(reprolab_core::chain(&e))),
            }
        }
        let w = worker.as_mut().unwrap();
        let result = match task {
            Task::Eval(job) => {
                let req = Request {
                    id,
                    subject_dir: &job.subject_dir,
                    entry: &job.entry,
                    framework: job.framework,
                    backend: job.backend,
                    config: &job.config,
                    seed: job.seed,
                    mode: job.mode,
                    limits: &job.limits,
                    prune: job.prune.as_ref(),
                };
                w.run(&req, workdir, cancel.as_mut()).await.map(Done::Eval)
            }
            Task::Script(job) => w
                .run_script(
                    id,
                    &workdir.join(SCRIPT_FILE),
                    job.seed,
                    &workdir.join(SCRIPT_OUT),
                    &job.paths,
                    &job.limits,
                    workdir,
                    cancel.as_mut(),
                )
                .await
                .map(Done::Script),
        };
        match result {
            Ok(done) => {
                if !w.alive() {
                    *worker = None;
                }
                return Ok(done);
            }
            Err(ForkError::Cancelled) => {
                if !w.alive() {
                    *worker = None;
                }
                return Err(Failed::Cancelled);
            }
            Err(e) => {
                tracing::warn!("worker failed, replacing it: {e}");
                failures.fetch_add(1, Ordering::Relaxed);
                died_during += usize::from(matches!(e, ForkError::DiedDuring(_)));
                last_error = e.to_string();
                if let Some(mut dead) = worker.take() {
                    dead.kill().await;
                }
            }
        }
    }
    if died_during == TRIES {
        return Err(Failed::KilledWorker(TRIES, last_error));
    }
    Err(Failed::Infra(last_error))
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use reprolab_core::manifest::{Config, Subject};
    use reprolab_store::Store;
    use serde_json::json;

    use crate::env::{EnvOptions, PythonEnv, ensure, ensure_tensorflow};
    use crate::{Evaluator, LocalExecutor, Mode};

    /// The managed environment with Keras on both backends, or why there is none here.
    fn keras_on_both_backends() -> Result<PythonEnv, String> {
        let env = ensure(&EnvOptions::default(), &|_| {})
            .map_err(|e| format!("no managed environment: {e}"))?;
        ensure_tensorflow(&env, &|_| {})
            .map_err(|e| format!("tensorflow-cpu cannot be installed: {e}"))?;
        for backend in ["torch", "tensorflow"] {
            let out = std::process::Command::new(&env.python)
                .args(["-c", "import keras; print(keras.backend.backend())"])
                .env("KERAS_BACKEND", backend)
                .output()
                .map_err(|e| format!("cannot run {}: {e}", env.python.display()))?;
            if !out.status.success() {
                return Err(format!("keras does not import on {backend}"));
            }
        }
        Ok(env)
    }

    fn subject(name: &str) -> Subject {
        Subject::load(
            &Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../subjects")
                .join(name),
        )
        .unwrap()
    }

    /// One warm worker, one Evaluator: a torch-backend Keras subject, then its TensorFlow twin,
    /// then the torch one again each train on their own backend (the trace's `model` record
    /// says which Keras trained), the pool replacing the worker before each switch rather than
    /// after the worker refused a request for the other backend; the two subjects never share a
    /// cache key, and a repeated request is answered by the store.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn one_pool_switches_its_worker_between_keras_backends() {
        let env = match keras_on_both_backends() {
            Ok(env) => env,
            Err(reason) => {
                eprintln!("SKIPPED one_pool_switches_its_worker_between_keras_backends: {reason}");
                return;
            }
        };
        let dir = tempfile::tempdir().unwrap();
        let executor = Arc::new(LocalExecutor::new(env.clone(), 1).unwrap());
        let store = Store::open(&dir.path().join("s.db")).unwrap();
        let ev = Evaluator::with_executor(executor.clone(), env, store, true);
        let (torch, tf) = (subject("digits-mlp-keras"), subject("digits-mlp-keras-tf"));
        let short = |s: &Subject| {
            let mut c: Config = s.config.clone();
            c.0.insert("epochs".into(), json!(1));
            c
        };
        // (subject, seed, backend Keras must report)
        let plan = [
            (&torch, 0, "torch"),
            (&tf, 0, "tensorflow"),
            (&torch, 1, "torch"),
        ];
        let mut keys = Vec::new();
        for (s, seed, backend) in plan {
            let e = ev
                .run(s, &short(s), &[seed], Mode::Trace, &mut |_| {})
                .await
                .unwrap()
                .remove(0);
            let r = &e.record;
            assert!(
                r.outcome.is_ok(),
                "{}: {:?}\n{}",
                s.name,
                r.outcome,
                r.output_tail
            );
            assert!(!e.cached);
            assert_eq!(r.epochs.len(), 1, "{}", s.name);
            assert_eq!(r.epochs[0]["model"]["backend"], backend, "{}", s.name);
            keys.push(r.key.clone());
        }
        assert_eq!(
            executor.worker_failures(),
            0,
            "each switch replaced the worker before sending it the request"
        );
        assert_ne!(
            keys[0], keys[1],
            "the backends never share a cached training"
        );
        assert_ne!(keys[1], keys[2]);
        // The same requests again: from the store, no training.
        for (i, (s, seed, _)) in plan.into_iter().enumerate() {
            let e = ev
                .run(s, &short(s), &[seed], Mode::Trace, &mut |_| {})
                .await
                .unwrap()
                .remove(0);
            assert!(e.cached && e.record.key == keys[i], "{}", s.name);
        }
        ev.shutdown().await;
    }
}
