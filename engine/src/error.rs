//! The engine's one error type.

use std::fmt;

use strata_recover::RecoverError;
use strata_segment::SegmentError;

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
        /// The index of the offending row in the batch.
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
    /// The store holds the data but cannot read it (a missing file, a checksum mismatch).
    Unreadable {
        /// What could not be read, and why.
        reason: String,
    },
    /// A write or sync failed earlier; the store refuses everything until it is reopened, so
    /// that nothing is claimed on top of a state the disk may not hold.
    Poisoned {
        /// The failure that poisoned it.
        cause: String,
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
                "batch refused for stream {stream:?}: row {row_idx}: {reason} (nothing of the batch was staged)"
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
            EngineError::Unreadable { reason } => write!(f, "unreadable: {reason}"),
            EngineError::Poisoned { cause } => write!(
                f,
                "the store is poisoned by an earlier failed write ({cause}); reopen it"
            ),
            EngineError::Open(error) => write!(f, "{error}"),
            EngineError::Storage(error) => write!(f, "{error}"),
        }
    }
}

impl std::error::Error for EngineError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            EngineError::Open(error) => Some(error),
            EngineError::Storage(error) => Some(error),
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

    /// Whether this error is `Locked`: another opener holds the store.
    pub fn is_locked(&self) -> bool {
        matches!(self, EngineError::Open(RecoverError::Locked))
    }
}
