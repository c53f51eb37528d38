//! I/O faults at every operation of every scenario: EIO and ENOSPC on the operation alone
//! (`SimFs::fail_at`), and ENOSPC after a short write landed (`fail_at_after_writing`, which
//! for any operation but a write is the plain fault). The operation errors; the store is then
//! poisoned (it refuses even reads until reopened) or, if the fault struck before anything was
//! written, refuses cleanly and still answers a state the uncrashed run passed through.
//! Nothing is claimed: a reopen (of the same disk, and of a power cut's image of it) answers a
//! state of the uncrashed run, the model's there; after ENOSPC no temp is left in `tmp/`; and
//! the reopened store takes the next barrier and compaction step.

use std::collections::BTreeMap;

use strata::segment::vfs::{Fault, SimFs, Vfs};
use strata::{EngineError, Store};

use crate::census;
use crate::harness::{
    MODES, NEXT, PREFILL_TRACKS, Point, Probe, STREAM, Scenario, State, boot, decl, go_on,
    highest_name, images, prepared, probe, quarantine, rows_at, sim,
};
use crate::scenarios::scenarios;

/// Each fault injected: its name (as `STRATA_CRASH_ONLY` names it), the fault, and for a
/// write, how many of its bytes land first.
const FAULTS: [(&str, Fault, Option<usize>); 3] = [
    ("fault-eio", Fault::Eio, None),
    ("fault-enospc", Fault::Enospc, None),
    ("fault-enospc-short", Fault::Enospc, Some(5)),
];

#[derive(Default)]
struct Counts {
    injected: u64,
    poisoned: u64,
    refused_clean: u64,
    /// Faults the operation absorbed (answered Ok): it must then have done all it says.
    absorbed: u64,
    reopened: u64,
}

#[test]
fn io_faults_at_every_operation_of_every_scenario() {
    for (_, scenario) in scenarios() {
        let mut counts = Counts::default();
        for mode in MODES {
            let probe = probe(&scenario, mode);
            for k in 0..probe.n_ops {
                for (name, fault, landed) in FAULTS {
                    let point = Point {
                        test: "io_faults_at_every_operation_of_every_scenario",
                        scenario: scenario.name,
                        mode,
                        k,
                        n_ops: probe.n_ops,
                        kind: probe.kinds[k as usize].clone(),
                        image: name.to_owned(),
                        heals: Vec::new(),
                    };
                    if point.selected() {
                        fault_point(&scenario, &probe, &point, (fault, landed), &mut counts);
                    }
                }
            }
        }
        census(&format!(
            "faults {}: {} injected (EIO, ENOSPC, ENOSPC after 5 bytes landed, at each \
             operation, both rename modes); the store poisoned after {}, refused cleanly \
             after {}, absorbed {}; {} reopens (same disk and power-cut image) checked",
            scenario.name,
            counts.injected,
            counts.poisoned,
            counts.refused_clean,
            counts.absorbed,
            counts.reopened
        ));
        if std::env::var("STRATA_CRASH_ONLY").is_err() {
            assert!(counts.injected > 0, "{}: no faults", scenario.name);
            assert!(counts.poisoned > 0, "{}: no fault poisoned", scenario.name);
        }
    }
}

