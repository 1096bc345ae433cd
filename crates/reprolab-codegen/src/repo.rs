//! The repository of a repository task: hashed for the cache key and copied for every sample,
//! so that generated code is only ever written into a throw-away copy, never into the user's
//! checkout.

use std::io;
use std::path::Path;

use sha2::{Digest, Sha256};

/// Entries that are state or caches, not part of the code: neither hashed nor copied.
const SKIPPED: &[&str] = &[
    ".git",
    ".hg",
    ".svn",
    "__pycache__",
    ".pytest_cache",
    ".mypy_cache",
    ".ruff_cache",
    ".tox",
    ".venv",
    "venv",
    "node_modules",
    ".reprolab",
];

fn skipped(name: &std::ffi::OsStr) -> bool {
    name.to_str().is_some_and(|n| SKIPPED.contains(&n))
}

/// The entries of `dir` below it, sorted, without the skipped ones.
fn walk(root: &Path, dir: &Path, out: &mut Vec<std::path::PathBuf>) -> io::Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)?.collect::<Result<_, _>>()?;
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        if skipped(&e.file_name()) {
            continue;
        }
        let path = e.path();
        let kind = e.file_type()?;
        out.push(path.strip_prefix(root).unwrap_or(&path).to_path_buf());
        if kind.is_dir() {
            walk(root, &path, out)?;
        }
    }
    Ok(())
}

/// sha256 over every file's relative path and contents (symlinks by their target).
pub fn content_hash(root: &Path) -> io::Result<String> {
    let mut paths = Vec::new();
    walk(root, root, &mut paths)?;
    let mut h = Sha256::new();
    for rel in paths {
        let full = root.join(&rel);
        let meta = std::fs::symlink_metadata(&full)?;
        let body = if meta.file_type().is_symlink() {
            std::fs::read_link(&full)?
                .to_string_lossy()
                .into_owned()
                .into_bytes()
        } else if meta.is_file() {
            std::fs::read(&full)?
        } else {
            continue;
        };
        let name = rel.to_string_lossy();
        h.update((name.len() as u64).to_le_bytes());
        h.update(name.as_bytes());
        h.update((body.len() as u64).to_le_bytes());
        h.update(&body);
    }
    Ok(hex::encode(h.finalize()))
}

/// Copy the repository at `from` to the new directory `to` (files, directories and symlinks as
/// symlinks), leaving out version-control state and caches.
pub fn copy_repo(from: &Path, to: &Path) -> io::Result<()> {
    let mut paths = Vec::new();
    walk(from, from, &mut paths)?;
    std::fs::create_dir_all(to)?;
    for rel in paths {
        let (src, dst) = (from.join(&rel), to.join(&rel));
        let meta = std::fs::symlink_metadata(&src)?;
        if meta.file_type().is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&src)?, &dst)?;
        } else if meta.is_dir() {
            std::fs::create_dir_all(&dst)?;
        } else if meta.is_file() {
            std::fs::copy(&src, &dst)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_leaves_out_caches_and_hash_follows_contents() {
        let d = tempfile::tempdir().unwrap();
        let repo = d.path().join("repo");
        std::fs::create_dir_all(repo.join("pkg/__pycache__")).unwrap();
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::write(repo.join("pkg/a.py"), "x = 1\n").unwrap();
        std::fs::write(repo.join("pkg/__pycache__/a.pyc"), "junk").unwrap();
        std::fs::write(repo.join(".git/HEAD"), "ref").unwrap();
        let h1 = content_hash(&repo).unwrap();
        std::fs::write(repo.join("pkg/__pycache__/a.pyc"), "other junk").unwrap();
        assert_eq!(h1, content_hash(&repo).unwrap(), "caches do not count");
        let copy = d.path().join("copy");
        copy_repo(&repo, &copy).unwrap();
        assert_eq!(
            std::fs::read_to_string(copy.join("pkg/a.py")).unwrap(),
            "x = 1\n"
        );
        assert!(!copy.join(".git").exists() && !copy.join("pkg/__pycache__").exists());
        std::fs::write(repo.join("pkg/a.py"), "x = 2\n").unwrap();
        assert_ne!(h1, content_hash(&repo).unwrap());
    }
}
