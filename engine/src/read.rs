//! Raw reads: rows in publish order, from mapped segments, merged across partitions by ordinal.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

use strata_index::{FieldKind, FileName, StreamDecl, Tier, TrackKey};
use strata_segment::names::{NumberedName, SEG_DIR};
use strata_segment::{Column, SegmentError, SegmentReader};

use crate::error::EngineError;
use crate::open_segments::OpenSegment;
use crate::store::Store;
use crate::value::{Row, Value};

/// One row read back: the position it was published at, and its values in declaration order.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredRow {
    /// The position it was published at.
    pub position: u64,
    /// Its values, one per declared field.
    pub values: Row,
}

/// The rows of one partition in one segment that a read wants.
struct Run {
    reader: Arc<OpenSegment>,
    part_idx: usize,
    rows: std::ops::Range<usize>,
}

impl Store {
    /// The rows of `stream` under `selection` (the track's components, outermost first, or any
    /// prefix; empty for every partition) whose position lies in `positions`, in publish order:
    /// within a partition and across the partitions a prefix covers. Reads see what seals made
    /// durable.
    pub fn query(
        &self,
        stream: &str,
        selection: &[&str],
        positions: impl RangeBounds<u64>,
    ) -> Result<Vec<StoredRow>, EngineError> {
        let prefix = self.selection_key(stream, selection)?;
        // A range that holds no position holds no row (not the row at its saturated end).
        let Some((lo, hi)) = inclusive(positions) else {
            return Ok(Vec::new());
        };
        // Never a short answer: a range reaching beneath the raw floor of any partition it
        // covers is refused whole, with the highest such floor.
        if let Some(floor) = self.raw_floor(stream, &prefix, false) {
            if beneath(lo, floor) {
                return Err(EngineError::Floor {
                    stream: stream.to_owned(),
                    floor,
                    unit: "position",
                });
            }
        }
        let decl = &self.streams[stream].decl;
        // Each partition's files are in file order, which is ordinal order within it. They are
        // opened as the merge reaches them, never all at once: a read over more files than
        // `open_segments_max` holds one file per partition, not every file it will read.
        let mut cursors = Vec::new();
        for view in self.catalog.partitions(stream, &prefix) {
            let files: Vec<FileName> = view
                .segments(Tier::Raw)
                .filter(|(_, entry)| entry.positions[1] >= lo && entry.positions[0] <= hi)
                .map(|(name, _)| name)
                .collect();
            let cursor = Cursor {
                store: self,
                stream,
                track: view.track().clone(),
                lo,
                hi,
                files: files.into_iter(),
                run: None,
                ordinals: Vec::new(),
                at: 0,
            };
            if let Some(cursor) = cursor.start()? {
                cursors.push(cursor);
            }
        }
        merge_by_ordinal(decl, cursors)
    }

    /// Segment `name`'s reader and the index of `stream`'s partition `track` in it. The manifest
    /// says the partition is there; a file without it is unreadable, never an empty answer.
    pub(crate) fn partition_in(
        &self,
        name: FileName,
        stream: &str,
        track: &TrackKey,
    ) -> Result<(Arc<OpenSegment>, usize), EngineError> {
        let reader = self.reader(name)?;
        let part_idx = reader.find(stream, track).ok_or_else(|| {
            mismatch(
                reader.path(),
                format!("no partition {track:?} of {stream:?}"),
            )
        })?;
        Ok((reader, part_idx))
    }

