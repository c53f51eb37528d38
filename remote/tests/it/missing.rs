//! An object deleted from the bucket is put back (#47, item 5). A segment of the bucket's state
//! deleted behind the writer's back (or cut short there) once made every replica read of it
//! fail "… is missing" for good, while publishes said "already up to date". Now each publish
//! lists `seg/` and puts back what the bucket lost, from the local copy checked against its
//! record, or refuses (`RemoteError::Lost`), naming it, when the store holds no whole copy.
//!
//! Each case runs over a `file://` bucket (a folder, as the command line uses it) and over the
//! simulated one (`FaultStore`: `InMemory` counting requests), with a publisher that stayed
//! attached across the deletion (an application) and one that attaches after it (a command).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use object_store::{ObjectStore, ObjectStoreExt};
use strata_engine::{Store, View};
use strata_remote::{Bucket, Published, Publisher, RemoteConfig, RemoteError, Replica};

use crate::fault_store::{FaultStore, Requests};
use crate::support::{TRACKS, config, decl, rows};

/// The object the reproducer deletes: the first barrier's segment, live in every state here.
const FIRST: &str = "seg/000000000001.seg";

/// Where the bucket's objects are: a folder, or the simulated store.
enum Objects {
    Folder(PathBuf),
    Simulated(Arc<FaultStore>),
}

impl Objects {
    fn both(root: &Path) -> [Objects; 2] {
        [
            Objects::Folder(root.join("bucket")),
            Objects::Simulated(FaultStore::new()),
        ]
    }

    fn bucket(&self) -> Bucket {
        match self {
            Objects::Folder(dir) => {
                Bucket::open_url(&format!("file://{}", dir.display()), true).unwrap()
            }
            Objects::Simulated(store) => store.bucket(),
        }
    }

    fn name(&self) -> &'static str {
        match self {
            Objects::Folder(_) => "file:// bucket",
            Objects::Simulated(_) => "simulated bucket",
        }
    }

    /// The object at `key`, `None` if there is none.
    fn get(&self, key: &str) -> Option<Vec<u8>> {
        match self {
            Objects::Folder(dir) => std::fs::read(dir.join(key)).ok(),
            Objects::Simulated(store) => block_on(async {
                let got = store.get(&object(key)).await.ok()?;
                Some(got.bytes().await.unwrap().to_vec())
            }),
        }
    }

    /// Deletes `key` as an operator or a lifecycle rule would: behind the writer's back.
    fn delete(&self, key: &str) {
        match self {
            Objects::Folder(dir) => std::fs::remove_file(dir.join(key)).unwrap(),
            Objects::Simulated(store) => block_on(store.delete(&object(key))).unwrap(),
        }
        assert_eq!(self.get(key), None, "{key} was deleted");
    }

    /// Puts `bytes` at `key`, over whatever is there.
    fn overwrite(&self, key: &str, bytes: &[u8]) {
        match self {
            Objects::Folder(dir) => std::fs::write(dir.join(key), bytes).unwrap(),
            Objects::Simulated(store) => {
                block_on(store.put(&object(key), bytes.to_vec().into())).unwrap();
            }
        }
    }

    /// Every key and its bytes.
    fn all(&self) -> Vec<(String, Vec<u8>)> {
        let keys: Vec<String> = match self {
            Objects::Folder(dir) => walk(dir, dir),
            Objects::Simulated(store) => {
                use futures_util::TryStreamExt;
                let metas: Vec<object_store::ObjectMeta> =
                    block_on(store.list(Some(&object(""))).try_collect()).unwrap();
                metas
                    .into_iter()
                    .map(|m| m.location.as_ref()["store-1/".len()..].to_owned())
                    .collect()
            }
        };
        let mut all: Vec<(String, Vec<u8>)> = keys
            .into_iter()
            .map(|key| {
                let bytes = self.get(&key).unwrap();
                (key, bytes)
            })
            .collect();
        all.sort();
        all
    }
}

/// The simulated store's path of `key` (its buckets live under `store-1`).
fn object(key: &str) -> object_store::path::Path {
    object_store::path::Path::from(format!("store-1/{key}").trim_end_matches('/'))
}

fn walk(root: &Path, dir: &Path) -> Vec<String> {
    let mut keys = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            keys.extend(walk(root, &path));
        } else {
            keys.push(path.strip_prefix(root).unwrap().display().to_string());
        }
    }
    keys
}

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(future)
}

/// Rows per track per barrier.
const PER: u64 = 40;

