//! `reprolab repair`: search a patch with one engine, validate it on the holdout split, and
//! optionally minimise it. `repair_once` is shared with `bench repair`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, anyhow, bail};
use reprolab_core::Split;
use reprolab_core::manifest::Subject;
use reprolab_repair::{self as repair, Minimized, RulesResult, Validation};
use reprolab_search::{self as search, Budget, Objective, SearchResult, SearchSettings};
use serde::Serialize;
use serde_json::json;

use crate::cli::{EngineArg, Global, RepairArgs};
use crate::context;
use crate::progress;
use crate::table::{num, render};
use crate::trainer::EvalTrainer;

/// Everything one repair produced.
#[derive(Debug, Serialize)]
pub struct RepairRun {
    pub engine: EngineArg,
    /// The faulty config's mean training time that the budget multiplies.
    pub time_ref_s: f64,
    pub search: SearchResult,
    /// What the rules engine saw and tried.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rules: Option<RulesResult>,
    /// The validation of the best patch; `None` when the search found nothing better than the
    /// faulty config.
    pub validation: Option<Validation>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub minimized: Option<MinimizedRun>,
    /// The LLM engines' answers and what became of each.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub llm: Option<LlmRun>,
}

#[derive(Debug, Serialize)]
pub struct LlmRun {
    pub suggestions: Vec<repair::llm::Suggestion>,
    /// Why the model stopped being asked early, if it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct MinimizedRun {
    pub result: Minimized,
    pub validation: Validation,
}

pub struct RepairSpec {
    pub engine: EngineArg,
    pub budget: Budget,
    pub seed: u64,
    pub runs: usize,
    pub minimize: bool,
    pub stop_at: Option<f64>,
    pub parallel: usize,
    /// The model of the LLM engines, and how they ask it.
    pub llm: Option<std::sync::Arc<dyn reprolab_llm::ChatModel>>,
    pub llm_options: repair::llm::LlmRepairOptions,
}

fn err(e: impl std::fmt::Display) -> anyhow::Error {
    anyhow!("{e}")
}

/// Search, validate, minimise.
pub async fn repair_once(
    obj: &EvalTrainer<'_>,
    subject: &Subject,
    spec: &RepairSpec,
) -> Result<RepairRun> {
    // The faulty config's validation runs double as the budget's time reference (and are cached
    // for the validation below).
    let seeds: Vec<u64> = (0..spec.runs as u64).collect();
    let faulty = obj
        .evaluate(&subject.config, &seeds, Split::Holdout, None)
        .await
        .map_err(|e| anyhow!(e))?;
    let time_ref_s = faulty.iter().map(|(_, d)| d).sum::<f64>() / faulty.len().max(1) as f64;
    let settings = SearchSettings {
        budget: spec.budget,
        seed: spec.seed,
        stop_at: spec.stop_at,
        parallel: spec.parallel,
        time_ref_s: Some(time_ref_s),
    };
    let mut llm = None;
    let (search, rules) = match spec.engine {
        EngineArg::Random => (
            search::search(
                obj,
                subject,
                &mut search::RandomSampler::new(spec.seed),
                &settings,
            )
            .await
            .map_err(err)?,
            None,
        ),
        EngineArg::Tpe => (
            search::search(
                obj,
                subject,
                &mut search::TpeSampler::new(spec.seed, subject.metric.goal),
                &settings,
            )
            .await
            .map_err(err)?,
            None,
        ),
        EngineArg::Bohb => (
            search::bohb(obj, subject, &settings).await.map_err(err)?,
            None,
        ),
        EngineArg::Rules => {
            let r = repair::rules(obj, subject, &settings).await.map_err(err)?;
            (r.result.clone(), Some(r))
        }
        EngineArg::Guided => (
            repair::guided(obj, subject, &settings, |s, trace| {
                reprolab_localize::localize(s, &s.config, Some(&trace.epochs))
            })
            .await
            .map_err(err)?,
            None,
        ),
        EngineArg::Llm | EngineArg::LlmRefine => {
            let model = spec
                .llm
                .as_deref()
                .ok_or_else(|| anyhow!("the {:?} engine needs a model: pass --llm", spec.engine))?;
            let refine = spec.engine == EngineArg::LlmRefine;
            let localisation = if refine {
                Some(localisation_text(obj, subject, settings.seed).await?)
            } else {
                None
            };
            let opts = repair::llm::LlmRepairOptions {
                rounds: if refine {
                    spec.llm_options.rounds.max(2)
                } else {
                    1
                },
                ..spec.llm_options.clone()
            };
            let r = repair::llm::llm_repair(
                obj,
                subject,
                model,
                &settings,
                &opts,
                localisation.as_deref(),
            )
            .await
            .map_err(err)?;
            llm = Some(LlmRun {
                suggestions: r.suggestions,
                error: r.llm_error,
            });
            (r.search, None)
        }
    };
    let validation = match search.patch() {
        Some(patch) => Some(
            repair::validate(obj, subject, patch, spec.runs)
                .await
                .map_err(err)?,
        ),
        None => None,
    };
    let minimized = match (&validation, search.patch()) {
        (Some(v), Some(patch)) if spec.minimize && v.significant && v.changed.len() > 1 => {
            let result = repair::minimize(obj, subject, patch, spec.runs)
                .await
                .map_err(err)?;
            let validation = repair::validate(obj, subject, &result.patch, spec.runs)
                .await
                .map_err(err)?;
            Some(MinimizedRun { result, validation })
        }
        _ => None,
    };
    Ok(RepairRun {
        engine: spec.engine,
        time_ref_s,
        search,
        rules,
        validation,
        minimized,
        llm,
    })
}

