//! A process-kill soak on the real file system (#16, item 6). A child process ingests with a
//! short seal cadence and a compaction step after every barrier, and is SIGKILLed at a random
//! moment; the parent then reopens the store in-process and checks it against what the child
//! acknowledged: the watermark is the last acknowledged one (or, for a kill inside a seal, that
//! barrier whole or not at all), every row up to it is exactly the series and nothing lies
//! beyond, boot's findings lose nothing, and quarantine only grows. The next cycle's child
//! carries on from there on the same store, so files, compactions, manifest rewrites and
//! quarantined evidence accumulate across the cycles.
//!
//! The child is this same test, re-executed with `STRATA_SOAK_CHILD` naming the store: so the
//! test binary needs no second entry point, and the parent run is the one that asserts.
//! `STRATA_SOAK_CYCLES=N` runs N cycles instead of CI's 200; `STRATA_SOAK_SEED=S` moves every
//! kill moment (a failure names both).

use std::collections::BTreeMap;
use std::hash::{DefaultHasher, Hasher};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use strata::recover::{Action, FindingKind};
use strata::segment::names::{QUARANTINE_DIR, TMP_DIR};
use strata::{Config, FieldKind, Store, Stream, StreamDecl, Value};

/// Set in a child's environment to the store it ingests into.
const CHILD_ENV: &str = "STRATA_SOAK_CHILD";
/// How many cycles to run, for a longer local soak.
const CYCLES_ENV: &str = "STRATA_SOAK_CYCLES";
/// The seed of the kill moments.
const SEED_ENV: &str = "STRATA_SOAK_SEED";
/// CI's cycles: 5 s in a debug build on this 2-core machine when its disk syncs in about a
/// millisecond, and under a minute if every sync took tens of milliseconds.
const CYCLES_DEFAULT: u64 = 200;
const SEED_DEFAULT: u64 = 0x5eed_0016;
/// The test's full name, which the parent passes to the child's libtest as an exact filter.
const TEST_NAME: &str = "soak::sigkill_mid_seal_or_compaction_loses_nothing_acknowledged";
/// When a kill lands: after the child began its barrier number `KILL_BARRIER_MIN..=MAX`, at a
/// uniformly drawn point of one period (the time from the child's previous barrier to this
/// one: a seal, a compaction step and staging the next rows). Measured in the child's own pace,
/// so that kills land in every phase however fast the disk syncs, and a child writes at most a
/// few barriers a cycle however long its syncs take or however short: the rows every cycle
/// verifies grow with the cycles, not with the disk's speed.
const KILL_BARRIER_MIN: u64 = 2;
const KILL_BARRIER_MAX: u64 = 5;
/// How long a child may go without a line before the soak gives up on it.
const CHILD_SILENT_MAX: Duration = Duration::from_secs(30);
/// Rows per barrier: few, so that a barrier's syncs, not staging, take most of the child's time
/// and most kills land inside a seal or a compaction step.
const ROWS_PER_BARRIER: u64 = 48;
/// A child still alive after this was never killed (its parent died): it stops by itself.
const CHILD_LIFETIME_MAX: Duration = Duration::from_secs(60);
/// The fewest kills, in percent of the cycles, that must land inside a seal, and inside a
/// compaction step: fewer, and the soak would pass without testing what it is for.
const IN_SEAL_PERCENT_MIN: u64 = 10;
const IN_COMPACTION_PERCENT_MIN: u64 = 5;
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

#[test]
fn sigkill_mid_seal_or_compaction_loses_nothing_acknowledged() {
    if let Some(dir) = std::env::var_os(CHILD_ENV) {
        ingest_until_killed(Path::new(&dir));
    } else {
        soak();
    }
}

/// The child: from the store's watermark on, barriers of `ROWS_PER_BARRIER` rows, each
/// followed by a compaction step, telling the parent on standard output what it is about to do
/// and what it acknowledged. Each line is one `write` of a few bytes to a pipe, so it arrives
/// whole or not at all.
fn ingest_until_killed(dir: &Path) {
    let started = Instant::now();
    let mut out = std::io::stdout().lock();
    let mut say = |line: String| {
        out.write_all(format!("{line}\n").as_bytes()).unwrap();
        out.flush().unwrap();
    };
    let mut store = Store::open(dir, config(), &[decl()]).unwrap();
    let mut position = store.watermark(STREAM, &[]).unwrap().unwrap_or(0);
    // libtest has written "test NAME ... " with no newline yet: start a line of our own.
    say(format!(
        "\nopened {position} {}",
        store.boot_report().findings.len()
    ));
    while started.elapsed() < CHILD_LIFETIME_MAX {
        let to = position + ROWS_PER_BARRIER;
        for p in position + 1..=to {
            store.publish(STREAM, p, &[row(p)]).unwrap();
        }
        say(format!("seal {to}"));
        let watermarks = store.seal().unwrap();
        assert_eq!(watermarks[STREAM], Some(to));
        say(format!("acked {to}"));
        position = to;
        say("compact".to_owned());
        let step = store.compact_step().unwrap();
        say(format!("compacted {}", u8::from(step.is_some())));
    }
    panic!("the child ran {CHILD_LIFETIME_MAX:?} and was never killed");
}

