//! A code directory as a model reads it: its source and config files, ranked by how much of a
//! query they mention, shown with line numbers (so answers can cite `file:line`) within a
//! character budget.

use std::collections::HashSet;
use std::path::Path;

/// Files read at most, and the largest one read.
const MAX_FILES: usize = 200;
const MAX_FILE_BYTES: u64 = 200_000;
const EXTENSIONS: &[&str] = &[
    "py", "json", "toml", "yaml", "yml", "cfg", "ini", "txt", "sh",
];

#[derive(Debug, Clone, PartialEq)]
pub struct CodeFile {
    /// Relative to the directory.
    pub path: String,
    pub text: String,
}

/// The last part of a `/`-separated path.
pub fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// A `/`-separated path that stays inside its directory and shows nothing hidden: not empty,
/// not absolute, no empty, `.`, `..` or dot-file part. Paths that came from a model or the
/// network are written only when this holds.
pub fn is_inside_and_visible(path: &str) -> bool {
    !path.is_empty()
        && path
            .split('/')
            .all(|part| !part.is_empty() && !part.starts_with('.'))
}

/// The source and config files below `dir` (hidden directories and `__pycache__` skipped), in
/// path order.
pub fn read_dir(dir: &Path) -> Vec<CodeFile> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let path = e.path();
            let name = e.file_name().to_string_lossy().to_string();
            if name.starts_with('.') || name == "__pycache__" {
                continue;
            }
            let Ok(meta) = e.metadata() else { continue };
            if meta.is_dir() {
                stack.push(path);
            } else if meta.len() <= MAX_FILE_BYTES
                && path
                    .extension()
                    .is_some_and(|x| EXTENSIONS.contains(&x.to_string_lossy().as_ref()))
                && let Ok(text) = std::fs::read_to_string(&path)
            {
                let rel = path.strip_prefix(dir).unwrap_or(&path);
                out.push(CodeFile {
                    path: rel.display().to_string(),
                    text,
                });
            }
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out.truncate(MAX_FILES);
    out
}

/// Words of three letters or more, lower case, identifiers split at `_` and `.`.
fn words(text: &str) -> HashSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.len() >= 3)
        .map(str::to_lowercase)
        .collect()
}

/// `files` by how many of the query's words each contains (most first; ties in path order).
pub fn ranked<'a>(files: &'a [CodeFile], query: &str) -> Vec<&'a CodeFile> {
    let q = words(query);
    let mut scored: Vec<(usize, &CodeFile)> = files
        .iter()
        .map(|f| (words(&f.text).intersection(&q).count(), f))
        .collect();
    scored.sort_by_key(|s| std::cmp::Reverse(s.0));
    scored.into_iter().map(|(_, f)| f).collect()
}

/// The files with numbered lines, in order, until `budget` characters; a file that does not fit
/// whole is cut and says so.
pub fn render(files: &[&CodeFile], budget: usize) -> String {
    let mut out = String::new();
    for f in files {
        let header = format!("### {}\n", f.path);
        if out.len() + header.len() + 40 > budget {
            break;
        }
        out.push_str(&header);
        for (n, line) in f.text.lines().enumerate() {
            let numbered = format!("{:>4} {line}\n", n + 1);
            if out.len() + numbered.len() > budget {
                out.push_str("     … (the rest of the file is left out)\n");
                return out;
            }
            out.push_str(&numbered);
        }
        out.push('\n');
    }
    out
}

/// `s` in at most `n` characters, an ellipsis marking a cut.
pub fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        format!(
            "{}…",
            s.chars().take(n.saturating_sub(1)).collect::<String>()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, text: &str) -> CodeFile {
        CodeFile {
            path: path.into(),
            text: text.into(),
        }
    }

    #[test]
    fn files_mentioning_the_query_come_first_with_numbered_lines() {
        let files = [
            file("data.py", "def load():\n    return []\n"),
            file("loss.py", "def smoothed_loss(logits, eps=0.1):\n    pass\n"),
        ];
        let order = ranked(&files, "the smoothed loss uses eps 0.1");
        assert_eq!(order[0].path, "loss.py");
        let text = render(&order, 10_000);
        assert!(
            text.starts_with("### loss.py\n   1 def smoothed_loss"),
            "{text}"
        );
        let cut = render(&order, 60);
        assert!(
            cut.contains("left out") && !cut.contains("data.py"),
            "{cut}"
        );
    }

    #[test]
    fn hidden_and_binary_files_are_not_read() {
        let dir = std::env::temp_dir().join(format!("code-test-{}", std::process::id()));
        std::fs::create_dir_all(dir.join(".git")).unwrap();
        std::fs::create_dir_all(dir.join("pkg")).unwrap();
        std::fs::write(dir.join(".git/config.py"), "x").unwrap();
        std::fs::write(dir.join("pkg/model.py"), "import torch\n").unwrap();
        std::fs::write(dir.join("weights.bin"), [0u8, 159, 146, 150]).unwrap();
        let files = read_dir(&dir);
        assert_eq!(files.len(), 1);
        assert_eq!(files[0].path, "pkg/model.py");
        std::fs::remove_dir_all(&dir).ok();
    }
}
