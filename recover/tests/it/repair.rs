//! The repair of damaged manifest history, crashed at every operation in the simulation: every
//! crash leaves either the damaged store (refused again, and a second repair finishes) or the
//! repaired one — never a store that opens without its fence.

use strata_recover::{RecoverError, boot, repair};
use strata_segment::vfs::{SimFs, Vfs};

use crate::support::{STREAM, barrier, merge, new_store, quarantine, seal};

const MANIFEST: &str = "manifest-000001";

/// A store of three barriers of 10 rows (positions 0..=29) whose first barrier's frame is
/// damaged, made durable through the file system itself.
fn damaged_store() -> (SimFs, Vec<u8>) {
    let (fs, mut booted) = new_store();
    for seq in 1..=3 {
        let next = barrier(&booted, seq, 10);
        seal(&fs, &mut booted, &next).unwrap();
    }
    drop(booted);
    let mut bytes = fs.live_bytes(MANIFEST).unwrap();
    let mut at = strata_index::LOG_HEADER_LEN;
    at += strata_index::decode_frame(&bytes[at..]).unwrap().1;
    bytes[at + 17] ^= 0x10;
    fs.remove(MANIFEST).unwrap();
    let mut file = fs.create(MANIFEST).unwrap();
    file.write_all(&bytes).unwrap();
    file.sync_data().unwrap();
    drop(file);
    fs.sync_dir("").unwrap();
    (fs.crash(), bytes)
}

fn assert_repaired(fs: &SimFs, damaged: &[u8]) {
    let booted = boot(fs, false).unwrap();
    assert_eq!(booted.catalog.fence(STREAM), Some(29));
    assert_eq!(booted.catalog.watermark(STREAM), Some(29));
    drop(booted);
    assert!(
        quarantine(fs).values().any(|kept| kept == damaged),
        "the damaged manifest is kept whole"
    );
}

#[test]
fn a_repair_crashed_at_every_operation_never_opens_without_its_fence() {
    let (base, damaged) = damaged_store();
    assert!(matches!(
        boot(&base, false),
        Err(RecoverError::ManifestCorrupt(_))
    ));
    let mut crash_op = 0;
    loop {
        let fs = base.crash();
        fs.crash_at(fs.ops() + crash_op);
        let outcome = repair(&fs);
        let after = fs.crash();
        match outcome {
            Ok(_) => {
                assert_repaired(&after, &damaged);
                break;
            }
            Err(error) => {
                assert!(
                    matches!(&error, RecoverError::Storage(_)),
                    "op {crash_op}: {error}"
                );
                match boot(&after, false) {
                    Err(RecoverError::ManifestCorrupt(_)) => {
                        repair(&after).unwrap_or_else(|e| panic!("op {crash_op}: again: {e}"));
                        assert_repaired(&after.crash(), &damaged);
                    }
                    Ok(booted) => {
                        drop(booted);
                        assert_repaired(&after, &damaged);
                    }
                    Err(other) => panic!("op {crash_op}: boot after the crash: {other}"),
                }
            }
        }
        crash_op += 1;
        assert!(crash_op < 500, "the repair never finished");
    }
    assert!(crash_op > 5, "the sweep crossed the repair's writes");
}

/// Flips a byte inside frame `frame_idx` (0 is the declaration) of the manifest, durably.
fn damage_frame(fs: &SimFs, frame_idx: usize) {
    let mut bytes = fs.live_bytes(MANIFEST).unwrap();
    let mut at = strata_index::LOG_HEADER_LEN;
    for _ in 0..frame_idx {
        at += strata_index::decode_frame(&bytes[at..]).unwrap().1;
    }
    let frame_len = strata_index::decode_frame(&bytes[at..]).unwrap().1;
    bytes[at + frame_len / 2] ^= 0x40;
    fs.remove(MANIFEST).unwrap();
    let mut file = fs.create(MANIFEST).unwrap();
    file.write_all(&bytes).unwrap();
    file.sync_data().unwrap();
    drop(file);
    fs.sync_dir("").unwrap();
}

/// Rows the store serves: those of live raw segments whose file is there.
fn rows_served(fs: &SimFs) -> u64 {
    let booted = boot(fs, false).unwrap();
    let mut n_rows = 0;
    for view in booted
        .catalog
        .partitions(STREAM, &strata_index::TrackKey::ROOT)
    {
        for (name, entry) in view.segments(strata_index::Tier::Raw) {
            if fs.exists(&format!("seg/{name:012}.seg")).unwrap() {
                n_rows += entry.n_rows;
            }
        }
    }
    n_rows
}

