//! Inspection: what boot finds and what it will do, computed without changing anything.
//!
//! Boot is this plan, then [`crate::heal`] carrying it out; `engine-fsck` prints the plan and
//! stops. One function decides for both, so what fsck says boot would do is what boot does.
//!
//! Inspection reads the manifest and the folder listings, not the rows: its cost grows with the
//! manifest. The only file contents it reads besides the manifest are quarantine entries as long
//! as a torn tail, to tell whether that tail is already kept (so boot is idempotent).

use std::collections::{BTreeMap, BTreeSet};

use strata_index::{
    Catalog, FaultReason, FileName, LOG_HEADER_LEN, LOG_VERSION, PREAMBLE_FORMAT, Preamble, Record,
    WrittenWhole, check_header, decode_frame, parse_log, preamble_of, scan_frames, written_whole,
};
use strata_segment::names::{
    FileKind, NumberedName, QUARANTINE_DIR, SEG_DIR, TMP_DIR, manifest_name, parse_manifest_name,
};
use strata_segment::read_manifest;
use strata_segment::vfs::{DirEntry, Vfs};

use crate::corruption::Corruption;
use crate::error::RecoverError;
use crate::report::{Action, Finding, FindingKind, Report};
use crate::whole_part::{Damaged, WayBack, WholeDamage, header_damaged, rebuild, version_damaged};

/// The file the store's lock lives in.
pub const LOCK_FILE: &str = "LOCK";

/// One change boot makes, in the order it makes them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// Create a missing store folder (the root is synced once after all of them).
    CreateDir(&'static str),
    /// Move `from` to `quarantine/to`.
    Quarantine { from: String, to: String },
    /// Drop `path`, a second name of bytes already in quarantine.
    DropDuplicate { path: String },
    /// Drop temp `path`, a second name of a finished write whose final name, in `final_dir`,
    /// holds the same bytes (that folder is synced first).
    DropSecondName {
        path: String,
        final_dir: &'static str,
    },
    /// Copy the manifest's tail into `quarantine/to` (two-phase).
    CopyTail { to: String },
    /// Cut the manifest to `len` and sync it.
    Truncate { len: u64 },
    /// Remove a file whose retirement is recorded.
    RemoveRetired { path: String },
}

/// What boot found and will do.
#[derive(Debug)]
pub struct Plan {
    /// The catalog derived from the trusted prefix.
    pub catalog: Catalog,
    /// What was found, with what boot does about each.
    pub report: Report,
    /// The first name boot and the barriers after it may issue: above every name seen anywhere.
    pub next_name: FileName,
    /// Recorded files that reads must refuse as `Unreadable`, with why.
    pub unreadable: BTreeMap<FileName, String>,
    /// The format version the manifest's header names (`strata_index::check_header`): what
    /// its frames are decoded in, by boot and by a reader that goes on reading them.
    pub log_version: u32,
    pub(crate) steps: Vec<Step>,
    /// The manifest's bytes past the trusted prefix (kept as a copy: the manifest is cut later).
    pub(crate) tail: Vec<u8>,
}

/// Whether `vfs` looks like a folder nobody has made a store in yet: nothing but maybe a LOCK.
pub fn is_empty_folder(vfs: &dyn Vfs) -> Result<bool, RecoverError> {
    let entries = vfs.list("").map_err(|e| RecoverError::io("", e))?;
    Ok(entries
        .iter()
        .all(|entry| entry.name == LOCK_FILE && !entry.is_dir))
}

/// Inspects the store and plans boot, changing nothing.
pub fn inspect(vfs: &dyn Vfs) -> Result<Plan, RecoverError> {
    inspect_up_to(vfs, u32::MAX)
}

