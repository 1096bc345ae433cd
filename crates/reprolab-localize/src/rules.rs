//! Static rules: checks of a config alone, no training (NeuraLint / UMLAUT style, reference §8,
//! without their known defects: no rule looks at layer names, and none holds for every config).
//!
//! | id | fires when | suspects |
//! |---|---|---|
//! | `out-softmax-binary-ce` | classification, output softmax, loss binary_crossentropy | ACH(last) 0.7 (0.9 when `unit<last>` = 1), LCH 0.4 |
//! | `out-sigmoid-categorical-ce` | classification, output sigmoid/hard_sigmoid, loss (sparse_)categorical_crossentropy | LCH 0.7, ACH(last) 0.4; with `unit<last>` > 1 (several classes) ACH(last) 0.7, LCH 0.4 |
//! | `out-not-probability-ce` | classification, cross-entropy or KLD loss, output not sigmoid/softmax/hard_sigmoid | ACH(last) 0.8 |
//! | `out-unbounded-distance` | classification, distance loss (MSE, MAE, …), output linear/relu/elu/selu/softplus/exponential | ACH(last) 0.5 |
//! | `loss-classification` | classification with poisson/MAPE/MSLE 0.7, KLD 0.7 (0.3 with softmax), MAE 0.55, MSE/logcosh/hinge/squared_hinge 0.5, categorical_hinge 0.35 | LCH |
//! | `loss-regression` | regression with a cross-entropy, KLD or hinge loss 0.85, poisson 0.5, MSLE 0.4, MAPE 0.35 | LCH |
//! | `out-bounded-regression` | regression, output softmax 0.9, sigmoid/tanh/hard_sigmoid/softsign 0.8, relu/softplus/exponential 0.45, elu/selu 0.35 | ACH(last) |
//! | `hidden-linear` | built hidden layers with `linear` (missing non-linearity) | ACH(those) 0.6, 0.7 when all hidden are |
//! | `hidden-softmax` / `hidden-exponential` | softmax 0.6 / exponential 0.5 in a built hidden layer | ACH(i) |
//! | `kernel-init-constant` | `ki<i>` zeros/ones/constant (symmetric units) | WCI(i) 0.7 (0.5 on the output layer) |
//! | `bias-init` | `bi<i>` orthogonal (fails on a 1-D bias) 0.8, ones 0.3 | BCI(i) |
//! | `lr-range` | lr outside the optimiser's usual range (sgd/adagrad [1e-4, 0.5]; adam/rmsprop/adamax/nadam [1e-5, 0.05]; adadelta [1e-4, 10]) | HLR 0.6 + 0.1 per decade outside, ≤ 0.9 |
//! | `lr-small-for-budget` | adam/rmsprop/adamax/nadam with 1e-5 ≤ lr < 1e-4 (over 10× below their default 1e-3) and ≤ 100 epochs | HLR 0.5 |
//! | `lr-high-for-optimizer` | adam/rmsprop/adamax/nadam with 0.01 < lr ≤ 0.05 (in range, but over 10× their default) | HLR 0.35 |
//! | `optimizer-slow` | sgd (no momentum) with lr ≤ 1e-3 | OCH 0.5, HLR 0.3 |
//! | `optimizer-slow` | adagrad with lr ≤ 1e-3, adadelta with lr < 0.1 | OCH 0.35 |
//! | `batch-size-one` | batch_size 1 | HBS 0.5 |
//! | `few-epochs` | epochs ≤ half the median of the space's epoch list 0.4; epochs 1 0.45; the list's smallest value (≥ 5 values) 0.3 | HNE |
//!
//! "Batch size ≥ half the training data" is not checked: the config and the space do not say
//! how large the training data is.

use reprolab_core::{Config, FaultLabel, FaultType, Subject, Task};
use serde_json::Value;

use crate::Suspect;
use crate::arch::{
    Arch, CATEGORICAL_CE, CROSS_ENTROPY, DISTANCE, HINGE, PROBABILITY, SQUASHING, UNBOUNDED,
    fmt_num,
};

/// Every static rule that fires on `config` (a config of `subject`, usually its current one),
/// merged and ranked (see [`crate::merge`]).
pub fn static_rules(subject: &Subject, config: &Config) -> Vec<Suspect> {
    rules_on(&Arch::new(subject, config))
}

/// [`static_rules`] on `config` completed with what `trace` records of the program itself (a
/// Keras program's layers, loss and optimizer: [`crate::program::complete`]), so that a program
/// whose config.json does not name its architecture is checked as it ran.
pub fn static_rules_traced(subject: &Subject, config: &Config, trace: &[Value]) -> Vec<Suspect> {
    let completed = crate::program::complete(config, trace);
    rules_on(&Arch::with_program(
        subject,
        &completed.config,
        completed.from_program,
    ))
}

