//! The `reads` fuzz target's entry point, shared with its corpus replay test so both drive the
//! same code: a store in a simulated file system whose one segment is the fuzzer's bytes, resealed
//! (every checksum recomputed, see [`strata_segment::fuzzing::reseal`]) and claimed by a manifest
//! built from what the file's own directory says. So a mutation gets past the checksums and the
//! claim, into the engine's reads — query, survey, level folds and percentiles — where a broken
//! promise must be an error, never a panic.

use std::ops::RangeInclusive;
use std::sync::Arc;

use strata_index::{Catalog, Entry, FieldKind, FileEntry, FileName, Record, StreamDecl};
use strata_levels::{Aggregate, Num};
use strata_segment::names::{NumberedName, SEG_DIR};
use strata_segment::vfs::{SimFs, Vfs};
use strata_segment::{SegmentReader, create_store, fuzzing::reseal, write_two_phase};

use crate::config::Config;
use crate::decl::Stream;
use crate::store::Store;
use crate::value::Value;

/// The name the one segment is claimed under.
const SEGMENT_NAME: FileName = 1;

/// The stream every reads input is read as: a track, an axis, one measured field of each numeric
/// kind (so a kind byte flipped from one to another is a live mutation), and a `str` column.
///
/// # Panics
/// Never: the declaration is fixed and valid.
pub fn reads_decl() -> StreamDecl {
    Stream::new("cap")
        .field("run", FieldKind::Str)
        .field("t", FieldKind::U64)
        .field("u", FieldKind::U64)
        .field("i", FieldKind::I64)
        .field("f", FieldKind::F64)
        .field("note", FieldKind::Str)
        .track(["run"])
        .axis("t")
        .ladder(4, 4)
        .build()
        .expect("the fuzz declaration is valid")
}

/// A seed for the `reads` target, written by the real engine: two partitions of
/// [`reads_decl`], several levels each, sealed in one barrier with every level stored whole
/// (`LevelStorage::Whole`), so that the cells a mutation damages are there to damage.
///
/// # Panics
/// If the engine cannot write to a fresh simulated file system: a bug, not an input.
pub fn reads_seed() -> Vec<u8> {
    let fs = SimFs::new();
    let vfs: Arc<dyn Vfs> = Arc::new(fs.clone());
    // Plain cells (and columns): the records `tests/it/damaged_reads.rs` edits in place.
    // `reads_seed_folded` and the others pack theirs.
    let config = Config::default()
        .level_storage(crate::LevelStorage::Whole)
        .pack_columns(false);
    let mut store = Store::create_in(vfs, config, &[reads_decl()]).expect("a fresh store opens");
    let mut n_published = 0u64;
    for (run, start) in [("run_7", 0u64), ("run_70", 3)] {
        let rows: Vec<Vec<Value>> = (0..12u64)
            .map(|i| {
                let t = start + i * i;
                vec![
                    Value::Str(run.into()),
                    Value::U64(t),
                    Value::U64(i % 5),
                    Value::I64(i64::try_from(i).unwrap_or(0) - 6),
                    Value::F64(f64::from(u32::try_from(i).unwrap_or(0)) * 0.5 - 1.0),
                    Value::Str(format!("n{i}")),
                ]
            })
            .collect();
        for row in rows {
            // Three rows a position: positions are not unique, and do not go backwards.
            store
                .publish("cap", n_published / 3, &[row])
                .expect("the seed rows are valid");
            n_published += 1;
        }
    }
    store.seal().expect("the seed seals");
    drop(store);
    let path = NumberedName::segment(SEGMENT_NAME).path_in(SEG_DIR);
    fs.live_bytes(&path).expect("the barrier wrote segment 1")
}

/// Rows `ns` of one partition of [`reads_decl`], their axis advancing unevenly and their
/// `f64` sums rounding.
fn seed_rows(ns: std::ops::Range<u64>) -> Vec<Vec<Value>> {
    ns.map(|n| {
        vec![
            Value::Str("run_7".into()),
            Value::U64(n + n / 7),
            Value::U64(n % 5),
            Value::I64(i64::try_from(n % 13).unwrap_or(0) - 6),
            Value::F64(f64::from(u32::try_from(n % 17).unwrap_or(0)) * 0.1 + 1.0 / 3.0),
            Value::Str(format!("n{n}")),
        ]
    })
    .collect()
}

