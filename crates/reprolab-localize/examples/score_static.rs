//! Scores the localisation engines on the bundled fault benchmark (reference §4): for every
//! faulty subject below `benchmarks/faults` (or the directory given), localise from the faulty
//! config alone (static rules, no training) and score the answer ([`rank_to_types`], at most
//! `--max` types) against the manifest's `[fix] faults` with RC, PR and F3 over fault types.
//!
//! With `--traces DIR`, a trace `DIR/<fault directory name>.json` (the JSON that
//! `reprolab trace SUBJECT --json` prints, or a plain array of epoch records) adds the dynamic
//! monitors for that fault; faults without one are scored on static rules only.
//!
//! ```sh
//! cargo run -p reprolab-localize --example score_static
//! cargo run -p reprolab-localize --example score_static -- --traces /tmp/fault-traces
//! ```
//!
//! `-v` prints every fault's merged suspects; `--max N` caps the answer (default 5 types).
//!
//! The ground truth is read here, in the scoring code, only: the engines get a copy of the
//! subject with its `[fix]` removed.

use std::path::{Path, PathBuf};

use reprolab_core::Subject;
use reprolab_localize::{Score, dynamic_monitors, merge, rank_to_types, score, static_rules};

struct Row {
    group: String,
    name: String,
    gt: String,
    answer: String,
    dynamic: bool,
    score: Score,
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mut dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../benchmarks/faults");
    let mut traces: Option<PathBuf> = None;
    let mut max = 5usize;
    let mut verbose = false;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--traces" => traces = args.next().map(PathBuf::from),
            "-v" | "--verbose" => verbose = true,
            "--max" => max = args.next().and_then(|x| x.parse().ok()).expect("--max N"),
            other => dir = PathBuf::from(other),
        }
    }
    let faults = reprolab_faults::read_benchmark(&dir).expect("reading the benchmark");
    let mut rows: Vec<Row> = Vec::new();
    for (path, _) in &faults {
        let subject = Subject::load(path).expect("loading a faulty subject");
        let gt = subject
            .fix
            .as_ref()
            .map(|f| f.faults.clone())
            .unwrap_or_default();
        if gt.is_empty() {
            continue;
        }
        // What the engines see: no ground truth.
        let mut blind = subject.clone();
        blind.fix = None;
        let mut lists = vec![static_rules(&blind, &blind.config)];
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let mut dynamic = false;
        if let Some(tdir) = &traces
            && let Some(epochs) = read_trace(&tdir.join(format!("{name}.json")))
        {
            lists.push(dynamic_monitors(&blind, &blind.config, &epochs));
            dynamic = true;
        }
        let suspects = merge(&lists);
        let answer = rank_to_types(&suspects, max);
        if verbose {
            println!("== {name}");
            for s in &suspects {
                println!("   {s}");
            }
        }
        let group = if path.components().any(|c| c.as_os_str() == "artificial") {
            "artificial"
        } else {
            "real"
        };
        rows.push(Row {
            group: group.into(),
            name,
            gt: join(&gt),
            answer: join(&answer),
            dynamic,
            score: score(&answer, &gt),
        });
    }
    println!(
        "{:<52} {:<26} {:<26} {:>4} {:>5} {:>5} {:>5}",
        "fault", "ground truth", "answer", "dyn", "RC", "PR", "F3"
    );
    for r in &rows {
        println!(
            "{:<52} {:<26} {:<26} {:>4} {:>5.2} {:>5.2} {:>5.2}",
            format!("{}/{}", r.group, r.name),
            r.gt,
            if r.answer.is_empty() { "-" } else { &r.answer },
            if r.dynamic { "yes" } else { "no" },
            r.score.rc,
            r.score.pr,
            r.score.f3
        );
    }
    println!();
    for group in ["artificial", "real", "all"] {
        let sel: Vec<&Row> = rows
            .iter()
            .filter(|r| group == "all" || r.group == group)
            .collect();
        if sel.is_empty() {
            continue;
        }
        let n = sel.len() as f64;
        let avg = |f: fn(&Score) -> f64| sel.iter().map(|r| f(&r.score)).sum::<f64>() / n;
        println!(
            "{group:<10} n={:<3} RC={:.3} PR={:.3} F3={:.3}",
            sel.len(),
            avg(|s| s.rc),
            avg(|s| s.pr),
            avg(|s| s.f3)
        );
    }
}

fn join(labels: &[reprolab_core::FaultLabel]) -> String {
    labels
        .iter()
        .map(|l| l.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

fn read_trace(path: &Path) -> Option<Vec<serde_json::Value>> {
    let text = std::fs::read_to_string(path).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    match v {
        serde_json::Value::Array(a) => Some(a),
        serde_json::Value::Object(mut o) => match o.remove("epochs") {
            Some(serde_json::Value::Array(a)) => Some(a),
            _ => None,
        },
        _ => None,
    }
}
