//! Views handed out, and the removals that wait for them.
//!
//! [`Store::view`] (or its older name `snapshot`) hands out a [`View`] of the catalog version
//! current when it was taken: it answers every read a [`Store`] answers (`query`, `survey`,
//! `fold`, watermarks, floors), it is `Clone + Send + Sync`, so reads run on other threads
//! while the store goes on publishing, sealing, compacting and retiring. It shares the store's
//! file system, its cache of open segments and its counters; what it does not share is the
//! catalog, which the store replaces (copying it if a view holds it) rather than changes.
//!
//! **Deferred removal.** A version names files; compaction and retention remove files once a
//! record retires them. An unlinked file cannot be opened by name, and segments are mapped
//! lazily, so a file a view may still read is not removed while the view lives: each
//! view handed out pins its version (`Pins`), and a file retired at version `v` is removed only
//! once no snapshot older than `v` is left (LevelDB's `Version` references and RocksDB's
//! obsolete-file list work this way). Until then it waits in `Writer::removals`, and the
//! manifest is not rewritten (a rewrite forgets retired files, and boot removes only the
//! retired files its manifest names). A crash meanwhile loses nothing: the record that retired
//! the file is durable, and boot removes it.

use strata_index::FileName;
use strata_segment::SegmentError;
use strata_segment::names::{NumberedName, SEG_DIR};
use strata_segment::vfs::Vfs;

use crate::error::EngineError;
use crate::pins::Removal;
use crate::readers::{ManifestPosition, oldest_reader};
use crate::store::Store;
use crate::view::View;

impl Store {
    /// A view of what the store has made durable now, for reads on any thread: it answers at
    /// the current watermarks whatever the store does next, and pins its version (see
    /// [`View`]). Rows staged and not sealed are not in it, as they are in no read. A poisoned
    /// store's view answers `Poisoned`. Cheap: reference counts and one pin.
    pub fn view(&self) -> View {
        self.view.pinned(self.manifest_position())
    }

    /// The same as [`Store::view`], by its older name.
    pub fn snapshot(&self) -> View {
        self.view()
    }

    /// Snapshots alive now (the store's own and `Served`'s reads).
    pub fn snapshots(&self) -> usize {
        self.pins.count()
    }

    /// Files retired while a snapshot could still read them, not removed yet.
    pub fn removals_pending(&self) -> usize {
        self.writer.removals.len()
    }

    /// Removes the retired files no snapshot can read any more (all of them once none is
    /// held), then syncs `seg/`. A failure poisons the store, as a removal's
    /// always did. Every write of a store used directly calls it; under `Served` it does
    /// nothing (`defer_removals`) but at the stop, and the worker removes them instead.
    pub(crate) fn remove_unpinned(&mut self) -> Result<(), EngineError> {
        // Under `Served` the worker removes them (`take_due_removals`).
        if self.writer.removals.is_empty() || self.writer.defer_removals {
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
        let (due, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut self.writer.removals)
            .into_iter()
            .partition(|removal| due(removal));
        self.writer.removals = kept;
        due.into_iter().map(|removal| removal.name).collect()
    }

    /// Whether a queued removal is due: what [`Store::split_due_removals`] and
    /// [`Store::removals_due`] both ask. The pins of readers in other processes are listed
    /// only when a snapshot does not hold every queued file back anyway.
    fn due_predicate(&self) -> impl Fn(&Removal) -> bool + use<> {
        let oldest = self.pins.oldest();
        let snapshots_let_go =
            move |removal: &Removal| oldest.is_none_or(|oldest| oldest >= removal.version);
        let queued = &self.writer.removals[..];
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
        self.writer.removals.iter().any(due)
    }

    /// Takes the queued files no snapshot can read any more out of the queue, and lets go of
    /// their readers, for a worker to remove ([`remove_segments`]); the store counts as
    /// writing (`sealing`) until [`Store::finish_removals`], so that nothing else writes, and
    /// no manifest rewrite forgets them, meanwhile.
    pub(crate) fn take_due_removals(&mut self) -> Vec<FileName> {
        let names = self.split_due_removals();
        self.evict_readers(&names);
        self.writer.sealing = !names.is_empty();
        names
    }

    /// Takes a worker's removal back: a failure poisons the store (boot removes what is left).
    pub(crate) fn finish_removals(
        &mut self,
        removed: Result<(), EngineError>,
    ) -> Result<(), EngineError> {
        self.writer.sealing = false;
        removed.map_err(|error| self.poison(error))
    }

    /// Queues `name`, retired by the version now current and the manifest frame that ends
    /// where the manifest does now, for removal once nothing can read it.
    pub(crate) fn defer_removal(&mut self, name: FileName) {
        let version = self.view.version;
        let at = self.writer.manifest_position();
        self.writer.removals.push(Removal { version, at, name });
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
