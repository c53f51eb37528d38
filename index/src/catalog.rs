//! The catalog: the state derived from manifest records, and nothing else.
//!
//! [`Catalog::apply`] is the only way it changes; boot replay and live barriers call the same
//! function, so what a running store believes is exactly what a reboot would rebuild. An apply is
//! atomic: the whole record is validated against the catalog plus the effects of its own earlier
//! entries (a small overlay, never a clone of the catalog), and only then applied.
//!
//! A catalog lists every file added since it was built, retired or not (boot removes the
//! retired ones it finds). Its snapshot lists only the live files, with a summary of the rest
//! (per stream the ordinals and positions ever assigned, and the files and bytes ever added), so
//! a new manifest generation, and the catalog boot rebuilds from it, follow the live state and
//! not the history.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use crate::key::TrackKey;
use crate::label::validate_label;
use crate::lineage::Lineage;
use crate::record::{
    DeclError, Entry, FileEntry, FileName, Floor, History, PartitionEntry, Record, Retirement,
    StreamDecl, Tier,
};

mod written;

pub use written::Written;

/// Why a record was refused. The catalog is unchanged.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ApplyError {
    /// Index of the offending entry inside the record.
    pub entry_idx: usize,
    /// What is wrong with it.
    pub reason: ApplyReason,
}

impl fmt::Display for ApplyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "record entry {}: {}", self.entry_idx, self.reason)
    }
}

impl std::error::Error for ApplyError {}

/// What is wrong with one entry. Partition positions are indexes into the file's partitions.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ApplyReason {
    /// A declaration fails [`StreamDecl::validate`].
    InvalidDecl {
        /// The stream id.
        stream: String,
        /// Why the declaration is invalid.
        error: DeclError,
    },
    /// A stream is re-declared differently from its recorded declaration.
    DeclConflict {
        /// The stream id.
        stream: String,
    },
    /// A file name is not above every name added before.
    NameNotIncreasing {
        /// The name in the entry.
        name: FileName,
        /// The highest name added so far.
        max_added: FileName,
    },
    /// `u64::MAX` is never issued, so that [`Catalog::next_name`] always exists.
    NameReserved {
        /// The name in the entry.
        name: FileName,
    },
    /// A file lists no partitions.
    EmptyFile {
        /// The file's name.
        name: FileName,
    },
    /// A partition or watermark names an undeclared stream.
    UnknownStream {
        /// The stream id.
        stream: String,
        /// The partition, for an `AddFile`; `None` for a `Watermark`.
        partition_idx: Option<usize>,
    },
    /// A partition's track tuple does not have the depth its stream declares.
    TrackDepth {
        /// The partition.
        partition_idx: usize,
        /// Components in its key.
        depth: usize,
        /// Components the stream declares.
        declared: usize,
    },
    /// A partition has an axis range iff its stream declares an axis; this one does not match.
    AxisPresence {
        /// The partition.
        partition_idx: usize,
        /// Whether the stream declares an axis.
        declared: bool,
    },
    /// A range has `lo > hi`.
    InvertedRange {
        /// The partition.
        partition_idx: usize,
        /// Which range: `positions`, `ordinals` or `axis`.
        what: &'static str,
        /// Its lo.
        lo: u64,
        /// Its hi.
        hi: u64,
    },
    /// `n_rows` is 0 or more than the ordinal range holds.
    RowCount {
        /// The partition.
        partition_idx: usize,
        /// The row count.
        n_rows: u64,
        /// The ordinal range.
        ordinals: [u64; 2],
    },
    /// A partition's byte extent is not inside the file.
    Extent {
        /// The partition.
        partition_idx: usize,
        /// Its offset.
        offset: u64,
        /// Its length.
        len: u64,
        /// The file's length.
        file_len: u64,
    },
    /// Two partitions of one file have the same stream and track.
    DuplicatePartition {
        /// The repeat.
        partition_idx: usize,
        /// The first.
        first_idx: usize,
        /// The stream.
        stream: String,
        /// The track.
        track: TrackKey,
    },
    /// A file's lowest ordinal of a stream is not the stream's next ordinal.
    OrdinalStart {
        /// The stream.
        stream: String,
        /// The stream's next ordinal.
        expected: u64,
        /// The lowest ordinal of the stream in this file.
        got: u64,
    },
    /// A file's rows of a stream do not fill the ordinals they span.
    OrdinalDensity {
        /// The stream.
        stream: String,
        /// Rows of the stream in the file.
        n_rows: u128,
        /// Ordinals from the file's lowest to its highest of the stream.
        span: u128,
    },
    /// A file uses ordinal `u64::MAX`, leaving no next ordinal.
    OrdinalExhausted {
        /// The stream.
        stream: String,
    },
    /// A retirement names a file never added.
    UnknownFile {
        /// The file.
        file: FileName,
    },
    /// A retirement names a file whose every tier is already retired.
    FileRetired {
        /// The file.
        file: FileName,
    },
    /// A retirement names a partition the file does not hold.
    NoPartition {
        /// The file.
        file: FileName,
        /// The stream.
        stream: String,
        /// The track.
        track: TrackKey,
    },
    /// A retirement names a level the partition does not store in that file.
    NoTier {
        /// The file.
        file: FileName,
        /// The stream.
        stream: String,
        /// The track.
        track: TrackKey,
        /// The tier named.
        tier: Tier,
        /// Levels stored.
        n_levels: u8,
    },
    /// A retirement names a tier already retired.
    TierRetired {
        /// The file.
        file: FileName,
        /// The stream.
        stream: String,
        /// The track.
        track: TrackKey,
        /// The tier.
        tier: Tier,
    },
    /// A merge lists no inputs, or lists them out of strictly increasing order.
    MergeInputs {
        /// The output file.
        file: FileName,
        /// The inputs as listed.
        inputs: Vec<FileName>,
    },
    /// A merge input does not hold a partition of the output: every input holds every
    /// partition the output replaces.
    MergeInputLacks {
        /// The output file.
        file: FileName,
        /// The input.
        input: FileName,
        /// The output partition it lacks.
        partition_idx: usize,
    },
    /// A tier of a partition a merge replaces is not live before the merge: the merge would
    /// bring back rows (or cells) already retired, or retire them twice.
    MergeInputNotWhole {
        /// The output file.
        file: FileName,
        /// The input.
        input: FileName,
        /// The output partition.
        partition_idx: usize,
        /// The tier that is not live.
        tier: Tier,
    },
    /// An output partition's rows are not exactly its inputs' rows: what it says differs from
    /// what the inputs add up to. `what` is `n_rows`, `positions`, `ordinals` or `axis`; ranges
    /// are inclusive `[lo, hi]`, and a row count is given as `[n, n]`.
    MergeCover {
        /// The output file.
        file: FileName,
        /// The output partition.
        partition_idx: usize,
        /// Which quantity differs.
        what: &'static str,
        /// What the inputs add up to.
        expected: Option<[u64; 2]>,
        /// What the output partition says.
        got: Option<[u64; 2]>,
    },
    /// A live segment of the partition, not replaced by the merge, holds ordinals inside the
    /// output's range: after the merge two live segments would overlap.
    MergeOverlapsLive {
        /// The output file.
        file: FileName,
        /// The output partition.
        partition_idx: usize,
        /// The live segment's file.
        live: FileName,
    },
    /// A claimed file holds an ordinal or a position beyond what the stream was ever assigned
    /// (`None`: nothing was): a claim restates a file, it never assigns anything.
    ClaimBeyondAssigned {
        /// The claimed file.
        file: FileName,
        /// The partition.
        partition_idx: usize,
        /// `"ordinal"` or `"position"`.
        what: &'static str,
        /// The highest the partition holds.
        got: u64,
        /// The highest the stream was assigned.
        assigned: Option<u64>,
    },
    /// A live segment of the partition holds ordinals inside the claimed partition's range.
    ClaimOverlapsLive {
        /// The claimed file.
        file: FileName,
        /// The partition.
        partition_idx: usize,
        /// The live segment's file.
        live: FileName,
    },
    /// A floor that does not fit its stream: a track of the wrong depth, a raw floor without a
    /// position or a level floor with one, an axis where the stream has none (or none where it
    /// has one), or a raw floor above every position the stream was assigned.
    InvalidFloor {
        /// The stream.
        stream: String,
        /// The partition.
        track: TrackKey,
        /// What is wrong.
        what: String,
    },
    /// A watermark below the stream's current one.
    WatermarkBackwards {
        /// The stream.
        stream: String,
        /// The current watermark.
        current: u64,
        /// The position in the entry.
        position: u64,
    },
}

