//! `MemorySeries`: the contract answered the plainest way, for clarity rather than speed. No
//! files, no levels: every answer is computed from the rows when asked. It is the reference the
//! served engine is compared with.
//!
//! Retention is modelled from the rows too: `trim_to` moves raw floors, `retire` ends tracks and
//! raises their raw and level floors, and every read refuses what reaches beneath a floor with
//! the floor the store answers (docs/retention.md). Sweeps are not modelled: what a sweep retires
//! depends on segment boundaries, which rows alone do not show.

use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;
use std::ops::RangeBounds;
use std::sync::{Arc, Mutex, PoisonError};

use strata_index::{RawFloor, StreamDecl, TrackKey, validate_label};
use strata_levels::{
    Aggregate, Bucket, Cell, LEVELS_MAX, Ladder, Num, Plan, SurveyFill, plan, plan_with,
};

use crate::error::{EngineError, TRACKS_NAMED_MAX};
use crate::value::{Row, Value};
use crate::view::narrow::{Candidate, Reach, narrowing};
use crate::view::read::StoredRow;
use crate::view::survey::{FieldBuckets, FieldStat, Survey};

mod series;

#[derive(Debug, Default)]
struct MemStream {
    decl: Option<StreamDecl>,
    staged: Vec<(u64, Row)>,
    sealed: Vec<(u64, Row)>,
    watermark: Option<u64>,
    /// Per partition (its track labels), the raw floor trims and retirements raised: every row
    /// is kept (a trim only moves the floor), and reads refuse what reaches beneath it.
    floors: BTreeMap<Vec<String>, RawFloor>,
    /// Per partition `retire` ended, how many rows of the stream were sealed when it last did:
    /// the partition's rows sealed before that are gone, to every read.
    retired: BTreeMap<Vec<String>, usize>,
    /// Per partition `retire` ended with levels, the floor of every level `0..=LEVELS_MAX`
    /// (index = level): the start of the cell of that level after the one holding the highest
    /// axis value the partition held. Exact at every level, from the rows.
    level_floors: BTreeMap<Vec<String>, Vec<u64>>,
}

impl MemStream {
    /// The highest raw floor of the partitions a selection covers: by position, or by axis.
    fn floor(&self, track: &[String], by_axis: bool) -> Option<u64> {
        self.floors
            .iter()
            .filter(|(labels, _)| labels.starts_with(track))
            .filter_map(|(_, f)| if by_axis { f.axis } else { Some(f.position) })
            .max()
    }

    /// One past the highest horizon trimmed: no row is published beneath it.
    fn stream_floor(&self) -> u64 {
        self.floors.values().map(|f| f.position).max().unwrap_or(0)
    }

    /// The highest level-`level` floor of the partitions a selection covers; `None` when none
    /// of them was retired with levels.
    fn level_floor(&self, track: &[String], level: u8) -> Option<u64> {
        self.level_floors
            .iter()
            .filter(|(labels, _)| labels.starts_with(track))
            .map(|(_, floors)| floors[usize::from(level)])
            .max()
    }

    /// Whether a partition the selection covers has any floor, raw or level.
    fn has_floor(&self, track: &[String]) -> bool {
        self.floors.keys().any(|labels| labels.starts_with(track))
            || self.level_floors.keys().any(|l| l.starts_with(track))
    }

    /// Whether a row under the selection was ever sealed, or a floor recorded under it: what
    /// a store's catalog knows of as a partition, live or retired.
    fn ever(&self, decl: &StreamDecl, track: &[String]) -> bool {
        self.has_floor(track)
            || self
                .sealed
                .iter()
                .any(|(_, row)| labels(decl, row).starts_with(track))
    }

    /// The partitions under `track` holding something live for a read of `reach`, in
    /// track-key order, each with the lowest and highest of what it holds (positions, or axis
    /// values) and whether a floor was ever recorded for it: what a store's catalog lists.
    /// Rows at or above a partition's raw floor are live to every read; those beneath it only
    /// to level reads, and only where the stream keeps levels (elsewhere a trim retired them
    /// whole).
    fn candidates(
        &self,
        decl: &StreamDecl,
        track: &[String],
        reach: Reach,
    ) -> Vec<Candidate<Vec<String>>> {
        let keeps_levels = decl.axis.is_some() && !decl.measured().is_empty();
        // Per partition: positions, axis values, and whether a row is at or above its floor.
        let mut held: BTreeMap<Vec<String>, ([u64; 2], [u64; 2], bool)> = BTreeMap::new();
        for (position, row) in self.live(decl, track) {
            let key = labels(decl, row);
            let kept = self
                .floors
                .get(&key)
                .is_none_or(|f| *position >= f.position);
            let (p, a) = (*position, axis(decl, row));
            let entry = held.entry(key).or_insert(([p, p], [a, a], false));
            entry.0 = [entry.0[0].min(p), entry.0[1].max(p)];
            entry.1 = [entry.1[0].min(a), entry.1[1].max(a)];
            entry.2 |= kept;
        }
        held.into_iter()
            .filter(|(_, (_, _, kept))| *kept || (keeps_levels && !reach.raw()))
            .map(|(labels, (positions, axes, _))| Candidate {
                held: if reach == Reach::Positions {
                    positions
                } else {
                    axes
                },
                floored: self.floors.contains_key(&labels)
                    || self.level_floors.contains_key(&labels),
                key: labels.clone(),
                labels,
            })
            .collect()
    }

