//! A crash at every operation of a pipelined barrier keeps the all-or-nothing rule: a store
//! served by `Served` on the simulated file system, whose barriers are written by the
//! supervisor's worker (asked for by `seal` and closed by the size trigger) while a publisher
//! keeps feeding the staging behind them, is crashed at each of its operations in turn; every
//! crash image then boots to whole barriers only (the rows a model fed the same publishes holds
//! up to the recovered watermark, a prefix of the publish order), with every acknowledged seal
//! kept, nothing quarantined lost, and a store that seals again. The I/O-fault twin fails each
//! operation of one barrier with EIO and ENOSPC: the seal hears it, the store is poisoned, and
//! a reopen finds the acknowledged rows, plus the failed barrier whole only where its frame
//! reached the manifest whole.
//!
//! The same with compaction on (steps picked on the supervisor, merged, written and claimed by
//! the worker), retention on stream `b` sweeping whole segments, and a reader holding snapshots
//! so that removals are deferred under them: every crash image keeps every acknowledged row
//! above the floors retention raised, boot removes nothing but retired files, no live file is
//! missing, and every read taken meanwhile was whole. Its I/O-fault twin fails each operation
//! after a served seal's barrier (the steps it grants, their sweeps and removals): the store is
//! poisoned and nothing acknowledged is lost.

use std::backtrace::Backtrace;
use std::fmt;
use std::io;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use strata::recover::{Action, FindingKind};
use strata::segment::vfs::{DirEntry, Fault, Mapped, RenameMode, SimFs, Vfs, VfsFile, VfsLock};
use strata::{
    Config, EngineError, FieldKind, Lifetime, MemorySeries, Retention, Row, Series, ServeConfig,
    Served, Store, Stream, StreamDecl, Value,
};

use crate::support::{MODES, sim};

/// Two streams, published alternately (a1 b1 a2 b2 ...), so a barrier cut anywhere but whole
/// shows as watermarks that are no prefix of that order.
const STREAMS: [&str; 2] = ["a", "b"];
/// Positions published per stream.
const POSITIONS: u64 = 40;
/// Partitions (lanes) each batch writes into, rows per lane.
const LANES: u64 = 3;
const ROWS_PER_LANE: u64 = 2;
/// Staging bound: a batch stages 6 rows of 40 bytes (240), so the size trigger at half the
/// bound closes a barrier about every fifth publish.
const STAGED_MAX: usize = 2048;
/// Seals the sealer asks for, one after every `SEAL_EVERY` publishes it sees acknowledged.
const SEALS: u64 = 14;
const SEAL_EVERY: u64 = 5;
/// A sync takes this long on the logged file system, as an fsync would: the barrier's writes
/// then last long enough for publishes to land while they are in flight.
const SYNC_DELAY: Duration = Duration::from_micros(100);

fn decl(id: &str) -> StreamDecl {
    Stream::new(id)
        .field("lane", FieldKind::U64)
        .field("t", FieldKind::U64)
        .field("v", FieldKind::F64)
        .track(["lane"])
        .axis("t")
        .build()
        .unwrap()
}

fn decls() -> Vec<StreamDecl> {
    STREAMS.iter().map(|id| decl(id)).collect()
}

fn config() -> Config {
    Config::default().staged_bytes_max(STAGED_MAX)
}

fn serve_config() -> ServeConfig {
    ServeConfig::default()
        .seal_interval(None)
        .seal_at_staged_share(Some(0.5))
        .compact_steps_per_tick(0)
}

/// The batch of stream `s` at `position`: `ROWS_PER_LANE` rows in each of `LANES` partitions.
fn batch(s: usize, position: u64) -> Vec<Row> {
    let mut rows = Vec::new();
    for lane in 0..LANES {
        for k in 0..ROWS_PER_LANE {
            let t = position * 10 + k;
            #[expect(clippy::cast_precision_loss, reason = "small test values")]
            let v = (s as f64) * 1000.0 + (t as f64) + (lane as f64) * 0.25;
            rows.push(vec![Value::U64(lane), Value::U64(t), Value::F64(v)]);
        }
    }
    rows
}

/// The publish order: (stream index, position), streams alternating.
fn publish_order() -> Vec<(usize, u64)> {
    (1..=POSITIONS)
        .flat_map(|p| (0..STREAMS.len()).map(move |s| (s, p)))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// A logged file system: the simulated one, with each call's operation numbers and what it
// touched, so a crash point can be named (a barrier's segment, its manifest append, ...).

#[derive(Clone, Debug)]
struct Call {
    /// The operation numbers the call took: `first..end` (a link-unlink rename takes two).
    first: u64,
    end: u64,
    what: String,
    /// Where a temp's create was called from (a traced log only): whether the write it starts
    /// is a barrier's or a compaction step's, both written by the same worker pool.
    trace: Option<Arc<Backtrace>>,
}

#[derive(Clone, Debug)]
struct Logged {
    fs: SimFs,
    log: Arc<Mutex<Vec<Call>>>,
    traced: bool,
}

impl Logged {
    fn new(fs: &SimFs) -> Logged {
        Logged {
            fs: fs.clone(),
            log: Arc::default(),
            traced: false,
        }
    }

    /// A log that also keeps where each temp was created from.
    fn traced(fs: &SimFs) -> Logged {
        Logged {
            traced: true,
            ..Logged::new(fs)
        }
    }

    fn note<T>(&self, what: impl FnOnce() -> String, call: impl FnOnce() -> T) -> T {
        note(&self.fs, &self.log, what, call)
    }

    fn calls(&self) -> Vec<Call> {
        self.log.lock().unwrap().clone()
    }
}

fn note<T>(
    fs: &SimFs,
    log: &Mutex<Vec<Call>>,
    what: impl FnOnce() -> String,
    call: impl FnOnce() -> T,
) -> T {
    note_traced(fs, log, what, call, None)
}

fn note_traced<T>(
    fs: &SimFs,
    log: &Mutex<Vec<Call>>,
    what: impl FnOnce() -> String,
    call: impl FnOnce() -> T,
    trace: Option<Arc<Backtrace>>,
) -> T {
    let first = fs.ops();
    let out = call();
    let end = fs.ops();
    if end > first {
        log.lock().unwrap().push(Call {
            first,
            end,
            what: what(),
            trace,
        });
    }
    out
}

#[derive(Debug)]
struct LoggedFile {
    file: Box<dyn VfsFile>,
    path: String,
    fs: SimFs,
    log: Arc<Mutex<Vec<Call>>>,
}

impl VfsFile for LoggedFile {
    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        let (fs, log, path) = (&self.fs, &self.log, &self.path);
        let file = &mut self.file;
        note(
            fs,
            log,
            || format!("write {path}"),
            || file.write_all(bytes),
        )
    }

    fn sync_data(&mut self) -> io::Result<()> {
        std::thread::sleep(SYNC_DELAY);
        let (fs, log, path) = (&self.fs, &self.log, &self.path);
        let file = &mut self.file;
        note(fs, log, || format!("sync {path}"), || file.sync_data())
    }

    fn set_len(&mut self, len: u64) -> io::Result<()> {
        let (fs, log, path) = (&self.fs, &self.log, &self.path);
        let file = &mut self.file;
        note(fs, log, || format!("set_len {path}"), || file.set_len(len))
    }

    fn len(&self) -> io::Result<u64> {
        self.file.len()
    }
}

