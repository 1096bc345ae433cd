//! A model's opinion on a silent or code-inspection report, where the rules see only numbers:
//! does the script, with what running it printed and reported, show what the report describes?
//! It is stored beside the verdict and labelled as an opinion; it never changes the verdict (a
//! judge that simulates execution is what this tool replaces, not what it trusts).

use reprolab_llm::parse::extract_json;
use reprolab_llm::{ChatModel, ChatRequest};
use serde::Serialize;

use crate::facts::Symptom;

/// What the model said.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Opinion {
    /// Always "an LLM's opinion, not the verdict".
    pub label: &'static str,
    pub model: String,
    /// `None` when the answer held no usable JSON (the answer is kept in `reason`).
    pub reproduced: Option<bool>,
    pub reason: String,
}

/// Whether a report of this symptom class gets an opinion: silent bugs and code inspection.
pub fn wanted(symptom: Symptom) -> bool {
    matches!(
        symptom,
        Symptom::Nan | Symptom::NoChange | Symptom::Value | Symptom::Unknown
    )
}

pub fn prompt(report: &str, script: &str, observed: &str) -> String {
    format!(
        "A bug report, a script meant to reproduce it, and what running the script really showed \
         (several seeds). Does the observed behaviour show the bug the report describes? Judge \
         only from what was observed, not from what the script intends.\n\n<report>\n{}\n</report>\n\n\
         <script>\n{}\n</script>\n\n<observed>\n{}\n</observed>\n\n\
         Answer with JSON only: {{\"reproduced\": true or false, \"reason\": \"one sentence\"}}",
        report.trim(),
        script.trim(),
        observed.trim()
    )
}

/// Ask `model`; a failed call is an opinion that says so, never an error of the reproduction.
pub async fn ask(model: &dyn ChatModel, report: &str, script: &str, observed: &str) -> Opinion {
    let req = ChatRequest {
        temperature: 0.0,
        max_tokens: 300,
        json_mode: true,
        ..ChatRequest::user(prompt(report, script, observed))
    };
    let label = "an LLM's opinion, not the verdict";
    let name = model.name();
    match model.chat(&req).await {
        Ok(r) => parse(r.text(), label, name),
        Err(e) => Opinion {
            label,
            model: name,
            reproduced: None,
            reason: format!("the model call failed: {e}"),
        },
    }
}

fn parse(text: &str, label: &'static str, model: String) -> Opinion {
    let json = extract_json(text).ok();
    let reproduced = json.as_ref().and_then(|j| j.get("reproduced")?.as_bool());
    let reason = json
        .as_ref()
        .and_then(|j| j.get("reason")?.as_str().map(str::to_string))
        .unwrap_or_else(|| text.chars().take(500).collect());
    Opinion {
        label,
        model,
        reproduced,
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_read_tolerantly_and_garbage_is_kept_as_such() {
        let o = parse(
            "Sure: ```json\n{\"reproduced\": true, \"reason\": \"loss is nan\"}\n```",
            "l",
            "m".into(),
        );
        assert_eq!(
            (o.reproduced, o.reason.as_str()),
            (Some(true), "loss is nan")
        );
        let g = parse("I cannot tell.", "l", "m".into());
        assert_eq!((g.reproduced, g.reason.as_str()), (None, "I cannot tell."));
        assert!(wanted(Symptom::Unknown) && wanted(Symptom::Nan) && !wanted(Symptom::Error));
    }
}