    /// The refusal of a read of `stream` under `track` beneath `floor`, with its narrowing,
    /// as a store builds it (`narrow.rs`), from the rows and the model's own floor check.
    fn beneath_floor(
        &self,
        decl: &StreamDecl,
        track: &[String],
        floor: u64,
        reach: Reach,
        refused: impl Fn(&Vec<String>, [u64; 2]) -> Option<u64>,
    ) -> EngineError {
        EngineError::Floor {
            stream: decl.id.clone(),
            selection: track.to_vec(),
            floor,
            unit: reach.unit(),
            narrowing: narrowing(
                floor,
                &track.to_vec(),
                !decl.track.is_empty(),
                self.candidates(decl, track, reach),
                refused,
            ),
        }
    }

    /// The sealed rows under a selection that no `retire` ended, in publish order.
    fn live<'a>(
        &'a self,
        decl: &'a StreamDecl,
        track: &'a [String],
    ) -> impl Iterator<Item = &'a (u64, Row)> + 'a {
        self.sealed
            .iter()
            .enumerate()
            .filter_map(move |(i, entry)| {
                let key = labels(decl, &entry.1);
                let gone = self.retired.get(&key).is_some_and(|&mark| i < mark);
                (key.starts_with(track) && !gone).then_some(entry)
            })
    }

    /// The axis span a read answers: the asked bounds, unbounded ends clamped to the live rows'
    /// axis values; with no live row but a floor (a track retired whole), the bounds as asked
    /// (so that the read meets the floor). `None`: nothing there, or an empty range.
    fn span(
        &self,
        decl: &StreamDecl,
        track: &[String],
        start: Bound<u64>,
        end: Bound<u64>,
    ) -> Option<[u64; 2]> {
        let axes: Vec<u64> = self.live(decl, track).map(|(_, r)| axis(decl, r)).collect();
        let recorded = axes.iter().min().zip(axes.iter().max());
        let [min, max] = match recorded {
            Some((&min, &max)) => [min, max],
            None if self.has_floor(track) => [0, u64::MAX],
            None => return None,
        };
        let lo = if start == Bound::Unbounded {
            min
        } else {
            least_in(start)?
        };
        let hi = if end == Bound::Unbounded {
            max
        } else {
            greatest_in(end)?
        };
        (lo <= hi).then_some([lo, hi])
    }
}

/// An in-memory series. Clones share one store, so a "reopen" is a clone after a seal.
#[derive(Clone, Debug, Default)]
pub struct MemorySeries {
    streams: Arc<Mutex<BTreeMap<String, MemStream>>>,
    /// Which plan answers a survey: `Config::survey_fill`'s twin.
    fill: SurveyFill,
}

impl MemorySeries {
    /// A series holding `streams`, empty.
    pub fn new(streams: &[StreamDecl]) -> MemorySeries {
        let map = streams
            .iter()
            .map(|d| {
                (
                    d.id.clone(),
                    MemStream {
                        decl: Some(d.clone()),
                        ..MemStream::default()
                    },
                )
            })
            .collect();
        MemorySeries {
            streams: Arc::new(Mutex::new(map)),
            fill: SurveyFill::FinestLevel,
        }
    }

    /// `new`, surveying as `fill` asks (as a store with `Config::survey_fill` set to it).
    pub fn with_fill(streams: &[StreamDecl], fill: SurveyFill) -> MemorySeries {
        MemorySeries {
            fill,
            ..MemorySeries::new(streams)
        }
    }

