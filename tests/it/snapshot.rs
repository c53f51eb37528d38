//! Snapshot reads (#15): a read holding a snapshot while compaction and retention retire and
//! delete the files it reads answers exactly.
//!
//! Every expected answer comes from `MemorySeries` fed the same rows (at the snapshot's
//! watermark: recorded when the snapshot is taken), or, where retention sweeps floors the model
//! does not know, from the store itself at the moment the snapshot was taken, before anything
//! retired a file. What is on disk is read from the simulated file system (`seg/`), never from
//! the store's own bookkeeping.

use std::collections::BTreeSet;
use std::fmt::Debug;
use std::ops::RangeInclusive;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use proptest::prelude::*;
use strata::recover::{Action, FindingKind};
use strata::segment::vfs::{SimFs, Vfs};
use strata::{
    Aggregate, Config, EngineError, FieldKind, FieldStat, Lifetime, MemorySeries, Retention, Row,
    Series, Snapshot, Store, Stream, StreamDecl, Survey, Value, View,
};

use crate::support::{MODES, ready, sim};

/// The measured stream: a track (`run`), an axis (`t`) and two `f64` fields, one of quarters
/// and one of tenths (whose sums round, so a regrouped fold would show).
const S: &str = "snap";
/// A stream without an axis (so without levels): what retires its tiers retires whole files.
const LOG: &str = "log";
const RUNS: [&str; 3] = ["a", "b", "c"];
/// Barriers the fixed scenarios seal before their snapshot, at positions `0..N`.
const N: u64 = 24;

fn snap_decl() -> StreamDecl {
    Stream::new(S)
        .field("run", FieldKind::Str)
        .field("t", FieldKind::U64)
        .field("v", FieldKind::F64)
        .field("w", FieldKind::F64)
        .track(["run"])
        .axis("t")
        .ladder(4, 2)
        .build()
        .unwrap()
}

fn log_decl() -> StreamDecl {
    Stream::new(LOG)
        .field("run", FieldKind::Str)
        .field("note", FieldKind::Str)
        .track(["run"])
        .build()
        .unwrap()
}

fn decls() -> [StreamDecl; 2] {
    [snap_decl(), log_decl()]
}

fn measured(run: &str, t: u64, k: i32) -> Row {
    vec![
        Value::Str(run.into()),
        Value::U64(t),
        Value::F64(f64::from(k) / 4.0),
        Value::F64(f64::from(k) * 0.1 + 1.0 / 3.0),
    ]
}

fn note(run: &str, p: u64) -> Row {
    vec![Value::Str(run.into()), Value::Str(format!("{run}@{p}"))]
}

/// The fixture's rows of `S` at position `p`: `a` at every position (two rows), `b` at even
/// ones, `c` at the first four only (so it ends early); axis `8p + i`.
fn rows_at(p: u64) -> Vec<Row> {
    let k = i32::try_from(p).unwrap();
    let mut rows = vec![
        measured("a", 8 * p, (k * 37) % 23 - 11),
        measured("a", 8 * p + 3, 5 - k % 7),
    ];
    if p.is_multiple_of(2) {
        rows.push(measured("b", 8 * p + 1, k % 5 - 2));
    }
    if p < 4 {
        rows.push(measured("c", 8 * p + 2, -k));
    }
    rows
}

/// The fixture's rows of `LOG` at position `p`: `x` at every position, `y` at every third.
fn notes_at(p: u64) -> Vec<Row> {
    let mut rows = vec![note("x", p)];
    if p.is_multiple_of(3) {
        rows.push(note("y", p));
    }
    rows
}

/// The highest axis value of the fixture after barriers `0..n`.
fn top_axis(n: u64) -> u64 {
    8 * (n - 1) + 3
}

/// Seals the fixture's barriers `first..first + n` into the store and the model alike.
fn feed(store: &mut Store, model: &mut MemorySeries, first: u64, n: u64) {
    for p in first..first + n {
        store.publish(S, p, &rows_at(p)).unwrap();
        store.publish(LOG, p, &notes_at(p)).unwrap();
        store.seal().unwrap();
        ready(model.publish(S, p, rows_at(p))).unwrap();
        ready(model.publish(LOG, p, notes_at(p))).unwrap();
        ready(model.seal(S, &[])).unwrap();
    }
}

/// One read's outcome, written out whole (`Debug` keeps every float's exact value); a floor
/// refusal as its floor and unit.
type Answer = Result<String, String>;

fn outcome<T: Debug>(answer: Result<T, EngineError>) -> Answer {
    match answer {
        Ok(answer) => Ok(format!("{answer:?}")),
        Err(EngineError::Floor { floor, unit, .. }) => Err(format!("floor {floor} {unit}")),
        Err(other) => Err(format!("refused: {other}")),
    }
}

/// Which measured fields an answer keeps: both, or `v` alone. `v` holds quarters, whose sums
/// are exact in any order, so the model (which sums row by row) answers them bit for bit; `w`
/// holds tenths, whose sums round, and only the store's own right fold (the same before and
/// after a merge) gives its bits: those are compared with what a store answered before.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fields {
    All,
    V,
}

impl Fields {
    fn keeps(self, field: &str) -> bool {
        self == Fields::All || field == "v"
    }

