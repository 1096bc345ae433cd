//! What subject code runs inside: a scrubbed environment without credentials, its own session
//! (no controlling terminal) without the descriptors reprolab inherited, death with reprolab,
//! and what the kernel offers of: a network namespace with no interface up, a PID namespace, and
//! a Landlock domain that confines writes to a scratch directory (see docs/execution.md,
//! "Threat model").

use std::ffi::OsString;
use std::path::Path;
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
    // Keras 3 defaults to TensorFlow, which the managed environment does not have; torch it has.
    ("KERAS_BACKEND", "torch"),
];

/// Names that look like they hold a secret are never passed, even when asked for: a word
/// anywhere in the name (`OPENAI_API_KEY`, `db_password`), a whole `_`-separated segment
/// (`GH_PAT`, `SERVICE_CREDS`), or a cloud provider's prefix.
pub fn is_credential(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    const WORDS: &[&str] = &[
        "KEY",
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "CREDENTIAL",
        "CREDS",
        "AUTH",
        "COOKIE",
        "SESSION",
        "PRIVATE",
        "DATABASE",
        "DSN",
        "CONNECTION_STRING",
    ];
    const SEGMENTS: &[&str] = &["PAT", "PASS", "PWD", "CRED", "SAS"];
    const PREFIXES: &[&str] = &["AWS_", "AZURE_", "GOOGLE_", "GCP_", "GH_", "GITHUB_"];
    WORDS.iter().any(|w| upper.contains(w))
        || upper.split('_').any(|seg| SEGMENTS.contains(&seg))
        || PREFIXES.iter().any(|p| upper.starts_with(p))
}

/// A value that carries credentials whatever its name: a URL with a user and password
/// (`postgres://user:secret@host/db`).
pub fn is_credential_value(value: &str) -> bool {
    value.split("://").skip(1).any(|rest| {
        let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
        authority
            .rsplit_once('@')
            .is_some_and(|(userinfo, _)| userinfo.contains(':'))
    })
}

/// The environment for subject code: the pass list, `LC_*`, anything named in
/// `REPROLAB_PASS_ENV` (comma separated) unless its name or value looks like a credential, and
/// fixed settings.
pub fn scrubbed_env() -> Vec<(OsString, OsString)> {
    let extra: Vec<String> = std::env::var("REPROLAB_PASS_ENV")
        .map(|v| v.split(',').map(|s| s.trim().to_string()).collect())
        .unwrap_or_default();
    let mut env: Vec<(OsString, OsString)> = std::env::vars_os()
        .filter(|(k, v)| {
            let k = k.to_string_lossy();
            let wanted = PASS.contains(&k.as_ref())
                || k.starts_with("LC_")
                || extra.iter().any(|e| e == k.as_ref());
            wanted && !is_credential(&k) && !is_credential_value(&v.to_string_lossy())
        })
        .collect();
    for (k, v) in FIXED {
        env.retain(|(name, _)| name != k);
        env.push(((*k).into(), (*v).into()));
    }
    env
}

/// The rules of [`scrubbed_env`] as data, for a process that builds the environment on another
/// machine (a Ray node): `{"pass": [names], "fixed": {name: value}}`; `LC_*` passes too, and a
/// value that looks like a credential is dropped there.
pub fn env_rules() -> serde_json::Value {
    env_rules_with(std::env::var("REPROLAB_PASS_ENV").ok().as_deref())
}

fn env_rules_with(pass_env: Option<&str>) -> serde_json::Value {
    let extra = pass_env
        .unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|n| !n.is_empty() && !is_credential(n));
    let pass: Vec<&str> = PASS.iter().copied().chain(extra).collect();
    let fixed: serde_json::Map<String, serde_json::Value> = FIXED
        .iter()
        .map(|(k, v)| (k.to_string(), serde_json::Value::from(*v)))
        .collect();
    serde_json::json!({"pass": pass, "fixed": fixed})
}

/// Apply the scrubbed environment to a command (clearing everything else).
pub fn apply_env(cmd: &mut tokio::process::Command, pythonpath: Option<&std::path::Path>) {
    cmd.env_clear();
    cmd.envs(scrubbed_env());
    if let Some(p) = pythonpath {
        cmd.env("PYTHONPATH", p);
    }
}

/// The kernel mechanisms that confine user code on this machine, probed once per process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Isolation {
    /// A network namespace with no interface up (`unshare -n`): no network at all.
    pub network: bool,
    /// A PID namespace per worker (`unshare -p --fork --kill-child`): when the worker dies the
    /// kernel kills every process in it, daemons that called setsid included.
    pub pid_namespace: bool,
    /// Landlock ABI version of the kernel (0: none). From 1, user code writes only its scratch
    /// directory; from 4 it cannot bind or connect TCP sockets; from 6 it cannot signal
    /// processes outside its sandbox or reach abstract Unix sockets outside it.
    pub landlock_abi: u32,
    /// Landlock controls connecting to path-named Unix sockets (LANDLOCK_ACCESS_FS_RESOLVE_UNIX,
    /// kernels from 2026): sockets outside the scratch directory are unreachable.
    pub unix_sockets: bool,
}

