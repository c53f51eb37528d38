//! Measures what a ladder shape costs and buys, to choose the default: cell bytes per row
//! (storage), survey latency and resolution at budget 4000, and cells a full-range mean reads.
//!
//! `cargo run --release --example ladder_sizing` (1,000,000 rows, axis = sample index).

use std::time::Instant;

use strata::segment::vfs::SimFs;
use strata::{Aggregate, Config, FieldKind, Row, Store, Stream, Value};

const N: u64 = 1_000_000;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("rows {N}, one partition, one measured f64 field, axis = sample index");
    println!(
        "{:>5} {:>6} | {:>10} {:>10} | {:>9} {:>7} {:>7} | {:>10}",
        "base", "fanout", "seg bytes", "cell B/row", "survey us", "level", "buckets", "mean cells"
    );
    for (base, fanout) in [
        (1, 8),
        (16, 4),
        (16, 8),
        (64, 4),
        (64, 8),
        (64, 16),
        (256, 8),
    ] {
        let decl = Stream::new("s")
            .field("t", FieldKind::U64)
            .field("v", FieldKind::F64)
            .axis("t")
            .ladder(base, fanout)
            .build()?;
        let fs = SimFs::new();
        let config = Config::default().staged_bytes_max(1 << 30);
        let mut store = Store::open_or_create_in(std::sync::Arc::new(fs), config, &[decl])?;
        let rows: Vec<Row> = (0..N)
            .map(|t| vec![Value::U64(t), Value::F64((t as f64 * 0.01).sin())])
            .collect();
        store.publish("s", 0, &rows)?;
        store.seal()?;
        let bytes = store.metrics().bytes_sealed;
        // Raw columns: position, ordinal, axis, value (8 bytes each) plus their block crcs.
        let raw = N * 32;
        let cell_bytes_per_row = (bytes.saturating_sub(raw)) as f64 / N as f64;
        let runs = 50;
        let start = Instant::now();
        let mut survey = None;
        for _ in 0..runs {
            survey = Some(store.survey("s", &[], .., 4000)?);
        }
        let micros = start.elapsed().as_micros() / runs;
        let survey = survey.ok_or("no survey")?;
        let before = store.metrics().cells_read;
        store.fold("s", &[], .., Aggregate::Mean)?;
        let mean_cells = store.metrics().cells_read - before;
        println!(
            "{base:>5} {fanout:>6} | {bytes:>10} {cell_bytes_per_row:>10.2} | {micros:>9} {:>7} {:>7} | {mean_cells:>10}",
            survey.level,
            survey.fields[0].buckets.len()
        );
    }
    Ok(())
}
