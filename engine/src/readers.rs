//! Readers in other processes, and the pins that keep the writer from removing a file one may
//! still open (docs/readers.md).
//!
//! A reader ([`crate::Store::open_reader`]) takes no lock of the store's. It holds one *pin*: a
//! file in `readers/` named `ID.GENERATION.LEN`, held under `flock` ([`Vfs::hold`]) for as long
//! as the reader lives, naming the manifest position it reads at: the generation and the length
//! of the trusted prefix it has applied. It creates the pin at `0.0` before it reads the
//! manifest, and renames it forward after each [`crate::Reader::refresh`] (a rename is atomic,
//! and the lock follows the file).
//!
//! The writer removes a file retired by the frame ending at position `P` only once every live
//! pin names a position at or past `P`: such a reader has read the retirement and opens the file
//! no more. The order makes this sound: the writer appends (and syncs) the retiring frame, then
//! lists the pins; a reader creates its pin, then reads the manifest. A pin the listing missed
//! was created after the frame was appended, so its reader reads the retirement. A pin renamed
//! between the listing and its probe is counted at the older position the listing saw.
//!
//! A reader that dies takes its lock with it: the next writer (or reader) that probes its pin
//! finds it unheld and removes it ([`Vfs::held`]), so a dead reader holds nothing back past the
//! next removal the writer tries. A store with no readers has an empty (or no) `readers/`: one
//! listing per removal, and files go as promptly as before.

use std::collections::VecDeque;
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use strata_segment::SegmentError;
use strata_segment::names::READERS_DIR;
use strata_segment::vfs::{NotRegular, Vfs, VfsHold};

use crate::error::EngineError;

/// A place in the manifest's history: a generation and a length of its trusted prefix. Ordered
/// as the history goes (a rewrite starts a higher generation), so a reader at a position has
/// read every record of every position below it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ManifestPosition {
    /// The manifest generation (`manifest-NNNNNN`).
    pub generation: u32,
    /// The length of the prefix of it read, in bytes: the end of its last frame applied.
    pub len: u64,
}

impl std::fmt::Display for ManifestPosition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "manifest {} byte {}", self.generation, self.len)
    }
}

/// What a reader in another process keeps beside its catalog (`follow.rs`).
#[derive(Debug)]
pub(crate) struct Follow {
    /// Its pin, at the oldest position it or a view it handed out may read at; `None` for a
    /// follower ([`crate::Store::open_follower_in`]), on a file system no writer removes from.
    pub(crate) pin: Option<ReaderPin>,
    /// The format of the manifest generation it follows.
    pub(crate) log_version: u32,
    /// The manifest position of each catalog version a snapshot may still hold, and the
    /// current one, oldest first: at most one more than the versions snapshots hold.
    pub(crate) versions: VecDeque<(u64, ManifestPosition)>,
}

/// How many names a reader tries for its pin before it gives up: another name is needed only
/// when a prober took the new file for a dead reader's before it was locked.
const PIN_ATTEMPTS: usize = 8;

/// One reader's pin, held until it drops (which removes it).
pub(crate) struct ReaderPin {
    vfs: Arc<dyn Vfs>,
    id: String,
    at: ManifestPosition,
    _hold: Box<dyn VfsHold>,
}

impl std::fmt::Debug for ReaderPin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReaderPin")
            .field("id", &self.id)
            .field("at", &self.at)
            .finish_non_exhaustive()
    }
}

impl ReaderPin {
    /// Takes a pin at position `0.0` (before anything: it holds back every removal until the
    /// reader says where it reads), refusing if `reader_processes_max` live readers hold pins already.
    pub(crate) fn take(
        vfs: Arc<dyn Vfs>,
        reader_processes_max: usize,
    ) -> Result<ReaderPin, EngineError> {
        vfs.create_dir(READERS_DIR)
            .map_err(|source| io_error(READERS_DIR, source))?;
        if live_readers(vfs.as_ref())?.len() >= reader_processes_max {
            return Err(EngineError::TooManyReaders {
                store: vfs.location(),
                max: reader_processes_max,
            });
        }
        let at = ManifestPosition::default();
        let mut last = None;
        for _ in 0..PIN_ATTEMPTS {
            let id = new_id();
            let path = pin_path(&id, at);
            match vfs.hold(&path) {
                Ok(hold) => {
                    return Ok(ReaderPin {
                        vfs,
                        id,
                        at,
                        _hold: hold,
                    });
                }
                Err(error)
                    if matches!(
                        error.kind(),
                        io::ErrorKind::WouldBlock
                            | io::ErrorKind::NotFound
                            | io::ErrorKind::AlreadyExists
                    ) =>
                {
                    last = Some(io_error(&path, error));
                }
                Err(error) => return Err(io_error(&path, error)),
            }
        }
        Err(last.unwrap_or_else(|| EngineError::Internal {
            reason: "no pin name was tried".to_owned(),
        }))
    }

