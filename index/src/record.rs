//! The manifest record schema: what one manifest frame says.
//!
//! A [`Record`] is one barrier: everything it lists becomes true together or not at all. The
//! types here are plain data; [`crate::codec`] gives them bytes and [`crate::catalog`] gives them
//! meaning.

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;

use crate::key::{TRACK_DEPTH_MAX, TrackKey};
use crate::label::{LabelError, validate_label};
use crate::lineage::{Lineage, ManifestState};

/// Segment files are named by number.
pub type FileName = u64;

/// The most fields a stream may declare.
pub const FIELDS_MAX: usize = 256;

/// The type of a declared field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[non_exhaustive]
pub enum FieldKind {
    /// Unsigned 64-bit integer (on-disk code 1).
    U64,
    /// Signed 64-bit integer (code 2).
    I64,
    /// 64-bit float (code 3).
    F64,
    /// UTF-8 text (code 4).
    Str,
    /// Opaque bytes (code 5).
    Bytes,
}

impl FieldKind {
    /// The on-disk code, 1..=5.
    pub fn code(self) -> u8 {
        match self {
            Self::U64 => 1,
            Self::I64 => 2,
            Self::F64 => 3,
            Self::Str => 4,
            Self::Bytes => 5,
        }
    }

    /// The kind for an on-disk code; `None` for anything outside 1..=5.
    pub fn from_code(code: u8) -> Option<FieldKind> {
        match code {
            1 => Some(Self::U64),
            2 => Some(Self::I64),
            3 => Some(Self::F64),
            4 => Some(Self::Str),
            5 => Some(Self::Bytes),
            _ => None,
        }
    }

    /// Whether values of this kind are numbers (and so may be measured).
    pub fn is_numeric(self) -> bool {
        matches!(self, Self::U64 | Self::I64 | Self::F64)
    }

    /// The kind with its article, as a message reads it aloud: `a u64`, `an i64`, `an f64`,
    /// `a str`, `a bytes`. Every message that says what kind a value is or is not uses this, so
    /// the engine and the command line word it alike.
    pub fn with_article(self) -> &'static str {
        match self {
            Self::U64 => "a u64",
            Self::I64 => "an i64",
            Self::F64 => "an f64",
            Self::Str => "a str",
            Self::Bytes => "a bytes",
        }
    }
}

impl fmt::Display for FieldKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::U64 => "u64",
            Self::I64 => "i64",
            Self::F64 => "f64",
            Self::Str => "str",
            Self::Bytes => "bytes",
        })
    }
}

/// One declared field.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FieldDecl {
    /// The field's name, a label unique within its stream.
    pub name: String,
    /// The field's type.
    pub kind: FieldKind,
}

/// The level ladder's grid: level `k` has cells `base * fanout^k` wide, anchored at axis 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct LadderSpec {
    /// Width of a level-0 cell, >= 1.
    pub base: u64,
    /// How many cells of level `k` make one of level `k + 1`, >= 2.
    pub fanout: u64,
}

/// What one step of a time axis is: the axis counts these since the Unix epoch
/// (1970-01-01T00:00:00Z). Recorded in the declaration (manifest format 4, docs/format.md);
/// the engine stores and compares the axis as the same `u64` either way, and the faces (the
/// command line, Arrow and Parquet, Python) read and print it as a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[non_exhaustive]
pub enum TimeUnit {
    /// Seconds (on-disk code 1).
    Seconds,
    /// Milliseconds (code 2).
    Millis,
    /// Microseconds (code 3).
    Micros,
    /// Nanoseconds (code 4).
    Nanos,
}

impl TimeUnit {
    /// Every unit, coarsest first.
    pub const ALL: [TimeUnit; 4] = [Self::Seconds, Self::Millis, Self::Micros, Self::Nanos];

    /// The on-disk code, 1..=4.
    pub fn code(self) -> u8 {
        match self {
            Self::Seconds => 1,
            Self::Millis => 2,
            Self::Micros => 3,
            Self::Nanos => 4,
        }
    }

    /// The unit for an on-disk code; `None` for anything outside 1..=4.
    pub fn from_code(code: u8) -> Option<TimeUnit> {
        Self::ALL.into_iter().find(|unit| unit.code() == code)
    }

    /// How many of this unit make one second.
    pub fn per_second(self) -> u64 {
        match self {
            Self::Seconds => 1,
            Self::Millis => 1_000,
            Self::Micros => 1_000_000,
            Self::Nanos => 1_000_000_000,
        }
    }

