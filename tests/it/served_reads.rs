//! Snapshot reads through `Served` while barriers are in flight: sixteen readers and a
//! publisher on a short cadence, on the real file system (so that barriers take real syncs and
//! reads overlap them). Every answer is taken from one snapshot with the watermark it reports,
//! and must equal the model's at that watermark: never a mix of two states, never a barrier
//! half seen. The overlaps are counted (`Metrics::reads_during_barriers`) and must be many: a
//! concurrent test whose reads never overlapped a barrier would prove nothing.

use std::collections::HashMap;
use std::ops::Bound::{Included, Unbounded};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use strata::segment::vfs::{DirEntry, Mapped, RenameMode, SimFs, Vfs, VfsFile, VfsLock};
use strata::{
    Aggregate, Config, EngineError, FieldBuckets, FieldKind, FieldStat, MemorySeries, Row, Series,
    ServeConfig, Served, Store, StoredRow, Stream, StreamDecl, Value,
};

const READERS: usize = 16;
const POSITIONS: u64 = 400;
const BUDGET: u64 = 48;

fn stream() -> StreamDecl {
    Stream::new("s")
        .field("lane", FieldKind::U64)
        .field("t", FieldKind::U64)
        .field("v", FieldKind::F64)
        .track(["lane"])
        .axis("t")
        .build()
        .unwrap()
}

/// Position `p`'s rows: one a lane, values with ties, negatives and -0.0 (exact in binary, so
/// sums agree whatever the order).
fn rows_at(p: u64) -> Vec<Row> {
    (0..2u64)
        .map(|lane| {
            #[allow(clippy::cast_precision_loss)]
            let v = match (p + lane) % 5 {
                0 => -0.0,
                1 | 3 => 2.5,
                2 => -(p as f64),
                _ => (p % 17) as f64 * 0.25,
            };
            vec![Value::U64(lane), Value::U64(p * 10 + lane), Value::F64(v)]
        })
        .collect()
}

/// What one read answers: the rows of every lane, lane 1's survey, and every lane's sum and
/// max.
#[derive(Clone, Debug, PartialEq)]
struct Answer {
    rows: Vec<StoredRow>,
    survey: Vec<FieldBuckets>,
    folds: Vec<Vec<FieldStat>>,
}

const FOLDS: [Aggregate; 3] = [Aggregate::Sum, Aggregate::Max, Aggregate::Count];

/// A runtime of two workers, like a small host's.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// The model's answer at watermark `w`: a fresh model given positions `1..=w`, sealed.
async fn model_at(w: Option<u64>) -> Answer {
    let mut model = MemorySeries::new(&[stream()]);
    for p in 1..=w.unwrap_or(0) {
        model.publish("s", p, rows_at(p)).await.unwrap();
    }
    model.seal("s", &[]).await.unwrap();
    let lane_1 = ["1".to_owned()];
    let mut folds = Vec::new();
    for kind in FOLDS {
        folds.push(
            model
                .aggregate("s", &[], Included(0), Included(u64::MAX), kind)
                .await
                .unwrap(),
        );
    }
    Answer {
        rows: model.rows("s", &[], Unbounded, Unbounded).await.unwrap(),
        survey: model
            .buckets("s", &lane_1, Unbounded, Unbounded, BUDGET)
            .await
            .unwrap(),
        folds,
    }
}

/// One read through `Served::read`: the watermark and the answer, from one snapshot.
async fn read_once(served: &Served) -> (Option<u64>, Answer) {
    served
        .read(|snapshot| {
            let watermark = snapshot.watermark("s", &[])?;
            let rows = snapshot.query("s", &[], ..)?;
            // Before lane 1's first barrier it is no sealed track: refused, where the model's
            // `Series` answers its fields with no buckets.
            let survey = match snapshot.survey("s", &["1"], .., BUDGET) {
                Err(EngineError::UnknownTrack { .. }) if watermark.is_none() => stream()
                    .measured()
                    .into_iter()
                    .map(|f| strata::FieldBuckets {
                        field: stream().fields[usize::from(f)].name.clone(),
                        buckets: Vec::new(),
                    })
                    .collect(),
                survey => survey?.fields,
            };
            let folds = FOLDS
                .into_iter()
                .map(|kind| snapshot.fold("s", &[], 0..=u64::MAX, kind))
                .collect::<Result<Vec<_>, EngineError>>()?;
            Ok::<_, EngineError>((
                watermark,
                Answer {
                    rows,
                    survey,
                    folds,
                },
            ))
        })
        .await
        .expect("served")
        .expect("a read of a healthy store")
}

