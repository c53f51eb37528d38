//! Store configuration: every bound has a name, units last.

use std::collections::BTreeMap;

use strata_index::{LINEAGE_STATES_DEFAULT, LINEAGE_STATES_LIMIT};
use strata_levels::SurveyFill;

use crate::error::EngineError;
use crate::ladder::LevelStorage;
use crate::lifetime::Retention;

/// The most segment readers `Config::open_segments_max` may ask to keep open. Each is one
/// memory map, and Linux allows a process 65,530 maps by default (`vm.max_map_count`), shared
/// with everything else the process maps and with readers a read holds past their eviction: a
/// cap above half of that would let the cache alone exhaust the maps it exists to protect.
pub const OPEN_SEGMENTS_LIMIT: usize = 32_768;

/// The most readers `Config::reader_processes_max` may admit: every removal of a retired file lists and
/// probes each reader's pin, so the bound keeps that a few milliseconds.
pub const READER_PROCESSES_LIMIT: usize = 4096;

/// The most rows `Config::arrow_batch_rows` may set for one Arrow batch (16 Mi rows).
pub const ARROW_BATCH_ROWS_LIMIT: usize = 1 << 24;

/// How a store behaves. `Config::default()` is a sane start; change what you need with the
/// builder methods, one per field and named after it:
///
/// ```
/// use strata_engine::Config;
///
/// let config = Config::default()
///     .staged_bytes_max(64 << 20)
///     .open_segments_max(256);
/// assert_eq!(config.open_segments_max, 256);
/// ```
///
/// The fields stay public to read (and to assign on a value you hold), but the struct is
/// `#[non_exhaustive]`: it cannot be built with a struct literal outside this crate, so a new
/// setting is not a breaking change.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Config {
    /// The most bytes publish may stage before it asks for a seal (`StagingFull`). Staging is
    /// what a crash loses, and what one barrier writes.
    pub staged_bytes_max: usize,
    /// When the manifest grows past this, and to at least twice the length of a snapshot of
    /// the live state (as of the last rewrite, or measured at open, or once compaction is
    /// quiet after retiring files), the next record rewrites it as that snapshot. The doubling
    /// keeps a large live state from being rewritten after every record: rewriting then costs
    /// O(1) amortized per byte of frames appended, and boot reads at most about twice the
    /// snapshot, or this many bytes. The snapshot lists only live files, so boot follows the
    /// live state, not the history. The default, 1 MiB, is a few milliseconds of boot.
    pub manifest_rewrite_bytes: u64,
    /// Live raw segments a partition may have once compaction has caught up: past it, a step
    /// merges the partition's newest (smallest) segments back down to it. Below it, the
    /// size-tiered policy still merges runs of similar size (docs/compaction.md).
    pub compact_files_max: usize,
    /// The fewest segments of similar size the size-tiered policy merges at once (at least 2;
    /// clamped to `compact_inputs_max`). Larger: fewer rewrites of each row, more files left.
    pub compact_inputs_min: usize,
    /// The most segments one compaction step merges (at least 2): what bounds a step's reads,
    /// its output and the time it holds the store.
    pub compact_inputs_max: usize,
    /// The most input bytes one compaction step reads: the sum, over the segments it merges, of
    /// the merged partition's bytes in each. With `compact_inputs_max` it bounds how long a step
    /// holds the store, which is what a served request or tick may wait behind. A segment that
    /// cannot join a run under the cap is left alone for good: while compaction keeps up with
    /// the barriers the count of live files then exceeds `compact_files_max` by at most about
    /// two per cap's worth of the partition's bytes, but of a backlog (many small segments
    /// sealed while nothing compacted) all but the newest cap's worth stays as it is, so
    /// compact a backlog with a larger cap (`strata compact` lifts it). A segment bigger than
    /// the cap is never merged. The default, 32 MiB, is a
    /// step of about 0.1 s of CPU, well inside `Served`'s default seal interval of 250 ms
    /// (measured in docs/compaction.md).
    /// 0 is refused at open (`EngineError::Config`).
    pub compact_step_bytes_max: u64,
    /// The most segment files the store keeps open (mapped) between reads. At the cap, opening
    /// another evicts the least recently used; a read that comes back to an evicted file maps
    /// it again (and verifies its blocks again), so a store with more files than the cap still
    /// answers every read, only slower. A read holds the files it is reading past their
    /// eviction, one per partition it is merging at a time, so the maps alive are at most this
    /// plus what reads in progress hold. The default, 1,024, is 1.6% of Linux's default map
    /// limit, leaving the rest to the embedding application, and keeps every live file of 64
    /// partitions open at compaction's default `compact_files_max` of 16. Must be between 1 and
    /// `OPEN_SEGMENTS_LIMIT`; anything else is refused at open (`EngineError::Config`).
    pub open_segments_max: usize,
    /// How long each stream keeps its raw rows and levels, by stream id; a stream not named
    /// keeps everything forever (the default). Sweeps apply it with compaction
    /// (`Store::compact`, `compact_step`, `Served`'s tick) and `Store::sweep`
    /// (docs/retention.md). A stream named here must be declared, and its retention must fit
    /// its declaration; anything else is refused at open (`EngineError::Config`).
    pub retention: BTreeMap<String, Retention>,
    /// Which plan answers a survey: the contract's finest level that fits the budget (the
    /// default, so that adapters written from the contract answer alike, bucket for bucket),
    /// or groups of a finer level that spend most of the budget (`SurveyFill::Spend`;
    /// docs/levels.md). Floors apply to either alike.
    pub survey_fill: SurveyFill,
    /// How many manifest states a rewrite keeps in the store's lineage: the frame boundaries
    /// of the generations before the current one, newest kept, each 8 bytes in every snapshot.
    /// What proves a copy of the store elsewhere (a bucket's newest `log/` object, #28) an
    /// earlier state of this store after its manifest was rewritten: a copy older than the
    /// oldest state kept can no longer be proven and is refused as such
    /// (strata-remote's `Diverged`). The default, 16,384 (`LINEAGE_STATES_DEFAULT`), is the
    /// barriers of about seven 1 MiB generations, 128 KiB in each snapshot. 0 keeps none; more
    /// than `LINEAGE_STATES_LIMIT` is refused at open (`EngineError::Config`).
    pub lineage_states_max: usize,
    /// How level cells are kept (docs/levels.md, "Which levels are stored"):
    /// `LevelStorage::Whole` stores every level in every file; `LevelStorage::Adaptive` stores
    /// a partition's levels in a file only from the lowest level whose cells cost at most an
    /// eighth of what its axis and stored columns take in the file (packed, where they are),
    /// and folds finer levels from the raw rows when they are
    /// read, which answers the same cells, bit for bit. Only what is written follows this:
    /// each file records from which level it stores its levels, and every read honours that,
    /// whatever the setting of the store reading it.
    pub level_storage: LevelStorage,
    /// Whether the axis and numeric columns are written packed (pco chunks of at most 10,000
    /// rows, segment format 5, docs/format.md), where that makes them smaller: the default.
    /// `false` writes them plain, 8 bytes a value, read with no decoding at all: a store that
    /// would rather spend bytes than the CPU of decoding them. Barriers and compaction outputs
    /// follow it alike; every file records how each block is held, and every read honours
    /// that, whatever the setting of the store reading it.
    pub pack_columns: bool,
    /// The most bytes of decoded packed chunks the store keeps for reads that come back to
    /// them (a fold's or a survey's edge cells, a search of the axis, a window read again): a
    /// read that finds its chunk here reads it in place instead of decoding it again. Queries
    /// and compaction, which stream through every chunk once, neither use nor fill it. Least recently used
    /// evicted; 0 keeps none. The default, 32 MiB, is about 400 chunks of 10,000 values.
    pub decoded_chunks_bytes_max: usize,
    /// The most bytes of decoded chunks of packed level cells (segment format 8: up to 1,024
    /// cells of 104 bytes a chunk) the store keeps for the surveys and folds that come back to
    /// them, apart from the columns' chunks, whose bulkier rows a zoomed read passes through and
    /// would push them out. Compaction neither uses nor fills it. Least recently used evicted;
    /// 0 keeps none. The default, 32 MiB, holds ~300,000 cells: on the zoom bench (10^8 rows,
    /// 600 windows) as fast as keeping every chunk decoded, where sharing the columns' bound
    /// made windows of 10^6-10^7 rows 3.5x slower at the median (their cells pushed out).
    pub decoded_cells_bytes_max: usize,
    /// The most readers in other processes (`Store::open_reader`) a store admits at once: one
    /// more is refused (`EngineError::TooManyReaders`). Each holds one pin file in `readers/`,
    /// which the writer lists and probes before it removes a retired file, so this bounds that
    /// work and the files. The reader's own count decides (readers that died are not counted).
    /// The default, 64; at least 1, at most `READER_PROCESSES_LIMIT`. (Not `ServeConfig`'s
    /// `readers_max`, which bounds the reads running at once inside one served process.)
    pub reader_processes_max: usize,
    /// The most rows in one Arrow batch a query answers (`Store::query_arrow`, the `arrow`
    /// feature): a batch ends at this many rows, so an export holds one batch, not the answer.
    /// The default, 65,536; at least 1, at most `ARROW_BATCH_ROWS_LIMIT`.
    pub arrow_batch_rows: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            staged_bytes_max: 256 << 20,
            manifest_rewrite_bytes: 1 << 20,
            compact_files_max: 16,
            compact_inputs_min: 4,
            compact_inputs_max: 16,
            compact_step_bytes_max: 32 << 20,
            open_segments_max: 1024,
            retention: BTreeMap::new(),
            survey_fill: SurveyFill::FinestLevel,
            lineage_states_max: LINEAGE_STATES_DEFAULT,
            level_storage: LevelStorage::default(),
            pack_columns: true,
            decoded_chunks_bytes_max: 32 << 20,
            decoded_cells_bytes_max: 32 << 20,
            reader_processes_max: 64,
            arrow_batch_rows: 1 << 16,
        }
    }
}