/// Stages and seals one barrier of `per` rows per track from row index `at`; the next index.
fn barrier(store: &mut Store, at: u64, per: u64) -> u64 {
    for track in TRACKS {
        store
            .publish("probe", at + 1, &rows(track, at, per))
            .unwrap();
    }
    store.seal().unwrap();
    at + per
}

/// A store in `dir` with three barriers of `PER` rows per track, each published to `objects`;
/// the publisher stays attached. Its segments are 1, 2 and 3.
fn published(dir: &Path, objects: &Objects) -> (Store, Publisher, u64) {
    let mut store = Store::create(dir, config(), &[decl()]).unwrap();
    let mut publisher =
        Publisher::attach(&store, objects.bucket(), RemoteConfig::default()).unwrap();
    let mut at = 0;
    for _ in 0..3 {
        at = barrier(&mut store, at, PER);
        publisher.publish(&store).unwrap();
    }
    let live: Vec<u64> = store.catalog().live_files().map(|f| f.name).collect();
    assert_eq!(live, [1, 2, 3], "one segment per barrier, none compacted");
    (store, publisher, at)
}

fn replica(objects: &Objects) -> Replica {
    Replica::open(objects.bucket(), config(), RemoteConfig::default()).unwrap()
}

/// Every row of every track the replica reads, asserting each track's rows equal the writer's.
fn rows_read(writer: &View, replica: &View) -> usize {
    TRACKS
        .iter()
        .map(|track| {
            let theirs = writer.query("probe", &track[..], ..).unwrap();
            let ours = replica.query("probe", &track[..], ..).unwrap();
            assert_eq!(ours, theirs, "{track:?}");
            ours.len()
        })
        .sum()
}

/// The bug as reported: with `FIRST` gone, a replica's read of the first track fails naming it.
fn assert_unreadable(replica: &Replica) {
    let failed = replica
        .store()
        .query("probe", &TRACKS[0][..], ..)
        .unwrap_err();
    let said = failed.to_string();
    assert!(
        said.contains(FIRST) && said.contains("missing"),
        "a read of the deleted segment: {said}"
    );
}

/// A publisher attached before the deletion, publishing on as an application does: its next
/// publish puts the segment back, with nothing new for the log and then with a barrier, and a
/// replica that failed on it reads every row without a new boot.
#[test]
fn a_deleted_segment_is_put_back_by_the_next_publish_of_a_writer_that_stayed_attached() {
    let root = tempfile::tempdir().unwrap();
    for (i, objects) in Objects::both(root.path()).into_iter().enumerate() {
        let name = objects.name();
        let dir = root.path().join(format!("store-{i}"));
        let (mut store, mut publisher, mut at) = published(&dir, &objects);
        let kept = objects.get(FIRST).unwrap();
        assert_eq!(kept, std::fs::read(dir.join(FIRST)).unwrap(), "{name}");

        let started = Instant::now();
        objects.delete(FIRST);
        let reader = replica(&objects);
        assert_unreadable(&reader);
        let again = publisher.publish(&store).unwrap();
        assert_eq!(
            again,
            Published {
                segments: 1,
                bytes: kept.len() as u64,
                restored: vec![1],
                ..Published::default()
            },
            "{name}: the segment put back, and no log/ object (nothing new)"
        );
        assert_eq!(objects.get(FIRST).unwrap(), kept, "{name}: the same bytes");
        assert_eq!(rows_read(&store, reader.store()), 3 * 3 * 40, "{name}");
        let took = started.elapsed();
        assert!(took < Duration::from_secs(5), "{name}: {took:?}");

        // Deleted again, with a barrier to publish: put back before the log/ object that
        // claims it again.
        objects.delete(FIRST);
        at = barrier(&mut store, at, PER);
        let next = publisher.publish(&store).unwrap();
        assert!(next.seq.is_some(), "{name}: {next:?}");
        assert_eq!((next.segments, &next.restored[..]), (2, &[1][..]), "{name}");
        assert_eq!(objects.get(FIRST).unwrap(), kept, "{name}");
        // Nothing lost, nothing new: nothing put.
        assert_eq!(publisher.publish(&store).unwrap(), Published::default());
        let mut fresh = replica(&objects);
        assert_eq!(
            rows_read(&store, fresh.store()),
            (3 * at) as usize,
            "{name}"
        );
        assert!(!fresh.poll().unwrap());
    }
}

