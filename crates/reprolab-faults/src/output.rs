//! Faulty subjects on disk: writing kept mutants, the `fault.json` record, reading a benchmark.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use reprolab_core::{Config, FaultLabel, FaultType, Goal, MANIFEST_FILE, Split, Subject};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use toml::de::{DeTable, DeValue};

use crate::campaign::{CampaignReport, GroupStats, MutantResult};
use crate::kill::KillTest;

/// The record of a faulty subject's origin and measurements.
pub const FAULT_FILE: &str = "fault.json";
/// The whole campaign report, written next to the mutants.
pub const CAMPAIGN_FILE: &str = "campaign.json";
/// The mutant's config (the faulty one) in a written mutant.
pub const CONFIG_FILE: &str = "config.json";
/// The original's config (the fix) in a written mutant.
pub const FIXED_FILE: &str = "fixed.json";

/// Where a fault comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// An artificial fault: a killed mutant of a correct subject.
    Mutation,
    /// A real fault (e.g. rebuilt from a StackOverflow post).
    Real,
    /// Written by hand, neither one mutation nor a reported bug: typically several parameters
    /// changed at once (too few epochs with a wrong output activation), to study faults with
    /// more than one cause. Reports keep it apart from the other two.
    Manual,
}

/// The mutation of an artificial fault, as in `fault.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MutationRecord {
    pub operator: FaultType,
    pub param: String,
    pub from: Value,
    pub to: Value,
}

/// `fault.json`: what a faulty subject is, shared by artificial and real faults. See
/// `docs/faults.md`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultRecord {
    /// The faulty subject's name (its directory name for mutants).
    pub id: String,
    /// The subject it derives from (the correct original for mutants).
    pub subject: String,
    pub origin: Origin,
    /// The ground-truth fault labels (the same as the manifest's `[fix] faults`).
    pub faults: Vec<FaultLabel>,
    /// The mutation, for `origin = "mutation"`; `null` for real and manual faults.
    #[serde(default)]
    pub mutation: Option<MutationRecord>,
    /// The split the measurements below are on.
    #[serde(default)]
    pub split: Option<Split>,
    /// Trainings per config (seeds `0..runs`).
    #[serde(default)]
    pub runs: Option<usize>,
    /// The metric's name and goal.
    #[serde(default)]
    pub metric: Option<String>,
    #[serde(default)]
    pub goal: Option<Goal>,
    /// The faulty config's metric over its finished runs.
    #[serde(default)]
    pub faulty: Option<GroupStats>,
    /// The fixed config's metric over its finished runs.
    #[serde(default)]
    pub fixed: Option<GroupStats>,
    /// The p-value of `test` between fixed and faulty.
    #[serde(default, with = "reprolab_core::fnum::opt_float")]
    pub p_value: Option<f64>,
    #[serde(default)]
    pub test: Option<KillTest>,
    /// Cohen's d(fixed, faulty), pooled std with ddof 1 (positive: the faulty config scores
    /// lower).
    #[serde(default, with = "reprolab_core::fnum::opt_float")]
    pub cohens_d: Option<f64>,
    /// Where a real fault comes from (a URL, a post id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// One or two lines for humans.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

impl FaultRecord {
    /// The record of a kept mutant of `report`, written to the directory named `id`.
    pub fn for_mutant(report: &CampaignReport, m: &MutantResult, id: &str) -> FaultRecord {
        let d = &m.decision;
        FaultRecord {
            id: id.to_string(),
            subject: report.subject.clone(),
            origin: Origin::Mutation,
            faults: vec![m.mutation.label.clone()],
            mutation: Some(MutationRecord {
                operator: m.mutation.operator,
                param: m.mutation.param.clone(),
                from: m.mutation.from.clone(),
                to: m.mutation.to.clone(),
            }),
            split: Some(report.settings.split),
            runs: Some(report.settings.runs),
            metric: Some(report.metric.clone()),
            goal: Some(report.goal),
            faulty: Some(GroupStats {
                mean: d.mutant_mean,
                std: d.mutant_std,
                n: d.mutant_n,
            }),
            fixed: Some(GroupStats {
                mean: d.original_mean,
                std: d.original_std,
                n: d.original_n,
            }),
            p_value: Some(d.p_value),
            test: Some(report.settings.test),
            cohens_d: Some(d.cohens_d),
            source: None,
            description: None,
        }
    }

