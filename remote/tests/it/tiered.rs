//! The writer's local disk as a cache (#17 item 2): a store over a `TieredVfs` evicts uploaded
//! segments under a byte budget and reads them back from the bucket; it answers exactly as
//! before, compacts, retires and boots again with segments that live only in the bucket; a
//! damaged or missing object is an error naming it, never data.

use std::sync::Arc;

use strata_engine::{Aggregate, Store};
use strata_remote::{Publisher, RemoteConfig, TieredVfs};
use strata_segment::vfs::{RealFs, Vfs};

use crate::support::{TRACKS, decl, memory_bucket, rows, same_bucket};

/// Compaction has work after two barriers; one open segment, so reads map files again (and
/// an evicted one comes from the bucket) rather than reading what an open reader still maps.
fn config() -> strata_engine::Config {
    crate::support::config()
        .compact_inputs_min(2)
        .compact_files_max(2)
        .open_segments_max(1)
}

/// Every answer the tests compare, as text: rows, a survey and a fold of every track.
fn answers(store: &Store) -> Vec<String> {
    let mut out = Vec::new();
    for track in TRACKS {
        let sel = &track[..];
        out.push(format!("{:?}", store.query("probe", sel, ..).unwrap()));
        out.push(format!(
            "{:?}",
            store.survey("probe", sel, 0..=10_000, 64).unwrap()
        ));
        out.push(format!(
            "{:?}",
            store
                .fold("probe", sel, 0..=5_000, Aggregate::p(90))
                .unwrap()
        ));
    }
    out
}

fn tiered(dir: &std::path::Path, objects: &Arc<dyn object_store::ObjectStore>) -> Arc<TieredVfs> {
    let local: Arc<dyn Vfs> = Arc::new(RealFs::open(dir).unwrap());
    Arc::new(TieredVfs::open(local, same_bucket(objects), &RemoteConfig::default()).unwrap())
}

fn local_segments(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir.join("seg")).unwrap().count()
}

fn barriers(store: &mut Store, publisher: &mut Publisher, from: u64, n: u64) {
    for b in from..from + n {
        for track in TRACKS {
            store
                .publish("probe", b + 1, &rows(track, b * 40, 40))
                .unwrap();
        }
        store.seal().unwrap();
        publisher.publish(store).unwrap();
    }
}

