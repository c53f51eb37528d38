//! A time axis and one meaning for a range flag (#48), driven as a user drives them: a stream
//! declared `--axis t --time us` ingests RFC 3339 or integers, prints RFC 3339 in its tables and
//! CSV, answers `--from`/`--to` given as times in every command, and exports its axis as a
//! timestamp DuckDB and pyarrow read as one; `--from-position`/`--to-position` select positions.

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use super::cli::Scratch;

/// 2026-12-01T00:00:00Z in µs since the epoch (Python's `datetime(2026, 12, 1,
/// tzinfo=timezone.utc).timestamp()` is 1796083200).
const DEC_1_US: u64 = 1_796_083_200_000_000;

/// Stream `log`: sensor (track), t (µs time axis), v; 3 rows a second of two sensors over 20 s,
/// a row every 500 ms for `a`, every second for `b`, half of them given as RFC 3339.
fn logger() -> Scratch {
    let s = Scratch::new();
    s.ok(
        &[
            "declare",
            "log",
            "--field",
            "sensor:str",
            "--field",
            "t:u64",
            "--field",
            "v:f64",
            "--track",
            "sensor",
            "--axis",
            "t",
            "--time",
            "us",
        ],
        "",
    );
    let mut csv = String::from("sensor,t,v\n");
    for half_second in 0..40u64 {
        let t = DEC_1_US + half_second * 500_000;
        let text = if half_second % 2 == 0 {
            t.to_string()
        } else {
            // 00:00:00.5, 00:00:01.5, ... as RFC 3339, an offset on some.
            let secs = half_second / 2;
            if half_second % 4 == 1 {
                format!("2026-12-01T00:00:{secs:02}.5Z")
            } else {
                format!("2026-12-01T01:00:{secs:02}.500+01:00")
            }
        };
        let _ = writeln!(csv, "a,{text},{half_second}");
        if half_second % 2 == 0 {
            let _ = writeln!(csv, "b,{t},-{half_second}");
        }
    }
    s.ok(&["ingest", "log", "--seal-every", "7"], &csv);
    s
}

fn body(text: &str) -> Vec<&str> {
    text.lines().skip(1).collect()
}

/// `declare log` as `logger` declares it, with `unit`.
fn declare_log(s: &Scratch, unit: &str) -> super::cli::Run {
    s.run(&[
        "declare",
        "log",
        "--field",
        "sensor:str",
        "--field",
        "t:u64",
        "--field",
        "v:f64",
        "--track",
        "sensor",
        "--axis",
        "t",
        "--time",
        unit,
    ])
}

#[test]
fn a_time_unit_is_part_of_the_declaration() {
    let s = logger();
    let declared = declare_log(&s, "us");
    assert_eq!(declared.code, 0, "{declared:?}");
    assert!(
        declared.stdout.contains("axis t (time, us)"),
        "{declared:?}"
    );
    // Another unit is a conflict with the recorded declaration.
    let conflict = declare_log(&s, "ms");
    assert_eq!(conflict.code, 1, "{conflict:?}");
    assert!(
        conflict
            .stderr
            .contains("conflicts with the recorded declaration"),
        "{conflict:?}"
    );
    let unknown = declare_log(&s, "days");
    assert_eq!(unknown.code, 2, "{unknown:?}");
    assert!(
        unknown.stderr.contains("unknown time unit \"days\""),
        "{unknown:?}"
    );
}

