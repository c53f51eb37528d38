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
}

impl Default for Config {
    fn default() -> Self {
        Config {
            staged_bytes_max: 256 << 20,
            manifest_rewrite_bytes: 16 << 20,
            create_if_missing: true,
        }
    }
}
