//! `Served`'s own unit tests: the supervisor's loop driven by hand.

use std::sync::Arc;

use strata_segment::vfs::SimFs;

use super::*;
use crate::config::Config;
use crate::series::Series;

/// A simulated disk whose directory syncs wait while `held`: a barrier stays in flight
/// (it syncs `seg/` after its rename) until the test lets it go.
#[derive(Debug, Clone)]
struct Held {
    fs: SimFs,
    held: Arc<(std::sync::Mutex<bool>, std::sync::Condvar)>,
}

impl Held {
    fn hold(&self, held: bool) {
        *self.held.0.lock().unwrap() = held;
        self.held.1.notify_all();
    }
}

impl strata_segment::vfs::Vfs for Held {
    fn create_dir(&self, dir: &str) -> std::io::Result<()> {
        self.fs.create_dir(dir)
    }
    fn create(&self, path: &str) -> std::io::Result<Box<dyn strata_segment::vfs::VfsFile>> {
        self.fs.create(path)
    }
    fn open_append(&self, path: &str) -> std::io::Result<Box<dyn strata_segment::vfs::VfsFile>> {
        self.fs.open_append(path)
    }
    fn map(&self, path: &str) -> std::io::Result<strata_segment::vfs::Mapped> {
        self.fs.map(path)
    }
    fn len(&self, path: &str) -> std::io::Result<u64> {
        self.fs.len(path)
    }
    fn rename_noreplace(&self, from: &str, to: &str) -> std::io::Result<()> {
        self.fs.rename_noreplace(from, to)
    }
    fn rename_mode(&self) -> strata_segment::vfs::RenameMode {
        self.fs.rename_mode()
    }
    fn location(&self) -> String {
        self.fs.location()
    }
    fn remove(&self, path: &str) -> std::io::Result<()> {
        self.fs.remove(path)
    }
    fn sync_dir(&self, dir: &str) -> std::io::Result<()> {
        let (held, released) = &*self.held;
        let _held = released
            .wait_while(held.lock().unwrap(), |held| *held)
            .unwrap();
        self.fs.sync_dir(dir)
    }
    fn list(&self, dir: &str) -> std::io::Result<Vec<strata_segment::vfs::DirEntry>> {
        self.fs.list(dir)
    }
    fn exists(&self, path: &str) -> std::io::Result<bool> {
        self.fs.exists(path)
    }
    fn lock(&self) -> std::io::Result<Box<dyn strata_segment::vfs::VfsLock>> {
        self.fs.lock()
    }
    fn lock_shared(&self) -> std::io::Result<Option<Box<dyn strata_segment::vfs::VfsLock>>> {
        self.fs.lock_shared()
    }
}

