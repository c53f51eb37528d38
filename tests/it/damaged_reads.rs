//! Segments whose checksums pass but whose contents break a promise a read relies on (issue 10,
//! item 2): each starts from a segment the real engine wrote, has bytes changed and every
//! checksum recomputed (as a fuzzer's input is, by `reseal`), is claimed by a manifest built
//! from its own directory, and is then read through the engine. A read answers an error naming
//! the file and the offset, never a panic. Also replays the `reads` fuzz corpus.

use std::path::PathBuf;

use strata::segment::fuzzing::reseal;
use strata::{Aggregate, EngineError, Store};
use strata_engine::fuzzing::{
    reads, reads_seed, reads_seed_chained, reads_seed_folded, reads_seed_packed_cells,
    reads_seed_seams, store_over,
};

const SEGMENT: &str = "seg/000000000001.seg";

/// Byte sizes of the directory's records (`docs/format.md`).
const PARTITION_RECORD: usize = 112;
const BLOCK_RECORD: usize = 32;
const CELL_RECORD: usize = 104;

fn u32_at(bytes: &[u8], at: usize) -> usize {
    u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize
}

fn u64_at(bytes: &[u8], at: usize) -> usize {
    u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap()) as usize
}

/// What the test needs of one partition record.
struct Partition {
    measured_offset: usize,
    first_block: usize,
    n_blocks: usize,
    n_levels: u8,
}

/// What the test needs of one block record.
struct Block {
    at: usize,
    kind: u8,
    field: usize,
    offset: usize,
    n_items: usize,
}

/// Where the directory locates things in `bytes`: partitions, blocks, and the heap.
struct Layout {
    partitions: Vec<Partition>,
    blocks: Vec<Block>,
    heap_at: usize,
}

fn layout(bytes: &[u8]) -> Layout {
    let dir_at = u64_at(bytes, bytes.len() - 32);
    let n_partitions = u32_at(bytes, dir_at);
    let n_blocks = u32_at(bytes, dir_at + 4);
    let parts_at = dir_at + 16;
    let partitions = (0..n_partitions)
        .map(|i| {
            let at = parts_at + i * PARTITION_RECORD;
            Partition {
                measured_offset: u32_at(bytes, at + 16),
                first_block: u32_at(bytes, at + 24),
                n_blocks: u32_at(bytes, at + 28),
                n_levels: bytes[at + 89],
            }
        })
        .collect();
    let blocks_at = parts_at + n_partitions * PARTITION_RECORD;
    let blocks = (0..n_blocks)
        .map(|i| {
            let at = blocks_at + i * BLOCK_RECORD;
            Block {
                at,
                kind: bytes[at],
                field: usize::from(u16::from_le_bytes([bytes[at + 2], bytes[at + 3]])),
                offset: u64_at(bytes, at + 8),
                n_items: u64_at(bytes, at + 24),
            }
        })
        .collect();
    Layout {
        partitions,
        blocks,
        heap_at: blocks_at + n_blocks * BLOCK_RECORD,
    }
}

impl Layout {
    /// Partition `part_idx`'s blocks.
    fn blocks_of(&self, part_idx: usize) -> &[Block] {
        let part = &self.partitions[part_idx];
        &self.blocks[part.first_block..part.first_block + part.n_blocks]
    }

    /// Partition `part_idx`'s cells block.
    fn cells_of(&self, part_idx: usize) -> &Block {
        self.blocks_of(part_idx)
            .iter()
            .find(|b| b.kind == 5)
            .unwrap()
    }
}

/// The offset of cell `cell_idx` of partition `part_idx`'s cells block.
fn cell_at(bytes: &[u8], part_idx: usize, cell_idx: usize) -> usize {
    layout(bytes).cells_of(part_idx).offset + cell_idx * CELL_RECORD
}

/// The engine's seed segment with `mutate` applied and every checksum recomputed.
fn damaged(mutate: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let mut bytes = reads_seed();
    mutate(&mut bytes);
    reseal(&mut bytes);
    bytes
}

