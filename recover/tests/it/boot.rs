//! Boot over stores left by crashing the real write path: it serves the trusted prefix, keeps
//! every intermediate as evidence, heals before it claims, and converges when itself crashed.

use std::collections::BTreeSet;

use strata_index::{Catalog, parse_log};
use strata_recover::{Action, FindingKind, boot, quarantined_number};
use strata_segment::vfs::SimFs;
use strata_segment::{SegmentReader, read_manifest};

use crate::support::{Barrier, barrier, files, list, new_store, quarantine, seal};

// Operation offsets inside one seal: the segment's two-phase write, then the manifest append.
const OP_RENAME: u64 = 3;
const OP_APPEND_WRITE: u64 = 6;
const OP_APPEND_SYNC: u64 = 7;

/// A store with one good barrier, and the next barrier crashed at `op` (relative to its start).
/// Answers the crashed process's file system, the catalog after the good barrier, and the
/// crashed barrier.
fn crashed_barrier(op: u64) -> (SimFs, Catalog, Barrier) {
    let (fs, mut booted) = new_store();
    let first = barrier(&booted, 1, 6);
    seal(&fs, &mut booted, &first).unwrap();
    let prefix = booted.catalog.clone();
    let second = barrier(&booted, 2, 5);
    fs.crash_at(fs.ops() + op);
    seal(&fs, &mut booted, &second).unwrap_err();
    (fs, prefix, second)
}

fn frame_len(record: &strata_index::Record) -> usize {
    strata_index::encode_frame(record).len()
}

#[test]
fn a_manifest_torn_at_every_byte_of_its_last_frame_serves_the_prefix_and_keeps_the_tail() {
    let (_, _, probe) = crashed_barrier(OP_APPEND_SYNC);
    let len = frame_len(&probe.record);
    for keep in 0..=len {
        let (crashed, prefix, second) = crashed_barrier(OP_APPEND_SYNC);
        let fs = crashed.crash_tearing(keep);
        let torn = fs.live_bytes("manifest-000001").unwrap();
        let mut booted = boot(&fs, false).unwrap();
        if keep == len {
            // The whole frame reached the disk: it is a claim like any other.
            let mut want = prefix.clone();
            want.apply(&second.record).unwrap();
            assert_eq!(booted.catalog, want);
            assert!(booted.report.is_clean(), "{:?}", booted.report);
            continue;
        }
        assert_eq!(
            booted.catalog, prefix,
            "keep {keep}: the trusted prefix is served"
        );
        let trusted = torn.len() - keep;
        let evidence = quarantine(&fs);
        if keep > 0 {
            let tail = booted
                .report
                .findings
                .iter()
                .find(|f| f.kind == FindingKind::TornManifestTail)
                .expect("a torn tail is reported");
            assert_eq!(tail.offset, Some(trusted as u64));
            assert_eq!(tail.bytes, Some(keep as u64));
            let Action::Quarantine { to } = &tail.action else {
                panic!("{tail:?}")
            };
            assert_eq!(evidence[to], torn[trusted..], "the tail is kept byte-exact");
        }
        // The crashed barrier's segment was complete and named, but never claimed.
        assert_eq!(evidence[&format!("seg-{}", second.file)], second.bytes);
        assert!(list(&fs, "seg").iter().all(|name| *name != second.file));
        assert_eq!(fs.live_bytes("manifest-000001").unwrap(), torn[..trusted]);

        // The next barrier appends cleanly after the prefix and survives a crash.
        let third = barrier(&booted, 3, 4);
        assert!(third.name > second.name, "names are never reused");
        seal(&fs, &mut booted, &third).unwrap();
        drop(booted);
        let again = boot(&fs.crash(), false).unwrap();
        let mut want = prefix.clone();
        want.apply(&third.record).unwrap();
        assert_eq!(again.catalog, want, "keep {keep}");
    }
}

#[test]
fn an_orphan_temp_is_quarantined_never_claimed() {
    let (crashed, prefix, second) = crashed_barrier(OP_RENAME);
    // The journal committed the temp's creation before the power went.
    let fs = crashed.crash_keeping_dir_ops(1);
    assert!(fs.live_bytes(&format!("tmp/{}", second.file)).is_some());
    let booted = boot(&fs, false).unwrap();
    assert_eq!(booted.catalog, prefix);
    let finding = &booted.report.findings[0];
    assert_eq!(
        (finding.kind, booted.report.findings.len()),
        (FindingKind::OrphanTemp, 1)
    );
    assert_eq!(
        quarantine(&fs)[&format!("tmp-{}", second.file)],
        second.bytes
    );
    assert!(list(&fs, "tmp").is_empty());
    assert!(booted.next_name > second.name);
}

