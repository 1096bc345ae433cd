//! Head-to-head benchmark of the search layer's samplers on small synthetic objectives over
//! mixed spaces (categorical, log-scale and linear floats, integers), for comparison with
//! Optuna's `TPESampler` (the Python side is `tpe_bench_optuna.py` next to this file; it
//! re-implements the same objectives and checks them against `--eval`).
//!
//! Every run starts from the objective's fixed "faulty" config as trial 0 (as a repair study
//! does, and as the Python side does with `enqueue_trial`), then asks the sampler for one config
//! at a time and tells it the result (a failed training is a trial with no value). It drives the
//! [`Sampler`] directly, without the budgeted study loop.
//!
//! ```text
//! # best-so-far per trial, best config and failed trials, one JSON line per
//! # (objective, sampler, seed):
//! cargo run --release -p reprolab-search --example tpe_bench -- [--trials 60] [--seeds 20] \
//!     [--objectives study,study-float,branin,noisy-lr] [--samplers tpe,tpe-g0.1,random]
//! # evaluate configs (JSON lines {"objective", "config", "seed", "trial"} on stdin):
//! cargo run --release -p reprolab-search --example tpe_bench -- --eval
//! ```
//!
//! Objectives (`seed`, `trial` only seed the noise, drawn with SplitMix64 so that Python draws
//! the same; the two sides' values agree to 1e-12):
//! * `study` (max): the study-like space of `testing::study_space(true)` (3 × act/ki, optimizer,
//!   `lr` log-float in `[1e-6, 10]`, batch size, epochs) and `testing::study_metric` at full
//!   fidelity: `0.1 + 0.45·[act2 = softmax] + 0.4·lr_bump(lr)`, plus uniform noise of ±0.01
//!   (drawn per seed and trial here, not per config as in `testing`).
//! * `study-float` (max): the same with `lr` a plain `float` in `[1e-6, 10]`, as the bundled
//!   subjects declare it.
//! * `branin` (min): Branin over `x1` float in `[-5, 10]`, `x2` int in `[0, 15]`, plus a
//!   categorical offset `c` in `a, b, c, d` (0, 2, 5, 10). Noise-free; minimum 0.4323
//!   (`x2 = 12`, `c = a`).
//! * `noisy-lr` (min): optimizer (sgd, rmsprop, adam, adadelta), `lr` log-float in `[1e-6, 10]`
//!   whose best value depends on the optimizer (0.1, 1e-3, 1e-3, 1), `layers` int in `[1, 8]`,
//!   batch size, dropout float in `[0, 0.9]`; Gaussian noise σ = 0.05; a training with `lr`
//!   above ten times the optimizer's best diverges (no value), as does the faulty config.
//!
//! Samplers: `tpe` (`TpeSampler::new`, the defaults), `tpe-g0.1` (the same with `gamma = 0.1`,
//! Optuna's default split `min(ceil(0.1 n), 25)`), `random` (`RandomSampler`).

use std::io::BufRead;

use reprolab_core::{Config, Goal, Param, ParamKind, SearchSpace, vocabulary::ACTIVATIONS};
use reprolab_rng::SplitMix64;
use reprolab_search::space::apply_patch;
use reprolab_search::{RandomSampler, Sampler, TpeSampler, Trial};
use serde_json::{Value, json};

const INITS: [&str; 5] = [
    "zeros",
    "random_normal",
    "glorot_uniform",
    "he_uniform",
    "he_normal",
];
const OPTS: [&str; 4] = ["sgd", "rmsprop", "adam", "adadelta"];
const OBJECTIVES: [&str; 4] = ["study", "study-float", "branin", "noisy-lr"];

fn param(name: &str, kind: ParamKind) -> Param {
    Param {
        name: name.into(),
        kind,
        fault: None,
        layer: None,
    }
}

fn choice(name: &str, values: Vec<Value>) -> Param {
    param(name, ParamKind::Choice { values })
}

fn strs(xs: &[&str]) -> Vec<Value> {
    xs.iter().map(|s| json!(s)).collect()
}

fn cfg(v: Value) -> Config {
    serde_json::from_value(v).expect("a JSON object")
}

