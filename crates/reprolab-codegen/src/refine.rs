//! The LLM's second opinion on failure labels (`codegen run --classify-llm SPEC`). The rules of
//! [`crate::taxonomy`] only see what a run left behind; a classifier model also sees the task's
//! prompt and the code. Every failed sample's rule label is shown to it, and its answer becomes
//! the sample's label when the answer names a category and subtype of the taxonomy. The rules'
//! label is kept beside it ([`Refinement`]), so that a report can say how many labels the model
//! changed.
//!
//! Answers are stored under a hash of the model's name and the prompt (which holds the task, the
//! code, the evidence and the rules' label), so a rerun asks only about failures it has no answer
//! for, nor about a failure identical to one asked before (same code, same evidence). A failed
//! call leaves the rules' label, is recorded as `failed` and is asked again by the next run; an
//! answer without a valid label is stored like any other answer.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use reprolab_store::{Store, StoreError};
use serde::{Deserialize, Serialize};
use serde_json::json;
use sha2::{Digest, Sha256};
use tokio::task::JoinSet;

use crate::generate::ModelError;
use crate::outcome::{Role, SampleResult};
use crate::task::Task;
use crate::taxonomy::{
    Evidence, FailureClassifier, Label, LabelSource, parse_refinement, refine_prompt,
};

/// The `status` column of stored answers in the store's codegen table (results use theirs).
const STORED_STATUS: &str = "classifier_answer";
/// How much of an answer without a label, or of a call's error, a result keeps.
const DETAIL_CHARS: usize = 300;

/// What asking the classifier about one failure came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The model answered with a label of the taxonomy: it is the sample's label now.
    Labelled,
    /// The model answered without a valid category and subtype: the rules' label stands.
    Unparsed,
    /// The call failed (network, budget, …): the rules' label stands; the next run asks again.
    Failed,
}

/// The classifier's opinion on one failed sample (the `refinement` of a result).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refinement {
    /// The classifier's model.
    pub model: String,
    pub verdict: Verdict,
    /// The rules' label; the sample's `taxonomy` is the classifier's when the verdict is
    /// `labelled`, this one otherwise.
    pub rules: Label,
    /// The start of an answer without a label, or the failed call's error.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub detail: String,
}

/// Asks a classifier about failed samples, answering from the store what it was asked before.
pub struct Classifier {
    model: Arc<dyn FailureClassifier>,
    store: Option<Mutex<Store>>,
    /// Reuse stored answers (new answers are stored either way).
    read_cache: bool,
}

/// One failed sample to ask about.
struct Question {
    index: usize,
    rules: Label,
    prompt: String,
    key: String,
}

impl Classifier {
    pub fn new(
        model: Arc<dyn FailureClassifier>,
        store: Option<Store>,
        read_cache: bool,
    ) -> Classifier {
        Classifier {
            model,
            store: store.map(Mutex::new),
            read_cache,
        }
    }

    pub fn name(&self) -> String {
        self.model.name()
    }

    /// How many of `results` [`Classifier::refine_all`] asks about: the labelled samples.
    pub fn failures(results: &[SampleResult]) -> usize {
        results.iter().filter(|r| rules_label(r).is_some()).count()
    }

