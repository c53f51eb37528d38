//! The manifest's own upkeep, as free functions of what they touch (no store): what a failed
//! append leaves cut off, and what a rewrite would hold. Boot (`store.rs`) and the commit path
//! (`commit.rs`) both use them.

use strata_index::{Catalog, FRAME_BODY_MAX, LOG_HEADER_LEN, encode_frame, split_record};
use strata_segment::vfs::Vfs;
use strata_segment::{ManifestWriter, truncate_manifest};

/// After a failed append of a frame of `frame_bytes` at `manifest_len`: whether the frame never
/// reached the file whole, so that it can claim nothing on any disk. Its partial bytes, if any,
/// are cut off (best effort), so the next open finds no torn tail to quarantine: the process saw
/// the write fail and knows they are not a crash's evidence.
pub(crate) fn cut_partial_frame(
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
