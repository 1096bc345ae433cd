//! Record / replay. `--llm-record DIR` writes every answer to `DIR/<request-hash>.json`;
//! `--llm replay:DIR` answers from those files without any network, so a run (or a test) can be
//! repeated exactly and offline.
//!
//! The request hash covers what determines an answer: the messages, temperature, max_tokens, n,
//! seed and JSON mode; not the model, so a recording made with any provider replays under any
//! other spec. The same request asked k times in one recorded run (sampling at temperature > 0)
//! is stored as k answers in one file, and replay hands them out in the same order (cycling when
//! the replayed run asks more often than the recorded one did).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::{ChatModel, ChatRequest, ChatResponse, LlmError, Message};

/// Format tag written into every cassette file.
pub const CASSETTE_FORMAT: &str = "reprolab-llm-cassette/1";

/// The fields of a request that the hash covers, in a fixed order.
#[derive(Serialize)]
struct HashedRequest<'a> {
    messages: &'a [Message],
    temperature: f64,
    max_tokens: u32,
    n: u32,
    seed: Option<u64>,
    json_mode: bool,
}

/// sha256 (hex) of the canonical JSON of the request's messages, temperature, max_tokens, n,
/// seed and json_mode.
pub fn request_hash(req: &ChatRequest) -> String {
    let canonical = serde_json::to_vec(&HashedRequest {
        messages: &req.messages,
        temperature: req.temperature,
        max_tokens: req.max_tokens,
        n: req.n,
        seed: req.seed,
        json_mode: req.json_mode,
    })
    .expect("a request always serialises");
    hex::encode(Sha256::digest(canonical))
}

/// One cassette file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Cassette {
    pub format: String,
    pub request_hash: String,
    pub request: ChatRequest,
    /// `provider:model` that answered when recording.
    pub model: String,
    /// The answers, in the order they were given.
    pub responses: Vec<ChatResponse>,
}

/// The cassette file of `hash` in `dir`.
pub fn cassette_path(dir: &Path, hash: &str) -> PathBuf {
    dir.join(format!("{hash}.json"))
}

/// Records the inner model's answers into a directory.
pub struct Recording {
    inner: Arc<dyn ChatModel>,
    dir: PathBuf,
    /// Answers recorded by this process per hash: a new run replaces old recordings of the same
    /// request instead of appending to them.
    recorded: Mutex<HashMap<String, Cassette>>,
    tmp_counter: AtomicU64,
}

impl Recording {
    /// Creates `dir` when needed.
    pub fn new(inner: Arc<dyn ChatModel>, dir: &Path) -> Result<Recording, LlmError> {
        std::fs::create_dir_all(dir).map_err(|e| {
            LlmError::Cassette(format!(
                "cannot create the recording directory {}: {e}",
                dir.display()
            ))
        })?;
        Ok(Recording {
            inner,
            dir: dir.to_path_buf(),
            recorded: Mutex::new(HashMap::new()),
            tmp_counter: AtomicU64::new(0),
        })
    }

    /// Writes `cassette` atomically (temporary file, then rename), so a killed run never
    /// leaves a half-written file that replay would choke on.
    fn write(&self, cassette: &Cassette) -> Result<(), LlmError> {
        let path = cassette_path(&self.dir, &cassette.request_hash);
        let tmp = self.dir.join(format!(
            ".{}.{}.{}.tmp",
            cassette.request_hash,
            std::process::id(),
            self.tmp_counter.fetch_add(1, Ordering::Relaxed)
        ));
        let text = serde_json::to_string_pretty(cassette)
            .map_err(|e| LlmError::Cassette(format!("cannot encode a recording: {e}")))?;
        std::fs::write(&tmp, text)
            .and_then(|()| std::fs::rename(&tmp, &path))
            .map_err(|e| {
                let _ = std::fs::remove_file(&tmp);
                LlmError::Cassette(format!("cannot write {}: {e}", path.display()))
            })
    }
}

#[async_trait]
impl ChatModel for Recording {
    fn name(&self) -> String {
        self.inner.name()
    }