    /// The unit's short name as declarations write it: `s`, `ms`, `us`, `ns`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Seconds => "s",
            Self::Millis => "ms",
            Self::Micros => "us",
            Self::Nanos => "ns",
        }
    }

    /// The unit for a short name: `s`, `ms`, `us` (or `µs`), `ns`.
    pub fn parse(name: &str) -> Option<TimeUnit> {
        match name {
            "s" => Some(Self::Seconds),
            "ms" => Some(Self::Millis),
            "us" | "\u{b5}s" | "\u{3bc}s" => Some(Self::Micros),
            "ns" => Some(Self::Nanos),
            _ => None,
        }
    }
}

impl fmt::Display for TimeUnit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A stream's declaration, recorded durably the first time the stream is opened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StreamDecl {
    /// The stream id, a label.
    pub id: String,
    /// The fields, in declaration order (which is durable).
    pub fields: Vec<FieldDecl>,
    /// Indexes into `fields` naming the track components, outermost first; 0..=4 entries.
    pub track: Vec<u16>,
    /// Index of the `U64` axis field, if any; never a track field.
    pub axis: Option<u16>,
    /// The level grid. Durable: cells on disk depend on it.
    pub ladder: LadderSpec,
    /// `Some` if the axis is time since the Unix epoch in this unit; `None` keeps it a plain
    /// `u64`, as every declaration before manifest format 4 reads. Only with an axis.
    pub time: Option<TimeUnit>,
}

/// Why a stream declaration was refused. Field positions are 0-based indexes into `fields`; the
/// messages name a field by its name where it has one, and count from 1 where they must count.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DeclError {
    /// The stream id is not a legal label.
    Id {
        /// What is wrong with the id.
        error: LabelError,
    },
    /// No fields, or more than [`FIELDS_MAX`].
    FieldCount {
        /// The number declared.
        n_fields: usize,
    },
    /// A field name is not a legal label.
    FieldName {
        /// Position of the field.
        field_idx: usize,
        /// What is wrong with the name.
        error: LabelError,
    },
    /// Two fields share a name.
    DuplicateField {
        /// The repeated name.
        name: String,
        /// Position of its first use.
        first_idx: usize,
        /// Position of the repeat.
        field_idx: usize,
    },
    /// More than [`TRACK_DEPTH_MAX`] track components.
    TrackTooDeep {
        /// The number declared.
        n_track: usize,
    },
    /// A track component names no field.
    TrackOutOfRange {
        /// Position in `track`.
        track_idx: usize,
        /// The out-of-range field index.
        field_idx: u16,
        /// The number of fields.
        n_fields: usize,
    },
    /// A field appears twice in `track`.
    TrackRepeated {
        /// Position of the repeat in `track`.
        track_idx: usize,
        /// The repeated field index.
        field_idx: u16,
        /// The repeated field's name.
        name: String,
    },
    /// A track component is not `U64`, `I64` or `Str` (nothing orders by float or by bytes).
    TrackKind {
        /// Position in `track`.
        track_idx: usize,
        /// The field index.
        field_idx: u16,
        /// The field's name.
        name: String,
        /// Its kind.
        kind: FieldKind,
    },
    /// The axis names no field.
    AxisOutOfRange {
        /// The out-of-range field index.
        field_idx: u16,
        /// The number of fields.
        n_fields: usize,
    },
    /// The axis field is not `U64`.
    AxisKind {
        /// The field index.
        field_idx: u16,
        /// The field's name.
        name: String,
        /// Its kind.
        kind: FieldKind,
    },
    /// The axis field is also a track component.
    AxisIsTrack {
        /// The field index.
        field_idx: u16,
        /// The field's name.
        name: String,
    },
    /// A time unit is declared but no axis.
    TimeWithoutAxis {
        /// The unit declared.
        unit: TimeUnit,
    },
    /// `ladder.base` is 0 or `ladder.fanout` is below 2.
    Ladder {
        /// The declared ladder.
        ladder: LadderSpec,
    },
}

