//! `--backend ray` against a real Ray cluster on loopback: a head and a second worker node on
//! this machine (`ray start --block`, from the managed environment's Ray), and a local head the
//! command starts itself. Results, cache keys and outcomes must be those of the local backend;
//! a killed slot is retried; a killed reprolab resumes without retraining.
//!
//! Skipped, with the reason printed, when Ray cannot be installed (no network on first use).
//! The tests share one cluster and take turns (a 2-core machine has one CPU per node).

mod common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use common::*;
use reprolab_llm::fake::{FakeReply, FakeServer, Flavor};
use serde_json::{Value, json};

/// A secret in the cluster's own environment, which subject code must not see.
const CLUSTER_SECRET: (&str, &str) = ("MY_API_KEY", "sk-cluster-secret");

struct Cluster {
    address: String,
    _dir: tempfile::TempDir,
}

static CLUSTER: OnceLock<Result<Cluster, String>> = OnceLock::new();
static TURN: Mutex<()> = Mutex::new(());

/// The shared cluster, or why there is none (then the test prints it and passes).
fn cluster() -> Option<&'static Cluster> {
    match CLUSTER.get_or_init(start_cluster) {
        Ok(c) => Some(c),
        Err(why) => {
            eprintln!("SKIPPED: {why}");
            None
        }
    }
}

/// The cluster to oneself: tests take turns on it (some kill its slots or count its raylets),
/// while their local halves, which need no turn, run beside another test's turn.
fn turn() -> MutexGuard<'static, ()> {
    TURN.lock().unwrap_or_else(|e| e.into_inner())
}

/// The managed environment's `ray` command (installing Ray on first use), or why not.
fn ray_command() -> Result<PathBuf, String> {
    let tmp = tempfile::tempdir().unwrap();
    let out = reprolab(tmp.path())
        .args(["env", "--ray"])
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!(
            "ray cannot be installed here: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Start a one-CPU head on loopback for the test run, with `auth` (`RAY_AUTH_MODE` and, for
/// `token`, `RAY_AUTH_TOKEN`) in its environment; its address.
fn start_head(ray: &Path, dir: &Path, auth: &[(&str, &str)]) -> Result<String, String> {
    let address = format!("127.0.0.1:{}", free_port());
    let mut head = Command::new(ray);
    head.args(["start", "--head", "--block", "--node-ip-address=127.0.0.1"])
        .arg(format!("--port={}", address.rsplit(':').next().unwrap()))
        .args([
            "--num-cpus=1",
            "--include-dashboard=false",
            "--disable-usage-stats",
        ])
        .arg(format!("--temp-dir={}", dir.display()))
        .envs(auth.iter().copied());
    cluster_env(&mut head);
    spawn_for_the_test_run(head, "Ray runtime started")?;
    Ok(address)
}

/// What every process of a test cluster gets: no usage statistics, a secret that subject code
/// must not see, no address of another cluster, output read for readiness.
fn cluster_env(cmd: &mut Command) {
    cmd.env("RAY_USAGE_STATS_ENABLED", "0")
        .env(CLUSTER_SECRET.0, CLUSTER_SECRET.1)
        .env_remove("RAY_ADDRESS")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
}

fn start_cluster() -> Result<Cluster, String> {
    let ray = ray_command()?;
    let dir = tempfile::Builder::new()
        .prefix("rt")
        .tempdir()
        .map_err(|e| e.to_string())?;
    let no_auth = [("RAY_AUTH_MODE", "disabled")];
    let address = start_head(&ray, dir.path(), &no_auth)?;
    let mut node = Command::new(&ray);
    node.args([
        "start",
        "--block",
        "--node-ip-address=127.0.0.1",
        "--num-cpus=1",
    ])
    .arg(format!("--address={address}"))
    .envs(no_auth);
    cluster_env(&mut node);
    spawn_for_the_test_run(node, "Ray runtime started")?;
    Ok(Cluster { address, _dir: dir })
}

/// Start `cmd` from a thread that lives as long as the test process, with a parent-death
/// signal: the cluster stops when the tests end, however they end. Waits for `ready` in its
/// output.
fn spawn_for_the_test_run(mut cmd: Command, ready: &'static str) -> Result<(), String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        // SAFETY: prctl is async-signal-safe.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM as libc::c_ulong);
                Ok(())
            });
        }
        let child: std::io::Result<Child> = cmd.spawn();
        match child {
            Err(e) => {
                let _ = tx.send(Err(e.to_string()));
            }
            Ok(mut child) => {
                let out = BufReader::new(child.stdout.take().unwrap());
                let mut seen = Vec::new();
                let mut sent = false;
                for line in out.lines().map_while(Result::ok) {
                    if !sent && line.contains(ready) {
                        let _ = tx.send(Ok(()));
                        sent = true;
                    }
                    seen.push(line);
                }
                if !sent {
                    let _ = tx.send(Err(format!("ray start exited: {}", seen.join("\n"))));
                }
                let _ = child.wait();
                loop {
                    std::thread::park(); // keep the parent-death signal's parent alive
                }
            }
        }
    });
    rx.recv_timeout(Duration::from_secs(180))
        .map_err(|_| "ray start did not report readiness within 180 s".to_string())?
}

