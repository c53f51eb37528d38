//! Retention crashed at every operation: a sweep, a `retire`, a `trim_to` over swept floors, and
//! a compaction (which sweeps before it merges), each crashed at every file-system operation it
//! makes, under every crash image, in both rename modes. The reopened store answers exactly as
//! before the operation or exactly as after it (for a compaction: as after one of its records),
//! so a retirement is all or nothing; its floors never move backwards; and every file a live
//! tier needs is still there (nothing live deleted). The test prints its census: per scenario,
//! the operations it makes and the crash points run.

use std::collections::BTreeMap;
use std::fmt::Write;

use strata::index::{Tier, TrackFloors, TrackKey};
use strata::segment::vfs::{RenameMode, SimFs, Vfs};
use strata::{Config, EngineError, Lifetime, Retention, Store};

use crate::retention_reads::{N_BARRIERS, STREAM, answers, config, fill, folded, open, raw_only};
use crate::support::MODES;

/// The live tiers of every partition: what a retirement retires, which a crash must not leave
/// half recorded.
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

fn state(store: &Store) -> String {
    answers(store) + &tiers(store)
}

fn all_floors(store: &Store) -> BTreeMap<TrackKey, TrackFloors> {
    store
        .catalog()
        .floors(STREAM, &TrackKey::ROOT)
        .map(|(track, floors)| (track.clone(), floors.clone()))
        .collect()
}

/// Whether every floor of `low` is at or beneath the same floor of `high` (a floor missing
/// from `high` where `low` has one is a floor moved backwards).
fn at_or_beneath(
    low: &BTreeMap<TrackKey, TrackFloors>,
    high: &BTreeMap<TrackKey, TrackFloors>,
) -> bool {
    low.iter().all(|(track, low)| {
        let Some(high) = high.get(track) else {
            return false;
        };
        let raw = match (low.raw, high.raw) {
            (None, _) => true,
            (Some(_), None) => false,
            (Some(l), Some(h)) => l.position <= h.position && l.axis <= h.axis,
        };
        raw && low
            .levels
            .iter()
            .all(|(level, l)| high.levels.get(level).is_some_and(|h| l <= h))
    })
}

/// Every file a live tier of the catalog names is on the disk.
fn live_files_present(fs: &SimFs, store: &Store) -> Result<(), String> {
    let on_disk: Vec<String> = fs
        .list("seg")
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    for file in store.catalog().live_files() {
        let name = format!("{:012}", file.name);
        if !on_disk.iter().any(|n| n.contains(&name)) {
            return Err(format!("live file {} missing from {on_disk:?}", file.name));
        }
    }
    Ok(())
}

/// An operation one durable record at a time, calling back after each.
type Steps = fn(&mut Store, &mut dyn FnMut(&Store));

struct Scenario {
    name: &'static str,
    config: fn() -> Config,
    /// Run after `fill`, before the operation crashed.
    prepare: fn(&mut Store),
    /// The operation, whole.
    op: fn(&mut Store) -> Result<(), EngineError>,
    /// The operation one durable record at a time, for the probe: after each, the state is
    /// one a crash may leave.
    steps: Steps,
}

fn sweep(store: &mut Store) -> Result<(), EngineError> {
    store.sweep().map(drop)
}

fn by_positions() -> Config {
    config(Retention::raw(Lifetime::Positions(3)).levels_from(0, Lifetime::Positions(3)))
}

fn compacting() -> Config {
    config(folded())
        .compact_files_max(2)
        .compact_inputs_min(2)
        .compact_inputs_max(4)
}

