//! The write paths, one scenario each: a new write path adds one entry to `scenarios!`, which
//! makes both its `Scenario` (for the fault test too) and its crash test.

use std::sync::OnceLock;

use strata::segment::vfs::SimFs;
use strata::{Config, Lifetime, Retention, Store};

use crate::harness::{
    ALL_TRACKS, Effect, N_PREFILL, PREFILL_TRACKS, STREAM, Scenario, decl, fill, manifests,
    model_fill, rows_at, run_and_census, sim,
};

/// Staged rows of the next barrier, for `tracks` (lost to a crash: the seal is crashed).
fn stage(store: &mut Store, tracks: &[&str]) {
    store
        .publish(STREAM, N_PREFILL, &rows_at(N_PREFILL, tracks))
        .unwrap();
}

fn seal(store: &mut Store) -> Result<(), strata::EngineError> {
    store.seal().map(drop)
}

fn seal_steps(store: &mut Store, seen: &mut dyn FnMut(&Store)) {
    store.seal().unwrap();
    seen(store);
}

/// Raw rows and levels kept for an axis span of 12: the prefill's newest axis value is 29,
/// so a sweep retires the segments of positions 0 and 1 (every row below 17).
fn swept() -> Config {
    Config::default().retain(
        STREAM,
        Retention::raw(Lifetime::AxisSpan(12)).levels_from(0, Lifetime::AxisSpan(12)),
    )
}

fn compacting() -> Config {
    Config::default()
        .compact_files_max(2)
        .compact_inputs_min(2)
        .compact_inputs_max(4)
}

/// The positions of the barriers [`fill_packed`] seals after the prefill.
const PACKED_POSITIONS: std::ops::RangeInclusive<u64> = 10..=13;

/// Rows of barrier `position` for the prefill's tracks, 40 a track: enough that their axis and
/// values are packed (segment format 5 on), where the prefill's two a track stay plain.
fn packed_rows(position: u64) -> Vec<strata::Row> {
    let mut rows = Vec::new();
    for (i, track) in (0u64..).zip(PREFILL_TRACKS) {
        for k in 0..40u64 {
            // Above the prefill's axis (to 31) and below the next barrier's (from 800).
            let t = 40 + 160 * (position - 10) + 4 * k + i;
            rows.push(vec![
                strata::Value::Str(track.into()),
                strata::Value::U64(t),
                strata::Value::I64(i64::try_from(k % 9 + 3 * i).unwrap()),
            ]);
        }
    }
    rows
}

/// The prefill compacted, then barriers of packed rows after it: a step then merges packed
/// inputs (moving their chunks) beside the plain file the prefill's merges left.
fn fill_packed(store: &mut Store) {
    while store.compact_step().unwrap().is_some() {}
    for position in PACKED_POSITIONS {
        store
            .publish(STREAM, position, &packed_rows(position))
            .unwrap();
        store.seal().unwrap();
    }
    // What the step merges is packed: the newest barrier's axis and value columns are.
    let vfs = store.vfs();
    let newest = store.catalog().live_files().map(|f| f.name).max().unwrap();
    let path = strata::segment::names::NumberedName::segment(newest).path_in("seg");
    let bytes = vfs.map(&path).unwrap();
    let reader = strata::segment::SegmentReader::open(&path, bytes).unwrap();
    assert!(matches!(
        reader.axis(0).unwrap(),
        Some(strata::segment::Axis::Packed(_))
    ));
    assert!(matches!(
        reader.column(0, 2).unwrap(),
        Some(strata::segment::Column::Packed(_))
    ));
}

/// `fill_packed`, in the model (compaction changes no answer).
fn model_fill_packed(model: &mut strata::MemorySeries) {
    for position in PACKED_POSITIONS {
        crate::harness::ready(strata::Series::publish(
            model,
            STREAM,
            position,
            packed_rows(position),
        ))
        .unwrap();
        crate::harness::ready(strata::Series::seal(model, STREAM, &[])).unwrap();
    }
}

/// Compacts, rewrites the manifest (generation 2, with generation 1 kept beside it), then grows
/// it past twice its snapshot with frames that change no answer (name reservations), so that
/// the next checkpoint rewrites it again.
fn rewritten_and_grown(store: &mut Store) {
    while store.compact_step().unwrap().is_some() {}
    assert!(store.checkpoint().unwrap(), "the first checkpoint rewrites");
    // Far above any name the fixture issues, so that each reservation writes a frame.
    for name in 1_000_000..1_000_300 {
        assert!(store.reserve_names(name).unwrap());
    }
}

