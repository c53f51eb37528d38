//! Parquet beside the segments (#33, [`RemoteConfig::parquet`](crate::RemoteConfig)): each live
//! segment's raw rows of each stream as one Parquet object, `parquet/STREAM/NAME.parquet`, so
//! that DuckDB, Polars or Spark read the history in place with a glob
//! (`read_parquet('s3://bucket/prefix/parquet/capture/*.parquet')`). Derived data: the strata
//! log never refers to it, replicas never read it, and a failure to write it never holds the
//! log back (docs/remote.md, "Parquet beside the segments").
//!
//! The publisher keeps the set of objects the bucket holds (listed once when it attaches, then
//! kept as it puts and deletes) and, after each publish, brings it to exactly one object per
//! (stream, live segment holding a live raw tier of the stream): first every missing object is
//! put, then the objects no longer wanted are deleted. A glob between the two may count a row
//! twice; it never misses one.
//!
//! An object holds what the segment still holds for the store: the rows of the stream's
//! partitions whose raw tier in that segment is live, from each partition's raw floor up. A
//! barrier's segment holds every partition the barrier touched, and compaction merges one
//! partition at a time, so a segment often loses some of a stream's partitions and keeps the
//! others (as `retire` of a track, a retention sweep, or a trim whose horizon falls inside a
//! partition's rows make it do too). Its object then holds rows the store no longer holds there,
//! and is replaced: the object of the rows it keeps is named by what they are
//! (`NAME-DIGEST.parquet`), put, and the old one deleted.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use strata_engine::Store;
use strata_index::{Catalog, FileName, Tier};
use strata_segment::names::NAME_DIGITS;

use crate::bucket::{Bucket, Created};
use crate::error::RemoteError;

/// The folder of the Parquet objects, under the store's prefix.
pub const PARQUET_DIR: &str = "parquet";
const EXTENSION: &str = ".parquet";

/// One Parquet object: a stream, the segment whose rows of it the object holds, and `None`
/// when that is every row of the stream the segment was written with, or the digest of which
/// of them ([`Spec`]).
pub(crate) type Part = (String, FileName, Option<u64>);

/// A stream id as it appears in a Parquet object's key: the id's UTF-8 bytes, with every byte
/// other than an ASCII letter, digit, `-`, `_` or `.` written `%XX` (two upper-case hex digits),
/// and a leading `.` too (so that no id spells `.` or `..`, or a hidden file). So `capture`
/// stays `capture`, and `line 4/β` is `line%204%2F%CE%B2`. The escape is one-to-one: one
/// spelling per id, and no id's key holds a `/`, a glob character or a control character.
pub fn escape_stream(stream: &str) -> String {
    let mut out = String::with_capacity(stream.len());
    for (i, byte) in stream.bytes().enumerate() {
        let kept =
            byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_' || (byte == b'.' && i > 0);
        if kept {
            out.push(char::from(byte));
        } else {
            let _ = write!(out, "%{byte:02X}");
        }
    }
    out
}

/// The stream id [`escape_stream`] wrote as `escaped`; `None` for text it never writes.
pub fn unescape_stream(escaped: &str) -> Option<String> {
    let mut bytes = Vec::with_capacity(escaped.len());
    let mut rest = escaped.as_bytes();
    while let Some((&byte, tail)) = rest.split_first() {
        if byte == b'%' {
            let hex = std::str::from_utf8(tail.get(..2)?).ok()?;
            bytes.push(u8::from_str_radix(hex, 16).ok()?);
            rest = &tail[2..];
        } else {
            bytes.push(byte);
            rest = tail;
        }
    }
    let stream = String::from_utf8(bytes).ok()?;
    // One spelling only: lower-case hex, or a byte escaped that needs none, is not ours.
    (!stream.is_empty() && escape_stream(&stream) == escaped).then_some(stream)
}

