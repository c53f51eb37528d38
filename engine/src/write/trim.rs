//! `trim_to`: retiring every row of a stream at or below a horizon, as one manifest record of
//! raw floors and retirements (docs/retention.md).
//!
//! The record holds, for each partition that ever held a row at or below the horizon, a raw
//! `Floor` (position one past the horizon; for an axial stream, the lowest axis value from which
//! every row is still held), and a `Retire` of the raw tier of every live segment of the
//! partition wholly at or below the horizon. Levels are not retired: they outlive the rows, so
//! surveys and level folds keep answering. A segment that straddles the horizon stays live: its
//! rows beneath the floor are still on disk, and no read reaches them (reads beneath a floor are
//! refused whole).
//!
//! As at a barrier, the record is applied to the catalog before it is written; a failed append
//! poisons the store. Files the record leaves wholly retired (only those without levels, since
//! levels are kept) are removed once it is durable, then `seg/` is synced, as compaction does.

use std::collections::BTreeSet;

use strata_index::{
    FileName, Floor, PartitionEntry, PartitionView, RawFloor, Retirement, Tier, TrackKey,
};

use crate::error::EngineError;
use crate::store::Store;
use crate::view::read::unreadable;

/// What `trim_to` did, and the floors it leaves.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Trimmed {
    /// The stream.
    pub stream: String,
    /// The horizon asked for: rows at or below it are retired.
    pub horizon: u64,
    /// The raw floors this trim recorded (those it raised), in track-key order. Empty when the
    /// trim was a no-op (a horizon at or below an earlier one, or a stream with nothing there).
    pub recorded: Vec<(TrackKey, RawFloor)>,
    /// Every raw floor of the stream after the trim, in track-key order.
    pub floors: Vec<(TrackKey, RawFloor)>,
    /// Segments whose raw tier of a partition of the stream this trim retired, by name.
    pub retired: Vec<FileName>,
    /// Of those, the files now wholly retired, and so removed (rare while levels are kept: only
    /// files holding no level tier).
    pub removed: Vec<FileName>,
}

impl Store {
    /// Retires every row of `stream` at or below `horizon`, in every partition, as one manifest
    /// record: per partition that ever held a row at or below it, a raw floor (one past the
    /// horizon; for an axial stream, the lowest axis value from which every row is held) and the
    /// retirement of the raw tier of each of its segments wholly at or below the horizon.
    /// Positions are never renumbered; a read reaching beneath a floor answers
    /// [`EngineError::Floor`]. Levels are kept, so surveys and level folds still answer.
    ///
    /// Refused (nothing recorded) for a horizon above the stream's watermark (rows not yet
    /// durable) and while rows of the stream are staged (seal first). A horizon at or below an
    /// earlier one is a no-op that answers the current floors. A failed write poisons the store.
    pub fn trim_to(&mut self, stream: &str, horizon: u64) -> Result<Trimmed, EngineError> {
        self.check_writable("trim_to")?;
        let state = crate::store::stream_state(&self.streams, stream)?;
        let refuse = |reason: String| EngineError::Trim {
            stream: stream.to_owned(),
            horizon,
            reason,
        };
        match self.catalog.watermark(stream) {
            Some(watermark) if horizon <= watermark => {}
            Some(watermark) => {
                return Err(refuse(format!(
                    "the horizon is above the stream's watermark {watermark}: rows there are \
                     not durable yet"
                )));
            }
            None => {
                return Err(refuse(
                    "nothing of the stream is durable yet (no watermark)".to_owned(),
                ));
            }
        }
        // Floors only rise: the plan raises a partition's floor only where the horizon is
        // above it (per partition: a `retire` of one track, whose floor is one past the last
        // position, leaves every other track's trimmable), and a plan raising nothing records
        // nothing.
        let staged = !state.staged.is_empty();
        let axial = state.decl.axis.is_some();
        let (floors, retires) = self.plan_trim(stream, horizon, axial)?;
        if staged && (!floors.is_empty() || !retires.is_empty()) {
            return Err(refuse(
                "rows of the stream are staged and not yet sealed; seal first".to_owned(),
            ));
        }
        let mut retired: Vec<FileName> = retires.iter().map(|r| r.file).collect();
        retired.sort_unstable();
        retired.dedup();
        let recorded: Vec<(TrackKey, RawFloor)> = floors
            .iter()
            .map(|f| {
                let raw = RawFloor {
                    position: f.position.unwrap_or_default(),
                    axis: f.axis,
                };
                (f.track.clone(), raw)
            })
            .collect();
        let mut removed = Vec::new();
        if !floors.is_empty() || !retires.is_empty() {
            removed = self.commit_retirement(stream, floors, retires)?.removed;
        }
        let floors = self
            .catalog
            .floors(stream, &TrackKey::ROOT)
            .filter_map(|(track, floors)| Some((track.clone(), floors.raw?)))
            .collect();
        Ok(Trimmed {
            stream: stream.to_owned(),
            horizon,
            recorded,
            floors,
            retired,
            removed,
        })
    }

