//! What the training script offers `init`, as `python -m reprolab.scaffold` reads it with `ast`
//! (the script is not run): its top-level functions, and the config keys each reads with their
//! literal values. Choosing the entry lives here too, since it is the question the scan answers.

use std::path::{Path, PathBuf};

use reprolab_exec::PythonEnv;
use serde::Deserialize;
use serde_json::Value;

use crate::error::ScaffoldError;
use crate::script_entry::{self, ENTRY_FILE, ScriptEntry};

type Result<T> = std::result::Result<T, ScaffoldError>;

/// One top-level function.
#[derive(Debug, Deserialize)]
pub struct Function {
    pub name: String,
    pub line: u32,
    pub params: Vec<String>,
    /// Its first two parameters read like `(config, seed)`.
    pub candidate: bool,
}

/// A config key the script reads.
#[derive(Debug, Deserialize)]
pub struct Key {
    pub key: String,
    /// The literal the script gives it (a `.get` default or a dict literal), if any.
    #[serde(default)]
    pub value: Option<Value>,
    /// The only values the script accepts (argparse's `choices`), when it says.
    #[serde(default)]
    pub choices: Option<Vec<Value>>,
}

/// One optional argument of the script's command line (an argparse `add_argument`).
#[derive(Debug, Clone, Deserialize)]
pub struct CliOption {
    /// The attribute argparse stores it in (`batch_size`): the config key.
    pub dest: String,
    /// The option that sets it (`--batch-size`).
    pub flag: String,
    /// `store_true` / `store_false` for a switch, `None` for an option taking a value.
    #[serde(default)]
    pub action: Option<String>,
    /// The default (a switch defaults to its opposite), when a literal.
    #[serde(default)]
    pub value: Option<Value>,
    /// `choices=[...]`, when a literal.
    #[serde(default)]
    pub choices: Option<Vec<Value>>,
    #[serde(default)]
    pub help: Option<String>,
}

/// The script's command line, as its `add_argument` calls declare it.
#[derive(Debug, Clone, Deserialize)]
pub struct CommandLine {
    pub options: Vec<CliOption>,
    /// Positional arguments: values the script needs on every command line.
    pub positional: Vec<String>,
    /// Options reprolab cannot set (`count`, `append`, constants, several values).
    pub skipped: Vec<String>,
}

/// A top-level `NAME = literal` of an upper-case name.
#[derive(Debug, Clone, Deserialize)]
pub struct Constant {
    pub name: String,
    pub value: Value,
}

/// One script's scan.
#[derive(Debug, Deserialize)]
pub struct Script {
    pub functions: Vec<Function>,
    /// Per function of two or more parameters: the keys read from its first parameter.
    pub keys: std::collections::HashMap<String, Vec<Key>>,
    /// Per function: reads whose key is computed (`config[f"act{i}"]`).
    pub dynamic: std::collections::HashMap<String, usize>,
    /// "keras" for a program that imports keras (and not torch), else "pytorch".
    #[serde(default = "pytorch")]
    pub framework: String,
    /// Its command line, when it declares one with argparse.
    #[serde(default)]
    pub argparse: Option<CommandLine>,
    /// Its top-level constants (`LR = 0.01`).
    #[serde(default)]
    pub constants: Vec<Constant>,
    /// It calls `reprolab.result(...)`.
    #[serde(default)]
    pub calls_result: bool,
    /// The modules it imports that the managed environment cannot find (its own modules beside
    /// it are found).
    #[serde(default)]
    pub missing: Vec<String>,
}

fn pytorch() -> String {
    "pytorch".into()
}

/// The entry chosen: the file (relative to the subject directory), the function and what the
/// scan found in its file.
pub struct Entry {
    pub file: String,
    pub function: String,
    pub keys: Vec<Key>,
    pub dynamic: usize,
    /// The framework its file imports ("pytorch" or "keras").
    pub framework: String,
    /// For a script without `train(config, seed)` (a command line, or constants), how
    /// `reprolab_entry.py` runs it; `file` is then the script and `function` `train` of the
    /// entry file.
    pub script: Option<ScriptEntry>,
    /// Modules the file imports that the managed environment lacks.
    pub missing: Vec<String>,
}

