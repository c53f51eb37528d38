//! Reading positions and ordinals sequentially, run-encoded against plain: the query path walks
//! them row by row, so a run-encoded column must iterate about as fast as a slice of the map.
//!
//! `cargo bench -p strata-segment --bench sequence`: rows/s for a 10^7-row partition shaped as
//! a store writes it (10,000-row publish batches, ordinals stepping by 8), read plain and as runs.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use strata_index::TrackKey;
use strata_segment::{PartitionInput, SegmentReader, SegmentWriter, Sequence};
use zerocopy::little_endian::U64;

const N_ROWS: u64 = 10_000_000;

fn sum(seq: &Sequence<'_>) -> u64 {
    seq.iter().fold(0u64, u64::wrapping_add)
}

fn scan(c: &mut Criterion) {
    let positions: Vec<u64> = (0..N_ROWS).map(|i| i / 10_000).collect();
    let ordinals: Vec<u64> = (0..N_ROWS).map(|i| 5 + 8 * i).collect();
    let track = TrackKey::encode(&["a"]).expect("a key");
    let mut writer = SegmentWriter::new();
    writer.add_partition(&PartitionInput {
        stream: "s",
        track: &track,
        positions: &positions,
        ordinals: &ordinals,
        axis: None,
        columns: Vec::new(),
        nulls: Vec::new(),
        cells: Vec::new(),
        stored_from: 0,
    });
    let written = writer.finish();
    let reader = SegmentReader::open("bench.seg", written.bytes).expect("a segment");
    let runs = [reader.positions(0), reader.ordinals(0)].map(|s| s.expect("a column"));
    assert!(runs.iter().all(|s| s.as_runs().is_some()), "run-encoded");
    let plain: Vec<Vec<U64>> = [&positions, &ordinals]
        .iter()
        .map(|v| v.iter().copied().map(U64::new).collect())
        .collect();

    let mut group = c.benchmark_group("sequence_scan_10m_rows");
    group.throughput(Throughput::Elements(N_ROWS));
    group.sample_size(10);
    for (name, plain, runs) in [
        ("positions", &plain[0], runs[0]),
        ("ordinals", &plain[1], runs[1]),
    ] {
        group.bench_function(format!("{name}_plain"), |b| {
            b.iter(|| sum(&Sequence::plain(plain)));
        });
        group.bench_function(format!("{name}_runs"), |b| b.iter(|| sum(&runs)));
        group.bench_function(format!("{name}_slice"), |b| {
            b.iter(|| plain.iter().fold(0u64, |a, v| a.wrapping_add(v.get())));
        });
    }
    group.finish();
}

criterion_group!(benches, scan);
criterion_main!(benches);
