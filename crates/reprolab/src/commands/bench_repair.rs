//! `reprolab bench repair`: engines × budgets × repeats over a fault benchmark, one result line
//! per cell appended to `results.jsonl` the moment it is known (a killed bench resumes from it,
//! and every training is in the evaluation cache), then the study's Table 9 and Figure 3. When
//! faults have alternative ground truths (`alternatives.json`), AJ is also given against the
//! best-matching variant ("AJ after").

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::io::Write as _;
use std::process::ExitCode;

use anyhow::{Context, Result, anyhow, bail};
use reprolab_core::FaultType;
use reprolab_core::manifest::{Goal, Subject};
use reprolab_neutrality::{Alternatives, best_aj};
use reprolab_repair::{gt_types, patch_diff};
use reprolab_report::{Cell, Figure, Report, Section, Table, svg};
use reprolab_search::Budget;
use serde::{Deserialize, Serialize};

use super::repair::{RepairSpec, repair_once};
use super::{read_jsonl, serde_name};
use crate::cli::{BenchRepairArgs, Global};
use crate::context;
use crate::progress;
use crate::trainer::EvalTrainer;

/// One (fault, engine, budget, repeat) cell.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Row {
    pub fault: String,
    pub engine: String,
    pub budget: String,
    pub repeat: usize,
    pub goal: Goal,
    pub faulty_mean: f64,
    /// Holdout mean of the patched config (the faulty mean when no patch was found).
    pub patched_mean: f64,
    pub patched_std: f64,
    pub gt_mean: Option<f64>,
    pub significant: bool,
    pub ir: Option<f64>,
    pub complexity: f64,
    pub changed: usize,
    pub gt_changed: usize,
    pub aj: Option<f64>,
    pub trials: usize,
    pub spent_s: f64,
    /// After `--minimize` (significant patches only).
    pub min_changed: Option<usize>,
    pub min_ir: Option<f64>,
    pub min_significant: Option<bool>,
    /// The (normalised) fault types the patch changes (empty without a patch); `None` in rows
    /// written before this field existed.
    #[serde(default)]
    pub patch_types: Option<Vec<FaultType>>,
    /// AJ against the best ground-truth variant (the known fix or an alternative); recomputed
    /// whenever the report is written. Equal to `aj` for a fault without alternatives.
    #[serde(default)]
    pub aj_after: Option<f64>,
}

impl Row {
    fn key(&self) -> String {
        format!(
            "{}|{}|{}|{}",
            self.fault, self.engine, self.budget, self.repeat
        )
    }
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    v.retain(|x| x.is_finite());
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(svg::quantile(&v, 0.5))
}

fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

