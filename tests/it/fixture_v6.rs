//! Stores written before a format change open and answer unchanged (#48). The fixture
//! `tests/fixtures/store-v6/` was written by `examples/make_fixture_v6.rs` with the engine of
//! segment format 6 and manifest format 3, from the formulas and schedule in
//! `fixture_v6/data.rs`; every later engine must open a copy of it (writable and read-only),
//! find it clean, answer every query, survey and fold exactly as those formulas say (recomputed
//! here by plain loops, never by strata), keep its floors, and take a new barrier and a
//! compaction on top of it.
//!
//! The committed fixture is never opened in place (an open takes a lock and may heal); each
//! test copies it into a temporary folder first. It is never regenerated either: the first test
//! pins its formats byte by byte, so a fixture rewritten by a later engine fails it.

#[allow(
    dead_code,
    reason = "the schedule's steps are the generator's; this reads their effects"
)]
mod data;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use data::{
    BARRIERS, BATCHES_PER_BARRIER, EVENTS, EVENTS_HORIZON, EventRow, LADDER, PROBES,
    PROBES_HORIZON, ProbeRow, RETIRE_AFTER, RETIRED, SOURCES, TRACKS, all_event_rows,
    all_probe_rows, event_batch, event_position, probe_batch, probe_position,
};
use strata::index::TrackKey;
use strata::index::catalog::RawFloor;
use strata::recover::fsck::{self, Status};
use strata::segment::vfs::RealFs;
use strata::{
    Aggregate, Bucket, Config, EngineError, FieldKind, FieldStat, Num, Point, Row, Store,
    StoredRow, Stream, StreamDecl, Value, View,
};

/// The committed fixture.
fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/store-v6")
}

/// Folders the store had, empty, when it was written: git keeps no empty folder, so the copy
/// makes them again.
const EMPTY_FOLDERS: [&str; 2] = ["tmp", "quarantine"];

/// Copies the committed fixture to `to` (which must not exist), file by file.
fn copy_fixture(to: &Path) {
    fn copy(from: &Path, to: &Path) {
        std::fs::create_dir(to).unwrap();
        for entry in std::fs::read_dir(from).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            if entry.file_type().unwrap().is_dir() {
                copy(&path, &to.join(entry.file_name()));
            } else {
                std::fs::copy(&path, to.join(entry.file_name())).unwrap();
            }
        }
    }
    copy(&fixture(), to);
    for folder in EMPTY_FOLDERS {
        let path = to.join(folder);
        if !path.exists() {
            std::fs::create_dir(path).unwrap();
        }
    }
}

/// Every file under `root` and its bytes, by relative path.
fn files(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut pending = vec![root.to_owned()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else {
                let relative = path.strip_prefix(root).unwrap().to_owned();
                out.insert(relative, std::fs::read(&path).unwrap());
            }
        }
    }
    out
}

fn probes() -> StreamDecl {
    Stream::new(PROBES)
        .field("run", FieldKind::Str)
        .field("probe", FieldKind::U64)
        .field("t", FieldKind::U64)
        .field("temp", FieldKind::F64)
        .field("delta", FieldKind::I64)
        .field("total", FieldKind::U64)
        .field("note", FieldKind::Str)
        .field("blob", FieldKind::Bytes)
        .track(["run", "probe"])
        .axis("t")
        .ladder(LADDER.0, LADDER.1)
        .build()
        .unwrap()
}

fn events() -> StreamDecl {
    Stream::new(EVENTS)
        .field("source", FieldKind::Str)
        .field("seq", FieldKind::U64)
        .field("level", FieldKind::I64)
        .field("msg", FieldKind::Str)
        .track(["source"])
        .build()
        .unwrap()
}

fn probe_values(row: &ProbeRow) -> Row {
    let (run, probe) = TRACKS[row.track];
    vec![
        Value::Str(run.to_owned()),
        Value::U64(probe),
        Value::U64(row.t),
        Value::F64(row.temp),
        Value::I64(row.delta),
        Value::U64(row.total),
        Value::Str(row.note.clone()),
        Value::Bytes(row.blob.clone()),
    ]
}