fn rules_on(a: &Arch) -> Vec<Suspect> {
    let mut out = Vec::new();
    output_rules(a, &mut out);
    loss_rules(a, &mut out);
    hidden_rules(a, &mut out);
    init_rules(a, &mut out);
    lr_rules(a, &mut out);
    batch_rules(a, &mut out);
    epoch_rules(a, &mut out);
    crate::merge(&[out])
}

fn ach(i: u32) -> FaultLabel {
    FaultLabel::with_layers(FaultType::ACH, [i])
}

fn lch() -> FaultLabel {
    FaultLabel::new(FaultType::LCH)
}

fn is(x: &str, set: &[&str]) -> bool {
    set.contains(&x)
}

/// The loss that fits the output activation of a classifier.
fn fitting_ce(a: &Arch) -> Vec<&'static str> {
    match a.last_act().map(|(_, act)| act) {
        Some("sigmoid") | Some("hard_sigmoid") => vec!["binary_crossentropy"],
        _ => vec![
            "categorical_crossentropy",
            "sparse_categorical_crossentropy",
        ],
    }
}

fn output_rules(a: &Arch, out: &mut Vec<Suspect>) {
    let (Some((last, act)), Some(loss)) = (a.last_act(), a.loss()) else {
        return;
    };
    let key = format!("act{last}");
    match a.subject.task {
        Task::Classification => {
            if act == "softmax" && loss == "binary_crossentropy" {
                let single = a.num(&format!("unit{last}")) == Some(1.0);
                let c = if single { 0.9 } else { 0.7 };
                out.push(
                    Suspect::new(
                        ach(last),
                        c,
                        "out-softmax-binary-ce",
                        format!(
                            "output {key} = softmax with loss binary_crossentropy{}: a binary \
                             output needs sigmoid (softmax over one unit is constant 1)",
                            if single {
                                format!(" and unit{last} = 1")
                            } else {
                                String::new()
                            }
                        ),
                    )
                    .suggest(a.suggest_str(&key, &["sigmoid"])),
                );
                out.push(
                    Suspect::new(
                        lch(),
                        0.4,
                        "out-softmax-binary-ce",
                        format!(
                            "loss binary_crossentropy with a softmax output {key}: softmax \
                             pairs with categorical_crossentropy"
                        ),
                    )
                    .suggest(a.suggest_str("loss", &["categorical_crossentropy"])),
                );
            }
            if (act == "sigmoid" || act == "hard_sigmoid") && is(&loss, &CATEGORICAL_CE) {
                // Several output units (a Keras model says how many) are classes to normalise
                // over: the activation is the likelier slip. One or unknown: the loss.
                let units = a.num(&format!("unit{last}"));
                let several = units.is_some_and(|u| u > 1.0);
                let (c_loss, c_act) = if several { (0.4, 0.7) } else { (0.7, 0.4) };
                out.push(
                    Suspect::new(
                        lch(),
                        c_loss,
                        "out-sigmoid-categorical-ce",
                        format!(
                            "loss {loss} with a {act} output {key}: categorical cross-entropy \
                             normalises over the outputs (constant on one unit); a sigmoid \
                             output pairs with binary_crossentropy"
                        ),
                    )
                    .suggest(a.suggest_str("loss", &["binary_crossentropy"])),
                );
                out.push(
                    Suspect::new(
                        ach(last),
                        c_act,
                        "out-sigmoid-categorical-ce",
                        match units.filter(|_| several) {
                            Some(u) => format!(
                                "output {key} = {act} over {} units with loss {loss}: the \
                                 classes' probabilities come from softmax",
                                fmt_num(u)
                            ),
                            None => format!(
                                "output {key} = {act} with loss {loss}: it pairs with softmax"
                            ),
                        },
                    )
                    .suggest(a.suggest_str(&key, &["softmax"])),
                );
            }
            let ce_like = is(&loss, &CROSS_ENTROPY) || loss == "kullback_leibler_divergence";
            if ce_like && !is(act, &PROBABILITY) {
                let to = if loss == "binary_crossentropy" {
                    "sigmoid"
                } else {
                    "softmax"
                };
                out.push(
                    Suspect::new(
                        ach(last),
                        0.8,
                        "out-not-probability-ce",
                        format!(
                            "output {key} = {act} with loss {loss}: the loss expects \
                             probabilities (Keras semantics), {act} does not give them"
                        ),
                    )
                    .suggest(a.suggest_str(&key, &[to])),
                );
            }
            if is(&loss, &DISTANCE) && is(act, &UNBOUNDED) {
                out.push(
                    Suspect::new(
                        ach(last),
                        0.5,
                        "out-unbounded-distance",
                        format!(
                            "classification output {key} = {act} (no squashing) trained with \
                             {loss}"
                        ),
                    )
                    .suggest(a.suggest_str(&key, &["softmax", "sigmoid"])),
                );
            }
        }
        Task::Regression => {
            let c = match act {
                "softmax" => 0.9,
                "sigmoid" | "tanh" | "hard_sigmoid" | "softsign" => 0.8,
                "relu" | "softplus" | "exponential" => 0.45,
                "elu" | "selu" => 0.35,
                _ => return,
            };
            let why = match act {
                "softmax" => "softmax normalises the outputs (constant 1 on a single unit)",
                _ if is(act, &SQUASHING) => "it squashes predictions into a bounded range",
                _ => "it bounds predictions from below (fine only for non-negative targets)",
            };
            out.push(
                Suspect::new(
                    ach(last),
                    c,
                    "out-bounded-regression",
                    format!("regression output {key} = {act}: {why}"),
                )
                .suggest(a.suggest_str(&key, &["linear"])),
            );
        }
    }
}

