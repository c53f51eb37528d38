//! Dense storage (#30): what strata stores a row in, beside Parquet (the `parquet` crate, zstd)
//! written from the same rows in the same run, and what ingest costs with compaction keeping up
//! beside seals alone; with `STRATA_DENSE_CODECS` set, also the codec study that chose pco —
//! `pco` (pcodec) and a Gorilla-style encoding (delta-of-delta for the axis, XOR of neighbours
//! for the values, written here for the comparison), each over the blocks a barrier seals
//! (10,000 rows) and over whole columns (a compaction output). Then criterion times both codecs'
//! encode and decode per block, and a barrier against encoding its columns.
//!
//! `cargo bench --manifest-path compare/Cargo.toml --bench dense` (its own workspace: CI never
//! builds it). `STRATA_DENSE_ROWS` (default 10^7, rounded up to whole barriers) sizes the data
//! sets; `STRATA_DENSE_OUT`, if set, names a folder that receives each data set as Parquet, for
//! `compare/duckdb_bytes.py` to load into DuckDB.
//!
//! The data sets, from fixed seeds:
//! - **random walk**: axis `t` = 0, 1, 2, ..; `v` the cumulative sum of N(0, 1);
//! - **sensor**: `t` microseconds at 1 kHz from 2023; `v` = 100 sin(2πi/1000) to 4 decimals;
//!   `temp` = 20 + 5 sin(2πi/3.6·10^6) to 3 decimals;
//! - **noise**: axis `t` = 0, 1, 2, ..; `v` N(0, 1) at full precision — the honest worst case,
//!   which no codec can shrink much below 8 bytes a value.
//!
//! Every store is read back and compared bit for bit, and every codec's output decoded and
//! compared, before its size counts.

mod support;

use support::{bytes_under, cell_bytes};

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow_array::{ArrayRef, Float64Array, RecordBatch, UInt64Array};
use arrow_schema::{DataType, Field, Schema};
use criterion::{BenchmarkId, Criterion, Throughput};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;
use strata::segment::Column;
use strata::{Config, FieldKind, ServeConfig, Store, Stream, Values};

/// Rows a barrier seals, as the ingest runs them.
const BARRIER_ROWS: usize = 10_000;
const ROWS_DEFAULT: usize = 10_000_000;
/// Rows in a Parquet row group and an Arrow batch written to it.
const GROUP_ROWS: usize = 1 << 20;

/// One data set: an axis and its `f64` fields, as columns.
struct DataSet {
    name: &'static str,
    axis: Vec<u64>,
    fields: Vec<(&'static str, Vec<f64>)>,
    /// Rows of the first field that are missing (null), if any: published as `None` (#48).
    nulls: Option<Vec<bool>>,
}

impl DataSet {
    fn n_rows(&self) -> usize {
        self.axis.len()
    }
}

/// xorshift64* from a fixed seed: the same rows on every run and machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform on (0, 1], 53 bits.
    fn unit(&mut self) -> f64 {
        ((self.next() >> 11) + 1) as f64 / (1u64 << 53) as f64
    }

    /// N(0, 1), Box–Muller.
    fn normal(&mut self) -> f64 {
        let (u, v) = (self.unit(), self.unit());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }
}

fn random_walk(n: usize) -> DataSet {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut v = 0.0;
    let values = (0..n)
        .map(|_| {
            v += rng.normal();
            v
        })
        .collect();
    DataSet {
        name: "random walk",
        axis: (0..n as u64).collect(),
        fields: vec![("v", values)],
        nulls: None,
    }
}

fn sensor(n: usize) -> DataSet {
    const US_2023: u64 = 1_672_531_200_000_000;
    let round = |x: f64, decimals: i32| {
        let scale = 10f64.powi(decimals);
        (x * scale).round() / scale
    };
    let tau = std::f64::consts::TAU;
    DataSet {
        name: "sensor",
        axis: (0..n as u64).map(|i| US_2023 + i * 1_000).collect(),
        fields: vec![
            (
                "v",
                (0..n)
                    .map(|i| round(100.0 * (tau * i as f64 / 1_000.0).sin(), 4))
                    .collect(),
            ),
            (
                "temp",
                (0..n)
                    .map(|i| round(20.0 + 5.0 * (tau * i as f64 / 3.6e6).sin(), 3))
                    .collect(),
            ),
        ],
        nulls: None,
    }
}

