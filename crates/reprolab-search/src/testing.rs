//! Synthetic objectives, subjects and traces for the tests of engines built on the search layer
//! (here, in `reprolab-repair` and in `reprolab-neutrality`): no Python, no runtime (a
//! noop-waker [`block_on`]). Compiled for this crate's tests and with the feature `testing`.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::path::PathBuf;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use reprolab_core::{
    Config, Dataset, Entry, FaultLabel, FaultType, Fix, Framework, Goal, KerasBackend, Limits,
    Metric, Param, ParamKind, SearchSpace, Split, Subject, Task,
};
use reprolab_rng::SplitMix64;
use serde_json::{Value, json};

use crate::{Evaluated, Objective, PrunedAt, Trace, prune_at};

pub fn block_on<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::yield_now();
    }
}

/// Uniform in [-1, 1], a function of (seed, stream).
pub fn noise(seed: u64, stream: u64) -> f64 {
    let mut r = SplitMix64::new(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ stream);
    r.next_u64();
    (r.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
}

/// A stream id per config (FNV-1a over its canonical JSON).
pub fn config_stream(c: &Config) -> u64 {
    c.canonical_json()
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
        })
}

pub const ACTS: &[&str] = reprolab_core::vocabulary::ACTIVATIONS;
pub const INITS: [&str; 5] = [
    "zeros",
    "random_normal",
    "glorot_uniform",
    "he_uniform",
    "he_normal",
];
pub const OPTS: [&str; 4] = ["sgd", "rmsprop", "adam", "adadelta"];

pub fn choice(name: &str, values: Vec<Value>, fault: FaultType, layer: Option<u32>) -> Param {
    Param {
        name: name.into(),
        kind: ParamKind::Choice { values },
        fault: Some(fault),
        layer,
    }
}

fn strs(xs: &[&str]) -> Vec<Value> {
    xs.iter().map(|s| json!(s)).collect()
}

/// A study-like space: three layers' activations and initialisers, optimizer, lr, batch size,
/// epochs. `log_lr`: lr is a `log-float` in [1e-6, 10]; otherwise the study's uniform `float`.
pub fn study_space(log_lr: bool) -> SearchSpace {
    let mut params = Vec::new();
    for i in 0..3u32 {
        params.push(choice(
            &format!("act{i}"),
            strs(ACTS),
            FaultType::ACH,
            Some(i),
        ));
        params.push(choice(
            &format!("ki{i}"),
            strs(&INITS),
            FaultType::WCI,
            Some(i),
        ));
    }
    params.push(choice("optimizer", strs(&OPTS), FaultType::OCH, None));
    params.push(Param {
        name: "lr".into(),
        kind: if log_lr {
            ParamKind::LogFloat {
                low: 1e-6,
                high: 10.0,
            }
        } else {
            ParamKind::Float {
                low: 1e-6,
                high: 10.0,
            }
        },
        fault: Some(FaultType::HLR),
        layer: None,
    });
    params.push(choice(
        "batch_size",
        vec![json!(16), json!(32), json!(64), json!(128), json!(256)],
        FaultType::HBS,
        None,
    ));
    params.push(choice(
        "epochs",
        vec![json!(9), json!(12), json!(18), json!(27)],
        FaultType::HNE,
        None,
    ));
    SearchSpace { params }
}

pub fn cfg(v: Value) -> Config {
    serde_json::from_value(v).unwrap()
}

/// The faulty config of the study-like space: act2 sigmoid (should be softmax), lr 3.0.
pub fn study_faulty() -> Config {
    cfg(json!({
        "act0": "relu", "ki0": "glorot_uniform", "act1": "relu", "ki1": "glorot_uniform",
        "act2": "sigmoid", "ki2": "glorot_uniform", "optimizer": "adam", "lr": 3.0,
        "batch_size": 32, "epochs": 9
    }))
}