/// A publisher that attaches after the deletion, as the next command does: it reads the
/// bucket's state (which claims the segment) and its first publish puts the segment back.
#[test]
fn a_deleted_segment_is_put_back_by_a_writer_that_attaches_after_the_deletion() {
    let root = tempfile::tempdir().unwrap();
    for (i, objects) in Objects::both(root.path()).into_iter().enumerate() {
        let name = objects.name();
        let dir = root.path().join(format!("store-{i}"));
        let (store, publisher, _) = published(&dir, &objects);
        let kept = objects.get(FIRST).unwrap();
        drop(publisher);
        drop(store);

        let started = Instant::now();
        objects.delete(FIRST);
        assert_unreadable(&replica(&objects));
        let store = Store::open(&dir, config(), &[decl()]).unwrap();
        let mut publisher =
            Publisher::attach(&store, objects.bucket(), RemoteConfig::default()).unwrap();
        let again = publisher.publish(&store).unwrap();
        assert_eq!(
            (again.seq, again.segments, &again.restored[..]),
            (None, 1, &[1][..]),
            "{name}: {again:?}"
        );
        assert_eq!(objects.get(FIRST).unwrap(), kept, "{name}: the same bytes");
        assert_eq!(rows_read(&store, replica(&objects).store()), 3 * 3 * 40);
        let took = started.elapsed();
        assert!(took < Duration::from_secs(5), "{name}: {took:?}");
    }
}

/// A segment the bucket lost and the local store holds no whole copy of (its file removed, or
/// a byte of it changed) is never put: the publish is refused, naming it, and puts nothing, not
/// even the new barrier's segment and log/ object, which would claim it again. Once the local
/// copy is whole again, the next publish puts it back and publishes the barrier.
#[test]
fn a_lost_segment_the_store_holds_no_whole_copy_of_is_refused_naming_it_and_nothing_is_put() {
    let root = tempfile::tempdir().unwrap();
    for (i, objects) in Objects::both(root.path()).into_iter().enumerate() {
        let name = objects.name();
        let dir = root.path().join(format!("store-{i}"));
        let (mut store, mut publisher, mut at) = published(&dir, &objects);
        let local = dir.join(FIRST);
        let whole = std::fs::read(&local).unwrap();
        objects.delete(FIRST);
        at = barrier(&mut store, at, PER);
        let before = objects.all();
        for (damage, apply) in DAMAGES {
            apply(&local);
            let refused = publisher.publish(&store).unwrap_err();
            let said = refused.to_string();
            assert!(
                matches!(&refused, RemoteError::Lost { key, .. } if key == FIRST),
                "{name}, local copy {damage}: {said}"
            );
            assert!(
                said.contains("no whole copy") && said.contains("log/2"),
                "{name}, local copy {damage}: {said}"
            );
            assert_eq!(
                objects.all(),
                before,
                "{name}, {damage}: nothing put or deleted"
            );
            std::fs::write(&local, &whole).unwrap();
        }
        let healed = publisher.publish(&store).unwrap();
        assert_eq!(
            (healed.seq.is_some(), healed.segments, &healed.restored[..]),
            (true, 2, &[1][..]),
            "{name}: {healed:?}"
        );
        assert_eq!(objects.get(FIRST).unwrap(), whole);
        assert_eq!(
            rows_read(&store, replica(&objects).store()),
            (3 * at) as usize
        );
    }
}

