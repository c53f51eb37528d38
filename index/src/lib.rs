//! strata-index: the vocabulary the manifest speaks, and the state it implies.
//!
//! - [`TrackKey`]: a track tuple encoded once, as bytes whose order and prefixes are the tuple's,
//!   so a prefix selection is a range scan ([`select`]); a selection as text, with the comma
//!   that separates labels escaped within them ([`selection`]).
//! - The manifest [`Record`] schema, and its [`codec`]: a header and checksummed frames, parsed
//!   up to the first frame that fails its own check ([`parse_log`]).
//! - [`Catalog`]: the state derived from records by [`Catalog::apply`], the one function that
//!   both boot replay and live barriers call.
//!
//! This crate is pure: it does no I/O. Reading and writing the manifest file, syncing, and
//! quarantining a bad tail belong to `strata-segment` and `strata-recover`.

pub mod catalog;
pub mod codec;
pub mod generation;
pub mod key;
pub mod label;
pub mod lineage;
pub mod record;
pub mod selection;
#[cfg(test)]
mod strategies;

pub use catalog::{
    ApplyError, ApplyReason, Catalog, PartitionView, RawFloor, TrackFloors, Written, tiers,
};
pub use codec::{
    BODY_VERSION, FRAME_BODY_MAX, FRAME_HEADER_LEN, Fault, FaultReason, FrameFault, LOG_HEADER_LEN,
    LOG_MAGIC, LOG_VERSION, LOG_VERSION_MIN, ParsedLog, StrayFrame, TIME_FORMAT, check_header,
    decode_frame, decode_frame_in, encode_frame, format_of, log_header, log_header_of, parse_log,
    scan_frames, split_record,
};
pub use generation::{
    PREAMBLE_FORMAT, PREAMBLE_FRAME_LEN, WrittenWhole, generation_bytes, is_preamble, preamble_of,
    whole_state, written_whole,
};
pub use key::{KeyError, SEPARATOR, TRACK_DEPTH_MAX, TrackKey, select};
pub use label::{LABEL_BYTES_MAX, LabelError, validate_label};
pub use lineage::{
    Holds, LINEAGE_STATES_DEFAULT, LINEAGE_STATES_LIMIT, Lineage, LineageError, LineageRun,
    ManifestState, manifest_states, state_of,
};
pub use record::{
    DeclError, Entry, FIELDS_MAX, FieldDecl, FieldKind, FileEntry, FileName, Floor, History,
    LadderSpec, PartitionEntry, Preamble, Record, Retirement, StreamDecl, Tier, TimeUnit,
};
pub use selection::{
    LABEL_ESCAPE, LABEL_SEPARATOR, SelectionTextError, parse_selection, selection_text,
    selection_word, shell_word,
};
