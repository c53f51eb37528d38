//! A real read-only bind mount for tests, and a folder's tree to compare before and after.
//! Shared by the library's read-only tests and the command line's (`cli/tests/it/main.rs`
//! includes this file).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Every entry beneath `root`: a folder as `None`, a file as its bytes.
pub fn tree(root: &Path) -> BTreeMap<PathBuf, Option<Vec<u8>>> {
    let mut entries = BTreeMap::new();
    let mut pending = vec![root.to_owned()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let relative = path.strip_prefix(root).unwrap().to_owned();
            if path.is_dir() {
                entries.insert(relative, None);
                pending.push(path);
            } else {
                entries.insert(relative, Some(std::fs::read(&path).unwrap()));
            }
        }
    }
    entries
}

/// A read-only bind mount of a folder, unmounted when dropped (so a failing test unmounts too).
pub struct ReadOnlyMount {
    at: PathBuf,
}

impl ReadOnlyMount {
    /// Mounts `source` at `at` read-only, or says why it cannot (not root, no
    /// `CAP_SYS_ADMIN`, no `mount`): `mount --bind`, then a read-only remount of the bind,
    /// then a probe that a write there is refused with EROFS.
    pub fn new(source: &Path, at: &Path) -> Result<ReadOnlyMount, String> {
        run(
            "mount",
            &["--bind".as_ref(), source.as_os_str(), at.as_os_str()],
        )?;
        let mount = ReadOnlyMount { at: at.to_owned() };
        run(
            "mount",
            &["-o".as_ref(), "remount,bind,ro".as_ref(), at.as_os_str()],
        )?;
        let probe = at.join("probe-of-a-read-only-mount");
        match std::fs::File::create(&probe) {
            Err(error) if error.kind() == std::io::ErrorKind::ReadOnlyFilesystem => Ok(mount),
            Err(error) => Err(format!(
                "a write at the mount failed, but not EROFS: {error}"
            )),
            Ok(_) => {
                std::fs::remove_file(&probe).unwrap();
                Err("the remounted bind still takes writes".to_owned())
            }
        }
    }
}

impl Drop for ReadOnlyMount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.at).status();
    }
}

pub fn run(program: &str, args: &[&std::ffi::OsStr]) -> Result<(), String> {
    let output = Command::new(program)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run {program}: {e}"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{program} {args:?} failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}
