//! Thin wrappers over statrs distribution functions.
//!
//! Kept in one place so that every test computes tails the same, numerically
//! careful way: two-sided p-values use the survival function of `|stat|`
//! (never `1 - cdf`), which keeps tiny p-values accurate.

use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

fn std_normal() -> Normal {
    Normal::new(0.0, 1.0).expect("standard normal parameters are valid")
}

/// Two-sided p-value of a standard-normal statistic: `2 * P(Z >= |z|)`.
pub(crate) fn normal_two_sided(z: f64) -> f64 {
    (2.0 * std_normal().sf(z.abs())).min(1.0)
}

/// Upper tail `P(Z >= z)` of the standard normal.
pub(crate) fn normal_sf(z: f64) -> f64 {
    std_normal().sf(z)
}

/// Two-sided p-value of a Student-t statistic with `df` degrees of freedom.
///
/// An infinite `t` (zero variance, different means) gives p = 0, like SciPy.
pub(crate) fn t_two_sided(t: f64, df: f64) -> f64 {
    if t.is_infinite() {
        return 0.0;
    }
    let dist = StudentsT::new(0.0, 1.0, df).expect("df must be positive");
    (2.0 * dist.sf(t.abs())).min(1.0)
}

/// Quantile of the Student-t distribution (used for confidence intervals).
pub(crate) fn t_quantile(p: f64, df: f64) -> f64 {
    StudentsT::new(0.0, 1.0, df)
        .expect("df must be positive")
        .inverse_cdf(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normal_two_sided_matches_scipy() {
        // python: 2*scipy.stats.norm.sf(1.959963984540054) -> 0.05
        let p = normal_two_sided(-1.959963984540054);
        assert!((p / 0.05 - 1.0).abs() < 2e-10, "{p:e}");
        // python: 2*scipy.stats.norm.sf(8.0) -> 1.244192114854348e-15
        let p = normal_two_sided(8.0);
        assert!((p / 1.244192114854348e-15 - 1.0).abs() < 1e-8);
    }

    /// statrs' `erfc` is accurate to about 1e-10 relative (not 1e-16 like
    /// SciPy's), uniformly into the far tail; that is ample for p-values, and
    /// the other tests use tolerances consistent with it.
    #[test]
    fn normal_tail_relative_accuracy() {
        // python: [(z, scipy.stats.norm.sf(z)) for z in (1, 1.5, 2.5, 4, 6, 10)]
        let refs = [
            (1.0, 0.15865525393145707),
            (1.5, 0.06680720126885807),
            (2.5, 0.006209665325776132),
            (4.0, 3.167124183311986e-05),
            (6.0, 9.865876450376946e-10),
            (10.0, 7.61985302416047e-24),
        ];
        for (z, want) in refs {
            let got = normal_sf(z);
            assert!(
                (got / want - 1.0).abs() < 2e-10,
                "z={z}: {got:e} vs {want:e}"
            );
        }
    }

    #[test]
    fn t_quantile_matches_scipy() {
        // python: scipy.stats.t.ppf(0.975, 9) -> 2.262157162798205
        assert!((t_quantile(0.975, 9.0) - 2.262157162798205).abs() < 1e-9);
    }
}