impl fmt::Display for ApplyReason {
    #[expect(
        clippy::too_many_lines,
        reason = "one arm per variant; splitting them would scatter the messages"
    )]
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidDecl { stream, error } => {
                write!(f, "declaration of stream {stream:?}: {error}")
            }
            Self::DeclConflict { stream } => write!(
                f,
                "stream {stream:?} is re-declared differently from its recorded declaration"
            ),
            Self::NameNotIncreasing { name, max_added } => {
                write!(
                    f,
                    "file {name} is not above the highest file added, {max_added}"
                )
            }
            Self::NameReserved { name } => write!(f, "file name {name} is reserved"),
            Self::EmptyFile { name } => write!(f, "file {name} lists no partitions"),
            Self::UnknownStream {
                stream,
                partition_idx: Some(idx),
            } => {
                write!(f, "partition {idx}: stream {stream:?} is not declared")
            }
            Self::UnknownStream {
                stream,
                partition_idx: None,
            } => {
                write!(f, "stream {stream:?} is not declared")
            }
            Self::TrackDepth {
                partition_idx,
                depth,
                declared,
            } => write!(
                f,
                "partition {partition_idx}: track has {depth} components, the stream declares {declared}"
            ),
            Self::AxisPresence {
                partition_idx,
                declared: true,
            } => {
                write!(
                    f,
                    "partition {partition_idx}: no axis range, but the stream declares an axis"
                )
            }
            Self::AxisPresence {
                partition_idx,
                declared: false,
            } => write!(
                f,
                "partition {partition_idx}: an axis range, but the stream declares no axis"
            ),
            Self::InvertedRange {
                partition_idx,
                what,
                lo,
                hi,
            } => {
                write!(
                    f,
                    "partition {partition_idx}: {what} lo {lo} is above hi {hi}"
                )
            }
            Self::RowCount {
                partition_idx,
                n_rows,
                ordinals: [lo, hi],
            } => write!(
                f,
                "partition {partition_idx}: {n_rows} rows do not fit ordinals {lo}..={hi} (1..=span)"
            ),
            Self::Extent {
                partition_idx,
                offset,
                len,
                file_len,
            } => write!(
                f,
                "partition {partition_idx}: extent {offset}+{len} is outside the file's {file_len} bytes"
            ),
            Self::DuplicatePartition {
                partition_idx,
                first_idx,
                stream,
                track,
            } => write!(
                f,
                "partition {partition_idx} repeats stream {stream:?} track {track:?} of partition {first_idx}"
            ),
            Self::OrdinalStart {
                stream,
                expected,
                got,
            } => write!(
                f,
                "stream {stream:?}: lowest ordinal in the file is {got}, the next ordinal is {expected}"
            ),
            Self::OrdinalDensity {
                stream,
                n_rows,
                span,
            } => write!(
                f,
                "stream {stream:?}: {n_rows} rows in the file but its ordinals span {span}"
            ),
            Self::OrdinalExhausted { stream } => {
                write!(
                    f,
                    "stream {stream:?}: ordinal {} leaves no next ordinal",
                    u64::MAX
                )
            }
            Self::UnknownFile { file } => write!(f, "file {file} was never added"),
            Self::FileRetired { file } => write!(f, "file {file} is already wholly retired"),
            Self::NoPartition {
                file,
                stream,
                track,
            } => {
                write!(
                    f,
                    "file {file} holds no partition of stream {stream:?} track {track:?}"
                )
            }
            Self::NoTier {
                file,
                stream,
                track,
                tier,
                n_levels,
            } => write!(
                f,
                "file {file} stream {stream:?} track {track:?} has no {tier} ({n_levels} levels stored)"
            ),
            Self::TierRetired {
                file,
                stream,
                track,
                tier,
            } => write!(
                f,
                "file {file} stream {stream:?} track {track:?}: {tier} is already retired"
            ),
            Self::MergeInputs { file, inputs } => write!(
                f,
                "merge into file {file}: inputs {inputs:?} are empty or not in strictly increasing order"
            ),
            Self::MergeInputLacks {
                file,
                input,
                partition_idx,
            } => write!(
                f,
                "merge into file {file}: input {input} holds no live tier of output partition {partition_idx}"
            ),
            Self::MergeInputNotWhole {
                file,
                input,
                partition_idx,
                tier,
            } => write!(
                f,
                "merge into file {file}: {tier} of output partition {partition_idx} in input {input} is not live"
            ),
            Self::MergeCover {
                file,
                partition_idx,
                what,
                expected,
                got,
            } => write!(
                f,
                "merge into file {file}: output partition {partition_idx}: {what} is {got:?}, its inputs hold {expected:?}"
            ),
            Self::MergeOverlapsLive {
                file,
                partition_idx,
                live,
            } => write!(
                f,
                "merge into file {file}: output partition {partition_idx} overlaps the ordinals of live file {live}, which it does not replace"
            ),
            Self::ClaimBeyondAssigned {
                file,
                partition_idx,
                what,
                got,
                assigned,
            } => match assigned {
                Some(assigned) => write!(
                    f,
                    "claim of file {file}: partition {partition_idx} holds {what} {got}, beyond the highest its stream was assigned ({assigned})"
                ),
                None => write!(
                    f,
                    "claim of file {file}: partition {partition_idx} holds {what} {got}, but its stream was never assigned one"
                ),
            },
            Self::ClaimOverlapsLive {
                file,
                partition_idx,
                live,
            } => write!(
                f,
                "claim of file {file}: partition {partition_idx} overlaps the ordinals of live file {live}"
            ),
            Self::InvalidFloor {
                stream,
                track,
                what,
            } => write!(f, "floor of {stream:?} {track:?}: {what}"),
            Self::WatermarkBackwards {
                stream,
                current,
                position,
            } => write!(
                f,
                "stream {stream:?}: watermark {position} is below the current {current}"
            ),
        }
    }
}

/// Where one file holds a track: the partition's index in the file and its lowest ordinal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Segment {
    idx: usize,
    ordinal_lo: u64,
}

/// The live segments of one track, and for each tier which of them hold it live.
///
/// Tiers are keyed by the segment's lowest ordinal, not its file name: a compaction output is
/// named above every file, yet holds rows older than files named before it, and a read merges
/// cells oldest first. The live segments of one track never overlap in ordinals (new files hold
/// new ordinals; a merge is refused if it would overlap a segment it does not replace), so the
/// lowest ordinal orders them in publish order.
///
/// Canonical form, so that equal live sets give equal states whatever the history: no trailing
/// empty level map, and a track with nothing live is removed from its stream.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct TrackState {
    /// Every file with a live tier of this track.
    segments: BTreeMap<FileName, Segment>,
    /// The live `Raw` segments, by lowest ordinal.
    raw: BTreeMap<u64, FileName>,
    /// `levels[k]`: the live `Level(k)` segments, by lowest ordinal.
    levels: Vec<BTreeMap<u64, FileName>>,
}

impl TrackState {
    fn tier(&self, tier: Tier) -> Option<&BTreeMap<u64, FileName>> {
        match tier {
            Tier::Raw => Some(&self.raw),
            Tier::Level(k) => self.levels.get(usize::from(k)),
        }
    }

    /// The partition index of `file`'s segment, if its `tier` is live.
    fn live(&self, file: FileName, tier: Tier) -> Option<usize> {
        let segment = self.segments.get(&file)?;
        let holder = self.tier(tier)?.get(&segment.ordinal_lo)?;
        (*holder == file).then_some(segment.idx)
    }

