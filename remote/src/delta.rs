//! The bucket as a table (#53): each stream's Parquet objects (`parquet/STREAM/`, [`crate::parquet`])
//! are also a Delta Lake table, whose commit log (`parquet/STREAM/_delta_log/N.json`) strata
//! writes itself, one version per publish. A reader of the table (Spark, Trino, DuckDB's
//! `delta_scan`, Polars `read_delta`, the `deltalake` package) sees exactly the rows of one
//! published state: the objects a publish adds are put before the version that adds them, and
//! an object a version removes is deleted only once [`RemoteConfig::table_retention`] has
//! passed since, so a reader still reading an older version finds its files.
//!
//! Why the log is written here rather than with a Delta crate: docs/remote.md, "The bucket as
//! a table". What is written is the protocol's smallest form (reader version 1, writer version
//! 2): `protocol` and `metaData` in version 0, then per version a `commitInfo`, a `txn` naming
//! the strata `log/` object the version publishes (`appId` `strata`, `version` its number),
//! `remove`s and `add`s. No checkpoints: a reader replays the JSON from version 0.
//!
//! [`RemoteConfig::table_retention`]: crate::RemoteConfig::table_retention

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value as Json, json};

use crate::bucket::{Bucket, Created};
use crate::error::RemoteError;
use crate::parquet::{PARQUET_DIR, escape_stream};

/// The folder of a table's commit log, under the table's root (`parquet/STREAM/`).
pub const DELTA_LOG_DIR: &str = "_delta_log";
/// The application id of strata's `txn` action: its `version` is the number of the `log/`
/// object whose state the table's version holds.
pub const TXN_APP_ID: &str = "strata";
/// Digits of a commit's number in its name (`00000000000000000007.json`), as Delta spells it.
const VERSION_DIGITS: usize = 20;

/// The key, under the store's prefix, of version `version` of `stream`'s table:
/// `parquet/STREAM/_delta_log/00000000000000000007.json`.
pub fn table_log_key(stream: &str, version: u64) -> String {
    format!(
        "{PARQUET_DIR}/{}/{DELTA_LOG_DIR}/{version:0VERSION_DIGITS$}.json",
        escape_stream(stream)
    )
}

/// The key of `stream`'s checkpoint at `version`:
/// `parquet/STREAM/_delta_log/00000000000000000100.checkpoint.parquet`.
pub fn table_checkpoint_key(stream: &str, version: u64) -> String {
    format!(
        "{PARQUET_DIR}/{}/{DELTA_LOG_DIR}/{version:0VERSION_DIGITS$}{CHECKPOINT_SUFFIX}",
        escape_stream(stream)
    )
}

/// The name of a checkpoint, after its version's digits.
const CHECKPOINT_SUFFIX: &str = ".checkpoint.parquet";
/// The file that names a table's newest checkpoint, in its log's folder.
const LAST_CHECKPOINT: &str = "_last_checkpoint";

/// What a name in a table's `_delta_log/` is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LogName {
    /// `00000000000000000007.json`: version 7.
    Commit(u64),
    /// `00000000000000000100.checkpoint.parquet`: the state at version 100.
    Checkpoint(u64),
}

/// What a file name in `_delta_log/` names; `None` for any other name (a staging file a put
/// left, `_last_checkpoint`, another tool's multi-part or V2 checkpoint).
pub(crate) fn parse_log_name(name: &str) -> Option<LogName> {
    let digits_of = |digits: &str| {
        (digits.len() == VERSION_DIGITS && digits.bytes().all(|b| b.is_ascii_digit()))
            .then(|| digits.parse().ok())
            .flatten()
    };
    if let Some(digits) = name.strip_suffix(CHECKPOINT_SUFFIX) {
        return digits_of(digits).map(LogName::Checkpoint);
    }
    digits_of(name.strip_suffix(".json")?).map(LogName::Commit)
}

/// The version a commit's file name (`00000000000000000007.json`) names; `None` for any other
/// name.
#[cfg(test)]
fn parse_version(name: &str) -> Option<u64> {
    match parse_log_name(name)? {
        LogName::Commit(version) => Some(version),
        LogName::Checkpoint(_) => None,
    }
}

/// One file the table should hold: its size, and its `stats` (Delta's JSON of `numRecords`
/// and per-column bounds), if known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WantedFile {
    pub(crate) size: u64,
    pub(crate) stats: Option<String>,
}

