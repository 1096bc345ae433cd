//! Dynamic monitors over one traced training (AutoTrainer and DeepDiagnosis signals, reference
//! §8). AutoTrainer's symptoms come from `reprolab_core::symptoms::detect` (same thresholds);
//! the DeepDiagnosis-style checks are added here.
//!
//! | id | symptom | suspects |
//! |---|---|---|
//! | `nan-loss` | NaN/Inf in training, loss ≥ 1e3, or weights turning non-finite | HLR 0.75; ACH(i) 0.5 of exponential layers; LCH 0.45 with poisson/MSLE/MAPE |
//! | `nan-loss` | NaN from the first epoch at a learning rate inside the optimiser's usual range | HLR 0.45, LCH 0.45 |
//! | `nan-loss` | only a loss ≥ 1e3 that is finite in every epoch and not growing (the loss' scale) | LCH 0.45, HLR 0.3 |
//! | `exploding-gradient` | ‖g_first‖/‖g_last‖ > 70 or a non-finite gradient | HLR 0.7; ACH(i) 0.5 of exponential layers |
//! | `vanishing-gradient` | ‖g_first‖/‖g_last‖ < 1e-3 and ‖g_first‖ < 1e-4 | ACH(i) 0.6 of saturating hidden layers; WCI(first) 0.35 (0.15 when a ReLU layer is mostly dead: the dying ReLUs explain it); HLR 0.25 |
//! | `dying-relu` | a relu layer with dead_frac ≥ 0.7, or grad_zero_frac ≥ 0.7 while gradient reaches it from above | ACH(i) 0.45, HLR 0.5, WCI(i) 0.3; dead already at the first batch (initial weights): WCI(i) 0.55, ACH(i) 0.35 |
//! | `saturation` | a hidden sigmoid/tanh/softsign/hard_sigmoid layer with saturated_frac > 0.5 in ≥ ⅓ of the epochs | ACH(i) 0.55, WCI(i) 0.35 |
//! | `zero-weights` | a layer whose weight norm is 0 at the first epoch | WCI(i) 0.6 |
//! | `zero-gradient` | a hidden layer with grad_norm ≤ 1e-7 in ≥ half the epochs, not blocked from above | WCI(i) 0.45; ACH(i) 0.4 for relu/saturating layers alive at the first batch |
//! | `unchanged-weights` | no layer's weight norm changes (relative 1e-7) over 5 consecutive epochs | HLR 0.5, OCH 0.35 (×0.3 when a layer without gradient explains it) |
//! | `loss-flat` | the best loss is within 0.1% of the first epoch's (≥ 3 epochs) | HLR 0.45, OCH 0.35, LCH 0.35 |
//! | `loss-diverging` | the last loss > 1.5 × the first and > 2 × the best | HLR 0.6 |
//! | `acc-flat` | training accuracy constant (spread < 0.005) below 0.99 over ≥ 5 epochs while the training loss drops < 10% | LCH 0.4, ACH(last) 0.4, HLR 0.3 |
//! | `not-converging` | AutoTrainer's slow convergence: max acc and val_acc < 0.6, no epoch gains ≥ 0.01 | HLR 0.45, OCH 0.4, HNE 0.3 |
//! | `unstable` | AutoTrainer's oscillation: ≥ 0.2·epochs pairs of extrema differing ≥ 0.03 | HLR 0.45, HBS 0.4 |
//! | `still-improving` | the validation accuracy still gains ≥ 0.02, or the validation loss still drops ≥ 5% (regression: the loss only), over the last quarter of the epochs, and is at its best | HNE 0.45 (0.6 for ≥ 0.05 / ≥ 15%); with it the config's likely cause of the slowness: HLR 0.5 when lr < half the optimiser's usual value, HBS 0.5 when batch_size ≥ 256, OCH 0.35 for sgd/adagrad/adadelta |
//! | `few-updates` | fewer than 100 optimizer updates in the whole training (the records' `steps`) and the loss fell by less than half | HBS 0.6 when fewer than 10 updates per epoch with batch_size > 32 (0.3 with more; none at ≤ 32: the dataset is small), HNE 0.55 |
//! | `output-pinned` | softmax output with mean \|out\| = 1 (a single unit), from one epoch on | ACH(last) 0.85 |
//! | `output-pinned` | non-softmax output whose mean \|out\| never changes | ACH(last) 0.5, LCH 0.45 |
//! | `output-pinned` | classification sigmoid output with mean \|out\| ≥ 0.99 or ≤ 0.01 in every epoch after the first | LCH 0.5, ACH(last) 0.35 |
//! | `output-no-gradient` | the output layer's gradient norm is 0 in ≥ half the epochs, output not saturated | LCH 0.6; softmax output: ACH(last) 0.7, LCH 0.3; relu/hard_sigmoid output: ACH(last) 0.5, LCH 0.4 |
//! | `output-no-gradient` | the same with a saturated output (mean saturated_frac ≥ 0.5) | HLR 0.4, ACH(last) 0.3 |
//! | `output-no-gradient` | the same after a blow-up (NaN, exploding gradient, oscillation, a diverging loss, a weight norm grown ≥ 10×) | HLR 0.6, ACH(last) 0.2 |
//! | `steady-descent` | the training loss falls in ≥ 90% of the epochs, never rises > 0.5%, drops 0.5–50% in all, and the last quarter's pace is ≥ half the first quarter's | HNE 0.5 (0.4 when lr < half the usual value, batch_size ≥ 256 or a slow optimiser explains the pace); HLR 0.55 when lr ≤ the optimiser's usual default, else 0.3; OCH 0.3 for sgd/adagrad/adadelta; with `still-improving` a label counts once (max) |
//! | `train-val-mismatch` | the training loss falls ≥ 90% while the validation loss never drops below its first value (classification: validation accuracy never gains 0.02 and ends < 0.5) | CPP 0.6 |
//! | `bounded-regression-output` | regression, squashing output saturated in ≥ half the epochs, or mean \|out\| ≥ 0.9 at the end, or a loss that stops falling | ACH(last) 0.7 |
//! | `large-activations` | a hidden layer with mean \|out\| ≥ 10, grown ≥ 10× from the first batch | HLR 0.55 (0.4 when exponential) |
//! | `large-activations` | the same, large from the first batch | WCI(i) 0.35, CPP 0.3 |
//! | `large-activations` | either, on an exponential layer | ACH(i) 0.5 |
//!
//! "Blocked from above" (record by record): the next layer has all-zero weights, is mostly dead
//! (dead_frac ≥ 0.7 under relu, relu6 or hard_sigmoid, which pass no gradient where their output
//! is ≤ 0: the tracer measures dead_frac for every activation, and a tanh, linear or ELU unit
//! with negative outputs still passes gradient), or gets no gradient itself (the output layer
//! with gradient norm 0, a hidden layer with zero gradient that is blocked in turn). Zero
//! gradients of a blocked layer are a consequence, not a fault of that layer.
//!
//! The generic "nothing moves" monitors (`zero-gradient`, `unchanged-weights`, `loss-flat`,
//! `acc-flat`, `not-converging`) see one symptom through correlated signals: per fault label they
//! count once, with the largest of their confidences (not the noisy-or of [`crate::merge`]). When
//! a pinned output or a gradient-less output layer explains the run (the first `output-pinned`
//! case, the first `output-no-gradient` case), or the training loss fell to ~0 (the training
//! targets are fitted), they report at 30% of their confidence — except for a label that a
//! non-stall monitor supports on its own (≥ 0.45): a second cause is not explained away by the
//! first (issue 20, item 1).
//!
//! Cross-checks before ranking (issue 20, item 5): a silent output after a blow-up is the
//! learning rate's doing, and a silent output with a fitted training set (loss ≤ 1e-4 × its
//! first value, accuracy ≥ 0.99) is no fault of the output layer.
//!
//! Where the signals depart from the tools' source: AutoTrainer's checks in
//! [`reprolab_core::symptoms`] (its module documentation). DeepDiagnosis (`callback/callbacks.py`
//! of DeepDiagnosis/ICSE2022, `mapFaluireToFix.on_epoch_end`) checks at each epoch's end on the
//! first `batch_size` training rows and stops at the first problem; the checks here that
//! resemble its own are read differently:
//!
//! * dead node: its share of *entries* (samples × units) ≤ 0 in the output of a separate relu
//!   or exponential Activation layer, ≥ 0.7, at the last epoch only. `dead_frac` is the share of
//!   *units* ≤ 0 for every sample of the batch, in any record: never above the entry share (a
//!   unit active on one sample in four is 75% dead entries there, alive here).
//! * saturation: > 50% of the pre-activation entries ≤ −5 or ≥ 5 before a separate sigmoid/tanh
//!   Activation layer, any one check of every fifth epoch; here in ≥ ⅓ of the records, hidden
//!   layers only.
//! * vanishing gradient: the mean |kernel gradient| of a Dense layer < 1e-7 in one check;
//!   `zero-gradient` wants the L2 norm of the layer's whole gradient ≤ 1e-7 (stricter: the mean
//!   |g| of n entries is at most ‖g‖₂/√n) in half the records, and not blocked from above.
//! * unchanged tensor: the mean of a Dense layer's kernel (or of its gradient or output, or the
//!   loss) exactly equal over an aligned block of 5 epochs (the accuracy: 20), any one layer;
//!   `unchanged-weights` wants every layer's weight norm unchanged (relative 1e-7) over any 5
//!   consecutive records; `loss-flat` and `acc-flat` are tests of their own.
//!
//! Trace layers are mapped to config layer indices with [`layer_map`].

