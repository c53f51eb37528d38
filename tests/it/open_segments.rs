//! The open-segment cap: a store with more segment files than `Config::open_segments_max` still
//! answers every read exactly, keeps at most the cap open, evicts to stay there, lets a read
//! keep an evicted file it holds, and reports a map that fails as exhaustion, not damage.

use std::path::Path;
use std::sync::Arc;

use strata::segment::Resource;
use strata::segment::vfs::{Fault, SimFs, Vfs};
use strata::{
    Aggregate, Config, EngineError, FieldKind, Num, OPEN_SEGMENTS_LIMIT, Row, Store, StoredRow,
    Stream, StreamDecl, Value,
};

const OPEN_SEGMENTS_MAX: usize = 64;
const TRACKS: [&str; 4] = ["a", "b", "c", "d"];

fn capture() -> StreamDecl {
    Stream::new("capture")
        .field("run", FieldKind::Str)
        .field("t", FieldKind::U64)
        .field("value", FieldKind::F64)
        .track(["run"])
        .axis("t")
        .build()
        .unwrap()
}

fn capped(open_segments_max: usize) -> Config {
    Config::default().open_segments_max(open_segments_max)
}

/// The rows of barrier `barrier`, published at position `barrier + 1`: three rows for each track
/// the barrier touches (every track but one, in turn; in every fifth barrier, only one track),
/// with the axis rising across the whole store and whole-number values, so that every sum is
/// exact in any grouping.
fn barrier_rows(barrier: u64, t: &mut u64) -> Vec<Row> {
    let tracks: Vec<&str> = if barrier.is_multiple_of(5) {
        vec![TRACKS[(barrier / 5) as usize % TRACKS.len()]]
    } else {
        TRACKS
            .iter()
            .enumerate()
            .filter(|&(idx, _)| idx as u64 != barrier % TRACKS.len() as u64)
            .map(|(_, track)| *track)
            .collect()
    };
    let mut rows = Vec::new();
    for _ in 0..3 {
        for track in &tracks {
            *t += 1;
            let value = ((*t * 37) % 101) as f64 - 50.0;
            rows.push(vec![
                Value::Str((*track).into()),
                Value::U64(*t),
                Value::F64(value),
            ]);
        }
    }
    rows
}

/// Seals `n_barriers` barriers into `store`, one per call of `barrier_rows`, and answers every
/// row as a read should give it back, in publish order.
fn seal_barriers(store: &mut Store, n_barriers: u64) -> Vec<StoredRow> {
    let mut expected = Vec::new();
    let mut t = 0;
    for barrier in 0..n_barriers {
        let rows = barrier_rows(barrier, &mut t);
        store.publish("capture", barrier + 1, &rows).unwrap();
        store.seal().unwrap();
        expected.extend(rows.into_iter().map(|values| StoredRow {
            position: barrier + 1,
            values,
        }));
    }
    assert_eq!(store.metrics().barriers, n_barriers);
    expected
}

/// The same rows sealed in one barrier per position, but all into one store with the default
/// cap: the reference for surveys, whose cells only the store can lay out.
fn reference_store(dir: &Path, n_barriers: u64) -> Store {
    let mut store = Store::open_or_create(dir, Config::default(), &[capture()]).unwrap();
    let mut t = 0;
    for barrier in 0..n_barriers {
        let rows = barrier_rows(barrier, &mut t);
        store.publish("capture", barrier + 1, &rows).unwrap();
    }
    store.seal().unwrap();
    assert_eq!(store.metrics().barriers, 1);
    store
}

fn track_of(row: &StoredRow) -> &str {
    match &row.values[0] {
        Value::Str(track) => track,
        other => panic!("track is {other:?}"),
    }
}

fn t_of(row: &StoredRow) -> u64 {
    match row.values[1] {
        Value::U64(t) => t,
        ref other => panic!("t is {other:?}"),
    }
}

fn value_of(row: &StoredRow) -> f64 {
    match row.values[2] {
        Value::F64(value) => value,
        ref other => panic!("value is {other:?}"),
    }
}

/// Every statistic `fold` answers, computed here from the rows themselves.
fn expected_folds(rows: &[&StoredRow]) -> Vec<(Aggregate, Option<Num>)> {
    let mut values: Vec<f64> = rows.iter().map(|r| value_of(r)).collect();
    values.sort_by(f64::total_cmp);
    let n = values.len();
    let sum: f64 = values.iter().sum();
    let nearest_rank = |p: usize| values[(p * n).div_ceil(100).max(1) - 1];
    vec![
        (Aggregate::Count, Some(Num::U64(n as u64))),
        (Aggregate::Min, Some(Num::F64(values[0]))),
        (Aggregate::Max, Some(Num::F64(values[n - 1]))),
        (Aggregate::Sum, Some(Num::F64(sum))),
        (Aggregate::Mean, Some(Num::F64(sum / n as f64))),
        (
            Aggregate::parse("p0").unwrap(),
            Some(Num::F64(nearest_rank(0))),
        ),
        (
            Aggregate::parse("p50").unwrap(),
            Some(Num::F64(nearest_rank(50))),
        ),
        (
            Aggregate::parse("p99").unwrap(),
            Some(Num::F64(nearest_rank(99))),
        ),
    ]
}

