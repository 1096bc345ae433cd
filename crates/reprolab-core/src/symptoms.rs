//! AutoTrainer's training-trace checks (reference §8) over the per-epoch trace records of
//! `docs/architecture.md`: the shared definition of a training symptom, read by dynamic
//! localisation (`reprolab-localize`) and by the rules repair engine (`reprolab-repair`).
//!
//! The thresholds are AutoTrainer's (`default_param` in `AutoTrainer/utils/utils.py` of
//! shiningrain/AUTOTRAINER; slow convergence with the Θ = 0.6 of its `reproduce.py`, where the
//! default is 0.7). What they are applied to is not its monitor's (`AutoTrainer/utils/monitor.py`,
//! `LossHistory` in `utils.py`): that one runs during training, checks every third epoch
//! (epochs 0, 3, 6, …) and stops the training at the first issue; here one finished trace is
//! read, and a check that holds in any record counts. In detail:
//!
//! * Gradients. AutoTrainer differentiates the loss, after the epoch's updates, on the first
//!   `batch_size` rows of the training data in inference mode, and takes the L2 norms of the
//!   *kernels* of the first and the last trainable layer. A record holds per layer the L2 norm of
//!   all its parameters' gradients (kernel and bias), from the first training batch of the epoch
//!   *before* its updates (record 0: the initial weights, which AutoTrainer never checks); first
//!   and last are the first and last layers with a measured gradient.
//! * Gating. AutoTrainer reports a vanishing or exploding gradient or dying ReLUs only while
//!   the accuracy has not converged (`not_converge` or `sc_accuracy`, below), and only the first
//!   of relu, explode, vanish; here each is a symptom whenever it shows (localisation wants the
//!   cause also in a run that goes on learning, e.g. the dead layers of a zero initialiser).
//! * Dying ReLU. AutoTrainer's is the share of exactly-zero entries among *all* gradient
//!   entries of the network (every layer, kernels and biases, whatever the activation) ≥ 0.7;
//!   here a ReLU layer's own share, or its `dead_frac` (units ≤ 0 for the whole batch).
//! * Oscillation. AutoTrainer's `ol_judge` reads the training accuracy only; it takes interior
//!   points with `≥`/`≤` both neighbours as maxima/minima (a plateau's points are both), pairs
//!   the k-th maximum with the k-th minimum, counts pairs with max − min ≥ 0.03, and compares
//!   the count with 0.2 × the epochs seen at each check (from about 30% of the training on).
//!   Here the training or the validation accuracy, a plateau is one point, extrema are strict,
//!   every adjacent pair of extrema counts (|difference| ≥ 0.03: about twice AutoTrainer's count
//!   on a zigzag), against 0.2 × all the epochs.
//! * Slow convergence. AutoTrainer requires max accuracy < Θ on both curves and no epoch gain
//!   ≥ 0.01 on both, over the epochs seen at its first check from about 30% of the training on
//!   (its repair then starts there); here the gains of the training accuracy only, over the run.
//! * NaN loss. AutoTrainer also flags a validation loss ≥ 1e3; here the training loss, and any
//!   non-finite loss through the record's `nan` flag. (Its latest monitor repairs a NaN loss
//!   only together with a NaN weight or gradient; an earlier one repaired any.)
//!
//! The unit tests at the end pin these edge cases.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::manifest::Task;

/// One layer of a trace record; absent or non-numeric fields are `None`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct LayerRecord {
    pub name: String,
    pub kind: String,
    pub act: Option<String>,
    pub weight_norm: Option<f64>,
    pub grad_norm: Option<f64>,
    pub grad_zero_frac: Option<f64>,
    pub dead_frac: Option<f64>,
    pub saturated_frac: Option<f64>,
    pub mean_abs_out: Option<f64>,
}

/// One epoch of a trace.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct EpochRecord {
    pub epoch: Option<u64>,
    pub loss: Option<f64>,
    pub acc: Option<f64>,
    pub val_loss: Option<f64>,
    pub val_acc: Option<f64>,
    /// A NaN appeared in this epoch (the record's `nan` flag).
    pub nan: bool,
    /// Optimizer updates in this epoch, when the tracer saw them.
    pub steps: Option<u64>,
    pub layers: Vec<LayerRecord>,
}

/// A number from a trace: JSON numbers, and the strings `nan`, `inf`, `-inf` (how a NaN may
/// be written when JSON cannot hold it).
fn num(v: Option<&Value>) -> Option<f64> {
    match v? {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
            "nan" => Some(f64::NAN),
            "inf" | "+inf" | "infinity" => Some(f64::INFINITY),
            "-inf" | "-infinity" => Some(f64::NEG_INFINITY),
            _ => None,
        },
        _ => None,
    }
}

