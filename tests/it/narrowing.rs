//! A refusal beneath a floor names a narrowing that answers the rows there are (#47 item 4),
//! over generated stores: tracks published, trimmed and retired at random, then every read of
//! every selection. Whatever a read is refused with, following it is answered, never refused
//! again, and answers rows: a range from the floor when the refusal says something lies at or
//! above it, and each track it names over the range it gives. And it names every track that
//! holds rows for that read (up to its bound), which the model (`MemorySeries`, fed alike)
//! says independently of the store's catalog.

use proptest::prelude::*;
use strata::segment::vfs::SimFs;
use strata::{
    Aggregate, Config, EngineError, FieldKind, MemorySeries, Narrowing, Num, Row, Series, Store,
    Stream, StreamDecl, TRACKS_NAMED_MAX, Value,
};

use crate::support::{ready, sim};

const S: &str = "capture";
const RUNS: [&str; 2] = ["r1", "r2"];
const PROBES: [&str; 2] = ["p0", "p5"];

fn decl() -> StreamDecl {
    Stream::new(S)
        .field("run", FieldKind::Str)
        .field("probe", FieldKind::Str)
        .field("t", FieldKind::U64)
        .field("v", FieldKind::F64)
        .track(["run", "probe"])
        .axis("t")
        .ladder(4, 2)
        .build()
        .unwrap()
}

/// What happens to the store, in order.
#[derive(Clone, Debug)]
enum Op {
    /// A batch at the next position: a row for each of these tracks (run, probe indices), each
    /// `step` further along its axis.
    Publish(Vec<(usize, usize)>, u64),
    Seal,
    /// Trims every row at or below this share (0..100) of the positions published.
    Trim(u64),
    /// Retires a track, or a run (`None` probe).
    Retire(usize, Option<usize>),
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    let track = (0..RUNS.len(), 0..PROBES.len());
    let op = prop_oneof![
        6 => (prop::collection::vec(track, 1..4), 1..40u64).prop_map(|(t, s)| Op::Publish(t, s)),
        2 => Just(Op::Seal),
        1 => (0..100u64).prop_map(Op::Trim),
        1 => (0..RUNS.len(), prop::option::of(0..PROBES.len())).prop_map(|(r, p)| Op::Retire(r, p)),
    ];
    prop::collection::vec(op, 1..40)
}

/// The store and its model, fed `ops` alike (a trim or a retire seals first in both).
fn build(ops: &[Op]) -> (Store, MemorySeries) {
    let fs = SimFs::new();
    let mut store = Store::open_or_create_in(sim(&fs), Config::default(), &[decl()]).unwrap();
    let mut model = MemorySeries::new(&[decl()]);
    let mut position = 0u64;
    let mut axis = [[0u64; 2]; 2];
    for op in ops {
        match op {
            Op::Publish(tracks, step) => {
                let rows: Vec<Row> = tracks
                    .iter()
                    .map(|&(r, p)| {
                        axis[r][p] += step;
                        vec![
                            Value::Str(RUNS[r].into()),
                            Value::Str(PROBES[p].into()),
                            Value::U64(axis[r][p]),
                            Value::F64(f64::from(u32::try_from(axis[r][p] % 97).unwrap())),
                        ]
                    })
                    .collect();
                // A publish beneath a floor (a retired track's axis) is refused by both.
                let a = store.publish(S, position, &rows);
                let b = ready(model.publish(S, position, rows));
                assert_eq!(
                    a.is_ok(),
                    b.is_ok(),
                    "publish at {position}: {a:?} vs {b:?}"
                );
                position += 1;
            }
            Op::Seal => {
                store.seal().unwrap();
                ready(model.seal(S, &[])).unwrap();
            }
            Op::Trim(share) => {
                store.seal().unwrap();
                ready(model.seal(S, &[])).unwrap();
                let horizon = position * share / 100;
                let a = store.trim_to(S, horizon).map(drop);
                let b = model.trim_to(S, horizon).map(drop);
                assert_eq!(a.is_ok(), b.is_ok(), "trim to {horizon}: {a:?} vs {b:?}");
            }
            Op::Retire(r, p) => {
                store.seal().unwrap();
                ready(model.seal(S, &[])).unwrap();
                let track: Vec<&str> = [Some(RUNS[*r]), p.map(|p| PROBES[p])]
                    .into_iter()
                    .flatten()
                    .collect();
                let a = store.retire(S, &track).map(drop);
                let b = model.retire(S, &track).map(drop);
                assert_eq!(format!("{a:?}"), format!("{b:?}"), "retire {track:?}");
            }
        }
    }
    store.seal().unwrap();
    ready(model.seal(S, &[])).unwrap();
    (store, model)
}