/// A second seed for the `reads` target: one partition of [`reads_decl`] sealed in four
/// barriers under `LevelStorage::Adaptive` and merged by compaction into one file, which stores
/// its levels only from a level up and, beneath it, the cells where its inputs met (format
/// version 3 when it was written, and kept so): the file a fuzzer mutates to reach the reads that fold levels from the rows.
///
/// # Panics
/// If the engine cannot write to a fresh simulated file system: a bug, not an input.
pub fn reads_seed_folded() -> Vec<u8> {
    let fs = SimFs::new();
    let vfs: Arc<dyn Vfs> = Arc::new(fs.clone());
    let config = Config::default()
        .level_storage(crate::LevelStorage::Adaptive)
        .compact_inputs_min(16)
        .compact_files_max(1);
    let mut store = Store::create_in(vfs, config, &[reads_decl()]).expect("a fresh store opens");
    for barrier in 0..4u64 {
        let rows = seed_rows(barrier * 150..(barrier + 1) * 150);
        store
            .publish("cap", barrier, &rows)
            .expect("the seed rows are valid");
        store.seal().expect("the seed seals");
    }
    store.compact().expect("the seed compacts");
    drop(store);
    // The merge's output is the newest segment.
    (1..64)
        .rev()
        .find_map(|name| fs.live_bytes(&NumberedName::segment(name).path_in(SEG_DIR)))
        .expect("the merge wrote a segment")
}

/// A seed for the `reads` target with a packed Cells block (format version 8): one partition
/// of [`reads_decl`], 1,500 rows sealed in one barrier with every level stored whole, so each
/// field's finest levels take more than one chunk of cells.
///
/// # Panics
/// If the engine cannot write to a fresh simulated file system: a bug, not an input.
pub fn reads_seed_packed_cells() -> Vec<u8> {
    let fs = SimFs::new();
    let vfs: Arc<dyn Vfs> = Arc::new(fs.clone());
    let config = Config::default().level_storage(crate::LevelStorage::Whole);
    let mut store = Store::create_in(vfs, config, &[reads_decl()]).expect("a fresh store opens");
    store
        .publish("cap", 0, &seed_rows(0..1_500))
        .expect("the seed rows are valid");
    store.seal().expect("the seed seals");
    drop(store);
    let path = NumberedName::segment(SEGMENT_NAME).path_in(SEG_DIR);
    fs.live_bytes(&path).expect("the barrier wrote segment 1")
}

/// A third seed for the `reads` target (format version 4): one partition of [`reads_decl`]
/// sealed in 24 barriers with nothing compacted between them, then compacted under a byte cap of
/// a quarter of it, so that merges reach behind the newest segments: the file answered is such
/// an output — the oldest, so that it can be claimed alone — whose cells shared with the
/// segments after it are kept as chains.
///
/// # Panics
/// If the engine cannot write to a fresh simulated file system, or kept no chain: a bug, not
/// an input.
pub fn reads_seed_chained() -> Vec<u8> {
    merged_behind(40, |reader| {
        let part = &reader.partitions()[0];
        (0..part.entry.n_levels).any(|level| {
            part.measured.iter().any(|&(field, _)| {
                reader
                    .cells(0, field, level, 0..=u64::MAX)
                    .is_ok_and(|cells| cells.windows(2).any(|w| w[0].index == w[1].index))
            })
        })
    })
    .expect("a merge kept a chain")
}

/// One partition of [`reads_decl`] sealed in 24 barriers of `rows` rows with nothing compacted
/// between them, then compacted under a byte cap of a quarter of it, so that merges reach
/// behind the newest segments: the oldest output (so that a fresh manifest may claim it alone)
/// for which `wanted` holds.
fn merged_behind(rows: u64, wanted: impl Fn(&SegmentReader<&[u8]>) -> bool) -> Option<Vec<u8>> {
    let fs = SimFs::new();
    let vfs: Arc<dyn Vfs> = Arc::new(fs.clone());
    let mut store = Store::create_in(vfs.clone(), Config::default(), &[reads_decl()])
        .expect("a fresh store opens");
    for barrier in 0..24u64 {
        let rows = seed_rows(barrier * rows..(barrier + 1) * rows);
        store
            .publish("cap", barrier, &rows)
            .expect("the seed rows are valid");
        store.seal().expect("the seed seals");
    }
    let cap = store.metrics().bytes_sealed / 4;
    drop(store);
    let config = Config::default()
        .compact_step_bytes_max(cap)
        .compact_files_max(1);
    let mut store = Store::open_in(vfs, config, &[]).expect("the seed reopens");
    store.compact().expect("the seed compacts");
    drop(store);
    (1..256)
        .filter_map(|name| fs.live_bytes(&NumberedName::segment(name).path_in(SEG_DIR)))
        .find(|bytes| {
            SegmentReader::open("seed", bytes.as_slice()).is_ok_and(|reader| {
                reader.partitions()[0].entry.ordinals[0] == 0 && wanted(&reader)
            })
        })
}