fn text(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Reads trace records leniently: fields that are missing or of the wrong type are `None`;
/// records that are not objects are skipped.
pub fn parse_trace(epochs: &[Value]) -> Vec<EpochRecord> {
    epochs
        .iter()
        .filter(|e| e.is_object())
        .map(|e| EpochRecord {
            epoch: e.get("epoch").and_then(Value::as_u64),
            loss: num(e.get("loss")),
            // Keras' names (and many PyTorch programs') where reprolab's are absent.
            acc: num(e.get("acc")).or_else(|| num(e.get("accuracy"))),
            val_loss: num(e.get("val_loss")),
            val_acc: num(e.get("val_acc")).or_else(|| num(e.get("val_accuracy"))),
            nan: e.get("nan").and_then(Value::as_bool).unwrap_or(false),
            steps: e.get("steps").and_then(Value::as_u64),
            layers: e
                .get("layers")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter(|l| l.is_object())
                .map(|l| LayerRecord {
                    name: text(l.get("name")).unwrap_or_default(),
                    kind: text(l.get("kind")).unwrap_or_default(),
                    act: text(l.get("act")),
                    weight_norm: num(l.get("weight_norm")),
                    grad_norm: num(l.get("grad_norm")),
                    grad_zero_frac: num(l.get("grad_zero_frac")),
                    dead_frac: num(l.get("dead_frac")),
                    saturated_frac: num(l.get("saturated_frac")),
                    mean_abs_out: num(l.get("mean_abs_out")),
                })
                .collect(),
        })
        .collect()
}

/// The problems AutoTrainer looks for, in the order its repairs are tried.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SymptomKind {
    /// The training broke the network early: the gradients that reached the hidden layers at
    /// the start (epoch 0's first batch) are 0 from some later epoch on, while the loss blew up
    /// (a finite `≥` [`Thresholds::big_loss`]) or never fell below its first epoch's; no NaN
    /// anywhere (a NaN is [`NanLoss`](Self::NanLoss)'s, whose causes are many). The dead
    /// layers, the missing gradient and the stall are its consequences, so it is treated first
    /// (a learning rate far too large; not an AutoTrainer check). Only [`detect_for`] lists it;
    /// localisation's monitors read [`diverged`] as a cross-check of what it explains.
    Diverged,
    /// No layer receives a gradient: every layer's gradient norm is 0 in an epoch (an output
    /// that is constant, e.g. a softmax over one unit). Checked before the gradient ratios and
    /// dying ReLUs, which it would otherwise trigger.
    NoGradient,
    /// A regression whose output layer squashes (sigmoid, tanh, softsign, hard_sigmoid,
    /// softmax) is pinned at its bound: saturated in half the epochs, a mean |out| within 10% of
    /// 1 at the end, or a loss that stops falling (DeepDiagnosis' "output out of the labels'
    /// range"). Only [`detect_for`] with a regression task looks for it. Not an AutoTrainer
    /// check.
    BoundedOutput,
    /// Every hidden layer is linear (no nonlinearity between layers: the network is one linear
    /// map) and the loss fell by less than 10% from the first epoch to the last. Not an
    /// AutoTrainer check.
    LinearModel,
    /// `‖g_first‖ / ‖g_last‖ < 1e-3` and `‖g_first‖ < 1e-4` in some record (first and last:
    /// the first and last layers with a measured gradient norm).
    VanishingGradient,
    /// `‖g_first‖ / ‖g_last‖ > 70`, or a non-finite gradient norm.
    ExplodingGradient,
    /// A NaN in training (the record's `nan` flag: a non-finite loss, validation loss or
    /// weight), or a training loss `≥ 1e3` (repaired as an exploding gradient).
    NanLoss,
    /// A ReLU layer with `grad_zero_frac ≥ 0.7` or `dead_frac ≥ 0.7`.
    DyingRelu,
    /// The training or the validation accuracy oscillates: pairs of adjacent local extrema
    /// differing by `≥ 0.03` ([`oscillations`]) number at least `0.2 ×` the epochs.
    Unstable,
    /// Slow convergence: maximal train (and validation) accuracy `< 0.6` and the training
    /// accuracy gains `≥ 0.01` in no epoch.
    NotConverging,
    /// Training stopped while the loss was still falling: it fell in each of the last three
    /// epochs, the last time by `≥ 2%` (not an AutoTrainer check: the study's too-few-epochs
    /// and too-large-batch faults show it).
    StillImproving,
    /// The whole training made fewer than 100 optimizer updates and its loss fell by less than
    /// half: it stopped before it had learnt (a batch that is large for the dataset, too few
    /// epochs). Needs the records' `steps`. Not an AutoTrainer check.
    FewUpdates,
    /// The loss fell in (nearly) every epoch, yet by less than 10% from the first epoch to the
    /// last: the optimizer's steps are far too small (a weak optimizer, a tiny learning rate).
    /// AutoTrainer's slow convergence read from the loss, so that it applies to regressions,
    /// where [`NotConverging`](Self::NotConverging) has no accuracy to read.
    CrawlingLoss,
    /// A classification whose train (and validation) accuracy keeps one value over the second
    /// half of the epochs while the loss no longer falls: the predictions stopped changing (a
    /// constant predictor, e.g. a regression loss on a softmax output). Only [`detect_for`]
    /// with a classification task looks for it.
    StuckPredictions,
}

impl SymptomKind {
    pub fn as_str(self) -> &'static str {
        match self {
            SymptomKind::Diverged => "diverged",
            SymptomKind::NoGradient => "no_gradient",
            SymptomKind::BoundedOutput => "bounded_output",
            SymptomKind::LinearModel => "linear_model",
            SymptomKind::VanishingGradient => "vanishing_gradient",
            SymptomKind::ExplodingGradient => "exploding_gradient",
            SymptomKind::NanLoss => "nan_loss",
            SymptomKind::DyingRelu => "dying_relu",
            SymptomKind::Unstable => "unstable",
            SymptomKind::NotConverging => "not_converging",
            SymptomKind::StillImproving => "still_improving",
            SymptomKind::FewUpdates => "few_updates",
            SymptomKind::CrawlingLoss => "crawling_loss",
            SymptomKind::StuckPredictions => "stuck_predictions",
        }
    }
}

impl fmt::Display for SymptomKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A detected symptom and what showed it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Symptom {
    pub kind: SymptomKind,
    /// `kind` as text (`vanishing_gradient`, …).
    pub name: String,
    /// The numbers that triggered it, for humans.
    pub evidence: String,
}

impl Symptom {
    fn new(kind: SymptomKind, evidence: String) -> Self {
        Symptom {
            kind,
            name: kind.as_str().to_string(),
            evidence,
        }
    }
}

/// AutoTrainer's thresholds (reference §8; slow convergence with its reproduction's 0.6).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Thresholds {
    pub vanish_ratio: f64,
    pub vanish_first: f64,
    pub explode_ratio: f64,
    pub dying_frac: f64,
    pub oscillation_delta: f64,
    pub oscillation_rate: f64,
    pub slow_acc: f64,
    pub slow_gain: f64,
    pub big_loss: f64,
    /// Relative fall of the loss in the last epoch that counts as still improving.
    pub still_falling: f64,
    /// Optimizer updates of a whole training below which it counts as too short to learn.
    pub few_updates: u64,
    /// ... when its loss fell by less than this share of the first epoch's.
    pub few_updates_fall: f64,
    /// Share of the first epoch's loss that a linear model must lose to count as learning.
    pub linear_stall: f64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            vanish_ratio: 1e-3,
            vanish_first: 1e-4,
            explode_ratio: 70.0,
            dying_frac: 0.7,
            oscillation_delta: 0.03,
            oscillation_rate: 0.2,
            slow_acc: 0.6,
            slow_gain: 0.01,
            big_loss: 1e3,
            still_falling: 0.02,
            few_updates: 100,
            few_updates_fall: 0.5,
            linear_stall: 0.1,
        }
    }
}

fn g(x: f64) -> String {
    if x != 0.0 && (x.abs() < 1e-3 || x.abs() >= 1e4) {
        format!("{x:.2e}")
    } else {
        format!("{x:.4}")
    }
}

fn epoch_no(r: &EpochRecord, i: usize) -> u64 {
    r.epoch.unwrap_or(i as u64)
}

/// The symptoms a trace shows with the default thresholds, in [`SymptomKind`] order.
pub fn detect(records: &[EpochRecord]) -> Vec<Symptom> {
    detect_with(records, &Thresholds::default())
}

/// The symptoms a trace shows, in [`SymptomKind`] order (one per kind, with the first epoch
/// that showed it); layers are named as the trace names them.
pub fn detect_with(records: &[EpochRecord], th: &Thresholds) -> Vec<Symptom> {
    detect_named(records, th, &|_, l| l.name.clone())
}