fn fault_point(
    scenario: &Scenario,
    probe: &Probe,
    point: &Point,
    (fault, landed): (Fault, Option<usize>),
    counts: &mut Counts,
) {
    let fs = SimFs::with_rename_mode(point.mode);
    let mut store = prepared(scenario, &fs);
    let at = fs.ops() + point.k;
    match landed {
        Some(landed) => fs.fail_at_after_writing(at, fault, landed),
        None => fs.fail_at(at, fault),
    }
    counts.injected += 1;
    let answer = (scenario.op)(&mut store);
    if fs.ops() <= at {
        point.fail("the fault was never reached");
    }
    if answer.is_ok() {
        if Some(&State::of(&store)) != probe.states.last() {
            point.fail("the operation answered Ok without doing all it does");
        }
        counts.absorbed += 1;
    } else {
        match store.watermark(STREAM, &[]) {
            Err(EngineError::Poisoned { .. }) => {
                // A poisoned store refuses writes too, so nothing lands on a state the disk
                // may not hold.
                let publish = store.publish(STREAM, NEXT, &rows_at(NEXT, &PREFILL_TRACKS));
                if !matches!(publish, Err(EngineError::Poisoned { .. })) {
                    point.fail(&format!("a poisoned store takes a publish: {publish:?}"));
                }
                counts.poisoned += 1;
            }
            // Refused before anything was written: the store claims nothing it did not do.
            Ok(_) => {
                if !probe.states.contains(&State::of(&store)) {
                    point.fail("a store the fault did not poison answers a state never reached");
                }
                counts.refused_clean += 1;
            }
            Err(other) => point.fail(&format!("after the fault, a read answers {other}")),
        }
    }
    drop(store);
    // The power-cut image first: the reopen of the same disk below changes it.
    for (image_name, image) in [("power cut", fs.crash()), ("same disk", fs.clone())] {
        let point = Point {
            image: format!("{} ({image_name})", point.image),
            ..point.clone()
        };
        let highest = highest_name(&image);
        let (store, idx, quarantined, _) = boot(scenario, probe, &point, &image, &BTreeMap::new());
        if fault == Fault::Enospc {
            let temps = image.list("tmp").unwrap();
            if !temps.is_empty() {
                let names: Vec<String> = temps.into_iter().map(|e| e.name).collect();
                point.fail(&format!("after ENOSPC, the reopen leaves temps {names:?}"));
            }
        }
        go_on(store, &image, probe, idx, &point, highest, &quarantined);
        counts.reopened += 1;
    }
}

/// I/O faults inside boot's own heal: every image a crashed seal of many partitions or a
/// crashed compaction leaves whose boot heals, that boot failed with EIO and with ENOSPC at
/// each of its operations. Boot refuses (it claims nothing on a heal it could not finish), and
/// the next boot of the same disk checks out as any other.
#[test]
fn io_faults_inside_boot_heal() {
    let wanted = ["seal_many_partitions", "compaction_step"];
    for (_, scenario) in scenarios().into_iter().filter(|(t, _)| wanted.contains(t)) {
        let (mut healed, mut injected, mut refused, mut absorbed) = (0, 0, 0, 0);
        for mode in MODES {
            let probe = probe(&scenario, mode);
            for k in 0..probe.n_ops {
                let fs = SimFs::with_rename_mode(mode);
                let mut store = prepared(&scenario, &fs);
                fs.crash_at(fs.ops() + k);
                assert!((scenario.op)(&mut store).is_err());
                drop(store);
                for (image_name, image) in images(&fs) {
                    // How many operations the boot's heal takes, on a copy.
                    let copy = image.crash();
                    drop(Store::open_in(sim(&copy), (scenario.config)(), &[decl()]).unwrap());
                    let heal_ops = copy.ops();
                    healed += u64::from(heal_ops > 0);
                    for j in 0..heal_ops {
                        for (fault_name, fault) in [("eio", Fault::Eio), ("enospc", Fault::Enospc)]
                        {
                            let point = Point {
                                test: "io_faults_inside_boot_heal",
                                scenario: scenario.name,
                                mode,
                                k,
                                n_ops: probe.n_ops,
                                kind: probe.kinds[k as usize].clone(),
                                image: format!("{image_name}/{j}/fault-{fault_name}"),
                                heals: Vec::new(),
                            };
                            if !point.selected() {
                                continue;
                            }
                            let disk = image.crash();
                            disk.fail_at(j, fault);
                            injected += 1;
                            match Store::open_in(sim(&disk), (scenario.config)(), &[decl()]) {
                                Err(_) => refused += 1,
                                Ok(_) => absorbed += 1,
                            }
                            if disk.ops() <= j {
                                point.fail("the fault inside boot's heal was never reached");
                            }
                            let highest = highest_name(&disk);
                            let kept = quarantine(&disk);
                            let (store, idx, quarantined, _) =
                                boot(&scenario, &probe, &point, &disk, &kept);
                            go_on(store, &disk, &probe, idx, &point, highest, &quarantined);
                        }
                    }
                }
            }
        }
        census(&format!(
            "faults in boot's heal, after {}: {healed} images healed; {injected} faults \
             injected (EIO, ENOSPC at each heal operation, both rename modes); boot refused \
             {refused}, went on {absorbed}; each next boot checked",
            scenario.name
        ));
        if std::env::var("STRATA_CRASH_ONLY").is_err() {
            assert!(
                healed > 0 && injected > 0,
                "{}: nothing healed",
                scenario.name
            );
        }
    }
}
