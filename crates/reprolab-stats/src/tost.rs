//! Equivalence within a margin the user sets: two one-sided tests (TOST, Schuirmann 1987) on
//! runs paired by seed, each a one-sided Wilcoxon signed-rank test. "Not significantly
//! different" ([`crate::Verdict::NotSignificant`]) only says that no difference was shown; this
//! shows that the difference B − A lies within ±margin: both "B − A ≤ −margin" and
//! "B − A ≥ +margin" are rejected at [`crate::ALPHA`].

use serde::Serialize;

use crate::wilcoxon::{round_difference, wilcoxon_one_sided};

/// The result of a TOST.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Equivalence {
    /// ± this, in the metric's units.
    pub margin: f64,
    /// One-sided p of "B − A > −margin" (its null: B lower by the margin or more).
    pub p_lower: f64,
    /// One-sided p of "B − A < +margin" (its null: B higher by the margin or more).
    pub p_upper: f64,
    /// The larger of the two: the TOST's p-value.
    pub p_value: f64,
    /// `"exact"` or `"normal"` (as the Wilcoxon tests were computed).
    pub method: &'static str,
    /// Both nulls rejected: `p_value < ALPHA`.
    pub equivalent: bool,
}

/// TOST of the paired differences `diffs` (B − A, e.g. [`crate::rounded_differences`]) with
/// margin `margin` (> 0). `None` without differences or with a margin that is not a positive
/// number.
pub fn tost(diffs: &[f64], margin: f64) -> Option<Equivalence> {
    if diffs.is_empty() || !(margin.is_finite() && margin > 0.0) {
        return None;
    }
    // Rounded as the differences are: 0.01 shifted by a margin of 0.01 is exactly 0.
    let shifted =
        |by: f64| -> Vec<f64> { diffs.iter().map(|d| round_difference(d + by)).collect() };
    // A difference exactly on the margin is dropped by the test (as a zero difference), so it
    // never counts as inside it.
    let lower = wilcoxon_one_sided(&shifted(margin), true);
    let upper = wilcoxon_one_sided(&shifted(-margin), false);
    let p = |t: &Option<crate::TestResult>| t.as_ref().map_or(1.0, |t| t.p_value);
    let (p_lower, p_upper) = (p(&lower), p(&upper));
    let p_value = p_lower.max(p_upper);
    let method = [lower, upper]
        .iter()
        .flatten()
        .map(|t| t.method)
        .find(|m| *m == "normal")
        .unwrap_or("exact");
    Some(Equivalence {
        margin,
        p_lower,
        p_upper,
        p_value,
        method,
        equivalent: p_value < crate::ALPHA,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identical_runs_are_equivalent_within_any_margin_with_enough_pairs() {
        // All six differences zero: each one-sided test gives 1/2^6.
        let e = tost(&[0.0; 6], 0.01).unwrap();
        assert_eq!((e.p_lower, e.p_upper), (1.0 / 64.0, 1.0 / 64.0));
        assert!(e.equivalent);
        // Four pairs cannot show anything at 5%: 1/16 > 0.05.
        assert!(!tost(&[0.0; 4], 0.01).unwrap().equivalent);
    }

    #[test]
    fn a_shift_beyond_the_margin_is_not_equivalent() {
        let diffs = [0.020, 0.030, 0.025, 0.028, 0.022, 0.031, 0.027, 0.024];
        let narrow = tost(&diffs, 0.01).unwrap();
        assert!(!narrow.equivalent, "{narrow:?}");
        assert_eq!(narrow.p_lower, 1.0 / 256.0, "far above -margin");
        assert_eq!(narrow.p_upper, 1.0, "every difference above +margin");
        let wide = tost(&diffs, 0.05).unwrap();
        assert!(wide.equivalent, "{wide:?}");
    }

    #[test]
    fn one_sided_p_values_match_scipy() {
        // scipy.stats.wilcoxon([0.3, -0.1, 0.5, 0.2, 0.4], alternative="greater").pvalue
        // == 0.0625; alternative="less": 0.96875
        let d = [0.3, -0.1, 0.5, 0.2, 0.4];
        let g = wilcoxon_one_sided(&d, true).unwrap();
        let l = wilcoxon_one_sided(&d, false).unwrap();
        assert_eq!((g.p_value, l.p_value), (0.0625, 0.96875));
        assert_eq!(g.statistic, 14.0);
    }

    #[test]
    fn bad_margins_and_no_pairs_give_nothing() {
        assert!(tost(&[], 0.1).is_none());
        assert!(tost(&[0.1], 0.0).is_none());
        assert!(tost(&[0.1], f64::NAN).is_none());
    }
}
