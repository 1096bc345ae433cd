//! The measured reports in docs/results are rebuilt from their `results.jsonl` and the bundled
//! benchmark, byte for byte: the tables keep their formats.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use reprolab_bench::{localize, read_jsonl, repair};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn committed(dir: &str) -> String {
    std::fs::read_to_string(repo().join("docs/results").join(dir).join("report.md")).unwrap()
}

/// The bundled faults whose subject names are in `names`.
fn fault_dirs(names: &BTreeSet<String>) -> Vec<PathBuf> {
    fault_dirs_in("benchmarks/faults", names)
}

/// The faults of the benchmark `bench` whose subject names are in `names`.
fn fault_dirs_in(bench: &str, names: &BTreeSet<String>) -> Vec<PathBuf> {
    reprolab_faults::read_benchmark(&repo().join(bench))
        .unwrap()
        .into_iter()
        .map(|(d, _)| d)
        .filter(|d| {
            let s = reprolab_core::manifest::Subject::load(d).unwrap();
            names.contains(&s.name)
        })
        .collect()
}

fn strings(s: &[&str]) -> Vec<String> {
    s.iter().map(|x| x.to_string()).collect()
}

/// The Markdown of the repair report rebuilt from `docs/results/DIR`'s rows over the faults of
/// `bench`. `with_alternatives`: whether the report was written after the neutrality analysis
/// wrote the faults' `alternatives.json` (the earlier reports score without them).
fn rebuilt_repair(dir: &str, bench: &str, setup: repair::Setup, with_alternatives: bool) -> String {
    let rows: Vec<repair::Row> =
        read_jsonl(&repo().join("docs/results").join(dir).join("results.jsonl"));
    let names: BTreeSet<String> = rows.iter().map(|r| r.fault.clone()).collect();
    let mut variants = repair::read_variants(&fault_dirs_in(bench, &names)).unwrap();
    assert_eq!(variants.len(), names.len());
    if !with_alternatives {
        variants.values_mut().for_each(|(_, alts)| alts.clear());
    }
    let results = repair::finish(rows, &variants, &setup);
    let report = repair::build_report(&results, &setup);
    write_figures_if_asked(dir, &report);
    report.to_markdown()
}

/// With `REPROLAB_WRITE_FIGURES` set, the rebuilt report (Markdown, HTML page, figures) is
/// written into its directory: how the committed reports follow a change of the report's
/// layout, from the same measured rows. Review the diff: only the layout may change.
fn write_figures_if_asked(dir: &str, report: &reprolab_report::Report) {
    if std::env::var_os("REPROLAB_WRITE_FIGURES").is_none() {
        return;
    }
    let dir = repo().join("docs/results").join(dir);
    std::fs::create_dir_all(dir.join("figures")).unwrap();
    for f in report.sections.iter().flat_map(|s| &s.figures) {
        std::fs::write(dir.join("figures").join(format!("{}.svg", f.name)), &f.svg).unwrap();
    }
    std::fs::write(dir.join("report.html"), report.to_html()).unwrap();
    std::fs::write(dir.join("report.md"), report.to_markdown()).unwrap();
}

#[test]
fn bench_repair_report_is_rebuilt() {
    let setup = repair::Setup {
        benchmark: "/work/main/benchmarks/faults".into(),
        engines: strings(&["random", "tpe", "bohb", "rules", "guided"]),
        budgets: strings(&["10x", "20x"]),
        repeats: 2,
        runs: 10,
    };
    assert_eq!(
        rebuilt_repair("bench-repair", "benchmarks/faults", setup, false),
        committed("bench-repair")
    );
}

/// The held-out faults' repair benchmark, the first committed one whose rows keep their
/// validation runs: its report has the runs per fault.
#[test]
fn bench_repair_heldout_report_is_rebuilt_with_runs_per_fault() {
    let setup = repair::Setup {
        benchmark: "/work/main/benchmarks/faults-heldout".into(),
        engines: strings(&["random", "guided", "rules"]),
        budgets: strings(&["10x"]),
        repeats: 2,
        runs: 10,
    };
    let dir = "bench-repair-heldout";
    let md = rebuilt_repair(dir, "benchmarks/faults-heldout", setup, false);
    assert_eq!(md, committed(dir));
    assert!(md.contains("## Runs per fault"), "{md}");
    assert!(md.contains("![heldout-H4: holdout runs"), "{md}");
}

/// The rules engine on the held-out faults after its two new symptoms (docs/results).
#[test]
fn bench_repair_heldout_rules_report_is_rebuilt() {
    let setup = repair::Setup {
        benchmark: "/work/main/benchmarks/faults-heldout".into(),
        engines: strings(&["rules"]),
        budgets: strings(&["10x"]),
        repeats: 2,
        runs: 10,
    };
    assert_eq!(
        rebuilt_repair(
            "bench-repair-heldout-rules",
            "benchmarks/faults-heldout",
            setup,
            false
        ),
        committed("bench-repair-heldout-rules")
    );
}

/// The Keras twins of the real faults (docs/results, "bench repair on the Keras real faults").
#[test]
fn bench_repair_keras_report_is_rebuilt() {
    let setup = repair::Setup {
        benchmark: "real-keras".into(),
        engines: strings(&["guided", "bohb", "rules"]),
        budgets: strings(&["10x"]),
        repeats: 1,
        runs: 10,
    };
    assert_eq!(
        rebuilt_repair(
            "bench-repair-keras",
            "benchmarks/faults/real-keras",
            setup,
            false
        ),
        committed("bench-repair-keras")
    );
}

#[test]
fn bench_minimize_report_is_rebuilt() {
    let setup = repair::Setup {
        benchmark: "/work/main/benchmarks/faults".into(),
        engines: strings(&["random"]),
        budgets: strings(&["20x"]),
        repeats: 1,
        runs: 10,
    };
    assert_eq!(
        rebuilt_repair("bench-minimize", "benchmarks/faults", setup, false),
        committed("bench-minimize")
    );
}

#[test]
fn bench_repair_bohb_report_is_rebuilt_with_aj_after() {
    let setup = repair::Setup {
        benchmark: "benchmarks/faults".into(),
        engines: strings(&["random", "bohb"]),
        budgets: strings(&["10x", "20x"]),
        repeats: 3,
        runs: 10,
    };
    assert_eq!(
        rebuilt_repair("bench-repair-bohb", "benchmarks/faults", setup, true),
        committed("bench-repair-bohb")
    );
}

#[test]
fn bench_localize_report_is_rebuilt_with_before_and_after() {
    let rows: Vec<localize::Row> =
        read_jsonl(&repo().join("docs/results/bench-localize/results.jsonl"));
    let names: BTreeSet<String> = rows.iter().map(|r| r.fault.clone()).collect();
    let variants = localize::read_variants(&fault_dirs(&names)).unwrap();
    let results = localize::finish(rows, &variants);
    write_figures_if_asked(
        "bench-localize",
        &localize::build_report(
            &results,
            &localize::Setup {
                benchmark: "benchmarks/faults".into(),
                engines: strings(&["static", "dynamic", "all"]),
                repeats: 3,
            },
        ),
    );
    let setup = localize::Setup {
        benchmark: "benchmarks/faults".into(),
        engines: strings(&["static", "dynamic", "all"]),
        repeats: 3,
    };
    assert_eq!(
        localize::build_report(&results, &setup).to_markdown(),
        committed("bench-localize")
    );
}
