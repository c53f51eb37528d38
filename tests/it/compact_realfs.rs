//! Compaction on the real file system: a map of an input taken before compaction keeps reading
//! the input's bytes, whole and verified, after the step that retires it has removed the file
//! (issue 11, item 6).
//!
//! What the public API allows, and what this proves. A read through `Store::query` borrows the
//! store and returns only when it is done, and a compaction step needs the store mutably, so no
//! read of the public API is ever under way while a step removes a file (nor in `Served`, whose
//! supervisor answers reads and takes steps on one thread, one after the other). The read that
//! does hold readers past their files is the engine's own cursor, holding each segment reader by
//! `Arc`: that is tested in the engine, in `read.rs`
//! (`a_read_holding_inputs_reads_them_whole_after_compaction_removes_them`), with the store's own
//! readers. Here, through the facade only, the maps are taken the way the store takes them
//! (`RealFs::map` of each barrier file, read by a `SegmentReader`), part of the rows are read
//! before compaction and the rest after `Store::compact_step` has removed every file from
//! `seg/`: so the engine removes a retired input by unlinking it, never by truncating or
//! rewriting it in place, which is what keeps every map of it whole. With the removal turned
//! into a truncation (checked by hand), the read after compaction dies of SIGBUS.

use std::collections::BTreeMap;
use std::path::Path;

use strata::segment::vfs::{Mapped, RealFs, Vfs};
use strata::segment::{Decoded, SegmentReader};
use strata::{Config, FieldKind, Store, StoredRow, Stream, StreamDecl, Value};

const TRACKS: [&str; 2] = ["r0", "r1"];
const N_BARRIERS: u64 = 40;
const ROWS_PER_TRACK: u64 = 5;

fn decl() -> StreamDecl {
    Stream::new("c")
        .field("run", FieldKind::Str)
        .field("t", FieldKind::U64)
        .field("v", FieldKind::F64)
        .field("n", FieldKind::I64)
        .track(["run"])
        .axis("t")
        .build()
        .unwrap()
}

/// The segment files in `seg/`, by name.
fn segment_files(store: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(store.join("seg"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

/// Every row of `track` in the segment `reader` holds, rebuilt whole from its blocks.
fn rows_in(reader: &SegmentReader<Mapped>, track: &str) -> Vec<StoredRow> {
    let key = strata::index::TrackKey::encode(&[track]).unwrap();
    let Some(part) = reader.find("c", &key) else {
        return Vec::new();
    };
    let positions = reader.positions(part).unwrap();
    let axis = reader.axis(part).unwrap().expect("an axis block");
    let axis = axis.values(0..axis.len()).unwrap();
    // Plain or packed, each column read whole as numbers.
    let numbers = |field| {
        let column = reader.column(part, field).unwrap().expect("a column");
        column.numbers(0..column.len()).unwrap()
    };
    let Some(Decoded::F64(v)) = numbers(2) else {
        panic!("v is an f64 column");
    };
    let Some(Decoded::I64(n)) = numbers(3) else {
        panic!("n is an i64 column");
    };
    (0..positions.len())
        .map(|i| StoredRow {
            position: positions.get(i).unwrap(),
            values: vec![
                Value::Str(track.to_owned()),
                Value::U64(axis[i]),
                Value::F64(v[i].get()),
                Value::I64(n[i].get()),
            ],
        })
        .collect()
}

#[test]
fn maps_of_inputs_read_whole_after_compaction_removes_the_files() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let mut store = Store::open_or_create(root, Config::default(), &[decl()]).unwrap();
    let mut published: BTreeMap<&str, Vec<StoredRow>> = BTreeMap::new();
    let mut t = 0u64;
    for barrier in 0..N_BARRIERS {
        let position = barrier + 1;
        let mut rows = Vec::new();
        for track in TRACKS {
            for _ in 0..ROWS_PER_TRACK {
                t += 1;
                let values = vec![
                    Value::Str(track.to_owned()),
                    Value::U64(t),
                    // Tenths plus a third: values no grouping of bytes would keep by accident.
                    Value::F64(t as f64 / 10.0 + 1.0 / 3.0),
                    Value::I64(500 - i64::try_from(t * 7919 % 1000).unwrap()),
                ];
                published.entry(track).or_default().push(StoredRow {
                    position,
                    values: values.clone(),
                });
                rows.push(values);
            }
        }
        store.publish("c", position, &rows).unwrap();
        store.seal().unwrap();
    }

    // The maps, one per barrier file, oldest first (names are issued in order).
    let inputs = segment_files(root);
    assert_eq!(inputs.len() as u64, N_BARRIERS);
    let fs = RealFs::open(root).unwrap();
    let held: Vec<SegmentReader<Mapped>> = inputs
        .iter()
        .map(|name| {
            let path = format!("seg/{name}");
            SegmentReader::open(&path, fs.map(&path).unwrap()).unwrap()
        })
        .collect();
    // Part-way: the first half of the files is read before compaction, the rest after.
    let half = held.len() / 2;
    let mut read: BTreeMap<&str, Vec<StoredRow>> = BTreeMap::new();
    for reader in &held[..half] {
        for track in TRACKS {
            read.entry(track)
                .or_default()
                .extend(rows_in(reader, track));
        }
    }

    let mut n_steps = 0;
    let mut n_removed = 0;
    while let Some(step) = store.compact_step().unwrap() {
        n_steps += 1;
        n_removed += step.removed.len();
        let on_disk = segment_files(root);
        for name in &step.removed {
            let file = strata::segment::names::NumberedName::segment(*name).to_string();
            assert!(
                !on_disk.contains(&file),
                "step {n_steps} removed {file}, yet seg/ holds {on_disk:?}"
            );
        }
    }
    assert!(n_steps >= 2, "compaction took {n_steps} steps");
    let on_disk = segment_files(root);
    for input in &inputs {
        assert!(
            !on_disk.contains(input),
            "input {input} is still in seg/: {on_disk:?}"
        );
    }
    // Every barrier file and every output but the live ones was removed.
    assert_eq!(n_removed + on_disk.len(), inputs.len() + n_steps);

    for reader in &held[half..] {
        for track in TRACKS {
            read.entry(track)
                .or_default()
                .extend(rows_in(reader, track));
        }
    }
    for reader in &held {
        reader.verify_all().unwrap();
    }
    for track in TRACKS {
        assert!(
            read[track] == published[track],
            "rows of {track} read through maps of removed files differ from those published"
        );
        assert!(store.query("c", &[track], ..).unwrap() == published[track]);
    }
    drop(held);
    drop(store);
    let store = Store::open_or_create(root, Config::default(), &[decl()]).unwrap();
    assert!(store.boot_report().is_clean(), "{:?}", store.boot_report());
    for track in TRACKS {
        assert!(store.query("c", &[track], ..).unwrap() == published[track]);
    }
}
