//! The files `init` writes: reprolab.toml, config.json and README.md, made from the chosen entry
//! and the keys the script reads; an existing file is kept unless `--force`.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::ScaffoldError;
use crate::scan::Entry;
use crate::script_entry::{self, ENTRY_FILE};
use crate::space;

/// What `init` will write, and what it could not.
pub struct Scaffold {
    pub manifest: String,
    pub config: String,
    pub readme: String,
    /// `reprolab_entry.py`, for a command-line script.
    pub entry_file: Option<String>,
    /// Keys read without a literal value: left out of config.json and [space].
    pub unvalued: Vec<String>,
    /// Keys given the study's values and fault type.
    pub known: Vec<String>,
}

/// A subject name the manifest accepts (letters, digits, `-`, `_`, `.`; not starting with `.`)
/// made of the directory's name.
pub fn subject_name(dir: &Path) -> String {
    let raw = dir
        .canonicalize()
        .ok()
        .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_default();
    let name: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '-'
            }
        })
        .collect();
    let name = name.trim_start_matches('.');
    if name.is_empty() {
        "subject".into()
    } else {
        name.into()
    }
}

pub fn scaffold(name: &str, entry: &Entry) -> Scaffold {
    let mut config = Map::new();
    let mut space_lines = Vec::new();
    let (mut unvalued, mut known) = (Vec::new(), Vec::new());
    for key in &entry.keys {
        let proposed = key
            .value
            .as_ref()
            .and_then(|v| Some((v, space::entry(&key.key, v, key.choices.as_deref())?)));
        let Some((value, e)) = proposed else {
            unvalued.push(key.key.clone());
            continue;
        };
        if e.known {
            known.push(key.key.clone());
        }
        space_lines.push(format!("{} = {}", Value::from(key.key.as_str()), e.toml));
        config.insert(key.key.clone(), value.clone());
    }
    let manifest = format!(
        r#"# Written by `reprolab init`; the format is docs/manifest.md.
name = "{name}"
description = ""
task = "classification"            # classification | regression
framework = "{framework}"          # pytorch | keras (read from the script's imports)
config = "config.json"

[dataset]
name = "unknown"                   # what {file} trains on
description = ""

[entry]
callable = "{spec}"                # {calls}

[metric]
# accuracy/max by default; for a loss or an error use e.g. name = "mae", goal = "min"
name = "accuracy"
goal = "max"

[limits]
timeout_s = 600
memory_mb = 4096
output_mb = 16
disk_mb = 8192                     # what one training may write (checkpoints, TMPDIR)

{environment}# Every key of config.json, typed. Keys the study knows (lr, batch_size, epochs, optimizer,
# activation, loss, units, initialisers) have its values and fault type: check that {file}
# understands each value (reprolab.nn's activation(), optimizer() and loss() do). The other keys
# hold their current value only: widen them to search them.
[space]
{space}
"#,
        file = entry.file,
        framework = entry.framework,
        spec = entry.spec(),
        calls = match entry.script {
            Some(_) => format!(
                "runs {} with config.json as its options; reprolab.result(...) is the metric",
                entry.file
            ),
            None => format!(
                "{}(config, seed) -> {{\"search\": ..., \"holdout\": ...}}",
                entry.function
            ),
        },
        space = space_lines.join("\n"),
        environment = environment_block(&entry.file, &entry.missing),
    );
    let config =
        serde_json::to_string_pretty(&Value::Object(config)).expect("JSON values serialize") + "\n";
    let called = match entry.script {
        Some(_) => format!(
            "`{spec}` runs `{file}` with the options config.json sets; `{file}` reports the \
             metric on the search and holdout splits with `reprolab.result(...)`",
            spec = entry.spec(),
            file = entry.file
        ),
        None => format!(
            "`{}`, called as `{}(config, seed)`; it returns the metric on the search and \
             holdout splits",
            entry.spec(),
            entry.function
        ),
    };
    let readme = format!(
        "# {name}\n\nA reprolab subject made by `reprolab init` from `{file}`.\n\n\
         - Entry: {called}.\n\
         - Data: TODO: what it trains on, and how it splits search and holdout.\n\
         - Config: `config.json`, searched within `[space]` of `reprolab.toml`.\n\n\
         Measure it with `reprolab eval . --runs 10`.\n",
        file = entry.file,
    );
    Scaffold {
        manifest,
        config,
        readme,
        entry_file: entry
            .script
            .as_ref()
            .map(|s| script_entry::entry_file(&entry.file, s)),
        unvalued,
        known,
    }
}

