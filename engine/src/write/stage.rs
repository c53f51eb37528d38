//! Staging: published rows held in per-partition column buffers until a seal writes them.
//!
//! Publishing validates a whole batch first and stages it only if every row passes, so a
//! refused batch leaves no trace. Staging touches no file.

use std::collections::{BTreeMap, HashMap};
use std::ops::Range;

use strata_index::{FieldKind, StreamDecl, TrackKey, validate_label};
use strata_segment::validity::push_run;
use strata_segment::{ColumnData, RowsInput, VarData};

use crate::error::EngineError;
use crate::value::{Row, Value};

/// One stored column's staged values.
#[derive(Clone, Debug)]
pub(crate) enum ColumnBuf {
    U64(Vec<u64>),
    I64(Vec<i64>),
    F64(Vec<f64>),
    Var {
        offsets: Vec<u64>,
        heap: Vec<u8>,
        is_str: bool,
    },
}

impl ColumnBuf {
    pub(crate) fn new(kind: FieldKind) -> ColumnBuf {
        match kind {
            FieldKind::U64 => ColumnBuf::U64(Vec::new()),
            FieldKind::I64 => ColumnBuf::I64(Vec::new()),
            FieldKind::F64 => ColumnBuf::F64(Vec::new()),
            _ => ColumnBuf::Var {
                offsets: vec![0],
                heap: Vec::new(),
                is_str: kind == FieldKind::Str,
            },
        }
    }

    /// Appends `value`; answers whether it was null (a placeholder stands in its place: the
    /// value before it in the column, or zero, which costs a packed column least).
    fn push(&mut self, value: &Value) -> bool {
        match (self, value) {
            (ColumnBuf::U64(c), Value::U64(v)) => c.push(*v),
            (ColumnBuf::I64(c), Value::I64(v)) => c.push(*v),
            (ColumnBuf::F64(c), Value::F64(v)) => c.push(*v),
            (ColumnBuf::Var { offsets, heap, .. }, Value::Str(v)) => {
                heap.extend_from_slice(v.as_bytes());
                offsets.push(heap.len() as u64);
            }
            (ColumnBuf::Var { offsets, heap, .. }, Value::Bytes(v)) => {
                heap.extend_from_slice(v);
                offsets.push(heap.len() as u64);
            }
            (column, Value::Null) => {
                column.push_placeholder();
                return true;
            }
            (column, value) => unreachable!("validated: {value:?} into {column:?}"),
        }
        false
    }

    /// Appends the value a null row holds in the column: the one before it, or zero.
    pub(crate) fn push_placeholder(&mut self) {
        match self {
            ColumnBuf::U64(c) => c.push(c.last().copied().unwrap_or(0)),
            ColumnBuf::I64(c) => c.push(c.last().copied().unwrap_or(0)),
            ColumnBuf::F64(c) => c.push(c.last().copied().unwrap_or(0.0)),
            ColumnBuf::Var { .. } => unreachable!("validated: only a number may be missing"),
        }
    }

    /// Rows in the column.
    pub(crate) fn len(&self) -> usize {
        match self {
            ColumnBuf::U64(c) => c.len(),
            ColumnBuf::I64(c) => c.len(),
            ColumnBuf::F64(c) => c.len(),
            ColumnBuf::Var { offsets, .. } => offsets.len() - 1,
        }
    }

    pub(crate) fn data(&self) -> ColumnData<'_> {
        match self {
            ColumnBuf::U64(c) => ColumnData::U64(c),
            ColumnBuf::I64(c) => ColumnData::I64(c),
            ColumnBuf::F64(c) => ColumnData::F64(c),
            ColumnBuf::Var {
                offsets,
                heap,
                is_str,
            } => {
                let var = VarData { offsets, heap };
                if *is_str {
                    ColumnData::Str(var)
                } else {
                    ColumnData::Bytes(var)
                }
            }
        }
    }
}

/// One partition's staged rows.
#[derive(Clone, Debug)]
pub(crate) struct Staged {
    pub positions: Vec<u64>,
    pub ordinals: Vec<u64>,
    pub axis: Vec<u64>,
    /// One buffer per stored column, in the stream's stored-column order.
    pub columns: Vec<ColumnBuf>,
    /// Per stored column, the runs of rows (indexes into this partition's staged rows,
    /// ascending) whose value is null: the column holds a placeholder there.
    pub nulls: Vec<Vec<Range<u64>>>,
}

/// A stream's declaration, what follows from it, and its staged rows.
#[derive(Debug)]
pub(crate) struct StreamState {
    pub decl: StreamDecl,
    /// Fields stored as columns: neither a track component nor the axis, in declaration order.
    pub stored: Vec<u16>,
    pub staged: BTreeMap<TrackKey, Staged>,
    /// The ordinal the next published row gets (dense per stream).
    pub next_ordinal: u64,
    /// The highest position published (sealed or staged).
    pub last_position: Option<u64>,
    /// The highest position staged (what the next seal makes the watermark).
    pub staged_position: Option<u64>,
    /// Positions at or below this are refused: an operator's repair cut acknowledged rows there.
    pub fence: Option<u64>,
    /// Each partition's highest axis value published so far (filled on first touch).
    pub last_axis: HashMap<TrackKey, u64>,
    /// The lowest position a row may be published at: one past the highest horizon
    /// `Store::trim_to` recorded (the highest raw floor of the stream's partitions), 0 before
    /// any. A row beneath it would land beneath the floor, where no read can reach it.
    pub floor: u64,
}

