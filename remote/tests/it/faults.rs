//! #17's faults, over a simulated object store (`FaultStore`: object_store's `InMemory` with a
//! put that fails before it lands, lands but loses its acknowledgement, or lands torn, at a
//! chosen put): an upload interrupted at every put of a run, a writer that crashes at every put
//! (and between its seal and its first upload), two writers racing at every put of the older
//! one's publish, and a replica reading while the writer compacts and retires. Each test
//! counts its cases and asserts the counts, so a loop that stopped early fails.
//!
//! After every fault the bucket is checked as a replica sees it: it boots to a state that
//! answers exactly as the writer did there, or (only after a torn put, which object_store's
//! backends promise never happens) refuses with an error naming the object; never a claim
//! before its data, never a wrong answer.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use strata_engine::Store;
use strata_remote::{Publisher, RemoteConfig, RemoteError, Replica};

use strata_engine::Config;

use crate::fault_store::{Fault, FaultStore};
use crate::support::{TRACKS, copy_dir, decl, rows, same_answers};

/// Compaction merges past two live segments, so a short script compacts.
fn config() -> Config {
    crate::support::config()
        .compact_inputs_min(2)
        .compact_files_max(2)
}

/// What a writer does, one step at a time: local steps touch only its directory, `Publish`
/// and `Attach` the bucket.
#[derive(Clone, Copy, Debug)]
enum Op {
    Attach,
    /// Rows for every track, then a seal.
    Barrier,
    CompactStep,
    /// A manifest rewrite: the next publish is a reset.
    Checkpoint,
    Publish,
}

/// Four barriers, compaction steps, a manifest rewrite, each followed by a publish.
const SCRIPT: [Op; 18] = [
    Op::Attach,
    Op::Barrier,
    Op::Publish,
    Op::Barrier,
    Op::Publish,
    Op::Barrier,
    Op::Publish,
    Op::CompactStep,
    Op::Publish,
    Op::CompactStep,
    Op::Publish,
    Op::Checkpoint,
    Op::Publish,
    Op::Barrier,
    Op::Publish,
    Op::CompactStep,
    Op::Publish,
    Op::Publish,
];

const PER: u64 = 40;

/// How a writer meets a failed request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Recovery {
    /// It publishes (or attaches) again.
    Retry,
    /// It crashes: the store and the publisher are dropped, the store opened again from its
    /// directory, a new publisher attached, and the publish done again.
    Crash,
}

/// What the bucket looked like to a replica each time a request failed.
#[derive(Default, Debug)]
struct Seen {
    failures: u64,
    /// A replica booted and answered as the writer did.
    booted: u64,
    /// Nothing was published yet.
    empty: u64,
    /// A torn object was refused, naming it.
    refused: u64,
    compacted: u64,
}

struct Writer {
    dir: tempfile::TempDir,
    store: Option<Store>,
    publisher: Option<Publisher>,
    objects: Arc<FaultStore>,
    at: u64,
}

impl Writer {
    fn new(objects: &Arc<FaultStore>) -> Writer {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::create(dir.path(), config(), &[decl()]).unwrap();
        Writer {
            dir,
            store: Some(store),
            publisher: None,
            objects: Arc::clone(objects),
            at: 0,
        }
    }

    fn store(&mut self) -> &mut Store {
        self.store.as_mut().expect("a store")
    }

    fn crash(&mut self) {
        self.publisher = None;
        self.store = None;
        self.store = Some(Store::open(self.dir.path(), config(), &[decl()]).unwrap());
    }

    /// Runs `script`, meeting every failure as `recovery` says, checking the bucket through
    /// a replica after each.
    fn run(&mut self, script: &[Op], recovery: Recovery, fault: Option<Fault>) -> Seen {
        let mut seen = Seen::default();
        for &op in script {
            match op {
                Op::Barrier => {
                    let at = self.at;
                    for track in TRACKS {
                        self.store()
                            .publish("probe", at / PER + 1, &rows(track, at, PER))
                            .unwrap();
                    }
                    self.at += PER;
                    self.store().seal().unwrap();
                }
                Op::CompactStep => {
                    if self.store().compact_step().unwrap().is_some() {
                        seen.compacted += 1;
                    }
                }
                Op::Checkpoint => {
                    self.store().checkpoint().unwrap();
                }
                Op::Attach | Op::Publish => loop {
                    let Err(error) = self.attach_and(op) else {
                        break;
                    };
                    seen.failures += 1;
                    assert!(
                        seen.failures <= 3,
                        "{fault:?}: the request failed {} times; last: {error}",
                        seen.failures
                    );
                    assert!(
                        !matches!(
                            error,
                            RemoteError::Fenced { .. } | RemoteError::Diverged { .. }
                        ),
                        "{fault:?}: one writer alone was refused: {error}"
                    );
                    self.check_bucket(fault, &mut seen);
                    if recovery == Recovery::Crash {
                        self.crash();
                    }
                },
            }
        }
        seen
    }