/// reprolab with Ray's settings for the test cluster.
fn on_ray(dir: &Path, cluster: &Cluster) -> Command {
    with_ray(reprolab(dir), cluster)
}

/// `cmd` with Ray's settings for the test cluster.
fn with_ray(mut cmd: Command, cluster: &Cluster) -> Command {
    cmd.args(["--backend", "ray", "--ray-address", &cluster.address])
        .env_remove("REPROLAB_WORKERS") // one slot per CPU of the cluster, the backend's default
        .env("RAY_AUTH_MODE", "disabled");
    cmd
}

fn store_keys(store: &Path) -> BTreeMap<String, String> {
    let db = rusqlite::Connection::open(store).unwrap();
    let mut stmt = db
        .prepare("SELECT key, outcome FROM evaluations ORDER BY key")
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

fn without_durations(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| !k.contains("duration") && !k.ends_with("_s"))
                .map(|(k, x)| (k.clone(), without_durations(x)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(without_durations).collect()),
        other => other.clone(),
    }
}

/// Runs of an eval that were trained, not answered from the store.
fn trained(v: &Value) -> u64 {
    v["runs"].as_array().unwrap().len() as u64 - v["cached"].as_u64().unwrap()
}

#[test]
fn eval_on_a_two_node_cluster_matches_the_local_backend_and_its_cache_keys() {
    let Some(cluster) = cluster() else {
        return;
    };
    let local_dir = tempfile::tempdir().unwrap();
    let ray_dir = tempfile::tempdir().unwrap();
    let args = ["eval", "--json", "--runs", "4", "-v"];
    let local = run(reprolab(local_dir.path())
        .args(args)
        .arg(subject("digits-mlp")));
    let _turn = turn();
    let on_cluster = run(on_ray(ray_dir.path(), cluster)
        .args(args)
        .arg(subject("digits-mlp")));
    assert!(on_cluster.status.success());
    let stderr = String::from_utf8_lossy(&on_cluster.stderr);
    assert!(
        stderr.contains("2 slots") && stderr.contains("(2 node(s))"),
        "{stderr}"
    );
    let (l, r) = (json(&local), json(&on_cluster));
    assert_eq!(trained(&r), 4);
    assert_eq!(
        outcomes(&l),
        outcomes(&r),
        "digits-mlp is deterministic per seed"
    );
    let (lk, rk) = (
        store_keys(&local_dir.path().join("store.db")),
        store_keys(&ray_dir.path().join("store.db")),
    );
    assert_eq!(lk.len(), 4);
    assert_eq!(lk, rk, "same cache keys, same stored outcomes");

    // Run again on the local backend against the Ray store: everything is cached.
    let again = json(&run(reprolab(ray_dir.path())
        .args(["eval", "--json", "--runs", "4"])
        .arg(subject("digits-mlp"))));
    assert_eq!(again["cached"], 4);
}

#[test]
fn every_outcome_kind_is_recorded_on_ray_as_locally() {
    let Some(cluster) = cluster() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let cfg = config_file(tmp.path(), "c.json", json!({"behavior": "by_seed"}));
    let args = |cmd: &mut Command| {
        cmd.args(["eval", "--json", "--runs", "11", "--no-cache", "--config"])
            .arg(&cfg)
            .arg(fixture("outcomes"));
    };
    let mut local = reprolab(tmp.path());
    args(&mut local);
    let mut remote = on_ray(tmp.path(), cluster);
    args(&mut remote);
    let l = json(&run(&mut local));
    let _turn = turn();
    let r = json(&run(&mut remote));
    let kinds = |v: &Value| -> Vec<String> {
        outcomes(v)
            .iter()
            .map(|o| o["status"].as_str().unwrap().to_string())
            .collect()
    };
    let network = if reprolab_exec::sandbox::isolation().network {
        "exception"
    } else {
        "ok"
    };
    assert_eq!(kinds(&r), [&BY_SEED_KINDS[..], &[network, "ok"]].concat());
    assert_eq!(kinds(&l), kinds(&r));
    let r = outcomes(&r);
    assert_eq!(r[1]["message"], "the subject failed on purpose");
    assert_eq!(
        r[10]["search"], 0.0,
        "the cluster's {} never reaches subject code",
        CLUSTER_SECRET.0
    );
}