fn event_values(row: &EventRow) -> Row {
    vec![
        Value::Str(SOURCES[row.source].to_owned()),
        Value::U64(row.seq),
        Value::I64(row.level),
        Value::Str(row.msg.clone()),
    ]
}

fn stored(position: u64, values: Row) -> StoredRow {
    StoredRow { position, values }
}

/// The labels of probe track `track`, as a selection.
fn labels(track: usize) -> [String; 2] {
    let (run, probe) = TRACKS[track];
    [run.to_owned(), probe.to_string()]
}

fn selection(labels: &[String]) -> Vec<&str> {
    labels.iter().map(String::as_str).collect()
}

/// The measured fields of `probes`: (field index, name), in declaration order.
const MEASURED: [(u16, &str); 3] = [(3, "temp"), (4, "delta"), (5, "total")];

/// Measured field `field` (an index of `MEASURED`) of `row`.
fn measured(row: &ProbeRow, field: usize) -> Num {
    match field {
        0 => Num::F64(row.temp),
        1 => Num::I64(row.delta),
        _ => Num::U64(row.total),
    }
}

fn as_f64(value: Num) -> f64 {
    match value {
        Num::F64(v) => v,
        Num::I64(v) => v as f64,
        Num::U64(v) => v as f64,
    }
}

/// Whether `a < b` for two values of one field.
fn less(a: Num, b: Num) -> bool {
    match (a, b) {
        (Num::F64(a), Num::F64(b)) => a < b,
        (Num::I64(a), Num::I64(b)) => a < b,
        (Num::U64(a), Num::U64(b)) => a < b,
        _ => panic!("values of two kinds in one field"),
    }
}

/// Level-`level` cell width of the probes' ladder.
fn width(level: u8) -> u64 {
    LADDER.0 * LADDER.1.pow(u32::from(level))
}

fn cell(t: u64, level: u8) -> u64 {
    t / width(level)
}

/// The fold of `rows` (in publish order) of one field, by hand: first and last by axis (an
/// axis tie keeps the earlier row first and the later row last), min and max by value (a tie
/// keeps the earlier row), count, sum and sum of squares (exact: see data.rs).
fn fold_by_hand(field: usize, rows: &[&ProbeRow]) -> Option<Bucket> {
    let (&first_row, rest) = rows.split_first()?;
    let point = |row: &ProbeRow| Point {
        axis: row.t,
        value: measured(row, field),
    };
    let v = as_f64(measured(first_row, field));
    let mut b = Bucket {
        field: MEASURED[field].0,
        first: point(first_row),
        last: point(first_row),
        min: point(first_row),
        max: point(first_row),
        count: 1,
        sum: v,
        sum_sq: v * v,
    };
    for &row in rest {
        let p = point(row);
        if p.axis < b.first.axis {
            b.first = p;
        }
        if p.axis >= b.last.axis {
            b.last = p;
        }
        if less(p.value, b.min.value) {
            b.min = p;
        }
        if less(b.max.value, p.value) {
            b.max = p;
        }
        let v = as_f64(p.value);
        b.count += 1;
        b.sum += v;
        b.sum_sq += v * v;
    }
    Some(b)
}

/// What `fold` of `aggregate` answers over `rows` (level folds; percentiles by nearest rank).
fn stats_by_hand(rows: &[&ProbeRow], aggregate: Aggregate) -> Vec<FieldStat> {
    MEASURED
        .iter()
        .enumerate()
        .map(|(field, &(_, name))| {
            let value = if rows.is_empty() {
                (aggregate == Aggregate::Count).then_some(Num::U64(0))
            } else if let Aggregate::Percentile(rank) = aggregate {
                let mut values: Vec<Num> = rows.iter().map(|r| measured(r, field)).collect();
                values.sort_by(|a, b| as_f64(*a).total_cmp(&as_f64(*b)));
                let nth = (usize::from(rank.get()) * values.len())
                    .div_ceil(100)
                    .max(1);
                Some(values[nth - 1])
            } else {
                let b = fold_by_hand(field, rows).unwrap();
                Some(match aggregate {
                    Aggregate::Min => b.min.value,
                    Aggregate::Max => b.max.value,
                    Aggregate::Mean => Num::F64(b.sum / b.count as f64),
                    Aggregate::Sum => Num::F64(b.sum),
                    Aggregate::Count => Num::U64(b.count),
                    Aggregate::Percentile(_) => unreachable!(),
                })
            };
            FieldStat {
                field: name.to_owned(),
                value,
            }
        })
        .collect()
}