    fn with<T>(&self, f: impl FnOnce(&mut BTreeMap<String, MemStream>) -> T) -> T {
        f(&mut self.streams.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

impl MemorySeries {
    /// Retires every sealed row of `stream` at or below `horizon`, as `Store::trim_to` does,
    /// computed from the rows: each partition with a row at or below the horizon gets a raw
    /// floor one past it (for an axial stream, with the least axis value from which every row
    /// is kept: above every row trimmed, and not below the first row kept). Answers every raw
    /// floor of the stream after, in track-key order. Refused above the watermark or with
    /// rows staged; a horizon at or below an earlier one changes nothing.
    pub fn trim_to(
        &self,
        stream: &str,
        horizon: u64,
    ) -> Result<Vec<(TrackKey, RawFloor)>, EngineError> {
        self.with(|streams| {
            let (decl, m) = declared_mut(streams, stream)?;
            let refuse = |reason: &str| EngineError::Trim {
                stream: stream.to_owned(),
                horizon,
                reason: reason.to_owned(),
            };
            if m.watermark.is_none_or(|w| horizon > w) {
                return Err(refuse("the horizon is above the watermark"));
            }
            let position = horizon.saturating_add(1);
            // Per partition: a floor rises only where the horizon is above it (a retired
            // track's floor, one past the last position, leaves the others trimmable).
            let mut partitions: BTreeMap<Vec<String>, (Vec<u64>, Vec<u64>)> = BTreeMap::new();
            for (p, row) in &m.sealed {
                let (trimmed, kept) = partitions.entry(labels(&decl, row)).or_default();
                if *p <= horizon {
                    trimmed.push(axis(&decl, row));
                } else {
                    kept.push(axis(&decl, row));
                }
            }
            let mut raised = Vec::new();
            for (track, (trimmed, kept)) in partitions {
                if trimmed.is_empty() {
                    continue;
                }
                let existing = m.floors.get(&track).copied();
                if existing.is_some_and(|f| f.position >= position) {
                    continue;
                }
                let axis = decl.axis.map(|_| {
                    let above = trimmed.iter().max().map(|a| a.saturating_add(1));
                    let first = kept.iter().min().copied();
                    [above, first, existing.and_then(|f| f.axis)]
                        .into_iter()
                        .flatten()
                        .max()
                        .unwrap_or(0)
                });
                let floor = RawFloor {
                    position: existing.map_or(position, |f| f.position.max(position)),
                    axis,
                };
                if existing != Some(floor) {
                    raised.push((track, floor));
                }
            }
            if !raised.is_empty() && !m.staged.is_empty() {
                return Err(refuse("rows are staged"));
            }
            m.floors.extend(raised);
            let mut floors: Vec<(TrackKey, RawFloor)> = m
                .floors
                .iter()
                .filter_map(|(labels, f)| Some((TrackKey::encode(labels).ok()?, *f)))
                .collect();
            floors.sort_by(|a, b| a.0.cmp(&b.0));
            Ok(floors)
        })
    }
}

/// A row's track labels: its track fields' values as text.
/// The floor checks of level reads, from the model's floors.
impl MemStream {
    /// The plan that answers a survey over `[lo, hi]` from `from` under `track`, or the floor it
    /// is refused at: the plan `fill` chose (the finest level's where the chosen level is
    /// retired beneath the start); where partitions were retired with levels, the first level
    /// from there up whose floor the start is at or above, else the least of those floors.
    #[allow(clippy::too_many_arguments, reason = "a survey's question, whole")]
    fn survey_plan(
        &self,
        fill: SurveyFill,
        ladder: &Ladder,
        track: &[String],
        [lo, hi]: [u64; 2],
        from: u64,
        budget: u64,
        n_fields: usize,
    ) -> Result<Result<Plan, u64>, EngineError> {
        let finest = plan(ladder, LEVELS_MAX, [lo, hi], budget, n_fields).map_err(budget_error)?;
        let mut plan = plan_with(fill, ladder, LEVELS_MAX, [lo, hi], budget, n_fields)
            .map_err(budget_error)?;
        if plan != finest
            && self
                .level_floor(track, plan.level)
                .is_some_and(|f| beneath(from, f))
        {
            // A spent plan on a level retired beneath the start: the finest-level rule's
            // answer or refusal instead.
            plan = finest;
        }
        if self.level_floors.keys().any(|l| l.starts_with(track)) {
            let floors: Vec<(u8, u64)> = (plan.level..=LEVELS_MAX)
                .filter_map(|level| Some((level, self.level_floor(track, level)?)))
                .collect();
            let Some(&(level, _)) = floors.iter().find(|&&(_, floor)| !beneath(from, floor)) else {
                return Ok(Err(floors
                    .iter()
                    .map(|&(_, f)| f)
                    .min()
                    .unwrap_or(u64::MAX)));
            };
            if level != plan.level {
                plan.level = level;
                plan.group = 1;
            }
        }
        Ok(Ok(plan))
    }

    /// The floor a level fold over `[lo, hi]` under `track` is refused at: a run of its
    /// decomposition into level cells starting beneath its level's floor (from 0 for a range
    /// from the origin) refuses it, with the highest floor of the levels up to the top run's.
    fn fold_floor(
        &self,
        ladder: &Ladder,
        track: &[String],
        [lo, hi]: [u64; 2],
        from_origin: bool,
    ) -> Option<u64> {
        let runs = fold_runs(ladder, lo, hi);
        let refused = runs.iter().any(|&(level, start)| {
            let start = if from_origin { 0 } else { start };
            self.level_floor(track, level)
                .is_some_and(|f| beneath(start, f))
        });
        refused.then(|| {
            let top = runs.iter().map(|&(level, _)| level).max().unwrap_or(0);
            (0..=top)
                .filter_map(|level| self.level_floor(track, level))
                .max()
                .unwrap_or(0)
        })
    }
}

/// Refuses a range whose start lies above its end, as a store does: by the values as written
/// (the model's own reading of a range, apart from the engine's, as `least_in` is).
fn inverted(range: &impl RangeBounds<u64>, reach: Reach) -> Result<(), EngineError> {
    let value = |bound: Bound<&u64>| match bound {
        Bound::Included(&v) | Bound::Excluded(&v) => Some(v),
        Bound::Unbounded => None,
    };
    match (value(range.start_bound()), value(range.end_bound())) {
        (Some(start), Some(end)) if start > end => Err(EngineError::InvertedRange {
            start,
            end,
            unit: reach.unit(),
        }),
        _ => Ok(()),
    }
}

fn labels(decl: &StreamDecl, row: &Row) -> Vec<String> {
    decl.track
        .iter()
        .map(|&t| row[usize::from(t)].to_string())
        .collect()
}

fn axis(decl: &StreamDecl, row: &Row) -> u64 {
    match decl.axis.map(|a| &row[usize::from(a)]) {
        Some(Value::U64(v)) => *v,
        _ => 0,
    }
}

/// A measured value that is present (not null, not NaN), as a level folds it.
fn num(value: &Value) -> Option<Num> {
    match value {
        Value::U64(v) => Some(Num::U64(*v)),
        Value::I64(v) => Some(Num::I64(*v)),
        Value::F64(v) if !v.is_nan() => Some(Num::F64(*v)),
        _ => None,
    }
}

/// Checks a batch the way the contract asks, independently of the engine's code.
fn check(
    decl: &StreamDecl,
    stream: &MemStream,
    position: u64,
    rows: &[Row],
) -> Result<(), EngineError> {
    let refuse = |row_idx, reason: String| EngineError::Refused {
        stream: decl.id.clone(),
        row_idx,
        reason,
    };
    let last = stream
        .staged
        .last()
        .or(stream.sealed.last())
        .map(|(p, _)| *p);
    if last.is_some_and(|last| position < last) {
        return Err(refuse(
            0,
            format!("position {position} is below the stream's last position"),
        ));
    }
    let floor = stream.stream_floor();
    if position < floor {
        return Err(refuse(
            0,
            format!("position {position} is beneath the stream's floor {floor}"),
        ));
    }
    let mut last_axis: HashMap<Vec<String>, u64> = HashMap::new();
    for (_, row) in stream.sealed.iter().chain(&stream.staged) {
        last_axis.insert(labels(decl, row), axis(decl, row));
    }
    for (row_idx, row) in rows.iter().enumerate() {
        if row.len() != decl.fields.len() {
            return Err(refuse(
                row_idx,
                format!("expected {} values, got {}", decl.fields.len(), row.len()),
            ));
        }
        for (field, value) in decl.fields.iter().zip(row) {
            if value.kind().is_some_and(|kind| kind != field.kind) {
                return Err(refuse(
                    row_idx,
                    format!("field {:?} has the wrong kind", field.name),
                ));
            }
            let measured = decl
                .measured()
                .iter()
                .any(|&m| decl.fields[usize::from(m)].name == field.name);
            if *value == Value::Null && !measured {
                return Err(refuse(
                    row_idx,
                    format!("field {:?} is missing, and it may not be", field.name),
                ));
            }
        }
        let key = labels(decl, row);
        if let Some(bad) = key.iter().find(|l| validate_label(l).is_err()) {
            return Err(refuse(row_idx, format!("bad label {bad:?}")));
        }
        if decl.axis.is_some() {
            let a = axis(decl, row);
            let floor = stream.floors.get(&key).and_then(|f| f.axis);
            if floor.is_some_and(|floor| a.saturating_add(1) < floor) {
                return Err(refuse(
                    row_idx,
                    "axis is beneath its partition's floor".into(),
                ));
            }
            if last_axis.get(&key).is_some_and(|&prev| a < prev) {
                return Err(refuse(
                    row_idx,
                    "axis goes backwards in its partition".into(),
                ));
            }
            last_axis.insert(key, a);
        }
    }
    Ok(())
}

/// Rows in the order a merged read folds them: partitions in track-key order, each in publish
/// order.
fn by_partition<'a>(decl: &StreamDecl, rows: impl Iterator<Item = &'a Row>) -> Vec<&'a Row> {
    let mut rows: Vec<(Vec<u8>, &Row)> = rows
        .map(|row| {
            let key = TrackKey::encode(&labels(decl, row))
                .map(|k| k.as_bytes().to_vec())
                .unwrap_or_default();
            (key, row)
        })
        .collect();
    rows.sort_by(|a, b| a.0.cmp(&b.0)); // stable: publish order within a partition
    rows.into_iter().map(|(_, row)| row).collect()
}

/// Folds `rows` (already in merge order) of one field into cells `axis / width`, ascending.
fn cells(decl: &StreamDecl, rows: &[&Row], field: u16, width: u128) -> BTreeMap<u64, Bucket> {
    let mut out: BTreeMap<u64, Bucket> = BTreeMap::new();
    for row in rows {
        let a = axis(decl, row);
        let Some(value) = num(&row[usize::from(field)]) else {
            continue;
        };
        let index = u64::try_from(u128::from(a) / width).unwrap_or(u64::MAX);
        let one = Bucket::of_row(field, a, value);
        out.entry(index)
            .and_modify(|b| *b = b.merge(&one))
            .or_insert(one);
    }
    out
}

/// The start of the cell `width` wide after the one holding `axis` (`u64::MAX` if none follows
/// within the axis): where a level's floor lies once a partition whose highest axis value is
/// `axis` is retired.
fn past_cell(width: u128, axis: u64) -> u64 {
    let next = (u128::from(axis) / width + 1) * width;
    u64::try_from(next).unwrap_or(u64::MAX)
}

/// The level-0 cells holding `[lo, hi]` as the fewest aligned cells of any level, as the start
/// (axis value) of each run of cells of one level: at each level the partial runs at either end
/// stay, and the parents the range covers whole go a level up.
fn fold_runs(ladder: &Ladder, lo: u64, hi: u64) -> Vec<(u8, u64)> {
    let fanout = u128::from(ladder.fanout());
    let base = ladder.width(0);
    let (mut first, mut last) = (u128::from(lo) / base, u128::from(hi) / base);
    let start =
        |level: u8, cell: u128| u64::try_from(cell * ladder.width(level)).unwrap_or(u64::MAX);
    let mut runs = Vec::new();
    for level in 0..=LEVELS_MAX {
        // The parents wholly inside `first..=last`.
        let up_first = first.div_ceil(fanout);
        let up_end = (last + 1) / fanout;
        if up_first >= up_end || level == LEVELS_MAX {
            runs.push((level, start(level, first)));
            break;
        }
        if first < up_first * fanout {
            runs.push((level, start(level, first)));
        }
        if up_end * fanout <= last {
            runs.push((level, start(level, up_end * fanout)));
        }
        first = up_first;
        last = up_end - 1;
    }
    runs
}

/// No stream `stream` among those declared in `streams`, named as a store names them.
fn unknown(streams: &BTreeMap<String, MemStream>, stream: &str) -> EngineError {
    EngineError::unknown_stream(
        stream,
        streams
            .iter()
            .filter(|(_, m)| m.decl.is_some())
            .map(|(id, _)| id.as_str()),
    )
}

/// The declared stream `stream` of `streams`, to change, and its declaration.
fn declared_mut<'s>(
    streams: &'s mut BTreeMap<String, MemStream>,
    stream: &str,
) -> Result<(StreamDecl, &'s mut MemStream), EngineError> {
    let Some(decl) = streams.get(stream).and_then(|m| m.decl.clone()) else {
        return Err(unknown(streams, stream));
    };
    let m = streams
        .get_mut(stream)
        .ok_or_else(|| EngineError::Internal {
            reason: format!("stream {stream:?} went from the model between two looks"),
        })?;
    Ok((decl, m))
}

