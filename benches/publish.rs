//! Staging rate: the same 10,000-row batches of a u64 axis and an f64 value staged through the
//! row API (`Store::publish`, a `Vec<Value>` per row) and through the columnar API
//! (`Store::publish_columns`, a slice per field). Staging only: a seal every 100 batches is
//! outside the timed loop, so the figure is what a publish costs the caller, not the barrier.
//!
//! The `served` group stages the same batches through `Served` (the batch moved to the
//! supervisor, staged there, and the reply awaited): `publish` (rows) and `publish_columns`
//! (owned columns, published back to back and timed until the supervisor has copied the last),
//! beside `Store::publish_columns` again, in the same run.
//!
//! `cargo bench --bench publish`; criterion prints elements/s for each (rows/s). The issues'
//! targets: columnar staging >= 30 M rows/s (#13); `Served::publish_columns` >= 0.8x the
//! store's and >= 5x `Served::publish` of rows (#31).

use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use strata::{
    Column, Config, FieldKind, Row, Series, ServeConfig, Served, Store, Stream, StreamDecl, Value,
    Values,
};

const ROWS: usize = 10_000;

fn decl() -> StreamDecl {
    Stream::new("s")
        .field("t", FieldKind::U64)
        .field("v", FieldKind::F64)
        .axis("t")
        .build()
        .expect("a valid declaration")
}

struct Fixture {
    _dir: tempfile::TempDir,
    store: Store,
    position: u64,
    t: Vec<u64>,
    v: Vec<f64>,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().expect("a temp dir");
        let config = Config::default().staged_bytes_max(1 << 30);
        let store = Store::open_or_create(dir.path(), config, &[decl()]).expect("a store");
        Fixture {
            _dir: dir,
            store,
            position: 0,
            t: Vec::with_capacity(ROWS),
            v: Vec::with_capacity(ROWS),
        }
    }

    /// The next batch's columns: the axis advancing by 1 a row, a random walk's values.
    fn next(&mut self) {
        let t0 = self.position * ROWS as u64;
        self.t.clear();
        self.v.clear();
        let mut walk = 0.0f64;
        for i in 0..ROWS as u64 {
            self.t.push(t0 + i);
            walk += ((i * 2_654_435_761) % 1000) as f64 / 1000.0 - 0.5;
            self.v.push(walk);
        }
        self.position += 1;
        // Staging grows without a seal; clear it now and then, outside the timed part.
        if self.position.is_multiple_of(100) {
            self.store.seal().expect("a seal");
        }
    }

    fn rows(&self) -> Vec<Row> {
        self.t
            .iter()
            .zip(&self.v)
            .map(|(&t, &v)| vec![Value::U64(t), Value::F64(v)])
            .collect()
    }
}

fn staging(c: &mut Criterion) {
    let mut group = c.benchmark_group("staging");
    group.throughput(Throughput::Elements(ROWS as u64));
    group.sample_size(30);
    let mut rows = Fixture::new();
    group.bench_function("rows (publish, Vec<Value> per row)", |b| {
        b.iter_custom(|iters| {
            let mut spent = Duration::ZERO;
            for _ in 0..iters {
                rows.next();
                let batch = rows.rows();
                let start = Instant::now();
                rows.store
                    .publish("s", rows.position, &batch)
                    .expect("staged");
                spent += start.elapsed();
            }
            spent
        });
    });
    let mut cols = Fixture::new();
    group.bench_function("columns (publish_columns, a slice per field)", |b| {
        b.iter_custom(|iters| {
            let mut spent = Duration::ZERO;
            for _ in 0..iters {
                cols.next();
                let start = Instant::now();
                cols.store
                    .publish_columns(
                        "s",
                        cols.position,
                        &[],
                        &[Values::U64(&cols.t), Values::F64(&cols.v)],
                    )
                    .expect("staged");
                spent += start.elapsed();
            }
            spent
        });
    });
    group.finish();
}

/// A served store as `Fixture` keeps one: no cadence, no size trigger (a seal every 100
/// batches, outside the timed part, clears staging), no compaction.
fn served() -> (tempfile::TempDir, Served, tokio::runtime::Runtime) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let config = Config::default().staged_bytes_max(1 << 30);
    let store = Store::open_or_create(dir.path(), config, &[decl()]).expect("a store");
    let served = Served::spawn(
        store,
        ServeConfig::default()
            .seal_interval(None)
            .seal_at_staged_share(None)
            .compact_steps_per_tick(0),
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    (dir, served, runtime)
}

