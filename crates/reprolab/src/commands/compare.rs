//! `reprolab compare`: is config B significantly better or worse than config A, or, with
//! `--margin`, equivalent to it within that margin?

use std::process::ExitCode;

use anyhow::{Result, bail};
use reprolab_core::Split;
use reprolab_core::manifest::Goal;
use reprolab_exec::{Evaluation, Mode};
use reprolab_stats::{self as stats, Verdict};
use serde::Serialize;
use serde_json::json;

use super::{ci, run_seeds, runs_json, summary};
use crate::cli::{CompareArgs, Global};
use crate::context;
use crate::table::{num, render};

/// The statistics of a comparison of B against A on one split.
#[derive(Debug, Serialize)]
pub struct Comparison {
    pub split: Split,
    #[serde(flatten)]
    pub stats: stats::Comparison,
    /// The TOST within `--margin`, when one was asked for (and pairs exist).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub equivalence: Option<stats::Equivalence>,
}

/// Compare on the runs that finished on both sides, paired by seed; with `margin`, also test
/// their equivalence within it.
pub fn compare(
    a: &[Evaluation],
    b: &[Evaluation],
    split: Split,
    goal: Goal,
    margin: Option<f64>,
) -> Comparison {
    let goal = match goal {
        Goal::Max => stats::Goal::Max,
        Goal::Min => stats::Goal::Min,
    };
    let values = |r: &[Evaluation]| -> Vec<Option<f64>> {
        r.iter().map(|e| e.record.outcome.metric(split)).collect()
    };
    let (stats, equivalence) = stats::compare_by_seed(&values(a), &values(b), goal, margin);
    Comparison {
        split,
        stats,
        equivalence,
    }
}

pub async fn run(g: &Global, args: &CompareArgs) -> Result<ExitCode> {
    if args.runs < 2 {
        bail!("--runs must be at least 2 to compare");
    }
    if let Some(m) = args.margin
        && !(m.is_finite() && m > 0.0)
    {
        bail!("--margin is {m}; expected a positive number in the metric's units, e.g. 0.01");
    }
    let subject = context::load_subject(&args.subject)?;
    let (config_a, path_a) = context::load_config(&subject, args.a.as_deref())?;
    let (config_b, path_b) = context::load_config(&subject, Some(&args.b))?;
    let split = args.split.split();
    let ev = context::evaluator(g).await?;
    let seeds = super::seed_range(args.seed, args.runs)?;
    let (ra, rb) = tokio::join!(
        run_seeds(&ev, &subject, &config_a, &seeds, Mode::Eval, "A", g.json),
        run_seeds(&ev, &subject, &config_b, &seeds, Mode::Eval, "B", g.json),
    );
    let (ra, rb) = (ra?, rb?);
    ev.shutdown().await;
    let cmp = compare(&ra, &rb, split, subject.metric.goal, args.margin);
    let st = &cmp.stats;
    let failed = ra
        .iter()
        .chain(&rb)
        .filter(|e| !e.record.outcome.is_ok())
        .count();

    if g.json {
        let out = json!({
            "subject": subject.name, "metric": subject.metric.name, "goal": subject.metric.goal,
            "a": {"config_path": path_a, "runs": runs_json(&ra), "summary": summary(&ra, split, &subject.metric)},
            "b": {"config_path": path_b, "runs": runs_json(&rb), "summary": summary(&rb, split, &subject.metric)},
            "diff": config_a.diff(&config_b).into_iter().map(|(k, x, y)| json!({"key": k, "a": x, "b": y})).collect::<Vec<_>>(),
            "comparison": cmp, "failed": failed,
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        println!(
            "{}: {} ({}) on the {} split, {} runs each\n",
            subject.name,
            subject.metric.name,
            subject.metric.goal_name(),
            split,
            args.runs
        );
        println!("A = {}\nB = {}", path_a.display(), path_b.display());
        for (k, x, y) in config_a.diff(&config_b) {
            println!(
                "  {k}: {} -> {}",
                x.map_or("-".into(), |v| v.to_string()),
                y.map_or("-".into(), |v| v.to_string())
            );
        }
        println!();
        let mut rows = vec![
            ["", "n", "mean", "std", "95% CI", "failed"]
                .map(String::from)
                .to_vec(),
        ];
        for (name, r) in [("A", &ra), ("B", &rb)] {
            let fails = r
                .iter()
                .filter(|e| !e.record.outcome.is_ok())
                .count()
                .to_string();
            match summary(r, split, &subject.metric) {
                Some(s) => rows.push(vec![
                    name.into(),
                    s.n.to_string(),
                    num(Some(s.mean)),
                    num(Some(s.std)),
                    ci(&s),
                    fails,
                ]),
                None => rows.push(vec![
                    name.into(),
                    "0".into(),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                    fails,
                ]),
            }
        }
        print!("{}", render(&rows));
        let p = |t: &Option<stats::TestResult>| {
            t.as_ref()
                .map_or("-".into(), |t| format!("{:.4} ({})", t.p_value, t.method))
        };
        println!(
            "\nWilcoxon signed-rank p = {} over {} pairs\nMann-Whitney U p = {}\nCohen's d (B vs A) = {:.3}\nA12 (B over A) = {:.3}",
            p(&st.wilcoxon),
            st.pairs,
            p(&st.mann_whitney),
            st.cohens_d,
            st.a12
        );
        let says = match st.verdict {
            Verdict::Better => "B is significantly BETTER than A (p < 0.05, |d| >= 0.5)",
            Verdict::Worse => "B is significantly WORSE than A (p < 0.05, |d| >= 0.5)",
            Verdict::NotSignificant => {
                "not significantly different (needs p < 0.05 and |d| >= 0.5; this does not show \
                 that they are equivalent)"
            }
        };
        println!("\nverdict: {says}");
        if let Some(m) = args.margin {
            println!("{}", equivalence_line(m, cmp.equivalence.as_ref()));
        }
    }
    Ok(if matches!(st.verdict, Verdict::Better) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// What the TOST within `margin` showed, in a line.
fn equivalence_line(margin: f64, e: Option<&stats::Equivalence>) -> String {
    match e {
        Some(e) if e.equivalent => format!(
            "equivalence: B is EQUIVALENT to A within ±{margin} (TOST p = {:.4}, {})",
            e.p_value, e.method
        ),
        Some(e) => format!(
            "equivalence: not shown within ±{margin} (TOST p = {:.4} >= 0.05: lower {:.4}, \
             upper {:.4}; more runs or a wider margin may show it)",
            e.p_value, e.p_lower, e.p_upper
        ),
        None => format!("equivalence: not tested within ±{margin} (no run finished on both sides)"),
    }
}
