//! Snapshots: reads of one catalog version, off the writer's thread.
//!
//! A [`Snapshot`] is a read-only store over the catalog version current when it was taken: it
//! answers every read a [`Store`] answers (`query`, `survey`, `fold`, watermarks, floors) and
//! refuses every write, and it is `Send`, so a read can run on another thread while the store
//! goes on publishing, sealing, compacting and retiring. It shares the store's file system,
//! its cache of open segments and its counters; what it does not share is the catalog, which
//! the store replaces (copying it if a snapshot holds it) rather than changes.
//!
//! **Deferred removal.** A version names files; compaction and retention remove files once a
//! record retires them. An unlinked file cannot be opened by name, and segments are mapped
//! lazily, so a file a snapshot may still read is not removed while the snapshot lives: each
//! snapshot pins its version (`Pins`), and a file retired at version `v` is removed only
//! once no snapshot older than `v` is left (LevelDB's `Version` references and RocksDB's
//! obsolete-file list work this way). Until then it waits in `Writer::removals`, and the
//! manifest is not rewritten (a rewrite forgets retired files, and boot removes only the
//! retired files its manifest names). A crash meanwhile loses nothing: the record that retired
//! the file is durable, and boot removes it.

use std::ops::Deref;
use std::sync::{Arc, PoisonError};

use strata_index::FileName;
use strata_segment::SegmentError;
use strata_segment::names::{NumberedName, SEG_DIR};
use strata_segment::vfs::Vfs;

use crate::error::EngineError;
use crate::pins::{Pin, Removal};
use crate::readers::{ManifestPosition, oldest_reader};
use crate::store::Store;

/// A read-only view of a store at one catalog version: every `&self` read of [`Store`]
/// (through `Deref`) answers as the store answered when the snapshot was taken, however the
/// store changes meanwhile; nothing of it can write (`Deref` gives no `&mut`). Cheap to take
/// (reference counts, and copies of the streams' declarations and of boot's list of
/// unreadable files). Its `metrics()` count its own reads' cells and the shared gauges, not
/// the store's barriers. While it lives, files retired after it was taken stay on disk (see
/// the module's documentation), the manifest is not rewritten, and it holds the store's lock:
/// the folder cannot be opened for writing again until it is dropped, even once the store is.
/// Hold one for a read, not for the life of a program.
pub struct Snapshot {
    store: Store,
    pin: Pin,
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot")
            .field("version", &self.pin.version)
            .finish_non_exhaustive()
    }
}

impl Deref for Snapshot {
    type Target = Store;

    fn deref(&self) -> &Store {
        &self.store
    }
}

impl Store {
    /// A snapshot of what the store has made durable now: reads of it answer at the current
    /// watermarks whatever the store does next (see [`Snapshot`]). Rows staged and not sealed
    /// are not in it, as they are in no read. A poisoned store's snapshot answers `Poisoned`.
    pub fn snapshot(&self) -> Snapshot {
        let streams = self
            .streams
            .iter()
            .map(|(id, state)| (id.clone(), state.reading_copy()))
            .collect();
        let store = Store {
            vfs: Arc::clone(&self.vfs),
            catalog: Arc::clone(&self.catalog),
            version: self.version,
            pins: Arc::clone(&self.pins),
            // A snapshot only reads: no writer, and the position its catalog is at.
            writer: None,
            seen: self.manifest_position(),
            unreadable: self.unreadable.clone(),
            // The store's lock, shared: a store reopened while a snapshot lives is `Locked`,
            // so no other writer removes files the snapshot may map.
            lock: self.lock.clone(),
            // A reader's pin stays with the reader; the snapshot's version is in its
            // `versions`, which hold the pin back while the snapshot lives (`follow.rs`).
            follow: None,
            streams,
            poisoned: self.poisoned.clone(),
            readers: Arc::clone(&self.readers),
            live_maps: Arc::clone(&self.live_maps),
            cells_read: Arc::clone(&self.cells_read),
            chunks: Arc::clone(&self.chunks),
            report: Arc::clone(&self.report),
            config: Arc::clone(&self.config),
        };
        Snapshot {
            store,
            pin: self.pins.pin(self.version),
        }
    }

    /// Snapshots alive now (the store's own and `Served`'s reads).
    pub fn snapshots(&self) -> usize {
        self.pins.count()
    }

    /// Files retired while a snapshot could still read them, not removed yet.
    pub fn removals_pending(&self) -> usize {
        self.writer.as_ref().map_or(0, |w| w.removals.len())
    }

