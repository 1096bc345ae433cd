//! The sandbox against hostile subject code, as an attacker and a clumsy user would try it:
//! every probe runs the real binary on the `hostile` fixture and checks the outcome, a time
//! bound, and that nothing survived or was written outside the scratch directory.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use serde_json::{Value, json};

/// A copy of the hostile fixture in `root/subject`, with `root/victim.txt` beside it.
fn hostile_subject(root: &Path) -> PathBuf {
    let dir = root.join("subject");
    std::fs::create_dir_all(&dir).unwrap();
    for f in ["reprolab.toml", "train.py", "config.json"] {
        std::fs::copy(fixture("hostile").join(f), dir.join(f)).unwrap();
    }
    std::fs::write(root.join("victim.txt"), "keep me").unwrap();
    dir
}

/// A tag no other test uses: processes carrying it in their command line are this test's.
fn tag() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos() as u64;
    1_000_000 + (nanos ^ std::process::id() as u64) % 1_000_000_000
}

fn wait_until(within: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + within;
    while Instant::now() < end {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    cond()
}

fn sandbox_info(dir: &Path) -> Value {
    json(&run(reprolab(dir).args(["env", "--json"])))
}

/// `eval --json` of the hostile subject doing `behavior`.
fn eval(root: &Path, subject: &Path, behavior: &str, runs: u32) -> (Option<i32>, Value) {
    eval_config(
        root,
        subject,
        json!({"behavior": behavior, "tag": 0}),
        runs,
        true,
    )
}

/// `eval --json --no-cache` with any config, with or without the sandbox's isolation.
fn eval_config(
    root: &Path,
    subject: &Path,
    config: Value,
    runs: u32,
    isolated: bool,
) -> (Option<i32>, Value) {
    let cfg = config_file(root, "c.json", config);
    let out = run(reprolab(root)
        .env("REPROLAB_NO_ISOLATION", if isolated { "0" } else { "1" })
        .args(["eval", "--json", "--no-cache", "-j", "1", "--runs"])
        .arg(runs.to_string())
        .arg("--config")
        .arg(&cfg)
        .arg(subject));
    (out.status.code(), json(&out))
}

fn start_spinning(root: &Path, subject: &Path, tag: u64, tmp: &Path) -> Child {
    let cfg = config_file(root, "c.json", json!({"behavior": "spin", "tag": tag}));
    reprolab(root)
        .env("TMPDIR", tmp)
        .args(["eval", "-j", "1", "--runs", "1", "--config"])
        .arg(&cfg)
        .arg(subject)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

#[test]
fn an_evaluation_dies_with_reprolab_killed_or_terminated() {
    let root = tempfile::tempdir().unwrap();
    let subject = hostile_subject(root.path());
    let tmp = root.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    for signal in [libc::SIGKILL, libc::SIGTERM] {
        let t = tag();
        let mut child = start_spinning(root.path(), &subject, t, &tmp);
        assert!(
            wait_until(Duration::from_secs(120), || !tagged(&t.to_string())
                .is_empty()),
            "the spinning evaluation never started"
        );
        // SAFETY: kill has no memory-safety preconditions.
        unsafe { libc::kill(child.id() as i32, signal) };
        let status = child.wait().unwrap();
        // The subject's timeout is 8 s: gone well before it, not after.
        assert!(
            wait_until(Duration::from_secs(4), || tagged(&t.to_string()).is_empty()),
            "signal {signal}: the evaluation outlived reprolab: {:?}",
            tagged(&t.to_string())
        );
        if signal == libc::SIGTERM {
            assert_eq!(status.code(), Some(143));
            let left: Vec<_> = std::fs::read_dir(&tmp).unwrap().flatten().collect();
            assert!(
                left.is_empty(),
                "SIGTERM left scratch directories: {left:?}"
            );
        }
    }
    // The SIGKILLed run could not clean up; the next one removed its scratch directory.
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0);
}

#[test]
fn a_daemon_does_not_outlive_its_evaluation() {
    let root = tempfile::tempdir().unwrap();
    let subject = hostile_subject(root.path());
    for isolated in [true, false] {
        let t = tag();
        let (code, _) = eval_config(
            root.path(),
            &subject,
            json!({"behavior": "daemon", "tag": t}),
            2,
            isolated,
        );
        assert_eq!(code, Some(0));
        assert!(
            wait_until(Duration::from_secs(2), || tagged(&t.to_string()).is_empty()),
            "isolated {isolated}: a daemon survived: {:?}",
            tagged(&t.to_string())
        );
    }
}

#[test]
fn user_code_cannot_rewrite_the_store_or_the_users_files() {
    let root = tempfile::tempdir().unwrap();
    if sandbox_info(root.path())["sandbox"]["landlock_abi"] == 0 {
        eprintln!("no Landlock on this kernel: writes are not confined (reported by `env`)");
        return;
    }
    let subject = hostile_subject(root.path());
    // A subject that always raises, and tries to rewrite its results in the store.
    for _ in 0..2 {
        let (code, v) = eval(root.path(), &subject, "store", 3);
        assert_eq!(code, Some(1), "{v}");
        for r in v["runs"].as_array().unwrap() {
            assert_eq!(r["outcome"]["status"], "exception", "{r}");
            assert!(
                r["outcome"]["message"]
                    .as_str()
                    .unwrap()
                    .contains("readonly database"),
                "{r}"
            );
        }
    }
    let (code, v) = eval(root.path(), &subject, "files", 1);
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(
        v["runs"][0]["outcome"]["search"], 0.0,
        "attacks that worked: {v}"
    );
    assert_eq!(
        std::fs::read_to_string(root.path().join("victim.txt")).unwrap(),
        "keep me"
    );
    for planted in ["subject/planted.txt", "outside.txt", "planted_dir"] {
        assert!(!root.path().join(planted).exists(), "{planted} was written");
    }
}

#[test]
fn unix_sockets_outside_the_scratch_directory_are_unreachable_or_reported() {
    let root = tempfile::tempdir().unwrap();
    let subject = hostile_subject(root.path());
    let listener = std::os::unix::net::UnixListener::bind(root.path().join("host.sock")).unwrap();
    listener.set_nonblocking(true).unwrap();
    let info = sandbox_info(root.path());
    let (code, v) = eval(root.path(), &subject, "unix_socket", 1);
    assert_eq!(code, Some(0), "{v}");
    if info["sandbox"]["unix_sockets"] == true {
        assert_eq!(
            v["runs"][0]["outcome"]["search"], 0.0,
            "the host socket was reached: {v}"
        );
    } else {
        // This kernel cannot stop it: `env` must say so.
        let gaps = info["sandbox_gaps"].to_string();
        assert!(gaps.contains("Unix sockets"), "{info}");
    }
}

#[test]
fn shared_pages_after_fork_are_not_counted_as_oom() {
    let root = tempfile::tempdir().unwrap();
    let subject = hostile_subject(root.path());
    // 20 sleeping forks under the default 4096 MB: RSS summed over the group was 6.5 GB.
    let (code, v) = eval(root.path(), &subject, "forks", 1);
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["runs"][0]["outcome"]["status"], "ok", "{v}");
    // A DataLoader with 4 worker processes under 1200 MB (RSS summed said 1481 MB).
    let manifest = subject.join("reprolab.toml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(
        &manifest,
        text.replace("timeout_s = 8", "timeout_s = 60\nmemory_mb = 1200"),
    )
    .unwrap();
    let (code, v) = eval(root.path(), &subject, "dataloader", 1);
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["runs"][0]["outcome"]["status"], "ok", "{v}");
}