/// What `llm-refine` tells the model of localisation: the static and dynamic engines' ranked
/// suspects (one traced training), one per line.
async fn localisation_text(obj: &EvalTrainer<'_>, subject: &Subject, seed: u64) -> Result<String> {
    let trace = obj
        .trace(&subject.config, seed)
        .await
        .map_err(|e| anyhow!(e))?;
    let suspects = reprolab_localize::localize(subject, &subject.config, Some(&trace.epochs));
    Ok(suspects
        .iter()
        .take(8)
        .map(|s| {
            let mut line = format!(
                "- {} (confidence {:.2}): {}",
                s.label, s.confidence, s.evidence
            );
            if let Some(sug) = &s.suggestion {
                line.push_str(&format!("; suggested: {sug}"));
            }
            line
        })
        .collect::<Vec<_>>()
        .join("\n"))
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
        engine: a.engine,
        budget,
        seed: a.seed,
        runs: a.runs,
        minimize: a.minimize,
        stop_at: a.stop_at,
        parallel: ev.workers(),
        llm: if a.engine.needs_llm() {
            Some(crate::llm::open(g, &a.llm, crate::llm::local_factory(g), None)?.model)
        } else {
            None
        },
        llm_options: a.llm_repair.options(),
    };
    let run = repair_once(&trainer, &subject, &spec).await?;
    pb.finish_and_clear();
    let (trained, cached) = (trainer.trained.get(), trainer.cached.get());
    ev.shutdown().await;

    let final_patch = run
        .minimized
        .as_ref()
        .map(|m| &m.result.patch)
        .or(run.search.patch());
    let out = patch_path(a, &subject);
    if let Some(patch) = final_patch {
        if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        std::fs::write(&out, serde_json::to_string_pretty(patch)? + "\n")
            .with_context(|| format!("writing {}", out.display()))?;
    }
    let significant = run
        .minimized
        .as_ref()
        .map(|m| &m.validation)
        .or(run.validation.as_ref())
        .is_some_and(|v| v.significant);

    if g.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({
                "subject": subject.name, "run": run, "patch_file": final_patch.map(|_| &out),
                "trained": trained, "cached": cached,
            }))?
        );
    } else {
        let s = &run.search;
        println!(
            "{} with {}: {} trials, {:.1} s of training spent{} (faulty trains in {:.2} s), stopped: {:?}",
            subject.name,
            s.engine,
            s.trials.len(),
            s.spent_s,
            s.budget_s
                .map_or(String::new(), |b| format!(" of {b:.1} s")),
            run.time_ref_s,
            s.stop
        );
        if let Some(r) = &run.rules {
            if r.no_symptom {
                println!("rules: no symptom in the faulty training; nothing to try");
            }
            for sym in &r.symptoms {
                println!("symptom {}: {}", sym.name, sym.evidence);
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
                println!(
                    "\npatch (search split {} -> {}):",
                    num(s.trials[0].value),
                    num(s.best.as_ref().and_then(|b| b.value))
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
        if final_patch.is_some() {
            println!("\npatched config written to {}", out.display());
        }
        println!("trainings: {trained} run, {cached} from the cache");
    }
    Ok(if significant {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
