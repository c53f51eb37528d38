//! A store that only reads: opened read-only ([`Store::open_read_only`]), a reader in another
//! process ([`Store::open_reader`]), or a follower of a bucket ([`Store::open_follower_in`]).
//!
//! A [`Reader`] is the read half at its current version ([`View`], reached through `Deref`) and,
//! for a reader in another process or a follower, where it follows the manifest. It has no
//! write half: no publish, seal, compaction or retention is a method of it, so a write to a
//! store opened to read does not compile, where it was refused at run time before #49. Its
//! `refresh` builds the next version from what the writer appended (`follow.rs`).

use std::ops::Deref;
use std::sync::Arc;

use strata_index::Catalog;
use strata_recover::Report;
use strata_segment::vfs::Counting;

use crate::config::Config;
use crate::metrics::Metrics;
use crate::readers::Follow;
use crate::view::View;

/// A store opened to read (see the module's doc): every read of a [`View`] through `Deref`,
/// and, for a reader in another process or a follower, [`Reader::refresh`].
///
/// A reader has no write half: each write a [`Store`](crate::Store) offers, which compiles on a
/// store,
///
/// ```
/// fn writes(store: &mut strata_engine::Store) {
///     let _ = store.publish("s", 1, &[]);
///     let _ = store.seal();
///     let _ = store.compact();
///     let _ = store.compact_step();
///     let _ = store.sweep();
///     let _ = store.retire("s", &["a"]);
///     let _ = store.trim_to("s", 9);
///     let _ = store.checkpoint();
/// }
/// ```
///
/// does not compile on a reader (one check each; before #49 each was refused at run time as
/// `EngineError::ReadOnly`):
///
/// ```compile_fail
/// fn write(reader: &mut strata_engine::Reader) {
///     let _ = reader.publish("s", 1, &[]);
/// }
/// ```
///
/// ```compile_fail
/// fn write(reader: &mut strata_engine::Reader) {
///     let _ = reader.seal();
/// }
/// ```
///
/// ```compile_fail
/// fn write(reader: &mut strata_engine::Reader) {
///     let _ = reader.compact();
/// }
/// ```
///
/// ```compile_fail
/// fn write(reader: &mut strata_engine::Reader) {
///     let _ = reader.compact_step();
/// }
/// ```
///
/// ```compile_fail
/// fn write(reader: &mut strata_engine::Reader) {
///     let _ = reader.sweep();
/// }
/// ```
///
/// ```compile_fail
/// fn write(reader: &mut strata_engine::Reader) {
///     let _ = reader.retire("s", &["a"]);
/// }
/// ```
///
/// ```compile_fail
/// fn write(reader: &mut strata_engine::Reader) {
///     let _ = reader.trim_to("s", 9);
/// }
/// ```
///
/// ```compile_fail
/// fn write(reader: &mut strata_engine::Reader) {
///     let _ = reader.checkpoint();
/// }
/// ```
///
/// And a writer follows no other writer: `refresh` is a reader's, not a store's.
///
/// ```
/// fn follows(reader: &mut strata_engine::Reader) {
///     let _ = reader.refresh();
/// }
/// ```
///
/// ```compile_fail
/// fn follows(store: &mut strata_engine::Store) {
///     let _ = store.refresh();
/// }
/// ```
pub struct Reader {
    /// The read half, at the current version.
    pub(crate) view: View,
    /// A reader in another process's pin and where it follows the manifest
    /// ([`Store::open_reader`](crate::Store::open_reader), or a follower's, without a pin);
    /// `None` for a read-only open, which does not follow (its `refresh` is refused).
    pub(crate) follow: Option<Follow>,
}

impl Deref for Reader {
    type Target = View;

    fn deref(&self) -> &View {
        &self.view
    }
}

impl std::fmt::Debug for Reader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reader")
            .field("following", &self.follow.is_some())
            .field("at", &self.view.seen)
            .finish_non_exhaustive()
    }
}

impl Reader {
    /// A reader of `catalog`, following nothing yet, holding no lock.
    pub(crate) fn reading(
        vfs: Arc<Counting>,
        config: Config,
        catalog: Catalog,
        report: Report,
    ) -> Reader {
        Reader {
            view: View::new(vfs, config, catalog, report),
            follow: None,
        }
    }

    /// A view of the version this reader answers at now, for reads on any thread: it keeps
    /// answering there whatever later refreshes follow, and holds back the files it may read
    /// (see [`View`]). Cheap: reference counts and one pin.
    pub fn view(&self) -> View {
        self.view.pinned(self.manifest_position())
    }

    /// The same as [`Reader::view`], by its older name.
    pub fn snapshot(&self) -> View {
        self.view()
    }

    /// Views alive now.
    pub fn snapshots(&self) -> usize {
        self.pins.count()
    }

    /// What the reads have done since the reader was opened: the gauges its views share.
    pub fn metrics(&self) -> Metrics {
        self.view.metrics()
    }

    /// Always true: a reader only reads.
    pub fn is_read_only(&self) -> bool {
        true
    }
}
