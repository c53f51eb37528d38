//! A manifest generation above the store's that is not a whole manifest.
//!
//! A rewrite writes generation `N + 1` two-phase — to `tmp/`, synced, renamed into place, the
//! root synced — and only then removes `N`. So while `N` is still there, `N + 1` holds exactly the
//! bytes the rewrite wrote: a header and whole frames, and nothing appended yet (appends begin
//! after `N` is durably gone). A whole `N + 1` beside `N` is a normal crash leftover (boot goes on
//! from `N + 1` and quarantines `N`). But an `N + 1` that is empty, has no valid header, or holds
//! bytes that do not parse cannot come from that write: something else put it there. Preferring
//! it would serve a store with nothing in it (and quarantine every file `N` claims); passing over
//! it would hide it. So boot refuses, naming it, and only an operator's repair sets it aside into
//! `quarantine/` (never deleting it) and goes on from the generation below.

use std::fmt;

use strata_index::{Fault, FaultReason, parse_log};
use strata_segment::names::manifest_name;
use strata_segment::read_manifest;
use strata_segment::vfs::Vfs;

use crate::error::RecoverError;

/// The prefix a set-aside generation's name gets inside `quarantine/`.
pub const STRAY_PREFIX: &str = "stray-";

/// Generations above the store's highest whole one that are not whole manifests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StrayManifests {
    /// The stray generations, highest first.
    pub strays: Vec<StrayGeneration>,
    /// The highest generation that parses whole: the store, once the strays are set aside.
    pub whole: u32,
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
/// `None` when the highest parses whole, when none does (boot then reports the highest as it
/// always has), or when one above the whole one has a format version this build does not read
/// (a newer strata's: not evidence to set aside).
pub(crate) fn find(
    vfs: &dyn Vfs,
    generations: &[u32],
) -> Result<Option<StrayManifests>, RecoverError> {
    let mut strays = Vec::new();
    for &generation in generations.iter().rev() {
        let bytes = read_manifest(vfs, generation)?;
        let Some(fault) = parse_log(&bytes).fault else {
            return Ok((!strays.is_empty()).then_some(StrayManifests {
                strays,
                whole: generation,
            }));
        };
        if matches!(fault.reason, FaultReason::UnsupportedVersion { .. }) {
            return Ok(None);
        }
        strays.push(StrayGeneration {
            file: manifest_name(generation),
            len: bytes.len() as u64,
            fault,
        });
    }
    Ok(None)
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
            ". {they_are} above {whole}, which is whole. A manifest rewrite writes its new generation \
             whole (to tmp/, synced) before giving it its name, so this is not a rewrite a crash \
             cut short, and strata will neither open the store from it nor pass over it; nothing \
             was changed. `engine-fsck repair STORE --yes` moves {it} into quarantine/ (as \
             {names}, kept as evidence) and opens the store from {whole}; or move {it} out of the \
             store folder yourself"
        )
    }
}