    fn is_empty(&self) -> bool {
        let empty = self.segments.is_empty();
        assert_eq!(
            empty,
            self.raw.is_empty() && self.levels.is_empty(),
            "a track lists exactly the segments its tiers hold"
        );
        empty
    }
}

/// Every tier a partition with `n_levels` levels stores: `Raw`, then each level.
pub fn tiers(n_levels: u8) -> impl Iterator<Item = Tier> {
    std::iter::once(Tier::Raw).chain((0..n_levels).map(Tier::Level))
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct StreamState {
    decl: StreamDecl,
    watermark: Option<u64>,
    /// One above the highest ordinal ever added (0 before any).
    next_ordinal: u64,
    last_position: Option<u64>,
    tracks: BTreeMap<TrackKey, TrackState>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct FileState {
    entry: FileEntry,
    /// Tiers of this file not yet retired; 0 exactly when the file is in `retired_files`.
    live_tiers: u64,
}

/// A partition's floors, from `Floor` records alone: what it no longer holds, per tier.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TrackFloors {
    /// The raw tier's: the lowest position (and axis value, for an axial stream) still held.
    pub raw: Option<RawFloor>,
    /// Per level, the lowest axis value its cells still hold.
    pub levels: BTreeMap<u8, u64>,
}

/// The raw tier's floor in one partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawFloor {
    /// Rows at positions below it are retired.
    pub position: u64,
    /// Rows at axis values below it are retired; `None` for a stream without an axis.
    pub axis: Option<u64>,
}

/// What added a file, for the counts a snapshot keeps of every file ever added.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Origin {
    /// A barrier's `AddFile`.
    Barrier,
    /// A compaction's `Merge`.
    Merge,
    /// A snapshot's `Claim`: counted already, by the snapshot's `History`.
    Claim,
}

/// The state derived from manifest records: declarations, files, retirements, watermarks and
/// names.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Catalog {
    streams: BTreeMap<String, StreamState>,
    /// Every file added since this catalog was built (from empty, or from a snapshot that
    /// listed only the live files), live or wholly retired.
    files: BTreeMap<FileName, FileState>,
    retired_files: BTreeSet<FileName>,
    name_high: FileName,
    /// Per stream id (declared or not), the position at or below which no row is assigned again.
    fences: BTreeMap<String, u64>,
    /// Every file ever added, counted by what added it (`max_added` unused: see below).
    history: History,
    /// The highest file name ever added; no file is added at or below it again.
    max_added: Option<FileName>,
    /// Per stream, per track, the floors `Floor` records raised. Kept apart from the live
    /// tracks: a track retired whole has nothing live, and its floor still answers.
    floors: BTreeMap<String, BTreeMap<TrackKey, TrackFloors>>,
    /// The manifest states of the generations before this one (the last `Lineage` recorded).
    lineage: Lineage,
}

impl Catalog {
    /// An empty catalog: what boot starts from.
    pub fn new() -> Self {
        Self::default()
    }

    /// Applies one record, whole or not at all. On `Err` the catalog is unchanged.
    ///
    /// Rules, per entry (each violation names the entry):
    /// - `Declare`: the declaration validates; an identical re-declaration is a no-op, a
    ///   different one a conflict.
    /// - `AddFile`: the name is above every name added before and is not `u64::MAX`; the file
    ///   lists at least one partition; each partition's stream is declared, its track has the
    ///   declared depth, it has an axis range iff the stream declares an axis, its ranges have
    ///   `lo <= hi`, `1 <= n_rows <= ordinal span`, and its extent lies inside the file; no two
    ///   partitions share (stream, track). Ordinals, per stream in the file: the lowest equals
    ///   the stream's next ordinal, and the rows fill the span from lowest to highest exactly
    ///   (sum of `n_rows` = highest - lowest + 1). Since every earlier ordinal of the stream is
    ///   below its next ordinal, this also rules out overlap with earlier files.
    /// - `Retire`: the file is added and not wholly retired, holds that (stream, track), the
    ///   tier exists (`Raw`, or `Level(k)` with `k < n_levels`) and is not already retired.
    /// - `Watermark`: the stream is declared and the position is not below its watermark.
    /// - `Merge`: the output passes the `AddFile` rules except those on ordinals; its inputs are
    ///   listed in strictly increasing order, and each holds every partition of the output with
    ///   every tier of it live (it is retired whole by this entry). Per output partition, the
    ///   inputs' ordinal ranges do not overlap, and the output says exactly what they add up to:
    ///   the sum of `n_rows`, the ordinals from the lowest input's lo to the highest's hi, the
    ///   positions and axis from the least lo to the greatest hi. No live segment of the
    ///   partition that the merge does not replace overlaps the output's ordinals.
    /// - `NameHigh`: not `u64::MAX`; a value below the current one is accepted and ignored.
    /// - `Fence`: the stream id is a legal label (declared or not); a lower fence than the
    ///   current one is accepted and ignored.
    pub fn apply(&mut self, record: &Record) -> Result<(), ApplyError> {
        let mut pending = Pending::new(self);
        for (entry_idx, entry) in record.entries.iter().enumerate() {
            pending
                .check(entry)
                .map_err(|reason| ApplyError { entry_idx, reason })?;
        }
        for entry in &record.entries {
            self.commit(entry);
        }
        Ok(())
    }

    // ---- mutation: only after the whole record validated; a failure here is our bug ----

    fn commit(&mut self, entry: &Entry) {
        match entry {
            Entry::Declare(decl) => {
                let state = self
                    .streams
                    .entry(decl.id.clone())
                    .or_insert_with(|| StreamState {
                        decl: decl.clone(),
                        watermark: None,
                        next_ordinal: 0,
                        last_position: None,
                        tracks: BTreeMap::new(),
                    });
                assert_eq!(
                    &state.decl, decl,
                    "validated: re-declarations are identical"
                );
            }
            Entry::AddFile(file) => self.commit_add(file, Origin::Barrier),
            Entry::Merge { file, inputs } => self.commit_merge(file, inputs),
            Entry::Claim(file) => self.commit_add(file, Origin::Claim),
            Entry::Assigned {
                stream,
                next_ordinal,
                last_position,
            } => {
                let state = self
                    .streams
                    .get_mut(stream)
                    .expect("validated: stream declared");
                state.next_ordinal = state.next_ordinal.max(*next_ordinal);
                state.last_position = state.last_position.max(Some(*last_position));
            }
            Entry::Floor(floor) => self.commit_floor(floor),
            Entry::History(history) => {
                let h = &mut self.history;
                h.barrier_files = h.barrier_files.saturating_add(history.barrier_files);
                h.barrier_bytes = h.barrier_bytes.saturating_add(history.barrier_bytes);
                h.merge_files = h.merge_files.saturating_add(history.merge_files);
                h.merge_bytes = h.merge_bytes.saturating_add(history.merge_bytes);
                self.max_added = self.max_added.max(Some(history.max_added));
            }
            Entry::Retire(retirement) => self.commit_retire(retirement),
            Entry::Watermark { stream, position } => {
                let state = self
                    .streams
                    .get_mut(stream)
                    .expect("validated: stream declared");
                assert!(
                    state.watermark <= Some(*position),
                    "validated: watermark non-decreasing"
                );
                state.watermark = Some(*position);
            }
            Entry::NameHigh(name) => self.name_high = self.name_high.max(*name),
            Entry::Fence { stream, position } => {
                let fence = self.fences.entry(stream.clone()).or_insert(*position);
                *fence = (*fence).max(*position);
            }
            Entry::Lineage(lineage) => self.lineage = lineage.clone(),
            // How the generation's bytes were written, not what the store holds.
            Entry::Preamble(_) => {}
        }
    }

