//! The per-bug work of `bench reproduce` and its rows (one JSON line per bug in
//! `results.jsonl`; `reprolab-bench` turns them into tables): a bundled bug's reference and
//! near-miss judged (`--verify-only`, no model), or a model's loop on one bug with its usage.
//! The bench's loop over bugs (skip the finished ones, append each row) is the binary's.

use std::path::Path;
use std::time::Instant;

use reprolab_llm::MeterSnapshot;
use serde::{Deserialize, Serialize};

use crate::agent::{self, Reproduction};
use crate::facts::Facts;
use crate::generate::{self, Model};
use crate::outputs::{self, OutputError};
use crate::prepare::Prepared;
use crate::progress::Progress;
use crate::report::BugReport;
use crate::run::ScriptRunner;
use crate::verdict::Verdict;
use crate::verify::verify;

/// The verdict on one script.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Check {
    pub reproduced: bool,
    pub showing: usize,
    pub runs: usize,
    /// The verdict's first reason or the first run's observation.
    pub reason: String,
}

/// One bug of a verify run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VerifyRow {
    pub id: String,
    /// The annotated symptom (`bug.json`), if any.
    pub symptom_annotated: Option<String>,
    /// The symptom class read from the report.
    pub symptom_extracted: String,
    pub reference: Option<Check>,
    pub near_miss: Option<Check>,
    pub time_s: f64,
}

/// One bug of a reproduce run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReproduceRow {
    pub id: String,
    pub model: String,
    pub framework: String,
    pub symptom: String,
    pub root_cause: String,
    pub reproduced: bool,
    /// Attempts made (the reproducing one included).
    pub attempts: u32,
    pub calls: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub cost_usd: Option<f64>,
    pub time_s: f64,
    /// Why it stopped: the final verdict's reason or the model error.
    pub reason: String,
}

impl VerifyRow {
    /// The reference (if any) reproduces the bug.
    pub fn reference_ok(&self) -> bool {
        self.reference.as_ref().is_none_or(|c| c.reproduced)
    }

    /// The near-miss (if any) does not.
    pub fn near_miss_ok(&self) -> bool {
        self.near_miss.as_ref().is_none_or(|c| !c.reproduced)
    }

    /// One progress line.
    pub fn line(&self) -> String {
        let no = |ok: bool| if ok { "" } else { "NOT " };
        format!(
            "{}: reference {}confirmed, near-miss {}rejected",
            self.id,
            no(self.reference_ok()),
            no(self.near_miss_ok())
        )
    }
}

impl ReproduceRow {
    /// One progress line.
    pub fn line(&self) -> String {
        let not = if self.reproduced { "" } else { "not " };
        format!("{}: {not}reproduced", self.id)
    }
}

impl From<&Verdict> for Check {
    fn from(v: &Verdict) -> Check {
        Check {
            reproduced: v.reproduced,
            showing: v.showing,
            runs: v.runs,
            reason: v
                .reasons
                .first()
                .or_else(|| v.per_run.first().map(|r| &r.reason))
                .cloned()
                .unwrap_or_default(),
        }
    }
}

/// The reports whose id is one of `only` (a trailing `*` matches a prefix); all when `only` is
/// empty.
pub fn select(mut reports: Vec<BugReport>, only: &[String]) -> Vec<BugReport> {
    reports.retain(|r| {
        only.is_empty()
            || only.iter().any(|o| match o.strip_suffix('*') {
                Some(prefix) => r.id.starts_with(prefix),
                None => r.id == *o,
            })
    });
    reports
}

/// A string field of the report's `bug.json`.
fn meta_str(r: &BugReport, key: &str) -> Option<String> {
    r.meta.as_ref()?.get(key)?.as_str().map(str::to_string)
}

/// The scripts a bundled bug's directory holds beside its report: the reference reproduction
/// (must reproduce the bug) and the near-miss (must not).
const REFERENCE: &str = "reference.py";
const NEAR_MISS: &str = "near_miss.py";

/// Judge the bug's reference and near-miss (those present) with every seed; `started` is when
/// work on the bug began (its preparation included).
pub async fn verify_bug(p: &Prepared, runner: &ScriptRunner<'_>, started: Instant) -> VerifyRow {
    let reference = judge_beside(p, runner, REFERENCE).await;
    let near_miss = judge_beside(p, runner, NEAR_MISS).await;
    let time_s = started.elapsed().as_secs_f64();
    verify_row(
        &p.report,
        &p.facts,
        reference.as_ref(),
        near_miss.as_ref(),
        time_s,
    )
}

