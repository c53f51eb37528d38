//! The engine's one error type.

use std::fmt;
use std::sync::Arc;

use strata_index::selection_word;
use strata_recover::RecoverError;
use strata_segment::{Resource, SegmentError};

/// What went wrong. Every refusal names what was wrong and where; a refused batch stages
/// nothing and the store stays usable. Only `Poisoned` (after a failed write or sync) makes the
/// store refuse everything until it is reopened.
#[derive(Debug)]
#[non_exhaustive]
pub enum EngineError {
    /// No stream of that id is declared.
    UnknownStream {
        /// The id asked for.
        stream: String,
        /// The streams the store declares, by id (the message names them).
        declared: Vec<String>,
    },
    /// A selection names labels under which no partition of the stream was ever sealed (none
    /// live, none retired): a read of it would answer nothing, and that empty answer would
    /// read as "no rows here". Reads see what seals made durable, so a track whose rows are
    /// only staged is not there yet. (The `Series` adapter surface answers such a selection
    /// with nothing instead: a host's tracks are typed, so one with no durable rows is not a
    /// typo.)
    UnknownTrack {
        /// The stream.
        stream: String,
        /// The selection's labels.
        selection: Vec<String>,
        /// Tracks the stream holds, in track-key order: at most [`TRACKS_NAMED_MAX`].
        tracks: Vec<Vec<String>>,
        /// Whether it holds more tracks than `tracks` names.
        more: bool,
    },
    /// A selection names more labels than the stream has track fields.
    TrackDepth {
        /// The stream.
        stream: String,
        /// The selection's labels.
        selection: Vec<String>,
        /// The stream's track fields, outermost first.
        fields: Vec<String>,
    },
    /// A range whose start lies above its end: it holds nothing, and is taken for a mistake
    /// rather than answered empty. (A range that is empty without being inverted, such as
    /// `5..5`, answers nothing.)
    InvertedRange {
        /// Its start.
        start: u64,
        /// Its end.
        end: u64,
        /// What the ends are: `"position"` or `"axis value"`.
        unit: &'static str,
    },
    /// `Store::retire` named no track of a stream with track fields: that would end every
    /// track, which is asked for by name (`Store::retire_all`). Nothing was recorded.
    RetireNamesNoTrack {
        /// The stream.
        stream: String,
    },
    /// A retirement's selection holds nothing live: what lies under it was retired already
    /// (or, for a stream without tracks, nothing was sealed). Nothing was recorded.
    NothingToRetire {
        /// The stream.
        stream: String,
        /// The selection's labels (empty: every track).
        selection: Vec<String>,
    },
    /// A published batch was refused whole: nothing of it was staged.
    Refused {
        /// The stream.
        stream: String,
        /// The 0-based index of the offending row in the batch (the message counts from 1).
        row_idx: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// Staging is full: seal before publishing more. Nothing of the batch was staged.
    StagingFull {
        /// Bytes staged now.
        staged_bytes: usize,
        /// Bytes the batch would add.
        batch_bytes: usize,
        /// The configured bound (`Config::staged_bytes_max`).
        staged_bytes_max: usize,
    },
    /// A stream declaration is invalid, or conflicts with the one the store recorded.
    Declaration {
        /// The stream.
        stream: String,
        /// What is wrong.
        reason: String,
    },
    /// A read's selection or range is not one this stream can answer.
    BadRead {
        /// What is wrong.
        reason: String,
    },
    /// A read reaches beneath a floor: rows there were retired (`Store::trim_to`), so the range
    /// cannot be answered whole, and is not answered short. Narrow it to start at `floor`.
    Floor {
        /// The stream read.
        stream: String,
        /// The selection read (its labels; empty for the whole stream).
        selection: Vec<String>,
        /// The lowest position (for a read by position) or axis value (for a percentile, read
        /// by axis) still held in every partition the read covers: the highest raw floor of
        /// them.
        floor: u64,
        /// What `floor` is: `"position"` or `"axis value"`.
        unit: &'static str,
        /// What narrows the read to the rows there are: whether a range from `floor`
        /// answers any, and the tracks that hold rows with the range each answers.
        narrowing: Narrowing,
    },
    /// `Store::trim_to` was refused: nothing was recorded.
    Trim {
        /// The stream.
        stream: String,
        /// The horizon asked for.
        horizon: u64,
        /// Why it cannot be trimmed there.
        reason: String,
    },
    /// The store holds the data but cannot read it: a file fails its checksum, is malformed, or
    /// differs from the manifest's record. The segment error (its `source`) names the file and,
    /// for bad bytes, the offset.
    Unreadable {
        /// What could not be read, where, and why.
        source: SegmentError,
    },
    /// A resource ran out: disk space, file descriptors, memory for maps. Nothing is damaged;
    /// free the resource and try again. A write that ran out poisons the store like any failed
    /// write, and `barrier` says what it needed and what is intact.
    Exhausted {
        /// Which resource.
        resource: Resource,
        /// The operation that ran out: its file, and the I/O error (kind and errno) beneath.
        source: SegmentError,
        /// For a seal that ran out: the store, what it needed, and what is intact.
        barrier: Option<Box<FailedBarrier>>,
    },
    /// A write or sync failed earlier; the store refuses everything until it is reopened, so
    /// that nothing is claimed on top of a state the disk may not hold.
    Poisoned {
        /// The failure that poisoned it (also its `source`).
        cause: Arc<EngineError>,
    },
    /// The store was opened read-only (`Store::open_read_only`) and `operation` would write to
    /// it: refused before anything was touched. The store stays usable for reads.
    ReadOnly {
        /// Where the store lives.
        store: String,
        /// The refused call, as `Store` names it (`publish`, `compact`, `trim_to`, ...).
        operation: &'static str,
    },
    /// A reader in another process (`Store::open_reader`) was refused: the store has as many
    /// live readers as `Config::reader_processes_max` allows. Nothing was created; try again once one
    /// has closed.
    TooManyReaders {
        /// Where the store lives.
        store: String,
        /// The bound (`Config::reader_processes_max`).
        max: usize,
    },
    /// The supervisor serving the store has stopped (or is gone): nothing answers requests.
    /// Not a failure of the store: it was closed.
    Stopped,
    /// A promise strata's own code makes was broken (a bug): nothing was written.
    Internal {
        /// What was broken.
        reason: String,
    },
    /// A `Config` bound is one no store can honour; nothing was opened.
    Config {
        /// The setting, as `Config` names it.
        setting: &'static str,
        /// Its value and the range it must lie in.
        reason: String,
    },
    /// Opening the store failed (locked by another opener, not a store, unusable manifest).
    Open(RecoverError),
    /// A write to the store failed (the store is now poisoned).
    Storage(SegmentError),
}

impl fmt::Display for EngineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EngineError::UnknownStream { .. }
            | EngineError::UnknownTrack { .. }
            | EngineError::TrackDepth { .. }
            | EngineError::InvertedRange { .. }
            | EngineError::RetireNamesNoTrack { .. }
            | EngineError::NothingToRetire { .. } => self.write_mistake(f),
            EngineError::Refused {
                stream,
                row_idx,
                reason,
            } => write!(
                f,
                "batch refused for stream {stream:?}: row {} of the batch (counting from 1): {reason} \
                 (nothing of the batch was staged)",
                row_idx + 1
            ),
            EngineError::StagingFull {
                staged_bytes,
                batch_bytes,
                staged_bytes_max,
            } => write!(
                f,
                "staging is full ({staged_bytes} bytes staged, the batch adds {batch_bytes}, \
                 the bound is {staged_bytes_max}): seal, then publish again"
            ),
            EngineError::Declaration { stream, reason } => {
                write!(f, "stream {stream:?}: {reason}")
            }
            EngineError::BadRead { reason } => write!(f, "cannot read: {reason}"),
            // A floor of `u64::MAX` is one past the last value, saturated (`floors::beneath`):
            // no range starts above it, so there is nothing to narrow to.
            EngineError::Floor {
                stream,
                selection,
                floor,
                unit,
                narrowing,
            } => write_floor(f, stream, selection, *floor, unit, narrowing),
            EngineError::Trim {
                stream,
                horizon,
                reason,
            } => write!(
                f,
                "cannot trim stream {stream:?} to {horizon}: {reason} (nothing was recorded)"
            ),
            EngineError::Unreadable { source } => write!(f, "unreadable: {source}"),
            EngineError::Exhausted {
                resource,
                source,
                barrier: None,
            } => write!(f, "out of {resource}: {source}"),
            EngineError::Exhausted {
                resource,
                source,
                barrier: Some(barrier),
            } => write!(
                f,
                "out of {resource}: {source}; {barrier}; rows staged since the last seal were \
                 not kept: free {resource}, reopen the store and publish them again"
            ),
            EngineError::Poisoned { cause } => write!(
                f,
                "the store is poisoned by an earlier failed write ({cause}); reopen it"
            ),
            EngineError::ReadOnly { store, operation } => write!(
                f,
                "store {store} is open read-only: {operation} would write to it, and was \
                 refused (nothing was changed); open it writable to {operation}"
            ),
            EngineError::TooManyReaders { store, max } => write!(
                f,
                "store {store} has {max} readers open, as many as Config::reader_processes_max allows: \
                 this reader was refused (nothing was created); try again once one has closed"
            ),
            EngineError::Stopped => f.write_str("the store's supervisor has stopped"),
            EngineError::Internal { reason } => {
                write!(f, "internal error (a bug in strata): {reason}")
            }
            EngineError::Config { setting, reason } => {
                write!(f, "config: {setting} {reason}")
            }
            EngineError::Open(error) => write!(f, "{error}"),
            EngineError::Storage(error) => write!(f, "{error}"),
        }
    }
}