impl fmt::Display for DeclError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Id { error } => write!(f, "stream id: {error}"),
            Self::FieldCount { n_fields } => {
                write!(
                    f,
                    "{n_fields} fields declared; a stream has 1..={FIELDS_MAX}"
                )
            }
            Self::FieldName { field_idx, error } => {
                write!(
                    f,
                    "field {} (counting from 1) has no legal name: {error}",
                    field_idx + 1
                )
            }
            Self::DuplicateField {
                name,
                first_idx,
                field_idx,
            } => {
                write!(
                    f,
                    "fields {} and {} are both named {name:?} (counting from 1)",
                    first_idx + 1,
                    field_idx + 1
                )
            }
            Self::TrackTooDeep { n_track } => write!(
                f,
                "the track names {n_track} fields; a track has at most {TRACK_DEPTH_MAX}"
            ),
            Self::TrackOutOfRange {
                field_idx,
                n_fields,
                ..
            } => write!(
                f,
                "the track names field {} (counting from 1), but the stream has {}",
                usize::from(*field_idx) + 1,
                n_of(*n_fields, "field", "fields")
            ),
            Self::TrackRepeated { name, .. } => {
                write!(f, "the track names field {name:?} twice")
            }
            Self::TrackKind { name, kind, .. } => write!(
                f,
                "track field {name:?} is {}; a track field is a u64, an i64 or a str",
                kind.with_article()
            ),
            Self::AxisOutOfRange {
                field_idx,
                n_fields,
            } => write!(
                f,
                "the axis is field {} (counting from 1), but the stream has {}",
                usize::from(*field_idx) + 1,
                n_of(*n_fields, "field", "fields")
            ),
            Self::AxisKind { name, kind, .. } => write!(
                f,
                "axis field {name:?} is {}; the axis is a u64",
                kind.with_article()
            ),
            Self::AxisIsTrack { name, .. } => {
                write!(f, "field {name:?} is both the axis and a track field")
            }
            Self::TimeWithoutAxis { unit } => write!(
                f,
                "a time unit ({unit}) is declared but no axis: the unit says what the axis counts"
            ),
            Self::Ladder { ladder } => write!(
                f,
                "ladder base {} fanout {}: base must be >= 1 and fanout >= 2",
                ladder.base, ladder.fanout
            ),
        }
    }
}

impl std::error::Error for DeclError {}

/// `1 field`, `3 fields`: a count that agrees in number.
fn n_of(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

impl StreamDecl {
    /// Checks the declaration's own consistency (see [`DeclError`] for every rule).
    pub fn validate(&self) -> Result<(), DeclError> {
        validate_label(&self.id).map_err(|error| DeclError::Id { error })?;
        let n_fields = self.fields.len();
        if !(1..=FIELDS_MAX).contains(&n_fields) {
            return Err(DeclError::FieldCount { n_fields });
        }
        let mut first_use: BTreeMap<&str, usize> = BTreeMap::new();
        for (field_idx, field) in self.fields.iter().enumerate() {
            validate_label(&field.name)
                .map_err(|error| DeclError::FieldName { field_idx, error })?;
            if let Some(&first_idx) = first_use.get(field.name.as_str()) {
                return Err(DeclError::DuplicateField {
                    name: field.name.clone(),
                    first_idx,
                    field_idx,
                });
            }
            first_use.insert(&field.name, field_idx);
        }
        self.validate_track()?;
        self.validate_axis()?;
        if self.ladder.base < 1 || self.ladder.fanout < 2 {
            return Err(DeclError::Ladder {
                ladder: self.ladder,
            });
        }
        Ok(())
    }

    fn validate_track(&self) -> Result<(), DeclError> {
        if self.track.len() > TRACK_DEPTH_MAX {
            return Err(DeclError::TrackTooDeep {
                n_track: self.track.len(),
            });
        }
        for (track_idx, &field_idx) in self.track.iter().enumerate() {
            let Some(field) = self.fields.get(usize::from(field_idx)) else {
                return Err(DeclError::TrackOutOfRange {
                    track_idx,
                    field_idx,
                    n_fields: self.fields.len(),
                });
            };
            if self.track[..track_idx].contains(&field_idx) {
                return Err(DeclError::TrackRepeated {
                    track_idx,
                    field_idx,
                    name: field.name.clone(),
                });
            }
            if !matches!(field.kind, FieldKind::U64 | FieldKind::I64 | FieldKind::Str) {
                return Err(DeclError::TrackKind {
                    track_idx,
                    field_idx,
                    name: field.name.clone(),
                    kind: field.kind,
                });
            }
        }
        Ok(())
    }

    fn validate_axis(&self) -> Result<(), DeclError> {
        let Some(field_idx) = self.axis else {
            return match self.time {
                Some(unit) => Err(DeclError::TimeWithoutAxis { unit }),
                None => Ok(()),
            };
        };
        let Some(field) = self.fields.get(usize::from(field_idx)) else {
            return Err(DeclError::AxisOutOfRange {
                field_idx,
                n_fields: self.fields.len(),
            });
        };
        if field.kind != FieldKind::U64 {
            return Err(DeclError::AxisKind {
                field_idx,
                name: field.name.clone(),
                kind: field.kind,
            });
        }
        if self.track.contains(&field_idx) {
            return Err(DeclError::AxisIsTrack {
                field_idx,
                name: field.name.clone(),
            });
        }
        Ok(())
    }

    /// The stored fields: every field that is neither the axis nor a track component (each a
    /// column of the raw rows), in declaration order.
    pub fn stored(&self) -> Vec<u16> {
        (0..=u16::MAX)
            .zip(&self.fields)
            .filter(|&(field_idx, _)| {
                self.axis != Some(field_idx) && !self.track.contains(&field_idx)
            })
            .map(|(field_idx, _)| field_idx)
            .collect()
    }

    /// The measured fields: every numeric field (`U64`, `I64`, `F64`) that is neither the axis
    /// nor a track component, in declaration order.
    ///
    /// Coordinates are excluded by declaration, never by name. Fields past index `u16::MAX`
    /// cannot be addressed and are not listed (a valid declaration has at most [`FIELDS_MAX`]).
    pub fn measured(&self) -> Vec<u16> {
        (0..=u16::MAX)
            .zip(&self.fields)
            .filter(|&(field_idx, field)| {
                field.kind.is_numeric()
                    && self.axis != Some(field_idx)
                    && !self.track.contains(&field_idx)
            })
            .map(|(field_idx, _)| field_idx)
            .collect()
    }
}

/// A storage tier of one partition inside one file: its raw rows, or one level of its ladder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum Tier {
    /// The raw columns.
    Raw,
    /// The level-`k` cells.
    Level(u8),
}