macro_rules! scenarios {
    ($($test:ident: $scenario:expr,)*) => {
        /// Every scenario, by the name of its test.
        pub fn scenarios() -> Vec<(&'static str, Scenario)> {
            vec![$((stringify!($test), $scenario),)*]
        }

        $(
            #[test]
            fn $test() {
                run_and_census(stringify!($test), &$scenario, 1);
            }
        )*
    };
}

scenarios! {
    seal_one_partition: Scenario {
        name: "seal-one",
        config: Config::default,
        prepare: |store| stage(store, &["a"]),
        model_prepare: |_| {},
        op: seal,
        steps: seal_steps,
        effect: Effect::Apply(|model| model_fill(model, N_PREFILL..=N_PREFILL, &["a"])),
        retires: false,
        rewrites: false,
    },
    seal_many_partitions: Scenario {
        name: "seal-many",
        config: Config::default,
        prepare: |store| stage(store, &ALL_TRACKS),
        model_prepare: |_| {},
        op: seal,
        steps: seal_steps,
        effect: Effect::Apply(|model| model_fill(model, N_PREFILL..=N_PREFILL, &ALL_TRACKS)),
        retires: false,
        rewrites: false,
    },
    seal_rewriting_the_manifest: Scenario {
        name: "seal-rewrite",
        config: || Config::default().manifest_rewrite_bytes(rewrite_at()),
        prepare: |store| stage(store, &PREFILL_TRACKS),
        model_prepare: |_| {},
        op: seal,
        steps: seal_steps,
        effect: Effect::Apply(|model| model_fill(model, N_PREFILL..=N_PREFILL, &PREFILL_TRACKS)),
        retires: false,
        rewrites: true,
    },
    checkpoint: Scenario {
        name: "checkpoint",
        config: compacting,
        // Compaction's records make the manifest more than twice its snapshot, so the
        // checkpoint rewrites it (`compact()` would checkpoint itself).
        prepare: |store| while store.compact_step().unwrap().is_some() {},
        model_prepare: |_| {},
        op: |store| store.checkpoint().map(drop),
        steps: |store, seen| {
            store.checkpoint().unwrap();
            seen(store);
        },
        effect: Effect::Unchanged,
        retires: false,
        rewrites: true,
    },
    // A rewrite of a rewritten generation: the generation it replaces stays beside the new
    // one as its way back, and the one that generation replaced is removed.
    checkpoint_again: Scenario {
        name: "checkpoint-again",
        config: compacting,
        prepare: rewritten_and_grown,
        model_prepare: |_| {},
        op: |store| store.checkpoint().map(drop),
        steps: |store, seen| {
            store.checkpoint().unwrap();
            seen(store);
        },
        effect: Effect::Unchanged,
        retires: false,
        rewrites: true,
    },
    compaction_step: Scenario {
        name: "compact-step",
        config: compacting,
        prepare: |_| {},
        model_prepare: |_| {},
        op: |store| store.compact_step().map(drop),
        steps: |store, seen| {
            store.compact_step().unwrap();
            seen(store);
        },
        effect: Effect::Unchanged,
        retires: true,
        rewrites: false,
    },
    compaction_step_of_packed_barriers: Scenario {
        name: "compact-packed",
        config: compacting,
        prepare: fill_packed,
        model_prepare: model_fill_packed,
        op: |store| store.compact_step().map(drop),
        steps: |store, seen| {
            store.compact_step().unwrap();
            seen(store);
        },
        effect: Effect::Unchanged,
        retires: true,
        rewrites: false,
    },
    // Several records: each merge its own, then a manifest rewrite; a crash may leave the
    // store between any two.
    compaction_whole: Scenario {
        name: "compact",
        config: compacting,
        prepare: |_| {},
        model_prepare: |_| {},
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
        effect: Effect::Unchanged,
        retires: true,
        rewrites: true,
    },
    retention_sweep: Scenario {
        name: "sweep",
        config: swept,
        prepare: |_| {},
        model_prepare: |_| {},
        op: |store| store.sweep().map(drop),
        steps: |store, seen| {
            store.sweep().unwrap();
            seen(store);
        },
        effect: Effect::Unmodelled,
        retires: true,
        rewrites: false,
    },
    retire_a_track: Scenario {
        name: "retire",
        config: Config::default,
        prepare: |_| {},
        model_prepare: |_| {},
        op: |store| store.retire(STREAM, &["a"]).map(drop),
        steps: |store, seen| {
            store.retire(STREAM, &["a"]).unwrap();
            seen(store);
        },
        effect: Effect::Apply(|model| drop(model.retire(STREAM, &["a"]).unwrap())),
        retires: true,
        rewrites: false,
    },
    trim_to: Scenario {
        name: "trim-to",
        config: Config::default,
        prepare: |_| {},
        model_prepare: |_| {},
        op: |store| store.trim_to(STREAM, 1).map(drop),
        steps: |store, seen| {
            store.trim_to(STREAM, 1).unwrap();
            seen(store);
        },
        effect: Effect::Apply(|model| drop(model.trim_to(STREAM, 1).unwrap())),
        retires: true,
        rewrites: false,
    },
    // Interactions: a write path over what another left.
    trim_after_compaction: Scenario {
        name: "trim-compacted",
        config: compacting,
        prepare: |store| while store.compact_step().unwrap().is_some() {},
        model_prepare: |_| {},
        op: |store| store.trim_to(STREAM, 2).map(drop),
        steps: |store, seen| {
            store.trim_to(STREAM, 2).unwrap();
            seen(store);
        },
        effect: Effect::Apply(|model| drop(model.trim_to(STREAM, 2).unwrap())),
        retires: true,
        rewrites: false,
    },
    seal_restarting_a_retired_track: Scenario {
        name: "seal-after-retire",
        config: Config::default,
        prepare: |store| {
            store.retire(STREAM, &["a"]).unwrap();
            stage(store, &PREFILL_TRACKS);
        },
        model_prepare: |model| drop(model.retire(STREAM, &["a"]).unwrap()),
        op: seal,
        steps: seal_steps,
        effect: Effect::Apply(|model| model_fill(model, N_PREFILL..=N_PREFILL, &PREFILL_TRACKS)),
        retires: true,
        rewrites: false,
    },
    compaction_step_over_a_retired_track: Scenario {
        name: "compact-after-retire",
        config: compacting,
        prepare: |store| drop(store.retire(STREAM, &["b"]).unwrap()),
        model_prepare: |model| drop(model.retire(STREAM, &["b"]).unwrap()),
        op: |store| store.compact_step().map(drop),
        steps: |store, seen| {
            store.compact_step().unwrap();
            seen(store);
        },
        effect: Effect::Unchanged,
        retires: true,
        rewrites: false,
    },
    sweep_by_positions: Scenario {
        name: "sweep-positions",
        config: || {
            Config::default().retain(
                STREAM,
                Retention::raw(Lifetime::Positions(2)).levels_from(0, Lifetime::Positions(3)),
            )
        },
        prepare: |_| {},
        model_prepare: |_| {},
        op: |store| store.sweep().map(drop),
        steps: |store, seen| {
            store.sweep().unwrap();
            seen(store);
        },
        effect: Effect::Unmodelled,
        retires: true,
        rewrites: false,
    },
}

