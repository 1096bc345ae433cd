//! `reprolab repair`: search a patch with one engine, validate it on the holdout split, and
//! optionally minimise it (`reprolab_repair::repair`, with the real localisation wired in by
//! `repair_once`, which `bench repair` shares).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, anyhow, bail};
use reprolab_core::manifest::Subject;
use reprolab_repair::{self as repair, Engine, LlmRun, RepairRun, RepairSpec, Validation};
use reprolab_search::{self as search, Budget};
use serde_json::json;

use crate::cli::{EngineArg, Global, RepairArgs};
use crate::context;
use crate::progress;
use crate::table::{num, render};
use crate::trainer::EvalTrainer;

impl From<EngineArg> for Engine {
    fn from(e: EngineArg) -> Engine {
        match e {
            EngineArg::Random => Engine::Random,
            EngineArg::Tpe => Engine::Tpe,
            EngineArg::Bohb => Engine::Bohb,
            EngineArg::Rules => Engine::Rules,
            EngineArg::Guided => Engine::Guided,
            EngineArg::Llm => Engine::Llm,
            EngineArg::LlmRefine => Engine::LlmRefine,
        }
    }
}

/// One repair of `subject` with the real localisation engines (static rules and dynamic
/// monitors over the trace) for the engines that use localisation.
pub async fn repair_once(
    obj: &EvalTrainer<'_>,
    subject: &Subject,
    spec: &RepairSpec,
) -> Result<RepairRun> {
    repair::repair(obj, subject, spec, |s, trace| {
        reprolab_localize::localize(s, &s.config, Some(&trace.epochs))
    })
    .await
    .map_err(anyhow::Error::from)
}

fn patch_path(a: &RepairArgs, subject: &Subject) -> PathBuf {
    a.out.clone().unwrap_or_else(|| {
        let engine = super::serde_name(a.engine);
        PathBuf::from(".reprolab")
            .join("patches")
            .join(format!("{}-{engine}.json", subject.name))
    })
}

fn print_llm(l: &LlmRun, subject: &Subject) {
    for s in &l.suggestions {
        let changes = repair::patch_diff(
            &subject.config,
            &search::apply_patch(&subject.config, &s.patch),
        )
        .iter()
        .map(|(k, from, to)| format!("{k}: {from} -> {to}"))
        .collect::<Vec<_>>()
        .join(", ");
        let what = match (&s.parse_error, s.trial) {
            (Some(e), _) => format!("no JSON read ({e})"),
            (None, Some(t)) => format!("trial {t}: {changes}"),
            (None, None) if s.patch.is_empty() => "no usable change".to_string(),
            (None, None) => format!("not trained (repeat or no budget): {changes}"),
        };
        println!("llm round {} answer {}: {what}", s.round, s.sample + 1);
        for r in &s.rejected {
            println!("    rejected {} = {}: {}", r.key, r.value, r.reason);
        }
    }
    if let Some(e) = &l.error {
        println!("llm stopped: {e}");
    }
}

fn print_validation(title: &str, v: &Validation, subject: &Subject) {
    println!("\n{title} (holdout split, {} retrainings each):", v.runs);
    let mut rows = vec![["", "mean", "std", "n"].map(String::from).to_vec()];
    rows.push(vec![
        "faulty".into(),
        num(Some(v.faulty.mean)),
        num(Some(v.faulty.std)),
        v.faulty.n.to_string(),
    ]);
    rows.push(vec![
        "patch".into(),
        num(Some(v.patch.mean)),
        num(Some(v.patch.std)),
        v.patch.n.to_string(),
    ]);
    if let Some(gt) = &v.gt {
        rows.push(vec![
            "ground truth".into(),
            num(Some(gt.mean)),
            num(Some(gt.std)),
            gt.n.to_string(),
        ]);
    }
    print!("{}", render(&rows));
    println!(
        "Wilcoxon p = {:.4}, Cohen's d = {:.3}: {} ({})",
        v.p_value,
        v.cohens_d,
        if v.significant {
            "significant improvement"
        } else {
            "not a significant improvement"
        },
        subject.metric.name
    );
    println!(
        "IR = {}, complexity = {:.2} ({} of {} hyperparameters), AJ = {}",
        v.ir.map_or("- (no ground truth)".into(), |x| format!("{x:.2}")),
        v.complexity,
        v.changed.len(),
        subject.space.len(),
        v.aj.map_or("-".into(), |x| format!("{x:.2}"))
    );
}

