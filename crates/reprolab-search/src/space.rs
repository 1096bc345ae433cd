//! Sampling one hyperparameter of a search space, the numeric transforms the TPE works in, and
//! configs as patches: applying a patch, diffing two configs.

use reprolab_core::{Config, Param, ParamKind, SearchSpace};
use serde_json::Value;

use reprolab_rng::Rng;

/// Significant digits kept by sampled floats (readable patches; 0.05% resolution).
pub const FLOAT_DIGITS: i32 = 4;

/// The config key holding the number of epochs a training runs (BOHB's default fidelity, the
/// pruner's warm-up).
pub const EPOCHS_KEY: &str = "epochs";

/// A positive integer count at `key` of `config` (`12`, or `12.0`), such as its epochs.
pub fn count_at(config: &Config, key: &str) -> Option<u64> {
    match config.get(key)? {
        Value::Number(n) => n.as_u64().or_else(|| {
            n.as_f64()
                .filter(|x| x.fract() == 0.0 && *x >= 1.0)
                .map(|x| x as u64)
        }),
        _ => None,
    }
    .filter(|e| *e >= 1)
}

/// `x` rounded to `digits` significant digits.
pub fn round_sig(x: f64, digits: i32) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    let scale = 10f64.powi(digits - 1 - x.abs().log10().floor() as i32);
    let r = (x * scale).round() / scale;
    if r.is_finite() { r } else { x }
}

/// A float as a JSON number, rounded to [`FLOAT_DIGITS`] and clamped to `[low, high]`.
pub fn float_value(x: f64, low: f64, high: f64) -> Value {
    let r = round_sig(x, FLOAT_DIGITS).clamp(low, high);
    serde_json::Number::from_f64(r).map_or(Value::Null, Value::Number)
}

/// A uniform draw from the parameter's domain: a choice uniformly, an integer uniformly, a
/// `float` uniformly (the study's `lr ~ uniform(1e-6, 10)`), a `log-float` log-uniformly.
pub fn sample_uniform(param: &Param, rng: &mut Rng) -> Value {
    match &param.kind {
        ParamKind::Choice { values } => values[rng.below(values.len())].clone(),
        ParamKind::Int { low, high } => Value::from(rng.int(*low, *high)),
        ParamKind::Float { low, high } => float_value(rng.uniform(*low, *high), *low, *high),
        ParamKind::LogFloat { low, high } => {
            let x = rng.uniform(low.ln(), high.ln()).exp();
            float_value(x, *low, *high)
        }
    }
}

/// A config with a uniform draw for every parameter of the space, in space order.
pub fn sample_config(space: &SearchSpace, rng: &mut Rng) -> Config {
    space
        .iter()
        .map(|p| (p.name.clone(), sample_uniform(p, rng)))
        .collect()
}

/// A draw uniform in the scale the TPE models the parameter in ([`NumDomain`]): log-uniform
/// for a `float` spanning more than [`LOG_SPAN`] (the study's `lr` in `[1e-6, 10]`), as
/// [`sample_uniform`] otherwise. BOHB's random and local proposals draw from it; the random
/// baseline draws such a float uniformly, as the study did (90% of its draws then
/// exceed 1), and so do TPE's startup trials (an ablation with this prior there changed nothing
/// measurable: `examples/tpe_bench.rs`).
pub fn sample_scaled(param: &Param, rng: &mut Rng) -> Value {
    match NumDomain::of(param) {
        Some(d) if d.log && !d.int => d.to_value(rng.uniform(d.lo, d.hi), param),
        _ => sample_uniform(param, rng),
    }
}

/// A config with a [`sample_scaled`] draw for every parameter of the space, in space order.
pub fn sample_config_scaled(space: &SearchSpace, rng: &mut Rng) -> Config {
    space
        .iter()
        .map(|p| (p.name.clone(), sample_scaled(p, rng)))
        .collect()
}

/// `faulty`'s values for every parameter of the space, with a few of them redrawn with
/// [`sample_scaled`]: one, plus one more with probability `1 - 1/mean_changes` each time (a
/// geometric number with mean `mean_changes`, at most every parameter). A fault is usually one or two bad
/// hyperparameters, so candidates near the faulty config keep what was right in it, where a
/// uniform draw redraws everything (the study's search patches changed 80-90% of them).
pub fn perturb_config(
    faulty: &Config,
    space: &SearchSpace,
    rng: &mut Rng,
    mean_changes: f64,
) -> Config {
    perturb_config_weighted(faulty, space, rng, mean_changes, &[])
}

