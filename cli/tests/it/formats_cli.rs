//! `strata export` and `strata ingest` of Parquet and Arrow (#33), checked by readers no code
//! here wrote: pyarrow and DuckDB (installed from PyPI by `.ci/run`) read the exports of a
//! generated store and must equal `strata query --format csv` row for row; an export ingested
//! into a fresh store answers every query, survey and fold as the source does; bad files are
//! refused by name, storing nothing.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use strata::{Config, FieldKind, Store, Stream, Values};

use super::cli::{Scratch, strata_in};
use super::viewing::peak_kib;

/// The generated stream: two track fields (str, i64), an axis near `u64::MAX`, and one field of
/// every kind.
fn declaration() -> Stream {
    Stream::new("m")
        .field("run", FieldKind::Str)
        .field("probe", FieldKind::I64)
        .field("t", FieldKind::U64)
        .field("u", FieldKind::U64)
        .field("i", FieldKind::I64)
        .field("f", FieldKind::F64)
        .field("s", FieldKind::Str)
        .field("b", FieldKind::Bytes)
        .track(["run", "probe"])
        .axis("t")
}

/// The same declaration as `strata declare` words.
const DECLARE_M: [&str; 22] = [
    "declare",
    "m",
    "--field",
    "run:str",
    "--field",
    "probe:i64",
    "--field",
    "t:u64",
    "--field",
    "u:u64",
    "--field",
    "i:i64",
    "--field",
    "f:f64",
    "--field",
    "s:str",
    "--field",
    "b:bytes",
    "--track",
    "run,probe",
    "--axis",
    "t",
];

/// The kinds of `strata query`'s CSV columns: the position, then the fields.
const KINDS: &str = "u64,str,i64,u64,u64,i64,f64,str,bytes";

/// A store at `dir` holding `n_rows` rows of `m` over six tracks, interleaved in runs of 1 to
/// 61 rows, sealed every 100,000 rows: positions from 1, axis values ending at `u64::MAX`,
/// bytes holding 0x00 and 0xFF, texts with commas, quotes and non-ASCII.
fn generate(dir: &Path, n_rows: u64) {
    let mut store =
        Store::create(dir, Config::default(), &[declaration().build().unwrap()]).unwrap();
    let tracks = [
        ("r0", "-3"),
        ("r0", "7"),
        ("r1", "-3"),
        ("r1", "7"),
        ("r,2", "0"),
        ("é\"q", "9"),
    ];
    let mut row = 0u64;
    let mut run_idx = 0usize;
    let mut since_seal = 0u64;
    while row < n_rows {
        let len = (1 + (run_idx * 17) % 61) as u64;
        let len = len.min(n_rows - row);
        let (run, probe) = tracks[run_idx % tracks.len()];
        let rows = row..row + len;
        let positions: Vec<u64> = rows.clone().map(|r| r + 1).collect();
        let axis: Vec<u64> = rows
            .clone()
            .map(|r| u64::MAX - 2 * (n_rows - 1 - r))
            .collect();
        let unsigned: Vec<u64> = rows
            .clone()
            .map(|r| r.wrapping_mul(0x9E37_79B9_7F4A_7C15))
            .collect();
        let signed: Vec<i64> = rows
            .clone()
            .map(|r| r.cast_signed().wrapping_mul(-0x5851_F42D_4C95_7F2D))
            .collect();
        let floats: Vec<f64> = rows
            .clone()
            .map(|r| (r as f64).sin() * 1e6 + 1.0 / (r as f64 + 3.0))
            .collect();
        let texts: Vec<String> = rows
            .clone()
            .map(|r| format!("s{},\"x\" ü{}", r % 97, r % 5))
            .collect();
        let blobs: Vec<Vec<u8>> = rows
            .clone()
            .map(|r| vec![0x00, 0xFF, (r % 256) as u8, 0x00])
            .collect();
        let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
        let blobs: Vec<&[u8]> = blobs.iter().map(Vec::as_slice).collect();
        store
            .publish_columns_at(
                "m",
                &positions,
                &[run, probe],
                &[
                    Values::U64(&axis),
                    Values::U64(&unsigned),
                    Values::I64(&signed),
                    Values::F64(&floats),
                    Values::Str(&texts),
                    Values::Bytes(&blobs),
                ],
            )
            .unwrap();
        row += len;
        run_idx += 1;
        since_seal += len;
        if since_seal >= 100_000 {
            store.seal().unwrap();
            since_seal = 0;
        }
    }
    store.seal().unwrap();
}

