//! Subjects and their manifest, `reprolab.toml` (format: docs/manifest.md).
//!
//! Loading walks the parsed TOML by hand rather than through serde derive, so that every problem
//! is reported with its file, `line:column`, dotted key, what was found and what was expected,
//! and so that all problems are reported at once rather than only the first.

use std::collections::BTreeSet;
use std::fmt;
use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;
use toml::Value as Toml;
use toml::de::{DeTable, DeValue};

pub use crate::config::Config;
use crate::error::{Issue, IssueKind, ManifestError, Position, closest, did_you_mean};
use crate::fault::{FaultLabel, FaultType, all_codes};
use crate::hash::hash_tree_skipping;
use crate::space::{
    ConfigIssueKind, Param, ParamKind, SearchSpace, format_f64, format_list, format_value,
};

/// The manifest's file name inside a subject directory.
pub const MANIFEST_FILE: &str = "reprolab.toml";

/// The placeholders a command template may use: `{python}` the managed interpreter, `{config}`
/// a JSON file holding the config, `{seed}`, `{result}` where the script writes its result,
/// `{workdir}` a fresh scratch directory.
pub const PLACEHOLDERS: [&str; 5] = ["python", "config", "seed", "result", "workdir"];

/// A DL training program that reprolab runs: a directory with a `reprolab.toml`.
#[derive(Debug, Clone, PartialEq)]
pub struct Subject {
    /// The subject directory, absolute and canonical.
    pub dir: PathBuf,
    /// The manifest, absolute (`dir/reprolab.toml` unless loaded from another file name).
    pub manifest_path: PathBuf,
    pub name: String,
    /// Empty when the manifest has none.
    pub description: String,
    pub task: Task,
    pub framework: Framework,
    /// The tensor library Keras runs on (`backend`; always torch for a PyTorch subject).
    pub backend: KerasBackend,
    pub dataset: Dataset,
    pub entry: Entry,
    pub metric: Metric,
    /// The current config's file, absolute.
    pub config_path: PathBuf,
    /// The current config, valid against `space`.
    pub config: Config,
    pub space: SearchSpace,
    pub limits: Limits,
    /// The known fix (ground truth), if the manifest has one.
    pub fix: Option<Fix>,
    /// Packages the program needs beyond the managed environment (`[environment] packages`),
    /// installed into it on first use.
    pub packages: Vec<Package>,
}

/// A package a subject needs: a release from PyPI (`torchvision==0.25.0`), or a wheel file in
/// the subject directory (`wheels/mylib-0.1-py3-none-any.whl`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Package {
    /// The distribution's name, normalised (PEP 503: lower case, runs of `-_.` as `-`).
    pub dist: String,
    pub version: String,
    /// The wheel, absolute; `None` for a release from the index.
    pub wheel: Option<PathBuf>,
}

impl Package {
    /// `dist==version`: what the subject's source hash records.
    pub fn pin(&self) -> String {
        format!("{}=={}", self.dist, self.version)
    }

    /// What the installer is given: the wheel's path, else the pin.
    pub fn install_spec(&self) -> String {
        match &self.wheel {
            Some(w) => w.display().to_string(),
            None => self.pin(),
        }
    }
}

/// PEP 503 normalisation of a distribution name.
fn normalise_dist(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        if matches!(c, '-' | '_' | '.') {
            if !out.ends_with('-') {
                out.push('-');
            }
        } else {
            out.push(c.to_ascii_lowercase());
        }
    }
    out
}

/// The name and version of `NAME==VERSION` (trimmed), when the name is a PyPI name and the
/// version starts with a digit and holds only version characters (`*` only when `wildcard`:
/// `3.3.*`).
pub fn split_pin(text: &str, wildcard: bool) -> Option<(&str, &str)> {
    let (name, version) = text.split_once("==")?;
    let (name, version) = (name.trim(), version.trim());
    let name_ok = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
    let version_ok = version.chars().next().is_some_and(|c| c.is_ascii_digit())
        && version
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || ".+!-".contains(c) || (wildcard && c == '*'));
    (name_ok && version_ok).then_some((name, version))
}

/// `NAME==VERSION` (an exact version) as a [`Package`] from the index; `None` when it is not
/// of that form.
fn parse_pin(text: &str) -> Option<Package> {
    let (name, version) = split_pin(text, false)?;
    Some(Package {
        dist: normalise_dist(name),
        version: version.to_string(),
        wheel: None,
    })
}

/// The distribution and version a wheel's file name states (PEP 427:
/// `NAME-VERSION(-BUILD)?-PY-ABI-PLATFORM.whl`).
fn wheel_name(file: &str) -> Option<(String, String)> {
    let stem = file.strip_suffix(".whl")?;
    let parts: Vec<&str> = stem.split('-').collect();
    if !(5..=6).contains(&parts.len()) || parts[0].is_empty() || parts[1].is_empty() {
        return None;
    }
    Some((normalise_dist(parts[0]), parts[1].to_string()))
}

/// `Display` as the keyword the manifest spells ([`Task::as_str`] and the like).
macro_rules! display_as_str {
    ($($t:ty),*) => {$(
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    )*};
}

display_as_str!(Task, Framework, KerasBackend, Goal);

/// What the subject learns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Task {
    Classification,
    Regression,
}

impl Task {
    pub fn as_str(self) -> &'static str {
        match self {
            Task::Classification => "classification",
            Task::Regression => "regression",
        }
    }
}

/// The DL framework the subject's code is written for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Framework {
    Pytorch,
    Keras,
}

impl Framework {
    pub fn as_str(self) -> &'static str {
        match self {
            Framework::Pytorch => "pytorch",
            Framework::Keras => "keras",
        }
    }
}

/// Keras 3's backend: fixed when Keras is first imported, so a warm worker holds one of them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KerasBackend {
    /// The default: the managed environment's own torch.
    #[default]
    Torch,
    /// tensorflow-cpu, an optional extra of the managed environment installed on first use.
    Tensorflow,
}

impl KerasBackend {
    pub fn as_str(self) -> &'static str {
        match self {
            KerasBackend::Torch => "torch",
            KerasBackend::Tensorflow => "tensorflow",
        }
    }
}

/// The data the subject trains and is judged on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dataset {
    pub name: String,
    /// Empty when the manifest has none.
    pub description: String,
}

/// How the subject is run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Entry {
    /// A Python callable `train(config, seed) -> dict`, run by a warm worker:
    /// `callable = "train.py:train"` gives `file = "train.py"`, `function = "train"`.
    Callable { file: String, function: String },
    /// A command template run cold for each evaluation, e.g.
    /// `{python} train.py --config {config} --seed {seed} --out {result}`.
    Command { template: String },
}

impl Entry {
    /// `train.py:train` for a callable, the template for a command.
    pub fn spec(&self) -> String {
        match self {
            Entry::Callable { file, function } => format!("{file}:{function}"),
            Entry::Command { template } => template.clone(),
        }
    }

    pub fn is_callable(&self) -> bool {
        matches!(self, Entry::Callable { .. })
    }
}

/// The metric the subject reports, and which way is better.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Metric {
    pub name: String,
    pub goal: Goal,
}

