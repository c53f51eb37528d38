//! The manifest's bytes: a header, then checksummed frames, one [`Record`] per frame.
//!
//! ```text
//! header: magic "STRATAMF" (8) | format version u32 LE (1 to 4) | reserved u32 LE (= 0)
//! frame:  len u32 LE | crc u32 LE | body (len bytes)
//!         crc = crc32c(len bytes ++ body)
//! body:   version u8 (1 to 4) | n_entries u32 LE | entries, each tag u8 + payload
//! ```
//!
//! Format 2 adds one entry kind, `Lineage` (tag 12), which only a body of version 2 may hold;
//! format 3 adds `Preamble` (tag 13), the only entry of a body of version 3, which may only be a
//! manifest's first frame ([`crate::generation`]); format 4 adds `DeclareTime` (tag 14), the
//! declaration of a stream whose axis is time, which only a body of version 4 may hold. A frame
//! is written in the lowest body version that holds its entries (1 unless it holds a
//! `Lineage`, a `Preamble` or a `DeclareTime`), and a body's version
//! may not pass its manifest's: so a build that knows only an older format refuses a newer
//! manifest whole by its header, and still reads an older manifest this build appended to.
//!
//! The checksum covers the length so that a torn or flipped length is caught by the frame's own
//! check rather than being trusted to find the next frame. Parsing stops at the first frame that
//! fails any check: nothing after it is read, because after one bad frame the reader no longer
//! knows where frames begin. The byte-exact layout of every entry is in `docs/manifest.md`.

use std::fmt;

use crate::key::TrackKey;
use crate::lineage::{Lineage, LineageRun, ManifestState};
use crate::record::{
    Entry, FieldDecl, FieldKind, FileEntry, Floor, History, LadderSpec, PartitionEntry, Preamble,
    Record, Retirement, StreamDecl, Tier, TimeUnit,
};

/// The manifest file's magic bytes.
pub const LOG_MAGIC: [u8; 8] = *b"STRATAMF";
/// The manifest format version this build writes (for every new generation); it reads
/// [`LOG_VERSION_MIN`] up to this.
pub const LOG_VERSION: u32 = 4;
/// The oldest manifest format version this build reads.
pub const LOG_VERSION_MIN: u32 = 1;
/// Length of the manifest header.
pub const LOG_HEADER_LEN: usize = 16;
/// Length of a frame header (`len` + `crc`).
pub const FRAME_HEADER_LEN: usize = 8;
/// The largest frame body; a longer declared length is a fault, never an allocation.
pub const FRAME_BODY_MAX: usize = 64 * 1024 * 1024;
/// The newest body version this build writes and reads (it reads the older ones too): 2 adds
/// `Lineage`, 3 adds `Preamble`, 4 adds `DeclareTime`.
pub const BODY_VERSION: u8 = 4;
/// The first manifest format that records a time axis's unit (`DeclareTime`, tag 14): a
/// declaration with a [`crate::TimeUnit`] is appended only to a generation of this format or
/// later (an older one is rewritten first).
pub const TIME_FORMAT: u32 = 4;

// Entry tags. Never renumber: they are on disk.
const TAG_DECLARE: u8 = 1;
const TAG_ADD_FILE: u8 = 2;
const TAG_RETIRE: u8 = 3;
const TAG_WATERMARK: u8 = 4;
const TAG_NAME_HIGH: u8 = 5;
const TAG_FENCE: u8 = 6;
const TAG_MERGE: u8 = 7;
const TAG_ASSIGNED: u8 = 8;
const TAG_CLAIM: u8 = 9;
const TAG_HISTORY: u8 = 10;
const TAG_FLOOR: u8 = 11;
const TAG_LINEAGE: u8 = 12;
const TAG_PREAMBLE: u8 = 13;
const TAG_DECLARE_TIME: u8 = 14;

// Tier kinds inside a Retire payload.
const TIER_RAW: u8 = 0;
const TIER_LEVEL: u8 = 1;

/// The manifest header this build writes: magic, format version [`LOG_VERSION`], reserved zero.
pub fn log_header() -> [u8; LOG_HEADER_LEN] {
    log_header_of(LOG_VERSION)
}

/// The manifest header of format `version` (a replica rebuilding an older writer's manifest).
pub fn log_header_of(version: u32) -> [u8; LOG_HEADER_LEN] {
    let mut header = [0u8; LOG_HEADER_LEN];
    header[..8].copy_from_slice(&LOG_MAGIC);
    header[8..12].copy_from_slice(&version.to_le_bytes());
    header[12..16].copy_from_slice(&0u32.to_le_bytes());
    header
}

