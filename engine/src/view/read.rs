//! Raw reads: what a query checks before it reads, and the store's segment readers (the
//! streaming read itself is `runs.rs`).

use std::ops::{Bound, RangeBounds};
use std::sync::{Arc, RwLockReadGuard};

use strata_index::{FileName, PartitionView, StreamDecl, TrackKey};
use strata_segment::names::{NumberedName, SEG_DIR};
use strata_segment::{SegmentError, SegmentReader};

use crate::error::EngineError;
use crate::value::Row;
use crate::view::View;
use crate::view::floors::beneath;
use crate::view::narrow::Reach;
use crate::view::open_segments::{OpenSegment, OpenSegments};

/// One row read back: the position it was published at, and its values in declaration order.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredRow {
    /// The position it was published at.
    pub position: u64,
    /// Its values, one per declared field.
    pub values: Row,
}

impl View {
    /// The rows of `stream` under `selection` (the track's components, outermost first, or any
    /// prefix; empty for every partition) whose position lies in `positions`, in publish order:
    /// within a partition and across the partitions a prefix covers. Reads see what seals made
    /// durable. This collects [`Store::query_iter`]; a large read should stream it (or
    /// [`Store::query_runs`], its columns as slices) rather than hold every row at once.
    pub fn query(
        &self,
        stream: &str,
        selection: &[&str],
        positions: impl RangeBounds<u64>,
    ) -> Result<Vec<StoredRow>, EngineError> {
        self.query_iter(stream, selection, positions)?.collect()
    }

    /// What a query reads, checked before it reads anything: the stream's declaration, the
    /// selection's key and the positions as inclusive ends; `None` if the range holds no
    /// position. A range reaching beneath the raw floor of any partition it covers is refused
    /// whole, with the highest such floor: never a short answer.
    pub(crate) fn query_bounds(
        &self,
        stream: &str,
        selection: &[&str],
        positions: impl RangeBounds<u64>,
    ) -> Result<Option<(&StreamDecl, TrackKey, u64, u64)>, EngineError> {
        let prefix = self.selected(stream, selection)?;
        refuse_inverted(&positions, Reach::Positions)?;
        // A range that holds no position holds no row (not the row at its saturated end).
        let Some((lo, hi)) = inclusive(positions) else {
            return Ok(None);
        };
        if let Some(floor) = self.raw_floor(stream, &prefix, false)
            && beneath(lo, floor)
        {
            return Err(self.beneath_floor(
                stream,
                &prefix,
                floor,
                Reach::Positions,
                |key, [start, _]| {
                    self.raw_floor(stream, key, false)
                        .filter(|&f| beneath(start, f))
                },
            ));
        }
        let decl = self.declaration(stream)?;
        Ok(Some((decl, prefix, lo, hi)))
    }

    /// Segment `name`'s reader and the index of `view`'s partition (of `stream`) in it: the
    /// index the catalog knows, handed to the file rather than searched for, and checked there
    /// ([`Store::partition_at`]). A file the view holds no live tier in is a caller's bug,
    /// answered as one.
    pub(crate) fn partition_in(
        &self,
        view: &PartitionView<'_>,
        name: FileName,
        stream: &str,
    ) -> Result<(Arc<OpenSegment>, usize), EngineError> {
        let part_idx = view.part_idx(name).ok_or_else(|| EngineError::Internal {
            reason: format!(
                "segment {name} holds no live tier of {:?} of {stream:?}",
                view.track()
            ),
        })?;
        let reader = self.partition_at(name, stream, view.track(), part_idx)?;
        Ok((reader, part_idx))
    }

    /// Segment `name`'s reader, and `stream`'s partition `track` at `part_idx` in it, the index
    /// the catalog knows (no search of the file): checked to be that partition, else the file
    /// is unreadable, never another partition's rows.
    pub(crate) fn partition_at(
        &self,
        name: FileName,
        stream: &str,
        track: &TrackKey,
        part_idx: usize,
    ) -> Result<Arc<OpenSegment>, EngineError> {
        let reader = self.reader(name)?;
        let entry = reader.partitions().get(part_idx).map(|p| &p.entry);
        if !entry.is_some_and(|e| e.stream == stream && e.track == *track) {
            return Err(mismatch(
                reader.path(),
                format!("no partition {track:?} of {stream:?} at index {part_idx}"),
            ));
        }
        Ok(reader)
    }

    /// The cached readers under a read lock, for a read that asks for many files in a row
    /// ([`View::is_cached`], then `get_ref`): it must let go before anything that takes the
    /// lock again, [`View::reader`] included.
    pub(crate) fn open_readers(&self) -> RwLockReadGuard<'_, OpenSegments<Arc<OpenSegment>>> {
        self.readers
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether `cached` (the guard of [`View::open_readers`]) holds a reader of `name` that
    /// [`View::reader`] would answer: one of a file boot did not find unreadable.
    pub(crate) fn is_cached(
        &self,
        cached: &OpenSegments<Arc<OpenSegment>>,
        name: FileName,
    ) -> bool {
        !self.unreadable.contains_key(&name) && cached.contains(name)
    }