/// Where a kill landed, from the last line the child wrote before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Landed {
    /// Between "seal N" and "acked N": barrier N may be durable, whole, or not at all.
    InSeal(u64),
    /// Between "compact" and "compacted".
    InCompaction,
    /// Anywhere else: staging rows, or between the calls.
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
    n_acked: u64,
    n_steps: u64,
}

impl Told {
    fn parse(stdout: &str, context: &str) -> Told {
        let mut told = Told {
            opened: None,
            acked: None,
            landed: Landed::Elsewhere,
            n_acked: 0,
            n_steps: 0,
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

/// Spawns the child on `dir`, SIGKILLs it at `at`, and answers what it wrote and the period
/// the kill fell in.
fn run_child(dir: &Path, at: KillAt, context: &str) -> (String, Duration) {
    let mut child: Child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", TEST_NAME, "--nocapture", "--test-threads", "1"])
        .env(CHILD_ENV, dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The barriers' start times, as their "seal" lines arrive.
    let (seal_tx, seal_rx) = mpsc::channel();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
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
    let stderr = drain(child.stderr.take().unwrap());
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
    let exited = child.try_wait().unwrap();
    if exited.is_none() {
        // SIGKILL on Unix: no destructor runs, no buffer is flushed, no last barrier.
        child.kill().unwrap();
        child.wait().unwrap();
    }
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
    in_seal: u64,
    in_seal_landed: u64,
    in_compaction: u64,
    seals_acked: u64,
    steps: u64,
    rows_verified: u64,
    /// The periods the kills fell in, summed: the child's pace.
    periods: Duration,
}

/// What the parent knows of the store between cycles: what it last verified.
#[derive(Debug, Default)]
struct Known {
    watermark: u64,
    quarantined: BTreeMap<String, (u64, u64)>,
    name_high: u64,
}

impl Known {
    /// Reopens the store after a kill and checks it against what the child told, then takes
    /// what it verified as the next cycle's start.
    fn check(&mut self, dir: &Path, told: &Told, census: &mut Census, context: &str) {
        let (opened_at, n_findings) = told.opened.expect("run_child waits for the open");
        // The parent's reopen healed the last kill and closed cleanly: the child's boot sees what
        // the parent saw, and nothing to heal.
        assert_eq!(opened_at, self.watermark, "{context}: the child opened at");
        assert_eq!(n_findings, 0, "{context}: the child's boot found something");
        let base = told.acked.unwrap_or(self.watermark);

        let store = Store::open(dir, config(), &[decl()])
            .unwrap_or_else(|e| panic!("{context}: reopen: {e}"));
        let now = store.watermark(STREAM, &[]).unwrap().unwrap_or(0);
        let context = format!("{context}, landed {:?}, watermark {now}", told.landed);
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
        let name_high = store.catalog().name_high();
        assert!(
            name_high >= self.name_high,
            "{context}: the highest name went back from {} to {name_high}",
            self.name_high
        );
        *self = Known {
            watermark: now,
            quarantined: held,
            name_high,
        };
    }
}

fn soak() {
    let started = Instant::now();
    let cycles = env_u64(CYCLES_ENV, CYCLES_DEFAULT);
    let seed = env_u64(SEED_ENV, SEED_DEFAULT);
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("store");
    drop(Store::create(&dir, config(), &[decl()]).unwrap());

    let mut census = Census::default();
    let mut known = Known::default();
    for cycle in 0..cycles {
        let at = KillAt::draw(seed, cycle);
        let context = format!(
            "cycle {cycle}, killed at {:.2} of the period from the child's barrier {} (repeat \
             the moments: {SEED_ENV}={seed} {CYCLES_ENV}={} cargo test --test crash -- --exact \
             {TEST_NAME})",
            at.fraction,
            at.barrier,
            cycle + 1
        );
        let (stdout, period) = run_child(&dir, at, &context);
        census.periods += period;
        let told = Told::parse(&stdout, &context);
        census.kills += 1;
        census.seals_acked += told.n_acked;
        census.steps += told.n_steps;
        known.check(&dir, &told, &mut census, &context);
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

    crate::census(&format!(
        "soak: {cycles} cycles in {:.1} s (seed {seed}): {} kills: {} inside a seal ({} of those \
         barriers landed whole), {} inside a compaction step, {} elsewhere; {} seals \
         acknowledged, {} compaction steps (and {final_steps} to finish), {} rows verified, final \
         watermark {to}, {} files in quarantine, manifest generation {generation}; a barrier's \
         period {:.1} ms on average",
        started.elapsed().as_secs_f64(),
        census.kills,
        census.in_seal,
        census.in_seal_landed,
        census.in_compaction,
        census.kills - census.in_seal - census.in_compaction,
        census.seals_acked,
        census.steps,
        census.rows_verified,
        known.quarantined.len(),
        census.periods.as_secs_f64() * 1e3 / cycles.max(1) as f64,
    ));
    // A soak whose kills all land between the writes would pass without testing them.
    assert!(
        census.in_seal * 100 >= cycles * IN_SEAL_PERCENT_MIN,
        "only {} of {cycles} kills landed inside a seal",
        census.in_seal
    );
    assert!(
        census.in_compaction * 100 >= cycles * IN_COMPACTION_PERCENT_MIN,
        "only {} of {cycles} kills landed inside a compaction step",
        census.in_compaction
    );
    assert!(
        census.steps >= cycles / 2,
        "only {} compaction steps of the children merged anything",
        census.steps
    );
}
