//! Running pytest for one sample, in the sandbox of reprolab-exec (scrubbed environment, no
//! network, own process group, watchdog on time, private memory and output):
//!
//! * [`WarmPool`]: long-lived `reprolab.codegen_runner` workers that imported numpy,
//!   scikit-learn, torch and pytest once; each sample is a forked child running `pytest.main`.
//! * [`FreshRunner`]: one fresh `python -m pytest` process per sample, the way most harnesses
//!   work; the baseline of `codegen bench`.
//! * [`AstHelper`]: a light runner (no heavy imports) that answers batched `ast.parse` and
//!   definition-locating requests for code extraction and the repository patcher.
//!
//! Both test backends load `reprolab.codegen_plugin`, so they produce the same per-test record.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use reprolab_core::manifest::Limits;
use reprolab_exec::pool::ScriptFailure;
use reprolab_exec::proctree::Tree;
use reprolab_exec::ray::{RayExecutor, TestJob};
use reprolab_exec::result::{last_bytes, read_tail};
use reprolab_exec::sandbox;
use reprolab_exec::supervise::{Violation, supervise};
use reprolab_exec::worker::{ForkError, Worker, WorkerError};
use reprolab_exec::{Executor, PythonEnv};
use serde_json::{Value, json};
use tokio::sync::{Mutex, Semaphore, mpsc};

use crate::outcome::Ending;
use crate::patch::Located;

/// The module of the warm runner.
const RUNNER: &str = "reprolab.codegen_runner";
/// How much of the end of a test run's output is kept.
pub const OUTPUT_TAIL_BYTES: u64 = 2048;
/// Arguments every test run gets: quiet, no output capture (so that what tests print reaches
/// the watchdog's output cap), no `.pytest_cache` written into the sample's directory.
pub const BASE_ARGS: &[&str] = &["-q", "-s", "-p", "no:cacheprovider"];
/// How long a helper request (parse, locate) may take.
const HELPER_TIMEOUT: Duration = Duration::from_secs(120);
/// How many sources go into one helper request.
const HELPER_BATCH: usize = 256;

/// One test run.
#[derive(Debug, Clone)]
pub struct TestRequest {
    /// Unique among concurrent runs.
    pub id: String,
    /// Holds `output.log` and `result.json`.
    pub workdir: PathBuf,
    /// pytest runs here (the sample's files or repository copy).
    pub cwd: PathBuf,
    /// pytest arguments after [`BASE_ARGS`]: `--rootdir`, test files or node ids.
    pub args: Vec<String>,
    /// Files to compile before collection (the candidate), relative to `cwd`.
    pub check: Vec<String>,
    pub limits: Limits,
    /// Processes or threads the run may add (RLIMIT_NPROC in the warm child); 0 for no bound.
    pub max_procs: u32,
}

impl TestRequest {
    fn pytest_args(&self) -> Vec<String> {
        let mut args: Vec<String> = BASE_ARGS.iter().map(|s| s.to_string()).collect();
        args.extend(self.args.iter().cloned());
        args
    }

    fn result_path(&self) -> PathBuf {
        self.workdir.join("result.json")
    }

    fn output_path(&self) -> PathBuf {
        self.workdir.join("output.log")
    }
}

/// What a test run left: how it ended, the plugin's record, the end of its output.
#[derive(Debug, Clone)]
pub struct TestRun {
    pub ending: Ending,
    pub record: Option<Value>,
    pub peak_mb: u64,
    pub elapsed: Duration,
    /// Time spent waiting for a runner to be ready (a warm runner still importing torch):
    /// not the sample's cost.
    pub waited: Duration,
    pub output_tail: String,
}

/// The run of `req` that ended so, after `waited` for a runner.
fn finish(
    req: &TestRequest,
    ending: Ending,
    peak_mb: u64,
    elapsed: Duration,
    waited: Duration,
) -> TestRun {
    let record = std::fs::read_to_string(req.result_path())
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok());
    TestRun {
        ending,
        record,
        peak_mb,
        elapsed,
        waited,
        output_tail: read_tail(&req.output_path(), OUTPUT_TAIL_BYTES),
    }
}

