//! A manifest generation above the store's that is not a whole manifest.
//!
//! A rewrite writes generation `N + 1` two-phase — to `tmp/`, synced, renamed into place, the
//! root synced — so `N + 1` begins with exactly the bytes the rewrite wrote: a header and whole
//! frames. This build keeps `N` beside it afterwards (the way back should `N + 1`'s snapshot be
//! damaged, [`crate::whole_part`]) and appends to `N + 1`, so two generations are the usual sight
//! and the higher one may end in a torn append or hold damage, which inspection judges like any
//! manifest's. Earlier builds removed `N` before appending to `N + 1`, so one of their
//! generations beside a lower one holds nothing appended. But an `N + 1` that is empty, has no
//! valid header (and no frame behind it that passes its check), holds not one frame that passes
//! its check, or (of an earlier format) holds bytes that do not parse cannot come from any
//! rewrite: something else put it there. Preferring it would serve a store with nothing in it (and
//! quarantine every file `N` claims); passing over it would hide it. So boot refuses, naming it,
//! and only an operator's repair sets it aside into `quarantine/` (never deleting it) and goes on
//! from the generation below.

use std::fmt;

use strata_index::{
    Fault, FaultReason, LOG_HEADER_LEN, PREAMBLE_FORMAT, ParsedLog, check_header, parse_log,
    scan_frames,
};
use strata_segment::names::manifest_name;
use strata_segment::read_manifest;
use strata_segment::vfs::Vfs;

use crate::error::RecoverError;
use crate::whole_part::{header_damaged, version_damaged};

/// The prefix a set-aside generation's name gets inside `quarantine/`.
pub const STRAY_PREFIX: &str = "stray-";

/// Generations above the store's highest whole one that are not whole manifests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StrayManifests {
    /// The stray generations, highest first.
    pub strays: Vec<StrayGeneration>,
    /// The highest generation below them that is a manifest a rewrite wrote: the store, once
    /// the strays are set aside.
    pub whole: u32,
    /// Whether that generation parses whole (else opening it reports its own damage).
    pub whole_parses: bool,
}

/// One generation that is not a whole manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StrayGeneration {
    /// Its file, `manifest-NNNNNN`.
    pub file: String,
    /// Its length in bytes.
    pub len: u64,
    /// Where and why it does not parse.
    pub fault: Fault,
}

impl StrayGeneration {
    /// What is wrong with it, in words.
    pub fn what(&self) -> String {
        match &self.fault.reason {
            FaultReason::ShortHeader { available: 0 } => "it is empty".to_owned(),
            FaultReason::ShortHeader { .. }
            | FaultReason::BadMagic { .. }
            | FaultReason::ReservedNotZero { .. } => {
                format!("it has no valid header ({})", self.fault.reason)
            }
            _ => format!(
                "its bytes do not parse as whole frames ({} at byte {})",
                self.fault.reason, self.fault.offset
            ),
        }
    }
}

/// The stray generations of a store whose manifest generations are `generations` (ascending), or
/// `None` when the highest is a manifest a rewrite wrote, when none is (boot then reports the
/// highest as it always has), or when one above that has a format version this build does not
/// read (a newer strata's: not evidence to set aside). `highest` is the highest generation's
/// bytes, read already; the ones below are read only if it is a stray.
pub(crate) fn find(
    vfs: &dyn Vfs,
    generations: &[u32],
    highest: &[u8],
) -> Result<Option<StrayManifests>, RecoverError> {
    let mut strays = Vec::new();
    for (idx, &generation) in generations.iter().rev().enumerate() {
        let below;
        let bytes = if idx == 0 {
            highest
        } else {
            below = read_manifest(vfs, generation)?;
            &below
        };
        let parsed = parse_log(bytes);
        if parsed
            .fault
            .as_ref()
            .is_some_and(|f| matches!(f.reason, FaultReason::UnsupportedVersion { .. }))
        {
            return Ok(None);
        }
        let Some(fault) = stray_fault(bytes, &parsed) else {
            return Ok((!strays.is_empty()).then_some(StrayManifests {
                strays,
                whole: generation,
                whole_parses: parsed.fault.is_none(),
            }));
        };
        strays.push(StrayGeneration {
            file: manifest_name(generation),
            len: bytes.len() as u64,
            fault,
        });
    }
    Ok(None)
}

/// Why `bytes`, a generation found above a lower one, is no manifest any rewrite wrote, if it is
/// none (`parsed` is `parse_log` of them).
fn stray_fault(bytes: &[u8], parsed: &ParsedLog) -> Option<Fault> {
    let fault = parsed.fault.clone()?;
    let Ok(version) = check_header(bytes) else {
        // A damaged header in front of frames that pass their checks is a generation's, whose
        // damage inspection reports; only a bad header over nothing of the kind is no manifest.
        return (!header_damaged(bytes, &fault.reason)).then_some(fault);
    };
    if version < PREAMBLE_FORMAT && !version_damaged(bytes, version) {
        // An earlier build appended to a new generation only once the one below it was gone,
        // so one of its generations beside a lower one is exactly as the rewrite wrote it.
        return Some(fault);
    }
    // A generation of this format has the one it replaced beside it and is appended to (the
    // last append may be torn); it is no manifest only if not one frame in it passes its check.
    let none_passes =
        parsed.records.is_empty() && scan_frames(bytes, LOG_HEADER_LEN as u64 + 1).is_empty();
    none_passes.then_some(fault)
}

impl fmt::Display for StrayManifests {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let whole = manifest_name(self.whole);
        for (idx, stray) in self.strays.iter().enumerate() {
            if idx > 0 {
                f.write_str("; ")?;
            }
            write!(
                f,
                "{} ({} bytes) is not a whole manifest: {}",
                stray.file,
                stray.len,
                stray.what()
            )?;
        }
        let is_whole = if self.whole_parses {
            "which is whole"
        } else {
            "which holds frames that pass their checks (its own damage is reported once this is \
             set aside)"
        };
        let (they_are, it, names) = if self.strays.len() == 1 {
            (
                "It is",
                "it",
                format!("{STRAY_PREFIX}{}", self.strays[0].file),
            )
        } else {
            (
                "They are",
                "them",
                self.strays
                    .iter()
                    .map(|s| format!("{STRAY_PREFIX}{}", s.file))
                    .collect::<Vec<_>>()
                    .join(", "),
            )
        };
        write!(
            f,
            ". {they_are} above {whole}, {is_whole}. A manifest rewrite writes its new generation \
             whole (to tmp/, synced) before giving it its name, so this is not a rewrite a crash \
             cut short, and strata will neither open the store from it nor pass over it; nothing \
             was changed. `engine-fsck repair STORE --yes` moves {it} into quarantine/ (as \
             {names}, kept as evidence) and opens the store from {whole}; or move {it} out of the \
             store folder yourself"
        )
    }
}
