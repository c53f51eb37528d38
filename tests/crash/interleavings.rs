//! The seed's three crash interleavings of the seal path, each produced by the real two-phase
//! write and never planted: `Store::seal` on the simulated file system, crashed at the
//! operation a log of the seal's own calls names (the segment's rename; the manifest append;
//! the manifest's sync, with the frame torn at several lengths), in both rename modes, under a
//! plain crash and the images that keep more (each prefix of the directory operations a
//! journal may have committed; the frame torn).
//!
//! Each crash image is then booted and must: report every file the crash left and keep it in
//! quarantine byte for byte as the crash left it (read from the image before boot), remove
//! nothing but a second name of bytes it keeps, serve every barrier beneath exactly as the
//! store did before the crashed seal and as a `MemorySeries` fed the same publishes does, take
//! the next barriers under names above every name seen (quarantined ones included), and boot a
//! second time with its quarantine unchanged. A crash point is checked to be reached (the operation counter moved past it, and
//! the call it landed on is the one named), so a refactor that moves the operations fails here
//! rather than passing without crashing anything.

use std::collections::{BTreeMap, BTreeSet};
use std::error::Error;
use std::fmt::Write as _;
use std::io;
use std::ops::Bound;
use std::sync::{Arc, Mutex};

use strata::recover::{Action, Finding, FindingKind};
use strata::segment::vfs::{DirEntry, Mapped, RenameMode, SimFs, Vfs, VfsFile, VfsLock};
use strata::{
    Aggregate, Config, EngineError, FieldKind, FieldStat, MemorySeries, Row, Series, Store,
    StoredRow, Stream, StreamDecl, Survey, Value,
};

use crate::census;

/// Both ways a file system can rename without replacing (the `it` crate's `support::MODES`).
const MODES: [RenameMode; 2] = [RenameMode::Noreplace, RenameMode::LinkUnlink];

const STREAM: &str = "series";
/// Barriers sealed and acknowledged before the crashed one, at positions `0..BENEATH`.
const BENEATH: u64 = 3;
/// The crashed barrier's position. After boot it is published again (a host replays what was
/// not acknowledged) and one more barrier follows it.
const CRASHED: u64 = BENEATH;
/// Rows `rows_at` publishes at each position: 4 of track `a`, 2 of track `b`.
const ROWS_PER_POSITION: usize = 6;

fn decl() -> StreamDecl {
    Stream::new(STREAM)
        .field("run", FieldKind::Str)
        .field("t", FieldKind::U64)
        .field("v", FieldKind::I64)
        .track(["run"])
        .axis("t")
        .ladder(4, 2)
        .build()
        .unwrap()
}

fn config() -> Config {
    Config::default()
}

/// The rows published at `position`: two partitions, so the barrier's one file holds both.
fn rows_at(position: u64) -> Vec<Row> {
    let row = |run: &str, t: u64, v: u64| {
        let v = i64::try_from(v).unwrap();
        vec![Value::Str(run.into()), Value::U64(t), Value::I64(v)]
    };
    let t0 = 16 * position;
    let mut rows: Vec<Row> = (0..4).map(|i| row("a", t0 + 4 * i, t0 + 4 * i)).collect();
    rows.extend([2, 10].map(|dt| row("b", t0 + dt, 1000 + t0 + dt)));
    assert_eq!(rows.len(), ROWS_PER_POSITION);
    rows
}

// ---------------------------------------------------------------------------------------------
// A logged file system: the simulated one, with each numbered call's operations and what it
// touched, so a crash point is named by the call it falls on, not by a bare number.

#[derive(Clone, Debug, PartialEq, Eq)]
struct Call {
    /// The operation numbers the call took: `first..end` (a link-unlink rename takes two).
    first: u64,
    end: u64,
    what: String,
    /// The bytes a `write_all` was given (0 for any other call).
    n_bytes: usize,
}

