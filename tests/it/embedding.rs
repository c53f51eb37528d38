//! strata embedded as a host would (docs/embedding.md), through the public API only: a
//! `Served` store fed by columns from one task while another reads it with `&str` labels and
//! `..`-style ranges, a watermark asked without a barrier, refusals of a bad column batch the
//! same as the store's own, then the store reopened for reads. Tracks are `&str` labels
//! throughout; no `Value` is built to publish, name a track or check a row.

use std::time::Duration;

use strata::{
    Aggregate, Column, Config, EngineError, FieldKind, Num, ServeConfig, Served, Store, Stream,
    StreamDecl, Values,
};

const BATCHES: u64 = 200;
const BATCH_ROWS: u64 = 1_000;

fn decl() -> StreamDecl {
    Stream::new("capture")
        .field("probe", FieldKind::Str)
        .field("t", FieldKind::U64)
        .field("v", FieldKind::F64)
        .track(["probe"])
        .axis("t")
        .build()
        .unwrap()
}

/// Row `i`'s value: exact in binary (a multiple of 1/4 below 2^20), so any order of summing
/// gives the same mean.
#[allow(clippy::cast_precision_loss)]
fn value(i: u64) -> f64 {
    ((i * 7919) % 1024) as f64 * 0.25
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap()
}

/// `store` served with barriers only when asked for (no cadence, no size trigger), so what is
/// staged stays staged until a seal or the stop.
fn spawn_without_triggers(store: Store) -> Served {
    Served::spawn(
        store,
        ServeConfig::default()
            .seal_interval(None)
            .seal_at_staged_share(None),
    )
}

/// One snapshot of track `p1`: its watermark, the rows durable there, and what its survey
/// counts. Before the first barrier `p1` is no sealed track: refused, never an empty answer
/// that would read as "no rows".
fn read_p1(snapshot: &strata::Snapshot) -> Result<(Option<u64>, u64, u64), EngineError> {
    let at = snapshot.watermark("capture", &["p1"])?;
    let rows = match snapshot.query("capture", &["p1"], ..) {
        Err(EngineError::UnknownTrack { .. }) if at.is_none() => return Ok((at, 0, 0)),
        rows => rows?.len() as u64,
    };
    let survey = snapshot.survey("capture", &["p1"], .., 400)?;
    let counted: u64 = survey.fields[0].buckets.iter().map(|b| b.count).sum();
    Ok((at, rows, counted))
}

#[test]
fn a_served_store_takes_columns_from_one_task_while_another_reads_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::create(dir.path(), Config::default(), &[decl()]).unwrap();
    let served = Served::spawn(
        store,
        ServeConfig::default().seal_interval(Some(Duration::from_millis(5))),
    );
    runtime().block_on(async {
        let publisher = served.clone();
        let publishing = async move {
            for batch in 0..BATCHES {
                let start = batch * BATCH_ROWS;
                let t: Vec<u64> = (start..start + BATCH_ROWS).collect();
                let v: Vec<f64> = t.iter().map(|&i| value(i)).collect();
                let probe = ["p1"];
                publisher
                    .publish_columns("capture", batch + 1, &probe, vec![t.into(), v.into()])
                    .await
                    .unwrap();
            }
        };
        let reader = served.clone();
        let reading = async move {
            let mut last_watermark = None;
            let mut reads = 0;
            loop {
                let watermark = reader.watermark("capture").await.unwrap();
                assert!(
                    watermark >= last_watermark,
                    "{watermark:?} after {last_watermark:?}"
                );
                last_watermark = watermark;
                // One snapshot: the rows durable at its watermark, and its survey of them.
                let (at, rows, counted) = reader.read(read_p1).await.unwrap().unwrap();
                assert_eq!(
                    rows,
                    at.unwrap_or(0) * BATCH_ROWS,
                    "rows at watermark {at:?}"
                );
                assert_eq!(counted, rows, "the survey counts every row beneath it");
                reads += 1;
                if at == Some(BATCHES) {
                    break reads;
                }
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        };
        let ((), reads) = tokio::join!(publishing, reading);
        assert!(
            reads >= 2,
            "the reader read while the publisher ran ({reads} reads)"
        );

        // The handle's own reads: labels as `&str`, ranges as Rust writes them.
        let n = BATCHES * BATCH_ROWS;
        let rows = served.query("capture", &["p1"], 10..=20).await.unwrap();
        let positions: Vec<u64> = rows.iter().map(|r| r.position).collect();
        assert_eq!(positions.len() as u64, 11 * BATCH_ROWS);
        assert!(positions.iter().all(|p| (10..=20).contains(p)));
        let survey = served.survey("capture", &[], .., 1_000).await.unwrap();
        assert!(
            survey.fields[0].buckets.len() <= 250,
            "budget 1,000 is 250 buckets"
        );
        let count: u64 = survey.fields[0].buckets.iter().map(|b| b.count).sum();
        assert_eq!(count, n);
        let max = served
            .fold("capture", &["p1"], ..1_000, Aggregate::Max)
            .await
            .unwrap();
        let want = (0..1_000).map(value).fold(f64::MIN, f64::max);
        assert_eq!(max[0].value, Some(Num::F64(want)));
        let mean = served
            .fold("capture", &["p1"], .., Aggregate::Mean)
            .await
            .unwrap();
        #[allow(clippy::cast_precision_loss)]
        let want = (0..n).map(value).sum::<f64>() / n as f64;
        assert_eq!(mean[0].value, Some(Num::F64(want)));
        served.stop().await.unwrap();
    });

    // Reopened for reads: every row, as generated.
    let reader = Store::open_read_only(dir.path(), Config::default(), &[]).unwrap();
    let rows = reader.query("capture", &["p1"], ..).unwrap();
    assert_eq!(rows.len() as u64, BATCHES * BATCH_ROWS);
    for (i, row) in (0u64..).zip(&rows) {
        assert_eq!(row.position, i / BATCH_ROWS + 1);
        // As a host prints them (an f64's shortest round-trip form: equal text, equal bits).
        let printed: Vec<String> = row.values.iter().map(ToString::to_string).collect();
        assert_eq!(
            printed,
            ["p1".to_owned(), i.to_string(), value(i).to_string()]
        );
    }
}

