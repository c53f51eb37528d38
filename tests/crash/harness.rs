//! The crash harness: a scenario (a store prepared uncounted, then one operation) run
//! uncrashed to learn its operations and the states each durable record leaves, then crashed
//! at every operation under every crash image in both rename modes, booted and checked; and
//! boot's own healing crashed at every one of its operations and booted again (a second crash).
//!
//! Every crash point must reach the disk and fail of the crash; every scenario starts from a
//! disk with evidence in quarantine; images are booted once per distinct content.
//!
//! The invariants every boot is held to (`boot`, then `go_on`): boot's findings lose nothing; the
//! recovered state is one the uncrashed run passed through (every acknowledged record whole,
//! the crashed operation all or nothing), and after a crash inside boot's heal the one the
//! uncrashed boot of the same image recovered; every answer equals the model (`MemorySeries`
//! given the same operations) at that state; nothing quarantined is deleted (every quarantined
//! byte string is still there, unchanged); and the store takes the next barrier and the next
//! compaction step, answers them as the model does (or the uncrashed run did), and every file
//! and manifest generation it creates from boot on is named above every name the disk held
//! before boot.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::error::Error;
use std::fmt::{Debug, Write};
use std::future::Future;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::io;
use std::ops::RangeInclusive;
use std::pin::pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll, Waker};

use strata::index::{Tier, TrackKey, parse_log, preamble_of, whole_state};
use strata::recover::{Action, FindingKind};
use strata::segment::names::NAME_DIGITS;
use strata::segment::vfs::{RenameMode, SimFs, Vfs};
use strata::{
    Aggregate, BeneathWindow, Config, EngineError, FieldKind, MemorySeries, Row, Series, Store,
    Stream, StreamDecl, Value,
};

use crate::census;
use crate::logged::Logged;

pub const STREAM: &str = "series";
/// Barriers every scenario's store holds before its operation, at positions `0..N_PREFILL`.
pub const N_PREFILL: u64 = 4;
/// The tracks the prefill publishes (two, so a per-track operation leaves another behind).
pub const PREFILL_TRACKS: [&str; 2] = ["a", "b"];
/// Every track a scenario publishes to: a seal of many partitions touches all of them.
pub const ALL_TRACKS: [&str; 4] = ["a", "b", "c", "d"];
/// The position of the barrier a recovered store takes next: above every scenario's.
pub const NEXT: u64 = 100;
/// Both ways a file system can rename without replacing: every crash point runs on each.
pub const MODES: [RenameMode; 2] = [RenameMode::Noreplace, RenameMode::LinkUnlink];

pub fn decl() -> StreamDecl {
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

/// The rows published at `position` for `tracks`: two a track, at axis values 8p + i and
/// 8p + 4 + i (i the track's index in `ALL_TRACKS`), each valued 100 i + t.
pub fn rows_at(position: u64, tracks: &[&str]) -> Vec<Row> {
    let mut rows = Vec::new();
    for track in tracks {
        let i = ALL_TRACKS.iter().position(|t| t == track).unwrap() as u64;
        for t in [8 * position + i, 8 * position + 4 + i] {
            let v = i64::try_from(100 * i + t).unwrap();
            rows.push(vec![
                Value::Str((*track).into()),
                Value::U64(t),
                Value::I64(v),
            ]);
        }
    }
    rows
}

pub fn sim(fs: &SimFs) -> Arc<dyn Vfs> {
    Arc::new(fs.clone())
}

/// Runs a future that never waits (the model's `Series` methods) to its end.
pub fn ready<T>(future: impl Future<Output = T>) -> T {
    let mut future = pin!(future);
    match future
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(out) => out,
        Poll::Pending => panic!("the model never waits"),
    }
}

/// Publishes and seals barriers `positions` of `tracks` in the store.
pub fn fill(store: &mut Store, positions: RangeInclusive<u64>, tracks: &[&str]) {
    for position in positions {
        store
            .publish(STREAM, position, &rows_at(position, tracks))
            .unwrap();
        store.seal().unwrap();
    }
}

/// `fill`, in the model.
pub fn model_fill(model: &mut MemorySeries, positions: RangeInclusive<u64>, tracks: &[&str]) {
    for position in positions {
        ready(model.publish(STREAM, position, rows_at(position, tracks))).unwrap();
        ready(model.seal(STREAM, &[])).unwrap();
    }
}

/// What the model can say of an operation's effect.
#[derive(Clone, Copy)]
pub enum Effect {
    /// The answers do not change (a manifest rewrite, a compaction step).
    Unchanged,
    /// The model applies the operation: one durable record, answers before or after it.
    Apply(fn(&mut MemorySeries)),
    /// The model cannot apply it (a retention sweep): the answers are compared with the ones
    /// the uncrashed run recorded after each record instead, and the census says so.
    Unmodelled,
}

/// An operation one durable record at a time, calling back after each.
pub type Steps = fn(&mut Store, &mut dyn FnMut(&Store));

#[derive(Clone, Copy)]
pub struct Scenario {
    /// A slug (no `/`): it names the scenario in a census line and in `STRATA_CRASH_ONLY`.
    pub name: &'static str,
    pub config: fn() -> Config,
    /// Run after the prefill, uncounted and never crashed (staged rows are lost to a crash).
    pub prepare: fn(&mut Store),
    /// What `prepare` made durable, in the model.
    pub model_prepare: fn(&mut MemorySeries),
    /// The operation crashed, whole.
    pub op: fn(&mut Store) -> Result<(), EngineError>,
    /// The operation one durable record at a time, calling back after each: the states a
    /// crash may leave. Takes the same file-system operations as `op`.
    pub steps: Steps,
    pub effect: Effect,
    /// Whether boot may remove a file whose retirement is recorded (a crash before the
    /// operation removed it).
    pub retires: bool,
    /// Whether the operation rewrites the manifest (the probe asserts it does).
    pub rewrites: bool,
}

