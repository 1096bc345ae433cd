//! `reprolab bench localize`: RC, PR and F3 of the localisation engines against a fault
//! benchmark's ground truth, per fault and averaged over artificial and real faults (the study's
//! Table 5 layout), with time per fault and stability over repeated runs. Faults with
//! alternative ground truths (`alternatives.json`, from `reprolab neutrality`) are also scored
//! against the variant with the highest RC (the study's Tables 6 and 7: before / after).

use std::collections::{BTreeMap, HashSet};
use std::io::Write as _;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use reprolab_core::FaultLabel;
use reprolab_core::manifest::Subject;
use reprolab_localize as loc;
use reprolab_neutrality::Alternatives;
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
    /// After counting alternative ground truths: the variant scored against (the known fix's
    /// labels when it scores best or when the fault has no alternatives) and its RC, PR, F3.
    /// Recomputed from `answer` every time the report is written.
    #[serde(default)]
    pub gt_after: Vec<String>,
    #[serde(default)]
    pub rc_after: f64,
    #[serde(default)]
    pub pr_after: f64,
    #[serde(default)]
    pub f3_after: f64,
    /// Alternative ground-truth label sets of the fault (0: none known).
    #[serde(default)]
    pub variants: usize,
    /// LLM engine: share of the model's reasons mapped to a fault type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mapped: Option<f64>,
}

/// The ground-truth variants of a fault: its `[fix]` labels first, then the distinct label sets
/// of its alternatives (none when it has no `alternatives.json`).
pub fn gt_variants(dir: &std::path::Path, subject: &Subject) -> Result<Vec<Vec<FaultLabel>>> {
    let gt = subject
        .fix
        .as_ref()
        .map(|f| f.faults.clone())
        .unwrap_or_default();
    let mut out = vec![gt];
    if let Some(alts) = Alternatives::read(dir)? {
        for v in alts.variants() {
            if !out.contains(&v) {
                out.push(v);
            }
        }
    }
    Ok(out)
}

/// Fills the row's "after" scores from its answer and the fault's variants.
fn score_after(row: &mut Row, variants: &[Vec<FaultLabel>]) {
    let answer: Vec<FaultLabel> = row.answer.iter().filter_map(|s| s.parse().ok()).collect();
    let (i, s) = loc::score_best(&answer, variants);
    row.gt_after = variants
        .get(i)
        .map(|v| v.iter().map(|l| l.to_string()).collect())
        .unwrap_or_default();
    (row.rc_after, row.pr_after, row.f3_after) = (s.rc, s.pr, s.f3);
    row.variants = variants.len().saturating_sub(1);
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
    let model = if a.engines.contains(&LocalizeEngine::Llm) {
        Some(crate::llm::open(g, &a.llm, crate::llm::local_factory(g), None)?.model)
    } else {
        None
    };
    let llm_opts = a.llm_localize.options();
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
            // The LLM engine votes over its own --llm-repeats answers in one run; its stability
            // is that vote's.
            let repeats = match engine {
                LocalizeEngine::Static | LocalizeEngine::Llm => 1,
                _ => a.repeats,
            };
            let mut answers: Vec<Vec<String>> = Vec::new();
            let mut seconds = 0.0;
            let mut llm_stats = None;
            for seed in 0..repeats as u64 {
                let t0 = Instant::now();
                let llm = model.as_deref().map(|m| (m, &llm_opts));
                let found =
                    suspects(Some(&ev), llm, &subject, &subject.config, engine, seed).await?;
                llm_stats = found.llm.as_ref().map(|l| (l.mapped_fraction, l.stability));
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
            let mut row = Row {
                fault: subject.name.clone(),
                origin: origin.clone(),
                engine: name,
                gt: gt.iter().map(|l| l.to_string()).collect(),
                answer: mode,
                rc: score.rc,
                pr: score.pr,
                f3: score.f3,
                stability: llm_stats.map_or(n as f64 / repeats as f64, |l| l.1),
                repeats,
                seconds: seconds / repeats as f64,
                gt_after: Vec::new(),
                rc_after: score.rc,
                pr_after: score.pr,
                f3_after: score.f3,
                variants: 0,
                mapped: llm_stats.map(|l| l.0),
            };
            // Scored after the engine answered: the ground truth never reaches the engines.
            score_after(&mut row, &gt_variants(dir, &subject)?);
            writeln!(out, "{}", serde_json::to_string(&row)?)?;
            out.flush()?;
            rows.push(row);
            pb.inc(1);
        }
    }
    pb.finish_and_clear();
    ev.shutdown().await;
    // Ground-truth variants per fault, read again now: an analysis may have run since an
    // earlier (resumed) row was written.
    let mut variants: BTreeMap<String, Vec<Vec<FaultLabel>>> = BTreeMap::new();
    for (dir, _) in &faults {
        if let Ok(s) = Subject::load(dir) {
            let v = gt_variants(dir, &s)?;
            variants.insert(s.name, v);
        }
    }
    rows.retain(|r| variants.contains_key(&r.fault));
    for r in &mut rows {
        score_after(r, &variants[&r.fault]);
    }
    let with_alternatives = variants.values().filter(|v| v.len() > 1).count();
    let summary = summary_rows(&rows, &a.engines);
    let before_after = before_after_rows(&rows, &a.engines);
    let report = build_report(
        a,
        &rows,
        &summary,
        &before_after,
        with_alternatives,
        variants.len(),
    );
    let html = report.write(&a.out)?;
    if g.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({"rows": rows, "report": html}))?
        );
    } else {
        print!("{}", crate::table::render(&summary));
        if with_alternatives > 0 {
            println!(
                "\nbefore / after alternative ground truths ({with_alternatives} faults have them):"
            );
            print!("{}", crate::table::render(&before_after));
        }
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
            "mapped",
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
            avg(rs.iter().filter_map(|r| r.mapped).collect()),
        ]);
    }
    out
}