pub fn subject(
    space: SearchSpace,
    config: Config,
    goal: Goal,
    fix: Option<(Config, Vec<&str>)>,
) -> Subject {
    Subject {
        dir: PathBuf::from("/synthetic"),
        manifest_path: PathBuf::from("/synthetic/reprolab.toml"),
        name: "synthetic".into(),
        description: String::new(),
        task: Task::Classification,
        framework: Framework::Pytorch,
        backend: KerasBackend::Torch,
        dataset: Dataset {
            name: "synthetic".into(),
            description: String::new(),
        },
        entry: Entry::Callable {
            file: "train.py".into(),
            function: "train".into(),
        },
        metric: Metric {
            name: if goal == Goal::Max {
                "accuracy"
            } else {
                "loss"
            }
            .into(),
            goal,
        },
        config_path: PathBuf::from("/synthetic/config.json"),
        config,
        space,
        limits: Limits::default(),
        fix: fix.map(|(config, labels)| Fix {
            config_path: PathBuf::from("/synthetic/fixed.json"),
            config,
            faults: labels
                .iter()
                .map(|l| l.parse::<FaultLabel>().unwrap())
                .collect(),
        }),
        packages: Vec::new(),
    }
}

pub fn study_subject(log_lr: bool) -> Subject {
    let mut fixed = study_faulty();
    fixed.insert("act2", json!("softmax"));
    fixed.insert("lr", json!(0.003));
    subject(
        study_space(log_lr),
        study_faulty(),
        Goal::Max,
        Some((fixed, vec!["ACH(2)", "HLR"])),
    )
}

/// 1 inside `[1e-3, 1e-2]`, falling linearly to 0 at 1.5 decades outside.
pub fn lr_bump(lr: f64) -> f64 {
    let x = lr.max(1e-300).log10();
    let dist = if x < -3.0 {
        -3.0 - x
    } else if x > -2.0 {
        x - -2.0
    } else {
        0.0
    };
    (1.0 - dist / 1.5).max(0.0)
}

/// The synthetic accuracy of the study-like space: high (~0.95) only when act2 is softmax and
/// lr in [1e-3, 1e-2]; `frac` = trained epochs / config epochs scales the gain (fidelity).
pub fn study_metric(c: &Config, seed: u64, frac: f64) -> f64 {
    let act2 = c.get("act2").and_then(Value::as_str).unwrap_or("");
    let lr = c.get("lr").and_then(Value::as_f64).unwrap_or(1.0);
    let gain = 0.45 * f64::from(act2 == "softmax") + 0.4 * lr_bump(lr);
    let fidelity = 0.6 + 0.4 * frac.clamp(0.0, 1.0);
    0.1 + gain * fidelity + 0.01 * noise(seed, config_stream(c))
}

type MetricFn = Box<dyn Fn(&Config, u64, f64) -> Option<f64>>;
type TraceFn = Box<dyn Fn(&Config, u64) -> Trace>;
/// One evaluate call: (config, seeds, split, epochs).
pub type Call = (Config, Vec<u64>, Split, Option<u64>);

/// A synthetic objective: metric(config, seed, epochs fraction); duration = 0.1 s per epoch
/// (`epochs` key, default 10) or the fidelity's epochs; a trace function.
pub struct Synth {
    pub metric: MetricFn,
    pub trace: TraceFn,
    /// Every evaluate call: (config, seeds, split, epochs).
    pub calls: RefCell<Vec<Call>>,
    pub traces: Cell<usize>,
    /// The goal [`prune_at`] prunes with (default max).
    pub goal: Goal,
}

impl Synth {
    pub fn new(metric: impl Fn(&Config, u64, f64) -> Option<f64> + 'static) -> Self {
        Synth {
            metric: Box::new(metric),
            trace: Box::new(|_, _| healthy_trace()),
            calls: RefCell::new(Vec::new()),
            traces: Cell::new(0),
            goal: Goal::Max,
        }
    }

    pub fn with_trace(mut self, t: impl Fn(&Config, u64) -> Trace + 'static) -> Self {
        self.trace = Box::new(t);
        self
    }

    pub fn study() -> Self {
        Synth::new(|c, s, f| Some(study_metric(c, s, f)))
    }

