//! Static checks of a candidate script before it is run (RepGen's syntax check and linter, with
//! the findings given to the model instead of fixed by a second call): the Python helper
//! `python -m reprolab.precheck` parses the script, reads its scopes and looks up its imports in
//! the run's environment, executing nothing of it.
//!
//! A *blocking* finding (the script does not parse, or imports a package the environment lacks)
//! makes every seeded run pointless: the
//! attempt is answered with the findings and nothing runs. An *advisory* one (a name bound
//! nowhere) may sit in a branch that never runs: the script runs, and the finding is added to
//! the feedback only when it did not reproduce the bug.

use std::fmt::Write as _;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::facts::{Facts, Symptom};
use crate::run::ScriptRunner;

/// One finding of the pre-check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// `syntax`, `missing-module` or `undefined-name`.
    pub kind: String,
    /// 1-based line of the script (0 when unknown).
    pub line: u32,
    pub message: String,
    /// Whether running the script is pointless while this stands.
    pub blocking: bool,
}

impl Finding {
    /// `line 3: …` as shown to the model and the user.
    pub fn describe(&self) -> String {
        match self.line {
            0 => self.message.clone(),
            n => format!("line {n}: {}", self.message),
        }
    }
}

/// The exception class the report's error names (`ValueError`): when it is an ImportError, a
/// missing package may be the bug itself and does not block.
pub fn expected_exception(facts: &Facts) -> Option<&str> {
    match facts.symptom {
        Symptom::Error => facts.primary_error().map(|e| e.name.as_str()),
        _ => None,
    }
}

/// The checker for one environment: owned, so that it can run on a blocking thread.
#[derive(Debug, Clone)]
pub struct Precheck {
    python: PathBuf,
    pythonpath: Option<PathBuf>,
    /// Directories the script may import from besides its own (`--repo`).
    paths: Vec<PathBuf>,
}

impl Precheck {
    /// The checker for the environment and import paths a runner runs scripts with.
    pub fn for_runner(runner: &ScriptRunner<'_>) -> Precheck {
        Precheck {
            python: runner.env.python.clone(),
            pythonpath: runner.env.pythonpath.clone(),
            paths: runner.paths.clone(),
        }
    }

    /// Check `script`. A helper that cannot run or answers nonsense gives no findings (the run
    /// then shows whatever is wrong) and a warning in the log.
    pub fn check(&self, script: &str, expect: Option<&str>) -> Vec<Finding> {
        match self.run_helper(script, expect) {
            Ok(found) => found,
            Err(why) => {
                tracing::warn!("the pre-check did not run: {why}");
                Vec::new()
            }
        }
    }

    fn run_helper(&self, script: &str, expect: Option<&str>) -> Result<Vec<Finding>, String> {
        let scratch =
            reprolab_exec::scratch::Scratch::new("precheck").map_err(|e| e.to_string())?;
        let path = scratch.path().join("reproduce.py");
        std::fs::write(&path, script).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut cmd = std::process::Command::new(&self.python);
        cmd.args(["-m", "reprolab.precheck"]).arg(&path);
        if let Some(name) = expect {
            cmd.args(["--expect", name]);
        }
        for dir in &self.paths {
            cmd.arg("--path").arg(dir);
        }
        if let Some(p) = &self.pythonpath {
            cmd.env("PYTHONPATH", p);
        }
        // Its own directory as the working directory: nothing of the caller's is importable by
        // accident.
        cmd.current_dir(scratch.path());
        let out = cmd
            .output()
            .map_err(|e| format!("cannot run {}: {e}", self.python.display()))?;
        parse(&out.stdout).ok_or_else(|| {
            let err = String::from_utf8_lossy(&out.stderr);
            format!(
                "unreadable answer: {}",
                err.lines().last().unwrap_or("no output")
            )
        })
    }
}

fn parse(stdout: &[u8]) -> Option<Vec<Finding>> {
    serde_json::from_slice(stdout).ok()
}

/// Whether any finding makes running the script pointless.
pub fn blocks(findings: &[Finding]) -> bool {
    findings.iter().any(|f| f.blocking)
}

/// The feedback for a script that was not run because of blocking findings.
pub fn blocking_feedback(findings: &[Finding]) -> String {
    let mut p = String::from(
        "I did not run your script: a static check found problems that would make every run \
         pointless:\n",
    );
    push_list(&mut p, findings.iter().filter(|f| f.blocking));
    p.push_str(
        "\nWrite a corrected, complete script (one ```python block) that shows the reported symptom.",
    );
    p
}

/// The advisory findings, as a paragraph to add to the feedback of a run that did not reproduce
/// the bug; empty when there are none.
pub fn advisory_note(findings: &[Finding]) -> String {
    let mut advisory = findings.iter().filter(|f| !f.blocking).peekable();
    if advisory.peek().is_none() {
        return String::new();
    }
    let mut p = String::from("\nA static check of the script also found:\n");
    push_list(&mut p, advisory);
    p
}

fn push_list<'a>(p: &mut String, findings: impl Iterator<Item = &'a Finding>) {
    for f in findings {
        let _ = writeln!(p, "- {}", f.describe());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(kind: &str, line: u32, blocking: bool) -> Finding {
        Finding {
            kind: kind.into(),
            line,
            message: format!("{kind} here"),
            blocking,
        }
    }

    #[test]
    fn the_helpers_answer_is_read_and_split_by_blocking() {
        let answer = br#"[{"kind": "missing-module", "line": 2, "message": "`tensorflow` cannot be imported", "blocking": true},
                         {"kind": "undefined-name", "line": 9, "message": "`x` is used but never defined or imported", "blocking": false}]"#;
        let found = parse(answer).unwrap();
        assert_eq!(found.len(), 2);
        assert!(blocks(&found));
        let fb = blocking_feedback(&found);
        assert!(
            fb.contains("- line 2: `tensorflow` cannot be imported"),
            "{fb}"
        );
        assert!(!fb.contains("line 9"), "{fb}");
        assert_eq!(
            advisory_note(&found),
            "\nA static check of the script also found:\n- line 9: `x` is used but never defined or imported\n"
        );
        assert!(parse(b"Traceback (most recent call last):").is_none());
    }

    #[test]
    fn advisory_findings_alone_do_not_block() {
        let found = vec![f("undefined-name", 3, false)];
        assert!(!blocks(&found));
        assert_eq!(advisory_note(&[f("syntax", 0, true)]), "");
        assert_eq!(f("syntax", 0, true).describe(), "syntax here");
    }
}
