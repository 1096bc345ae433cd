//! The BFS on a synthetic objective with a known neutral network.
//!
//! Space: `a` (ACH) good / fine / bad, `b` (HBS) 16 / 32 / 64, `lr` (HLR, the study's float
//! in [1e-6, 10]), `opt` (OCH) adam / sgd, and `k` (LCF, not a neutrality operator). Accuracy
//! = 0.9, minus 0.3 for `a = bad`, `b = 64` or lr outside [1e-4, 1e-2], plus 0.05 for `sgd`,
//! plus uniform noise of ±0.005 per (config, seed). From the fix {good, 32, 0.001, adam, x}
//! the neutral network is therefore every config with `a ∈ {good, fine}`, `b ∈ {16, 32}`,
//! lr on the half-decade grid within [1e-4, 1e-2] (5 values) and either optimiser: 40 configs,
//! the fix included; the 20 with `sgd` are significantly better than the fix.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use reprolab_core::{Config, FaultType, Goal, Param, ParamKind, SearchSpace, Split};
use serde_json::{Value, json};

use super::*;
use reprolab_search::testing::{Synth, block_on, cfg, choice, config_stream, noise, subject};
use reprolab_search::{Objective, Trace};

fn space() -> SearchSpace {
    SearchSpace {
        params: vec![
            choice(
                "a",
                vec![json!("good"), json!("fine"), json!("bad")],
                FaultType::ACH,
                Some(0),
            ),
            choice(
                "b",
                vec![json!(16), json!(32), json!(64)],
                FaultType::HBS,
                None,
            ),
            Param {
                name: "lr".into(),
                kind: ParamKind::Float {
                    low: 1e-6,
                    high: 10.0,
                },
                fault: Some(FaultType::HLR),
                layer: None,
            },
            choice(
                "opt",
                vec![json!("adam"), json!("sgd")],
                FaultType::OCH,
                None,
            ),
            choice("k", vec![json!("x"), json!("y")], FaultType::LCF, Some(0)),
        ],
    }
}

fn fixed() -> Config {
    cfg(json!({"a": "good", "b": 32, "lr": 0.001, "opt": "adam", "k": "x"}))
}

/// The value of `key` in `c`.
fn at<'a>(c: &'a Config, key: &str) -> &'a Value {
    c.get(key).expect("every key is set")
}

fn in_network(c: &Config) -> bool {
    let lr = at(c, "lr").as_f64().unwrap();
    at(c, "a") != "bad" && at(c, "b") != 64 && (1e-4 * 0.999..=1e-2 * 1.001).contains(&lr)
}

fn metric(c: &Config, seed: u64) -> f64 {
    let mut m = if in_network(c) { 0.9 } else { 0.6 };
    if at(c, "opt") == "sgd" {
        m += 0.05;
    }
    m + 0.005 * noise(seed, config_stream(c))
}

fn synth() -> Synth {
    Synth::new(|c, s, _| Some(metric(c, s)))
}

fn run(obj: &impl Objective, settings: &NeutralitySettings) -> NeutralityResult {
    block_on(neutrality(
        obj,
        &space(),
        Goal::Max,
        &fixed(),
        settings,
        &mut |_| {},
    ))
    .unwrap()
}

fn settings(top_k: usize) -> NeutralitySettings {
    NeutralitySettings {
        top_k,
        ..NeutralitySettings::default()
    }
}

fn classes(r: &NeutralityResult) -> BTreeMap<String, NodeClass> {
    r.nodes
        .iter()
        .map(|n| (n.config.canonical_json(), n.class()))
        .collect()
}