    fn cells_of(self) -> &'static str {
        match self {
            Fields::All => "w",
            Fields::V => "v",
        }
    }
}

fn survey_outcome(fields: Fields, answer: Result<Survey, EngineError>) -> Answer {
    outcome(answer.map(|mut survey| {
        survey.fields.retain(|f| fields.keeps(&f.field));
        survey
    }))
}

fn fold_outcome(fields: Fields, answer: Result<Vec<FieldStat>, EngineError>) -> Answer {
    outcome(answer.map(|mut stats| {
        stats.retain(|f| fields.keeps(&f.field));
        stats
    }))
}

/// The reads a store (its view, through `Deref`), a view handed out and the model all answer.
trait Reads {
    fn query(&self, stream: &str, selection: &[&str], positions: RangeInclusive<u64>) -> Answer;
    fn survey(&self, f: Fields, sel: &[&str], axis: RangeInclusive<u64>, budget: u64) -> Answer;
    fn fold(&self, f: Fields, sel: &[&str], axis: RangeInclusive<u64>, kind: Aggregate) -> Answer;
    fn cells(&self, f: Fields, sel: &[&str], level: u8, axis: RangeInclusive<u64>) -> Answer;
}

impl Reads for View {
    fn query(&self, stream: &str, selection: &[&str], positions: RangeInclusive<u64>) -> Answer {
        outcome(View::query(self, stream, selection, positions))
    }
    fn survey(&self, f: Fields, sel: &[&str], axis: RangeInclusive<u64>, budget: u64) -> Answer {
        survey_outcome(f, View::survey(self, S, sel, axis, budget))
    }
    fn fold(&self, f: Fields, sel: &[&str], axis: RangeInclusive<u64>, kind: Aggregate) -> Answer {
        fold_outcome(f, View::fold(self, S, sel, axis, kind))
    }
    fn cells(&self, f: Fields, sel: &[&str], level: u8, axis: RangeInclusive<u64>) -> Answer {
        outcome(View::level_cells(self, S, sel, f.cells_of(), level, axis))
    }
}

impl Reads for Store {
    fn query(&self, stream: &str, selection: &[&str], positions: RangeInclusive<u64>) -> Answer {
        Reads::query(&**self, stream, selection, positions)
    }
    fn survey(&self, f: Fields, sel: &[&str], axis: RangeInclusive<u64>, budget: u64) -> Answer {
        Reads::survey(&**self, f, sel, axis, budget)
    }
    fn fold(&self, f: Fields, sel: &[&str], axis: RangeInclusive<u64>, kind: Aggregate) -> Answer {
        Reads::fold(&**self, f, sel, axis, kind)
    }
    fn cells(&self, f: Fields, sel: &[&str], level: u8, axis: RangeInclusive<u64>) -> Answer {
        Reads::cells(&**self, f, sel, level, axis)
    }
}

impl Reads for MemorySeries {
    fn query(&self, stream: &str, selection: &[&str], positions: RangeInclusive<u64>) -> Answer {
        outcome(MemorySeries::query(self, stream, selection, positions))
    }
    fn survey(&self, f: Fields, sel: &[&str], axis: RangeInclusive<u64>, budget: u64) -> Answer {
        survey_outcome(f, MemorySeries::survey(self, S, sel, axis, budget))
    }
    fn fold(&self, f: Fields, sel: &[&str], axis: RangeInclusive<u64>, kind: Aggregate) -> Answer {
        fold_outcome(f, MemorySeries::fold(self, S, sel, axis, kind))
    }
    fn cells(&self, f: Fields, sel: &[&str], level: u8, axis: RangeInclusive<u64>) -> Answer {
        outcome(MemorySeries::level_cells(
            self,
            S,
            sel,
            f.cells_of(),
            level,
            axis,
        ))
    }
}

/// Every answer about the data through position `top_position` and axis value `top_axis`:
/// queries (whole and the newest positions), surveys at three budgets and over the newest
/// span, every level fold and the median, over everything and the newest span, and the stored
/// cells of three levels, for every selection; and the log's rows. `light` reads a subset (the
/// property test's, run after every operation).
fn answers(
    reads: &dyn Reads,
    fields: Fields,
    top_position: u64,
    top_axis: u64,
    light: bool,
) -> Vec<(String, Answer)> {
    let mut out = Vec::new();
    let all = 0..=top_position;
    let newest = top_position.saturating_sub(5)..=top_position;
    let span = 0..=top_axis;
    let recent = top_axis.saturating_sub(40)..=top_axis;
    let selections: &[&[&str]] = if light {
        &[&[], &["a"], &["b"]]
    } else {
        &[&[], &["a"], &["b"], &["c"]]
    };
    let budgets: &[u64] = if light { &[40] } else { &[8, 40, 400] };
    let kinds = if light {
        vec![Aggregate::Sum, Aggregate::Max, Aggregate::p(50)]
    } else {
        vec![
            Aggregate::Sum,
            Aggregate::Min,
            Aggregate::Max,
            Aggregate::Mean,
            Aggregate::Count,
            Aggregate::p(50),
        ]
    };
    let levels: &[u8] = if light { &[1] } else { &[0, 1, 2] };
    for &selection in selections {
        for range in [all.clone(), newest.clone()] {
            let what = format!("query {S} {selection:?} {range:?}");
            out.push((what, reads.query(S, selection, range)));
        }
        for &budget in budgets {
            let what = format!("survey {selection:?} {span:?} budget {budget}");
            out.push((what, reads.survey(fields, selection, span.clone(), budget)));
        }
        let what = format!("survey {selection:?} {recent:?} budget 24");
        out.push((what, reads.survey(fields, selection, recent.clone(), 24)));
        for &kind in &kinds {
            for range in [span.clone(), recent.clone()] {
                let what = format!("fold {kind} {selection:?} {range:?}");
                out.push((what, reads.fold(fields, selection, range, kind)));
            }
        }
        for &level in levels {
            let what = format!("cells {level} {selection:?} {span:?}");
            out.push((what, reads.cells(fields, selection, level, span.clone())));
        }
    }
    for selection in [&[][..], &["x"], &["y"]] {
        for range in [all.clone(), newest.clone()] {
            let what = format!("query {LOG} {selection:?} {range:?}");
            out.push((what, reads.query(LOG, selection, range)));
        }
    }
    out
}

