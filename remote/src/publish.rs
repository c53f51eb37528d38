//! `Publisher`: the writer's side. Segments first, then the record that claims them.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant, SystemTime};

use strata_engine::Store;
use strata_index::{Catalog, FileName, parse_log};
use strata_segment::names::{FileKind, NumberedName, SEG_DIR};
use strata_segment::vfs::Vfs;
use strata_segment::{SegmentError, manifest_generations, read_manifest, write_two_phase};

use crate::bucket::{Bucket, Created};
use crate::chain::{Apart, passes_through};
use crate::config::RemoteConfig;
use crate::error::RemoteError;
use crate::logobj::{LogKind, LogObject};
use crate::parquet::{Expected, ParquetObjects, Part, Synced, raw_parts};
use crate::replica::{
    Assembled, IDENTITY_BYTES_MAX, IDENTITY_KEY, assemble, epoch_key, log_key, log_seqs, parse_seq,
    seg_key,
};

/// The file in the local store's root that names the store to its buckets.
pub const IDENTITY_FILE: &str = "remote-identity";
const IDENTITY_PREFIX: &str = "strata-remote identity v1 ";
/// How many epochs a starting writer tries before giving up on a bucket other writers keep
/// starting on.
const EPOCH_TRIES: u32 = 16;
/// The epochs writers take stay below this (2^53): a marker at or above it was put by hand or
/// by damage, and is refused as junk rather than exhausting the epochs left.
pub const EPOCH_MAX: u64 = 1 << 53;

/// What one [`Publisher::publish`] did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Published {
    /// The `log/` object put, or `None` when the bucket already held everything.
    pub seq: Option<u64>,
    /// Whether it was a reset (the whole manifest, after a local rewrite or a first publish).
    pub reset: bool,
    /// Segments uploaded.
    pub segments: usize,
    /// Their bytes.
    pub bytes: u64,
    /// Segments found already uploaded (by a publish whose record never followed).
    pub already_there: usize,
    /// Segments the bucket held (its newest state claims them, or this publisher put them for
    /// a claim to come) that it no longer held whole when this publish listed `seg/`: deleted
    /// from the bucket, or cut short there. Each was put again from the local store's copy,
    /// checked against its record (they are counted in `segments` and `bytes` too).
    pub restored: Vec<FileName>,
    /// Parquet objects put beside the segments ([`RemoteConfig::parquet`]): those of the
    /// segments this publish claimed, and any an earlier publish left missing.
    pub parquet: usize,
    /// Their bytes.
    pub parquet_bytes: u64,
    /// Parquet objects deleted: those no version of their stream's table has held for
    /// [`RemoteConfig::table_retention`] (of segments that no longer hold rows of their
    /// stream, and those replaced by an object of the rows their segment still holds).
    pub parquet_deleted: usize,
    /// Table versions committed (one per stream whose table did not yet hold this state).
    pub table_versions: usize,
}

/// What one [`Publisher::collect`] deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Collected {
    /// Segment objects deleted (retired longer ago than the grace period).
    pub segments: usize,
    /// `log/` objects deleted (below a reset older than the grace period).
    pub logs: usize,
    /// Deletions still waiting for their grace period.
    pub waiting: usize,
}

/// What [`Publisher::adopt`] did, or [`Publisher::plan_adoption`] would do.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Adoption {
    /// The bucket's newest `log/` object, whose history the adoption replaces (`None`: the
    /// bucket's log is empty).
    pub replaces: Option<u64>,
    /// The reset the adoption puts: one above `replaces`.
    pub seq: u64,
    /// The `log/` objects below it: deleted once the grace has passed.
    pub logs: Vec<u64>,
    /// The segment objects the store's live state does not claim: deleted once the grace has
    /// passed.
    pub segments: Vec<FileName>,
    /// Segments the store's live state claims that the bucket holds under the same name with
    /// other bytes: the adoption is refused while there are any.
    pub collisions: Vec<FileName>,
    /// The highest segment name in the bucket: the store issues names above it from the
    /// adoption on (`Store::reserve_names`), so that no name of the old history comes back
    /// with other bytes.
    pub names_above: FileName,
    /// How long after the adoption the old history's objects stay.
    pub grace: Duration,
    /// What the adoption uploaded and put (empty in a plan).
    pub published: Published,
}

/// The writer's side of the tier: publishes what a local [`Store`] made durable, in order.
///
/// Call [`Publisher::publish`] after a `seal`, a compaction step, or any other change you want
/// replicas to see; it holds `&Store`, so nothing changes the store while it reads it. Call
/// [`Publisher::collect`] now and then (publish does when something is due) to delete what
/// the grace period no longer protects.
#[derive(Debug)]
pub struct Publisher {
    bucket: Bucket,
    config: RemoteConfig,
    identity: [u8; 16],
    epoch: u64,
    /// The bucket's newest `log/` object (its body dropped).
    head: Option<LogObject>,
    /// Segments the bucket held, as far as this publisher knows: those its newest state
    /// claims, and those this publisher uploaded for a claim to come. Each publish checks them
    /// against one listing of `seg/` (an object can be deleted behind the writer's back) and
    /// puts back any the listing lacks.
    uploaded: BTreeSet<FileName>,
    /// Files live in the bucket's newest state.
    live: BTreeSet<FileName>,
    /// Segments no longer claimed, and since when: deleted once the grace period has passed.
    retired: Vec<(Instant, FileName)>,
    /// Resets published, and when: every `log/` object below one is deleted after the grace.
    resets: Vec<(Instant, u64)>,
    fenced: Option<(u64, Option<u64>)>,
    /// The bucket's newest state may not be `head`: a `log/` put whose outcome is unknown (an
    /// error after the request left), or another object found where ours was to go. The next
    /// publish or collect reads the bucket's newest state before anything else.
    stale: bool,
    /// With [`RemoteConfig::parquet`]: the Parquet objects the bucket holds.
    parquet: Option<ParquetObjects>,
    /// With [`RemoteConfig::parquet`]: every (stream, segment) of the bucket's newest state
    /// whose segment holds a live raw tier of the stream, each of which gets a Parquet object,
    /// with the rows it must hold.
    raw: BTreeMap<Part, Expected>,
}