fn scenarios() -> Vec<Scenario> {
    vec![
        Scenario {
            name: "sweep of raw rows and levels (files removed)",
            config: || config(folded()),
            prepare: |_| {},
            op: sweep,
            steps: |store, seen| {
                store.sweep().unwrap();
                seen(store);
            },
        },
        Scenario {
            name: "sweep of raw rows (levels live on)",
            config: || config(raw_only()),
            prepare: |_| {},
            op: sweep,
            steps: |store, seen| {
                store.sweep().unwrap();
                seen(store);
            },
        },
        Scenario {
            name: "sweep by positions",
            config: by_positions,
            prepare: |_| {},
            op: sweep,
            steps: |store, seen| {
                store.sweep().unwrap();
                seen(store);
            },
        },
        Scenario {
            name: "retire of track a",
            config: Config::default,
            prepare: |_| {},
            op: |store| store.retire(STREAM, &["a"]).map(drop),
            steps: |store, seen| {
                store.retire(STREAM, &["a"]).unwrap();
                seen(store);
            },
        },
        Scenario {
            name: "trim_to over swept floors",
            config: || config(folded()),
            prepare: |store| {
                store.sweep().unwrap();
            },
            op: |store| store.trim_to(STREAM, 6).map(drop),
            steps: |store, seen| {
                store.trim_to(STREAM, 6).unwrap();
                seen(store);
            },
        },
        Scenario {
            name: "sweep over swept floors, three barriers later",
            config: || config(folded()),
            prepare: |store| {
                store.sweep().unwrap();
                fill(store, N_BARRIERS, 3);
            },
            op: sweep,
            steps: |store, seen| {
                store.sweep().unwrap();
                seen(store);
            },
        },
        Scenario {
            name: "retire of track b over swept floors",
            config: || config(folded()),
            prepare: |store| {
                store.sweep().unwrap();
            },
            op: |store| store.retire(STREAM, &["b"]).map(drop),
            steps: |store, seen| {
                store.retire(STREAM, &["b"]).unwrap();
                seen(store);
            },
        },
        Scenario {
            name: "compact (a sweep, then merges)",
            config: compacting,
            prepare: |_| {},
            op: |store| store.compact().map(drop),
            steps: |store, seen| {
                store.sweep().unwrap();
                seen(store);
                while store.compact_step().unwrap().is_some() {
                    seen(store);
                }
                store.checkpoint().unwrap();
                seen(store);
            },
        },
    ]
}

/// A fresh store of the fixture, prepared for `scenario`.
fn prepared(scenario: &Scenario, fs: &SimFs) -> Store {
    let mut store = open(fs, (scenario.config)());
    fill(&mut store, 0, N_BARRIERS);
    (scenario.prepare)(&mut store);
    store
}

#[derive(Default)]
struct Census {
    /// Operations per rename mode.
    ops: Vec<String>,
    points: u64,
    before: u64,
    after: u64,
    between: u64,
}

/// What an uncrashed run of a scenario leaves: the states a crash may leave, and the operations
/// it takes.
struct Probe {
    n_ops: u64,
    /// Before, then after each durable record; the last is after the operation.
    states: Vec<String>,
    /// What the store answers after the operation (its segments aside).
    after_answers: String,
    floors_before: BTreeMap<TrackKey, TrackFloors>,
    floors_after: BTreeMap<TrackKey, TrackFloors>,
}

fn probe(scenario: &Scenario, mode: RenameMode) -> Probe {
    let fs = SimFs::with_rename_mode(mode);
    let mut store = prepared(scenario, &fs);
    let floors_before = all_floors(&store);
    let start = fs.ops();
    let mut states = vec![state(&store)];
    (scenario.steps)(&mut store, &mut |store| states.push(state(store)));
    let n_ops = fs.ops() - start;
    let probe = Probe {
        n_ops,
        after_answers: answers(&store),
        floors_before,
        floors_after: all_floors(&store),
        states,
    };
    assert_ne!(
        probe.states.first(),
        probe.states.last(),
        "{}: the operation changes something",
        scenario.name
    );
    assert!(n_ops >= 2, "{}: {n_ops} operations", scenario.name);
    // The whole operation takes the same operations as its steps, and ends alike.
    let fs = SimFs::with_rename_mode(mode);
    let mut store = prepared(scenario, &fs);
    let start = fs.ops();
    (scenario.op)(&mut store).unwrap();
    assert_eq!(fs.ops() - start, n_ops, "{}", scenario.name);
    assert_eq!(
        Some(&state(&store)),
        probe.states.last(),
        "{}",
        scenario.name
    );
    probe
}

