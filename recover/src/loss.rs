//! What a cut of damaged manifest history would lose, counted from records and evidence.
//!
//! A cut keeps the trusted prefix's state and nothing after it. What the store held before the
//! damage is known only from evidence: the records after the damaged frame (which pass their own
//! checks), and the segment files in `seg/` that the prefix does not claim — among them the files
//! of the damaged frame's own barrier, which no readable record names. So the loss is the rows of
//! that evidence the repaired store would not serve: every row it holds that the prefix does not
//! claim in a file that is still there. Counting the later frames' files alone would leave out the
//! damaged frame's barrier, and rows the prefix claims in files a later compaction removed.
//!
//! Rows are told apart by (stream, track, ordinal): ordinals are unique per stream, and the live
//! segments of one partition never overlap in them. A compaction output holds exactly the rows of
//! the segments it replaced, so where two pieces of evidence overlap one contains the other, and
//! only the outermost is counted.
//!
//! Files in `tmp/` and `quarantine/` are not counted: no record ever claimed a temp, and
//! quarantine held only what an earlier boot found unclaimed (or an earlier repair already
//! reported). They still raise the repair's fences ([`crate::repair`]), which err high.

use std::collections::BTreeMap;

use strata_index::{Catalog, Entry, FileName, PartitionEntry, StrayFrame, Tier, TrackKey};
use strata_segment::SegmentReader;
use strata_segment::names::{FileKind, NumberedName, SEG_DIR};
use strata_segment::vfs::{Mapped, Vfs};

use crate::error::RecoverError;

/// What one stream would lose to a cut.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StreamLoss {
    /// Rows the store held before the damage that it would no longer serve.
    pub n_rows: u64,
    /// The lowest and highest position of those rows.
    pub positions: Option<[u64; 2]>,
    /// Of `n_rows`, rows the trusted prefix claims in files that are gone (or not the length it
    /// records): a later frame removed them (a compaction's inputs), so the repaired store
    /// would claim them and refuse every read of them as unreadable.
    pub n_rows_in_missing_files: u64,
}

impl StreamLoss {
    fn add(&mut self, n_rows: u64, lo: u64, hi: u64) {
        if n_rows == 0 {
            return;
        }
        self.n_rows = self.n_rows.saturating_add(n_rows);
        self.positions = Some(match self.positions {
            None => [lo, hi],
            Some([min, max]) => [min.min(lo), max.max(hi)],
        });
    }
}

/// A stream's partition.
type Key = (String, TrackKey);

/// A piece of the prefix the repaired store serves: its ordinals and rows.
#[derive(Clone, Copy)]
struct Served {
    ordinals: [u64; 2],
    n_rows: u64,
}

