//! What the training script offers `init`, as `python -m reprolab.scaffold` reads it with `ast`
//! (the script is not run): its top-level functions, and the config keys each reads with their
//! literal values. Choosing the entry lives here too, since it is the question the scan answers.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use reprolab_exec::PythonEnv;
use serde::Deserialize;
use serde_json::Value;

use crate::error::Infrastructure;

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
}

impl Entry {
    pub fn spec(&self) -> String {
        format!("{}:{}", self.file, self.function)
    }
}

const CONTRACT: &str = "reprolab calls a top-level function FUNCTION(config, seed): config is \
the dict of config.json, seed an int, and it returns {\"search\": METRIC, \"holdout\": METRIC} \
(the metric on two held-out splits)";

/// Scan one script with the managed Python.
pub fn scan(env: &PythonEnv, path: &Path) -> Result<Script> {
    let mut cmd = std::process::Command::new(&env.python);
    cmd.args(["-m", "reprolab.scaffold"]).arg(path);
    if let Some(p) = &env.pythonpath {
        cmd.env("PYTHONPATH", p);
    }
    let out = cmd
        .output()
        .with_context(|| format!("running {}", env.python.display()))
        .context(Infrastructure("reading the training script"))?;
    match out.status.code() {
        Some(0) => serde_json::from_slice(&out.stdout)
            .context("unreadable output of python -m reprolab.scaffold")
            .context(Infrastructure("reading the training script")),
        // The scaffold's own verdict on the file (unreadable, a syntax error): the user's to fix.
        Some(2) => bail!("{}", String::from_utf8_lossy(&out.stderr).trim()),
        _ => Err(anyhow::anyhow!(
            "python -m reprolab.scaffold {} failed: {}",
            path.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
        .context(Infrastructure("reading the training script")),
    }
}

/// The `.py` files directly in `dir`, sorted (`init` looks at the script, not at a package).
fn python_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("{}: cannot list the directory", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "py"))
        .collect();
    files.sort();
    Ok(files)
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
    }
}

/// The entry `--entry FILE.py:FUNCTION` names: the file must be in `dir` and define the
/// function with at least two parameters.
fn named(env: &PythonEnv, dir: &Path, spec: &str) -> Result<Entry> {
    let Some((file, function)) = spec.rsplit_once(':') else {
        bail!("--entry {spec:?}: expected FILE.py:FUNCTION, like train.py:train");
    };
    let path = dir.join(file);
    if !file.ends_with(".py") || !path.is_file() {
        bail!(
            "--entry {spec:?}: {} is not a Python file in {}",
            path.display(),
            dir.display()
        );
    }
    let mut script = scan(env, &path)?;
    let Some(f) = script.functions.iter().find(|f| f.name == function) else {
        let found: Vec<String> = script.functions.iter().map(describe).collect();
        bail!(
            "--entry {spec:?}: {file} has no top-level function {function:?}; {CONTRACT}. \
             Its top-level functions: {}",
            list_or_none(&found)
        );
    };
    if f.params.len() < 2 {
        bail!(
            "--entry {spec:?}: {} takes {}; {CONTRACT}",
            describe(f),
            if f.params.is_empty() {
                "no parameter".to_string()
            } else {
                format!("only ({})", f.params.join(", "))
            }
        );
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
/// top-level functions of `dir`'s scripts; none or several is an error that says the contract
/// and what was found.
pub fn choose(env: &PythonEnv, dir: &Path, spec: Option<&str>) -> Result<Entry> {
    if let Some(spec) = spec {
        return named(env, dir, spec);
    }
    let files = python_files(dir)?;
    if files.is_empty() {
        bail!(
            "{}: no .py file here; put the training script in this directory ({CONTRACT})",
            dir.display()
        );
    }
    let mut scripts = Vec::new();
    for path in &files {
        scripts.push((file_name(path), scan(env, path)?));
    }
    let candidates: Vec<(usize, String)> = scripts
        .iter()
        .enumerate()
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
            let found: Vec<String> = scripts
                .iter()
                .flat_map(|(file, s)| {
                    s.functions
                        .iter()
                        .map(move |f| format!("{file}: {}", describe(f)))
                })
                .collect();
            bail!(
                "{}: no function to call: {CONTRACT}. Found no top-level function taking \
                 (config, seed); top-level functions: {}. Wrap the training in such a function, \
                 or name one with --entry FILE.py:FUNCTION",
                dir.display(),
                list_or_none(&found)
            )
        }
        several => {
            let specs: Vec<String> = several.iter().map(|(_, s)| s.clone()).collect();
            bail!(
                "{}: several functions take (config, seed): {}; name the one to call with \
                 --entry, e.g. --entry {}",
                dir.display(),
                specs.join(", "),
                specs[0]
            )
        }
    }
}