/// Everything the reads answer: watermark, queries, level folds and a percentile, surveys,
/// level cells; a `Floor` refusal with its floor and unit, any other refusal by its kind.
pub trait Reads {
    fn answers(&self) -> String;
}

fn norm<T: Debug>(answer: Result<T, EngineError>) -> String {
    match answer {
        Ok(value) => format!("{value:?}"),
        Err(EngineError::Floor { floor, unit, .. }) => format!("Floor({floor} {unit})"),
        Err(other) => {
            let debug = format!("{other:?}");
            let kind: String = debug
                .chars()
                .take_while(char::is_ascii_alphabetic)
                .collect();
            format!("Err({kind})")
        }
    }
}

const SELECTIONS: [&[&str]; 4] = [&[], &["a"], &["b"], &["c"]];
const POSITIONS: [RangeInclusive<u64>; 2] = [0..=u64::MAX, 2..=u64::MAX];
const AXES: [RangeInclusive<u64>; 2] = [0..=u64::MAX, 16..=u64::MAX];

macro_rules! answers_of {
    ($reader:expr, $watermark:expr) => {{
        let r = $reader;
        let mut out = String::new();
        for selection in SELECTIONS {
            writeln!(out, "watermark {selection:?} {}", $watermark(selection)).unwrap();
            for range in POSITIONS {
                let rows = norm(r.query(STREAM, selection, range.clone()));
                writeln!(out, "query {selection:?} {range:?} {rows}").unwrap();
            }
            for range in AXES {
                for aggregate in [Aggregate::Count, Aggregate::Sum, Aggregate::p(50)] {
                    let stat = norm(r.fold(STREAM, selection, range.clone(), aggregate));
                    writeln!(out, "fold {selection:?} {aggregate} {range:?} {stat}").unwrap();
                }
                let survey = norm(r.survey(STREAM, selection, range.clone(), 40));
                writeln!(out, "survey {selection:?} {range:?} {survey}").unwrap();
                for level in 0..=2 {
                    let cells = norm(r.level_cells(STREAM, selection, "v", level, range.clone()));
                    writeln!(out, "level {level} {selection:?} {range:?} {cells}").unwrap();
                }
            }
        }
        out
    }};
}

impl Reads for Store {
    fn answers(&self) -> String {
        answers_of!(self, |selection: &[&str]| format!(
            "{:?}",
            self.watermark(STREAM, selection)
                .map_err(BeneathWindow::from)
        ))
    }
}

impl Reads for MemorySeries {
    fn answers(&self) -> String {
        // With nothing staged, the model's seal costs nothing and answers the watermark.
        let mut model = self.clone();
        answers_of!(self, |selection: &[&str]| {
            let track: Vec<String> = selection.iter().map(|s| (*s).to_owned()).collect();
            format!("{:?}", ready(model.seal(STREAM, &track)))
        })
    }
}

/// The live tiers of every partition's segments: which records a recovered catalog holds,
/// beyond what the reads show (a compaction's merge and its inputs answer alike).
fn tiers(store: &Store) -> String {
    let mut out = String::new();
    for view in store.catalog().partitions(STREAM, &TrackKey::ROOT) {
        for (name, entry, _) in view.live_segments() {
            let live: Vec<Tier> = std::iter::once(Tier::Raw)
                .chain((0..entry.n_levels).map(Tier::Level))
                .filter(|&tier| view.is_live(name, tier))
                .collect();
            writeln!(out, "{:?} {name} {live:?}", view.track()).unwrap();
        }
    }
    out
}

/// A state a crash may leave: what the reads answer and which tiers are live.
#[derive(Clone, PartialEq, Eq)]
pub struct State {
    pub answers: String,
    pub tiers: String,
}

impl State {
    pub fn of(store: &Store) -> State {
        State {
            answers: store.answers(),
            tiers: tiers(store),
        }
    }
}

/// The disk every scenario starts from, in `mode`, as a fresh copy: the prefill's barriers
/// `0..N_PREFILL`, then a seal of position `N_PREFILL` (track "c") crashed after its segment's
/// temp was written and before anything claimed it, and a reopen that quarantined the temp. So
/// every boot the harness checks meets evidence in quarantine that it must keep, and a name
/// (the quarantined temp's) that every name it issues must be above. The lost barrier changes
/// no answer: the model never sees it.
pub fn disk(mode: RenameMode) -> SimFs {
    static DISKS: OnceLock<[SimFs; 2]> = OnceLock::new();
    let disks = DISKS.get_or_init(|| MODES.map(evidence_disk));
    let idx = MODES.iter().position(|m| *m == mode).unwrap();
    disks[idx].crash()
}

