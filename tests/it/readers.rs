//! A reader beside a writer (#32), on the real file system: what `Store::open_reader` answers,
//! how `refresh` follows, and that the writer removes no file a reader may still open — and
//! every file once no reader can.
//!
//! The writer and the reader here are two stores of one process, each with its own handles,
//! as two processes would have (the reader takes no lock; the pins are real `flock`s). The
//! soak in `cli/tests/readers_soak.rs` runs them as separate processes, killed at random.
//! Every expected answer is a `MemorySeries` replaying the rows through the watermark the
//! reader reports; what is on disk is read from the folder, not from either store.

use std::collections::BTreeSet;
use std::fmt::Debug;
use std::path::Path;

use crate::support::ready;
use strata::segment::names::{NumberedName, READERS_DIR, SEG_DIR};
use strata::segment::vfs::{RealFs, Vfs};
use strata::{
    Aggregate, Config, EngineError, FieldKind, ManifestPosition, MemorySeries, Reader, Row, Series,
    ServeConfig, Served, Store, Stream, StreamDecl, Value, View,
};

const S: &str = "m";

fn decl() -> StreamDecl {
    Stream::new(S)
        .field("run", FieldKind::Str)
        .field("t", FieldKind::U64)
        .field("v", FieldKind::F64)
        .track(["run"])
        .axis("t")
        .ladder(4, 2)
        .build()
        .unwrap()
}

/// The rows at position `p`: run `a` twice, `b` at even positions; axis `4p + i`; values in
/// quarters, so every sum is exact in any order.
fn rows_at(p: u64) -> Vec<Row> {
    let k = i32::try_from(p % 1000).unwrap();
    let row = |run: &str, i: u64, v: i32| {
        vec![
            Value::Str(run.into()),
            Value::U64(4 * p + i),
            Value::F64(f64::from(v) / 4.0),
        ]
    };
    let mut rows = vec![row("a", 0, (k * 37) % 23 - 11), row("a", 1, 5 - k % 7)];
    if p.is_multiple_of(2) {
        rows.push(row("b", 2, k % 5 - 2));
    }
    rows
}

/// The model of what a store holds through watermark `w`: every batch `0..=w`, replayed.
fn model_at(w: Option<u64>) -> MemorySeries {
    let mut model = MemorySeries::new(&[decl()]);
    if let Some(w) = w {
        for p in 0..=w {
            ready(model.publish(S, p, rows_at(p))).unwrap();
        }
        ready(model.seal(S, &[])).unwrap();
    }
    model
}

fn seal_batches(store: &mut Store, batches: std::ops::Range<u64>) {
    for p in batches {
        store.publish(S, p, &rows_at(p)).unwrap();
        store.seal().unwrap();
    }
}

fn text<T: Debug, E: Debug>(answer: Result<T, E>) -> String {
    format!("{answer:?}")
}

/// Every read the reader answers, against the model at the reader's own watermark: queries,
/// surveys and folds, over each selection. Opening every file it claims.
fn assert_answers_at_watermark(reader: &View) {
    let w = reader.watermark(S, &[]).unwrap();
    let model = model_at(w);
    let top = w.unwrap_or(0);
    for sel in [&[][..], &["a"][..], &["b"][..]] {
        assert_eq!(
            text(reader.query(S, sel, 0..=top)),
            text(model.query(S, sel, 0..=top)),
            "query {sel:?} at watermark {w:?}"
        );
        for budget in [8, 1000] {
            assert_eq!(
                text(reader.survey(S, sel, 0..=4 * top + 3, budget)),
                text(model.survey(S, sel, 0..=4 * top + 3, budget)),
                "survey {sel:?} budget {budget} at watermark {w:?}"
            );
        }
        for kind in [
            Aggregate::Sum,
            Aggregate::Max,
            Aggregate::Count,
            Aggregate::p(50),
        ] {
            assert_eq!(
                text(reader.fold(S, sel, 0..=4 * top + 3, kind)),
                text(model.fold(S, sel, 0..=4 * top + 3, kind)),
                "fold {kind:?} {sel:?} at watermark {w:?}"
            );
        }
    }
}