impl Logged {
    fn file(&self, path: &str, file: io::Result<Box<dyn VfsFile>>) -> io::Result<Box<dyn VfsFile>> {
        Ok(Box::new(LoggedFile {
            file: file?,
            path: path.to_owned(),
            fs: self.fs.clone(),
            log: Arc::clone(&self.log),
        }))
    }
}

impl Vfs for Logged {
    fn create_dir(&self, dir: &str) -> io::Result<()> {
        self.note(|| format!("create_dir {dir}"), || self.fs.create_dir(dir))
    }

    fn create(&self, path: &str) -> io::Result<Box<dyn VfsFile>> {
        // Captured unresolved (cheap); resolved only for the write a crash point fell in.
        let trace =
            (self.traced && path.starts_with("tmp/")).then(|| Arc::new(Backtrace::force_capture()));
        let file = note_traced(
            &self.fs,
            &self.log,
            || format!("create {path}"),
            || self.fs.create(path),
            trace,
        );
        self.file(path, file)
    }

    fn open_append(&self, path: &str) -> io::Result<Box<dyn VfsFile>> {
        let file = self.note(
            || format!("open_append {path}"),
            || self.fs.open_append(path),
        );
        self.file(path, file)
    }

    fn map(&self, path: &str) -> io::Result<Mapped> {
        self.fs.map(path)
    }

    fn len(&self, path: &str) -> io::Result<u64> {
        self.fs.len(path)
    }

    fn rename_noreplace(&self, from: &str, to: &str) -> io::Result<()> {
        self.note(
            || format!("rename {from} {to}"),
            || self.fs.rename_noreplace(from, to),
        )
    }

    fn rename_mode(&self) -> RenameMode {
        self.fs.rename_mode()
    }

    fn location(&self) -> String {
        self.fs.location()
    }

    fn remove(&self, path: &str) -> io::Result<()> {
        self.note(|| format!("remove {path}"), || self.fs.remove(path))
    }

    fn sync_dir(&self, dir: &str) -> io::Result<()> {
        std::thread::sleep(SYNC_DELAY);
        self.note(|| format!("sync_dir {dir}"), || self.fs.sync_dir(dir))
    }

    fn list(&self, dir: &str) -> io::Result<Vec<DirEntry>> {
        self.fs.list(dir)
    }

    fn exists(&self, path: &str) -> io::Result<bool> {
        self.fs.exists(path)
    }

    fn lock(&self) -> io::Result<Box<dyn VfsLock>> {
        self.fs.lock()
    }

    fn lock_shared(&self) -> io::Result<Option<Box<dyn VfsLock>>> {
        self.fs.lock_shared()
    }
}

/// Where a crash point fell.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Landed {
    /// In a barrier's segment: its temp's create, writes or sync, the rename, the directory
    /// syncs.
    Segment,
    /// On the manifest append that claims the barrier.
    Append,
    /// On the manifest's sync after it.
    ManifestSync,
    /// Anywhere else.
    Other,
}

impl fmt::Display for Landed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Landed::Segment => "segment writes",
            Landed::Append => "manifest append",
            Landed::ManifestSync => "manifest sync",
            Landed::Other => "other",
        })
    }
}

fn landed(calls: &[Call], op: u64) -> (Landed, String) {
    let Some(call) = calls.iter().find(|c| c.first <= op && op < c.end) else {
        return (Landed::Other, "no call".to_owned());
    };
    let what = call.what.clone();
    let kind = if what.contains("tmp") || what.contains("seg") {
        Landed::Segment
    } else if what.starts_with("write manifest-") {
        Landed::Append
    } else if what.starts_with("sync manifest-") {
        Landed::ManifestSync
    } else {
        Landed::Other
    };
    (kind, what)
}

/// The operation spans of the barriers in `calls`: from a temp's create to the manifest sync
/// that follows it.
fn barrier_spans(calls: &[Call]) -> Vec<(u64, u64)> {
    let mut spans = Vec::new();
    let mut start = None;
    for call in calls {
        if call.what.starts_with("create tmp/") && start.is_none() {
            start = Some(call.first);
        }
        if call.what.starts_with("sync manifest-")
            && let Some(first) = start.take()
        {
            spans.push((first, call.end));
        }
    }
    spans
}

// ---------------------------------------------------------------------------------------------
// The scenario.

/// What the publisher was told: each acknowledged publish (stream, position) with the
/// operation count when it was, and its refusal, if any.
type Published = (Vec<((usize, u64), u64)>, Option<EngineError>);

/// What the sealer was told: each acknowledged seal (stream, watermark), and how many were
/// refused.
type Sealed = (Vec<(usize, Option<u64>)>, usize);

/// The publisher: every batch of `publish_order`, awaiting each, telling `progress` how many
/// were acknowledged; stops at the first refusal. Answers the acknowledged publishes, each
/// with the operation count when it was, and the refusal.
fn spawn_publisher(
    served: &Served,
    fs: &SimFs,
    progress: tokio::sync::watch::Sender<u64>,
) -> tokio::task::JoinHandle<Published> {
    let handle = served.clone();
    let fs = fs.clone();
    tokio::spawn(async move {
        let mut published = Vec::new();
        for (done, (s, position)) in (1u64..).zip(publish_order()) {
            if let Err(error) = handle
                .publish(STREAMS[s], position, batch(s, position))
                .await
            {
                return (published, Some(error));
            }
            published.push(((s, position), fs.ops()));
            let _ = progress.send(done);
        }
        (published, None)
    })
}

/// The sealer: `SEALS` seals, one each `SEAL_EVERY` acknowledged publishes, not waiting for
/// the publisher otherwise. Answers the seals acknowledged (stream, watermark) and refused.
fn spawn_sealer(
    served: &Served,
    mut seen: tokio::sync::watch::Receiver<u64>,
) -> tokio::task::JoinHandle<Sealed> {
    let mut handle = served.clone();
    tokio::spawn(async move {
        let mut sealed = Vec::new();
        let mut refused = 0;
        for i in 0..SEALS {
            let target = (i + 1) * SEAL_EVERY;
            // Once the publisher has stopped (or finished), the seals go on.
            let _ = seen.wait_for(|done| *done >= target).await;
            let s = usize::try_from(i).unwrap() % STREAMS.len();
            match handle.seal(STREAMS[s], &[]).await {
                Ok(watermark) => sealed.push((s, watermark)),
                Err(_) => refused += 1,
            }
        }
        (sealed, refused)
    })
}

/// What a run of the scenario was told.
#[derive(Debug, Default)]
struct Told {
    /// Publishes acknowledged, in order, each with the operation count when it was.
    published: Vec<((usize, u64), u64)>,
    /// The publisher's first refusal (after a crash: the store is poisoned).
    publish_refused: Option<EngineError>,
    /// Seals acknowledged: the stream and the watermark answered.
    sealed: Vec<(usize, Option<u64>)>,
    /// Seals refused.
    seals_refused: usize,
    /// The stop's outcome (its last barrier).
    stopped: Option<Result<(), EngineError>>,
}

/// Creates the store on `fs`, answering the operation count once it is created.
fn create(fs: &SimFs, vfs: &Logged) -> (Store, u64) {
    let store = Store::create_in(Arc::new(vfs.clone()), config(), &decls()).unwrap();
    (store, fs.ops())
}

