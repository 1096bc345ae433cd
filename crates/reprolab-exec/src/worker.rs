//! One warm Python worker: a process that imported torch once and forks a child per evaluation.
//! Speaks the JSON-lines protocol of docs/architecture.md.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};

use crate::Mode;
use crate::env::PythonEnv;
use crate::proctree::Tree;
use crate::result::{Exit, Finished, interpret};
use crate::sandbox;
use crate::supervise::{Violation, supervise_until};
use reprolab_core::Outcome;
use reprolab_core::manifest::{Framework, KerasBackend, Limits};

/// How long a worker may take to import torch and say it is ready.
const STARTUP: Duration = Duration::from_secs(300);
/// How long a worker may take to fork after a request.
const FORK: Duration = Duration::from_secs(60);
/// How many evaluations a measured baseline serves.
const BASELINE_EVERY: u32 = 16;
/// How long a worker may take to report a killed child before it counts as stuck.
const STUCK: Duration = Duration::from_secs(10);

/// What to train.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    pub id: &'a str,
    pub subject_dir: &'a Path,
    pub entry: &'a str,
    pub framework: Framework,
    pub backend: KerasBackend,
    pub config: &'a Value,
    pub seed: u64,
    pub mode: Mode,
    pub limits: &'a Limits,
    /// In-training pruning (eval mode): `reprolab.log_epoch` checks each epoch against it.
    pub prune: Option<&'a reprolab_core::PruneSpec>,
}

pub struct Worker {
    child: Child,
    /// The Python process's id as the host sees it (inside a PID namespace it is 1 to itself;
    /// the process reprolab started is then the `unshare` above it).
    host_pid: i32,
    /// What the worker reported of its sandbox (Landlock status), for the record.
    pub sandbox: Value,
    /// The worker's own PSS in kB (the baseline of an evaluation's memory), and how many
    /// evaluations ago it was measured: reading it costs ~9 ms, so it is refreshed every
    /// [`BASELINE_EVERY`] evaluations rather than before each (it drifts by a few MB).
    baseline: Option<(u64, u32)>,
    stdin: ChildStdin,
    events: Lines<BufReader<ChildStdout>>,
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
    /// Torch import time reported at start-up.
    pub import_s: f64,
    /// The backend of the Keras this worker imported (at its first Keras evaluation), if any.
    keras: Option<KerasBackend>,
}

/// Why a worker could not be started or did not answer: the machinery, never the evaluated
/// code.
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    /// The worker's scratch directory could not be created.
    #[error("cannot create the worker's scratch directory {}", path.display())]
    Scratch {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The interpreter could not be started.
    #[error("cannot start the Python worker {}", python.display())]
    Start {
        python: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The worker said something other than `ready` first, or nothing at all.
    #[error("the Python worker did not start (got {got}); its last output:\n{output}")]
    NotReady { got: String, output: String },
    #[error("the Python worker did not get ready within {0:?}")]
    StartupTimeout(Duration),
    /// The worker went away before it answered.
    #[error("the worker died; its last output:\n{output}")]
    Died { output: String },
    /// The worker's input is closed: it is gone.
    #[error("the worker is gone; its last output:\n{output}")]
    Gone { output: String },
    #[error("the worker did not answer within {0:?}")]
    NoAnswer(Duration),
}

/// Why a forked evaluation has no result from its worker.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ForkError {
    /// The worker is broken: gone, or not answering, before the evaluation began.
    #[error("{0}")]
    Worker(String),
    /// The worker died while the evaluation ran: possibly the evaluated code's doing (it may
    /// signal its parent), so a caller that sees this twice for the same code blames the code.
    #[error("{0}")]
    DiedDuring(String),
    /// Its caller went away: the child was killed; the worker is fine (or was replaced).
    #[error("cancelled")]
    Cancelled,
}

/// What the watchdog saw of one forked child (see [`Worker::run_forked`]).
#[derive(Debug, Clone)]
pub struct Forked {
    /// How the child ended; `None` when it was killed for a limit and the worker then vanished
    /// or stopped answering (the worker has been killed; spawn a new one).
    pub exit: Option<Exit>,
    pub violation: Option<Violation>,
    pub peak_mb: u64,
    pub elapsed: Duration,
}

impl Worker {
    /// Start a worker and wait until it has imported torch. User code it runs can write only
    /// under `scratch` (where the kernel allows; see [`sandbox::isolation`]).
    pub async fn spawn(env: &PythonEnv, scratch: &Path) -> Result<Worker, WorkerError> {
        Self::spawn_module(env, &["reprolab.worker"], scratch).await
    }