#[test]
fn shared_memory_no_process_maps_counts_against_the_limit() {
    let root = tempfile::tempdir().unwrap();
    let subject = hostile_subject(root.path());
    let manifest = subject.join("reprolab.toml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(
        &manifest,
        text.replace("timeout_s = 8", "timeout_s = 30\nmemory_mb = 300"),
    )
    .unwrap();
    // 600 MB written into a memfd, or into a file of the private /dev/shm (the host's /dev/shm,
    // where there are no user namespaces, is not the evaluation's alone and is not counted).
    let mut fills = vec!["memfd_fill"];
    if sandbox_info(root.path())["sandbox"]["network"] == true {
        fills.push("shm_fill");
    }
    for fill in fills {
        let (code, v) = eval(root.path(), &subject, fill, 1);
        assert_eq!(code, Some(1), "{fill}: {v}");
        assert_eq!(v["runs"][0]["outcome"]["status"], "oom", "{fill}: {v}");
    }
}

#[test]
fn code_that_kills_its_worker_is_refused_or_counted_as_its_crash() {
    let root = tempfile::tempdir().unwrap();
    let subject = hostile_subject(root.path());
    let config = json!({"behavior": "kill_parent", "tag": 0});
    // Sandboxed: the signal cannot leave the evaluation.
    let info = sandbox_info(root.path());
    if info["sandbox"]["pid_namespace"] == true
        || info["sandbox"]["landlock_abi"].as_u64().unwrap_or(0) >= 6
    {
        let (code, v) = eval(root.path(), &subject, "kill_parent", 1);
        assert_eq!(code, Some(1), "{v}");
        assert_eq!(v["runs"][0]["outcome"]["status"], "exception", "{v}");
    }
    // Without isolation the worker dies, twice: a crash of this code, never `infra`.
    let (_, v) = eval_config(root.path(), &subject, config, 1, false);
    assert_eq!(v["runs"][0]["outcome"]["status"], "crash", "{v}");
    assert!(
        v["runs"][0]["outcome"]["detail"]
            .as_str()
            .unwrap()
            .contains("died during it"),
        "{v}"
    );
}

