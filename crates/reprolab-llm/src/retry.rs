//! Retries with exponential backoff and jitter. Hosted APIs answer bursts with 429 and have
//! transient 5xx and timeouts; a long benchmark must ride them out rather than lose samples. Only
//! failures that can pass on their own are retried ([`LlmError::is_retryable`]): a 400 or 401
//! will fail the same way every time.

use std::hash::{BuildHasher, RandomState};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;

use crate::meter::Meter;
use crate::{ChatModel, ChatRequest, ChatResponse, LlmError};

/// How hard to try.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included (1 = no retries).
    pub max_attempts: u32,
    /// Backoff before the second attempt; doubled each time.
    pub base_delay: Duration,
    /// Cap on one backoff (a server's `Retry-After` may ask for longer, up to 10 minutes).
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> RetryPolicy {
        RetryPolicy {
            max_attempts: 5,
            base_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(60),
        }
    }
}

/// Longest `Retry-After` honoured.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(600);

impl RetryPolicy {
    /// Wait before attempt `attempt + 1` after `attempt` failures (1-based): the server's
    /// `Retry-After` when it gave one, else `base * 2^(attempt-1)` capped at `max_delay`, with
    /// "equal jitter" (uniform in [d/2, d]) so that parallel callers do not retry in lockstep.
    pub fn delay(&self, attempt: u32, err: &LlmError, jitter: f64) -> Duration {
        self.backoff(attempt, err.retry_after(), jitter)
    }

    /// [`RetryPolicy::delay`] for any client: `retry_after` is what the server asked for (a
    /// `Retry-After` read with [`parse_retry_after`](crate::parse_retry_after)), if anything.
    pub fn backoff(&self, attempt: u32, retry_after: Option<Duration>, jitter: f64) -> Duration {
        if let Some(ra) = retry_after {
            return ra.min(MAX_RETRY_AFTER);
        }
        let exp = self
            .base_delay
            .saturating_mul(1u32 << attempt.saturating_sub(1).min(20));
        let d = exp.min(self.max_delay);
        d.mul_f64(0.5 + 0.5 * jitter.clamp(0.0, 1.0))
    }
}

/// A model that retries its inner model's retryable failures.
pub struct Retrying {
    inner: Arc<dyn ChatModel>,
    policy: RetryPolicy,
    meter: Option<Arc<Meter>>,
    jitter_state: RandomState,
    jitter_counter: AtomicU64,
}

impl Retrying {
    pub fn new(inner: Arc<dyn ChatModel>, policy: RetryPolicy) -> Retrying {
        Retrying {
            inner,
            policy,
            meter: None,
            jitter_state: RandomState::new(),
            jitter_counter: AtomicU64::new(0),
        }
    }

    /// Counts retries in `meter`.
    pub fn with_meter(mut self, meter: Arc<Meter>) -> Retrying {
        self.meter = Some(meter);
        self
    }

    /// A number in [0, 1), different on every call (no `rand` dependency needed for jitter).
    fn jitter(&self) -> f64 {
        let n = self.jitter_counter.fetch_add(1, Ordering::Relaxed);
        (self.jitter_state.hash_one(n) >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[async_trait]
impl ChatModel for Retrying {
    fn name(&self) -> String {
        self.inner.name()
    }

    async fn chat(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let mut attempt = 1;
        loop {
            match self.inner.chat(req).await {
                Ok(r) => return Ok(r),
                Err(e) if e.is_retryable() && attempt < self.policy.max_attempts => {
                    let wait = self.policy.delay(attempt, &e, self.jitter());
                    tracing::warn!(
                        model = %self.inner.name(),
                        attempt,
                        max_attempts = self.policy.max_attempts,
                        wait_ms = wait.as_millis() as u64,
                        "LLM call failed, retrying: {e}"
                    );
                    if let Some(m) = &self.meter {
                        m.add_retry();
                    }
                    tokio::time::sleep(wait).await;
                    attempt += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timeout() -> LlmError {
        LlmError::Timeout {
            url: "u".into(),
            after: Duration::from_secs(1),
        }
    }

    #[test]
    fn backoff_doubles_and_is_capped() {
        let p = RetryPolicy {
            max_attempts: 10,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(500),
        };
        assert_eq!(p.delay(1, &timeout(), 1.0), Duration::from_millis(100));
        assert_eq!(p.delay(2, &timeout(), 1.0), Duration::from_millis(200));
        assert_eq!(p.delay(3, &timeout(), 1.0), Duration::from_millis(400));
        assert_eq!(p.delay(4, &timeout(), 1.0), Duration::from_millis(500));
        assert_eq!(p.delay(40, &timeout(), 1.0), Duration::from_millis(500));
        assert_eq!(p.delay(2, &timeout(), 0.0), Duration::from_millis(100));
    }

    #[test]
    fn retry_after_wins() {
        let p = RetryPolicy::default();
        let e = LlmError::RateLimited {
            url: "u".into(),
            body_excerpt: String::new(),
            retry_after: Some(Duration::from_secs(7)),
        };
        assert_eq!(p.delay(1, &e, 0.3), Duration::from_secs(7));
    }

    #[test]
    fn jitter_is_in_range_and_varies() {
        struct Never;
        #[async_trait]
        impl ChatModel for Never {
            fn name(&self) -> String {
                "never".into()
            }
            async fn chat(&self, _: &ChatRequest) -> Result<ChatResponse, LlmError> {
                unreachable!()
            }
        }
        let r = Retrying::new(Arc::new(Never), RetryPolicy::default());
        let xs: Vec<f64> = (0..100).map(|_| r.jitter()).collect();
        assert!(xs.iter().all(|x| (0.0..1.0).contains(x)));
        assert!(xs.iter().any(|x| *x != xs[0]));
    }
}
