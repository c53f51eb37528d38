//! Errors keep their kind up to the API: a damaged segment names its file and offset through
//! `source()`, a resource that ran out is exhaustion (not damage), a stopped supervisor is
//! `Stopped` (not a poisoned store), and a full disk during a seal leaves nothing behind for the
//! next open to quarantine.

use std::error::Error as _;
use std::ops::Bound;

use strata::segment::vfs::{Fault, RenameMode, SimFs, Vfs};
use strata::segment::{Resource, SegmentError};
use strata::{
    BeneathWindow, Config, EngineError, FieldKind, Row, Series as _, ServeConfig, Served, Store,
    Stream, StreamDecl, Value,
};

use crate::support::sim;

fn capture() -> StreamDecl {
    Stream::new("capture")
        .field("run", FieldKind::Str)
        .field("t", FieldKind::U64)
        .field("value", FieldKind::F64)
        .track(["run"])
        .axis("t")
        .build()
        .unwrap()
}

fn row(run: &str, t: u64, value: f64) -> Row {
    vec![Value::Str(run.into()), Value::U64(t), Value::F64(value)]
}

/// A store on `fs` holding one sealed barrier: two rows at position 1.
fn one_barrier(fs: &SimFs) -> Store {
    let mut store = Store::open_or_create_in(sim(fs), Config::default(), &[capture()]).unwrap();
    store
        .publish("capture", 1, &[row("a", 1, 1.0), row("b", 1, 2.0)])
        .unwrap();
    store.seal().unwrap();
    store
}

/// The `SegmentError` beneath `error`, found through `source()` as an embedder would.
fn segment_error(error: &EngineError) -> &SegmentError {
    error
        .source()
        .and_then(|s| s.downcast_ref::<SegmentError>())
        .unwrap_or_else(|| panic!("no SegmentError beneath {error:?}"))
}

#[test]
fn unreadable_keeps_the_segment_error_and_its_offset() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    let config = Config::default();
    let mut store = Store::open_or_create(&root, config.clone(), &[capture()]).unwrap();
    let rows: Vec<Row> = (0..200).map(|t| row("a", t, t as f64)).collect();
    store.publish("capture", 1, &rows).unwrap();
    store.seal().unwrap();
    drop(store);
    let seg = std::fs::read_dir(root.join("seg"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let mut bytes = std::fs::read(&seg).unwrap();
    // A byte inside the first block, the positions' (the header is 32 bytes; the raw columns
    // are packed small, and the directory and footer sit at the end).
    let at = 40;
    bytes[at] ^= 0x40;
    std::fs::write(&seg, &bytes).unwrap();

    let store = Store::open(&root, config, &[]).unwrap();
    let error = store.query("capture", &[], ..).unwrap_err();
    assert!(matches!(error, EngineError::Unreadable { .. }), "{error:?}");
    let source = segment_error(&error);
    assert!(source.path().starts_with("seg/"), "{source:?}");
    let offset = source.offset().expect("bad bytes name their offset");
    assert!(offset < bytes.len() as u64, "{source:?}");
    assert!(
        matches!(
            source,
            SegmentError::Checksum { .. } | SegmentError::Malformed { .. }
        ),
        "{source:?}"
    );
    assert!(error.exhausted().is_none(), "damage is not exhaustion");
    // The words still say where.
    assert!(
        error.to_string().contains(&format!("offset {offset}")),
        "{error}"
    );
}

#[test]
fn mapping_exhaustion_is_reported_as_exhaustion_not_damage() {
    for (fault, resource, kind) in [
        (
            Fault::Enomem,
            Resource::Memory,
            std::io::ErrorKind::OutOfMemory,
        ),
        (
            Fault::Emfile,
            Resource::FileDescriptors,
            std::io::Error::from_raw_os_error(24).kind(),
        ),
    ] {
        let fs = SimFs::new();
        drop(one_barrier(&fs));
        // A fresh open: no segment is mapped yet, so the read must map one.
        let store = Store::open_in(sim(&fs), Config::default(), &[]).unwrap();
        fs.fail_maps(Some(fault));
        let error = store.query("capture", &[], ..).unwrap_err();
        assert!(
            matches!(
                &error,
                EngineError::Exhausted { resource: r, barrier: None, .. } if *r == resource
            ),
            "{fault:?}: {error:?}"
        );
        assert_eq!(error.exhausted(), Some(resource));
        assert_eq!(error.io_kind(), Some(kind), "{error:?}");
        let source = segment_error(&error);
        assert_eq!(
            source.io_error().and_then(std::io::Error::raw_os_error),
            Some(fault.raw_os_error())
        );
        assert!(error.to_string().contains("out of"), "{error}");
        assert!(!error.to_string().contains("unreadable"), "{error}");
        // Nothing is damaged: once the resource is back, the same store reads.
        fs.fail_maps(None);
        assert_eq!(store.query("capture", &[], ..).unwrap().len(), 2);
        // Through the adapter surface it is exhaustion too, not "unreadable".
        assert!(matches!(
            BeneathWindow::from(error),
            BeneathWindow::Exhausted(_)
        ));
    }
}

#[test]
fn a_stopped_served_answers_stopped_not_poisoned() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    runtime.block_on(async {
        let fs = SimFs::new();
        let store = Store::open_or_create_in(sim(&fs), Config::default(), &[capture()]).unwrap();
        let mut served = Served::spawn(
            store,
            ServeConfig::default().seal_interval(None).lane_max(8),
        );
        served.stop().await.unwrap();
        let publish = served
            .publish("capture", 1, vec![row("a", 1, 1.0)])
            .await
            .unwrap_err();
        assert!(matches!(publish, EngineError::Stopped), "{publish:?}");
        let again = served.stop().await.unwrap_err();
        assert!(matches!(again, EngineError::Stopped), "{again:?}");
        assert!(!again.to_string().contains("poisoned"), "{again}");
        assert_eq!(BeneathWindow::from(again), BeneathWindow::Unserved);
        let rows = served
            .rows("capture", &[], Bound::Unbounded, Bound::Unbounded)
            .await;
        assert_eq!(rows, Err(BeneathWindow::Unserved));
        // The store was closed, not damaged: it opens again.
        drop(Store::open_in(sim(&fs), Config::default(), &[]).unwrap());
    });
}

