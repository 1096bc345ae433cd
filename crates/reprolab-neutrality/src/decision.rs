//! The neutrality decision and its sequential (early-stopping) boundary.
//!
//! A neighbour is *neutral* to a reference (its parent, or the known ground truth) when it is
//! not significantly worse. Two tests look at it, and a rejection by either counts:
//!
//! * the study's rule (its footnote 2): DeepCrime's GLM test, p < 0.05, with |Cohen's d| ≥ 0.5
//!   in the worse direction;
//! * its rank counterpart: Mann–Whitney U, p < 0.05, with Vargha–Delaney A12 ≥ 0.64 (the
//!   "medium" effect, as d = 0.5 is) in the worse direction.
//!
//! The rank test is there because trainings diverge: on D7, lr 0.316 gives a mean absolute
//! error between 1e21 and 1e24 in every one of 10 runs, against 0.12 for the fix, yet the GLM
//! (a z-test whose variance that spread inflates) gives p = 0.11 — "equivalent". Ranks see ten
//! worse runs out of ten. Both tests are unpaired, so a neighbour with `k` runs so far can be
//! compared with a reference that has all of its runs (a paired exact Wilcoxon test could not
//! be significant at all below 6 pairs). Claims are made only when both tests agree: a
//! neighbour is significantly *better* than the ground truth only when both say so. Erring
//! this way keeps doubtful configs out of the alternative ground truths, which the benchmarks
//! then score against.
//!
//! A training that fails (NaN, exception, timeout) on a seed where the reference's training
//! finished is a regression in itself: the neighbour is then not neutral, whatever its other
//! runs say.
//!
//! Early stopping (Haybittle–Peto): after an interim stage of `k < runs` trainings the
//! neighbour is dropped only when it is *clearly* worse than both its parent and the ground
//! truth: a failure regression, or a test at p < [`EARLY_ALPHA`] (0.001) with a large effect
//! (|d| ≥ [`EARLY_EFFECT`] = 1.0, twice the final threshold; or A12 ≥
//! [`EARLY_RANK_EFFECT`] = 0.71) in the worse direction. Such a strict interim boundary spends
//! almost none of the final tests' 5%, so the decision after all `runs` trainings keeps its
//! nominal level and early stops do not add false "not neutral" answers; and it requires both
//! references, so a neighbour that could still be an alternative ground truth (worse than a
//! parent that beats the ground truth) is never dropped early.

use reprolab_core::Goal;
use reprolab_stats::{ALPHA, MIN_EFFECT, Verdict, a12, cohens_d, glm_test, mann_whitney_u};
use serde::{Deserialize, Serialize};

use reprolab_core::fnum;
use reprolab_repair::Group;

/// Interim significance level of the early-stopping boundary.
pub const EARLY_ALPHA: f64 = 0.001;
/// Interim effect size (|Cohen's d|, worse direction) of the early-stopping boundary.
pub const EARLY_EFFECT: f64 = 1.0;
/// Vargha–Delaney A12 that counts as a (medium) effect, the rank counterpart of d = 0.5.
pub const RANK_EFFECT: f64 = 0.64;
/// Interim A12 (large effect) of the early-stopping boundary.
pub const EARLY_RANK_EFFECT: f64 = 0.71;

/// A neighbour's runs so far against a reference's.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// GLM Wald p-value (1 when the test is undefined: identical constant groups).
    #[serde(with = "fnum::float")]
    pub p: f64,
    /// Cohen's d(neighbour, reference), pooled std with ddof 1 (NaN when a side has no
    /// finished run).
    #[serde(with = "fnum::float")]
    pub d: f64,
    /// Mann–Whitney U p-value (1 when a side has no finished run).
    #[serde(with = "fnum::float")]
    pub p_rank: f64,
    /// Vargha–Delaney A12(neighbour, reference): the chance that a neighbour run scores higher
    /// than a reference run (NaN when a side has no finished run).
    #[serde(with = "fnum::float")]
    pub a12: f64,
    /// Worse when either test says significantly worse; better when both say significantly
    /// better; otherwise equivalent.
    pub verdict: Verdict,
    /// Seeds on which the neighbour failed and the reference finished.
    pub failures: usize,
}

