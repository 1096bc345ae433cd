//! LLM layer of reprolab: one chat interface ([`ChatModel`]) over OpenAI-compatible servers
//! (OpenAI, vLLM, Ollama, llama.cpp server, LM Studio, ...) and Anthropic's Messages API, chosen
//! by a spec string (`openai:gpt-4o-mini`, `ollama:llama3.2`, `anthropic:claude-3-5-haiku-latest`,
//! `replay:DIR`, `local:NAME`), wrapped in retries, a concurrency limit, a token / cost budget,
//! record / replay and a call log ([`build`]). [`parse`] turns answers into JSON, lists and code.
//!
//! API keys live in [`Secret`]s: never printed by `Debug`, never in errors, call records or
//! recordings; they only go into request headers.
//!
//! See `docs/llm.md` for the user's view.

pub mod anthropic;
pub mod budget;
pub mod cassette;
pub mod config;
pub mod endpoint;
mod error;
#[cfg(feature = "fake")]
pub mod fake;
mod http;
pub mod limit;
pub mod log;
pub mod meter;
pub mod openai;
pub mod parse;
pub mod price;
pub mod retry;
mod secret;
pub mod spec;
mod stack;
mod types;

pub use anthropic::Anthropic;
pub use budget::{Budget, Budgeted};
pub use cassette::{Recording, Replay, request_hash};
pub use config::{ConfigError, LlmConfig};
pub use endpoint::Endpoint;
pub use error::LlmError;
pub use http::{
    DEFAULT_MAX_RESPONSE_BYTES, error_chain, one_line_excerpt, parse_retry_after, retry_after,
};
pub use limit::Limited;
pub use log::{CallLog, CallRecord, CallTotals, Logged};
pub use meter::{Meter, MeterSnapshot};
pub use openai::OpenAiCompatible;
pub use price::Price;
pub use retry::{RetryPolicy, Retrying};
pub use secret::Secret;
pub use spec::{Spec, parse_spec, parse_spec_with};
pub use stack::{LocalFactory, Settings, build};
pub use types::{ChatModel, ChatRequest, ChatResponse, Choice, FinishReason, Message, Role, Usage};