impl EngineError {
    /// A selection or a range that names nothing the stream can answer, in the words every
    /// face says it in.
    fn write_mistake(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EngineError::UnknownStream { stream, declared } => write!(
                f,
                "no stream {stream:?} in the store (declared: {})",
                if declared.is_empty() {
                    "none".to_owned()
                } else {
                    declared.join(", ")
                }
            ),
            EngineError::UnknownTrack {
                stream,
                selection,
                tracks,
                more,
            } => {
                write!(
                    f,
                    "no track of stream {stream:?} lies under {} (",
                    selection_word(selection)
                )?;
                if tracks.is_empty() {
                    f.write_str("it holds no sealed rows")?;
                } else {
                    f.write_str(if *more {
                        "its tracks include: "
                    } else {
                        "its tracks: "
                    })?;
                    write_tracks(f, tracks.iter().map(Vec::as_slice), *more)?;
                }
                f.write_str("); rows are read once sealed, and nothing was read")
            }
            EngineError::TrackDepth {
                stream,
                selection,
                fields,
            } => write!(
                f,
                "the selection {} names {} but stream {stream:?} has {} ({})",
                selection_word(selection),
                labels(selection.len()),
                match fields.len() {
                    1 => "1 track field".to_owned(),
                    n => format!("{n} track fields"),
                },
                if fields.is_empty() {
                    "none".to_owned()
                } else {
                    fields.join(", ")
                }
            ),
            EngineError::InvertedRange { start, end, unit } => write!(
                f,
                "the range starts at {unit} {start}, above its end {end}: it holds nothing \
                 (nothing was read)"
            ),
            EngineError::RetireNamesNoTrack { stream } => write!(
                f,
                "retiring stream {stream:?} with no track would end every track of it; name a \
                 track, or ask for every track by name (`Store::retire_all`, `strata retire \
                 --all`, `retire(stream, all=True)`); nothing was retired"
            ),
            EngineError::NothingToRetire { stream, selection } => {
                let under = if selection.is_empty() {
                    "of it".to_owned()
                } else {
                    format!("under {}", selection_word(selection))
                };
                write!(
                    f,
                    "nothing of stream {stream:?} {under} is live to retire: it was retired \
                     already, or nothing of it was sealed; nothing was recorded"
                )
            }
            _ => Ok(()),
        }
    }
}

