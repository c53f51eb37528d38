//! Boot over stores left by crashing the real write path: it serves the trusted prefix, keeps
//! every intermediate as evidence, heals before it claims, and converges when itself crashed.
//! The crash tests run on both kinds of file system: with `RENAME_NOREPLACE`, and without it,
//! where a no-replace rename is a link then an unlink and a crash can leave both names.

use std::collections::BTreeSet;

use strata_index::{Catalog, parse_log};
use strata_recover::{Action, FindingKind, boot, quarantined_number};
use strata_segment::vfs::{RenameMode, SimFs, Vfs as _};
use strata_segment::{SegmentReader, read_manifest};

use crate::support::{Barrier, barrier, decl, files, list, new_store, quarantine, seal};

/// Both ways a file system can rename without replacing.
const MODES: [RenameMode; 2] = [RenameMode::Noreplace, RenameMode::LinkUnlink];

/// Operation offsets inside one seal: the segment's two-phase write (create, write, sync, the
/// rename — a link and an unlink without `RENAME_NOREPLACE` — two directory syncs), then the
/// manifest append (write, sync).
struct SealOps {
    rename: u64,
    append_write: u64,
    append_sync: u64,
}

fn seal_ops(mode: RenameMode) -> SealOps {
    let extra = u64::from(mode == RenameMode::LinkUnlink);
    SealOps {
        rename: 3,
        append_write: 6 + extra,
        append_sync: 7 + extra,
    }
}

/// A new store holding the `capture` stream's declaration, on a file system renaming in `mode`.
fn new_store_in(mode: RenameMode) -> (SimFs, strata_recover::Booted) {
    let fs = SimFs::with_rename_mode(mode);
    let mut booted = boot(&fs, true).unwrap();
    let record = strata_index::Record {
        entries: vec![strata_index::Entry::Declare(decl())],
    };
    booted.catalog.apply(&record).unwrap();
    booted.manifest.append(&record).unwrap();
    (fs, booted)
}