    /// Attaches a publisher if there is none (the first time, or after a crash), then
    /// publishes if `op` says so.
    fn attach_and(&mut self, op: Op) -> Result<(), RemoteError> {
        let store = self.store.as_ref().unwrap();
        if self.publisher.is_none() {
            let publisher =
                Publisher::attach(store, self.objects.bucket(), RemoteConfig::default())?;
            self.publisher = Some(publisher);
        }
        if matches!(op, Op::Publish) {
            self.publisher.as_mut().unwrap().publish(store)?;
        }
        Ok(())
    }

    /// Boots a replica over the bucket as it is: it answers as the writer does, or nothing
    /// was published yet, or (after a torn put only) it refuses naming the torn object.
    fn check_bucket(&self, fault: Option<Fault>, seen: &mut Seen) {
        let store = self.store.as_ref().unwrap();
        match Replica::open(self.objects.bucket(), config(), RemoteConfig::default()) {
            Ok(replica) => {
                same_answers(store, replica.store());
                seen.booted += 1;
            }
            Err(RemoteError::Missing { key }) => {
                assert!(
                    key.contains("identity") || key.ends_with("log/ (nothing was published yet)"),
                    "{fault:?}: a replica found an object missing that a record claims: {key}"
                );
                seen.empty += 1;
            }
            Err(RemoteError::Unreadable { key, reason }) if fault == Some(Fault::Torn) => {
                assert!(
                    key.contains("identity") || key.contains("log/"),
                    "{fault:?}: a replica refused {key} ({reason})"
                );
                seen.refused += 1;
            }
            Err(other) => panic!("{fault:?}: a replica of the bucket failed: {other}"),
        }
    }

    /// A replica of the bucket holds every row this writer wrote and answers as it does.
    fn assert_replica_complete(&self, what: &str) {
        let replica =
            Replica::open(self.objects.bucket(), config(), RemoteConfig::default()).unwrap();
        let compared = same_answers(self.store.as_ref().unwrap(), replica.store());
        assert_eq!(compared as u64, 3 * self.at, "{what}: rows on the replica");
    }
}

/// The puts a clean run of `script` makes.
fn clean_puts(script: &[Op]) -> u64 {
    let objects = FaultStore::new();
    let mut writer = Writer::new(&objects);
    let seen = writer.run(script, Recovery::Retry, None);
    assert_eq!(seen.failures, 0);
    assert!(seen.compacted >= 2, "the script compacts ({seen:?})");
    writer.assert_replica_complete("clean run");
    objects.puts()
}

fn every_put(recovery: Recovery) {
    let puts = clean_puts(&SCRIPT);
    assert!(
        puts >= 12,
        "the script puts identity, epoch, segments and log objects ({puts})"
    );
    let mut cases = 0;
    let mut total = Seen::default();
    for fault in [Fault::FailBefore, Fault::LostAck, Fault::Torn] {
        for k in 1..=puts {
            let objects = FaultStore::new();
            objects.arm(k, fault);
            let mut writer = Writer::new(&objects);
            let seen = writer.run(&SCRIPT, recovery, Some(fault));
            assert_eq!(objects.fired(), 1, "{fault:?} at put {k} struck");
            assert!(seen.failures >= 1, "{fault:?} at put {k} was reported");
            writer.assert_replica_complete(&format!("{recovery:?} after {fault:?} at put {k}"));
            cases += 1;
            total.failures += seen.failures;
            total.booted += seen.booted;
            total.empty += seen.empty;
            total.refused += seen.refused;
            total.compacted += seen.compacted;
        }
    }
    assert_eq!(cases, 3 * puts);
    eprintln!("{recovery:?}: {puts} puts × 3 faults = {cases} cases; {total:?}");
    assert_eq!(
        total.booted + total.empty + total.refused,
        total.failures,
        "every failure's bucket was checked"
    );
    assert!(
        total.booted > total.empty + total.refused,
        "most failures left a bucket a replica boots from ({total:?})"
    );
    assert!(
        total.refused > 0,
        "some torn put was refused by a replica ({total:?})"
    );
}

