//! Tree-structured Parzen Estimator (Bergstra et al. 2011), modelled on Optuna's independent
//! (univariate) sampler, with two choices of its own (below: the split `gamma` and the
//! categorical estimate; Optuna 5's default is its multivariate sampler): random for the first
//! `n_startup` trials; then the trials
//! are split into the best `gamma` fraction ("good", at most `max_good`) and the rest ("bad",
//! failed trials always last), every parameter gets a density `l(x)` over the good and `g(x)`
//! over the bad trials, and for every parameter independently `n_candidates` draws from `l`
//! are scored by `l(x) / g(x)`, the best kept.
//!
//! * Categorical: smoothed frequencies `p(c) = (Σ w_i [x_i = c] + prior / K) / (Σ w_i + prior)`.
//!   Optuna (since v3) smooths every observation's kernel by `prior / K` per category, K times
//!   more than this; measured against it (`examples/tpe_bench.rs`, docs/repair.md), this
//!   estimate exploits a category sooner and missed the best one more often.
//! * Numeric: a Parzen mixture of truncated Gaussians, one per observation plus a prior kernel
//!   (centre of the domain, σ = its width); σ of an observation = the larger distance to its
//!   sorted neighbours (Optuna's univariate rule), clipped to `[width / min(100, 1 + n), width]`.
//!   `log-float`, and `float` spanning more than 3 decades (`lr` in `[1e-6, 10]`), are modelled
//!   in log space; `int` on `[low − 0.5, high + 0.5]`, rounded.
//! * Weights (Optuna's default): 1 for each trial when fewer than 25, else older trials ramp
//!   from `1/n` to 1 and the last 25 weigh 1.

use reprolab_core::{Config, Goal, Param, ParamKind, SearchSpace};
use serde_json::Value;

use crate::Trial;
use crate::pruner::rank;
use crate::sampler::Sampler;
use crate::space::{NumDomain, choice_index, sample_uniform};
use reprolab_rng::Rng;

/// TPE sampler; goal-aware (`min` for losses). Fields are its settings.
#[derive(Debug, Clone)]
pub struct TpeSampler {
    rng: Rng,
    goal: Goal,
    /// Trials sampled at random before the model is used (default 10).
    pub n_startup: usize,
    /// Draws from `l` scored per parameter (default 24).
    pub n_candidates: usize,
    /// Fraction of the trials taken as "good" (default 0.25, rounded up, at least 1; Optuna
    /// takes `ceil(0.1 n)`, hyperopt `ceil(0.25 √n)`).
    pub gamma: f64,
    /// At most this many good trials (default 25).
    pub max_good: usize,
    /// Weight of the prior kernel (default 1).
    pub prior_weight: f64,
}

impl TpeSampler {
    pub fn new(seed: u64, goal: Goal) -> Self {
        TpeSampler {
            rng: Rng::new(seed),
            goal,
            n_startup: 10,
            n_candidates: 24,
            gamma: 0.25,
            max_good: 25,
            prior_weight: 1.0,
        }
    }

    /// The good and bad trials (each in trial-number order), or `None` while the model cannot
    /// be used (too few trials, or no successful one).
    fn split<'h>(&self, history: &'h [Trial]) -> Option<(Vec<&'h Trial>, Vec<&'h Trial>)> {
        if history.len() < self.n_startup.max(1) {
            return None;
        }
        let mut ok: Vec<&Trial> = history
            .iter()
            .filter(|t| t.value.is_some_and(f64::is_finite))
            .collect();
        if ok.is_empty() {
            return None;
        }
        let goal = self.goal;
        ok.sort_by(|a, b| rank(goal, a.value, b.value).then(a.number.cmp(&b.number)));
        let n_good = ((self.gamma * history.len() as f64).ceil() as usize)
            .clamp(1, self.max_good.max(1))
            .min(ok.len());
        let mut good: Vec<&Trial> = ok[..n_good].to_vec();
        let mut bad: Vec<&Trial> = ok[n_good..].to_vec();
        bad.extend(
            history
                .iter()
                .filter(|t| !t.value.is_some_and(f64::is_finite)),
        );
        good.sort_by_key(|t| t.number);
        bad.sort_by_key(|t| t.number);
        Some((good, bad))
    }

    fn sample_param(&mut self, p: &Param, good: &[&Trial], bad: &[&Trial]) -> Value {
        match &p.kind {
            ParamKind::Choice { values } => {
                let l = Categorical::fit(values, &observed(good, p), self.prior_weight);
                let g = Categorical::fit(values, &observed(bad, p), self.prior_weight);
                let mut best: Option<(usize, f64)> = None;
                for _ in 0..self.n_candidates.max(1) {
                    let c = self.rng.weighted(&l.p);
                    let score = l.p[c].ln() - g.p[c].ln();
                    if best.is_none_or(|(_, s)| score > s) {
                        best = Some((c, score));
                    }
                }
                values[best.expect("at least one candidate").0].clone()
            }
            _ => {
                let d = NumDomain::of(p).expect("numeric parameter");
                let num = |ts: &[&Trial]| -> Vec<(f64, f64)> {
                    observed(ts, p)
                        .into_iter()
                        .filter_map(|(v, w)| d.to_internal(v).map(|x| (x, w)))
                        .collect()
                };
                let (lo_obs, hi_obs) = (num(good), num(bad));
                if lo_obs.is_empty() {
                    return sample_uniform(p, &mut self.rng);
                }
                let l = Parzen::fit(&lo_obs, d.lo, d.hi, self.prior_weight);
                let g = Parzen::fit(&hi_obs, d.lo, d.hi, self.prior_weight);
                let mut best: Option<(f64, f64)> = None;
                for _ in 0..self.n_candidates.max(1) {
                    let x = l.sample(&mut self.rng);
                    let x = if d.int {
                        x.round().clamp(d.lo + 0.5, d.hi - 0.5)
                    } else {
                        x
                    };
                    let score = l.log_pdf(x) - g.log_pdf(x);
                    if best.is_none_or(|(_, s)| score > s) {
                        best = Some((x, score));
                    }
                }
                d.to_value(best.expect("at least one candidate").0, p)
            }
        }
    }
}