/// Every read over the whole store: each either answers or is refused; answers the first
/// refusal's text, or `None` if every read answered.
fn first_refusal(store: &Store) -> Option<String> {
    let mut refusals = Vec::new();
    let mut note = |result: Result<(), EngineError>| {
        if let Err(error) = result {
            refusals.push(error.to_string());
        }
    };
    note(store.query("cap", &[], ..).map(drop));
    note(store.survey("cap", &[], .., 400).map(drop));
    for aggregate in [
        Aggregate::Count,
        Aggregate::Min,
        Aggregate::Max,
        Aggregate::p(50),
    ] {
        note(store.fold("cap", &[], .., aggregate).map(drop));
    }
    refusals.into_iter().next()
}

/// The refusal names the segment and an offset in it.
fn assert_names_file_and_offset(refusal: Option<String>, what: &str) {
    let refusal = refusal.unwrap_or_else(|| panic!("{what}: every read answered"));
    assert!(refusal.contains(SEGMENT), "{what}: {refusal}");
    assert!(refusal.contains("offset"), "{what}: {refusal}");
}

#[test]
fn the_seed_reads_cleanly_so_mutations_start_from_a_good_file() {
    let store = store_over(&reads_seed()).unwrap();
    assert_eq!(first_refusal(&store), None);
    assert_eq!(store.query("cap", &[], ..).unwrap().len(), 24);
    let count = store.fold("cap", &[], .., Aggregate::Count).unwrap();
    assert!(count.iter().all(|s| s.value == Some(strata::Num::U64(24))));
}

/// A cell of the `u64` field `u` relabelled `f64`: its value bytes now read as a float, and
/// before the reader checked cell kinds against the partition's, `Bucket::absorb` met a u64 and
/// an f64 and panicked ("compared a U64 value with a F64 value").
#[test]
fn cell_kind_mismatch_is_unreadable_not_a_panic() {
    let bytes = damaged(|b| {
        let at = cell_at(b, 0, 0);
        assert_eq!(
            (b[at], b[at + 3]),
            (2, 1),
            "the first cell is field u, kind u64"
        );
        b[at + 3] = 3;
    });
    let store = store_over(&bytes).unwrap();
    // A survey at level 0 merges cell 0 of both partitions: the one a u64, the other now an f64.
    let survey = store.survey("cap", &[], .., 400).map(|s| s.level);
    let text = survey.unwrap_err().to_string();
    assert!(text.contains(SEGMENT) && text.contains("kind"), "{text}");
    // Any read of that cells block is refused alike, whether or not it reads the cell.
    let fold = store.fold("cap", &[], .., Aggregate::Min).map(drop);
    assert_eq!(fold.unwrap_err().to_string(), text);
    assert_names_file_and_offset(first_refusal(&store), "cell kind");
}

#[test]
fn a_cell_of_a_field_that_is_not_measured_is_unreadable() {
    // Field 5 (`note`, a str) has no cells; a cell claiming it sorts last, so move the last.
    let bytes = damaged(|b| {
        let last = layout(b).cells_of(0).n_items - 1;
        let at = cell_at(b, 0, last);
        b[at..at + 2].copy_from_slice(&5u16.to_le_bytes());
    });
    assert_names_file_and_offset(first_refusal(&store_over(&bytes).unwrap()), "field 5");
}

#[test]
fn a_cell_above_the_files_levels_is_unreadable() {
    let bytes = damaged(|b| {
        // The last cell of the last field sits at the top level; lift it above it.
        let layout = layout(b);
        let at = cell_at(b, 0, layout.cells_of(0).n_items - 1);
        assert_eq!(b[at + 2] + 1, layout.partitions[0].n_levels);
        b[at + 2] = layout.partitions[0].n_levels;
    });
    assert_names_file_and_offset(first_refusal(&store_over(&bytes).unwrap()), "level");
}

#[test]
fn a_cell_of_zero_rows_is_unreadable() {
    let bytes = damaged(|b| {
        let at = cell_at(b, 0, 0) + 8 + 8 + 4 * 16; // field..index, then four points
        b[at..at + 8].copy_from_slice(&0u64.to_le_bytes());
    });
    assert_names_file_and_offset(first_refusal(&store_over(&bytes).unwrap()), "zero rows");
}

