//! The manifest file: an append-only log of checksummed frames, the store's commit point.
//!
//! A store's manifest lives in its root as `manifest-NNNNNN`; `NNNNNN` is its generation. A new
//! generation (a snapshot of live state, written when the log grows past a threshold) is written
//! two-phase like any file, so the highest generation present is always complete: that is the
//! current one. Its preamble names the generation it was taken from, which stays beside it as the
//! way back should the new one's snapshot be damaged; only the generation before that one is
//! removed, once the new one is durable under its final name. `docs/format.md` has the byte
//! layout (the codec itself lives in `strata-index`).

use strata_index::{ManifestState, Record, encode_frame, generation_bytes};

use crate::error::SegmentError;
use crate::names::{
    MANIFEST_GENERATION_MAX, QUARANTINE_DIR, SEG_DIR, TMP_DIR, manifest_name, parse_manifest_name,
};
use crate::twophase::write_two_phase;
use crate::vfs::{Vfs, VfsFile};

/// The manifest generations present in the store's root, ascending.
pub fn manifest_generations(vfs: &dyn Vfs) -> Result<Vec<u32>, SegmentError> {
    let entries = vfs.list("").map_err(|e| SegmentError::io("", e))?;
    let mut generations: Vec<u32> = entries
        .iter()
        .filter(|entry| !entry.is_dir)
        .filter_map(|entry| parse_manifest_name(&entry.name))
        .collect();
    generations.sort_unstable();
    Ok(generations)
}

/// The whole manifest of `generation` (boot parses it with `strata_index::parse_log`). Read, not
/// mapped: a concurrent boot may cut the file, which would fault a map (an `engine-fsck` of a
/// store being opened must not crash).
pub fn read_manifest(vfs: &dyn Vfs, generation: u32) -> Result<Vec<u8>, SegmentError> {
    let path = manifest_name(generation);
    vfs.read(&path).map_err(|e| SegmentError::io(&path, e))
}

/// Cuts the manifest of `generation` to `len` bytes (its trusted prefix) and syncs it.
///
/// Boot calls this only after the bytes beyond `len` are safely kept elsewhere (heal before
/// claim). No view of the file may be alive while it shrinks.
pub fn truncate_manifest(vfs: &dyn Vfs, generation: u32, len: u64) -> Result<(), SegmentError> {
    let path = manifest_name(generation);
    let io = |e| SegmentError::io(&path, e);
    let mut file = vfs.open_append(&path).map_err(io)?;
    file.set_len(len).map_err(io)?;
    file.sync_data().map_err(io)
}

/// The open manifest, appended to once per barrier.
#[derive(Debug)]
pub struct ManifestWriter {
    generation: u32,
    path: String,
    /// `None` for a detached writer (a read-only store's), which refuses every append.
    file: Option<Box<dyn VfsFile>>,
    len: u64,
}

impl ManifestWriter {
    /// Writes a new manifest generation holding `records` (two-phase, so it appears whole or not
    /// at all) and opens it for appending. Above generation 1 it begins with a preamble naming
    /// `replaces`, the generation whose bytes the records were taken from (if any), and how much
    /// of it is written whole. The caller removes older generations afterwards.
    pub fn create(
        vfs: &dyn Vfs,
        generation: u32,
        replaces: Option<ManifestState>,
        records: &[Record],
    ) -> Result<ManifestWriter, SegmentError> {
        let bytes = generation_bytes(generation, replaces, records);
        let path = write_two_phase(vfs, "", &manifest_name(generation), &bytes)?;
        // The root was synced by the two-phase write; the new name is durable.
        ManifestWriter::open(vfs, generation, bytes.len() as u64).map_err(|e| match e {
            SegmentError::Io { source, .. } => SegmentError::io(&path, source),
            other => other,
        })
    }