/// [`perturb_config`] with the redrawn parameters picked with probability proportional to
/// `weights` (by name; a parameter not named weighs 1, and one of weight 0 or less is never
/// redrawn unless nothing else can be): a prior over which hyperparameters are at fault.
pub fn perturb_config_weighted(
    faulty: &Config,
    space: &SearchSpace,
    rng: &mut Rng,
    mean_changes: f64,
    weights: &[(String, f64)],
) -> Config {
    let n = space.params.len();
    let mut k = 1;
    let go_on = 1.0 - 1.0 / mean_changes.max(1.0);
    while k < n && rng.f64() < go_on {
        k += 1;
    }
    let weight = |i: usize| {
        weights
            .iter()
            .find(|(name, _)| *name == space.params[i].name)
            .map_or(1.0, |(_, w)| w.max(0.0))
    };
    let mut order: Vec<usize> = (0..n).collect();
    let redraw: Vec<usize> = if weights.is_empty() {
        // A partial Fisher-Yates shuffle picks k distinct parameters.
        for i in 0..k.min(n) {
            let j = i + rng.below(n - i);
            order.swap(i, j);
        }
        order[..k.min(n)].to_vec()
    } else {
        // k distinct parameters, each drawn in proportion to its weight among those left.
        let mut picked = Vec::new();
        while picked.len() < k.min(n) {
            let total: f64 = order.iter().map(|&i| weight(i)).sum();
            let at = if total > 0.0 {
                let mut x = rng.f64() * total;
                order
                    .iter()
                    .position(|&i| {
                        x -= weight(i);
                        x < 0.0
                    })
                    .unwrap_or(order.len() - 1)
            } else {
                rng.below(order.len())
            };
            picked.push(order.swap_remove(at));
        }
        picked
    };
    space
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let current = faulty.get(&p.name);
            let value = match current {
                Some(v) if !redraw.contains(&i) => v.clone(),
                // A redrawn value differs from the faulty one where the domain allows it.
                _ => (0..8)
                    .map(|_| sample_scaled(p, rng))
                    .find(|v| !current.is_some_and(|c| same_value(c, v)))
                    .unwrap_or_else(|| sample_scaled(p, rng)),
            };
            (p.name.clone(), value)
        })
        .collect()
}

/// How the TPE sees a numeric parameter: an interval in its working scale.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NumDomain {
    /// Bounds in the working scale (log for `log`; ±0.5 around the integer bounds for `int`).
    pub lo: f64,
    pub hi: f64,
    /// Works on `ln(x)`: `log-float`, and `float` spanning more than 3 decades (`lr` in
    /// `[1e-6, 10]`).
    pub log: bool,
    /// Rounds back to an integer.
    pub int: bool,
}

/// Floats whose `high / low` exceeds this are modelled in log space by the TPE.
pub const LOG_SPAN: f64 = 1e3;

impl NumDomain {
    /// The numeric domain of an `int`, `float` or `log-float` parameter; `None` for choices.
    pub fn of(param: &Param) -> Option<NumDomain> {
        match &param.kind {
            ParamKind::Choice { .. } => None,
            ParamKind::Int { low, high } => Some(NumDomain {
                lo: *low as f64 - 0.5,
                hi: *high as f64 + 0.5,
                log: false,
                int: true,
            }),
            ParamKind::Float { low, high } => {
                let log = *low > 0.0 && *high / *low > LOG_SPAN;
                Some(if log {
                    NumDomain {
                        lo: low.ln(),
                        hi: high.ln(),
                        log,
                        int: false,
                    }
                } else {
                    NumDomain {
                        lo: *low,
                        hi: *high,
                        log,
                        int: false,
                    }
                })
            }
            ParamKind::LogFloat { low, high } => Some(NumDomain {
                lo: low.ln(),
                hi: high.ln(),
                log: true,
                int: false,
            }),
        }
    }

    /// A config value in the working scale (`None` when not a usable number).
    pub fn to_internal(&self, v: &Value) -> Option<f64> {
        let x = v.as_f64()?;
        let y = if self.log {
            if x > 0.0 { x.ln() } else { return None }
        } else {
            x
        };
        y.is_finite().then_some(y.clamp(self.lo, self.hi))
    }