#[derive(Clone, Debug)]
struct Logged {
    fs: SimFs,
    log: Arc<Mutex<Vec<Call>>>,
}

impl Logged {
    fn new(fs: &SimFs) -> Logged {
        Logged {
            fs: fs.clone(),
            log: Arc::default(),
        }
    }

    fn note<T>(&self, what: impl FnOnce() -> String, call: impl FnOnce() -> T) -> T {
        note(&self.fs, &self.log, what, 0, call)
    }

    fn calls(&self) -> Vec<Call> {
        self.log.lock().unwrap().clone()
    }
}

/// Runs `call`, logging it if it took a numbered operation (a crashed one counts: the
/// simulated file system numbers every attempt).
fn note<T>(
    fs: &SimFs,
    log: &Mutex<Vec<Call>>,
    what: impl FnOnce() -> String,
    n_bytes: usize,
    call: impl FnOnce() -> T,
) -> T {
    let first = fs.ops();
    let out = call();
    let end = fs.ops();
    if end > first {
        log.lock().unwrap().push(Call {
            first,
            end,
            what: what(),
            n_bytes,
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
        let file = &mut self.file;
        let path = &self.path;
        note(
            &self.fs,
            &self.log,
            || format!("write {path}"),
            bytes.len(),
            || file.write_all(bytes),
        )
    }

    fn sync_data(&mut self) -> io::Result<()> {
        let file = &mut self.file;
        let path = &self.path;
        note(
            &self.fs,
            &self.log,
            || format!("sync {path}"),
            0,
            || file.sync_data(),
        )
    }

    fn set_len(&mut self, len: u64) -> io::Result<()> {
        let file = &mut self.file;
        let path = &self.path;
        note(
            &self.fs,
            &self.log,
            || format!("set_len {path}"),
            0,
            || file.set_len(len),
        )
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
        let file = self.note(|| format!("create {path}"), || self.fs.create(path));
        self.file(path, file)
    }

    fn open_append(&self, path: &str) -> io::Result<Box<dyn VfsFile>> {
        let file = self.fs.open_append(path);
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

// ---------------------------------------------------------------------------------------------
// Reads: every answer of the store and of the model, rendered whole, so two are compared at once.

/// The reads compared: the store's and the model's own methods, under one name each.
trait Reads {
    fn rows(&self, selection: &[&str]) -> Result<Vec<StoredRow>, EngineError>;
    fn stat(
        &self,
        selection: &[&str],
        axis: (Bound<u64>, Bound<u64>),
        aggregate: Aggregate,
    ) -> Result<Vec<FieldStat>, EngineError>;
    fn buckets(&self, selection: &[&str], budget: u64) -> Result<Survey, EngineError>;
}

impl Reads for Store {
    fn rows(&self, selection: &[&str]) -> Result<Vec<StoredRow>, EngineError> {
        self.query(STREAM, selection, ..)
    }

    fn stat(
        &self,
        selection: &[&str],
        axis: (Bound<u64>, Bound<u64>),
        aggregate: Aggregate,
    ) -> Result<Vec<FieldStat>, EngineError> {
        self.fold(STREAM, selection, axis, aggregate)
    }

    fn buckets(&self, selection: &[&str], budget: u64) -> Result<Survey, EngineError> {
        self.survey(STREAM, selection, .., budget)
    }
}

impl Reads for MemorySeries {
    fn rows(&self, selection: &[&str]) -> Result<Vec<StoredRow>, EngineError> {
        self.query(STREAM, selection, ..)
    }

    fn stat(
        &self,
        selection: &[&str],
        axis: (Bound<u64>, Bound<u64>),
        aggregate: Aggregate,
    ) -> Result<Vec<FieldStat>, EngineError> {
        self.fold(STREAM, selection, axis, aggregate)
    }

    fn buckets(&self, selection: &[&str], budget: u64) -> Result<Survey, EngineError> {
        self.survey(STREAM, selection, .., budget)
    }
}

/// Every read the test compares: rows, level folds and percentiles over the whole axis and
/// over a range cutting cells, and surveys at two budgets, for every partition and both.
fn answers(reads: &dyn Reads) -> String {
    let aggregates = [
        Aggregate::Count,
        Aggregate::Sum,
        Aggregate::Min,
        Aggregate::Max,
        Aggregate::Mean,
        Aggregate::p(0),
        Aggregate::p(50),
        Aggregate::p(100),
    ];
    let ranges = [
        (Bound::Unbounded, Bound::Unbounded),
        (Bound::Included(10), Bound::Included(41)),
    ];
    let mut out = String::new();
    for selection in [&[][..], &["a"], &["b"]] {
        writeln!(out, "query {selection:?}: {:?}", reads.rows(selection)).unwrap();
        for range in ranges {
            for aggregate in aggregates {
                let stat = reads.stat(selection, range, aggregate);
                writeln!(out, "fold {selection:?} {range:?} {aggregate}: {stat:?}").unwrap();
            }
        }
        for budget in [8, 64] {
            let survey = reads.buckets(selection, budget);
            writeln!(out, "survey {selection:?} {budget}: {survey:?}").unwrap();
        }
    }
    out
}

/// The model fed the barriers at positions `0..=last`, each sealed.
fn model_through(last: u64) -> MemorySeries {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let mut model = MemorySeries::new(&[decl()]);
    runtime.block_on(async {
        for position in 0..=last {
            model
                .publish(STREAM, position, rows_at(position))
                .await
                .unwrap();
            model.seal(STREAM, &[]).await.unwrap();
        }
    });
    model
}

// ---------------------------------------------------------------------------------------------
// The crash: a seal crashed at the call the interleaving names.

/// Where in a seal the crash falls: the call it lands on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Point {
    /// The segment's rename: its temp is written and synced, and has no final name yet.
    Rename,
    /// The directory sync after the rename: the rename done, its new name not yet durable.
    SegDirSync,
    /// The manifest append: the segment is in place and durable, no frame claims it.
    Append,
    /// The manifest's sync: the frame is written and not durable, so it can reach the disk torn.
    ManifestSync,
}

impl Point {
    /// What the call the crash must land on is, for the seal writing `segment`.
    fn expected(self, segment: &str, manifest: &str) -> String {
        match self {
            Point::Rename => format!("rename tmp/{segment} seg/{segment}"),
            Point::SegDirSync => "sync_dir seg".to_owned(),
            Point::Append => format!("write {manifest}"),
            Point::ManifestSync => format!("sync {manifest}"),
        }
    }

    /// The index of the call in `calls` (a whole seal's, uncrashed) the crash lands on, with
    /// what must precede it asserted: the protocol's order is what makes the interleaving.
    fn pick(self, calls: &[Call], segment: &str, manifest: &str) -> usize {
        let whats: Vec<&str> = calls.iter().map(|c| c.what.as_str()).collect();
        let find = |what: &str| {
            whats
                .iter()
                .position(|w| *w == what)
                .unwrap_or_else(|| panic!("the seal makes no call {what:?}: {whats:#?}"))
        };
        let rename = find(&Point::Rename.expected(segment, manifest));
        // Written and synced before the rename; the rename's directory syncs, then the frame
        // and its sync, straight after it.
        assert_eq!(
            whats[rename - 1],
            format!("sync tmp/{segment}"),
            "{whats:#?}"
        );
        assert!(
            whats[..rename - 1]
                .iter()
                .any(|w| *w == format!("write tmp/{segment}")),
            "{whats:#?}"
        );
        assert_eq!(
            whats[rename + 1..rename + 5],
            [
                "sync_dir seg",
                "sync_dir tmp",
                &format!("write {manifest}"),
                &format!("sync {manifest}"),
            ],
            "{whats:#?}"
        );
        let picked = find(&self.expected(segment, manifest));
        assert!(picked >= rename);
        picked
    }
}

/// A seal crashed at one point, and what the store held before it.
struct Crashed {
    mode: RenameMode,
    point: Point,
    /// The crashed process's file system: its crash images are what a disk could keep.
    fs: SimFs,
    /// The call the crash landed on.
    at: Call,
    /// The crash's operation, counted from the seal's first, and the seal's operations.
    op_in_seal: u64,
    n_seal_ops: u64,
    /// The crashed seal's segment file name (`000000000004.seg`), and the bytes the seal
    /// gives it uncrashed.
    segment: String,
    segment_bytes: Vec<u8>,
    /// The bytes of the manifest frame the seal appends.
    n_frame_bytes: usize,
    /// What the store answered before the crashed seal.
    before: String,
    /// Names of the live files before the crashed seal, and the highest name issued.
    live_before: BTreeSet<u64>,
    name_high: u64,
    /// The manifest's name and its bytes before the crashed seal (all durable).
    manifest: String,
    manifest_before: Vec<u8>,
}

impl Crashed {
    fn context(&self, image: &str) -> String {
        format!(
            "{:?}, {:?}: crash at op {} of the seal's {} ({}), image {image} (reproduce: \
             cargo test --test crash interleavings::)",
            self.point, self.mode, self.op_in_seal, self.n_seal_ops, self.at.what
        )
    }
}

/// A store on `vfs` holding the barriers beneath, with the crashed barrier's rows staged.
fn staged(vfs: &Logged) -> Store {
    let mut store = Store::create_in(Arc::new(vfs.clone()), config(), &[decl()]).unwrap();
    for position in 0..BENEATH {
        store.publish(STREAM, position, &rows_at(position)).unwrap();
        store.seal().unwrap();
    }
    store.publish(STREAM, CRASHED, &rows_at(CRASHED)).unwrap();
    store
}

fn manifest_name(fs: &SimFs) -> String {
    let names: Vec<String> = fs
        .list("")
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .filter(|n| n.starts_with("manifest-"))
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");
    names[0].clone()
}

/// Whether `error` was caused by the simulated crash (somewhere down its sources).
fn caused_by_crash(error: &(dyn Error + 'static)) -> bool {
    let mut cause = Some(error);
    while let Some(e) = cause {
        if e.downcast_ref::<io::Error>().is_some_and(SimFs::is_crash) {
            return true;
        }
        cause = e.source();
    }
    false
}

/// Runs the seal uncrashed to find the call `point` names, then again crashed there.
fn crash_seal(mode: RenameMode, point: Point) -> Crashed {
    let fs = SimFs::with_rename_mode(mode);
    let vfs = Logged::new(&fs);
    let mut probe = staged(&vfs);
    let manifest = manifest_name(&fs);
    let (seal_first_call, seal_first_op) = (vfs.calls().len(), fs.ops());
    probe.seal().unwrap();
    let n_seal_ops = fs.ops() - seal_first_op;
    let calls = vfs.calls()[seal_first_call..].to_vec();
    drop(probe);
    let segment = calls
        .iter()
        .find_map(|c| c.what.strip_prefix("create tmp/"))
        .expect("the seal creates a temp")
        .to_owned();
    let segment_bytes = fs.durable_bytes(&format!("seg/{segment}")).unwrap();
    let at = calls[point.pick(&calls, &segment, &manifest)].clone();
    let n_frame_bytes = calls
        .iter()
        .find(|c| c.what == format!("write {manifest}"))
        .unwrap()
        .n_bytes;

    // The same run, crashed at that call.
    let fs = SimFs::with_rename_mode(mode);
    let vfs = Logged::new(&fs);
    let mut store = staged(&vfs);
    assert_eq!(fs.ops(), seal_first_op, "the crashed run repeats the probe");
    let before = answers(&store);
    assert_eq!(before, answers(&model_through(BENEATH - 1)));
    let n_rows = store.query(STREAM, &[], ..).unwrap().len();
    assert_eq!(n_rows, ROWS_PER_POSITION * BENEATH as usize);
    assert!(fs.list("tmp").unwrap().is_empty());
    assert!(fs.list("quarantine").unwrap().is_empty());
    let manifest_before = fs.durable_bytes(&manifest).unwrap();
    assert_eq!(Some(&manifest_before), fs.live_bytes(&manifest).as_ref());
    let live_before = store.catalog().live_files().map(|f| f.name).collect();
    let name_high = store.catalog().name_high();

    fs.crash_at(at.first);
    let refused = store.seal().unwrap_err();
    assert!(caused_by_crash(&refused), "{point:?}: {refused}");
    // The crash point was reached, on the call named.
    assert!(
        fs.ops() > at.first,
        "{point:?}: the crash was never reached"
    );
    // (A crashed link-unlink rename stops at its first operation, so only where it starts
    // and what it is are compared.)
    let landed = vfs
        .calls()
        .into_iter()
        .find(|c| c.first <= at.first && at.first < c.end)
        .map(|c| (c.first, c.what));
    assert_eq!(
        landed,
        Some((at.first, at.what.clone())),
        "{point:?}, {mode:?}"
    );
    drop(store);
    Crashed {
        mode,
        point,
        fs,
        op_in_seal: at.first - seal_first_op,
        at,
        n_seal_ops,
        segment,
        segment_bytes,
        n_frame_bytes,
        before,
        live_before,
        name_high,
        manifest,
        manifest_before,
    }
}

/// The images a crash at `c` is booted from: at the manifest's sync the frame torn at 1 byte,
/// half and all but one byte of it; elsewhere a plain crash and every prefix of the
/// directory operations since the last directory sync kept.
fn images(c: &Crashed) -> Vec<(String, SimFs)> {
    if c.point == Point::ManifestSync {
        assert!(c.n_frame_bytes >= 3, "a frame of {} bytes", c.n_frame_bytes);
        return [1, c.n_frame_bytes / 2, c.n_frame_bytes - 1]
            .into_iter()
            .map(|keep| {
                let label = format!("frame torn after {keep} of {} bytes", c.n_frame_bytes);
                let image = c.fs.crash_tearing(keep);
                let n_bytes = image.live_bytes(&c.manifest).unwrap().len();
                assert_eq!(n_bytes, c.manifest_before.len() + keep, "{label}");
                (label, image)
            })
            .collect();
    }
    let mut images = vec![("crash".to_owned(), c.fs.crash())];
    for n in 1..=c.fs.recent_dir_ops() {
        images.push((format!("{n} dir ops kept"), c.fs.crash_keeping_dir_ops(n)));
    }
    images
}

// ---------------------------------------------------------------------------------------------
// One crash image booted and checked.

/// What boot kept of one image: each file it reported and where it went.
#[derive(Debug)]
struct Kept {
    kind: FindingKind,
    file: String,
    action: Action,
}

/// The number a store file or quarantined file is named by (`seg-000000000004.seg.1` is 4),
/// parsed here rather than by the code under test.
fn number_in(name: &str) -> Option<u64> {
    let name = name
        .strip_prefix("tmp-")
        .or_else(|| name.strip_prefix("seg-"))
        .unwrap_or(name);
    let digits: String = name.chars().take_while(char::is_ascii_digit).collect();
    (digits.len() == 12).then(|| digits.parse().unwrap())
}

/// The files of `fs` under `dir` with their bytes.
fn files(fs: &SimFs, dir: &str) -> BTreeMap<String, Vec<u8>> {
    fs.list(dir)
        .unwrap()
        .into_iter()
        .map(|e| {
            assert!(!e.is_dir, "{dir}/{}", e.name);
            let path = format!("{dir}/{}", e.name);
            let bytes = fs.live_bytes(&path).unwrap();
            (path, bytes)
        })
        .collect()
}

/// What a crash left in `image` beyond what the store held before it: every temp, every
/// segment no record claimed, and the manifest's bytes past its acknowledged prefix.
fn left_by_crash(c: &Crashed, image: &SimFs, context: &str) -> BTreeMap<String, Vec<u8>> {
    assert!(
        files(image, "quarantine").is_empty(),
        "{context}: quarantine before boot"
    );
    let mut left = files(image, "tmp");
    for (path, bytes) in files(image, "seg") {
        let number = number_in(path.strip_prefix("seg/").unwrap()).unwrap();
        if !c.live_before.contains(&number) {
            left.insert(path, bytes);
        }
    }
    // The two-phase write leaves the crashed seal's file whole wherever it left it (these
    // crashes all come after its sync), never a prefix of it.
    for (path, bytes) in &left {
        assert_eq!(
            path.rsplit('/').next(),
            Some(c.segment.as_str()),
            "{context}"
        );
        assert!(
            bytes == &c.segment_bytes,
            "{context}: {path} is not the whole segment"
        );
    }
    let manifest = image.live_bytes(&c.manifest).unwrap();
    assert!(
        manifest.starts_with(&c.manifest_before),
        "{context}: the acknowledged manifest changed"
    );
    if manifest.len() > c.manifest_before.len() {
        left.insert(
            c.manifest.clone(),
            manifest[c.manifest_before.len()..].to_vec(),
        );
    }
    left
}

/// Checks that boot reported each file `left` holds and kept its bytes in quarantine as the
/// crash left them (or dropped a second name of bytes kept so), and reported nothing else.
fn check_kept(
    c: &Crashed,
    image: &SimFs,
    left: &BTreeMap<String, Vec<u8>>,
    findings: &[Finding],
    context: &str,
) {
    let quarantined = |name: &str| image.live_bytes(&format!("quarantine/{name}"));
    for (path, bytes) in left {
        let finding = findings
            .iter()
            .find(|f| f.file == *path)
            .unwrap_or_else(|| panic!("{context}: boot does not report {path}: {findings:#?}"));
        let expected_kind = if path == &c.manifest {
            assert_eq!(finding.offset, Some(c.manifest_before.len() as u64));
            assert_eq!(finding.bytes, Some(bytes.len() as u64));
            FindingKind::TornManifestTail
        } else if path.starts_with("tmp/") {
            FindingKind::OrphanTemp
        } else {
            FindingKind::UnrecordedSegment
        };
        assert_eq!(finding.kind, expected_kind, "{context}: {finding}");
        match &finding.action {
            Action::Quarantine { to } | Action::AlreadyQuarantined { at: to } => assert!(
                quarantined(to).as_ref() == Some(bytes),
                "{context}: {finding}: quarantine/{to} is not what the crash left"
            ),
            Action::DropSecondName { of } => assert!(
                left.get(of) == Some(bytes),
                "{context}: {finding}: {of} does not hold the same bytes"
            ),
            other => panic!("{context}: {finding}: {other}"),
        }
    }
    for finding in findings {
        assert!(
            left.contains_key(&finding.file),
            "{context}: boot reports what the crash did not leave: {finding}"
        );
    }
    // Quarantine holds exactly what boot said it moved there.
    let moved: BTreeSet<String> = findings
        .iter()
        .filter_map(|f| match &f.action {
            Action::Quarantine { to } => Some(format!("quarantine/{to}")),
            _ => None,
        })
        .collect();
    let kept: BTreeSet<String> = files(image, "quarantine").into_keys().collect();
    assert_eq!(kept, moved, "{context}");
}

/// Boots one crash image and checks everything the interleaving promises; answers what boot
/// kept.
fn check_image(c: &Crashed, label: &str, image: &SimFs, after: &str) -> Vec<Kept> {
    let context = c.context(label);
    let left = left_by_crash(c, image, &context);
    let mut names_seen: Vec<u64> = left
        .keys()
        .filter_map(|p| p.split('/').nth(1))
        .filter_map(number_in)
        .collect();
    names_seen.push(c.name_high);

    let mut store = Store::open_in(Arc::new(image.clone()), config(), &[decl()]).unwrap();
    let findings = store.boot_report().findings.clone();
    check_kept(c, image, &left, &findings, &context);
    // Nothing left behind, nothing removed: tmp/ empty, seg/ exactly the files live before,
    // the manifest cut back to its acknowledged bytes.
    assert!(files(image, "tmp").is_empty(), "{context}");
    let seg: BTreeSet<u64> = files(image, "seg")
        .keys()
        .map(|p| number_in(p.strip_prefix("seg/").unwrap()).unwrap())
        .collect();
    assert_eq!(seg, c.live_before, "{context}");
    assert_eq!(
        image.live_bytes(&c.manifest).as_ref(),
        Some(&c.manifest_before),
        "{context}"
    );
    let quarantine = files(image, "quarantine");
    names_seen.extend(
        quarantine
            .keys()
            .filter_map(|p| number_in(p.strip_prefix("quarantine/").unwrap())),
    );
    let name_seen_max = names_seen.into_iter().max().unwrap();

    // Every barrier beneath, exactly.
    assert_eq!(answers(&store), c.before, "{context}");
    assert_eq!(
        store.watermark(STREAM, &[]).unwrap(),
        Some(BENEATH - 1),
        "{context}"
    );

    // The next barriers: the crashed one published again, and one more.
    for position in CRASHED..=CRASHED + 1 {
        store.publish(STREAM, position, &rows_at(position)).unwrap();
        store.seal().unwrap();
    }
    let new: Vec<u64> = store
        .catalog()
        .live_files()
        .map(|f| f.name)
        .filter(|n| !c.live_before.contains(n))
        .collect();
    assert_eq!(new.len(), 2, "{context}: {new:?}");
    assert!(
        new.iter().all(|&n| n > name_seen_max),
        "{context}: new files {new:?}, a name seen {name_seen_max}"
    );
    assert_eq!(answers(&store), after, "{context}");
    let n_rows = store.query(STREAM, &[], ..).unwrap().len();
    assert_eq!(n_rows, ROWS_PER_POSITION * (CRASHED as usize + 2));
    drop(store);

    // A second boot keeps the quarantine as it was and finds nothing new.
    let store = Store::open_in(Arc::new(image.clone()), config(), &[decl()]).unwrap();
    assert!(
        store.boot_report().findings.is_empty(),
        "{context}: second boot: {:#?}",
        store.boot_report().findings
    );
    assert_eq!(files(image, "quarantine"), quarantine, "{context}");
    assert_eq!(answers(&store), after, "{context}: second boot");

    findings
        .into_iter()
        .map(|f| Kept {
            kind: f.kind,
            file: f.file,
            action: f.action,
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// The three interleavings.

/// One image's outcome, for the assertions of each test and its census.
struct Outcome {
    mode: RenameMode,
    point: Point,
    segment: String,
    label: String,
    kept: Vec<Kept>,
}

impl Outcome {
    /// Whether boot quarantined `file` as `kind`.
    fn quarantined(&self, kind: FindingKind, file: &str) -> bool {
        self.kept.iter().any(|k| {
            k.kind == kind && k.file == file && matches!(k.action, Action::Quarantine { .. })
        })
    }
}

/// Crashes the seal at each of `points` in both rename modes, boots every image and checks it.
fn run(points: &[Point]) -> (Vec<Outcome>, Vec<String>) {
    let after = answers(&model_through(CRASHED + 1));
    let mut outcomes = Vec::new();
    let mut crash_points = Vec::new();
    for mode in MODES {
        for &point in points {
            let c = crash_seal(mode, point);
            crash_points.push(format!(
                "{mode:?} op {} of {} ({})",
                c.op_in_seal, c.n_seal_ops, c.at.what
            ));
            for (label, image) in images(&c) {
                let kept = check_image(&c, &label, &image, &after);
                outcomes.push(Outcome {
                    mode,
                    point,
                    segment: c.segment.clone(),
                    label,
                    kept,
                });
            }
        }
    }
    (outcomes, crash_points)
}

/// The census line of one interleaving: its crash points, the images booted and what each
/// quarantined.
fn report(name: &str, outcomes: &[Outcome], crash_points: &[String]) {
    let mut kept: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for o in outcomes {
        let what = if o.kept.is_empty() {
            "nothing on disk to keep".to_owned()
        } else {
            o.kept
                .iter()
                .map(|k| format!("{} {} -> {}", k.kind, k.file, k.action))
                .collect::<Vec<_>>()
                .join("; ")
        };
        kept.entry(what)
            .or_default()
            .push(format!("{:?}/{:?}/{}", o.mode, o.point, o.label));
    }
    let kept: Vec<String> = kept
        .into_iter()
        .map(|(what, images)| format!("[{what}] x{} ({})", images.len(), images.join(", ")))
        .collect();
    census(&format!(
        "interleaving {name}: modes {MODES:?}; crash points {}; {} images booted twice each; \
         quarantined: {}",
        crash_points.join(", "),
        outcomes.len(),
        kept.join(" | ")
    ));
}

#[test]
fn post_write_pre_rename_quarantines_the_synced_temp_and_takes_the_next_barrier() {
    let (outcomes, crash_points) = run(&[Point::Rename]);
    report("post-write/pre-rename", &outcomes, &crash_points);
    for mode in MODES {
        // The temp's name reaches the disk only where its directory entry did (a journal
        // keeping the create): there it is an orphan temp, kept whole.
        assert!(
            outcomes.iter().any(|o| o.mode == mode
                && o.quarantined(FindingKind::OrphanTemp, &format!("tmp/{}", o.segment))),
            "{mode:?}: no image kept the synced temp"
        );
    }
}

#[test]
fn post_rename_pre_record_quarantines_the_unclaimed_segment_and_takes_the_next_barrier() {
    let (outcomes, crash_points) = run(&[Point::Append, Point::SegDirSync]);
    report("post-rename/pre-record", &outcomes, &crash_points);
    for mode in MODES {
        for point in [Point::Append, Point::SegDirSync] {
            let unclaimed = |o: &Outcome| {
                o.quarantined(
                    FindingKind::UnrecordedSegment,
                    &format!("seg/{}", o.segment),
                )
            };
            let here: Vec<&Outcome> = outcomes
                .iter()
                .filter(|o| o.mode == mode && o.point == point)
                .collect();
            if point == Point::Append {
                // The rename and both directory syncs are durable: every image holds the
                // final name and no frame for it.
                assert!(
                    !here.is_empty() && here.iter().all(|o| unclaimed(o)),
                    "{mode:?}"
                );
            } else {
                assert!(here.iter().any(|o| unclaimed(o)), "{mode:?}, {point:?}");
            }
        }
    }
}

#[test]
fn a_manifest_frame_torn_mid_entry_is_quarantined_with_its_segment_and_cut() {
    let (outcomes, crash_points) = run(&[Point::ManifestSync]);
    report("record torn mid-entry", &outcomes, &crash_points);
    assert_eq!(outcomes.len(), MODES.len() * 3);
    for o in &outcomes {
        let manifest = o
            .kept
            .iter()
            .find(|k| k.kind == FindingKind::TornManifestTail)
            .map(|k| k.file.clone());
        let manifest = manifest.unwrap_or_else(|| panic!("{}: no torn tail", o.label));
        assert!(
            o.quarantined(FindingKind::TornManifestTail, &manifest),
            "{:?} {}",
            o.mode,
            o.label
        );
        assert!(
            o.quarantined(
                FindingKind::UnrecordedSegment,
                &format!("seg/{}", o.segment)
            ),
            "{:?} {}",
            o.mode,
            o.label
        );
    }
}
