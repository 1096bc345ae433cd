//! Running a reproduction script: once per seed, seeds in parallel, every run cached in the
//! store under a hash of the script, seed, environment, limits and import paths, so that a
//! second `verify` or a resumed bench runs nothing it already knows.
//!
//! Two ways to run, with the same observation: warm ([`WarmPools`]: a forked child of a worker
//! that imported torch once, `reprolab.repro.run` inside it) and cold ([`run_once`]: a fresh
//! `python -m reprolab.repro` inside `python -m reprolab.sandbox`, paying Python's start and
//! `import torch` every time). Warm is the default of the commands; cold is the fallback when
//! no worker can be had, and the baseline of `reprolab bench-reproduce-exec`. The cache key
//! does not say which ran.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use reprolab_core::manifest::Limits;
use reprolab_exec::Executor;
use reprolab_exec::PythonEnv;
use reprolab_exec::pool::{ScriptFailure, ScriptJob, ScriptRun, WorkerPool};
use reprolab_exec::ray::RayExecutor;
use reprolab_exec::result::Exit;
use reprolab_exec::result::{OUTPUT_TAIL_BYTES, read_tail};
use reprolab_exec::scratch::Scratch;
use reprolab_exec::script::run_confined;
use reprolab_exec::supervise::Violation;
use reprolab_store::Store;
use sha2::{Digest, Sha256};
use tokio::sync::Semaphore;

use crate::observe::{self, Observation, ProcessEnd, RunStatus};

/// RepGen's protocol: five runs with different seeds.
pub const DEFAULT_SEEDS: [u64; 5] = [1, 2, 3, 4, 5];

/// Limits of one reproduction run unless the user sets others: a bug shows in seconds to a
/// couple of minutes on a CPU, and a script that loops or floods output must not stall a bench.
pub fn default_limits() -> Limits {
    Limits {
        timeout_s: 120.0,
        memory_mb: 4096,
        output_mb: 4,
        disk_mb: 2048,
    }
}

/// Runs scripts in one environment.
pub struct ScriptRunner<'a> {
    pub env: &'a PythonEnv,
    pub limits: Limits,
    /// Directories the script may import from besides its own (`--repo`).
    pub paths: Vec<PathBuf>,
    /// Runs at once.
    pub parallel: usize,
    /// Cache of runs; `None` runs everything.
    pub store: Option<&'a Store>,
    /// Warm workers to run in; `None` runs each in a fresh process.
    pub warm: Option<&'a WarmPools>,
}

/// Warm workers for script runs, started on the first run that misses the cache, for one
/// environment at a time (a bench goes through bugs one by one, each in its own environment: a
/// run in another environment stops the workers of the previous one). With a Ray cluster
/// (`--backend ray`), runs in the cluster's environment go to its slots; a report that needs
/// other versions runs on the local workers of its own environment.
pub struct WarmPools {
    size: usize,
    current: tokio::sync::Mutex<Option<(String, Arc<WorkerPool>, Scratch)>>,
    ray: Option<Arc<RayExecutor>>,
}

/// Where one run goes.
enum Warm {
    Local(Arc<WorkerPool>),
    Ray(Arc<RayExecutor>),
}

impl WarmPools {
    /// `size` workers per environment.
    pub fn new(size: usize) -> WarmPools {
        WarmPools {
            size: size.max(1),
            current: tokio::sync::Mutex::new(None),
            ray: None,
        }
    }

    /// Runs in `ray`'s environment go to its slots; others to `size` local workers.
    pub fn with_ray(size: usize, ray: Arc<RayExecutor>) -> WarmPools {
        WarmPools {
            ray: Some(ray),
            ..WarmPools::new(size)
        }
    }

    /// How many runs may go at once in `env`.
    pub fn parallelism(&self, env: &PythonEnv) -> usize {
        match &self.ray {
            Some(ray) if ray.env_id() == env.id => ray.parallelism(),
            _ => self.size,
        }
    }

    async fn warm(&self, env: &PythonEnv) -> std::io::Result<Warm> {
        match &self.ray {
            Some(ray) if ray.env_id() == env.id => Ok(Warm::Ray(ray.clone())),
            _ => self.pool(env).await.map(Warm::Local),
        }
    }

    /// The pool of `env`, started now if it is not running.
    async fn pool(&self, env: &PythonEnv) -> std::io::Result<Arc<WorkerPool>> {
        let mut current = self.current.lock().await;
        if let Some((id, pool, _)) = current.as_ref()
            && *id == env.id
        {
            return Ok(pool.clone());
        }
        if let Some((_, old, _scratch)) = current.take() {
            old.stop().await;
        }
        let scratch = Scratch::new("repro-pool")?;
        let pool = Arc::new(WorkerPool::start(
            env.clone(),
            self.size,
            scratch.path().to_path_buf(),
        ));
        *current = Some((env.id.clone(), pool.clone(), scratch));
        Ok(pool)
    }

