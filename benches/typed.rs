//! Typed rows: the same 10,000-row batches of a four-field struct published with
//! `Store::publish_as` (a serializer over the declaration, straight into each row's values)
//! and through the former path (`serde_json::to_value` per row, then each field taken out of
//! the JSON object by name, as `publish_as` did before #14), with plain `Store::publish` of
//! ready-made rows as the floor both stand on. Staging only, as in the `publish` bench: a seal
//! every 100 batches is outside the timed loop. Then the same rows read back, sealed, with
//! `Store::query_as` against `Store::query` plus the former conversion (a JSON object per row,
//! then `serde_json::from_value`), and plain `query` as the floor.
//!
//! `cargo bench --bench typed`; criterion prints elements/s for each (rows/s).

use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value as Json};
use strata::{Config, FieldKind, Row, Store, Stream, StreamDecl, Value};

const ROWS: usize = 10_000;

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
struct Sample {
    t: u64,
    value: f64,
    count: i64,
    note: String,
}

fn decl() -> StreamDecl {
    Stream::new("s")
        .field("t", FieldKind::U64)
        .field("value", FieldKind::F64)
        .field("count", FieldKind::I64)
        .field("note", FieldKind::Str)
        .axis("t")
        .build()
        .expect("a valid declaration")
}

/// The rows of batch `batch_idx`: the axis advancing by 1 a row, a random walk's values.
fn batch(batch_idx: u64) -> Vec<Sample> {
    let t0 = batch_idx * ROWS as u64;
    let mut walk = 0.0f64;
    (0..ROWS as u64)
        .map(|i| {
            walk += ((i * 2_654_435_761) % 1000) as f64 / 1000.0 - 0.5;
            Sample {
                t: t0 + i,
                value: walk,
                count: i64::try_from(i % 7).expect("small") - 3,
                note: ["calm", "gusty", "storm"][(i % 3) as usize].to_owned(),
            }
        })
        .collect()
}

// The former path, as engine/src/typed.rs had it before #14 (errors reduced to a panic: the
// bench's rows all fit).

fn json_to_row(decl: &StreamDecl, row: &Sample) -> Row {
    let Json::Object(mut object) = serde_json::to_value(row).expect("serializes") else {
        panic!("a struct serializes to an object");
    };
    let values: Row = decl
        .fields
        .iter()
        .map(|field| {
            let json = object.remove(&field.name).expect("every field");
            match field.kind {
                FieldKind::U64 => json.as_u64().map(Value::U64),
                FieldKind::I64 => json.as_i64().map(Value::I64),
                FieldKind::F64 => json.as_f64().map(Value::F64),
                FieldKind::Str => json.as_str().map(|s| Value::Str(s.to_owned())),
                _ => None,
            }
            .expect("of its kind")
        })
        .collect();
    assert!(object.is_empty(), "no undeclared field");
    values
}

fn json_from_row(decl: &StreamDecl, values: Row) -> Sample {
    let object: Map<String, Json> = decl
        .fields
        .iter()
        .zip(values)
        .map(|(field, value)| {
            let json = match value {
                Value::U64(v) => Json::Number(v.into()),
                Value::I64(v) => Json::Number(v.into()),
                Value::F64(v) => Number::from_f64(v).map_or(Json::Null, Json::Number),
                Value::Str(v) => Json::String(v),
                Value::Bytes(v) => {
                    Json::Array(v.into_iter().map(|b| Json::Number(b.into())).collect())
                }
                Value::Null => Json::Null,
            };
            (field.name.clone(), json)
        })
        .collect();
    serde_json::from_value(Json::Object(object)).expect("deserializes")
}

struct Fixture {
    _dir: tempfile::TempDir,
    store: Store,
    decl: StreamDecl,
    position: u64,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().expect("a temp dir");
        let config = Config::default().staged_bytes_max(1 << 30);
        let store = Store::create(dir.path(), config, &[decl()]).expect("a store");
        Fixture {
            _dir: dir,
            store,
            decl: decl(),
            position: 0,
        }
    }

    /// The next batch, with staging cleared now and then outside the timed part.
    fn next(&mut self) -> Vec<Sample> {
        self.position += 1;
        if self.position.is_multiple_of(100) {
            self.store.seal().expect("a seal");
        }
        batch(self.position)
    }

    /// Times `publish` of each next batch, after `prepare` (untimed) has made it what it takes.
    fn time<P>(
        &mut self,
        iters: u64,
        prepare: impl Fn(&StreamDecl, Vec<Sample>) -> P,
        publish: impl Fn(&mut Store, u64, &P),
    ) -> Duration {
        let mut spent = Duration::ZERO;
        for _ in 0..iters {
            let rows = self.next();
            let rows = prepare(&self.decl, rows);
            let start = Instant::now();
            publish(&mut self.store, self.position, &rows);
            spent += start.elapsed();
        }
        spent
    }
}

fn publishing(c: &mut Criterion) {
    let mut group = c.benchmark_group("typed publish");
    group.throughput(Throughput::Elements(ROWS as u64));
    group.sample_size(30);
    let mut typed = Fixture::new();
    group.bench_function("publish_as (serializer over the declaration)", |b| {
        b.iter_custom(|iters| {
            typed.time(
                iters,
                |_, rows| rows,
                |store, position, rows| store.publish_as("s", position, rows).expect("staged"),
            )
        });
    });
    let mut json = Fixture::new();
    group.bench_function("serde_json::Value per row, then publish (former)", |b| {
        b.iter_custom(|iters| {
            json.time(
                iters,
                |_, rows| rows,
                |store, position, rows| {
                    let decl = store.stream("s").expect("declared");
                    let rows: Vec<Row> = rows.iter().map(|row| json_to_row(decl, row)).collect();
                    store.publish("s", position, &rows).expect("staged");
                },
            )
        });
    });
    let mut plain = Fixture::new();
    group.bench_function("publish of ready rows (floor, no conversion)", |b| {
        b.iter_custom(|iters| {
            plain.time(
                iters,
                |decl, rows| rows.iter().map(|row| json_to_row(decl, row)).collect(),
                |store, position, rows: &Vec<Row>| {
                    store.publish("s", position, rows).expect("staged");
                },
            )
        });
    });
    group.finish();
}

fn reading(c: &mut Criterion) {
    let mut group = c.benchmark_group("typed query");
    group.throughput(Throughput::Elements(ROWS as u64));
    group.sample_size(30);
    let mut fixture = Fixture::new();
    let rows = fixture.next();
    let position = fixture.position;
    fixture
        .store
        .publish_as("s", position, &rows)
        .expect("staged");
    fixture.store.seal().expect("a seal");
    let store = &fixture.store;
    let decl = decl();
    let check = |back: &[(u64, Sample)]| assert_eq!(back.len(), rows.len());
    group.bench_function("query_as (deserializer over the values)", |b| {
        b.iter(|| {
            let back: Vec<(u64, Sample)> = store.query_as("s", &[], ..).expect("read");
            check(&back);
            back
        });
    });
    group.bench_function("query, then serde_json::Value per row (former)", |b| {
        b.iter(|| {
            let back: Vec<(u64, Sample)> = store
                .query("s", &[], ..)
                .expect("read")
                .into_iter()
                .map(|row| (row.position, json_from_row(&decl, row.values)))
                .collect();
            check(&back);
            back
        });
    });
    group.bench_function("query of rows (floor, no conversion)", |b| {
        b.iter(|| store.query("s", &[], ..).expect("read"));
    });
    group.finish();
}

criterion_group!(benches, publishing, reading);
criterion_main!(benches);
