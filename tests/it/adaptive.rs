//! Levels stored only from where they pay (`LevelStorage::Adaptive`) answer exactly as levels
//! stored whole: the same rows, barriers and compaction steps into two stores, one of each,
//! and every survey, level fold and level's cells compared bit for bit (`Debug` of the cells,
//! which prints each float's exact value), including the level a survey answers at.

use proptest::prelude::*;
use strata::segment::vfs::SimFs;
use strata::{Aggregate, Config, FieldKind, LevelStorage, Row, Store, Stream, StreamDecl, Value};

use crate::support::sim;

fn decl() -> StreamDecl {
    Stream::new("m")
        .field("run", FieldKind::Str)
        .field("t", FieldKind::U64)
        .field("f", FieldKind::F64)
        .field("u", FieldKind::U64)
        .track(["run"])
        .axis("t")
        .ladder(1, 2)
        .build()
        .unwrap()
}

fn store(storage: LevelStorage) -> Store {
    // Merges come early and often, so that merged files (and their stored straddling cells)
    // are read, and merged again. Only the file-count rule merges (the size-tiered one never
    // gathers 16 inputs here), so both stores take the same steps: their files' sizes differ,
    // and a merge of other runs would add other partial sums.
    let config = Config::default()
        .level_storage(storage)
        .compact_inputs_min(16)
        .compact_files_max(2);
    Store::open_or_create_in(sim(&SimFs::new()), config, &[decl()]).unwrap()
}

/// One barrier's rows, as `(track, axis step, value)`: tenths plus a third, so that sums round
/// and a regrouped sum would show.
type Batch = Vec<(usize, u64, i32)>;

fn spacing() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(1u64),
        Just(1_000),
        Just(1_000_000),
        Just(1_000_000_000),
        1u64..5_000
    ]
}

fn batches() -> impl Strategy<Value = Vec<Batch>> {
    prop::collection::vec(
        prop::collection::vec((0usize..2, 0u64..3, -50i32..50), 1..120),
        1..12,
    )
}

const TRACKS: [&str; 2] = ["a", "b"];

/// Publishes each batch and seals it, compacting after every other barrier if `compact`.
fn load(store: &mut Store, spacing: u64, batches: &[Batch], compact: bool) -> u64 {
    let mut t = [1u64 << 40; 2];
    for (position, batch) in (0u64..).zip(batches) {
        let rows: Vec<Row> = batch
            .iter()
            .map(|&(track, step, v)| {
                // Irregular gaps: a step of 0 repeats the axis, 1 and 2 are one or two spacings
                // (the second track runs sixteen times slower).
                let gap = step * spacing * if track == 1 { 16 } else { 1 };
                t[track] += gap;
                vec![
                    Value::Str(TRACKS[track].to_owned()),
                    Value::U64(t[track]),
                    Value::F64(f64::from(v) / 10.0 + 1.0 / 3.0),
                    Value::U64(u64::from(v.unsigned_abs())),
                ]
            })
            .collect();
        store.publish("m", position, &rows).unwrap();
        store.seal().unwrap();
        if compact && position % 2 == 1 {
            store.compact().unwrap();
        }
    }
    t[0].max(t[1])
}

