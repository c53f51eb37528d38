//! The two-phase write, crashed at every operation it performs, over the simulated file system:
//! every test runs once with `RENAME_NOREPLACE` and once on a file system without it, where a
//! no-replace rename is a link then an unlink.

use strata_segment::vfs::{Fault, RenameMode, SimFs, Vfs};
use strata_segment::write_two_phase;

/// Both ways a file system can rename without replacing.
const MODES: [RenameMode; 2] = [RenameMode::Noreplace, RenameMode::LinkUnlink];

const NAME: &str = "000000000005.seg";
const FINAL: &str = "seg/000000000005.seg";
const TEMP: &str = "tmp/000000000005.seg";

fn fresh_store(mode: RenameMode) -> SimFs {
    let fs = SimFs::with_rename_mode(mode);
    assert_eq!(fs.rename_mode(), mode);
    for dir in ["seg", "tmp"] {
        fs.create_dir(dir).unwrap();
    }
    fs.sync_dir("").unwrap();
    fs
}

fn payload() -> Vec<u8> {
    (0..3000u32).map(|i| (i * 7 % 251) as u8).collect()
}

/// How many operations an uncrashed two-phase write takes, counted by the file system.
fn ops_of_clean_write(mode: RenameMode) -> (u64, u64) {
    let fs = fresh_store(mode);
    let before = fs.ops();
    write_two_phase(&fs, "seg", NAME, &payload()).unwrap();
    (before, fs.ops())
}

#[test]
fn a_clean_write_is_durable_under_its_final_name_only() {
    for mode in MODES {
        let fs = fresh_store(mode);
        assert_eq!(
            write_two_phase(&fs, "seg", NAME, &payload()).unwrap(),
            FINAL
        );
        let after = fs.crash();
        assert_eq!(after.live_bytes(FINAL), Some(payload()));
        assert_eq!(
            after.live_bytes(TEMP),
            None,
            "the temp name's removal is durable too"
        );
    }
}

#[test]
fn crashed_at_every_operation_the_final_name_holds_nothing_or_everything() {
    for mode in MODES {
        let (before, after) = ops_of_clean_write(mode);
        assert!(
            after - before >= 6,
            "create, write, sync, rename, two directory syncs"
        );
        for crash_op in before..after {
            for keep in [
                None,
                Some(0),
                Some(1),
                Some(1500),
                Some(2999),
                Some(usize::MAX),
            ] {
                let fs = fresh_store(mode);
                fs.crash_at(crash_op);
                let error = write_two_phase(&fs, "seg", NAME, &payload()).unwrap_err();
                let strata_segment::SegmentError::Io { source, .. } = &error else {
                    panic!("{error}");
                };
                assert!(SimFs::is_crash(source), "op {crash_op}: {error}");
                let survived = match keep {
                    None => fs.crash(),
                    Some(keep) => fs.crash_tearing(keep),
                };
                match survived.live_bytes(FINAL) {
                    None => {}
                    Some(bytes) => assert_eq!(bytes, payload(), "op {crash_op}: a torn final file"),
                }
                // Whatever the durable image held under the temp name is still there: the crash
                // itself cleans nothing up.
                assert_eq!(
                    survived.live_bytes(TEMP),
                    fs.durable_bytes(TEMP),
                    "op {crash_op}"
                );
            }
        }
    }
}

#[test]
fn a_rename_not_followed_by_a_directory_sync_is_lost() {
    for mode in MODES {
        let (before, _) = ops_of_clean_write(mode);
        // Crash at the directory sync after the rename.
        // create, write, sync_data, then the rename: one operation, or a link and an unlink.
        let rename_ops = if mode == RenameMode::LinkUnlink { 2 } else { 1 };
        let fs = fresh_store(mode);
        fs.crash_at(before + 3 + rename_ops);
        write_two_phase(&fs, "seg", NAME, &payload()).unwrap_err();
        assert_eq!(
            fs.live_bytes(FINAL),
            Some(payload()),
            "the rename happened in the live image"
        );
        let survived = fs.crash();
        assert_eq!(survived.live_bytes(FINAL), None, "but not durably");
    }
}

