//! The floors reads answer to: the read half's rules for what retention and trims have taken.
//!
//! A sweep, `retire` and `trim_to` record floors (retention.rs, trim.rs: the write half); a
//! read asks here how high they stand for the partitions it covers, and answers whole only
//! above them.

use std::collections::BTreeMap;

use strata_index::TrackKey;
use strata_levels::Ladder;

use crate::view::View;

impl View {
    /// The highest raw floor of the partitions beneath `prefix` (a read covering them all is
    /// whole only at or above it): position, or axis value with `axis`. `None`: no floor.
    pub(crate) fn raw_floor(&self, stream: &str, prefix: &TrackKey, axis: bool) -> Option<u64> {
        self.catalog
            .floors(stream, prefix)
            .filter_map(|(_, floors)| floors.raw)
            .filter_map(|raw| if axis { raw.axis } else { Some(raw.position) })
            .max()
    }

    /// The folded floors level reads of `stream` under `prefix` answer to, per level: the
    /// highest of its partitions' records. A level a file folds from its raw rows
    /// (`LevelStorage::Adaptive`) has the floor a stored one would: a file keeps its rows as
    /// long as any of its levels is live (a segment's cells lie beside its rows, and a rewrite
    /// copies both), so a raw floor retires the rows from raw reads, never the levels folded
    /// from them.
    pub(crate) fn level_floors(
        &self,
        stream: &str,
        prefix: &TrackKey,
        ladder: &Ladder,
    ) -> LevelFloors {
        LevelFloors {
            ladder: *ladder,
            recorded: self
                .catalog
                .floors(stream, prefix)
                .filter(|(_, floors)| !floors.levels.is_empty())
                .map(|(_, floors)| floors.levels.clone())
                .collect(),
        }
    }
}

/// The folded floors of one read's partitions ([`View::level_floors`]).
pub(crate) struct LevelFloors {
    ladder: Ladder,
    /// Each partition's recorded level floors.
    recorded: Vec<BTreeMap<u8, u64>>,
}

impl LevelFloors {
    /// Whether any level has a floor.
    pub(crate) fn any(&self) -> bool {
        !self.recorded.is_empty()
    }

    /// The floor of `level` (`None`: nothing of it was ever retired).
    pub(crate) fn at(&self, level: u8) -> Option<u64> {
        self.recorded
            .iter()
            .filter_map(|levels| effective_level_floor(levels, &self.ladder, level))
            .max()
    }
}

/// A partition's floor at `level` from the level floors its records hold. Records restate every
/// level from 0 up to the highest any segment of the partition stored, so above the highest
/// recorded level the floor is that level's, moved up to the start of a cell of `level` (a
/// read there lifts the top cells of segments that stop beneath it).
pub(crate) fn effective_level_floor(
    levels: &BTreeMap<u8, u64>,
    ladder: &Ladder,
    level: u8,
) -> Option<u64> {
    if let Some(&floor) = levels.get(&level) {
        return Some(floor);
    }
    let (_, &floor) = levels.range(..level).next_back()?;
    Some(round_up(ladder, level, floor))
}

/// The start of the first cell of `level` that begins at or above `axis` (`u64::MAX` past
/// the last cell).
fn round_up(ladder: &Ladder, level: u8, axis: u64) -> u64 {
    let cell = ladder.cell(axis, level);
    match ladder.span(level, cell) {
        Some([start, _]) if start == axis => axis,
        _ => past_cell(ladder, level, axis),
    }
}

/// The start of the cell of `level` after the one holding `axis` (`u64::MAX` if none follows).
pub(crate) fn past_cell(ladder: &Ladder, level: u8, axis: u64) -> u64 {
    ladder
        .span(level, ladder.cell(axis, level))
        .map_or(u64::MAX, |[_, end]| end.saturating_add(1))
}

/// Whether a read starting at `start` reaches beneath `floor`. A floor of `u64::MAX` is where
/// one past the top of the axis (or of the positions) saturated: something at `u64::MAX` itself
/// was retired, so nothing there is held whole, and every read answers the floor.
pub(crate) fn beneath(start: u64, floor: u64) -> bool {
    start < floor || floor == u64::MAX
}
