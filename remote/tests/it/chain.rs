//! #28: the bucket's history is a chain, and no store whose history does not pass through the
//! bucket's head extends it, whatever its generation or epoch.
//!
//! A writer publishes a script of barriers, compaction steps and a manifest rewrite. Just before
//! each of its puts, an interloper attempts to publish to the same bucket (and to collect, with
//! no grace at all, so that a mistaken acceptance would delete the writer's objects at once):
//! - a **stale copy**: the writer's folder copied a publish ago, with a barrier of its own;
//! - a **restored older copy with a higher generation**: the same copy, compacted and
//!   rewritten (barriers of its own between) until its manifest generation passes the bucket's;
//! - a **repaired copy**: the writer's folder copied at that put, a byte flipped in a frame of
//!   its manifest the bucket already holds, repaired (`engine-fsck repair`), with a barrier;
//! - a **second store with the same identity**: a store of its own, given the writer's
//!   `remote-identity` file.
//!
//! Each must be refused naming the bucket's head (`log/S`) and why, having put and deleted
//! nothing; the writer then goes on unfenced; a replica booted after the attempt answers as
//! the writer did at a state it acknowledged; and at the end the replica holds every row.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use object_store::ObjectStore;
use object_store::path::Path;
use strata_engine::{Config, Store};
use strata_remote::{Publisher, RemoteConfig, RemoteError, Replica};
use strata_segment::vfs::RealFs;

use crate::fault_store::FaultStore;
use crate::support::{TRACKS, copy_dir, decl, rows, same_answers};

const PER: u64 = 40;

/// Compaction merges past two live segments, so a short script compacts.
fn config() -> Config {
    crate::support::config()
        .compact_inputs_min(2)
        .compact_files_max(2)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Interloper {
    StaleCopy,
    RestoredOlder,
    Repaired,
    SameIdentity,
}

const INTERLOPERS: [Interloper; 4] = [
    Interloper::StaleCopy,
    Interloper::RestoredOlder,
    Interloper::Repaired,
    Interloper::SameIdentity,
];

#[derive(Clone, Copy, Debug)]
enum Op {
    Barrier,
    CompactStep,
    Checkpoint,
    Publish,
}

/// What the writer does once the interlopers' copies are taken: barriers, compaction, a
/// manifest rewrite (so its generation rises), each published.
const SCRIPT: [Op; 12] = [
    Op::Barrier,
    Op::Publish,
    Op::Barrier,
    Op::Publish,
    Op::CompactStep,
    Op::CompactStep,
    Op::Publish,
    Op::Checkpoint,
    Op::Publish,
    Op::Barrier,
    Op::CompactStep,
    Op::Publish,
];

/// Stages `PER` rows of every track from axis step `from` at `position`, and seals.
fn barrier(store: &mut Store, position: u64, from: u64) {
    for track in TRACKS {
        store
            .publish("probe", position, &rows(track, from, PER))
            .unwrap();
    }
    store.seal().unwrap();
}

/// A writer over a fresh bucket that has published one barrier: the bucket, the store's
/// folder, the store and its publisher.
fn published_writer() -> (Arc<FaultStore>, tempfile::TempDir, Store, Publisher) {
    let objects = FaultStore::new();
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::create(dir.path(), config(), &[decl()]).unwrap();
    let mut publisher =
        Publisher::attach(&store, objects.bucket(), RemoteConfig::default()).unwrap();
    barrier(&mut store, 1, 0);
    publisher.publish(&store).unwrap();
    (objects, dir, store, publisher)
}

/// Every key in the bucket, sorted.
fn keys(objects: &Arc<FaultStore>) -> Vec<String> {
    use futures_util::TryStreamExt;
    let metas: Vec<object_store::ObjectMeta> = block_on(
        raw(objects)
            .list(Some(&Path::from("store-1")))
            .try_collect(),
    )
    .unwrap();
    let mut keys: Vec<String> = metas.into_iter().map(|m| m.location.to_string()).collect();
    keys.sort();
    keys
}

/// Runs `future` to its end on a runtime of its own (the test's threads have none).
fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(future)
}

fn raw(objects: &Arc<FaultStore>) -> Arc<dyn ObjectStore> {
    Arc::clone(objects) as Arc<dyn ObjectStore>
}

