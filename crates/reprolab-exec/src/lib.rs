//! Running subjects for real: the managed Python environment, the sandbox every subject runs in,
//! a pool of warm workers that import torch once and fork per evaluation, the cold script runner
//! for plain-script subjects, and the evaluation cache in front of both.

pub mod env;
pub mod evaluator;
pub mod executor;
pub mod landlock;
pub mod pool;
pub mod proctree;
pub mod ray;
pub mod result;
pub mod sandbox;
pub mod scratch;
pub mod script;
pub mod spec_env;
pub mod supervise;
pub mod trainer;
pub mod worker;

pub use env::{EnvOptions, PythonEnv};
pub use evaluator::{EvalError, Evaluation, Evaluator};
pub use executor::{EvalRequest, Executor, LocalExecutor};
pub use ray::{RayExecutor, RayOptions};
pub use result::Finished;
pub use worker::WorkerError;

/// What a training is asked to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Train and report the metrics.
    Eval,
    /// Train once with instrumentation (gradients, activations, weights per epoch).
    Trace,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Eval => "eval",
            Mode::Trace => "trace",
        }
    }
}

/// Default parallelism: one evaluation per core.
pub fn default_workers() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}
