//! Content hashing: sha256 of bytes and of a subject's source tree.

use std::fs;
use std::io;
use std::path::Path;

use sha2::{Digest, Sha256};

/// Lowercase hex sha256 of `data`.
pub fn sha256_hex(data: &[u8]) -> String {
    hex::encode(Sha256::digest(data))
}

/// Files at the top of a subject directory that record results *about* the subject and never
/// take part in training, so that writing them does not change the tree hash (and so the
/// evaluation cache): `alternatives.json`, the alternative ground truths a neutrality analysis
/// writes next to a fault (a rerun of the analysis must find its own trainings cached).
pub const RESULT_FILES: [&str; 1] = ["alternatives.json"];

/// Lowercase hex sha256 over every regular file below `dir`: the files sorted by their relative
/// path (components joined by `/`), each contributing its path, a NUL byte, its length as 8
/// little-endian bytes and its contents. Entries whose name starts with `.`, directories
/// named `__pycache__` (with everything below them), Markdown files (`*.md`) and the
/// [`RESULT_FILES`] at the top are skipped. A symbolic link to a file counts
/// as that file; links to directories are not followed. The result depends only on the paths and
/// contents, never on timestamps, permissions or the order the directory lists its entries.
pub fn hash_tree(dir: &Path) -> io::Result<String> {
    hash_tree_skipping(dir, &[])
}

/// [`hash_tree`] without the files at the relative paths `skip` (`/`-separated).
pub fn hash_tree_skipping(dir: &Path, skip: &[&str]) -> io::Result<String> {
    let mut files: Vec<(Vec<u8>, std::path::PathBuf)> = Vec::new();
    collect(dir, &[], &mut files)?;
    files.retain(|(rel, _)| !skip.iter().any(|s| s.as_bytes() == rel.as_slice()));
    files.sort_by(|a, b| a.0.cmp(&b.0));
    let mut hasher = Sha256::new();
    for (rel, path) in files {
        let len = fs::metadata(&path)?.len();
        hasher.update(&rel);
        hasher.update([0u8]);
        hasher.update(len.to_le_bytes());
        let mut file = fs::File::open(&path)?;
        let copied = io::copy(&mut file, &mut hasher)?;
        if copied != len {
            return Err(io::Error::other(format!(
                "{}: changed while being hashed",
                path.display()
            )));
        }
    }
    Ok(hex::encode(hasher.finalize()))
}

