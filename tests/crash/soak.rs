//! A process-kill soak on the real file system (#16, item 6). A child process ingests with a
//! short seal cadence while compaction runs, and is SIGKILLed at a random moment; the parent
//! then reopens the store in-process and checks it against what the child acknowledged: the
//! watermark is the last acknowledged one (or, for a kill inside a seal, that barrier whole or
//! not at all), every row up to it is exactly the series and nothing lies beyond, boot's
//! findings lose nothing, quarantine only grows, and every file name the next child creates is
//! above every name the crash left (in `seg/`, `tmp/` and `quarantine/`). The next cycle's
//! child carries on from there on the same store, so files, compactions, manifest rewrites and
//! quarantined evidence accumulate across the cycles.
//!
//! The cycles alternate between two children on the one store:
//!
//! - **direct**: the child drives a `Store` itself, a seal then a compaction step after every
//!   barrier, on its own thread: kills land inside a seal or a step by the child's own lines.
//! - **served**: the child drives the store through `Served` (publishes and seals through the
//!   handle), so compaction steps run in the background on `Served`'s writer thread, between
//!   and behind the child's barriers. The child's file system is `RealFs` behind a thin watch
//!   that prints a line when a numbered file is created and when the manifest is synced (the
//!   frame that claims a write): a kill after a segment temp was created outside the child's
//!   seal windows and before the manifest frame claiming it was synced landed inside a
//!   background merge.
//!
//! The child is this same test, re-executed with `STRATA_SOAK_CHILD` naming the store: so the
//! test binary needs no second entry point, and the parent run is the one that asserts. A child
//! never outlives its parent: the parent kills and reaps it on every path out (a guard's drop,
//! so a failed check kills it too), the child exits when its standard input (a pipe from the
//! parent) reaches its end, which it does when the parent dies however it dies, and a child
//! still alive after `CHILD_LIFETIME_MAX` stops by itself. A failed soak keeps its store and
//! prints where.
//!
//! `STRATA_SOAK_CYCLES=N` runs N cycles instead of CI's `CYCLES_DEFAULT`; `STRATA_SOAK_SEED=S`
//! moves every kill moment (a failure names both).

use std::collections::BTreeMap;
use std::hash::{DefaultHasher, Hasher};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use strata::recover::{Action, FindingKind, quarantined_number};
use strata::segment::names::{NumberedName, QUARANTINE_DIR, SEG_DIR, TMP_DIR};
use strata::segment::vfs::{DirEntry, Mapped, RealFs, RenameMode, Vfs, VfsFile, VfsLock};
use strata::{Config, FieldKind, Series, ServeConfig, Served, Store, Stream, StreamDecl, Value};

/// Set in a child's environment to the store it ingests into.
const CHILD_ENV: &str = "STRATA_SOAK_CHILD";
/// Set in a child's environment to how it drives the store: `direct` or `served`.
const MODE_ENV: &str = "STRATA_SOAK_MODE";
/// How many cycles to run, for a longer local soak.
const CYCLES_ENV: &str = "STRATA_SOAK_CYCLES";
/// The seed of the kill moments.
const SEED_ENV: &str = "STRATA_SOAK_SEED";
/// CI's cycles, half of each mode (the issue asks at least 100). Measured in a debug build on
/// this 2-core machine, shared with other sessions' builds: 5.2 to 5.5 s, alone or alongside
/// the other crash tests (all of `cargo test --test crash` in 13 s), while its disk synced
/// fast (a barrier's period about 3 ms); 25 s, alone or alongside them (the suite in 48 s),
/// while other work kept the disk busy and a period took about 30 ms. The time follows the
/// disk's syncs, not the CPU: the census prints the seconds and the period.
const CYCLES_DEFAULT: u64 = 160;
const SEED_DEFAULT: u64 = 0x5eed_0016;
/// The test's full name, which the parent passes to the child's libtest as an exact filter.
const TEST_NAME: &str = "soak::sigkill_mid_seal_or_compaction_loses_nothing_acknowledged";
/// When a kill lands: after the child began its barrier number `KILL_BARRIER_MIN..=MAX`, at a
/// uniformly drawn point of one period (the time from the child's previous barrier to this
/// one: a seal, compaction and staging the next rows). Measured in the child's own pace, so
/// that kills land in every phase however fast the disk syncs, and a child writes at most a
/// few barriers a cycle however long its syncs take or however short: the rows every cycle
/// verifies grow with the cycles, not with the disk's speed.
const KILL_BARRIER_MIN: u64 = 2;
const KILL_BARRIER_MAX: u64 = 5;
/// How long a child may go without a line before the soak gives up on it.
const CHILD_SILENT_MAX: Duration = Duration::from_secs(30);
/// Rows per barrier: few, so that a barrier's syncs, not staging, take most of the child's time
/// and most kills land inside a seal or a compaction step.
const ROWS_PER_BARRIER: u64 = 48;
/// A backstop: a child still alive after this was never killed (its parent could neither kill
/// it nor close its standard input): it stops by itself.
const CHILD_LIFETIME_MAX: Duration = Duration::from_secs(60);
/// The fewest kills that must land inside a seal (in percent of all the cycles), inside a
/// direct child's compaction step (of the direct cycles), and inside a served child's
/// background merge (of the served cycles): fewer, and the soak would pass without testing
/// what it is for. Measured over seeds 1, 2, 3 and the default: 59 to 77 % inside a seal,
/// 41 to 64 % inside a direct step, 16 to 41 % inside a background merge.
const IN_SEAL_PERCENT_MIN: u64 = 10;
const IN_COMPACTION_PERCENT_MIN: u64 = 5;
const IN_MERGE_PERCENT_MIN: u64 = 5;
/// Compaction steps `Served` grants after each barrier.
const SERVED_STEPS_PER_BARRIER: usize = 4;
const STREAM: &str = "soak";
const LANES: u64 = 3;

