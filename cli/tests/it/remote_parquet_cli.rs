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
    // Objects a table version removes are deleted at the next publish (no retention): the
    // glob then holds exactly the newest state's rows.
    let remote = [
        "--remote",
        url.as_str(),
        "--remote-parquet",
        "--remote-table-retention",
        "0",
    ];
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

/// Reads the Delta table of `capture` in the bucket with the `deltalake` package and with
/// DuckDB's `delta_scan` (its extension from PyPI, loaded from the file: no network), and
/// compares every row of each with the rows `strata export --format csv` printed (the files
/// named after the table, one a track), sorted. Prints `deltalake N` and `duckdb N` when they agree; fails naming the first
/// difference.
const TABLE_READERS: &str = r#"
import csv, datetime, glob, os, sys
try:
    import deltalake, duckdb, duckdb_extension_delta, pyarrow.compute as pc, pyarrow as pa
except ImportError as e:
    sys.exit(f"python3 lacks a module ({e}): install deltalake, duckdb==1.5.5 and duckdb-extension-delta==1.5.5, as .ci/run does")
table, strata_csvs = sys.argv[1], sys.argv[2:]
epoch = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
def micros(text):
    at = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    return (at - epoch) // datetime.timedelta(microseconds=1)
ours = []
for path in strata_csvs:
    with open(path) as f:
        ours += [(int(r["position"]), r["run"], r["probe"], micros(r["t"]), float(r["value"]))
                 for r in csv.DictReader(f)]
ours.sort()
dt = deltalake.DeltaTable(table)
t = dt.to_pyarrow_table()
assert str(t.schema.field("t").type) == "timestamp[us, tz=UTC]", t.schema
assert str(t.schema.field("position").type) == "int64", t.schema
cols = [t.column("position").to_pylist(), t.column("run").to_pylist(), t.column("probe").to_pylist(),
        pc.cast(t.column("t"), pa.int64()).to_pylist(), t.column("value").to_pylist()]
theirs = sorted(zip(*cols))
def same(name, rows):
    if rows != ours:
        extra = sorted(set(rows) - set(ours))[:3]
        missing = sorted(set(ours) - set(rows))[:3]
        sys.exit(f"{name}: {len(rows)} rows, strata {len(ours)}; extra {extra}, missing {missing}")
    print(name, len(rows))
same("deltalake", theirs)
ext = glob.glob(os.path.join(os.path.dirname(duckdb_extension_delta.__file__), "extensions", "*", "delta.duckdb_extension"))
assert ext, "duckdb_extension_delta holds no extension file"
con = duckdb.connect()
con.execute(f"LOAD '{ext[0]}'")
rows = con.sql(f"select position, run, probe, epoch_us(t), value from delta_scan('{table}')").fetchall()
same("duckdb", sorted(tuple(r) for r in rows))
"#;

/// The table's versions: the commits in its log.
fn table_versions(bucket: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(bucket.join("parquet/capture/_delta_log"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| {
            n.len() == 25
                && std::path::Path::new(n)
                    .extension()
                    .is_some_and(|e| e == "json")
        })
        .collect();
    names.sort();
    names
}

/// Runs [`TABLE_READERS`] over the table of `capture` against `strata export`, track by track
/// (each from its own floor: the trim's, and the retired track's first position after it came
/// back). Returns the rows compared.
fn table_agrees(s: &Scratch, bucket: &std::path::Path) -> usize {
    let mut exported = Vec::new();
    let mut printed = 0;
    for (run_label, probe) in TRACKS {
        let path = s.dir.path().join(format!("{run_label}-{probe}.csv"));
        let track = format!("{run_label},{probe}");
        // The trim's floor, and the retired track's first position after it came back.
        let from = if track == "r1,p0" { "7001" } else { "2501" };
        s.ok(
            &[
                "export",
                "capture",
                "--track",
                &track,
                "--from-position",
                from,
                "--format",
                "csv",
                path.to_str().unwrap(),
            ],
            "",
        );
        printed += std::fs::read_to_string(&path).unwrap().lines().count() - 1;
        exported.push(path);
    }
    let out = Command::new("python3")
        .args(["-c", TABLE_READERS])
        .arg(bucket.join("parquet/capture"))
        .args(&exported)
        .output()
        .expect("python3 runs (CI installs deltalake and DuckDB's delta extension: .ci/run)");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the table's readers: {said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        said.lines().collect::<Vec<_>>(),
        [format!("deltalake {printed}"), format!("duckdb {printed}")],
    );
    printed
}

