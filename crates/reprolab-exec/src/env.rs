//! The Python environment reprolab manages: pinned requirements installed with uv (or venv + pip
//! as a fallback) into a cache directory outside the repository, keyed by the lock's hash, plus
//! the bundled `reprolab` Python package. `--python PATH` uses an existing interpreter instead.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use fs4::fs_std::FileExt;
use sha2::{Digest, Sha256};

/// Pinned requirements (generated with `uv pip compile python/requirements.in`).
pub const LOCK: &str = include_str!("../../../python/requirements.lock");
/// The version of uv bootstrapped from PyPI when none is on PATH.
const UV_VERSION: &str = "0.13.9";

include!(concat!(env!("OUT_DIR"), "/py_files.rs"));

#[derive(Debug, thiserror::Error)]
pub enum EnvError {
    #[error("no Python interpreter found: install Python 3.10+ or pass --python PATH (tried {0})")]
    NoPython(String),
    #[error("{python}: {message}")]
    BadPython { python: String, message: String },
    #[error("provisioning the Python environment in {dir} failed while {step}:\n{log}")]
    Provision {
        dir: String,
        step: String,
        log: String,
    },
    #[error("{path}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

pub(crate) fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> EnvError + '_ {
    move |source| EnvError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// A ready Python environment.
#[derive(Debug, Clone)]
pub struct PythonEnv {
    /// The interpreter that runs workers and scripts.
    pub python: PathBuf,
    /// The environment's root directory when reprolab manages it.
    pub root: Option<PathBuf>,
    /// `sys.version` of the interpreter, e.g. `3.11.7`.
    pub python_version: String,
    /// Directory put first on PYTHONPATH of every process reprolab starts: this build's copy of
    /// the bundled package, so that it wins over another version in site-packages.
    pub pythonpath: Option<PathBuf>,
    /// Identifies everything about the environment that can change a training's result; part of
    /// every cache key.
    pub id: String,
}

/// Where environments and tools are cached: `$REPROLAB_CACHE`, else the user's cache directory.
pub fn cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("REPROLAB_CACHE") {
        return PathBuf::from(dir);
    }
    dirs::cache_dir()
        .unwrap_or_else(std::env::temp_dir)
        .join("reprolab")
}

pub(crate) fn sha256_hex(parts: &[&[u8]]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update((p.len() as u64).to_le_bytes());
        h.update(p);
    }
    hex::encode(h.finalize())
}

/// Hash of the bundled Python package.
pub fn package_hash() -> String {
    let mut parts: Vec<&[u8]> = Vec::new();
    for (name, body) in PY_FILES {
        parts.push(name.as_bytes());
        parts.push(body.as_bytes());
    }
    sha256_hex(&parts)[..16].to_string()
}

pub fn lock_hash() -> String {
    sha256_hex(&[LOCK.as_bytes()])[..16].to_string()
}

/// What the user asked for.
#[derive(Debug, Clone, Default)]
pub struct EnvOptions {
    /// Use this interpreter instead of a managed environment.
    pub python: Option<PathBuf>,
    /// Override of [`cache_dir`].
    pub cache_dir: Option<PathBuf>,
}

impl EnvOptions {
    fn cache(&self) -> PathBuf {
        self.cache_dir.clone().unwrap_or_else(cache_dir)
    }
}

/// Progress lines while provisioning (what is being done, uv's output).
pub type Progress<'a> = &'a dyn Fn(&str);

/// The state of the managed environment, without changing anything.
#[derive(Debug, serde::Serialize)]
pub struct EnvStatus {
    pub base_python: Option<String>,
    pub base_version: Option<String>,
    pub dir: Option<String>,
    pub provisioned: bool,
    pub lock_hash: String,
    pub package_hash: String,
    pub uv: Option<String>,
}

/// Report on the managed environment without provisioning it.
pub fn status(opts: &EnvOptions) -> EnvStatus {
    let cache = opts.cache();
    let base = find_base_python().ok();
    let version = base.as_ref().and_then(|b| python_version(b).ok());
    let dir = version.as_ref().map(|v| managed_dir(&cache, v));
    EnvStatus {
        base_python: base.map(|b| b.display().to_string()),
        provisioned: dir.as_ref().is_some_and(|d| d.join(".complete").exists()),
        dir: dir.map(|d| d.display().to_string()),
        base_version: version,
        lock_hash: lock_hash(),
        package_hash: package_hash(),
        uv: find_uv(&cache).map(|p| p.display().to_string()),
    }
}

