//! A file system that logs which call each numbered operation of the simulated one was, so a
//! violation names the kind of operation a crash or fault hit ("rename tmp/… seg/…").

use std::io;
use std::sync::{Arc, Mutex};

use strata::segment::vfs::{DirEntry, Mapped, RenameMode, SimFs, Vfs, VfsFile, VfsLock};

/// The calls that took numbered operations: `(first op, end op, what)`.
type Calls = Arc<Mutex<Vec<(u64, u64, String)>>>;

#[derive(Clone, Debug)]
pub struct Logged {
    fs: SimFs,
    calls: Calls,
}

fn note<T>(
    fs: &SimFs,
    calls: &Calls,
    what: impl FnOnce() -> String,
    call: impl FnOnce() -> T,
) -> T {
    let first = fs.ops();
    let out = call();
    let end = fs.ops();
    if end > first {
        calls.lock().unwrap().push((first, end, what()));
    }
    out
}

impl Logged {
    pub fn new(fs: &SimFs) -> Logged {
        Logged {
            fs: fs.clone(),
            calls: Calls::default(),
        }
    }

    /// What numbered operation `op` was, if a logged call took it.
    pub fn kind_of(&self, op: u64) -> Option<String> {
        let calls = self.calls.lock().unwrap();
        let (first, end, what) = calls
            .iter()
            .find(|(first, end, _)| (*first..*end).contains(&op))?;
        Some(if end - first > 1 {
            format!("{what} (its op {} of {})", op - first + 1, end - first)
        } else {
            what.clone()
        })
    }

    /// Every path a logged call created, and every manifest generation a rename made current,
    /// in order: the names the store issued while this file system was its own. (A rename
    /// elsewhere moves a name issued before, into quarantine or to its final folder.)
    pub fn issued(&self) -> Vec<String> {
        let calls = self.calls.lock().unwrap();
        calls
            .iter()
            .filter_map(|(_, _, what)| {
                if let Some(path) = what.strip_prefix("create ") {
                    Some(path.to_owned())
                } else {
                    let to = what.strip_prefix("rename ")?.split(' ').nth(1)?;
                    to.starts_with("manifest-").then(|| to.to_owned())
                }
            })
            .collect()
    }

    fn file(&self, path: &str, file: io::Result<Box<dyn VfsFile>>) -> io::Result<Box<dyn VfsFile>> {
        Ok(Box::new(LoggedFile {
            file: file?,
            path: path.to_owned(),
            fs: self.fs.clone(),
            calls: Arc::clone(&self.calls),
        }))
    }
}

#[derive(Debug)]
struct LoggedFile {
    file: Box<dyn VfsFile>,
    path: String,
    fs: SimFs,
    calls: Calls,
}

impl VfsFile for LoggedFile {
    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        let file = &mut self.file;
        let what = || format!("write_all {} ({} bytes)", self.path, bytes.len());
        note(&self.fs, &self.calls, what, || file.write_all(bytes))
    }

    fn sync_data(&mut self) -> io::Result<()> {
        let file = &mut self.file;
        note(
            &self.fs,
            &self.calls,
            || format!("sync_data {}", self.path),
            || file.sync_data(),
        )
    }

    fn set_len(&mut self, len: u64) -> io::Result<()> {
        let file = &mut self.file;
        note(
            &self.fs,
            &self.calls,
            || format!("set_len {}", self.path),
            || file.set_len(len),
        )
    }

    fn len(&self) -> io::Result<u64> {
        self.file.len()
    }
}

impl Vfs for Logged {
    fn create_dir(&self, dir: &str) -> io::Result<()> {
        note(
            &self.fs,
            &self.calls,
            || format!("create_dir {dir}"),
            || self.fs.create_dir(dir),
        )
    }

    fn create(&self, path: &str) -> io::Result<Box<dyn VfsFile>> {
        let file = note(
            &self.fs,
            &self.calls,
            || format!("create {path}"),
            || self.fs.create(path),
        );
        self.file(path, file)
    }

    fn open_append(&self, path: &str) -> io::Result<Box<dyn VfsFile>> {
        let file = self.fs.open_append(path);
        self.file(path, file)
    }

    fn map(&self, path: &str) -> io::Result<Mapped> {
        self.fs.map(path)
    }

    fn read(&self, path: &str) -> io::Result<Vec<u8>> {
        self.fs.read(path)
    }

    fn len(&self, path: &str) -> io::Result<u64> {
        self.fs.len(path)
    }

    fn rename_noreplace(&self, from: &str, to: &str) -> io::Result<()> {
        let what = || format!("rename {from} {to}");
        note(&self.fs, &self.calls, what, || {
            self.fs.rename_noreplace(from, to)
        })
    }

    fn rename_mode(&self) -> RenameMode {
        self.fs.rename_mode()
    }

    fn location(&self) -> String {
        self.fs.location()
    }

    fn remove(&self, path: &str) -> io::Result<()> {
        note(
            &self.fs,
            &self.calls,
            || format!("remove {path}"),
            || self.fs.remove(path),
        )
    }

    fn sync_dir(&self, dir: &str) -> io::Result<()> {
        note(
            &self.fs,
            &self.calls,
            || format!("sync_dir {dir}"),
            || self.fs.sync_dir(dir),
        )
    }

    fn list(&self, dir: &str) -> io::Result<Vec<DirEntry>> {
        self.fs.list(dir)
    }

    fn exists(&self, path: &str) -> io::Result<bool> {
        self.fs.exists(path)
    }

    fn lock(&self) -> io::Result<Box<dyn VfsLock>> {
        self.fs.lock()
    }

    fn lock_shared(&self) -> io::Result<Option<Box<dyn VfsLock>>> {
        self.fs.lock_shared()
    }
}
