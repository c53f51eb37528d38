//! `engine-fsck`'s library half: a read-only look at a store.
//!
//! [`check`] runs the same [`crate::inspect`] that boot carries out, so what it says boot would do
//! is what boot does. It never changes anything and never takes the store's lock: it lists
//! folders and reads the manifest (and, with `verify`, every recorded segment), nothing more.
//! Removing evidence from `quarantine/` is a separate, explicit call ([`purge_quarantine`]) that
//! only the command line's `quarantine --purge --yes` reaches.
//!
//! The report is one value, [`FsckReport`], printed for people by [`render`] and for machines as
//! JSON (its `Serialize` form, documented field by field in `docs/fsck.md`).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::{self, Write as _};
use std::io;

use serde::ser::SerializeStruct as _;
use serde::{Serialize, Serializer};
use strata_index::{
    Catalog, FileEntry, FileName, PartitionEntry, PartitionView, Tier, TrackKey, Written,
};
use strata_segment::names::{NumberedName, QUARANTINE_DIR, SEG_DIR, manifest_name};
use strata_segment::vfs::{RenameMode, Vfs};
use strata_segment::{SegmentError, SegmentReader};

use crate::plan::{LOCK_FILE, inspect, quarantine_reason};
use crate::retention_file::{
    RETENTION_FILE, RetentionFile, StreamRetention, read_retention, undeclared_problem,
    undeclared_streams,
};
use crate::{
    Action, Corruption, Finding, FindingKind, RecoverError, Report, STRAY_PREFIX, StrayManifests,
};

/// The verdict on a store, with the process exit code each maps to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// No finding and an empty quarantine. Exit code 0.
    Clean,
    /// At least one finding, or evidence in quarantine. Exit code 1.
    Findings,
    /// Not a store, no usable manifest, or the file system failed. Exit code 2.
    Unusable,
}

impl Status {
    /// The process exit code: 0 clean, 1 findings, 2 unusable.
    pub fn exit_code(self) -> u8 {
        match self {
            Status::Clean => 0,
            Status::Findings => 1,
            Status::Unusable => 2,
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Status::Clean => "clean",
            Status::Findings => "findings",
            Status::Unusable => "unusable",
        })
    }
}

/// Everything `engine-fsck STORE` reports. Serialized as-is for `--json`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FsckReport {
    /// The store's path as the caller named it; `None` when checked through a bare [`Vfs`].
    pub store: Option<String>,
    /// The verdict.
    pub status: Status,
    /// Why the store is unusable; `None` otherwise.
    pub error: Option<String>,
    /// The current manifest generation and its trusted prefix; `None` when unusable.
    pub manifest: Option<ManifestSummary>,
    /// How the file system renames without replacing (`RenameMode::name`), as far as this look
    /// learnt it: `unprobed` until something renamed (a check renames nothing).
    pub rename: &'static str,
    /// What boot would find and do, then (with `verify`) every digest that failed.
    pub findings: Vec<Finding>,
    /// The evidence already in `quarantine/`, by name.
    pub quarantine: Vec<QuarantineEntry>,
    /// The store's `retention.json` (the retention the command line applies); `None` when
    /// unusable.
    pub retention: Option<RetentionSummary>,
    /// Per declared stream, in id order: its declaration, watermark, retention and partitions.
    pub streams: Vec<StreamSummary>,
    /// The store's segment files: live now, and ever added by barriers and by compaction;
    /// `None` when unusable.
    pub files: Option<FilesSummary>,
    /// Per live recorded file, whether it verified; `None` unless `verify` was asked for.
    pub verified: Option<Vec<VerifiedFile>>,
}

impl FsckReport {
    /// The report on a store that cannot be looked at: status `unusable` with `error`.
    pub fn unusable(error: impl Into<String>) -> FsckReport {
        FsckReport {
            store: None,
            status: Status::Unusable,
            error: Some(error.into()),
            manifest: None,
            rename: RenameMode::Unprobed.name(),
            findings: Vec::new(),
            quarantine: Vec::new(),
            retention: None,
            streams: Vec::new(),
            files: None,
            verified: None,
        }
    }

    /// The process exit code: 0 clean, 1 findings, 2 unusable.
    pub fn exit_code(&self) -> u8 {
        self.status.exit_code()
    }
}

/// The current manifest and how much of it is trusted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ManifestSummary {
    /// The current generation (the file is `manifest-NNNNNN`).
    pub generation: u32,
    /// Its length on disk, in bytes.
    pub length: u64,
    /// The length of its trusted prefix, in bytes; boot cuts the manifest to this.
    pub trusted_length: u64,
    /// Frames in the trusted prefix.
    pub frames: usize,
    /// The generation kept beside it: the one its snapshot was taken from, which a repair takes
    /// the snapshot again from should this one's be damaged; `None` for a generation taken from
    /// none (the store's first, a repair's, an earlier build's).
    pub previous: Option<u32>,
}

/// The store's segment files, from the catalog alone: what is live now, and every file ever
/// added, by what added it. Serialized with the write amplification derived from the two byte
/// counts, so the figure and its parts never disagree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FilesSummary {
    /// Files with any live tier.
    pub live_files: u64,
    /// Their bytes.
    pub live_bytes: u64,
    /// Every file ever added, live or retired: barrier files apart from compaction outputs.
    pub written: Written,
}

impl FilesSummary {
    fn of(catalog: &Catalog) -> FilesSummary {
        let (live_files, live_bytes) = catalog
            .live_files()
            .fold((0, 0), |(n, bytes): (u64, u64), f| {
                (n + 1, bytes.saturating_add(f.len))
            });
        FilesSummary {
            live_files,
            live_bytes,
            written: catalog.written(),
        }
    }
}

