//! Space comes back under retention: compaction rewrites the live partitions of a barrier file
//! mostly retired, so the file goes; merges stay within an eighth of the shortest lifetime, so a
//! segment straddling a floor holds little that is retired; and bytes on disk stay near the
//! retained rows' under continuous ingest.

use std::collections::BTreeMap;

use strata::index::TrackKey;
use strata::segment::vfs::SimFs;
use strata::{
    Aggregate, Config, FieldKind, Lifetime, Retention, Row, Store, Stream, StreamDecl, Value,
};

use crate::support::sim;

fn series() -> StreamDecl {
    Stream::new("series")
        .field("run", FieldKind::Str)
        .field("t", FieldKind::U64)
        .field("value", FieldKind::F64)
        .track(["run"])
        .axis("t")
        .ladder(4, 2)
        .build()
        .unwrap()
}

fn row(run: &str, t: u64) -> Row {
    vec![
        Value::Str(run.into()),
        Value::U64(t),
        // Full-precision noise: rows that pack to about 7 bytes a value, so a track's share of
        // its file stays its share of the rows.
        Value::F64((t.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 11) as f64 / 2f64.powi(49) - 8.0),
    ]
}

/// Every read of track `run` the test compares before and after compaction.
fn answers(store: &Store, run: &str) -> String {
    let rows = store.query("series", &[run], ..).unwrap();
    let survey = store.survey("series", &[run], .., 40).unwrap();
    let folds: Vec<_> = Aggregate::all()
        .map(|a| store.fold("series", &[run], 3..=170, a).unwrap())
        .collect();
    format!("{rows:?}\n{survey:?}\n{folds:?}")
}

#[test]
fn a_barrier_file_mostly_retired_is_rewritten_without_the_retired_tracks_and_goes() {
    let fs = SimFs::new();
    let mut store = Store::open_or_create_in(
        sim(&fs),
        Config::default()
            // No merges of similar sizes: only the rewrite moves anything.
            .compact_inputs_min(16),
        &[series()],
    )
    .unwrap();
    // Five barriers, each a file holding a big track `a` and a small track `b`.
    for position in 0..5 {
        let mut rows: Vec<Row> = (0..400).map(|i| row("a", position * 400 + i)).collect();
        rows.push(row("b", position * 40));
        store.publish("series", position, &rows).unwrap();
        store.seal().unwrap();
    }
    let before = answers(&store, "b");
    let files: Vec<_> = store.catalog().live_files().map(|f| f.name).collect();
    assert_eq!(files.len(), 5);
    store.retire("series", &["a"]).unwrap();
    assert_eq!(
        store.catalog().live_files().count(),
        5,
        "b still holds them"
    );
    let steps = store.compact().unwrap();
    // Each of b's segments rewritten alone, and each barrier file removed after it.
    assert_eq!(steps.len(), 5, "{steps:?}");
    for step in &steps {
        assert_eq!(step.inputs.len(), 1);
        assert_eq!(step.removed, step.inputs);
    }
    for name in &files {
        assert!(
            store
                .catalog()
                .file(*name)
                .is_none_or(|_| store.catalog().is_retired(*name))
        );
    }
    assert_eq!(
        answers(&store, "b"),
        before,
        "the rewrite changes no answer of b"
    );
    // Reopened: the same, and nothing more to do.
    drop(store);
    let config = Config::default().compact_inputs_min(16);
    let mut store = Store::open_or_create_in(sim(&fs), config, &[series()]).unwrap();
    assert_eq!(answers(&store, "b"), before);
    assert!(store.compact().unwrap().is_empty());
}

#[test]
fn a_file_whose_retired_tracks_keep_levels_is_not_rewritten() {
    // Rows of `a` trimmed away keep their levels, so the files cannot go: a rewrite of `b`
    // would free nothing.
    let fs = SimFs::new();
    let mut store = Store::open_or_create_in(
        sim(&fs),
        Config::default().compact_inputs_min(16),
        &[series()],
    )
    .unwrap();
    for position in 0..3 {
        let mut rows: Vec<Row> = (0..40).map(|i| row("a", position * 40 + i)).collect();
        rows.push(row("b", position * 40));
        store.publish("series", position, &rows).unwrap();
        store.seal().unwrap();
    }
    store.trim_to("series", 1).unwrap();
    assert!(store.compact().unwrap().is_empty());
}

