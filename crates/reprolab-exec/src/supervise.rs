//! The watchdog around one running evaluation: wall time, memory of its process tree and the
//! size of its output, checked every 100 ms, and what it wrote into its work directory (the
//! directory of its output, the only place the sandbox lets it write), checked every second.
//! Memory is read as RSS (an upper bound) at every look and as PSS only when that bound passes
//! the limit ([`Tree::memory_mb_against`]). Past a limit the tree gets SIGTERM, then SIGKILL
//! after a grace period.

use std::future::Future;
use std::path::Path;
use std::time::{Duration, Instant};

use reprolab_core::manifest::Limits;

use crate::proctree::Tree;

const POLL: Duration = Duration::from_millis(100);
/// Every how many looks the work directory is measured (walking it costs more than a look).
const DISK_EVERY: u32 = 10;
const GRACE: Duration = Duration::from_secs(2);

/// Which limit a run broke.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Violation {
    Timeout,
    Memory,
    Output,
    Disk,
}

/// What the watchdog saw.
#[derive(Debug)]
pub struct Supervised<T> {
    /// The value of `done`, unless even SIGKILL did not make it finish in time.
    pub done: Option<T>,
    pub violation: Option<Violation>,
    pub peak_mb: u64,
    pub elapsed: Duration,
    /// Ended by [`supervise_until`]'s `cancel` (the tree was killed; no limit was broken).
    pub cancelled: bool,
}

/// Wait for `done` while enforcing `limits` on the process tree `tree`, whose combined output
/// goes to `output`. Memory is the tree's PSS above its baseline ([`Tree`]). Past a limit the
/// tree gets SIGTERM, then SIGKILL after a grace period; `stuck_after` bounds the wait after
/// SIGKILL (a stuck parent, e.g. a worker that no longer answers).
pub async fn supervise<T>(
    tree: Tree,
    limits: &Limits,
    output: &Path,
    done: impl Future<Output = T>,
    stuck_after: Duration,
) -> Supervised<T> {
    supervise_until(
        tree,
        limits,
        output,
        done,
        stuck_after,
        std::future::pending(),
    )
    .await
}

/// [`supervise`], and when `cancel` resolves first (its caller is gone) the tree is ended as
/// for a broken limit, so that a cancelled evaluation stops using its slot at once.
pub async fn supervise_until<T>(
    tree: Tree,
    limits: &Limits,
    output: &Path,
    done: impl Future<Output = T>,
    stuck_after: Duration,
    cancel: impl Future<Output = ()>,
) -> Supervised<T> {
    let start = Instant::now();
    let timeout = Duration::from_secs_f64(limits.timeout_s);
    let output_cap = limits.output_mb.saturating_mul(1024 * 1024);
    let workdir = output.parent().map(Path::to_path_buf);
    let mut peak = 0u64;
    let mut looks = 0u32;
    // Measuring memory scans /proc and walks every process's page tables: for a tree of
    // hundreds of processes that takes seconds. It runs on a blocking thread while this loop
    // keeps checking time and output every POLL, so a slow measurement delays neither a timeout
    // nor any other evaluation's watchdog.
    // Memory in MB, and every DISK_EVERY looks the work directory's size in MB.
    let mut measuring: Option<tokio::task::JoinHandle<(u64, Option<u64>)>> = None;
    tokio::pin!(done);
    tokio::pin!(cancel);
    // `None`: cancelled.
    let violation = loop {
        tokio::select! {
            v = &mut done => {
                if let Some(h) = measuring.take() {
                    h.abort();
                }
                return Supervised { done: Some(v), violation: None, peak_mb: peak, elapsed: start.elapsed(), cancelled: false };
            }
            () = &mut cancel => break None,
            _ = tokio::time::sleep(POLL) => {
                if start.elapsed() > timeout {
                    break Some(Violation::Timeout);
                }
                if std::fs::metadata(output).is_ok_and(|m| m.len() > output_cap) {
                    break Some(Violation::Output);
                }
                if measuring.as_ref().is_some_and(|h| h.is_finished()) {
                    let (mb, disk) = measuring.take().expect("checked").await.unwrap_or((0, None));
                    peak = peak.max(mb);
                    if mb > limits.memory_mb {
                        break Some(Violation::Memory);
                    }
                    if disk.is_some_and(|d| d > limits.disk_mb) {
                        break Some(Violation::Disk);
                    }
                }
                if measuring.is_none() {
                    let limit = limits.memory_mb;
                    looks = looks.wrapping_add(1);
                    let dir = workdir.clone().filter(|_| looks.is_multiple_of(DISK_EVERY));
                    measuring = Some(tokio::task::spawn_blocking(move || {
                        (tree.memory_mb_against(limit), dir.map(|d| disk_mb(&d)))
                    }));
                }
            }
        }
    };
    if let Some(h) = measuring.take() {
        h.abort();
    }
    tracing::debug!(
        root = tree.root,
        ?violation,
        "limit exceeded or cancelled; terminating the evaluation's processes"
    );
    tree.signal(libc::SIGTERM);
    let done_value = match tokio::time::timeout(GRACE, &mut done).await {
        Ok(v) => Some(v),
        Err(_) => {
            let _ = tokio::task::spawn_blocking(move || tree.kill()).await;
            tokio::time::timeout(stuck_after, &mut done).await.ok()
        }
    };
    Supervised {
        done: done_value,
        violation,
        peak_mb: peak,
        elapsed: start.elapsed(),
        cancelled: violation.is_none(),
    }
}

