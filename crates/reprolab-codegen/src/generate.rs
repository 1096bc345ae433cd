//! Asking a model for answers. The harness needs only [`Generator`]; the binary adapts an LLM
//! provider to it. Answers are appended to the run directory's `generations.jsonl` as they
//! arrive, so an interrupted run asks only for what is missing.

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;

use crate::generations::{Generation, append_generation};
use crate::task::{Task, TaskKind};

/// Why a model could not answer, as its adapter says (the binary's is an `LlmError`): kept as
/// the cause of [`GenerateError::Model`], so a caller can still tell a server's failure from a
/// wrong request.
pub type ModelError = Box<dyn std::error::Error + Send + Sync>;

/// Why [`generate_missing`] stopped.
#[derive(Debug, thiserror::Error)]
pub enum GenerateError {
    /// The model could not be asked.
    #[error("{model} failed on task {task}")]
    Model {
        model: String,
        task: String,
        #[source]
        source: ModelError,
    },
    /// The model gave another number of answers than asked for.
    #[error("{model} returned {got} answers for task {task}, expected {expected}")]
    Count {
        model: String,
        task: String,
        got: usize,
        expected: usize,
    },
    /// An answer could not be appended to the generations file.
    #[error("cannot append to the generations file {}", path.display())]
    Write {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Something that writes code for a task.
#[async_trait]
pub trait Generator: Send + Sync {
    /// `n` independent answers to `task` at `temperature` (raw text; code is extracted later).
    async fn generate(
        &self,
        task: &Task,
        n: u32,
        temperature: f64,
    ) -> Result<Vec<String>, ModelError>;
    /// Names the model, for the report.
    fn name(&self) -> String;
}

/// The instruction sent with every task: the prompt itself plus what the harness needs back.
pub fn prompt_text(task: &Task) -> String {
    let what = match &task.kind {
        TaskKind::Function { entry_point, .. } => format!(
            "Write a complete, self-contained Python module that defines `{entry_point}` as specified \
             below, with every import it needs."
        ),
        TaskKind::Repository {
            file,
            function,
            class,
            ..
        } => match class {
            Some(c) => format!(
                "Write the method `{function}` of class `{c}` in the repository file `{file}`, as \
                 specified below. Give the method's full definition (with its decorators) and any \
                 import it needs."
            ),
            None => format!(
                "Write the function `{function}` of the repository file `{file}`, as specified below. \
                 Give its full definition (with its decorators) and any import it needs."
            ),
        },
    };
    format!(
        "{what}\nAnswer with the code in a single ```python block.\n\n{}",
        task.prompt
    )
}

/// Complete `existing` to `n` answers per task: ask `generator` for the missing sample indices
/// only, append each new answer to `out` as it arrives, and return all of them (existing first).
/// `on_task(task id, answers added)` reports progress.
pub async fn generate_missing(
    generator: &dyn Generator,
    tasks: &[Arc<Task>],
    n: u32,
    temperature: f64,
    existing: Vec<Generation>,
    out: &Path,
    on_task: &(dyn Fn(&str, usize) + Send + Sync),
) -> Result<Vec<Generation>, GenerateError> {
    let mut all = existing;
    for task in tasks {
        let have: Vec<u32> = all
            .iter()
            .filter(|g| g.task_id == task.id)
            .map(|g| g.sample)
            .collect();
        let missing: Vec<u32> = (0..n).filter(|i| !have.contains(i)).collect();
        if missing.is_empty() {
            on_task(&task.id, 0);
            continue;
        }
        let answers = generator
            .generate(task, missing.len() as u32, temperature)
            .await
            .map_err(|source| GenerateError::Model {
                model: generator.name(),
                task: task.id.clone(),
                source,
            })?;
        if answers.len() != missing.len() {
            return Err(GenerateError::Count {
                model: generator.name(),
                task: task.id.clone(),
                got: answers.len(),
                expected: missing.len(),
            });
        }
        for (sample, completion) in missing.into_iter().zip(answers) {
            let g = Generation {
                task_id: task.id.clone(),
                sample,
                completion,
                expected_label: None,
            };
            append_generation(out, &g).map_err(|source| GenerateError::Write {
                path: out.to_path_buf(),
                source,
            })?;
            all.push(g);
        }
        on_task(&task.id, n as usize - have.len());
    }
    Ok(all)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task::parse_tasks;
    use std::sync::Mutex;

    struct Echo {
        calls: Mutex<Vec<(String, u32)>>,
    }

    #[async_trait]
    impl Generator for Echo {
        async fn generate(&self, task: &Task, n: u32, _t: f64) -> Result<Vec<String>, ModelError> {
            self.calls.lock().unwrap().push((task.id.clone(), n));
            Ok((0..n).map(|i| format!("```python\n# {i}\n```")).collect())
        }
        fn name(&self) -> String {
            "echo".into()
        }
    }

    fn tasks() -> Vec<Arc<Task>> {
        let line = |id: &str| {
            serde_json::json!({
                "id": id, "prompt": "def f(x): ...", "entry_point": "f",
                "reference": "def f(x): return x\n", "test": "def test_a(): pass\n",
                "labels": {"stage": "training", "task": "general", "data": "others"}
            })
            .to_string()
        };
        parse_tasks(
            &format!("{}\n{}\n", line("a"), line("b")),
            Path::new("t.jsonl"),
        )
        .unwrap()
        .into_iter()
        .map(Arc::new)
        .collect()
    }

    #[tokio::test]
    async fn only_missing_samples_are_asked_for_and_appended() {
        let d = tempfile::tempdir().unwrap();
        let out = d.path().join("generations.jsonl");
        let existing = vec![Generation {
            task_id: "a".into(),
            sample: 1,
            completion: "old".into(),
            expected_label: None,
        }];
        let g = Echo {
            calls: Mutex::new(vec![]),
        };
        let all = generate_missing(&g, &tasks(), 3, 0.2, existing, &out, &|_, _| {})
            .await
            .unwrap();
        assert_eq!(
            *g.calls.lock().unwrap(),
            vec![("a".to_string(), 2), ("b".to_string(), 3)]
        );
        assert_eq!(all.len(), 6);
        let samples_a: Vec<u32> = all
            .iter()
            .filter(|x| x.task_id == "a")
            .map(|x| x.sample)
            .collect();
        assert_eq!(samples_a, vec![1, 0, 2]);
        assert_eq!(crate::generations::load_generations(&out).unwrap().len(), 5);
        // Resuming with everything present asks nothing.
        let g2 = Echo {
            calls: Mutex::new(vec![]),
        };
        generate_missing(&g2, &tasks(), 3, 0.2, all, &out, &|_, _| {})
            .await
            .unwrap();
        assert!(g2.calls.lock().unwrap().is_empty());
    }

    #[test]
    fn the_prompt_names_the_entry_point_and_asks_for_a_block() {
        let t = &tasks()[0];
        let p = prompt_text(t);
        assert!(p.contains("`f`") && p.contains("```python") && p.ends_with("def f(x): ..."));
    }
}