impl Comparison {
    /// Compares the neighbour's runs (seeds `0..k`) with the reference's (seeds `0..runs`,
    /// `k ≤ runs`).
    pub fn of(reference: &Group, neighbour: &Group, goal: Goal) -> Comparison {
        let failures = neighbour
            .samples
            .iter()
            .zip(&reference.samples)
            .filter(|(n, r)| n.is_none() && r.is_some())
            .count();
        let (r, n) = (reference.finished(), neighbour.finished());
        let p = glm_test(&r, &n).map_or(1.0, |t| t.p_value);
        let p_rank = mann_whitney_u(&n, &r).map_or(1.0, |t| t.p_value);
        let (d, a) = if r.is_empty() || n.is_empty() {
            (f64::NAN, f64::NAN)
        } else {
            (cohens_d(&n, &r), a12(&n, &r))
        };
        // Effects oriented so that positive / above 0.5 means better for the goal.
        let d_up = goal.sign() * d;
        let a_up = if goal == Goal::Max { a } else { 1.0 - a };
        let glm = |up: bool| p < ALPHA && d_up.abs() >= MIN_EFFECT && (d_up > 0.0) == up;
        let rank = |up: bool| p_rank < ALPHA && (if up { a_up } else { 1.0 - a_up }) >= RANK_EFFECT;
        let verdict = if glm(false) || rank(false) {
            Verdict::Worse
        } else if glm(true) && rank(true) {
            Verdict::Better
        } else {
            Verdict::NotSignificant
        };
        Comparison {
            p,
            d,
            p_rank,
            a12: a,
            verdict,
            failures,
        }
    }

    /// Significantly worse (or failing where the reference does not): not neutral.
    pub fn worse(&self) -> bool {
        self.failures > 0 || self.verdict == Verdict::Worse
    }

    /// Past the interim boundary: a failure regression, or p < [`EARLY_ALPHA`] with a large
    /// effect in the worse direction, by either test.
    pub fn clearly_worse(&self, goal: Goal) -> bool {
        let a_down = if goal == Goal::Max {
            1.0 - self.a12
        } else {
            self.a12
        };
        self.failures > 0
            || (self.p < EARLY_ALPHA && goal.sign() * self.d <= -EARLY_EFFECT)
            || (self.p_rank < EARLY_ALPHA && a_down >= EARLY_RANK_EFFECT)
    }
}

/// What the BFS decided about one neighbour.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    pub vs_parent: Comparison,
    pub vs_gt: Comparison,
    /// Not significantly worse than its parent: a node of the neutrality graph.
    pub neutral: bool,
    /// Not significantly worse than the known ground truth: an alternative ground truth.
    pub alternative: bool,
    /// Significantly better than the known ground truth (the study's blue nodes).
    pub better_than_gt: bool,
    /// Trainings it took (fewer than the runs when stopped early).
    pub runs: usize,
    /// Stopped at an interim stage by the early-stopping boundary.
    pub early: bool,
}

/// The decision on a neighbour's runs so far.
pub fn judge(parent: &Group, gt: &Group, neighbour: &Group, goal: Goal, early: bool) -> Decision {
    let vs_parent = Comparison::of(parent, neighbour, goal);
    let vs_gt = Comparison::of(gt, neighbour, goal);
    Decision {
        neutral: !vs_parent.worse(),
        alternative: !vs_gt.worse(),
        better_than_gt: vs_gt.failures == 0 && vs_gt.verdict == Verdict::Better,
        runs: neighbour.samples.len(),
        early,
        vs_parent,
        vs_gt,
    }
}

/// Whether an interim stage may stop: clearly worse than both the parent and the ground truth.
pub fn stop_early(parent: &Group, gt: &Group, neighbour: &Group, goal: Goal) -> bool {
    Comparison::of(parent, neighbour, goal).clearly_worse(goal)
        && Comparison::of(gt, neighbour, goal).clearly_worse(goal)
}