/// The manifest's length after the prefill under the default config: as the threshold of
/// `Config::manifest_rewrite_bytes`, the seal after the prefill crosses it and rewrites.
fn rewrite_at() -> u64 {
    static REWRITE_AT: OnceLock<u64> = OnceLock::new();
    *REWRITE_AT.get_or_init(|| {
        let fs = SimFs::new();
        let mut store = Store::create_in(sim(&fs), Config::default(), &[decl()]).unwrap();
        fill(&mut store, 0..=N_PREFILL - 1, &PREFILL_TRACKS);
        let manifest = manifests(&fs).pop().unwrap();
        fs.live_bytes(&manifest).unwrap().len() as u64
    })
}

/// Boot's heal as a scenario of its own: the stores a crashed seal of many partitions leaves
/// (orphan temps, unclaimed segments, torn manifest tails), whose boot heal is crashed at
/// every one of its operations, and the heal of that boot crashed again at every one of its
/// own (a third crash), each boot checked.
#[test]
fn boot_heal_crashed_at_every_operation() {
    let (_, seal_many) = scenarios()
        .into_iter()
        .find(|(test, _)| *test == "seal_many_partitions")
        .unwrap();
    let boot_heal = Scenario {
        name: "boot-heal",
        ..seal_many
    };
    let counts = run_and_census("boot_heal_crashed_at_every_operation", &boot_heal, 2);
    if std::env::var("STRATA_CRASH_ONLY").is_err() {
        assert!(counts.healed > 0, "no crash left anything to heal");
    }
}