/// The loss the refusal and the repair state, as (rows, positions).
fn stated_loss(error: &RecoverError) -> (u64, Option<[u64; 2]>) {
    let RecoverError::ManifestCorrupt(corruption) = error else {
        panic!("not damaged history: {error}");
    };
    corruption
        .losses()
        .get(STREAM)
        .map_or((0, None), |loss| (loss.n_rows, loss.positions))
}

/// The defect as found (#28 item 3): with barrier 3 of 5 damaged, the refusal and the repair
/// counted only barriers 4 and 5, though the damaged frame's own barrier is lost with them.
#[test]
fn a_repair_counts_the_damaged_frames_own_barrier_among_what_it_drops() {
    let (fs, mut booted) = new_store();
    for seq in 1..=5 {
        let next = barrier(&booted, seq, 10);
        seal(&fs, &mut booted, &next).unwrap();
    }
    drop(booted);
    // Frame 3 is barrier 3's, positions 20..=29; barriers 1 and 2 (positions 0..=19) stay.
    damage_frame(&fs, 3);
    let fs = fs.crash();
    let refusal = boot(&fs, false).unwrap_err();
    assert_eq!(stated_loss(&refusal), (30, Some([20, 49])));
    let message = refusal.to_string();
    assert!(
        message.contains("stream \"capture\": 30 row(s) at positions 20..=49"),
        "{message}"
    );
    let repaired = repair(&fs).unwrap();
    let cut = repaired.cut.expect("the repair cut the damaged history");
    assert_eq!(
        cut.corruption.losses().get(STREAM).map(|l| l.n_rows),
        Some(30)
    );
    assert_eq!(rows_served(&fs), 20, "50 acknowledged, 30 lost");
}

/// A compaction after the damage removed the prefix's files (their rows live on in its
/// outputs, which the cut drops): those rows are lost too, and the report says where.
#[test]
fn a_repair_counts_rows_the_prefix_claims_in_files_a_later_merge_removed() {
    let (fs, mut booted) = new_store();
    for seq in 1..=4 {
        let next = barrier(&booted, seq, 10);
        seal(&fs, &mut booted, &next).unwrap();
    }
    let inputs: Vec<u64> = (1..=4).collect();
    for run in ["run_7", "run_70"] {
        let step = merge(&fs, &booted, run, &inputs);
        seal(&fs, &mut booted, &step).unwrap();
    }
    for input in &inputs {
        assert!(booted.catalog.is_retired(*input));
        fs.remove(&format!("seg/{input:012}.seg")).unwrap();
    }
    fs.sync_dir("seg").unwrap();
    drop(booted);
    // Barrier 3's frame: the prefix claims barriers 1 and 2, whose files are gone.
    damage_frame(&fs, 3);
    let fs = fs.crash();
    let refusal = boot(&fs, false).unwrap_err();
    assert_eq!(stated_loss(&refusal), (40, Some([0, 39])));
    let message = refusal.to_string();
    assert!(
        message.contains("20 of them in files the trusted prefix"),
        "{message}"
    );
    repair(&fs).unwrap();
    assert_eq!(rows_served(&fs), 0);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]

    /// The law: what the repaired store serves plus what the report says is lost is what was
    /// acknowledged, and the lost positions are exactly those of the damaged barrier and after.
    /// Barriers of 1 to 12 rows (positions are one per row from 0), any barrier frame damaged
    /// that has a later frame, and maybe a compaction of one track's newest segments after it.
    #[test]
    fn what_a_repair_serves_and_what_it_says_it_lost_add_up_to_what_was_acknowledged(
        sizes in proptest::collection::vec(1u64..=12, 2..=7),
        damaged in 0usize..6,
        merged in 0usize..=4,
    ) {
        let damaged = 1 + damaged % (sizes.len() - 1);
        let (fs, mut booted) = new_store();
        for (seq, &n_rows) in (1..).zip(&sizes) {
            let next = barrier(&booted, seq, n_rows);
            seal(&fs, &mut booted, &next).unwrap();
        }
        // A merge of run_7's newest segments (run_70 keeps every file live).
        let run_7 = strata_index::TrackKey::encode(&["run_7"]).unwrap();
        let segments: Vec<u64> = booted
            .catalog
            .partitions(STREAM, &run_7)
            .flat_map(|v| v.segments(strata_index::Tier::Raw).map(|(n, _)| n).collect::<Vec<_>>())
            .collect();
        if merged >= 2 && segments.len() >= merged {
            let step = merge(&fs, &booted, "run_7", &segments[segments.len() - merged..]);
            seal(&fs, &mut booted, &step).unwrap();
        }
        drop(booted);
        damage_frame(&fs, damaged);
        let fs = fs.crash();
        let acknowledged: u64 = sizes.iter().sum();
        let kept: u64 = sizes[..damaged - 1].iter().sum();
        let refusal = boot(&fs, false).unwrap_err();
        proptest::prop_assert_eq!(
            stated_loss(&refusal),
            (acknowledged - kept, Some([kept, acknowledged - 1]))
        );
        repair(&fs).unwrap();
        proptest::prop_assert_eq!(rows_served(&fs), kept);
    }
}

