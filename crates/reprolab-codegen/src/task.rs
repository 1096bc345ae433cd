//! Task files: JSON lines of function-level tasks (prompt, entry point, reference, pytest test,
//! labels) and repository tasks in the manner of DL-Bench (a repository, a file, a function or
//! method, pytest node ids). The format is documented in docs/codegen.md.
//!
//! Loading checks every field and collects every problem of the file, each naming the file, the
//! line, the field, what was found and what was expected, so that a task author fixes a file in
//! one pass instead of one error at a time.

use std::collections::HashMap;
use std::fmt;
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use reprolab_core::manifest::is_identifier;

/// Default per-sample upper bound on a task's test run, in seconds.
pub const DEFAULT_TIMEOUT_S: f64 = 60.0;
/// Packages a task may require: what the managed environment provides.
pub const KNOWN_REQUIREMENTS: &[&str] = &["torch", "numpy", "scikit-learn", "scipy"];

/// The stage of the ML pipeline a task belongs to (Deep-Bench's first label).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    PrePostProcessing,
    ModelConstruction,
    Training,
    Inference,
    Evaluation,
}

/// The ML task a task serves (Deep-Bench's second label).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskType {
    Classification,
    Regression,
    ObjectDetection,
    ImageSegmentation,
    TimeSeries,
    Recommendation,
    General,
}

/// The kind of input data (Deep-Bench's third label).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DataType {
    Image,
    Text,
    StructuredArray,
    Others,
}

/// One of the three label kinds, for grouping results.
pub trait LabelValue: Copy + Ord + Serialize + 'static {
    /// Every value in the paper's table order.
    const ALL: &'static [Self];
    /// The file format's spelling (`pre_post_processing`).
    fn name(self) -> &'static str;
    /// The paper's wording (`Pre/Post Processing`).
    fn title(self) -> &'static str;
}

macro_rules! label_value {
    ($t:ty, $( $v:ident => $name:literal, $title:literal );+ $(;)?) => {
        impl LabelValue for $t {
            const ALL: &'static [Self] = &[$(<$t>::$v),+];
            fn name(self) -> &'static str {
                match self { $(<$t>::$v => $name),+ }
            }
            fn title(self) -> &'static str {
                match self { $(<$t>::$v => $title),+ }
            }
        }
    };
}

label_value!(Stage,
    PrePostProcessing => "pre_post_processing", "Pre/Post Processing";
    ModelConstruction => "model_construction", "Model Construction";
    Training => "training", "Training";
    Inference => "inference", "Inference";
    Evaluation => "evaluation", "Evaluation & Metrics");
label_value!(TaskType,
    Classification => "classification", "Classification";
    Regression => "regression", "Regression";
    ObjectDetection => "object_detection", "Object Detection";
    ImageSegmentation => "image_segmentation", "Image Segmentation";
    TimeSeries => "time_series", "Time Series Prediction";
    Recommendation => "recommendation", "Recommendation";
    General => "general", "General");
label_value!(DataType,
    Image => "image", "Image";
    Text => "text", "Text";
    StructuredArray => "structured_array", "Structured Array";
    Others => "others", "Others");

fn parse_label<T: LabelValue>(s: &str) -> Option<T> {
    T::ALL.iter().copied().find(|v| v.name() == s)
}