#[test]
fn injected_io_errors_surface_remove_the_unclaimed_names_and_nothing_retries() {
    for mode in MODES {
        let (before, after) = ops_of_clean_write(mode);
        for fail_op in before..after {
            for fault in [Fault::Eio, Fault::Enospc] {
                let fs = fresh_store(mode);
                // A short write first, where the failing operation is the write.
                fs.fail_at_after_writing(fail_op, fault, 7);
                let error = write_two_phase(&fs, "seg", NAME, &payload()).unwrap_err();
                let strata_segment::SegmentError::Io { source, .. } = &error else {
                    panic!("{error}");
                };
                assert_eq!(
                    source.raw_os_error(),
                    Some(fault.raw_os_error()),
                    "{mode:?} op {fail_op}"
                );
                // Nothing claimed the file and the process saw why it failed: the names it gave
                // the file are gone, so nothing is left for boot to quarantine. A failed create
                // gave it no name.
                let left: Vec<String> = fs
                    .paths()
                    .into_iter()
                    .filter(|p| p.starts_with("seg/") || p.starts_with("tmp/"))
                    .collect();
                assert!(
                    left.is_empty(),
                    "{mode:?} op {fail_op}: {left:?} left behind"
                );
                // The write stopped at the failure: after it, only removals, never a sync.
                // A failed unlink of a link-then-unlink also undoes its link.
                let undo = u64::from(mode == RenameMode::LinkUnlink && fail_op == before + 4);
                let removals = u64::from(fail_op > before) + undo;
                assert_eq!(
                    fs.ops(),
                    fail_op + 1 + removals,
                    "{mode:?} op {fail_op}: something ran after the failure"
                );
            }
        }
    }
}

#[test]
fn a_crash_between_link_and_unlink_leaves_two_names_of_one_complete_file() {
    let mode = RenameMode::LinkUnlink;
    let (before, _) = ops_of_clean_write(mode);
    // create, write, sync_data, link: the crash takes the unlink.
    let fs = fresh_store(mode);
    fs.crash_at(before + 4);
    write_two_phase(&fs, "seg", NAME, &payload()).unwrap_err();
    assert_eq!(fs.live_bytes(TEMP), Some(payload()));
    assert_eq!(fs.live_bytes(FINAL), Some(payload()));
    // What a journal may have committed of the link: both names, one complete file — the state
    // boot heals by removing the temp as a second name.
    let survived = fs.crash_keeping_dir_ops(usize::MAX);
    assert_eq!(survived.live_bytes(TEMP), Some(payload()));
    assert_eq!(survived.live_bytes(FINAL), Some(payload()));
}

#[test]
fn a_crash_keeping_metadata_leaves_an_orphan_temp_that_never_claimed_its_name() {
    for mode in MODES {
        // Crash before the rename, with the file system having committed the temp's creation on
        // its own (as a journal may): the temp is there, complete, and the final name is not.
        let (before, _) = ops_of_clean_write(mode);
        let fs = fresh_store(mode);
        fs.crash_at(before + 3); // create, write, sync_data done; the rename never happens
        write_two_phase(&fs, "seg", NAME, &payload()).unwrap_err();
        assert_eq!(fs.recent_dir_ops(), 1);
        let strict = fs.crash();
        assert_eq!(
            strict.live_bytes(TEMP),
            None,
            "without the journal the temp's name is lost"
        );
        let survived = fs.crash_keeping_dir_ops(1);
        assert_eq!(survived.live_bytes(TEMP), Some(payload()));
        assert_eq!(survived.live_bytes(FINAL), None);
        // The crash image is a file system of its own: nothing of it changed the crashed one.
        assert_eq!(fs.durable_bytes(TEMP), None);
    }
}

#[test]
fn crashed_at_every_operation_keeping_any_prefix_of_metadata_the_final_name_is_all_or_nothing() {
    for mode in MODES {
        let (before, after) = ops_of_clean_write(mode);
        for crash_op in before..after {
            for keep in 0..4 {
                let fs = fresh_store(mode);
                fs.crash_at(crash_op);
                write_two_phase(&fs, "seg", NAME, &payload()).unwrap_err();
                let survived = fs.crash_keeping_dir_ops(keep);
                if let Some(bytes) = survived.live_bytes(FINAL) {
                    assert_eq!(bytes, payload(), "op {crash_op} keep {keep}");
                }
                if let Some(bytes) = survived.live_bytes(TEMP) {
                    // A temp whose data was never synced can be short, but it is only ever evidence.
                    assert!(payload().starts_with(&bytes), "op {crash_op} keep {keep}");
                    // Beside the final name it is always a second name of the same bytes.
                    if survived.live_bytes(FINAL).is_some() {
                        assert_eq!(bytes, payload(), "{mode:?} op {crash_op} keep {keep}");
                    }
                }
            }
        }
    }
}