/// `ds` with 1% of its first field's values null, at random rows (a fixed seed).
fn with_holes(ds: &DataSet) -> DataSet {
    let mut rng = Rng(0x0bad_5eed_0bad_5eed);
    DataSet {
        name: ds.name,
        axis: ds.axis.clone(),
        fields: ds.fields.clone(),
        nulls: Some((0..ds.n_rows()).map(|_| rng.next() % 100 == 0).collect()),
    }
}

fn noise(n: usize) -> DataSet {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    DataSet {
        name: "noise (full precision)",
        axis: (0..n as u64).collect(),
        fields: vec![("v", (0..n).map(|_| rng.normal()).collect())],
        nulls: None,
    }
}

/// What writing a data set into a store cost, and came to.
struct StrataRun {
    /// Every file of the store once compacted.
    bytes: u64,
    /// Of those, the level cells' blocks.
    cell_bytes: u64,
    /// Publishing and sealing every barrier.
    sealing: Duration,
    /// The compaction steps between barriers (zero when none were taken).
    stepping: Duration,
    /// Bytes the barriers wrote, and compaction (between barriers and after them).
    bytes_sealed: u64,
    bytes_compacted: u64,
    /// The steps taken between barriers: how many, the inputs they merged, the bytes they
    /// wrote (the final `compact` apart).
    steps: u64,
    step_inputs: u64,
    step_bytes: u64,
}

impl StrataRun {
    fn ingest(&self) -> Duration {
        self.sealing + self.stepping
    }
}

fn decl_of(ds: &DataSet) -> strata::StreamDecl {
    let mut stream = Stream::new("s").field("t", FieldKind::U64);
    for (name, _) in &ds.fields {
        stream = stream.field(*name, FieldKind::F64);
    }
    stream.axis("t").build().expect("a valid declaration")
}

/// The data set sealed a barrier at a time through `publish_columns`, with the compaction
/// steps `Served` grants after each (`steps`) or none, then compacted; every row read back and
/// compared bit for bit before the store's bytes count.
fn strata_run(ds: &DataSet, steps: bool) -> StrataRun {
    quiet_disk();
    let dir = tempfile::tempdir().expect("a temp dir");
    let mut store =
        Store::open_or_create(dir.path(), Config::default(), &[decl_of(ds)]).expect("a store");
    let (mut sealing, mut stepping) = (Duration::ZERO, Duration::ZERO);
    let (mut steps_taken, mut step_inputs, mut step_bytes) = (0u64, 0u64, 0u64);
    for (position, start) in (0..ds.n_rows()).step_by(BARRIER_ROWS).enumerate() {
        let end = (start + BARRIER_ROWS).min(ds.n_rows());
        let optional: Option<Vec<Option<f64>>> = ds.nulls.as_ref().map(|nulls| {
            (start..end)
                .map(|row| (!nulls[row]).then_some(ds.fields[0].1[row]))
                .collect()
        });
        let mut columns = vec![Values::U64(&ds.axis[start..end])];
        columns.extend(ds.fields.iter().map(|(_, v)| Values::F64(&v[start..end])));
        if let Some(optional) = &optional {
            columns[1] = Values::OptF64(optional);
        }
        let began = Instant::now();
        store
            .publish_columns("s", position as u64, &[], &columns)
            .expect("publish");
        store.seal().expect("seal");
        sealing += began.elapsed();
        if steps {
            let began = Instant::now();
            for _ in 0..ServeConfig::default().compact_steps_per_tick {
                let Some(step) = store.compact_step().expect("a step") else {
                    break;
                };
                steps_taken += 1;
                step_inputs += step.inputs.len() as u64;
                step_bytes += step.bytes_written;
            }
            stepping += began.elapsed();
        }
    }
    store.compact().expect("compact");
    assert_reads_back(&store, ds);
    let metrics = store.metrics();
    drop(store);
    StrataRun {
        bytes: bytes_under(dir.path()),
        cell_bytes: cell_bytes(dir.path()),
        sealing,
        stepping,
        bytes_sealed: metrics.bytes_sealed,
        bytes_compacted: metrics.compaction_bytes_written,
        steps: steps_taken,
        step_inputs,
        step_bytes,
    }
}

/// Writes back what earlier runs left dirty before a run is timed, so that one run's
/// write-back does not land in the next one's syncs (seen: a seals-only run a third slower
/// after another data set's compacted run than before it).
fn quiet_disk() {
    let _ = std::process::Command::new("sync").status();
}

