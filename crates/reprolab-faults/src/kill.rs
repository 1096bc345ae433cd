//! The killing criterion (DeepCrime) and the study's filter of too easy / too hard mutants.

use std::fmt;
use std::str::FromStr;

use reprolab_core::{Goal, Split};
use reprolab_stats::{
    ALPHA, MIN_EFFECT, cohens_d, glm_test, rounded_differences, summarize, wilcoxon_signed_rank,
};
use serde::{Deserialize, Serialize};

/// The statistical test of the killing criterion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KillTest {
    /// DeepCrime's GLM (Wald) test of `metric ~ mutant`: unpaired, uses every finished run.
    #[default]
    Glm,
    /// Paired Wilcoxon signed-rank test over the seeds where both trainings finished.
    Wilcoxon,
}

impl KillTest {
    pub fn as_str(self) -> &'static str {
        match self {
            KillTest::Glm => "glm",
            KillTest::Wilcoxon => "wilcoxon",
        }
    }
}

impl fmt::Display for KillTest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for KillTest {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "glm" => Ok(KillTest::Glm),
            "wilcoxon" => Ok(KillTest::Wilcoxon),
            other => Err(format!(
                "unknown test {other:?}; expected \"glm\" or \"wilcoxon\""
            )),
        }
    }
}

/// The study's filter of killed mutants: too easy (a dramatic drop) and too hard (close to the
/// original despite significance) mutants are dropped.
///
/// Goal `max` (accuracy): kept iff `min_drop <= mean(original) - mean(mutant) <= max_drop`.
/// Goal `min` (loss): kept iff `min_loss_ratio <= mean(mutant) / mean(original) <= max_loss_ratio`
/// (when the original's mean is not positive the ratio means nothing and the mutant is kept).
/// Bounds are inclusive, up to 1e-9 of float noise.
///
/// Provenance of the defaults: `min_drop` 0.10 and the loss ratios 1.5–5 are the study's (its
/// §3.2). `max_drop` 0.80 is reprolab's own: the study states no number for its upper bound, and
/// it kept chance-level mutants (MNIST M2, WCI: 0.11, and M3, ARM: 0.10, against 0.99; its
/// Table 9), which 0.80 would call too easy. DeepCrime itself has no filter.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Filter {
    pub min_drop: f64,
    pub max_drop: f64,
    pub min_loss_ratio: f64,
    pub max_loss_ratio: f64,
}

impl Default for Filter {
    fn default() -> Self {
        Filter {
            min_drop: 0.10,
            max_drop: 0.80,
            min_loss_ratio: 1.5,
            max_loss_ratio: 5.0,
        }
    }
}

const FILTER_EPS: f64 = 1e-9;

impl Filter {
    /// A filter that keeps every killed mutant.
    pub fn none() -> Self {
        Filter {
            min_drop: f64::NEG_INFINITY,
            max_drop: f64::INFINITY,
            min_loss_ratio: f64::NEG_INFINITY,
            max_loss_ratio: f64::INFINITY,
        }
    }

    /// [`Verdict::Killed`], [`Verdict::TooEasy`] or [`Verdict::TooHard`] for a killed mutant.
    pub fn classify(&self, goal: Goal, original_mean: f64, mutant_mean: f64) -> Verdict {
        let (x, lo, hi) = match goal {
            Goal::Max => (original_mean - mutant_mean, self.min_drop, self.max_drop),
            Goal::Min => {
                if original_mean.is_nan() || original_mean <= 0.0 {
                    return Verdict::Killed;
                }
                (
                    mutant_mean / original_mean,
                    self.min_loss_ratio,
                    self.max_loss_ratio,
                )
            }
        };
        if x < lo - FILTER_EPS {
            Verdict::TooHard
        } else if x > hi + FILTER_EPS {
            Verdict::TooEasy
        } else {
            Verdict::Killed
        }
    }
}

/// How mutants are judged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KillSettings {
    /// Trainings (seeds `0..runs`) of the original and of every mutant. Default 20.
    pub runs: usize,
    /// Default [`KillTest::Glm`], as DeepCrime.
    pub test: KillTest,
    /// Significance level. Default 0.05.
    pub alpha: f64,
    /// Smallest Cohen's d (in the worse direction). Default 0.5.
    pub min_effect: f64,
    /// The split whose metric is compared. Default [`Split::Search`].
    pub split: Split,
    pub filter: Filter,
    /// Binary-search refinements of HLR and HNE after a killed bound. Default 3.
    pub search_steps: usize,
}