    /// Start `python -m MODULE ARGS…` in the sandbox: any module that speaks the worker protocol
    /// (a private event channel, a `ready` event first; e.g. `reprolab.codegen_runner`) and
    /// confines itself to `scratch` when given `--write scratch`.
    pub async fn spawn_module(
        env: &PythonEnv,
        module_and_args: &[&str],
        scratch: &Path,
    ) -> Result<Worker, WorkerError> {
        sandbox::warn_gaps_once();
        std::fs::create_dir_all(scratch).map_err(|source| WorkerError::Scratch {
            path: scratch.to_path_buf(),
            source,
        })?;
        let mut argv: Vec<OsString> = vec![env.python.clone().into(), "-m".into()];
        argv.extend(module_and_args.iter().map(OsString::from));
        argv.extend(sandbox::worker_args(&[scratch]));
        let (program, args) = sandbox::wrap(&argv);
        let mut cmd = tokio::process::Command::new(program);
        cmd.args(args);
        sandbox::apply_env(&mut cmd, env.pythonpath.as_deref());
        sandbox::contain(&mut cmd);
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().map_err(|source| WorkerError::Start {
            python: env.python.clone(),
            source,
        })?;
        let stdin = child.stdin.take().unwrap();
        let events = BufReader::new(child.stdout.take().unwrap()).lines();
        let stderr_tail = keep_tail(child.stderr.take().unwrap(), 30);
        let mut w = Worker {
            host_pid: 0,
            sandbox: Value::Null,
            baseline: None,
            child,
            stdin,
            events,
            stderr_tail,
            import_s: 0.0,
            keras: None,
        };
        let ready = tokio::time::timeout(STARTUP, w.next_event()).await;
        match ready {
            Ok(Some(ev)) if ev["ev"] == "ready" => {
                w.import_s = ev["import_s"].as_f64().unwrap_or(0.0);
                // Older protocol (no host_pid): the process reprolab started is the worker.
                w.host_pid = ev["host_pid"]
                    .as_i64()
                    .map(|p| p as i32)
                    .or_else(|| w.child.id().map(|p| p as i32))
                    .unwrap_or(0);
                w.sandbox = ev["sandbox"].clone();
                tracing::debug!(pid = ?w.child.id(), import_s = w.import_s, "worker ready");
                Ok(w)
            }
            Ok(other) => Err(WorkerError::NotReady {
                got: format!("{other:?}"),
                output: w.stderr_text(),
            }),
            Err(_) => Err(WorkerError::StartupTimeout(STARTUP)),
        }
    }

    fn stderr_text(&self) -> String {
        tail_text(&self.stderr_tail)
    }

    async fn next_event(&mut self) -> Option<Value> {
        loop {
            let line = self.events.next_line().await.ok()??;
            match serde_json::from_str::<Value>(&line) {
                Ok(v) if v["ev"] == "error" => {
                    tracing::warn!("worker protocol error: {}", v["message"])
                }
                Ok(v) => return Some(v),
                Err(_) => tracing::warn!("worker sent a line that is not JSON: {line}"),
            }
        }
    }

    /// Wait for the `done` event of evaluation `id`; `None` when the worker went away.
    async fn wait_done(&mut self, id: &str) -> Option<Exit> {
        loop {
            let ev = self.next_event().await?;
            if ev["ev"] == "done" && ev["id"] == id {
                return Some(Exit {
                    code: ev["exit_code"].as_i64().map(|c| c as i32),
                    signal: ev["signal"].as_i64().map(|s| s as i32),
                });
            }
        }
    }

    /// Send a request that the worker answers itself, without forking, and wait (at most
    /// `within`) for the event `reply` carrying the same `id`. `Err` means the worker is broken.
    pub async fn ask(
        &mut self,
        msg: &Value,
        id: &str,
        reply: &str,
        within: Duration,
    ) -> Result<Value, WorkerError> {
        self.send(msg).await?;
        let wait = async {
            loop {
                match self.next_event().await {
                    Some(ev) if ev["ev"] == reply && ev["id"] == id => return Some(ev),
                    Some(_) => continue,
                    None => return None,
                }
            }
        };
        match tokio::time::timeout(within, wait).await {
            Ok(Some(ev)) => Ok(ev),
            Ok(None) => Err(WorkerError::Died {
                output: self.stderr_text(),
            }),
            Err(_) => Err(WorkerError::NoAnswer(within)),
        }
    }

