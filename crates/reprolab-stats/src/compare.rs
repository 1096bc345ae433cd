//! Comparing candidate B against baseline A over repeated trainings: Wilcoxon signed-rank on
//! the runs paired by seed, Mann–Whitney U, Cohen's d and A12 over all finished runs, and the
//! study's verdict.

use serde::Serialize;

use crate::{Equivalence, Goal, TestResult, Verdict};

/// The statistics of B against A.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// Seeds on which both finished.
    pub pairs: usize,
    pub wilcoxon: Option<TestResult>,
    pub mann_whitney: Option<TestResult>,
    /// Cohen's d of B relative to A (positive: B higher).
    pub cohens_d: f64,
    /// A12 of B over A: probability that a run of B scores higher than a run of A.
    pub a12: f64,
    pub verdict: Verdict,
}

/// Compares B with A: `paired_a[i]` and `paired_b[i]` are the metrics of the same seed (runs
/// that finished on both sides); `all_a` and `all_b` every finished run of each. Fewer than two
/// pairs, or all paired differences zero, are equivalent.
pub fn compare(
    paired_a: &[f64],
    paired_b: &[f64],
    all_a: &[f64],
    all_b: &[f64],
    goal: Goal,
) -> Comparison {
    let diffs = crate::rounded_differences(paired_b, paired_a);
    let wilcoxon = crate::wilcoxon_signed_rank(&diffs, &vec![0.0; diffs.len()]);
    let d = crate::cohens_d(all_b, all_a);
    // All paired differences zero: nothing distinguishes the two.
    let p = wilcoxon.as_ref().map_or(1.0, |t| t.p_value);
    Comparison {
        pairs: paired_a.len(),
        mann_whitney: crate::mann_whitney_u(all_b, all_a),
        a12: crate::a12(all_b, all_a),
        cohens_d: d,
        verdict: if paired_a.len() < 2 {
            Verdict::NotSignificant
        } else {
            crate::verdict(p, d, goal)
        },
        wilcoxon,
    }
}

/// Compares B with A from their runs seed by seed (`a[i]` and `b[i]` the same seed; `None`: that
/// run did not finish): [`compare`] on the seeds both finished and all finished runs; with
/// `margin`, also the TOST of the paired differences within it (`None` without pairs).
pub fn compare_by_seed(
    a: &[Option<f64>],
    b: &[Option<f64>],
    goal: Goal,
    margin: Option<f64>,
) -> (Comparison, Option<Equivalence>) {
    let (paired_a, paired_b): (Vec<f64>, Vec<f64>) = a
        .iter()
        .zip(b)
        .filter_map(|(x, y)| Some(((*x)?, (*y)?)))
        .unzip();
    let all = |xs: &[Option<f64>]| xs.iter().flatten().copied().collect::<Vec<f64>>();
    let comparison = compare(&paired_a, &paired_b, &all(a), &all(b), goal);
    let equivalence =
        margin.and_then(|m| crate::tost(&crate::rounded_differences(&paired_b, &paired_a), m));
    (comparison, equivalence)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clearly_higher_b_is_better_for_max_and_worse_for_min() {
        let a = [0.50, 0.52, 0.49, 0.51, 0.50, 0.53, 0.48, 0.50];
        let b = [0.90, 0.91, 0.89, 0.92, 0.90, 0.93, 0.88, 0.91];
        let c = compare(&a, &b, &a, &b, Goal::Max);
        assert_eq!((c.pairs, c.verdict), (8, Verdict::Better));
        assert!(c.wilcoxon.unwrap().p_value < 0.05);
        assert!(c.cohens_d > 0.5);
        assert_eq!(c.a12, 1.0);
        assert_eq!(compare(&a, &b, &a, &b, Goal::Min).verdict, Verdict::Worse);
    }

    #[test]
    fn identical_or_too_few_pairs_are_equivalent() {
        let a = [0.5, 0.6, 0.7];
        let c = compare(&a, &a, &a, &a, Goal::Max);
        assert!(c.wilcoxon.is_none());
        assert_eq!(c.verdict, Verdict::NotSignificant);
        let c = compare(
            &[0.1],
            &[0.9],
            &[0.1, 0.1, 0.2],
            &[0.9, 0.9, 0.8],
            Goal::Max,
        );
        assert_eq!((c.pairs, c.verdict), (1, Verdict::NotSignificant));
    }

    #[test]
    fn by_seed_pairs_only_the_seeds_both_finished_and_keeps_every_finished_run() {
        let a = [Some(0.5), None, Some(0.52), Some(0.49), Some(0.51)];
        let b = [Some(0.9), Some(0.95), None, Some(0.89), Some(0.92)];
        let (c, e) = compare_by_seed(&a, &b, Goal::Max, None);
        let expected = compare(
            &[0.5, 0.49, 0.51],
            &[0.9, 0.89, 0.92],
            &[0.5, 0.52, 0.49, 0.51],
            &[0.9, 0.95, 0.89, 0.92],
            Goal::Max,
        );
        assert_eq!(c.pairs, 3);
        assert_eq!((c.cohens_d, c.a12), (expected.cohens_d, expected.a12));
        assert_eq!(c.verdict, expected.verdict);
        assert!(e.is_none());
        let (_, e) = compare_by_seed(&a, &a, Goal::Max, Some(0.01));
        let tost = crate::tost(&[0.0; 4], 0.01);
        assert_eq!(e.map(|e| e.p_value), tost.map(|t| t.p_value));
        let (c, e) = compare_by_seed(&[None, Some(0.1)], &[Some(0.2), None], Goal::Max, Some(0.1));
        assert_eq!(c.pairs, 0);
        assert!(e.is_none(), "no pairs, no equivalence");
    }
}