#[test]
fn sixteen_readers_see_whole_barriers_at_the_watermark_they_report() {
    let runtime = runtime();
    runtime.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::create(dir.path(), Config::default(), &[stream()]).unwrap();
        let served = Served::spawn(
            store,
            ServeConfig::default()
                .seal_interval(Some(Duration::from_millis(2)))
                .readers_max(READERS),
        );
        let done = Arc::new(AtomicBool::new(false));
        let checked = Arc::new(AtomicU64::new(0));
        // The model's answers by watermark, built once each.
        let models: Arc<Mutex<HashMap<Option<u64>, Answer>>> = Arc::default();
        let readers: Vec<_> = (0..READERS)
            .map(|_| {
                let (served, done, checked, models) = (
                    served.clone(),
                    done.clone(),
                    checked.clone(),
                    models.clone(),
                );
                tokio::spawn(async move {
                    let mut watermarks = Vec::new();
                    while !done.load(Ordering::Relaxed) {
                        let (watermark, answer) = read_once(&served).await;
                        let known = models.lock().unwrap().get(&watermark).cloned();
                        let want = if let Some(want) = known {
                            want
                        } else {
                            let want = model_at(watermark).await;
                            models.lock().unwrap().insert(watermark, want.clone());
                            want
                        };
                        assert!(
                            answer == want,
                            "a read at watermark {watermark:?} differs from the model there: \
                             {} rows against {}",
                            answer.rows.len(),
                            want.rows.len()
                        );
                        checked.fetch_add(1, Ordering::Relaxed);
                        watermarks.push(watermark);
                    }
                    watermarks
                })
            })
            .collect();
        let mut publisher = served.clone();
        for p in 1..=POSITIONS {
            publisher.publish("s", p, rows_at(p)).await.unwrap();
            if p % 50 == 0 {
                // A seal's answer is its barrier's acknowledgement: durable through p.
                assert_eq!(publisher.seal("s", &[]).await.unwrap(), Some(p));
            }
            if p % 4 == 0 {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
        done.store(true, Ordering::Relaxed);
        let mut seen = std::collections::BTreeSet::new();
        for reader in readers {
            seen.extend(reader.await.unwrap());
        }
        let metrics = served.metrics().await.unwrap();
        let reads = checked.load(Ordering::Relaxed);
        eprintln!(
            "{reads} reads by {READERS} readers checked against the model at {} distinct \
             watermarks; {} barriers, {} reads started while one was in flight",
            seen.len(),
            metrics.barriers,
            metrics.reads_during_barriers
        );
        // A false pass would be a run whose reads never overlapped a barrier.
        assert!(metrics.barriers >= 8, "{} barriers", metrics.barriers);
        assert!(
            metrics.reads_during_barriers >= 16,
            "only {} of {reads} reads overlapped a barrier",
            metrics.reads_during_barriers
        );
        assert!(seen.len() >= 4, "reads saw only {} watermarks", seen.len());
        assert_eq!(read_once(&served).await.1, model_at(Some(POSITIONS)).await);
        served.stop().await.unwrap();
    });
}