#[test]
fn a_cell_folding_more_rows_than_its_partition_holds_is_unreadable() {
    let bytes = damaged(|b| {
        let at = cell_at(b, 0, 0) + 8 + 8 + 4 * 16;
        b[at..at + 8].copy_from_slice(&1000u64.to_le_bytes());
    });
    assert_names_file_and_offset(first_refusal(&store_over(&bytes).unwrap()), "count");
}

#[test]
fn a_cell_point_outside_its_partitions_axis_is_unreadable() {
    let bytes = damaged(|b| {
        let at = cell_at(b, 0, 0) + 16 + 16; // the `last` point's axis
        b[at..at + 8].copy_from_slice(&u64::MAX.to_le_bytes());
    });
    assert_names_file_and_offset(first_refusal(&store_over(&bytes).unwrap()), "axis");
}

/// The last level-0 cell of field `u` moved one cell to the right on the grid: still in order,
/// inside the partition's axis range, and consistent in itself, but its rows are not where its
/// index says. Only the engine knows the ladder; the read that pairs them refuses.
#[test]
fn a_cell_indexed_away_from_its_points_is_unreadable() {
    let bytes = damaged(|b| {
        let cells = layout(b).cells_of(0).n_items;
        let last_level0 = (0..cells)
            .map(|c| cell_at(b, 0, c))
            .rfind(|&at| b[at] == 2 && b[at + 2] == 0)
            .unwrap();
        let index = u64_at(b, last_level0 + 8) as u64;
        b[last_level0 + 8..last_level0 + 16].copy_from_slice(&(index + 1).to_le_bytes());
    });
    let store = store_over(&bytes).unwrap();
    // Level-0 cells 25..=32 (base 4) fit a budget of 400 points: the moved cell is read.
    let refusal = store.survey("cap", &[], 100..=130, 400).map(|s| s.level);
    let refusal = refusal.unwrap_err().to_string();
    assert!(refusal.contains("outside it on the grid"), "{refusal}");
    assert_names_file_and_offset(Some(refusal), "cell index");
}

/// The partition's measured kinds, its column's kind and its cells' kinds all changed together
/// (so the file agrees with itself) but no longer with the declaration: the engine refuses it.
#[test]
fn a_partition_measuring_another_kind_than_declared_is_unreadable() {
    let bytes = damaged(|b| {
        let layout = layout(b);
        // Field 2 (`u`) becomes i64 everywhere in partition 0: measured record, column, cells.
        let measured_at = layout.heap_at + layout.partitions[0].measured_offset;
        assert_eq!(&b[measured_at..measured_at + 3], &[2, 0, 1]);
        b[measured_at + 2] = 2;
        for block in layout.blocks_of(0) {
            if block.kind == 4 && block.field == 2 {
                b[block.at + 1] = 2;
            }
            if block.kind == 5 {
                for c in 0..block.n_items {
                    let at = block.offset + c * CELL_RECORD;
                    if b[at] == 2 {
                        b[at + 3] = 2;
                    }
                }
            }
        }
    });
    let store = store_over(&bytes).unwrap();
    // A raw query refuses it too (by the column's kind); the level reads name where.
    assert!(store.query("cap", &[], ..).is_err());
    for aggregate in [Aggregate::Min, Aggregate::p(50)] {
        let refusal = store
            .fold("cap", &[], .., aggregate)
            .unwrap_err()
            .to_string();
        assert!(refusal.contains("declaration"), "{refusal}");
        assert_names_file_and_offset(Some(refusal), "declared kind");
    }
}

