//! Carrying out a boot plan: every change boot makes to a store, each made durable before the
//! next, so a crash anywhere in here leaves a store the next boot heals to the same state.

use strata_segment::names::{QUARANTINE_DIR, manifest_name};
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
            // The final name is made durable before the temp's removal, so no crash in here
            // can leave neither name.
            Step::DropSecondName { path, final_dir } => {
                vfs.sync_dir(final_dir).map_err(io(final_dir))?;
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

/// The folder of a store path ("" for the root).
fn parent(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(dir, _)| dir)
}
