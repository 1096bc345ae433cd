//! Descriptive statistics of one group of runs.
//!
//! A report always shows the spread of the runs next to any test result:
//! a p-value alone hides whether a difference is 0.1 or 10 points. The CI of
//! the mean is the classic t interval because groups are small (n ≈ 10–20),
//! where a normal interval would be too narrow. Near the edge of what a metric can
//! take (an accuracy of 0.99 ± 0.02) the t interval passes it; [`Summary::within`]
//! cuts it there, since no mean of such runs can lie beyond.

use serde::Serialize;

use crate::dist::t_quantile;

/// Summary of one group of runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// Number of values.
    pub n: usize,
    /// Arithmetic mean (NaN when `n == 0`).
    pub mean: f64,
    /// Sample standard deviation (ddof = 1); 0 when `n < 2`.
    pub std: f64,
    /// Smallest value (NaN when `n == 0`).
    pub min: f64,
    /// Largest value (NaN when `n == 0`).
    pub max: f64,
    /// Median, average of the two middle values for even `n`.
    pub median: f64,
    /// 95 % t-based confidence interval of the mean; `(mean, mean)` when `n < 2`.
    pub ci95: (f64, f64),
}

impl Summary {
    /// The summary with its CI cut to `[lo, hi]`, the values the metric can take.
    pub fn within(mut self, (lo, hi): (f64, f64)) -> Summary {
        debug_assert!(lo <= hi, "an empty range [{lo}, {hi}]");
        self.ci95 = (self.ci95.0.max(lo).min(hi), self.ci95.1.max(lo).min(hi));
        self
    }
}

/// Arithmetic mean; NaN for an empty slice.
///
/// A constant slice returns its value *exactly*: summing then dividing can be
/// off by an ulp, and that ulp would turn "deterministic training, zero
/// variance" into a spurious, hugely significant t statistic downstream.
pub fn mean(xs: &[f64]) -> f64 {
    match xs.first() {
        None => f64::NAN,
        Some(&first) if xs.iter().all(|&x| x == first) => first,
        Some(_) => xs.iter().sum::<f64>() / xs.len() as f64,
    }
}

/// Sample variance with ddof = 1 (two-pass for accuracy); 0 when `n < 2`.
pub fn variance(xs: &[f64]) -> f64 {
    if xs.len() < 2 {
        return 0.0;
    }
    let m = mean(xs);
    xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (xs.len() - 1) as f64
}

/// Sample standard deviation with ddof = 1; 0 when `n < 2`.
pub fn std_dev(xs: &[f64]) -> f64 {
    variance(xs).sqrt()
}

/// Median (mean of the two middle values for even length); NaN when empty.
pub fn median(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    let mut s = xs.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        0.5 * (s[n / 2 - 1] + s[n / 2])
    }
}

/// Summarise one group of runs (see [`Summary`] for the conventions).
pub fn summarize(xs: &[f64]) -> Summary {
    let n = xs.len();
    let m = mean(xs);
    let sd = std_dev(xs);
    let ci95 = if n < 2 {
        (m, m)
    } else {
        let half = t_quantile(0.975, (n - 1) as f64) * sd / (n as f64).sqrt();
        (m - half, m + half)
    };
    let (min, max) = if n == 0 {
        (f64::NAN, f64::NAN)
    } else {
        xs.iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| {
                (lo.min(x), hi.max(x))
            })
    };
    Summary {
        n,
        mean: m,
        std: sd,
        min,
        max,
        median: median(xs),
        ci95,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    const ACC: [f64; 10] = [
        0.91, 0.93, 0.9333, 0.92, 0.94, 0.9333, 0.95, 0.90, 0.93, 0.92,
    ];

    #[test]
    fn summary_matches_scipy() {
        // python:
        //   x = np.array([0.91,0.93,0.9333,0.92,0.94,0.9333,0.95,0.90,0.93,0.92])
        //   x.mean(), x.std(ddof=1), np.median(x)
        //   scipy.stats.t.interval(0.95, len(x)-1, loc=x.mean(), scale=scipy.stats.sem(x))
        // -> 0.92666, 0.01456870313758608, 0.93, (0.9162381775994913, 0.9370818224005087)
        const MEAN: f64 = 0.92666;
        const STD: f64 = 0.01456870313758608;
        const CI_LO: f64 = 0.9162381775994913;
        const CI_HI: f64 = 0.9370818224005087;
        let s = summarize(&ACC);
        assert_eq!(s.n, 10);
        assert!(close(s.mean, MEAN, 1e-14));
        assert!(close(s.std, STD, 1e-14));
        assert!(close(s.median, 0.93, 1e-15));
        assert_eq!(s.min, 0.90);
        assert_eq!(s.max, 0.95);
        assert!(close(s.ci95.0, CI_LO, 1e-12));
        assert!(close(s.ci95.1, CI_HI, 1e-12));
    }

    #[test]
    fn a_ci_is_cut_to_the_values_a_metric_can_take() {
        // Accuracies near 1: the t interval passes it (scipy: (0.9658, 1.0102)).
        let s = summarize(&[1.0, 0.98, 1.0, 0.96, 1.0]);
        assert!(s.ci95.1 > 1.0, "{:?}", s.ci95);
        let cut = s.clone().within((0.0, 1.0));
        assert_eq!(cut.ci95.1, 1.0);
        assert_eq!(cut.ci95.0, s.ci95.0);
        assert_eq!((cut.mean, cut.std), (s.mean, s.std));
        // An error metric near 0 keeps its interval above 0.
        let e = summarize(&[0.01, 0.2, 0.02, 0.0]).within((0.0, f64::INFINITY));
        assert_eq!(e.ci95.0, 0.0);
        assert!(e.ci95.1 > 0.2);
    }

    #[test]
    fn small_and_empty() {
        let one = summarize(&[0.5]);
        assert_eq!(one.std, 0.0);
        assert_eq!(one.ci95, (0.5, 0.5));
        assert_eq!(one.median, 0.5);
        let none = summarize(&[]);
        assert_eq!(none.n, 0);
        assert!(none.mean.is_nan() && none.min.is_nan() && none.median.is_nan());
        assert_eq!(none.std, 0.0);
    }

    #[test]
    fn median_even_odd() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
    }

    #[test]
    fn constant_group_is_exactly_constant() {
        for n in 1..40 {
            let xs = vec![0.9333; n];
            let s = summarize(&xs);
            assert_eq!(s.mean, 0.9333);
            assert_eq!(s.std, 0.0);
            assert_eq!(s.ci95, (0.9333, 0.9333));
        }
    }
}
