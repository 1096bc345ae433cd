//! Statistical validation of a patch on the HOLDOUT split (the study's §3): `runs` retrainings
//! (seeds `0..runs`) of the faulty config, the patch and, when the subject has one, the
//! ground-truth fix; a paired Wilcoxon test and Cohen's d of patch against faulty; the
//! improvement rate, patch complexity and asymmetric Jaccard.

use reprolab_core::{Config, FaultType, Split, Subject};
use reprolab_stats::{
    ALPHA, MIN_EFFECT, Verdict, cohens_d, rounded_differences, summarize, verdict,
    wilcoxon_signed_rank,
};
use serde::{Deserialize, Serialize};

use reprolab_core::fnum;
use reprolab_search::Objective;
use reprolab_search::join::join_all;
use reprolab_search::space::apply_patch;

use crate::metrics::{asymmetric_jaccard, changed_types, complexity, gt_types, ir, patch_diff};
use crate::{RepairError, stats_goal};

/// One config's retrainings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Group {
    /// Mean over the finished runs (NaN when none finished).
    #[serde(with = "fnum::float")]
    pub mean: f64,
    /// Standard deviation (ddof 1) over the finished runs: σ of a patch.
    #[serde(with = "fnum::float")]
    pub std: f64,
    /// Finished runs.
    pub n: usize,
    /// Per seed `0..runs`; `null` for a failed training.
    #[serde(with = "fnum::samples")]
    pub samples: Vec<Option<f64>>,
    /// Sum of the trainings' durations, seconds.
    pub duration_s: f64,
}

impl Group {
    /// The group of `(value, duration)` runs, per seed; non-finite values count as failed.
    pub fn from_runs(runs: &[(Option<f64>, f64)]) -> Group {
        let samples: Vec<Option<f64>> = runs
            .iter()
            .map(|(v, _)| v.filter(|x| x.is_finite()))
            .collect();
        let ok: Vec<f64> = samples.iter().flatten().copied().collect();
        let s = summarize(&ok);
        Group {
            mean: s.mean,
            std: s.std,
            n: s.n,
            samples,
            duration_s: runs
                .iter()
                .map(|(_, d)| d.max(0.0))
                .filter(|d| d.is_finite())
                .sum(),
        }
    }

    /// The values of the finished runs.
    pub fn finished(&self) -> Vec<f64> {
        self.samples.iter().flatten().copied().collect()
    }
}

/// A paired comparison of `b` against `a`: `(p, d)` with the Wilcoxon test on the rounded
/// differences of the seeds where both finished (p = 1 without any non-zero difference) and
/// Cohen's d(b, a) over all finished runs (NaN when a side has none).
pub fn compare(a: &Group, b: &Group) -> (f64, f64) {
    let (pa, pb): (Vec<f64>, Vec<f64>) = a
        .samples
        .iter()
        .zip(&b.samples)
        .filter_map(|(x, y)| Some(((*x)?, (*y)?)))
        .unzip();
    let p = if pa.is_empty() {
        1.0
    } else {
        let diffs = rounded_differences(&pb, &pa);
        let zeros = vec![0.0; diffs.len()];
        wilcoxon_signed_rank(&diffs, &zeros).map_or(1.0, |r| r.p_value)
    };
    let (fa, fb) = (a.finished(), b.finished());
    let d = if fa.is_empty() || fb.is_empty() {
        f64::NAN
    } else {
        cohens_d(&fb, &fa)
    };
    (p, d)
}

