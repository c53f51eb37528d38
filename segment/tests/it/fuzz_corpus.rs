//! Replays every fuzz corpus file through the fuzz targets' own entry points, on stable, so a
//! finding once saved under `fuzz/corpus/<target>/` stays fixed.

use std::path::PathBuf;

use strata_segment::fuzzing;

fn corpus(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/corpus")
        .join(target);
    fuzzing::corpus(&dir)
}

#[test]
fn manifest_corpus_replays() {
    for (path, bytes) in corpus("manifest") {
        eprintln!("{}", path.display());
        fuzzing::manifest(&bytes);
    }
}

#[test]
fn segment_corpus_replays() {
    for (path, bytes) in corpus("segment") {
        eprintln!("{}", path.display());
        fuzzing::segment(&bytes);
    }
}

#[test]
fn packed_corpus_replays() {
    for (path, bytes) in corpus("packed") {
        eprintln!("{}", path.display());
        fuzzing::packed(&bytes);
    }
}

/// Inputs the fuzzer found failing, kept under their cause's name and replayed here (the
/// seed corpus beside them holds only blocks the writer makes).
#[test]
fn packed_regressions_replay() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fuzz/regressions/packed");
    let found = fuzzing::corpus(&dir);
    // chunk-count-overflow: a block claiming 2^59 chunks overflowed the harness's own offset
    // arithmetic (`32 * chunks`), before any decoder saw it.
    assert!(
        found
            .iter()
            .any(|(p, _)| p.ends_with("chunk-count-overflow")),
        "the regression inputs are there"
    );
    for (path, bytes) in found {
        eprintln!("{}", path.display());
        fuzzing::packed(&bytes);
    }
}

#[test]
fn the_packed_seeds_are_the_writers_blocks_and_decode_whole() {
    // Each seed on disk is what the writer writes today (so the fuzzer starts from real
    // blocks), and it gets past the table checks into the decoders.
    let on_disk = corpus("packed");
    for (name, bytes) in fuzzing::packed_seeds() {
        let (_, seed) = on_disk
            .iter()
            .find(|(p, _)| p.ends_with(name))
            .unwrap_or_else(|| panic!("seed {name} is in fuzz/corpus/packed"));
        assert_eq!(*seed, bytes, "{name}");
    }
    assert_eq!(
        on_disk.len(),
        4,
        "every packed seed is one the writer makes"
    );
}