impl Publisher {
    /// Attaches `store` to `bucket`: checks (or, the first time, records) that the two belong
    /// together, takes the next writer epoch, and reads the bucket's newest state. Refuses a
    /// bucket that holds another store, or a state the local store does not hold.
    pub fn attach(
        store: &Store,
        bucket: Bucket,
        config: RemoteConfig,
    ) -> Result<Publisher, RemoteError> {
        let (mut publisher, vfs) = Publisher::bind(store, bucket, config)?;
        // The chain first, with no epoch taken: a store whose history does not pass through
        // the bucket's head (a stale copy, a restored backup, a repaired store, another store
        // given this one's identity) is refused before it writes anything, so it fences
        // nobody and the bucket's writer goes on.
        publisher.read_head(vfs.as_ref(), false)?;
        publisher.epoch = take_epoch(&publisher.bucket)?;
        if let Err(error) = publisher.read_head(vfs.as_ref(), true) {
            // The bucket's writer published between the two looks: this store is behind it
            // after all. Its marker goes again (best effort), so that it fences the writer
            // for as short a while as can be.
            if matches!(error, RemoteError::Diverged { .. }) {
                let _ = publisher.bucket.delete(&epoch_key(publisher.epoch));
            }
            return Err(error);
        }
        // The object store's clock now: when our epoch marker was written.
        let clock = publisher.bucket.modified(&epoch_key(publisher.epoch))?;
        publisher.sweep_unclaimed(clock)?;
        publisher.list_parquet(clock)?;
        Ok(publisher)
    }

    /// A publisher of `store` to `bucket` that has checked the store may publish and the
    /// bucket is this store's (recording the identity the first time), and taken no epoch.
    fn bind(
        store: &Store,
        bucket: Bucket,
        config: RemoteConfig,
    ) -> Result<(Publisher, std::sync::Arc<dyn Vfs>), RemoteError> {
        if store.is_read_only() {
            return Err(RemoteError::Identity {
                reason: "a read-only store cannot publish (open it writable)".into(),
            });
        }
        #[cfg(not(feature = "parquet"))]
        if config.parquet {
            return Err(RemoteError::Refused {
                reason: crate::parquet::NO_FEATURE.to_owned(),
            });
        }
        store.check_poison()?;
        let vfs = store.vfs();
        let identity = bind_identity(vfs.as_ref(), &bucket)?;
        let publisher = Publisher {
            bucket,
            config,
            identity,
            epoch: 0,
            head: None,
            uploaded: BTreeSet::new(),
            live: BTreeSet::new(),
            retired: Vec::new(),
            resets: Vec::new(),
            fenced: None,
            stale: true,
            parquet: None,
            raw: BTreeMap::new(),
        };
        Ok((publisher, vfs))
    }

    /// Reads the bucket's newest state and makes it this publisher's head, after checking
    /// that the local store's history passes through it (the chain: [`crate::chain`]) and,
    /// with `fence`, that no newer writer wrote it.
    fn read_head(&mut self, vfs: &dyn Vfs, fence: bool) -> Result<(), RemoteError> {
        self.remove_torn_head()?;
        let state = assemble(&self.bucket, &self.config, Some(self.identity))?;
        let now = Instant::now();
        let (head, live, raw) = match state {
            None => (None, BTreeSet::new(), BTreeMap::new()),
            Some(Assembled { head, catalog, .. }) => {
                if fence && head.epoch > self.epoch {
                    self.fenced = Some((head.seq, Some(head.epoch)));
                    return Err(self.fenced_error());
                }
                let local = LocalState::read(vfs)?;
                local.extends(&head)?;
                let live = catalog.live_files().map(|f| f.name).collect();
                let raw = if self.config.parquet {
                    raw_parts(&catalog)
                } else {
                    BTreeMap::new()
                };
                (
                    Some(LogObject {
                        body: Vec::new(),
                        ..head
                    }),
                    live,
                    raw,
                )
            }
        };
        for &gone in self.live.difference(&live) {
            self.retired.push((now, gone));
        }
        self.uploaded.extend(live.iter().copied());
        self.retired.retain(|(_, name)| !live.contains(name));
        self.live = live;
        self.raw = raw;
        self.head = head;
        self.stale = false;
        Ok(())
    }

    /// With [`RemoteConfig::parquet`], lists the Parquet objects the bucket holds and reads
    /// each stream's table: the next publish writes the objects missing, commits the tables,
    /// and deletes the objects no table has held for the retention (counted by the object
    /// store's clock, which reads `clock` now).
    fn list_parquet(&mut self, clock: SystemTime) -> Result<(), RemoteError> {
        if self.config.parquet {
            self.parquet = Some(ParquetObjects::list(&self.bucket, &self.config, clock)?);
        }
        Ok(())
    }

    /// With [`RemoteConfig::parquet`], brings the Parquet objects to the state the bucket's
    /// newest `log/` object claims, which `store` is at: puts the missing ones, then deletes
    /// those no longer wanted.
    fn sync_parquet(
        &mut self,
        store: &Store,
        published: &mut Published,
    ) -> Result<(), RemoteError> {
        let (Some(objects), Some(head)) = (self.parquet.as_mut(), &self.head) else {
            return Ok(());
        };
        let mut done = Synced::default();
        let synced = objects.sync(
            &self.bucket,
            store,
            &self.raw,
            head.seq,
            &self.identity,
            &self.config,
            &mut done,
        );
        published.parquet += done.put;
        published.parquet_bytes += done.bytes;
        published.parquet_deleted += done.deleted;
        published.table_versions += done.versions;
        synced.map_err(|e| match (e, &self.head) {
            (RemoteError::Parquet { key, reason }, Some(head)) => RemoteError::Parquet {
                key,
                reason: format!(
                    "{reason} (log/{} is published; the next publish writes or deletes the \
                         Parquet objects left)",
                    head.seq
                ),
            },
            (e, _) => e,
        })
    }

