//! Scratch directories that do not outlive reprolab: each is named after the process that made
//! it (`reprolab-<pid>-…` in the temporary directory), removed when its owner drops it, removed
//! by [`remove_all`] when reprolab is interrupted (SIGINT/SIGTERM), and, when reprolab was
//! killed outright (SIGKILL, a crash), removed by the next reprolab that starts.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

static LIVE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// A scratch directory; removed on drop.
#[derive(Debug)]
pub struct Scratch {
    dir: tempfile::TempDir,
}

impl Scratch {
    /// A new directory `reprolab-<pid>-<what>-XXXX` in the temporary directory; stale ones of
    /// dead reprolab processes are removed first.
    pub fn new(what: &str) -> std::io::Result<Scratch> {
        let tmp = std::env::temp_dir();
        remove_stale(&tmp);
        let dir = tempfile::Builder::new()
            .prefix(&format!("reprolab-{}-{what}-", std::process::id()))
            .tempdir_in(&tmp)?;
        LIVE.lock().unwrap().push(dir.path().to_path_buf());
        Ok(Scratch { dir })
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        LIVE.lock().unwrap().retain(|p| p != self.dir.path());
    }
}

/// Remove every live scratch directory now (from a signal handler's task, before exiting).
pub fn remove_all() {
    let dirs = std::mem::take(&mut *LIVE.lock().unwrap());
    for d in dirs {
        let _ = std::fs::remove_dir_all(d);
    }
}

/// Wait for SIGINT or SIGTERM, then remove the scratch directories and exit as the signal
/// would have (130 or 143). Spawn it once on the runtime at start-up. The processes reprolab
/// started die with it (their parent-death signal), so nothing else needs stopping.
pub async fn exit_on_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut int), Ok(mut term)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        return;
    };
    let code = tokio::select! {
        _ = int.recv() => 130,
        _ = term.recv() => 143,
    };
    remove_all();
    std::process::exit(code);
}

/// The pid in a name `reprolab-<pid>-…`.
fn owner(name: &str) -> Option<i32> {
    name.strip_prefix("reprolab-")?
        .split('-')
        .next()?
        .parse()
        .ok()
}

/// Remove scratch directories in `tmp` whose reprolab process is gone.
fn remove_stale(tmp: &Path) {
    let Ok(entries) = std::fs::read_dir(tmp) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name.to_str().and_then(owner) else {
            continue;
        };
        if pid > 0 && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_are_read_from_names() {
        assert_eq!(owner("reprolab-123-eval-abc"), Some(123));
        assert_eq!(owner("reprolab-codegen-x"), None);
        assert_eq!(owner("other-1-x"), None);
    }

    #[test]
    fn stale_directories_of_dead_processes_go_and_live_ones_stay() {
        let tmp = tempfile::tempdir().unwrap();
        // No process has this id (above the kernel's pid_max limit of 2^22).
        let dead = tmp.path().join("reprolab-99999999-eval-x");
        let mine = tmp
            .path()
            .join(format!("reprolab-{}-eval-y", std::process::id()));
        std::fs::create_dir_all(dead.join("pool")).unwrap();
        std::fs::create_dir_all(&mine).unwrap();
        remove_stale(tmp.path());
        assert!(!dead.exists());
        assert!(mine.exists());
    }

    #[test]
    fn remove_all_removes_live_directories() {
        let s = Scratch::new("test").unwrap();
        let p = s.path().to_path_buf();
        assert!(p.exists());
        remove_all();
        assert!(!p.exists());
        drop(s);
    }
}