fn evidence_disk(mode: RenameMode) -> SimFs {
    let stage = |fs: &SimFs| {
        let mut store = Store::create_in(sim(fs), Config::default(), &[decl()]).unwrap();
        fill(&mut store, 0..=N_PREFILL - 1, &PREFILL_TRACKS);
        store
            .publish(STREAM, N_PREFILL, &rows_at(N_PREFILL, &["c"]))
            .unwrap();
        store
    };
    let mut prefill = MemorySeries::new(&[decl()]);
    model_fill(&mut prefill, 0..=N_PREFILL - 1, &PREFILL_TRACKS);
    let prefill = prefill.answers();
    let probe = SimFs::with_rename_mode(mode);
    let mut store = stage(&probe);
    let start = probe.ops();
    store.seal().unwrap();
    let n_ops = probe.ops() - start;
    // The first crash point whose image (every directory operation kept) boots to the prefill
    // with a written temp in quarantine: the seal lost, its bytes kept as evidence.
    for k in 0..n_ops {
        let fs = SimFs::with_rename_mode(mode);
        let mut store = stage(&fs);
        fs.crash_at(fs.ops() + k);
        assert!(store.seal().is_err());
        drop(store);
        let image = fs.crash_keeping_dir_ops(usize::MAX);
        let store = Store::open_in(sim(&image), Config::default(), &[decl()]).unwrap();
        let answers = store.answers();
        drop(store);
        let kept = quarantine(&image);
        let temp =
            |(name, bytes): (&String, &Vec<u8>)| name.starts_with("tmp-") && !bytes.is_empty();
        if answers == prefill && kept.iter().any(temp) {
            return image.crash();
        }
    }
    panic!("no crash of the evidence seal leaves a temp in quarantine")
}

/// A store of the scenario on `fs` (a copy of `disk`), prepared (nothing counted yet).
pub fn prepared(scenario: &Scenario, fs: &SimFs) -> Store {
    prepared_on(scenario, sim(fs))
}

pub fn prepared_on(scenario: &Scenario, vfs: Arc<dyn Vfs>) -> Store {
    let mut store = Store::open_in(vfs, (scenario.config)(), &[decl()]).unwrap();
    (scenario.prepare)(&mut store);
    store
}

/// The model after the prefill, and after the operation if `applied`.
pub fn model(scenario: &Scenario, applied: bool) -> MemorySeries {
    let mut model = MemorySeries::new(&[decl()]);
    model_fill(&mut model, 0..=N_PREFILL - 1, &PREFILL_TRACKS);
    (scenario.model_prepare)(&mut model);
    if let (true, Effect::Apply(apply)) = (applied, scenario.effect) {
        apply(&mut model);
    }
    model
}

/// What an uncrashed run of a scenario leaves.
pub struct Probe {
    /// File-system operations the operation takes.
    pub n_ops: u64,
    /// Before, then after each durable record.
    pub states: Vec<State>,
    /// Per state, what the model answers there and after the next barrier and compaction step;
    /// for an unmodelled operation, what the uncrashed run answered there and after the next
    /// barrier and compaction step (before the operation and after it; `None` between).
    pub modelled: Vec<Option<(String, String)>>,
    /// The manifest generation before and after the operation.
    pub generations: (u32, u32),
    /// What each operation is (`write_all tmp/…`), for a violation's message.
    pub kinds: Vec<String>,
}

/// The highest manifest generation among `names`.
fn generation(names: &[String]) -> u32 {
    names
        .iter()
        .filter_map(|n| n.strip_prefix("manifest-")?.parse().ok())
        .max()
        .unwrap()
}

/// A current generation taken from another has that one beside it, holding the bytes its
/// preamble records (length and crc32c): the way back a repair takes should the current one's
/// snapshot be damaged. Whatever a crash interrupted, a boot never leaves a rewritten
/// generation without it.
fn way_back_kept(image: &SimFs) -> Result<(), String> {
    let current = generation(&manifests(image));
    let name = format!("manifest-{current:06}");
    let bytes = image
        .live_bytes(&name)
        .ok_or(format!("{name} is not readable"))?;
    let parsed = parse_log(&bytes);
    let Some(replaced) = parsed
        .records
        .first()
        .and_then(preamble_of)
        .and_then(|p| p.replaces)
    else {
        return Ok(());
    };
    let kept = format!("manifest-{:06}", replaced.generation);
    match image.live_bytes(&kept) {
        Some(bytes) if whole_state(replaced.generation, &bytes) == replaced => Ok(()),
        Some(_) => Err(format!(
            "{kept}, the way back {name}'s preamble names, is not the bytes it records"
        )),
        None => Err(format!(
            "{kept}, the way back {name}'s preamble names, is gone after boot"
        )),
    }
}

pub fn manifests(fs: &SimFs) -> Vec<String> {
    let mut names: Vec<String> = fs
        .list("")
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .filter(|n| n.starts_with("manifest-"))
        .collect();
    names.sort();
    names
}

/// The store takes the next barrier and compaction step (as `go_on` has a recovered store do),
/// and answers.
fn next_answers(store: &mut Store) -> String {
    store
        .publish(STREAM, NEXT, &rows_at(NEXT, &PREFILL_TRACKS))
        .unwrap();
    store.seal().unwrap();
    store.compact_step().unwrap();
    store.answers()
}

