//! `Store::open_read_only`: on a read-only bind mount (where this process can make one) and on a
//! simulated file system that refuses every write (always), on a store copied with `cp -r`,
//! and on a store a crash left needing a heal. Each answers every read exactly as the writable
//! store did, refuses every write, and leaves the store byte-identical: names and bytes, with
//! no `LOCK` created.

use std::path::Path;

use strata::index::TrackKey;
use strata::recover::RecoverError;
use strata::segment::vfs::{SimFs, Vfs};
use strata::{
    Aggregate, Config, EngineError, FieldKind, Lifetime, Retention, Row, Store, Stream, StreamDecl,
    Value, View,
};

use crate::read_only_mount::{ReadOnlyMount, run, tree};
use crate::support::sim;

/// An axial stream with levels (base 4, fanout 2), tracked by run and probe.
fn capture() -> StreamDecl {
    Stream::new("capture")
        .field("run", FieldKind::Str)
        .field("probe", FieldKind::U64)
        .field("t", FieldKind::U64)
        .field("value", FieldKind::F64)
        .field("count", FieldKind::I64)
        .track(["run", "probe"])
        .axis("t")
        .ladder(4, 2)
        .build()
        .unwrap()
}

/// A stream without an axis (so without levels).
fn notes() -> StreamDecl {
    Stream::new("notes")
        .field("run", FieldKind::Str)
        .field("note", FieldKind::Str)
        .track(["run"])
        .build()
        .unwrap()
}

fn streams() -> [StreamDecl; 2] {
    [capture(), notes()]
}

/// Merges as soon as two segments of a partition are alike, so that `fill`'s compaction runs.
fn config() -> Config {
    Config::default().compact_files_max(2).compact_inputs_min(2)
}

/// Barrier `position`: `stage`, then seal.
fn barrier(store: &mut Store, position: u64) {
    stage(store, position);
    store.seal().unwrap();
}

/// Stages the rows of barrier `position`: three partitions of `capture` (one with a spike and
/// one with a gap every third position) and a note.
fn stage(store: &mut Store, position: u64) {
    let mut rows: Vec<Row> = Vec::new();
    for (run, probe) in [("a", 1), ("a", 2), ("b", 1)] {
        if run == "b" && position.is_multiple_of(3) {
            continue;
        }
        for k in 0..4 {
            let t = position * 10 + k;
            let spike = if probe == 2 && k == 2 { 100.0 } else { 0.0 };
            #[expect(clippy::cast_precision_loss, reason = "small test values")]
            let value = (t as f64).sin() + spike;
            rows.push(vec![
                Value::Str(run.into()),
                Value::U64(probe),
                Value::U64(t),
                Value::F64(value),
                Value::I64(i64::try_from(t).unwrap() * 3 - 7),
            ]);
        }
    }
    store.publish("capture", position, &rows).unwrap();
    let note = vec![Value::Str("x".into()), Value::Str(format!("n{position}"))];
    store.publish("notes", position, &[note]).unwrap();
}

/// Several barriers, a compaction, a trim (so that raw floors exist), then more barriers.
fn fill(store: &mut Store) {
    for position in 1..=8 {
        barrier(store, position);
    }
    let steps = store.compact().unwrap();
    assert!(!steps.is_empty(), "the compaction merges something");
    store.trim_to("capture", 3).unwrap();
    store.trim_to("notes", 2).unwrap();
    for position in 9..=11 {
        barrier(store, position);
    }
}

/// Every answer the store gives, each as its `Debug` (a refusal included, so that a floor
/// refused alike is compared too): queries, surveys and folds over several selections and
/// ranges, the watermarks and the floors.
fn answers(store: &View) -> Vec<String> {
    let mut out = Vec::new();
    let selections: [&[&str]; 4] = [&[], &["a"], &["a", "2"], &["b", "1"]];
    for selection in selections {
        out.push(format!("{:?}", store.query("capture", selection, ..)));
        out.push(format!("{:?}", store.query("capture", selection, 5..=9)));
        out.push(format!("{:?}", store.query("capture", selection, 1..)));
        let iterated: Result<Vec<_>, _> = store
            .query_iter("capture", selection, 4..)
            .map(Iterator::collect);
        out.push(format!("{iterated:?}"));
        for budget in [8, 40, 400] {
            for axis in [(0, u64::MAX), (50, 95)] {
                let survey = store.survey("capture", selection, axis.0..=axis.1, budget);
                out.push(format!("{survey:?}"));
            }
            out.push(format!(
                "{:?}",
                store.survey("capture", selection, .., budget)
            ));
        }
        for word in ["min", "max", "mean", "sum", "count", "p0", "p50", "p100"] {
            let aggregate = Aggregate::parse(word).unwrap();
            out.push(format!(
                "{:?}",
                store.fold("capture", selection, .., aggregate)
            ));
            let ranged = store.fold("capture", selection, 40..=100, aggregate);
            out.push(format!("{ranged:?}"));
        }
        out.push(format!("{:?}", store.watermark("capture", selection)));
    }
    out.push(format!("{:?}", store.query("notes", &[], ..)));
    out.push(format!("{:?}", store.query("notes", &["x"], 3..)));
    for stream in ["capture", "notes"] {
        let floors: Vec<String> = store
            .catalog()
            .floors(stream, &TrackKey::ROOT)
            .map(|floors| format!("{floors:?}"))
            .collect();
        out.push(format!("{stream} floors {floors:?}"));
    }
    out
}