impl Serialize for FilesSummary {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("FilesSummary", 7)?;
        s.serialize_field("live_files", &self.live_files)?;
        s.serialize_field("live_bytes", &self.live_bytes)?;
        s.serialize_field("barrier_files", &self.written.barrier_files)?;
        s.serialize_field("barrier_bytes", &self.written.barrier_bytes)?;
        s.serialize_field("merge_files", &self.written.merge_files)?;
        s.serialize_field("merge_bytes", &self.written.merge_bytes)?;
        s.serialize_field("write_amplification", &self.written.write_amplification())?;
        s.end()
    }
}

/// One entry of `quarantine/`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct QuarantineEntry {
    /// Its name inside `quarantine/` (a folder's ends in `/`).
    pub name: String,
    /// Its size in bytes (0 for a folder).
    pub bytes: u64,
    /// Why it is there, read from its name.
    pub reason: String,
}

/// The store's `retention.json`: whether it is there, and whether it parses and names only
/// declared streams. The engine never reads it (an embedder sets retention in code); `strata
/// compact` and `strata ingest` apply it, and refuse to run while it is malformed or names a
/// stream the store does not declare.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RetentionSummary {
    /// The file's name in the store's root: `retention.json`.
    pub file: &'static str,
    /// Whether the file exists.
    pub present: bool,
    /// What is wrong with it, when it cannot be read or parsed or names a stream the store does
    /// not declare; `None` otherwise.
    pub error: Option<String>,
}

/// One field of a stream's declaration.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FieldSummary {
    /// The field's name.
    pub name: String,
    /// Its kind: `u64`, `i64`, `f64`, `str` or `bytes`.
    pub kind: String,
}

/// One declared stream.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StreamSummary {
    /// The stream id.
    pub id: String,
    /// Its fields in declaration order.
    pub fields: Vec<FieldSummary>,
    /// The names of its track fields, outermost first.
    pub track: Vec<String>,
    /// The name of its axis field, if it declares one.
    pub axis: Option<String>,
    /// Its level grid as declared, `[base, fanout]`: level `k` has cells `base * fanout^k`
    /// wide. Which levels each file stores is per partition (`levels_stored_from`).
    pub ladder: Option<[u64; 2]>,
    /// The position through which it is durable; `None` before its first seal.
    pub watermark: Option<u64>,
    /// Its entry in `retention.json`; `None` when the file does not name it, is absent, or is
    /// malformed (see [`FsckReport::retention`]). Retention set in code is not seen here.
    pub retention: Option<StreamRetention>,
    /// Its partitions with any live tier or a recorded floor, in track-key order: a track
    /// retired whole (`strata retire`) is listed with no live file and its floors.
    pub partitions: Vec<PartitionSummary>,
}

/// One partition (a stream's full track tuple) with a live tier.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PartitionSummary {
    /// The track's labels, outermost first (empty for a stream without track fields).
    pub track: Vec<String>,
    /// Rows held live in raw segments.
    pub rows: u64,
    /// Files holding any live tier of it: what a read of the whole partition opens.
    pub live_files: u64,
    /// Its bytes in those files (its own extent in each; a barrier file holds other
    /// partitions too).
    pub live_bytes: u64,
    /// Inclusive position range of the live raw segments; `None` when no raw rows are live.
    pub positions: Option<[u64; 2]>,
    /// Inclusive axis range of the segments with any live tier; `None` without an axis.
    pub axis: Option<[u64; 2]>,
    /// The files holding its live raw rows, as 12-digit names, ascending.
    pub raw_files: Vec<String>,
    /// The files holding any of its live level tiers, as 12-digit names, ascending.
    pub level_files: Vec<String>,
    /// The lowest and highest level its live level files store whole: a level beneath a
    /// file's is folded from that file's rows when read (`LevelStorage::Adaptive`), and
    /// answers the same cells. `None` without level files, or if a file's directory cannot be
    /// read.
    pub levels_stored_from: Option<[u8; 2]>,
    /// The raw floor recorded (`Floor` records only, never the files present): the lowest
    /// position still held; `None` until one is recorded.
    pub raw_floor: Option<u64>,
    /// The raw floor's axis value: the lowest still held (`None` without an axis, or until
    /// one is recorded).
    pub raw_floor_axis: Option<u64>,
    /// Per level with a recorded floor, the lowest axis value its cells still hold (a record
    /// that raises any level floor restates every level from 0 up, so most are 0 until that
    /// level loses a cell).
    pub level_floors: BTreeMap<u8, u64>,
}

/// The outcome of verifying one recorded file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct VerifiedFile {
    /// The file, relative to the store root (`seg/NNNNNNNNNNNN.seg`).
    pub file: String,
    /// Whether every checksum, the whole-file digest and the length match the record.
    pub ok: bool,
    /// What failed.
    pub error: Option<String>,
    /// Where in the file, when the failure is about some bytes of it.
    pub offset: Option<u64>,
}

/// Looks at the store in `vfs` without changing anything (no lock, no write, no rename).
///
/// With `verify`, every live recorded file is read whole: its length, its whole-file digest
/// against the record, and every block's checksum. A failure is a finding naming the file and
/// the offset of the bytes that failed.
pub fn check(vfs: &dyn Vfs, verify: bool) -> FsckReport {
    match try_check(vfs, verify) {
        Ok(report) => report,
        Err(RecoverError::ManifestCorrupt(corruption)) => damaged(vfs, &corruption),
        Err(RecoverError::StrayManifest(strays)) => stray(vfs, &strays),
        Err(error) => FsckReport::unusable(error.to_string()),
    }
}