fn decl() -> StreamDecl {
    Stream::new(STREAM)
        .field("lane", FieldKind::U64)
        .field("t", FieldKind::U64)
        .field("v", FieldKind::F64)
        .track(["lane"])
        .axis("t")
        .build()
        .unwrap()
}

/// Small compaction thresholds and manifest, so that compaction merges every few barriers and
/// the manifest is rewritten every few dozen: both then run, and are killed, in every cycle.
fn config() -> Config {
    Config::default()
        .compact_files_max(3)
        .compact_inputs_min(2)
        .compact_inputs_max(4)
        .manifest_rewrite_bytes(8 << 10)
}

/// `Served` as the served child runs it: barriers only when the child seals (no ticker, no size
/// trigger), so that every barrier is one the child asked for and acknowledges, and the
/// watermark checks stay exact; each grants `SERVED_STEPS_PER_BARRIER` compaction steps, which
/// the writer thread runs while the child stages its next rows.
fn serve_config() -> ServeConfig {
    ServeConfig::default()
        .seal_interval(None)
        .seal_at_staged_share(None)
        .compact_steps_per_tick(SERVED_STEPS_PER_BARRIER)
}

/// The row at `position`: a pure function of it, so the parent knows every row exactly. Rows
/// take turns over the lanes, so a barrier writes three partitions and a query of the whole
/// stream merges them back into publish order.
fn row(position: u64) -> Vec<Value> {
    vec![
        Value::U64(position % LANES),
        Value::U64(position),
        Value::F64((position.wrapping_mul(2_654_435_761) % 1_000_003) as f64 / 8.0),
    ]
}

/// How a child drives the store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// `Store::seal` then `Store::compact_step`, on the child's thread.
    Direct,
    /// Through `Served`: compaction runs on its writer thread in the background.
    Served,
}

impl Mode {
    /// Even cycles direct, odd ones served.
    fn of_cycle(cycle: u64) -> Mode {
        if cycle.is_multiple_of(2) {
            Mode::Direct
        } else {
            Mode::Served
        }
    }

    fn name(self) -> &'static str {
        match self {
            Mode::Direct => "direct",
            Mode::Served => "served",
        }
    }
}

#[test]
fn sigkill_mid_seal_or_compaction_loses_nothing_acknowledged() {
    if let Some(dir) = std::env::var_os(CHILD_ENV) {
        ingest_until_killed(Path::new(&dir));
    } else {
        soak();
    }
}

/// One line to the parent: one `write` of a few bytes to a pipe, so it arrives whole or not at
/// all, and in the order the child's threads wrote it.
fn say(line: &str) {
    let mut out = io::stdout().lock();
    out.write_all(format!("{line}\n").as_bytes()).unwrap();
    out.flush().unwrap();
}

