//! `neutrality` end to end on a tiny real fault (the tiny-linear fixture with lr 0.001 instead
//! of 0.1), then `bench localize` and `bench repair` scoring against the alternatives it wrote.

mod common;

use std::path::{Path, PathBuf};

use common::*;
use serde_json::{Value, json};

/// A faulty copy of the tiny-linear fixture in `dir`: lr 0.001 (HLR), the fixture's config as
/// the known fix.
fn tiny_fault(dir: &Path) -> PathBuf {
    let fault = dir.join("faults").join("tiny-HLR");
    std::fs::create_dir_all(&fault).unwrap();
    let src = fixture("tiny-linear");
    for f in ["train.py", "config.json"] {
        std::fs::copy(src.join(f), fault.join(f)).unwrap();
    }
    std::fs::copy(src.join("config.json"), fault.join("fixed.json")).unwrap();
    let mut config: Value =
        serde_json::from_str(&std::fs::read_to_string(src.join("config.json")).unwrap()).unwrap();
    config["lr"] = json!(0.001);
    std::fs::write(fault.join("config.json"), config.to_string()).unwrap();
    let manifest = std::fs::read_to_string(src.join("reprolab.toml"))
        .unwrap()
        .replace("name = \"tiny-linear\"", "name = \"tiny-HLR\"");
    std::fs::write(
        fault.join("reprolab.toml"),
        manifest + "\n[fix]\nconfig = \"fixed.json\"\nfaults = [\"HLR\"]\n",
    )
    .unwrap();
    fault
}

fn neutrality(tmp: &Path, fault: &Path) -> Value {
    let out = run(reprolab(tmp)
        .args([
            "neutrality",
            "--json",
            "--nodes",
            "6",
            "--runs",
            "4",
            "--out",
        ])
        .arg(tmp.join("graph"))
        .arg(fault));
    assert!(out.status.success());
    json(&out)
}

#[test]
fn neutrality_writes_the_graph_and_alternatives_and_a_rerun_trains_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let fault = tiny_fault(tmp.path());
    let v = neutrality(tmp.path(), &fault);
    let s = &v["summary"];
    assert_eq!(s["tried"], 6);
    assert_eq!(s["stop"], "nodes");
    assert_eq!(s["runs"], 4);
    assert_eq!(s["split"], "holdout");
    let trainings = s["trainings"].as_u64().unwrap();
    // The fix's 4 runs, then 3 or 4 per neighbour (stages 3, 4).
    assert!((4 + 6 * 3..=4 + 6 * 4).contains(&trainings), "{s}");
    assert_eq!(
        s["trained"].as_u64().unwrap() + s["cached"].as_u64().unwrap(),
        trainings
    );
    assert_eq!(
        trainings + s["saved"].as_u64().unwrap(),
        4 + 6 * 4,
        "saved = the runs early stops skipped"
    );

    // alternatives.json next to the fault: each one is a fix of the faulty config.
    let stored = stored_alternatives(&fault, s);
    let alts = stored["alternatives"].as_array().unwrap();
    assert_eq!(stored["hyperparameters"], 8);
    for a in alts {
        // The first six neighbours of the fix all change act0 (space order), so every
        // alternative restores lr 0.1 and changes act0.
        assert_eq!(a["patch"]["lr"], 0.1, "{a}");
        assert!(a["patch"]["act0"].is_string(), "{a}");
        assert_eq!(a["faults"], json!(["HLR", "ACH(0)"]), "{a}");
        assert_eq!(a["complexity"], 1);
    }

    // The graph in three formats.
    let graph: Value = serde_json::from_str(
        &std::fs::read_to_string(tmp.path().join("graph/graph.json")).unwrap(),
    )
    .unwrap();
    let nodes = graph["result"]["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 7, "the fix and six neighbours");
    assert_eq!(nodes[0]["config"]["lr"], 0.1, "the BFS starts from the fix");
    let dot = std::fs::read_to_string(tmp.path().join("graph/graph.dot")).unwrap();
    assert!(dot.starts_with("digraph neutrality {") && dot.trim_end().ends_with('}'));
    let svg = std::fs::read_to_string(tmp.path().join("graph/graph.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    assert_eq!(
        svg.matches("<circle").count(),
        1 + s["table4"]["nodes"].as_u64().unwrap() as usize + 4,
        "the fix, the graph's nodes and the four legend dots"
    );

    // A rerun trains nothing (alternatives.json does not change the subject's cache key) and
    // finds the same.
    let again = neutrality(tmp.path(), &fault);
    assert_eq!(again["summary"]["trained"], 0, "{}", again["summary"]);
    assert_eq!(again["summary"]["cached"].as_u64().unwrap(), trainings);
    assert_eq!(
        again["alternatives"]["alternatives"],
        stored["alternatives"]
    );

    // bench localize scores before and after the alternatives.
    let v = bench_localize_static(
        tmp.path(),
        &tmp.path().join("bl"),
        &tmp.path().join("faults"),
    );
    let rows = v["rows"].as_array().unwrap().clone();
    assert_eq!(rows.len(), 1);
    let r = &rows[0];
    let variants = r["variants"].as_u64().unwrap();
    let distinct: std::collections::BTreeSet<String> =
        alts.iter().map(|a| a["faults"].to_string()).collect();
    assert_eq!(variants as usize, distinct.len());
    assert!(r["rc_after"].as_f64().unwrap() >= r["rc"].as_f64().unwrap());
    let report = std::fs::read_to_string(tmp.path().join("bl/report.md")).unwrap();
    assert_eq!(
        report.contains("before / after neutrality analysis"),
        variants > 0
    );

    // bench repair gives AJ against the best variant too.
    let out = run(reprolab(tmp.path())
        .args([
            "bench",
            "repair",
            "--json",
            "--engines",
            "random",
            "--budgets",
            "3",
            "--repeats",
            "1",
            "--runs",
            "3",
            "--out",
        ])
        .arg(tmp.path().join("br"))
        .arg(tmp.path().join("faults")));
    assert!(out.status.success());
    let rows = json(&out)["rows"].as_array().unwrap().clone();
    assert_eq!(rows.len(), 1);
    let (aj, after) = (
        rows[0]["aj"].as_f64().unwrap(),
        rows[0]["aj_after"].as_f64().unwrap(),
    );
    assert!(after >= aj, "{}", rows[0]);
    assert!(rows[0]["patch_types"].is_array());
}

#[test]
fn neutrality_needs_a_known_fix() {
    let tmp = tempfile::tempdir().unwrap();
    let out = run(reprolab(tmp.path())
        .args(["neutrality", "--nodes", "1"])
        .arg(fixture("tiny-linear")));
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no [fix] table"), "{err}");
    let out = run(reprolab(tmp.path())
        .args(["neutrality", "--budget", "10"])
        .arg(repo().join("benchmarks/faults/real/D7")));
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("like 30m"));
}