fn futures_get(objects: &Arc<FaultStore>, key: &str) -> Vec<u8> {
    use object_store::ObjectStoreExt;
    block_on(async {
        let got = raw(objects).get(&Path::from(key)).await.unwrap();
        got.bytes().await.unwrap().to_vec()
    })
}

fn futures_put(objects: &Arc<FaultStore>, key: &str, bytes: Vec<u8>) {
    use object_store::ObjectStoreExt;
    block_on(raw(objects).put(&Path::from(key), bytes.into())).unwrap();
}

fn futures_delete(objects: &Arc<FaultStore>, key: &str) {
    use object_store::ObjectStoreExt;
    block_on(raw(objects).delete(&Path::from(key))).unwrap();
}

/// The manifest generation of the store in `dir`.
fn generation(dir: &std::path::Path) -> u32 {
    manifest_path(dir).file_name().unwrap().to_string_lossy()["manifest-".len()..]
        .parse()
        .unwrap()
}

/// The manifest's only generation in `dir`, and its path.
fn manifest_path(dir: &std::path::Path) -> std::path::PathBuf {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("manifest-"))
        })
        .unwrap()
}

/// Flips a byte in the middle of a frame of `dir`'s manifest that starts before byte `before`
/// (a frame the bucket already holds), so that a repair must cut history the bucket has.
fn damage_a_published_frame(dir: &std::path::Path, before: u64) {
    let path = manifest_path(dir);
    let mut bytes = std::fs::read(&path).unwrap();
    let mut starts = Vec::new();
    let mut at = strata_index::LOG_HEADER_LEN;
    while at < bytes.len() && (at as u64) < before {
        starts.push(at);
        at += strata_index::decode_frame(&bytes[at..]).unwrap().1;
    }
    let start = starts[starts.len() / 2];
    let len = u32::from_le_bytes(bytes[start..start + 4].try_into().unwrap()) as usize;
    bytes[start + 8 + len / 2] ^= 0x40;
    std::fs::write(&path, bytes).unwrap();
}

/// Builds interloper `kind` in a folder of its own. `old` is the writer's folder as it was a
/// publish ago, `now` as it is; `head_end` where the bucket's head ends in the writer's
/// manifest; `generation` the bucket head's manifest generation.
fn build(
    kind: Interloper,
    old: &std::path::Path,
    now: &std::path::Path,
    head_end: u64,
    head_generation: u32,
) -> (tempfile::TempDir, Store) {
    let generation = head_generation;
    let dir = tempfile::tempdir().unwrap();
    let mut position = 10_000;
    let store = match kind {
        Interloper::StaleCopy => {
            copy_dir(old, dir.path());
            let mut store = Store::open(dir.path(), config(), &[decl()]).unwrap();
            barrier(&mut store, position, 50 * PER);
            store
        }
        Interloper::RestoredOlder => {
            copy_dir(old, dir.path());
            let mut store = Store::open(dir.path(), config(), &[decl()]).unwrap();
            let mut rounds = 0;
            while self::generation(dir.path()) <= generation {
                for _ in 0..3 {
                    position += 1;
                    barrier(&mut store, position, (position - 9_950) * PER);
                }
                while store.compact_step().unwrap().is_some() {}
                store.checkpoint().unwrap();
                rounds += 1;
                assert!(rounds < 20, "the copy's generation rises");
            }
            store
        }
        Interloper::Repaired => {
            copy_dir(now, dir.path());
            damage_a_published_frame(dir.path(), head_end);
            let vfs = RealFs::open(dir.path()).unwrap();
            // A damaged frame with good frames after it needs the operator's repair; one at the
            // end is a torn tail that boot cuts itself. Either way history the bucket holds is
            // gone from the store.
            let _ = strata_recover::repair(&vfs);
            let mut store = Store::open(dir.path(), config(), &[decl()]).unwrap();
            barrier(&mut store, position, 50 * PER);
            store
        }
        Interloper::SameIdentity => {
            let mut store = Store::create(dir.path(), config(), &[decl()]).unwrap();
            barrier(&mut store, 1, 70 * PER);
            barrier(&mut store, 2, 80 * PER);
            std::fs::copy(
                now.join(strata_remote::IDENTITY_FILE),
                dir.path().join(strata_remote::IDENTITY_FILE),
            )
            .unwrap();
            store
        }
    };
    (dir, store)
}

