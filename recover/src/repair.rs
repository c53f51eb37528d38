//! The operator's repair of a manifest whose history is damaged ([`Corruption`]), or whose
//! highest generations are not whole manifests ([`StrayManifests`]).
//!
//! Stray generations are moved into `quarantine/` first (never removed), so the store goes on
//! from its highest whole generation; that generation may itself hold damaged history, which
//! the same repair then cuts.
//!
//! Boot refuses such a store; this is the one step that cuts it, and only when a person asks.
//! It never removes a byte. It writes a new manifest generation (two-phase, so it appears whole
//! or not at all) holding the trusted prefix's state plus one repair record, then boots the store
//! as usual, which moves the damaged generation and every file it no longer claims into
//! `quarantine/` (among them any file the prefix had wholly retired and a crash left behind: the
//! new generation's snapshot lists only live files, and nothing here removes one). The repair record fences each stream at the highest position any evidence ever
//! recorded — the frames after the damage, and every segment file in `seg/`, `tmp/` or
//! `quarantine/` that the prefix does not claim — so a position that was ever acknowledged is
//! never assigned to different rows. It also raises the watermark of each stream still declared
//! to its fence (so an ingest that continues from the watermark continues above it), and the
//! highest file name to everything the later frames issued.
//!
//! A crash anywhere in here leaves either the damaged generation current (boot refuses again;
//! run the repair again: a temp the crash left is kept as evidence first) or the new generation
//! complete, which the next boot heals like any other.

use std::collections::{BTreeMap, BTreeSet};
use std::io;

use strata_index::{
    Catalog, Entry, FRAME_BODY_MAX, FileName, LINEAGE_STATES_DEFAULT, LOG_VERSION, Record,
    check_header, parse_log, preamble_of, split_record, validate_label,
};
use strata_segment::names::{
    MANIFEST_GENERATION_MAX, NumberedName, QUARANTINE_DIR, SEG_DIR, TMP_DIR, manifest_name,
    parse_manifest_name,
};
use strata_segment::vfs::Vfs;
use strata_segment::{ManifestWriter, SegmentReader, read_manifest};

use crate::corruption::{Corruption, recorded_high};
use crate::error::RecoverError;
use crate::heal::heal;
use crate::plan::{LOCK_FILE, inspect, inspect_up_to, same_bytes};
use crate::report::Report;
use crate::stray::{STRAY_PREFIX, StrayGeneration, StrayManifests};
use crate::whole_part::{Damaged, WayBack, WholeDamage, rebuild};

/// What a repair found and did.
#[derive(Debug)]
pub struct Repaired {
    /// Manifest generations that were not whole manifests, moved into quarantine first.
    pub set_aside: Vec<SetAside>,
    /// The cut of damaged history, if the store needed one.
    pub cut: Option<Cut>,
    /// What the boot after the repair found and did (the quarantining).
    pub report: Report,
}

/// The cut a repair made of damaged history.
#[derive(Debug)]
pub struct Cut {
    /// The damage that was cut.
    pub corruption: Corruption,
    /// The generation written, holding the trusted prefix plus the repair record.
    pub generation: u32,
    /// Per stream, the fence: positions at or below it are never assigned again.
    pub fences: BTreeMap<String, u64>,
    /// Segment files read for the positions they hold (unclaimed ones, wherever they lie), each
    /// with what its own directory says it holds.
    pub files_read: Vec<FileHolds>,
    /// Files that could not be read as segments (torn temps, tails): listed, not used.
    pub files_unreadable: Vec<String>,
    /// How the store was rebuilt from what survived damage in the part written whole; `None`
    /// when the trusted prefix was kept and the rest cut.
    pub rebuilt: Option<WayBack>,
}

/// A manifest generation a repair sets aside: it is above the store's whole one and is not a
/// whole manifest ([`StrayManifests`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetAside {
    /// The generation and what is wrong with it.
    pub stray: StrayGeneration,
    /// Its name inside `quarantine/`.
    pub to: String,
    /// Whether `quarantine/` already holds its bytes under `to` (a set-aside a crash cut short
    /// between its two directory syncs): then its name in the root is only dropped.
    pub already_kept: bool,
}

/// What [`plan_repair`] would do, computed without changing anything.
#[derive(Debug)]
pub struct RepairPlan {
    /// Manifest generations above the store's whole one that are not whole manifests: moved into
    /// quarantine first, so the store goes on from the whole one.
    pub set_aside: Vec<SetAside>,
    /// The cut of damaged history the store needs (once they are set aside), if any.
    pub cut: Option<CutPlan>,
}