impl Default for KillSettings {
    fn default() -> Self {
        KillSettings {
            runs: 20,
            test: KillTest::Glm,
            alpha: ALPHA,
            min_effect: MIN_EFFECT,
            split: Split::Search,
            filter: Filter::default(),
            search_steps: 3,
        }
    }
}

/// A kill setting out of its range: `{name} = {value}: {expected}`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{name} = {value}: {expected}")]
pub struct SettingError {
    /// The setting (`runs`, `alpha`, `min_effect`, `search_steps`).
    pub name: &'static str,
    pub value: String,
    /// What it must be, and why.
    pub expected: &'static str,
}

impl KillSettings {
    /// The seeds every config is trained with: `0..runs`.
    pub fn seeds(&self) -> Vec<u64> {
        (0..self.runs as u64).collect()
    }

    /// Checks the settings; `Err` with a message naming the bad setting.
    pub fn validate(&self) -> Result<(), SettingError> {
        let bad = |name, value: &dyn std::fmt::Display, expected| {
            Err(SettingError {
                name,
                value: value.to_string(),
                expected,
            })
        };
        if self.runs < 2 {
            return bad(
                "runs",
                &self.runs,
                "the killing criterion needs at least 2 trainings per config (DeepCrime uses 20)",
            );
        }
        if !(self.alpha > 0.0 && self.alpha < 1.0) {
            return bad("alpha", &self.alpha, "expected a number in (0, 1)");
        }
        if self.min_effect.is_nan() || self.min_effect < 0.0 {
            return bad("min_effect", &self.min_effect, "expected a number >= 0");
        }
        if self.search_steps > 30 {
            return bad("search_steps", &self.search_steps, "expected at most 30");
        }
        Ok(())
    }
}

/// The outcome of the killing criterion for one mutant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KillDecision {
    /// The p-value of the chosen test (1 when it cannot be computed).
    #[serde(with = "reprolab_core::fnum::float")]
    pub p_value: f64,
    /// GLM p-value (`None` with fewer than 3 finished runs in all).
    #[serde(default, with = "reprolab_core::fnum::opt_float")]
    pub p_glm: Option<f64>,
    /// Wilcoxon p-value over the paired finished runs (`None` without any pair).
    #[serde(default, with = "reprolab_core::fnum::opt_float")]
    pub p_wilcoxon: Option<f64>,
    /// Cohen's d(original, mutant), pooled std with ddof 1: positive = mutant lower, i.e. worse
    /// for goal `max` (better for `min`). NaN when the mutant never trains.
    #[serde(with = "reprolab_core::fnum::float")]
    pub cohens_d: f64,
    /// p < alpha and d in the worse direction by at least `min_effect`.
    pub killed: bool,
    #[serde(with = "reprolab_core::fnum::float")]
    pub original_mean: f64,
    #[serde(with = "reprolab_core::fnum::float")]
    pub original_std: f64,
    /// Finished runs of the original.
    pub original_n: usize,
    /// NaN when the mutant never trains.
    #[serde(with = "reprolab_core::fnum::float")]
    pub mutant_mean: f64,
    #[serde(with = "reprolab_core::fnum::float")]
    pub mutant_std: f64,
    /// Finished runs of the mutant.
    pub mutant_n: usize,
    /// Mutant runs that failed (exception, timeout, NaN, …).
    pub mutant_failures: usize,
    /// Why the decision is not a plain test result: `mutant never trains`, `original never
    /// trains`, `too few runs for the … test`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl KillDecision {
    /// Whether every mutant run failed.
    pub fn never_trains(&self) -> bool {
        self.mutant_n == 0
    }
}

fn finished(xs: &[Option<f64>]) -> Vec<f64> {
    xs.iter()
        .filter_map(|v| v.filter(|x| x.is_finite()))
        .collect()
}

