//! Turning what a finished evaluation left in its work directory (`result.json`, `epochs.jsonl`,
//! `output.log`) and how its process ended into an [`Outcome`].

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use reprolab_core::Outcome;
use reprolab_core::manifest::Limits;
use serde_json::Value;

use crate::supervise::Violation;

/// How much of the end of a program's output is kept with its evaluation.
pub const OUTPUT_TAIL_BYTES: u64 = 8 * 1024;

/// How the process ended, as far as the OS says.
#[derive(Debug, Clone, Copy, Default)]
pub struct Exit {
    pub code: Option<i32>,
    pub signal: Option<i32>,
}

/// Everything an evaluation produced.
#[derive(Debug, Clone)]
pub struct Finished {
    pub outcome: Outcome,
    pub epochs: Vec<Value>,
    pub output_tail: String,
    pub duration_s: f64,
}

/// Decide the outcome. A broken limit wins over whatever the program managed to write.
pub fn interpret(
    workdir: &Path,
    exit: Exit,
    violation: Option<Violation>,
    peak_rss_mb: u64,
    limits: &Limits,
) -> (Outcome, Vec<Value>, String) {
    let output_tail = read_tail(&workdir.join("output.log"), OUTPUT_TAIL_BYTES);
    let epochs = read_epochs(&workdir.join("epochs.jsonl"));
    let outcome = match violation {
        Some(Violation::Timeout) => Outcome::Timeout {
            limit_s: limits.timeout_s,
        },
        Some(Violation::Memory) => Outcome::Oom {
            limit_mb: limits.memory_mb,
            peak_mb: peak_rss_mb,
        },
        Some(Violation::Output) => Outcome::OutputLimit {
            limit_mb: limits.output_mb,
        },
        Some(Violation::Disk) => Outcome::DiskLimit {
            limit_mb: limits.disk_mb,
        },
        None => from_result_file(
            &workdir.join("result.json"),
            exit,
            limits,
            peak_rss_mb,
            &output_tail,
        ),
    };
    (outcome, epochs, output_tail)
}

fn from_result_file(path: &Path, exit: Exit, limits: &Limits, peak: u64, tail: &str) -> Outcome {
    let crash = |detail: String| Outcome::Crash {
        exit_code: exit.code,
        signal: exit.signal,
        detail,
    };
    let Ok(text) = std::fs::read_to_string(path) else {
        // A plain script that died of an uncaught Python exception printed its traceback.
        if let Some(outcome) = exception_from_traceback(tail) {
            return outcome;
        }
        let last = tail
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("")
            .trim();
        return crash(if last.is_empty() {
            String::new()
        } else {
            format!("(last output: {last})")
        });
    };
    let Ok(v) = serde_json::from_str::<Value>(&text) else {
        return crash(format!("(unreadable result file {})", path.display()));
    };
    let metric = |k: &str| v.get(k).and_then(Value::as_f64);
    // A plain script may write just `{"search": …, "holdout": …}`.
    let status = v
        .get("status")
        .and_then(Value::as_str)
        .or(v.get("search").map(|_| "ok"));
    match status {
        Some("ok") => match (metric("search"), metric("holdout")) {
            (Some(s), Some(h))
                if s.is_finite() && h.is_finite() && !v["nonfinite"].as_bool().unwrap_or(false) =>
            {
                Outcome::Ok {
                    search: s,
                    holdout: h,
                }
            }
            (s, h) => Outcome::Nan {
                search: s.filter(|x| x.is_finite()),
                holdout: h.filter(|x| x.is_finite()),
            },
        },
        Some("exception") => Outcome::Exception {
            kind: v["type"].as_str().unwrap_or("Exception").to_string(),
            message: v["message"].as_str().unwrap_or("").to_string(),
            traceback: v["traceback"].as_str().unwrap_or("").to_string(),
        },
        // The training was stopped by its pruner (reprolab.log_epoch, see PruneSpec).
        Some("pruned") => Outcome::Pruned {
            epoch: v["epoch"].as_u64().unwrap_or(0),
            value: metric("value").filter(|x| x.is_finite()),
        },
        Some("oom") => Outcome::Oom {
            limit_mb: limits.memory_mb,
            peak_mb: peak,
        },
        other => crash(format!("(result file has status {other:?})")),
    }
}

/// The last Python traceback in `output`, as an exception outcome.
fn exception_from_traceback(output: &str) -> Option<Outcome> {
    let start = output.rfind("Traceback (most recent call last):")?;
    let traceback = output[start..].trim_end();
    let last = traceback
        .lines()
        .rev()
        .find(|l| !l.starts_with(' ') && !l.trim().is_empty())?;
    let (kind, message) = match last.split_once(": ") {
        Some((k, m)) => (k, m),
        None => (last.trim(), ""),
    };
    let looks_like_type = !kind.is_empty()
        && kind
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '.');
    looks_like_type.then(|| Outcome::Exception {
        kind: kind.to_string(),
        message: message.to_string(),
        traceback: traceback.to_string(),
    })
}