/// The report on a store whose manifest history is damaged: unusable, with the damage as a
/// finding (where, and what a cut would drop) and the quarantine as it stands.
fn damaged(vfs: &dyn Vfs, corruption: &Corruption) -> FsckReport {
    let mut report = FsckReport::unusable(corruption.to_string());
    report.findings.push(Finding {
        kind: FindingKind::DamagedHistory,
        file: corruption.file.clone(),
        offset: Some(corruption.offset),
        bytes: Some(corruption.manifest_len.saturating_sub(corruption.offset)),
        reason: format!("{}; {}", corruption.fault, corruption.describe_repair()),
        action: Action::RefuseUntilRepaired,
    });
    // The listing is a courtesy here: an error reading it leaves the verdict as it is.
    report.quarantine = quarantine_entries(vfs).unwrap_or_default();
    report
}

/// The report on a store whose highest manifest generations are not whole manifests: unusable,
/// each of them a finding, with the quarantine as it stands.
fn stray(vfs: &dyn Vfs, strays: &StrayManifests) -> FsckReport {
    let mut report = FsckReport::unusable(strays.to_string());
    for stray in &strays.strays {
        report.findings.push(Finding {
            kind: FindingKind::StrayManifest,
            file: stray.file.clone(),
            offset: Some(stray.fault.offset),
            bytes: Some(stray.len),
            reason: format!(
                "{}, above {}{}",
                stray.what(),
                manifest_name(strays.whole),
                if strays.whole_parses {
                    ", which is whole"
                } else {
                    ""
                }
            ),
            action: Action::RefuseUntilSetAside {
                to: format!("{STRAY_PREFIX}{}", stray.file),
            },
        });
    }
    report.quarantine = quarantine_entries(vfs).unwrap_or_default();
    report
}

fn try_check(vfs: &dyn Vfs, verify: bool) -> Result<FsckReport, RecoverError> {
    let plan = inspect(vfs)?;
    let quarantine = quarantine_entries(vfs)?;
    let (retention, retention_file) = retention_summary(vfs, &plan.catalog);
    let mut findings = plan.report.findings;
    let verified = verify.then(|| verify_files(vfs, &plan.catalog, &mut findings));
    let status = if findings.is_empty() && quarantine.is_empty() {
        Status::Clean
    } else {
        Status::Findings
    };
    Ok(FsckReport {
        store: None,
        status,
        error: None,
        manifest: Some(ManifestSummary {
            generation: plan.report.generation,
            length: plan.report.manifest_len,
            trusted_length: plan.report.trusted_len,
            frames: plan.report.n_frames,
            previous: plan.report.previous,
        }),
        rename: vfs.rename_mode().name(),
        findings,
        quarantine,
        retention: Some(retention),
        streams: plan
            .catalog
            .streams()
            .map(|d| stream_summary(vfs, &plan.catalog, &d.id, retention_file.as_ref()))
            .collect(),
        files: Some(FilesSummary::of(&plan.catalog)),
        verified,
    })
}

// ---- quarantine ----

/// The entries of the store's `quarantine/`, by name, with their sizes and reasons. An absent
/// folder lists nothing (`check` reports it as a missing folder).
pub fn list_quarantine(vfs: &dyn Vfs) -> Result<Vec<QuarantineEntry>, RecoverError> {
    require_store(vfs)?;
    quarantine_entries(vfs)
}

/// Removes every file in the store's `quarantine/` and syncs the folder; answers how many.
///
/// The evidence is gone for good. Only the command line's `quarantine --purge --yes` calls this;
/// nothing else in strata removes evidence. It takes the store's lock, so it refuses a store that
/// a process has open ([`RecoverError::Locked`]). A folder inside `quarantine/` is not strata's
/// (boot only ever moves files there) and is left alone.
pub fn purge_quarantine(vfs: &dyn Vfs) -> Result<usize, RecoverError> {
    require_store(vfs)?;
    let _lock = vfs.lock().map_err(|e| match e.kind() {
        io::ErrorKind::WouldBlock => RecoverError::Locked,
        _ => RecoverError::io(LOCK_FILE, e),
    })?;
    if !vfs
        .exists(QUARANTINE_DIR)
        .map_err(|e| RecoverError::io(QUARANTINE_DIR, e))?
    {
        return Ok(0);
    }
    let entries = vfs
        .list(QUARANTINE_DIR)
        .map_err(|e| RecoverError::io(QUARANTINE_DIR, e))?;
    let mut n_removed = 0;
    for entry in entries.iter().filter(|e| !e.is_dir) {
        let path = format!("{QUARANTINE_DIR}/{}", entry.name);
        vfs.remove(&path).map_err(|e| RecoverError::io(&path, e))?;
        n_removed += 1;
    }
    if n_removed > 0 {
        vfs.sync_dir(QUARANTINE_DIR)
            .map_err(|e| RecoverError::io(QUARANTINE_DIR, e))?;
    }
    Ok(n_removed)
}

/// Refuses what [`check`] calls unusable (not a store, or no usable manifest), before anything
/// is listed or removed: evidence beside a broken manifest may be what a person needs to repair
/// it, so no purge goes near it.
fn require_store(vfs: &dyn Vfs) -> Result<(), RecoverError> {
    inspect(vfs).map(drop)
}

