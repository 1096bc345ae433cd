//! Which of a repository's files are fetched as context for `implement`: the top README (it
//! says what the repository is, and confirms a search hit), then the code files most likely to
//! hold the method. Research repositories keep their models, losses and training loops in
//! package folders (`src/`, `NAME/models/`), so the whole file list (the git tree) is ranked,
//! not only the top directory.
//!
//! Left out: hidden files and folders, vendored, test, documentation, example and notebook
//! folders, test files, non-code files and files over the size cap. The rest is ranked by
//! language (Python first: the model writes PyTorch), then by how much the path's words share
//! with the paper (BM25, as lineage ranks papers, plus the usual names of a method's parts:
//! model, loss, train, ...), then shallower paths, then by name. Packaging files (`setup.py`,
//! `__init__.py`, requirements) come last: they say little about the method.

use std::path::Path;

use crate::code::{file_name, is_inside_and_visible};
use crate::lineage::{bm25_scores, is_code_name};

use super::github::{self, Content, Tree};

/// A file of a repository that can be fetched.
#[derive(Debug, Clone, PartialEq)]
pub struct RepoFile {
    /// Relative to the repository's root, `/`-separated.
    pub path: String,
    pub size: u64,
    pub download_url: String,
}

/// Folders whose files are not the method's code (compared lowercase).
const SKIPPED_DIRS: &[&str] = &[
    // Vendored code and environments.
    "vendor",
    "vendored",
    "third_party",
    "third-party",
    "thirdparty",
    "3rdparty",
    "external",
    "externals",
    "extern",
    "node_modules",
    "site-packages",
    "venv",
    "__pycache__",
    "build",
    "dist",
    // Tests.
    "test",
    "tests",
    "testing",
    "unittest",
    "unittests",
    // Documentation, examples, notebooks.
    "doc",
    "docs",
    "documentation",
    "example",
    "examples",
    "demo",
    "demos",
    "tutorial",
    "tutorials",
    "notebook",
    "notebooks",
];

/// Words of a path that name a method's parts (compared lowercase, whole words).
const CORE_WORDS: &[&str] = &[
    "model",
    "models",
    "net",
    "nets",
    "network",
    "networks",
    "arch",
    "architecture",
    "layer",
    "layers",
    "module",
    "modules",
    "loss",
    "losses",
    "criterion",
    "objective",
    "train",
    "trainer",
    "training",
    "main",
    "optim",
    "optimizer",
    "algorithm",
    "method",
];

/// What naming a part adds to a path's relevance (the best match with the paper has 1): the
/// paper's own words weigh more than a generic `model.py`.
const PART_BONUS: f64 = 0.5;

/// Packaging and plumbing files: fetched only when nothing better is left.
const PLUMBING_FILES: &[&str] = &[
    "setup.py",
    "setup.cfg",
    "pyproject.toml",
    "__init__.py",
    "version.py",
    "_version.py",
];

/// Source languages after Python (configs, scripts and notebooks come after them).
const SOURCE_EXTENSIONS: &[&str] = &["pyx", "c", "cc", "cpp", "h", "hpp", "cu", "rs", "jl", "r"];

/// The files of a top-directory listing (the contents API).
pub fn from_listing(listing: &[Content]) -> Vec<RepoFile> {
    listing
        .iter()
        .filter(|c| c.kind == "file" && !c.name.contains('/'))
        .filter_map(|c| {
            Some(RepoFile {
                path: c.name.clone(),
                size: c.size,
                download_url: c.download_url.clone()?,
            })
        })
        .collect()
}

/// The files of a git tree at `branch`, downloaded from `raw_base` (symbolic links and
/// submodules are not files).
pub fn from_tree(
    tree: &Tree,
    raw_base: &str,
    full_name: &str,
    branch: &str,
) -> Result<Vec<RepoFile>, String> {
    tree.tree
        .iter()
        .filter(|e| e.kind == "blob" && e.mode != "120000")
        .map(|e| {
            Ok(RepoFile {
                path: e.path.clone(),
                size: e.size,
                download_url: github::raw_url(raw_base, full_name, branch, &e.path)?,
            })
        })
        .collect()
}