#[test]
fn a_time_axis_ingests_rfc_3339_and_prints_it() {
    let s = logger();
    // Ingest numbers rows from 1: a at 1, 3, 4, 6, ..., b at 2, 5, ...
    let csv = s.ok(&["query", "log", "--track", "a", "--to-position", "3"], "");
    assert_eq!(
        body(&csv.stdout),
        [
            "1,a,2026-12-01T00:00:00.000000Z,0.0",
            "3,a,2026-12-01T00:00:00.500000Z,1.0",
        ],
        "{csv:?}"
    );
    // JSON keeps the integer.
    let json = s.ok(
        &[
            "query",
            "log",
            "--track",
            "b",
            "--to-position",
            "2",
            "--format",
            "json",
        ],
        "",
    );
    assert!(
        json.stdout.contains(&format!("\"t\":{DEC_1_US}")),
        "{json:?}"
    );
    // What query prints ingests back exactly: into a second stream, and read again.
    s.ok(
        &[
            "declare",
            "copy",
            "--field",
            "sensor:str",
            "--field",
            "t:u64",
            "--field",
            "v:f64",
            "--track",
            "sensor",
            "--axis",
            "t",
            "--time",
            "us",
        ],
        "",
    );
    let all = s.ok(&["query", "log"], "");
    s.ok(&["ingest", "copy"], &all.stdout);
    assert_eq!(s.ok(&["query", "copy"], "").stdout, all.stdout);

    // A time finer than the unit, and one before the epoch, are refused naming the line.
    let fine = s.run_with(
        &["ingest", "log"],
        "sensor,t,v\nc,2026-12-01T00:00:00.0000001Z,1\n",
    );
    assert_eq!(fine.code, 1, "{fine:?}");
    assert!(
        fine.stderr.contains("finer than the axis's unit (µs)"),
        "{fine:?}"
    );
    let early = s.run_with(&["ingest", "log"], "sensor,t,v\nc,1969-07-20T20:17:40Z,1\n");
    assert!(early.stderr.contains("before the Unix epoch"), "{early:?}");
}

#[test]
fn survey_between_two_times_answers_and_prints_times() {
    let s = logger();
    let survey = s.ok(
        &[
            "survey",
            "log",
            "--from",
            "2026-12-01T00:00:00Z",
            "--to",
            "2026-12-01T00:00:10Z",
            "--budget",
            "4000",
        ],
        "",
    );
    let out = &survey.stdout;
    // The span covered, and every bucket's axis, are times; rows at 0..=10 s: a has 21, b 11.
    assert!(
        out.contains("t 2026-12-01T00:00:00.000000Z .. 2026-12-01T00:00:10.000000Z"),
        "{out}"
    );
    assert!(out.contains("t (UTC) first..last"), "{out}");
    assert!(out.contains("from 32 rows"), "{out}");
    assert!(!out.contains("1,796,083"), "no raw integers: {out}");
    // The same bounds as integers answer the same.
    let by_number = s.ok(
        &[
            "survey",
            "log",
            "--from",
            &DEC_1_US.to_string(),
            "--to",
            &(DEC_1_US + 10_000_000).to_string(),
            "--budget",
            "4000",
        ],
        "",
    );
    assert_eq!(by_number.stdout, survey.stdout);
    let fold = s.ok(
        &[
            "fold",
            "log",
            "--track",
            "a",
            "--agg",
            "count",
            "--from",
            "2026-12-01T00:00:01Z",
            "--to",
            "2026-12-01T00:00:02Z",
        ],
        "",
    );
    // a's rows at 1.0, 1.5 and 2.0 s: the level fold covers whole level-0 cells (1 µs wide).
    assert_eq!(fold.stdout, "v: 3\n");
}