fn bad_read(reason: impl Into<String>) -> EngineError {
    EngineError::BadRead {
        reason: reason.into(),
    }
}

/// The inclusive span a range admits; `None` when it admits nothing.
fn inclusive(range: &impl RangeBounds<u64>) -> Option<(u64, u64)> {
    let lo = least_in(range.start_bound().cloned())?;
    let hi = greatest_in(range.end_bound().cloned())?;
    (lo <= hi).then_some((lo, hi))
}

fn budget_error(error: strata_levels::BudgetError) -> EngineError {
    bad_read(error.to_string())
}

fn ladder_of(decl: &StreamDecl) -> Result<Ladder, EngineError> {
    Ladder::new(decl.ladder.base, decl.ladder.fanout).map_err(|e| bad_read(e.to_string()))
}

/// The range as asked, its open ends the whole axis (`None`: it holds no value).
fn asked(start: Bound<u64>, end: Bound<u64>) -> Option<[u64; 2]> {
    let lo = match start {
        Bound::Unbounded => 0,
        Bound::Included(v) => v,
        Bound::Excluded(v) => v.checked_add(1)?,
    };
    let hi = match end {
        Bound::Unbounded => u64::MAX,
        Bound::Included(v) => v,
        Bound::Excluded(v) => v.checked_sub(1)?,
    };
    (lo <= hi).then_some([lo, hi])
}