#[test]
fn a_command_template_subject_runs_on_ray_with_the_same_outcomes() {
    let Some(cluster) = cluster() else {
        return;
    };
    // The outcomes fixture as a plain script run through its command template, in a directory
    // of its own (a Ray node gets the subject directory and nothing beside it).
    let tmp = tempfile::tempdir().unwrap();
    let subject_dir = tmp.path().join("outcomes-command");
    std::fs::create_dir(&subject_dir).unwrap();
    for f in ["train.py", "config.json"] {
        std::fs::copy(fixture("outcomes").join(f), subject_dir.join(f)).unwrap();
    }
    let manifest = std::fs::read_to_string(fixture("outcomes").join("reprolab.toml"))
        .unwrap()
        .replace(
            "callable = \"train.py:train\"",
            "command = \"{python} train.py --config {config} --seed {seed} --out {result}\"",
        );
    std::fs::write(subject_dir.join("reprolab.toml"), manifest).unwrap();
    let cfg = config_file(tmp.path(), "c.json", json!({"behavior": "by_seed"}));
    let args = |cmd: &mut Command| {
        cmd.args(["eval", "--json", "--runs", "8", "--no-cache", "--config"])
            .arg(&cfg)
            .arg(&subject_dir);
    };
    let mut local = reprolab(tmp.path());
    args(&mut local);
    let mut remote = on_ray(tmp.path(), cluster);
    args(&mut remote);
    let kinds = |v: &Value| -> Vec<String> {
        outcomes(v)
            .iter()
            .map(|o| o["status"].as_str().unwrap().to_string())
            .collect()
    };
    let l = json(&run(&mut local));
    let _turn = turn();
    let r = json(&run(&mut remote));
    assert_eq!(kinds(&r), BY_SEED_KINDS[..8]);
    assert_eq!(kinds(&l), kinds(&r));
    assert_eq!(outcomes(&l)[0], outcomes(&r)[0]);
}

#[test]
fn repair_searches_the_same_trials_on_ray_as_locally() {
    let Some(cluster) = cluster() else {
        return;
    };
    let d7 = repo().join("benchmarks/faults/real/D7");
    let args = [
        "repair", "--json", "--engine", "random", "--trials", "5", "--runs", "3",
    ];
    let local_dir = tempfile::tempdir().unwrap();
    let ray_dir = tempfile::tempdir().unwrap();
    let local = json(&run(reprolab(local_dir.path()).args(args).arg(&d7)));
    let _turn = turn();
    let remote = json(&run(on_ray(ray_dir.path(), cluster).args(args).arg(&d7)));
    // The same trials, values and validation; only durations differ.
    for part in ["search", "validation"] {
        assert_eq!(
            without_durations(&local["run"][part]),
            without_durations(&remote["run"][part]),
            "{part}"
        );
    }
}

#[test]
fn pruned_trials_end_the_same_on_ray_as_locally() {
    let Some(cluster) = cluster() else {
        return;
    };
    // The thresholds travel with each request and the slot runs the same worker: the same
    // trials are pruned at the same epochs on both backends.
    let d7 = repo().join("benchmarks/faults/real/D7");
    let args = [
        "repair", "--json", "--engine", "random", "--trials", "12", "--runs", "3", "--seed", "2",
        "--prune", "median",
    ];
    let local_dir = tempfile::tempdir().unwrap();
    let ray_dir = tempfile::tempdir().unwrap();
    let local = json(&run(reprolab(local_dir.path()).args(args).arg(&d7)));
    let _turn = turn();
    let remote = json(&run(on_ray(ray_dir.path(), cluster).args(args).arg(&d7)));
    let pruned = |v: &Value| {
        v["run"]["search"]["trials"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t.get("pruned").is_some())
            .count()
    };
    assert!(pruned(&local) > 0, "nothing pruned locally");
    assert_eq!(pruned(&local), pruned(&remote));
    assert_eq!(
        without_durations(&local["run"]["search"]),
        without_durations(&remote["run"]["search"])
    );
}

#[test]
fn bench_repair_runs_cells_concurrently_on_ray_and_writes_its_report() {
    let Some(cluster) = cluster() else {
        return;
    };
    let _turn = turn();
    let tmp = tempfile::tempdir().unwrap();
    let out_dir = tmp.path().join("bench");
    let out = run(on_ray(tmp.path(), cluster)
        .args([
            "bench",
            "repair",
            "--engines",
            "random,bohb",
            "--cells",
            "2",
            "--budgets",
            "2x",
            "--repeats",
            "1",
            "--runs",
            "3",
            "--only",
            "D7",
            "--out",
        ])
        .arg(&out_dir)
        .arg(repo().join("benchmarks/faults/real")));
    assert!(out.status.success());
    let results = std::fs::read_to_string(out_dir.join("results.jsonl")).unwrap();
    assert_eq!(results.lines().count(), 2, "one row per cell, each once");
    assert!(out_dir.join("report.md").exists());
}

