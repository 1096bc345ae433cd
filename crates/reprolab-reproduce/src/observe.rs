//! What one run of a reproduction script showed: read from the files `python -m reprolab.repro`
//! writes (`observed.json`, `reported.jsonl`) and from how the process ended (the watchdog's
//! timeout, memory and output limits, a signal).

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RunStatus {
    /// The script finished.
    Ok,
    /// The script raised.
    Exception,
    /// The script called `sys.exit` with a non-zero code.
    Exit,
    Timeout,
    /// Past the memory limit.
    Oom,
    /// Printed more than the output limit.
    OutputLimit,
    /// Wrote more than the disk limit into its work directory.
    DiskLimit,
    /// The process died without a record (a signal, a crash in native code).
    Crashed,
    /// reprolab could not start it.
    NotStarted,
}

impl RunStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Ok => "ok",
            RunStatus::Exception => "exception",
            RunStatus::Exit => "exit",
            RunStatus::Timeout => "timeout",
            RunStatus::Oom => "oom",
            RunStatus::OutputLimit => "output-limit",
            RunStatus::DiskLimit => "disk-limit",
            RunStatus::Crashed => "crashed",
            RunStatus::NotStarted => "not-started",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObservedFrame {
    pub file: String,
    pub line: u32,
    pub function: String,
    #[serde(default)]
    pub code: String,
    pub in_script: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObservedException {
    #[serde(rename = "type")]
    pub type_name: String,
    pub module: String,
    pub message: String,
    pub frames: Vec<ObservedFrame>,
    /// `raise` or `assert` when the script's own statement raised it.
    pub raised_by: Option<String>,
    /// The exception class is defined in the script.
    pub defined_in_script: bool,
}

impl ObservedException {
    /// `module.Type`, or just `Type` for builtins.
    pub fn qualified(&self) -> String {
        if self.module == "builtins" || self.module.is_empty() {
            self.type_name.clone()
        } else {
            format!("{}.{}", self.module, self.type_name)
        }
    }

    pub fn last_frame(&self) -> Option<&ObservedFrame> {
        self.frames.last()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObservedWarning {
    pub category: String,
    pub message: String,
    pub file: String,
    pub line: u32,
    pub in_script: bool,
    /// The script's own `warnings.warn(...)` issued it.
    pub warned_by_script: bool,
}

/// One run of a script with one seed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Observation {
    pub seed: u64,
    pub status: RunStatus,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    /// Outermost first, then what it was raised from.
    pub exceptions: Vec<ObservedException>,
    pub warnings: Vec<ObservedWarning>,
    /// Each `reprolab.report(...)` call, in order.
    pub reported: Vec<Map<String, Value>>,
    /// Names the script reports as literals, which do not count.
    pub literal_reports: Vec<String>,
    pub output_tail: String,
    pub duration_s: f64,
    pub peak_mb: u64,
}

/// The `observed.json` the Python runner writes.
#[derive(Deserialize)]
struct RunnerRecord {
    status: String,
    exit_code: Option<i32>,
    #[serde(default)]
    exceptions: Vec<ObservedException>,
    #[serde(default)]
    warnings: Vec<ObservedWarning>,
    #[serde(default)]
    literal_reports: Vec<String>,
}

/// How the process ended, as the watchdog saw it.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProcessEnd {
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    /// `Some` when a limit killed it.
    pub killed_for: Option<RunStatus>,
    pub duration_s: f64,
    pub peak_mb: u64,
}

/// Read a run's record from `out_dir`; the process end decides when there is none (or when a
/// limit killed it after the record was written, the limit wins).
pub fn read(seed: u64, out_dir: &Path, end: ProcessEnd, output_tail: String) -> Observation {
    let record: Option<RunnerRecord> = std::fs::read_to_string(out_dir.join("observed.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok());
    let reported = read_reported(&out_dir.join("reported.jsonl"));
    let status = match (&end.killed_for, &record) {
        (Some(limit), _) => *limit,
        (None, Some(r)) => match r.status.as_str() {
            "ok" => RunStatus::Ok,
            "exit" => RunStatus::Exit,
            _ => RunStatus::Exception,
        },
        (None, None) => RunStatus::Crashed,
    };
    let (exceptions, warnings, literal_reports, exit_code) = match record {
        Some(r) => (r.exceptions, r.warnings, r.literal_reports, r.exit_code),
        None => (Vec::new(), Vec::new(), Vec::new(), end.exit_code),
    };
    Observation {
        seed,
        status,
        exit_code,
        signal: end.signal,
        exceptions,
        warnings,
        reported,
        literal_reports,
        output_tail,
        duration_s: end.duration_s,
        peak_mb: end.peak_mb,
    }
}

/// At most this many report() calls are kept (a script reporting in a tight loop).
const MAX_REPORTED: usize = 10_000;

fn read_reported(path: &Path) -> Vec<Map<String, Value>> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|l| serde_json::from_str::<Map<String, Value>>(l).ok())
        .take(MAX_REPORTED)
        .collect()
}

/// A reported value as a number: numbers as they are, `"nan"`/`"inf"`/`"-inf"` as those, a
/// bool as 0/1, an array summary as its mean (NaN when it held any non-finite element).
pub fn numeric(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
        Value::String(s) => match s.as_str() {
            "nan" => Some(f64::NAN),
            "inf" => Some(f64::INFINITY),
            "-inf" => Some(f64::NEG_INFINITY),
            _ => None,
        },
        Value::Object(o) => {
            if o.get("nonfinite").and_then(Value::as_u64).unwrap_or(0) > 0 {
                Some(f64::NAN)
            } else {
                o.get("mean").and_then(numeric)
            }
        }
        _ => None,
    }
}