/// Every operation of the second barrier fails in turn with ENOSPC (and EIO), with and without
/// a short write first: the seal reports what it needed and what is intact, leaves neither a
/// temp, nor an unclaimed segment, nor a partial manifest frame, poisons the store, and the
/// reopened store quarantines nothing and seals again.
#[test]
fn a_full_disk_during_a_seal_leaves_nothing_to_quarantine_and_the_store_seals_again() {
    for mode in [RenameMode::Noreplace, RenameMode::LinkUnlink] {
        let probe = SimFs::with_rename_mode(mode);
        let mut store = one_barrier(&probe);
        store.publish("capture", 2, &[row("a", 2, 3.0)]).unwrap();
        let before = probe.ops();
        store.seal().unwrap();
        let barrier_end = probe.ops();
        drop(store);
        for fail_op in before..barrier_end {
            // A failed write may land a prefix first (a short write): the segment's temp then
            // holds part of the segment, the manifest part of a frame.
            let faults = [
                (Fault::Enospc, 0),
                (Fault::Enospc, 5),
                (Fault::Eio, 0),
                (Fault::Eio, 5),
            ];
            for (fault, landed) in faults {
                let case = format!("{mode:?} op {fail_op} {fault:?} landing {landed}");
                let fs = SimFs::with_rename_mode(mode);
                let mut store = one_barrier(&fs);
                store.publish("capture", 2, &[row("a", 2, 3.0)]).unwrap();
                assert_eq!(fs.ops(), before, "{case}");
                fs.fail_at_after_writing(fail_op, fault, landed);
                let error = store.seal().unwrap_err();
                full_disk_error(&error, fault, &case);
                // Only a frame that reached the file whole (its sync, the barrier's last
                // operation, failed) may claim the barrier: then its segment stays for boot.
                let n_segments = fs.paths().iter().filter(|p| p.starts_with("seg/")).count();
                let kept = n_segments == 2;
                assert_eq!(kept, fail_op + 1 == barrier_end, "{case}: {:?}", fs.paths());
                if let EngineError::Exhausted {
                    barrier: Some(barrier),
                    ..
                } = &error
                {
                    assert_eq!(barrier.cleaned_up, !kept, "{case}");
                }
                // Poisoned until reopened, reads included; the cause keeps its kind.
                let again = store.seal().unwrap_err();
                assert!(matches!(again, EngineError::Poisoned { .. }), "{case}");
                assert_eq!(
                    again.exhausted(),
                    (fault == Fault::Enospc).then_some(Resource::DiskSpace),
                    "{case}"
                );
                let read = store.query("capture", &[], ..).unwrap_err();
                assert!(matches!(read, EngineError::Poisoned { .. }), "{case}");
                drop(store);

                let tmp = fs.paths().into_iter().filter(|p| p.starts_with("tmp/"));
                assert_eq!(tmp.count(), 0, "{case}: {:?}", fs.paths());
                let mut store = Store::open_in(sim(&fs), Config::default(), &[]).unwrap();
                assert!(
                    store.boot_report().findings.is_empty(),
                    "{case}: {:?}",
                    store.boot_report().findings
                );
                assert!(
                    !fs.paths().iter().any(|p| p.starts_with("quarantine/")),
                    "{case}: {:?}",
                    fs.paths()
                );
                let sealed = if kept { Some(2) } else { Some(1) };
                assert_eq!(store.watermark("capture", &[]).unwrap(), sealed, "{case}");
                store.publish("capture", 3, &[row("a", 3, 4.0)]).unwrap();
                assert_eq!(store.seal().unwrap()["capture"], Some(3), "{case}");
                let n_rows = if kept { 4 } else { 3 };
                assert_eq!(
                    store.query("capture", &[], ..).unwrap().len(),
                    n_rows,
                    "{case}"
                );
            }
        }
    }
}