/// Why one frame could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FrameFault {
    /// Fewer than [`FRAME_HEADER_LEN`] bytes are left.
    TruncatedHeader {
        /// Bytes left.
        available: usize,
    },
    /// The declared body length is over [`FRAME_BODY_MAX`].
    BodyTooLong {
        /// The declared length.
        declared: u32,
    },
    /// Fewer body bytes are left than the frame declares.
    TruncatedBody {
        /// The declared length.
        declared: u32,
        /// Body bytes present.
        available: usize,
    },
    /// The stored checksum does not match the bytes.
    Checksum {
        /// The checksum stored in the frame header.
        expected: u32,
        /// The checksum computed over the length and body read.
        got: u32,
    },
    /// The body's version byte is not one this build reads (1 to [`BODY_VERSION`]).
    UnknownVersion {
        /// The version byte read.
        version: u8,
    },
    /// The body's version is newer than its manifest's format allows (a version-2 body in a
    /// format-1 manifest).
    VersionAboveLog {
        /// The body's version byte.
        version: u8,
        /// The manifest's format version.
        log_version: u32,
    },
    /// The body passed its checksum but does not decode as a record.
    Malformed {
        /// Offset inside the body where the bad item starts.
        body_offset: usize,
        /// What was being read and what was wrong with it.
        detail: String,
    },
}

impl FrameFault {
    /// Whether the frame was cut short (a torn append), rather than present but wrong.
    pub fn is_truncation(&self) -> bool {
        matches!(
            self,
            Self::TruncatedHeader { .. } | Self::TruncatedBody { .. }
        )
    }
}

impl fmt::Display for FrameFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TruncatedHeader { available } => write!(
                f,
                "frame header truncated: {FRAME_HEADER_LEN} bytes needed, {available} present"
            ),
            Self::BodyTooLong { declared } => write!(
                f,
                "frame body length {declared} is over the maximum of {FRAME_BODY_MAX}"
            ),
            Self::TruncatedBody {
                declared,
                available,
            } => write!(
                f,
                "frame body truncated: {declared} bytes declared, {available} present"
            ),
            Self::Checksum { expected, got } => {
                write!(
                    f,
                    "frame checksum mismatch: expected {expected:#010x}, got {got:#010x}"
                )
            }
            Self::UnknownVersion { version } => write!(
                f,
                "unknown frame body version {version} (this build reads 1 to {BODY_VERSION})"
            ),
            Self::VersionAboveLog {
                version,
                log_version,
            } => write!(
                f,
                "frame body version {version} in a manifest of format {log_version}, which \
                 holds bodies of version {log_version} at most"
            ),
            Self::Malformed {
                body_offset,
                detail,
            } => {
                write!(
                    f,
                    "malformed frame body at body offset {body_offset}: {detail}"
                )
            }
        }
    }
}

impl std::error::Error for FrameFault {}

/// Why the trusted prefix of a manifest ends where it does.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FaultReason {
    /// The file is shorter than the header.
    ShortHeader {
        /// Bytes present.
        available: usize,
    },
    /// The header does not start with [`LOG_MAGIC`].
    BadMagic {
        /// The first 8 bytes found.
        got: [u8; 8],
    },
    /// The header's format version is not one this build reads ([`LOG_VERSION_MIN`] to
    /// [`LOG_VERSION`]).
    UnsupportedVersion {
        /// The version found.
        version: u32,
    },
    /// The header's reserved field is not zero.
    ReservedNotZero {
        /// The value found.
        got: u32,
    },
    /// A frame failed its own check.
    Frame(FrameFault),
}

impl fmt::Display for FaultReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ShortHeader { available } => write!(
                f,
                "manifest header truncated: {LOG_HEADER_LEN} bytes needed, {available} present"
            ),
            Self::BadMagic { got } => write!(
                f,
                "bad manifest magic \"{}\" (expected \"{}\")",
                got.escape_ascii(),
                LOG_MAGIC.escape_ascii()
            ),
            Self::UnsupportedVersion { version } => write!(
                f,
                "unsupported manifest format version {version} (this build reads \
                 {LOG_VERSION_MIN} to {LOG_VERSION})"
            ),
            Self::ReservedNotZero { got } => {
                write!(f, "manifest header reserved field is {got}, expected 0")
            }
            Self::Frame(fault) => fault.fmt(f),
        }
    }
}

/// Where and why parsing stopped before the end of the bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    /// Byte offset in the manifest: 0 for a header fault, else the start of the bad frame.
    pub offset: u64,
    /// What was wrong.
    pub reason: FaultReason,
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "manifest fault at byte {}: {}", self.offset, self.reason)
    }
}

impl std::error::Error for Fault {}

/// The trusted prefix of a manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedLog {
    /// The records of every good frame, in order.
    pub records: Vec<Record>,
    /// Header plus every good frame; 0 if the header is bad. Everything after it is the tail.
    pub trusted_len: u64,
    /// Why the trusted prefix ends before the bytes do; `None` when they end after a good frame.
    pub fault: Option<Fault>,
}

