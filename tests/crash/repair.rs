//! The operator's repair (`strata::recover::repair`) crashed at every operation: its module
//! promises that a crash anywhere leaves either the damaged generation current (boot refuses
//! again, and the repair run again succeeds) or the new generation complete (boot heals it like
//! any other). Either way the store then answers exactly what the uncrashed repair left, the
//! damaged manifest's bytes are kept in quarantine (evidence is never removed), and the store
//! takes the next barrier and compaction step, answering as the uncrashed repair's store did.
//! The image's own first boot is the one checked, and its heal is crashed at every operation.
//! EIO and ENOSPC at every operation of the repair fail it with that error, and the disk left
//! checks out the same way.
//!
//! The damage is the one input here not made by a crash: no crash of an append can leave good
//! frames after a bad one, which is what a repair is for; a bit flipped in an acknowledged
//! barrier's frame (a bad sector) is what the repair's operator meets. Two damages are repaired:
//! one in the history of an appended generation, which the repair cuts (keeping the trusted
//! prefix's rows and fencing the rest), and one in the snapshot of a rewritten generation, which
//! the repair rebuilds from the generation the snapshot was taken from (keeping every row).

use std::error::Error;
use std::io;

use strata::recover::repair;
use strata::segment::vfs::{Fault, RenameMode, SimFs, Vfs};
use strata::{Config, Store, Value};

use crate::census;
use crate::harness::names_crash;
use crate::harness::{
    Counts, Effect, MODES, N_PREFILL, NEXT, PREFILL_TRACKS, Point, Probe, Reads, STREAM, Scenario,
    State, boot, caused_by_crash, check_first, decl, fill, fingerprint, go_on, images, manifests,
    open_checked, quarantine, rows_at, sim,
};
use crate::logged::Logged;

/// How `repair` boots: as a store of the fixture with nothing to apply.
const REPAIR: Scenario = Scenario {
    name: "repair",
    config: Config::default,
    prepare: |_| {},
    model_prepare: |_| {},
    op: |_| Ok(()),
    steps: |_, _| {},
    effect: Effect::Unmodelled,
    retires: false,
    rewrites: true,
};

/// The frame of the manifest whose body gets a flipped byte: frame 0 declares the stream, frame
/// i >= 1 records the barrier at position i - 1, so the repair's trusted prefix holds the
/// barriers beneath `DAMAGED_FRAME - 1`.
const DAMAGED_FRAME: usize = 3;

/// What the repair meets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Damage {
    /// A byte flipped inside frame `DAMAGED_FRAME`'s body of generation 1, with good frames
    /// after it: damaged history, cut.
    History,
    /// A byte flipped inside the snapshot frame of generation 2, which a checkpoint wrote with
    /// generation 1 kept beside it: rebuilt from generation 1.
    Snapshot,
}

const DAMAGES: [Damage; 2] = [Damage::History, Damage::Snapshot];

/// A store of the fixture whose manifest has a byte flipped as `damage` says, as a fresh image;
/// and the damaged manifest's name and bytes.
fn damaged(mode: RenameMode, damage: Damage) -> (SimFs, String, Vec<u8>) {
    let fs = SimFs::with_rename_mode(mode);
    let config = match damage {
        Damage::History => Config::default(),
        Damage::Snapshot => Config::default()
            .compact_files_max(2)
            .compact_inputs_min(2)
            .compact_inputs_max(4),
    };
    let mut store = Store::create_in(sim(&fs), config, &[decl()]).unwrap();
    fill(&mut store, 0..=N_PREFILL - 1, &PREFILL_TRACKS);
    if damage == Damage::Snapshot {
        while store.compact_step().unwrap().is_some() {}
        assert!(store.checkpoint().unwrap(), "the checkpoint rewrites");
    }
    drop(store);
    let manifest = manifests(&fs).pop().unwrap();
    let mut bytes = fs.read(&manifest).unwrap();
    // Walk the frames (16-byte header; each frame an 8-byte head, `len` le u32 first). A
    // rewritten generation's first frame is its preamble; its second, the snapshot.
    let damaged_frame = match damage {
        Damage::History => DAMAGED_FRAME,
        Damage::Snapshot => 1,
    };
    let mut offset = 16;
    for _ in 0..damaged_frame {
        let len = u32::from_le_bytes(bytes[offset..offset + 4].try_into().unwrap());
        offset += 8 + len as usize;
    }
    assert!(
        offset + 8 + 6 < bytes.len(),
        "frame {damaged_frame} is not in the manifest"
    );
    bytes[offset + 8 + 5] ^= 0x40;
    fs.remove(&manifest).unwrap();
    let mut file = fs.create(&manifest).unwrap();
    file.write_all(&bytes).unwrap();
    file.sync_data().unwrap();
    drop(file);
    fs.sync_dir("").unwrap();
    let image = fs.crash();
    assert!(
        Store::open_in(sim(&image), Config::default(), &[decl()]).is_err(),
        "boot refuses damaged history"
    );
    (image, manifest, bytes)
}