/// An upload interrupted at every put of a run (failed, landed unacknowledged, torn), the
/// writer publishing again: after each failure the bucket is a state a replica boots from
/// and answers as the writer did; at the end the replica holds every row.
#[test]
fn an_upload_interrupted_at_every_put_loses_nothing() {
    every_put(Recovery::Retry);
}

/// A writer that crashes at every put of a run (and opens its store again, attaches a new
/// publisher and goes on) loses nothing, and never leaves a claim before its data.
#[test]
fn a_writer_crashing_at_every_put_loses_nothing() {
    every_put(Recovery::Crash);
}

/// A writer that crashes after its seal made a barrier durable and before any of it was
/// uploaded publishes it when it comes back: the local store is the upload's source of truth.
#[test]
fn a_writer_crashing_between_its_seal_and_its_upload_publishes_on_return() {
    let objects = FaultStore::new();
    let mut writer = Writer::new(&objects);
    writer.run(&SCRIPT[..5], Recovery::Retry, None);
    let before = objects.puts();
    writer.run(&[Op::Barrier], Recovery::Retry, None);
    assert_eq!(objects.puts(), before, "a seal puts nothing");
    writer.crash();
    let replica = Replica::open(objects.bucket(), config(), RemoteConfig::default()).unwrap();
    let compared = same_answers(writer.store.as_ref().unwrap(), replica.store());
    assert_eq!(
        compared as u64,
        3 * (writer.at - PER),
        "the bucket lacks the last barrier"
    );
    let seen = writer.run(&[Op::Publish], Recovery::Retry, None);
    assert_eq!(seen.failures, 0);
    writer.assert_replica_complete("after the crash");
}

/// Stages rows `from..from + PER` of every track at `position`, and seals.
fn barrier(store: &mut Store, position: u64, from: u64) {
    for track in TRACKS {
        store
            .publish("probe", position, &rows(track, from, PER))
            .unwrap();
    }
    store.seal().unwrap();
}

/// Who won a race for the bucket.
#[derive(Debug, PartialEq, Eq)]
enum Winner {
    /// A published, then B attached: B's history no longer follows the bucket's.
    A,
    /// B attached and published before A's put: A is fenced.
    B,
}

/// Writer A publishes its second barrier; writer B (a copy of A's directory taken after the
/// first, with a second barrier of its own) attaches and publishes just before A's `k`-th put
/// of that publish (or after it, when A makes fewer puts). Returns A's puts and the winner.
fn race(k: Option<u64>) -> (u64, Winner) {
    let objects = FaultStore::new();
    let dir_a = tempfile::tempdir().unwrap();
    let mut a = Store::create(dir_a.path(), config(), &[decl()]).unwrap();
    let mut pa = Publisher::attach(&a, objects.bucket(), RemoteConfig::default()).unwrap();
    barrier(&mut a, 1, 0);
    pa.publish(&a).unwrap();
    let dir_b = tempfile::tempdir().unwrap();
    copy_dir(dir_a.path(), dir_b.path());
    let mut b = Store::open(dir_b.path(), config(), &[decl()]).unwrap();
    // A's publish uploads two segments, then its log object.
    barrier(&mut a, 2, PER);
    barrier(&mut a, 3, 2 * PER);
    barrier(&mut b, 2, 10 * PER);

    let b = Arc::new(Mutex::new(Some(b)));
    let b_result: Arc<Mutex<Option<Result<(), RemoteError>>>> = Arc::default();
    let hook = {
        let (b, b_result, objects) = (Arc::clone(&b), Arc::clone(&b_result), Arc::clone(&objects));
        move || {
            let store = b.lock().unwrap().take().unwrap();
            let result = Publisher::attach(&store, objects.bucket(), RemoteConfig::default())
                .and_then(|mut pb| pb.publish(&store).map(|_| ()));
            *b_result.lock().unwrap() = Some(result);
            *b.lock().unwrap() = Some(store);
        }
    };
    let before = objects.puts();
    let Some(k) = k else {
        pa.publish(&a).unwrap();
        return (objects.puts() - before, Winner::A);
    };
    objects.before_put(k, Box::new(hook.clone()));
    let a_result = pa.publish(&a);
    objects.disarm();
    let b_ran = b_result.lock().unwrap().is_some();
    if !b_ran {
        hook();
    }
    let b_result = b_result.lock().unwrap().take().unwrap();
    let b = b.lock().unwrap().take().unwrap();
    let replica = Replica::open(objects.bucket(), config(), RemoteConfig::default()).unwrap();
    let seg_refusal =
        |e: &RemoteError| matches!(e, RemoteError::Unreadable { key, .. } if key.contains("seg/"));
    let winner = match (&a_result, &b_result) {
        // B went first: A finds B's log object (or B's segment under its own segment's name).
        (Err(RemoteError::Fenced { .. }), Ok(())) => Winner::B,
        (Err(e), Ok(())) if b_ran && seg_refusal(e) => Winner::B,
        // B went between A's segment and A's log object: B finds A's segment and stops; A's
        // log object claims it.
        (Ok(_), Err(e)) if b_ran && seg_refusal(e) => Winner::A,
        // B came after A: its history no longer follows the bucket's.
        (Ok(_), Err(RemoteError::Diverged { .. })) if !b_ran => Winner::A,
        other => panic!("put {k}: not one winner: {other:?}"),
    };
    if b_ran {
        // B's attach took a newer epoch: A publishes no more, won or lost.
        let again = pa.publish(&a).unwrap_err();
        assert!(
            matches!(again, RemoteError::Fenced { .. }),
            "put {k}: A publishes again: {again}"
        );
    }
    let (compared, rows) = match winner {
        Winner::A => (same_answers(&a, replica.store()), 3 * 3 * PER),
        Winner::B => (same_answers(&b, replica.store()), 3 * 2 * PER),
    };
    assert_eq!(compared as u64, rows, "put {k}: the bucket is {winner:?}'s");
    (0, winner)
}

