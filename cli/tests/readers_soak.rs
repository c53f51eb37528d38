//! Readers in other processes while a writer runs and is killed (#32), on the real file system.
//!
//! One writer process ingests a barrier at a time and, between barriers, takes compaction
//! steps, retention sweeps, trims, retirements and manifest checkpoints (rewrites); the parent
//! SIGKILLs it at random moments and starts another on the same store. Beside it, four reader
//! processes loop for the whole soak: two through the library (`Store::open_reader`,
//! `refresh`, then `query`, `survey` and `fold`, with one open segment at a time so that every
//! read opens its files again by name), two through the `strata` command line (`query`,
//! `survey`, `fold`, each a process of its own). Every answer is checked in the reader against
//! `MemorySeries` replaying the rows through the watermark the answer reports (a library
//! reader's `watermark`; the command line's note on stderr), or through a range every durable
//! state at or past a known watermark answers alike. The rows are a pure function of their
//! position, so a model needs nothing from the writer but the watermark.
//!
//! Every process prints one line per event with the wall clock (microseconds), and the parent
//! counts the overlaps the issue names: reads during a compaction step, during a removal of
//! retired files, during a manifest rewrite, and across a writer's kill (from the kill to the
//! next writer's open). Each count must be positive, wrong answers zero, and every refusal a
//! named one. The children are this test run again with `STRATA_READERS_SOAK_ROLE`; each
//! stops when its standard input (a pipe from the parent) ends, so none outlives the parent.
//!
//! `STRATA_READERS_SOAK_KILLS=N` kills the writer N times instead of `KILLS_DEFAULT`.
//!
//! A test binary of its own, so that its five processes never share the machine with the
//! timing-sensitive tests of `tests/it` (cargo runs test binaries one after another).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::cast_possible_truncation,
    reason = "test code: a failed unwrap is a failed test"
)]

use std::collections::BTreeSet;
use std::fmt::Debug;
use std::future::Future;
use std::io::{BufRead, BufReader, Read, Write as _};
use std::path::{Path, PathBuf};
use std::pin::pin;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use strata::recover::RecoverError;
use strata::{
    Aggregate, Config, EngineError, FieldKind, Lifetime, MemorySeries, Retention, Row, Series,
    Store, Stream, StreamDecl, Value, View,
};

const ROLE_ENV: &str = "STRATA_READERS_SOAK_ROLE";
const DIR_ENV: &str = "STRATA_READERS_SOAK_DIR";
const KILLS_ENV: &str = "STRATA_READERS_SOAK_KILLS";
/// Kills of the writer in CI's run: with the pauses between them, about 20 s.
const KILLS_DEFAULT: u64 = 14;
const TEST_NAME: &str = "readers_in_other_processes_answer_as_the_model_while_the_writer_is_killed";
/// A child stops by itself after this, whatever its parent does.
const CHILD_LIFETIME_MAX: Duration = Duration::from_secs(300);

/// The measured stream: compacted, never trimmed.
const M: &str = "m";
/// The log: trimmed, swept by retention, and its track `y` retired now and then.
const LOG: &str = "log";

fn decls() -> [StreamDecl; 2] {
    let m = Stream::new(M)
        .field("run", FieldKind::Str)
        .field("t", FieldKind::U64)
        .field("v", FieldKind::F64)
        .track(["run"])
        .axis("t")
        .ladder(4, 2)
        .build()
        .unwrap();
    let log = Stream::new(LOG)
        .field("lane", FieldKind::Str)
        .field("note", FieldKind::Str)
        .track(["lane"])
        .build()
        .unwrap();
    [m, log]
}