/// `n` batches of `fixture`'s next values, as owned columns.
fn made(fixture: &mut Fixture, n: u64) -> Vec<Vec<Column>> {
    (0..n)
        .map(|_| {
            fixture.next();
            vec![
                Column::U64(fixture.t.clone()),
                Column::F64(fixture.v.clone()),
            ]
        })
        .collect()
}

/// The store's own staging of the batches `served_staging` sends, in the same group.
fn served_baselines(c: &mut Criterion) {
    let mut group = c.benchmark_group("served");
    group.throughput(Throughput::Elements(ROWS as u64));
    group.sample_size(30);
    // The batches' values, made by a fixture whose own store only seals (untimed).
    let mut batches = Fixture::new();
    let mut store = Fixture::new();
    group.bench_function("Store::publish_columns", |b| {
        b.iter_custom(|iters| {
            let mut spent = Duration::ZERO;
            for _ in 0..iters {
                store.next();
                let start = Instant::now();
                store
                    .store
                    .publish_columns(
                        "s",
                        store.position,
                        &[],
                        &[Values::U64(&store.t), Values::F64(&store.v)],
                    )
                    .expect("staged");
                spent += start.elapsed();
            }
            spent
        });
    });
    // The same, back to back over batches made first (as the served figure below is timed):
    // the batches are as cold in the cache for the store as for the supervisor.
    let mut cold = Fixture::new();
    group.bench_function("Store::publish_columns (back to back)", |b| {
        b.iter_custom(|iters| {
            let mut spent = Duration::ZERO;
            let mut left = iters;
            while left > 0 {
                let n = left.min(100 - cold.position % 100);
                left -= n;
                let first = cold.position + 1;
                let batch = made(&mut batches, n);
                let start = Instant::now();
                for (position, columns) in (first..).zip(&batch) {
                    Column::borrowed(columns, |columns| {
                        cold.store.publish_columns("s", position, &[], columns)
                    })
                    .expect("staged");
                }
                spent += start.elapsed();
                cold.position += n;
                if cold.position.is_multiple_of(100) {
                    cold.store.seal().expect("a seal");
                }
            }
            spent
        });
    });
    group.finish();
}

fn served_staging(c: &mut Criterion) {
    let mut group = c.benchmark_group("served");
    group.throughput(Throughput::Elements(ROWS as u64));
    group.sample_size(30);
    let mut batches = Fixture::new();
    // Back to back: the batches of up to one seal's worth are made first (untimed), then
    // published one after another, each awaited, and the time runs until the supervisor
    // answers a watermark asked after the last: a batch is answered once it is accepted and
    // copied into staging after (`Served::publish_columns`), so a copy the caller did not
    // wait for is still inside the time, and none of it hides behind untimed work.
    let (_dir, served_columns, runtime) = served();
    let mut position = 0u64;
    group.bench_function("Served::publish_columns", |b| {
        b.iter_custom(|iters| {
            let mut spent = Duration::ZERO;
            let mut left = iters;
            while left > 0 {
                let n = left.min(100 - position % 100);
                left -= n;
                let batch = made(&mut batches, n);
                let start = Instant::now();
                runtime.block_on(async {
                    for columns in batch {
                        position += 1;
                        served_columns
                            .publish_columns("s", position, &[], columns)
                            .await
                            .expect("staged");
                    }
                    served_columns.watermark("s").await.expect("a watermark");
                });
                spent += start.elapsed();
                if position.is_multiple_of(100) {
                    let mut handle = served_columns.clone();
                    runtime.block_on(handle.seal("s", &[])).expect("a seal");
                }
            }
            spent
        });
    });
    let (_dir, served_rows, runtime) = served();
    let mut position = 0;
    group.bench_function("Served::publish (rows)", |b| {
        b.iter_custom(|iters| {
            let mut spent = Duration::ZERO;
            for _ in 0..iters {
                batches.next();
                position += 1;
                let rows = batches.rows();
                let start = Instant::now();
                runtime
                    .block_on(served_rows.publish("s", position, rows))
                    .expect("staged");
                spent += start.elapsed();
                if position.is_multiple_of(100) {
                    let mut handle = served_rows.clone();
                    runtime.block_on(handle.seal("s", &[])).expect("a seal");
                }
            }
            spent
        });
    });
    group.finish();
}

criterion_group!(benches, staging, served_baselines, served_staging);
criterion_main!(benches);