/// A bad batch through `Served::publish_columns` gets the store's own error for it, stages
/// nothing, and the handle goes on serving.
#[test]
fn served_refuses_a_column_batch_as_the_store_does() {
    let bad: Vec<(&str, Vec<Column>)> = vec![
        (
            "a missing axis",
            vec![
                vec![Some(1u64), None, Some(3)].into(),
                vec![0.5, 0.7, 1.0].into(),
            ],
        ),
        (
            "a short column",
            vec![vec![1u64, 2, 3].into(), vec![0.5, 1.0].into()],
        ),
        (
            "a column of the wrong kind",
            vec![vec![1u64, 2].into(), vec![1u64, 2].into()],
        ),
        (
            "an axis going back",
            vec![vec![5u64, 4].into(), vec![0.5, 1.0].into()],
        ),
        ("a missing column", vec![vec![1u64, 2].into()]),
    ];
    let probe = ["p1"];
    for (what, columns) in bad {
        let mut store = Store::create_in(
            std::sync::Arc::new(strata::segment::vfs::SimFs::new()),
            Config::default(),
            &[decl()],
        )
        .unwrap();
        let by_store = Column::borrowed(&columns, |values: &[Values<'_>]| {
            store.publish_columns("capture", 1, &probe, values)
        })
        .expect_err(what);
        let served = Served::spawn(store, ServeConfig::default().seal_interval(None));
        runtime().block_on(async {
            let by_served = served
                .publish_columns("capture", 2, &probe, columns)
                .await
                .expect_err(what);
            assert_eq!(
                by_served.to_string().replace("position 2", "position 1"),
                by_store.to_string(),
                "{what}"
            );
            // Nothing of it staged: a good batch after it is all a seal makes durable.
            let good = vec![vec![10u64, 11].into(), vec![1.5, 2.5].into()];
            served
                .publish_columns("capture", 3, &probe, good)
                .await
                .unwrap();
            assert_eq!(served.watermark("capture").await.unwrap(), None);
            served.stop().await.unwrap();
        });
    }
}

/// Asking the watermark closes no barrier: rows staged stay staged.
#[test]
fn the_watermark_costs_no_barrier() {
    let store = Store::create_in(
        std::sync::Arc::new(strata::segment::vfs::SimFs::new()),
        Config::default(),
        &[decl()],
    )
    .unwrap();
    let served = spawn_without_triggers(store);
    runtime().block_on(async {
        let probe = ["p1"];
        let columns = vec![vec![1u64, 2].into(), vec![0.5, 1.0].into()];
        served
            .publish_columns("capture", 7, &probe, columns)
            .await
            .unwrap();
        for _ in 0..3 {
            assert_eq!(served.watermark("capture").await.unwrap(), None);
        }
        assert_eq!(served.metrics().await.unwrap().barriers, 0);
        assert!(served.watermark("nope").await.is_err(), "an unknown stream");
        served.stop().await.unwrap();
    });
}