/// The objective's search space, goal and faulty config (trial 0).
fn setup(objective: &str) -> (SearchSpace, Goal, Config) {
    match objective {
        "study" | "study-float" => {
            let mut params = Vec::new();
            for i in 0..3 {
                params.push(choice(&format!("act{i}"), strs(ACTIVATIONS)));
                params.push(choice(&format!("ki{i}"), strs(&INITS)));
            }
            params.push(choice("optimizer", strs(&OPTS)));
            let (low, high) = (1e-6, 10.0);
            params.push(param(
                "lr",
                if objective == "study" {
                    ParamKind::LogFloat { low, high }
                } else {
                    ParamKind::Float { low, high }
                },
            ));
            params.push(choice(
                "batch_size",
                vec![json!(16), json!(32), json!(64), json!(128), json!(256)],
            ));
            params.push(choice(
                "epochs",
                vec![json!(9), json!(12), json!(18), json!(27)],
            ));
            let faulty = cfg(json!({
                "act0": "relu", "ki0": "glorot_uniform", "act1": "relu", "ki1": "glorot_uniform",
                "act2": "sigmoid", "ki2": "glorot_uniform", "optimizer": "adam", "lr": 3.0,
                "batch_size": 32, "epochs": 9
            }));
            (SearchSpace { params }, Goal::Max, faulty)
        }
        "branin" => (
            SearchSpace {
                params: vec![
                    param(
                        "x1",
                        ParamKind::Float {
                            low: -5.0,
                            high: 10.0,
                        },
                    ),
                    param("x2", ParamKind::Int { low: 0, high: 15 }),
                    choice("c", strs(&["a", "b", "c", "d"])),
                ],
            },
            Goal::Min,
            cfg(json!({"x1": 0.0, "x2": 0, "c": "c"})),
        ),
        "noisy-lr" => (
            SearchSpace {
                params: vec![
                    choice("optimizer", strs(&OPTS)),
                    param(
                        "lr",
                        ParamKind::LogFloat {
                            low: 1e-6,
                            high: 10.0,
                        },
                    ),
                    param("layers", ParamKind::Int { low: 1, high: 8 }),
                    choice(
                        "batch_size",
                        vec![json!(16), json!(32), json!(64), json!(128), json!(256)],
                    ),
                    param(
                        "dropout",
                        ParamKind::Float {
                            low: 0.0,
                            high: 0.9,
                        },
                    ),
                ],
            },
            Goal::Min,
            cfg(
                json!({"optimizer": "adam", "lr": 3.0, "layers": 1, "batch_size": 256,
                       "dropout": 0.5}),
            ),
        ),
        other => panic!("unknown objective {other}; known: {OBJECTIVES:?}"),
    }
}

/// Two uniform draws in `[0, 1)` for (seed, trial).
fn uniforms(seed: u64, trial: u64) -> (f64, f64) {
    let mut r = SplitMix64::new(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ trial);
    (r.next_f64(), r.next_f64())
}

/// `testing::lr_bump`: 1 inside `[1e-3, 1e-2]`, falling linearly to 0 at 1.5 decades outside.
fn lr_bump(lr: f64) -> f64 {
    let x = lr.max(1e-300).log10();
    let dist = if x < -3.0 {
        -3.0 - x
    } else if x > -2.0 {
        x + 2.0
    } else {
        0.0
    };
    (1.0 - dist / 1.5).max(0.0)
}

fn branin(x1: f64, x2: f64) -> f64 {
    let pi = std::f64::consts::PI;
    let (a, b, c) = (1.0, 5.1 / (4.0 * pi * pi), 5.0 / pi);
    let (r, s, t) = (6.0, 10.0, 1.0 / (8.0 * pi));
    a * (x2 - b * x1 * x1 + c * x1 - r).powi(2) + s * (1.0 - t) * x1.cos() + s
}

