//! The tier's settings, each with the bound it sets.

use std::time::Duration;

/// How the tier behaves: the grace period before deletes, the replica's cache budget, the size
/// of one ranged GET, the bounds on what a boot reads, and whether a publisher writes Parquet
/// beside the segments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteConfig {
    /// How long an object stays in the bucket after the record that retires it was published
    /// (default 10 minutes). A replica that polls more often than this never reads a deleted
    /// object; one that sleeps longer may find a segment gone, and its read then fails with
    /// `Unreadable` naming the object (never a wrong answer) until a `poll` moves it to the
    /// bucket's newest state. It must also exceed the longest a writer takes from checking its
    /// fence to putting its `log/` object (docs/remote.md, "Fencing").
    pub grace: Duration,
    /// The most bytes of segments a replica keeps in memory, least recently used evicted first
    /// (default 256 MiB). Segments the store's open readers still hold stay alive until their
    /// readers close (at most `Config::open_segments_max` of them), so a replica's memory is
    /// bounded by this plus those readers' segments.
    pub cache_bytes: u64,
    /// The length of one ranged GET (default 8 MiB): a segment is fetched in ranges of at most
    /// this many bytes.
    pub range_bytes: u64,
    /// The most `log/` objects one boot or poll reads (default 100,000): a bucket whose log
    /// since its newest reset is longer is refused, naming the count, rather than read without
    /// end.
    pub log_objects_max: u64,
    /// The most bytes of one `log/` object, and of the manifest one boot or poll assembles from
    /// them (default 1 GiB): an object or a manifest past it is refused (`RemoteError::Bound`)
    /// before it is read, rather than allocated. A store's manifest is rewritten long before
    /// (`Config::manifest_rewrite_bytes`), so only damage or another program reaches it.
    pub log_bytes_max: u64,
    /// Whether [`Publisher::publish`](crate::Publisher::publish) also writes, beside the
    /// segments, every live segment's raw rows of each stream as a Parquet object,
    /// `parquet/STREAM/NAME.parquet`, and deletes those of the segments a publish retires
    /// (default `false`; docs/remote.md, "Parquet beside the segments"). Needs the crate's
    /// `parquet` feature: built without it, a publisher asked for Parquet is refused when it
    /// attaches ([`RemoteError::Refused`](crate::RemoteError::Refused)), having changed
    /// nothing. With it off, a publisher neither writes nor deletes anything under
    /// `parquet/`. Replicas never read it.
    pub parquet: bool,
    /// With [`RemoteConfig::parquet`]: how long each stream's table (docs/remote.md, "The
    /// bucket as a table") keeps offering a version after a newer one replaced it (default 1
    /// hour). An object a version removes is deleted once this has passed since that version
    /// was committed, by the object store's clock, so a reader that started on an older
    /// version (a query that lists the log, then reads the files) finds every file it was
    /// given, and time travel reaches back this far. Zero deletes at the commit that removes
    /// it. The table's `delta.deletedFileRetentionDuration` says the same to other tools.
    pub table_retention: Duration,
    /// With [`RemoteConfig::parquet`]: every how many versions a table also gets a checkpoint
    /// (default 100; 0 never), the state at that version as one Parquet object that readers,
    /// and a publisher that attaches, replay from instead of from version 0. What one reader
    /// reads of the log is then at most a checkpoint and this many commits.
    pub table_checkpoint_every: u64,
}

impl Default for RemoteConfig {
    fn default() -> Self {
        RemoteConfig {
            grace: Duration::from_secs(600),
            cache_bytes: 256 << 20,
            range_bytes: 8 << 20,
            log_objects_max: 100_000,
            log_bytes_max: 1 << 30,
            parquet: false,
            table_retention: Duration::from_secs(3600),
            table_checkpoint_every: 100,
        }
    }
}

impl RemoteConfig {
    /// Sets [`RemoteConfig::grace`].
    #[must_use]
    pub fn grace(mut self, grace: Duration) -> Self {
        self.grace = grace;
        self
    }

    /// Sets [`RemoteConfig::cache_bytes`].
    #[must_use]
    pub fn cache_bytes(mut self, bytes: u64) -> Self {
        self.cache_bytes = bytes;
        self
    }

    /// Sets [`RemoteConfig::range_bytes`] (at least 1).
    #[must_use]
    pub fn range_bytes(mut self, bytes: u64) -> Self {
        self.range_bytes = bytes.max(1);
        self
    }

    /// Sets [`RemoteConfig::log_bytes_max`].
    #[must_use]
    pub fn log_bytes_max(mut self, max: u64) -> Self {
        self.log_bytes_max = max;
        self
    }

    /// Sets [`RemoteConfig::log_objects_max`].
    #[must_use]
    pub fn log_objects_max(mut self, max: u64) -> Self {
        self.log_objects_max = max;
        self
    }

    /// Sets [`RemoteConfig::table_retention`].
    #[must_use]
    pub fn table_retention(mut self, retention: Duration) -> Self {
        self.table_retention = retention;
        self
    }

    /// Sets [`RemoteConfig::table_checkpoint_every`].
    #[must_use]
    pub fn table_checkpoint_every(mut self, versions: u64) -> Self {
        self.table_checkpoint_every = versions;
        self
    }

    /// Sets [`RemoteConfig::parquet`].
    #[must_use]
    pub fn parquet(mut self, on: bool) -> Self {
        self.parquet = on;
        self
    }
}