/// Parses a whole manifest: the header, then frames up to the first bad one. Never panics.
///
/// # Panics
/// Never because of the input; only if [`decode_frame`] broke its own contract (a bug).
pub fn parse_log(bytes: &[u8]) -> ParsedLog {
    let log_version = match check_header(bytes) {
        Ok(version) => version,
        Err(reason) => {
            return ParsedLog {
                records: Vec::new(),
                trusted_len: 0,
                fault: Some(Fault { offset: 0, reason }),
            };
        }
    };
    let mut records = Vec::new();
    let mut pos = LOG_HEADER_LEN;
    let fault = loop {
        let rest = bytes.get(pos..).unwrap_or_default();
        if rest.is_empty() {
            break None;
        }
        match decode_frame_in(rest, log_version) {
            Ok((record, _)) if pos != LOG_HEADER_LEN && crate::generation::is_preamble(&record) => {
                // A preamble describes the generation from its first frame; anywhere else it
                // would be a second, contradicting account of the bytes before it.
                break Some(Fault {
                    offset: offset_u64(pos),
                    reason: FaultReason::Frame(FrameFault::Malformed {
                        body_offset: 0,
                        detail: "a Preamble after the manifest's first frame".to_owned(),
                    }),
                });
            }
            Ok((record, consumed)) => {
                assert!(
                    consumed > 0 && consumed <= rest.len(),
                    "a frame lies within its bytes"
                );
                records.push(record);
                pos += consumed;
            }
            Err(fault) => {
                break Some(Fault {
                    offset: offset_u64(pos),
                    reason: FaultReason::Frame(fault),
                });
            }
        }
    };
    ParsedLog {
        records,
        trusted_len: offset_u64(pos),
        fault,
    }
}

/// A frame found past a manifest's trusted prefix that passes every check of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StrayFrame {
    /// Where the frame starts in the manifest.
    pub offset: u64,
    /// What it records.
    pub record: Record,
}

/// The frames that pass their own checks anywhere in `bytes` at or after `from`, in order.
///
/// An interrupted append leaves at most one frame, cut short or half-written, at the end of the
/// log; nothing that decodes follows it. A good frame found after a bad one therefore means the
/// bad one is damage to history that was acknowledged, not a torn write. Because a damaged length
/// field hides where the next frame starts, every offset is tried; a candidate costs a checksum
/// only when its declared length fits in the bytes left, and a frame found is skipped whole.
/// Never panics.
pub fn scan_frames(bytes: &[u8], from: u64) -> Vec<StrayFrame> {
    let mut found = Vec::new();
    let mut pos = usize::try_from(from).unwrap_or(usize::MAX);
    while let Some(rest) = bytes.get(pos..) {
        if rest.len() < FRAME_HEADER_LEN {
            break;
        }
        // Cheap necessary conditions first, so most offsets cost no checksum at all: a body
        // holds at least its version byte and an entry count, and starts with the version.
        let plausible = rest
            .first_chunk::<4>()
            .map(|len| u32::from_le_bytes(*len))
            .is_some_and(|len| len >= 5 && len as usize <= rest.len() - FRAME_HEADER_LEN)
            && rest
                .get(FRAME_HEADER_LEN)
                .is_some_and(|v| (1..=BODY_VERSION).contains(v));
        if !plausible {
            pos += 1;
            continue;
        }
        match decode_frame(rest) {
            Ok((record, consumed)) => {
                found.push(StrayFrame {
                    offset: offset_u64(pos),
                    record,
                });
                pos += consumed;
            }
            Err(_) => pos += 1,
        }
    }
    found
}

fn offset_u64(pos: usize) -> u64 {
    u64::try_from(pos).expect("a byte offset fits u64")
}

/// The header's format version, if the header is one this build reads.
pub fn check_header(bytes: &[u8]) -> Result<u32, FaultReason> {
    let Some((header, _)) = bytes.split_first_chunk::<LOG_HEADER_LEN>() else {
        return Err(FaultReason::ShortHeader {
            available: bytes.len(),
        });
    };
    // `header` is a fixed-size array, so these constant indexes are checked at compile time.
    let magic = [
        header[0], header[1], header[2], header[3], header[4], header[5], header[6], header[7],
    ];
    if magic != LOG_MAGIC {
        return Err(FaultReason::BadMagic { got: magic });
    }
    let version = u32::from_le_bytes([header[8], header[9], header[10], header[11]]);
    if !(LOG_VERSION_MIN..=LOG_VERSION).contains(&version) {
        return Err(FaultReason::UnsupportedVersion { version });
    }
    let reserved = u32::from_le_bytes([header[12], header[13], header[14], header[15]]);
    if reserved != 0 {
        return Err(FaultReason::ReservedNotZero { got: reserved });
    }
    Ok(version)
}

/// Splits `record` into consecutive records, in order, each of whose frame bodies stays within
/// `body_max` bytes — for a snapshot of a large catalog, which no single frame may hold. Applied
/// one after another they state what the whole record states, as long as every entry is valid
/// after the entries before it (true of a snapshot). An entry larger than `body_max` alone gets a
/// record of its own.
pub fn split_record(record: Record, body_max: usize) -> Vec<Record> {
    // Version byte and entry count.
    const BODY_OVERHEAD: usize = 5;
    let mut records = Vec::new();
    let mut entries = Vec::new();
    let mut body_len = BODY_OVERHEAD;
    for entry in record.entries {
        let mut encoded = Vec::new();
        put_entry(&mut encoded, &entry);
        if !entries.is_empty() && body_len + encoded.len() > body_max {
            records.push(Record {
                entries: std::mem::take(&mut entries),
            });
            body_len = BODY_OVERHEAD;
        }
        body_len += encoded.len();
        entries.push(entry);
    }
    if !entries.is_empty() || records.is_empty() {
        records.push(Record { entries });
    }
    records
}