/// The builder: each method sets the field of its name and answers the config, so calls chain
/// from `Config::default()`. What each value means, and what is refused at open, is the
/// field's documentation.
impl Config {
    /// Sets [`Config::staged_bytes_max`].
    #[must_use]
    pub fn staged_bytes_max(mut self, staged_bytes_max: usize) -> Self {
        self.staged_bytes_max = staged_bytes_max;
        self
    }

    /// Sets [`Config::manifest_rewrite_bytes`].
    #[must_use]
    pub fn manifest_rewrite_bytes(mut self, manifest_rewrite_bytes: u64) -> Self {
        self.manifest_rewrite_bytes = manifest_rewrite_bytes;
        self
    }

    /// Sets [`Config::compact_files_max`].
    #[must_use]
    pub fn compact_files_max(mut self, compact_files_max: usize) -> Self {
        self.compact_files_max = compact_files_max;
        self
    }

    /// Sets [`Config::compact_inputs_min`].
    #[must_use]
    pub fn compact_inputs_min(mut self, compact_inputs_min: usize) -> Self {
        self.compact_inputs_min = compact_inputs_min;
        self
    }

    /// Sets [`Config::compact_inputs_max`].
    #[must_use]
    pub fn compact_inputs_max(mut self, compact_inputs_max: usize) -> Self {
        self.compact_inputs_max = compact_inputs_max;
        self
    }

