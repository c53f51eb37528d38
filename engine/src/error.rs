//! The engine's one error type.

use std::fmt;
use std::sync::Arc;

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
        /// The lowest position (for a read by position) or axis value (for a percentile, read
        /// by axis) still held in every partition the read covers: the highest raw floor of
        /// them.
        floor: u64,
        /// What `floor` is: `"position"` or `"axis value"`.
        unit: &'static str,
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
            EngineError::UnknownStream { stream } => write!(f, "unknown stream {stream:?}"),
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
            // A floor of `u64::MAX` is one past the last value, saturated (`read::beneath`):
            // no range starts above it, so there is nothing to narrow to.
            EngineError::Floor {
                stream,
                floor: u64::MAX,
                unit,
            } => write!(
                f,
                "stream {stream:?} is retired up to {unit} {}, the last there is (by retention, \
                 `retire` or `trim`): nothing is left to read, whatever the range",
                u64::MAX
            ),
            EngineError::Floor {
                stream,
                floor,
                unit,
            } => write!(
                f,
                "the range reaches beneath the floor of stream {stream:?}: what this read needs \
                 is not all retained beneath {unit} {floor} (retired by retention, `retire` or \
                 `trim`); narrow the range to start at {floor}"
            ),
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

impl EngineError {
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
    pub(crate) fn duplicate(&self) -> EngineError {
        match self {
            EngineError::UnknownStream { stream } => EngineError::UnknownStream {
                stream: stream.clone(),
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
                floor,
                unit,
            } => EngineError::Floor {
                stream: stream.clone(),
                floor: *floor,
                unit,
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