/// [`inspect`] as if no manifest generation above `ceiling` were there: what boot would plan
/// once a repair has set the stray ones aside.
pub(crate) fn inspect_up_to(vfs: &dyn Vfs, ceiling: u32) -> Result<Plan, RecoverError> {
    let root = vfs.list("").map_err(|e| RecoverError::io("", e))?;
    let mut generations: Vec<u32> = root
        .iter()
        .filter(|e| !e.is_dir)
        .filter_map(|e| parse_manifest_name(&e.name))
        .filter(|&generation| generation <= ceiling)
        .collect();
    generations.sort_unstable();
    let Some(&generation) = generations.last() else {
        let names: Vec<&str> = root.iter().map(|e| e.name.as_str()).collect();
        return Err(RecoverError::NotAStore {
            reason: format!(
                "{} holds no manifest-NNNNNN (it holds {names:?})",
                vfs.location()
            ),
        });
    };

    // A rewrite keeps the generation it replaced beside the new one, so two are the usual
    // sight: the highest is read once, and the ones below only when it is no manifest at all.
    let bytes = read_manifest(vfs, generation)?;
    if generations.len() > 1
        && let Some(strays) = crate::stray::find(vfs, &generations, &bytes)?
    {
        return Err(RecoverError::StrayManifest(Box::new(strays)));
    }
    let mut planner = Planner::default();
    let manifest = planner.read_manifest(vfs, generation, bytes)?;
    planner.report.generation = generation;

    for dir in [SEG_DIR, TMP_DIR, QUARANTINE_DIR] {
        if !root.iter().any(|e| e.name == dir && e.is_dir) {
            planner.find(
                FindingKind::MissingFolder,
                dir,
                "the store folder is missing",
                Action::Create,
            );
            planner.steps.push(Step::CreateDir(dir));
        }
    }
    let seg = list_if_present(vfs, &root, SEG_DIR)?;
    let tmp = list_if_present(vfs, &root, TMP_DIR)?;
    let quarantine = list_if_present(vfs, &root, QUARANTINE_DIR)?;
    planner.quarantine_names = quarantine.iter().map(|e| e.name.clone()).collect();

    // Names are issued above everything the store has ever held, wherever it is now.
    let seen = seg
        .iter()
        .chain(&tmp)
        .filter_map(|e| NumberedName::parse(&e.name))
        .chain(
            quarantine
                .iter()
                .filter_map(|e| quarantined_number(&e.name)),
        )
        .map(|n| n.number)
        .max()
        .unwrap_or(0);
    planner.next_name = planner.catalog.name_high().max(seen) + 1;

    planner.plan_superseded(vfs, &root, &generations, generation)?;
    for entry in &tmp {
        let path = format!("{TMP_DIR}/{}", entry.name);
        if entry.is_dir {
            planner.find(
                FindingKind::Foreign,
                &path,
                "a folder inside tmp/",
                Action::Leave,
            );
            continue;
        }
        if let Some((final_dir, final_path)) = second_name_of(vfs, &entry.name, &path)? {
            let bytes = vfs.len(&path).map_err(|e| RecoverError::io(&path, e))?;
            let reason = "a second name of a finished write";
            let action = Action::DropSecondName { of: final_path };
            planner.find_file(FindingKind::OrphanTemp, &path, bytes, reason, action);
            planner.steps.push(Step::DropSecondName { path, final_dir });
            continue;
        }
        let reason = "a write that never claimed its final name";
        planner.quarantine(vfs, FindingKind::OrphanTemp, &path, "tmp-", reason)?;
    }
    planner.plan_tail(vfs, &manifest, &tmp)?;
    planner.plan_segments(vfs, &seg)?;
    Ok(planner.finish())
}

#[derive(Default)]
struct Planner {
    catalog: Catalog,
    report: Report,
    steps: Vec<Step>,
    next_name: FileName,
    unreadable: BTreeMap<FileName, String>,
    log_version: u32,
    tail: Vec<u8>,
    fault_reason: Option<String>,
    /// The current generation's preamble, if it has one.
    preamble: Option<Preamble>,
    /// Names in quarantine now, plus those this plan will add.
    quarantine_names: BTreeSet<String>,
}

/// What the manifest read left for later steps.
struct ManifestRead {
    trusted_len: u64,
}

impl Plan {
    /// Takes the removals of retired files out of the steps, answering the files: they stay
    /// for the caller to remove later. Only recorded retirements are steps of this kind, so
    /// nothing a heal needs to be sound is dropped: a retired file left in `seg/` is only
    /// space, and the next boot plans its removal again.
    pub(crate) fn keep_retired(&mut self) -> Vec<FileName> {
        let mut kept = Vec::new();
        self.steps.retain(|step| match step {
            Step::RemoveRetired { path } => {
                let name = path
                    .rsplit('/')
                    .next()
                    .and_then(NumberedName::parse)
                    .filter(|name| name.kind == FileKind::Segment);
                match name {
                    Some(name) => {
                        kept.push(name.number);
                        false
                    }
                    None => true,
                }
            }
            _ => true,
        });
        kept
    }
}