/// What happens to the local copy: a name, and the act.
type Damage = (&'static str, fn(&Path));

const DAMAGES: [Damage; 2] = [("removed", remove_file), ("a byte changed", flip_a_byte)];

fn remove_file(path: &Path) {
    std::fs::remove_file(path).unwrap();
}

/// Changes one byte in the middle of the file, in place (the store may map it).
fn flip_a_byte(path: &Path) {
    use std::io::{Read, Seek, SeekFrom, Write};
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .unwrap();
    let at = file.metadata().unwrap().len() / 2;
    let mut byte = [0u8];
    file.seek(SeekFrom::Start(at)).unwrap();
    file.read_exact(&mut byte).unwrap();
    file.seek(SeekFrom::Start(at)).unwrap();
    file.write_all(&[byte[0] ^ 0x5a]).unwrap();
}

/// A segment cut short in the bucket (a listing shows it at another length than its record's)
/// is put whole again; a whole segment of another length under its name (another copy's) is
/// refused, naming it, and left as it is.
#[test]
fn a_segment_cut_short_is_put_whole_and_another_segment_under_its_name_is_refused() {
    let root = tempfile::tempdir().unwrap();
    for (i, objects) in Objects::both(root.path()).into_iter().enumerate() {
        let name = objects.name();
        let dir = root.path().join(format!("store-{i}"));
        let mut store = Store::create(&dir, config(), &[decl()]).unwrap();
        let mut publisher =
            Publisher::attach(&store, objects.bucket(), RemoteConfig::default()).unwrap();
        // A smaller second barrier: its segment is a whole segment shorter than the first's.
        let at = barrier(&mut store, 0, PER);
        let at = barrier(&mut store, at, PER / 4);
        publisher.publish(&store).unwrap();
        let kept = objects.get(FIRST).unwrap();
        let other = objects.get("seg/000000000002.seg").unwrap();
        assert!(other.len() < kept.len(), "{name}");

        objects.overwrite(FIRST, &kept[..kept.len() / 2]);
        let again = publisher.publish(&store).unwrap();
        assert_eq!(&again.restored[..], &[1], "{name}: {again:?}");
        assert_eq!(objects.get(FIRST).unwrap(), kept, "{name}");

        objects.overwrite(FIRST, &other);
        let refused = publisher.publish(&store).unwrap_err();
        assert!(
            matches!(&refused, RemoteError::Unreadable { key, reason }
                if key == FIRST && reason.contains("whole segment other than")),
            "{name}: {refused}"
        );
        assert_eq!(objects.get(FIRST).unwrap(), other, "{name}: left as it is");
        objects.delete(FIRST);
        assert_eq!(
            &publisher.publish(&store).unwrap().restored[..],
            &[1],
            "{name}"
        );
        assert_eq!(
            rows_read(&store, replica(&objects).store()),
            (3 * at) as usize
        );
    }
}

/// What the check costs, counted on the simulated bucket: one LIST of `seg/` per publish, on
/// top of the LIST of `epoch/` every publish made before; a PUT per segment put back; nothing
/// else. A publish with nothing new is two LISTs.
#[test]
fn a_publish_lists_seg_once_and_puts_back_only_what_is_missing() {
    let root = tempfile::tempdir().unwrap();
    let simulated = FaultStore::new();
    let objects = Objects::Simulated(Arc::clone(&simulated));
    let (mut store, mut publisher, at) = published(root.path(), &objects);
    let priced = |store: &Store, publisher: &mut Publisher| {
        let before = simulated.requests();
        publisher.publish(store).unwrap();
        let after = simulated.requests();
        Requests {
            puts: after.puts - before.puts,
            gets: after.gets - before.gets,
            heads: after.heads - before.heads,
            lists: after.lists - before.lists,
            deletes: after.deletes - before.deletes,
        }
    };
    let lists = |n| Requests {
        lists: n,
        ..Requests::default()
    };
    assert_eq!(priced(&store, &mut publisher), lists(2), "nothing new");
    objects.delete(FIRST);
    assert_eq!(
        priced(&store, &mut publisher),
        Requests {
            puts: 1,
            ..lists(2)
        },
        "one segment put back"
    );
    barrier(&mut store, at, PER);
    assert_eq!(
        priced(&store, &mut publisher),
        Requests {
            puts: 2,
            ..lists(2)
        },
        "a barrier: its segment and its log/ object"
    );
}

/// A writer whose disk is a cache of the bucket (`TieredVfs`) holds an evicted segment only in
/// the bucket: once the bucket loses it, there is nothing to put back, and the publish is
/// refused naming it (never a `log/` object claiming it).
#[test]
fn an_evicted_segment_the_bucket_lost_is_refused_naming_it() {
    use strata_remote::TieredVfs;
    use strata_segment::vfs::{RealFs, Vfs};

    let dir = tempfile::tempdir().unwrap();
    let simulated = FaultStore::new();
    let objects = Objects::Simulated(Arc::clone(&simulated));
    let local: Arc<dyn Vfs> = Arc::new(RealFs::open(dir.path()).unwrap());
    // No cache: an evicted segment's bytes are only in the bucket.
    let remote = RemoteConfig::default().cache_bytes(0);
    let vfs = Arc::new(TieredVfs::open(local, simulated.bucket(), &remote).unwrap());
    let mut store = Store::create_in(vfs.clone(), config(), &[decl()]).unwrap();
    let mut publisher = Publisher::attach(&store, simulated.bucket(), remote).unwrap();
    let at = barrier(&mut store, 0, PER);
    let at = barrier(&mut store, at, PER);
    publisher.publish(&store).unwrap();
    let evicted = vfs.evict(&store, &publisher, 0).unwrap();
    assert_eq!(evicted.files, 2, "{evicted:?}");
    assert!(!dir.path().join(FIRST).exists());

    objects.delete(FIRST);
    barrier(&mut store, at, PER);
    let before = objects.all();
    let refused = publisher.publish(&store).unwrap_err();
    assert!(
        matches!(&refused, RemoteError::Lost { key, .. } if key == FIRST),
        "{refused}"
    );
    assert_eq!(objects.all(), before, "nothing put");
}