/// The segment files in the folder now.
fn segments_on_disk(dir: &Path) -> BTreeSet<u64> {
    let fs = RealFs::open(dir).unwrap();
    fs.list(SEG_DIR)
        .unwrap()
        .into_iter()
        .filter_map(|entry| NumberedName::parse(&entry.name).map(|name| name.number))
        .collect()
}

fn live_in(store: &View) -> BTreeSet<u64> {
    store.catalog().live_files().map(|file| file.name).collect()
}

fn pins_on_disk(dir: &Path) -> Vec<String> {
    let fs = RealFs::open(dir).unwrap();
    match fs.list(READERS_DIR) {
        Ok(entries) => entries.into_iter().map(|entry| entry.name).collect(),
        Err(_) => Vec::new(),
    }
}

/// A writer that compacts two files into one as soon as it can.
fn writer_config() -> Config {
    Config::default().compact_files_max(1).compact_inputs_min(2)
}

#[test]
fn a_reader_follows_barriers_and_answers_at_its_watermark() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = Store::create(dir.path(), writer_config(), &[decl()]).unwrap();
    seal_batches(&mut writer, 0..5);
    let mut reader = Store::open_reader(dir.path(), Config::default()).unwrap();
    assert!(reader.is_reader() && reader.is_read_only());
    assert_eq!(reader.watermark(S, &[]).unwrap(), Some(4));
    assert_eq!(reader.manifest_position(), writer.manifest_position());
    assert_answers_at_watermark(&reader);

    assert!(!reader.behind(), "nothing recorded since the reader read");
    seal_batches(&mut writer, 5..9);
    // Nothing moves until the reader asks; it can tell that there is more.
    assert_eq!(reader.watermark(S, &[]).unwrap(), Some(4));
    assert!(
        reader.behind(),
        "the writer recorded barriers the reader has not read"
    );
    assert_answers_at_watermark(&reader);
    assert!(reader.refresh().unwrap());
    assert!(!reader.behind());
    assert_eq!(reader.watermark(S, &[]).unwrap(), Some(8));
    assert_eq!(reader.manifest_position(), writer.manifest_position());
    assert_eq!(reader.pinned_at(), Some(reader.manifest_position()));
    assert_answers_at_watermark(&reader);
    assert!(!reader.refresh().unwrap(), "nothing new: nothing changes");

    // A reader has no write (and a writer no refresh): neither compiles (the doc tests of
    // `Reader`). The pin goes with the reader.
    assert_eq!(pins_on_disk(dir.path()).len(), 1);
    drop(reader);
    assert!(pins_on_disk(dir.path()).is_empty());
}

#[test]
fn a_file_a_reader_may_open_outlives_its_retirement_until_the_reader_moves_on() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = Store::create(dir.path(), writer_config(), &[decl()]).unwrap();
    seal_batches(&mut writer, 0..6);
    // One open segment at a time: every read opens its files again, by name.
    let mut reader =
        Store::open_reader(dir.path(), Config::default().open_segments_max(1)).unwrap();
    let claimed = live_in(&reader);
    assert!(claimed.len() >= 2, "several files to merge: {claimed:?}");

    let steps = writer.compact().unwrap();
    assert!(!steps.is_empty(), "compaction retired the reader's files");
    assert!(
        claimed.iter().any(|name| !live_in(&writer).contains(name)),
        "the writer retired some file the reader claims"
    );
    assert!(writer.removals_pending() > 0);
    assert!(
        claimed.is_subset(&segments_on_disk(dir.path())),
        "every file the reader claims is still on disk"
    );
    assert_answers_at_watermark(&reader);

    // The reader moves on; the writer's next write removes what it waited for.
    reader.refresh().unwrap();
    assert_answers_at_watermark(&reader);
    writer.seal().unwrap();
    assert_eq!(writer.removals_pending(), 0);
    assert_eq!(segments_on_disk(dir.path()), live_in(&writer));
    assert_answers_at_watermark(&reader);
}

