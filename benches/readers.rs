//! A reader in another process (#32): what a survey costs it against the writer's own survey of
//! the same store, and what `refresh()` costs after N barriers, on the real file system.
//!
//! - `readers/survey`: a survey (budget 400, the whole axis range) of 10^6 rows in 100
//!   barriers, by the writer's store (`in_process`) and by a reader opened with
//!   `Store::open_reader` on the same folder (`reader`). The reader is a store of its own with
//!   its own maps and caches: the same code reads, so the ratio should be about 1.
//! - `readers/refresh/N`: `refresh()` of a reader after the writer sealed N barriers (the
//!   setup, untimed): one listing of the root, one read of the bytes appended, N records
//!   applied, and the pin renamed.
//!
//! `cargo bench --bench readers`; docs/embedding.md keeps the figures.

use std::time::Duration;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use strata::{Config, FieldKind, Store, Stream, StreamDecl, Value};

const BARRIERS: u64 = 100;
const ROWS_PER_BARRIER: u64 = 10_000;
const BUDGET: u64 = 400;

fn decl() -> StreamDecl {
    Stream::new("s")
        .field("t", FieldKind::U64)
        .field("v", FieldKind::F64)
        .axis("t")
        .build()
        .expect("a valid declaration")
}

fn seal_barrier(store: &mut Store, position: u64) {
    let rows: Vec<Vec<Value>> = (0..ROWS_PER_BARRIER)
        .map(|i| {
            let t = position * ROWS_PER_BARRIER + i;
            vec![Value::U64(t), Value::F64(((t * 7919) % 1000) as f64 / 8.0)]
        })
        .collect();
    store.publish("s", position, &rows).expect("staged");
    store.seal().expect("sealed");
}

fn readers(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let mut writer = Store::create(dir.path(), Config::default(), &[decl()]).expect("a store");
    for p in 0..BARRIERS {
        seal_barrier(&mut writer, p);
    }
    let reader = Store::open_reader(dir.path(), Config::default()).expect("a reader");
    assert_eq!(reader.manifest_position(), writer.manifest_position());

    let mut group = c.benchmark_group("readers/survey");
    group.bench_function("in_process", |b| {
        b.iter(|| writer.survey("s", &[], .., BUDGET).expect("a survey"));
    });
    group.bench_function("reader", |b| {
        b.iter(|| reader.survey("s", &[], .., BUDGET).expect("a survey"));
    });
    group.finish();
    drop(reader);

    let mut group = c.benchmark_group("readers/refresh");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(5));
    let mut next = BARRIERS;
    for n in [0, 1, 10, 100] {
        group.bench_function(n.to_string(), |b| {
            b.iter_batched(
                || {
                    let reader =
                        Store::open_reader(dir.path(), Config::default()).expect("a reader");
                    for _ in 0..n {
                        // Small barriers: the setup's time is the syncs', not the rows'.
                        writer
                            .publish(
                                "s",
                                next,
                                &[vec![Value::U64(next * ROWS_PER_BARRIER), Value::F64(1.0)]],
                            )
                            .expect("staged");
                        writer.seal().expect("sealed");
                        next += 1;
                    }
                    reader
                },
                |mut reader| {
                    reader.refresh().expect("refreshed");
                    reader
                },
                BatchSize::PerIteration,
            );
        });
    }
    group.finish();
}

criterion_group!(benches, readers);
criterion_main!(benches);
