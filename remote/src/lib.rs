//! strata-remote: the object-storage tier (#17). Sealed segments and the manifest's records in a
//! bucket, through the [`object_store`] crate; read replicas that boot from the bucket.
//!
//! - [`Publisher`] (the writer's side): after a barrier or a compaction step is durable locally,
//!   [`Publisher::publish`] uploads the segments the new records claim, then the records
//!   themselves as one create-only `log/S` object. A reader therefore never sees a claim before
//!   its data. One writer at a time: each takes an epoch, and a writer that loses the race for a
//!   `log/S` is [`RemoteError::Fenced`].
//! - [`Replica`] (the reader's side): boots a read-only [`Store`](strata_engine::Store) over the
//!   bucket ([`BucketVfs`]), fetching segments with ranged GETs into a cache bounded by
//!   [`RemoteConfig::cache_bytes`], each checked against the digest its record gives;
//!   [`Replica::poll`] follows new records. A replica never writes to the bucket.
//!
//! - Parquet beside the segments ([`RemoteConfig::parquet`], feature `parquet`): the publisher
//!   also writes each live segment's raw rows of each stream as `parquet/STREAM/NAME.parquet`
//!   ([`parquet_key`]), so query engines read the history in place.
//!
//! - [`TieredVfs`] (the writer's disk as a cache): a store opened through it may evict
//!   uploaded segments under a byte budget ([`TieredVfs::evict`]) and reads them back from the
//!   bucket, checked against their digests, into a bounded cache.
//!
//! docs/remote.md has the bucket's layout, the order of writes, and why that order is safe.
//!
//! Everything here is blocking: each [`Bucket`] drives its object store on a small runtime of its
//! own. Do not call it from inside an async runtime's worker thread (use `spawn_blocking`).

#![forbid(unsafe_code)]

mod bucket;
mod cache;
mod chain;
mod checkpoint;
mod config;
mod delta;
mod error;
mod logobj;
mod parquet;
mod publish;
mod replica;
mod tiered;

pub use object_store;

pub use bucket::{Bucket, conditional_s3};
pub use cache::SegmentCache;
pub use config::RemoteConfig;
pub use delta::{DELTA_LOG_DIR, TXN_APP_ID, table_checkpoint_key, table_log_key};
pub use error::RemoteError;
pub use logobj::{LogKind, LogObject};
pub use parquet::{PARQUET_DIR, escape_stream, parquet_glob, parquet_key, unescape_stream};
pub use publish::{Adoption, Collected, EPOCH_MAX, IDENTITY_FILE, Published, Publisher};
pub use replica::{BucketVfs, Replica};
pub use tiered::{EVICTED_DIR, Evicted, TieredVfs};

/// `Store::open_replica(url)`: a [`Replica`] of the bucket a URL names, with default settings.
///
/// ```no_run
/// use strata_engine::Store;
/// use strata_remote::OpenReplica;
///
/// let replica = Store::open_replica("s3://my-bucket/plant-7")?;
/// let mark = replica.store().watermark("capture", &["run_7"])?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait OpenReplica {
    /// Boots a replica from the bucket `url` names (see [`Bucket::open_url`]), with
    /// [`strata_engine::Config::default`] and [`RemoteConfig::default`].
    fn open_replica(url: &str) -> Result<Replica, RemoteError>;
}

impl OpenReplica for strata_engine::Store {
    fn open_replica(url: &str) -> Result<Replica, RemoteError> {
        Replica::open_url(
            url,
            strata_engine::Config::default(),
            RemoteConfig::default(),
        )
    }
}