    fn commit_add(&mut self, file: &FileEntry, origin: Origin) {
        let mut live_tiers = 0;
        for (idx, part) in file.partitions.iter().enumerate() {
            let stream = self
                .streams
                .get_mut(&part.stream)
                .expect("validated: stream declared");
            let track = stream.tracks.entry(part.track.clone()).or_default();
            let ordinal_lo = part.ordinals[0];
            let segment = Segment { idx, ordinal_lo };
            let before = track.segments.insert(file.name, segment);
            assert!(
                before.is_none(),
                "validated: one partition per track a file"
            );
            let before = track.raw.insert(ordinal_lo, file.name);
            assert!(before.is_none(), "validated: live segments never overlap");
            let n_levels = usize::from(part.n_levels);
            if track.levels.len() < n_levels {
                track.levels.resize_with(n_levels, BTreeMap::new);
            }
            for level in &mut track.levels[..n_levels] {
                let before = level.insert(ordinal_lo, file.name);
                assert!(before.is_none(), "validated: live segments never overlap");
            }
            let next = part.ordinals[1]
                .checked_add(1)
                .expect("validated: ordinals below u64::MAX");
            stream.next_ordinal = stream.next_ordinal.max(next);
            stream.last_position = stream.last_position.max(Some(part.positions[1]));
            live_tiers += 1 + u64::from(part.n_levels);
        }
        self.name_high = self.name_high.max(file.name);
        self.max_added = self.max_added.max(Some(file.name));
        let h = &mut self.history;
        match origin {
            Origin::Barrier => {
                h.barrier_files += 1;
                h.barrier_bytes = h.barrier_bytes.saturating_add(file.len);
            }
            Origin::Merge => {
                h.merge_files += 1;
                h.merge_bytes = h.merge_bytes.saturating_add(file.len);
            }
            Origin::Claim => {}
        }
        let previous = self.files.insert(
            file.name,
            FileState {
                entry: file.clone(),
                live_tiers,
            },
        );
        assert!(previous.is_none(), "validated: file names increase");
    }

    /// Retires every tier of each partition the output replaces, then adds the output. In that
    /// order: the output's segments take the lowest ordinal of the first input they replace.
    fn commit_merge(&mut self, file: &FileEntry, inputs: &[FileName]) {
        for part in &file.partitions {
            for &input in inputs {
                let idx = self
                    .streams
                    .get(&part.stream)
                    .and_then(|s| s.tracks.get(&part.track))
                    .and_then(|t| t.segments.get(&input))
                    .expect("validated: every input holds the partition live")
                    .idx;
                let input_state = self.files.get(&input).expect("validated: input added");
                let n_levels = input_state.entry.partitions[idx].n_levels;
                for tier in tiers(n_levels) {
                    self.commit_retire(&Retirement {
                        file: input,
                        stream: part.stream.clone(),
                        track: part.track.clone(),
                        tier,
                    });
                }
            }
        }
        self.commit_add(file, Origin::Merge);
    }

    fn commit_floor(&mut self, floor: &Floor) {
        let floors = self
            .floors
            .entry(floor.stream.clone())
            .or_default()
            .entry(floor.track.clone())
            .or_default();
        match floor.tier {
            Tier::Raw => {
                let position = floor
                    .position
                    .expect("validated: a raw floor has a position");
                let raw = floors.raw.get_or_insert(RawFloor {
                    position,
                    axis: floor.axis,
                });
                raw.position = raw.position.max(position);
                raw.axis = raw.axis.max(floor.axis);
            }
            Tier::Level(k) => {
                let axis = floor.axis.expect("validated: a level floor has an axis");
                let level = floors.levels.entry(k).or_insert(axis);
                *level = (*level).max(axis);
            }
        }
    }

    fn commit_retire(&mut self, r: &Retirement) {
        let stream = self
            .streams
            .get_mut(&r.stream)
            .expect("validated: stream declared");
        let track = stream
            .tracks
            .get_mut(&r.track)
            .expect("validated: track has live tiers");
        let segment = *track
            .segments
            .get(&r.file)
            .expect("validated: the file holds a live tier of the track");
        let lo = segment.ordinal_lo;
        let removed = match r.tier {
            Tier::Raw => track.raw.remove(&lo),
            Tier::Level(k) => track
                .levels
                .get_mut(usize::from(k))
                .and_then(|m| m.remove(&lo)),
        };
        assert_eq!(
            removed,
            Some(r.file),
            "validated: the retired tier was live"
        );
        while track.levels.last().is_some_and(BTreeMap::is_empty) {
            track.levels.pop();
        }
        let still_live = std::iter::once(&track.raw)
            .chain(&track.levels)
            .any(|m| m.get(&lo) == Some(&r.file));
        if !still_live {
            track.segments.remove(&r.file);
        }
        if track.is_empty() {
            stream.tracks.remove(&r.track);
        }
        let file = self.files.get_mut(&r.file).expect("validated: file added");
        file.live_tiers -= 1;
        if file.live_tiers == 0 {
            self.retired_files.insert(r.file);
        }
    }

    // ---- queries ----

    /// Every declared stream, by id.
    pub fn streams(&self) -> impl Iterator<Item = &StreamDecl> {
        self.streams.values().map(|s| &s.decl)
    }

    /// The declaration of stream `id`.
    pub fn stream(&self, id: &str) -> Option<&StreamDecl> {
        self.streams.get(id).map(|s| &s.decl)
    }

    /// The position through which stream `id` is durable; `None` if nothing is yet.
    pub fn watermark(&self, id: &str) -> Option<u64> {
        self.streams.get(id).and_then(|s| s.watermark)
    }

    /// The ordinal the next row of stream `id` gets: one above the highest ever added, 0 at
    /// first (and for an undeclared stream).
    pub fn next_ordinal(&self, id: &str) -> u64 {
        self.streams.get(id).map_or(0, |s| s.next_ordinal)
    }

    /// The highest position ever added for stream `id`, retired or not.
    pub fn last_position(&self, id: &str) -> Option<u64> {
        self.streams.get(id).and_then(|s| s.last_position)
    }

    /// The fence of stream `id`: positions at or below it are never assigned to rows again.
    /// `None` unless an operator's repair cut acknowledged records.
    pub fn fence(&self, id: &str) -> Option<u64> {
        self.fences.get(id).copied()
    }

    /// The floors of partition `track` of stream `id`, if any `Floor` record raised one.
    pub fn floors_of(&self, id: &str, track: &TrackKey) -> Option<&TrackFloors> {
        self.floors.get(id)?.get(track)
    }