use reprolab_core::symptoms::{
    EpochRecord, LayerRecord, SymptomKind, Thresholds, bounded_output, detect, detect_named,
    diverged, parse_trace,
};
use reprolab_core::{Config, FaultLabel, FaultType, Subject, Task};
use serde_json::Value;

use crate::Suspect;
use crate::arch::{Arch, SATURATING, canon, fmt_num};

/// How trace layers map to config layer indices.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayerMap {
    /// Config index of each trace layer, in trace order.
    pub indices: Vec<u32>,
    /// `structure`, `activations` or `order` (see [`layer_map`]).
    pub how: &'static str,
}

/// Maps the parametrised layers of a trace (model order) to config layer indices.
///
/// The study-style programs build, in order, layer `i` for every `act<i>` key, repeated
/// `layer<i>` times when the config has that key (an optional block, 0..2), else once; pooling,
/// flattening and dropout have no parameters and do not appear in traces. When the trace has
/// exactly that many layers they map position by position (`structure`). Otherwise each trace
/// layer is matched to a config index by its `act` field, moving forward through the indices
/// and allowing a repeated block to stay on its index (`activations`); without activation
/// names, by order, with surplus layers on the last index (`order`). The last trace layer is
/// always the output layer (the largest `act<i>` index).
pub fn layer_map(config: &Config, layers: &[LayerRecord]) -> LayerMap {
    let acts: Vec<(u32, String)> = crate::arch::indexed(config, "act")
        .into_iter()
        .map(|(i, v)| {
            let a = match v {
                Value::String(s) => canon(s),
                Value::Null => "linear".into(),
                o => canon(&o.to_string()),
            };
            (i, a)
        })
        .collect();
    let n = layers.len();
    if acts.is_empty() {
        return LayerMap {
            indices: (0..n as u32).collect(),
            how: "order",
        };
    }
    let mult = |i: u32| -> u64 {
        config
            .get(&format!("layer{i}"))
            .map(|v| v.as_u64().unwrap_or(1))
            .unwrap_or(1)
    };
    let expanded: Vec<u32> = acts
        .iter()
        .flat_map(|(i, _)| std::iter::repeat_n(*i, mult(*i) as usize))
        .collect();
    if expanded.len() == n {
        return LayerMap {
            indices: expanded,
            how: "structure",
        };
    }
    let last = acts.last().map(|(i, _)| *i).unwrap_or(0);
    let have_acts = layers.iter().all(|l| l.act.is_some());
    let mut indices = Vec::with_capacity(n);
    if have_acts {
        let mut cur: usize = 0;
        let mut started = false;
        for l in layers {
            let a = canon(l.act.as_deref().unwrap_or(""));
            let next = if started { cur + 1 } else { cur };
            let pos = if next < acts.len() && acts[next].1 == a {
                next
            } else if started && acts[cur].1 == a {
                cur
            } else {
                (next..acts.len())
                    .find(|&k| acts[k].1 == a)
                    .unwrap_or(next.min(acts.len() - 1))
            };
            cur = pos;
            started = true;
            indices.push(acts[pos].0);
        }
        if let Some(x) = indices.last_mut() {
            *x = last;
        }
        return LayerMap {
            indices,
            how: "activations",
        };
    }
    for j in 0..n {
        indices.push(acts.get(j).map(|(i, _)| *i).unwrap_or(last));
    }
    if let Some(x) = indices.last_mut() {
        *x = last;
    }
    LayerMap {
        indices,
        how: "order",
    }
}

/// Activations whose gradient is 0 wherever their output is ≤ 0: a unit that is ≤ 0 for the
/// whole batch (`dead_frac`) is dead under these only.
const GATED: [&str; 3] = ["relu", "relu6", "hard_sigmoid"];

struct Ctx<'a> {
    a: Arch<'a>,
    records: Vec<EpochRecord>,
    map: LayerMap,
    out: Vec<Suspect>,
    /// Suspects of the correlated "nothing moves" monitors, combined by maximum (not noisy-or)
    /// at the end: they see one symptom through several signals.
    stall: Vec<Suspect>,
    /// The confidence of each `stall` suspect before an explanation discounted it.
    stall_full: Vec<f64>,
    /// A pinned output explains a run where nothing moves.
    explained: bool,
    /// Some hidden layer gets no gradient (dead from the initial weights, all-zero weights, zero
    /// gradient): unchanged weights are explained by it, not by the learning rate.
    frozen: bool,
    /// The training loss reached ~0 (the training targets are fitted): gradients and weight
    /// changes vanish because nothing is left to learn, not because a layer is dead.
    fitted: bool,
    /// Why the first updates broke the network (`reprolab_core::symptoms::diverged`), if they
    /// did: nothing moves afterwards because of them, not because of the loss, the output or
    /// the optimizer.
    diverged: Option<String>,
}