/// Make sure a usable environment exists (provisioning it on first use) and return it.
pub fn ensure(opts: &EnvOptions, progress: Progress) -> Result<PythonEnv, EnvError> {
    let cache = opts.cache();
    std::fs::create_dir_all(&cache).map_err(io_err(&cache))?;
    match &opts.python {
        Some(python) => external(python, &cache),
        None => managed(&cache, progress),
    }
}

fn external(python: &Path, cache: &Path) -> Result<PythonEnv, EnvError> {
    let version = python_version(python)?;
    let pkg_root = cache.join("pkg").join(package_hash());
    let lock = lock_file(&cache.join("pkg.lock"))?;
    install_package(&pkg_root)?;
    drop(lock);
    let id = sha256_hex(&[
        b"external",
        python.to_string_lossy().as_bytes(),
        version.as_bytes(),
        package_hash().as_bytes(),
    ])[..16]
        .to_string();
    Ok(PythonEnv {
        python: python.to_path_buf(),
        root: None,
        python_version: version,
        pythonpath: Some(pkg_root),
        id,
    })
}

fn managed_dir(cache: &Path, base_version: &str) -> PathBuf {
    let short: String = base_version.split('.').take(2).collect::<Vec<_>>().join("");
    let key = sha256_hex(&[
        LOCK.as_bytes(),
        base_version.as_bytes(),
        std::env::consts::ARCH.as_bytes(),
    ]);
    cache.join("envs").join(format!("py{short}-{}", &key[..16]))
}

fn managed(cache: &Path, progress: Progress) -> Result<PythonEnv, EnvError> {
    let base = find_base_python()?;
    let version = python_version(&base)?;
    let dir = managed_dir(cache, &version);
    let python = dir.join("bin").join("python");
    let lock_path = dir.with_extension("lock");
    std::fs::create_dir_all(dir.parent().unwrap()).map_err(io_err(&dir))?;
    let _lock = match try_lock_file(&lock_path)? {
        Some(l) => l,
        None => {
            progress("waiting for another reprolab that is provisioning this environment");
            lock_file(&lock_path)?
        }
    };
    if !dir.join(".complete").exists() {
        create_env(cache, &base, &dir, progress)?;
    }
    // site-packages gets the package so that the environment's python imports it when a user
    // runs it directly; but several reprolab builds (versions, checkouts) share one environment
    // and each rewrites that copy, so processes reprolab starts read this build's own copy,
    // kept per package hash.
    let site = site_packages(&python)?;
    install_package(&site)?;
    let pkg_root = cache.join("pkg").join(package_hash());
    let pkg_lock = lock_file(&cache.join("pkg.lock"))?;
    install_package(&pkg_root)?;
    drop(pkg_lock);
    let id = sha256_hex(&[
        lock_hash().as_bytes(),
        version.as_bytes(),
        package_hash().as_bytes(),
    ])[..16]
        .to_string();
    Ok(PythonEnv {
        python,
        root: Some(dir),
        python_version: version,
        pythonpath: Some(pkg_root),
        id,
    })
}

fn create_env(cache: &Path, base: &Path, dir: &Path, progress: Progress) -> Result<(), EnvError> {
    if dir.exists() {
        // A half-made environment from an interrupted run: start over.
        std::fs::remove_dir_all(dir).map_err(io_err(dir))?;
    }
    let lock_file = cache.join(format!("requirements-{}.lock", lock_hash()));
    std::fs::write(&lock_file, LOCK).map_err(io_err(&lock_file))?;
    let python = dir.join("bin").join("python");
    let fail = |step: &str, log: String| EnvError::Provision {
        dir: dir.display().to_string(),
        step: step.to_string(),
        log,
    };
    match find_uv(cache).or_else(|| bootstrap_uv(cache, base, progress)) {
        Some(uv) => {
            progress(&format!("creating the environment with {}", uv.display()));
            let mut venv = Command::new(&uv);
            venv.args(["venv", "--python"])
                .arg(base)
                .arg(dir)
                .env("UV_PYTHON_DOWNLOADS", "never");
            run_logged(venv, progress)
                .map_err(|log| fail("creating the virtual environment", log))?;
            progress(
                "installing pinned requirements (torch, keras, numpy, scikit-learn, scipy, pytest)",
            );
            let mut install = Command::new(&uv);
            install
                .args(["pip", "install", "--compile-bytecode", "--python"])
                .arg(&python)
                .arg("-r")
                .arg(&lock_file)
                .env("UV_PYTHON_DOWNLOADS", "never");
            run_logged(install, progress)
                .map_err(|log| fail("installing requirements with uv", log))?;
        }
        None => {
            progress("uv unavailable; creating the environment with venv + pip (slower)");
            let mut venv = Command::new(base);
            venv.args(["-m", "venv"]).arg(dir);
            run_logged(venv, progress)
                .map_err(|log| fail("creating the virtual environment", log))?;
            let mut install = Command::new(&python);
            install
                .args(["-m", "pip", "install", "--progress-bar", "off", "-r"])
                .arg(&lock_file);
            run_logged(install, progress)
                .map_err(|log| fail("installing requirements with pip", log))?;
        }
    }
    progress("checking the environment imports torch, keras, numpy, scikit-learn and scipy");
    let mut check = Command::new(&python);
    check.env("KERAS_BACKEND", "torch").args([
        "-c",
        "import torch, keras, numpy, sklearn, scipy; print('torch', torch.__version__)",
    ]);
    run_logged(check, progress).map_err(|log| fail("checking the installed packages", log))?;
    let marker = dir.join(".complete");
    std::fs::write(&marker, lock_hash()).map_err(io_err(&marker))?;
    Ok(())
}

