//! Manifest frames through the file: appended, synced, read back, cut to a trusted prefix.

use proptest::prelude::*;
use strata_index::{Entry, Record, parse_log};
use strata_segment::vfs::{Fault, SimFs};
use strata_segment::{
    ManifestWriter, create_store, manifest_generations, read_manifest, rewrite_manifest,
    truncate_manifest,
};

fn record(seed: u64, n: usize) -> Record {
    Record {
        entries: (0..n as u64)
            .map(|i| Entry::Watermark {
                stream: format!("s{}", (seed + i) % 3),
                position: seed + i,
            })
            .chain(std::iter::once(Entry::NameHigh(seed)))
            .collect(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn appended_frames_read_back_and_survive_a_crash(sizes in prop::collection::vec(0usize..20, 1..10)) {
        let fs = SimFs::new();
        let mut writer = create_store(&fs, &[]).unwrap();
        let records: Vec<Record> = sizes.iter().enumerate().map(|(i, &n)| record(i as u64, n)).collect();
        for r in &records {
            writer.append(r).unwrap();
        }
        let after = fs.crash();
        prop_assert_eq!(manifest_generations(&after).unwrap(), vec![1]);
        let bytes = read_manifest(&after, 1).unwrap();
        let parsed = parse_log(&bytes);
        prop_assert_eq!(parsed.fault, None);
        prop_assert_eq!(parsed.trusted_len, writer.len());
        prop_assert_eq!(parsed.records, records);
    }
}

#[test]
fn a_torn_append_leaves_the_prefix_which_can_be_cut_and_appended_after() {
    let fs = SimFs::new();
    let mut writer = create_store(&fs, &[]).unwrap();
    writer.append(&record(1, 3)).unwrap();
    let good_len = writer.len();
    let before = fs.ops();
    fs.crash_at(before + 1); // the write happens, its sync does not
    writer.append(&record(2, 5)).unwrap_err();
    let after = fs.crash_tearing(10);
    let bytes = read_manifest(&after, 1).unwrap();
    let parsed = parse_log(&bytes);
    assert_eq!(parsed.records, vec![record(1, 3)]);
    assert_eq!(parsed.trusted_len, good_len);
    assert_eq!(
        bytes.len() as u64,
        good_len + 10,
        "the torn tail is on disk"
    );
    let fault = parsed.fault.expect("the torn frame is a fault");
    assert_eq!(fault.offset, good_len);
    drop(bytes);

    truncate_manifest(&after, 1, good_len).unwrap();
    let mut writer = ManifestWriter::open(&after, 1, good_len).unwrap();
    writer.append(&record(3, 1)).unwrap();
    let again = after.crash();
    let parsed = parse_log(&read_manifest(&again, 1).unwrap());
    assert_eq!(parsed.records, vec![record(1, 3), record(3, 1)]);
    assert_eq!(parsed.fault, None);
}

#[test]
fn a_rewrite_replaces_the_generation_whole() {
    let fs = SimFs::new();
    let mut writer = create_store(&fs, &[record(0, 1)]).unwrap();
    writer.append(&record(1, 2)).unwrap();
    let snapshot = [record(9, 4)];
    let writer = rewrite_manifest(&fs, writer.generation(), &snapshot).unwrap();
    assert_eq!(writer.generation(), 2);
    let after = fs.crash();
    assert_eq!(manifest_generations(&after).unwrap(), vec![2]);
    let parsed = parse_log(&read_manifest(&after, 2).unwrap());
    assert_eq!(parsed.records, snapshot.to_vec());
    // Crashed at every operation of the rewrite, the highest generation present is whole.
    let base = {
        let fs = SimFs::new();
        let w = create_store(&fs, &[record(0, 1)]).unwrap();
        let before = fs.ops();
        rewrite_manifest(&fs, w.generation(), &snapshot).unwrap();
        (before, fs.ops())
    };
    for crash_op in base.0..base.1 {
        let fs = SimFs::new();
        let w = create_store(&fs, &[record(0, 1)]).unwrap();
        fs.crash_at(crash_op);
        rewrite_manifest(&fs, w.generation(), &snapshot).unwrap_err();
        let after = fs.crash();
        let current = *manifest_generations(&after)
            .unwrap()
            .last()
            .expect("a manifest survives");
        let parsed = parse_log(&read_manifest(&after, current).unwrap());
        assert_eq!(parsed.fault, None, "op {crash_op}");
        let want = if current == 1 {
            vec![record(0, 1)]
        } else {
            snapshot.to_vec()
        };
        assert_eq!(parsed.records, want, "op {crash_op}");
    }
}

#[test]
fn a_failed_append_surfaces_its_error_and_is_not_retried() {
    for (step, fault) in [
        (0, Fault::Eio),
        (1, Fault::Eio),
        (0, Fault::Enospc),
        (1, Fault::Enospc),
    ] {
        let fs = SimFs::new();
        let mut writer = create_store(&fs, &[]).unwrap();
        let len = writer.len();
        let op = fs.ops() + step; // step 0: the write; step 1: its sync
        fs.fail_at(op, fault);
        let error = writer.append(&record(4, 2)).unwrap_err();
        let strata_segment::SegmentError::Io { source, .. } = &error else {
            panic!("{error}")
        };
        assert_eq!(source.raw_os_error(), Some(fault.raw_os_error()));
        assert_eq!(fs.ops(), op + 1, "nothing ran after the failed operation");
        assert_eq!(
            writer.len(),
            len,
            "a failed append does not move the claimed end"
        );
    }
}