#[test]
fn one_meaning_for_a_range_flag_in_every_command() {
    let s = logger();
    // --from/--to are axis values in query, as in survey: a time answers its rows.
    let by_time = s.ok(
        &[
            "query",
            "log",
            "--track",
            "b",
            "--from",
            "2026-12-01T00:00:03Z",
            "--to",
            "2026-12-01T00:00:04.999999Z",
        ],
        "",
    );
    assert_eq!(
        body(&by_time.stdout),
        [
            "11,b,2026-12-01T00:00:03.000000Z,-6.0",
            "14,b,2026-12-01T00:00:04.000000Z,-8.0",
        ],
        "{by_time:?}"
    );
    // Positions have their own flags; both together select the rows in both.
    let both = s.ok(
        &[
            "query",
            "log",
            "--from",
            "2026-12-01T00:00:03Z",
            "--from-position",
            "11",
            "--to-position",
            "13",
        ],
        "",
    );
    assert_eq!(
        body(&both.stdout),
        [
            "11,b,2026-12-01T00:00:03.000000Z,-6.0",
            "12,a,2026-12-01T00:00:03.500000Z,7.0",
            "13,a,2026-12-01T00:00:04.000000Z,8.0",
        ],
        "{both:?}"
    );
    // A range that selects nothing of rows that exist says so on stderr, and where they lie.
    let missed = s.ok(&["query", "log", "--from", "2027-01-01T00:00:00Z"], "");
    assert_eq!(body(&missed.stdout), Vec::<&str>::new());
    assert!(
        missed.stderr.contains(
            "note: no row of log lies in axis t 2027-01-01T00:00:00.000000Z ..; its rows lie in \
             axis t 2026-12-01T00:00:00.000000Z .. 2026-12-01T00:00:19.500000Z, positions 1 .. 60"
        ),
        "{missed:?}"
    );
    let survey_missed = s.ok(
        &[
            "survey",
            "log",
            "--from",
            "2027-01-01T00:00:00Z",
            "--budget",
            "8",
        ],
        "",
    );
    assert!(
        survey_missed.stderr.contains("note: no row of log lies in"),
        "{survey_missed:?}"
    );
    // A levelled read is over the axis: a position range is refused, naming the axis flags.
    for command in [
        &["survey", "log", "--budget", "8"][..],
        &["fold", "log", "--agg", "max"],
    ] {
        let mut args = command.to_vec();
        args.extend(["--from-position", "3"]);
        let refused = s.run(&args);
        assert_eq!(refused.code, 2, "{refused:?}");
        assert!(
            refused
                .stderr
                .contains("bound it with --from/--to (an axis value, or an RFC 3339 time)"),
            "{refused:?}"
        );
    }
    // Not a time, not a number: a bad command line naming the flag.
    let bad = s.run(&["query", "log", "--to", "noon"]);
    assert_eq!(bad.code, 2, "{bad:?}");
    assert!(
        bad.stderr
            .contains("--to: \"noon\" is neither a whole number nor an RFC 3339 time"),
        "{bad:?}"
    );
}

#[test]
fn a_time_given_for_a_plain_axis_or_an_axis_range_without_an_axis_is_refused() {
    let s = Scratch::new();
    s.ok(
        &[
            "declare", "p", "--field", "t:u64", "--field", "v:f64", "--axis", "t",
        ],
        "",
    );
    s.ok(&["declare", "n", "--field", "v:f64"], "");
    s.ok(&["ingest", "p"], "t,v\n5,1\n");
    s.ok(&["ingest", "n"], "v\n1\n");
    let time = s.run(&["query", "p", "--from", "2026-12-01T00:00:00Z"]);
    assert_eq!(time.code, 2, "{time:?}");
    assert!(
        time.stderr.contains("declares its axis a plain u64"),
        "{time:?}"
    );
    let no_axis = s.run(&["query", "n", "--from", "1"]);
    assert_eq!(no_axis.code, 2, "{no_axis:?}");
    assert!(
        no_axis.stderr.contains("--from-position/--to-position"),
        "{no_axis:?}"
    );
    let trim = s.run(&["trim", "n", "--to", "1"]);
    assert_eq!(trim.code, 2, "{trim:?}");
    assert!(trim.stderr.contains("--to-position P"), "{trim:?}");
}

#[test]
fn trim_to_a_time_retires_the_positions_wholly_at_or_below_it() {
    let s = logger();
    // Rows at or below 00:00:02.2 s: a and b at 0..=2.0 s (positions 1..=8); the first row
    // above is a's at 2.5 s, position 9: the horizon is position 8.
    let trim = s.ok(&["trim", "log", "--to", "2026-12-01T00:00:02.2Z"], "");
    assert!(
        trim.stdout
            .contains("axis 2026-12-01T00:00:02.200000Z is position 8's horizon"),
        "{trim:?}"
    );
    assert!(
        trim.stdout
            .contains("log a: position 9, axis 2026-12-01T00:00:02.500000Z"),
        "{trim:?}"
    );
    let rest = s.ok(
        &["query", "log", "--from-position", "9", "--to-position", "9"],
        "",
    );
    assert_eq!(body(&rest.stdout), ["9,a,2026-12-01T00:00:02.500000Z,5.0"]);
    let beneath = s.run(&["query", "log", "--to-position", "8"]);
    assert_eq!(beneath.code, 4, "{beneath:?}");
}