#[test]
fn reproduce_judges_scripts_on_ray_as_locally() {
    let Some(cluster) = cluster() else {
        return;
    };
    // Bundled bugs of each kind of symptom (error, Keras error, silent NaN): the verdict rows
    // match the local backend's, runs and all.
    let (local_dir, ray_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let bench = |mut cmd: Command, dir: &Path| {
        cmd.args(["bench", "reproduce"])
            .arg(repo().join("benchmarks/bugs"))
            .args(["--verify-only", "--json", "--only"])
            .arg("02-bce-target-size,14-keras-adam-lr-kwarg,20-nan-log-zero-aggregation")
            .arg("--out")
            .arg(dir.join("bench"));
        let out = run(&mut cmd);
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        without_durations(&json(&out))
    };
    let local = bench(reprolab(local_dir.path()), local_dir.path());
    let _turn = turn();
    let remote = bench(on_ray(ray_dir.path(), cluster), ray_dir.path());
    assert_eq!(local.as_array().unwrap().len(), 3);
    assert_eq!(local, remote);
    let runs = |dir: &Path| {
        reprolab_store::Store::open(&dir.join("store.db"))
            .unwrap()
            .count_script_runs()
            .unwrap()
    };
    assert_eq!(runs(ray_dir.path()), runs(local_dir.path()));

    // A script importing from --repo: the directory travels to the node with the script.
    let repo_dir = ray_dir.path().join("repo");
    std::fs::create_dir(&repo_dir).unwrap();
    std::fs::write(
        repo_dir.join("shapes.py"),
        "import torch\n\ndef loss():\n    return torch.nn.BCELoss()(torch.rand(4, 1), torch.ones(4))\n",
    )
    .unwrap();
    let script = ray_dir.path().join("s.py");
    // It says where it ran: the directory above its work directory (a Ray slot's or a local
    // worker's scratch).
    std::fs::write(
        &script,
        "import os\nprint('ran under', os.path.dirname(os.getcwd()))\nimport shapes\nshapes.loss()\n",
    )
    .unwrap();
    let report = repo().join("benchmarks/bugs/02-bce-target-size/report.md");
    let verify = |mut cmd: Command, dir: &Path| {
        cmd.args([
            "reproduce",
            "verify",
            "--json",
            "--runs",
            "2",
            "--no-cache",
            "--repo",
        ])
        .arg(&repo_dir)
        .arg("--out")
        .arg(dir.join("out"))
        .arg(&report)
        .arg(&script);
        let verdict = without_durations(&json(&run(&mut cmd))["verdict"]);
        let observed = std::fs::read_to_string(dir.join("out/observed.txt")).unwrap();
        (verdict, observed)
    };
    let (l, local_observed) = verify(reprolab(local_dir.path()), local_dir.path());
    let (r, ray_observed) = verify(on_ray(ray_dir.path(), cluster), ray_dir.path());
    assert_eq!(r["showing"], 2, "{r}");
    assert_eq!(l, r);
    assert!(
        ray_observed.contains("ran under /tmp/reprolab-ray-slot-")
            && !local_observed.contains("reprolab-ray-slot-"),
        "{ray_observed}"
    );
}

#[test]
fn paper_probes_and_smoke_runs_run_on_ray_nodes_with_the_local_verdicts() {
    let Some(cluster) = cluster() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir(dir.join("code")).unwrap();
    std::fs::write(
        dir.join("paper.md"),
        "# Tiny\nWe set the smoothing factor to 0.1.\nThe loss averages over the batch.\n",
    )
    .unwrap();
    std::fs::write(dir.join("code/sm.py"), "EPSILON = 0.1\n").unwrap();
    // C1's probe imports the code and passes; C2's fails, saying where the code was: a Ray
    // node unpacks it under its own temporary directory.
    config_file(
        dir,
        "fingerprint.json",
        json!({"criteria": [
            {"id": "C1", "fact": "eps = 0.1", "scope": "loss", "category": "hyperparameter",
             "source": "We set the smoothing factor to 0.1.",
             "checks": [{"probe": "from sm import EPSILON\nassert EPSILON == 0.1"}]},
            {"id": "C2", "fact": "the loss is a batch mean", "scope": "loss", "category": "algorithm",
             "source": "The loss averages over the batch.",
             "checks": [{"probe": "import os\nassert os.path.isfile('sm.py') and False, 'ran in ' + os.getcwd()"}]}
        ]}),
    );
    let verify = |mut cmd: Command| {
        let out = run(cmd.args([
            "--json",
            "--no-cache",
            "paper",
            "verify",
            "paper.md",
            "code",
        ]));
        assert_eq!(out.status.code(), Some(1), "C2 fails: {out:?}");
        let v = json(&out);
        let verdicts = v["verification"]["verdicts"].as_array().unwrap().clone();
        let evidence = verdicts[1]["evidence"].to_string();
        let outcomes: Vec<Value> = verdicts.iter().map(|d| d["outcome"].clone()).collect();
        (outcomes, evidence)
    };
    let (local, local_evidence) = verify(reprolab(dir));
    let _turn = turn();
    let (remote, remote_evidence) = verify(on_ray(dir, cluster));
    assert_eq!(local, vec![json!("pass"), json!("fail")]);
    assert_eq!(local, remote);
    assert!(
        remote_evidence.contains("reprolab-ray-subjects")
            && !local_evidence.contains("reprolab-ray-subjects"),
        "{remote_evidence} / {local_evidence}"
    );

    // `paper implement`'s smoke run: the entry passes only where a Ray node unpacked the code.
    let train = "import os\nassert 'reprolab-ray-subjects' in os.getcwd(), os.getcwd()\nprint('loss: 0.5')\n";
    let server = FakeServer::start_background(
        Flavor::OpenAi,
        [
            FakeReply::Text(
                json!({"files": [{"path": "sm.py", "purpose": "smoothing"},
                                 {"path": "train.py", "purpose": "entry"}],
                       "entry": "train.py"})
                .to_string(),
            ),
            FakeReply::Text("```python\nEPSILON = 0.1\n```\n".into()),
            FakeReply::Text(format!("```python\n{train}```\n")),
        ],
    );
    let mut implement = with_ray(reprolab_without_llm_settings(dir), cluster);
    let out = run(implement.args([
        "--json",
        "paper",
        "implement",
        "paper.md",
        "--out",
        "impl",
        "--rounds",
        "1",
        "--llm",
        &format!("openai:fake@{}", server.base_url()),
    ]));
    let v = json(&out);
    let round = &v["implementation"]["rounds"][0];
    assert_eq!(round["smoke"]["ok"], true, "{round}");
}

/// Dropping an evaluation's future cancels it: its slot kills the training at once, and the
/// slot then runs the next evaluation. (No command drops evaluations it still wants, so this
/// drives the executor itself.)
#[test]
fn a_dropped_evaluation_is_ended_on_its_slot_which_goes_on() {
    let Some(cluster) = cluster() else {
        return;
    };
    let _turn = turn();
    tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(cancel_on_a_slot(&cluster.address));
}

async fn cancel_on_a_slot(address: &str) {
    use reprolab_exec::{EvalRequest, Executor, Mode, RayExecutor, RayOptions};
    let env = reprolab_exec::env::ensure(&Default::default(), &|m| eprintln!("{m}")).unwrap();
    let ray = RayExecutor::start(
        &env,
        &RayOptions {
            address: Some(address.to_string()),
            slots: Some(1),
        },
    )
    .await
    .unwrap();
    let subject = tempfile::tempdir().unwrap();
    std::fs::write(
        subject.path().join("train.py"),
        "import subprocess\n\ndef train(config, seed):\n    if config['tag']:\n        subprocess.run(['sh', '-c', 'sleep 120; :', config['tag']])\n    return {'search': 0.5, 'holdout': 0.5}\n",
    )
    .unwrap();
    let request = |tag: &str| EvalRequest {
        subject_dir: subject.path().to_path_buf(),
        source_hash: format!("cancel-test-{}", std::process::id()),
        entry: reprolab_core::manifest::Entry::Callable {
            file: "train.py".into(),
            function: "train".into(),
        },
        framework: reprolab_core::manifest::Framework::Pytorch,
        backend: Default::default(),
        config: json!({ "tag": tag }),
        seed: 0,
        mode: Mode::Eval,
        limits: reprolab_core::manifest::Limits {
            timeout_s: 300.0,
            memory_mb: 4096,
            output_mb: 4,
            disk_mb: 1024,
        },
        prune: None,
    };
    let tag = format!("ray-cancel-{}", std::process::id());
    let ray = std::sync::Arc::new(ray);
    let first = tokio::spawn({
        let (ray, request) = (ray.clone(), request(&tag));
        async move { ray.run(request).await }
    });
    let waited = Instant::now();
    while tagged(&tag).is_empty() {
        assert!(
            waited.elapsed() < Duration::from_secs(180),
            "it never started"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    first.abort();
    let waited = Instant::now();
    while !tagged(&tag).is_empty() {
        assert!(
            waited.elapsed() < Duration::from_secs(30),
            "the cancelled evaluation still runs on its slot"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let next = ray.run(request("")).await;
    assert!(next.outcome.is_ok(), "{:?}", next.outcome);
    ray.shutdown().await;
}

#[test]
fn a_cluster_with_token_auth_admits_its_token_which_subject_code_never_sees() {
    if cluster().is_none() {
        return;
    }
    let _turn = turn();
    let ray = ray_command().unwrap();
    let dir = tempfile::Builder::new().prefix("rt").tempdir().unwrap();
    let token = format!(
        "{:032x}",
        u128::from(std::process::id()) * 0x9e37_79b9_7f4a_7c15
    );
    let address = start_head(
        &ray,
        dir.path(),
        &[("RAY_AUTH_MODE", "token"), ("RAY_AUTH_TOKEN", &token)],
    )
    .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let cfg = config_file(tmp.path(), "c.json", json!({ "behavior": "secrets" }));
    let eval = |token: Option<&str>| {
        let mut cmd = reprolab(tmp.path());
        cmd.args(["--json", "eval", "--runs", "1", "--no-cache", "--config"])
            .arg(&cfg)
            .arg(fixture("outcomes"))
            .args(["--backend", "ray", "--ray-address", &address])
            .env("RAY_AUTH_MODE", "token");
        match token {
            Some(t) => cmd.env("RAY_AUTH_TOKEN", t),
            None => cmd.env_remove("RAY_AUTH_TOKEN"),
        };
        run(&mut cmd)
    };
    // The token reaches the driver (RAY_* variables do), not the subject: it counts the
    // variables named like credentials that it can see.
    let out = eval(Some(&token));
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let v = json(&out);
    assert_eq!(v["runs"][0]["outcome"]["search"], 0.0, "{v}");
    let refused = eval(None);
    assert_eq!(refused.status.code(), Some(3), "{refused:?}");
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        said.contains(&address) && said.contains("RAY_AUTH_TOKEN"),
        "{said}"
    );
}

#[test]
fn codegen_run_judges_every_kind_of_answer_on_ray_as_locally() {
    let Some(cluster) = cluster() else {
        return;
    };
    // The codegen fixture: passing, failing, crashing, looping, forking, memory-hungry and
    // flooding answers, and repository tasks (their files travel with each sample).
    let tmp = tempfile::tempdir().unwrap();
    let codegen = |mut cmd: Command, out: &str| {
        cmd.args([
            "codegen",
            "run",
            "--json",
            "--memory-mb",
            "300",
            "--output-mb",
            "1",
        ])
        // 20 s, not the local test's 8: the forking answer (200 children of a torch process)
        // takes 3.6 s alone locally and 5.5 s in a slot, whose Python watchdog reads the tree's
        // PSS; two samples at once on a loaded 2-core machine passed 8 s.
        .args(["--timeout-min", "20"])
        .arg(fixture("codegen").join("tasks.jsonl"))
        .arg("--generations")
        .arg(fixture("codegen").join("generations.jsonl"))
        .arg("--out")
        .arg(tmp.path().join(out));
        let output = run(&mut cmd);
        assert_eq!(output.status.code(), Some(0), "{output:?}");
        let mut verdicts: Vec<(String, u64, String, String)> =
            std::fs::read_to_string(tmp.path().join(out).join("results.jsonl"))
                .unwrap()
                .lines()
                .map(|l| {
                    let r: Value = serde_json::from_str(l).unwrap();
                    (
                        r["task_id"].as_str().unwrap().to_string(),
                        r["sample"].as_u64().unwrap(),
                        r["status"].as_str().unwrap().to_string(),
                        r["failure"]["type"].as_str().unwrap_or("").to_string(),
                    )
                })
                .collect();
        verdicts.sort();
        (verdicts, json(&output))
    };
    let (local_dir, ray_dir) = (tmp.path().join("l"), tmp.path().join("r"));
    std::fs::create_dir_all(&local_dir).unwrap();
    std::fs::create_dir_all(&ray_dir).unwrap();
    let (local, _) = codegen(reprolab(&local_dir), "local");
    let _turn = turn();
    let (remote, summary) = codegen(on_ray(&ray_dir, cluster), "ray");
    assert_eq!(local.len(), 18);
    assert!(
        remote.iter().any(|v| v.2 == "pass") && remote.iter().any(|v| v.2 != "pass"),
        "{remote:?}"
    );
    assert_eq!(local, remote);
    assert_eq!(summary["runners_started"], true);
    let info: Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.path().join("ray/run.json")).unwrap())
            .unwrap();
    assert_eq!(info["mode"], "ray", "{info}");
}

fn pids_where(keep: impl Fn(i32) -> bool) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| keep(pid))
        .collect()
}

