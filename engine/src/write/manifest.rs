//! The manifest's own upkeep, as free functions of what they touch (no store): what a failed
//! append leaves cut off, and what a rewrite would hold. Boot (`store.rs`) and the commit path
//! (`commit.rs`) both use them.

use strata_index::{Catalog, FRAME_BODY_MAX, LOG_HEADER_LEN, Record, encode_frame, split_record};
use strata_segment::vfs::Vfs;
use strata_segment::{ManifestWriter, SegmentError, truncate_manifest};

/// A record that did not reach the manifest ([`append_record`]).
pub(crate) struct NotAppended {
    pub(crate) error: SegmentError,
    /// The frame never reached the file whole (what it wrote of itself is cut off): it claims
    /// nothing, on any disk. Otherwise it may be durable (the sync failed), for boot to judge.
    pub(crate) cut: bool,
}

/// Appends `record`'s frame to the manifest: the one way a write is recorded, whichever write
/// it is (a barrier's or a compaction step's claim, a record of the manifest alone: a trim, a
/// retirement, a sweep, a name reservation, a declaration at open). A frame that fails is cut
/// off where it never reached the file whole ([`cut_partial_frame`]).
pub(crate) fn append_record(
    vfs: &dyn Vfs,
    manifest: &mut ManifestWriter,
    record: &Record,
) -> Result<(), NotAppended> {
    let manifest_len = manifest.len();
    manifest.append(record).map_err(|error| {
        let frame_bytes = encode_frame(record).len() as u64;
        NotAppended {
            error,
            cut: cut_partial_frame(vfs, manifest, manifest_len, frame_bytes),
        }
    })
}

/// After a failed append of a frame of `frame_bytes` at `manifest_len`: whether the frame never
/// reached the file whole, so that it can claim nothing on any disk. Its partial bytes, if any,
/// are cut off (best effort), so the next open finds no torn tail to quarantine: the process saw
/// the write fail and knows they are not a crash's evidence.
fn cut_partial_frame(
    vfs: &dyn Vfs,
    manifest: &ManifestWriter,
    manifest_len: u64,
    frame_bytes: u64,
) -> bool {
    let Ok(len_now) = vfs.len(manifest.path()) else {
        return false;
    };
    if len_now >= manifest_len + frame_bytes {
        return false;
    }
    if len_now > manifest_len {
        let _ = truncate_manifest(vfs, manifest.generation(), manifest_len);
    }
    true
}

/// The bytes a manifest rewritten now would hold: its header and the snapshot's frames. (Its
/// preamble, a fixed few dozen bytes, is left out: counting it would only move the doubling
/// that triggers a rewrite by that much, and keep a store rewriting as it did before format 3.)
pub(crate) fn snapshot_len(catalog: &Catalog) -> u64 {
    let frames: usize = split_record(catalog.snapshot(), FRAME_BODY_MAX / 2)
        .iter()
        .map(|record| encode_frame(record).len())
        .sum();
    (LOG_HEADER_LEN + frames) as u64
}