#[test]
fn a_store_without_readers_removes_retired_files_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = Store::create(dir.path(), writer_config(), &[decl()]).unwrap();
    seal_batches(&mut writer, 0..6);
    let steps = writer.compact().unwrap();
    assert!(!steps.is_empty());
    assert_eq!(writer.removals_pending(), 0);
    assert_eq!(segments_on_disk(dir.path()), live_in(&writer));
}

#[test]
fn a_dead_readers_pin_holds_nothing_back() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = Store::create(dir.path(), writer_config(), &[decl()]).unwrap();
    seal_batches(&mut writer, 0..6);
    // A reader at the start of history whose process died: its flock went with it, its file
    // stayed.
    let fs = RealFs::open(dir.path()).unwrap();
    fs.create_dir(READERS_DIR).unwrap();
    drop(fs.hold(&format!("{READERS_DIR}/4242-0-0.0.0")).unwrap());
    assert_eq!(pins_on_disk(dir.path()), ["4242-0-0.0.0"]);
    writer.compact().unwrap();
    assert_eq!(
        writer.removals_pending(),
        0,
        "the dead pin held nothing back"
    );
    assert_eq!(segments_on_disk(dir.path()), live_in(&writer));
    assert!(
        pins_on_disk(dir.path()).is_empty(),
        "the dead pin was removed"
    );
    // A live reader beside it is not mistaken for a dead one.
    let reader = Store::open_reader(dir.path(), Config::default()).unwrap();
    drop(fs.hold(&format!("{READERS_DIR}/4243-0-0.0.0")).unwrap());
    seal_batches(&mut writer, 6..10);
    writer.compact().unwrap();
    assert!(
        writer.removals_pending() > 0,
        "the live reader holds its files"
    );
    assert_eq!(
        pins_on_disk(dir.path()).len(),
        1,
        "only the dead pin was removed"
    );
    assert_answers_at_watermark(&reader);
}

#[test]
fn readers_are_bounded_by_reader_processes_max() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = Store::create(dir.path(), Config::default(), &[decl()]).unwrap();
    seal_batches(&mut writer, 0..2);
    let config = Config::default().reader_processes_max(3);
    let mut readers: Vec<Reader> = (0..3)
        .map(|_| Store::open_reader(dir.path(), config.clone()).unwrap())
        .collect();
    let refused = Store::open_reader(dir.path(), config.clone()).unwrap_err();
    assert!(
        matches!(refused, EngineError::TooManyReaders { max: 3, .. }),
        "{refused}"
    );
    assert!(
        refused.to_string().contains("reader_processes_max"),
        "{refused}"
    );
    assert_eq!(
        pins_on_disk(dir.path()).len(),
        3,
        "the refused reader left no pin"
    );
    readers.pop();
    readers.push(Store::open_reader(dir.path(), config).unwrap());
    for bad in [0, strata::READER_PROCESSES_LIMIT + 1] {
        let error = Store::open_reader(dir.path(), Config::default().reader_processes_max(bad))
            .unwrap_err();
        assert!(
            matches!(
                error,
                EngineError::Config {
                    setting: "reader_processes_max",
                    ..
                }
            ),
            "{error}"
        );
    }
}