pub async fn run(g: &Global, a: &BenchRepairArgs) -> Result<ExitCode> {
    if a.repeats == 0 || a.runs < 2 {
        bail!("--repeats must be at least 1 and --runs at least 2");
    }
    let budgets: Vec<(String, Budget)> = a
        .budgets
        .iter()
        .map(|b| {
            b.parse::<Budget>()
                .map(|p| (b.clone(), p))
                .map_err(|e| anyhow!("--budgets {b:?}: {e}"))
        })
        .collect::<Result<_>>()?;
    let faults: Vec<_> = reprolab_faults::read_benchmark(&a.benchmark)?
        .into_iter()
        .filter(|(dir, _)| {
            a.only.is_empty()
                || a.only
                    .iter()
                    .any(|o| dir.to_string_lossy().contains(o.as_str()))
        })
        .collect();
    if faults.is_empty() {
        bail!(
            "{}: no faulty subjects (directories whose reprolab.toml has a [fix] table) match",
            a.benchmark.display()
        );
    }
    std::fs::create_dir_all(&a.out).with_context(|| format!("creating {}", a.out.display()))?;
    let results_path = a.out.join("results.jsonl");
    let mut rows: Vec<Row> = read_jsonl(&results_path);
    let done: HashSet<String> = rows.iter().map(Row::key).collect();
    let total = faults.len() * budgets.len() * a.engines.len() * a.repeats;
    let llm = if a.engines.iter().any(|e| e.needs_llm()) {
        Some(crate::llm::open(g, &a.llm, crate::llm::local_factory(g), None)?.model)
    } else {
        None
    };
    // Ground-truth variants for AJ after; the repair engines never see them.
    let variants = read_variants(&faults)?;
    let ev = context::evaluator(g).await?;
    let pb = progress::bar(total as u64, "bench repair", g.json);
    pb.inc(done.len().min(total) as u64);
    let mut results = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&results_path)
        .with_context(|| format!("opening {}", results_path.display()))?;
    for (dir, _) in &faults {
        let subject = Subject::load(dir)?;
        let gt_changed = subject
            .fix
            .as_ref()
            .map_or(0, |f| patch_diff(&subject.config, &f.config).len());
        for (budget_name, budget) in &budgets {
            for &engine in &a.engines {
                for repeat in 0..a.repeats {
                    let key = format!(
                        "{}|{}|{}|{}",
                        subject.name,
                        serde_name(engine),
                        budget_name,
                        repeat
                    );
                    if done.contains(&key) {
                        continue;
                    }
                    pb.set_message(key.clone());
                    let trainer = EvalTrainer::new(&ev, &subject, progress::bar(0, "", true));
                    let spec = RepairSpec {
                        engine,
                        budget: *budget,
                        seed: repeat as u64,
                        runs: a.runs,
                        minimize: a.minimize,
                        stop_at: None,
                        parallel: ev.workers(),
                        llm: llm.clone(),
                        llm_options: a.llm_repair.options(),
                    };
                    let run = repair_once(&trainer, &subject, &spec)
                        .await
                        .with_context(|| format!("repairing {key}"))?;
                    let v = run.validation.as_ref();
                    let faulty_mean = match v {
                        Some(v) => v.faulty.mean,
                        None => {
                            // No patch: the faulty config stands; its mean comes from the cache.
                            let seeds: Vec<u64> = (0..a.runs as u64).collect();
                            let m = reprolab_search::Objective::evaluate(
                                &trainer,
                                &subject.config,
                                &seeds,
                                reprolab_core::Split::Holdout,
                                None,
                            )
                            .await
                            .map_err(|e| anyhow!(e))?;
                            let vals: Vec<f64> = m.iter().filter_map(|(x, _)| *x).collect();
                            mean(&vals).unwrap_or(f64::NAN)
                        }
                    };
                    let mut row = Row {
                        fault: subject.name.clone(),
                        engine: serde_name(engine),
                        budget: budget_name.clone(),
                        repeat,
                        goal: subject.metric.goal,
                        faulty_mean,
                        patched_mean: v.map_or(faulty_mean, |v| v.patch.mean),
                        patched_std: v.map_or(0.0, |v| v.patch.std),
                        gt_mean: v.and_then(|v| v.gt.as_ref().map(|g| g.mean)),
                        significant: v.is_some_and(|v| v.significant),
                        ir: match v {
                            Some(v) => v.ir,
                            None if subject.fix.is_some() => Some(0.0),
                            None => None,
                        },
                        complexity: v.map_or(0.0, |v| v.complexity),
                        changed: v.map_or(0, |v| v.changed.len()),
                        gt_changed,
                        aj: v.and_then(|v| v.aj).or(subject
                            .fix
                            .as_ref()
                            .map(|_| 0.0)
                            .filter(|_| v.is_none())),
                        trials: run.search.trials.len(),
                        spent_s: run.search.spent_s,
                        min_changed: run.minimized.as_ref().map(|m| m.result.changed.len()),
                        min_ir: run.minimized.as_ref().and_then(|m| m.validation.ir),
                        min_significant: run.minimized.as_ref().map(|m| m.validation.significant),
                        patch_types: Some(v.map_or(Vec::new(), |v| v.patch_types.clone())),
                        aj_after: None,
                    };
                    row.aj_after = aj_after(&row, &variants);
                    writeln!(results, "{}", serde_json::to_string(&row)?)?;
                    results.flush()?;
                    progress::line(
                        &pb,
                        &format!(
                            "{key}: {} -> {} {}IR {} changed {}",
                            crate::table::num(Some(row.faulty_mean)),
                            crate::table::num(Some(row.patched_mean)),
                            if row.significant {
                                "(significant) "
                            } else {
                                ""
                            },
                            row.ir.map_or("-".into(), |x| format!("{x:.2}")),
                            row.changed
                        ),
                    );
                    rows.push(row);
                    pb.inc(1);
                }
            }
        }
    }
    pb.finish_and_clear();
    ev.shutdown().await;
    // The report covers the faults asked for this time, whatever else results.jsonl holds.
    let names: HashSet<String> = faults
        .iter()
        .filter_map(|(d, _)| Subject::load(d).ok().map(|s| s.name))
        .collect();
    rows.retain(|r| names.contains(&r.fault));
    // Read again: an analysis may have run since an earlier (resumed) row was written.
    let variants = read_variants(&faults)?;
    for r in rows.iter_mut() {
        r.aj_after = aj_after(r, &variants);
    }
    let with_alternatives = variants.values().filter(|(_, a)| !a.is_empty()).count();
    // Tables follow the order of --engines and --budgets, whatever order the cells ran in.
    let engine_pos = |e: &str| {
        a.engines
            .iter()
            .position(|x| serde_name(*x) == e)
            .unwrap_or(usize::MAX)
    };
    let budget_pos = |b: &str| a.budgets.iter().position(|x| x == b).unwrap_or(usize::MAX);
    rows.sort_by_key(|r| {
        (
            budget_pos(&r.budget),
            engine_pos(&r.engine),
            r.fault.clone(),
            r.repeat,
        )
    });
    let report = build_report(&rows, a, with_alternatives);
    let html = report.write(&a.out)?;
    if g.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({"rows": rows, "report": html}))?
        );
    } else {
        print!("{}", summary_text(&rows, with_alternatives > 0));
        println!("\nreport: {} (and report.md)", html.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// Median IR per (engine, budget), in the order engines and budgets appear.
fn groups(rows: &[Row]) -> Vec<((String, String), Vec<&Row>)> {
    let mut order: Vec<(String, String)> = Vec::new();
    let mut map: BTreeMap<(String, String), Vec<&Row>> = BTreeMap::new();
    for r in rows {
        let k = (r.engine.clone(), r.budget.clone());
        if !map.contains_key(&k) {
            order.push(k.clone());
        }
        map.entry(k).or_default().push(r);
    }
    order
        .into_iter()
        .map(|k| {
            let v = map.remove(&k).unwrap_or_default();
            (k, v)
        })
        .collect()
}

fn fmt(x: Option<f64>) -> String {
    x.map_or("-".into(), |v| format!("{v:.2}"))
}

/// Per fault name: its ground-truth types and the label sets of its alternative ground truths
/// (empty without `alternatives.json`).
type Variants = BTreeMap<String, (BTreeSet<FaultType>, Vec<Vec<reprolab_core::FaultLabel>>)>;

fn read_variants(
    faults: &[(std::path::PathBuf, Option<reprolab_faults::FaultRecord>)],
) -> Result<Variants> {
    let mut variants = BTreeMap::new();
    for (dir, _) in faults {
        let subject = Subject::load(dir)?;
        let alts = Alternatives::read(dir)?
            .map(|a| a.variants())
            .unwrap_or_default();
        variants.insert(subject.name.clone(), (gt_types(&subject), alts));
    }
    Ok(variants)
}

/// AJ against the best ground-truth variant (the row's own AJ when the fault has none).
fn aj_after(row: &Row, variants: &Variants) -> Option<f64> {
    match (variants.get(&row.fault), &row.patch_types) {
        (Some((_, alts)), _) if alts.is_empty() => row.aj,
        (Some((gt, alts)), Some(types)) => best_aj(&types.iter().copied().collect(), gt, alts),
        _ => None,
    }
}

fn summary_rows(rows: &[Row], after: bool) -> Vec<Vec<String>> {
    let mut headers = vec![
        "engine",
        "budget",
        "cells",
        "significant",
        "median IR",
        "mean changed",
        "mean GT changed",
        "mean complexity",
        "mean AJ",
    ];
    if after {
        headers.push("mean AJ after");
    }
    headers.push("minimised changed");
    let mut out = vec![headers.into_iter().map(String::from).collect::<Vec<_>>()];
    for ((engine, budget), rs) in groups(rows) {
        let irs: Vec<f64> = rs.iter().filter_map(|r| r.ir).collect();
        let sig = rs.iter().filter(|r| r.significant).count();
        let changed: Vec<f64> = rs
            .iter()
            .filter(|r| r.significant)
            .map(|r| r.changed as f64)
            .collect();
        let gt: Vec<f64> = rs
            .iter()
            .filter(|r| r.significant)
            .map(|r| r.gt_changed as f64)
            .collect();
        let cx: Vec<f64> = rs
            .iter()
            .filter(|r| r.significant)
            .map(|r| r.complexity)
            .collect();
        let aj: Vec<f64> = rs.iter().filter_map(|r| r.aj).collect();
        let minc: Vec<f64> = rs
            .iter()
            .filter_map(|r| r.min_changed.map(|c| c as f64))
            .collect();
        let mut line = vec![
            engine,
            budget,
            rs.len().to_string(),
            format!("{sig}/{}", rs.len()),
            fmt(median(irs)),
            fmt(mean(&changed)),
            fmt(mean(&gt)),
            fmt(mean(&cx)),
            fmt(mean(&aj)),
        ];
        if after {
            let aj_after: Vec<f64> = rs.iter().filter_map(|r| r.aj_after).collect();
            line.push(fmt(mean(&aj_after)));
        }
        line.push(fmt(mean(&minc)));
        out.push(line);
    }
    out
}

fn summary_text(rows: &[Row], after: bool) -> String {
    crate::table::render(&summary_rows(rows, after))
}

fn build_report(rows: &[Row], a: &BenchRepairArgs, with_alternatives: usize) -> Report {
    let gs = groups(rows);
    let cols: Vec<(String, String)> = gs.iter().map(|(k, _)| k.clone()).collect();
    let mut faults: Vec<String> = Vec::new();
    for r in rows {
        if !faults.contains(&r.fault) {
            faults.push(r.fault.clone());
        }
    }
    // Table 9: patched metric mean ± σ over repeats; bold when most repeats are significant.
    let mut headers = vec!["fault".to_string(), "faulty".into(), "ground truth".into()];
    headers.extend(cols.iter().map(|(e, b)| format!("{e} {b}")));
    let mut t9 = Table { caption: "Patched metric on the holdout split: mean ± σ over repeats (bold: significant improvement in most repeats)".into(), headers, rows: Vec::new() };
    for f in &faults {
        let fr: Vec<&Row> = rows.iter().filter(|r| &r.fault == f).collect();
        let mut line: Vec<Cell> = vec![
            f.clone().into(),
            fmt3(mean(&fr.iter().map(|r| r.faulty_mean).collect::<Vec<_>>())).into(),
            fmt3(fr.iter().find_map(|r| r.gt_mean)).into(),
        ];
        for (e, b) in &cols {
            let cell: Vec<&&Row> = fr
                .iter()
                .filter(|r| &r.engine == e && &r.budget == b)
                .collect();
            let vals: Vec<f64> = cell.iter().map(|r| r.patched_mean).collect();
            let sig = cell.iter().filter(|r| r.significant).count();
            let text = match mean(&vals) {
                Some(m) => format!("{m:.3} ± {:.3}", reprolab_stats::summarize(&vals).std),
                None => "-".into(),
            };
            line.push(Cell::marked(text, sig * 2 > cell.len()));
        }
        t9.rows.push(line);
    }
    let summary = summary_rows(rows, with_alternatives > 0);
    let t_summary = Table {
        caption: if with_alternatives > 0 {
            format!(
                "Per engine and budget (changed / complexity over significant patches). AJ after: against the best-matching ground-truth variant; {with_alternatives} faults have alternative ground truths (alternatives.json), the others score the same."
            )
        } else {
            "Per engine and budget (changed / complexity over significant patches)".into()
        },
        headers: summary[0].clone(),
        rows: summary[1..]
            .iter()
            .map(|r| r.iter().map(|c| Cell::from(c.clone())).collect())
            .collect(),
    };
    let ir_groups: Vec<(String, Vec<f64>)> = gs
        .iter()
        .map(|((e, b), rs)| (format!("{e} {b}"), rs.iter().filter_map(|r| r.ir).collect()))
        .collect();
    let fig3 = Figure {
        name: "ir".into(),
        caption: "Figure 3: improvement rate (IR) per engine and budget, over faults and repeats (axis limited to [-1, 1.5]; values beyond are counted as off-scale)"
            .into(),
        svg: svg::boxplot_in("Improvement rate", "IR", &ir_groups, Some((-1.0, 1.5))),
    };
    let median_of = |e: &str, b: &str| {
        gs.iter()
            .find(|((ge, gb), _)| ge == e && gb == b)
            .and_then(|(_, rs)| median(rs.iter().filter_map(|r| r.ir).collect()))
    };
    let mut targets = Vec::new();
    if let (Some(r20), Some(b10)) = (median_of("random", "20x"), median_of("bohb", "10x")) {
        targets.push(format!("Median IR: bohb at 10x = {b10:.2}, random at 20x = {r20:.2} (target: bohb at 10x >= random at 20x: {}).", if b10 >= r20 { "met" } else { "not met" }));
    }
    if let (Some(r20), Some(g10)) = (median_of("random", "20x"), median_of("guided", "10x")) {
        targets.push(format!(
            "Median IR: guided at 10x = {g10:.2}, random at 20x = {r20:.2} (target: guided at 10x >= random at 20x: {}).",
            if g10 >= r20 { "met" } else { "not met" }
        ));
    }
    let minimized: Vec<&Row> = rows.iter().filter(|r| r.min_changed.is_some()).collect();
    if !minimized.is_empty() {
        let mc = mean(
            &minimized
                .iter()
                .map(|r| r.min_changed.unwrap_or(0) as f64)
                .collect::<Vec<_>>(),
        )
        .unwrap_or(0.0);
        let gc = mean(
            &minimized
                .iter()
                .map(|r| r.gt_changed as f64)
                .collect::<Vec<_>>(),
        )
        .unwrap_or(0.0);
        targets.push(format!("Minimised patches change {mc:.2} hyperparameters on average against {gc:.2} in the ground truth ({:.2}x; target <= 2x).", if gc > 0.0 { mc / gc } else { f64::NAN }));
    }
    Report {
        title: format!("Repair benchmark: {}", a.benchmark.display()),
        sections: vec![
            Section {
                heading: "Setup".into(),
                paragraphs: vec![format!(
                    "{} faults, engines {:?}, budgets {:?} (multiples of the faulty program's mean training time, counted as summed training time), {} repeats, {} validation retrainings per config on the holdout split. Significant: Wilcoxon p < 0.05 and |d| >= 0.5, better than the faulty config.",
                    faults.len(),
                    a.engines.iter().map(|e| serde_name(*e)).collect::<Vec<_>>(),
                    a.budgets,
                    a.repeats,
                    a.runs
                )],
                ..Section::default()
            },
            Section {
                heading: "Targets".into(),
                paragraphs: targets,
                ..Section::default()
            },
            Section {
                heading: "Table 9: patched metric per fault".into(),
                tables: vec![t9],
                ..Section::default()
            },
            Section {
                heading: "Figure 3: improvement rate".into(),
                figures: vec![fig3],
                tables: vec![t_summary],
                ..Section::default()
            },
        ],
    }
}

fn fmt3(x: Option<f64>) -> String {
    x.map_or("-".into(), |v| format!("{v:.3}"))
}