impl Isolation {
    /// Whether user code can write outside its scratch directory.
    pub fn confines_writes(&self) -> bool {
        self.landlock_abi >= 1
    }

    /// What is missing here, in words, for a one-time warning (empty when nothing is).
    pub fn gaps(&self) -> Vec<&'static str> {
        let mut gaps = Vec::new();
        if !self.network {
            gaps.push("network access (no unprivileged user namespaces)");
        }
        if !self.pid_namespace {
            gaps.push(
                "a PID namespace (a daemon started by user code can outlive a killed reprolab)",
            );
        }
        if self.landlock_abi < 1 {
            gaps.push("file-system writes (no Landlock: user code can write the user's files)");
        } else if self.landlock_abi < 6 {
            gaps.push("signals to processes outside the sandbox (Landlock ABI < 6)");
        }
        if !self.unix_sockets {
            gaps.push("path-named Unix sockets (this kernel's Landlock cannot restrict them)");
        }
        gaps
    }
}

fn disabled() -> bool {
    std::env::var_os("REPROLAB_NO_ISOLATION").is_some_and(|v| v != "0")
}

fn runs(program: &str, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// What this machine offers (see [`Isolation`]). `REPROLAB_NO_ISOLATION=1` turns every
/// mechanism off (for debugging a subject that needs the network or writes elsewhere).
pub fn isolation() -> Isolation {
    static PROBE: OnceLock<Isolation> = OnceLock::new();
    *PROBE.get_or_init(|| {
        if disabled() {
            return Isolation {
                network: false,
                pid_namespace: false,
                landlock_abi: 0,
                unix_sockets: false,
            };
        }
        let network = runs("unshare", &["-rn", "true"]);
        let pid_namespace = network && runs("unshare", &["-rnp", "--fork", "--kill-child", "true"]);
        let landlock_abi = crate::landlock::abi();
        Isolation {
            network,
            pid_namespace,
            landlock_abi,
            unix_sockets: landlock_abi >= 1 && crate::landlock::restricts_unix_sockets(),
        }
    })
}

/// Say once, on stderr, which protections this machine cannot give: the first time on a
/// machine (a marker in the cache directory remembers it, per set of gaps), and at debug level
/// afterwards. `reprolab env` always lists them.
pub fn warn_gaps_once() {
    static WARNED: OnceLock<()> = OnceLock::new();
    WARNED.get_or_init(|| {
        let gaps = isolation().gaps();
        if gaps.is_empty() || disabled() {
            return;
        }
        let text = gaps.join("; ");
        let marker = crate::env::cache_dir().join(format!(
            "sandbox-notice-{:016x}",
            text.bytes()
                .fold(0xcbf29ce484222325u64, |h, b| (h ^ b as u64)
                    .wrapping_mul(0x100000001b3))
        ));
        let message = format!(
            "the sandbox cannot confine {text} on this machine; see docs/execution.md \
             (threat model); `reprolab env` shows what is confined"
        );
        if marker.exists() {
            tracing::debug!("{message}");
        } else {
            tracing::warn!("{message}");
            let _ = std::fs::create_dir_all(crate::env::cache_dir());
            let _ = std::fs::write(&marker, &text);
        }
    });
}

/// The program and leading arguments that start `argv` inside the namespaces: with a PID
/// namespace, `argv` runs as its PID 1 under an `unshare` that dies with reprolab and takes it
/// along (`--kill-child`).
pub fn wrap(argv: &[OsString]) -> (OsString, Vec<OsString>) {
    let iso = isolation();
    if iso.network {
        let flags = if iso.pid_namespace {
            &["-rnp", "--fork", "--kill-child", "--"][..]
        } else {
            &["-rn", "--"][..]
        };
        let mut args: Vec<OsString> = flags.iter().map(OsString::from).collect();
        args.extend(argv.iter().cloned());
        ("unshare".into(), args)
    } else {
        (argv[0].clone(), argv[1..].to_vec())
    }
}

/// `argv` for a program that is not a reprolab worker (a script subject, a fresh pytest): run
/// under `python -m reprolab.sandbox`, a parent that dies with reprolab, kills what the program
/// leaves behind and stands between it and reprolab, and that runs it in the Landlock domain
/// where only `writable` can be written (where the kernel has Landlock).
pub fn confine(python: &Path, writable: &[&Path], argv: &[OsString]) -> Vec<OsString> {
    let mut out: Vec<OsString> = vec![python.into(), "-m".into(), "reprolab.sandbox".into()];
    out.extend(worker_args(writable));
    out.push("--".into());
    out.extend(argv.iter().cloned());
    out
}

/// Arguments that make a reprolab worker module confine itself to `writable`. With a network
/// namespace, TCP is left to it (its "Network is unreachable" says what happened, where
/// Landlock's refusal would be a bare "Permission denied"); without one Landlock refuses TCP.
pub fn worker_args(writable: &[&Path]) -> Vec<OsString> {
    let iso = isolation();
    if !iso.confines_writes() {
        return Vec::new();
    }
    let mut args: Vec<OsString> = writable
        .iter()
        .flat_map(|w| [OsString::from("--write"), w.into()])
        .collect();
    if iso.network {
        args.push("--netns".into());
    }
    args
}

/// Settings every process reprolab starts for user code gets: its own session (so its own
/// process group, whose id is its pid, and no controlling terminal: user code cannot open
/// `/dev/tty` and push keystrokes into the user's shell with `TIOCSTI`), none of the file
/// descriptors reprolab inherited from whoever started it (a descriptor without close-on-exec,
/// such as a pipe of the calling tool or a make jobserver, would otherwise reach user code,
/// with the rights it was opened with, whatever Landlock says), killed when its handle is
/// dropped, and SIGKILLed by the kernel when reprolab dies (even by SIGKILL). The parent-death
/// signal fires when the *thread* that spawned it exits; processes are spawned from the async
/// runtime's worker threads, which live as long as reprolab.
pub fn contain(cmd: &mut tokio::process::Command) {
    cmd.kill_on_drop(true);
    // SAFETY: setsid, prctl, close_range, getrlimit and fcntl are async-signal-safe and touch
    // no memory of the parent.
    unsafe {
        cmd.pre_exec(|| {
            // A new session, not only a process group: a group of its own would stay in
            // reprolab's session, whose controlling terminal any member can open.
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            close_inherited_fds();
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            // reprolab died between fork and prctl: do not start at all.
            if libc::getppid() == 1 {
                return Err(std::io::Error::other("reprolab exited"));
            }
            Ok(())
        });
    }
}

/// Mark every descriptor above stderr close-on-exec, in a child between fork and exec: what
/// the program is meant to get is on 0-2 by then (the standard library's own descriptors are
/// close-on-exec already), anything else was inherited by reprolab and is not for user code.
/// `close_range` (Linux 5.11+) does it at once; older kernels get a loop up to the descriptor
/// limit (bounded, in case that limit is huge).
///
/// # Safety
/// Only for a child between fork and exec: it changes descriptors of the calling process.
unsafe fn close_inherited_fds() {
    const CLOSE_RANGE_CLOEXEC: libc::c_uint = 1 << 2;
    // SAFETY: close_range only changes flags of this process's descriptors.
    let done = unsafe {
        libc::syscall(
            libc::SYS_close_range,
            3 as libc::c_uint,
            libc::c_uint::MAX,
            CLOSE_RANGE_CLOEXEC,
        )
    } == 0;
    if done {
        return;
    }
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `limit` is a valid rlimit for getrlimit to fill.
    let max = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0 {
        limit.rlim_cur.min(1 << 20) as libc::c_int
    } else {
        1024
    };
    for fd in 3..max {
        // SAFETY: fcntl on a descriptor that may not exist only fails with EBADF.
        unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFD);
            if flags >= 0 && flags & libc::FD_CLOEXEC == 0 {
                libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC);
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn env_rules_pass_no_credential_names() {
        let rules = env_rules_with(Some("MY_SETTING, OPENAI_API_KEY"));
        let pass: Vec<&str> = rules["pass"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(serde_json::Value::as_str)
            .collect();
        assert!(pass.contains(&"MY_SETTING") && pass.contains(&"PATH"));
        assert!(!pass.contains(&"OPENAI_API_KEY"));
        assert_eq!(rules["fixed"]["OMP_NUM_THREADS"], "1");
    }

    #[test]
    fn credentials_in_names_and_values_are_recognised() {
        for name in [
            "DATABASE_URL",
            "GH_PAT",
            "SERVICE_CREDS",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "MY_PASS",
        ] {
            assert!(is_credential(name), "{name}");
        }
        // Words inside other words are not segments.
        for name in ["PATH", "PATCH_LEVEL", "COMPASS_DIR", "PYTHONPATH"] {
            assert!(!is_credential(name), "{name}");
        }
        assert!(is_credential_value("postgres://u:s3cret@db.example/x"));
        assert!(is_credential_value(
            "x https://tok:x-oauth@github.com/a.git"
        ));
        assert!(!is_credential_value("https://example.com/a@b"));
        assert!(!is_credential_value("/usr/bin:/bin"));
    }
}
