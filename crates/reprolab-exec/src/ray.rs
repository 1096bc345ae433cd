//! The Ray backend (`--backend ray`): evaluations run on a Ray cluster, behind the same
//! [`Executor`] interface as the local pool, so the evaluation cache, the store and every
//! outcome work unchanged (the [`Evaluator`] in front writes each result as it arrives).
//!
//! Ray schedules; reprolab submits and records. A driver process (`python -m
//! reprolab.ray_driver`) joins the cluster (or starts a local head for the command's lifetime)
//! and places one evaluation slot per CPU: a Ray actor with a warm, sandboxed
//! `reprolab.worker` beside it that enforces the evaluation's limits on its node
//! (`reprolab.ray_slot`). The driver speaks JSON lines with this module, answering evaluations
//! out of order as they finish; what comes back (exit, broken limit, result file, epochs, end
//! of output) is turned into an outcome by the same [`interpret`] as a local evaluation.
//!
//! [`Evaluator`]: crate::Evaluator

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsString;
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use reprolab_core::manifest::{Entry, Limits};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin};
use tokio::sync::{mpsc, oneshot};

use crate::env::PythonEnv;
use crate::executor::{EvalRequest, Executor};
use crate::pool::{ScriptFailure, ScriptJob, ScriptRun};
use crate::result::{Exit, Finished, OUTPUT_TAIL_BYTES, interpret, last_bytes};
use crate::sandbox;
use crate::scratch::Scratch;
use crate::script::render;
use crate::supervise::Violation;
use crate::worker::{infra, keep_tail, killed_its_worker, tail_text};

/// Placeholders of a rendered command template that the slot replaces with node-local paths
/// (the same names in `reprolab.ray_slot`).
const MARK_PYTHON: &str = "__REPROLAB_PYTHON__";
const MARK_CONFIG: &str = "__REPROLAB_CONFIG__";
const MARK_RESULT: &str = "__REPROLAB_RESULT__";
const MARK_WORKDIR: &str = "__REPROLAB_WORKDIR__";
/// Where a codegen sample's files lie on the node.
const MARK_TREE: &str = "__REPROLAB_TREE__";

/// How long the driver may take to join the cluster and start every slot (each imports torch).
const STARTUP: Duration = Duration::from_secs(600);
/// How long a driver asked to stop may take to close the cluster connection (and a local head).
const SHUTDOWN: Duration = Duration::from_secs(60);

/// One pytest run of `reprolab codegen` for a slot's warm `reprolab.codegen_runner`.
#[derive(Debug, Clone)]
pub struct TestJob<'a> {
    /// The sample's files. They travel to the node by value (every sample differs), where a
    /// private copy is tested.
    pub tree: &'a Path,
    /// pytest's arguments; the tree's path in them becomes the copy's on the node.
    pub args: &'a [String],
    /// Files compiled before collection, relative to the tree.
    pub check: &'a [String],
    pub limits: Limits,
    /// Processes or threads the run may add (0: no bound).
    pub max_procs: u32,
}

/// How a slot's pytest run ended.
#[derive(Debug, Clone)]
pub struct TestEnded {
    pub exit: Exit,
    pub violation: Option<Violation>,
    pub peak_mb: u64,
    pub elapsed_s: f64,
    /// Time the slot first spent starting its runner (not the sample's cost).
    pub waited_s: f64,
    /// What reprolab's pytest plugin wrote (`result.json`), if anything.
    pub result: Option<String>,
    /// The end of what the run printed.
    pub output: String,
}

/// Where and how wide to run.
#[derive(Debug, Clone, Default)]
pub struct RayOptions {
    /// An existing cluster (`ray://…` or `HOST:PORT`); `None` starts a local head for the
    /// command's lifetime.
    pub address: Option<String>,
    /// Evaluation slots (one CPU each); `None`: every CPU of the cluster (of this machine for a
    /// local head).
    pub slots: Option<usize>,
}

#[derive(Debug, thiserror::Error)]
pub enum RayError {
    #[error("cannot create the Ray backend's scratch directory")]
    Scratch(#[source] std::io::Error),
    #[error("cannot start the Ray driver {python}")]
    Start {
        python: String,
        #[source]
        source: std::io::Error,
    },
    /// The driver said why it cannot run (no cluster at the address, a version mismatch).
    #[error("{0}")]
    Refused(String),
    #[error("the Ray driver exited before it was ready; its last output:\n{0}")]
    Died(String),
    #[error("the Ray cluster did not start its evaluation slots within {} s", .0.as_secs())]
    StartupTimeout(Duration),
}

/// What the driver reported when it became ready.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct Cluster {
    /// The address joined, or `local` for a head started for this command.
    pub address: String,
    pub slots: usize,
    /// Alive nodes in the cluster.
    pub nodes: usize,
    /// Slots per node (by Ray node id, shortened).
    pub slot_nodes: BTreeMap<String, usize>,
    /// Process ids of the slots (Ray actors), for the record and for fault tests.
    pub slot_pids: Vec<i32>,
    /// Seconds from the driver's start to ready (cluster join, slots' torch imports).
    pub start_s: f64,
}