/// Runs python3 with `script` and `args` in `cwd`; a failure fails the test with what it said.
/// CI installs pyarrow and DuckDB (`.ci/run`); a machine without them fails here.
fn python(cwd: &Path, script: &str, args: &[&str]) -> String {
    let out = Command::new("python3")
        .arg("-c")
        .arg(script)
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("python3 runs (CI installs it with pyarrow and duckdb: see .ci/run)");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "python3 failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// DuckDB reads the exported axis as a timestamp with time zone whose epoch in µs is the
/// integer `query --format json` prints; pyarrow reads `timestamp[us, tz=UTC]`; a Parquet file
/// pyarrow writes with a `timestamp[ns]` axis ingests as the same µs.
const PEERS: &str = r#"
import sys, json, duckdb, pyarrow as pa, pyarrow.parquet as pq
rows = json.load(open(sys.argv[1]))
want = [r['t'] for r in rows]
con = duckdb.connect()
kind = con.sql("select typeof(t) from read_parquet('rows.parquet') limit 1").fetchall()[0][0]
if kind not in ('TIMESTAMP WITH TIME ZONE', 'TIMESTAMP'):
    sys.exit(f'duckdb reads t as {kind}')
got = [r[0] for r in con.sql("select epoch_us(t) from read_parquet('rows.parquet') order by position").fetchall()]
if got != want:
    sys.exit(f'duckdb: {got[:3]}... but strata printed {want[:3]}...')
t = pq.read_table('rows.parquet')
if str(t.schema.field('t').type) != 'timestamp[us, tz=UTC]':
    sys.exit(f'pyarrow reads t as {t.schema.field("t").type}')
arrow = pa.ipc.open_stream(open('rows.arrows', 'rb')).read_all()
if arrow.column('t').cast(pa.int64()).to_pylist() != want:
    sys.exit('the Arrow stream holds other times')
survey = pq.read_table('survey.parquet')
if str(survey.schema.field('first_axis').type) != 'timestamp[us, tz=UTC]':
    sys.exit(f'the survey export reads first_axis as {survey.schema.field("first_axis").type}')
ns = pa.table({'sensor': ['z'] * len(want),
               't': pa.array([v * 1000 for v in want], pa.timestamp('ns', tz='UTC')),
               'v': [float(i) for i in range(len(want))]})
pq.write_table(ns, 'ns.parquet')
print(f'duckdb {kind}: {len(got)} times equal')
"#;

#[test]
fn duckdb_and_pyarrow_read_the_exported_axis_as_timestamps_and_ingest_takes_them() {
    let s = logger();
    let cwd = s.dir.path();
    let json = s.ok(&["query", "log", "--format", "json"], "");
    std::fs::write(cwd.join("rows.json"), &json.stdout).unwrap();
    s.ok(
        &["export", "log", "--format", "parquet", "rows.parquet"],
        "",
    );
    s.ok(&["export", "log", "--format", "arrow", "rows.arrows"], "");
    s.ok(
        &[
            "export",
            "log",
            "--survey",
            "16",
            "--format",
            "parquet",
            "survey.parquet",
        ],
        "",
    );
    let said = python(cwd, PEERS, &["rows.json"]);
    assert!(said.contains("times equal"), "{said}");
    assert!(said.contains(": 60 times equal"), "{said}");
    // pyarrow's ns timestamps ingest as the µs they are.
    s.ok(&["ingest", "log", "ns.parquet"], "");
    // Its rows took the times of log's rows in position order: a and b at 0 s, a at 0.5 s.
    let z = s.ok(&["query", "log", "--track", "z", "--to-position", "63"], "");
    assert_eq!(
        body(&z.stdout),
        [
            "61,z,2026-12-01T00:00:00.000000Z,0.0",
            "62,z,2026-12-01T00:00:00.000000Z,1.0",
            "63,z,2026-12-01T00:00:00.500000Z,2.0",
        ]
    );
}
