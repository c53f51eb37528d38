//! The adapter surface: what any durable series tier beneath a stream window answers.
//!
//! `Series` is the contract of "The Series Facility" without its host framework: rows fed in
//! publish order, raw rows back in publish order, budgeted buckets, statistics, the seal that
//! answers the position through which a stream is durable, and retention (`trim_to`, `retire`)
//! with the floors every read then answers to: refused whole with `Floor`, never short. The
//! served engine ([`crate::Served`]), the store itself ([`crate::Store`]) and the in-memory
//! reference ([`crate::MemorySeries`]) implement it, and [`crate::conformance`] holds them all
//! to it.

use std::fmt;
use std::future::Future;
use std::ops::Bound;

use strata_index::StreamDecl;
use strata_levels::Aggregate;

use crate::error::EngineError;
use crate::value::Row;
use crate::view::read::StoredRow;
use crate::view::survey::{FieldBuckets, FieldStat};

/// Why a read beneath the window was not answered. Each is a different next move for the caller.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BeneathWindow {
    /// Nothing is attached, or the task serving it is gone. Attach one, or stand on the window.
    Unserved,
    /// No tier retains whole what the read needs beneath `floor`: narrow the range.
    Floor {
        /// A position (or axis value) from which the read is answered whole: the raw floor
        /// for rows and percentiles, the folded floor of the levels a survey or level fold
        /// reads (for a level fold, the highest floor of the levels its range decomposes into,
        /// so a narrower start may be answered too).
        floor: u64,
    },
    /// The tier holds it but cannot read it (a missing file, a checksum mismatch): report, retry.
    Unreadable(String),
    /// A resource ran out beneath the tier (disk space, file descriptors, memory for maps):
    /// nothing is damaged; free it and retry.
    Exhausted(String),
    /// The request itself is not one the stream can answer: an unknown stream, a selection
    /// deeper than the track, a budget that does not buy one bucket per measured field. Not a
    /// wall beneath the window but a mistake at the call.
    Invalid(String),
}

impl fmt::Display for BeneathWindow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BeneathWindow::Unserved => f.write_str("unserved: no series tier is serving"),
            BeneathWindow::Floor { floor } => write!(f, "nothing is retained beneath {floor}"),
            BeneathWindow::Unreadable(why) => write!(f, "unreadable: {why}"),
            BeneathWindow::Exhausted(why) => write!(f, "exhausted: {why}"),
            BeneathWindow::Invalid(why) => write!(f, "invalid request: {why}"),
        }
    }
}

impl std::error::Error for BeneathWindow {}

impl From<EngineError> for BeneathWindow {
    fn from(error: EngineError) -> Self {
        match error {
            EngineError::Stopped => BeneathWindow::Unserved,
            EngineError::Floor { floor, .. } => BeneathWindow::Floor { floor },
            EngineError::Exhausted { .. } => BeneathWindow::Exhausted(error.to_string()),
            EngineError::Unreadable { source } => BeneathWindow::Unreadable(source.to_string()),
            // A poisoned store cannot answer until reopened; what poisoned it decides what the
            // caller should do about it (free space, or report damage).
            EngineError::Poisoned { ref cause } if cause.exhausted().is_some() => {
                BeneathWindow::Exhausted(error.to_string())
            }
            EngineError::Poisoned { cause } => {
                BeneathWindow::Unreadable(format!("poisoned: {cause}"))
            }
            EngineError::Storage(e) => BeneathWindow::Unreadable(e.to_string()),
            other => BeneathWindow::Invalid(other.to_string()),
        }
    }
}

/// What the `Series` surface answers for a selection under which nothing was ever sealed, or
/// a range given backwards: nothing, where the faces a person types into refuse them
/// ([`EngineError::UnknownTrack`], [`EngineError::InvertedRange`]). A host's tracks are typed
/// (a selection is a prefix of the declared tuple), so such a selection is a track with no
/// durable rows yet — the window holds them, and the splice reads the window alone — not a
/// typo; and a host computes its ranges from floors and watermarks, where one that closes
/// before it opens means "nothing here".
pub(crate) fn or_nothing<T>(
    answer: Result<T, EngineError>,
    nothing: impl FnOnce() -> T,
) -> Result<T, EngineError> {
    match answer {
        Err(EngineError::UnknownTrack { .. } | EngineError::InvertedRange { .. }) => Ok(nothing()),
        answer => answer,
    }
}