impl Observation {
    /// This observation without what differs between two runs of the same script that saw the
    /// same thing: times, memory peaks, and where the script lay (each run gets its own scratch
    /// directory). Two runs, warm and fresh, must give equal `comparable()`s.
    pub fn comparable(&self) -> Observation {
        static SCRIPT_PATH: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
            regex::Regex::new(r#"[^\s"'`(]*/(reproduce\.py)"#).expect("a valid pattern")
        });
        let plain = |s: &str| SCRIPT_PATH.replace_all(s, "$1").into_owned();
        let mut o = self.clone();
        o.duration_s = 0.0;
        o.peak_mb = 0;
        o.output_tail = plain(&o.output_tail);
        for e in &mut o.exceptions {
            e.message = plain(&e.message);
            for f in &mut e.frames {
                f.file = plain(&f.file);
            }
        }
        for w in &mut o.warnings {
            w.message = plain(&w.message);
            w.file = plain(&w.file);
        }
        o
    }

    /// The values reported under `name`, in order, leaving out literal reports.
    pub fn series(&self, name: &str) -> Vec<f64> {
        if self.literal_reports.iter().any(|l| l == name) {
            return Vec::new();
        }
        self.reported
            .iter()
            .filter_map(|r| r.get(name).and_then(numeric))
            .collect()
    }

    /// Every reported name (first appearance order), literal ones left out.
    pub fn reported_names(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for r in &self.reported {
            for k in r.keys() {
                if !names.contains(k) && !self.literal_reports.contains(k) {
                    names.push(k.clone());
                }
            }
        }
        names
    }

    /// A one-line summary: `ValueError: Using a target size ... (torch/nn/functional.py)`.
    pub fn headline(&self) -> String {
        match (self.status, self.exceptions.first()) {
            (RunStatus::Exception, Some(e)) => {
                let place = e
                    .last_frame()
                    .map(|f| format!(" (raised in {}:{})", short_path(&f.file), f.line))
                    .unwrap_or_default();
                format!("{}: {}{place}", e.qualified(), first_line(&e.message))
            }
            (RunStatus::Exit, _) => format!("exit code {}", self.exit_code.unwrap_or(1)),
            (RunStatus::Crashed, _) => match self.signal {
                Some(s) => format!("crashed (signal {s})"),
                None => "crashed without a record".into(),
            },
            (status, _) => status.as_str().to_string(),
        }
    }
}

/// The first line of a message.
pub fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

/// The part of a path from the installed package on (`torch/nn/functional.py`).
pub fn short_path(path: &str) -> String {
    for marker in ["site-packages/", "dist-packages/"] {
        if let Some(i) = path.rfind(marker) {
            return path[i + marker.len()..].to_string();
        }
    }
    path.rsplit('/').next().unwrap_or(path).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_record_and_a_limit_decide_the_status() {
        let dir = tempfile::tempdir().unwrap();
        let end = ProcessEnd::default();
        assert_eq!(
            read(1, dir.path(), end, String::new()).status,
            RunStatus::Crashed
        );
        std::fs::write(
            dir.path().join("observed.json"),
            json!({"status": "exception", "exit_code": 1, "exceptions": [{"type": "ValueError",
              "module": "builtins", "message": "bad", "frames": [{"file": "/e/site-packages/torch/nn/functional.py",
              "line": 7, "function": "f", "code": "", "in_script": false}], "raised_by": null,
              "defined_in_script": false}], "warnings": [], "literal_reports": ["fake"]})
            .to_string(),
        )
        .unwrap();
        std::fs::write(
            dir.path().join("reported.jsonl"),
            "{\"loss\": 1.5, \"fake\": \"nan\"}\n{\"loss\": \"nan\"}\nnot json\n",
        )
        .unwrap();
        let o = read(1, dir.path(), end, String::new());
        assert_eq!(o.status, RunStatus::Exception);
        assert_eq!(
            o.headline(),
            "ValueError: bad (raised in torch/nn/functional.py:7)"
        );
        let loss = o.series("loss");
        assert_eq!(loss[0], 1.5);
        assert!(loss[1].is_nan());
        assert!(o.series("fake").is_empty(), "literal reports do not count");
        assert_eq!(o.reported_names(), vec!["loss"]);
        let killed = ProcessEnd {
            killed_for: Some(RunStatus::Timeout),
            ..end
        };
        assert_eq!(
            read(1, dir.path(), killed, String::new()).status,
            RunStatus::Timeout
        );
    }

    #[test]
    fn numeric_reads_every_reported_form() {
        assert_eq!(numeric(&json!(2)), Some(2.0));
        assert_eq!(numeric(&json!(true)), Some(1.0));
        assert!(numeric(&json!("-inf")).unwrap().is_infinite());
        assert!(
            numeric(&json!({"mean": 1.0, "nonfinite": 2}))
                .unwrap()
                .is_nan()
        );
        assert_eq!(numeric(&json!({"mean": 0.5, "nonfinite": 0})), Some(0.5));
        assert_eq!(numeric(&json!("text")), None);
    }
}
