//! AutoTrainer-style rule-based repair (reference §8): trace the faulty config, detect its
//! symptoms ([`reprolab_core::symptoms`]), and try AutoTrainer's fixes in its order, mapped onto the
//! subject's search space. A fix whose parameter or value is not in the space is skipped with a
//! note (batch normalisation, gradient clipping, momentum, … are not hyperparameters of the
//! study's configs).
//!
//! Unlike AutoTrainer, which keeps training the already-trained model, every fix is validated
//! by retraining FROM SCRATCH: one training on the search split, kept only if better than the
//! best config so far (which starts as the faulty one). From an accepted fix the config is
//! traced again and the search continues greedily from it, until the budget is spent, no
//! symptom remains, or no fix of any remaining symptom helps. Each trace is charged to a time
//! budget as one training of the traced config (its measured duration).
//!
//! A fix is accepted on ONE training, which cannot tell a repair from noise. So when no symptom
//! is left, the engine stops as `repaired` only if repeated trainings confirm the gain: the
//! best config and the faulty config trained `confirm_runs` times each (seeds `0..runs`) on the
//! search split, paired Wilcoxon p < 0.05 and |d| ≥ 0.5 in the goal's direction (the study's
//! rule, as validation); otherwise it stops as `unconfirmed`. These are the trainings that
//! validation repeats on the holdout split (one training reports both splits), so with the
//! binary's cache they cost nothing more, and they are not charged to the search budget.

use std::collections::BTreeSet;

use reprolab_core::{Config, FaultType, Param, ParamKind, SearchSpace, Split, Subject};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use reprolab_core::symptoms::{Symptom, SymptomKind, Thresholds, detect_for, parse_trace};
use reprolab_search::space::{float_value, round_sig, same_value};
use reprolab_search::{Objective, SearchResult, SearchSettings, Stop, Study, Trial};

use crate::RepairError;
use crate::validate::{Group, compare, significantly};
use reprolab_search::join::join_all;

/// One fix that was trained.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Attempt {
    /// The symptom it addresses (`vanishing_gradient`, …).
    pub symptom: String,
    /// What it changes, e.g. `act0=selu, act1=selu`.
    pub fix: String,
    pub trial: Trial,
    /// Whether it beat the best config so far and was kept.
    pub accepted: bool,
}

/// What the rules engine did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RulesResult {
    /// The faulty config's symptoms, in the order they are treated.
    pub symptoms: Vec<Symptom>,
    /// The symptoms of the last trace (of the best config); empty when repaired.
    pub remaining: Vec<Symptom>,
    pub attempts: Vec<Attempt>,
    /// Fixes skipped (not in the space, no change, already tried) and other remarks.
    pub notes: Vec<String>,
    /// The trials (faulty first, then every attempt) with engine `rules`.
    pub result: SearchResult,
    /// The faulty config's trace shows no symptom at all (nothing was tried).
    pub no_symptom: bool,
    /// The repeated trainings that decided `repaired` or `unconfirmed` when no symptom was
    /// left; `None` when the engine stopped otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmation: Option<Confirmation>,
}

/// The best config against the faulty config on the search split, `runs` trainings each.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Confirmation {
    pub runs: usize,
    #[serde(with = "reprolab_core::fnum::float")]
    pub faulty_mean: f64,
    #[serde(with = "reprolab_core::fnum::float")]
    pub best_mean: f64,
    /// Wilcoxon signed-rank p, paired by seed (1 without a non-zero difference).
    #[serde(with = "reprolab_core::fnum::float")]
    pub p_value: f64,
    /// Cohen's d(best, faulty).
    #[serde(with = "reprolab_core::fnum::float")]
    pub cohens_d: f64,
    /// p < 0.05, |d| ≥ 0.5 and the best config better.
    pub significant: bool,
}