    /// The open reader of segment `name`: the cached one, or opened now and cached (evicting
    /// the least recently used reader if the cache is at `open_segments_max`).
    pub(crate) fn reader(&self, name: FileName) -> Result<Arc<OpenSegment>, EngineError> {
        let path = NumberedName::segment(name).path_in(SEG_DIR);
        if let Some(reason) = self.unreadable.get(&name) {
            // Boot's reasons name the file already.
            let what = if *reason == format!("{path} is missing") {
                "the file is missing"
            } else {
                reason.strip_prefix(&format!("{path}: ")).unwrap_or(reason)
            };
            return Err(mismatch(&path, what));
        }
        let mut readers = self
            .readers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(reader) = readers.get(name) {
            return Ok(reader);
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
        let reader = SegmentReader::open(&path, mapped).map_err(unreadable)?;
        if recorded != Some((reader.file_len(), reader.digest())) {
            return Err(mismatch(&path, "length or digest differs"));
        }
        let reader = Arc::new(OpenSegment::new(reader, &self.live_maps));
        readers.insert(name, Arc::clone(&reader));
        Ok(reader)
    }
}

/// A failed read of a store file, typed: exhaustion of a resource as such, the rest unreadable.
pub(crate) fn unreadable(error: SegmentError) -> EngineError {
    EngineError::read(error)
}

/// A file that differs from what the manifest recorded of it.
fn mismatch(path: &str, what: impl Into<String>) -> EngineError {
    EngineError::Unreadable {
        source: SegmentError::mismatch(path, what),
    }
}

/// Whether a read starting at `start` reaches beneath `floor`. A floor of `u64::MAX` is where
/// one past the top of the axis (or of the positions) saturated: something at `u64::MAX` itself
/// was retired, so nothing there is held whole, and every read answers the floor.
pub(crate) fn beneath(start: u64, floor: u64) -> bool {
    start < floor || floor == u64::MAX
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

/// A partition's rows one at a time, across its files, opening each as it is reached.
struct Cursor<'s> {
    store: &'s Store,
    stream: &'s str,
    track: TrackKey,
    /// The positions the read wants, inclusive.
    lo: u64,
    hi: u64,
    /// The partition's files not yet reached, in ordinal order.
    files: std::vec::IntoIter<FileName>,
    run: Option<Run>,
    ordinals: Vec<u64>,
    at: usize,
}

impl<'s> Cursor<'s> {
    /// The cursor at its first row; `None` if the partition has no row the read wants.
    fn start(mut self) -> Result<Option<Cursor<'s>>, EngineError> {
        Ok(self.advance_run()?.then_some(self))
    }

    /// Moves to the next file with rows the read wants; false when there is none.
    fn advance_run(&mut self) -> Result<bool, EngineError> {
        // The finished run's reader is let go before the next is opened, so a cursor holds one
        // map at a time.
        self.run = None;
        for name in self.files.by_ref() {
            let (reader, part_idx) = self.store.partition_in(name, self.stream, &self.track)?;
            let rows = reader
                .position_range(part_idx, self.lo, self.hi)
                .map_err(unreadable)?;
            if rows.is_empty() {
                continue;
            }
            let ordinals = reader.ordinals(part_idx).map_err(unreadable)?;
            self.ordinals = ordinals.iter_from(rows.start).take(rows.len()).collect();
            self.at = 0;
            self.run = Some(Run {
                reader,
                part_idx,
                rows,
            });
            return Ok(true);
        }
        Ok(false)
    }

    fn ordinal(&self) -> u64 {
        self.ordinals[self.at]
    }
}

/// A linear k-way merge of partitions by ordinal: each partition is already in ordinal order, so
/// this never sorts; it only picks the least head.
fn merge_by_ordinal(
    decl: &StreamDecl,
    mut cursors: Vec<Cursor<'_>>,
) -> Result<Vec<StoredRow>, EngineError> {
    let mut heap: BinaryHeap<Reverse<(u64, usize)>> = cursors
        .iter()
        .enumerate()
        .map(|(i, c)| Reverse((c.ordinal(), i)))
        .collect();
    let mut out = Vec::new();
    while let Some(Reverse((_, idx))) = heap.pop() {
        let cursor = &mut cursors[idx];
        let run = cursor.run.as_ref().expect("a cursor in the heap has a run");
        out.push(read_row(
            decl,
            run,
            &cursor.track,
            run.rows.start + cursor.at,
        )?);
        cursor.at += 1;
        if cursor.at == cursor.ordinals.len() && !cursor.advance_run()? {
            continue;
        }
        heap.push(Reverse((cursor.ordinal(), idx)));
    }
    Ok(out)
}