/// The files worth reading, at most `max`, each at most `max_bytes`: the top README first (one),
/// then code, best first for a paper whose method reads `query` (see the module's comment).
pub fn pick_files<'a>(
    files: &'a [RepoFile],
    query: &str,
    max: usize,
    max_bytes: u64,
) -> Vec<&'a RepoFile> {
    let usable: Vec<&RepoFile> = files
        .iter()
        .filter(|f| f.size <= max_bytes && is_safe_path(&f.path) && !in_skipped_dir(&f.path))
        .collect();
    let readme = usable
        .iter()
        .filter(|f| !f.path.contains('/') && github::is_readme_name(&f.path))
        .min_by(|a, b| a.path.cmp(&b.path));
    let code: Vec<&RepoFile> = usable
        .iter()
        .copied()
        .filter(|f| is_code_name(file_name(&f.path)) && !is_test_file(file_name(&f.path)))
        .collect();
    let mut picks: Vec<&RepoFile> = readme.into_iter().copied().collect();
    picks.extend(rank_code(code, query));
    picks.truncate(max);
    picks
}

/// `files` best first: language, relevance to `query`, depth, path.
fn rank_code<'a>(files: Vec<&'a RepoFile>, query: &str) -> Vec<&'a RepoFile> {
    let words: Vec<String> = files.iter().map(|f| path_words(&f.path)).collect();
    let texts: Vec<&str> = words.iter().map(String::as_str).collect();
    let bm25 = bm25_scores(&texts, &texts, query);
    // BM25 has no fixed scale: the best path scores 1.
    let best = bm25.iter().copied().fold(0.0, f64::max);
    let mut ranked: Vec<(u8, f64, usize, &RepoFile)> = files
        .into_iter()
        .zip(words.iter().zip(bm25))
        .map(|(f, (w, s))| {
            let relevance = if best > 0.0 { s / best } else { 0.0 };
            let part = if names_a_part(w) { PART_BONUS } else { 0.0 };
            (
                tier(&f.path),
                relevance + part,
                f.path.matches('/').count(),
                f,
            )
        })
        .collect();
    ranked.sort_by(|a, b| {
        a.0.cmp(&b.0)
            .then(b.1.total_cmp(&a.1))
            .then(a.2.cmp(&b.2))
            .then(a.3.path.cmp(&b.3.path))
    });
    ranked.into_iter().map(|(.., f)| f).collect()
}

/// 0: Python; 1: other source; 2: configs, scripts, notebooks; 3: packaging.
fn tier(path: &str) -> u8 {
    let name = file_name(path).to_ascii_lowercase();
    if PLUMBING_FILES.contains(&name.as_str()) || name.starts_with("requirements") {
        return 3;
    }
    let ext = Path::new(&name)
        .extension()
        .map(|e| e.to_string_lossy().into_owned())
        .unwrap_or_default();
    if ext == "py" {
        0
    } else if SOURCE_EXTENSIONS.contains(&ext.as_str()) {
        1
    } else {
        2
    }
}

/// A path's words, for BM25: its folders and its file name without the extension, split at
/// `_`, `-`, `/` and camelCase (`models/ResNet_cifar.py` → `models Res Net cifar`).
fn path_words(path: &str) -> String {
    let without_ext = match path.rsplit_once('.') {
        Some((stem, _)) if !stem.ends_with('/') && !stem.is_empty() => stem,
        _ => path,
    };
    let mut out = String::with_capacity(without_ext.len() + 8);
    let mut prev: Option<char> = None;
    for c in without_ext.chars() {
        if c.is_uppercase() && prev.is_some_and(|p| p.is_lowercase() || p.is_ascii_digit()) {
            out.push(' ');
        }
        out.push(if c.is_alphanumeric() { c } else { ' ' });
        prev = Some(c);
    }
    out
}

fn names_a_part(words: &str) -> bool {
    words
        .split_whitespace()
        .any(|w| CORE_WORDS.contains(&w.to_lowercase().as_str()))
}

/// Inside the repository, nothing hidden, and no backslash (a remote name is written under the
/// cache).
fn is_safe_path(path: &str) -> bool {
    is_inside_and_visible(path) && !path.contains('\\')
}

fn in_skipped_dir(path: &str) -> bool {
    let mut parts: Vec<&str> = path.split('/').collect();
    parts.pop();
    parts
        .iter()
        .any(|d| SKIPPED_DIRS.contains(&d.to_ascii_lowercase().as_str()))
}

