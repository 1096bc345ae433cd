//! `reprolab paper` and `bench paper`: wiring of the paper crate, one module per verb. What the
//! verbs share is here: the fingerprint as the paper grounds it; [`Checking`], the environment,
//! store, warm workers and model a command sets up once; the [`Verifier`] that reads a
//! directory's facts and runs its probes in the sandbox; and the implement loop's
//! [`SandboxWorkshop`] (smoke runs and verification).

mod bench;
mod fingerprint;
mod grade;
mod implement;
mod lineage;
mod verify;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use reprolab_exec::PythonEnv;
use reprolab_paper::codefacts;
use reprolab_paper::fingerprint::{Dropped, Fingerprint};
use reprolab_paper::implement::{BoxError, SMOKE_FLAG, Smoke, Workshop, judge_smoke};
use reprolab_paper::judge::LlmJudge;
use reprolab_paper::verify::{NoJudge, ProbeRun, Prober, Verdict, Verification, verify};
use reprolab_reproduce::observe::RunStatus;
use reprolab_reproduce::run::{ScriptRunner, WarmPools, default_limits};
use reprolab_store::Store;

pub use bench::bench;
pub use fingerprint::fingerprint;
pub use grade::grade;
pub use implement::implement;
use implement::{event_line, lineage_code};
pub use lineage::{OnlineArgs, lineage};
pub use verify::verify_cmd;

use crate::cli::{Global, PaperCheckArgs};
use crate::context;
use crate::error::Infrastructure;
use crate::llm::LlmSession;

fn check_votes(votes: u32) -> Result<()> {
    if votes == 0 || votes > 15 {
        bail!("--votes is {votes}; expected 1 to 15");
    }
    Ok(())
}

/// What checking criteria needs, set up once per command: the environment, the store, warm
/// workers and, with --llm, the model.
pub struct Checking {
    env: PythonEnv,
    store: Option<Store>,
    warm: Option<WarmPools>,
    pub session: Option<LlmSession>,
}

impl Checking {
    /// With the check options: their model when --llm names one.
    /// (The commands check `--votes` before they read anything.)
    pub async fn open(g: &Global, a: &PaperCheckArgs) -> Result<Checking> {
        let session = a
            .llm
            .llm
            .is_some()
            .then(|| crate::llm::open(g, &a.llm, crate::llm::local_factory(g), None))
            .transpose()?;
        Checking::new(g, session, a.cold).await
    }

    pub async fn new(g: &Global, session: Option<LlmSession>, cold: bool) -> Result<Checking> {
        Ok(Checking {
            env: context::python_env(g).await?,
            store: (!g.no_cache).then(|| context::open_store(g)).transpose()?,
            warm: crate::commands::reproduce::warm_pools(g, cold, 1).await?,
            session,
        })
    }

    pub fn verifier(&self, probe_timeout_s: f64) -> Result<Verifier<'_>> {
        Verifier::new(
            &self.env,
            self.store.as_ref(),
            self.warm.as_ref(),
            probe_timeout_s,
        )
    }

    /// The implement loop's workshop: smoke runs in the sandbox (warm, cached) and `verifier`.
    pub fn workshop<'a>(
        &'a self,
        verifier: Verifier<'a>,
        fingerprint: &'a Fingerprint,
        judge: Option<&'a LlmJudge<'a>>,
        smoke_timeout_s: f64,
    ) -> SandboxWorkshop<'a> {
        SandboxWorkshop {
            verifier,
            smoke_timeout_s,
            fingerprint,
            judge,
        }
    }

    /// The judge of `paper`, when there is a model.
    pub fn judge<'a>(&'a self, paper: &'a str, a: &PaperCheckArgs) -> Option<LlmJudge<'a>> {
        self.session.as_ref().map(|s| LlmJudge {
            model: s.model.as_ref(),
            paper,
            votes: a.votes,
            max_tokens: 1024,
            write_probes: !a.judge_only,
        })
    }

    /// Stop the warm workers.
    pub async fn close(&self) {
        if let Some(w) = &self.warm {
            w.shutdown().await;
        }
    }
}

/// Verifies code directories in one environment: their static facts by the environment's
/// Python, their probes in the sandbox (warm workers when given), every probe run cached.
pub struct Verifier<'a> {
    env: &'a PythonEnv,
    store: Option<&'a Store>,
    warm: Option<&'a WarmPools>,
    timeout_s: f64,
}

impl<'a> Verifier<'a> {
    pub fn new(
        env: &'a PythonEnv,
        store: Option<&'a Store>,
        warm: Option<&'a WarmPools>,
        timeout_s: f64,
    ) -> Result<Verifier<'a>> {
        if !(timeout_s.is_finite() && timeout_s > 0.0) {
            bail!("--timeout is {timeout_s}; expected seconds > 0");
        }
        Ok(Verifier {
            env,
            store,
            warm,
            timeout_s,
        })
    }

    /// Runs scripts one at a time with `code` importable (it travels with each run to a Ray
    /// node), under the default limits but `timeout_s`.
    fn runner_in(&self, code: &Path, timeout_s: f64) -> ScriptRunner<'a> {
        ScriptRunner {
            env: self.env,
            limits: reprolab_core::manifest::Limits {
                timeout_s,
                ..default_limits()
            },
            paths: vec![code.to_path_buf()],
            parallel: 1,
            store: self.store,
            warm: self.warm,
        }
    }

    /// Every criterion of `fingerprint` decided against `code` (the judge, if any, for what
    /// no check decides).
    pub async fn verify(
        &self,
        fingerprint: &Fingerprint,
        code: &Path,
        judge: Option<&LlmJudge<'_>>,
        on_verdict: impl FnMut(&Verdict),
    ) -> Result<Verification> {
        let code = std::path::absolute(code).unwrap_or_else(|_| code.to_path_buf());
        let facts = {
            let (python, pythonpath, code) = (
                self.env.python.clone(),
                self.env.pythonpath.clone(),
                code.clone(),
            );
            tokio::task::spawn_blocking(move || {
                codefacts::extract(&python, pythonpath.as_deref(), &code)
            })
            .await
            .context(Infrastructure("reading the code's facts"))??
        };
        let prober = SandboxProber {
            runner: self.runner_in(&code, self.timeout_s),
            code_hash: reprolab_core::hash::hash_tree(&code)
                .with_context(|| format!("{}: cannot read the code", code.display()))?,
        };
        Ok(match judge {
            Some(j) => verify(fingerprint, &facts, &code, &prober, j, on_verdict).await,
            None => verify(fingerprint, &facts, &code, &prober, &NoJudge, on_verdict).await,
        })
    }
}