/// Encodes one record as one frame.
///
/// # Panics
/// If the body would be longer than [`FRAME_BODY_MAX`]: the caller must split such a record.
pub fn encode_frame(record: &Record) -> Vec<u8> {
    // The lowest version that holds the entries, so that a format-1 manifest a barrier appends
    // to stays readable by a build of format 1 (a `Lineage` or a `Preamble` is written only
    // into a new generation of this build's format).
    let mut body = vec![body_version_of(&record.entries)];
    put_len(&mut body, record.entries.len());
    for entry in &record.entries {
        put_entry(&mut body, entry);
    }
    assert!(
        body.len() <= FRAME_BODY_MAX,
        "frame body of {} bytes is over FRAME_BODY_MAX",
        body.len()
    );
    let len = u32::try_from(body.len()).expect("FRAME_BODY_MAX fits u32");
    let len_bytes = len.to_le_bytes();
    let crc = crc32c::crc32c_append(crc32c::crc32c(&len_bytes), &body);
    let mut frame = Vec::with_capacity(FRAME_HEADER_LEN + body.len());
    frame.extend_from_slice(&len_bytes);
    frame.extend_from_slice(&crc.to_le_bytes());
    frame.extend_from_slice(&body);
    frame
}

/// Decodes the frame at the start of `bytes`: its record and the bytes it took. Never panics.
///
/// Bytes after the frame are not looked at. Reads every body version this build knows; a frame
/// inside a manifest is decoded by [`parse_log`], which also holds each body to its manifest's
/// format.
pub fn decode_frame(bytes: &[u8]) -> Result<(Record, usize), FrameFault> {
    decode_frame_in(bytes, LOG_VERSION)
}

/// [`decode_frame`] of a frame in a manifest of format `log_version`: a body of a newer version
/// than the format allows is refused ([`FrameFault::VersionAboveLog`]).
pub fn decode_frame_in(bytes: &[u8], log_version: u32) -> Result<(Record, usize), FrameFault> {
    let Some((len_bytes, rest)) = bytes.split_first_chunk::<4>() else {
        return Err(FrameFault::TruncatedHeader {
            available: bytes.len(),
        });
    };
    let Some((crc_bytes, rest)) = rest.split_first_chunk::<4>() else {
        return Err(FrameFault::TruncatedHeader {
            available: bytes.len(),
        });
    };
    let declared = u32::from_le_bytes(*len_bytes);
    let body_len = usize::try_from(declared).unwrap_or(usize::MAX);
    if body_len > FRAME_BODY_MAX {
        return Err(FrameFault::BodyTooLong { declared });
    }
    let Some(body) = rest.get(..body_len) else {
        return Err(FrameFault::TruncatedBody {
            declared,
            available: rest.len(),
        });
    };
    let expected = u32::from_le_bytes(*crc_bytes);
    let got = crc32c::crc32c_append(crc32c::crc32c(len_bytes), body);
    if expected != got {
        return Err(FrameFault::Checksum { expected, got });
    }
    let Some(&version) = body.first() else {
        return Err(FrameFault::Malformed {
            body_offset: 0,
            detail: "empty body: the version byte is missing".to_owned(),
        });
    };
    if !(1..=BODY_VERSION).contains(&version) {
        return Err(FrameFault::UnknownVersion { version });
    }
    if u32::from(version) > log_version {
        return Err(FrameFault::VersionAboveLog {
            version,
            log_version,
        });
    }
    let record = decode_entries(body, version).map_err(|m| FrameFault::Malformed {
        body_offset: m.body_offset,
        detail: m.detail,
    })?;
    Ok((record, FRAME_HEADER_LEN + body_len))
}

/// The body version a record of `entries` is written in: the lowest that holds them all.
fn body_version_of(entries: &[Entry]) -> u8 {
    entries.iter().map(entry_version).max().unwrap_or(1)
}

/// The oldest body version that may hold `entry`.
fn entry_version(entry: &Entry) -> u8 {
    match entry {
        Entry::Lineage(_) => 2,
        Entry::Preamble(_) => 3,
        Entry::Declare(decl) if decl.time.is_some() => 4,
        _ => 1,
    }
}

/// The oldest manifest format that may hold every entry of `records`: what a generation must
/// be to have them appended ([`TIME_FORMAT`] for a time axis's declaration).
pub fn format_of(records: &[Record]) -> u32 {
    records
        .iter()
        .map(|record| u32::from(body_version_of(&record.entries)))
        .max()
        .unwrap_or(1)
}

/// The name and tag of the entry that needs body version `version`, for messages.
fn entry_of_version(version: u8) -> (&'static str, u8) {
    match version {
        2 => ("Lineage", TAG_LINEAGE),
        3 => ("Preamble", TAG_PREAMBLE),
        _ => ("DeclareTime", TAG_DECLARE_TIME),
    }
}

