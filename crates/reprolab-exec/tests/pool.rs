//! The warm pool and confined commands with real workers of the managed environment
//! (provisioned on first use, like every test that trains): workers start only when a task finds
//! none idle, and cancelling an evaluation is dropping its future: a queued one never starts, a
//! started one is ended at once (its processes killed), and the warm worker goes on with what is
//! still wanted.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use reprolab_core::manifest::{Framework, KerasBackend, Limits};
use reprolab_exec::pool::{Job, WorkerPool};
use reprolab_exec::{EnvOptions, Mode};
use serde_json::json;

/// A subject that, unless told to return at once, runs `sh -c 'sleep 120; :' TAG`: a process
/// the test finds by its tag.
const TRAIN: &str = r#"
import subprocess

def train(config, seed):
    if config["tag"]:
        subprocess.run(["sh", "-c", "sleep 120; :", config["tag"]])
    return {"search": 0.5, "holdout": 0.5}
"#;

fn job(dir: &Path, tag: &str) -> Job {
    Job {
        subject_dir: dir.to_path_buf(),
        entry: "train.py:train".into(),
        framework: Framework::Pytorch,
        backend: KerasBackend::default(),
        config: json!({ "tag": tag }),
        seed: 0,
        mode: Mode::Eval,
        limits: Limits {
            timeout_s: 300.0,
            memory_mb: 4096,
            output_mb: 4,
            disk_mb: 1024,
        },
        prune: None,
    }
}

/// Processes with `tag` as a whole argument of their command line.
fn tagged(tag: &str) -> usize {
    reprolab_exec::proctree::with_argument(tag).len()
}

/// Wait (at most `limit`) until `ready`; false if it never was.
async fn wait_for(limit: Duration, ready: impl Fn() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if ready() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    ready()
}

#[tokio::test]
async fn workers_start_only_when_a_task_finds_none_idle() {
    let env = reprolab_exec::env::ensure(&EnvOptions::default(), &|m| eprintln!("{m}"))
        .unwrap_or_else(|e| panic!("the managed environment: {e}"));
    let subject = tempfile::tempdir().unwrap();
    std::fs::write(subject.path().join("train.py"), TRAIN).unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let pool = Arc::new(WorkerPool::start(env, 2, scratch.path().to_path_buf()));
    assert_eq!(
        pool.started(),
        0,
        "a pool starts no worker before its first task"
    );
    for _ in 0..3 {
        let done = pool.eval(job(subject.path(), "")).await;
        assert!(done.outcome.is_ok(), "{:?}", done.outcome);
    }
    assert_eq!(
        pool.started(),
        1,
        "tasks one after another share one warm worker"
    );

    // Two at once start the second worker; a third waits for one of them (the pool's size).
    let pid = std::process::id();
    let tags: Vec<String> = (0..3).map(|i| format!("demand{i}-{pid}")).collect();
    let running: Vec<_> = tags
        .iter()
        .map(|tag| {
            let (pool, job) = (pool.clone(), job(subject.path(), tag));
            tokio::spawn(async move { pool.eval(job).await })
        })
        .collect();
    let busy = |n: usize| tags.iter().filter(|t| tagged(t) > 0).count() == n;
    assert!(
        wait_for(Duration::from_secs(180), || busy(2)).await,
        "two evaluations never ran at once"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(busy(2), "a third ran beside them");
    assert_eq!(pool.started(), 2);
    for r in running {
        r.abort();
    }
    assert!(
        wait_for(Duration::from_secs(20), || busy(0)).await,
        "the cancelled evaluations' processes still run"
    );
    pool.stop().await;
}

#[tokio::test]
async fn a_dropped_evaluation_is_ended_or_never_started_and_the_worker_goes_on() {
    let env = reprolab_exec::env::ensure(&EnvOptions::default(), &|m| eprintln!("{m}"))
        .unwrap_or_else(|e| panic!("the managed environment: {e}"));
    let subject = tempfile::tempdir().unwrap();
    std::fs::write(subject.path().join("train.py"), TRAIN).unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let pool = Arc::new(WorkerPool::start(env, 1, scratch.path().to_path_buf()));
    let pid = std::process::id();
    let (running, queued) = (format!("running-{pid}"), format!("queued-{pid}"));

    let first = tokio::spawn({
        let (pool, job) = (pool.clone(), job(subject.path(), &running));
        async move { pool.eval(job).await }
    });
    assert!(
        wait_for(Duration::from_secs(180), || tagged(&running) > 0).await,
        "the first evaluation never started"
    );
    // One worker, busy: the second waits in the queue.
    let second = tokio::spawn({
        let (pool, job) = (pool.clone(), job(subject.path(), &queued));
        async move { pool.eval(job).await }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    second.abort();
    first.abort();
    assert!(
        wait_for(Duration::from_secs(20), || tagged(&running) == 0).await,
        "the cancelled evaluation's processes still run"
    );
    let done = pool.eval(job(subject.path(), "")).await;
    assert!(done.outcome.is_ok(), "{:?}", done.outcome);
    assert_eq!(tagged(&queued), 0, "the cancelled queued evaluation ran");
    pool.stop().await;
}

#[tokio::test]
async fn a_dropped_command_run_leaves_nothing_running() {
    let env = reprolab_exec::env::ensure(&EnvOptions::default(), &|m| eprintln!("{m}"))
        .unwrap_or_else(|e| panic!("the managed environment: {e}"));
    let workdir = tempfile::tempdir().unwrap();
    let tag = format!("command-{}", std::process::id());
    let argv: Vec<std::ffi::OsString> = ["sh", "-c", "sleep 120; :", tag.as_str()]
        .iter()
        .map(Into::into)
        .collect();
    let limits = job(workdir.path(), "").limits;
    let run = tokio::spawn({
        let dir = workdir.path().to_path_buf();
        async move { reprolab_exec::script::run_confined(&env, &argv, &dir, &dir, &limits, &[]).await }
    });
    assert!(
        wait_for(Duration::from_secs(60), || tagged(&tag) > 0).await,
        "the command never started"
    );
    run.abort();
    assert!(
        wait_for(Duration::from_secs(20), || tagged(&tag) == 0).await,
        "the cancelled command still runs"
    );
}
