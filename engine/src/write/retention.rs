//! Retention: the lifetimes a store is assembled with, the sweeps that apply them, `retire` of
//! whole tracks, and the folded floors level reads answer to (docs/retention.md).
//!
//! A sweep reads the catalog alone (no file): per partition, every tier of every live segment
//! but the newest whose lifetime has run out is retired, and the floors those retirements move
//! are recorded in the same record. A tier's lifetime runs out when the segment's newest row is
//! more than the lifetime behind the stream's newest (axis value, or position). The top level a
//! segment stores also answers every coarser level (a read lifts its single top cell), so it
//! lives as long as the coarsest level does.
//!
//! Floors come from these records and nothing else. A level's floor is the start of the first
//! cell of that level no retired tier contributed to, so every cell at or above it is whole: a
//! read whose first cell starts beneath it is refused, and one at or above it answers exactly
//! what it answered before the retirement.

use std::collections::BTreeMap;

use strata_index::{
    Entry, FRAME_BODY_MAX, FileName, Floor, Record, Retirement, Tier, TrackKey, split_record,
};
use strata_levels::{LEVELS_MAX, Ladder};

use crate::error::EngineError;
use crate::ladder::ladder_of;
use crate::store::{Store, stream_floor, stream_state};
use crate::view::floors::{effective_level_floor, past_cell};

/// What one sweep or `retire` recorded for one stream.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Swept {
    /// The stream.
    pub stream: String,
    /// The floors the record raised, raw and level, per partition.
    pub floors: Vec<Floor>,
    /// The tiers it retired.
    pub retired: Vec<Retirement>,
    /// Files the record left wholly retired, and so removed.
    pub removed: Vec<FileName>,
}

impl Swept {
    /// A record of nothing retired in `stream`.
    pub(crate) fn nothing(stream: &str) -> Swept {
        Swept {
            stream: stream.to_owned(),
            floors: Vec::new(),
            retired: Vec::new(),
            removed: Vec::new(),
        }
    }
}

impl Store {
    /// Applies the configured retention (`Config::retention`) once: for each stream with
    /// something past its lifetime, one record retiring those tiers and raising the floors
    /// they leave; files left wholly retired are removed once it is durable. A partition's
    /// newest live segment is never retired by a sweep (its watermark is derived from what is
    /// stored). Compaction (`compact`, `compact_step`, `Served`'s tick) sweeps before it
    /// merges; this is the sweep alone. Refused while the store is poisoned; a failed write
    /// poisons it.
    pub fn sweep(&mut self) -> Result<Vec<Swept>, EngineError> {
        self.check_writable("sweep")?;
        let mut swept = Vec::new();
        let streams: Vec<String> = self.config.retention.keys().cloned().collect();
        for stream in streams {
            if !self.streams.contains_key(&stream) {
                continue;
            }
            let (floors, retired) = self.plan_sweep(&stream);
            if floors.is_empty() && retired.is_empty() {
                continue;
            }
            swept.push(self.commit_retirement(&stream, floors, retired)?);
        }
        self.writer.sweep_due = false;
        Ok(swept)
    }

    /// Retires every partition of `stream` under `selection` (a track prefix) outright: every
    /// tier of every live segment, its newest too — the exception to the sweep's rule, on
    /// purpose: a retired track has ended. Its floors rise past everything it held: the raw
    /// floor to one past the stream's last position and past the partition's newest axis
    /// value, each level's past the cell holding it. Reads reaching beneath them answer
    /// `Floor`; an unnarrowed read of the stream takes the highest floor of any track.
    ///
    /// A later publish to a retired track is accepted above its floor (a higher axis value, a
    /// position above the stream's last): the track starts again, and its retired history
    /// stays retired. Refused, with nothing recorded: while rows of the stream are staged
    /// (seal first); with no track on a stream that has track fields (`RetireNamesNoTrack`:
    /// ending every track is [`Store::retire_all`]); a selection under which nothing was
    /// sealed (`UnknownTrack`) or nothing is live (`NothingToRetire`).
    pub fn retire(&mut self, stream: &str, selection: &[&str]) -> Result<Swept, EngineError> {
        self.check_writable("retire")?;
        let has_tracks = !stream_state(&self.streams, stream)?.decl.track.is_empty();
        if selection.is_empty() && has_tracks {
            return Err(EngineError::RetireNamesNoTrack {
                stream: stream.to_owned(),
            });
        }
        self.retire_under(stream, selection)
    }

