//! Damage inside the part of a manifest generation written whole, and the way back from it.
//!
//! A rewrite (or a repair) writes its new generation's header, preamble and snapshot to `tmp/`,
//! syncs them and only then names the file, so no crash tears those bytes. Damage there — a
//! flipped byte, a bad sector, a file cut short at a frame's end — is damage to acknowledged
//! history even when nothing follows it, where a torn tail would be healed by cutting: cutting
//! there would empty the store of everything its snapshot restated, and free the positions its
//! rows were acknowledged at. Boot refuses it ([`crate::Corruption`] with a [`WholeDamage`]),
//! and this module finds what a repair can bring back, in this order:
//!
//! 1. [`WayBack::Replay`]: every frame after the damaged bytes passes its check, and the damage
//!    held nothing of the store's state (the preamble, or the header): the frames after it are
//!    the whole snapshot and every append, and replaying them is the store.
//! 2. [`WayBack::Predecessor`]: the snapshot is damaged, and the generation it was taken from is
//!    still beside it, exactly as its preamble records it (length and crc32c): the snapshot is
//!    taken again from it, as the rewrite took it, and the frames appended after the damaged
//!    snapshot (found where the preamble says the snapshot ends) are replayed on top.
//! 3. [`WayBack::Cut`]: neither (a repair's generation, which is taken from no whole one; an
//!    earlier build's, which kept nothing beside it; the one it was taken from gone or changed):
//!    a repair cuts at the damage and fences every position any evidence recorded, as it does
//!    for damaged history, and the refusal says why it can do no better.

use std::fmt;

use strata_index::{
    Catalog, FaultReason, LINEAGE_STATES_DEFAULT, LOG_HEADER_LEN, PREAMBLE_FORMAT,
    PREAMBLE_FRAME_LEN, Preamble, StrayFrame, decode_frame, decode_frame_in, is_preamble,
    parse_log, preamble_of, scan_frames, whole_state,
};
use strata_segment::names::manifest_name;
use strata_segment::read_manifest;
use strata_segment::vfs::Vfs;

use crate::error::RecoverError;

/// Damage that lies in the part of a generation written whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WholeDamage {
    /// Where the part written whole ends, as the generation's preamble says; `None` when the
    /// preamble is what is damaged, or the generation (of an earlier format) records none.
    pub whole_len: Option<u64>,
    /// The generation's header is what is damaged: its frames are read as this build's format.
    pub header: bool,
    /// How a repair brings the store back.
    pub way_back: WayBack,
}

/// What `engine-fsck repair --yes` can bring back from damage in the part written whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WayBack {
    /// Every frame from byte `from` on passes its check: they are the snapshot and every frame
    /// appended after it, and the repair writes the state they hold. Nothing is lost.
    Replay {
        /// Where the frames replayed start.
        from: u64,
        /// How many there are.
        n_frames: usize,
    },
    /// The generation the damaged snapshot was taken from is kept beside it, unchanged: the
    /// repair takes the snapshot again from it and replays the frames appended after the
    /// damaged one's snapshot. Nothing is lost unless `n_beyond` frames lie past a second
    /// failure among those appended frames, which it fences as a cut would.
    Predecessor {
        /// That generation's file.
        file: String,
        /// Frames appended after the snapshot that it replays.
        n_appended: usize,
        /// Frames that pass their checks past a second failure among the appended ones.
        n_beyond: usize,
    },
    /// The repair cannot rebuild what the damaged frames held, for the reason given: it cuts
    /// there and fences every position any evidence recorded.
    Cut {
        /// Why nothing better is possible.
        why: String,
    },
}

impl WholeDamage {
    /// Whether a repair brings back every acknowledged record.
    pub fn loses_nothing(&self) -> bool {
        match &self.way_back {
            WayBack::Replay { .. } => true,
            WayBack::Predecessor { n_beyond, .. } => *n_beyond == 0,
            WayBack::Cut { .. } => false,
        }
    }
}

