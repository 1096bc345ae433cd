//! Mid-ranks with tie bookkeeping, shared by the rank-based tests.
//!
//! Ranks are returned *doubled* (`2 * mid-rank`) so they are always integers:
//! a tie group occupying sorted positions `a..=b` (1-based) has mid-rank
//! `(a + b) / 2`, i.e. doubled rank `a + b`. Integer ranks let the exact
//! Wilcoxon distribution be built by counting, without float keys.

/// Doubled mid-ranks and the sizes of tie groups (groups of size 1 included).
pub(crate) struct Ranks {
    /// `doubled[i]` is twice the mid-rank of `values[i]`.
    pub doubled: Vec<u64>,
    /// Size of every group of equal values.
    pub tie_sizes: Vec<usize>,
}

impl Ranks {
    /// Whether any two values were equal.
    pub fn has_ties(&self) -> bool {
        self.tie_sizes.iter().any(|&t| t > 1)
    }

    /// `sum(t^3 - t)` over tie groups, the usual variance correction term.
    pub fn tie_term(&self) -> f64 {
        self.tie_sizes
            .iter()
            .map(|&t| {
                let t = t as f64;
                t * t * t - t
            })
            .sum()
    }
}

/// Rank `values` ascending with average ranks for ties (SciPy's `'average'`).
/// Equality is exact `f64` equality, as in SciPy.
pub(crate) fn rank(values: &[f64]) -> Ranks {
    let n = values.len();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&i, &j| values[i].total_cmp(&values[j]));
    let mut doubled = vec![0u64; n];
    let mut tie_sizes = Vec::new();
    let mut start = 0;
    while start < n {
        let mut end = start + 1;
        while end < n && values[order[end]] == values[order[start]] {
            end += 1;
        }
        // positions start+1 ..= end (1-based); doubled mid-rank = a + b
        let d = (start + 1 + end) as u64;
        for &idx in &order[start..end] {
            doubled[idx] = d;
        }
        tie_sizes.push(end - start);
        start = end;
    }
    Ranks { doubled, tie_sizes }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_with_ties() {
        // python: scipy.stats.rankdata([3, 1, 3, 2, 3]) -> [4, 1, 4, 2, 4]
        let r = rank(&[3.0, 1.0, 3.0, 2.0, 3.0]);
        assert_eq!(r.doubled, vec![8, 2, 8, 4, 8]);
        assert!(r.has_ties());
        assert_eq!(r.tie_term(), 24.0);
    }

    #[test]
    fn ranks_without_ties() {
        let r = rank(&[0.5, 0.1, 0.9]);
        assert_eq!(r.doubled, vec![4, 2, 6]);
        assert!(!r.has_ties());
        assert_eq!(r.tie_term(), 0.0);
    }
}
