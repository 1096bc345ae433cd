//! The repair prompts: the study's one-shot prompt (reference `fl-repair.md` §9), and the
//! refinement prompt of `llm-refine`, which adds what the study's models never saw: the
//! localisation result, the allowed values, and the measured outcome of every earlier attempt.

use reprolab_core::{Goal, ProgramView, SearchSpace};

/// What the repair should achieve, in the study's words ("improve the accuracy").
pub fn goal_text(goal: Goal, metric: &str) -> String {
    match goal {
        Goal::Max => format!("improve the {metric}"),
        Goal::Min => format!("reduce the {metric}"),
    }
}

/// The study's repair prompt, followed by the program and its config.
pub fn repair_prompt(view: &ProgramView, goal: Goal, metric: &str) -> String {
    format!(
        "The following code is designed for a {task} trained on {dataset}. Repair it in order \
to {goal}. The repair replaces one or more hyperparameters, represented in a config dictionary \
as config[\"PARAM\"], with alternative values. Show only config values in JSON format. Give one \
solution.\n\n{listing}",
        task = view.task,
        dataset = view.dataset,
        goal = goal_text(goal, metric),
        listing = view.listing()
    )
}

/// The allowed values of every hyperparameter, one per line.
pub fn space_table(space: &SearchSpace) -> String {
    space
        .iter()
        .map(|p| format!("- {}: {}", p.name, p.describe_domain()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// One earlier attempt as the model is told about it.
#[derive(Debug, Clone, PartialEq)]
pub struct Feedback {
    /// The changes it proposed, `lr: 10 -> 0.01, optimizer: sgd -> adam` (empty: none usable).
    pub changes: String,
    /// What happened: `metric 0.91 (faulty config: 0.58): better` or why it was not trained.
    pub outcome: String,
}

/// `llm-refine`'s prompt for round `round` (1-based): the repair task, the allowed values, the
/// localisation result when there is one, and the outcome of every earlier attempt.
pub fn refine_prompt(
    view: &ProgramView,
    goal: Goal,
    metric: &str,
    space: &SearchSpace,
    localisation: Option<&str>,
    history: &[Feedback],
) -> String {
    let mut out = repair_prompt(view, goal, metric);
    out.push_str("\n\nThe hyperparameters and the values they may take:\n");
    out.push_str(&space_table(space));
    if let Some(l) = localisation.filter(|l| !l.trim().is_empty()) {
        out.push_str(
            "\n\nA fault-localisation tool that inspected the config and one training reports \
(most suspicious first):\n",
        );
        out.push_str(l.trim_end());
    }
    if !history.is_empty() {
        out.push_str("\n\nEarlier repair attempts, each trained and measured on held-out data:\n");
        for (i, f) in history.iter().enumerate() {
            let changes = if f.changes.is_empty() {
                "no usable change"
            } else {
                &f.changes
            };
            out.push_str(&format!("{}. {changes} => {}\n", i + 1, f.outcome));
        }
        out.push_str(
            "\nPropose a different repair that does better than all of them. Show only config \
values in JSON format.",
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view() -> ProgramView {
        ProgramView {
            task: "classification".into(),
            dataset: "digits".into(),
            metric: "accuracy (higher is better)".into(),
            file: "train.py".into(),
            code: "def train(config, seed):\n    ...\n".into(),
            config: "{\n  \"lr\": 10\n}".into(),
        }
    }

    #[test]
    fn the_study_prompt_with_the_program() {
        let p = repair_prompt(&view(), Goal::Max, "accuracy");
        assert!(p.starts_with(
            "The following code is designed for a classification trained on digits. Repair it in \
order to improve the accuracy."
        ));
        assert!(p.contains("Give one solution."));
        assert!(p.contains("```python\n# train.py\ndef train(config, seed):"));
        assert!(p.contains("\"lr\": 10"));
        assert!(repair_prompt(&view(), Goal::Min, "mae").contains("in order to reduce the mae"));
    }

    #[test]
    fn refinement_adds_space_localisation_and_history() {
        use reprolab_core::{Param, ParamKind};
        let space = SearchSpace {
            params: vec![Param {
                name: "lr".into(),
                kind: ParamKind::Float {
                    low: 1e-6,
                    high: 10.0,
                },
                fault: None,
                layer: None,
            }],
        };
        let first = refine_prompt(&view(), Goal::Max, "accuracy", &space, None, &[]);
        assert!(first.contains("- lr: a number in [1e-6, 10]"));
        assert!(!first.contains("Earlier repair attempts"));
        let later = refine_prompt(
            &view(),
            Goal::Max,
            "accuracy",
            &space,
            Some("HLR 0.90: loss diverges"),
            &[Feedback {
                changes: "lr: 10 -> 5".into(),
                outcome: "metric 0.60 (faulty config: 0.58): not better".into(),
            }],
        );
        assert!(later.contains("HLR 0.90: loss diverges"));
        assert!(later.contains("1. lr: 10 -> 5 => metric 0.60 (faulty config: 0.58): not better"));
        assert!(later.ends_with("Show only config values in JSON format."));
    }
}
