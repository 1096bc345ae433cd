//! A per-run token and dollar budget. When it is spent the next call fails with
//! [`LlmError::BudgetExceeded`], which callers treat as "stop asking and report what you have",
//! not as a crash. Usage is counted from successful calls (failed calls are not billed by the
//! providers; replayed calls count as recorded, so a replay stops where the recording stopped).
//! Calls already in flight when the budget runs out still finish, so a run can overshoot by at
//! most the concurrency limit times one call.

use std::sync::Arc;

use async_trait::async_trait;

use crate::meter::Meter;
use crate::{ChatModel, ChatRequest, ChatResponse, LlmError};

/// Limits for one run; `None` = unlimited.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Budget {
    /// Prompt plus completion tokens.
    pub max_tokens: Option<u64>,
    /// US dollars (only calls with a known price count).
    pub max_cost_usd: Option<f64>,
}

impl Budget {
    /// The error to return when `meter` has reached a limit.
    fn exceeded(&self, meter: &Meter) -> Option<LlmError> {
        let s = meter.snapshot();
        if let Some(limit) = self.max_tokens
            && s.tokens() >= limit
        {
            return Some(LlmError::BudgetExceeded {
                what: "tokens".into(),
                used: s.tokens() as f64,
                limit: limit as f64,
            });
        }
        if let Some(limit) = self.max_cost_usd
            && s.cost_usd >= limit
        {
            return Some(LlmError::BudgetExceeded {
                what: "USD".into(),
                used: (s.cost_usd * 1e6).round() / 1e6,
                limit,
            });
        }
        None
    }
}

/// Counts every call into a [`Meter`] and refuses calls once the [`Budget`] is spent.
pub struct Budgeted {
    inner: Arc<dyn ChatModel>,
    budget: Budget,
    meter: Arc<Meter>,
}

impl Budgeted {
    pub fn new(inner: Arc<dyn ChatModel>, budget: Budget, meter: Arc<Meter>) -> Budgeted {
        Budgeted {
            inner,
            budget,
            meter,
        }
    }
}

#[async_trait]
impl ChatModel for Budgeted {
    fn name(&self) -> String {
        self.inner.name()
    }

    async fn chat(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        if let Some(e) = self.budget.exceeded(&self.meter) {
            return Err(e);
        }
        match self.inner.chat(req).await {
            Ok(r) => {
                self.meter.add_success(r.usage, r.cost_usd, r.replayed);
                Ok(r)
            }
            Err(e) => {
                self.meter.add_failure();
                Err(e)
            }
        }
    }
}
