//! The implement loop: plan the files (Paper2Code), write them one by one, then rounds of run →
//! verify → revise (RePro): a smoke run (one short training in the sandbox, a finite loss) and
//! the verifier decide; the criteria that fail, with their evidence, and the smoke run's error go
//! to the model, which answers with a revision plan and SEARCH/REPLACE edits. It stops when the
//! smoke run passes and no criterion fails, or when the rounds are spent.
//!
//! Everything a round produced is kept under `OUT/.rounds/N/` (the code after it, the smoke
//! run, the verification, the plan and edits), and `OUT/implementation.json` is rewritten after
//! each step, so a killed run resumes at the round it was in, without asking for what it has.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use reprolab_llm::parse::{extract_code, extract_json};
use reprolab_llm::{ChatModel, ChatRequest, LlmError};
use serde::{Deserialize, Serialize};

use crate::checks::Outcome;
use crate::code::{self, CodeFile};
use crate::edit;
use crate::fingerprint::Fingerprint;
use crate::verify::Verification;

/// The smoke run's flag: the entry file runs one short training with it.
pub const SMOKE_FLAG: &str = "--smoke";
/// The paper shown to the model at most, in characters.
const PAPER_BUDGET: usize = 30_000;
/// Code of cited papers (lineage) shown at most.
const LINEAGE_BUDGET: usize = 12_000;

const SYSTEM: &str = "You are an expert machine-learning engineer who implements research papers \
faithfully in PyTorch. Follow the paper's stated details exactly; where the paper is silent, \
choose simple, standard settings.";

/// How one smoke run went.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Smoke {
    /// It exited normally and printed a finite loss.
    pub ok: bool,
    pub loss: Option<f64>,
    /// One line: why it failed, or the loss.
    pub summary: String,
    /// The end of what it printed.
    pub output_tail: String,
}

/// Any error of the workshop (it runs code and reads files of its own kinds).
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// What the loop needs from the world: running the code and verifying it.
// The loop awaits these in place (never spawns them), so their futures need not be `Send`.
#[allow(async_fn_in_trait)]
pub trait Workshop {
    /// Run `entry` in `dir` with [`SMOKE_FLAG`], in the sandbox.
    async fn smoke(&self, dir: &Path, entry: &str) -> Smoke;
    /// The fingerprint's criteria decided against `dir`.
    async fn verify(&self, dir: &Path) -> Result<Verification, BoxError>;
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlannedFile {
    pub path: String,
    #[serde(default)]
    pub purpose: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub files: Vec<PlannedFile>,
    pub entry: String,
    /// Why the plan is reprolab's one-file fallback rather than the model's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback: Option<String>,
}

/// One round: the code as it was, judged, then revised (unless it was the last or it passed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Round {
    pub number: u32,
    pub smoke: Smoke,
    pub pass: usize,
    pub fail: usize,
    pub undecided: usize,
    pub failed: Vec<String>,
    /// Edit blocks applied and failed (after one retry of the failed ones).
    pub edits_applied: usize,
    pub edits_failed: usize,
    pub files_changed: Vec<String>,
}

/// The state of a run, `OUT/implementation.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Implementation {
    pub plan: Option<Plan>,
    /// Files written so far (the first pass).
    pub written: Vec<String>,
    pub rounds: Vec<Round>,
    /// Why it stopped; `None` while it runs.
    pub stopped: Option<String>,
    pub calls: u64,
}

impl Implementation {
    fn empty() -> Implementation {
        Implementation {
            plan: None,
            written: Vec::new(),
            rounds: Vec::new(),
            stopped: None,
            calls: 0,
        }
    }