/// Serves `store`: a publisher feeds every batch in publish order (each awaited) while a
/// sealer asks for a seal after every few acknowledged publishes, without waiting for the
/// publisher; the size trigger closes barriers between. Then a stop (its last barrier).
fn scenario(fs: &SimFs, store: Store) -> Told {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap();
    runtime.block_on(async {
        let served = Served::spawn(store, serve_config());
        let (progress, seen) = tokio::sync::watch::channel(0u64);
        let publisher = spawn_publisher(&served, fs, progress);
        let sealer = spawn_sealer(&served, seen);
        let (published, publish_refused) = publisher.await.unwrap();
        let (sealed, seals_refused) = sealer.await.unwrap();
        let stopped = Some(served.stop().await);
        Told {
            published,
            publish_refused,
            sealed,
            seals_refused,
            stopped,
        }
    })
}

/// The crash images checked at each crash point: a plain crash, the last write torn at several
/// lengths, and every prefix of the directory operations since the last directory sync kept.
fn images(fs: &SimFs) -> Vec<(String, SimFs)> {
    let mut images = vec![("crash".to_owned(), fs.crash())];
    for keep in [1, 9, 64, usize::MAX] {
        images.push((format!("torn after {keep}"), fs.crash_tearing(keep)));
    }
    for n in 1..=fs.recent_dir_ops() {
        images.push((format!("{n} dir ops kept"), fs.crash_keeping_dir_ops(n)));
    }
    images
}

/// Boot's findings lose nothing: no acknowledged history damaged or missing, and every
/// file it moved aside is in quarantine (whole, where it names a whole file's length). With
/// `retired_ok` (a store that compacts or retires), a file whose retirement is durable may still
/// be on disk (a crash before its removal, or while a snapshot deferred it): boot removes it,
/// and that is all it may remove.
fn check_findings(store: &Store, image: &SimFs, context: &str, retired_ok: bool) {
    for finding in &store.boot_report().findings {
        assert!(
            !matches!(
                finding.kind,
                FindingKind::DamagedHistory
                    | FindingKind::MissingFile
                    | FindingKind::WrongLength
                    | FindingKind::BadChecksum
            ),
            "{context}: {finding}"
        );
        assert!(
            retired_ok || finding.kind != FindingKind::RetiredFile,
            "{context}: {finding}"
        );
        match &finding.action {
            Action::Quarantine { to } | Action::AlreadyQuarantined { at: to } => {
                let path = format!("quarantine/{to}");
                assert!(
                    image.exists(&path).unwrap(),
                    "{context}: {finding}: nothing at {path}"
                );
                if let (Some(bytes), None) = (finding.bytes, finding.offset) {
                    assert_eq!(image.len(&path).unwrap(), bytes, "{context}: {finding}");
                }
            }
            // The bytes stay under their other name, or in quarantine if that is unclaimed.
            Action::DropSecondName { of } => {
                let quarantined = store
                    .boot_report()
                    .findings
                    .iter()
                    .any(|f| &f.file == of && matches!(f.action, Action::Quarantine { .. }));
                assert!(
                    image.exists(of).unwrap() || quarantined,
                    "{context}: {finding}"
                );
            }
            Action::Remove => assert!(
                retired_ok && finding.kind == FindingKind::RetiredFile,
                "{context}: only a retired file may be removed: {finding}"
            ),
            _ => {}
        }
    }
}

/// Boots `image` and checks it: findings that lose nothing, whole barriers only (a prefix of
/// the publish order, exactly the model's rows), every acknowledged seal kept, and a store that
/// seals again. Answers how many publishes the recovered state holds.
fn check_image(image: &SimFs, told: &Told, context: &str) -> usize {
    let mut store = Store::open_in(sim(image), config(), &[])
        .unwrap_or_else(|e| panic!("{context}: reopen: {e}"));
    check_findings(&store, image, context, false);
    assert!(
        image.list("tmp").unwrap().is_empty(),
        "{context}: a temp left"
    );
    let watermarks: Vec<u64> = STREAMS
        .iter()
        .map(|s| store.watermark(s, &[]).unwrap().unwrap_or(0))
        .collect();
    // Every acknowledged seal is kept.
    for &(s, watermark) in &told.sealed {
        assert!(
            watermark.unwrap_or(0) <= watermarks[s],
            "{context}: a seal of {} acknowledged at {watermark:?}, recovered {}",
            STREAMS[s],
            watermarks[s]
        );
    }
    // Whole barriers only: what is recovered is a prefix of the publish order.
    let order = publish_order();
    let kept = order
        .iter()
        .take_while(|&&(s, position)| position <= watermarks[s])
        .count();
    assert!(
        order[kept..]
            .iter()
            .all(|&(s, position)| position > watermarks[s]),
        "{context}: watermarks {watermarks:?} are no prefix of the publish order"
    );
    assert!(
        kept <= told.published.len(),
        "{context}: {kept} publishes recovered, {} acknowledged",
        told.published.len()
    );
    // Exactly the model's rows, fed the same publishes, up to the recovered watermarks.
    let model = MemorySeries::new(&decls());
    block_on(async {
        let mut model = model.clone();
        for &(s, position) in &order[..kept] {
            model
                .publish(STREAMS[s], position, batch(s, position))
                .await
                .unwrap();
        }
        for s in STREAMS {
            model.seal(s, &[]).await.unwrap();
        }
    });
    for s in STREAMS {
        for selection in [&[][..], &["1"][..]] {
            // A track none of whose barriers survived is refused alike by both.
            match (store.query(s, selection, ..), model.query(s, selection, ..)) {
                (Ok(got), Ok(want)) => assert!(
                    got == want,
                    "{context}: stream {s} {selection:?}: {} rows recovered, the model holds {}",
                    got.len(),
                    want.len()
                ),
                (Err(got), Err(want)) => assert_eq!(
                    got.to_string(),
                    want.to_string(),
                    "{context}: stream {s} {selection:?}"
                ),
                (got, want) => panic!("{context}: stream {s} {selection:?}: {got:?} vs {want:?}"),
            }
        }
    }
    // The store seals again, and answers what it sealed.
    let next = watermarks[0] + 1;
    let row = vec![Value::U64(0), Value::U64(1_000_000), Value::F64(-1.0)];
    store
        .publish("a", next, std::slice::from_ref(&row))
        .unwrap();
    let sealed = store.seal().unwrap();
    assert_eq!(sealed["a"], Some(next), "{context}");
    let back = store.query("a", &[], next..).unwrap();
    assert_eq!(back.len(), 1, "{context}");
    assert_eq!(back[0].values, row, "{context}");
    kept
}

fn block_on<F: Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(future)
}

#[derive(Debug, Default)]
struct Census {
    runs_probed: usize,
    ops_probed: (u64, u64),
    barriers_probed: (usize, usize),
    publishes_during_barriers: usize,
    crashed: usize,
    retried: usize,
    unreached: usize,
    images: usize,
    landed: std::collections::BTreeMap<Landed, usize>,
    inside_barrier: usize,
    acknowledged_seals: usize,
    barrier_kept: usize,
    barrier_lost: usize,
}