/// The reads each selection is asked: a query of every position, a survey, a level fold and a
/// percentile over the whole axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Read {
    Query,
    Survey,
    Count,
    Median,
}

const READS: [Read; 4] = [Read::Query, Read::Survey, Read::Count, Read::Median];

/// How many rows (or cells) a read of `selection` over `[lo, hi]` answers, or its refusal.
fn answer(
    store: &Store,
    read: Read,
    selection: &[&str],
    lo: Option<u64>,
    hi: Option<u64>,
) -> Result<u64, EngineError> {
    let range = (
        lo.map_or(std::ops::Bound::Unbounded, std::ops::Bound::Included),
        hi.map_or(std::ops::Bound::Unbounded, std::ops::Bound::Included),
    );
    match read {
        Read::Query => Ok(store.query(S, selection, range)?.len() as u64),
        Read::Survey => Ok(store.survey(S, selection, range, 64)?.fields[0]
            .buckets
            .iter()
            .map(|b| b.count)
            .sum()),
        Read::Count => match store.fold(S, selection, range, Aggregate::Count)?[0].value {
            Some(Num::U64(n)) => Ok(n),
            other => panic!("a count is a u64: {other:?}"),
        },
        Read::Median => Ok(u64::from(
            store.fold(S, selection, range, Aggregate::p(50))?[0]
                .value
                .is_some(),
        )),
    }
}

/// The tracks under `selection` that hold rows this read reaches, by the model: those a read
/// of the track alone answers anything of, from the lowest start it is answered from.
fn holding(model: &MemorySeries, read: Read, selection: &[&str]) -> Vec<Vec<String>> {
    let mut tracks = Vec::new();
    for run in RUNS {
        for probe in PROBES {
            let track = [run, probe];
            if !track.starts_with(selection) {
                continue;
            }
            if model_holds(model, read, &track) {
                tracks.push(vec![run.to_owned(), probe.to_owned()]);
            }
        }
    }
    tracks
}

/// Whether the model answers rows of `track` alone for `read`, from some start (it follows its
/// own floors: a refusal's floor is where the next try starts).
fn model_holds(model: &MemorySeries, read: Read, track: &[&str]) -> bool {
    let mut from = 0u64;
    for _ in 0..80 {
        let answered = match read {
            Read::Query => model.query(S, track, from..).map(|rows| !rows.is_empty()),
            Read::Survey => model
                .survey(S, track, from.., 64)
                .map(|s| s.fields[0].buckets.iter().any(|b| b.count > 0)),
            Read::Count => model
                .fold(S, track, from.., Aggregate::Count)
                .map(|s| s[0].value.is_some_and(|v| v != Num::U64(0))),
            Read::Median => model
                .fold(S, track, from.., Aggregate::p(50))
                .map(|s| s[0].value.is_some()),
        };
        match answered {
            Ok(held) => return held,
            Err(EngineError::Floor { floor, .. }) if floor > from && floor != u64::MAX => {
                from = floor;
            }
            Err(EngineError::Floor { .. } | EngineError::UnknownTrack { .. }) => return false,
            Err(error) => panic!("{read:?} of {track:?} from {from}: {error}"),
        }
    }
    panic!("{read:?} of {track:?}: the model's floors never settled")
}