    /// Reads and checks a `fault.json`.
    pub fn read(path: &Path) -> Result<FaultRecord, BenchmarkError> {
        let text = fs::read_to_string(path).map_err(|e| BenchmarkError::Io {
            path: path.to_path_buf(),
            source: e,
        })?;
        serde_json::from_str(&text).map_err(|e| BenchmarkError::FaultJson {
            path: path.to_path_buf(),
            source: e,
        })
    }
}

/// Why a benchmark directory cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum BenchmarkError {
    #[error("{}", path.display())]
    Io { path: PathBuf, source: io::Error },
    #[error("{}: not a valid manifest: {message}", path.display())]
    Manifest { path: PathBuf, message: String },
    #[error("{}: not a valid fault record", path.display())]
    FaultJson {
        path: PathBuf,
        source: serde_json::Error,
    },
}

fn skipped_entry(name: &str) -> bool {
    name.starts_with('.') || name == "__pycache__"
}

/// Every faulty subject below `dir` (and `dir` itself): each directory holding a
/// `reprolab.toml` with a `[fix]` table, with its `fault.json` when it has one, sorted by
/// path. Hidden entries and `__pycache__` are skipped; the search does not descend into a
/// subject directory (one holding a `reprolab.toml`). Manifests are only checked for a `[fix]`
/// table here; load them with `Subject::load` for the full validation.
pub fn read_benchmark(dir: &Path) -> Result<Vec<(PathBuf, Option<FaultRecord>)>, BenchmarkError> {
    let mut out = Vec::new();
    walk(dir, &mut out)?;
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

fn walk(dir: &Path, out: &mut Vec<(PathBuf, Option<FaultRecord>)>) -> Result<(), BenchmarkError> {
    let io_err = |path: &Path| {
        let path = path.to_path_buf();
        move |source| BenchmarkError::Io { path, source }
    };
    let manifest = dir.join(MANIFEST_FILE);
    if manifest.is_file() {
        let text = fs::read_to_string(&manifest).map_err(io_err(&manifest))?;
        let table: toml::Table = toml::from_str(&text).map_err(|e| BenchmarkError::Manifest {
            path: manifest.clone(),
            message: e.message().trim().to_string(),
        })?;
        if table.contains_key("fix") {
            let fault = dir.join(FAULT_FILE);
            let record = if fault.is_file() {
                Some(FaultRecord::read(&fault)?)
            } else {
                None
            };
            out.push((dir.to_path_buf(), record));
        }
        return Ok(());
    }
    for entry in fs::read_dir(dir).map_err(io_err(dir))? {
        let entry = entry.map_err(io_err(dir))?;
        let name = entry.file_name();
        if skipped_entry(&name.to_string_lossy()) {
            continue;
        }
        if entry.file_type().map_err(io_err(&entry.path()))?.is_dir() {
            walk(&entry.path(), out)?;
        }
    }
    Ok(())
}

/// Writes each kept mutant of `report` as a faulty subject directory
/// `out/<subject>-<mutation id>/`: a copy of the subject's files (hidden entries, `__pycache__`
/// and `.reprolab` skipped), `config.json` = the mutant config, `fixed.json` = the original
/// config, `reprolab.toml` with `name` = the directory name, `config = "config.json"` and a
/// `[fix]` table `{ config = "fixed.json", faults = [label] }` (replacing any existing one),
/// and `fault.json`. Also writes `out/campaign.json`, the whole report. Every written subject
/// is loaded back with `Subject::load` as a check.
///
/// A directory of that name that already holds a `fault.json` (an earlier run's mutant) is
/// replaced; any other existing directory is an error. Returns the directories written.
pub fn write_mutants(
    report: &CampaignReport,
    subject: &Subject,
    out: &Path,
) -> io::Result<Vec<PathBuf>> {
    if report.subject != subject.name {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "the campaign report is about {}, not {}",
                report.subject, subject.name
            ),
        ));
    }
    fs::create_dir_all(out)?;
    let out_canon = fs::canonicalize(out)?;
    let manifest_text = fs::read_to_string(&subject.manifest_path)?;
    let mut written = Vec::new();
    let mut names: Vec<String> = Vec::new();
    for m in report.kept() {
        let base = format!("{}-{}", subject.name, m.mutation.id());
        let mut name = base.clone();
        let mut k = 2;
        while names.contains(&name) {
            name = format!("{base}-{k}");
            k += 1;
        }
        names.push(name.clone());
        let dir = out.join(&name);
        if dir.exists() {
            if dir.join(FAULT_FILE).is_file() {
                fs::remove_dir_all(&dir)?;
            } else {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!(
                        "{} exists and is not a mutant written by reprolab (no {FAULT_FILE}); \
                         remove it or write to another directory",
                        dir.display()
                    ),
                ));
            }
        }
        // The original's README describes the correct program; the mutant gets its own.
        let readme = subject.dir.join("README.md");
        copy_tree(
            &subject.dir,
            &dir,
            &[&out_canon, &subject.manifest_path, &readme],
        )?;
        fs::write(dir.join("README.md"), mutant_readme(subject, m))?;

        let mutant = m.mutation.apply(&report.original_config);
        write_json(&dir.join(CONFIG_FILE), &mutant)?;
        write_json(&dir.join(FIXED_FILE), &report.original_config)?;
        let manifest = mutant_manifest(&manifest_text, &name, &m.mutation.label)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        fs::write(dir.join(MANIFEST_FILE), manifest)?;
        let record = FaultRecord::for_mutant(report, m, &name);
        write_json(&dir.join(FAULT_FILE), &record)?;

        let loaded = Subject::load(&dir).map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "the written mutant {} does not load:\n{}",
                    dir.display(),
                    reprolab_core::chain(&e)
                ),
            )
        })?;
        debug_assert_eq!(loaded.config, mutant);
        written.push(dir);
    }
    write_json(&out.join(CAMPAIGN_FILE), report)?;
    Ok(written)
}

