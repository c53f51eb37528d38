//! Boot: serve the manifest's trusted prefix, keep what a crash left as evidence, and issue new
//! names above everything the store has ever held.

use std::collections::BTreeMap;
use std::io;

use strata_index::{Catalog, FileName};
use strata_segment::names::{QUARANTINE_DIR, SEG_DIR, TMP_DIR, parse_manifest_name};
use strata_segment::vfs::{Vfs, VfsLock};
use strata_segment::{ManifestWriter, create_store};

use crate::error::RecoverError;
use crate::heal::heal;
use crate::plan::{LOCK_FILE, inspect};
use crate::report::Report;

/// A booted store: the state derived from its trusted prefix, its manifest open for the next
/// barrier, what boot found, and the lock that keeps every other opener out.
#[derive(Debug)]
pub struct Booted {
    /// The catalog derived from the manifest's trusted prefix.
    pub catalog: Catalog,
    /// The manifest, open for appending after its trusted prefix.
    pub manifest: ManifestWriter,
    /// What boot found and did.
    pub report: Report,
    /// The next file name to issue: above every name seen anywhere in the store.
    pub next_name: FileName,
    /// Recorded files that reads must answer `Unreadable`, with why.
    pub unreadable: BTreeMap<FileName, String>,
    /// Whether this boot created the store.
    pub created: bool,
    /// The store's exclusive lock, held for as long as this (or what takes it over) lives.
    pub lock: Box<dyn VfsLock>,
    /// Files whose retirement is recorded that boot left in `seg/` because it was asked to
    /// ([`boot_keeping_retired`]: readers in other processes may still open them). The caller
    /// removes them once nothing can.
    pub retired_kept: Vec<FileName>,
}

/// Boots the store in `vfs`. With `create_if_empty`, an empty folder (or one whose creation a
/// crash interrupted before its first manifest) becomes a new, empty store.
pub fn boot(vfs: &dyn Vfs, create_if_empty: bool) -> Result<Booted, RecoverError> {
    boot_keeping_retired(vfs, create_if_empty, false)
}

/// [`boot`], but with `keep_retired` it leaves the files whose retirement is recorded in
/// `seg/` (listed in [`Booted::retired_kept`]) instead of removing them: what a writer opens
/// with while readers in other processes may still read them. Everything else heals as ever.
pub fn boot_keeping_retired(
    vfs: &dyn Vfs,
    create_if_empty: bool,
    keep_retired: bool,
) -> Result<Booted, RecoverError> {
    // Taking the lock creates LOCK, so a folder that is not a store (and, without
    // `create_if_empty`, one that is not a store yet) is refused before it, with nothing written.
    // This look needs no lock to be sound: a manifest, once renamed into place, is only removed
    // after a later generation is durable, so a folder that showed one stays a store, and
    // whether that store is usable is still decided under the lock (`inspect`). A creator
    // holds the lock before its first manifest appears, so an opener racing it either refuses
    // (no manifest yet; nothing created) or finds the store locked. Two creators both pass this
    // look at an empty folder and then decide under the lock, exactly as before.
    refuse_a_foreign_folder(vfs, create_if_empty)?;
    let lock = vfs.lock().map_err(|e| match e.kind() {
        io::ErrorKind::WouldBlock => RecoverError::Locked,
        _ => RecoverError::io(LOCK_FILE, e),
    })?;
    if create_if_empty && unfinished_creation(vfs)? {
        return create(vfs, lock);
    }
    let mut plan = inspect(vfs)?;
    let retired_kept = if keep_retired {
        plan.keep_retired()
    } else {
        Vec::new()
    };
    heal(vfs, &plan)?;
    let manifest = ManifestWriter::open(vfs, plan.report.generation, plan.report.trusted_len)?;
    Ok(Booted {
        catalog: plan.catalog,
        manifest,
        report: plan.report,
        next_name: plan.next_name,
        unreadable: plan.unreadable,
        created: false,
        lock,
        retired_kept,
    })
}