/// [`detect_with`], the evidence naming layer `j` of a record (its position in the record) as
/// `name` says: a caller that knows how trace layers map to the config's layers names them as
/// the user does (`act1`'s layer is layer 1), not by the model's module indices.
pub fn detect_named(
    records: &[EpochRecord],
    th: &Thresholds,
    name: &dyn Fn(usize, &LayerRecord) -> String,
) -> Vec<Symptom> {
    let mut out: Vec<Symptom> = Vec::new();
    let mut found = |kind: SymptomKind, evidence: String| {
        if !out.iter().any(|s| s.kind == kind) {
            out.push(Symptom::new(kind, evidence));
        }
    };
    for (i, r) in records.iter().enumerate() {
        let e = epoch_no(r, i);
        let grads: Vec<(String, f64)> = r
            .layers
            .iter()
            .enumerate()
            .filter_map(|(j, l)| l.grad_norm.map(|gn| (name(j, l), gn)))
            .collect();
        if grads.len() >= 2 && grads.iter().all(|(_, gn)| *gn == 0.0) {
            found(
                SymptomKind::NoGradient,
                format!(
                    "epoch {e}: the gradient norm of every layer ({}) is 0",
                    grads.len()
                ),
            );
        }
        if let Some((l, gn)) = grads.iter().find(|(_, gn)| !gn.is_finite()) {
            found(
                SymptomKind::ExplodingGradient,
                format!("epoch {e}: gradient norm of layer {l} is {gn}"),
            );
        }
        if grads.len() >= 2 {
            let (first, gf) = (&grads[0].0, grads[0].1);
            let (last, gl) = (&grads[grads.len() - 1].0, grads[grads.len() - 1].1);
            let ratio = gf / gl;
            if gf.is_finite() && gl.is_finite() && gl > 0.0 {
                if ratio < th.vanish_ratio && gf < th.vanish_first {
                    found(
                        SymptomKind::VanishingGradient,
                        format!(
                            "epoch {e}: ‖g_first‖/‖g_last‖ = {} < {} and ‖g_first‖ = {} < {} (layers {} and {})",
                            g(ratio),
                            g(th.vanish_ratio),
                            g(gf),
                            g(th.vanish_first),
                            first,
                            last
                        ),
                    );
                }
                if ratio > th.explode_ratio {
                    found(
                        SymptomKind::ExplodingGradient,
                        format!(
                            "epoch {e}: ‖g_first‖/‖g_last‖ = {} > {} (layers {} and {})",
                            g(ratio),
                            th.explode_ratio,
                            first,
                            last
                        ),
                    );
                }
            }
        }
        if r.nan || r.loss.is_some_and(|l| l.is_nan()) {
            found(SymptomKind::NanLoss, format!("epoch {e}: NaN in training"));
        } else if let Some(l) = r.loss.filter(|l| !l.is_finite() || *l >= th.big_loss) {
            found(
                SymptomKind::NanLoss,
                format!("epoch {e}: loss {} >= {}", g(l), g(th.big_loss)),
            );
        }
        let has_act = r.layers.iter().any(|l| l.act.is_some());
        let n = r.layers.len();
        for (j, l) in r.layers.iter().enumerate() {
            let relu = match &l.act {
                Some(a) => a.eq_ignore_ascii_case("relu"),
                None => !has_act && j + 1 < n,
            };
            if !relu {
                continue;
            }
            for (what, frac) in [
                ("grad_zero_frac", l.grad_zero_frac),
                ("dead_frac", l.dead_frac),
            ] {
                if let Some(f) = frac.filter(|f| *f >= th.dying_frac) {
                    found(
                        SymptomKind::DyingRelu,
                        format!(
                            "epoch {e}: layer {} (relu) has {what} = {} >= {}",
                            name(j, l),
                            g(f),
                            th.dying_frac
                        ),
                    );
                }
            }
        }
    }
    for (curve, values) in [
        ("acc", records.iter().map(|r| r.acc).collect::<Vec<_>>()),
        ("val_acc", records.iter().map(|r| r.val_acc).collect()),
    ] {
        let xs: Vec<f64> = values
            .into_iter()
            .flatten()
            .filter(|x| x.is_finite())
            .collect();
        let pairs = oscillations(&xs, th.oscillation_delta);
        if xs.len() >= 4 && pairs as f64 >= th.oscillation_rate * xs.len() as f64 {
            found(
                SymptomKind::Unstable,
                format!(
                    "{curve} oscillates: {pairs} pairs of adjacent local extrema differ by >= {} over {} epochs",
                    th.oscillation_delta,
                    xs.len()
                ),
            );
        }
    }
    let acc = finite(records, |r| r.acc);
    let val = finite(records, |r| r.val_acc);
    if acc.len() >= 2 {
        let max_acc = acc.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let max_val = val.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let best_gain = acc
            .windows(2)
            .map(|w| w[1] - w[0])
            .fold(f64::NEG_INFINITY, f64::max);
        if max_acc < th.slow_acc && max_val < th.slow_acc && best_gain < th.slow_gain {
            found(
                SymptomKind::NotConverging,
                format!(
                    "max acc {} < {}{} and the largest epoch gain {} < {}",
                    g(max_acc),
                    th.slow_acc,
                    if val.is_empty() {
                        String::new()
                    } else {
                        format!(", max val_acc {}", g(max_val))
                    },
                    g(best_gain),
                    th.slow_gain
                ),
            );
        }
    }
    if let Some(evidence) = still_falling(records, th.still_falling) {
        found(SymptomKind::StillImproving, evidence);
    }
    if let Some(evidence) = few_updates(records, th) {
        found(SymptomKind::FewUpdates, evidence);
    }
    if let Some(evidence) = linear_model(records, th, name) {
        found(SymptomKind::LinearModel, evidence);
    }
    out.sort_by_key(|s| s.kind);
    out
}

/// [`detect_named`] for a subject's task, plus the checks only the rules engine reads: a
/// crawling loss, stuck predictions (classification) and a bounded output (regression; only the
/// task tells it from a confident classifier).
pub fn detect_for(
    records: &[EpochRecord],
    th: &Thresholds,
    name: &dyn Fn(usize, &LayerRecord) -> String,
    task: Task,
) -> Vec<Symptom> {
    let mut out = detect_named(records, th, name);
    if let Some(why) = diverged(records, th) {
        out.push(Symptom::new(SymptomKind::Diverged, why));
    }
    if let Some(why) = crawling_loss(records) {
        out.push(Symptom::new(SymptomKind::CrawlingLoss, why));
    }
    if task == Task::Classification
        && let Some(why) = stuck_predictions(records)
    {
        out.push(Symptom::new(SymptomKind::StuckPredictions, why));
    }
    if task == Task::Regression
        && let Some((j, act, why)) = output_layer(records)
            .and_then(|(j, act)| bounded_output(records, &act).map(|why| (j, act, why)))
    {
        let layer = records
            .iter()
            .find_map(|r| r.layers.get(j))
            .map(|l| name(j, l))
            .unwrap_or_default();
        out.push(Symptom::new(
            SymptomKind::BoundedOutput,
            format!("regression output layer {layer} ({act}) is bounded: {why}"),
        ));
    }
    out.sort_by_key(|s| s.kind);
    out
}