/// The cumulative run counts at which a neighbour is looked at: about 30% and 60% of `runs`
/// (at least 3), then `runs`. 10 runs: 3, 6, 10. Without sequential testing: `runs` only.
pub fn stages(runs: usize, sequential: bool) -> Vec<usize> {
    let mut out = Vec::new();
    if sequential {
        for frac in [0.3, 0.6] {
            let k = ((runs as f64 * frac).ceil() as usize).max(3);
            if k < runs && out.last() != Some(&k) {
                out.push(k);
            }
        }
    }
    out.push(runs);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(samples: &[Option<f64>]) -> Group {
        let runs: Vec<(Option<f64>, f64)> = samples.iter().map(|s| (*s, 1.0)).collect();
        Group::from_runs(&runs)
    }

    fn vals(xs: &[f64]) -> Group {
        group(&xs.iter().map(|x| Some(*x)).collect::<Vec<_>>())
    }

    const PARENT: [f64; 10] = [0.95, 0.94, 0.96, 0.95, 0.93, 0.96, 0.95, 0.94, 0.95, 0.96];

    #[test]
    fn stages_scale_with_runs() {
        assert_eq!(stages(10, true), vec![3, 6, 10]);
        assert_eq!(stages(20, true), vec![6, 12, 20]);
        assert_eq!(stages(4, true), vec![3, 4]);
        assert_eq!(stages(3, true), vec![3]);
        assert_eq!(stages(10, false), vec![10]);
    }

    #[test]
    fn equivalent_and_better_neighbours_are_neutral() {
        let p = vals(&PARENT);
        // Same distribution, shuffled: equivalent.
        let same = vals(&[0.95, 0.96, 0.94, 0.95, 0.96, 0.93, 0.95, 0.95, 0.94, 0.96]);
        let d = judge(&p, &p, &same, Goal::Max, false);
        assert!(d.neutral && d.alternative && !d.better_than_gt, "{d:?}");
        assert_eq!(d.vs_parent.verdict, Verdict::NotSignificant);
        // Clearly better: neutral, an alternative, and significantly better than the GT.
        let better = vals(&[0.98, 0.97, 0.99, 0.98, 0.97, 0.98, 0.99, 0.97, 0.98, 0.98]);
        let d = judge(&p, &p, &better, Goal::Max, false);
        assert!(d.neutral && d.alternative && d.better_than_gt, "{d:?}");
        // For a loss (goal min) the same numbers read the other way round.
        let d = judge(&p, &p, &better, Goal::Min, false);
        assert!(!d.neutral && !d.alternative, "{d:?}");
    }

    #[test]
    fn significance_needs_both_p_and_effect() {
        let p = vals(&PARENT);
        // Slightly lower mean, well within the noise: not significant.
        let lower = vals(&[0.95, 0.94, 0.95, 0.94, 0.93, 0.96, 0.94, 0.94, 0.95, 0.95]);
        let d = judge(&p, &p, &lower, Goal::Max, false);
        assert!(d.vs_parent.p >= 0.05 || d.vs_parent.d.abs() < 0.5, "{d:?}");
        assert!(d.neutral);
        // Clearly lower: significantly worse.
        let worse = vals(&[0.90, 0.91, 0.89, 0.90, 0.92, 0.90, 0.91, 0.89, 0.90, 0.91]);
        let d = judge(&p, &p, &worse, Goal::Max, false);
        assert!(d.vs_parent.p < 0.05 && d.vs_parent.d <= -0.5, "{d:?}");
        assert!(!d.neutral && !d.alternative);
    }

    #[test]
    fn a_neighbour_can_be_an_alternative_without_being_neutral_to_a_better_parent() {
        let gt = vals(&PARENT);
        let parent = vals(&[0.99, 0.98, 0.99, 0.99, 0.98, 0.99, 0.98, 0.99, 0.99, 0.98]);
        let n = vals(&PARENT);
        let d = judge(&parent, &gt, &n, Goal::Max, false);
        assert!(!d.neutral && d.alternative, "{d:?}");
        // ... and so it is never stopped early even when far below its parent.
        assert!(!stop_early(&parent, &gt, &vals(&PARENT[..3]), Goal::Max));
    }

    #[test]
    fn diverged_trainings_are_worse_even_when_the_glm_misses_them() {
        // D7, lr 0.316: every run's MAE between 1e21 and 1e24; the fix's about 0.12.
        let fix = vals(&[
            0.12, 0.10, 0.15, 0.11, 0.13, 0.09, 0.125, 0.14, 0.115, 0.105,
        ]);
        let diverged = vals(&[
            7.4e21, 9.5e23, 6.0e22, 1.5e24, 3.7e22, 1.9e22, 9.3e20, 1.9e22, 1.8e22, 1.7e22,
        ]);
        let c = Comparison::of(&fix, &diverged, Goal::Min);
        assert!(c.p > 0.05, "the GLM alone calls it equivalent: {c:?}");
        assert!(c.p_rank < 0.001 && c.a12 == 1.0, "{c:?}");
        assert_eq!(c.verdict, Verdict::Worse);
        let d = judge(&fix, &fix, &diverged, Goal::Min, false);
        assert!(!d.neutral && !d.alternative);
        // Six diverged runs are already past the interim boundary (exact U without ties:
        // p = 2/8008); three are not (the smallest exact p with 3 against 10 runs is 2/286).
        assert!(stop_early(
            &fix,
            &fix,
            &vals(&[7.4e21, 9.5e23, 6.0e22, 1.5e24, 3.7e22, 1.9e22]),
            Goal::Min
        ));
        assert!(!stop_early(
            &fix,
            &fix,
            &vals(&[7.4e21, 9.5e23, 6.0e22]),
            Goal::Min
        ));
    }

    #[test]
    fn better_needs_both_tests() {
        let p = vals(&PARENT);
        // One much higher run lifts the mean (GLM and d say better) but ranks do not.
        let one_high = vals(&[0.95, 0.94, 0.96, 0.95, 0.93, 0.96, 0.95, 0.94, 0.95, 9.0]);
        let c = Comparison::of(&p, &one_high, Goal::Max);
        assert_eq!(c.verdict, Verdict::NotSignificant, "{c:?}");
    }

    #[test]
    fn a_failure_where_the_reference_finished_is_a_regression() {
        let p = vals(&PARENT);
        let mut s: Vec<Option<f64>> = PARENT.iter().map(|x| Some(*x)).collect();
        s[4] = None;
        let d = judge(&p, &p, &group(&s), Goal::Max, false);
        assert_eq!(d.vs_parent.failures, 1);
        assert!(!d.neutral && !d.alternative);
        assert!(stop_early(&p, &p, &group(&s[..5]), Goal::Max));
        // A reference that failed on the same seed does not count it.
        let mut ps: Vec<Option<f64>> = PARENT.iter().map(|x| Some(*x)).collect();
        ps[4] = None;
        let d = judge(&group(&ps), &group(&ps), &group(&s), Goal::Max, false);
        assert_eq!(d.vs_parent.failures, 0);
        assert!(d.neutral);
        // Every run failed: worse than a reference that finished.
        let all_failed = group(&[None, None, None]);
        assert!(stop_early(&p, &p, &all_failed, Goal::Max));
    }

    #[test]
    fn the_early_boundary_stops_only_clear_cases() {
        let p = vals(&PARENT);
        // Collapsed to a constant far below: stops at 3 runs.
        let collapsed = vals(&[0.625, 0.625, 0.625]);
        assert!(stop_early(&p, &p, &collapsed, Goal::Max));
        // Moderately worse (d ≈ -1.5 against the parent): significant with 10 runs, but not
        // past the interim boundary with 3; the full decision is left to the last stage.
        let moderate = [
            0.935, 0.94, 0.925, 0.935, 0.93, 0.94, 0.925, 0.935, 0.93, 0.94,
        ];
        let three = vals(&moderate[..3]);
        let c = Comparison::of(&p, &three, Goal::Max);
        assert!(c.p > EARLY_ALPHA, "{c:?}");
        assert!(!stop_early(&p, &p, &three, Goal::Max));
        let full = judge(&p, &p, &vals(&moderate), Goal::Max, false);
        assert!(!full.neutral, "{full:?}");
        // Equivalent runs never stop.
        assert!(!stop_early(&p, &p, &vals(&PARENT[..3]), Goal::Max));
        // For a loss, "clearly worse" is clearly higher.
        let losses = vals(&[0.10, 0.11, 0.12, 0.10, 0.11, 0.12, 0.10, 0.11, 0.12, 0.11]);
        assert!(stop_early(
            &losses,
            &losses,
            &vals(&[0.9, 0.95, 1.0]),
            Goal::Min
        ));
        assert!(!stop_early(
            &losses,
            &losses,
            &vals(&[0.01, 0.02, 0.01]),
            Goal::Min
        ));
    }

    #[test]
    fn an_early_stop_is_always_a_rejection_by_the_final_rule_too() {
        // Whatever crosses the interim boundary is also "significantly worse" by the study's
        // rule on the same runs, so an early stop never contradicts the rule it shortcuts.
        let p = vals(&PARENT);
        for shift in [0.02, 0.05, 0.1, 0.3] {
            let xs: Vec<f64> = PARENT[..3].iter().map(|x| x - shift).collect();
            let n = vals(&xs);
            if stop_early(&p, &p, &n, Goal::Max) {
                let d = judge(&p, &p, &n, Goal::Max, true);
                assert!(!d.neutral && !d.alternative, "shift {shift}: {d:?}");
            }
        }
        // The interim boundary is stricter than the final rule on both counts.
        const { assert!(reprolab_stats::ALPHA > EARLY_ALPHA) };
        const { assert!(reprolab_stats::MIN_EFFECT < EARLY_EFFECT) };
    }
}