fn loss_rules(a: &Arch, out: &mut Vec<Suspect>) {
    let Some(loss) = a.loss() else {
        return;
    };
    let act = a.last_act().map(|(_, s)| s.to_string()).unwrap_or_default();
    match a.subject.task {
        Task::Classification => {
            let (c, why) = match loss.as_str() {
                "poisson" | "mean_absolute_percentage_error" | "mean_squared_logarithmic_error" => {
                    (0.7, "a regression loss, unsuited to class labels")
                }
                "kullback_leibler_divergence" if act == "softmax" => (
                    0.3,
                    "equivalent to categorical_crossentropy for one-hot labels, but unusual",
                ),
                "kullback_leibler_divergence" => (
                    0.7,
                    "only the positive labels contribute without a softmax over classes",
                ),
                "mean_absolute_error" => (
                    0.55,
                    "a regression loss with weak gradients on probabilities",
                ),
                "mean_squared_error" | "logcosh" => (
                    0.5,
                    "a regression loss; classifiers train better with cross-entropy",
                ),
                "hinge" | "squared_hinge" => (
                    0.5,
                    "a margin loss; cross-entropy is the usual classifier loss",
                ),
                "categorical_hinge" => (
                    0.35,
                    "a margin loss; cross-entropy is the usual classifier loss",
                ),
                _ => return,
            };
            out.push(
                Suspect::new(
                    lch(),
                    c,
                    "loss-classification",
                    format!("classification trained with loss {loss}: {why}"),
                )
                .suggest(a.suggest_str("loss", &fitting_ce(a))),
            );
        }
        Task::Regression => {
            let (c, why) = match loss.as_str() {
                l if is(l, &CROSS_ENTROPY) || is(l, &HINGE) => (
                    0.85,
                    "a classification loss, meaningless on real-valued targets",
                ),
                "kullback_leibler_divergence" => (0.85, "a loss between distributions, not values"),
                "poisson" => (0.5, "needs positive predictions and count targets"),
                "mean_squared_logarithmic_error" => (0.4, "clips negative predictions and targets"),
                "mean_absolute_percentage_error" => (0.35, "explodes for targets near zero"),
                _ => return,
            };
            out.push(
                Suspect::new(
                    lch(),
                    c,
                    "loss-regression",
                    format!("regression trained with loss {loss}: {why}"),
                )
                .suggest(a.suggest_str("loss", &["mean_squared_error", "mean_absolute_error"])),
            );
        }
    }
}

