//! The results file of a benchmark: one JSON line per finished cell, appended (and flushed) the
//! moment the cell is known, so that a killed benchmark resumes where it stopped.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// The rows of a JSON-lines results file (none when it does not exist yet). A torn last line
/// (the command was killed mid-write) is dropped, so that row is simply computed again.
pub fn read_jsonl<T: DeserializeOwned>(path: &Path) -> Vec<T> {
    std::fs::read_to_string(path)
        .map(|t| {
            t.lines()
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect()
        })
        .unwrap_or_default()
}

/// `results.jsonl` in a benchmark's output directory, open for appending.
pub struct ResultsFile {
    path: PathBuf,
    file: std::fs::File,
}

impl ResultsFile {
    /// The name of the results file in a benchmark's output directory.
    pub const NAME: &str = "results.jsonl";

    /// Creates `dir` when needed and opens `dir/results.jsonl` for appending; returns the file
    /// and the rows an earlier (interrupted) run already wrote.
    pub fn open<T: DeserializeOwned>(dir: &Path) -> Result<(ResultsFile, Vec<T>)> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let path = dir.join(Self::NAME);
        let rows = read_jsonl(&path);
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .with_context(|| format!("opening {}", path.display()))?;
        Ok((ResultsFile { path, file }, rows))
    }

    /// Appends one row and flushes it.
    pub fn append<T: Serialize>(&mut self, row: &T) -> Result<()> {
        writeln!(self.file, "{}", serde_json::to_string(row)?)
            .and_then(|()| self.file.flush())
            .with_context(|| format!("writing {}", self.path.display()))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The name serde gives a value (`bohb`, `static`, `mutation`): enums are written in reports and
/// result files by that name.
pub fn serde_name<T: Serialize>(value: T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(String::from))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appended_rows_are_read_back_and_a_torn_line_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let (mut file, rows) = ResultsFile::open::<Vec<u32>>(dir.path()).unwrap();
        assert!(rows.is_empty());
        file.append(&vec![1u32, 2]).unwrap();
        file.append(&vec![3u32]).unwrap();
        drop(file);
        let path = dir.path().join(ResultsFile::NAME);
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str("[4, 5");
        std::fs::write(&path, text).unwrap();
        let (_, rows) = ResultsFile::open::<Vec<u32>>(dir.path()).unwrap();
        assert_eq!(rows, vec![vec![1, 2], vec![3]]);
    }

    #[test]
    fn serde_names_are_the_wire_names() {
        #[derive(Serialize)]
        #[serde(rename_all = "snake_case")]
        enum E {
            LlmRefine,
        }
        assert_eq!(serde_name(E::LlmRefine), "llm_refine");
        assert_eq!(serde_name(3), "");
    }
}