/// Runs `python3 -c SCRIPT ARGS` in `cwd` (with `stdin`, if given), and answers its stdout; a
/// failure (a mismatch the script reports, or pyarrow or DuckDB missing) fails the test with
/// what it said. CI installs both (`.ci/run`); a machine without them fails here, never skips.
fn python(cwd: &Path, script: &str, args: &[&str], stdin: Option<Stdio>) -> String {
    let out = Command::new("python3")
        .arg("-c")
        .arg(script)
        .args(args)
        .current_dir(cwd)
        .stdin(stdin.unwrap_or_else(Stdio::null))
        .output()
        .expect("python3 runs (CI installs it with pyarrow and duckdb: see .ci/run)");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "python3 failed (pyarrow and duckdb must be installed: `python3 -m pip install pyarrow \
         duckdb`, as .ci/run does):\n{stdout}\n{stderr}"
    );
    stdout
}

/// Compares what pyarrow (Parquet, and an Arrow IPC stream from a file or stdin) and DuckDB
/// (Parquet) read against the CSV `strata query` printed, row for row, value for value: numbers
/// as numbers (floats exactly, both sides shortest round-trip text), bytes from their hex.
const COMPARE: &str = r#"
import sys, csv
import pyarrow as pa, pyarrow.parquet as pq, duckdb
csv_path, kinds, checks = sys.argv[1], sys.argv[2].split(','), sys.argv[3:]
def conv(kind, text):
    if kind in ('u64', 'i64'): return int(text)
    if kind == 'f64': return float(text)
    if kind == 'bytes': return bytes.fromhex(text)
    return text
with open(csv_path, newline='', encoding='utf-8') as f:
    r = csv.reader(f)
    header = next(r)
    expected = [tuple(conv(k, t) for k, t in zip(kinds, row)) for row in r]
def check(name, columns, rows):
    if list(columns) != header:
        sys.exit(f'{name}: columns {list(columns)} but the CSV has {header}')
    n = 0
    for got, want in zip(rows, expected):
        got = tuple(bytes(v) if isinstance(v, (bytearray, memoryview)) else v for v in got)
        if got != want:
            sys.exit(f'{name}: row {n + 1} is {got}, the CSV has {want}')
        n += 1
    if n != len(expected):
        sys.exit(f'{name}: {n} rows, the CSV has {len(expected)}')
    print(f'{name}: {n} rows equal')
def table_rows(t):
    return zip(*[c.to_pylist() for c in t.columns])
for check_ in checks:
    kind, path = check_.split('=', 1)
    if kind == 'pyarrow-parquet':
        t = pq.read_table(path)
        check(kind, t.column_names, table_rows(t))
    elif kind == 'pyarrow-arrow':
        source = sys.stdin.buffer if path == '-' else open(path, 'rb')
        t = pa.ipc.open_stream(source).read_all()
        check(kind + (' (pipe)' if path == '-' else ''), t.column_names, table_rows(t))
    elif kind == 'duckdb-parquet':
        rel = duckdb.connect().sql(f"select * from read_parquet('{path}')")
        check(kind, rel.columns, rel.fetchall())
    else:
        sys.exit(f'unknown check {kind}')
"#;

fn strata(cwd: &Path, args: &[&str]) -> super::cli::Run {
    strata_in(cwd, args, "")
}

/// `strata --store store export m --format FORMAT FILE`, insisting on exit 0.
fn export(cwd: &Path, format: &str, file: &str) -> super::cli::Run {
    ok(
        cwd,
        &["--store", "store", "export", "m", "--format", format, file],
    )
}

fn ok(cwd: &Path, args: &[&str]) -> super::cli::Run {
    let run = strata(cwd, args);
    assert_eq!(run.code, 0, "strata {args:?}: {run:?}");
    run
}

