//! What boot found, and what it did (or, for `engine-fsck`, would do) about each thing.

use std::fmt;

use serde::Serialize;

/// The kinds of thing boot can find.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum FindingKind {
    /// Bytes after the manifest's trusted prefix: a frame torn mid-write or failing its check.
    TornManifestTail,
    /// A manifest frame that fails its check, followed by frames that pass theirs: damage to
    /// acknowledged history, not a torn write. The store is refused until an operator repairs it.
    DamagedHistory,
    /// A file in `tmp/`: a write that never claimed its final name.
    OrphanTemp,
    /// A file in `seg/` that no record claims (a crash after the rename, before the record).
    UnrecordedSegment,
    /// An older manifest generation left by a rewrite that crashed before removing it.
    SupersededManifest,
    /// A manifest generation above the store's whole one that is not a whole manifest (empty,
    /// no valid header, bytes that do not parse): no rewrite leaves one. The store is refused
    /// until an operator's repair sets it aside.
    StrayManifest,
    /// A file whose retirement is recorded, still on disk.
    RetiredFile,
    /// A recorded file that is not there. Reads of it are `Unreadable`.
    MissingFile,
    /// A recorded file whose length differs from the record. Reads of it are `Unreadable`.
    WrongLength,
    /// A recorded file whose checksums do not match (found by `--verify`). Reads of what the
    /// bad bytes cover are `Unreadable`.
    BadChecksum,
    /// One of the store's folders is missing.
    MissingFolder,
    /// Something boot does not recognise where it should not be (left in place).
    Foreign,
}

impl FindingKind {
    /// Whether this kind stays a finding after boot has acted on it: evidence kept in quarantine
    /// or a recorded file that cannot be read. A removed retired file or a recreated folder is
    /// healed and gone.
    pub fn persists(self) -> bool {
        !matches!(self, FindingKind::RetiredFile | FindingKind::MissingFolder)
    }
}

impl fmt::Display for FindingKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FindingKind::TornManifestTail => "torn manifest tail",
            FindingKind::DamagedHistory => "damaged manifest history",
            FindingKind::OrphanTemp => "orphan temp",
            FindingKind::UnrecordedSegment => "unrecorded segment",
            FindingKind::SupersededManifest => "superseded manifest",
            FindingKind::StrayManifest => "stray manifest",
            FindingKind::RetiredFile => "retired file",
            FindingKind::MissingFile => "missing file",
            FindingKind::WrongLength => "wrong length",
            FindingKind::BadChecksum => "bad checksum",
            FindingKind::MissingFolder => "missing folder",
            FindingKind::Foreign => "foreign entry",
        })
    }
}

/// What boot does about a finding.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "action", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Action {
    /// Moved (or copied, for a manifest tail) into `quarantine/` under this name.
    Quarantine {
        /// The name inside `quarantine/`.
        to: String,
    },
    /// An identical copy is already in quarantine under this name; this second name of the same
    /// bytes is dropped (a crash between a move's two directory syncs leaves two names).
    AlreadyQuarantined {
        /// The name inside `quarantine/`.
        at: String,
    },
    /// Removed: a second name of a finished write whose final name holds the same bytes.
    DropSecondName {
        /// The final name, relative to the store root.
        of: String,
    },
    /// Removed, because the manifest records its retirement.
    Remove,
    /// Created.
    Create,
    /// Left where it is; reads of it answer `Unreadable`.
    KeepUnreadable,
    /// Left where it is.
    Leave,
    /// Nothing is changed and the store is refused until `engine-fsck repair STORE --yes`.
    RefuseUntilRepaired,
    /// Nothing is changed and the store is refused until `engine-fsck repair STORE --yes`
    /// moves the file into `quarantine/` under this name.
    RefuseUntilSetAside {
        /// The name it would get inside `quarantine/`.
        to: String,
    },
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Action::Quarantine { to } => write!(f, "quarantine as {to}"),
            Action::AlreadyQuarantined { at } => write!(f, "already in quarantine as {at}"),
            Action::DropSecondName { of } => {
                write!(
                    f,
                    "remove: a second name of {of}, which holds the same bytes"
                )
            }
            Action::Remove => f.write_str("remove (retired)"),
            Action::Create => f.write_str("create"),
            Action::KeepUnreadable => f.write_str("keep in place; reads are Unreadable"),
            Action::Leave => f.write_str("leave in place"),
            Action::RefuseUntilRepaired => f.write_str(
                "refuse to open; `engine-fsck repair STORE --yes` repairs it as the reason says, \
                 keeping every byte",
            ),
            Action::RefuseUntilSetAside { to } => write!(
                f,
                "refuse to open; `engine-fsck repair STORE --yes` moves it into quarantine/ as \
                 {to} and opens the store from the whole generation below"
            ),
        }
    }
}

/// One thing boot found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// What it is.
    pub kind: FindingKind,
    /// The file, relative to the store root.
    pub file: String,
    /// Where in the file, when it is about some bytes of it.
    pub offset: Option<u64>,
    /// How many bytes it is about.
    pub bytes: Option<u64>,
    /// Why it is a finding, in words.
    pub reason: String,
    /// What boot does about it.
    #[serde(flatten)]
    pub action: Action,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind, self.file)?;
        if let Some(offset) = self.offset {
            write!(f, " at offset {offset}")?;
        }
        if let Some(bytes) = self.bytes {
            write!(f, " ({bytes} bytes)")?;
        }
        write!(f, ": {} -> {}", self.reason, self.action)
    }
}

/// Everything boot found, in the order it acts.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Report {
    /// The current manifest generation.
    pub generation: u32,
    /// The manifest's length on disk before boot.
    pub manifest_len: u64,
    /// The length of its trusted prefix.
    pub trusted_len: u64,
    /// Frames in the trusted prefix.
    pub n_frames: usize,
    /// The generation kept beside the current one: the one its snapshot was taken from, which a
    /// repair takes it again from should it be damaged. `None` for a generation taken from none
    /// (the store's first, a repair's, an earlier build's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub previous: Option<u32>,
    /// What boot found.
    pub findings: Vec<Finding>,
    /// Whether the changes the findings' actions name were left undone: a read-only open
    /// (`Store::open_read_only`) plans boot and writes nothing, so what it found is still on
    /// disk as found, and the next writable open carries the actions out. `false` when boot
    /// acted, or found nothing to act on.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub heal_pending: bool,
}

impl Report {
    /// Whether boot found nothing at all.
    pub fn is_clean(&self) -> bool {
        self.findings.is_empty()
    }
}