/// The verdict on the script `name` beside the report, if there is one.
async fn judge_beside(p: &Prepared, runner: &ScriptRunner<'_>, name: &str) -> Option<Verdict> {
    let dir = p.report.path.parent().unwrap_or(Path::new(""));
    let script = std::fs::read_to_string(dir.join(name)).ok()?;
    let label = format!("bench verify {} {name}", p.report.id);
    let (facts, text) = (&p.facts, &p.report.text);
    Some(
        verify(facts, text, &script, runner, &label, &p.seeds)
            .await
            .1,
    )
}

/// The row of a verified bug.
pub fn verify_row(
    report: &BugReport,
    facts: &Facts,
    reference: Option<&Verdict>,
    near_miss: Option<&Verdict>,
    time_s: f64,
) -> VerifyRow {
    VerifyRow {
        id: report.id.clone(),
        symptom_annotated: meta_str(report, "symptom"),
        symptom_extracted: facts.symptom.as_str().to_string(),
        reference: reference.map(Check::from),
        near_miss: near_miss.map(Check::from),
        time_s,
    }
}

/// The model could not be reached: the bench stops, keeping the rows that finished.
#[derive(Debug, thiserror::Error)]
#[error("asking the model: {0}")]
pub struct ModelUnreachable(pub String);

/// One bug's model loop: its row, and whether the model is out of reach.
pub struct BugRun {
    pub row: ReproduceRow,
    pub unreachable: Option<ModelUnreachable>,
}

/// Run the model's loop on one bug and write `out/<id>/`: `attempts.json` and, for the best
/// judged attempt, the reproduction's files. `started` is when work on the bug began.
pub async fn reproduce_bug(
    model: &Model<'_>,
    p: &Prepared,
    runner: &ScriptRunner<'_>,
    out: &Path,
    started: Instant,
    progress: &dyn Progress,
) -> Result<BugRun, OutputError> {
    let before = model.meter.snapshot();
    let snippets = generate::code_context(p, model.context, progress).await;
    let result = agent::reproduce(
        model.chat,
        &p.case(&snippets),
        runner,
        model.agent,
        &mut |_| {},
    )
    .await;
    let after = model.meter.snapshot();
    let dir = out.join(&p.report.id);
    outputs::write_attempts(&dir, &result)?;
    let name = model.chat.name();
    if let Some(judged) = generate::best(&result, generate::origin(&name, &result, None)) {
        judged.write(p, &dir)?;
    }
    let usage = Usage::between(&before, &after);
    let row = reproduce_row(
        &p.report,
        &p.facts,
        &name,
        &result,
        &usage,
        started.elapsed().as_secs_f64(),
    );
    Ok(BugRun {
        row,
        unreachable: unreachable(&result).map(ModelUnreachable),
    })
}

/// A stop on the first attempt that is not a budget's: the model cannot be reached, and every
/// later bug would stop the same way.
fn unreachable(result: &Reproduction) -> Option<String> {
    let stop = result.stopped.as_ref()?;
    (result.attempts.len() <= 1 && !stop.contains("budget")).then(|| stop.clone())
}

/// The model's usage over one bug: the meter's difference.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Usage {
    /// Calls made, failed ones included.
    pub calls: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub cost_usd: f64,
}

impl Usage {
    pub fn between(before: &MeterSnapshot, after: &MeterSnapshot) -> Usage {
        Usage {
            calls: after.calls + after.failed - before.calls - before.failed,
            prompt_tokens: after.prompt_tokens - before.prompt_tokens,
            completion_tokens: after.completion_tokens - before.completion_tokens,
            cost_usd: after.cost_usd - before.cost_usd,
        }
    }
}