/// A host publishing as fast as `Served` takes its rows, under `ServeConfig::default()`, for
/// `STRATA_SUSTAINED_SECS` seconds (default 60, the minute): so at exactly the rate
/// the store sustains, since back-pressure holds the host to it. No publish may be refused
/// with `StagingFull` (nor anything else); the figures are printed for the record. Retention
/// keeps the last 2,000 positions (raw rows and levels) so that the disk stays bounded over
/// the minute.
#[test]
fn a_host_publishing_flat_out_for_a_minute_is_never_refused() {
    const BATCH: u64 = 1_000;
    let secs: u64 = std::env::var("STRATA_SUSTAINED_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    let runtime = runtime();
    runtime.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let decl = Stream::new("s")
            .field("t", FieldKind::U64)
            .field("v", FieldKind::F64)
            .axis("t")
            .build()
            .unwrap();
        let keep = strata::Lifetime::Positions(2_000);
        let retention = strata::Retention::raw(keep).levels_from(0, keep);
        let config = Config::default().retention([("s".to_owned(), retention)].into());
        let store = Store::create(dir.path(), config, &[decl]).unwrap();
        let mut served = Served::spawn(store, ServeConfig::default());
        let start = std::time::Instant::now();
        let mut position = 0u64;
        while start.elapsed() < Duration::from_secs(secs) {
            position += 1;
            #[allow(clippy::cast_precision_loss)]
            let rows: Vec<Row> = (0..BATCH)
                .map(|i| {
                    let t = position * BATCH + i;
                    vec![Value::U64(t), Value::F64((t % 1_000) as f64 * 0.5)]
                })
                .collect();
            if let Err(error) = served.publish("s", position, rows).await {
                panic!(
                    "publish {position} refused after {:.1} s: {error}",
                    start.elapsed().as_secs_f64()
                );
            }
        }
        let elapsed = start.elapsed().as_secs_f64();
        assert_eq!(served.seal("s", &[]).await.unwrap(), Some(position));
        let metrics = served.metrics().await.unwrap();
        #[allow(clippy::cast_precision_loss)]
        let rate = (position * BATCH) as f64 / elapsed;
        eprintln!(
            "{} rows published in {elapsed:.1} s ({:.2} M rows/s sustained) with no refusal: \
             {} barriers ({} by the size trigger), publishes held {} times by back-pressure, \
             {} compaction steps, {} tiers retired",
            position * BATCH,
            rate / 1e6,
            metrics.barriers,
            metrics.size_barriers,
            metrics.backpressure_waits,
            metrics.compaction_steps,
            metrics.tiers_retired
        );
        // Retention kept the disk bounded: whole segments went.
        assert!(metrics.tiers_retired > 0, "nothing was retired");
        // The writer may be removing retired files as this lists them: one gone between the
        // listing and its length counts as nothing.
        let on_disk: u64 = std::fs::read_dir(dir.path().join("seg"))
            .unwrap()
            .filter_map(|e| e.ok()?.metadata().ok())
            .map(|m| m.len())
            .sum();
        eprintln!("{on_disk} bytes of segments on disk at the end");
        // The newest rows read back exactly.
        let last = served
            .rows("s", &[], Included(position), Included(position))
            .await
            .unwrap();
        assert_eq!(last.len() as u64, BATCH);
        assert_eq!(last[0].values[0], Value::U64(position * BATCH));
        served.stop().await.unwrap();
    });
}

/// Back-pressure, on the real file system: with a 64 KiB staging bound a host fills half of
/// it in microseconds while a barrier's syncs take milliseconds, so staging reaches the size
/// trigger with a barrier in flight again and again. Publishes then wait in the lane (counted
/// in `Metrics::backpressure_waits`) rather than being refused or staged past the bound: 8 MiB
/// go through with no refusal, and read back exactly.
#[test]
fn a_host_faster_than_its_barriers_waits_and_is_never_refused() {
    const BOUND: usize = 64 << 10;
    const BATCH: u64 = 256;
    let runtime = runtime();
    runtime.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let decl = Stream::new("s")
            .field("t", FieldKind::U64)
            .field("v", FieldKind::F64)
            .axis("t")
            .build()
            .unwrap();
        let config = Config::default().staged_bytes_max(BOUND);
        let store = Store::create(dir.path(), config, &[decl]).unwrap();
        let mut served = Served::spawn(store, ServeConfig::default().seal_interval(None));
        // 32 staged bytes a row (16, then 8 a value): 8 MiB of rows.
        let batches = (8u64 << 20) / (BATCH * 32);
        let row = |t: u64| {
            #[allow(clippy::cast_precision_loss)]
            let v = t as f64 * 0.5;
            vec![Value::U64(t), Value::F64(v)]
        };
        for position in 1..=batches {
            let rows = ((position - 1) * BATCH..position * BATCH)
                .map(row)
                .collect();
            served.publish("s", position, rows).await.unwrap();
        }
        assert_eq!(served.seal("s", &[]).await.unwrap(), Some(batches));
        let metrics = served.metrics().await.unwrap();
        eprintln!(
            "{batches} batches through a {BOUND}-byte bound: {} barriers ({} by the size \
             trigger), publishes held {} times",
            metrics.barriers, metrics.size_barriers, metrics.backpressure_waits
        );
        assert!(
            metrics.backpressure_waits > 0,
            "back-pressure never engaged"
        );
        let rows = served.rows("s", &[], Unbounded, Unbounded).await.unwrap();
        let want: Vec<StoredRow> = (0..batches * BATCH)
            .map(|t| StoredRow {
                position: t / BATCH + 1,
                values: row(t),
            })
            .collect();
        assert!(
            rows == want,
            "the rows read back differ from those published"
        );
        served.stop().await.unwrap();
    });
}

