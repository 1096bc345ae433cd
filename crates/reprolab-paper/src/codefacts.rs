//! The static facts of a code directory (named constant values and calls, each with its file,
//! line and scope), read by the environment's Python with `ast` (`python -m
//! reprolab.codefacts`): no code of the directory runs.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct CodeFacts {
    pub values: Vec<ValueFact>,
    pub calls: Vec<CallFact>,
    #[serde(default)]
    pub files: usize,
    /// Files that do not parse (their facts are missing).
    #[serde(default)]
    pub syntax_errors: Vec<String>,
    #[serde(default)]
    pub truncated: bool,
}

/// `name = value` somewhere: an assignment, a keyword argument, a default, a dict entry, an
/// argparse default or a config file key (`kind`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ValueFact {
    pub file: String,
    pub line: u32,
    pub scope: String,
    pub name: String,
    pub value: Value,
    pub kind: String,
}

/// A call, its callee with import aliases resolved; arguments that are not constants are null.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallFact {
    pub file: String,
    pub line: u32,
    pub scope: String,
    pub callee: String,
    #[serde(default)]
    pub kwargs: Map<String, Value>,
    #[serde(default)]
    pub args: Vec<Value>,
}

impl ValueFact {
    /// `file:line (scope)`, for evidence.
    pub fn place(&self) -> String {
        place(&self.file, self.line, &self.scope)
    }
}

impl CallFact {
    pub fn place(&self) -> String {
        place(&self.file, self.line, &self.scope)
    }
}

fn place(file: &str, line: u32, scope: &str) -> String {
    if scope.is_empty() {
        format!("{file}:{line}")
    } else {
        format!("{file}:{line} ({scope})")
    }
}

#[derive(Debug, thiserror::Error)]
pub enum CodeFactsError {
    #[error("cannot run {}", python.display())]
    Run {
        python: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: reading the code's facts failed: {detail}", dir.display())]
    Output { dir: PathBuf, detail: String },
}

/// The facts of `dir`, by `python` (with `pythonpath` where the reprolab package is).
pub fn extract(
    python: &Path,
    pythonpath: Option<&Path>,
    dir: &Path,
) -> Result<CodeFacts, CodeFactsError> {
    let mut cmd = std::process::Command::new(python);
    cmd.args(["-m", "reprolab.codefacts"]).arg(dir);
    if let Some(p) = pythonpath {
        cmd.env("PYTHONPATH", p);
    }
    let out = cmd.output().map_err(|source| CodeFactsError::Run {
        python: python.to_path_buf(),
        source,
    })?;
    let failed = |detail: String| CodeFactsError::Output {
        dir: dir.to_path_buf(),
        detail,
    };
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(failed(
            err.lines().last().unwrap_or("no output").to_string(),
        ));
    }
    serde_json::from_slice(&out.stdout).map_err(|e| failed(format!("unreadable output: {e}")))
}
