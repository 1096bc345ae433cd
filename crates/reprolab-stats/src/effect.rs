//! Effect sizes: Cohen's d and Vargha–Delaney A12.
//!
//! With enough runs *any* difference becomes significant, so the study's rule
//! also requires a practically relevant effect (`|d| >= 0.5`, "medium").
//! A12 is the rank-based, distribution-free counterpart recommended for
//! randomized algorithms in software engineering (Arcuri & Briand).

use crate::describe::{mean, variance};

/// Cohen's d: `(mean(x) - mean(y)) / pooled_std`, with the pooled standard
/// deviation `sqrt(((nx-1) sx² + (ny-1) sy²) / (nx + ny - 2))` (ddof 1).
///
/// When the pooled std is 0 (e.g. both groups constant, or one run each):
/// `0` if the means are equal, `±inf` if they differ — a deterministic
/// difference is as large an effect as there is. NaN if either slice is empty.
pub fn cohens_d(x: &[f64], y: &[f64]) -> f64 {
    let (nx, ny) = (x.len(), y.len());
    if nx == 0 || ny == 0 {
        return f64::NAN;
    }
    let diff = mean(x) - mean(y);
    let dof = (nx + ny) as f64 - 2.0;
    let pooled_var = if dof > 0.0 {
        ((nx - 1) as f64 * variance(x) + (ny - 1) as f64 * variance(y)) / dof
    } else {
        0.0
    };
    if pooled_var > 0.0 {
        diff / pooled_var.sqrt()
    } else if diff == 0.0 {
        0.0
    } else {
        diff.signum() * f64::INFINITY
    }
}

/// Vargha–Delaney A12: `P(X > Y) + 0.5 * P(X = Y)` over all `(x, y)` pairs.
///
/// 0.5 means no tendency; values near 1 mean `x` is usually larger. NaN if
/// either slice is empty. `O(nx * ny)`, fine for run counts.
pub fn a12(x: &[f64], y: &[f64]) -> f64 {
    if x.is_empty() || y.is_empty() {
        return f64::NAN;
    }
    let mut score = 0.0;
    for &a in x {
        for &b in y {
            if a > b {
                score += 1.0;
            } else if a == b {
                score += 0.5;
            }
        }
    }
    score / (x.len() * y.len()) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cohens_d_hand_computed() {
        // x=[1,2,3,4]: mean 2.5, var 5/3; y=[2,4,6]: mean 4, var 4
        // pooled var = (3*5/3 + 2*4) / 5 = 2.6; d = -1.5 / sqrt(2.6)
        let d = cohens_d(&[1.0, 2.0, 3.0, 4.0], &[2.0, 4.0, 6.0]);
        assert!((d - (-1.5 / 2.6f64.sqrt())).abs() < 1e-14);
        // antisymmetric
        let d2 = cohens_d(&[2.0, 4.0, 6.0], &[1.0, 2.0, 3.0, 4.0]);
        assert!((d + d2).abs() < 1e-15);
    }

    #[test]
    fn cohens_d_degenerate() {
        assert_eq!(cohens_d(&[0.9333; 4], &[0.9333; 6]), 0.0);
        assert_eq!(cohens_d(&[0.95; 4], &[0.9333; 6]), f64::INFINITY);
        assert_eq!(cohens_d(&[0.90; 4], &[0.9333; 6]), f64::NEG_INFINITY);
        assert_eq!(cohens_d(&[1.0], &[2.0]), f64::NEG_INFINITY);
        assert!(cohens_d(&[], &[1.0]).is_nan());
    }

    #[test]
    fn a12_hand_computed() {
        // x=[1,2,3], y=[2,2,4]: wins (3>2, 3>2) = 2, ties (2=2, 2=2) = 2
        // A12 = (2 + 0.5*2) / 9 = 1/3
        assert!((a12(&[1.0, 2.0, 3.0], &[2.0, 2.0, 4.0]) - 1.0 / 3.0).abs() < 1e-15);
        assert!((a12(&[2.0, 2.0, 4.0], &[1.0, 2.0, 3.0]) - 2.0 / 3.0).abs() < 1e-15);
        assert_eq!(a12(&[0.9; 3], &[0.9; 2]), 0.5);
        assert_eq!(a12(&[1.0], &[0.0]), 1.0);
        assert!(a12(&[], &[0.0]).is_nan());
    }
}