/// `got` equals `expected` answer by answer, naming the first that differs.
#[track_caller]
fn assert_answers(got: &[(String, Answer)], expected: &[(String, Answer)], context: &str) {
    assert_eq!(got.len(), expected.len(), "{context}: reads made");
    for ((what, got), (_, expected)) in got.iter().zip(expected) {
        assert_eq!(got, expected, "{context}: {what}");
    }
}

/// A store fed the fixture's `N` barriers that never compacts nor retires anything: what the
/// store under test answered before any of it. Its answers are first checked against the
/// model (for `v`, which the model answers bit for bit).
fn twin() -> Store {
    let mut twin = Store::create_in(sim(&SimFs::new()), Config::default(), &decls()).unwrap();
    let mut model = MemorySeries::new(&decls());
    feed(&mut twin, &mut model, 0, N);
    twin
}

/// What a snapshot taken after the fixture's `N` barriers answers, whatever happens after:
/// the twin's answers, which agree with the model's at that watermark.
fn expected_at_snapshot(model: &MemorySeries) -> Vec<(String, Answer)> {
    let twin = twin();
    assert_answers(
        &answers(&twin, Fields::V, N - 1, top_axis(N), false),
        &answers(model, Fields::V, N - 1, top_axis(N), false),
        "the twin against the model",
    );
    let expected = answers(&twin, Fields::All, N - 1, top_axis(N), false);
    assert!(
        expected.iter().all(|(_, a)| a.is_ok()),
        "everything answers at the snapshot"
    );
    expected
}

/// The segment files in `seg/` now, by number.
fn on_disk(fs: &SimFs) -> BTreeSet<u64> {
    fs.list("seg")
        .unwrap()
        .into_iter()
        .filter_map(|e| e.name.strip_suffix(".seg")?.parse().ok())
        .collect()
}

/// The files a store's (or snapshot's) catalog names live.
fn live(store: &View) -> BTreeSet<u64> {
    store.catalog().live_files().map(|f| f.name).collect()
}

fn is_floor(answer: &Answer) -> bool {
    matches!(answer, Err(e) if e.starts_with("floor "))
}

/// The axis value of an axis floor a read was refused at.
fn floor_axis(answer: &Answer) -> Option<u64> {
    let e = answer.as_ref().err()?.strip_prefix("floor ")?;
    e.strip_suffix(" axis value")?.parse().ok()
}

/// Reads of `inner` with every axis range starting at `axis_from` or above.
struct Raised<'a> {
    inner: &'a dyn Reads,
    axis_from: u64,
}

impl Raised<'_> {
    fn raise(&self, axis: RangeInclusive<u64>) -> RangeInclusive<u64> {
        (*axis.start()).max(self.axis_from)..=*axis.end()
    }
}

impl Reads for Raised<'_> {
    fn query(&self, stream: &str, selection: &[&str], positions: RangeInclusive<u64>) -> Answer {
        self.inner.query(stream, selection, positions)
    }
    fn survey(&self, f: Fields, sel: &[&str], axis: RangeInclusive<u64>, budget: u64) -> Answer {
        self.inner.survey(f, sel, self.raise(axis), budget)
    }
    fn fold(&self, f: Fields, sel: &[&str], axis: RangeInclusive<u64>, kind: Aggregate) -> Answer {
        self.inner.fold(f, sel, self.raise(axis), kind)
    }
    fn cells(&self, f: Fields, sel: &[&str], level: u8, axis: RangeInclusive<u64>) -> Answer {
        self.inner.cells(f, sel, level, self.raise(axis))
    }
}

fn retaining(open_segments_max: usize) -> Config {
    Config::default()
        .retain(
            S,
            Retention::raw(Lifetime::AxisSpan(128)).levels_from(0, Lifetime::AxisSpan(128)),
        )
        .retain(LOG, Retention::raw(Lifetime::Positions(16)))
        .compact_files_max(2)
        .compact_inputs_min(2)
        .compact_inputs_max(4)
        .open_segments_max(open_segments_max)
}

/// What the retiring operations of [`retire_everything`] removed, or queued for removal.
#[derive(Debug, Default)]
struct Retired {
    sweep: BTreeSet<u64>,
    retire: BTreeSet<u64>,
    compaction: BTreeSet<u64>,
    trim: BTreeSet<u64>,
}

