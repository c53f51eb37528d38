//! I/O faults at every operation of every scenario: EIO and ENOSPC on the operation alone
//! (`SimFs::fail_at`), and ENOSPC after a short write landed (`fail_at_after_writing`, which
//! for any operation but a write is the plain fault). Every fault fails the operation with that
//! fault's error, and the store is then poisoned: it refuses reads and writes until reopened.
//! Nothing is claimed: a reopen (of the same disk, and of a power cut's image of it) answers a
//! state of the uncrashed run, the model's there (or the uncrashed run's, for a sweep); after
//! ENOSPC no temp is in `tmp/`, neither right after the failed operation nor after the reopen
//! (after EIO the census counts failed operations that left one); and the reopened store takes
//! the next barrier and compaction step.

use std::collections::HashSet;
use std::error::Error;
use std::io;

use strata::segment::vfs::{Fault, Vfs};
use strata::{EngineError, Store};

use crate::census;
use crate::harness::names_fault;
use crate::harness::{
    MODES, NEXT, PREFILL_TRACKS, Point, Probe, STREAM, Scenario, boot, caused_by_crash, decl, disk,
    fingerprint, go_on, images, prepared, probe, quarantine, rows_at, sim,
};
use crate::scenarios::scenarios;

/// Each fault injected: its name (as `STRATA_CRASH_ONLY` names it), the fault, and for a
/// write, how many of its bytes land first.
const FAULTS: [(&str, Fault, Option<usize>); 3] = [
    ("fault-eio", Fault::Eio, None),
    ("fault-enospc", Fault::Enospc, None),
    ("fault-enospc-short", Fault::Enospc, Some(5)),
];

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

#[derive(Default)]
struct Counts {
    injected: u64,
    poisoned: u64,
    /// Failed operations (EIO: ENOSPC may leave none) that left a temp in `tmp/`, before any
    /// reopen.
    left_temps: u64,
    reopened: u64,
}

#[test]
fn io_faults_at_every_operation_of_every_scenario() {
    let mut all = 0;
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
             operation, both rename modes); each failed the operation and poisoned the store \
             ({}); no ENOSPC left a temp in tmp/, {} EIO did until the reopen; {} reopens (same disk and \
             power-cut image) checked",
            scenario.name, counts.injected, counts.poisoned, counts.left_temps, counts.reopened
        ));
        all += counts.injected;
        match std::env::var("STRATA_CRASH_ONLY") {
            Ok(only) => assert!(
                !names_fault(&only, scenario.name) || counts.injected > 0,
                "STRATA_CRASH_ONLY={only} selects no fault of {}",
                scenario.name
            ),
            Err(_) => assert!(counts.injected > 0, "{}: no faults", scenario.name),
        }
        assert_eq!(counts.poisoned, counts.injected, "{}", scenario.name);
    }
    crate::total(crate::Total {
        faults: all,
        ..crate::Total::default()
    });
}