/// Reads everything back from `store` and compares each answer whole: every row (all of them,
/// per track, and a position range), folds computed from the rows, and surveys equal to the
/// same rows sealed in one barrier.
fn assert_reads_back_exactly(store: &Store, reference: &Store, expected: &[StoredRow]) {
    assert_eq!(store.query("capture", &[], ..).unwrap(), expected);
    let last_position = expected.last().unwrap().position;
    let (lo, hi) = (last_position / 3, 2 * last_position / 3);
    let middle: Vec<StoredRow> = expected
        .iter()
        .filter(|r| (lo..=hi).contains(&r.position))
        .cloned()
        .collect();
    assert!(!middle.is_empty());
    assert_eq!(store.query("capture", &[], lo..=hi).unwrap(), middle);

    for track in TRACKS {
        let rows: Vec<&StoredRow> = expected.iter().filter(|r| track_of(r) == track).collect();
        let owned: Vec<StoredRow> = rows.iter().map(|r| (*r).clone()).collect();
        assert_eq!(
            store.query("capture", &[track], ..).unwrap(),
            owned,
            "{track}"
        );
        for (aggregate, value) in expected_folds(&rows) {
            let folded = store.fold("capture", &[track], .., aggregate).unwrap();
            assert_eq!(folded.len(), 1);
            assert_eq!(folded[0].field, "value");
            assert_eq!(folded[0].value, value, "{track} {aggregate}");
        }
    }
    let all: Vec<&StoredRow> = expected.iter().collect();
    for (aggregate, value) in expected_folds(&all) {
        let folded = store.fold("capture", &[], .., aggregate).unwrap();
        assert_eq!(folded[0].value, value, "{aggregate}");
    }

    let t_max = t_of(expected.last().unwrap());
    for (selection, axis, budget) in [
        (&[][..], (0, u64::MAX), 4_000),
        (&[][..], (0, u64::MAX), 40),
        (&["b"][..], (t_max / 4, t_max / 2), 400),
        (&["d"][..], (0, u64::MAX), 8),
    ] {
        let survey = store
            .survey("capture", selection, axis.0..=axis.1, budget)
            .unwrap();
        let wanted = reference
            .survey("capture", selection, axis.0..=axis.1, budget)
            .unwrap();
        assert_eq!(survey, wanted, "{selection:?} {axis:?} {budget}");
        if axis == (0, u64::MAX) {
            // Whole cells over the whole range: every selected row is in exactly one bucket.
            let n_rows = expected
                .iter()
                .filter(|r| selection.is_empty() || selection[0] == track_of(r))
                .count() as u64;
            let counted: u64 = survey.fields[0].buckets.iter().map(|b| b.count).sum();
            assert_eq!(counted, n_rows, "{selection:?} {budget}");
        }
    }
}

/// Asserts the cap was reached and held: as many files open as the cap, never more, files
/// evicted to stay there, and no map left alive beyond the cache's once reads are done.
fn assert_cap_reached(store: &Store, open_segments_max: usize) {
    let metrics = store.metrics();
    assert_eq!(
        metrics.segments_open, open_segments_max as u64,
        "{metrics:?}"
    );
    assert!(metrics.segment_evictions > 0, "{metrics:?}");
    assert_eq!(
        metrics.segments_mapped, metrics.segments_open,
        "{metrics:?}"
    );
    // A read holds at most one file per partition it merges beyond the cache's.
    assert!(
        metrics.segments_mapped_peak <= (open_segments_max + TRACKS.len()) as u64,
        "{metrics:?}"
    );
}

#[test]
fn more_barriers_than_the_open_segment_cap_still_read_back_exactly() {
    let n_barriers = 4 * OPEN_SEGMENTS_MAX as u64;
    let dir = tempfile::tempdir().unwrap();
    let reference = reference_store(&dir.path().join("reference"), n_barriers);
    let mut store = Store::open_or_create(
        dir.path().join("store"),
        capped(OPEN_SEGMENTS_MAX),
        &[capture()],
    )
    .unwrap();
    let expected = seal_barriers(&mut store, n_barriers);
    assert_eq!(store.metrics().segments_open, 0, "a seal opens no reader");
    assert_reads_back_exactly(&store, &reference, &expected);
    assert_cap_reached(&store, OPEN_SEGMENTS_MAX);
    let evictions = store.metrics().segment_evictions;
    assert!(evictions >= n_barriers - OPEN_SEGMENTS_MAX as u64);

    // Reopened, the store starts with nothing open and reaches the cap again.
    drop(store);
    let mut store = Store::open(dir.path().join("store"), capped(OPEN_SEGMENTS_MAX), &[]).unwrap();
    assert_eq!(store.metrics().segments_open, 0);
    assert_eq!(store.metrics().segment_evictions, 0);
    assert_reads_back_exactly(&store, &reference, &expected);
    assert_cap_reached(&store, OPEN_SEGMENTS_MAX);

    // Compaction reads its inputs through the same cache and lets go of those it removes.
    let steps = store.compact().unwrap();
    assert!(!steps.is_empty());
    let metrics = store.metrics();
    assert!(
        metrics.segments_open <= OPEN_SEGMENTS_MAX as u64,
        "{metrics:?}"
    );
    assert_eq!(
        metrics.segments_mapped, metrics.segments_open,
        "{metrics:?}"
    );
    assert_reads_back_exactly(&store, &reference, &expected);
    assert!(store.metrics().segments_open <= OPEN_SEGMENTS_MAX as u64);
}