/// `--remote-parquet` (#53) commits each publish as one version of the stream's Delta table:
/// after ingests, compactions, a trim and a retire, the table — read by the `deltalake`
/// package and by DuckDB's `delta_scan` — holds exactly the rows `strata export` prints (the
/// time axis a UTC timestamp), and its versions are the publishes, the newest naming the
/// newest `log/` object. The folder's glob meanwhile counts rows twice: what compaction
/// replaced stays for the retention (an hour by default).
#[test]
fn the_table_holds_what_strata_prints_through_ingests_compaction_a_trim_and_a_retire() {
    let s = Scratch::new();
    let bucket = s.dir.path().join("bucket");
    let url = format!("file://{}", bucket.display());
    let run = |args: &[&str], stdin: &str| {
        let mut all = vec!["--remote", url.as_str(), "--remote-parquet"];
        all.extend_from_slice(args);
        s.ok(&all, stdin);
    };
    let mut declare = DECLARE_CAPTURE.to_vec();
    declare.extend_from_slice(&["--time", "us"]);
    run(&declare, "");
    run(
        &["ingest", "capture", "-", "--seal-every", "500"],
        &csv(0, 4_000),
    );
    run(
        &["ingest", "capture", "-", "--seal-every", "700"],
        &csv(4_000, 7_000),
    );
    run(&["compact"], "");
    run(&["trim", "capture", "--to-position", "2500"], "");
    run(&["retire", "capture", "--track", "r1,p0"], "");
    run(&["ingest", "capture", "-"], &csv(7_000, 8_000));
    run(&["compact"], "");

    let printed = table_agrees(&s, &bucket);
    // Above the trim (positions 2,501 on), and of the retired track only what came after.
    assert!(printed > 3_000 && printed < 6_000, "{printed} rows");

    // The publishes: the bucket's `log/` objects, one each (`ingest` publishes after every
    // barrier), none yet collected (the grace is 10 minutes).
    let mut logs: Vec<u64> = std::fs::read_dir(bucket.join("log"))
        .unwrap()
        .map(|e| {
            e.unwrap()
                .file_name()
                .into_string()
                .unwrap()
                .parse()
                .unwrap()
        })
        .collect();
    logs.sort_unstable();
    let every: Vec<u64> = (0..logs.len() as u64).collect();
    assert_eq!(logs, every, "log/ objects from 0 without a gap");
    assert!(logs.len() >= 12, "{} publishes", logs.len());
    let versions = table_versions(&bucket);
    assert_eq!(
        versions.len(),
        logs.len(),
        "one version per publish: {logs:?}"
    );
    let newest = std::fs::read_to_string(
        bucket
            .join("parquet/capture/_delta_log")
            .join(versions.last().unwrap()),
    )
    .unwrap();
    let txn: Vec<serde_json::Value> = newest
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .filter_map(|action| action.get("txn").cloned())
        .collect();
    assert_eq!(txn.len(), 1, "{newest}");
    assert_eq!(txn[0]["appId"], "strata");
    assert_eq!(
        txn[0]["version"].as_u64(),
        logs.last().copied(),
        "the newest version holds the newest log/ object's state"
    );
    // The glob over the same folder: the objects the compactions, the trim and the retire
    // replaced are still there for readers of older versions.
    let glob = duckdb_glob_count(&bucket);
    assert!(
        glob > printed as u64,
        "the glob reads {glob} rows, the table {printed}"
    );
}

/// DuckDB's `count(*)` over `parquet/capture/*.parquet`.
fn duckdb_glob_count(bucket: &std::path::Path) -> u64 {
    let script = "import sys, duckdb\nprint(duckdb.sql(f\"select count(*) from read_parquet('{sys.argv[1]}/parquet/capture/*.parquet')\").fetchall()[0][0])";
    let out = Command::new("python3")
        .args(["-c", script])
        .arg(bucket)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}