impl Planner {
    fn finish(self) -> Plan {
        Plan {
            catalog: self.catalog,
            report: self.report,
            next_name: self.next_name,
            unreadable: self.unreadable,
            log_version: self.log_version,
            steps: self.steps,
            tail: self.tail,
        }
    }

    /// A finding about a whole file of `bytes` bytes.
    fn find_file(
        &mut self,
        kind: FindingKind,
        file: &str,
        bytes: u64,
        reason: &str,
        action: Action,
    ) {
        self.report.findings.push(Finding {
            kind,
            file: file.to_owned(),
            offset: None,
            bytes: Some(bytes),
            reason: reason.to_owned(),
            action,
        });
    }

    fn find(&mut self, kind: FindingKind, file: &str, reason: &str, action: Action) {
        self.report.findings.push(Finding {
            kind,
            file: file.to_owned(),
            offset: None,
            bytes: None,
            reason: reason.to_owned(),
            action,
        });
    }

    /// Reads and replays the manifest's trusted prefix; keeps its tail for [`Self::plan_tail`].
    fn read_manifest(
        &mut self,
        vfs: &dyn Vfs,
        generation: u32,
        bytes: Vec<u8>,
    ) -> Result<ManifestRead, RecoverError> {
        let file = manifest_name(generation);
        let parsed = parse_log(&bytes);
        if let Some(fault) = &parsed.fault
            && !matches!(fault.reason, FaultReason::Frame(_))
        {
            if header_damaged(&bytes, &fault.reason) {
                // The frames behind it are whole: the header alone is damaged, and it holds
                // nothing of the store, so it is refused as damage a repair can undo.
                let damage = Damaged {
                    generation,
                    bytes: &bytes,
                    log_version: LOG_VERSION,
                    offset: 0,
                    preamble: None,
                    header: true,
                };
                let fault = format!("{}: the header is damaged", fault.reason);
                return Err(Self::whole_damage(vfs, &damage, fault, &Catalog::new()));
            }
            return Err(RecoverError::ManifestUnusable {
                file,
                fault: fault.clone(),
            });
        }
        self.report.manifest_len = bytes.len() as u64;
        // A header `parse_log` refused ended the read above, so this is its version.
        self.log_version = check_header(&bytes).unwrap_or(LOG_VERSION);
        let mut trusted_len = LOG_HEADER_LEN as u64;
        // Where each trusted frame ends: the part written whole must end at one of them.
        let mut frame_ends = Vec::new();
        let mut fault_reason = parsed.fault.as_ref().map(|f| f.reason.to_string());
        for record in &parsed.records {
            // A frame that passes its own check but contradicts the catalog ends the trusted
            // prefix too: the claim is the record, and this record cannot be a claim.
            if let Err(error) = self.catalog.apply(record) {
                fault_reason = Some(format!("the catalog refuses the frame: {error}"));
                break;
            }
            // The frame's length as it lies on disk (parse_log read it once already; this
            // cannot fail for a frame it trusted).
            let at = usize::try_from(trusted_len).unwrap_or(usize::MAX);
            let consumed = decode_frame(&bytes[at..]).map_or(0, |(_, n)| n);
            trusted_len += consumed as u64;
            frame_ends.push(trusted_len);
            self.report.n_frames += 1;
        }
        debug_assert!(trusted_len <= parsed.trusted_len || parsed.trusted_len == 0);
        // The first frame counts only if the catalog took it (a preamble it always takes).
        let first = parsed.records.first().filter(|_| self.report.n_frames > 0);
        self.preamble = first.and_then(preamble_of).copied();
        if let Some((offset, fault)) = self.damage_in_whole_part(
            generation,
            &bytes,
            trusted_len,
            &frame_ends,
            first,
            fault_reason.as_deref(),
        ) {
            let header = offset < LOG_HEADER_LEN as u64;
            let damage = Damaged {
                generation,
                bytes: &bytes,
                log_version: if header {
                    LOG_VERSION
                } else {
                    self.log_version
                },
                offset,
                preamble: self.preamble,
                header,
            };
            let prefix = if header {
                Catalog::new()
            } else {
                self.catalog.clone()
            };
            return Err(Self::whole_damage(vfs, &damage, fault, &prefix));
        }
        if trusted_len < bytes.len() as u64 {
            // The frame at `trusted_len` failed; anything valid after it makes that damage to
            // acknowledged history rather than a torn append (see `corruption`).
            let later = scan_frames(&bytes, trusted_len + 1);
            if !later.is_empty() {
                // A refusal, so inspection may read more than the listings here: the segment
                // files the prefix does not claim, for what a cut would lose.
                let lost = crate::loss::assess(vfs, &self.catalog, &later)?;
                return Err(RecoverError::ManifestCorrupt(Box::new(Corruption {
                    file,
                    offset: trusted_len,
                    fault: fault_reason.unwrap_or_default(),
                    manifest_len: bytes.len() as u64,
                    later,
                    lost,
                    whole: None,
                })));
            }
        }
        self.report.trusted_len = trusted_len;
        self.fault_reason = fault_reason;
        let tail_start = usize::try_from(trusted_len)
            .unwrap_or(usize::MAX)
            .min(bytes.len());
        self.tail = bytes[tail_start..].to_vec();
        Ok(ManifestRead { trusted_len })
    }

