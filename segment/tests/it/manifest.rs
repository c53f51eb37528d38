//! Manifest frames through the file: appended, synced, read back, cut to a trusted prefix.

use proptest::prelude::*;
use strata_index::{Entry, ManifestState, Preamble, Record, parse_log, whole_state};
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

/// A store of generation 1 (one frame, then one appended) rewritten once: generation 2 holds
/// `first`.
fn rewritten_once(fs: &SimFs, first: &[Record]) -> ManifestWriter {
    let mut writer = create_store(fs, &[record(0, 1)]).unwrap();
    writer.append(&record(1, 2)).unwrap();
    let replaced = whole_state(1, &read_manifest(fs, 1).unwrap());
    rewrite_manifest(fs, replaced, first).unwrap()
}

/// A rewrite writes the next generation whole, beginning with a preamble that names the
/// generation it replaced (its length and crc32c) and where the part written whole ends; it
/// keeps that generation beside it as the way back, and removes the one before that.
#[test]
fn a_rewrite_writes_the_generation_whole_and_keeps_the_one_it_replaced() {
    let fs = SimFs::new();
    let first = [record(9, 4)];
    let writer = rewritten_once(&fs, &first);
    assert_eq!(writer.generation(), 2);
    let one = read_manifest(&fs, 1).unwrap();
    let after = fs.crash();
    assert_eq!(manifest_generations(&after).unwrap(), vec![1, 2]);
    let two = read_manifest(&after, 2).unwrap();
    let parsed = parse_log(&two);
    assert_eq!(parsed.fault, None);
    assert_eq!(
        parsed.records[0],
        Record {
            entries: vec![Entry::Preamble(Preamble {
                whole_len: two.len() as u64,
                replaces: Some(ManifestState {
                    generation: 1,
                    end: one.len() as u64,
                    crc: crc32c::crc32c(&one),
                }),
            })],
        }
    );
    assert_eq!(parsed.records[1..], first);

    let second = [record(20, 2)];
    let writer = rewrite_manifest(&after, whole_state(2, &two), &second).unwrap();
    assert_eq!(writer.generation(), 3);
    let again = after.crash();
    assert_eq!(manifest_generations(&again).unwrap(), vec![2, 3]);
    assert_eq!(read_manifest(&again, 2).unwrap(), two, "kept as it was");
}

/// The second rewrite, crashed at every operation: the highest generation present is whole, and
/// the generation its preamble names is beside it, holding the bytes the preamble records.
#[test]
fn a_rewrite_crashed_anywhere_leaves_a_whole_generation_and_its_way_back() {
    let first = [record(9, 4)];
    let second = [record(20, 2)];
    let ops = {
        let fs = SimFs::new();
        rewritten_once(&fs, &first);
        let two = read_manifest(&fs, 2).unwrap();
        let before = fs.ops();
        rewrite_manifest(&fs, whole_state(2, &two), &second).unwrap();
        before..fs.ops()
    };
    assert!(ops.end - ops.start > 5, "the rewrite is several operations");
    for crash_op in ops {
        let fs = SimFs::new();
        rewritten_once(&fs, &first);
        let two = read_manifest(&fs, 2).unwrap();
        fs.crash_at(crash_op);
        rewrite_manifest(&fs, whole_state(2, &two), &second).unwrap_err();
        let after = fs.crash();
        let generations = manifest_generations(&after).unwrap();
        let current = *generations.last().expect("a manifest survives");
        let bytes = read_manifest(&after, current).unwrap();
        let parsed = parse_log(&bytes);
        assert_eq!(parsed.fault, None, "op {crash_op}");
        let Some(Entry::Preamble(preamble)) = parsed.records[0].entries.first() else {
            panic!("op {crash_op}: generation {current} begins with no preamble");
        };
        assert_eq!(preamble.whole_len, bytes.len() as u64, "op {crash_op}");
        let replaced = preamble.replaces.expect("a rewrite names what it replaced");
        assert!(generations.contains(&replaced.generation), "op {crash_op}");
        let kept = read_manifest(&after, replaced.generation).unwrap();
        assert_eq!(
            whole_state(replaced.generation, &kept),
            replaced,
            "op {crash_op}: the way back is the generation the snapshot was taken from"
        );
        let want = if current == 2 { &first } else { &second };
        assert_eq!(parsed.records[1..], want[..], "op {crash_op}");
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