impl Ctx<'_> {
    fn push(&mut self, s: Suspect) {
        self.out.push(s);
    }

    /// Pushes a generic "nothing moves" suspect, at 30% of its confidence when explained.
    fn push_generic(&mut self, mut s: Suspect) {
        self.stall_full.push(s.confidence);
        if self.explained {
            s.confidence *= 0.3;
            s.evidence
                .push_str(" (likely explained by the output layer)");
        } else if self.diverged.is_some() {
            s.confidence *= 0.3;
            s.evidence.push_str(" (likely explained by the divergence)");
        } else if self.fitted {
            s.confidence *= 0.3;
            s.evidence
                .push_str(" (the training loss is ~0: nothing is left to learn)");
        }
        self.stall.push(s);
    }

    /// Evidence that the updates blew the weights up (item 5 of issue 20: an exploding or
    /// oscillating run explains a silent output): a NaN or non-finite weight, AutoTrainer's
    /// exploding-gradient or oscillation symptom, a loss that diverges (last above 1.5 x first
    /// and 2 x best, as `loss-diverging`), or a layer whose weight norm grew 10x or more since
    /// the first epoch (the growth factor of `large-activations`).
    fn blow_up(&self) -> Option<String> {
        if self.records.iter().any(|r| r.nan) {
            return Some("NaN in training".into());
        }
        // Gradients alive at the start and dead from some epoch on, the loss never lower: the
        // first updates broke the network (the rules engine's `diverged`).
        if let Some(why) = &self.diverged {
            return Some(why.clone());
        }
        for s in detect(&self.records) {
            if matches!(
                s.kind,
                SymptomKind::ExplodingGradient | SymptomKind::Unstable | SymptomKind::NanLoss
            ) {
                return Some(format!("{}: {}", s.name, s.evidence));
            }
        }
        let loss = self.curve(|r| r.loss);
        if loss.len() >= 3 {
            let (first, last) = (loss[0], loss[loss.len() - 1]);
            let best = loss.iter().copied().fold(f64::INFINITY, f64::min);
            if first > 0.0 && last > 1.5 * first && last > 2.0 * best {
                return Some(format!(
                    "the loss diverges ({} -> {})",
                    fmt_num(first),
                    fmt_num(last)
                ));
            }
        }
        for j in 0..self.n_layers() {
            let w = self.series(j, |l| l.weight_norm);
            let (Some(&(_, w0)), Some(hi)) = (
                w.first(),
                w.iter()
                    .map(|x| x.1)
                    .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x)))),
            ) else {
                continue;
            };
            if w0 > 1e-12 && hi >= 10.0 * w0 {
                return Some(format!(
                    "layer {}'s weight norm grew {}x ({} -> {})",
                    self.idx(j),
                    fmt_num(hi / w0),
                    fmt_num(w0),
                    fmt_num(hi)
                ));
            }
        }
        None
    }

    /// Whether the training targets are fitted: the training loss fell to <= 1e-4 x its first
    /// value, and a classifier's training accuracy ends >= 0.99. (A loss that is ~0 from the
    /// first epoch on with a poor accuracy is a degenerate loss, not a fit.)
    fn training_fitted(&self) -> bool {
        let loss = self.curve(|r| r.loss);
        let fell = match (loss.first(), loss.last()) {
            (Some(&first), Some(&last)) if loss.len() >= 2 => {
                first > 1e-6 && last.abs() <= 1e-4 * first
            }
            _ => false,
        };
        let acc = self.curve(|r| r.acc);
        fell && (self.a.subject.task != Task::Classification
            || acc.last().is_none_or(|&a| a >= 0.99))
    }

    /// The stall suspects, one per label, with the largest confidence of its contributors.
    ///
    /// Each cause is scored on its own evidence (issue 20, item 1): an explanation (a pinned or
    /// silent output, a fitted training set) discounts the stall suspects because it accounts
    /// for the stall, but a label that another, non-stall monitor supports on its own (at
    /// confidence ≥ 0.45, e.g. `still-improving` or `steady-descent` for HNE/HLR) is a second
    /// cause at work, not one explained away: its stall suspects keep their full confidence.
    fn collapse_stall(&mut self) {
        let stall = std::mem::take(&mut self.stall);
        let full = std::mem::take(&mut self.stall_full);
        let discounted = self.explained || self.diverged.is_some() || self.fitted;
        for mut m in crate::merge(std::slice::from_ref(&stall)) {
            let corroborated = discounted
                && self
                    .out
                    .iter()
                    .any(|o| o.label == m.label && o.confidence >= 0.45);
            m.confidence = stall
                .iter()
                .zip(&full)
                .filter(|(s, _)| s.label == m.label)
                .map(|(s, f)| if corroborated { *f } else { s.confidence })
                .fold(0.0, f64::max);
            if corroborated {
                m.evidence
                    .push_str(" [kept: other monitors support this cause on their own]");
            }
            self.out.push(m);
        }
    }

    /// Whether, in record `k`, no gradient can flow back into layer `j` from above: the next
    /// layer has all-zero weights, is mostly dead (dead_frac ≥ 0.7), or itself gets none (the
    /// output layer with a zero gradient norm, a hidden layer with zero gradient that is blocked
    /// in turn).
    fn blocked(&self, k: usize, j: usize) -> bool {
        let Some(r) = self.records.get(k) else {
            return false;
        };
        let n = r.layers.len();
        let Some(next) = r.layers.get(j + 1) else {
            return false;
        };
        if next.weight_norm.is_some_and(|w| w <= 1e-12) {
            return true;
        }
        let zero_grad = next.grad_norm.is_some_and(|g| g <= 1e-12);
        if j + 2 == n {
            return zero_grad;
        }
        self.mostly_dead(next, j + 1) || (zero_grad && self.blocked(k, j + 1))
    }

    /// Whether layer `j` (record `l`) is mostly dead: `dead_frac ≥ 0.7` under an activation that
    /// passes no gradient where its output is ≤ 0 ([`GATED`]). The tracer measures `dead_frac`
    /// for every activation, but a tanh, linear, ELU/SELU or leaky unit whose outputs are all
    /// negative still passes gradient. Without a known activation the fraction is taken at its
    /// word.
    fn mostly_dead(&self, l: &LayerRecord, j: usize) -> bool {
        l.dead_frac.is_some_and(|d| d >= 0.7)
            && self.act_of(j).is_none_or(|a| GATED.contains(&a.as_str()))
    }

    fn n_layers(&self) -> usize {
        self.records
            .iter()
            .map(|r| r.layers.len())
            .max()
            .unwrap_or(0)
    }

    fn idx(&self, j: usize) -> u32 {
        self.map
            .indices
            .get(j)
            .copied()
            .unwrap_or_else(|| self.a.last.unwrap_or(j as u32))
    }

    fn act_of(&self, j: usize) -> Option<String> {
        let i = self.idx(j);
        self.records
            .iter()
            .find_map(|r| r.layers.get(j).and_then(|l| l.act.clone()))
            .map(|s| canon(&s))
            .or_else(|| self.a.acts.get(&i).cloned())
    }

    fn is_output(&self, j: usize) -> bool {
        j + 1 == self.n_layers()
    }

    /// The finite values of one epoch field, in epoch order.
    fn curve(&self, f: impl Fn(&EpochRecord) -> Option<f64>) -> Vec<f64> {
        self.records
            .iter()
            .filter_map(f)
            .filter(|x| x.is_finite())
            .collect()
    }

    /// Values of one layer field over epochs (finite ones, with epoch numbers).
    fn series(&self, j: usize, f: impl Fn(&LayerRecord) -> Option<f64>) -> Vec<(u64, f64)> {
        self.records
            .iter()
            .enumerate()
            .filter_map(|(k, r)| {
                let v = f(r.layers.get(j)?)?;
                v.is_finite().then_some((r.epoch.unwrap_or(k as u64), v))
            })
            .collect()
    }

    fn exp_layers(&self) -> Vec<u32> {
        (0..self.n_layers())
            .filter(|&j| self.act_of(j).as_deref() == Some("exponential"))
            .map(|j| self.idx(j))
            .collect()
    }

    fn lr_down(&self) -> Option<String> {
        let lr = self.a.num("lr")?;
        self.a.suggest_lr(&[lr / 10.0, lr / 100.0])
    }

    fn lr_up(&self) -> Option<String> {
        let lr = self.a.num("lr")?;
        self.a.suggest_lr(&[lr * 10.0, lr * 3.0])
    }

    fn more_epochs(&self) -> Option<String> {
        let e = self.a.num("epochs")?;
        if let Some(xs) = self.a.choice_numbers("epochs") {
            let target = xs
                .iter()
                .copied()
                .find(|x| *x >= e * 1.5)
                .or_else(|| xs.last().copied().filter(|x| *x > e))?;
            let v = self.a.choice_value_near("epochs", target)?;
            return self.a.suggest("epochs", &[v]);
        }
        self.a
            .suggest("epochs", &[Value::from((e * 2.0).round() as i64)])
    }

    fn other_optimizer(&self) -> Option<String> {
        self.a.suggest_str("optimizer", &["adam", "rmsprop", "sgd"])
    }
}

/// Every dynamic monitor that fires on `trace` (the per-epoch records of one training of
/// `config`, as `docs/architecture.md` describes), merged and ranked (see [`crate::merge`]).
/// An empty trace gives nothing.
pub fn dynamic_monitors(subject: &Subject, config: &Config, trace: &[Value]) -> Vec<Suspect> {
    let records = parse_trace(trace);
    if records.is_empty() {
        return Vec::new();
    }
    let widest = records
        .iter()
        .max_by_key(|r| r.layers.len())
        .map(|r| r.layers.clone())
        .unwrap_or_default();
    // A Keras program's own layers, loss and optimizer where the config does not name them.
    let completed = crate::program::complete(config, trace);
    let config = &completed.config;
    let map = layer_map(config, &widest);
    let mut cx = Ctx {
        a: Arch::with_program(subject, config, completed.from_program.clone()),
        records,
        map,
        out: Vec::new(),
        stall: Vec::new(),
        stall_full: Vec::new(),
        explained: false,
        frozen: false,
        fitted: false,
        diverged: None,
    };
    cx.fitted = cx.training_fitted();
    cx.diverged = diverged(&cx.records, &Thresholds::default());
    output_pinned(&mut cx);
    output_no_gradient(&mut cx);
    autotrainer(&mut cx);
    saturation(&mut cx);
    zero_weights(&mut cx);
    zero_gradient(&mut cx);
    unchanged_weights(&mut cx);
    loss_curve(&mut cx);
    acc_flat(&mut cx);
    still_improving(&mut cx);
    steady_descent(&mut cx);
    train_val_mismatch(&mut cx);
    bounded_regression_output(&mut cx);
    large_activations(&mut cx);
    cx.collapse_stall();
    crate::merge(&[cx.out])
}

/// The loss that fits the task and the output activation.
fn fitting_loss(a: &Arch) -> Vec<&'static str> {
    if a.subject.task == Task::Regression {
        return vec!["mean_squared_error"];
    }
    match a.last_act().map(|x| x.1) {
        Some("sigmoid") | Some("hard_sigmoid") => vec!["binary_crossentropy"],
        _ => vec!["categorical_crossentropy"],
    }
}

fn label(t: FaultType) -> FaultLabel {
    FaultLabel::new(t)
}

fn layer_label(t: FaultType, i: u32) -> FaultLabel {
    FaultLabel::with_layers(t, [i])
}