#[test]
fn a_read_keeps_the_segments_it_holds_while_they_are_evicted() {
    // With a cap of one, every file a cursor reaches evicts the one another cursor is reading:
    // the query holds it past eviction and reads it whole.
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open_or_create(dir.path(), capped(1), &[capture()]).unwrap();
    let expected = seal_barriers(&mut store, 40);
    assert_eq!(store.query("capture", &[], ..).unwrap(), expected);
    let metrics = store.metrics();
    assert_eq!(metrics.segments_open, 1, "{metrics:?}");
    assert!(metrics.segment_evictions >= 39, "{metrics:?}");
    assert!(
        metrics.segments_mapped_peak > 1,
        "the read held evicted files: {metrics:?}"
    );
    assert!(
        metrics.segments_mapped_peak <= 1 + TRACKS.len() as u64,
        "one file per partition at a time: {metrics:?}"
    );
    assert_eq!(
        metrics.segments_mapped, 1,
        "evicted maps are let go: {metrics:?}"
    );
}

#[test]
fn a_map_that_fails_after_eviction_is_exhaustion_not_damage() {
    let fs = SimFs::new();
    let vfs: Arc<dyn Vfs> = Arc::new(fs.clone());
    let open_segments_max = 8;
    let mut store =
        Store::open_or_create_in(Arc::clone(&vfs), capped(open_segments_max), &[capture()])
            .unwrap();
    let expected = seal_barriers(&mut store, 40);
    assert_eq!(store.query("capture", &[], ..).unwrap(), expected);
    assert_eq!(store.metrics().segments_open, open_segments_max as u64);
    let evictions = store.metrics().segment_evictions;
    assert!(evictions > 0);

    // The first files were evicted, so reading them again must map them again.
    for (fault, resource) in [
        (Fault::Enomem, Resource::Memory),
        (Fault::Emfile, Resource::FileDescriptors),
    ] {
        fs.fail_maps(Some(fault));
        let error = store.query("capture", &[], ..).unwrap_err();
        assert!(
            matches!(
                &error,
                EngineError::Exhausted { resource: r, barrier: None, .. } if *r == resource
            ),
            "{fault:?}: {error:?}"
        );
        let error = store
            .fold("capture", &[], .., Aggregate::parse("p50").unwrap())
            .unwrap_err();
        assert_eq!(error.exhausted(), Some(resource), "{error:?}");
        assert!(!error.to_string().contains("unreadable"), "{error}");
        // A failed map opens nothing and evicts nothing.
        assert_eq!(store.metrics().segment_evictions, evictions);
        assert_eq!(store.metrics().segments_open, open_segments_max as u64);
    }
    // Nothing is damaged: once maps work again, everything reads back.
    fs.fail_maps(None);
    assert_eq!(store.query("capture", &[], ..).unwrap(), expected);
    assert_eq!(store.metrics().segments_open, open_segments_max as u64);
}

#[test]
fn a_cap_of_zero_or_beyond_the_limit_is_refused_at_open() {
    for open_segments_max in [0, OPEN_SEGMENTS_LIMIT + 1, usize::MAX] {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("store");
        let error =
            Store::open_or_create(&folder, capped(open_segments_max), &[capture()]).unwrap_err();
        assert!(
            matches!(
                &error,
                EngineError::Config {
                    setting: "open_segments_max",
                    ..
                }
            ),
            "{error:?}"
        );
        let message = error.to_string();
        assert!(message.contains("open_segments_max"), "{message}");
        assert!(
            message.contains(&open_segments_max.to_string()),
            "{message}"
        );
        assert!(!folder.exists(), "a refused config creates nothing");
    }
    // The limit itself, and a cap of one, open.
    for open_segments_max in [1, OPEN_SEGMENTS_LIMIT] {
        let dir = tempfile::tempdir().unwrap();
        drop(Store::open_or_create(dir.path(), capped(open_segments_max), &[capture()]).unwrap());
    }
}
