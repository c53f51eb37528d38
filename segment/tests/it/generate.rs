//! Generated segment contents: partitions with every column kind, rows and level cells.

use proptest::prelude::*;
use strata_index::TrackKey;
use strata_levels::{Cell, Ladder, Num, NumKind};
use strata_segment::{ColumnData, FieldCells, PartitionInput, VarData};

/// Owned column values (the writer borrows them).
#[derive(Clone, Debug)]
pub enum Values {
    U64(Vec<u64>),
    I64(Vec<i64>),
    F64(Vec<f64>),
    Str(Vec<String>),
    Bytes(Vec<Vec<u8>>),
}

/// One generated partition, owning everything a `PartitionInput` borrows.
#[derive(Clone, Debug)]
pub struct Part {
    pub stream: String,
    pub track: TrackKey,
    pub positions: Vec<u64>,
    pub ordinals: Vec<u64>,
    pub axis: Option<Vec<u64>>,
    pub columns: Vec<(u16, Values)>,
    /// Per measured field: (field, kind, levels).
    pub cells: Vec<(u16, NumKind, Vec<Vec<Cell>>)>,
    var_offsets: Vec<Vec<u64>>,
    var_heaps: Vec<Vec<u8>>,
}

impl Part {
    pub fn input(&self) -> PartitionInput<'_> {
        let mut var_idx = 0;
        let columns = self
            .columns
            .iter()
            .map(|(field, values)| {
                let data = match values {
                    Values::U64(v) => ColumnData::U64(v),
                    Values::I64(v) => ColumnData::I64(v),
                    Values::F64(v) => ColumnData::F64(v),
                    Values::Str(_) | Values::Bytes(_) => {
                        let var = VarData {
                            offsets: &self.var_offsets[var_idx],
                            heap: &self.var_heaps[var_idx],
                        };
                        var_idx += 1;
                        if matches!(values, Values::Str(_)) {
                            ColumnData::Str(var)
                        } else {
                            ColumnData::Bytes(var)
                        }
                    }
                };
                (*field, data)
            })
            .collect();
        PartitionInput {
            stream: &self.stream,
            track: &self.track,
            positions: &self.positions,
            ordinals: &self.ordinals,
            axis: self.axis.as_deref(),
            columns,
            nulls: Vec::new(),
            cells: self
                .cells
                .iter()
                .map(|(field, kind, levels)| FieldCells {
                    field: *field,
                    kind: *kind,
                    levels,
                })
                .collect(),
            stored_from: 0,
        }
    }
}

fn values(kind: u8, n: usize) -> BoxedStrategy<Values> {
    match kind % 5 {
        0 => prop::collection::vec(any::<u64>(), n)
            .prop_map(Values::U64)
            .boxed(),
        1 => prop::collection::vec(any::<i64>(), n)
            .prop_map(Values::I64)
            .boxed(),
        2 => prop::collection::vec(-1e12f64..1e12, n)
            .prop_map(Values::F64)
            .boxed(),
        3 => prop::collection::vec(".{0,6}", n)
            .prop_map(Values::Str)
            .boxed(),
        _ => prop::collection::vec(prop::collection::vec(any::<u8>(), 0..5), n)
            .prop_map(Values::Bytes)
            .boxed(),
    }
}

fn non_decreasing(start: u64, steps: Vec<u64>) -> Vec<u64> {
    let mut v = start;
    steps
        .into_iter()
        .map(|s| {
            v = v.saturating_add(s);
            v
        })
        .collect()
}

