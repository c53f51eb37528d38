//! Open formats (#33), in one run: `strata export`'s path (the engine's Arrow batches from a
//! sealed store, written as Parquet by arrow-rs's `ArrowWriter`) against the `parquet` crate
//! writing the same batches already in memory — the floor an export over arrow-rs can reach —
//! and Parquet ingest's staging rate (decode, then `publish_columns_at`) for u64 + f64 rows.
//!
//! `cargo bench -p strata-cli --bench formats`; figures in docs/performance.md.

use std::hint::black_box;
use std::io;
use std::sync::Arc;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;
use strata::arrow_array::RecordBatch;
use strata::arrow_array::cast::AsArray;
use strata::arrow_array::types::{Float64Type, UInt64Type};
use strata::{Config, FieldKind, Store, Stream, Values};

const N_ROWS: u64 = 1_000_000;

fn declaration() -> strata::StreamDecl {
    Stream::new("m")
        .field("t", FieldKind::U64)
        .field("value", FieldKind::F64)
        .axis("t")
        .build()
        .expect("a valid declaration")
}

fn properties() -> WriterProperties {
    WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::default()))
        .set_max_row_group_row_count(Some(1 << 20))
        .build()
}

/// Writes `batches` as Parquet into a sink, as `strata export` writes them into a file.
fn write_parquet(
    schema: Arc<strata::arrow_schema::Schema>,
    batches: impl Iterator<Item = RecordBatch>,
) -> usize {
    let mut writer =
        ArrowWriter::try_new(io::sink(), schema, Some(properties())).expect("a writer");
    let mut n = 0;
    for batch in batches {
        n += batch.num_rows();
        writer.write(&batch).expect("written");
    }
    writer.close().expect("closed");
    n
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let mut store =
        Store::create(dir.path(), Config::default(), &[declaration()]).expect("created");
    let t: Vec<u64> = (0..N_ROWS).map(|r| r * 10).collect();
    let v: Vec<f64> = (0..N_ROWS).map(|r| (r as f64 / 1000.0).sin()).collect();
    for (k, (t, v)) in t.chunks(100_000).zip(v.chunks(100_000)).enumerate() {
        let first = k as u64 * 100_000 + 1;
        let positions: Vec<u64> = (first..first + t.len() as u64).collect();
        store
            .publish_columns_at("m", &positions, &[], &[Values::U64(t), Values::F64(v)])
            .expect("published");
        store.seal().expect("sealed");
    }
    let batches: Vec<RecordBatch> = store
        .query_arrow("m", &[], ..)
        .expect("a query")
        .collect::<Result<_, _>>()
        .expect("read");
    let schema = batches[0].schema();

    let mut group = c.benchmark_group("export");
    group.sample_size(10);
    group.throughput(Throughput::Elements(N_ROWS));
    group.bench_function("strata_query_arrow_to_parquet", |b| {
        b.iter(|| {
            let batches = store.query_arrow("m", &[], ..).expect("a query");
            let schema = batches.schema();
            black_box(write_parquet(schema, batches.map(|b| b.expect("read"))))
        });
    });
    group.bench_function("parquet_crate_batches_in_memory", |b| {
        b.iter(|| black_box(write_parquet(Arc::clone(&schema), batches.iter().cloned())));
    });
    group.finish();

    // What ingest decodes: the export of the same rows, in memory.
    let mut file = Vec::new();
    {
        let mut writer = ArrowWriter::try_new(&mut file, Arc::clone(&schema), Some(properties()))
            .expect("a writer");
        for batch in &batches {
            writer.write(batch).expect("written");
        }
        writer.close().expect("closed");
    }
    let path = dir.path().join("m.parquet");
    std::fs::write(&path, &file).expect("written");
    let mut group = c.benchmark_group("ingest");
    group.sample_size(10);
    group.throughput(Throughput::Elements(N_ROWS));
    group.bench_function("parquet_decode_and_stage_u64_f64", |b| {
        b.iter_with_setup(
            || {
                let dir = tempfile::tempdir().expect("a temp dir");
                let store = Store::create(dir.path(), Config::default(), &[declaration()])
                    .expect("created");
                (dir, store)
            },
            |(dir, mut store)| {
                let file = std::fs::File::open(&path).expect("opened");
                let reader = ParquetRecordBatchReaderBuilder::try_new(file)
                    .and_then(|b| b.with_batch_size(8192).build())
                    .expect("a reader");
                for batch in reader {
                    let batch = batch.expect("decoded");
                    let positions = batch.column(0).as_primitive::<UInt64Type>().values();
                    let t = batch.column(1).as_primitive::<UInt64Type>().values();
                    let v = batch.column(2).as_primitive::<Float64Type>().values();
                    store
                        .publish_columns_at("m", positions, &[], &[Values::U64(t), Values::F64(v)])
                        .expect("staged");
                }
                black_box(store.staged_bytes());
                drop((store, dir));
            },
        );
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