/// One crash point: the scenario's operation crashed at `crash_op` (counted from its first),
/// the disk as `image` leaves it, reopened and checked; counted in `census`.
fn crash_point(
    scenario: &Scenario,
    mode: RenameMode,
    probe: &Probe,
    crash_op: u64,
    image: usize,
    census: &mut Census,
) {
    let context = format!(
        "{}, {mode:?}: crash at op {crash_op} of {}, image {image}",
        scenario.name, probe.n_ops
    );
    let fs = SimFs::with_rename_mode(mode);
    let mut store = prepared(scenario, &fs);
    fs.crash_at(fs.ops() + crash_op);
    assert!((scenario.op)(&mut store).is_err(), "{context}");
    drop(store);
    let fs = fs.crash_image(image);
    let mut store = open(&fs, (scenario.config)());
    let answered = state(&store);
    let reopened = all_floors(&store);
    // Floors never move backwards, nor past the operation's.
    assert!(
        at_or_beneath(&probe.floors_before, &reopened),
        "{context}: floors moved backwards: {:?} -> {reopened:?}",
        probe.floors_before
    );
    assert!(
        at_or_beneath(&reopened, &probe.floors_after),
        "{context}: floors past the operation's: {reopened:?}"
    );
    // Nothing live was deleted.
    if let Err(why) = live_files_present(&fs, &store) {
        panic!("{context}: {why}");
    }
    // All or nothing: exactly one of the states a record leaves.
    let (before, after) = (&probe.states[0], &probe.states[probe.states.len() - 1]);
    if answered == *before {
        census.before += 1;
    } else if answered == *after {
        census.after += 1;
    } else if probe.states.contains(&answered) {
        census.between += 1;
    } else {
        let diff = diff(&answered, before, after);
        panic!("{context}: neither before nor after:\n{diff}");
    }
    // Whatever survived, the store goes on: the operation again answers as the uncrashed one
    // did (a compaction resumed may merge differently; a retire whose record survived finds
    // nothing live left, and says so), and a barrier lands (past every scenario's positions
    // and floors).
    match (scenario.op)(&mut store) {
        Ok(()) => {}
        Err(EngineError::NothingToRetire { .. }) if answered == *after => {}
        Err(error) => panic!("{context}: the operation again: {error}"),
    }
    assert_eq!(answers(&store), probe.after_answers, "{context}");
    fill(&mut store, 100, 1);
    census.points += 1;
}

#[test]
fn retention_crashed_at_every_operation_is_all_or_nothing() {
    let mut census: BTreeMap<&'static str, Census> = BTreeMap::new();
    for mode in MODES {
        for scenario in scenarios() {
            let probe = probe(&scenario, mode);
            let entry = census.entry(scenario.name).or_default();
            entry.ops.push(format!("{} ({mode:?})", probe.n_ops));
            for crash_op in 0..probe.n_ops {
                for image in 0..SimFs::CRASH_IMAGES {
                    crash_point(&scenario, mode, &probe, crash_op, image, entry);
                }
            }
        }
    }
    for (name, c) in &census {
        eprintln!(
            "retention crash census: {name}: operations {}; {} crash points (each operation \
             x {} crash images); reopened as before {}, as after {}, between its records {}",
            c.ops.join(", "),
            c.points,
            SimFs::CRASH_IMAGES,
            c.before,
            c.after,
            c.between
        );
    }
    assert_eq!(census.len(), scenarios().len());
    for (name, c) in &census {
        assert!(c.points > 0, "{name}: no crash points");
        assert!(
            c.before > 0 && c.after > 0,
            "{name}: {} before, {} after",
            c.before,
            c.after
        );
    }
}

/// The lines of `answered` found in neither `before` nor `after`.
fn diff(answered: &str, before: &str, after: &str) -> String {
    answered
        .lines()
        .filter(|line| !before.contains(line) && !after.contains(line))
        .flat_map(|line| [line, "\n"])
        .collect()
}