/// The rows the fixture's schedule published, and those a test published on top: what every
/// answer is computed from.
struct Expected {
    probes: Vec<ProbeRow>,
    events: Vec<EventRow>,
}

impl Expected {
    fn fixture() -> Expected {
        Expected {
            probes: all_probe_rows(),
            events: all_event_rows(),
        }
    }

    fn track(&self, track: usize) -> Vec<&ProbeRow> {
        self.probes.iter().filter(|r| r.track == track).collect()
    }

    /// The raw floors: the trim's position one past its horizon, at the axis of the track's
    /// first row above it; the retirement's one past the last position published before it,
    /// at one past the track's last axis value.
    fn floors(&self, track: usize) -> RawFloor {
        if track == RETIRED {
            let hi = self.track(RETIRED).last().unwrap().t;
            RawFloor {
                position: probe_position((RETIRE_AFTER + 1) * BATCHES_PER_BARRIER - 1) + 1,
                axis: Some(hi + 1),
            }
        } else {
            let first_kept = self
                .track(track)
                .into_iter()
                .find(|r| r.position > PROBES_HORIZON)
                .unwrap();
            RawFloor {
                position: PROBES_HORIZON + 1,
                axis: Some(first_kept.t),
            }
        }
    }
}

/// Everything the store answers, checked against `expected`.
fn check_answers(store: &View, expected: &Expected) {
    check_declarations(store);
    check_floors(store, expected);
    check_queries(store, expected);
    check_surveys(store, expected);
    check_folds(store, expected);
}

fn check_declarations(store: &View) {
    let declared: Vec<&StreamDecl> = store.streams().collect();
    assert_eq!(declared, [&events(), &probes()], "declarations");
    assert_eq!(store.declaration(PROBES).unwrap(), &probes());
    assert_eq!(store.declaration(EVENTS).unwrap(), &events());
}

fn check_floors(store: &View, expected: &Expected) {
    let catalog = store.catalog();
    // Probes: every track has a floor; only the retired one has level floors.
    let recorded: BTreeSet<TrackKey> = catalog
        .floors(PROBES, &TrackKey::ROOT)
        .map(|(track, _)| track.clone())
        .collect();
    let tracks: BTreeSet<TrackKey> = (0..TRACKS.len())
        .map(|t| TrackKey::encode(&labels(t)).unwrap())
        .collect();
    assert_eq!(recorded, tracks, "the probes' tracks with floors");
    for track in 0..TRACKS.len() {
        let key = TrackKey::encode(&labels(track)).unwrap();
        let floors = catalog.floors_of(PROBES, &key).unwrap();
        assert_eq!(
            floors.raw,
            Some(expected.floors(track)),
            "raw floor of {key:?}"
        );
        if track == RETIRED {
            // Each level's floor is past the cell holding the track's last axis value.
            let hi = expected.track(RETIRED).last().unwrap().t;
            assert!(floors.levels.contains_key(&0), "{:?}", floors.levels);
            for (&level, &floor) in &floors.levels {
                assert_eq!(floor, (cell(hi, level) + 1) * width(level), "level {level}");
            }
        } else {
            assert!(floors.levels.is_empty(), "{key:?}: {:?}", floors.levels);
        }
    }
    // Events: both sources trimmed, with no axis.
    let floors: Vec<(TrackKey, RawFloor)> = catalog
        .floors(EVENTS, &TrackKey::ROOT)
        .map(|(track, floors)| {
            assert!(floors.levels.is_empty());
            (track.clone(), floors.raw.unwrap())
        })
        .collect();
    let want: Vec<(TrackKey, RawFloor)> = SOURCES
        .iter()
        .map(|source| {
            let floor = RawFloor {
                position: EVENTS_HORIZON + 1,
                axis: None,
            };
            (TrackKey::encode(&[source]).unwrap(), floor)
        })
        .collect();
    assert_eq!(floors, want, "events' floors");
}

