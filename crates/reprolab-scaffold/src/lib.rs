//! Scaffolding a subject from an existing training script, as `reprolab init` does it: scan the
//! scripts with `python -m reprolab.scaffold` ([`scan`]), choose the `(config, seed)` callable
//! or, failing one, a command-line script ([`scan::choose`], [`script_entry`]), propose a
//! `[space]` entry per config key ([`space`]), write `reprolab.toml`, `config.json`, `README.md`
//! and for a script `reprolab_entry.py` ([`files`]), and turn a failed first training into what
//! to change ([`check::advice`]). The binary only wires the flags, runs the check training and
//! prints.

pub mod check;
mod error;
pub mod files;
pub mod scan;
pub mod script_entry;
pub mod space;

use std::path::PathBuf;

pub use check::advice;
pub use error::ScaffoldError;
pub use files::{Scaffold, Written, scaffold, subject_name, write};
pub use scan::{Entry, choose};

/// The files' names, joined with ", " (they all lie in the subject directory, named once).
pub fn file_names(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| {
            p.file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// What `init` tells the user besides the files it wrote: the files it kept, and, where it
/// wrote the manifest, the keys given the study's values, the keys left out for want of a
/// value, and the reads whose key is computed.
pub fn notes(entry: &Entry, scaffold: &Scaffold, written: &Written) -> Vec<String> {
    let mut notes = Vec::new();
    if !written.kept.is_empty() {
        notes.push(format!(
            "kept (already there; --force overwrites): {}",
            file_names(&written.kept)
        ));
    }
    // What the scaffold says about the space and the config holds only where it wrote them.
    let manifest_written = written.written.iter().any(|p| p.ends_with("reprolab.toml"));
    if manifest_written && !scaffold.known.is_empty() {
        notes.push(format!(
            "the study's values and fault types for: {}",
            scaffold.known.join(", ")
        ));
    }
    if manifest_written && !scaffold.unvalued.is_empty() {
        notes.push(format!(
            "read without a literal value, left out of config.json and [space] (add them): {}",
            scaffold.unvalued.join(", ")
        ));
    }
    if manifest_written && !entry.missing.is_empty() {
        notes.push(format!(
            "{} imports what the managed environment lacks: {}; pin it in [environment] \
             packages of reprolab.toml (written there as a comment)",
            entry.file,
            entry.missing.join(", ")
        ));
    }
    if let Some(script) = &entry.script {
        notes.extend(script_notes(&entry.file, script));
    }
    if entry.dynamic > 0 {
        notes.push(format!(
            "{} config reads with a computed key (like config[f\"act{{i}}\"]): add those keys \
             to config.json and [space] by hand",
            entry.dynamic
        ));
    }
    notes
}

/// What `init` says of a script without `train(config, seed)`: how it runs, what it leaves
/// alone and the line the script still needs.
fn script_notes(file: &str, script: &script_entry::ScriptEntry) -> Vec<String> {
    let seed = script
        .seed_option
        .as_deref()
        .map_or_else(String::new, |s| format!(" and the seed as {s}"));
    let entry = script_entry::ENTRY_FILE;
    let (how, what) = match script.via {
        script_entry::Via::Options => (
            format!(
                "{file} declares a command line and no train(config, seed): {entry} runs it \
                 with the options config.json sets{seed}"
            ),
            "options",
        ),
        script_entry::Via::Constants => (
            format!(
                "{file} sets its hyperparameters as top-level constants: {entry} runs it with \
                 config.json's values in their place{seed}"
            ),
            "constants",
        ),
    };
    let mut notes = vec![how];
    if !script.defaulted.is_empty() {
        notes.push(format!(
            "{what} left at {file}'s values (settings, or no literal value; add a key to \
             config.json and [space] to set one): {}",
            script.defaulted.join(", ")
        ));
    }
    if !script.positional.is_empty() {
        notes.push(format!(
            "positional arguments, which {file} needs on its command line: put their values \
             into ARGS of {}: {}",
            script_entry::ENTRY_FILE,
            script.positional.join(", ")
        ));
    }
    if !script.skipped.is_empty() {
        notes.push(format!(
            "options reprolab cannot set (count, append, several values): {}",
            script.skipped.join(", ")
        ));
    }
    if !script.calls_result {
        notes.push(format!(
            "{file} must report its metric: add `import reprolab` and, after training, \
             `reprolab.result(search=VALIDATION_METRIC, holdout=TEST_METRIC)`"
        ));
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan::Key;
    use serde_json::json;

    #[test]
    fn notes_speak_of_the_manifest_only_where_it_was_written() {
        let entry = Entry {
            file: "train.py".into(),
            function: "train".into(),
            keys: vec![
                Key {
                    key: "lr".into(),
                    value: Some(json!(0.1)),
                    choices: None,
                },
                Key {
                    key: "data".into(),
                    value: None,
                    choices: None,
                },
            ],
            dynamic: 2,
            framework: "pytorch".into(),
            script: None,
            missing: Vec::new(),
        };
        let s = scaffold("x", &entry);
        let wrote = Written {
            written: vec!["d/reprolab.toml".into(), "d/config.json".into()],
            kept: vec!["d/README.md".into()],
        };
        let said = notes(&entry, &s, &wrote);
        assert_eq!(said.len(), 4, "{said:?}");
        assert_eq!(
            said[0],
            "kept (already there; --force overwrites): README.md"
        );
        assert!(said[1].ends_with(": lr") && said[2].ends_with(": data"));
        assert!(said[3].starts_with("2 config reads with a computed key"));
        let kept = Written {
            written: Vec::new(),
            kept: vec!["d/reprolab.toml".into()],
        };
        assert_eq!(notes(&entry, &s, &kept).len(), 2);
        assert_eq!(file_names(&wrote.written), "reprolab.toml, config.json");
    }
}