/// The finite values of `f` over the records, in epoch order.
fn finite(records: &[EpochRecord], f: fn(&EpochRecord) -> Option<f64>) -> Vec<f64> {
    records
        .iter()
        .filter_map(f)
        .filter(|x| x.is_finite())
        .collect()
}

/// Why the training diverged (see [`SymptomKind::Diverged`]): at least 3 epochs; every hidden
/// layer (all but the last of a record) has a gradient in the first record and none from some
/// later epoch to the end; the loss reached [`Thresholds::big_loss`] or never fell below the
/// first epoch's; and nothing was NaN or infinite.
pub fn diverged(records: &[EpochRecord], th: &Thresholds) -> Option<String> {
    let hidden_grads = |r: &EpochRecord| -> Option<Vec<f64>> {
        let n = r.layers.len();
        (n >= 2)
            .then(|| r.layers[..n - 1].iter().map(|l| l.grad_norm).collect())
            .flatten()
    };
    if records.len() < 3 {
        return None;
    }
    let alive = hidden_grads(&records[0])?;
    if !alive.iter().all(|g| *g > 0.0 && g.is_finite()) {
        return None;
    }
    let dead_from = (1..records.len())
        .rev()
        .take_while(|&i| hidden_grads(&records[i]).is_some_and(|gs| gs.iter().all(|g| *g == 0.0)))
        .last()?;
    let e = epoch_no(&records[dead_from], dead_from);
    // A NaN has causes of its own (an unbounded output under a log loss, …): AutoTrainer's
    // NaN repairs treat it. A divergence here is one the numbers show while they stay finite.
    if records
        .iter()
        .any(|r| r.nan || r.loss.is_some_and(|l| !l.is_finite()))
    {
        return None;
    }
    let blew_up = records.iter().enumerate().find_map(|(i, r)| {
        let loss = r.loss.filter(|l| *l >= th.big_loss)?;
        Some(format!(
            "the loss reached {} in epoch {}",
            g(loss),
            epoch_no(r, i)
        ))
    });
    let why = match blew_up {
        Some(why) => why,
        None => {
            let loss = finite(records, |r| r.loss);
            let first = *loss.first()?;
            if loss.len() < 3 || loss[1..].iter().any(|l| *l < first) {
                return None;
            }
            format!(
                "the loss never fell below its first epoch's {} (last {})",
                g(first),
                g(*loss.last()?)
            )
        }
    };
    Some(format!(
        "the hidden layers had gradients in epoch {} and none from epoch {e} on, and {why}: \
         the steps broke the network (a learning rate far too large)",
        epoch_no(&records[0], 0)
    ))
}

/// Why the loss crawls (see [`SymptomKind::CrawlingLoss`]): at least 5 epochs, the loss falling
/// in at least 90% of the steps from one epoch to the next, and by less than 10% in all.
pub fn crawling_loss(records: &[EpochRecord]) -> Option<String> {
    let loss = finite(records, |r| r.loss);
    let (&first, &last) = (loss.first()?, loss.last()?);
    if loss.len() < 5 || first <= 0.0 {
        return None;
    }
    let steps = loss.len() - 1;
    let falls = loss.windows(2).filter(|w| w[1] < w[0]).count();
    let fell = (first - last) / first;
    (falls * 10 >= steps * 9 && (0.0..0.10).contains(&fell)).then(|| {
        format!(
            "the loss fell in {falls} of {steps} epochs but only {:.1}% in all ({} → {}): \
             the optimizer's steps are too small",
            100.0 * fell,
            g(first),
            g(last)
        )
    })
}

/// Why the predictions are stuck (see [`SymptomKind::StuckPredictions`]): over the last half of
/// at least 6 epochs, the train accuracy stays within 1e-4 and below 0.999, the validation
/// accuracy (when recorded) within 1e-4 too, and the loss falls by less than 1%.
pub fn stuck_predictions(records: &[EpochRecord]) -> Option<String> {
    if records.len() < 6 {
        return None;
    }
    let tail = &records[records.len() / 2..];
    let flat = |xs: &[f64]| {
        let (lo, hi) = xs
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
                (lo.min(*x), hi.max(*x))
            });
        hi - lo <= 1e-4
    };
    let acc = finite(tail, |r| r.acc);
    let val = finite(tail, |r| r.val_acc);
    let loss = finite(tail, |r| r.loss);
    if acc.len() < tail.len() || !flat(&acc) || acc[0] >= 0.999 {
        return None;
    }
    if !val.is_empty() && (val.len() < tail.len() || !flat(&val)) {
        return None;
    }
    let (&l0, &l1) = (loss.first()?, loss.last()?);
    if l0 <= 0.0 || (l0 - l1) / l0 >= 0.01 {
        return None;
    }
    let val = val
        .first()
        .map(|v| format!(", validation {}", g(*v)))
        .unwrap_or_default();
    Some(format!(
        "train accuracy {} in each of the last {} epochs{val}, loss {} → {}: the predictions \
         no longer change",
        g(acc[0]),
        tail.len(),
        g(l0),
        g(l1)
    ))
}

/// Output activations whose values lie in [-1, 1].
pub const SQUASHING: [&str; 5] = ["sigmoid", "softmax", "tanh", "hard_sigmoid", "softsign"];

/// The output layer's position and activation, as the trace records them.
fn output_layer(records: &[EpochRecord]) -> Option<(usize, String)> {
    let n = records.iter().map(|r| r.layers.len()).max()?;
    let j = n.checked_sub(1)?;
    let act = records
        .iter()
        .find_map(|r| r.layers.get(j).and_then(|l| l.act.clone()))?;
    Some((j, act.to_ascii_lowercase()))
}

/// Why an output layer with activation `act` is pinned at its bound (see
/// [`SymptomKind::BoundedOutput`]); `None` when `act` does not squash or nothing shows it.
/// Localisation's `bounded-regression-output` monitor reads the same signs.
pub fn bounded_output(records: &[EpochRecord], act: &str) -> Option<String> {
    if !SQUASHING.contains(&act) {
        return None;
    }
    let j = records
        .iter()
        .map(|r| r.layers.len())
        .max()?
        .checked_sub(1)?;
    let series = |f: fn(&LayerRecord) -> Option<f64>| -> Vec<f64> {
        records
            .iter()
            .filter_map(|r| r.layers.get(j).and_then(f))
            .filter(|v| v.is_finite())
            .collect()
    };
    let sat = series(|l| l.saturated_frac);
    let hot = sat.iter().filter(|v| **v >= 0.5).count();
    let loss = finite(records, |r| r.loss);
    if sat.len() >= 2 && hot * 2 >= sat.len() {
        return Some(format!("saturated in {hot} of {} epochs", sat.len()));
    }
    if let Some(&o) = series(|l| l.mean_abs_out).last()
        && o >= 0.9
    {
        return Some(format!(
            "mean |out| = {} at the last epoch, at its bound 1",
            g(o)
        ));
    }
    if loss.len() >= 4 {
        let h = loss.len() / 2;
        let b1 = loss[..h].iter().copied().fold(f64::INFINITY, f64::min);
        let b2 = loss[h..].iter().copied().fold(f64::INFINITY, f64::min);
        if b1 > 0.0 && b2 >= 0.99 * b1 {
            return Some(format!(
                "the loss stops falling at {} (best of the first half {})",
                g(b2),
                g(b1)
            ));
        }
    }
    None
}