fn autotrainer(cx: &mut Ctx) {
    let th = Thresholds::default();
    // Layers by the config's numbering (act1's layer is layer 1), as every other monitor says.
    let symptoms = detect_named(&cx.records, &th, &|j, _| cx.idx(j).to_string());
    for s in symptoms {
        let ev = format!("{}: {}", s.name, s.evidence);
        match s.kind {
            SymptomKind::NanLoss | SymptomKind::ExplodingGradient => {
                let (id, mut c) = if s.kind == SymptomKind::NanLoss {
                    ("nan-loss", 0.75)
                } else {
                    ("exploding-gradient", 0.7)
                };
                // A loss that is finite but huge from the first epoch on, and does not grow,
                // is the loss' scale (MAPE on 0/1 labels), not a divergence.
                // (Unless the network died after it: that is a divergence.)
                let finite_big = s.kind == SymptomKind::NanLoss && cx.diverged.is_none() && {
                    let l: Vec<f64> = cx.records.iter().filter_map(|r| r.loss).collect();
                    !cx.records.iter().any(|r| r.nan)
                        && l.len() == cx.records.len()
                        && l.iter().all(|x| x.is_finite())
                        && l.last() <= l.first()
                };
                // NaN from the first epoch at a learning rate in the optimiser's usual range: a
                // numerically unsafe loss or activation rather than a divergence.
                let usual_lr = match (cx.a.optimizer(), cx.a.num("lr")) {
                    (Some(o), Some(lr)) => crate::rules::lr_range(&o)
                        .is_some_and(|(lo, hi, _)| (lo..=hi).contains(&lr)),
                    _ => false,
                };
                let early = s.kind == SymptomKind::NanLoss
                    && !finite_big
                    && usual_lr
                    && cx
                        .records
                        .first()
                        .is_some_and(|r| r.nan || r.loss.is_none_or(|l| !l.is_finite()));
                if finite_big {
                    c = 0.3;
                } else if early {
                    c = 0.45;
                }
                let sugg = cx.lr_down();
                cx.push(Suspect::new(label(FaultType::HLR), c, id, ev.clone()).suggest(sugg));
                for i in cx.exp_layers() {
                    let sugg = cx.a.suggest_str(&format!("act{i}"), &["relu", "tanh"]);
                    cx.push(
                        Suspect::new(
                            layer_label(FaultType::ACH, i),
                            0.5,
                            id,
                            format!("{ev}; act{i} = exponential is unbounded"),
                        )
                        .suggest(sugg),
                    );
                }
                if finite_big {
                    let sugg = cx.a.suggest_str("loss", &fitting_loss(&cx.a));
                    cx.push(
                        Suspect::new(
                            label(FaultType::LCH),
                            0.45,
                            id,
                            format!(
                                "{ev}; finite and not growing: the loss' scale, not a divergence"
                            ),
                        )
                        .suggest(sugg),
                    );
                } else if s.kind == SymptomKind::NanLoss
                    && let Some(loss) = cx.a.loss()
                    && (early
                        || matches!(
                            loss.as_str(),
                            "poisson"
                                | "mean_squared_logarithmic_error"
                                | "mean_absolute_percentage_error"
                        ))
                {
                    let sugg = cx.a.suggest_str("loss", &fitting_loss(&cx.a));
                    let why = if early {
                        format!(
                            "NaN from the first epoch at a usual learning rate: loss {loss} (or \
                             an activation) is numerically unsafe"
                        )
                    } else {
                        format!("loss {loss} is numerically fragile")
                    };
                    cx.push(
                        Suspect::new(label(FaultType::LCH), 0.45, id, format!("{ev}; {why}"))
                            .suggest(sugg),
                    );
                }
            }
            SymptomKind::VanishingGradient => {
                let sat: Vec<(usize, String)> = (0..cx.n_layers())
                    .filter(|&j| !cx.is_output(j))
                    .filter_map(|j| cx.act_of(j).map(|a| (j, a)))
                    .filter(|(_, a)| SATURATING.contains(&a.as_str()))
                    .collect();
                for (j, act) in sat {
                    let i = cx.idx(j);
                    let sugg = cx.a.suggest_str(&format!("act{i}"), &["relu", "elu"]);
                    cx.push(
                        Suspect::new(
                            layer_label(FaultType::ACH, i),
                            0.6,
                            "vanishing-gradient",
                            format!("{ev}; act{i} = {act} saturates"),
                        )
                        .suggest(sugg),
                    );
                }
                // Cross-check (issue 20, item 5): gradients that vanish through ReLU layers that
                // are mostly dead (dead_frac >= 0.7, AutoTrainer's dying threshold) are the dying
                // ReLUs' doing, which `dying-relu` localises; the initialiser is then a weak
                // suspect.
                let dead_relu = (0..cx.n_layers()).any(|j| {
                    cx.act_of(j).as_deref() == Some("relu")
                        && cx
                            .series(j, |l| l.dead_frac)
                            .iter()
                            .any(|(_, d)| *d >= th.dying_frac)
                });
                let first = cx.idx(0);
                let sugg =
                    cx.a.suggest_str(&format!("ki{first}"), &["he_uniform", "glorot_uniform"]);
                cx.push(
                    Suspect::new(
                        layer_label(FaultType::WCI, first),
                        if dead_relu { 0.15 } else { 0.35 },
                        "vanishing-gradient",
                        if dead_relu {
                            format!("{ev} (through dead ReLU layers)")
                        } else {
                            ev.clone()
                        },
                    )
                    .suggest(sugg),
                );
                let sugg = cx.lr_up();
                cx.push(
                    Suspect::new(label(FaultType::HLR), 0.25, "vanishing-gradient", ev)
                        .suggest(sugg),
                );
            }
            SymptomKind::DyingRelu => dying_relu(cx, &th),
            SymptomKind::Unstable => {
                let sugg = cx.lr_down();
                cx.push(
                    Suspect::new(label(FaultType::HLR), 0.45, "unstable", ev.clone()).suggest(sugg),
                );
                let bs = cx.a.num("batch_size").unwrap_or(32.0);
                let sugg =
                    cx.a.choice_value_near("batch_size", bs * 4.0)
                        .and_then(|v| cx.a.suggest("batch_size", &[v]));
                cx.push(Suspect::new(label(FaultType::HBS), 0.4, "unstable", ev).suggest(sugg));
            }
            // Localisation reads these signals with monitors of its own (output-no-gradient,
            // the pace of the loss), which say more than the repair engine's trigger does.
            // The static rules read linear hidden layers from the config, and the
            // `bounded-regression-output` monitor reads a bounded output with the config's
            // activations as fallback; `detect_named` does not look for the latter anyway.
            SymptomKind::NoGradient
            | SymptomKind::StillImproving
            | SymptomKind::LinearModel
            | SymptomKind::BoundedOutput
            | SymptomKind::CrawlingLoss
            | SymptomKind::StuckPredictions
            | SymptomKind::Diverged => {}
            SymptomKind::FewUpdates => {
                // Few updates per epoch with a batch above Keras' default 32: the batch is large
                // for the dataset. At 32 or below the dataset is small, and only the epochs
                // can add updates.
                let (steps, epochs) = cx
                    .records
                    .iter()
                    .fold((0, 0), |(s, e), r| (s + r.steps.unwrap_or(0), e + 1));
                let per_epoch = steps as f64 / epochs.max(1) as f64;
                if cx.a.num("batch_size").is_some_and(|b| b > 32.0) {
                    let sugg =
                        cx.a.suggest("batch_size", &[Value::from(32), Value::from(64)]);
                    cx.push(
                        Suspect::new(
                            label(FaultType::HBS),
                            if per_epoch < 10.0 { 0.6 } else { 0.3 },
                            "few-updates",
                            ev.clone(),
                        )
                        .suggest(sugg),
                    );
                }
                let sugg = cx.more_epochs();
                cx.push(Suspect::new(label(FaultType::HNE), 0.55, "few-updates", ev).suggest(sugg));
            }
            SymptomKind::NotConverging => {
                let sugg = cx.lr_up();
                cx.push_generic(
                    Suspect::new(label(FaultType::HLR), 0.45, "not-converging", ev.clone())
                        .suggest(sugg),
                );
                let sugg = cx.other_optimizer();
                cx.push_generic(
                    Suspect::new(label(FaultType::OCH), 0.4, "not-converging", ev.clone())
                        .suggest(sugg),
                );
                let sugg = cx.more_epochs();
                cx.push_generic(
                    Suspect::new(label(FaultType::HNE), 0.3, "not-converging", ev).suggest(sugg),
                );
            }
        }
    }
    // Weights that turn non-finite (null weight norm after a finite one) without a NaN flag.
    if !cx.out.iter().any(|s| s.source == "nan-loss") {
        for j in 0..cx.n_layers() {
            let mut seen_finite = false;
            let mut bad: Option<u64> = None;
            for (k, r) in cx.records.iter().enumerate() {
                match r.layers.get(j).map(|l| l.weight_norm) {
                    Some(Some(w)) if w.is_finite() => seen_finite = true,
                    Some(_) if seen_finite => {
                        bad = Some(r.epoch.unwrap_or(k as u64));
                        break;
                    }
                    _ => {}
                }
            }
            if let Some(e) = bad {
                let i = cx.idx(j);
                let sugg = cx.lr_down();
                cx.push(
                    Suspect::new(
                        label(FaultType::HLR),
                        0.75,
                        "nan-loss",
                        format!("epoch {e}: the weights of layer {i} became non-finite"),
                    )
                    .suggest(sugg),
                );
                break;
            }
        }
    }
}

