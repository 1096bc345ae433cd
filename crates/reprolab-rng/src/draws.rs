//! The draws the search samplers need (uniform, integer, normal, weighted) on top of
//! [`SplitMix64`]. Same seed, same stream, on every platform.

use crate::SplitMix64;

/// Seeded generator of uniform, normal and index draws.
#[derive(Debug, Clone)]
pub struct Rng {
    inner: SplitMix64,
}

impl Rng {
    /// A generator whose stream is fully determined by `seed`.
    pub fn new(seed: u64) -> Self {
        // Decorrelate nearby seeds (0, 1, 2, …) before the first draw.
        let mut inner = SplitMix64::new(seed ^ 0x5DEE_CE66_D1CE_4E5B);
        inner.next_u64();
        Rng { inner }
    }

    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.inner.next_u64()
    }

    /// Uniform in `[0, 1)` (53 random bits).
    pub fn f64(&mut self) -> f64 {
        (self.inner.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in `[low, high]` (`low` when the interval is empty).
    pub fn uniform(&mut self, low: f64, high: f64) -> f64 {
        if high <= low {
            return low;
        }
        (low + (high - low) * self.f64()).clamp(low, high)
    }

    /// Index in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        self.inner.below(n)
    }

    /// Integer uniform in `[low, high]` (`low` when empty).
    pub fn int(&mut self, low: i64, high: i64) -> i64 {
        if high <= low {
            return low;
        }
        let span = (high as i128 - low as i128 + 1) as u128;
        let r = ((self.inner.next_u64() as u128 * span) >> 64) as i128;
        (low as i128 + r) as i64
    }

    /// Standard normal (Box–Muller).
    pub fn normal(&mut self) -> f64 {
        let u1 = 1.0 - self.f64(); // (0, 1]
        let u2 = self.f64();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    /// An index drawn with probability proportional to `weights` (non-negative, not all zero;
    /// uniform when they are).
    pub fn weighted(&mut self, weights: &[f64]) -> usize {
        let total: f64 = weights.iter().filter(|w| w.is_finite() && **w > 0.0).sum();
        if total.is_nan() || total <= 0.0 {
            return self.below(weights.len());
        }
        let mut x = self.f64() * total;
        for (i, w) in weights.iter().enumerate() {
            if w.is_finite() && *w > 0.0 {
                if x < *w {
                    return i;
                }
                x -= w;
            }
        }
        weights
            .iter()
            .rposition(|w| w.is_finite() && *w > 0.0)
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_are_deterministic_and_in_range() {
        let mut a = Rng::new(7);
        let mut b = Rng::new(7);
        for _ in 0..1000 {
            assert_eq!(a.next_u64(), b.next_u64());
            let x = a.uniform(-2.0, 3.0);
            assert!((-2.0..=3.0).contains(&x));
            let k = a.int(-3, 4);
            assert!((-3..=4).contains(&k));
            b.uniform(-2.0, 3.0);
            b.int(-3, 4);
        }
        assert_ne!(Rng::new(1).next_u64(), Rng::new(2).next_u64());
    }

    #[test]
    fn normal_and_weighted_look_right() {
        let mut r = Rng::new(3);
        let xs: Vec<f64> = (0..20_000).map(|_| r.normal()).collect();
        let m = xs.iter().sum::<f64>() / xs.len() as f64;
        let v = xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / xs.len() as f64;
        assert!(m.abs() < 0.03 && (v - 1.0).abs() < 0.05, "mean {m} var {v}");
        let mut counts = [0usize; 3];
        for _ in 0..10_000 {
            counts[r.weighted(&[1.0, 0.0, 3.0])] += 1;
        }
        assert_eq!(counts[1], 0);
        assert!(
            (counts[2] as f64 / counts[0] as f64 - 3.0).abs() < 0.3,
            "{counts:?}"
        );
        assert!(r.weighted(&[0.0, 0.0]) < 2);
    }
}