/// Why the network is a linear model that does not learn (see [`SymptomKind::LinearModel`]):
/// the layers before the output that record an activation all record `linear`, and the loss
/// fell by less than `th.linear_stall` of the first epoch's.
fn linear_model(
    records: &[EpochRecord],
    th: &Thresholds,
    name: &dyn Fn(usize, &LayerRecord) -> String,
) -> Option<String> {
    let layers = &records.iter().max_by_key(|r| r.layers.len())?.layers;
    let hidden: Vec<(usize, &LayerRecord)> = layers
        .iter()
        .enumerate()
        .take(layers.len().checked_sub(1)?)
        .filter(|(_, l)| l.act.is_some())
        .collect();
    if hidden.is_empty()
        || !hidden.iter().all(|(_, l)| {
            l.act
                .as_deref()
                .is_some_and(|a| a.eq_ignore_ascii_case("linear"))
        })
    {
        return None;
    }
    let losses: Vec<f64> = records.iter().filter_map(|r| r.loss).collect();
    let (first, last) = (*losses.first()?, *losses.last()?);
    if losses.len() < 2 || !first.is_finite() || !last.is_finite() || first <= 0.0 {
        return None;
    }
    let fall = (first - last) / first;
    (fall < th.linear_stall).then(|| {
        let names: Vec<String> = hidden.iter().map(|(j, l)| name(*j, l)).collect();
        format!(
            "hidden layer{} {} {} linear: the network is one linear map, and its loss fell {:.1}% ({} → {}) < {:.0}%",
            if names.len() == 1 { "" } else { "s" },
            names.join(", "),
            if names.len() == 1 { "is" } else { "are" },
            fall.max(0.0) * 100.0,
            g(first),
            g(last),
            th.linear_stall * 100.0
        )
    })
}

/// Why the loss was still falling when training stopped (see [`SymptomKind::StillImproving`]).
fn still_falling(records: &[EpochRecord], min_fall: f64) -> Option<String> {
    let losses: Vec<f64> = records.iter().filter_map(|r| r.loss).collect();
    if losses.len() < 4 || losses.iter().any(|l| !l.is_finite()) {
        return None;
    }
    let last = &losses[losses.len() - 4..];
    let falls = last.windows(2).all(|w| w[1] < w[0]);
    let fall = (last[2] - last[3]) / last[2].abs().max(f64::MIN_POSITIVE);
    (falls && fall >= min_fall).then(|| {
        format!(
            "the loss fell in each of the last 3 epochs ({} → {} → {} → {}), the last by {:.1}% >= {:.0}%",
            g(last[0]),
            g(last[1]),
            g(last[2]),
            g(last[3]),
            fall * 100.0,
            min_fall * 100.0
        )
    })
}

/// Why the training was too short to learn (see [`SymptomKind::FewUpdates`]): every record
/// counts its updates, fewer than `th.few_updates` in all, and the loss fell by less than
/// `th.few_updates_fall` of the first epoch's.
fn few_updates(records: &[EpochRecord], th: &Thresholds) -> Option<String> {
    let steps: Option<Vec<u64>> = records.iter().map(|r| r.steps).collect();
    let total: u64 = steps?.iter().sum();
    let losses: Vec<f64> = records.iter().filter_map(|r| r.loss).collect();
    let (first, last) = (*losses.first()?, *losses.last()?);
    if total == 0 || total >= th.few_updates || !first.is_finite() || !last.is_finite() {
        return None;
    }
    let fall = (first - last) / first.abs().max(f64::MIN_POSITIVE);
    (fall < th.few_updates_fall).then(|| {
        let epochs = records.len();
        format!(
            "{total} optimizer updates in {epochs} epoch{} ({} per epoch) < {}, and the loss fell {:.0}% ({} → {}) < {:.0}%",
            if epochs == 1 { "" } else { "s" },
            total.div_ceil(epochs as u64),
            th.few_updates,
            fall.max(0.0) * 100.0,
            g(first),
            g(last),
            th.few_updates_fall * 100.0
        )
    })
}