#[test]
fn pyarrow_and_duckdb_read_exports_of_a_million_rows_as_query_prints_them() {
    let s = Scratch::new();
    let cwd = s.dir.path();
    generate(&cwd.join("store"), 1_000_000);
    let csv = ok(cwd, &["--store", "store", "query", "m", "--format", "csv"]);
    std::fs::write(cwd.join("rows.csv"), &csv.stdout).unwrap();
    assert_eq!(
        csv.stdout.lines().count(),
        1_000_001,
        "a header and every row"
    );
    let exported = export(cwd, "parquet", "rows.parquet");
    assert!(
        exported
            .stderr
            .contains("exported 1,000,000 rows of m as Parquet"),
        "{exported:?}"
    );
    assert!(
        !cwd.join("rows.parquet.partial").exists(),
        "the partial file is renamed"
    );
    export(cwd, "arrow", "rows.arrows");
    let said = python(
        cwd,
        COMPARE,
        &[
            "rows.csv",
            KINDS,
            "pyarrow-parquet=rows.parquet",
            "pyarrow-arrow=rows.arrows",
            "duckdb-parquet=rows.parquet",
        ],
        None,
    );
    for reader in ["pyarrow-parquet", "pyarrow-arrow", "duckdb-parquet"] {
        assert!(
            said.contains(&format!("{reader}: 1000000 rows equal")),
            "{said}"
        );
    }
    // The Arrow IPC stream through a pipe, read as it is written.
    let mut export = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["--store", "store", "export", "m", "--format", "arrow", "-"])
        .current_dir(cwd)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pipe = Stdio::from(export.stdout.take().unwrap());
    let said = python(
        cwd,
        COMPARE,
        &["rows.csv", KINDS, "pyarrow-arrow=-"],
        Some(pipe),
    );
    assert!(export.wait().unwrap().success());
    assert!(
        said.contains("pyarrow-arrow (pipe): 1000000 rows equal"),
        "{said}"
    );
}

#[test]
fn a_narrowed_export_holds_exactly_what_the_narrowed_query_prints() {
    let s = Scratch::new();
    let cwd = s.dir.path();
    generate(&cwd.join("store"), 20_000);
    let narrow = [
        "--track",
        "r1",
        "--from-position",
        "5000",
        "--to-position",
        "15000",
    ];
    let mut query = vec!["--store", "store", "query", "m"];
    query.extend(narrow);
    std::fs::write(cwd.join("rows.csv"), ok(cwd, &query).stdout).unwrap();
    let mut export = vec![
        "--store",
        "store",
        "export",
        "m",
        "--format",
        "parquet",
        "r1.parquet",
    ];
    export.extend(narrow);
    ok(cwd, &export);
    let said = python(
        cwd,
        COMPARE,
        &["rows.csv", KINDS, "duckdb-parquet=r1.parquet"],
        None,
    );
    let n_rows: usize = said
        .split("duckdb-parquet: ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap();
    assert!(
        n_rows > 1000 && n_rows < 10_000,
        "a third of the tracks over half the rows: {said}"
    );
}

/// Every read a round trip must answer alike.
const READS: [&[&str]; 9] = [
    &["query", "m", "--format", "csv"],
    &[
        "query",
        "m",
        "--track",
        "r0,7",
        "--from-position",
        "100",
        "--to-position",
        "9000",
    ],
    &["survey", "m", "--budget", "400", "--format", "json"],
    &[
        "survey", "m", "--budget", "64", "--track", "r1", "--format", "json",
    ],
    &["fold", "m", "--agg", "min", "--format", "json"],
    &["fold", "m", "--agg", "max", "--format", "json"],
    &["fold", "m", "--agg", "sum", "--format", "json"],
    &[
        "fold", "m", "--agg", "count", "--track", r"r\,2", "--format", "json",
    ],
    &["fold", "m", "--agg", "p50", "--format", "json"],
];

fn answers(cwd: &Path, store: &str) -> Vec<String> {
    READS
        .iter()
        .map(|read| {
            let mut args = vec!["--store", store];
            args.extend_from_slice(read);
            ok(cwd, &args).stdout
        })
        .collect()
}

#[test]
fn an_export_ingested_into_a_fresh_store_answers_every_read_as_the_source() {
    let s = Scratch::new();
    let cwd = s.dir.path();
    generate(&cwd.join("store"), 30_000);
    let source = answers(cwd, "store");
    for (format, file) in [("parquet", "all.parquet"), ("arrow", "all.arrows")] {
        export(cwd, format, file);
        let copy = format!("copy-{format}");
        let mut declare = vec!["--store", copy.as_str()];
        declare.extend(DECLARE_M);
        ok(cwd, &declare);
        let ingested = ok(
            cwd,
            &["--store", &copy, "ingest", "m", file, "--batch", "777"],
        );
        assert!(
            ingested.stdout.contains("ingested 30,000 rows"),
            "{ingested:?}"
        );
        let copied = answers(cwd, &copy);
        for ((read, want), got) in READS.iter().zip(&source).zip(&copied) {
            assert_eq!(
                got, want,
                "{format}: `strata {read:?}` differs after the round trip"
            );
        }
    }
    // Through a pipe too: an Arrow IPC stream on standard input.
    let stream = std::fs::read(cwd.join("all.arrows")).unwrap();
    let mut declare = vec!["--store", "piped"];
    declare.extend(DECLARE_M);
    ok(cwd, &declare);
    let mut ingest = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["--store", "piped", "ingest", "m", "-", "--format", "arrow"])
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut ingest.stdin.take().unwrap(), &stream).unwrap();
    let out = ingest.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(answers(cwd, "piped"), source);
}

