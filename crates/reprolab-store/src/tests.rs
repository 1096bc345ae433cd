use super::*;
use serde_json::json;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Instant;

fn all_outcomes() -> Vec<Outcome> {
    vec![
        Outcome::Ok {
            search: 0.91,
            holdout: 0.875,
        },
        Outcome::Nan {
            search: None,
            holdout: Some(0.5),
        },
        Outcome::Exception {
            kind: "ValueError".into(),
            message: "bad shape\nsecond line".into(),
            traceback: "Traceback (most recent call last):\n  File \"x.py\"".into(),
        },
        Outcome::Timeout { limit_s: 60.0 },
        Outcome::Oom {
            limit_mb: 4096,
            peak_mb: 5000,
        },
        Outcome::OutputLimit { limit_mb: 16 },
        Outcome::Crash {
            exit_code: None,
            signal: Some(9),
            detail: "SIGKILL".into(),
        },
        Outcome::Crash {
            exit_code: Some(3),
            signal: None,
            detail: String::new(),
        },
        Outcome::Infra {
            message: "worker died: ünïcödé".into(),
        },
    ]
}

fn record(key: &str, outcome: Outcome) -> EvaluationRecord {
    EvaluationRecord {
        key: key.to_string(),
        subject: "mnist_cnn".into(),
        config: json!({"lr": 0.01, "batch_size": 32, "optimizer": "adam", "nested": {"b": 1, "a": [1, 2]}}),
        seed: 42,
        mode: "eval".into(),
        outcome,
        duration_s: 12.5,
        epochs: vec![
            json!({"epoch": 0, "loss": 1.5}),
            json!({"epoch": 1, "loss": 0.7}),
        ],
        output_tail: "epoch 1 loss 0.7\n".into(),
        created_at: String::new(),
    }
}

/// Compares everything but `created_at`, which the store sets.
fn assert_same(got: &EvaluationRecord, want: &EvaluationRecord) {
    let mut got = got.clone();
    got.created_at = want.created_at.clone();
    assert_eq!(&got, want);
}

fn db(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("sub").join("store.db")
}

#[test]
fn roundtrips_every_outcome() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&db(&dir)).unwrap();
    let recs: Vec<_> = all_outcomes()
        .into_iter()
        .enumerate()
        .map(|(i, o)| {
            let mut r = record(&format!("{i:064x}"), o);
            r.seed = if i == 0 { u64::MAX } else { i as u64 };
            r.mode = ["eval", "trace", "script"][i % 3].into();
            r
        })
        .collect();
    for r in &recs {
        store.put_evaluation(r).unwrap();
    }
    assert_eq!(store.count_evaluations().unwrap(), recs.len() as u64);
    for r in &recs {
        let got = store.get_evaluation(&r.key).unwrap().expect("stored");
        assert_same(&got, r);
        // The kind column matches the outcome.
        let kind: String = store
            .conn
            .query_row(
                "SELECT outcome_kind FROM evaluations WHERE key = ?1",
                [&r.key],
                |row| row.get(0),
            )
            .unwrap();
        assert_eq!(kind, r.outcome.kind());
    }
}

#[test]
fn nan_duration_reads_back_as_nan() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&db(&dir)).unwrap();
    let mut r = record("k", Outcome::Timeout { limit_s: 1.0 });
    r.duration_s = f64::NAN;
    store.put_evaluation(&r).unwrap();
    assert!(
        store
            .get_evaluation("k")
            .unwrap()
            .unwrap()
            .duration_s
            .is_nan()
    );
}

#[test]
fn missing_key_is_none() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&db(&dir)).unwrap();
    assert_eq!(store.get_evaluation("nope").unwrap(), None);
    assert_eq!(store.count_evaluations().unwrap(), 0);
}

#[test]
fn put_replaces_and_sets_created_at() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&db(&dir)).unwrap();
    let mut r = record("k", Outcome::Timeout { limit_s: 5.0 });
    r.created_at = "ignored".into();
    store.put_evaluation(&r).unwrap();
    let first = store.get_evaluation("k").unwrap().unwrap();
    assert_ne!(first.created_at, "ignored");
    r.outcome = Outcome::Ok {
        search: 1.0,
        holdout: 0.5,
    };
    r.output_tail = "new".into();
    store.put_evaluation(&r).unwrap();
    let got = store.get_evaluation("k").unwrap().unwrap();
    assert_same(&got, &r);
    assert_eq!(store.count_evaluations().unwrap(), 1);
}