impl std::error::Error for EngineError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            EngineError::Open(error) => Some(error),
            EngineError::Storage(error)
            | EngineError::Unreadable { source: error }
            | EngineError::Exhausted { source: error, .. } => Some(error),
            EngineError::Poisoned { cause } => Some(cause.as_ref()),
            _ => None,
        }
    }
}

/// The most tracks one refusal names: of a stream a selection missed, or of those that hold
/// rows beneath a floor. A message names a few to go on from, never a stream's every track.
pub const TRACKS_NAMED_MAX: usize = 8;

/// A track a refusal beneath a floor names, with the range it answers whole.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeldTrack {
    /// Its labels: the selection that reads it alone.
    pub track: Vec<String>,
    /// The lowest and highest position (or axis value: the refusal's unit) a read of it alone
    /// answers from and to, both inclusive: read from the first, it is not refused.
    pub range: [u64; 2],
}

/// What a refusal beneath a floor offers that answers the rows there are (#47): a range to
/// start at, if anything lies at or above the floor, and the tracks that hold rows, each with
/// the range it answers alone. Following either is answered, never refused again.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Narrowing {
    /// Whether something under the selection lies at or above the floor, so that a range
    /// starting there answers rows.
    pub above: bool,
    /// The tracks under the selection that hold rows this read reaches, each with the range it
    /// answers alone, in track-key order: at most [`TRACKS_NAMED_MAX`]. Empty for a stream
    /// without track fields (its one partition is the selection itself).
    pub tracks: Vec<HeldTrack>,
    /// Whether more tracks hold rows than `tracks` lists.
    pub more: bool,
}