impl Metric {
    /// `"max"` or `"min"`.
    pub fn goal_name(&self) -> &'static str {
        self.goal.as_str()
    }

    /// The values the metric can take, when its name says so and every run agrees: a
    /// proportion (accuracy, F1, precision, recall, AUC, IoU, Dice) lies in `[0, 1]`, an error
    /// or a loss (MAE, MSE, RMSE, MAPE, `*_loss`, `*_error`) in `[0, ∞)`. `None` when the name
    /// says nothing or a run lies outside (an accuracy in percent). Confidence intervals are
    /// cut to it.
    pub fn range(&self, values: &[f64]) -> Option<(f64, f64)> {
        const PROPORTIONS: &[&str] = &[
            "accuracy",
            "acc",
            "f1",
            "precision",
            "recall",
            "auc",
            "iou",
            "miou",
            "dice",
            "jaccard",
        ];
        const ERRORS: &[&str] = &["mae", "mse", "rmse", "mape", "msle", "loss", "error", "err"];
        let name = self.name.to_lowercase();
        let words: Vec<&str> = name.split(|c: char| !c.is_ascii_alphanumeric()).collect();
        let named = |list: &[&str]| words.iter().any(|w| list.contains(w));
        let range = if named(PROPORTIONS) {
            (0.0, 1.0)
        } else if named(ERRORS) {
            (0.0, f64::INFINITY)
        } else {
            return None;
        };
        values
            .iter()
            .all(|v| !v.is_finite() || (range.0..=range.1).contains(v))
            .then_some(range)
    }
}

/// Whether a larger or a smaller metric is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Goal {
    Max,
    Min,
}

impl Goal {
    pub fn as_str(self) -> &'static str {
        match self {
            Goal::Max => "max",
            Goal::Min => "min",
        }
    }

    /// Whether `a` is strictly better than `b`. NaN is never better, and anything that is not
    /// NaN is better than NaN.
    pub fn better(self, a: f64, b: f64) -> bool {
        match (a.is_nan(), b.is_nan()) {
            (true, _) => false,
            (false, true) => true,
            _ => match self {
                Goal::Max => a > b,
                Goal::Min => a < b,
            },
        }
    }

    /// Whether `a` is at least as good as `b` (NaN only ties with NaN).
    pub fn better_or_equal(self, a: f64, b: f64) -> bool {
        !self.better(b, a)
    }

    /// `+1` for `max`, `-1` for `min`: multiply a metric by it to make "larger is better".
    pub fn sign(self) -> f64 {
        match self {
            Goal::Max => 1.0,
            Goal::Min => -1.0,
        }
    }

    /// The better of two metrics (`a` on ties).
    pub fn best(self, a: f64, b: f64) -> f64 {
        if self.better(b, a) { b } else { a }
    }
}

/// Resource limits of one evaluation.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Limits {
    /// Wall-clock limit in seconds (default 600).
    pub timeout_s: f64,
    /// Resident memory limit of the evaluation's process group in MiB (default 4096).
    pub memory_mb: u64,
    /// Limit on what the evaluation prints, in MiB (default 16).
    pub output_mb: u64,
    /// Limit on what the evaluation writes into its work directory (its only writable place,
    /// TMPDIR included), in MiB (default 8192). Serialised (and so in the subject's source
    /// hash) only when not the default, so that the cache keys of subjects written before it
    /// existed stay what they were.
    #[serde(
        default = "default_disk_mb",
        skip_serializing_if = "is_default_disk_mb"
    )]
    pub disk_mb: u64,
}

const DEFAULT_DISK_MB: u64 = 8192;

fn default_disk_mb() -> u64 {
    DEFAULT_DISK_MB
}

fn is_default_disk_mb(mb: &u64) -> bool {
    *mb == DEFAULT_DISK_MB
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            timeout_s: 600.0,
            memory_mb: 4096,
            output_mb: 16,
            disk_mb: DEFAULT_DISK_MB,
        }
    }
}

/// The known fix of a faulty subject: the ground-truth config and the faults it repairs.
#[derive(Debug, Clone, PartialEq)]
pub struct Fix {
    /// The fixed config's file, absolute.
    pub config_path: PathBuf,
    /// The fixed config, valid against the subject's space.
    pub config: Config,
    /// The ground-truth fault labels (may be empty).
    pub faults: Vec<FaultLabel>,
}

impl Subject {
    /// Loads and validates a subject. `path` is the subject directory or its manifest file.
    /// Every problem of the manifest, the current config and the fix config is reported at once.
    pub fn load(path: &Path) -> Result<Subject, ManifestError> {
        let shown = if path.is_dir() {
            path.join(MANIFEST_FILE)
        } else {
            path.to_path_buf()
        };
        let text = read_text(&shown).map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => ManifestError::NotFound {
                path: shown.clone(),
            },
            _ => ManifestError::Read {
                path: shown.clone(),
                source: e,
            },
        })?;
        let manifest_path = fs::canonicalize(&shown).map_err(|e| ManifestError::Read {
            path: shown.clone(),
            source: e,
        })?;
        let dir = manifest_path
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("/"));
        let table: toml::Table = toml::from_str(&text).map_err(|e| {
            let pos = e
                .span()
                .map(|s| Position::of_offset(&text, s.start))
                .unwrap_or(Position { line: 1, column: 1 });
            ManifestError::Syntax {
                file: shown.clone(),
                line: pos.line,
                column: pos.column,
                message: e.message().trim().to_string(),
            }
        })?;
        let shown_dir = shown.parent().map(Path::to_path_buf).unwrap_or_default();
        let mut w = Walker {
            file: shown.clone(),
            text: &text,
            spans: DeTable::parse(&text).ok().map(|t| t.into_inner()),
            issues: Vec::new(),
        };
        let parsed = w.subject(&table, &dir, &shown_dir);
        let mut issues = w.issues;
        match parsed {
            Some(p) if issues.is_empty() => Ok(Subject {
                dir,
                manifest_path,
                name: p.name,
                description: p.description,
                task: p.task,
                framework: p.framework,
                backend: p.backend,
                dataset: p.dataset,
                entry: p.entry,
                metric: p.metric,
                config_path: p.config_path,
                config: p.config,
                space: p.space,
                limits: p.limits,
                fix: p.fix,
                packages: p.packages,
            }),
            _ => {
                if issues.is_empty() {
                    // Cannot happen: every path that yields nothing records an issue.
                    issues.push(Issue {
                        file: shown,
                        position: None,
                        key: String::new(),
                        kind: IssueKind::InvalidValue,
                        found: Some("an invalid manifest".into()),
                        expected: "a valid manifest".into(),
                        hint: None,
                    });
                }
                sort_issues(&mut issues);
                Err(ManifestError::Invalid { issues })
            }
        }
    }

    /// Reads a JSON config file (a path as given, relative to the current directory) and
    /// validates it against the subject's space; every problem is reported.
    pub fn load_config(&self, path: &Path) -> Result<Config, ManifestError> {
        let text = match read_text(path) {
            Ok(t) => t,
            Err(e) => {
                return Err(ManifestError::Invalid {
                    issues: vec![Issue {
                        file: path.to_path_buf(),
                        position: None,
                        key: String::new(),
                        kind: IssueKind::MissingFile,
                        found: Some(format!("no readable file ({e})")),
                        expected: "a JSON file holding a config".into(),
                        hint: None,
                    }],
                });
            }
        };
        check_config_text(path, &text, &self.space, &BTreeSet::new())
            .map_err(|issues| ManifestError::Invalid { issues })
    }

    /// `"classification"` or `"regression"`.
    pub fn task_name(&self) -> &'static str {
        self.task.as_str()
    }

    /// The problems of `config` against the subject's space (empty when valid).
    pub fn validate_config(&self, config: &Config) -> Vec<crate::space::ConfigIssue> {
        self.space.validate(config)
    }

    /// sha256 (hex) over what a training depends on besides its config and seed: the
    /// subject's files (every regular file below `dir` except hidden entries, `__pycache__`,
    /// Markdown, see [`crate::hash::hash_tree`]) and how the manifest runs them (task,
    /// framework, dataset, entry, metric, limits). Left out: the manifest file itself (its name,
    /// descriptions, search space and fix do not change a training), the config files it names
    /// (an evaluation's config is a key of its own) and `fault.json` (a fault benchmark's
    /// record). So the faults of one program, directories that differ only in those, share
    /// every cached training. Deterministic.
    pub fn source_hash(&self) -> io::Result<String> {
        let inside = |p: &Path| {
            p.strip_prefix(&self.dir)
                .ok()
                .map(|r| r.to_string_lossy().replace('\\', "/"))
        };
        let mut skip: Vec<String> = vec!["fault.json".into()];
        skip.extend(inside(&self.manifest_path));
        skip.extend(inside(&self.config_path));
        skip.extend(self.fix.as_ref().and_then(|f| inside(&f.config_path)));
        let skip: Vec<&str> = skip.iter().map(String::as_str).collect();
        let tree = hash_tree_skipping(&self.dir, &skip)?;
        let mut run = serde_json::json!({
            "task": self.task, "framework": self.framework, "dataset": self.dataset.name,
            "entry": self.entry, "metric": self.metric, "limits": self.limits,
        });
        // Only a backend other than the default enters the hash: the cache keys of subjects
        // written before `backend` existed (or that name torch) stay what they were.
        if self.backend != KerasBackend::default() {
            run["backend"] = serde_json::json!(self.backend);
        }
        // Likewise packages: only a subject that names some has them in its hash (a wheel's
        // bytes are in the tree's hash already).
        if !self.packages.is_empty() {
            run["packages"] = self.packages.iter().map(Package::pin).collect();
        }
        Ok(crate::hash::sha256_hex(format!("{tree}\n{run}").as_bytes()))
    }
}