/// Metrics read while a barrier is in flight and reads run beside it agree with
/// themselves: the reads are counted with the barrier, when it lands (before, a host saw
/// `reads_during_barriers: 3` beside `barriers: 0`); after it, every counter says what was
/// done.
#[test]
fn metrics_counted_beside_a_barrier_in_flight_never_contradict_each_other() {
    let held = Held {
        fs: SimFs::new(),
        held: Arc::new((std::sync::Mutex::new(false), std::sync::Condvar::new())),
    };
    let decl = crate::Stream::new("s")
        .field("t", strata_index::FieldKind::U64)
        .field("v", strata_index::FieldKind::F64)
        .axis("t")
        .build()
        .unwrap();
    let store = Store::create_in(Arc::new(held.clone()), Config::default(), &[decl]).unwrap();
    let served = Served::spawn(
        store,
        ServeConfig::default()
            .seal_interval(None)
            .seal_at_staged_share(None)
            .compact_steps_per_tick(0),
    );
    runtime().block_on(async {
        let rows: Vec<Row> = (0..100).map(row).collect();
        served.publish("s", 1, rows).await.unwrap();
        held.hold(true);
        let mut sealer = served.clone();
        let sealing = tokio::spawn(async move { sealer.seal("s", &[]).await });
        // The barrier reaches its held sync; reads go on beside it.
        while held.fs.paths().iter().all(|p| !p.starts_with("seg/")) {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        for _ in 0..3 {
            assert!(served.query("s", &[], ..).await.unwrap().is_empty());
        }
        let during = served.metrics().await.unwrap();
        assert_eq!(during.barriers, 0, "{during:?}");
        assert_eq!(during.reads_during_barriers, 0, "{during:?}");
        assert_eq!(during.rows_sealed, 0, "{during:?}");
        held.hold(false);
        assert_eq!(sealing.await.unwrap(), Ok(Some(1)));
        let after = served.metrics().await.unwrap();
        assert_eq!(after.barriers, 1, "{after:?}");
        assert_eq!(after.reads_during_barriers, 3, "{after:?}");
        assert_eq!(after.rows_sealed, 100, "{after:?}");
        assert_eq!(after.size_barriers, 0, "{after:?}");
        served.stop().await.unwrap();
    });
}

/// Dropping every handle without a `stop` closes a last barrier and the store, with a
/// ticker or without: the rows fed are durable, and the store opens again. Before, the
/// supervisor never noticed (it waited in `select!` for an `else` that the ticker's branch
/// kept from ever running) and held the lock for the life of the process.
#[test]
fn dropping_every_handle_seals_and_closes_the_store() {
    for seal_interval in [None, Some(Duration::from_millis(5))] {
        let fs = SimFs::new();
        let decl = crate::Stream::new("s")
            .field("t", strata_index::FieldKind::U64)
            .field("v", strata_index::FieldKind::F64)
            .axis("t")
            .build()
            .unwrap();
        let store = Store::create_in(Arc::new(fs.clone()), Config::default(), &[decl]).unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        runtime.block_on(async {
            let served = Served::spawn(
                store,
                ServeConfig {
                    seal_interval,
                    ..ServeConfig::default()
                },
            );
            let row = vec![crate::Value::U64(3), crate::Value::F64(0.5)];
            served.publish("s", 1, vec![row]).await.unwrap();
            let other = served.clone();
            drop(served);
            drop(other);
        });
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let store = loop {
            match Store::open_in(Arc::new(fs.clone()), Config::default(), &[]) {
                Ok(store) => break store,
                Err(error) if error.is_locked() && std::time::Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(error) => panic!("{seal_interval:?}: {error}"),
            }
        };
        assert_eq!(
            store.watermark("s", &[]).unwrap(),
            Some(1),
            "{seal_interval:?}"
        );
    }
}

/// Requests queued behind a stop are dropped with the supervisor: their callers hear
/// `Unserved` (a dropped reply, or a failed send once the lane is closed), never a hang.
#[test]
fn requests_queued_behind_a_stop_answer_unserved() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    runtime.block_on(async {
        let store = Store::create_in(Arc::new(SimFs::new()), Config::default(), &[]).unwrap();
        let served = Served::spawn(
            store,
            ServeConfig {
                seal_interval: None,
                lane_max: 64,
                compact_steps_per_tick: 0,
                seal_at_staged_share: None,
                readers_max: 4,
                writer_nice: 10,
            },
        );
        let (stop_reply, stopped) = oneshot::channel();
        // The stop goes first into the lane; the reads queue behind it, mid-request.
        served
            .commands
            .send(Command::Stop(stop_reply))
            .await
            .unwrap();
        let mut answers = Vec::new();
        for _ in 0..16 {
            let (reply, answer) = oneshot::channel();
            let span = span("s", &[], Bound::Unbounded, Bound::Unbounded);
            if served
                .commands
                .send(Command::Rows(span, reply))
                .await
                .is_ok()
            {
                answers.push(answer);
            }
        }
        stopped.await.unwrap().unwrap();
        for answer in answers {
            let heard = tokio::time::timeout(Duration::from_secs(5), answer)
                .await
                .expect("no hang");
            assert!(heard.is_err(), "a request behind the stop was answered");
        }
        let mut handle = served.clone();
        let after = tokio::time::timeout(
            Duration::from_secs(5),
            handle.rows("s", &[], Bound::Unbounded, Bound::Unbounded),
        )
        .await
        .expect("no hang");
        assert_eq!(after, Err(BeneathWindow::Unserved));
    });
}