    /// Every partition of stream `id` beneath `prefix` with a recorded floor, retired whole or
    /// not, in track-key order: what an unnarrowed read takes the highest of. A range scan.
    pub fn floors<'a>(
        &'a self,
        id: &str,
        prefix: &TrackKey,
    ) -> impl DoubleEndedIterator<Item = (&'a TrackKey, &'a TrackFloors)> + use<'a> {
        let bounds = prefix.range();
        self.floors
            .get(id)
            .into_iter()
            .flat_map(move |tracks| tracks.range(bounds.clone()))
    }

    /// The axis range covered by the live partitions of stream `id` beneath `prefix`: those with
    /// any tier (raw or level) not retired. `None` if there are none or the stream has no axis.
    pub fn axis_range(&self, id: &str, prefix: &TrackKey) -> Option<[u64; 2]> {
        let mut range: Option<[u64; 2]> = None;
        for partition in self.partitions(id, prefix) {
            for (&name, segment) in &partition.state.segments {
                let Some([lo, hi]) = partition.entry(name, segment.idx).axis else {
                    continue;
                };
                range = Some(match range {
                    None => [lo, hi],
                    Some([min, max]) => [min.min(lo), max.max(hi)],
                });
            }
        }
        range
    }

    /// The partitions of stream `id` beneath `prefix` that have a live tier, in track-key order.
    ///
    /// A range scan over the stream's tracks, not a filter.
    pub fn partitions<'a>(
        &'a self,
        id: &str,
        prefix: &TrackKey,
    ) -> impl DoubleEndedIterator<Item = PartitionView<'a>> + use<'a> {
        let bounds = prefix.range();
        let files = &self.files;
        self.streams.get(id).into_iter().flat_map(move |stream| {
            stream
                .tracks
                .range(bounds.clone())
                .map(|(track, state)| PartitionView {
                    files,
                    track,
                    state,
                })
        })
    }

    /// The entry of file `name`, live, or wholly retired since this catalog was built (a
    /// snapshot does not list the files it found wholly retired).
    pub fn file(&self, name: FileName) -> Option<&FileEntry> {
        self.files.get(&name).map(|f| &f.entry)
    }

    /// The files with at least one tier not retired, by name.
    pub fn live_files(&self) -> impl Iterator<Item = &FileEntry> {
        self.files
            .values()
            .filter(|f| f.live_tiers > 0)
            .map(|f| &f.entry)
    }

    /// The files with at least one tier not retired named above `after` (all of them for
    /// `None`), by name: what a follower of the catalog has not seen yet, names only rising.
    pub fn live_files_after(&self, after: Option<FileName>) -> impl Iterator<Item = &FileEntry> {
        let from = after.map_or(std::ops::Bound::Unbounded, std::ops::Bound::Excluded);
        self.files
            .range((from, std::ops::Bound::Unbounded))
            .map(|(_, f)| f)
            .filter(|f| f.live_tiers > 0)
            .map(|f| &f.entry)
    }

    /// Whether file `name` was added and every tier of it is now retired (since this catalog
    /// was built: see [`Catalog::file`]).
    pub fn is_retired(&self, name: FileName) -> bool {
        self.retired_files.contains(&name)
    }

    /// Live files some tier of which is retired, by name.
    pub fn partly_retired_files(&self) -> impl Iterator<Item = FileName> {
        self.files.iter().filter_map(|(&name, file)| {
            let tiers: u64 = file
                .entry
                .partitions
                .iter()
                .map(|p| 1 + u64::from(p.n_levels))
                .sum();
            (file.live_tiers != 0 && file.live_tiers != tiers).then_some(name)
        })
    }

    /// The files whose every tier was retired since this catalog was built, by name: boot may
    /// delete them.
    pub fn retired_files(&self) -> impl Iterator<Item = FileName> {
        self.retired_files.iter().copied()
    }

    /// The highest name ever issued: the max of every `NameHigh` and every added file name.
    pub fn name_high(&self) -> FileName {
        self.name_high
    }

    /// The name after every name the records claim or reserve (`name_high + 1`).
    ///
    /// Only what the manifest says: a file a crash left unclaimed (in `tmp/`, unrecorded in
    /// `seg/`, or moved to quarantine by boot) may carry this name or a higher one. The store
    /// issues from the counter boot sets above both (`Booted::next_name` in strata-recover),
    /// never from this alone.
    pub fn next_name(&self) -> FileName {
        // apply refuses u64::MAX as a name, so this cannot overflow.
        self.name_high + 1
    }

    /// A record that, applied to an empty catalog, rebuilds this one's live state: everything
    /// a read, a barrier, a compaction or boot asks of it, without the files wholly retired.
    ///
    /// Declarations first; then per stream what was ever assigned (`Assigned`); then every file
    /// with a live tier, in name order, each as a `Claim` followed by the retirements of its
    /// tiers that are not live; then the counts of every file ever added (`History`), the
    /// watermarks, the fences and the highest name. Applied to an empty catalog it rebuilds one
    /// whose snapshot is this one, so rewriting a manifest twice changes nothing.
    ///
    /// A file wholly retired is not listed, so boot no longer knows it was retired: the caller
    /// writes a snapshot only once every such file is removed from the disk, or else boot
    /// quarantines what is left of it as unclaimed (kept, never deleted).
    pub fn snapshot(&self) -> Record {
        self.snapshot_with(&self.lineage)
    }

    /// The [`Catalog::snapshot`] a rewrite writes into the generation after `replaced`: its
    /// lineage is this catalog's followed by every state of `manifest` (generation `replaced`'s
    /// trusted bytes, or a repair's kept prefix of them), the newest `states_max` kept.
    pub fn snapshot_after(&self, replaced: u32, manifest: &[u8], states_max: usize) -> Record {
        self.snapshot_with(&self.lineage.extended(replaced, manifest, states_max))
    }

    /// The manifest states of the generations before this catalog's (the last `Lineage` entry
    /// applied; empty for a store never rewritten).
    pub fn lineage(&self) -> &Lineage {
        &self.lineage
    }

    fn snapshot_with(&self, lineage: &Lineage) -> Record {
        let mut entries: Vec<Entry> = self.streams().cloned().map(Entry::Declare).collect();
        for state in self.streams.values() {
            if let Some(last_position) = state.last_position {
                entries.push(Entry::Assigned {
                    stream: state.decl.id.clone(),
                    next_ordinal: state.next_ordinal,
                    last_position,
                });
            }
        }
        for (stream, tracks) in &self.floors {
            for (track, floors) in tracks {
                let floor = |tier, position, axis| {
                    Entry::Floor(Floor {
                        stream: stream.clone(),
                        track: track.clone(),
                        tier,
                        position,
                        axis,
                    })
                };
                if let Some(raw) = floors.raw {
                    entries.push(floor(Tier::Raw, Some(raw.position), raw.axis));
                }
                for (&k, &axis) in &floors.levels {
                    entries.push(floor(Tier::Level(k), None, Some(axis)));
                }
            }
        }
        for (&name, file) in self.files.iter().filter(|(_, f)| f.live_tiers > 0) {
            entries.push(Entry::Claim(file.entry.clone()));
            for part in &file.entry.partitions {
                for tier in tiers(part.n_levels) {
                    if !self.is_live(name, part, tier) {
                        entries.push(Entry::Retire(Retirement {
                            file: name,
                            stream: part.stream.clone(),
                            track: part.track.clone(),
                            tier,
                        }));
                    }
                }
            }
        }
        if let Some(max_added) = self.max_added {
            entries.push(Entry::History(History {
                max_added,
                ..self.history
            }));
        }
        for state in self.streams.values() {
            if let Some(position) = state.watermark {
                entries.push(Entry::Watermark {
                    stream: state.decl.id.clone(),
                    position,
                });
            }
        }
        for (stream, &position) in &self.fences {
            entries.push(Entry::Fence {
                stream: stream.clone(),
                position,
            });
        }
        if self.name_high > 0 {
            entries.push(Entry::NameHigh(self.name_high));
        }
        if !lineage.is_empty() {
            entries.push(Entry::Lineage(lineage.clone()));
        }
        Record { entries }
    }

    fn is_live(&self, name: FileName, part: &PartitionEntry, tier: Tier) -> bool {
        self.track_state(&part.stream, &part.track)
            .and_then(|t| t.live(name, tier))
            .is_some()
    }

    fn track_state(&self, stream: &str, track: &TrackKey) -> Option<&TrackState> {
        self.streams.get(stream)?.tracks.get(track)
    }

    /// The live partition index of (file, stream, track, tier), if that tier is live.
    fn live_idx(&self, r: &Retirement) -> Option<usize> {
        self.track_state(&r.stream, &r.track)?.live(r.file, r.tier)
    }

    /// The entry of the partition that file `name` holds at `idx`.
    fn partition_at(&self, name: FileName, idx: usize) -> &PartitionEntry {
        self.files
            .get(&name)
            .and_then(|f| f.entry.partitions.get(idx))
            .expect("an indexed segment's file is listed and holds it")
    }
}

/// One track of a stream, with its live segments per tier.
#[derive(Clone, Copy)]
pub struct PartitionView<'a> {
    files: &'a BTreeMap<FileName, FileState>,
    track: &'a TrackKey,
    state: &'a TrackState,
}