/// The key, under the store's prefix, of the Parquet object holding every row of `stream` in
/// segment `segment`: `parquet/STREAM/NAME.parquet`, where STREAM is [`escape_stream`]'s and
/// NAME is the segment's number in 12 digits, as in its `seg/NAME.seg` key
/// (`parquet/capture/000000000042.parquet`). Once some of those rows are no longer the
/// store's (compaction merged one of the stream's partitions out of the segment, or a trim,
/// `retire` or retention retired some), the object of the rest is
/// `parquet/STREAM/NAME-DIGEST.parquet`, DIGEST being 16 hex digits that name which rows it
/// holds.
pub fn parquet_key(stream: &str, segment: FileName) -> String {
    part_key(&(stream.to_owned(), segment, None))
}

fn part_key((stream, segment, digest): &Part) -> String {
    let stream = escape_stream(stream);
    match digest {
        None => format!("{PARQUET_DIR}/{stream}/{segment:0NAME_DIGITS$}{EXTENSION}"),
        Some(digest) => {
            format!("{PARQUET_DIR}/{stream}/{segment:0NAME_DIGITS$}-{digest:016x}{EXTENSION}")
        }
    }
}

/// The glob, under the store's prefix, that matches every Parquet object of `stream`:
/// `parquet/STREAM/*.parquet`.
pub fn parquet_glob(stream: &str) -> String {
    format!("{PARQUET_DIR}/{}/*{EXTENSION}", escape_stream(stream))
}

/// The object a key under `parquet/` (without the `parquet/`) names; `None` for any other
/// object, which the publisher leaves alone.
fn parse_key(key: &str) -> Option<Part> {
    let (dir, file) = key.split_once('/')?;
    let stem = file.strip_suffix(EXTENSION)?;
    let (digits, digest) = match stem.split_once('-') {
        None => (stem, None),
        Some((digits, hex)) => {
            let lower = |b: u8| b.is_ascii_digit() || (b'a'..=b'f').contains(&b);
            if hex.len() != 16 || !hex.bytes().all(lower) {
                return None;
            }
            (digits, Some(u64::from_str_radix(hex, 16).ok()?))
        }
    };
    if digits.len() != NAME_DIGITS || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((unescape_stream(dir)?, digits.parse().ok()?, digest))
}

/// How many rows an object must hold: exactly so many when no floor cuts into one of its
/// partitions, else at least one.
pub(crate) type Expected = Option<u64>;

/// Every Parquet object the bucket should hold for the state `catalog` describes: per
/// (stream, live segment) whose segment holds a live raw tier of one of the stream's
/// partitions, with rows above its raw floor, one object, named by [`Spec`], with the rows
/// it must hold.
pub(crate) fn raw_parts(catalog: &Catalog) -> BTreeMap<Part, Expected> {
    let mut parts = BTreeMap::new();
    for file in catalog.live_files() {
        // Per stream, its partitions in the file's order.
        let mut specs: BTreeMap<&str, Spec> = BTreeMap::new();
        for partition in &file.partitions {
            let stream = partition.stream.as_str();
            let live = catalog
                .partitions(stream, &partition.track)
                .any(|view| view.track() == &partition.track && view.is_live(file.name, Tier::Raw));
            let floor = catalog
                .floors_of(stream, &partition.track)
                .and_then(|floors| floors.raw)
                .map_or(0, |raw| raw.position);
            specs
                .entry(stream)
                .or_insert_with(Spec::new)
                .add(partition, live, floor);
        }
        for (stream, spec) in specs {
            if let Some(digest) = spec.name() {
                let rows = (!spec.cut).then_some(spec.n_rows);
                parts.insert((stream.to_owned(), file.name, digest), rows);
            }
        }
    }
    parts
}