/// The objective's value of `c` (`None`: the training failed).
fn evaluate(objective: &str, c: &Config, seed: u64, trial: u64) -> Option<f64> {
    let num = |k: &str| c.get(k).and_then(Value::as_f64).expect(k);
    let text = |k: &str| c.get(k).and_then(Value::as_str).expect(k).to_string();
    let (u1, u2) = uniforms(seed, trial);
    match objective {
        "study" | "study-float" => {
            let gain = 0.45 * f64::from(text("act2") == "softmax") + 0.4 * lr_bump(num("lr"));
            Some(0.1 + gain + 0.01 * (2.0 * u1 - 1.0))
        }
        "branin" => {
            let off = match text("c").as_str() {
                "a" => 0.0,
                "b" => 2.0,
                "c" => 5.0,
                _ => 10.0,
            };
            Some(branin(num("x1"), num("x2")) + off)
        }
        "noisy-lr" => {
            let (best_lr, extra) = match text("optimizer").as_str() {
                "sgd" => (0.1, 0.1),
                "rmsprop" => (1e-3, 0.05),
                "adam" => (1e-3, 0.0),
                _ => (1.0, 0.3),
            };
            let lr = num("lr");
            if lr > 10.0 * best_lr {
                return None;
            }
            let d = lr.log10() - f64::log10(best_lr);
            let gauss = (-2.0 * (1.0 - u1).ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
            Some(
                0.5 * d * d
                    + 0.1 * (num("layers") - 4.0).powi(2)
                    + 0.2 * (num("batch_size").log2() - 6.0).abs()
                    + 2.0 * (num("dropout") - 0.2).powi(2)
                    + extra
                    + 0.05 * gauss,
            )
        }
        other => panic!("unknown objective {other}"),
    }
}

fn sampler(name: &str, seed: u64, goal: Goal) -> Box<dyn Sampler> {
    match name {
        "tpe" => Box::new(TpeSampler::new(seed, goal)),
        "tpe-g0.1" => {
            let mut s = TpeSampler::new(seed, goal);
            s.gamma = 0.1;
            Box::new(s)
        }
        "random" => Box::new(RandomSampler::new(seed)),
        other => panic!("unknown sampler {other}"),
    }
}

/// One run: the best value so far after each trial (`None` before the first success), the
/// best config, and how many trials failed.
fn run(
    objective: &str,
    sampler_name: &str,
    seed: u64,
    trials: usize,
) -> (Vec<Option<f64>>, Option<Config>, usize) {
    let (space, goal, faulty) = setup(objective);
    let mut s = sampler(sampler_name, seed, goal);
    let mut history: Vec<Trial> = Vec::with_capacity(trials);
    let mut best: Option<f64> = None;
    let mut best_config = None;
    let mut out = Vec::with_capacity(trials);
    for n in 0..trials {
        let config = if n == 0 {
            faulty.clone()
        } else {
            apply_patch(&faulty, &s.ask(&space, &history))
        };
        let value = evaluate(objective, &config, seed, n as u64).filter(|v| v.is_finite());
        if let Some(v) = value
            && best.is_none_or(|b| goal.better(v, b))
        {
            best = Some(v);
            best_config = Some(config.clone());
        }
        out.push(best);
        history.push(Trial {
            number: n,
            config,
            value,
            duration_s: 1.0,
            epochs: None,
            seed,
            pruned: None,
            confirms: None,
            curve: Vec::new(),
        });
    }
    let failed = history.iter().filter(|t| t.value.is_none()).count();
    (out, best_config, failed)
}

fn list(arg: Option<String>, default: &[&str]) -> Vec<String> {
    arg.map_or_else(
        || default.iter().map(|s| s.to_string()).collect(),
        |a| a.split(',').map(str::to_string).collect(),
    )
}

fn main() {
    let mut args = std::env::args().skip(1);
    let (mut trials, mut seeds) = (60usize, 20u64);
    let (mut objectives, mut samplers) = (None, None);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--eval" => {
                for line in std::io::stdin().lock().lines() {
                    let q: Value = serde_json::from_str(&line.expect("stdin")).expect("JSON");
                    let objective = q["objective"].as_str().expect("objective");
                    let c: Config = serde_json::from_value(q["config"].clone()).expect("config");
                    let v = evaluate(
                        objective,
                        &c,
                        q["seed"].as_u64().expect("seed"),
                        q["trial"].as_u64().expect("trial"),
                    );
                    println!("{}", json!({ "value": v }));
                }
                return;
            }
            "--trials" => {
                trials = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .expect("--trials N")
            }
            "--seeds" => seeds = args.next().and_then(|v| v.parse().ok()).expect("--seeds N"),
            "--objectives" => objectives = args.next(),
            "--samplers" => samplers = args.next(),
            other => panic!("unknown argument {other}"),
        }
    }
    for objective in list(objectives, &OBJECTIVES) {
        for name in list(samplers.clone(), &["tpe", "tpe-g0.1", "random"]) {
            for seed in 0..seeds {
                let (best, config, failed) = run(&objective, &name, seed, trials);
                println!(
                    "{}",
                    json!({"objective": objective, "sampler": name, "seed": seed, "best": best,
                           "best_config": config, "failed": failed})
                );
            }
        }
    }
}