/// What a cut of damaged history would do.
#[derive(Debug)]
pub struct CutPlan {
    /// The damage a repair would cut.
    pub corruption: Corruption,
    /// The current (damaged) generation.
    pub generation: u32,
    /// The state of the trusted prefix.
    catalog: Catalog,
    /// The trusted prefix's bytes: its frame boundaries are the last the repaired store's
    /// lineage keeps of the damaged generation (nothing after the cut is its history).
    prefix: Vec<u8>,
    /// The record appended to the prefix's state.
    pub record: Record,
    /// Per stream, the fence the record sets.
    pub fences: BTreeMap<String, u64>,
    /// Segment files read for their positions, with what each holds.
    pub files_read: Vec<FileHolds>,
    /// Files that could not be read as segments.
    pub files_unreadable: Vec<String>,
    /// When the damage lay in the part written whole and something survived to rebuild the
    /// store from: how it is rebuilt (`None`: the prefix is kept and the rest cut).
    pub rebuilt: Option<WayBack>,
}

/// Plans the repair of a store that boot refuses because its manifest history is damaged, or
/// because generations above its whole one are not whole manifests, changing nothing. A store
/// that boots is refused with [`RecoverError::NothingToRepair`]; other errors are boot's own.
pub fn plan_repair(vfs: &dyn Vfs) -> Result<RepairPlan, RecoverError> {
    let (set_aside, corruption) = match inspect(vfs) {
        Ok(_) => return Err(RecoverError::NothingToRepair),
        Err(RecoverError::ManifestCorrupt(corruption)) => (Vec::new(), Some(*corruption)),
        Err(RecoverError::StrayManifest(strays)) => {
            let set_aside = plan_set_aside(vfs, &strays)?;
            // What boot finds once they are gone: the whole generation may still hold damage.
            match inspect_up_to(vfs, strays.whole) {
                Ok(_) => (set_aside, None),
                Err(RecoverError::ManifestCorrupt(corruption)) => (set_aside, Some(*corruption)),
                Err(other) => return Err(other),
            }
        }
        Err(other) => return Err(other),
    };
    let cut = corruption.map(|c| plan_cut(vfs, c)).transpose()?;
    Ok(RepairPlan { set_aside, cut })
}

/// Plans the mending of damaged history: the state rebuilt from what survives in the part
/// written whole ([`WayBack`]), or else the trusted prefix's state, plus the repair record.
fn plan_cut(vfs: &dyn Vfs, corruption: Corruption) -> Result<CutPlan, RecoverError> {
    let generation =
        parse_manifest_name(&corruption.file).ok_or_else(|| RecoverError::RepairRefused {
            reason: format!("{} is not a manifest name", corruption.file),
        })?;
    let bytes = read_manifest(vfs, generation)?;
    if let Some(whole) = &corruption.whole
        && !matches!(whole.way_back, WayBack::Cut { .. })
    {
        let whole = whole.clone();
        return plan_rebuild(vfs, corruption, &whole, generation, &bytes);
    }
    let prefix_len = usize::try_from(corruption.offset)
        .unwrap_or(usize::MAX)
        .min(bytes.len());
    let mut catalog = Catalog::new();
    for record in parse_log(&bytes[..prefix_len]).records {
        // Inspection replayed exactly these frames; it stopped at the first it could not.
        catalog
            .apply(&record)
            .map_err(|e| RecoverError::RepairRefused {
                reason: format!("the trusted prefix no longer replays: {e}"),
            })?;
    }
    let cut_high = corruption.recorded_high();
    let cut_names = corruption.name_high();
    let lost: Vec<(String, u64)> = corruption
        .losses()
        .iter()
        .filter_map(|(stream, loss)| loss.positions.map(|[_, hi]| (stream.clone(), hi)))
        .collect();
    let fenced = fence_record(vfs, &catalog, cut_high.into_iter().chain(lost), cut_names)?;
    Ok(CutPlan {
        corruption,
        generation,
        catalog,
        prefix: bytes[..prefix_len].to_vec(),
        record: fenced.record,
        fences: fenced.fences,
        files_read: fenced.evidence.read,
        files_unreadable: fenced.evidence.unreadable,
        rebuilt: None,
    })
}