/// Decodes the entries of a body whose version byte (at offset 0, `version`) was already
/// checked.
fn decode_entries(body: &[u8], version: u8) -> Result<Record, Malformed> {
    let mut r = Reader { body, pos: 1 };
    let n_entries = r.count("entry count")?;
    let mut entries = Vec::with_capacity(n_entries.min(r.remaining()));
    for entry_idx in 0..n_entries {
        let at = r.pos;
        let entry = get_entry(&mut r).map_err(|m| m.within(format_args!("entry {entry_idx}")))?;
        let needs = entry_version(&entry);
        if version < needs {
            let (name, tag) = entry_of_version(needs);
            return Err(Malformed::new(
                at,
                format!("entry {entry_idx}: a {name} (tag {tag}) in a version-{version} body"),
            ));
        }
        entries.push(entry);
    }
    if r.remaining() > 0 {
        return Err(Malformed::new(
            r.pos,
            format!("{} trailing bytes after the last entry", r.remaining()),
        ));
    }
    // A preamble speaks for the frame it opens: nothing else shares its record.
    if entries.len() > 1 && entries.iter().any(|e| matches!(e, Entry::Preamble(_))) {
        return Err(Malformed::new(
            0,
            "a Preamble beside other entries (it is its record's only entry)".to_owned(),
        ));
    }
    // One encoding per record: a body is written in the lowest version that holds it.
    let lowest = body_version_of(&entries);
    if version != lowest {
        // Only a higher version than its entries need is left to refuse here.
        let (missing, _) = entry_of_version(version);
        return Err(Malformed::new(
            0,
            format!(
                "a version-{version} body holding no {missing} entry (such a body is written as \
                 version {lowest})"
            ),
        ));
    }
    Ok(Record { entries })
}

// ---- writing ----

fn put_len(buf: &mut Vec<u8>, n: usize) {
    // Anything longer than u32 is far over FRAME_BODY_MAX, which encode_frame asserts anyway.
    let n = u32::try_from(n).expect("a length inside a frame fits u32");
    buf.extend_from_slice(&n.to_le_bytes());
}

fn put_u64(buf: &mut Vec<u8>, v: u64) {
    buf.extend_from_slice(&v.to_le_bytes());
}

fn put_str(buf: &mut Vec<u8>, s: &str) {
    put_len(buf, s.len());
    buf.extend_from_slice(s.as_bytes());
}

fn put_key(buf: &mut Vec<u8>, key: &TrackKey) {
    put_len(buf, key.as_bytes().len());
    buf.extend_from_slice(key.as_bytes());
}

fn put_range(buf: &mut Vec<u8>, [lo, hi]: [u64; 2]) {
    put_u64(buf, lo);
    put_u64(buf, hi);
}

fn put_entry(buf: &mut Vec<u8>, entry: &Entry) {
    match entry {
        Entry::Declare(decl) => match decl.time {
            None => {
                buf.push(TAG_DECLARE);
                put_decl(buf, decl);
            }
            // A time axis's unit follows the declaration's bytes, under a tag of its own, so a
            // declaration without one keeps the bytes of format 1.
            Some(unit) => {
                buf.push(TAG_DECLARE_TIME);
                put_decl(buf, decl);
                buf.push(unit.code());
            }
        },
        Entry::AddFile(file) => {
            buf.push(TAG_ADD_FILE);
            put_file(buf, file);
        }
        Entry::Retire(retirement) => {
            buf.push(TAG_RETIRE);
            put_u64(buf, retirement.file);
            put_str(buf, &retirement.stream);
            put_key(buf, &retirement.track);
            put_tier(buf, retirement.tier);
        }
        Entry::Watermark { stream, position } => {
            buf.push(TAG_WATERMARK);
            put_str(buf, stream);
            put_u64(buf, *position);
        }
        Entry::NameHigh(name) => {
            buf.push(TAG_NAME_HIGH);
            put_u64(buf, *name);
        }
        Entry::Fence { stream, position } => {
            buf.push(TAG_FENCE);
            put_str(buf, stream);
            put_u64(buf, *position);
        }
        Entry::Merge { file, inputs } => {
            buf.push(TAG_MERGE);
            put_file(buf, file);
            put_len(buf, inputs.len());
            for &input in inputs {
                put_u64(buf, input);
            }
        }
        Entry::Assigned {
            stream,
            next_ordinal,
            last_position,
        } => {
            buf.push(TAG_ASSIGNED);
            put_str(buf, stream);
            put_u64(buf, *next_ordinal);
            put_u64(buf, *last_position);
        }
        Entry::Claim(file) => {
            buf.push(TAG_CLAIM);
            put_file(buf, file);
        }
        Entry::History(history) => {
            buf.push(TAG_HISTORY);
            put_u64(buf, history.barrier_files);
            put_u64(buf, history.barrier_bytes);
            put_u64(buf, history.merge_files);
            put_u64(buf, history.merge_bytes);
            put_u64(buf, history.max_added);
        }
        Entry::Floor(floor) => {
            buf.push(TAG_FLOOR);
            put_str(buf, &floor.stream);
            put_key(buf, &floor.track);
            put_tier(buf, floor.tier);
            put_option(buf, floor.position);
            put_option(buf, floor.axis);
        }
        Entry::Lineage(lineage) => {
            buf.push(TAG_LINEAGE);
            put_lineage(buf, lineage);
        }
        Entry::Preamble(preamble) => {
            buf.push(TAG_PREAMBLE);
            put_preamble(buf, preamble);
        }
    }
}