    /// The last round passed: the smoke run worked and no criterion failed.
    pub fn passed(&self) -> bool {
        self.rounds
            .last()
            .is_some_and(|r| r.smoke.ok && r.fail == 0)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ImplementError {
    #[error("{}: {what}", path.display())]
    Io {
        path: PathBuf,
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("the model could not be asked")]
    Model(#[from] LlmError),
    #[error("verifying the code failed")]
    Verify(#[source] BoxError),
    #[error("{}: unreadable state ({detail}); remove it to start over", path.display())]
    State { path: PathBuf, detail: String },
}

/// Progress of the loop.
#[derive(Debug, Clone)]
pub enum Event<'a> {
    Planned(&'a Plan),
    Wrote(&'a str),
    Judged(&'a Round),
    Revised(&'a Round),
}

pub struct Options {
    pub rounds: u32,
    pub max_tokens: u32,
    pub max_files: usize,
}

impl Default for Options {
    fn default() -> Options {
        // RePro: four rounds worked best.
        Options {
            rounds: 4,
            max_tokens: 4096,
            max_files: 8,
        }
    }
}

/// What the model is told about the paper.
pub struct Brief<'a> {
    pub title: &'a str,
    pub paper: &'a str,
    pub fingerprint: &'a Fingerprint,
    /// Code of the papers it builds on (lineage), most relevant first.
    pub lineage: &'a [CodeFile],
}

/// Implement the paper into `out` (resuming what is there).
pub async fn implement(
    model: &dyn ChatModel,
    brief: &Brief<'_>,
    out: &Path,
    workshop: &impl Workshop,
    opts: &Options,
    mut on_event: impl FnMut(Event<'_>),
) -> Result<Implementation, ImplementError> {
    let state_path = out.join("implementation.json");
    let mut state = load_state(&state_path)?;
    if state.stopped.is_some() {
        return Ok(state);
    }
    let io = |path: &Path, what| {
        let path = path.to_path_buf();
        move |source| ImplementError::Io { path, what, source }
    };
    std::fs::create_dir_all(out).map_err(io(out, "cannot create the output directory"))?;
    let plan = match state.plan.clone() {
        Some(p) => p,
        None => {
            let p = plan(model, brief, opts, &mut state.calls).await?;
            state.plan = Some(p.clone());
            save(&state_path, &state)?;
            p
        }
    };
    on_event(Event::Planned(&plan));
    for file in &plan.files {
        if state.written.contains(&file.path) {
            continue;
        }
        let text = write_file(model, brief, &plan, file, out, opts, &mut state.calls).await?;
        let path = out.join(&file.path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(io(parent, "cannot create a directory"))?;
        }
        std::fs::write(&path, text).map_err(io(&path, "cannot write the file"))?;
        state.written.push(file.path.clone());
        save(&state_path, &state)?;
        on_event(Event::Wrote(&file.path));
    }
    snapshot(out, 0)?;
    while state.stopped.is_none() {
        let number = state.rounds.len() as u32 + 1;
        let smoke = workshop.smoke(out, &plan.entry).await;
        let verification = workshop.verify(out).await.map_err(ImplementError::Verify)?;
        let mut round = Round {
            number,
            smoke,
            pass: verification.count(Outcome::Pass),
            fail: verification.count(Outcome::Fail),
            undecided: verification.count(Outcome::Undecided),
            failed: verification
                .verdicts
                .iter()
                .filter(|v| v.outcome == Outcome::Fail)
                .map(|v| v.id.clone())
                .collect(),
            edits_applied: 0,
            edits_failed: 0,
            files_changed: Vec::new(),
        };
        let dir = round_dir(out, number);
        write_json(&dir.join("verification.json"), &verification)?;
        write_json(&dir.join("smoke.json"), &round.smoke)?;
        on_event(Event::Judged(&round));
        if round.smoke.ok && round.fail == 0 {
            state.stopped = Some("the smoke run passes and no criterion fails".into());
        } else if number >= opts.rounds {
            state.stopped = Some(format!("{} rounds spent", opts.rounds));
        } else {
            revise(
                model,
                brief,
                &plan,
                &verification,
                &mut round,
                out,
                opts,
                &mut state.calls,
            )
            .await?;
            snapshot(out, number)?;
            on_event(Event::Revised(&round));
        }
        state.rounds.push(round);
        save(&state_path, &state)?;
    }
    Ok(state)
}

/// The verification of the last round that ran in `out`, if any.
pub fn last_verification(out: &Path, state: &Implementation) -> Option<Verification> {
    let round = state.rounds.last()?;
    let text =
        std::fs::read_to_string(round_dir(out, round.number).join("verification.json")).ok()?;
    serde_json::from_str(&text).ok()
}

fn load_state(path: &Path) -> Result<Implementation, ImplementError> {
    match std::fs::read_to_string(path) {
        Ok(text) => serde_json::from_str(&text).map_err(|e| ImplementError::State {
            path: path.to_path_buf(),
            detail: e.to_string(),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Implementation::empty()),
        Err(source) => Err(ImplementError::Io {
            path: path.to_path_buf(),
            what: "cannot read the state",
            source,
        }),
    }
}

fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<(), ImplementError> {
    let io = |source| ImplementError::Io {
        path: path.to_path_buf(),
        what: "cannot write",
        source,
    };
    let text = serde_json::to_string_pretty(value).unwrap_or_default() + "\n";
    crate::write_atomically(path, text.as_bytes()).map_err(io)
}

fn save(path: &Path, state: &Implementation) -> Result<(), ImplementError> {
    write_json(path, state)
}

fn round_dir(out: &Path, number: u32) -> PathBuf {
    out.join(".rounds").join(number.to_string())
}

/// The code as it is now, into `.rounds/N/code/`.
fn snapshot(out: &Path, number: u32) -> Result<(), ImplementError> {
    let dest = round_dir(out, number).join("code");
    for f in code::read_dir(out) {
        let path = dest.join(&f.path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|source| ImplementError::Io {
                path: parent.to_path_buf(),
                what: "cannot create a directory",
                source,
            })?;
        }
        std::fs::write(&path, &f.text).map_err(|source| ImplementError::Io {
            path,
            what: "cannot write a snapshot",
            source,
        })?;
    }
    Ok(())
}

/// One answer. A failed call is an error (the run stops, resumable); a useless answer is not.
async fn ask(
    model: &dyn ChatModel,
    prompt: String,
    max_tokens: u32,
    calls: &mut u64,
) -> Result<String, LlmError> {
    let mut req = ChatRequest::with_system(SYSTEM, prompt);
    req.max_tokens = max_tokens;
    *calls += 1;
    Ok(model.chat(&req).await?.text().to_string())
}

fn clip(s: &str, n: usize) -> &str {
    match s.char_indices().nth(n) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

fn criteria_list(fp: &Fingerprint) -> String {
    fp.criteria
        .iter()
        .map(|c| format!("- {}: {} (scope: {})", c.id, c.fact, c.scope))
        .collect::<Vec<_>>()
        .join("\n")
}

fn context(brief: &Brief<'_>) -> String {
    let mut s = format!(
        "# Paper: {}\n{}\n\n# Criteria the code must meet\n{}\n",
        brief.title,
        clip(brief.paper, PAPER_BUDGET),
        criteria_list(brief.fingerprint)
    );
    if !brief.lineage.is_empty() {
        s.push_str(&format!(
            "\n# Code of papers this one builds on (for reference)\n{}\n",
            code::render(&code_before_readmes(brief.lineage), LINEAGE_BUDGET)
        ));
    }
    s
}

/// The lineage files with every README after the code (each group in its own order): the
/// rendering stops at its budget, and a long README must not push the model code out of it.
fn code_before_readmes(files: &[CodeFile]) -> Vec<&CodeFile> {
    let mut ordered: Vec<&CodeFile> = files.iter().collect();
    ordered.sort_by_key(|f| crate::online::github::is_readme_name(code::file_name(&f.path)));
    ordered
}

async fn plan(
    model: &dyn ChatModel,
    brief: &Brief<'_>,
    opts: &Options,
    calls: &mut u64,
) -> Result<Plan, ImplementError> {
    let prompt = format!(
        "{}\n# Task\nPlan a small Python project (PyTorch, CPU, synthetic data or data generated in \
code: nothing is downloaded) that implements the paper. Answer with JSON only: {{\"files\": \
[{{\"path\": \"relative/path.py\", \"purpose\": \"...\"}}], \"entry\": \"train.py\"}}, at most {} \
files, in the order they should be written (a file after the files it imports). The entry script \
trains and evaluates; run with {SMOKE_FLAG} it trains on a tiny slice for one epoch in seconds, \
writes no files, and prints `loss: <value>` as its last line.",
        context(brief),
        opts.max_files
    );
    let mut why = String::new();
    for _ in 0..2 {
        let retry = if why.is_empty() {
            String::new()
        } else {
            format!("\n\nYour previous answer could not be used: {why}. Answer with the JSON only.")
        };
        let answer = ask(model, format!("{prompt}{retry}"), opts.max_tokens, calls).await?;
        match read_plan(&answer, opts.max_files) {
            Ok(p) => return Ok(p),
            Err(e) => why = e,
        }
    }
    // A weak model may never give a plan; one file is a plan every model can follow.
    Ok(Plan {
        files: vec![PlannedFile {
            path: "train.py".into(),
            purpose: "the whole implementation: model, data, training and evaluation".into(),
        }],
        entry: "train.py".into(),
        fallback: Some(format!(
            "the model gave no usable plan twice ({}); one file instead",
            clip(&why, 200)
        )),
    })
}

fn read_plan(answer: &str, max_files: usize) -> Result<Plan, String> {
    let json = extract_json(answer).map_err(|e| format!("no JSON plan ({e})"))?;
    let mut plan: Plan =
        serde_json::from_value(json).map_err(|e| format!("not a plan {{files, entry}} ({e})"))?;
    plan.fallback = None;
    plan.files.retain(|f| code::is_inside_and_visible(&f.path));
    plan.files.dedup_by(|a, b| a.path == b.path);
    if plan.files.is_empty() {
        return Err("the plan has no file with a relative path".into());
    }
    if plan.files.len() > max_files {
        return Err(format!("{} files; at most {max_files}", plan.files.len()));
    }
    if !plan.files.iter().any(|f| f.path == plan.entry) {
        return Err(format!("the entry {:?} is not among the files", plan.entry));
    }
    Ok(plan)
}

async fn write_file(
    model: &dyn ChatModel,
    brief: &Brief<'_>,
    plan: &Plan,
    file: &PlannedFile,
    out: &Path,
    opts: &Options,
    calls: &mut u64,
) -> Result<String, ImplementError> {
    let listing: String = plan
        .files
        .iter()
        .map(|f| format!("- {}: {}\n", f.path, f.purpose))
        .collect();
    let written: Vec<CodeFile> = code::read_dir(out)
        .into_iter()
        .filter(|f| plan.files.iter().any(|p| p.path == f.path))
        .collect();
    let refs: Vec<&CodeFile> = written.iter().collect();
    let prompt = format!(
        "{}\n# Plan (entry: {})\n{listing}\n# Files written so far\n{}\n# Task\nWrite {} ({}). \
Answer with the whole file in one fenced code block.",
        context(brief),
        plan.entry,
        code::render(&refs, PAPER_BUDGET),
        file.path,
        file.purpose
    );
    let answer = ask(model, prompt, opts.max_tokens, calls).await?;
    let code = extract_code(&answer, &|_| true).code.unwrap_or_default();
    Ok(if code.ends_with('\n') || code.is_empty() {
        code
    } else {
        code + "\n"
    })
}

#[allow(clippy::too_many_arguments)]
async fn revise(
    model: &dyn ChatModel,
    brief: &Brief<'_>,
    plan: &Plan,
    verification: &Verification,
    round: &mut Round,
    out: &Path,
    opts: &Options,
    calls: &mut u64,
) -> Result<(), ImplementError> {
    let failures: String = verification
        .verdicts
        .iter()
        .filter(|v| v.outcome == Outcome::Fail)
        .map(|v| {
            format!(
                "- {} ({}): {}\n  evidence: {}\n",
                v.id,
                v.category,
                v.fact,
                v.evidence.join("; ")
            )
        })
        .collect();
    let smoke = if round.smoke.ok {
        format!("The smoke run passed ({}).", round.smoke.summary)
    } else {
        format!(
            "The smoke run (`python {} {SMOKE_FLAG}`) failed: {}\nIts output ended with:\n{}",
            plan.entry,
            round.smoke.summary,
            clip(&round.smoke.output_tail, 3000)
        )
    };
    let before: BTreeMap<String, String> = code::read_dir(out)
        .into_iter()
        .map(|f| (f.path, f.text))
        .collect();
    let mut files = before.clone();
    let shown: String = files
        .iter()
        .map(|(path, text)| format!("### {path}\n```\n{text}```\n\n"))
        .collect();
    let prompt = format!(
        "{}\n# The code now\n{shown}\n# What is wrong\n{smoke}\n{}{failures}\n# Task\nFirst write a \
short revision plan grouped by file. Then give the edits as SEARCH/REPLACE blocks, each one:\n\
path/to/file.py\n<<<<<<< SEARCH\nlines copied exactly from the file\n=======\nthe new lines\n\
>>>>>>> REPLACE\nAn empty SEARCH creates a file. Change only what the plan needs.",
        context(brief),
        if failures.is_empty() {
            ""
        } else {
            "Criteria that fail:\n"
        }
    );
    let answer = ask(model, prompt.clone(), opts.max_tokens, calls).await?;
    let blocks = edit::parse(&answer);
    let mut failed = edit::apply(&mut files, &blocks);
    let mut applied = blocks.len() - failed.len();
    if !failed.is_empty() {
        // Aider's guard: report the failed blocks and ask for those only.
        let report: String = failed
            .iter()
            .map(|f| format!("- {} ({}):\n{}", f.block.path, f.why, f.block.search))
            .collect();
        let retry = format!(
            "{prompt}\n\n# Your answer\n{answer}\n\nThese blocks could not be applied:\n{report}\n\
Give corrected SEARCH/REPLACE blocks for them only; SEARCH must copy the file's current lines exactly."
        );
        let again = edit::parse(&ask(model, retry, opts.max_tokens, calls).await?);
        let still = edit::apply(&mut files, &again);
        applied += again.len() - still.len();
        failed = still;
    }
    for (path, text) in &files {
        if before.get(path) != Some(text) {
            let full = out.join(path);
            if let Some(parent) = full.parent() {
                std::fs::create_dir_all(parent).map_err(|source| ImplementError::Io {
                    path: parent.to_path_buf(),
                    what: "cannot create a directory",
                    source,
                })?;
            }
            std::fs::write(&full, text).map_err(|source| ImplementError::Io {
                path: full.clone(),
                what: "cannot write an edited file",
                source,
            })?;
            round.files_changed.push(path.clone());
        }
    }
    round.edits_applied = applied;
    round.edits_failed = failed.len();
    let dir = round_dir(out, round.number);
    std::fs::create_dir_all(&dir)
        .and_then(|_| std::fs::write(dir.join("revision.md"), &answer))
        .map_err(|source| ImplementError::Io {
            path: dir.clone(),
            what: "cannot write the revision",
            source,
        })?;
    Ok(())
}

/// The smoke run's verdict from how it ended and what it printed: it must exit normally and its
/// output must end with a finite `loss: <value>`.
pub fn judge_smoke(exited_ok: bool, failure: &str, output_tail: &str) -> Smoke {
    let loss = last_loss(output_tail);
    let (ok, summary) = match (exited_ok, loss) {
        (false, _) => (false, failure.to_string()),
        (true, Some(l)) if l.is_finite() => (true, format!("loss {l}")),
        (true, Some(l)) => (false, format!("the loss is {l}")),
        (true, None) => (false, "it printed no `loss: <value>` line".into()),
    };
    Smoke {
        ok,
        loss,
        summary,
        output_tail: output_tail.to_string(),
    }
}

/// The value of the last `loss: x` / `loss = x` / `loss x` in `text`.
fn last_loss(text: &str) -> Option<f64> {
    let lower = text.to_lowercase();
    let mut found = None;
    let mut from = 0;
    while let Some(at) = lower[from..].find("loss") {
        let rest = &lower[from + at + 4..];
        let rest = rest.trim_start_matches([' ', ':', '=', '\t']);
        let number: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+'))
            .collect();
        if let Ok(v) = number.parse::<f64>() {
            found = Some(v);
        }
        from += at + 4;
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_needs_relative_files_and_its_entry_among_them() {
        let ok = read_plan(
            "```json\n{\"files\": [{\"path\": \"model.py\"}, {\"path\": \"train.py\", \"purpose\": \"main\"}], \"entry\": \"train.py\"}\n```",
            8,
        )
        .unwrap();
        assert_eq!(ok.files.len(), 2);
        let no_entry = read_plan(
            "{\"files\": [{\"path\": \"a.py\"}], \"entry\": \"train.py\"}",
            8,
        );
        assert!(no_entry.unwrap_err().contains("not among the files"));
        let outside = read_plan(
            "{\"files\": [{\"path\": \"../x.py\"}, {\"path\": \".env\"}], \"entry\": \"x\"}",
            8,
        );
        assert!(outside.unwrap_err().contains("no file"));
        let many = read_plan(
            "{\"files\": [{\"path\": \"a.py\"}, {\"path\": \"b.py\"}], \"entry\": \"a.py\"}",
            1,
        );
        assert!(many.unwrap_err().contains("at most 1"));
    }

    #[test]
    fn lineage_code_comes_before_readmes_so_a_long_readme_cannot_crowd_it_out() {
        let file = |path: &str, text: String| CodeFile {
            path: path.into(),
            text,
        };
        let lineage = [
            file("arxiv:1/code/README.md", "install it\n".repeat(5_000)),
            file("arxiv:1/code/models/net.py", "class Net: pass\n".into()),
            file("corpus-paper/readme.txt", "notes\n".into()),
            file("corpus-paper/loss.py", "def loss(): pass\n".into()),
        ];
        let order: Vec<&str> = code_before_readmes(&lineage)
            .iter()
            .map(|f| f.path.as_str())
            .collect();
        assert_eq!(
            order,
            [
                "arxiv:1/code/models/net.py",
                "corpus-paper/loss.py",
                "arxiv:1/code/README.md",
                "corpus-paper/readme.txt"
            ]
        );
        let rendered = code::render(&code_before_readmes(&lineage), LINEAGE_BUDGET);
        assert!(rendered.contains("class Net") && rendered.contains("def loss"));
    }

    #[test]
    fn the_smoke_run_needs_a_clean_exit_and_a_finite_last_loss() {
        assert_eq!(
            last_loss("epoch 1 loss: 2.3\nepoch 2 loss=1.25\n"),
            Some(1.25)
        );
        assert!(last_loss("loss: nan").unwrap().is_nan());
        assert!(judge_smoke(true, "", "Loss 0.5").ok);
        assert!(!judge_smoke(true, "", "loss: inf").ok);
        assert!(!judge_smoke(true, "", "done").ok);
        let crashed = judge_smoke(false, "RuntimeError: shapes", "loss: 1.0");
        assert!(!crashed.ok);
        assert_eq!(crashed.summary, "RuntimeError: shapes");
    }
}