/// `m`'s rows at position `p`: run `a` twice, run `b` at even positions; axis `4p + i`; values
/// in quarters, so every sum is exact in any order.
fn m_rows(p: u64) -> Vec<Row> {
    let k = i64::try_from(p % 1000).unwrap();
    let row = |run: &str, i: u64, v: i64| {
        vec![
            Value::Str(run.into()),
            Value::U64(4 * p + i),
            Value::F64(v as f64 / 4.0),
        ]
    };
    let mut rows = vec![row("a", 0, (k * 37) % 23 - 11), row("a", 1, 5 - k % 7)];
    if p.is_multiple_of(2) {
        rows.push(row("b", 2, k % 5 - 2));
    }
    rows
}

/// The log's rows at position `p`: lane `x` always, lane `y` every third.
fn log_rows(p: u64) -> Vec<Row> {
    let note = |lane: &str| vec![Value::Str(lane.into()), Value::Str(format!("{lane}@{p}"))];
    let mut rows = vec![note("x")];
    if p.is_multiple_of(3) {
        rows.push(note("y"));
    }
    rows
}

/// How many rows of `m` batches `0..=w` hold.
fn m_count(w: u64) -> u64 {
    2 * (w + 1) + (w / 2 + 1)
}

fn writer_config() -> Config {
    Config::default()
        .compact_files_max(2)
        .compact_inputs_min(2)
        .manifest_rewrite_bytes(16 << 10)
        .retain(LOG, Retention::raw(Lifetime::Positions(30)))
}

fn now() -> u64 {
    u64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_micros(),
    )
    .unwrap()
}

static STOP: AtomicBool = AtomicBool::new(false);

/// Stops the child when its standard input ends (the parent closed it, or died). Ends the line
/// libtest began with the test's name first, so that every line after it is the child's.
fn watch_stdin() {
    println!();
    let started = Instant::now();
    std::thread::spawn(|| {
        let _ = std::io::stdin().read(&mut [0u8; 1]);
        STOP.store(true, Ordering::SeqCst);
    });
    std::thread::spawn(move || {
        while started.elapsed() < CHILD_LIFETIME_MAX {
            std::thread::sleep(Duration::from_millis(200));
        }
        STOP.store(true, Ordering::SeqCst);
    });
}

fn stopping() -> bool {
    STOP.load(Ordering::SeqCst)
}

#[test]
fn readers_in_other_processes_answer_as_the_model_while_the_writer_is_killed() {
    let dir = std::env::var_os(DIR_ENV).map(PathBuf::from);
    match (std::env::var(ROLE_ENV).as_deref(), dir) {
        (Ok("writer"), Some(dir)) => writer(&dir),
        (Ok("lib"), Some(dir)) => lib_reader(&dir),
        (Ok("cli"), Some(dir)) => cli_reader(&dir),
        _ => soak(),
    }
}

// ---- the writer ----------------------------------------------------------------------------

fn writer(dir: &Path) {
    watch_stdin();
    let mut store = loop {
        match Store::open(dir, writer_config(), &[]) {
            Ok(store) => break store,
            // A command-line read of the store while no writer ran holds its shared lock.
            Err(EngineError::Open(RecoverError::Locked)) => {
                println!("refused open locked");
                std::thread::sleep(Duration::from_millis(2));
            }
            Err(error) => panic!("the writer cannot open the store: {error}"),
        }
    };
    println!("opened {}", now());
    let mut p = store.watermark(M, &[]).unwrap().map_or(0, |w| w + 1);
    while !stopping() {
        store.publish(M, p, &m_rows(p)).unwrap();
        store.publish(LOG, p, &log_rows(p)).unwrap();
        op(&mut store, dir, "seal", |s| s.seal().map(drop));
        if p % 2 == 1 {
            op(&mut store, dir, "compact", |s| s.compact_step().map(drop));
        }
        if p % 20 == 10 {
            op(&mut store, dir, "sweep", |s| s.sweep().map(drop));
        }
        if p % 30 == 15 {
            op(&mut store, dir, "trim", |s| {
                s.trim_to(LOG, p.saturating_sub(20)).map(drop)
            });
        }
        if p % 45 == 40 {
            op(&mut store, dir, "retire", |s| {
                s.retire(LOG, &["y"]).map(drop)
            });
        }
        if p % 25 == 0 {
            op(&mut store, dir, "checkpoint", |s| s.checkpoint().map(drop));
        }
        p += 1;
    }
    println!("stopped {p}");
}

