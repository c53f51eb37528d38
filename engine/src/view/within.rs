//! Reads that select rows by axis range as well as by position range (#48): one meaning for a
//! range in every face. A position range is what a query always took; an axis range (a time
//! range, for a time axis) selects the rows whose axis value lies in it, and both together the
//! rows in both.
//!
//! The axis is non-decreasing within a partition, so a partition's rows inside an axis range
//! are consecutive in each segment: a segment whose recorded axis range misses it is never
//! opened, and each run is narrowed by two binary searches (`ColumnRun::within_axis`).
//!
//! Floors: a position range is checked as a query checks it. An axis range is checked against
//! the partitions' raw floors' axis values, as a percentile fold checks its range: a range
//! reaching beneath one is refused whole ([`EngineError::Floor`], in axis values). Above every
//! such floor, no retired row can lie in the range (a retired row's axis value is below its
//! partition's floor), so a segment straddling a floor is read, and its retired rows are
//! narrowed away with the rest.

use std::ops::{Bound, RangeBounds};

use crate::error::EngineError;
use crate::view::View;
use crate::view::narrow::Reach;
use crate::view::read::{inclusive, refuse_inverted};
use crate::view::runs::{QueryRows, QueryRuns};

impl View {
    /// The rows [`Store::query_runs`] answers for `positions`, of those whose axis value lies
    /// in `axis` too: an unbounded `axis` (`..`) is `query_runs` itself. A bounded one on a
    /// stream without an axis is refused ([`EngineError::BadRead`]). Refused, like a query,
    /// for a position range reaching beneath a raw floor, and for an axis range reaching
    /// beneath the axis value of one (see the module's page).
    pub fn query_runs_within<'s>(
        &'s self,
        stream: &str,
        selection: &[&str],
        positions: impl RangeBounds<u64>,
        axis: impl RangeBounds<u64>,
    ) -> Result<QueryRuns<'s>, EngineError> {
        let whole_axis = matches!(
            (axis.start_bound(), axis.end_bound()),
            (Bound::Unbounded, Bound::Unbounded)
        );
        if whole_axis {
            return self.query_runs(stream, selection, positions);
        }
        let prefix = self.selected(stream, selection)?;
        refuse_inverted(&positions, Reach::Positions)?;
        refuse_inverted(&axis, Reach::RawAxis)?;
        let decl = self.declaration(stream)?;
        if decl.axis.is_none() {
            return Err(EngineError::BadRead {
                reason: format!(
                    "stream {stream:?} declares no axis, so rows are selected by position only"
                ),
            });
        }
        let from_origin = matches!(positions.start_bound(), Bound::Unbounded);
        // A position range with a start is checked as a query checks it (its floor in
        // positions); one from the origin leaves the floor to the axis range's check.
        let span = if from_origin {
            inclusive(positions).map(|(lo, hi)| [lo, hi])
        } else {
            self.query_bounds(stream, selection, positions)?
                .map(|(_, _, lo, hi)| [lo, hi])
        };
        let (Some(span), Some((axis_lo, axis_hi))) = (span, inclusive(axis)) else {
            return Ok(QueryRuns::empty());
        };
        self.refuse_beneath_raw_axis(stream, &prefix, axis_lo)?;
        self.runs_within(decl, &prefix, span, None, Some([axis_lo, axis_hi]))
    }

    /// The rows [`Store::query_runs_within`] answers, one at a time (as [`Store::query_iter`]
    /// builds them from its runs).
    pub fn query_iter_within<'s>(
        &'s self,
        stream: &str,
        selection: &[&str],
        positions: impl RangeBounds<u64>,
        axis: impl RangeBounds<u64>,
    ) -> Result<QueryRows<'s>, EngineError> {
        let runs = self.query_runs_within(stream, selection, positions, axis)?;
        self.rows_of(stream, runs)
    }
}

#[cfg(feature = "arrow")]
impl View {
    /// The rows [`Store::query_runs_within`] answers, as Arrow batches (as
    /// [`Store::query_arrow`] builds them).
    pub fn query_arrow_within<'s>(
        &'s self,
        stream: &str,
        selection: &[&str],
        positions: impl RangeBounds<u64>,
        axis: impl RangeBounds<u64>,
    ) -> Result<crate::ArrowBatches<'s>, EngineError> {
        let runs = self.query_runs_within(stream, selection, positions, axis)?;
        crate::ArrowBatches::new(self, stream, runs)
    }
}
