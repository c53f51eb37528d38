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