/// What one case saw.
#[derive(Debug, Default)]
struct Tally {
    cases: u64,
    refused: u64,
    replica_checks: u64,
    /// Refusals by the reason's kind: another history in the same generation, or the head is
    /// not a state of the interloper's history across generations.
    same_generation: u64,
    across_generations: u64,
}

/// The writer's script with `kind` attempting just before its `k`-th put (counted from the
/// script's start); `None` runs it clean and answers the puts it made.
fn run(kind: Interloper, k: Option<u64>, tally: &mut Tally) -> u64 {
    let (objects, dir, mut writer, mut publisher) = published_writer();
    let old = tempfile::tempdir().unwrap();
    copy_dir(dir.path(), old.path());
    barrier(&mut writer, 2, PER);
    publisher.publish(&writer).unwrap();
    let mut at = 2 * PER;
    let mut position = 2;

    let attempt: Arc<Mutex<Option<String>>> = Arc::default();
    let start = objects.puts();
    if let Some(k) = k {
        let (attempt, bucket) = (Arc::clone(&attempt), Arc::clone(&objects));
        let (old, now) = (old.path().to_owned(), dir.path().to_owned());
        let hook = move || {
            let refusal = interlope(kind, k, &bucket, &old, &now);
            *attempt.lock().unwrap() = Some(refusal);
        };
        objects.before_put(k, Box::new(hook));
    }
    let mut checks = 0;
    for op in SCRIPT {
        match op {
            Op::Barrier => {
                position += 1;
                barrier(&mut writer, position, at);
                at += PER;
            }
            Op::CompactStep => {
                writer.compact_step().unwrap();
            }
            Op::Checkpoint => {
                writer.checkpoint().unwrap();
            }
            Op::Publish => {
                // The writer goes on unfenced whatever came before.
                publisher.publish(&writer).unwrap();
            }
        }
        if attempt.lock().unwrap().is_some() && checks == 0 {
            // A replica after the attempt: a state the writer acknowledged.
            let replica =
                Replica::open(objects.bucket(), config(), RemoteConfig::default()).unwrap();
            same_answers(&writer, replica.store());
            checks += 1;
        }
    }
    objects.disarm();
    let replica = Replica::open(objects.bucket(), config(), RemoteConfig::default()).unwrap();
    let compared = same_answers(&writer, replica.store());
    assert_eq!(compared as u64, 3 * at, "the replica holds every row");
    if let Some(k) = k {
        let error = attempt.lock().unwrap().take();
        let Some(error) = error else {
            panic!("{kind:?}: no attempt before put {k}");
        };
        tally.cases += 1;
        tally.refused += 1;
        tally.replica_checks += checks;
        if error.contains("other bytes up to byte")
            || error.contains("no frame of this store's generation")
        {
            tally.same_generation += 1;
        } else {
            tally.across_generations += 1;
        }
    }
    objects.puts() - start
}

/// Interloper `kind` attempts to publish to the bucket and to collect with no grace, just
/// before the writer's put `k`: refused as diverged, naming the head and why, having put and
/// deleted nothing. Answers the refusal.
fn interlope(
    kind: Interloper,
    k: u64,
    objects: &Arc<FaultStore>,
    old: &std::path::Path,
    now: &std::path::Path,
) -> String {
    let replica = Replica::open(objects.bucket(), config(), RemoteConfig::default()).unwrap();
    let head = replica.seq();
    let bucket_head = strata_remote::LogObject::decode(
        &futures_get(objects, &format!("store-1/log/{head:020}")),
        head,
    )
    .unwrap();
    let (dir, store) = build(kind, old, now, bucket_head.end, bucket_head.generation);
    if kind == Interloper::RestoredOlder {
        let generation = generation(dir.path());
        assert!(
            generation > bucket_head.generation,
            "the restored copy's generation {generation} passes the bucket's {}",
            bucket_head.generation
        );
    }
    let before = keys(objects);
    let no_grace = RemoteConfig {
        grace: Duration::ZERO,
        ..RemoteConfig::default()
    };
    let result = Publisher::attach(&store, objects.bucket(), no_grace)
        .and_then(|mut p| p.publish(&store).and_then(|_| p.collect().map(drop)));
    assert_eq!(
        keys(objects),
        before,
        "{kind:?}: the attempt put or deleted nothing"
    );
    let error = match result {
        Err(error @ RemoteError::Diverged { .. }) => error.to_string(),
        other => panic!("{kind:?} before put {k}: not refused as diverged: {other:?}"),
    };
    assert!(
        error.contains(&format!("log/{head}"))
            && error.contains("not a state of this store's history"),
        "{kind:?}: the refusal names the head and why: {error}"
    );
    error
}

