//! `mutate` end to end on a tiny correct subject, and `faults` listing what it wrote.

mod common;

use common::*;

#[test]
fn mutate_writes_killed_mutants_that_faults_lists() {
    let tmp = tempfile::tempdir().unwrap();
    let out_dir = tmp.path().join("mutants");
    let out = run(reprolab(tmp.path())
        .args([
            "mutate",
            "--json",
            "--operators",
            "OCH,HLR,HDB",
            "--runs",
            "5",
            "--search-steps",
            "2",
            "--out",
        ])
        .arg(&out_dir)
        .arg(fixture("tiny-linear")));
    assert!(out.status.success());
    let v = json(&out);
    let report = &v["report"];
    let ops: Vec<&str> = report["operators"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["op"].as_str().unwrap())
        .collect();
    assert_eq!(ops, ["OCH", "HLR", "HDB"]);
    let hdb = &report["operators"][2];
    assert!(
        hdb["not_applicable"].as_str().unwrap().contains("HDB"),
        "{hdb}"
    );
    // HLR's search trains the bound first: at least one probe per direction.
    assert!(report["operators"][1]["evaluated"].as_u64().unwrap() >= 2);
    assert!(out_dir.join("campaign.json").exists());

    let written = v["written"].as_array().unwrap();
    for dir in written {
        let dir = std::path::Path::new(dir.as_str().unwrap());
        let manifest = std::fs::read_to_string(dir.join("reprolab.toml")).unwrap();
        assert!(manifest.contains("[fix]"), "{manifest}");
        // A written mutant is a valid subject: it trains.
        let e = run(reprolab(tmp.path())
            .args(["eval", "--json", "--runs", "1"])
            .arg(dir));
        assert_eq!(json(&e)["runs"][0]["outcome"]["status"], "ok");
    }
    let list = run(reprolab(tmp.path())
        .args(["faults", "--json"])
        .arg(&out_dir));
    assert!(list.status.success());
    assert_eq!(json(&list).as_array().unwrap().len(), written.len());
    for f in json(&list).as_array().unwrap() {
        assert_eq!(f["fault"]["origin"], "mutation");
        assert!(f["fault"]["p_value"].as_f64().unwrap() < 0.05);
    }
}

#[test]
fn an_unknown_operator_is_a_usage_error() {
    let tmp = tempfile::tempdir().unwrap();
    let out = run(reprolab(tmp.path())
        .args(["mutate", "--operators", "XYZ", "--out", "x"])
        .arg(fixture("tiny-linear")));
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("XYZ"));
}

#[test]
fn the_bundled_benchmark_lists_real_and_artificial_faults() {
    let tmp = tempfile::tempdir().unwrap();
    let out = run(reprolab(tmp.path())
        .args(["faults", "--json"])
        .arg(repo().join("benchmarks/faults")));
    assert!(out.status.success());
    let list = json(&out);
    let faults = list.as_array().unwrap();
    let real = faults
        .iter()
        .filter(|f| f["fault"]["origin"] == "real")
        .count();
    let artificial = faults
        .iter()
        .filter(|f| f["fault"]["origin"] == "mutation")
        .count();
    assert!(real >= 6, "{real} real faults");
    assert!(artificial >= 20, "{artificial} artificial faults");
}

/// The held-out set lies outside `benchmarks/faults` (default benchmark runs never see it),
/// and every fault in it was measured: its fix is significantly better than the faulty config.
#[test]
fn the_held_out_faults_are_apart_from_the_bundled_ones_and_each_reproduces() {
    let tmp = tempfile::tempdir().unwrap();
    let out = run(reprolab(tmp.path())
        .args(["faults", "--json"])
        .arg(repo().join("benchmarks/faults-heldout")));
    assert!(out.status.success());
    let list = json(&out);
    let faults = list.as_array().unwrap();
    assert!(faults.len() >= 9, "{} held-out faults", faults.len());
    for f in faults {
        let record = &f["fault"];
        let name = record["subject"].as_str().unwrap();
        assert!(name.starts_with("heldout-"), "{name}");
        assert!(record["runs"].as_u64().unwrap() >= 20, "{record}");
        assert!(record["p_value"].as_f64().unwrap() < 0.05, "{record}");
        assert!(
            record["cohens_d"].as_f64().unwrap().abs() >= 0.5,
            "{record}"
        );
    }
    let bundled = run(reprolab(tmp.path())
        .args(["faults", "--json"])
        .arg(repo().join("benchmarks/faults")));
    let bundled = json(&bundled);
    assert!(bundled.as_array().unwrap().iter().all(|f| {
        !f["fault"]["subject"]
            .as_str()
            .unwrap()
            .starts_with("heldout-")
    }));
}
