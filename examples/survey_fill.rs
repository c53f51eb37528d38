//! Fill and cells read against row count, for both survey plans: the table and plot in
//! docs/levels.md ("Spending a budget").
//!
//! `cargo run --release --example survey_fill`. One partition, one measured f64 field, axis =
//! sample index, ladder 64 x 4 (the default before #29), budget 4000 points (1,000 buckets), full range.
//! Row counts run 10^4 to 10^8 in steps of 1, 2 and 5 (and a few between), so the figures are
//! not only those where the fanout happens to fit.
//!
//! For every row count the plans come from `strata::levels` (no read), with the buckets they
//! answer and the cells of their level over the span (what a read of a partition stored in one
//! file reads). Up to `MEASURED_ROWS_MAX` rows each row count is also stored for real (sealed in
//! one barrier) and surveyed under both plans, and the example checks that the store answered
//! that many buckets and read that many cells (`Metrics::cells_read`).

use strata::levels::{LEVELS_MAX, Ladder, Plan, SurveyFill, groups_touched, plan_with};
use strata::{Config, FieldKind, Store, Stream, Value};

const BUDGET: u64 = 4000;
/// Base and fanout of the stores surveyed.
const LADDER: (u64, u64) = (64, 4);
/// Row counts up to this are stored and surveyed for real; above it only planned.
const MEASURED_ROWS_MAX: u64 = 2_000_000;

fn main() {
    // The ladder docs/levels.md's table was measured with (the default before #29).
    let ladder = Ladder::new(LADDER.0, LADDER.1).expect("a ladder");
    let mut counts = Vec::new();
    for exp in 4..=8u32 {
        for step in [1u64, 2, 3, 5, 7] {
            let n = step * 10u64.pow(exp);
            if n <= 100_000_000 {
                counts.push(n);
            }
        }
    }
    println!(
        "| rows | finest: level | buckets | cells read | spend: level x group | buckets | cells read | measured |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|:---|");
    let mut plot: Vec<(u64, u128, u128)> = Vec::new();
    for &n in &counts {
        let span = [0, n - 1];
        let at = |fill| {
            let p = plan_with(fill, &ladder, LEVELS_MAX, span, BUDGET, 1).expect("a plan");
            (p, answered(&ladder, &p, span), cells(&ladder, &p, span))
        };
        let (finest, finest_n, finest_cells) = at(SurveyFill::FinestLevel);
        let (spend, spend_n, spend_cells) = at(SurveyFill::Spend);
        let measured = if n <= MEASURED_ROWS_MAX {
            let dir = store_of(n);
            for (fill, want_n, want_cells) in [
                (SurveyFill::FinestLevel, finest_n, finest_cells),
                (SurveyFill::Spend, spend_n, spend_cells),
            ] {
                let (got_n, got_cells) = survey(dir.path(), fill);
                assert_eq!(
                    (u128::from(got_n), u128::from(got_cells)),
                    (want_n, want_cells),
                    "{n} rows, {fill:?}: the store answered other than planned"
                );
            }
            "stored, agrees"
        } else {
            "planned"
        };
        println!(
            "| {n} | {} | {finest_n} | {finest_cells} | {} x {} | {spend_n} | {spend_cells} | {measured} |",
            finest.level, spend.level, spend.group
        );
        plot.push((n, finest_n, spend_n));
    }
    println!();
    print_plot(&plot);
}

/// Buckets a plan answers over a span that rows fill: the groups it touches.
fn answered(ladder: &Ladder, p: &Plan, [lo, hi]: [u64; 2]) -> u128 {
    groups_touched(ladder.cell(lo, p.level), ladder.cell(hi, p.level), p.group)
}

/// Cells of the plan's level over the span: what a one-file read of them reads.
fn cells(ladder: &Ladder, p: &Plan, [lo, hi]: [u64; 2]) -> u128 {
    u128::from(ladder.cell(hi, p.level) - ladder.cell(lo, p.level)) + 1
}

/// A store of `n` rows (axis = sample index) sealed in one barrier, closed.
fn store_of(n: u64) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temp dir");
    let decl = Stream::new("series")
        .field("t", FieldKind::U64)
        .field("value", FieldKind::F64)
        .axis("t")
        .ladder(LADDER.0, LADDER.1)
        .build()
        .expect("a declaration");
    let config = Config::default().staged_bytes_max(1 << 30);
    let mut store = Store::open_or_create(dir.path(), config, &[decl]).expect("a store");
    let mut t = 0;
    while t < n {
        let end = (t + 100_000).min(n);
        let rows: Vec<Vec<Value>> = (t..end)
            .map(|t| vec![Value::U64(t), Value::F64((t as f64 * 0.001).sin())])
            .collect();
        store.publish("series", t, &rows).expect("publish");
        t = end;
    }
    store.seal().expect("seal");
    drop(store);
    dir
}

/// Opens the store in `dir` surveying as `fill`; answers buckets and cells read by one full
/// survey.
fn survey(dir: &std::path::Path, fill: SurveyFill) -> (u64, u64) {
    let config = Config::default().survey_fill(fill);
    let reopened = Store::open(dir, config, &[]).expect("reopen");
    let before = reopened.metrics().cells_read;
    let survey = reopened.survey("series", &[], .., BUDGET).expect("survey");
    let n = survey.fields[0].buckets.len() as u64;
    (n, reopened.metrics().cells_read - before)
}

/// Fill (buckets / 1,000, rounded down to a tenth) against rows, one point per row count
/// (three columns each, so the axis is log-like but not to scale): `f` the finest level,
/// `s` spending, `*` both.
fn print_plot(points: &[(u64, u128, u128)]) {
    const WIDE: usize = 3;
    let rows = 10;
    let cols = points.len() * WIDE;
    let mut grid = vec![vec![' '; cols]; rows + 1];
    for (x, &(_, f, s)) in points.iter().enumerate() {
        let y = |n: u128| rows - usize::try_from(n * rows as u128 / 1000).expect("small");
        let (yf, ys) = (y(f), y(s));
        grid[yf][x * WIDE + 1] = 'f';
        grid[ys][x * WIDE + 1] = if ys == yf { '*' } else { 's' };
    }
    println!("fill (buckets of 1,000), default ladder 64x4, budget 4000: f finest level, s spend");
    for (i, line) in grid.iter().enumerate() {
        let pct = 100 - i * 10;
        println!("{pct:>4}% |{}", line.iter().collect::<String>());
    }
    println!("      +{}", "-".repeat(cols));
    let mut axis = vec![' '; cols];
    for (x, &(n, ..)) in points.iter().enumerate() {
        if n.to_string().starts_with('1') {
            for (k, ch) in format!("1e{}", n.ilog10()).chars().enumerate() {
                axis[x * WIDE + k] = ch;
            }
        }
    }
    println!("       {}  rows", axis.iter().collect::<String>());
}