    /// Retires every track of `stream`, as [`Store::retire`] retires those under a selection:
    /// asked for by name, since it ends the stream's whole history. Refused (`NothingToRetire`)
    /// when nothing of it is live.
    pub fn retire_all(&mut self, stream: &str) -> Result<Swept, EngineError> {
        self.check_writable("retire")?;
        self.retire_under(stream, &[])
    }

    fn retire_under(&mut self, stream: &str, selection: &[&str]) -> Result<Swept, EngineError> {
        let prefix = self.selected(stream, selection)?;
        if !self.streams[stream].staged.is_empty() {
            return Err(EngineError::BadRead {
                reason: format!(
                    "cannot retire tracks of stream {stream:?}: rows of it are staged and not \
                     yet sealed; seal first (nothing was recorded)"
                ),
            });
        }
        let decl = &self.streams[stream].decl;
        let ladder = decl.axis.is_some().then(|| ladder_of(decl));
        let position = self
            .catalog
            .last_position(stream)
            .map_or(0, |last| last.saturating_add(1));
        let mut floors = Vec::new();
        let mut retired = Vec::new();
        for view in self.catalog.partitions(stream, &prefix) {
            let live = view.live_segments();
            let mut axis_hi: Option<u64> = None;
            let mut top = 0;
            for (name, entry, _) in &live {
                axis_hi = axis_hi.max(entry.axis.map(|[_, hi]| hi));
                top = top.max(entry.n_levels.saturating_sub(1));
                for tier in strata_index::tiers(entry.n_levels) {
                    if view.is_live(*name, tier) {
                        retired.push(Retirement {
                            file: *name,
                            stream: stream.to_owned(),
                            track: view.track().clone(),
                            tier,
                        });
                    }
                }
            }
            let existing = self.catalog.floors_of(stream, view.track());
            let past = ladder
                .as_ref()
                .map(|_| axis_hi.map_or(0, |hi| hi.saturating_add(1)));
            floors.push(raised_raw_floor(
                stream,
                view.track(),
                existing,
                position,
                past,
            ));
            if let (Some(ladder), Some(hi)) = (&ladder, axis_hi)
                && live.iter().any(|(_, e, _)| e.n_levels > 0)
            {
                let served = |_: u8| Some(hi);
                floors.extend(level_floors(
                    stream,
                    view.track(),
                    ladder,
                    existing,
                    top,
                    served,
                ));
            }
        }
        if retired.is_empty() {
            return Err(EngineError::NothingToRetire {
                stream: stream.to_owned(),
                selection: selection.iter().map(|&l| l.to_owned()).collect(),
            });
        }
        self.commit_retirement(stream, floors, retired)
    }

