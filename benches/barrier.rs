//! The barrier's price: publish rows/s, seal bytes/s, and barrier latency for 1 vs 64 partitions
//! touched, on the real file system (fsyncs included).
//!
//! `cargo bench --bench barrier`. The 64-partition barrier must cost at most 3x the
//! 1-partition one with the same rows: a barrier is priced in syncs, not partitions.

use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use strata::{Config, FieldKind, Row, Store, Stream, StreamDecl, Value};

fn decl() -> StreamDecl {
    Stream::new("capture")
        .field("run", FieldKind::Str)
        .field("probe", FieldKind::U64)
        .field("t", FieldKind::U64)
        .field("value", FieldKind::F64)
        .field("temp", FieldKind::F64)
        .track(["run", "probe"])
        .axis("t")
        .build()
        .expect("a valid declaration")
}

/// `n_rows` rows spread round-robin over `n_partitions` partitions. Each partition's axis
/// advances by 1 a row from `t0`, so every shape folds its rows into about as many level cells
/// and the comparison is about partitions touched, not about how sparse an axis is.
fn rows(n_rows: u64, n_partitions: u64, t0: u64) -> Vec<Row> {
    (0..n_rows)
        .map(|i| {
            let t = t0 + i / n_partitions;
            vec![
                Value::Str("run_1".into()),
                Value::U64(i % n_partitions),
                Value::U64(t),
                Value::F64((t as f64 * 0.01).sin()),
                Value::F64(20.0 + (t % 17) as f64),
            ]
        })
        .collect()
}

struct Bench {
    _dir: tempfile::TempDir,
    store: Store,
    position: u64,
    t: u64,
}

impl Bench {
    fn new() -> Bench {
        let dir = tempfile::tempdir().expect("a temp dir");
        let store = Store::open(dir.path(), Config::default(), &[decl()]).expect("a store");
        Bench {
            _dir: dir,
            store,
            position: 0,
            t: 0,
        }
    }

    fn publish(&mut self, n_rows: u64, n_partitions: u64) {
        self.position += 1;
        let batch = rows(n_rows, n_partitions, self.t);
        self.t += n_rows.div_ceil(n_partitions);
        self.store
            .publish("capture", self.position, &batch)
            .expect("publish");
    }
}

fn barrier_latency(c: &mut Criterion) {
    const ROWS: u64 = 6400;
    let mut group = c.benchmark_group("barrier_latency_6400_rows");
    group
        .sample_size(30)
        .measurement_time(Duration::from_secs(8));
    for n_partitions in [1u64, 64] {
        group.bench_function(BenchmarkId::new("partitions", n_partitions), |b| {
            let mut bench = Bench::new();
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    bench.publish(ROWS, n_partitions);
                    let start = Instant::now();
                    bench.store.seal().expect("seal");
                    total += start.elapsed();
                }
                total
            });
        });
    }
    group.finish();
}

fn publish_rows(c: &mut Criterion) {
    const ROWS: u64 = 1000;
    let mut group = c.benchmark_group("publish");
    group.throughput(Throughput::Elements(ROWS));
    group.bench_function("rows_1000_batch_8_partitions", |b| {
        let mut bench = Bench::new();
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for i in 0..iters {
                let batch = rows(ROWS, 8, bench.t);
                bench.t += ROWS.div_ceil(8);
                bench.position += 1;
                let start = Instant::now();
                bench
                    .store
                    .publish("capture", bench.position, &batch)
                    .expect("publish");
                total += start.elapsed();
                if i % 100 == 99 {
                    bench.store.seal().expect("seal");
                }
            }
            total
        });
    });
    group.finish();
}

fn seal_bytes(c: &mut Criterion) {
    const ROWS: u64 = 100_000;
    // One probe barrier tells how many bytes a barrier of this shape writes.
    let mut probe = Bench::new();
    probe.publish(ROWS, 8);
    probe.store.seal().expect("seal");
    let bytes = probe.store.metrics().bytes_sealed;
    let mut group = c.benchmark_group("seal");
    group.throughput(Throughput::Bytes(bytes)).sample_size(20);
    group.bench_function("rows_100000_8_partitions", |b| {
        let mut bench = Bench::new();
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                bench.publish(ROWS, 8);
                let start = Instant::now();
                bench.store.seal().expect("seal");
                total += start.elapsed();
            }
            total
        });
    });
    group.finish();
}

criterion_group!(benches, barrier_latency, publish_rows, seal_bytes);
criterion_main!(benches);