/// Which thread did each write: a file system that notes the thread of every write, sync,
/// rename and removal (the supervisor's thread is `strata-supervisor`).
#[derive(Debug)]
struct Threads {
    inner: SimFs,
    on_supervisor: Arc<Mutex<Vec<String>>>,
    writes: Arc<AtomicU64>,
}

impl Threads {
    fn note(&self, op: &str, path: &str) {
        self.writes.fetch_add(1, Ordering::Relaxed);
        if std::thread::current().name() == Some("strata-supervisor") {
            self.on_supervisor
                .lock()
                .unwrap()
                .push(format!("{op} {path}"));
        }
    }
}

#[derive(Debug)]
struct ThreadsFile {
    inner: Box<dyn VfsFile>,
    fs: Arc<Threads>,
    path: String,
}

impl VfsFile for ThreadsFile {
    fn write_all(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.fs.note("write", &self.path);
        self.inner.write_all(bytes)
    }
    fn sync_data(&mut self) -> std::io::Result<()> {
        self.fs.note("sync", &self.path);
        self.inner.sync_data()
    }
    fn set_len(&mut self, len: u64) -> std::io::Result<()> {
        self.fs.note("set_len", &self.path);
        self.inner.set_len(len)
    }
    fn len(&self) -> std::io::Result<u64> {
        self.inner.len()
    }
}

/// A `Vfs` over `Arc<Threads>`, so that files can point back at it.
#[derive(Debug, Clone)]
struct ThreadsFs(Arc<Threads>);

impl ThreadsFs {
    fn wrap(&self, path: &str, inner: Box<dyn VfsFile>) -> Box<dyn VfsFile> {
        Box::new(ThreadsFile {
            inner,
            fs: Arc::clone(&self.0),
            path: path.to_owned(),
        })
    }
}

impl Vfs for ThreadsFs {
    fn create_dir(&self, dir: &str) -> std::io::Result<()> {
        self.0.inner.create_dir(dir)
    }
    fn create(&self, path: &str) -> std::io::Result<Box<dyn VfsFile>> {
        self.0.note("create", path);
        let file = self.0.inner.create(path)?;
        Ok(self.wrap(path, file))
    }
    fn open_append(&self, path: &str) -> std::io::Result<Box<dyn VfsFile>> {
        let file = self.0.inner.open_append(path)?;
        Ok(self.wrap(path, file))
    }
    fn map(&self, path: &str) -> std::io::Result<Mapped> {
        self.0.inner.map(path)
    }
    fn read(&self, path: &str) -> std::io::Result<Vec<u8>> {
        self.0.inner.read(path)
    }
    fn len(&self, path: &str) -> std::io::Result<u64> {
        self.0.inner.len(path)
    }
    fn rename_noreplace(&self, from: &str, to: &str) -> std::io::Result<()> {
        self.0.note("rename", to);
        self.0.inner.rename_noreplace(from, to)
    }
    fn rename_mode(&self) -> RenameMode {
        self.0.inner.rename_mode()
    }
    fn location(&self) -> String {
        self.0.inner.location()
    }
    fn remove(&self, path: &str) -> std::io::Result<()> {
        self.0.note("remove", path);
        self.0.inner.remove(path)
    }
    fn sync_dir(&self, dir: &str) -> std::io::Result<()> {
        self.0.note("sync_dir", dir);
        self.0.inner.sync_dir(dir)
    }
    fn list(&self, dir: &str) -> std::io::Result<Vec<DirEntry>> {
        self.0.inner.list(dir)
    }
    fn exists(&self, path: &str) -> std::io::Result<bool> {
        self.0.inner.exists(path)
    }
    fn lock(&self) -> std::io::Result<Box<dyn VfsLock>> {
        self.0.inner.lock()
    }
    fn lock_shared(&self) -> std::io::Result<Option<Box<dyn VfsLock>>> {
        self.0.inner.lock_shared()
    }
}