    /// What [`Publisher::adopt`] would do to `bucket`, changing nothing: the objects of the
    /// bucket's history it would leave to be deleted once the grace has passed, and the
    /// segments whose names the store's history shares with other bytes in the bucket (which
    /// make an adoption impossible in place).
    pub fn plan_adoption(
        store: &Store,
        bucket: &Bucket,
        config: &RemoteConfig,
    ) -> Result<Adoption, RemoteError> {
        store.check_poison()?;
        let vfs = store.vfs();
        check_identity(vfs.as_ref(), bucket)?;
        let local = LocalState::read(vfs.as_ref())?;
        let logs = log_seqs(bucket, None)?;
        let live: BTreeMap<FileName, (u64, u32)> = local
            .catalog
            .live_files()
            .map(|f| (f.name, (f.len, f.digest)))
            .collect();
        let mut adoption = Adoption {
            replaces: logs.last().copied(),
            seq: logs
                .last()
                .map_or(Some(0), |s| s.checked_add(1))
                .ok_or_else(|| RemoteError::Bound {
                    reason: format!("{}: the log's numbers are used up", bucket.location()),
                })?,
            logs,
            grace: config.grace,
            ..Adoption::default()
        };
        for (name, size) in bucket.list(SEG_DIR, None)? {
            let Some(n) = NumberedName::parse(&name) else {
                continue;
            };
            adoption.names_above = adoption.names_above.max(n.number);
            match live.get(&n.number) {
                None => adoption.segments.push(n.number),
                Some(&(len, _)) if len != size => adoption.collisions.push(n.number),
                // The same length: the same segment only if it has the same bytes (read, once,
                // so that the adoption refuses before it changes anything).
                // Compared byte for byte with the local file: the whole-file digest sees only
                // a segment's layout (its blocks' crcs cancel their contents; `upload`).
                Some(&(len, _)) => {
                    let there = bucket.get(&seg_key(n.number), len)?;
                    let path = NumberedName::segment(n.number).path_in(SEG_DIR);
                    let ours = vfs.read(&path).map_err(|e| io_error(&path, e))?;
                    if there != ours {
                        adoption.collisions.push(n.number);
                    }
                }
            }
        }
        Ok(adoption)
    }

    /// Puts `store`'s history in the bucket's place, whatever the bucket held: an operator's
    /// explicit act (`strata adopt --discard-bucket-history`), for a store whose history the
    /// bucket will not take as a continuation of its own ([`RemoteError::Diverged`]: a repaired
    /// store, a restored backup, a bucket whose log is damaged). Takes a new epoch (fencing
    /// the bucket's writer), uploads the store's live segments, then puts one reset marked
    /// *adopted* that names the head it replaces. Replicas follow it to the new history.
    ///
    /// Deletes nothing now: the segments only the old history claims and the `log/` objects
    /// below the new reset are deleted by a later [`Publisher::collect`] once
    /// [`RemoteConfig::grace`] has passed, so a replica reading the old history meanwhile
    /// reads on. Refused (changing nothing) when the bucket holds a segment under a name the
    /// store's live state uses with other bytes: replacing it would take it from the old
    /// history's replicas (`RemoteError::Refused` naming the objects; publish to another prefix).
    /// Before it puts anything, the store records that it issues no name at or below the
    /// bucket's highest (`Store::reserve_names`).
    ///
    /// With [`RemoteConfig::parquet`] it writes no Parquet object: the next
    /// [`Publisher::publish`] (even with nothing new to publish) puts the adopted history's and
    /// deletes the old one's.
    pub fn adopt(
        store: &mut Store,
        bucket: Bucket,
        config: RemoteConfig,
    ) -> Result<(Publisher, Adoption), RemoteError> {
        let mut adoption = Publisher::plan_adoption(store, &bucket, &config)?;
        if !adoption.collisions.is_empty() {
            return Err(RemoteError::Refused {
                reason: collision_reason(&adoption.collisions),
            });
        }
        // The old history's segments stay in the bucket for the grace, and their names must
        // never come back with other bytes: the store issues names above all of them (a
        // restored backup's counter is behind the bucket's). One local record, published with
        // the reset below.
        if adoption.names_above > 0 {
            store.reserve_names(adoption.names_above)?;
        }
        let store: &Store = store;
        let (mut publisher, vfs) = Publisher::bind(store, bucket, config)?;
        publisher.epoch = take_epoch(&publisher.bucket)?;
        // Before anything is put under parquet/: the next publish brings it and the tables to
        // the adopted history. Times by the object store's clock: when it wrote our marker.
        let clock = publisher.bucket.modified(&epoch_key(publisher.epoch))?;
        publisher.list_parquet(clock)?;
        let parent = match adoption.replaces {
            Some(seq) => publisher
                .bucket
                .get_opt(&log_key(seq), publisher.config.log_bytes_max)?
                .map(|bytes| LogObject::digest_of(&bytes)),
            None => None,
        };
        let local = LocalState::read(vfs.as_ref())?;
        let mut published = Published {
            reset: true,
            ..Published::default()
        };
        let live: BTreeSet<FileName> = local.catalog.live_files().map(|f| f.name).collect();
        for file in local.catalog.live_files() {
            publisher
                .upload(
                    vfs.as_ref(),
                    file.name,
                    file.len,
                    file.digest,
                    &mut published,
                )
                .map_err(|e| match e {
                    RemoteError::Unreadable { key, reason } => RemoteError::Refused {
                        reason: format!(
                            "{key}: {reason}; an adoption cannot replace it in place (publish \
                             this store to another prefix)"
                        ),
                    },
                    other => other,
                })?;
        }
        let seq = adoption.seq;
        let mut object = LogObject {
            version: 2,
            identity: publisher.identity,
            epoch: publisher.epoch,
            seq,
            reset: seq,
            kind: LogKind::Reset,
            generation: local.generation,
            end: local.manifest.len() as u64,
            prefix_crc: crc32c::crc32c(&local.manifest),
            parent: if seq == 0 {
                None
            } else {
                Some(parent.unwrap_or(0))
            },
            adopted: true,
            body: local.manifest,
            digest: 0,
        };
        let bytes = object.encode();
        object.digest = LogObject::digest_of(&bytes);
        if publisher.bucket.put_create(&log_key(seq), bytes)? == Created::Exists {
            return Err(RemoteError::Diverged {
                reason: format!(
                    "the bucket's log/{seq} was put by another writer while this store adopted \
                     the bucket; nothing of its history was replaced (adopt again)"
                ),
            });
        }
        // Every object of the old history waits out the grace from now, when the adoption
        // made it unclaimed.
        let now = Instant::now();
        publisher.retired = adoption.segments.iter().map(|&n| (now, n)).collect();
        publisher.resets.push((now, seq));
        publisher.uploaded.clone_from(&live);
        publisher.live = live;
        if publisher.config.parquet {
            publisher.raw = raw_parts(&local.catalog);
        }
        publisher.head = Some(LogObject {
            body: Vec::new(),
            ..object
        });
        publisher.stale = false;
        published.seq = Some(seq);
        adoption.published = published;
        Ok((publisher, adoption))
    }

