//! A cap on concurrent calls. Benchmarks fan out many prompts at once; providers rate-limit per
//! key and local servers slow down for everyone past a few parallel requests.

use std::sync::Arc;

use async_trait::async_trait;
use tokio::sync::Semaphore;

use crate::{ChatModel, ChatRequest, ChatResponse, LlmError};

/// At most `limit` calls of the inner model run at once; the rest wait their turn.
pub struct Limited {
    inner: Arc<dyn ChatModel>,
    permits: Semaphore,
    limit: usize,
}

impl Limited {
    pub fn new(inner: Arc<dyn ChatModel>, limit: usize) -> Result<Limited, LlmError> {
        if limit == 0 {
            return Err(LlmError::Config(
                "LLM concurrency limit is 0; it must be at least 1 (--llm-concurrency)".into(),
            ));
        }
        Ok(Limited {
            inner,
            permits: Semaphore::new(limit),
            limit,
        })
    }

    pub fn limit(&self) -> usize {
        self.limit
    }
}

#[async_trait]
impl ChatModel for Limited {
    fn name(&self) -> String {
        self.inner.name()
    }

    async fn chat(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        // The semaphore is never closed, so acquiring cannot fail.
        let _permit = self
            .permits
            .acquire()
            .await
            .map_err(|_| LlmError::Config("LLM concurrency limiter was closed".into()))?;
        self.inner.chat(req).await
    }
}