fn bounds(range: &impl RangeBounds<u64>) -> (Bound<u64>, Bound<u64>) {
    (range.start_bound().cloned(), range.end_bound().cloned())
}

/// What one partition ended by `retire` was left with.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RetiredTrack {
    /// The partition.
    pub track: TrackKey,
    /// Its raw floor after.
    pub raw: RawFloor,
    /// Its floor at every level `0..=LEVELS_MAX` after (index = level); empty for a stream
    /// without levels.
    pub levels: Vec<u64>,
}

/// The reads, as `Store` answers them (`EngineError`), computed from the rows.
impl MemorySeries {
    /// The declaration of `stream` and the labels of `selection`, checked as a store checks
    /// them.
    fn selection(
        &self,
        stream: &str,
        selection: &[&str],
    ) -> Result<(StreamDecl, Vec<String>), EngineError> {
        let decl = self.with(|s| {
            s.get(stream)
                .and_then(|m| m.decl.clone())
                .ok_or_else(|| unknown(s, stream))
        })?;
        let track: Vec<String> = selection.iter().map(|s| (*s).to_owned()).collect();
        if selection.len() > decl.track.len() {
            return Err(EngineError::TrackDepth {
                stream: stream.to_owned(),
                selection: track,
                fields: decl
                    .track
                    .iter()
                    .map(|&idx| decl.fields[usize::from(idx)].name.clone())
                    .collect(),
            });
        }
        if let Some(bad) = selection.iter().find(|l| validate_label(l).is_err()) {
            return Err(bad_read(format!("bad label {bad:?}")));
        }
        Ok((decl, track))
    }

    /// [`MemorySeries::selection`], refused besides when nothing under the selection was ever
    /// sealed ([`EngineError::UnknownTrack`]), as a store refuses it.
    fn selected(
        &self,
        stream: &str,
        selection: &[&str],
    ) -> Result<(StreamDecl, Vec<String>), EngineError> {
        let (decl, track) = self.selection(stream, selection)?;
        if track.is_empty() {
            return Ok((decl, track));
        }
        let listed = self.with(|s| {
            let m = &s[stream];
            (!m.ever(&decl, &track)).then(|| m.candidates(&decl, &[], Reach::LevelAxis))
        });
        let Some(listed) = listed else {
            return Ok((decl, track));
        };
        let more = listed.len() > TRACKS_NAMED_MAX;
        Err(EngineError::UnknownTrack {
            stream: stream.to_owned(),
            selection: track,
            tracks: listed
                .into_iter()
                .take(TRACKS_NAMED_MAX)
                .map(|c| c.labels)
                .collect(),
            more,
        })
    }