/// A store of three barriers of 10 rows with `bytes` written durably as `manifest-000002`.
fn store_with_second_generation(bytes: &[u8]) -> SimFs {
    let (fs, mut booted) = new_store();
    for seq in 1..=3 {
        let next = barrier(&booted, seq, 10);
        seal(&fs, &mut booted, &next).unwrap();
    }
    drop(booted);
    let mut file = fs.create("manifest-000002").unwrap();
    file.write_all(bytes).unwrap();
    file.sync_data().unwrap();
    drop(file);
    fs.sync_dir("").unwrap();
    fs.crash()
}

/// What could sit at `manifest-000002` that no rewrite writes: nothing, junk, and a valid
/// header followed by junk (which boot used to prefer, cutting the junk as a torn tail and
/// quarantining every file generation 1 claims: a store that opened empty).
fn strays() -> Vec<(&'static str, Vec<u8>)> {
    let header = strata_index::log_header().to_vec();
    let mut header_and_junk = header.clone();
    header_and_junk.extend_from_slice(b"garbage garbage garbage");
    vec![
        ("empty", Vec::new()),
        ("junk", b"junk junk junk junk junk\n".to_vec()),
        ("short", header[..9].to_vec()),
        ("header and junk", header_and_junk),
    ]
}

/// The rough edge of #28: a higher generation that is empty or junk made every command refuse
/// with no hint, and `repair` refuse too; one with a valid header and junk after it was
/// silently preferred. Now boot refuses naming it and what to do, and changes nothing; the
/// repair moves it into quarantine (bytes kept) and the store opens from generation 1 whole.
#[test]
fn a_stray_higher_generation_is_refused_naming_it_and_a_repair_sets_it_aside() {
    for (what, bytes) in strays() {
        let fs = store_with_second_generation(&bytes);
        let before = crate::support::files(&fs);
        let refusal = boot(&fs, false).map(|_| ()).unwrap_err();
        let message = refusal.to_string();
        for needle in [
            "manifest-000002",
            "manifest-000001, which is whole",
            "engine-fsck repair STORE --yes",
            "stray-manifest-000002",
        ] {
            assert!(message.contains(needle), "{what}: {message}");
        }
        assert_eq!(
            crate::support::files(&fs),
            before,
            "{what}: nothing changed"
        );

        repair(&fs).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(
            quarantine(&fs).get("stray-manifest-000002"),
            Some(&bytes),
            "{what}: the stray is kept whole"
        );
        let booted = boot(&fs, false).unwrap();
        assert_eq!(booted.report.generation, 1, "{what}");
        assert_eq!(booted.catalog.watermark(STREAM), Some(29), "{what}");
        drop(booted);
        assert_eq!(rows_served(&fs), 30, "{what}");
    }
}

/// A set-aside crashed at every operation: the store is either refused as before (and a
/// second repair finishes) or opens from generation 1 with the stray kept.
#[test]
fn a_set_aside_crashed_at_every_operation_keeps_the_stray_and_finishes() {
    let base = store_with_second_generation(b"junk");
    let mut crash_op = 0;
    loop {
        let fs = base.crash();
        fs.crash_at(fs.ops() + crash_op);
        let outcome = repair(&fs);
        let after = fs.crash();
        if outcome.is_err() && boot(&after, false).is_err() {
            repair(&after).unwrap_or_else(|e| panic!("op {crash_op}: again: {e}"));
        }
        assert_eq!(rows_served(&after), 30, "op {crash_op}");
        let kept: Vec<_> = quarantine(&after)
            .into_iter()
            .filter(|(_, bytes)| bytes == b"junk")
            .collect();
        assert_eq!(kept.len(), 1, "op {crash_op}: {kept:?}");
        assert!(!after.exists("manifest-000002").unwrap(), "op {crash_op}");
        if outcome.is_ok() {
            break;
        }
        crash_op += 1;
        assert!(crash_op < 200, "the repair never finished");
    }
    assert!(crash_op > 2, "the sweep crossed the set-aside's writes");
}