#[test]
fn a_reader_follows_manifest_rewrites() {
    let dir = tempfile::tempdir().unwrap();
    let config = writer_config().manifest_rewrite_bytes(512);
    let mut writer = Store::create(dir.path(), config, &[decl()]).unwrap();
    seal_batches(&mut writer, 0..3);
    let mut reader = Store::open_reader(dir.path(), Config::default()).unwrap();
    let first = reader.manifest_position();
    for p in 3..40 {
        seal_batches(&mut writer, p..p + 1);
        writer.compact().unwrap();
        if p % 5 == 0 {
            reader.refresh().unwrap();
            assert_answers_at_watermark(&reader);
        }
    }
    // Behind by generations now, not only by frames: `behind` tells either.
    assert!(writer.manifest_position().generation > reader.manifest_position().generation);
    assert!(reader.behind());
    reader.refresh().unwrap();
    assert!(!reader.behind());
    assert!(
        reader.manifest_position().generation > first.generation,
        "the writer rewrote its manifest ({first} then {})",
        reader.manifest_position()
    );
    assert_eq!(reader.manifest_position(), writer.manifest_position());
    assert_eq!(reader.watermark(S, &[]).unwrap(), Some(39));
    assert_answers_at_watermark(&reader);
    writer.seal().unwrap();
    assert_eq!(segments_on_disk(dir.path()), live_in(&writer));
}

#[test]
fn a_writer_reopened_beside_a_reader_keeps_the_files_the_reader_may_open() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = Store::create(dir.path(), writer_config(), &[decl()]).unwrap();
    seal_batches(&mut writer, 0..6);
    let mut reader =
        Store::open_reader(dir.path(), Config::default().open_segments_max(1)).unwrap();
    let claimed = live_in(&reader);
    writer.compact().unwrap();
    assert!(writer.removals_pending() > 0);
    // The writer goes away with removals queued (as a killed one would), and comes back: its
    // boot finds files whose retirement is recorded, and a live reader.
    drop(writer);
    let mut writer = Store::open(dir.path(), writer_config(), &[]).unwrap();
    assert!(
        writer.removals_pending() > 0,
        "boot left them for the reader"
    );
    assert!(claimed.is_subset(&segments_on_disk(dir.path())));
    assert_answers_at_watermark(&reader);
    reader.refresh().unwrap();
    writer.seal().unwrap();
    assert_eq!(writer.removals_pending(), 0);
    assert_eq!(segments_on_disk(dir.path()), live_in(&writer));
    assert_answers_at_watermark(&reader);
}

#[test]
fn a_readers_snapshot_holds_its_pin_back_until_it_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = Store::create(dir.path(), writer_config(), &[decl()]).unwrap();
    seal_batches(&mut writer, 0..6);
    let mut reader = Store::open_reader(dir.path(), Config::default()).unwrap();
    let start = reader.manifest_position();
    let snapshot = reader.snapshot();
    seal_batches(&mut writer, 6..8);
    writer.compact().unwrap();
    reader.refresh().unwrap();
    assert!(reader.manifest_position() > start);
    assert_eq!(
        reader.pinned_at(),
        Some(start),
        "the snapshot reads at the start"
    );
    assert!(writer.removals_pending() > 0);
    assert_answers_at_watermark(&snapshot);
    drop(snapshot);
    reader.refresh().unwrap();
    assert_eq!(reader.pinned_at(), Some(reader.manifest_position()));
    writer.seal().unwrap();
    assert_eq!(writer.removals_pending(), 0);
    assert_eq!(segments_on_disk(dir.path()), live_in(&writer));
}

#[test]
fn a_folder_without_a_store_gets_no_reader_and_nothing_created() {
    let dir = tempfile::tempdir().unwrap();
    let error = Store::open_reader(dir.path(), Config::default()).unwrap_err();
    assert!(error.to_string().contains("no manifest"), "{error}");
    assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none());
    let missing = dir.path().join("nothing");
    let error = Store::open_reader(&missing, Config::default()).unwrap_err();
    assert!(error.to_string().contains("does not exist"), "{error}");
}