/// What one stream's table holds at its newest version, as its log says.
#[derive(Debug, Default, Clone)]
pub(crate) struct Table {
    /// The newest version; `None` before the first commit.
    pub(crate) version: Option<u64>,
    /// The files of the newest version (paths under the table's root), each with its `add`
    /// action (what a checkpoint writes of it).
    pub(crate) files: BTreeMap<String, Json>,
    /// The `log/` object whose state the newest version holds (its `txn`).
    pub(crate) seq: Option<u64>,
    /// The table's id, from its `metaData`.
    id: Option<String>,
    /// The newest `metaData`'s schema and configuration, as committed.
    meta: Option<(String, Json)>,
    /// The newest `metaData` action whole (what a checkpoint writes).
    meta_action: Option<Json>,
    /// When (by the object store's clock) the checkpoint the replay started from was written:
    /// an object the bucket holds that no version after it holds or removes may have been
    /// removed as late as that.
    pub(crate) checkpoint_written: Option<SystemTime>,
    /// The retention the newest `metaData` declares (`delta.deletedFileRetentionDuration`).
    pub(crate) retention: Option<Duration>,
    /// Of the files still in the bucket that a version removed: when (by the object store's
    /// clock) that version was written, and the retention the table declared then — what a
    /// publisher that attaches waits out before it deletes them.
    pub(crate) removed_at: BTreeMap<String, (SystemTime, Option<Duration>)>,
}

impl Table {
    /// Replays `stream`'s commit log from what the bucket lists of it (`listed`: names in
    /// `_delta_log/`, and when each was written): from its newest checkpoint that every later
    /// version follows without a gap, else from version 0, which every version must then
    /// follow. Each object is read whole (at most `bytes_max`), one at a time. Of the files
    /// versions removed, only those named in `present` (the objects the bucket still holds)
    /// are remembered.
    pub(crate) fn load(
        bucket: &Bucket,
        stream: &str,
        listed: &[(LogName, SystemTime)],
        bytes_max: u64,
        present: &BTreeSet<String>,
    ) -> Result<Table, RemoteError> {
        let commits: BTreeMap<u64, SystemTime> = listed
            .iter()
            .filter_map(|&(name, written)| match name {
                LogName::Commit(v) => Some((v, written)),
                LogName::Checkpoint(_) => None,
            })
            .collect();
        let mut table = Table::default();
        let Some(&newest) = commits.keys().next_back() else {
            return Ok(table);
        };
        // The newest checkpoint every later version follows, else none.
        let start = listed
            .iter()
            .filter_map(|&(name, written)| match name {
                LogName::Checkpoint(v) if v <= newest => Some((v, written)),
                _ => None,
            })
            .filter(|&(v, _)| (v + 1..=newest).all(|next| commits.contains_key(&next)))
            .max_by_key(|&(v, _)| v);
        let first = match start {
            Some((version, written)) => {
                let key = table_checkpoint_key(stream, version);
                let bytes = bucket.get(&key, bytes_max)?;
                let actions = crate::checkpoint::decode(bytes)
                    .map_err(|reason| RemoteError::unreadable(&key, reason))?;
                for (n, action) in actions.iter().enumerate() {
                    table
                        .apply_action(action, n, written, present)
                        .map_err(|reason| RemoteError::unreadable(&key, reason))?;
                }
                table.version = Some(version);
                table.checkpoint_written = Some(written);
                version + 1
            }
            None => 0,
        };
        for version in first..=newest {
            let key = table_log_key(stream, version);
            let Some(&written) = commits.get(&version) else {
                return Err(RemoteError::unreadable(
                    &key,
                    format!(
                        "the table's log has no version {version}, and no checkpoint after it: a \
                         reader cannot replay it (its newest version is {newest})"
                    ),
                ));
            };
            let bytes = bucket.get(&key, bytes_max)?;
            table
                .apply(&bytes, written, present)
                .map_err(|reason| RemoteError::unreadable(&key, reason))?;
            table.version = Some(version);
        }
        Ok(table)
    }

    /// Applies one commit's actions (the removals of files in `present` remembered).
    fn apply(
        &mut self,
        bytes: &[u8],
        written: SystemTime,
        present: &BTreeSet<String>,
    ) -> Result<(), String> {
        let text = std::str::from_utf8(bytes).map_err(|e| format!("not UTF-8: {e}"))?;
        for (n, line) in text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
        {
            let action: Json = serde_json::from_str(line)
                .map_err(|e| format!("line {}: not a JSON action: {e}", n + 1))?;
            self.apply_action(&action, n, written, present)?;
        }
        Ok(())
    }