#[test]
fn under_retention_merges_span_at_most_an_eighth_of_the_lifetime_and_files_stay_bounded() {
    let fs = SimFs::new();
    let lifetime = 800;
    let retention =
        Retention::raw(Lifetime::AxisSpan(lifetime)).levels_from(0, Lifetime::AxisSpan(lifetime));
    let mut store = Store::open_or_create_in(
        sim(&fs),
        Config::default()
            .retention(BTreeMap::from([("series".to_owned(), retention)]))
            .compact_inputs_min(2),
        &[series()],
    )
    .unwrap();
    let key = TrackKey::encode(&["a"]).unwrap();
    let mut files_peak = 0;
    for position in 0..400u64 {
        let rows: Vec<Row> = (0..10).map(|i| row("a", position * 10 + i)).collect();
        store.publish("series", position, &rows).unwrap();
        store.seal().unwrap();
        for _ in 0..4 {
            if store.compact_step().unwrap().is_none() {
                break;
            }
        }
        files_peak = files_peak.max(store.catalog().live_files().count());
        for file in store.catalog().live_files() {
            let [lo, hi] = file.partitions[0].axis.unwrap();
            // A barrier's own span is 9; a merge never reaches past an eighth of the lifetime.
            assert!(hi - lo <= lifetime / 8 + 9, "{file:?} spans {lo}..={hi}");
        }
    }
    // The lifetime holds 800 / 10 = 80 barriers' rows; an eighth of it per merged segment.
    assert!(files_peak <= 24, "{files_peak} files");
    let floors = store.catalog().floors_of("series", &key).unwrap();
    let newest = 3999;
    let raw = floors.raw.unwrap().axis.unwrap();
    // Everything wholly older than the lifetime is gone; at most a segment's span straddles.
    assert!(raw <= newest - lifetime && raw + lifetime / 8 + 10 >= newest - lifetime);
}

/// Every read of the rows retained after sweeping the backlog below (its floor is past 2,000).
fn retained(store: &Store) -> String {
    let rows = store.query("series", &["a"], 2001..).unwrap();
    let survey = store.survey("series", &["a"], 2500..=4000, 40).unwrap();
    let folds: Vec<_> = Aggregate::all()
        .map(|a| store.fold("series", &["a"], 2500..=3900, a).unwrap())
        .collect();
    format!("{rows:?}\n{survey:?}\n{folds:?}")
}

/// #28 item 5, as found: 1,000 barrier files sealed with compaction off, then a retention of
/// half of them set and `compact` run, left 440 live files in the partition (the bound is 16)
/// and a second `compact` took no step: every run is a suffix, so once the newest output
/// spanned the reach (an eighth of the lifetime) no merge could take anything older, and the
/// segments behind it were never counted against the bound. Now the bound wins over the reach
/// when more segments lie behind it than the bound: the partition ends within it, and every
/// answer is what it was after the sweep.
#[test]
fn a_backlog_under_retention_is_compacted_down_to_the_file_bound() {
    let fs = SimFs::new();
    let n_barriers = 400u64;
    {
        let mut store = Store::open_or_create_in(sim(&fs), Config::default(), &[series()]).unwrap();
        // One position a row, as `strata ingest` assigns them; 10 rows a barrier.
        for barrier in 0..n_barriers {
            for i in 0..10 {
                let position = barrier * 10 + i + 1;
                store
                    .publish("series", position, &[row("a", position)])
                    .unwrap();
            }
            store.seal().unwrap();
        }
        assert_eq!(store.catalog().live_files().count(), 400);
    }
    let lifetime = Lifetime::Positions(2000);
    let retention = Retention::raw(lifetime).levels_from(0, lifetime);
    let config = Config::default()
        .compact_step_bytes_max(u64::MAX)
        .retention(BTreeMap::from([("series".to_owned(), retention)]));
    let mut store = Store::open_or_create_in(sim(&fs), config.clone(), &[series()]).unwrap();
    store.sweep().unwrap();
    let n_swept = store.catalog().live_files().count();
    assert!(n_swept > 190, "the sweep left {n_swept} files");
    let before = retained(&store);

    let steps = store.compact().unwrap();
    let n_files = store.catalog().live_files().count();
    assert!(
        n_files <= Config::default().compact_files_max,
        "{n_files} live files after {} steps",
        steps.len()
    );
    assert_eq!(retained(&store), before, "compaction changes no answer");
    assert!(
        store.compact().unwrap().is_empty(),
        "a second compact has nothing to do"
    );
    drop(store);
    let store = Store::open_or_create_in(sim(&fs), config, &[series()]).unwrap();
    assert_eq!(retained(&store), before);
}
