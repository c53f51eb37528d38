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
use crate::vfs::{Vfs, VfsFile};

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
    let mut temp = TempFile::create(vfs, dest_dir, name)?;
    if let Err(e) = temp.file().write_all(bytes) {
        let error = SegmentError::io(temp.tmp_path(), e);
        return Err(temp.abandon(error));
    }
    temp.sync()?.publish()
}

/// A file being written two-phase, streamed: step 1 is [`TempFile::create`], the caller's writes
/// through [`TempFile::file`], then [`TempFile::sync`]; steps 2 to 4 are [`SyncedFile::publish`].
/// [`write_two_phase`] is the same for bytes already in memory.
///
/// Between the sync and the publish the caller may decide not to publish ([`SyncedFile::abandon`]):
/// the file has no final name yet. Every failure these report has already removed the names
/// this file was given, as [`write_two_phase`] does; a caller whose own write failed calls
/// [`TempFile::abandon`] for the same.
#[derive(Debug)]
pub struct TempFile<'v> {
    vfs: &'v dyn Vfs,
    dest_dir: String,
    tmp_path: String,
    final_path: String,
    file: Box<dyn VfsFile>,
}

impl<'v> TempFile<'v> {
    /// Creates `tmp/name` (never an existing name), to be published as `dest_dir/name`.
    pub fn create(vfs: &'v dyn Vfs, dest_dir: &str, name: &str) -> Result<Self, SegmentError> {
        let tmp_path = format!("{TMP_DIR}/{name}");
        let final_path = if dest_dir.is_empty() {
            name.to_owned()
        } else {
            format!("{dest_dir}/{name}")
        };
        // A create that failed made no name (O_EXCL): nothing to remove.
        let file = vfs
            .create(&tmp_path)
            .map_err(|e| SegmentError::io(&tmp_path, e))?;
        Ok(TempFile {
            vfs,
            dest_dir: dest_dir.to_owned(),
            tmp_path,
            final_path,
            file,
        })
    }

    /// The open temp file, to write the file's bytes to (at its end).
    pub fn file(&mut self) -> &mut dyn VfsFile {
        self.file.as_mut()
    }

    /// The temp's path, for errors of writes to it.
    pub fn tmp_path(&self) -> &str {
        &self.tmp_path
    }

    /// The path the file will have once published.
    pub fn final_path(&self) -> &str {
        &self.final_path
    }

    /// `fdatasync`s the temp and closes it: its bytes are durable, under the temp name.
    pub fn sync(mut self) -> Result<SyncedFile<'v>, SegmentError> {
        if let Err(e) = self.file.sync_data() {
            let error = SegmentError::io(&self.tmp_path, e);
            return Err(self.abandon(error));
        }
        let TempFile {
            vfs,
            dest_dir,
            tmp_path,
            final_path,
            file,
        } = self;
        drop(file);
        Ok(SyncedFile {
            vfs,
            dest_dir,
            tmp_path,
            final_path,
        })
    }

    /// Gives up the file after `error` (a write of the caller's failed): closes and removes the
    /// temp; answers `error`.
    pub fn abandon(self, error: SegmentError) -> SegmentError {
        let TempFile {
            vfs,
            tmp_path,
            file,
            ..
        } = self;
        drop(file);
        remove_unclaimed(vfs, &tmp_path, error)
    }
}

/// A temp file whose bytes are durable, not yet under its final name.
#[derive(Debug)]
pub struct SyncedFile<'v> {
    vfs: &'v dyn Vfs,
    dest_dir: String,
    tmp_path: String,
    final_path: String,
}

impl SyncedFile<'_> {
    /// The path the file will have once published.
    pub fn final_path(&self) -> &str {
        &self.final_path
    }

    /// Renames the temp to its final name without replacing anything and syncs both
    /// directories; answers the final path.
    pub fn publish(self) -> Result<String, SegmentError> {
        let SyncedFile {
            vfs,
            dest_dir,
            tmp_path,
            final_path,
        } = self;
        // A rename that failed left the temp where it was (or, in link mode, both names; then
        // the final one goes to boot as an unclaimed file). The final name is never removed
        // here: after a refusal it may be someone else's.
        vfs.rename_noreplace(&tmp_path, &final_path)
            .map_err(|e| remove_unclaimed(vfs, &tmp_path, SegmentError::io(&final_path, e)))?;
        vfs.sync_dir(&dest_dir)
            .map_err(|e| remove_unclaimed(vfs, &final_path, SegmentError::io(&dest_dir, e)))?;
        vfs.sync_dir(TMP_DIR)
            .map_err(|e| remove_unclaimed(vfs, &final_path, SegmentError::io(TMP_DIR, e)))?;
        Ok(final_path)
    }

    /// Does not publish the file after `error`: removes the temp; answers `error`.
    pub fn abandon(self, error: SegmentError) -> SegmentError {
        remove_unclaimed(self.vfs, &self.tmp_path, error)
    }
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