fn label_names<T: LabelValue>() -> String {
    T::ALL
        .iter()
        .map(|v| v.name())
        .collect::<Vec<_>>()
        .join(", ")
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Labels {
    pub stage: Stage,
    pub task: TaskType,
    pub data: DataType,
}

/// What is generated and how it is tested.
#[derive(Debug, Clone, PartialEq)]
pub enum TaskKind {
    /// A standalone module: the candidate becomes `solution.py`, the test `test_task.py`.
    Function {
        entry_point: String,
        /// A complete module that passes the test.
        reference: String,
        /// pytest code that imports from `solution`.
        test: String,
        /// Complete modules that must fail the test (to detect weak tests).
        wrong: Vec<String>,
    },
    /// A function (or method) inside a repository, tested by the repository's own tests.
    Repository {
        /// Absolute directory of the repository (given relative to the task file).
        repo: PathBuf,
        /// File inside the repository that holds the definition, relative, `/`-separated.
        file: String,
        function: String,
        class: Option<String>,
        /// pytest node ids relative to the repository root.
        tests: Vec<String>,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    pub id: String,
    pub prompt: String,
    pub labels: Labels,
    pub requirements: Vec<String>,
    pub timeout_s: f64,
    pub kind: TaskKind,
    /// Where the task was defined.
    pub file: PathBuf,
    pub line: usize,
}

impl Task {
    pub fn is_repository(&self) -> bool {
        matches!(self.kind, TaskKind::Repository { .. })
    }

    /// "function" or "repository".
    pub fn kind_name(&self) -> &'static str {
        if self.is_repository() {
            "repository"
        } else {
            "function"
        }
    }

    /// The name the generated code must define.
    pub fn target_name(&self) -> &str {
        match &self.kind {
            TaskKind::Function { entry_point, .. } => entry_point,
            TaskKind::Repository { function, .. } => function,
        }
    }

    /// Content hash of everything that decides how a candidate is tested: the test code (or the
    /// repository's files and node ids) and the target. Part of every result's cache key, so
    /// that editing a task's test invalidates its stored results.
    pub fn fingerprint(&self) -> std::io::Result<String> {
        let mut h = Sha256::new();
        let mut part = |p: &[u8]| {
            h.update((p.len() as u64).to_le_bytes());
            h.update(p);
        };
        part(self.id.as_bytes());
        part(self.kind_name().as_bytes());
        match &self.kind {
            TaskKind::Function {
                entry_point,
                reference,
                test,
                ..
            } => {
                part(entry_point.as_bytes());
                part(reference.as_bytes());
                part(test.as_bytes());
            }
            TaskKind::Repository {
                repo,
                file,
                function,
                class,
                tests,
            } => {
                part(file.as_bytes());
                part(function.as_bytes());
                part(class.as_deref().unwrap_or("").as_bytes());
                for t in tests {
                    part(t.as_bytes());
                }
                part(crate::repo::content_hash(repo)?.as_bytes());
            }
        }
        Ok(hex::encode(h.finalize()))
    }
}

/// One problem in a task or generations file.
#[derive(Debug, Clone, PartialEq)]
pub struct Issue {
    pub file: PathBuf,
    /// 1-based line; 0 for the file as a whole.
    pub line: usize,
    /// The field concerned (`labels.stage`), empty for the line as a whole.
    pub field: String,
    pub message: String,
}

impl fmt::Display for Issue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if self.line > 0 {
            write!(f, ":{}", self.line)?;
        }
        if !self.field.is_empty() {
            write!(f, ": field `{}`", self.field)?;
        }
        write!(f, ": {}", self.message)
    }
}

/// Every problem found in one file.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub struct FileError {
    pub issues: Vec<Issue>,
}

impl fmt::Display for FileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.issues.len();
        write!(f, "{n} problem{}:", if n == 1 { "" } else { "s" })?;
        for i in &self.issues {
            write!(f, "\n  {i}")?;
        }
        Ok(())
    }
}

impl FileError {
    pub fn single(file: &Path, line: usize, field: &str, message: impl Into<String>) -> FileError {
        FileError {
            issues: vec![Issue {
                file: file.to_path_buf(),
                line,
                field: field.into(),
                message: message.into(),
            }],
        }
    }
}

/// The non-blank, non-comment lines of a JSONL file with their 1-based numbers.
pub(crate) fn jsonl_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines().enumerate().filter_map(|(i, l)| {
        let t = l.trim();
        (!t.is_empty() && !t.starts_with("//")).then_some((i + 1, t))
    })
}

