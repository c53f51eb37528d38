//! strata-segment: where bytes meet the disk. The only crate that touches files.

mod cellpack;
pub mod error;
pub mod format;
pub mod fuzzing;
pub mod manifest;
pub mod names;
pub mod packed;
pub mod reader;
pub mod runs;
pub mod twophase;
pub mod validity;
pub mod vfs;
pub mod writer;

pub use error::{Resource, SegmentError};
pub use manifest::{
    ManifestWriter, create_store, manifest_generations, read_manifest, rewrite_manifest,
    truncate_manifest,
};
pub use packed::{ChunkCache, ChunkKey, Decoded, Packed};
pub use reader::{Axis, Column, PartitionInfo, SegmentReader, VarColumn};
pub use runs::{Sequence, SequenceIter};
pub use twophase::{SyncedFile, TempFile, write_two_phase};
pub use validity::Nulls;
pub use writer::{
    ColumnData, CountingSink, FieldCells, FileSink, MergeSource, MergeWriteError, PartitionInput,
    RowsInput, RowsWritten, SegmentSink, SegmentSummary, SegmentWriter, VarData, WrittenSegment,
};