fn quarantine_entries(vfs: &dyn Vfs) -> Result<Vec<QuarantineEntry>, RecoverError> {
    let io = |e| RecoverError::io(QUARANTINE_DIR, e);
    if !vfs.exists(QUARANTINE_DIR).map_err(io)? {
        return Ok(Vec::new());
    }
    let mut entries = Vec::new();
    for entry in vfs.list(QUARANTINE_DIR).map_err(io)? {
        if entry.is_dir {
            entries.push(QuarantineEntry {
                name: format!("{}/", entry.name),
                bytes: 0,
                reason: "a folder: boot never puts one here".to_owned(),
            });
            continue;
        }
        let path = format!("{QUARANTINE_DIR}/{}", entry.name);
        let bytes = vfs.len(&path).map_err(|e| RecoverError::io(&path, e))?;
        let reason = quarantine_reason(&entry.name).to_owned();
        entries.push(QuarantineEntry {
            name: entry.name,
            bytes,
            reason,
        });
    }
    Ok(entries)
}

// ---- retention, streams, partitions and floors ----

/// Whether `retention.json` is there, parses and names only streams `catalog` declares (the
/// command line refuses it whole otherwise), and what it says.
fn retention_summary(
    vfs: &dyn Vfs,
    catalog: &Catalog,
) -> (RetentionSummary, Option<RetentionFile>) {
    let present = vfs.exists(RETENTION_FILE).unwrap_or(true);
    let (error, file) = match read_retention(vfs) {
        Ok(Some(file)) => {
            match undeclared_streams(&file, |id| catalog.stream(id).is_some()).first() {
                Some(stream) => (
                    Some(format!("{RETENTION_FILE} {}", undeclared_problem(stream))),
                    None,
                ),
                None => (None, Some(file)),
            }
        }
        Ok(None) => (None, None),
        Err(error) => (Some(error), None),
    };
    (
        RetentionSummary {
            file: RETENTION_FILE,
            present,
            error,
        },
        file,
    )
}

fn stream_summary(
    vfs: &dyn Vfs,
    catalog: &Catalog,
    id: &str,
    retention: Option<&RetentionFile>,
) -> StreamSummary {
    let decl = catalog.stream(id);
    let field_name = |idx: u16| {
        decl.and_then(|d| d.fields.get(usize::from(idx)))
            .map_or_else(|| format!("#{idx}"), |f| f.name.clone())
    };
    StreamSummary {
        id: id.to_owned(),
        fields: decl.map_or_else(Vec::new, |d| {
            d.fields
                .iter()
                .map(|f| FieldSummary {
                    name: f.name.clone(),
                    kind: f.kind.to_string(),
                })
                .collect()
        }),
        track: decl.map_or_else(Vec::new, |d| {
            d.track.iter().map(|&i| field_name(i)).collect()
        }),
        axis: decl.and_then(|d| d.axis).map(field_name),
        watermark: catalog.watermark(id),
        retention: retention.and_then(|file| file.get(id)).cloned(),
        ladder: decl.map(|d| [d.ladder.base, d.ladder.fanout]),
        partitions: partitions(vfs, catalog, id),
    }
}

/// The stream's partitions with a live tier, and those retired whole that kept floors, in
/// track-key order.
fn partitions(vfs: &dyn Vfs, catalog: &Catalog, id: &str) -> Vec<PartitionSummary> {
    let mut by_track: BTreeMap<&TrackKey, PartitionSummary> = catalog
        .partitions(id, &TrackKey::ROOT)
        .map(|view| (view.track(), partition_summary(vfs, catalog, id, view)))
        .collect();
    for (track, floors) in catalog.floors(id, &TrackKey::ROOT) {
        by_track.entry(track).or_insert_with(|| PartitionSummary {
            track: track.labels().map(str::to_owned).collect(),
            rows: 0,
            live_files: 0,
            live_bytes: 0,
            positions: None,
            axis: None,
            raw_files: Vec::new(),
            level_files: Vec::new(),
            levels_stored_from: None,
            raw_floor: floors.raw.map(|f| f.position),
            raw_floor_axis: floors.raw.and_then(|f| f.axis),
            level_floors: floors.levels.clone(),
        });
    }
    by_track.into_values().collect()
}

fn partition_summary(
    vfs: &dyn Vfs,
    catalog: &Catalog,
    id: &str,
    view: PartitionView<'_>,
) -> PartitionSummary {
    let raw: BTreeMap<FileName, &PartitionEntry> = view.segments(Tier::Raw).collect();
    // Levels retire coarsest-last, so a partition's live levels need not start at 0: look at
    // every level a file can store rather than stopping at the first empty one.
    let mut live_levels: BTreeMap<FileName, u16> = BTreeMap::new();
    for k in 0..=u8::MAX {
        for (name, _) in view.segments(Tier::Level(k)) {
            *live_levels.entry(name).or_default() += 1;
        }
    }
    let live = view.live_segments();
    let floors = catalog.floors_of(id, view.track());
    let raw_floor = floors.and_then(|f| f.raw);
    let live_bytes = live
        .iter()
        .fold(0, |sum: u64, (_, part, _)| sum.saturating_add(part.len));
    let positions = raw
        .values()
        .map(|p| p.positions)
        .reduce(|a, b| [a[0].min(b[0]), a[1].max(b[1])]);
    PartitionSummary {
        track: view.track().labels().map(str::to_owned).collect(),
        rows: raw
            .values()
            .fold(0, |sum: u64, p| sum.saturating_add(p.n_rows)),
        live_files: live.len() as u64,
        live_bytes,
        positions,
        axis: catalog.axis_range(id, view.track()),
        raw_files: raw.keys().map(|&n| file_number(n)).collect(),
        level_files: live_levels.keys().map(|&n| file_number(n)).collect(),
        levels_stored_from: levels_stored_from(vfs, &view, live_levels.keys().copied()),
        raw_floor: raw_floor.map(|f| f.position),
        raw_floor_axis: raw_floor.and_then(|f| f.axis),
        level_floors: floors.map(|f| f.levels.clone()).unwrap_or_default(),
    }
}