/// The fingerprint (given, or `fingerprint.json` beside the paper) with the criteria whose
/// source is not in the paper dropped, and merged duplicates.
fn grounded_fingerprint(
    paper: &Path,
    text: &str,
    given: Option<&Path>,
) -> Result<(Fingerprint, Vec<Dropped>)> {
    let path: PathBuf = match given {
        Some(p) => p.to_path_buf(),
        None => {
            let beside = paper.with_file_name("fingerprint.json");
            if !beside.is_file() {
                bail!(
                    "{}: no fingerprint: give --fingerprint FILE (there is no fingerprint.json beside the paper)",
                    paper.display()
                );
            }
            beside
        }
    };
    let mut fingerprint = Fingerprint::load(&path)?;
    let mut dropped = fingerprint.ground(text);
    dropped.extend(fingerprint.dedupe());
    for d in &dropped {
        eprintln!("note: criterion {} left out: {}", d.id, d.reason);
    }
    Ok((fingerprint, dropped))
}

/// Probes run as reproduction scripts: one seed, in the sandbox, cached under the script, which
/// carries the code's content hash (an edited implementation is probed again).
struct SandboxProber<'a> {
    runner: ScriptRunner<'a>,
    code_hash: String,
}

impl Prober for SandboxProber<'_> {
    // The runner carries the code's directory, to wherever the probe runs.
    async fn probe(&self, _code_dir: &Path, script: &str) -> ProbeRun {
        let wrapped = in_code_dir("probe", &self.code_hash, script);
        let runs = self.runner.run("paper probe", &wrapped, &[0]).await;
        let Some(run) = runs.first() else {
            return ProbeRun::Error("the probe did not run".into());
        };
        match (run.status, run.exceptions.first()) {
            (RunStatus::Ok, _) => ProbeRun::Passed,
            (RunStatus::Exception, Some(e)) if e.type_name == "AssertionError" => {
                ProbeRun::AssertionFailed(e.message.clone())
            }
            _ => ProbeRun::Error(run.headline()),
        }
    }
}

/// A Python string literal of `s`.
fn quoted(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

/// `body` run in the code's directory with it first on sys.path, for a runner given that
/// directory as its one import path: the script finds it where the run put it (a Ray node
/// unpacks it elsewhere), so its text, and the cache key, are the same on every backend. The
/// header names the code's content hash, so that the cached run of the same script on edited
/// code is not found again.
fn in_code_dir(what: &str, code_hash: &str, body: &str) -> String {
    format!(
        "# reprolab paper {what}; code {code_hash}\nimport os as _os, sys as _sys\n_d = _os.environ[\"REPROLAB_IMPORT_PATHS\"].split(_os.pathsep)[0]\n_os.chdir(_d)\n_sys.path.insert(0, _d)\n{body}\n"
    )
}

/// The first line of `s` in at most `n` characters, for a table cell.
fn clip(s: &str, n: usize) -> String {
    reprolab_paper::code::clip(s.lines().next().unwrap_or(""), n)
}

/// The implement loop's world: smoke runs and verification in the sandbox.
pub struct SandboxWorkshop<'a> {
    verifier: Verifier<'a>,
    smoke_timeout_s: f64,
    fingerprint: &'a Fingerprint,
    judge: Option<&'a LlmJudge<'a>>,
}

impl Workshop for SandboxWorkshop<'_> {
    async fn smoke(&self, dir: &Path, entry: &str) -> Smoke {
        let dir = &std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
        let code_hash = reprolab_core::hash::hash_tree(dir).unwrap_or_default();
        let e = quoted(entry);
        let body = format!(
            "import runpy as _runpy\n_sys.argv = [{e}, {flag}]\n_runpy.run_path({e}, run_name=\"__main__\")",
            flag = quoted(SMOKE_FLAG)
        );
        let script = in_code_dir("smoke run", &code_hash, &body);
        let runs = self
            .verifier
            .runner_in(dir, self.smoke_timeout_s)
            .run("paper smoke", &script, &[0])
            .await;
        match runs.first() {
            Some(run) => judge_smoke(
                run.status == RunStatus::Ok,
                &run.headline(),
                &run.output_tail,
            ),
            None => judge_smoke(false, "the smoke run did not start", ""),
        }
    }

    async fn verify(&self, dir: &Path) -> Result<Verification, BoxError> {
        self.verifier
            .verify(self.fingerprint, dir, self.judge, |_| {})
            .await
            .map_err(|e| format!("{e:#}").into())
    }
}
