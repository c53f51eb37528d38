//! The barrier's price: publish rows/s, seal bytes/s, and barrier latency for 1 vs 64 partitions
//! touched, on the real file system (fsyncs included).
//!
//! `cargo bench --bench barrier`. The 64-partition barrier must cost at most 3x the
//! 1-partition one with the same rows: a barrier is priced in syncs, not partitions.

use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use strata::{Config, FieldKind, Row, Store, Stream, StreamDecl, Value, Values};

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
        let store =
            Store::open_or_create(dir.path(), Config::default(), &[decl()]).expect("a store");
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

/// Rows a seal of the seal-against-the-disk comparison carries: 100 publish batches of 10,000
/// (and, for the ratio alone, 400).
const SEAL_BATCHES: u64 = 100;
const SEAL_BATCH_ROWS: u64 = 10_000;

/// A store of a u64 axis and an f64 (one track) with `n_batches` batches staged by columns, in
/// a fresh folder: what one timed seal seals.
fn staged_store(n_batches: u64) -> (tempfile::TempDir, Store) {
    let decl = Stream::new("s")
        .field("t", FieldKind::U64)
        .field("v", FieldKind::F64)
        .axis("t")
        .build()
        .expect("a valid declaration");
    let dir = tempfile::tempdir().expect("a temp dir");
    let mut store = Store::open_or_create(dir.path(), Config::default(), &[decl]).expect("a store");
    let mut walk = 0.0f64;
    for batch_idx in 0..n_batches {
        let first = batch_idx * SEAL_BATCH_ROWS;
        let t: Vec<u64> = (first..first + SEAL_BATCH_ROWS).collect();
        let v: Vec<f64> = t
            .iter()
            .map(|&t| {
                walk += (t as f64 * 0.37).sin();
                walk
            })
            .collect();
        store
            .publish_columns("s", batch_idx + 1, &[], &[Values::U64(&t), Values::F64(&v)])
            .expect("publish");
    }
    (dir, store)
}

/// One seal of a fresh `staged_store`: its time and the bytes it wrote.
fn timed_seal(n_batches: u64) -> (Duration, u64) {
    let (_dir, mut store) = staged_store(n_batches);
    let start = Instant::now();
    store.seal().expect("seal");
    let elapsed = start.elapsed();
    (elapsed, store.metrics().bytes_sealed)
}

/// What the disk does with the same bytes: a new file written sequentially in 1 MiB writes,
/// then fdatasync'd.
fn timed_plain_write(bytes: &[u8]) -> Duration {
    use std::io::Write;
    let dir = tempfile::tempdir().expect("a temp dir");
    let start = Instant::now();
    let mut file = std::fs::File::create_new(dir.path().join("plain")).expect("a file");
    for chunk in bytes.chunks(1 << 20) {
        file.write_all(chunk).expect("write");
    }
    file.sync_data().expect("fdatasync");
    start.elapsed()
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort_unstable();
    times[times.len() / 2]
}

/// Seal throughput against a plain sequential write + fdatasync of the same bytes, in the same
/// run: criterion times each, and pairs alternated one after the other give the ratio (so a
/// load that comes and goes weighs on both alike). Target: the seal at 0.8x the plain write or
/// better.
fn seal_against_the_disk(c: &mut Criterion) {
    const PAIRS: usize = 15;
    let mut bytes_1m = Vec::new();
    for n_batches in [SEAL_BATCHES, 4 * SEAL_BATCHES] {
        let (_, segment_bytes) = timed_seal(n_batches);
        let bytes: Vec<u8> = (0..segment_bytes).map(|i| (i * 31 % 251) as u8).collect();
        let (mut seals, mut plains) = (Vec::new(), Vec::new());
        for _ in 0..PAIRS {
            seals.push(timed_seal(n_batches).0);
            plains.push(timed_plain_write(&bytes));
        }
        let (seal, plain) = (median(seals), median(plains));
        let mib_s = |t: Duration| segment_bytes as f64 / t.as_secs_f64() / f64::from(1 << 20);
        println!(
            "seal of {} rows ({segment_bytes} bytes) against a plain write + fdatasync of as \
             many bytes, medians of {PAIRS} alternated pairs: seal {seal:?} ({:.0} MiB/s), \
             plain {plain:?} ({:.0} MiB/s), seal throughput / plain = {:.3}",
            n_batches * SEAL_BATCH_ROWS,
            mib_s(seal),
            mib_s(plain),
            plain.as_secs_f64() / seal.as_secs_f64(),
        );
        if n_batches == SEAL_BATCHES {
            bytes_1m = bytes;
        }
    }
    let bytes = bytes_1m;
    let segment_bytes = bytes.len() as u64;

    let mut group = c.benchmark_group("seal_against_the_disk_1m_rows");
    group
        .throughput(Throughput::Bytes(segment_bytes))
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    group.bench_function("seal", |b| {
        b.iter_custom(|iters| (0..iters).map(|_| timed_seal(SEAL_BATCHES).0).sum());
    });
    group.bench_function("plain_write_fdatasync", |b| {
        b.iter_custom(|iters| (0..iters).map(|_| timed_plain_write(&bytes)).sum());
    });
    group.finish();
}

criterion_group!(
    benches,
    barrier_latency,
    publish_rows,
    seal_bytes,
    seal_against_the_disk
);
criterion_main!(benches);
