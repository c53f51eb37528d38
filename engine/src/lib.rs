//! strata-engine: the store.
//!
//! Declare streams when the store is opened; `publish` stages rows in memory (touching no file);
//! `seal` closes one barrier for everything staged — one segment file written two-phase, then one
//! manifest frame that claims it; `query` reads rows back in publish order from mapped files.

mod config;
pub mod conformance;
mod decl;
mod error;
mod follow;
pub mod fuzzing;
mod ladder;
mod lifetime;
mod memory;
mod metrics;
mod pins;
mod reader;
mod readers;
mod series;
#[cfg(feature = "served")]
mod served;
mod store;
mod typed;
mod value;
mod view;
mod write;

pub use config::{ARROW_BATCH_ROWS_LIMIT, Config, OPEN_SEGMENTS_LIMIT, READER_PROCESSES_LIMIT};
pub use decl::{DEFAULT_LADDER, POSITION_COLUMN, Stream, describe, parse_kind};
pub use error::{EngineError, FailedBarrier, HeldTrack, Narrowing, StreamIntact, TRACKS_NAMED_MAX};
pub use ladder::{LEVEL_BYTES_SHARE, LevelStorage};
pub use lifetime::{Lifetime, Retention};
pub use memory::{MemorySeries, RetiredTrack};
pub use metrics::Metrics;
pub use reader::Reader;
pub use readers::ManifestPosition;
pub use series::{BeneathWindow, Series};
#[cfg(feature = "served")]
pub use served::{ServeConfig, Served};
pub use store::Store;
pub use strata_index::{FieldKind, StreamDecl, TimeUnit};
pub use strata_levels::{Aggregate, Bucket, Cell, Num, Point, SurveyFill};
pub use strata_segment::{Resource, SegmentError};
pub use value::{Row, Value};
#[cfg(feature = "arrow")]
pub use view::arrow::{
    ARROW_DECLARATION_KEY, ARROW_STREAM_KEY, ARROW_TIME_ZONE, ArrowBatches, Timestamper,
    arrow_schema as arrow_schema_of, arrow_time_unit, arrow_timestamps, fold_to_arrow,
};
pub use view::read::StoredRow;
pub use view::runs::{ColumnRun, QueryRows, QueryRuns};
pub use view::survey::{FieldBuckets, FieldStat, Survey};
pub use view::{Snapshot, View};
pub use write::columns::{Column, Values};
pub use write::compact::CompactStep;
pub use write::retention::Swept;
pub use write::trim::Trimmed;
#[cfg(feature = "arrow")]
pub use {arrow_array, arrow_schema};