    /// Where, and why, the part of `generation` written whole fails, if it does: a frame there
    /// that fails its check (or that the catalog refuses), the file ending before it does, or a
    /// generation above 1 that does not begin as one written whole begins. No crash leaves any of
    /// that (`strata_index::generation`).
    fn damage_in_whole_part(
        &self,
        generation: u32,
        bytes: &[u8],
        trusted_len: u64,
        frame_ends: &[u64],
        first: Option<&Record>,
        fault: Option<&str>,
    ) -> Option<(u64, String)> {
        let header_end = LOG_HEADER_LEN as u64;
        let len = bytes.len() as u64;
        let failed_or_ended = |whole_end: u64| match fault {
            Some(fault) => fault.to_owned(),
            None => format!(
                "the generation ends at byte {len}, before the {whole_end} bytes it was written \
                 with"
            ),
        };
        if self.report.n_frames == 0 && version_damaged(bytes, self.log_version) {
            return Some((
                8,
                format!(
                    "its header names manifest format {}, but its first frame is a preamble, \
                     which only format {PREAMBLE_FORMAT} or later holds: the header is damaged",
                    self.log_version
                ),
            ));
        }
        match written_whole(generation, self.log_version, first) {
            WrittenWhole::Header => None,
            WrittenWhole::FirstFrame => (self.report.n_frames == 0).then(|| {
                let what = "its snapshot's first frame, which a rewrite writes whole";
                (
                    header_end,
                    fault.map_or_else(
                        || format!("the generation ends before {what}"),
                        str::to_owned,
                    ),
                )
            }),
            WrittenWhole::Through(whole_end) if trusted_len < whole_end => {
                Some((trusted_len, failed_or_ended(whole_end)))
            }
            WrittenWhole::Through(whole_end) => (!frame_ends.contains(&whole_end)).then(|| {
                (
                    header_end,
                    format!(
                        "its preamble says the first {whole_end} bytes were written whole, and \
                         no frame ends there"
                    ),
                )
            }),
            WrittenWhole::PreambleLost => Some((
                header_end,
                match (fault, self.report.n_frames) {
                    (Some(fault), 0) => fault.to_owned(),
                    (None, 0) => "the generation ends after its header, before the preamble a \
                                  generation above 1 begins with"
                        .to_owned(),
                    _ => "its first frame is not the preamble a generation above 1 begins with"
                        .to_owned(),
                },
            )),
        }
    }

