//! Mann–Whitney U test for *unpaired* groups of runs.
//!
//! Used when A and B were not run on matched seeds (or seeds do not pair
//! meaningfully). Like Wilcoxon it is a rank test, robust to the skewed,
//! bounded distributions of accuracies.
//!
//! Method choice follows SciPy's `method="auto"`: the exact null distribution
//! when there are **no ties** and `min(nx, ny) <= 8`; otherwise the normal
//! approximation with tie correction **and** continuity correction (SciPy's
//! `use_continuity=True` default). The exact distribution is not valid with
//! ties, which is why tied data always goes to the normal approximation.

use crate::TestResult;
use crate::dist::normal_sf;
use crate::rank::rank;

/// Exact distribution is used only when the smaller sample has at most this
/// many values (and there are no ties), as in SciPy.
pub const EXACT_MAX_MIN_N: usize = 8;

/// Two-sided Mann–Whitney U test of `x` against `y`.
///
/// `statistic` is `U1`, the U of `x` (number of pairs with `x > y`, ties
/// counting one half), as SciPy reports. `method` is `"exact"` or `"normal"`.
/// When every value is equal the result is `p = 1` (as SciPy).
///
/// Returns `None` when either sample is empty.
pub fn mann_whitney_u(x: &[f64], y: &[f64]) -> Option<TestResult> {
    let (nx, ny) = (x.len(), y.len());
    if nx == 0 || ny == 0 {
        return None;
    }
    let all: Vec<f64> = x.iter().chain(y).copied().collect();
    let ranks = rank(&all);
    let r1_doubled: u64 = ranks.doubled[..nx].iter().sum();
    let (nxf, nyf) = (nx as f64, ny as f64);
    let u1 = r1_doubled as f64 / 2.0 - nxf * (nxf + 1.0) / 2.0;
    let u_max = u1.max(nxf * nyf - u1);

    if !ranks.has_ties() && nx.min(ny) <= EXACT_MAX_MIN_N {
        // no ties => U is an integer
        if let Some(p) = exact_p_value(nx, ny, u_max as u64) {
            return Some(TestResult {
                statistic: u1,
                p_value: p,
                method: "exact",
            });
        }
    }

    let n = nxf + nyf;
    let mu = nxf * nyf / 2.0;
    let s = (nxf * nyf / 12.0 * ((n + 1.0) - ranks.tie_term() / (n * (n - 1.0)))).sqrt();
    let p = if s > 0.0 {
        let z = (u_max - mu - 0.5) / s;
        (2.0 * normal_sf(z)).min(1.0)
    } else {
        1.0 // all values equal: no evidence of a difference
    };
    Some(TestResult {
        statistic: u1,
        p_value: p,
        method: "normal",
    })
}

/// Number of arrangements giving each value of U, for sample sizes `m`, `n`.
///
/// The generating function of U is the Gaussian binomial
/// `[m+n choose m]_q = prod_{i=1..m} (1 - q^(n+i)) / (1 - q^i)`.
/// Multiplying by one factor and dividing by the next keeps every
/// intermediate a polynomial with integer coefficients, so `i128` arithmetic
/// is exact; cost is `O(min(m,n) * m * n)`. Returns `None` if the total count
/// `C(m+n, m)` would not fit comfortably in `i128`.
pub fn u_counts(m: usize, n: usize) -> Option<Vec<i128>> {
    let (m, n) = if m <= n { (m, n) } else { (n, m) };
    // guard: C(m+n, m) < 2^120 keeps every coefficient (and their
    // differences) far from overflow
    let mut total: u128 = 1;
    for i in 1..=m as u128 {
        total = total.checked_mul(n as u128 + i)? / i;
        if total >= 1u128 << 120 {
            return None;
        }
    }
    let len = m.checked_mul(n)? + 1;
    let mut c = vec![0i128; len];
    c[0] = 1;
    for i in 1..=m {
        let k = n + i;
        // multiply by (1 - q^k); degree stays within m*n after the division
        for u in (k..len).rev() {
            c[u] -= c[u - k];
        }
        // divide by (1 - q^i): d[u] = c[u] + d[u - i]
        for u in i..len {
            c[u] += c[u - i];
        }
    }
    Some(c)
}