/// Every file of a simulated file system: its path, its live bytes and its durable bytes.
type SimTree = Vec<(String, Option<Vec<u8>>, Option<Vec<u8>>)>;

/// Every file of a simulated file system, with its live and its durable bytes.
fn sim_tree(fs: &SimFs) -> SimTree {
    fs.paths()
        .into_iter()
        .map(|path| {
            let live = fs.live_bytes(&path);
            let durable = fs.durable_bytes(&path);
            (path, live, durable)
        })
        .collect()
}

fn without_lock(tree: SimTree) -> SimTree {
    tree.into_iter()
        .filter(|(path, ..)| path != "LOCK")
        .collect()
}

/// Builds a store in `dir` and answers what the writable store answered, once it is dropped.
fn build_real(dir: &Path) -> Vec<String> {
    let mut store = Store::create(dir, config(), &streams()).unwrap();
    fill(&mut store);
    answers(&store)
}

/// The acceptance test: on a read-only bind mount where this process can make one (it says
/// why not, on stderr, where it cannot), and always on a simulated file system that refuses
/// every write, a read-only open answers every read exactly as the writable store did, refuses
/// every write, and leaves the store byte-identical, with no `LOCK` created.
#[test]
fn a_read_only_open_reads_everything_exactly_and_leaves_the_store_byte_identical() {
    // The simulated mount, always: the engine must not even try to write (the file system
    // counts every refused attempt).
    let fs = SimFs::new();
    let mut store = Store::create_in(sim(&fs), config(), &streams()).unwrap();
    fill(&mut store);
    let want = answers(&store);
    let answered = want.iter().filter(|a| a.starts_with("Ok([")).count();
    assert!(answered > 50, "most reads answer rows: {answered}");
    assert!(
        want.iter().any(|a| a.contains("Floor")),
        "a floor refuses alike"
    );
    drop(store);
    fs.remove("LOCK").unwrap();
    fs.set_read_only(true);
    let before = sim_tree(&fs);
    let ops_before = fs.ops();
    let reader = Store::open_read_only_in(sim(&fs), config(), &streams()).unwrap();
    assert!(reader.is_read_only());
    assert!(
        reader.boot_report().is_clean(),
        "{:?}",
        reader.boot_report()
    );
    assert!(!reader.boot_report().heal_pending);
    assert_eq!(answers(&reader), want);
    drop(reader);
    assert_eq!(fs.refused_writes(), 0, "a read-only open attempts no write");
    assert_eq!(fs.ops(), ops_before, "nor any sync");
    assert_eq!(sim_tree(&fs), before, "no LOCK, no byte changed");
    // The writable open is what the mount refuses.
    let refused = Store::open_in(sim(&fs), config(), &[]).unwrap_err();
    assert_eq!(
        refused.io_kind(),
        Some(std::io::ErrorKind::ReadOnlyFilesystem),
        "{refused}"
    );
    assert_eq!(sim_tree(&fs), before);

    // The real mount, where this process can make one.
    let source = tempfile::tempdir().unwrap();
    let target = tempfile::tempdir().unwrap();
    let want = build_real(source.path());
    let mount = match ReadOnlyMount::new(source.path(), target.path()) {
        Ok(mount) => mount,
        Err(why) => {
            eprintln!(
                "read_only: no read-only bind mount here ({why}); the simulated read-only \
                 file system above stands in for it"
            );
            return;
        }
    };
    let before = tree(source.path());
    assert!(before.contains_key(Path::new("LOCK")), "the writer's LOCK");
    let reader = Store::open_read_only(target.path(), config(), &streams()).unwrap();
    assert!(
        reader.boot_report().is_clean(),
        "{:?}",
        reader.boot_report()
    );
    assert_eq!(answers(&reader), want);
    // Two readers share the store; a writer is refused while they read.
    let second = Store::open_read_only(target.path(), config(), &[]).unwrap();
    let writer = Store::open(source.path(), config(), &[]).unwrap_err();
    assert!(writer.is_locked(), "{writer}");
    drop(second);
    drop(reader);
    // A writable open on the mount fails: nothing can be written there.
    let refused = Store::open(target.path(), config(), &[]).unwrap_err();
    assert_eq!(
        refused.io_kind(),
        Some(std::io::ErrorKind::ReadOnlyFilesystem),
        "{refused}"
    );
    drop(mount);
    assert_eq!(tree(source.path()), before, "byte-identical");
}