/// Checks the error of a seal that failed with `fault`.
fn full_disk_error(error: &EngineError, fault: Fault, case: &str) {
    assert_eq!(
        segment_error(error)
            .io_error()
            .and_then(std::io::Error::raw_os_error),
        Some(fault.raw_os_error()),
        "{case}: {error:?}"
    );
    match (fault, error) {
        (
            Fault::Enospc,
            EngineError::Exhausted {
                resource: Resource::DiskSpace,
                barrier: Some(barrier),
                ..
            },
        ) => {
            assert_eq!(barrier.store, "a simulated file system", "{case}");
            assert!(barrier.segment.starts_with("seg/"), "{case}");
            assert!(barrier.needed_bytes > 0, "{case}");
            assert_eq!(barrier.intact.len(), 1, "{case}");
            assert_eq!(barrier.intact[0].stream, "capture");
            assert_eq!(barrier.intact[0].rows_sealed, 2, "{case}");
            assert_eq!(barrier.intact[0].watermark, Some(1), "{case}");
            let words = error.to_string();
            for said in [
                "out of disk space",
                "a simulated file system",
                "needed",
                "2 rows sealed, watermark 1",
            ] {
                assert!(words.contains(said), "{case}: {said:?} not in {words}");
            }
        }
        // The same cleanup, without the exhaustion's report.
        (Fault::Eio, EngineError::Storage(_)) => {}
        _ => panic!("{case}: {error:?}"),
    }
}

#[test]
fn a_missing_segment_is_unreadable_naming_the_file() {
    let fs = SimFs::new();
    drop(one_barrier(&fs));
    let seg = fs
        .paths()
        .into_iter()
        .find(|p| p.starts_with("seg/"))
        .unwrap();
    fs.remove(&seg).unwrap();
    let store = Store::open_in(sim(&fs), Config::default(), &[]).unwrap();
    let error = store.query("capture", &[], ..).unwrap_err();
    let source = segment_error(&error);
    assert!(
        matches!(source, SegmentError::Mismatch { path, what } if *path == seg && what == "the file is missing"),
        "{source:?}"
    );
    assert!(error.exhausted().is_none());
    assert_eq!(
        error.to_string(),
        format!("unreadable: {seg}: differs from the manifest's record: the file is missing")
    );
}

#[test]
fn a_full_disk_while_declaring_at_open_leaves_no_torn_tail() {
    let fs = SimFs::new();
    drop(Store::create_in(sim(&fs), Config::default(), &[]).unwrap());
    // The open's first numbered operation is the declaration frame's write.
    fs.fail_at_after_writing(fs.ops(), Fault::Enospc, 5);
    let error = Store::open_or_create_in(sim(&fs), Config::default(), &[capture()]).unwrap_err();
    assert_eq!(error.exhausted(), Some(Resource::DiskSpace), "{error:?}");
    let store = Store::open_or_create_in(sim(&fs), Config::default(), &[capture()]).unwrap();
    assert!(
        store.boot_report().findings.is_empty(),
        "{:?}",
        store.boot_report().findings
    );
    assert_eq!(store.stream("capture"), Some(&capture()));
}