#[test]
fn created_at_is_rfc3339_utc() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&db(&dir)).unwrap();
    store
        .put_evaluation(&record(
            "k",
            Outcome::Infra {
                message: "x".into(),
            },
        ))
        .unwrap();
    let t = store.get_evaluation("k").unwrap().unwrap().created_at;
    let b = t.as_bytes();
    assert_eq!(t.len(), 24, "{t}");
    assert!(t.starts_with("20") && t.ends_with('Z'), "{t}");
    assert_eq!(
        (b[4], b[7], b[10], b[13], b[16], b[19]),
        (b'-', b'-', b'T', b':', b':', b'.'),
        "{t}"
    );
}

#[test]
fn formats_known_times() {
    let at = |s: u64, ms: u64| format_rfc3339(UNIX_EPOCH + Duration::from_millis(s * 1000 + ms));
    assert_eq!(at(0, 0), "1970-01-01T00:00:00.000Z");
    assert_eq!(at(951_782_400, 5), "2000-02-29T00:00:00.005Z");
    assert_eq!(at(1_709_251_199, 999), "2024-02-29T23:59:59.999Z");
    assert_eq!(at(1_735_689_600, 0), "2025-01-01T00:00:00.000Z");
    assert_eq!(at(4_102_444_800, 0), "2100-01-01T00:00:00.000Z");
    assert_eq!(at(4_107_542_399, 0), "2100-02-28T23:59:59.000Z");
    assert_eq!(at(4_107_542_400, 0), "2100-03-01T00:00:00.000Z");
    assert_eq!(
        format_rfc3339(UNIX_EPOCH - Duration::from_secs(5)),
        "1970-01-01T00:00:00.000Z"
    );
}

#[test]
fn reopen_sees_data() {
    let dir = tempfile::tempdir().unwrap();
    let r = record(
        "durable",
        Outcome::Ok {
            search: 0.1,
            holdout: 0.2,
        },
    );
    let run_id;
    {
        let store = Store::open_default(dir.path()).unwrap();
        assert_eq!(store.path(), dir.path().join(".reprolab").join("store.db"));
        store.put_evaluation(&r).unwrap();
        run_id = store.start_run("search", &json!({"budget": 10})).unwrap();
        store.link(run_id, "durable").unwrap();
        store
            .finish_run(run_id, "ok", &json!({"best": 0.2}))
            .unwrap();
    }
    let store = Store::open_default(dir.path()).unwrap();
    assert_same(&store.get_evaluation("durable").unwrap().unwrap(), &r);
    let (status, summary, finished): (String, String, Option<String>) = store
        .conn
        .query_row(
            "SELECT status, summary, finished_at FROM runs WHERE id = ?1",
            [run_id],
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
        )
        .unwrap();
    assert_eq!(status, "ok");
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&summary).unwrap(),
        json!({"best": 0.2})
    );
    assert!(finished.is_some());
}