/// Dying ReLU per layer (AutoTrainer's test): `dead_frac ≥ 0.7`, or `grad_zero_frac ≥ 0.7` in an
/// epoch where some gradient reaches the output layer and the layer is not blocked from above
/// (see `Ctx::blocked`; then the zeros come from above, not from the ReLU). Dead from the first record (the first batch, initial weights) points
/// at the initialisation; dying later at the activation and the learning rate.
fn dying_relu(cx: &mut Ctx, th: &Thresholds) {
    let n = cx.n_layers();
    if n == 0 {
        return;
    }
    let arrives: Vec<bool> = cx
        .records
        .iter()
        .map(|r| {
            r.layers
                .get(n - 1)
                .and_then(|l| l.grad_norm)
                .is_none_or(|g| g > 1e-12)
        })
        .collect();
    let mut any_later = false;
    let mut first_ev: Option<String> = None;
    for j in 0..n {
        if cx.act_of(j).as_deref() != Some("relu") {
            continue;
        }
        let mut worst = f64::NEG_INFINITY;
        let mut first: Option<usize> = None;
        for (k, r) in cx.records.iter().enumerate() {
            let Some(l) = r.layers.get(j) else { continue };
            let dead = l.dead_frac.filter(|x| x.is_finite()).unwrap_or(0.0);
            let zero = if arrives[k] && !cx.blocked(k, j) {
                l.grad_zero_frac.filter(|x| x.is_finite()).unwrap_or(0.0)
            } else {
                0.0
            };
            let v = dead.max(zero);
            if v >= th.dying_frac {
                worst = worst.max(v);
                first.get_or_insert(k);
            }
        }
        let Some(k0) = first else { continue };
        let i = cx.idx(j);
        let at_init = k0 == 0
            && cx.records[0]
                .layers
                .get(j)
                .and_then(|l| l.dead_frac)
                .is_some_and(|d| d >= th.dying_frac);
        let ev = format!(
            "dying_relu: layer {i} (act{i} = relu) has up to {} dead units or zero gradients \
             (threshold {}) from epoch {}{}",
            fmt_num(worst),
            th.dying_frac,
            cx.records[k0].epoch.unwrap_or(k0 as u64),
            if at_init {
                ", already at the initial weights"
            } else {
                ""
            }
        );
        first_ev.get_or_insert(ev.clone());
        let (c_ach, c_wci) = if at_init {
            (0.35, 0.55)
        } else if cx.diverged.is_some() {
            // Units killed by the first, too large updates: the rate, not the layer.
            (0.15, 0.1)
        } else {
            (0.45, 0.3)
        };
        let ev = if cx.diverged.is_some() && !at_init {
            format!("{ev} (likely explained by the divergence)")
        } else {
            ev
        };
        any_later |= !at_init;
        cx.frozen |= at_init;
        let sugg = cx.a.suggest_str(&format!("act{i}"), &["selu", "elu"]);
        cx.push(
            Suspect::new(
                layer_label(FaultType::ACH, i),
                c_ach,
                "dying-relu",
                ev.clone(),
            )
            .suggest(sugg),
        );
        let sugg =
            cx.a.suggest_str(&format!("ki{i}"), &["he_uniform", "glorot_uniform"]);
        cx.push(
            Suspect::new(layer_label(FaultType::WCI, i), c_wci, "dying-relu", ev).suggest(sugg),
        );
    }
    if any_later && let Some(ev) = first_ev {
        let sugg = cx.lr_down();
        cx.push(Suspect::new(label(FaultType::HLR), 0.5, "dying-relu", ev).suggest(sugg));
    }
}

/// No gradient reaches the output layer (its gradient norm is 0 in at least half the epochs):
/// the loss is constant in the output, or the output activation passes no gradient. A
/// saturated output points at weights that blew up instead.
fn output_no_gradient(cx: &mut Ctx) {
    let n = cx.n_layers();
    if n == 0 || cx.explained {
        return;
    }
    let j = n - 1;
    let g = cx.series(j, |l| l.grad_norm);
    let zero = g.iter().filter(|(_, v)| *v <= 1e-12).count();
    if g.len() < 2 || (zero as f64) < g.len() as f64 / 2.0 {
        return;
    }
    // Cross-checks before blaming the output (issue 20, item 5). A training loss at ~0 means the
    // training targets are fitted: no gradient is left, nothing is dead.
    if cx.fitted {
        return;
    }
    let i = cx.idx(j);
    let act = cx.act_of(j).unwrap_or_default();
    let sat = cx.series(j, |l| l.saturated_frac);
    let saturated =
        !sat.is_empty() && sat.iter().map(|x| x.1).sum::<f64>() / sat.len() as f64 >= 0.5;
    let ev = format!(
        "output layer {i} ({act}) receives no gradient (norm 0) in {zero} of {} epochs",
        g.len()
    );
    // Weights that blew up (exploding or oscillating loss, NaN, a weight norm grown 10x) explain
    // a silent output: the learning rate, not the output layer or the loss.
    if let Some(why) = cx.blow_up() {
        let ev = format!("{ev}, after the updates blew up ({why})");
        let sugg = cx.lr_down();
        cx.push(
            Suspect::new(label(FaultType::HLR), 0.6, "output-no-gradient", ev.clone())
                .suggest(sugg),
        );
        cx.push(Suspect::new(
            layer_label(FaultType::ACH, i),
            0.2,
            "output-no-gradient",
            ev,
        ));
        return;
    }
    if saturated {
        let ev = format!("{ev}: the output saturates");
        let sugg = cx.lr_down();
        cx.push(
            Suspect::new(label(FaultType::HLR), 0.4, "output-no-gradient", ev.clone())
                .suggest(sugg),
        );
        cx.push(Suspect::new(
            layer_label(FaultType::ACH, i),
            0.3,
            "output-no-gradient",
            ev,
        ));
        return;
    }
    // Unsaturated, only a softmax over one unit, a dead relu or a clipped hard_sigmoid passes
    // exactly no gradient; otherwise the loss is flat in the output.
    let (c_lch, c_ach) = match act.as_str() {
        "softmax" => (0.3, 0.7),
        "relu" | "hard_sigmoid" => (0.4, 0.5),
        _ => (0.6, 0.0),
    };
    let ev = if c_ach > 0.0 {
        format!("{ev}: the loss is constant in the output, or {act} passes no gradient")
    } else {
        format!("{ev}: the loss is constant in the output")
    };
    let sugg = cx.a.suggest_str("loss", &fitting_loss(&cx.a));
    cx.push(
        Suspect::new(
            label(FaultType::LCH),
            c_lch,
            "output-no-gradient",
            ev.clone(),
        )
        .suggest(sugg),
    );
    if c_ach > 0.0 {
        cx.push(Suspect::new(
            layer_label(FaultType::ACH, i),
            c_ach,
            "output-no-gradient",
            ev,
        ));
    }
    cx.explained = true;
}

fn output_pinned(cx: &mut Ctx) {
    let n = cx.n_layers();
    if n == 0 {
        return;
    }
    let j = n - 1;
    let i = cx.idx(j);
    let act = cx.act_of(j).unwrap_or_default();
    let outs = cx.series(j, |l| l.mean_abs_out);
    // A softmax output's mean |out| is 1/C by construction, so one record decides whether it
    // normalises over a single unit (a one-epoch run, as real-D1); the other checks need two.
    let min_records = if act == "softmax" { 1 } else { 2 };
    if outs.len() < min_records {
        return;
    }
    let key = format!("act{i}");
    let classification = cx.a.subject.task == Task::Classification;
    let lo = outs.iter().map(|x| x.1).fold(f64::INFINITY, f64::min);
    let hi = outs.iter().map(|x| x.1).fold(f64::NEG_INFINITY, f64::max);
    if act == "softmax" {
        if outs.iter().all(|(_, v)| (v - 1.0).abs() <= 1e-4) {
            let to: &[&str] = if classification {
                &["sigmoid"]
            } else {
                &["linear"]
            };
            let sugg = cx.a.suggest_str(&key, to);
            cx.push(
                Suspect::new(
                    layer_label(FaultType::ACH, i),
                    0.85,
                    "output-pinned",
                    format!(
                        "output layer {i} (softmax) has mean |out| = {} in all {} epochs: a \
                         softmax over a single unit is constant 1 and passes no gradient",
                        fmt_num(hi),
                        outs.len()
                    ),
                )
                .suggest(sugg),
            );
            cx.explained = true;
        }
        return;
    }
    if outs.len() >= 3 && hi - lo <= 1e-6 * hi.abs().max(1.0) {
        let sugg = cx.a.suggest_str(
            &key,
            if classification {
                &["softmax", "sigmoid"]
            } else {
                &["linear"]
            },
        );
        let ev = format!(
            "output layer {i} ({act}) has the same mean |out| = {} in all {} epochs: constant \
             predictions",
            fmt_num(hi),
            outs.len()
        );
        cx.push(
            Suspect::new(
                layer_label(FaultType::ACH, i),
                0.5,
                "output-pinned",
                ev.clone(),
            )
            .suggest(sugg),
        );
        cx.push(Suspect::new(
            label(FaultType::LCH),
            0.45,
            "output-pinned",
            ev,
        ));
        return;
    }
    if classification && (act == "sigmoid" || act == "hard_sigmoid") && outs.len() >= 3 {
        let later = &outs[1..];
        let all_high = later.iter().all(|(_, v)| *v >= 0.99);
        let all_low = later.iter().all(|(_, v)| *v <= 0.01);
        if all_high || all_low {
            let ev = format!(
                "output layer {i} ({act}) has mean |out| {} {} from epoch {} on: the loss drives \
                 every prediction to one class",
                if all_high { ">=" } else { "<=" },
                if all_high { "0.99" } else { "0.01" },
                later[0].0
            );
            let sugg = cx.a.suggest_str("loss", &["binary_crossentropy"]);
            cx.push(
                Suspect::new(label(FaultType::LCH), 0.5, "output-pinned", ev.clone()).suggest(sugg),
            );
            cx.push(Suspect::new(
                layer_label(FaultType::ACH, i),
                0.35,
                "output-pinned",
                ev,
            ));
        }
    }
}