/// Which rows of one stream an object of one segment holds: of each of the stream's partitions
/// in the segment (in the file's order) whose raw tier is live, the rows from its raw floor up.
/// Everything the segment was written with is the common case, named by the segment alone;
/// anything less is named by a digest of the partitions and the position each starts from, so
/// that the name changes whenever the rows do, and a publisher that attaches later finds from
/// the names alone which objects are current.
struct Spec {
    /// Every partition is live and no floor cuts into it.
    whole: bool,
    /// Some partition holds rows above its floor.
    rows: bool,
    /// A floor cuts into a live partition: how many rows are above it, the catalog cannot say.
    cut: bool,
    /// The rows of the live partitions.
    n_rows: u64,
    /// FNV-1a (64 bits) of each live partition's track key, a separator, and the position its
    /// rows start from (little-endian).
    digest: u64,
}

impl Spec {
    fn new() -> Spec {
        Spec {
            whole: true,
            rows: false,
            cut: false,
            n_rows: 0,
            digest: 0xcbf2_9ce4_8422_2325,
        }
    }

    fn add(&mut self, partition: &strata_index::PartitionEntry, live: bool, floor: u64) {
        let [lo, hi] = partition.positions;
        if !live || floor > lo {
            self.whole = false;
        }
        if !live || floor > hi {
            return;
        }
        self.rows = true;
        self.cut |= floor > lo;
        self.n_rows += partition.n_rows;
        let from = floor.max(lo);
        for &byte in partition
            .track
            .as_bytes()
            .iter()
            .chain(&[0xFF])
            .chain(&from.to_le_bytes())
        {
            self.digest = (self.digest ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
    }

    /// `None` when no object is wanted; else the name's digest (`None` for the whole).
    #[allow(
        clippy::option_option,
        reason = "no object, or an object named by no digest"
    )]
    fn name(&self) -> Option<Option<u64>> {
        self.rows.then_some((!self.whole).then_some(self.digest))
    }
}

/// The Parquet objects a publisher knows the bucket holds.
#[derive(Debug, Default)]
pub(crate) struct ParquetObjects {
    /// The objects under `parquet/` that strata names: listed when the publisher attached,
    /// then kept as it puts and deletes them.
    have: BTreeSet<Part>,
}

impl ParquetObjects {
    /// The Parquet objects `bucket` holds under names strata writes (one listing of
    /// `parquet/`). Anything else under `parquet/` is not strata's, and is never touched.
    pub(crate) fn list(bucket: &Bucket) -> Result<ParquetObjects, RemoteError> {
        let have = bucket
            .list_deep(PARQUET_DIR)?
            .iter()
            .filter_map(|key| parse_key(key))
            .collect();
        Ok(ParquetObjects { have })
    }

    /// Brings the bucket's Parquet objects to `wanted` (the parts of the state the bucket's
    /// newest `log/` object claims, which `store` is at): puts every missing one, then deletes
    /// those no longer wanted. Stops at the first failure, before any delete if a put failed,
    /// so that the objects always hold every row (`done` counts what was done, failure or not).
    pub(crate) fn sync(
        &mut self,
        bucket: &Bucket,
        store: &Store,
        wanted: &BTreeMap<Part, Expected>,
        done: &mut Synced,
    ) -> Result<(), RemoteError> {
        for (part, &expected) in wanted {
            if self.have.contains(part) {
                continue;
            }
            let key = part_key(part);
            let failed = |reason: String| RemoteError::Parquet {
                key: key.clone(),
                reason,
            };
            let (bytes, rows) = encode(store, &part.0, part.1).map_err(failed)?;
            // The engine's rows of the segment against its record: an object short of rows
            // would go on to replace one that holds them.
            if rows == 0 || expected.is_some_and(|n| n != rows) {
                return Err(failed(format!(
                    "the store's rows of the stream in segment {:0NAME_DIGITS$} are {rows}, \
                     where its record says {}: it is not put, and nothing is deleted",
                    part.1,
                    expected.map_or_else(|| "at least one".to_owned(), |n| n.to_string())
                )));
            }
            let len = bytes.len() as u64;
            put(bucket, &key, bytes).map_err(|e| failed(e.to_string()))?;
            self.have.insert(part.clone());
            done.put += 1;
            done.bytes += len;
        }
        let gone: Vec<Part> = self
            .have
            .iter()
            .filter(|part| !wanted.contains_key(part))
            .cloned()
            .collect();
        for part in gone {
            let key = part_key(&part);
            bucket.delete(&key).map_err(|e| RemoteError::Parquet {
                key: key.clone(),
                reason: e.to_string(),
            })?;
            self.have.remove(&part);
            done.deleted += 1;
        }
        Ok(())
    }
}

