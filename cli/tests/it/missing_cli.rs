//! Missing values from the command line (#48): a data logger's CSV, with `NaN`s, empty cells
//! and rows missing one field, ingests whole, reads back cell for cell, and folds and surveys
//! to what DuckDB answers over the same file with NaN and NULL skipped, as pandas skips them.
//! Every expected value is DuckDB's (run by `python3`, as CI installs it), never strata's.

use std::fmt::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value as Json;

use super::cli::Scratch;

/// Rows per sensor: an hour at 100 Hz.
const ROWS: u64 = 360_000;
const SENSORS: [&str; 3] = ["s1", "s2", "s3"];
/// 2026-12-01T00:00:00Z in µs since the Unix epoch.
const T0: u64 = 1_764_547_200_000_000;

/// A small deterministic generator (xorshift64*), so the file is the same on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A draw in `0..1000`.
    fn per_mille(&mut self) -> u64 {
        self.next() % 1000
    }
}

/// One measured cell: ~0.5% `NaN`, ~0.5% empty, and what `value` is otherwise.
fn cell(rng: &mut Rng, value: f64, decimals: usize) -> String {
    match rng.per_mille() {
        0..5 => "NaN".to_owned(),
        5..10 => String::new(),
        _ => format!("{value:.decimals$}"),
    }
}

/// The logger's file: `sensor,t,temperature,pressure`, rows in time order, the three sensors
/// interleaved; 1% of rows lose one field on top of the scattered holes.
fn logger_csv() -> String {
    let mut rng = Rng(0x5eed_cafe);
    let mut csv = String::with_capacity(40 << 20);
    csv.push_str("sensor,t,temperature,pressure\n");
    for i in 0..ROWS {
        for (s, sensor) in SENSORS.iter().enumerate() {
            let t = T0 + i * 10_000;
            let x = i as f64 / 3_000.0 + s as f64;
            let mut temperature = cell(&mut rng, 20.0 + 5.0 * x.sin(), 2);
            let mut pressure = cell(&mut rng, 1013.0 + 3.0 * (x * 0.7).cos(), 1);
            match rng.per_mille() {
                0..5 => temperature.clear(),
                5..10 => pressure.clear(),
                _ => {}
            }
            writeln!(csv, "{sensor},{t},{temperature},{pressure}").unwrap();
        }
    }
    csv
}

/// DuckDB over the CSV: per sensor and field, count, min, max, sum, mean and the p50 and p99
/// by nearest rank (strata's definition: the value at rank ceil(p * n / 100)) of the values
/// present (neither NULL nor NaN); and per sensor and field, each survey bucket's count, min
/// and max for buckets `width` wide. One JSON object on stdout.
const EXPECTED: &str = r#"
import sys, json, duckdb
path, width = sys.argv[1], int(sys.argv[2])
con = duckdb.connect()
con.execute(f"""create table logger as select * from read_csv('{path}', header = true,
    columns = {{'sensor': 'VARCHAR', 't': 'UBIGINT', 'temperature': 'DOUBLE', 'pressure': 'DOUBLE'}})""")
out = {'rows': con.execute('select count(*) from logger').fetchall()[0][0], 'stats': {}, 'buckets': {}}
for field in ['temperature', 'pressure']:
    present = f'{field} is not null and not isnan({field})'
    for sensor, n, lo, hi, total, mean in con.execute(f"""
            select sensor, count({field}), min({field}), max({field}), sum({field}), avg({field})
            from logger where {present} group by sensor""").fetchall():
        out['stats'][f'{sensor}/{field}'] = {'count': n, 'min': lo, 'max': hi, 'sum': total, 'mean': mean}
    for p in [50, 99]:
        for sensor, v in con.execute(f"""
                select sensor, {field} from (
                    select sensor, {field},
                        row_number() over (partition by sensor order by {field}) as r,
                        count(*) over (partition by sensor) as n
                    from logger where {present})
                where r = greatest(1, ceil(n * {p} / 100))""").fetchall():
            out['stats'][f'{sensor}/{field}'][f'p{p}'] = v
    for sensor, b, n, lo, hi in con.execute(f"""
            select sensor, t // {width} as b, count({field}), min({field}), max({field})
            from logger where {present} group by sensor, b order by sensor, b""").fetchall():
        out['buckets'].setdefault(f'{sensor}/{field}', []).append([b, n, lo, hi])
print(json.dumps(out))
"#;

