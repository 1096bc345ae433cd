//! Choosing the next token from logits: greedy, or temperature + nucleus (top-p) sampling.
//!
//! The random generator is the project's SplitMix64 (`reprolab_rng`) rather than `rand`'s
//! `StdRng`, whose stream is allowed to change between `rand` releases: a recorded run must replay the same
//! tokens for the same seed after a dependency upgrade.

use reprolab_rng::SplitMix64;

/// Picks tokens for one generation; `temperature == 0` means greedy.
#[derive(Debug, Clone)]
pub struct Sampler {
    temperature: f64,
    top_p: f64,
    rng: SplitMix64,
}

impl Sampler {
    /// `temperature` must be finite and ≥ 0 and `top_p` in (0, 1]; the caller validates.
    pub fn new(temperature: f64, top_p: f64, seed: u64) -> Self {
        Sampler {
            temperature,
            top_p,
            rng: SplitMix64::new(seed),
        }
    }

    /// The next token id.
    pub fn sample(&mut self, logits: &[f32]) -> u32 {
        if self.temperature <= 0.0 {
            return argmax(logits) as u32;
        }
        let probs = softmax(logits, self.temperature);
        let nucleus = nucleus(&probs, self.top_p);
        let mass: f64 = nucleus.iter().map(|&i| probs[i]).sum();
        let mut target = self.rng.next_f64() * mass;
        for &i in &nucleus {
            target -= probs[i];
            if target < 0.0 {
                return i as u32;
            }
        }
        // Rounding left a sliver of mass: the last candidate takes it.
        *nucleus.last().expect("nucleus is never empty") as u32
    }
}

/// Index of the largest logit; the lowest index wins ties, NaN never wins.
pub fn argmax(logits: &[f32]) -> usize {
    let mut best = 0;
    let mut best_value = f32::NEG_INFINITY;
    for (i, &v) in logits.iter().enumerate() {
        if v > best_value {
            best = i;
            best_value = v;
        }
    }
    best
}

/// Probabilities of `logits / temperature`, in f64 so that small probabilities keep their
/// order; NaN logits get probability 0.
pub fn softmax(logits: &[f32], temperature: f64) -> Vec<f64> {
    let max = logits
        .iter()
        .copied()
        .filter(|v| !v.is_nan())
        .fold(f32::NEG_INFINITY, f32::max) as f64;
    let mut probs: Vec<f64> = logits
        .iter()
        .map(|&v| {
            if v.is_nan() {
                0.0
            } else {
                ((v as f64 - max) / temperature).exp()
            }
        })
        .collect();
    let total: f64 = probs.iter().sum();
    if total > 0.0 && total.is_finite() {
        probs.iter_mut().for_each(|p| *p /= total);
    }
    probs
}

/// The smallest set of most-probable tokens whose mass reaches `top_p`, most probable first
/// (ties broken by lower index, so the set does not depend on sort stability).
pub fn nucleus(probs: &[f64], top_p: f64) -> Vec<usize> {
    let mut order: Vec<usize> = (0..probs.len()).collect();
    order.sort_unstable_by(|&a, &b| probs[b].total_cmp(&probs[a]).then(a.cmp(&b)));
    let mut mass = 0.0;
    let mut keep = 0;
    for &i in &order {
        keep += 1;
        mass += probs[i];
        if mass >= top_p {
            break;
        }
    }
    order.truncate(keep.max(1));
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn greedy_is_argmax() {
        let logits = [0.1, 2.5, -1.0, 2.4, f32::NAN];
        let mut s = Sampler::new(0.0, 1.0, 7);
        for _ in 0..5 {
            assert_eq!(s.sample(&logits), 1);
        }
        assert_eq!(argmax(&[1.0, 3.0, 3.0]), 1, "first of equal maxima");
        assert_eq!(argmax(&[f32::NAN, -5.0]), 1);
    }

    #[test]
    fn same_seed_same_tokens_other_seed_other_tokens() {
        let logits: Vec<f32> = (0..50).map(|i| (i as f32 * 0.37).sin()).collect();
        let draw = |seed| {
            let mut s = Sampler::new(1.0, 1.0, seed);
            (0..40).map(|_| s.sample(&logits)).collect::<Vec<_>>()
        };
        assert_eq!(draw(42), draw(42));
        assert_ne!(draw(42), draw(43));
    }

    #[test]
    fn nucleus_is_the_smallest_prefix_reaching_top_p() {
        let probs = [0.05, 0.5, 0.2, 0.25];
        assert_eq!(nucleus(&probs, 0.5), vec![1]);
        assert_eq!(nucleus(&probs, 0.7), vec![1, 3]);
        assert_eq!(nucleus(&probs, 0.76), vec![1, 3, 2]);
        assert_eq!(nucleus(&probs, 1.0), vec![1, 3, 2, 0]);
        let kept = nucleus(&probs, 0.9);
        let mass: f64 = kept.iter().map(|&i| probs[i]).sum();
        let without_last: f64 = kept[..kept.len() - 1].iter().map(|&i| probs[i]).sum();
        assert!(mass >= 0.9 && without_last < 0.9);
    }

    #[test]
    fn top_p_never_samples_outside_the_nucleus() {
        // softmax of these logits at T=1: token 0 ≈ 0.67, token 1 ≈ 0.24, the rest tiny.
        let logits = [5.0f32, 4.0, 1.0, 0.5, 0.0];
        let mut s = Sampler::new(1.0, 0.8, 1);
        let mut seen = [0usize; 5];
        for _ in 0..2000 {
            seen[s.sample(&logits) as usize] += 1;
        }
        assert_eq!(seen[2] + seen[3] + seen[4], 0, "{seen:?}");
        assert!(seen[0] > seen[1] && seen[1] > 0, "{seen:?}");
    }

    #[test]
    fn sampling_follows_the_distribution() {
        let logits = [(0.75f64).ln() as f32, (0.25f64).ln() as f32];
        let mut s = Sampler::new(1.0, 1.0, 9);
        let n = 20_000;
        let zeros = (0..n).filter(|_| s.sample(&logits) == 0).count();
        let share = zeros as f64 / n as f64;
        assert!((share - 0.75).abs() < 0.02, "share of token 0 = {share}");
    }

    #[test]
    fn low_temperature_sharpens() {
        let p_hot = softmax(&[1.0, 2.0], 2.0);
        let p_cold = softmax(&[1.0, 2.0], 0.5);
        assert!(p_cold[1] > p_hot[1]);
        assert!((p_hot.iter().sum::<f64>() - 1.0).abs() < 1e-12);
    }
}