#[test]
fn the_seeds_are_valid_so_the_fuzzers_start_deep() {
    // A seed that is already rejected at its header would only teach the fuzzer the header.
    let segments = corpus("segment");
    let (_, seed) = segments
        .iter()
        .find(|(p, _)| p.ends_with("two-partitions.seg"))
        .unwrap();
    let reader = strata_segment::SegmentReader::open("seed", seed.as_slice()).unwrap();
    reader.verify_all().unwrap();
    assert_eq!(reader.partitions().len(), 2);
    // It is also the fixture of segment format version 1, which this build still reads.
    assert_eq!(seed[8..12], 1u32.to_le_bytes());
    let (_, runs) = segments
        .iter()
        .find(|(p, _)| p.ends_with("run-blocks.seg"))
        .unwrap();
    let reader = strata_segment::SegmentReader::open("runs", runs.as_slice()).unwrap();
    reader.verify_all().unwrap();
    assert_eq!(runs[8..12], 2u32.to_le_bytes());
    let positions = reader.positions(0).unwrap();
    assert_eq!(positions.as_runs().map(<[_]>::len), Some(3));
    assert_eq!(
        positions.iter().collect::<Vec<_>>(),
        [40, 40, 40, 40, 41, 41, 41, 41, 42, 42, 42, 42]
    );
    let ordinals = reader.ordinals(0).unwrap();
    assert_eq!(ordinals.as_runs().map(<[_]>::len), Some(1));
    assert_eq!(
        ordinals.iter().collect::<Vec<_>>(),
        (0..12).map(|i| 7 + 2 * i).collect::<Vec<u64>>()
    );
    // The fixture of format 6: a merged partition with seams, a chained last cell and
    // packed columns, levels stored from level 1.
    let (_, merged) = segments
        .iter()
        .find(|(p, _)| p.ends_with("merged-seams.seg"))
        .unwrap();
    assert_eq!(merged[8..12], 6u32.to_le_bytes());
    let reader = strata_segment::SegmentReader::open("merged", merged.as_slice()).unwrap();
    reader.verify_all().unwrap();
    let seams: Vec<u64> = reader.seams(0).unwrap().iter().map(|s| s.get()).collect();
    assert_eq!(seams, [40, 90]);
    assert_eq!(reader.partitions()[0].chained_from, Some(2));
    assert_eq!(reader.partitions()[0].stored_from, 1);
    assert!(matches!(
        reader.axis(0).unwrap(),
        Some(strata_segment::Axis::Packed(_))
    ));
    let manifests = corpus("manifest");
    let (_, log) = manifests
        .iter()
        .find(|(p, _)| p.ends_with("declare-and-add.log"))
        .unwrap();
    let parsed = strata_index::parse_log(log);
    assert_eq!((parsed.records.len(), parsed.fault), (2, None));
    let mut catalog = strata_index::Catalog::new();
    for record in &parsed.records {
        catalog.apply(record).unwrap();
    }
    assert_eq!(catalog.watermark("capture"), Some(9));
    // It is also the fixture of manifest format 1, which this build still reads.
    assert_eq!(log[8..12], 1u32.to_le_bytes());
    // And the fixture of format 2: a snapshot carrying the lineage of two generations.
    let (_, log) = manifests
        .iter()
        .find(|(p, _)| p.ends_with("lineage-v2.log"))
        .unwrap();
    assert_eq!(log[8..12], 2u32.to_le_bytes());
    let parsed = strata_index::parse_log(log);
    assert_eq!((parsed.records.len(), parsed.fault), (2, None));
    let mut catalog = strata_index::Catalog::new();
    for record in &parsed.records {
        catalog.apply(record).unwrap();
    }
    let runs = catalog.lineage().runs();
    assert_eq!(
        runs.iter().map(|r| r.generation).collect::<Vec<_>>(),
        [1, 2]
    );
    assert_eq!(runs[0].states.len(), 2, "the header's end and one frame");
    assert_eq!(catalog.name_high(), 4);
    // And the fixture of format 3: a rewritten generation whose preamble names the one it was
    // taken from and where its part written whole ends, then a frame appended after it.
    let (_, log) = manifests
        .iter()
        .find(|(p, _)| p.ends_with("preamble-v3.log"))
        .unwrap();
    assert_eq!(log[8..12], 3u32.to_le_bytes());
    let parsed = strata_index::parse_log(log);
    assert_eq!((parsed.records.len(), parsed.fault), (3, None));
    let preamble = strata_index::preamble_of(&parsed.records[0]).unwrap();
    let appended = strata_index::encode_frame(&parsed.records[2]).len() as u64;
    assert_eq!(preamble.whole_len, log.len() as u64 - appended);
    let replaced = preamble.replaces.unwrap();
    assert_eq!((replaced.generation, replaced.end), (1, 38));
    assert_eq!(
        strata_index::written_whole(2, 3, parsed.records.first()),
        strata_index::WrittenWhole::Through(preamble.whole_len)
    );
    let mut catalog = strata_index::Catalog::new();
    for record in &parsed.records {
        catalog.apply(record).unwrap();
    }
    assert_eq!(catalog.lineage().runs().len(), 1);
    assert_eq!(catalog.name_high(), 4);
}

#[test]
fn resealing_a_valid_segment_changes_nothing_and_reopens_a_mutated_one() {
    let segments = corpus("segment");
    let (_, seed) = segments
        .iter()
        .find(|(p, _)| p.ends_with("two-partitions.seg"))
        .unwrap();
    let mut resealed = seed.clone();
    fuzzing::reseal(&mut resealed);
    assert_eq!(
        &resealed, seed,
        "reseal recomputes the checksums a valid file already has"
    );
    // A flipped byte in the first block: refused as a checksum error, then, resealed, it opens
    // and reads (the fuzzer's path past the checksums into the content checks).
    let mut mutated = seed.clone();
    mutated[40] ^= 0x01;
    let reader = strata_segment::SegmentReader::open("m", mutated.as_slice()).unwrap();
    assert!(reader.positions(0).unwrap_err().is_checksum());
    fuzzing::reseal(&mut mutated);
    let reader = strata_segment::SegmentReader::open("m", mutated.as_slice()).unwrap();
    reader.verify_all().unwrap();
    let positions: Vec<u64> = reader.positions(0).unwrap().iter().collect();
    assert_ne!(
        positions,
        [0, 1, 2, 3, 4],
        "the flipped position reads back flipped"
    );
}