/// Nothing that writes or syncs runs on the supervisor's thread while it serves: barriers,
/// compaction steps (merges and the removal of the inputs they retire, deferred under reads
/// in progress) all go to the worker, while a publisher seals on a short cadence, compaction
/// runs, and readers read. (Trim, retire, sweep, a manifest rewrite and the stop still run
/// there: none is asked here.) The writes counted show the run did write.
#[test]
fn no_write_or_sync_runs_on_the_supervisors_thread() {
    let runtime = runtime();
    runtime.block_on(async {
        let fs = ThreadsFs(Arc::new(Threads {
            inner: SimFs::new(),
            on_supervisor: Arc::default(),
            writes: Arc::default(),
        }));
        let config = Config::default().compact_files_max(2).compact_inputs_min(2);
        let store = Store::create_in(Arc::new(fs.clone()), config, &[stream()]).unwrap();
        let writes_at_open = fs.0.writes.load(Ordering::Relaxed);
        let served = Served::spawn(
            store,
            ServeConfig::default().seal_interval(Some(Duration::from_millis(1))),
        );
        let done = Arc::new(AtomicBool::new(false));
        let readers: Vec<_> = (0..4)
            .map(|_| {
                let (served, done) = (served.clone(), done.clone());
                tokio::spawn(async move {
                    while !done.load(Ordering::Relaxed) {
                        read_once(&served).await;
                    }
                })
            })
            .collect();
        let mut publisher = served.clone();
        for p in 1..=150 {
            publisher.publish("s", p, rows_at(p)).await.unwrap();
            if p % 3 == 0 {
                publisher.seal("s", &[]).await.unwrap();
            }
        }
        done.store(true, Ordering::Relaxed);
        for reader in readers {
            reader.await.unwrap();
        }
        let metrics = served.metrics().await.unwrap();
        let on_supervisor = fs.0.on_supervisor.lock().unwrap().clone();
        let writes = fs.0.writes.load(Ordering::Relaxed) - writes_at_open;
        eprintln!(
            "{writes} writes and syncs while served ({} barriers, {} compaction steps): {} on \
             the supervisor's thread",
            metrics.barriers,
            metrics.compaction_steps,
            on_supervisor.len()
        );
        assert!(
            metrics.barriers >= 50 && metrics.compaction_steps >= 10,
            "{metrics:?}"
        );
        assert!(
            on_supervisor.is_empty(),
            "writes on the supervisor's thread: {on_supervisor:?}"
        );
        assert_eq!(read_once(&served).await.1, model_at(Some(150)).await);
        served.stop().await.unwrap();
    });
}