/// Reads the fields of one JSON object, recording what is wrong instead of stopping.
pub(crate) struct Fields<'a> {
    pub obj: &'a Map<String, Value>,
    pub file: &'a Path,
    pub line: usize,
    pub issues: &'a mut Vec<Issue>,
}

pub(crate) fn describe(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("the boolean {b}"),
        Value::Number(n) => format!("the number {n}"),
        Value::String(s) if s.chars().count() > 40 => {
            format!("a string ({} characters)", s.chars().count())
        }
        Value::String(s) => format!("the string {s:?}"),
        Value::Array(a) => format!("an array of {}", a.len()),
        Value::Object(_) => "an object".into(),
    }
}

impl Fields<'_> {
    pub fn issue(&mut self, field: &str, message: impl Into<String>) {
        self.issues.push(Issue {
            file: self.file.to_path_buf(),
            line: self.line,
            field: field.to_string(),
            message: message.into(),
        });
    }

    /// A required string; `non_empty` rejects "" and whitespace.
    pub fn string(&mut self, field: &str, non_empty: bool) -> Option<String> {
        match self.obj.get(field) {
            None => {
                self.issue(field, "missing; expected a string");
                None
            }
            Some(Value::String(s)) if non_empty && s.trim().is_empty() => {
                self.issue(field, "is empty; expected a non-empty string");
                None
            }
            Some(Value::String(s)) => Some(s.clone()),
            Some(other) => {
                self.issue(
                    field,
                    format!("found {}, expected a string", describe(other)),
                );
                None
            }
        }
    }

    pub fn optional_string(&mut self, field: &str) -> Option<String> {
        match self.obj.get(field) {
            None | Some(Value::Null) => None,
            Some(_) => self.string(field, true),
        }
    }

    /// An array of strings (required unless `default` is given).
    pub fn strings(&mut self, field: &str, default: Option<Vec<String>>) -> Option<Vec<String>> {
        let v = match (self.obj.get(field), default) {
            (None, Some(d)) => return Some(d),
            (None, None) => {
                self.issue(field, "missing; expected an array of strings");
                return None;
            }
            (Some(v), _) => v,
        };
        let Value::Array(items) = v else {
            self.issue(
                field,
                format!("found {}, expected an array of strings", describe(v)),
            );
            return None;
        };
        let mut out = Vec::new();
        for (i, item) in items.iter().enumerate() {
            match item {
                Value::String(s) => out.push(s.clone()),
                other => {
                    self.issue(
                        &format!("{field}[{i}]"),
                        format!("found {}, expected a string", describe(other)),
                    );
                    return None;
                }
            }
        }
        Some(out)
    }

    pub fn unknown_fields(&mut self, known: &[&str]) {
        let unknown: Vec<String> = self
            .obj
            .keys()
            .filter(|k| !known.contains(&k.as_str()))
            .cloned()
            .collect();
        for k in unknown {
            let hint = reprolab_core::error::did_you_mean(&k, known.iter().copied())
                .map(|h| format!(" ({h})"))
                .unwrap_or_default();
            self.issue(
                &k,
                format!("unknown field; expected one of: {}{hint}", known.join(", ")),
            );
        }
    }
}

fn is_task_id(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '_' | '/' | '-'))
}

/// A relative path that stays inside its base (no `..`, not absolute).
fn is_inside(rel: &str) -> bool {
    let p = Path::new(rel);
    !rel.is_empty()
        && p.components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
}

const FUNCTION_FIELDS: &[&str] = &[
    "id",
    "prompt",
    "entry_point",
    "reference",
    "test",
    "labels",
    "requirements",
    "timeout_s",
    "wrong",
];
const REPOSITORY_FIELDS: &[&str] = &[
    "id",
    "prompt",
    "repo",
    "file",
    "function",
    "class",
    "tests",
    "labels",
    "requirements",
    "timeout_s",
];