/// Pairs of adjacent interior local extrema (a peak then a trough, or back) that differ by at
/// least `delta`. Plateaus count as one point.
pub fn oscillations(xs: &[f64], delta: f64) -> usize {
    let mut pts: Vec<f64> = Vec::with_capacity(xs.len());
    for &x in xs {
        if pts.last() != Some(&x) {
            pts.push(x);
        }
    }
    let extrema: Vec<f64> = (1..pts.len().saturating_sub(1))
        .filter(|&i| {
            (pts[i] > pts[i - 1] && pts[i] > pts[i + 1])
                || (pts[i] < pts[i - 1] && pts[i] < pts[i + 1])
        })
        .map(|i| pts[i])
        .collect();
    extrema
        .windows(2)
        .filter(|w| (w[1] - w[0]).abs() >= delta - 1e-12)
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn records(losses: &[f64], steps: Option<u64>) -> Vec<EpochRecord> {
        let epochs: Vec<Value> = losses
            .iter()
            .enumerate()
            .map(|(i, l)| match steps {
                Some(s) => json!({"epoch": i, "loss": l, "steps": s}),
                None => json!({"epoch": i, "loss": l}),
            })
            .collect();
        parse_trace(&epochs)
    }

    fn kinds(r: &[EpochRecord]) -> Vec<SymptomKind> {
        detect(r).into_iter().map(|s| s.kind).collect()
    }

    fn for_task(r: &[EpochRecord], task: Task) -> Vec<SymptomKind> {
        detect_for(r, &Thresholds::default(), &|j, _| j.to_string(), task)
            .into_iter()
            .map(|s| s.kind)
            .collect()
    }

    /// Three-layer records: `(loss, hidden gradient norm, output gradient norm)` per epoch.
    fn with_grads(epochs: &[(f64, f64, f64)]) -> Vec<EpochRecord> {
        let v: Vec<Value> = epochs
            .iter()
            .enumerate()
            .map(|(i, (loss, hidden, out))| {
                json!({"epoch": i, "loss": loss, "acc": 0.1, "layers": [
                    {"name": "dense", "act": "relu", "grad_norm": hidden},
                    {"name": "dense_1", "act": "relu", "grad_norm": hidden},
                    {"name": "dense_2", "act": "softmax", "grad_norm": out}]})
            })
            .collect();
        parse_trace(&v)
    }

    #[test]
    fn gradients_that_die_as_the_loss_blows_up_or_never_falls_are_a_divergence() {
        // digits-mlp-keras at lr 5 on the TensorFlow backend: a loss of 23489 in the first
        // epoch, then the hidden layers without gradient (the output layer keeps one).
        let tf = with_grads(&[(23489.0, 0.54, 0.38), (2.81, 0.0, 0.44), (2.55, 0.0, 0.30)]);
        let k = for_task(&tf, Task::Classification);
        assert_eq!(k[0], SymptomKind::Diverged, "{k:?}");
        let why = diverged(&tf, &Thresholds::default()).unwrap();
        assert!(
            why.contains("none from epoch 1 on") && why.contains("reached 2.35e4 in epoch 0"),
            "{why}"
        );
        // The same program on the torch backend: no big loss, but it never fell below the
        // first epoch's and every gradient is 0 from epoch 1.
        let torch = with_grads(&[(14.255, 0.67, 0.47), (14.528, 0.0, 0.0), (14.528, 0.0, 0.0)]);
        assert_eq!(
            for_task(&torch, Task::Classification)[0],
            SymptomKind::Diverged
        );
        // Only detect_for looks for it.
        assert!(!kinds(&torch).contains(&SymptomKind::Diverged));

        // Near misses. A softmax over one unit: no gradient from the start (nothing died).
        let never = with_grads(&[(0.69, 0.0, 0.0), (0.69, 0.0, 0.0), (0.69, 0.0, 0.0)]);
        assert!(diverged(&never, &Thresholds::default()).is_none());
        // Dead hidden layers with a loss that falls below its first epoch's and stays finite.
        let falls = with_grads(&[(2.3, 0.5, 0.3), (1.9, 0.0, 0.3), (1.7, 0.0, 0.3)]);
        assert!(diverged(&falls, &Thresholds::default()).is_none());
        // Gradients that come back at the end: not dead "from some epoch on".
        let back = with_grads(&[(5e3, 0.5, 0.3), (2.0, 0.0, 0.3), (2.0, 0.1, 0.3)]);
        assert!(diverged(&back, &Thresholds::default()).is_none());
        // Too short to tell.
        assert!(diverged(&tf[..2], &Thresholds::default()).is_none());
        // A NaN (held-out H1: a relu output under cross-entropy) is NanLoss's, not this.
        let mut nan = tf.clone();
        nan[0].nan = true;
        assert!(diverged(&nan, &Thresholds::default()).is_none());
    }

    #[test]
    fn a_loss_that_falls_every_epoch_by_a_little_crawls() {
        // H9's trace (adadelta at lr 0.001 on an unscaled regression target): 233.40 -> 230.14
        // over 20 epochs, falling in every one.
        let crawl: Vec<f64> = (0..20).map(|i| 233.4023 - 0.1717 * i as f64).collect();
        assert_eq!(
            for_task(&records(&crawl, None), Task::Regression),
            vec![SymptomKind::CrawlingLoss]
        );
        let e = crawling_loss(&records(&crawl, None)).unwrap();
        assert!(
            e.starts_with("the loss fell in 19 of 19 epochs but only 1.4% in all"),
            "{e}"
        );
        // Near misses: a loss that fell by a third (it learns); a converged loss that wobbles
        // around its floor; too few epochs to tell.
        let learns: Vec<f64> = (0..20).map(|i| 1.0 - 0.018 * i as f64).collect();
        assert!(crawling_loss(&records(&learns, None)).is_none());
        let wobbles = [0.31, 0.30, 0.301, 0.299, 0.3005, 0.2995, 0.3001, 0.2999];
        assert!(crawling_loss(&records(&wobbles, None)).is_none());
        assert!(crawling_loss(&records(&crawl[..4], None)).is_none());
    }

    /// Epochs with these losses and train / validation accuracies.
    fn with_acc(losses: &[f64], acc: &[f64], val_acc: &[f64]) -> Vec<EpochRecord> {
        let epochs: Vec<Value> = (0..losses.len())
            .map(|i| json!({"epoch": i, "loss": losses[i], "acc": acc[i], "val_acc": val_acc[i]}))
            .collect();
        parse_trace(&epochs)
    }

    #[test]
    fn a_classifier_whose_accuracy_and_loss_stop_moving_is_stuck() {
        // H8's trace (mean absolute error on a 2-unit softmax, 88/12 classes): the majority
        // class from epoch 1 on.
        let loss = [
            0.326, 0.1406, 0.1278, 0.1256, 0.1248, 0.1244, 0.1242, 0.1241, 0.124, 0.124, 0.1239,
            0.1239, 0.1239, 0.1238, 0.1238,
        ];
        let mut acc = [0.8762; 15];
        acc[0] = 0.7791;
        let val = [0.8766; 15];
        let stuck = with_acc(&loss, &acc, &val);
        assert_eq!(
            for_task(&stuck, Task::Classification),
            vec![SymptomKind::StuckPredictions]
        );
        let e = stuck_predictions(&stuck).unwrap();
        assert!(
            e.starts_with("train accuracy 0.8762 in each of the last 8 epochs, validation 0.8766"),
            "{e}"
        );
        // Not for a regression; not when the accuracy still moves, is perfect, or the loss
        // still falls by a percent or more.
        assert!(for_task(&stuck, Task::Regression).is_empty());
        let mut moving = acc;
        moving[12] = 0.8771;
        assert!(stuck_predictions(&with_acc(&loss, &moving, &val)).is_none());
        assert!(stuck_predictions(&with_acc(&loss, &[1.0; 15], &[1.0; 15])).is_none());
        let falling: Vec<f64> = (0..15).map(|i| 0.5 - 0.01 * i as f64).collect();
        assert!(stuck_predictions(&with_acc(&falling, &acc, &val)).is_none());
    }

    #[test]
    fn a_training_of_few_updates_that_learnt_little_is_too_short() {
        // A GRU's 3 epochs of 4 batches: 12 updates, the loss still at chance.
        let short = records(&[0.7176, 0.7012, 0.6899], Some(4));
        assert_eq!(kinds(&short), vec![SymptomKind::FewUpdates]);
        let s = detect(&short);
        assert!(
            s[0].evidence
                .starts_with("12 optimizer updates in 3 epochs (4 per epoch) < 100"),
            "{}",
            s[0].evidence
        );
        // Near misses: enough updates; few updates that learnt (the loss fell by 80%); no
        // counts in the trace (a program that updates its weights by hand).
        assert!(kinds(&records(&[0.7176, 0.7012, 0.6899], Some(40))).is_empty());
        assert!(kinds(&records(&[1.0, 0.5, 0.2], Some(4))).is_empty());
        assert!(kinds(&records(&[0.7176, 0.7012, 0.6899], None)).is_empty());
    }

    /// Epochs of `losses` over layers with these activations (the last one the output), each
    /// with `out` as its mean |out| and no saturation.
    fn layered(losses: &[f64], acts: &[&str], out: f64) -> Vec<EpochRecord> {
        let epochs: Vec<Value> = losses
            .iter()
            .enumerate()
            .map(|(i, l)| {
                let layers: Vec<Value> = acts
                    .iter()
                    .enumerate()
                    .map(|(j, a)| {
                        json!({"name": j.to_string(), "kind": "Linear", "act": a,
                        "grad_norm": 0.1, "mean_abs_out": out, "saturated_frac": 0.0})
                    })
                    .collect();
                json!({"epoch": i, "loss": l, "layers": layers})
            })
            .collect();
        parse_trace(&epochs)
    }

    #[test]
    fn a_stalled_network_without_a_nonlinearity_is_a_linear_model() {
        // H3's trace: two linear hidden layers, the loss 0.706 -> 0.695.
        let stalled = [0.7058, 0.7001, 0.6975, 0.6952];
        let r = layered(&stalled, &["linear", "linear", "softmax"], 0.5);
        assert_eq!(kinds(&r), vec![SymptomKind::LinearModel]);
        let e = &detect(&r)[0].evidence;
        assert!(
            e.starts_with("hidden layers 0, 1 are linear: the network is one linear map, and its loss fell 1.5%"),
            "{e}"
        );
        // Near misses: one nonlinear hidden layer; a linear model that learns (a linear
        // regression fitting its data); layers without recorded activations.
        assert!(kinds(&layered(&stalled, &["linear", "relu", "softmax"], 0.5)).is_empty());
        let learning = [2.0, 1.0, 0.5, 0.3];
        assert!(
            !kinds(&layered(&learning, &["linear", "linear"], 0.5))
                .contains(&SymptomKind::LinearModel)
        );
        assert!(kinds(&records(&stalled, None)).is_empty());
    }

    #[test]
    fn a_regressions_squashed_output_is_bounded_only_for_a_regression() {
        let by_index = |j: usize, _: &LayerRecord| j.to_string();
        let th = Thresholds::default();
        // A sigmoid output pinned at 1 (H4's shape; its loss goes on falling a little).
        let falling = [170.0, 160.0, 158.0, 159.0];
        let r = layered(&falling, &["relu", "relu", "sigmoid"], 0.97);
        let found = detect_for(&r, &th, &by_index, Task::Regression);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].kind, SymptomKind::BoundedOutput);
        assert_eq!(
            found[0].evidence,
            "regression output layer 2 (sigmoid) is bounded: mean |out| = 0.9700 at the last epoch, at its bound 1"
        );
        // A loss that stops falling below an unpinned sigmoid also shows it.
        let stuck = [170.0, 150.0, 150.0, 150.0];
        let r = layered(&stuck, &["relu", "sigmoid"], 0.6);
        assert!(
            detect_for(&r, &th, &by_index, Task::Regression)[0]
                .evidence
                .contains("the loss stops falling at 150.0000")
        );
        // A confident classifier, and a linear regression output, are not bounded outputs.
        let r = layered(&falling, &["relu", "relu", "sigmoid"], 0.97);
        assert!(detect_for(&r, &th, &by_index, Task::Classification).is_empty());
        let r = layered(&falling, &["relu", "relu", "linear"], 0.97);
        assert!(detect_for(&r, &th, &by_index, Task::Regression).is_empty());
    }

    #[test]
    fn keras_accuracy_names_are_read_where_reprolab_names_are_absent() {
        let r = parse_trace(&[
            json!({"epoch": 0, "accuracy": 0.5, "val_accuracy": 0.4}),
            json!({"epoch": 1, "acc": 0.6, "accuracy": 0.9, "val_acc": 0.7}),
        ]);
        assert_eq!((r[0].acc, r[0].val_acc), (Some(0.5), Some(0.4)));
        assert_eq!((r[1].acc, r[1].val_acc), (Some(0.6), Some(0.7)));
    }

    // Edge cases of the AutoTrainer checks, where this reading of a finished trace and
    // AutoTrainer's online monitor (shiningrain/AUTOTRAINER, AutoTrainer/utils/monitor.py) part
    // ways; see the module documentation.

    /// Epochs with these train and validation accuracies and a constant loss.
    fn curves(acc: &[f64], val: &[f64]) -> Vec<EpochRecord> {
        let epochs: Vec<Value> = (0..acc.len())
            .map(|i| json!({"epoch": i, "loss": 1.0, "acc": acc[i], "val_acc": val[i]}))
            .collect();
        parse_trace(&epochs)
    }

    #[test]
    fn oscillation_counts_adjacent_extrema_of_either_accuracy_over_the_whole_run() {
        // Extrema 0.60 (max), 0.55 (min), 0.65 (max), 0.64 (min): two adjacent pairs differ by
        // >= 0.03, and 2 >= 0.2 x 10 epochs. AutoTrainer's ol_judge pairs the k-th maximum with
        // the k-th minimum (0.60 - 0.55, 0.65 - 0.64): one pair, not unstable.
        let acc = [0.50, 0.60, 0.55, 0.65, 0.64, 0.70, 0.74, 0.78, 0.80, 0.82];
        assert_eq!(oscillations(&acc, 0.03), 2);
        assert_eq!(kinds(&curves(&acc, &acc)), vec![SymptomKind::Unstable]);
        // One pair fewer (the second maximum within 0.03 of its trough) is not enough.
        let calm = [0.50, 0.60, 0.55, 0.57, 0.56, 0.70, 0.74, 0.78, 0.80, 0.82];
        assert_eq!(oscillations(&calm, 0.03), 1);
        assert!(kinds(&curves(&calm, &calm)).is_empty());
        // A plateau is one point (AutoTrainer's non-strict test makes each of its points both a
        // maximum and a minimum); the difference is taken at 0.03 inclusive.
        assert_eq!(oscillations(&[0.5, 0.6, 0.6, 0.6, 0.5, 0.6], 0.03), 1);
        assert_eq!(oscillations(&[0.5, 0.6, 0.5, 0.6], 0.03), 1);
        assert_eq!(oscillations(&[0.5, 0.53, 0.5, 0.53], 0.03), 1);
        assert_eq!(oscillations(&[0.5, 0.529, 0.5, 0.529], 0.03), 0);
        // The validation accuracy counts too (AutoTrainer reads the training accuracy only).
        let rising: Vec<f64> = (0..10).map(|i| 0.5 + 0.04 * i as f64).collect();
        let zigzag = [0.5, 0.6, 0.5, 0.6, 0.5, 0.6, 0.5, 0.6, 0.5, 0.6];
        let s = detect(&curves(&rising, &zigzag));
        assert_eq!(s.len(), 1, "{s:?}");
        assert!(
            s[0].evidence.starts_with("val_acc oscillates: 7 pairs"),
            "{}",
            s[0].evidence
        );
        assert!(kinds(&curves(&rising, &rising)).is_empty());
        // The rate is of all the epochs: three early pairs in 30 epochs are below 0.2 x 30 (at its
        // check of epoch 6, AutoTrainer sees 2 pairs in 7 epochs and stops the training).
        let mut early = vec![0.5, 0.6, 0.5, 0.6, 0.5, 0.6, 0.65];
        early.extend((0..23).map(|i| 0.66 + 0.01 * i as f64));
        assert_eq!(oscillations(&early, 0.03), 3);
        assert!(kinds(&curves(&early, &early)).is_empty());
    }

    #[test]
    fn slow_convergence_reads_the_training_accuracys_gains_over_the_whole_run() {
        // Training accuracy flat at 0.30 while the validation accuracy gains 0.05 an epoch, both
        // below 0.6: not converging here. AutoTrainer's sc_accuracy needs both curves to gain
        // < 0.01 in every epoch, so it would not report it.
        let flat = [0.30; 6];
        let gaining = [0.30, 0.35, 0.40, 0.45, 0.50, 0.55];
        assert_eq!(
            kinds(&curves(&flat, &gaining)),
            vec![SymptomKind::NotConverging]
        );
        // Θ = 0.6 (AutoTrainer's reproduce.py; its default is 0.7), exclusive.
        assert!(kinds(&curves(&[0.6; 6], &[0.3; 6])).is_empty());
        assert_eq!(
            kinds(&curves(&[0.599; 6], &[0.3; 6])),
            vec![SymptomKind::NotConverging]
        );
        // A slow start that converges later is judged on the whole run (AutoTrainer judges the
        // epochs seen at its first check after 30% of the training and would stop it there).
        let mut late = vec![0.10; 10];
        late.extend((1..=10).map(|i| 0.10 + 0.08 * i as f64));
        assert!(kinds(&curves(&late, &late)).is_empty());
    }

    /// Records of three layers with these gradient norms (None: not measured or non-finite).
    fn grads(epochs: &[[Option<f64>; 3]]) -> Vec<EpochRecord> {
        let v: Vec<Value> = epochs
            .iter()
            .enumerate()
            .map(|(i, g)| {
                let layers: Vec<Value> = g
                    .iter()
                    .enumerate()
                    .map(|(j, gn)| json!({"name": j.to_string(), "act": "tanh", "grad_norm": gn}))
                    .collect();
                json!({"epoch": i, "loss": 1.0, "layers": layers})
            })
            .collect();
        parse_trace(&v)
    }

    #[test]
    fn gradient_ratio_edges() {
        let k = |g: [Option<f64>; 3]| kinds(&grads(&[g]));
        // ‖g_first‖ / ‖g_last‖ > 70, strictly (AutoTrainer: gra_rate > threshold_high).
        assert!(k([Some(7.0), Some(1.0), Some(0.1)]).is_empty());
        assert_eq!(
            k([Some(7.1), Some(1.0), Some(0.1)]),
            vec![SymptomKind::ExplodingGradient]
        );
        // Vanishing needs both a ratio < 1e-3 and ‖g_first‖ < 1e-4.
        assert!(k([Some(2e-4), Some(1.0), Some(10.0)]).is_empty());
        assert_eq!(
            k([Some(5e-5), Some(1.0), Some(0.1)]),
            vec![SymptomKind::VanishingGradient]
        );
        // A last layer without gradient gives no ratio (AutoTrainer's numpy division gives inf,
        // an exploding gradient); a first layer without a measured gradient is skipped, the next
        // one stands in for it.
        assert!(k([Some(0.5), Some(0.2), Some(0.0)]).is_empty());
        let s = detect(&grads(&[[None, Some(1e-5), Some(0.1)]]));
        assert_eq!(s.len(), 1, "{s:?}");
        assert_eq!(s[0].kind, SymptomKind::VanishingGradient);
        assert!(
            s[0].evidence.contains("(layers 1 and 2)"),
            "{}",
            s[0].evidence
        );
    }

    #[test]
    fn a_large_loss_is_read_on_the_training_loss_and_a_nan_through_the_flag() {
        let epochs = |val_loss: f64, nan: bool| {
            parse_trace(&[
                json!({"epoch": 0, "loss": 5.0, "val_loss": 4.0, "nan": false}),
                json!({"epoch": 1, "loss": 4.0, "val_loss": val_loss, "nan": nan}),
            ])
        };
        // A validation loss >= 1e3 alone is not read (AutoTrainer's check_large_loss reads it).
        assert!(kinds(&epochs(2e3, false)).is_empty());
        // A non-finite validation loss reaches the trace as the record's nan flag.
        assert_eq!(kinds(&epochs(3.0, true)), vec![SymptomKind::NanLoss]);
        // The training loss: >= 1e3 inclusive.
        let big = parse_trace(&[json!({"epoch": 0, "loss": 1e3})]);
        assert_eq!(kinds(&big), vec![SymptomKind::NanLoss]);
        let below = parse_trace(&[json!({"epoch": 0, "loss": 999.9})]);
        assert!(kinds(&below).is_empty());
    }

    #[test]
    fn dying_relu_is_per_relu_layer_and_inclusive() {
        let rec = |zero: f64| {
            parse_trace(&[json!({"epoch": 0, "loss": 1.0, "layers": [
                {"name": "0", "act": "tanh", "grad_norm": 0.5, "grad_zero_frac": 0.0},
                {"name": "1", "act": "relu", "grad_norm": 0.1, "grad_zero_frac": zero},
                {"name": "2", "act": "softmax", "grad_norm": 0.2, "grad_zero_frac": 0.0}]})])
        };
        // One relu layer with 70% zero gradients is enough, whatever the other layers' share
        // (AutoTrainer's share is of every gradient entry of the network, kernels and biases).
        assert_eq!(kinds(&rec(0.7)), vec![SymptomKind::DyingRelu]);
        assert!(kinds(&rec(0.699)).is_empty());
        // A layer's dead units count as well (the trace's dead_frac, not an AutoTrainer signal).
        let dead = parse_trace(&[json!({"epoch": 0, "loss": 1.0, "layers": [
            {"name": "0", "act": "relu", "grad_norm": 0.5, "grad_zero_frac": 0.1, "dead_frac": 0.7},
            {"name": "1", "act": "softmax", "grad_norm": 0.2}]})]);
        assert_eq!(kinds(&dead), vec![SymptomKind::DyingRelu]);
    }
}