/// Under `Served`, retired files go to its worker (`take_due_removals`): that path waits for a
/// reader's pin too, and removes them once the reader has moved on.
#[test]
fn a_served_writer_removes_nothing_a_reader_pins_and_everything_once_it_moves_on() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::create(dir.path(), writer_config(), &[decl()]).unwrap();
        seal_batches(&mut store, 0..6);
        let mut reader =
            Store::open_reader(dir.path(), Config::default().open_segments_max(1)).unwrap();
        let claimed = live_in(&reader);
        store.compact().unwrap();
        assert!(store.removals_pending() > 0, "the reader pins the inputs");
        // No compaction under `Served`: only the queued removals are left to do.
        let served = Served::spawn(
            store,
            ServeConfig::default()
                .seal_interval(None)
                .compact_steps_per_tick(0),
        );
        let mut publisher = served.clone();
        for p in 6..10 {
            publisher.publish(S, p, rows_at(p)).await.unwrap();
            publisher.seal(S, &[]).await.unwrap();
        }
        assert!(served.metrics().await.unwrap().removals_pending > 0);
        assert!(claimed.is_subset(&segments_on_disk(dir.path())));
        assert_answers_at_watermark(&reader);

        reader.refresh().unwrap();
        let mut p = 10;
        while served.metrics().await.unwrap().removals_pending > 0 {
            assert!(p < 200, "the worker never removed what the reader let go");
            publisher.publish(S, p, rows_at(p)).await.unwrap();
            publisher.seal(S, &[]).await.unwrap();
            p += 1;
        }
        served.stop().await.unwrap();
        drop(served);
        drop(publisher);
        let store = Store::open(dir.path(), writer_config(), &[]).unwrap();
        assert_eq!(segments_on_disk(dir.path()), live_in(&store));
        reader.refresh().unwrap();
        assert_answers_at_watermark(&reader);
    });
}

/// A store of five barriers, a reader of it, then three more barriers the reader has not read
/// (the writer gone): the folder, the reader, where it read to, and where each barrier after
/// ended the manifest.
fn reader_three_barriers_behind() -> (
    tempfile::TempDir,
    Reader,
    ManifestPosition,
    Vec<ManifestPosition>,
) {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = Store::create(dir.path(), Config::default(), &[decl()]).unwrap();
    seal_batches(&mut writer, 0..5);
    let reader = Store::open_reader(dir.path(), Config::default()).unwrap();
    let before = reader.manifest_position();
    let mut ends = Vec::new();
    for p in 5..8 {
        seal_batches(&mut writer, p..p + 1);
        ends.push(writer.manifest_position());
    }
    drop(writer);
    (dir, reader, before, ends)
}

/// A refresh that finds damage inside what was appended (a bad frame with whole frames after
/// it: not a write in flight) is refused, naming the manifest, and leaves the reader exactly as
/// it was: nothing of the frames before the damage is half taken in.
#[test]
fn a_refresh_that_finds_damage_is_refused_and_changes_nothing() {
    let (dir, mut reader, before, ends) = reader_three_barriers_behind();
    // A byte inside the second appended frame.
    let manifest = dir
        .path()
        .join(format!("manifest-{:06}", before.generation));
    let mut bytes = std::fs::read(&manifest).unwrap();
    let at = usize::try_from(ends[0].len).unwrap() + 12;
    bytes[at] ^= 0x40;
    std::fs::write(&manifest, &bytes).unwrap();
    for _ in 0..2 {
        let refused = reader.refresh().unwrap_err();
        assert!(
            matches!(refused, EngineError::Unreadable { .. })
                && refused.to_string().contains("manifest-"),
            "{refused}"
        );
        assert_eq!(reader.manifest_position(), before);
        assert_eq!(reader.watermark(S, &[]).unwrap(), Some(4));
        assert_answers_at_watermark(&reader);
    }
}