fn is_floor(result: Result<impl std::fmt::Debug, EngineError>, floor: u64, what: &str) {
    match result {
        Err(EngineError::Floor { floor: got, .. }) => assert_eq!(got, floor, "{what}"),
        other => panic!("{what}: {other:?}, not a refusal at floor {floor}"),
    }
}

fn check_queries(store: &View, expected: &Expected) {
    let last_probe = expected.probes.last().unwrap().position;
    let last_event = expected.events.last().unwrap().position;
    assert_eq!(store.watermark(PROBES, &[]).unwrap(), Some(last_probe));
    assert_eq!(store.watermark(EVENTS, &[]).unwrap(), Some(last_event));
    // Each probe track: every row at or above its raw floor, and nothing beneath it.
    for track in 0..TRACKS.len() {
        let labels = labels(track);
        let sel = selection(&labels);
        let floor = expected.floors(track).position;
        let want: Vec<StoredRow> = expected
            .track(track)
            .into_iter()
            .filter(|r| r.position >= floor)
            .map(|r| stored(r.position, probe_values(r)))
            .collect();
        assert_eq!(
            store.query(PROBES, &sel, floor..).unwrap(),
            want,
            "{labels:?}"
        );
        is_floor(
            store.query(PROBES, &sel, ..),
            floor,
            "probes beneath a floor",
        );
        is_floor(
            store.query(PROBES, &sel, floor - 1..),
            floor,
            "probes, floor - 1",
        );
    }
    if expected.probes.len() == all_probe_rows().len() {
        // The retired track holds nothing above its floor (until a test publishes there).
        let labels = labels(RETIRED);
        let floor = expected.floors(RETIRED).position;
        assert_eq!(
            store.query(PROBES, &selection(&labels), floor..).unwrap(),
            []
        );
    }
    // A prefix (the run r1: two tracks) and the whole stream, in publish order across tracks;
    // the whole stream answers from its highest floor, the retired track's.
    let r1: Vec<StoredRow> = expected
        .probes
        .iter()
        .filter(|r| TRACKS[r.track].0 == "r1" && r.position > PROBES_HORIZON)
        .map(|r| stored(r.position, probe_values(r)))
        .collect();
    assert_eq!(
        store.query(PROBES, &["r1"], PROBES_HORIZON + 1..).unwrap(),
        r1
    );
    let highest = expected.floors(RETIRED).position;
    let all: Vec<StoredRow> = expected
        .probes
        .iter()
        .filter(|r| r.position >= highest)
        .map(|r| stored(r.position, probe_values(r)))
        .collect();
    assert!(!all.is_empty());
    assert_eq!(store.query(PROBES, &[], highest..).unwrap(), all);
    is_floor(
        store.query(PROBES, &[], ..highest),
        highest,
        "probes unnarrowed",
    );
    // A bounded window of positions inside one track.
    let window = probe_position(8)..=probe_position(12);
    let want: Vec<StoredRow> = expected
        .track(0)
        .into_iter()
        .filter(|r| window.contains(&r.position))
        .map(|r| stored(r.position, probe_values(r)))
        .collect();
    assert_eq!(
        store.query(PROBES, &["r1", "1"], window).unwrap(),
        want,
        "a window"
    );
    // Events: per source and the whole stream, from the trim's floor.
    let floor = EVENTS_HORIZON + 1;
    for (source, name) in SOURCES.iter().enumerate() {
        let want: Vec<StoredRow> = expected
            .events
            .iter()
            .filter(|r| r.source == source && r.position >= floor)
            .map(|r| stored(r.position, event_values(r)))
            .collect();
        assert_eq!(store.query(EVENTS, &[name], floor..).unwrap(), want);
        is_floor(store.query(EVENTS, &[name], ..), floor, "events");
    }
    let want: Vec<StoredRow> = expected
        .events
        .iter()
        .filter(|r| r.position >= floor)
        .map(|r| stored(r.position, event_values(r)))
        .collect();
    assert_eq!(store.query(EVENTS, &[], floor..).unwrap(), want);
    // A stream without an axis has no levels.
    assert!(store.survey(EVENTS, &[], .., 400).is_err());
    assert!(store.fold(EVENTS, &[], .., Aggregate::Count).is_err());
}