/// Reads taken from the lane before a stop are answered, not dropped: with one reader held by
/// a slow read, eight more wait in the supervisor when the stop comes; every one answers the
/// rows sealed, and only requests after the stop hear that it stopped. (The stop dropped
/// them before.)
#[test]
fn a_stop_answers_the_reads_sent_before_it() {
    let runtime = runtime();
    runtime.block_on(async {
        let store =
            Store::create_in(Arc::new(SimFs::new()), Config::default(), &[stream()]).unwrap();
        let mut served = Served::spawn(
            store,
            ServeConfig::default().seal_interval(None).readers_max(1),
        );
        for p in 1..=5 {
            served.publish("s", p, rows_at(p)).await.unwrap();
        }
        assert_eq!(served.seal("s", &[]).await.unwrap(), Some(5));
        let slow = {
            let served = served.clone();
            tokio::spawn(async move {
                served
                    .read(|snapshot| {
                        std::thread::sleep(Duration::from_millis(300));
                        snapshot.watermark("s", &[])
                    })
                    .await
            })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        let waiting: Vec<_> = (0..8)
            .map(|_| {
                let mut served = served.clone();
                tokio::spawn(async move { served.rows("s", &[], Unbounded, Unbounded).await })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(50)).await;
        served.stop().await.unwrap();
        assert_eq!(slow.await.unwrap().unwrap().unwrap(), Some(5));
        for read in waiting {
            let rows = read
                .await
                .unwrap()
                .expect("a read sent before the stop is answered");
            assert_eq!(rows.len(), 10);
        }
        assert_eq!(
            served.rows("s", &[], Unbounded, Unbounded).await,
            Err(strata::BeneathWindow::Unserved)
        );
    });
}

/// The writer thread runs at the lower CPU priority `ServeConfig::writer_nice` asks for: its
/// nice value (from `/proc`) is the process's plus that, so that the scheduler lets reads and
/// publishes go first when a barrier is being encoded.
#[cfg(target_os = "linux")]
#[test]
fn the_writer_thread_runs_at_the_nice_value_asked() {
    /// Each thread's name and nice value (field 19 of its `stat`, after the name's `)`).
    fn threads() -> Vec<(String, i64)> {
        let mut found = Vec::new();
        for task in std::fs::read_dir("/proc/self/task").unwrap() {
            let path = task.unwrap().path();
            let (Ok(comm), Ok(stat)) = (
                std::fs::read_to_string(path.join("comm")),
                std::fs::read_to_string(path.join("stat")),
            ) else {
                continue;
            };
            let after_name = &stat[stat.rfind(')').unwrap() + 2..];
            // Fields from the state (3rd) on: the nice value is the 19th field.
            let nice: i64 = after_name.split(' ').nth(16).unwrap().parse().unwrap();
            found.push((comm.trim().to_owned(), nice));
        }
        found
    }
    let own = {
        let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
        let after_name = stat[stat.rfind(')').unwrap() + 2..].to_owned();
        after_name
            .split(' ')
            .nth(16)
            .unwrap()
            .parse::<i64>()
            .unwrap()
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let store =
            Store::create_in(Arc::new(SimFs::new()), Config::default(), &[stream()]).unwrap();
        // 7: a value no other test asks for, so that this writer is told apart from theirs.
        let served = Served::spawn(store, ServeConfig::default().writer_nice(7));
        let want = (own + 7).min(19);
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        loop {
            let writers: Vec<i64> = threads()
                .into_iter()
                .filter(|(name, _)| name == "strata-writer")
                .map(|(_, nice)| nice)
                .collect();
            if writers.contains(&want) {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "no strata-writer thread at nice {want} (the test's own is {own}): {writers:?}"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        served.stop().await.unwrap();
    });
}

/// `ServeConfig::readers_max` bounds the reads running at once, and is reached: eight slow
/// reads sent together through a store serving two readers run two at a time, never more,
/// and all eight answer.
#[test]
fn at_most_readers_max_reads_run_at_once() {
    let runtime = runtime();
    runtime.block_on(async {
        let store =
            Store::create_in(Arc::new(SimFs::new()), Config::default(), &[stream()]).unwrap();
        let served = Served::spawn(store, ServeConfig::default().readers_max(2));
        let running = Arc::new(AtomicU64::new(0));
        let most = Arc::new(AtomicU64::new(0));
        let reads: Vec<_> = (0..8)
            .map(|_| {
                let (served, running, most) = (served.clone(), running.clone(), most.clone());
                tokio::spawn(async move {
                    served
                        .read(move |snapshot| {
                            let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                            most.fetch_max(now, Ordering::SeqCst);
                            std::thread::sleep(Duration::from_millis(40));
                            running.fetch_sub(1, Ordering::SeqCst);
                            snapshot.watermark("s", &[])
                        })
                        .await
                })
            })
            .collect();
        for read in reads {
            assert_eq!(read.await.unwrap().unwrap().unwrap(), None);
        }
        assert_eq!(most.load(Ordering::SeqCst), 2, "reads running at once");
        served.stop().await.unwrap();
    });
}