/// A partition of `n` rows with column kinds `kinds`; measured cells folded from the numeric
/// columns over a small ladder when it has an axis.
pub fn part(stream: String, track: TrackKey, ordinal_base: u64) -> impl Strategy<Value = Part> {
    (
        1usize..40,
        prop::collection::vec(any::<u8>(), 0..5),
        any::<bool>(),
    )
        .prop_flat_map(move |(n, kinds, has_axis)| {
            let columns: Vec<_> = kinds
                .iter()
                .enumerate()
                .map(|(i, &k)| values(k, n).prop_map(move |v| (i as u16 + 1, v)))
                .collect();
            // Positions and ordinals either arbitrary or as a store writes them (batches of one
            // position; ordinals stepping by the tracks interleaved), so that both the plain
            // and the run-encoded blocks are written.
            let steps = prop_oneof![
                prop::collection::vec(prop_oneof![Just(0u64), 1u64..100], n),
                prop::collection::vec(prop_oneof![15 => Just(0u64), 1 => 1u64..3], n),
            ];
            let gaps = prop_oneof![
                prop::collection::vec(1u64..4, n),
                (1u64..9).prop_map(move |gap| vec![gap; n]),
            ];
            let axis_steps = prop::collection::vec(prop_oneof![Just(0u64), 1u64..1000], n);
            let (stream, track) = (stream.clone(), track.clone());
            (columns, steps, gaps, axis_steps, any::<u64>()).prop_map(
                move |(columns, steps, gaps, axis_steps, start)| {
                    let positions = non_decreasing(start % 1_000_000, steps);
                    let ordinals = non_decreasing(ordinal_base, gaps);
                    let axis = has_axis.then(|| non_decreasing(start % 5000, axis_steps));
                    build(
                        stream.clone(),
                        track.clone(),
                        positions,
                        ordinals,
                        axis,
                        columns,
                    )
                },
            )
        })
}

pub fn build(
    stream: String,
    track: TrackKey,
    positions: Vec<u64>,
    ordinals: Vec<u64>,
    axis: Option<Vec<u64>>,
    columns: Vec<(u16, Values)>,
) -> Part {
    let mut var_offsets = Vec::new();
    let mut var_heaps = Vec::new();
    for (_, values) in &columns {
        let items: Vec<Vec<u8>> = match values {
            Values::Str(v) => v.iter().map(|s| s.as_bytes().to_vec()).collect(),
            Values::Bytes(v) => v.clone(),
            _ => continue,
        };
        let mut offsets = vec![0u64];
        let mut heap = Vec::new();
        for item in items {
            heap.extend_from_slice(&item);
            offsets.push(heap.len() as u64);
        }
        var_offsets.push(offsets);
        var_heaps.push(heap);
    }
    let mut cells = Vec::new();
    if let Some(axis) = &axis {
        let ladder = Ladder::new(16, 4).unwrap();
        let n_levels = ladder.top_level(axis[0], *axis.last().unwrap()) + 1;
        for (field, values) in &columns {
            let (kind, nums): (NumKind, Vec<Num>) = match values {
                Values::U64(v) => (NumKind::U64, v.iter().map(|&x| Num::U64(x)).collect()),
                Values::I64(v) => (NumKind::I64, v.iter().map(|&x| Num::I64(x)).collect()),
                Values::F64(v) => (NumKind::F64, v.iter().map(|&x| Num::F64(x)).collect()),
                _ => continue,
            };
            let mut levels = vec![ladder.fold_rows(*field, axis.iter().copied().zip(nums))];
            for _ in 1..n_levels {
                let next = ladder.fold_level(levels.last().unwrap());
                levels.push(next);
            }
            cells.push((*field, kind, levels));
        }
    }
    Part {
        stream,
        track,
        positions,
        ordinals,
        axis,
        columns,
        cells,
        var_offsets,
        var_heaps,
    }
}

/// Several partitions of up to three streams, with distinct (stream, track) pairs.
pub fn parts() -> impl Strategy<Value = Vec<Part>> {
    let labels = prop::sample::select(vec!["run_7", "run_70", "é", "日本", "a.b-c"]);
    prop::collection::btree_set(
        (
            prop::sample::select(vec!["s1", "s2", "stream three"]),
            prop::collection::vec(labels, 0..3),
        ),
        1..6,
    )
    .prop_flat_map(|keys| {
        keys.into_iter()
            .enumerate()
            .map(|(i, (stream, labels))| {
                part(
                    stream.to_owned(),
                    TrackKey::encode(&labels).unwrap(),
                    i as u64 * 1000,
                )
            })
            .collect::<Vec<_>>()
    })
}