fn hidden_rules(a: &Arch, out: &mut Vec<Suspect>) {
    let hidden = a.hidden();
    let linear: Vec<u32> = hidden
        .iter()
        .filter(|(_, act)| *act == "linear")
        .map(|(i, _)| *i)
        .collect();
    if !linear.is_empty() {
        let all = linear.len() == hidden.len();
        let keys: Vec<String> = linear.iter().map(|i| format!("act{i}")).collect();
        let mut s = Suspect::new(
            FaultLabel::with_layers(FaultType::ACH, linear.iter().copied()),
            if all { 0.7 } else { 0.6 },
            "hidden-linear",
            format!(
                "hidden layer activation {} = linear: no non-linearity{}",
                keys.join(", "),
                if all {
                    " anywhere, the network is one linear map"
                } else {
                    " between these layers"
                }
            ),
        );
        let sugg: Vec<String> = linear
            .iter()
            .filter_map(|i| a.suggest_str(&format!("act{i}"), &["relu"]))
            .collect();
        if !sugg.is_empty() {
            s = s.suggest(Some(sugg.join(", ")));
        }
        out.push(s);
    }
    for (i, act) in &hidden {
        let (c, id, why) = match *act {
            "softmax" => (
                0.6,
                "hidden-softmax",
                "softmax in a hidden layer normalises features away",
            ),
            "exponential" => (
                0.5,
                "hidden-exponential",
                "exponential in a hidden layer grows activations without bound",
            ),
            _ => continue,
        };
        out.push(
            Suspect::new(ach(*i), c, id, format!("act{i} = {act}: {why}"))
                .suggest(a.suggest_str(&format!("act{i}"), &["relu"])),
        );
    }
}

fn init_rules(a: &Arch, out: &mut Vec<Suspect>) {
    for (i, v) in crate::arch::indexed(a.config, "ki") {
        let Some(name) = v.as_str().map(crate::arch::canon) else {
            continue;
        };
        if !a.present(i) || !matches!(name.as_str(), "zeros" | "ones" | "constant") {
            continue;
        }
        let c = if Some(i) == a.last { 0.5 } else { 0.7 };
        let to = if a.acts.get(&i).is_some_and(|x| x == "relu") {
            ["he_uniform", "glorot_uniform"]
        } else {
            ["glorot_uniform", "he_uniform"]
        };
        out.push(
            Suspect::new(
                FaultLabel::with_layers(FaultType::WCI, [i]),
                c,
                "kernel-init-constant",
                format!(
                    "ki{i} = {name}: a constant kernel makes every unit of the layer compute the \
                     same thing (symmetry is never broken)"
                ),
            )
            .suggest(a.suggest_str(&format!("ki{i}"), &to)),
        );
    }
    for (i, v) in crate::arch::indexed(a.config, "bi") {
        let Some(name) = v.as_str().map(crate::arch::canon) else {
            continue;
        };
        if !a.present(i) {
            continue;
        }
        let (c, why) = match name.as_str() {
            "orthogonal" => (
                0.8,
                "the orthogonal initialiser cannot initialise a 1-D bias",
            ),
            "ones" => (0.3, "a non-zero constant bias init shifts every unit alike"),
            _ => continue,
        };
        out.push(
            Suspect::new(
                FaultLabel::with_layers(FaultType::BCI, [i]),
                c,
                "bias-init",
                format!("bi{i} = {name}: {why}"),
            )
            .suggest(a.suggest_str(&format!("bi{i}"), &["zeros"])),
        );
    }
}

/// The usual learning-rate range of an optimiser and its default.
pub(crate) fn lr_range(opt: &str) -> Option<(f64, f64, f64)> {
    Some(match opt {
        "sgd" => (1e-4, 0.5, 0.01),
        "adagrad" => (1e-4, 0.5, 0.01),
        "adam" | "rmsprop" | "adamax" | "nadam" => (1e-5, 0.05, 0.001),
        "adadelta" => (1e-4, 10.0, 1.0),
        _ => return None,
    })
}

