//! RepGen's plan: before the first script, the model lists the concrete steps of the
//! reproduction (specific shapes, arguments and values, and the step that shows the bug
//! happened); every attempt's prompt then carries the plan. The answer is read tolerantly (a JSON
//! array of strings or of objects, else a numbered or bulleted list); an answer with no usable
//! plan is recorded as such and the loop goes on without one.

use std::fmt::Write as _;

use reprolab_llm::parse::{extract_json, numbered_list};
use serde::Serialize;
use serde_json::Value;

/// Most steps kept, and most characters of one (a rambling model cannot flood every prompt).
const MAX_STEPS: usize = 12;
const MAX_STEP_CHARS: usize = 300;

/// The plan the model gave, or why there is none.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Plan {
    pub steps: Vec<String>,
    /// Why no plan was taken from the answer.
    pub problem: Option<String>,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

/// The planning request: the task, then the instruction to plan instead of writing code.
pub fn request(task: &str) -> String {
    format!(
        "{task}\n\
         Do not write the script yet. First plan it: answer with a JSON array of short, concrete \
         steps, each with the specific values it uses (library calls with their arguments, \
         tensor shapes and dtypes, hyperparameters), ending with the step that shows the \
         reported symptom happened. For example:\n\
         [\"Create a model with torch.nn.Linear(10, 1) and a target of shape (128,)\", \
         \"Call torch.nn.BCELoss()(output of shape (128, 1), target) so that the library raises \
         the ValueError\"]"
    )
}

/// The steps of a planning answer: a JSON array (of strings, or of objects whose first text
/// field is the step), else a numbered or bulleted list; `None` when there is no usable plan.
pub fn parse(answer: &str) -> Option<Vec<String>> {
    let from_json = extract_json(answer)
        .ok()
        .and_then(|v| match v {
            Value::Array(items) => Some(items),
            Value::Object(mut o) => match o.remove("steps").or_else(|| o.remove("plan")) {
                Some(Value::Array(items)) => Some(items),
                _ => None,
            },
            _ => None,
        })
        .map(|items| items.iter().filter_map(step_text).collect::<Vec<_>>());
    let steps = match from_json {
        Some(steps) if !steps.is_empty() => steps,
        _ => numbered_list(answer),
    };
    let steps: Vec<String> = steps
        .into_iter()
        .map(|s| clip(s.trim()))
        .filter(|s| !s.is_empty())
        .take(MAX_STEPS)
        .collect();
    (!steps.is_empty()).then_some(steps)
}

/// A step's text: a string, or an object's `step`/`description`/`action` field, else its first
/// string value.
fn step_text(item: &Value) -> Option<String> {
    match item {
        Value::String(s) => Some(s.clone()),
        Value::Object(o) => ["step", "description", "action"]
            .iter()
            .find_map(|k| o.get(*k).and_then(Value::as_str))
            .or_else(|| o.values().find_map(Value::as_str))
            .map(str::to_string),
        _ => None,
    }
}

fn clip(s: &str) -> String {
    match s.char_indices().nth(MAX_STEP_CHARS) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// The task with the plan appended, as every attempt sees it.
pub fn with_plan(task: &str, steps: &[String]) -> String {
    if steps.is_empty() {
        return task.to_string();
    }
    let mut p = format!(
        "{task}\nA plan for the script (follow it; where running shows a step is wrong, change \
         it):\n"
    );
    for (i, s) in steps.iter().enumerate() {
        let _ = writeln!(p, "{}. {s}", i + 1);
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_are_read_from_json_arrays_objects_and_lists() {
        let plain = "```json\n[\"Make x of shape (2, 3)\", \"Call torch.cat([x, y])\"]\n```";
        assert_eq!(
            parse(plain).unwrap(),
            vec!["Make x of shape (2, 3)", "Call torch.cat([x, y])"]
        );
        let objects = r#"Here is my plan: [{"step": 1, "description": "Build the model"},
            {"id": 2, "text": "Train 3 epochs"}]"#;
        assert_eq!(
            parse(objects).unwrap(),
            vec!["Build the model", "Train 3 epochs"]
        );
        let wrapped = r#"{"plan": ["Load data", "Fit"]}"#;
        assert_eq!(parse(wrapped).unwrap(), vec!["Load data", "Fit"]);
        let listed = "Plan:\n1. Create the tensors\n2. Run backward twice\n\nThat shows it.";
        assert_eq!(
            parse(listed).unwrap(),
            vec!["Create the tensors", "Run backward twice"]
        );
    }

    #[test]
    fn no_plan_in_prose_and_long_plans_are_clipped() {
        assert_eq!(parse("I would simply run the model."), None);
        assert_eq!(parse(""), None);
        let many: Vec<String> = (0..30).map(|i| format!("step {i}")).collect();
        assert_eq!(
            parse(&serde_json::to_string(&many).unwrap()).unwrap().len(),
            MAX_STEPS
        );
        let long = serde_json::to_string(&vec!["x".repeat(1000)]).unwrap();
        assert_eq!(parse(&long).unwrap()[0].chars().count(), MAX_STEP_CHARS + 1);
    }

    #[test]
    fn the_plan_follows_the_task() {
        let task = "Write a script.\n";
        assert_eq!(with_plan(task, &[]), task);
        let p = with_plan(task, &["Make x".into(), "Call f(x)".into()]);
        assert!(p.starts_with(task));
        assert!(p.ends_with("1. Make x\n2. Call f(x)\n"), "{p}");
        assert!(request(task).starts_with(task) && request(task).contains("JSON array"));
    }
}