/// Two writers of one store race for the bucket at every put of the older one's publish, and
/// once after it: exactly one history is in the bucket, the other writer is refused (fenced,
/// or diverged if it came second), and a replica answers as the winner.
#[test]
fn two_writers_racing_at_every_put_leave_one_history() {
    let (puts, _) = race(None);
    assert!(
        puts >= 3,
        "A's publish puts two segments and a log object ({puts})"
    );
    let mut wins = (0, 0);
    for k in 1..=puts + 1 {
        match race(Some(k)) {
            (_, Winner::A) => wins.0 += 1,
            (_, Winner::B) => wins.1 += 1,
        }
    }
    eprintln!(
        "race: {} cases; A won {}, B won {}",
        puts + 1,
        wins.0,
        wins.1
    );
    assert_eq!(wins.0 + wins.1, puts + 1);
    assert!(
        wins.1 >= 1,
        "B, entering first, wins at least the race at A's first put"
    );
}

/// What an old replica's reads met while the writer compacted, rewrote its manifest and
/// collected under `grace`.
#[derive(Debug, Default)]
struct Reads {
    answered: u64,
    refused: u64,
    deleted: usize,
}

fn reads_while_retiring(grace: Duration) -> Reads {
    let (objects, bucket) = crate::support::memory_bucket();
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::create(dir.path(), config(), &[decl()]).unwrap();
    let remote = RemoteConfig::default().grace(grace);
    let mut publisher = Publisher::attach(&store, bucket, remote).unwrap();
    for b in 0..6 {
        barrier(&mut store, b + 1, b * PER);
        publisher.publish(&store).unwrap();
    }
    // A replica with no cache and one open segment: every read goes to the bucket.
    let mut replica = Replica::open(
        crate::support::same_bucket(&objects),
        config().open_segments_max(1),
        RemoteConfig::default().cache_bytes(0),
    )
    .unwrap();
    assert_eq!(same_answers(&store, replica.store()) as u64, 3 * 6 * PER);
    let segments = |objects: &Arc<dyn ObjectStore>| {
        use futures_util::StreamExt;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let prefix = Path::from("store-1/seg");
        runtime.block_on(objects.list(Some(&prefix)).count())
    };
    let uploaded = segments(&objects);
    let mut steps = 0;
    while store.compact_step().unwrap().is_some() {
        publisher.publish(&store).unwrap();
        steps += 1;
    }
    assert!(steps > 0, "compaction merged the barriers' segments");
    store.checkpoint().unwrap();
    publisher.publish(&store).unwrap();
    publisher.collect().unwrap();
    let mut reads = Reads {
        deleted: uploaded.saturating_sub(segments(&objects)),
        ..Reads::default()
    };
    // The replica, not polled, still reads the state it booted on: every answer is the
    // writer's (compaction changes no answer) or an error naming a deleted object.
    for round in 0..3 {
        for track in TRACKS {
            let sel = &track[..];
            let t_max = 3 * (6 * PER - 1);
            let answers = [
                (
                    replica
                        .store()
                        .query("probe", sel, ..)
                        .map(|r| format!("{r:?}")),
                    store.query("probe", sel, ..).map(|r| format!("{r:?}")),
                ),
                (
                    replica
                        .store()
                        .survey("probe", sel, 0..=t_max, 64)
                        .map(|r| format!("{r:?}")),
                    store
                        .survey("probe", sel, 0..=t_max, 64)
                        .map(|r| format!("{r:?}")),
                ),
                (
                    replica
                        .store()
                        .fold("probe", sel, 0..=t_max / 2, strata_engine::Aggregate::p(90))
                        .map(|r| format!("{r:?}")),
                    store
                        .fold("probe", sel, 0..=t_max / 2, strata_engine::Aggregate::p(90))
                        .map(|r| format!("{r:?}")),
                ),
            ];
            for (theirs, ours) in answers {
                let ours = ours.expect("the writer answers");
                match theirs {
                    Ok(theirs) => {
                        assert_eq!(theirs, ours, "round {round}, {track:?}: a wrong answer");
                        reads.answered += 1;
                    }
                    Err(e) => {
                        assert!(
                            e.to_string().contains("seg/"),
                            "round {round}, {track:?}: an error that names no object: {e}"
                        );
                        reads.refused += 1;
                    }
                }
            }
        }
    }
    // A poll moves it to the bucket's newest state, which answers everything.
    assert!(replica.poll().unwrap());
    assert_eq!(same_answers(&store, replica.store()) as u64, 3 * 6 * PER);
    reads
}

