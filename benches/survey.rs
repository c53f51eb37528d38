//! Survey cost against a memory read of the cells it answers, against row count, and against an
//! M4 scan of the same raw rows.
//!
//! `cargo bench --bench survey` builds one partition of 10^6 rows (a few seconds) and times:
//! - `survey_vs_memory_read_1000000_rows`: a full-range survey at budget 4000 (about 1,000 cells
//!   of one f64 field, warm) against a plain read of as many bytes as those cells occupy in the
//!   segment file, from memory (`memory_read`: every 8-byte word summed, vectorised; and
//!   `memory_copy`: the bytes copied into a new vector, the least an owned answer costs).
//!   Target (issue 13 item 4): the survey within 3x of the read.
//! - `survey_vs_m4_scan_1000000_rows`: the survey against reading every raw row through the same
//!   mapped segments and folding it into the survey's cells: what the level ladder buys.
//!
//! - `packed_against_plain_1000000_rows`: the same rows (sealed 10,000 a barrier and
//!   compacted) in a store of packed columns and one of plain ones, surveys and mean folds
//!   timed alike (#30: a survey within 1.5x of the plain store's, a fold mean unchanged).
//!
//! `STRATA_BENCH_SCALE=1 cargo bench --bench survey` also builds 10^7 and 10^8 rows (the largest
//! takes a couple of minutes and a few GB in a temp dir) and times the survey over each
//! (`survey_budget_4000`). Target: the 10^8 survey costs at most 2x the 10^6 one.

use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use strata::levels::{Bucket, Ladder, Num};
use strata::segment::SegmentReader;
use strata::segment::vfs::{RealFs, Vfs};
use strata::{Aggregate, Config, FieldKind, Row, Store, Stream, StreamDecl, Value, Values};

const BUDGET: u64 = 4000;
const SEAL_EVERY: u64 = 5_000_000;

fn decl() -> StreamDecl {
    Stream::new("series")
        .field("t", FieldKind::U64)
        .field("value", FieldKind::F64)
        .axis("t")
        .build()
        .expect("a valid declaration")
}

/// A store holding `n` rows on one partition, sealed every `SEAL_EVERY` rows.
fn build(n: u64) -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let config = Config::default().staged_bytes_max(1 << 30);
    let mut store = Store::open_or_create(dir.path(), config, &[decl()]).expect("a store");
    let mut position = 0;
    let mut t = 0;
    while t < n {
        let end = (t + 100_000).min(n);
        let rows: Vec<Row> = (t..end)
            .map(|t| vec![Value::U64(t), Value::F64((t as f64 * 0.001).sin() * 100.0)])
            .collect();
        store.publish("series", position, &rows).expect("publish");
        position += 1;
        if end % SEAL_EVERY == 0 {
            store.seal().expect("seal");
        }
        t = end;
    }
    store.seal().expect("seal");
    (dir, store)
}

/// The naive answer: read every raw row through the mapped segments and fold it into cells of
/// `level` by hand.
fn m4_scan(root: &std::path::Path, ladder: &Ladder, level: u8) -> usize {
    let fs = RealFs::open(root).expect("the store");
    let mut cells: Vec<(u64, Bucket)> = Vec::new();
    for entry in fs.list("seg").expect("seg/") {
        let path = format!("seg/{}", entry.name);
        let reader = SegmentReader::open(&path, fs.map(&path).expect("map")).expect("open");
        for part in 0..reader.partitions().len() {
            let axis = reader.axis(part).expect("axis").expect("an axis");
            let axis = axis.values(0..axis.len()).expect("the axis decodes");
            let column = reader.column(part, 1).expect("col").expect("a column");
            let Some(strata::segment::Decoded::F64(values)) =
                column.numbers(0..column.len()).expect("the column decodes")
            else {
                panic!("value is an f64 column");
            };
            for (&a, v) in axis.iter().zip(values) {
                let v = v.get();
                let index = ladder.cell(a, level);
                let row = Bucket::of_row(1, a, Num::F64(v));
                match cells.last_mut() {
                    Some((i, b)) if *i == index => b.absorb(&row),
                    _ => cells.push((index, row)),
                }
            }
        }
    }
    cells.len()
}