/// A track label is a value as a selection names it: for a `u64` track field, the decimal
/// strata writes. Anything else is refused naming the field, and nothing is staged.
#[test]
fn a_track_label_that_is_not_the_fields_kind_is_refused_naming_the_field() {
    let decl = Stream::new("s")
        .field("lane", FieldKind::U64)
        .field("t", FieldKind::U64)
        .field("v", FieldKind::F64)
        .track(["lane"])
        .axis("t")
        .build()
        .unwrap();
    let mut store = Store::create_in(
        std::sync::Arc::new(strata::segment::vfs::SimFs::new()),
        Config::default(),
        &[decl],
    )
    .unwrap();
    let columns = [Values::U64(&[1, 2]), Values::F64(&[0.5, 1.5])];
    for label in ["007", "x", "-1", "", "18446744073709551616"] {
        let error = store
            .publish_columns("s", 1, &[label], &columns)
            .expect_err(label);
        let text = error.to_string();
        assert!(
            text.contains(&format!("{label:?}"))
                && text.contains("\"lane\"")
                && text.contains("u64"),
            "{label:?}: {text}"
        );
        assert_eq!(store.staged_bytes(), 0, "{label:?}");
    }
    store.publish_columns("s", 1, &["7"], &columns).unwrap();
    store.seal().unwrap();
    let rows = store.query("s", &["7"], ..).unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].values[0].to_string(), "7");
}

/// `Served` answers a column batch once it is checked and has room, and copies it into staging
/// after: the room is taken at that answer, so a batch past `staged_bytes_max` is refused while
/// the one before it may still be copying, and what the last barrier makes durable is exactly
/// the batches answered `Ok`, in order — by one position (`publish_columns`) or a position a
/// row (`publish_columns_at`) alike.
#[test]
fn served_column_batches_answered_before_their_copy_take_their_room_at_the_answer() {
    let probe = ["p1"];
    let batch = |n: u64| -> Vec<Column> {
        let t: Vec<u64> = (n * 100..n * 100 + 100).collect();
        let v: Vec<f64> = t.iter().map(|&i| value(i)).collect();
        vec![t.into(), v.into()]
    };
    // What one batch weighs in staging, asked of a store of its own.
    let mut weigh = Store::create_in(
        std::sync::Arc::new(strata::segment::vfs::SimFs::new()),
        Config::default(),
        &[decl()],
    )
    .unwrap();
    Column::borrowed(&batch(0), |values: &[Values<'_>]| {
        weigh.publish_columns("capture", 1, &probe, values)
    })
    .unwrap();
    let weight = weigh.staged_bytes();
    assert!(weight > 0);

    let dir = tempfile::tempdir().unwrap();
    let config = Config::default().staged_bytes_max(3 * weight + weight / 2);
    let store = Store::create(dir.path(), config.clone(), &[decl()]).unwrap();
    let served = spawn_without_triggers(store);
    runtime().block_on(async {
        for n in 0..2 {
            served
                .publish_columns("capture", n + 1, &probe, batch(n))
                .await
                .unwrap();
        }
        served
            .publish_columns_at("capture", vec![3; 100], &probe, batch(2))
            .await
            .unwrap();
        // Three taken: the fourth and fifth have no room, whichever call brings them.
        let full = served
            .publish_columns("capture", 4, &probe, batch(3))
            .await
            .unwrap_err();
        assert!(
            matches!(full, EngineError::StagingFull { staged_bytes, batch_bytes, .. }
                if staged_bytes == 3 * weight && batch_bytes == weight),
            "{full}"
        );
        let full = served
            .publish_columns_at("capture", vec![5; 100], &probe, batch(4))
            .await
            .unwrap_err();
        assert!(matches!(full, EngineError::StagingFull { .. }), "{full}");
        served.stop().await.unwrap();
    });
    let store = Store::open(dir.path(), config, &[decl()]).unwrap();
    let rows = store.query("capture", &probe, ..).unwrap();
    assert_eq!(rows.len(), 300);
    for (i, row) in (0u64..).zip(&rows) {
        assert_eq!(row.position, i / 100 + 1, "row {i}");
        let printed: Vec<String> = row.values.iter().map(ToString::to_string).collect();
        assert_eq!(
            printed,
            ["p1".to_owned(), i.to_string(), value(i).to_string()]
        );
    }
}