fn lr_rules(a: &Arch, out: &mut Vec<Suspect>) {
    let (Some(opt), Some(lr)) = (a.optimizer(), a.num("lr")) else {
        return;
    };
    if let Some((lo, hi, default)) = lr_range(&opt)
        && lr.is_finite()
        && lr > 0.0
        && (lr < lo || lr > hi)
    {
        let decades = if lr < lo {
            (lo / lr).log10()
        } else {
            (lr / hi).log10()
        };
        let c = (0.6 + 0.1 * decades.ceil()).min(0.9);
        out.push(
            Suspect::new(
                FaultLabel::new(FaultType::HLR),
                c,
                "lr-range",
                format!(
                    "lr = {} is {} the usual range [{}, {}] of {opt}",
                    fmt_num(lr),
                    if lr < lo { "below" } else { "above" },
                    fmt_num(lo),
                    fmt_num(hi)
                ),
            )
            .suggest(a.suggest_lr(&[default, (lr.clamp(lo, hi))])),
        );
    }
    let epochs = a.num("epochs");
    if matches!(opt.as_str(), "adam" | "rmsprop" | "adamax" | "nadam")
        && (1e-5..1e-4).contains(&lr)
        && epochs.is_some_and(|e| e <= 100.0)
    {
        out.push(
            Suspect::new(
                FaultLabel::new(FaultType::HLR),
                0.5,
                "lr-small-for-budget",
                format!(
                    "lr = {} is over 10x below {opt}'s default 0.001 with only {} epochs: the \
                     weights can hardly move",
                    fmt_num(lr),
                    fmt_num(epochs.unwrap_or(0.0))
                ),
            )
            .suggest(a.suggest_lr(&[0.001])),
        );
    }
    if matches!(opt.as_str(), "adam" | "rmsprop" | "adamax" | "nadam") && lr > 0.01 && lr <= 0.05 {
        out.push(
            Suspect::new(
                FaultLabel::new(FaultType::HLR),
                0.35,
                "lr-high-for-optimizer",
                format!(
                    "lr = {} is over 10x above {opt}'s default 0.001: updates may overshoot",
                    fmt_num(lr)
                ),
            )
            .suggest(a.suggest_lr(&[0.001])),
        );
    }
    match opt.as_str() {
        "sgd" if lr <= 1e-3 => {
            out.push(
                Suspect::new(
                    FaultLabel::new(FaultType::OCH),
                    0.5,
                    "optimizer-slow",
                    format!(
                        "sgd without momentum at lr = {} (an adaptive optimiser's scale) \
                         converges very slowly",
                        fmt_num(lr)
                    ),
                )
                .suggest(a.suggest_str("optimizer", &["adam", "rmsprop"])),
            );
            out.push(
                Suspect::new(
                    FaultLabel::new(FaultType::HLR),
                    0.3,
                    "optimizer-slow",
                    format!("lr = {} is small for sgd (usual default 0.01)", fmt_num(lr)),
                )
                .suggest(a.suggest_lr(&[0.01])),
            );
        }
        "adagrad" if lr <= 1e-3 => out.push(
            Suspect::new(
                FaultLabel::new(FaultType::OCH),
                0.35,
                "optimizer-slow",
                format!(
                    "adagrad's steps only shrink; at lr = {} it barely moves",
                    fmt_num(lr)
                ),
            )
            .suggest(a.suggest_str("optimizer", &["adam", "rmsprop"])),
        ),
        "adadelta" if lr < 0.1 => out.push(
            Suspect::new(
                FaultLabel::new(FaultType::OCH),
                0.35,
                "optimizer-slow",
                format!(
                    "adadelta at lr = {} (its scale is 1.0) converges very slowly",
                    fmt_num(lr)
                ),
            )
            .suggest(a.suggest_str("optimizer", &["adam", "rmsprop"])),
        ),
        _ => {}
    }
}

fn batch_rules(a: &Arch, out: &mut Vec<Suspect>) {
    if a.num("batch_size") == Some(1.0) {
        out.push(
            Suspect::new(
                FaultLabel::new(FaultType::HBS),
                0.5,
                "batch-size-one",
                "batch_size = 1: every update follows a single sample's noisy gradient",
            )
            .suggest(a.suggest("batch_size", &[Value::from(32), Value::from(16)])),
        );
    }
}

fn epoch_rules(a: &Arch, out: &mut Vec<Suspect>) {
    let Some(epochs) = a.num("epochs") else {
        return;
    };
    let list = a.choice_numbers("epochs");
    let median = list.as_ref().map(|xs| {
        let n = xs.len();
        if n % 2 == 1 {
            xs[n / 2]
        } else {
            (xs[n / 2 - 1] + xs[n / 2]) / 2.0
        }
    });
    let (c, why) = if epochs <= 1.0 {
        (0.45, "a single epoch".to_string())
    } else if let (Some(m), Some(xs)) = (median, &list) {
        if xs.len() >= 3 && epochs <= m / 2.0 {
            (
                0.4,
                format!(
                    "at most half the median {} of the space's epoch list",
                    fmt_num(m)
                ),
            )
        } else if xs.len() >= 5 && epochs <= xs[0] {
            (
                0.3,
                "the smallest value of the space's epoch list".to_string(),
            )
        } else {
            return;
        }
    } else {
        return;
    };
    let target = median.unwrap_or(epochs * 2.0).max(epochs * 2.0);
    let sugg = match a.choice_value_near("epochs", target) {
        Some(v) => a.suggest("epochs", &[v]),
        None => a.suggest("epochs", &[Value::from((epochs * 2.0).round() as i64)]),
    };
    out.push(
        Suspect::new(
            FaultLabel::new(FaultType::HNE),
            c,
            "few-epochs",
            format!("epochs = {}: {why}", fmt_num(epochs)),
        )
        .suggest(sugg),
    );
}