/// A read of `bytes` from memory: every 8-byte word, summed. What touching the cells' bytes
/// costs with no decoding, merging or checking at all.
fn memory_read(bytes: &[u8]) -> u64 {
    bytes
        .chunks_exact(8)
        .map(|w| u64::from_le_bytes(w.try_into().expect("8 bytes")))
        .fold(0u64, u64::wrapping_add)
}

/// The survey against a memory read of as many bytes as its cells occupy in the segment file
/// (taken from that file, so the bytes are real ones and sit in memory, warm, as the survey's do).
fn survey_vs_memory_read(c: &mut Criterion) {
    let n = 1_000_000u64;
    let (dir, store) = build(n);
    let survey = store.survey("series", &[], .., BUDGET).expect("survey");
    let n_cells: usize = survey.fields.iter().map(|f| f.buckets.len()).sum();
    let cell_bytes = n_cells * size_of::<strata::segment::format::CellRecord>();
    let mut bytes = Vec::new();
    for entry in std::fs::read_dir(dir.path().join("seg")).expect("seg/") {
        bytes.extend(std::fs::read(entry.expect("an entry").path()).expect("a segment"));
    }
    assert!(bytes.len() >= cell_bytes, "the file holds the cells");
    let file_len = bytes.len();
    bytes.drain(..file_len - cell_bytes);
    let mut group = c.benchmark_group(format!(
        "survey_vs_memory_read_{n}_rows_{n_cells}_cells_{cell_bytes}_bytes"
    ));
    group.measurement_time(Duration::from_secs(5));
    group.bench_function("survey", |b| {
        b.iter(|| store.survey("series", &[], .., BUDGET).expect("survey"));
    });
    group.bench_function("memory_read", |b| {
        b.iter(|| memory_read(std::hint::black_box(&bytes)));
    });
    // An answer that owns its cells writes them somewhere: the least of that is one copy.
    group.bench_function("memory_copy", |b| {
        b.iter(|| std::hint::black_box(&bytes).clone());
    });
    group.finish();
}

fn survey_by_rows(c: &mut Criterion) {
    let sizes: &[u64] = if std::env::var_os("STRATA_BENCH_SCALE").is_some() {
        &[1_000_000, 10_000_000, 100_000_000]
    } else {
        &[1_000_000]
    };
    let stores: Vec<(u64, tempfile::TempDir, Store)> = sizes
        .iter()
        .map(|&n| {
            let (dir, store) = build(n);
            (n, dir, store)
        })
        .collect();
    let mut group = c.benchmark_group("survey_budget_4000");
    group.measurement_time(Duration::from_secs(5));
    for (n, _, store) in &stores {
        group.bench_function(BenchmarkId::new("rows", n), |b| {
            b.iter(|| store.survey("series", &[], .., BUDGET).expect("survey"));
        });
    }
    group.finish();

    let (_, dir, store) = &stores[0];
    let level = store
        .survey("series", &[], .., BUDGET)
        .expect("survey")
        .level;
    let ladder = Ladder::new(strata::DEFAULT_LADDER.base, strata::DEFAULT_LADDER.fanout)
        .expect("the default ladder");
    let mut group = c.benchmark_group("survey_vs_m4_scan_1000000_rows");
    group
        .measurement_time(Duration::from_secs(8))
        .sample_size(20);
    group.bench_function("survey", |b| {
        b.iter(|| store.survey("series", &[], .., BUDGET).expect("survey"));
    });
    group.bench_function("m4_scan", |b| {
        b.iter(|| m4_scan(dir.path(), &ladder, level));
    });
    group.finish();
}