    /// Removes the retired files no snapshot can read any more (all of them once none is
    /// held), then syncs `seg/`. A failure poisons the store, as a removal's
    /// always did. Every write of a store used directly calls it; under `Served` it does
    /// nothing (`defer_removals`) but at the stop, and the worker removes them instead.
    pub(crate) fn remove_unpinned(&mut self) -> Result<(), EngineError> {
        // A store without a writer removes nothing; under `Served` the worker removes them
        // (`take_due_removals`).
        if self
            .writer
            .as_ref()
            .is_none_or(|w| w.removals.is_empty() || w.defer_removals)
        {
            return Ok(());
        }
        let names = self.split_due_removals();
        self.remove_files(&names)
    }

    /// Takes the queued files nothing can read any more out of the queue: no snapshot older
    /// than the version that retired each, and no reader in another process at a manifest
    /// position before the frame that retired it (`readers.rs`). Pins that cannot be listed
    /// hold everything back, as a reader at the start would: nothing is removed on a guess.
    fn split_due_removals(&mut self) -> Vec<FileName> {
        let due = self.due_predicate();
        let (due, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut writer!(self).removals)
            .into_iter()
            .partition(|removal| due(removal));
        writer!(self).removals = kept;
        due.into_iter().map(|removal| removal.name).collect()
    }

    /// Whether a queued removal is due: what [`Store::split_due_removals`] and
    /// [`Store::removals_due`] both ask. The pins of readers in other processes are listed
    /// only when a snapshot does not hold every queued file back anyway.
    fn due_predicate(&self) -> impl Fn(&Removal) -> bool + use<> {
        let oldest = self.pins.oldest();
        let snapshots_let_go =
            move |removal: &Removal| oldest.is_none_or(|oldest| oldest >= removal.version);
        let queued = self.writer.as_ref().map_or(&[][..], |w| &w.removals[..]);
        let reader = if queued.iter().any(snapshots_let_go) {
            oldest_reader(self.vfs.as_ref()).unwrap_or(Some(ManifestPosition::default()))
        } else {
            None
        };
        move |removal: &Removal| {
            snapshots_let_go(removal) && reader.is_none_or(|reader| reader >= removal.at)
        }
    }

    /// Whether a queued file may be removed now: nothing can read it any more.
    pub(crate) fn removals_due(&self) -> bool {
        let due = self.due_predicate();
        self.writer
            .as_ref()
            .is_some_and(|w| w.removals.iter().any(due))
    }

    /// Takes the queued files no snapshot can read any more out of the queue, and lets go of
    /// their readers, for a worker to remove ([`remove_segments`]); the store counts as
    /// writing (`sealing`) until [`Store::finish_removals`], so that nothing else writes, and
    /// no manifest rewrite forgets them, meanwhile.
    pub(crate) fn take_due_removals(&mut self) -> Vec<FileName> {
        let names = self.split_due_removals();
        self.evict_readers(&names);
        writer!(self).sealing = !names.is_empty();
        names
    }

    /// Takes a worker's removal back: a failure poisons the store (boot removes what is left).
    pub(crate) fn finish_removals(
        &mut self,
        removed: Result<(), EngineError>,
    ) -> Result<(), EngineError> {
        writer!(self).sealing = false;
        removed.map_err(|error| self.poison(error))
    }

    /// Lets go of the cached readers of `names` (their files are about to go; a read holding
    /// one keeps it).
    pub(crate) fn evict_readers(&self, names: &[FileName]) {
        let mut readers = self.readers.lock().unwrap_or_else(PoisonError::into_inner);
        for &name in names {
            readers.remove(name);
        }
    }

    /// Queues `name`, retired by the version now current and the manifest frame that ends
    /// where the manifest does now, for removal once nothing can read it.
    pub(crate) fn defer_removal(&mut self, name: FileName) {
        let at = writer!(self).manifest_position();
        writer!(self).removals.push(Removal {
            version: self.version,
            at,
            name,
        });
    }
}

/// Removes segments `names` (retired, and read by no snapshot), then syncs `seg/` so that a
/// crash does not bring them back (boot would remove them again, but report them). Touches
/// nothing of the store: `Served`'s worker runs it.
pub(crate) fn remove_segments(vfs: &dyn Vfs, names: &[FileName]) -> Result<(), EngineError> {
    for &name in names {
        let path = NumberedName::segment(name).path_in(SEG_DIR);
        if let Err(source) = vfs.remove(&path) {
            return Err(EngineError::write(SegmentError::Io { path, source }));
        }
    }
    if !names.is_empty()
        && let Err(source) = vfs.sync_dir(SEG_DIR)
    {
        let path = SEG_DIR.to_owned();
        return Err(EngineError::write(SegmentError::Io { path, source }));
    }
    Ok(())
}
