//! The faults a benchmark run covers.

use std::path::PathBuf;

use reprolab_faults::FaultRecord;

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

/// The directory of each fault.
pub fn dirs<T>(faults: &[(PathBuf, T)]) -> Vec<PathBuf> {
    faults.iter().map(|(d, _)| d.clone()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

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
