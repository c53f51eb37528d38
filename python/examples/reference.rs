//! The Rust side of python/bench/bench.py: the same work the Python benchmark times, done
//! through the facade directly, on the same arrays (raw little-endian files the script wrote),
//! so the script reports Python's rate as a ratio of Rust's measured in the same run.
//!
//! `reference publish DIR T.u64 V.f64 CHUNK` creates a store in DIR and publishes the rows in
//! batches of CHUNK rows, one seal a batch, as the script's `publish` + `seal` loop does;
//! `reference query DIR` reads every row back with `query_runs`, touching every value.
//! Each prints one JSON line: `{"seconds": S, "rows": N}`.

use std::time::Instant;

use strata::segment::Column;
use strata::{Config, FieldKind, Store, Stream, Values};

fn read_words(path: &str) -> Vec<[u8; 8]> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    bytes
        .chunks_exact(8)
        .map(|w| w.try_into().expect("8 bytes"))
        .collect()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["publish", dir, t, v, chunk] => {
            let t: Vec<u64> = read_words(t).into_iter().map(u64::from_le_bytes).collect();
            let v: Vec<f64> = read_words(v).into_iter().map(f64::from_le_bytes).collect();
            let chunk: usize = chunk.parse().expect("CHUNK is a count of rows");
            let decl = Stream::new("s")
                .field("run", FieldKind::Str)
                .field("t", FieldKind::U64)
                .field("v", FieldKind::F64)
                .track(["run"])
                .axis("t")
                .build()
                .expect("a declaration");
            let mut store = Store::create(dir, Config::default(), &[decl]).expect("a store");
            let start = Instant::now();
            for (position, (t, v)) in (1..).zip(t.chunks(chunk).zip(v.chunks(chunk))) {
                store
                    .publish_columns("s", position, &["a"], &[Values::U64(t), Values::F64(v)])
                    .expect("staged");
                store.seal().expect("sealed");
            }
            let seconds = start.elapsed().as_secs_f64();
            println!("{{\"seconds\": {seconds}, \"rows\": {}}}", t.len());
        }
        ["query", dir] => {
            let store = Store::open_read_only(dir, Config::default(), &[]).expect("a store");
            let start = Instant::now();
            let (mut rows, mut positions, mut axis, mut sum) = (0usize, 0u64, 0u64, 0.0f64);
            for run in store.query_runs("s", &[], ..).expect("a read") {
                let run = run.expect("a run");
                rows += run.len();
                positions = run.positions().fold(positions, u64::wrapping_add);
                let t = run.axis().expect("an axis");
                axis = t.iter().fold(axis, |a, x| a.wrapping_add(x.get()));
                let Some(Column::F64(v)) = run.column(2) else {
                    panic!("v is an f64 column")
                };
                sum += v.iter().map(|x| x.get()).sum::<f64>();
            }
            let seconds = start.elapsed().as_secs_f64();
            // The sums keep the reads from being optimised away, and say they read real rows.
            println!(
                "{{\"seconds\": {seconds}, \"rows\": {rows}, \"check\": [{positions}, {axis}, {sum}]}}"
            );
        }
        _ => {
            eprintln!("usage: reference publish DIR T.u64 V.f64 CHUNK | reference query DIR");
            std::process::exit(2);
        }
    }
}