/// A store booted for reading only: the state derived from its trusted prefix and what boot
/// found, with nothing changed on disk. Reads served from it answer as a writable boot's would:
/// what a heal changes (evidence moved to quarantine, a torn tail cut, retired files removed)
/// is nothing the trusted prefix claims.
#[derive(Debug)]
pub struct Viewed {
    /// The catalog derived from the manifest's trusted prefix.
    pub catalog: Catalog,
    /// What boot found and would do; `heal_pending` says whether any of it is left to do.
    pub report: Report,
    /// The next file name a writable boot would issue (above every name seen anywhere).
    pub next_name: FileName,
    /// Recorded files that reads must answer `Unreadable`, with why.
    pub unreadable: BTreeMap<FileName, String>,
    /// A shared hold of the store's lock, if it has a `LOCK` file: keeps a writer out for as
    /// long as this (or what takes it over) lives. `None` for a store without one (a copy made
    /// without it): nothing to hold, and nothing is created.
    pub lock: Option<Box<dyn VfsLock>>,
}

/// Boots the store in `vfs` for reading only, writing nothing: no `LOCK` is created or opened
/// for writing, and nothing is healed. Boot's plan is computed (`inspect`) and reported, its
/// steps left for the next writable open (`Report::heal_pending`). A folder without a manifest
/// is refused (`NotAStore`), as is a store a writer holds (`Locked`): a read-only open never
/// serves a store that is changing under it.
pub fn boot_read_only(vfs: &dyn Vfs) -> Result<Viewed, RecoverError> {
    refuse_a_foreign_folder(vfs, false)?;
    let lock = vfs.lock_shared().map_err(|e| match e.kind() {
        io::ErrorKind::WouldBlock => RecoverError::Locked,
        _ => RecoverError::io(LOCK_FILE, e),
    })?;
    let plan = inspect(vfs)?;
    let mut report = plan.report;
    report.heal_pending = !plan.steps.is_empty();
    Ok(Viewed {
        catalog: plan.catalog,
        report,
        next_name: plan.next_name,
        unreadable: plan.unreadable,
        lock,
    })
}

/// Creates a new, empty store in `vfs`, which must be empty (or hold only what a crash during an
/// earlier creation leaves): a folder that holds a store is refused (`AlreadyAStore`), one that
/// holds anything else (`NotEmpty`), with nothing written but, for a folder a creation may use, its `LOCK`.
/// Decided under the lock, so of two creators racing on one empty folder exactly one creates
/// and the other is refused, never handed the first one's store.
pub fn boot_new(vfs: &dyn Vfs) -> Result<Booted, RecoverError> {
    refuse_unless_creatable(vfs)?;
    let lock = vfs.lock().map_err(|e| match e.kind() {
        io::ErrorKind::WouldBlock => RecoverError::Locked,
        _ => RecoverError::io(LOCK_FILE, e),
    })?;
    refuse_unless_creatable(vfs)?;
    create(vfs, lock)
}

/// Refuses, without writing anything, a folder a new store cannot be created in.
fn refuse_unless_creatable(vfs: &dyn Vfs) -> Result<(), RecoverError> {
    if unfinished_creation(vfs)? {
        return Ok(());
    }
    let root = vfs.list("").map_err(|e| RecoverError::io("", e))?;
    if root
        .iter()
        .any(|e| !e.is_dir && parse_manifest_name(&e.name).is_some())
    {
        return Err(RecoverError::AlreadyAStore {
            reason: format!("{} already holds a store (open it instead)", vfs.location()),
        });
    }
    let mut holds: Vec<String> = root.into_iter().map(|e| e.name).collect();
    holds.sort_unstable();
    Err(RecoverError::NotEmpty {
        path: vfs.location(),
        holds,
    })
}

/// Whether the folder holds no store yet, so that [`boot`] with `create_if_empty` would create
/// one there: nothing at all but the lock, or only what a crash during creation can leave.
/// Writes nothing; a caller checks what a new store would need before it boots.
pub fn holds_no_store(vfs: &dyn Vfs) -> Result<bool, RecoverError> {
    unfinished_creation(vfs)
}