/// #28's acceptance: for a writer and, at every one of its puts, each of a stale copy, a
/// restored older copy with a higher generation, a repaired copy and a second store with the
/// same identity attempting to publish (and then the writer going on): every attempt is
/// refused naming the head and the reason, having put and deleted nothing; a replica answers as
/// the writer did; at the end it holds every row.
#[test]
fn no_store_that_does_not_extend_the_head_publishes_or_deletes() {
    let puts = run(Interloper::StaleCopy, None, &mut Tally::default());
    assert!(
        puts >= 8,
        "the script puts segments and log objects ({puts})"
    );
    let mut tally = Tally::default();
    for kind in INTERLOPERS {
        for k in 1..=puts {
            run(kind, Some(k), &mut tally);
        }
    }
    eprintln!(
        "chain: {} puts × {} interlopers = {} cases; {tally:?}",
        puts,
        INTERLOPERS.len(),
        tally.cases
    );
    assert_eq!(tally.cases, puts * INTERLOPERS.len() as u64);
    assert_eq!(tally.refused, tally.cases);
    assert_eq!(tally.replica_checks, tally.cases);
    assert!(
        tally.same_generation > 0 && tally.across_generations > 0,
        "both kinds of refusal are reached ({tally:?})"
    );
}

/// Rewrites `store`'s manifest `times` times, with a barrier and compaction before each.
fn rewrite(store: &mut Store, times: u32, position: &mut u64, at: &mut u64) {
    for _ in 0..times {
        for _ in 0..3 {
            *position += 1;
            barrier(store, *position, *at);
            *at += PER;
        }
        while store.compact_step().unwrap().is_some() {}
        assert!(store.checkpoint().unwrap(), "a rewrite");
    }
}