    /// Applies one action (the `n`th of its commit or checkpoint).
    fn apply_action(
        &mut self,
        action: &Json,
        n: usize,
        written: SystemTime,
        present: &BTreeSet<String>,
    ) -> Result<(), String> {
        {
            let str_of = |value: &Json, what: &str| {
                value
                    .get(what)
                    .and_then(Json::as_str)
                    .map(str::to_owned)
                    .ok_or_else(|| format!("line {}: an action without `{what}`", n + 1))
            };
            if let Some(add) = action.get("add") {
                let path = str_of(add, "path")?;
                self.removed_at.remove(&path);
                self.files.insert(path, add.clone());
            } else if let Some(remove) = action.get("remove") {
                let path = str_of(remove, "path")?;
                self.files.remove(&path);
                if present.contains(&path) {
                    self.removed_at.insert(path, (written, self.retention));
                }
            } else if let Some(txn) = action.get("txn") {
                if str_of(txn, "appId")? == TXN_APP_ID {
                    self.seq = txn.get("version").and_then(Json::as_u64);
                }
            } else if let Some(meta) = action.get("metaData") {
                self.id = Some(str_of(meta, "id")?);
                let configuration = meta.get("configuration").cloned().unwrap_or(json!({}));
                self.retention = retention_of(&configuration);
                self.meta = Some((str_of(meta, "schemaString")?, configuration));
                self.meta_action = Some(meta.clone());
            } else if let Some(protocol) = action.get("protocol") {
                let reader = protocol.get("minReaderVersion").and_then(Json::as_u64);
                let writer = protocol.get("minWriterVersion").and_then(Json::as_u64);
                if reader.is_none_or(|v| v > 1) || writer.is_none_or(|v| v > 2) {
                    return Err(format!(
                        "line {}: the table asks for reader version {reader:?} and writer \
                         version {writer:?}; strata writes tables of versions 1 and 2 only, \
                         and will not write to one another writer moved on",
                        n + 1
                    ));
                }
            }
        }
        Ok(())
    }