/// Runs the scenario uncrashed, a few times: how many operations it takes (fewest, most: it
/// varies with where the barriers fall), and that it runs clean, sealing everything.
fn probe(mode: RenameMode, census: &mut Census) -> (u64, u64) {
    let mut ops = Vec::new();
    for _ in 0..3 {
        let fs = SimFs::with_rename_mode(mode);
        let vfs = Logged::new(&fs);
        let (store, start) = create(&fs, &vfs);
        let told = scenario(&fs, store);
        assert!(told.publish_refused.is_none(), "{:?}", told.publish_refused);
        assert_eq!(told.seals_refused, 0);
        assert!(matches!(told.stopped, Some(Ok(()))), "{:?}", told.stopped);
        assert_eq!(told.published.len(), publish_order().len());
        let calls = vfs.calls();
        let spans = barrier_spans(&calls);
        census.publishes_during_barriers += told
            .published
            .iter()
            .filter(|(_, at)| spans.iter().any(|&(first, end)| first < *at && *at < end))
            .count();
        let image = fs.crash();
        let kept = check_image(&image, &told, &format!("{mode:?} uncrashed"));
        assert_eq!(kept, publish_order().len(), "the stop sealed everything");
        census.runs_probed += 1;
        census.barriers_probed = if census.runs_probed == 1 {
            (spans.len(), spans.len())
        } else {
            (
                census.barriers_probed.0.min(spans.len()),
                census.barriers_probed.1.max(spans.len()),
            )
        };
        ops.push(fs.ops() - start);
    }
    let (least, most) = (*ops.iter().min().unwrap(), *ops.iter().max().unwrap());
    census.ops_probed = (
        if census.ops_probed.0 == 0 {
            least
        } else {
            census.ops_probed.0.min(least)
        },
        census.ops_probed.1.max(most),
    );
    (least, most)
}

/// The acceptance line: a crash at every operation of a pipelined barrier (SimFs) keeps the
/// all-or-nothing rule.
#[test]
fn a_crash_at_every_operation_of_a_pipelined_barrier_keeps_the_all_or_nothing_rule() {
    let started = Instant::now();
    let mut census = Census::default();
    for mode in MODES {
        // Uncrashed, a few times: how many operations the scenario takes (it varies with where
        // the barriers fall), and that it runs clean.
        let (least, most) = probe(mode, &mut census);
        assert!(census.barriers_probed.0 >= 4, "{census:?}");

        for crash_op in 0..most {
            // Where the barriers fall varies from run to run: a crash point past the end of a
            // shorter run never reaches the disk, so such a run is tried again (more often
            // below the fewest operations an uncrashed run took: those points must be reached).
            let attempts = if crash_op < least { 32 } else { 4 };
            let mut attempt = 0;
            let (fs, told, calls, start) = loop {
                let fs = SimFs::with_rename_mode(mode);
                let vfs = Logged::new(&fs);
                let (store, start) = create(&fs, &vfs);
                fs.crash_at(start + crash_op);
                let told = scenario(&fs, store);
                if fs.ops() > start + crash_op || attempt == attempts {
                    break (fs, told, vfs.calls(), start);
                }
                attempt += 1;
                census.retried += 1;
            };
            if fs.ops() <= start + crash_op {
                assert!(crash_op >= least, "{mode:?}: op {crash_op} never reached");
                census.unreached += 1;
                continue;
            }
            census.crashed += 1;
            let (where_, what) = landed(&calls, start + crash_op);
            *census.landed.entry(where_).or_default() += 1;
            if matches!(where_, Landed::Segment | Landed::Append) {
                census.inside_barrier += 1;
            }
            // The crashed barrier, if any, answered no seal: a seal acknowledged is one whose
            // barrier's frame was synced, before the crash point.
            census.acknowledged_seals += told.sealed.len();
            for (name, image) in images(&fs) {
                let context = format!("{mode:?} crash at op {crash_op} ({what}), image {name}");
                let kept = check_image(&image, &told, &context);
                census.images += 1;
                if kept == told.published.len() {
                    census.barrier_kept += 1;
                } else {
                    census.barrier_lost += 1;
                }
            }
        }
    }
    let elapsed = started.elapsed();
    eprintln!(
        "served crash census: {} uncrashed runs of {}..={} operations and {}..={} barriers, \
         {} publishes acknowledged while a barrier's writes were in flight; {} operations \
         crashed ({} runs tried again, {} points unreached), {} images checked; crash points \
         by place: {:?}; {} inside a barrier's writes (first write to manifest append); \
         {} seals acknowledged before a crash, 0 lost (each checked at every image); images holding every acknowledged \
         publish {}, holding fewer {}; {:.1?}",
        census.runs_probed,
        census.ops_probed.0,
        census.ops_probed.1,
        census.barriers_probed.0,
        census.barriers_probed.1,
        census.publishes_during_barriers,
        census.crashed,
        census.retried,
        census.unreached,
        census.images,
        census.landed,
        census.inside_barrier,
        census.acknowledged_seals,
        census.barrier_kept,
        census.barrier_lost,
        elapsed
    );
    assert!(census.publishes_during_barriers > 0, "{census:?}");
    assert!(census.inside_barrier > census.crashed / 2, "{census:?}");
}

/// The I/O-fault twin: each operation of a barrier the worker writes fails once, with EIO and
/// with ENOSPC. The seal hears the failure, the store is poisoned (a later publish and seal
/// answer so, and the stop too), and a reopen (of the live files, and of a crash after) finds
/// the acknowledged rows exactly: the failed barrier is there, whole, only where its frame
/// reached the manifest whole (a failed sync of it, which boot judges).
#[test]
fn a_fault_at_every_operation_of_a_served_barrier_poisons_and_claims_nothing() {
    let started = Instant::now();
    let (mut faults, mut images, mut kept_whole) = (0, 0, 0);
    let acked = [(0, 1), (1, 1), (0, 2), (1, 2)];
    let failed = [(0, 3), (1, 3)];
    for mode in MODES {
        let run = |fault: Option<(u64, Fault)>| {
            let fs = SimFs::with_rename_mode(mode);
            let vfs = Logged::new(&fs);
            let (store, _) = create(&fs, &vfs);
            let config = serve_config().seal_at_staged_share(None);
            let mut told = Told::default();
            let mut barrier = (0, 0);
            let mut seal_answer = None;
            block_on(async {
                let mut served = Served::spawn(store, config);
                for (s, position) in acked {
                    served
                        .publish(STREAMS[s], position, batch(s, position))
                        .await
                        .unwrap();
                    told.published.push(((s, position), fs.ops()));
                }
                let watermark = served.seal("a", &[]).await.unwrap();
                assert_eq!(watermark, Some(2));
                told.sealed.push((0, watermark));
                for (s, position) in failed {
                    served
                        .publish(STREAMS[s], position, batch(s, position))
                        .await
                        .unwrap();
                    told.published.push(((s, position), fs.ops()));
                }
                let start = fs.ops();
                if let Some((op, fault)) = fault {
                    fs.fail_at(start + op, fault);
                }
                seal_answer = Some(served.seal("b", &[]).await);
                barrier = (start, fs.ops());
                if fault.is_some() {
                    let refused = served.publish("a", 4, batch(0, 4)).await;
                    assert!(
                        matches!(refused, Err(EngineError::Poisoned { .. })),
                        "{refused:?}"
                    );
                    assert!(served.seal("a", &[]).await.is_err());
                }
                told.stopped = Some(served.stop().await);
            });
            (fs, vfs.calls(), told, barrier, seal_answer.unwrap())
        };
        let (_, _, _, (start, end), answer) = run(None);
        assert_eq!(answer, Ok(Some(3)));
        let n_ops = end - start;
        assert!(n_ops >= 8, "{n_ops} operations in a barrier");
        for op in 0..n_ops {
            for fault in [Fault::Eio, Fault::Enospc] {
                let (fs, calls, told, (start, _), answer) = run(Some((op, fault)));
                let (_, what) = landed(&calls, start + op);
                let context = format!("{mode:?} {fault:?} at op {op} ({what})");
                assert!(answer.is_err(), "{context}: the seal answered {answer:?}");
                if fault == Fault::Enospc {
                    assert!(
                        matches!(answer, Err(strata::BeneathWindow::Exhausted(_))),
                        "{context}: {answer:?}"
                    );
                }
                assert!(
                    matches!(told.stopped, Some(Err(EngineError::Poisoned { .. }))),
                    "{context}: the stop answered {:?}",
                    told.stopped
                );
                faults += 1;
                // The frame may have reached the manifest whole only if its sync failed.
                let frame_whole = what.starts_with("sync manifest-");
                for (name, image) in [("live", fs.clone()), ("crash", fs.crash())] {
                    let context = format!("{context}, {name}");
                    let kept = check_image(&image, &told, &context);
                    images += 1;
                    if kept == acked.len() + failed.len() {
                        assert!(frame_whole, "{context}: a failed barrier was claimed");
                        kept_whole += 1;
                    } else {
                        assert_eq!(kept, acked.len(), "{context}");
                    }
                }
            }
        }
    }
    eprintln!(
        "served fault census: {faults} faults injected, {images} reopens checked, \
         {kept_whole} kept the failed barrier whole (its frame written, its sync failed); \
         {:.1?}",
        started.elapsed()
    );
    assert!(faults > 0);
}

