//! What a store has done since it was opened: the writer's counts and the gauges every read
//! of the opening shares ([`crate::View::metrics`], [`crate::Store::metrics`]).

/// What the store has done since it was opened, measured as it happened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Metrics {
    /// Barriers closed (seals that wrote something).
    pub barriers: u64,
    /// Rows those barriers made durable.
    pub rows_sealed: u64,
    /// Segment bytes those barriers wrote.
    pub bytes_sealed: u64,
    /// File syncs (fdatasync) issued, boot's included.
    pub file_syncs: u64,
    /// Directory syncs (fsync) issued, boot's included.
    pub dir_syncs: u64,
    /// Syncs issued by barriers alone.
    pub barrier_syncs: u64,
    /// Level cells read by surveys and level folds.
    pub cells_read: u64,
    /// Segment readers open (mapped) in the store's cache now: at most
    /// `Config::open_segments_max`.
    pub segments_open: u64,
    /// Segment readers evicted from the cache to keep it under its cap.
    pub segment_evictions: u64,
    /// Segment maps alive now: the cache's, plus evicted ones a read in progress still holds.
    pub segments_mapped: u64,
    /// The most segment maps alive at once since the store was opened.
    pub segments_mapped_peak: u64,
    /// Bytes of decoded packed chunks kept for reads that come back to them now: at most
    /// `Config::decoded_chunks_bytes_max`.
    pub decoded_chunks_bytes: u64,
    /// Reads of a packed chunk answered from those kept.
    pub decoded_chunk_hits: u64,
    /// Reads of a packed chunk that decoded it (and offered it to be kept).
    pub decoded_chunk_misses: u64,
    /// Decoded chunks let go to keep them under their bound.
    pub decoded_chunk_evictions: u64,
    /// Bytes of decoded chunks of packed level cells (segment format 8) kept for reads that
    /// come back to them now, apart from the columns': at most `Config::decoded_cells_bytes_max`.
    pub decoded_cells_bytes: u64,
    /// Reads of a packed chunk of cells answered from those kept.
    pub decoded_cell_hits: u64,
    /// Reads of a packed chunk of cells that decoded it (and offered it to be kept).
    pub decoded_cell_misses: u64,
    /// Decoded chunks of cells let go to keep them under their bound.
    pub decoded_cell_evictions: u64,
    /// Compaction steps taken (each one `Merge` record).
    pub compaction_steps: u64,
    /// Bytes of the partitions those steps read (their inputs' partition blocks).
    pub compaction_bytes_read: u64,
    /// Segment bytes those steps wrote. Over `bytes_sealed`, the write amplification
    /// compaction adds to the barriers' own writes.
    pub compaction_bytes_written: u64,
    /// Tiers (raw or one level, of one partition of one segment) retired by sweeps, `retire`
    /// and `trim_to`.
    pub tiers_retired: u64,
    /// Barriers a `Served` supervisor closed because staging reached its size trigger
    /// (`ServeConfig::seal_at_staged_share`); also counted in `barriers`. 0 for a store used
    /// directly.
    pub size_barriers: u64,
    /// Times a `Served` supervisor held publishes in their lane because staging had reached
    /// its size trigger while a barrier was in flight (both buffers the bound allows full):
    /// the back-pressure that keeps memory bounded. 0 for a store used directly.
    pub backpressure_waits: u64,
    /// Reads a `Served` supervisor started while a barrier was in flight on its worker: each
    /// ran on a snapshot and waited for none of the barrier's syncs (reads during a compaction
    /// step are not counted). Counted when that barrier lands, with it in `barriers`, so a
    /// read beside a barrier still in flight is in neither yet. 0 for a store used directly.
    pub reads_during_barriers: u64,
    /// Snapshots alive now ([`Store::snapshot`], and `Served`'s reads).
    pub snapshots: u64,
    /// Retired files waiting now for the snapshots that may read them to be let go.
    pub removals_pending: u64,
}