/// Processes whose command line starts with `prefix` (Ray names its actors' processes
/// `ray::Class.method` while they run a method).
fn processes_named(prefix: &str) -> Vec<i32> {
    pids_where(|pid| {
        std::fs::read(format!("/proc/{pid}/cmdline"))
            .is_ok_and(|c| String::from_utf8_lossy(&c).starts_with(prefix))
    })
}

/// The raylet count once it is back to `expected` (or after 30 s): a stopped head's processes
/// take a moment to go.
fn raylets_after_settling(expected: usize) -> usize {
    let deadline = Instant::now() + Duration::from_secs(30);
    while raylets() > expected && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
    }
    raylets()
}

/// Wait until the store at `path` holds at least `n` evaluations; how many it holds then.
fn stored_at_least(path: &Path, n: u64) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        assert!(Instant::now() < deadline, "no evaluation finished in time");
        std::thread::sleep(Duration::from_millis(100));
        let stored = reprolab_store::Store::open(path)
            .and_then(|s| s.count_evaluations())
            .unwrap_or(0);
        if stored >= n {
            return stored;
        }
    }
}

fn raylets() -> usize {
    pids_where(|pid| {
        std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == "raylet")
    })
    .len()
}

#[test]
fn a_slot_killed_mid_training_is_restarted_and_its_evaluation_retried() {
    let Some(cluster) = cluster() else {
        return;
    };
    let _turn = turn();
    let tmp = tempfile::tempdir().unwrap();
    let cfg = config_file(tmp.path(), "slow.json", json!({"behavior": "slow"}));
    let child = on_ray(tmp.path(), cluster)
        .args(["eval", "--json", "--runs", "2", "--config"])
        .arg(&cfg)
        .arg(fixture("outcomes"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(180);
    let victim = loop {
        assert!(Instant::now() < deadline, "no slot started an evaluation");
        if let Some(&pid) = processes_named("ray::Slot.run").first() {
            break pid;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    std::thread::sleep(Duration::from_millis(500)); // mid-training
    // SAFETY: kill has no memory-safety preconditions.
    unsafe { libc::kill(victim, libc::SIGKILL) };
    let out = child.wait_with_output().unwrap();
    eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    let v = json(&out);
    assert_eq!(
        v["failed"], 0,
        "the killed slot's evaluation ran again on its restarted slot: {v}"
    );
    assert_eq!(trained(&v), 2);
}

#[test]
fn a_killed_reprolab_resumes_on_ray_without_retraining() {
    let Some(cluster) = cluster() else {
        return;
    };
    let _turn = turn();
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store.db");
    let cfg = config_file(tmp.path(), "slow.json", json!({"behavior": "slow"}));
    let args = |cmd: &mut Command| {
        cmd.args(["eval", "--json", "--runs", "6", "--config"])
            .arg(&cfg)
            .arg(fixture("outcomes"));
    };
    let mut cmd = on_ray(tmp.path(), cluster);
    args(&mut cmd);
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let finished_before_kill = stored_at_least(&store, 2);
    child.kill().unwrap();
    child.wait().unwrap();
    let kept = reprolab_store::Store::open(&store)
        .unwrap()
        .count_evaluations()
        .unwrap();
    assert!(kept >= finished_before_kill && kept < 6, "{kept}");

    let mut cmd = on_ray(tmp.path(), cluster);
    args(&mut cmd);
    let v = json(&run(&mut cmd));
    assert_eq!(v["cached"].as_u64().unwrap(), kept);
    assert_eq!(trained(&v), 6 - kept);
    assert_eq!(v["failed"], 0);
}

#[test]
fn without_an_address_a_local_head_lives_as_long_as_the_command() {
    if cluster().is_none() {
        return;
    }
    let _turn = turn();
    let before = raylets();
    let tmp = tempfile::tempdir().unwrap();
    let out = run(reprolab(tmp.path())
        .args([
            "--backend",
            "ray",
            "eval",
            "--json",
            "--runs",
            "2",
            "-j",
            "1",
        ])
        .env_remove("RAY_ADDRESS")
        .arg(subject("digits-mlp")));
    assert!(out.status.success());
    assert_eq!(trained(&json(&out)), 2);
    assert_eq!(
        raylets_after_settling(before),
        before,
        "the command's own head was stopped"
    );
}

#[test]
fn a_lost_cluster_turns_running_evaluations_into_infra_outcomes_and_keeps_finished_ones() {
    if cluster().is_none() {
        return;
    }
    let _turn = turn();
    let raylets_before = raylets();
    let tmp = tempfile::tempdir().unwrap();
    let cfg = config_file(tmp.path(), "slow.json", json!({"behavior": "slow"}));
    // A local head of the command's own: losing it loses nothing of the shared cluster.
    let child = reprolab(tmp.path())
        .args([
            "--backend",
            "ray",
            "-j",
            "1",
            "eval",
            "--json",
            "--runs",
            "3",
            "--config",
        ])
        .arg(&cfg)
        .arg(fixture("outcomes"))
        .env_remove("RAY_ADDRESS")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let store = tmp.path().join("store.db");
    stored_at_least(&store, 1);
    let drivers: Vec<i32> = pids_where(|pid| {
        std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| {
            String::from_utf8_lossy(&c).contains("reprolab.ray_driver")
                && std::fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|d| d == tmp.path())
        })
    });
    assert_eq!(drivers.len(), 1, "this command's driver");
    // SAFETY: kill has no memory-safety preconditions.
    unsafe { libc::kill(drivers[0], libc::SIGKILL) };
    let out = child.wait_with_output().unwrap();
    eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        out.status.code(),
        Some(1),
        "failed evaluations, not a crash"
    );
    let v = json(&out);
    let kinds: Vec<String> = outcomes(&v)
        .iter()
        .map(|o| o["status"].as_str().unwrap().to_string())
        .collect();
    // Seeds reach the driver in no particular order: count rather than index them.
    let ok = kinds.iter().filter(|k| *k == "ok").count();
    let infra = kinds.iter().filter(|k| *k == "infra").count();
    assert!(
        ok >= 1 && infra >= 1 && ok + infra == 3,
        "finished ones kept: {kinds:?}"
    );
    let lost = outcomes(&v)
        .into_iter()
        .find(|o| o["status"] == "infra")
        .unwrap();
    let reason = lost["message"].as_str().unwrap().to_string();
    assert!(reason.contains("Ray driver exited"), "{reason}");
    assert_eq!(
        raylets_after_settling(raylets_before),
        raylets_before,
        "the lost driver's head went with it"
    );
}

#[test]
fn an_unreachable_cluster_is_an_infrastructure_error_that_names_it() {
    if cluster().is_none() {
        return;
    }
    let _turn = turn();
    let tmp = tempfile::tempdir().unwrap();
    let address = format!("127.0.0.1:{}", free_port());
    let out = run(reprolab(tmp.path())
        .args([
            "--backend",
            "ray",
            "--ray-address",
            &address,
            "eval",
            "--runs",
            "1",
        ])
        .arg(subject("digits-mlp")));
    assert_eq!(out.status.code(), Some(3));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&address) && stderr.contains("cannot reach"),
        "{stderr}"
    );
}