/// A writer whose manifest was rewritten several times since it last published still extends
/// its head (the lineage holds the head's state); one that went further than
/// `Config::lineage_states_max` keeps is refused naming the bound, and `Publisher::adopt` then
/// puts its history in place, deleting what only the old history holds only after the grace.
#[test]
fn the_lineage_proves_a_head_rewritten_away_and_adopt_takes_over_past_it() {
    for (states_max, extends) in [(16_384, true), (6, false)] {
        let objects = FaultStore::new();
        let dir = tempfile::tempdir().unwrap();
        let config = config().lineage_states_max(states_max);
        let mut store = Store::create(dir.path(), config.clone(), &[decl()]).unwrap();
        let mut publisher =
            Publisher::attach(&store, objects.bucket(), RemoteConfig::default()).unwrap();
        let (mut position, mut at) = (0, 0);
        position += 1;
        barrier(&mut store, position, at);
        at += PER;
        publisher.publish(&store).unwrap();
        drop(publisher);
        rewrite(&mut store, 4, &mut position, &mut at);
        drop(store);
        // A new command: the store opened again, a publisher attached.
        let mut store = Store::open(dir.path(), config.clone(), &[]).unwrap();
        assert!(store.catalog().lineage().len() <= states_max);
        let attached = Publisher::attach(&store, objects.bucket(), RemoteConfig::default());
        if extends {
            let mut publisher = attached.unwrap();
            assert!(publisher.publish(&store).unwrap().reset);
            let replica =
                Replica::open(objects.bucket(), config.clone(), RemoteConfig::default()).unwrap();
            assert_eq!(same_answers(&store, replica.store()) as u64, 3 * at);
            continue;
        }
        let error = attached.unwrap_err();
        let shown = error.to_string();
        assert!(
            matches!(error, RemoteError::Diverged { .. })
                && shown.contains("log/0")
                && shown.contains("Config::lineage_states_max"),
            "{shown}"
        );
        // The bucket's replicas still read the old head.
        let mut old_replica =
            Replica::open(objects.bucket(), config.clone(), RemoteConfig::default()).unwrap();
        assert_eq!(same_answers(&store, old_replica.store()), 3 * PER as usize);
        let plan =
            Publisher::plan_adoption(&store, &objects.bucket(), &RemoteConfig::default()).unwrap();
        assert_eq!(
            (plan.replaces, plan.seq, plan.logs.clone()),
            (Some(0), 1, vec![0])
        );
        assert_eq!(
            plan.segments.len(),
            1,
            "the first barrier's segment, merged since"
        );
        assert!(plan.collisions.is_empty());
        let before = keys(&objects);
        let (mut publisher, adoption) =
            Publisher::adopt(&mut store, objects.bucket(), RemoteConfig::default()).unwrap();
        assert_eq!((adoption.seq, adoption.logs.clone()), (1, vec![0]));
        let after = keys(&objects);
        assert!(
            before.iter().all(|k| after.contains(k)),
            "an adoption deletes nothing"
        );
        // Within the grace a collect deletes nothing either; the old replica reads on.
        let collected = publisher.collect().unwrap();
        assert_eq!((collected.segments, collected.logs), (0, 0));
        assert!(
            keys(&objects)
                .iter()
                .all(|k| !before.contains(k) || after.contains(k))
        );
        assert!(
            old_replica.poll().unwrap(),
            "it follows the adopted history"
        );
        assert_eq!(same_answers(&store, old_replica.store()) as u64, 3 * at);
        // The adopter publishes on, as any writer.
        position += 1;
        barrier(&mut store, position, at);
        at += PER;
        assert!(!publisher.publish(&store).unwrap().reset);
        // Past the grace, what only the old history held goes.
        drop(publisher);
        let no_grace = RemoteConfig {
            grace: Duration::ZERO,
            ..RemoteConfig::default()
        };
        let mut publisher = Publisher::attach(&store, objects.bucket(), no_grace).unwrap();
        let collected = publisher.collect().unwrap();
        assert_eq!(
            (collected.segments, collected.logs),
            (1, 1),
            "{collected:?}"
        );
        let replica = Replica::open(objects.bucket(), config, RemoteConfig::default()).unwrap();
        assert_eq!(same_answers(&store, replica.store()) as u64, 3 * at);
    }
}

/// A reset put without extending the object before it (by a writer that does not check, or
/// by hand) is refused by a replica, naming it, whether the replica boots on it or polls to
/// it; a polling replica keeps serving what it had. The same reset marked adopted is followed.
#[test]
fn a_replica_refuses_a_reset_that_does_not_extend_the_head_unless_adopted() {
    for adopted in [false, true] {
        let (objects, _dir, store, _publisher) = published_writer();
        let mut replica =
            Replica::open(objects.bucket(), config(), RemoteConfig::default()).unwrap();
        // Another history: a store of its own with the same identity, its reset built by hand
        // as a writer that skipped the chain would put it.
        let other = tempfile::tempdir().unwrap();
        let mut forked = Store::create(other.path(), config(), &[decl()]).unwrap();
        barrier(&mut forked, 1, 20 * PER);
        barrier(&mut forked, 2, 21 * PER);
        while forked.compact_step().unwrap().is_some() {}
        forked.checkpoint().unwrap();
        let manifest = std::fs::read(manifest_path(other.path())).unwrap();
        let head = strata_remote::LogObject::decode(
            &futures_get(&objects, "store-1/log/00000000000000000000"),
            0,
        )
        .unwrap();
        for file in forked.catalog().live_files() {
            let name = format!("{:012}.seg", file.name);
            let bytes = std::fs::read(other.path().join("seg").join(&name)).unwrap();
            futures_put(&objects, &format!("store-1/seg/{name}"), bytes);
        }
        let reset = strata_remote::LogObject {
            version: 2,
            identity: head.identity,
            epoch: head.epoch,
            seq: 1,
            reset: 1,
            kind: strata_remote::LogKind::Reset,
            generation: generation(other.path()),
            end: manifest.len() as u64,
            prefix_crc: crc32c::crc32c(&manifest),
            parent: Some(head.digest),
            adopted,
            body: manifest,
            digest: 0,
        };
        futures_put(&objects, "store-1/log/00000000000000000001", reset.encode());
        let booted = Replica::open(objects.bucket(), config(), RemoteConfig::default());
        let polled = replica.poll();
        if adopted {
            booted.unwrap();
            assert!(polled.unwrap(), "an adoption is followed");
            assert_eq!(same_answers(&forked, replica.store()), 3 * 2 * PER as usize);
            continue;
        }
        for (what, error) in [
            ("a boot", booted.map(drop).unwrap_err()),
            ("a poll", polled.map(drop).unwrap_err()),
        ] {
            let shown = error.to_string();
            assert!(
                matches!(error, RemoteError::Unreadable { ref key, .. } if key == "log/00000000000000000001")
                    && shown.contains("does not extend log/00000000000000000000"),
                "{what}: {shown}"
            );
        }
        assert_eq!(
            same_answers(&store, replica.store()),
            3 * PER as usize,
            "the polling replica serves what it had"
        );
    }
}