/// Plans a rebuild from what survives damage in the part written whole: nothing is cut but what
/// lies past a second failure, whose positions (and those of every unclaimed file) are fenced.
fn plan_rebuild(
    vfs: &dyn Vfs,
    corruption: Corruption,
    whole: &WholeDamage,
    generation: u32,
    bytes: &[u8],
) -> Result<CutPlan, RecoverError> {
    let log_version = if whole.header {
        LOG_VERSION
    } else {
        check_header(bytes).unwrap_or(LOG_VERSION)
    };
    let preamble = if whole.header {
        None
    } else {
        parse_log(bytes)
            .records
            .first()
            .and_then(preamble_of)
            .copied()
    };
    let damaged = Damaged {
        generation,
        bytes,
        log_version,
        offset: corruption.offset,
        preamble,
        header: whole.header,
    };
    // Inspection found this way back a moment ago, under the same lock.
    let rebuilt = rebuild(vfs, &damaged)?.map_err(|why| RecoverError::RepairRefused {
        reason: format!("the way back inspection found is gone: {why}"),
    })?;
    let (record, fences, evidence) = if rebuilt.beyond.is_empty() {
        // Every record is back: nothing to fence, and the watermarks are the records' own.
        (Record::default(), BTreeMap::new(), Evidence::default())
    } else {
        let cut_names = rebuilt
            .beyond
            .iter()
            .flat_map(|f| &f.record.entries)
            .filter_map(|e| match e {
                Entry::AddFile(file) | Entry::Merge { file, .. } => Some(file.name),
                Entry::NameHigh(name) => Some(*name),
                _ => None,
            })
            .max()
            .unwrap_or(0);
        let fenced = fence_record(
            vfs,
            &rebuilt.catalog,
            recorded_high(&rebuilt.beyond),
            cut_names,
        )?;
        (fenced.record, fenced.fences, fenced.evidence)
    };
    Ok(CutPlan {
        corruption,
        generation,
        catalog: rebuilt.catalog,
        prefix: bytes[..rebuilt.kept_len.min(bytes.len())].to_vec(),
        record,
        fences,
        files_read: evidence.read,
        files_unreadable: evidence.unreadable,
        rebuilt: Some(rebuilt.way_back),
    })
}

/// A repair record and what it was made from.
struct Fenced {
    record: Record,
    fences: BTreeMap<String, u64>,
    evidence: Evidence,
}

/// The record a repair appends to `catalog` (the state it keeps) so that no position that was
/// ever acknowledged is assigned again: a fence per stream at the highest position in
/// `recorded` (what the records it cannot keep say) or in any segment file `catalog` does not
/// claim, the watermark of each stream still declared raised to it, and the highest name raised
/// above `cut_names` and every unclaimed file.
fn fence_record(
    vfs: &dyn Vfs,
    catalog: &Catalog,
    recorded: impl IntoIterator<Item = (String, u64)>,
    cut_names: FileName,
) -> Result<Fenced, RecoverError> {
    let mut fences: BTreeMap<String, u64> = BTreeMap::new();
    let mut raise = |stream: &str, position: u64| {
        // Only a legal stream id can be fenced (or ever declared); a file naming anything else
        // holds no rows a stream could reuse positions of.
        if validate_label(stream).is_err() {
            return;
        }
        let fence = fences.entry(stream.to_owned()).or_insert(position);
        *fence = (*fence).max(position);
    };
    for (stream, hi) in recorded {
        raise(&stream, hi);
    }
    let evidence = read_evidence(vfs, catalog)?;
    for (stream, hi) in &evidence.highest {
        raise(stream, *hi);
    }

    let mut entries = Vec::new();
    for (stream, &fence) in &fences {
        if catalog.stream(stream).is_some() && catalog.watermark(stream) < Some(fence) {
            entries.push(Entry::Watermark {
                stream: stream.clone(),
                position: fence,
            });
        }
        entries.push(Entry::Fence {
            stream: stream.clone(),
            position: fence,
        });
    }
    let name_high = cut_names.max(evidence.name_high);
    if name_high > catalog.name_high() {
        entries.push(Entry::NameHigh(name_high.min(FileName::MAX - 1)));
    }
    Ok(Fenced {
        record: Record { entries },
        fences,
        evidence,
    })
}