    /// The refusal of damage in the part of a generation written whole, with the way back a
    /// repair has from it (which, on this refusal alone, reads the generation it was taken
    /// from, or the segment files a cut would lose rows of).
    fn whole_damage(
        vfs: &dyn Vfs,
        damage: &Damaged<'_>,
        fault: String,
        prefix: &Catalog,
    ) -> RecoverError {
        let later = scan_frames(damage.bytes, damage.offset + 1);
        let way_back = match rebuild(vfs, damage) {
            Ok(Ok(rebuilt)) => rebuilt.way_back,
            Ok(Err(why)) => WayBack::Cut { why },
            Err(error) => return error,
        };
        let lost = if matches!(way_back, WayBack::Cut { .. }) {
            match crate::loss::assess(vfs, prefix, &later) {
                Ok(lost) => lost,
                Err(error) => return error,
            }
        } else {
            BTreeMap::new()
        };
        RecoverError::ManifestCorrupt(Box::new(Corruption {
            file: manifest_name(damage.generation),
            offset: damage.offset,
            fault,
            manifest_len: damage.bytes.len() as u64,
            later,
            lost,
            whole: Some(WholeDamage {
                whole_len: damage.preamble.map(|p| p.whole_len),
                header: damage.header,
                way_back,
            }),
        }))
    }

    /// Every manifest generation below the current one goes to quarantine as superseded (what a
    /// crashed rewrite leaves), except the one the current one's snapshot was taken from.
    fn plan_superseded(
        &mut self,
        vfs: &dyn Vfs,
        root: &[DirEntry],
        generations: &[u32],
        generation: u32,
    ) -> Result<(), RecoverError> {
        // The generation the current one's snapshot was taken from stays, as long as it is still
        // the length the preamble records (a repair checks its crc32c before it uses it): it is the
        // way back should the current one's snapshot be damaged. Any other is a crash's leftover.
        let previous = self
            .preamble
            .and_then(|p| p.replaces)
            .filter(|replaced| replaced.generation < generation)
            .filter(|replaced| {
                root.iter()
                    .any(|e| !e.is_dir && parse_manifest_name(&e.name) == Some(replaced.generation))
                    && vfs.len(&manifest_name(replaced.generation)).ok() == Some(replaced.end)
            })
            .map(|replaced| replaced.generation);
        self.report.previous = previous;
        for &old in generations
            .iter()
            .filter(|&&g| g != generation && Some(g) != previous)
        {
            let name = manifest_name(old);
            let reason = format!("generation {generation} superseded it");
            self.quarantine(
                vfs,
                FindingKind::SupersededManifest,
                &name,
                "root-",
                &reason,
            )?;
        }
        Ok(())
    }

    /// Heal before claim: the tail goes to quarantine (unless an identical copy is already
    /// kept, in quarantine or in a temp this plan quarantines), then the manifest is cut.
    fn plan_tail(
        &mut self,
        vfs: &dyn Vfs,
        manifest: &ManifestRead,
        tmp: &[DirEntry],
    ) -> Result<(), RecoverError> {
        if self.tail.is_empty() {
            return Ok(());
        }
        let file = manifest_name(self.report.generation);
        let tail_len = self.tail.len() as u64;
        let kept = self.find_copy(vfs, QUARANTINE_DIR, self.quarantine_names.iter().cloned())?;
        let kept = match kept {
            Some(name) => Some(name),
            None => self
                .find_copy(
                    vfs,
                    TMP_DIR,
                    tmp.iter().filter(|e| !e.is_dir).map(|e| e.name.clone()),
                )?
                .map(|name| format!("tmp-{name}")),
        };
        let action = if let Some(at) = kept {
            Action::AlreadyQuarantined { at }
        } else {
            let to = NumberedName {
                number: self.next_name,
                kind: FileKind::ManifestTail,
            }
            .to_string();
            self.next_name += 1;
            self.quarantine_names.insert(to.clone());
            self.steps.push(Step::CopyTail { to: to.clone() });
            Action::Quarantine { to }
        };
        let fault = self.fault_reason.clone().unwrap_or_default();
        self.report.findings.push(Finding {
            kind: FindingKind::TornManifestTail,
            file,
            offset: Some(manifest.trusted_len),
            bytes: Some(tail_len),
            reason: format!(
                "{fault}; the manifest is cut to its trusted {} bytes",
                manifest.trusted_len
            ),
            action,
        });
        self.steps.push(Step::Truncate {
            len: manifest.trusted_len,
        });
        Ok(())
    }