/// The bytes one row adds to staging (what `staged_bytes_max` bounds).
fn row_bytes(row: &Row) -> usize {
    // Position and ordinal, then each value (8 bytes, or its length plus an offset).
    16 + row
        .iter()
        .map(|v| match v {
            Value::Str(s) => s.len() + 8,
            Value::Bytes(b) => b.len() + 8,
            _ => 8,
        })
        .sum::<usize>()
}

impl StreamState {
    pub fn new(
        decl: StreamDecl,
        next_ordinal: u64,
        last_position: Option<u64>,
        fence: Option<u64>,
        floor: u64,
    ) -> StreamState {
        let stored = decl.stored();
        StreamState {
            decl,
            stored,
            staged: BTreeMap::new(),
            next_ordinal,
            last_position,
            staged_position: None,
            fence,
            last_axis: HashMap::new(),
            floor,
        }
    }

    /// Takes the staged rows out into a state of their own (the declaration, the stored
    /// columns, the staged partitions and the staged position), leaving this one's staging
    /// empty and everything it has published (ordinals, positions, axis values) as it was:
    /// the next publish is checked against the rows sealed off too.
    pub(crate) fn seal_off(&mut self) -> StreamState {
        StreamState {
            decl: self.decl.clone(),
            stored: self.stored.clone(),
            staged: std::mem::take(&mut self.staged),
            next_ordinal: self.next_ordinal,
            last_position: self.last_position,
            staged_position: self.staged_position.take(),
            fence: self.fence,
            last_axis: HashMap::new(),
            floor: self.floor,
        }
    }

    /// Refuses a batch at `position` below the last one, at or below the fence, or beneath
    /// the floor.
    pub(crate) fn check_position(&self, position: u64) -> Result<(), EngineError> {
        let id = self.decl.id.clone();
        if let Some(last) = self.last_position
            && position < last
        {
            return Err(EngineError::refused(
                &id,
                0,
                format!("position {position} is below the stream's last position {last}"),
            ));
        }
        if let Some(fence) = self.fence.filter(|&fence| position <= fence) {
            return Err(EngineError::refused(
                &id,
                0,
                format!(
                    "position {position} is at or below {fence}, the fence a manifest repair set: \
                     rows were once acknowledged there, so those positions are never reused"
                ),
            ));
        }
        if position < self.floor {
            return Err(EngineError::refused(
                &id,
                0,
                format!(
                    "position {position} is beneath the stream's floor {}: rows at or below {} \
                     were retired, so a row there could never be read",
                    self.floor,
                    self.floor - 1
                ),
            ));
        }
        Ok(())
    }

    /// Checks a whole batch; answers each row's track key and the batch's staged bytes.
    /// `durable_axis` gives a partition's highest recorded axis value, `floor_axis` its raw
    /// floor's axis value (rows beneath it were trimmed: a new row may not land there).
    pub fn validate(
        &mut self,
        position: u64,
        rows: &[Row],
        durable_axis: impl Fn(&TrackKey) -> Option<u64>,
        floor_axis: impl Fn(&TrackKey) -> Option<u64>,
    ) -> Result<(Vec<TrackKey>, usize), EngineError> {
        self.check_position(position)?;
        let id = self.decl.id.clone();
        let mut keys = Vec::with_capacity(rows.len());
        let mut bytes = 0;
        // Axis values this batch would leave per partition, so rows within it are checked too.
        let mut batch_axis: HashMap<TrackKey, u64> = HashMap::new();
        for (row_idx, row) in rows.iter().enumerate() {
            let refuse = |reason: String| EngineError::refused(&id, row_idx, reason);
            if row.len() != self.decl.fields.len() {
                return Err(refuse(format!(
                    "expected {} values, got {}",
                    self.decl.fields.len(),
                    row.len()
                )));
            }
            for ((field_idx, field), value) in self.decl.fields.iter().enumerate().zip(row) {
                match value.kind() {
                    Some(kind) if kind != field.kind => {
                        return Err(refuse(format!(
                            "field {:?} is {}, got {} value",
                            field.name,
                            field.kind.with_article(),
                            kind.with_article()
                        )));
                    }
                    Some(_) => {}
                    None => {
                        let field_idx = u16::try_from(field_idx).expect("at most FIELDS_MAX");
                        if let Some(reason) = self.never_missing(field_idx) {
                            return Err(refuse(reason));
                        }
                    }
                }
            }
            let mut labels = Vec::with_capacity(self.decl.track.len());
            for &field_idx in &self.decl.track {
                let field = &self.decl.fields[usize::from(field_idx)];
                let label = row[usize::from(field_idx)].label().unwrap_or_default();
                validate_label(&label)
                    .map_err(|e| refuse(format!("track field {:?}: {e}", field.name)))?;
                labels.push(label);
            }
            let key = TrackKey::encode(&labels).map_err(|e| refuse(e.to_string()))?;
            if let Some(axis_idx) = self.decl.axis {
                let Value::U64(axis) = row[usize::from(axis_idx)] else {
                    unreachable!("kinds were checked above");
                };
                let previous = match batch_axis.get(&key) {
                    Some(&a) => Some(a),
                    None => self
                        .last_axis
                        .get(&key)
                        .copied()
                        .or_else(|| durable_axis(&key)),
                };
                // The floor is one past the last axis value retired (or above): a row tying
                // with that value keeps the partition's axis non-decreasing, and lies beneath
                // the floor for percentiles only (as a kept row tying across a trim does).
                if let Some(floor) =
                    floor_axis(&key).filter(|&floor| axis.saturating_add(1) < floor)
                {
                    let name = &self.decl.fields[usize::from(axis_idx)].name;
                    return Err(refuse(format!(
                        "axis {name:?} {axis} goes backwards in its partition: it held rows up \
                         to {} before they were retired (its floor is {floor})",
                        floor - 1
                    )));
                }
                if let Some(previous) = previous
                    && axis < previous
                {
                    let name = &self.decl.fields[usize::from(axis_idx)].name;
                    return Err(refuse(format!(
                        "axis {name:?} goes backwards in its partition: {axis} after {previous}"
                    )));
                }
                batch_axis.insert(key.clone(), axis);
            }
            bytes += row_bytes(row);
            keys.push(key);
        }
        Ok((keys, bytes))
    }