    /// Moves the newest `log/` object to `quarantine/` if it is torn (it fails its checksum: an
    /// upload a store tore, against object_store's promise that a put is whole or absent). No
    /// reader can have used a torn object (a replica refuses it), and the publish that put it
    /// is done again from the local manifest. A whole object that does not decode is left for
    /// `assemble` to refuse.
    fn remove_torn_head(&self) -> Result<(), RemoteError> {
        let Some(&newest) = log_seqs(&self.bucket, None)?.last() else {
            return Ok(());
        };
        let key = log_key(newest);
        match self.bucket.get_opt(&key, self.config.log_bytes_max)? {
            Some(bytes) if LogObject::torn(&bytes) => {
                // Kept, never only deleted: a copy under quarantine/ (named by the writer that
                // moved it) is evidence, should the object have been whole once and damaged
                // after, rather than torn by its put.
                let kept = format!("quarantine/log-{newest:020}-epoch-{}", self.epoch);
                self.bucket.put_create(&kept, bytes)?;
                self.bucket.delete(&key)
            }
            _ => Ok(()),
        }
    }

    /// Queues for deletion what the bucket's state no longer needs: every segment object it
    /// does not claim (retired, or uploaded by a writer that crashed before its record), and the
    /// `log/` objects below the newest state's reset. Each waits out the grace period counted
    /// from when the object store wrote the newest `log/` object (no later than whatever
    /// retired them; for an unclaimed segment, no earlier than its own upload), by the object
    /// store's own clock (`clock`, when it wrote this writer's epoch marker), so that a writer
    /// that lives for seconds (a command) still deletes what was retired long enough ago, and
    /// the machines' clocks never enter. A replica may still be reading what the grace covers.
    fn sweep_unclaimed(&mut self, clock: SystemTime) -> Result<(), RemoteError> {
        let now = Instant::now();
        let grace = self.config.grace;
        let since = |written: SystemTime| {
            // Only whether `grace` has passed matters: an age past it is clamped, so that it
            // fits below an Instant's origin.
            let age = clock.duration_since(written).unwrap_or(Duration::ZERO);
            now.checked_sub(age.min(grace)).unwrap_or(now)
        };
        let logs = self.bucket.list_modified("log")?;
        let written_of = |seq: u64| {
            logs.iter()
                .find(|(name, _)| parse_seq(name) == Some(seq))
                .map(|&(_, written)| written)
        };
        let head_written = self.head.as_ref().and_then(|h| written_of(h.seq));
        for (name, written) in self.bucket.list_modified(SEG_DIR)? {
            match NumberedName::parse(&name) {
                // Publish compares it with the local file before reusing it for a claim.
                Some(n) if !self.live.contains(&n.number) => {
                    // No time for a head the listing lacks: count from now.
                    let retired = match (&self.head, head_written) {
                        (_, Some(head)) => head.max(written),
                        (Some(_), None) => clock,
                        (None, None) => written,
                    };
                    self.retired.push((since(retired), n.number));
                }
                _ => {}
            }
        }
        if let Some(head) = &self.head
            && head.reset > 0
            && let Some(written) = written_of(head.reset)
        {
            self.resets.push((since(written), head.reset));
        }
        Ok(())
    }

    /// The segments the bucket's newest state claims, as this publisher last published or
    /// read it; `None` when a failure left it unsure (the next publish reads the bucket).
    pub fn claimed(&self) -> Option<&BTreeSet<FileName>> {
        (!self.stale && self.fenced.is_none()).then_some(&self.live)
    }

    /// Refuses, as [`RemoteError::Fenced`], a publisher that a newer writer has fenced, or
    /// whose epoch is no longer the bucket's highest (a newer writer has attached and may
    /// collect what this one's last state claims): what must hold before the writer's disk
    /// gives up a copy the bucket is trusted to keep ([`crate::TieredVfs::evict`]).
    pub fn still_the_writer(&self) -> Result<(), RemoteError> {
        if self.fenced.is_some() {
            return Err(self.fenced_error());
        }
        let newer = self
            .bucket
            .list("epoch", None)?
            .iter()
            .filter_map(|(name, _)| parse_seq(name))
            .any(|epoch| epoch > self.epoch);
        if newer {
            let seq = self.head.as_ref().map_or(0, |h| h.seq.saturating_add(1));
            return Err(RemoteError::Fenced {
                seq,
                epoch: None,
                ours: self.epoch,
            });
        }
        Ok(())
    }

    /// This writer's epoch.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// The store's identity, as the bucket records it.
    pub fn identity(&self) -> [u8; 16] {
        self.identity
    }

    /// The newest `log/` object's number, if any.
    pub fn head(&self) -> Option<u64> {
        self.head.as_ref().map(|h| h.seq)
    }

    /// The bucket's objects.
    pub fn bucket(&self) -> &Bucket {
        &self.bucket
    }

    /// Deletions waiting for their grace period (retired segments, resets whose older `log/`
    /// objects go): at most what the grace period's publishes retired, since each publish
    /// collects what is due.
    pub fn waiting(&self) -> usize {
        self.retired.len() + self.resets.len()
    }