#[test]
fn an_unrecorded_final_named_file_is_quarantined_never_claimed() {
    let (crashed, prefix, second) = crashed_barrier(OP_APPEND_WRITE);
    let fs = crashed.crash();
    assert_eq!(
        fs.live_bytes(&format!("seg/{}", second.file)),
        Some(second.bytes.clone())
    );
    let booted = boot(&fs, false).unwrap();
    assert_eq!(booted.catalog, prefix);
    let kinds: Vec<_> = booted.report.findings.iter().map(|f| f.kind).collect();
    assert_eq!(kinds, [FindingKind::UnrecordedSegment]);
    assert_eq!(
        quarantine(&fs)[&format!("seg-{}", second.file)],
        second.bytes
    );
    assert!(booted.next_name > second.name);
}

/// The store states boot has to heal, each made by one crash of the real write path.
fn damaged_stores() -> Vec<(&'static str, SimFs)> {
    vec![
        (
            "torn tail",
            crashed_barrier(OP_APPEND_SYNC).0.crash_tearing(20),
        ),
        (
            "orphan temp",
            crashed_barrier(OP_RENAME).0.crash_keeping_dir_ops(1),
        ),
        (
            "unrecorded segment",
            crashed_barrier(OP_APPEND_WRITE).0.crash(),
        ),
        (
            "partial temp",
            crashed_barrier(2).0.crash_keeping_dir_ops(1),
        ),
    ]
}

/// Copies a simulated store's durable image (it is fully synced after a crash).
fn copy(fs: &SimFs) -> SimFs {
    fs.crash()
}

#[test]
fn boot_crashed_at_every_operation_of_its_healing_heals_to_the_same_state_next_time() {
    for (what, damaged) in damaged_stores() {
        let reference_fs = copy(&damaged);
        let before = reference_fs.ops();
        let reference = boot(&reference_fs, false).unwrap();
        let heal_ops = reference_fs.ops() - before;
        assert!(heal_ops > 0, "{what}: boot had something to heal");
        let want_files = files(&reference_fs);
        let want_evidence: BTreeSet<Vec<u8>> = quarantine(&reference_fs).into_values().collect();
        for crash_op in 0..heal_ops {
            for keep_dir_ops in [None, Some(1), Some(usize::MAX)] {
                let fs = copy(&damaged);
                fs.crash_at(fs.ops() + crash_op);
                boot(&fs, false).unwrap_err();
                let fs = match keep_dir_ops {
                    None => fs.crash(),
                    Some(n) => fs.crash_keeping_dir_ops(n),
                };
                let healed = boot(&fs, false).unwrap();
                let context = format!("{what}, crash at heal op {crash_op}, {keep_dir_ops:?}");
                assert_eq!(healed.catalog, reference.catalog, "{context}");
                assert_eq!(
                    healed.report.trusted_len, reference.report.trusted_len,
                    "{context}"
                );
                let got = files(&fs);
                // The served state is the same: manifest, segments, an empty tmp/.
                for (path, bytes) in &want_files {
                    if !path.starts_with("quarantine/") {
                        assert_eq!(got.get(path), Some(bytes), "{context}: {path}");
                    }
                }
                assert!(list(&fs, "tmp").is_empty(), "{context}");
                // The same evidence: all of it is kept; anything extra is a partial copy a
                // crashed copy left behind, itself kept rather than deleted.
                let evidence: BTreeSet<Vec<u8>> = quarantine(&fs).into_values().collect();
                assert!(
                    want_evidence.is_subset(&evidence),
                    "{context}: evidence lost"
                );
                for extra in evidence.difference(&want_evidence) {
                    assert!(
                        want_evidence.iter().any(|e| e.starts_with(extra)),
                        "{context}: unexplained evidence {} bytes",
                        extra.len()
                    );
                }
                // And a second boot finds nothing more to do.
                drop(healed);
                let settled = boot(&fs, false).unwrap();
                assert!(
                    settled
                        .report
                        .findings
                        .iter()
                        .all(|f| f.kind != FindingKind::TornManifestTail
                            && f.kind != FindingKind::OrphanTemp
                            && f.kind != FindingKind::UnrecordedSegment),
                    "{context}: {:?}",
                    settled.report.findings
                );
            }
        }
    }
}

#[test]
fn the_first_name_issued_after_boot_is_above_every_quarantined_name() {
    for (what, damaged) in damaged_stores() {
        let booted = boot(&damaged, false).unwrap();
        let evidence = quarantine(&damaged);
        assert!(!evidence.is_empty(), "{what}");
        for name in evidence.keys() {
            if let Some(number) = quarantined_number(name) {
                assert!(booted.next_name > number.number, "{what}: {name}");
            }
        }
        // Also above every record, live or retired.
        assert!(booted.next_name > booted.catalog.name_high(), "{what}");
    }
}