/// The distribution that provides an importable module, where the two names differ.
fn distribution_of(module: &str) -> &str {
    match module {
        "PIL" => "pillow",
        "cv2" => "opencv-python",
        "sklearn" => "scikit-learn",
        "skimage" => "scikit-image",
        "yaml" => "pyyaml",
        "bs4" => "beautifulsoup4",
        other => other,
    }
}

/// A commented `[environment]` table naming the packages the script imports and the managed
/// environment lacks, for the user to pin (the version is theirs to choose); empty when none.
fn environment_block(file: &str, missing: &[String]) -> String {
    if missing.is_empty() {
        return String::new();
    }
    let pins: Vec<String> = missing
        .iter()
        .map(|m| format!("\"{}==VERSION\"", distribution_of(m)))
        .collect();
    format!(
        "# {file} imports {}, which the managed environment lacks: pin the versions you use and\n\
         # uncomment; the first training installs them.\n\
         # [environment]\n# packages = [{}]\n\n",
        missing.join(", "),
        pins.join(", ")
    )
}

/// What happened to each file.
pub struct Written {
    pub written: Vec<PathBuf>,
    pub kept: Vec<PathBuf>,
}

/// Write the files into `dir`; an existing one is kept (and listed) unless `force`.
pub fn write(dir: &Path, s: &Scaffold, force: bool) -> Result<Written, ScaffoldError> {
    let mut out = Written {
        written: Vec::new(),
        kept: Vec::new(),
    };
    let files = [
        ("reprolab.toml", Some(&s.manifest)),
        ("config.json", Some(&s.config)),
        ("README.md", Some(&s.readme)),
        (ENTRY_FILE, s.entry_file.as_ref()),
    ];
    for (file, text) in files {
        let Some(text) = text else { continue };
        let path = dir.join(file);
        if path.exists() && !force {
            out.kept.push(path);
            continue;
        }
        if let Err(source) = std::fs::write(&path, text) {
            return Err(ScaffoldError::Write { path, source });
        }
        out.written.push(path);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan::Key;
    use serde_json::json;

    fn key(name: &str, value: Option<Value>) -> Key {
        Key {
            key: name.into(),
            value,
            choices: None,
        }
    }

    #[test]
    fn the_manifest_and_config_load_as_a_subject() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("train.py"),
            "def train(config, seed): pass\n",
        )
        .unwrap();
        let entry = Entry {
            file: "train.py".into(),
            function: "train".into(),
            keys: vec![
                key("lr", Some(json!(0.01))),
                key("hidden", Some(json!(32))),
                key("dropout", Some(json!(0.2))),
                key("data_dir", None),
            ],
            dynamic: 0,
            framework: "keras".into(),
            script: None,
            missing: vec!["PIL".into()],
        };
        let s = scaffold("my-model", &entry);
        assert_eq!(s.unvalued, ["data_dir"]);
        assert_eq!(s.known, ["lr", "hidden"]);
        let w = write(dir.path(), &s, false).unwrap();
        assert_eq!(w.written.len(), 3);
        let subject = reprolab_core::manifest::Subject::load(dir.path()).unwrap();
        assert_eq!(subject.name, "my-model");
        assert_eq!(subject.framework.as_str(), "keras");
        assert_eq!(subject.config.get("dropout"), Some(&json!(0.2)));
        assert_eq!(subject.space.names().count(), 3);
        // The missing import is named, commented out (the version is the user's to choose).
        assert!(
            s.manifest.contains("# packages = [\"pillow==VERSION\"]"),
            "{}",
            s.manifest
        );
        assert!(subject.packages.is_empty());
        // A second run keeps what exists.
        std::fs::write(dir.path().join("README.md"), "mine").unwrap();
        let w = write(dir.path(), &s, false).unwrap();
        assert!(w.written.is_empty());
        assert_eq!(w.kept.len(), 3);
        assert_eq!(
            std::fs::read_to_string(dir.path().join("README.md")).unwrap(),
            "mine"
        );
    }

    #[test]
    fn names_are_made_valid() {
        let dir = tempfile::tempdir().unwrap();
        let odd = dir.path().join("my model (v2)");
        std::fs::create_dir(&odd).unwrap();
        assert_eq!(subject_name(&odd), "my-model--v2-");
    }
}