/// Reads a UTF-8 text file.
fn read_text(path: &Path) -> io::Result<String> {
    let bytes = fs::read(path)?;
    String::from_utf8(bytes).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("not UTF-8 text: {}", e.utf8_error()),
        )
    })
}

/// Issues of each file together (files in order of first appearance), each file's in position
/// order, those without a position last.
fn sort_issues(issues: &mut [Issue]) {
    let mut files: Vec<PathBuf> = Vec::new();
    for i in issues.iter() {
        if !files.contains(&i.file) {
            files.push(i.file.clone());
        }
    }
    issues.sort_by_key(|i| {
        let rank = files
            .iter()
            .position(|f| *f == i.file)
            .unwrap_or(usize::MAX);
        let pos = i
            .position
            .map_or((usize::MAX, usize::MAX), |p| (p.line, p.column));
        (rank, pos)
    });
}

/// Why a command template cannot be filled in.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    /// `at` is 1-based, in bytes.
    #[error("'{{' at character {at} is never closed")]
    Unclosed { at: usize },
    #[error("'}}' at character {at} has no matching '{{' (write '}}}}' for a literal brace)")]
    Unopened { at: usize },
    #[error("no value for placeholder {{{name}}}")]
    NoValue { name: String },
}

/// A command template split into placeholders: `(byte offset of '{', name)`.
fn template_placeholders(template: &str) -> Result<Vec<(usize, &str)>, TemplateError> {
    let mut out = Vec::new();
    let bytes = template.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'{' if bytes.get(i + 1) == Some(&b'{') => i += 2,
            b'}' if bytes.get(i + 1) == Some(&b'}') => i += 2,
            b'{' => {
                let Some(len) = template[i + 1..].find('}') else {
                    return Err(TemplateError::Unclosed { at: i + 1 });
                };
                out.push((i, &template[i + 1..i + 1 + len]));
                i += len + 2;
            }
            b'}' => {
                return Err(TemplateError::Unopened { at: i + 1 });
            }
            _ => i += 1,
        }
    }
    Ok(out)
}

/// Fills a command template: each `{name}` is replaced by its value from `values`, `{{` and
/// `}}` become literal braces. Values are inserted as they are (no shell quoting). An
/// unbalanced brace or a placeholder without a value is an error.
pub fn expand_command(template: &str, values: &[(&str, &str)]) -> Result<String, TemplateError> {
    let placeholders = template_placeholders(template)?;
    let mut out = String::with_capacity(template.len());
    let mut last = 0;
    let unescape = |s: &str| s.replace("{{", "{").replace("}}", "}");
    for (at, name) in placeholders {
        out.push_str(&unescape(&template[last..at]));
        let Some((_, v)) = values.iter().find(|(k, _)| *k == name) else {
            return Err(TemplateError::NoValue {
                name: name.to_string(),
            });
        };
        out.push_str(v);
        last = at + name.len() + 2;
    }
    out.push_str(&unescape(&template[last..]));
    Ok(out)
}

/// serde_json's message without its " at line L column C" suffix (the position is reported apart).
fn json_error_message(e: &serde_json::Error) -> String {
    let s = e.to_string();
    match s.rfind(" at line ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// Byte offset of a top-level key of a JSON object text (best effort, for positions).
fn json_key_offset(text: &str, key: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                let start = i;
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                let end = i.min(bytes.len() - 1);
                if depth == 1 {
                    let rest = text[end + 1..].trim_start();
                    if rest.starts_with(':')
                        && serde_json::from_str::<String>(&text[start..=end])
                            .ok()
                            .as_deref()
                            == Some(key)
                    {
                        return Some(start);
                    }
                }
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    None
}

/// Parses a config text and validates it against `space`; keys in `ignore` (parameters whose
/// space entry is itself broken) are not reported.
fn check_config_text(
    shown: &Path,
    text: &str,
    space: &SearchSpace,
    ignore: &BTreeSet<String>,
) -> Result<Config, Vec<Issue>> {
    let expected = "a JSON object mapping each parameter of [space] to its value";
    let issue = |position, kind, key: &str, found: Option<String>, expected: String, hint| Issue {
        file: shown.to_path_buf(),
        position,
        key: key.to_string(),
        kind,
        found,
        expected,
        hint,
    };
    let value: Json = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            let position = (e.line() > 0).then(|| Position {
                line: e.line(),
                column: e.column().max(1),
            });
            return Err(vec![issue(
                position,
                IssueKind::InvalidJson,
                "",
                Some(format!("invalid JSON ({})", json_error_message(&e))),
                expected.into(),
                None,
            )]);
        }
    };
    let Json::Object(map) = value else {
        let found = match value {
            Json::Array(_) => "a JSON array",
            Json::String(_) => "a JSON string",
            Json::Number(_) => "a JSON number",
            Json::Bool(_) => "a JSON boolean",
            _ => "JSON null",
        };
        return Err(vec![issue(
            Some(Position { line: 1, column: 1 }),
            IssueKind::InvalidJson,
            "",
            Some(found.into()),
            expected.into(),
            None,
        )]);
    };
    let config = Config(map);
    let issues: Vec<Issue> = space
        .validate(&config)
        .into_iter()
        .filter(|ci| !ignore.contains(&ci.key))
        .map(|ci| {
            let position = ci
                .found
                .as_ref()
                .and_then(|_| json_key_offset(text, &ci.key))
                .map(|o| Position::of_offset(text, o));
            let kind = match ci.kind {
                ConfigIssueKind::NotInSpace => IssueKind::NotInSpace,
                ConfigIssueKind::Missing => IssueKind::MissingFromConfig,
                ConfigIssueKind::OutOfDomain => IssueKind::OutOfDomain,
            };
            issue(
                position,
                kind,
                &ci.key,
                ci.found.as_ref().map(format_value),
                ci.expected,
                ci.hint,
            )
        })
        .collect();
    if issues.is_empty() {
        Ok(config)
    } else {
        Err(issues)
    }
}