    /// Stop the workers (and the Ray driver).
    pub async fn shutdown(&self) {
        if let Some((_, pool, _scratch)) = self.current.lock().await.take() {
            pool.stop().await;
        }
        if let Some(ray) = &self.ray {
            ray.shutdown().await;
        }
    }
}

/// Content hash that identifies a run.
pub fn run_key(
    script: &str,
    seed: u64,
    env_id: &str,
    limits: &Limits,
    paths: &[PathBuf],
) -> String {
    let mut h = Sha256::new();
    for part in [
        "reproduce-run-v1",
        script,
        &seed.to_string(),
        env_id,
        &format!(
            "{}/{}/{}",
            limits.timeout_s, limits.memory_mb, limits.output_mb
        ),
    ] {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part.as_bytes());
    }
    for p in paths {
        h.update(p.to_string_lossy().as_bytes());
    }
    hex::encode(h.finalize())
}

impl ScriptRunner<'_> {
    /// Run `script` once per seed; `label` names the runs in the store. Cached runs are read,
    /// the others run in parallel (up to `parallel`) and are stored as they finish.
    pub async fn run(&self, label: &str, script: &str, seeds: &[u64]) -> Vec<Observation> {
        let mut out: Vec<Option<Observation>> = vec![None; seeds.len()];
        let keys: Vec<String> = seeds
            .iter()
            .map(|s| run_key(script, *s, &self.env.id, &self.limits, &self.paths))
            .collect();
        if let Some(store) = self.store {
            for (slot, key) in out.iter_mut().zip(&keys) {
                *slot = store
                    .get_script_run(key)
                    .ok()
                    .flatten()
                    .and_then(|v| serde_json::from_value(v).ok());
            }
        }
        let gate = Arc::new(Semaphore::new(self.parallel.max(1)));
        let mut tasks = tokio::task::JoinSet::new();
        for (i, seed) in seeds.iter().enumerate() {
            if out[i].is_some() {
                continue;
            }
            let (env, script, limits, paths, gate) = (
                self.env.clone(),
                script.to_string(),
                self.limits,
                self.paths.clone(),
                gate.clone(),
            );
            let seed = *seed;
            let warm = match self.warm {
                Some(w) => match w.warm(self.env).await {
                    Ok(p) => Some(p),
                    Err(e) => {
                        tracing::warn!("no warm workers ({e}); running in fresh processes");
                        None
                    }
                },
                None => None,
            };
            tasks.spawn(async move {
                let _permit = gate.acquire_owned().await;
                let job = Job {
                    script: &script,
                    seed,
                    limits: &limits,
                    paths: &paths,
                };
                let obs = match warm {
                    Some(Warm::Local(pool)) => job.in_worker(&pool, &env).await,
                    Some(Warm::Ray(ray)) => job.on_ray(&ray).await,
                    None => run_once(&env, &script, seed, &limits, &paths).await,
                };
                (i, obs)
            });
        }
        while let Some(joined) = tasks.join_next().await {
            let Ok((i, obs)) = joined else { continue };
            if let Some(store) = self.store
                && obs.status != RunStatus::NotStarted
                && let Ok(value) = serde_json::to_value(&obs)
                && let Err(e) = store.put_script_run(&keys[i], label, obs.status.as_str(), &value)
            {
                tracing::warn!("could not store a script run: {e}");
            }
            out[i] = Some(obs);
        }
        out.into_iter()
            .zip(seeds)
            .map(|(o, seed)| {
                o.unwrap_or_else(|| not_started(*seed, "the run's task failed".into()))
            })
            .collect()
    }
}

fn not_started(seed: u64, why: String) -> Observation {
    observe::read(
        seed,
        Path::new("/nonexistent"),
        ProcessEnd {
            killed_for: Some(RunStatus::NotStarted),
            ..ProcessEnd::default()
        },
        why,
    )
}

/// One run of a script with a seed, for a backend that runs [`ScriptJob`]s (a warm worker, a
/// Ray slot).
struct Job<'a> {
    script: &'a str,
    seed: u64,
    limits: &'a Limits,
    paths: &'a [PathBuf],
}

