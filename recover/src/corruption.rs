//! Damage inside a manifest's history, told apart from a torn tail.
//!
//! An interrupted append leaves one frame, cut short or half-written, at the very end of the log,
//! and nothing after it that passes a check. So when the trusted prefix ends at a bad frame and a
//! frame that passes every check of its own lies after it, the bad frame is not a torn write: it
//! is damage to records that were acknowledged. Nor is a bad frame inside the part of a
//! generation written whole (its header, preamble and snapshot, synced before the file had its
//! name: [`crate::whole_part`]), wherever it lies. Boot refuses such a store rather than cut it
//! back (a cut would silently drop barriers that callers were told are durable, and let their
//! positions be reused); only an operator's explicit repair ([`crate::repair`]) mends it,
//! rebuilding what survives elsewhere or else cutting, and keeping the evidence either way.

use std::collections::BTreeMap;
use std::fmt::{self, Write as _};

use strata_index::{Entry, FileName, StrayFrame};

use crate::loss::StreamLoss;
use crate::whole_part::{WayBack, WholeDamage};

/// A manifest whose trusted prefix ends at damage that later, valid frames prove is not a torn
/// write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Corruption {
    /// The manifest file.
    pub file: String,
    /// Where the trusted prefix ends: the offset of the damaged (or refused) frame.
    pub offset: u64,
    /// What is wrong with the frame at `offset`.
    pub fault: String,
    /// The manifest's length.
    pub manifest_len: u64,
    /// The frames after the damage that pass their own checks, in order.
    pub later: Vec<StrayFrame>,
    /// Per stream, the rows a cut would lose, from those frames and the segment files the
    /// trusted prefix does not claim, against what the prefix holds ([`crate::loss`]). Streams
    /// that lose nothing are not listed. Empty when a repair loses nothing ([`Self::whole`]).
    pub lost: BTreeMap<String, StreamLoss>,
    /// When the damage lies in the part of the generation written whole (where no crash tears
    /// anything, so even damage with nothing valid after it is refused): what is known of that
    /// part and how a repair brings the store back. `None` for damage among appended frames.
    pub whole: Option<WholeDamage>,
}

impl Corruption {
    /// Barriers among the later frames: frames that claim at least one file.
    pub fn n_barriers(&self) -> usize {
        self.later
            .iter()
            .filter(|f| {
                f.record
                    .entries
                    .iter()
                    .any(|e| matches!(e, Entry::AddFile(_)))
            })
            .count()
    }

    /// The files the later frames claim.
    pub fn files(&self) -> Vec<FileName> {
        self.later
            .iter()
            .flat_map(|f| &f.record.entries)
            .filter_map(|e| match e {
                Entry::AddFile(file) | Entry::Merge { file, .. } => Some(file.name),
                _ => None,
            })
            .collect()
    }

    /// The highest file name the later frames mention (added or issued).
    pub fn name_high(&self) -> FileName {
        self.later
            .iter()
            .flat_map(|f| &f.record.entries)
            .filter_map(|e| match e {
                Entry::AddFile(file) | Entry::Merge { file, .. } => Some(file.name),
                Entry::NameHigh(name) => Some(*name),
                _ => None,
            })
            .max()
            .unwrap_or(0)
    }

    /// Per stream, the rows a cut would lose and their positions (see [`Corruption::lost`]).
    pub fn losses(&self) -> &BTreeMap<String, StreamLoss> {
        &self.lost
    }

    /// Per stream, the highest position the later frames record (in the files they claim, their
    /// watermarks and their fences): one of the bounds a repair fences at.
    pub(crate) fn recorded_high(&self) -> BTreeMap<String, u64> {
        recorded_high(&self.later)
    }

    /// What a repair does about it, in words: the way back from damage in the part written
    /// whole, or what a cut would drop.
    pub fn describe_repair(&self) -> String {
        match &self.whole {
            Some(whole) => {
                let mut text = whole.way_back.to_string();
                // A rebuild says itself what it cannot replay; only a cut drops the rest.
                if matches!(whole.way_back, WayBack::Cut { .. }) {
                    text.push_str("; ");
                    text.push_str(&self.describe_loss());
                }
                text
            }
            None => self.describe_loss(),
        }
    }
}