#[test]
fn bad_input_is_refused_with_a_clear_error() {
    let root = tempfile::tempdir().unwrap();
    let subject = subject("cancer-binary");
    let out = run(reprolab(root.path())
        .args(["eval", "--runs", "10", "--seed", "18446744073709551610"])
        .arg(&subject));
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--seed 18446744073709551610"));
    let out = run(Command::new(env!("CARGO_BIN_EXE_reprolab"))
        .args(["--store", "/dev/null", "eval", "--runs", "1"])
        .arg(&subject));
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a regular file"));
    assert!(!Path::new("/dev/null-journal").exists());
}

#[test]
fn a_malformed_store_row_is_retrained_not_fatal() {
    let root = tempfile::tempdir().unwrap();
    let subject = hostile_subject(root.path());
    let (code, _) = eval(root.path(), &subject, "forks", 1);
    assert_eq!(code, Some(0));
    let db = rusqlite::Connection::open(root.path().join("store.db")).unwrap();
    db.execute("UPDATE evaluations SET outcome = '{torn'", [])
        .unwrap();
    drop(db);
    let (code, v) = eval(root.path(), &subject, "forks", 1);
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["cached"], 0, "{v}");
    assert_eq!(v["runs"][0]["outcome"]["status"], "ok", "{v}");
}

#[test]
fn long_runs_without_a_terminal_print_progress_lines() {
    let root = tempfile::tempdir().unwrap();
    let out = run(reprolab(root.path())
        .env("REPROLAB_PROGRESS_EVERY", "0.2")
        .args(["eval", "--runs", "3", "-j", "1"])
        .arg(subject("cancer-binary")));
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("cancer-binary: "), "{stderr}");
    assert!(stderr.contains("/3 ("), "{stderr}");
}

#[test]
fn a_refused_write_says_why() {
    let root = tempfile::tempdir().unwrap();
    if sandbox_info(root.path())["sandbox"]["landlock_abi"] == 0 {
        return;
    }
    let subject = hostile_subject(root.path());
    // A user program saving a checkpoint beside itself.
    let text = std::fs::read_to_string(subject.join("train.py")).unwrap();
    std::fs::write(
        subject.join("train.py"),
        text.replace(
            "    if b == \"forks\":",
            "    if b == \"forks\":\n        open(\"checkpoint.pt\", \"w\")",
        ),
    )
    .unwrap();
    let (code, v) = eval(root.path(), &subject, "forks", 1);
    assert_eq!(code, Some(1), "{v}");
    let message = v["runs"][0]["outcome"]["message"].as_str().unwrap();
    assert!(message.contains("reprolab's sandbox"), "{message}");
}