#[test]
fn the_whole_known_network_is_found_with_a_large_top_k() {
    let obj = synth();
    let r = run(&obj, &settings(100));
    assert_eq!(r.stop, NeutralityStop::Exhausted);
    // 40 configs in the network, the fix being one of them.
    assert_eq!(r.graph_size(), 39, "every config of the network is a node");
    assert_eq!(r.alternatives().count(), 39);
    for n in &r.nodes {
        let inside = in_network(&n.config);
        assert_eq!(n.in_graph(), inside, "{}", n.config);
        if n.parent.is_some() && inside {
            let sgd = at(&n.config, "opt") == "sgd";
            let want = if sgd {
                NodeClass::BetterThanGt
            } else {
                NodeClass::Alternative
            };
            assert_eq!(n.class(), want, "{}", n.config);
        }
        // LCF is not a neutrality operator: k never changes.
        assert_eq!(at(&n.config, "k"), "x");
        // Every node differs from its parent in exactly one hyperparameter.
        if let Some(p) = n.parent {
            assert_eq!(
                reprolab_search::space::changed_count(&r.nodes[p].config, &n.config),
                1
            );
            assert_eq!(n.depth, r.nodes[p].depth + 1);
        }
    }
    // The tree has no repeated config.
    assert_eq!(classes(&r).len(), r.nodes.len());
    // Clearly worse neighbours were stopped at the first stage of 3 runs.
    let rejected: Vec<&Node> = r
        .nodes
        .iter()
        .filter(|n| n.class() == NodeClass::NotNeutral)
        .collect();
    assert!(!rejected.is_empty());
    for n in &rejected {
        let d = n.decision.unwrap();
        assert!(d.early && d.runs == 3, "{}: {d:?}", n.config);
    }
    assert_eq!(r.saved, rejected.len() * 7);
    assert_eq!(r.trainings, obj.trainings());
    assert_eq!(r.trainings, 10 + 10 * 39 + 3 * rejected.len());
    // Every call was on the holdout split, with seeds 0..10 over a node's stages.
    for (_, seeds, split, epochs) in obj.calls.borrow().iter() {
        assert_eq!(*split, Split::Holdout);
        assert!(epochs.is_none() && seeds.iter().all(|s| *s < 10));
    }
}

#[test]
fn only_the_top_k_neutral_neighbours_are_expanded() {
    let obj = synth();
    let r = run(
        &obj,
        &NeutralitySettings {
            max_tried: Some(60),
            ..settings(2)
        },
    );
    for p in r.nodes.iter().filter(|n| n.enqueued) {
        let kids: Vec<&Node> = r.nodes.iter().filter(|n| n.parent == Some(p.id)).collect();
        let mut neutral: Vec<&&Node> = kids
            .iter()
            .filter(|n| n.decision.is_some_and(|d| d.neutral))
            .collect();
        neutral.sort_by(|a, b| b.runs.mean.total_cmp(&a.runs.mean));
        let enqueued: Vec<usize> = kids.iter().filter(|n| n.enqueued).map(|n| n.id).collect();
        assert!(enqueued.len() <= 2);
        if !enqueued.is_empty() {
            let mut best: Vec<usize> = neutral.iter().take(2).map(|n| n.id).collect();
            best.sort_unstable();
            assert_eq!(enqueued, best, "the best two by mean, node {}", p.id);
        }
    }
    // The root's best neighbour is the sgd one (0.95 against 0.9).
    let first = r
        .nodes
        .iter()
        .find(|n| n.parent == Some(0) && n.enqueued)
        .unwrap();
    let best_child = r
        .nodes
        .iter()
        .filter(|n| n.parent == Some(0) && n.enqueued)
        .max_by(|a, b| a.runs.mean.total_cmp(&b.runs.mean))
        .unwrap();
    assert_eq!(at(&best_child.config, "opt"), "sgd");
    assert!(first.enqueued);
    assert_eq!(r.tried(), 60);
    assert_eq!(r.stop, NeutralityStop::Nodes);
}

#[test]
fn sequential_testing_saves_trainings_without_changing_decisions() {
    let seq = synth();
    let a = run(&seq, &settings(3));
    let full = synth();
    let b = run(
        &full,
        &NeutralitySettings {
            sequential: false,
            ..settings(3)
        },
    );
    assert_eq!(classes(&a), classes(&b));
    assert!(a.saved > 0 && b.saved == 0);
    assert_eq!(a.trainings + a.saved, b.trainings);
    assert!(seq.trainings() < full.trainings());
    assert_eq!(a.stopped_early(), a.saved / 7);
}