/// The file system's own floor for what `run`'s steps wrote, timed: as many files of the steps'
/// mean output, each written to a temp, synced, renamed into place and its folder synced, a
/// 128-byte record appended to a log and synced after each, and the steps' inputs (files made
/// beforehand, untimed) unlinked with the folder synced once a step: the durable writes a step
/// cannot do without, and none of its reading, merging or checking.
fn steps_io_floor(run: &StrataRun) -> Duration {
    use std::fs::{File, OpenOptions};
    use std::io::Write;
    if run.steps == 0 {
        return Duration::ZERO;
    }
    quiet_disk();
    let dir = tempfile::tempdir().expect("a temp dir");
    let (tmp, seg) = (dir.path().join("tmp"), dir.path().join("seg"));
    std::fs::create_dir_all(&tmp).expect("tmp/");
    std::fs::create_dir_all(&seg).expect("seg/");
    let size = usize::try_from(run.step_bytes / run.steps).expect("a step's output fits memory");
    let mut rng = Rng(0x5eed);
    let bytes: Vec<u8> = (0..size).map(|_| rng.next() as u8).collect();
    let doomed: Vec<PathBuf> = (0..run.step_inputs)
        .map(|i| {
            let path = seg.join(format!("input-{i}"));
            std::fs::write(&path, &bytes[..size.min(4096)]).expect("an input");
            path
        })
        .collect();
    File::open(&seg)
        .expect("seg/")
        .sync_all()
        .expect("sync seg/");
    let sync_dir = |path: &Path| {
        File::open(path)
            .expect("a folder")
            .sync_all()
            .expect("sync")
    };
    let mut log = OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.path().join("log"))
        .expect("the log");
    let mut doomed = doomed.iter();
    let per_step = run.step_inputs / run.steps;
    let began = Instant::now();
    for step in 0..run.steps {
        let temp = tmp.join(format!("{step}"));
        let mut file = File::create(&temp).expect("a temp");
        file.write_all(&bytes).expect("write");
        file.sync_data().expect("sync");
        drop(file);
        std::fs::rename(&temp, seg.join(format!("{step}"))).expect("rename");
        sync_dir(&seg);
        log.write_all(&[0u8; 128]).expect("append");
        log.sync_data().expect("sync the log");
        let extra = u64::from(step < run.step_inputs % run.steps);
        for path in doomed
            .by_ref()
            .take(usize::try_from(per_step + extra).expect("few"))
        {
            std::fs::remove_file(path).expect("unlink");
        }
        sync_dir(&seg);
    }
    began.elapsed()
}

/// Every row of the store, read through `query_runs`, is the data set's, bit for bit.
fn assert_reads_back(store: &Store, ds: &DataSet) {
    let mut row = 0;
    for run in store.query_runs("s", &[], ..).expect("a read") {
        let run = run.expect("a run");
        let axis = run.axis().expect("an axis");
        assert!(
            axis.iter()
                .map(|a| a.get())
                .eq(ds.axis[row..row + run.len()].iter().copied()),
            "{}: the axis at row {row}",
            ds.name
        );
        for (i, (name, values)) in ds.fields.iter().enumerate() {
            let field = 1 + u16::try_from(i).expect("few fields");
            let Some(Column::F64(got)) = run.column(field) else {
                panic!("{name} is an f64 column");
            };
            assert!(
                got.iter()
                    .map(|v| v.get().to_bits())
                    .zip(&values[row..row + run.len()])
                    .enumerate()
                    .all(|(j, (got, want))| {
                        let null = i == 0 && ds.nulls.as_ref().is_some_and(|n| n[row + j]);
                        null || got == want.to_bits()
                    }),
                "{}: {name} at row {row}",
                ds.name
            );
            let nulls = run.null_mask(field, 0..run.len());
            let want: Option<Vec<bool>> = ds
                .nulls
                .as_ref()
                .filter(|_| i == 0)
                .map(|n| n[row..row + run.len()].to_vec())
                .filter(|n| n.iter().any(|&x| x));
            assert_eq!(nulls, want, "{}: {name}'s nulls at row {row}", ds.name);
        }
        row += run.len();
    }
    assert_eq!(row, ds.n_rows(), "{}: every row", ds.name);
}