/// The survey of `rows` (every row a track ever held: a trim keeps levels) over `[lo, hi]`
/// within `budget`, by hand: the finest level whose cells over the span fit the budget (4
/// points a bucket per measured field), each cell the span touches that holds rows one bucket.
fn survey_by_hand(rows: &[&ProbeRow], [lo, hi]: [u64; 2], budget: u64) -> (u8, Vec<Vec<Bucket>>) {
    let cells_per_field = budget / (4 * MEASURED.len() as u64);
    let level = (0u8..=20)
        .find(|&level| cell(hi, level) - cell(lo, level) < cells_per_field)
        .unwrap();
    let mut by_cell: BTreeMap<u64, Vec<&ProbeRow>> = BTreeMap::new();
    for &row in rows {
        let c = cell(row.t, level);
        if (cell(lo, level)..=cell(hi, level)).contains(&c) {
            by_cell.entry(c).or_default().push(row);
        }
    }
    let fields = (0..MEASURED.len())
        .map(|field| {
            by_cell
                .values()
                .map(|rows| fold_by_hand(field, rows).unwrap())
                .collect()
        })
        .collect();
    (level, fields)
}

fn check_surveys(store: &View, expected: &Expected) {
    for track in (0..TRACKS.len()).filter(|&t| t != RETIRED) {
        let labels = labels(track);
        let sel = selection(&labels);
        let rows = expected.track(track);
        let span = [rows.first().unwrap().t, rows.last().unwrap().t];
        // The whole track (the span clamped to its rows), a window across the trim's floor,
        // and a narrow one; each at two budgets.
        let windows = [
            (None, span),
            (Some([rows[100].t + 1, rows[400].t - 2]), [0; 2]),
            (Some([rows[200].t + 3, rows[230].t]), [0; 2]),
        ];
        for (bounded, whole) in windows {
            for budget in [120, 4000] {
                let (survey, asked) = match bounded {
                    None => (store.survey(PROBES, &sel, .., budget).unwrap(), whole),
                    Some([lo, hi]) => (
                        store.survey(PROBES, &sel, lo..=hi, budget).unwrap(),
                        [lo, hi],
                    ),
                };
                let (level, fields) = survey_by_hand(&rows, asked, budget);
                let what = format!("{labels:?} {asked:?} budget {budget}");
                assert_eq!(survey.span, Some(asked), "{what}");
                assert_eq!((survey.level, survey.group), (level, 1), "{what}");
                let names: Vec<&str> = survey.fields.iter().map(|f| f.field.as_str()).collect();
                assert_eq!(names, MEASURED.map(|(_, name)| name), "{what}");
                for (got, want) in survey.fields.iter().zip(fields) {
                    assert_eq!(got.buckets, want, "{what}: {}", got.field);
                }
            }
        }
    }
    // The retired track's levels are retired too.
    let labels = labels(RETIRED);
    assert!(matches!(
        store.survey(PROBES, &selection(&labels), .., 400),
        Err(EngineError::Floor { .. })
    ));
}