    /// Sets [`Config::compact_step_bytes_max`].
    #[must_use]
    pub fn compact_step_bytes_max(mut self, compact_step_bytes_max: u64) -> Self {
        self.compact_step_bytes_max = compact_step_bytes_max;
        self
    }

    /// Sets [`Config::open_segments_max`].
    #[must_use]
    pub fn open_segments_max(mut self, open_segments_max: usize) -> Self {
        self.open_segments_max = open_segments_max;
        self
    }

    /// Sets [`Config::retention`] whole, replacing every stream's.
    #[must_use]
    pub fn retention(mut self, retention: BTreeMap<String, Retention>) -> Self {
        self.retention = retention;
        self
    }

    /// Sets the retention of one stream in [`Config::retention`], replacing its earlier one.
    #[must_use]
    pub fn retain(mut self, stream: impl Into<String>, retention: Retention) -> Self {
        self.retention.insert(stream.into(), retention);
        self
    }

    /// Sets [`Config::pack_columns`].
    #[must_use]
    pub fn pack_columns(mut self, pack_columns: bool) -> Self {
        self.pack_columns = pack_columns;
        self
    }

    /// Sets [`Config::decoded_cells_bytes_max`].
    #[must_use]
    pub fn decoded_cells_bytes_max(mut self, decoded_cells_bytes_max: usize) -> Self {
        self.decoded_cells_bytes_max = decoded_cells_bytes_max;
        self
    }