impl Narrowing {
    /// `; read a track alone instead: r1,p5 (positions 2 to 2000), ...`, or nothing.
    fn write_tracks(&self, f: &mut fmt::Formatter<'_>, unit: &str) -> fmt::Result {
        for (idx, held) in self.tracks.iter().enumerate() {
            let lead = if idx > 0 {
                ", "
            } else if self.above {
                ", or read one track alone: "
            } else {
                ": read one track alone: "
            };
            let [lo, hi] = held.range;
            write!(
                f,
                "{lead}{} ({unit}s {lo} to {hi})",
                selection_word(&held.track)
            )?;
        }
        if self.more {
            f.write_str(", ...")?;
        }
        Ok(())
    }
}

/// A refusal beneath a floor, with what narrows it to the rows there are.
fn write_floor(
    f: &mut fmt::Formatter<'_>,
    stream: &str,
    selection: &[String],
    floor: u64,
    unit: &str,
    narrowing: &Narrowing,
) -> fmt::Result {
    let under = if selection.is_empty() {
        format!("stream {stream:?}")
    } else {
        format!("stream {stream:?} under {}", selection_word(selection))
    };
    if floor == u64::MAX && !narrowing.above && narrowing.tracks.is_empty() {
        write!(
            f,
            "every track of {under} was retired (by retention, `retire` or `trim`), \
             up to the last {unit} there is: nothing of it is left to read, whatever \
             the range"
        )?;
    } else if floor == u64::MAX {
        write!(
            f,
            "{under} is retired up to {unit} {}, the last there is (by retention, \
             `retire` or `trim`): no range of it is whole",
            u64::MAX
        )?;
    } else if !narrowing.above && narrowing.tracks.is_empty() {
        write!(
            f,
            "every track of {under} was retired, up to {unit} {floor} (by \
             retention, `retire` or `trim`): nothing of it is left beneath that, and \
             nothing was sealed above it"
        )?;
    } else {
        write!(
            f,
            "the range reaches beneath the floor of {under}: what this read needs is \
             not all retained beneath {unit} {floor} (retired by retention, `retire` \
             or `trim`)"
        )?;
        if narrowing.above {
            write!(f, "; narrow the range to start at {floor}")?;
        } else {
            write!(f, "; nothing under it lies at or above {unit} {floor}")?;
        }
    }
    narrowing.write_tracks(f, unit)
}

/// `a, b, c` (and `, ...` when `more`): tracks as a selection spells them.
fn write_tracks<'a>(
    f: &mut fmt::Formatter<'_>,
    tracks: impl Iterator<Item = &'a [String]>,
    more: bool,
) -> fmt::Result {
    for (idx, track) in tracks.enumerate() {
        if idx > 0 {
            f.write_str(", ")?;
        }
        f.write_str(&selection_word(track))?;
    }
    if more {
        f.write_str(", ...")?;
    }
    Ok(())
}

