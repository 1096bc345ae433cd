//! Deterministic percentile bootstrap.
//!
//! Gives a confidence interval for any statistic (median accuracy, A12, …)
//! without distributional assumptions. reprolab reports must be reproducible
//! byte for byte, so the resampling uses the project's seeded PRNG
//! ([`SplitMix64`], from `reprolab-rng`) rather than an external crate whose
//! stream could change between versions.

use reprolab_rng::SplitMix64;

/// Percentile bootstrap confidence interval of `stat` over `xs`.
///
/// Draws `resamples` samples of size `xs.len()` with replacement, evaluates
/// `stat` on each, and returns the `(1-confidence)/2` and `(1+confidence)/2`
/// quantiles of those values (linear interpolation, numpy's default).
/// Deterministic given `seed`. Returns `(NaN, NaN)` for empty `xs`, and
/// `(stat(xs), stat(xs))` when `resamples == 0`.
///
/// # Panics
/// If `confidence` is not strictly between 0 and 1.
pub fn bootstrap_ci(
    xs: &[f64],
    stat: impl Fn(&[f64]) -> f64,
    resamples: usize,
    confidence: f64,
    seed: u64,
) -> (f64, f64) {
    assert!(
        confidence > 0.0 && confidence < 1.0,
        "confidence must be in (0, 1), got {confidence}"
    );
    if xs.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    if resamples == 0 {
        let s = stat(xs);
        return (s, s);
    }
    let mut rng = SplitMix64::new(seed);
    let mut buf = vec![0.0; xs.len()];
    let mut stats: Vec<f64> = (0..resamples)
        .map(|_| {
            for slot in buf.iter_mut() {
                *slot = xs[rng.below(xs.len())];
            }
            stat(&buf)
        })
        .collect();
    stats.sort_by(f64::total_cmp);
    let alpha = (1.0 - confidence) / 2.0;
    (quantile(&stats, alpha), quantile(&stats, 1.0 - alpha))
}

/// Quantile of sorted data with linear interpolation (numpy `linear`).
fn quantile(sorted: &[f64], q: f64) -> f64 {
    let pos = q * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = (lo + 1).min(sorted.len() - 1);
    let frac = pos - lo as f64;
    sorted[lo] + (sorted[hi] - sorted[lo]) * frac
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::describe::{mean, median};

    #[test]
    fn quantile_matches_numpy() {
        // python: np.quantile([1,2,3,4], [0.025, 0.5, 0.975]) -> [1.075, 2.5, 3.925]
        let s = [1.0, 2.0, 3.0, 4.0];
        assert!((quantile(&s, 0.025) - 1.075).abs() < 1e-12);
        assert!((quantile(&s, 0.5) - 2.5).abs() < 1e-12);
        assert!((quantile(&s, 0.975) - 3.925).abs() < 1e-12);
    }

    const ACC: [f64; 10] = [
        0.91, 0.93, 0.9333, 0.92, 0.94, 0.9333, 0.95, 0.90, 0.93, 0.92,
    ];

    #[test]
    fn deterministic_given_seed() {
        let a = bootstrap_ci(&ACC, mean, 2000, 0.95, 42);
        let b = bootstrap_ci(&ACC, mean, 2000, 0.95, 42);
        assert_eq!(a, b);
        let c = bootstrap_ci(&ACC, mean, 2000, 0.95, 43);
        assert_ne!(a, c);
        assert!(a.0 < a.1);
        // the interval sits inside the data range and around the mean
        let m = mean(&ACC);
        assert!(a.0 >= 0.90 && a.1 <= 0.95 && a.0 < m && m < a.1);
    }

    #[test]
    fn close_to_t_interval_for_mean() {
        // The t interval of this sample is (0.91624, 0.93708) (see describe.rs);
        // the percentile bootstrap is a bit narrower at n = 10 but close.
        let (lo, hi) = bootstrap_ci(&ACC, mean, 5000, 0.95, 1);
        assert!((lo - 0.91624).abs() < 0.004, "{lo}");
        assert!((hi - 0.93708).abs() < 0.004, "{hi}");
    }

    #[test]
    fn coverage_sanity() {
        // Draw many samples of n = 20 from a known distribution (uniform on
        // [0, 1], mean 0.5) and check the 90 % interval of the mean covers
        // the truth roughly 90 % of the time (percentile bootstrap undercovers
        // slightly at small n).
        let mut rng = SplitMix64::new(2024);
        let trials = 300;
        let mut covered = 0;
        for t in 0..trials {
            let xs: Vec<f64> = (0..20)
                .map(|_| (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64)
                .collect();
            let (lo, hi) = bootstrap_ci(&xs, mean, 400, 0.90, t);
            if lo <= 0.5 && 0.5 <= hi {
                covered += 1;
            }
        }
        let rate = covered as f64 / trials as f64;
        assert!((0.82..=0.96).contains(&rate), "coverage {rate}");
    }

    #[test]
    fn edge_cases() {
        let e = bootstrap_ci(&[], mean, 100, 0.95, 0);
        assert!(e.0.is_nan() && e.1.is_nan());
        assert_eq!(bootstrap_ci(&ACC, median, 0, 0.95, 0), (0.93, 0.93));
        assert_eq!(
            bootstrap_ci(&[0.9333; 7], mean, 100, 0.95, 0),
            (0.9333, 0.9333)
        );
    }

    #[test]
    #[should_panic(expected = "confidence")]
    fn rejects_bad_confidence() {
        bootstrap_ci(&ACC, mean, 10, 1.0, 0);
    }
}