/// Exact two-sided p-value `min(1, 2 * P(U >= u_max))`, SciPy's definition.
fn exact_p_value(m: usize, n: usize, u_max: u64) -> Option<f64> {
    let counts = u_counts(m, n)?;
    let total: i128 = counts.iter().sum();
    let upper: i128 = counts[u_max as usize..].iter().sum();
    Some((2.0 * upper as f64 / total as f64).min(1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rel_close(a: f64, b: f64, rtol: f64) -> bool {
        (a - b).abs() <= rtol * b.abs()
    }

    #[test]
    fn u_counts_small_case() {
        // m=2, n=2: U takes 0,1,2,2,3,4 over the C(4,2)=6 arrangements
        assert_eq!(u_counts(2, 2).unwrap(), vec![1, 1, 2, 1, 1]);
        let c = u_counts(8, 30).unwrap();
        assert_eq!(c.iter().sum::<i128>(), 48_903_492); // C(38, 8)
        assert!(c.iter().all(|&v| v > 0));
        assert_eq!(u_counts(3, 1).unwrap(), u_counts(1, 3).unwrap());
    }

    #[test]
    fn exact_without_ties_matches_scipy() {
        // python:
        //   x=[0.912,0.934,0.921,0.945,0.928,0.917,0.939,0.925]
        //   y=[0.905,0.930,0.927,0.931,0.915,0.919,0.926,0.9105,0.9235,0.909]
        //   scipy.stats.mannwhitneyu(x, y, method='exact')  # -> (56.0, 0.17281411399058458)
        //   scipy.stats.mannwhitneyu(y, x, method='exact')  # -> (24.0, same p)
        //   ('auto' picks 'exact' here too)
        let x = [0.912, 0.934, 0.921, 0.945, 0.928, 0.917, 0.939, 0.925];
        let y = [
            0.905, 0.930, 0.927, 0.931, 0.915, 0.919, 0.926, 0.9105, 0.9235, 0.909,
        ];
        let r = mann_whitney_u(&x, &y).unwrap();
        assert_eq!(r.method, "exact");
        assert_eq!(r.statistic, 56.0);
        assert!(rel_close(r.p_value, 0.17281411399058458, 1e-12));
        let r2 = mann_whitney_u(&y, &x).unwrap();
        assert_eq!(r2.statistic, 24.0);
        assert!(rel_close(r2.p_value, 0.17281411399058458, 1e-12));
    }

    #[test]
    fn exact_small_vs_large_matches_scipy() {
        // python:
        //   scipy.stats.mannwhitneyu([1.5,2.5,10.0],
        //       [0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,1.0,1.1,1.2], method='exact')
        //   # -> (36.0, 0.004395604395604396)
        let x = [1.5, 2.5, 10.0];
        let y = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2];
        let r = mann_whitney_u(&x, &y).unwrap();
        assert_eq!(r.method, "exact");
        assert_eq!(r.statistic, 36.0);
        assert!(rel_close(r.p_value, 0.004395604395604396, 1e-12));
    }

    #[test]
    fn normal_with_ties_matches_scipy() {
        // python:
        //   x=[0.91,0.93,0.9333,0.92,0.94,0.9333,0.95,0.90,0.93,0.92]
        //   y=[0.90,0.92,0.9333,0.93,0.92,0.91,0.94,0.89,0.92,0.91]
        //   scipy.stats.mannwhitneyu(x, y)  # auto -> asymptotic, use_continuity=True
        //   # -> (67.0, 0.20639597014320787)
        let x = [
            0.91, 0.93, 0.9333, 0.92, 0.94, 0.9333, 0.95, 0.90, 0.93, 0.92,
        ];
        let y = [0.90, 0.92, 0.9333, 0.93, 0.92, 0.91, 0.94, 0.89, 0.92, 0.91];
        let r = mann_whitney_u(&x, &y).unwrap();
        assert_eq!(r.method, "normal");
        assert_eq!(r.statistic, 67.0);
        assert!(rel_close(r.p_value, 0.20639597014320787, 1e-9));
    }

    #[test]
    fn normal_larger_samples_match_scipy() {
        // python:
        //   x=[0.912,0.934,0.921,0.945,0.928,0.917,0.939,0.925,0.931,0.908]
        //   y=[0.905,0.930,0.927,0.931,0.915,0.919,0.926,0.9105,0.9235,0.909]
        //   scipy.stats.mannwhitneyu(x, y)  # -> (66.5, 0.2263014317699833)
        let (x, y) = (crate::samples::X, crate::samples::Y);
        let r = mann_whitney_u(&x, &y).unwrap();
        assert_eq!(r.method, "normal");
        assert_eq!(r.statistic, 66.5);
        assert!(rel_close(r.p_value, 0.2263014317699833, 1e-9));

        // python:
        //   x=np.array([0.9+((i*7)%9)/100 for i in range(10)])
        //   y=np.array([0.9+((i*5)%7)/100 for i in range(20)])
        //   scipy.stats.mannwhitneyu(x, y)  # -> (110.5, 0.6573260213420299)
        let x: Vec<f64> = (0..10)
            .map(|i| 0.9 + ((i * 7) % 9) as f64 / 100.0)
            .collect();
        let y: Vec<f64> = (0..20)
            .map(|i| 0.9 + ((i * 5) % 7) as f64 / 100.0)
            .collect();
        let r = mann_whitney_u(&x, &y).unwrap();
        assert_eq!(r.method, "normal");
        assert_eq!(r.statistic, 110.5);
        assert!(rel_close(r.p_value, 0.6573260213420299, 1e-9));
    }

    #[test]
    fn degenerate_inputs() {
        assert!(mann_whitney_u(&[], &[1.0]).is_none());
        // python: scipy.stats.mannwhitneyu([0.9]*4, [0.9]*5) -> (10.0, 1.0)
        let r = mann_whitney_u(&[0.9; 4], &[0.9; 5]).unwrap();
        assert_eq!(r.statistic, 10.0);
        assert_eq!(r.p_value, 1.0);
    }
}
