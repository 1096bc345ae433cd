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

/// What one model's calls added up to: how a command says, when it is done, what its calls
/// cost.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct CallTotals {
    pub calls: u64,
    pub failed: u64,
    pub replayed: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// The priced calls' cost.
    pub cost_usd: f64,
    /// Successful calls without a price.
    pub unpriced: u64,
    pub latency_ms: u64,
}

impl CallTotals {
    pub fn add(&mut self, c: &CallRecord) {
        self.calls += 1;
        self.failed += c.error.is_some() as u64;
        self.replayed += c.replayed as u64;
        self.prompt_tokens += c.prompt_tokens;
        self.completion_tokens += c.completion_tokens;
        match c.cost_usd {
            Some(cost) => self.cost_usd += cost,
            None if c.error.is_none() => self.unpriced += 1,
            None => {}
        }
        self.latency_ms += c.latency_ms;
    }

    /// `openai:gpt-4o-mini: 4 calls (1 failed), 1234 prompt + 567 completion tokens, $0.0021,
    /// 2.1 s per call (8.4 s in all)`.
    pub fn line(&self, model: &str) -> String {
        let mut notes = Vec::new();
        if self.failed > 0 {
            notes.push(format!("{} failed", self.failed));
        }
        if self.replayed > 0 {
            notes.push(format!("{} replayed", self.replayed));
        }
        let notes = if notes.is_empty() {
            String::new()
        } else {
            format!(" ({})", notes.join(", "))
        };
        let cost = match (self.cost_usd > 0.0, self.unpriced) {
            (_, 0) => format!("${:.4}", self.cost_usd),
            (false, _) => "cost unknown (no price for this model)".into(),
            (true, n) => format!("${:.4} + {n} unpriced", self.cost_usd),
        };
        let total_s = self.latency_ms as f64 / 1000.0;
        format!(
            "{model}: {} {}{notes}, {} prompt + {} completion tokens, {cost}, {:.1} s per call ({:.1} s in all)",
            self.calls,
            if self.calls == 1 { "call" } else { "calls" },
            self.prompt_tokens,
            self.completion_tokens,
            total_s / self.calls.max(1) as f64,
            total_s
        )
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_say_calls_tokens_cost_and_latency() {
        let call = |cost: Option<f64>, error: bool| CallRecord {
            model: "m".into(),
            request_hash: String::new(),
            request: serde_json::Value::Null,
            response: None,
            error: error.then(|| "boom".to_string()),
            prompt_tokens: 100,
            completion_tokens: 20,
            latency_ms: 1500,
            cost_usd: cost,
            replayed: false,
        };
        let mut t = CallTotals::default();
        t.add(&call(Some(0.001), false));
        t.add(&call(None, true));
        assert_eq!(
            t.line("openai:x"),
            "openai:x: 2 calls (1 failed), 200 prompt + 40 completion tokens, $0.0010, 1.5 s per call (3.0 s in all)"
        );
        let mut free = CallTotals::default();
        free.add(&call(None, false));
        assert_eq!(
            free.line("local:smollm2"),
            "local:smollm2: 1 call, 100 prompt + 20 completion tokens, cost unknown (no price for this model), 1.5 s per call (1.5 s in all)"
        );
    }
}
