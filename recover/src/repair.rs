//! The operator's repair of a manifest whose history is damaged ([`Corruption`]).
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
    Catalog, Entry, FRAME_BODY_MAX, FileName, LINEAGE_STATES_DEFAULT, Record, parse_log,
    split_record, validate_label,
};
use strata_segment::names::{
    MANIFEST_GENERATION_MAX, NumberedName, QUARANTINE_DIR, SEG_DIR, TMP_DIR, manifest_name,
    parse_manifest_name,
};
use strata_segment::vfs::Vfs;
use strata_segment::{ManifestWriter, SegmentReader, read_manifest};

use crate::corruption::Corruption;
use crate::error::RecoverError;
use crate::heal::heal;
use crate::plan::{LOCK_FILE, inspect};
use crate::report::Report;

/// What a repair found and did.
#[derive(Debug)]
pub struct Repaired {
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
    /// What the boot after the repair found and did (the quarantining).
    pub report: Report,
}

/// What [`plan_repair`] would do, computed without changing anything.
#[derive(Debug)]
pub struct RepairPlan {
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
}

/// Plans the repair of a store whose manifest history is damaged, changing nothing. A store that
/// boots is refused with [`RecoverError::NothingToRepair`]; other errors are boot's own.
pub fn plan_repair(vfs: &dyn Vfs) -> Result<RepairPlan, RecoverError> {
    let corruption = match inspect(vfs) {
        Ok(_) => return Err(RecoverError::NothingToRepair),
        Err(RecoverError::ManifestCorrupt(corruption)) => *corruption,
        Err(other) => return Err(other),
    };
    let generation =
        parse_manifest_name(&corruption.file).ok_or_else(|| RecoverError::RepairRefused {
            reason: format!("{} is not a manifest name", corruption.file),
        })?;
    let bytes = read_manifest(vfs, generation)?;
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
    for (stream, hi) in corruption.recorded_high() {
        raise(&stream, hi);
    }
    for (stream, loss) in corruption.losses() {
        if let Some([_, hi]) = loss.positions {
            raise(stream, hi);
        }
    }
    let evidence = read_evidence(vfs, &catalog)?;
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
    let name_high = corruption.name_high().max(evidence.name_high);
    if name_high > catalog.name_high() {
        entries.push(Entry::NameHigh(name_high.min(FileName::MAX - 1)));
    }
    Ok(RepairPlan {
        corruption,
        generation,
        catalog,
        prefix: bytes[..prefix_len].to_vec(),
        record: Record { entries },
        fences,
        files_read: evidence.read,
        files_unreadable: evidence.unreadable,
    })
}

/// Repairs a store whose manifest history is damaged: see the module docs. Takes the store's
/// lock, so a store a process has open is refused with [`RecoverError::Locked`].
pub fn repair(vfs: &dyn Vfs) -> Result<Repaired, RecoverError> {
    // The same look before the lock as boot's: a folder that is not a store gets no LOCK.
    plan_repair(vfs)?;
    let _lock = vfs.lock().map_err(|e| match e.kind() {
        io::ErrorKind::WouldBlock => RecoverError::Locked,
        _ => RecoverError::io(LOCK_FILE, e),
    })?;
    // Planned again under the lock: nothing may have changed it since, but only this one counts.
    let plan = plan_repair(vfs)?;
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
    drop(ManifestWriter::create(vfs, next, &records)?);
    // The ordinary boot now quarantines the damaged generation (whole) and every file the new
    // one does not claim.
    let healed = inspect(vfs)?;
    heal(vfs, &healed)?;
    Ok(Repaired {
        corruption: plan.corruption,
        generation: next,
        fences: plan.fences,
        files_read: plan.files_read,
        files_unreadable: plan.files_unreadable,
        report: healed.report,
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
