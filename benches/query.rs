//! Streaming raw reads over one track: 10^7 rows of a u64 axis and an f64 value, sealed into
//! 10 segments, read back (warm: the files are in the page cache after the first pass) as
//!
//! - `query_runs`: every run's positions, axis and values summed, from the mapped columns;
//! - `memory read`: the same bytes (a position, an axis value and a value a row) summed from
//!   three `Vec`s in memory, the same way: the physical limit the runs are measured against;
//! - `query_iter`: every row built as a `StoredRow` (a `Vec<Value>` a row), for scale;
//! - `query_runs` over the same rows with `Config::pack_columns(false)`: plain columns, read
//!   straight from the map, as every segment was before #30;
//!
//! `cargo bench --bench query`; criterion prints elements/s (rows/s) for each, in one run, so
//! the ratios are measured in one sitting. Targets: runs >= 50 M rows/s (#13); over packed
//! columns >= 100 M rows/s on one core, beside the plain read (#30).

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use strata::segment::Column;
use strata::{Config, FieldKind, Store, Stream, StreamDecl, Values};

const N_ROWS: usize = 10_000_000;
/// Rows a publish call stages, and rows a seal writes (one segment each).
const BATCH_ROWS: usize = 100_000;
const SEAL_ROWS: usize = 1_000_000;

fn decl() -> StreamDecl {
    Stream::new("s")
        .field("t", FieldKind::U64)
        .field("v", FieldKind::F64)
        .axis("t")
        .build()
        .expect("a valid declaration")
}

/// The axis and value of row `row_idx`: a step of 1,000 and a random walk.
fn row(row_idx: usize, walk: &mut f64) -> (u64, f64) {
    let i = row_idx as u64;
    *walk += ((i.wrapping_mul(2_654_435_761)) % 1000) as f64 / 1000.0 - 0.5;
    (i * 1000, *walk)
}

/// A store in a temp dir holding `N_ROWS` rows of one track, 10 positions a batch apart, its
/// columns packed or not (`Config::pack_columns`).
fn store(pack_columns: bool) -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let config = Config::default()
        .staged_bytes_max(1 << 30)
        .pack_columns(pack_columns);
    let mut store = Store::open_or_create(dir.path(), config, &[decl()]).expect("a store");
    let (mut t, mut v) = (
        Vec::with_capacity(BATCH_ROWS),
        Vec::with_capacity(BATCH_ROWS),
    );
    let mut walk = 0.0;
    for batch_start in (0..N_ROWS).step_by(BATCH_ROWS) {
        t.clear();
        v.clear();
        for row_idx in batch_start..batch_start + BATCH_ROWS {
            let (a, x) = row(row_idx, &mut walk);
            t.push(a);
            v.push(x);
        }
        let position = (batch_start / BATCH_ROWS) as u64 + 1;
        store
            .publish_columns("s", position, &[], &[Values::U64(&t), Values::F64(&v)])
            .expect("staged");
        if (batch_start + BATCH_ROWS).is_multiple_of(SEAL_ROWS) {
            store.seal().expect("sealed");
        }
    }
    (dir, store)
}

/// The three sums a read takes: positions, axis values and values.
fn sum_runs(store: &Store) -> (u64, u64, f64) {
    let (mut positions, mut axis, mut values) = (0u64, 0u64, 0.0f64);
    let mut n_rows = 0;
    for run in store.query_runs("s", &[], ..).expect("a read") {
        let run = run.expect("a run");
        n_rows += run.len();
        positions = run.positions().fold(positions, u64::wrapping_add);
        let t = run.axis().expect("an axis");
        axis = t.iter().fold(axis, |s, a| s.wrapping_add(a.get()));
        let Some(Column::F64(v)) = run.column(1) else {
            panic!("v is an f64 column")
        };
        values = v.iter().fold(values, |s, x| s + x.get());
    }
    assert_eq!(n_rows, N_ROWS);
    (positions, axis, values)
}

fn sum_memory(positions: &[u64], axis: &[u64], values: &[f64]) -> (u64, u64, f64) {
    (
        positions.iter().fold(0u64, |s, &p| s.wrapping_add(p)),
        axis.iter().fold(0u64, |s, &a| s.wrapping_add(a)),
        values.iter().fold(0.0, |s, &x| s + x),
    )
}

fn reads(c: &mut Criterion) {
    let (_plain_dir, plain) = store(false);
    let (_dir, store) = store(true);
    // The same bytes in memory, from the store itself (so both sums must agree).
    let (mut positions, mut axis, mut values) = (Vec::new(), Vec::new(), Vec::new());
    for run in store.query_runs("s", &[], ..).expect("a read") {
        let run = run.expect("a run");
        positions.extend(run.positions());
        axis.extend(run.axis().expect("an axis").iter().map(|a| a.get()));
        let Some(Column::F64(v)) = run.column(1) else {
            panic!("v is an f64 column")
        };
        values.extend(v.iter().map(|x| x.get()));
    }
    assert_eq!(
        sum_runs(&store),
        sum_memory(&positions, &axis, &values),
        "the runs and the memory copy hold the same rows"
    );
    assert_eq!(
        sum_runs(&plain),
        sum_runs(&store),
        "packed and plain columns hold the same rows"
    );

    let mut group = c.benchmark_group("query 10^7 rows, one track (u64 axis + f64 value)");
    group.throughput(Throughput::Elements(N_ROWS as u64));
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(5));
    group.bench_function("query_runs: positions, axis and values summed", |b| {
        b.iter(|| black_box(sum_runs(&store)));
    });
    group.bench_function(
        "query_runs over plain columns (pack_columns off, the layout before #30)",
        |b| {
            b.iter(|| black_box(sum_runs(&plain)));
        },
    );
    group.bench_function("memory read of the same bytes (three Vecs summed)", |b| {
        b.iter(|| black_box(sum_memory(&positions, &axis, &values)));
    });
    group.bench_function("query_iter: a StoredRow a row", |b| {
        b.iter(|| {
            let mut n_rows = 0;
            for row in store.query_iter("s", &[], ..).expect("a read") {
                black_box(row.expect("a row"));
                n_rows += 1;
            }
            assert_eq!(n_rows, N_ROWS);
        });
    });
    group.finish();
}

criterion_group!(benches, reads);
criterion_main!(benches);