/// Checks one refusal's narrowing against what following it answers.
fn follow(
    store: &Store,
    model: &MemorySeries,
    read: Read,
    selection: &[&str],
    floor: u64,
    narrowing: &Narrowing,
) -> Result<(), TestCaseError> {
    let what = format!("{read:?} of {selection:?} refused at {floor}: {narrowing:?}");
    // Something at or above the floor: a range from it is answered, with rows.
    let from = answer(store, read, selection, Some(floor), None);
    if narrowing.above {
        prop_assert!(
            matches!(from, Ok(n) if n > 0),
            "{}: from the floor: {:?}",
            what,
            from
        );
    } else if let Ok(n) = from {
        prop_assert!(n == 0, "{}: rows lie at or above the floor: {}", what, n);
    }
    // Each track named is answered over its range, with rows.
    for held in &narrowing.tracks {
        let track: Vec<&str> = held.track.iter().map(String::as_str).collect();
        prop_assert!(track.starts_with(selection), "{}: {:?}", what, track);
        let [lo, hi] = held.range;
        prop_assert!(lo <= hi, "{}", what);
        let got = answer(store, read, &track, Some(lo), Some(hi));
        prop_assert!(
            matches!(got, Ok(n) if n > 0),
            "{}: following {:?} {}..={}: {:?}",
            what,
            track,
            lo,
            hi,
            got
        );
    }
    // Every track that holds rows for this read is named, up to the bound.
    let want = holding(model, read, selection);
    let named: Vec<Vec<String>> = narrowing.tracks.iter().map(|h| h.track.clone()).collect();
    let shown = want.len().min(TRACKS_NAMED_MAX);
    prop_assert_eq!(&named[..], &want[..shown], "{}", what);
    prop_assert_eq!(narrowing.more, want.len() > TRACKS_NAMED_MAX, "{}", what);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 96,
        ..ProptestConfig::default()
    })]

    #[test]
    fn every_floor_refusal_names_a_narrowing_that_answers_the_rows_there_are(ops in ops()) {
        let (store, model) = build(&ops);
        let selections: [&[&str]; 5] = [&[], &["r1"], &["r2"], &["r1", "p0"], &["r2", "p5"]];
        for selection in selections {
            for read in READS {
                match answer(&store, read, selection, None, None) {
                    Err(EngineError::Floor { floor, narrowing, .. }) => {
                        follow(&store, &model, read, selection, floor, &narrowing)?;
                    }
                    Ok(_) | Err(EngineError::UnknownTrack { .. }) => {}
                    Err(error) => prop_assert!(false, "{:?} of {:?}: {}", read, selection, error),
                }
            }
        }
    }
}

/// #47's reproducer in the library: two tracks of 1,000 rows each (axis 0, 10, ...), one
/// retired. Each read of the stream is refused naming the other track and the range it holds,
/// with no range from the floor offered (nothing lies above it); following the track answers
/// its 1,000 rows.
#[test]
fn after_a_retire_the_refusal_names_the_live_track_and_following_it_answers_its_rows() {
    let fs = SimFs::new();
    let mut store = Store::open_or_create_in(sim(&fs), Config::default(), &[decl()]).unwrap();
    for i in 0..1000u64 {
        let rows: Vec<Row> = ["p0", "p5"]
            .into_iter()
            .map(|probe| {
                vec![
                    Value::Str("r1".into()),
                    Value::Str(probe.into()),
                    Value::U64(i * 10),
                    Value::F64(1.0),
                ]
            })
            .collect();
        store.publish(S, i + 1, &rows).unwrap();
        if i % 100 == 99 {
            store.seal().unwrap();
        }
    }
    store.retire(S, &["r1", "p0"]).unwrap();
    for read in READS {
        let Err(EngineError::Floor {
            floor,
            unit,
            narrowing,
            ..
        }) = answer(&store, read, &[], None, None)
        else {
            panic!("{read:?} of the whole stream is refused beneath the retired track's floor");
        };
        assert!(
            !narrowing.above,
            "{read:?}: nothing lies at or above {floor}"
        );
        assert_eq!(narrowing.tracks.len(), 1, "{read:?}: {narrowing:?}");
        let held = &narrowing.tracks[0];
        assert_eq!(held.track, ["r1", "p5"]);
        let want = if read == Read::Query {
            [1, 1000]
        } else {
            [0, 9990]
        };
        assert_eq!(held.range, want, "{read:?} ({unit})");
        let rows = answer(&store, read, &["r1", "p5"], Some(want[0]), Some(want[1])).unwrap();
        let expected = match read {
            Read::Median => 1,
            _ => 1000,
        };
        assert_eq!(rows, expected, "{read:?}: following the refusal");
        let said = EngineError::Floor {
            stream: S.into(),
            selection: Vec::new(),
            floor,
            unit,
            narrowing: narrowing.clone(),
        }
        .to_string();
        assert!(
            said.contains(&format!(
                "nothing under it lies at or above {unit} {floor}: read one track alone: r1,p5 \
                 ({unit}s {} to {})",
                want[0], want[1]
            )),
            "{said}"
        );
        assert!(!said.contains("narrow the range"), "{said}");
    }
}