/// Runs one write and says what it did: when, whether it removed a segment (read from the
/// folder), whether it rewrote the manifest.
fn op(
    store: &mut Store,
    dir: &Path,
    kind: &str,
    write: impl FnOnce(&mut Store) -> Result<(), EngineError>,
) {
    let before = segments(dir);
    let generation = store.manifest_position().generation;
    let t0 = now();
    let result = write(store);
    let t1 = now();
    let removed = before.difference(&segments(dir)).count();
    let rewrote = store.manifest_position().generation != generation;
    match result {
        Ok(()) => println!("op {kind} {t0} {t1} {removed} {rewrote}"),
        // A trim beneath the floor retention already raised is refused, naming it.
        Err(error @ EngineError::Trim { .. }) => println!("refused {kind} {error}"),
        Err(error) => panic!("{kind}: {error}"),
    }
}

fn segments(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir.join("seg"))
        .map(|entries| {
            entries
                .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default()
}

// ---- the model -----------------------------------------------------------------------------

fn ready<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    match future
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(out) => out,
        Poll::Pending => panic!("MemorySeries never waits"),
    }
}

/// The rows of batches `0..=w`, replayed into `MemorySeries` as the watermark rises.
struct Model {
    series: MemorySeries,
    next: u64,
}

impl Model {
    fn new() -> Model {
        Model {
            series: MemorySeries::new(&decls()),
            next: 0,
        }
    }

    /// The model through batch `w` at least: for reads beneath `w`, which every later state
    /// answers alike.
    fn at_least(&mut self, w: u64) -> &MemorySeries {
        if w >= self.next {
            for p in self.next..=w {
                ready(self.series.publish(M, p, m_rows(p))).unwrap();
                ready(self.series.publish(LOG, p, log_rows(p))).unwrap();
            }
            ready(self.series.seal(M, &[])).unwrap();
            ready(self.series.seal(LOG, &[])).unwrap();
            self.next = w + 1;
        }
        &self.series
    }

    /// The model through batch `w` exactly; refused if it was replayed past `w` already (a
    /// watermark went back).
    fn exactly(&mut self, w: u64) -> Result<&MemorySeries, String> {
        if w + 1 < self.next {
            return Err(format!("watermark {w} went back from {}", self.next - 1));
        }
        Ok(self.at_least(w))
    }
}

/// The first difference between an answer and the model's, if any.
fn differs<T: Debug, U: Debug>(what: &str, got: &T, want: &U) -> Option<String> {
    let (got, want) = (format!("{got:?}"), format!("{want:?}"));
    (got != want).then(|| {
        let cut = |s: &str| s.chars().take(300).collect::<String>();
        format!("{what}: got {} want {}", cut(&got), cut(&want))
    })
}

// ---- a reader through the library ----------------------------------------------------------

fn lib_reader(dir: &Path) {
    watch_stdin();
    let mut store = Store::open_reader(dir, Config::default().open_segments_max(2)).unwrap();
    let mut model = Model::new();
    let mut last = None;
    while !stopping() {
        if let Err(error) = store.refresh() {
            println!("wrong refresh {error}");
            continue;
        }
        let Some(w) = store.watermark(M, &[]).unwrap() else {
            std::thread::sleep(Duration::from_millis(5));
            continue;
        };
        if last.is_some_and(|last| w < last) {
            println!("wrong watermark {w} went back from {last:?}");
        }
        last = Some(w);
        let model = match model.exactly(w) {
            Ok(model) => model,
            Err(wrong) => {
                println!("wrong {wrong}");
                continue;
            }
        };
        let t0 = now();
        let verdict = check_lib(&store, model, w);
        let t1 = now();
        match verdict {
            None => println!("read lib {t0} {t1} ok {w}"),
            Some(wrong) => println!("read lib {t0} {t1} wrong at watermark {w}: {wrong}"),
        }
    }
}

