//! Columnar publish: a batch as one slice per field and the track's values once, staged by
//! extending the partition's column buffers — no `Value` and no `String` per row.
//!
//! The rules are the row API's, checked in the order it checks them, so a batch refused as
//! rows is refused as columns with the same error (row index and reason), and a refused batch
//! stages nothing. `tests/it/columns.rs` holds the two APIs to that, rule by rule and over
//! generated batches.

use std::borrow::Cow;
use std::collections::HashMap;

use strata_index::{FieldKind, TrackKey, validate_label};
use strata_segment::validity::push_run;

use crate::error::EngineError;
use crate::store::{Store, durable_axis, floor_axis, room_to_stage, stream_state_mut};
use crate::value::Value;
use crate::write::stage::{ColumnBuf, StreamState};

/// The values of one field for every row of a columnar batch, in row order.
#[derive(Clone, Copy, Debug)]
pub enum Values<'a> {
    /// A `u64` field.
    U64(&'a [u64]),
    /// An `i64` field.
    I64(&'a [i64]),
    /// An `f64` field (NaN and infinities are stored as they are: levels skip NaN).
    F64(&'a [f64]),
    /// A `str` field.
    Str(&'a [&'a str]),
    /// A `bytes` field.
    Bytes(&'a [&'a [u8]]),
    /// A measured `u64` field with missing values: `None` is null.
    OptU64(&'a [Option<u64>]),
    /// A measured `i64` field with missing values: `None` is null.
    OptI64(&'a [Option<i64>]),
    /// A measured `f64` field with missing values: `None` is null (NaN stays NaN).
    OptF64(&'a [Option<f64>]),
}

impl Values<'_> {
    fn kind(&self) -> FieldKind {
        match self {
            Values::U64(_) | Values::OptU64(_) => FieldKind::U64,
            Values::I64(_) | Values::OptI64(_) => FieldKind::I64,
            Values::F64(_) | Values::OptF64(_) => FieldKind::F64,
            Values::Str(_) => FieldKind::Str,
            Values::Bytes(_) => FieldKind::Bytes,
        }
    }

    /// The first row whose value is null, if any.
    fn first_null(&self) -> Option<usize> {
        match self {
            Values::OptU64(v) => v.iter().position(Option::is_none),
            Values::OptI64(v) => v.iter().position(Option::is_none),
            Values::OptF64(v) => v.iter().position(Option::is_none),
            _ => None,
        }
    }

    /// The values of rows `..n_rows`.
    fn head(&self, n_rows: usize) -> Values<'_> {
        match *self {
            Values::U64(v) => Values::U64(&v[..n_rows]),
            Values::I64(v) => Values::I64(&v[..n_rows]),
            Values::F64(v) => Values::F64(&v[..n_rows]),
            Values::Str(v) => Values::Str(&v[..n_rows]),
            Values::Bytes(v) => Values::Bytes(&v[..n_rows]),
            Values::OptU64(v) => Values::OptU64(&v[..n_rows]),
            Values::OptI64(v) => Values::OptI64(&v[..n_rows]),
            Values::OptF64(v) => Values::OptF64(&v[..n_rows]),
        }
    }

    fn len(&self) -> usize {
        match self {
            Values::U64(v) => v.len(),
            Values::I64(v) => v.len(),
            Values::F64(v) => v.len(),
            Values::Str(v) => v.len(),
            Values::Bytes(v) => v.len(),
            Values::OptU64(v) => v.len(),
            Values::OptI64(v) => v.len(),
            Values::OptF64(v) => v.len(),
        }
    }

    /// The bytes these values add to staging, as `row_bytes` counts them row by row.
    fn staged_bytes(&self) -> usize {
        match self {
            Values::Str(v) => v.iter().map(|s| s.len() + 8).sum(),
            Values::Bytes(v) => v.iter().map(|b| b.len() + 8).sum(),
            other => other.len() * 8,
        }
    }
}

/// The values of one field for every row of a columnar batch, owned: what a batch handed to
/// another task carries ([`crate::Served::publish_columns`]). [`Values`] borrows the same.
#[derive(Clone, Debug, PartialEq)]
pub enum Column {
    /// A `u64` field.
    U64(Vec<u64>),
    /// An `i64` field.
    I64(Vec<i64>),
    /// An `f64` field.
    F64(Vec<f64>),
    /// A `str` field.
    Str(Vec<String>),
    /// A `bytes` field.
    Bytes(Vec<Vec<u8>>),
    /// A measured `u64` field with missing values: `None` is null.
    OptU64(Vec<Option<u64>>),
    /// A measured `i64` field with missing values: `None` is null.
    OptI64(Vec<Option<i64>>),
    /// A measured `f64` field with missing values: `None` is null.
    OptF64(Vec<Option<f64>>),
}

impl From<Vec<Option<u64>>> for Column {
    fn from(values: Vec<Option<u64>>) -> Column {
        Column::OptU64(values)
    }
}

impl From<Vec<Option<i64>>> for Column {
    fn from(values: Vec<Option<i64>>) -> Column {
        Column::OptI64(values)
    }
}

impl From<Vec<Option<f64>>> for Column {
    fn from(values: Vec<Option<f64>>) -> Column {
        Column::OptF64(values)
    }
}

impl From<Vec<u64>> for Column {
    fn from(values: Vec<u64>) -> Column {
        Column::U64(values)
    }
}

impl From<Vec<i64>> for Column {
    fn from(values: Vec<i64>) -> Column {
        Column::I64(values)
    }
}

impl From<Vec<f64>> for Column {
    fn from(values: Vec<f64>) -> Column {
        Column::F64(values)
    }
}

impl From<Vec<String>> for Column {
    fn from(values: Vec<String>) -> Column {
        Column::Str(values)
    }
}

impl From<Vec<Vec<u8>>> for Column {
    fn from(values: Vec<Vec<u8>>) -> Column {
        Column::Bytes(values)
    }
}

impl Column {
    /// Runs `f` on these columns borrowed as [`Values`]: numbers as they are, strings and
    /// byte strings through one slice of references per column (a pointer a row, no copy of
    /// what they hold).
    pub fn borrowed<R>(columns: &[Column], f: impl FnOnce(&[Values<'_>]) -> R) -> R {
        let strs: Vec<Vec<&str>> = columns
            .iter()
            .map(|c| match c {
                Column::Str(v) => v.iter().map(String::as_str).collect(),
                _ => Vec::new(),
            })
            .collect();
        let bytes: Vec<Vec<&[u8]>> = columns
            .iter()
            .map(|c| match c {
                Column::Bytes(v) => v.iter().map(Vec::as_slice).collect(),
                _ => Vec::new(),
            })
            .collect();
        let values: Vec<Values<'_>> = columns
            .iter()
            .zip(strs.iter().zip(&bytes))
            .map(|(column, (strs, bytes))| match column {
                Column::U64(v) => Values::U64(v),
                Column::I64(v) => Values::I64(v),
                Column::F64(v) => Values::F64(v),
                Column::Str(_) => Values::Str(strs),
                Column::Bytes(_) => Values::Bytes(bytes),
                Column::OptU64(v) => Values::OptU64(v),
                Column::OptI64(v) => Values::OptI64(v),
                Column::OptF64(v) => Values::OptF64(v),
            })
            .collect();
        f(&values)
    }
}

/// The positions of a columnar batch's rows: one for them all, or one each.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Positions<'a> {
    Same(u64),
    /// Non-decreasing (checked before staging).
    Each(&'a [u64]),
}

/// A checked columnar batch, ready to stage.
pub(crate) struct Checked {
    key: TrackKey,
    n_rows: usize,
    bytes: usize,
}

impl StreamState {
    /// A batch's track labels as the typed values of the stream's track fields: a label is a
    /// value as strata writes it (a `str` as it is, an integer in decimal, as a selection names
    /// it), and one that is not (`"007"`, `"-"`, for a `u64`) is refused, naming the field. A
    /// count that does not match the track is left for `check_shape` to refuse.
    pub(crate) fn track_values(&self, labels: &[&str]) -> Result<Vec<Value>, EngineError> {
        labels
            .iter()
            .zip(&self.decl.track)
            .map(|(&label, &field_idx)| {
                let field = &self.decl.fields[usize::from(field_idx)];
                Value::from_label(field.kind, label)
                    .filter(|value| value.label().as_deref() == Some(label))
                    .ok_or_else(|| {
                        EngineError::refused(
                            self.decl.id.as_str(),
                            0,
                            format!(
                                "track label {label:?} for field {:?} is not a {} as a \
                                 selection names one",
                                field.name, field.kind
                            ),
                        )
                    })
            })
            .chain(
                labels[self.decl.track.len().min(labels.len())..]
                    .iter()
                    .map(|&label| Ok(Value::Str(label.to_owned()))),
            )
            .collect()
    }

    /// Checks a columnar batch as [`StreamState::validate`] checks rows: the same rules in the
    /// same order, so the same batch is refused with the same error either way. `track` holds
    /// the track fields' values (once for the batch), `columns` every other field's, in
    /// declaration order.
    pub(crate) fn validate_columns(
        &self,
        position: u64,
        track: &[Value],
        columns: &[Values<'_>],
        durable_axis: impl Fn(&TrackKey) -> Option<u64>,
        floor_axis: impl Fn(&TrackKey) -> Option<u64>,
    ) -> Result<Checked, EngineError> {
        self.check_position(position)?;
        let id = self.decl.id.as_str();
        let n_fields = self.decl.fields.len();
        let refuse = |row_idx: usize, reason: String| EngineError::refused(id, row_idx, reason);
        let (others, n_rows) = self.check_shape(track, columns)?;
        if n_rows == 0 {
            return Ok(Checked {
                key: TrackKey::ROOT,
                n_rows: 0,
                bytes: 0,
            });
        }
        // Values in declaration order, as a row holds them: the track's or a column's.
        let mut by_field: Vec<Option<&Values<'_>>> = vec![None; n_fields];
        for (&field_idx, column) in others.iter().zip(columns) {
            by_field[field_idx] = Some(column);
        }
        let track_value = |field_idx: usize| {
            let at = self
                .decl
                .track
                .iter()
                .position(|&t| usize::from(t) == field_idx)?;
            track.get(at)
        };
        for (field_idx, field) in self.decl.fields.iter().enumerate() {
            let kind = match by_field[field_idx] {
                Some(column) => column.kind(),
                None => track_value(field_idx)
                    .and_then(Value::kind)
                    .unwrap_or(field.kind),
            };
            if kind != field.kind {
                return Err(refuse(
                    0,
                    format!(
                        "field {:?} is {}, got {} value",
                        field.name,
                        field.kind.with_article(),
                        kind.with_article()
                    ),
                ));
            }
        }
        // The first row whose axis is missing (the only stored number that may not be): a
        // column with nulls handed in for it.
        let missing_axis = self.decl.axis.and_then(|axis_idx| {
            let row = by_field[usize::from(axis_idx)].and_then(Values::first_null)?;
            Some((row, axis_idx))
        });
        let missing_error = |(row, field_idx): (usize, u16)| {
            refuse(
                row,
                self.never_missing(field_idx)
                    .expect("the axis is never missing"),
            )
        };
        if let Some(bad) = missing_axis.filter(|&(row, _)| row == 0) {
            return Err(missing_error(bad));
        }
        let mut labels = Vec::with_capacity(self.decl.track.len());
        for (&field_idx, value) in self.decl.track.iter().zip(track) {
            let field = &self.decl.fields[usize::from(field_idx)];
            let label = value.label().unwrap_or_default();
            validate_label(&label)
                .map_err(|e| refuse(0, format!("track field {:?}: {e}", field.name)))?;
            labels.push(label);
        }
        let key = TrackKey::encode(&labels).map_err(|e| refuse(0, e.to_string()))?;
        // Rows before the first whose axis is missing: their axis, in order.
        let checked_rows = missing_axis.map_or(n_rows, |(row, _)| row);
        if let Some(axis_idx) = self.decl.axis {
            let axis: Cow<'_, [u64]> = match by_field[usize::from(axis_idx)] {
                Some(Values::U64(axis)) => Cow::Borrowed(axis),
                Some(Values::OptU64(axis)) => Cow::Owned(
                    axis[..checked_rows]
                        .iter()
                        .map(|a| a.unwrap_or(0))
                        .collect(),
                ),
                _ => unreachable!("kinds were checked above: the axis is a u64 column"),
            };
            let previous = self
                .last_axis
                .get(&key)
                .copied()
                .or_else(|| durable_axis(&key));
            self.check_axis(axis_idx, &axis[..checked_rows], previous, floor_axis(&key))?;
        }
        if let Some(bad) = missing_axis {
            return Err(missing_error(bad));
        }
        let track_bytes: usize = track
            .iter()
            .map(|v| match v {
                Value::Str(s) => s.len() + 8,
                Value::Bytes(b) => b.len() + 8,
                _ => 8,
            })
            .sum();
        let bytes =
            n_rows * (16 + track_bytes) + columns.iter().map(Values::staged_bytes).sum::<usize>();
        Ok(Checked { key, n_rows, bytes })
    }

    /// The batch's shape: a value per track field, a column per other field, all as long. A
    /// row of the wrong length is refused at row 0 by the row API; so is this. Answers the
    /// fields the columns hold (declaration order) and the number of rows.
    fn check_shape(
        &self,
        track: &[Value],
        columns: &[Values<'_>],
    ) -> Result<(Vec<usize>, usize), EngineError> {
        let id = self.decl.id.as_str();
        let n_fields = self.decl.fields.len();
        let refuse = |row_idx: usize, reason: String| EngineError::refused(id, row_idx, reason);
        let n_rows = columns.first().map_or(0, Values::len);
        let others: Vec<usize> = (0..n_fields)
            .filter(|&i| !self.decl.track.iter().any(|&t| usize::from(t) == i))
            .collect();
        if track.len() != self.decl.track.len() || columns.len() != others.len() {
            return Err(refuse(
                0,
                format!(
                    "expected {} track values and {} columns (one per other field), got {} and \
                     {}",
                    self.decl.track.len(),
                    others.len(),
                    track.len(),
                    columns.len()
                ),
            ));
        }
        if let Some((&field_idx, column)) =
            others.iter().zip(columns).find(|(_, c)| c.len() != n_rows)
        {
            return Err(refuse(
                0,
                format!(
                    "column {:?} holds {} values, the first column {n_rows}",
                    self.decl.fields[field_idx].name,
                    column.len()
                ),
            ));
        }
        Ok((others, n_rows))
    }

    /// Checks a batch's axis column row by row as the row API does: not beneath the
    /// partition's floor (below the last value retired), never backwards from `previous` (the
    /// partition's last axis value, staged or durable) nor within the batch.
    fn check_axis(
        &self,
        axis_idx: u16,
        axis: &[u64],
        mut previous: Option<u64>,
        floor: Option<u64>,
    ) -> Result<(), EngineError> {
        let name = &self.decl.fields[usize::from(axis_idx)].name;
        for (row, &a) in axis.iter().enumerate() {
            let refuse = |reason: String| EngineError::refused(&self.decl.id, row, reason);
            if let Some(floor) = floor.filter(|&floor| a.saturating_add(1) < floor) {
                return Err(refuse(format!(
                    "axis {name:?} {a} goes backwards in its partition: it held rows up to {} \
                     before they were retired (its floor is {floor})",
                    floor - 1
                )));
            }
            if let Some(previous) = previous.filter(|&p| a < p) {
                return Err(refuse(format!(
                    "axis {name:?} goes backwards in its partition: {a} after {previous}"
                )));
            }
            previous = Some(a);
        }
        Ok(())
    }

    /// Stages a batch that [`StreamState::validate_columns`] passed.
    pub(crate) fn stage_columns(
        &mut self,
        positions: Positions<'_>,
        columns: &[Values<'_>],
        checked: Checked,
    ) {
        if checked.n_rows == 0 {
            return;
        }
        let empty = self.empty_rows();
        let staged = self.staged.entry(checked.key.clone()).or_insert(empty);
        match positions {
            Positions::Same(position) => staged
                .positions
                .extend(std::iter::repeat_n(position, checked.n_rows)),
            Positions::Each(each) => {
                assert_eq!(each.len(), checked.n_rows, "a position per row was checked");
                staged.positions.extend_from_slice(each);
            }
        }
        let first = self.next_ordinal;
        staged.ordinals.extend(first..first + checked.n_rows as u64);
        self.next_ordinal += checked.n_rows as u64;
        // The stored columns in declaration order, the axis apart: `columns` less the axis.
        let others: Vec<usize> = (0..self.decl.fields.len())
            .filter(|&i| !self.decl.track.iter().any(|&t| usize::from(t) == i))
            .collect();
        let mut by_field: HashMap<usize, &Values<'_>> = HashMap::new();
        for (&field_idx, column) in others.iter().zip(columns) {
            by_field.insert(field_idx, column);
        }
        if let Some(axis_idx) = self.decl.axis {
            match by_field.get(&usize::from(axis_idx)) {
                Some(Values::U64(axis)) => staged.axis.extend_from_slice(axis),
                Some(Values::OptU64(axis)) => staged.axis.extend(
                    axis.iter()
                        .map(|a| a.expect("validated: the axis is never null")),
                ),
                _ => unreachable!("validated: the axis is a u64 column"),
            }
            if let Some(&last) = staged.axis.last() {
                self.last_axis.insert(checked.key, last);
            }
        }
        for ((buf, nulls), &field_idx) in staged
            .columns
            .iter_mut()
            .zip(&mut staged.nulls)
            .zip(&self.stored)
        {
            let Some(column) = by_field.get(&usize::from(field_idx)) else {
                unreachable!("a stored field is neither the track nor the axis: a column")
            };
            let before = buf.len() as u64;
            // A column with nulls: each null row takes a placeholder and joins the runs.
            macro_rules! with_nulls {
                ($b:expr, $c:expr) => {
                    for (i, v) in $c.iter().enumerate() {
                        match v {
                            Some(v) => $b.push(*v),
                            None => {
                                let row = before + i as u64;
                                $b.push($b.last().copied().unwrap_or_default());
                                push_run(nulls, row..row + 1);
                            }
                        }
                    }
                };
            }
            match (buf, column) {
                (ColumnBuf::U64(b), Values::OptU64(c)) => with_nulls!(b, c),
                (ColumnBuf::I64(b), Values::OptI64(c)) => with_nulls!(b, c),
                (ColumnBuf::F64(b), Values::OptF64(c)) => with_nulls!(b, c),
                (ColumnBuf::U64(b), Values::U64(c)) => b.extend_from_slice(c),
                (ColumnBuf::I64(b), Values::I64(c)) => b.extend_from_slice(c),
                (ColumnBuf::F64(b), Values::F64(c)) => b.extend_from_slice(c),
                (ColumnBuf::Var { offsets, heap, .. }, Values::Str(c)) => {
                    for s in *c {
                        heap.extend_from_slice(s.as_bytes());
                        offsets.push(heap.len() as u64);
                    }
                }
                (ColumnBuf::Var { offsets, heap, .. }, Values::Bytes(c)) => {
                    for b in *c {
                        heap.extend_from_slice(b);
                        offsets.push(heap.len() as u64);
                    }
                }
                (buf, column) => unreachable!("validated: {column:?} into {buf:?}"),
            }
        }
    }
}

impl Store {
    /// Stages a batch given as columns: `track` the labels of the stream's track fields (once
    /// for the whole batch, in the order the declaration names them, as a selection names
    /// them: `&["run_7", "3"]` for a `str` and a `u64` field), `columns` one slice per
    /// other field (the axis included), in declaration order, all as long. The same rules as
    /// [`Store::publish`], checked in the same order, so a batch is refused as columns exactly
    /// when it is refused as rows, with the same error; a refused batch stages nothing. Staging
    /// is a copy of each slice: no value or string is built per row. Touches no file.
    pub fn publish_columns(
        &mut self,
        stream: &str,
        position: u64,
        track: &[&str],
        columns: &[Values<'_>],
    ) -> Result<(), EngineError> {
        self.accept_columns(stream, Positions::Same(position), track, columns)?
            .stage();
        Ok(())
    }

    /// Stages a batch given as columns, as [`Store::publish_columns`] does, with a position per
    /// row (`positions`, as long as the columns, non-decreasing): the batch is what publishing
    /// each row on its own at its position would stage, and it is refused exactly when one of
    /// those calls would be, at the same row with the same reason (a position below the row's
    /// before it is refused at that row as a position below the stream's last). A refused
    /// batch stages nothing. This is what a loader of rows that each carry their own position
    /// (a CSV, a journal) calls once per run of rows of one track.
    pub fn publish_columns_at(
        &mut self,
        stream: &str,
        positions: &[u64],
        track: &[&str],
        columns: &[Values<'_>],
    ) -> Result<(), EngineError> {
        self.accept_columns(stream, Positions::Each(positions), track, columns)?
            .stage();
        Ok(())
    }

    /// Every check of a columnar batch (`publish_columns` or, with a position per row,
    /// `publish_columns_at`: that the store takes writes, then the batch's own), and room for
    /// it under `staged_bytes_max`, without staging it yet: once accepted nothing refuses it,
    /// so a served store answers its caller and then copies the batch ([`Accepted::stage`])
    /// before it does anything else.
    pub(crate) fn accept_columns<'s, 'c, 'v>(
        &'s mut self,
        stream: &'c str,
        positions: Positions<'c>,
        track: &[&str],
        columns: &'c [Values<'v>],
    ) -> Result<Accepted<'s, 'c, 'v>, EngineError> {
        self.check_writable(match positions {
            Positions::Same(_) => "publish_columns",
            Positions::Each(_) => "publish_columns_at",
        })?;
        let catalog = &self.view.catalog;
        let state = stream_state_mut(&mut self.streams, stream)?;
        let track = state.track_values(track)?;
        let track = track.as_slice();
        // The first and last position, and the first row whose position goes back (if any).
        let (first, last, backwards) = match positions {
            Positions::Same(position) => (position, position, None),
            Positions::Each(positions) => {
                let n_rows = columns.first().map_or(0, Values::len);
                if positions.len() != n_rows {
                    return Err(EngineError::refused(
                        stream,
                        0,
                        format!(
                            "expected a position per row: {} for {}",
                            crate::store::count(positions.len(), "position", "positions"),
                            crate::store::count(n_rows, "row", "rows")
                        ),
                    ));
                }
                let Some((&first, &last)) = positions.first().zip(positions.last()) else {
                    // No rows: nothing to stage, but a malformed batch is refused all the same.
                    state.check_shape(track, columns)?;
                    return Ok(Accepted {
                        store: self,
                        stream,
                        positions: Positions::Each(positions),
                        columns,
                        checked: None,
                    });
                };
                let backwards = positions
                    .windows(2)
                    .position(|w| w[1] < w[0])
                    .map(|i| i + 1);
                (first, last, backwards)
            }
        };
        // Rows before the first whose position goes back are checked as rows would be; that
        // row is then refused, as its own publish call would be after theirs.
        let head: Vec<Values<'_>>;
        let to_check = match backwards {
            Some(n_rows_before) => {
                head = columns.iter().map(|c| c.head(n_rows_before)).collect();
                &head
            }
            None => columns,
        };
        let checked = state.validate_columns(
            first,
            track,
            to_check,
            |key| durable_axis(catalog, stream, key),
            |key| floor_axis(catalog, stream, key),
        )?;
        if let (Some(row_idx), Positions::Each(positions)) = (backwards, positions) {
            return Err(EngineError::refused(
                stream,
                row_idx,
                format!(
                    "position {} is below the stream's last position {}",
                    positions[row_idx],
                    positions[row_idx - 1]
                ),
            ));
        }
        room_to_stage(
            self.writer.staged_bytes,
            checked.bytes,
            self.view.config.staged_bytes_max,
        )?;
        Ok(Accepted {
            store: self,
            stream,
            positions,
            columns,
            checked: Some((checked, last)),
        })
    }
}

/// A columnar batch [`Store::accept_columns`] passed, holding the store until it is staged:
/// nothing happens to the store between the checks and the copy.
#[must_use = "an accepted batch is staged only by `stage`"]
pub(crate) struct Accepted<'s, 'c, 'v> {
    store: &'s mut Store,
    stream: &'c str,
    positions: Positions<'c>,
    columns: &'c [Values<'v>],
    /// The checks' verdict and the batch's last position; none for a batch of no rows.
    checked: Option<(Checked, u64)>,
}

impl Accepted<'_, '_, '_> {
    /// Copies the batch into staging: what the checks passed, and nothing can refuse now.
    pub(crate) fn stage(self) {
        let Some((checked, last)) = self.checked else {
            return;
        };
        let state = self
            .store
            .streams
            .get_mut(self.stream)
            .expect("the stream was found when the batch was checked");
        let (batch_bytes, n_rows) = (checked.bytes, checked.n_rows);
        state.stage_columns(self.positions, self.columns, checked);
        state.note_position(last, n_rows);
        self.store.writer.staged_bytes += batch_bytes;
    }
}
