//! Damage in the part of a manifest generation written whole (its header, preamble and
//! snapshot, synced before the file had its name): refused wherever it lies, and what a repair
//! can bring back when the generation it was taken from is gone or changed, or was written by an
//! earlier build that kept none; and that a rewritten generation beside the one it was taken
//! from still heals a torn append as any generation does.

use strata_index::{
    Catalog, FRAME_BODY_MAX, LINEAGE_STATES_DEFAULT, LOG_HEADER_LEN, PREAMBLE_FRAME_LEN, Record,
    encode_frame, log_header_of, split_record, whole_state,
};
use strata_recover::{FindingKind, RecoverError, WayBack, boot, repair};
use strata_segment::vfs::{SimFs, Vfs};
use strata_segment::{read_manifest, rewrite_manifest, write_two_phase};

use crate::support::{STREAM, barrier, new_store, seal};

/// The snapshot a rewrite of `generation` (whose bytes are `bytes`, replayed into `catalog`)
/// writes.
fn snapshot_of(catalog: &Catalog, generation: u32, bytes: &[u8]) -> Vec<Record> {
    split_record(
        catalog.snapshot_after(generation, bytes, LINEAGE_STATES_DEFAULT),
        FRAME_BODY_MAX / 2,
    )
}

/// Three barriers of 10 rows (positions 0..=29) in generation 1, rewritten as generation 2
/// (generation 1 kept beside it), then a fourth barrier (positions 30..=39) appended to it.
fn rewritten() -> SimFs {
    let (fs, mut booted) = new_store();
    for seq in 1..=3 {
        let next = barrier(&booted, seq, 10);
        seal(&fs, &mut booted, &next).unwrap();
    }
    let one = read_manifest(&fs, 1).unwrap();
    let snapshot = snapshot_of(&booted.catalog, 1, &one);
    booted.manifest = rewrite_manifest(&fs, whole_state(1, &one), &snapshot).unwrap();
    let next = barrier(&booted, 4, 10);
    seal(&fs, &mut booted, &next).unwrap();
    drop(booted);
    fs.crash()
}

/// Replaces `name`'s bytes, durably: the damage a bad sector or a stray write leaves.
fn overwrite(fs: &SimFs, name: &str, bytes: &[u8]) {
    fs.remove(name).unwrap();
    let mut file = fs.create(name).unwrap();
    file.write_all(bytes).unwrap();
    file.sync_data().unwrap();
    drop(file);
    fs.sync_dir("").unwrap();
}

/// Flips a byte inside generation 2's snapshot frame (right after its preamble).
fn damage_the_snapshot(fs: &SimFs) {
    let mut bytes = read_manifest(fs, 2).unwrap();
    bytes[LOG_HEADER_LEN + PREAMBLE_FRAME_LEN + 11] ^= 0x10;
    overwrite(fs, "manifest-000002", &bytes);
}

/// The rows the store serves, counted from the catalog of a boot.
fn rows_served(fs: &SimFs) -> u64 {
    let booted = boot(fs, false).unwrap();
    booted
        .catalog
        .live_files()
        .flat_map(|f| f.partitions.iter().map(|p| p.n_rows))
        .sum()
}

#[test]
fn a_rewritten_generation_opens_with_the_one_it_was_taken_from_kept_beside_it() {
    let fs = rewritten();
    let booted = boot(&fs, false).unwrap();
    assert!(booted.report.is_clean(), "{:?}", booted.report.findings);
    assert_eq!(booted.report.generation, 2);
    assert_eq!(booted.report.previous, Some(1));
    drop(booted);
    assert!(fs.exists("manifest-000001").unwrap());
    assert_eq!(rows_served(&fs), 40);
}

/// Something done to generation 1.
type Undo<'a> = &'a dyn Fn(&SimFs);

/// With the generation its snapshot was taken from gone, or changed since, nothing can stand
/// in for a damaged snapshot: the refusal says so and why, and the repair cuts there, fencing
/// every position the evidence records (the 40 rows stay in quarantine).
#[test]
fn a_damaged_snapshot_without_its_way_back_is_cut_and_fenced_saying_why() {
    let gone = |fs: &SimFs| {
        fs.remove("manifest-000001").unwrap();
        fs.sync_dir("").unwrap();
    };
    let changed = |fs: &SimFs| {
        let mut bytes = read_manifest(fs, 1).unwrap();
        bytes.push(0);
        overwrite(fs, "manifest-000001", &bytes);
    };
    let cases: [(&str, Undo, &str); 2] = [
        ("gone", &gone, "is not beside it any more"),
        (
            "changed",
            &changed,
            "is not the generation its snapshot was taken from",
        ),
    ];
    for (what, undo_the_way_back, why) in cases {
        let fs = rewritten();
        damage_the_snapshot(&fs);
        undo_the_way_back(&fs);
        let fs = fs.crash();
        let refusal = boot(&fs, false).unwrap_err();
        let RecoverError::ManifestCorrupt(corruption) = &refusal else {
            panic!("{what}: {refusal}");
        };
        let whole = corruption
            .whole
            .as_ref()
            .expect("in the part written whole");
        assert!(
            matches!(&whole.way_back, WayBack::Cut { why: said } if said.contains(why)),
            "{what}: {:?}",
            whole.way_back
        );
        let message = refusal.to_string();
        assert!(message.contains(why), "{what}: {message}");
        assert!(
            message.contains("stream \"capture\": 40 row(s) at positions 0..=39"),
            "{what}: {message}"
        );
        let repaired = repair(&fs).unwrap();
        let cut = repaired.cut.expect("a cut");
        assert!(cut.rebuilt.is_none(), "{what}");
        assert_eq!(cut.fences.get(STREAM), Some(&39), "{what}");
        let booted = boot(&fs, false).unwrap();
        assert_eq!(booted.catalog.fence(STREAM), Some(39), "{what}");
        drop(booted);
        assert_eq!(
            rows_served(&fs),
            0,
            "{what}: the cut keeps only the preamble"
        );
    }
}

