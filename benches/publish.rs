//! Staging rate: the same 10,000-row batches of a u64 axis and an f64 value staged through the
//! row API (`Store::publish`, a `Vec<Value>` per row) and through the columnar API
//! (`Store::publish_columns`, a slice per field). Staging only: a seal every 100 batches is
//! outside the timed loop, so the figure is what a publish costs the caller, not the barrier.
//!
//! `cargo bench --bench publish`; criterion prints elements/s for each (rows/s). The issue's
//! target (#13): columnar staging >= 30 M rows/s.

use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use strata::{Config, FieldKind, Row, Store, Stream, StreamDecl, Value, Values};

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

criterion_group!(benches, staging);
criterion_main!(benches);
