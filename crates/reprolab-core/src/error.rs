//! Errors of loading a subject: each names the file, the key, what was found and what was
//! expected.

use std::fmt;
use std::io;
use std::path::PathBuf;

/// Why a subject (its `reprolab.toml`, its config or its fix) could not be loaded.
///
/// `Display` is meant for users: one line per problem, each starting with the file (and
/// `:line:column` where known).
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// There is no manifest at the given path (or the directory has no `reprolab.toml`).
    #[error(
        "{}: no such file; expected a subject directory containing reprolab.toml, or the path of a reprolab.toml",
        path.display()
    )]
    NotFound { path: PathBuf },
    /// The manifest exists but could not be read.
    #[error("{}: cannot read", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// The manifest is not valid TOML.
    #[error("{}:{line}:{column}: TOML syntax error: {message}", file.display())]
    Syntax {
        file: PathBuf,
        /// 1-based.
        line: usize,
        /// 1-based, in characters.
        column: usize,
        message: String,
    },
    /// The manifest (or a config it names) is well-formed but wrong; every problem found, in
    /// file order as far as possible. Never empty.
    #[error("{}", DisplayIssues(issues))]
    Invalid { issues: Vec<Issue> },
}

impl ManifestError {
    /// The problems of an [`Invalid`](ManifestError::Invalid) error; empty for the others.
    pub fn issues(&self) -> &[Issue] {
        match self {
            ManifestError::Invalid { issues } => issues,
            _ => &[],
        }
    }

    /// Whether some issue is of this kind.
    pub fn has(&self, kind: IssueKind) -> bool {
        self.issues().iter().any(|i| i.kind == kind)
    }

    /// The first issue about this key (dotted path), if any.
    pub fn issue_at(&self, key: &str) -> Option<&Issue> {
        self.issues().iter().find(|i| i.key == key)
    }
}

struct DisplayIssues<'a>(&'a [Issue]);

impl fmt::Display for DisplayIssues<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, issue) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{issue}")?;
        }
        Ok(())
    }
}

/// A 1-based line and column (in characters) in a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    pub line: usize,
    pub column: usize,
}

impl Position {
    /// The position of a byte offset in `text`.
    pub fn of_offset(text: &str, offset: usize) -> Position {
        let mut offset = offset.min(text.len());
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        let before = &text[..offset];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let column = before[line_start..].chars().count() + 1;
        Position { line, column }
    }
}

/// One problem in a manifest or config file.
#[derive(Debug, Clone, PartialEq)]
pub struct Issue {
    /// The file at fault, as the user named it (e.g. `subjects/x/reprolab.toml`).
    pub file: PathBuf,
    /// Where in the file, when known.
    pub position: Option<Position>,
    /// Dotted key path: `task`, `space.lr.low`, `entry.callable`; for a config file the
    /// hyperparameter name. Empty when the issue concerns the whole file.
    pub key: String,
    pub kind: IssueKind,
    /// What was found, rendered (`"clasification"`, `48`); `None` when the key is missing.
    pub found: Option<String>,
    /// What was expected (`one of "classification", "regression"`).
    pub expected: String,
    /// Extra help: a "did you mean" suggestion, the space entry a config key is checked
    /// against, the underlying I/O error.
    pub hint: Option<String>,
}

/// The kinds of [`Issue`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IssueKind {
    /// A key that the format does not have (typo protection).
    UnknownKey,
    /// A required key is absent.
    MissingKey,
    /// A value of the wrong TOML type (a string where a number belongs, …).
    WrongType,
    /// A value of the right type that is not allowed (unknown name, `low > high`, malformed
    /// callable or fault label, unknown placeholder, non-positive limit, …).
    InvalidValue,
    /// Keys that exclude each other, or none of keys one of which is required (`entry.callable`
    /// / `entry.command`).
    Conflict,
    /// A file named by the manifest (entry file, config, fix config) is missing or unreadable.
    MissingFile,
    /// A config file is not valid JSON or not a JSON object.
    InvalidJson,
    /// A config key that is not a parameter of the search space.
    NotInSpace,
    /// A parameter of the search space that the config lacks.
    MissingFromConfig,
    /// A config value outside its parameter's domain.
    OutOfDomain,
}

