//! The repair of damaged manifest history, crashed at every operation in the simulation: every
//! crash leaves either the damaged store (refused again, and a second repair finishes) or the
//! repaired one — never a store that opens without its fence.

use strata_recover::{RecoverError, boot, repair};
use strata_segment::vfs::{SimFs, Vfs};

use crate::support::{STREAM, barrier, new_store, quarantine, seal};

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