    /// Commits the next version of `stream`'s table, holding exactly `wanted` (paths under the
    /// table's root), as the state of `log/seq`, with `settings`' schema and configuration;
    /// `false` when the newest version already holds those files as the state of `log/seq`,
    /// and nothing was committed (a new schema or configuration alone waits for the next
    /// version: one version per publish).
    /// The commit is one create-only put: a version another writer put first is refused,
    /// naming it, and the table is read again by the next publish. Every
    /// `settings.checkpoint_every`th version (none when 0) is also written as a checkpoint.
    pub(crate) fn commit(
        &mut self,
        bucket: &Bucket,
        stream: &str,
        seq: u64,
        settings: Settings,
        wanted: &BTreeMap<String, WantedFile>,
    ) -> Result<bool, RemoteError> {
        let removed: Vec<String> = self
            .files
            .keys()
            .filter(|path| !wanted.contains_key(*path))
            .cloned()
            .collect();
        let added: Vec<String> = wanted
            .keys()
            .filter(|path| !self.files.contains_key(*path))
            .cloned()
            .collect();
        let meta = (settings.schema, settings.configuration);
        let new_meta = self.meta.as_ref() != Some(&meta);
        if added.is_empty() && removed.is_empty() && self.seq == Some(seq) {
            return Ok(false);
        }
        let version = self.version.map_or(0, |v| v + 1);
        let now = now_millis();
        let id = self.id.clone().unwrap_or(settings.id);
        let meta_action = json!({
            "id": id,
            "name": stream,
            "format": {"provider": "parquet", "options": {}},
            "schemaString": meta.0,
            "partitionColumns": [],
            "configuration": meta.1,
            "createdTime": now,
        });
        let mut actions = vec![json!({"commitInfo": {
            "timestamp": now,
            "operation": "WRITE",
            "operationParameters": {"strataLog": seq},
            "engineInfo": concat!("strata/", env!("CARGO_PKG_VERSION")),
            "txnId": format!("strata-log-{seq}"),
        }})];
        if version == 0 {
            actions.push(json!({"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}));
        }
        if new_meta {
            actions.push(json!({ "metaData": meta_action }));
        }
        actions.push(json!({"txn": {"appId": TXN_APP_ID, "version": seq, "lastUpdated": now}}));
        actions.extend(removed.iter().map(|path| {
            json!({"remove": {
                "path": path,
                "deletionTimestamp": now,
                "dataChange": true,
                "partitionValues": {},
                "size": self.files[path].get("size").and_then(Json::as_u64).unwrap_or(0),
            }})
        }));
        let adds: Vec<(String, Json)> = added
            .into_iter()
            .map(|path| {
                let file = &wanted[&path];
                let mut add = json!({
                    "path": path,
                    "partitionValues": {},
                    "size": file.size,
                    "modificationTime": now,
                    "dataChange": true,
                });
                if let Some(stats) = &file.stats {
                    add["stats"] = Json::String(stats.clone());
                }
                (path, add)
            })
            .collect();
        actions.extend(adds.iter().map(|(_, add)| json!({ "add": add })));
        put_commit(bucket, &table_log_key(stream, version), &actions)?;
        for path in &removed {
            self.files.remove(path);
        }
        for (path, add) in adds {
            self.removed_at.remove(&path);
            self.files.insert(path, add);
        }
        self.version = Some(version);
        self.seq = Some(seq);
        self.id = Some(id);
        self.retention = retention_of(&meta.1);
        self.meta = Some(meta);
        if new_meta || self.meta_action.is_none() {
            self.meta_action = Some(meta_action);
        }
        let every = settings.checkpoint_every;
        if every > 0 && version > 0 && version.is_multiple_of(every) {
            self.checkpoint(bucket, stream, version, now)?;
        }
        Ok(true)
    }

    /// Writes the checkpoint of the newest version, `version`: every action a reader needs to
    /// start there (the protocol, the `metaData`, strata's `txn`, an `add` of every file) as
    /// one Parquet object, then `_last_checkpoint` naming it. A reader (and a publisher that
    /// attaches) then replays from it instead of from version 0.
    fn checkpoint(
        &self,
        bucket: &Bucket,
        stream: &str,
        version: u64,
        now: u64,
    ) -> Result<(), RemoteError> {
        let mut actions = vec![json!({"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}})];
        if let Some(meta) = &self.meta_action {
            actions.push(json!({ "metaData": meta }));
        }
        if let Some(seq) = self.seq {
            actions.push(json!({"txn": {"appId": TXN_APP_ID, "version": seq, "lastUpdated": now}}));
        }
        for add in self.files.values() {
            let mut add = add.clone();
            add["dataChange"] = Json::Bool(false);
            actions.push(json!({ "add": add }));
        }
        let key = table_checkpoint_key(stream, version);
        let failed = |reason: String| RemoteError::Parquet {
            key: key.clone(),
            reason: format!(
                "version {version} is committed, its checkpoint not: {reason} (readers replay \
                 from the checkpoint before)"
            ),
        };
        let bytes = crate::checkpoint::encode(&actions).map_err(failed)?;
        // An object already there is this version's checkpoint: a put whose acknowledgement
        // was lost, or another writer's of the same state.
        bucket
            .put_create(&key, bytes)
            .map_err(|e| failed(e.to_string()))?;
        let last = json!({"version": version, "size": actions.len()}).to_string();
        let last_key = format!(
            "{PARQUET_DIR}/{}/{DELTA_LOG_DIR}/{LAST_CHECKPOINT}",
            escape_stream(stream)
        );
        bucket
            .put(&last_key, last.into_bytes())
            .map_err(|e| failed(e.to_string()))?;
        Ok(())
    }
}

/// What a table's next version is written with: the table's id (kept from its first
/// version on), its schema and configuration (a `metaData` when they change), and how often
/// a version is also a checkpoint.
#[derive(Debug)]
pub(crate) struct Settings {
    pub(crate) id: String,
    pub(crate) schema: String,
    pub(crate) configuration: Json,
    pub(crate) checkpoint_every: u64,
}

/// Puts one version, `actions` a line each, create-only. Our own put whose acknowledgement was
/// lost holds the same bytes and is taken as done; anything else there is another writer's,
/// refused.
fn put_commit(bucket: &Bucket, key: &str, actions: &[Json]) -> Result<(), RemoteError> {
    let mut body = String::new();
    for action in actions {
        body.push_str(&action.to_string());
        body.push('\n');
    }
    if bucket.put_create(key, body.clone().into_bytes())? == Created::Exists {
        let there = bucket.get(key, (body.len() as u64).saturating_mul(4).max(1 << 20));
        if there.ok().as_deref() != Some(body.as_bytes()) {
            return Err(RemoteError::Parquet {
                key: key.to_owned(),
                reason: "another writer committed this version of the table first: nothing is \
                         deleted, and the next publish reads the table again"
                    .to_owned(),
            });
        }
    }
    Ok(())
}

/// Milliseconds since the Unix epoch by this machine's clock: Delta's timestamps (never used
/// to decide what is deleted).
fn now_millis() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// A table's id (Delta asks for a UUID): the store's identity and the stream, hashed, in the
/// UUID's spelling, so that the same store's table of a stream always has the same id.
pub(crate) fn table_id(identity: &[u8; 16], stream: &str) -> String {
    let mut halves = [0u64; 2];
    for (i, half) in (0u8..).zip(halves.iter_mut()) {
        let mut digest: u64 = 0xcbf2_9ce4_8422_2325;
        for &byte in identity.iter().chain(&[0xFF, i]).chain(stream.as_bytes()) {
            digest = (digest ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
        *half = digest;
    }
    let hex = format!("{:016x}{:016x}", halves[0], halves[1]);
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

/// The table property that says how long removed files are kept.
const RETENTION_KEY: &str = "delta.deletedFileRetentionDuration";

/// Delta's table configuration for a retention of `seconds`: readers and tools (a `VACUUM`)
/// keep removed files at least that long, as strata does.
pub(crate) fn configuration(seconds: u64) -> Json {
    json!({ RETENTION_KEY: format!("interval {seconds} seconds") })
}

/// The retention a table's configuration declares, as [`configuration`] spells it; `None`
/// for any other spelling (another tool's).
fn retention_of(configuration: &Json) -> Option<Duration> {
    let text = configuration.get(RETENTION_KEY)?.as_str()?;
    let seconds = text.strip_prefix("interval ")?.strip_suffix(" seconds")?;
    seconds.parse().ok().map(Duration::from_secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commit_names_are_deltas_twenty_digits() {
        assert_eq!(
            table_log_key("line 4/β", 7),
            "parquet/line%204%2F%CE%B2/_delta_log/00000000000000000007.json"
        );
        assert_eq!(parse_version("00000000000000000007.json"), Some(7));
        for not_ours in [
            "7.json",
            "00000000000000000007.json#1",
            "00000000000000000010.checkpoint.parquet",
            "_last_checkpoint",
            "0000000000000000000x.json",
        ] {
            assert_eq!(parse_version(not_ours), None, "{not_ours}");
        }
    }

    #[test]
    fn a_table_id_is_a_uuid_of_the_store_and_stream() {
        let id = table_id(&[7; 16], "capture");
        assert_eq!(id.len(), 36);
        assert_eq!(
            id.split('-').map(str::len).collect::<Vec<_>>(),
            [8, 4, 4, 4, 12]
        );
        assert_eq!(id, table_id(&[7; 16], "capture"));
        assert_ne!(id, table_id(&[7; 16], "capturf"));
        assert_ne!(id, table_id(&[8; 16], "capture"));
    }

    #[test]
    fn a_replay_keeps_what_was_added_and_not_removed() {
        let mut table = Table::default();
        let t0 = UNIX_EPOCH;
        let v0 = concat!(
            r#"{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}"#,
            "\n",
            r#"{"metaData":{"id":"x","schemaString":"{}","configuration":{}}}"#,
            "\n",
            r#"{"txn":{"appId":"strata","version":4}}"#,
            "\n",
            r#"{"add":{"path":"a.parquet","size":10}}"#,
            "\n",
            r#"{"add":{"path":"b.parquet","size":20}}"#,
            "\n"
        );
        let present = BTreeSet::from(["a.parquet".to_owned()]);
        table.apply(v0.as_bytes(), t0, &present).unwrap();
        let v1 = concat!(
            r#"{"txn":{"appId":"other","version":99}}"#,
            "\n",
            r#"{"remove":{"path":"a.parquet"}}"#,
            "\n",
            r#"{"txn":{"appId":"strata","version":5}}"#,
        );
        table.apply(v1.as_bytes(), t0, &present).unwrap();
        assert_eq!(table.files.keys().collect::<Vec<_>>(), ["b.parquet"]);
        assert_eq!(table.seq, Some(5));
        assert_eq!(table.removed_at.get("a.parquet"), Some(&(t0, None)));
        // A file the bucket no longer holds is not remembered.
        table
            .apply(br#"{"remove":{"path":"b.parquet"}}"#, t0, &present)
            .unwrap();
        assert!(table.files.is_empty());
        assert_eq!(table.removed_at.len(), 1);
        let newer = r#"{"protocol":{"minReaderVersion":3,"minWriterVersion":7}}"#;
        assert!(table.apply(newer.as_bytes(), t0, &present).is_err());
        assert!(table.apply(b"{not json", t0, &present).is_err());
        assert!(table.apply(br#"{"add":{"size":1}}"#, t0, &present).is_err());
    }

    #[test]
    fn the_retention_reads_back_as_it_is_written() {
        assert_eq!(
            retention_of(&configuration(3600)),
            Some(Duration::from_secs(3600))
        );
        assert_eq!(retention_of(&configuration(0)), Some(Duration::ZERO));
        for other in [
            json!({}),
            json!({RETENTION_KEY: "interval 1 hour"}),
            json!({RETENTION_KEY: 5}),
        ] {
            assert_eq!(retention_of(&other), None, "{other}");
        }
    }
}
