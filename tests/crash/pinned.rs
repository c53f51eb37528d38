//! The writer crashed at every operation of a removal a reader in another process pins (#32).
//!
//! A reader (`Store::open_reader`) reads at the store's start while the writer compacts, which
//! retires files the reader claims. The writer is crashed at every operation of that step and
//! of the barrier after it, two ways: a process kill (`SimFs::restart`: the live image stays, and
//! so does the reader, pin and all) and a power cut (`SimFs::crash`: the durable image alone,
//! and no reader survives it). Then, as a second phase, the reader moves on and the writer is
//! crashed at every operation of the removal that was waiting for it.
//!
//! After each crash: no file the live reader claims is gone (it answers exactly as the model
//! does, one open segment at a time, so every read opens its files by name), a writer that
//! reopens beside it keeps them, and once the reader has moved on (or is gone) the writer's
//! next barrier leaves no retired file behind: `seg/` holds exactly the live files.

use std::collections::BTreeSet;
use std::fmt::Debug;
use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use strata::segment::names::{NumberedName, SEG_DIR};
use strata::segment::vfs::{SimFs, Vfs};
use strata::{
    Aggregate, Config, FieldKind, MemorySeries, Reader, Row, Series, Store, Stream, StreamDecl,
    Value, View,
};

use crate::census;

const S: &str = "m";
const BATCHES: u64 = 6;

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

fn rows_at(p: u64) -> Vec<Row> {
    let k = i32::try_from(p).unwrap();
    let row = |run: &str, i: u64, v: i32| {
        vec![
            Value::Str(run.into()),
            Value::U64(4 * p + i),
            Value::F64(f64::from(v) / 4.0),
        ]
    };
    vec![row("a", 0, (k * 37) % 23 - 11), row("b", 1, 5 - k % 7)]
}

fn config() -> Config {
    Config::default().compact_files_max(1).compact_inputs_min(2)
}

fn vfs(fs: &SimFs) -> Arc<dyn Vfs> {
    Arc::new(fs.clone())
}

fn ready<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    match future
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(out) => out,
        Poll::Pending => panic!("MemorySeries never waits"),
    }
}

fn text<T: Debug>(answer: T) -> String {
    format!("{answer:?}")
}

/// The reader's answers against the model through its watermark: a query, a survey and a fold.
fn assert_reader_answers(reader: &View, context: &str) {
    let w = reader.watermark(S, &[]).unwrap().unwrap();
    let mut model = MemorySeries::new(&[decl()]);
    for p in 0..=w {
        ready(model.publish(S, p, rows_at(p))).unwrap();
    }
    ready(model.seal(S, &[])).unwrap();
    let axis = 0..=4 * w + 3;
    assert_eq!(
        text(reader.query(S, &[], 0..=w)),
        text(model.query(S, &[], 0..=w)),
        "{context}: query"
    );
    assert_eq!(
        text(reader.survey(S, &["a"], axis.clone(), 16)),
        text(model.survey(S, &["a"], axis.clone(), 16)),
        "{context}: survey"
    );
    assert_eq!(
        text(reader.fold(S, &[], axis.clone(), Aggregate::Sum)),
        text(model.fold(S, &[], axis, Aggregate::Sum)),
        "{context}: fold"
    );
}

fn on_disk(fs: &SimFs) -> BTreeSet<u64> {
    fs.list(SEG_DIR)
        .unwrap()
        .into_iter()
        .filter_map(|entry| NumberedName::parse(&entry.name).map(|name| name.number))
        .collect()
}

fn live(store: &View) -> BTreeSet<u64> {
    store.catalog().live_files().map(|file| file.name).collect()
}