    /// What a sweep of `stream` retires, and the floors it raises: from the catalog alone.
    fn plan_sweep(&self, stream: &str) -> (Vec<Floor>, Vec<Retirement>) {
        let Some(retention) = self.config.retention.get(stream) else {
            return (Vec::new(), Vec::new());
        };
        let Some(last_position) = self.catalog.last_position(stream) else {
            return (Vec::new(), Vec::new());
        };
        let decl = &self.streams[stream].decl;
        let ladder = decl.axis.is_some().then(|| ladder_of(decl));
        let newest_axis = self
            .catalog
            .axis_range(stream, &TrackKey::ROOT)
            .map(|[_, hi]| hi);
        let mut floors = Vec::new();
        let mut retired = Vec::new();
        for view in self.catalog.partitions(stream, &TrackKey::ROOT) {
            let live = view.live_segments();
            // The newest live segment is never swept: the partition's watermark and its
            // position are derived from what is stored.
            let Some((_, older)) = live.split_last() else {
                continue;
            };
            let top = live
                .iter()
                .map(|(_, e, _)| e.n_levels.saturating_sub(1))
                .max()
                .unwrap_or(0);
            // Per level, the newest axis value of an expired tier that answered it; the raw
            // floor past the newest expired raw tier.
            let mut served: BTreeMap<u8, u64> = BTreeMap::new();
            let mut raw: Option<(u64, Option<u64>)> = None;
            let mut retired_here = Vec::new();
            for (name, entry, _) in older {
                let axis_hi = entry.axis.map(|[_, hi]| hi);
                let mut all_expired = true;
                let mut live_tiers = Vec::new();
                for tier in strata_index::tiers(entry.n_levels) {
                    if !view.is_live(*name, tier) {
                        continue;
                    }
                    live_tiers.push(tier);
                    let lifetime = retention.of_tier(tier, entry.n_levels);
                    if !lifetime.expired(axis_hi, entry.positions[1], newest_axis, last_position) {
                        all_expired = false;
                        continue;
                    }
                    match tier {
                        Tier::Raw => {
                            let position = entry.positions[1].saturating_add(1);
                            let axis = axis_hi.map(|hi| hi.saturating_add(1));
                            raw =
                                Some(raw.map_or((position, axis), |(p, a)| {
                                    (p.max(position), a.max(axis))
                                }));
                        }
                        Tier::Level(k) => {
                            let Some(hi) = axis_hi else { continue };
                            // The top level answers every level above it too.
                            let up_to = if k + 1 == entry.n_levels {
                                LEVELS_MAX
                            } else {
                                k
                            };
                            for level in k..=up_to {
                                let at = served.entry(level).or_insert(hi);
                                *at = (*at).max(hi);
                            }
                        }
                    }
                }
                // A tier past its lifetime only raises its floor; the segment goes once all
                // of it has (its top level, which lives longest, last). Retiring tiers one by
                // one would leave segments that are not whole, which compaction may not merge:
                // with levels outliving rows their number would grow with the history.
                if all_expired {
                    retired_here.extend(live_tiers.into_iter().map(|tier| Retirement {
                        file: *name,
                        stream: stream.to_owned(),
                        track: view.track().clone(),
                        tier,
                    }));
                }
            }
            let existing = self.catalog.floors_of(stream, view.track());
            let raised = raised_floors(
                stream,
                view.track(),
                ladder.as_ref(),
                existing,
                top,
                raw,
                &served,
            );
            floors.extend(raised);
            retired.extend(retired_here);
        }
        (floors, retired)
    }

    /// Records `floors` and `retired` for `stream` as one manifest record (applied to the
    /// catalog first, as a barrier's is), then removes the files it left wholly retired and
    /// rewrites the manifest if it is due. A failed append poisons the store.
    pub(crate) fn commit_retirement(
        &mut self,
        stream: &str,
        floors: Vec<Floor>,
        retired: Vec<Retirement>,
    ) -> Result<Swept, EngineError> {
        self.remove_unpinned()?;
        let entries: Vec<Entry> = floors
            .iter()
            .cloned()
            .map(Entry::Floor)
            .chain(retired.iter().cloned().map(Entry::Retire))
            .collect();
        let mut files: Vec<FileName> = retired.iter().map(|r| r.file).collect();
        files.sort_unstable();
        files.dedup();
        if entries.is_empty() {
            return Ok(Swept {
                stream: stream.to_owned(),
                floors,
                retired,
                removed: Vec::new(),
            });
        }
        // One record, unless it would not fit a frame (a retire of very many tracks, with a
        // floor per level each): then consecutive ones. Every floor comes before every
        // retirement, so a crash between two of them leaves floors raised over tiers still
        // live — reads refused there, honestly, and the next sweep or retire finishes — never
        // a tier retired beneath no floor.
        for record in split_record(Record { entries }, FRAME_BODY_MAX / 2) {
            self.commit(&record, "a retirement")?;
        }
        let floor = stream_floor(&self.catalog, stream);
        if let Some(state) = self.streams.get_mut(stream) {
            state.floor = floor;
        }
        self.writer.metrics.tiers_retired += retired.len() as u64;
        let removed = self.remove_retired(&files)?;
        self.writer.retired_since_measure |= !removed.is_empty();
        self.maybe_rewrite_manifest()?;
        Ok(Swept {
            stream: stream.to_owned(),
            floors,
            retired,
            removed,
        })
    }
}