/// 10^6 rows (one f64 field, full precision) sealed 10,000 rows a barrier and compacted, into
/// a store of packed columns (the default, segment format 5 on) and one of plain columns
/// (`Config::pack_columns(false)`: the layout, and the adaptive rule's cost, of the format
/// before #30), timed alike in one run: a warm survey over the whole range and over 1% of it
/// (which answers at a finer level, folded from the rows where a file does not store it), and
/// a mean fold over the whole range and over a range that cuts cells at both ends.
fn packed_against_plain(c: &mut Criterion) {
    const N: u64 = 1_000_000;
    let stores: Vec<(&str, tempfile::TempDir, Store)> = [("packed", true), ("plain", false)]
        .into_iter()
        .map(|(name, pack)| {
            let (dir, store) = build_barriers(N, Config::default().pack_columns(pack));
            (name, dir, store)
        })
        .collect();
    // Both stores answer alike: the same buckets, points and counts (their sums may differ in
    // the last bits: files of other sizes merge in other groups, docs/compaction.md).
    let answers = |store: &Store| -> Vec<String> {
        [
            store.survey("series", &[], .., BUDGET),
            store.survey("series", &[], 400_000..=409_999, BUDGET),
        ]
        .into_iter()
        .flat_map(|survey| survey.expect("survey").fields)
        .flat_map(|field| field.buckets)
        .map(|b| {
            format!(
                "{:?} {:?} {:?} {:?} {}",
                b.first, b.last, b.min, b.max, b.count
            )
        })
        .collect()
    };
    assert_eq!(answers(&stores[0].2), answers(&stores[1].2));
    let mut group = c.benchmark_group("packed_against_plain_1000000_rows");
    group.measurement_time(Duration::from_secs(4));
    for (name, _, store) in &stores {
        group.bench_function(BenchmarkId::new("survey, whole range", name), |b| {
            b.iter(|| store.survey("series", &[], .., BUDGET).expect("survey"));
        });
        group.bench_function(BenchmarkId::new("survey, 1% of the range", name), |b| {
            b.iter(|| {
                store
                    .survey("series", &[], 400_000..=409_999, BUDGET)
                    .expect("survey")
            });
        });
        group.bench_function(BenchmarkId::new("fold mean, whole range", name), |b| {
            b.iter(|| {
                store
                    .fold("series", &[], .., Aggregate::Mean)
                    .expect("fold")
            });
        });
        group.bench_function(
            BenchmarkId::new("fold mean, cells cut at both ends", name),
            |b| {
                b.iter(|| {
                    store
                        .fold("series", &[], 1_234..=876_543, Aggregate::Mean)
                        .expect("fold")
                });
            },
        );
    }
    group.finish();
    for (name, dir, _) in &stores {
        let bytes: u64 = std::fs::read_dir(dir.path().join("seg"))
            .expect("seg/")
            .map(|e| e.expect("an entry").metadata().expect("metadata").len())
            .sum();
        println!("{name}: {:.2} B/row in segments", bytes as f64 / N as f64);
    }
}

/// A store of `n` rows of one partition, sealed 10,000 rows a barrier through `publish_columns`
/// and compacted as `Served` would (then once more when the barriers stop).
fn build_barriers(n: u64, config: Config) -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let mut store = Store::open_or_create(dir.path(), config, &[decl()]).expect("a store");
    for (position, start) in (0..n).step_by(10_000).enumerate() {
        let t: Vec<u64> = (start..(start + 10_000).min(n)).collect();
        let v: Vec<f64> = t
            .iter()
            .map(|&t| (t as f64 * 0.001).sin() * 100.0)
            .collect();
        store
            .publish_columns(
                "series",
                position as u64,
                &[],
                &[Values::U64(&t), Values::F64(&v)],
            )
            .expect("publish");
        store.seal().expect("seal");
        for _ in 0..4 {
            if store.compact_step().expect("a step").is_none() {
                break;
            }
        }
    }
    store.compact().expect("compact");
    (dir, store)
}

criterion_group!(
    benches,
    survey_vs_memory_read,
    survey_by_rows,
    packed_against_plain
);
criterion_main!(benches);
