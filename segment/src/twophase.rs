//! The two-phase write: a file is complete and durable before it has its final name.
//!
//! 1. create `tmp/NAME` (never an existing name), write every byte, `fdatasync` it;
//! 2. rename it to `DIR/NAME` without replacing anything;
//! 3. `fsync` `DIR`, so the new name is durable;
//! 4. `fsync` `tmp/`, so the old name's removal is durable too (otherwise a crash could bring
//!    the temp name back beside the final one, and the next boot would quarantine a spurious
//!    copy of a file the manifest claims).
//!
//! Nothing here records anything: the caller's manifest frame is the claim, appended after this
//! returns. A crash anywhere before that frame leaves either nothing under the final name or the
//! complete file — never a prefix of it — and whatever it leaves is evidence for boot to
//! quarantine, never to adopt.

use crate::error::SegmentError;
use crate::names::TMP_DIR;
use crate::vfs::Vfs;

/// Writes `bytes` to `dest_dir/name` through `tmp/name`; answers the final path.
///
/// On error the store must be considered poisoned: which of the steps took effect on disk is
/// unknown, and nothing here retries. Before the error is returned, every name this call gave
/// the file is removed again (best effort, without a directory sync): nothing has claimed the
/// file, and the process knows why it failed, so a partial temp is not crash evidence for boot to
/// quarantine. A full disk would otherwise keep itself full with the temps of failed writes.
/// A crash during the removal leaves what a crash during the write would have left.
pub fn write_two_phase(
    vfs: &dyn Vfs,
    dest_dir: &str,
    name: &str,
    bytes: &[u8],
) -> Result<String, SegmentError> {
    let tmp_path = format!("{TMP_DIR}/{name}");
    let final_path = if dest_dir.is_empty() {
        name.to_owned()
    } else {
        format!("{dest_dir}/{name}")
    };

    // A create that failed made no name (O_EXCL): nothing to remove.
    let mut file = vfs
        .create(&tmp_path)
        .map_err(|e| SegmentError::io(&tmp_path, e))?;
    let written = file.write_all(bytes).and_then(|()| file.sync_data());
    drop(file);
    written.map_err(|e| remove_unclaimed(vfs, &tmp_path, SegmentError::io(&tmp_path, e)))?;
    // A rename that failed left the temp where it was (or, in link mode, both names; then the
    // final one goes to boot as an unclaimed file). The final name is never removed here: after
    // a refusal it may be someone else's.
    vfs.rename_noreplace(&tmp_path, &final_path)
        .map_err(|e| remove_unclaimed(vfs, &tmp_path, SegmentError::io(&final_path, e)))?;
    vfs.sync_dir(dest_dir)
        .map_err(|e| remove_unclaimed(vfs, &final_path, SegmentError::io(dest_dir, e)))?;
    vfs.sync_dir(TMP_DIR)
        .map_err(|e| remove_unclaimed(vfs, &final_path, SegmentError::io(TMP_DIR, e)))?;
    Ok(final_path)
}

/// Removes `path`, a name this write gave a file nothing has claimed, and answers `error`, the
/// failure that made the write give up. The removal is not synced: a directory whose sync just
/// failed must not be synced again, and a crash that brings the name back leaves evidence boot
/// already knows how to keep.
fn remove_unclaimed(vfs: &dyn Vfs, path: &str, error: SegmentError) -> SegmentError {
    // Best effort: the error that matters is the one that made the write fail.
    let _ = vfs.remove(path);
    error
}