#[test]
fn runs_and_links() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&db(&dir)).unwrap();
    let a = store.start_run("eval", &json!(["x", 1])).unwrap();
    let b = store.start_run("search", &json!({})).unwrap();
    assert_ne!(a, b);
    let (status, finished): (String, Option<String>) = store
        .conn
        .query_row(
            "SELECT status, finished_at FROM runs WHERE id = ?1",
            [a],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((status.as_str(), finished), ("running", None));
    store.link(a, "k1").unwrap();
    store.link(a, "k1").unwrap(); // idempotent
    store.link(a, "k2").unwrap();
    store.link(b, "k1").unwrap();
    let n: i64 = store
        .conn
        .query_row(
            "SELECT count(*) FROM run_evaluations WHERE run_id = ?1",
            [a],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(n, 2);
    assert!(matches!(
        store.link(999, "k1"),
        Err(StoreError::NoSuchRun { run_id: 999, .. })
    ));
    let e = store.finish_run(999, "ok", &json!(null)).unwrap_err();
    assert!(
        matches!(e, StoreError::NoSuchRun { run_id: 999, .. }),
        "{e}"
    );
    // Replacing an evaluation keeps its links.
    store
        .put_evaluation(&record("k1", Outcome::Timeout { limit_s: 1.0 }))
        .unwrap();
    store
        .put_evaluation(&record("k1", Outcome::Timeout { limit_s: 2.0 }))
        .unwrap();
    let n: i64 = store
        .conn
        .query_row(
            "SELECT count(*) FROM run_evaluations WHERE key = 'k1'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(n, 2);
}

#[test]
fn wal_mode_and_schema_version() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    let store = Store::open(&path).unwrap();
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    let mode: String = store
        .conn
        .pragma_query_value(None, "journal_mode", |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    let sync: i64 = store
        .conn
        .pragma_query_value(None, "synchronous", |r| r.get(0))
        .unwrap();
    assert_eq!(sync, 1, "synchronous=NORMAL");
    drop(store);
    // Recorded in the file itself.
    let raw = Connection::open(&path).unwrap();
    let v: i64 = raw
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    assert_eq!(v, SCHEMA_VERSION);
    drop(raw);
    // Reopening an up-to-date store is fine.
    Store::open(&path).unwrap();
}

#[test]
fn newer_schema_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    drop(Store::open(&path).unwrap());
    let raw = Connection::open(&path).unwrap();
    raw.pragma_update(None, "user_version", SCHEMA_VERSION + 1)
        .unwrap();
    drop(raw);
    let e = Store::open(&path).unwrap_err();
    assert!(matches!(e, StoreError::TooNew { .. }), "{e}");
    assert!(e.to_string().contains(&path.display().to_string()), "{e}");
}

#[test]
fn non_database_file_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    std::fs::write(&path, "this is a text file, not SQLite\n".repeat(100)).unwrap();
    let e = Store::open(&path).unwrap_err();
    assert!(matches!(e, StoreError::NotAStore { .. }), "{e:?}");
    assert_eq!(
        e.to_string(),
        format!(
            "store {}: not a reprolab store (file is not a database)",
            path.display()
        )
    );
    assert_eq!(e.path(), path);
    // And the file is left alone.
    assert!(
        std::fs::read_to_string(&path)
            .unwrap()
            .starts_with("this is a text file")
    );
}

#[test]
fn foreign_sqlite_database_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("other.db");
    let raw = Connection::open(&path).unwrap();
    raw.execute_batch("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT);")
        .unwrap();
    drop(raw);
    let e = Store::open(&path).unwrap_err();
    assert!(matches!(e, StoreError::NotAStore { .. }), "{e:?}");
    assert!(e.to_string().contains("users"), "{e}");
}

#[test]
fn unwritable_location_names_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("file");
    std::fs::write(&blocker, "x").unwrap();
    let path = blocker.join("store.db");
    let e = Store::open(&path).unwrap_err();
    assert!(matches!(e, StoreError::CreateDir { .. }), "{e:?}");
    assert!(
        e.to_string()
            .starts_with(&format!("store {}: ", path.display())),
        "{e}"
    );
}

#[test]
fn second_store_reads_while_first_writes() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    let writer = Store::open(&path).unwrap();
    let reader = Store::open(&path).unwrap();
    writer
        .put_evaluation(&record(
            "a",
            Outcome::Ok {
                search: 1.0,
                holdout: 1.0,
            },
        ))
        .unwrap();
    assert!(reader.get_evaluation("a").unwrap().is_some());

    // The writer holds an open write transaction: the reader is not blocked and sees the last
    // committed state.
    writer.conn.execute_batch("BEGIN IMMEDIATE").unwrap();
    writer
        .put_evaluation(&record(
            "b",
            Outcome::Ok {
                search: 2.0,
                holdout: 2.0,
            },
        ))
        .unwrap();
    let t = Instant::now();
    assert_eq!(reader.count_evaluations().unwrap(), 1);
    assert!(reader.get_evaluation("b").unwrap().is_none());
    assert!(reader.get_evaluation("a").unwrap().is_some());
    assert!(
        t.elapsed() < Duration::from_secs(2),
        "reader waited for the writer"
    );

    // A second writer waits, then fails with a clear message.
    reader.set_busy_timeout(Duration::from_millis(200));
    let e = reader
        .put_evaluation(&record(
            "c",
            Outcome::Infra {
                message: String::new(),
            },
        ))
        .unwrap_err();
    assert!(e.is_locked(), "{e:?}");
    let msg = e.to_string();
    assert!(
        msg.starts_with(&format!(
            "store {}: database is locked (another reprolab holds it?)",
            path.display()
        )),
        "{msg}"
    );

    writer.conn.execute_batch("COMMIT").unwrap();
    assert_eq!(reader.count_evaluations().unwrap(), 2);
    // Once the lock is released the second writer succeeds.
    reader
        .put_evaluation(&record(
            "c",
            Outcome::Infra {
                message: String::new(),
            },
        ))
        .unwrap();
    assert_eq!(writer.count_evaluations().unwrap(), 3);
}