    /// Opens the manifest of `generation` for appending after boot has cut it to its trusted
    /// prefix of `len` bytes.
    pub fn open(vfs: &dyn Vfs, generation: u32, len: u64) -> Result<ManifestWriter, SegmentError> {
        let path = manifest_name(generation);
        let file = vfs
            .open_append(&path)
            .map_err(|e| SegmentError::io(&path, e))?;
        let actual = file.len().map_err(|e| SegmentError::io(&path, e))?;
        if actual != len {
            return Err(SegmentError::malformed(
                &path,
                actual,
                format!("expected {len} bytes after boot, found {actual}"),
            ));
        }
        Ok(ManifestWriter {
            generation,
            path,
            file: Some(file),
            len,
        })
    }

    /// The manifest of `generation`, `len` bytes long, known but not opened: what a read-only
    /// store holds, so that it knows the generation and length without opening the file for
    /// writing (which a read-only mount refuses). Every `append` fails with EROFS and writes
    /// nothing.
    pub fn detached(generation: u32, len: u64) -> ManifestWriter {
        ManifestWriter {
            generation,
            path: manifest_name(generation),
            file: None,
            len,
        }
    }

    /// Appends one frame holding `record` and syncs it: when this returns, the record is the
    /// store's claim. On error the store must be poisoned (the tail is unknown; boot will keep it
    /// as evidence and cut it off).
    pub fn append(&mut self, record: &Record) -> Result<(), SegmentError> {
        let io = |e| SegmentError::io(&self.path, e);
        let Some(file) = self.file.as_mut() else {
            return Err(io(std::io::Error::new(
                std::io::ErrorKind::ReadOnlyFilesystem,
                "the manifest was opened read-only",
            )));
        };
        let frame = encode_frame(record);
        file.write_all(&frame).map_err(io)?;
        file.sync_data().map_err(io)?;
        self.len += frame.len() as u64;
        Ok(())
    }

    /// The manifest's length: the end of its last appended frame.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether nothing but the header was written (never: a manifest starts with its header).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The generation this writer appends to.
    pub fn generation(&self) -> u32 {
        self.generation
    }

    /// The manifest's path.
    pub fn path(&self) -> &str {
        &self.path
    }
}

/// Replaces the manifest generation `replaced` names (its whole bytes, as the snapshot was taken
/// from them) with the next generation holding `snapshot` (the live state as records).
///
/// The replaced generation stays: it is the new one's way back, from which a repair takes the
/// snapshot again should the new one's be damaged (its preamble names it, with the length and
/// crc32c it has). The one before it, the way back of a generation now superseded, is removed
/// once the new one is durable. A crash anywhere leaves either the replaced generation current,
/// or the new one current with the replaced one beside it (and perhaps the one before, which
/// boot quarantines): never a current generation without the bytes its snapshot was taken from.
pub fn rewrite_manifest(
    vfs: &dyn Vfs,
    replaced: ManifestState,
    snapshot: &[Record],
) -> Result<ManifestWriter, SegmentError> {
    let current = replaced.generation;
    let next = current + 1;
    if next > MANIFEST_GENERATION_MAX {
        let path = manifest_name(current);
        return Err(SegmentError::malformed(
            &path,
            0,
            "manifest generations exhausted",
        ));
    }
    let writer = ManifestWriter::create(vfs, next, Some(replaced), snapshot)?;
    if let Some(before) = current.checked_sub(1).filter(|&g| g > 0) {
        let old = manifest_name(before);
        if vfs.exists(&old).map_err(|e| SegmentError::io(&old, e))? {
            vfs.remove(&old).map_err(|e| SegmentError::io(&old, e))?;
            vfs.sync_dir("").map_err(|e| SegmentError::io("", e))?;
        }
    }
    Ok(writer)
}

/// Lays out a new store in an empty root: the `seg/`, `tmp/` and `quarantine/` folders, made
/// durable, then the first manifest generation holding `records`.
pub fn create_store(vfs: &dyn Vfs, records: &[Record]) -> Result<ManifestWriter, SegmentError> {
    for dir in [SEG_DIR, TMP_DIR, QUARANTINE_DIR] {
        vfs.create_dir(dir).map_err(|e| SegmentError::io(dir, e))?;
    }
    vfs.sync_dir("").map_err(|e| SegmentError::io("", e))?;
    ManifestWriter::create(vfs, 1, None, records)
}
