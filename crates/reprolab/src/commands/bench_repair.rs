//! `reprolab bench repair`: engines × budgets × repeats over a fault benchmark, one result line
//! per cell appended to `results.jsonl` the moment it is known (a killed bench resumes from it,
//! and every training is in the evaluation cache), then the study's Table 9 and Figure 3
//! (reprolab-bench builds the rows and the report).

use std::process::ExitCode;

use anyhow::{Context, Result, anyhow, bail};
use reprolab_bench::ResultsFile;
use reprolab_bench::repair::grid::{self, Grid};
use reprolab_bench::repair::{self as bench, CellId, RepairOutcome, Row};
use reprolab_core::manifest::Subject;
use reprolab_search::Budget;
use reprolab_search::join::join_bounded;

use super::repair::repair_once;
use crate::cli::{BenchRepairArgs, Global, PruneArg};
use crate::context;
use crate::progress;
use crate::trainer::EvalTrainer;
use reprolab_repair::{Engine, RepairSpec};

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
    let faults = reprolab_bench::faults::read_selected(&a.benchmark, &a.only)?;
    if faults.is_empty() {
        bail!(
            "{}: no faulty subjects (directories whose reprolab.toml has a [fix] table) match",
            a.benchmark.display()
        );
    }
    let dirs = reprolab_bench::faults::dirs(&faults);
    // Each prunable engine once per --prune value (`bohb+median`), the others once, unpruned.
    let engines: Vec<Engine> = a.engines.iter().map(|&e| e.into()).collect();
    let prunes: Vec<Option<(PruneArg, &str)>> = a
        .prune
        .iter()
        .map(|&p| (p != PruneArg::None).then(|| (p, p.name())))
        .collect();
    // `--arms`: the (engine, budget) pairs to run; every one of the grid without it.
    let grid = Grid::new(
        grid::variants(&engines, &prunes),
        budgets.iter().map(|(b, _)| b.clone()).collect(),
        a.arms.clone(),
    )
    .map_err(|e| anyhow!(e))?;
    // The report names only the engines and budgets of arms that run.
    let setup = grid.setup(a.benchmark.clone(), a.repeats, a.runs);
    let (mut results, mut rows) = ResultsFile::open::<Row>(&a.out)?;
    let done = bench::done(&rows);
    let total = faults.len() * grid.arm_count() * a.repeats;
    let llm = if a.engines.iter().any(|&e| Engine::from(e).needs_llm()) {
        Some(crate::llm::chat_model(g, &a.llm)?)
    } else {
        None
    };
    // Ground-truth variants for AJ after; the repair engines never see them.
    let variants = bench::read_variants(&dirs)?;
    let subjects: Vec<Subject> = dirs
        .iter()
        .map(|d| Subject::load(d))
        .collect::<Result<_, _>>()?;
    let names: Vec<String> = subjects.iter().map(|s| s.name.clone()).collect();
    let cells: Vec<(&Subject, CellId, Budget, Engine, PruneArg)> = grid
        .pending(&names, a.repeats, &done)
        .into_iter()
        .map(|(at, cell)| {
            let v = &grid.variants[at.variant];
            let prune = v.prune.unwrap_or(PruneArg::None);
            let budget = budgets[at.budget].1;
            (&subjects[at.fault], cell, budget, v.engine, prune)
        })
        .collect();
    let ev = context::evaluator(g).await?;
    let already = total - cells.len();
    if already > 0 {
        // Said once, so that a reused --out is never mistaken for a fresh run.
        eprintln!(
            "resuming: {already} of {total} cells are already in {}",
            a.out.join("results.jsonl").display()
        );
    }
    let pb = progress::bar(total as u64, "bench repair", g.json);
    pb.inc(already as u64);
    // Cells run `--cells` at a time; each appends its row the moment it is known.
    let finished = std::sync::Mutex::new((&mut results, &mut rows));
    let record = |row: Row| -> Result<()> {
        let mut guard = finished.lock().unwrap();
        guard.0.append(&row)?;
        progress::line(
            &pb,
            &format!(
                "{}: {} -> {} {}IR {} changed {}",
                row.cell().key(),
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
        guard.1.push(row);
        pb.inc(1);
        Ok(())
    };
    let ev_ref = &ev;
    let llm_ref = &llm;
    let variants_ref = &variants;
    let tasks: Vec<_> = cells
        .into_iter()
        .map(|(subject, cell, budget, engine, prune)| {
            let record = &record;
            async move {
                let key = cell.key();
                let mut row =
                    repair_cell(ev_ref, subject, &cell, budget, (engine, prune), a, llm_ref)
                        .await
                        .with_context(|| format!("repairing {key}"))?;
                row.aj_after = bench::aj_after(&row, variants_ref);
                record(row)
            }
        })
        .collect();
    let outcomes = join_bounded(tasks, a.cells.max(1)).await;
    pb.finish_and_clear();
    ev.shutdown().await;
    outcomes.into_iter().collect::<Result<Vec<()>>>()?;
    // The report covers the faults asked for this time, whatever else results.jsonl holds;
    // variants are read again: an analysis may have run since an earlier row was written.
    let finished = bench::finish(rows, &bench::read_variants(&dirs)?, &setup);
    let html = bench::build_report(&finished, &setup).write(&a.out)?;
    if g.json {
        super::print_rows_and_report(&finished.rows, &html)?;
    } else {
        print!(
            "{}",
            crate::table::render(&bench::summary_rows(
                &finished.rows,
                finished.with_alternatives > 0
            ))
        );
        println!("\nreport: {} (and report.md)", html.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// One cell: a repair of `subject` by `engine` within `budget`, as a result row.
async fn repair_cell(
    ev: &reprolab_exec::Evaluator,
    subject: &Subject,
    cell: &CellId,
    budget: Budget,
    (engine, prune): (Engine, PruneArg),
    a: &BenchRepairArgs,
    llm: &Option<std::sync::Arc<dyn reprolab_llm::ChatModel>>,
) -> Result<Row> {
    let trainer = EvalTrainer::new(ev, subject, progress::bar(0, "", true));
    let spec = RepairSpec {
        engine,
        budget,
        seed: cell.repeat as u64,
        runs: a.runs,
        minimize: a.minimize,
        stop_at: None,
        parallel: ev.workers(),
        llm: llm.clone(),
        llm_options: a.llm_repair.options(),
        prune: prune.pruner(),
    };
    let run = repair_once(&trainer, subject, &spec).await?;
    let history = bench::anytime::history(
        run.search.trials.iter().map(|t| (t.value, t.duration_s)),
        subject.metric.goal,
    );
    let faulty_mean = match &run.validation {
        Some(v) => v.faulty.mean,
        // No patch: the faulty config stands; its mean comes from the cache.
        None => faulty_mean(&trainer, subject, a.runs).await?,
    };
    Ok(Row::new(
        cell,
        subject,
        &RepairOutcome {
            validation: run.validation.as_ref(),
            faulty_mean,
            trials: run.search.trials.len(),
            pruned: run
                .search
                .trials
                .iter()
                .filter(|t| t.pruned.is_some())
                .count(),
            spent_s: run.search.spent_s,
            budget_s: run.budget.seconds,
            minimized: run
                .minimized
                .as_ref()
                .map(|m| (m.result.changed.len(), &m.validation)),
            history: &history,
        },
    ))
}

/// The holdout mean of the faulty config over seeds `0..runs` (from the cache: the repair's
/// validation trained them).
async fn faulty_mean(trainer: &EvalTrainer<'_>, subject: &Subject, runs: usize) -> Result<f64> {
    let seeds: Vec<u64> = (0..runs as u64).collect();
    let m = reprolab_search::Objective::evaluate(
        trainer,
        &subject.config,
        &seeds,
        reprolab_core::Split::Holdout,
        None,
    )
    .await
    .map_err(|e| anyhow!(e))?;
    let vals: Vec<f64> = m.iter().filter_map(|(x, _)| *x).collect();
    Ok(reprolab_bench::agg::mean(&vals).unwrap_or(f64::NAN))
}