    /// Publishes everything `store` made durable since the last publish: uploads each live
    /// segment the bucket lacks, then one `log/` object with the new manifest frames. Puts no
    /// `log/` object when the bucket's log is up to date. Refuses a poisoned store (what its
    /// failed write left may not be durable).
    ///
    /// Each publish lists `seg/` once, so a segment of the bucket's state that was deleted
    /// from the bucket (or cut short there) since the writer last looked is put back from the
    /// local copy, checked against its record ([`Published::restored`]), even when there is
    /// nothing new to publish; if the store holds no whole copy, the publish is refused as
    /// [`RemoteError::Lost`], naming it, before it puts anything.
    ///
    /// A failure leaves the bucket a consistent prefix (segments without a record are never
    /// read); publish again to go on, even when the failure hid whether the `log/` object was
    /// put (the next publish reads the bucket first). A publisher that lost the race for a
    /// `log/` object to a newer writer, or sees a newer epoch, answers [`RemoteError::Fenced`]
    /// now and ever after.
    ///
    /// With [`RemoteConfig::parquet`], once the `log/` object is put (or the bucket was found
    /// up to date), it puts a Parquet object for every (stream, live segment holding raw rows
    /// of it) the bucket lacks, then deletes those no longer wanted (docs/remote.md, "Parquet
    /// beside the segments"). A failure there is [`RemoteError::Parquet`], after the
    /// log was published: the next publish writes, or deletes, what is left.
    pub fn publish(&mut self, store: &Store) -> Result<Published, RemoteError> {
        self.check_fence()?;
        store.check_poison()?;
        let vfs = store.vfs();
        // At most twice: a put that finds our own earlier object (its acknowledgement was
        // lost) reads the bucket's state and goes on from there once.
        for _ in 0..2 {
            if self.stale {
                self.read_head(vfs.as_ref(), true)?;
            }
            match self.publish_once(vfs.as_ref())? {
                Some(mut published) => {
                    // After the `log/` object: a Parquet object never shows a segment before
                    // the strata history claims it. A failure here is the publish's (the log
                    // is published; the next publish writes what is missing).
                    self.sync_parquet(store, &mut published)?;
                    self.collect_due();
                    return Ok(published);
                }
                None => self.stale = true,
            }
        }
        Err(RemoteError::Diverged {
            reason: format!(
                "{}: the bucket changed under this writer twice in one publish",
                self.bucket.location()
            ),
        })
    }

    /// One attempt; `None` if `log/S` already holds an object not ours to go on from (the
    /// caller re-reads the bucket's state).
    fn publish_once(&mut self, vfs: &dyn Vfs) -> Result<Option<Published>, RemoteError> {
        let local = LocalState::read(vfs)?;
        let generation = local.generation;
        let len = local.manifest.len() as u64;
        // The chain: the local history must pass through the head this publisher read (the
        // store may have been rewritten, or replaced under it, since).
        if let Some(h) = &self.head {
            local.extends(h)?;
        }
        let live: BTreeMap<FileName, (u64, u32)> = local
            .catalog
            .live_files()
            .map(|f| (f.name, (f.len, f.digest)))
            .collect();
        let mut published = Published::default();
        // Even with nothing new to publish: an object of the bucket's state may have been
        // deleted behind the writer's back, and replicas fail on it until it is put back.
        self.put_segments(vfs, &live, &mut published)?;
        let kind = match &self.head {
            Some(h) if h.generation == generation && h.end == len => return Ok(Some(published)),
            Some(h) if h.generation == generation => LogKind::Append,
            Some(_) | None => LogKind::Reset,
        };
        published.reset = kind == LogKind::Reset;
        let start = match (&self.head, kind) {
            (Some(h), LogKind::Append) => h.end,
            _ => 0,
        };
        let seq = match &self.head {
            None => 0,
            Some(h) => h.seq.checked_add(1).ok_or_else(|| RemoteError::Bound {
                reason: format!("{}: the log's numbers are used up", self.bucket.location()),
            })?,
        };
        let mut object = LogObject {
            version: 2,
            identity: self.identity,
            epoch: self.epoch,
            seq,
            reset: match (&self.head, kind) {
                (Some(h), LogKind::Append) => h.reset,
                _ => seq,
            },
            kind,
            generation,
            end: len,
            prefix_crc: crc32c::crc32c(&local.manifest),
            parent: self.head.as_ref().map(|h| h.digest),
            adopted: false,
            body: local.manifest[usize::try_from(start).unwrap_or(usize::MAX)..].to_vec(),
            digest: 0,
        };
        let bytes = object.encode();
        object.digest = LogObject::digest_of(&bytes);
        if !self.put_log(seq, &bytes)? {
            return Ok(None);
        }
        let now = Instant::now();
        let live_now: BTreeSet<FileName> = live.keys().copied().collect();
        for &gone in self.live.difference(&live_now) {
            self.retired.push((now, gone));
        }
        // A segment claimed again (an upload whose record a crash lost, re-used by this
        // publish) is no longer waiting to be deleted: its grace starts when it is retired.
        self.retired.retain(|(_, name)| !live_now.contains(name));
        self.live = live_now;
        if self.config.parquet {
            self.raw = raw_parts(&local.catalog);
        }
        if kind == LogKind::Reset {
            self.resets.push((now, seq));
        }
        self.head = Some(LogObject {
            body: Vec::new(),
            ..object
        });
        published.seq = Some(seq);
        Ok(Some(published))
    }

    /// Uploads every segment of `live` (the local state about to be published) that the bucket
    /// does not hold, as one listing of `seg/` shows it: the new ones, and any it held and no
    /// longer holds whole (deleted behind the writer's back, or cut short), which are put back.
    /// Every upload is the local file, checked against its record first. A segment the bucket
    /// lost and the store holds no whole copy of is [`RemoteError::Lost`], before anything
    /// more is put: the next `log/` object would claim it too.
    ///
    /// The listing is one LIST request per 1,000 keys under `seg/` (S3's page): live segments
    /// and those waiting out the grace.
    fn put_segments(
        &mut self,
        vfs: &dyn Vfs,
        live: &BTreeMap<FileName, (u64, u32)>,
        published: &mut Published,
    ) -> Result<(), RemoteError> {
        let listed: BTreeMap<FileName, u64> = self
            .bucket
            .list(SEG_DIR, None)?
            .into_iter()
            .filter_map(|(name, size)| {
                let name = NumberedName::parse(&name)?;
                (name.kind == FileKind::Segment).then_some((name.number, size))
            })
            .collect();
        for (&name, &(len, digest)) in live {
            let held = listed.get(&name) == Some(&len);
            let known = self.uploaded.contains(&name);
            if held && known {
                continue;
            }
            // A segment this publisher knew the bucket held and the listing lacks, or lists
            // at another length than its record's: lost from the bucket since. One it never
            // knew there goes through the same upload, which compares what it finds.
            let lost = known && !held;
            self.upload(vfs, name, len, digest, published)
                .map_err(|error| match error {
                    RemoteError::Local(source) if lost => self.lost(name, &source),
                    other => other,
                })?;
            self.uploaded.insert(name);
            if lost {
                published.restored.push(name);
            }
        }
        Ok(())
    }