#[test]
fn a_survey_exports_its_buckets_as_the_json_survey_answers_them() {
    let s = Scratch::new();
    let cwd = s.dir.path();
    generate(&cwd.join("store"), 20_000);
    let json = ok(
        cwd,
        &[
            "--store", "store", "survey", "m", "--budget", "200", "--format", "json",
        ],
    );
    ok(
        cwd,
        &[
            "--store",
            "store",
            "export",
            "m",
            "--survey",
            "200",
            "--format",
            "parquet",
            "sv.parquet",
        ],
    );
    let script = r"
import sys, json, pyarrow.parquet as pq
survey = json.loads(open(sys.argv[1]).read())
rows = pq.read_table(sys.argv[2]).to_pylist()
# The stream's measured fields are of three kinds, so the batch holds every value as f64
# (docs/formats.md): each JSON value rounded to the nearest f64, as Python's float() rounds.
want = []
for field in survey['fields']:
    for b in field['buckets']:
        want.append((field['field'], b['first']['axis'], float(b['first']['value']),
                     b['last']['axis'], float(b['last']['value']), b['min']['axis'],
                     float(b['min']['value']), b['max']['axis'], float(b['max']['value']),
                     b['count']))
got = [(r['field'], r['first_axis'], r['first'], r['last_axis'], r['last'], r['min_axis'],
        r['min'], r['max_axis'], r['max'], r['count']) for r in rows]
if got != want:
    bad = next(i for i, (g, w) in enumerate(zip(got, want)) if g != w) if len(got) == len(want) else -1
    sys.exit(f'{len(got)} buckets differ from the {len(want)} of the JSON survey (first at {bad}: '
             f'{got[bad] if bad >= 0 else None} != {want[bad] if bad >= 0 else None})')
print(len(got), 'buckets equal')
";
    std::fs::write(cwd.join("survey.json"), &json.stdout).unwrap();
    let said = python(cwd, script, &["survey.json", "sv.parquet"], None);
    let n: usize = said.split_whitespace().next().unwrap().parse().unwrap();
    assert!(
        n > 10 && n <= 50,
        "the budget's buckets (200 / 4 a bucket / 4 fields): {said}"
    );
}

/// What `strata` says of a refused input, and that it stored nothing: the watermark and the
/// rows are what they were.
fn refused(cwd: &Path, file: &str, extra: &[&str], says: &[&str]) {
    let before = ok(cwd, &["--store", "into", "query", "m"]).stdout;
    let mut args = vec!["--store", "into", "ingest", "m", file];
    args.extend_from_slice(extra);
    let run = strata(cwd, &args);
    assert_eq!(
        run.code, 1,
        "{file}: refused with exit 1, no panic: {run:?}"
    );
    for word in says {
        assert!(
            run.stderr.contains(word),
            "{file}: {word:?} in {:?}",
            run.stderr
        );
    }
    assert_eq!(
        ok(cwd, &["--store", "into", "query", "m"]).stdout,
        before,
        "{file}: nothing of a refused file is stored"
    );
}

