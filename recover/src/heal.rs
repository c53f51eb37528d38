//! Carrying out a boot plan: every change boot makes to a store, each made durable before the
//! next, so a crash anywhere in here leaves a store the next boot heals to the same state.

use strata_segment::names::{
    FileKind, NumberedName, QUARANTINE_DIR, SEG_DIR, TMP_DIR, manifest_name, parse_manifest_name,
};
use strata_segment::vfs::Vfs;
use strata_segment::{truncate_manifest, write_two_phase};

use crate::error::RecoverError;
use crate::plan::{Plan, Step};

/// Makes every change `plan` lists, in order. Heal before claim: the manifest's tail is durable
/// in quarantine before the manifest is cut, and all of it happens before anything new is
/// claimed.
pub(crate) fn heal(vfs: &dyn Vfs, plan: &Plan) -> Result<(), RecoverError> {
    let io = |path: &str| {
        let path = path.to_owned();
        move |e| RecoverError::io(&path, e)
    };
    let mut created_dirs = false;
    for step in &plan.steps {
        match step {
            Step::CreateDir(dir) => {
                vfs.create_dir(dir).map_err(io(dir))?;
                created_dirs = true;
            }
            Step::Quarantine { from, to } => {
                if created_dirs {
                    vfs.sync_dir("").map_err(io(""))?;
                    created_dirs = false;
                }
                let dest = format!("{QUARANTINE_DIR}/{to}");
                vfs.rename_noreplace(from, &dest).map_err(io(from))?;
                // The new name first: between the two syncs a crash leaves both names, which
                // the next boot recognises as one file already kept; never neither.
                vfs.sync_dir(QUARANTINE_DIR).map_err(io(QUARANTINE_DIR))?;
                vfs.sync_dir(parent(from)).map_err(io(from))?;
            }
            // A second name of quarantined bytes, or a file whose retirement is recorded: both
            // are removed by name, durably.
            Step::DropDuplicate { path } | Step::RemoveRetired { path } => {
                vfs.remove(path).map_err(io(path))?;
                vfs.sync_dir(parent(path)).map_err(io(path))?;
            }
            Step::CopyTail { to } => {
                if created_dirs {
                    vfs.sync_dir("").map_err(io(""))?;
                    created_dirs = false;
                }
                write_two_phase(vfs, QUARANTINE_DIR, to, &plan.tail)?;
            }
            Step::Truncate { len } => {
                truncate_manifest(vfs, plan.report.generation, *len)?;
            }
        }
    }
    if created_dirs {
        vfs.sync_dir("").map_err(io(""))?;
    }
    debug_assert!(vfs.len(&manifest_name(plan.report.generation)).is_ok());
    Ok(())
}

/// Removes every temp in `tmp/` that is a second name of a finished write: its final name holds
/// the same bytes. A no-replace rename done as link then unlink (on a file system without
/// `RENAME_NOREPLACE`) leaves exactly this when a crash falls between the two, and so does a
/// rename whose target folder was synced but whose `tmp/` was not. Either way the bytes are kept
/// under their final name; the temp is not evidence of anything, and quarantining it would keep
/// a spurious copy (boot never deletes evidence: these are second names, like those of bytes
/// already quarantined).
///
/// Runs under the lock before boot plans, so the plan never sees them. The final name is made
/// durable before the temp's removal, so no crash in here can leave neither.
pub(crate) fn drop_second_names(vfs: &dyn Vfs) -> Result<(), RecoverError> {
    let io = |path: &str| {
        let path = path.to_owned();
        move |e| RecoverError::io(&path, e)
    };
    if !vfs.exists(TMP_DIR).map_err(io(TMP_DIR))? {
        return Ok(());
    }
    let mut dropped = false;
    for entry in vfs.list(TMP_DIR).map_err(io(TMP_DIR))? {
        let Some((dir, final_path)) = final_name(&entry.name).filter(|_| !entry.is_dir) else {
            continue;
        };
        let tmp_path = format!("{TMP_DIR}/{}", entry.name);
        if !vfs.exists(&final_path).map_err(io(&final_path))?
            || !same_bytes(vfs, &tmp_path, &final_path)?
        {
            continue;
        }
        vfs.sync_dir(dir).map_err(io(dir))?;
        vfs.remove(&tmp_path).map_err(io(&tmp_path))?;
        dropped = true;
    }
    if dropped {
        vfs.sync_dir(TMP_DIR).map_err(io(TMP_DIR))?;
    }
    Ok(())
}

/// The folder and the path a two-phase write of temp `name` renames it to.
fn final_name(name: &str) -> Option<(&'static str, String)> {
    if parse_manifest_name(name).is_some() {
        return Some(("", name.to_owned()));
    }
    let dir = match NumberedName::parse(name)?.kind {
        FileKind::Segment => SEG_DIR,
        FileKind::ManifestTail => QUARANTINE_DIR,
    };
    Some((dir, format!("{dir}/{name}")))
}

fn same_bytes(vfs: &dyn Vfs, a: &str, b: &str) -> Result<bool, RecoverError> {
    let len_a = vfs.len(a).map_err(|e| RecoverError::io(a, e))?;
    let len_b = vfs.len(b).map_err(|e| RecoverError::io(b, e))?;
    if len_a != len_b {
        return Ok(false);
    }
    // Mapped, not read: a segment can be large. Boot holds the lock, so nothing cuts them.
    let bytes_a = vfs.map(a).map_err(|e| RecoverError::io(a, e))?;
    let bytes_b = vfs.map(b).map_err(|e| RecoverError::io(b, e))?;
    Ok(*bytes_a == *bytes_b)
}

/// The folder of a store path ("" for the root).
fn parent(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(dir, _)| dir)
}
