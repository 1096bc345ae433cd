//! One warm Python worker: a process that imported torch once and forks a child per evaluation.
//! Speaks the JSON-lines protocol of docs/architecture.md.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};

use crate::Mode;
use crate::env::PythonEnv;
use crate::result::{Exit, Finished, interpret};
use crate::sandbox;
use crate::supervise::supervise;
use reprolab_core::Outcome;
use reprolab_core::manifest::Limits;

/// How long a worker may take to import torch and say it is ready.
const STARTUP: Duration = Duration::from_secs(300);
/// How long a worker may take to fork after a request.
const FORK: Duration = Duration::from_secs(60);
/// How long a worker may take to report a killed child before it counts as stuck.
const STUCK: Duration = Duration::from_secs(10);

/// What to train.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    pub id: &'a str,
    pub subject_dir: &'a Path,
    pub entry: &'a str,
    pub config: &'a Value,
    pub seed: u64,
    pub mode: Mode,
    pub limits: &'a Limits,
}

pub struct Worker {
    child: Child,
    stdin: ChildStdin,
    events: Lines<BufReader<ChildStdout>>,
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
    /// Torch import time reported at start-up.
    pub import_s: f64,
}

impl Worker {
    /// Start a worker and wait until it has imported torch.
    pub async fn spawn(env: &PythonEnv) -> Result<Worker, String> {
        let argv: Vec<OsString> = vec![
            env.python.clone().into(),
            "-m".into(),
            "reprolab.worker".into(),
        ];
        let (program, args) = sandbox::wrap(&argv);
        let mut cmd = tokio::process::Command::new(program);
        cmd.args(args);
        sandbox::apply_env(&mut cmd, env.pythonpath.as_deref());
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot start the Python worker: {e}"))?;
        let stdin = child.stdin.take().unwrap();
        let events = BufReader::new(child.stdout.take().unwrap()).lines();
        let stderr_tail = Arc::new(Mutex::new(VecDeque::new()));
        let tail = stderr_tail.clone();
        let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
        tokio::spawn(async move {
            while let Ok(Some(line)) = stderr.next_line().await {
                tracing::trace!(target: "reprolab::worker", "{line}");
                let mut t = tail.lock().unwrap();
                t.push_back(line);
                if t.len() > 30 {
                    t.pop_front();
                }
            }
        });
        let mut w = Worker {
            child,
            stdin,
            events,
            stderr_tail,
            import_s: 0.0,
        };
        let ready = tokio::time::timeout(STARTUP, w.next_event()).await;
        match ready {
            Ok(Some(ev)) if ev["ev"] == "ready" => {
                w.import_s = ev["import_s"].as_f64().unwrap_or(0.0);
                tracing::debug!(pid = ?w.child.id(), import_s = w.import_s, "worker ready");
                Ok(w)
            }
            Ok(other) => Err(format!(
                "the Python worker did not start (got {other:?}); its last output:\n{}",
                w.stderr_text()
            )),
            Err(_) => Err(format!(
                "the Python worker did not get ready within {STARTUP:?}"
            )),
        }
    }

    fn stderr_text(&self) -> String {
        self.stderr_tail
            .lock()
            .unwrap()
            .iter()
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
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

    /// Run one evaluation in `workdir`. `Err` means the worker itself is broken and must be
    /// replaced (the evaluation may be retried on a fresh worker); the result of a subject that
    /// broke a limit is always `Ok`.
    pub async fn run(&mut self, req: &Request<'_>, workdir: &Path) -> Result<Finished, String> {
        let msg = json!({
            "op": "eval", "id": req.id, "subject_dir": req.subject_dir, "entry": req.entry,
            "config": req.config, "seed": req.seed, "mode": req.mode, "workdir": workdir,
            "memory_mb": req.limits.memory_mb,
        });
        let line = format!("{msg}\n");
        if self.stdin.write_all(line.as_bytes()).await.is_err() || self.stdin.flush().await.is_err()
        {
            return Err(format!(
                "the worker is gone; its last output:\n{}",
                self.stderr_text()
            ));
        }
        let started = loop {
            match tokio::time::timeout(FORK, self.next_event()).await {
                Ok(Some(ev)) if ev["ev"] == "started" && ev["id"] == req.id => break ev,
                Ok(Some(_)) => continue,
                Ok(None) => {
                    return Err(format!(
                        "the worker died; its last output:\n{}",
                        self.stderr_text()
                    ));
                }
                Err(_) => return Err("the worker did not start the evaluation within 60 s".into()),
            }
        };
        let pid = started["pid"].as_i64().unwrap_or(0) as i32;
        let output = workdir.join("output.log");
        let id = req.id.to_string();
        // The child starts as a copy of the worker: its pages are not the evaluation's doing.
        let baseline = self
            .child
            .id()
            .map_or(0, |p| sandbox::process_rss_mb(p as i32));
        let sup = supervise(
            pid,
            baseline,
            req.limits,
            &output,
            self.wait_done(&id),
            STUCK,
        )
        .await;
        let exit = match sup.done {
            Some(Some(exit)) => exit,
            Some(None) if sup.violation.is_none() => {
                return Err(format!(
                    "the worker died during the evaluation; its last output:\n{}",
                    self.stderr_text()
                ));
            }
            // Killed for a limit, but the worker vanished or stuck: keep the verdict, replace it.
            _ => {
                let (outcome, epochs, output_tail) = interpret(
                    workdir,
                    Exit::default(),
                    sup.violation,
                    sup.peak_rss_mb,
                    req.limits,
                );
                self.kill().await;
                return Ok(Finished {
                    outcome,
                    epochs,
                    output_tail,
                    duration_s: sup.elapsed.as_secs_f64(),
                });
            }
        };
        let (outcome, epochs, output_tail) =
            interpret(workdir, exit, sup.violation, sup.peak_rss_mb, req.limits);
        Ok(Finished {
            outcome,
            epochs,
            output_tail,
            duration_s: sup.elapsed.as_secs_f64(),
        })
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

/// An outcome for an evaluation that reprolab could not run at all.
pub fn infra(message: String) -> Finished {
    Finished {
        outcome: Outcome::Infra { message },
        epochs: Vec::new(),
        output_tail: String::new(),
        duration_s: 0.0,
    }
}