/// A replica reading while the writer compacts, retires and collects: with a grace period
/// longer than the replica's reads, every read of its old state answers as the writer does;
/// with none, reads of deleted segments fail naming the object, never answer wrongly, and a
/// poll puts the replica right.
#[test]
fn a_replica_reading_while_the_writer_retires_is_never_wrong() {
    let kept = reads_while_retiring(Duration::from_secs(3600));
    eprintln!("grace 1 h: {kept:?}");
    assert_eq!(
        kept.deleted, 0,
        "nothing is deleted within the grace period"
    );
    assert_eq!((kept.answered, kept.refused), (27, 0));
    let gone = reads_while_retiring(Duration::ZERO);
    eprintln!("grace 0: {gone:?}");
    assert!(
        gone.deleted > 0,
        "retired segments are deleted once the grace is over"
    );
    assert_eq!(gone.answered + gone.refused, 27);
    assert!(
        gone.refused > 0,
        "reads of deleted segments fail ({gone:?})"
    );
}

/// A whole `log/` object that does not decode (here a copy of `log/0` put at `log/1`: its
/// checksum holds, its sequence does not) is refused naming it, by a writer and a replica
/// alike, and never removed: only a torn object, which no reader can have used, is.
#[test]
fn a_whole_log_object_that_does_not_decode_is_refused_not_removed() {
    let (objects, bucket) = crate::support::memory_bucket();
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::create(dir.path(), config(), &[decl()]).unwrap();
    let mut publisher = Publisher::attach(&store, bucket, RemoteConfig::default()).unwrap();
    barrier(&mut store, 1, 0);
    publisher.publish(&store).unwrap();
    drop(publisher);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let first = Path::from("store-1/log/00000000000000000000");
    let copy = Path::from("store-1/log/00000000000000000001");
    runtime.block_on(async {
        let bytes = objects.get(&first).await.unwrap().bytes().await.unwrap();
        objects.put(&copy, bytes.into()).await.unwrap();
    });
    let refused = Publisher::attach(
        &store,
        crate::support::same_bucket(&objects),
        RemoteConfig::default(),
    )
    .unwrap_err();
    assert!(
        matches!(&refused, RemoteError::Unreadable { key, .. } if key.ends_with("log/00000000000000000001")),
        "{refused}"
    );
    let replica = Replica::open(
        crate::support::same_bucket(&objects),
        config(),
        RemoteConfig::default(),
    )
    .unwrap_err();
    assert!(
        replica.to_string().contains("log/00000000000000000001"),
        "{replica}"
    );
    runtime.block_on(async {
        objects.head(&copy).await.expect("the object is kept");
    });
}

