//! Generations files: the raw answers of any system, one JSON line per sample
//! (`{"task_id", "sample", "completion"}`), evaluated without calling a model. The same format
//! is what `codegen run --llm` writes (and resumes from) in its run directory.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Write as _;
use std::path::Path;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::outcome::SampleResult;
use crate::task::{
    Fields, FileError, LineShape, SelectError, Task, TaskKind, describe, read_jsonl,
};
use crate::taxonomy::{Category, ExpectedLabel, Subtype};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Generation {
    pub task_id: String,
    pub sample: u32,
    /// The raw model output; code extraction is applied to it.
    pub completion: String,
    /// The failure label this answer should get (for scoring the taxonomy's agreement).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_label: Option<ExpectedLabel>,
}

/// `expected_label`: a category (`"Wrong input type"`, `"wrong_input_type"`) or an object
/// `{"category", "subtype"}` (subtype optional), names or Deep-Bench's titles.
fn read_expected(f: &mut Fields) -> Option<Option<ExpectedLabel>> {
    let categories = || {
        Category::ALL
            .iter()
            .map(|c| c.name())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let category = |f: &mut Fields, field: &str, s: &str| -> Option<Category> {
        let c = Category::parse(s);
        if c.is_none() {
            let names: Vec<String> = Category::ALL.iter().map(|c| c.name()).collect();
            let hint = reprolab_core::error::did_you_mean(s, names.iter().map(String::as_str))
                .map(|h| format!(" ({h})"))
                .unwrap_or_default();
            f.issue(
                field,
                format!(
                    "found {s:?}, expected a failure category (a name or Deep-Bench's title): {}{hint}",
                    categories()
                ),
            );
        }
        c
    };
    match f.obj.get("expected_label") {
        None | Some(Value::Null) => Some(None),
        Some(Value::String(s)) => {
            let s = s.clone();
            category(f, "expected_label", &s).map(|category| {
                Some(ExpectedLabel {
                    category,
                    subtype: None,
                })
            })
        }
        Some(Value::Object(o)) => {
            let o = o.clone();
            let cat = match o.get("category") {
                Some(Value::String(s)) => category(f, "expected_label.category", s),
                other => {
                    f.issue(
                        "expected_label.category",
                        format!(
                            "found {}, expected a failure category",
                            other.map_or("nothing".into(), describe)
                        ),
                    );
                    None
                }
            };
            let sub = match o.get("subtype") {
                None | Some(Value::Null) => Some(None),
                Some(Value::String(s)) => match Subtype::parse(s) {
                    Some(t) if cat.is_none_or(|c| t.category().is_none_or(|tc| tc == c)) => {
                        Some(Some(t))
                    }
                    Some(t) => {
                        f.issue(
                            "expected_label.subtype",
                            format!(
                                "{s:?} is a subtype of {}, not of the category given",
                                t.category().map_or(String::new(), |c| c.name())
                            ),
                        );
                        None
                    }
                    None => {
                        f.issue(
                            "expected_label.subtype",
                            format!("found {s:?}, expected a DL subtype of the taxonomy"),
                        );
                        None
                    }
                },
                Some(other) => {
                    f.issue(
                        "expected_label.subtype",
                        format!("found {}, expected a string", describe(other)),
                    );
                    None
                }
            };
            for k in o
                .keys()
                .filter(|k| !["category", "subtype"].contains(&k.as_str()))
            {
                let hint = reprolab_core::error::did_you_mean(k, ["category", "subtype"])
                    .map(|h| format!(" ({h})"))
                    .unwrap_or_default();
                f.issue(
                    &format!("expected_label.{k}"),
                    format!("unknown field; expected category and subtype{hint}"),
                );
            }
            let (category, subtype) = (cat?, sub?);
            Some(Some(ExpectedLabel { category, subtype }))
        }
        Some(other) => {
            f.issue(
                "expected_label",
                format!(
                    "found {}, expected a category or {{\"category\", \"subtype\"}}",
                    describe(other)
                ),
            );
            None
        }
    }
}

/// Parse a generations file's text; every problem is reported with file, line and field.
pub fn parse_generations(text: &str, file: &Path) -> Result<Vec<Generation>, FileError> {
    let mut seen: HashMap<(String, u32), usize> = HashMap::new();
    let shape = LineShape {
        json: "{\"task_id\", \"sample\", \"completion\"}",
        object: "a generation object",
    };
    let (out, issues) = read_jsonl(text, file, &shape, |f| {
        let task_id = f.string("task_id", true);
        let completion = f.string("completion", false);
        let sample = match f.obj.get("sample") {
            Some(Value::Number(n)) if n.as_u64().is_some_and(|s| s <= u32::MAX as u64) => {
                n.as_u64().map(|s| s as u32)
            }
            Some(other) => {
                f.issue(
                    "sample",
                    format!(
                        "found {}, expected a sample index (0, 1, …)",
                        describe(other)
                    ),
                );
                None
            }
            None => {
                f.issue("sample", "missing; expected a sample index (0, 1, …)");
                None
            }
        };
        let expected_label = read_expected(f);
        f.unknown_fields(&[
            "task_id",
            "sample",
            "completion",
            "model",
            "temperature",
            "expected_label",
        ]);
        let (task_id, sample, completion, expected_label) =
            (task_id?, sample?, completion?, expected_label?);
        if let Some(first) = seen.get(&(task_id.clone(), sample)) {
            f.issue(
                "sample",
                format!(
                    "sample {sample} of {task_id:?} is already on line {first}; each (task_id, sample) once"
                ),
            );
            return None;
        }
        seen.insert((task_id.clone(), sample), f.line);
        Some(Generation {
            task_id,
            sample,
            completion,
            expected_label,
        })
    });
    if issues.is_empty() {
        Ok(out)
    } else {
        Err(FileError { issues })
    }
}

pub fn load_generations(path: &Path) -> Result<Vec<Generation>, FileError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        FileError::single(
            path,
            0,
            "",
            format!("cannot read the generations file: {e}"),
        )
    })?;
    parse_generations(&text, path)
}

