//! Damage inside a manifest's history, told apart from a torn tail.
//!
//! An interrupted append leaves one frame, cut short or half-written, at the very end of the log,
//! and nothing after it that passes a check. So when the trusted prefix ends at a bad frame and a
//! frame that passes every check of its own lies after it, the bad frame is not a torn write: it
//! is damage to records that were acknowledged. Boot refuses such a store rather than cut it back
//! (a cut would silently drop barriers that callers were told are durable, and let their positions
//! be reused); only an operator's explicit repair ([`crate::repair`]) cuts it, keeping the evidence.

use std::collections::BTreeMap;
use std::fmt::{self, Write as _};

use strata_index::{Entry, FileName, StrayFrame};

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
}

/// What one stream had in the frames a cut would drop.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StreamLoss {
    /// Rows in the files those frames claim.
    pub n_rows: u64,
    /// The lowest and highest position those frames recorded (files and watermarks).
    pub positions: Option<[u64; 2]>,
}

impl StreamLoss {
    fn note(&mut self, lo: u64, hi: u64) {
        self.positions = Some(match self.positions {
            None => [lo, hi],
            Some([min, max]) => [min.min(lo), max.max(hi)],
        });
    }
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

    /// Per stream, the rows and positions the later frames record.
    pub fn losses(&self) -> BTreeMap<String, StreamLoss> {
        let mut losses: BTreeMap<String, StreamLoss> = BTreeMap::new();
        for entry in self.later.iter().flat_map(|f| &f.record.entries) {
            match entry {
                Entry::AddFile(file) => {
                    for part in &file.partitions {
                        let loss = losses.entry(part.stream.clone()).or_default();
                        loss.n_rows = loss.n_rows.saturating_add(part.n_rows);
                        loss.note(part.positions[0], part.positions[1]);
                    }
                }
                Entry::Watermark { stream, position } | Entry::Fence { stream, position } => {
                    losses
                        .entry(stream.clone())
                        .or_default()
                        .note(*position, *position);
                }
                _ => {}
            }
        }
        losses
    }

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
        for (stream, loss) in self.losses() {
            let _ = write!(text, "; stream {stream:?}: {} row(s)", loss.n_rows);
            if let Some([lo, hi]) = loss.positions {
                let _ = write!(text, " at positions {lo}..={hi}");
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
