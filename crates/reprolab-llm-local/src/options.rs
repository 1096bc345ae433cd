//! What a caller asks of one generation, and what it gets back.

use std::time::Duration;

use crate::LocalError;

/// Decoding settings for [`crate::LocalModel::chat`].
#[derive(Debug, Clone, PartialEq)]
pub struct GenOptions {
    /// Most tokens to generate; also reserved out of the context window for the reply.
    pub max_tokens: u32,
    /// 0 = greedy (argmax, `seed` and `top_p` unused); otherwise softmax temperature.
    pub temperature: f64,
    /// Seed of the sampler's generator: same seed, same prompt, same options → same text.
    pub seed: u64,
    /// Nucleus sampling: sample among the most probable tokens holding this much mass, in (0, 1].
    pub top_p: f64,
}

impl Default for GenOptions {
    fn default() -> Self {
        GenOptions {
            max_tokens: 256,
            temperature: 0.0,
            seed: 0,
            top_p: 1.0,
        }
    }
}

impl GenOptions {
    pub(crate) fn validate(&self) -> Result<(), LocalError> {
        if self.max_tokens == 0 {
            return Err(LocalError::Options {
                field: "max_tokens",
                found: "0".into(),
                expected: "at least 1",
            });
        }
        if !(self.temperature.is_finite() && self.temperature >= 0.0) {
            return Err(LocalError::Options {
                field: "temperature",
                found: self.temperature.to_string(),
                expected: "a finite number >= 0 (0 = greedy)",
            });
        }
        if !(self.top_p > 0.0 && self.top_p <= 1.0) {
            return Err(LocalError::Options {
                field: "top_p",
                found: self.top_p.to_string(),
                expected: "a number in (0, 1]",
            });
        }
        Ok(())
    }
}

/// The reply to one [`crate::LocalModel::chat`] call.
#[derive(Debug, Clone, PartialEq)]
pub struct Generation {
    /// The reply, without the end-of-turn token.
    pub text: String,
    /// Tokens of the rendered prompt actually fed to the model (after any truncation).
    pub prompt_tokens: u64,
    /// Tokens generated, not counting the end-of-turn token.
    pub completion_tokens: u64,
    /// true: the model ended its turn; false: it hit `max_tokens` or the context window.
    pub stopped: bool,
    /// Tokens cut from the start of old messages to fit the context window (0 almost always;
    /// a warning is logged when not).
    pub truncated_tokens: u64,
    /// Time spent on the prompt (prefill) and on generating (decode), for tokens/s reports.
    pub prefill_time: Duration,
    pub decode_time: Duration,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_greedy() {
        let d = GenOptions::default();
        assert!(d.validate().is_ok());
        assert_eq!(d.temperature, 0.0);
    }

    #[test]
    fn out_of_range_options_name_the_field() {
        let bad = [
            GenOptions {
                max_tokens: 0,
                ..Default::default()
            },
            GenOptions {
                temperature: -0.1,
                ..Default::default()
            },
            GenOptions {
                temperature: f64::NAN,
                ..Default::default()
            },
            GenOptions {
                top_p: 0.0,
                ..Default::default()
            },
            GenOptions {
                top_p: 1.5,
                ..Default::default()
            },
        ];
        let fields = ["max_tokens", "temperature", "temperature", "top_p", "top_p"];
        for (opts, field) in bad.iter().zip(fields) {
            let err = opts.validate().unwrap_err().to_string();
            assert!(err.contains(field), "{err}");
        }
    }
}