/// Every measured field of `decl` with no buckets: a survey of nothing.
pub(crate) fn no_buckets(decl: Option<&StreamDecl>) -> Vec<FieldBuckets> {
    decl.map(|decl| {
        decl.measured()
            .into_iter()
            .map(|f| FieldBuckets {
                field: decl.fields[usize::from(f)].name.clone(),
                buckets: Vec::new(),
            })
            .collect()
    })
    .unwrap_or_default()
}

/// Every measured field of `decl` with `kind`'s statistic of no rows: a fold of nothing.
pub(crate) fn no_stats(decl: Option<&StreamDecl>, kind: Aggregate) -> Vec<FieldStat> {
    decl.map(|decl| {
        decl.measured()
            .into_iter()
            .map(|f| FieldStat {
                field: decl.fields[usize::from(f)].name.clone(),
                value: kind.of_no_rows(),
            })
            .collect()
    })
    .unwrap_or_default()
}

/// A durable series tier. `track` is a selection's component labels, outermost first; an empty
/// slice narrows nothing. Positions bound `rows`; axis values bound `buckets` and `aggregate`.
/// Answering short is never permitted: a tier that does not hold the whole range says `Floor`,
/// one that cannot read what it holds says `Unreadable`.
pub trait Series: Send {
    /// Feeds rows of `stream` at `position` (staged; durable after the next seal). A refused
    /// batch stages nothing.
    fn publish(
        &mut self,
        stream: &str,
        position: u64,
        rows: Vec<Row>,
    ) -> impl Future<Output = Result<(), EngineError>> + Send;

    /// Durable rows in publish order, positions within the bounds.
    fn rows(
        &mut self,
        stream: &str,
        track: &[String],
        start: Bound<u64>,
        end: Bound<u64>,
    ) -> impl Future<Output = Result<Vec<StoredRow>, BeneathWindow>> + Send;

    /// Buckets per measured field (declaration order, ascending by `first.axis`), at most
    /// `budget` points in all (4 a bucket).
    fn buckets(
        &mut self,
        stream: &str,
        track: &[String],
        start: Bound<u64>,
        end: Bound<u64>,
        budget: u64,
    ) -> impl Future<Output = Result<Vec<FieldBuckets>, BeneathWindow>> + Send;

    /// One statistic per measured field.
    fn aggregate(
        &mut self,
        stream: &str,
        track: &[String],
        start: Bound<u64>,
        end: Bound<u64>,
        kind: Aggregate,
    ) -> impl Future<Output = Result<Vec<FieldStat>, BeneathWindow>> + Send;

    /// Makes everything staged durable (one barrier for every stream), then answers the position
    /// through which `stream` is durable (`None`: nothing yet). With nothing staged it costs no
    /// barrier, which is how a host reads the watermark at boot.
    fn seal(
        &mut self,
        stream: &str,
        track: &[String],
    ) -> impl Future<Output = Result<Option<u64>, BeneathWindow>> + Send;

    /// Makes everything staged durable (as `seal` does), then retires every row of `stream` at
    /// or below `horizon` (at most the watermark), in every partition: reads reaching beneath
    /// the floor it leaves answer `Floor`, never short. Levels outlive the rows, so buckets and
    /// level statistics still answer beneath it; percentiles do not. Floors only rise: a
    /// horizon at or below an earlier one changes nothing. Answers the stream's floor after:
    /// the lowest position from which `rows` of the whole stream answers (`None`: no floor).
    /// A horizon above the watermark is `Invalid`.
    fn trim_to(
        &mut self,
        stream: &str,
        horizon: u64,
    ) -> impl Future<Output = Result<Option<u64>, BeneathWindow>> + Send;

    /// Makes everything staged durable (as `seal` does), then ends every partition under
    /// `track` with anything live: its rows and its levels are retired, and each floor rises
    /// past everything it held (the position floor to one past the stream's last position, the
    /// axis floors past its highest axis value, each level's to the start of the cell after the
    /// one holding it). Reads of it reaching beneath answer `Floor`; a later row above the
    /// floors starts the track again. Answers the selection's floor after: the lowest position
    /// from which `rows` of `track` answers (`None`: no floor).
    fn retire(
        &mut self,
        stream: &str,
        track: &[String],
    ) -> impl Future<Output = Result<Option<u64>, BeneathWindow>> + Send;
}