impl Retired {
    fn all(&self) -> BTreeSet<u64> {
        let mut all = self.sweep.clone();
        all.extend(&self.retire);
        all.extend(&self.compaction);
        all.extend(&self.trim);
        all
    }
}

/// After the fixture's `N` barriers: a retention sweep, a `retire` of track `c`, compaction
/// until quiet, eight more barriers, compaction steps (each sweeping first) until quiet, a
/// `trim_to` of the log and a `retire` of track `b`; each retiring whole files. The model
/// follows what it knows (the barriers, the trim and the retirements; not the sweeps).
fn retire_everything(store: &mut Store, model: &mut MemorySeries) -> Retired {
    let mut retired = Retired::default();
    for swept in store.sweep().unwrap() {
        retired.sweep.extend(swept.removed);
    }
    retired
        .retire
        .extend(store.retire(S, &["c"]).unwrap().removed);
    MemorySeries::retire(model, S, &["c"]).unwrap();
    for step in store.compact().unwrap() {
        retired.compaction.extend(step.removed);
    }
    feed(store, model, N, 8);
    while let Some(step) = store.compact_step().unwrap() {
        retired.compaction.extend(step.removed);
    }
    retired
        .trim
        .extend(store.trim_to(LOG, N + 2).unwrap().removed);
    MemorySeries::trim_to(model, LOG, N + 2).unwrap();
    retired
        .retire
        .extend(store.retire(S, &["b"]).unwrap().removed);
    MemorySeries::retire(model, S, &["b"]).unwrap();
    retired
}

/// The store's own answers after [`retire_everything`]: beneath its floors refused, above them
/// the model's rows; its watermark moved on.
fn assert_new_state(store: &View, model: &MemorySeries) {
    let top = N + 7;
    assert_eq!(store.watermark(S, &[]).unwrap(), Some(top));
    for selection in [&[][..], &["a"], &["b"], &["c"]] {
        let beneath = Reads::query(store, S, selection, 0..=top);
        assert!(is_floor(&beneath), "{selection:?} from 0: {beneath:?}");
    }
    assert!(is_floor(&Reads::query(store, LOG, &[], 0..=top)));
    for (stream, selection, range) in [
        (S, &["a"][..], N + 4..=top),
        (LOG, &[][..], N + 3..=top),
        (LOG, &["x"][..], N + 3..=top),
    ] {
        let got = Reads::query(store, stream, selection, range.clone());
        let expected = Reads::query(model, stream, selection, range.clone());
        assert!(got.is_ok(), "{stream} {selection:?} {range:?}: {got:?}");
        assert_eq!(got, expected, "{stream} {selection:?} {range:?}");
    }
    // Above every floor the sweeps left, the newest span's folds are the model's.
    let recent = top_axis(N + 8) - 16..=top_axis(N + 8);
    for kind in [Aggregate::Sum, Aggregate::Max, Aggregate::Count] {
        let got = Reads::fold(store, Fields::V, &["a"], recent.clone(), kind);
        assert!(got.is_ok(), "{kind} of a over {recent:?}: {got:?}");
        let expected = Reads::fold(model, Fields::V, &["a"], recent.clone(), kind);
        assert_eq!(got, expected);
    }
}

/// Figures of one run of [`held_through_retirement`].
#[derive(Debug)]
struct Held {
    retired: Retired,
    /// Files waiting for the snapshot to be dropped.
    queued: usize,
    /// Files the snapshot's catalog names that the store retired while it was held.
    read_after_retired: usize,
    /// Readers the snapshot's reads evicted from the shared cache (so opened by name).
    evictions_by_snapshot: u64,
}