#[test]
fn concurrent_writers_in_threads_all_succeed() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    drop(Store::open(&path).unwrap());
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let path = path.clone();
            std::thread::spawn(move || {
                let store = Store::open(&path).unwrap();
                for i in 0..50 {
                    store
                        .put_evaluation(&record(
                            &format!("t{t}-{i}"),
                            Outcome::Timeout { limit_s: 1.0 },
                        ))
                        .unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(
        Store::open(&path).unwrap().count_evaluations().unwrap(),
        200
    );
}

#[test]
fn store_is_send() {
    fn is_send<T: Send>() {}
    is_send::<Store>();
    is_send::<StoreError>();
}

const CRASH_ENV: &str = "REPROLAB_STORE_CRASH_CHILD_DB";

/// Helper run in a child process by `killed_writer_loses_nothing_committed`: inserts rows until
/// killed, printing `committed <key>` after each commit. Does nothing when run directly.
#[test]
#[ignore = "helper of killed_writer_loses_nothing_committed"]
fn crash_child() {
    let Some(path) = std::env::var_os(CRASH_ENV) else {
        return;
    };
    let store = Store::open(Path::new(&path)).unwrap();
    let run = store.start_run("crash-test", &json!({})).unwrap();
    let big_tail = "x".repeat(20_000);
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut i = 0u64;
    while Instant::now() < deadline {
        let key = format!("row-{i:08}");
        let mut r = record(
            &key,
            Outcome::Ok {
                search: i as f64,
                holdout: 0.0,
            },
        );
        r.seed = i;
        r.output_tail = big_tail.clone();
        r.epochs = (0..50)
            .map(|e| json!({"epoch": e, "loss": 1.0 / (e as f64 + 1.0)}))
            .collect();
        store.put_evaluation(&r).unwrap();
        store.link(run, &key).unwrap();
        println!("committed {key}");
        i += 1;
    }
    panic!("crash_child was not killed within 60 s");
}

#[test]
fn killed_writer_loses_nothing_committed() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    let module = module_path!();
    let name = format!(
        "{}::crash_child",
        module.split_once("::").map_or(module, |(_, rest)| rest)
    );

    for round in 0..3 {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                &name,
                "--nocapture",
                "--ignored",
                "--test-threads=1",
            ])
            .env(CRASH_ENV, &path)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut committed = Vec::new();
        let target = 150 + round * 37;
        while committed.len() < target {
            let line = lines
                .next()
                .unwrap_or_else(|| panic!("child exited after {} rows", committed.len()))
                .unwrap();
            if let Some(key) = line.strip_prefix("committed ") {
                committed.push(key.to_string());
            }
        }
        child.kill().unwrap(); // SIGKILL
        let status = child.wait().unwrap();
        assert!(!status.success());
        // Everything the child reported before it died was committed.
        for line in lines {
            if let Some(key) = line.unwrap().strip_prefix("committed ") {
                committed.push(key.to_string());
            }
        }

        let store = Store::open(&path).unwrap();
        let check: String = store
            .conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(check, "ok");
        for key in &committed {
            let rec = store
                .get_evaluation(key)
                .unwrap()
                .unwrap_or_else(|| panic!("round {round}: committed row {key} lost"));
            assert_eq!(rec.output_tail.len(), 20_000);
        }
        let total = store.count_evaluations().unwrap();
        assert!(
            total >= committed.len() as u64,
            "{total} < {}",
            committed.len()
        );
    }
}