#[test]
fn budgets_stop_cleanly() {
    let obj = synth();
    let r = run(
        &obj,
        &NeutralitySettings {
            max_tried: Some(5),
            ..settings(5)
        },
    );
    assert_eq!(
        (r.stop, r.tried(), r.nodes.len()),
        (NeutralityStop::Nodes, 5, 6)
    );
    // The first five neighbours in space order: a → fine, bad; b → 16, 64; lr → 0.0001.
    let moves: Vec<String> = r.nodes[1..]
        .iter()
        .map(|n| n.change.as_ref().unwrap().to_string())
        .collect();
    assert_eq!(
        moves,
        vec![
            "a: good -> fine",
            "a: good -> bad",
            "b: 32 -> 16",
            "b: 32 -> 64",
            "lr: 0.001 -> 0.0001"
        ]
    );

    // A deadline already passed: the root is trained, nothing else.
    let obj = synth();
    let r = run(
        &obj,
        &NeutralitySettings {
            deadline: Some(Instant::now() - Duration::from_millis(1)),
            ..settings(5)
        },
    );
    assert_eq!(
        (r.stop, r.nodes.len(), r.trainings),
        (NeutralityStop::Time, 1, 10)
    );
}

#[test]
fn bad_settings_and_a_failing_fix_are_errors() {
    let obj = synth();
    for s in [
        NeutralitySettings {
            runs: 2,
            ..settings(5)
        },
        settings(0),
        NeutralitySettings {
            parallel: 0,
            ..settings(5)
        },
    ] {
        let e = block_on(neutrality(
            &obj,
            &space(),
            Goal::Max,
            &fixed(),
            &s,
            &mut |_| {},
        ));
        assert!(
            matches!(e, Err(reprolab_repair::RepairError::Settings(_))),
            "{e:?}"
        );
    }
    let failing = Synth::new(|_, _, _| None);
    let e = block_on(neutrality(
        &failing,
        &space(),
        Goal::Max,
        &fixed(),
        &settings(5),
        &mut |_| {},
    ))
    .unwrap_err();
    assert!(e.to_string().contains("finished 0 of 10"), "{e}");
    let mut bad = fixed();
    bad.insert("b", json!(48));
    let e = block_on(neutrality(
        &obj,
        &space(),
        Goal::Max,
        &bad,
        &settings(5),
        &mut |_| {},
    ))
    .unwrap_err();
    assert!(e.to_string().contains("key 'b': found 48"), "{e}");
}

/// Wraps an objective so that each evaluation stays pending for one poll, and records how
/// many evaluations were in flight at once.
struct Slow<'a> {
    inner: &'a Synth,
    in_flight: Cell<usize>,
    peak: Cell<usize>,
}

struct Pending<'a, T> {
    value: Option<T>,
    polled: bool,
    slow: &'a Slow<'a>,
}

impl<T: Unpin> Future for Pending<'_, T> {
    type Output = T;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        if !self.polled {
            self.polled = true;
            let s = self.slow;
            s.in_flight.set(s.in_flight.get() + 1);
            s.peak.set(s.peak.get().max(s.in_flight.get()));
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        self.slow.in_flight.set(self.slow.in_flight.get() - 1);
        Poll::Ready(self.value.take().expect("polled after ready"))
    }
}

impl Objective for Slow<'_> {
    fn evaluate(
        &self,
        config: &Config,
        seeds: &[u64],
        split: Split,
        epochs: Option<u64>,
    ) -> impl Future<Output = Result<Vec<(Option<f64>, f64)>, String>> {
        let value = block_on(self.inner.evaluate(config, seeds, split, epochs));
        Pending {
            value: Some(value),
            polled: false,
            slow: self,
        }
    }

    fn trace(&self, config: &Config, seed: u64) -> impl Future<Output = Result<Trace, String>> {
        self.inner.trace(config, seed)
    }
}