    /// Why segment `name`, which the bucket no longer holds whole, cannot be put back: the
    /// local copy is missing or differs from its record (`source`).
    fn lost(&self, name: FileName, source: &SegmentError) -> RemoteError {
        let held = match (&self.head, self.live.contains(&name)) {
            (Some(head), true) => format!(
                "its newest state, log/{}, claims it (replicas cannot read it)",
                head.seq
            ),
            _ => "this writer put it there for its next log/ object to claim".to_owned(),
        };
        RemoteError::Lost {
            key: seg_key(name),
            reason: format!(
                "the bucket no longer holds it whole, and {held}; the local store holds no \
                 whole copy to put back ({source}). Nothing more is published: the next log/ \
                 object would claim it too"
            ),
        }
    }

    /// Puts `log/seq`, create-only. `false` if the bucket already held another object there
    /// that is not a newer writer's (this writer's own, put by a publish whose acknowledgement
    /// was lost; an older writer's that raced it; a torn one): the caller reads the bucket's
    /// state again (which checks that the local store holds it, and removes a torn head) and
    /// goes on from there. A newer writer's object fences this one.
    fn put_log(&mut self, seq: u64, bytes: &[u8]) -> Result<bool, RemoteError> {
        let key = log_key(seq);
        let created = self
            .bucket
            .put_create(&key, bytes.to_vec())
            .inspect_err(|_| {
                // The request may have landed before it failed: read the bucket before the next.
                self.stale = true;
            })?;
        if created == Created::New {
            return Ok(true);
        }
        let there = self
            .bucket
            .get(&key, self.config.log_bytes_max)
            .inspect_err(|_| self.stale = true)?;
        if there == bytes {
            return Ok(true);
        }
        if let Ok(winner) = LogObject::decode(&there, seq)
            && winner.epoch > self.epoch
        {
            self.fenced = Some((seq, Some(winner.epoch)));
            return Err(self.fenced_error());
        }
        Ok(false)
    }

    fn upload(
        &self,
        vfs: &dyn Vfs,
        name: FileName,
        len: u64,
        digest: u32,
        published: &mut Published,
    ) -> Result<(), RemoteError> {
        let path = NumberedName::segment(name).path_in(SEG_DIR);
        let bytes = vfs.read(&path).map_err(|e| io_error(&path, e))?;
        if bytes.len() as u64 != len || strata_segment::format::file_digest(&bytes) != digest {
            return Err(RemoteError::Local(SegmentError::mismatch(
                &path,
                "its length or digest differs from its record: not uploaded",
            )));
        }
        let key = seg_key(name);
        // Twice at most: an object already there that is not a whole segment (a torn upload,
        // or damage in the bucket) is replaced by the bytes its record names. A whole segment
        // that differs (another copy of this store wrote it) is left alone and refused.
        for _ in 0..2 {
            if self.bucket.put_create(&key, bytes.clone())? == Created::New {
                published.segments += 1;
                published.bytes += len;
                return Ok(());
            }
            let there = self.bucket.get(&key, len).map_err(|e| match e {
                RemoteError::Bound { .. } => RemoteError::unreadable(
                    &key,
                    format!(
                        "it is larger than the local {path} it should copy (did another copy \
                         of this store publish here?)"
                    ),
                ),
                other => other,
            })?;
            // The bytes themselves, not the digest: a segment's whole-file digest runs over its
            // blocks' own crc32c values, which cancel what they follow (crc32c's residue), so
            // two segments of one layout (the same block lengths) have the same digest whatever
            // they hold. Found by `two_writers_racing_at_every_put_leave_one_history` once two
            // writers' barriers came out the same length: the second took the first's segment
            // for its own.
            if there == bytes {
                published.already_there += 1;
                return Ok(());
            }
            if whole_segment(&there) {
                return Err(RemoteError::unreadable(
                    &key,
                    format!(
                        "it is a whole segment other than the local {path} it should copy (did \
                         another copy of this store publish here?)"
                    ),
                ));
            }
            self.bucket.delete(&key)?;
        }
        Err(RemoteError::unreadable(
            &key,
            format!("it still differs from the local {path} it copies after it was put again"),
        ))
    }

    fn fenced_error(&self) -> RemoteError {
        let (seq, epoch) = self.fenced.unwrap_or((0, None));
        RemoteError::Fenced {
            seq,
            epoch,
            ours: self.epoch,
        }
    }

    /// Refuses once fenced, or once a newer writer has taken the next epoch.
    fn check_fence(&mut self) -> Result<(), RemoteError> {
        // Any epoch above ours: a newer writer may have collected the markers between.
        let checked = self.still_the_writer();
        if let Err(RemoteError::Fenced { seq, epoch, .. }) = &checked
            && self.fenced.is_none()
        {
            self.fenced = Some((*seq, *epoch));
        }
        checked
    }

    /// Collects after a publish when something waited its grace period out. A failure is not
    /// the publish's (it succeeded): what was not deleted waits for the next collect.
    fn collect_due(&mut self) {
        let grace = self.config.grace;
        let due = self.retired.iter().any(|(when, _)| when.elapsed() >= grace)
            || self.resets.iter().any(|(when, _)| when.elapsed() >= grace);
        if due {
            let _ = self.collect_inner();
        }
    }

    /// Deletes what the grace period no longer protects: segments unclaimed since at least
    /// `grace` ago, `log/` objects below a reset published at least `grace` ago, and the
    /// epoch markers below this writer's. Never a segment the bucket's newest state claims:
    /// it first checks that no other object followed this writer's newest `log/` object, and
    /// reads the bucket's state again if one did.
    ///
    /// A failed delete keeps it and everything after it for the next collect.
    pub fn collect(&mut self) -> Result<Collected, RemoteError> {
        self.check_fence()?;
        self.collect_inner()
    }