/// What one [`ParquetObjects::sync`] did: objects put, their bytes, objects deleted.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Synced {
    pub(crate) put: usize,
    pub(crate) bytes: u64,
    pub(crate) deleted: usize,
}

/// Puts a Parquet object, create-only. An object already there is kept when it is a whole
/// Parquet file (this writer's own put whose acknowledgement was lost, or an earlier writer's
/// of the same segment: the same rows), and replaced when it is not (a torn put: no reader can
/// read it anyway).
fn put(bucket: &Bucket, key: &str, bytes: Vec<u8>) -> Result<(), RemoteError> {
    let len = bytes.len() as u64;
    for _ in 0..2 {
        if bucket.put_create(key, bytes.clone())? == Created::New {
            return Ok(());
        }
        // A torn copy of ours is shorter than ours: anything past twice its length is whole.
        match bucket.get(key, len.saturating_mul(2).max(1 << 20)) {
            Ok(there) if there == bytes || whole_parquet(&there) => return Ok(()),
            Ok(_) => bucket.delete(key)?,
            Err(RemoteError::Bound { .. }) => return Ok(()),
            Err(e) => return Err(e),
        }
    }
    Err(RemoteError::unreadable(
        key,
        "it is still not a whole Parquet file after it was put again",
    ))
}

/// Whether `bytes` hold a whole Parquet file: the magic at both ends, and a footer that fits.
fn whole_parquet(bytes: &[u8]) -> bool {
    let len = bytes.len();
    if len < 12 || !bytes.starts_with(b"PAR1") || !bytes.ends_with(b"PAR1") {
        return false;
    }
    let mut footer = [0u8; 4];
    footer.copy_from_slice(&bytes[len - 8..len - 4]);
    usize::try_from(u32::from_le_bytes(footer)).is_ok_and(|footer| footer + 12 <= len)
}

/// Rows per row group of a Parquet object (the unit a reader skips or reads in parallel).
#[cfg(feature = "parquet")]
const ROW_GROUP_ROWS: usize = 1 << 20;

/// The rows of `stream` that `segment` holds (above the stream's raw floors), as one Parquet
/// file in memory, and how many they are.
///
/// Memory: the whole object is built in memory before it is put (a create-only put takes one
/// body). It holds one segment's rows of one stream, zstd-compressed, so it is bounded by that
/// segment: a barrier's segment by what one seal writes (`Config::staged_bytes_max`), a merged
/// one by compaction's step (`Config::compact_step_bytes_max`, 32 MiB of input by default; a
/// `strata compact` that lifts the cap makes larger ones). The rows come from the engine in
/// batches of `Config::arrow_batch_rows`, and the writer holds at most one row group of encoded
/// pages besides.
#[cfg(feature = "parquet")]
fn encode(store: &Store, stream: &str, segment: FileName) -> Result<(Vec<u8>, u64), String> {
    use parquet::arrow::ArrowWriter;
    use parquet::basic::{Compression, ZstdLevel};
    use parquet::file::metadata::KeyValue;
    use parquet::file::properties::WriterProperties;

    let batches = store
        .segment_arrow(stream, segment)
        .map_err(|e| e.to_string())?;
    let schema = batches.schema();
    // The schema's own metadata (the stream and its declaration), and the segment, as the
    // file's key-value metadata: readers that ignore the Arrow schema see them too.
    let mut metadata: Vec<KeyValue> = schema
        .metadata()
        .iter()
        .map(|(k, v)| KeyValue::new(k.clone(), v.clone()))
        .collect();
    metadata.sort_by(|a, b| a.key.cmp(&b.key));
    metadata.push(KeyValue::new(
        "strata:segment".to_owned(),
        format!("{segment:0NAME_DIGITS$}"),
    ));
    let properties = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::default()))
        .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
        .set_key_value_metadata(Some(metadata))
        .build();
    let mut writer =
        ArrowWriter::try_new(Vec::new(), schema, Some(properties)).map_err(|e| e.to_string())?;
    let mut rows = 0u64;
    for batch in batches {
        let batch = batch.map_err(|e| e.to_string())?;
        rows += batch.num_rows() as u64;
        writer.write(&batch).map_err(|e| e.to_string())?;
    }
    let bytes = writer.into_inner().map_err(|e| e.to_string())?;
    Ok((bytes, rows))
}