fn saturation(cx: &mut Ctx) {
    for j in 0..cx.n_layers() {
        if cx.is_output(j) {
            continue; // confident outputs of a good classifier saturate too
        }
        let Some(act) = cx.act_of(j) else { continue };
        if !SATURATING.contains(&act.as_str()) {
            continue;
        }
        let s = cx.series(j, |l| l.saturated_frac);
        if s.is_empty() {
            continue;
        }
        let hot: Vec<&(u64, f64)> = s.iter().filter(|(_, v)| *v > 0.5).collect();
        if (hot.len() as f64) < (s.len() as f64 / 3.0).max(1.0) {
            continue;
        }
        let worst = hot.iter().map(|x| x.1).fold(0.0, f64::max);
        let i = cx.idx(j);
        let ev = format!(
            "layer {i} ({act}): saturated_frac > 0.5 in {} of {} epochs (up to {})",
            hot.len(),
            s.len(),
            fmt_num(worst)
        );
        let sugg = cx.a.suggest_str(&format!("act{i}"), &["relu", "elu"]);
        cx.push(
            Suspect::new(
                layer_label(FaultType::ACH, i),
                0.55,
                "saturation",
                ev.clone(),
            )
            .suggest(sugg),
        );
        let sugg =
            cx.a.suggest_str(&format!("ki{i}"), &["glorot_uniform", "lecun_uniform"]);
        cx.push(Suspect::new(layer_label(FaultType::WCI, i), 0.35, "saturation", ev).suggest(sugg));
    }
}

/// All-zero weights at the first record (a zeros/constant initialiser).
fn zero_weights(cx: &mut Ctx) {
    let Some(r0) = cx.records.first() else { return };
    let zero: Vec<usize> = r0
        .layers
        .iter()
        .enumerate()
        .filter(|(_, l)| l.weight_norm.is_some_and(|w| w <= 1e-12))
        .map(|(j, _)| j)
        .collect();
    for j in zero {
        let i = cx.idx(j);
        let sugg =
            cx.a.suggest_str(&format!("ki{i}"), &["glorot_uniform", "he_uniform"]);
        cx.push(
            Suspect::new(
                layer_label(FaultType::WCI, i),
                0.6,
                "zero-weights",
                format!("layer {i}: the weights are all zero (norm 0) at the first epoch"),
            )
            .suggest(sugg),
        );
        cx.frozen = true;
    }
}

/// A hidden layer without gradient in at least half the epochs, not because nothing flows
/// from above (see `Ctx::blocked`).
fn zero_gradient(cx: &mut Ctx) {
    for j in 0..cx.n_layers() {
        if cx.is_output(j) {
            continue;
        }
        let mut measured = 0usize;
        let mut zero = 0usize;
        for (k, r) in cx.records.iter().enumerate() {
            let Some(g) = r.layers.get(j).and_then(|l| l.grad_norm) else {
                continue;
            };
            measured += 1;
            if g <= 1e-7 && !cx.blocked(k, j) {
                zero += 1;
            }
        }
        if measured < 2 || (zero as f64) < measured as f64 / 2.0 {
            continue;
        }
        cx.frozen = true;
        let i = cx.idx(j);
        let ev = format!(
            "layer {i}: gradient norm <= 1e-7 in {zero} of {measured} epochs (no learning signal)"
        );
        let sugg =
            cx.a.suggest_str(&format!("ki{i}"), &["glorot_uniform", "he_uniform"]);
        cx.push_generic(
            Suspect::new(
                layer_label(FaultType::WCI, i),
                0.45,
                "zero-gradient",
                ev.clone(),
            )
            .suggest(sugg),
        );
        // The activation is to blame when it can block gradients and the layer was alive at the
        // initial weights.
        let act = cx.act_of(j).unwrap_or_default();
        let dead_at_init = cx.records[0]
            .layers
            .get(j)
            .is_some_and(|l| cx.mostly_dead(l, j));
        if (SATURATING.contains(&act.as_str()) || act == "relu") && !dead_at_init {
            let sugg = cx.a.suggest_str(&format!("act{i}"), &["relu", "elu"]);
            cx.push_generic(
                Suspect::new(
                    layer_label(FaultType::ACH, i),
                    0.4,
                    "zero-gradient",
                    format!("{ev}; act{i} = {act}"),
                )
                .suggest(sugg),
            );
        }
    }
}

fn unchanged_weights(cx: &mut Ctx) {
    const WINDOW: usize = 5;
    let n = cx.n_layers();
    if n == 0 || cx.records.len() < WINDOW {
        return;
    }
    // Longest run of consecutive epochs in which no layer's weight norm changed.
    let norms: Vec<Vec<Option<f64>>> = cx
        .records
        .iter()
        .map(|r| {
            (0..n)
                .map(|j| r.layers.get(j).and_then(|l| l.weight_norm))
                .collect()
        })
        .collect();
    let mut run = 1usize;
    let mut best = 1usize;
    for k in 1..norms.len() {
        let same = (0..n).all(|j| match (norms[k - 1][j], norms[k][j]) {
            (Some(a), Some(b)) => (a - b).abs() <= 1e-7 * a.abs().max(1e-12),
            _ => false,
        });
        run = if same { run + 1 } else { 1 };
        best = best.max(run);
    }
    if best < WINDOW {
        return;
    }
    let mut ev = format!("no layer's weights changed over {best} consecutive epochs");
    // Layers without any gradient explain it better than a small learning rate.
    let f = if cx.frozen && !cx.explained {
        ev.push_str(" (likely explained by layers without gradient)");
        0.3
    } else {
        1.0
    };
    let sugg = cx.lr_up();
    cx.push_generic(
        Suspect::new(
            label(FaultType::HLR),
            0.5 * f,
            "unchanged-weights",
            ev.clone(),
        )
        .suggest(sugg),
    );
    let sugg = cx.other_optimizer();
    cx.push_generic(
        Suspect::new(label(FaultType::OCH), 0.35 * f, "unchanged-weights", ev).suggest(sugg),
    );
}

fn loss_curve(cx: &mut Ctx) {
    let loss = cx.curve(|r| r.loss);
    if loss.len() < 3 {
        return;
    }
    let first = loss[0];
    let last = *loss.last().unwrap();
    let best = loss.iter().copied().fold(f64::INFINITY, f64::min);
    if last > 1.5 * first && last > 2.0 * best && first > 0.0 {
        let ev = format!(
            "loss diverges: {} at the first epoch, best {}, {} at the last",
            fmt_num(first),
            fmt_num(best),
            fmt_num(last)
        );
        let sugg = cx.lr_down();
        cx.push(Suspect::new(label(FaultType::HLR), 0.6, "loss-diverging", ev).suggest(sugg));
    } else if first - best <= 1e-3 * first.abs().max(1e-12) {
        let ev = format!(
            "loss never drops below its first epoch's {} over {} epochs (best {})",
            fmt_num(first),
            loss.len(),
            fmt_num(best)
        );
        let sugg = cx.lr_up();
        cx.push_generic(
            Suspect::new(label(FaultType::HLR), 0.45, "loss-flat", ev.clone()).suggest(sugg),
        );
        let sugg = cx.other_optimizer();
        cx.push_generic(
            Suspect::new(label(FaultType::OCH), 0.35, "loss-flat", ev.clone()).suggest(sugg),
        );
        cx.push_generic(Suspect::new(label(FaultType::LCH), 0.35, "loss-flat", ev));
    }
}

