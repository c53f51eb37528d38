//! Reads of packed columns (segment format 5 on) answer exactly as plain ones: the same
//! barriers sealed into a store of each, every query, survey and fold compared, over ranges
//! that cut chunks and cells; and the cache of decoded chunks those reads fill stays under its
//! bound (`Config::decoded_chunks_bytes_max`), is used, and changes no answer.

use std::fmt::Write;

use strata::segment::Column;
use strata::segment::vfs::SimFs;
use strata::{Aggregate, Config, FieldKind, Store, Stream, StreamDecl, Values};

use crate::support::sim;

fn decl() -> StreamDecl {
    Stream::new("s")
        .field("run", FieldKind::Str)
        .field("t", FieldKind::U64)
        .field("v", FieldKind::F64)
        .field("n", FieldKind::I64)
        .track(["run"])
        .axis("t")
        .build()
        .unwrap()
}

/// Ten barriers of 10,000 rows a track for two tracks: values with decimals (they pack) and
/// sums that round.
fn fill(store: &mut Store) {
    for barrier in 0..10u64 {
        for (k, run) in [(0u64, "a"), (1, "b")] {
            let rows = barrier * 10_000..(barrier + 1) * 10_000;
            let t: Vec<u64> = rows.clone().map(|i| 3 * i + k + i % 2).collect();
            let v: Vec<f64> = rows
                .clone()
                .map(|i| ((i * 7_919 + k) % 1_000) as f64 / 7.0 + (i as f64 / 50.0).sin())
                .collect();
            let n: Vec<i64> = rows.map(|i| i64::try_from(i % 97).unwrap() - 40).collect();
            store
                .publish_columns(
                    "s",
                    barrier,
                    &[run],
                    &[Values::U64(&t), Values::F64(&v), Values::I64(&n)],
                )
                .unwrap();
        }
        store.seal().unwrap();
    }
}

/// Every read, in words (Debug keeps every float's exact value).
fn answers(store: &Store) -> String {
    let mut out = String::new();
    for selection in [&[][..], &["a"][..], &["b"][..]] {
        let rows = store.query("s", selection, 40_000..=41_000).unwrap();
        writeln!(out, "query {selection:?} {rows:?}").unwrap();
        let all = store.query("s", selection, ..).unwrap().len();
        writeln!(out, "query {selection:?} all: {all}").unwrap();
        // Runs let go as they come, so a packed read decodes each chunk into the memory of
        // the last: every row's position, axis and values, in order.
        for range in [(0, u64::MAX), (3, 7)] {
            let mut rows = String::new();
            for run in store.query_runs("s", selection, range.0..=range.1).unwrap() {
                let run = run.unwrap();
                let (axis, v, n) = (run.axis().unwrap(), run.column(2), run.column(3));
                let (Some(Column::F64(v)), Some(Column::I64(n))) = (v, n) else {
                    panic!("v and n are numbers");
                };
                for (i, position) in run.positions().enumerate() {
                    let (t, v, n) = (axis[i].get(), v[i].get(), n[i].get());
                    writeln!(rows, "{:?} {position} {t} {v:?} {n}", run.track()).unwrap();
                }
            }
            writeln!(out, "runs {selection:?} {range:?}:\n{rows}").unwrap();
        }
        for (lo, hi) in [
            (0, u64::MAX),
            (1_234, 287_651),
            (150_001, 150_999),
            (29_990, 30_030),
        ] {
            for budget in [24, 400, 4_000] {
                let survey = store.survey("s", selection, lo..=hi, budget);
                writeln!(out, "survey {selection:?} {lo}..={hi} {budget}: {survey:?}").unwrap();
            }
            for aggregate in [
                Aggregate::Mean,
                Aggregate::Sum,
                Aggregate::Min,
                Aggregate::Count,
                Aggregate::p(50),
                Aggregate::p(99),
            ] {
                let fold = store.fold("s", selection, lo..=hi, aggregate);
                writeln!(out, "fold {selection:?} {lo}..={hi} {aggregate}: {fold:?}").unwrap();
            }
        }
    }
    out
}