    async fn send(&mut self, msg: &Value) -> Result<(), WorkerError> {
        let line = format!("{msg}\n");
        if self.stdin.write_all(line.as_bytes()).await.is_err() || self.stdin.flush().await.is_err()
        {
            return Err(WorkerError::Gone {
                output: self.stderr_text(),
            });
        }
        Ok(())
    }

    /// Send a request that makes the worker fork a child (`started` … `done` events for `id`)
    /// and watch the processes below the worker with `limits`, the child's output going to
    /// `output`. Whatever the child left running (daemons included) is killed when it is done.
    /// `Err` means the worker itself is broken and must be replaced (the request may be retried
    /// on a fresh worker).
    pub async fn run_forked(
        &mut self,
        msg: &Value,
        id: &str,
        limits: &Limits,
        output: &Path,
    ) -> Result<Forked, ForkError> {
        self.run_forked_until(msg, id, limits, output, std::future::pending())
            .await
    }

    /// [`run_forked`](Self::run_forked), ending the child when `cancel` resolves first
    /// ([`ForkError::Cancelled`]).
    pub async fn run_forked_until(
        &mut self,
        msg: &Value,
        id: &str,
        limits: &Limits,
        output: &Path,
        cancel: impl Future<Output = ()>,
    ) -> Result<Forked, ForkError> {
        // The child starts as a copy of the worker: the bound is on what the evaluation adds to
        // the worker's tree, over the worker's own PSS measured while it was idle.
        let baseline_kb = match self.baseline {
            Some((kb, n)) if n < BASELINE_EVERY => {
                self.baseline = Some((kb, n + 1));
                kb
            }
            _ => {
                let kb = crate::proctree::tree_pss_kb(self.host_pid);
                self.baseline = Some((kb, 1));
                kb
            }
        };
        let tree = Tree::below(self.host_pid, baseline_kb);
        let mut msg = msg.clone();
        // The worker's own deadline, so a child cannot outlive its limit even if reprolab stops
        // watching (it kills the child a little after reprolab would).
        msg["timeout_s"] = json!(limits.timeout_s);
        self.send(&msg)
            .await
            .map_err(|e| ForkError::Worker(e.to_string()))?;
        loop {
            match tokio::time::timeout(FORK, self.next_event()).await {
                Ok(Some(ev)) if ev["ev"] == "started" && ev["id"] == id => break,
                Ok(Some(_)) => continue,
                // Died after taking the request: the forked code may have killed it before
                // the worker said `started`.
                Ok(None) => {
                    return Err(ForkError::DiedDuring(
                        WorkerError::Died {
                            output: self.stderr_text(),
                        }
                        .to_string(),
                    ));
                }
                Err(_) => {
                    return Err(ForkError::Worker(
                        "the worker did not start the evaluation within 60 s".into(),
                    ));
                }
            }
        }
        let id_owned = id.to_string();
        let sup = supervise_until(
            tree,
            limits,
            output,
            self.wait_done(&id_owned),
            STUCK,
            cancel,
        )
        .await;
        // The worker sweeps its children itself; this catches what it could not (a worker that
        // is not a subreaper, or one that died).
        let _ = tokio::task::spawn_blocking(move || tree.kill()).await;
        if sup.cancelled {
            // A worker that did not report its killed child is out of step: replace it.
            if !matches!(sup.done, Some(Some(_))) {
                self.kill().await;
            }
            return Err(ForkError::Cancelled);
        }
        let exit = match sup.done {
            Some(Some(exit)) => Some(exit),
            Some(None) if sup.violation.is_none() => {
                return Err(ForkError::DiedDuring(format!(
                    "the worker died during the evaluation; its last output:\n{}",
                    self.stderr_text()
                )));
            }
            // Killed for a limit, but the worker vanished or stuck: keep the verdict, replace it.
            _ => {
                self.kill().await;
                None
            }
        };
        Ok(Forked {
            exit,
            violation: sup.violation,
            peak_mb: sup.peak_mb,
            elapsed: sup.elapsed,
        })
    }

