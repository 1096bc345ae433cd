//! A chat model ([`reprolab_llm::ChatModel`]) as the benchmark's two model roles: the
//! [`Generator`] of `codegen run --llm` (the task's prompt, `n` answers in one request) and the
//! [`FailureClassifier`] of `--classify-llm` (one JSON answer at temperature 0).

use std::sync::Arc;

use async_trait::async_trait;
use reprolab_llm::{ChatModel, ChatRequest, Message};

use crate::generate::{Generator, ModelError, prompt_text};
use crate::task::Task;
use crate::taxonomy::FailureClassifier;

/// Most tokens of one generated answer.
const ANSWER_TOKENS: u32 = 2048;
/// Most tokens of one classifier answer (a label and a sentence).
const LABEL_TOKENS: u32 = 256;

/// A chat model as a code generator: the task's prompt ([`prompt_text`]), `n` answers in one
/// request, seed 0.
pub struct LlmGenerator(pub Arc<dyn ChatModel>);

#[async_trait]
impl Generator for LlmGenerator {
    async fn generate(
        &self,
        task: &Task,
        n: u32,
        temperature: f64,
    ) -> Result<Vec<String>, ModelError> {
        let request = ChatRequest {
            messages: vec![Message::user(prompt_text(task))],
            temperature,
            max_tokens: ANSWER_TOKENS,
            n,
            seed: Some(0),
            json_mode: false,
        };
        let response = self.0.chat(&request).await?;
        Ok(response.choices.into_iter().map(|c| c.text).collect())
    }

    fn name(&self) -> String {
        self.0.name()
    }
}

/// A chat model as a failure classifier: one answer in JSON mode at temperature 0, seed 0.
pub struct LlmClassifier(pub Arc<dyn ChatModel>);

#[async_trait]
impl FailureClassifier for LlmClassifier {
    async fn classify(&self, prompt: &str) -> Result<String, ModelError> {
        let request = ChatRequest {
            messages: vec![Message::user(prompt)],
            temperature: 0.0,
            max_tokens: LABEL_TOKENS,
            n: 1,
            seed: Some(0),
            json_mode: true,
        };
        let response = self.0.chat(&request).await?;
        response
            .choices
            .into_iter()
            .next()
            .map(|c| c.text)
            .ok_or_else(|| "the model returned no answer".into())
    }

    fn name(&self) -> String {
        self.0.name()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use reprolab_llm::{ChatResponse, Choice, FinishReason, LlmError, Usage};

    use super::*;

    /// Answers every request with `answers` (as many as there are) and keeps the requests.
    struct Canned {
        answers: Vec<&'static str>,
        asked: Mutex<Vec<ChatRequest>>,
    }

    #[async_trait]
    impl ChatModel for Canned {
        fn name(&self) -> String {
            "canned:m".into()
        }

        async fn chat(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
            self.asked.lock().unwrap().push(req.clone());
            Ok(ChatResponse {
                choices: self
                    .answers
                    .iter()
                    .map(|a| Choice {
                        text: a.to_string(),
                        finish: FinishReason::Stop,
                    })
                    .collect(),
                usage: Usage::default(),
                model: "m".into(),
                latency_ms: 1,
                cost_usd: None,
                replayed: false,
            })
        }
    }

    fn canned(answers: Vec<&'static str>) -> Arc<Canned> {
        Arc::new(Canned {
            answers,
            asked: Mutex::new(Vec::new()),
        })
    }

    fn task() -> Task {
        let line = serde_json::json!({
            "id": "t", "prompt": "def f(x): ...", "entry_point": "f",
            "reference": "def f(x): return x\n", "test": "def test_a(): pass\n",
            "labels": {"stage": "training", "task": "general", "data": "others"}
        });
        let path = std::path::Path::new("t.jsonl");
        crate::task::parse_tasks(&format!("{line}\n"), path)
            .unwrap()
            .remove(0)
    }

    #[tokio::test]
    async fn the_generator_asks_for_n_answers_to_the_task_prompt() {
        let model = canned(vec!["a", "b"]);
        let g = LlmGenerator(model.clone());
        let t = task();
        assert_eq!(g.generate(&t, 2, 0.7).await.unwrap(), ["a", "b"]);
        assert_eq!(g.name(), "canned:m");
        let asked = model.asked.lock().unwrap();
        let r = &asked[0];
        assert_eq!((r.n, r.temperature, r.seed), (2, 0.7, Some(0)));
        assert_eq!((r.max_tokens, r.json_mode), (ANSWER_TOKENS, false));
        assert_eq!(r.messages, [Message::user(prompt_text(&t))]);
    }

    #[tokio::test]
    async fn the_classifier_asks_once_in_json_mode_and_needs_an_answer() {
        let model = canned(vec!["{\"category\": \"x\"}"]);
        let c = LlmClassifier(model.clone());
        assert_eq!(
            c.classify("label it").await.unwrap(),
            "{\"category\": \"x\"}"
        );
        let r = model.asked.lock().unwrap()[0].clone();
        assert_eq!((r.n, r.temperature, r.json_mode), (1, 0.0, true));
        assert_eq!(r.max_tokens, LABEL_TOKENS);
        let none = LlmClassifier(canned(Vec::new()));
        let e = none.classify("label it").await.unwrap_err();
        assert_eq!(e.to_string(), "the model returned no answer");
    }
}