impl Job<'_> {
    /// The run in a forked child of a warm worker of `pool`; in a fresh process ([`run_once`])
    /// when the pool cannot run it (no worker starts).
    async fn in_worker(&self, pool: &WorkerPool, env: &PythonEnv) -> Observation {
        self.observe(
            async |job| pool.run_script(job).await,
            async |e| {
                tracing::warn!("warm script run failed ({e}); running it in a fresh process");
                run_once(env, self.script, self.seed, self.limits, self.paths).await
            },
        )
        .await
    }

    /// The run in a slot of a Ray cluster that runs the script's environment. The cluster
    /// failing under it (a lost driver or node) is a run that did not start, with the reason:
    /// not cached, run again next time.
    async fn on_ray(&self, ray: &RayExecutor) -> Observation {
        self.observe(
            async |job| ray.run_script(&job).await,
            async |e| not_started(self.seed, format!("on Ray: {e}")),
        )
        .await
    }

    /// The run by `backend`, its files kept in a scratch directory, observed; when the backend
    /// could not run it (the machinery, not the script), what `infra` makes of its reason.
    async fn observe(
        &self,
        backend: impl AsyncFnOnce(ScriptJob) -> Result<ScriptRun, ScriptFailure>,
        infra: impl AsyncFnOnce(String) -> Observation,
    ) -> Observation {
        let keep = match keep_dir(self.seed) {
            Ok(k) => k,
            Err(not) => return *not,
        };
        let job = script_job(self.script, self.seed, self.limits, self.paths, keep.path());
        match backend(job).await {
            Err(ScriptFailure::Infra(e)) => infra(e).await,
            ended => observe_warm(self.seed, ended, keep.path()),
        }
    }
}

/// Where a warm run's records land; a run that cannot have one did not start.
fn keep_dir(seed: u64) -> Result<Scratch, Box<Observation>> {
    Scratch::new("repro").map_err(|e| {
        Box::new(not_started(
            seed,
            format!("cannot create a scratch directory: {e}"),
        ))
    })
}

fn script_job(
    script: &str,
    seed: u64,
    limits: &Limits,
    paths: &[PathBuf],
    keep: &Path,
) -> ScriptJob {
    ScriptJob {
        source: script.to_string(),
        seed,
        paths: paths.to_vec(),
        limits: *limits,
        keep: keep.to_path_buf(),
    }
}

/// The observation of a run in a warm worker (local or a Ray slot), its records in `keep`.
fn observe_warm(seed: u64, ended: Result<ScriptRun, ScriptFailure>, keep: &Path) -> Observation {
    match ended {
        Ok(run) => {
            let killed_for = run.violation.map(limit_status);
            let exit = as_fresh_process(run.exit, killed_for.is_some());
            observe::read(
                seed,
                keep,
                ProcessEnd {
                    exit_code: exit.code,
                    signal: exit.signal,
                    killed_for,
                    duration_s: run.duration_s,
                    peak_mb: run.peak_mb,
                },
                neutral_paths(&run.output_tail, &run.workdir),
            )
        }
        // The script killed the process that ran it: a crash with no record, as in a fresh
        // process whose parent it killed.
        Err(ScriptFailure::KilledWorker { tries, message }) => observe::read(
            seed,
            Path::new("/nonexistent"),
            ProcessEnd::default(),
            format!(
                "the worker running this script died during it, on each of {tries} tries: {message}"
            ),
        ),
        Err(ScriptFailure::Infra(e)) => not_started(seed, e),
    }
}

/// How a fresh run's process would have ended: there `python -m reprolab.sandbox` stands
/// between reprolab and the script and exits 128 + N when the script dies of signal N (a
/// process killed for a limit dies of the signal itself, sandbox included).
fn as_fresh_process(exit: Exit, killed_for_limit: bool) -> Exit {
    match exit {
        Exit {
            code: None,
            signal: Some(sig),
        } if !killed_for_limit => Exit {
            code: Some(128 + sig),
            signal: None,
        },
        other => other,
    }
}

fn limit_status(v: Violation) -> RunStatus {
    match v {
        Violation::Timeout => RunStatus::Timeout,
        Violation::Memory => RunStatus::Oom,
        Violation::Output => RunStatus::OutputLimit,
        Violation::Disk => RunStatus::DiskLimit,
    }
}

