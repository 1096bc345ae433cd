//! Wiring of the LLM layer: the `--llm*` flags every LLM-using command flattens in, the call log
//! into the run store, and the one function that turns flags into a ready model stack.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::Args;
use reprolab_llm::{
    Budget, CallLog, CallRecord, CallTotals, ChatModel, LlmConfig, LocalFactory, Meter,
    RetryPolicy, Settings, parse_spec_with,
};
use reprolab_store::{LlmCallRecord, Store};

use crate::cli::Global;
use crate::context;

/// Which model to use and how to call it. Flatten into any command that talks to an LLM.
#[derive(Debug, Clone, Args)]
pub struct LlmArgs {
    /// The model: openai:MODEL, openai:MODEL@http://host:port/v1, ollama:MODEL, vllm:MODEL,
    /// lmstudio:MODEL, llamacpp:MODEL, anthropic:MODEL, replay:DIR, local:NAME_OR_PATH, or
    /// NAME[:MODEL] for a [providers.NAME] of --llm-config. See docs/llm.md.
    #[arg(long, env = "REPROLAB_LLM", value_name = "SPEC")]
    pub llm: Option<String>,
    /// Record every answer into DIR (one JSON file per request), for `--llm replay:DIR`.
    #[arg(long, value_name = "DIR")]
    pub llm_record: Option<PathBuf>,
    /// LLM config file (TOML): default spec, named providers, prices.
    #[arg(long, env = "REPROLAB_LLM_CONFIG", value_name = "FILE")]
    pub llm_config: Option<PathBuf>,
    /// Stop asking the LLM once this many tokens (prompt + completion) are used in this run.
    #[arg(long, value_name = "N")]
    pub llm_max_tokens_budget: Option<u64>,
    /// Stop asking the LLM once this many US dollars are spent in this run (models with a known
    /// price only).
    #[arg(long, value_name = "USD")]
    pub llm_max_cost: Option<f64>,
    /// Most LLM calls in flight at once.
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub llm_concurrency: usize,
    /// Seconds before one LLM HTTP request is abandoned (and retried).
    #[arg(long, value_name = "SECS", default_value_t = 120.0)]
    pub llm_timeout: f64,
    /// Attempts per LLM call on 429 / 5xx / timeouts / connection errors (1 = no retries).
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub llm_attempts: u32,
}

/// Writes every LLM call into the store's `llm_calls` table. A failed write is logged, not
/// raised: losing a log row must not fail the experiment that made the call. When the command
/// is done with its model (the log is dropped), it prints what the calls cost, per model.
pub struct StoreCallLog {
    store: Mutex<Store>,
    run_id: Option<i64>,
    usage: Mutex<BTreeMap<String, CallTotals>>,
}

impl StoreCallLog {
    pub fn new(store: Store, run_id: Option<i64>) -> StoreCallLog {
        StoreCallLog {
            store: Mutex::new(store),
            run_id,
            usage: Mutex::new(BTreeMap::new()),
        }
    }