fn check_folds(store: &View, expected: &Expected) {
    let aggregates = [
        Aggregate::Min,
        Aggregate::Max,
        Aggregate::Mean,
        Aggregate::Sum,
        Aggregate::Count,
    ];
    for track in (0..TRACKS.len()).filter(|&t| t != RETIRED) {
        let labels = labels(track);
        let sel = selection(&labels);
        let rows = expected.track(track);
        // Level folds answer beneath the raw floor (a trim keeps levels), over whole level-0
        // cells of the range.
        let [lo, hi] = [rows[37].t + 1, rows[311].t + 2];
        let in_cells = |r: &&ProbeRow| (cell(lo, 0)..=cell(hi, 0)).contains(&cell(r.t, 0));
        let window: Vec<&ProbeRow> = rows.iter().copied().filter(in_cells).collect();
        for aggregate in aggregates {
            let what = format!("{labels:?} {aggregate:?}");
            assert_eq!(
                store.fold(PROBES, &sel, .., aggregate).unwrap(),
                stats_by_hand(&rows, aggregate),
                "{what} .."
            );
            assert_eq!(
                store.fold(PROBES, &sel, lo..=hi, aggregate).unwrap(),
                stats_by_hand(&window, aggregate),
                "{what} {lo}..={hi}"
            );
        }
        // Percentiles read the raw rows of the exact range, from the raw floor's axis on.
        let floor_axis = expected.floors(track).axis.unwrap();
        let top = rows.last().unwrap().t - 5;
        let raw: Vec<&ProbeRow> = rows
            .iter()
            .copied()
            .filter(|r| (floor_axis..=top).contains(&r.t))
            .collect();
        for rank in [0, 50, 99, 100] {
            let aggregate = Aggregate::p(rank);
            assert_eq!(
                store
                    .fold(PROBES, &sel, floor_axis..=top, aggregate)
                    .unwrap(),
                stats_by_hand(&raw, aggregate),
                "{labels:?} p{rank}"
            );
        }
        is_floor(
            store.fold(PROBES, &sel, floor_axis - 1..=top, Aggregate::p(50)),
            floor_axis,
            "a percentile beneath the raw floor",
        );
    }
    // The run r1: its two tracks folded together.
    let [lo, hi] = [101, 1703];
    let both: Vec<&ProbeRow> = expected
        .probes
        .iter()
        .filter(|r| TRACKS[r.track].0 == "r1")
        .filter(|r| (cell(lo, 0)..=cell(hi, 0)).contains(&cell(r.t, 0)))
        .collect();
    for aggregate in aggregates {
        assert_eq!(
            store.fold(PROBES, &["r1"], lo..=hi, aggregate).unwrap(),
            stats_by_hand(&both, aggregate),
            "r1 {aggregate:?}"
        );
    }
    let labels = labels(RETIRED);
    assert!(matches!(
        store.fold(PROBES, &selection(&labels), .., Aggregate::Sum),
        Err(EngineError::Floor { .. })
    ));
}

/// The fixture is what it claims to be, byte by byte: segment files of version 6 and a current
/// manifest of format 3, rewritten (a generation above 1 that begins with its preamble) and
/// with frames appended after the part written whole. A fixture rewritten by a later engine
/// fails here.
#[test]
fn fixture_v6_holds_segment_format_6_and_a_rewritten_manifest_of_format_3() {
    let root = fixture();
    let all = files(&root);
    let segments: Vec<&Vec<u8>> = all
        .iter()
        .filter(|(path, _)| path.starts_with("seg"))
        .map(|(_, bytes)| bytes)
        .collect();
    assert!(segments.len() >= 4, "{} segment files", segments.len());
    for bytes in &segments {
        assert_eq!(&bytes[..8], b"STRATASG");
        assert_eq!(bytes[8..12], 6u32.to_le_bytes(), "segment version");
        assert_eq!(&bytes[bytes.len() - 16..bytes.len() - 8], b"STRATAFT");
    }
    let manifests: Vec<(&PathBuf, &Vec<u8>)> = all
        .iter()
        .filter(|(path, _)| path.to_str().unwrap().starts_with("manifest-"))
        .collect();
    let (name, current) = manifests.last().unwrap();
    let generation: u32 = name.to_str().unwrap()["manifest-".len()..].parse().unwrap();
    assert!(generation > 1, "generation {generation}");
    assert_eq!(&current[..8], b"STRATAMF");
    assert_eq!(current[8..12], 3u32.to_le_bytes(), "manifest format");
    // The preamble: the first frame, body version 3, one entry of tag 13.
    assert_eq!(
        current[16..20],
        30u32.to_le_bytes(),
        "the preamble's frame length"
    );
    assert_eq!(
        (current[24], current[25..29].to_vec(), current[29]),
        (3, 1u32.to_le_bytes().to_vec(), 13)
    );
    let whole_len = u64::from_le_bytes(current[30..38].try_into().unwrap());
    assert!(
        (current.len() as u64) > whole_len,
        "{} bytes, {whole_len} written whole: no frame appended after the rewrite",
        current.len()
    );
    let total: usize = all.values().map(Vec::len).sum();
    assert!(total < 400 << 10, "{total} bytes");
}