/// An f64 measured value that is not finite stored in the column of a file of version 6 or
/// older (whose publish refused those); in a file of version 7 it is a value that may be
/// missing (NaN), which every read answers around.
#[test]
fn a_measured_value_that_is_not_finite_is_unreadable_before_version_7() {
    let nan_in = |version: u32| {
        damaged(|b| {
            let layout = layout(b);
            let column = layout
                .blocks_of(0)
                .iter()
                .find(|blk| blk.kind == 4 && blk.field == 4);
            let at = column.unwrap().offset;
            b[at..at + 8].copy_from_slice(&f64::NAN.to_le_bytes());
            b[8..12].copy_from_slice(&version.to_le_bytes());
        })
    };
    assert_names_file_and_offset(first_refusal(&store_over(&nan_in(6)).unwrap()), "NaN");
    assert_eq!(first_refusal(&store_over(&nan_in(7)).unwrap()), None);
}

/// A seed's writer.
type Seed = fn() -> Vec<u8>;

fn corpus() -> Vec<(PathBuf, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/reads");
    if std::env::var_os("STRATA_WRITE_FUZZ_SEEDS").is_some() {
        // Writes the seeds missing from the corpus, from the engine as it writes today. One
        // already there is kept: it is the fixture of the format version it was written in.
        std::fs::create_dir_all(&dir).unwrap();
        let seeds: [(&str, Seed); 6] = [
            ("engine-two-partitions.seg", reads_seed),
            ("engine-folded-levels.seg", reads_seed_folded),
            ("engine-chained-cells.seg", reads_seed_chained),
            ("engine-seams.seg", reads_seed_seams),
            ("engine-packed-cells.seg", reads_seed_packed_cells),
            // Written once the coarse levels' few cells were kept as records chunks.
            ("engine-record-chunks.seg", reads_seed_packed_cells),
        ];
        for (name, seed) in seeds {
            if !dir.join(name).exists() {
                std::fs::write(dir.join(name), seed()).unwrap();
            }
        }
    }
    strata::segment::fuzzing::corpus(&dir)
}

/// Every file of `fuzz/corpus/reads` through the fuzz target's own entry point, on stable, so a
/// finding once saved there stays fixed.
#[test]
fn reads_corpus_replays() {
    for (path, bytes) in corpus() {
        eprintln!("{}", path.display());
        reads(&bytes);
    }
}

#[test]
fn the_reads_seed_is_valid_so_the_fuzzer_starts_deep() {
    let corpus = corpus();
    let (_, seed) = corpus
        .iter()
        .find(|(p, _)| p.ends_with("engine-two-partitions.seg"))
        .unwrap();
    let store = store_over(seed).unwrap();
    assert_eq!(first_refusal(&store), None);
    assert_eq!(store.query("cap", &[], ..).unwrap().len(), 24);
}

/// The seed of format version 3: levels stored from a level up, with a merge's cells beneath.
/// Kept in the corpus, so this build reads what it wrote, whatever later builds write.
#[test]
fn the_folded_levels_seed_is_valid_and_stores_levels_from_a_level_up() {
    let corpus = corpus();
    let (_, seed) = corpus
        .iter()
        .find(|(p, _)| p.ends_with("engine-folded-levels.seg"))
        .unwrap();
    assert_eq!(
        u32::from_le_bytes(seed[8..12].try_into().unwrap()),
        3,
        "version 3"
    );
    let reader = strata::segment::SegmentReader::open(SEGMENT, seed.as_slice()).unwrap();
    let part = &reader.partitions()[0];
    assert!(
        part.stored_from > 0,
        "levels stored from {}",
        part.stored_from
    );
    // The f64 field's: integer sums add exactly in any grouping, so only its cells can differ.
    let beneath: usize = (0..part.stored_from)
        .map(|level| reader.cells(0, 4, level, 0..=u64::MAX).unwrap().len())
        .sum();
    assert!(
        beneath > 0,
        "the merge stored cells where its inputs' sums met"
    );
    let store = store_over(seed).unwrap();
    assert_eq!(first_refusal(&store), None);
    assert_eq!(store.query("cap", &[], ..).unwrap().len(), 600);
    // Every level answers, stored or folded, and each level's cells fold every row.
    for level in 0..12 {
        let cells = store.level_cells("cap", &[], "u", level, ..).unwrap();
        assert_eq!(
            cells.iter().map(|c| c.bucket.count).sum::<u64>(),
            600,
            "level {level}"
        );
    }
}