    /// Classifies `seg/`: claimed files are checked against their records (length only: boot
    /// reads no rows), retired ones removed, everything else quarantined.
    fn plan_segments(&mut self, vfs: &dyn Vfs, seg: &[DirEntry]) -> Result<(), RecoverError> {
        let retired: BTreeSet<FileName> = self.catalog.retired_files().collect();
        let mut present = BTreeSet::new();
        for entry in seg {
            let path = format!("{SEG_DIR}/{}", entry.name);
            let name = NumberedName::parse(&entry.name).filter(|n| n.kind == FileKind::Segment);
            let number = name.map(|n| n.number);
            match number {
                Some(n)
                    if !entry.is_dir && self.catalog.file(n).is_some() && !retired.contains(&n) =>
                {
                    present.insert(n);
                    self.check_length(vfs, n, &path)?;
                }
                Some(n) if !entry.is_dir && retired.contains(&n) => {
                    self.find(
                        FindingKind::RetiredFile,
                        &path,
                        "its retirement is recorded",
                        Action::Remove,
                    );
                    self.steps.push(Step::RemoveRetired { path });
                }
                _ if entry.is_dir => {
                    self.find(
                        FindingKind::Foreign,
                        &path,
                        "a folder inside seg/",
                        Action::Leave,
                    );
                }
                _ => {
                    let reason = match number {
                        Some(_) => {
                            "no record claims it (a crash after the rename, before the record)"
                        }
                        None => "not a segment name",
                    };
                    self.quarantine(vfs, FindingKind::UnrecordedSegment, &path, "seg-", reason)?;
                }
            }
        }
        let missing: Vec<FileName> = self
            .catalog
            .live_files()
            .map(|f| f.name)
            .filter(|n| !present.contains(n) && !retired.contains(n))
            .collect();
        for n in missing {
            let path = NumberedName::segment(n).path_in(SEG_DIR);
            let reason = "the manifest records it, and it is not there";
            self.find(
                FindingKind::MissingFile,
                &path,
                reason,
                Action::KeepUnreadable,
            );
            self.unreadable.insert(n, format!("{path} is missing"));
        }
        Ok(())
    }

    fn check_length(&mut self, vfs: &dyn Vfs, n: FileName, path: &str) -> Result<(), RecoverError> {
        let recorded = self.catalog.file(n).map_or(0, |f| f.len);
        let actual = vfs.len(path).map_err(|e| RecoverError::io(path, e))?;
        if actual != recorded {
            let reason = format!("recorded as {recorded} bytes, found {actual}");
            self.report.findings.push(Finding {
                kind: FindingKind::WrongLength,
                file: path.to_owned(),
                offset: Some(actual.min(recorded)),
                bytes: Some(actual.abs_diff(recorded)),
                reason: reason.clone(),
                action: Action::KeepUnreadable,
            });
            self.unreadable.insert(n, format!("{path}: {reason}"));
        }
        Ok(())
    }

    /// Plans moving `path` into quarantine as `prefix + name`, or dropping it as a duplicate
    /// name of bytes already there (a crash between a move's two directory syncs).
    fn quarantine(
        &mut self,
        vfs: &dyn Vfs,
        kind: FindingKind,
        path: &str,
        prefix: &str,
        reason: &str,
    ) -> Result<(), RecoverError> {
        let name = path.rsplit('/').next().unwrap_or(path);
        let base = format!("{prefix}{name}");
        let bytes = vfs.len(path).map_err(|e| RecoverError::io(path, e))?;
        let mut candidate = base.clone();
        let mut suffix = 0;
        while self.quarantine_names.contains(&candidate) {
            let existing = format!("{QUARANTINE_DIR}/{candidate}");
            if same_bytes(vfs, path, &existing)? {
                let action = Action::AlreadyQuarantined { at: candidate };
                self.find_file(kind, path, bytes, reason, action);
                self.steps.push(Step::DropDuplicate {
                    path: path.to_owned(),
                });
                return Ok(());
            }
            suffix += 1;
            candidate = format!("{base}.{suffix}");
        }
        self.quarantine_names.insert(candidate.clone());
        let action = Action::Quarantine {
            to: candidate.clone(),
        };
        self.find_file(kind, path, bytes, reason, action);
        self.steps.push(Step::Quarantine {
            from: path.to_owned(),
            to: candidate,
        });
        Ok(())
    }