/// Per-epoch records; a torn last line (the process was killed mid-write) is dropped.
pub fn read_epochs(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .map(|s| {
            s.lines()
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect()
        })
        .unwrap_or_default()
}

/// The last `max` bytes of `text`, cut forward to a character boundary (the end of output
/// that arrived as text, as [`read_tail`] keeps a file's).
pub fn last_bytes(text: &str, max: u64) -> String {
    let mut start = text.len().saturating_sub(max as usize);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    text[start..].to_string()
}

/// The last `max` bytes of a file, lossily decoded, starting at a line boundary when possible.
pub fn read_tail(path: &Path, max: u64) -> String {
    let Ok(mut f) = std::fs::File::open(path) else {
        return String::new();
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let start = len.saturating_sub(max);
    if f.seek(SeekFrom::Start(start)).is_err() {
        return String::new();
    }
    let mut buf = Vec::new();
    let _ = f.take(max).read_to_end(&mut buf);
    let text = String::from_utf8_lossy(&buf).into_owned();
    if start > 0 {
        match text.find('\n') {
            Some(i) => format!("[… {start} bytes cut]\n{}", &text[i + 1..]),
            None => text,
        }
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, body: &str) {
        std::fs::write(dir.join(name), body).unwrap();
    }

    #[test]
    fn ok_nan_exception_and_missing_results() {
        let d = tempfile::tempdir().unwrap();
        let limits = Limits::default();
        let exit = Exit {
            code: Some(0),
            signal: None,
        };
        write(
            d.path(),
            "result.json",
            r#"{"status":"ok","search":0.9,"holdout":0.8}"#,
        );
        let (o, _, _) = interpret(d.path(), exit, None, 10, &limits);
        assert_eq!(
            o,
            Outcome::Ok {
                search: 0.9,
                holdout: 0.8
            }
        );

        write(
            d.path(),
            "result.json",
            r#"{"status":"ok","search":null,"holdout":0.8,"nonfinite":true}"#,
        );
        let (o, _, _) = interpret(d.path(), exit, None, 10, &limits);
        assert_eq!(o.kind(), "nan");

        write(
            d.path(),
            "result.json",
            r#"{"status":"exception","type":"ValueError","message":"m","traceback":"t"}"#,
        );
        let (o, _, _) = interpret(d.path(), exit, None, 10, &limits);
        assert_eq!(o.kind(), "exception");

        std::fs::remove_file(d.path().join("result.json")).unwrap();
        write(d.path(), "output.log", "Segmentation fault\n");
        let (o, _, tail) = interpret(
            d.path(),
            Exit {
                code: None,
                signal: Some(11),
            },
            None,
            10,
            &limits,
        );
        assert!(
            matches!(
                o,
                Outcome::Crash {
                    signal: Some(11),
                    ..
                }
            ),
            "{o:?}"
        );
        assert!(tail.contains("Segmentation"));
    }

    #[test]
    fn a_script_traceback_becomes_an_exception() {
        let d = tempfile::tempdir().unwrap();
        write(
            d.path(),
            "output.log",
            "epoch 1\nTraceback (most recent call last):\n  File \"t.py\", line 3, in <module>\n    f()\nValueError: bad: shape\n",
        );
        let (o, _, _) = interpret(
            d.path(),
            Exit {
                code: Some(1),
                signal: None,
            },
            None,
            0,
            &Limits::default(),
        );
        match o {
            Outcome::Exception {
                kind,
                message,
                traceback,
            } => {
                assert_eq!(kind, "ValueError");
                assert_eq!(message, "bad: shape");
                assert!(traceback.starts_with("Traceback"));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_broken_limit_wins() {
        let d = tempfile::tempdir().unwrap();
        write(
            d.path(),
            "result.json",
            r#"{"status":"ok","search":0.9,"holdout":0.8}"#,
        );
        let (o, _, _) = interpret(
            d.path(),
            Exit::default(),
            Some(Violation::Timeout),
            0,
            &Limits::default(),
        );
        assert_eq!(o.kind(), "timeout");
    }

    #[test]
    fn the_end_of_a_text_is_cut_at_a_character_boundary() {
        assert_eq!(last_bytes("hello", 3), "llo");
        assert_eq!(last_bytes("hi", 10), "hi");
        // "é" is two bytes: a cut through it starts after it.
        assert_eq!(last_bytes("aéb", 2), "b");
    }

    #[test]
    fn torn_epoch_lines_are_dropped_and_tail_is_bounded() {
        let d = tempfile::tempdir().unwrap();
        write(
            d.path(),
            "epochs.jsonl",
            "{\"epoch\":0}\n{\"epoch\":1}\n{\"epo",
        );
        assert_eq!(read_epochs(&d.path().join("epochs.jsonl")).len(), 2);
        let big: String = (0..10_000).map(|i| format!("line {i}\n")).collect();
        write(d.path(), "output.log", &big);
        let tail = read_tail(&d.path().join("output.log"), 100);
        assert!(tail.starts_with("[…"));
        assert!(tail.ends_with("line 9999\n"));
        assert!(tail.len() < 200);
    }
}