/// The names the stray generations get in quarantine: `stray-manifest-NNNNNN`, with a `.N`
/// suffix past a name taken by other bytes. One taken by the same bytes is a set-aside a crash
/// cut short, already kept.
fn plan_set_aside(vfs: &dyn Vfs, strays: &StrayManifests) -> Result<Vec<SetAside>, RecoverError> {
    let mut taken: BTreeSet<String> = if vfs
        .exists(QUARANTINE_DIR)
        .map_err(|e| RecoverError::io(QUARANTINE_DIR, e))?
    {
        vfs.list(QUARANTINE_DIR)
            .map_err(|e| RecoverError::io(QUARANTINE_DIR, e))?
            .into_iter()
            .map(|e| e.name)
            .collect()
    } else {
        BTreeSet::new()
    };
    let mut planned = Vec::new();
    for stray in &strays.strays {
        let base = format!("{STRAY_PREFIX}{}", stray.file);
        let mut to = base.clone();
        let mut suffix = 0;
        let mut already_kept = false;
        while taken.contains(&to) {
            if same_bytes(vfs, &stray.file, &format!("{QUARANTINE_DIR}/{to}"))? {
                already_kept = true;
                break;
            }
            suffix += 1;
            to = format!("{base}.{suffix}");
        }
        taken.insert(to.clone());
        planned.push(SetAside {
            stray: stray.clone(),
            to,
            already_kept,
        });
    }
    Ok(planned)
}

/// Repairs a store that boot refuses for damaged manifest history or stray generations: see
/// the module docs. Takes the store's lock, so a store a process has open is refused with
/// [`RecoverError::Locked`].
pub fn repair(vfs: &dyn Vfs) -> Result<Repaired, RecoverError> {
    // The same look before the lock as boot's: a folder that is not a store gets no LOCK.
    plan_repair(vfs)?;
    let _lock = vfs.lock().map_err(|e| match e.kind() {
        io::ErrorKind::WouldBlock => RecoverError::Locked,
        _ => RecoverError::io(LOCK_FILE, e),
    })?;
    // Planned again under the lock: nothing may have changed it since, but only this one counts.
    let plan = plan_repair(vfs)?;
    for aside in &plan.set_aside {
        set_aside(vfs, aside)?;
    }
    let cut = plan.cut.map(|cut| write_cut(vfs, cut)).transpose()?;
    // The ordinary boot now quarantines the damaged generation (whole) and every file the new
    // one does not claim.
    let healed = inspect(vfs)?;
    heal(vfs, &healed)?;
    Ok(Repaired {
        set_aside: plan.set_aside,
        cut,
        report: healed.report,
    })
}

/// Moves a stray generation into quarantine, the new name made durable before the old one goes
/// (a crash between leaves both names, which the next repair recognises as one file kept).
fn set_aside(vfs: &dyn Vfs, aside: &SetAside) -> Result<(), RecoverError> {
    let from = &aside.stray.file;
    if aside.already_kept {
        vfs.remove(from).map_err(|e| RecoverError::io(from, e))?;
    } else {
        if !vfs
            .exists(QUARANTINE_DIR)
            .map_err(|e| RecoverError::io(QUARANTINE_DIR, e))?
        {
            vfs.create_dir(QUARANTINE_DIR)
                .map_err(|e| RecoverError::io(QUARANTINE_DIR, e))?;
            vfs.sync_dir("").map_err(|e| RecoverError::io("", e))?;
        }
        let dest = format!("{QUARANTINE_DIR}/{}", aside.to);
        vfs.rename_noreplace(from, &dest)
            .map_err(|e| RecoverError::io(from, e))?;
        vfs.sync_dir(QUARANTINE_DIR)
            .map_err(|e| RecoverError::io(QUARANTINE_DIR, e))?;
    }
    vfs.sync_dir("").map_err(|e| RecoverError::io("", e))
}

/// Writes the new generation a cut plans: the trusted prefix's state plus the repair record.
fn write_cut(vfs: &dyn Vfs, plan: CutPlan) -> Result<Cut, RecoverError> {
    let next = plan.generation + 1;
    if next > MANIFEST_GENERATION_MAX {
        return Err(RecoverError::RepairRefused {
            reason: "manifest generations are exhausted".to_owned(),
        });
    }
    let mut catalog = plan.catalog;
    catalog
        .apply(&plan.record)
        .map_err(|e| RecoverError::RepairRefused {
            reason: format!("the repair record does not apply: {e}"),
        })?;
    keep_leftover_temp(vfs, &manifest_name(next))?;
    let records = split_record(
        catalog.snapshot_after(plan.generation, &plan.prefix, LINEAGE_STATES_DEFAULT),
        FRAME_BODY_MAX / 2,
    );
    // Taken from no whole generation (the one it mends is damaged), so it names none to keep.
    drop(ManifestWriter::create(vfs, next, None, &records)?);
    Ok(Cut {
        corruption: plan.corruption,
        generation: next,
        fences: plan.fences,
        files_read: plan.files_read,
        files_unreadable: plan.files_unreadable,
        rebuilt: plan.rebuilt,
    })
}

