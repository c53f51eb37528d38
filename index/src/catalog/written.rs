//! What the store has written, as the records say: every file ever added, by what added it.
//!
//! The catalog keeps every file ever added, retired or not, and for each whether a `Merge`
//! added it (its inputs) or an `AddFile` did (a barrier). [`Catalog::snapshot`] replays a merge
//! output as a `Merge`, so the split survives a manifest rewrite and what follows from it is
//! derived from the catalog alone.

use super::Catalog;
use crate::record::FileName;

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
        let mut written = Written::default();
        for file in self.files.values() {
            let (n_files, n_bytes) = if file.inputs.is_empty() {
                (&mut written.barrier_files, &mut written.barrier_bytes)
            } else {
                (&mut written.merge_files, &mut written.merge_bytes)
            };
            *n_files += 1;
            *n_bytes = n_bytes.saturating_add(file.entry.len);
        }
        written
    }

    /// The files a merge replaced with `name`, oldest name first; `None` if `name` was added by
    /// a barrier, or never added.
    pub fn merge_inputs(&self, name: FileName) -> Option<&[FileName]> {
        let file = self.files.get(&name)?;
        (!file.inputs.is_empty()).then_some(file.inputs.as_slice())
    }
}