/// A zero seal interval panicked the supervisor (`interval_at` needs a period) and every
/// handle call then answered that it had stopped; it counts as the least interval, so the
/// store is served while its ticker fires. Likewise an interval past the clock's range
/// and a lane of 0 or of more than a semaphore counts.
#[test]
fn extreme_serve_settings_do_not_kill_the_supervisor() {
    for (seal_interval, lane_max) in [(Some(Duration::ZERO), 0), (Some(Duration::MAX), usize::MAX)]
    {
        let decl = crate::Stream::new("s")
            .field("t", strata_index::FieldKind::U64)
            .field("v", strata_index::FieldKind::F64)
            .axis("t")
            .build()
            .unwrap();
        let store = Store::create_in(Arc::new(SimFs::new()), Config::default(), &[decl]).unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        runtime.block_on(async {
            let mut served = Served::spawn(
                store,
                ServeConfig::default()
                    .seal_interval(seal_interval)
                    .lane_max(lane_max),
            );
            let row = vec![crate::Value::U64(3), crate::Value::F64(0.5)];
            served.publish("s", 1, vec![row]).await.unwrap();
            // Let a ticker of the least interval fire, several times, with rows staged.
            tokio::time::sleep(Duration::from_millis(20)).await;
            assert_eq!(served.seal("s", &[]).await, Ok(Some(1)));
            let rows = served
                .rows("s", &[], Bound::Unbounded, Bound::Unbounded)
                .await
                .unwrap();
            assert_eq!(rows.len(), 1, "{seal_interval:?}");
            served.stop().await.unwrap();
        });
    }
}

/// Rows of 32 staged bytes each (`stage::row_bytes`: 16, then 8 per value), 1,024 a batch.
const BATCH_ROWS: u64 = 1024;
const ROW_BYTES: u64 = 32;
const STAGED_MAX: usize = 1 << 20;

fn row(t: u64) -> crate::Row {
    #[allow(clippy::cast_precision_loss)]
    let v = t as f64 * 0.5;
    vec![crate::Value::U64(t), crate::Value::F64(v)]
}

/// Publishes `bytes` of rows through a served store whose staging bound is 1 MiB, with no
/// seal cadence and the size trigger at `share`; stops at the first refusal. Answers the
/// handle (still serving), the batches published and the first refusal, if any.
async fn publish_past_the_bound(
    share: Option<f64>,
    bytes: u64,
) -> (Served, u64, Option<EngineError>) {
    let decl = crate::Stream::new("s")
        .field("t", strata_index::FieldKind::U64)
        .field("v", strata_index::FieldKind::F64)
        .axis("t")
        .build()
        .unwrap();
    let config = Config::default().staged_bytes_max(STAGED_MAX);
    let store = Store::create_in(Arc::new(SimFs::new()), config, &[decl]).unwrap();
    let served = Served::spawn(
        store,
        ServeConfig::default()
            .seal_interval(None)
            .seal_at_staged_share(share),
    );
    let batches = bytes / (BATCH_ROWS * ROW_BYTES);
    for batch in 0..batches {
        let rows = (batch * BATCH_ROWS..(batch + 1) * BATCH_ROWS)
            .map(row)
            .collect();
        if let Err(error) = served.publish("s", batch + 1, rows).await {
            return (served, batch, Some(error));
        }
    }
    (served, batches, None)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
}