/// The killing criterion: killed iff p < alpha (the chosen test) and Cohen's d(original,
/// mutant) is at least `min_effect` in the worse direction (`d >= min_effect` for goal `max`,
/// `d <= -min_effect` for `min`).
///
/// `original[i]` and `mutant[i]` are the metrics of seed `i` (`None`, or a non-finite value,
/// for a failed training). If every mutant run failed the mutant is not killed (note `mutant
/// never trains`; [`verdict`] says [`Verdict::NeverTrains`]). Otherwise the finished runs are
/// used: all of them for the GLM test and Cohen's d, the seeds where both finished for the
/// paired Wilcoxon test (its differences rounded to 12 significant digits so that accuracy ties
/// stay ties).
///
/// Leaving failed runs out is reprolab's extension. DeepCrime (`stats.py`, `is_diff_sts`) needs
/// equal run counts and knows no failed run: a NaN metric makes its Cohen's d NaN, so a mutant
/// with any NaN run is never killed there.
pub fn kill(
    original: &[Option<f64>],
    mutant: &[Option<f64>],
    goal: Goal,
    s: &KillSettings,
) -> KillDecision {
    let orig = finished(original);
    let muts = finished(mutant);
    let so = summarize(&orig);
    let sm = summarize(&muts);
    let mut decision = KillDecision {
        p_value: 1.0,
        p_glm: None,
        p_wilcoxon: None,
        cohens_d: f64::NAN,
        killed: false,
        original_mean: so.mean,
        original_std: so.std,
        original_n: so.n,
        mutant_mean: sm.mean,
        mutant_std: sm.std,
        mutant_n: sm.n,
        mutant_failures: mutant.len() - muts.len(),
        note: None,
    };
    if muts.is_empty() {
        decision.note = Some("mutant never trains".into());
        return decision;
    }
    if orig.is_empty() {
        decision.note = Some("original never trains".into());
        return decision;
    }
    decision.p_glm = if orig.len() + muts.len() >= 3 {
        // None here means every run is equal: no difference at all.
        Some(glm_test(&orig, &muts).map_or(1.0, |r| r.p_value))
    } else {
        None
    };
    let (po, pm): (Vec<f64>, Vec<f64>) = original
        .iter()
        .zip(mutant)
        .filter_map(|(a, b)| match (a, b) {
            (Some(a), Some(b)) if a.is_finite() && b.is_finite() => Some((*a, *b)),
            _ => None,
        })
        .unzip();
    decision.p_wilcoxon = if po.is_empty() {
        None
    } else {
        let diffs = rounded_differences(&po, &pm);
        let zeros = vec![0.0; diffs.len()];
        // None here means every difference is zero.
        Some(wilcoxon_signed_rank(&diffs, &zeros).map_or(1.0, |r| r.p_value))
    };
    let p = match s.test {
        KillTest::Glm => decision.p_glm,
        KillTest::Wilcoxon => decision.p_wilcoxon,
    };
    decision.p_value = match p {
        Some(p) => p,
        None => {
            decision.note = Some(format!("too few runs for the {} test", s.test));
            1.0
        }
    };
    let d = cohens_d(&orig, &muts);
    decision.cohens_d = d;
    let worse = match goal {
        Goal::Max => d >= s.min_effect,
        Goal::Min => d <= -s.min_effect,
    };
    decision.killed = decision.p_value < s.alpha && worse;
    decision
}

/// What became of one mutant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Killed and within the filter: a usable artificial fault.
    Killed,
    /// Not killed (not significant, too small an effect, or better than the original).
    NotKilled,
    /// Killed, but the metric drops too much (easy to notice and repair).
    TooEasy,
    /// Killed, but too close to the original.
    TooHard,
    /// Every training of the mutant failed.
    NeverTrains,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Killed => "killed",
            Verdict::NotKilled => "not_killed",
            Verdict::TooEasy => "too_easy",
            Verdict::TooHard => "too_hard",
            Verdict::NeverTrains => "never_trains",
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The verdict of a decision: `NeverTrains` when every mutant run failed, `NotKilled` when not
/// killed, otherwise the filter's call.
pub fn verdict(decision: &KillDecision, goal: Goal, filter: &Filter) -> Verdict {
    if decision.never_trains() {
        Verdict::NeverTrains
    } else if !decision.killed {
        Verdict::NotKilled
    } else {
        filter.classify(goal, decision.original_mean, decision.mutant_mean)
    }
}
