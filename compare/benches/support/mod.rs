//! What the comparison benches share.

use std::path::Path;

/// Bytes of every file under `path`, folders followed.
pub fn bytes_under(path: &Path) -> u64 {
    let meta = std::fs::metadata(path).expect("metadata");
    if meta.is_dir() {
        std::fs::read_dir(path)
            .expect("a folder")
            .map(|e| bytes_under(&e.expect("an entry").path()))
            .sum()
    } else {
        meta.len()
    }
}

/// Bytes of the level cells' blocks in the segments of the store at `path` (crcs included).
pub fn cell_bytes(path: &Path) -> u64 {
    let mut total = 0;
    for entry in std::fs::read_dir(path.join("seg")).expect("seg/") {
        let bytes = std::fs::read(entry.expect("an entry").path()).expect("a segment");
        let reader = strata::segment::SegmentReader::open("seg", bytes).expect("a segment");
        total += (0..reader.partitions().len())
            .map(|part_idx| reader.cells_len(part_idx))
            .sum::<u64>();
    }
    total
}