/// Every read of one round, against the model at watermark `w`: the first difference.
fn check_lib(store: &View, model: &MemorySeries, w: u64) -> Option<String> {
    let axis = 0..=4 * w + 3;
    let recent = w.saturating_sub(40)..=w;
    let mut wrong = None;
    let mut check = |what: &str, got: String, want: String| {
        if wrong.is_none() {
            wrong = differs(what, &got, &want);
        }
    };
    for sel in [&[][..], &["a"][..], &["b"][..]] {
        check(
            "query",
            format!("{:?}", store.query(M, sel, recent.clone())),
            format!("{:?}", model.query(M, sel, recent.clone())),
        );
        for budget in [16, 200] {
            check(
                "survey",
                format!("{:?}", store.survey(M, sel, axis.clone(), budget)),
                format!("{:?}", model.survey(M, sel, axis.clone(), budget)),
            );
        }
        for kind in [
            Aggregate::Sum,
            Aggregate::Max,
            Aggregate::Count,
            Aggregate::p(50),
        ] {
            check(
                "fold",
                format!("{:?}", store.fold(M, sel, axis.clone(), kind)),
                format!("{:?}", model.fold(M, sel, axis.clone(), kind)),
            );
        }
        // Cut cells at both ends.
        let cut = 5..=(4 * w + 1).max(5);
        check(
            "fold cut",
            format!("{:?}", store.fold(M, sel, cut.clone(), Aggregate::Mean)),
            format!("{:?}", model.fold(M, sel, cut.clone(), Aggregate::Mean)),
        );
    }
    // The log: read from its floor (trims and retention raise it), which a first read names.
    let from = match store.query(LOG, &["x"], 0..=w) {
        Err(EngineError::Floor { floor, .. }) => floor,
        _ => 0,
    };
    check(
        "log query",
        format!("{:?}", store.query(LOG, &["x"], from..=w)),
        format!("{:?}", model.query(LOG, &["x"], from..=w)),
    );
    wrong
}

// ---- a reader through the command line -----------------------------------------------------

/// One run of `strata --verbose --store DIR ARGS`: exit code, stdout, and the watermark its
/// note on stderr reports (`--verbose` makes every read say it).
fn strata(dir: &Path, args: &[&str]) -> (i32, String, Option<u64>, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_strata"))
        .arg("--verbose")
        .arg("--store")
        .arg(dir)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let watermark = stderr
        .split("'s watermark ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok());
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        watermark,
        stderr,
    )
}

/// `field: value` lines of a fold's table, the value of `v`.
fn fold_value(stdout: &str) -> Option<f64> {
    stdout
        .lines()
        .find_map(|line| line.strip_prefix("v: "))
        .and_then(|v| v.trim().parse().ok())
}

fn cli_reader(dir: &Path) {
    watch_stdin();
    let mut model = Model::new();
    let mut known: Option<u64> = None;
    let mut round = 0u64;
    while !stopping() {
        round += 1;
        let t0 = now();
        let verdict = check_cli(dir, &mut model, &mut known, round);
        let t1 = now();
        match verdict {
            Ok(mode) => println!("read cli {t0} {t1} ok {mode}"),
            Err(wrong) => println!("read cli {t0} {t1} wrong {wrong}"),
        }
    }
}