    fn collect_inner(&mut self) -> Result<Collected, RemoteError> {
        let after = self.head.as_ref().map(|h| h.seq);
        if !self.stale && !log_seqs(&self.bucket, after)?.is_empty() {
            self.stale = true;
        }
        if self.stale {
            return Err(RemoteError::Diverged {
                reason: format!(
                    "{}: the bucket holds a log/ object this writer did not see put (a lost \
                     acknowledgement, or another writer): publish first, which reads it",
                    self.bucket.location()
                ),
            });
        }
        let grace = self.config.grace;
        let mut collected = Collected::default();
        let live = &self.live;
        self.retired.retain(|(_, name)| !live.contains(name));
        let mut i = 0;
        while i < self.retired.len() {
            let (when, name) = self.retired[i];
            if when.elapsed() < grace {
                i += 1;
                continue;
            }
            self.bucket.delete(&seg_key(name))?;
            self.retired.swap_remove(i);
            self.uploaded.remove(&name);
            collected.segments += 1;
        }
        let due = self
            .resets
            .iter()
            .filter(|(when, _)| when.elapsed() >= grace)
            .map(|&(_, seq)| seq)
            .max();
        if let Some(below) = due {
            for seq in log_seqs(&self.bucket, None)? {
                if seq >= below {
                    break;
                }
                self.bucket.delete(&log_key(seq))?;
                collected.logs += 1;
            }
            self.resets.retain(|&(_, seq)| seq > below);
        }
        for (name, _) in self.bucket.list("epoch", None)? {
            if parse_seq(&name).is_some_and(|epoch| epoch < self.epoch) {
                self.bucket.delete(&epoch_key_named(&name))?;
            }
        }
        collected.waiting = self.waiting();
        Ok(collected)
    }
}

/// Whether `bytes` end with the digest of what precedes it, as every segment a store writes
/// does: a torn or damaged object does not.
fn whole_segment(bytes: &[u8]) -> bool {
    let len = bytes.len();
    len >= 8 && bytes[len - 8..len - 4] == strata_segment::format::file_digest(bytes).to_le_bytes()
}

fn epoch_key_named(name: &str) -> String {
    format!("epoch/{name}")
}

/// The local store's current manifest generation, its trusted bytes and the catalog they
/// describe (whose lineage holds the states of the generations before).
struct LocalState {
    generation: u32,
    manifest: Vec<u8>,
    catalog: Catalog,
}

impl LocalState {
    fn read(vfs: &dyn Vfs) -> Result<LocalState, RemoteError> {
        let (generation, manifest) = local_manifest(vfs)?;
        let catalog = catalog_of(&manifest, vfs.location())?;
        Ok(LocalState {
            generation,
            manifest,
            catalog,
        })
    }

    /// Refuses, as [`RemoteError::Diverged`], a bucket whose newest object `head` records a
    /// state this store's history did not pass through: extending it would fork the bucket
    /// (another copy's history) or rewind it (the store is behind, or was repaired since).
    fn extends(&self, head: &LogObject) -> Result<(), RemoteError> {
        passes_through(
            "this store's",
            self.generation,
            &self.manifest,
            self.catalog.lineage(),
            head.state(),
        )
        .map_err(|apart| RemoteError::Diverged {
            reason: format!(
                "the bucket's newest object log/{} (epoch {}) records manifest {}, which is not \
                 a state of this store's history: {apart}; refusing to {} the bucket's history",
                head.seq,
                head.epoch,
                head.state(),
                match apart {
                    Apart::Behind(_) => "rewind",
                    Apart::Fork(_) | Apart::Unprovable(_) => "fork",
                }
            ),
        })
    }
}

pub(crate) fn io_error(path: &str, source: std::io::Error) -> SegmentError {
    SegmentError::Io {
        path: path.to_owned(),
        source,
    }
}

/// The local manifest's current generation and its trusted bytes.
fn local_manifest(vfs: &dyn Vfs) -> Result<(u32, Vec<u8>), RemoteError> {
    let generation = manifest_generations(vfs)?
        .last()
        .copied()
        .ok_or_else(|| SegmentError::mismatch("manifest-", "the store has no manifest"))?;
    let mut bytes = read_manifest(vfs, generation)?;
    let trusted = usize::try_from(parse_log(&bytes).trusted_len).unwrap_or(usize::MAX);
    bytes.truncate(trusted);
    Ok((generation, bytes))
}

/// The catalog a manifest's bytes describe.
pub(crate) fn catalog_of(manifest: &[u8], whose: String) -> Result<Catalog, RemoteError> {
    let parsed = parse_log(manifest);
    let bad = |reason: String| RemoteError::unreadable(&whose, reason);
    if parsed.trusted_len != manifest.len() as u64 {
        return Err(bad(format!(
            "the manifest's frames end at byte {} of {}",
            parsed.trusted_len,
            manifest.len()
        )));
    }
    let mut catalog = Catalog::new();
    for (i, record) in parsed.records.iter().enumerate() {
        catalog
            .apply(record)
            .map_err(|e| bad(format!("record {i} does not apply: {e:?}")))?;
    }
    Ok(catalog)
}

/// The store's identity: the local file's, the bucket's, or, for a first publish, a new one
/// recorded locally (durably) before the bucket.
fn bind_identity(vfs: &dyn Vfs, bucket: &Bucket) -> Result<[u8; 16], RemoteError> {
    let local = local_identity(vfs)?;
    let remote = match bucket.get_opt(IDENTITY_KEY, IDENTITY_BYTES_MAX)? {
        Some(bytes) => match parse_identity(&bytes) {
            Some(identity) => Some(identity),
            // Torn by the first publish's put, before any record: no replica can have booted.
            None if log_seqs(bucket, None)?.is_empty() => {
                bucket.delete(IDENTITY_KEY)?;
                None
            }
            None => {
                return Err(RemoteError::unreadable(
                    IDENTITY_KEY,
                    "not a strata store identity",
                ));
            }
        },
        None => None,
    };
    let identity = match (local, remote) {
        (Some(l), Some(r)) if l == r => return Ok(l),
        (Some(l), Some(r)) => {
            return Err(RemoteError::Identity {
                reason: format!(
                    "{} holds store {}, this store is {}",
                    bucket.location(),
                    hex(&r),
                    hex(&l)
                ),
            });
        }
        (None, Some(r)) => {
            return Err(RemoteError::Identity {
                reason: format!(
                    "{} holds store {}, and this store was never published there",
                    bucket.location(),
                    hex(&r)
                ),
            });
        }
        (Some(l), None) => l,
        (None, None) => {
            let fresh = new_identity();
            write_two_phase(vfs, "", IDENTITY_FILE, &identity_bytes(&fresh))?;
            fresh
        }
    };
    if bucket.put_create(IDENTITY_KEY, identity_bytes(&identity))? == Created::Exists {
        let there = bucket.get(IDENTITY_KEY, IDENTITY_BYTES_MAX)?;
        if parse_identity(&there) != Some(identity) {
            return Err(RemoteError::Identity {
                reason: format!("another store claimed {} first", bucket.location()),
            });
        }
    }
    Ok(identity)
}