/// `1 label`, `3 labels`.
fn labels(n: usize) -> String {
    if n == 1 {
        "1 label".to_owned()
    } else {
        format!("{n} labels")
    }
}

impl EngineError {
    /// No stream `stream` among those `declared`.
    pub(crate) fn unknown_stream<'a>(
        stream: &str,
        declared: impl Iterator<Item = &'a str>,
    ) -> EngineError {
        EngineError::UnknownStream {
            stream: stream.to_owned(),
            declared: declared.map(str::to_owned).collect(),
        }
    }

    pub(crate) fn refused(stream: &str, row_idx: usize, reason: impl Into<String>) -> EngineError {
        EngineError::Refused {
            stream: stream.to_owned(),
            row_idx,
            reason: reason.into(),
        }
    }

    /// A read of a store file failed: exhaustion of a resource is reported as such, anything
    /// else as unreadable.
    pub(crate) fn read(source: SegmentError) -> EngineError {
        match source.exhausted() {
            Some(resource) => EngineError::Exhausted {
                resource,
                source,
                barrier: None,
            },
            None => EngineError::Unreadable { source },
        }
    }

    /// A write to the store failed: exhaustion of a resource is reported as such.
    pub(crate) fn write(source: SegmentError) -> EngineError {
        match source.exhausted() {
            Some(resource) => EngineError::Exhausted {
                resource,
                source,
                barrier: None,
            },
            None => EngineError::Storage(source),
        }
    }

    /// An equal error, for a poisoned store to answer with its cause on every later call. An
    /// I/O error keeps its kind, raw OS error and message; a refusal to open keeps its message.
    #[expect(
        clippy::too_many_lines,
        reason = "an arm a variant: the error sources that are not Clone decide it"
    )]
    pub(crate) fn duplicate(&self) -> EngineError {
        match self {
            EngineError::UnknownStream { stream, declared } => EngineError::UnknownStream {
                stream: stream.clone(),
                declared: declared.clone(),
            },
            EngineError::UnknownTrack {
                stream,
                selection,
                tracks,
                more,
            } => EngineError::UnknownTrack {
                stream: stream.clone(),
                selection: selection.clone(),
                tracks: tracks.clone(),
                more: *more,
            },
            EngineError::TrackDepth {
                stream,
                selection,
                fields,
            } => EngineError::TrackDepth {
                stream: stream.clone(),
                selection: selection.clone(),
                fields: fields.clone(),
            },
            EngineError::InvertedRange { start, end, unit } => EngineError::InvertedRange {
                start: *start,
                end: *end,
                unit,
            },
            EngineError::RetireNamesNoTrack { stream } => EngineError::RetireNamesNoTrack {
                stream: stream.clone(),
            },
            EngineError::NothingToRetire { stream, selection } => EngineError::NothingToRetire {
                stream: stream.clone(),
                selection: selection.clone(),
            },
            EngineError::Refused {
                stream,
                row_idx,
                reason,
            } => EngineError::Refused {
                stream: stream.clone(),
                row_idx: *row_idx,
                reason: reason.clone(),
            },
            EngineError::StagingFull {
                staged_bytes,
                batch_bytes,
                staged_bytes_max,
            } => EngineError::StagingFull {
                staged_bytes: *staged_bytes,
                batch_bytes: *batch_bytes,
                staged_bytes_max: *staged_bytes_max,
            },
            EngineError::Declaration { stream, reason } => EngineError::Declaration {
                stream: stream.clone(),
                reason: reason.clone(),
            },
            EngineError::BadRead { reason } => EngineError::BadRead {
                reason: reason.clone(),
            },
            EngineError::Floor {
                stream,
                selection,
                floor,
                unit,
                narrowing,
            } => EngineError::Floor {
                stream: stream.clone(),
                selection: selection.clone(),
                floor: *floor,
                unit,
                narrowing: narrowing.clone(),
            },
            EngineError::Trim {
                stream,
                horizon,
                reason,
            } => EngineError::Trim {
                stream: stream.clone(),
                horizon: *horizon,
                reason: reason.clone(),
            },
            EngineError::Unreadable { source } => EngineError::Unreadable {
                source: source.duplicate(),
            },
            EngineError::Exhausted {
                resource,
                source,
                barrier,
            } => EngineError::Exhausted {
                resource: *resource,
                source: source.duplicate(),
                barrier: barrier.clone(),
            },
            EngineError::Poisoned { cause } => EngineError::Poisoned {
                cause: Arc::clone(cause),
            },
            EngineError::ReadOnly { store, operation } => EngineError::ReadOnly {
                store: store.clone(),
                operation,
            },
            EngineError::TooManyReaders { store, max } => EngineError::TooManyReaders {
                store: store.clone(),
                max: *max,
            },
            EngineError::Stopped => EngineError::Stopped,
            EngineError::Internal { reason } => EngineError::Internal {
                reason: reason.clone(),
            },
            EngineError::Config { setting, reason } => EngineError::Config {
                setting,
                reason: reason.clone(),
            },
            // RecoverError is not Clone; opening never poisons a store, so only its words matter.
            EngineError::Open(error) => EngineError::Internal {
                reason: error.to_string(),
            },
            EngineError::Storage(error) => EngineError::Storage(error.duplicate()),
        }
    }

    /// The I/O error kind beneath this error, wherever it sits in the chain (a poisoned store
    /// answers its cause's).
    pub fn io_kind(&self) -> Option<std::io::ErrorKind> {
        let mut error: &(dyn std::error::Error + 'static) = self;
        loop {
            if let Some(io) = error.downcast_ref::<std::io::Error>() {
                return Some(io.kind());
            }
            error = error.source()?;
        }
    }

    /// The resource this error says ran out, wherever it sits in the chain.
    pub fn exhausted(&self) -> Option<Resource> {
        match self {
            EngineError::Exhausted { resource, .. } => Some(*resource),
            EngineError::Poisoned { cause } => cause.exhausted(),
            _ => None,
        }
    }

    /// Whether this error is `Locked`: another opener holds the store.
    pub fn is_locked(&self) -> bool {
        matches!(self, EngineError::Open(RecoverError::Locked))
    }
}