impl Sampler for TpeSampler {
    fn ask(&mut self, space: &SearchSpace, history: &[Trial]) -> Config {
        let Some((good, bad)) = self.split(history) else {
            return crate::space::sample_config(space, &mut self.rng);
        };
        space
            .iter()
            .map(|p| (p.name.clone(), self.sample_param(p, &good, &bad)))
            .collect()
    }

    fn name(&self) -> &'static str {
        "tpe"
    }
}

/// Optuna's default trial weights for `n` trials in trial order.
pub fn default_weights(n: usize) -> Vec<f64> {
    if n < 25 {
        return vec![1.0; n];
    }
    let ramp = n - 25;
    let mut w: Vec<f64> = (0..ramp)
        .map(|i| {
            if ramp == 1 {
                1.0 / n as f64
            } else {
                1.0 / n as f64 + (1.0 - 1.0 / n as f64) * i as f64 / (ramp - 1) as f64
            }
        })
        .collect();
    w.extend(std::iter::repeat_n(1.0, 25));
    w
}

/// The trials' values of `p` with their weights (trials lacking the key are skipped).
fn observed<'t>(trials: &[&'t Trial], p: &Param) -> Vec<(&'t Value, f64)> {
    let w = default_weights(trials.len());
    trials
        .iter()
        .zip(w)
        .filter_map(|(t, w)| t.config.get(&p.name).map(|v| (v, w)))
        .collect()
}

/// Smoothed category probabilities.
struct Categorical {
    p: Vec<f64>,
}

impl Categorical {
    fn fit(values: &[Value], obs: &[(&Value, f64)], prior: f64) -> Categorical {
        let k = values.len() as f64;
        let mut p = vec![prior / k; values.len()];
        let mut total = prior;
        for (v, w) in obs {
            if let Some(i) = choice_index(values, v) {
                p[i] += w;
                total += w;
            }
        }
        for x in &mut p {
            *x /= total;
        }
        Categorical { p }
    }
}

/// A mixture of Gaussians truncated to `[lo, hi]`.
#[derive(Debug, Clone)]
pub struct Parzen {
    pub mus: Vec<f64>,
    pub sigmas: Vec<f64>,
    /// Normalised mixture weights.
    pub weights: Vec<f64>,
    /// Per kernel: `ln w − ln σ − ln √(2π) − ln(mass inside [lo, hi])`.
    log_norm: Vec<f64>,
    lo: f64,
    hi: f64,
}

impl Parzen {
    /// One kernel per observation `(x, weight)` plus the prior kernel (last).
    pub fn fit(obs: &[(f64, f64)], lo: f64, hi: f64, prior_weight: f64) -> Parzen {
        let width = hi - lo;
        let prior_mu = 0.5 * (lo + hi);
        let n = obs.len();
        // Optuna's univariate bandwidths: sort the observations with the prior's mean, pad with
        // the bounds, σ = the larger gap to a neighbour; the outermost use their inner gap.
        let mut all: Vec<(f64, usize)> =
            obs.iter().map(|o| o.0).chain([prior_mu]).zip(0..).collect();
        all.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut padded = Vec::with_capacity(all.len() + 2);
        padded.push(lo);
        padded.extend(all.iter().map(|a| a.0));
        padded.push(hi);
        let m = all.len();
        let mut sorted_sigmas: Vec<f64> = (1..=m)
            .map(|j| (padded[j] - padded[j - 1]).max(padded[j + 1] - padded[j]))
            .collect();
        if padded.len() >= 4 {
            sorted_sigmas[0] = padded[2] - padded[1];
            sorted_sigmas[m - 1] = padded[m] - padded[m - 1];
        }
        let n_kernels = n + 1;
        let min_sigma = width / (100f64).min(1.0 + n_kernels as f64);
        let mut sigmas = vec![0.0; m];
        for (s, (_, idx)) in sorted_sigmas.iter().zip(&all) {
            sigmas[*idx] = s.clamp(min_sigma, width);
        }
        sigmas.truncate(n);
        let mut mus: Vec<f64> = obs.iter().map(|o| o.0).collect();
        let mut weights: Vec<f64> = obs.iter().map(|o| o.1).collect();
        mus.push(prior_mu);
        sigmas.push(width);
        weights.push(prior_weight);
        let total: f64 = weights.iter().sum();
        for w in &mut weights {
            *w /= total;
        }
        let log_norm = mus
            .iter()
            .zip(&sigmas)
            .zip(&weights)
            .map(|((mu, s), w)| {
                let mass = normal_cdf((hi - mu) / s) - normal_cdf((lo - mu) / s);
                w.ln() - s.ln() - 0.5 * std::f64::consts::TAU.ln() - mass.max(1e-300).ln()
            })
            .collect();
        Parzen {
            mus,
            sigmas,
            weights,
            log_norm,
            lo,
            hi,
        }
    }

