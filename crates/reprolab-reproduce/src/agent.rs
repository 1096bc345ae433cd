//! The LLM as the writer, execution as the judge: generate a script from the report, run it with
//! every seed, compare what it showed with the report's symptom, and give the model the actual
//! outcome as feedback for the next attempt, up to K attempts (RepGen's loop with its simulated
//! execution replaced by real runs).
//!
//! Before the first attempt the model plans the script (RepGen's plan: concrete steps with
//! specific values; [`crate::plan`]), and every candidate is checked statically before it runs
//! ([`crate::precheck`]): a script that cannot parse, imports a package the environment lacks or
//! raises the report's exception itself is answered with the findings, without spending a run.
//!
//! The conversation the model sees is kept short (SWE-agent's lesson: history is noise): the
//! task, then only the latest script and what running it showed. Every attempt is recorded,
//! including answers without code and failed calls; a model error ends the loop with what was
//! reached, never a lost result.

use std::fmt::Write as _;

use reprolab_exec::spec_env::Resolution;
use reprolab_llm::parse::extract_code;
use reprolab_llm::{ChatModel, ChatRequest, LlmError, Message};
use serde::Serialize;

use crate::context::Snippet;
use crate::facts::{Facts, Symptom};
use crate::observe::Observation;
use crate::plan::{self, Plan};
use crate::precheck::{self, Finding, Precheck};
use crate::report::BugReport;
use crate::run::ScriptRunner;
use crate::verdict::Verdict;
use crate::verify::verify;

/// Settings of the loop.
#[derive(Debug, Clone)]
pub struct AgentOptions {
    /// Attempts before giving up (RepGen: 5).
    pub attempts: u32,
    pub temperature: f64,
    pub max_tokens: u32,
    /// Ask the model for a plan before the first attempt.
    pub plan: bool,
}

impl Default for AgentOptions {
    fn default() -> Self {
        AgentOptions {
            attempts: 5,
            temperature: 0.2,
            max_tokens: 2048,
            plan: true,
        }
    }
}

/// One attempt: the model's answer and, when it held code, the verdict on running it.
#[derive(Debug, Clone, Serialize)]
pub struct Attempt {
    pub number: u32,
    /// The script extracted from the answer.
    pub script: Option<String>,
    /// Why the attempt could not be judged (no code in the answer, the model call failed, the
    /// pre-check found the script pointless to run).
    pub problem: Option<String>,
    /// What the static pre-check found in the script.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub precheck: Vec<Finding>,
    pub verdict: Option<Verdict>,
    #[serde(skip)]
    pub runs: Vec<Observation>,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

/// The loop's result.
#[derive(Debug, Clone, Serialize)]
pub struct Reproduction {
    /// The model's plan, when one was asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan: Option<Plan>,
    pub attempts: Vec<Attempt>,
    /// Index of the attempt that reproduced the bug.
    pub reproduced_by: Option<usize>,
    /// Why the loop stopped early (a model error, the budget).
    pub stopped: Option<String>,
    /// The code definitions the prompt held (file, name, score, why chosen).
    pub context: Vec<Snippet>,
}

impl Reproduction {
    /// The attempt to show the user: the reproducing one, else the last judged one.
    pub fn best(&self) -> Option<&Attempt> {
        match self.reproduced_by {
            Some(i) => self.attempts.get(i),
            None => self.attempts.iter().rev().find(|a| a.verdict.is_some()),
        }
    }

