//! The study's decision rule: Better / Worse / not significantly different. (The study says
//! "equivalent" for the last; it only means that no difference was shown. An equivalence
//! within a margin is shown by [`crate::tost`].)
//!
//! A difference counts only if it is both statistically significant
//! (`p < ALPHA`) and practically relevant (`|d| >= MIN_EFFECT`, a "medium"
//! Cohen's d). Requiring both guards against the two classic failures of
//! comparing stochastic trainings: declaring noise an improvement (small n),
//! and declaring a negligible shift an improvement (large n).

use serde::{Deserialize, Serialize};

/// Significance level of the study.
pub const ALPHA: f64 = 0.05;
/// Smallest |Cohen's d| that counts as a real effect ("medium").
pub const MIN_EFFECT: f64 = 0.5;

/// Whether larger metric values are better (accuracy) or smaller (loss).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Goal {
    /// Larger is better.
    Max,
    /// Smaller is better.
    Min,
}

/// Outcome of comparing candidate B against baseline A.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Significant, relevant change in the goal direction.
    Better,
    /// Significant, relevant change against the goal direction.
    Worse,
    /// Not significant or not relevant: no difference shown (which is not a shown
    /// equivalence). Files written before the rename say `equivalent`.
    #[serde(rename = "not_significant", alias = "equivalent")]
    NotSignificant,
}

/// Apply the rule to a test's `p_value` and `d = cohens_d(b, a)` (effect of
/// B relative to A).
///
/// Significant iff `p < ALPHA` and `|d| >= MIN_EFFECT`. Then `Better` if `d`
/// points in the goal direction (`d > 0` for [`Goal::Max`], `d < 0` for
/// [`Goal::Min`]), else `Worse`. A NaN p-value or d is never significant.
pub fn verdict(p_value: f64, d: f64, goal: Goal) -> Verdict {
    let significant = p_value < ALPHA && d.abs() >= MIN_EFFECT;
    if !significant {
        return Verdict::NotSignificant;
    }
    let improves = match goal {
        Goal::Max => d > 0.0,
        Goal::Min => d < 0.0,
    };
    if improves {
        Verdict::Better
    } else {
        Verdict::Worse
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Verdict::*;

    #[test]
    fn truth_table() {
        let cases = [
            // (p, d, goal, expected)
            (0.01, 0.8, Goal::Max, Better),
            (0.01, -0.8, Goal::Max, Worse),
            (0.01, 0.8, Goal::Min, Worse),
            (0.01, -0.8, Goal::Min, Better),
            // boundaries: p must be strictly below ALPHA, |d| may equal MIN_EFFECT
            (0.05, 0.8, Goal::Max, NotSignificant),
            (0.049_999, 0.5, Goal::Max, Better),
            (0.049_999, -0.5, Goal::Min, Better),
            (0.049_999, 0.499_999, Goal::Max, NotSignificant),
            // significant but tiny effect
            (1e-9, 0.2, Goal::Max, NotSignificant),
            // large effect but not significant
            (0.2, 3.0, Goal::Max, NotSignificant),
            (1.0, -3.0, Goal::Min, NotSignificant),
            // deterministic runs: d = ±inf with p = 0
            (0.0, f64::INFINITY, Goal::Max, Better),
            (0.0, f64::NEG_INFINITY, Goal::Max, Worse),
            // undefined inputs are never significant
            (f64::NAN, 1.0, Goal::Max, NotSignificant),
            (0.01, f64::NAN, Goal::Max, NotSignificant),
        ];
        for (p, d, goal, want) in cases {
            assert_eq!(verdict(p, d, goal), want, "p={p} d={d} goal={goal:?}");
        }
    }

    #[test]
    fn serializes_lowercase() {
        assert_eq!(serde_json::to_string(&Better).unwrap(), "\"better\"");
        assert_eq!(serde_json::to_string(&Worse).unwrap(), "\"worse\"");
        assert_eq!(
            serde_json::to_string(&NotSignificant).unwrap(),
            "\"not_significant\""
        );
        let old: Verdict = serde_json::from_str("\"equivalent\"").unwrap();
        assert_eq!(old, NotSignificant);
        assert_eq!(serde_json::to_string(&Goal::Min).unwrap(), "\"min\"");
        let g: Goal = serde_json::from_str("\"max\"").unwrap();
        assert_eq!(g, Goal::Max);
    }
}