/// What a seal that could not write its barrier was writing, and what of the store is intact.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FailedBarrier {
    /// The store (its folder, or how the file system names itself).
    pub store: String,
    /// The segment file the barrier was writing.
    pub segment: String,
    /// Bytes the barrier needed: its segment and its manifest frame.
    pub needed_bytes: u64,
    /// Whether the barrier's own unclaimed files (the temp, or the segment not yet claimed) were
    /// removed, so nothing of it is left for the next open to quarantine.
    pub cleaned_up: bool,
    /// Every stream's durable state, unchanged by the failed barrier.
    pub intact: Vec<StreamIntact>,
}

/// One stream's durable state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamIntact {
    /// The stream.
    pub stream: String,
    /// Rows sealed (durable) in it.
    pub rows_sealed: u64,
    /// The position through which it is durable; `None`: nothing yet.
    pub watermark: Option<u64>,
}

impl fmt::Display for FailedBarrier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "store {}: the seal needed {} bytes (segment {} and its manifest frame) and was not \
             claimed",
            self.store, self.needed_bytes, self.segment
        )?;
        if self.cleaned_up {
            f.write_str("; its unclaimed files were removed")?;
        }
        f.write_str("; intact:")?;
        if self.intact.is_empty() {
            f.write_str(" no streams")?;
        }
        for (idx, stream) in self.intact.iter().enumerate() {
            let sep = if idx == 0 { " " } else { ", " };
            write!(
                f,
                "{sep}stream {:?} {} {} sealed, watermark ",
                stream.stream,
                stream.rows_sealed,
                if stream.rows_sealed == 1 {
                    "row"
                } else {
                    "rows"
                }
            )?;
            match stream.watermark {
                Some(position) => write!(f, "{position}")?,
                None => f.write_str("none")?,
            }
        }
        Ok(())
    }
}
