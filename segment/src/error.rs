//! The errors of reading and writing store files.

use std::fmt;
use std::io;

/// What went wrong with a store file. Every variant names the file; bad bytes name the offset.
#[derive(Debug)]
#[non_exhaustive]
pub enum SegmentError {
    /// The file system refused or failed an operation.
    Io {
        /// The file (relative to the store root).
        path: String,
        /// What the file system said.
        source: io::Error,
    },
    /// Bytes on disk do not match the checksum written beside them.
    Checksum {
        /// The file.
        path: String,
        /// Where the checked bytes start.
        offset: u64,
        /// Which part of the file was checked.
        what: &'static str,
        /// The checksum written in the file.
        expected: u32,
        /// The checksum of the bytes as read.
        got: u32,
    },
    /// Bytes that passed their checksum but do not describe a valid file (a foreign file, an
    /// unsupported version, a truncated file, or a structure that contradicts itself).
    Malformed {
        /// The file.
        path: String,
        /// Where the offending bytes start.
        offset: u64,
        /// What is wrong.
        what: String,
    },
}

impl SegmentError {
    /// Whether this is a checksum mismatch.
    pub fn is_checksum(&self) -> bool {
        matches!(self, SegmentError::Checksum { .. })
    }

    /// The file the error is about.
    pub fn path(&self) -> &str {
        match self {
            SegmentError::Io { path, .. }
            | SegmentError::Checksum { path, .. }
            | SegmentError::Malformed { path, .. } => path,
        }
    }

    pub(crate) fn io(path: &str, source: io::Error) -> SegmentError {
        SegmentError::Io {
            path: path.to_owned(),
            source,
        }
    }

    pub(crate) fn malformed(path: &str, offset: u64, what: impl Into<String>) -> SegmentError {
        SegmentError::Malformed {
            path: path.to_owned(),
            offset,
            what: what.into(),
        }
    }
}

impl fmt::Display for SegmentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SegmentError::Io { path, source } => write!(f, "{path}: {source}"),
            SegmentError::Checksum {
                path,
                offset,
                what,
                expected,
                got,
            } => write!(
                f,
                "{path}: checksum mismatch in {what} at offset {offset}: \
                 expected {expected:#010x}, got {got:#010x}"
            ),
            SegmentError::Malformed { path, offset, what } => {
                write!(f, "{path}: malformed at offset {offset}: {what}")
            }
        }
    }
}

impl std::error::Error for SegmentError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SegmentError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}