#[test]
fn bad_files_are_refused_by_name_and_store_nothing() {
    let s = Scratch::new();
    let cwd = s.dir.path();
    generate(&cwd.join("store"), 5_000);
    export(cwd, "parquet", "good.parquet");
    export(cwd, "arrow", "good.arrows");
    let mut declare = vec!["--store", "into"];
    declare.extend(DECLARE_M);
    ok(cwd, &declare);
    let good = std::fs::read(cwd.join("good.parquet")).unwrap();
    let write = |name: &str, bytes: &[u8]| -> PathBuf {
        let path = cwd.join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    };
    // Truncated: at the footer, and half way.
    write("cut-end.parquet", &good[..good.len() - 3]);
    refused(
        cwd,
        "cut-end.parquet",
        &[],
        &["cut-end.parquet is not a readable Parquet file"],
    );
    write("cut-half.parquet", &good[..good.len() / 2]);
    refused(
        cwd,
        "cut-half.parquet",
        &[],
        &["cut-half.parquet is not a readable Parquet file"],
    );
    // A flipped byte anywhere in the data a strata export's crc covers.
    for at in [4, 100, good.len() / 3, good.len() / 2, good.len() * 2 / 3] {
        let mut flipped = good.clone();
        flipped[at] ^= 0x10;
        write("flipped.parquet", &flipped);
        refused(
            cwd,
            "flipped.parquet",
            &[],
            &["flipped.parquet is not a readable Parquet file"],
        );
    }
    // Empty files, as each format.
    write("empty.parquet", b"");
    refused(
        cwd,
        "empty.parquet",
        &["--format", "parquet"],
        &["empty.parquet is not a readable Parquet"],
    );
    refused(
        cwd,
        "empty.parquet",
        &["--format", "arrow"],
        &["empty.parquet is not a readable Arrow"],
    );
    // A truncated Arrow stream: the batches before the cut are whole, the cut one refuses.
    let arrows = std::fs::read(cwd.join("good.arrows")).unwrap();
    write("cut.arrows", &arrows[..arrows.len() * 2 / 3]);
    refused(
        cwd,
        "cut.arrows",
        &["--batch", "100000"],
        &["cannot decode cut.arrows"],
    );
    // And the store still takes a good file after all of them.
    let run = ok(cwd, &["--store", "into", "ingest", "m", "good.parquet"]);
    assert!(run.stdout.contains("ingested 5,000 rows"), "{run:?}");
}

#[test]
fn files_pyarrow_writes_with_nulls_wrong_types_or_missing_fields_are_refused_by_column_and_row() {
    let s = Scratch::new();
    let cwd = s.dir.path();
    let mut declare = vec!["--store", "into"];
    declare.extend(DECLARE_M);
    ok(cwd, &declare);
    let script = r"
import pyarrow as pa, pyarrow.parquet as pq
base = dict(run=['a', 'b', 'c'], probe=[1, 2, 3], t=[1, 2, 3], u=[1, 2, 3], i=[-1, 0, 1],
            f=[0.5, 1.5, 2.5], s=['x', 'y', 'z'], b=[b'\x00', b'\xff', b''])
def write(name, **changes):
    columns = dict(base, **changes)
    pq.write_table(pa.table({k: v for k, v in columns.items() if v is not None}), name)
write('null.parquet', s=['x', None, 'z'])
write('wrong.parquet', f=['0.5', '1.5', '2.5'])
write('missing.parquet', s=None)
write('negative.parquet', u=[1, 2, -3])
write('huge.parquet', i=pa.array([1, 2**63, 3], type=pa.uint64()))
write('extra.parquet', extra=[1, 2, 3])
write('good.parquet')
";
    python(cwd, script, &[], None);
    // A null in a measured number is a missing value (#48, missing_cli.rs); in text it is not.
    refused(cwd, "null.parquet", &[], &["row 2", "column \"s\"", "null"]);
    refused(
        cwd,
        "wrong.parquet",
        &[],
        &["row 1", "column \"f\"", "a f64 field cannot take"],
    );
    refused(cwd, "missing.parquet", &[], &["no column for field \"s\""]);
    refused(
        cwd,
        "negative.parquet",
        &[],
        &["row 3", "column \"u\"", "not a u64"],
    );
    refused(
        cwd,
        "huge.parquet",
        &[],
        &[
            "row 2",
            "column \"i\"",
            "9223372036854775808 does not fit an i64",
        ],
    );
    refused(
        cwd,
        "extra.parquet",
        &[],
        &["column \"extra\" is not a field of stream \"m\""],
    );
    // pyarrow's own types (int64 for the u64 fields, plain strings for the track) are taken.
    let run = ok(cwd, &["--store", "into", "ingest", "m", "good.parquet"]);
    assert!(run.stdout.contains("ingested 3 rows"), "{run:?}");
}