fn ending_of(violation: Option<Violation>, code: Option<i32>, signal: Option<i32>) -> Ending {
    match violation {
        Some(Violation::Timeout) => Ending::Timeout,
        Some(Violation::Memory) => Ending::Memory,
        Some(Violation::Output) => Ending::Output,
        Some(Violation::Disk) => Ending::Disk,
        None => Ending::Exited { code, signal },
    }
}

/// Why a runner gave no verdict: the machinery failed, not the sample's code.
#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    /// The warm pool was shut down while a job waited for a runner.
    #[error("the warm runner pool has shut down")]
    PoolClosed,
    /// The fresh runner's slots were closed.
    #[error("the pytest runner has shut down")]
    SlotsClosed,
    /// A warm runner could not be started.
    #[error("a warm pytest runner did not start")]
    NotStarted(#[source] WorkerError),
    /// The runner broke under the sample on every try.
    #[error(transparent)]
    Broken(ForkError),
    /// The sample's output file could not be created.
    #[error("cannot create the sample's output file {}", path.display())]
    Output {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A directory of the sample cannot be put on PYTHONPATH.
    #[error("cannot set PYTHONPATH for the sample")]
    PythonPath(#[source] std::env::JoinPathsError),
    /// The interpreter could not be started.
    #[error("cannot start {}", python.display())]
    Start {
        python: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The `ast` helper could not be started or did not answer.
    #[error("the Python helper failed")]
    Helper(#[source] WorkerError),
    /// The Ray cluster could not run the sample (a lost driver or node).
    #[error("on Ray: {0}")]
    Ray(String),
    /// The `ast` helper's answer is not what was asked for.
    #[error("the Python helper's answer is malformed: {0}")]
    HelperAnswer(String),
}

/// Where the tests run.
pub enum Backend {
    Warm(Arc<WarmPool>),
    Fresh(FreshRunner),
    /// The slots of a Ray cluster (`--backend ray`), each with a warm runner of its own.
    Ray(Arc<RayExecutor>),
}

impl Backend {
    /// Run one sample's tests. `Err` is an infrastructure failure (no verdict on the code).
    pub async fn run(&self, req: &TestRequest) -> Result<TestRun, RunnerError> {
        match self {
            Backend::Warm(pool) => pool.run(req).await,
            Backend::Fresh(fresh) => fresh.run(req).await,
            Backend::Ray(ray) => run_on_ray(ray, req).await,
        }
    }

    pub async fn shutdown(&self) {
        match self {
            Backend::Warm(pool) => pool.shutdown().await,
            Backend::Ray(ray) => ray.shutdown().await,
            Backend::Fresh(_) => {}
        }
    }

    /// Start-up time of the warm workers (their imports), for the benchmark.
    pub fn import_times(&self) -> Vec<f64> {
        match self {
            Backend::Warm(pool) => pool
                .import_times
                .lock()
                .map(|v| v.clone())
                .unwrap_or_default(),
            Backend::Fresh(_) | Backend::Ray(_) => Vec::new(),
        }
    }
}

/// One sample's tests in a Ray slot: the same pytest arguments, plugin and limits as a local
/// warm runner's.
async fn run_on_ray(ray: &RayExecutor, req: &TestRequest) -> Result<TestRun, RunnerError> {
    let args = req.pytest_args();
    let job = TestJob {
        tree: &req.cwd,
        args: &args,
        check: &req.check,
        limits: req.limits,
        max_procs: req.max_procs,
    };
    match ray.run_test(&job).await {
        Ok(ended) => Ok(TestRun {
            ending: ending_of(ended.violation, ended.exit.code, ended.exit.signal),
            record: ended.result.and_then(|t| serde_json::from_str(&t).ok()),
            peak_mb: ended.peak_mb,
            elapsed: Duration::from_secs_f64(ended.elapsed_s.max(0.0)),
            waited: Duration::from_secs_f64(ended.waited_s.max(0.0)),
            output_tail: last_bytes(&ended.output, OUTPUT_TAIL_BYTES),
        }),
        // As for a local runner: a sample that killed its runner on every try failed.
        Err(ScriptFailure::KilledWorker { .. }) => Ok(finish(
            req,
            Ending::RunnerKilled,
            0,
            Duration::ZERO,
            Duration::ZERO,
        )),
        Err(ScriptFailure::Infra(message)) => Err(RunnerError::Ray(message)),
    }
}

type Ready = Result<Worker, WorkerError>;

/// Warm runners handed out through a channel: a job takes a ready worker, runs its sample on
/// it and gives it back; a worker that died is replaced in the background, so the pool keeps its
/// size without a job ever waiting on a start-up it did not need.
pub struct WarmPool {
    env: PythonEnv,
    /// Where samples' work directories are: the only place the runners can write.
    scratch: PathBuf,
    tx: mpsc::UnboundedSender<Ready>,
    rx: Mutex<mpsc::UnboundedReceiver<Ready>>,
    size: usize,
    import_times: std::sync::Mutex<Vec<f64>>,
}

impl WarmPool {
    /// Start `size` workers now (their imports overlap with whatever the caller does next).
    pub fn start(env: PythonEnv, size: usize, scratch: PathBuf) -> Arc<WarmPool> {
        let (tx, rx) = mpsc::unbounded_channel();
        let pool = Arc::new(WarmPool {
            env,
            scratch,
            tx,
            rx: Mutex::new(rx),
            size: size.max(1),
            import_times: std::sync::Mutex::new(Vec::new()),
        });
        for _ in 0..pool.size {
            pool.replace();
        }
        pool
    }

    pub fn size(&self) -> usize {
        self.size
    }

    /// Start one worker in the background and put it into the channel when it is ready.
    fn replace(self: &Arc<Self>) {
        let pool = self.clone();
        tokio::spawn(async move {
            let w = Worker::spawn_module(&pool.env, &[RUNNER], &pool.scratch).await;
            if let Ok(w) = &w
                && let Ok(mut t) = pool.import_times.lock()
            {
                t.push(w.import_s);
            }
            let _ = pool.tx.send(w);
        });
    }

    async fn take(&self) -> Result<Worker, RunnerError> {
        match self.rx.lock().await.recv().await {
            Some(w) => w.map_err(RunnerError::NotStarted),
            None => Err(RunnerError::PoolClosed),
        }
    }

    async fn run(self: &Arc<Self>, req: &TestRequest) -> Result<TestRun, RunnerError> {
        let msg = json!({
            "op": "test", "id": req.id, "workdir": req.workdir, "cwd": req.cwd,
            "args": req.pytest_args(), "check": req.check,
            "memory_mb": req.limits.memory_mb, "max_procs": req.max_procs,
        });
        const TRIES: u32 = 2;
        let mut last_error = None;
        let mut waited = Duration::ZERO;
        let mut died_during = 0;
        for _attempt in 0..TRIES {
            let t = Instant::now();
            let taken = self.take().await;
            waited += t.elapsed();
            let mut worker = match taken {
                Ok(w) => w,
                Err(e) => {
                    // Keep the pool's size: try again in the background for the next job.
                    self.replace();
                    return Err(e);
                }
            };
            let _ = std::fs::remove_file(req.result_path());
            let forked = worker
                .run_forked(&msg, &req.id, &req.limits, &req.output_path())
                .await;
            match forked {
                Ok(f) => {
                    if f.exit.is_some() && worker.alive() {
                        let _ = self.tx.send(Ok(worker));
                    } else {
                        worker.kill().await;
                        self.replace();
                    }
                    let (code, signal) = f.exit.map_or((None, None), |e| (e.code, e.signal));
                    let ending = ending_of(f.violation, code, signal);
                    return Ok(finish(req, ending, f.peak_mb, f.elapsed, waited));
                }
                Err(e) => {
                    tracing::warn!("a warm pytest runner failed, replacing it: {e}");
                    worker.kill().await;
                    self.replace();
                    died_during += u32::from(matches!(e, ForkError::DiedDuring(_)));
                    last_error = Some(e);
                }
            }
        }
        if died_during == TRIES {
            // The runner died under this sample on every try: the sample's code killed it (a
            // generation may signal its parent). That is a failed sample, counted in pass@k.
            let ending = Ending::RunnerKilled;
            return Ok(finish(req, ending, 0, Duration::ZERO, waited));
        }
        Err(RunnerError::Broken(
            last_error.expect("every try failed with an error"),
        ))
    }

    /// Stop every worker (waiting a little for those still starting).
    pub async fn shutdown(&self) {
        let mut rx = self.rx.lock().await;
        for _ in 0..self.size {
            match tokio::time::timeout(Duration::from_secs(10), rx.recv()).await {
                Ok(Some(Ok(w))) => w.shutdown().await,
                Ok(Some(Err(_))) => {}
                _ => break,
            }
        }
        rx.close();
    }
}

/// One fresh `python -m pytest` per sample (the baseline): pays the interpreter's and torch's
/// start-up every time. In this mode the memory bound covers the whole interpreter (about
/// 300 MB with torch imported), not only what the tests add.
pub struct FreshRunner {
    env: PythonEnv,
    slots: Semaphore,
}

impl FreshRunner {
    pub fn new(env: PythonEnv, parallel: usize) -> FreshRunner {
        FreshRunner {
            env,
            slots: Semaphore::new(parallel.max(1)),
        }
    }

    async fn run(&self, req: &TestRequest) -> Result<TestRun, RunnerError> {
        let t = Instant::now();
        let _slot = self
            .slots
            .acquire()
            .await
            .map_err(|_| RunnerError::SlotsClosed)?;
        let waited = t.elapsed();
        let _ = std::fs::remove_file(req.result_path());
        let output = req.output_path();
        let (out, err) = std::fs::File::create(&output)
            .and_then(|f| Ok((f.try_clone()?, f)))
            .map_err(|source| RunnerError::Output {
                path: output.clone(),
                source,
            })?;
        let mut argv: Vec<OsString> =
            vec![self.env.python.clone().into(), "-m".into(), "pytest".into()];
        argv.extend(req.pytest_args().into_iter().map(OsString::from));
        argv.extend(["-p", "reprolab.codegen_plugin", "--reprolab-result"].map(OsString::from));
        argv.push(req.result_path().into());
        for f in &req.check {
            argv.push("--reprolab-check".into());
            argv.push(f.into());
        }
        sandbox::warn_gaps_once();
        let argv = sandbox::confine(&self.env.python, &[&req.workdir], &argv);
        let (program, args) = sandbox::wrap(&argv);
        let mut cmd = tokio::process::Command::new(program);
        cmd.args(args);
        sandbox::apply_env(&mut cmd, None);
        sandbox::contain(&mut cmd);
        let mut pythonpath = vec![req.cwd.clone()];
        pythonpath.extend(self.env.pythonpath.clone());
        cmd.env(
            "PYTHONPATH",
            std::env::join_paths(pythonpath).map_err(RunnerError::PythonPath)?,
        )
        .env("TMPDIR", &req.workdir)
        .current_dir(&req.cwd)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err);
        let mut child = cmd.spawn().map_err(|source| RunnerError::Start {
            python: self.env.python.clone(),
            source,
        })?;
        let tree = Tree::whole(child.id().unwrap_or(0) as i32);
        let sup = supervise(
            tree,
            &req.limits,
            &output,
            child.wait(),
            Duration::from_secs(10),
        )
        .await;
        let _ = tokio::task::spawn_blocking(move || tree.kill()).await;
        use std::os::unix::process::ExitStatusExt;
        let (code, signal) = match sup.done {
            Some(Ok(status)) => (status.code(), status.signal()),
            _ => (None, None),
        };
        let ending = ending_of(sup.violation, code, signal);
        Ok(finish(req, ending, sup.peak_mb, sup.elapsed, waited))
    }
}

/// The light runner for `ast` questions (code extraction, the repository patcher).
pub struct AstHelper {
    env: PythonEnv,
    /// The helper runs no user code, but is confined like every runner.
    scratch: PathBuf,
    worker: Mutex<Option<Worker>>,
    counter: std::sync::atomic::AtomicU64,
}

impl AstHelper {
    pub fn new(env: PythonEnv, scratch: PathBuf) -> AstHelper {
        AstHelper {
            env,
            scratch,
            worker: Mutex::new(None),
            counter: Default::default(),
        }
    }

    /// Send one request (starting the helper if needed, and once more if it died) and return
    /// the reply event.
    async fn ask(&self, op: &str, body: Value, reply: &str) -> Result<Value, RunnerError> {
        let mut guard = self.worker.lock().await;
        let mut last = None;
        for _ in 0..2 {
            if guard.as_mut().is_none_or(|w| !w.alive()) {
                *guard = Some(
                    Worker::spawn_module(&self.env, &[RUNNER, "--light"], &self.scratch)
                        .await
                        .map_err(RunnerError::Helper)?,
                );
            }
            let n = self
                .counter
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let id = format!("{op}{n}");
            let mut msg = body.clone();
            msg["op"] = json!(op);
            msg["id"] = json!(id);
            let w = guard.as_mut().expect("started above");
            match w.ask(&msg, &id, reply, HELPER_TIMEOUT).await {
                Ok(v) => return Ok(v),
                Err(e) => {
                    w.kill().await;
                    *guard = None;
                    last = Some(e);
                }
            }
        }
        Err(RunnerError::Helper(last.expect("both tries failed")))
    }

    /// Whether each source parses (`ast.parse`), with the error of those that do not.
    pub async fn parse(
        &self,
        sources: &[String],
    ) -> Result<Vec<(bool, Option<String>)>, RunnerError> {
        let mut out = Vec::with_capacity(sources.len());
        for chunk in sources.chunks(HELPER_BATCH) {
            let v = self
                .ask("parse", json!({ "sources": chunk }), "parsed")
                .await?;
            let ok = v["ok"].as_array().cloned().unwrap_or_default();
            let errors = v["errors"].as_array().cloned().unwrap_or_default();
            if ok.len() != chunk.len() {
                return Err(RunnerError::HelperAnswer(format!(
                    "{} parse results for {} sources",
                    ok.len(),
                    chunk.len()
                )));
            }
            for (i, o) in ok.iter().enumerate() {
                out.push((
                    o.as_bool().unwrap_or(false),
                    errors.get(i).and_then(|e| e.as_str()).map(String::from),
                ));
            }
        }
        Ok(out)
    }

    /// Top-level statements and the methods named `function` of each `(source, function)`.
    pub async fn locate(&self, items: &[(String, String)]) -> Result<Vec<Located>, RunnerError> {
        let mut out = Vec::with_capacity(items.len());
        for chunk in items.chunks(HELPER_BATCH) {
            let body: Vec<Value> = chunk
                .iter()
                .map(|(source, function)| json!({"source": source, "function": function}))
                .collect();
            let v = self
                .ask("locate", json!({ "items": body }), "located")
                .await?;
            let results: Vec<Located> = serde_json::from_value(v["results"].clone())
                .map_err(|e| RunnerError::HelperAnswer(format!("locate: {e}")))?;
            if results.len() != chunk.len() {
                return Err(RunnerError::HelperAnswer(format!(
                    "{} locate results for {} items",
                    results.len(),
                    chunk.len()
                )));
            }
            out.extend(results);
        }
        Ok(out)
    }

    pub async fn shutdown(&self) {
        if let Some(w) = self.worker.lock().await.take() {
            w.shutdown().await;
        }
    }
}

/// Elapsed seconds since `t`.
pub fn secs(t: Instant) -> f64 {
    t.elapsed().as_secs_f64()
}

/// `path` relative to `base` as a string (for pytest arguments), or the path itself.
pub fn rel(path: &Path, base: &Path) -> String {
    path.strip_prefix(base)
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned()
}