/// The seed of format version 4: a merge behind the newest segments, whose cells shared with
/// later segments are chains. Alone (claimed as the store's one file) each chain folds to one
/// cell; every level answers, and every level's cells fold every row.
#[test]
fn the_chained_seed_is_valid_and_holds_chains() {
    let corpus = corpus();
    let (_, seed) = corpus
        .iter()
        .find(|(p, _)| p.ends_with("engine-chained-cells.seg"))
        .unwrap();
    assert_eq!(
        u32::from_le_bytes(seed[8..12].try_into().unwrap()),
        4,
        "version 4"
    );
    let reader = strata::segment::SegmentReader::open(SEGMENT, seed.as_slice()).unwrap();
    let part = &reader.partitions()[0];
    let n_rows = part.entry.n_rows;
    let chains: usize = (0..part.entry.n_levels)
        .map(|level| {
            let cells = reader.cells(0, 4, level, 0..=u64::MAX).unwrap();
            cells
                .windows(2)
                .filter(|w| w[0].index == w[1].index)
                .count()
        })
        .sum();
    assert!(chains > 0, "the merge kept chains");
    let store = store_over(seed).unwrap();
    assert_eq!(first_refusal(&store), None);
    assert_eq!(store.query("cap", &[], ..).unwrap().len() as u64, n_rows);
    for level in 0..12 {
        let cells = store.level_cells("cap", &[], "f", level, ..).unwrap();
        assert!(
            cells.windows(2).all(|w| w[0].index < w[1].index),
            "level {level}: a chain read as one cell"
        );
        assert_eq!(
            cells.iter().map(|c| c.bucket.count).sum::<u64>(),
            n_rows,
            "level {level}"
        );
    }
}

/// The seed of format version 6: a merge behind the newest segments with packed columns, seams
/// between the barriers it merged and the cell holding its last row chained. Alone (claimed as
/// the store's one file) every level answers, stored or folded piece by piece, each folding
/// every row; and the seed is what the engine writes today, but for the file it was written in.
#[test]
fn the_seams_seed_is_valid_and_holds_seams_and_packed_columns() {
    let corpus = corpus();
    let (_, seed) = corpus
        .iter()
        .find(|(p, _)| p.ends_with("engine-seams.seg"))
        .unwrap();
    assert_eq!(
        u32::from_le_bytes(seed[8..12].try_into().unwrap()),
        6,
        "version 6"
    );
    let reader = strata::segment::SegmentReader::open(SEGMENT, seed.as_slice()).unwrap();
    let part = &reader.partitions()[0];
    let n_rows = part.entry.n_rows;
    assert!(!reader.seams(0).unwrap().is_empty(), "seams");
    assert!(part.chained_from.is_some(), "a chained last cell");
    assert!(
        matches!(
            reader.axis(0).unwrap(),
            Some(strata::segment::Axis::Packed(_))
        ),
        "a packed axis"
    );
    let store = store_over(seed).unwrap();
    assert_eq!(first_refusal(&store), None);
    assert_eq!(store.query("cap", &[], ..).unwrap().len() as u64, n_rows);
    for level in 0..12 {
        let cells = store.level_cells("cap", &[], "f", level, ..).unwrap();
        assert_eq!(
            cells.iter().map(|c| c.bucket.count).sum::<u64>(),
            n_rows,
            "level {level}"
        );
    }
}

/// A file without a missing value spends no byte on missing values (#48: nothing costs bytes
/// until it is used): the engine's seams seed written today holds no validity block and reads
/// cleanly. (Until format 8 packed the cells, it was byte for byte what the build before
/// format 7 wrote but for the header's version.)
#[test]
fn a_file_without_missing_values_holds_no_validity_block() {
    let today = reads_seed_seams();
    assert_eq!(today[8..12], 8u32.to_le_bytes());
    let layout = layout(&today);
    assert!(!layout.blocks_of(0).is_empty());
    assert!(
        layout.blocks_of(0).iter().all(|b| b.kind != 9),
        "no validity block"
    );
    assert_eq!(first_refusal(&store_over(&today).unwrap()), None);
}