    fn axial(
        &self,
        stream: &str,
        selection: &[&str],
    ) -> Result<(StreamDecl, Vec<String>), EngineError> {
        let (decl, track) = self.selected(stream, selection)?;
        if decl.axis.is_none() {
            return Err(bad_read(format!("stream {stream:?} declares no axis")));
        }
        Ok((decl, track))
    }

    /// `Store::query`: the sealed rows under `selection` with positions in `positions`, in
    /// publish order; refused whole if the range reaches beneath the raw floor (by position) of
    /// any partition the selection covers.
    pub fn query(
        &self,
        stream: &str,
        selection: &[&str],
        positions: impl RangeBounds<u64>,
    ) -> Result<Vec<StoredRow>, EngineError> {
        let (decl, track) = self.selected(stream, selection)?;
        inverted(&positions, Reach::Positions)?;
        let Some((lo, hi)) = inclusive(&positions) else {
            return Ok(Vec::new());
        };
        self.with(|s| {
            let m = &s[stream];
            if let Some(floor) = m.floor(&track, false).filter(|&f| beneath(lo, f)) {
                return Err(m.beneath_floor(
                    &decl,
                    &track,
                    floor,
                    Reach::Positions,
                    |key, [start, _]| m.floor(key, false).filter(|&f| beneath(start, f)),
                ));
            }
            Ok(m.live(&decl, &track)
                .filter(|(p, _)| (lo..=hi).contains(p))
                .map(|(position, values)| StoredRow {
                    position: *position,
                    values: values.clone(),
                })
                .collect())
        })
    }

    /// `Store::survey`, from the rows: the finest level whose cells over the span fit the
    /// budget, or the plan `with_fill` chose (falling back to the finest level's where the
    /// chosen level is retired beneath the start); where partitions were retired with levels, the first level from there up whose
    /// floor the span's start is at or above, else refused with the least of those floors.
    pub fn survey(
        &self,
        stream: &str,
        selection: &[&str],
        axis_range: impl RangeBounds<u64>,
        budget: u64,
    ) -> Result<Survey, EngineError> {
        let (decl, track) = self.axial(stream, selection)?;
        inverted(&axis_range, Reach::LevelAxis)?;
        let measured = decl.measured();
        let ladder = ladder_of(&decl)?;
        let name = |f: u16| decl.fields[usize::from(f)].name.clone();
        let (start, end) = bounds(&axis_range);
        self.with(|s| {
            let m = &s[stream];
            let empty = || Survey {
                level: 0,
                group: 1,
                span: None,
                fields: measured
                    .iter()
                    .map(|&f| FieldBuckets {
                        field: name(f),
                        buckets: Vec::new(),
                    })
                    .collect(),
            };
            let span = m.span(&decl, &track, start, end);
            // Nothing live in the range: still refused if it reaches beneath a level floor.
            let retired_levels = m.level_floors.keys().any(|l| l.starts_with(&track));
            let check = span.or(asked(start, end).filter(|_| retired_levels));
            let Some([lo, hi]) = check else {
                strata_levels::cells_per_field(budget, measured.len()).map_err(budget_error)?;
                return Ok(empty());
            };
            let from = if start == Bound::Unbounded { 0 } else { lo };
            let n_fields = measured.len();
            let plan = match m.survey_plan(
                self.fill,
                &ladder,
                &track,
                [lo, hi],
                from,
                budget,
                n_fields,
            )? {
                Ok(plan) => plan,
                Err(floor) => {
                    return Err(m.beneath_floor(
                        &decl,
                        &track,
                        floor,
                        Reach::LevelAxis,
                        |key, span| {
                            m.survey_plan(self.fill, &ladder, key, span, span[0], budget, n_fields)
                                .ok()?
                                .err()
                        },
                    ));
                }
            };
            if span.is_none() {
                return Ok(empty());
            }
            let w = ladder.width(plan.level);
            let (first, last) = (u128::from(lo) / w, u128::from(hi) / w);
            let rows = by_partition(&decl, m.live(&decl, &track).map(|(_, r)| r));
            let fields = measured
                .iter()
                .map(|&field| {
                    let mut buckets: Vec<(u128, Bucket)> = Vec::new();
                    for (c, b) in cells(&decl, &rows, field, w) {
                        if !(first..=last).contains(&u128::from(c)) {
                            continue;
                        }
                        let g = u128::from(c) / plan.group;
                        match buckets.last_mut() {
                            Some((last_g, merged)) if *last_g == g => *merged = merged.merge(&b),
                            _ => buckets.push((g, b)),
                        }
                    }
                    FieldBuckets {
                        field: name(field),
                        buckets: buckets.into_iter().map(|(_, b)| b).collect(),
                    }
                })
                .collect();
            Ok(Survey {
                level: plan.level,
                group: plan.group,
                span: Some([lo, hi]),
                fields,
            })
        })
    }