/// Fixed width, so that the frame holding it is [`crate::generation::PREAMBLE_FRAME_LEN`] long
/// whatever it says: the whole length, then the generation replaced (0 for none, which no
/// generation is), its length and its crc32c (both 0 for none).
fn put_preamble(buf: &mut Vec<u8>, preamble: &Preamble) {
    put_u64(buf, preamble.whole_len);
    let replaced = preamble.replaces.unwrap_or(ManifestState {
        generation: 0,
        end: 0,
        crc: 0,
    });
    buf.extend_from_slice(&replaced.generation.to_le_bytes());
    put_u64(buf, replaced.end);
    buf.extend_from_slice(&replaced.crc.to_le_bytes());
}

/// Per run: generation `u32`, `n` `u32`, the first state's end `u64` and crc `u32`, then for
/// each later state the growth of its end since the one before (`u32`: a frame is shorter
/// than 4 GiB) and its crc `u32`.
fn put_lineage(buf: &mut Vec<u8>, lineage: &Lineage) {
    put_len(buf, lineage.runs().len());
    for run in lineage.runs() {
        buf.extend_from_slice(&run.generation.to_le_bytes());
        put_len(buf, run.states.len());
        let mut before = None;
        for &(end, crc) in &run.states {
            match before {
                None => put_u64(buf, end),
                Some(prev) => {
                    let growth = u32::try_from(end - prev).expect("a frame is under 4 GiB");
                    buf.extend_from_slice(&growth.to_le_bytes());
                }
            }
            buf.extend_from_slice(&crc.to_le_bytes());
            before = Some(end);
        }
    }
}

fn put_tier(buf: &mut Vec<u8>, tier: Tier) {
    match tier {
        Tier::Raw => buf.push(TIER_RAW),
        Tier::Level(k) => buf.extend_from_slice(&[TIER_LEVEL, k]),
    }
}

/// An optional `u64`: a presence byte (0 or 1), then the value if present.
fn put_option(buf: &mut Vec<u8>, value: Option<u64>) {
    match value {
        None => buf.push(0),
        Some(v) => {
            buf.push(1);
            put_u64(buf, v);
        }
    }
}

fn put_decl(buf: &mut Vec<u8>, decl: &StreamDecl) {
    put_str(buf, &decl.id);
    put_len(buf, decl.fields.len());
    for field in &decl.fields {
        put_str(buf, &field.name);
        buf.push(field.kind.code());
    }
    put_len(buf, decl.track.len());
    for field_idx in &decl.track {
        buf.extend_from_slice(&field_idx.to_le_bytes());
    }
    match decl.axis {
        None => buf.push(0),
        Some(field_idx) => {
            buf.push(1);
            buf.extend_from_slice(&field_idx.to_le_bytes());
        }
    }
    put_u64(buf, decl.ladder.base);
    put_u64(buf, decl.ladder.fanout);
}

fn put_file(buf: &mut Vec<u8>, file: &FileEntry) {
    put_u64(buf, file.name);
    put_u64(buf, file.len);
    buf.extend_from_slice(&file.digest.to_le_bytes());
    put_len(buf, file.partitions.len());
    for part in &file.partitions {
        put_str(buf, &part.stream);
        put_key(buf, &part.track);
        put_u64(buf, part.n_rows);
        put_range(buf, part.positions);
        put_range(buf, part.ordinals);
        match part.axis {
            None => buf.push(0),
            Some(axis) => {
                buf.push(1);
                put_range(buf, axis);
            }
        }
        buf.push(part.n_levels);
        put_u64(buf, part.offset);
        put_u64(buf, part.len);
    }
}

// ---- reading ----

/// A decoding failure inside a body, before it is wrapped as a [`FrameFault`].
#[derive(Debug)]
struct Malformed {
    body_offset: usize,
    detail: String,
}

impl Malformed {
    fn new(body_offset: usize, detail: String) -> Self {
        Self {
            body_offset,
            detail,
        }
    }

    fn within(mut self, context: fmt::Arguments<'_>) -> Self {
        self.detail = format!("{context}: {}", self.detail);
        self
    }
}