/// The child: from the store's watermark on, barriers of `ROWS_PER_BARRIER` rows, telling the
/// parent on standard output what it is about to do and what it acknowledged.
fn ingest_until_killed(dir: &Path) {
    // The parent holds the other end of standard input: its end (the parent gone, however it
    // went) ends the child.
    std::thread::spawn(|| {
        let _ = io::stdin().read(&mut [0u8; 1]);
        std::process::exit(3);
    });
    let started = Instant::now();
    let mode = match std::env::var(MODE_ENV).as_deref() {
        Ok("direct") => Mode::Direct,
        Ok("served") => Mode::Served,
        other => panic!("{MODE_ENV}={other:?}"),
    };
    let vfs = Watch {
        inner: RealFs::open(dir).unwrap(),
    };
    let store = Store::open_in(Arc::new(vfs), config(), &[decl()]).unwrap();
    let position = store.watermark(STREAM, &[]).unwrap().unwrap_or(0);
    // libtest has written "test NAME ... " with no newline yet: start a line of our own.
    say(&format!(
        "\nopened {position} {}",
        store.boot_report().findings.len()
    ));
    match mode {
        Mode::Direct => drive_store(store, position, started),
        Mode::Served => drive_served(store, position, started),
    }
    panic!("the child ran {CHILD_LIFETIME_MAX:?} and was never killed");
}

/// Barriers, each followed by a compaction step, on this thread.
fn drive_store(mut store: Store, mut position: u64, started: Instant) {
    while started.elapsed() < CHILD_LIFETIME_MAX {
        let to = position + ROWS_PER_BARRIER;
        for p in position + 1..=to {
            store.publish(STREAM, p, &[row(p)]).unwrap();
        }
        say(&format!("seal {to}"));
        let watermarks = store.seal().unwrap();
        assert_eq!(watermarks[STREAM], Some(to));
        say(&format!("acked {to}"));
        position = to;
        say("compact");
        let step = store.compact_step().unwrap();
        say(&format!("compacted {}", u8::from(step.is_some())));
    }
}

/// Barriers through `Served`: a seal's answer is its acknowledgement; the compaction steps
/// each barrier grants run on the writer thread meanwhile.
fn drive_served(store: Store, mut position: u64, started: Instant) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut served = Served::spawn(store, serve_config());
        while started.elapsed() < CHILD_LIFETIME_MAX {
            let to = position + ROWS_PER_BARRIER;
            for p in position + 1..=to {
                served.publish(STREAM, p, vec![row(p)]).await.unwrap();
            }
            say(&format!("seal {to}"));
            let watermark = served.seal(STREAM, &[]).await.unwrap();
            assert_eq!(watermark, Some(to));
            say(&format!("acked {to}"));
            position = to;
        }
    });
}

/// `RealFs`, telling the parent when a numbered file is created (`created tmp/….seg`: a
/// barrier's or a merge's temp) and when the manifest is synced (`claimed`: the frame that
/// claims the writes before it is durable). The child's own report of the names it created.
#[derive(Debug)]
struct Watch {
    inner: RealFs,
}

#[derive(Debug)]
struct WatchFile {
    inner: Box<dyn VfsFile>,
    /// An open manifest: its syncs claim.
    manifest: bool,
}

impl VfsFile for WatchFile {
    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.inner.write_all(bytes)
    }

    fn sync_data(&mut self) -> io::Result<()> {
        self.inner.sync_data()?;
        if self.manifest {
            say("claimed");
        }
        Ok(())
    }

    fn set_len(&mut self, len: u64) -> io::Result<()> {
        self.inner.set_len(len)
    }

    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }
}

impl Vfs for Watch {
    fn create_dir(&self, dir: &str) -> io::Result<()> {
        self.inner.create_dir(dir)
    }

    fn create(&self, path: &str) -> io::Result<Box<dyn VfsFile>> {
        let file = self.inner.create(path)?;
        if numbered(path).is_some() {
            say(&format!("created {path}"));
        }
        Ok(Box::new(WatchFile {
            inner: file,
            manifest: false,
        }))
    }

    fn open_append(&self, path: &str) -> io::Result<Box<dyn VfsFile>> {
        // Appends go to the manifest in the root (`manifest-000001`), never to a temp.
        let file = self.inner.open_append(path)?;
        Ok(Box::new(WatchFile {
            inner: file,
            manifest: path.starts_with("manifest-"),
        }))
    }

    fn map(&self, path: &str) -> io::Result<Mapped> {
        self.inner.map(path)
    }

    fn read(&self, path: &str) -> io::Result<Vec<u8>> {
        self.inner.read(path)
    }