    /// Why no attempt was judged: the loop's stop, else the last attempt's problem.
    pub fn why_unjudged(&self) -> String {
        self.stopped
            .clone()
            .or_else(|| self.attempts.iter().rev().find_map(|a| a.problem.clone()))
            .unwrap_or_else(|| "no answer held a script".into())
    }
}

const SYSTEM: &str = "You are an expert in PyTorch and Keras who turns deep-learning bug reports \
into minimal, runnable reproduction scripts. Your scripts are executed for real, on a CPU, and \
judged by what they actually do.";

/// The first prompt: the report, the code context ranked for it, the facts extracted from it,
/// the environment and the rules.
pub fn task_prompt(
    report: &BugReport,
    facts: &Facts,
    env: &Resolution,
    context: &[Snippet],
) -> String {
    let mut p = String::new();
    let _ = writeln!(
        p,
        "Write a Python script that reproduces the bug described in this report.\n"
    );
    let _ = writeln!(p, "<report>\n{}\n</report>\n", report.text.trim());
    if !context.is_empty() {
        let _ = writeln!(
            p,
            "Definitions from the code the report concerns, most relevant first (importable; \
             call them rather than copying them):"
        );
        for s in context {
            let _ = writeln!(
                p,
                "<context file=\"{}\" name=\"{}\" lines=\"{}-{}\">\n{}\n</context>",
                s.file,
                s.qualname,
                s.start,
                s.end,
                s.source.trim_end()
            );
        }
        p.push('\n');
    }
    let _ = writeln!(
        p,
        "The symptom the script must show ({}): {}",
        facts.symptom.as_str(),
        symptom_goal(facts)
    );
    let versions: Vec<String> = env
        .installed
        .iter()
        .map(|(n, v)| format!("{n} {}", v.split('+').next().unwrap_or(v)))
        .collect();
    let _ = writeln!(
        p,
        "Environment: Python {}, {}; Keras runs on its torch backend; CPU only, no network, no \
         downloads (no pretrained weights or datasets: use random tensors or scikit-learn's \
         bundled datasets).\n",
        // Major and minor only: the patch level changes nothing a script does, and the prompt
        // should read the same on every machine with the same packages.
        env.python.split('.').take(2).collect::<Vec<_>>().join("."),
        versions.join(", ")
    );
    p.push_str(
        "Rules:\n\
         - One self-contained script that finishes in under a minute.\n\
         - Call the real library code in which the bug lives, with the report's shapes, \
         arguments and values. Never define the exception class, never `raise` or `assert` the \
         reported error yourself, never mock or re-implement library functions: the judge \
         rejects a symptom produced by the script's own code.\n\
         - Do not catch the exception: let it propagate.\n\
         - For a silent bug (NaN, values that do not change, a wrong number), compute the values \
         and pass them to `reprolab.report`, e.g. `import reprolab` then \
         `reprolab.report(loss=loss.item())` at every step, or `reprolab.report(weight_change=delta)`; \
         use the quantity's name from the report. Literals such as `reprolab.report(loss=float('nan'))` \
         are ignored.\n\
         - Answer with the complete script in one ```python block.\n",
    );
    p
}

fn symptom_goal(facts: &Facts) -> String {
    match facts.symptom {
        Symptom::Error => facts
            .primary_error()
            .map(|e| {
                format!(
                    "raise `{}: {}` from the library's code",
                    e.qualified, e.message
                )
            })
            .unwrap_or_default(),
        Symptom::Warning => {
            let w = &facts.warnings[0];
            format!("make the library issue `{}: {}`", w.category, w.message)
        }
        Symptom::Nan => {
            "a computed value (reported with reprolab.report) becomes NaN or Inf".into()
        }
        Symptom::NoChange => {
            "a reported value that should change (weights, loss) stays the same".into()
        }
        Symptom::Value => {
            let values: Vec<String> = facts.observed_values().map(|v| v.to_string()).collect();
            format!("report {} (within 5%)", values.join(" or "))
        }
        Symptom::Unknown => {
            "what the report describes; report the values that show it with reprolab.report".into()
        }
    }
}

/// The feedback after a judged attempt: what running it showed and why it does not match.
pub fn feedback_prompt(verdict: &Verdict, runs: &[Observation]) -> String {
    let mut p = String::new();
    let _ = writeln!(
        p,
        "I ran your script {} times (seeds {}). It did not reproduce the bug: {}",
        runs.len(),
        runs.iter()
            .map(|o| o.seed.to_string())
            .collect::<Vec<_>>()
            .join(", "),
        verdict.summary()
    );
    let _ = writeln!(p, "Expected: {}", verdict.expected);
    let mut seen: Vec<&str> = Vec::new();
    for r in &verdict.per_run {
        if !seen.contains(&r.reason.as_str()) {
            seen.push(&r.reason);
            let _ = writeln!(p, "- seed {}: {}", r.seed, r.reason);
        }
    }
    if let Some(o) = runs.first() {
        let tail = tail_chars(&o.output_tail, 1500);
        if !tail.trim().is_empty() {
            let _ = writeln!(
                p,
                "\nWhat the script printed (seed {}, last part):\n```\n{}\n```",
                o.seed,
                tail.trim_end()
            );
        }
    }
    p.push_str("\nWrite a corrected, complete script (one ```python block) that shows the reported symptom.");
    p
}

fn tail_chars(s: &str, n: usize) -> String {
    let count = s.chars().count();
    s.chars().skip(count.saturating_sub(n)).collect()
}

/// What the loop works on: the report, what it states, the environment it runs in, the seeds of
/// every judgement and the code context for the prompt.
#[derive(Debug, Clone, Copy)]
pub struct Case<'a> {
    pub report: &'a BugReport,
    pub facts: &'a Facts,
    pub env: &'a Resolution,
    pub seeds: &'a [u64],
    pub context: &'a [Snippet],
}