fn store(config: Config) -> Store {
    let mut store = Store::open_or_create_in(sim(&SimFs::new()), config, &[decl()]).unwrap();
    fill(&mut store);
    store
}

#[test]
fn packed_columns_answer_as_plain_ones_and_the_chunk_cache_stays_under_its_bound() {
    let plain = answers(&store(Config::default().pack_columns(false)));
    // Room for three chunks of 10,000 values (80,000 bytes each): far fewer than the reads
    // touch, so the cache fills, evicts, and is read again.
    let bound = 3 * 80_000;
    let packed = store(Config::default().decoded_chunks_bytes_max(bound));
    assert_eq!(answers(&packed), plain, "packed against plain");
    let metrics = packed.metrics();
    assert!(
        metrics.decoded_chunks_bytes <= bound as u64,
        "{} bytes kept over a bound of {bound}",
        metrics.decoded_chunks_bytes
    );
    assert!(
        metrics.decoded_chunks_bytes > 2 * 80_000,
        "filled to the bound"
    );
    assert!(metrics.decoded_chunk_evictions > 0, "{metrics:?}");
    assert!(metrics.decoded_chunk_hits > 0, "{metrics:?}");
    // Read again, the answers are those of the chunks kept, and the same.
    assert_eq!(answers(&packed), plain, "packed, read again");
    // Without a cache: nothing kept, nothing different.
    let uncached = store(Config::default().decoded_chunks_bytes_max(0));
    assert_eq!(answers(&uncached), plain, "packed without a cache");
    let metrics = uncached.metrics();
    assert_eq!(
        (metrics.decoded_chunks_bytes, metrics.decoded_chunk_hits),
        (0, 0)
    );
}

/// Compacted, a partition's rows lie in one file of many chunks, and two tracks' runs
/// interleave: each read decodes chunk after chunk of a block, into the memory the last one
/// left when its runs are let go, and still answers as the plain store does.
#[test]
fn packed_columns_answer_as_plain_ones_after_compaction() {
    let compacted = |config: Config| {
        let mut store = store(config);
        store.compact().unwrap();
        store
    };
    let plain = compacted(Config::default().pack_columns(false));
    let packed = compacted(Config::default());
    assert_eq!(answers(&packed), answers(&plain), "packed against plain");
}