impl fmt::Display for Issue {
    /// `subjects/x/reprolab.toml:3:8: key 'task': found "clasification", expected one of
    /// "classification", "regression" (did you mean "classification"?)`
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(p) = self.position {
            write!(f, ":{}:{}", p.line, p.column)?;
        }
        f.write_str(": ")?;
        if !self.key.is_empty() {
            write!(f, "key '{}': ", self.key)?;
        }
        match &self.found {
            Some(found) => write!(f, "found {found}")?,
            None => f.write_str("missing")?,
        }
        write!(f, ", expected {}", self.expected)?;
        if let Some(h) = &self.hint {
            write!(f, " ({h})")?;
        }
        Ok(())
    }
}

/// The candidate closest to `word`, if close enough to be a likely typo.
pub fn closest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let w = word.to_lowercase();
    let limit = (w.chars().count() / 3).clamp(1, 3);
    candidates
        .into_iter()
        .filter(|c| *c != word)
        .map(|c| (edit_distance(&w, &c.to_lowercase()), c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// `did you mean 'lr'?` for a key close to `word`.
pub fn did_you_mean<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<String> {
    closest(word, candidates).map(|c| format!("did you mean '{c}'?"))
}

/// Optimal string alignment distance (Levenshtein plus adjacent transpositions).
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = v;
        }
    }
    d[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions_catch_typos_only() {
        let keys = ["timeout_s", "memory_mb", "output_mb"];
        assert_eq!(closest("timout_s", keys), Some("timeout_s"));
        assert_eq!(closest("memroy_mb", keys), Some("memory_mb"));
        assert_eq!(closest("Memory_MB", keys), Some("memory_mb"));
        assert_eq!(closest("gpu", keys), None);
        assert_eq!(
            closest("clasification", ["classification", "regression"]),
            Some("classification")
        );
        assert_eq!(closest("lrr", ["lr", "act0"]), Some("lr"));
        assert_eq!(
            did_you_mean("callabel", ["callable", "command"]).unwrap(),
            "did you mean 'callable'?"
        );
    }

    #[test]
    fn positions_are_one_based() {
        let text = "a = 1\nbé = 2\n";
        assert_eq!(
            Position::of_offset(text, 0),
            Position { line: 1, column: 1 }
        );
        let off = text.find('=').unwrap();
        assert_eq!(
            Position::of_offset(text, off),
            Position { line: 1, column: 3 }
        );
        let off = text.rfind('2').unwrap();
        assert_eq!(
            Position::of_offset(text, off),
            Position { line: 2, column: 6 }
        );
        assert_eq!(Position::of_offset(text, 10_000).line, 3);
    }

    #[test]
    fn issues_display_one_per_line() {
        let issue = |key: &str, found: Option<&str>| Issue {
            file: PathBuf::from("subjects/x/reprolab.toml"),
            position: Some(Position { line: 3, column: 8 }),
            key: key.into(),
            kind: IssueKind::InvalidValue,
            found: found.map(str::to_string),
            expected: "one of \"classification\", \"regression\"".into(),
            hint: None,
        };
        let e = ManifestError::Invalid {
            issues: vec![
                issue("task", Some("\"clasification\"")),
                issue("metric.goal", None),
            ],
        };
        assert_eq!(
            e.to_string(),
            "subjects/x/reprolab.toml:3:8: key 'task': found \"clasification\", expected one of \"classification\", \"regression\"\n\
             subjects/x/reprolab.toml:3:8: key 'metric.goal': missing, expected one of \"classification\", \"regression\""
        );
        assert!(e.has(IssueKind::InvalidValue));
        assert!(e.issue_at("task").is_some());
    }
}

/// `error` and its causes on one line, `": "`-separated, the way `{:#}` shows an
/// `anyhow::Error`: for where a typed error must become a `String` without losing the cause
/// that its own message no longer repeats.
pub fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut shown = error.to_string();
    let mut cause = error.source();
    while let Some(c) = cause {
        shown.push_str(": ");
        shown.push_str(&c.to_string());
        cause = c.source();
    }
    shown
}

#[cfg(test)]
mod chain_tests {
    use super::*;

    #[test]
    fn the_cause_is_shown_once() {
        let e = ManifestError::Read {
            path: PathBuf::from("x/reprolab.toml"),
            source: io::Error::from(io::ErrorKind::NotFound),
        };
        let os = io::Error::from(io::ErrorKind::NotFound).to_string();
        let shown = chain(&e);
        assert_eq!(shown.matches(&os).count(), 1, "{shown}");
        assert!(
            shown.starts_with("x/reprolab.toml: cannot read: "),
            "{shown}"
        );
    }
}