/// The floors a sweep records for one partition: the raw floor past `raw` (position, axis)
/// and the level floors past `served` (per level, the newest axis value of an expired tier
/// answering it), each only if it rises above what `existing` records.
fn raised_floors(
    stream: &str,
    track: &TrackKey,
    ladder: Option<&Ladder>,
    existing: Option<&strata_index::TrackFloors>,
    top: u8,
    raw: Option<(u64, Option<u64>)>,
    served: &BTreeMap<u8, u64>,
) -> Vec<Floor> {
    let mut raised = Vec::new();
    if let Some((position, axis)) = raw {
        let floor = raised_raw_floor(stream, track, existing, position, axis);
        let before = existing.and_then(|f| f.raw);
        if before.is_none_or(|b| Some(b.position) != floor.position || b.axis != floor.axis) {
            raised.push(floor);
        }
    }
    if let Some(ladder) = ladder
        && !served.is_empty()
    {
        let served_at = |level: u8| served.get(&level).copied();
        let levels = level_floors(stream, track, ladder, existing, top, served_at);
        let before = existing.map(|f| &f.levels);
        let rises = levels.iter().any(|f| {
            let Tier::Level(k) = f.tier else { return false };
            let old = before.and_then(|l| effective_level_floor(l, ladder, k));
            f.axis.unwrap_or(0) > old.unwrap_or(0) || before.is_none_or(|l| !l.contains_key(&k))
        });
        if rises {
            raised.extend(levels);
        }
    }
    raised
}

/// The raw `Floor` of `track` raised to `position` (and `axis`, for an axial stream), never
/// below the one `existing` records: floors only rise.
fn raised_raw_floor(
    stream: &str,
    track: &TrackKey,
    existing: Option<&strata_index::TrackFloors>,
    position: u64,
    axis: Option<u64>,
) -> Floor {
    let before = existing.and_then(|f| f.raw);
    Floor {
        stream: stream.to_owned(),
        track: track.clone(),
        tier: Tier::Raw,
        position: Some(before.map_or(position, |f| f.position.max(position))),
        axis: axis.map(|a| before.and_then(|f| f.axis).map_or(a, |b| b.max(a))),
    }
}

/// The level floors of one partition after retiring tiers that answered level `k` up to the
/// axis value `served(k)`: every level from 0 to the higher of `top` (the highest any segment
/// of the partition stores) and the highest already recorded, each the higher of its floor
/// before and the start of the cell past `served(k)`. Restating every level keeps the recorded
/// levels a run from 0, which `effective_level_floor` relies on above it.
fn level_floors(
    stream: &str,
    track: &TrackKey,
    ladder: &Ladder,
    existing: Option<&strata_index::TrackFloors>,
    top: u8,
    served: impl Fn(u8) -> Option<u64>,
) -> Vec<Floor> {
    let before = existing.map(|f| &f.levels);
    let recorded_top = before.and_then(|l| l.keys().next_back().copied());
    let up_to = recorded_top.map_or(top, |r| r.max(top));
    // The floor of the highest level served at or beneath each level: a top tier answers
    // the levels above its own.
    let mut out = Vec::new();
    for level in 0..=up_to {
        let old = before.and_then(|l| effective_level_floor(l, ladder, level));
        let new = served(level).map(|hi| past_cell(ladder, level, hi));
        let floor = old.max(new).unwrap_or(0);
        out.push(Floor {
            stream: stream.to_owned(),
            track: track.clone(),
            tier: Tier::Level(level),
            position: None,
            axis: Some(floor),
        });
    }
    out
}
