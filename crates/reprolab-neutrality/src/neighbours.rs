//! The neighbours of a config in the neutrality BFS: every config that differs in exactly one
//! hyperparameter, over the parameters whose fault type is one of the study's neutrality
//! operators.
//!
//! Values tried for the changed hyperparameter:
//! * a `choice`: every other value, in the order of the space (batch sizes and epoch lists of
//!   the bundled subjects are choices, so they move to every listed value);
//! * an `int`: `x/2`, `x/1.5`, `x·1.5`, `x·2` rounded (a step that rounds back to `x` moves by
//!   one instead), clamped to the bounds;
//! * a `log-float`, or a `float` spanning more than 3 decades (lr in `[1e-6, 10]`): the
//!   half-decade grid `{1, 3.16} × 10^n`, the two grid points below and the two above the
//!   current value (from 0.001: 0.0001, 0.000316, 0.00316, 0.01 — lr ÷ 10, ÷ √10, × √10,
//!   × 10). Snapping to a grid keeps repeated moves on the same values, so configs reached by
//!   different paths are recognised as the same (and shared through the evaluation cache);
//! * another `float`: ± 1/10 and ± 2/10 of its range, clamped.

use reprolab_core::{Config, FaultLabel, FaultType, Param, ParamKind, SearchSpace};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use reprolab_core::normalize_type;
use reprolab_search::space::{LOG_SPAN, float_value, round_sig, same_value};

/// The study's neutrality operators (its §4.1): HBS, HLR, HNE, LRM, LAD, LCN, ACH, BCI, WCI,
/// LCH, OCH.
pub const STUDY_OPERATORS: [FaultType; 11] = [
    FaultType::HBS,
    FaultType::HLR,
    FaultType::HNE,
    FaultType::LRM,
    FaultType::LAD,
    FaultType::LCN,
    FaultType::ACH,
    FaultType::BCI,
    FaultType::WCI,
    FaultType::LCH,
    FaultType::OCH,
];

/// One hyperparameter changed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Move {
    pub key: String,
    pub from: Value,
    pub to: Value,
    /// The fault label of the parameter (`ACH(1)`), when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<FaultLabel>,
}

/// A value for humans: strings without their JSON quotes (`relu`), anything else as JSON.
pub fn plain(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

impl std::fmt::Display for Move {
    /// `act0: relu -> tanh`
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: {} -> {}",
            self.key,
            plain(&self.from),
            plain(&self.to)
        )
    }
}

/// Whether the parameter takes part: its fault type (ARM and AAL counting as ACH, LRM as LAD)
/// is one of `operators`.
pub fn mutable(param: &Param, operators: &[FaultType]) -> bool {
    param.fault.is_some_and(|f| {
        operators
            .iter()
            .any(|o| normalize_type(*o) == normalize_type(f))
    })
}

/// Every one-hyperparameter move from `config`, in space order, then value order.
/// Parameters missing from `config` are skipped.
pub fn neighbours(space: &SearchSpace, config: &Config, operators: &[FaultType]) -> Vec<Move> {
    let mut out = Vec::new();
    for p in space.iter().filter(|p| mutable(p, operators)) {
        let Some(current) = config.get(&p.name) else {
            continue;
        };
        for to in values_to_try(p, current) {
            out.push(Move {
                key: p.name.clone(),
                from: current.clone(),
                to,
                label: p.label(),
            });
        }
    }
    out
}

/// The values a neighbour may give `param` when it now holds `current` (see the module doc).
pub fn values_to_try(param: &Param, current: &Value) -> Vec<Value> {
    let mut out: Vec<Value> = match &param.kind {
        ParamKind::Choice { values } => values.clone(),
        ParamKind::Int { low, high } => match current.as_i64() {
            Some(x) => int_steps(x, *low, *high)
                .into_iter()
                .map(Value::from)
                .collect(),
            None => Vec::new(),
        },
        ParamKind::Float { low, high } | ParamKind::LogFloat { low, high } => {
            let log = matches!(param.kind, ParamKind::LogFloat { .. })
                || (*low > 0.0 && *high / *low > LOG_SPAN);
            match current.as_f64().filter(|x| x.is_finite()) {
                Some(x) if log && x > 0.0 => half_decades(x, *low, *high)
                    .into_iter()
                    .map(|v| float_value(v, *low, *high))
                    .collect(),
                Some(x) => linear_steps(x, *low, *high)
                    .into_iter()
                    .map(|v| float_value(v, *low, *high))
                    .collect(),
                None => Vec::new(),
            }
        }
    };
    // Never the current value, never twice the same value.
    let mut unique: Vec<Value> = Vec::new();
    for v in out.drain(..) {
        if !same_value(&v, current) && !unique.iter().any(|u| same_value(u, &v)) {
            unique.push(v);
        }
    }
    unique
}

/// `x/2, x/1.5, x·1.5, x·2` rounded, each at least one away from `x`, within `[low, high]`.
fn int_steps(x: i64, low: i64, high: i64) -> Vec<i64> {
    let xf = x as f64;
    let down = |f: f64| ((xf / f).round() as i64).min(x - 1);
    let up = |f: f64| ((xf * f).round() as i64).max(x + 1);
    let mut out = vec![down(2.0), down(1.5), up(1.5), up(2.0)];
    out.retain(|v| (low..=high).contains(v));
    out.sort_unstable();
    out.dedup();
    out
}

