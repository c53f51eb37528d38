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
use std::time::{Duration, Instant, SystemTime};

use strata_engine::Store;
use strata_index::{Catalog, FileName, Tier, TrackKey};
use strata_segment::names::NAME_DIGITS;

use strata_engine::POSITION_COLUMN;
use strata_index::{FieldKind, StreamDecl};

use crate::bucket::{Bucket, Created};
use crate::config::RemoteConfig;
use crate::delta::{
    DELTA_LOG_DIR, LogName, Settings, Table, WantedFile, configuration, parse_log_name, table_id,
    table_log_key,
};
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

/// What an object must hold: exactly `rows` rows when no floor cuts into one of its partitions
/// (`None`: at least one), of the partitions `ranges` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Expected {
    pub(crate) rows: Option<u64>,
    /// Each live partition's track, the positions its rows span (from the raw floor up) and
    /// their axis range: the bounds of the table's `stats` ([`stats`]).
    pub(crate) ranges: Vec<Range>,
}

/// A live partition of an object: its track, the positions its rows span from the raw floor
/// up, and their axis range.
pub(crate) type Range = (TrackKey, [u64; 2], Option<[u64; 2]>);

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
                let expected = Expected {
                    rows: (!spec.cut).then_some(spec.n_rows),
                    ranges: spec.ranges,
                };
                parts.insert((stream.to_owned(), file.name, digest), expected);
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
    /// Each live partition's track, positions from its floor up, and axis range.
    ranges: Vec<Range>,
}

