//! Every call, successful or not, handed to a [`CallLog`] (the binary stores them in the run
//! store's `llm_calls` table), so that a result can be traced back to the exact prompts and
//! answers behind it. The record holds the request and response as JSON; neither contains a
//! key, since keys live only in providers' HTTP headers.

use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use serde::Serialize;

use crate::cassette::request_hash;
use crate::{ChatModel, ChatRequest, ChatResponse, LlmError};

/// One finished call.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallRecord {
    /// `provider:model` of the stack (`replay:DIR` for replays).
    pub model: String,
    /// See [`request_hash`]: the cassette file name of this request.
    pub request_hash: String,
    /// The [`ChatRequest`] as JSON.
    pub request: serde_json::Value,
    /// The [`ChatResponse`] as JSON, `None` when the call failed.
    pub response: Option<serde_json::Value>,
    /// The error message when the call failed.
    pub error: Option<String>,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Wall-clock milliseconds as the caller saw them (retries and queueing included).
    pub latency_ms: u64,
    pub cost_usd: Option<f64>,
    pub replayed: bool,
}

/// Where call records go. Implementations must not block for long: they run on the caller's
/// task after every call.
pub trait CallLog: Send + Sync {
    fn record(&self, call: &CallRecord);
}

/// Reports every call of the inner model to a [`CallLog`].
pub struct Logged {
    inner: Arc<dyn ChatModel>,
    log: Arc<dyn CallLog>,
}

impl Logged {
    pub fn new(inner: Arc<dyn ChatModel>, log: Arc<dyn CallLog>) -> Logged {
        Logged { inner, log }
    }
}

#[async_trait]
impl ChatModel for Logged {
    fn name(&self) -> String {
        self.inner.name()
    }

    async fn chat(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let start = Instant::now();
        let result = self.inner.chat(req).await;
        let latency_ms = start.elapsed().as_millis() as u64;
        let request = serde_json::to_value(req).unwrap_or(serde_json::Value::Null);
        let record = match &result {
            Ok(r) => CallRecord {
                model: self.inner.name(),
                request_hash: request_hash(req),
                request,
                response: serde_json::to_value(r).ok(),
                error: None,
                prompt_tokens: r.usage.prompt_tokens,
                completion_tokens: r.usage.completion_tokens,
                latency_ms,
                cost_usd: r.cost_usd,
                replayed: r.replayed,
            },
            Err(e) => CallRecord {
                model: self.inner.name(),
                request_hash: request_hash(req),
                request,
                response: None,
                error: Some(e.to_string()),
                prompt_tokens: 0,
                completion_tokens: 0,
                latency_ms,
                cost_usd: None,
                replayed: false,
            },
        };
        match &result {
            Ok(r) => tracing::debug!(
                model = %record.model,
                hash = %&record.request_hash[..12],
                prompt_tokens = r.usage.prompt_tokens,
                completion_tokens = r.usage.completion_tokens,
                latency_ms,
                replayed = r.replayed,
                "LLM call"
            ),
            Err(e) => tracing::debug!(model = %record.model, latency_ms, "LLM call failed: {e}"),
        }
        self.log.record(&record);
        result
    }
}