fn acc_flat(cx: &mut Ctx) {
    if cx.a.subject.task != Task::Classification {
        return;
    }
    let acc = cx.curve(|r| r.acc);
    if acc.len() < 5 {
        return;
    }
    let lo = acc.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = acc.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    // Flat at (nearly) every example right is a model that learnt early, not one that predicts
    // one class: an easy data set's first epoch (D6's on some seeds) gets there.
    if hi - lo >= 0.005 || lo >= 0.99 {
        return;
    }
    // A model that is right from the first epoch on keeps lowering its loss; a stuck one does
    // not.
    let loss = cx.curve(|r| r.loss);
    if let Some(&first) = loss.first() {
        let best = loss.iter().copied().fold(f64::INFINITY, f64::min);
        if first > 0.0 && (first - best) / first >= 0.1 {
            return;
        }
    }
    let ev = format!(
        "training accuracy stays at {} over {} epochs (spread {}): constant predictions",
        fmt_num(hi),
        acc.len(),
        fmt_num(hi - lo)
    );
    let last = cx.a.last;
    let sugg = cx.a.suggest_str("loss", &fitting_loss(&cx.a));
    cx.push_generic(Suspect::new(label(FaultType::LCH), 0.4, "acc-flat", ev.clone()).suggest(sugg));
    if let Some(i) = last {
        cx.push_generic(Suspect::new(
            layer_label(FaultType::ACH, i),
            0.4,
            "acc-flat",
            ev.clone(),
        ));
    }
    let sugg = cx.lr_up();
    cx.push_generic(Suspect::new(label(FaultType::HLR), 0.3, "acc-flat", ev).suggest(sugg));
}

/// Whether a curve still improves at its end: over the last quarter of the epochs (at least 3)
/// it gains ≥ 0.02 (accuracy) or drops ≥ 5% (loss), and its last value is its best. Returns
/// (strong: ≥ 0.05 / ≥ 15%, evidence).
fn improving_at_end(name: &str, xs: &[f64], higher_better: bool) -> Option<(bool, String)> {
    let n = xs.len();
    if n < 4 {
        return None;
    }
    let k = (n / 4).max(3).min(n - 1);
    let before = xs[n - 1 - k];
    let last = xs[n - 1];
    let (gain, strong, at_best, what) = if higher_better {
        let best = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let gain = last - before;
        (
            gain >= 0.02,
            gain >= 0.05,
            last >= best - 0.005,
            format!("+{}", fmt_num(gain)),
        )
    } else {
        let best = xs.iter().copied().fold(f64::INFINITY, f64::min);
        let rel = if before.abs() > 0.0 {
            (before - last) / before.abs()
        } else {
            0.0
        };
        (
            rel >= 0.05,
            rel >= 0.15,
            last <= best + 0.01 * best.abs(),
            format!("-{}%", fmt_num(100.0 * rel)),
        )
    };
    (gain && at_best).then(|| {
        (
            strong,
            format!(
                "{name} still improves at the end: {what} over the last {k} epochs ({} -> {}), \
                 best at the last epoch",
                fmt_num(before),
                fmt_num(last)
            ),
        )
    })
}

fn still_improving(cx: &mut Ctx) {
    let classification = cx.a.subject.task == Task::Classification;
    let pick = |f: fn(&EpochRecord) -> Option<f64>| cx.curve(f);
    // The validation curves (the training ones when a run has none): accuracy and loss for
    // classification, loss for regression.
    let val_or = |v: Vec<f64>, name_v: &'static str, t: Vec<f64>, name_t: &'static str| {
        if v.len() >= 4 {
            (name_v, v)
        } else {
            (name_t, t)
        }
    };
    let mut curves: Vec<(&str, Vec<f64>, bool)> = Vec::new();
    if classification {
        let (n, xs) = val_or(pick(|r| r.val_acc), "val_acc", pick(|r| r.acc), "acc");
        curves.push((n, xs, true));
    }
    let (n, xs) = val_or(pick(|r| r.val_loss), "val_loss", pick(|r| r.loss), "loss");
    curves.push((n, xs, false));
    let mut found: Vec<(bool, String)> = curves
        .iter()
        .filter_map(|(n, xs, hb)| improving_at_end(n, xs, *hb))
        .collect();
    if found.is_empty() {
        return;
    }
    let strong = found.iter().any(|f| f.0);
    found.sort_by_key(|f| !f.0);
    let ev = found
        .iter()
        .map(|f| f.1.clone())
        .collect::<Vec<_>>()
        .join("; ");
    let sugg = cx.more_epochs();
    cx.push(
        Suspect::new(
            label(FaultType::HNE),
            if strong { 0.6 } else { 0.45 },
            "still-improving",
            ev.clone(),
        )
        .suggest(sugg),
    );
    // Why it is slow, where the config says (AutoTrainer's slow-convergence repairs try the
    // optimiser, the learning rate and the batch size).
    let opt = cx.a.optimizer().unwrap_or_default();
    if let (Some(lr), Some((_, _, default))) = (cx.a.num("lr"), crate::rules::lr_range(&opt))
        && lr < 0.5 * default
    {
        let sugg = cx.a.suggest_lr(&[default]);
        cx.push(
            Suspect::new(
                label(FaultType::HLR),
                0.5,
                "still-improving",
                format!(
                    "{ev}; lr = {} is below {opt}'s usual {}",
                    fmt_num(lr),
                    fmt_num(default)
                ),
            )
            .suggest(sugg),
        );
    }
    if let Some(bs) = cx.a.num("batch_size")
        && bs >= 256.0
    {
        let sugg =
            cx.a.suggest("batch_size", &[Value::from(32), Value::from(64)]);
        cx.push(
            Suspect::new(
                label(FaultType::HBS),
                0.5,
                "still-improving",
                format!(
                    "{ev}; batch_size = {} gives few updates per epoch",
                    fmt_num(bs)
                ),
            )
            .suggest(sugg),
        );
    }
    if matches!(opt.as_str(), "sgd" | "adagrad" | "adadelta") {
        let sugg = cx.a.suggest_str("optimizer", &["adam", "rmsprop"]);
        cx.push(
            Suspect::new(
                label(FaultType::OCH),
                0.35,
                "still-improving",
                format!("{ev}; {opt} is a slow optimiser"),
            )
            .suggest(sugg),
        );
    }
}

fn large_activations(cx: &mut Ctx) {
    for j in 0..cx.n_layers() {
        if cx.is_output(j) {
            continue;
        }
        let s = cx.series(j, |l| l.mean_abs_out);
        let Some(&(_, v0)) = s.first() else { continue };
        let Some(&(e, worst)) = s.iter().max_by(|a, b| a.1.total_cmp(&b.1)) else {
            continue;
        };
        if worst < 10.0 {
            continue;
        }
        let i = cx.idx(j);
        let act = cx.act_of(j).unwrap_or_default();
        let ev = format!(
            "layer {i} ({act}): mean |out| = {} at epoch {e} (>= 10; {} at the first batch)",
            fmt_num(worst),
            fmt_num(v0)
        );
        let exp = act == "exponential";
        if exp {
            let sugg = cx.a.suggest_str(&format!("act{i}"), &["relu", "tanh"]);
            cx.push(
                Suspect::new(
                    layer_label(FaultType::ACH, i),
                    0.5,
                    "large-activations",
                    ev.clone(),
                )
                .suggest(sugg),
            );
        }
        if worst >= 10.0 * v0.max(1e-12) {
            // Small at the initial weights, huge later: the updates blew the weights up.
            let sugg = cx.lr_down();
            cx.push(
                Suspect::new(
                    label(FaultType::HLR),
                    if exp { 0.4 } else { 0.55 },
                    "large-activations",
                    format!("{ev}: the updates blow the weights up"),
                )
                .suggest(sugg),
            );
        } else if !exp {
            let sugg =
                cx.a.suggest_str(&format!("ki{i}"), &["glorot_uniform", "he_uniform"]);
            cx.push(
                Suspect::new(
                    layer_label(FaultType::WCI, i),
                    0.35,
                    "large-activations",
                    format!("{ev}: large from the initial weights"),
                )
                .suggest(sugg),
            );
            cx.push(Suspect::new(
                label(FaultType::CPP),
                0.3,
                "large-activations",
                format!("{ev}: inputs may be unnormalised"),
            ));
        }
        break;
    }
}