impl fmt::Display for Tier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Raw => f.write_str("raw"),
            Self::Level(k) => write!(f, "level {k}"),
        }
    }
}

/// What the manifest knows of one partition stored in one file: enough that boot never opens
/// the file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PartitionEntry {
    /// The stream id.
    pub stream: String,
    /// The partition's full track tuple.
    pub track: TrackKey,
    /// Rows stored, >= 1.
    pub n_rows: u64,
    /// Inclusive lo, hi of the rows' positions (lo <= hi).
    pub positions: [u64; 2],
    /// Inclusive lo, hi of the rows' ordinals (lo <= hi). Ordinals are dense per stream but a
    /// partition's rows interleave with other partitions' rows, so `n_rows <= hi - lo + 1`, with
    /// equality when no other partition's rows fall between.
    pub ordinals: [u64; 2],
    /// Inclusive lo, hi of the axis; `Some` iff the stream declares an axis.
    pub axis: Option<[u64; 2]>,
    /// Level tiers stored for this partition in this file, `Level(0)..Level(n_levels)`.
    pub n_levels: u8,
    /// Byte offset of this partition's blocks inside the file.
    pub offset: u64,
    /// Byte length of this partition's blocks.
    pub len: u64,
}

/// A segment file claimed by the manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileEntry {
    /// The file's name (number).
    pub name: FileName,
    /// The file's length in bytes.
    pub len: u64,
    /// crc32c of the whole file.
    pub digest: u32,
    /// The partitions stored in it.
    pub partitions: Vec<PartitionEntry>,
}

/// The retirement of one tier of one partition of one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Retirement {
    /// The file holding the partition.
    pub file: FileName,
    /// The partition's stream.
    pub stream: String,
    /// The partition's track.
    pub track: TrackKey,
    /// The tier retired.
    pub tier: Tier,
}

