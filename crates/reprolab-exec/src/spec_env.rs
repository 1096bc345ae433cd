//! Environments for stated package versions: a bug report says "torch 2.4.1, x-transformers
//! 1.16.0", and its reproduction must run with those. When the managed environment already has
//! them it is used as it is; otherwise uv builds a separate environment, content-addressed by the
//! pins and the interpreter (`envs/spec-<hash>`), reused by every later run that asks for the
//! same. A pin that cannot be installed on this platform and Python (torch 1.9 has no wheel for
//! Python 3.11) is replaced by the newest version that can, and the substitution is recorded:
//! the caller reports what was used instead, never silently.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde::{Deserialize, Serialize};

use crate::env::{self, EnvError, EnvOptions, Progress, PythonEnv};

/// `name==version` (`version` may end in `.*`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Pin {
    pub name: String,
    pub version: String,
}

impl Pin {
    /// Parse `NAME==VERSION`; the error says what was expected.
    pub fn parse(text: &str) -> Result<Pin, String> {
        if !text.contains("==") {
            return Err(format!(
                "`{text}`: expected NAME==VERSION, e.g. torch==2.4.1 or keras==3.3.*"
            ));
        }
        let (name, version) = reprolab_core::manifest::split_pin(text, true).ok_or_else(|| {
            format!("`{text}`: expected NAME==VERSION with a PyPI name and a version such as 2.4.1")
        })?;
        Ok(Pin {
            name: normalise(name),
            version: version.to_string(),
        })
    }

    /// A stated version as a pin: the local part dropped (`1.9.0+cu111` → `1.9.0`), a
    /// two-part version widened (`2.13` → `2.13.*`).
    pub fn stated(name: &str, version: &str) -> Pin {
        let v = version.split('+').next().unwrap_or(version);
        let version = if v.matches('.').count() == 1 {
            format!("{v}.*")
        } else {
            v.to_string()
        };
        Pin {
            name: normalise(name),
            version,
        }
    }

    pub fn requirement(&self) -> String {
        format!("{}=={}", self.name, self.version)
    }

    /// Whether an installed version satisfies the pin (local versions ignored).
    pub fn matches(&self, installed: &str) -> bool {
        let installed = installed.split('+').next().unwrap_or(installed);
        match self.version.strip_suffix(".*") {
            Some(prefix) => installed == prefix || installed.starts_with(&format!("{prefix}.")),
            None => installed == self.version || installed == format!("{}.0", self.version),
        }
    }
}

/// PEP 503 name normalisation.
fn normalise(name: &str) -> String {
    name.to_ascii_lowercase().replace(['_', '.'], "-")
}

/// A pin that could not be honoured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Substitution {
    pub requested: String,
    /// The version used instead (`None`: the package is not installed at all).
    pub used: Option<String>,
    pub why: String,
}

/// Packages a report uses without stating their versions, to be taken as they were on a date
/// (the report's, or its commit's): uv resolves them with `--exclude-newer DATE`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AsOf {
    /// `YYYY-MM-DD`.
    pub date: String,
    /// Normalised package names (e.g. `torch`, `keras`).
    pub packages: Vec<String>,
    /// Where the date comes from, for the record (`--as-of`, `the report's date`, ...).
    pub source: String,
}

impl AsOf {
    /// `date` if it is a `YYYY-MM-DD` date, else an error that says what was expected.
    pub fn check_date(date: &str) -> Result<String, String> {
        let b = date.as_bytes();
        let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
        let ok = b.len() == 10 && b[4] == b'-' && b[7] == b'-' && digits(0..4);
        let ok = ok && digits(5..7) && digits(8..10);
        let (month, day) = if ok {
            (
                date[5..7].parse::<u32>().unwrap(),
                date[8..10].parse::<u32>().unwrap(),
            )
        } else {
            (0, 0)
        };
        if ok && (1..=12).contains(&month) && (1..=31).contains(&day) {
            Ok(date.to_string())
        } else {
            Err(format!(
                "`{date}`: expected a date as YYYY-MM-DD, e.g. 2023-04-02"
            ))
        }
    }

    /// How a package taken on the date is named in the record.
    fn label(&self, package: &str) -> String {
        format!("{package} (current on {})", self.date)
    }
}

