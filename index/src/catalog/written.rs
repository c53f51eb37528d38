//! What the store has written, as the records say: every file ever added, by what added it.
//!
//! The catalog counts every file as it is added, a barrier's `AddFile` apart from a compaction's
//! `Merge`. A snapshot no longer lists the files wholly retired, so it carries the counts in its
//! `History` entry (and its `Claim`s of the live files count nothing): the split survives a
//! manifest rewrite, and what follows from it is derived from the catalog alone.

use super::Catalog;

/// Segment files and bytes ever added to a store, barrier files apart from compaction outputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Written {
    /// Files added by barriers (`AddFile`).
    pub barrier_files: u64,
    /// Their bytes.
    pub barrier_bytes: u64,
    /// Files added by compaction (`Merge`).
    pub merge_files: u64,
    /// Their bytes.
    pub merge_bytes: u64,
}

impl Written {
    /// Bytes compaction wrote for each byte barriers wrote: `merge_bytes / barrier_bytes`. 0
    /// for a store never compacted; `None` before any barrier wrote a byte.
    pub fn write_amplification(&self) -> Option<f64> {
        (self.barrier_bytes > 0).then(|| self.merge_bytes as f64 / self.barrier_bytes as f64)
    }
}

impl Catalog {
    /// Every file ever added, live or wholly retired, summed by what added it.
    pub fn written(&self) -> Written {
        let h = &self.history;
        Written {
            barrier_files: h.barrier_files,
            barrier_bytes: h.barrier_bytes,
            merge_files: h.merge_files,
            merge_bytes: h.merge_bytes,
        }
    }
}
