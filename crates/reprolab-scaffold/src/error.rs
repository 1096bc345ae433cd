//! What can go wrong while scaffolding: the scan of the scripts (the machinery, or the script's
//! own fault), the choice of the entry, and writing the files. Each message names the file or
//! flag once and what to do; a cause from the system is the error's source, never repeated in
//! its message.

use std::path::PathBuf;

/// What every "which function" message says: the contract of the callable.
pub(crate) const CONTRACT: &str = "reprolab calls a top-level function FUNCTION(config, seed): \
config is the dict of config.json, seed an int, and it returns {\"search\": METRIC, \"holdout\": \
METRIC} (the metric on two held-out splits)";

#[derive(Debug, thiserror::Error)]
pub enum ScaffoldError {
    /// The managed Python could not be started.
    #[error("reading the training script: running {}", .python.display())]
    Start {
        python: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// `python -m reprolab.scaffold` printed something that is not its JSON.
    #[error("reading the training script: unreadable output of python -m reprolab.scaffold")]
    Output {
        #[source]
        source: serde_json::Error,
    },
    /// `python -m reprolab.scaffold` failed other than on the script.
    #[error(
        "reading the training script: python -m reprolab.scaffold {} failed: {stderr}",
        .path.display()
    )]
    Failed { path: PathBuf, stderr: String },
    /// The scan's own verdict on the script (unreadable, a syntax error): the user's to fix.
    #[error("{0}")]
    Script(String),
    /// The subject directory cannot be listed.
    #[error("{}: cannot list the directory", .dir.display())]
    List {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// `--entry` is not `FILE.py:FUNCTION` nor `FILE.py`.
    #[error(
        "--entry {spec:?}: expected FILE.py:FUNCTION (a function taking (config, seed)), like \
         train.py:train, or FILE.py (a command-line script), like main.py"
    )]
    EntrySpec { spec: String },
    /// `--entry FILE.py` names a script with neither options nor hyperparameter constants.
    #[error(
        "--entry {spec:?}: the script declares no option with argparse (add_argument) and sets \
         no hyperparameter as a top-level constant (LR = 0.01), so reprolab cannot pass it a \
         config; name a function instead, --entry {spec}:FUNCTION, where {CONTRACT}"
    )]
    NothingToSet { spec: String },
    /// `--entry` names a file that is not a Python file of the directory.
    #[error("--entry {spec:?}: {} is not a Python file in {}", .path.display(), .dir.display())]
    EntryFile {
        spec: String,
        path: PathBuf,
        dir: PathBuf,
    },
    /// `--entry` names a function its file does not define at top level.
    #[error(
        "--entry {spec:?}: {file} has no top-level function {function:?}; {CONTRACT}. \
         Its top-level functions: {found}"
    )]
    EntryMissing {
        spec: String,
        file: String,
        function: String,
        /// The file's top-level functions, or "none".
        found: String,
    },
    /// `--entry` names a function of fewer than two parameters.
    #[error("--entry {spec:?}: {function} takes {takes}; {CONTRACT}")]
    EntryParameters {
        spec: String,
        /// The function as `name(params) at line N`.
        function: String,
        /// "no parameter" or "only (a, b)".
        takes: String,
    },
    /// The directory holds no `.py` file.
    #[error(
        "{}: no .py file here; put the training script in this directory ({CONTRACT})",
        .dir.display()
    )]
    NoScript { dir: PathBuf },
    /// No top-level function takes `(config, seed)`.
    #[error(
        "{}: no function to call: {CONTRACT}. Found no top-level function taking \
         (config, seed), no script declaring options with argparse and none setting \
         hyperparameters as top-level constants; top-level functions: \
         {found}. Wrap the training in such a function, or name one with --entry \
         FILE.py:FUNCTION",
        .dir.display()
    )]
    NoCandidate { dir: PathBuf, found: String },
    /// Several functions take `(config, seed)`.
    #[error(
        "{}: several functions take (config, seed): {}; name the one to call with \
         --entry, e.g. --entry {}",
        .dir.display(),
        .specs.join(", "),
        .specs[0]
    )]
    Several { dir: PathBuf, specs: Vec<String> },
    /// No `(config, seed)` function, and several scripts could run as they are.
    #[error(
        "{}: no function takes (config, seed), and several scripts could run as they are \
         (argparse options or top-level constants): {}; name the one to run with --entry, e.g. \
         --entry {}",
        .dir.display(),
        .files.join(", "),
        .files[0]
    )]
    SeveralScripts { dir: PathBuf, files: Vec<String> },
    /// A scaffold file could not be written.
    #[error("writing {}", .path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl ScaffoldError {
    /// The machinery failed (the managed Python), not the script or the command line.
    pub fn is_infrastructure(&self) -> bool {
        matches!(
            self,
            Self::Start { .. } | Self::Output { .. } | Self::Failed { .. }
        )
    }

    /// `--entry` is wrong: fix the command line.
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            Self::EntrySpec { .. }
                | Self::NothingToSet { .. }
                | Self::EntryFile { .. }
                | Self::EntryMissing { .. }
                | Self::EntryParameters { .. }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_flag_or_directory_and_the_remedy() {
        let several = ScaffoldError::Several {
            dir: "d".into(),
            specs: vec!["a.py:f".into(), "b.py:g".into()],
        };
        assert_eq!(
            several.to_string(),
            "d: several functions take (config, seed): a.py:f, b.py:g; name the one to call \
             with --entry, e.g. --entry a.py:f"
        );
        let short = ScaffoldError::EntryParameters {
            spec: "t.py:f".into(),
            function: "f(x) at line 3".into(),
            takes: "only (x)".into(),
        };
        assert!(
            short
                .to_string()
                .starts_with("--entry \"t.py:f\": f(x) at line 3 takes only (x); reprolab calls"),
            "{short}"
        );
        assert!(short.is_usage() && !short.is_infrastructure());
        let write = ScaffoldError::Write {
            path: "d/config.json".into(),
            source: std::io::Error::other("read-only"),
        };
        // The cause is the source, not repeated in the message.
        assert_eq!(write.to_string(), "writing d/config.json");
    }
}
