//! `strata survey` and `strata fold`, run for real against a small series whose every value the
//! test computes itself.

use std::fmt::Write as _;

use serde_json::Value as Json;

use super::cli::Scratch;

/// Rows per site; sites `north` and `south` take turns, so each has every axis value once.
const N_ROWS_PER_SITE: u64 = 300;
/// The axis steps by 3 (cells are 10 wide at level 0: a cell holds three or four rows).
const AXIS_STEP: u64 = 3;

/// One row of the series: `(site, t, v, n)`. Values are quarters (exact in f64 and in decimal)
/// and small integers, scrambled so that neither extreme sits at an end.
fn rows() -> Vec<(&'static str, u64, f64, i64)> {
    let mut rows = Vec::new();
    for i in 0..N_ROWS_PER_SITE {
        for (site_idx, site) in ["north", "south"].into_iter().enumerate() {
            let k = i * 2 + site_idx as u64;
            let v = ((k * 37 + 11) % 101) as f64 / 4.0 - 12.5;
            let n = i64::try_from((k * 53 + 7) % 97).unwrap() - 48;
            rows.push((site, i * AXIS_STEP, v, n));
        }
    }
    rows
}

/// A store with stream `s` (track `site`, axis `t`, measured `v:f64` and `n:i64`, ladder 10:2)
/// holding `rows()`, sealed in a few barriers.
fn series() -> Scratch {
    let s = Scratch::new();
    let declare = [
        "declare", "s", "--field", "site:str", "--field", "t:u64", "--field", "v:f64", "--field",
        "n:i64", "--track", "site", "--axis", "t", "--ladder", "10:2",
    ];
    s.ok(&declare, "");
    let mut csv = String::from("site,t,v,n\n");
    for (site, t, v, n) in rows() {
        writeln!(csv, "{site},{t},{v},{n}").unwrap();
    }
    s.ok(&["ingest", "s", "-", "--seal-every", "250"], &csv);
    s
}

/// The rows of `site` (every site for `None`) whose axis lies in `[lo, hi]`.
fn selected(site: Option<&str>, lo: u64, hi: u64) -> Vec<(u64, f64, i64)> {
    rows()
        .into_iter()
        .filter(|r| site.is_none_or(|s| s == r.0) && (lo..=hi).contains(&r.1))
        .map(|(_, t, v, n)| (t, v, n))
        .collect()
}

fn survey_json(s: &Scratch, args: &[&str]) -> Json {
    let mut all = vec!["survey", "s", "--format", "json"];
    all.extend_from_slice(args);
    serde_json::from_str(&s.ok(&all, "").stdout).unwrap()
}