pub fn probe(scenario: &Scenario, mode: RenameMode) -> Probe {
    let name = scenario.name;
    let fs = disk(mode);
    let mut store = prepared(scenario, &fs);
    let manifests_before = manifests(&fs);
    let start = fs.ops();
    let mut states = vec![State::of(&store)];
    (scenario.steps)(&mut store, &mut |store| states.push(State::of(store)));
    let n_ops = fs.ops() - start;
    // A crash point that never reaches the disk layer would pass whatever the engine did.
    assert!(
        n_ops > 0,
        "{name}: the operation reached no file-system operation"
    );
    assert_eq!(
        manifests(&fs) != manifests_before,
        scenario.rewrites,
        "{name}: whether the operation rewrites the manifest: {manifests_before:?} -> {:?}",
        manifests(&fs)
    );
    // A manifest rewrite changes no answer and no tier: its generation tells it apart.
    assert!(
        scenario.rewrites || states.first() != states.last(),
        "{name}: the operation changes nothing"
    );
    let generations = (generation(&manifests_before), generation(&manifests(&fs)));
    drop(store);
    // The whole operation takes the operations its steps took, and ends alike; logged, so
    // a violation can name the kind of operation it was crashed at.
    let fs = disk(mode);
    let logged = Logged::new(&fs);
    let mut store = prepared_on(scenario, Arc::new(logged.clone()));
    let start = fs.ops();
    (scenario.op)(&mut store).unwrap();
    assert_eq!(fs.ops() - start, n_ops, "{name}: op and steps differ");
    let kinds = (start..start + n_ops)
        .map(|op| logged.kind_of(op).unwrap_or_default())
        .collect();
    assert!(
        Some(&State::of(&store)) == states.last(),
        "{name}: op and steps end apart"
    );
    // What the uncrashed run answers after the next barrier, before the operation and after.
    let uncrashed_next = (
        next_answers(&mut prepared(scenario, &disk(mode))),
        next_answers(&mut store),
    );
    let last = states.len() - 1;
    let modelled: Vec<Option<(String, String)>> = (0..states.len())
        .map(|idx| {
            let applied = idx > 0;
            match scenario.effect {
                Effect::Unmodelled if idx == 0 => {
                    Some((states[0].answers.clone(), uncrashed_next.0.clone()))
                }
                Effect::Unmodelled if idx == last => {
                    Some((states[last].answers.clone(), uncrashed_next.1.clone()))
                }
                Effect::Unmodelled => None,
                Effect::Unchanged | Effect::Apply(_) => {
                    let mut model = model(scenario, applied);
                    let now = model.answers();
                    model_fill(&mut model, NEXT..=NEXT, &PREFILL_TRACKS);
                    Some((now, model.answers()))
                }
            }
        })
        .collect();
    // The uncrashed run itself answers as the model does, state by state.
    for (idx, (state, modelled)) in states.iter().zip(&modelled).enumerate() {
        if let Some((answers, _)) = modelled {
            assert_eq!(
                &state.answers, answers,
                "{name}, {mode:?}: uncrashed state {idx} against the model"
            );
        }
    }
    Probe {
        n_ops,
        states,
        modelled,
        generations,
        kinds,
    }
}

/// A crash image: its name (as `STRATA_CRASH_ONLY` names it) and the file system.
pub fn images(fs: &SimFs) -> Vec<(String, SimFs)> {
    let mut images = vec![("crash".to_owned(), fs.crash())];
    for (keep, name) in [(1, "1"), (9, "9"), (64, "64"), (usize::MAX, "all")] {
        images.push((format!("torn-{name}"), fs.crash_tearing(keep)));
    }
    for n in 1..=fs.recent_dir_ops() {
        images.push((format!("dirops-{n}"), fs.crash_keeping_dir_ops(n)));
    }
    images
}

/// Every file's bytes under `quarantine/`, by name.
pub fn quarantine(fs: &SimFs) -> BTreeMap<String, Vec<u8>> {
    fs.paths()
        .into_iter()
        .filter_map(|path| {
            let name = path.strip_prefix("quarantine/")?.to_owned();
            Some((name, fs.live_bytes(&path).unwrap()))
        })
        .collect()
}

/// Every byte string of `kept` is still in `now` (under any name: a second boot may
/// quarantine the same bytes under another).
fn keeps(kept: &BTreeMap<String, Vec<u8>>, now: &BTreeMap<String, Vec<u8>>) -> Result<(), String> {
    let present: BTreeSet<&Vec<u8>> = now.values().collect();
    for (name, bytes) in kept {
        if !present.contains(bytes) {
            return Err(format!(
                "quarantined {name} ({} bytes) is gone from quarantine {:?}",
                bytes.len(),
                now.keys().collect::<Vec<_>>()
            ));
        }
    }
    Ok(())
}

/// A fingerprint of a crash image's content: every folder's entries and every file's bytes.
/// Two images with one fingerprint boot alike, so the harness boots the first only.
pub fn fingerprint(fs: &SimFs) -> u64 {
    let mut hasher = DefaultHasher::new();
    for dir in ["", "seg", "tmp", "quarantine"] {
        let mut names: Vec<(String, bool)> = fs
            .list(dir)
            .map(|entries| entries.into_iter().map(|e| (e.name, e.is_dir)).collect())
            .unwrap_or_default();
        names.sort();
        (dir, names).hash(&mut hasher);
    }
    for path in fs.paths() {
        (fs.live_bytes(&path), path).hash(&mut hasher);
    }
    hasher.finish()
}

/// Every file's live bytes, by path.
fn files(fs: &SimFs) -> BTreeMap<String, Vec<u8>> {
    fs.paths()
        .into_iter()
        .filter_map(|path| Some((path.clone(), fs.live_bytes(&path)?)))
        .collect()
}