/// The row of a bug the model worked on: the annotations of its `bug.json` (else what the
/// report states, else `unknown`), the outcome, and why it ended (the loop's stop, the best
/// verdict, or why nothing was judged).
pub fn reproduce_row(
    report: &BugReport,
    facts: &Facts,
    model: &str,
    result: &Reproduction,
    usage: &Usage,
    time_s: f64,
) -> ReproduceRow {
    let reason = match (
        result.best().and_then(|b| b.verdict.as_ref()),
        &result.stopped,
    ) {
        (_, Some(stop)) => stop.clone(),
        (Some(v), None) => v.summary(),
        (None, None) => result.why_unjudged(),
    };
    ReproduceRow {
        id: report.id.clone(),
        model: model.to_string(),
        framework: meta_str(report, "framework").unwrap_or_else(|| "unknown".into()),
        symptom: meta_str(report, "symptom")
            .or_else(|| meta_str(report, "symptom_type"))
            .unwrap_or_else(|| facts.symptom.as_str().to_string()),
        root_cause: meta_str(report, "root_cause")
            .or_else(|| meta_str(report, "root_cause_kind"))
            .unwrap_or_else(|| "unknown".into()),
        reproduced: result.reproduced_by.is_some(),
        attempts: result.attempts.len() as u32,
        calls: usage.calls,
        prompt_tokens: usage.prompt_tokens,
        completion_tokens: usage.completion_tokens,
        cost_usd: (usage.cost_usd > 0.0).then_some(usage.cost_usd),
        time_s,
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::Attempt;
    use crate::facts::extract;
    use crate::verdict::judge;

    fn report(meta: serde_json::Value) -> BugReport {
        BugReport {
            id: "07-nan".into(),
            text: "The loss is nan after the first epoch.".into(),
            path: "bugs/07-nan/report.md".into(),
            code_dir: None,
            meta: Some(meta),
        }
    }

    fn loop_result(attempts: u32, stopped: Option<&str>) -> Reproduction {
        let attempt = |number| Attempt {
            number,
            script: None,
            problem: Some("no script in the answer".into()),
            precheck: Vec::new(),
            verdict: None,
            runs: Vec::new(),
            prompt_tokens: 0,
            completion_tokens: 0,
        };
        Reproduction {
            plan: None,
            attempts: (1..=attempts).map(attempt).collect(),
            reproduced_by: None,
            stopped: stopped.map(str::to_string),
            context: Vec::new(),
        }
    }

    #[test]
    fn a_verdict_without_runs_is_a_failed_check_with_its_reason() {
        let r = report(serde_json::json!({"symptom": "nan"}));
        let facts = extract(&r.text);
        let none = judge(&facts, &r.text, &[]);
        let row = verify_row(&r, &facts, Some(&none), None, 1.5);
        let check = row.reference.as_ref().unwrap();
        assert!(!check.reproduced && check.runs == 0);
        assert_eq!(
            check.reason,
            none.reasons.first().cloned().unwrap_or_default()
        );
        assert_eq!(row.symptom_annotated.as_deref(), Some("nan"));
        assert_eq!(row.symptom_extracted, facts.symptom.as_str());
        assert!(!row.reference_ok() && row.near_miss_ok());
    }

    #[test]
    fn the_row_takes_annotations_usage_and_the_stop() {
        let r = report(serde_json::json!({"framework": "pytorch", "root_cause_kind": "api"}));
        let facts = extract(&r.text);
        let before = MeterSnapshot::default();
        let after = MeterSnapshot {
            calls: 2,
            failed: 1,
            prompt_tokens: 300,
            completion_tokens: 40,
            ..MeterSnapshot::default()
        };
        let usage = Usage::between(&before, &after);
        let result = loop_result(1, Some("connection refused"));
        let row = reproduce_row(&r, &facts, "m", &result, &usage, 2.0);
        assert_eq!(
            (row.framework.as_str(), row.root_cause.as_str()),
            ("pytorch", "api")
        );
        assert_eq!(row.symptom, facts.symptom.as_str(), "read from the report");
        assert_eq!(
            (row.calls, row.prompt_tokens, row.completion_tokens),
            (3, 300, 40)
        );
        assert_eq!((row.cost_usd, row.attempts), (None, 1));
        assert_eq!(row.reason, "connection refused");
        assert!(!row.reproduced);
        assert_eq!(unreachable(&result).as_deref(), Some("connection refused"));
        let out_of_budget = loop_result(1, Some("budget of 1 calls exceeded"));
        assert_eq!(unreachable(&out_of_budget), None);
        let unjudged = loop_result(2, None);
        assert_eq!(unreachable(&unjudged), None);
        let row = reproduce_row(&r, &facts, "m", &unjudged, &usage, 2.0);
        assert_eq!(row.reason, "no script in the answer");
    }

    #[test]
    fn only_picks_ids_and_prefixes() {
        let named = |id: &str| BugReport {
            id: id.into(),
            ..report(serde_json::json!({}))
        };
        let all = || vec![named("01-a"), named("02-b"), named("12-c")];
        let ids = |rs: Vec<BugReport>| rs.into_iter().map(|r| r.id).collect::<Vec<_>>();
        assert_eq!(ids(select(all(), &[])).len(), 3);
        assert_eq!(
            ids(select(all(), &["0*".into(), "12-c".into()])),
            vec!["01-a", "02-b", "12-c"]
        );
        assert_eq!(ids(select(all(), &["02".into()])), Vec::<String>::new());
    }
}