/// An optional package of the managed environment: installed on first use, never for users who
/// do not ask for it.
#[derive(Debug, Clone, Copy)]
pub struct Extra {
    /// The distribution's name on PyPI.
    pub dist: &'static str,
    pub version: &'static str,
    /// What asks for it, for messages (`--backend ray`).
    pub needed_by: &'static str,
}

impl Extra {
    /// `dist==version`.
    pub fn spec(&self) -> String {
        format!("{}=={}", self.dist, self.version)
    }
}

/// The Ray release `--backend ray` uses (the driver, the cluster's workers and this must agree).
pub const RAY_VERSION: &str = "2.60.0";

/// Ray, for `--backend ray`.
pub const RAY: Extra = Extra {
    dist: "ray",
    version: RAY_VERSION,
    needed_by: "--backend ray",
};

/// TensorFlow (CPU build), for Keras subjects with `backend = "tensorflow"`. 2.20.0 is the newest
/// release that resolves against the lock: 2.21.0 requires h5py<3.15 (the lock has 3.16.0, which
/// Keras brings) and 2.19.x and older require numpy<2.2 (the lock has 2.4.6). It needs
/// protobuf>=5.28, which the lock does not pin (resolved to 7.x; TensorFlow imports with it).
pub const TENSORFLOW: Extra = Extra {
    dist: "tensorflow-cpu",
    version: "2.20.0",
    needed_by: "backend = \"tensorflow\"",
};

/// Make Ray importable by `env` (see [`ensure_extra`]).
pub fn ensure_ray(env: &PythonEnv, progress: Progress) -> Result<(), EnvError> {
    ensure_extra(env, &RAY, progress)
}

/// Make TensorFlow importable by `env` (see [`ensure_extra`]).
pub fn ensure_tensorflow(env: &PythonEnv, progress: Progress) -> Result<(), EnvError> {
    ensure_extra(env, &TENSORFLOW, progress)
}

/// Install `extra` into `env` unless it has that version already: from PyPI, with the lock as
/// constraints so that nothing pinned moves (the environment's id, and so every cache key, stays
/// the same). An interpreter given with `--python` is only checked.
pub fn ensure_extra(env: &PythonEnv, extra: &Extra, progress: Progress) -> Result<(), EnvError> {
    ensure_installed(
        env,
        extra.dist,
        extra.version,
        &extra.spec(),
        extra.needed_by,
        progress,
    )
}

/// Install the packages a subject names (`[environment] packages`) into `env`, each unless it
/// has that version already, as [`ensure_extra`] installs an extra: with the lock as
/// constraints, so that torch and the rest of the lock stay what they are.
pub fn ensure_packages(
    env: &PythonEnv,
    packages: &[reprolab_core::manifest::Package],
    needed_by: &str,
    progress: Progress,
) -> Result<(), EnvError> {
    for p in packages {
        ensure_installed(
            env,
            &p.dist,
            &p.version,
            &p.install_spec(),
            needed_by,
            progress,
        )?;
    }
    Ok(())
}