    /// A working-scale point back as a config value of `param`, inside its domain.
    pub fn to_value(&self, y: f64, param: &Param) -> Value {
        match &param.kind {
            ParamKind::Int { low, high } => Value::from((y.round() as i64).clamp(*low, *high)),
            ParamKind::Float { low, high } | ParamKind::LogFloat { low, high } => {
                let x = if self.log { y.exp() } else { y };
                float_value(x, *low, *high)
            }
            ParamKind::Choice { .. } => unreachable!("choices have no numeric domain"),
        }
    }
}

/// Whether two config values are the same hyperparameter value: numbers by value (`1` and
/// `1.0` are the same learning rate), anything else by JSON equality.
pub fn same_value(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) if a.is_number() && b.is_number() => x == y,
        _ => a == b,
    }
}

/// The index of `v` among a choice's values.
pub fn choice_index(values: &[Value], v: &Value) -> Option<usize> {
    values
        .iter()
        .position(|c| c == v)
        .or_else(|| values.iter().position(|c| same_value(c, v)))
}

/// The hyperparameters a patch changes: `(key, faulty value, patched value)`, keys of `faulty`
/// in its order, then keys only in `patch`. A key missing on one side shows as `null` there.
/// Numbers compare by value (`1` and `1.0` are no change).
pub fn patch_diff(faulty: &Config, patch: &Config) -> Vec<(String, Value, Value)> {
    let mut out = Vec::new();
    for (k, v) in faulty.iter() {
        match patch.get(k) {
            Some(w) if same_value(v, w) => {}
            w => out.push((k.clone(), v.clone(), w.cloned().unwrap_or(Value::Null))),
        }
    }
    for (k, w) in patch.iter() {
        if !faulty.contains_key(k) {
            out.push((k.clone(), Value::Null, w.clone()));
        }
    }
    out
}

/// `faulty` with the values of `patch` set: keys of `faulty` keep their order, keys only in
/// `patch` go last. A partial patch (just the changed keys) gives the full patched config.
pub fn apply_patch(faulty: &Config, patch: &Config) -> Config {
    let mut out = faulty.clone();
    for (k, v) in patch.iter() {
        out.insert(k.clone(), v.clone());
    }
    out
}