/// Run the loop. `on_attempt` sees each attempt as it is judged (progress, persistence).
pub async fn reproduce(
    model: &dyn ChatModel,
    case: &Case<'_>,
    runner: &ScriptRunner<'_>,
    opts: &AgentOptions,
    on_attempt: &mut dyn FnMut(&Attempt),
) -> Reproduction {
    let mut task = task_prompt(case.report, case.facts, case.env, case.context);
    let mut last: Option<(String, String)> = None; // (answer, feedback)
    let mut result = Reproduction {
        plan: None,
        attempts: Vec::new(),
        reproduced_by: None,
        stopped: None,
        context: case.context.to_vec(),
    };
    if opts.plan {
        match ask_plan(model, &task, opts).await {
            Ok(plan) => {
                task = plan::with_plan(&task, &plan.steps);
                result.plan = Some(plan);
            }
            Err(e) => {
                // The model cannot be asked: every attempt would fail the same way.
                let why = stop_reason(&e);
                result.plan = Some(Plan {
                    problem: Some(why.clone()),
                    ..Plan::default()
                });
                result.stopped = Some(why);
                return result;
            }
        }
    }
    let checker = Precheck::for_runner(runner);
    let expect = precheck::expected_exception(case.facts).map(str::to_string);
    for number in 1..=opts.attempts.max(1) {
        let mut messages = vec![Message::system(SYSTEM), Message::user(task.clone())];
        if let Some((answer, feedback)) = &last {
            messages.push(Message::assistant(answer.clone()));
            messages.push(Message::user(feedback.clone()));
        }
        let req = ChatRequest {
            messages,
            temperature: opts.temperature,
            max_tokens: opts.max_tokens,
            seed: Some(number as u64),
            ..ChatRequest::default()
        };
        let mut attempt = Attempt {
            number,
            script: None,
            problem: None,
            precheck: Vec::new(),
            verdict: None,
            runs: Vec::new(),
            prompt_tokens: 0,
            completion_tokens: 0,
        };
        let answer = match model.chat(&req).await {
            Ok(r) => {
                attempt.prompt_tokens = r.usage.prompt_tokens;
                attempt.completion_tokens = r.usage.completion_tokens;
                r.text().to_string()
            }
            Err(e) => {
                let why = stop_reason(&e);
                attempt.problem = Some(why.clone());
                on_attempt(&attempt);
                result.attempts.push(attempt);
                result.stopped = Some(why);
                break;
            }
        };
        let python = runner.env.python.clone();
        let text = answer.clone();
        let code = tokio::task::spawn_blocking(move || {
            extract_code(&text, &|candidate| python_parses(&python, candidate)).code
        })
        .await
        .ok()
        .flatten();
        let feedback = match code {
            None => {
                attempt.problem = Some("the answer holds no Python code".into());
                "Your answer held no Python code. Answer with the complete script in one ```python block.".to_string()
            }
            Some(script) => {
                let script = format!("{}\n", script.trim_end());
                judge_script(
                    &mut attempt,
                    script,
                    &checker,
                    expect.as_deref(),
                    case,
                    runner,
                )
                .await
            }
        };
        let reproduced = attempt.verdict.as_ref().is_some_and(|v| v.reproduced);
        on_attempt(&attempt);
        if reproduced {
            result.reproduced_by = Some(result.attempts.len());
        }
        result.attempts.push(attempt);
        if reproduced {
            break;
        }
        last = Some((answer, feedback));
    }
    result
}

/// Pre-check `script`, and run and judge it unless a finding blocks it; fills `attempt` and
/// returns the feedback for the next attempt.
async fn judge_script(
    attempt: &mut Attempt,
    script: String,
    checker: &Precheck,
    expect: Option<&str>,
    case: &Case<'_>,
    runner: &ScriptRunner<'_>,
) -> String {
    let findings = {
        let (checker, script, expect) = (checker.clone(), script.clone(), expect.map(String::from));
        tokio::task::spawn_blocking(move || checker.check(&script, expect.as_deref()))
            .await
            .unwrap_or_default()
    };
    attempt.script = Some(script);
    if precheck::blocks(&findings) {
        let first = findings.iter().find(|f| f.blocking).expect("blocks");
        attempt.problem = Some(format!("not run: {}", first.describe()));
        let feedback = precheck::blocking_feedback(&findings);
        attempt.precheck = findings;
        return feedback;
    }
    let label = format!("reproduce {} attempt {}", case.report.id, attempt.number);
    let script = attempt.script.as_deref().expect("set above");
    let (runs, verdict) = verify(
        case.facts,
        &case.report.text,
        script,
        runner,
        &label,
        case.seeds,
    )
    .await;
    let feedback = feedback_prompt(&verdict, &runs) + &precheck::advisory_note(&findings);
    attempt.precheck = findings;
    attempt.verdict = Some(verdict);
    attempt.runs = runs;
    feedback
}