#[test]
fn a_clean_store_boots_clean_and_changes_nothing() {
    let (fs, mut booted) = new_store();
    for seq in 1..4 {
        let b = barrier(&booted, seq, 7);
        seal(&fs, &mut booted, &b).unwrap();
    }
    drop(booted);
    let fs = fs.crash();
    let before = files(&fs);
    let ops = fs.ops();
    let booted = boot(&fs, false).unwrap();
    assert!(booted.report.is_clean(), "{:?}", booted.report.findings);
    assert_eq!(fs.ops(), ops, "boot of a clean store writes nothing");
    assert_eq!(files(&fs), before);
    assert_eq!(booted.report.n_frames, 4);
    let parsed = parse_log(&read_manifest(&fs, 1).unwrap());
    assert_eq!(parsed.records.len(), 4);
}

#[test]
fn a_second_opener_is_refused_while_the_first_holds_the_store() {
    let (fs, booted) = new_store();
    let error = boot(&fs, false).unwrap_err();
    assert!(
        matches!(error, strata_recover::RecoverError::Locked),
        "{error}"
    );
    drop(booted);
    boot(&fs, false).unwrap();
}

#[test]
fn a_recorded_file_with_a_flipped_byte_does_not_stop_boot() {
    let (fs, mut booted) = new_store();
    let b = barrier(&booted, 1, 9);
    seal(&fs, &mut booted, &b).unwrap();
    drop(booted);
    // Flip a byte inside the first block: the file keeps its length, boot reads no rows.
    let path = format!("seg/{}", b.file);
    let mut bytes = fs.live_bytes(&path).unwrap();
    bytes[40] ^= 0x55;
    let damaged = SimFs::new();
    for (p, content) in files(&fs) {
        let content = if p == path { bytes.clone() } else { content };
        write_file(&damaged, &p, &content);
    }
    let booted = boot(&damaged, false).unwrap();
    assert!(
        booted.report.is_clean(),
        "length-only checks at boot: {:?}",
        booted.report
    );
    let mapped = strata_segment::vfs::Vfs::map(&damaged, &path).unwrap();
    let reader = SegmentReader::open(&path, mapped).unwrap();
    assert!(
        reader.positions(0).unwrap_err().is_checksum(),
        "but reads refuse it"
    );
}

fn write_file(fs: &SimFs, path: &str, bytes: &[u8]) {
    use strata_segment::vfs::Vfs;
    let mut dirs = String::new();
    for part in path.split('/').collect::<Vec<_>>().split_last().unwrap().1 {
        if !dirs.is_empty() {
            dirs.push('/');
        }
        dirs.push_str(part);
        fs.create_dir(&dirs).unwrap();
    }
    for dir in ["seg", "tmp", "quarantine"] {
        fs.create_dir(dir).unwrap();
    }
    let mut file = fs.create(path).unwrap();
    file.write_all(bytes).unwrap();
    file.sync_data().unwrap();
}

#[test]
fn an_empty_folder_becomes_a_store_and_a_foreign_one_is_refused() {
    use strata_segment::vfs::Vfs;
    let fs = SimFs::new();
    let booted = boot(&fs, true).unwrap();
    assert!(booted.created);
    drop(booted);
    let again = boot(&fs.crash(), false).unwrap();
    assert!(!again.created);

    let foreign = SimFs::new();
    let mut file = foreign.create("notes.txt").unwrap();
    file.write_all(b"mine").unwrap();
    let error = boot(&foreign, true).unwrap_err();
    assert!(
        matches!(error, strata_recover::RecoverError::NotAStore { .. }),
        "{error}"
    );
    assert_eq!(
        foreign.live_bytes("notes.txt"),
        Some(b"mine".to_vec()),
        "nothing touched"
    );
}

#[test]
fn store_creation_crashed_at_every_operation_can_be_created_again() {
    let probe = SimFs::new();
    drop(boot(&probe, true).unwrap());
    let n_ops = probe.ops();
    for crash_op in 0..n_ops {
        for keep in [None, Some(usize::MAX)] {
            let fs = SimFs::new();
            fs.crash_at(crash_op);
            boot(&fs, true).unwrap_err();
            let fs = match keep {
                None => fs.crash(),
                Some(n) => fs.crash_keeping_dir_ops(n),
            };
            let booted = boot(&fs, true).unwrap_or_else(|e| panic!("op {crash_op}: {e}"));
            assert_eq!(booted.catalog, Catalog::new());
        }
    }
}