fn read_labels(f: &mut Fields) -> Option<Labels> {
    let Some(v) = f.obj.get("labels") else {
        f.issue(
            "labels",
            "missing; expected {\"stage\", \"task\", \"data\"}",
        );
        return None;
    };
    let Value::Object(obj) = v else {
        f.issue(
            "labels",
            format!(
                "found {}, expected an object with stage, task and data",
                describe(v)
            ),
        );
        return None;
    };
    let mut one = |key: &str, expected: String| -> Option<String> {
        match obj.get(key) {
            Some(Value::String(s)) => Some(s.clone()),
            Some(other) => {
                f.issue(
                    &format!("labels.{key}"),
                    format!("found {}, expected one of: {expected}", describe(other)),
                );
                None
            }
            None => {
                f.issue(
                    &format!("labels.{key}"),
                    format!("missing; expected one of: {expected}"),
                );
                None
            }
        }
    };
    let stage = one("stage", label_names::<Stage>());
    let task = one("task", label_names::<TaskType>());
    let data = one("data", label_names::<DataType>());
    let stage = stage.and_then(|s| {
        let v = parse_label::<Stage>(&s);
        if v.is_none() {
            f.issue(
                "labels.stage",
                format!("found {s:?}, expected one of: {}", label_names::<Stage>()),
            );
        }
        v
    });
    let task = task.and_then(|s| {
        let v = parse_label::<TaskType>(&s);
        if v.is_none() {
            f.issue(
                "labels.task",
                format!(
                    "found {s:?}, expected one of: {}",
                    label_names::<TaskType>()
                ),
            );
        }
        v
    });
    let data = data.and_then(|s| {
        let v = parse_label::<DataType>(&s);
        if v.is_none() {
            f.issue(
                "labels.data",
                format!(
                    "found {s:?}, expected one of: {}",
                    label_names::<DataType>()
                ),
            );
        }
        v
    });
    if let Some(extra) = obj
        .keys()
        .find(|k| !["stage", "task", "data"].contains(&k.as_str()))
    {
        let hint = reprolab_core::error::did_you_mean(extra, ["stage", "task", "data"])
            .map(|h| format!(" ({h})"))
            .unwrap_or_default();
        f.issue(
            &format!("labels.{extra}"),
            format!("unknown label; expected stage, task and data{hint}"),
        );
    }
    Some(Labels {
        stage: stage?,
        task: task?,
        data: data?,
    })
}

fn read_timeout(f: &mut Fields) -> Option<f64> {
    match f.obj.get("timeout_s") {
        None | Some(Value::Null) => Some(DEFAULT_TIMEOUT_S),
        Some(Value::Number(n)) => match n.as_f64() {
            Some(t) if t > 0.0 && t <= 3600.0 => Some(t),
            _ => {
                f.issue(
                    "timeout_s",
                    format!("found {n}, expected seconds in (0, 3600]"),
                );
                None
            }
        },
        Some(other) => {
            f.issue(
                "timeout_s",
                format!("found {}, expected a number of seconds", describe(other)),
            );
            None
        }
    }
}

fn read_requirements(f: &mut Fields) -> Option<Vec<String>> {
    let reqs = f.strings("requirements", Some(Vec::new()))?;
    let mut ok = true;
    for (i, r) in reqs.iter().enumerate() {
        if !KNOWN_REQUIREMENTS.contains(&r.as_str()) {
            f.issue(
                &format!("requirements[{i}]"),
                format!(
                    "found {r:?}, expected one of the packages of the managed environment: {}",
                    KNOWN_REQUIREMENTS.join(", ")
                ),
            );
            ok = false;
        }
    }
    ok.then_some(reqs)
}

fn read_function(f: &mut Fields) -> Option<TaskKind> {
    let entry_point = f.string("entry_point", true);
    if let Some(e) = &entry_point
        && !is_identifier(e)
    {
        f.issue(
            "entry_point",
            format!("found {e:?}, expected a Python identifier"),
        );
    }
    let reference = f.string("reference", true);
    let test = f.string("test", true);
    let wrong = f.strings("wrong", Some(Vec::new()));
    if let Some(w) = &wrong {
        for (i, code) in w.iter().enumerate() {
            if code.trim().is_empty() {
                f.issue(
                    &format!("wrong[{i}]"),
                    "is empty; expected a complete module",
                );
            }
        }
    }
    let entry_point = entry_point.filter(|e| is_identifier(e))?;
    Some(TaskKind::Function {
        entry_point,
        reference: reference?,
        test: test?,
        wrong: wrong?,
    })
}

