//! Wilcoxon signed-rank test for *paired* runs (same seeds for A and B).
//!
//! Pairing by seed removes seed-to-seed noise shared by both configurations,
//! and the rank test does not assume normal accuracies (they are bounded and
//! often skewed near 1). Real accuracies tie a lot (e.g. `14/15 = 0.9333…`
//! on several seeds), and SciPy's `method="exact"` is *not* exact with ties,
//! while its normal approximation is poor at n ≈ 10. So for `n <= 50`
//! non-zero differences we compute the exact permutation distribution of
//! `W+` over all `2^n` sign assignments, by dynamic programming on *doubled*
//! mid-ranks (integers even with ties). This equals what SciPy 1.17 returns
//! with `method=PermutationMethod(n_resamples=np.inf)`; the default
//! `PermutationMethod()` enumerates all sign flips only while `2^n <= 9999`
//! (n ≤ 13) and samples beyond, so it (like `method="auto"`) equals this up to n = 13.
//!
//! Above 50 the normal approximation with tie correction is used, without
//! continuity correction (SciPy's `correction=False` default).
//!
//! Zero differences are dropped first (`zero_method="wilcox"`), and `n` is the
//! number of non-zero differences. Note: SciPy decides exact-vs-normal on the
//! length *before* dropping zeros; we decide on the non-zero count because
//! that is the size of the distribution actually enumerated.
//!
//! Ties are exact `f64` equality of `|x - y|`, as in SciPy; differences of
//! floats that "look" equal (0.93 − 0.92 vs 0.94 − 0.93) may not tie. Callers
//! that want paper ties test [`rounded_differences`] against zeros.

use crate::TestResult;
use crate::dist::normal_two_sided;
use crate::rank::rank;

/// Largest number of non-zero differences for which the exact distribution is
/// used. `2^50` sign assignments still fit a `u64` count exactly.
pub const EXACT_MAX_N: usize = 50;

/// `x - y` rounded to 12 significant digits, so that float noise does not break ties:
/// accuracies are fractions k/n, and 0.94 − 0.93 must tie with 0.93 − 0.92 as it does on paper.
/// Test these against zeros with [`wilcoxon_signed_rank`].
pub fn rounded_differences(x: &[f64], y: &[f64]) -> Vec<f64> {
    x.iter()
        .zip(y)
        .map(|(a, b)| round_difference(a - b))
        .collect()
}

/// `d` at 12 significant digits (see [`rounded_differences`]).
pub(crate) fn round_difference(d: f64) -> f64 {
    if d == 0.0 || !d.is_finite() {
        return d;
    }
    let scale = 10f64.powi(11 - d.abs().log10().floor() as i32);
    (d * scale).round() / scale
}

/// Paired two-sided Wilcoxon signed-rank test of `x` against `y`.
///
/// `statistic` is `min(W+, W-)` (SciPy's two-sided statistic), where `W+` is
/// the rank sum of positive `x - y`. `method` is `"exact"` for `n <= 50`
/// non-zero differences, `"normal"` above.
///
/// Returns `None` when lengths differ or every difference is zero (no
/// evidence either way: callers treat that as p = 1).
pub fn wilcoxon_signed_rank(x: &[f64], y: &[f64]) -> Option<TestResult> {
    if x.len() != y.len() {
        return None;
    }
    let d: Vec<f64> = x.iter().zip(y).map(|(a, b)| a - b).collect();
    let sr = SignedRanks::of(&d)?;
    let total2: u64 = sr.ranks.doubled.iter().sum(); // = n(n+1)
    let w_minus2 = total2 - sr.w_plus2;
    let statistic = sr.w_plus2.min(w_minus2) as f64 / 2.0;

    if sr.n() <= EXACT_MAX_N {
        let p = exact_p_value(&sr.ranks.doubled, sr.w_plus2.min(w_minus2));
        return Some(TestResult {
            statistic,
            p_value: p,
            method: "exact",
        });
    }
    Some(TestResult {
        statistic,
        p_value: normal_two_sided(sr.z()),
        method: "normal",
    })
}

/// The ranks of the non-zero differences' magnitudes and `W+` (doubled, so that mid-ranks of
/// ties stay integers).
struct SignedRanks {
    ranks: crate::rank::Ranks,
    w_plus2: u64,
}

impl SignedRanks {
    /// `None` when every difference is zero.
    fn of(d: &[f64]) -> Option<SignedRanks> {
        let d: Vec<f64> = d.iter().copied().filter(|v| *v != 0.0).collect();
        if d.is_empty() {
            return None;
        }
        let abs: Vec<f64> = d.iter().map(|v| v.abs()).collect();
        let ranks = rank(&abs);
        let w_plus2 = d
            .iter()
            .zip(&ranks.doubled)
            .filter(|(v, _)| **v > 0.0)
            .map(|(_, r)| *r)
            .sum();
        Some(SignedRanks { ranks, w_plus2 })
    }