/// Number of keys whose values differ between `a` and `b` (see [`patch_diff`]).
pub fn changed_count(a: &Config, b: &Config) -> usize {
    patch_diff(a, b).len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn p(kind: ParamKind) -> Param {
        Param {
            name: "x".into(),
            kind,
            fault: None,
            layer: None,
        }
    }

    #[test]
    fn rounding_keeps_four_digits() {
        assert_eq!(round_sig(0.000123456, 4), 0.0001235);
        assert_eq!(round_sig(9.99996, 4), 10.0);
        assert_eq!(round_sig(-1234.5, 2), -1200.0);
        assert_eq!(round_sig(0.0, 4), 0.0);
        assert_eq!(
            float_value(1.0000004e-6, 1.0000003e-6, 10.0),
            json!(1.0000003e-6)
        );
    }

    #[test]
    fn domains_and_transforms() {
        let lr = p(ParamKind::Float {
            low: 1e-6,
            high: 10.0,
        });
        let d = NumDomain::of(&lr).unwrap();
        assert!(d.log && !d.int);
        let y = d.to_internal(&json!(0.001)).unwrap();
        assert!((y - 0.001f64.ln()).abs() < 1e-12);
        assert_eq!(d.to_value(y, &lr), json!(0.001));
        let narrow = p(ParamKind::Float {
            low: 0.1,
            high: 0.9,
        });
        assert!(!NumDomain::of(&narrow).unwrap().log);
        let int = p(ParamKind::Int { low: 0, high: 2 });
        let d = NumDomain::of(&int).unwrap();
        assert_eq!((d.lo, d.hi), (-0.5, 2.5));
        assert_eq!(d.to_value(2.49, &int), json!(2));
        assert_eq!(d.to_value(7.0, &int), json!(2));
        assert!(
            NumDomain::of(&p(ParamKind::Choice {
                values: vec![json!(1)]
            }))
            .is_none()
        );
    }

    #[test]
    fn scaled_draws_are_log_uniform_for_wide_floats() {
        let lr = p(ParamKind::Float {
            low: 1e-6,
            high: 10.0,
        });
        let mut rng = Rng::new(3);
        let below_1e2 = (0..4000)
            .filter(|_| sample_scaled(&lr, &mut rng).as_f64().unwrap() < 0.01)
            .count() as f64
            / 4000.0;
        // log10 spans 7 decades, 4 of them below 0.01.
        assert!((below_1e2 - 4.0 / 7.0).abs() < 0.03, "{below_1e2}");
        let narrow = p(ParamKind::Float {
            low: 0.0,
            high: 1.0,
        });
        let mean = (0..4000)
            .map(|_| sample_scaled(&narrow, &mut rng).as_f64().unwrap())
            .sum::<f64>()
            / 4000.0;
        assert!((mean - 0.5).abs() < 0.02);
    }

    #[test]
    fn perturbations_keep_most_of_the_faulty_config() {
        let space = SearchSpace {
            params: (0..10)
                .map(|i| Param {
                    name: format!("p{i}"),
                    ..p(ParamKind::Choice {
                        values: vec![json!(0), json!(1), json!(2)],
                    })
                })
                .collect(),
        };
        let faulty: Config = space.iter().map(|p| (p.name.clone(), json!(0))).collect();
        let mut rng = Rng::new(7);
        let changed: Vec<usize> = (0..2000)
            .map(|_| {
                let c = perturb_config(&faulty, &space, &mut rng, 2.0);
                assert_eq!(c.len(), 10);
                changed_count(&faulty, &c)
            })
            .collect();
        assert!(changed.iter().all(|&k| (1..=10).contains(&k)));
        let mean = changed.iter().sum::<usize>() as f64 / changed.len() as f64;
        assert!((mean - 2.0).abs() < 0.15, "mean changes {mean}");
        // mean_changes 1: exactly one parameter, never the faulty value again.
        for _ in 0..200 {
            assert_eq!(
                changed_count(&faulty, &perturb_config(&faulty, &space, &mut rng, 1.0)),
                1
            );
        }
    }

    #[test]
    fn a_prior_picks_the_suspected_parameter_in_proportion() {
        let space = SearchSpace {
            params: (0..10)
                .map(|i| Param {
                    name: format!("p{i}"),
                    ..p(ParamKind::Choice {
                        values: vec![json!(0), json!(1)],
                    })
                })
                .collect(),
        };
        let faulty: Config = space.iter().map(|p| (p.name.clone(), json!(0))).collect();
        let mut rng = Rng::new(11);
        // p3 weighs 9 against 1 for each of the other nine: half of the one-change proposals.
        let prior = vec![("p3".to_string(), 9.0), ("p5".to_string(), 0.0)];
        let (mut p3, mut p5) = (0, 0);
        for _ in 0..4000 {
            let c = perturb_config_weighted(&faulty, &space, &mut rng, 1.0, &prior);
            // (at most one: a two-valued redraw keeps the faulty value once in 2^8 draws)
            assert!(changed_count(&faulty, &c) <= 1);
            p3 += usize::from(c.get("p3") == Some(&json!(1)));
            p5 += usize::from(c.get("p5") == Some(&json!(1)));
        }
        assert!(
            (p3 as f64 / 4000.0 - 0.5).abs() < 0.03,
            "p3 redrawn {p3} times"
        );
        assert_eq!(p5, 0, "a weight of 0 is never redrawn");
        // Without a prior: the same draws as perturb_config.
        let (mut a, mut b) = (Rng::new(3), Rng::new(3));
        for _ in 0..50 {
            assert_eq!(
                perturb_config(&faulty, &space, &mut a, 2.0),
                perturb_config_weighted(&faulty, &space, &mut b, 2.0, &[])
            );
        }
    }

    #[test]
    fn values_compare_by_number() {
        assert!(same_value(&json!(1), &json!(1.0)));
        assert!(!same_value(&json!("1"), &json!(1)));
        assert_eq!(choice_index(&[json!(16), json!(32)], &json!(32.0)), Some(1));
        let faulty: Config = serde_json::from_value(json!({"a": 1, "b": "x"})).unwrap();
        let patch: Config = serde_json::from_value(json!({"b": "y"})).unwrap();
        let full = apply_patch(&faulty, &patch);
        assert_eq!(full.to_string(), r#"{"a":1,"b":"y"}"#);
        assert_eq!(changed_count(&faulty, &full), 1);
    }
}