/// The validation of one patch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Validation {
    /// Retrainings per config (seeds `0..runs`), on the holdout split.
    pub runs: usize,
    pub faulty: Group,
    pub patch: Group,
    /// The ground-truth fix's runs, when the subject has a `[fix]`.
    pub gt: Option<Group>,
    /// Wilcoxon signed-rank p-value, patch vs faulty, paired by seed.
    #[serde(with = "fnum::float")]
    pub p_value: f64,
    /// Cohen's d(patch, faulty), pooled std with ddof 1 (positive = patch higher).
    #[serde(with = "fnum::float")]
    pub cohens_d: f64,
    /// better / worse / equivalent by p < 0.05 and |d| ≥ 0.5 (goal-aware).
    pub verdict: Verdict,
    /// `verdict == better`: p < 0.05, |d| ≥ 0.5 and the patch better.
    pub significant: bool,
    /// Improvement rate (see [`ir`]); `None` without a ground truth or when its mean equals
    /// the faulty mean.
    #[serde(default, with = "fnum::opt_float")]
    pub ir: Option<f64>,
    /// Changed hyperparameters / all hyperparameters.
    pub complexity: f64,
    /// The changed hyperparameters, in config order.
    pub changed: Vec<String>,
    /// The (normalised) fault types of the changed hyperparameters.
    pub patch_types: Vec<FaultType>,
    /// The (normalised) ground-truth fault types.
    pub gt_types: Vec<FaultType>,
    /// Asymmetric Jaccard over fault types; `None` without ground-truth types.
    #[serde(default, with = "fnum::opt_float")]
    pub aj: Option<f64>,
}

/// Validates `patch` (a full config, or just the changed keys: missing keys keep the faulty
/// values) against the subject's faulty config on the holdout split with `runs` retrainings
/// each (seeds `0..runs`), trained concurrently.
pub async fn validate<O: Objective>(
    obj: &O,
    subject: &Subject,
    patch: &Config,
    runs: usize,
) -> Result<Validation, RepairError> {
    if runs < 2 {
        return Err(RepairError::Settings(format!(
            "runs = {runs}: validation needs at least 2 retrainings per config (the study uses 10)"
        )));
    }
    let patch = checked_patch(subject, patch)?;
    let seeds: Vec<u64> = (0..runs as u64).collect();
    let mut configs = vec![&subject.config, &patch];
    if let Some(fix) = &subject.fix {
        configs.push(&fix.config);
    }
    let results = join_all(
        configs
            .iter()
            .map(|c| obj.evaluate(c, &seeds, Split::Holdout, None))
            .collect(),
    )
    .await;
    let mut groups = Vec::new();
    for r in results {
        let r = r.map_err(RepairError::Objective)?;
        if r.len() != runs {
            return Err(RepairError::Objective(format!(
                "the objective returned {} results for {runs} seeds",
                r.len()
            )));
        }
        groups.push(Group::from_runs(&r));
    }
    let gt = if subject.fix.is_some() {
        groups.pop()
    } else {
        None
    };
    let pg = groups.pop().expect("patch group");
    let fg = groups.pop().expect("faulty group");
    let goal = subject.metric.goal;
    let (p_value, d) = compare(&fg, &pg);
    let v = verdict(p_value, d, stats_goal(goal));
    let ir_value = gt.as_ref().and_then(|g| ir(pg.mean, fg.mean, g.mean, goal));
    let patch_ops = changed_types(&subject.space, &subject.config, &patch);
    let gt_ops = gt_types(subject);
    Ok(Validation {
        runs,
        p_value,
        cohens_d: d,
        verdict: v,
        significant: v == Verdict::Better,
        ir: ir_value,
        complexity: complexity(&subject.config, &patch, &subject.space),
        changed: patch_diff(&subject.config, &patch)
            .into_iter()
            .map(|(k, _, _)| k)
            .collect(),
        aj: asymmetric_jaccard(&patch_ops, &gt_ops),
        patch_types: patch_ops.into_iter().collect(),
        gt_types: gt_ops.into_iter().collect(),
        faulty: fg,
        patch: pg,
        gt,
    })
}

/// The patch applied over the faulty config, checked against the space.
pub(crate) fn checked_patch(subject: &Subject, patch: &Config) -> Result<Config, RepairError> {
    let full = apply_patch(&subject.config, patch);
    let issues = subject.space.validate(&full);
    if issues.is_empty() {
        Ok(full)
    } else {
        Err(RepairError::Patch(
            issues
                .iter()
                .map(|i| i.to_string())
                .collect::<Vec<_>>()
                .join("; "),
        ))
    }
}

/// Whether `(p, d)` of `b` against `a` says "significantly better" for the goal.
pub(crate) fn significantly(p: f64, d: f64, goal: reprolab_core::Goal, better: bool) -> bool {
    let sig = p < ALPHA && d.abs() >= MIN_EFFECT;
    let up = goal.sign() * d > 0.0;
    sig && up == better
}