/// What an environment for a set of pins holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Resolution {
    pub requested: Vec<String>,
    /// Versions of the pinned packages and the frameworks, as installed.
    pub installed: BTreeMap<String, String>,
    pub substitutions: Vec<Substitution>,
    pub python: String,
    /// The managed environment itself was used (it already had every pin).
    pub managed: bool,
    /// Unversioned packages taken as they were on a date.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub as_of: Option<AsOf>,
}

impl Resolution {
    /// `requirements.txt` lines: the exact versions the script ran with.
    pub fn requirements(&self) -> String {
        self.installed
            .iter()
            .map(|(n, v)| format!("{n}=={}\n", v.split('+').next().unwrap_or(v)))
            .collect()
    }
}

/// Packages whose installed versions are always recorded.
const FRAMEWORKS: &[&str] = &["torch", "keras", "numpy"];

/// The environment for `pins`: the managed one when it satisfies them, else one built for them.
/// With `as_of`, its packages that no pin names are taken as they were on its date (always a
/// built environment: the managed one is today's).
pub fn ensure_spec(
    opts: &EnvOptions,
    pins: &[Pin],
    as_of: Option<&AsOf>,
    progress: Progress,
) -> Result<(PythonEnv, Resolution), EnvError> {
    let base = env::ensure(opts, progress)?;
    let mut pins: Vec<Pin> = pins.to_vec();
    pins.sort();
    pins.dedup_by(|a, b| a.name == b.name);
    let as_of = as_of.and_then(|a| unpinned(a, &pins));
    let names: Vec<String> = names_of(&pins);
    let installed = installed_versions(&base.python, &names)?;
    let satisfied = as_of.is_none()
        && pins
            .iter()
            .all(|p| installed.get(&p.name).is_some_and(|v| p.matches(v)));
    // An interpreter the user chose is used as it is: record what differs.
    if satisfied || opts.python.is_some() || base.root.is_none() {
        let substitutions = unmet(
            &pins,
            &installed,
            "not installed in the interpreter given with --python",
        );
        return Ok((
            base.clone(),
            Resolution {
                requested: pins.iter().map(Pin::requirement).collect(),
                installed,
                substitutions,
                python: base.python_version.clone(),
                managed: true,
                as_of: None,
            },
        ));
    }
    build(&base, &pins, as_of.as_ref(), progress)
}

/// `as_of` for the packages no pin names (`None` when every one is pinned).
fn unpinned(as_of: &AsOf, pins: &[Pin]) -> Option<AsOf> {
    let mut packages: Vec<String> = as_of
        .packages
        .iter()
        .map(|p| normalise(p))
        .filter(|p| !pins.iter().any(|pin| pin.name == *p))
        .collect();
    // numpy of the same time: a torch built before numpy 2 cannot import today's.
    if !packages.is_empty() && !pins.iter().any(|p| p.name == "numpy") {
        packages.push("numpy".into());
    }
    packages.sort();
    packages.dedup();
    (!packages.is_empty()).then(|| AsOf {
        packages,
        ..as_of.clone()
    })
}

fn names_of(pins: &[Pin]) -> Vec<String> {
    let mut names: Vec<String> = pins.iter().map(|p| p.name.clone()).collect();
    for f in FRAMEWORKS {
        if !names.iter().any(|n| n == f) {
            names.push(f.to_string());
        }
    }
    names
}

fn unmet(pins: &[Pin], installed: &BTreeMap<String, String>, why: &str) -> Vec<Substitution> {
    pins.iter()
        .filter(|p| !installed.get(&p.name).is_some_and(|v| p.matches(v)))
        .map(|p| Substitution {
            requested: p.requirement(),
            used: installed.get(&p.name).cloned(),
            why: why.to_string(),
        })
        .collect()
}