    /// Refine the label of every failed sample of `results`, whose tasks are among `tasks`:
    /// stored answers first, then the model for the rest, all at once (the LLM layer bounds the
    /// calls in flight). `on_done` is called once per sample asked about.
    pub async fn refine_all(
        &self,
        tasks: &[Arc<Task>],
        results: &mut [SampleResult],
        on_done: &(dyn Fn(&SampleResult) + Send + Sync),
    ) -> Result<(), StoreError> {
        let model = self.name();
        let prompts: HashMap<&str, &str> = tasks
            .iter()
            .map(|t| (t.id.as_str(), t.prompt.as_str()))
            .collect();
        let mut calls = JoinSet::new();
        for (index, r) in results.iter_mut().enumerate() {
            let Some(q) = question(index, r, &prompts, &model) else {
                continue;
            };
            match self.stored_answer(&q.key)? {
                Some(answer) => {
                    settle(r, &model, q.rules, Ok(answer));
                    on_done(r);
                }
                None => {
                    let classifier = self.model.clone();
                    calls.spawn(async move {
                        let answer = classifier.classify(&q.prompt).await;
                        (q, answer)
                    });
                }
            }
        }
        while let Some(joined) = calls.join_next().await {
            // Calls are never aborted, so a join error is a panic in the classifier: a bug.
            let (q, answer) = joined.unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
            let r = &mut results[q.index];
            if let Ok(text) = &answer {
                self.store_answer(&q.key, r, &model, text)?;
            }
            settle(r, &model, q.rules, answer);
            on_done(r);
        }
        Ok(())
    }

    fn stored_answer(&self, key: &str) -> Result<Option<String>, StoreError> {
        let Some(store) = self.store.as_ref().filter(|_| self.read_cache) else {
            return Ok(None);
        };
        let record = store.lock().unwrap().get_codegen_result(key)?;
        Ok(record.and_then(|v| v["answer"].as_str().map(String::from)))
    }

    fn store_answer(
        &self,
        key: &str,
        r: &SampleResult,
        model: &str,
        answer: &str,
    ) -> Result<(), StoreError> {
        let Some(store) = &self.store else {
            return Ok(());
        };
        store.lock().unwrap().put_codegen_result(
            key,
            &r.task_id,
            r.sample as i64,
            STORED_STATUS,
            &json!({"model": model, "answer": answer}),
        )
    }
}

/// The rules' label of a failed sample: the one a classifier refined, or the sample's own.
fn rules_label(r: &SampleResult) -> Option<&Label> {
    if r.role != Role::Sample {
        return None;
    }
    match &r.refinement {
        Some(f) => Some(&f.rules),
        None => r.taxonomy.as_ref(),
    }
}

fn question(
    index: usize,
    r: &SampleResult,
    prompts: &HashMap<&str, &str>,
    model: &str,
) -> Option<Question> {
    let rules = rules_label(r)?.clone();
    let task_prompt = prompts.get(r.task_id.as_str())?;
    let f = r.failure.as_ref();
    let evidence = Evidence {
        status: r.status,
        kind: f.map_or("", |f| f.kind.as_str()),
        message: f.map_or("", |f| f.message.as_str()),
        traceback: f.map_or("", |f| f.traceback.as_str()),
        behaviour: None,
    };
    let prompt = refine_prompt(
        task_prompt,
        r.code.as_deref().unwrap_or(""),
        &evidence,
        &rules,
    );
    Some(Question {
        index,
        key: answer_key(model, &prompt),
        rules,
        prompt,
    })
}

/// The store key of an answer: the model and everything it was shown.
fn answer_key(model: &str, prompt: &str) -> String {
    let mut h = Sha256::new();
    for part in ["codegen-classifier-v1", model, prompt] {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part.as_bytes());
    }
    hex::encode(h.finalize())
}