fn fault_point(
    scenario: &Scenario,
    probe: &Probe,
    point: &Point,
    (fault, landed): (Fault, Option<usize>),
    counts: &mut Counts,
) {
    let fs = disk(point.mode);
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
    match answer {
        Ok(()) => point.fail("the operation answered Ok over a failed write"),
        Err(e) if !caused_by(&e, fault) => {
            point.fail(&format!("the operation failed, not of the fault: {e}"))
        }
        Err(_) => {}
    }
    // A poisoned store refuses reads and writes, so nothing lands on a state the disk may
    // not hold.
    let read = store.watermark(STREAM, &[]);
    if !matches!(read, Err(EngineError::Poisoned { .. })) {
        point.fail(&format!(
            "after the fault, a read answers {read:?}, not Poisoned"
        ));
    }
    let publish = store.publish(STREAM, NEXT, &rows_at(NEXT, &PREFILL_TRACKS));
    if !matches!(publish, Err(EngineError::Poisoned { .. })) {
        point.fail(&format!("a poisoned store takes a publish: {publish:?}"));
    }
    counts.poisoned += 1;
    drop(store);
    // Right after the failed operation, before any reopen: after ENOSPC the operation itself
    // must leave no temp behind (a full disk is no place to keep one); after EIO it is counted.
    let temps = fs.list("tmp").unwrap();
    if !temps.is_empty() {
        if fault == Fault::Enospc {
            let names: Vec<String> = temps.into_iter().map(|e| e.name).collect();
            point.fail(&format!(
                "after ENOSPC, the failed operation leaves temps {names:?}"
            ));
        }
        counts.left_temps += 1;
    }
    // The power-cut image first: the reopen of the same disk below changes it.
    for (image_name, image) in [("power cut", fs.crash()), ("same disk", fs.clone())] {
        let point = Point {
            image: format!("{} ({image_name})", point.image),
            ..point.clone()
        };
        let kept = quarantine(&image);
        let booted = boot(scenario, probe, &point, &image, &kept);
        if fault == Fault::Enospc {
            let temps = image.list("tmp").unwrap();
            if !temps.is_empty() {
                let names: Vec<String> = temps.into_iter().map(|e| e.name).collect();
                point.fail(&format!("after ENOSPC, the reopen leaves temps {names:?}"));
            }
        }
        go_on(booted, &image, probe, &point);
        counts.reopened += 1;
    }
}

/// I/O faults inside boot's own heal: every distinct image a crashed seal of many partitions
/// or a crashed compaction leaves whose boot heals, that boot failed with EIO and with ENOSPC
/// at each of its operations. Boot refuses every time, with that fault's error (it claims
/// nothing on a heal it could not finish), keeps what the image held in quarantine, and the
/// next boot of the same disk checks out as any other.
#[test]
fn io_faults_inside_boot_heal() {
    let wanted = ["seal_many_partitions", "compaction_step"];
    let mut all = 0;
    for (_, scenario) in scenarios().into_iter().filter(|(t, _)| wanted.contains(t)) {
        let (mut healed, mut injected, mut refused) = (0, 0, 0);
        for mode in MODES {
            let probe = probe(&scenario, mode);
            let mut distinct = HashSet::new();
            for k in 0..probe.n_ops {
                let fs = disk(mode);
                let mut store = prepared(&scenario, &fs);
                fs.crash_at(fs.ops() + k);
                let crashed = (scenario.op)(&mut store).unwrap_err();
                assert!(caused_by_crash(&crashed), "{crashed}");
                drop(store);
                for (image_name, image) in images(&fs) {
                    if !distinct.insert(fingerprint(&image)) {
                        continue;
                    }
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
                            // What the image held in quarantine before the faulted boot: no
                            // boot, faulted or not, may lose it.
                            let kept = quarantine(&disk);
                            disk.fail_at(j, fault);
                            injected += 1;
                            match Store::open_in(sim(&disk), (scenario.config)(), &[decl()]) {
                                Err(e) if caused_by(&e, fault) => refused += 1,
                                Err(e) => point.fail(&format!(
                                    "boot failed inside its heal, not of the fault: {e}"
                                )),
                                Ok(_) => point.fail("boot went on over a failed heal"),
                            }
                            if disk.ops() <= j {
                                point.fail("the fault inside boot's heal was never reached");
                            }
                            let booted = boot(&scenario, &probe, &point, &disk, &kept);
                            go_on(booted, &disk, &probe, &point);
                        }
                    }
                }
            }
        }
        census(&format!(
            "faults in boot's heal, after {}: {healed} distinct images healed; {injected} \
             faults injected (EIO, ENOSPC at each heal operation, both rename modes); boot \
             refused {refused} with the fault's error; each next boot checked",
            scenario.name
        ));
        all += injected;
        assert_eq!(refused, injected, "{}", scenario.name);
        if std::env::var("STRATA_CRASH_ONLY").is_err() {
            assert!(
                healed > 0 && injected > 0,
                "{}: nothing healed",
                scenario.name
            );
        }
    }
    crate::total(crate::Total {
        faults: all,
        ..crate::Total::default()
    });
}
