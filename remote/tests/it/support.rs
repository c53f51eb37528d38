//! What the tier's tests share: a stream, rows, buckets, and the comparison of a replica's
//! answers with the writer's.

use std::sync::Arc;

use object_store::ObjectStore;
use object_store::memory::InMemory;
use strata_engine::{Aggregate, Config, FieldKind, Store, Stream, StreamDecl, Value, View};
use strata_remote::Bucket;

/// The stream every tier test writes: two labels, an axis, two measured fields.
pub fn decl() -> StreamDecl {
    Stream::new("probe")
        .field("run", FieldKind::Str)
        .field("probe", FieldKind::Str)
        .field("t", FieldKind::U64)
        .field("v", FieldKind::F64)
        .field("w", FieldKind::F64)
        .track(["run", "probe"])
        .axis("t")
        .build()
        .expect("a valid declaration")
}

/// The tracks the tests write.
pub const TRACKS: [[&str; 2]; 3] = [["r1", "a"], ["r1", "b"], ["r2", "a"]];

/// `n` rows of `track` from axis `t0`, one per axis step of 3, values that differ per row.
pub fn rows(track: [&str; 2], t0: u64, n: u64) -> Vec<Vec<Value>> {
    (t0..t0 + n)
        .map(|i| {
            let t = i * 3;
            let v = ((i * 7919) % 1000) as f64 - 500.0;
            vec![
                Value::Str(track[0].into()),
                Value::Str(track[1].into()),
                Value::U64(t),
                Value::F64(v),
                Value::F64(v * 0.5 + (i % 13) as f64),
            ]
        })
        .collect()
}

/// A small-segment config: compaction has work after a few barriers.
pub fn config() -> Config {
    Config::default()
}

/// A fresh in-memory bucket under prefix `store-1`, and the store beneath it.
pub fn memory_bucket() -> (Arc<dyn ObjectStore>, Bucket) {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let bucket = Bucket::new(Arc::clone(&store), "store-1").expect("a bucket");
    (store, bucket)
}

/// Another handle on the same objects.
pub fn same_bucket(store: &Arc<dyn ObjectStore>) -> Bucket {
    Bucket::new(Arc::clone(store), "store-1").expect("a bucket")
}

/// Copies a store's folder, as `cp -r` would (a backup, a stale copy).
pub fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Asserts that `replica` answers every read of every track as `writer` did when it stood at
/// the replica's watermark: the same rows, and surveys at three budgets and every fold as a
/// store holding exactly those rows answers them. Where the replica is behind the writer, that
/// store is built here from the writer's rows up to the replica's watermark (a survey's cells
/// cover the rows beyond a range's end, so the writer's own answers would differ).
/// Returns the rows compared.
pub fn same_answers(writer: &View, replica: &View) -> usize {
    let mut compared = 0;
    let mut behind = false;
    let mut upto = Vec::new();
    for track in TRACKS {
        let sel = &track[..];
        let mark = replica.watermark("probe", sel).expect("replica watermark");
        let writer_mark = writer.watermark("probe", sel).expect("writer watermark");
        assert!(
            writer_mark >= mark,
            "{track:?}: the replica reports watermark {mark:?}, beyond the writer's {writer_mark:?}"
        );
        behind |= mark != writer_mark;
        let Some(mark) = mark else {
            assert!(
                replica
                    .query("probe", sel, ..)
                    .expect("replica query")
                    .is_empty(),
                "{track:?}: rows without a watermark"
            );
            continue;
        };
        let theirs = writer.query("probe", sel, ..=mark).expect("writer query");
        let ours = replica.query("probe", sel, ..=mark).expect("replica query");
        assert_eq!(ours, theirs, "{track:?}: rows differ at watermark {mark}");
        compared += ours.len();
        upto.push(ours);
    }
    if behind {
        let dir = tempfile::tempdir().expect("a directory");
        let mut reference = Store::create(dir.path(), config(), &[decl()]).expect("a store");
        // Positions rise per stream: publish every track's rows in position order (a stable
        // sort keeps each track's publish order).
        let mut all: Vec<_> = upto.into_iter().flatten().collect();
        all.sort_by_key(|row| row.position);
        for row in &all {
            reference
                .publish("probe", row.position, std::slice::from_ref(&row.values))
                .expect("the replica's rows are valid");
        }
        reference.seal().expect("seal");
        same_cells(&reference, replica);
    } else {
        same_cells(writer, replica);
    }
    compared
}

/// Asserts that two stores at the same watermarks answer every survey and fold alike.
fn same_cells(writer: &View, replica: &View) {
    for track in TRACKS {
        let sel = &track[..];
        let rows = replica.query("probe", sel, ..).expect("replica query");
        let Some(last) = rows.last() else { continue };
        let Value::U64(t_max) = last.values[2] else {
            panic!("axis is u64")
        };
        for range in [0..=t_max, t_max / 3..=t_max / 2, t_max..=t_max] {
            for budget in [8, 40, 500] {
                let a = writer
                    .survey("probe", sel, range.clone(), budget)
                    .expect("writer survey");
                let b = replica
                    .survey("probe", sel, range.clone(), budget)
                    .expect("replica survey");
                assert_eq!(
                    format!("{b:?}"),
                    format!("{a:?}"),
                    "{track:?}: survey {range:?} budget {budget} differs"
                );
            }
            for aggregate in [
                Aggregate::Min,
                Aggregate::Max,
                Aggregate::Mean,
                Aggregate::Sum,
                Aggregate::Count,
                Aggregate::p(50),
                Aggregate::p(99),
            ] {
                let a = writer
                    .fold("probe", sel, range.clone(), aggregate)
                    .expect("writer fold");
                let b = replica
                    .fold("probe", sel, range.clone(), aggregate)
                    .expect("replica fold");
                assert_eq!(
                    format!("{b:?}"),
                    format!("{a:?}"),
                    "{track:?}: fold {aggregate:?} over {range:?} differs"
                );
            }
        }
    }
}