/// Append one generation to a JSONL file (created if missing): what `--llm` runs write as they
/// go, so an interrupted run resumes without asking the model again.
pub fn append_generation(path: &Path, g: &Generation) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    writeln!(
        f,
        "{}",
        serde_json::to_string(g).map_err(std::io::Error::other)?
    )?;
    f.flush()
}

/// The generations of `tasks`, the first `samples` per task when given, ordered by task then
/// sample. Generations of tasks that are not in the task file at all are an error (most likely
/// the wrong file); those of tasks left out by `--only` are skipped.
pub fn select_generations<T: std::borrow::Borrow<Task>>(
    gens: Vec<Generation>,
    tasks: &[T],
    all_ids: &HashSet<String>,
    samples: Option<u32>,
) -> Result<Vec<Generation>, SelectError> {
    let unknown: Vec<&str> = gens
        .iter()
        .map(|g| g.task_id.as_str())
        .filter(|id| !all_ids.contains(*id))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    if !unknown.is_empty() {
        return Err(SelectError::UnknownTasks {
            ids: unknown.into_iter().take(10).collect::<Vec<_>>().join(", "),
        });
    }
    let order: HashMap<&str, usize> = tasks
        .iter()
        .enumerate()
        .map(|(i, t)| (t.borrow().id.as_str(), i))
        .collect();
    let mut by: BTreeMap<(usize, u32), Generation> = BTreeMap::new();
    for g in gens {
        if let Some(&i) = order.get(g.task_id.as_str())
            && samples.is_none_or(|n| g.sample < n)
        {
            by.insert((i, g.sample), g);
        }
    }
    Ok(by.into_values().collect())
}

/// The answers an earlier `--llm` run left in `path`, none when there is no such file.
pub fn load_earlier_generations(path: &Path) -> Result<Vec<Generation>, FileError> {
    if path.exists() {
        load_generations(path)
    } else {
        Ok(Vec::new())
    }
}

/// Each function task's reference as its answer, `repeat` times (`codegen bench` without
/// `--generations`; a repository task's reference is the repository itself, so it has none).
pub fn reference_answers(tasks: &[Arc<Task>], repeat: u32) -> Vec<Generation> {
    tasks
        .iter()
        .filter_map(|t| match &t.kind {
            TaskKind::Function { reference, .. } => Some((t, reference)),
            TaskKind::Repository { .. } => None,
        })
        .flat_map(|(t, reference)| {
            (0..repeat).map(move |i| Generation {
                task_id: t.id.clone(),
                sample: i,
                completion: format!("```python\n{reference}\n```\n"),
                expected_label: None,
            })
        })
        .collect()
}

/// The tasks with fewer than `n` answers in `gens`, with how many they have, in task order.
pub fn missing_samples(tasks: &[Arc<Task>], gens: &[Generation], n: u32) -> Vec<(String, u32)> {
    let mut per: HashMap<&str, u32> = HashMap::new();
    for x in gens {
        *per.entry(x.task_id.as_str()).or_default() += 1;
    }
    tasks
        .iter()
        .map(|t| (t.id.clone(), per.get(t.id.as_str()).copied().unwrap_or(0)))
        .filter(|(_, have)| *have < n)
        .collect()
}

/// The tasks that have at least one answer in `gens`, in their order.
pub fn tasks_with_answers(tasks: Vec<Arc<Task>>, gens: &[Generation]) -> Vec<Arc<Task>> {
    let with_answers: HashSet<&str> = gens.iter().map(|x| x.task_id.as_str()).collect();
    tasks
        .into_iter()
        .filter(|t| with_answers.contains(t.id.as_str()))
        .collect()
}

