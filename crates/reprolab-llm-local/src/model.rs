//! A GGUF chat model on the CPU: the quantized decoder ([`crate::decoder`]) + the GGUF's own
//! tokenizer.
//!
//! The architecture is read from the file (`general.architecture`), not from the file name, so
//! any llama-architecture ChatML model (SmolLM2 and its fine-tunes) or Gemma 3 model loads.
//! The tokenizer is shimmytok's, reading the vocabulary stored in the GGUF: candle's own GGUF
//! tokenizer cannot handle Gemma's SentencePiece vocabulary.
//!
//! Threads: candle's CPU kernels use rayon's global pool, sized by `RAYON_NUM_THREADS`, else
//! the number of logical cores. A library must not set process environment variables behind
//! its caller's back, so the binary decides.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::Instant;

use candle_core::quantized::gguf_file;
use candle_core::{DType, Device, Tensor};

use crate::context::{self, Fit};
use crate::decoder::ModelWeights;
use crate::sampling::Sampler;
use crate::template::{ChatTemplate, Message, Piece, Role};
use crate::user_tokens::{Segment, UserTokens};
use crate::{GenOptions, Generation, LocalError};

/// Longest prompt + reply this crate lets a model see (RoPE tables are built for this many
/// positions): on two CPU cores a longer prompt would take minutes to read anyway.
pub const MAX_CONTEXT: usize = 4096;

/// A loaded chat model. Not `Sync`: one conversation at a time (`chat` takes `&mut self`).
pub struct LocalModel {
    name: String,
    path: PathBuf,
    weights: ModelWeights,
    tokenizer: shimmytok::Tokenizer,
    /// Split out of text before shimmytok sees it ([`crate::user_tokens`]).
    user_tokens: UserTokens,
    template: ChatTemplate,
    /// Ids of the control tokens the template uses.
    specials: Vec<(&'static str, u32)>,
    /// Token ids that end the model's turn.
    stop_tokens: Vec<u32>,
    context: usize,
    /// Upper bound of `context`: the trained context, at most [`MAX_CONTEXT`].
    max_context: usize,
    device: Device,
}

impl std::fmt::Debug for LocalModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalModel")
            .field("name", &self.name)
            .field("path", &self.path)
            .field("template", &self.template)
            .field("context", &self.context)
            .finish_non_exhaustive()
    }
}