    /// `Store::fold`, from the rows. Percentiles read the rows of the exact range and refuse a
    /// start beneath the raw floor's axis value; level folds cover the whole level-0 cells the
    /// range touches and refuse a range whose decomposition into level cells has a run starting
    /// beneath its level's floor, with the highest floor of the levels up to the top run's.
    pub fn fold(
        &self,
        stream: &str,
        selection: &[&str],
        axis_range: impl RangeBounds<u64>,
        kind: Aggregate,
    ) -> Result<Vec<FieldStat>, EngineError> {
        let (decl, track) = self.axial(stream, selection)?;
        inverted(&axis_range, Reach::LevelAxis)?;
        if decl.measured().is_empty() {
            return Err(bad_read(format!(
                "stream {stream:?} has no measured field to fold"
            )));
        }
        let ladder = ladder_of(&decl)?;
        let (start, end) = bounds(&axis_range);
        self.with(|s| {
            let m = &s[stream];
            let span = m.span(&decl, &track, start, end);
            // Nothing live in the range: still refused if it reaches beneath a floor.
            let check = span.or(asked(start, end).filter(|_| m.has_floor(&track)));
            let from_origin = start == Bound::Unbounded;
            if let (Some([lo, _]), false) = (check, kind.folds_levels()) {
                let lo = if from_origin { 0 } else { lo };
                if let Some(floor) = m.floor(&track, true).filter(|&f| beneath(lo, f)) {
                    return Err(m.beneath_floor(
                        &decl,
                        &track,
                        floor,
                        Reach::RawAxis,
                        |key, [start, _]| m.floor(key, true).filter(|&f| beneath(start, f)),
                    ));
                }
            }
            if let (Some(span), true) = (check, kind.folds_levels())
                && let Some(floor) = m.fold_floor(&ladder, &track, span, from_origin)
            {
                return Err(m.beneath_floor(
                    &decl,
                    &track,
                    floor,
                    Reach::LevelAxis,
                    |key, span| m.fold_floor(&ladder, key, span, false),
                ));
            }
            let rows = by_partition(&decl, m.live(&decl, &track).map(|(_, r)| r));
            let base = ladder.width(0);
            Ok(decl
                .measured()
                .into_iter()
                .map(|field| {
                    let value = span.and_then(|[lo, hi]| {
                        if kind.folds_levels() {
                            // Whole level-0 cells the range touches.
                            let (first, last) = (u128::from(lo) / base, u128::from(hi) / base);
                            let inside: Vec<&Row> = rows
                                .iter()
                                .copied()
                                .filter(|r| {
                                    (first..=last).contains(&(u128::from(axis(&decl, r)) / base))
                                })
                                .collect();
                            let folded = cells(&decl, &inside, field, u128::MAX)
                                .into_values()
                                .next()?;
                            kind.folded(&folded)
                        } else {
                            let mut values: Vec<Num> = rows
                                .iter()
                                .filter(|r| (lo..=hi).contains(&axis(&decl, r)))
                                .filter_map(|r| num(&r[usize::from(field)]))
                                .collect();
                            kind.scanned(&mut values)
                        }
                    });
                    FieldStat {
                        field: decl.fields[usize::from(field)].name.clone(),
                        value: value.or_else(|| kind.of_no_rows()),
                    }
                })
                .collect())
        })
    }

    /// `Store::level_cells`, from the rows: the cells of `field` at `level` over the range,
    /// merged across the selection's partitions; refused if the range starts beneath the
    /// level's floor.
    pub fn level_cells(
        &self,
        stream: &str,
        selection: &[&str],
        field: &str,
        level: u8,
        axis_range: impl RangeBounds<u64>,
    ) -> Result<Vec<Cell>, EngineError> {
        let (decl, track) = self.axial(stream, selection)?;
        let field_idx = decl
            .measured()
            .into_iter()
            .find(|&f| decl.fields[usize::from(f)].name == field)
            .ok_or_else(|| bad_read(format!("{field:?} is not a measured field of {stream:?}")))?;
        let ladder = ladder_of(&decl)?;
        inverted(&axis_range, Reach::LevelAxis)?;
        let Some((lo, hi)) = inclusive(&axis_range) else {
            return Ok(Vec::new());
        };
        self.with(|s| {
            let m = &s[stream];
            if let Some(floor) = m.level_floor(&track, level).filter(|&f| beneath(lo, f)) {
                return Err(m.beneath_floor(
                    &decl,
                    &track,
                    floor,
                    Reach::LevelAxis,
                    |key, [start, _]| m.level_floor(key, level).filter(|&f| beneath(start, f)),
                ));
            }
            let w = ladder.width(level);
            let (first, last) = (u128::from(lo) / w, u128::from(hi) / w);
            let rows = by_partition(&decl, m.live(&decl, &track).map(|(_, r)| r));
            Ok(cells(&decl, &rows, field_idx, w)
                .into_iter()
                .filter(|(c, _)| (first..=last).contains(&u128::from(*c)))
                .map(|(index, bucket)| Cell { index, bucket })
                .collect())
        })
    }