/// Results the driver has not sent yet, by request id; `gone` once the driver has exited.
#[derive(Default)]
struct Pending {
    waiting: HashMap<String, oneshot::Sender<Value>>,
    gone: Option<String>,
}

pub struct RayExecutor {
    pub cluster: Cluster,
    /// Lines for the driver, written in order by [`write_lines`]; `None` once shut down. A
    /// channel rather than the pipe itself, so that a dropped evaluation can still say so.
    requests: Mutex<Option<mpsc::UnboundedSender<String>>>,
    writer: tokio::sync::Mutex<Option<tokio::task::JoinHandle<()>>>,
    child: tokio::sync::Mutex<Child>,
    pending: Arc<Mutex<Pending>>,
    next_id: AtomicU64,
    scratch: Scratch,
    env_id: String,
}

impl RayExecutor {
    /// Start the driver and wait until every slot is ready. Ray must be importable by `env`
    /// ([`crate::env::ensure_ray`] installs it).
    pub async fn start(env: &PythonEnv, opts: &RayOptions) -> Result<RayExecutor, RayError> {
        let scratch = Scratch::new("ray").map_err(RayError::Scratch)?;
        let mut cmd = tokio::process::Command::new(&env.python);
        cmd.args(driver_args(opts, &scratch));
        driver_env(&mut cmd, env);
        sandbox::contain(&mut cmd);
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().map_err(|source| RayError::Start {
            python: env.python.display().to_string(),
            source,
        })?;
        let stdin = child.stdin.take().expect("piped");
        let mut events = BufReader::new(child.stdout.take().expect("piped")).lines();
        let stderr_tail = keep_tail(child.stderr.take().expect("piped"), 40);
        let first = tokio::time::timeout(STARTUP, events.next_line()).await;
        let ready = match first {
            Err(_) => {
                let _ = child.kill().await;
                return Err(RayError::StartupTimeout(STARTUP));
            }
            Ok(Ok(Some(line))) => serde_json::from_str::<Value>(&line).unwrap_or(Value::Null),
            Ok(_) => Value::Null,
        };
        if ready["ev"] != "ready" {
            let _ = child.wait().await;
            return Err(match ready["message"].as_str() {
                Some(m) => RayError::Refused(with_auth_hint(m, &tail_text(&stderr_tail))),
                None => RayError::Died(tail_text(&stderr_tail)),
            });
        }
        let cluster: Cluster = serde_json::from_value(ready.clone())
            .map_err(|e| RayError::Refused(format!("the Ray driver's ready event {ready}: {e}")))?;
        let pending = Arc::new(Mutex::new(Pending::default()));
        let shared = pending.clone();
        tokio::spawn(async move {
            while let Ok(Some(line)) = events.next_line().await {
                let Ok(ev) = serde_json::from_str::<Value>(&line) else {
                    tracing::warn!("the Ray driver sent a line that is not JSON: {line}");
                    continue;
                };
                match (ev["ev"].as_str(), ev["id"].as_str()) {
                    (Some("done"), Some(id)) => {
                        if let Some(tx) = shared.lock().unwrap().waiting.remove(id) {
                            let _ = tx.send(ev);
                        }
                    }
                    _ => tracing::warn!("Ray driver: {ev}"),
                }
            }
            // Dropping the senders wakes every waiting evaluation with the reason.
            let mut p = shared.lock().unwrap();
            p.gone = Some(format!(
                "the Ray driver exited (a lost head or cluster?); its last output:\n{}",
                tail_text(&stderr_tail)
            ));
            p.waiting.clear();
        });
        tracing::info!(?cluster, "Ray backend ready");
        let (requests, lines) = mpsc::unbounded_channel();
        Ok(RayExecutor {
            cluster,
            requests: Mutex::new(Some(requests)),
            writer: tokio::sync::Mutex::new(Some(tokio::spawn(write_lines(stdin, lines)))),
            child: tokio::sync::Mutex::new(child),
            pending,
            next_id: AtomicU64::new(0),
            scratch,
            env_id: env.id.clone(),
        })
    }