/// The lowest and highest level the partition's live level files store whole (each file's
/// partition record says; levels beneath are folded from its rows when read). Reads each file's
/// directory only; `None` without level files, or if one cannot be read (`--verify` reports it).
fn levels_stored_from(
    vfs: &dyn Vfs,
    view: &PartitionView<'_>,
    files: impl Iterator<Item = FileName>,
) -> Option<[u8; 2]> {
    let mut range: Option<[u8; 2]> = None;
    for name in files {
        let idx = view.part_idx(name)?;
        let path = NumberedName::segment(name).path_in(SEG_DIR);
        let mapped = vfs.map(&path).ok()?;
        let reader = SegmentReader::open(&path, mapped).ok()?;
        let from = reader.partitions().get(idx)?.stored_from;
        range = Some(range.map_or([from, from], |[lo, hi]| [lo.min(from), hi.max(from)]));
    }
    range
}

fn file_number(name: FileName) -> String {
    format!("{name:012}")
}

// ---- verify ----

/// Why one recorded file failed verification.
struct Problem {
    kind: FindingKind,
    offset: Option<u64>,
    bytes: Option<u64>,
    reason: String,
}

impl Problem {
    fn bad(offset: Option<u64>, reason: String) -> Problem {
        Problem {
            kind: FindingKind::BadChecksum,
            offset,
            bytes: None,
            reason,
        }
    }

    fn segment(error: &SegmentError) -> Problem {
        let offset = match error {
            SegmentError::Checksum { offset, .. } | SegmentError::Malformed { offset, .. } => {
                Some(*offset)
            }
            _ => None,
        };
        // The finding names the file already; the reason is what is wrong with it.
        let text = error.to_string();
        let reason = text
            .strip_prefix(&format!("{}: ", error.path()))
            .unwrap_or(&text);
        Problem::bad(offset, reason.to_owned())
    }
}

fn verify_files(
    vfs: &dyn Vfs,
    catalog: &Catalog,
    findings: &mut Vec<Finding>,
) -> Vec<VerifiedFile> {
    // Inspect already reported recorded files that are missing or the wrong length; verifying
    // them fails too, but the same file is not a second finding.
    let reported: BTreeSet<String> = findings.iter().map(|f| f.file.clone()).collect();
    let mut verified = Vec::new();
    for entry in catalog.live_files() {
        let file = NumberedName::segment(entry.name).path_in(SEG_DIR);
        match verify_file(vfs, &file, entry) {
            Ok(()) => verified.push(VerifiedFile {
                file,
                ok: true,
                error: None,
                offset: None,
            }),
            Err(problem) => {
                if !reported.contains(&file) {
                    findings.push(Finding {
                        kind: problem.kind,
                        file: file.clone(),
                        offset: problem.offset,
                        bytes: problem.bytes,
                        reason: problem.reason.clone(),
                        action: Action::KeepUnreadable,
                    });
                }
                verified.push(VerifiedFile {
                    file,
                    ok: false,
                    error: Some(problem.reason),
                    offset: problem.offset,
                });
            }
        }
    }
    verified
}

fn verify_file(vfs: &dyn Vfs, path: &str, entry: &FileEntry) -> Result<(), Problem> {
    let mapped = vfs.map(path).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => Problem {
            kind: FindingKind::MissingFile,
            offset: None,
            bytes: None,
            reason: "the manifest records it, and it is not there".to_owned(),
        },
        _ => Problem::bad(None, format!("cannot be read: {e}")),
    })?;
    let len = mapped.len() as u64;
    if len != entry.len {
        return Err(Problem {
            kind: FindingKind::WrongLength,
            offset: Some(len.min(entry.len)),
            bytes: Some(len.abs_diff(entry.len)),
            reason: format!("recorded as {} bytes, found {len}", entry.len),
        });
    }
    let reader = SegmentReader::open(path, mapped).map_err(|e| Problem::segment(&e))?;
    if reader.digest() != entry.digest {
        // The footer passed its own check, so this is a whole, different file under the name.
        return Err(Problem::bad(
            Some(len.saturating_sub(DIGEST_FROM_END)),
            format!(
                "the footer's digest {:#010x} is not the recorded {:#010x}",
                reader.digest(),
                entry.digest
            ),
        ));
    }
    reader.verify_all().map_err(|error| {
        // The whole-file digest fails before any block is looked at; the block whose own crc
        // fails says where the bad bytes are.
        let located = first_bad_block(&reader);
        Problem::segment(located.as_ref().unwrap_or(&error))
    })
}

/// The footer's digest field starts this many bytes before the end of a segment.
const DIGEST_FROM_END: u64 = 8;