fn read_repository(f: &mut Fields, base: &Path) -> Option<TaskKind> {
    let repo = f.string("repo", true);
    let file = f.string("file", true);
    let function = f.string("function", true);
    let class = f.optional_string("class");
    let tests = f.strings("tests", None);
    let repo_dir = repo.as_ref().and_then(|r| {
        let dir = base.join(r);
        if dir.is_dir() {
            Some(dir.canonicalize().unwrap_or(dir))
        } else {
            f.issue(
                "repo",
                format!(
                    "{} is not a directory; expected a repository directory relative to the task file",
                    dir.display()
                ),
            );
            None
        }
    });
    if let Some(name) = &function
        && !is_identifier(name)
    {
        f.issue(
            "function",
            format!("found {name:?}, expected a Python identifier"),
        );
    }
    if let Some(name) = &class
        && !is_identifier(name)
    {
        f.issue(
            "class",
            format!("found {name:?}, expected a Python identifier"),
        );
    }
    if let (Some(dir), Some(file)) = (&repo_dir, &file) {
        if !is_inside(file) || !file.ends_with(".py") {
            f.issue(
                "file",
                format!(
                    "found {file:?}, expected a .py file relative to the repository, without `..`"
                ),
            );
        } else if !dir.join(file).is_file() {
            f.issue(
                "file",
                format!(
                    "{} does not exist in the repository",
                    dir.join(file).display()
                ),
            );
        }
    }
    if let Some(tests) = &tests {
        if tests.is_empty() {
            f.issue(
                "tests",
                "is empty; expected at least one pytest node id such as tests/test_x.py::test_y",
            );
        }
        for (i, t) in tests.iter().enumerate() {
            let path = t.split("::").next().unwrap_or("");
            if !is_inside(path) {
                f.issue(
                    &format!("tests[{i}]"),
                    format!("found {t:?}, expected a node id relative to the repository root"),
                );
            } else if let Some(dir) = &repo_dir
                && !dir.join(path).exists()
            {
                f.issue(
                    &format!("tests[{i}]"),
                    format!(
                        "{} does not exist in the repository",
                        dir.join(path).display()
                    ),
                );
            }
        }
    }
    Some(TaskKind::Repository {
        repo: repo_dir?,
        file: file?,
        function: function.filter(|n| is_identifier(n))?,
        class,
        tests: tests.filter(|t| !t.is_empty())?,
    })
}

/// What each line of a JSON-lines file should hold, for the issue about one that does not:
/// `json` when it is not JSON, `object` when it is not an object.
pub(crate) struct LineShape {
    pub json: &'static str,
    pub object: &'static str,
}