/// The half-decade grid `round_sig(10^(j/2), 3)` within `[low, high]`: the two points below
/// `x` and the two above it, ascending.
fn half_decades(x: f64, low: f64, high: f64) -> Vec<f64> {
    // The tolerance keeps bounds that are grid points (1e-6, 10) despite log10 rounding.
    let lo = (2.0 * low.log10() - 1e-9).ceil() as i64;
    let hi = (2.0 * high.log10() + 1e-9).floor() as i64;
    let grid: Vec<f64> = (lo..=hi)
        .map(|j| round_sig(10f64.powf(j as f64 / 2.0), 3))
        .filter(|v| (low..=high).contains(v))
        .collect();
    // Relative tolerance: 0.00316 is "at" 10^-2.5 when the config holds it.
    let below: Vec<f64> = grid.iter().copied().filter(|v| *v < x * 0.999).collect();
    let above: Vec<f64> = grid.iter().copied().filter(|v| *v > x * 1.001).collect();
    let mut out: Vec<f64> = below.iter().rev().take(2).rev().copied().collect();
    out.extend(above.iter().take(2));
    out
}

/// `x ± w/10, x ± w/5` with `w = high − low`, clamped.
fn linear_steps(x: f64, low: f64, high: f64) -> Vec<f64> {
    let w = high - low;
    [-0.2, -0.1, 0.1, 0.2]
        .iter()
        .map(|f| round_sig((x + f * w).clamp(low, high), 4))
        .collect()
}

/// `config` with one move applied.
pub fn apply(config: &Config, mv: &Move) -> Config {
    let mut c = config.clone();
    c.insert(mv.key.clone(), mv.to.clone());
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn param(name: &str, kind: ParamKind, fault: Option<FaultType>) -> Param {
        Param {
            name: name.into(),
            kind,
            fault,
            layer: None,
        }
    }

    #[test]
    fn lr_moves_on_the_half_decade_grid() {
        let lr = param(
            "lr",
            ParamKind::Float {
                low: 1e-6,
                high: 10.0,
            },
            Some(FaultType::HLR),
        );
        assert_eq!(
            values_to_try(&lr, &json!(0.001)),
            vec![json!(0.0001), json!(0.000316), json!(0.00316), json!(0.01)]
        );
        // Repeated moves stay on the grid: from 0.00316 up is exactly 0.01.
        assert_eq!(
            values_to_try(&lr, &json!(0.00316)),
            vec![json!(0.000316), json!(0.001), json!(0.01), json!(0.0316)]
        );
        // An off-grid value moves to its nearest grid points.
        assert_eq!(
            values_to_try(&lr, &json!(0.000178)),
            vec![
                json!(0.0000316),
                json!(0.0001),
                json!(0.000316),
                json!(0.001)
            ]
        );
        // At the bounds, fewer moves.
        assert_eq!(
            values_to_try(&lr, &json!(10.0)),
            vec![json!(1.0), json!(3.16)]
        );
        assert_eq!(
            values_to_try(&lr, &json!(1e-6)),
            vec![json!(3.16e-6), json!(1e-5)]
        );
    }

    #[test]
    fn ints_scale_by_one_and_a_half_and_two() {
        let e = param(
            "epochs",
            ParamKind::Int { low: 1, high: 100 },
            Some(FaultType::HNE),
        );
        assert_eq!(
            values_to_try(&e, &json!(30)),
            vec![json!(15), json!(20), json!(45), json!(60)]
        );
        assert_eq!(
            values_to_try(&e, &json!(1)),
            vec![json!(2)],
            "small values move by one"
        );
        assert_eq!(
            values_to_try(&e, &json!(80)),
            vec![json!(40), json!(53)],
            "bounded"
        );
    }

    #[test]
    fn narrow_floats_move_by_tenths_of_their_range() {
        let d = param(
            "dropout",
            ParamKind::Float {
                low: 0.0,
                high: 0.5,
            },
            Some(FaultType::HLR),
        );
        assert_eq!(
            values_to_try(&d, &json!(0.2)),
            vec![json!(0.1), json!(0.15), json!(0.25), json!(0.3)]
        );
        assert_eq!(
            values_to_try(&d, &json!(0.0)),
            vec![json!(0.05), json!(0.1)]
        );
    }

    #[test]
    fn neighbours_change_one_study_parameter_to_every_other_value() {
        let space = SearchSpace {
            params: vec![
                Param {
                    name: "act1".into(),
                    kind: ParamKind::Choice {
                        values: vec![json!("relu"), json!("tanh"), json!("linear")],
                    },
                    fault: Some(FaultType::ARM),
                    layer: Some(1),
                },
                param(
                    "kernel",
                    ParamKind::Choice {
                        values: vec![json!(2), json!(3)],
                    },
                    Some(FaultType::LCF),
                ),
                param(
                    "batch_size",
                    ParamKind::Choice {
                        values: vec![json!(16), json!(32), json!(64)],
                    },
                    Some(FaultType::HBS),
                ),
                param(
                    "untyped",
                    ParamKind::Choice {
                        values: vec![json!(0), json!(1)],
                    },
                    None,
                ),
            ],
        };
        let config: Config = serde_json::from_value(
            json!({"act1": "relu", "kernel": 3, "batch_size": 32, "untyped": 0}),
        )
        .unwrap();
        let moves = neighbours(&space, &config, &STUDY_OPERATORS);
        let shown: Vec<String> = moves.iter().map(|m| m.to_string()).collect();
        assert_eq!(
            shown,
            vec![
                "act1: relu -> tanh",
                "act1: relu -> linear",
                "batch_size: 32 -> 16",
                "batch_size: 32 -> 64",
            ],
            "LCF and unlabelled parameters are not neutrality operators; ARM counts as ACH"
        );
        assert_eq!(moves[0].label.as_ref().unwrap().to_string(), "ARM(1)");
        let next = apply(&config, &moves[2]);
        assert_eq!(next.get("batch_size"), Some(&json!(16)));
        assert_eq!(next.len(), config.len());
    }
}