/// The identity recorded in the local store's root, if it was ever published.
fn local_identity(vfs: &dyn Vfs) -> Result<Option<[u8; 16]>, RemoteError> {
    match vfs.exists(IDENTITY_FILE) {
        Ok(true) => {
            let bytes = vfs
                .read(IDENTITY_FILE)
                .map_err(|e| io_error(IDENTITY_FILE, e))?;
            Ok(Some(parse_identity(&bytes).ok_or_else(|| {
                RemoteError::Identity {
                    reason: format!("{IDENTITY_FILE} in the store is malformed"),
                }
            })?))
        }
        Ok(false) => Ok(None),
        Err(e) => Err(io_error(IDENTITY_FILE, e).into()),
    }
}

/// Refuses, as [`RemoteError::Identity`], a bucket that holds another store's identity, or one
/// that holds an identity when the store has none; reads only.
fn check_identity(vfs: &dyn Vfs, bucket: &Bucket) -> Result<(), RemoteError> {
    let local = local_identity(vfs)?;
    let remote = bucket
        .get_opt(IDENTITY_KEY, IDENTITY_BYTES_MAX)?
        .and_then(|bytes| parse_identity(&bytes));
    match (local, remote) {
        (Some(l), Some(r)) if l != r => Err(RemoteError::Identity {
            reason: format!(
                "{} holds store {}, this store is {}",
                bucket.location(),
                hex(&r),
                hex(&l)
            ),
        }),
        (None, Some(r)) => Err(RemoteError::Identity {
            reason: format!(
                "{} holds store {}, and this store was never published there",
                bucket.location(),
                hex(&r)
            ),
        }),
        _ => Ok(()),
    }
}

fn collision_reason(collisions: &[FileName]) -> String {
    let keys: Vec<String> = collisions.iter().take(4).map(|&n| seg_key(n)).collect();
    format!(
        "the bucket holds {} segment(s) under names this store's live state uses, with other \
         bytes ({}{}): the bucket's replicas may still read them, so an adoption cannot replace \
         them in place (publish this store to another prefix)",
        collisions.len(),
        keys.join(", "),
        if collisions.len() > 4 { ", …" } else { "" }
    )
}

/// Takes the epoch one above the highest in the bucket, with a create-only put. A marker at or
/// above [`EPOCH_MAX`] is no writer's (no bucket sees 2^53 writers start): it is refused as junk,
/// naming it, rather than wrapped past or let block every writer for good.
fn take_epoch(bucket: &Bucket) -> Result<u64, RemoteError> {
    let mut lost = 0u32;
    for _ in 0..EPOCH_TRIES {
        let highest = highest_epoch(bucket)?;
        let next = highest.map_or(1, |e| e + 1);
        if next >= EPOCH_MAX {
            return Err(RemoteError::unreadable(
                &epoch_key(next - 1),
                format!(
                    "epoch {} leaves no epoch below {EPOCH_MAX} for the next writer: writers \
                     take epochs one above the highest, and none reaches it; the marker is \
                     junk (remove the object)",
                    next - 1
                ),
            ));
        }
        if bucket.put_create(&epoch_key(next), Vec::new())? == Created::New {
            return Ok(next);
        }
        lost += 1;
    }
    Err(RemoteError::Bound {
        reason: format!(
            "{}: {lost} of {EPOCH_TRIES} tries to take the next writer epoch found it taken by \
             another writer starting at the same time",
            bucket.location()
        ),
    })
}

/// The highest writer epoch the bucket's `epoch/` markers name; refuses a marker no writer can
/// have put (at or above [`EPOCH_MAX`]).
fn highest_epoch(bucket: &Bucket) -> Result<Option<u64>, RemoteError> {
    let mut highest = None;
    for (name, _) in bucket.list("epoch", None)? {
        let Some(epoch) = parse_seq(&name) else {
            continue;
        };
        if epoch >= EPOCH_MAX {
            return Err(RemoteError::unreadable(
                &epoch_key_named(&name),
                format!(
                    "epoch {epoch} is no writer's: writers take epochs one above the highest, \
                     and none reaches {EPOCH_MAX}; the marker is junk (remove the object)"
                ),
            ));
        }
        highest = highest.max(Some(epoch));
    }
    Ok(highest)
}

fn identity_bytes(identity: &[u8; 16]) -> Vec<u8> {
    format!("{IDENTITY_PREFIX}{}\n", hex(identity)).into_bytes()
}

pub(crate) fn parse_identity(bytes: &[u8]) -> Option<[u8; 16]> {
    let text = std::str::from_utf8(bytes).ok()?;
    let digits = text.strip_prefix(IDENTITY_PREFIX)?.strip_suffix('\n')?;
    if digits.len() != 32 {
        return None;
    }
    let mut out = [0u8; 16];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(digits.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// 128 bits that differ between stores: the standard library's randomly keyed hasher, fed the
/// time and the process id, twice.
fn new_identity() -> [u8; 16] {
    use std::hash::{BuildHasher, Hasher};
    let mut out = [0u8; 16];
    for (i, half) in out.chunks_mut(8).enumerate() {
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_usize(i);
        hasher.write_u32(std::process::id());
        if let Ok(t) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
            hasher.write_u128(t.as_nanos());
        }
        half.copy_from_slice(&hasher.finish().to_le_bytes());
    }
    out
}