fn create(vfs: &dyn Vfs, lock: Box<dyn VfsLock>) -> Result<Booted, RecoverError> {
    // A crash during an earlier creation can have left its manifest temp; keep it as evidence.
    if vfs
        .exists(TMP_DIR)
        .map_err(|e| RecoverError::io(TMP_DIR, e))?
    {
        let leftovers = vfs
            .list(TMP_DIR)
            .map_err(|e| RecoverError::io(TMP_DIR, e))?;
        if !leftovers.is_empty() {
            vfs.create_dir(QUARANTINE_DIR)
                .map_err(|e| RecoverError::io(QUARANTINE_DIR, e))?;
            vfs.sync_dir("").map_err(|e| RecoverError::io("", e))?;
        }
        for entry in leftovers {
            let from = format!("{TMP_DIR}/{}", entry.name);
            let to = format!("{QUARANTINE_DIR}/tmp-{}", entry.name);
            vfs.rename_noreplace(&from, &to)
                .map_err(|e| RecoverError::io(&from, e))?;
            vfs.sync_dir(QUARANTINE_DIR)
                .map_err(|e| RecoverError::io(QUARANTINE_DIR, e))?;
            vfs.sync_dir(TMP_DIR)
                .map_err(|e| RecoverError::io(TMP_DIR, e))?;
        }
    }
    let manifest = create_store(vfs, &[])?;
    Ok(Booted {
        catalog: Catalog::new(),
        report: Report {
            generation: manifest.generation(),
            manifest_len: manifest.len(),
            trusted_len: manifest.len(),
            n_frames: 0,
            previous: None,
            findings: Vec::new(),
            heal_pending: false,
        },
        manifest,
        next_name: 1,
        unreadable: BTreeMap::new(),
        created: true,
        lock,
        retired_kept: Vec::new(),
    })
}

/// Refuses, without writing anything, a folder whose root holds no `manifest-NNNNNN` (the
/// same test and error as `inspect`), unless `create_if_empty` and it is empty enough to create
/// a store in.
fn refuse_a_foreign_folder(vfs: &dyn Vfs, create_if_empty: bool) -> Result<(), RecoverError> {
    let root = vfs.list("").map_err(|e| RecoverError::io("", e))?;
    if root
        .iter()
        .any(|e| !e.is_dir && parse_manifest_name(&e.name).is_some())
        || (create_if_empty && unfinished_creation(vfs)?)
    {
        return Ok(());
    }
    let names: Vec<&str> = root.iter().map(|e| e.name.as_str()).collect();
    Err(RecoverError::NotAStore {
        reason: format!(
            "{} holds no manifest-NNNNNN (it holds {names:?})",
            vfs.location()
        ),
    })
}

/// Whether the folder holds no store yet: nothing at all but the lock, or only what a crash
/// during creation can leave (the store folders, empty but for a manifest temp in `tmp/`).
fn unfinished_creation(vfs: &dyn Vfs) -> Result<bool, RecoverError> {
    let root = vfs.list("").map_err(|e| RecoverError::io("", e))?;
    if root
        .iter()
        .any(|e| !e.is_dir && parse_manifest_name(&e.name).is_some())
    {
        return Ok(false);
    }
    for entry in &root {
        let empty_enough = match entry.name.as_str() {
            LOCK_FILE => !entry.is_dir,
            SEG_DIR | QUARANTINE_DIR if entry.is_dir => vfs
                .list(&entry.name)
                .map_err(|e| RecoverError::io(&entry.name, e))?
                .is_empty(),
            TMP_DIR if entry.is_dir => vfs
                .list(TMP_DIR)
                .map_err(|e| RecoverError::io(TMP_DIR, e))?
                .iter()
                .all(|e| !e.is_dir && parse_manifest_name(&e.name).is_some()),
            _ => false,
        };
        if !empty_enough {
            return Ok(false);
        }
    }
    Ok(true)
}