    /// Stages a batch that [`StreamState::validate`] passed.
    /// No rows yet: one empty buffer per stored column.
    pub fn empty_rows(&self) -> Staged {
        Staged {
            positions: Vec::new(),
            ordinals: Vec::new(),
            axis: Vec::new(),
            columns: self
                .stored
                .iter()
                .map(|&i| ColumnBuf::new(self.decl.fields[usize::from(i)].kind))
                .collect(),
            nulls: vec![Vec::new(); self.stored.len()],
        }
    }

    /// Why field `field_idx` may not be missing (null), or `None` if it may: only a measured
    /// field (a number that is neither the axis nor a track component) may.
    pub(crate) fn never_missing(&self, field_idx: u16) -> Option<String> {
        let field = &self.decl.fields[usize::from(field_idx)];
        if self.decl.axis == Some(field_idx) {
            Some(format!(
                "field {:?} is missing, and it is the axis: every row needs one",
                field.name
            ))
        } else if self.decl.track.contains(&field_idx) {
            Some(format!(
                "field {:?} is missing, and it is a track component: every row needs a label",
                field.name
            ))
        } else if !field.kind.is_numeric() {
            Some(format!(
                "field {:?} is missing, and it is {}: only a measured u64, i64 or f64 field may \
                 be missing",
                field.name,
                field.kind.with_article()
            ))
        } else {
            None
        }
    }

    /// What the segment writer takes for the rows of one partition of this stream, staged by
    /// a barrier.
    pub fn rows_input<'a>(&'a self, track: &'a TrackKey, rows: &'a Staged) -> RowsInput<'a> {
        RowsInput {
            stream: &self.decl.id,
            track,
            positions: &rows.positions,
            ordinals: &rows.ordinals,
            axis: self.decl.axis.map(|_| rows.axis.as_slice()),
            columns: self
                .stored
                .iter()
                .zip(&rows.columns)
                .map(|(&field, column)| (field, column.data()))
                .collect(),
            nulls: self
                .stored
                .iter()
                .zip(&rows.nulls)
                .filter(|(_, runs)| !runs.is_empty())
                .map(|(&field, runs)| (field, runs.as_slice()))
                .collect(),
        }
    }

    pub fn stage(&mut self, position: u64, rows: &[Row], keys: Vec<TrackKey>) {
        for (row, key) in rows.iter().zip(keys) {
            let empty = self.empty_rows();
            let staged = self.staged.entry(key.clone()).or_insert(empty);
            staged.positions.push(position);
            staged.ordinals.push(self.next_ordinal);
            self.next_ordinal += 1;
            if let Some(axis_idx) = self.decl.axis
                && let Value::U64(axis) = row[usize::from(axis_idx)]
            {
                staged.axis.push(axis);
                self.last_axis.insert(key, axis);
            }
            for ((column, nulls), &field_idx) in staged
                .columns
                .iter_mut()
                .zip(&mut staged.nulls)
                .zip(&self.stored)
            {
                let row_idx = column.len() as u64;
                if column.push(&row[usize::from(field_idx)]) {
                    push_run(nulls, row_idx..row_idx + 1);
                }
            }
        }
        self.note_position(position, rows.len());
    }

    /// After staging `n_rows` rows at `position`: the stream's last and staged position (a
    /// batch of no rows moves neither).
    pub(crate) fn note_position(&mut self, position: u64, n_rows: usize) {
        if n_rows > 0 {
            self.last_position = Some(position);
            self.staged_position = Some(position);
        }
    }
}