    /// Why the driver cannot answer.
    fn gone(&self) -> String {
        let why = self.pending.lock().unwrap().gone.clone();
        why.unwrap_or_else(|| "the Ray driver stopped answering".into())
    }

    /// Queue one line for the driver; false once shut down.
    fn send(&self, msg: &Value) -> bool {
        match self.requests.lock().unwrap().as_ref() {
            Some(tx) => tx.send(format!("{msg}\n")).is_ok(),
            None => false,
        }
    }

    /// Send `msg` (given a fresh id) to the driver and wait for its `done` event; `Err` says
    /// why none will come. Dropping the future cancels the run: the driver drops it from its
    /// queue, or has its slot end it.
    async fn ask(&self, mut msg: Value) -> Result<Value, String> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed).to_string();
        msg["id"] = json!(id);
        let (tx, rx) = oneshot::channel();
        {
            let mut p = self.pending.lock().unwrap();
            if p.gone.is_some() {
                drop(p);
                return Err(self.gone());
            }
            p.waiting.insert(id.clone(), tx);
        }
        if !self.send(&msg) {
            self.pending.lock().unwrap().waiting.remove(&id);
            return Err(self.gone());
        }
        let mut asked = Asked {
            executor: self,
            id: Some(id),
        };
        let answer = rx.await.map_err(|_| self.gone());
        asked.id = None;
        answer
    }

    /// [`ask`](Self::ask) for a run in a slot's worker: the cluster's failure and a worker
    /// that died under the run on both tries (the run's own doing) as errors.
    async fn ask_worker(&self, msg: Value) -> Result<Value, ScriptFailure> {
        let ev = self.ask(msg).await.map_err(ScriptFailure::Infra)?;
        if let Some(message) = ev["infra"].as_str() {
            return Err(ScriptFailure::Infra(message.to_string()));
        }
        if let Some(message) = ev["died"].as_str() {
            return Err(ScriptFailure::KilledWorker {
                tries: 2,
                message: message.to_string(),
            });
        }
        Ok(ev)
    }

    /// Run a reproduction script in a slot's warm worker, as [`WorkerPool::run_script`] does
    /// locally: the files it recorded land in `job.keep`, its import directories travel by
    /// content. The slot runs this executor's environment, so `job` must be meant for it
    /// ([`RayExecutor::env_id`]).
    ///
    /// [`WorkerPool::run_script`]: crate::pool::WorkerPool::run_script
    pub async fn run_script(&self, job: &ScriptJob) -> Result<ScriptRun, ScriptFailure> {
        let msg = json!({
            "op": "script", "source": job.source, "seed": job.seed, "paths": job.paths,
            "limits": limits_json(&job.limits),
        });
        let ev = self.ask_worker(msg).await?;
        for (name, text) in ev["observed"].as_object().into_iter().flatten() {
            // A plain file name: what the slot sends cannot write outside `keep`.
            let plain = Path::new(name)
                .file_name()
                .is_some_and(|f| f == name.as_str());
            if let (true, Some(text)) = (plain, text.as_str()) {
                std::fs::write(job.keep.join(name), text).map_err(|e| {
                    ScriptFailure::Infra(format!("cannot write {name} of a Ray script run: {e}"))
                })?;
            }
        }
        Ok(ScriptRun {
            exit: exit_of(&ev),
            violation: violation_of(&ev),
            peak_mb: ev["peak_mb"].as_u64().unwrap_or(0),
            duration_s: ev["elapsed_s"].as_f64().unwrap_or(0.0),
            output_tail: last_bytes(ev["output"].as_str().unwrap_or(""), OUTPUT_TAIL_BYTES),
            workdir: ev["workdir"].as_str().unwrap_or_default().into(),
        })
    }

    /// Run one pytest of `reprolab codegen` in a slot's warm pytest runner, on a private copy of
    /// `job.tree` on the node.
    pub async fn run_test(&self, job: &TestJob<'_>) -> Result<TestEnded, ScriptFailure> {
        let tree = job.tree.to_string_lossy();
        let args: Vec<String> = job
            .args
            .iter()
            .map(|a| a.replace(&*tree, MARK_TREE))
            .collect();
        let msg = json!({
            "op": "test", "tree": job.tree, "args": args, "check": job.check,
            "limits": limits_json(&job.limits), "max_procs": job.max_procs,
        });
        let ev = self.ask_worker(msg).await?;
        Ok(TestEnded {
            exit: exit_of(&ev),
            violation: violation_of(&ev),
            peak_mb: ev["peak_mb"].as_u64().unwrap_or(0),
            elapsed_s: ev["elapsed_s"].as_f64().unwrap_or(0.0),
            waited_s: ev["waited_s"].as_f64().unwrap_or(0.0),
            result: ev["result"].as_str().map(str::to_string),
            output: ev["output"].as_str().unwrap_or_default().to_string(),
        })
    }

    /// The id of the environment the slots run (scripts for another one run elsewhere).
    pub fn env_id(&self) -> &str {
        &self.env_id
    }

    /// The outcome of what a slot sent back, decided as a local evaluation's is.
    fn finish(&self, ev: &Value, limits: &Limits) -> Finished {
        if let Some(message) = ev["infra"].as_str() {
            return infra(message.to_string());
        }
        if let Some(message) = ev["died"].as_str() {
            return killed_its_worker(2, message);
        }
        let workdir = match tempfile::tempdir_in(self.scratch.path()) {
            Ok(w) => w,
            Err(e) => return infra(format!("cannot create a work directory: {e}")),
        };
        for (field, file) in [
            ("result", "result.json"),
            ("epochs", "epochs.jsonl"),
            ("output", "output.log"),
        ] {
            if let Some(text) = ev[field].as_str()
                && let Err(e) = std::fs::write(workdir.path().join(file), text)
            {
                return infra(format!("cannot write {file} of a Ray evaluation: {e}"));
            }
        }
        let peak_mb = ev["peak_mb"].as_u64().unwrap_or(0);
        let (outcome, epochs, output_tail) = interpret(
            workdir.path(),
            exit_of(ev),
            violation_of(ev),
            peak_mb,
            limits,
        );
        Finished {
            outcome,
            epochs,
            output_tail,
            duration_s: ev["elapsed_s"].as_f64().unwrap_or(0.0),
        }
    }
}

