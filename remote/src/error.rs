//! What can go wrong between a store and its bucket; every variant names the object or file.

use std::fmt;

use strata_engine::EngineError;
use strata_segment::SegmentError;

/// Why a publish, a replica's boot or poll, or a collection failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum RemoteError {
    /// A request to the object store failed (after object_store's own retries). Nothing the
    /// bucket holds is damaged: publish or poll again.
    Object {
        /// The object's key, under the store's prefix.
        key: String,
        /// What the object store answered.
        source: object_store::Error,
    },
    /// An object the records need is missing.
    Missing {
        /// The object's key.
        key: String,
    },
    /// An object's bytes are not what they must be: a log object fails its checksum or does
    /// not follow on from the one before it, or a segment differs from its record's length and
    /// digest. Never served as data.
    Unreadable {
        /// The object's key.
        key: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A segment the bucket held (its newest state claims it, or this writer put it for its
    /// next record) is gone from the bucket or cut short there, and the local store holds no
    /// whole copy to put back: its file is missing, or differs from its record. Replicas of a
    /// state that claims it cannot read it. Nothing more is published, since the next `log/`
    /// object would claim it too.
    Lost {
        /// The segment's key (`seg/NAME.seg`).
        key: String,
        /// What the bucket and the local store hold of it.
        reason: String,
    },
    /// Another writer published `log/seq` first: this publisher stops, and publishes nothing
    /// more. `epoch` is the winner's.
    Fenced {
        /// The record sequence number lost.
        seq: u64,
        /// The epoch that won it (`None` if a newer epoch exists but has not published yet).
        epoch: Option<u64>,
        /// This publisher's epoch.
        ours: u64,
    },
    /// The bucket belongs to another store, or the local store to another bucket history.
    Identity {
        /// What differs.
        reason: String,
    },
    /// The local store and the bucket disagree about history: the bucket holds records the
    /// local manifest does not (a writer restored from an old copy), so publishing would
    /// rewind it.
    Diverged {
        /// What differs.
        reason: String,
    },
    /// Reading the local store's files failed.
    Local(SegmentError),
    /// The engine refused: opening the replica's store, or a read through it.
    Engine(EngineError),
    /// A URL that names no object store this build can reach.
    Url {
        /// The URL given.
        url: String,
        /// Why it was refused.
        reason: String,
    },
    /// An operator's act the bucket cannot take as asked (an adoption over segments another
    /// history still holds under the same names), or a setting this build cannot honour
    /// ([`RemoteConfig::parquet`](crate::RemoteConfig) without the `parquet` feature); nothing
    /// was changed.
    Refused {
        /// Why, naming the objects.
        reason: String,
    },
    /// A Parquet object beside the segments ([`RemoteConfig::parquet`](crate::RemoteConfig))
    /// could not be written, put or deleted. The strata log is not affected: the publish that
    /// reports it put its `log/` object, and the next publish writes (or deletes) what is left.
    Parquet {
        /// The object's key (`parquet/STREAM/NAME.parquet`).
        key: String,
        /// What failed.
        reason: String,
    },
    /// A bound of [`RemoteConfig`](crate::RemoteConfig) was reached.
    Bound {
        /// What was refused, naming the bound.
        reason: String,
    },
}

impl RemoteError {
    pub(crate) fn object(key: &str, source: object_store::Error) -> RemoteError {
        match source {
            object_store::Error::NotFound { .. } => RemoteError::Missing {
                key: key.to_owned(),
            },
            source => RemoteError::Object {
                key: key.to_owned(),
                source,
            },
        }
    }

    pub(crate) fn unreadable(key: &str, reason: impl Into<String>) -> RemoteError {
        RemoteError::Unreadable {
            key: key.to_owned(),
            reason: reason.into(),
        }
    }
}

impl fmt::Display for RemoteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RemoteError::Object { key, source } => write!(f, "object {key}: {source}"),
            RemoteError::Missing { key } => write!(f, "object {key} is missing"),
            RemoteError::Unreadable { key, reason } => {
                write!(f, "object {key} is unreadable: {reason}")
            }
            RemoteError::Lost { key, reason } => write!(f, "object {key} is lost: {reason}"),
            RemoteError::Fenced {
                seq,
                epoch: Some(epoch),
                ours,
            } => write!(
                f,
                "fenced: writer epoch {epoch} published log record {seq} first \
                 (this writer is epoch {ours}); it publishes nothing more"
            ),
            RemoteError::Fenced {
                seq,
                epoch: None,
                ours,
            } => write!(
                f,
                "fenced: a newer writer than epoch {ours} has started; log record {seq} \
                 was not published"
            ),
            RemoteError::Identity { reason } => write!(f, "wrong bucket: {reason}"),
            RemoteError::Diverged { reason } => write!(f, "store and bucket diverged: {reason}"),
            RemoteError::Local(e) => write!(f, "local store: {e}"),
            RemoteError::Engine(e) => write!(f, "{e}"),
            RemoteError::Url { url, reason } => write!(f, "remote {url:?}: {reason}"),
            RemoteError::Refused { reason } => write!(f, "refused: {reason}"),
            RemoteError::Parquet { key, reason } => write!(f, "Parquet object {key}: {reason}"),
            RemoteError::Bound { reason } => write!(f, "{reason}"),
        }
    }
}

impl std::error::Error for RemoteError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RemoteError::Object { source, .. } => Some(source),
            RemoteError::Local(e) => Some(e),
            RemoteError::Engine(e) => Some(e),
            _ => None,
        }
    }
}

impl From<SegmentError> for RemoteError {
    fn from(e: SegmentError) -> Self {
        RemoteError::Local(e)
    }
}

impl From<EngineError> for RemoteError {
    fn from(e: EngineError) -> Self {
        RemoteError::Engine(e)
    }
}