/// A level fold whose range reaches past the live rows at an end reads the coarse cells that
/// hold them there, not fine cells a packed file folds from its rows: a fold of everything
/// decodes no chunk. Its answer is still the fold of exactly the rows in range (count, min,
/// max exact; the mean within rounding of the rows' own mean), and once the stream has a
/// floor too.
#[test]
fn a_fold_reaching_past_the_live_rows_reads_coarse_cells_and_folds_the_same_rows() {
    let mut store = store(Config::default());
    // Every row of both tracks, as `fill` published them.
    let mut all: Vec<(u64, f64)> = Vec::new();
    for barrier in 0..10u64 {
        for k in [0u64, 1] {
            for i in barrier * 10_000..(barrier + 1) * 10_000 {
                let v = ((i * 7_919 + k) % 1_000) as f64 / 7.0 + (i as f64 / 50.0).sin();
                all.push((3 * i + k + i % 2, v));
            }
        }
    }
    let expect = |lo: u64, hi: u64| {
        let v: Vec<f64> = all
            .iter()
            .filter(|(t, _)| (lo..=hi).contains(t))
            .map(|&(_, v)| v)
            .collect();
        let sum: f64 = v.iter().sum();
        (
            v.len() as f64,
            v.iter().copied().fold(f64::INFINITY, f64::min),
            v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            sum / v.len() as f64,
        )
    };
    let (live_lo, live_hi) = (0, all.iter().map(|&(t, _)| t).max().unwrap());
    let fold = |store: &Store, lo: u64, hi: u64| {
        let one = |aggregate| {
            let stats = store.fold("s", &[], lo..=hi, aggregate).unwrap();
            stats[0].value.unwrap().as_f64()
        };
        let chunks = |m: strata::Metrics| m.decoded_chunk_hits + m.decoded_chunk_misses;
        let before = chunks(store.metrics());
        let mean = one(Aggregate::Mean);
        let decoded = chunks(store.metrics()) - before;
        let got = (
            one(Aggregate::Count),
            one(Aggregate::Min),
            one(Aggregate::Max),
            mean,
        );
        (got, decoded)
    };
    let check = |store: &Store, lo: u64, hi: u64, what: &str| {
        let (got, decoded) = fold(store, lo, hi);
        let want = expect(lo.max(live_lo), hi.min(live_hi));
        assert_eq!((got.0, got.1, got.2), (want.0, want.1, want.2), "{what}");
        assert!(
            (got.3 - want.3).abs() <= 1e-12 * want.3.abs(),
            "{what}: mean {} against {}",
            got.3,
            want.3
        );
        decoded
    };
    assert_eq!(check(&store, 0, u64::MAX, "everything"), 0, "no chunk");
    assert_eq!(check(&store, 0, live_hi, "to the last row"), 0, "no chunk");
    // An end inside the rows is folded from the rows there.
    assert!(check(&store, 0, live_hi - 1_001, "short of the last row") > 0);
    assert!(check(&store, 1_001, u64::MAX, "after the first row") > 0);
    // With a floor (the first barrier trimmed: its levels stay), nothing is widened, and a
    // fold of everything still folds every row's cells.
    store.trim_to("s", 1).unwrap();
    check(&store, 0, u64::MAX, "everything, over a floor");
}

/// Packed level cells (segment format 8) that reads decode are kept in a cache of their own,
/// apart from the columns' chunks, under its bound (`Config::decoded_cells_bytes_max`):
/// compacted, a survey of everything at a small budget reads only stored coarse cells, decoding
/// their chunks once and then finding them kept; with room for a few chunks of cells, every
/// read fills it, evicts, stays under the bound, and answers as a store that keeps nothing.
/// Compaction, which reads each chunk once, leaves both caches alone.
#[test]
fn packed_cells_are_kept_in_the_cell_cache_under_its_bound() {
    let compacted = |config: Config| {
        let mut store = store(config);
        store.compact().unwrap();
        store
    };
    let bound = 16 << 10;
    let kept = compacted(Config::default().decoded_cells_bytes_max(bound));
    let merged = kept.metrics();
    assert_eq!(
        (
            merged.decoded_cell_hits + merged.decoded_cell_misses,
            merged.decoded_chunk_hits + merged.decoded_chunk_misses,
        ),
        (0, 0),
        "compaction passes through its inputs' cells and rows without the caches"
    );
    let coarse = |store: &Store| store.survey("s", &[], .., 24).unwrap();
    let first = coarse(&kept);
    let after_first = kept.metrics();
    assert!(
        after_first.decoded_cell_misses > 0 && after_first.decoded_cells_bytes > 0,
        "a survey of stored cells decodes and keeps their chunks: {after_first:?}"
    );
    assert_eq!(coarse(&kept), first);
    let after_second = kept.metrics();
    assert_eq!(
        after_second.decoded_cell_misses, after_first.decoded_cell_misses,
        "read again, every chunk of cells was kept"
    );
    assert!(after_second.decoded_cell_hits > after_first.decoded_cell_hits);
    let none = compacted(Config::default().decoded_cells_bytes_max(0));
    assert_eq!(answers(&kept), answers(&none), "kept against none kept");
    let metrics = kept.metrics();
    assert!(
        metrics.decoded_cells_bytes <= bound as u64,
        "{} bytes kept over a bound of {bound}",
        metrics.decoded_cells_bytes
    );
    assert!(metrics.decoded_cell_evictions > 0, "{metrics:?}");
    assert_eq!(none.metrics().decoded_cells_bytes, 0);
}