/// One run in a fresh process, in a fresh scratch directory.
pub async fn run_once(
    env: &PythonEnv,
    script: &str,
    seed: u64,
    limits: &Limits,
    paths: &[PathBuf],
) -> Observation {
    let scratch = match Scratch::new("repro") {
        Ok(s) => s,
        Err(e) => return not_started(seed, format!("cannot create a scratch directory: {e}")),
    };
    let workdir = scratch.path();
    let script_path = workdir.join("reproduce.py");
    let out_dir = workdir.join("observed");
    if let Err(e) = std::fs::write(&script_path, script).and_then(|_| std::fs::create_dir(&out_dir))
    {
        return not_started(seed, format!("cannot write {}: {e}", script_path.display()));
    }
    let mut argv: Vec<OsString> = vec![
        env.python.clone().into(),
        "-m".into(),
        "reprolab.repro".into(),
        script_path.into(),
        "--seed".into(),
        seed.to_string().into(),
        "--out".into(),
        out_dir.clone().into(),
    ];
    for p in paths {
        argv.push("--path".into());
        argv.push(p.into());
    }
    let seed_text = seed.to_string();
    let confined = match run_confined(
        env,
        &argv,
        workdir,
        workdir,
        limits,
        &[("REPROLAB_SEED", seed_text.as_str())],
    )
    .await
    {
        Ok(c) => c,
        Err(e) => return not_started(seed, e),
    };
    let killed_for = confined.violation.map(limit_status);
    let tail = neutral_paths(&read_tail(&confined.output, OUTPUT_TAIL_BYTES), workdir);
    observe::read(
        seed,
        &out_dir,
        ProcessEnd {
            exit_code: confined.exit.code,
            signal: confined.exit.signal,
            killed_for,
            duration_s: confined.duration_s,
            peak_mb: confined.peak_mb,
        },
        tail,
    )
}

/// What a script printed with the machine-specific parts of paths taken out: the scratch
/// directory becomes `.` and an installed package's path starts at `site-packages/`. The output
/// goes into prompts and reports: it should read the same on every machine and every run (a
/// recorded model answer is found again by the prompt's hash).
pub fn neutral_paths(output: &str, workdir: &Path) -> String {
    static SITE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r#"(?:/[^\s"'/]+)+/(?:site|dist)-packages/"#).unwrap()
    });
    let text = output.replace(&workdir.display().to_string(), ".");
    SITE.replace_all(&text, "site-packages/").into_owned()
}

#[cfg(test)]
mod tests {
    #[test]
    fn paths_in_output_are_made_neutral() {
        let out = "  File \"/tmp/reprolab-1-repro-ab/reproduce.py\", line 3\n  File \"/root/.cache/reprolab/envs/py311-x/lib/python3.11/site-packages/torch/nn/functional.py\", line 9";
        assert_eq!(
            super::neutral_paths(out, Path::new("/tmp/reprolab-1-repro-ab")),
            "  File \"./reproduce.py\", line 3\n  File \"site-packages/torch/nn/functional.py\", line 9"
        );
    }

    use super::*;

    #[test]
    fn a_warm_child_killed_by_a_signal_ends_as_a_fresh_process_would() {
        let sig = |s| Exit {
            code: None,
            signal: Some(s),
        };
        let e = as_fresh_process(sig(11), false);
        assert_eq!((e.code, e.signal), (Some(139), None));
        // Killed for a limit: the whole tree died of the signal, the sandbox process included.
        let e = as_fresh_process(sig(15), true);
        assert_eq!((e.code, e.signal), (None, Some(15)));
        let e = as_fresh_process(
            Exit {
                code: Some(1),
                signal: None,
            },
            false,
        );
        assert_eq!((e.code, e.signal), (Some(1), None));
    }

    #[test]
    fn comparable_observations_forget_times_and_scratch_paths() {
        let obs = |dir: &str, secs: f64| {
            let mut o = not_started(3, format!("File \"{dir}/reproduce.py\", line 4"));
            o.duration_s = secs;
            o.peak_mb = 7;
            o
        };
        let warm = obs("/tmp/reprolab-1-a/pool/w0/e3", 0.2);
        let cold = obs("/tmp/reprolab-1-b/repro-x", 2.0);
        assert_ne!(warm, cold);
        assert_eq!(warm.comparable(), cold.comparable());
        assert_eq!(
            warm.comparable().output_tail,
            "File \"reproduce.py\", line 4"
        );
    }

    #[test]
    fn the_key_changes_with_every_input() {
        let l = default_limits();
        let base = run_key("print(1)", 1, "env", &l, &[]);
        assert_eq!(base, run_key("print(1)", 1, "env", &l, &[]));
        assert_ne!(base, run_key("print(2)", 1, "env", &l, &[]));
        assert_ne!(base, run_key("print(1)", 2, "env", &l, &[]));
        assert_ne!(base, run_key("print(1)", 1, "env2", &l, &[]));
        assert_ne!(
            base,
            run_key(
                "print(1)",
                1,
                "env",
                &Limits {
                    timeout_s: 5.0,
                    ..l
                },
                &[]
            )
        );
        assert_ne!(
            base,
            run_key("print(1)", 1, "env", &l, &[PathBuf::from("/repo")])
        );
    }
}