/// A pseudo-terminal for reprolab to run on, as from a user's shell: the master, and the
/// slave's path (opened in the child, where it becomes the controlling terminal).
fn pty() -> (std::fs::File, std::ffi::CString) {
    use std::os::fd::FromRawFd;
    // SAFETY: plain libc calls on a descriptor this function owns; ptsname_r fills `name`.
    unsafe {
        let master = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY);
        assert!(master >= 0, "no pseudo-terminal");
        assert_eq!(libc::grantpt(master), 0);
        assert_eq!(libc::unlockpt(master), 0);
        let mut name = [0 as libc::c_char; 128];
        assert_eq!(libc::ptsname_r(master, name.as_mut_ptr(), name.len()), 0);
        (
            std::fs::File::from_raw_fd(master),
            std::ffi::CStr::from_ptr(name.as_ptr()).to_owned(),
        )
    }
}

#[test]
fn user_code_gets_no_terminal_and_no_descriptor_reprolab_inherited() {
    use std::os::fd::AsRawFd;
    use std::os::unix::process::CommandExt;

    let root = tempfile::tempdir().unwrap();
    let subject = hostile_subject(root.path());
    // reprolab started from a terminal (its controlling terminal, where TIOCSTI from user code
    // would type commands into the user's shell) by a tool that leaves a pipe open without
    // close-on-exec (a make jobserver, an IDE's channel) as descriptor 200.
    let (_master, slave) = pty();
    let (_read, write) = std::io::pipe().unwrap();
    let write_fd = write.as_raw_fd();
    const INHERITED: i32 = 200;
    for (behavior, attack) in [
        ("tty", "opened its controlling terminal"),
        ("inherited_fd", "got a descriptor reprolab inherited"),
    ] {
        let cfg = config_file(
            root.path(),
            "c.json",
            json!({"behavior": behavior, "tag": INHERITED}),
        );
        let mut cmd = reprolab(root.path());
        cmd.args([
            "eval",
            "--json",
            "--no-cache",
            "-j",
            "1",
            "--runs",
            "1",
            "--config",
        ])
        .arg(&cfg)
        .arg(&subject);
        let slave = slave.clone();
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                if libc::setsid() < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                let tty = libc::open(slave.as_ptr(), libc::O_RDWR);
                if tty < 0 || libc::ioctl(tty, libc::TIOCSCTTY, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                libc::close(tty);
                // dup2 leaves the copy without close-on-exec, as the tool would.
                if libc::dup2(write_fd, INHERITED) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let out = run(&mut cmd);
        let v = json(&out);
        assert_eq!(out.status.code(), Some(0), "{v}");
        assert_eq!(
            v["runs"][0]["outcome"]["search"], 0.0,
            "user code {attack}: {v}"
        );
    }
}

#[test]
fn dev_shm_is_private_to_the_sandbox() {
    let root = tempfile::tempdir().unwrap();
    if sandbox_info(root.path())["sandbox"]["network"] != true {
        eprintln!("no user namespaces here: /dev/shm is the host's (as the network is)");
        return;
    }
    let subject = hostile_subject(root.path());
    let t = tag();
    // Another program's shared memory (same user), which user code may not see or remove.
    let other = PathBuf::from(format!("/dev/shm/reprolab-test-{t}"));
    let left = PathBuf::from(format!("/dev/shm/reprolab-test-{t}-left"));
    std::fs::write(&other, "keep me").unwrap();
    let (code, v) = eval_config(
        root.path(),
        &subject,
        json!({"behavior": "shm", "tag": t}),
        1,
        true,
    );
    let seen_other = std::fs::read_to_string(&other).ok();
    let leftover = left.exists();
    let _ = std::fs::remove_file(&other);
    let _ = std::fs::remove_file(&left);
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(
        v["runs"][0]["outcome"]["search"], 0.0,
        "user code saw or removed the host's /dev/shm: {v}"
    );
    assert_eq!(seen_other.as_deref(), Some("keep me"));
    assert!(!leftover, "what user code wrote to /dev/shm outlived it");
}