    /// Run one evaluation in `workdir`. `Err` means the worker itself is broken and must be
    /// replaced (the evaluation may be retried on a fresh worker); the result of a subject that
    /// broke a limit is always `Ok`.
    /// `cancel`: see [`run_forked_until`](Self::run_forked_until).
    pub async fn run(
        &mut self,
        req: &Request<'_>,
        workdir: &Path,
        cancel: impl Future<Output = ()>,
    ) -> Result<Finished, ForkError> {
        let msg = json!({
            "op": "eval", "id": req.id, "subject_dir": req.subject_dir, "entry": req.entry,
            "config": req.config, "seed": req.seed, "mode": req.mode, "workdir": workdir,
            "memory_mb": req.limits.memory_mb, "framework": req.framework,
            "backend": req.backend, "prune": req.prune,
        });
        if req.framework == Framework::Keras {
            self.keras = Some(req.backend);
        }
        let forked = self
            .run_forked_until(
                &msg,
                req.id,
                req.limits,
                &workdir.join("output.log"),
                cancel,
            )
            .await?;
        let (outcome, epochs, output_tail) = interpret(
            workdir,
            forked.exit.unwrap_or_default(),
            forked.violation,
            forked.peak_mb,
            req.limits,
        );
        Ok(Finished {
            outcome,
            epochs,
            output_tail,
            duration_s: forked.elapsed.as_secs_f64(),
        })
    }

    /// Run a bug-reproduction script once in a forked child (`reprolab.repro.run`): `script`
    /// and `out` (where it writes `observed.json` and `reported.jsonl`) must lie in `workdir`,
    /// the only directory the child can write. `Err` as for [`Worker::run`].
    #[allow(clippy::too_many_arguments)]
    pub async fn run_script(
        &mut self,
        id: &str,
        script: &Path,
        seed: u64,
        out: &Path,
        paths: &[PathBuf],
        limits: &Limits,
        workdir: &Path,
        cancel: impl Future<Output = ()>,
    ) -> Result<Forked, ForkError> {
        let msg = json!({
            "op": "script", "id": id, "script": script, "seed": seed, "out": out,
            "paths": paths, "workdir": workdir,
        });
        self.run_forked_until(&msg, id, limits, &workdir.join("output.log"), cancel)
            .await
    }

    /// Whether this worker can train a subject of `framework` on `backend`: anything until it
    /// has imported Keras, then Keras subjects only on the backend it imported (PyTorch ones
    /// always).
    pub fn can_run(&self, framework: Framework, backend: KerasBackend) -> bool {
        framework != Framework::Keras || self.keras.is_none_or(|held| held == backend)
    }

    /// Whether the worker process is still running.
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    pub async fn kill(&mut self) {
        if let Some(pid) = self.child.id() {
            sandbox::kill_group(pid as i32, libc::SIGKILL);
        }
        let _ = self.child.kill().await;
    }

    /// Ask the worker to exit; kill it if it does not within a few seconds.
    pub async fn shutdown(mut self) {
        let _ = self.stdin.write_all(b"{\"op\":\"shutdown\"}\n").await;
        let _ = self.stdin.flush().await;
        if tokio::time::timeout(Duration::from_secs(5), self.child.wait())
            .await
            .is_err()
        {
            self.kill().await;
        }
    }
}

/// The last `lines` lines a process writes to stderr, kept as it runs (each also logged at trace
/// level), for error messages about that process.
pub(crate) fn keep_tail(
    stderr: tokio::process::ChildStderr,
    lines: usize,
) -> Arc<Mutex<VecDeque<String>>> {
    let tail = Arc::new(Mutex::new(VecDeque::new()));
    let kept = tail.clone();
    tokio::spawn(async move {
        let mut stderr = BufReader::new(stderr).lines();
        while let Ok(Some(line)) = stderr.next_line().await {
            tracing::trace!(target: "reprolab::worker", "{line}");
            let mut t = kept.lock().unwrap();
            t.push_back(line);
            if t.len() > lines {
                t.pop_front();
            }
        }
    });
    tail
}

pub(crate) fn tail_text(tail: &Mutex<VecDeque<String>>) -> String {
    tail.lock()
        .unwrap()
        .iter()
        .cloned()
        .collect::<Vec<_>>()
        .join("\n")
}

/// The outcome of code whose worker died while running it, on every try: counted as a crash of
/// that code (it may well have killed its parent), not as reprolab's failure.
pub fn killed_its_worker(tries: usize, message: &str) -> Finished {
    Finished {
        outcome: Outcome::Crash {
            exit_code: None,
            signal: None,
            detail: format!(
                "the worker running this code died during it, on each of {tries} tries \
                 (code that signals or kills its parent is a failure of that code): {message}"
            ),
        },
        epochs: Vec::new(),
        output_tail: String::new(),
        duration_s: 0.0,
    }
}

/// An outcome for an evaluation that reprolab could not run at all.
pub fn infra(message: String) -> Finished {
    Finished {
        outcome: Outcome::Infra { message },
        epochs: Vec::new(),
        output_tail: String::new(),
        duration_s: 0.0,
    }
}