    /// The store, for the command's own writes (runs).
    pub fn store(&self) -> std::sync::MutexGuard<'_, Store> {
        self.store.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl CallLog for StoreCallLog {
    fn record(&self, c: &CallRecord) {
        let rec = LlmCallRecord {
            id: 0,
            run_id: self.run_id,
            model: c.model.clone(),
            request_hash: c.request_hash.clone(),
            request: c.request.clone(),
            response: c.response.clone(),
            error: c.error.clone(),
            prompt_tokens: c.prompt_tokens,
            completion_tokens: c.completion_tokens,
            latency_ms: c.latency_ms,
            cost_usd: c.cost_usd,
            replayed: c.replayed,
            created_at: String::new(),
        };
        if let Err(e) = self.store().record_llm_call(&rec) {
            tracing::warn!("could not record an LLM call in the store: {e}");
        }
        let mut usage = self.usage.lock().unwrap_or_else(|p| p.into_inner());
        usage.entry(c.model.clone()).or_default().add(c);
    }
}

impl Drop for StoreCallLog {
    fn drop(&mut self) {
        let usage = self.usage.lock().unwrap_or_else(|p| p.into_inner());
        for (model, u) in usage.iter() {
            eprintln!("LLM usage, {}", u.line(model));
        }
    }
}

/// A model stack ready to use, with what the command needs around it.
pub struct LlmSession {
    pub model: Arc<dyn ChatModel>,
    /// Run totals (calls, retries, tokens, cost).
    pub meter: Arc<Meter>,
    /// The store the calls are logged to.
    #[allow(dead_code)] // for the LLM-using verbs (codegen, agents) wired next
    pub log: Arc<StoreCallLog>,
}

/// The model of `--llm` (else `$REPROLAB_LLM`, else the config file's `llm`), wrapped with
/// retries, the concurrency limit, the budget, recording and the store call log; `local:` models
/// are the embedded ones.
pub fn chat_model(g: &Global, a: &LlmArgs) -> Result<Arc<dyn ChatModel>> {
    Ok(open(g, a, local_factory(g), None)?.model)
}

/// As [`chat_model`] with any `local:` factory, logging calls under `run_id`, and returning the
/// meter and the log too.
pub fn open(
    g: &Global,
    a: &LlmArgs,
    local: Option<LocalFactory<'_>>,
    run_id: Option<i64>,
) -> Result<LlmSession> {
    let log = Arc::new(StoreCallLog::new(context::open_store(g)?, run_id));
    open_with_log(a, local, log)
}

/// As [`open`] with an existing call log (and its store).
pub fn open_with_log(
    a: &LlmArgs,
    local: Option<LocalFactory<'_>>,
    log: Arc<StoreCallLog>,
) -> Result<LlmSession> {
    let config = match &a.llm_config {
        Some(path) => LlmConfig::load(path)?,
        None => LlmConfig::default(),
    };
    let Some(spec_text) = a.llm.clone().or_else(|| config.llm.clone()) else {
        bail!(
            "no LLM chosen: pass --llm SPEC (e.g. --llm ollama:llama3.2, --llm openai:gpt-4o-mini, \
             --llm replay:DIR) or set REPROLAB_LLM"
        );
    };
    let spec = parse_spec_with(&spec_text, &config, &reprolab_llm::spec::process_env)?;
    if !(a.llm_timeout.is_finite() && a.llm_timeout > 0.0) {
        bail!(
            "--llm-timeout is {}; expected a number of seconds > 0",
            a.llm_timeout
        );
    }
    if let Some(c) = a.llm_max_cost
        && !(c.is_finite() && c >= 0.0)
    {
        bail!("--llm-max-cost is {c}; expected US dollars >= 0");
    }
    if a.llm_attempts == 0 {
        bail!("--llm-attempts is 0; expected at least 1");
    }
    let meter = Arc::new(Meter::new());
    let settings = Settings {
        timeout: Duration::from_secs_f64(a.llm_timeout),
        retry: RetryPolicy {
            max_attempts: a.llm_attempts,
            ..RetryPolicy::default()
        },
        concurrency: a.llm_concurrency,
        budget: Budget {
            max_tokens: a.llm_max_tokens_budget,
            max_cost_usd: a.llm_max_cost,
        },
        record_dir: a.llm_record.clone(),
        log: Some(log.clone()),
        meter: meter.clone(),
        ..Settings::default()
    };
    let model = reprolab_llm::build(&spec, &settings, local)
        .with_context(|| format!("setting up the LLM {}", spec.name()))?;
    Ok(LlmSession { model, meter, log })
}

/// The factory of `local:` models (the embedded GGUF runtime, [`crate::llm_local`]).
pub fn local_factory(_g: &Global) -> Option<LocalFactory<'static>> {
    Some(&crate::llm_local::open)
}