impl Entry {
    /// The manifest's `callable`.
    pub fn spec(&self) -> String {
        match self.script {
            Some(_) => format!("{ENTRY_FILE}:{}", self.function),
            None => format!("{}:{}", self.file, self.function),
        }
    }
}

/// Scan one script with the managed Python.
pub fn scan(env: &PythonEnv, path: &Path) -> Result<Script> {
    let mut cmd = std::process::Command::new(&env.python);
    cmd.args(["-m", "reprolab.scaffold"]).arg(path);
    if let Some(p) = &env.pythonpath {
        cmd.env("PYTHONPATH", p);
    }
    let out = cmd.output().map_err(|source| ScaffoldError::Start {
        python: env.python.clone(),
        source,
    })?;
    let stderr = || String::from_utf8_lossy(&out.stderr).trim().to_string();
    match out.status.code() {
        Some(0) => {
            serde_json::from_slice(&out.stdout).map_err(|source| ScaffoldError::Output { source })
        }
        // The scaffold's own verdict on the file (unreadable, a syntax error): the user's to fix.
        Some(2) => Err(ScaffoldError::Script(stderr())),
        _ => Err(ScaffoldError::Failed {
            path: path.to_path_buf(),
            stderr: stderr(),
        }),
    }
}

/// The `.py` files and Jupyter notebooks directly in `dir`, sorted (`init` looks at the script,
/// not at a package).
fn python_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|source| ScaffoldError::List {
            dir: dir.to_path_buf(),
            source,
        })?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "py" || x == "ipynb"))
        .collect();
    files.sort();
    Ok(files)
}

fn is_notebook(file: &str) -> bool {
    file.ends_with(".ipynb")
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
}

fn entry_of(file: String, script: &mut Script, function: &str) -> Entry {
    Entry {
        file,
        function: function.to_string(),
        keys: script.keys.remove(function).unwrap_or_default(),
        dynamic: script.dynamic.get(function).copied().unwrap_or(0),
        framework: script.framework.clone(),
        script: None,
        missing: script.missing.clone(),
    }
}

/// The entry that runs `file`, a script without `train(config, seed)`, as that function: through
/// its command line when it declares options, else through its top-level constants when any is
/// a hyperparameter.
fn script_entry_of(file: String, script: &Script) -> Option<Entry> {
    // A notebook has no command line to pass options on: its constants only.
    let options = script
        .argparse
        .as_ref()
        .filter(|l| !l.options.is_empty() && !is_notebook(&file));
    let (script_entry, keys) = match options {
        Some(line) => script_entry::plan(line, script.calls_result),
        None => {
            let planned = script_entry::plan_constants(&script.constants, script.calls_result);
            if planned.1.is_empty() {
                return None;
            }
            planned
        }
    };
    Some(Entry {
        file,
        function: "train".into(),
        keys,
        dynamic: 0,
        framework: script.framework.clone(),
        script: Some(script_entry),
        missing: script.missing.clone(),
    })
}

/// The entry `--entry FILE.py:FUNCTION` names (the file must be in `dir` and define the
/// function with at least two parameters), or `--entry FILE.py`, a script run as it is.
fn named(env: &PythonEnv, dir: &Path, spec: &str) -> Result<Entry> {
    let (file, function) = match spec.rsplit_once(':') {
        Some((file, function)) => (file, Some(function)),
        None if spec.ends_with(".py") || is_notebook(spec) => (spec, None),
        None => return Err(ScaffoldError::EntrySpec { spec: spec.into() }),
    };
    let path = dir.join(file);
    let script_kind = file.ends_with(".py") || (is_notebook(file) && function.is_none());
    if !script_kind || !path.is_file() {
        return Err(ScaffoldError::EntryFile {
            spec: spec.into(),
            path,
            dir: dir.to_path_buf(),
        });
    }
    let mut script = scan(env, &path)?;
    let Some(function) = function else {
        return script_entry_of(file.to_string(), &script)
            .ok_or_else(|| ScaffoldError::NothingToSet { spec: spec.into() });
    };
    let Some(f) = script.functions.iter().find(|f| f.name == function) else {
        let found: Vec<String> = script.functions.iter().map(describe).collect();
        return Err(ScaffoldError::EntryMissing {
            spec: spec.into(),
            file: file.into(),
            function: function.into(),
            found: list_or_none(&found),
        });
    };
    if f.params.len() < 2 {
        return Err(ScaffoldError::EntryParameters {
            spec: spec.into(),
            function: describe(f),
            takes: if f.params.is_empty() {
                "no parameter".to_string()
            } else {
                format!("only ({})", f.params.join(", "))
            },
        });
    }
    Ok(entry_of(file.to_string(), &mut script, function))
}

