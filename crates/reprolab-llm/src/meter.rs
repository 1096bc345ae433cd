//! Running totals of one run's LLM use: calls, failures, retries, tokens and dollars. Shared by
//! the wrappers of a stack (the budget reads it, the retrier counts into it) and by the caller,
//! who prints it at the end of a command.

use std::sync::Mutex;

use serde::Serialize;

use crate::Usage;

/// Totals so far; see [`Meter::snapshot`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct MeterSnapshot {
    /// Calls that returned an answer.
    pub calls: u64,
    /// Calls that failed (after retries).
    pub failed: u64,
    /// Retried attempts (a call that succeeded on its third try counts 2).
    pub retries: u64,
    /// Answers that came from a recording.
    pub replayed: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Dollars of the calls whose model has a known price.
    pub cost_usd: f64,
    /// Successful calls whose cost is unknown (not in `cost_usd`).
    pub unpriced: u64,
}

impl MeterSnapshot {
    pub fn tokens(&self) -> u64 {
        self.prompt_tokens + self.completion_tokens
    }
}

/// Thread-safe totals.
#[derive(Debug, Default)]
pub struct Meter {
    state: Mutex<MeterSnapshot>,
}

impl Meter {
    pub fn new() -> Meter {
        Meter::default()
    }

    pub fn snapshot(&self) -> MeterSnapshot {
        *self.lock()
    }

    pub(crate) fn add_success(&self, usage: Usage, cost_usd: Option<f64>, replayed: bool) {
        let mut s = self.lock();
        s.calls += 1;
        s.replayed += replayed as u64;
        s.prompt_tokens += usage.prompt_tokens;
        s.completion_tokens += usage.completion_tokens;
        match cost_usd {
            Some(c) => s.cost_usd += c,
            None => s.unpriced += 1,
        }
    }

    pub(crate) fn add_failure(&self) {
        self.lock().failed += 1;
    }

    pub(crate) fn add_retry(&self) {
        self.lock().retries += 1;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, MeterSnapshot> {
        // The state is plain counters: a panic elsewhere cannot leave it inconsistent.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_usage_and_cost() {
        let m = Meter::new();
        let u = Usage {
            prompt_tokens: 3,
            completion_tokens: 4,
        };
        m.add_success(u, Some(0.5), false);
        m.add_success(u, None, true);
        m.add_failure();
        m.add_retry();
        let s = m.snapshot();
        assert_eq!(s.calls, 2);
        assert_eq!(s.failed, 1);
        assert_eq!(s.retries, 1);
        assert_eq!(s.replayed, 1);
        assert_eq!(s.tokens(), 14);
        assert_eq!(s.cost_usd, 0.5);
        assert_eq!(s.unpriced, 1);
    }
}