/// pytest's and unittest's file names (`test_x.py`, `x_test.py`, `conftest.py`); a bare
/// `test.py` is often a repository's evaluation script and is kept.
fn is_test_file(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    let stem = name.rsplit_once('.').map_or(name.as_str(), |(s, _)| s);
    stem.starts_with("test_")
        || stem.ends_with("_test")
        || stem.ends_with("_tests")
        || stem == "conftest"
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, size: u64) -> RepoFile {
        RepoFile {
            path: path.into(),
            size,
            download_url: format!("http://x/{path}"),
        }
    }

    fn picked(files: &[RepoFile], query: &str, max: usize) -> Vec<String> {
        pick_files(files, query, max, 100_000)
            .iter()
            .map(|f| f.path.clone())
            .collect()
    }

    #[test]
    fn the_readme_and_small_code_files_of_a_top_directory_are_picked() {
        let listing = vec![
            file("utils.py", 10),
            file("LICENSE", 10),
            file("README.md", 10),
            file("readme.txt", 10),
            file("config.yaml", 10),
            file("huge.py", 10_000_000),
            file(".hidden.py", 10),
            file("train.py", 10),
        ];
        assert_eq!(
            picked(&listing, "", 10),
            vec!["README.md", "train.py", "utils.py", "config.yaml"]
        );
        assert_eq!(picked(&listing, "", 2).len(), 2);
    }

    #[test]
    fn a_nested_model_file_is_chosen_over_tests_docs_examples_and_vendored_code() {
        let query = "We interpolate pairs of examples (mixup) and train with a smoothed loss.";
        let tree = vec![
            file("README.md", 10),
            file("setup.py", 10),
            file("tests/test_model.py", 10),
            file("test_mixup.py", 10),
            file("docs/conf.py", 10),
            file("docs/mixup.py", 10),
            file("examples/mixup_demo.py", 10),
            file("notebooks/explore.ipynb", 10),
            file("third_party/mixup/mixup.py", 10),
            file(".github/workflows/ci.yml", 10),
            file("assets/figure.png", 10),
            file("mixup/utils/io.py", 10),
            file("mixup/models/resnet.py", 10),
            file("mixup/interpolate.py", 10),
            file("mixup/__init__.py", 10),
        ];
        let names = picked(&tree, query, 4);
        assert_eq!(
            names,
            vec![
                "README.md",
                // Shares "mixup" and "interpolate" with the method.
                "mixup/interpolate.py",
                // A model, one folder deeper.
                "mixup/models/resnet.py",
                "mixup/utils/io.py",
            ]
        );
        // Everything that may be taken, in order: packaging last; tests, docs, examples,
        // notebooks, vendored and hidden folders and non-code files never.
        assert_eq!(
            picked(&tree, query, 100),
            vec![
                "README.md",
                "mixup/interpolate.py",
                "mixup/models/resnet.py",
                "mixup/utils/io.py",
                "mixup/__init__.py",
                "setup.py",
            ]
        );
    }

    #[test]
    fn names_of_a_methods_parts_and_shallower_paths_win_ties() {
        let tree = vec![
            file("pkg/deep/helpers.py", 10),
            file("pkg/helpers.py", 10),
            file("pkg/deep/losses.py", 10),
            file("pkg/trainer.py", 10),
            file("configs/base.yaml", 10),
        ];
        assert_eq!(
            picked(&tree, "nothing shared", 10),
            vec![
                "pkg/trainer.py",
                "pkg/deep/losses.py",
                "pkg/helpers.py",
                "pkg/deep/helpers.py",
                "configs/base.yaml",
            ]
        );
    }

    #[test]
    fn unsafe_paths_are_never_picked() {
        let tree = vec![
            file("../escape.py", 10),
            file("a/../../escape.py", 10),
            file("/abs.py", 10),
            file("a//b.py", 10),
            file("a\\b.py", 10),
            file("ok/model.py", 10),
        ];
        assert_eq!(picked(&tree, "", 10), vec!["ok/model.py"]);
    }

    #[test]
    fn path_words_split_folders_separators_and_camel_case() {
        assert_eq!(
            path_words("models/ResNet_cifar.py")
                .split_whitespace()
                .collect::<Vec<_>>(),
            vec!["models", "Res", "Net", "cifar"]
        );
        assert_eq!(path_words("Makefile"), "Makefile");
        assert!(is_test_file("test_model.py") && is_test_file("model_test.py"));
        assert!(!is_test_file("test.py") && !is_test_file("contest.py"));
    }
}