/// Ask for the plan; an answer without steps is a plan with a `problem` and no steps.
async fn ask_plan(
    model: &dyn ChatModel,
    task: &str,
    opts: &AgentOptions,
) -> Result<Plan, LlmError> {
    let req = ChatRequest {
        messages: vec![Message::system(SYSTEM), Message::user(plan::request(task))],
        temperature: opts.temperature,
        max_tokens: opts.max_tokens,
        seed: Some(0),
        ..ChatRequest::default()
    };
    let r = model.chat(&req).await?;
    let steps = plan::parse(r.text());
    Ok(Plan {
        problem: steps
            .is_none()
            .then(|| "the planning answer held no steps".to_string()),
        steps: steps.unwrap_or_default(),
        prompt_tokens: r.usage.prompt_tokens,
        completion_tokens: r.usage.completion_tokens,
    })
}

/// Python's own `ast.parse` on `code` (run by the environment's interpreter; a failure to run it
/// counts as "parses", so that running the script reports the problem).
fn python_parses(python: &std::path::Path, code: &str) -> bool {
    use std::io::Write;
    let child = std::process::Command::new(python)
        .args(["-c", "import ast, sys; ast.parse(sys.stdin.read())"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    let Ok(mut child) = child else { return true };
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(code.as_bytes());
    }
    child.wait().map(|s| s.success()).unwrap_or(true)
}

fn stop_reason(e: &LlmError) -> String {
    match e {
        LlmError::BudgetExceeded { .. } => format!("the LLM budget is spent: {e}"),
        _ => format!("the model call failed: {}", reprolab_core::chain(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::extract;
    use crate::verdict::judge;

    fn report(text: &str) -> BugReport {
        BugReport {
            id: "r".into(),
            text: text.into(),
            path: "r.md".into(),
            code_dir: None,
            meta: None,
        }
    }

    #[test]
    fn the_task_states_the_symptom_environment_and_rules() {
        let text = "Crash:\nValueError: Using a target size (torch.Size([128])) that is different";
        let env = Resolution {
            requested: vec![],
            installed: [("torch".to_string(), "2.15.0+cu132".to_string())].into(),
            substitutions: vec![],
            python: "3.11.7".into(),
            managed: true,
            as_of: None,
        };
        let p = task_prompt(&report(text), &extract(text), &env, &[]);
        assert!(p.contains("raise `ValueError: Using a target size"), "{p}");
        assert!(p.contains("torch 2.15.0") && p.contains("Python 3.11,"));
        assert!(p.contains("never `raise`") && p.contains("reprolab.report"));
        assert!(!p.contains("<context"));
        let snippet = Snippet {
            file: "pkg/loss.py".into(),
            name: "flatten".into(),
            qualname: "Head.flatten".into(),
            kind: "method".into(),
            start: 3,
            end: 4,
            score: 9.5,
            why: "rank".into(),
            source: "def flatten(self, x):\n    return x.view(-1)\n".into(),
        };
        let p = task_prompt(&report(text), &extract(text), &env, &[snippet]);
        assert!(
            p.contains("<context file=\"pkg/loss.py\" name=\"Head.flatten\" lines=\"3-4\">\ndef flatten(self, x):\n    return x.view(-1)\n</context>"),
            "{p}"
        );
        assert!(p.find("</report>") < p.find("<context"));
    }

    #[test]
    fn feedback_shows_each_distinct_outcome_once() {
        let text = "The loss becomes nan.";
        let facts = extract(text);
        let runs: Vec<Observation> = (1..=3)
            .map(|seed| Observation {
                seed,
                status: crate::observe::RunStatus::Ok,
                exit_code: Some(0),
                signal: None,
                exceptions: vec![],
                warnings: vec![],
                reported: vec![
                    serde_json::json!({"loss": 0.5})
                        .as_object()
                        .unwrap()
                        .clone(),
                ],
                literal_reports: vec![],
                output_tail: "epoch 1 loss 0.5\n".into(),
                duration_s: 1.0,
                peak_mb: 10,
            })
            .collect();
        let v = judge(&facts, text, &runs);
        let p = feedback_prompt(&v, &runs);
        assert_eq!(
            p.matches("every reported value is finite").count(),
            2,
            "{p}"
        ); // summary + once
        assert!(p.contains("epoch 1 loss 0.5"));
    }
}