#[async_trait]
impl Executor for RayExecutor {
    async fn run(&self, request: EvalRequest) -> Finished {
        // A command template is rendered here, so that its syntax has one implementation; the
        // paths only the node knows (its Python, the run's files) stay markers the slot fills.
        let (entry, command) = match &request.entry {
            Entry::Callable { file, function } => (Some(format!("{file}:{function}")), None),
            Entry::Command { template } => {
                let line = render(
                    template,
                    Path::new(MARK_PYTHON),
                    Path::new(MARK_CONFIG),
                    request.seed,
                    Path::new(MARK_RESULT),
                    Path::new(MARK_WORKDIR),
                );
                match line {
                    Ok(line) => (None, Some(line)),
                    Err(e) => return infra(format!("command template `{template}`: {e}")),
                }
            }
        };
        let msg = json!({
            "op": "eval", "subject_dir": request.subject_dir,
            "subject_hash": request.source_hash, "entry": entry,
            "command": command,
            "config": request.config, "seed": request.seed, "mode": request.mode,
            "framework": request.framework, "backend": request.backend,
            "prune": request.prune,
            "limits": limits_json(&request.limits),
        });
        match self.ask(msg).await {
            Ok(ev) => self.finish(&ev, &request.limits),
            Err(why) => infra(why),
        }
    }

    fn parallelism(&self) -> usize {
        self.cluster.slots
    }

    async fn shutdown(&self) {
        if let Some(requests) = self.requests.lock().unwrap().take() {
            let _ = requests.send("{\"op\":\"shutdown\"}\n".into());
        }
        // The writer ends with the channel, after the lines already queued, closing the pipe.
        if let Some(writer) = self.writer.lock().await.take() {
            let _ = writer.await;
        }
        let mut child = self.child.lock().await;
        if tokio::time::timeout(SHUTDOWN, child.wait()).await.is_err() {
            kill_tree(&mut child);
        }
    }
}

impl Drop for RayExecutor {
    fn drop(&mut self) {
        // A local head's processes share the driver's process group: none outlives reprolab.
        if let Ok(mut child) = self.child.try_lock()
            && matches!(child.try_wait(), Ok(None))
        {
            kill_tree(&mut child);
        }
    }
}

/// A run the driver was asked for and has not answered: dropped unanswered, it is cancelled.
struct Asked<'a> {
    executor: &'a RayExecutor,
    /// `None` once answered.
    id: Option<String>,
}

impl Drop for Asked<'_> {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            self.executor.pending.lock().unwrap().waiting.remove(&id);
            self.executor.send(&json!({"op": "cancel", "id": id}));
        }
    }
}

/// Write `lines` to the driver in order until the channel closes (then the pipe closes too)
/// or the driver stops reading.
async fn write_lines(mut stdin: ChildStdin, mut lines: mpsc::UnboundedReceiver<String>) {
    while let Some(line) = lines.recv().await {
        if stdin.write_all(line.as_bytes()).await.is_err() || stdin.flush().await.is_err() {
            break;
        }
    }
}