fn collect(
    dir: &Path,
    prefix: &[u8],
    out: &mut Vec<(Vec<u8>, std::path::PathBuf)>,
) -> io::Result<()> {
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let name_bytes = name.as_encoded_bytes();
        if name_bytes.starts_with(b".") {
            continue;
        }
        let ty = entry.file_type()?;
        let path = entry.path();
        let mut rel = prefix.to_vec();
        if !rel.is_empty() {
            rel.push(b'/');
        }
        rel.extend_from_slice(name_bytes);
        if ty.is_dir() {
            if name_bytes == b"__pycache__" {
                continue;
            }
            collect(&path, &rel, out)?;
        } else if name_bytes.ends_with(b".md")
            || (prefix.is_empty() && RESULT_FILES.iter().any(|f| f.as_bytes() == name_bytes))
        {
            continue;
        } else if ty.is_file() {
            out.push((rel, path));
        } else if ty.is_symlink() {
            // Follow links to files; skip dangling links and links to directories (cycles).
            if fs::metadata(&path).is_ok_and(|m| m.is_file()) {
                out.push((rel, path));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_does_not_change_the_tree_hash() {
        let d = tempfile::tempdir().unwrap();
        fs::write(d.path().join("train.py"), "x = 1").unwrap();
        let before = hash_tree(d.path()).unwrap();
        fs::write(d.path().join("README.md"), "notes").unwrap();
        assert_eq!(hash_tree(d.path()).unwrap(), before);
        fs::write(d.path().join("train.py"), "x = 2").unwrap();
        assert_ne!(hash_tree(d.path()).unwrap(), before);
    }

    #[test]
    fn result_files_at_the_top_do_not_change_the_tree_hash() {
        let d = tempfile::tempdir().unwrap();
        fs::write(d.path().join("train.py"), "x = 1").unwrap();
        let before = hash_tree(d.path()).unwrap();
        fs::write(d.path().join("alternatives.json"), "{}").unwrap();
        assert_eq!(hash_tree(d.path()).unwrap(), before);
        // Only at the top: a data file of that name deeper down is source.
        fs::create_dir(d.path().join("data")).unwrap();
        fs::write(d.path().join("data/alternatives.json"), "{}").unwrap();
        assert_ne!(hash_tree(d.path()).unwrap(), before);
    }

    #[test]
    fn skipped_paths_do_not_change_the_tree_hash() {
        let d = tempfile::tempdir().unwrap();
        fs::write(d.path().join("train.py"), "x = 1").unwrap();
        let before = hash_tree(d.path()).unwrap();
        fs::create_dir(d.path().join("conf")).unwrap();
        fs::write(d.path().join("conf/c.json"), "{}").unwrap();
        assert_ne!(hash_tree(d.path()).unwrap(), before);
        assert_eq!(
            hash_tree_skipping(d.path(), &["conf/c.json"]).unwrap(),
            before
        );
        assert_ne!(hash_tree_skipping(d.path(), &["c.json"]).unwrap(), before);
    }

    #[test]
    fn sha256_of_empty_input() {
        assert_eq!(
            sha256_hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn tree_hash_is_deterministic_and_skips_hidden_and_pycache() {
        let d = tempfile::tempdir().unwrap();
        fs::write(d.path().join("train.py"), "print(1)\n").unwrap();
        fs::create_dir(d.path().join("lib")).unwrap();
        fs::write(d.path().join("lib/util.py"), "x = 1\n").unwrap();
        let h1 = hash_tree(d.path()).unwrap();
        assert_eq!(h1.len(), 64);
        assert_eq!(hash_tree(d.path()).unwrap(), h1);

        // Ignored entries do not change the hash.
        fs::create_dir(d.path().join("__pycache__")).unwrap();
        fs::write(d.path().join("__pycache__/train.cpython-311.pyc"), "junk").unwrap();
        fs::create_dir(d.path().join("lib/__pycache__")).unwrap();
        fs::write(d.path().join("lib/__pycache__/u.pyc"), "junk").unwrap();
        fs::create_dir(d.path().join(".reprolab")).unwrap();
        fs::write(d.path().join(".reprolab/store.db"), "db").unwrap();
        fs::write(d.path().join(".hidden"), "x").unwrap();
        assert_eq!(hash_tree(d.path()).unwrap(), h1);

        // Contents, names and new files do.
        fs::write(d.path().join("lib/util.py"), "x = 2\n").unwrap();
        let h2 = hash_tree(d.path()).unwrap();
        assert_ne!(h2, h1);
        fs::rename(d.path().join("lib/util.py"), d.path().join("lib/util2.py")).unwrap();
        assert_ne!(hash_tree(d.path()).unwrap(), h2);
        fs::rename(d.path().join("lib/util2.py"), d.path().join("lib/util.py")).unwrap();
        assert_eq!(hash_tree(d.path()).unwrap(), h2);
        fs::write(d.path().join("empty.txt"), "").unwrap();
        assert_ne!(hash_tree(d.path()).unwrap(), h2);
    }

    #[test]
    fn moving_bytes_between_files_changes_the_hash() {
        let a = tempfile::tempdir().unwrap();
        fs::write(a.path().join("a"), "xy").unwrap();
        fs::write(a.path().join("b"), "").unwrap();
        let b = tempfile::tempdir().unwrap();
        fs::write(b.path().join("a"), "x").unwrap();
        fs::write(b.path().join("b"), "y").unwrap();
        assert_ne!(hash_tree(a.path()).unwrap(), hash_tree(b.path()).unwrap());
    }
}