    /// Sets [`Config::decoded_chunks_bytes_max`].
    #[must_use]
    pub fn decoded_chunks_bytes_max(mut self, decoded_chunks_bytes_max: usize) -> Self {
        self.decoded_chunks_bytes_max = decoded_chunks_bytes_max;
        self
    }

    /// Sets [`Config::level_storage`].
    #[must_use]
    pub fn level_storage(mut self, level_storage: LevelStorage) -> Self {
        self.level_storage = level_storage;
        self
    }

    /// Sets [`Config::survey_fill`].
    #[must_use]
    pub fn survey_fill(mut self, survey_fill: SurveyFill) -> Self {
        self.survey_fill = survey_fill;
        self
    }

    /// Sets [`Config::reader_processes_max`].
    #[must_use]
    pub fn reader_processes_max(mut self, reader_processes_max: usize) -> Self {
        self.reader_processes_max = reader_processes_max;
        self
    }

    /// Sets [`Config::arrow_batch_rows`].
    #[must_use]
    pub fn arrow_batch_rows(mut self, arrow_batch_rows: usize) -> Self {
        self.arrow_batch_rows = arrow_batch_rows;
        self
    }

    /// Sets [`Config::lineage_states_max`].
    #[must_use]
    pub fn lineage_states_max(mut self, lineage_states_max: usize) -> Self {
        self.lineage_states_max = lineage_states_max;
        self
    }
}

impl Config {
    /// Refuses a bound no store can honour, before anything is opened.
    pub(crate) fn validate(&self) -> Result<(), EngineError> {
        if self.lineage_states_max > LINEAGE_STATES_LIMIT {
            return Err(EngineError::Config {
                setting: "lineage_states_max",
                reason: format!(
                    "is {}; a lineage holds at most {LINEAGE_STATES_LIMIT} states",
                    self.lineage_states_max
                ),
            });
        }
        if self.open_segments_max == 0 || self.open_segments_max > OPEN_SEGMENTS_LIMIT {
            return Err(EngineError::Config {
                setting: "open_segments_max",
                reason: format!(
                    "is {}; it must be between 1 and {OPEN_SEGMENTS_LIMIT} (each open segment \
                     is one memory map, and a read needs at least one)",
                    self.open_segments_max
                ),
            });
        }
        if self.reader_processes_max == 0 || self.reader_processes_max > READER_PROCESSES_LIMIT {
            return Err(EngineError::Config {
                setting: "reader_processes_max",
                reason: format!(
                    "is {}; it must be between 1 and {READER_PROCESSES_LIMIT}",
                    self.reader_processes_max
                ),
            });
        }
        if self.arrow_batch_rows == 0 || self.arrow_batch_rows > ARROW_BATCH_ROWS_LIMIT {
            return Err(EngineError::Config {
                setting: "arrow_batch_rows",
                reason: format!(
                    "is {}; it must be between 1 and {ARROW_BATCH_ROWS_LIMIT}",
                    self.arrow_batch_rows
                ),
            });
        }
        if self.compact_step_bytes_max == 0 {
            return Err(EngineError::Config {
                setting: "compact_step_bytes_max",
                reason: "is 0; a compaction step must be allowed to read at least one byte"
                    .to_owned(),
            });
        }
        Ok(())
    }
}