impl fmt::Display for WayBack {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WayBack::Replay { from, n_frames } => write!(
                f,
                "the {n_frames} frame(s) from byte {from} on pass their own checks and hold the \
                 whole snapshot and everything appended after it: `engine-fsck repair STORE \
                 --yes` writes the next generation from them, and every acknowledged row is back"
            ),
            WayBack::Predecessor {
                file,
                n_appended,
                n_beyond: 0,
            } => write!(
                f,
                "{file}, the generation its snapshot was taken from, is kept beside it unchanged \
                 (the length and crc32c its preamble records): `engine-fsck repair STORE --yes` \
                 takes the snapshot again from it, replays the {n_appended} frame(s) appended \
                 after the damaged snapshot, and writes the next generation: every acknowledged \
                 row is back"
            ),
            WayBack::Predecessor {
                file,
                n_appended,
                n_beyond,
            } => write!(
                f,
                "{file}, the generation its snapshot was taken from, is kept beside it unchanged: \
                 `engine-fsck repair STORE --yes` takes the snapshot again from it and replays \
                 the {n_appended} frame(s) appended after it up to a second failure; the \
                 {n_beyond} frame(s) that pass their checks past that failure cannot be \
                 replayed, and their positions are fenced"
            ),
            WayBack::Cut { why } => write!(
                f,
                "{why}, so a repair cannot bring back what the damaged frames held: \
                 `engine-fsck repair STORE --yes` cuts the manifest there, keeping every byte in \
                 quarantine/, and fences every position the evidence records"
            ),
        }
    }
}

/// What was found damaged, for [`rebuild`].
pub(crate) struct Damaged<'a> {
    /// The generation.
    pub generation: u32,
    /// Its bytes.
    pub bytes: &'a [u8],
    /// The format its header names (when the header is what is damaged, this build's).
    pub log_version: u32,
    /// Where the trusted prefix ends: the damage.
    pub offset: u64,
    /// Its preamble, if that passed its check.
    pub preamble: Option<Preamble>,
    /// Whether the header is what is damaged.
    pub header: bool,
}

/// A store rebuilt from what survived damage in the part written whole.
#[derive(Debug)]
pub(crate) struct Rebuilt {
    /// Its state.
    pub catalog: Catalog,
    /// How many bytes at the start of the damaged generation are its own, undamaged: their frame
    /// boundaries join the rebuilt generation's lineage (nothing past the damage can be named
    /// by a crc any more).
    pub kept_len: usize,
    /// Frames that pass their checks past a second failure: what the rebuild could not replay.
    pub beyond: Vec<StrayFrame>,
    /// How it was rebuilt.
    pub way_back: WayBack,
}

/// Rebuilds the store from what survived: see the module docs. `Ok(Err(why))` when nothing
/// survived that can stand in for the damaged bytes (the repair then cuts).
pub(crate) fn rebuild(
    vfs: &dyn Vfs,
    damaged: &Damaged<'_>,
) -> Result<Result<Rebuilt, String>, RecoverError> {
    if damaged.header {
        return Ok(replay_from(damaged, LOG_HEADER_LEN, 0));
    }
    match damaged.preamble {
        Some(preamble) => from_predecessor(vfs, damaged, preamble),
        None if damaged.log_version >= PREAMBLE_FORMAT => Ok(replay_from(
            damaged,
            LOG_HEADER_LEN + PREAMBLE_FRAME_LEN,
            LOG_HEADER_LEN,
        )),
        None => Ok(Err(format!(
            "{} was written by an earlier build (manifest format {}), which kept no generation \
             beside it and wrote no preamble",
            manifest_name(damaged.generation),
            damaged.log_version
        ))),
    }
}

/// The store the frames from `from` to the end of the generation hold, if every one of them
/// passes its check and the catalog takes them all: what is left when the damage hit only bytes
/// that hold no state (a preamble, a header).
fn replay_from(damaged: &Damaged<'_>, from: usize, kept_len: usize) -> Result<Rebuilt, String> {
    let bytes = damaged.bytes;
    let mut catalog = Catalog::new();
    let mut at = from;
    let mut n_frames = 0;
    while at < bytes.len() {
        let failed = match decode_frame(&bytes[at..]) {
            Ok((record, _)) if is_preamble(&record) && at != LOG_HEADER_LEN => {
                Some("a second preamble".to_owned())
            }
            Ok((record, consumed)) => match catalog.apply(&record) {
                Ok(()) => {
                    at += consumed;
                    n_frames += 1;
                    None
                }
                Err(error) => Some(format!("the catalog refuses it: {error}")),
            },
            Err(fault) => Some(fault.to_string()),
        };
        if let Some(reason) = failed {
            return Err(format!(
                "the frames after the damage do not all pass their checks (the one at byte {at}: \
                 {reason}), so they cannot stand in for what it held"
            ));
        }
    }
    if n_frames == 0 {
        return Err("no frame follows the damage".to_owned());
    }
    Ok(Rebuilt {
        catalog,
        kept_len,
        beyond: Vec::new(),
        way_back: WayBack::Replay {
            from: from as u64,
            n_frames,
        },
    })
}