/// One statement of a record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum Entry {
    /// Declares a stream (a no-op if the same declaration is already recorded).
    Declare(StreamDecl),
    /// Claims a segment file and the partitions in it.
    AddFile(FileEntry),
    /// Retires one tier of one partition of a file.
    Retire(Retirement),
    /// The position through which a stream is durable.
    Watermark {
        /// The stream id.
        stream: String,
        /// The durable position (non-decreasing).
        position: u64,
    },
    /// The highest file name ever issued, including names a crash left behind.
    NameHigh(FileName),
    /// Positions at or below `position` are never assigned to rows again: an operator's repair
    /// cut records that had acknowledged rows up to here, and those rows are only evidence now.
    Fence {
        /// The stream id.
        stream: String,
        /// The highest position any cut record or unclaimed file held.
        position: u64,
    },
    /// Claims a compaction output and, in the same entry, retires every tier of the partitions
    /// it replaces: for each partition `(stream, track)` of `file`, that partition in each of
    /// `inputs` that holds it. The output holds exactly the rows it replaces, with their
    /// positions and ordinals, so a read answers the same before and after.
    ///
    /// One entry carries both halves (rather than an `AddFile` plus `Retire`s) so that nothing
    /// can separate them: a snapshot split into several frames keeps every entry whole.
    Merge {
        /// The output file. Its name is issued like any other; its ordinals are old ones.
        file: FileEntry,
        /// The input files, in strictly increasing name order.
        inputs: Vec<FileName>,
    },
    /// A snapshot's summary of a stream's history: every ordinal below `next_ordinal` and every
    /// position up to `last_position` was assigned, whether the files that held them are still
    /// live or long retired. What lets a snapshot list only live files (see [`Entry::Claim`]).
    Assigned {
        /// The stream id.
        stream: String,
        /// One above the highest ordinal ever added (at least 1: only emitted once one was).
        next_ordinal: u64,
        /// The highest position ever added.
        last_position: u64,
    },
    /// A snapshot's restatement of a live file: claimed by an earlier record (a barrier's
    /// `AddFile` or a compaction's `Merge`), listed again so that a new manifest generation
    /// need not replay the files that are wholly retired. Unlike `AddFile`, its ordinals are
    /// old ones (below the stream's next ordinal, recorded by an earlier `Assigned`) and need
    /// not follow on from anything; they must not overlap a live segment.
    Claim(FileEntry),
    /// A snapshot's summary of every file ever added, live or retired (see [`History`]).
    History(History),
    /// A partition's floor for one tier: nothing of that tier beneath it is retained any more.
    /// Written with the retirements that move it; floors are derived from these records and
    /// from nothing else (never from the files present).
    Floor(Floor),
    /// A snapshot's record of the manifest states the store's history passed through before
    /// this generation (see [`crate::lineage`]): what proves a copy of the store elsewhere an
    /// earlier state of this one. Replaces the lineage held before. Format 2 (body version 2).
    Lineage(Lineage),
    /// The first frame of a generation written whole (see [`Preamble`]), its only entry. Changes
    /// nothing in the catalog: it says how the generation's bytes came to be, not what the store
    /// holds. Format 3 (body version 3).
    Preamble(Preamble),
}

/// What the first frame of a manifest generation written whole says about that generation: a
/// rewrite's or a repair's, and in format 3 every generation above 1.
///
/// Such a generation is written to `tmp/` with its header, this frame and its snapshot, synced,
/// and only then given its name, so no crash can tear any of those bytes: damage inside them is
/// damage, never a torn tail. Frames appended afterwards can be torn (the last one), as in any
/// generation. `whole_len` is where the one part ends and the other begins; the frame's own
/// checksum covers it, so a flipped byte cannot move that line unseen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Preamble {
    /// The bytes written before the generation had its name: the header, this frame and the
    /// snapshot's frames.
    pub whole_len: u64,
    /// The generation this one's snapshot was taken from, as its bytes stood then (its whole
    /// length and their crc32c): a rewrite keeps it beside this one, so a repair can take the
    /// snapshot again from it if this one's is damaged. `None` when the generation was not
    /// taken from a whole one (a repair's).
    pub replaces: Option<ManifestState>,
}

/// One tier's floor in one partition: the lowest position and axis value it still holds.
///
/// For the raw tier, rows at positions below `position` are retired, and (for a stream with an
/// axis) so are rows at axis values below `axis`. For a level tier, the level's cells covering
/// axis values below `axis` are retired; levels have no positions. A floor only rises: a lower
/// one than recorded is accepted and ignored, component by component.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Floor {
    /// The stream id.
    pub stream: String,
    /// The partition's track.
    pub track: TrackKey,
    /// Which tier the floor bounds.
    pub tier: Tier,
    /// The lowest position still held: `Some` for the raw tier, `None` for a level.
    pub position: Option<u64>,
    /// The lowest axis value still held: `Some` iff the stream declares an axis (a level floor
    /// always has one: only an axial stream has levels).
    pub axis: Option<u64>,
}

/// What a snapshot keeps of the files it no longer lists: how many were added and by what, and
/// the highest name added. Applied, the counts add to the catalog's and the name raises its
/// highest added name (below which no file is added again).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct History {
    /// Files added by barriers (`AddFile`), live or retired.
    pub barrier_files: u64,
    /// Their bytes.
    pub barrier_bytes: u64,
    /// Files added by compaction (`Merge`), live or retired.
    pub merge_files: u64,
    /// Their bytes.
    pub merge_bytes: u64,
    /// The highest file name ever added (0 if none).
    pub max_added: FileName,
}

/// One manifest frame: one barrier, applied whole or not at all.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct Record {
    /// The entries, applied in order; later entries may depend on earlier ones.
    pub entries: Vec<Entry>,
}

#[cfg(test)]
mod tests;