/// Built without the `parquet` feature: never reached, since a publisher asked for Parquet is
/// refused when it attaches.
#[cfg(not(feature = "parquet"))]
fn encode(_: &Store, _: &str, _: FileName) -> Result<(Vec<u8>, u64), String> {
    Err(NO_FEATURE.to_owned())
}

/// Why a publisher asked for Parquet is refused by a build without the `parquet` feature.
#[cfg(not(feature = "parquet"))]
pub(crate) const NO_FEATURE: &str = "RemoteConfig::parquet is set, but this build of \
     strata-remote has no `parquet` feature (enable strata-remote/parquet); nothing was changed";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_ids_escape_one_to_one_into_one_key_part() {
        for (id, escaped) in [
            ("capture", "capture"),
            ("a.b-c_D9", "a.b-c_D9"),
            (".", "%2E"),
            ("..", "%2E."),
            (".hidden", "%2Ehidden"),
            ("line 4/β", "line%204%2F%CE%B2"),
            ("100%", "100%25"),
            ("*?[]{}", "%2A%3F%5B%5D%7B%7D"),
        ] {
            assert_eq!(escape_stream(id), escaped, "{id:?}");
            assert_eq!(unescape_stream(escaped).as_deref(), Some(id), "{escaped:?}");
        }
        for not_ours in ["", "%2e", "%41", "a%2", "%zz", "a b", "%FF", ".x"] {
            assert_eq!(unescape_stream(not_ours), None, "{not_ours:?}");
        }
        assert_eq!(
            parquet_key("line 4/β", 42),
            "parquet/line%204%2F%CE%B2/000000000042.parquet"
        );
        assert_eq!(parquet_glob("capture"), "parquet/capture/*.parquet");
        assert_eq!(
            parse_key("line%204%2F%CE%B2/000000000042.parquet"),
            Some(("line 4/β".to_owned(), 42, None))
        );
        let partial = ("capture".to_owned(), 7, Some(0x0123_4567_89ab_cdef));
        assert_eq!(
            part_key(&partial),
            "parquet/capture/000000000007-0123456789abcdef.parquet"
        );
        assert_eq!(
            parse_key("capture/000000000007-0123456789abcdef.parquet"),
            Some(partial)
        );
        for not_ours in [
            "capture/42.parquet",
            "capture/000000000042.seg",
            "capture/x/000000000042.parquet",
            "capture%2f/000000000042.parquet",
            "capture/000000000007-0123456789ABCDEF.parquet",
            "capture/000000000007-123456789abcdef.parquet",
            "capture/000000000007-.parquet",
        ] {
            assert_eq!(parse_key(not_ours), None, "{not_ours:?}");
        }
    }

    #[test]
    fn a_torn_parquet_file_is_not_whole() {
        let mut file = b"PAR1".to_vec();
        file.extend_from_slice(&[0; 20]);
        file.extend_from_slice(&10u32.to_le_bytes());
        file.extend_from_slice(b"PAR1");
        assert!(whole_parquet(&file));
        assert!(!whole_parquet(&file[..file.len() / 2]));
        let mut big_footer = file.clone();
        let at = big_footer.len() - 8;
        big_footer[at..at + 4].copy_from_slice(&100u32.to_le_bytes());
        assert!(!whole_parquet(&big_footer));
    }
}
