//! Why a store cannot be booted at all.

use std::fmt;
use std::io;

use strata_index::Fault;
use strata_segment::SegmentError;

use crate::corruption::Corruption;
use crate::stray::StrayManifests;

/// A store that cannot be opened. Everything short of this is a [`crate::Finding`] and boot
/// goes on: a crash leaves evidence, not a bricked store.
#[derive(Debug)]
#[non_exhaustive]
pub enum RecoverError {
    /// The folder holds no manifest and is not empty: strata will not lay a store over it.
    NotAStore {
        /// What was found instead.
        reason: String,
    },
    /// A new store was asked for in a folder that already holds one: nothing was changed.
    /// Open it instead.
    AlreadyAStore {
        /// What was found.
        reason: String,
    },
    /// A new store was asked for in a folder that holds no store but is not empty either (it
    /// holds anything but what a crashed creation leaves): nothing was changed. Opening it is
    /// refused too (`NotAStore`); a store is created in an empty or missing folder.
    NotEmpty {
        /// The folder.
        path: String,
        /// The names in its root, sorted.
        holds: Vec<String>,
    },
    /// The current manifest's own header is bad, so not even an empty prefix can be trusted.
    ManifestUnusable {
        /// The manifest file.
        file: String,
        /// What is wrong with it.
        fault: Fault,
    },
    /// The manifest is damaged before frames that pass their own checks: acknowledged history,
    /// not a torn tail. Nothing was changed; only an explicit repair cuts it.
    ManifestCorrupt(Box<Corruption>),
    /// The highest manifest generations are not whole manifests (empty, no valid header, or
    /// bytes that do not parse) while a lower one is whole: evidence, not the store. Nothing was
    /// changed; only an explicit repair sets them aside.
    StrayManifest(Box<StrayManifests>),
    /// A repair was asked of a store whose manifest history is not damaged.
    NothingToRepair,
    /// A repair cannot be made (nothing was changed).
    RepairRefused {
        /// Why.
        reason: String,
    },
    /// Another opener holds the store's lock.
    Locked,
    /// The file system failed (or a store file could not be read).
    Storage(SegmentError),
}

impl RecoverError {
    pub(crate) fn io(path: &str, source: io::Error) -> RecoverError {
        RecoverError::Storage(SegmentError::Io {
            path: path.to_owned(),
            source,
        })
    }
}

impl fmt::Display for RecoverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecoverError::NotAStore { reason } => write!(f, "not a strata store: {reason}"),
            RecoverError::AlreadyAStore { reason } => {
                write!(f, "refusing to create a store: {reason}")
            }
            RecoverError::NotEmpty { path, holds } => write!(
                f,
                "refusing to create a store: {path} is not empty and holds no store: it holds \
                 {holds:?}; create a store in an empty or missing folder"
            ),
            RecoverError::ManifestUnusable { file, fault } => {
                write!(f, "the manifest {file} is unusable: {fault}")
            }
            RecoverError::ManifestCorrupt(corruption) => write!(f, "{corruption}"),
            RecoverError::StrayManifest(strays) => write!(f, "{strays}"),
            RecoverError::NothingToRepair => write!(
                f,
                "nothing to repair: the manifest's history is intact (a torn tail, if any, is \
                 healed by opening the store)"
            ),
            RecoverError::RepairRefused { reason } => write!(f, "repair refused: {reason}"),
            RecoverError::Locked => {
                write!(
                    f,
                    "the store is locked: another process or handle has it open"
                )
            }
            RecoverError::Storage(error) => write!(f, "{error}"),
        }
    }
}

impl std::error::Error for RecoverError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RecoverError::Storage(error) => Some(error),
            _ => None,
        }
    }
}

impl From<SegmentError> for RecoverError {
    fn from(error: SegmentError) -> Self {
        RecoverError::Storage(error)
    }
}