    /// The floor level-`level` reads of the selection answer to: the highest of its
    /// partitions' (`None`: none was retired with levels). Exact at every level.
    pub fn level_floor(&self, stream: &str, selection: &[&str], level: u8) -> Option<u64> {
        let track: Vec<String> = selection.iter().map(|s| (*s).to_owned()).collect();
        self.with(|s| s.get(stream)?.level_floor(&track, level))
    }

    /// Ends every partition of `stream` under `selection` (a track prefix) that has anything
    /// live, as `Store::retire` does, computed from the rows: its rows are gone to every read;
    /// its raw floor rises to one past the stream's last position and, for an axial stream,
    /// one past the partition's highest axis value; every level's floor to the start of the
    /// cell after the one holding that value. Floors only rise. Answers what each partition it
    /// ended was left with, in track-key order (nothing, if nothing was live). Refused while
    /// rows of the stream are staged.
    ///
    /// Refused as a store refuses it: with no track on a stream that has track fields
    /// ([`MemorySeries::retire_all`] ends them all), a selection under which nothing was
    /// sealed, or one with nothing live.
    pub fn retire(
        &self,
        stream: &str,
        selection: &[&str],
    ) -> Result<Vec<RetiredTrack>, EngineError> {
        let (decl, _) = self.selection(stream, selection)?;
        if selection.is_empty() && !decl.track.is_empty() {
            return Err(EngineError::RetireNamesNoTrack {
                stream: stream.to_owned(),
            });
        }
        self.retire_under(stream, selection)
    }

    /// Ends every track of `stream`, as `Store::retire_all` does.
    pub fn retire_all(&self, stream: &str) -> Result<Vec<RetiredTrack>, EngineError> {
        self.retire_under(stream, &[])
    }

    fn retire_under(
        &self,
        stream: &str,
        selection: &[&str],
    ) -> Result<Vec<RetiredTrack>, EngineError> {
        let (decl, track) = self.selected(stream, selection)?;
        let ladder = decl.axis.map(|_| ladder_of(&decl)).transpose()?;
        // Levels are stored where there is an axis and something to measure; without them, a
        // trim retires a partition's rows wholly beneath its floor for good.
        let keeps_levels = ladder.is_some() && !decl.measured().is_empty();
        self.with(|streams| {
            let (_, m) = declared_mut(streams, stream)?;
            if !m.staged.is_empty() {
                return Err(bad_read(format!(
                    "cannot retire tracks of stream {stream:?}: rows of it are staged"
                )));
            }
            let position = m
                .sealed
                .iter()
                .map(|(p, _)| *p)
                .max()
                .map_or(0, |p| p.saturating_add(1));
            // Per partition with anything live, its highest axis value.
            let mut live: BTreeMap<Vec<String>, u64> = BTreeMap::new();
            for (p, row) in m.live(&decl, &track) {
                let key = labels(&decl, row);
                let trimmed = m.floors.get(&key).is_some_and(|f| *p < f.position);
                if trimmed && !keeps_levels {
                    continue;
                }
                let hi = live.entry(key).or_insert(0);
                *hi = (*hi).max(axis(&decl, row));
            }
            let mut ended = Vec::new();
            for (key, hi) in live {
                let before = m.floors.get(&key).copied();
                let raw = RawFloor {
                    position: before.map_or(position, |f| f.position.max(position)),
                    axis: decl.axis.map(|_| {
                        let past = hi.saturating_add(1);
                        before.and_then(|f| f.axis).map_or(past, |a| a.max(past))
                    }),
                };
                m.floors.insert(key.clone(), raw);
                let mut levels = Vec::new();
                if let (Some(ladder), true) = (&ladder, keeps_levels) {
                    let old = m.level_floors.get(&key);
                    levels = (0..=LEVELS_MAX)
                        .map(|level| {
                            let new = past_cell(ladder.width(level), hi);
                            old.map_or(new, |o| o[usize::from(level)].max(new))
                        })
                        .collect();
                    m.level_floors.insert(key.clone(), levels.clone());
                }
                m.retired.insert(key.clone(), m.sealed.len());
                let track = TrackKey::encode(&key).map_err(|e| bad_read(e.to_string()))?;
                ended.push(RetiredTrack { track, raw, levels });
            }
            if ended.is_empty() {
                return Err(EngineError::NothingToRetire {
                    stream: stream.to_owned(),
                    selection: track,
                });
            }
            ended.sort_by(|a, b| a.track.cmp(&b.track));
            Ok(ended)
        })
    }
}

/// The least value a start bound admits (the model's own reading of a bound, apart from the
/// engine's); `None` when it admits none.
fn least_in(start: Bound<u64>) -> Option<u64> {
    match start {
        Bound::Included(v) => Some(v),
        Bound::Excluded(v) => v.checked_add(1),
        Bound::Unbounded => Some(0),
    }
}

/// The greatest value an end bound admits; `None` when it admits none.
fn greatest_in(end: Bound<u64>) -> Option<u64> {
    match end {
        Bound::Included(v) => Some(v),
        Bound::Excluded(v) => v.checked_sub(1),
        Bound::Unbounded => Some(u64::MAX),
    }
}

/// Whether a read from `start` reaches beneath `floor`: a floor saturated at `u64::MAX` (one
/// past a retired value at the top of the axis) holds nothing whole, so every read answers it.
fn beneath(start: u64, floor: u64) -> bool {
    start < floor || floor == u64::MAX
}