/// A store with one good barrier, and the next barrier crashed at `op` (relative to its start).
/// Answers the crashed process's file system, the catalog after the good barrier, and the
/// crashed barrier.
fn crashed_barrier(mode: RenameMode, op: u64) -> (SimFs, Catalog, Barrier) {
    let (fs, mut booted) = new_store_in(mode);
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
    for mode in MODES {
        let (_, _, probe) = crashed_barrier(mode, seal_ops(mode).append_sync);
        let len = frame_len(&probe.record);
        for keep in 0..=len {
            let (crashed, prefix, second) = crashed_barrier(mode, seal_ops(mode).append_sync);
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
}

#[test]
fn an_orphan_temp_is_quarantined_never_claimed() {
    for mode in MODES {
        let (crashed, prefix, second) = crashed_barrier(mode, seal_ops(mode).rename);
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
}

#[test]
fn an_unrecorded_final_named_file_is_quarantined_never_claimed() {
    for mode in MODES {
        let (crashed, prefix, second) = crashed_barrier(mode, seal_ops(mode).append_write);
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
}

/// The store states boot has to heal, each made by one crash of the real write path.
fn damaged_stores(mode: RenameMode) -> Vec<(&'static str, SimFs)> {
    let mut stores = vec![
        (
            "torn tail",
            crashed_barrier(mode, seal_ops(mode).append_sync)
                .0
                .crash_tearing(20),
        ),
        (
            "orphan temp",
            crashed_barrier(mode, seal_ops(mode).rename)
                .0
                .crash_keeping_dir_ops(1),
        ),
        (
            "unrecorded segment",
            crashed_barrier(mode, seal_ops(mode).append_write).0.crash(),
        ),
        (
            "partial temp",
            crashed_barrier(mode, 2).0.crash_keeping_dir_ops(1),
        ),
    ];
    if mode == RenameMode::LinkUnlink {
        // The segment linked under its final name, the crash before the temp's unlink.
        let (crashed, _, _) = crashed_barrier(mode, seal_ops(mode).rename + 1);
        stores.push(("two names", crashed.crash_keeping_dir_ops(usize::MAX)));
    }
    stores
}

/// Copies a simulated store's durable image (it is fully synced after a crash).
fn copy(fs: &SimFs) -> SimFs {
    fs.crash()
}

#[test]
fn boot_crashed_at_every_operation_of_its_healing_heals_to_the_same_state_next_time() {
    for mode in MODES {
        for (what, damaged) in damaged_stores(mode) {
            let reference_fs = copy(&damaged);
            let before = reference_fs.ops();
            let reference = boot(&reference_fs, false).unwrap();
            let heal_ops = reference_fs.ops() - before;
            assert!(heal_ops > 0, "{what}: boot had something to heal");
            let want_files = files(&reference_fs);
            let want_evidence: BTreeSet<Vec<u8>> =
                quarantine(&reference_fs).into_values().collect();
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
                    let context =
                        format!("{mode:?} {what}, crash at heal op {crash_op}, {keep_dir_ops:?}");
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
}

#[test]
fn the_first_name_issued_after_boot_is_above_every_quarantined_name() {
    for mode in MODES {
        for (what, damaged) in damaged_stores(mode) {
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
    for mode in MODES {
        let probe = SimFs::with_rename_mode(mode);
        drop(boot(&probe, true).unwrap());
        let n_ops = probe.ops();
        for crash_op in 0..n_ops {
            for keep in [None, Some(usize::MAX)] {
                let fs = SimFs::with_rename_mode(mode);
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
}

#[test]
fn a_temp_linked_under_its_final_name_is_a_second_name_not_evidence() {
    let mode = RenameMode::LinkUnlink;
    // The crash takes the unlink: the segment is complete under both names, never claimed.
    let (crashed, prefix, second) = crashed_barrier(mode, seal_ops(mode).rename + 1);
    let fs = crashed.crash_keeping_dir_ops(usize::MAX);
    let temp = format!("tmp/{}", second.file);
    assert_eq!(fs.live_bytes(&temp), Some(second.bytes.clone()));
    assert_eq!(
        fs.live_bytes(&format!("seg/{}", second.file)),
        Some(second.bytes.clone())
    );
    let booted = boot(&fs, false).unwrap();
    assert_eq!(booted.catalog, prefix);
    assert!(list(&fs, "tmp").is_empty(), "the second name is gone");
    // The bytes are kept once, as the unrecorded segment they are; the report (and so fsck,
    // which prints the same plan) says the temp is dropped as a second name.
    let kinds: Vec<_> = booted.report.findings.iter().map(|f| f.kind).collect();
    assert_eq!(
        kinds,
        [FindingKind::OrphanTemp, FindingKind::UnrecordedSegment]
    );
    assert_eq!(
        booted.report.findings[0].action,
        strata_recover::Action::DropSecondName {
            of: format!("seg/{}", second.file)
        }
    );
    let evidence = quarantine(&fs);
    assert_eq!(
        evidence.keys().collect::<Vec<_>>(),
        [&format!("seg-{}", second.file)]
    );
    // The removal is durable.
    assert!(fs.crash().live_bytes(&temp).is_none());
}

#[test]
fn every_crash_of_a_barrier_keeps_its_bytes_once_never_a_spurious_second_copy() {
    for mode in MODES {
        let n_ops = seal_ops(mode).append_sync + 1;
        for crash_op in 0..n_ops {
            for keep in [None, Some(1), Some(2), Some(usize::MAX)] {
                let (crashed, prefix, second) = crashed_barrier(mode, crash_op);
                let fs = match keep {
                    None => crashed.crash(),
                    Some(n) => crashed.crash_keeping_dir_ops(n),
                };
                let context = format!("{mode:?} crash at op {crash_op}, keep {keep:?}");
                let booted = boot(&fs, false).unwrap();
                let mut claimed = prefix.clone();
                claimed.apply(&second.record).unwrap();
                assert!(
                    booted.catalog == prefix || booted.catalog == claimed,
                    "{context}"
                );
                assert!(list(&fs, "tmp").is_empty(), "{context}");
                // The complete segment is kept exactly once: claimed under seg/, or as evidence.
                let copies = files(&fs)
                    .into_iter()
                    .filter(|(_, bytes)| *bytes == second.bytes)
                    .map(|(path, _)| path)
                    .collect::<Vec<_>>();
                assert!(copies.len() <= 1, "{context}: {copies:?}");
            }
        }
    }
}

#[test]
fn the_rename_mode_is_what_the_file_system_does() {
    assert_eq!(SimFs::new().rename_mode(), RenameMode::Noreplace);
    let fs = SimFs::without_noreplace();
    assert_eq!(fs.rename_mode(), RenameMode::LinkUnlink);
    // A property of the file system, not of the process: it survives a crash.
    assert_eq!(fs.crash().rename_mode(), RenameMode::LinkUnlink);
}

#[test]
fn fsck_reports_the_rename_mode_in_its_header_and_json() {
    for mode in MODES {
        let (fs, booted) = new_store_in(mode);
        drop(booted);
        let report = strata_recover::fsck::check(&fs, false);
        assert_eq!(report.rename, mode.name());
        let human = strata_recover::fsck::render(&report);
        let line = format!("rename: {}", mode.name());
        assert!(human.lines().any(|l| l == line), "{human}");
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["rename"], mode.name());
    }
}
