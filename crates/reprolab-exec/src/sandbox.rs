//! What subject code runs inside: a scrubbed environment without credentials, its own process
//! group, and (where the kernel allows unprivileged user namespaces) a network namespace with no
//! interfaces up.

use std::ffi::OsString;
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// Variables passed through to subject code; everything else is dropped.
const PASS: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "LANGUAGE",
    "TZ",
    "TERM",
    "TMPDIR",
    // Set on some machines because older OpenBLAS builds compute wrong results without them.
    "OPENBLAS_CORETYPE",
    "OPENBLAS_L2_SIZE",
    "CUDA_VISIBLE_DEVICES",
];

/// Fixed settings for every subject process: one intra-op thread (measured 30× faster for small
/// trainings on 2 cores) and unbuffered Python. Bytecode caching stays on: without it every
/// worker recompiles torch's modules at start-up (measured 32 s instead of 5 s).
const FIXED: &[(&str, &str)] = &[
    ("OMP_NUM_THREADS", "1"),
    ("MKL_NUM_THREADS", "1"),
    ("OPENBLAS_NUM_THREADS", "1"),
    ("PYTHONUNBUFFERED", "1"),
    ("PYTHONNOUSERSITE", "1"),
];

/// Names that look like they hold a secret are never passed, even when asked for.
pub fn is_credential(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    [
        "KEY",
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "CREDENTIAL",
        "AUTH",
        "COOKIE",
        "SESSION",
    ]
    .iter()
    .any(|w| upper.contains(w))
        || upper.starts_with("AWS_")
}

/// The environment for subject code: the pass list, `LC_*`, anything named in
/// `REPROLAB_PASS_ENV` (comma separated) unless it looks like a credential, and fixed settings.
pub fn scrubbed_env() -> Vec<(OsString, OsString)> {
    let extra: Vec<String> = std::env::var("REPROLAB_PASS_ENV")
        .map(|v| v.split(',').map(|s| s.trim().to_string()).collect())
        .unwrap_or_default();
    let mut env: Vec<(OsString, OsString)> = std::env::vars_os()
        .filter(|(k, _)| {
            let k = k.to_string_lossy();
            let wanted = PASS.contains(&k.as_ref())
                || k.starts_with("LC_")
                || extra.iter().any(|e| e == k.as_ref());
            wanted && !is_credential(&k)
        })
        .collect();
    for (k, v) in FIXED {
        env.retain(|(name, _)| name != k);
        env.push(((*k).into(), (*v).into()));
    }
    env
}

/// Apply the scrubbed environment to a command (clearing everything else).
pub fn apply_env(cmd: &mut tokio::process::Command, pythonpath: Option<&std::path::Path>) {
    cmd.env_clear();
    cmd.envs(scrubbed_env());
    if let Some(p) = pythonpath {
        cmd.env("PYTHONPATH", p);
    }
}

/// Whether `unshare -rn` works here, i.e. subject code can be cut off from the network.
/// Probed once per process. `REPROLAB_NO_ISOLATION=1` turns isolation off.
pub fn network_isolation() -> bool {
    static PROBE: OnceLock<bool> = OnceLock::new();
    *PROBE.get_or_init(|| {
        if std::env::var_os("REPROLAB_NO_ISOLATION").is_some_and(|v| v != "0") {
            return false;
        }
        Command::new("unshare")
            .args(["-rn", "true"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    })
}

/// The program and leading arguments that start `argv` inside the sandbox.
pub fn wrap(argv: &[OsString]) -> (OsString, Vec<OsString>) {
    if network_isolation() {
        let mut args: Vec<OsString> = vec!["-rn".into(), "--".into()];
        args.extend(argv.iter().cloned());
        ("unshare".into(), args)
    } else {
        (argv[0].clone(), argv[1..].to_vec())
    }
}

/// Send a signal to a whole process group; ignore groups that are already gone.
pub fn kill_group(pgid: i32, signal: i32) {
    if pgid > 1 {
        // SAFETY: killpg has no memory-safety preconditions.
        unsafe {
            libc::killpg(pgid, signal);
        }
    }
}

/// Resident memory in MB of one process (0 if unknown).
pub fn process_rss_mb(pid: i32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/statm"))
        .ok()
        .and_then(|s| {
            s.split_whitespace()
                .nth(1)
                .and_then(|p| p.parse::<u64>().ok())
        })
        .map_or(0, |pages| pages * 4096 / (1024 * 1024))
}

/// The processes (ids) whose process group is `pgid` (scans /proc; empty if unknown). Zombies
/// are left out: they hold no memory and are gone as far as a caller is concerned.
pub fn group_pids(pgid: i32) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut pids = Vec::new();
    for entry in dir.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // Fields after the parenthesised command name: state ppid pgrp ...
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
            continue;
        };
        let mut fields = rest.split_whitespace();
        let state = fields.next();
        let pgrp = fields.nth(1).and_then(|s| s.parse::<i32>().ok());
        if pgrp == Some(pgid) && state != Some("Z") {
            pids.push(pid);
        }
    }
    pids
}