#[test]
fn evicted_segments_are_read_from_the_bucket_and_answer_as_before() {
    let dir = tempfile::tempdir().unwrap();
    let (objects, bucket) = memory_bucket();
    let vfs = tiered(dir.path(), &objects);
    let mut store = Store::create_in(vfs.clone(), config(), &[decl()]).unwrap();
    let mut publisher = Publisher::attach(&store, bucket, RemoteConfig::default()).unwrap();
    barriers(&mut store, &mut publisher, 0, 6);
    let before = answers(&store);
    let live: u64 = store.catalog().live_files().map(|f| f.len).sum();
    let files = store.catalog().live_files().count();
    assert!(files >= 2 && local_segments(dir.path()) == files);

    // Half the bytes: the oldest go first, until the rest fits.
    let half = vfs.evict(&store, &publisher, live / 2).unwrap();
    assert!(half.files >= 1 && half.local_bytes <= live / 2, "{half:?}");
    assert_eq!(half.bytes + half.local_bytes, live);
    assert_eq!(local_segments(dir.path()), files - half.files);
    // The budget is reached: nothing more goes while it holds.
    assert_eq!(vfs.evict(&store, &publisher, live / 2).unwrap().files, 0);
    // Everything.
    let all = vfs.evict(&store, &publisher, 0).unwrap();
    assert_eq!((all.files + half.files, all.local_bytes), (files, 0));
    assert_eq!(local_segments(dir.path()), 0);
    assert_eq!(vfs.evicted_count(), files);

    assert_eq!(
        answers(&store),
        before,
        "reads from the bucket answer as the local files did"
    );
    let (misses, _, _) = vfs.cache().counts();
    assert!(misses > 0, "the reads fetched from the bucket");

    // Compaction reads evicted inputs; what it retires loses its marker with the file.
    barriers(&mut store, &mut publisher, 6, 2);
    let before = answers(&store);
    let mut steps = 0;
    while store.compact_step().unwrap().is_some() {
        publisher.publish(&store).unwrap();
        steps += 1;
    }
    assert!(steps > 0);
    assert_eq!(answers(&store), before);
    let live: Vec<_> = store.catalog().live_files().map(|f| f.name).collect();
    assert!(
        vfs.evicted_count() < files,
        "retired segments' markers went with them"
    );
    let markers = std::fs::read_dir(dir.path().join(strata_remote::EVICTED_DIR))
        .unwrap()
        .count();
    assert_eq!(markers, vfs.evicted_count());
    assert!(vfs.evicted_count() + local_segments(dir.path()) >= live.len());

    // A new boot, through a new TieredVfs, finds the evicted segments and answers alike.
    vfs.evict(&store, &publisher, 0).unwrap();
    drop(publisher);
    drop(store);
    let vfs = tiered(dir.path(), &objects);
    let store = Store::open_in(vfs.clone(), config(), &[decl()]).unwrap();
    assert!(
        store.boot_report().findings.is_empty(),
        "{:?}",
        store.boot_report()
    );
    assert_eq!(answers(&store), before);
    drop(store);

    // Opened plainly, the evicted segments are missing: reads are errors, never wrong.
    let plain = Store::open(dir.path(), config(), &[decl()]).unwrap();
    let error = plain.query("probe", &TRACKS[0][..], ..).unwrap_err();
    assert!(error.to_string().contains("seg/"), "{error}");
}

#[test]
fn a_missing_or_damaged_object_of_an_evicted_segment_is_an_error_naming_it() {
    use object_store::{ObjectStoreExt, PutPayload, path::Path};

    let dir = tempfile::tempdir().unwrap();
    let (objects, bucket) = memory_bucket();
    let vfs = tiered(dir.path(), &objects);
    let mut store = Store::create_in(vfs.clone(), config(), &[decl()]).unwrap();
    let mut publisher = Publisher::attach(&store, bucket, RemoteConfig::default()).unwrap();
    barriers(&mut store, &mut publisher, 0, 1);
    let evicted = vfs.evict(&store, &publisher, 0).unwrap();
    assert_eq!(evicted.files, 1);
    let name = store.catalog().live_files().next().unwrap().name;
    let key = Path::from(format!(
        "store-1/seg/{}",
        strata_segment::names::NumberedName::segment(name)
    ));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let good = runtime.block_on(async { objects.get(&key).await.unwrap().bytes().await.unwrap() });
    let mut bad = good.to_vec();
    let middle = bad.len() / 2;
    bad[middle] ^= 0x40;
    drop(store);
    for (what, bytes) in [("damaged", Some(bad)), ("missing", None)] {
        runtime.block_on(async {
            match bytes {
                Some(bytes) => {
                    objects.put(&key, PutPayload::from(bytes)).await.unwrap();
                }
                None => objects.delete(&key).await.unwrap(),
            }
        });
        let vfs = tiered(dir.path(), &objects);
        let store = Store::open_in(vfs, config(), &[decl()]).unwrap();
        let error = store.query("probe", &TRACKS[0][..], ..).unwrap_err();
        assert!(error.to_string().contains("seg/"), "{what}: {error}");
    }
}

/// A writer over the simulated file system with three published barriers, and its answers.
struct Sim {
    fs: Arc<strata_segment::vfs::SimFs>,
    vfs: Arc<TieredVfs>,
    store: Store,
    publisher: Publisher,
}

