//! The unbiased pass@k estimator of code-generation benchmarks (Chen et al. 2021, used unchanged
//! by human-eval, EvalPlus, bigcode-evaluation-harness and Deep-Bench): the probability that at
//! least one of k samples drawn without replacement from n generated samples, c of them correct,
//! is correct.

/// pass@k for one problem with `n` samples of which `c` are correct:
/// `1 − C(n−c, k) / C(n, k)`, computed as the numerically stable product
/// `1 − ∏_{i=n−c+1}^{n} (1 − k/i)` (binomials overflow f64 from n ≈ 1030 on), and exactly 1
/// when `n − c < k` (every draw of k contains a correct sample).
///
/// `None` when the estimate is undefined: `k == 0`, `k > n` (report pass@k only for problems
/// with at least k samples) or `c > n`.
pub fn pass_at_k(n: u64, c: u64, k: u64) -> Option<f64> {
    if k == 0 || k > n || c > n {
        return None;
    }
    if n - c < k {
        return Some(1.0);
    }
    let product: f64 = ((n - c + 1)..=n)
        .map(|i| 1.0 - k as f64 / i as f64)
        .product();
    Some(1.0 - product)
}

/// Mean pass@k over problems given as `(n, c)` pairs; `None` when there is no problem or when
/// any problem has fewer than `k` samples (a mean over a subset would not be pass@k).
pub fn mean_pass_at_k(problems: &[(u64, u64)], k: u64) -> Option<f64> {
    if problems.is_empty() {
        return None;
    }
    let mut sum = 0.0;
    for &(n, c) in problems {
        sum += pass_at_k(n, c, k)?;
    }
    Some(sum / problems.len() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    /// C(n, k) exactly, for the cross-check below.
    fn binom(n: u64, k: u64) -> u128 {
        (0..k).fold(1u128, |acc, i| acc * (n - i) as u128 / (i + 1) as u128)
    }

    #[test]
    fn pass_at_1_is_the_fraction_correct() {
        assert!(close(pass_at_k(10, 3, 1).unwrap(), 0.3));
        assert!(close(pass_at_k(1, 1, 1).unwrap(), 1.0));
        assert!(close(pass_at_k(1, 0, 1).unwrap(), 0.0));
        assert!(close(pass_at_k(7, 2, 1).unwrap(), 2.0 / 7.0));
    }

    #[test]
    fn hand_computed_cases() {
        // n=10, c=3, k=5: 1 − C(7,5)/C(10,5) = 1 − 21/252
        assert!(close(pass_at_k(10, 3, 5).unwrap(), 1.0 - 21.0 / 252.0));
        // n=20, c=4, k=10: 1 − C(16,10)/C(20,10) = 1 − 8008/184756
        assert!(close(
            pass_at_k(20, 4, 10).unwrap(),
            1.0 - 8008.0 / 184_756.0
        ));
        // n=5, c=1, k=2: 1 − C(4,2)/C(5,2) = 1 − 6/10
        assert!(close(pass_at_k(5, 1, 2).unwrap(), 0.4));
        // n=10, c=1, k=10: every draw holds the correct sample
        assert!(close(pass_at_k(10, 1, 10).unwrap(), 1.0));
        // n − c < k: certain
        assert!(close(pass_at_k(10, 8, 5).unwrap(), 1.0));
        // nothing correct: impossible
        assert!(close(pass_at_k(10, 0, 5).unwrap(), 0.0));
    }

    #[test]
    fn product_form_matches_exact_binomials() {
        for n in [1u64, 2, 5, 10, 17, 40, 60] {
            for c in 0..=n {
                for k in 1..=n.min(10) {
                    let exact = if n - c < k {
                        1.0
                    } else {
                        1.0 - binom(n - c, k) as f64 / binom(n, k) as f64
                    };
                    let got = pass_at_k(n, c, k).unwrap();
                    assert!(
                        (got - exact).abs() < 1e-9,
                        "n={n} c={c} k={k}: {got} vs {exact}"
                    );
                }
            }
        }
    }

    #[test]
    fn large_n_stays_finite_and_in_range() {
        // C(2000, 10) overflows nothing here, but C(2000, 1000) would overflow f64.
        let p = pass_at_k(2000, 1, 1000).unwrap();
        assert!(close(p, 0.5));
        let q = pass_at_k(2000, 3, 10).unwrap();
        assert!(q > 0.0 && q < 1.0);
    }

    #[test]
    fn undefined_cases_are_none() {
        assert_eq!(pass_at_k(5, 1, 0), None);
        assert_eq!(pass_at_k(5, 1, 6), None);
        assert_eq!(pass_at_k(5, 6, 1), None);
    }

    #[test]
    fn mean_needs_every_problem_to_have_k_samples() {
        // (n=10, c=3) and (n=10, c=0) at k=1: (0.3 + 0) / 2
        assert!(close(mean_pass_at_k(&[(10, 3), (10, 0)], 1).unwrap(), 0.15));
        assert_eq!(mean_pass_at_k(&[(10, 3), (4, 1)], 5), None);
        assert_eq!(mean_pass_at_k(&[], 1), None);
    }
}