/// One round of command-line reads, each answer naming its watermark on stderr. The count is
/// checked at the watermark it names; the query and the fold stay beneath a position already
/// known durable, where every later state answers alike; the survey is checked whole at the
/// watermark it names.
fn check_cli(
    dir: &Path,
    model: &mut Model,
    known: &mut Option<u64>,
    round: u64,
) -> Result<&'static str, String> {
    let (code, out, noted, err) = strata(dir, &["fold", M, "--agg", "count"]);
    if code != 0 {
        return Err(format!("fold count exit {code}: {err}"));
    }
    let count: u64 = out
        .lines()
        .find_map(|line| line.strip_prefix("v: "))
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| format!("fold count said {out:?}"))?;
    let Some(w) = noted else {
        if count == 0 && err.contains("no watermark") {
            return Ok("empty");
        }
        return Err(format!("the count {count} names no watermark: {err}"));
    };
    if count != m_count(w) {
        return Err(format!("count {count} at watermark {w}"));
    }
    if known.is_some_and(|k| w < k) {
        return Err(format!("watermark {w} went back from {known:?}"));
    }
    *known = Some(w);
    let p = (round * 7919) % (w + 1);
    // The rows of one batch, by position.
    let (code, out, _, err) = strata(
        dir,
        &[
            "query",
            M,
            "--track",
            "a",
            "--from-position",
            &p.to_string(),
            "--to-position",
            &p.to_string(),
        ],
    );
    if code != 0 {
        return Err(format!("query exit {code}: {err}"));
    }
    let got: Vec<Vec<String>> = out
        .lines()
        .skip(1)
        .map(|line| line.split(',').map(str::to_owned).collect())
        .collect();
    let want: Vec<Row> = m_rows(p)
        .into_iter()
        .filter(|row| row[0] == Value::Str("a".into()))
        .collect();
    let same = got.len() == want.len()
        && got.iter().zip(&want).all(|(got, want)| {
            got.len() == 4
                && got[0] == p.to_string()
                && got[1] == "a"
                && Value::U64(got[2].parse().unwrap_or(u64::MAX)) == want[1]
                && Value::F64(got[3].parse().unwrap_or(f64::NAN)) == want[2]
        });
    if !same {
        return Err(format!("query of batch {p}: {out:?}"));
    }
    // The largest value of batches 0..=p, by axis: a fold that cuts nothing beyond them.
    let top = (4 * p + 3).to_string();
    let (code, out, _, err) = strata(dir, &["fold", M, "--agg", "max", "--to", &top]);
    if code != 0 {
        return Err(format!("fold max exit {code}: {err}"));
    }
    let series = model.at_least(w);
    let want = series.fold(M, &[], 0..=4 * p + 3, Aggregate::Max).unwrap()[0]
        .value
        .map(strata::Num::as_f64);
    if fold_value(&out) != want {
        return Err(format!("fold max to {top}: {out:?}, want {want:?}"));
    }
    check_cli_survey(dir, model)?;
    Ok("noted")
}