/// Format 8 packs a Cells block: the seed's is packed, reads cleanly, and a chunk whose column
/// lengths reach past it (crc recomputed: a file consistent in its checksums, not in itself) is
/// refused naming the file and an offset, by every read that reaches its cells.
#[test]
fn a_packed_cell_chunk_that_does_not_decode_is_unreadable() {
    let seed = reads_seed_packed_cells();
    let cells = |b: &[u8]| {
        let layout = layout(b);
        let block = layout.cells_of(0);
        (b[block.at + 4], block.offset)
    };
    let (encoding, offset) = cells(&seed);
    assert_eq!(encoding, 1, "the seed's cells are packed");
    let store = store_over(&seed).unwrap();
    assert_eq!(first_refusal(&store), None);
    let mut bytes = seed.clone();
    // Every chunk's first column length, far past the chunk's end: the chunks start at the
    // payload's start and at each chunk's `end_byte` (the table, 40 bytes a chunk, ends 8
    // bytes before the payload does, and the block record's `len` is at 16).
    let len = {
        let block = layout(&bytes).cells_of(0).at;
        u64_at(&bytes, block + 16)
    };
    let count = u64_at(&bytes, offset + len - 8);
    let table = offset + len - 8 - 40 * count;
    let starts: Vec<usize> = std::iter::once(0)
        .chain((0..count - 1).map(|c| u64_at(&bytes, table + 40 * c + 32)))
        .collect();
    for start in starts {
        bytes[offset + start..offset + start + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    }
    reseal(&mut bytes);
    let refusal = first_refusal(&store_over(&bytes).unwrap());
    assert_names_file_and_offset(refusal.clone(), "packed cells");
    assert!(refusal.unwrap().contains("cell chunk"));
}

/// A packed Cells block's chunks of a few cells hold their records (`kind` bit 0x80, segment
/// format 8): the seed's coarse levels are such chunks, every level reads back whole through
/// them, and a record there naming another level than its chunk's is bad bytes.
#[test]
fn a_chunk_of_a_few_cells_holds_their_records_and_one_bent_is_unreadable() {
    let seed = reads_seed_packed_cells();
    // The chunk table: 40 bytes a chunk, ending 8 bytes before the payload does.
    let chunks = |b: &[u8]| {
        let layout = layout(b);
        let block = layout.cells_of(0);
        let len = u64_at(b, block.at + 16);
        let count = u64_at(b, block.offset + len - 8);
        let table = block.offset + len - 8 - 40 * count;
        (0..count)
            .map(|c| {
                let at = table + 40 * c;
                let start = c
                    .checked_sub(1)
                    .map_or(0, |p| u64_at(b, table + 40 * p + 32));
                (b[at + 2], b[at + 3], block.offset + start)
            })
            .collect::<Vec<(u8, u8, usize)>>()
    };
    let table = chunks(&seed);
    let of_records: Vec<&(u8, u8, usize)> = table
        .iter()
        .filter(|(_, kind, _)| kind & 0x80 != 0)
        .collect();
    assert!(
        !of_records.is_empty(),
        "coarse levels of a few cells: {table:?}"
    );
    assert!(of_records.len() < table.len(), "and packed ones");
    let store = store_over(&seed).unwrap();
    assert_eq!(first_refusal(&store), None);
    let n_rows = store.query("cap", &[], ..).unwrap().len() as u64;
    let levels = layout(&seed).partitions[0].n_levels;
    for level in 0..levels {
        let cells = store.level_cells("cap", &[], "f", level, ..).unwrap();
        assert_eq!(
            cells.iter().map(|c| c.bucket.count).sum::<u64>(),
            n_rows,
            "level {level}"
        );
    }
    let &&(level, _, start) = of_records.last().unwrap();
    let mut bytes = seed.clone();
    // The chunk's first record's level byte (a CellRecord's third).
    bytes[start + 2] = level - 1;
    reseal(&mut bytes);
    let refusal = first_refusal(&store_over(&bytes).unwrap());
    assert_names_file_and_offset(refusal.clone(), "packed cells");
    assert!(refusal.unwrap().contains("cell chunk"));
}
