//! Judging one script against one report: run it with every seed, apply the verdict rules. The
//! same path serves `reproduce verify` (any tool's script) and each attempt of the LLM loop, so
//! every script is judged on equal terms.

use std::path::Path;

use serde_json::json;

use crate::facts::Facts;
use crate::minimize::shorten;
use crate::observe::Observation;
use crate::outputs::Judged;
use crate::prepare::Prepared;
use crate::progress::Progress;
use crate::run::ScriptRunner;
use crate::verdict::{Verdict, judge};

/// Run `script` with `seeds` and judge the runs against `facts`.
pub async fn verify(
    facts: &Facts,
    report_text: &str,
    script: &str,
    runner: &ScriptRunner<'_>,
    label: &str,
    seeds: &[u64],
) -> (Vec<Observation>, Verdict) {
    let runs = runner.run(label, script, seeds).await;
    let verdict = judge(facts, report_text, &runs);
    (runs, verdict)
}

/// `reproduce verify`: judge the script at `path` (its text is `script`) against `p`'s report;
/// with a minimisation budget, shorten it when it reproduces the bug.
pub async fn given(
    p: &Prepared,
    runner: &ScriptRunner<'_>,
    path: &Path,
    script: String,
    minimize: Option<usize>,
    progress: &dyn Progress,
) -> Judged {
    let label = format!("verify {} {}", p.report.id, path.display());
    progress.begin(&format!("running {} x{}", path.display(), p.seeds.len()));
    let (runs, verdict) = verify(&p.facts, &p.report.text, &script, runner, &label, &p.seeds).await;
    progress.end();
    let origin = json!({"given": path.display().to_string()});
    let judged = Judged::new(script, runs, verdict, origin);
    match minimize {
        Some(budget) if judged.verdict.reproduced => {
            let s = shorten(p, runner, &judged.script, &label, budget, progress).await;
            judged.shortened(s)
        }
        // Asked to minimise, the files hold reproduce.full.py whatever the verdict.
        Some(_) => Judged {
            full: Some(judged.script.clone()),
            ..judged
        },
        None => judged,
    }
}