/// The data set as one Parquet file (zstd at `level`, row groups of [`GROUP_ROWS`]).
fn parquet_file(ds: &DataSet, level: i32) -> Vec<u8> {
    let mut fields = vec![Field::new("t", DataType::UInt64, false)];
    fields.extend(
        ds.fields
            .iter()
            .map(|(name, _)| Field::new(*name, DataType::Float64, false)),
    );
    let schema = Arc::new(Schema::new(fields));
    let props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(
            ZstdLevel::try_new(level).expect("a zstd level"),
        ))
        .set_max_row_group_row_count(Some(GROUP_ROWS))
        .build();
    let mut writer =
        ArrowWriter::try_new(Vec::new(), schema.clone(), Some(props)).expect("a writer");
    for start in (0..ds.n_rows()).step_by(GROUP_ROWS) {
        let end = (start + GROUP_ROWS).min(ds.n_rows());
        let mut columns: Vec<ArrayRef> =
            vec![Arc::new(UInt64Array::from(ds.axis[start..end].to_vec()))];
        columns.extend(
            ds.fields
                .iter()
                .map(|(_, v)| Arc::new(Float64Array::from(v[start..end].to_vec())) as ArrayRef),
        );
        let batch = RecordBatch::try_new(schema.clone(), columns).expect("a batch");
        writer.write(&batch).expect("write");
    }
    writer.into_inner().expect("close")
}

/// pco's standalone format at its default level.
fn pco_encode<T: pco::data_types::Number>(values: &[T]) -> Vec<u8> {
    pco_encode_at(values, pco::DEFAULT_COMPRESSION_LEVEL)
}

/// pco's standalone format at compression `level` (0 to 12; the default is 8).
fn pco_encode_at<T: pco::data_types::Number>(values: &[T], level: usize) -> Vec<u8> {
    let config = pco::ChunkConfig::default().with_compression_level(level);
    pco::standalone::simple_compress(values, &config).expect("pco")
}

/// The pco levels the study compares: its fastest, two between, and its default.
const PCO_LEVELS: [usize; 4] = [0, 2, 4, pco::DEFAULT_COMPRESSION_LEVEL];

/// Bytes per row of the data set's values (not its axis) in pco at each of [`PCO_LEVELS`],
/// 10^4-row blocks, each decoded again and compared.
fn pco_levels_table(sets: &[DataSet]) {
    println!();
    println!(
        "| data: values only, pco in 10^4-row blocks | level 0 | level 2 | level 4 | level 8 (default) |"
    );
    println!("|---|---:|---:|---:|---:|");
    for ds in sets {
        let cells: Vec<String> = PCO_LEVELS
            .iter()
            .map(|&level| {
                let mut bytes = 0u64;
                for (_, values) in &ds.fields {
                    for block in values.chunks(BARRIER_ROWS) {
                        let p = pco_encode_at(block, level);
                        let got: Vec<f64> = pco_decode(&p);
                        assert!(
                            got.iter()
                                .map(|v| v.to_bits())
                                .eq(block.iter().map(|v| v.to_bits()))
                        );
                        bytes += p.len() as u64;
                    }
                }
                format!("{:.2}", per_row(bytes, ds.n_rows()))
            })
            .collect();
        println!("| {} | {} |", ds.name, cells.join(" | "));
    }
}

fn pco_decode<T: pco::data_types::Number>(bytes: &[u8]) -> Vec<T> {
    pco::standalone::simple_decompress(bytes).expect("pco decodes what it wrote")
}

/// Bits, most significant first, into bytes.
#[derive(Default)]
struct BitWriter {
    bytes: Vec<u8>,
    n_bits: u64,
}

impl BitWriter {
    fn put(&mut self, value: u64, n: u32) {
        for bit in (0..n).rev() {
            if self.n_bits % 8 == 0 {
                self.bytes.push(0);
            }
            let b = ((value >> bit) & 1) as u8;
            *self.bytes.last_mut().expect("a byte") |= b << (7 - self.n_bits % 8);
            self.n_bits += 1;
        }
    }
}

struct BitReader<'a> {
    bytes: &'a [u8],
    at: u64,
}

impl BitReader<'_> {
    fn get(&mut self, n: u32) -> u64 {
        let mut value = 0;
        for _ in 0..n {
            let byte = self.bytes[usize::try_from(self.at / 8).expect("in memory")];
            value = (value << 1) | u64::from((byte >> (7 - self.at % 8)) & 1);
            self.at += 1;
        }
        value
    }
}