/// The training loss falls at a steady rate to the end of a run that is far from converged:
/// over `n ≥ 4` finite epochs without NaN, the loss falls from one epoch to the next in at least
/// 90% of the steps and never rises by more than 0.5% of its first value, it dropped by 0.5–50%
/// of its first value in all, and its
/// per-epoch drop over the last quarter (q = max(1, n/4) epochs) is at least half that over the
/// first quarter (no deceleration). A converging run decelerates; one that keeps its pace is held
/// back by its step size or stopped early. Adaptive optimisers move each weight by about `lr`
/// per step (Adam's effective step is bounded by about its learning rate: Kingma & Ba 2015,
/// §2.1), so a constant pace at the optimiser's usual or a smaller lr says the lr is too small
/// for the distance to cover; and the curve says more epochs would still pay (AutoTrainer's
/// slow-convergence repairs raise the lr ×10 and change the optimiser, reference §8).
///
/// Suspects: HNE 0.5, 0.4 when the config names a cause of the slow pace (lr below half the
/// optimiser's usual value, batch_size ≥ 256, sgd/adagrad/adadelta: `still-improving`'s list);
/// HLR 0.55 when lr ≤ the optimiser's usual default (`rules::lr_range`), else 0.3; OCH 0.3 for
/// sgd/adagrad/adadelta. With `still-improving` (the same symptom) a label counts once, at the
/// larger confidence. A noisy flat run does not fall in 90% of its
/// steps (`loss-flat` takes runs within 0.1%); the thresholds are ours (a healthy run's loss halves early and
/// then flattens: the crafted healthy traces and the bundled real ones of the correct subjects
/// stay quiet).
fn steady_descent(cx: &mut Ctx) {
    if cx.records.iter().any(|r| r.nan) {
        return;
    }
    let loss: Vec<f64> = cx.records.iter().filter_map(|r| r.loss).collect();
    let n = loss.len();
    if n < 4 || n != cx.records.len() || loss.iter().any(|x| !x.is_finite()) {
        return;
    }
    let (first, last) = (loss[0], loss[n - 1]);
    // A loss >= 1e3 is AutoTrainer's NaN-loss symptom (the loss' scale or a divergence), left
    // to `nan-loss`.
    if first <= 0.0 || loss.iter().any(|&x| x >= Thresholds::default().big_loss) {
        return;
    }
    let never_up = loss.windows(2).all(|w| w[1] <= w[0] + 0.005 * first);
    let falls = loss.windows(2).filter(|w| w[1] < w[0]).count();
    let steady = falls as f64 >= 0.9 * (n - 1) as f64;
    let total = (first - last) / first;
    let q = (n / 4).max(1);
    let early = (loss[0] - loss[q]) / q as f64;
    let late = (loss[n - 1 - q] - loss[n - 1]) / q as f64;
    if !never_up || !steady || !(0.005..0.5).contains(&total) || late <= 0.0 || late < 0.5 * early {
        return;
    }
    let ev = format!(
        "the training loss falls at a steady pace to the end: {} -> {} ({}% in {n} epochs), \
         {} per epoch over the last {q} vs {} over the first {q}",
        fmt_num(first),
        fmt_num(last),
        fmt_num(100.0 * total),
        fmt_num(late),
        fmt_num(early)
    );
    // The config's own cause of a slow pace (still-improving's list: lr below half the
    // optimiser's usual value, batch_size >= 256, a slow optimiser) takes the blame first; the
    // epochs are then the costlier cure.
    let opt = cx.a.optimizer().unwrap_or_default();
    let lr = cx.a.num("lr");
    let default = crate::rules::lr_range(&opt).map(|r| r.2);
    let slow_config = lr.zip(default).is_some_and(|(lr, d)| lr < 0.5 * d)
        || cx.a.num("batch_size").is_some_and(|b| b >= 256.0)
        || matches!(opt.as_str(), "sgd" | "adagrad" | "adadelta");
    let sugg = cx.more_epochs();
    push_max(
        cx,
        Suspect::new(
            label(FaultType::HNE),
            if slow_config { 0.4 } else { 0.5 },
            "steady-descent",
            format!("{ev}: more epochs would still pay"),
        )
        .suggest(sugg),
    );
    if let Some(lr) = lr {
        let small = default.is_some_and(|d| lr <= d * (1.0 + 1e-9));
        let sugg = cx.lr_up();
        push_max(
            cx,
            Suspect::new(
                label(FaultType::HLR),
                if small { 0.55 } else { 0.3 },
                "steady-descent",
                format!(
                    "{ev}: at lr = {}{} the step size, not the distance to a minimum, sets the pace",
                    fmt_num(lr),
                    match default {
                        Some(d) if small => format!(" (<= {opt}'s usual {})", fmt_num(d)),
                        _ => String::new(),
                    }
                ),
            )
            .suggest(sugg),
        );
    }
    if matches!(opt.as_str(), "sgd" | "adagrad" | "adadelta") {
        let sugg = cx.a.suggest_str("optimizer", &["adam", "rmsprop"]);
        push_max(
            cx,
            Suspect::new(
                label(FaultType::OCH),
                0.3,
                "steady-descent",
                format!("{ev}; {opt} is a slow optimiser"),
            )
            .suggest(sugg),
        );
    }
}

/// `steady-descent` and `still-improving` read one symptom (the curve still falls at the end):
/// for a label both support, the larger confidence counts (not the noisy-or), with both
/// evidences and sources.
fn push_max(cx: &mut Ctx, s: Suspect) {
    if let Some(o) = cx
        .out
        .iter_mut()
        .find(|o| o.label == s.label && o.source == "still-improving")
    {
        if s.confidence > o.confidence {
            o.confidence = s.confidence;
            if s.suggestion.is_some() {
                o.suggestion = s.suggestion.clone();
            }
        }
        o.evidence = format!("{}; {}", o.evidence, s.evidence);
        o.source = format!("{}+{}", o.source, s.source);
        return;
    }
    cx.push(s);
}

/// The training data and the validation data disagree: the training loss falls by at least 90%
/// of its first value while the validation loss never gets below its first epoch's, and (for a
/// classifier) the validation accuracy never gains 0.02 over its first value and ends below 0.5.
/// (The training accuracy is no guide: Keras scores it against the transformed labels.)
/// Overfitting improves the validation curves first and then turns; a model that fits its
/// training targets and learns nothing about the validation ones was given training labels or
/// inputs preprocessed differently (a label transform, a scaling applied to one split only). The check is in the spirit of UMLAUT's train/validation consistency checks
/// and DeepDiagnosis' "output out of range of the labels" (reference §8); the thresholds are
/// ours. Suspect: CPP 0.6 (data preparation).
fn train_val_mismatch(cx: &mut Ctx) {
    let loss = cx.curve(|r| r.loss);
    let val = cx.curve(|r| r.val_loss);
    if loss.len() < 3 || val.len() < 3 {
        return;
    }
    let (first, last) = (loss[0], loss[loss.len() - 1]);
    if first <= 0.0 || (first - last) / first < 0.9 {
        return;
    }
    let v0 = val[0];
    let vbest = val.iter().copied().fold(f64::INFINITY, f64::min);
    if vbest < v0 - 0.01 * v0.abs() {
        return;
    }
    let mut ev = format!(
        "the training loss falls {} -> {} while the validation loss never drops below its first \
         {} (best {})",
        fmt_num(first),
        fmt_num(last),
        fmt_num(v0),
        fmt_num(vbest)
    );
    if cx.a.subject.task == Task::Classification {
        let acc = cx.curve(|r| r.acc);
        let vacc = cx.curve(|r| r.val_acc);
        if let Some(&va0) = vacc.first() {
            let vbest = vacc.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let vlast = vacc[vacc.len() - 1];
            if vbest - va0 >= 0.02 || vlast >= 0.5 {
                return;
            }
            ev.push_str(&format!(
                "; validation accuracy {} (training {})",
                fmt_num(vlast),
                acc.last().map_or("-".into(), |a| fmt_num(*a))
            ));
        }
    }
    cx.push(Suspect::new(
        label(FaultType::CPP),
        0.6,
        "train-val-mismatch",
        format!(
            "{ev}: the model fits its training targets and learns nothing about the validation \
             ones; training labels or inputs are likely prepared differently"
        ),
    ));
}

/// A squashing output activation on a regression target, seen in the trace: the output layer
/// (sigmoid, tanh, softsign, hard_sigmoid or softmax) is saturated (saturated_frac ≥ 0.5, the
/// saturation monitor's threshold) in at least half the epochs, or its mean |out| ends within
/// 10% of the activation's bound (1), or the loss stops falling while it is bounded (the best
/// loss of the second half is within 1% of the first half's). Bounded predictions cannot follow
/// targets outside their range (DeepDiagnosis' "output out of range of the labels", reference
/// §8). Suspect: ACH(last) 0.7.
fn bounded_regression_output(cx: &mut Ctx) {
    if cx.a.subject.task != Task::Regression {
        return;
    }
    let n = cx.n_layers();
    if n == 0 {
        return;
    }
    let j = n - 1;
    let act = cx.act_of(j).unwrap_or_default();
    let Some(why) = bounded_output(&cx.records, &act) else {
        return;
    };
    let i = cx.idx(j);
    let sugg = cx.a.suggest_str(&format!("act{i}"), &["linear"]);
    cx.push(
        Suspect::new(
            layer_label(FaultType::ACH, i),
            0.7,
            "bounded-regression-output",
            format!(
                "regression output layer {i} ({act}) is bounded: {why}; predictions cannot follow \
                 targets outside its range"
            ),
        )
        .suggest(sugg),
    );
}