    async fn chat(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let resp = self.inner.chat(req).await?;
        let hash = request_hash(req);
        let snapshot = {
            let mut map = self.recorded.lock().unwrap_or_else(|p| p.into_inner());
            let c = map.entry(hash.clone()).or_insert_with(|| Cassette {
                format: CASSETTE_FORMAT.into(),
                request_hash: hash,
                request: req.clone(),
                model: self.inner.name(),
                responses: Vec::new(),
            });
            c.responses.push(resp.clone());
            c.clone()
        };
        self.write(&snapshot)?;
        Ok(resp)
    }
}

/// Answers from a recording directory; never touches the network.
pub struct Replay {
    dir: PathBuf,
    /// How many times each hash has been answered, to hand out repeated answers in order.
    served: Mutex<HashMap<String, usize>>,
}

impl Replay {
    /// Fails when `dir` is not a directory.
    pub fn new(dir: &Path) -> Result<Replay, LlmError> {
        if !dir.is_dir() {
            return Err(LlmError::Config(format!(
                "replay directory {} does not exist; record one first with --llm-record {} \
                 against a real model",
                dir.display(),
                dir.display()
            )));
        }
        Ok(Replay {
            dir: dir.to_path_buf(),
            served: Mutex::new(HashMap::new()),
        })
    }

    fn load(&self, path: &Path, hash: &str) -> Result<Cassette, LlmError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| LlmError::Cassette(format!("cannot read {}: {e}", path.display())))?;
        let c: Cassette = serde_json::from_str(&text).map_err(|e| {
            LlmError::Cassette(format!(
                "{} is not a reprolab recording ({e}); expected format {CASSETTE_FORMAT}",
                path.display()
            ))
        })?;
        if c.responses.is_empty() {
            return Err(LlmError::Cassette(format!(
                "{} holds no responses for request {hash}",
                path.display()
            )));
        }
        Ok(c)
    }
}

#[async_trait]
impl ChatModel for Replay {
    fn name(&self) -> String {
        format!("replay:{}", self.dir.display())
    }

    async fn chat(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let start = Instant::now();
        let hash = request_hash(req);
        let path = cassette_path(&self.dir, &hash);
        if !path.is_file() {
            return Err(LlmError::ReplayMiss {
                hash,
                dir: self.dir.clone(),
                prompt: req.last_user().chars().take(80).collect(),
            });
        }
        let cassette = self.load(&path, &hash)?;
        let k = {
            let mut served = self.served.lock().unwrap_or_else(|p| p.into_inner());
            let k = served.entry(hash).or_insert(0);
            *k += 1;
            *k - 1
        };
        let mut resp = cassette.responses[k % cassette.responses.len()].clone();
        resp.replayed = true;
        resp.latency_ms = start.elapsed().as_millis() as u64;
        Ok(resp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_depends_on_every_answer_shaping_field_but_not_the_model() {
        let base = ChatRequest::user("hello");
        let h = request_hash(&base);
        assert_eq!(h.len(), 64);
        assert_eq!(h, request_hash(&base.clone()));
        for other in [
            ChatRequest::user("hello!"),
            base.clone().temperature(0.5),
            base.clone().max_tokens(10),
            base.clone().n(2),
            base.clone().seed(1),
            base.clone().json_mode(true),
            ChatRequest::with_system("s", "hello"),
        ] {
            assert_ne!(h, request_hash(&other), "{other:?}");
        }
    }

    #[test]
    fn hash_is_stable_across_versions() {
        // A recording directory must keep replaying after upgrades: pin the hash of one request.
        let h = request_hash(&ChatRequest::user("hello"));
        assert_eq!(
            h,
            hex::encode(Sha256::digest(
                br#"{"messages":[{"role":"user","content":"hello"}],"temperature":0.0,"max_tokens":1024,"n":1,"seed":null,"json_mode":false}"#
            ))
        );
    }

    #[test]
    fn missing_replay_dir_says_how_to_record() {
        let e = Replay::new(Path::new("/nonexistent/cassettes"))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("--llm-record"), "{e}");
    }
}
