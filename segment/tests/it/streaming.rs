//! The streaming segment writer: the file it streams through a temp in chunks is byte for byte
//! the segment the in-memory writer makes, and the two-phase protocol around it holds when the
//! write is crashed, torn or failed at any chunk.

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use strata_segment::vfs::{Fault, RenameMode, SimFs, Vfs};
use strata_segment::{
    FileSink, SegmentError, SegmentReader, SegmentSummary, SegmentWriter, TempFile,
};

use crate::generate::{Part, parts};
use crate::roundtrip::{assert_reads_back, write};

const MODES: [RenameMode; 2] = [RenameMode::Noreplace, RenameMode::LinkUnlink];
const NAME: &str = "000000000007.seg";
const FINAL: &str = "seg/000000000007.seg";
const TEMP: &str = "tmp/000000000007.seg";

fn fresh_store(mode: RenameMode) -> SimFs {
    let fs = SimFs::with_rename_mode(mode);
    for dir in ["seg", "tmp"] {
        fs.create_dir(dir).unwrap();
    }
    fs.sync_dir("").unwrap();
    fs
}

/// Streams `parts` two-phase into `seg/NAME`, gathering `chunk` bytes a write and writing pieces
/// of `direct` bytes or more as they are.
fn stream(
    fs: &SimFs,
    parts: &[Part],
    chunk: usize,
    direct: usize,
) -> Result<SegmentSummary, SegmentError> {
    let mut temp = TempFile::create(fs, "seg", NAME)?;
    let streamed = SegmentWriter::to_sink(FileSink::with_chunks(temp.file(), chunk, direct))
        .and_then(|mut writer| {
            for part in parts {
                writer.write_partition(&part.input())?;
            }
            writer.finish_streamed()
        });
    match streamed {
        Ok((summary, _)) => {
            let path = temp.sync()?.publish()?;
            assert_eq!(path, FINAL);
            Ok(summary)
        }
        Err(source) => {
            let path = temp.tmp_path().to_owned();
            Err(temp.abandon(SegmentError::Io { path, source }))
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn a_streamed_segment_is_the_segment_written_in_memory(
        parts in parts(),
        chunk in 1usize..300,
        direct in 1usize..300,
    ) {
        let in_memory = write(&parts);
        let fs = fresh_store(RenameMode::Noreplace);
        let before = fs.ops();
        let summary = stream(&fs, &parts, chunk, direct).unwrap();
        let bytes = fs.live_bytes(FINAL).unwrap();
        prop_assert_eq!(&bytes, &in_memory.bytes);
        prop_assert_eq!(summary.len, bytes.len() as u64);
        prop_assert_eq!(summary.digest, in_memory.digest);
        prop_assert_eq!(&summary.partitions, &in_memory.partitions);
        // The digest is the crc of the file up to the footer's digest field, as read back.
        prop_assert_eq!(summary.digest, crc32c::crc32c(&bytes[..bytes.len() - 8]));
        // Cut into writes no longer than a chunk (or than a direct piece's chunk).
        let writes = fs.ops() - before - 5;
        let longest = chunk.max(direct) as u64;
        prop_assert!(writes >= (bytes.len() as u64).div_ceil(longest), "{} writes", writes);
        let reader = SegmentReader::open(FINAL, bytes).unwrap();
        assert_reads_back(&reader, &parts);
        reader.verify_all().unwrap();
    }
}

/// A segment of a few kilobytes, streamed in chunks of 200 bytes.
fn sample() -> (Vec<Part>, Vec<u8>) {
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    loop {
        let parts = parts().new_tree(&mut runner).unwrap().current();
        let bytes = write(&parts).bytes;
        if bytes.len() > 2000 {
            return (parts, bytes);
        }
    }
}

const CHUNK: usize = 200;
const DIRECT: usize = 300;

#[test]
fn crashed_at_every_chunk_the_final_name_is_all_or_nothing_and_a_torn_temp_never_reads() {
    let (parts, whole) = sample();
    for mode in MODES {
        let probe = fresh_store(mode);
        let before = probe.ops();
        stream(&probe, &parts, CHUNK, DIRECT).unwrap();
        let n_ops = probe.ops() - before;
        assert!(
            n_ops > 10,
            "{n_ops} operations: the file went out in chunks"
        );
        for crash_op in 0..n_ops {
            for image in 0..SimFs::CRASH_IMAGES {
                let fs = fresh_store(mode);
                fs.crash_at(fs.ops() + crash_op);
                let error = stream(&fs, &parts, CHUNK, DIRECT).unwrap_err();
                let SegmentError::Io { source, .. } = &error else {
                    panic!("{error}");
                };
                assert!(SimFs::is_crash(source), "op {crash_op}: {error}");
                let survived = fs.crash_image(image);
                let context = format!("{mode:?} op {crash_op} image {image}");
                if let Some(bytes) = survived.live_bytes(FINAL) {
                    assert_eq!(bytes, whole, "{context}: a torn final file");
                }
                if let Some(bytes) = survived.live_bytes(TEMP) {
                    // What a crash leaves of the temp is a prefix of the file; anything short
                    // of all of it is no segment (boot quarantines it in any case).
                    assert!(whole.starts_with(&bytes), "{context}");
                    if bytes.len() < whole.len() {
                        assert!(SegmentReader::open(TEMP, bytes).is_err(), "{context}");
                    }
                }
            }
        }
    }
}

#[test]
fn a_failure_at_any_chunk_surfaces_and_removes_every_name_the_file_was_given() {
    let (parts, _) = sample();
    for mode in MODES {
        let probe = fresh_store(mode);
        let before = probe.ops();
        stream(&probe, &parts, CHUNK, DIRECT).unwrap();
        let n_ops = probe.ops() - before;
        for fail_op in 0..n_ops {
            for fault in [Fault::Eio, Fault::Enospc] {
                let fs = fresh_store(mode);
                fs.fail_at_after_writing(fs.ops() + fail_op, fault, 7);
                let error = stream(&fs, &parts, CHUNK, DIRECT).unwrap_err();
                let SegmentError::Io { source, .. } = &error else {
                    panic!("{error}");
                };
                assert_eq!(source.raw_os_error(), Some(fault.raw_os_error()));
                let left: Vec<String> = fs
                    .paths()
                    .into_iter()
                    .filter(|p| p.starts_with("seg/") || p.starts_with("tmp/"))
                    .collect();
                assert!(
                    left.is_empty(),
                    "{mode:?} op {fail_op}: {left:?} left behind"
                );
            }
        }
    }
}
