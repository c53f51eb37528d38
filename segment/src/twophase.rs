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
/// unknown, and nothing here retries.
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

    let mut file = vfs
        .create(&tmp_path)
        .map_err(|e| SegmentError::io(&tmp_path, e))?;
    file.write_all(bytes)
        .map_err(|e| SegmentError::io(&tmp_path, e))?;
    file.sync_data()
        .map_err(|e| SegmentError::io(&tmp_path, e))?;
    drop(file);
    vfs.rename_noreplace(&tmp_path, &final_path)
        .map_err(|e| SegmentError::io(&final_path, e))?;
    vfs.sync_dir(dest_dir)
        .map_err(|e| SegmentError::io(dest_dir, e))?;
    vfs.sync_dir(TMP_DIR)
        .map_err(|e| SegmentError::io(TMP_DIR, e))?;
    Ok(final_path)
}