    /// A draw: pick a kernel by weight, then its truncated Gaussian (by rejection).
    pub fn sample(&self, rng: &mut Rng) -> f64 {
        let k = rng.weighted(&self.weights);
        let (mu, sigma) = (self.mus[k], self.sigmas[k]);
        for _ in 0..100 {
            let x = mu + sigma * rng.normal();
            if (self.lo..=self.hi).contains(&x) {
                return x;
            }
        }
        mu.clamp(self.lo, self.hi)
    }

    /// Log density at `x`.
    pub fn log_pdf(&self, x: f64) -> f64 {
        let terms: Vec<f64> = self
            .mus
            .iter()
            .zip(&self.sigmas)
            .zip(&self.log_norm)
            .map(|((mu, s), c)| {
                let z = (x - mu) / s;
                c - 0.5 * z * z
            })
            .collect();
        log_sum_exp(&terms)
    }
}

fn log_sum_exp(xs: &[f64]) -> f64 {
    let m = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if !m.is_finite() {
        return m;
    }
    m + xs.iter().map(|x| (x - m).exp()).sum::<f64>().ln()
}

/// Complementary error function (Numerical Recipes' `erfcc`, fractional error < 1.2e-7).
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let r = t
        * (-z * z - 1.265_512_23
            + t * (1.000_023_68
                + t * (0.374_091_96
                    + t * (0.096_784_18
                        + t * (-0.186_288_06
                            + t * (0.278_868_07
                                + t * (-1.135_203_98
                                    + t * (1.488_515_87
                                        + t * (-0.822_152_23 + t * 0.170_872_77)))))))))
            .exp();
    if x >= 0.0 { r } else { 2.0 - r }
}

/// Standard normal CDF.
pub fn normal_cdf(x: f64) -> f64 {
    0.5 * erfc(-x / std::f64::consts::SQRT_2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normal_cdf_matches_known_values() {
        for (x, want) in [
            (0.0, 0.5),
            (1.0, 0.841_344_746_068_542_9),
            (-1.96, 0.024_997_895_148_220_435),
            (3.0, 0.998_650_101_968_369_9),
        ] {
            assert!(
                (normal_cdf(x) - want).abs() < 1e-7,
                "Φ({x}) = {}",
                normal_cdf(x)
            );
        }
    }

    #[test]
    fn parzen_bandwidths_follow_optuna() {
        // Observations 0.2 and 0.9 in [0, 1]; prior at 0.5. Sorted with bounds: 0, .2, .5, .9, 1.
        // σ(.2) = inner gap .3 (first); σ(.5) = max(.3, .4); σ(.9) = inner gap .4 (last).
        // Clip: [1 / min(100, 1 + 3), 1] = [0.25, 1].
        let p = Parzen::fit(&[(0.2, 1.0), (0.9, 1.0)], 0.0, 1.0, 1.0);
        assert_eq!(p.mus, vec![0.2, 0.9, 0.5]);
        let want = [0.3, 0.4, 1.0];
        for (s, w) in p.sigmas.iter().zip(want) {
            assert!((s - w).abs() < 1e-12, "{:?}", p.sigmas);
        }
        assert!(p.weights.iter().all(|w| (w - 1.0 / 3.0).abs() < 1e-12));
        // The density integrates to 1 over the domain.
        let n = 10_000;
        let integral: f64 = (0..n)
            .map(|i| p.log_pdf((i as f64 + 0.5) / n as f64).exp() / n as f64)
            .sum();
        assert!((integral - 1.0).abs() < 1e-3, "{integral}");
        let mut rng = Rng::new(1);
        for _ in 0..1000 {
            assert!((0.0..=1.0).contains(&p.sample(&mut rng)));
        }
    }

    #[test]
    fn weights_ramp_after_25() {
        assert_eq!(default_weights(3), vec![1.0; 3]);
        let w = default_weights(30);
        assert_eq!(w.len(), 30);
        assert!((w[0] - 1.0 / 30.0).abs() < 1e-12);
        assert!((w[4] - 1.0).abs() < 1e-12);
        assert!(w[25..].iter().all(|x| *x == 1.0));
    }
}