/// Gorilla's timestamps: the first raw, then each delta of deltas in the smallest of its
/// buckets (`0`, `10`+7 bits, `110`+9, `1110`+12, `1111`+64).
fn dod_encode(axis: &[u64]) -> Vec<u8> {
    let mut w = BitWriter::default();
    let (mut prev, mut prev_delta) = (0u64, 0i64);
    for (i, &t) in axis.iter().enumerate() {
        if i == 0 {
            w.put(t, 64);
        } else {
            let delta = t.wrapping_sub(prev) as i64;
            let dod = delta.wrapping_sub(prev_delta);
            match dod {
                0 => w.put(0, 1),
                -63..=64 => {
                    w.put(0b10, 2);
                    w.put(dod as u64 & 0x7f, 7);
                }
                -255..=256 => {
                    w.put(0b110, 3);
                    w.put(dod as u64 & 0x1ff, 9);
                }
                -2047..=2048 => {
                    w.put(0b1110, 4);
                    w.put(dod as u64 & 0xfff, 12);
                }
                _ => {
                    w.put(0b1111, 4);
                    w.put(dod as u64, 64);
                }
            }
            prev_delta = delta;
        }
        prev = t;
    }
    w.bytes
}

fn dod_decode(bytes: &[u8], n: usize) -> Vec<u64> {
    let mut r = BitReader { bytes, at: 0 };
    let sign = |v: u64, bits: u32| ((v << (64 - bits)) as i64) >> (64 - bits);
    let mut out = Vec::with_capacity(n);
    let (mut prev, mut prev_delta) = (0u64, 0i64);
    for i in 0..n {
        let t = if i == 0 {
            r.get(64)
        } else {
            let dod = if r.get(1) == 0 {
                0
            } else if r.get(1) == 0 {
                sign(r.get(7), 7)
            } else if r.get(1) == 0 {
                sign(r.get(9), 9)
            } else if r.get(1) == 0 {
                sign(r.get(12), 12)
            } else {
                r.get(64) as i64
            };
            let delta = prev_delta.wrapping_add(dod);
            prev_delta = delta;
            prev.wrapping_add(delta as u64)
        };
        out.push(t);
        prev = t;
    }
    out
}

/// Gorilla's values: the first raw, then each XOR with the one before — `0` if equal, else `1`
/// and either `0` + the meaningful bits inside the previous window, or `1` + 5 bits of leading
/// zeros + 6 of length + the bits.
fn xor_encode(values: &[f64]) -> Vec<u8> {
    let mut w = BitWriter::default();
    let mut prev = 0u64;
    let mut window: Option<(u32, u32)> = None; // (leading, trailing)
    for (i, v) in values.iter().enumerate() {
        let bits = v.to_bits();
        if i == 0 {
            w.put(bits, 64);
        } else {
            let xor = bits ^ prev;
            if xor == 0 {
                w.put(0, 1);
            } else {
                w.put(1, 1);
                let (lead, trail) = (xor.leading_zeros().min(31), xor.trailing_zeros());
                match window {
                    Some((l, t)) if lead >= l && trail >= t => {
                        w.put(0, 1);
                        w.put(xor >> t, 64 - l - t);
                    }
                    _ => {
                        let len = 64 - lead - trail;
                        w.put(1, 1);
                        w.put(u64::from(lead), 5);
                        w.put(u64::from(len - 1), 6);
                        w.put(xor >> trail, len);
                        window = Some((lead, trail));
                    }
                }
            }
        }
        prev = bits;
    }
    w.bytes
}

fn xor_decode(bytes: &[u8], n: usize) -> Vec<f64> {
    let mut r = BitReader { bytes, at: 0 };
    let mut out = Vec::with_capacity(n);
    let mut prev = 0u64;
    let mut window = (0u32, 0u32);
    for i in 0..n {
        let bits = if i == 0 {
            r.get(64)
        } else if r.get(1) == 0 {
            prev
        } else {
            if r.get(1) == 1 {
                let lead = u32::try_from(r.get(5)).expect("5 bits");
                let len = u32::try_from(r.get(6)).expect("6 bits") + 1;
                window = (lead, 64 - lead - len);
            }
            let (l, t) = window;
            prev ^ (r.get(64 - l - t) << t)
        };
        out.push(f64::from_bits(bits));
        prev = bits;
    }
    out
}