/// A temp of the manifest generation about to be written, left by a repair that crashed, is
/// moved into quarantine first (evidence is never removed), so the new write can take its name.
fn keep_leftover_temp(vfs: &dyn Vfs, name: &str) -> Result<(), RecoverError> {
    let from = format!("{TMP_DIR}/{name}");
    if !vfs.exists(&from).map_err(|e| RecoverError::io(&from, e))? {
        return Ok(());
    }
    let taken: BTreeSet<String> = vfs
        .list(QUARANTINE_DIR)
        .map_err(|e| RecoverError::io(QUARANTINE_DIR, e))?
        .into_iter()
        .map(|e| e.name)
        .collect();
    let base = format!("tmp-{name}");
    let mut to = base.clone();
    let mut suffix = 0;
    while taken.contains(&to) {
        suffix += 1;
        to = format!("{base}.{suffix}");
    }
    let dest = format!("{QUARANTINE_DIR}/{to}");
    vfs.rename_noreplace(&from, &dest)
        .map_err(|e| RecoverError::io(&from, e))?;
    vfs.sync_dir(QUARANTINE_DIR)
        .map_err(|e| RecoverError::io(QUARANTINE_DIR, e))?;
    vfs.sync_dir(TMP_DIR)
        .map_err(|e| RecoverError::io(TMP_DIR, e))?;
    Ok(())
}

/// What the files no trusted record claims say about positions and names.
#[derive(Default)]
struct Evidence {
    /// Per stream, the highest position any of them holds.
    highest: BTreeMap<String, u64>,
    /// The highest segment number among them.
    name_high: FileName,
    read: Vec<FileHolds>,
    unreadable: Vec<String>,
}

/// What one segment file no trusted record claims holds, by its own directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileHolds {
    /// The file, relative to the store root.
    pub path: String,
    /// Per stream: rows, and the lowest and highest position.
    pub streams: BTreeMap<String, (u64, [u64; 2])>,
}

/// Opens every file in `seg/` the prefix does not claim, and every file in `tmp/` and
/// `quarantine/`, as a segment, and reads the positions its own directory records. A file that
/// does not open as a segment (a torn temp, a manifest tail) is listed and passed over: a torn
/// temp was never claimed, so none of its rows was acknowledged.
fn read_evidence(vfs: &dyn Vfs, catalog: &Catalog) -> Result<Evidence, RecoverError> {
    let mut evidence = Evidence {
        highest: BTreeMap::new(),
        name_high: 0,
        read: Vec::new(),
        unreadable: Vec::new(),
    };
    for dir in [SEG_DIR, TMP_DIR, QUARANTINE_DIR] {
        if !vfs.exists(dir).map_err(|e| RecoverError::io(dir, e))? {
            continue;
        }
        let entries = vfs.list(dir).map_err(|e| RecoverError::io(dir, e))?;
        for entry in entries.iter().filter(|e| !e.is_dir) {
            let number = crate::plan::quarantined_number(&entry.name).map(|n| n.number);
            let claimed = dir == SEG_DIR
                && NumberedName::parse(&entry.name)
                    .is_some_and(|n| catalog.file(n.number).is_some());
            if claimed {
                continue;
            }
            if let Some(number) = number {
                evidence.name_high = evidence.name_high.max(number);
            }
            let path = format!("{dir}/{}", entry.name);
            let Ok(bytes) = vfs.map(&path) else {
                evidence.unreadable.push(path);
                continue;
            };
            let Ok(reader) = SegmentReader::open(&path, bytes) else {
                evidence.unreadable.push(path);
                continue;
            };
            let mut holds = FileHolds {
                path: path.clone(),
                streams: BTreeMap::new(),
            };
            for part in reader.partitions() {
                let [lo, hi] = part.entry.positions;
                let held = holds
                    .streams
                    .entry(part.entry.stream.clone())
                    .or_insert((0, [lo, hi]));
                held.0 = held.0.saturating_add(part.entry.n_rows);
                held.1 = [held.1[0].min(lo), held.1[1].max(hi)];
                let highest = evidence
                    .highest
                    .entry(part.entry.stream.clone())
                    .or_insert(hi);
                *highest = (*highest).max(hi);
            }
            evidence.read.push(holds);
        }
    }
    Ok(evidence)
}