/// Record an answer (or a failed call) on a sample: the classifier's label when the answer
/// holds one, the rules' otherwise.
fn settle(r: &mut SampleResult, model: &str, rules: Label, answer: Result<String, ModelError>) {
    let cut = |s: &str| s.chars().take(DETAIL_CHARS).collect::<String>();
    let (verdict, label, detail) = match answer {
        Ok(text) => match parse_refinement(&text) {
            Some((category, subtype)) => (
                Verdict::Labelled,
                Label {
                    category,
                    subtype,
                    rule: rules.rule.clone(),
                    source: LabelSource::Llm,
                    evidence: None,
                },
                String::new(),
            ),
            None => (Verdict::Unparsed, rules.clone(), cut(&text)),
        },
        Err(e) => {
            tracing::warn!(
                "the failure classifier failed on {} sample {}, keeping the rules' label: {e}",
                r.task_id,
                r.sample
            );
            (Verdict::Failed, rules.clone(), cut(&e.to_string()))
        }
    };
    r.taxonomy = Some(label);
    r.refinement = Some(Refinement {
        model: model.to_string(),
        verdict,
        rules,
        detail,
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::{Failure, Status};
    use crate::task::{DataType, Labels, Stage, TaskType, parse_tasks};
    use crate::taxonomy::{Category, Subtype, classify};
    use async_trait::async_trait;
    use std::path::Path;

    /// Answers from a script, one per call, and counts the calls.
    struct Scripted {
        answers: Mutex<Vec<Result<String, String>>>,
        calls: Mutex<usize>,
    }

    impl Scripted {
        fn new(answers: Vec<Result<String, String>>) -> Arc<Scripted> {
            Arc::new(Scripted {
                answers: Mutex::new(answers),
                calls: Mutex::new(0),
            })
        }

        fn calls(&self) -> usize {
            *self.calls.lock().unwrap()
        }
    }

    #[async_trait]
    impl FailureClassifier for Scripted {
        async fn classify(&self, prompt: &str) -> Result<String, ModelError> {
            assert!(prompt.contains("mat1 and mat2") && prompt.contains("return x @ w"));
            *self.calls.lock().unwrap() += 1;
            self.answers.lock().unwrap().remove(0).map_err(Into::into)
        }
        fn name(&self) -> String {
            "scripted:model".into()
        }
    }

    fn task() -> Arc<Task> {
        let line = serde_json::json!({
            "id": "t", "prompt": "def f(x, w): ...", "entry_point": "f",
            "reference": "def f(x, w): return x @ w.T\n", "test": "def test_a(): pass\n",
            "labels": {"stage": "training", "task": "general", "data": "others"}
        });
        Arc::new(parse_tasks(&format!("{line}\n"), Path::new("t.jsonl")).unwrap()[0].clone())
    }

    /// A failed sample with its rule label, as the harness builds it.
    fn failed(sample: u32) -> SampleResult {
        let failure = Failure {
            kind: "RuntimeError".into(),
            message: "mat1 and mat2 shapes cannot be multiplied (4x3 and 5x4)".into(),
            traceback: String::new(),
            nodeid: Some("test_task.py::test_a".into()),
        };
        let taxonomy = classify(&Evidence {
            status: Status::Fail,
            kind: &failure.kind,
            message: &failure.message,
            traceback: "",
            behaviour: None,
        });
        SampleResult {
            task_id: "t".into(),
            role: Role::Sample,
            sample,
            status: Status::Fail,
            labels: Labels {
                stage: Stage::Training,
                task: TaskType::General,
                data: DataType::Others,
            },
            extraction: None,
            code: Some(format!("def f(x, w): return x @ w  # {sample}")),
            tests: vec![],
            passed: 0,
            total: 1,
            failure: Some(failure),
            taxonomy,
            refinement: None,
            expected: None,
            wall_s: 1.0,
            tests_s: 0.5,
            timeout_s: 5.0,
            peak_mb: 0,
            output_tail: String::new(),
            cached: false,
            key: format!("k{sample}"),
        }
    }

    const SHAPE: &str =
        "{\"category\": \"misinterpretation\", \"subtype\": \"shape_dimension_mismatch\"}";

    #[tokio::test]
    async fn answers_replace_the_rules_label_and_failures_keep_it() {
        let model = Scripted::new(vec![
            Ok(format!("Sure. {SHAPE}")),
            Ok("I think it is a shape problem".into()),
            Err("HTTP 500".into()),
        ]);
        let c = Classifier::new(model.clone(), None, true);
        let mut results = vec![failed(0), failed(1), failed(2)];
        let rules = results[0].taxonomy.clone().unwrap();
        assert_eq!(rules.rule, "operation_shape");
        c.refine_all(&[task()], &mut results, &|_| {})
            .await
            .unwrap();
        assert_eq!(model.calls(), 3);
        // The calls run concurrently, so find each verdict rather than rely on the order.
        let by = |v: Verdict| {
            results
                .iter()
                .find(|r| r.refinement.as_ref().unwrap().verdict == v)
                .unwrap()
        };
        let labelled = by(Verdict::Labelled);
        let l = labelled.taxonomy.as_ref().unwrap();
        assert_eq!(
            (l.category, l.subtype, l.source, l.rule.as_str()),
            (
                Category::Misinterpretation,
                Subtype::ShapeDimensionMismatch,
                LabelSource::Llm,
                "operation_shape"
            )
        );
        assert_eq!(labelled.refinement.as_ref().unwrap().rules, rules);
        assert!(labelled.relabelled());
        for v in [Verdict::Unparsed, Verdict::Failed] {
            let r = by(v);
            assert_eq!(r.taxonomy.as_ref(), Some(&rules), "{v:?}");
            assert!(!r.relabelled());
            assert_eq!(r.refinement.as_ref().unwrap().model, "scripted:model");
        }
        assert_eq!(
            by(Verdict::Unparsed).refinement.as_ref().unwrap().detail,
            "I think it is a shape problem"
        );
        assert_eq!(
            by(Verdict::Failed).refinement.as_ref().unwrap().detail,
            "HTTP 500"
        );
    }

    #[tokio::test]
    async fn stored_answers_are_not_asked_again_but_failed_calls_are() {
        let dir = tempfile::tempdir().unwrap();
        let store = || Some(Store::open(&dir.path().join("s.db")).unwrap());
        let first = Scripted::new(vec![Ok(SHAPE.into()), Err("timeout".into())]);
        // One sample answered, one failed.
        let mut results = vec![failed(0), failed(1)];
        Classifier::new(first.clone(), store(), true)
            .refine_all(&[task()], &mut results[..1], &|_| {})
            .await
            .unwrap();
        Classifier::new(first.clone(), store(), true)
            .refine_all(&[task()], &mut results[1..], &|_| {})
            .await
            .unwrap();
        assert_eq!(
            results[1].refinement.as_ref().unwrap().verdict,
            Verdict::Failed
        );

        // A rerun over the refined results: only the failed call is asked again, and the
        // answered sample keeps its label (refining twice changes nothing).
        let second = Scripted::new(vec![Ok(SHAPE.into())]);
        let done = Mutex::new(0);
        Classifier::new(second.clone(), store(), true)
            .refine_all(&[task()], &mut results, &|_| *done.lock().unwrap() += 1)
            .await
            .unwrap();
        assert_eq!(second.calls(), 1);
        assert_eq!(*done.lock().unwrap(), 2);
        for r in &results {
            assert_eq!(r.refinement.as_ref().unwrap().verdict, Verdict::Labelled);
            assert_eq!(r.refinement.as_ref().unwrap().rules.rule, "operation_shape");
        }

        // Without reading the store, everything is asked again.
        let third = Scripted::new(vec![Ok(SHAPE.into()), Ok(SHAPE.into())]);
        Classifier::new(third.clone(), store(), false)
            .refine_all(&[task()], &mut results, &|_| {})
            .await
            .unwrap();
        assert_eq!(third.calls(), 2);
    }

    #[tokio::test]
    async fn passes_and_references_are_not_asked_about() {
        let model = Scripted::new(vec![]);
        let mut pass = failed(0);
        pass.status = Status::Pass;
        pass.taxonomy = None;
        let mut reference = failed(1);
        reference.role = Role::Reference;
        let mut results = vec![pass, reference];
        assert_eq!(Classifier::failures(&results), 0);
        Classifier::new(model.clone(), None, true)
            .refine_all(&[task()], &mut results, &|_| {})
            .await
            .unwrap();
        assert_eq!(model.calls(), 0);
        assert!(results.iter().all(|r| r.refinement.is_none()));
    }
}