/// Gives each result the failure label its answer in `gens` should get (`expected_label`),
/// for scoring the taxonomy's agreement.
pub fn attach_expected(results: &mut [SampleResult], gens: &[Generation]) {
    let expected: HashMap<(&str, u32), _> = gens
        .iter()
        .filter_map(|x| {
            x.expected_label
                .map(|e| ((x.task_id.as_str(), x.sample), e))
        })
        .collect();
    for r in results {
        r.expected = expected.get(&(r.task_id.as_str(), r.sample)).copied();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generations_are_read_and_checked() {
        let text = "{\"task_id\": \"a\", \"sample\": 0, \"completion\": \"x\"}\n\
                    {\"task_id\": \"a\", \"sample\": -1, \"completion\": \"x\"}\n\
                    {\"task_id\": \"a\", \"sample\": 0, \"completion\": \"y\"}\n\
                    {\"task_id\": \"b\", \"sample\": 1}\n";
        let e = parse_generations(text, Path::new("g.jsonl")).unwrap_err();
        let m: Vec<String> = e.issues.iter().map(|i| i.to_string()).collect();
        assert!(m.contains(&"g.jsonl:2: field `sample`: found the number -1, expected a sample index (0, 1, …)".to_string()), "{m:#?}");
        assert!(
            m.iter().any(|x| x
                .starts_with("g.jsonl:3: field `sample`: sample 0 of \"a\" is already on line 1")),
            "{m:#?}"
        );
        assert!(
            m.contains(&"g.jsonl:4: field `completion`: missing; expected a string".to_string()),
            "{m:#?}"
        );
        let ok = parse_generations(
            "{\"task_id\": \"a\", \"sample\": 2, \"completion\": \"\"}\n",
            Path::new("g"),
        )
        .unwrap();
        assert_eq!(ok[0].sample, 2);
        let e = parse_generations(
            "{\"task_id\": \"a\", \"sample\": 0, \"completoin\": \"x\"}\n",
            Path::new("g.jsonl"),
        )
        .unwrap_err();
        let m = e.issues[e.issues.len() - 1].to_string();
        assert!(
            m.starts_with("g.jsonl:1: field `completoin`: unknown field")
                && m.ends_with("(did you mean 'completion'?)"),
            "{m}"
        );
    }

    #[test]
    fn append_then_load_roundtrips() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("g.jsonl");
        let g = Generation {
            task_id: "t".into(),
            sample: 3,
            completion: "```python\nx\n```".into(),
            expected_label: None,
        };
        append_generation(&p, &g).unwrap();
        append_generation(
            &p,
            &Generation {
                sample: 4,
                ..g.clone()
            },
        )
        .unwrap();
        let back = load_generations(&p).unwrap();
        assert_eq!(back.len(), 2);
        assert_eq!(back[0], g);
    }

    fn answer(task: &str, sample: u32) -> Generation {
        Generation {
            task_id: task.into(),
            sample,
            completion: String::new(),
            expected_label: None,
        }
    }

    #[test]
    fn function_references_answer_codegen_bench() {
        let tasks = [Arc::new(crate::testing::function_task("a", &[]))];
        let gens = reference_answers(&tasks, 2);
        assert_eq!(gens.len(), 2);
        assert_eq!((gens[1].task_id.as_str(), gens[1].sample), ("a", 1));
        assert_eq!(gens[0].completion, "```python\ndef f(): pass\n```\n");
        assert!(reference_answers(&tasks, 0).is_empty());
    }

    #[test]
    fn answers_are_counted_matched_to_tasks_and_labelled() {
        let tasks: Vec<Arc<Task>> = ["a", "b", "c"]
            .map(|id| Arc::new(crate::testing::function_task(id, &[])))
            .to_vec();
        let mut gens = vec![answer("a", 0), answer("a", 1), answer("c", 0)];
        assert_eq!(
            missing_samples(&tasks, &gens, 2),
            [("b".to_string(), 0), ("c".to_string(), 1)]
        );
        assert!(missing_samples(&tasks, &gens, 1).contains(&("b".to_string(), 0)));
        let with: Vec<String> = tasks_with_answers(tasks, &gens)
            .iter()
            .map(|t| t.id.clone())
            .collect();
        assert_eq!(with, ["a", "c"]);

        let label = ExpectedLabel {
            category: Category::ALL[0],
            subtype: None,
        };
        gens[1].expected_label = Some(label);
        let mut results = [0, 1].map(|i| {
            let mut r = crate::testing::result(i, crate::Status::Fail, 1.0);
            r.task_id = "a".into();
            r.expected = Some(label);
            r
        });
        attach_expected(&mut results, &gens);
        assert_eq!(results[0].expected, None);
        assert_eq!(results[1].expected, Some(label));
    }

    #[test]
    fn earlier_generations_are_none_without_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("generations.jsonl");
        assert!(load_earlier_generations(&path).unwrap().is_empty());
        append_generation(&path, &answer("a", 0)).unwrap();
        assert_eq!(load_earlier_generations(&path).unwrap(), [answer("a", 0)]);
    }
}