pub async fn run(g: &Global, a: &RepairArgs) -> Result<ExitCode> {
    if a.runs < 2 {
        bail!("--runs must be at least 2");
    }
    let budget = match a.trials {
        Some(n) => Budget::Trials(n),
        None => a
            .budget
            .parse::<Budget>()
            .map_err(|e| anyhow!("--budget {:?}: {e}", a.budget))?,
    };
    let subject = context::load_subject(&a.subject)?;
    let ev = context::evaluator(g).await?;
    let pb = progress::bar(0, "repair", g.json);
    let trainer = EvalTrainer::new(&ev, &subject, pb.clone());
    let spec = RepairSpec {
        engine: a.engine.into(),
        budget,
        seed: a.seed,
        runs: a.runs,
        minimize: a.minimize,
        stop_at: a.stop_at,
        parallel: ev.workers(),
        llm: if Engine::from(a.engine).needs_llm() {
            Some(crate::llm::chat_model(g, &a.llm)?)
        } else {
            None
        },
        llm_options: a.llm_repair.options(),
        prune: a.prune.pruner(),
    };
    let run = repair_once(&trainer, &subject, &spec).await?;
    pb.finish_and_clear();
    let (trained, cached) = (trainer.trained.get(), trainer.cached.get());
    ev.shutdown().await;

    // Only a patch the holdout validation confirmed is written as the repaired config.
    let final_patch = run.final_patch().filter(|_| run.repaired);
    let out = patch_path(a, &subject);
    if let Some(patch) = final_patch {
        if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        std::fs::write(&out, serde_json::to_string_pretty(patch)? + "\n")
            .with_context(|| format!("writing {}", out.display()))?;
    }
    if g.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({
                "subject": subject.name, "repaired": run.repaired, "verdict": run.verdict,
                "run": run, "patch_file": final_patch.map(|_| &out),
                "trained": trained, "cached": cached,
            }))?
        );
    } else {
        let s = &run.search;
        println!("budget: {}", run.budget.describe());
        let pruned = s.trials.iter().filter(|t| t.pruned.is_some()).count();
        println!(
            "{} with {}: {} trials{}, {:.1} s of training spent{}, stopped: {}",
            subject.name,
            s.engine,
            s.trials.len(),
            if pruned > 0 {
                format!(" ({pruned} pruned early)")
            } else {
                String::new()
            },
            s.spent_s,
            s.budget_s
                .map_or(String::new(), |b| format!(" of {b:.1} s")),
            s.stop
        );
        if let Some(r) = &run.rules {
            if r.no_symptom {
                println!("rules: no symptom in the faulty training; nothing to try");
            }
            for sym in &r.symptoms {
                println!("symptom {}: {}", sym.name, sym.evidence);
            }
            if let Some(c) = &r.confirmation {
                println!(
                    "rules: confirmation on the search split, {} trainings each: {} -> {} (p = {:.3}, d = {:.2}){}",
                    c.runs,
                    num(Some(c.faulty_mean)),
                    num(Some(c.best_mean)),
                    c.p_value,
                    c.cohens_d,
                    if c.significant {
                        ""
                    } else {
                        ": not significant"
                    }
                );
            }
            for at in &r.attempts {
                println!(
                    "  tried {} for {}: {} {}",
                    at.fix,
                    at.symptom,
                    num(at.trial.value),
                    if at.accepted { "(kept)" } else { "" }
                );
            }
        }
        if let Some(l) = &run.llm {
            print_llm(l, &subject);
        }
        match (&run.validation, s.patch()) {
            (Some(v), Some(patch)) => {
                // A confirmed best's value is the mean of its runs (reprolab_search::confirm).
                let runs = s.best.as_ref().map_or(0, |b| {
                    s.trials.iter().filter(|t| t.config == b.config).count()
                });
                let confirmed = s.trials.iter().filter(|t| t.confirms.is_some()).count();
                println!(
                    "\nbest patch found (search split {} -> {}{}):",
                    num(s.trials[0].value),
                    num(s.best.as_ref().and_then(|b| b.value)),
                    if confirmed > 0 {
                        format!(
                            ", the mean of its {runs} runs; {confirmed} retrainings confirmed the finalists"
                        )
                    } else {
                        String::new()
                    }
                );
                for (k, from, to) in repair::patch_diff(&subject.config, patch) {
                    println!("  {k}: {from} -> {to}");
                }
                print_validation("validation", v, &subject);
            }
            _ => println!("\nno patch: no trial beat the faulty config on the search split"),
        }
        if let Some(m) = &run.minimized {
            println!(
                "\nminimised to {} of {} changes ({} subsets tested, {} trainings): {}",
                m.result.changed.len(),
                m.result.original.len(),
                m.result.tests.len(),
                m.result.trainings,
                m.result.changed.join(", ")
            );
            print_validation("validation of the minimised patch", &m.validation, &subject);
        }
        println!("\n{}", run.verdict);
        if final_patch.is_some() {
            println!("patched config written to {}", out.display());
        } else if run.search.patch().is_some() {
            println!("no patched config written: the holdout did not confirm the patch");
        }
        println!("trainings: {trained} run, {cached} from the cache");
    }
    Ok(if run.repaired {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