impl<'a> PartitionView<'a> {
    /// The partition's track key.
    pub fn track(&self) -> &'a TrackKey {
        self.track
    }

    /// The live segments holding `tier` of this partition, oldest rows first (by lowest
    /// ordinal; live segments of a partition never overlap in ordinals). That is file-name
    /// order too, except that a compaction output comes where the rows it replaced came.
    ///
    /// # Panics
    /// Only if the catalog's own index is broken (a bug): every indexed segment is listed.
    pub fn segments(
        &self,
        tier: Tier,
    ) -> impl DoubleEndedIterator<Item = (FileName, &'a PartitionEntry)> + use<'a> {
        let view = *self;
        self.state.tier(tier).into_iter().flat_map(move |segments| {
            segments.values().map(move |&name| {
                let idx = view
                    .state
                    .segments
                    .get(&name)
                    .expect("a tier's segment is listed in its track")
                    .idx;
                (name, view.entry(name, idx))
            })
        })
    }

    /// Whether `tier` of this partition's segment in file `name` is live.
    pub fn is_live(&self, name: FileName, tier: Tier) -> bool {
        self.state.live(name, tier).is_some()
    }

    /// The index of this partition among the partitions of file `name` (its manifest entry's,
    /// which is the file directory's order), if the file holds a live tier of it: what a read
    /// hands the file's reader instead of searching the file for the track.
    pub fn part_idx(&self, name: FileName) -> Option<usize> {
        self.state.segments.get(&name).map(|s| s.idx)
    }

    /// Every segment with any live tier of this partition, oldest rows first (by lowest
    /// ordinal), each with whether it is whole: every tier it stores still live. Only whole
    /// segments can be merged, and a merge may not reach across one that is not.
    pub fn live_segments(&self) -> Vec<(FileName, &'a PartitionEntry, bool)> {
        let mut segments: Vec<(u64, FileName, usize)> = self
            .state
            .segments
            .iter()
            .map(|(&name, s)| (s.ordinal_lo, name, s.idx))
            .collect();
        segments.sort_unstable();
        segments
            .into_iter()
            .map(|(_, name, idx)| {
                let entry = self.entry(name, idx);
                let whole = tiers(entry.n_levels).all(|t| self.state.live(name, t).is_some());
                (name, entry, whole)
            })
            .collect()
    }

    fn entry(&self, name: FileName, idx: usize) -> &'a PartitionEntry {
        let file = self
            .files
            .get(&name)
            .expect("an indexed segment's file is listed");
        file.entry
            .partitions
            .get(idx)
            .expect("an indexed partition is in its file")
    }
}

impl fmt::Debug for PartitionView<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PartitionView")
            .field("track", self.track)
            .field("raw", &self.state.raw.values().collect::<Vec<_>>())
            .field("n_levels", &self.state.levels.len())
            .finish()
    }
}

/// The effects of a record's earlier entries, over the catalog, while the record is validated.
struct Pending<'a> {
    catalog: &'a Catalog,
    declared: BTreeMap<&'a str, &'a StreamDecl>,
    max_added: Option<FileName>,
    next_ordinal: BTreeMap<&'a str, u64>,
    /// Per stream, the last position as raised by this record's `Assigned` entries.
    last_position: BTreeMap<&'a str, u64>,
    /// Files added by this record, with their partitions by (stream, track).
    added: BTreeMap<FileName, AddedFile<'a>>,
    /// Tiers retired by this record: (file, partition index, tier).
    retired: BTreeSet<(FileName, usize, Tier)>,
    watermarks: BTreeMap<&'a str, u64>,
}

/// A file's partitions by (stream, track).
type ByTrack<'a> = BTreeMap<(&'a str, &'a TrackKey), usize>;

struct AddedFile<'a> {
    entry: &'a FileEntry,
    by_track: ByTrack<'a>,
}

/// Per stream, what one file holds of it.
struct OrdinalSpan {
    lo: u64,
    hi: u64,
    n_rows: u128,
}

impl<'a> Pending<'a> {
    fn new(catalog: &'a Catalog) -> Self {
        Self {
            catalog,
            declared: BTreeMap::new(),
            max_added: catalog.max_added,
            next_ordinal: BTreeMap::new(),
            last_position: BTreeMap::new(),
            added: BTreeMap::new(),
            retired: BTreeSet::new(),
            watermarks: BTreeMap::new(),
        }
    }