/// The whole survey, against the model at the watermark its note names.
fn check_cli_survey(dir: &Path, model: &mut Model) -> Result<(), String> {
    let (code, out, noted, err) = strata(dir, &["survey", M, "--budget", "64", "--format", "json"]);
    if code != 0 {
        return Err(format!("survey exit {code}: {err}"));
    }
    if let Some(w) = noted {
        let want = model.exactly(w)?.survey(M, &[], .., 64).unwrap();
        let got: serde_json::Value =
            serde_json::from_str(&out).map_err(|e| format!("survey json {e}: {out}"))?;
        let buckets = got["fields"][0]["buckets"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let want_buckets = &want.fields[0].buckets;
        let same = buckets.len() == want_buckets.len()
            && buckets.iter().zip(want_buckets).all(|(got, want)| {
                got["count"].as_u64() == Some(want.count)
                    && got["min"]["axis"].as_u64() == Some(want.min.axis)
                    && got["max"]["axis"].as_u64() == Some(want.max.axis)
                    && got["first"]["axis"].as_u64() == Some(want.first.axis)
                    && got["last"]["axis"].as_u64() == Some(want.last.axis)
                    && got["sum"].as_f64() == Some(want.sum)
            });
        if !same {
            return Err(format!("survey at watermark {w}: {out}"));
        }
    }
    Ok(())
}

// ---- the parent ----------------------------------------------------------------------------

/// A child killed and reaped however the parent leaves the scope that holds it.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// One line a child printed, with who printed it.
type Line = (String, String);

fn spawn(dir: &Path, role: &str, lines: &mpsc::Sender<Line>) -> Reaped {
    let mut child = Reaped(
        Command::new(std::env::current_exe().unwrap())
            .args(["--exact", TEST_NAME, "--nocapture", "--test-threads", "1"])
            .env(ROLE_ENV, role)
            .env(DIR_ENV, dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap(),
    );
    let stdout = BufReader::new(child.0.stdout.take().unwrap());
    let (tx, who) = (lines.clone(), role.to_owned());
    std::thread::spawn(move || {
        for line in stdout.lines().map_while(Result::ok) {
            if tx.send((who.clone(), line)).is_err() {
                break;
            }
        }
    });
    child
}

/// A write the writer reported: kind, start, end, whether it removed a file, whether it
/// rewrote the manifest.
type Op = (String, u64, u64, bool, bool);

/// What the parent heard, in order.
#[derive(Default)]
struct Heard {
    ops: Vec<Op>,
    /// (start, end) of every read, and who read.
    reads: Vec<(String, u64, u64)>,
    wrong: Vec<String>,
    refused: Vec<String>,
    opened: Vec<u64>,
    cli_noted: u64,
}

impl Heard {
    fn take(&mut self, (who, line): Line) {
        let words: Vec<&str> = line.split_whitespace().collect();
        let num = |i: usize| {
            words
                .get(i)
                .and_then(|w| w.parse::<u64>().ok())
                .unwrap_or(0)
        };
        match words.first().copied() {
            Some("op") => self.ops.push((
                words[1].to_owned(),
                num(2),
                num(3),
                num(4) > 0,
                words.get(5) == Some(&"true"),
            )),
            Some("opened") => self.opened.push(num(1)),
            Some("refused") => self.refused.push(format!("{who}: {line}")),
            Some("read") if words.get(4) == Some(&"ok") => {
                self.reads.push((who, num(2), num(3)));
                if words.get(5) == Some(&"noted") {
                    self.cli_noted += 1;
                }
            }
            Some("read" | "wrong") => self.wrong.push(format!("{who}: {line}")),
            _ => {}
        }
    }

    /// Reads overlapping any interval of `spans`.
    fn overlapping(&self, spans: &[(u64, u64)]) -> usize {
        self.reads
            .iter()
            .filter(|(_, a, b)| spans.iter().any(|&(c, d)| *a < d && c < *b))
            .count()
    }
}

fn soak() {
    let kills = std::env::var(KILLS_ENV)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(KILLS_DEFAULT);
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().join("store");
    drop(Store::create(&dir, writer_config(), &decls()).unwrap());
    let (tx, rx) = mpsc::channel();
    let mut heard = Heard::default();
    let mut writer = spawn(&dir, "writer", &tx);
    let readers: Vec<Reaped> = ["lib", "lib", "cli", "cli"]
        .iter()
        .map(|role| spawn(&dir, role, &tx))
        .collect();
    let mut kill_spans = Vec::new();
    let mut seed = 0x5eed_0032_u64;
    let mut rand = move || {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        seed >> 33
    };
    let hear_until = |heard: &mut Heard, deadline: Instant| {
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            match rx.recv_timeout(left) {
                Ok(line) => heard.take(line),
                Err(_) => break,
            }
        }
    };
    for _ in 0..kills {
        // Let it open and write a while, then kill it at a random moment.
        let opened = heard.opened.len();
        let start = Instant::now();
        while heard.opened.len() == opened && start.elapsed() < Duration::from_secs(60) {
            hear_until(&mut heard, Instant::now() + Duration::from_millis(20));
        }
        assert!(heard.opened.len() > opened, "the writer never opened");
        let pause = Duration::from_millis(300 + rand() % 900);
        hear_until(&mut heard, Instant::now() + pause);
        assert!(
            writer.0.try_wait().unwrap().is_none(),
            "the writer stopped by itself"
        );
        let killed = now();
        drop(writer);
        hear_until(
            &mut heard,
            Instant::now() + Duration::from_millis(rand() % 200),
        );
        writer = spawn(&dir, "writer", &tx);
        kill_spans.push(killed);
    }
    // The last writer stops cleanly; then the readers.
    hear_until(&mut heard, Instant::now() + Duration::from_millis(800));
    drop(writer.0.stdin.take());
    assert!(writer.0.wait().unwrap().success(), "the last writer failed");
    for mut reader in readers {
        drop(reader.0.stdin.take());
        assert!(reader.0.wait().unwrap().success(), "a reader failed");
    }
    drop(tx);
    while let Ok(line) = rx.recv() {
        heard.take(line);
    }

    check_heard(&heard, &kill_spans);
    check_nothing_left_behind(&dir);
}

/// The answers and the overlaps, counted: printed, then asserted.
fn check_heard(heard: &Heard, kill_spans: &[u64]) {
    // The overlaps the issue names.
    let spans = |keep: &dyn Fn(&Op) -> bool| -> Vec<(u64, u64)> {
        heard
            .ops
            .iter()
            .filter(|op| keep(op))
            .map(|op| (op.1, op.2))
            .collect()
    };
    let compactions = heard.overlapping(&spans(&|op| op.0 == "compact"));
    let removals = heard.overlapping(&spans(&|op| op.3));
    let rewrites = heard.overlapping(&spans(&|op| op.4));
    // A kill's span: from the kill to the next writer's open.
    let kill_windows: Vec<(u64, u64)> = kill_spans
        .iter()
        .filter_map(|&k| heard.opened.iter().find(|&&o| o > k).map(|&o| (k, o)))
        .collect();
    let across_kills = heard.overlapping(&kill_windows);
    let removed_files = heard.ops.iter().filter(|op| op.3).count();
    let rewrote = heard.ops.iter().filter(|op| op.4).count();
    // Straight to the process's standard error, past libtest's capture, so that CI's log shows
    // the census when the soak passes too.
    let _ = writeln!(
        std::io::stderr().lock(),
        "census: readers soak: {} kills, {} writes ({} removed files, {} rewrote the manifest), {} reads \
         ({} command-line, each checked at the watermark it named), overlaps: {compactions} during a \
         compaction step, {removals} during a removal, {rewrites} during a manifest rewrite, \
         {across_kills} across a kill; {} named refusals",
        kill_spans.len(),
        heard.ops.len(),
        removed_files,
        rewrote,
        heard.reads.len(),
        heard.cli_noted,
        heard.refused.len()
    );
    assert!(heard.wrong.is_empty(), "wrong answers: {:#?}", heard.wrong);
    for refusal in &heard.refused {
        assert!(
            refusal.contains("refused open locked") || refusal.contains("refused trim"),
            "an unnamed refusal: {refusal}"
        );
    }
    assert!(compactions > 0, "no read overlapped a compaction step");
    assert!(removals > 0, "no read overlapped a removal");
    assert!(rewrites > 0, "no read overlapped a manifest rewrite");
    assert!(across_kills > 0, "no read overlapped a writer's kill");
    assert!(
        heard.cli_noted > 0,
        "no command-line read answered at a watermark it named"
    );
    for who in ["lib", "cli"] {
        assert!(
            heard.reads.iter().any(|(w, _, _)| w == who),
            "no {who} reader answered"
        );
    }
}

/// With every reader gone, the writer removes every retired file: nothing is left forever.
fn check_nothing_left_behind(dir: &Path) {
    let mut store = Store::open(dir, writer_config(), &[]).unwrap();
    store.seal().unwrap();
    assert_eq!(store.removals_pending(), 0);
    let live: BTreeSet<String> = store
        .catalog()
        .live_files()
        .map(|file| format!("{:012}.seg", file.name))
        .collect();
    assert_eq!(segments(dir), live, "only live files stay");
    let pins = std::fs::read_dir(dir.join("readers")).map_or(0, Iterator::count);
    assert_eq!(pins, 0, "every reader's pin went with it");
}