/// An epoch marker no writer can exceed (`touch epoch/18446744073709551615`) is refused as junk,
/// naming it, instead of wrapping to epoch 0 and fencing every writer for good; removed, the
/// writer attaches one above the highest real epoch.
#[test]
fn an_epoch_marker_no_writer_can_exceed_is_refused_naming_it() {
    let (objects, _dir, store, publisher) = published_writer();
    let real = publisher.epoch();
    drop(publisher);
    // At the bound, past it, and one below it (the next writer would take the bound).
    for junk in [
        u64::MAX,
        strata_remote::EPOCH_MAX,
        strata_remote::EPOCH_MAX - 1,
    ] {
        let key = format!("store-1/epoch/{junk:020}");
        futures_put(&objects, &key, Vec::new());
        let error =
            Publisher::attach(&store, objects.bucket(), RemoteConfig::default()).unwrap_err();
        let shown = error.to_string();
        assert!(
            matches!(error, RemoteError::Unreadable { .. })
                && shown.contains(&format!("epoch/{junk:020}"))
                && shown.contains("junk"),
            "{shown}"
        );
        futures_delete(&objects, &key);
    }
    let publisher = Publisher::attach(&store, objects.bucket(), RemoteConfig::default()).unwrap();
    assert_eq!(publisher.epoch(), real + 1);
}

/// A restored backup adopts the bucket, then publishes on: its name counter is behind the names
/// the old history still holds in the bucket for the grace, so the adoption raises it first
/// (`Store::reserve_names`), and its next barrier's segment never meets an old one of the same
/// name with other bytes.
#[test]
fn a_restored_backup_that_adopts_issues_names_above_the_old_history() {
    let (objects, dir, mut writer, mut publisher) = published_writer();
    let backup = tempfile::tempdir().unwrap();
    copy_dir(dir.path(), backup.path());
    for position in 2..=5 {
        barrier(&mut writer, position, (position - 1) * PER);
        publisher.publish(&writer).unwrap();
    }
    drop((publisher, writer));
    let mut restored = Store::open(backup.path(), config(), &[decl()]).unwrap();
    let refused = Publisher::attach(&restored, objects.bucket(), RemoteConfig::default());
    assert!(
        matches!(refused, Err(RemoteError::Diverged { .. })),
        "{refused:?}"
    );
    let names_before = restored.catalog().next_name();
    let (mut publisher, adoption) =
        Publisher::adopt(&mut restored, objects.bucket(), RemoteConfig::default()).unwrap();
    assert!(adoption.names_above >= names_before, "{adoption:?}");
    assert!(
        restored.catalog().name_high() >= adoption.names_above,
        "the store issues no name the old history holds"
    );
    // The backup goes on: barriers of its own, published, while the old history's segments
    // wait out the grace under their names.
    for position in 2..=4 {
        barrier(&mut restored, position, (position + 20) * PER);
        let published = publisher.publish(&restored).unwrap();
        assert_eq!(published.already_there, 0, "a fresh name every time");
    }
    let replica = Replica::open(objects.bucket(), config(), RemoteConfig::default()).unwrap();
    assert_eq!(
        same_answers(&restored, replica.store()),
        3 * 4 * PER as usize
    );
}