/// Bytes of the data set's columns encoded `chunk` rows at a time, by each codec, every block
/// decoded again and compared bit for bit: (pco, Gorilla).
fn codec_bytes(ds: &DataSet, chunk: usize) -> (u64, u64) {
    let (mut pco, mut gorilla) = (0u64, 0u64);
    for axis in ds.axis.chunks(chunk) {
        let p = pco_encode(axis);
        assert_eq!(pco_decode::<u64>(&p), axis, "{}: pco axis", ds.name);
        let g = dod_encode(axis);
        assert_eq!(dod_decode(&g, axis.len()), axis, "{}: dod axis", ds.name);
        pco += p.len() as u64;
        gorilla += g.len() as u64;
    }
    for (name, values) in &ds.fields {
        for block in values.chunks(chunk) {
            let same = |got: Vec<f64>| {
                got.iter()
                    .map(|v| v.to_bits())
                    .eq(block.iter().map(|v| v.to_bits()))
            };
            let p = pco_encode(block);
            assert!(same(pco_decode(&p)), "{}: pco {name}", ds.name);
            let g = xor_encode(block);
            assert!(same(xor_decode(&g, block.len())), "{}: xor {name}", ds.name);
            pco += p.len() as u64;
            gorilla += g.len() as u64;
        }
    }
    (pco, gorilla)
}

fn per_row(bytes: u64, n: usize) -> f64 {
    bytes as f64 / n as f64
}

fn rows_total() -> usize {
    let n = std::env::var("STRATA_DENSE_ROWS")
        .ok()
        .and_then(|s| s.parse::<usize>().ok())
        .unwrap_or(ROWS_DEFAULT);
    n.div_ceil(BARRIER_ROWS).max(1) * BARRIER_ROWS
}

/// The targets, B/row: random walk, sensor; none for the data set of our own choosing.
fn target(ds: &DataSet) -> Option<f64> {
    match ds.name {
        "random walk" => Some(6.0),
        "sensor" => Some(1.0),
        _ => None,
    }
}