/// Rebuilds row `row_idx` of a run: track values from the key, the axis from its block, the
/// rest from their columns.
fn read_row(
    decl: &StreamDecl,
    run: &Run,
    track: &TrackKey,
    row_idx: usize,
) -> Result<StoredRow, EngineError> {
    let reader = &run.reader;
    let position = reader
        .positions(run.part_idx)
        .map_err(unreadable)?
        .get(row_idx)
        .expect("a run's rows are the partition's");
    let labels: Vec<&str> = track.labels().collect();
    let mut values = Vec::with_capacity(decl.fields.len());
    for (field_idx, field) in decl.fields.iter().enumerate() {
        let field_idx = u16::try_from(field_idx).expect("at most FIELDS_MAX fields");
        let value = if let Some(component) = decl.track.iter().position(|&t| t == field_idx) {
            Value::from_label(
                field.kind,
                labels.get(component).copied().unwrap_or_default(),
            )
            .ok_or_else(|| {
                mismatch(
                    reader.path(),
                    format!("track label is not a {}", field.kind),
                )
            })?
        } else if decl.axis == Some(field_idx) {
            let axis = reader
                .axis(run.part_idx)
                .map_err(unreadable)?
                .ok_or_else(|| mismatch(reader.path(), "no axis block"))?;
            Value::U64(axis[row_idx].get())
        } else {
            let column = reader
                .column(run.part_idx, field_idx)
                .map_err(unreadable)?
                .ok_or_else(|| {
                    mismatch(
                        reader.path(),
                        format!("no column for field {:?}", field.name),
                    )
                })?;
            column_value(column, field.kind, row_idx).ok_or_else(|| {
                mismatch(
                    reader.path(),
                    format!("field {:?} is stored as another kind", field.name),
                )
            })?
        };
        values.push(value);
    }
    Ok(StoredRow { position, values })
}