// ---------------------------------------------------------------------------------------------
// The same, with compaction on: steps picked on the supervisor and written by the worker (its
// temp, syncs, rename and `Merge` record), retention on stream `b` retiring whole segments (so
// sweeps and merges leave files wholly retired), and a reader holding snapshots meanwhile, so
// that removals are deferred under them.

/// Positions of stream `b` kept (raw rows and every level): older segments are swept.
const RETAINED: u64 = 10;
/// How long a read holds its snapshot, so that removals meet it.
const READ_HOLD: Duration = Duration::from_micros(300);

fn compacting_config() -> Config {
    config().compact_files_max(2).compact_inputs_min(2).retain(
        "b",
        Retention::raw(Lifetime::Positions(RETAINED)).levels_from(0, Lifetime::Positions(RETAINED)),
    )
}

fn compacting_serve_config() -> ServeConfig {
    serve_config().compact_steps_per_tick(4)
}

/// What the reader saw.
#[derive(Debug, Default)]
struct Seen {
    /// Snapshot reads and lane reads answered.
    reads: usize,
    /// Reads answered `Floor` (stream `b` beneath its floor), then read from it.
    floored: usize,
    /// Metrics polled while a read held its snapshot that showed a removal deferred.
    deferred: usize,
    /// Answers that cannot be right whatever happened to the disk: rows missing or extra at
    /// the watermark the same snapshot reported, a file unreadable under a snapshot.
    wrong: Vec<String>,
    /// Refusals (a crashed store is poisoned).
    refused: usize,
}

/// Stream `s`'s rows read at one version are exactly positions `from..=watermark`, six each.
fn whole_rows(
    s: &str,
    rows: &[strata::StoredRow],
    from: u64,
    watermark: u64,
) -> Result<(), String> {
    let want = (watermark + 1).saturating_sub(from) * LANES * ROWS_PER_LANE;
    let positions_ok = rows
        .iter()
        .all(|r| (from..=watermark).contains(&r.position));
    if rows.len() as u64 == want && positions_ok {
        Ok(())
    } else {
        Err(format!(
            "stream {s}: {} rows at {from}..={watermark}, want {want} (positions in range: \
             {positions_ok})",
            rows.len()
        ))
    }
}

/// One snapshot read: each stream's watermark, and its rows up to it (from `b`'s floor), which
/// must be whole; the snapshot is held a while, so that removals meet it.
fn snapshot_read(snapshot: &strata::Snapshot) -> Result<bool, Result<String, EngineError>> {
    let mut floored = false;
    for s in STREAMS {
        let watermark = snapshot.watermark(s, &[]).map_err(Err)?.unwrap_or(0);
        let (from, rows) = match snapshot.query(s, &[], ..) {
            Ok(rows) => (1, rows),
            Err(EngineError::Floor { floor, .. }) if s == "b" => {
                floored = true;
                (floor, snapshot.query(s, &[], floor..).map_err(Err)?)
            }
            Err(error) => return Err(Err(error)),
        };
        whole_rows(s, &rows, from, watermark).map_err(Ok)?;
    }
    std::thread::sleep(READ_HOLD);
    Ok(floored)
}

/// The reader of `compacting_scenario`: until `done`, a snapshot read (polling the metrics
/// while it holds its snapshot, for removals deferred under it), then a read through the lane.
async fn read_until(mut handle: Served, done: Arc<std::sync::atomic::AtomicBool>) -> Seen {
    let mut seen = Seen::default();
    while !done.load(std::sync::atomic::Ordering::SeqCst) {
        let reading = handle.clone();
        let read = reading.read(snapshot_read);
        tokio::pin!(read);
        let answer = loop {
            tokio::select! {
                answer = &mut read => break answer,
                () = tokio::time::sleep(Duration::from_micros(100)) => {
                    if let Ok(metrics) = handle.metrics().await
                        && metrics.removals_pending > 0
                    {
                        seen.deferred += 1;
                    }
                }
            }
        };
        match answer {
            Ok(Ok(floored)) => {
                seen.reads += 1;
                seen.floored += usize::from(floored);
            }
            Ok(Err(Ok(wrong))) => seen.wrong.push(wrong),
            Ok(Err(Err(EngineError::Unreadable { source }))) => {
                seen.wrong
                    .push(format!("unreadable under a snapshot: {source}"));
            }
            Ok(Err(Err(_))) | Err(_) => seen.refused += 1,
        }
        // And a read through the lane: stream `a`'s rows, whole positions.
        match handle
            .rows(
                "a",
                &[],
                std::ops::Bound::Unbounded,
                std::ops::Bound::Unbounded,
            )
            .await
        {
            Ok(rows) => {
                seen.reads += 1;
                let top = rows.iter().map(|r| r.position).max().unwrap_or(0);
                if let Err(wrong) = whole_rows("a", &rows, 1, top) {
                    seen.wrong.push(wrong);
                }
            }
            // A poisoned store answers `Unreadable` through the lane, saying so.
            Err(strata::BeneathWindow::Unreadable(source)) if !source.starts_with("poisoned") => {
                seen.wrong
                    .push(format!("unreadable through the lane: {source}"));
            }
            Err(_) => seen.refused += 1,
        }
    }
    seen
}

