//! What can go wrong talking to a model. Every message says what happened and what to do about
//! it; none contains an API key (providers redact the key from anything a server echoes back).

use std::path::PathBuf;
use std::time::Duration;

/// An LLM call failed.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    /// The server answered with an HTTP error status other than 429.
    #[error("HTTP {status} from {url}: {body_excerpt}{}", http_hint(*status))]
    Http {
        url: String,
        status: u16,
        /// The start of the response body (at most a few hundred characters).
        body_excerpt: String,
        /// The server's `Retry-After`, when it sent one (e.g. 503).
        retry_after: Option<Duration>,
    },
    /// The request took longer than the configured timeout.
    #[error(
        "LLM request to {url} timed out after {:.0} s; raise --llm-timeout or check that the \
         server is not overloaded",
        after.as_secs_f64()
    )]
    Timeout { url: String, after: Duration },
    /// No connection could be made.
    #[error(
        "cannot connect to {url}: {detail}; is the server running and is the base URL right \
         (OPENAI_BASE_URL, OLLAMA_HOST, or the @URL of --llm)?"
    )]
    Connect { url: String, detail: String },
    /// The connection broke while the request or the response was on the wire.
    #[error("connection to {url} broke mid-request: {detail}")]
    Transport { url: String, detail: String },
    /// HTTP 429 (after the retries, when retrying).
    #[error(
        "rate limited by {url} (HTTP 429): {body_excerpt}; lower --llm-concurrency, wait, or \
         raise the provider's limits"
    )]
    RateLimited {
        url: String,
        body_excerpt: String,
        retry_after: Option<Duration>,
    },
    /// The run's token or cost budget is spent; callers should stop cleanly.
    #[error(
        "LLM budget exceeded: {used} {what} used of {limit} allowed for this run; raise \
         {flag} to continue",
        flag = budget_flag(what)
    )]
    BudgetExceeded {
        /// `tokens` or `USD`.
        what: String,
        used: f64,
        limit: f64,
    },
    /// `replay:DIR` has no recording for this request.
    #[error(
        "no recording for request {hash} in {}: the prompt, temperature, max_tokens, n, seed or \
         JSON mode differ from the recorded run (last user message: {prompt:?}); record it with \
         --llm-record {} against a real model",
        dir.display(),
        dir.display()
    )]
    ReplayMiss {
        hash: String,
        dir: PathBuf,
        /// The first 80 characters of the request's last user message.
        prompt: String,
    },
    /// The server answered 2xx but the body is not what the protocol says (not JSON, missing
    /// fields, too large, no choices).
    #[error("bad response from the LLM server: {0}")]
    BadResponse(String),
    /// The model or its settings cannot be set up (unknown provider, missing API key, bad config
    /// file, invalid request).
    #[error("{0}")]
    Config(String),
    /// A recording could not be read or written.
    #[error("LLM recording: {0}")]
    Cassette(String),
}

fn http_hint(status: u16) -> &'static str {
    match status {
        401 | 403 => "; check the API key (OPENAI_API_KEY / ANTHROPIC_API_KEY or api_key_env)",
        404 => "; check the model name and the base URL (it usually ends in /v1)",
        400 | 422 => "; the server rejected the request (model name, max_tokens, n?)",
        408 | 500..=599 => "; the server failed, try again later",
        _ => "",
    }
}

fn budget_flag(what: &str) -> &'static str {
    if what == "USD" {
        "--llm-max-cost"
    } else {
        "--llm-max-tokens-budget"
    }
}

impl LlmError {
    /// True for failures that may pass on their own: 429, 408, 5xx, timeouts and connection
    /// problems. Other 4xx, bad bodies, budgets and misses are final.
    pub fn is_retryable(&self) -> bool {
        match self {
            LlmError::Http { status, .. } => *status == 408 || (500..=599).contains(status),
            LlmError::RateLimited { .. }
            | LlmError::Timeout { .. }
            | LlmError::Connect { .. }
            | LlmError::Transport { .. } => true,
            _ => false,
        }
    }

    /// How long the server asked us to wait, if it said.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            LlmError::Http { retry_after, .. } | LlmError::RateLimited { retry_after, .. } => {
                *retry_after
            }
            _ => None,
        }
    }

    /// True when the run's budget is spent: the caller should stop asking, not fail.
    pub fn is_budget(&self) -> bool {
        matches!(self, LlmError::BudgetExceeded { .. })
    }

    /// A copy of this error with every occurrence of `secret` replaced by `***`; providers call it
    /// on anything built from server output, which may echo the key back.
    pub(crate) fn redact(self, secret: &str) -> LlmError {
        if secret.is_empty() {
            return self;
        }
        let r = |s: String| s.replace(secret, "***");
        match self {
            LlmError::Http {
                url,
                status,
                body_excerpt,
                retry_after,
            } => LlmError::Http {
                url: r(url),
                status,
                body_excerpt: r(body_excerpt),
                retry_after,
            },
            LlmError::RateLimited {
                url,
                body_excerpt,
                retry_after,
            } => LlmError::RateLimited {
                url: r(url),
                body_excerpt: r(body_excerpt),
                retry_after,
            },
            LlmError::Connect { url, detail } => LlmError::Connect {
                url: r(url),
                detail: r(detail),
            },
            LlmError::Transport { url, detail } => LlmError::Transport {
                url: r(url),
                detail: r(detail),
            },
            LlmError::Timeout { url, after } => LlmError::Timeout { url: r(url), after },
            LlmError::BadResponse(s) => LlmError::BadResponse(r(s)),
            LlmError::Config(s) => LlmError::Config(r(s)),
            LlmError::Cassette(s) => LlmError::Cassette(r(s)),
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retryable_classification() {
        let http = |status| LlmError::Http {
            url: "u".into(),
            status,
            body_excerpt: String::new(),
            retry_after: None,
        };
        assert!(http(500).is_retryable());
        assert!(http(503).is_retryable());
        assert!(http(408).is_retryable());
        assert!(!http(400).is_retryable());
        assert!(!http(401).is_retryable());
        assert!(!http(404).is_retryable());
        assert!(
            LlmError::RateLimited {
                url: "u".into(),
                body_excerpt: String::new(),
                retry_after: None
            }
            .is_retryable()
        );
        assert!(!LlmError::BadResponse("x".into()).is_retryable());
        assert!(
            !LlmError::BudgetExceeded {
                what: "tokens".into(),
                used: 1.0,
                limit: 1.0
            }
            .is_retryable()
        );
    }

    #[test]
    fn messages_say_what_to_do() {
        let e = LlmError::BudgetExceeded {
            what: "USD".into(),
            used: 1.5,
            limit: 1.0,
        };
        assert!(e.to_string().contains("--llm-max-cost"), "{e}");
        let e = LlmError::Http {
            url: "http://x/v1/chat/completions".into(),
            status: 401,
            body_excerpt: "bad key".into(),
            retry_after: None,
        };
        assert!(e.to_string().contains("check the API key"), "{e}");
    }

    #[test]
    fn redact_removes_the_secret_everywhere() {
        let e = LlmError::Http {
            url: "http://x".into(),
            status: 401,
            body_excerpt: "invalid key sk-secret-123 given".into(),
            retry_after: None,
        }
        .redact("sk-secret-123");
        assert!(!e.to_string().contains("sk-secret-123"));
        assert!(e.to_string().contains("***"));
    }
}