/// The store rebuilt from the generation the damaged snapshot was taken from, if it is still
/// beside it as the preamble records it, plus the frames appended after the damaged snapshot.
fn from_predecessor(
    vfs: &dyn Vfs,
    damaged: &Damaged<'_>,
    preamble: Preamble,
) -> Result<Result<Rebuilt, String>, RecoverError> {
    let Some(replaced) = preamble.replaces else {
        return Ok(Err(
            "its preamble names no generation its snapshot was taken from (a repair wrote it, \
             from a generation that was itself damaged)"
                .to_owned(),
        ));
    };
    let file = manifest_name(replaced.generation);
    if replaced.generation >= damaged.generation
        || !vfs.exists(&file).map_err(|e| RecoverError::io(&file, e))?
    {
        return Ok(Err(format!(
            "{file}, the generation its snapshot was taken from, is not beside it any more"
        )));
    }
    let before = read_manifest(vfs, replaced.generation)?;
    let found = whole_state(replaced.generation, &before);
    if found != replaced {
        return Ok(Err(format!(
            "{file} is not the generation its snapshot was taken from: it is {} bytes with \
             crc32c {:#010x}, where the preamble records {} bytes with crc32c {:#010x}",
            found.end, found.crc, replaced.end, replaced.crc
        )));
    }
    let parsed = parse_log(&before);
    if let Some(fault) = parsed.fault {
        return Ok(Err(format!("{file} does not parse whole ({fault})")));
    }
    let mut taken_from = Catalog::new();
    for record in &parsed.records {
        if let Err(error) = taken_from.apply(record) {
            return Ok(Err(format!("{file} does not replay: {error}")));
        }
    }
    // The snapshot the rewrite wrote, taken again as it took it (its lineage to the default
    // depth: how deep the writer's configuration kept it is not recorded anywhere readable).
    let snapshot = taken_from.snapshot_after(replaced.generation, &before, LINEAGE_STATES_DEFAULT);
    let mut catalog = Catalog::new();
    if let Err(error) = catalog.apply(&snapshot) {
        return Ok(Err(format!(
            "the snapshot taken again from {file} does not apply: {error}"
        )));
    }
    // The frames appended after the snapshot, from where the preamble says it ends, up to the
    // first that fails (a torn last append is what a crash leaves; anything that passes after
    // a failure is a second damage, fenced rather than guessed at).
    let bytes = damaged.bytes;
    let mut at = usize::try_from(preamble.whole_len).unwrap_or(usize::MAX);
    let mut n_appended = 0;
    let mut beyond = Vec::new();
    while let Some(rest) = bytes.get(at..).filter(|rest| !rest.is_empty()) {
        let applied = match decode_frame_in(rest, damaged.log_version) {
            Ok((record, consumed)) if !is_preamble(&record) && catalog.apply(&record).is_ok() => {
                Some(consumed)
            }
            _ => None,
        };
        let Some(consumed) = applied else {
            beyond = scan_frames(bytes, at as u64 + 1);
            break;
        };
        at += consumed;
        n_appended += 1;
    }
    let n_beyond = beyond.len();
    Ok(Ok(Rebuilt {
        catalog,
        kept_len: usize::try_from(damaged.offset)
            .unwrap_or(usize::MAX)
            .min(bytes.len()),
        beyond,
        way_back: WayBack::Predecessor {
            file,
            n_appended,
            n_beyond,
        },
    }))
}

/// Whether a header that fails its check (`reason`) is damage to a generation whose frames are
/// whole behind it, rather than something that is no manifest at all: the first frame after it
/// passes its check in this build's format. A header naming a format this build does not know is
/// a newer build's, not damage.
pub(crate) fn header_damaged(bytes: &[u8], reason: &FaultReason) -> bool {
    let damage = matches!(
        reason,
        FaultReason::BadMagic { .. } | FaultReason::ReservedNotZero { .. }
    );
    damage && first_frame_decodes(bytes)
}

/// Whether the header names a format older than its first frame's: a generation of a format
/// that begins with a preamble (3 or later) whose version field is what is damaged.
pub(crate) fn version_damaged(bytes: &[u8], log_version: u32) -> bool {
    log_version < PREAMBLE_FORMAT
        && bytes
            .get(LOG_HEADER_LEN..)
            .and_then(|rest| decode_frame(rest).ok())
            .is_some_and(|(record, _)| preamble_of(&record).is_some())
}

fn first_frame_decodes(bytes: &[u8]) -> bool {
    bytes
        .get(LOG_HEADER_LEN..)
        .is_some_and(|rest| decode_frame(rest).is_ok())
}