/// Per stream, the highest position `frames` record (in the files they claim, their watermarks
/// and their fences): one of the bounds a repair fences at.
pub(crate) fn recorded_high(frames: &[StrayFrame]) -> BTreeMap<String, u64> {
    let mut highest: BTreeMap<String, u64> = BTreeMap::new();
    {
        let mut note = |stream: &str, position: u64| {
            let high = highest.entry(stream.to_owned()).or_insert(position);
            *high = (*high).max(position);
        };
        for entry in frames.iter().flat_map(|f| &f.record.entries) {
            match entry {
                Entry::AddFile(file) | Entry::Merge { file, .. } | Entry::Claim(file) => {
                    for part in &file.partitions {
                        note(&part.stream, part.positions[1]);
                    }
                }
                Entry::Watermark { stream, position } | Entry::Fence { stream, position } => {
                    note(stream, *position);
                }
                _ => {}
            }
        }
    }
    highest
}

impl Corruption {
    /// One sentence of what a cut at `offset` would drop.
    pub fn describe_loss(&self) -> String {
        let offsets: Vec<String> = self.later.iter().map(|f| f.offset.to_string()).collect();
        let mut text = format!(
            "{} frame(s) after it pass their own checks (at bytes {}), and a cut there would drop \
             them with the damaged frame: {} barrier(s) after the damaged one",
            self.later.len(),
            abbreviate(&offsets),
            self.n_barriers(),
        );
        let files: Vec<String> = self.files().iter().map(ToString::to_string).collect();
        if !files.is_empty() {
            let _ = write!(text, " claiming segment(s) {}", abbreviate(&files));
        }
        text.push_str(
            "; rows lost (what the store held before the damage and would no longer serve, from \
             those records and the segment files the trusted prefix does not claim)",
        );
        if self.lost.is_empty() {
            text.push_str(": none");
        }
        for (stream, loss) in &self.lost {
            let _ = write!(text, "; stream {stream:?}: {} row(s)", loss.n_rows);
            if let Some([lo, hi]) = loss.positions {
                let _ = write!(text, " at positions {lo}..={hi}");
            }
            if loss.n_rows_in_missing_files > 0 {
                let _ = write!(
                    text,
                    ", {} of them in files the trusted prefix claims that are gone (a later \
                     frame removed them), which reads would refuse as unreadable",
                    loss.n_rows_in_missing_files
                );
            }
        }
        text
    }
}

/// The first and last few items of a list, so a message stays one readable line.
fn abbreviate(items: &[String]) -> String {
    const SHOWN: usize = 4;
    if items.len() <= 2 * SHOWN {
        return items.join(", ");
    }
    format!(
        "{}, … {} more …, {}",
        items[..SHOWN].join(", "),
        items.len() - 2 * SHOWN,
        items[items.len() - SHOWN..].join(", ")
    )
}

impl fmt::Display for Corruption {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(whole) = &self.whole {
            let generation = strata_segment::names::parse_manifest_name(&self.file).unwrap_or(0);
            let part = if whole.header {
                "its header, written and synced with the rest before the file had its name"
                    .to_owned()
            } else if let Some(whole_len) = whole.whole_len {
                format!(
                    "the first {whole_len} bytes of generation {generation}, its preamble and its \
                     snapshot of the store, written whole and synced before the file had its name"
                )
            } else {
                format!(
                    "the part of generation {generation} a rewrite writes whole and syncs before \
                     the file has its name (its preamble and snapshot; an earlier build's first \
                     frame)"
                )
            };
            return write!(
                f,
                "the manifest {} is damaged at byte {} ({}). That byte lies in {part}, which no \
                 crash can tear: this is damage to acknowledged history, not a torn write, so \
                 strata will not cut it back; nothing was changed. {}. `engine-fsck STORE` \
                 reports it (see docs/fsck.md)",
                self.file,
                self.offset,
                self.fault,
                self.describe_repair()
            );
        }
        write!(
            f,
            "the manifest {} is damaged at byte {} ({}), and {}. That is damage to acknowledged \
             history, not a torn write, so strata will not cut it back; nothing was changed. \
             `engine-fsck STORE` reports it, and `engine-fsck repair STORE --yes` cuts the \
             manifest there, keeping every byte in quarantine/ (see docs/fsck.md)",
            self.file,
            self.offset,
            self.fault,
            self.describe_loss()
        )
    }
}
