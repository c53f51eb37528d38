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
    /// The file is not what the manifest recorded of it: missing, another length or digest, or
    /// without a partition the record says it holds.
    Mismatch {
        /// The file.
        path: String,
        /// How it differs from the record.
        what: String,
    },
}

/// A resource the operating system ran out of. Running out is not damage: once the resource is
/// freed the same operation can succeed (a failed write still poisons the store until reopened).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Resource {
    /// The file system is full or the quota is spent (ENOSPC, EDQUOT).
    DiskSpace,
    /// Too many open files in the process or the system (EMFILE, ENFILE).
    FileDescriptors,
    /// Memory or address space ran out (ENOMEM; a map fails this way when the process has too
    /// many mapped files for `vm.max_map_count`).
    Memory,
}

impl Resource {
    /// The resource whose exhaustion `error` reports, if it reports one.
    pub fn of(error: &io::Error) -> Option<Resource> {
        // The raw errno is the precise answer on Unix; the kind covers errors built without one
        // (the simulated file system's, a `TryReserveError`).
        match error.raw_os_error() {
            Some(ENOSPC | EDQUOT) => return Some(Resource::DiskSpace),
            Some(EMFILE | ENFILE) => return Some(Resource::FileDescriptors),
            Some(ENOMEM) => return Some(Resource::Memory),
            _ => {}
        }
        match error.kind() {
            io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded => Some(Resource::DiskSpace),
            io::ErrorKind::OutOfMemory => Some(Resource::Memory),
            _ => None,
        }
    }
}

impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Resource::DiskSpace => "disk space",
            Resource::FileDescriptors => "file descriptors",
            Resource::Memory => "memory for mapping files",
        })
    }
}

// Linux errno values (the same on every Linux architecture strata builds for).
const ENOMEM: i32 = 12;
const ENFILE: i32 = 23;
const EMFILE: i32 = 24;
const ENOSPC: i32 = 28;
const EDQUOT: i32 = 122;

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
            | SegmentError::Malformed { path, .. }
            | SegmentError::Mismatch { path, .. } => path,
        }
    }

    /// Where in the file the bad bytes start, for errors about bytes.
    pub fn offset(&self) -> Option<u64> {
        match self {
            SegmentError::Checksum { offset, .. } | SegmentError::Malformed { offset, .. } => {
                Some(*offset)
            }
            SegmentError::Io { .. } | SegmentError::Mismatch { .. } => None,
        }
    }

    /// What the file system said, for an I/O error: its kind and raw OS error are there.
    pub fn io_error(&self) -> Option<&io::Error> {
        match self {
            SegmentError::Io { source, .. } => Some(source),
            _ => None,
        }
    }

    /// The resource an I/O error says ran out, if it says so: not damage.
    pub fn exhausted(&self) -> Option<Resource> {
        self.io_error().and_then(Resource::of)
    }

    /// An equal error (`io::Error` is not `Clone`): the same file, offset and words; an I/O
    /// error keeps its kind, its raw OS error when it has one, and its message otherwise.
    #[must_use]
    pub fn duplicate(&self) -> SegmentError {
        match self {
            SegmentError::Io { path, source } => SegmentError::Io {
                path: path.clone(),
                source: match source.raw_os_error() {
                    Some(code) => io::Error::from_raw_os_error(code),
                    None => io::Error::new(source.kind(), source.to_string()),
                },
            },
            SegmentError::Checksum {
                path,
                offset,
                what,
                expected,
                got,
            } => SegmentError::Checksum {
                path: path.clone(),
                offset: *offset,
                what,
                expected: *expected,
                got: *got,
            },
            SegmentError::Malformed { path, offset, what } => SegmentError::Malformed {
                path: path.clone(),
                offset: *offset,
                what: what.clone(),
            },
            SegmentError::Mismatch { path, what } => SegmentError::Mismatch {
                path: path.clone(),
                what: what.clone(),
            },
        }
    }

    /// The file differs from the manifest's record of it.
    pub fn mismatch(path: &str, what: impl Into<String>) -> SegmentError {
        SegmentError::Mismatch {
            path: path.to_owned(),
            what: what.into(),
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
            SegmentError::Mismatch { path, what } => {
                write!(f, "{path}: differs from the manifest's record: {what}")
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

#[cfg(test)]
mod tests {
    use std::io;

    use super::{Resource, SegmentError};

    #[test]
    fn exhaustion_is_told_apart_from_failure_by_errno_and_kind() {
        let cases = [
            (io::Error::from_raw_os_error(28), Some(Resource::DiskSpace)),
            (io::Error::from_raw_os_error(122), Some(Resource::DiskSpace)),
            (
                io::Error::from_raw_os_error(24),
                Some(Resource::FileDescriptors),
            ),
            (
                io::Error::from_raw_os_error(23),
                Some(Resource::FileDescriptors),
            ),
            (io::Error::from_raw_os_error(12), Some(Resource::Memory)),
            (
                io::Error::from(io::ErrorKind::StorageFull),
                Some(Resource::DiskSpace),
            ),
            (
                io::Error::from(io::ErrorKind::OutOfMemory),
                Some(Resource::Memory),
            ),
            (io::Error::from_raw_os_error(5), None),
            (io::Error::from(io::ErrorKind::NotFound), None),
        ];
        for (error, want) in cases {
            assert_eq!(Resource::of(&error), want, "{error:?}");
            let wrapped = SegmentError::io("seg/000000000001.seg", error);
            assert_eq!(wrapped.exhausted(), want);
        }
    }

    #[test]
    fn a_duplicate_keeps_the_file_the_offset_and_the_errno() {
        let io = SegmentError::io("tmp/x", io::Error::from_raw_os_error(28));
        let copy = io.duplicate();
        assert_eq!(copy.path(), "tmp/x");
        assert_eq!(copy.io_error().and_then(io::Error::raw_os_error), Some(28));
        assert_eq!(copy.to_string(), io.to_string());
        let bad = SegmentError::malformed("seg/y", 40, "a zero count");
        assert_eq!(bad.duplicate().offset(), Some(40));
        assert_eq!(bad.duplicate().to_string(), bad.to_string());
    }
}