impl LocalModel {
    /// Loads a GGUF file; the architecture (llama → ChatML, gemma3 → Gemma template) comes from
    /// its metadata.
    pub fn load(gguf: &Path) -> Result<Self, LocalError> {
        let gguf_error = |detail: String| LocalError::Gguf {
            path: gguf.to_path_buf(),
            detail,
        };
        let mut file = File::open(gguf).map_err(|e| LocalError::io(gguf, e))?;
        let content = gguf_file::Content::read(&mut file)
            .map_err(|e| gguf_error(format!("not a readable GGUF file: {e}")))?;
        let arch = content
            .metadata
            .get("general.architecture")
            .and_then(|v| v.to_string().ok())
            .cloned()
            .ok_or_else(|| gguf_error("metadata has no general.architecture".into()))?;
        let trained_context = content
            .metadata
            .get(&format!("{arch}.context_length"))
            .and_then(|v| v.to_u32().ok())
            .map(|n| n as usize);
        let device = Device::Cpu;
        let template = match arch.as_str() {
            "llama" => ChatTemplate::ChatMl,
            "gemma3" => ChatTemplate::Gemma,
            other => {
                return Err(gguf_error(format!(
                    "architecture '{other}': expected llama (SmolLM2) or gemma3 (Gemma 3)"
                )));
            }
        };
        let weights = ModelWeights::from_gguf(content, &mut file, &device, MAX_CONTEXT)
            .map_err(|e| gguf_error(format!("loading {arch} weights: {e}")))?;
        let tokenizer = shimmytok::Tokenizer::from_gguf_file(gguf)
            .map_err(|e| gguf_error(format!("reading its tokenizer: {e}")))?;
        let user_tokens = UserTokens::of(&tokenizer);

        let mut specials = Vec::new();
        for &marker in template_specials(template) {
            let id = tokenizer.get_token(marker).ok_or_else(|| {
                gguf_error(format!(
                    "vocabulary has no control token '{marker}', which the {arch} chat \
                     template ({template:?}) needs: not a chat model this crate knows"
                ))
            })?;
            specials.push((marker, id));
        }
        let mut stop_tokens: Vec<u32> = template
            .stop_markers()
            .iter()
            .filter_map(|m| tokenizer.get_token(m))
            .collect();
        stop_tokens.push(tokenizer.eos_token());
        stop_tokens.sort_unstable();
        stop_tokens.dedup();

        let name = gguf
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| arch.clone());
        let max_context = trained_context.unwrap_or(MAX_CONTEXT).min(MAX_CONTEXT);
        Ok(LocalModel {
            name,
            path: gguf.to_path_buf(),
            weights,
            tokenizer,
            user_tokens,
            template,
            specials,
            stop_tokens,
            context: max_context,
            max_context,
            device,
        })
    }

    /// The GGUF file's stem, e.g. `SmolLM2-135M-Instruct.Q4_1`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Tokens of prompt + reply the model is allowed to see.
    pub fn context_len(&self) -> usize {
        self.context
    }

    /// Lowers (or restores) the context window, e.g. to bound time per call; clamped to
    /// 16..=min(trained context, [`MAX_CONTEXT`]).
    pub fn set_context_len(&mut self, tokens: usize) {
        self.context = tokens.clamp(16, self.max_context);
    }

    /// The token ids `chat` would give the model for `messages`: the rendered chat template
    /// with its control tokens, before any cut to fit the context window.
    pub fn prompt_ids(&self, messages: &[(&str, &str)]) -> Result<Vec<u32>, LocalError> {
        self.encode(&self.template.render(&parse_messages(messages)?))
    }

    /// Token ids of `text` as message text is tokenized: no BOS, and control-token spellings
    /// such as `<|im_end|>` stay text.
    pub fn tokenize(&self, text: &str) -> Result<Vec<u32>, LocalError> {
        let mut ids = Vec::new();
        self.encode_text(text, &mut ids)?;
        Ok(ids)
    }

    /// The text of token ids, control tokens included (replies are decoded without them).
    pub fn detokenize(&self, ids: &[u32]) -> Result<String, LocalError> {
        self.tokenizer
            .decode(ids, false)
            .map_err(|e| self.tokenizer_error(format!("decoding: {e}")))
    }

    /// Answers a conversation of (role, content) pairs, roles being system, user or assistant.
    /// Every call starts from an empty KV cache: calls are independent.
    pub fn chat(
        &mut self,
        messages: &[(&str, &str)],
        opts: &GenOptions,
    ) -> Result<Generation, LocalError> {
        opts.validate()?;
        let mut conversation = parse_messages(messages)?;
        let max_tokens = opts.max_tokens as usize;
        if max_tokens >= self.context {
            return Err(self.overflow(0, opts, "max_tokens alone fills the context".into()));
        }
        let budget = self.context - max_tokens;
        let fit = context::fit(
            &mut conversation,
            budget,
            |m| Ok(self.encode(&self.template.render(m))?.len()),
            |text, n| self.cut_front(text, n),
        )?;
        let truncated = match fit {
            Fit::Fits { cut } => cut,
            Fit::TooLong { tokens } => {
                return Err(self.overflow(
                    tokens,
                    opts,
                    "the system messages alone are too long; shorten them or lower max_tokens"
                        .into(),
                ));
            }
        };
        if truncated > 0 {
            tracing::warn!(
                model = %self.name,
                truncated,
                context = self.context,
                "prompt longer than the context window: cut tokens from the oldest messages"
            );
        }
        let prompt = self.encode(&self.template.render(&conversation))?;
        self.generate(&prompt, opts, truncated)
    }

    fn generate(
        &mut self,
        prompt: &[u32],
        opts: &GenOptions,
        truncated: usize,
    ) -> Result<Generation, LocalError> {
        let mut sampler = Sampler::new(opts.temperature, opts.top_p, opts.seed);
        let started = Instant::now();
        // Position 0 makes the model drop its KV cache: each call starts afresh.
        let mut logits = self.forward(prompt, 0)?;
        let prefill_time = started.elapsed();

        let decode_started = Instant::now();
        let mut generated: Vec<u32> = Vec::new();
        let mut stopped = false;
        loop {
            let token = sampler.sample(&logits);
            if self.stop_tokens.contains(&token) {
                stopped = true;
                break;
            }
            generated.push(token);
            let position = prompt.len() + generated.len() - 1;
            if generated.len() >= opts.max_tokens as usize || position + 1 >= self.context {
                break;
            }
            logits = self.forward(&[token], position)?;
        }
        let decode_time = decode_started.elapsed();
        let text = self
            .tokenizer
            .decode(&generated, true)
            .map_err(|e| self.tokenizer_error(format!("decoding the reply: {e}")))?;
        Ok(Generation {
            text,
            prompt_tokens: prompt.len() as u64,
            completion_tokens: generated.len() as u64,
            stopped,
            truncated_tokens: truncated as u64,
            prefill_time,
            decode_time,
        })
    }

    /// Runs `tokens` at `position` and returns the logits of the last one.
    fn forward(&mut self, tokens: &[u32], position: usize) -> Result<Vec<f32>, LocalError> {
        let run = |weights: &mut ModelWeights, device: &Device| -> candle_core::Result<Vec<f32>> {
            let input = Tensor::new(tokens, device)?.unsqueeze(0)?;
            let logits = weights.forward(&input, position)?;
            logits.squeeze(0)?.to_dtype(DType::F32)?.to_vec1()
        };
        run(&mut self.weights, &self.device).map_err(|source| LocalError::Inference {
            model: self.name.clone(),
            source,
        })
    }

    /// Token ids of a rendered prompt: control tokens by id, text runs tokenized as text.
    fn encode(&self, pieces: &[Piece]) -> Result<Vec<u32>, LocalError> {
        let mut ids = Vec::new();
        let mut text = String::new();
        for piece in pieces {
            match piece {
                Piece::Text(t) => text.push_str(t),
                Piece::Special(marker) => {
                    self.encode_text(&std::mem::take(&mut text), &mut ids)?;
                    let id = self
                        .specials
                        .iter()
                        .find(|(m, _)| m == marker)
                        .map(|(_, id)| *id)
                        .expect("load() resolved every control token of the template");
                    ids.push(id);
                }
            }
        }
        self.encode_text(&text, &mut ids)?;
        Ok(ids)
    }

    fn encode_text(&self, text: &str, ids: &mut Vec<u32>) -> Result<(), LocalError> {
        for segment in self.user_tokens.split(text) {
            match segment {
                Segment::Token(id) => ids.push(id),
                Segment::Text(gap) => {
                    let encoded = self
                        .tokenizer
                        .encode(gap, false)
                        .map_err(|e| self.tokenizer_error(format!("encoding the prompt: {e}")))?;
                    ids.extend(encoded);
                }
            }
        }
        Ok(())
    }

    /// `text` without its first `n` tokens.
    fn cut_front(&self, text: &str, n: usize) -> Result<String, LocalError> {
        let mut ids = Vec::new();
        self.encode_text(text, &mut ids)?;
        if ids.len() <= n {
            return Ok(String::new());
        }
        self.tokenizer
            .decode(&ids[n..], false)
            .map_err(|e| self.tokenizer_error(format!("shortening a message: {e}")))
    }

    fn tokenizer_error(&self, detail: String) -> LocalError {
        LocalError::Tokenizer {
            model: self.name.clone(),
            detail,
        }
    }

    fn overflow(&self, prompt_tokens: usize, opts: &GenOptions, detail: String) -> LocalError {
        LocalError::ContextOverflow {
            model: self.name.clone(),
            prompt_tokens,
            max_tokens: opts.max_tokens,
            context: self.context,
            detail,
        }
    }
}