/// With no cadence, publishing 20 times the staging bound is never refused: the size
/// trigger (default, half the bound) closes a barrier each time staging reaches half (or
/// when the step in flight lands), at least (published / bound) - 2 of them by the time
/// metrics answer, and every row reads back exactly as published.
#[test]
fn the_size_trigger_keeps_a_fast_host_from_staging_full() {
    runtime().block_on(async {
        let bytes = 20 * STAGED_MAX as u64;
        let share = ServeConfig::default().seal_at_staged_share;
        assert_eq!(share, Some(0.5), "the trigger is on by default");
        let (mut served, batches, refused) = publish_past_the_bound(share, bytes).await;
        assert!(refused.is_none(), "refused after {batches}: {refused:?}");
        let metrics = served.metrics().await.unwrap();
        // A barrier seals at most the bound (a trigger that fires while a compaction step
        // is in flight waits for it, and seals what staged meanwhile), one may still be in
        // flight when metrics answer, and less than a trigger's worth may remain staged.
        let landed_at_least = bytes / STAGED_MAX as u64 - 2;
        assert!(
            metrics.size_barriers >= landed_at_least,
            "{} size barriers for {bytes} bytes, bound {STAGED_MAX}",
            metrics.size_barriers
        );
        assert!(metrics.barriers >= metrics.size_barriers);
        assert_eq!(served.seal("s", &[]).await, Ok(Some(batches)));
        let rows = served
            .rows("s", &[], Bound::Unbounded, Bound::Unbounded)
            .await
            .unwrap();
        let want: Vec<StoredRow> = (0..batches * BATCH_ROWS)
            .map(|t| StoredRow {
                position: t / BATCH_ROWS + 1,
                values: row(t),
            })
            .collect();
        assert_eq!(rows.len(), want.len());
        assert!(
            rows == want,
            "the rows read back differ from those published"
        );
        served.stop().await.unwrap();
    });
}

/// The same publish with the trigger off is refused with `StagingFull` once the bound is
/// reached (after 1 MiB, 32 batches): the trigger is what keeps the host from it.
#[test]
fn without_the_size_trigger_the_same_publish_is_refused() {
    runtime().block_on(async {
        let (served, batches, refused) = publish_past_the_bound(None, 20 * STAGED_MAX as u64).await;
        assert!(
            matches!(refused, Some(EngineError::StagingFull { .. })),
            "{refused:?}"
        );
        assert_eq!(batches, STAGED_MAX as u64 / (BATCH_ROWS * ROW_BYTES));
        assert_eq!(served.metrics().await.unwrap().size_barriers, 0);
        served.stop().await.unwrap();
    });
}

/// No share panics the supervisor or stalls it: zero, negative, above 1, infinite and NaN
/// are clamped (to the least share, or to 1), and the store is served.
#[test]
fn extreme_size_triggers_do_not_kill_the_supervisor() {
    for share in [0.0, -1.0, 2.0, f64::INFINITY, f64::NEG_INFINITY, f64::NAN] {
        runtime().block_on(async {
            let (mut served, batches, refused) =
                publish_past_the_bound(Some(share), 2 * STAGED_MAX as u64).await;
            let staging_full = matches!(refused, Some(EngineError::StagingFull { .. }));
            // At 1 (above 1, NaN) the trigger fires only at exactly full: these batches fill
            // the bound exactly, so it does; every other share seals long before.
            assert!(refused.is_none() || staging_full, "{share}: {refused:?}");
            // Served still: a seal waits behind any barrier the trigger has in flight (the
            // metrics alone race it), and every accepted row reads back.
            let watermark = served.seal("s", &[]).await;
            assert_eq!(watermark, Ok((batches > 0).then_some(batches)), "{share}");
            assert_eq!(served.metrics().await.unwrap().barriers > 0, batches > 0);
            let rows = served
                .rows("s", &[], Bound::Unbounded, Bound::Unbounded)
                .await
                .unwrap();
            assert_eq!(rows.len() as u64, batches * BATCH_ROWS, "{share}");
            served.stop().await.unwrap();
        });
    }
    let bytes = |share| ServeConfig::default().seal_at_staged_share(Some(share));
    assert_eq!(bytes(0.0).seal_at_staged_bytes(1 << 20), Some(1024));
    assert_eq!(bytes(f64::NAN).seal_at_staged_bytes(1 << 20), Some(1 << 20));
    assert_eq!(bytes(7.0).seal_at_staged_bytes(0), Some(1));
    assert_eq!(bytes(0.5).seal_at_staged_bytes(1 << 20), Some(1 << 19));
}
