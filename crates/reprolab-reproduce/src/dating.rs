//! When a report was written, so that the packages it uses without stating their versions can
//! be taken as they were then (uv's `--exclude-newer`): a date field of a JSON report or
//! `bug.json`, a `Date:` line in its text, or the date of the commit it names, read from a git
//! checkout of the project (`--repo`) without any network.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::LazyLock;

use regex::Regex;

use crate::report::BugReport;

/// A date (`YYYY-MM-DD`) and where it comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dated {
    pub date: String,
    pub source: String,
}

/// Fields of a JSON report or `bug.json` that may hold its date (GitHub's `created_at` first).
const DATE_FIELDS: &[&str] = &["created_at", "date", "reported_at", "reported", "created"];
/// Fields that may name the commit the bug was filed against (RepGen's `Commit Hash`).
const COMMIT_FIELDS: &[&str] = &["Commit Hash", "commit", "commit_hash"];

static DAY: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^(\d{4}-\d{2}-\d{2})").unwrap());
static DATE_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?im)^[\s>*_-]*(date|reported(?: on)?|created(?: at)?|opened(?: on)?)[*_]*\s*:[\s*_]*(\d{4}-\d{2}-\d{2})\b",
    )
    .unwrap()
});
static COMMIT: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^[0-9a-fA-F]{7,40}$").unwrap());

/// The date the report states: a date field, else a `Date:` (or `Reported on:`, `Created:`,
/// `Opened:`) line of its text.
pub fn stated_date(report: &BugReport) -> Option<Dated> {
    if let Some(meta) = &report.meta {
        for field in DATE_FIELDS {
            if let Some(day) = meta
                .get(field)
                .and_then(|v| v.as_str())
                .and_then(|t| DAY.captures(t.trim()))
            {
                return Some(Dated {
                    date: day[1].to_string(),
                    source: format!("the report's `{field}` field"),
                });
            }
        }
    }
    DATE_LINE.captures(&report.text).map(|c| Dated {
        date: c[2].to_string(),
        source: format!("the report's `{}:` line", &c[1]),
    })
}

/// The commit the report names, if any.
pub fn commit(report: &BugReport) -> Option<String> {
    let meta = report.meta.as_ref()?;
    COMMIT_FIELDS
        .iter()
        .filter_map(|f| meta.get(*f)?.as_str())
        .map(str::trim)
        .find(|h| COMMIT.is_match(h))
        .map(str::to_string)
}

/// The committer date of `hash` in the first of `repos` that is a git checkout holding it.
pub fn commit_date(hash: &str, repos: &[PathBuf]) -> Option<Dated> {
    repos.iter().find_map(|dir| {
        let date = git_commit_day(dir, hash)?;
        Some(Dated {
            date,
            source: format!(
                "commit {} in {}",
                &hash[..hash.len().min(10)],
                dir.display()
            ),
        })
    })
}

fn git_commit_day(dir: &Path, hash: &str) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["show", "-s", "--format=%cs", hash, "--"])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let day = text.lines().next()?.trim();
    (out.status.success() && DAY.is_match(day)).then(|| day.to_string())
}

/// The frameworks a report uses, as package names: the report's `framework` field, else what
/// its text imports or names.
pub fn frameworks(report: &BugReport) -> Vec<String> {
    let field = report
        .meta
        .as_ref()
        .and_then(|m| m.get("framework"))
        .and_then(|v| v.as_str())
        .map(str::to_ascii_lowercase);
    let text = report.text.to_ascii_lowercase();
    let named = |name: &str| match &field {
        Some(f) => f.contains(name),
        None => text.contains(name),
    };
    let mut out: Vec<String> = ["torch", "keras", "tensorflow"]
        .into_iter()
        .filter(|n| named(n))
        .map(str::to_string)
        .collect();
    // Keras 3 runs on torch here: a Keras report takes torch of the same time.
    if out.iter().any(|f| f == "keras") && !out.iter().any(|f| f == "torch" || f == "tensorflow") {
        out.push("torch".into());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(text: &str, meta: Option<serde_json::Value>) -> BugReport {
        BugReport {
            id: "r".into(),
            text: text.into(),
            path: PathBuf::from("r.md"),
            code_dir: None,
            meta,
        }
    }

    #[test]
    fn a_date_field_wins_over_a_date_line() {
        let r = report(
            "Date: 2021-01-01\nimport torch",
            Some(serde_json::json!({"created_at": "2023-04-02T10:11:12Z"})),
        );
        let d = stated_date(&r).unwrap();
        assert_eq!(d.date, "2023-04-02");
        assert!(d.source.contains("created_at"), "{}", d.source);
        let r = report("## Environment\n**Reported on:** 2022-11-30\n", None);
        assert_eq!(stated_date(&r).unwrap().date, "2022-11-30");
        // A date inside a sentence or a traceback is not the report's.
        let r = report("I updated on 2022-11-30 and it broke", None);
        assert_eq!(stated_date(&r), None);
    }

    #[test]
    fn the_commit_date_comes_from_a_local_checkout() {
        if Command::new("git").arg("--version").output().is_err() {
            println!("SKIPPED: no git on PATH; the commit date is read with git");
            return;
        }
        let tmp = tempfile::tempdir().unwrap();
        let git = |args: &[&str]| {
            let out = Command::new("git")
                .arg("-C")
                .arg(tmp.path())
                .args(args)
                .env("GIT_COMMITTER_DATE", "2022-06-15T12:00:00+00:00")
                .env("GIT_AUTHOR_DATE", "2022-06-15T12:00:00+00:00")
                .env("GIT_AUTHOR_NAME", "t")
                .env("GIT_AUTHOR_EMAIL", "t@example.org")
                .env("GIT_COMMITTER_NAME", "t")
                .env("GIT_COMMITTER_EMAIL", "t@example.org")
                .output()
                .unwrap();
            assert!(out.status.success(), "{out:?}");
            String::from_utf8(out.stdout).unwrap()
        };
        git(&["init", "-q"]);
        std::fs::write(tmp.path().join("a.py"), "x = 1\n").unwrap();
        git(&["add", "a.py"]);
        git(&["commit", "-q", "-m", "first"]);
        let hash = git(&["rev-parse", "HEAD"]).trim().to_string();
        let r = report(
            "",
            Some(serde_json::json!({"Commit Hash": hash, "repo": "x/y"})),
        );
        let named = commit(&r).unwrap();
        let not_git = tempfile::tempdir().unwrap();
        let dated = commit_date(
            &named,
            &[not_git.path().to_path_buf(), tmp.path().to_path_buf()],
        )
        .unwrap();
        assert_eq!(dated.date, "2022-06-15");
        assert!(dated.source.starts_with("commit "), "{}", dated.source);
        assert_eq!(commit_date("0123456789abcdef", &[tmp.path().into()]), None);
        assert_eq!(
            commit(&report("", Some(serde_json::json!({"commit": "main"})))),
            None
        );
    }

    #[test]
    fn frameworks_from_the_field_else_the_text() {
        let r = report(
            "import torch",
            Some(serde_json::json!({"framework": "PyTorch"})),
        );
        assert_eq!(frameworks(&r), vec!["torch"]);
        let r = report("PyTorch 2.1 on Linux", None);
        assert_eq!(frameworks(&r), vec!["torch"]);
        let r = report("from keras import layers", None);
        assert_eq!(frameworks(&r), vec!["keras", "torch"]);
        let r = report(
            "import tensorflow as tf\nfrom tensorflow import keras",
            None,
        );
        assert_eq!(frameworks(&r), vec!["keras", "tensorflow"]);
    }
}