/// The rows the repaired store holds, from the fixture: the trusted prefix's for a cut, every
/// prefilled row for a rebuild.
fn repaired_rows(damage: Damage) -> Vec<Vec<Value>> {
    let kept = match damage {
        Damage::History => DAMAGED_FRAME as u64 - 1,
        Damage::Snapshot => N_PREFILL,
    };
    (0..kept)
        .flat_map(|p| rows_at(p, &PREFILL_TRACKS))
        .collect()
}

/// Whether `error` is, somewhere down its chain of sources, the injected `fault`.
fn caused_by(error: &(dyn Error + 'static), fault: Fault) -> bool {
    let mut cause = Some(error);
    while let Some(e) = cause {
        if e.downcast_ref::<io::Error>()
            .is_some_and(|e| e.raw_os_error() == Some(fault.raw_os_error()))
        {
            return true;
        }
        cause = e.source();
    }
    false
}

/// The uncrashed repair of `damaged`: its operations, and the state (and the answers after the
/// next barrier) of the store it leaves.
fn repair_probe(damaged: &SimFs, damage: Damage) -> Probe {
    let fs = damaged.crash();
    let logged = Logged::new(&fs);
    let start = fs.ops();
    repair(&logged).unwrap();
    let n_ops = fs.ops() - start;
    assert!(n_ops > 0, "the repair reached no file-system operation");
    let kinds = (start..start + n_ops)
        .map(|op| logged.kind_of(op).unwrap_or_default())
        .collect();
    let mut store = Store::open_in(sim(&fs), Config::default(), &[decl()]).unwrap();
    let state = State::of(&store);
    let rows: Vec<Vec<Value>> = store
        .query(STREAM, &[], ..)
        .unwrap()
        .into_iter()
        .map(|r| r.values)
        .collect();
    assert_eq!(
        rows,
        repaired_rows(damage),
        "{damage:?}: the repair keeps the rows it can know"
    );
    store
        .publish(STREAM, NEXT, &rows_at(NEXT, &PREFILL_TRACKS))
        .unwrap();
    store.seal().unwrap();
    store.compact_step().unwrap();
    let next = store.answers();
    Probe {
        n_ops,
        modelled: vec![Some((state.answers.clone(), next))],
        states: vec![state],
        generations: (0, 0),
        kinds,
    }
}

/// Boots `image` (left by a crashed or failed repair) as the operator would: if boot refuses
/// (the damaged generation still current), the repair run again must succeed; then the first
/// boot itself is checked (`check_first`: findings, state, answers, next barrier, names, and
/// its heal crashed at every operation), and the damaged manifest's bytes must be in
/// quarantine. Answers whether boot refused first.
fn repair_image(
    probe: &Probe,
    point: &Point,
    image: &SimFs,
    bytes: &[u8],
    counts: &mut Counts,
) -> bool {
    // Whether boot refuses, on a copy: the image's own first boot is the one checked.
    let refused = Store::open_in(sim(&image.crash()), Config::default(), &[decl()]).is_err();
    let image = if refused {
        if let Err(e) = repair(image) {
            point.fail(&format!("boot refuses, and so does the repair: {e}"));
        }
        // What the repair left, with a fresh operation counter for the heal's crashes.
        image.crash()
    } else {
        image.clone()
    };
    check_first(&REPAIR, probe, point, &image, counts);
    if !quarantine(&image).values().any(|b| b == bytes) {
        point.fail("the damaged manifest is not kept in quarantine");
    }
    refused
}

#[test]
fn repair_crashed_at_every_operation() {
    crash_every_operation(
        "repair_crashed_at_every_operation",
        Damage::History,
        "repair",
    );
}

/// The rebuild of a rewritten generation's damaged snapshot from the generation it was taken
/// from, crashed at every operation, as the cut is above.
#[test]
fn rebuild_crashed_at_every_operation() {
    crash_every_operation(
        "rebuild_crashed_at_every_operation",
        Damage::Snapshot,
        "rebuild",
    );
}

fn crash_every_operation(test: &'static str, damage: Damage, scenario: &'static str) {
    let (mut refused_then_repaired, mut repaired) = (0, 0);
    let mut counts = Counts {
        heal_images: vec![0],
        heal_crashes: vec![0],
        ..Counts::default()
    };
    for mode in MODES {
        let (damaged, _, bytes) = damaged(mode, damage);
        let probe = repair_probe(&damaged, damage);
        counts.ops.push(format!("{} ({mode:?})", probe.n_ops));
        for k in 0..probe.n_ops {
            let crashed = damaged.crash();
            crashed.crash_at(k);
            let point = Point {
                test,
                scenario,
                mode,
                k,
                n_ops: probe.n_ops,
                kind: probe.kinds[k as usize].clone(),
                image: String::new(),
                heals: Vec::new(),
            };
            match repair(&crashed) {
                Ok(_) => point.fail("the repair survived its crash"),
                Err(e) if !caused_by_crash(&e) => {
                    point.fail(&format!("the repair failed, not of the crash: {e}"))
                }
                Err(_) => {}
            }
            if crashed.ops() <= k {
                point.fail("the crash was never reached");
            }
            for (image_name, image) in images(&crashed) {
                let point = Point {
                    image: image_name,
                    ..point.clone()
                };
                if !point.selected() {
                    continue;
                }
                counts.images += 1;
                if !counts.first((format!("{mode:?}"), fingerprint(&image))) {
                    continue;
                }
                counts.distinct += 1;
                if repair_image(&probe, &point, &image, &bytes, &mut counts) {
                    refused_then_repaired += 1;
                } else {
                    repaired += 1;
                }
            }
            counts.points += 1;
        }
    }
    census(&format!(
        "crash {scenario}: operations {}; {} crash points, {} images, {} distinct booted (the \
         damaged generation still current, repaired again: {refused_then_repaired}; the new \
         generation complete: {repaired}); crashes inside boot's heal: images {:?}, distinct \
         booted {:?}; answers compared with the uncrashed repair's, there and after the next \
         barrier (the model has no repair), rows with {}",
        counts.ops.join(", "),
        counts.points,
        counts.images,
        counts.distinct,
        counts.heal_images,
        counts.heal_crashes,
        match damage {
            Damage::History => "the trusted prefix's",
            Damage::Snapshot => "every acknowledged row",
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
    if let Ok(only) = std::env::var("STRATA_CRASH_ONLY") {
        assert!(
            !names_crash(&only, scenario) || counts.distinct > 0,
            "STRATA_CRASH_ONLY={only} selects no crash point of the {scenario}"
        );
    } else {
        assert!(refused_then_repaired > 0 && repaired > 0);
        assert!(
            counts.heal_crashes[0] > 0,
            "no crash inside a heal after repair"
        );
    }
}

/// EIO and ENOSPC at every operation of the repair: it fails with that fault's error; the disk
/// it leaves (as is, and a power cut's image of it) boots, or is refused and repaired again,
/// and then checks out as any other.
#[test]
fn io_faults_inside_repair() {
    let (mut injected, mut reopened, mut refused) = (0, 0, 0);
    for (mode, damage) in MODES.into_iter().flat_map(|m| DAMAGES.map(|d| (m, d))) {
        let (damaged, _, bytes) = damaged(mode, damage);
        let probe = repair_probe(&damaged, damage);
        let scenario = match damage {
            Damage::History => "repair",
            Damage::Snapshot => "rebuild",
        };
        for k in 0..probe.n_ops {
            for (name, fault) in [("fault-eio", Fault::Eio), ("fault-enospc", Fault::Enospc)] {
                let point = Point {
                    test: "io_faults_inside_repair",
                    scenario,
                    mode,
                    k,
                    n_ops: probe.n_ops,
                    kind: probe.kinds[k as usize].clone(),
                    image: name.to_owned(),
                    heals: Vec::new(),
                };
                if !point.selected() {
                    continue;
                }
                let fs = damaged.crash();
                fs.fail_at(k, fault);
                injected += 1;
                match repair(&fs) {
                    Ok(_) => point.fail("the repair answered Ok over a failed operation"),
                    Err(e) if !caused_by(&e, fault) => {
                        point.fail(&format!("the repair failed, not of the fault: {e}"))
                    }
                    Err(_) => {}
                }
                if fs.ops() <= k {
                    point.fail("the fault was never reached");
                }
                for (image_name, image) in [("power cut", fs.crash()), ("same disk", fs.clone())] {
                    let point = Point {
                        image: format!("{name} ({image_name})"),
                        ..point.clone()
                    };
                    let kept = quarantine(&image);
                    // The first boot is checked if it opens; if it refuses (the damaged
                    // generation still current), the repair run again must succeed.
                    let booted = open_checked(&REPAIR, &probe, &point, &image, &kept)
                        .unwrap_or_else(|_| {
                            if let Err(e) = repair(&image) {
                                point.fail(&format!("boot refuses, and so does the repair: {e}"));
                            }
                            refused += 1;
                            boot(&REPAIR, &probe, &point, &image, &kept)
                        });
                    go_on(booted, &image, &probe, &point);
                    if !quarantine(&image).values().any(|b| *b == bytes) {
                        point.fail("the damaged manifest is not kept in quarantine");
                    }
                    reopened += 1;
                }
            }
        }
    }
    census(&format!(
        "faults repair: {injected} injected (EIO, ENOSPC at each operation of the repair, of a \
         cut and of a rebuild, both rename modes); each failed the repair with its error; {reopened} reopens (same disk \
         and power-cut image) checked, {refused} of them refused and repaired again"
    ));
    if std::env::var("STRATA_CRASH_ONLY").is_err() {
        assert!(injected > 0);
    }
    crate::total(crate::Total {
        faults: injected,
        ..crate::Total::default()
    });
}