/// Versions of `names` installed for `python` (absent ones left out).
fn installed_versions(
    python: &Path,
    names: &[String],
) -> Result<BTreeMap<String, String>, EnvError> {
    let script = "import json, sys, importlib.metadata as m\nout = {}\nfor n in sys.argv[1:]:\n    try:\n        out[n] = m.version(n)\n    except m.PackageNotFoundError:\n        pass\nprint(json.dumps(out))";
    let out = Command::new(python)
        .arg("-c")
        .arg(script)
        .args(names)
        .output()
        .map_err(|e| EnvError::BadPython {
            python: python.display().to_string(),
            message: format!("cannot run it ({e})"),
        })?;
    serde_json::from_slice(&out.stdout).map_err(|e| EnvError::BadPython {
        python: python.display().to_string(),
        message: format!(
            "listing installed versions failed ({e}): {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ),
    })
}

/// Requirements for uv: the pins, torch at the managed environment's version when not pinned
/// (its wheels are in uv's cache; Keras runs on it), numpy (torch does not require it, every
/// DL script does): 1.x under a torch built before numpy 2 existed, and packaging.
fn requirements(pins: &[Pin], base_torch: Option<&str>) -> Vec<String> {
    let mut reqs: Vec<String> = pins.iter().map(Pin::requirement).collect();
    let mut old_torch = false;
    match pins.iter().find(|p| p.name == "torch") {
        None => {
            if let Some(v) = base_torch {
                reqs.push(format!("torch=={}", v.split('+').next().unwrap_or(v)));
            }
        }
        Some(p) => {
            let mut parts = p.version.split('.').map(|x| x.parse::<u32>().unwrap_or(0));
            let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
            old_torch = (major, minor) < (2, 3);
        }
    }
    if !pins.iter().any(|p| p.name == "numpy") {
        reqs.push(if old_torch { "numpy<2" } else { "numpy" }.into());
    }
    // Imported by Keras 3.0's torch backend and many DL libraries without being declared.
    if !pins.iter().any(|p| p.name == "packaging") {
        reqs.push("packaging".into());
    }
    reqs
}

fn build(
    base: &PythonEnv,
    pins: &[Pin],
    as_of: Option<&AsOf>,
    progress: Progress,
) -> Result<(PythonEnv, Resolution), EnvError> {
    let cache = env::cache_dir();
    let dated = as_of.map_or(String::new(), |a| {
        format!("as of {}: {}", a.date, a.packages.join(" "))
    });
    let key = env::sha256_hex(&[
        pins.iter()
            .map(Pin::requirement)
            .collect::<Vec<_>>()
            .join(" ")
            .as_bytes(),
        base.python_version.as_bytes(),
        std::env::consts::ARCH.as_bytes(),
        dated.as_bytes(),
        // What `requirements` adds beside the pins: a new companion makes new environments.
        b"companions-2",
    ]);
    let dir = cache.join("envs").join(format!("spec-{}", &key[..16]));
    let record = dir.join("resolution.json");
    std::fs::create_dir_all(dir.parent().unwrap()).map_err(env::io_err(&dir))?;
    let _lock = env::lock_file(&dir.with_extension("lock"))?;
    let resolution = match std::fs::read_to_string(&record)
        .ok()
        .and_then(|t| serde_json::from_str::<Resolution>(&t).ok())
    {
        Some(r) if dir.join(".complete").exists() => r,
        _ => {
            let r = create(base, &dir, pins, as_of, progress)?;
            let text = serde_json::to_string_pretty(&r).expect("serialisable");
            std::fs::write(&record, text).map_err(env::io_err(&record))?;
            std::fs::write(dir.join(".complete"), &key).map_err(env::io_err(&dir))?;
            r
        }
    };
    let id = env::sha256_hex(&[b"spec", key.as_bytes(), env::package_hash().as_bytes()])[..16]
        .to_string();
    let python = dir.join("bin").join("python");
    Ok((
        PythonEnv {
            python,
            root: Some(dir),
            python_version: base.python_version.clone(),
            pythonpath: base.pythonpath.clone(),
            id,
        },
        resolution,
    ))
}

fn create(
    base: &PythonEnv,
    dir: &Path,
    pins: &[Pin],
    as_of: Option<&AsOf>,
    progress: Progress,
) -> Result<Resolution, EnvError> {
    let cache = env::cache_dir();
    if dir.exists() {
        std::fs::remove_dir_all(dir).map_err(env::io_err(dir))?;
    }
    let fail = |step: &str, log: String| EnvError::Provision {
        dir: dir.display().to_string(),
        step: step.to_string(),
        log,
    };
    let interpreter = env::find_base_python()?;
    let uv = env::find_uv(&cache)
        .or_else(|| env::bootstrap_uv(&cache, &interpreter, progress))
        .ok_or_else(|| {
            fail(
                "finding uv",
                "uv is neither on PATH nor installable from PyPI".into(),
            )
        })?;
    let mut wanted: Vec<String> = pins.iter().map(Pin::requirement).collect();
    wanted.extend(
        as_of
            .iter()
            .flat_map(|a| a.packages.iter().map(|p| a.label(p))),
    );
    progress(&format!("creating an environment for {}", wanted.join(" ")));
    let mut venv = Command::new(&uv);
    venv.args(["venv", "--python"])
        .arg(&interpreter)
        .arg(dir)
        .env("UV_PYTHON_DOWNLOADS", "never");
    env::run_logged(venv, progress).map_err(|log| fail("creating the virtual environment", log))?;
    let python = dir.join("bin").join("python");
    let base_versions = installed_versions(&base.python, &["torch".to_string()])?;
    let base_torch = base_versions.get("torch").map(String::as_str);
    let install = |reqs: &[String], dry: bool| -> Result<(), String> {
        let mut cmd = Command::new(&uv);
        cmd.args(["pip", "install", "--python"])
            .arg(&python)
            .args(reqs)
            .env("UV_PYTHON_DOWNLOADS", "never");
        if dry {
            cmd.arg("--dry-run");
        }
        env::run_logged(cmd, progress)
    };
    let mut substitutions = Vec::new();
    // First the packages of the date, alone, so that a date with no installable release (torch
    // of 2021 has no wheel for Python 3.11) costs only that package its date; the pins and
    // their companions are installed next, as without a date.
    let mut dated: Vec<String> = Vec::new();
    if let Some(a) = as_of {
        let mut reqs = a.packages.clone();
        reqs.extend(pins.iter().map(Pin::requirement));
        reqs.extend(exclude_newer(&a.date));
        if let Err(log) = install(&reqs, false) {
            progress(&format!(
                "not every package installs as of {}; finding which",
                a.date
            ));
            for p in &a.packages {
                let alone = [p.clone()].into_iter().chain(exclude_newer(&a.date));
                match install(&alone.collect::<Vec<_>>(), false) {
                    Ok(()) => dated.push(p.clone()),
                    Err(why) => substitutions.push(Substitution {
                        requested: a.label(p),
                        used: None,
                        why: format!("{} ({})", last_line(&why), last_line(&log)),
                    }),
                }
            }
        } else {
            dated = a.packages.clone();
        }
    }
    // Dated packages are installed: the pins' companions must not replace them.
    let companions_of = |usable: &[Pin]| -> Vec<String> {
        let mut reqs = requirements(usable, base_torch);
        reqs.retain(|r| {
            let name = r.split(['=', '<', '>', '!', '~', ' ']).next().unwrap_or(r);
            !dated.iter().any(|d| d == name)
        });
        reqs
    };
    let mut usable: Vec<Pin> = pins.to_vec();
    if let Err(log) = install(&companions_of(&usable), false) {
        // Find the pins that cannot be installed, each tried alone with the companions.
        progress("some stated versions cannot be installed; finding which");
        for pin in pins {
            if let Err(why) = install(&requirements(std::slice::from_ref(pin), base_torch), true) {
                usable.retain(|p| p != pin);
                substitutions.push(Substitution {
                    requested: pin.requirement(),
                    used: None,
                    why: last_line(&why),
                });
            }
        }
        let mut reqs = companions_of(&usable);
        reqs.extend(
            substitutions
                .iter()
                .filter(|s| s.requested.contains("=="))
                .map(|s| s.requested.split("==").next().unwrap_or("").to_string()),
        );
        install(&reqs, false).map_err(|l| {
            fail(
                "installing the stated versions with uv",
                format!("{log}\n{l}"),
            )
        })?;
    }
    let mut names = names_of(pins);
    names.extend(as_of.iter().flat_map(|a| a.packages.iter().cloned()));
    names.sort();
    names.dedup();
    let installed = installed_versions(&python, &names)?;
    for s in &mut substitutions {
        let name = s.requested.split([' ', '=']).next().unwrap_or("");
        s.used = installed.get(name).cloned();
    }
    Ok(Resolution {
        requested: wanted,
        installed,
        substitutions,
        python: base.python_version.clone(),
        managed: false,
        as_of: as_of.cloned(),
    })
}

/// uv's arguments that take packages as they were at the end of `date` (UTC).
fn exclude_newer(date: &str) -> [String; 2] {
    ["--exclude-newer".into(), format!("{date}T23:59:59Z")]
}

fn last_line(log: &str) -> String {
    log.lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("uv failed")
        .chars()
        .take(300)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pins_parse_and_match() {
        let p = Pin::parse("Torch==2.4.1").unwrap();
        assert_eq!((p.name.as_str(), p.version.as_str()), ("torch", "2.4.1"));
        assert!(p.matches("2.4.1+cpu") && !p.matches("2.4.10"));
        assert!(
            Pin::parse("torch>=2")
                .unwrap_err()
                .contains("NAME==VERSION")
        );
        assert!(Pin::parse("torch==latest").is_err());
        assert!(Pin::parse("==1.0").is_err());
        let wide = Pin::stated("TensorFlow", "2.13");
        assert_eq!(wide.requirement(), "tensorflow==2.13.*");
        assert!(wide.matches("2.13.1") && !wide.matches("2.130.0"));
        assert_eq!(
            Pin::stated("torch", "1.9.0+cu111").requirement(),
            "torch==1.9.0"
        );
        assert!(Pin::parse("keras==3.0").unwrap().matches("3.0.0"));
        assert_eq!(
            Pin::parse("x_transformers==1.16.0").unwrap().name,
            "x-transformers"
        );
    }

    #[test]
    fn requirements_keep_the_managed_torch_and_old_torch_gets_numpy_1() {
        let keras = [Pin::parse("keras==3.3.3").unwrap()];
        assert_eq!(
            requirements(&keras, Some("2.15.0+cu132")),
            vec!["keras==3.3.3", "torch==2.15.0", "numpy", "packaging"]
        );
        let old = [Pin::parse("torch==1.13.1").unwrap()];
        assert_eq!(
            requirements(&old, Some("2.15.0")),
            vec!["torch==1.13.1", "numpy<2", "packaging"]
        );
        let new = [
            Pin::parse("torch==2.4.1").unwrap(),
            Pin::parse("numpy==1.26.4").unwrap(),
        ];
        assert_eq!(
            requirements(&new, Some("2.15.0")),
            vec!["torch==2.4.1", "numpy==1.26.4", "packaging"]
        );
    }

    #[test]
    fn a_date_applies_to_the_unpinned_packages_with_numpy_of_the_same_time() {
        let as_of = AsOf {
            date: "2023-04-02".into(),
            packages: vec!["Torch".into(), "keras".into()],
            source: "--as-of".into(),
        };
        let keras = [Pin::parse("keras==3.0.5").unwrap()];
        let dated = unpinned(&as_of, &keras).unwrap();
        assert_eq!(dated.packages, vec!["numpy", "torch"]);
        assert_eq!(dated.label("torch"), "torch (current on 2023-04-02)");
        let all = [
            Pin::parse("keras==3.0.5").unwrap(),
            Pin::parse("torch==2.1.0").unwrap(),
        ];
        assert_eq!(unpinned(&as_of, &all), None, "every package pinned");
        assert_eq!(
            exclude_newer("2023-04-02"),
            ["--exclude-newer", "2023-04-02T23:59:59Z"]
        );
    }

    #[test]
    fn dates_must_be_iso_days() {
        assert_eq!(AsOf::check_date("2023-04-02").unwrap(), "2023-04-02");
        for bad in [
            "2023-4-2",
            "02/04/2023",
            "2023-13-01",
            "2023-04-32",
            "yesterday",
        ] {
            assert!(
                AsOf::check_date(bad).unwrap_err().contains("YYYY-MM-DD"),
                "{bad}"
            );
        }
    }

    #[test]
    fn requirements_txt_has_exact_versions() {
        let r = Resolution {
            requested: vec![],
            installed: [
                ("torch".to_string(), "2.15.0+cu132".to_string()),
                ("keras".into(), "3.15.1".into()),
            ]
            .into(),
            substitutions: vec![],
            python: "3.11.7".into(),
            managed: true,
            as_of: None,
        };
        assert_eq!(r.requirements(), "keras==3.15.1\ntorch==2.15.0\n");
    }
}