/// What the walk yields when every part of the manifest is well-formed.
struct Parsed {
    name: String,
    description: String,
    task: Task,
    framework: Framework,
    backend: KerasBackend,
    dataset: Dataset,
    entry: Entry,
    metric: Metric,
    config_path: PathBuf,
    config: Config,
    space: SearchSpace,
    limits: Limits,
    fix: Option<Fix>,
    packages: Vec<Package>,
}

const ROOT_KEYS: &[&str] = &[
    "name",
    "description",
    "task",
    "framework",
    "backend",
    "config",
    "dataset",
    "entry",
    "metric",
    "limits",
    "space",
    "fix",
    "environment",
];
const PARAM_TYPES: &[&str] = &["choice", "int", "float", "log-float"];

/// Walks the manifest, recording every issue.
struct Walker<'a> {
    file: PathBuf,
    text: &'a str,
    spans: Option<DeTable<'a>>,
    issues: Vec<Issue>,
}

fn join(path: &[&str], key: &str) -> Vec<String> {
    let mut v: Vec<String> = path.iter().map(|s| s.to_string()).collect();
    v.push(key.to_string());
    v
}

/// One key to read: `key` of `table`, which stands at `path` in the manifest (`[]` at the
/// top), whether it must be there, and what it should hold (for the issue when it does not).
struct Field<'t, 'a> {
    table: &'t toml::Table,
    path: &'a [&'a str],
    key: &'a str,
    required: bool,
    expected: &'a str,
}

impl<'t, 'a> Field<'t, 'a> {
    /// A key that must be there ([`Field::optional`] for one that may be left out).
    fn new(table: &'t toml::Table, path: &'a [&'a str], key: &'a str, expected: &'a str) -> Self {
        Field {
            table,
            path,
            key,
            required: true,
            expected,
        }
    }

    /// The same key, which may be left out.
    fn optional(self) -> Self {
        Field {
            required: false,
            ..self
        }
    }

    /// Its path in the manifest, as issues name it.
    fn name(&self) -> Vec<String> {
        join(self.path, self.key)
    }
}

fn quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| format!("{s:?}"))
}

fn quoted_list(items: &[&str]) -> String {
    items
        .iter()
        .map(|s| quote(s))
        .collect::<Vec<_>>()
        .join(", ")
}

fn show(v: &Toml) -> String {
    let s = match v {
        Toml::String(s) => quote(s),
        Toml::Float(f) => {
            if f.is_finite() && f.fract() == 0.0 && f.abs() < 1e15 {
                format!("{f:.1}")
            } else {
                format_f64(*f)
            }
        }
        other => other.to_string().trim().replace('\n', " "),
    };
    if s.chars().count() > 80 {
        let cut: String = s.chars().take(77).collect();
        format!("{cut}...")
    } else {
        s
    }
}

fn type_name(v: &Toml) -> &'static str {
    match v {
        Toml::String(_) => "a string",
        Toml::Integer(_) => "an integer",
        Toml::Float(_) => "a float",
        Toml::Boolean(_) => "a boolean",
        Toml::Datetime(_) => "a datetime",
        Toml::Array(_) => "an array",
        Toml::Table(_) => "a table",
    }
}

fn show_typed(v: &Toml) -> String {
    format!("{} ({})", show(v), type_name(v))
}

fn locate_in(table: &DeTable<'_>, path: &[String], key: bool) -> Option<usize> {
    let (first, rest) = path.split_first()?;
    let (k, v) = table.get_key_value(first.as_str())?;
    if rest.is_empty() {
        return Some(if key { k.span().start } else { v.span().start });
    }
    locate_value(v, rest, key)
}

fn locate_value(v: &toml::Spanned<DeValue<'_>>, path: &[String], key: bool) -> Option<usize> {
    match v.get_ref() {
        DeValue::Table(t) => locate_in(t, path, key),
        DeValue::Array(a) => {
            let (first, rest) = path.split_first()?;
            let item = a.get(first.parse::<usize>().ok()?)?;
            if rest.is_empty() {
                Some(item.span().start)
            } else {
                locate_value(item, rest, key)
            }
        }
        _ => None,
    }
}

fn toml_to_json(v: &Toml) -> Option<Json> {
    Some(match v {
        Toml::String(s) => Json::String(s.clone()),
        Toml::Integer(i) => Json::from(*i),
        Toml::Float(f) => Json::Number(serde_json::Number::from_f64(*f)?),
        Toml::Boolean(b) => Json::Bool(*b),
        Toml::Datetime(_) => return None,
        Toml::Array(a) => Json::Array(a.iter().map(toml_to_json).collect::<Option<_>>()?),
        Toml::Table(t) => Json::Object(
            t.iter()
                .map(|(k, v)| Some((k.clone(), toml_to_json(v)?)))
                .collect::<Option<_>>()?,
        ),
    })
}

/// Whether `s` is an ASCII Python identifier (a letter or `_`, then letters, digits, `_`).
pub fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Bounds of `[limits]`: beyond them a value is a typo, and the kernel would refuse it
/// (setrlimit overflows) only when every evaluation has already failed.
const MAX_TIMEOUT_S: f64 = 7.0 * 24.0 * 3600.0;
const MAX_LIMIT_MB: u64 = 16 * 1024 * 1024;

/// Whether a relative path stays inside the directory it is relative to.
fn is_inside(rel: &str) -> bool {
    let p = Path::new(rel);
    !rel.is_empty()
        && p.components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
}