/// The rules engine's settings beyond the search's.
#[derive(Debug, Clone, PartialEq)]
pub struct RulesOptions {
    /// Trainings per config that confirm a repair when no symptom is left (at least 6 can
    /// reach p < 0.05 with the exact Wilcoxon test; the study uses 10).
    pub confirm_runs: usize,
}

impl Default for RulesOptions {
    fn default() -> Self {
        RulesOptions { confirm_runs: 10 }
    }
}

/// Trains `best` and the faulty config `runs` times each on the search split and compares
/// them (see the module documentation).
async fn confirm<O: Objective>(
    obj: &O,
    subject: &Subject,
    best: &Config,
    runs: usize,
) -> Result<Confirmation, RepairError> {
    let seeds: Vec<u64> = (0..runs as u64).collect();
    let results = join_all(vec![
        obj.evaluate(&subject.config, &seeds, Split::Search, None),
        obj.evaluate(best, &seeds, Split::Search, None),
    ])
    .await;
    let mut groups = Vec::new();
    for r in results {
        groups.push(Group::from_runs(&r.map_err(RepairError::Objective)?));
    }
    let (fg, bg) = (&groups[0], &groups[1]);
    let (p, d) = compare(fg, bg);
    Ok(Confirmation {
        runs,
        faulty_mean: fg.mean,
        best_mean: bg.mean,
        p_value: p,
        cohens_d: d,
        significant: significantly(p, d, subject.metric.goal, true),
    })
}

/// A concrete fix: a description and the values it sets.
#[derive(Debug, Clone, PartialEq)]
pub struct Fix {
    pub description: String,
    pub changes: Vec<(String, Value)>,
}