    /// The open reader of segment `name`: the cached one, or opened now and cached (evicting
    /// the least recently used reader if the cache is at `open_segments_max`).
    pub(crate) fn reader(&self, name: FileName) -> Result<Arc<OpenSegment>, EngineError> {
        let unreadable_reason = self.unreadable.get(&name);
        // A cached reader is the common case and needs no path: looked up before one is
        // formatted (a fold asks for its readers a few times a call), under the read lock that
        // reads on other threads share.
        if unreadable_reason.is_none()
            && let Some(reader) = self
                .readers
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .get(name)
        {
            return Ok(reader);
        }
        let path = NumberedName::segment(name).path_in(SEG_DIR);
        if let Some(reason) = unreadable_reason {
            // Boot's reasons name the file already.
            let what = if *reason == format!("{path} is missing") {
                "the file is missing"
            } else {
                reason.strip_prefix(&format!("{path}: ")).unwrap_or(reason)
            };
            return Err(mismatch(&path, what));
        }
        let vfs: &dyn strata_segment::vfs::Vfs = self.vfs.as_ref();
        // A map that fails for want of memory or descriptors is exhaustion, not damage.
        let mapped = vfs.map(&path).map_err(|e| {
            unreadable(SegmentError::Io {
                path: path.clone(),
                source: e,
            })
        })?;
        let recorded = self.catalog.file(name).map(|f| (f.len, f.digest));
        let reader = SegmentReader::open(&path, mapped)
            .map_err(unreadable)?
            .with_chunk_cache(self.chunks.clone(), name)
            .with_cell_cache(self.cell_chunks.clone(), name);
        if recorded != Some((reader.file_len(), reader.digest())) {
            return Err(mismatch(&path, "length or digest differs"));
        }
        let reader = Arc::new(OpenSegment::new(reader, &self.live_maps));
        let mut readers = self
            .readers
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // Another thread may have opened it meanwhile: its reader is kept, this one dropped
        // when the read lets go of it.
        if let Some(cached) = readers.get(name) {
            return Ok(cached);
        }
        readers.insert(name, Arc::clone(&reader));
        Ok(reader)
    }
}

/// A failed read of a store file, typed: exhaustion of a resource as such, the rest unreadable.
pub(crate) fn unreadable(error: SegmentError) -> EngineError {
    EngineError::read(error)
}

/// A file that differs from what the manifest recorded of it.
pub(crate) fn mismatch(path: &str, what: impl Into<String>) -> EngineError {
    EngineError::Unreadable {
        source: SegmentError::mismatch(path, what),
    }
}

/// Refuses a range whose start lies above its end (`9..=3`): a mistake, not a question whose
/// answer is nothing. A range empty without being inverted (`5..5`, `(Excluded(5),
/// Included(5))`) passes, and answers nothing.
pub(crate) fn refuse_inverted(
    range: &impl RangeBounds<u64>,
    reach: Reach,
) -> Result<(), EngineError> {
    let value = |bound: Bound<&u64>| match bound {
        Bound::Included(&v) | Bound::Excluded(&v) => Some(v),
        Bound::Unbounded => None,
    };
    match (value(range.start_bound()), value(range.end_bound())) {
        (Some(start), Some(end)) if start > end => Err(EngineError::InvertedRange {
            start,
            end,
            unit: reach.unit(),
        }),
        _ => Ok(()),
    }
}

/// The range as inclusive ends; `None` if it holds no value (`..0`, `5..5`, `(Excluded(MAX),
/// Unbounded)`, `9..=3`). Exclusive ends are never saturated into a value the range excludes.
pub(crate) fn inclusive(range: impl RangeBounds<u64>) -> Option<(u64, u64)> {
    let lo = lowest(range.start_bound())?;
    let hi = highest(range.end_bound())?;
    (lo <= hi).then_some((lo, hi))
}

/// The lowest value a start bound admits; `None` if it admits none (excluded `u64::MAX`).
pub(crate) fn lowest(start: Bound<&u64>) -> Option<u64> {
    match start {
        Bound::Included(&v) => Some(v),
        Bound::Excluded(&v) => v.checked_add(1),
        Bound::Unbounded => Some(0),
    }
}

/// The highest value an end bound admits; `None` if it admits none (excluded 0).
pub(crate) fn highest(end: Bound<&u64>) -> Option<u64> {
    match end {
        Bound::Included(&v) => Some(v),
        Bound::Excluded(&v) => v.checked_sub(1),
        Bound::Unbounded => Some(u64::MAX),
    }
}
