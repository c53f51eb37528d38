//! strata: an embedded, log-structured segment engine for partitioned numeric time series.
//!
//! This crate is the facade. Create a [`Store`] (or open one: [`Store::open`] refuses a folder
//! holding no store, [`Store::open_read_only`] writes nothing), declare streams with
//! [`Stream`], `publish` rows (staged in memory), `seal` them durable with one barrier, and
//! `query` them back in publish order. The workspace crates are re-exported for their finer-grained pieces.
//!
//! ```
//! use strata::{Config, FieldKind, Store, Stream, Value};
//!
//! let dir = tempfile::tempdir()?;
//! let capture = Stream::new("capture")
//!     .field("run", FieldKind::Str)
//!     .field("t", FieldKind::U64)
//!     .field("value", FieldKind::F64)
//!     .track(["run"])
//!     .axis("t")
//!     .build()?;
//! let mut store = Store::create(dir.path(), Config::default(), &[capture])?;
//! let row = vec![Value::Str("run_7".into()), Value::U64(10), Value::F64(0.5)];
//! store.publish("capture", 1, &[row.clone()])?;
//! store.seal()?;
//! let rows = store.query("capture", &["run_7"], ..)?;
//! assert_eq!(rows[0].values, row);
//! drop(store);
//! let reader = Store::open_read_only(dir.path(), Config::default(), &[])?;
//! assert_eq!(reader.query("capture", &["run_7"], ..)?, rows);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub use strata_engine::{
    ARROW_BATCH_ROWS_LIMIT, Aggregate, BeneathWindow, Bucket, Cell, Column, ColumnRun, CompactStep,
    Config, DEFAULT_LADDER, EngineError, FailedBarrier, FieldBuckets, FieldKind, FieldStat,
    HeldTrack, LEVEL_BYTES_SHARE, LevelStorage, Lifetime, ManifestPosition, MemorySeries, Metrics,
    Narrowing, Num, OPEN_SEGMENTS_LIMIT, POSITION_COLUMN, Point, QueryRows, QueryRuns,
    READER_PROCESSES_LIMIT, Reader, Resource, Retention, Row, SegmentError, Series, Snapshot,
    Store, StoredRow, Stream, StreamDecl, StreamIntact, Survey, SurveyFill, Swept,
    TRACKS_NAMED_MAX, TimeUnit, Trimmed, Value, Values, View, conformance, describe, parse_kind,
};
/// Arrow out of the store (docs/formats.md): the `arrow` feature, off by default, which brings
/// arrow-rs's array and schema crates (re-exported as `strata::arrow_array` and
/// `strata::arrow_schema`, so an embedder names the same versions).
#[cfg(feature = "arrow")]
pub use strata_engine::{
    ARROW_DECLARATION_KEY, ARROW_STREAM_KEY, ARROW_TIME_ZONE, ArrowBatches, Timestamper,
    arrow_array, arrow_schema, arrow_schema_of, arrow_time_unit, arrow_timestamps, fold_to_arrow,
};
/// The store owned by a supervisor behind bounded lanes (docs/embedding.md): the `served`
/// feature, on by default, which brings tokio.
#[cfg(feature = "served")]
pub use strata_engine::{ServeConfig, Served};
pub use strata_index as index;
pub use strata_levels as levels;
pub use strata_recover as recover;
/// The object-storage tier (docs/remote.md): the `remote` feature, off by default.
#[cfg(feature = "remote")]
pub use strata_remote as remote;
pub use strata_segment as segment;

/// docs/embedding.md's Rust examples (its complete `Served` program among them), compiled and
/// run as doc-tests, so the guide cannot drift from the API. (README.md's program writes a store
/// into the folder it runs in, so it is not a doc-test: `scripts/readme_check.py` builds it, and
/// these, as projects of their own, from the text a reader sees.)
#[cfg(doctest)]
#[doc = include_str!("../docs/embedding.md")]
pub struct EmbeddingGuideExamples;