fn limits_json(limits: &Limits) -> Value {
    json!({"timeout_s": limits.timeout_s, "memory_mb": limits.memory_mb,
           "output_mb": limits.output_mb, "disk_mb": limits.disk_mb})
}

fn exit_of(ev: &Value) -> Exit {
    Exit {
        code: ev["exit_code"].as_i64().map(|c| c as i32),
        signal: ev["signal"].as_i64().map(|s| s as i32),
    }
}

fn violation_of(ev: &Value) -> Option<Violation> {
    match ev["violation"].as_str() {
        Some("timeout") => Some(Violation::Timeout),
        Some("memory") => Some(Violation::Memory),
        Some("output") => Some(Violation::Output),
        Some("disk") => Some(Violation::Disk),
        _ => None,
    }
}

/// `message`, and what to do when Ray's own log (`stderr`) says the cluster refused this
/// process's token: Ray itself only says that it failed to connect.
fn with_auth_hint(message: &str, stderr: &str) -> String {
    if !stderr.contains("InvalidAuthToken") {
        return message.to_string();
    }
    format!(
        "{message}\nthe cluster refused the authentication token (it has none, or another): \
         set RAY_AUTH_MODE=token and RAY_AUTH_TOKEN (or RAY_AUTH_TOKEN_PATH) to the cluster's \
         token, as for Ray's own commands"
    )
}

fn kill_tree(child: &mut Child) {
    if let Some(pid) = child.id() {
        sandbox::kill_group(pid as i32, libc::SIGKILL);
    }
    let _ = child.start_kill();
}

fn driver_args(opts: &RayOptions, scratch: &Scratch) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec!["-m".into(), "reprolab.ray_driver".into()];
    match &opts.address {
        Some(address) => args.extend(["--address".into(), address.into()]),
        None => {
            let cpus = opts.slots.unwrap_or_else(crate::default_workers);
            args.extend(["--num-cpus".into(), cpus.to_string().into()]);
            args.extend(["--temp-dir".into(), scratch.path().join("r").into()]);
        }
    }
    if let Some(n) = opts.slots {
        args.extend(["--slots".into(), n.to_string().into()]);
    }
    args.extend(["--env-spec".into(), sandbox::env_rules().to_string().into()]);
    args
}

/// The driver runs reprolab's code only (subject code runs in the slots' sandboxed workers), but
/// on a local head the cluster's processes inherit its environment: it gets the scrubbed one,
/// plus Ray's own settings (`RAY_*`, which may hold the cluster's token).
fn driver_env(cmd: &mut tokio::process::Command, env: &PythonEnv) {
    sandbox::apply_env(cmd, env.pythonpath.as_deref());
    cmd.envs(std::env::vars_os().filter(|(k, _)| k.to_string_lossy().starts_with("RAY_")));
    // Ray asks before it sends usage statistics; a batch tool must not wait for an answer.
    cmd.env("RAY_USAGE_STATS_ENABLED", "0");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_token_is_named_with_the_remedy() {
        let log = "gcs_client.cc:210: Failed to get cluster ID from GCS server: Unauthenticated: \
                   RPC error: InvalidAuthToken: Authentication token is missing or incorrect";
        let told = with_auth_hint("cannot connect to h:1: ConnectionError: Failed", log);
        assert!(told.starts_with("cannot connect to h:1") && told.contains("RAY_AUTH_TOKEN"));
        let other = with_auth_hint("cannot connect", "Connection refused");
        assert_eq!(other, "cannot connect");
    }

    #[test]
    fn a_local_head_gets_cpus_and_a_temp_dir_an_address_does_not() {
        let scratch = Scratch::new("ray-test").unwrap();
        let local = driver_args(
            &RayOptions {
                address: None,
                slots: Some(3),
            },
            &scratch,
        );
        let text: Vec<String> = local
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert!(
            text.windows(2).any(|w| w == ["--num-cpus", "3"]),
            "{text:?}"
        );
        assert!(text.iter().any(|a| a == "--temp-dir"));
        let remote = driver_args(
            &RayOptions {
                address: Some("10.0.0.1:6379".into()),
                slots: None,
            },
            &scratch,
        );
        let text: Vec<String> = remote
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert!(text.windows(2).any(|w| w == ["--address", "10.0.0.1:6379"]));
        assert!(!text.iter().any(|a| a == "--num-cpus" || a == "--temp-dir"));
    }
}
