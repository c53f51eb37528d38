//! The two-phase write, crashed at every operation it performs, over the simulated file system.

use strata_segment::vfs::{Fault, SimFs, Vfs};
use strata_segment::write_two_phase;

const NAME: &str = "000000000005.seg";
const FINAL: &str = "seg/000000000005.seg";
const TEMP: &str = "tmp/000000000005.seg";

fn fresh_store() -> SimFs {
    let fs = SimFs::new();
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
fn ops_of_clean_write() -> (u64, u64) {
    let fs = fresh_store();
    let before = fs.ops();
    write_two_phase(&fs, "seg", NAME, &payload()).unwrap();
    (before, fs.ops())
}

#[test]
fn a_clean_write_is_durable_under_its_final_name_only() {
    let fs = fresh_store();
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

#[test]
fn crashed_at_every_operation_the_final_name_holds_nothing_or_everything() {
    let (before, after) = ops_of_clean_write();
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
            let fs = fresh_store();
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

#[test]
fn a_rename_not_followed_by_a_directory_sync_is_lost() {
    let (before, _) = ops_of_clean_write();
    // create, write, sync_data, rename: crash at the directory sync after the rename.
    let fs = fresh_store();
    fs.crash_at(before + 4);
    write_two_phase(&fs, "seg", NAME, &payload()).unwrap_err();
    assert_eq!(
        fs.live_bytes(FINAL),
        Some(payload()),
        "the rename happened in the live image"
    );
    let survived = fs.crash();
    assert_eq!(survived.live_bytes(FINAL), None, "but not durably");
}

#[test]
fn injected_io_errors_surface_and_nothing_retries() {
    let (before, after) = ops_of_clean_write();
    for fail_op in before..after {
        for fault in [Fault::Eio, Fault::Enospc] {
            let fs = fresh_store();
            fs.fail_at(fail_op, fault);
            let error = write_two_phase(&fs, "seg", NAME, &payload()).unwrap_err();
            let strata_segment::SegmentError::Io { source, .. } = &error else {
                panic!("{error}");
            };
            assert_eq!(
                source.raw_os_error(),
                Some(fault.raw_os_error()),
                "op {fail_op}"
            );
            // The write stopped at the failure: no operation after it was attempted.
            assert_eq!(
                fs.ops(),
                fail_op + 1,
                "op {fail_op}: something ran after the failure"
            );
        }
    }
}

#[test]
fn a_crash_keeping_metadata_leaves_an_orphan_temp_that_never_claimed_its_name() {
    // Crash before the rename, with the file system having committed the temp's creation on
    // its own (as a journal may): the temp is there, complete, and the final name is not.
    let (before, _) = ops_of_clean_write();
    let fs = fresh_store();
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

#[test]
fn crashed_at_every_operation_keeping_any_prefix_of_metadata_the_final_name_is_all_or_nothing() {
    let (before, after) = ops_of_clean_write();
    for crash_op in before..after {
        for keep in 0..4 {
            let fs = fresh_store();
            fs.crash_at(crash_op);
            write_two_phase(&fs, "seg", NAME, &payload()).unwrap_err();
            let survived = fs.crash_keeping_dir_ops(keep);
            if let Some(bytes) = survived.live_bytes(FINAL) {
                assert_eq!(bytes, payload(), "op {crash_op} keep {keep}");
            }
            if let Some(bytes) = survived.live_bytes(TEMP) {
                // A temp whose data was never synced can be short, but it is only ever evidence.
                assert!(payload().starts_with(&bytes), "op {crash_op} keep {keep}");
            }
        }
    }
}
