//! The operator's repair (`strata::recover::repair`) crashed at every operation: its module
//! promises that a crash anywhere leaves either the damaged generation current (boot refuses
//! again, and the repair run again succeeds) or the new generation complete (boot heals it like
//! any other). Either way the store then answers exactly what the uncrashed repair left, the
//! damaged manifest's bytes are kept in quarantine (evidence is never removed), and the store
//! takes the next barrier and compaction step.
//!
//! The damage is the one input here not made by a crash: no crash of an append can leave good
//! frames after a bad one, which is what a repair is for; a bit flipped in an acknowledged
//! barrier's frame (a bad sector) is what the repair's operator meets.

use strata::recover::repair;
use strata::segment::vfs::{RenameMode, SimFs, Vfs};
use strata::{Config, Store, Value};

use crate::census;
use crate::harness::{
    Effect, MODES, N_PREFILL, PREFILL_TRACKS, Point, Probe, STREAM, Scenario, State, boot, decl,
    fill, go_on, highest_name, images, manifests, quarantine, rows_at, sim,
};

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

/// A store of the fixture whose manifest has a byte flipped inside frame `DAMAGED_FRAME`'s
/// body, with good frames after it (damaged history), as a fresh image; and the damaged
/// manifest's name and bytes.
fn damaged(mode: RenameMode) -> (SimFs, String, Vec<u8>) {
    let fs = SimFs::with_rename_mode(mode);
    let mut store = Store::create_in(sim(&fs), Config::default(), &[decl()]).unwrap();
    fill(&mut store, 0..=N_PREFILL - 1, &PREFILL_TRACKS);
    drop(store);
    let manifest = manifests(&fs).pop().unwrap();
    let mut bytes = fs.read(&manifest).unwrap();
    // Walk the frames (16-byte header; each frame an 8-byte head, `len` le u32 first).
    let mut offset = 16;
    for _ in 0..DAMAGED_FRAME {
        let len = u32::from_le_bytes(bytes[offset..offset + 4].try_into().unwrap());
        offset += 8 + len as usize;
    }
    assert!(
        offset + 8 + 6 < bytes.len(),
        "frame {DAMAGED_FRAME} is not in the manifest"
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

/// The rows the trusted prefix holds, from the fixture.
fn prefix_rows() -> Vec<Vec<Value>> {
    (0..DAMAGED_FRAME as u64 - 1)
        .flat_map(|p| rows_at(p, &PREFILL_TRACKS))
        .collect()
}

#[test]
fn repair_crashed_at_every_operation() {
    let (mut points, mut images_booted, mut refused_then_repaired, mut repaired) = (0, 0, 0, 0);
    let mut ops = Vec::new();
    for mode in MODES {
        // The probe: the uncrashed repair, and the state its boot answers.
        let (damaged, manifest, bytes) = damaged(mode);
        let fs = damaged.crash();
        let start = fs.ops();
        repair(&fs).unwrap();
        let n_ops = fs.ops() - start;
        assert!(n_ops > 0, "the repair reached no file-system operation");
        ops.push(format!("{n_ops} ({mode:?})"));
        let store = Store::open_in(sim(&fs), Config::default(), &[decl()]).unwrap();
        let state = State::of(&store);
        let rows: Vec<Vec<Value>> = store
            .query(STREAM, &[], ..)
            .unwrap()
            .into_iter()
            .map(|r| r.values)
            .collect();
        assert_eq!(
            rows,
            prefix_rows(),
            "the repair keeps the trusted prefix's rows"
        );
        drop(store);
        let probe = Probe {
            n_ops,
            states: vec![state],
            modelled: vec![None],
            generations: (0, 0),
            kinds: vec![String::new(); n_ops as usize],
        };
        for k in 0..n_ops {
            let crashed = damaged.crash();
            crashed.crash_at(k);
            assert!(
                repair(&crashed).is_err(),
                "the repair survived its crash at {k}"
            );
            for (image_name, image) in images(&crashed) {
                let point = Point {
                    test: "repair_crashed_at_every_operation",
                    scenario: "repair",
                    mode,
                    k,
                    n_ops,
                    kind: String::new(),
                    image: image_name,
                    heals: Vec::new(),
                };
                if !point.selected() {
                    continue;
                }
                images_booted += 1;
                let highest = highest_name(&image);
                let kept = quarantine(&image);
                if Store::open_in(sim(&image), Config::default(), &[decl()]).is_err() {
                    // The damaged generation is still current: the repair again succeeds.
                    if let Err(e) = repair(&image) {
                        point.fail(&format!("boot refuses, and so does the repair: {e}"));
                    }
                    refused_then_repaired += 1;
                } else {
                    repaired += 1;
                }
                let (store, idx, after, _) = boot(&REPAIR, &probe, &point, &image, &kept);
                if !after.values().any(|b| *b == bytes) {
                    point.fail(&format!("the damaged {manifest} is not kept in quarantine"));
                }
                go_on(store, &image, &probe, idx, &point, highest, &after);
            }
            points += 1;
        }
    }
    census(&format!(
        "crash repair: operations {}; {points} crash points, {images_booted} images booted \
         (the damaged generation still current, repaired again: {refused_then_repaired}; the \
         new generation complete: {repaired}); answers compared with the uncrashed repair's \
         (the model has no repair), rows with the trusted prefix's",
        ops.join(", ")
    ));
    if std::env::var("STRATA_CRASH_ONLY").is_err() {
        assert!(refused_then_repaired > 0 && repaired > 0);
    }
}