/// Test 1 and 2's scenario: a snapshot taken before any read, held while every retiring
/// operation runs; its every answer is then the model's at its watermark, and the files it
/// names are on disk until it is dropped and one write runs.
fn held_through_retirement(open_segments_max: usize) -> Held {
    let fs = SimFs::new();
    let config = retaining(open_segments_max);
    let mut store = Store::create_in(sim(&fs), config.clone(), &decls()).unwrap();
    let mut model = MemorySeries::new(&decls());
    feed(&mut store, &mut model, 0, N);
    // Taken before any read: nothing has opened a segment yet, so every file the snapshot
    // reads below it opens for the first time, after the store retired it.
    let snapshot = store.snapshot();
    let expected = expected_at_snapshot(&model);
    let named = live(&snapshot);
    assert_eq!(
        named,
        on_disk(&fs),
        "the snapshot names every file there is"
    );
    assert_eq!(store.metrics().snapshots, 1);

    let retired = retire_everything(&mut store, &mut model);
    assert!(!retired.sweep.is_empty(), "the sweep removes files");
    assert!(!retired.retire.is_empty(), "retire removes files");
    assert!(!retired.compaction.is_empty(), "compaction removes files");
    assert!(!retired.trim.is_empty(), "the trim removes files");
    let all = retired.all();

    // The snapshot answers exactly as the twin and the model did at its watermark, though
    // the store retired most of the files it reads (and never opened some of them).
    let evictions = store.metrics().segment_evictions;
    assert_eq!(snapshot.watermark(S, &[]).unwrap(), Some(N - 1));
    assert_eq!(snapshot.watermark(LOG, &["x"]).unwrap(), Some(N - 1));
    assert_answers(
        &answers(&snapshot, Fields::All, N - 1, top_axis(N), false),
        &expected,
        "the snapshot after every retirement",
    );
    let evictions_by_snapshot = store.metrics().segment_evictions - evictions;
    // Nothing retired while the snapshot lives is gone: the files it names are all there,
    // and so is every file retired since (queued, each once).
    let disk = on_disk(&fs);
    assert!(
        named.is_subset(&disk),
        "files the snapshot names removed: {:?}",
        named.difference(&disk).collect::<Vec<_>>()
    );
    assert!(all.is_subset(&disk), "retired files kept while it lives");
    // Besides the store's live files, on disk are the files waiting: every one retired (the
    // operations' own, and those the sweeps compaction runs first retired), counted once.
    let queued: BTreeSet<u64> = disk.difference(&live(&store)).copied().collect();
    assert!(all.is_subset(&queued));
    assert!(queued.iter().all(|&f| store.catalog().is_retired(f)));
    let metrics = store.metrics();
    assert_eq!(metrics.removals_pending, queued.len() as u64);
    assert_eq!(store.removals_pending(), queued.len());
    assert_eq!(metrics.snapshots, 1);
    assert_eq!(store.snapshots(), 1);
    let read_after_retired = named.intersection(&all).count();
    assert!(read_after_retired >= 2, "the snapshot reads retired files");

    // The store answers its own state: its floors refuse, above them the model answers.
    assert_new_state(&store, &model);
    // Still nothing removed: reads remove nothing, and neither does a checkpoint while the
    // snapshot lives.
    assert!(!store.checkpoint().unwrap());
    assert_eq!(on_disk(&fs), disk);

    drop(snapshot);
    assert_eq!(store.metrics().snapshots, 0);
    // Dropping removes nothing by itself; the next write does.
    assert_eq!(on_disk(&fs), disk);
    store.seal().unwrap();
    let metrics = store.metrics();
    assert_eq!(metrics.removals_pending, 0);
    assert_eq!(metrics.snapshots, 0);
    let disk = on_disk(&fs);
    assert!(disk.is_disjoint(&queued), "retired files left behind");
    assert_eq!(disk, live(&store), "exactly the live files are left");
    assert_new_state(&store, &model);

    // A reopen finds nothing to clean up.
    drop(store);
    let store = Store::open_in(sim(&fs), config, &decls()).unwrap();
    assert!(
        store.boot_report().findings.is_empty(),
        "{:?}",
        store.boot_report().findings
    );
    assert_new_state(&store, &model);
    Held {
        retired,
        queued: queued.len(),
        read_after_retired,
        evictions_by_snapshot,
    }
}

#[test]
fn a_snapshot_held_through_compaction_and_retention_answers_exactly() {
    let held = held_through_retirement(1024);
    assert!(held.queued >= held.retired.all().len(), "{held:?}");
    eprintln!("{held:?}");
}

#[test]
fn a_snapshot_opens_files_the_store_retired_for_the_first_time_and_answers_exactly() {
    // One reader cached at a time: every file the snapshot reads is opened by name, after the
    // store retired it (the sweep's and the retirements' files were never opened at all).
    let held = held_through_retirement(1);
    assert!(
        held.evictions_by_snapshot as usize >= held.read_after_retired - 1,
        "{held:?}"
    );
    eprintln!("{held:?}");
}