/// The first block of `reader` whose checksum or contents fail, read through its accessors.
fn first_bad_block<B: std::ops::Deref<Target = [u8]>>(
    reader: &SegmentReader<B>,
) -> Option<SegmentError> {
    for (part_idx, part) in reader.partitions().iter().enumerate() {
        let columns = part
            .columns
            .iter()
            .map(|&(field, _)| reader.column(part_idx, field).err());
        let found = [
            reader.positions(part_idx).err(),
            reader.ordinals(part_idx).err(),
            reader.axis(part_idx).err(),
            reader.cells(part_idx, 0, 0, 0..=0).err(),
        ]
        .into_iter()
        .chain(columns)
        .flatten()
        .min_by_key(|e| match e {
            SegmentError::Checksum { offset, .. } | SegmentError::Malformed { offset, .. } => {
                *offset
            }
            _ => u64::MAX,
        });
        if found.is_some() {
            return found;
        }
    }
    None
}

// ---- human output ----

/// The report for a person: the verdict first, then the manifest, the findings (what boot would
/// do), the quarantine, the streams and the verification, in aligned columns.
pub fn render(report: &FsckReport) -> String {
    let mut out = String::new();
    // Writing into a String cannot fail.
    let _ = write_report(&mut out, report);
    out
}

fn write_report(out: &mut String, report: &FsckReport) -> fmt::Result {
    let store = report
        .store
        .as_deref()
        .map_or_else(String::new, |s| format!(" {}", clean(s)));
    writeln!(out, "strata store{store}: {}", verdict(report))?;
    let Some(manifest) = &report.manifest else {
        if !report.findings.is_empty() {
            write_findings(out, &report.findings)?;
            write_quarantine(out, &report.quarantine)?;
        }
        return Ok(());
    };
    write!(
        out,
        "manifest {}: {} bytes, {} trusted, {}",
        manifest_name(manifest.generation),
        manifest.length,
        manifest.trusted_length,
        count(manifest.frames, "frame", "frames")
    )?;
    if manifest.length > manifest.trusted_length {
        write!(
            out,
            " ({} bytes past the trusted prefix)",
            manifest.length - manifest.trusted_length
        )?;
    }
    if let Some(previous) = manifest.previous {
        write!(
            out,
            "; {} kept beside it (its snapshot was taken from it: the way back if it is damaged)",
            manifest_name(previous)
        )?;
    }
    writeln!(out)?;
    writeln!(out, "rename: {}", report.rename)?;
    write_findings(out, &report.findings)?;
    write_quarantine(out, &report.quarantine)?;
    write_retention_error(out, report.retention.as_ref())?;
    write_streams(out, report.retention.as_ref(), &report.streams)?;
    if let Some(files) = &report.files {
        write_files(out, files)?;
    }
    write_verified(out, report.verified.as_deref())
}

fn verdict(report: &FsckReport) -> String {
    match report.status {
        Status::Clean => "CLEAN".to_owned(),
        Status::Unusable => {
            format!(
                "UNUSABLE: {}",
                clean(report.error.as_deref().unwrap_or("unknown error"))
            )
        }
        Status::Findings => {
            let mut parts = Vec::new();
            match report.findings.len() {
                0 => {}
                1 => parts.push("1 FINDING".to_owned()),
                n => parts.push(format!("{n} FINDINGS")),
            }
            match report.quarantine.len() {
                0 => {}
                1 => parts.push("1 ENTRY IN QUARANTINE".to_owned()),
                n => parts.push(format!("{n} ENTRIES IN QUARANTINE")),
            }
            parts.join(", ")
        }
    }
}

/// The findings table alone, as the human report prints it.
pub fn render_findings(report: &Report) -> String {
    let mut out = String::new();
    // Writing into a String cannot fail.
    let _ = write_findings(&mut out, &report.findings);
    out
}

fn write_findings(out: &mut String, findings: &[Finding]) -> fmt::Result {
    if findings.is_empty() {
        return writeln!(out, "\nFindings: none");
    }
    writeln!(out, "\nFindings (what boot would do):")?;
    let mut rows = vec![cells([
        "KIND",
        "FILE",
        "OFFSET",
        "BYTES",
        "REASON -> ACTION",
    ])];
    for finding in findings {
        rows.push(vec![
            finding.kind.to_string(),
            clean(&finding.file),
            finding
                .offset
                .map_or_else(|| "-".to_owned(), |o| o.to_string()),
            finding
                .bytes
                .map_or_else(|| "-".to_owned(), |b| b.to_string()),
            format!(
                "{} -> {}",
                clean(&finding.reason),
                clean(&finding.action.to_string())
            ),
        ]);
    }
    table(out, "  ", &rows)
}

fn write_quarantine(out: &mut String, entries: &[QuarantineEntry]) -> fmt::Result {
    writeln!(out, "\nQuarantine: {}", quarantine_summary(entries))?;
    quarantine_table(out, entries)
}

/// "empty", or how many entries and how many bytes.
fn quarantine_summary(entries: &[QuarantineEntry]) -> String {
    if entries.is_empty() {
        return "empty".to_owned();
    }
    let total = entries
        .iter()
        .fold(0, |sum: u64, e| sum.saturating_add(e.bytes));
    format!(
        "{}, {}",
        count(entries.len(), "entry", "entries"),
        size(total)
    )
}

fn quarantine_table(out: &mut String, entries: &[QuarantineEntry]) -> fmt::Result {
    if entries.is_empty() {
        return Ok(());
    }
    let mut rows = vec![cells(["NAME", "SIZE", "REASON"])];
    for entry in entries {
        rows.push(vec![
            clean(&entry.name),
            size(entry.bytes),
            entry.reason.clone(),
        ]);
    }
    table(out, "  ", &rows)
}