    pub fn trainings(&self) -> usize {
        self.calls.borrow().iter().map(|c| c.1.len()).sum()
    }
}

pub fn epochs_of(c: &Config) -> u64 {
    c.get("epochs").and_then(Value::as_u64).unwrap_or(10)
}

impl Objective for Synth {
    fn evaluate(
        &self,
        config: &Config,
        seeds: &[u64],
        split: Split,
        epochs: Option<u64>,
    ) -> impl Future<Output = Result<Vec<(Option<f64>, f64)>, String>> {
        self.calls
            .borrow_mut()
            .push((config.clone(), seeds.to_vec(), split, epochs));
        let full = epochs_of(config);
        let e = epochs.unwrap_or(full);
        let frac = e as f64 / full as f64;
        let out = seeds
            .iter()
            .map(|s| ((self.metric)(config, *s, frac), 0.1 * e as f64))
            .collect();
        std::future::ready(Ok(out))
    }

    /// The curve of a training of `e` epochs is the metric at each epoch's fraction of the
    /// config's epochs (`metric(config, seed, (k + 1) / full)`), cut where [`prune_at`] prunes
    /// it; the duration is 0.1 s per epoch trained.
    fn evaluate_pruned(
        &self,
        config: &Config,
        seed: u64,
        split: Split,
        epochs: Option<u64>,
        thresholds: &[Option<f64>],
    ) -> impl Future<Output = Result<Evaluated, String>> {
        self.calls
            .borrow_mut()
            .push((config.clone(), vec![seed], split, epochs));
        let full = epochs_of(config);
        let e = epochs.unwrap_or(full);
        let curve: Vec<Option<f64>> = (0..e)
            .map(|k| (self.metric)(config, seed, (k + 1) as f64 / full as f64))
            .collect();
        let out = match prune_at(self.goal, thresholds, &curve) {
            Some((k, best)) => Evaluated {
                value: None,
                duration_s: 0.1 * (k + 1) as f64,
                curve: curve[..=k].to_vec(),
                pruned: Some(PrunedAt {
                    epoch: k as u64,
                    value: best,
                }),
            },
            None => Evaluated {
                value: (self.metric)(config, seed, e as f64 / full as f64),
                duration_s: 0.1 * e as f64,
                curve,
                pruned: None,
            },
        };
        std::future::ready(Ok(out))
    }

    fn trace(&self, config: &Config, seed: u64) -> impl Future<Output = Result<Trace, String>> {
        self.traces.set(self.traces.get() + 1);
        std::future::ready(Ok((self.trace)(config, seed)))
    }
}

/// One layer record.
pub fn layer(name: &str, act: &str, grad_norm: f64, grad_zero_frac: f64) -> Value {
    json!({"name": name, "kind": "Linear", "act": act, "weight_norm": 3.0, "grad_norm": grad_norm,
           "grad_zero_frac": grad_zero_frac, "dead_frac": 0.1, "saturated_frac": 0.0,
           "mean_abs_out": 0.8})
}

/// A trace with the given per-epoch accuracies and a layer list per epoch.
pub fn trace_of(accs: &[f64], losses: &[f64], layers: impl Fn(usize) -> Vec<Value>) -> Trace {
    Trace {
        epochs: accs
            .iter()
            .zip(losses)
            .enumerate()
            .map(|(i, (a, l))| {
                json!({"epoch": i, "loss": l, "acc": a, "val_loss": l, "val_acc": a - 0.01,
                       "nan": false, "layers": layers(i)})
            })
            .collect(),
        finished: true,
    }
}

/// Steady learning to a plateau, healthy gradients.
pub fn healthy_trace() -> Trace {
    let accs = [0.5, 0.7, 0.8, 0.85, 0.88, 0.9];
    let losses = [1.5, 0.9, 0.6, 0.45, 0.44, 0.438];
    trace_of(&accs, &losses, |_| {
        vec![
            layer("0", "relu", 0.05, 0.3),
            layer("1", "relu", 0.08, 0.3),
            layer("2", "softmax", 0.1, 0.0),
        ]
    })
}