/// Test 3: a crash while removals wait for a snapshot. The manifest is not rewritten meanwhile
/// (a checkpoint answers `false`, however small `manifest_rewrite_bytes` is), so it still
/// records the retirements, and boot removes the retired files: nothing is quarantined, and
/// the reopened store answers as the model.
#[test]
fn a_crash_while_removals_wait_for_a_snapshot_leaves_them_to_boot() {
    for mode in MODES {
        let fs = SimFs::with_rename_mode(mode);
        // Rewriting the manifest after every record, were it allowed to: nothing else would
        // keep it from forgetting the retired files.
        let config = Config::default()
            .compact_files_max(4)
            .compact_inputs_min(2)
            .compact_inputs_max(4)
            .manifest_rewrite_bytes(1);
        let mut store = Store::create_in(sim(&fs), config.clone(), &decls()).unwrap();
        let mut model = MemorySeries::new(&decls());
        feed(&mut store, &mut model, 0, N);
        let snapshot = store.snapshot();
        let expected = expected_at_snapshot(&model);
        let named = live(&snapshot);

        let mut retired: BTreeSet<u64> = BTreeSet::new();
        for step in store.compact().unwrap() {
            retired.extend(step.removed);
        }
        retired.extend(store.retire(S, &["b"]).unwrap().removed);
        model.retire(S, &["b"]).unwrap();
        retired.extend(store.trim_to(LOG, N - 6).unwrap().removed);
        model.trim_to(LOG, N - 6).unwrap();
        assert!(retired.len() >= 4, "{retired:?}");
        assert_eq!(store.removals_pending(), retired.len());
        let disk = on_disk(&fs);
        assert!(named.is_subset(&disk) && retired.is_subset(&disk));
        assert!(
            !store.checkpoint().unwrap(),
            "no rewrite while removals wait"
        );
        assert_eq!(on_disk(&fs), disk, "a checkpoint removes nothing either");
        let after = answers(&model, Fields::V, N - 1, top_axis(N), false);
        let after_store = answers(&store, Fields::All, N - 1, top_axis(N), false);
        assert_answers(
            &answers(&store, Fields::V, N - 1, top_axis(N), false),
            &after,
            "the store against the model",
        );

        for image in 0..SimFs::CRASH_IMAGES {
            let crashed = fs.crash_image(image);
            assert_eq!(
                on_disk(&crashed),
                disk,
                "image {image}: everything was synced"
            );
            let reopened = Store::open_in(sim(&crashed), config.clone(), &decls()).unwrap();
            let findings = &reopened.boot_report().findings;
            let removed_at_boot: BTreeSet<u64> = findings
                .iter()
                .filter(|f| f.kind == FindingKind::RetiredFile && f.action == Action::Remove)
                .map(|f| {
                    let name = f.file.rsplit('/').next().unwrap();
                    name.strip_suffix(".seg").unwrap().parse().unwrap()
                })
                .collect();
            assert_eq!(removed_at_boot, retired, "image {image}: {findings:?}");
            assert_eq!(
                findings.len(),
                retired.len(),
                "image {image}: only retired files found: {findings:?}"
            );
            assert!(
                !crashed.paths().iter().any(|p| p.starts_with("quarantine")),
                "image {image}: nothing quarantined"
            );
            assert_eq!(on_disk(&crashed), live(&reopened), "image {image}");
            assert_answers(
                &answers(&reopened, Fields::All, N - 1, top_axis(N), false),
                &after_store,
                &format!("{mode:?} image {image}: the reopened store"),
            );
            assert_answers(
                &answers(&reopened, Fields::V, N - 1, top_axis(N), false),
                &after,
                &format!("{mode:?} image {image}: the reopened store against the model"),
            );
        }

        // The live store goes on: the snapshot still answers as the model did when it was
        // taken; once it is dropped, the next write removes the files and the rewrite runs.
        assert_answers(
            &answers(&snapshot, Fields::All, N - 1, top_axis(N), false),
            &expected,
            "the snapshot",
        );
        drop(snapshot);
        assert!(store.checkpoint().unwrap(), "the rewrite waited only");
        assert_eq!(store.removals_pending(), 0);
        assert_eq!(on_disk(&fs), live(&store));
        assert_answers(
            &answers(&store, Fields::All, N - 1, top_axis(N), false),
            &after_store,
            "the store",
        );
    }
}

/// Test 5: a snapshot is `Send`: read on another thread while this one compacts, sweeps,
/// retires and trims; every answer there is the model's at its watermark.
#[test]
fn a_snapshot_read_on_another_thread_while_the_store_compacts_answers_exactly() {
    fn is_send<T: Send + 'static>(_: &T) {}
    let fs = SimFs::new();
    let mut store = Store::create_in(sim(&fs), retaining(2), &decls()).unwrap();
    let mut model = MemorySeries::new(&decls());
    feed(&mut store, &mut model, 0, N);
    let snapshot: Snapshot = store.snapshot();
    is_send(&snapshot);
    let expected = expected_at_snapshot(&model);
    let done = Arc::new(AtomicBool::new(false));
    let (started, start) = std::sync::mpsc::channel();
    let reader = {
        let done = Arc::clone(&done);
        std::thread::spawn(move || {
            let mut reads = 0;
            loop {
                // Read once more after the store is done, so one read follows every removal
                // the store would have made.
                let last = done.load(Ordering::Acquire);
                let got = answers(&snapshot, Fields::All, N - 1, top_axis(N), false);
                assert_answers(&got, &expected, &format!("read {reads} on the thread"));
                reads += 1;
                if reads == 1 {
                    started.send(()).unwrap();
                }
                if last {
                    return reads;
                }
            }
        })
    };
    start.recv().unwrap();
    let retired = retire_everything(&mut store, &mut model);
    let pending = store.removals_pending();
    assert!(pending >= retired.all().len());
    let disk = on_disk(&fs);
    assert_eq!(disk.len(), live(&store).len() + pending);
    assert!(retired.all().is_subset(&disk));
    done.store(true, Ordering::Release);
    let reads = reader.join().unwrap();
    assert!(reads >= 2, "{reads} reads");
    // The snapshot was dropped on the thread; the next write here removes the files.
    assert_eq!(store.snapshots(), 0);
    store.seal().unwrap();
    assert_eq!(store.removals_pending(), 0);
    assert_eq!(on_disk(&fs), live(&store));
    assert_new_state(&store, &model);
    eprintln!("{reads} reads on the thread, {pending} removals deferred");
}

/// One operation of the property test.
#[derive(Clone, Debug)]
enum Op {
    /// A barrier: rows of `S` as (run, axis step, value), and a note of `LOG` if set.
    Barrier(Vec<(usize, u64, i32)>, bool),
    CompactStep,
    Sweep,
    /// `trim_to` `back` positions beneath the watermark, of `S` (even) or `LOG` (odd).
    Trim(u64),
    Retire(usize),
    Take,
    /// Drops the live snapshot at this index (modulo how many live).
    Drop(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (
            prop::collection::vec((0..3usize, 1u64..6, -40i32..40), 1..5),
            any::<bool>()
        )
            .prop_map(|(rows, log)| Op::Barrier(rows, log)),
        3 => Just(Op::CompactStep),
        2 => Just(Op::Sweep),
        1 => (0u64..8).prop_map(Op::Trim),
        1 => (0..3usize).prop_map(Op::Retire),
        2 => Just(Op::Take),
        2 => (0..4usize).prop_map(Op::Drop),
    ]
}

