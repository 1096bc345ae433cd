//! The watchdog around one running evaluation: wall time, resident memory of its process group
//! and the size of its output, checked every 100 ms. Past a limit the group gets SIGTERM, then
//! SIGKILL after a grace period.

use std::future::Future;
use std::path::Path;
use std::time::{Duration, Instant};

use reprolab_core::manifest::Limits;

use crate::sandbox::{group_private_mb, group_rss_mb, kill_group};

const POLL: Duration = Duration::from_millis(100);
const GRACE: Duration = Duration::from_secs(2);

/// Which limit a run broke.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Violation {
    Timeout,
    Memory,
    Output,
}

/// What the watchdog saw.
#[derive(Debug)]
pub struct Supervised<T> {
    /// The value of `done`, unless even SIGKILL did not make it finish in time.
    pub done: Option<T>,
    pub violation: Option<Violation>,
    pub peak_rss_mb: u64,
    pub elapsed: Duration,
}

/// How the memory of a supervised process group is measured against `Limits::memory_mb`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum MemoryMeasure {
    /// Resident memory of the group minus `baseline_mb` (the pages a forked child inherited from
    /// its warm parent count as the child's in RSS).
    Rss { baseline_mb: u64 },
    /// Private memory of the group ([`group_private_mb`]): needs no baseline and is not fooled
    /// by a child that forks many copies of itself.
    Private,
}

impl MemoryMeasure {
    fn measure(self, pgid: i32) -> u64 {
        match self {
            MemoryMeasure::Rss { baseline_mb } => group_rss_mb(pgid).saturating_sub(baseline_mb),
            MemoryMeasure::Private => group_private_mb(pgid),
        }
    }
}

/// Wait for `done` while enforcing `limits` on the process group `pgid`, whose combined output
/// goes to `output`. `baseline_mb` is subtracted from the group's resident memory: a child forked
/// from a warm worker starts with the worker's pages (torch, ~400 MB) counted as its own, and
/// the bound is on what the evaluation adds. `stuck_after` bounds the wait after SIGKILL (a stuck
/// parent, e.g. a worker that no longer answers).
pub async fn supervise<T>(
    pgid: i32,
    baseline_mb: u64,
    limits: &Limits,
    output: &Path,
    done: impl Future<Output = T>,
    stuck_after: Duration,
) -> Supervised<T> {
    supervise_with(
        pgid,
        MemoryMeasure::Rss { baseline_mb },
        limits,
        output,
        done,
        stuck_after,
    )
    .await
}

/// [`supervise`] with the memory measured as `memory` says.
pub async fn supervise_with<T>(
    pgid: i32,
    memory: MemoryMeasure,
    limits: &Limits,
    output: &Path,
    done: impl Future<Output = T>,
    stuck_after: Duration,
) -> Supervised<T> {
    let start = Instant::now();
    let timeout = Duration::from_secs_f64(limits.timeout_s);
    let output_cap = limits.output_mb * 1024 * 1024;
    let mut peak = 0u64;
    // Measuring memory scans /proc and, for private memory, walks every process's page tables:
    // for a group of hundreds of processes that takes seconds. It runs on a blocking thread
    // while this loop keeps checking time and output every POLL, so a slow measurement delays
    // neither a timeout nor any other evaluation's watchdog.
    let mut measuring: Option<tokio::task::JoinHandle<u64>> = None;
    tokio::pin!(done);
    let violation = loop {
        tokio::select! {
            v = &mut done => {
                if let Some(h) = measuring.take() {
                    h.abort();
                }
                return Supervised { done: Some(v), violation: None, peak_rss_mb: peak, elapsed: start.elapsed() };
            }
            _ = tokio::time::sleep(POLL) => {
                if start.elapsed() > timeout {
                    break Violation::Timeout;
                }
                if std::fs::metadata(output).is_ok_and(|m| m.len() > output_cap) {
                    break Violation::Output;
                }
                if measuring.as_ref().is_some_and(|h| h.is_finished()) {
                    let rss = measuring.take().expect("checked").await.unwrap_or(0);
                    peak = peak.max(rss);
                    if rss > limits.memory_mb {
                        break Violation::Memory;
                    }
                }
                if measuring.is_none() {
                    measuring = Some(tokio::task::spawn_blocking(move || memory.measure(pgid)));
                }
            }
        }
    };
    if let Some(h) = measuring.take() {
        h.abort();
    }
    tracing::debug!(
        pgid,
        ?violation,
        "limit exceeded; terminating the process group"
    );
    kill_group(pgid, libc::SIGTERM);
    let done_value = match tokio::time::timeout(GRACE, &mut done).await {
        Ok(v) => Some(v),
        Err(_) => {
            kill_group(pgid, libc::SIGKILL);
            tokio::time::timeout(stuck_after, &mut done).await.ok()
        }
    };
    Supervised {
        done: done_value,
        violation: Some(violation),
        peak_rss_mb: peak,
        elapsed: start.elapsed(),
    }
}