/// A store copied with `cp -r` while its writer holds it (sealed, so the copy is whole) opens
/// read-only and answers exactly: the copied `LOCK` is a plain file nobody holds, so it is
/// taken shared, and nothing is created or changed in the copy. The original, held by its
/// writer, is refused to a reader (`Locked`) rather than read while it may change.
#[test]
fn a_copied_store_opens_read_only_and_answers_exactly() {
    let scratch = tempfile::tempdir().unwrap();
    let original = scratch.path().join("store");
    let copy = scratch.path().join("copy");
    let mut writer = Store::create(&original, config(), &streams()).unwrap();
    fill(&mut writer);
    let want = answers(&writer);
    run(
        "cp",
        &["-r".as_ref(), original.as_os_str(), copy.as_os_str()],
    )
    .unwrap();
    let before = tree(&copy);
    assert!(before.contains_key(Path::new("LOCK")));
    let held = Store::open_read_only(&original, config(), &[]).unwrap_err();
    assert!(held.is_locked(), "{held}");
    let reader = Store::open_read_only(&copy, config(), &streams()).unwrap();
    assert_eq!(answers(&reader), want);
    drop(reader);
    assert_eq!(tree(&copy), before);
    // A copy without the LOCK (say, a backup tool that skipped it) opens too, and gets none.
    std::fs::remove_file(copy.join("LOCK")).unwrap();
    let before = tree(&copy);
    let reader = Store::open_read_only(&copy, config(), &[]).unwrap();
    assert_eq!(answers(&reader), want);
    drop(reader);
    assert_eq!(tree(&copy), before, "no LOCK created");
    drop(writer);
}

/// A store a crash left needing a heal — a barrier crashed at each of its operations, under
/// each crash image — opens read-only: it reports the pending heal, writes nothing (the file
/// system refuses writes and counts none attempted), and answers exactly what the writable
/// open that then heals it answers. After that heal, nothing is pending.
#[test]
fn a_pending_heal_is_reported_by_a_read_only_open_and_done_by_the_next_writable_one() {
    // How many operations a barrier takes, uncrashed.
    let probe = SimFs::new();
    let mut store = Store::create_in(sim(&probe), config(), &streams()).unwrap();
    barrier(&mut store, 1);
    let ops_before = probe.ops();
    barrier(&mut store, 2);
    let barrier_ops = probe.ops() - ops_before;
    drop(store);

    let mut pending_seen = 0;
    for crash_op in 0..barrier_ops {
        for image in 0..SimFs::CRASH_IMAGES {
            let fs = SimFs::new();
            let mut store = Store::create_in(sim(&fs), config(), &streams()).unwrap();
            barrier(&mut store, 1);
            fs.crash_at(fs.ops() + crash_op);
            stage(&mut store, 2);
            assert!(
                store.seal().is_err(),
                "op {crash_op}: the crash fails the seal"
            );
            drop(store);
            let crashed = fs.crash_image(image);
            let context = format!("crash at op {crash_op} of the barrier, image {image}");

            crashed.set_read_only(true);
            let before = sim_tree(&crashed);
            let reader = Store::open_read_only_in(sim(&crashed), config(), &[]).unwrap();
            let report = reader.boot_report().clone();
            let read = answers(&reader);
            drop(reader);
            assert_eq!(crashed.refused_writes(), 0, "{context}");
            assert_eq!(sim_tree(&crashed), before, "{context}: nothing changed");
            crashed.set_read_only(false);

            let healer = Store::open_in(sim(&crashed), config(), &[]).unwrap();
            let healed = healer.boot_report().clone();
            assert_eq!(answers(&healer), read, "{context}");
            drop(healer);
            assert_eq!(report.findings, healed.findings, "{context}");
            assert!(!healed.heal_pending, "{context}: a writable open heals");
            // Pending exactly when the writable open changed something (its LOCK aside).
            let changed = without_lock(sim_tree(&crashed)) != without_lock(before.clone());
            assert_eq!(report.heal_pending, changed, "{context}: {report:?}");
            if report.heal_pending {
                pending_seen += 1;
                let after = Store::open_read_only_in(sim(&crashed), config(), &[]).unwrap();
                assert!(!after.boot_report().heal_pending, "{context}");
            }
        }
    }
    eprintln!("{pending_seen} crash images left a heal pending");
    assert!(pending_seen > 0, "no crash point left anything to heal");
}