/// Everything a level read answers over `[lo, hi]`, in words.
fn answers(store: &Store, lo: u64, hi: u64, budgets: &[u64]) -> Vec<String> {
    let mut out = Vec::new();
    for selection in [&[][..], &["a"][..], &["b"][..]] {
        for &budget in budgets {
            let survey = store.survey("m", selection, lo..=hi, budget);
            out.push(format!("survey {selection:?} {budget}: {survey:?}"));
        }
        for aggregate in [
            Aggregate::Min,
            Aggregate::Max,
            Aggregate::Mean,
            Aggregate::Sum,
            Aggregate::Count,
        ] {
            let fold = store.fold("m", selection, lo..=hi, aggregate);
            out.push(format!("fold {selection:?} {aggregate:?}: {fold:?}"));
        }
        for level in (0..=40).step_by(3) {
            let cells = store.level_cells("m", selection, "f", level, lo..=hi);
            out.push(format!("cells {selection:?} {level}: {cells:?}"));
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn adaptive_levels_answer_as_levels_stored_whole(
        spacing in spacing(),
        batches in batches(),
        compact in any::<bool>(),
        cut in (0u64..=1000, 0u64..=1000),
        budgets in prop::collection::vec(8u64..4_000, 1..4),
    ) {
        let mut whole = store(LevelStorage::Whole);
        let mut adaptive = store(LevelStorage::Adaptive);
        let end = load(&mut whole, spacing, &batches, compact);
        load(&mut adaptive, spacing, &batches, compact);
        let start = 1u64 << 40;
        let span = end - start;
        let (a, b) = (cut.0.min(cut.1), cut.0.max(cut.1));
        let lo = start + span / 1000 * a;
        let hi = start + span / 1000 * b;
        for (lo, hi) in [(0, u64::MAX), (start, end), (lo, hi)] {
            let expected = answers(&whole, lo, hi, &budgets);
            let got = answers(&adaptive, lo, hi, &budgets);
            for (e, g) in expected.iter().zip(&got) {
                if e != g {
                    let at = e.bytes().zip(g.bytes()).take_while(|(a, b)| a == b).count();
                    let from = e[..at].rfind("Cell {").unwrap_or(at.saturating_sub(200));
                    let head = &e[..e.len().min(60)];
                    let (e_at, g_at) = (&e[from..e.len().min(at + 200)], &g[from..g.len().min(at + 200)]);
                    prop_assert!(false, "{head}: over {lo}..={hi}, whole has\n{e_at}\nadaptive has\n{g_at}");
                }
            }
        }
    }
}

/// The point of it: with rows a spacing of 1,000 apart on a grid of 1 x 2, levels stored
/// whole cost several times the rows, and adaptive ones an eighth of them at most.
#[test]
fn adaptive_levels_cost_at_most_an_eighth_of_the_rows() {
    let mut bytes = Vec::new();
    for storage in [LevelStorage::Whole, LevelStorage::Adaptive] {
        let mut store = store(storage);
        let rows: Vec<Row> = (0..100_000u64)
            .map(|i| {
                vec![
                    Value::Str("a".to_owned()),
                    Value::U64(1_700_000_000_000_000 + i * 1_000),
                    Value::F64((i as f64 * 0.001).sin()),
                    Value::U64(i % 7),
                ]
            })
            .collect();
        store.publish("m", 0, &rows).unwrap();
        store.seal().unwrap();
        bytes.push(store.metrics().bytes_sealed);
    }
    // Raw columns: axis, f and u at 8 bytes a row (positions and ordinals are runs).
    let raw = 100_000 * 24;
    let (whole, adaptive) = (bytes[0], bytes[1]);
    assert!(whole > 5 * raw, "levels stored whole: {whole} bytes");
    assert!(
        adaptive <= raw + raw / 8 + 4096,
        "adaptive levels: {adaptive} bytes for {raw} bytes of rows"
    );
}

/// A trim retires raw rows from raw reads; the levels a file folds from them live on as
/// stored ones do (the file keeps its rows while its levels live), so beneath the trim every
/// level read answers as from levels stored whole, and percentiles are refused alike.
#[test]
fn beneath_a_trim_folded_levels_answer_as_stored_ones() {
    let mut stores = [store(LevelStorage::Whole), store(LevelStorage::Adaptive)];
    let start = 1_700_000_000_000_000u64;
    for store in &mut stores {
        for barrier in 0..12u64 {
            let rows: Vec<Row> = (0..4_000u64)
                .map(|i| {
                    let n = barrier * 4_000 + i;
                    vec![
                        Value::Str("a".to_owned()),
                        Value::U64(start + n * 1_000),
                        Value::F64((n as f64 * 0.01).sin() + 1.0 / 3.0),
                        Value::U64(n % 11),
                    ]
                })
                .collect();
            store.publish("m", barrier, &rows).unwrap();
            store.seal().unwrap();
        }
        store.trim_to("m", 5).unwrap();
        store.compact().unwrap();
    }
    let [whole, adaptive] = &stores;
    assert!(
        adaptive.metrics().bytes_sealed * 4 < whole.metrics().bytes_sealed,
        "the adaptive store stores fewer levels"
    );
    let floor = start + 6 * 4_000 * 1_000;
    let end = start + 12 * 4_000 * 1_000;
    for (lo, hi) in [
        (start, end),
        (start, floor + 5_000_000),
        (floor - 3, end),
        (0, u64::MAX),
    ] {
        same(
            &answers(adaptive, lo, hi, &[16, 400, 4_000, 40_000]).join("\n"),
            &answers(whole, lo, hi, &[16, 400, 4_000, 40_000]).join("\n"),
            "beneath and above the trim",
        );
        let percentile =
            |store: &Store| format!("{:?}", store.fold("m", &[], lo..=hi, Aggregate::p(50)));
        same(&percentile(adaptive), &percentile(whole), "percentiles");
    }
}

/// Panics naming where two long answers first differ, and a little of each from there.
fn same(got: &str, expected: &str, what: &str) {
    if got != expected {
        let at = got
            .bytes()
            .zip(expected.bytes())
            .take_while(|(a, b)| a == b)
            .count();
        let from = at.saturating_sub(120);
        let cut = |s: &str| s[from.min(s.len())..s.len().min(at + 200)].to_owned();
        panic!(
            "{what}: differs at byte {at}\n got {}\nwant {}",
            cut(got),
            cut(expected)
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]
    /// #50: a survey that folds rows at read time (beneath the levels a file stores, packed in
    /// chunks of 1,024 cells since format 8) answers bit for bit as the same survey over a
    /// store that stores every level whole, over windows of every width on thousands of rows a
    /// track: a random walk to 3 decimals (sums that round), rows at a generated spacing with
    /// repeats and gaps, sealed in a few barriers and compacted.
    #[test]
    fn a_survey_folding_rows_at_read_time_answers_as_one_over_levels_stored_whole(
        spacing in spacing(),
        n_rows in 2_000usize..12_000,
        barriers in 1usize..5,
        seed in any::<u64>(),
        windows in prop::collection::vec((0u64..=1000, 0u64..=1000, 8u64..7_000), 6),
    ) {
        let mut rng = seed | 1;
        let mut next = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let mut level = [0i64; 2];
        let rows: Vec<(usize, u64, f64)> = (0..n_rows)
            .map(|_| {
                let r = next();
                let track = (r % 2) as usize;
                level[track] += ((r >> 8) % 2001).cast_signed() - 1000;
                // Mostly one spacing, sometimes a repeat or a gap of ten.
                let step = match (r >> 40) % 16 { 0 => 0, 1 => 10, _ => 1 };
                (track, step, level[track] as f64 / 1000.0)
            })
            .collect();
        let per_barrier = n_rows.div_ceil(barriers);
        let batches: Vec<Vec<(usize, u64, f64)>> =
            rows.chunks(per_barrier).map(<[_]>::to_vec).collect();
        let load = |store: &mut Store| {
            let mut t = [1u64 << 40; 2];
            for (position, batch) in (0u64..).zip(&batches) {
                let rows: Vec<Row> = batch
                    .iter()
                    .map(|&(track, step, v)| {
                        t[track] += step * spacing;
                        vec![
                            Value::Str(TRACKS[track].to_owned()),
                            Value::U64(t[track]),
                            Value::F64(v),
                            Value::U64(v.to_bits() % 1000),
                        ]
                    })
                    .collect();
                store.publish("m", position, &rows).unwrap();
                store.seal().unwrap();
            }
            store.compact().unwrap();
            t[0].max(t[1])
        };
        let mut whole = store(LevelStorage::Whole);
        let mut adaptive = store(LevelStorage::Adaptive);
        let end = load(&mut whole);
        prop_assert_eq!(load(&mut adaptive), end);
        let start = 1u64 << 40;
        let span = end - start;
        for (a, b, budget) in windows {
            let (a, b) = (a.min(b), a.max(b));
            let (lo, hi) = (start + span / 1000 * a, start + span / 1000 * b);
            for selection in [&[][..], &["a"][..], &["b"][..]] {
                let expected = whole.survey("m", selection, lo..=hi, budget).unwrap();
                let got = adaptive.survey("m", selection, lo..=hi, budget).unwrap();
                prop_assert_eq!(
                    format!("{got:?}"),
                    format!("{expected:?}"),
                    "survey {:?} of {}..={} at {}",
                    selection,
                    lo,
                    hi,
                    budget
                );
            }
        }
    }
}