/// A live snapshot of the property test, with what the store answered when it was taken.
struct Held1 {
    snapshot: Snapshot,
    top_position: u64,
    top_axis: u64,
    recorded: Vec<(String, Answer)>,
    watermark: Option<u64>,
}

/// What one case did.
#[derive(Debug, Default)]
struct Census {
    taken: usize,
    checks: usize,
    deferred_max: usize,
    model_answers: usize,
}

/// Test 4: random publish / seal / compact step / sweep / trim / retire sequences with
/// snapshots taken and dropped at random points. Every live snapshot's answers never change;
/// when it is taken, each answer the store gives is the model's (a refusal is the model's
/// too, or, under retention, a floor a sweep left); the files on disk are always the store's
/// live files and those waiting for removal; once every snapshot is dropped and one write
/// runs, they are exactly the live files.
#[expect(
    clippy::too_many_lines,
    reason = "one case: every operation and its checks"
)]
fn snapshot_case(ops: &[Op], retain: bool) -> Result<Census, TestCaseError> {
    let fs = SimFs::new();
    let mut config = Config::default()
        .compact_files_max(3)
        .compact_inputs_min(2)
        .compact_inputs_max(3)
        .open_segments_max(2);
    if retain {
        config = config
            .retain(
                S,
                Retention::raw(Lifetime::AxisSpan(24)).levels_from(0, Lifetime::AxisSpan(24)),
            )
            .retain(LOG, Retention::raw(Lifetime::Positions(6)));
    }
    let mut store = Store::create_in(sim(&fs), config.clone(), &decls()).unwrap();
    let mut model = MemorySeries::new(&decls());
    let mut next_position = 0u64;
    let mut axes = [0u64; 3];
    let mut watermark: Option<u64> = None;
    let mut held: Vec<Held1> = Vec::new();
    let mut census = Census::default();
    for (i, op) in ops.iter().enumerate() {
        let mut wrote = true;
        match op {
            Op::Barrier(rows, log) => {
                let p = next_position;
                next_position += 1;
                let rows: Vec<Row> = rows
                    .iter()
                    .map(|&(run, step, v)| {
                        axes[run] += step;
                        measured(RUNS[run], axes[run], v)
                    })
                    .collect();
                store.publish(S, p, &rows).unwrap();
                ready(model.publish(S, p, rows)).unwrap();
                if *log {
                    store.publish(LOG, p, &notes_at(p)).unwrap();
                    ready(model.publish(LOG, p, notes_at(p))).unwrap();
                }
                store.seal().unwrap();
                ready(model.seal(S, &[])).unwrap();
                watermark = Some(p);
            }
            Op::CompactStep => {
                store.compact_step().unwrap();
            }
            Op::Sweep => {
                store.sweep().unwrap();
            }
            Op::Trim(back) => {
                let Some(w) = watermark else { continue };
                let stream = if back % 2 == 0 { S } else { LOG };
                let horizon = w.saturating_sub(*back);
                let a = store.trim_to(stream, horizon);
                let b = model.trim_to(stream, horizon);
                prop_assert_eq!(
                    a.is_ok(),
                    b.is_ok(),
                    "op {}: trim {} to {}",
                    i,
                    stream,
                    horizon
                );
            }
            Op::Retire(run) => {
                // A run never sealed, or retired already, is refused alike, recording nothing.
                let a = store.retire(S, &[RUNS[*run]]).map(drop);
                let b = model.retire(S, &[RUNS[*run]]).map(drop);
                prop_assert_eq!(
                    format!("{a:?}"),
                    format!("{b:?}"),
                    "op {}: retire {}",
                    i,
                    RUNS[*run]
                );
            }
            Op::Take => {
                wrote = false;
                let top_position = watermark.unwrap_or(0);
                let top_axis = axes.iter().copied().max().unwrap_or(0);
                let recorded = answers(&store, Fields::All, top_position, top_axis, true);
                let recorded_v = answers(&store, Fields::V, top_position, top_axis, true);
                let modelled = answers(&model, Fields::V, top_position, top_axis, true);
                for (k, ((what, got), (_, expected))) in
                    recorded_v.iter().zip(&modelled).enumerate()
                {
                    if got.is_ok() {
                        census.model_answers += 1;
                    }
                    if retain && is_floor(got) {
                        continue;
                    }
                    // A sweep's raw floor lies just past the last row it retired; a trim's at
                    // the first row kept, which the model's trims follow. A trim that finds a
                    // sweep's floor at its position already raises nothing, so the store may
                    // answer from a lower axis value than the model: rows of the partition
                    // never lay between the two, so it answers what the model holds from its
                    // own floor up.
                    if let (true, Ok(_), Some(floor)) = (retain, got, floor_axis(expected)) {
                        let raised = Raised {
                            inner: &model,
                            axis_from: floor,
                        };
                        let from_floor = answers(&raised, Fields::V, top_position, top_axis, true);
                        prop_assert_eq!(
                            got,
                            &from_floor[k].1,
                            "op {}: the store's {}, the model's from its floor {}",
                            i,
                            what,
                            floor
                        );
                        continue;
                    }
                    prop_assert_eq!(got, expected, "op {}: the store's {}", i, what);
                }
                let snapshot = store.snapshot();
                let own = answers(&snapshot, Fields::All, top_position, top_axis, true);
                prop_assert_eq!(&own, &recorded, "op {}: the snapshot as taken", i);
                census.taken += 1;
                held.push(Held1 {
                    snapshot,
                    top_position,
                    top_axis,
                    recorded,
                    watermark,
                });
            }
            Op::Drop(k) => {
                wrote = false;
                if !held.is_empty() {
                    held.remove(k % held.len());
                }
            }
        }
        // What is on disk: the store's live files and the removals waiting, nothing else.
        let disk = on_disk(&fs);
        let live_now = live(&store);
        prop_assert!(live_now.is_subset(&disk), "op {}: a live file missing", i);
        prop_assert_eq!(
            disk.len(),
            live_now.len() + store.removals_pending(),
            "op {}: files on disk beyond the live ones and those queued",
            i
        );
        census.deferred_max = census.deferred_max.max(store.removals_pending());
        if wrote && held.is_empty() && !matches!(op, Op::Sweep | Op::Trim(_) | Op::Retire(_)) {
            prop_assert_eq!(store.removals_pending(), 0, "op {}: nothing holds them", i);
        }
        prop_assert_eq!(store.snapshots(), held.len());
        if wrote {
            for (n, h) in held.iter().enumerate() {
                let named = live(&h.snapshot);
                prop_assert!(
                    named.is_subset(&disk),
                    "op {}: snapshot {} lost files {:?}",
                    i,
                    n,
                    named.difference(&disk).collect::<Vec<_>>()
                );
                prop_assert_eq!(h.snapshot.watermark(S, &[]).unwrap(), h.watermark);
                let got = answers(&h.snapshot, Fields::All, h.top_position, h.top_axis, true);
                for ((what, got), (_, recorded)) in got.iter().zip(&h.recorded) {
                    prop_assert_eq!(got, recorded, "op {}: snapshot {}'s {}", i, n, what);
                }
                census.checks += 1;
            }
        }
    }
    held.clear();
    store.seal().unwrap();
    prop_assert_eq!(store.removals_pending(), 0);
    prop_assert_eq!(on_disk(&fs), live(&store), "no file leaked");
    let top_axis = axes.iter().copied().max().unwrap_or(0);
    let before = answers(&store, Fields::All, watermark.unwrap_or(0), top_axis, true);
    drop(store);
    let store = Store::open_in(sim(&fs), config, &decls()).unwrap();
    prop_assert!(
        store.boot_report().findings.is_empty(),
        "boot found {:?}",
        store.boot_report().findings
    );
    let after = answers(&store, Fields::All, watermark.unwrap_or(0), top_axis, true);
    prop_assert_eq!(after, before);
    Ok(census)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn live_snapshots_never_change_and_no_file_leaks(
        ops in prop::collection::vec(op(), 12..60),
        retain in any::<bool>(),
    ) {
        let census = snapshot_case(&ops, retain)?;
        eprintln!("{census:?}");
    }
}