/// Per field: (bucket count, sum of counts, min over min values, max over max values).
fn summarise(survey: &Json, field: &str) -> (usize, u64, f64, f64) {
    let buckets = survey["fields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["field"] == field)
        .unwrap_or_else(|| panic!("no field {field} in {survey}"))["buckets"]
        .as_array()
        .unwrap();
    let count = buckets.iter().map(|b| b["count"].as_u64().unwrap()).sum();
    let min = buckets
        .iter()
        .map(|b| b["min"]["value"].as_f64().unwrap())
        .fold(f64::INFINITY, f64::min);
    let max = buckets
        .iter()
        .map(|b| b["max"]["value"].as_f64().unwrap())
        .fold(f64::NEG_INFINITY, f64::max);
    (buckets.len(), count, min, max)
}

fn extremes(values: impl Iterator<Item = f64> + Clone) -> (f64, f64) {
    (
        values.clone().fold(f64::INFINITY, f64::min),
        values.fold(f64::NEG_INFINITY, f64::max),
    )
}

/// Nearest rank: `v[max(1, ceil(p * n / 100))]` of the sorted values, 1-based.
fn nearest_rank<T: Copy + PartialOrd>(mut values: Vec<T>, p: usize) -> T {
    values.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let rank = (p * values.len()).div_ceil(100).max(1);
    values[rank - 1]
}

#[test]
fn a_survey_in_json_holds_every_row_and_the_true_extremes() {
    let s = series();
    for (site, args) in [(Some("north"), vec!["--track", "north"]), (None, vec![])] {
        let mut all = vec!["--budget", "400"];
        all.extend_from_slice(&args);
        let survey = survey_json(&s, &all);
        let rows = selected(site, 0, u64::MAX);
        let last_axis = (N_ROWS_PER_SITE - 1) * AXIS_STEP;
        assert_eq!(
            survey["span"],
            serde_json::json!([0, last_axis]),
            "{survey}"
        );
        let (n_buckets, count, min, max) = summarise(&survey, "v");
        assert!(n_buckets > 1 && n_buckets <= 400 / 8, "{n_buckets}");
        assert_eq!(count, rows.len() as u64, "{site:?}");
        assert_eq!((min, max), extremes(rows.iter().map(|r| r.1)), "{site:?}");
        let (_, count, min, max) = summarise(&survey, "n");
        assert_eq!(count, rows.len() as u64);
        assert_eq!((min, max), extremes(rows.iter().map(|r| r.2 as f64)));
        // Buckets come in axis order, each point placed inside its bucket.
        let buckets = survey["fields"][0]["buckets"].as_array().unwrap();
        let mut previous_last = None;
        for b in buckets {
            let axis = |p: &str| b[p]["axis"].as_u64().unwrap();
            assert!(previous_last.is_none_or(|last| last < axis("first")), "{b}");
            for p in ["min", "max"] {
                assert!((axis("first")..=axis("last")).contains(&axis(p)), "{b}");
            }
            previous_last = Some(axis("last"));
        }
    }
}

#[test]
fn a_range_on_whole_cells_holds_exactly_its_rows() {
    let s = series();
    // Level-0 cells are 10 wide, so 100..=299 is whole cells; a budget this large is answered
    // at level 0, and the buckets hold exactly the rows of the range.
    let survey = survey_json(&s, &["--budget", "4000", "--from", "100", "--to", "299"]);
    assert_eq!(survey["level"], 0, "{survey}");
    assert_eq!(survey["span"], serde_json::json!([100, 299]));
    let rows = selected(None, 100, 299);
    let (n_buckets, count, min, max) = summarise(&survey, "v");
    assert_eq!(n_buckets, 20);
    assert_eq!(count, rows.len() as u64);
    assert_eq!((min, max), extremes(rows.iter().map(|r| r.1)));

    // A range beyond the data answers no buckets, and a backwards one is a usage error.
    let empty = survey_json(&s, &["--budget", "64", "--from", "5000"]);
    assert_eq!(summarise(&empty, "v").0, 0, "{empty}");
    let backwards = s.run(&["survey", "s", "--budget", "64", "--from", "9", "--to", "8"]);
    assert_eq!(backwards.code, 2, "{backwards:?}");
}

#[test]
fn the_budget_is_a_ceiling_for_every_budget() {
    let s = series();
    let n_rows = selected(None, 0, u64::MAX).len() as u64;
    // Two measured fields: a bucket of each costs 8 points. Most of these are not multiples of 8.
    for budget in [8u64, 9, 15, 17, 23, 31, 40, 41, 100, 203, 1001] {
        let survey = survey_json(&s, &["--budget", &budget.to_string()]);
        let fields = survey["fields"].as_array().unwrap();
        assert_eq!(fields.len(), 2);
        let n_buckets: u64 = fields
            .iter()
            .map(|f| f["buckets"].as_array().unwrap().len() as u64)
            .sum();
        assert!(
            n_buckets * 4 <= budget,
            "budget {budget}: {n_buckets} buckets"
        );
        assert!(n_buckets >= 2, "budget {budget}: at least a bucket a field");
        for field in ["v", "n"] {
            assert_eq!(summarise(&survey, field).1, n_rows, "budget {budget}");
        }
    }
}

#[test]
fn a_budget_below_four_points_a_field_exits_1_naming_the_minimum() {
    let s = series();
    for budget in ["0", "7"] {
        let run = s.run(&["survey", "s", "--budget", budget]);
        assert_eq!(run.code, 1, "{run:?}");
        assert!(run.stderr.contains("minimum of 8"), "{run:?}");
        assert_eq!(run.stderr.lines().count(), 1, "{run:?}");
        assert!(run.stdout.is_empty(), "{run:?}");
    }
    let missing = s.run(&["survey", "s"]);
    assert_eq!(missing.code, 2, "--budget is required: {missing:?}");
    let unknown = s.run(&["survey", "nope", "--budget", "64"]);
    assert_eq!(unknown.code, 1, "{unknown:?}");
}

/// South over 40 points: 5 buckets a field at most (two fields, 4 points a bucket). The series
/// spans 0 ..= 897; cells are 10 x 2^level wide, so level 4 (160 wide) would take 6 buckets and
/// level 5 (320 wide) takes 3: 24 points, from south's 300 rows.
#[test]
fn the_table_says_the_axis_range_and_the_bucket_width_in_axis_units() {
    let s = series();
    let run = s.ok(&["survey", "s", "--track", "south", "--budget", "40"], "");
    let first = run.stdout.lines().next().unwrap();
    assert_eq!(
        first,
        "s south, t 0 .. 897: 3 buckets a field, each summarising 320 of t; 24 of the 40 points \
         asked for, from 300 rows"
    );
    for word in ["level", "group", "cells", "span"] {
        assert!(!run.stdout.contains(word), "{word:?}: {}", run.stdout);
    }
    assert!(run.stdout.contains("\nv: 3 buckets\n"), "{}", run.stdout);
    assert!(run.stdout.contains("\nn: 3 buckets\n"), "{}", run.stdout);
    assert!(run.stdout.contains("t first..last"), "{}", run.stdout);
    assert!(run.stdout.contains("min @ t"), "{}", run.stdout);
    // Every bucket's rows: 320 axis units hold 107 or 106 of south's rows (one every 3).
    assert!(run.stdout.contains("  0..318  "), "{}", run.stdout);

    // A range with no rows says so, and what it cost.
    let empty = s.ok(&["survey", "s", "--budget", "40", "--from", "5000"], "");
    assert_eq!(
        empty.stdout.lines().next().unwrap(),
        "s every track, t: no rows in this range; 0 of the 40 points asked for"
    );
}

/// The JSON names the axis and gives the bucket width in axis units; each field's buckets sit
/// under its name, with no numeric field index beside it.
#[test]
fn survey_json_names_the_axis_and_bucket_width_and_has_no_field_index() {
    let s = series();
    let survey = survey_json(&s, &["--track", "south", "--budget", "40"]);
    assert_eq!(survey["axis"], "t", "{survey}");
    assert_eq!(survey["bucket_width"], 320, "{survey}");
    assert_eq!(survey["span"], serde_json::json!([0, 897]), "{survey}");
    let mut keys: Vec<&str> = survey
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        ["axis", "bucket_width", "fields", "group", "level", "span"]
    );
    let fields = survey["fields"].as_array().unwrap();
    let names: Vec<&str> = fields
        .iter()
        .map(|f| f["field"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["v", "n"]);
    for field in fields {
        for bucket in field["buckets"].as_array().unwrap() {
            let mut keys: Vec<&str> = bucket
                .as_object()
                .unwrap()
                .keys()
                .map(String::as_str)
                .collect();
            keys.sort_unstable();
            assert_eq!(
                keys,
                ["count", "first", "last", "max", "min", "sum", "sum_sq"],
                "{bucket}"
            );
        }
    }
    assert!(
        !s.ok(&["survey", "s", "--budget", "40", "--format", "json"], "")
            .stdout
            .contains("\"field\":0")
    );
}

#[test]
fn fold_percentiles_are_the_nearest_rank_of_the_rows_in_range() {
    let s = series();
    for (site, lo, hi) in [
        (None, 0, u64::MAX),
        (Some("north"), 0, 897),
        (Some("south"), 31, 500),
    ] {
        let rows = selected(site, lo, hi);
        let mut args = vec!["fold", "s", "--agg", "p50"];
        let (from, to) = (lo.to_string(), hi.to_string());
        if let Some(site) = site {
            args.extend(["--track", site, "--from", &from, "--to", &to]);
        }
        let v = nearest_rank(rows.iter().map(|r| r.1).collect(), 50);
        let n = nearest_rank(rows.iter().map(|r| r.2).collect(), 50);
        let text = s.ok(&args, "");
        assert_eq!(text.stdout, format!("v: {v:?}\nn: {n}\n"), "{args:?}");
        args.extend(["--format", "json"]);
        let json: Json = serde_json::from_str(&s.ok(&args, "").stdout).unwrap();
        assert_eq!(
            json,
            serde_json::json!([{"field": "v", "value": v}, {"field": "n", "value": n}])
        );
    }

    let all = selected(None, 0, u64::MAX);
    let p99 = s.ok(&["fold", "s", "--agg", "p99"], "");
    let v99 = nearest_rank(all.iter().map(|r| r.1).collect(), 99);
    assert!(p99.stdout.starts_with(&format!("v: {v99:?}\n")), "{p99:?}");
    let count = s.ok(&["fold", "s", "--agg", "count"], "");
    assert_eq!(count.stdout, format!("v: {0}\nn: {0}\n", all.len()));
    let (v_min, _) = extremes(all.iter().map(|r| r.1));
    let min = s.ok(&["fold", "s", "--agg", "min"], "");
    assert_eq!(min.stdout.lines().next().unwrap(), format!("v: {v_min:?}"));
}

#[test]
fn fold_refuses_an_unknown_aggregate_naming_it() {
    let s = series();
    for word in ["median", "P50", "p101"] {
        let run = s.run(&["fold", "s", "--agg", word]);
        assert_eq!(run.code, 2, "{run:?}");
        assert!(run.stderr.contains(&format!("\"{word}\"")), "{run:?}");
        assert!(
            run.stderr.contains("min max mean sum count p0..p100"),
            "{run:?}"
        );
    }
    // An empty range folds to nothing: `-` for people, null in JSON.
    let empty = s.ok(&["fold", "s", "--agg", "mean", "--from", "5000"], "");
    assert_eq!(empty.stdout, "v: -\nn: -\n");
    let args = [
        "fold", "s", "--agg", "p50", "--from", "5000", "--format", "json",
    ];
    let json: Json = serde_json::from_str(&s.ok(&args, "").stdout).unwrap();
    assert_eq!(
        json,
        serde_json::json!([{"field": "v", "value": null}, {"field": "n", "value": null}])
    );
}

#[test]
fn svg_is_a_well_formed_picture_with_a_band_per_field() {
    let s = series();
    for budget in ["8", "400"] {
        let run = s.ok(&["survey", "s", "--budget", budget, "--svg", "pic.svg"], "");
        assert!(
            run.stdout.contains("points asked for"),
            "the table still prints: {run:?}"
        );
        let svg = std::fs::read_to_string(s.dir.path().join("pic.svg")).unwrap();
        assert!(svg.starts_with("<svg"), "{svg}");
        assert!(svg.trim_end().ends_with("</svg>"), "{svg}");
        assert_eq!(svg.matches("<path class=\"band\"").count(), 2, "{svg}");
        assert_eq!(svg.matches("<path class=\"line\"").count(), 2, "{svg}");
        assert!(!svg.contains("NaN") && !svg.contains("inf"), "{svg}");
        for name in [">v<", ">n<"] {
            assert!(svg.contains(name), "the panel titles: {svg}");
        }
    }
    let unwritable = s.run(&[
        "survey",
        "s",
        "--budget",
        "64",
        "--svg",
        "no/such/dir/p.svg",
    ]);
    assert_eq!(unwritable.code, 1, "{unwritable:?}");
    assert!(unwritable.stderr.contains("cannot write"), "{unwritable:?}");
}

/// A store with stream `b` (axis `t`, measured `v:f64`) holding two rows of `value`, whose sum
/// overflows f64.
fn huge(value: &str) -> Scratch {
    let s = Scratch::new();
    s.ok(
        &[
            "declare", "b", "--field", "t:u64", "--field", "v:f64", "--axis", "t",
        ],
        "",
    );
    s.ok(&["ingest", "b"], &format!("t,v\n1,{value}\n2,{value}\n"));
    s
}

fn fold_json(s: &Scratch, args: &[&str]) -> Json {
    let mut all = vec!["fold", "b", "--format", "json"];
    all.extend_from_slice(args);
    let run = s.ok(&all, "");
    assert!(!run.stdout.contains("null"), "{run:?}");
    serde_json::from_str(&run.stdout).unwrap()
}

#[test]
fn an_overflowed_sum_is_never_printed_as_null() {
    for (value, word) in [("1e308", "inf"), ("-1e308", "-inf")] {
        let s = huge(value);
        for agg in ["sum", "mean"] {
            let json = fold_json(&s, &["--agg", agg]);
            assert_eq!(json[0]["field"], "v");
            assert_eq!(json[0]["value"], word, "{agg} of two {value}: {json}");
            let table = s.ok(&["fold", "b", "--agg", agg], "");
            assert_eq!(
                table.stdout,
                format!("v: {word} (overflowed f64)\n"),
                "{agg}"
            );
        }
        // The values themselves are finite and print as numbers.
        let json = fold_json(&s, &["--agg", "min"]);
        assert_eq!(json[0]["value"].as_f64(), Some(value.parse().unwrap()));
        let json = fold_json(&s, &["--agg", "count"]);
        assert_eq!(json[0]["value"], 2);

        let run = s.ok(&["survey", "b", "--budget", "4", "--format", "json"], "");
        assert!(!run.stdout.contains("null"), "{run:?}");
        let survey: Json = serde_json::from_str(&run.stdout).unwrap();
        let bucket = &survey["fields"][0]["buckets"][0];
        assert_eq!(bucket["count"], 2, "{survey}");
        assert_eq!(bucket["sum"], word, "{survey}");
        assert_eq!(bucket["sum_sq"], "inf", "{survey}");
        assert_eq!(
            bucket["min"]["value"].as_f64(),
            Some(value.parse().unwrap())
        );
        let table = s.ok(&["survey", "b", "--budget", "4"], "");
        assert!(table.stdout.contains(word), "the mean column: {table:?}");
    }
}

#[test]
fn a_count_over_an_empty_range_is_0_not_null() {
    let s = huge("1.5");
    for range in [&["--from", "100", "--to", "200"][..], &["--track", ""]] {
        let mut args = vec!["--agg", "count"];
        args.extend_from_slice(range);
        let json = fold_json(&s, &args);
        let want = if range[0] == "--from" { 0 } else { 2 };
        assert_eq!(json[0]["value"], want, "{range:?}: {json}");
        let mut table = vec!["fold", "b"];
        table.extend_from_slice(&args);
        assert_eq!(s.ok(&table, "").stdout, format!("v: {want}\n"), "{range:?}");
    }
    // Other statistics of no rows are absent: `null` in JSON, `-` in the table, as before.
    let run = s.ok(
        &[
            "fold", "b", "--agg", "sum", "--from", "100", "--format", "json",
        ],
        "",
    );
    assert_eq!(run.stdout, "[{\"field\":\"v\",\"value\":null}]\n");
    let run = s.ok(&["fold", "b", "--agg", "sum", "--from", "100"], "");
    assert_eq!(run.stdout, "v: -\n");
}

#[test]
fn fold_on_a_stream_with_no_measured_field_is_refused_as_survey_is() {
    let s = Scratch::new();
    let declare = [
        "declare", "tags", "--field", "t:u64", "--field", "site:str", "--axis", "t",
    ];
    s.ok(&declare, "");
    s.ok(&["ingest", "tags"], "t,site\n1,north\n2,south\n");
    for format in ["table", "json"] {
        for agg in ["count", "sum", "p50"] {
            let run = s.run(&["fold", "tags", "--agg", agg, "--format", format]);
            assert_eq!(run.code, 1, "{agg} {format}: {run:?}");
            assert!(run.stdout.is_empty(), "{run:?}");
            assert!(
                run.stderr
                    .contains("stream \"tags\" has no measured field to fold"),
                "{run:?}"
            );
        }
        let run = s.run(&["survey", "tags", "--budget", "64", "--format", format]);
        assert_eq!(run.code, 1, "{run:?}");
        assert!(run.stderr.contains("no measured field"), "{run:?}");
    }
}

/// `--fill spend` spends the budget: 10 buckets a field where the finest level that fits answers
/// 6. The series spans 90 level-0 cells of width 10 (axis 0..=897); a budget of 80 points over
/// two fields buys 10 a field. Level 4 (cells 160 wide) is the finest that fits: 6 cells.
/// Spending groups level 0's 90 cells in nines, anchored at 0: cells 0..=89 make 10 groups.
/// Every row is in one bucket under either, and the default is the finest level's answer.
#[test]
fn survey_fill_spend_answers_with_more_of_the_budget() {
    let s = series();
    let finest = survey_json(&s, &["--budget", "80"]);
    assert_eq!(
        survey_json(&s, &["--budget", "80", "--fill", "finest"]),
        finest
    );
    let spent = survey_json(&s, &["--budget", "80", "--fill", "spend"]);
    assert_eq!(
        (finest["level"].as_u64(), finest["group"].as_u64()),
        (Some(4), Some(1))
    );
    assert_eq!(
        (spent["level"].as_u64(), spent["group"].as_u64()),
        (Some(0), Some(9))
    );
    let all = selected(None, 0, u64::MAX);
    for field in ["v", "n"] {
        let (n_finest, rows_finest, ..) = summarise(&finest, field);
        let (n_spent, rows_spent, ..) = summarise(&spent, field);
        assert_eq!((n_finest, n_spent), (6, 10), "{field}");
        assert_eq!(rows_finest, all.len() as u64, "{field}");
        assert_eq!(rows_spent, all.len() as u64, "{field}");
    }
    let refused = s.run(&["survey", "s", "--budget", "80", "--fill", "most"]);
    assert_eq!(
        refused.code, 2,
        "clap refuses a value it does not know: {}",
        refused.stderr
    );
    assert!(refused.stderr.contains("--fill"), "{}", refused.stderr);
}