fn mutant_readme(subject: &Subject, m: &MutantResult) -> String {
    let d = &m.decision;
    format!(
        "# {name}-{id}: an artificial fault\n\nGenerated by `reprolab mutate` from the correct subject `{orig}`: \
         operator {op}, `{param}`: {from} → {to} (ground truth: {label}; the fix is `fixed.json`).\n\n\
         Killed over {n} trainings each: {metric} {mm:.4} ± {ms:.4} (mutant) vs {om:.4} ± {os:.4} (original), \
         p = {p:.2e}, Cohen's d = {cd:.2}. The rest of this directory is a copy of `{orig}`.\n",
        name = subject.name,
        id = m.mutation.id(),
        orig = subject.name,
        op = m.mutation.operator,
        param = m.mutation.param,
        from = m.mutation.from,
        to = m.mutation.to,
        label = m.mutation.label,
        n = d.mutant_n,
        metric = subject.metric.name,
        mm = d.mutant_mean,
        ms = d.mutant_std,
        om = d.original_mean,
        os = d.original_std,
        p = d.p_value,
        cd = d.cohens_d,
    )
}

fn write_json<T: Serialize + ?Sized>(path: &Path, value: &T) -> io::Result<()> {
    let mut text = serde_json::to_string_pretty(value).map_err(io::Error::other)?;
    text.push('\n');
    fs::write(path, text)
}

/// Copies the regular files below `from` into `to` (created), skipping hidden entries,
/// `__pycache__` and the paths in `except` (compared canonically). Links to files are copied as
/// files; links to directories are not followed.
fn copy_tree(from: &Path, to: &Path, except: &[&Path]) -> io::Result<()> {
    fs::create_dir_all(to)?;
    for entry in fs::read_dir(from)? {
        let entry = entry?;
        let name = entry.file_name();
        if skipped_entry(&name.to_string_lossy()) {
            continue;
        }
        let path = entry.path();
        let canon = fs::canonicalize(&path)?;
        if except.iter().any(|e| *e == canon) {
            continue;
        }
        let ft = entry.file_type()?;
        if ft.is_dir() {
            copy_tree(&path, &to.join(&name), except)?;
        } else if ft.is_file() || (ft.is_symlink() && fs::metadata(&path)?.is_file()) {
            fs::copy(&path, to.join(&name))?;
        }
    }
    Ok(())
}

