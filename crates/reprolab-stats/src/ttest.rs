//! Parametric t-tests: Welch (unpaired) and paired.
//!
//! Rank tests are the default in reprolab, but many published DL comparisons
//! use t-tests, so reproducing their claims needs the same test. Welch rather
//! than Student because two configurations rarely have equal run variance.
//!
//! Zero-variance groups (deterministic training) follow SciPy: equal means
//! give no test (`None`); different means give `t = ±inf`, `p = 0`.

use crate::TestResult;
use crate::describe::{mean, variance};
use crate::dist::t_two_sided;

/// Welch's unequal-variance t-test, two-sided.
///
/// `statistic` is `t` for `mean(x) - mean(y)`; degrees of freedom by
/// Welch–Satterthwaite. `method` is `"welch"`. `None` when either sample has
/// fewer than 2 values, or both have zero variance and equal means.
pub fn welch_t(x: &[f64], y: &[f64]) -> Option<TestResult> {
    let (nx, ny) = (x.len() as f64, y.len() as f64);
    if x.len() < 2 || y.len() < 2 {
        return None;
    }
    let diff = mean(x) - mean(y);
    let (ax, ay) = (variance(x) / nx, variance(y) / ny);
    let se2 = ax + ay;
    let t = t_or_degenerate(diff, se2)?;
    let df = se2 * se2 / (ax * ax / (nx - 1.0) + ay * ay / (ny - 1.0));
    Some(TestResult {
        statistic: t,
        p_value: t_two_sided(t, df),
        method: "welch",
    })
}

/// Paired t-test on `x - y`, two-sided.
///
/// `statistic` is `t = mean(d) / (sd(d) / sqrt(n))` with `n - 1` degrees of
/// freedom. `method` is `"paired-t"`. `None` when lengths differ, `n < 2`, or
/// every difference is the same zero.
pub fn paired_t(x: &[f64], y: &[f64]) -> Option<TestResult> {
    if x.len() != y.len() || x.len() < 2 {
        return None;
    }
    let d: Vec<f64> = x.iter().zip(y).map(|(a, b)| a - b).collect();
    let n = d.len() as f64;
    let t = t_or_degenerate(mean(&d), variance(&d) / n)?;
    Some(TestResult {
        statistic: t,
        p_value: t_two_sided(t, n - 1.0),
        method: "paired-t",
    })
}

/// `diff / sqrt(se2)`, with SciPy's zero-variance conventions.
fn t_or_degenerate(diff: f64, se2: f64) -> Option<f64> {
    if se2 > 0.0 {
        Some(diff / se2.sqrt())
    } else if diff == 0.0 {
        None
    } else {
        Some(diff.signum() * f64::INFINITY)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rel_close(a: f64, b: f64, rtol: f64) -> bool {
        (a - b).abs() <= rtol * b.abs()
    }

    const X: [f64; 10] = [
        0.91, 0.93, 0.9333, 0.92, 0.94, 0.9333, 0.95, 0.90, 0.93, 0.92,
    ];
    const Y: [f64; 10] = [0.90, 0.92, 0.9333, 0.93, 0.92, 0.91, 0.94, 0.89, 0.92, 0.91];

    #[test]
    fn welch_matches_scipy() {
        // python: scipy.stats.ttest_ind(X, Y, equal_var=False)
        //   -> t=1.396739801394472, p=0.17951631723799039 (df 17.957494702283626)
        let r = welch_t(&X, &Y).unwrap();
        assert_eq!(r.method, "welch");
        assert!(rel_close(r.statistic, 1.396739801394472, 1e-10));
        assert!(rel_close(r.p_value, 0.17951631723799039, 1e-9));
    }

    #[test]
    fn welch_unequal_sizes_matches_scipy() {
        // python:
        //   y20=np.array([0.9+((i*5)%7)/100 for i in range(20)])
        //   scipy.stats.ttest_ind(X, y20, equal_var=False)
        //   -> t=-0.5852294782922051, p=0.5637085120863785 (df 24.671030188704478)
        let y20: Vec<f64> = (0..20)
            .map(|i| 0.9 + ((i * 5) % 7) as f64 / 100.0)
            .collect();
        let r = welch_t(&X, &y20).unwrap();
        assert!(rel_close(r.statistic, -0.5852294782922051, 1e-10));
        assert!(rel_close(r.p_value, 0.5637085120863785, 1e-9));

        // python: scipy.stats.ttest_ind([0.5,0.6,0.7],[0.9,0.95,0.97,0.99], equal_var=False)
        //   -> t=-5.790176014589936, p=0.017463854019161316
        let r = welch_t(&[0.5, 0.6, 0.7], &[0.9, 0.95, 0.97, 0.99]).unwrap();
        assert!(rel_close(r.statistic, -5.790176014589936, 1e-10));
        assert!(rel_close(r.p_value, 0.017463854019161316, 1e-9));
    }

    #[test]
    fn paired_matches_scipy() {
        // python: scipy.stats.ttest_rel(X, Y) -> t=3.1847950148704327, p=0.011098958942945368
        let r = paired_t(&X, &Y).unwrap();
        assert_eq!(r.method, "paired-t");
        assert!(rel_close(r.statistic, 3.1847950148704327, 1e-10));
        assert!(rel_close(r.p_value, 0.011098958942945368, 1e-9));

        // python:
        //   xa=[0.912,0.934,0.921,0.945,0.928,0.917,0.939,0.925,0.931,0.908]
        //   ya=[0.905,0.930,0.927,0.931,0.915,0.919,0.926,0.9105,0.9235,0.909]
        //   scipy.stats.ttest_rel(xa, ya) -> t=2.7237467831167685, p=0.02346346441946912
        let (xa, ya) = (crate::samples::X, crate::samples::Y);
        let r = paired_t(&xa, &ya).unwrap();
        assert!(rel_close(r.statistic, 2.7237467831167685, 1e-10));
        assert!(rel_close(r.p_value, 0.02346346441946912, 1e-9));
    }

    #[test]
    fn degenerate_inputs() {
        assert!(welch_t(&[1.0], &[1.0, 2.0]).is_none());
        assert!(paired_t(&[1.0, 2.0], &[1.0]).is_none());
        // deterministic training, same result: no test
        assert!(welch_t(&[0.9333; 5], &[0.9333; 3]).is_none());
        assert!(paired_t(&[0.9333; 5], &[0.9333; 5]).is_none());
        // python: scipy.stats.ttest_ind([1,1,1],[2,2,2],equal_var=False) -> (-inf, 0.0)
        let r = welch_t(&[1.0; 3], &[2.0; 3]).unwrap();
        assert_eq!(r.statistic, f64::NEG_INFINITY);
        assert_eq!(r.p_value, 0.0);
        // python: scipy.stats.ttest_rel([1,2,3],[0,1,2]) -> (inf, 0.0)
        let r = paired_t(&[1.0, 2.0, 3.0], &[0.0, 1.0, 2.0]).unwrap();
        assert_eq!(r.statistic, f64::INFINITY);
        assert_eq!(r.p_value, 0.0);
    }
}