/// Resident memory in MB of every process in the group `pgid` (scans /proc; 0 if unknown).
pub fn group_rss_mb(pgid: i32) -> u64 {
    let page = 4096u64;
    let pages: u64 = group_pids(pgid)
        .into_iter()
        .filter_map(|pid| std::fs::read_to_string(format!("/proc/{pid}/statm")).ok())
        .map(|statm| {
            statm
                .split_whitespace()
                .nth(1)
                .and_then(|s| s.parse::<u64>().ok())
                .unwrap_or(0)
        })
        .sum();
    pages * page / (1024 * 1024)
}

/// Memory in MB that the processes of group `pgid` hold privately (the sum of their
/// `Private_Clean + Private_Dirty` in /proc/PID/smaps_rollup): what would be freed if the group
/// died. Unlike RSS it does not count the copy-on-write pages a forked child shares with its warm
/// parent (torch, ~400 MB), nor count them again for every process the child forks, so a bound
/// on it is a bound on what the evaluation itself added. Falls back to RSS for a process whose
/// smaps_rollup cannot be read (kernels before 4.14).
pub fn group_private_mb(pgid: i32) -> u64 {
    let kb: u64 = group_pids(pgid)
        .into_iter()
        .map(
            |pid| match std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")) {
                Ok(text) => text
                    .lines()
                    .filter(|l| l.starts_with("Private_Clean:") || l.starts_with("Private_Dirty:"))
                    .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
                    .sum(),
                Err(_) => process_rss_mb(pid) * 1024,
            },
        )
        .sum();
    kb / 1024
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt as _;

    #[test]
    fn credentials_are_recognised() {
        for name in [
            "OPENAI_API_KEY",
            "GITHUB_TOKEN",
            "AWS_REGION",
            "db_password",
            "MY_SECRET",
        ] {
            assert!(is_credential(name), "{name}");
        }
        for name in ["PATH", "HOME", "LANG", "OMP_NUM_THREADS"] {
            assert!(!is_credential(name), "{name}");
        }
    }

    #[test]
    fn scrubbed_env_drops_secrets_and_pins_threads() {
        // SAFETY: test-only; no other test reads these variables.
        unsafe {
            std::env::set_var("REPROLAB_TEST_API_KEY", "sk-123");
            std::env::set_var(
                "REPROLAB_PASS_ENV",
                "REPROLAB_TEST_API_KEY,REPROLAB_TEST_PLAIN",
            );
            std::env::set_var("REPROLAB_TEST_PLAIN", "yes");
        }
        let env = scrubbed_env();
        let has = |k: &str| env.iter().any(|(n, _)| n == k);
        assert!(!has("REPROLAB_TEST_API_KEY"));
        assert!(has("REPROLAB_TEST_PLAIN"));
        assert!(env.iter().any(|(k, v)| k == "OMP_NUM_THREADS" && v == "1"));
    }

    #[test]
    fn rss_of_own_group_is_positive() {
        // SAFETY: getpgrp cannot fail.
        let pgid = unsafe { libc::getpgrp() };
        assert!(group_rss_mb(pgid) > 0);
        assert!(group_pids(pgid).contains(&(std::process::id() as i32)));
    }

    #[test]
    fn private_memory_grows_with_what_a_process_writes() {
        // A child in its own group that touches 64 MB: its private memory must show them.
        let mut child = Command::new("python3")
            .args([
                "-c",
                "import time; b = bytearray(64 * 2**20); print('ok', flush=True); time.sleep(30)",
            ])
            .stdout(Stdio::piped())
            .process_group(0)
            .spawn()
            .expect("python3 runs");
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.take().unwrap()),
            &mut line,
        )
        .unwrap();
        let pgid = child.id() as i32;
        let private = group_private_mb(pgid);
        kill_group(pgid, libc::SIGKILL);
        let _ = child.wait();
        assert!(private >= 60, "private {private} MB");
        assert!(group_pids(pgid).is_empty());
    }
}
