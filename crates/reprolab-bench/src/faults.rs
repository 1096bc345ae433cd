//! The faults a benchmark run covers.

use std::path::{Component, Path, PathBuf};

use reprolab_faults::FaultRecord;

/// The faulty subjects below `dir` ([`reprolab_faults::read_benchmark`]) whose path contains
/// one of `only` (`--only`; all when empty): what `bench localize` and `bench repair` run.
pub fn read_selected(
    dir: &Path,
    only: &[String],
) -> Result<Vec<(PathBuf, Option<FaultRecord>)>, reprolab_faults::BenchmarkError> {
    Ok(select_faults(reprolab_faults::read_benchmark(dir)?, only))
}

/// The fault directories of a benchmark whose path contains one of `only` (all when empty).
pub fn select_faults(
    faults: Vec<(PathBuf, Option<FaultRecord>)>,
    only: &[String],
) -> Vec<(PathBuf, Option<FaultRecord>)> {
    faults
        .into_iter()
        .filter(|(dir, _)| {
            only.is_empty()
                || only
                    .iter()
                    .any(|o| dir.to_string_lossy().contains(o.as_str()))
        })
        .collect()
}

/// How a report names a benchmark: a plain relative path as given (`benchmarks/faults`), else
/// the directory's own name. A report is read on other machines, where an absolute path of
/// this one means nothing and tells where someone's home is.
pub fn benchmark_name(path: &Path) -> String {
    let plain = path.components().next().is_some()
        && path.components().all(|c| matches!(c, Component::Normal(_)));
    if plain {
        return path.display().to_string();
    }
    let resolved = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    resolved.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// The directory of each fault.
pub fn dirs<T>(faults: &[(PathBuf, T)]) -> Vec<PathBuf> {
    faults.iter().map(|(d, _)| d.clone()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_names_a_benchmark_without_machine_paths() {
        assert_eq!(
            benchmark_name(Path::new("benchmarks/faults")),
            "benchmarks/faults"
        );
        assert_eq!(
            benchmark_name(Path::new("/home/someone/b/faults")),
            "faults"
        );
        let here = std::env::current_dir().unwrap();
        let name = here.file_name().unwrap().to_string_lossy().into_owned();
        assert_eq!(benchmark_name(Path::new(".")), name);
    }

    #[test]
    fn only_keeps_the_faults_whose_path_contains_a_pattern() {
        let faults: Vec<(PathBuf, Option<FaultRecord>)> = ["b/real/D1", "b/real/D3", "b/art/x"]
            .into_iter()
            .map(|p| (PathBuf::from(p), None))
            .collect();
        let dirs_of = |only: &[&str]| {
            let only: Vec<String> = only.iter().map(|s| s.to_string()).collect();
            dirs(&select_faults(faults.clone(), &only))
        };
        assert_eq!(dirs_of(&[]).len(), 3);
        assert_eq!(
            dirs_of(&["D3", "art"]),
            [PathBuf::from("b/real/D3"), "b/art/x".into()]
        );
    }
}