/// A `retention.json` the command line refuses (it cannot be read or parsed, or it names a
/// stream the store does not declare), said once before the streams.
fn write_retention_error(out: &mut String, retention: Option<&RetentionSummary>) -> fmt::Result {
    let Some(error) = retention.and_then(|r| r.error.as_deref()) else {
        return Ok(());
    };
    writeln!(
        out,
        "\nRetention: {}; `strata compact` and `strata ingest` refuse to run until it is fixed",
        clean(error)
    )
}

/// The retention a stream is kept by, as `strata` applies it from `retention.json`.
fn retention_line(retention: Option<&RetentionSummary>, stream: &StreamSummary) -> String {
    let present = retention.is_some_and(|r| r.present);
    let malformed = retention.is_some_and(|r| r.error.is_some());
    match &stream.retention {
        Some(kept) => format!("{kept} ({RETENTION_FILE})"),
        None if malformed => format!("unknown ({RETENTION_FILE} is refused, above)"),
        None if present => format!("forever (not in {RETENTION_FILE})"),
        None => format!("forever (no {RETENTION_FILE})"),
    }
}

fn write_streams(
    out: &mut String,
    retention: Option<&RetentionSummary>,
    streams: &[StreamSummary],
) -> fmt::Result {
    if streams.is_empty() {
        return writeln!(out, "\nStreams: none declared");
    }
    writeln!(out, "\nStreams:")?;
    for stream in streams {
        let fields: Vec<String> = stream
            .fields
            .iter()
            .map(|f| format!("{}:{}", clean(&f.name), f.kind))
            .collect();
        let track = if stream.track.is_empty() {
            "-".to_owned()
        } else {
            stream.track.join(", ")
        };
        writeln!(
            out,
            "  {}  watermark {}  track ({})  axis {}  ladder {}  fields {}",
            clean(&stream.id),
            opt(stream.watermark),
            clean(&track),
            clean(stream.axis.as_deref().unwrap_or("-")),
            stream.ladder.map_or_else(
                || "-".to_owned(),
                |[base, fanout]| format!("{base}x{fanout}")
            ),
            fields.join(" "),
        )?;
        writeln!(out, "    retention: {}", retention_line(retention, stream))?;
        if stream.partitions.is_empty() {
            writeln!(out, "    no live partitions")?;
            continue;
        }
        let mut rows = vec![cells([
            "TRACK",
            "ROWS",
            "LIVE FILES",
            "LIVE SIZE",
            "POSITIONS",
            "AXIS",
            "FILES RAW/LEVEL",
            "LEVELS STORED",
            "FLOOR RAW/LEVELS",
        ])];
        for part in &stream.partitions {
            // Spelt as `--track` names it in a shell, so a row can be typed back.
            let track = if part.track.is_empty() {
                "(root)".to_owned()
            } else {
                strata_index::selection_word(&part.track)
            };
            rows.push(vec![
                clean(&track),
                part.rows.to_string(),
                part.live_files.to_string(),
                size(part.live_bytes),
                range(part.positions),
                range(part.axis),
                format!("{}/{}", part.raw_files.len(), part.level_files.len()),
                match part.levels_stored_from {
                    None => "-".to_owned(),
                    Some([lo, hi]) if lo == hi => format!("from L{lo}"),
                    Some([lo, hi]) => format!("from L{lo}-{hi}"),
                },
                format!(
                    "{}/{}",
                    raw_floor_text(part.raw_floor, part.raw_floor_axis),
                    level_floors_text(&part.level_floors)
                ),
            ]);
        }
        table(out, "    ", &rows)?;
    }
    Ok(())
}

/// The store's files in one line: live now, then what barriers and compaction ever added, and
/// the write amplification that follows.
fn write_files(out: &mut String, files: &FilesSummary) -> fmt::Result {
    let written = &files.written;
    let amplification = written
        .write_amplification()
        .map_or_else(|| "-".to_owned(), |wa| format!("{wa:.2}"));
    writeln!(
        out,
        "\nFiles: {} live ({}); ever added: {} by barriers ({}), {} by compaction ({}); \
         write amplification {amplification} (compaction bytes / barrier bytes)",
        files.live_files,
        size(files.live_bytes),
        written.barrier_files,
        size(written.barrier_bytes),
        written.merge_files,
        size(written.merge_bytes),
    )
}

fn write_verified(out: &mut String, verified: Option<&[VerifiedFile]>) -> fmt::Result {
    let Some(verified) = verified else {
        return writeln!(
            out,
            "\nVerified: not run (--verify reads every recorded file whole)"
        );
    };
    let n_failed = verified.iter().filter(|v| !v.ok).count();
    writeln!(
        out,
        "\nVerified: {}, {} ok, {n_failed} failed",
        count(verified.len(), "file", "files"),
        verified.len() - n_failed
    )?;
    for failure in verified.iter().filter(|v| !v.ok) {
        let at = failure
            .offset
            .map_or_else(String::new, |o| format!(" at offset {o}"));
        let error = failure.error.as_deref().unwrap_or("failed");
        writeln!(
            out,
            "  FAILED {}{at}: {}",
            clean(&failure.file),
            clean(error)
        )?;
    }
    Ok(())
}

/// `engine-fsck quarantine STORE`: the quarantine's entries for a person, under one line that
/// says how many there are.
pub fn render_quarantine(store: &str, entries: &[QuarantineEntry]) -> String {
    let mut out = String::new();
    let verb = if entries.is_empty() { "is" } else { "holds" };
    let summary = quarantine_summary(entries);
    // Writing into a String cannot fail.
    let _ = writeln!(
        out,
        "strata store {}: quarantine {verb} {summary}",
        clean(store)
    );
    let _ = quarantine_table(&mut out, entries);
    out
}