/// The study's Table 7: RC, PR and F3 before and after alternative ground truths, per engine
/// and fault set.
fn before_after_rows(rows: &[Row], engines: &[LocalizeEngine]) -> Vec<Vec<String>> {
    let mut out = vec![
        [
            "engine",
            "faults",
            "RC before",
            "RC after",
            "PR before",
            "PR after",
            "F3 before",
            "F3 after",
        ]
        .map(String::from)
        .to_vec(),
    ];
    let avg = |v: &[f64]| {
        if v.is_empty() {
            "-".to_string()
        } else {
            format!("{:.2}", v.iter().sum::<f64>() / v.len() as f64)
        }
    };
    for e in engines {
        let name = serde_name(*e);
        for (set, origin) in [
            ("artificial", Some("mutation")),
            ("real", Some("real")),
            ("all", None),
        ] {
            let rs: Vec<&Row> = rows
                .iter()
                .filter(|r| r.engine == name && origin.is_none_or(|o| r.origin == o))
                .collect();
            if rs.is_empty() {
                continue;
            }
            let col = |f: fn(&Row) -> f64| avg(&rs.iter().map(|r| f(r)).collect::<Vec<_>>());
            out.push(vec![
                name.clone(),
                format!("{set} ({})", rs.len()),
                col(|r| r.rc),
                col(|r| r.rc_after),
                col(|r| r.pr),
                col(|r| r.pr_after),
                col(|r| r.f3),
                col(|r| r.f3_after),
            ]);
        }
    }
    out
}

fn string_table(rows: &[Vec<String>]) -> Table {
    Table {
        caption: String::new(),
        headers: rows[0].clone(),
        rows: rows[1..]
            .iter()
            .map(|r| r.iter().map(|c| Cell::from(c.clone())).collect())
            .collect(),
    }
}

/// Table 5, Table 7 (only when some fault has alternative ground truths) and the per-fault
/// table (with the "after" columns only then).
fn build_report(
    a: &BenchLocalizeArgs,
    rows: &[Row],
    summary: &[Vec<String>],
    before_after: &[Vec<String>],
    with_alternatives: usize,
    faults: usize,
) -> Report {
    let after = with_alternatives > 0;
    let mut sections = vec![Section {
        heading: "Table 5: RC, PR and F3 (β = 3), averaged per fault".into(),
        paragraphs: vec![format!(
            "Answers are the fault types of the suspects with confidence >= {}, at most 5; types are compared as in the study (ARM/AAL count as ACH, LRM as LAD); engines that train answer with the mode of {} runs (distinct seeds). The engines never read the ground truth.",
            loc::THRESHOLD,
            a.repeats
        )],
        tables: vec![string_table(summary)],
        ..Section::default()
    }];
    if after {
        sections.push(Section {
            heading: "Table 7: before / after neutrality analysis".into(),
            paragraphs: vec![format!(
                "{with_alternatives} of {faults} faults have alternative ground truths (alternatives.json from `reprolab neutrality`). After: each answer is scored against the ground-truth variant with the highest RC (then F3, then PR), the known fix included, as in the study's Tables 6 and 7; faults without alternatives score the same before and after."
            )],
            tables: vec![string_table(before_after)],
            ..Section::default()
        });
    }
    let mut headers: Vec<String> = [
        "fault",
        "engine",
        "ground truth",
        "answer",
        "RC",
        "PR",
        "F3",
    ]
    .map(String::from)
    .to_vec();
    if after {
        headers
            .extend(["GT variant (after)", "RC after", "PR after", "F3 after"].map(String::from));
    }
    headers.extend(["stability", "s"].map(String::from));
    let table_rows = rows
        .iter()
        .map(|r| {
            let mut line: Vec<Cell> = vec![
                r.fault.clone().into(),
                r.engine.clone().into(),
                r.gt.join(" ").into(),
                r.answer.join(" ").into(),
                Cell::marked(format!("{:.2}", r.rc), r.rc >= 1.0),
                format!("{:.2}", r.pr).into(),
                format!("{:.2}", r.f3).into(),
            ];
            if after {
                line.push(
                    if r.variants == 0 {
                        "-".to_string()
                    } else {
                        format!("{} (of {})", r.gt_after.join(" "), r.variants + 1)
                    }
                    .into(),
                );
                line.push(Cell::marked(
                    format!("{:.2}", r.rc_after),
                    r.rc_after > r.rc,
                ));
                line.push(format!("{:.2}", r.pr_after).into());
                line.push(format!("{:.2}", r.f3_after).into());
            }
            line.push(format!("{:.2}", r.stability).into());
            line.push(format!("{:.2}", r.seconds).into());
            line
        })
        .collect();
    sections.push(Section {
        heading: "Per fault".into(),
        tables: vec![Table {
            caption: if after {
                "Bold RC after: higher than before.".into()
            } else {
                String::new()
            },
            headers,
            rows: table_rows,
        }],
        ..Section::default()
    });
    Report {
        title: format!("Localisation benchmark: {}", a.benchmark.display()),
        sections,
    }
}