/// A cursor over a frame body. Every read checks the bytes left before taking them.
struct Reader<'a> {
    body: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn rest(&self) -> &'a [u8] {
        self.body.get(self.pos..).unwrap_or_default()
    }

    fn remaining(&self) -> usize {
        self.rest().len()
    }

    fn short(&self, needed: usize, what: &str) -> Malformed {
        Malformed::new(
            self.pos,
            format!("{what}: {needed} bytes needed, {} left", self.remaining()),
        )
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N], Malformed> {
        let Some((head, _)) = self.rest().split_first_chunk::<N>() else {
            return Err(self.short(N, what));
        };
        self.pos += N;
        Ok(*head)
    }

    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], Malformed> {
        let Some(head) = self.rest().get(..n) else {
            return Err(self.short(n, what));
        };
        self.pos += n;
        Ok(head)
    }

    fn u8(&mut self, what: &str) -> Result<u8, Malformed> {
        Ok(self.array::<1>(what)?[0])
    }

    fn u16(&mut self, what: &str) -> Result<u16, Malformed> {
        self.array(what).map(u16::from_le_bytes)
    }

    fn u32(&mut self, what: &str) -> Result<u32, Malformed> {
        self.array(what).map(u32::from_le_bytes)
    }

    fn u64(&mut self, what: &str) -> Result<u64, Malformed> {
        self.array(what).map(u64::from_le_bytes)
    }

    /// A u32 count or length. Callers bound any allocation by `remaining()`, never by this.
    fn count(&mut self, what: &str) -> Result<usize, Malformed> {
        self.u32(what)
            .map(|n| usize::try_from(n).unwrap_or(usize::MAX))
    }

    fn flag(&mut self, what: &str) -> Result<bool, Malformed> {
        let at = self.pos;
        match self.u8(what)? {
            0 => Ok(false),
            1 => Ok(true),
            other => Err(Malformed::new(
                at,
                format!("{what}: option flag {other}, expected 0 or 1"),
            )),
        }
    }

    fn range(&mut self, what: &str) -> Result<[u64; 2], Malformed> {
        Ok([self.u64(what)?, self.u64(what)?])
    }

    /// Length-prefixed bytes, returned with the offset of their first byte.
    fn sized(&mut self, what: &str) -> Result<(usize, &'a [u8]), Malformed> {
        let n = self.count(what)?;
        let at = self.pos;
        Ok((at, self.take(n, what)?))
    }

    fn string(&mut self, what: &str) -> Result<String, Malformed> {
        let (at, bytes) = self.sized(what)?;
        match std::str::from_utf8(bytes) {
            Ok(text) => Ok(text.to_owned()),
            Err(e) => Err(Malformed::new(
                at + e.valid_up_to(),
                format!("{what}: not UTF-8"),
            )),
        }
    }

    fn key(&mut self, what: &str) -> Result<TrackKey, Malformed> {
        let (at, bytes) = self.sized(what)?;
        TrackKey::decode(bytes).map_err(|e| Malformed::new(at, format!("{what}: {e}")))
    }
}

fn get_entry(r: &mut Reader<'_>) -> Result<Entry, Malformed> {
    let at = r.pos;
    match r.u8("entry tag")? {
        TAG_DECLARE => get_decl(r).map(Entry::Declare),
        TAG_DECLARE_TIME => {
            let mut decl = get_decl(r)?;
            let at = r.pos;
            let code = r.u8("time unit")?;
            let Some(unit) = TimeUnit::from_code(code) else {
                return Err(Malformed::new(
                    at,
                    format!("time unit: unknown code {code}"),
                ));
            };
            decl.time = Some(unit);
            Ok(Entry::Declare(decl))
        }
        TAG_ADD_FILE => get_file(r).map(Entry::AddFile),
        TAG_RETIRE => {
            let file = r.u64("retired file name")?;
            let stream = r.string("retired stream")?;
            let track = r.key("retired track")?;
            let tier = get_tier(r)?;
            Ok(Entry::Retire(Retirement {
                file,
                stream,
                track,
                tier,
            }))
        }
        TAG_WATERMARK => {
            let stream = r.string("watermark stream")?;
            let position = r.u64("watermark position")?;
            Ok(Entry::Watermark { stream, position })
        }
        TAG_NAME_HIGH => r.u64("name high").map(Entry::NameHigh),
        TAG_FENCE => {
            let stream = r.string("fence stream")?;
            let position = r.u64("fence position")?;
            Ok(Entry::Fence { stream, position })
        }
        TAG_MERGE => {
            let file = get_file(r).map_err(|m| m.within(format_args!("merged file")))?;
            let n_inputs = r.count("merge input count")?;
            let mut inputs = Vec::with_capacity(n_inputs.min(r.remaining()));
            for _ in 0..n_inputs {
                inputs.push(r.u64("merge input")?);
            }
            Ok(Entry::Merge { file, inputs })
        }
        TAG_ASSIGNED => {
            let stream = r.string("assigned stream")?;
            let next_ordinal = r.u64("assigned next ordinal")?;
            let last_position = r.u64("assigned last position")?;
            Ok(Entry::Assigned {
                stream,
                next_ordinal,
                last_position,
            })
        }
        TAG_CLAIM => get_file(r)
            .map_err(|m| m.within(format_args!("claimed file")))
            .map(Entry::Claim),
        TAG_HISTORY => Ok(Entry::History(History {
            barrier_files: r.u64("history barrier files")?,
            barrier_bytes: r.u64("history barrier bytes")?,
            merge_files: r.u64("history merge files")?,
            merge_bytes: r.u64("history merge bytes")?,
            max_added: r.u64("history highest name added")?,
        })),
        TAG_FLOOR => Ok(Entry::Floor(Floor {
            stream: r.string("floor stream")?,
            track: r.key("floor track")?,
            tier: get_tier(r)?,
            position: get_option(r, "floor position")?,
            axis: get_option(r, "floor axis")?,
        })),
        TAG_LINEAGE => get_lineage(r).map(Entry::Lineage),
        TAG_PREAMBLE => get_preamble(r).map(Entry::Preamble),
        other => Err(Malformed::new(at, format!("unknown entry tag {other}"))),
    }
}