/// The objects under `store-1/dir`.
fn objects_under(objects: &Arc<dyn ObjectStore>, dir: &str) -> usize {
    use futures_util::StreamExt;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let prefix = Path::from(format!("store-1/{dir}"));
    runtime.block_on(objects.list(Some(&prefix)).count())
}

/// A writer that lives for seconds, as a command does, still deletes what an earlier writer
/// retired more than the grace period ago, and nothing retired within it: the grace is counted
/// by the object store's own clock, from the newest `log/` object.
#[test]
fn a_short_lived_writer_collects_what_was_retired_a_grace_ago() {
    let grace = Duration::from_millis(1500);
    let remote = RemoteConfig::default().grace(grace);
    let (objects, bucket) = crate::support::memory_bucket();
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::create(dir.path(), config(), &[decl()]).unwrap();
    let mut publisher = Publisher::attach(&store, bucket, remote.clone()).unwrap();
    for b in 0..4 {
        barrier(&mut store, b + 1, b * PER);
        publisher.publish(&store).unwrap();
    }
    while store.compact_step().unwrap().is_some() {
        publisher.publish(&store).unwrap();
    }
    store.checkpoint().unwrap();
    assert!(publisher.publish(&store).unwrap().reset);
    drop(publisher);
    let live = store.catalog().live_files().count();
    let (segments, logs) = (
        objects_under(&objects, "seg"),
        objects_under(&objects, "log"),
    );
    assert!(
        segments > live && logs > 1,
        "{segments} segments, {logs} logs"
    );

    // Within the grace: a new writer deletes nothing.
    let attach = || {
        Publisher::attach(
            &store,
            crate::support::same_bucket(&objects),
            remote.clone(),
        )
        .unwrap()
    };
    let collected = attach().collect().unwrap();
    assert_eq!((collected.segments, collected.logs), (0, 0));
    assert_eq!(objects_under(&objects, "seg"), segments);

    std::thread::sleep(grace + Duration::from_millis(300));
    let collected = attach().collect().unwrap();
    assert_eq!(collected.segments, segments - live, "every retired segment");
    assert_eq!(
        collected.logs,
        logs - 1,
        "every log/ object below the reset"
    );
    assert_eq!(objects_under(&objects, "seg"), live);
    assert_eq!(objects_under(&objects, "log"), 1);
    let replica = Replica::open(
        crate::support::same_bucket(&objects),
        config(),
        RemoteConfig::default(),
    )
    .unwrap();
    assert_eq!(same_answers(&store, replica.store()) as u64, 3 * 4 * PER);
}

/// A segment uploaded by a publish whose `log/` put failed, and claimed by the next writer's
/// publish, starts its grace only when it is retired: a writer that found it unclaimed (and
/// old) at attach must not delete it as soon as a compaction retires it.
#[test]
fn a_segment_claimed_again_waits_a_whole_grace_after_its_retirement() {
    let grace = Duration::from_millis(1500);
    let remote = RemoteConfig::default().grace(grace);
    let objects = FaultStore::new();
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::create(dir.path(), config(), &[decl()]).unwrap();
    let mut publisher = Publisher::attach(&store, objects.bucket(), remote.clone()).unwrap();
    barrier(&mut store, 1, 0);
    publisher.publish(&store).unwrap();
    barrier(&mut store, 2, PER);
    // The segment lands; the log/ object that would claim it does not.
    objects.arm(2, Fault::FailBefore);
    publisher.publish(&store).unwrap_err();
    drop(publisher);
    std::thread::sleep(grace + Duration::from_millis(300));
    // A new writer finds the upload unclaimed and older than the grace, then claims it.
    let mut publisher = Publisher::attach(&store, objects.bucket(), remote).unwrap();
    let published = publisher.publish(&store).unwrap();
    assert_eq!(published.already_there, 1, "{published:?}");
    let mut steps = 0;
    while store.compact_step().unwrap().is_some() {
        publisher.publish(&store).unwrap();
        steps += 1;
    }
    assert!(steps > 0);
    let collected = publisher.collect().unwrap();
    assert_eq!(
        collected.segments, 0,
        "a segment retired just now waits its grace out"
    );
    std::thread::sleep(grace + Duration::from_millis(100));
    assert_eq!(publisher.collect().unwrap().segments, 2, "then both go");
}