/// Install `spec` (a pin or a wheel's path) into `env` unless `dist` is there at `version`.
fn ensure_installed(
    env: &PythonEnv,
    dist: &str,
    version: &str,
    spec: &str,
    needed_by: &str,
    progress: Progress,
) -> Result<(), EnvError> {
    let installed = || {
        Command::new(&env.python)
            // The installed version from its metadata: importing the package can take seconds.
            .args([
                "-c",
                "import sys; from importlib.metadata import version; print(version(sys.argv[1]))",
                dist,
            ])
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let found = installed();
    if found.as_deref() == Some(version) {
        return Ok(());
    }
    let Some(root) = &env.root else {
        let found = found.map_or("it is not installed".to_string(), |v| format!("it has {v}"));
        return Err(EnvError::BadPython {
            python: env.python.display().to_string(),
            message: format!(
                "{needed_by} needs {dist}=={version} in this interpreter ({found}): install it \
                 with `{} -m pip install {spec}`, or drop --python to let reprolab manage the \
                 environment",
                env.python.display()
            ),
        });
    };
    let cache = root
        .parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .unwrap_or_else(cache_dir);
    let _lock = lock_file(&root.with_extension("lock"))?;
    if installed().as_deref() == Some(version) {
        return Ok(()); // another reprolab installed it while we waited
    }
    let constraints = cache.join(format!("requirements-{}.lock", lock_hash()));
    std::fs::write(&constraints, LOCK).map_err(io_err(&constraints))?;
    progress(&format!(
        "installing {dist}=={version} into {} (first use of {needed_by})",
        root.display(),
    ));
    let mut install = match find_uv(&cache) {
        Some(uv) => {
            let mut c = Command::new(uv);
            c.args(["pip", "install", "--python"])
                .arg(&env.python)
                .env("UV_PYTHON_DOWNLOADS", "never");
            c
        }
        None => {
            let mut c = Command::new(&env.python);
            c.args(["-m", "pip", "install", "--progress-bar", "off"]);
            c
        }
    };
    install.arg("-c").arg(&constraints).arg(spec);
    run_logged(install, progress).map_err(|log| EnvError::Provision {
        dir: root.display().to_string(),
        step: format!("installing {spec}"),
        log,
    })
}

/// Write the bundled package into `site/reprolab`, replacing an older copy atomically.
fn install_package(site: &Path) -> Result<(), EnvError> {
    let target = site.join("reprolab");
    let stamp = target.join(".stamp");
    let hash = package_hash();
    if std::fs::read_to_string(&stamp).is_ok_and(|s| s == hash) {
        return Ok(());
    }
    std::fs::create_dir_all(site).map_err(io_err(site))?;
    let staging = site.join(format!(".reprolab-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    std::fs::create_dir_all(&staging).map_err(io_err(&staging))?;
    for (name, body) in PY_FILES {
        let p = staging.join(name);
        std::fs::write(&p, body).map_err(io_err(&p))?;
    }
    std::fs::write(staging.join(".stamp"), &hash).map_err(io_err(&staging))?;
    if target.exists() {
        std::fs::remove_dir_all(&target).map_err(io_err(&target))?;
    }
    std::fs::rename(&staging, &target).map_err(io_err(&target))
}

fn site_packages(python: &Path) -> Result<PathBuf, EnvError> {
    let out = Command::new(python)
        .args([
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['purelib'])",
        ])
        .output()
        .map_err(io_err(python))?;
    if !out.status.success() {
        return Err(EnvError::BadPython {
            python: python.display().to_string(),
            message: String::from_utf8_lossy(&out.stderr).into_owned(),
        });
    }
    Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

/// `X.Y.Z` of an interpreter; an error that says what is wrong when it is not Python ≥ 3.10.
pub fn python_version(python: &Path) -> Result<String, EnvError> {
    let bad = |message: String| EnvError::BadPython {
        python: python.display().to_string(),
        message,
    };
    let out = Command::new(python)
        .args(["-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| bad(format!("cannot run it ({e})")))?;
    if !out.status.success() {
        return Err(bad(format!(
            "it did not report its version: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    let v = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let minor: u32 = v
        .split('.')
        .nth(1)
        .and_then(|m| m.parse().ok())
        .unwrap_or(0);
    if !v.starts_with("3.") || minor < 10 {
        return Err(bad(format!(
            "found Python {v}, expected Python 3.10 or newer"
        )));
    }
    Ok(v)
}

/// The interpreter managed environments are created from: `$REPROLAB_BASE_PYTHON`, else
/// `python3.11`, `python3`, `python` on PATH.
pub(crate) fn find_base_python() -> Result<PathBuf, EnvError> {
    if let Some(p) = std::env::var_os("REPROLAB_BASE_PYTHON") {
        return Ok(PathBuf::from(p));
    }
    let names = ["python3.11", "python3", "python"];
    names
        .iter()
        .find_map(|n| which(n))
        .ok_or_else(|| EnvError::NoPython(names.join(", ")))
}

fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

pub(crate) fn find_uv(cache: &Path) -> Option<PathBuf> {
    let bootstrapped = cache.join("tools").join("uv").join("bin").join("uv");
    which("uv").or_else(|| bootstrapped.is_file().then_some(bootstrapped))
}

/// Install uv from PyPI into a small venv of its own; `None` when that is impossible.
pub(crate) fn bootstrap_uv(cache: &Path, base: &Path, progress: Progress) -> Option<PathBuf> {
    let dir = cache.join("tools").join("uv");
    progress(&format!(
        "installing uv {UV_VERSION} from PyPI into {}",
        dir.display()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    let mut venv = Command::new(base);
    venv.args(["-m", "venv"]).arg(&dir);
    let mut pip = Command::new(dir.join("bin").join("python"));
    pip.args([
        "-m",
        "pip",
        "install",
        "--progress-bar",
        "off",
        &format!("uv=={UV_VERSION}"),
    ]);
    let ok = run_logged(venv, progress).is_ok() && run_logged(pip, progress).is_ok();
    let uv = dir.join("bin").join("uv");
    (ok && uv.is_file()).then_some(uv)
}

/// Run a command, passing each line it prints to `progress`; on failure return the last lines.
pub(crate) fn run_logged(mut cmd: Command, progress: Progress) -> Result<(), String> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {:?}: {e}", cmd.get_program()))?;
    let stdout = child.stdout.take().unwrap();
    let out_thread = std::thread::spawn(move || {
        BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .collect::<Vec<_>>()
    });
    let mut tail: Vec<String> = Vec::new();
    for line in BufReader::new(child.stderr.take().unwrap())
        .lines()
        .map_while(Result::ok)
    {
        progress(line.trim());
        tail.push(line);
        if tail.len() > 40 {
            tail.remove(0);
        }
    }
    let out = out_thread.join().unwrap_or_default();
    let status = child.wait().map_err(|e| e.to_string())?;
    if status.success() {
        Ok(())
    } else {
        let mut log = out;
        log.extend(tail);
        let start = log.len().saturating_sub(40);
        Err(log[start..].join("\n"))
    }
}

fn open_lock(path: &Path) -> Result<std::fs::File, EnvError> {
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(io_err(path))
}

/// Block until we hold the exclusive lock (released when the file is dropped).
pub(crate) fn lock_file(path: &Path) -> Result<std::fs::File, EnvError> {
    let f = open_lock(path)?;
    f.lock_exclusive().map_err(io_err(path))?;
    Ok(f)
}

fn try_lock_file(path: &Path) -> Result<Option<std::fs::File>, EnvError> {
    let f = open_lock(path)?;
    match f.try_lock_exclusive() {
        Ok(true) => Ok(Some(f)),
        Ok(false) => Ok(None),
        Err(e) => Err(io_err(path)(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundled_package_has_the_worker() {
        assert!(PY_FILES.iter().any(|(n, _)| *n == "worker.py"));
        assert!(PY_FILES.iter().any(|(n, _)| *n == "__init__.py"));
    }

    #[test]
    fn package_is_installed_once_and_replaced_when_stale() {
        let tmp = tempfile::tempdir().unwrap();
        install_package(tmp.path()).unwrap();
        let stamp = tmp.path().join("reprolab/.stamp");
        assert_eq!(std::fs::read_to_string(&stamp).unwrap(), package_hash());
        std::fs::write(&stamp, "old").unwrap();
        std::fs::write(tmp.path().join("reprolab/leftover.py"), "").unwrap();
        install_package(tmp.path()).unwrap();
        assert!(!tmp.path().join("reprolab/leftover.py").exists());
        assert_eq!(std::fs::read_to_string(&stamp).unwrap(), package_hash());
    }

    #[test]
    fn not_a_python_is_a_clear_error() {
        let err = python_version(Path::new("/bin/false"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("/bin/false"), "{err}");
    }

    #[test]
    fn managed_dir_depends_on_python_version() {
        let c = Path::new("/c");
        assert_ne!(managed_dir(c, "3.11.7"), managed_dir(c, "3.12.1"));
        assert!(
            managed_dir(c, "3.11.7")
                .to_string_lossy()
                .contains("py311-")
        );
    }
}