/// A copy opens writable with nothing to heal and answers every read from the formulas; a
/// second copy opens read-only, answers the same and is left byte for byte as it was; fsck
/// with `--verify` finds nothing in either.
#[test]
fn fixture_v6_opens_and_answers_from_its_formulas() {
    let scratch = tempfile::tempdir().unwrap();
    let expected = Expected::fixture();

    let writable = scratch.path().join("writable");
    copy_fixture(&writable);
    let report = fsck::check(&RealFs::open(&writable).unwrap(), true);
    assert_eq!(report.status, Status::Clean, "{}", fsck::render(&report));
    assert!(report.verified.unwrap().iter().all(|f| f.ok));
    let store = Store::open(&writable, Config::default(), &[probes(), events()]).unwrap();
    assert!(store.boot_report().is_clean(), "{:?}", store.boot_report());
    check_answers(&store, &expected);
    drop(store);
    // Declared by nothing: opened as recorded.
    let store = Store::open(&writable, Config::default(), &[]).unwrap();
    check_answers(&store, &expected);
    drop(store);

    let read_only = scratch.path().join("read-only");
    copy_fixture(&read_only);
    let before = files(&read_only);
    let store = Store::open_read_only(&read_only, Config::default(), &[]).unwrap();
    assert!(store.boot_report().is_clean(), "{:?}", store.boot_report());
    check_answers(&store, &expected);
    drop(store);
    assert!(
        files(&read_only) == before,
        "a read-only open changed the copy"
    );
}

/// A copy takes a new barrier (the formulas' next rows, in the live tracks of both streams), a
/// compaction over old files and new, and reopens: every answer is the formulas' over the old
/// rows and the new.
#[test]
fn fixture_v6_takes_a_barrier_and_a_compaction_and_reopens() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().join("store");
    copy_fixture(&dir);
    let config = Config::default().compact_inputs_min(2).compact_files_max(2);
    let mut store = Store::open(&dir, config.clone(), &[probes(), events()]).unwrap();
    let mut expected = Expected::fixture();
    let batch = BARRIERS * BATCHES_PER_BARRIER;
    let new_probes = probe_batch(batch);
    let new_events = event_batch(BARRIERS);
    let rows: Vec<Row> = new_probes.iter().map(probe_values).collect();
    store.publish(PROBES, probe_position(batch), &rows).unwrap();
    let rows: Vec<Row> = new_events.iter().map(event_values).collect();
    store
        .publish(EVENTS, event_position(BARRIERS), &rows)
        .unwrap();
    let watermarks = store.seal().unwrap();
    assert_eq!(watermarks[PROBES], Some(probe_position(batch)));
    assert_eq!(watermarks[EVENTS], Some(event_position(BARRIERS)));
    expected.probes.extend(new_probes);
    expected.events.extend(new_events);
    check_answers(&store, &expected);
    store.compact().unwrap();
    check_answers(&store, &expected);
    drop(store);
    let report = fsck::check(&RealFs::open(&dir).unwrap(), true);
    assert_eq!(report.status, Status::Clean, "{}", fsck::render(&report));
    let store = Store::open(&dir, config, &[probes(), events()]).unwrap();
    assert!(store.boot_report().is_clean(), "{:?}", store.boot_report());
    check_answers(&store, &expected);
}