fn sim(objects: &Arc<dyn object_store::ObjectStore>) -> Sim {
    let fs = Arc::new(strata_segment::vfs::SimFs::new());
    let local: Arc<dyn Vfs> = fs.clone();
    let vfs =
        Arc::new(TieredVfs::open(local, same_bucket(objects), &RemoteConfig::default()).unwrap());
    let mut store = Store::create_in(vfs.clone(), config(), &[decl()]).unwrap();
    let mut publisher =
        Publisher::attach(&store, same_bucket(objects), RemoteConfig::default()).unwrap();
    barriers(&mut store, &mut publisher, 0, 3);
    Sim {
        fs,
        vfs,
        store,
        publisher,
    }
}

/// A power cut at every file-system operation of an eviction, under every crash image the
/// simulated file system knows (unsynced data lost, last write torn, directory operations
/// kept): the store boots through a new `TieredVfs` and answers exactly as before.
#[test]
fn a_crash_at_every_step_of_an_eviction_loses_nothing() {
    use strata_segment::vfs::SimFs;

    let (objects, _) = memory_bucket();
    let clean = sim(&objects);
    let before = answers(&clean.store);
    let start = clean.fs.ops();
    let evicted = clean.vfs.evict(&clean.store, &clean.publisher, 0).unwrap();
    let steps = clean.fs.ops() - start;
    assert!(
        evicted.files >= 2 && steps >= 10,
        "{evicted:?} in {steps} operations"
    );
    drop(clean);
    let mut cases = 0;
    for k in 0..steps {
        for image in 0..SimFs::CRASH_IMAGES {
            let (objects, _) = memory_bucket();
            let run = sim(&objects);
            run.fs.crash_at(run.fs.ops() + k);
            assert!(
                run.vfs.evict(&run.store, &run.publisher, 0).is_err(),
                "the crash at operation {k} stopped the eviction"
            );
            let crashed: Arc<dyn Vfs> = Arc::new(run.fs.crash_image(image));
            drop(run);
            let vfs = Arc::new(
                TieredVfs::open(crashed, same_bucket(&objects), &RemoteConfig::default()).unwrap(),
            );
            let store = Store::open_in(vfs, config(), &[decl()])
                .unwrap_or_else(|e| panic!("crash at {k}, image {image}: {e}"));
            assert_eq!(answers(&store), before, "crash at {k}, image {image}");
            cases += 1;
        }
    }
    eprintln!(
        "eviction: {steps} operations × {} crash images = {cases} cases",
        SimFs::CRASH_IMAGES
    );
    assert_eq!(cases, steps as usize * SimFs::CRASH_IMAGES);
}

/// A marker for a segment no record claims (left by a plain open that forgot the segment, or
/// by hand) does not stop the store: boot moves it to quarantine as it would the segment, and
/// the store answers as before.
#[test]
fn a_marker_no_record_claims_is_quarantined_by_boot() {
    let dir = tempfile::tempdir().unwrap();
    let (objects, bucket) = memory_bucket();
    let vfs = tiered(dir.path(), &objects);
    let mut store = Store::create_in(vfs.clone(), config(), &[decl()]).unwrap();
    let mut publisher = Publisher::attach(&store, bucket, RemoteConfig::default()).unwrap();
    barriers(&mut store, &mut publisher, 0, 2);
    assert!(vfs.evict(&store, &publisher, 0).unwrap().files >= 1);
    let before = answers(&store);
    drop(publisher);
    drop(store);
    let markers = dir.path().join(strata_remote::EVICTED_DIR);
    let first = std::fs::read_dir(&markers)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let stray = markers.join("000000999999.seg.evicted");
    std::fs::copy(&first, &stray).unwrap();
    let vfs = tiered(dir.path(), &objects);
    let store = Store::open_in(vfs, config(), &[decl()]).unwrap();
    assert!(!stray.exists(), "the stray marker left remote-evicted/");
    let quarantined = std::fs::read_dir(dir.path().join("quarantine"))
        .unwrap()
        .count();
    assert!(quarantined >= 1, "it is kept in quarantine/");
    assert_eq!(answers(&store), before);
}