fn llm_call(model: &str, run_id: Option<i64>, ok: bool) -> LlmCallRecord {
    LlmCallRecord {
        id: 0,
        run_id,
        model: model.into(),
        request_hash: "ab12".repeat(16),
        request: json!({"messages": [{"role": "user", "content": "why NaN? ünï"}], "n": 1}),
        response: ok.then(|| json!({"choices": [{"text": "lr too high", "finish": "stop"}]})),
        error: (!ok).then(|| "HTTP 500 from http://x: boom".to_string()),
        prompt_tokens: 12,
        completion_tokens: if ok { 5 } else { 0 },
        latency_ms: 321,
        cost_usd: ok.then_some(0.000_125),
        replayed: !ok,
        created_at: String::new(),
    }
}

#[test]
fn llm_calls_roundtrip_newest_first() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&db(&dir)).unwrap();
    let run = store.start_run("llm chat", &json!({})).unwrap();
    let a = llm_call("openai:gpt-4o-mini", Some(run), true);
    let b = llm_call("anthropic:claude", None, false);
    let ida = store.record_llm_call(&a).unwrap();
    let idb = store.record_llm_call(&b).unwrap();
    assert!(idb > ida);
    let got = store.llm_calls(10).unwrap();
    assert_eq!(got.len(), 2);
    for (g, want, id) in [(&got[0], &b, idb), (&got[1], &a, ida)] {
        assert_eq!(g.id, id);
        assert!(g.created_at.ends_with('Z'), "{}", g.created_at);
        let mut g = g.clone();
        g.id = 0;
        g.created_at = String::new();
        assert_eq!(&g, want);
    }
    assert_eq!(store.llm_calls(1).unwrap().len(), 1);
    assert_eq!(store.llm_calls(1).unwrap()[0].id, idb);
}

#[test]
fn llm_call_with_unknown_run_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&db(&dir)).unwrap();
    let e = store
        .record_llm_call(&llm_call("m", Some(999), true))
        .unwrap_err();
    assert!(
        matches!(e, StoreError::NoSuchRun { run_id: 999, .. }),
        "{e}"
    );
}

#[test]
fn version_1_store_migrates_keeping_its_data() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    {
        let raw = Connection::open(&path).unwrap();
        raw.execute_batch(MIGRATIONS[0]).unwrap();
        raw.pragma_update(None, "user_version", 1).unwrap();
        raw.execute(
            "INSERT INTO runs (command, args, started_at) VALUES ('eval', '{}', 'then')",
            [],
        )
        .unwrap();
    }
    let store = Store::open(&path).unwrap();
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    store.finish_run(1, "ok", &json!({})).unwrap();
    store
        .record_llm_call(&llm_call("m", Some(1), true))
        .unwrap();
    assert_eq!(store.llm_calls(5).unwrap().len(), 1);
}

#[test]
fn a_device_or_directory_is_not_opened_as_a_store() {
    for path in [Path::new("/dev/null"), Path::new("/tmp")] {
        let Err(e) = Store::open(path) else {
            panic!("{} accepted", path.display())
        };
        assert!(matches!(e, StoreError::NotAStore { .. }), "{e}");
        assert!(e.to_string().contains("not a regular file"), "{e}");
    }
    assert!(!Path::new("/dev/null-journal").exists());
}

#[test]
fn malformed_rows_are_bad_records_not_sqlite_failures() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&db(&dir)).unwrap();
    store
        .put_evaluation(&record("a", Outcome::Timeout { limit_s: 1.0 }))
        .unwrap();
    store
        .put_evaluation(&record("b", Outcome::Timeout { limit_s: 1.0 }))
        .unwrap();
    store
        .conn
        .execute(
            "UPDATE evaluations SET outcome = '{not json' WHERE key = 'a'",
            [],
        )
        .unwrap();
    store
        .conn
        .execute("UPDATE evaluations SET seed = 'x' WHERE key = 'b'", [])
        .unwrap();
    for key in ["a", "b"] {
        let Err(e) = store.get_evaluation(key) else {
            panic!("{key} decoded")
        };
        assert!(matches!(e, StoreError::BadRecord { .. }), "{key}: {e}");
    }
}