/// A read-only open of a folder without a store, or of one that does not exist, is refused
/// naming it, and creates nothing; a writable `open` too. `create` refuses a folder that holds
/// a store; `open_or_create` opens it.
#[test]
fn open_and_open_read_only_refuse_a_folder_without_a_store_and_create_nothing() {
    let scratch = tempfile::tempdir().unwrap();
    let missing = scratch.path().join("mistyped");
    for result in [
        Store::open_read_only(&missing, config(), &[]).map(drop),
        Store::open(&missing, config(), &[]).map(drop),
    ] {
        match result {
            Err(EngineError::Open(RecoverError::NotAStore { reason })) => {
                assert!(reason.contains(&missing.display().to_string()), "{reason}");
            }
            other => panic!("{other:?}"),
        }
        assert!(!missing.exists(), "nothing created");
    }
    let empty = scratch.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    for result in [
        Store::open_read_only(&empty, config(), &[]).map(drop),
        Store::open(&empty, config(), &[]).map(drop),
    ] {
        let error = result.unwrap_err();
        assert!(
            error.to_string().contains(&empty.display().to_string()),
            "{error}"
        );
        assert_eq!(std::fs::read_dir(&empty).unwrap().count(), 0, "no LOCK");
    }
    let made = scratch.path().join("new/nested");
    drop(Store::create(&made, config(), &streams()).unwrap());
    match Store::create(&made, config(), &streams()) {
        Err(EngineError::Open(RecoverError::AlreadyAStore { reason })) => {
            assert!(reason.contains("already holds a store"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    drop(Store::open_or_create(&made, config(), &streams()).unwrap());
    drop(Store::open_or_create(&empty, config(), &streams()).unwrap());
    drop(Store::open(&empty, config(), &[]).unwrap());
}

/// `create` refuses a folder that holds a store, held by a writer or not: never handed an
/// existing store as if it were new.
#[test]
fn create_refuses_a_folder_that_holds_a_store() {
    let fs = SimFs::new();
    let first = Store::create_in(sim(&fs), config(), &streams()).unwrap();
    let second = Store::create_in(sim(&fs), config(), &streams()).unwrap_err();
    assert!(
        matches!(
            second,
            EngineError::Open(RecoverError::AlreadyAStore { .. })
        ),
        "{second:?}"
    );
    drop(first);
    let third = Store::create_in(sim(&fs), config(), &streams()).unwrap_err();
    assert!(
        matches!(third, EngineError::Open(RecoverError::AlreadyAStore { .. })),
        "{third:?}"
    );
}

/// Every way a create can be refused without the disk: an unknown stream's retention, a
/// retention its stream cannot honour, a bound no store can honour, a declaration that is not
/// well formed, and two different declarations of one stream.
fn refused_creations() -> Vec<(&'static str, Config, Vec<StreamDecl>)> {
    let mut malformed = notes();
    malformed.track = vec![99];
    let mut twice = notes();
    twice.track = Vec::new();
    vec![
        (
            "retention of an undeclared stream",
            config().retain("typo", Retention::raw(Lifetime::Positions(10))),
            streams().to_vec(),
        ),
        (
            "retention the stream cannot honour",
            config().retain("notes", Retention::raw(Lifetime::AxisSpan(10))),
            streams().to_vec(),
        ),
        (
            "open_segments_max 0",
            config().open_segments_max(0),
            streams().to_vec(),
        ),
        (
            "compact_step_bytes_max 0",
            config().compact_step_bytes_max(0),
            streams().to_vec(),
        ),
        (
            "malformed declaration",
            config(),
            vec![capture(), malformed],
        ),
        ("declared twice", config(), vec![notes(), twice]),
    ]
}

/// A refused `create` or `open_or_create` leaves the folder exactly as it was: a missing one
/// missing, an empty one empty. Before, the store was laid down first and the declarations and
/// retention checked after, so the refusal left a store behind and the corrected retry was
/// refused as `AlreadyAStore`.
#[test]
fn a_refused_create_leaves_the_folder_as_it_was_and_the_retry_succeeds() {
    let scratch = tempfile::tempdir().unwrap();
    for (i, (what, refused, decls)) in refused_creations().into_iter().enumerate() {
        let missing = scratch.path().join(format!("missing-{i}/nested"));
        let empty = scratch.path().join(format!("empty-{i}"));
        std::fs::create_dir(&empty).unwrap();
        for result in [
            Store::create(&missing, refused.clone(), &decls),
            Store::open_or_create(&missing, refused.clone(), &decls),
        ] {
            let error = result.unwrap_err();
            assert!(
                matches!(
                    error,
                    EngineError::Config { .. } | EngineError::Declaration { .. }
                ),
                "{what}: {error:?}"
            );
            assert!(!missing.exists(), "{what}: {error}: created the folder");
            assert!(
                !missing.parent().unwrap().exists(),
                "{what}: created an ancestor"
            );
        }
        for result in [
            Store::create(&empty, refused.clone(), &decls),
            Store::open_or_create(&empty, refused.clone(), &decls),
        ] {
            let error = result.unwrap_err();
            assert_eq!(
                std::fs::read_dir(&empty).unwrap().count(),
                0,
                "{what}: {error}: wrote into the empty folder"
            );
        }
        // The same on any file system: nothing is written, not even a LOCK.
        let fs = SimFs::new();
        Store::create_in(sim(&fs), refused.clone(), &decls).unwrap_err();
        Store::open_or_create_in(sim(&fs), refused, &decls).unwrap_err();
        assert!(fs.paths().is_empty(), "{what}: {:?}", fs.paths());
        drop(Store::create(&missing, config(), &streams()).unwrap());
        drop(Store::open_or_create(&empty, config(), &streams()).unwrap());
        drop(Store::create_in(sim(&fs), config(), &streams()).unwrap());
    }
}

/// An open of an existing store with a config or declaration refused on its own changes
/// nothing: no heal, no LOCK, checked before boot. (A retention naming a stream only the
/// store's records hold is checked after boot, as it must be.)
#[test]
fn an_open_refused_without_the_records_heals_nothing() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().join("store");
    drop(Store::create(&dir, config(), &streams()).unwrap());
    std::fs::remove_file(dir.join("LOCK")).unwrap();
    // An orphan temp: a writable open that boots moves it to quarantine.
    std::fs::write(dir.join("tmp/orphan"), "left by a crash").unwrap();
    let before = tree(&dir);
    for (what, refused, decls) in refused_creations()
        .into_iter()
        .filter(|(what, ..)| *what != "retention of an undeclared stream")
    {
        let error = Store::open(&dir, refused, &decls).unwrap_err();
        assert_eq!(tree(&dir), before, "{what}: {error}: changed the store");
    }
    let store = Store::open(&dir, config(), &streams()).unwrap();
    assert!(!dir.join("tmp/orphan").exists(), "the accepted open heals");
    drop(store);
}

/// A folder of someone else's files is refused as `NotEmpty`, naming what it holds, never as
/// `AlreadyAStore` (whose advice, to open it, would be refused as `NotAStore`).
#[test]
fn create_refuses_a_folder_of_other_files_as_not_empty() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().join("theirs");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("b.txt"), "mine").unwrap();
    std::fs::write(dir.join("a.txt"), "mine").unwrap();
    let error = Store::create(&dir, config(), &streams()).unwrap_err();
    match &error {
        EngineError::Open(RecoverError::NotEmpty { path, holds }) => {
            assert_eq!(path, &dir.display().to_string());
            assert_eq!(holds, &["a.txt", "b.txt"]);
        }
        other => panic!("{other:?}"),
    }
    let message = error.to_string();
    assert!(
        message.contains("is not empty and holds no store")
            && message.contains("\"a.txt\", \"b.txt\"")
            && !message.contains("open it instead"),
        "{message}"
    );
    assert_eq!(names_in(&dir), ["a.txt", "b.txt"], "nothing written");
    match Store::open(&dir, config(), &streams()) {
        Err(EngineError::Open(RecoverError::NotAStore { .. })) => {}
        other => panic!("{other:?}"),
    }
}

/// The names in `dir`, sorted.
fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}