#[test]
fn neighbours_of_a_level_are_trained_concurrently_up_to_the_limit() {
    let inner = synth();
    let slow = Slow {
        inner: &inner,
        in_flight: Cell::new(0),
        peak: Cell::new(0),
    };
    let r = run(
        &slow,
        &NeutralitySettings {
            parallel: 3,
            max_tried: Some(9),
            ..settings(5)
        },
    );
    assert_eq!(r.tried(), 9);
    assert_eq!(slow.peak.get(), 3);
    // The same decisions as without concurrency.
    let plain = run(
        &synth(),
        &NeutralitySettings {
            parallel: 1,
            max_tried: Some(9),
            ..settings(5)
        },
    );
    assert_eq!(classes(&r), classes(&plain));
}

#[test]
fn alternatives_are_written_as_fixes_of_the_faulty_config() {
    // The fault: lr 10 instead of 0.001 (HLR).
    let mut faulty = fixed();
    faulty.insert("lr", json!(10.0));
    let subj = subject(space(), faulty, Goal::Max, Some((fixed(), vec!["HLR"])));
    let obj = synth();
    let r = block_on(analyse(&obj, &subj, &settings(100), &mut |_| {})).unwrap();
    let alts = Alternatives::from_result(&subj, &r);
    assert_eq!(alts.alternatives.len(), 39);
    assert_eq!(alts.hyperparameters, 5);
    assert_eq!((alts.nodes, alts.tried), (39, r.tried()));
    for a in &alts.alternatives {
        let node = &r.nodes[a.node];
        // The patch turns the faulty config into the alternative.
        assert_eq!(
            reprolab_search::space::apply_patch(&subj.config, &a.patch),
            node.config
        );
        assert_eq!(
            a.complexity, node.depth,
            "a tree path changes distinct keys"
        );
        assert_eq!(a.from_gt.len(), a.complexity);
        assert!((a.improvement - (node.runs.mean - r.root().runs.mean)).abs() < 1e-12);
        assert_eq!(a.better_than_gt, at(&node.config, "opt") == "sgd");
        let labels: Vec<String> = a.faults.iter().map(|l| l.to_string()).collect();
        // Every alternative changes lr away from 10 and labels each changed parameter.
        assert!(labels.contains(&"HLR".to_string()), "{labels:?}");
        assert_eq!(
            labels.contains(&"ACH(0)".to_string()),
            at(&node.config, "a") == "fine"
        );
    }
    // The variants: distinct label sets, such as [HLR], [ACH(0), HLR], [HBS, HLR], ...
    let variants = alts.variants();
    assert!(variants.contains(&vec!["HLR".parse().unwrap()]));
    assert!(variants.iter().all(|v| !v.is_empty()));
    let t4 = alts.table4();
    assert_eq!(t4.alternatives, 39);
    assert!(t4.complexity.unwrap() > 1.0);
    assert!(t4.improvement.unwrap() > 0.0, "half of them gain 0.05");

    // Written and read back unchanged; a missing file is None.
    let dir = tempfile_dir();
    assert_eq!(Alternatives::read(&dir).unwrap(), None);
    alts.write(&dir).unwrap();
    let back = Alternatives::read(&dir).unwrap().unwrap();
    assert_eq!(back.alternatives.len(), alts.alternatives.len());
    for (x, y) in back.alternatives.iter().zip(&alts.alternatives) {
        assert_eq!(
            (&x.patch, &x.faults, x.complexity),
            (&y.patch, &y.faults, y.complexity)
        );
        assert!((x.mean - y.mean).abs() < 1e-12 && (x.improvement - y.improvement).abs() < 1e-12);
    }
    assert_eq!(
        (back.nodes, back.stop, back.goal),
        (alts.nodes, alts.stop, alts.goal)
    );
    std::fs::write(dir.join(ALTERNATIVES_FILE), "{").unwrap();
    let e = Alternatives::read(&dir).unwrap_err().to_string();
    assert!(
        e.contains("alternatives.json") && e.contains("not a valid"),
        "{e}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

fn tempfile_dir() -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!(
        "reprolab-neutrality-{}-{}",
        std::process::id(),
        Instant::now().elapsed().as_nanos()
    ));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn change_labels_group_layers_per_fault_type() {
    let space = SearchSpace {
        params: vec![
            choice(
                "act0",
                vec![json!("relu"), json!("tanh")],
                FaultType::ACH,
                Some(0),
            ),
            choice(
                "act1",
                vec![json!("relu"), json!("tanh")],
                FaultType::ACH,
                Some(1),
            ),
            choice(
                "opt",
                vec![json!("adam"), json!("sgd")],
                FaultType::OCH,
                None,
            ),
        ],
    };
    let a = cfg(json!({"act0": "relu", "act1": "relu", "opt": "adam"}));
    let b = cfg(json!({"act0": "tanh", "act1": "tanh", "opt": "sgd"}));
    let labels: Vec<String> = change_labels(&space, &a, &b)
        .iter()
        .map(|l| l.to_string())
        .collect();
    assert_eq!(labels, vec!["ACH(0,1)", "OCH"]);
    assert!(change_labels(&space, &a, &a).is_empty());
}

#[test]
fn best_aj_takes_the_best_variant() {
    use std::collections::BTreeSet;
    let set = |xs: &[FaultType]| xs.iter().copied().collect::<BTreeSet<_>>();
    let gt = set(&[FaultType::HLR, FaultType::ACH]);
    let patch = set(&[FaultType::HBS]);
    assert_eq!(best_aj(&patch, &gt, &[]), Some(0.0));
    let alts = vec![
        vec!["HBS".parse().unwrap(), "OCH".parse().unwrap()],
        vec!["HBS".parse().unwrap()],
    ];
    assert_eq!(best_aj(&patch, &gt, &alts), Some(1.0));
    assert_eq!(best_aj(&patch, &BTreeSet::new(), &[]), None);
}

#[test]
fn the_dot_graph_is_well_formed_and_coloured() {
    let r = run(
        &synth(),
        &NeutralitySettings {
            max_tried: Some(12),
            ..settings(5)
        },
    );
    let text = dot::to_dot(&r, "synthetic \"fault\"");
    assert!(text.starts_with("digraph neutrality {\n") && text.ends_with("}\n"));
    assert!(text.contains(r#"label="synthetic \"fault\"";"#));
    // One node line per graph node, one edge per graph node but the root.
    let is_edge = |l: &str| l.split_whitespace().nth(1) == Some("->");
    let node_lines = text
        .lines()
        .filter(|l| l.trim_start().starts_with('n') && l.contains("[label=\"") && !is_edge(l))
        .count();
    let edges = text.lines().filter(|l| is_edge(l)).count();
    assert_eq!(node_lines, r.graph_size() + 1);
    assert_eq!(edges, r.graph_size());
    assert!(text.contains(r##"n0 [label="0", fillcolor="#000000", fontcolor=white"##));
    assert!(text.contains(dot::colour(NodeClass::BetterThanGt)));
    // Rejected nodes are not drawn.
    for n in r.nodes.iter().filter(|n| !n.in_graph()) {
        assert!(!text.contains(&format!("n{} [", n.id)));
    }
    // Balanced braces and quotes (escaped quotes aside).
    assert_eq!(text.matches('{').count(), text.matches('}').count());
    assert_eq!(text.replace("\\\"", "").matches('"').count() % 2, 0);
}

#[test]
fn durations_need_a_unit() {
    assert_eq!(parse_duration("30m").unwrap(), Duration::from_secs(1800));
    assert_eq!(parse_duration("90s").unwrap(), Duration::from_secs(90));
    assert_eq!(parse_duration(" 1.5h ").unwrap(), Duration::from_secs(5400));
    assert_eq!(parse_duration("2 min").unwrap(), Duration::from_secs(120));
    for bad in ["30", "m", "-1m", "0s", "3d", "x5m"] {
        let e = parse_duration(bad).unwrap_err();
        assert!(e.contains("like 30m"), "{bad}: {e}");
    }
}
