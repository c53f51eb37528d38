//! `MemorySeries`: the contract answered the plainest way, for clarity rather than speed. No
//! files, no levels: every answer is computed from the rows when asked. It is the reference the
//! served engine is compared with.

use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;
use std::ops::RangeBounds;
use std::sync::{Arc, Mutex, PoisonError};

use strata_index::{RawFloor, StreamDecl, TrackKey, validate_label};
use strata_levels::{Aggregate, Bucket, LEVELS_MAX, Ladder, Num, plan};

use crate::error::EngineError;
use crate::read::StoredRow;
use crate::series::{BeneathWindow, Series};
use crate::survey::{FieldBuckets, FieldStat};
use crate::value::{Row, Value};

/// A selection read for the ladder: its declaration, its rows in merge order, the clamped span.
type Axial = (StreamDecl, Vec<Row>, Option<[u64; 2]>);

#[derive(Debug, Default)]
struct MemStream {
    decl: Option<StreamDecl>,
    staged: Vec<(u64, Row)>,
    sealed: Vec<(u64, Row)>,
    watermark: Option<u64>,
    /// Per partition (its track labels), the raw floor trims raised: every row is kept (a
    /// trim only moves the floor), and reads refuse what reaches beneath it.
    floors: BTreeMap<Vec<String>, RawFloor>,
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
}

