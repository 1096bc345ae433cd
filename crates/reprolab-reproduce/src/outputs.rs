//! The files a reproduction leaves for the user: `reproduce.py`, `requirements.txt` (the exact
//! versions it ran with), `observed.txt` (what running it showed, per seed) and `verdict.json`;
//! `reproduce.full.py` beside them when the script was minimised, and `attempts.json` for a
//! model's loop.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use reprolab_exec::spec_env::Resolution;
use serde::Serialize;

use crate::agent::Reproduction;
use crate::facts::Facts;
use crate::minimize::Shortened;
use crate::observe::{Observation, numeric, short_path};
use crate::opinion::Opinion;
use crate::prepare::Prepared;
use crate::verdict::Verdict;

/// A reproduction's files could not be written.
#[derive(Debug, thiserror::Error)]
#[error("writing the results into {}", dir.display())]
pub struct OutputError {
    pub dir: PathBuf,
    #[source]
    pub source: std::io::Error,
}

impl OutputError {
    fn in_dir(dir: &Path) -> impl FnOnce(std::io::Error) -> OutputError + '_ {
        |source| OutputError {
            dir: dir.to_path_buf(),
            source,
        }
    }
}

/// A script judged against a report: what the files show.
#[derive(Debug, Clone)]
pub struct Judged {
    pub script: String,
    pub runs: Vec<Observation>,
    pub verdict: Verdict,
    /// How the script came about (`verdict.json`'s `origin`).
    pub origin: serde_json::Value,
    /// A model's opinion beside the verdict (silent reports).
    pub opinion: Option<Opinion>,
    /// The script before minimisation, kept as `reproduce.full.py`.
    pub full: Option<String>,
}

impl Judged {
    pub fn new(
        script: String,
        runs: Vec<Observation>,
        verdict: Verdict,
        origin: serde_json::Value,
    ) -> Judged {
        Judged {
            script,
            runs,
            verdict,
            origin,
            opinion: None,
            full: None,
        }
    }

    /// Takes the shorter script when minimisation found one; the script as it was is kept as the
    /// full one either way, and the origin says what minimisation did.
    pub fn shortened(mut self, s: Shortened) -> Judged {
        self.origin["minimized"] = s.summary;
        let full = match s.judged {
            Some((runs, verdict)) => {
                self.runs = runs;
                self.verdict = verdict;
                std::mem::replace(&mut self.script, s.script)
            }
            None => self.script.clone(),
        };
        self.full = Some(full);
        self
    }

    /// `verdict.json` for this script against `p`'s report.
    pub fn file<'a>(&'a self, p: &'a Prepared) -> VerdictFile<'a> {
        p.verdict_file(&self.verdict, self.origin.clone(), self.opinion.clone())
    }

    /// Write the files into `dir`.
    pub fn write(&self, p: &Prepared, dir: &Path) -> Result<(), OutputError> {
        write(dir, &self.script, &self.runs, &self.file(p)).map_err(OutputError::in_dir(dir))?;
        if let Some(full) = &self.full {
            std::fs::write(dir.join("reproduce.full.py"), full)
                .map_err(OutputError::in_dir(dir))?;
        }
        Ok(())
    }
}

/// Write a model loop's `attempts.json` (every prompt's answer, pre-check and verdict) into
/// `dir`, created if needed; returns its path.
pub fn write_attempts(dir: &Path, result: &Reproduction) -> Result<PathBuf, OutputError> {
    std::fs::create_dir_all(dir).map_err(OutputError::in_dir(dir))?;
    let path = dir.join("attempts.json");
    let json = serde_json::to_string_pretty(result).expect("serialisable");
    std::fs::write(&path, json + "\n").map_err(OutputError::in_dir(dir))?;
    Ok(path)
}

/// Everything `verdict.json` holds.
#[derive(Debug, Serialize)]
pub struct VerdictFile<'a> {
    pub report: String,
    pub reproduced: bool,
    pub verdict: &'a Verdict,
    pub environment: &'a Resolution,
    pub facts: &'a Facts,
    /// How the script came about: `given` (verify), or the attempt that produced it.
    pub origin: serde_json::Value,
    /// A model's opinion on a silent or code-inspection report; never the verdict.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub llm_opinion: Option<crate::opinion::Opinion>,
}

/// Write the four files into `dir` (created if needed).
pub fn write(
    dir: &Path,
    script: &str,
    runs: &[Observation],
    file: &VerdictFile,
) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join("reproduce.py"), script)?;
    std::fs::write(
        dir.join("requirements.txt"),
        file.environment.requirements(),
    )?;
    std::fs::write(dir.join("observed.txt"), observed_text(runs, file.verdict))?;
    let json = serde_json::to_string_pretty(file).expect("serialisable");
    std::fs::write(dir.join("verdict.json"), json + "\n")
}

/// What the runs showed, for people: the verdict, then per seed its outcome, warnings and
/// reported values, then the output of the first run.
pub fn observed_text(runs: &[Observation], verdict: &Verdict) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "verdict: {}", verdict.summary());
    let _ = writeln!(
        s,
        "looked for ({}): {}",
        verdict.symptom.as_str(),
        verdict.expected
    );
    for r in &verdict.reasons {
        let _ = writeln!(s, "  note: {r}");
    }
    for (o, j) in runs.iter().zip(&verdict.per_run) {
        let _ = writeln!(
            s,
            "\nseed {}: {} [{:.1} s, {} MiB]\n  {}: {}",
            o.seed,
            o.status.as_str(),
            o.duration_s,
            o.peak_mb,
            if j.shows {
                "shows the symptom"
            } else {
                "does not show it"
            },
            j.reason
        );
        if let Some(e) = o.exceptions.first() {
            let _ = writeln!(s, "  exception: {}", o.headline());
            for f in e.frames.iter().rev().take(4) {
                let _ = writeln!(
                    s,
                    "    at {}:{} in {}{}",
                    short_path(&f.file),
                    f.line,
                    f.function,
                    if f.in_script { " (script)" } else { "" }
                );
            }
        }
        for w in o.warnings.iter().take(5) {
            let _ = writeln!(
                s,
                "  warning: {}: {} ({}:{})",
                w.category,
                w.message.lines().next().unwrap_or(""),
                short_path(&w.file),
                w.line
            );
        }
        for name in o.reported_names() {
            let series: Vec<String> = o
                .reported
                .iter()
                .filter_map(|r| r.get(&name).and_then(numeric))
                .map(|v| format!("{v:.6}"))
                .collect();
            let shown = if series.len() > 8 {
                format!(
                    "{} … {} ({} values)",
                    series[..4].join(", "),
                    series[series.len() - 2..].join(", "),
                    series.len()
                )
            } else {
                series.join(", ")
            };
            let _ = writeln!(s, "  reported {name}: {shown}");
        }
        if !o.literal_reports.is_empty() {
            let _ = writeln!(
                s,
                "  literal reports (ignored): {}",
                o.literal_reports.join(", ")
            );
        }
    }
    if let Some(first) = runs.first()
        && !first.output_tail.trim().is_empty()
    {
        let _ = writeln!(
            s,
            "\noutput of seed {} (last part):\n{}",
            first.seed,
            first.output_tail.trim_end()
        );
    }
    s
}