    fn len(&self, path: &str) -> io::Result<u64> {
        self.inner.len(path)
    }

    fn rename_noreplace(&self, from: &str, to: &str) -> io::Result<()> {
        self.inner.rename_noreplace(from, to)
    }

    fn rename_mode(&self) -> RenameMode {
        self.inner.rename_mode()
    }

    fn location(&self) -> String {
        self.inner.location()
    }

    fn remove(&self, path: &str) -> io::Result<()> {
        self.inner.remove(path)
    }

    fn sync_dir(&self, dir: &str) -> io::Result<()> {
        self.inner.sync_dir(dir)
    }

    fn list(&self, dir: &str) -> io::Result<Vec<DirEntry>> {
        self.inner.list(dir)
    }

    fn exists(&self, path: &str) -> io::Result<bool> {
        self.inner.exists(path)
    }

    fn lock(&self) -> io::Result<Box<dyn VfsLock>> {
        self.inner.lock()
    }

    fn lock_shared(&self) -> io::Result<Option<Box<dyn VfsLock>>> {
        self.inner.lock_shared()
    }
}

/// The number of a numbered file at `path` (`tmp/000000000042.seg` → 42), whatever its folder.
fn numbered(path: &str) -> Option<u64> {
    let name = path.rsplit('/').next()?;
    NumberedName::parse(name).map(|n| n.number)
}

/// Where a kill landed, from the last line the child wrote before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Landed {
    /// Between "seal N" and "acked N": barrier N may be durable, whole, or not at all.
    InSeal(u64),
    /// Between a direct child's "compact" and "compacted".
    InCompaction,
    /// Anywhere else: staging rows, between the calls, or (served) in a background step.
    Elsewhere,
}

/// What one child told its parent.
#[derive(Debug)]
struct Told {
    /// The watermark the child's store opened at, and how many findings its boot had.
    opened: Option<(u64, usize)>,
    /// The last barrier whose seal returned.
    acked: Option<u64>,
    landed: Landed,
    /// A segment temp was created outside the child's seal windows and the manifest frame
    /// claiming it was not synced yet: the kill landed inside a background merge.
    in_merge: bool,
    n_acked: u64,
    n_steps: u64,
    /// Writes begun outside the child's seal windows (served: background merges).
    n_merges: u64,
    /// The numbers of every numbered file the child created.
    created: Vec<u64>,
}

impl Told {
    fn parse(stdout: &str, context: &str) -> Told {
        let mut told = Told {
            opened: None,
            acked: None,
            landed: Landed::Elsewhere,
            in_merge: false,
            n_acked: 0,
            n_steps: 0,
            n_merges: 0,
            created: Vec::new(),
        };
        let number = |word: Option<&str>, line: &str| -> u64 {
            word.and_then(|w| w.parse().ok())
                .unwrap_or_else(|| panic!("{context}: the child said {line:?}"))
        };
        // libtest's own lines ("running 1 test") share the pipe; a line cut by the kill has no
        // newline and is dropped (it cannot happen to a write this small, but it costs nothing).
        let complete = stdout.rsplit_once('\n').map_or("", |(whole, _)| whole);
        for line in complete.lines() {
            let mut words = line.split(' ');
            match words.next() {
                Some("opened") => {
                    let watermark = number(words.next(), line);
                    told.opened = Some((watermark, number(words.next(), line) as usize));
                    told.landed = Landed::Elsewhere;
                }
                Some("seal") => told.landed = Landed::InSeal(number(words.next(), line)),
                Some("acked") => {
                    let to = number(words.next(), line);
                    assert_eq!(told.landed, Landed::InSeal(to), "{context}: {line}");
                    told.acked = Some(to);
                    told.n_acked += 1;
                    told.landed = Landed::Elsewhere;
                }
                Some("compact") => told.landed = Landed::InCompaction,
                Some("compacted") => {
                    told.n_steps += number(words.next(), line);
                    told.landed = Landed::Elsewhere;
                }
                Some("created") => {
                    let path = words.next().unwrap_or_default();
                    let n = numbered(path)
                        .unwrap_or_else(|| panic!("{context}: the child said {line:?}"));
                    told.created.push(n);
                    // A segment temp begun outside the child's seal windows (and, for a
                    // direct child, outside its compaction steps: it has no background) is a
                    // background merge's: the child asked for no barrier then. One begun
                    // inside a window may be a merge's too, but is not counted as one.
                    let segment_temp = path.starts_with(&format!("{TMP_DIR}/"));
                    if segment_temp && !told.in_merge && told.landed == Landed::Elsewhere {
                        told.in_merge = true;
                        told.n_merges += 1;
                    }
                }
                Some("claimed") => told.in_merge = false,
                _ => {}
            }
        }
        told
    }
}

