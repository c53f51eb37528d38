//! `--remote file://… --remote-parquet` (#33): DuckDB, a reader no code here wrote, globs the
//! Parquet objects the publishes left beside the store's own (`parquet/STREAM/*.parquet`), and
//! its `count(*)`, `min`, `max` and `sum` per track equal strata's folds, after barriers and
//! compaction steps (which retire segments, and with them their objects); after a trim the glob
//! holds exactly the rows `strata query` prints.

use std::fmt::Write as _;
use std::process::Command;

use super::cli::{DECLARE_CAPTURE, Scratch};

const TRACKS: [(&str, &str); 4] = [("r0", "p0"), ("r0", "p1"), ("r1", "p0"), ("r1", "p1")];

fn csv(from: u64, to: u64) -> String {
    let mut csv = String::from("run,probe,t,value\n");
    for i in from..to {
        let (run, probe) = TRACKS[(i % 4) as usize];
        let value = ((i * 7919) % 1009) as f64 / 8.0 - 40.0;
        writeln!(csv, "{run},{probe},{},{value}", i * 5).unwrap();
    }
    csv
}

/// DuckDB's `count(*)`, `min`, `max`, `sum` of `value` per track over the glob, one line a
/// track: `run,probe,count,min,max,sum` (floats as Python's repr, which round-trips).
fn duckdb_per_track(bucket: &std::path::Path) -> Vec<(String, String, u64, f64, f64, f64)> {
    let script = r"
import sys, duckdb
rows = duckdb.sql(f'''select run, probe, count(*), min(value), max(value), sum(value)
                      from read_parquet('{sys.argv[1]}/parquet/capture/*.parquet')
                      group by all order by all''').fetchall()
for row in rows:
    print(','.join(repr(v) if isinstance(v, float) else str(v) for v in row))
";
    let out = Command::new("python3")
        .args(["-c", script])
        .arg(bucket)
        .output()
        .expect("python3 runs (CI installs duckdb: see .ci/run)");
    assert!(
        out.status.success(),
        "duckdb must be installed (`python3 -m pip install duckdb`, as .ci/run does): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|line| {
            let cells: Vec<&str> = line.split(',').collect();
            (
                cells[0].to_owned(),
                cells[1].to_owned(),
                cells[2].parse().unwrap(),
                cells[3].parse().unwrap(),
                cells[4].parse().unwrap(),
                cells[5].parse().unwrap(),
            )
        })
        .collect()
}

/// strata's fold of `value` over one track, as the command line prints it (`value: X`).
fn fold(s: &Scratch, track: &str, agg: &str) -> f64 {
    let run = s.ok(&["fold", "capture", "--track", track, "--agg", agg], "");
    run.stdout
        .trim()
        .strip_prefix("value: ")
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("a fold of {track}: {run:?}"))
}

/// DuckDB over the bucket's Parquet equals strata's folds, track by track.
fn agree(s: &Scratch, bucket: &std::path::Path) -> u64 {
    let duck = duckdb_per_track(bucket);
    assert_eq!(duck.len(), TRACKS.len(), "a row per track: {duck:?}");
    let mut rows = 0;
    for (run, probe, count, min, max, sum) in duck {
        let track = format!("{run},{probe}");
        let counted = fold(s, &track, "count");
        assert_eq!(
            (count as f64).to_bits(),
            counted.to_bits(),
            "{track}: count"
        );
        assert_eq!(
            min.to_bits(),
            fold(s, &track, "min").to_bits(),
            "{track}: min"
        );
        assert_eq!(
            max.to_bits(),
            fold(s, &track, "max").to_bits(),
            "{track}: max"
        );
        // Sums of the same values added in another order: equal to rounding.
        let strata_sum = fold(s, &track, "sum");
        assert!(
            (sum - strata_sum).abs() <= 1e-9 * strata_sum.abs().max(1.0),
            "{track}: sum {sum} against strata's {strata_sum}"
        );
        rows += count;
    }
    rows
}

#[test]
fn duckdb_reads_the_parquet_a_remote_publish_wrote_as_strata_folds_it() {
    let s = Scratch::new();
    let bucket = s.dir.path().join("bucket");
    let url = format!("file://{}", bucket.display());
    let remote = ["--remote", url.as_str(), "--remote-parquet"];
    let with = |args: &[&str]| {
        let mut all = remote.to_vec();
        all.extend_from_slice(args);
        all.iter().map(|a| (*a).to_owned()).collect::<Vec<_>>()
    };
    let run = |args: Vec<String>, stdin: &str| {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        s.ok(&args, stdin)
    };
    run(with(&DECLARE_CAPTURE), "");
    // Barriers every 500 rows, each followed by compaction steps that merge them.
    run(
        with(&["ingest", "capture", "-", "--seal-every", "500"]),
        &csv(0, 6_000),
    );
    assert_eq!(agree(&s, &bucket), 6_000);
    let objects = std::fs::read_dir(bucket.join("parquet/capture"))
        .unwrap()
        .count();
    let live = s.ok(&["fsck"], "");
    assert!(objects >= 1, "{objects} objects; {live:?}");
    // A second load, then everything compacted: the retired segments' objects are gone, so
    // the glob counts every row once.
    run(
        with(&["ingest", "capture", "-", "--seal-every", "700"]),
        &csv(6_000, 10_000),
    );
    run(with(&["compact"]), "");
    assert_eq!(agree(&s, &bucket), 10_000);
    // A trim retires the raw rows at or below a position (the levels keep them, so the folds
    // still count them): the glob then holds exactly the rows `strata query` prints.
    run(with(&["trim", "capture", "--to-position", "2500"]), "");
    run(with(&["compact"]), "");
    let duck = duckdb_per_track(&bucket);
    let mut rows = 0;
    for (run_label, probe, count, ..) in &duck {
        let track = format!("{run_label},{probe}");
        let printed = s
            .ok(
                &[
                    "query",
                    "capture",
                    "--track",
                    &track,
                    "--from-position",
                    "2501",
                ],
                "",
            )
            .stdout
            .lines()
            .count()
            - 1;
        assert_eq!(
            *count, printed as u64,
            "{track}: the glob holds what query prints"
        );
        rows += count;
    }
    assert_eq!(
        rows, 7_500,
        "the trimmed rows are gone from the glob: {duck:?}"
    );
}