    fn n(&self) -> usize {
        self.ranks.doubled.len()
    }

    /// `W+` standardised under the null, with the tie correction (no continuity correction).
    fn z(&self) -> f64 {
        let nf = self.n() as f64;
        let mean = nf * (nf + 1.0) / 4.0;
        let var = (nf * (nf + 1.0) * (2.0 * nf + 1.0) - 0.5 * self.ranks.tie_term()) / 24.0;
        (self.w_plus2 as f64 / 2.0 - mean) / var.sqrt()
    }
}

/// One-sided Wilcoxon signed-rank test of the differences `d` against 0: the alternative is
/// that they lie above 0 (`greater`) or below. `statistic` is `W+`; the p-value is
/// `P(W+ >= observed)` (or `<=`) under the null, exact for up to [`EXACT_MAX_N`] non-zero
/// differences, normal above (SciPy's `alternative="greater"`/`"less"`). `None` when every
/// difference is zero.
pub fn wilcoxon_one_sided(d: &[f64], greater: bool) -> Option<TestResult> {
    let sr = SignedRanks::of(d)?;
    let statistic = sr.w_plus2 as f64 / 2.0;
    if sr.n() <= EXACT_MAX_N {
        let counts = signed_rank_counts(&sr.ranks.doubled);
        let w = sr.w_plus2 as usize;
        let tail: u64 = if greater {
            counts[w..].iter().sum()
        } else {
            counts[..=w].iter().sum()
        };
        return Some(TestResult {
            statistic,
            p_value: (tail as f64 / 2f64.powi(sr.n() as i32)).min(1.0),
            method: "exact",
        });
    }
    let z = sr.z();
    Some(TestResult {
        statistic,
        p_value: crate::dist::normal_sf(if greater { z } else { -z }),
        method: "normal",
    })
}

/// Number of sign assignments giving each doubled `W+` value.
///
/// `counts[s]` = number of subsets of `doubled_ranks` whose sum is `s`
/// (each subset = the set of positive differences). This is a subset-sum
/// count, `O(n * n(n+1))`, tiny for n ≤ 50.
pub fn signed_rank_counts(doubled_ranks: &[u64]) -> Vec<u64> {
    let total: u64 = doubled_ranks.iter().sum();
    let mut counts = vec![0u64; total as usize + 1];
    counts[0] = 1;
    let mut reach = 0usize;
    for &r in doubled_ranks {
        let r = r as usize;
        for s in (0..=reach).rev() {
            if counts[s] != 0 {
                counts[s + r] += counts[s];
            }
        }
        reach += r;
    }
    counts
}

/// Exact two-sided p-value: `min(1, 2 * P(W+ <= t))` with `t = min(W+, W-)`
/// (all doubled). The null distribution is symmetric, so this equals SciPy's
/// `2 * min(P(W+ <= obs), P(W+ >= obs))`.
fn exact_p_value(doubled_ranks: &[u64], t2: u64) -> f64 {
    let counts = signed_rank_counts(doubled_ranks);
    let lower: u64 = counts[..=t2 as usize].iter().sum();
    let all = 2f64.powi(doubled_ranks.len() as i32);
    (2.0 * lower as f64 / all).min(1.0)
}