/// Serves `store` with compaction on: the publisher and sealer of `scenario`, plus a reader
/// that reads on snapshots (polling the metrics while each holds its snapshot) and through the
/// lane, until both are done. Answers also the compaction steps taken, where the run was clean.
fn compacting_scenario(fs: &SimFs, store: Store) -> (Told, Seen, u64) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap();
    runtime.block_on(async {
        let served = Served::spawn(store, compacting_serve_config());
        let (progress, seen) = tokio::sync::watch::channel(0u64);
        let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let publisher = spawn_publisher(&served, fs, progress);
        let sealer = spawn_sealer(&served, seen);
        let reader = tokio::spawn(read_until(served.clone(), Arc::clone(&done)));
        let (published, publish_refused) = publisher.await.unwrap();
        let (sealed, seals_refused) = sealer.await.unwrap();
        done.store(true, std::sync::atomic::Ordering::SeqCst);
        let seen = reader.await.unwrap();
        let steps = served.metrics().await.map_or(0, |m| m.compaction_steps);
        let stopped = Some(served.stop().await);
        let told = Told {
            published,
            publish_refused,
            sealed,
            seals_refused,
            stopped,
        };
        (told, seen, steps)
    })
}

/// Where a crash point fell, with compaction on: in which write (the temp's create names it,
/// from where it was called) or outside any.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Within {
    /// A compaction step's writes: its temp's create, writes, sync, the rename, the directory
    /// syncs, its `Merge` record's append and sync.
    Merge,
    /// A barrier's, likewise.
    Barrier,
    /// Another two-phase write (a manifest rewrite).
    OtherWrite,
    /// The removal of a retired file, or the sync of `seg/` after it.
    Removal,
    /// Anything else (a sweep's record, boot-time writes, ...).
    Other,
}

fn within(calls: &[Call], op: u64) -> (Within, String) {
    let Some(at) = calls.iter().position(|c| c.first <= op && op < c.end) else {
        return (Within::Other, "no call".to_owned());
    };
    let what = calls[at].what.clone();
    // The write it belongs to: the last temp created at or before it, if no manifest sync
    // closed that write before it.
    let opened = calls[..=at]
        .iter()
        .rposition(|c| c.what.starts_with("create tmp/"));
    if let Some(opened) = opened
        && !calls[opened..at]
            .iter()
            .any(|c| c.what.starts_with("sync manifest-"))
    {
        let trace = calls[opened]
            .trace
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_default();
        let kind = if trace.contains("Merging") {
            Within::Merge
        } else if trace.contains("Sealing") {
            Within::Barrier
        } else {
            Within::OtherWrite
        };
        return (kind, what);
    }
    if what.starts_with("remove seg/") || what.starts_with("sync_dir seg") {
        return (Within::Removal, what);
    }
    (Within::Other, what)
}

/// Every file a live tier of the catalog names is on the disk.
fn live_files_present(image: &SimFs, store: &Store, context: &str) {
    let on_disk: Vec<String> = image
        .list("seg")
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    for file in store.catalog().live_files() {
        let name = format!("{:012}", file.name);
        assert!(
            on_disk.iter().any(|n| n.contains(&name)),
            "{context}: live file {} missing from {on_disk:?}",
            file.name
        );
    }
}

/// The store's rows are exactly the model's, fed the first `kept` publishes, above the floors
/// retention raised on `b` (no higher than `RETAINED` positions behind its watermark allows);
/// answers `b`'s floor for an unnarrowed read.
fn check_rows_above_floors(
    store: &Store,
    watermarks: &[u64],
    kept: usize,
    context: &str,
) -> Option<u64> {
    let order = publish_order();
    let model = MemorySeries::new(&decls());
    block_on(async {
        let mut model = model.clone();
        for &(s, position) in &order[..kept] {
            model
                .publish(STREAMS[s], position, batch(s, position))
                .await
                .unwrap();
        }
        for s in STREAMS {
            model.seal(s, &[]).await.unwrap();
        }
    });
    let mut b_floor = None;
    for (i, s) in STREAMS.iter().enumerate() {
        for selection in [&[][..], &["1"][..]] {
            let (from, got) = match store.query(s, selection, ..) {
                Ok(rows) => (0, rows),
                Err(EngineError::Floor { floor, unit, .. }) => {
                    assert_eq!(*s, "b", "{context}: a floor on a stream kept forever");
                    assert_eq!(unit, "position", "{context}");
                    // Rows within the retention of the last position a sweep can have seen
                    // (at most the watermark) are never retired.
                    assert!(
                        floor <= (watermarks[i] + 1).saturating_sub(RETAINED),
                        "{context}: stream {s} {selection:?}: floor {floor} past what \
                         {RETAINED} positions behind watermark {} retire",
                        watermarks[i]
                    );
                    if selection.is_empty() {
                        b_floor = Some(floor);
                    }
                    let rows = store
                        .query(s, selection, floor..)
                        .unwrap_or_else(|e| panic!("{context}: {s} from its floor {floor}: {e}"));
                    (floor, rows)
                }
                // No barrier of the track survived: the model holds none of it either.
                Err(EngineError::UnknownTrack { .. }) => {
                    assert!(
                        matches!(
                            model.query(s, selection, ..),
                            Err(EngineError::UnknownTrack { .. })
                        ),
                        "{context}: stream {s} {selection:?} refused as never sealed"
                    );
                    continue;
                }
                Err(error) => panic!("{context}: stream {s} {selection:?}: {error}"),
            };
            let want: Vec<_> = model
                .query(s, selection, ..)
                .unwrap()
                .into_iter()
                .filter(|r| r.position >= from)
                .collect();
            assert!(
                got == want,
                "{context}: stream {s} {selection:?} from {from}: {} rows recovered, the \
                 model holds {}",
                got.len(),
                want.len()
            );
        }
    }
    b_floor
}

/// Boots `image` of a compacting store and checks it: findings that lose nothing (a retired
/// file may be removed, nothing else), no live file missing, whole barriers only, every
/// acknowledged seal kept, exactly the model's rows above the floors retention raised (and
/// those floors no higher than the retention allows), and a store that publishes, seals and
/// compacts again. Answers how many publishes the recovered state holds and `b`'s floor.
fn check_compacted_image(image: &SimFs, told: &Told, context: &str) -> (usize, Option<u64>) {
    let mut store = Store::open_in(sim(image), compacting_config(), &[])
        .unwrap_or_else(|e| panic!("{context}: reopen: {e}"));
    check_findings(&store, image, context, true);
    live_files_present(image, &store, context);
    assert!(
        image.list("tmp").unwrap().is_empty(),
        "{context}: a temp left"
    );
    let watermarks: Vec<u64> = STREAMS
        .iter()
        .map(|s| store.watermark(s, &[]).unwrap().unwrap_or(0))
        .collect();
    for &(s, watermark) in &told.sealed {
        assert!(
            watermark.unwrap_or(0) <= watermarks[s],
            "{context}: a seal of {} acknowledged at {watermark:?}, recovered {}",
            STREAMS[s],
            watermarks[s]
        );
    }
    let order = publish_order();
    let kept = order
        .iter()
        .take_while(|&&(s, position)| position <= watermarks[s])
        .count();
    assert!(
        order[kept..]
            .iter()
            .all(|&(s, position)| position > watermarks[s]),
        "{context}: watermarks {watermarks:?} are no prefix of the publish order"
    );
    assert!(
        kept <= told.published.len(),
        "{context}: {kept} publishes recovered, {} acknowledged",
        told.published.len()
    );
    let b_floor = check_rows_above_floors(&store, &watermarks, kept, context);
    // The store publishes, seals and compacts again, and answers what it sealed.
    let next = watermarks[0] + 1;
    let row = vec![Value::U64(0), Value::U64(1_000_000), Value::F64(-1.0)];
    store
        .publish("a", next, std::slice::from_ref(&row))
        .unwrap();
    let sealed = store.seal().unwrap();
    assert_eq!(sealed["a"], Some(next), "{context}");
    store
        .compact()
        .unwrap_or_else(|e| panic!("{context}: compact after reopen: {e}"));
    let back = store.query("a", &[], next..).unwrap();
    assert_eq!(back.len(), 1, "{context}");
    assert_eq!(back[0].values, row, "{context}");
    let all = store.query("a", &[], ..).unwrap();
    assert_eq!(
        all.len() as u64,
        watermarks[0] * LANES * ROWS_PER_LANE + 1,
        "{context}: stream a after the compaction"
    );
    (kept, b_floor)
}