fn describe(f: &Function) -> String {
    format!("{}({}) at line {}", f.name, f.params.join(", "), f.line)
}

fn list_or_none(items: &[String]) -> String {
    if items.is_empty() {
        "none".into()
    } else {
        items.join(", ")
    }
}

/// The entry: the one `--entry` names, else the only `(config, seed)` candidate among the
/// top-level functions of `dir`'s scripts, else the only script that declares a command line
/// (argparse), else the only one setting hyperparameters as top-level constants; none or
/// several is an error that says the contract and what was found.
/// `reprolab_entry.py`, which an earlier `init` wrote, is not a candidate.
pub fn choose(env: &PythonEnv, dir: &Path, spec: Option<&str>) -> Result<Entry> {
    if let Some(spec) = spec {
        return named(env, dir, spec);
    }
    let mut files = python_files(dir)?;
    files.retain(|p| file_name(p) != ENTRY_FILE);
    if files.is_empty() {
        return Err(ScaffoldError::NoScript {
            dir: dir.to_path_buf(),
        });
    }
    let mut scripts = Vec::new();
    for path in &files {
        scripts.push((file_name(path), scan(env, path)?));
    }
    let candidates: Vec<(usize, String)> = scripts
        .iter()
        .enumerate()
        // A notebook's functions cannot be imported: it runs only as a script.
        .filter(|(_, (file, _))| !is_notebook(file))
        .flat_map(|(i, (file, s))| {
            s.functions
                .iter()
                .filter(|f| f.candidate)
                .map(move |f| (i, format!("{file}:{}", f.name)))
        })
        .collect();
    match candidates.as_slice() {
        [(i, spec)] => {
            let (file, script) = &mut scripts[*i];
            let function = spec.rsplit_once(':').map_or("", |(_, f)| f).to_string();
            Ok(entry_of(file.clone(), script, &function))
        }
        [] => {
            // Scripts with a command line come before scripts of constants.
            let mut runnable: Vec<Entry> = scripts
                .iter()
                .filter_map(|(file, s)| script_entry_of(file.clone(), s))
                .collect();
            let via_of = |e: &Entry| e.script.as_ref().map(|s| s.via);
            let first = runnable.iter().filter_map(via_of).min();
            runnable.retain(|e| via_of(e) == first);
            match runnable.len() {
                1 => return Ok(runnable.remove(0)),
                0 => {}
                _ => {
                    return Err(ScaffoldError::SeveralScripts {
                        dir: dir.to_path_buf(),
                        files: runnable.into_iter().map(|e| e.file).collect(),
                    });
                }
            }
            let found: Vec<String> = scripts
                .iter()
                .flat_map(|(file, s)| {
                    s.functions
                        .iter()
                        .map(move |f| format!("{file}: {}", describe(f)))
                })
                .collect();
            Err(ScaffoldError::NoCandidate {
                dir: dir.to_path_buf(),
                found: list_or_none(&found),
            })
        }
        several => {
            let specs: Vec<String> = several.iter().map(|(_, s)| s.clone()).collect();
            Err(ScaffoldError::Several {
                dir: dir.to_path_buf(),
                specs,
            })
        }
    }
}