fn column_value(column: Column<'_>, kind: FieldKind, row_idx: usize) -> Option<Value> {
    match (column, kind) {
        (Column::U64(c), FieldKind::U64) => Some(Value::U64(c.get(row_idx)?.get())),
        (Column::I64(c), FieldKind::I64) => Some(Value::I64(c.get(row_idx)?.get())),
        (Column::F64(c), FieldKind::F64) => Some(Value::F64(c.get(row_idx)?.get())),
        (Column::Str(c), FieldKind::Str) => Some(Value::Str(
            std::str::from_utf8(c.get(row_idx)?).ok()?.to_owned(),
        )),
        (Column::Bytes(c), FieldKind::Bytes) => Some(Value::Bytes(c.get(row_idx)?.to_vec())),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, HashSet};
    use std::path::Path;
    use std::sync::Arc;

    use strata_index::{FieldKind, StreamDecl, Tier, TrackKey};
    use strata_segment::names::{NumberedName, SEG_DIR};

    use super::{Run, read_row};
    use crate::open_segments::OpenSegment;
    use crate::{Config, Store, StoredRow, Stream, Value};

    const TRACKS: [&str; 2] = ["r0", "r1"];
    const N_BARRIERS: u64 = 40;
    const ROWS_PER_TRACK: u64 = 5;

    /// A store in `dir` holding `N_BARRIERS` barrier files, each with rows of both tracks, that
    /// keeps at most 4 segment readers open; with its declaration and the rows published, by
    /// track.
    fn sealed(dir: &Path) -> (Store, StreamDecl, BTreeMap<&'static str, Vec<StoredRow>>) {
        let decl = Stream::new("c")
            .field("run", FieldKind::Str)
            .field("t", FieldKind::U64)
            .field("v", FieldKind::F64)
            .field("n", FieldKind::I64)
            .track(["run"])
            .axis("t")
            .build()
            .unwrap();
        let config = Config {
            open_segments_max: 4,
            ..Config::default()
        };
        let mut store = Store::open(dir, config, std::slice::from_ref(&decl)).unwrap();
        let mut published: BTreeMap<&str, Vec<StoredRow>> = BTreeMap::new();
        let mut t = 0u64;
        for barrier in 0..N_BARRIERS {
            let position = barrier + 1;
            let mut rows = Vec::new();
            for track in TRACKS {
                for _ in 0..ROWS_PER_TRACK {
                    t += 1;
                    let values = vec![
                        Value::Str(track.to_owned()),
                        Value::U64(t),
                        Value::F64(t as f64 / 10.0 + 1.0 / 3.0),
                        Value::I64(500 - i64::try_from(t * 7919 % 1000).unwrap()),
                    ];
                    published.entry(track).or_default().push(StoredRow {
                        position,
                        values: values.clone(),
                    });
                    rows.push(values);
                }
            }
            store.publish("c", position, &rows).unwrap();
            store.seal().unwrap();
        }
        (store, decl, published)
    }

    /// A read holds the store's own segment readers across compaction steps that retire and
    /// remove every file it holds, on the real file system, and reads exactly what was
    /// published through them afterwards.
    ///
    /// The read is built as `Cursor` builds it — one `Run` per segment of each partition, each
    /// holding the `Arc` of the reader `Store::partition_in` hands out (the cached one, or
    /// mapped now) — and finished with the read's own `read_row`. A `Cursor` borrows the store,
    /// so the public API cannot hold one across `&mut self` compaction; this is the same
    /// `Arc<OpenSegment>` a cursor holds, and what it proves is what the cursor relies on: the
    /// store lets go of a retired input's reader and unlinks the file, and a map still held
    /// keeps answering, checksums and all, from the unlinked file's pages. With the cache
    /// capped at 4, each held reader was evicted before the next partition's were opened, so
    /// the read holds one map per run, and compaction maps most inputs anew: most held maps
    /// of the second half are read (and their blocks verified) for the first time after their
    /// file is gone.
    ///
    /// It fails if an input were truncated or rewritten in place instead of unlinked (checked
    /// by hand: with `remove_retired` truncating each input to 0 bytes before removing it, this
    /// test dies of SIGBUS reading the first row after compaction), and if the store kept a
    /// retired reader cached or the file on disk.
    #[test]
    fn a_read_holding_inputs_reads_them_whole_after_compaction_removes_them() {
        let dir = tempfile::tempdir().unwrap();
        let (mut store, decl, published) = sealed(dir.path());

        // The read: every segment of every partition, held as a cursor holds them.
        let mut runs: Vec<(TrackKey, u64, Run)> = Vec::new();
        for view in store.catalog.partitions("c", &TrackKey::ROOT) {
            for (name, _) in view.segments(Tier::Raw) {
                let (reader, part_idx) = store.partition_in(name, "c", view.track()).unwrap();
                let n_rows = reader.positions(part_idx).unwrap().len();
                let run = Run {
                    reader,
                    part_idx,
                    rows: 0..n_rows,
                };
                runs.push((view.track().clone(), name, run));
            }
        }
        let held: HashSet<*const OpenSegment> = runs
            .iter()
            .map(|(_, _, run)| Arc::as_ptr(&run.reader))
            .collect();
        let held = held.len() as u64;
        assert_eq!(held, N_BARRIERS * TRACKS.len() as u64, "a map per run");
        // Part-way: the first half of each partition's barriers is read before compaction.
        let mut read: BTreeMap<TrackKey, Vec<StoredRow>> = BTreeMap::new();
        let mut read_runs = |runs: &[(TrackKey, u64, Run)], barriers: std::ops::Range<u64>| {
            for (track, _, run) in runs {
                let barrier = run.reader.positions(run.part_idx).unwrap().first().unwrap() - 1;
                if barriers.contains(&barrier) {
                    for row_idx in run.rows.clone() {
                        let row = read_row(&decl, run, track, row_idx).unwrap();
                        read.entry(track.clone()).or_default().push(row);
                    }
                }
            }
        };
        read_runs(&runs, 0..N_BARRIERS / 2);

        let steps = store.compact().unwrap();
        let removed: Vec<u64> = steps.iter().flat_map(|s| s.removed.clone()).collect();
        for (_, name, _) in &runs {
            assert!(
                removed.contains(name),
                "input {name} was removed: {steps:?}"
            );
            let path = NumberedName::segment(*name).path_in(SEG_DIR);
            assert!(!dir.path().join(&path).exists(), "{path} is gone from disk");
            let cached = store
                .readers
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .get(*name);
            assert!(cached.is_none(), "the store let go of {path}'s reader");
        }
        // The rest of the read, through maps of files that no longer exist.
        read_runs(&runs, N_BARRIERS / 2..N_BARRIERS);
        for track in TRACKS {
            let key = TrackKey::encode(&[track]).unwrap();
            assert!(
                read[&key] == published[track],
                "the rows of {track} read through removed inputs differ from those published"
            );
        }
        // And the compacted store answers the same, from its outputs.
        for track in TRACKS {
            assert!(store.query("c", &[track], ..).unwrap() == published[track]);
        }
        // Only the maps held here keep the removed inputs alive: the store's are its outputs.
        let alive = store.live_maps.now();
        assert!(alive > held, "{alive} maps alive, {held} held by the read");
        drop(runs);
        assert_eq!(
            store.live_maps.now(),
            alive - held,
            "the maps of removed inputs lived only as long as the read held them"
        );
    }
}