/// Per stream, what a cut after the trusted prefix (whose state is `catalog`) would lose, given
/// the frames after the damage (`later`) and the files in `seg/`. A file that does not open as a
/// segment is passed over (it holds nothing a reader could be served).
pub(crate) fn assess(
    vfs: &dyn Vfs,
    catalog: &Catalog,
    later: &[StrayFrame],
) -> Result<BTreeMap<String, StreamLoss>, RecoverError> {
    let present = segments_present(vfs)?;
    let prefix = prefix_pieces(catalog);
    // The prefix's pieces that the repaired store serves: claimed live, and their file there at
    // the length recorded.
    let mut served: BTreeMap<Key, Vec<Served>> = BTreeMap::new();
    let mut missing: BTreeMap<Key, Vec<PartitionEntry>> = BTreeMap::new();
    for (key, pieces) in &prefix {
        for (name, entry) in pieces {
            let recorded_len = catalog.file(*name).map(|f| f.len);
            if present.get(name).copied().flatten() == recorded_len {
                served.entry(key.clone()).or_default().push(Served {
                    ordinals: entry.ordinals,
                    n_rows: entry.n_rows,
                });
            } else {
                missing.entry(key.clone()).or_default().push(entry.clone());
            }
        }
    }

    // The state before the damage, as far as the evidence shows: the prefix's, then the files no
    // record of the prefix claims (the damaged frame's barrier among them), then the later frames.
    let mut held = prefix;
    let mut readers: BTreeMap<FileName, SegmentReader<Mapped>> = BTreeMap::new();
    for &name in present.keys() {
        if catalog.file(name).is_some() {
            continue;
        }
        let path = NumberedName::segment(name).path_in(SEG_DIR);
        let Ok(bytes) = vfs.map(&path) else { continue };
        let Ok(reader) = SegmentReader::open(&path, bytes) else {
            continue;
        };
        for part in reader.partitions() {
            let key = (part.entry.stream.clone(), part.entry.track.clone());
            held.entry(key)
                .or_default()
                .insert(name, part.entry.clone());
        }
        readers.insert(name, reader);
    }
    for entry in later.iter().flat_map(|f| &f.record.entries) {
        apply(&mut held, entry);
    }

    let mut losses: BTreeMap<String, StreamLoss> = BTreeMap::new();
    for (key, pieces) in &held {
        let served = served.get(key).map_or(&[][..], Vec::as_slice);
        let outer = outermost(pieces);
        let loss = losses.entry(key.0.clone()).or_default();
        for &(name, entry) in &outer {
            count_unserved(loss, entry, served, readers.get(&name));
        }
        // A gone piece counts where the evidence still holds its rows (itself, or a merge output
        // that contains it); one a later frame retired was not held before the damage.
        for entry in missing.get(key).into_iter().flatten() {
            if outer
                .iter()
                .any(|(_, held)| contains(held.ordinals, entry.ordinals))
            {
                loss.n_rows_in_missing_files =
                    loss.n_rows_in_missing_files.saturating_add(entry.n_rows);
            }
        }
    }
    losses.retain(|_, loss| loss.n_rows > 0);
    Ok(losses)
}

/// Segment files in `seg/`, by number, each with its length (`None` if it cannot be read).
fn segments_present(vfs: &dyn Vfs) -> Result<BTreeMap<FileName, Option<u64>>, RecoverError> {
    let mut present = BTreeMap::new();
    if !vfs
        .exists(SEG_DIR)
        .map_err(|e| RecoverError::io(SEG_DIR, e))?
    {
        return Ok(present);
    }
    for entry in vfs
        .list(SEG_DIR)
        .map_err(|e| RecoverError::io(SEG_DIR, e))?
    {
        let Some(name) = NumberedName::parse(&entry.name).filter(|n| n.kind == FileKind::Segment)
        else {
            continue;
        };
        if entry.is_dir {
            continue;
        }
        let path = name.path_in(SEG_DIR);
        present.insert(name.number, vfs.len(&path).ok());
    }
    Ok(present)
}

/// The prefix's live raw tiers, per partition, by file.
fn prefix_pieces(catalog: &Catalog) -> BTreeMap<Key, BTreeMap<FileName, PartitionEntry>> {
    let mut pieces: BTreeMap<Key, BTreeMap<FileName, PartitionEntry>> = BTreeMap::new();
    for decl in catalog.streams() {
        for view in catalog.partitions(&decl.id, &TrackKey::ROOT) {
            let key = (decl.id.clone(), view.track().clone());
            let by_file = pieces.entry(key).or_default();
            for (name, entry) in view.segments(Tier::Raw) {
                by_file.insert(name, entry.clone());
            }
        }
    }
    pieces
}

