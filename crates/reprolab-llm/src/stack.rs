//! Putting a model together: the provider a spec names, wrapped (inside out) in recording, the
//! concurrency limit, retries, the budget and the call log. The order matters:
//!
//! - recording sits right on the provider, so only answers (not failed attempts) are recorded;
//! - the limit is inside the retries, so a call sleeping in backoff does not hold a slot;
//! - the budget is outside the retries, so one logical call is counted once;
//! - the log is outermost, so it sees what the caller sees (budget refusals included) and its
//!   latency includes queueing and backoff.
//!
//! Replays get neither retries nor a limit: they never touch the network. Local models get the
//! limit but no retries (their failures do not pass on their own).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::anthropic::Anthropic;
use crate::budget::{Budget, Budgeted};
use crate::cassette::{Recording, Replay};
use crate::http::DEFAULT_MAX_RESPONSE_BYTES;
use crate::limit::Limited;
use crate::log::{CallLog, Logged};
use crate::meter::Meter;
use crate::openai::OpenAiCompatible;
use crate::retry::{RetryPolicy, Retrying};
use crate::spec::Spec;
use crate::{ChatModel, LlmError};

/// Makes the embedded local model of a `local:NAME_OR_PATH` spec (provided by another crate).
pub type LocalFactory<'a> = &'a dyn Fn(&str) -> Result<Arc<dyn ChatModel>, LlmError>;

/// How to wrap the provider. `Settings::default()` is: 120 s timeout, 5 attempts from 1 s
/// backoff, 4 concurrent calls, no budget, no recording, no log.
#[derive(Clone)]
pub struct Settings {
    /// Per HTTP request (overrides the spec's endpoint).
    pub timeout: Duration,
    pub retry: RetryPolicy,
    pub concurrency: usize,
    pub budget: Budget,
    /// Record every answer into this directory (ignored for `replay:` specs).
    pub record_dir: Option<PathBuf>,
    pub log: Option<Arc<dyn CallLog>>,
    /// Totals of the run; keep a clone to read them after the calls.
    pub meter: Arc<Meter>,
    pub max_response_bytes: usize,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            timeout: Duration::from_secs(120),
            retry: RetryPolicy::default(),
            concurrency: 4,
            budget: Budget::default(),
            record_dir: None,
            log: None,
            meter: Arc::new(Meter::new()),
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
        }
    }
}

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Settings")
            .field("timeout", &self.timeout)
            .field("retry", &self.retry)
            .field("concurrency", &self.concurrency)
            .field("budget", &self.budget)
            .field("record_dir", &self.record_dir)
            .field("log", &self.log.is_some())
            .field("max_response_bytes", &self.max_response_bytes)
            .finish_non_exhaustive()
    }
}

/// The model for `spec`, wrapped as [`Settings`] say (see the module documentation for the
/// order). `local` makes `local:` models; without it such a spec is a configuration error.
pub fn build(
    spec: &Spec,
    settings: &Settings,
    local: Option<LocalFactory<'_>>,
) -> Result<Arc<dyn ChatModel>, LlmError> {
    let (base, networked): (Arc<dyn ChatModel>, bool) = match spec {
        Spec::OpenAi(ep) => {
            let ep = ep
                .clone()
                .with_timeout(settings.timeout)
                .with_max_response_bytes(settings.max_response_bytes);
            (Arc::new(OpenAiCompatible::new(ep)?), true)
        }
        Spec::Anthropic(ep) => {
            let ep = ep
                .clone()
                .with_timeout(settings.timeout)
                .with_max_response_bytes(settings.max_response_bytes);
            (Arc::new(Anthropic::new(ep)?), true)
        }
        Spec::Replay(dir) => (Arc::new(Replay::new(dir)?), false),
        Spec::Local(name) => {
            let Some(factory) = local else {
                return Err(LlmError::Config(format!(
                    "local:{name}: this build has no embedded local model support"
                )));
            };
            (factory(name)?, false)
        }
    };
    let mut model = base;
    if let Some(dir) = &settings.record_dir
        && !matches!(spec, Spec::Replay(_))
    {
        model = Arc::new(Recording::new(model, dir)?);
    }
    // Checked for replays too, so a bad flag fails the same way whatever the spec.
    let limited = Limited::new(model.clone(), settings.concurrency)?;
    if !matches!(spec, Spec::Replay(_)) {
        model = Arc::new(limited);
    }
    if networked {
        model = Arc::new(Retrying::new(model, settings.retry).with_meter(settings.meter.clone()));
    }
    model = Arc::new(Budgeted::new(
        model,
        settings.budget,
        settings.meter.clone(),
    ));
    if let Some(log) = &settings.log {
        model = Arc::new(Logged::new(model, log.clone()));
    }
    Ok(model)
}