    fn decl(&self, id: &str) -> Option<&'a StreamDecl> {
        self.declared
            .get(id)
            .copied()
            .or_else(|| self.catalog.stream(id))
    }

    fn check(&mut self, entry: &'a Entry) -> Result<(), ApplyReason> {
        match entry {
            Entry::Declare(decl) => self.check_declare(decl),
            Entry::AddFile(file) => self.check_add(file),
            Entry::Merge { file, inputs } => self.check_merge(file, inputs),
            Entry::Claim(file) => self.check_claim(file),
            Entry::Assigned {
                stream,
                next_ordinal,
                last_position,
            } => self.check_assigned(stream, *next_ordinal, *last_position),
            Entry::History(history) => {
                self.max_added = self.max_added.max(Some(history.max_added));
                Ok(())
            }
            Entry::Floor(floor) => self.check_floor(floor),
            Entry::Retire(retirement) => self.check_retire(retirement),
            Entry::Watermark { stream, position } => self.check_watermark(stream, *position),
            Entry::NameHigh(name) => {
                if *name == FileName::MAX {
                    return Err(ApplyReason::NameReserved { name: *name });
                }
                Ok(())
            }
            // A fence may name a stream not declared (any more): a repair that cut the frame
            // declaring it must still keep its acknowledged positions from being reused.
            Entry::Fence { stream, .. } => {
                validate_label(stream)
                    .map(drop)
                    .map_err(|error| ApplyReason::InvalidDecl {
                        stream: stream.clone(),
                        error: DeclError::Id { error },
                    })
            }
            // A lineage was checked whole when it was decoded (`Lineage::from_runs`); where a
            // preamble may stand is the manifest's rule (`parse_log`), not the catalog's.
            Entry::Lineage(_) | Entry::Preamble(_) => Ok(()),
        }
    }

    fn check_declare(&mut self, decl: &'a StreamDecl) -> Result<(), ApplyReason> {
        decl.validate().map_err(|error| ApplyReason::InvalidDecl {
            stream: decl.id.clone(),
            error,
        })?;
        match self.decl(&decl.id) {
            Some(existing) if existing == decl => Ok(()),
            Some(_) => Err(ApplyReason::DeclConflict {
                stream: decl.id.clone(),
            }),
            None => {
                self.declared.insert(&decl.id, decl);
                Ok(())
            }
        }
    }

    /// The rules every claimed file meets, `AddFile` or `Merge`: its name, and each partition
    /// on its own. Answers the file's partitions by (stream, track).
    fn check_file(&self, file: &'a FileEntry) -> Result<ByTrack<'a>, ApplyReason> {
        let name = file.name;
        if name == FileName::MAX {
            return Err(ApplyReason::NameReserved { name });
        }
        if let Some(max_added) = self.max_added.filter(|&max| name <= max) {
            return Err(ApplyReason::NameNotIncreasing { name, max_added });
        }
        if file.partitions.is_empty() {
            return Err(ApplyReason::EmptyFile { name });
        }
        let mut by_track: ByTrack<'a> = BTreeMap::new();
        for (partition_idx, part) in file.partitions.iter().enumerate() {
            let Some(decl) = self.decl(&part.stream) else {
                return Err(ApplyReason::UnknownStream {
                    stream: part.stream.clone(),
                    partition_idx: Some(partition_idx),
                });
            };
            check_partition(partition_idx, part, decl, file.len)?;
            if let Some(&first_idx) = by_track.get(&(part.stream.as_str(), &part.track)) {
                return Err(ApplyReason::DuplicatePartition {
                    partition_idx,
                    first_idx,
                    stream: part.stream.clone(),
                    track: part.track.clone(),
                });
            }
            by_track.insert((&part.stream, &part.track), partition_idx);
        }
        Ok(by_track)
    }

    fn check_add(&mut self, file: &'a FileEntry) -> Result<(), ApplyReason> {
        let by_track = self.check_file(file)?;
        let mut spans: BTreeMap<&'a str, OrdinalSpan> = BTreeMap::new();
        for part in &file.partitions {
            let [lo, hi] = part.ordinals;
            let span = spans
                .entry(&part.stream)
                .or_insert(OrdinalSpan { lo, hi, n_rows: 0 });
            span.lo = span.lo.min(lo);
            span.hi = span.hi.max(hi);
            span.n_rows += u128::from(part.n_rows);
        }
        for (stream, span) in spans {
            let expected = self.next_ordinal(stream);
            if span.lo != expected {
                return Err(ApplyReason::OrdinalStart {
                    stream: stream.to_owned(),
                    expected,
                    got: span.lo,
                });
            }
            let width = u128::from(span.hi) - u128::from(span.lo) + 1;
            if span.n_rows != width {
                return Err(ApplyReason::OrdinalDensity {
                    stream: stream.to_owned(),
                    n_rows: span.n_rows,
                    span: width,
                });
            }
            let Some(next) = span.hi.checked_add(1) else {
                return Err(ApplyReason::OrdinalExhausted {
                    stream: stream.to_owned(),
                });
            };
            self.next_ordinal.insert(stream, next);
        }
        self.note_added(file, by_track);
        Ok(())
    }

    fn check_merge(&mut self, file: &'a FileEntry, inputs: &[FileName]) -> Result<(), ApplyReason> {
        let by_track = self.check_file(file)?;
        if inputs.is_empty() || inputs.windows(2).any(|w| w[0] >= w[1]) {
            return Err(ApplyReason::MergeInputs {
                file: file.name,
                inputs: inputs.to_vec(),
            });
        }
        let mut replaced: Vec<(FileName, usize, u8)> = Vec::new();
        for (partition_idx, part) in file.partitions.iter().enumerate() {
            let mut sources: Vec<(FileName, &'a PartitionEntry)> = Vec::new();
            for &input in inputs {
                let (idx, source) = self.whole_input(file.name, partition_idx, part, input)?;
                sources.push((input, source));
                replaced.push((input, idx, source.n_levels));
            }
            check_cover(file.name, partition_idx, part, &mut sources)?;
            self.live_overlap(part, inputs)
                .map_err(|live| ApplyReason::MergeOverlapsLive {
                    file: file.name,
                    partition_idx,
                    live,
                })?;
        }
        for (input, idx, n_levels) in replaced {
            for tier in tiers(n_levels) {
                let fresh = self.retired.insert((input, idx, tier));
                assert!(fresh, "whole_input checked the tier was live");
            }
        }
        self.note_added(file, by_track);
        Ok(())
    }

    /// The partition of `input` that output partition `part` replaces, with its index, if
    /// every tier of it is live before this entry.
    fn whole_input(
        &self,
        file: FileName,
        partition_idx: usize,
        part: &PartitionEntry,
        input: FileName,
    ) -> Result<(usize, &'a PartitionEntry), ApplyReason> {
        let lacks = ApplyReason::MergeInputLacks {
            file,
            input,
            partition_idx,
        };
        let not_whole = |tier| ApplyReason::MergeInputNotWhole {
            file,
            input,
            partition_idx,
            tier,
        };
        let key = (part.stream.as_str(), &part.track);
        let (idx, source, track) = if let Some(added) = self.added.get(&input) {
            let idx = *added.by_track.get(&key).ok_or(lacks)?;
            (idx, &added.entry.partitions[idx], None)
        } else {
            let Some(state) = self.catalog.files.get(&input) else {
                return Err(ApplyReason::UnknownFile { file: input });
            };
            if state.live_tiers == 0 {
                return Err(ApplyReason::FileRetired { file: input });
            }
            let track = self.catalog.track_state(&part.stream, &part.track);
            let Some(segment) = track.and_then(|t| t.segments.get(&input)) else {
                // Nothing of it is live: find out why (error path only).
                let holds = state
                    .entry
                    .partitions
                    .iter()
                    .any(|p| p.stream == part.stream && p.track == part.track);
                return Err(if holds { not_whole(Tier::Raw) } else { lacks });
            };
            let idx = segment.idx;
            (idx, &state.entry.partitions[idx], track)
        };
        for tier in tiers(source.n_levels) {
            let live_in_catalog = track.is_none_or(|t| t.live(input, tier).is_some());
            if !live_in_catalog || self.retired.contains(&(input, idx, tier)) {
                return Err(not_whole(tier));
            }
        }
        Ok((idx, source))
    }

    /// No live segment of the partition except those in `replaced` (in the catalog, or added
    /// earlier in this record) holds ordinals inside `part`'s range; `Err` names one that does.
    fn live_overlap(&self, part: &PartitionEntry, replaced: &[FileName]) -> Result<(), FileName> {
        let [lo, hi] = part.ordinals;
        if let Some(track) = self.catalog.track_state(&part.stream, &part.track) {
            for tier_map in std::iter::once(&track.raw).chain(&track.levels) {
                // Live segments are disjoint, so walking down from the last one starting at
                // or below `hi` meets every overlapping one before the first that ends below
                // `lo`.
                for (_, &name) in tier_map.range(..=hi).rev() {
                    let segment = track
                        .segments
                        .get(&name)
                        .expect("a tier's segment is listed");
                    let entry = self.catalog.partition_at(name, segment.idx);
                    if entry.ordinals[1] < lo {
                        break;
                    }
                    let still_live = tiers(entry.n_levels).any(|tier| {
                        track.live(name, tier).is_some()
                            && !self.retired.contains(&(name, segment.idx, tier))
                    });
                    if !replaced.contains(&name) && still_live {
                        return Err(name);
                    }
                }
            }
        }
        for (&name, added) in &self.added {
            let Some(&idx) = added.by_track.get(&(part.stream.as_str(), &part.track)) else {
                continue;
            };
            let entry = &added.entry.partitions[idx];
            let disjoint = entry.ordinals[1] < lo || entry.ordinals[0] > hi;
            let still_live =
                tiers(entry.n_levels).any(|tier| !self.retired.contains(&(name, idx, tier)));
            if !disjoint && !replaced.contains(&name) && still_live {
                return Err(name);
            }
        }
        Ok(())
    }

    fn check_floor(&self, floor: &Floor) -> Result<(), ApplyReason> {
        let Some(decl) = self.decl(&floor.stream) else {
            return Err(ApplyReason::UnknownStream {
                stream: floor.stream.clone(),
                partition_idx: None,
            });
        };
        let invalid = |what: String| ApplyReason::InvalidFloor {
            stream: floor.stream.clone(),
            track: floor.track.clone(),
            what,
        };
        let depth = floor.track.depth();
        if depth != decl.track.len() {
            return Err(invalid(format!(
                "the track has {depth} components, the stream declares {}",
                decl.track.len()
            )));
        }
        if floor.axis.is_some() != decl.axis.is_some() {
            return Err(invalid(if floor.axis.is_some() {
                "an axis value, but the stream declares no axis".to_owned()
            } else {
                "no axis value, but the stream declares an axis".to_owned()
            }));
        }
        match (floor.tier, floor.position) {
            (Tier::Raw, None) => Err(invalid("a raw floor without a position".to_owned())),
            (Tier::Level(k), Some(_)) => Err(invalid(format!(
                "a floor of level {k} with a position (levels have none)"
            ))),
            (Tier::Raw, Some(position)) => {
                // The lowest position still held may be one past everything assigned (all
                // retired), never beyond: that would retire rows not yet published.
                let bound = self
                    .last_position(&floor.stream)
                    .map_or(0, |last| last.saturating_add(1));
                if position > bound {
                    return Err(invalid(format!(
                        "position {position} is beyond every position the stream was assigned \
                         (the highest a floor may be is {bound})"
                    )));
                }
                Ok(())
            }
            (Tier::Level(_), None) => Ok(()),
        }
    }

    fn check_assigned(
        &mut self,
        stream: &'a str,
        next_ordinal: u64,
        last_position: u64,
    ) -> Result<(), ApplyReason> {
        if self.decl(stream).is_none() {
            return Err(ApplyReason::UnknownStream {
                stream: stream.to_owned(),
                partition_idx: None,
            });
        }
        let next = self.next_ordinal(stream).max(next_ordinal);
        self.next_ordinal.insert(stream, next);
        let last = self.last_position(stream).max(Some(last_position));
        self.last_position
            .insert(stream, last.unwrap_or(last_position));
        Ok(())
    }

    /// A `Claim`: the `AddFile` rules on its name and each partition alone; each partition's
    /// ordinals and positions were assigned before (by an `Assigned` or by files added); and no
    /// live segment overlaps its ordinals.
    fn check_claim(&mut self, file: &'a FileEntry) -> Result<(), ApplyReason> {
        let by_track = self.check_file(file)?;
        for (partition_idx, part) in file.partitions.iter().enumerate() {
            let beyond = |what, got, assigned| ApplyReason::ClaimBeyondAssigned {
                file: file.name,
                partition_idx,
                what,
                got,
                assigned,
            };
            let next = self.next_ordinal(&part.stream);
            if part.ordinals[1] >= next {
                return Err(beyond("ordinal", part.ordinals[1], next.checked_sub(1)));
            }
            let last = self.last_position(&part.stream);
            if last.is_none_or(|last| part.positions[1] > last) {
                return Err(beyond("position", part.positions[1], last));
            }
            self.live_overlap(part, &[])
                .map_err(|live| ApplyReason::ClaimOverlapsLive {
                    file: file.name,
                    partition_idx,
                    live,
                })?;
        }
        self.note_added(file, by_track);
        Ok(())
    }

    /// A file this record adds (`AddFile`, `Merge` or `Claim`), once its rules hold.
    fn note_added(&mut self, file: &'a FileEntry, by_track: ByTrack<'a>) {
        self.max_added = Some(file.name);
        self.added.insert(
            file.name,
            AddedFile {
                entry: file,
                by_track,
            },
        );
    }

    fn last_position(&self, stream: &str) -> Option<u64> {
        self.last_position
            .get(stream)
            .copied()
            .or_else(|| self.catalog.last_position(stream))
    }

    fn next_ordinal(&self, stream: &str) -> u64 {
        self.next_ordinal
            .get(stream)
            .copied()
            .unwrap_or_else(|| self.catalog.next_ordinal(stream))
    }

    fn check_retire(&mut self, r: &Retirement) -> Result<(), ApplyReason> {
        let idx = self.locate(r)?;
        if !self.retired.insert((r.file, idx, r.tier)) {
            return Err(tier_retired(r));
        }
        Ok(())
    }

    /// The partition index of the tier `r` names, if it exists and was live before this record.
    fn locate(&self, r: &Retirement) -> Result<usize, ApplyReason> {
        if let Some(added) = self.added.get(&r.file) {
            let Some(&idx) = added.by_track.get(&(r.stream.as_str(), &r.track)) else {
                return Err(no_partition(r));
            };
            let part = added
                .entry
                .partitions
                .get(idx)
                .expect("by_track indexes this file");
            return check_tier_exists(r, part).map(|()| idx);
        }
        let Some(file) = self.catalog.files.get(&r.file) else {
            return Err(ApplyReason::UnknownFile { file: r.file });
        };
        if file.live_tiers == 0 {
            return Err(ApplyReason::FileRetired { file: r.file });
        }
        if let Some(idx) = self.catalog.live_idx(r) {
            return Ok(idx);
        }
        // Not live: a linear look through the file finds out why (error path only).
        let Some(part) = file
            .entry
            .partitions
            .iter()
            .find(|p| p.stream == r.stream && p.track == r.track)
        else {
            return Err(no_partition(r));
        };
        check_tier_exists(r, part)?;
        Err(tier_retired(r))
    }

    fn check_watermark(&mut self, stream: &'a str, position: u64) -> Result<(), ApplyReason> {
        if self.decl(stream).is_none() {
            return Err(ApplyReason::UnknownStream {
                stream: stream.to_owned(),
                partition_idx: None,
            });
        }
        let current = self
            .watermarks
            .get(stream)
            .copied()
            .or_else(|| self.catalog.watermark(stream));
        if let Some(current) = current.filter(|&current| position < current) {
            return Err(ApplyReason::WatermarkBackwards {
                stream: stream.to_owned(),
                current,
                position,
            });
        }
        self.watermarks.insert(stream, position);
        Ok(())
    }
}

fn check_partition(
    partition_idx: usize,
    part: &PartitionEntry,
    decl: &StreamDecl,
    file_len: u64,
) -> Result<(), ApplyReason> {
    let depth = part.track.depth();
    if depth != decl.track.len() {
        return Err(ApplyReason::TrackDepth {
            partition_idx,
            depth,
            declared: decl.track.len(),
        });
    }
    if part.axis.is_some() != decl.axis.is_some() {
        return Err(ApplyReason::AxisPresence {
            partition_idx,
            declared: decl.axis.is_some(),
        });
    }
    let ranges = [
        ("positions", Some(part.positions)),
        ("ordinals", Some(part.ordinals)),
    ];
    for (what, range) in ranges.into_iter().chain([("axis", part.axis)]) {
        if let Some([lo, hi]) = range.filter(|[lo, hi]| lo > hi) {
            return Err(ApplyReason::InvertedRange {
                partition_idx,
                what,
                lo,
                hi,
            });
        }
    }
    // Rows of one partition interleave with other partitions' rows in ordinal order, so a
    // partition holds at most, not exactly, as many rows as its ordinal range spans.
    let [lo, hi] = part.ordinals;
    if part.n_rows == 0 || part.n_rows - 1 > hi - lo {
        return Err(ApplyReason::RowCount {
            partition_idx,
            n_rows: part.n_rows,
            ordinals: part.ordinals,
        });
    }
    if part
        .offset
        .checked_add(part.len)
        .is_none_or(|end| end > file_len)
    {
        return Err(ApplyReason::Extent {
            partition_idx,
            offset: part.offset,
            len: part.len,
            file_len,
        });
    }
    Ok(())
}

/// The output partition `part` holds exactly the rows of `sources` (its inputs' partitions):
/// row count, ordinals, positions and axis add up. The sources are live segments of one track,
/// which never overlap in ordinals, so in ordinal order they follow each other.
fn check_cover(
    file: FileName,
    partition_idx: usize,
    part: &PartitionEntry,
    sources: &mut [(FileName, &PartitionEntry)],
) -> Result<(), ApplyReason> {
    sources.sort_by_key(|(_, source)| source.ordinals[0]);
    for pair in sources.windows(2) {
        assert!(
            pair[0].1.ordinals[1] < pair[1].1.ordinals[0],
            "live segments of a track never overlap in ordinals"
        );
    }
    let (Some((_, oldest)), Some((_, newest))) = (sources.first(), sources.last()) else {
        unreachable!("a merge has at least one input")
    };
    let n_rows: u128 = sources.iter().map(|(_, s)| u128::from(s.n_rows)).sum();
    let n_rows = u64::try_from(n_rows).unwrap_or(u64::MAX);
    let span = |range: fn(&PartitionEntry) -> Option<[u64; 2]>| {
        sources
            .iter()
            .try_fold(None, |acc: Option<[u64; 2]>, (_, s)| {
                let [lo, hi] = range(s)?;
                Some(Some(
                    acc.map_or([lo, hi], |[min, max]| [min.min(lo), max.max(hi)]),
                ))
            })?
    };
    let checks = [
        (
            "n_rows",
            Some([n_rows, n_rows]),
            Some([part.n_rows, part.n_rows]),
        ),
        (
            "ordinals",
            Some([oldest.ordinals[0], newest.ordinals[1]]),
            Some(part.ordinals),
        ),
        (
            "positions",
            span(|s| Some(s.positions)),
            Some(part.positions),
        ),
        ("axis", span(|s| s.axis), part.axis),
    ];
    for (what, expected, got) in checks {
        if expected != got {
            return Err(ApplyReason::MergeCover {
                file,
                partition_idx,
                what,
                expected,
                got,
            });
        }
    }
    Ok(())
}

fn check_tier_exists(r: &Retirement, part: &PartitionEntry) -> Result<(), ApplyReason> {
    match r.tier {
        Tier::Level(k) if k >= part.n_levels => Err(ApplyReason::NoTier {
            file: r.file,
            stream: r.stream.clone(),
            track: r.track.clone(),
            tier: r.tier,
            n_levels: part.n_levels,
        }),
        _ => Ok(()),
    }
}

fn no_partition(r: &Retirement) -> ApplyReason {
    ApplyReason::NoPartition {
        file: r.file,
        stream: r.stream.clone(),
        track: r.track.clone(),
    }
}

fn tier_retired(r: &Retirement) -> ApplyReason {
    ApplyReason::TierRetired {
        file: r.file,
        stream: r.stream.clone(),
        track: r.track.clone(),
        tier: r.tier,
    }
}

#[cfg(test)]
mod tests;