fn duckdb(cwd: &Path, args: &[&str]) -> Json {
    let out = Command::new("python3")
        .arg("-c")
        .arg(EXPECTED)
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .output()
        .expect("python3 runs (CI installs it with duckdb: see .ci/run)");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "python3 failed (duckdb must be installed, as .ci/run does): {stderr}"
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A CSV cell as a number: `None` for an empty cell, NaN for `NaN`.
fn number(text: &str) -> Option<f64> {
    (!text.is_empty()).then(|| text.parse().unwrap())
}

fn same_number(a: Option<f64>, b: Option<f64>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()),
        _ => false,
    }
}

/// `a` and `b` equal to within `rel` of their size (sums of a million floats added in
/// another order differ in their last bits).
fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * a.abs().max(b.abs()).max(1.0)
}

#[test]
fn a_loggers_csv_with_nan_and_empty_cells_ingests_whole_and_folds_as_duckdb_skips_them() {
    let s = Scratch::new();
    let csv = logger_csv();
    s.write("logger.csv", &csv);
    s.ok(
        &[
            "declare",
            "logger",
            "--field",
            "sensor:str",
            "--field",
            "t:u64",
            "--field",
            "temperature:f64",
            "--field",
            "pressure:f64",
            "--track",
            "sensor",
            "--axis",
            "t",
        ],
        "",
    );
    let ingest = s.run(&["ingest", "logger", "logger.csv"]);
    assert_eq!(ingest.code, 0, "{ingest:?}");

    reads_back_cell_for_cell(&s, &csv);

    let survey = s.ok(
        &[
            "survey", "logger", "--track", "s2", "--budget", "800", "--format", "json",
        ],
        "",
    );
    let survey: Json = serde_json::from_str(&survey.stdout).unwrap();
    let width = survey["bucket_width"].as_u64().unwrap();
    let expected = duckdb(s.dir.path(), &["logger.csv", &width.to_string()]);
    assert_eq!(expected["rows"].as_u64(), Some(ROWS * 3));

    for sensor in SENSORS {
        for field in ["temperature", "pressure"] {
            let want = &expected["stats"][format!("{sensor}/{field}")];
            let fold = |agg: &str| -> f64 {
                let value = folded(&s, &["logger", "--track", sensor], field, agg);
                value
                    .as_f64()
                    .unwrap_or_else(|| panic!("{agg} of {field}: {value}"))
            };
            let what = format!("{sensor}/{field}");
            for agg in ["count", "min", "max", "p50", "p99"] {
                let (got, duck) = (fold(agg), want[agg].as_f64().unwrap());
                assert_eq!(
                    got.to_bits(),
                    duck.to_bits(),
                    "{what} {agg}: {got} against {duck}"
                );
            }
            for agg in ["sum", "mean"] {
                let (got, duck) = (fold(agg), want[agg].as_f64().unwrap());
                assert!(close(got, duck, 1e-9), "{what} {agg}: {got} against {duck}");
            }
        }
    }

    survey_buckets_are_duckdbs(&survey, &expected, width);
}

/// The query prints every row as the file held it: sensor and time as written, each measured
/// cell empty where it was empty, NaN where it was NaN, and the same float otherwise.
fn reads_back_cell_for_cell(s: &Scratch, csv: &str) {
    let query = s.ok(&["query", "logger", "--format", "csv"], "");
    let mut back = csv::Reader::from_reader(query.stdout.as_bytes());
    let mut given = csv::Reader::from_reader(csv.as_bytes());
    let header: Vec<String> = back.headers().unwrap().iter().map(str::to_owned).collect();
    let at = |name: &str| header.iter().position(|h| h == name).unwrap();
    let (sensor, t, temperature, pressure) =
        (at("sensor"), at("t"), at("temperature"), at("pressure"));
    let mut n = 0u64;
    for (got, want) in back.records().zip(given.records()) {
        let (got, want) = (got.unwrap(), want.unwrap());
        assert_eq!((&got[sensor], &got[t]), (&want[0], &want[1]), "row {n}");
        for (g, w) in [(temperature, 2), (pressure, 3)] {
            assert!(
                same_number(number(&got[g]), number(&want[w])),
                "row {n}: {:?} printed for {:?}",
                &got[g],
                &want[w]
            );
        }
        n += 1;
    }
    assert_eq!(n, ROWS * 3, "rows read back");
}