/// A splitmix64 step: the kill moments are a pure function of the seed and the cycle.
fn mix(seed: u64) -> u64 {
    let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name).map_or(default, |v| {
        v.parse()
            .unwrap_or_else(|_| panic!("{name}={v:?} is not a number"))
    })
}

/// Reads a pipe to its end on a thread of its own, so a child never blocks on a full pipe
/// (which would move where the kills land).
fn drain(mut pipe: impl Read + Send + 'static) -> JoinHandle<String> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

/// When to kill a child: during the period that begins with its barrier number `barrier`, at
/// `fraction` of that period.
#[derive(Clone, Copy, Debug)]
struct KillAt {
    barrier: u64,
    fraction: f64,
}

impl KillAt {
    fn draw(seed: u64, cycle: u64) -> KillAt {
        let bits = mix(seed ^ cycle.wrapping_mul(0x2545_f491_4f6c_dd1d));
        KillAt {
            barrier: KILL_BARRIER_MIN + bits % (KILL_BARRIER_MAX - KILL_BARRIER_MIN + 1),
            fraction: (mix(bits) >> 11) as f64 / (1u64 << 53) as f64,
        }
    }
}

/// A child that is killed and reaped however its parent leaves the scope that holds it: a
/// failed check (a panic) included, so that no child writes on after its parent failed. Its
/// standard input stays open while it lives: its end tells the child its parent is gone.
#[derive(Debug)]
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        // SIGKILL on Unix: no destructor runs, no buffer is flushed, no last barrier. Either
        // fails only for a child already reaped.
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Spawns the child on `dir`, SIGKILLs it at `at`, and answers what it wrote and the period
/// the kill fell in.
fn run_child(dir: &Path, mode: Mode, at: KillAt, context: &str) -> (String, Duration) {
    let mut child = Reaped(
        Command::new(std::env::current_exe().unwrap())
            .args(["--exact", TEST_NAME, "--nocapture", "--test-threads", "1"])
            .env(CHILD_ENV, dir)
            .env(MODE_ENV, mode.name())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    // The barriers' start times, as their "seal" lines arrive.
    let (seal_tx, seal_rx) = mpsc::channel();
    let mut stdout = BufReader::new(child.0.stdout.take().unwrap());
    let stdout = std::thread::spawn(move || {
        let mut text = String::new();
        let mut line = String::new();
        while stdout.read_line(&mut line).unwrap_or(0) > 0 {
            if line.starts_with("seal ") {
                let _ = seal_tx.send(Instant::now());
            }
            text.push_str(&line);
            line.clear();
        }
        text
    });
    let stderr = drain(child.0.stderr.take().unwrap());
    let mut began = Vec::new();
    while (began.len() as u64) < at.barrier {
        match seal_rx.recv_timeout(CHILD_SILENT_MAX) {
            Ok(instant) => began.push(instant),
            Err(_) => break,
        }
    }
    let period = match began[..] {
        [.., previous, last] if began.len() as u64 == at.barrier => {
            let period = last - previous;
            std::thread::sleep(period.mul_f64(at.fraction).saturating_sub(last.elapsed()));
            Some(period)
        }
        _ => None,
    };
    let exited = child.0.try_wait().unwrap();
    drop(child);
    let stdout = stdout.join().unwrap();
    let stderr = stderr.join().unwrap();
    let Some(period) = period.filter(|_| exited.is_none()) else {
        panic!(
            "{context}: the child {} before the kill\nstdout:\n{stdout}\nstderr:\n{stderr}",
            match exited {
                Some(status) => format!("exited by itself ({status})"),
                None => format!("went {CHILD_SILENT_MAX:?} without beginning a barrier"),
            }
        )
    };
    (stdout, period)
}

/// Every file in quarantine, by name: its length and a hash of its bytes.
fn quarantine(dir: &Path) -> BTreeMap<String, (u64, u64)> {
    let mut held = BTreeMap::new();
    for entry in std::fs::read_dir(dir.join(QUARANTINE_DIR)).unwrap() {
        let entry = entry.unwrap();
        let bytes = std::fs::read(entry.path()).unwrap();
        let mut hasher = DefaultHasher::new();
        hasher.write(&bytes);
        held.insert(
            entry.file_name().to_string_lossy().into_owned(),
            (bytes.len() as u64, hasher.finish()),
        );
    }
    held
}

/// The numbers of every numbered file in `seg/`, `tmp/` and `quarantine/` (whose names boot
/// prefixes: `seg-N.seg`, `tmp-N.seg`, a torn tail's `N.tail`, any of them with a `.N`
/// suffix), by folder and name.
fn names_on_disk(dir: &Path) -> BTreeMap<String, u64> {
    let mut names = BTreeMap::new();
    for folder in [SEG_DIR, TMP_DIR, QUARANTINE_DIR] {
        for entry in std::fs::read_dir(dir.join(folder)).unwrap() {
            let name = entry.unwrap().file_name().to_string_lossy().into_owned();
            let number = if folder == QUARANTINE_DIR {
                quarantined_number(&name).map(|n| n.number)
            } else {
                NumberedName::parse(&name).map(|n| n.number)
            };
            if let Some(number) = number {
                names.insert(format!("{folder}/{name}"), number);
            }
        }
    }
    names
}

/// Boot's findings lose nothing: no acknowledged history damaged or missing, every file it
/// moved aside whole in quarantine, and nothing removed but a file whose retirement (by a
/// compaction) is recorded.
fn check_findings(store: &Store, dir: &Path, context: &str) {
    for finding in &store.boot_report().findings {
        assert!(
            !matches!(
                finding.kind,
                FindingKind::DamagedHistory
                    | FindingKind::MissingFile
                    | FindingKind::WrongLength
                    | FindingKind::BadChecksum
                    | FindingKind::MissingFolder
                    | FindingKind::Foreign
            ),
            "{context}: {finding}"
        );
        match &finding.action {
            Action::Quarantine { to } | Action::AlreadyQuarantined { at: to } => {
                let path = dir.join(QUARANTINE_DIR).join(to);
                let len = std::fs::metadata(&path)
                    .unwrap_or_else(|e| panic!("{context}: {finding}: {}: {e}", path.display()))
                    .len();
                if let (Some(bytes), None) = (finding.bytes, finding.offset) {
                    assert_eq!(len, bytes, "{context}: {finding}");
                }
            }
            Action::DropSecondName { of } => assert!(
                dir.join(of).exists(),
                "{context}: {finding}: the bytes are under neither name"
            ),
            Action::Remove => assert_eq!(
                finding.kind,
                FindingKind::RetiredFile,
                "{context}: only a retired file may be removed: {finding}"
            ),
            _ => {}
        }
    }
}

/// Every row the store serves is exactly the series at positions 1..=`watermark`, in order, and
/// there is none beyond. Answers how many rows it compared.
fn check_rows(store: &Store, watermark: u64, context: &str) -> u64 {
    let rows = store.query(STREAM, &[], ..).unwrap();
    assert_eq!(
        rows.len() as u64,
        watermark,
        "{context}: rows served against the watermark"
    );
    for (row_idx, stored) in rows.iter().enumerate() {
        let position = row_idx as u64 + 1;
        assert_eq!(stored.position, position, "{context}: row {row_idx}");
        assert_eq!(stored.values, row(position), "{context}: row {row_idx}");
    }
    watermark
}

/// What the soak counts, for its census and its false-pass guards.
#[derive(Debug, Default)]
struct Census {
    kills: u64,
    served_kills: u64,
    in_seal: u64,
    in_seal_landed: u64,
    /// Direct children's kills between "compact" and "compacted".
    in_compaction: u64,
    /// Served children's kills inside a background merge's writes.
    in_merge: u64,
    seals_acked: u64,
    /// Direct children's steps that merged something.
    steps: u64,
    /// Served children's writes begun outside their seal windows: background merges.
    merges: u64,
    rows_verified: u64,
    /// Names the children created, each checked above every name before their boot.
    names_checked: u64,
    /// Boots after which the crash's leftovers held a name above the highest the manifest
    /// knows (`Catalog::name_high`): where a store issuing from the manifest alone would
    /// reuse a name.
    leftovers_above_manifest: u64,
    /// The periods the kills fell in, summed: the children's pace.
    periods: Duration,
}

impl Census {
    /// The false-pass guards: a soak whose kills all land between the writes would pass
    /// without testing them.
    fn guard(&self, cycles: u64) {
        let direct_kills = self.kills - self.served_kills;
        assert!(
            self.in_seal * 100 >= cycles * IN_SEAL_PERCENT_MIN,
            "only {} of {cycles} kills landed inside a seal",
            self.in_seal
        );
        assert!(
            self.in_compaction * 100 >= direct_kills * IN_COMPACTION_PERCENT_MIN,
            "only {} of {direct_kills} direct kills landed inside a compaction step",
            self.in_compaction
        );
        assert!(
            self.in_merge * 100 >= self.served_kills * IN_MERGE_PERCENT_MIN,
            "only {} of {} served kills landed inside a background merge",
            self.in_merge,
            self.served_kills
        );
        assert!(
            self.steps >= direct_kills / 2,
            "only {} compaction steps of the direct children merged anything",
            self.steps
        );
        assert!(
            self.leftovers_above_manifest > 0,
            "no crash left a name above the manifest's highest: the name check is untested"
        );
        assert!(
            self.names_checked >= cycles,
            "only {} names the children created were checked",
            self.names_checked
        );
    }
}

/// What the parent knows of the store between cycles: what it last verified.
#[derive(Debug, Default)]
struct Known {
    watermark: u64,
    quarantined: BTreeMap<String, (u64, u64)>,
    /// Every numbered file in `seg/`, `tmp/` and `quarantine/` once the last boot healed.
    names: BTreeMap<String, u64>,
    /// The highest number any file in those folders has had, crash leftovers included.
    name_high: u64,
}

impl Known {
    /// Reopens the store after a kill and checks it against what the child told and the names
    /// the crash left (`left`, listed before the reopen), then takes what it verified as the
    /// next cycle's start.
    fn check(
        &mut self,
        dir: &Path,
        told: &Told,
        left: &BTreeMap<String, u64>,
        census: &mut Census,
        context: &str,
    ) {
        let (opened_at, n_findings) = told.opened.expect("run_child waits for the open");
        // The parent's reopen healed the last kill and closed cleanly: the child's boot sees what
        // the parent saw, and nothing to heal.
        assert_eq!(opened_at, self.watermark, "{context}: the child opened at");
        assert_eq!(n_findings, 0, "{context}: the child's boot found something");
        // Every name the child issued after its boot is above every name the store held
        // before it, crash leftovers in tmp/ and quarantine/ included: by its own report, and
        // by what it left on disk that was not there before it.
        for &number in &told.created {
            assert!(
                number > self.name_high,
                "{context}: the child created a file numbered {number}, not above {}, the \
                 highest name in seg/, tmp/ or quarantine/ before its boot",
                self.name_high
            );
        }
        census.names_checked += told.created.len() as u64;
        for (name, &number) in left {
            assert!(
                self.names.contains_key(name) || number > self.name_high,
                "{context}: the child left {name}, not above {}, the highest name in seg/, \
                 tmp/ or quarantine/ before its boot",
                self.name_high
            );
        }
        let base = told.acked.unwrap_or(self.watermark);

        let store = Store::open(dir, config(), &[decl()])
            .unwrap_or_else(|e| panic!("{context}: reopen: {e}"));
        let now = store.watermark(STREAM, &[]).unwrap().unwrap_or(0);
        let context = format!(
            "{context}, landed {:?}{}, watermark {now}",
            told.landed,
            if told.in_merge {
                " inside a background merge"
            } else {
                ""
            }
        );
        match told.landed {
            Landed::InSeal(to) => {
                census.in_seal += 1;
                census.in_seal_landed += u64::from(now == to);
                assert!(
                    now == base || now == to,
                    "{context}: a barrier killed mid-seal is {to} whole or {base}, not {now}"
                );
            }
            Landed::InCompaction => {
                census.in_compaction += 1;
                assert_eq!(now, base, "{context}: the last acknowledged watermark");
            }
            Landed::Elsewhere => {
                assert_eq!(now, base, "{context}: the last acknowledged watermark");
            }
        }
        check_findings(&store, dir, &context);
        census.leftovers_above_manifest += u64::from(
            left.values()
                .any(|&number| number > store.catalog().name_high()),
        );
        assert!(
            std::fs::read_dir(dir.join(TMP_DIR))
                .unwrap()
                .next()
                .is_none(),
            "{context}: a temp left after boot"
        );
        census.rows_verified += check_rows(&store, now, &context);
        let held = quarantine(dir);
        for (name, was) in &self.quarantined {
            assert_eq!(
                held.get(name),
                Some(was),
                "{context}: quarantine/{name} was deleted or changed"
            );
        }
        drop(store);
        let names = names_on_disk(dir);
        let name_high = [self.name_high]
            .into_iter()
            .chain(told.created.iter().copied())
            .chain(left.values().copied())
            .chain(names.values().copied())
            .max()
            .unwrap_or(0);
        *self = Known {
            watermark: now,
            quarantined: held,
            names,
            name_high,
        };
    }
}

/// The soak's store, kept when the soak fails (a panic unwinds through this) and its path
/// printed, for inspection; removed when it passes.
#[derive(Debug)]
struct KeptOnFailure(Option<tempfile::TempDir>);

impl Drop for KeptOnFailure {
    fn drop(&mut self) {
        if std::thread::panicking()
            && let Some(root) = self.0.take()
        {
            let kept: PathBuf = root.keep();
            crate::census(&format!(
                "soak FAILED: its store is kept at {}",
                kept.join("store").display()
            ));
        }
    }
}

fn soak() {
    let started = Instant::now();
    let cycles = env_u64(CYCLES_ENV, CYCLES_DEFAULT);
    let seed = env_u64(SEED_ENV, SEED_DEFAULT);
    let root = KeptOnFailure(Some(tempfile::tempdir().unwrap()));
    let dir = root.0.as_ref().unwrap().path().join("store");
    drop(Store::create(&dir, config(), &[decl()]).unwrap());

    let mut census = Census::default();
    let mut known = Known {
        names: names_on_disk(&dir),
        ..Known::default()
    };
    known.name_high = known.names.values().copied().max().unwrap_or(0);
    for cycle in 0..cycles {
        let at = KillAt::draw(seed, cycle);
        let mode = Mode::of_cycle(cycle);
        let context = format!(
            "cycle {cycle} ({}), killed at {:.2} of the period from the child's barrier {}, \
             store {} (kept; repeat the moments: {SEED_ENV}={seed} {CYCLES_ENV}={} cargo test \
             --test crash -- --exact {TEST_NAME})",
            mode.name(),
            at.fraction,
            at.barrier,
            dir.display(),
            cycle + 1
        );
        let (stdout, period) = run_child(&dir, mode, at, &context);
        let left = names_on_disk(&dir);
        census.periods += period;
        let told = Told::parse(&stdout, &context);
        census.kills += 1;
        census.seals_acked += told.n_acked;
        census.steps += told.n_steps;
        if mode == Mode::Served {
            census.served_kills += 1;
            census.merges += told.n_merges;
            census.in_merge += u64::from(told.in_merge);
        }
        known.check(&dir, &told, &left, &mut census, &context);
    }

    // The store then takes the next barrier and compacts all the way, and still serves exactly
    // the series.
    let mut store = Store::open(&dir, config(), &[decl()]).unwrap();
    let to = known.watermark + ROWS_PER_BARRIER;
    for p in known.watermark + 1..=to {
        store.publish(STREAM, p, &[row(p)]).unwrap();
    }
    assert_eq!(store.seal().unwrap()[STREAM], Some(to));
    let final_steps = store.compact().unwrap().len();
    check_rows(&store, to, "after the soak");
    let generation = store.boot_report().generation;
    drop(store);

    let direct_kills = census.kills - census.served_kills;
    crate::census(&format!(
        "soak: {cycles} cycles in {:.1} s (seed {seed}): {} kills ({direct_kills} direct, {} \
         served): {} inside a seal ({} of those barriers landed whole), {} inside a direct \
         compaction step, {} inside a served background merge; {} seals acknowledged, {} \
         direct compaction steps and {} served background merges (and {final_steps} steps to \
         finish), {} rows verified, {} created names checked above the crash's leftovers \
         (highest {}; {} boots found leftovers above the manifest's highest name), final \
         watermark {to}, {} files in quarantine, manifest generation {generation}; a \
         barrier's period {:.1} ms on average",
        started.elapsed().as_secs_f64(),
        census.kills,
        census.served_kills,
        census.in_seal,
        census.in_seal_landed,
        census.in_compaction,
        census.in_merge,
        census.seals_acked,
        census.steps,
        census.merges,
        census.rows_verified,
        census.names_checked,
        known.name_high,
        census.leftovers_above_manifest,
        known.quarantined.len(),
        census.periods.as_secs_f64() * 1e3 / cycles.max(1) as f64,
    ));
    census.guard(cycles);
    drop(root);
}