/// The manifest of a mutant: the original's with `name`, `config = "config.json"` and a new
/// `[fix]`. Keys keep the original's order (`toml::Table` sorts them; the order is restored
/// from the parse's spans); comments are not kept.
pub(crate) fn mutant_manifest(
    text: &str,
    name: &str,
    label: &FaultLabel,
) -> Result<String, String> {
    let mut table: toml::Table =
        toml::from_str(text).map_err(|e| format!("reprolab.toml: {}", e.message().trim()))?;
    let spans = DeTable::parse(text).ok().map(|t| t.into_inner());
    table.insert("name".into(), toml::Value::String(name.to_string()));
    table.insert(
        "config".into(),
        toml::Value::String(CONFIG_FILE.to_string()),
    );
    let mut fix = toml::Table::new();
    fix.insert("config".into(), toml::Value::String(FIXED_FILE.to_string()));
    fix.insert(
        "faults".into(),
        toml::Value::Array(vec![toml::Value::String(label.to_string())]),
    );
    table.insert("fix".into(), toml::Value::Table(fix));
    Ok(render(&table, spans.as_ref()))
}

/// The position of the key at `path` in the original text (`usize::MAX` for a new key).
fn position(spans: Option<&DeTable<'_>>, path: &[&str]) -> usize {
    let Some(mut t) = spans else {
        return usize::MAX;
    };
    for (i, part) in path.iter().enumerate() {
        let Some((k, v)) = t.iter().find(|(k, _)| k.get_ref().as_ref() == *part) else {
            return usize::MAX;
        };
        if i + 1 == path.len() {
            return k.span().start;
        }
        match v.get_ref() {
            DeValue::Table(inner) => t = inner,
            _ => return usize::MAX,
        }
    }
    usize::MAX
}

fn ordered<'t>(table: &'t toml::Table, spans: Option<&DeTable<'_>>, path: &[&str]) -> Vec<&'t str> {
    let mut keys: Vec<&str> = table.keys().map(String::as_str).collect();
    // Stable: new keys (usize::MAX) stay in the table's order, after the known ones.
    keys.sort_by_key(|k| {
        let mut p = path.to_vec();
        p.push(k);
        position(spans, &p)
    });
    keys
}

fn key(k: &str) -> String {
    if !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        k.to_string()
    } else {
        toml::Value::String(k.to_string()).to_string()
    }
}

fn inline(table: &toml::Table, spans: Option<&DeTable<'_>>, path: &[&str]) -> String {
    if table.is_empty() {
        return "{}".into();
    }
    let parts: Vec<String> = ordered(table, spans, path)
        .into_iter()
        .map(|k| {
            let v = &table[k];
            let text = match v {
                toml::Value::Table(t) => {
                    let mut p = path.to_vec();
                    p.push(k);
                    inline(t, spans, &p)
                }
                other => other.to_string(),
            };
            format!("{} = {text}", key(k))
        })
        .collect();
    format!("{{ {} }}", parts.join(", "))
}

/// Top-level values first, then one `[table]` per top-level table, its sub-tables inline.
fn render(table: &toml::Table, spans: Option<&DeTable<'_>>) -> String {
    let keys = ordered(table, spans, &[]);
    let mut out = String::new();
    for k in &keys {
        let v = &table[*k];
        if !v.is_table() {
            out.push_str(&format!("{} = {v}\n", key(k)));
        }
    }
    for k in &keys {
        let toml::Value::Table(t) = &table[*k] else {
            continue;
        };
        out.push_str(&format!("\n[{}]\n", key(k)));
        for sk in ordered(t, spans, &[k]) {
            let text = match &t[sk] {
                toml::Value::Table(inner) => inline(inner, spans, &[k, sk]),
                other => other.to_string(),
            };
            out.push_str(&format!("{} = {text}\n", key(sk)));
        }
    }
    out
}

/// Reads a config JSON file (helper for tests and callers).
pub fn read_config(path: &Path) -> io::Result<Config> {
    let text = fs::read_to_string(path)?;
    Config::from_json_str(&text).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}