/// A store of `BATCHES` barriers and a reader at its start, with the files it claims.
fn setup() -> (SimFs, Store, Reader, BTreeSet<u64>) {
    let fs = SimFs::new();
    let mut writer = Store::create_in(vfs(&fs), config(), &[decl()]).unwrap();
    for p in 0..BATCHES {
        writer.publish(S, p, &rows_at(p)).unwrap();
        writer.seal().unwrap();
    }
    let reader = Store::open_reader_in(vfs(&fs), Config::default().open_segments_max(1)).unwrap();
    let claimed = live(&reader);
    (fs, writer, reader, claimed)
}

/// The writer's work crashed: a compaction that retires the reader's files, then a barrier.
fn compact_then_seal(writer: &mut Store) -> bool {
    writer.compact().is_ok()
        && writer.publish(S, BATCHES, &rows_at(BATCHES)).is_ok()
        && writer.seal().is_ok()
}

/// After the writer is gone, with the reader alive (a kill) or not (a power cut): a writer
/// reopens; files the reader claims stay while it lives; once it has moved on or gone, the next
/// barrier leaves exactly the live files.
fn check_after(fs: &SimFs, reader: Option<&mut Reader>, claimed: &BTreeSet<u64>, context: &str) {
    let mut writer =
        Store::open_in(vfs(fs), config(), &[]).unwrap_or_else(|e| panic!("{context}: reopen: {e}"));
    if let Some(reader) = reader {
        assert!(
            claimed.is_subset(&on_disk(fs)),
            "{context}: a file the reader claims was removed: {claimed:?} on disk {:?}",
            on_disk(fs)
        );
        assert_reader_answers(reader, context);
        reader.refresh().unwrap();
        assert_reader_answers(reader, context);
    }
    writer.seal().unwrap();
    assert_eq!(writer.removals_pending(), 0, "{context}");
    assert_eq!(
        on_disk(fs),
        live(&writer),
        "{context}: a retired file was left behind"
    );
}

#[test]
fn a_writer_crashed_at_every_operation_of_a_pinned_removal_never_removes_a_pinned_file() {
    let mut points = 0;
    let mut kills = 0;
    // Phase 1: the reader reads at the start while the writer retires its files.
    for k in 0.. {
        for power_cut in [false, true] {
            let (fs, mut writer, mut reader, claimed) = setup();
            let base = fs.ops();
            fs.crash_at(base + k);
            let finished = compact_then_seal(&mut writer);
            drop(writer);
            let context = format!("phase 1, crash at op {k}, power cut {power_cut}");
            if power_cut {
                let image = fs.crash();
                drop(reader);
                check_after(&image, None, &claimed, &context);
            } else {
                fs.restart();
                assert!(
                    claimed.is_subset(&on_disk(&fs)),
                    "{context}: a claimed file went with the crash"
                );
                check_after(&fs, Some(&mut reader), &claimed, &context);
                kills += 1;
            }
            points += 1;
            if finished && power_cut {
                census(&format!(
                    "pinned removal, phase 1: {points} crash points ({kills} kills), the work \
                     takes {k} operations"
                ));
                return phase_two(points);
            }
        }
    }
}

/// Phase 2: the reader has moved on; the writer is crashed at every operation of the removal
/// that waited for it.
fn phase_two(mut points: u64) {
    for k in 0.. {
        let (fs, mut writer, mut reader, _) = setup();
        writer.compact().unwrap();
        assert!(writer.removals_pending() > 0, "the reader pins the inputs");
        reader.refresh().unwrap();
        let claimed = live(&reader);
        let base = fs.ops();
        fs.crash_at(base + k);
        let finished = writer.seal().is_ok() && writer.removals_pending() == 0;
        drop(writer);
        fs.restart();
        let context = format!("phase 2, crash at op {k}");
        check_after(&fs, Some(&mut reader), &claimed, &context);
        points += 1;
        if finished {
            census(&format!(
                "pinned removal, phase 2: the removal takes {k} operations; {points} crash \
                 points in all"
            ));
            assert!(k > 0, "the removal did something to crash");
            return;
        }
    }
}
