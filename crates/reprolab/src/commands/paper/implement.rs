//! `reprolab paper implement`: the implement loop of the paper crate, with the smoke run and the
//! verifier in the sandbox.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use reprolab_paper::code::{self, CodeFile};
use reprolab_paper::fingerprint::Fingerprint;
use reprolab_paper::implement::{self, Brief, Event, Options};
use reprolab_paper::judge::LlmJudge;
use reprolab_paper::lineage::{Source, resolve, resolve_online};
use reprolab_paper::{Corpus, Paper, extract};

use super::{Checking, OnlineArgs, grounded_fingerprint};
use crate::cli::{Global, PaperImplementArgs};
use crate::progress;

pub async fn implement(g: &Global, a: &PaperImplementArgs) -> Result<ExitCode> {
    if a.rounds == 0 || a.rounds > 20 {
        bail!("--rounds is {}; expected 1 to 20", a.rounds);
    }
    let paper = Paper::load(&a.paper)?;
    let text = &paper.text;
    let lineage =
        lineage_code(&paper, a.lineage.as_deref(), a.lineage_top, Some(&a.online)).await?;
    let session = crate::llm::open(g, &a.llm, crate::llm::local_factory(g), None)?;
    let model = session.model.as_ref();
    std::fs::create_dir_all(&a.out).with_context(|| format!("creating {}", a.out.display()))?;
    let fingerprint = fingerprint_for(g, a, &paper, model).await?;
    let checking = Checking::new(g, None, a.cold).await?;
    let judge = a.judge.then(|| LlmJudge {
        model,
        paper: text,
        votes: 1,
        max_tokens: 1024,
        write_probes: true,
    });
    let workshop = checking.workshop(
        checking.verifier(a.timeout)?,
        &fingerprint,
        judge.as_ref(),
        a.smoke_timeout,
    );
    let brief = Brief {
        title: &paper.title,
        paper: text,
        fingerprint: &fingerprint,
        lineage: &lineage,
    };
    let opts = Options {
        rounds: a.rounds,
        max_tokens: a.max_tokens,
        ..Options::default()
    };
    let sp = progress::spinner("implementing", g.json);
    let result = implement::implement(model, &brief, &a.out, &workshop, &opts, |e| {
        progress::line(&sp, &event_line(&e))
    })
    .await;
    sp.finish_and_clear();
    checking.close().await;
    let state = result?;
    if g.json {
        println!(
            "{}",
            serde_json::json!({"out": a.out.display().to_string(), "implementation": state,
                               "llm": session.meter.snapshot()})
        );
    } else {
        match state.rounds.last() {
            Some(r) => println!(
                "{}: {} after {} rounds: smoke run {}, {} pass, {} fail, {} undecided of {} criteria; rounds kept in {}",
                a.out.display(),
                state.stopped.as_deref().unwrap_or("stopped"),
                state.rounds.len(),
                if r.smoke.ok { "passes" } else { "fails" },
                r.pass,
                r.fail,
                r.undecided,
                fingerprint.criteria.len(),
                a.out.join(".rounds").display()
            ),
            None => println!("{}: no round ran", a.out.display()),
        }
    }
    Ok(if state.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// One progress line for an event of the loop.
pub fn event_line(e: &Event<'_>) -> String {
    match e {
        Event::Planned(p) => match &p.fallback {
            Some(why) => format!("plan: {why}"),
            None => format!("plan: {} files, entry {}", p.files.len(), p.entry),
        },
        Event::Wrote(path) => format!("wrote {path}"),
        Event::Judged(r) => format!(
            "round {}: smoke {}; {} pass, {} fail, {} undecided",
            r.number,
            if r.smoke.ok { "ok" } else { "FAILED" },
            r.pass,
            r.fail,
            r.undecided
        ),
        Event::Revised(r) => format!(
            "round {}: {} edits applied, {} failed; changed {}",
            r.number,
            r.edits_applied,
            r.edits_failed,
            if r.files_changed.is_empty() {
                "nothing".to_string()
            } else {
                r.files_changed.join(", ")
            }
        ),
    }
}

/// The given fingerprint, else the one beside the paper, else one the model extracts (kept in
/// OUT/fingerprint.json, so a resumed run extracts nothing again).
async fn fingerprint_for(
    g: &Global,
    a: &PaperImplementArgs,
    paper: &Paper,
    model: &dyn reprolab_llm::ChatModel,
) -> Result<Fingerprint> {
    let kept = a.out.join("fingerprint.json");
    let given = a.fingerprint.clone().or_else(|| {
        [a.paper.with_file_name("fingerprint.json"), kept.clone()]
            .into_iter()
            .find(|p| p.is_file())
    });
    if let Some(path) = given {
        return Ok(grounded_fingerprint(&a.paper, &paper.text, Some(&path))?.0);
    }
    let sp = progress::spinner("extracting the fingerprint", g.json);
    let ex = extract::extract(model, paper, a.max_tokens, |c| {
        sp.set_message(c.heading.clone())
    })
    .await;
    sp.finish_and_clear();
    if ex.fingerprint.criteria.is_empty() {
        bail!(
            "{}: the model found no criterion in the paper ({} sections read); give --fingerprint FILE",
            a.paper.display(),
            ex.calls
        );
    }
    std::fs::write(&kept, serde_json::to_string_pretty(&ex.fingerprint)? + "\n")
        .with_context(|| format!("writing {}", kept.display()))?;
    Ok(ex.fingerprint)
}

/// The code of the papers PAPER builds on, found in `corpus` (lineage) and, with `--online`,
/// on arXiv and GitHub (or, without it, in the cache of earlier online runs): the files of the
/// top resolved references, most relevant first, each path prefixed with its entry.
pub(super) async fn lineage_code(
    paper: &Paper,
    corpus: Option<&Path>,
    top: usize,
    online: Option<&OnlineArgs>,
) -> Result<Vec<CodeFile>> {
    let lookup = online.map(OnlineArgs::lookup).transpose()?.flatten();
    let corpus = corpus.map(Corpus::load).transpose()?;
    let lineage = match (lookup, &corpus) {
        (Some(mut lookup), _) if corpus.is_some() || lookup.is_online() => {
            resolve_online(paper, corpus.as_ref(), top, &mut lookup).await
        }
        (_, Some(corpus)) => resolve(paper, corpus, top),
        (_, None) => return Ok(Vec::new()),
    };
    let mut files = Vec::new();
    for r in &lineage.resolved {
        let Some(root) = &r.code_root else { continue };
        if r.resolved_in == Source::Corpus {
            for f in code::read_dir(root) {
                if r.code_files.contains(&f.path) {
                    files.push(CodeFile {
                        path: format!("{}/{}", r.entry, f.path),
                        text: f.text,
                    });
                }
            }
        } else {
            // Fetched and size-capped already; README files included.
            for f in &r.code_files {
                if let Ok(bytes) = std::fs::read(root.join(f)) {
                    files.push(CodeFile {
                        path: format!("{}/{f}", r.entry),
                        text: String::from_utf8_lossy(&bytes).into_owned(),
                    });
                }
            }
        }
    }
    let all = || lineage.resolved.iter().chain(&lineage.below_top);
    let online_found = all().filter(|r| r.resolved_in != Source::Corpus).count();
    eprintln!(
        "lineage: {} of {} references resolved ({} in the corpus, {online_found} online); the \
         top {} give {} code files as context",
        all().count(),
        paper.references.len(),
        all().count() - online_found,
        lineage.resolved.len(),
        files.len()
    );
    Ok(files)
}