#[cfg(test)]
mod rounding_tests {
    #[test]
    fn float_noise_does_not_break_ties() {
        let x = [0.94, 0.93, 0.95, 0.90];
        let y = [0.93, 0.92, 0.94, 0.91];
        let d: Vec<f64> = x
            .iter()
            .zip(&y)
            .map(|(a, b)| super::round_difference(a - b))
            .collect();
        assert_eq!(d[0], d[1]);
        assert_eq!(d[0], d[2]);
        assert_eq!(d[3], -d[0]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rel_close(a: f64, b: f64, rtol: f64) -> bool {
        (a - b).abs() <= rtol * b.abs().max(f64::MIN_POSITIVE)
    }

    /// Brute force over all 2^n sign flips of the differences, recomputing
    /// `W+` from scratch each time (mid-ranks as f64): the definition of the
    /// exact permutation test, independent of the DP.
    fn brute_force_p(x: &[f64], y: &[f64]) -> f64 {
        let d: Vec<f64> = x
            .iter()
            .zip(y)
            .map(|(a, b)| a - b)
            .filter(|v| *v != 0.0)
            .collect();
        let abs: Vec<f64> = d.iter().map(|v| v.abs()).collect();
        let r: Vec<f64> = rank(&abs).doubled.iter().map(|v| *v as f64 / 2.0).collect();
        let n = d.len();
        let w = |signs: &dyn Fn(usize) -> bool| -> f64 {
            (0..n).filter(|&i| signs(i)).map(|i| r[i]).sum::<f64>()
        };
        let obs = w(&|i| d[i] > 0.0);
        let (mut le, mut ge) = (0u64, 0u64);
        for mask in 0u64..(1u64 << n) {
            let s = w(&|i| mask >> i & 1 == 1);
            if s <= obs + 1e-9 {
                le += 1;
            }
            if s >= obs - 1e-9 {
                ge += 1;
            }
        }
        let all = (1u64 << n) as f64;
        (2.0 * (le.min(ge) as f64) / all).min(1.0)
    }

    /// Deterministic pseudo-accuracies with heavy ties (values on a 1/15 grid).
    fn tied_accuracies(n: usize, seed: u64, shift: u64) -> Vec<f64> {
        let mut rng = reprolab_rng::SplitMix64::new(seed);
        (0..n)
            .map(|_| (12 + (rng.next_u64() % 3) + shift) as f64 / 15.0)
            .collect()
    }

    /// `0.9 + k/100` with k from a modular pattern: reproducible bit-for-bit
    /// in numpy (same IEEE operations), heavily tied like real accuracies.
    fn grid(n: usize, mul: usize, modulo: usize, scale: f64) -> Vec<f64> {
        (0..n)
            .map(|i| 0.9 + ((i * mul) % modulo) as f64 / scale)
            .collect()
    }

    /// The test of `x` against `y`, checked against scipy's method, statistic and p-value (to
    /// relative tolerance `tol`).
    fn matches_scipy(
        x: &[f64],
        y: &[f64],
        (method, statistic): (&str, f64),
        p: f64,
        tol: f64,
    ) -> TestResult {
        let r = wilcoxon_signed_rank(x, y).unwrap();
        assert_eq!((r.method, r.statistic), (method, statistic));
        assert!(rel_close(r.p_value, p, tol), "{} vs scipy {p}", r.p_value);
        r
    }

    #[test]
    fn exact_without_ties_matches_scipy() {
        // python:
        //   x=[0.912,0.934,0.921,0.945,0.928,0.917,0.939,0.925,0.931,0.908]
        //   y=[0.905,0.930,0.927,0.931,0.915,0.919,0.926,0.9105,0.9235,0.909]
        //   scipy.stats.wilcoxon(x, y, method='exact')  # -> (7.0, 0.037109375)
        let (x, y) = (crate::samples::X, crate::samples::Y);
        let r = matches_scipy(&x, &y, ("exact", 7.0), 0.037109375, 1e-12);
        // symmetric in argument order
        let r2 = wilcoxon_signed_rank(&y, &x).unwrap();
        assert_eq!(r2.statistic, 7.0);
        assert_eq!(r2.p_value, r.p_value);
    }

    #[test]
    fn exact_n20_with_a_zero_matches_scipy() {
        // python:
        //   x=np.array([0.9+((i*7)%20)/1000 for i in range(20)])
        //   y=np.array([0.9+((i*3)%20)/1000+0.0001*i*i/7 for i in range(20)])
        //   scipy.stats.wilcoxon(x, y, method='exact')  # -> (71.0, 0.3524589538574219)
        //   (one zero difference, 19 distinct non-zero |d|)
        let x: Vec<f64> = (0..20)
            .map(|i| 0.9 + ((i * 7) % 20) as f64 / 1000.0)
            .collect();
        let y: Vec<f64> = (0..20)
            .map(|i| 0.9 + ((i * 3) % 20) as f64 / 1000.0 + 0.0001 * (i * i) as f64 / 7.0)
            .collect();
        matches_scipy(&x, &y, ("exact", 71.0), 0.3524589538574219, 1e-12);
    }

    #[test]
    fn exact_with_ties_and_zero_matches_scipy_permutation() {
        // python:
        //   x=[0.91,0.93,0.9333,0.92,0.94,0.9333,0.95,0.90,0.93,0.92]
        //   y=[0.90,0.92,0.9333,0.93,0.92,0.91,0.94,0.89,0.92,0.91]
        //   scipy.stats.wilcoxon(x, y, method=scipy.stats.PermutationMethod())
        //   # -> (4.0, 0.03125); also what method='auto' returns for n <= 13.
        //   # (method='exact' gives 0.02734375: it ignores the ties.)
        let x = [
            0.91, 0.93, 0.9333, 0.92, 0.94, 0.9333, 0.95, 0.90, 0.93, 0.92,
        ];
        let y = [0.90, 0.92, 0.9333, 0.93, 0.92, 0.91, 0.94, 0.89, 0.92, 0.91];
        matches_scipy(&x, &y, ("exact", 4.0), 0.03125, 1e-12);
    }

    #[test]
    fn exact_n13_with_ties_matches_scipy_permutation() {
        // python:
        //   x=np.array([0.9+((i*7)%5)/100 for i in range(13)])
        //   y=np.array([0.9+((i*3)%4)/100 for i in range(13)])
        //   scipy.stats.wilcoxon(x, y, method=scipy.stats.PermutationMethod())
        //   # -> (13.5, 0.34375)
        let (x, y) = (grid(13, 7, 5, 100.0), grid(13, 3, 4, 100.0));
        matches_scipy(&x, &y, ("exact", 13.5), 0.34375, 1e-12);
    }

    #[test]
    fn exact_dp_equals_brute_force_enumeration() {
        for n in 1..=14 {
            for seed in 0..6u64 {
                let x = tied_accuracies(n, seed, 0);
                let y = tied_accuracies(n, seed + 100, seed % 2);
                match wilcoxon_signed_rank(&x, &y) {
                    None => assert!(x.iter().zip(&y).all(|(a, b)| a == b)),
                    Some(r) => {
                        let bf = brute_force_p(&x, &y);
                        assert!(
                            (r.p_value - bf).abs() < 1e-12,
                            "n={n} seed={seed}: dp {} vs brute force {bf}",
                            r.p_value
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn exact_with_ties_n40_close_to_scipy_normal_approx() {
        // python:
        //   x=np.array([0.9+((i*7)%9)/100 for i in range(40)])
        //   y=np.array([0.9+((i*5)%7)/100 for i in range(40)])
        //   scipy.stats.wilcoxon(x, y, method='asymptotic')
        //   # -> (225.5, 0.09076666716805001); 36 non-zero |d|, 13 distinct
        // Our exact p must be near the normal approximation at this n.
        let (x, y) = (grid(40, 7, 9, 100.0), grid(40, 5, 7, 100.0));
        let r = wilcoxon_signed_rank(&x, &y).unwrap();
        assert_eq!((r.method, r.statistic), ("exact", 225.5));
        assert!(
            (r.p_value - 0.09076666716805001).abs() < 0.01,
            "{}",
            r.p_value
        );
    }

    #[test]
    fn normal_approx_n60_matches_scipy() {
        // python:
        //   x=np.array([0.9+((i*7)%13)/100 for i in range(60)])
        //   y=np.array([0.9+((i*5)%11)/100 for i in range(60)])
        //   scipy.stats.wilcoxon(x, y, method='asymptotic')
        //   # -> (667.0, 0.28490902499586857); 56 non-zero differences, with ties
        let (x, y) = (grid(60, 7, 13, 100.0), grid(60, 5, 11, 100.0));
        matches_scipy(&x, &y, ("normal", 667.0), 0.28490902499586857, 1e-9);
    }

    #[test]
    fn method_switches_above_fifty() {
        // all 50 differences positive: W- = 0, exact p = 2 / 2^50
        let x: Vec<f64> = (1..=51).map(|i| i as f64).collect();
        let y = vec![0.0; 51];
        let r = wilcoxon_signed_rank(&x[..50], &y[..50]).unwrap();
        assert_eq!((r.method, r.statistic), ("exact", 0.0));
        assert_eq!(r.p_value, 2.0 / 2f64.powi(50));
        let r = wilcoxon_signed_rank(&x, &y).unwrap();
        assert_eq!((r.method, r.statistic), ("normal", 0.0));
        // zeros do not count towards n: 50 non-zero + 1 zero is still exact
        let mut x0 = x[..50].to_vec();
        x0.push(0.0);
        assert_eq!(wilcoxon_signed_rank(&x0, &y).unwrap().method, "exact");
    }

    #[test]
    fn degenerate_inputs() {
        assert!(wilcoxon_signed_rank(&[1.0, 2.0], &[1.0]).is_none());
        assert!(wilcoxon_signed_rank(&[0.9333; 5], &[0.9333; 5]).is_none());
        assert!(wilcoxon_signed_rank(&[], &[]).is_none());
        // a single non-zero difference: p = 1
        let r = wilcoxon_signed_rank(&[0.9, 0.8], &[0.9, 0.7]).unwrap();
        assert_eq!(r.p_value, 1.0);
    }

    #[test]
    fn counts_sum_to_power_of_two() {
        let c = signed_rank_counts(&[2, 4, 6, 8]);
        assert_eq!(c.iter().sum::<u64>(), 16);
        // symmetric distribution
        let total = c.len() - 1;
        for s in 0..=total {
            assert_eq!(c[s], c[total - s]);
        }
    }
}