/// A fourth seed for the `reads` target (format version 6): as [`reads_seed_chained`], a merge
/// behind the newest segments, now with packed columns and the seams between the barriers it
/// merged, its levels beneath `stored_from` folded from the rows piece by piece, and the cell
/// holding its last row a chain from the level it shared with the segment after it.
///
/// # Panics
/// If the engine cannot write to a fresh simulated file system, or the merge kept no seam: a
/// bug, not an input.
pub fn reads_seed_seams() -> Vec<u8> {
    merged_behind(60, |reader| {
        reader.partitions()[0].chained_from.is_some()
            && reader.seams(0).is_ok_and(|seams| !seams.is_empty())
    })
    .expect("a merge behind the newest kept seams")
}

/// A store whose manifest declares [`reads_decl`] and claims `segment` as file 1, exactly as the
/// file's directory describes it (length, digest, partitions). `Err` says why no manifest could
/// claim the file (its header, footer or directory is refused, or the catalog refuses the claim).
pub fn store_over(segment: &[u8]) -> Result<Store, String> {
    let file = NumberedName::segment(SEGMENT_NAME).to_string();
    let reader = SegmentReader::open(&file, segment).map_err(|e| e.to_string())?;
    let decl = reads_decl();
    let partitions: Vec<_> = reader
        .partitions()
        .iter()
        .map(|p| p.entry.clone())
        .collect();
    let watermark = partitions.iter().map(|p| p.positions[1]).max().unwrap_or(0);
    let claim = FileEntry {
        name: SEGMENT_NAME,
        len: reader.file_len(),
        digest: reader.digest(),
        partitions,
    };
    let records = [
        Record {
            entries: vec![Entry::Declare(decl.clone())],
        },
        Record {
            entries: vec![
                Entry::AddFile(claim),
                Entry::Watermark {
                    stream: decl.id.clone(),
                    position: watermark,
                },
                Entry::NameHigh(SEGMENT_NAME),
            ],
        },
    ];
    let mut catalog = Catalog::new();
    for record in &records {
        catalog.apply(record).map_err(|e| e.to_string())?;
    }
    let fs = SimFs::new();
    create_store(&fs, &records).map_err(|e| e.to_string())?;
    write_two_phase(&fs, SEG_DIR, &file, segment).map_err(|e| e.to_string())?;
    Store::open_in(Arc::new(fs), Config::default(), &[decl]).map_err(|e| e.to_string())
}

/// Reseals `bytes` as a segment, claims it in a fresh store, and runs every read over it.
///
/// # Panics
/// If a read answers more than the file holds: more rows than its partitions claim, more buckets
/// than the budget buys, a count above the rows.
pub fn reads(bytes: &[u8]) {
    let mut resealed = bytes.to_vec();
    reseal(&mut resealed);
    if let Ok(store) = store_over(&resealed) {
        read_everything(&store);
    }
}

/// Every read the engine offers, over the whole store and over a few narrower ranges. Errors
/// are answers too; what must hold is asserted.
fn read_everything(store: &Store) {
    let n_rows = match store.query("cap", &[], ..) {
        Ok(rows) => {
            assert!(
                rows.iter().all(|r| r.values.len() == 6),
                "a row of another arity"
            );
            Some(rows.len() as u64)
        }
        Err(_) => None,
    };
    for selection in [&[][..], &["run_7"][..]] {
        let _ = store.query("cap", selection, 1..=2);
        for axis in spans() {
            for budget in [12, 24, 400] {
                if let Ok(survey) = store.survey("cap", selection, axis.clone(), budget) {
                    let per_field = budget / 12;
                    assert!(
                        survey
                            .fields
                            .iter()
                            .all(|f| f.buckets.len() as u64 <= per_field),
                        "more buckets than the budget buys"
                    );
                }
            }
            for aggregate in [
                Aggregate::Count,
                Aggregate::Sum,
                Aggregate::Min,
                Aggregate::Max,
                Aggregate::Mean,
                Aggregate::p(0),
                Aggregate::p(50),
                Aggregate::p(100),
            ] {
                let Ok(stats) = store.fold("cap", selection, axis.clone(), aggregate) else {
                    continue;
                };
                if let (Aggregate::Count, Some(n_rows)) = (aggregate, n_rows) {
                    for stat in stats {
                        if let Some(Num::U64(count)) = stat.value {
                            assert!(count <= n_rows, "a count of {count} over {n_rows} rows");
                        }
                    }
                }
            }
            for level in [0, 1, 3, 64] {
                let _ = store.level_cells("cap", selection, "f", level, axis.clone());
            }
        }
    }
}

/// Axis ranges: everything, a middle slice, one edge, and the top of the axis.
fn spans() -> [RangeInclusive<u64>; 4] {
    [0..=u64::MAX, 5..=40, 0..=0, u64::MAX - 1..=u64::MAX]
}