/// How a fix is expressed before it meets the space and the current config.
#[derive(Debug, Clone, PartialEq)]
enum Step {
    /// Set the activation of every hidden layer.
    HiddenAct(&'static str),
    /// Set the kernel initialiser of every layer.
    Init(&'static str),
    Optimizer(&'static str),
    /// Multiply the learning rate.
    LrTimes(f64),
    /// The learning rate for the current optimiser: `sgd` gets `sgd`, others `other`.
    LrFor {
        sgd: f64,
        other: f64,
    },
    BatchSize(i64),
    /// Multiply the number of epochs (rounded, at most the space's largest).
    EpochsTimes(f64),
    /// The output layer's activation that the loss expects (softmax for a categorical
    /// cross-entropy, sigmoid for a binary one, linear for a regression loss).
    OutputForLoss,
    /// The loss the output layer's activation expects (categorical cross-entropy for softmax,
    /// binary for sigmoid): the other direction of [`Step::OutputForLoss`].
    LossForOutput,
    /// A fix AutoTrainer applies that is no hyperparameter of a config.
    Unavailable(&'static str),
}

/// AutoTrainer's repair order per symptom (reference §8), and the study's fault types for the
/// symptoms AutoTrainer does not treat (an output without gradient, a loss still falling).
fn steps(kind: SymptomKind) -> Vec<Step> {
    use Step::*;
    match kind {
        // Steps so large they broke the network: the optimizer's usual rate, then smaller ones.
        SymptomKind::Diverged => vec![
            LrFor {
                sgd: 0.01,
                other: 0.001,
            },
            LrTimes(0.1),
            LrTimes(0.01),
            LrTimes(0.001),
        ],
        // A constant output passes no gradient: its activation does not fit the loss.
        SymptomKind::NoGradient => vec![OutputForLoss, LrTimes(10.0)],
        // A regression pinned at its output's bound: the output the loss expects (linear).
        SymptomKind::BoundedOutput => vec![OutputForLoss],
        // No nonlinearity between layers: give the hidden layers one.
        SymptomKind::LinearModel => vec![HiddenAct("relu"), HiddenAct("tanh"), HiddenAct("selu")],
        // Training stopped too early for its pace: more epochs, a faster pace, more updates.
        SymptomKind::StillImproving => vec![
            EpochsTimes(2.0),
            EpochsTimes(4.0),
            LrTimes(10.0),
            BatchSize(32),
        ],
        // Too few updates to learn: more of them per epoch, then more epochs.
        SymptomKind::FewUpdates => vec![BatchSize(32), EpochsTimes(4.0), EpochsTimes(2.0)],
        // Steps far too small: AutoTrainer's slow-convergence fixes, a stronger optimizer first.
        SymptomKind::CrawlingLoss => vec![
            Optimizer("adam"),
            LrTimes(10.0),
            LrTimes(100.0),
            Optimizer("rmsprop"),
        ],
        // Predictions that no longer change: a loss that does not fit the output (a constant
        // predictor minimises it), then the output for the loss, then a livelier optimizer.
        SymptomKind::StuckPredictions => vec![
            LossForOutput,
            OutputForLoss,
            Optimizer("adam"),
            LrTimes(10.0),
        ],
        SymptomKind::VanishingGradient => vec![
            HiddenAct("selu"),
            HiddenAct("relu"),
            Unavailable("batch normalisation"),
        ],
        SymptomKind::ExplodingGradient | SymptomKind::NanLoss => vec![
            HiddenAct("selu"),
            HiddenAct("relu"),
            Unavailable("gradient clipping (2 tries)"),
            HiddenAct("tanh"),
            Unavailable("batch normalisation"),
            LrTimes(0.1),
        ],
        SymptomKind::DyingRelu => vec![
            HiddenAct("selu"),
            Unavailable("batch normalisation"),
            Init("he_uniform"),
            Init("he_normal"),
            Init("glorot_uniform"),
            HiddenAct("leaky_relu"),
        ],
        SymptomKind::Unstable => vec![
            Optimizer("adam"),
            LrTimes(0.1),
            LrTimes(0.01),
            LrTimes(0.001),
            Unavailable("ReduceLROnPlateau"),
            BatchSize(32),
            BatchSize(64),
            BatchSize(128),
            BatchSize(256),
            Unavailable("momentum (3 tries)"),
            Unavailable("Gaussian noise"),
            Init("he_uniform"),
            Init("he_normal"),
            Init("glorot_uniform"),
        ],
        SymptomKind::NotConverging => vec![
            OutputForLoss,
            Optimizer("adam"),
            Optimizer("rmsprop"),
            Optimizer("sgd"),
            LrFor {
                sgd: 0.01,
                other: 0.001,
            },
            LrFor {
                sgd: 0.1,
                other: 0.01,
            },
            LrFor {
                sgd: 1.0,
                other: 0.1,
            },
            Init("he_uniform"),
            Init("he_normal"),
            Init("glorot_uniform"),
        ],
    }
}

fn is_kind(p: &Param, fault: FaultType, prefix: &str) -> bool {
    p.fault == Some(fault) || (p.fault.is_none() && p.name.starts_with(prefix))
}

/// The activation parameters of the hidden layers: every `ACH` (or `act*`) parameter but the
/// one of the highest layer, which is taken as the output layer.
pub fn hidden_acts(space: &SearchSpace) -> Vec<&Param> {
    let acts: Vec<&Param> = space
        .iter()
        .filter(|p| is_kind(p, FaultType::ACH, "act"))
        .collect();
    let layer = |p: &Param| {
        p.layer.map(i64::from).unwrap_or_else(|| {
            p.name
                .trim_start_matches(|c: char| !c.is_ascii_digit())
                .parse()
                .unwrap_or(-1)
        })
    };
    let Some(out) = acts.iter().map(|p| layer(p)).max() else {
        return Vec::new();
    };
    if acts.len() < 2 {
        return Vec::new();
    }
    acts.into_iter().filter(|p| layer(p) != out).collect()
}

fn find<'s>(space: &'s SearchSpace, name: &str, fault: FaultType) -> Option<&'s Param> {
    space.get(name).or_else(|| space.with_fault(fault).next())
}

fn numeric_value(p: &Param, x: f64) -> Option<Value> {
    let v = match &p.kind {
        ParamKind::Float { low, high } | ParamKind::LogFloat { low, high } => {
            if !(x >= *low && x <= *high) {
                return None;
            }
            float_value(x, *low, *high)
        }
        _ => p.normalize(&Value::from(round_sig(x, 4)))?,
    };
    p.contains(&v).then_some(v)
}

/// Why one of AutoTrainer's fixes is not tried on a subject: what the space or the config
/// lacks, or that the config is so already.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Skip {
    #[error("{what}={value}: the space has no such parameter")]
    NoParameter { what: &'static str, value: String },
    /// `params` are the parameters of that kind, none of which has the value.
    #[error("{what}={value}: {value:?} is not a value of {params}")]
    NotAValue {
        what: &'static str,
        value: String,
        params: String,
    },
    #[error("the space has no learning rate")]
    NoLearningRate,
    #[error("batch_size: the space has no batch size")]
    NoBatchSize,
    #[error("epochs: the space has no number of epochs")]
    NoEpochs,
    #[error("loss: the space has no loss parameter")]
    NoLoss,
    #[error("output activation: no rule for the loss {0:?}")]
    UnknownLoss(String),
    #[error("loss: no classification loss for the output activation {0:?}")]
    NoLossFor(String),
    /// A batch size outside the parameter's domain.
    #[error("{param}={value}: not in {domain}")]
    NotIn {
        param: String,
        value: i64,
        domain: String,
    },
    /// A learning rate outside the parameter's domain; `why` is the step (`×0.1`, `for adam`).
    #[error("{why}: {value} is outside {domain}")]
    Outside {
        why: String,
        value: f64,
        domain: String,
    },
    #[error("{param}: the config has no numeric value")]
    NotNumeric { param: String },
    /// A fix that is no hyperparameter (batch normalisation, …).
    #[error("{0}: not a hyperparameter of the space")]
    Unavailable(&'static str),
    /// The config already has the fix's values.
    #[error("{0}: already so")]
    AlreadySo(String),
}

/// The fix of `step` for `config`, or why it is skipped.
fn resolve(step: &Step, space: &SearchSpace, config: &Config) -> Result<Fix, Skip> {
    let set_all = |params: Vec<&Param>, value: &str, what: &'static str| -> Result<Fix, Skip> {
        if params.is_empty() {
            return Err(Skip::NoParameter {
                what,
                value: value.to_string(),
            });
        }
        let v = Value::from(value);
        let (ok, missing): (Vec<&Param>, Vec<&Param>) =
            params.into_iter().partition(|p| p.contains(&v));
        if ok.is_empty() {
            let names: Vec<&str> = missing.iter().map(|p| p.name.as_str()).collect();
            return Err(Skip::NotAValue {
                what,
                value: value.to_string(),
                params: names.join(", "),
            });
        }
        let changes: Vec<(String, Value)> =
            ok.iter().map(|p| (p.name.clone(), v.clone())).collect();
        Ok(Fix {
            description: changes
                .iter()
                .map(|(k, _)| format!("{k}={value}"))
                .collect::<Vec<_>>()
                .join(", "),
            changes,
        })
    };
    let lr_param = || find(space, "lr", FaultType::HLR).ok_or(Skip::NoLearningRate);
    let set_lr = |p: &Param, x: f64, why: String| -> Result<Fix, Skip> {
        let Some(v) = numeric_value(p, x) else {
            return Err(Skip::Outside {
                why,
                value: round_sig(x, 4),
                domain: p.describe_domain(),
            });
        };
        Ok(Fix {
            description: format!(
                "{}={} ({why})",
                p.name,
                reprolab_core::space::format_value(&v)
            ),
            changes: vec![(p.name.clone(), v)],
        })
    };
    match step {
        Step::HiddenAct(a) => set_all(hidden_acts(space), a, "hidden activation"),
        Step::Init(i) => set_all(
            space
                .iter()
                .filter(|p| is_kind(p, FaultType::WCI, "ki"))
                .collect(),
            i,
            "kernel initialiser",
        ),
        Step::Optimizer(o) => set_all(
            find(space, "optimizer", FaultType::OCH)
                .into_iter()
                .collect(),
            o,
            "optimizer",
        ),
        Step::BatchSize(b) => {
            let p = find(space, "batch_size", FaultType::HBS).ok_or(Skip::NoBatchSize)?;
            let v = Value::from(*b);
            if !p.contains(&v) {
                return Err(Skip::NotIn {
                    param: p.name.clone(),
                    value: *b,
                    domain: p.describe_domain(),
                });
            }
            Ok(Fix {
                description: format!("{}={b}", p.name),
                changes: vec![(p.name.clone(), v)],
            })
        }
        Step::LrTimes(f) => {
            let p = lr_param()?;
            set_lr(p, number(p, config)? * f, format!("×{f}"))
        }
        Step::LrFor { sgd, other } => {
            let p = lr_param()?;
            let opt = find(space, "optimizer", FaultType::OCH)
                .and_then(|o| config.get(&o.name))
                .and_then(Value::as_str)
                .unwrap_or("");
            let x = if opt.eq_ignore_ascii_case("sgd") {
                *sgd
            } else {
                *other
            };
            set_lr(
                p,
                x,
                format!("for {}", if opt.is_empty() { "the optimizer" } else { opt }),
            )
        }
        Step::EpochsTimes(f) => {
            let p = find(space, "epochs", FaultType::HNE).ok_or(Skip::NoEpochs)?;
            let cur = number(p, config)?;
            let wanted = (cur * f).round();
            // The nearest value the space has at or above the wanted one, else its largest.
            let v = match &p.kind {
                ParamKind::Int { low, high } => {
                    Some(Value::from((wanted as i64).clamp(*low, *high)))
                }
                ParamKind::Choice { values } => {
                    let mut counts: Vec<f64> = values.iter().filter_map(Value::as_f64).collect();
                    counts.sort_by(f64::total_cmp);
                    counts
                        .iter()
                        .find(|c| **c >= wanted)
                        .or(counts.last())
                        .and_then(|c| p.normalize(&Value::from(*c as i64)))
                }
                _ => p.normalize(&Value::from(wanted as i64)),
            }
            .filter(|v| p.contains(v))
            .ok_or_else(|| Skip::NotIn {
                param: p.name.clone(),
                value: wanted as i64,
                domain: p.describe_domain(),
            })?;
            if config.get(&p.name).is_some_and(|c| same_value(c, &v)) {
                return Err(Skip::AlreadySo(format!("{}={}", p.name, cur)));
            }
            Ok(Fix {
                description: format!(
                    "{}={} (×{f})",
                    p.name,
                    reprolab_core::space::format_value(&v)
                ),
                changes: vec![(p.name.clone(), v)],
            })
        }
        Step::OutputForLoss => {
            let loss = find(space, "loss", FaultType::LCH)
                .and_then(|p| config.get(&p.name))
                .and_then(Value::as_str)
                .ok_or(Skip::NoLoss)?;
            let act = output_act_for(loss).ok_or_else(|| Skip::UnknownLoss(loss.to_string()))?;
            let out = output_act(space).ok_or(Skip::NoParameter {
                what: "output activation",
                value: act.to_string(),
            })?;
            set_all(vec![out], act, "output activation")
        }
        Step::LossForOutput => {
            let out = output_act(space).ok_or(Skip::NoParameter {
                what: "output activation",
                value: "its loss".to_string(),
            })?;
            let act = config
                .get(&out.name)
                .and_then(Value::as_str)
                .unwrap_or_default();
            let loss = match act.to_ascii_lowercase().as_str() {
                "softmax" => "categorical_crossentropy",
                "sigmoid" => "binary_crossentropy",
                _ => return Err(Skip::NoLossFor(act.to_string())),
            };
            let p = find(space, "loss", FaultType::LCH).ok_or(Skip::NoLoss)?;
            set_all(vec![p], loss, "loss")
        }
        Step::Unavailable(what) => Err(Skip::Unavailable(what)),
    }
}

/// The config's numeric value of `p`.
fn number(p: &Param, config: &Config) -> Result<f64, Skip> {
    config
        .get(&p.name)
        .and_then(Value::as_f64)
        .ok_or_else(|| Skip::NotNumeric {
            param: p.name.clone(),
        })
}

/// The activation of the output layer that a loss expects; `None` for a loss this does not
/// know.
pub fn output_act_for(loss: &str) -> Option<&'static str> {
    let l = loss.to_ascii_lowercase();
    Some(match l.as_str() {
        "binary_crossentropy" | "bce" => "sigmoid",
        "categorical_crossentropy"
        | "sparse_categorical_crossentropy"
        | "kl_divergence"
        | "kullback_leibler_divergence"
        | "nll"
        | "nll_loss" => "softmax",
        _ if l.contains("mean_") || l.starts_with("mse") || l.starts_with("mae") => "linear",
        "huber" | "huber_loss" | "log_cosh" | "logcosh" | "l1" | "l2" => "linear",
        _ => return None,
    })
}

/// The activation parameter of the output layer: the `ACH` (or `act*`) parameter of the
/// highest layer, when the space has more than one.
pub fn output_act(space: &SearchSpace) -> Option<&Param> {
    let hidden = hidden_acts(space);
    if hidden.is_empty() {
        return None;
    }
    space
        .iter()
        .filter(|p| is_kind(p, FaultType::ACH, "act"))
        .find(|p| !hidden.iter().any(|h| h.name == p.name))
}

/// The fixes AutoTrainer would try for a symptom, mapped onto `space` from `config`, with a
/// note for each one skipped.
pub fn fixes(kind: SymptomKind, space: &SearchSpace, config: &Config) -> Vec<Result<Fix, Skip>> {
    steps(kind)
        .iter()
        .map(|s| {
            let fix = resolve(s, space, config)?;
            if fix
                .changes
                .iter()
                .all(|(k, v)| config.get(k).is_some_and(|c| same_value(c, v)))
            {
                return Err(Skip::AlreadySo(fix.description));
            }
            Ok(fix)
        })
        .collect()
}

async fn trace_symptoms<O: Objective>(
    obj: &O,
    subject: &Subject,
    config: &Config,
    seed: u64,
    notes: &mut Vec<String>,
) -> Result<Vec<Symptom>, RepairError> {
    let trace = obj
        .trace(config, seed)
        .await
        .map_err(RepairError::Objective)?;
    if !trace.finished {
        notes.push(format!(
            "the trace (seed {seed}) did not finish; {} epoch(s) recorded",
            trace.epochs.len()
        ));
    }
    Ok(detect_for(
        &parse_trace(&trace.epochs),
        &Thresholds::default(),
        &|_, l| l.name.clone(),
        subject.task,
    ))
}

/// The rules engine with the default [`RulesOptions`] (see the module documentation).
pub async fn rules<O: Objective>(
    obj: &O,
    subject: &Subject,
    s: &SearchSettings,
) -> Result<RulesResult, RepairError> {
    rules_with(obj, subject, s, &RulesOptions::default()).await
}

/// The rules engine (see the module documentation).
pub async fn rules_with<O: Objective>(
    obj: &O,
    subject: &Subject,
    s: &SearchSettings,
    opt: &RulesOptions,
) -> Result<RulesResult, RepairError> {
    if opt.confirm_runs < 2 {
        return Err(RepairError::Settings(format!(
            "confirm_runs = {}: a confirmation needs at least 2 trainings per config",
            opt.confirm_runs
        )));
    }
    let goal = subject.metric.goal;
    let mut study = Study::start(obj, subject, s).await?;
    let t0 = study.trials()[0].clone();
    let mut notes = Vec::new();
    let symptoms = trace_symptoms(obj, subject, &subject.config, t0.seed, &mut notes).await?;
    study.charge(t0.duration_s);
    if symptoms.is_empty() {
        return Ok(RulesResult {
            symptoms: Vec::new(),
            remaining: Vec::new(),
            attempts: Vec::new(),
            notes,
            result: study.finish("rules", Stop::NoSymptom),
            no_symptom: true,
            confirmation: None,
        });
    }
    let mut stop = study.reached(&t0).then_some(Stop::StopAt);
    let mut best = t0;
    let mut current = symptoms.clone();
    let mut attempts: Vec<Attempt> = Vec::new();
    let mut tried: BTreeSet<String> = BTreeSet::from([subject.config.canonical_json()]);
    let mut confirmation = None;
    'rounds: while stop.is_none() {
        let mut accepted = false;
        'symptoms: for sym in &current {
            let mut todo: Vec<(Fix, Config)> = Vec::new();
            for f in fixes(sym.kind, &subject.space, &best.config) {
                match f {
                    Err(note) => notes.push(format!("{}: skipped {note}", sym.name)),
                    Ok(fix) => {
                        let mut cand = best.config.clone();
                        for (k, v) in &fix.changes {
                            cand.insert(k.clone(), v.clone());
                        }
                        if tried.insert(cand.canonical_json()) {
                            todo.push((fix, cand));
                        } else {
                            notes.push(format!(
                                "{}: skipped {}: already tried",
                                sym.name, fix.description
                            ));
                        }
                    }
                }
            }
            // Fixes in AutoTrainer's order, `parallel` at a time; the first better one wins.
            let mut queue = todo.into_iter();
            loop {
                let k = study.allowance(s.parallel);
                if k == 0 {
                    stop = Some(Stop::Budget);
                    break 'rounds;
                }
                let batch: Vec<(Fix, Config)> = queue.by_ref().take(k).collect();
                if batch.is_empty() {
                    break;
                }
                let items = batch.iter().map(|(_, c)| (c.clone(), None)).collect();
                let mut winner: Option<Trial> = None;
                for ((fix, _), t) in batch.into_iter().zip(study.evaluate(obj, items).await?) {
                    let better = winner.is_none()
                        && t.value
                            .is_some_and(|v| best.value.is_none_or(|b| goal.better(v, b)));
                    if better {
                        winner = Some(t.clone());
                    }
                    attempts.push(Attempt {
                        symptom: sym.name.clone(),
                        fix: fix.description,
                        trial: t.clone(),
                        accepted: better,
                    });
                    if study.tell(t) {
                        stop = Some(Stop::StopAt);
                    }
                }
                if let Some(w) = winner {
                    best = w;
                    accepted = true;
                    if stop.is_some() {
                        break 'rounds;
                    }
                    break 'symptoms;
                }
                if stop.is_some() {
                    break 'rounds;
                }
            }
        }
        if !accepted {
            stop = Some(Stop::NoFix);
            break;
        }
        if study.exhausted() {
            stop = Some(Stop::Budget);
            break;
        }
        current = trace_symptoms(obj, subject, &best.config, best.seed, &mut notes).await?;
        study.charge(best.duration_s);
        if current.is_empty() {
            let c = confirm(obj, subject, &best.config, opt.confirm_runs).await?;
            if !c.significant {
                notes.push(format!(
                    "no symptom left, but the gain is not confirmed on the search split: \
                     {:.4} -> {:.4} over {} trainings each (p = {:.3}, d = {:.2})",
                    c.faulty_mean, c.best_mean, c.runs, c.p_value, c.cohens_d
                ));
            }
            stop = Some(if c.significant {
                Stop::Repaired
            } else {
                Stop::Unconfirmed
            });
            confirmation = Some(c);
        }
    }
    Ok(RulesResult {
        symptoms,
        remaining: current,
        attempts,
        notes,
        result: study.finish("rules", stop.unwrap_or(Stop::Budget)),
        no_symptom: false,
        confirmation,
    })
}
