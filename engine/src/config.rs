//! Store configuration: every bound has a name, units last.

/// How a store behaves. `Config::default()` is a sane start.
#[derive(Clone, Debug)]
pub struct Config {
    /// The most bytes publish may stage before it asks for a seal (`StagingFull`). Staging is
    /// what a crash loses, and what one barrier writes.
    pub staged_bytes_max: usize,
    /// When the manifest grows past this, the next barrier rewrites it as a snapshot.
    pub manifest_rewrite_bytes: u64,
    /// Whether opening an empty folder creates a store there.
    pub create_if_missing: bool,
    /// Live raw segments a partition may have before `Store::compact` merges its oldest.
    pub compact_files_max: usize,
    /// The most segments one compaction step merges (at least 2): what bounds a step's reads,
    /// its output and the time it holds the store.
    pub compact_inputs_max: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            staged_bytes_max: 256 << 20,
            manifest_rewrite_bytes: 16 << 20,
            create_if_missing: true,
            compact_files_max: 16,
            compact_inputs_max: 16,
        }
    }
}