/// What one later record does to the raw rows held: files added (by a barrier, a compaction or
/// a snapshot's restatement) hold rows, retired raw tiers and a merge's inputs no longer do.
fn apply(held: &mut BTreeMap<Key, BTreeMap<FileName, PartitionEntry>>, entry: &Entry) {
    match entry {
        Entry::AddFile(file) | Entry::Claim(file) => {
            for part in &file.partitions {
                let key = (part.stream.clone(), part.track.clone());
                held.entry(key).or_default().insert(file.name, part.clone());
            }
        }
        Entry::Merge { file, inputs } => {
            for part in &file.partitions {
                let key = (part.stream.clone(), part.track.clone());
                let by_file = held.entry(key).or_default();
                for input in inputs {
                    by_file.remove(input);
                }
                by_file.insert(file.name, part.clone());
            }
        }
        Entry::Retire(retirement) if retirement.tier == Tier::Raw => {
            let key = (retirement.stream.clone(), retirement.track.clone());
            if let Some(by_file) = held.get_mut(&key) {
                by_file.remove(&retirement.file);
            }
        }
        _ => {}
    }
}

/// The pieces no other piece contains (by ordinals), oldest first. Of two with the same range,
/// the one in the lower-numbered file is kept: either holds the same rows.
fn outermost(pieces: &BTreeMap<FileName, PartitionEntry>) -> Vec<(FileName, &PartitionEntry)> {
    let mut sorted: Vec<(FileName, &PartitionEntry)> =
        pieces.iter().map(|(&name, entry)| (name, entry)).collect();
    // Widest first among equal starts, so that a container comes before what it contains.
    sorted.sort_by_key(|(name, e)| (e.ordinals[0], std::cmp::Reverse(e.ordinals[1]), *name));
    let mut kept: Vec<(FileName, &PartitionEntry)> = Vec::new();
    let mut reach: Option<u64> = None;
    for (name, entry) in sorted {
        if reach.is_some_and(|hi| entry.ordinals[1] <= hi) {
            continue;
        }
        reach = Some(entry.ordinals[1]);
        kept.push((name, entry));
    }
    kept
}

fn contains(outer: [u64; 2], inner: [u64; 2]) -> bool {
    outer[0] <= inner[0] && inner[1] <= outer[1]
}

/// Adds to `loss` the rows of `entry` (a partition in one file) whose ordinals no served piece
/// covers: exactly, from the file's own columns, when it is here to read; otherwise from the
/// record's counts (its positions then bound those rows).
fn count_unserved(
    loss: &mut StreamLoss,
    entry: &PartitionEntry,
    served: &[Served],
    reader: Option<&SegmentReader<Mapped>>,
) {
    let covered: Vec<Served> = served
        .iter()
        .copied()
        .filter(|s| contains(entry.ordinals, s.ordinals))
        .collect();
    let Some((reader, part_idx)) =
        reader.and_then(|r| r.find(&entry.stream, &entry.track).map(|idx| (r, idx)))
    else {
        // Without the file the count still holds (a merge output holds exactly the rows of
        // the pieces it replaced), but only the record's position range bounds the rest.
        let n_covered: u64 = covered.iter().map(|s| s.n_rows).sum();
        let [lo, hi] = entry.positions;
        loss.add(entry.n_rows.saturating_sub(n_covered), lo, hi);
        return;
    };
    let (Ok(ordinals), Ok(positions)) = (reader.ordinals(part_idx), reader.positions(part_idx))
    else {
        let [lo, hi] = entry.positions;
        loss.add(entry.n_rows, lo, hi);
        return;
    };
    // The gaps between the covered ranges, each counted from the ordinal column.
    let mut from = 0usize;
    let mut gaps = Vec::new();
    // Served pieces of one partition never overlap; in ordinal order, the gaps lie between.
    let mut ranges: Vec<[u64; 2]> = covered.iter().map(|s| s.ordinals).collect();
    ranges.sort_unstable();
    for [lo, hi] in ranges {
        gaps.push(from..ordinals.lower_bound(lo).max(from));
        from = ordinals.upper_bound(hi).max(from);
    }
    gaps.push(from..ordinals.len());
    for gap in gaps.into_iter().filter(|g| g.start < g.end) {
        let (Some(lo), Some(hi)) = (positions.get(gap.start), positions.get(gap.end - 1)) else {
            continue;
        };
        loss.add((gap.end - gap.start) as u64, lo, hi);
    }
}