/// Each of the survey's buckets (of sensor s2) folds the values present of its rows, each field
/// apart, as DuckDB's grouping does; none holds NaN or null.
fn survey_buckets_are_duckdbs(survey: &Json, expected: &Json, width: u64) {
    for field in survey["fields"].as_array().unwrap() {
        let name = field["field"].as_str().unwrap();
        let want = expected["buckets"][format!("s2/{name}")]
            .as_array()
            .unwrap();
        let got = field["buckets"].as_array().unwrap();
        assert_eq!(got.len(), want.len(), "{name}: buckets");
        for (bucket, want) in got.iter().zip(want) {
            for point in ["first", "last", "min", "max"] {
                assert!(
                    bucket[point]["value"].is_f64(),
                    "{name}: a bucket's {point} is {}",
                    bucket[point]["value"]
                );
            }
            let index = bucket["first"]["axis"].as_u64().unwrap() / width;
            assert_eq!(Some(index), want[0].as_u64(), "{name}: bucket");
            assert_eq!(bucket["count"].as_u64(), want[1].as_u64(), "{name} {index}");
            assert_eq!(
                bucket["min"]["value"].as_f64(),
                want[2].as_f64(),
                "{name} {index}"
            );
            assert_eq!(
                bucket["max"]["value"].as_f64(),
                want[3].as_f64(),
                "{name} {index}"
            );
        }
    }
}

/// DuckDB over `strata export`'s Parquet: `count(v)`, `count(*)`, `min`, `max` and `avg` of
/// each measured field, one JSON object per field on stdout.
const OVER_EXPORT: &str = r"
import sys, json, duckdb
path = sys.argv[1]
con = duckdb.connect()
out = {}
for field in sys.argv[2:]:
    n, rows, lo, hi, mean = con.execute(
        f'select count({field}), count(*), min({field}), max({field}), avg({field}) '
        f'from read_parquet(?)', [path]).fetchall()[0]
    out[field] = {'count': n, 'rows': rows, 'min': lo, 'max': hi, 'mean': mean}
print(json.dumps(out))
";

#[test]
fn duckdb_over_the_export_counts_min_max_and_mean_as_strata_folds() {
    let s = Scratch::new();
    s.ok(
        &[
            "declare", "m", "--field", "site:str", "--field", "t:u64", "--field", "v:f64",
            "--field", "n:i64", "--track", "site", "--axis", "t",
        ],
        "",
    );
    let mut csv = String::from("site,t,v,n\n");
    let mut rng = Rng(42);
    for t in 0..5_000u64 {
        let v = if rng.per_mille() < 30 {
            String::new()
        } else {
            format!("{}", f64::from((t % 97) as u8) / 4.0)
        };
        let n = if rng.per_mille() < 10 {
            String::new()
        } else {
            format!("{}", i64::from((t % 13) as u8) - 6)
        };
        writeln!(csv, "a,{t},{v},{n}").unwrap();
    }
    s.ok(&["ingest", "m", "-"], &csv);
    s.ok(&["export", "m", "--format", "parquet", "m.parquet"], "");
    let out = Command::new("python3")
        .args(["-c", OVER_EXPORT, "m.parquet", "v", "n"])
        .current_dir(s.dir.path())
        .output()
        .expect("python3 runs (CI installs it with duckdb: see .ci/run)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let duck: Json = serde_json::from_slice(&out.stdout).unwrap();
    let rows = s.ok(&["query", "m", "--format", "json"], "");
    let rows: Json = serde_json::from_str(&rows.stdout).unwrap();
    for field in ["v", "n"] {
        let want = &duck[field];
        assert_eq!(
            want["rows"].as_u64(),
            Some(rows.as_array().unwrap().len() as u64)
        );
        let fold = |agg: &str| folded(&s, &["m"], field, agg);
        assert!(
            want["count"].as_u64().unwrap() < 5_000,
            "{field}: the data has nulls"
        );
        assert_eq!(
            fold("count").as_u64(),
            want["count"].as_u64(),
            "{field} count"
        );
        for (agg, key) in [("min", "min"), ("max", "max")] {
            let bits = |v: &Json| v.as_f64().map(f64::to_bits);
            assert_eq!(bits(&fold(agg)), bits(&want[key]), "{field} {agg}");
        }
        let (got, duck_mean) = (
            fold("mean").as_f64().unwrap(),
            want["mean"].as_f64().unwrap(),
        );
        assert!(
            close(got, duck_mean, 1e-12),
            "{field} mean: {got} against {duck_mean}"
        );
    }
}

/// `strata fold SELECTION --agg AGG --format json`'s value for `field`.
fn folded(s: &Scratch, selection: &[&str], field: &str, agg: &str) -> Json {
    let mut args = vec!["fold"];
    args.extend_from_slice(selection);
    args.extend_from_slice(&["--agg", agg, "--format", "json"]);
    let run = s.ok(&args, "");
    let stats: Json = serde_json::from_str(&run.stdout).unwrap();
    let stat = stats
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["field"] == field)
        .unwrap_or_else(|| panic!("no {field} in {stats}"));
    stat["value"].clone()
}