/// What the files below `dir` occupy on disk, in MB: allocated blocks, so a sparse file counts
/// what it holds; links are not followed, and a file removed while the walk runs is skipped.
pub fn disk_mb(dir: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;

    let mut bytes = 0u64;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(m) = entry.metadata() else { continue };
            if m.is_dir() {
                stack.push(entry.path());
            }
            bytes = bytes.saturating_add(m.blocks().saturating_mul(512));
        }
    }
    bytes / (1024 * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Limits no test run comes near.
    const LIMITS: Limits = Limits {
        timeout_s: 120.0,
        memory_mb: 4096,
        output_mb: 4,
        disk_mb: 64,
    };

    #[tokio::test]
    async fn a_cancelled_run_is_ended_at_once_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let output = dir.path().join("output.log");
        let mut child = tokio::process::Command::new("sleep")
            .arg("60")
            .spawn()
            .unwrap();
        let pid = child.id().unwrap() as i32;
        let sup = supervise_until(
            Tree::whole(pid),
            &LIMITS,
            &output,
            child.wait(),
            Duration::from_secs(10),
            tokio::time::sleep(Duration::from_millis(300)),
        )
        .await;
        assert!(sup.cancelled && sup.violation.is_none());
        // Ended by a signal, not by its own end 60 s later: the cancelled run freed its slot.
        let status = sup.done.expect("it ended within the grace period").unwrap();
        assert!(status.code().is_none(), "{status:?}");
    }

    #[test]
    fn disk_counts_what_files_hold_below_a_directory() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub/a"), vec![1u8; 3 << 20]).unwrap();
        std::fs::write(dir.path().join("b"), vec![1u8; 2 << 20]).unwrap();
        // A sparse file of 1 GB holds nothing.
        std::fs::File::create(dir.path().join("sparse"))
            .unwrap()
            .set_len(1 << 30)
            .unwrap();
        assert_eq!(disk_mb(dir.path()), 5);
        assert_eq!(disk_mb(&dir.path().join("missing")), 0);
    }

    #[tokio::test]
    async fn writing_past_the_disk_limit_ends_the_run() {
        let dir = tempfile::tempdir().unwrap();
        let output = dir.path().join("output.log");
        // 64 MB is the limit: write 16 MB a time, then wait.
        let mut child = tokio::process::Command::new("sh")
            .arg("-c")
            .arg("for i in 1 2 3 4 5 6 7 8; do head -c 16777216 /dev/zero > f$i; done; sleep 60")
            .current_dir(dir.path())
            .spawn()
            .unwrap();
        let pid = child.id().unwrap() as i32;
        let sup = supervise(
            Tree::whole(pid),
            &LIMITS,
            &output,
            child.wait(),
            Duration::from_secs(10),
        )
        .await;
        assert_eq!(sup.violation, Some(Violation::Disk));
        assert!(sup.elapsed < Duration::from_secs(50), "{:?}", sup.elapsed);
    }

    #[tokio::test]
    async fn a_run_that_ends_first_is_not_cancelled() {
        let dir = tempfile::tempdir().unwrap();
        let mut child = tokio::process::Command::new("true").spawn().unwrap();
        let pid = child.id().unwrap() as i32;
        let sup = supervise_until(
            Tree::whole(pid),
            &LIMITS,
            &dir.path().join("output.log"),
            child.wait(),
            Duration::from_secs(10),
            tokio::time::sleep(Duration::from_secs(60)),
        )
        .await;
        assert!(!sup.cancelled && sup.violation.is_none());
        assert!(sup.done.unwrap().unwrap().success());
    }
}