    /// Where the pin says its reader reads.
    pub(crate) fn at(&self) -> ManifestPosition {
        self.at
    }

    /// Says the reader reads at `at` now (forward or back), by renaming the pin.
    pub(crate) fn move_to(&mut self, at: ManifestPosition) -> Result<(), EngineError> {
        if at == self.at {
            return Ok(());
        }
        let from = pin_path(&self.id, self.at);
        let to = pin_path(&self.id, at);
        self.vfs
            .rename_noreplace(&from, &to)
            .map_err(|source| io_error(&from, source))?;
        self.at = at;
        Ok(())
    }
}

impl Drop for ReaderPin {
    fn drop(&mut self) {
        // Removed while still held, so no prober mistakes it for a dead reader's meanwhile. A
        // failure leaves the file unheld once the hold drops: the next probe removes it.
        let _ = self.vfs.remove(&pin_path(&self.id, self.at));
    }
}

/// The oldest position a live reader reads at, if any reader is alive; dead readers' pins are
/// removed on the way.
pub(crate) fn oldest_reader(vfs: &dyn Vfs) -> Result<Option<ManifestPosition>, EngineError> {
    Ok(live_readers(vfs)?.into_iter().min())
}

/// The positions of the live readers' pins. A pin whose file went between the listing and its
/// probe was renamed by its reader (or removed by another prober): counted at the position
/// listed, which is at or below wherever it is now. A file system that cannot probe counts
/// every pin.
fn live_readers(vfs: &dyn Vfs) -> Result<Vec<ManifestPosition>, EngineError> {
    let entries = match vfs.list(READERS_DIR) {
        Ok(entries) => entries,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(io_error(READERS_DIR, error)),
    };
    let mut live = Vec::new();
    for entry in entries.iter().filter(|entry| !entry.is_dir) {
        // A file not named as a pin is not one: left alone, and holds nothing back.
        let Some(at) = parse_pin(&entry.name) else {
            continue;
        };
        let path = format!("{READERS_DIR}/{}", entry.name);
        match vfs.held(&path) {
            Ok(true) => live.push(at),
            Ok(false) => {}
            Err(error)
                if matches!(
                    error.kind(),
                    io::ErrorKind::NotFound | io::ErrorKind::Unsupported
                ) =>
            {
                live.push(at);
            }
            // A pin is a regular file (`Vfs::hold` creates one): a named pipe or a socket of a
            // pin's name was put there by someone else, and holds nothing back, like any other
            // name that is not a pin's. It is never opened in a way that can wait.
            Err(error) if NotRegular::is(&error) => {}
            Err(error) => return Err(io_error(&path, error)),
        }
    }
    Ok(live)
}

/// A pin's path: `readers/ID.GENERATION.LEN`.
fn pin_path(id: &str, at: ManifestPosition) -> String {
    format!("{READERS_DIR}/{id}.{}.{}", at.generation, at.len)
}

/// The position a pin's file name says, or `None` for a name that is not a pin's.
pub(crate) fn parse_pin(name: &str) -> Option<ManifestPosition> {
    let mut parts = name.rsplitn(3, '.');
    let len = parts.next()?.parse().ok()?;
    let generation = parts.next()?.parse().ok()?;
    let id = parts.next()?;
    let plain = |part: &str| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit());
    (plain(id) || id.split('-').all(plain)).then_some(ManifestPosition { generation, len })
}

/// A name no other reader has: this process's id, a count within it, and the clock.
fn new_id() -> String {
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let count = COUNT.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!("{}-{count}-{nanos}", std::process::id())
}

fn io_error(path: &str, source: io::Error) -> EngineError {
    EngineError::write(SegmentError::Io {
        path: path.to_owned(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pin_names_parse_back_and_other_names_do_not() {
        let at = ManifestPosition {
            generation: 3,
            len: 4096,
        };
        let path = pin_path("12-0-99", at);
        let name = path.strip_prefix("readers/").unwrap();
        assert_eq!(parse_pin(name), Some(at));
        for name in [
            "",
            "a.1.2",
            "1.2",
            "12-0-99.x.2",
            "12-0-99.1.",
            "-.1.2",
            ".1.2",
            "1..1.2",
        ] {
            assert_eq!(parse_pin(name), None, "{name:?}");
        }
    }

    #[test]
    fn positions_order_by_generation_then_length() {
        let p = |generation, len| ManifestPosition { generation, len };
        assert!(p(1, 900) < p(2, 10));
        assert!(p(2, 10) < p(2, 11));
        assert_eq!([p(2, 5), p(1, 7), p(2, 1)].into_iter().min(), Some(p(1, 7)));
    }
}