#[derive(Debug, Default)]
struct CompactCensus {
    ops_probed: (u64, u64),
    steps_probed: (u64, u64),
    crashed: usize,
    retried: usize,
    unreached: usize,
    images: usize,
    within: std::collections::BTreeMap<Within, usize>,
    acknowledged_seals: usize,
    runs_with_removals_deferred: usize,
    deferred_polls: usize,
    reads: usize,
    floored_reads: usize,
    images_with_floor: usize,
    every_publish_kept: usize,
    fewer_kept: usize,
}

/// The uncrashed runs: how many operations (fewest, most) and compaction steps the scenario
/// takes, and that it runs clean, every read whole.
fn probe_compacting(mode: RenameMode, census: &mut CompactCensus) -> (u64, u64) {
    let (mut ops, mut steps) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        let fs = SimFs::with_rename_mode(mode);
        let vfs = Logged::traced(&fs);
        let store = Store::create_in(Arc::new(vfs.clone()), compacting_config(), &decls()).unwrap();
        let start = fs.ops();
        let (told, seen, n_steps) = compacting_scenario(&fs, store);
        assert!(told.publish_refused.is_none(), "{:?}", told.publish_refused);
        assert_eq!(told.seals_refused, 0);
        assert!(matches!(told.stopped, Some(Ok(()))), "{:?}", told.stopped);
        assert!(
            seen.wrong.is_empty(),
            "{mode:?} uncrashed: {:?}",
            seen.wrong
        );
        assert_eq!(seen.refused, 0, "{mode:?} uncrashed");
        let calls = vfs.calls();
        let merges = calls
            .iter()
            .filter(|c| c.what.starts_with("create tmp/"))
            .filter(|c| within(&calls, c.first).0 == Within::Merge)
            .count() as u64;
        // The metrics were asked before the stop: a step may still have been in flight, and
        // the supervisor may take one more tick's steps before it reads the stop (a loaded
        // machine once showed 15 merges for 13 steps counted). Every step counted was traced
        // as a merge's, and no more than those a tick can add besides: a barrier's temp taken
        // for a merge's would count every barrier's.
        let slack = 1 + u64::try_from(compacting_serve_config().compact_steps_per_tick).unwrap();
        assert!(
            (n_steps..=n_steps + slack).contains(&merges),
            "{mode:?}: {merges} temps traced as a merge's, {n_steps} steps taken"
        );
        census.runs_with_removals_deferred += usize::from(seen.deferred > 0);
        census.deferred_polls += seen.deferred;
        census.reads += seen.reads;
        census.floored_reads += seen.floored;
        let (kept, floor) =
            check_compacted_image(&fs.crash(), &told, &format!("{mode:?} uncrashed"));
        assert_eq!(kept, publish_order().len(), "the stop sealed everything");
        assert!(floor.is_some(), "{mode:?}: retention raised no floor");
        ops.push(fs.ops() - start);
        steps.push(n_steps);
    }
    let (least, most) = (*ops.iter().min().unwrap(), *ops.iter().max().unwrap());
    let widen = |(lo, hi): (u64, u64), new_lo: u64, new_hi: u64| {
        (
            if lo == 0 { new_lo } else { lo.min(new_lo) },
            hi.max(new_hi),
        )
    };
    census.ops_probed = widen(census.ops_probed, least, most);
    census.steps_probed = widen(
        census.steps_probed,
        *steps.iter().min().unwrap(),
        *steps.iter().max().unwrap(),
    );
    (least, most)
}

/// The acceptance line with compaction on: a crash at every operation of a served store that
/// compacts (steps written by the worker), sweeps (whole files retired) and reads on snapshots
/// (removals deferred under them) keeps every acknowledged row, loses nothing quarantined and
/// leaves no live file missing.
#[test]
fn a_crash_at_every_operation_of_served_compaction_keeps_every_acknowledged_row() {
    let started = Instant::now();
    let mut census = CompactCensus::default();
    for mode in MODES {
        let (least, most) = probe_compacting(mode, &mut census);
        assert!(census.steps_probed.0 >= 4, "{census:?}");
        for crash_op in 0..most {
            let attempts = if crash_op < least { 32 } else { 4 };
            let mut attempt = 0;
            let (fs, told, seen, calls, start) = loop {
                let fs = SimFs::with_rename_mode(mode);
                let vfs = Logged::traced(&fs);
                let store =
                    Store::create_in(Arc::new(vfs.clone()), compacting_config(), &decls()).unwrap();
                let start = fs.ops();
                fs.crash_at(start + crash_op);
                let (told, seen, _) = compacting_scenario(&fs, store);
                if fs.ops() > start + crash_op || attempt == attempts {
                    break (fs, told, seen, vfs.calls(), start);
                }
                attempt += 1;
                census.retried += 1;
            };
            let (where_, what) = within(&calls, start + crash_op);
            assert!(
                seen.wrong.is_empty(),
                "{mode:?} crash at op {crash_op} ({what}): {:?}",
                seen.wrong
            );
            census.reads += seen.reads;
            census.floored_reads += seen.floored;
            census.deferred_polls += seen.deferred;
            census.runs_with_removals_deferred += usize::from(seen.deferred > 0);
            if fs.ops() <= start + crash_op {
                assert!(crash_op >= least, "{mode:?}: op {crash_op} never reached");
                census.unreached += 1;
                continue;
            }
            census.crashed += 1;
            *census.within.entry(where_).or_default() += 1;
            census.acknowledged_seals += told.sealed.len();
            for (name, image) in images(&fs) {
                let context =
                    format!("{mode:?} crash at op {crash_op} ({where_:?}: {what}), image {name}");
                let (kept, floor) = check_compacted_image(&image, &told, &context);
                census.images += 1;
                census.images_with_floor += usize::from(floor.is_some());
                if kept == told.published.len() {
                    census.every_publish_kept += 1;
                } else {
                    census.fewer_kept += 1;
                }
            }
        }
    }
    eprintln!(
        "served compaction crash census: uncrashed runs of {}..={} operations and {}..={} \
         compaction steps; {} operations crashed ({} runs tried again, {} points unreached), \
         {} images checked; crash points by place: {:?}; {} seals acknowledged before a \
         crash, 0 lost; {} reads whole ({} from b's floor); runs that saw a removal deferred \
         under a snapshot: {} ({} polls); images with b's floor raised: {}; images holding \
         every acknowledged publish {}, fewer {}; {:.1?}",
        census.ops_probed.0,
        census.ops_probed.1,
        census.steps_probed.0,
        census.steps_probed.1,
        census.crashed,
        census.retried,
        census.unreached,
        census.images,
        census.within,
        census.acknowledged_seals,
        census.reads,
        census.floored_reads,
        census.runs_with_removals_deferred,
        census.deferred_polls,
        census.images_with_floor,
        census.every_publish_kept,
        census.fewer_kept,
        started.elapsed()
    );
    assert!(
        census.within.get(&Within::Merge).copied().unwrap_or(0) > 0,
        "{census:?}"
    );
    assert!(
        census.within.get(&Within::Barrier).copied().unwrap_or(0) > 0,
        "{census:?}"
    );
    assert!(census.runs_with_removals_deferred > 0, "{census:?}");
    assert!(census.images_with_floor > 0, "{census:?}");
}