/// Beside the generation it was taken from, a rewritten generation is appended to like any:
/// an append a crash tore is healed as a torn tail, not taken for a stray generation.
#[test]
fn a_torn_append_to_a_rewritten_generation_is_healed_beside_its_way_back() {
    let fs = rewritten();
    let mut booted = boot(&fs, false).unwrap();
    let next = barrier(&booted, 5, 10);
    write_two_phase(&fs, "seg", &next.file, &next.bytes).unwrap();
    // The frame is written, its sync is not reached, and the crash keeps 10 of its bytes.
    fs.crash_at(fs.ops() + 1);
    booted.manifest.append(&next.record).unwrap_err();
    drop(booted);
    let fs = fs.crash_tearing(10);
    let booted = boot(&fs, false).unwrap();
    let kinds: Vec<FindingKind> = booted.report.findings.iter().map(|f| f.kind).collect();
    assert!(kinds.contains(&FindingKind::TornManifestTail), "{kinds:?}");
    assert_eq!(booted.report.previous, Some(1));
    drop(booted);
    assert_eq!(rows_served(&fs), 40);
}

/// A store an earlier build rewrote (format 2: no preamble, and the generation replaced
/// removed) still opens, and a torn append to it is still healed; but its first frame, the
/// start of the snapshot that build wrote whole, is refused when damaged, and since that build
/// kept nothing to take it again from, the repair cuts and fences, saying so.
#[test]
fn a_generation_an_earlier_build_rewrote_opens_and_its_first_frame_is_whole() {
    let (fs, mut booted) = new_store();
    for seq in 1..=3 {
        let next = barrier(&booted, seq, 10);
        seal(&fs, &mut booted, &next).unwrap();
    }
    let one = read_manifest(&fs, 1).unwrap();
    let mut two = log_header_of(2).to_vec();
    for record in snapshot_of(&booted.catalog, 1, &one) {
        two.extend_from_slice(&encode_frame(&record));
    }
    let catalog = booted.catalog.clone();
    drop(booted);
    // As that build rewrote: the new generation whole, then the old one removed.
    write_two_phase(&fs, "", "manifest-000002", &two).unwrap();
    fs.remove("manifest-000001").unwrap();
    fs.sync_dir("").unwrap();
    let legacy = fs.crash();

    let booted = boot(&legacy.crash(), false).unwrap();
    assert!(booted.report.is_clean(), "{:?}", booted.report.findings);
    assert_eq!(booted.report.previous, None);
    assert_eq!(
        booted.catalog.live_files().count(),
        catalog.live_files().count()
    );
    drop(booted);

    // An append to it torn by a crash is healed as ever.
    let torn = legacy.crash();
    let mut booted = boot(&torn, false).unwrap();
    let next = barrier(&booted, 4, 10);
    write_two_phase(&torn, "seg", &next.file, &next.bytes).unwrap();
    torn.crash_at(torn.ops() + 1);
    booted.manifest.append(&next.record).unwrap_err();
    drop(booted);
    let torn = torn.crash_tearing(9);
    assert_eq!(rows_served(&torn), 30);

    // Its first frame damaged: refused, and cut with fences.
    let damaged = legacy.crash();
    let mut bytes = two.clone();
    bytes[LOG_HEADER_LEN + 20] ^= 0x02;
    overwrite(&damaged, "manifest-000002", &bytes);
    let refusal = boot(&damaged, false).unwrap_err();
    let RecoverError::ManifestCorrupt(corruption) = &refusal else {
        panic!("{refusal}");
    };
    assert_eq!(corruption.offset, LOG_HEADER_LEN as u64);
    let whole = corruption
        .whole
        .as_ref()
        .expect("in the part written whole");
    assert_eq!(whole.whole_len, None);
    assert!(
        refusal
            .to_string()
            .contains("written by an earlier build (manifest format 2)"),
        "{refusal}"
    );
    repair(&damaged).unwrap();
    assert_eq!(
        boot(&damaged, false).unwrap().catalog.fence(STREAM),
        Some(29)
    );
}