/// A refresh that finds a record the catalog refuses (a frame that passes its checksum, the
/// first appended frame written a second time: its file added twice), with whole frames after
/// it, is refused and leaves the reader exactly as it was, whether the refresh applied the
/// frames in place (nothing held the reader's version) or to a copy (a view held it): the frame
/// before the refused one, applied already in place, is taken back.
#[test]
fn a_refresh_that_finds_a_record_the_catalog_refuses_changes_nothing() {
    for held in [false, true] {
        let (dir, mut reader, before, ends) = reader_three_barriers_behind();
        let manifest = dir
            .path()
            .join(format!("manifest-{:06}", before.generation));
        let bytes = std::fs::read(&manifest).unwrap();
        let [start, first_end] = [before.len, ends[0].len].map(|at| usize::try_from(at).unwrap());
        let mut doubled = bytes[..first_end].to_vec();
        doubled.extend_from_slice(&bytes[start..first_end]);
        doubled.extend_from_slice(&bytes[first_end..]);
        std::fs::write(&manifest, &doubled).unwrap();
        let view = held.then(|| reader.view());
        for _ in 0..2 {
            let refused = reader.refresh().unwrap_err();
            assert!(
                matches!(refused, EngineError::Unreadable { .. })
                    && refused.to_string().contains("manifest-"),
                "held {held}: {refused}"
            );
            assert_eq!(reader.manifest_position(), before, "held {held}");
            assert_eq!(reader.watermark(S, &[]).unwrap(), Some(4), "held {held}");
            assert_answers_at_watermark(&reader);
        }
        if let Some(view) = view {
            assert_eq!(view.watermark(S, &[]).unwrap(), Some(4));
            assert_answers_at_watermark(&view);
        }
    }
}

/// A refresh that finds the writer's rewritten generation damaged inside its snapshot is
/// refused, naming the generation and the offset, and the reader stays at what it answered:
/// the snapshot was written whole before the generation had its name, so a frame failing there
/// is never a write in flight, even with nothing after it. (Taking it for one read the snapshot
/// as empty: a reader answering with every stream gone.)
#[test]
fn a_refresh_that_finds_a_rewritten_snapshot_damaged_is_refused_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    // Rewritten whenever the manifest has doubled since the last rewrite: no compaction, so no
    // retired file a reader pins holds a rewrite back.
    let config = Config::default().manifest_rewrite_bytes(1);
    let mut writer = Store::create(dir.path(), config, &[decl()]).unwrap();
    seal_batches(&mut writer, 0..3);
    let mut reader = Store::open_reader(dir.path(), Config::default()).unwrap();
    let before = reader.manifest_position();
    let mut p = 3;
    while writer.manifest_position().generation == before.generation {
        seal_batches(&mut writer, p..p + 1);
        p += 1;
    }
    let rewritten = writer.manifest_position();
    drop(writer);
    let manifest = dir
        .path()
        .join(format!("manifest-{:06}", rewritten.generation));
    let mut bytes = std::fs::read(&manifest).unwrap();
    // The snapshot frame follows the 16-byte header and the 38-byte preamble, and ends the file.
    let snapshot_at = 16 + 38;
    assert!(bytes.len() > snapshot_at + 20);
    bytes[snapshot_at + 20] ^= 0x04;
    std::fs::write(&manifest, &bytes).unwrap();
    for _ in 0..2 {
        let refused = reader.refresh().unwrap_err();
        let text = refused.to_string();
        assert!(matches!(refused, EngineError::Unreadable { .. }), "{text}");
        assert!(
            text.contains(&format!("manifest-{:06}", rewritten.generation)),
            "{text}"
        );
        assert!(text.contains(&snapshot_at.to_string()), "{text}");
        assert!(text.contains("written whole"), "{text}");
        assert_eq!(reader.manifest_position(), before);
        assert_eq!(reader.watermark(S, &[]).unwrap(), Some(2));
        assert_answers_at_watermark(&reader);
    }
    // A new reader is refused at its open, as a writer would be.
    let opened = Store::open_reader(dir.path(), Config::default()).unwrap_err();
    assert!(
        opened.to_string().contains("damaged at byte 54"),
        "{opened}"
    );
}