    /// The name, among `names` in `dir`, of a file holding exactly the tail's bytes.
    fn find_copy(
        &self,
        vfs: &dyn Vfs,
        dir: &str,
        names: impl Iterator<Item = String>,
    ) -> Result<Option<String>, RecoverError> {
        for name in names {
            let path = format!("{dir}/{name}");
            let Ok(len) = vfs.len(&path) else { continue };
            if len == self.tail.len() as u64 {
                let bytes = vfs.map(&path).map_err(|e| RecoverError::io(&path, e))?;
                if *bytes == *self.tail {
                    return Ok(Some(name));
                }
            }
        }
        Ok(None)
    }
}

fn list_if_present(
    vfs: &dyn Vfs,
    root: &[DirEntry],
    dir: &str,
) -> Result<Vec<DirEntry>, RecoverError> {
    if !root.iter().any(|e| e.name == dir && e.is_dir) {
        return Ok(Vec::new());
    }
    vfs.list(dir).map_err(|e| RecoverError::io(dir, e))
}

/// Whether temp `path` (named `name`) is a second name of a finished write: its final name holds
/// the same bytes. A no-replace rename done as link then unlink (on a file system without
/// `RENAME_NOREPLACE`) leaves exactly this when a crash falls between the two, and so does a
/// rename whose target folder was synced but whose `tmp/` was not. Either way the bytes are kept
/// under their final name; the temp is not evidence of anything, and quarantining it would keep
/// a spurious copy. Answers the final name's folder and path.
fn second_name_of(
    vfs: &dyn Vfs,
    name: &str,
    path: &str,
) -> Result<Option<(&'static str, String)>, RecoverError> {
    let Some((dir, final_path)) = final_name(name) else {
        return Ok(None);
    };
    let exists = vfs
        .exists(&final_path)
        .map_err(|e| RecoverError::io(&final_path, e))?;
    if exists && same_bytes(vfs, path, &final_path)? {
        return Ok(Some((dir, final_path)));
    }
    Ok(None)
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

/// Whether two files hold the same bytes; mapped, not read, since a segment can be large.
pub(crate) fn same_bytes(vfs: &dyn Vfs, a: &str, b: &str) -> Result<bool, RecoverError> {
    let len_a = vfs.len(a).map_err(|e| RecoverError::io(a, e))?;
    let len_b = vfs.len(b).map_err(|e| RecoverError::io(b, e))?;
    if len_a != len_b {
        return Ok(false);
    }
    let bytes_a = vfs.map(a).map_err(|e| RecoverError::io(a, e))?;
    let bytes_b = vfs.map(b).map_err(|e| RecoverError::io(b, e))?;
    Ok(*bytes_a == *bytes_b)
}

/// The number inside a quarantine entry's name: `tmp-000000000007.seg`, `seg-…`, a torn tail's
/// `000000000013.tail`, any of them with a `.N` suffix.
pub fn quarantined_number(name: &str) -> Option<NumberedName> {
    let bare = ["tmp-", "seg-", "root-"]
        .iter()
        .find_map(|prefix| name.strip_prefix(prefix))
        .unwrap_or(name);
    NumberedName::parse(bare).or_else(|| {
        let (stem, suffix) = bare.rsplit_once('.')?;
        suffix.bytes().all(|b| b.is_ascii_digit()).then_some(())?;
        NumberedName::parse(stem)
    })
}

/// Why an entry of `quarantine/` is there, from its name.
pub fn quarantine_reason(name: &str) -> &'static str {
    if name.starts_with("tmp-") {
        "orphan temp: a write that never claimed its final name"
    } else if name.starts_with("seg-") {
        "unrecorded segment: no manifest record claimed it"
    } else if name.starts_with("root-") {
        "superseded manifest generation"
    } else if name.starts_with(crate::stray::STRAY_PREFIX) {
        "stray manifest generation: above the store's whole one and not a whole manifest, set \
         aside by a repair"
    } else if quarantined_number(name).is_some_and(|n| n.kind == FileKind::ManifestTail) {
        "torn manifest tail: bytes after the manifest's trusted prefix"
    } else {
        "unknown"
    }
}