/// strata beside Parquet, and ingest with compaction beside seals alone, in one run.
fn table(sets: &[DataSet], out: Option<&Path>) {
    println!(
        "| data ({} rows) | strata B/row | of it levels | Parquet + zstd 3 B/row | strata / Parquet | target | ingest, seals only | ingest, 4 steps a barrier | ratio | compaction bytes / sealed | steps | their I/O floor | best ratio at that floor | ratio / best |",
        sets[0].n_rows()
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for ds in sets {
        let n = ds.n_rows();
        // Each twice, alternately, and the faster of each kept: one run of either varied by
        // up to half from one sitting to the next (write-back, the machine's neighbours).
        let faster = |a: StrataRun, b: StrataRun| if b.ingest() < a.ingest() { b } else { a };
        let (sealed_first, stepped_first) = (strata_run(ds, false), strata_run(ds, true));
        let sealed_only = faster(sealed_first, strata_run(ds, false));
        let stepped = faster(stepped_first, strata_run(ds, true));
        let parquet = parquet_file(ds, 3);
        if let Some(out) = out {
            let name: String = ds
                .name
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                .collect();
            let path: PathBuf = out.join(format!("{name}.parquet"));
            std::fs::write(&path, &parquet).expect("write the Parquet file");
        }
        let rate = |run: &StrataRun| n as f64 / run.ingest().as_secs_f64() / 1e6;
        let floor = steps_io_floor(&stepped);
        let ratio = sealed_only.ingest().as_secs_f64() / stepped.ingest().as_secs_f64();
        let best =
            sealed_only.ingest().as_secs_f64() / (sealed_only.ingest() + floor).as_secs_f64();
        let strata = per_row(stepped.bytes, n);
        let parquet = per_row(parquet.len() as u64, n);
        println!(
            "| {} | {strata:.2} | {:.1}% | {parquet:.2} | {:.2} | {} | {:.2} M rows/s | {:.2} M rows/s ({:.2} s sealing + {:.2} s steps) | {ratio:.2} | {:.2} | {} | {:.2} s | {best:.2} | {:.2} |",
            ds.name,
            100.0 * stepped.cell_bytes as f64 / stepped.bytes as f64,
            strata / parquet,
            target(ds).map_or("-".to_owned(), |t| format!("<= {t:.1}")),
            rate(&sealed_only),
            rate(&stepped),
            stepped.sealing.as_secs_f64(),
            stepped.stepping.as_secs_f64(),
            stepped.bytes_compacted as f64 / stepped.bytes_sealed as f64,
            stepped.steps,
            floor.as_secs_f64(),
            ratio / best,
        );
    }
    println!(
        "(bytes per row: every file of the store once compacted, levels included, every row read back and compared bit for bit; ingest: publish_columns + seal of each {BARRIER_ROWS}-row barrier, and the compaction steps Served grants after each; the steps' I/O floor: their files written, synced, renamed and their inputs unlinked with nothing else (steps_io_floor), and the best ratio the seals-only time allows beside it)"
    );
}

/// Missing values (#48): each data set's store once compacted, as it is and with 1% of its
/// first field null at random rows, in one run. A column without a null stores what format 6
/// stored (`tests/it/damaged_reads.rs` holds that byte for byte); a null costs its row's
/// validity run and whatever its placeholder (the value before it) changes in the packed
/// column.
fn holes_table(sets: &[DataSet]) {
    println!(
        "| data ({} rows) | strata B/row, no value missing | 1% of `{}` null | difference B/row | target |",
        sets[0].n_rows(),
        sets[0].fields[0].0
    );
    println!("|---|---:|---:|---:|---:|");
    for ds in sets {
        let n = ds.n_rows();
        let whole = per_row(strata_run(ds, true).bytes, n);
        let holes = per_row(strata_run(&with_holes(ds), true).bytes, n);
        println!(
            "| {} | {whole:.3} | {holes:.3} | {:+.3} | <= +0.100 |",
            ds.name,
            holes - whole
        );
    }
    println!(
        "(every file of the store once compacted, levels included, every row and every null read back and compared)"
    );
}

/// The codec study that chose pco (docs/format.md): each codec over the raw columns, in
/// barrier-sized blocks and whole columns, beside Parquet at two zstd levels.
fn codec_table(sets: &[DataSet]) {
    println!();
    println!(
        "| data ({} rows) | raw (8 B a value) | Parquet + zstd 3 | Parquet + zstd 9 | pco, 10^4-row blocks | pco, whole columns | Gorilla, 10^4-row blocks | Gorilla, whole columns |",
        sets[0].n_rows()
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    for ds in sets {
        let n = ds.n_rows();
        let raw = (8 * (1 + ds.fields.len()) * n) as u64;
        let parquet_3 = parquet_file(ds, 3).len() as u64;
        let parquet_9 = parquet_file(ds, 9).len() as u64;
        let (pco_blocks, gorilla_blocks) = codec_bytes(ds, BARRIER_ROWS);
        let (pco_whole, gorilla_whole) = codec_bytes(ds, n);
        println!(
            "| {} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} |",
            ds.name,
            per_row(raw, n),
            per_row(parquet_3, n),
            per_row(parquet_9, n),
            per_row(pco_blocks, n),
            per_row(pco_whole, n),
            per_row(gorilla_blocks, n),
            per_row(gorilla_whole, n),
        );
    }
    println!("(bytes per row; every codec's output decoded and compared bit for bit)");
}

fn speeds(c: &mut Criterion, sets: &[DataSet]) {
    let mut group = c.benchmark_group("codec");
    group.sample_size(10);
    group.measurement_time(std::time::Duration::from_secs(2));
    for ds in sets {
        let n = (BARRIER_ROWS * 10).min(ds.n_rows());
        let values = &ds.fields[0].1[..n];
        let axis = &ds.axis[..n];
        group.throughput(Throughput::Elements(values.len() as u64));
        let id = |what: &str| BenchmarkId::new(what, ds.name);
        for level in PCO_LEVELS {
            group.bench_function(id(&format!("pco encode values, level {level}")), |b| {
                b.iter(|| {
                    values
                        .chunks(BARRIER_ROWS)
                        .map(|v| pco_encode_at(black_box(v), level).len())
                        .sum::<usize>()
                });
            });
        }
        group.bench_function(id("xor encode values"), |b| {
            b.iter(|| {
                values
                    .chunks(BARRIER_ROWS)
                    .map(|v| xor_encode(black_box(v)).len())
                    .sum::<usize>()
            });
        });
        let pco_blocks: Vec<Vec<u8>> = values.chunks(BARRIER_ROWS).map(pco_encode).collect();
        let xor_blocks: Vec<Vec<u8>> = values.chunks(BARRIER_ROWS).map(xor_encode).collect();
        group.bench_function(id("pco decode values"), |b| {
            b.iter(|| {
                pco_blocks
                    .iter()
                    .map(|p| pco_decode::<f64>(black_box(p)).len())
                    .sum::<usize>()
            });
        });
        group.bench_function(id("xor decode values"), |b| {
            b.iter(|| {
                xor_blocks
                    .iter()
                    .map(|x| xor_decode(black_box(x), BARRIER_ROWS).len())
                    .sum::<usize>()
            });
        });
        group.bench_function(id("pco encode axis"), |b| {
            b.iter(|| {
                axis.chunks(BARRIER_ROWS)
                    .map(|a| pco_encode(black_box(a)).len())
                    .sum::<usize>()
            });
        });
        let pco_axis: Vec<Vec<u8>> = axis.chunks(BARRIER_ROWS).map(pco_encode).collect();
        group.bench_function(id("pco decode axis"), |b| {
            b.iter(|| {
                pco_axis
                    .iter()
                    .map(|p| pco_decode::<u64>(black_box(p)).len())
                    .sum::<usize>()
            });
        });
        // The floor a decode is measured against: copying the block's plain bytes.
        group.bench_function(id("copy values (the plain read)"), |b| {
            b.iter(|| {
                values
                    .chunks(BARRIER_ROWS)
                    .map(|v| black_box(v.to_vec()).len())
                    .sum::<usize>()
            });
        });
    }
    group.finish();
}

/// The barrier beside the encode it would pay to compress at seal: criterion times a
/// `publish_columns` + `seal` of one barrier's rows (a real store in a temp dir, real syncs) and
/// pco at level 4 over the same barrier's columns (axis and values), per data set.
fn barrier_against_encode(c: &mut Criterion, sets: &[DataSet]) {
    let mut group = c.benchmark_group("barrier");
    group.sample_size(20);
    group.measurement_time(std::time::Duration::from_secs(4));
    for ds in sets {
        let n = BARRIER_ROWS.min(ds.n_rows());
        group.throughput(Throughput::Elements(n as u64));
        let mut stream = Stream::new("s").field("t", FieldKind::U64);
        for (name, _) in &ds.fields {
            stream = stream.field(*name, FieldKind::F64);
        }
        let decl = stream.axis("t").build().expect("a valid declaration");
        let dir = tempfile::tempdir().expect("a temp dir");
        let mut store =
            Store::open_or_create(dir.path(), Config::default(), &[decl]).expect("a store");
        let mut position = 0u64;
        let mut axis: Vec<u64> = ds.axis[..n].to_vec();
        let span = ds.axis[n - 1] - ds.axis[0] + 1;
        group.bench_function(BenchmarkId::new("publish_columns + seal", ds.name), |b| {
            b.iter(|| {
                let mut columns = vec![Values::U64(&axis)];
                columns.extend(ds.fields.iter().map(|(_, v)| Values::F64(&v[..n])));
                store
                    .publish_columns("s", position, &[], &columns)
                    .expect("publish");
                store.seal().expect("seal");
                position += 1;
                for t in &mut axis {
                    *t += span;
                }
            });
        });
        group.bench_function(
            BenchmarkId::new("pco level 4, every column", ds.name),
            |b| {
                b.iter(|| {
                    let mut bytes = pco_encode_at(black_box(&ds.axis[..n]), 4).len();
                    for (_, values) in &ds.fields {
                        bytes += pco_encode_at(black_box(&values[..n]), 4).len();
                    }
                    bytes
                });
            },
        );
    }
    group.finish();
}

fn main() {
    let n = rows_total();
    let sets = [random_walk(n), sensor(n), noise(n)];
    let out = std::env::var_os("STRATA_DENSE_OUT").map(PathBuf::from);
    if let Some(out) = &out {
        std::fs::create_dir_all(out).expect("the output folder");
    }
    if std::env::var_os("STRATA_DENSE_HOLES").is_some() {
        // The missing-values table alone (#48).
        holes_table(&sets);
        return;
    }
    table(&sets, out.as_deref());
    holes_table(&sets);
    if std::env::var_os("STRATA_DENSE_CODECS").is_some() {
        codec_table(&sets);
        pco_levels_table(&sets);
    }
    let mut c = Criterion::default().configure_from_args();
    speeds(&mut c, &sets);
    barrier_against_encode(&mut c, &sets);
    c.final_summary();
}
