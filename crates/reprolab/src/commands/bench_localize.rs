//! `reprolab bench localize`: RC, PR and F3 of the localisation engines against a fault
//! benchmark's ground truth, per fault and averaged over artificial and real faults (the study's
//! Table 5 layout), with time per fault and stability over repeated runs.

use std::collections::{BTreeMap, HashSet};
use std::io::Write as _;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use reprolab_core::manifest::Subject;
use reprolab_localize as loc;
use reprolab_report::{Cell, Report, Section, Table};
use serde::{Deserialize, Serialize};

use super::localize::suspects;
use super::{read_jsonl, serde_name};
use crate::cli::{BenchLocalizeArgs, Global, LocalizeEngine};
use crate::context;
use crate::progress;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Row {
    pub fault: String,
    pub origin: String,
    pub engine: String,
    pub gt: Vec<String>,
    /// The answer: the mode over the repeats.
    pub answer: Vec<String>,
    pub rc: f64,
    pub pr: f64,
    pub f3: f64,
    /// Share of repeats whose answer equals the mode.
    pub stability: f64,
    pub repeats: usize,
    /// Mean seconds per run: training (recorded duration) plus analysis.
    pub seconds: f64,
}

pub async fn run(g: &Global, a: &BenchLocalizeArgs) -> Result<ExitCode> {
    if a.repeats == 0 {
        bail!("--repeats must be at least 1");
    }
    let faults = reprolab_faults::read_benchmark(&a.benchmark)?;
    if faults.is_empty() {
        bail!("{}: no faulty subjects here", a.benchmark.display());
    }
    std::fs::create_dir_all(&a.out).with_context(|| format!("creating {}", a.out.display()))?;
    let results_path = a.out.join("results.jsonl");
    let mut rows: Vec<Row> = read_jsonl(&results_path);
    let done: HashSet<(String, String)> = rows
        .iter()
        .map(|r| (r.fault.clone(), r.engine.clone()))
        .collect();
    let ev = context::evaluator(g).await?;
    let pb = progress::bar(
        (faults.len() * a.engines.len()) as u64,
        "bench localize",
        g.json,
    );
    let mut out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&results_path)?;
    for (dir, record) in &faults {
        let subject = Subject::load(dir)?;
        let gt: Vec<_> = subject
            .fix
            .as_ref()
            .map(|f| f.faults.clone())
            .unwrap_or_default();
        let origin = record
            .as_ref()
            .map_or("real".into(), |r| serde_name(r.origin));
        for &engine in &a.engines {
            let name = serde_name(engine);
            if done.contains(&(subject.name.clone(), name.clone())) {
                pb.inc(1);
                continue;
            }
            let repeats = if engine == LocalizeEngine::Static {
                1
            } else {
                a.repeats
            };
            let mut answers: Vec<Vec<String>> = Vec::new();
            let mut seconds = 0.0;
            for seed in 0..repeats as u64 {
                let t0 = Instant::now();
                let found =
                    suspects(Some(&ev), None, &subject, &subject.config, engine, seed).await?;
                let (list, trained) = (found.suspects, found.training_s);
                // Count the training's own duration, not whether the cache answered.
                seconds += trained.unwrap_or(0.0)
                    + if trained.is_some() {
                        0.0
                    } else {
                        t0.elapsed().as_secs_f64()
                    };
                let mut ans: Vec<String> = loc::rank_to_types(&list, 5)
                    .iter()
                    .map(|l| l.to_string())
                    .collect();
                ans.sort();
                answers.push(ans);
            }
            let mut counts: BTreeMap<&Vec<String>, usize> = BTreeMap::new();
            for ans in &answers {
                *counts.entry(ans).or_default() += 1;
            }
            let (mode, n) = counts
                .iter()
                .max_by_key(|(_, n)| **n)
                .map(|(m, n)| ((*m).clone(), *n))
                .unwrap_or_default();
            let labels: Vec<_> = mode.iter().filter_map(|s| s.parse().ok()).collect();
            let score = loc::score(&labels, &gt);
            let row = Row {
                fault: subject.name.clone(),
                origin: origin.clone(),
                engine: name,
                gt: gt.iter().map(|l| l.to_string()).collect(),
                answer: mode,
                rc: score.rc,
                pr: score.pr,
                f3: score.f3,
                stability: n as f64 / repeats as f64,
                repeats,
                seconds: seconds / repeats as f64,
            };
            writeln!(out, "{}", serde_json::to_string(&row)?)?;
            out.flush()?;
            rows.push(row);
            pb.inc(1);
        }
    }
    pb.finish_and_clear();
    ev.shutdown().await;
    let names: HashSet<String> = faults
        .iter()
        .filter_map(|(d, _)| Subject::load(d).ok().map(|s| s.name))
        .collect();
    rows.retain(|r| names.contains(&r.fault));
    let summary = summary_rows(&rows, &a.engines);
    let report = Report {
        title: format!("Localisation benchmark: {}", a.benchmark.display()),
        sections: vec![
            Section {
                heading: "Table 5: RC, PR and F3 (β = 3), averaged per fault".into(),
                paragraphs: vec![format!(
                    "Answers are the fault types of the suspects with confidence >= {}, at most 5; types are compared as in the study (ARM/AAL count as ACH, LRM as LAD); engines that train answer with the mode of {} runs (distinct seeds). The engines never read the ground truth.",
                    loc::THRESHOLD,
                    a.repeats
                )],
                tables: vec![Table {
                    caption: String::new(),
                    headers: summary[0].clone(),
                    rows: summary[1..]
                        .iter()
                        .map(|r| r.iter().map(|c| Cell::from(c.clone())).collect())
                        .collect(),
                }],
                ..Section::default()
            },
            Section {
                heading: "Per fault".into(),
                tables: vec![Table {
                    caption: String::new(),
                    headers: [
                        "fault",
                        "engine",
                        "ground truth",
                        "answer",
                        "RC",
                        "PR",
                        "F3",
                        "stability",
                        "s",
                    ]
                    .map(String::from)
                    .to_vec(),
                    rows: rows
                        .iter()
                        .map(|r| {
                            vec![
                                r.fault.clone().into(),
                                r.engine.clone().into(),
                                r.gt.join(" ").into(),
                                r.answer.join(" ").into(),
                                Cell::marked(format!("{:.2}", r.rc), r.rc >= 1.0),
                                format!("{:.2}", r.pr).into(),
                                format!("{:.2}", r.f3).into(),
                                format!("{:.2}", r.stability).into(),
                                format!("{:.2}", r.seconds).into(),
                            ]
                        })
                        .collect(),
                }],
                ..Section::default()
            },
        ],
    };
    let html = report.write(&a.out)?;
    if g.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({"rows": rows, "report": html}))?
        );
    } else {
        print!("{}", crate::table::render(&summary));
        println!("\nreport: {}", html.display());
    }
    Ok(ExitCode::SUCCESS)
}