#[test]
fn an_export_of_ten_million_rows_peaks_below_100_mib() {
    let s = Scratch::new();
    let cwd = s.dir.path();
    let n_rows = 10_000_000u64;
    {
        let decl = Stream::new("big")
            .field("t", FieldKind::U64)
            .field("value", FieldKind::F64)
            .axis("t")
            .build()
            .unwrap();
        let mut store = Store::create(cwd.join("store"), Config::default(), &[decl]).unwrap();
        let chunk = 1_000_000u64;
        for k in 0..n_rows / chunk {
            let rows = k * chunk..(k + 1) * chunk;
            let positions: Vec<u64> = rows.clone().map(|r| r + 1).collect();
            let axis: Vec<u64> = rows.clone().map(|r| r * 10).collect();
            let values: Vec<f64> = rows.map(|r| (r as f64 / 1000.0).sin()).collect();
            store
                .publish_columns_at(
                    "big",
                    &positions,
                    &[],
                    &[Values::U64(&axis), Values::F64(&values)],
                )
                .unwrap();
            store.seal().unwrap();
        }
    }
    for format in ["parquet", "arrow"] {
        let mut export = Command::new(env!("CARGO_BIN_EXE_strata"))
            .args([
                "--store", "store", "export", "big", "--format", format, "out",
            ])
            .current_dir(cwd)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // VmHWM only grows: its last reading before the process exits is its peak, but for
        // the moment between that reading and the exit, when an export only closes its file.
        let mut peak = 0;
        while export.try_wait().unwrap().is_none() {
            if let Some(kib) = peak_kib(export.id()) {
                peak = peak.max(kib);
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let out = export.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        assert!(stderr.contains("exported 10,000,000 rows"), "{stderr}");
        eprintln!(
            "census: export of 10^7 rows as {format}: peak {} MiB",
            peak / 1024
        );
        assert!(peak > 0, "the export was seen running");
        assert!(
            peak <= 100 * 1024,
            "{format}: peak {peak} KiB, above 100 MiB"
        );
    }
}

#[test]
fn a_flipped_bit_anywhere_is_refused_or_reads_the_same_rows_never_a_panic() {
    let s = Scratch::new();
    let cwd = s.dir.path();
    generate(&cwd.join("store"), 2_000);
    export(cwd, "parquet", "good.parquet");
    export(cwd, "arrow", "good.arrows");
    let want = ok(cwd, &["--store", "store", "query", "m"]).stdout;
    let (mut refused, mut same) = (0, 0);
    for (file, format) in [("good.parquet", "parquet"), ("good.arrows", "arrow")] {
        let good = std::fs::read(cwd.join(file)).unwrap();
        // Spread over the file, the footer and the stream's schema message included.
        for k in 0..60u64 {
            let at = usize::try_from((k * 7919 + 13) % good.len() as u64).unwrap();
            let mut bad = good.clone();
            bad[at] ^= 1 << (k % 8);
            std::fs::write(cwd.join("bad"), &bad).unwrap();
            let _ = std::fs::remove_dir_all(cwd.join("into"));
            let mut declare = vec!["--store", "into"];
            declare.extend(DECLARE_M);
            ok(cwd, &declare);
            let run = strata(
                cwd,
                &["--store", "into", "ingest", "m", "bad", "--format", format],
            );
            match run.code {
                1 => refused += 1,
                0 if format == "parquet" => {
                    // Only a bit the crc does not cover (the footer's statistics, its page
                    // indexes) may go unrefused, and then the rows are the export's.
                    let got = ok(cwd, &["--store", "into", "query", "m"]).stdout;
                    assert_eq!(
                        got, want,
                        "a flip at byte {at} of {file} was stored as other rows"
                    );
                    same += 1;
                }
                // An Arrow IPC stream carries no checksum (docs/formats.md): a flipped value
                // is read as that value. What matters here is that nothing panics.
                0 => same += 1,
                code => panic!("a flip at byte {at} of {file}: exit {code}: {}", run.stderr),
            }
        }
    }
    eprintln!("census: 120 flipped bits: {refused} refused, {same} read (Parquet: the same rows)");
    assert!(refused >= 60, "most flips are refused: {refused}");
}