/// An in-memory series. Clones share one store, so a "reopen" is a clone after a seal.
#[derive(Clone, Debug, Default)]
pub struct MemorySeries {
    streams: Arc<Mutex<BTreeMap<String, MemStream>>>,
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
            let m = streams
                .get_mut(stream)
                .ok_or_else(|| EngineError::UnknownStream {
                    stream: stream.to_owned(),
                })?;
            let decl = m.decl.clone().ok_or_else(|| EngineError::UnknownStream {
                stream: stream.to_owned(),
            })?;
            let refuse = |reason: &str| EngineError::Trim {
                stream: stream.to_owned(),
                horizon,
                reason: reason.to_owned(),
            };
            if m.watermark.is_none_or(|w| horizon > w) {
                return Err(refuse("the horizon is above the watermark"));
            }
            let position = horizon.saturating_add(1);
            if position > m.stream_floor() {
                if !m.staged.is_empty() {
                    return Err(refuse("rows are staged"));
                }
                let mut partitions: BTreeMap<Vec<String>, (Vec<u64>, Vec<u64>)> = BTreeMap::new();
                for (p, row) in &m.sealed {
                    let (trimmed, kept) = partitions.entry(labels(&decl, row)).or_default();
                    if *p <= horizon {
                        trimmed.push(axis(&decl, row));
                    } else {
                        kept.push(axis(&decl, row));
                    }
                }
                for (track, (trimmed, kept)) in partitions {
                    if trimmed.is_empty() {
                        continue;
                    }
                    let existing = m.floors.get(&track).copied();
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
                    m.floors.insert(track, floor);
                }
            }
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

fn num(value: &Value) -> Option<Num> {
    match value {
        Value::U64(v) => Some(Num::U64(*v)),
        Value::I64(v) => Some(Num::I64(*v)),
        Value::F64(v) => Some(Num::F64(*v)),
        _ => None,
    }
}

fn invalid(why: impl Into<String>) -> BeneathWindow {
    BeneathWindow::Invalid(why.into())
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
            if value.kind() != field.kind {
                return Err(refuse(
                    row_idx,
                    format!("field {:?} has the wrong kind", field.name),
                ));
            }
            if matches!(value, Value::F64(v) if !v.is_finite()) {
                return Err(refuse(
                    row_idx,
                    format!("field {:?} is not finite", field.name),
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
            if floor.is_some_and(|floor| a < floor) {
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

/// The sealed rows under a selection, in the order a merged read folds them: partitions in
/// track-key order, each in publish order.
fn by_partition<'a>(decl: &StreamDecl, sealed: &'a [(u64, Row)], track: &[String]) -> Vec<&'a Row> {
    let mut rows: Vec<(Vec<u8>, &Row)> = sealed
        .iter()
        .filter(|(_, row)| labels(decl, row).starts_with(track))
        .map(|(_, row)| {
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

impl MemorySeries {
    fn decl_of(&self, stream: &str) -> Result<StreamDecl, BeneathWindow> {
        self.with(|s| s.get(stream).and_then(|m| m.decl.clone()))
            .ok_or_else(|| invalid(format!("unknown stream {stream:?}")))
    }

    /// The clamped axis span and the rows beneath a selection, for the ladder reads.
    fn axial(
        &self,
        stream: &str,
        track: &[String],
        start: Bound<u64>,
        end: Bound<u64>,
    ) -> Result<Axial, BeneathWindow> {
        let decl = self.decl_of(stream)?;
        if decl.axis.is_none() {
            return Err(invalid(format!("stream {stream:?} declares no axis")));
        }
        if track.len() > decl.track.len() {
            return Err(invalid("the selection is deeper than the track"));
        }
        let rows: Vec<Row> = self.with(|s| {
            by_partition(&decl, &s[stream].sealed, track)
                .into_iter()
                .cloned()
                .collect()
        });
        let recorded = rows.iter().map(|r| axis(&decl, r));
        let (min, max) = (recorded.clone().min(), recorded.max());
        let span = min.zip(max).and_then(|(min, max)| {
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
        });
        Ok((decl, rows, span))
    }
}

fn ladder_of(decl: &StreamDecl) -> Result<Ladder, BeneathWindow> {
    Ladder::new(decl.ladder.base, decl.ladder.fanout).map_err(|e| invalid(e.to_string()))
}

fn width(ladder: &Ladder, level: u8) -> u128 {
    ladder.width(level)
}

impl Series for MemorySeries {
    async fn publish(
        &mut self,
        stream: &str,
        position: u64,
        rows: Vec<Row>,
    ) -> Result<(), EngineError> {
        self.with(|streams| {
            let m = streams
                .get_mut(stream)
                .ok_or_else(|| EngineError::UnknownStream {
                    stream: stream.to_owned(),
                })?;
            let decl = m.decl.clone().ok_or_else(|| EngineError::UnknownStream {
                stream: stream.to_owned(),
            })?;
            check(&decl, m, position, &rows)?;
            m.staged.extend(rows.into_iter().map(|row| (position, row)));
            Ok(())
        })
    }

    async fn rows(
        &mut self,
        stream: &str,
        track: &[String],
        start: Bound<u64>,
        end: Bound<u64>,
    ) -> Result<Vec<StoredRow>, BeneathWindow> {
        let decl = self.decl_of(stream)?;
        if track.len() > decl.track.len() {
            return Err(invalid("the selection is deeper than the track"));
        }
        let floor = self.with(|s| s[stream].floor(track, false));
        // Beneath the floor: some position below it lies in the range.
        let beneath = floor
            .filter(|&f| least_in(start).is_some_and(|lo| lo < f && (start, end).contains(&lo)));
        if let Some(floor) = beneath {
            return Err(BeneathWindow::Floor { floor });
        }
        Ok(self.with(|s| {
            s[stream]
                .sealed
                .iter()
                .filter(|(p, row)| {
                    (start, end).contains(p) && labels(&decl, row).starts_with(track)
                })
                .map(|(position, values)| StoredRow {
                    position: *position,
                    values: values.clone(),
                })
                .collect()
        }))
    }

    async fn buckets(
        &mut self,
        stream: &str,
        track: &[String],
        start: Bound<u64>,
        end: Bound<u64>,
        budget: u64,
    ) -> Result<Vec<FieldBuckets>, BeneathWindow> {
        let (decl, rows, span) = self.axial(stream, track, start, end)?;
        let measured = decl.measured();
        let ladder = ladder_of(&decl)?;
        strata_levels::cells_per_field(budget, measured.len())
            .map_err(|e| invalid(e.to_string()))?;
        let name = |f: u16| decl.fields[usize::from(f)].name.clone();
        let Some([lo, hi]) = span else {
            return Ok(measured
                .iter()
                .map(|&f| FieldBuckets {
                    field: name(f),
                    buckets: Vec::new(),
                })
                .collect());
        };
        let plan = plan(&ladder, LEVELS_MAX, [lo, hi], budget, measured.len())
            .map_err(|e| invalid(e.to_string()))?;
        let w = width(&ladder, plan.level);
        let (first, last) = (u128::from(lo) / w, u128::from(hi) / w);
        let rows: Vec<&Row> = rows.iter().collect();
        Ok(measured
            .iter()
            .map(|&field| {
                let buckets = cells(&decl, &rows, field, w)
                    .into_iter()
                    .filter(|(c, _)| (first..=last).contains(&u128::from(*c)))
                    .map(|(_, b)| b)
                    .collect();
                FieldBuckets {
                    field: name(field),
                    buckets,
                }
            })
            .collect())
    }

    async fn aggregate(
        &mut self,
        stream: &str,
        track: &[String],
        start: Bound<u64>,
        end: Bound<u64>,
        kind: Aggregate,
    ) -> Result<Vec<FieldStat>, BeneathWindow> {
        let (decl, rows, span) = self.axial(stream, track, start, end)?;
        if decl.measured().is_empty() {
            return Err(invalid(format!(
                "stream {stream:?} has no measured field to fold"
            )));
        }
        if let (Some([lo, _]), false) = (span, kind.folds_levels()) {
            let floor = self.with(|s| s[stream].floor(track, true));
            if let Some(floor) = floor.filter(|&f| lo < f) {
                return Err(BeneathWindow::Floor { floor });
            }
        }
        let base = u128::from(decl.ladder.base);
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
    }

    async fn seal(&mut self, stream: &str, track: &[String]) -> Result<Option<u64>, BeneathWindow> {
        let decl = self.decl_of(stream)?;
        if track.len() > decl.track.len() {
            return Err(invalid("the selection is deeper than the track"));
        }
        Ok(self.with(|streams| {
            for m in streams.values_mut() {
                if let Some((position, _)) = m.staged.last() {
                    m.watermark = Some(*position);
                }
                let staged = std::mem::take(&mut m.staged);
                m.sealed.extend(staged);
            }
            streams[stream].watermark
        }))
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