fn summary_rows(rows: &[Row], engines: &[LocalizeEngine]) -> Vec<Vec<String>> {
    let mut out = vec![
        [
            "engine",
            "faults",
            "RC artificial",
            "F3 artificial",
            "RC real",
            "F3 real",
            "RC all",
            "PR all",
            "F3 all",
            "stability",
            "s per fault",
        ]
        .map(String::from)
        .to_vec(),
    ];
    let avg = |v: Vec<f64>| {
        if v.is_empty() {
            "-".to_string()
        } else {
            format!("{:.2}", v.iter().sum::<f64>() / v.len() as f64)
        }
    };
    for e in engines {
        let name = serde_name(*e);
        let rs: Vec<&Row> = rows.iter().filter(|r| r.engine == name).collect();
        let of = |origin: Option<&str>, f: fn(&Row) -> f64| {
            avg(rs
                .iter()
                .filter(|r| origin.is_none_or(|o| r.origin == o))
                .map(|r| f(r))
                .collect())
        };
        out.push(vec![
            name.clone(),
            rs.len().to_string(),
            of(Some("mutation"), |r| r.rc),
            of(Some("mutation"), |r| r.f3),
            of(Some("real"), |r| r.rc),
            of(Some("real"), |r| r.f3),
            of(None, |r| r.rc),
            of(None, |r| r.pr),
            of(None, |r| r.f3),
            of(None, |r| r.stability),
            of(None, |r| r.seconds),
        ]);
    }
    out
}