/// "1 file", "2 files".
fn count(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

fn cells<const N: usize>(titles: [&str; N]) -> Vec<String> {
    titles.iter().map(|&t| t.to_owned()).collect()
}

/// Writes `rows` with every column but the last padded to its widest cell.
fn table(out: &mut String, indent: &str, rows: &[Vec<String>]) -> fmt::Result {
    let mut widths: Vec<usize> = Vec::new();
    for row in rows {
        for (col_idx, cell) in row.iter().enumerate() {
            let width = cell.chars().count();
            match widths.get_mut(col_idx) {
                Some(w) => *w = (*w).max(width),
                None => widths.push(width),
            }
        }
    }
    for row in rows {
        let mut line = String::from(indent);
        for (col_idx, cell) in row.iter().enumerate() {
            if col_idx + 1 == row.len() {
                line.push_str(cell);
            } else {
                // Padded by hand: a format width is capped at u16::MAX and panics past it, and a
                // cell holds names from disk of any length.
                let width = widths.get(col_idx).copied().unwrap_or(0);
                line.push_str(cell);
                let pad = width.saturating_sub(cell.chars().count()) + 2;
                line.extend(std::iter::repeat_n(' ', pad));
            }
        }
        writeln!(out, "{}", line.trim_end())?;
    }
    Ok(())
}

fn opt(value: Option<u64>) -> String {
    value.map_or_else(|| "-".to_owned(), |v| v.to_string())
}

/// The raw floor as `position`, or `position@axis` for an axial stream; `-` when none.
pub fn raw_floor_text(position: Option<u64>, axis: Option<u64>) -> String {
    match (position, axis) {
        (None, _) => "-".to_owned(),
        (Some(position), None) => position.to_string(),
        (Some(position), Some(axis)) => format!("{position}@{axis}"),
    }
}

/// Level floors as `Lk:axis`, a run of consecutive levels with one floor as `Lj-k:axis`,
/// levels whose floor is 0 (nothing of them retired) left out; `-` when none is above 0.
pub fn level_floors_text(floors: &BTreeMap<u8, u64>) -> String {
    let mut runs: Vec<(u8, u8, u64)> = Vec::new();
    for (&level, &axis) in floors.iter().filter(|&(_, &axis)| axis > 0) {
        match runs.last_mut() {
            Some((_, last, floor))
                if *floor == axis && u16::from(*last) + 1 == u16::from(level) =>
            {
                *last = level;
            }
            _ => runs.push((level, level, axis)),
        }
    }
    if runs.is_empty() {
        return "-".to_owned();
    }
    runs.iter()
        .map(|&(first, last, axis)| {
            if first == last {
                format!("L{first}:{axis}")
            } else {
                format!("L{first}-{last}:{axis}")
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

fn range(value: Option<[u64; 2]>) -> String {
    value.map_or_else(|| "-".to_owned(), |[lo, hi]| format!("{lo}..={hi}"))
}

/// A size for the eye: bytes below 10 KiB, then KiB, MiB or GiB with one decimal.
fn size(bytes: u64) -> String {
    const UNITS: [&str; 3] = ["KiB", "MiB", "GiB"];
    if bytes < 10 * 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = UNITS[0];
    for next in &UNITS[1..] {
        if value < 1024.0 {
            break;
        }
        value /= 1024.0;
        unit = next;
    }
    format!("{value:.1} {unit}")
}

/// Names on disk are anyone's: a control character in one must not break a line of the report.
fn clean(text: &str) -> String {
    if !text.chars().any(char::is_control) {
        return text.to_owned();
    }
    text.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_follow_the_status() {
        assert_eq!(Status::Clean.exit_code(), 0);
        assert_eq!(Status::Findings.exit_code(), 1);
        assert_eq!(Status::Unusable.exit_code(), 2);
        let report = FsckReport::unusable("no manifest");
        assert_eq!(report.exit_code(), 2);
        assert!(render(&report).starts_with("strata store: UNUSABLE: no manifest"));
    }

    #[test]
    fn render_escapes_control_characters_and_aligns() {
        assert_eq!(clean("a\nb"), "a\\nb");
        let mut out = String::new();
        let rows = vec![cells(["A", "B"]), cells(["long", "x"])];
        table(&mut out, "", &rows).unwrap();
        assert_eq!(out, "A     B\nlong  x\n");
        assert_eq!(size(10), "10 B");
        assert_eq!(size(20 * 1024), "20.0 KiB");
        assert_eq!(size(3 * 1024 * 1024), "3.0 MiB");
    }

    #[test]
    fn floors_print_compactly() {
        assert_eq!(raw_floor_text(None, None), "-");
        assert_eq!(raw_floor_text(Some(10), None), "10");
        assert_eq!(raw_floor_text(Some(10), Some(190)), "10@190");
        assert_eq!(level_floors_text(&BTreeMap::new()), "-");
        assert_eq!(level_floors_text(&BTreeMap::from([(0, 0), (1, 0)])), "-");
        let floors = BTreeMap::from([(0, 192), (1, 200), (2, 200), (3, 200), (4, 0), (5, 256)]);
        assert_eq!(level_floors_text(&floors), "L0:192,L1-3:200,L5:256");
        let gap = BTreeMap::from([(0, 8), (2, 8)]);
        assert_eq!(level_floors_text(&gap), "L0:8,L2:8");
    }
}