impl Walker<'_> {
    fn position(&self, path: &[String], kind: IssueKind) -> Option<Position> {
        let spans = self.spans.as_ref()?;
        let offset = match kind {
            IssueKind::UnknownKey | IssueKind::Conflict => locate_in(spans, path, true),
            IssueKind::MissingKey => {
                let parent = &path[..path.len().saturating_sub(1)];
                if parent.is_empty() {
                    None
                } else {
                    locate_in(spans, parent, true)
                }
            }
            _ => locate_in(spans, path, false).or_else(|| locate_in(spans, path, true)),
        }?;
        Some(Position::of_offset(self.text, offset))
    }

    fn push(
        &mut self,
        path: Vec<String>,
        kind: IssueKind,
        found: Option<String>,
        expected: impl Into<String>,
        hint: Option<String>,
    ) {
        let position = self.position(&path, kind);
        let mut key = String::new();
        for seg in &path {
            if !key.is_empty() && seg.parse::<usize>().is_ok() {
                key.push_str(&format!("[{seg}]"));
            } else {
                if !key.is_empty() {
                    key.push('.');
                }
                key.push_str(seg);
            }
        }
        self.issues.push(Issue {
            file: self.file.clone(),
            position,
            key,
            kind,
            found,
            expected: expected.into(),
            hint,
        });
    }

    /// Reports keys of `table` that are not in `allowed`.
    fn check_keys(&mut self, table: &toml::Table, path: &[&str], allowed: &[&str], what: &str) {
        for key in table.keys() {
            if !allowed.contains(&key.as_str()) {
                let hint = did_you_mean(key, allowed.iter().copied());
                self.push(
                    join(path, key),
                    IssueKind::UnknownKey,
                    Some("an unknown key".into()),
                    format!("{what}: {}", allowed.join(", ")),
                    hint,
                );
            }
        }
    }

    fn get<'t>(&mut self, f: &Field<'t, '_>) -> Option<&'t Toml> {
        let v = f.table.get(f.key);
        if v.is_none() && f.required {
            self.push(f.name(), IssueKind::MissingKey, None, f.expected, None);
        }
        v
    }

    fn wrong_type(&mut self, path: &[&str], key: &str, v: &Toml, expected: &str) {
        self.push(
            join(path, key),
            IssueKind::WrongType,
            Some(show_typed(v)),
            expected,
            None,
        );
    }

    /// The value of the field as `pick` reads it; a value that `pick` does not take is of the
    /// wrong type.
    fn get_as<'t, T>(
        &mut self,
        f: &Field<'t, '_>,
        pick: impl FnOnce(&'t Toml) -> Option<T>,
    ) -> Option<T> {
        let v = self.get(f)?;
        let picked = pick(v);
        if picked.is_none() {
            self.wrong_type(f.path, f.key, v, f.expected);
        }
        picked
    }

    fn get_str<'t>(&mut self, f: &Field<'t, '_>) -> Option<&'t str> {
        self.get_as(f, Toml::as_str)
    }

    /// A required string that must not be empty (or only whitespace).
    fn get_nonempty(&mut self, f: &Field<'_, '_>) -> Option<String> {
        let s = self.get_str(f)?;
        if s.trim().is_empty() {
            self.push(
                f.name(),
                IssueKind::InvalidValue,
                Some(quote(s)),
                f.expected,
                None,
            );
            return None;
        }
        Some(s.to_string())
    }

    /// A required string among `options`; returns its index.
    fn get_enum(
        &mut self,
        table: &toml::Table,
        path: &[&str],
        key: &str,
        options: &[&str],
    ) -> Option<usize> {
        let expected = format!("one of {}", quoted_list(options));
        let f = Field::new(table, path, key, &expected);
        let s = self.get_str(&f)?;
        match options.iter().position(|o| *o == s) {
            Some(i) => Some(i),
            None => {
                let hint = closest(s, options.iter().copied())
                    .map(|c| format!("did you mean {}?", quote(c)));
                self.push(
                    f.name(),
                    IssueKind::InvalidValue,
                    Some(quote(s)),
                    expected,
                    hint,
                );
                None
            }
        }
    }

    fn get_table<'t>(&mut self, f: &Field<'t, '_>) -> Option<&'t toml::Table> {
        self.get_as(f, Toml::as_table)
    }

    /// A number (integer or float), finite.
    fn get_f64(&mut self, f: &Field<'_, '_>) -> Option<f64> {
        let number = |v: &Toml| match v {
            Toml::Integer(i) => Some(*i as f64),
            Toml::Float(f) => Some(*f),
            _ => None,
        };
        match self.get_as(f, number)? {
            x if x.is_finite() => Some(x),
            x => {
                self.push(
                    f.name(),
                    IssueKind::InvalidValue,
                    Some(show(&Toml::Float(x))),
                    format!("{} (finite)", f.expected),
                    None,
                );
                None
            }
        }
    }

    /// An integer (a float, even 2.0, is the wrong type).
    fn get_i64(&mut self, f: &Field<'_, '_>) -> Option<i64> {
        self.get_as(f, Toml::as_integer)
    }

    fn subject(&mut self, root: &toml::Table, dir: &Path, shown_dir: &Path) -> Option<Parsed> {
        self.check_keys(root, &[], ROOT_KEYS, "one of the top-level keys");

        let name_expected =
            "a non-empty name of letters, digits, '-', '_' and '.' (not starting with '.')";
        let name = self
            .get_str(&Field::new(root, &[], "name", name_expected))
            .and_then(|s| {
                let ok = !s.is_empty()
                    && !s.starts_with('.')
                    && s.chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
                if ok {
                    Some(s.to_string())
                } else {
                    self.push(
                        join(&[], "name"),
                        IssueKind::InvalidValue,
                        Some(quote(s)),
                        name_expected,
                        None,
                    );
                    None
                }
            });
        let description = self
            .get_str(&Field::new(root, &[], "description", "a string").optional())
            .unwrap_or("")
            .to_string();
        let task = self
            .get_enum(root, &[], "task", &["classification", "regression"])
            .map(|i| [Task::Classification, Task::Regression][i]);
        let framework = self
            .get_enum(root, &[], "framework", &["pytorch", "keras"])
            .map(|i| [Framework::Pytorch, Framework::Keras][i]);
        let backend = self.backend(root, framework);
        let dataset = self.dataset(root);
        let entry = self.entry(root, dir);
        let metric = self.metric(root);
        let limits = self.limits(root);
        let (space, broken) = match self.space(root) {
            Some((s, b)) => (Some(s), b),
            None => (None, BTreeSet::new()),
        };

        let config_expected =
            "a path to the current config (a JSON file), relative to the subject directory";
        let config = self
            .get_str(&Field::new(root, &[], "config", config_expected))
            .map(str::to_string)
            .and_then(|rel| {
                self.config_file(&["config"], &rel, dir, shown_dir, space.as_ref(), &broken)
            });

        let fix = self.fix(root, dir, shown_dir, space.as_ref(), &broken);
        let packages = self.environment(root, dir);

        let (config_path, config) = config?;
        Some(Parsed {
            name: name?,
            description,
            task: task?,
            framework: framework?,
            backend: backend?,
            dataset: dataset?,
            entry: entry?,
            metric: metric?,
            config_path,
            config,
            space: space?,
            limits: limits?,
            fix: fix?,
            packages: packages?,
        })
    }

    /// `[environment] packages = [...]`: optional; each a `NAME==VERSION` release or a `.whl`
    /// file inside the subject directory. `None` when one is wrong (an issue is recorded).
    fn environment(&mut self, root: &toml::Table, dir: &Path) -> Option<Vec<Package>> {
        if !root.contains_key("environment") {
            return Some(Vec::new());
        }
        let t = self.get_table(
            &Field::new(
                root,
                &[],
                "environment",
                "a table [environment] with packages = [\"NAME==VERSION\" or \"FILE.whl\", ...]",
            )
            .optional(),
        )?;
        let path = &["environment"];
        self.check_keys(t, path, &["packages"], "one of the keys of [environment]");
        let expected = "a release pinned as \"NAME==VERSION\" (torchvision==0.25.0) or a wheel \
                        file inside the subject directory (wheels/NAME-VERSION-py3-none-any.whl)";
        let list_expected = "an array of packages, like [\"torchvision==0.25.0\"]";
        let mut packages = Some(Vec::new());
        match self.get(&Field::new(t, path, "packages", list_expected).optional()) {
            None => {}
            Some(Toml::Array(items)) => {
                for (i, item) in items.iter().enumerate() {
                    let p = vec![
                        "environment".to_string(),
                        "packages".to_string(),
                        i.to_string(),
                    ];
                    let parsed = match item {
                        Toml::String(s) if s.ends_with(".whl") => self.wheel(p, s, dir, expected),
                        Toml::String(s) => parse_pin(s).or_else(|| {
                            self.push(p, IssueKind::InvalidValue, Some(quote(s)), expected, None);
                            None
                        }),
                        other => {
                            self.push(
                                p,
                                IssueKind::WrongType,
                                Some(show_typed(other)),
                                expected,
                                None,
                            );
                            None
                        }
                    };
                    match (parsed, packages.as_mut()) {
                        (Some(pkg), Some(list)) => list.push(pkg),
                        (None, _) => packages = None,
                        _ => {}
                    }
                }
            }
            Some(other) => {
                self.push(
                    vec!["environment".into(), "packages".into()],
                    IssueKind::WrongType,
                    Some(show_typed(other)),
                    list_expected,
                    None,
                );
                packages = None;
            }
        }
        packages
    }

    /// A wheel named in `[environment] packages`: a file inside the subject directory whose
    /// name states its distribution and version.
    fn wheel(
        &mut self,
        key: Vec<String>,
        rel: &str,
        dir: &Path,
        expected: &str,
    ) -> Option<Package> {
        let file = Path::new(rel);
        let inside = file.is_relative()
            && !file
                .components()
                .any(|c| matches!(c, std::path::Component::ParentDir));
        let named = file
            .file_name()
            .and_then(|n| wheel_name(&n.to_string_lossy()));
        let path = dir.join(file);
        let problem = if !inside {
            Some("a path relative to the subject directory, without `..`")
        } else if named.is_none() {
            Some("a wheel file name NAME-VERSION-PY-ABI-PLATFORM.whl")
        } else if !path.is_file() {
            Some("an existing file")
        } else {
            None
        };
        if let Some(hint) = problem {
            self.push(
                key,
                IssueKind::InvalidValue,
                Some(quote(rel)),
                expected,
                Some(hint.into()),
            );
            return None;
        }
        let (dist, version) = named?;
        Some(Package {
            dist,
            version,
            wheel: Some(path),
        })
    }

    /// `backend`: optional, torch by default, and only for a Keras subject (a PyTorch program
    /// has no backend to choose). `None` when it is wrong (an issue is recorded).
    fn backend(
        &mut self,
        root: &toml::Table,
        framework: Option<Framework>,
    ) -> Option<KerasBackend> {
        if !root.contains_key("backend") {
            return Some(KerasBackend::default());
        }
        let backend = self
            .get_enum(root, &[], "backend", &["torch", "tensorflow"])
            .map(|i| [KerasBackend::Torch, KerasBackend::Tensorflow][i])?;
        if framework == Some(Framework::Pytorch) {
            self.push(
                vec!["backend".into()],
                IssueKind::Conflict,
                Some(format!("backend = {} with framework = \"pytorch\"", quote(backend.as_str()))),
                "no 'backend' for a PyTorch subject: it selects the backend Keras runs on (framework = \"keras\")",
                Some("remove the 'backend' line".into()),
            );
            return None;
        }
        Some(backend)
    }

    fn dataset(&mut self, root: &toml::Table) -> Option<Dataset> {
        let t = self.get_table(&Field::new(
            root,
            &[],
            "dataset",
            "a table [dataset] with name and description",
        ))?;
        self.check_keys(
            t,
            &["dataset"],
            &["name", "description"],
            "one of the keys of [dataset]",
        );
        let name = self.get_nonempty(&Field::new(t, &["dataset"], "name", "a non-empty string"));
        let description = self
            .get_str(&Field::new(t, &["dataset"], "description", "a string").optional())
            .unwrap_or("")
            .to_string();
        Some(Dataset {
            name: name?,
            description,
        })
    }

    fn metric(&mut self, root: &toml::Table) -> Option<Metric> {
        let t = self.get_table(&Field::new(
            root,
            &[],
            "metric",
            "a table [metric] with name and goal = \"max\" or \"min\"",
        ))?;
        self.check_keys(
            t,
            &["metric"],
            &["name", "goal"],
            "one of the keys of [metric]",
        );
        let name = self.get_nonempty(&Field::new(t, &["metric"], "name", "a non-empty string"));
        let goal = self
            .get_enum(t, &["metric"], "goal", &["max", "min"])
            .map(|i| [Goal::Max, Goal::Min][i]);
        Some(Metric {
            name: name?,
            goal: goal?,
        })
    }

    fn limits(&mut self, root: &toml::Table) -> Option<Limits> {
        let mut limits = Limits::default();
        let Some(t) = self.get_table(
            &Field::new(
                root,
                &[],
                "limits",
                "a table [limits] with timeout_s, memory_mb, output_mb, disk_mb",
            )
            .optional(),
        ) else {
            return Some(limits);
        };
        let path = &["limits"];
        self.check_keys(
            t,
            path,
            &["timeout_s", "memory_mb", "output_mb", "disk_mb"],
            "one of the keys of [limits]",
        );
        let mut ok = true;
        let secs = "a positive number of seconds, at most 604800 (a week)";
        if let Some(v) = self.get_f64(&Field::new(t, path, "timeout_s", secs).optional()) {
            if v > 0.0 && v <= MAX_TIMEOUT_S {
                limits.timeout_s = v;
            } else {
                self.push(
                    join(path, "timeout_s"),
                    IssueKind::InvalidValue,
                    Some(show(&t["timeout_s"])),
                    secs,
                    None,
                );
                ok = false;
            }
        } else if t.contains_key("timeout_s") {
            ok = false;
        }
        for (key, slot) in [
            ("memory_mb", &mut limits.memory_mb),
            ("output_mb", &mut limits.output_mb),
            ("disk_mb", &mut limits.disk_mb),
        ] {
            let expected = "a positive integer number of MiB, at most 16777216 (16 TiB)";
            match self.get_i64(&Field::new(t, path, key, expected).optional()) {
                Some(v) if v > 0 && v as u64 <= MAX_LIMIT_MB => *slot = v as u64,
                Some(_) => {
                    self.push(
                        join(path, key),
                        IssueKind::InvalidValue,
                        Some(show(&t[key])),
                        expected,
                        None,
                    );
                    ok = false;
                }
                None if t.contains_key(key) => ok = false,
                None => {}
            }
        }
        ok.then_some(limits)
    }

    fn entry(&mut self, root: &toml::Table, dir: &Path) -> Option<Entry> {
        let t = self.get_table(&Field::new(
            root,
            &[],
            "entry",
            "a table [entry] with callable = \"FILE.py:FUNCTION\" or command = \"TEMPLATE\"",
        ))?;
        let path = &["entry"];
        self.check_keys(
            t,
            path,
            &["callable", "command"],
            "one of the keys of [entry]",
        );
        let exactly_one = "exactly one of 'callable' (a Python callable \"FILE.py:FUNCTION\") and 'command' (a command template)";
        match (t.get("callable"), t.get("command")) {
            (Some(_), Some(_)) => {
                self.push(
                    vec!["entry".into()],
                    IssueKind::Conflict,
                    Some("both 'callable' and 'command'".into()),
                    exactly_one,
                    None,
                );
                None
            }
            (None, None) => {
                self.push(
                    vec!["entry".into()],
                    IssueKind::Conflict,
                    Some("neither 'callable' nor 'command'".into()),
                    exactly_one,
                    None,
                );
                None
            }
            (Some(_), None) => {
                let expected = "a Python callable \"FILE.py:FUNCTION\", like \"train.py:train\"";
                let spec = self.get_str(&Field::new(t, path, "callable", expected))?;
                let bad = |w: &mut Self, why: &str| {
                    w.push(
                        join(path, "callable"),
                        IssueKind::InvalidValue,
                        Some(quote(spec)),
                        expected,
                        Some(why.to_string()),
                    );
                };
                let Some((file, function)) = spec.rsplit_once(':') else {
                    bad(self, "no ':' between the file and the function");
                    return None;
                };
                if !file.ends_with(".py") || file.len() <= 3 {
                    bad(self, "the file must be a Python file ending in .py");
                    return None;
                }
                if !is_inside(file) {
                    bad(
                        self,
                        "the file must be a relative path inside the subject directory",
                    );
                    return None;
                }
                if !is_identifier(function) {
                    bad(self, "the function must be a Python identifier");
                    return None;
                }
                let abs = dir.join(file);
                if !abs.is_file() {
                    let why = match fs::metadata(&abs) {
                        Ok(_) => "not a regular file".to_string(),
                        Err(e) => e.to_string(),
                    };
                    self.push(
                        join(path, "callable"),
                        IssueKind::MissingFile,
                        Some(quote(spec)),
                        format!("an existing file {} in the subject directory", quote(file)),
                        Some(format!("{}: {why}", abs.display())),
                    );
                    return None;
                }
                Some(Entry::Callable {
                    file: file.to_string(),
                    function: function.to_string(),
                })
            }
            (None, Some(_)) => {
                let expected = "a command template, like \"{python} train.py --config {config} --seed {seed} --out {result}\"";
                let template = self.get_str(&Field::new(t, path, "command", expected))?;
                if template.trim().is_empty() {
                    self.push(
                        join(path, "command"),
                        IssueKind::InvalidValue,
                        Some(quote(template)),
                        expected,
                        None,
                    );
                    return None;
                }
                match template_placeholders(template) {
                    Err(why) => {
                        self.push(
                            join(path, "command"),
                            IssueKind::InvalidValue,
                            Some(quote(template)),
                            expected,
                            Some(why.to_string()),
                        );
                        None
                    }
                    Ok(names) => {
                        let known = PLACEHOLDERS
                            .iter()
                            .map(|p| format!("{{{p}}}"))
                            .collect::<Vec<_>>()
                            .join(", ");
                        let mut ok = true;
                        for (_, name) in names {
                            if !PLACEHOLDERS.contains(&name) {
                                ok = false;
                                let hint = closest(name, PLACEHOLDERS)
                                    .map(|c| format!("did you mean '{{{c}}}'?"));
                                self.push(
                                    join(path, "command"),
                                    IssueKind::InvalidValue,
                                    Some(format!("the unknown placeholder '{{{name}}}'")),
                                    format!("placeholders among {known} ('{{{{' and '}}}}' for literal braces)"),
                                    hint,
                                );
                            }
                        }
                        ok.then(|| Entry::Command {
                            template: template.to_string(),
                        })
                    }
                }
            }
        }
    }

    /// The search space, and the names of parameters whose entry is broken.
    fn space(&mut self, root: &toml::Table) -> Option<(SearchSpace, BTreeSet<String>)> {
        let t = self.get_table(&Field::new(
            root,
            &[],
            "space",
            "a table [space] with one entry per hyperparameter of the config",
        ))?;
        // toml::Table is sorted by key; restore the manifest's order from the spans.
        let mut names: Vec<&String> = t.keys().collect();
        names.sort_by_key(|n| {
            self.spans
                .as_ref()
                .and_then(|s| locate_in(s, &["space".to_string(), n.to_string()], true))
                .unwrap_or(usize::MAX)
        });
        let mut params = Vec::new();
        let mut broken = BTreeSet::new();
        for name in names {
            match self.param(name, &t[name.as_str()]) {
                Some(p) => params.push(p),
                None => {
                    broken.insert(name.clone());
                }
            }
        }
        Some((SearchSpace { params }, broken))
    }

    fn param(&mut self, name: &str, v: &Toml) -> Option<Param> {
        let table_expected = "a table like { type = \"float\", low = 0.0, high = 1.0 }";
        let Toml::Table(t) = v else {
            self.wrong_type(&["space"], name, v, table_expected);
            return None;
        };
        let path = &["space", name];
        let kind_index = self.get_enum(t, path, "type", PARAM_TYPES);
        let allowed: &[&str] = match kind_index {
            Some(0) => &["type", "values", "fault", "layer"],
            Some(_) => &["type", "low", "high", "fault", "layer"],
            None => &["type", "values", "low", "high", "fault", "layer"],
        };
        let what = match kind_index {
            Some(i) => format!("one of the keys of a {} parameter", quote(PARAM_TYPES[i])),
            None => "one of the keys of a parameter".to_string(),
        };
        self.check_keys(t, path, allowed, &what);

        let kind = match kind_index {
            None => None,
            Some(0) => self.choice(t, path),
            Some(1) => {
                let e = "an integer";
                let low = self.get_i64(&Field::new(t, path, "low", e));
                let high = self.get_i64(&Field::new(t, path, "high", e));
                match (low, high) {
                    (Some(low), Some(high)) if low > high => {
                        self.push(
                            join(path, "low"),
                            IssueKind::InvalidValue,
                            Some(low.to_string()),
                            format!("an integer at most high ({high})"),
                            None,
                        );
                        None
                    }
                    (Some(low), Some(high)) => Some(ParamKind::Int { low, high }),
                    _ => None,
                }
            }
            Some(i) => {
                let log = i == 3;
                let e = "a number";
                let low = self.get_f64(&Field::new(t, path, "low", e));
                let high = self.get_f64(&Field::new(t, path, "high", e));
                match (low, high) {
                    (Some(low), Some(_)) if log && low <= 0.0 => {
                        self.push(
                            join(path, "low"),
                            IssueKind::InvalidValue,
                            Some(show(&t["low"])),
                            "a number > 0 (a log-float range must be positive)",
                            None,
                        );
                        None
                    }
                    (Some(low), Some(high)) if low > high => {
                        self.push(
                            join(path, "low"),
                            IssueKind::InvalidValue,
                            Some(show(&t["low"])),
                            format!("a number at most high ({})", format_f64(high)),
                            None,
                        );
                        None
                    }
                    (Some(low), Some(high)) if log => Some(ParamKind::LogFloat { low, high }),
                    (Some(low), Some(high)) => Some(ParamKind::Float { low, high }),
                    _ => None,
                }
            }
        };

        let fault_expected = format!("a fault type, one of {}", all_codes());
        let fault = match self.get_str(&Field::new(t, path, "fault", &fault_expected).optional()) {
            None => Ok(None),
            Some(s) => match s.parse::<FaultType>() {
                Ok(f) => Ok(Some(f)),
                Err(_) => {
                    let codes: Vec<&str> = FaultType::ALL.iter().map(|f| f.code()).collect();
                    let hint = closest(s, codes).map(|c| format!("did you mean {}?", quote(c)));
                    self.push(
                        join(path, "fault"),
                        IssueKind::InvalidValue,
                        Some(quote(s)),
                        fault_expected,
                        hint,
                    );
                    Err(())
                }
            },
        };
        let layer_expected = "a layer index (a non-negative integer)";
        let layer = match self.get_i64(&Field::new(t, path, "layer", layer_expected).optional()) {
            None if t.contains_key("layer") => Err(()),
            None => Ok(None),
            Some(l) => match u32::try_from(l) {
                Ok(l) => Ok(Some(l)),
                Err(_) => {
                    self.push(
                        join(path, "layer"),
                        IssueKind::InvalidValue,
                        Some(l.to_string()),
                        layer_expected,
                        None,
                    );
                    Err(())
                }
            },
        };
        let (Ok(fault), Ok(layer)) = (fault, layer) else {
            return None;
        };
        if let Some(l) = layer {
            match fault {
                None => {
                    self.push(
                        join(path, "layer"),
                        IssueKind::Conflict,
                        Some(format!("layer = {l} without 'fault'")),
                        "a 'fault' alongside 'layer': the layer index says which layer the parameter's fault type concerns",
                        Some("add fault = \"...\" with the parameter's fault type, e.g. \"ACH\"".into()),
                    );
                    return None;
                }
                Some(f) if !f.is_layer_specific() => {
                    self.push(
                        join(path, "layer"),
                        IssueKind::InvalidValue,
                        Some(l.to_string()),
                        format!(
                            "no layer: {f} ({}) concerns no particular layer",
                            f.description()
                        ),
                        None,
                    );
                    return None;
                }
                Some(_) => {}
            }
        }
        Some(Param {
            name: name.to_string(),
            kind: kind?,
            fault,
            layer,
        })
    }

    fn choice(&mut self, t: &toml::Table, path: &[&str]) -> Option<ParamKind> {
        let expected = "a non-empty array of values, like [16, 32, 64] or [\"relu\", \"tanh\"]";
        let v = self.get(&Field::new(t, path, "values", expected))?;
        let Toml::Array(items) = v else {
            self.wrong_type(path, "values", v, expected);
            return None;
        };
        if items.is_empty() {
            self.push(
                join(path, "values"),
                IssueKind::InvalidValue,
                Some("[]".into()),
                expected,
                None,
            );
            return None;
        }
        let mut values: Vec<Json> = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let mut p = join(path, "values");
            p.push(i.to_string());
            let Some(j) = toml_to_json(item) else {
                self.push(
                    p,
                    IssueKind::WrongType,
                    Some(show_typed(item)),
                    "a JSON-compatible value (number, string, boolean, array or table)",
                    None,
                );
                return None;
            };
            if values.contains(&j) {
                self.push(
                    p,
                    IssueKind::InvalidValue,
                    Some(format_value(&j)),
                    format!(
                        "distinct values, but {} is already in {}",
                        format_value(&j),
                        format_list(&values)
                    ),
                    None,
                );
                return None;
            }
            values.push(j);
        }
        Some(ParamKind::Choice { values })
    }

    /// Resolves, reads and validates a config file named at `key` (`config` or `fix.config`).
    fn config_file(
        &mut self,
        key: &[&str],
        rel: &str,
        dir: &Path,
        shown_dir: &Path,
        space: Option<&SearchSpace>,
        broken: &BTreeSet<String>,
    ) -> Option<(PathBuf, Config)> {
        let path: Vec<String> = key.iter().map(|s| s.to_string()).collect();
        if rel.trim().is_empty() {
            self.push(
                path,
                IssueKind::InvalidValue,
                Some(quote(rel)),
                "a path to a JSON file, relative to the subject directory",
                None,
            );
            return None;
        }
        if !is_inside(rel) {
            self.push(
                path,
                IssueKind::InvalidValue,
                Some(quote(rel)),
                "a relative path inside the subject directory (no leading / and no ..)",
                None,
            );
            return None;
        }
        let abs = dir.join(rel);
        let shown = shown_dir.join(rel);
        let text = match fs::metadata(&abs).and_then(|m| {
            if m.is_file() {
                read_text(&abs)
            } else {
                Err(io::Error::other("not a regular file"))
            }
        }) {
            Ok(t) => t,
            Err(e) => {
                self.push(
                    path,
                    IssueKind::MissingFile,
                    Some(quote(rel)),
                    "an existing JSON file, relative to the subject directory",
                    Some(format!("{}: {e}", shown.display())),
                );
                return None;
            }
        };
        // Without a usable space, check only that the file is a JSON object.
        let empty = SearchSpace::default();
        let all: BTreeSet<String>;
        let (space, ignore) = match space {
            Some(s) => (s, broken),
            None => {
                all = match serde_json::from_str::<Json>(&text) {
                    Ok(Json::Object(m)) => m.keys().cloned().collect(),
                    _ => BTreeSet::new(),
                };
                (&empty, &all)
            }
        };
        match check_config_text(&shown, &text, space, ignore) {
            Ok(config) => Some((abs, config)),
            Err(issues) => {
                self.issues.extend(issues);
                None
            }
        }
    }

    /// `Some(None)` without a fix, `Some(Some(fix))` with a valid one, `None` on problems.
    fn fix(
        &mut self,
        root: &toml::Table,
        dir: &Path,
        shown_dir: &Path,
        space: Option<&SearchSpace>,
        broken: &BTreeSet<String>,
    ) -> Option<Option<Fix>> {
        if !root.contains_key("fix") {
            return Some(None);
        }
        let t = self.get_table(
            &Field::new(
                root,
                &[],
                "fix",
                "a table [fix] with config = \"FILE.json\" and faults = [\"LABEL\", ...]",
            )
            .optional(),
        )?;
        let path = &["fix"];
        self.check_keys(t, path, &["config", "faults"], "one of the keys of [fix]");
        let config = self
            .get_str(&Field::new(
                t,
                path,
                "config",
                "a path to the fixed config (a JSON file), relative to the subject directory",
            ))
            .map(str::to_string)
            .and_then(|rel| {
                self.config_file(&["fix", "config"], &rel, dir, shown_dir, space, broken)
            });

        let label_expected = "a fault label: a fault type optionally followed by layer indices, like \"HLR\" or \"ACH(0,1)\"";
        let list_expected = "an array of fault labels, like [\"ACH(1)\", \"HLR\"]";
        let mut faults = Some(Vec::new());
        match self.get(&Field::new(t, path, "faults", list_expected).optional()) {
            None => {}
            Some(Toml::Array(items)) => {
                for (i, item) in items.iter().enumerate() {
                    let p = vec!["fix".to_string(), "faults".to_string(), i.to_string()];
                    match item {
                        Toml::String(s) => match s.parse::<FaultLabel>() {
                            Ok(l) => {
                                if let Some(f) = faults.as_mut() {
                                    f.push(l);
                                }
                            }
                            Err(e) => {
                                self.push(
                                    p,
                                    IssueKind::InvalidValue,
                                    Some(quote(s)),
                                    label_expected,
                                    Some(e.reason),
                                );
                                faults = None;
                            }
                        },
                        other => {
                            self.push(
                                p,
                                IssueKind::WrongType,
                                Some(show_typed(other)),
                                label_expected,
                                None,
                            );
                            faults = None;
                        }
                    }
                }
            }
            Some(other) => {
                self.wrong_type(path, "faults", other, list_expected);
                faults = None;
            }
        }
        let (config_path, config) = config?;
        Some(Some(Fix {
            config_path,
            config,
            faults: faults?,
        }))
    }
}

#[cfg(test)]
#[path = "manifest_tests.rs"]
mod tests;