/// Shrunk from `live_snapshots_never_change_and_no_file_leaks` (CI, 2026-12-04): a
/// compaction's sweep raised run `b`'s raw floor to position 9 at axis 9 (past the last row it
/// retired, at 8); a later `trim_to` of position 8 raised nothing there, where the model, which
/// keeps no retention, put its floor at the first row kept (13). The store's fold of 9..=49 is
/// answered and equals the model's from 13: no row of `b` ever lay between.
#[test]
fn a_trim_beneath_a_sweeps_floor_answers_what_the_model_holds_from_its_own() {
    use Op::{Barrier, CompactStep, Take, Trim};
    let ops = vec![
        Barrier(vec![(0, 1, 0)], false),
        Barrier(vec![(2, 3, 0), (2, 5, 0)], false),
        Barrier(vec![(2, 1, 0), (2, 2, 0)], false),
        Barrier(vec![(2, 4, 4), (1, 2, 30), (2, 5, -13)], false),
        Barrier(vec![(2, 5, -19), (2, 1, -13), (0, 2, -10)], true),
        Barrier(vec![(1, 5, 36)], false),
        Barrier(vec![(2, 3, 19), (2, 3, -21), (2, 4, 36), (2, 2, 1)], false),
        Barrier(vec![(0, 5, -9), (2, 3, 35), (0, 2, 30), (2, 1, -32)], true),
        Barrier(vec![(0, 1, -19), (1, 1, -26)], true),
        Barrier(
            vec![(2, 5, -27), (0, 5, 15), (1, 5, -13), (1, 2, 32)],
            false,
        ),
        CompactStep,
        Barrier(vec![(0, 1, -15), (1, 2, -7), (2, 2, -9)], true),
        Trim(2),
        Take,
    ];
    snapshot_case(&ops, true).unwrap();
}
