//! `reprolab paper fingerprint`: a paper's criteria, extracted by a model, settled by rules.

use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use reprolab_paper::{Paper, extract};

use super::clip;
use crate::cli::{Global, PaperFingerprintArgs};
use crate::progress;

/// `reprolab paper fingerprint`: the paper's criteria, extracted by the model, settled by rules.
pub async fn fingerprint(g: &Global, a: &PaperFingerprintArgs) -> Result<ExitCode> {
    let paper = Paper::load(&a.paper)?;
    if a.out.exists() && !a.force {
        bail!(
            "{}: already exists; pass --force to replace it or --out FILE",
            a.out.display()
        );
    }
    let sections = extract::chunks(&paper).len();
    if sections == 0 {
        bail!("{}: the paper has no text", a.paper.display());
    }
    let session = crate::llm::open(g, &a.llm, crate::llm::local_factory(g), None)?;
    let bar = progress::bar(sections as u64, "sections", g.json);
    let extraction = extract::extract(session.model.as_ref(), &paper, a.max_tokens, |c| {
        bar.set_message(c.heading.clone());
        bar.inc(1);
    })
    .await;
    bar.finish_and_clear();
    let fp = &extraction.fingerprint;
    std::fs::write(&a.out, serde_json::to_string_pretty(fp)? + "\n")
        .with_context(|| format!("writing {}", a.out.display()))?;
    if g.json {
        println!(
            "{}",
            serde_json::json!({"out": a.out.display().to_string(), "extraction": extraction,
                               "llm": session.meter.snapshot()})
        );
        return Ok(ExitCode::SUCCESS);
    }
    for d in &extraction.dropped {
        eprintln!("dropped: {} ({})", clip(&d.fact, 80), d.reason);
    }
    for u in &extraction.unreadable {
        eprintln!("warning: no criteria read from section {u}");
    }
    let with_checks = fp.criteria.iter().filter(|c| !c.checks.is_empty()).count();
    println!(
        "{} criteria ({} with a static check) from {} sections; {} dropped; written to {}",
        fp.criteria.len(),
        with_checks,
        extraction.calls,
        extraction.dropped.len(),
        a.out.display()
    );
    Ok(ExitCode::SUCCESS)
}