fn get_preamble(r: &mut Reader<'_>) -> Result<Preamble, Malformed> {
    let len_at = r.pos;
    let whole_len = r.u64("preamble whole length")?;
    let at = r.pos;
    let generation = r.u32("preamble generation replaced")?;
    let end = r.u64("preamble length replaced")?;
    let crc = r.u32("preamble crc replaced")?;
    if whole_len < (LOG_HEADER_LEN + crate::generation::PREAMBLE_FRAME_LEN) as u64 {
        return Err(Malformed::new(
            len_at,
            format!("preamble whole length {whole_len} ends inside the preamble itself"),
        ));
    }
    let replaces = match generation {
        // One encoding: "none" is all zeros.
        0 if end == 0 && crc == 0 => None,
        0 => {
            return Err(Malformed::new(
                at,
                "preamble replaces no generation but names a length or crc".to_owned(),
            ));
        }
        _ => Some(ManifestState {
            generation,
            end,
            crc,
        }),
    };
    Ok(Preamble {
        whole_len,
        replaces,
    })
}

fn get_lineage(r: &mut Reader<'_>) -> Result<Lineage, Malformed> {
    let at = r.pos;
    let n_runs = r.count("lineage run count")?;
    // A run takes at least 20 bytes (generation, count, a first state): no allocation past
    // what the body holds.
    let mut runs = Vec::with_capacity(n_runs.min(r.remaining() / 20));
    for run_idx in 0..n_runs {
        let generation = r.u32("lineage generation")?;
        let n_states = r.count("lineage state count")?;
        // Each state takes at least 8 bytes (16 in memory): no allocation past twice what the
        // body holds.
        let mut states = Vec::with_capacity(n_states.min(r.remaining() / 8));
        let mut end = 0u64;
        for state_idx in 0..n_states {
            end = if state_idx == 0 {
                r.u64("lineage end")?
            } else {
                let growth = r.u32("lineage growth")?;
                end.checked_add(u64::from(growth)).ok_or_else(|| {
                    Malformed::new(
                        r.pos,
                        format!("lineage run {run_idx}: an end past u64::MAX"),
                    )
                })?
            };
            states.push((end, r.u32("lineage crc")?));
        }
        runs.push(LineageRun { generation, states });
    }
    Lineage::from_runs(runs).map_err(|e| Malformed::new(at, e.0))
}

fn get_tier(r: &mut Reader<'_>) -> Result<Tier, Malformed> {
    let at = r.pos;
    match r.u8("tier kind")? {
        TIER_RAW => Ok(Tier::Raw),
        TIER_LEVEL => Ok(Tier::Level(r.u8("tier level")?)),
        other => Err(Malformed::new(at, format!("unknown tier kind {other}"))),
    }
}

fn get_option(r: &mut Reader<'_>, what: &str) -> Result<Option<u64>, Malformed> {
    let at = r.pos;
    match r.u8(what)? {
        0 => Ok(None),
        1 => r.u64(what).map(Some),
        other => Err(Malformed::new(
            at,
            format!("{what}: presence byte {other}, not 0 or 1"),
        )),
    }
}

fn get_decl(r: &mut Reader<'_>) -> Result<StreamDecl, Malformed> {
    let id = r.string("stream id")?;
    let n_fields = r.count("field count")?;
    let mut fields = Vec::with_capacity(n_fields.min(r.remaining()));
    for field_idx in 0..n_fields {
        let name = r
            .string("field name")
            .map_err(|m| m.within(format_args!("field {field_idx}")))?;
        let at = r.pos;
        let code = r.u8("field kind")?;
        let Some(kind) = FieldKind::from_code(code) else {
            return Err(Malformed::new(
                at,
                format!("field {field_idx} kind: unknown code {code}"),
            ));
        };
        fields.push(FieldDecl { name, kind });
    }
    let n_track = r.count("track count")?;
    let mut track = Vec::with_capacity(n_track.min(r.remaining()));
    for _ in 0..n_track {
        track.push(r.u16("track field index")?);
    }
    let axis = if r.flag("axis")? {
        Some(r.u16("axis field index")?)
    } else {
        None
    };
    let ladder = LadderSpec {
        base: r.u64("ladder base")?,
        fanout: r.u64("ladder fanout")?,
    };
    Ok(StreamDecl {
        id,
        fields,
        track,
        axis,
        ladder,
        time: None,
    })
}

fn get_file(r: &mut Reader<'_>) -> Result<FileEntry, Malformed> {
    let name = r.u64("file name")?;
    let len = r.u64("file length")?;
    let digest = r.u32("file digest")?;
    let n_partitions = r.count("partition count")?;
    let mut partitions = Vec::with_capacity(n_partitions.min(r.remaining()));
    for partition_idx in 0..n_partitions {
        partitions.push(
            get_partition(r).map_err(|m| m.within(format_args!("partition {partition_idx}")))?,
        );
    }
    Ok(FileEntry {
        name,
        len,
        digest,
        partitions,
    })
}

fn get_partition(r: &mut Reader<'_>) -> Result<PartitionEntry, Malformed> {
    Ok(PartitionEntry {
        stream: r.string("stream")?,
        track: r.key("track")?,
        n_rows: r.u64("row count")?,
        positions: r.range("positions")?,
        ordinals: r.range("ordinals")?,
        axis: if r.flag("axis")? {
            Some(r.range("axis")?)
        } else {
            None
        },
        n_levels: r.u8("level count")?,
        offset: r.u64("offset")?,
        len: r.u64("length")?,
    })
}

#[cfg(test)]
mod tests;