/// Reads each JSON object line of `text` with `read`, which records what is wrong with the
/// line on its [`Fields`] (and returns `None` when the line yields nothing); lines that are not
/// JSON objects are issues too. Returns what was read and every issue, in line order.
pub(crate) fn read_jsonl<T>(
    text: &str,
    file: &Path,
    shape: &LineShape,
    mut read: impl FnMut(&mut Fields<'_>) -> Option<T>,
) -> (Vec<T>, Vec<Issue>) {
    let mut issues = Vec::new();
    let mut out = Vec::new();
    for (line, raw) in jsonl_lines(text) {
        let obj = match serde_json::from_str(raw) {
            Ok(Value::Object(obj)) => obj,
            found => {
                let message = match found {
                    Ok(value) => format!("found {}, expected {}", describe(&value), shape.object),
                    Err(e) => format!("not valid JSON ({e}); expected {}", shape.json),
                };
                issues.push(Issue {
                    file: file.to_path_buf(),
                    line,
                    field: String::new(),
                    message,
                });
                continue;
            }
        };
        let mut f = Fields {
            obj: &obj,
            file,
            line,
            issues: &mut issues,
        };
        out.extend(read(&mut f));
    }
    (out, issues)
}

/// Parse a task file's text (`file` is only used in messages and to resolve repositories).
pub fn parse_tasks(text: &str, file: &Path) -> Result<Vec<Task>, FileError> {
    let base = file.parent().unwrap_or(Path::new("."));
    let mut seen: HashMap<String, usize> = HashMap::new();
    let shape = LineShape {
        json: "one task object per line",
        object: "a task object",
    };
    let (tasks, mut issues) = read_jsonl(text, file, &shape, |f| {
        let id = f.string("id", true);
        if let Some(id) = &id {
            if !is_task_id(id) {
                f.issue(
                    "id",
                    format!("found {id:?}, expected lowercase letters, digits, _, / and -"),
                );
            } else if let Some(first) = seen.get(id) {
                f.issue(
                    "id",
                    format!(
                        "{id:?} is already the id of the task on line {first}; ids must be unique"
                    ),
                );
            } else {
                seen.insert(id.clone(), f.line);
            }
        }
        let prompt = f.string("prompt", true);
        let labels = read_labels(f);
        let requirements = read_requirements(f);
        let timeout_s = read_timeout(f);
        let kind = if f.obj.contains_key("repo") {
            f.unknown_fields(REPOSITORY_FIELDS);
            read_repository(f, base)
        } else {
            f.unknown_fields(FUNCTION_FIELDS);
            read_function(f)
        };
        Some(Task {
            id: id?,
            prompt: prompt?,
            labels: labels?,
            requirements: requirements?,
            timeout_s: timeout_s?,
            kind: kind?,
            file: file.to_path_buf(),
            line: f.line,
        })
    });
    if tasks.is_empty() && issues.is_empty() {
        issues.push(Issue {
            file: file.to_path_buf(),
            line: 0,
            field: String::new(),
            message: "holds no task; expected one JSON task object per line".into(),
        });
    }
    if issues.is_empty() {
        Ok(tasks)
    } else {
        Err(FileError { issues })
    }
}

/// Read and check a task file.
pub fn load_tasks(path: &Path) -> Result<Vec<Task>, FileError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| FileError::single(path, 0, "", format!("cannot read the task file: {e}")))?;
    parse_tasks(&text, path)
}

/// Why tasks or their generations could not be selected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectError {
    /// An `--only` pattern matches no task; `ids` lists (the first of) those that exist.
    #[error("--only {pattern:?} matches no task; tasks are: {ids}")]
    NoMatch { pattern: String, ids: String },
    /// A generations file answers tasks the task file does not have (most likely the wrong
    /// file); `ids` lists (the first of) them.
    #[error("the generations name tasks that are not in the task file: {ids}")]
    UnknownTasks { ids: String },
}