/// Positions sealed (and compacted) on the store directly before it is served in the fault
/// test: enough for `b`'s floor to rise (the sweep a step runs first retires more).
const FAULT_SETUP: u64 = 14;

/// One run of the fault test (see there).
struct FaultRun {
    fs: SimFs,
    calls: Vec<Call>,
    told: Told,
    /// The operation count before the served seal, and how many operations its barrier took.
    start: u64,
    barrier_ops: u64,
    /// Whether a snapshot read answered `Poisoned` after the seal.
    poisoned: bool,
    steps: u64,
}

/// The store of the fault test: `FAULT_SETUP` positions of each stream, each sealed and
/// compacted on the store directly; then served, one more publish of each, and a seal whose
/// barrier grants the steps faulted (`fault`: at that many operations after the seal starts).
fn fault_run(mode: RenameMode, fault: Option<(u64, Fault)>) -> FaultRun {
    let fs = SimFs::with_rename_mode(mode);
    let vfs = Logged::traced(&fs);
    let mut store = Store::create_in(Arc::new(vfs.clone()), compacting_config(), &decls()).unwrap();
    let mut told = Told::default();
    for position in 1..=FAULT_SETUP {
        for (s, stream) in STREAMS.iter().enumerate() {
            store
                .publish(stream, position, &batch(s, position))
                .unwrap();
            told.published.push(((s, position), fs.ops()));
        }
        store.seal().unwrap();
        // The last two barriers left unmerged: the served one makes three, and a step.
        if position + 2 <= FAULT_SETUP {
            store.compact().unwrap();
        }
    }
    told.sealed.push((0, Some(FAULT_SETUP)));
    let steps_before = store.metrics().compaction_steps;
    let config = compacting_serve_config().seal_at_staged_share(None);
    let (mut start, mut poisoned, mut steps) = (0, false, 0);
    block_on(async {
        let mut served = Served::spawn(store, config);
        let position = FAULT_SETUP + 1;
        for (s, stream) in STREAMS.iter().enumerate() {
            served
                .publish(stream, position, batch(s, position))
                .await
                .unwrap();
            told.published.push(((s, position), fs.ops()));
        }
        start = fs.ops();
        if let Some((op, fault)) = fault {
            fs.fail_at(start + op, fault);
        }
        let sealed = served.seal("b", &[]).await;
        match sealed {
            Ok(watermark) => told.sealed.push((1, watermark)),
            Err(_) => told.seals_refused += 1,
        }
        // The steps the barrier granted run while nothing waits: until the store is poisoned
        // (a snapshot taken after says so) or nothing has moved for a while. "A while" is a
        // span of time, not a count of polls: on a loaded machine (CI building beside it) the
        // worker can sit descheduled for tens of milliseconds between two operations, and 20
        // polls of 1 ms once ended a run before its fault was reached.
        let deadline = Instant::now() + Duration::from_secs(5);
        let (mut last, mut moved) = (fs.ops(), Instant::now());
        while Instant::now() < deadline && moved.elapsed() < Duration::from_millis(250) {
            let read = served.read(|snapshot| snapshot.watermark("a", &[])).await;
            if matches!(read, Ok(Err(EngineError::Poisoned { .. }))) {
                poisoned = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
            if fs.ops() != last {
                (last, moved) = (fs.ops(), Instant::now());
            }
        }
        steps = served
            .metrics()
            .await
            .map_or(0, |m| m.compaction_steps - steps_before);
        told.stopped = Some(served.stop().await);
    });
    // The barrier's operations: up to its record's sync (a step may start before the seal's
    // answer is heard, so not the count then).
    let calls = vfs.calls();
    let barrier_ops = calls
        .iter()
        .find(|c| c.first >= start && c.what.starts_with("sync manifest-"))
        .map_or(0, |c| c.end - start);
    FaultRun {
        fs,
        calls,
        told,
        start,
        barrier_ops,
        poisoned,
        steps,
    }
}

/// The I/O-fault twin with compaction on: each operation after a served seal's barrier (the
/// compaction steps it grants, written by the worker, with their sweeps and removals on the
/// supervisor) fails once, with EIO and with ENOSPC. The store is poisoned (a snapshot read and
/// the stop answer so), and a reopen (of the live files, and of a crash after) finds every
/// acknowledged row.
#[test]
fn a_fault_at_every_operation_of_a_served_compaction_step_poisons_and_loses_nothing() {
    let started = Instant::now();
    let (mut faults, mut images, mut unreached, mut landing_refused) = (0, 0, 0, 0);
    let mut landed_in = std::collections::BTreeMap::<Within, usize>::new();
    for mode in MODES {
        let probe = fault_run(mode, None);
        assert!(!probe.poisoned, "{mode:?}");
        assert!(
            matches!(probe.told.stopped, Some(Ok(()))),
            "{:?}",
            probe.told.stopped
        );
        assert!(probe.steps >= 1, "{mode:?}: no step after the served seal");
        let end = probe.fs.ops() - probe.start;
        assert!(
            end > probe.barrier_ops + 8,
            "{mode:?}: {} operations after the barrier's",
            end - probe.barrier_ops
        );
        for op in probe.barrier_ops..end {
            for fault in [Fault::Eio, Fault::Enospc] {
                let run = fault_run(mode, Some((op, fault)));
                assert_eq!(
                    run.barrier_ops, probe.barrier_ops,
                    "{mode:?}: the barrier varies"
                );
                if run.fs.ops() <= run.start + op {
                    unreached += 1;
                    continue;
                }
                let (where_, what) = within(&run.calls, run.start + op);
                let context = format!("{mode:?} {fault:?} at op {op} ({where_:?}: {what})");
                // A fault in the barrier's landing (a removal it runs) is the seal's to hear.
                landing_refused += run.told.seals_refused;
                assert!(
                    run.poisoned,
                    "{context}: no snapshot answered Poisoned after the fault"
                );
                assert!(
                    matches!(run.told.stopped, Some(Err(EngineError::Poisoned { .. }))),
                    "{context}: the stop answered {:?}",
                    run.told.stopped
                );
                faults += 1;
                *landed_in.entry(where_).or_default() += 1;
                for (name, image) in [("live", run.fs.clone()), ("crash", run.fs.crash())] {
                    let context = format!("{context}, {name}");
                    let (kept, _) = check_compacted_image(&image, &run.told, &context);
                    assert_eq!(kept, run.told.published.len(), "{context}");
                    images += 1;
                }
            }
        }
    }
    eprintln!(
        "served compaction fault census: {faults} faults injected ({unreached} points past a \
         shorter run), by place {landed_in:?}; {landing_refused} seals refused (a fault in \
         the barrier's landing, after its record); {images} reopens checked, every acknowledged \
         row kept; {:.1?}",
        started.elapsed()
    );
    assert!(landed_in.get(&Within::Merge).copied().unwrap_or(0) > 0);
}
