//! `[environment] packages`: a subject that imports a package the managed environment lacks
//! names it, and its first evaluation installs it (here a wheel inside the subject, installed
//! offline).

mod common;

use std::path::Path;

use common::*;

/// Write `dir/wheels/reprolab_testpkg-0.1.0-py3-none-any.whl`, a wheel whose package holds
/// `VALUE = 0.75` (built with Python's zipfile, as any wheel is a zip with its metadata).
fn write_wheel(dir: &Path) -> String {
    let rel = "wheels/reprolab_testpkg-0.1.0-py3-none-any.whl";
    std::fs::create_dir_all(dir.join("wheels")).unwrap();
    let script = r#"
import base64, hashlib, sys, zipfile
files = {
    "reprolab_testpkg/__init__.py": "VALUE = 0.75\n",
    "reprolab_testpkg-0.1.0.dist-info/METADATA":
        "Metadata-Version: 2.1\nName: reprolab-testpkg\nVersion: 0.1.0\n",
    "reprolab_testpkg-0.1.0.dist-info/WHEEL":
        "Wheel-Version: 1.0\nGenerator: reprolab-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}
record = []
with zipfile.ZipFile(sys.argv[1], "w") as z:
    for name, text in files.items():
        data = text.encode()
        z.writestr(name, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(data)}")
    record.append("reprolab_testpkg-0.1.0.dist-info/RECORD,,")
    z.writestr("reprolab_testpkg-0.1.0.dist-info/RECORD", "\n".join(record) + "\n")
"#;
    let status = std::process::Command::new("python3")
        .args(["-c", script])
        .arg(dir.join(rel))
        .status()
        .expect("python3 runs");
    assert!(status.success());
    rel.to_string()
}

/// The managed environment's interpreter.
fn managed_python(dir: &Path) -> String {
    let out = run(reprolab(dir).args(["env", "--python-path"]));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Remove the test package from the managed environment (its files and its metadata), so that
/// the test sees it installed by the evaluation, not left by an earlier run; whether it was
/// there before.
fn remove_test_package(python: &str) -> bool {
    let script = r#"
import importlib.metadata as m, os, shutil, sys
try:
    d = m.distribution("reprolab-testpkg")
except m.PackageNotFoundError:
    sys.exit(3)
for f in d.files or []:
    path = d.locate_file(f)
    top = os.path.join(str(d.locate_file("")), f.parts[0])
    shutil.rmtree(top, ignore_errors=True) if os.path.isdir(top) else None
    if os.path.exists(path):
        os.remove(path)
"#;
    let status = std::process::Command::new(python)
        .args(["-c", script])
        .status()
        .expect("the managed python runs");
    status.code() == Some(0)
}

#[test]
fn a_subject_s_wheel_is_installed_on_first_use() {
    let tmp = tempfile::tempdir().unwrap();
    let python = managed_python(tmp.path());
    remove_test_package(&python);
    let dir = tmp.path().join("needs-pkg");
    std::fs::create_dir(&dir).unwrap();
    let wheel = write_wheel(&dir);
    std::fs::write(
        dir.join("train.py"),
        "import reprolab_testpkg\n\n\ndef train(config, seed):\n    \
         v = reprolab_testpkg.VALUE\n    return {\"search\": v, \"holdout\": v}\n",
    )
    .unwrap();
    std::fs::write(dir.join("config.json"), r#"{"x": 1}"#).unwrap();
    std::fs::write(
        dir.join("reprolab.toml"),
        format!(
            "name = \"needs-pkg\"\ntask = \"classification\"\nframework = \"pytorch\"\n\
             config = \"config.json\"\n[dataset]\nname = \"none\"\n[entry]\n\
             callable = \"train.py:train\"\n[metric]\nname = \"accuracy\"\ngoal = \"max\"\n\
             [space]\nx = {{ type = \"choice\", values = [1] }}\n\
             [environment]\npackages = [\"{wheel}\"]\n"
        ),
    )
    .unwrap();
    // Offline: the wheel is all the installer needs.
    let out = run(reprolab(tmp.path())
        .env("UV_OFFLINE", "1")
        .env("PIP_NO_INDEX", "1")
        .args(["eval", "--json", "--no-cache", "--runs", "1"])
        .arg(&dir));
    let v = json(&out);
    let installed = remove_test_package(&python);
    assert_eq!(out.status.code(), Some(0), "{v}");
    assert_eq!(v["runs"][0]["outcome"]["search"], 0.75, "{v}");
    assert!(installed, "the evaluation did not install the wheel");
}