/// The tasks whose id is in `only` (an id, or a prefix ending in `*`); an entry that matches no
/// task is an error naming the ids that exist.
pub fn select(tasks: Vec<Task>, only: &[String]) -> Result<Vec<Task>, SelectError> {
    if only.is_empty() {
        return Ok(tasks);
    }
    let matches = |pattern: &str, id: &str| match pattern.strip_suffix('*') {
        Some(prefix) => id.starts_with(prefix),
        None => pattern == id,
    };
    for p in only {
        if !tasks.iter().any(|t| matches(p, &t.id)) {
            let ids: Vec<&str> = tasks.iter().map(|t| t.id.as_str()).take(20).collect();
            return Err(SelectError::NoMatch {
                pattern: p.clone(),
                ids: format!(
                    "{}{}",
                    ids.join(", "),
                    if tasks.len() > 20 { ", …" } else { "" }
                ),
            });
        }
    }
    Ok(tasks
        .into_iter()
        .filter(|t| only.iter().any(|p| matches(p, &t.id)))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn function_task(id: &str) -> Value {
        json!({
            "id": id, "prompt": "def f(x): ...", "entry_point": "f",
            "reference": "def f(x):\n    return x\n",
            "test": "from solution import f\ndef test_a():\n    assert f(1) == 1\n",
            "labels": {"stage": "training", "task": "general", "data": "others"},
            "requirements": ["torch"], "timeout_s": 30,
            "wrong": ["def f(x):\n    return 0\n"]
        })
    }

    fn parse(lines: &[Value]) -> Result<Vec<Task>, FileError> {
        let text: String = lines.iter().map(|v| format!("{v}\n")).collect();
        parse_tasks(&text, Path::new("/nowhere/tasks.jsonl"))
    }

    fn messages(e: &FileError) -> Vec<String> {
        e.issues.iter().map(|i| i.to_string()).collect()
    }

    #[test]
    fn a_valid_function_task_is_read() {
        let tasks = parse(&[function_task("pre/a")]).unwrap();
        assert_eq!(tasks.len(), 1);
        let t = &tasks[0];
        assert_eq!(t.id, "pre/a");
        assert_eq!(t.labels.stage, Stage::Training);
        assert_eq!(t.timeout_s, 30.0);
        assert_eq!(t.line, 1);
        assert!(matches!(&t.kind, TaskKind::Function { wrong, .. } if wrong.len() == 1));
        assert_eq!(t.target_name(), "f");
    }

    #[test]
    fn comments_and_blank_lines_are_skipped_and_defaults_apply() {
        let mut v = function_task("a");
        v.as_object_mut().unwrap().remove("timeout_s");
        v.as_object_mut().unwrap().remove("wrong");
        let text = format!("// header\n\n{v}\n");
        let tasks = parse_tasks(&text, Path::new("t.jsonl")).unwrap();
        assert_eq!(tasks[0].line, 3);
        assert_eq!(tasks[0].timeout_s, DEFAULT_TIMEOUT_S);
    }

    #[test]
    fn errors_name_file_line_field_and_expectation() {
        let mut bad = function_task("Bad Id");
        bad["labels"]["stage"] = json!("pretraining");
        bad["timeout_s"] = json!(-1);
        bad["requirements"] = json!(["tensorflow"]);
        bad["entry_point"] = json!(3);
        bad["timeot_s"] = json!(5);
        let e = parse(&[function_task("ok"), bad]).unwrap_err();
        let m = messages(&e);
        let has = |needle: &str| m.iter().any(|x| x.contains(needle));
        assert!(
            has("/nowhere/tasks.jsonl:2: field `id`: found \"Bad Id\", expected lowercase"),
            "{m:#?}"
        );
        assert!(
            has(
                "field `labels.stage`: found \"pretraining\", expected one of: pre_post_processing"
            ),
            "{m:#?}"
        );
        assert!(
            has("field `timeout_s`: found -1, expected seconds"),
            "{m:#?}"
        );
        assert!(
            has("field `requirements[0]`: found \"tensorflow\""),
            "{m:#?}"
        );
        assert!(
            has("field `entry_point`: found the number 3, expected a string"),
            "{m:#?}"
        );
        assert!(has("field `timeot_s`: unknown field"), "{m:#?}");
        assert!(
            m.iter().any(|x| x.starts_with("/nowhere/tasks.jsonl:")
                && x.contains("field `timeot_s`: unknown field")
                && x.ends_with("(did you mean 'timeout_s'?)")),
            "{m:#?}"
        );
        assert!(e.to_string().starts_with("6 problems:"), "{e}");
    }

    #[test]
    fn missing_fields_and_bad_json_are_reported_per_line() {
        let text = "{\"id\": \"a\"}\nnot json\n[1]\n";
        let e = parse_tasks(text, Path::new("t.jsonl")).unwrap_err();
        let m = messages(&e);
        assert!(
            m.iter()
                .any(|x| x == "t.jsonl:1: field `prompt`: missing; expected a string"),
            "{m:#?}"
        );
        assert!(
            m.iter()
                .any(|x| x.starts_with("t.jsonl:1: field `labels`: missing")),
            "{m:#?}"
        );
        assert!(
            m.iter().any(|x| x.starts_with("t.jsonl:2: not valid JSON")),
            "{m:#?}"
        );
        assert!(
            m.iter()
                .any(|x| x == "t.jsonl:3: found an array of 1, expected a task object"),
            "{m:#?}"
        );
    }

    #[test]
    fn duplicate_ids_name_the_first_line() {
        let e = parse(&[function_task("a"), function_task("a")]).unwrap_err();
        assert!(
            e.issues[0]
                .message
                .contains("already the id of the task on line 1"),
            "{e}"
        );
        assert_eq!(e.issues[0].line, 2);
    }

    #[test]
    fn an_empty_file_is_an_error() {
        let e = parse_tasks("// nothing\n", Path::new("t.jsonl")).unwrap_err();
        assert!(e.to_string().contains("holds no task"));
    }

    #[test]
    fn repository_tasks_check_their_paths() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("repo/pkg")).unwrap();
        std::fs::create_dir_all(dir.path().join("repo/tests")).unwrap();
        std::fs::write(dir.path().join("repo/pkg/ops.py"), "def f():\n    pass\n").unwrap();
        std::fs::write(dir.path().join("repo/tests/test_ops.py"), "").unwrap();
        let good = json!({
            "id": "repo/f", "prompt": "p", "repo": "repo", "file": "pkg/ops.py",
            "function": "f", "tests": ["tests/test_ops.py::test_f"],
            "labels": {"stage": "inference", "task": "general", "data": "image"}
        });
        let mut bad = good.clone();
        bad["id"] = json!("repo/g");
        bad["file"] = json!("../ops.py");
        bad["tests"] = json!(["tests/test_missing.py::t"]);
        bad["class"] = json!("1Bad");
        let path = dir.path().join("tasks.jsonl");
        std::fs::write(&path, format!("{good}\n{bad}\n")).unwrap();
        let e = load_tasks(&path).unwrap_err();
        let m = messages(&e);
        assert!(
            m.iter()
                .any(|x| x.contains(":2: field `file`: found \"../ops.py\"")),
            "{m:#?}"
        );
        assert!(
            m.iter()
                .any(|x| x.contains(":2: field `tests[0]`:") && x.contains("does not exist")),
            "{m:#?}"
        );
        assert!(
            m.iter()
                .any(|x| x.contains(":2: field `class`: found \"1Bad\"")),
            "{m:#?}"
        );
        assert_eq!(m.len(), 3, "line 1 is fine: {m:#?}");

        std::fs::write(&path, format!("{good}\n")).unwrap();
        let tasks = load_tasks(&path).unwrap();
        assert!(tasks[0].is_repository());
        let fp = tasks[0].fingerprint().unwrap();
        std::fs::write(dir.path().join("repo/tests/test_ops.py"), "# changed\n").unwrap();
        assert_ne!(
            fp,
            tasks[0].fingerprint().unwrap(),
            "the repository is part of the key"
        );
    }

    #[test]
    fn select_by_id_and_prefix() {
        let tasks = parse(&[
            function_task("pre/a"),
            function_task("pre/b"),
            function_task("train/c"),
        ])
        .unwrap();
        let ids = |v: Vec<Task>| v.into_iter().map(|t| t.id).collect::<Vec<_>>();
        assert_eq!(
            ids(select(tasks.clone(), &["pre/*".into()]).unwrap()),
            ["pre/a", "pre/b"]
        );
        assert_eq!(
            ids(select(tasks.clone(), &["train/c".into()]).unwrap()),
            ["train/c"]
        );
        let e = select(tasks, &["nope".into()]).unwrap_err().to_string();
        assert!(e.contains("matches no task") && e.contains("pre/a"), "{e}");
    }
}