/// Whether `error` is, somewhere down its chain of sources, the simulated crash.
pub fn caused_by_crash(error: &(dyn Error + 'static)) -> bool {
    let mut cause = Some(error);
    while let Some(e) = cause {
        if e.downcast_ref::<io::Error>().is_some_and(SimFs::is_crash) {
            return true;
        }
        cause = e.source();
    }
    false
}

/// The highest names a disk holds anywhere (seg/, tmp/, quarantine/, the root), whatever the
/// name around them (quarantine names a file `tmp-seg-000000000005…`, a manifest
/// `root-manifest-000003`): every name issued afterwards must be above them.
#[derive(Clone, Copy, Debug)]
pub struct Seen {
    /// The highest file number: every run of exactly `NAME_DIGITS` digits.
    pub name: u64,
    /// The highest manifest generation: the digits after `manifest-`.
    pub generation: u64,
}

fn numbers(path: &str) -> Vec<u64> {
    let name = path.rsplit('/').next().unwrap_or_default();
    name.split(|c: char| !c.is_ascii_digit())
        .filter(|run| run.len() == NAME_DIGITS)
        .map(|run| run.parse().unwrap())
        .collect()
}

fn manifest_generation(path: &str) -> Option<u64> {
    let name = path.rsplit('/').next()?;
    let at = name.find("manifest-")? + "manifest-".len();
    let digits: String = name[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

pub fn seen(fs: &SimFs) -> Seen {
    let paths = fs.paths();
    Seen {
        name: paths.iter().flat_map(|p| numbers(p)).max().unwrap_or(0),
        generation: paths
            .iter()
            .filter_map(|p| manifest_generation(p))
            .max()
            .unwrap_or(0),
    }
}

/// Every file the store created on `logged`, and every manifest generation it made current, is
/// named above what `seen` found on the disk before boot: temps, segments, levels, merges
/// (live or retired since) and manifests alike.
pub fn check_issued(logged: &Logged, seen: Seen) -> Result<(), String> {
    for path in logged.issued() {
        if let Some(n) = numbers(&path).into_iter().find(|&n| n <= seen.name) {
            return Err(format!(
                "issued {path}: its number {n} is not above {}, a name the disk held before boot",
                seen.name
            ));
        }
        if let Some(g) = manifest_generation(&path).filter(|&g| g <= seen.generation) {
            return Err(format!(
                "issued {path}: generation {g} is not above {}, a generation the disk held \
                 before boot",
                seen.generation
            ));
        }
    }
    Ok(())
}

/// Boot's findings lose nothing: no acknowledged history damaged or missing, no folder missing
/// and nothing foreign (the harness's disks hold neither), every file it moved aside is in
/// quarantine, a second name it dropped names bytes still under their final name (`before`:
/// every file before boot, and still there or in quarantine), and it removes only a file whose retirement is recorded.
fn check_findings(
    store: &Store,
    image: &SimFs,
    retires: bool,
    before: &BTreeMap<String, Vec<u8>>,
) -> Result<(), String> {
    for finding in &store.boot_report().findings {
        if matches!(
            finding.kind,
            FindingKind::DamagedHistory
                | FindingKind::MissingFile
                | FindingKind::WrongLength
                | FindingKind::BadChecksum
                | FindingKind::MissingFolder
                | FindingKind::Foreign
        ) || (!retires && finding.kind == FindingKind::RetiredFile)
        {
            return Err(format!("boot found {finding}"));
        }
        match &finding.action {
            Action::Quarantine { to } | Action::AlreadyQuarantined { at: to } => {
                let path = format!("quarantine/{to}");
                if !image.exists(&path).unwrap() {
                    return Err(format!("{finding}: nothing at {path}"));
                }
            }
            Action::DropSecondName { of } => {
                let dropped = before.get(&finding.file);
                if dropped.is_none() || dropped != before.get(of) {
                    return Err(format!(
                        "{finding}: {of} did not hold the same bytes as {} before boot",
                        finding.file
                    ));
                }
                // Boot may quarantine the final name too (an unrecorded segment): the bytes
                // must then be there.
                let kept = |bytes| quarantine(image).values().any(|b| Some(b) == bytes);
                if image.live_bytes(of).as_ref() != dropped && !kept(dropped) {
                    return Err(format!(
                        "{finding}: the bytes are neither at {of} nor in quarantine"
                    ));
                }
            }
            Action::Remove if !(retires && finding.kind == FindingKind::RetiredFile) => {
                return Err(format!("only a retired file may be removed: {finding}"));
            }
            _ => {}
        }
    }
    Ok(())
}

/// Where a crash point is, for a violation's message and for `STRATA_CRASH_ONLY`.
#[derive(Clone)]
pub struct Point {
    pub test: &'static str,
    pub scenario: &'static str,
    pub mode: RenameMode,
    pub k: u64,
    pub n_ops: u64,
    /// The kind of operation k.
    pub kind: String,
    pub image: String,
    /// Boot's heal crashed, once per crash after the first: outermost first.
    pub heals: Vec<HealCrash>,
}

/// A crash inside boot's heal: at its operation `op` (of kind `kind`), leaving `image`.
#[derive(Clone)]
pub struct HealCrash {
    pub op: u64,
    pub kind: String,
    pub image: String,
}

impl Point {
    pub fn key(&self) -> String {
        let mut key = format!(
            "{}/{:?}/{}/{}",
            self.scenario,
            self.mode,
            self.k,
            // A word after the image's name says more of it, and is no part of the key.
            self.image.split(' ').next().unwrap_or_default()
        );
        for heal in &self.heals {
            write!(key, "/{}/{}", heal.op, heal.image).unwrap();
        }
        key
    }

    /// Panics naming the point and the line that runs it alone.
    #[track_caller]
    pub fn fail(&self, why: &str) -> ! {
        let mut heal = String::new();
        for h in &self.heals {
            write!(
                heal,
                ", then boot's heal crashed at its op {} ({}), image {}",
                h.op, h.kind, h.image
            )
            .unwrap();
        }
        panic!(
            "violation: scenario {}, rename mode {:?}, {} at op {} of {} ({}), image {}{heal}: \
             {why}\nreproduce: STRATA_CRASH_ONLY='{}' cargo test --test crash {}",
            self.scenario,
            self.mode,
            if self.image.starts_with("fault") {
                "fault"
            } else {
                "crash"
            },
            self.k,
            self.n_ops,
            self.kind,
            self.image,
            self.key(),
            self.test
        )
    }

    /// Whether `STRATA_CRASH_ONLY` lets this point run (a prefix of its key, at `/` bounds).
    pub fn selected(&self) -> bool {
        selected(&self.key())
    }
}

/// Whether `STRATA_CRASH_ONLY` (unset: everything) lets the point keyed `key` run: the two
/// agree on every component both name.
pub fn selected(key: &str) -> bool {
    let Ok(only) = std::env::var("STRATA_CRASH_ONLY") else {
        return true;
    };
    only.split('/').zip(key.split('/')).all(|(a, b)| a == b)
}

/// Whether the filter `only` names a crash of `scenario` (not a fault: a fault's key names one in
/// a component after the operation): then the scenario's crash test must select something.
pub fn names_crash(only: &str, scenario: &str) -> bool {
    only.split('/').next() == Some(scenario) && !only.split('/').any(|c| c.starts_with("fault"))
}

/// Whether the filter `only` names a fault of `scenario` at one of its operations (or all of
/// them): then the fault test must select something.
pub fn names_fault(only: &str, scenario: &str) -> bool {
    let mut parts = only.split('/');
    parts.next() == Some(scenario) && parts.nth(2).is_none_or(|image| image.starts_with("fault"))
}

/// What a run of a scenario counted.
#[derive(Default)]
pub struct Counts {
    pub ops: Vec<String>,
    /// The most durable records the operation writes (states past "before").
    pub records: usize,
    pub points: u64,
    /// Crash images made (every crash point x every image).
    pub images: u64,
    /// Of those, the distinct ones (by content), each booted and checked.
    pub distinct: u64,
    /// First boots that met evidence in quarantine (every one should: the prefill leaves some).
    pub evidence: u64,
    pub healed: u64,
    /// Images after a crash inside boot's heal, by depth (a second crash, a third).
    pub heal_images: Vec<u64>,
    /// Of those, the distinct ones booted and checked, by depth.
    pub heal_crashes: Vec<u64>,
    pub before: u64,
    pub after: u64,
    pub between: u64,
    /// Images holding the manifest generation the operation leaves.
    pub new_generation: u64,
    /// Fingerprints of what was booted already.
    pub booted: HashSet<u64>,
}

impl Counts {
    /// Whether the image keyed `key` (its fingerprint and whatever its checks depend on) is
    /// new: the first of its kind is booted, the rest only counted.
    pub fn first(&mut self, key: impl Hash) -> bool {
        let mut hasher = DefaultHasher::new();
        key.hash(&mut hasher);
        self.booted.insert(hasher.finish())
    }
}

/// A store booted and checked by `boot`.
pub struct Booted {
    pub store: Store,
    /// Its state's index in the probe.
    pub idx: usize,
    /// The quarantine boot left.
    pub quarantined: BTreeMap<String, Vec<u8>>,
    /// The file system the store runs on, logging every call from boot on.
    pub logged: Logged,
    /// The highest names on the disk before boot.
    pub seen: Seen,
}

/// Boots `image` as `point` and checks the invariants: boot's findings, the quarantine keeps
/// `kept`, the state is one the uncrashed run passed through, the answers the model's there.
pub fn boot(
    scenario: &Scenario,
    probe: &Probe,
    point: &Point,
    image: &SimFs,
    kept: &BTreeMap<String, Vec<u8>>,
) -> Booted {
    open_checked(scenario, probe, point, image, kept)
        .unwrap_or_else(|e| point.fail(&format!("boot refused: {e}")))
}

/// `boot`, but a boot that refuses is answered (nothing checked), not a violation.
pub fn open_checked(
    scenario: &Scenario,
    probe: &Probe,
    point: &Point,
    image: &SimFs,
    kept: &BTreeMap<String, Vec<u8>>,
) -> Result<Booted, EngineError> {
    let seen = seen(image);
    let before = files(image);
    let logged = Logged::new(image);
    let store = Store::open_in(Arc::new(logged.clone()), (scenario.config)(), &[decl()])?;
    if let Err(why) = check_findings(&store, image, scenario.retires, &before) {
        point.fail(&why);
    }
    let quarantined = quarantine(image);
    if let Err(why) = keeps(kept, &quarantined) {
        point.fail(&format!("boot deleted from quarantine: {why}"));
    }
    let state = State::of(&store);
    let Some(idx) = probe.states.iter().position(|s| *s == state) else {
        let diff: String = state
            .answers
            .lines()
            .chain(state.tiers.lines())
            .filter(|l| {
                !probe
                    .states
                    .iter()
                    .any(|s| s.answers.contains(l) || s.tiers.contains(l))
            })
            .flat_map(|l| [l, "\n"])
            .collect();
        point.fail(&format!(
            "the recovered state is none the uncrashed run passed through (not all or \
             nothing); lines found in none:\n{diff}"
        ))
    };
    if let Some((answers, _)) = &probe.modelled[idx]
        && state.answers != *answers
    {
        point.fail("the recovered answers differ from the model's");
    }
    Ok(Booted {
        store,
        idx,
        quarantined,
        logged,
        seen,
    })
}

/// The store takes the next barrier and the next compaction step, and answers them as the
/// model does (or, for an unmodelled operation, as the uncrashed run did); every name it issued
/// since boot (boot's own included) is above every name the disk held before boot; the
/// quarantine keeps what boot left there.
pub fn go_on(booted: Booted, image: &SimFs, probe: &Probe, point: &Point) {
    let Booted {
        mut store,
        idx,
        quarantined: kept,
        logged,
        seen,
    } = booted;
    store
        .publish(STREAM, NEXT, &rows_at(NEXT, &PREFILL_TRACKS))
        .unwrap_or_else(|e| point.fail(&format!("the next publish: {e}")));
    store
        .seal()
        .unwrap_or_else(|e| point.fail(&format!("the next barrier: {e}")));
    store
        .compact_step()
        .unwrap_or_else(|e| point.fail(&format!("the next compaction step: {e}")));
    let rows: Vec<Row> = store
        .query(STREAM, &[], NEXT..=NEXT)
        .unwrap_or_else(|e| point.fail(&format!("reading the next barrier: {e}")))
        .into_iter()
        .map(|r| r.values)
        .collect();
    if rows != rows_at(NEXT, &PREFILL_TRACKS) {
        point.fail(&format!("the next barrier answers {rows:?}"));
    }
    if let Some((_, next)) = &probe.modelled[idx]
        && store.answers() != *next
    {
        point.fail(
            "after the next barrier and compaction step, answers differ from the model's (or \
             the uncrashed run's)",
        );
    }
    if let Err(why) = check_issued(&logged, seen) {
        point.fail(&why);
    }
    if let Err(why) = keeps(&kept, &quarantine(image)) {
        point.fail(&format!("the next barrier deleted from quarantine: {why}"));
    }
}

/// Every crash point of `scenario` in `mode`: every operation k x every image, each distinct
/// image booted and checked by `check_image` (which crashes boot's heal as deep as
/// `counts.heal_crashes` says).
pub fn run(test: &'static str, scenario: &Scenario, mode: RenameMode, counts: &mut Counts) {
    let probe = probe(scenario, mode);
    counts.ops.push(format!("{} ({mode:?})", probe.n_ops));
    counts.records = counts.records.max(probe.states.len() - 1);
    for k in 0..probe.n_ops {
        let base = Point {
            test,
            scenario: scenario.name,
            mode,
            k,
            n_ops: probe.n_ops,
            kind: probe.kinds[k as usize].clone(),
            image: String::new(),
            heals: Vec::new(),
        };
        if !selected(&format!("{}/{mode:?}/{k}", scenario.name)) {
            continue;
        }
        let fs = disk(mode);
        let mut store = prepared(scenario, &fs);
        // The evidence the scenario starts with: no crash image may have lost any of it.
        let start = quarantine(&fs);
        let at = fs.ops() + k;
        fs.crash_at(at);
        match (scenario.op)(&mut store) {
            Err(e) if caused_by_crash(&e) => {}
            Err(e) => base.fail(&format!("the operation failed, not of the crash: {e}")),
            Ok(()) => base.fail("the operation survived its crash"),
        }
        // A crash point that never reaches the disk layer would pass whatever the engine did.
        if fs.ops() <= at {
            base.fail(&format!(
                "the crash was never reached: the operation stopped at op {}",
                fs.ops()
            ));
        }
        drop(store);
        for (image_name, image) in images(&fs) {
            let point = Point {
                image: image_name,
                ..base.clone()
            };
            if !point.selected() {
                continue;
            }
            counts.images += 1;
            if let Err(why) = keeps(&start, &quarantine(&image)) {
                point.fail(&format!("the operation deleted from quarantine: {why}"));
            }
            if counts.first((format!("{mode:?}"), fingerprint(&image))) {
                counts.distinct += 1;
                crash_point(scenario, &probe, &point, &image, counts);
            }
        }
        counts.points += 1;
    }
}

fn crash_point(
    scenario: &Scenario,
    probe: &Probe,
    point: &Point,
    image: &SimFs,
    counts: &mut Counts,
) {
    let new_generation = generation(&manifests(image)) == probe.generations.1;
    if new_generation {
        counts.new_generation += 1;
    }
    let idx = check_image(scenario, probe, point, image, None, counts);
    // A rewrite changes no state: whether the image holds its generation tells "after" apart.
    let last = probe.states.len() - 1;
    let as_after =
        probe.states[idx] == probe.states[last] && (!scenario.rewrites || new_generation);
    if as_after {
        counts.after += 1;
    } else if idx == 0 {
        counts.before += 1;
    } else {
        counts.between += 1;
    }
}

/// `check_image` for a first boot (no heal crashed yet): answers the recovered state's index.
pub fn check_first(
    scenario: &Scenario,
    probe: &Probe,
    point: &Point,
    image: &SimFs,
    counts: &mut Counts,
) -> usize {
    check_image(scenario, probe, point, image, None, counts)
}

/// What the uncrashed boot of an image recovered: a boot after a crash inside that boot's heal
/// must recover the same state and keep what it quarantined.
struct Uncrashed<'a> {
    idx: usize,
    quarantined: &'a BTreeMap<String, Vec<u8>>,
}

/// Boots `image` and checks it (`boot`, `go_on`); then, while `point` holds fewer heal
/// crashes than `counts.heal_crashes` has depths, crashes the boot's heal at each of its
/// operations on copies of the image, under every crash image (`images`: plain, torn, every
/// prefix of the directory operations since the last sync), and checks each distinct one again: it must recover the
/// state `check_image` recovered here (`uncrashed`, one level up) and keep what it quarantined.
/// Answers the index of the recovered state in the probe.
fn check_image(
    scenario: &Scenario,
    probe: &Probe,
    point: &Point,
    image: &SimFs,
    uncrashed: Option<Uncrashed>,
    counts: &mut Counts,
) -> usize {
    // The image as the crash left it, before boot heals anything: the heal is crashed on
    // copies of it.
    let pristine = image.crash();
    let kept = quarantine(image);
    if point.heals.is_empty() && !kept.is_empty() {
        counts.evidence += 1;
    }
    let booted = boot(scenario, probe, point, image, &kept);
    if let Err(why) = way_back_kept(image) {
        point.fail(&why);
    }
    let heal_ops = image.ops();
    let idx = booted.idx;
    if let Some(uncrashed) = uncrashed {
        if probe.states[idx] != probe.states[uncrashed.idx] {
            point.fail(&format!(
                "after a crash inside boot's heal, the store recovers state {idx} of the \
                 uncrashed run; the uncrashed boot of the same image recovered state {}",
                uncrashed.idx
            ));
        }
        if let Err(why) = keeps(uncrashed.quarantined, &booted.quarantined) {
            point.fail(&format!(
                "after a crash inside boot's heal, less is quarantined: {why}"
            ));
        }
    }
    let quarantined = booted.quarantined.clone();
    let healing = booted.logged.clone();
    go_on(booted, image, probe, point);
    let depth = point.heals.len();
    if heal_ops == 0 || depth >= counts.heal_crashes.len() {
        return idx;
    }
    if depth == 0 {
        counts.healed += 1;
    }
    for op in 0..heal_ops {
        let copy = pristine.crash();
        copy.crash_at(op);
        let kind = healing.kind_of(op).unwrap_or_default();
        let heal = |image: &str| HealCrash {
            op,
            kind: kind.clone(),
            image: image.to_owned(),
        };
        let mut heal_point = point.clone();
        heal_point.heals.push(heal(""));
        match Store::open_in(sim(&copy), (scenario.config)(), &[decl()]) {
            Ok(_) => heal_point.fail("boot survived a crash inside its own heal"),
            Err(e) if !caused_by_crash(&e) => heal_point.fail(&format!(
                "boot failed, not of the crash inside its heal: {e}"
            )),
            Err(_) => {}
        }
        if copy.ops() <= op {
            heal_point.fail("the crash inside boot's heal was never reached");
        }
        for (name, second) in images(&copy) {
            let mut second_point = point.clone();
            second_point.heals.push(heal(&name));
            if !second_point.selected() {
                continue;
            }
            counts.heal_images[depth] += 1;
            let key = (
                format!("{:?}", point.mode),
                depth,
                idx,
                fingerprint(&second),
                &quarantined,
            );
            if !counts.first(key) {
                continue;
            }
            let uncrashed = Uncrashed {
                idx,
                quarantined: &quarantined,
            };
            check_image(
                scenario,
                probe,
                &second_point,
                &second,
                Some(uncrashed),
                counts,
            );
            counts.heal_crashes[depth] += 1;
        }
    }
    idx
}

/// Runs `scenario` in both rename modes, crashing boot's heal `heal_depth` deep (1: a second
/// crash; 2: the heal of that boot crashed again, a third), prints its census and adds it to
/// the total.
pub fn run_and_census(test: &'static str, scenario: &Scenario, heal_depth: usize) -> Counts {
    let mut counts = Counts {
        heal_images: vec![0; heal_depth],
        heal_crashes: vec![0; heal_depth],
        ..Counts::default()
    };
    for mode in MODES {
        run(test, scenario, mode, &mut counts);
    }
    let compared = match scenario.effect {
        Effect::Unmodelled => {
            "compared with the uncrashed run's answers, there and after the next barrier (the \
             model has no sweep)"
        }
        Effect::Unchanged | Effect::Apply(_) => "compared with MemorySeries",
    };
    census(&format!(
        "crash {}: operations {}; {} crash points, {} images, {} distinct booted (as before {}, \
         as after {}, between records {}; {} met evidence in quarantine); {} boots healed; \
         crashes inside boot's heal (at each of its operations, every image), by depth: images {:?}, distinct booted {:?}; answers \
         {compared}{}",
        scenario.name,
        counts.ops.join(", "),
        counts.points,
        counts.images,
        counts.distinct,
        counts.before,
        counts.after,
        counts.between,
        counts.evidence,
        counts.healed,
        counts.heal_images,
        counts.heal_crashes,
        if scenario.rewrites {
            format!(
                "; {} images held the rewritten manifest",
                counts.new_generation
            )
        } else {
            String::new()
        },
    ));
    crate::total(crate::Total {
        scenarios: 1,
        points: counts.points,
        images: counts.images,
        distinct: counts.distinct,
        second_crashes: counts.heal_crashes.iter().sum(),
        faults: 0,
    });
    match std::env::var("STRATA_CRASH_ONLY") {
        // A filter naming this scenario must select something: a mistyped reproduce line
        // would otherwise run nothing and pass.
        Ok(only) => {
            // A mistyped scenario would select nothing anywhere.
            let first = only.split('/').next().unwrap_or_default();
            let known = crate::scenarios::scenarios()
                .iter()
                .any(|(_, s)| s.name == first)
                || ["boot-heal", "repair", "rebuild"].contains(&first);
            assert!(known, "STRATA_CRASH_ONLY={only} names no scenario");
            assert!(
                !names_crash(&only, scenario.name) || counts.distinct > 0,
                "STRATA_CRASH_ONLY={only} selects no crash point of {}",
                scenario.name
            );
        }
        Err(_) => assert_census(scenario, &counts),
    }
    counts
}

fn assert_census(scenario: &Scenario, counts: &Counts) {
    let name = scenario.name;
    assert!(
        counts.points > 0 && counts.distinct > 0,
        "{name}: no crash points"
    );
    assert!(counts.before > 0, "{name}: no crash left the state before");
    assert!(counts.after > 0, "{name}: no crash left the state after");
    assert!(
        counts.records < 2 || counts.between > 0,
        "{name}: {} records, and no crash left the store between two",
        counts.records
    );
    assert_eq!(
        counts.evidence, counts.distinct,
        "{name}: a first boot met no evidence in quarantine"
    );
    assert!(
        counts.heal_crashes.iter().all(|&n| n > 0),
        "{name}: no crash inside boot's heal at some depth: {:?}",
        counts.heal_crashes
    );
    assert!(
        !scenario.rewrites || counts.new_generation > 0,
        "{name}: no crash left the rewritten manifest"
    );
}
