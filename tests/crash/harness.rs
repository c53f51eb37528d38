//! The crash harness: a scenario (a store prepared uncounted, then one operation) run
//! uncrashed to learn its operations and the states each durable record leaves, then crashed
//! at every operation under every crash image in both rename modes, booted and checked; and
//! boot's own healing crashed at every one of its operations and booted again (a second crash).
//!
//! The invariants every boot is held to (`boot`, then `go_on`): boot's findings lose nothing; the
//! recovered state is one the uncrashed run passed through (every acknowledged record whole,
//! the crashed operation all or nothing); every answer equals the model (`MemorySeries` given
//! the same operations) at that state; nothing quarantined is deleted (every quarantined byte
//! string is still there, unchanged); and the store takes the next barrier and the next
//! compaction step, answers them as the model does, and names its new files above every name
//! the crash left on disk or in quarantine.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::{Debug, Write};
use std::future::Future;
use std::ops::RangeInclusive;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use strata::index::{Tier, TrackKey};
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

/// A fresh store of the scenario's fixture, prepared (nothing counted yet).
pub fn prepared(scenario: &Scenario, fs: &SimFs) -> Store {
    prepared_on(scenario, sim(fs))
}

pub fn prepared_on(scenario: &Scenario, vfs: Arc<dyn Vfs>) -> Store {
    let mut store = Store::create_in(vfs, (scenario.config)(), &[decl()]).unwrap();
    fill(&mut store, 0..=N_PREFILL - 1, &PREFILL_TRACKS);
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
    /// Per state, what the model answers there (`None` for an unmodelled operation), and
    /// after the next barrier.
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

pub fn probe(scenario: &Scenario, mode: RenameMode) -> Probe {
    let name = scenario.name;
    let fs = SimFs::with_rename_mode(mode);
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
    let fs = SimFs::with_rename_mode(mode);
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
    let modelled: Vec<Option<(String, String)>> = (0..states.len())
        .map(|idx| {
            let applied = idx > 0;
            match scenario.effect {
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

/// The highest file number anywhere on the disk: in seg/, tmp/ and quarantine/, whatever
/// the name around it (quarantine names a file `seg-000000000005.seg`): every run of exactly
/// `NAME_DIGITS` digits (a manifest generation has 6).
pub fn highest_name(fs: &SimFs) -> u64 {
    let mut highest = 0;
    for path in fs.paths() {
        let name = path.rsplit('/').next().unwrap_or_default();
        for run in name.split(|c: char| !c.is_ascii_digit()) {
            if run.len() == NAME_DIGITS {
                highest = highest.max(run.parse::<u64>().unwrap());
            }
        }
    }
    highest
}

/// Boot's findings lose nothing: no acknowledged history damaged or missing, every file it
/// moved aside is in quarantine, and it removes only a file whose retirement is recorded.
fn check_findings(store: &Store, image: &SimFs, retires: bool) -> Result<(), String> {
    for finding in &store.boot_report().findings {
        if matches!(
            finding.kind,
            FindingKind::DamagedHistory
                | FindingKind::MissingFile
                | FindingKind::WrongLength
                | FindingKind::BadChecksum
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

/// What a run of a scenario counted.
#[derive(Default)]
pub struct Counts {
    pub ops: Vec<String>,
    pub points: u64,
    pub images: u64,
    pub healed: u64,
    /// Boots after a crash inside boot's heal, by depth (a second crash, a third).
    pub heal_crashes: Vec<u64>,
    pub before: u64,
    pub after: u64,
    pub between: u64,
    /// Images holding the manifest generation the operation leaves.
    pub new_generation: u64,
}

/// Boots `image` as `point` and checks the invariants; answers the store, its state's index
/// in the probe, and the quarantine boot left.
pub fn boot(
    scenario: &Scenario,
    probe: &Probe,
    point: &Point,
    image: &SimFs,
    kept: &BTreeMap<String, Vec<u8>>,
) -> (Store, usize, BTreeMap<String, Vec<u8>>, Logged) {
    let logged = Logged::new(image);
    let store = Store::open_in(Arc::new(logged.clone()), (scenario.config)(), &[decl()])
        .unwrap_or_else(|e| point.fail(&format!("boot refused: {e}")));
    if let Err(why) = check_findings(&store, image, scenario.retires) {
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
    (store, idx, quarantined, logged)
}

/// The store takes the next barrier and the next compaction step, and answers them; its new
/// files are named above `highest`; the quarantine keeps `kept`.
pub fn go_on(
    mut store: Store,
    image: &SimFs,
    probe: &Probe,
    idx: usize,
    point: &Point,
    highest: u64,
    kept: &BTreeMap<String, Vec<u8>>,
) {
    let before: BTreeSet<u64> = store.catalog().live_files().map(|f| f.name).collect();
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
        point.fail("after the next barrier and compaction step, answers differ from the model's");
    }
    for file in store.catalog().live_files() {
        if !before.contains(&file.name) && file.name <= highest {
            point.fail(&format!(
                "new file {} is not above {highest}, a name the crash left",
                file.name
            ));
        }
    }
    if let Err(why) = keeps(kept, &quarantine(image)) {
        point.fail(&format!("the next barrier deleted from quarantine: {why}"));
    }
}

/// Every crash point of `scenario` in `mode`: every operation k x every image, each booted and
/// checked by `check_image` (which crashes boot's heal as deep as `counts.heal_crashes` says).
pub fn run(test: &'static str, scenario: &Scenario, mode: RenameMode, counts: &mut Counts) {
    let probe = probe(scenario, mode);
    counts.ops.push(format!("{} ({mode:?})", probe.n_ops));
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
        let fs = SimFs::with_rename_mode(mode);
        let mut store = prepared(scenario, &fs);
        fs.crash_at(fs.ops() + k);
        match (scenario.op)(&mut store) {
            Err(_) => {}
            Ok(()) => base.fail("the operation survived its crash"),
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
            crash_point(scenario, &probe, &point, &image, counts);
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
    let idx = check_image(scenario, probe, point, image, &BTreeMap::new(), counts);
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

/// Boots `image` and checks it (`boot`, `go_on`); then, while `point` holds fewer heal
/// crashes than `counts.heal_crashes` has depths, crashes the boot's heal at each of its
/// operations on copies of the image, under a plain crash and one keeping every directory
/// operation, and checks each of those again. The boot after a crashed heal must quarantine
/// at least `must_quarantine` (what the uncrashed boot of the image it came from did).
/// Answers the index of the recovered state in the probe.
fn check_image(
    scenario: &Scenario,
    probe: &Probe,
    point: &Point,
    image: &SimFs,
    must_quarantine: &BTreeMap<String, Vec<u8>>,
    counts: &mut Counts,
) -> usize {
    // The image as the crash left it, before boot heals anything: the heal is crashed on
    // copies of it.
    let pristine = image.crash();
    let highest = highest_name(image);
    let kept = quarantine(image);
    let (store, idx, quarantined, healing) = boot(scenario, probe, point, image, &kept);
    let heal_ops = image.ops();
    if let Err(why) = keeps(must_quarantine, &quarantined) {
        point.fail(&format!(
            "after a crash inside boot's heal, less is quarantined: {why}"
        ));
    }
    go_on(store, image, probe, idx, point, highest, &quarantined);
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
        if Store::open_in(sim(&copy), (scenario.config)(), &[decl()]).is_ok() {
            heal_point.fail("boot survived a crash inside its own heal");
        }
        for (name, second) in [
            ("crash", copy.crash()),
            ("dirops-all", copy.crash_keeping_dir_ops(usize::MAX)),
        ] {
            let mut second_point = point.clone();
            second_point.heals.push(heal(name));
            if !second_point.selected() {
                continue;
            }
            check_image(
                scenario,
                probe,
                &second_point,
                &second,
                &quarantined,
                counts,
            );
            counts.heal_crashes[depth] += 1;
        }
    }
    idx
}

/// Runs `scenario` in both rename modes, crashing boot's heal `heal_depth` deep (1: a second
/// crash; 2: the heal of that boot crashed again, a third), and prints its census.
pub fn run_and_census(test: &'static str, scenario: &Scenario, heal_depth: usize) -> Counts {
    let mut counts = Counts {
        heal_crashes: vec![0; heal_depth],
        ..Counts::default()
    };
    for mode in MODES {
        run(test, scenario, mode, &mut counts);
    }
    let compared = match scenario.effect {
        Effect::Unmodelled => "compared with the uncrashed run's answers (the model has no sweep)",
        Effect::Unchanged | Effect::Apply(_) => "compared with MemorySeries",
    };
    census(&format!(
        "crash {}: operations {}; {} crash points, {} images booted (as before {}, as after {}, \
         between records {}); {} boots healed; crashes inside boot's heal (at each of its \
         operations, 2 images), by depth: {:?}; answers {compared}{}",
        scenario.name,
        counts.ops.join(", "),
        counts.points,
        counts.images,
        counts.before,
        counts.after,
        counts.between,
        counts.healed,
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
    if std::env::var("STRATA_CRASH_ONLY").is_err() {
        assert!(
            counts.points > 0 && counts.images > 0,
            "{}: no crash points",
            scenario.name
        );
        assert!(
            counts.before > 0,
            "{}: no crash left the state before",
            scenario.name
        );
        assert!(
            counts.after > 0,
            "{}: no crash left the state after",
            scenario.name
        );
        assert!(
            counts.heal_crashes.iter().all(|&n| n > 0),
            "{}: no crash inside boot's heal at some depth: {:?}",
            scenario.name,
            counts.heal_crashes
        );
        assert!(
            !scenario.rewrites || counts.new_generation > 0,
            "{}: no crash left the rewritten manifest",
            scenario.name
        );
    }
    counts
}