/// Control tokens a template emits (what `render` can put in `Piece::Special`).
fn template_specials(template: ChatTemplate) -> &'static [&'static str] {
    match template {
        ChatTemplate::ChatMl => &["<|im_start|>", "<|im_end|>"],
        ChatTemplate::Gemma => &["<bos>", "<start_of_turn>", "<end_of_turn>"],
    }
}

fn parse_messages(messages: &[(&str, &str)]) -> Result<Vec<Message>, LocalError> {
    if messages.is_empty() {
        return Err(LocalError::Message {
            index: 0,
            detail: "the conversation is empty: expected at least one message".into(),
        });
    }
    messages
        .iter()
        .enumerate()
        .map(|(i, (role, content))| {
            Ok(Message {
                role: Role::parse(i, role)?,
                content: content.to_string(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::template::to_text;

    #[test]
    fn every_control_token_a_template_renders_is_resolved_at_load() {
        let m = vec![
            Message {
                role: Role::System,
                content: "s".into(),
            },
            Message {
                role: Role::User,
                content: "u".into(),
            },
            Message {
                role: Role::Assistant,
                content: "a".into(),
            },
        ];
        for t in [ChatTemplate::ChatMl, ChatTemplate::Gemma] {
            for piece in t.render(&m) {
                if let Piece::Special(s) = piece {
                    assert!(template_specials(t).contains(&s), "{t:?} renders {s}");
                }
            }
            assert!(!to_text(&t.render(&m)).is_empty());
        }
    }

    #[test]
    fn messages_are_parsed_with_their_index_in_errors() {
        assert!(parse_messages(&[]).is_err());
        let err = parse_messages(&[("user", "hi"), ("robot", "x")]).unwrap_err();
        assert!(err.to_string().contains("chat message 1"), "{err}");
        let ok = parse_messages(&[("system", "s"), ("user", "u")]).unwrap();
        assert_eq!(ok[1].role, Role::User);
    }

    #[test]
    fn a_file_that_is_not_gguf_is_reported_with_its_path() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("fake.gguf");
        std::fs::write(&p, b"definitely not gguf").unwrap();
        let err = LocalModel::load(&p).unwrap_err().to_string();
        assert!(err.contains("fake.gguf") && err.contains("GGUF"), "{err}");
    }
}