impl Spec {
    fn new() -> Spec {
        Spec {
            whole: true,
            rows: false,
            cut: false,
            n_rows: 0,
            digest: 0xcbf2_9ce4_8422_2325,
            ranges: Vec::new(),
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
        self.ranges
            .push((partition.track.clone(), [from, hi], partition.axis));
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

/// The Parquet objects a publisher knows the bucket holds, and the table of each stream.
#[derive(Debug, Default)]
pub(crate) struct ParquetObjects {
    /// The objects under `parquet/` that strata names, with their sizes and, for those this
    /// publisher put, their rows: listed when the publisher attached, then kept as it puts
    /// and deletes them.
    have: BTreeMap<Part, (u64, Option<u64>)>,
    /// Each stream's table, as its log says (read when the publisher attached).
    tables: BTreeMap<String, Table>,
    /// Objects no table version holds any longer and no publish wants, with since when and
    /// the retention their table declared when it let them go: each is deleted once that has
    /// passed.
    inactive: BTreeMap<Part, (Instant, Duration)>,
    /// A table whose newest version this publisher is not sure of (a commit refused): read
    /// again before the next commit.
    stale: BTreeSet<String>,
}

/// When something the object store wrote at `written` happened, as an `Instant` of this
/// process, given that the object store's clock reads `clock` now: only whether `retention`
/// has passed since matters, so an age past it is clamped.
fn instant_of(written: SystemTime, clock: SystemTime, retention: Duration) -> Instant {
    let now = Instant::now();
    let age = clock.duration_since(written).unwrap_or(Duration::ZERO);
    now.checked_sub(age.min(retention)).unwrap_or(now)
}

impl ParquetObjects {
    /// The Parquet objects `bucket` holds under names strata writes, and each stream's table
    /// (one listing of `parquet/`, then every commit of every table read once). Anything else
    /// under `parquet/` is not strata's, and is never touched. An object no table holds waits
    /// out the retention the table declared in the version that removed it, from when that
    /// version was written (or, never in a table, `config`'s, from its own put), by the object
    /// store's clock, which reads `clock` now.
    pub(crate) fn list(
        bucket: &Bucket,
        config: &RemoteConfig,
        clock: SystemTime,
    ) -> Result<ParquetObjects, RemoteError> {
        let mut objects = ParquetObjects::default();
        let mut written = BTreeMap::new();
        let mut logs: BTreeMap<String, Vec<(LogName, SystemTime)>> = BTreeMap::new();
        for (key, size, modified) in bucket.list_deep_meta(PARQUET_DIR)? {
            if let Some(part) = parse_key(&key) {
                objects.have.insert(part.clone(), (size, None));
                written.insert(part, modified);
            } else if let Some((dir, name)) = key.split_once(&format!("/{DELTA_LOG_DIR}/"))
                && let (Some(stream), Some(name)) = (unescape_stream(dir), parse_log_name(name))
            {
                logs.entry(stream).or_default().push((name, modified));
            }
        }
        for (stream, versions) in logs {
            let present: BTreeSet<String> = written
                .keys()
                .filter(|part| part.0 == stream)
                .map(file_name)
                .collect();
            let table = Table::load(bucket, &stream, &versions, config.log_bytes_max, &present)?;
            objects.tables.insert(stream, table);
        }
        for (part, modified) in written {
            let table = objects.tables.get(&part.0);
            let path = file_name(&part);
            if table.is_some_and(|t| t.files.contains_key(&path)) {
                continue;
            }
            let (since, keep) = match table.and_then(|t| t.removed_at.get(&path)) {
                Some(&(removed, declared)) => (
                    removed.max(modified),
                    declared.unwrap_or(config.table_retention),
                ),
                // Removed, if at all, no later than the checkpoint the replay started from.
                None => (
                    table
                        .and_then(|t| t.checkpoint_written)
                        .map_or(modified, |at| at.max(modified)),
                    table
                        .and_then(|t| t.retention)
                        .unwrap_or(config.table_retention),
                ),
            };
            let at = instant_of(since, clock, keep);
            objects.inactive.insert(part, (at, keep));
        }
        // Needed only here: what the bucket held when the publisher attached.
        for table in objects.tables.values_mut() {
            table.removed_at.clear();
        }
        Ok(objects)
    }

    /// Brings the bucket's Parquet objects and tables to `wanted` (the parts of the state the
    /// bucket's newest `log/` object, `log/seq`, claims, which `store` is at): puts every
    /// missing object, then commits one version of each stream's table holding exactly that
    /// stream's wanted objects (as the state of `log/seq`), then deletes the objects no table
    /// has held for [`RemoteConfig::table_retention`]. Stops at the first failure, before any
    /// commit if a put failed and before any delete if a commit failed, so that the table
    /// always holds one published state whole (`done` counts what was done, failure or not).
    #[allow(clippy::too_many_arguments, reason = "one publish's state, told once")]
    pub(crate) fn sync(
        &mut self,
        bucket: &Bucket,
        store: &Store,
        wanted: &BTreeMap<Part, Expected>,
        seq: u64,
        identity: &[u8; 16],
        config: &RemoteConfig,
        done: &mut Synced,
    ) -> Result<(), RemoteError> {
        for (part, expected) in wanted {
            if self.have.contains_key(part) {
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
            if rows == 0 || expected.rows.is_some_and(|n| n != rows) {
                return Err(failed(format!(
                    "the store's rows of the stream in segment {:0NAME_DIGITS$} are {rows}, \
                     where its record says {}: it is not put, and nothing is deleted",
                    part.1,
                    expected
                        .rows
                        .map_or_else(|| "at least one".to_owned(), |n| n.to_string())
                )));
            }
            let len = bytes.len() as u64;
            put(bucket, &key, bytes).map_err(|e| failed(e.to_string()))?;
            self.have.insert(part.clone(), (len, Some(rows)));
            done.put += 1;
            done.bytes += len;
        }
        self.commit_tables(bucket, store, wanted, seq, identity, config, done)?;
        let held = |part: &Part| {
            wanted.contains_key(part)
                || self
                    .tables
                    .get(&part.0)
                    .is_some_and(|t| t.files.contains_key(&file_name(part)))
        };
        // An object held again (wanted, or back in its table) waits afresh once it is let go.
        self.inactive.retain(|part, _| !held(part));
        let now = Instant::now();
        for part in self.have.keys() {
            if !held(part) {
                // Let go by this publish's version, under the retention its table declares.
                let keep = self
                    .tables
                    .get(&part.0)
                    .and_then(|t| t.retention)
                    .unwrap_or(config.table_retention);
                self.inactive.entry(part.clone()).or_insert((now, keep));
            }
        }
        let due: Vec<Part> = self
            .inactive
            .iter()
            .filter(|(_, (since, keep))| since.elapsed() >= *keep)
            .map(|(part, _)| part.clone())
            .collect();
        for part in due {
            let key = part_key(&part);
            bucket.delete(&key).map_err(|e| RemoteError::Parquet {
                key: key.clone(),
                reason: e.to_string(),
            })?;
            self.have.remove(&part);
            self.inactive.remove(&part);
            done.deleted += 1;
        }
        self.inactive.retain(|part, _| self.have.contains_key(part));
        Ok(())
    }

    /// One version of each stream's table that does not hold `wanted`'s objects of it as the
    /// state of `log/seq`.
    #[allow(clippy::too_many_arguments, reason = "one publish's state, told once")]
    fn commit_tables(
        &mut self,
        bucket: &Bucket,
        store: &Store,
        wanted: &BTreeMap<Part, Expected>,
        seq: u64,
        identity: &[u8; 16],
        config: &RemoteConfig,
        done: &mut Synced,
    ) -> Result<(), RemoteError> {
        let mut per_stream: BTreeMap<&str, BTreeMap<String, WantedFile>> = BTreeMap::new();
        for (part, expected) in wanted {
            let Some(&(size, rows)) = self.have.get(part) else {
                continue;
            };
            let decl = store.catalog().stream(&part.0);
            let stats = decl.and_then(|decl| stats(decl, expected, rows.or(expected.rows)));
            per_stream
                .entry(part.0.as_str())
                .or_default()
                .insert(file_name(part), WantedFile { size, stats });
        }
        // Every stream the store declares has a table from its first publish on (empty until
        // rows come: its schema is there to read). A table of a stream the store does not
        // declare (an adopted store's history lacks it) is left as it is, objects and all.
        let streams: BTreeSet<String> = store
            .catalog()
            .streams()
            .map(|decl| decl.id.clone())
            .chain(self.tables.keys().cloned())
            .collect();
        let empty = BTreeMap::new();
        for stream in streams {
            if self.stale.remove(&stream) {
                let fresh = ParquetObjects::list_table(bucket, &stream, config)?;
                self.tables.insert(stream.clone(), fresh);
            }
            if store.catalog().stream(&stream).is_none() {
                continue;
            }
            let files = per_stream.get(stream.as_str()).unwrap_or(&empty);
            let schema = table_schema(store, &stream).map_err(|reason| RemoteError::Parquet {
                key: table_log_key(&stream, 0),
                reason,
            })?;
            let settings = Settings {
                id: table_id(identity, &stream),
                schema,
                configuration: configuration(config.table_retention.as_secs()),
                checkpoint_every: config.table_checkpoint_every,
            };
            let table = self.tables.entry(stream.clone()).or_default();
            match table.commit(bucket, &stream, seq, settings, files) {
                Ok(true) => done.versions += 1,
                Ok(false) => {}
                Err(e) => {
                    let next = table.version.map_or(0, |v| v + 1);
                    self.stale.insert(stream.clone());
                    return Err(match e {
                        RemoteError::Parquet { .. } => e,
                        other => RemoteError::Parquet {
                            key: table_log_key(&stream, next),
                            reason: format!("the table's version was not committed: {other}"),
                        },
                    });
                }
            }
        }
        Ok(())
    }

    /// `stream`'s table as the bucket holds it now.
    fn list_table(
        bucket: &Bucket,
        stream: &str,
        config: &RemoteConfig,
    ) -> Result<Table, RemoteError> {
        // Removals are not needed: this publisher's `inactive` already times them.
        let dir = format!("{PARQUET_DIR}/{}/{DELTA_LOG_DIR}", escape_stream(stream));
        let versions: Vec<(LogName, SystemTime)> = bucket
            .list_modified(&dir)?
            .into_iter()
            .filter_map(|(name, written)| Some((parse_log_name(&name)?, written)))
            .collect();
        Table::load(
            bucket,
            stream,
            &versions,
            config.log_bytes_max,
            &BTreeSet::new(),
        )
    }
}

/// An object's name under its table's root: its file name (`NAME[-DIGEST].parquet`), the
/// `path` of its `add` action.
fn file_name(part: &Part) -> String {
    let key = part_key(part);
    key.rsplit_once('/')
        .map_or(key.clone(), |(_, name)| name.to_owned())
}

/// Delta's `stats` of an object holding `expected`'s partitions of a stream of `decl`, with
/// `rows` rows: `numRecords`, and bounds of the columns the catalog bounds — each track field
/// (by its labels), the position, a plain `u64` axis — so that a reader skips the objects a
/// filter on them rules out (an object of one track, as compaction writes them, is skipped by
/// any other track). `None` when the rows are not known.
fn stats(decl: &StreamDecl, expected: &Expected, rows: Option<u64>) -> Option<String> {
    let rows = rows?;
    let mut min = serde_json::Map::new();
    let mut max = serde_json::Map::new();
    let mut nulls = serde_json::Map::new();
    let mut bound = |name: &str, lo: serde_json::Value, hi: serde_json::Value| {
        min.insert(name.to_owned(), lo);
        max.insert(name.to_owned(), hi);
        nulls.insert(name.to_owned(), 0.into());
    };
    for (component, &idx) in decl.track.iter().enumerate() {
        let Some(field) = decl.fields.get(usize::from(idx)) else {
            continue;
        };
        let labels = expected
            .ranges
            .iter()
            .map(|(track, _, _)| track.labels().nth(component));
        match field.kind {
            FieldKind::Str => {
                let labels: Option<Vec<&str>> = labels.collect();
                if let Some(labels) = labels
                    && let (Some(lo), Some(hi)) = (labels.iter().min(), labels.iter().max())
                {
                    bound(&field.name, (*lo).into(), (*hi).into());
                }
            }
            FieldKind::U64 | FieldKind::I64 => {
                let numbers: Option<Vec<i64>> =
                    labels.map(|label| label?.parse::<i64>().ok()).collect();
                if let Some(numbers) = numbers
                    && let (Some(lo), Some(hi)) = (numbers.iter().min(), numbers.iter().max())
                {
                    bound(&field.name, (*lo).into(), (*hi).into());
                }
            }
            _ => {}
        }
    }
    let long = |v: u64| i64::try_from(v).ok();
    let span = |of: &dyn Fn(&Range) -> Option<[u64; 2]>| {
        let spans: Option<Vec<[u64; 2]>> = expected.ranges.iter().map(of).collect();
        let spans = spans?;
        let lo = long(spans.iter().map(|s| s[0]).min()?)?;
        let hi = long(spans.iter().map(|s| s[1]).max()?)?;
        Some((lo, hi))
    };
    if decl.fields.iter().all(|f| f.name != POSITION_COLUMN)
        && let Some((lo, hi)) = span(&|(_, positions, _)| Some(*positions))
    {
        bound(POSITION_COLUMN, lo.into(), hi.into());
    }
    // A time axis is a timestamp, whose bounds Delta spells in milliseconds: left out.
    if decl.time.is_none()
        && let Some(field) = decl.axis.and_then(|idx| decl.fields.get(usize::from(idx)))
        && let Some((lo, hi)) = span(&|(_, _, axis)| *axis)
    {
        bound(&field.name, lo.into(), hi.into());
    }
    let stats = serde_json::json!({
        "numRecords": rows,
        "minValues": min,
        "maxValues": max,
        "nullCount": nulls,
    });
    Some(stats.to_string())
}

/// What one [`ParquetObjects::sync`] did: objects put, their bytes, objects deleted, table
/// versions committed.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Synced {
    pub(crate) put: usize,
    pub(crate) bytes: u64,
    pub(crate) deleted: usize,
    pub(crate) versions: usize,
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
/// file in memory, and how many they are. Its columns are the table's ([`TableShape`]).
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

    let decl = store.declaration(stream).map_err(|e| e.to_string())?;
    let batches = store
        .segment_arrow(stream, segment)
        .map_err(|e| e.to_string())?;
    let shape = TableShape::new(decl);
    let schema = std::sync::Arc::clone(&shape.schema);
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
        let batch = shape.apply(&batch.map_err(|e| e.to_string())?)?;
        rows += batch.num_rows() as u64;
        writer.write(&batch).map_err(|e| e.to_string())?;
    }
    let bytes = writer.into_inner().map_err(|e| e.to_string())?;
    Ok((bytes, rows))
}

/// The columns of a stream's table, and of every Parquet object of it: a query's Arrow columns
/// (`Store::query_arrow`), with a time axis as a UTC timestamp of its declared unit, and every
/// other `u64` column (the position, a plain axis, a `u64` field) as a signed `i64`, Delta's
/// `long` (the table format has no unsigned integers; Polars refuses a `u64` column where the
/// schema says `long`). A value past `i64::MAX` is refused, naming it, rather than wrapped.
#[cfg(feature = "parquet")]
struct TableShape {
    stamper: Option<strata_engine::Timestamper>,
    schema: strata_engine::arrow_schema::SchemaRef,
}

#[cfg(feature = "parquet")]
impl TableShape {
    fn new(decl: &StreamDecl) -> TableShape {
        use strata_engine::arrow_schema::{DataType, Field, Schema};
        let rows = strata_engine::arrow_schema_of(decl);
        let stamper = strata_engine::Timestamper::new(&rows, decl, false);
        let stamped = stamper
            .as_ref()
            .map_or(rows, |s| std::sync::Arc::clone(s.schema()));
        let fields: Vec<Field> = stamped
            .fields()
            .iter()
            .map(|field| match field.data_type() {
                DataType::UInt64 => field.as_ref().clone().with_data_type(DataType::Int64),
                _ => field.as_ref().clone(),
            })
            .collect();
        let schema = std::sync::Arc::new(Schema::new_with_metadata(
            fields,
            stamped.metadata().clone(),
        ));
        TableShape { stamper, schema }
    }

    /// A batch of the stream's rows (as `Store::segment_arrow` gives them) in the table's
    /// columns.
    fn apply(
        &self,
        batch: &strata_engine::arrow_array::RecordBatch,
    ) -> Result<strata_engine::arrow_array::RecordBatch, String> {
        use strata_engine::arrow_array::{Array, ArrayRef, Int64Array, RecordBatch, UInt64Array};
        let batch = match &self.stamper {
            Some(stamper) => stamper.apply(batch)?,
            None => batch.clone(),
        };
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(batch.num_columns());
        for (column, field) in batch.columns().iter().zip(batch.schema().fields()) {
            let Some(unsigned) = column.as_any().downcast_ref::<UInt64Array>() else {
                columns.push(std::sync::Arc::clone(column));
                continue;
            };
            let signed: Vec<i64> = unsigned
                .values()
                .iter()
                .map(|&v| {
                    i64::try_from(v).map_err(|_| {
                        format!(
                            "column `{}` holds {v}, past the largest a table's `long` holds \
                             (2^63 - 1)",
                            field.name()
                        )
                    })
                })
                .collect::<Result<_, _>>()?;
            columns.push(std::sync::Arc::new(Int64Array::new(
                signed.into(),
                unsigned.nulls().cloned(),
            )));
        }
        RecordBatch::try_new(std::sync::Arc::clone(&self.schema), columns)
            .map_err(|e| e.to_string())
    }
}

/// The Delta schema (its `schemaString`) of `stream`'s table: [`TableShape`]'s columns in
/// Delta's types.
#[cfg(feature = "parquet")]
fn table_schema(store: &Store, stream: &str) -> Result<String, String> {
    use strata_engine::arrow_schema::DataType;
    let decl = store.declaration(stream).map_err(|e| e.to_string())?;
    let shape = TableShape::new(decl);
    let fields = shape
        .schema
        .fields()
        .iter()
        .map(|field| {
            let delta = match field.data_type() {
                DataType::Int64 => "long",
                DataType::Float64 => "double",
                DataType::Utf8 | DataType::LargeUtf8 | DataType::Dictionary(..) => "string",
                DataType::Binary | DataType::LargeBinary => "binary",
                DataType::Timestamp(_, Some(_)) => "timestamp",
                other => {
                    return Err(format!(
                        "column `{}` is {other}, which a table does not hold",
                        field.name()
                    ));
                }
            };
            Ok(serde_json::json!({
                "name": field.name(),
                "type": delta,
                "nullable": field.is_nullable(),
                "metadata": {},
            }))
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(serde_json::json!({ "type": "struct", "fields": fields }).to_string())
}

/// Built without the `parquet` feature: never reached, since a publisher asked for Parquet is
/// refused when it attaches.
#[cfg(not(feature = "parquet"))]
fn encode(_: &Store, _: &str, _: FileName) -> Result<(Vec<u8>, u64), String> {
    Err(NO_FEATURE.to_owned())
}

/// Built without the `parquet` feature: never reached (see [`encode`]).
#[cfg(not(feature = "parquet"))]
fn table_schema(_: &Store, _: &str) -> Result<String, String> {
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