/// A Keras subject on the TensorFlow backend trains in a Ray slot as on the local pool: the
/// slot's worker starts Keras on TensorFlow (the backend the manifest names), the outcomes are
/// the local ones seed for seed, and the cache keys are the same.
#[test]
fn a_keras_tensorflow_subject_trains_on_ray_as_locally() {
    let tmp = tempfile::tempdir().unwrap();
    if let Some(reason) = tensorflow_missing(tmp.path()) {
        eprintln!("SKIPPED a_keras_tensorflow_subject_trains_on_ray_as_locally: {reason}");
        return;
    }
    let Some(cluster) = cluster() else {
        return;
    };
    let name = "digits-mlp-keras-tf";
    let cfg = short_config_of(tmp.path(), name, json!({}), "short.json");
    let (local_dir, ray_dir) = (tmp.path().join("local"), tmp.path().join("ray"));
    for d in [&local_dir, &ray_dir] {
        std::fs::create_dir_all(d).unwrap();
    }
    let args = ["eval", "--json", "--runs", "2", "--config"];
    let local = json(&run(reprolab(&local_dir)
        .args(args)
        .arg(&cfg)
        .arg(subject(name))));
    let _turn = turn();
    let on_cluster = json(&run(on_ray(&ray_dir, cluster)
        .args(args)
        .arg(&cfg)
        .arg(subject(name))));
    assert_eq!(on_cluster["failed"], 0, "{on_cluster}");
    assert_eq!(trained(&on_cluster), 2);
    for o in outcomes(&on_cluster) {
        assert!(o["search"].as_f64().is_some_and(f64::is_finite), "{o}");
    }
    assert_eq!(
        outcomes(&local),
        outcomes(&on_cluster),
        "Keras on TensorFlow is deterministic per seed"
    );
    assert_eq!(
        store_keys(&local_dir.join("store.db")),
        store_keys(&ray_dir.join("store.db"))
    );
}