    /// The floors a trim of `stream` to `horizon` raises, and the raw tiers it retires.
    fn plan_trim(
        &self,
        stream: &str,
        horizon: u64,
        axial: bool,
    ) -> Result<(Vec<Floor>, Vec<Retirement>), EngineError> {
        // Every partition with something live, and every one with a floor (retired whole, or
        // trimmed before): a partition that ever held a row at or below the horizon is one of
        // them.
        let mut tracks: BTreeSet<TrackKey> = self
            .catalog
            .partitions(stream, &TrackKey::ROOT)
            .map(|view| view.track().clone())
            .collect();
        tracks.extend(
            self.catalog
                .floors(stream, &TrackKey::ROOT)
                .map(|(track, _)| track.clone()),
        );
        // The floor a catalog accepts: never beyond one past the stream's last position.
        let bound = self
            .catalog
            .last_position(stream)
            .map_or(0, |last| last.saturating_add(1));
        let position = horizon.saturating_add(1).min(bound);
        let mut floors = Vec::new();
        let mut retires = Vec::new();
        for track in tracks {
            let existing = self.catalog.floors_of(stream, &track).and_then(|f| f.raw);
            // Trimmed (or retired) at or above this horizon already: nothing changes here.
            if existing.is_some_and(|f| f.position >= position) {
                continue;
            }
            // Per partition: the axis value of its last row at or below the horizon and of its
            // first row above it, among its live raw rows (rows retired earlier lie beneath the
            // existing floor, which the new one is never below).
            let mut held_before = existing.is_some();
            let mut last_trimmed: Option<u64> = None;
            let mut first_kept: Option<u64> = None;
            let view = self
                .catalog
                .partitions(stream, &track)
                .find(|view| view.track() == &track);
            let segments: Vec<_> = view
                .map(|view| {
                    let segments = view.segments(Tier::Raw);
                    segments.map(|(name, entry)| (view, name, entry)).collect()
                })
                .unwrap_or_default();
            for (view, name, entry) in segments {
                let [lo, hi] = entry.positions;
                if lo > horizon {
                    if first_kept.is_none() {
                        first_kept = entry.axis.map(|[axis_lo, _]| axis_lo);
                    }
                    break;
                }
                held_before = true;
                if hi <= horizon {
                    last_trimmed = entry.axis.map(|[_, axis_hi]| axis_hi);
                    retires.push(Retirement {
                        file: name,
                        stream: stream.to_owned(),
                        track: track.clone(),
                        tier: Tier::Raw,
                    });
                    continue;
                }
                // The one segment that straddles the horizon (positions never decrease along a
                // partition's segments): its rows either side, from the file.
                if axial {
                    let [trimmed, kept] =
                        self.straddle_axes(&view, name, entry, stream, horizon)?;
                    last_trimmed = Some(trimmed);
                    first_kept = Some(kept);
                }
                break;
            }
            if !held_before {
                continue;
            }
            let axis = if axial {
                // Every row at or above it is held: past the last row trimmed, and not below
                // the first row kept (a floor is the lowest value still held).
                let candidates = [
                    last_trimmed.map(|a| a.saturating_add(1)),
                    first_kept,
                    existing.and_then(|f| f.axis),
                ];
                candidates.into_iter().flatten().max()
            } else {
                None
            };
            let raised = match existing {
                None => true,
                Some(f) => position > f.position || axis > f.axis,
            };
            if raised {
                floors.push(Floor {
                    stream: stream.to_owned(),
                    track,
                    tier: Tier::Raw,
                    position: Some(existing.map_or(position, |f| f.position.max(position))),
                    axis,
                });
            }
        }
        Ok((floors, retires))
    }

    /// The axis values of the last row at or below `horizon` and of the first row above it, in
    /// segment `name`, whose partition (`view`) straddles the horizon.
    fn straddle_axes(
        &self,
        view: &PartitionView<'_>,
        name: FileName,
        entry: &PartitionEntry,
        stream: &str,
        horizon: u64,
    ) -> Result<[u64; 2], EngineError> {
        let (reader, part_idx) = self.partition_in(view, name, stream)?;
        self.check_partition(&reader, part_idx, entry)?;
        let positions = reader.positions(part_idx).map_err(unreadable)?;
        let axis = reader.axis(part_idx).map_err(unreadable)?;
        let axis_len = axis.as_ref().map_or(0, strata_segment::Axis::len);
        let split = positions.upper_bound(horizon);
        if axis_len != positions.len() || split == 0 || split == positions.len() {
            return Err(EngineError::Unreadable {
                source: strata_segment::SegmentError::mismatch(
                    reader.path(),
                    format!(
                        "partition {:?} of {stream:?} does not hold the rows either side of \
                         position {horizon} its record says",
                        view.track()
                    ),
                ),
            });
        }
        let axis = axis
            .expect("an axis as long as the positions")
            .values(split - 1..split + 1)
            .map_err(unreadable)?;
        Ok([axis[0], axis[1]])
    }
}
