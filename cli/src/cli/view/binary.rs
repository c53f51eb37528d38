//! The page's binary form of a survey (`/api/survey?format=binary`, #51): what the page's
//! columns (`json::survey_columns`) hold, as arrays of little-endian f64 a browser reads in place
//! (`Float64Array` over the answer's bytes) instead of parsing text: a page asking three tracks
//! at once spent most of a repaint turning ~140 KB of JSON a track into numbers.
//!
//! Layout: a u32 (little-endian) length, a JSON header of that many bytes, zeros to the next
//! multiple of 8 from the answer's start, then the columns:
//!
//! - header: `{"axis", "origin", "span", "bucket_width", "level", "group", "fields": [{"field",
//!   "buckets"}], "rows"}`; `origin`, `span` and `bucket_width` are decimal strings (exact past
//!   2^53), `rows` is `null`, `{"retired_below": "N"}`, or `{"origin", "rows", "more",
//!   "fields": [names]}`;
//! - each field's buckets: ten columns of `buckets` f64s, `first_at`, `first`, `last_at`,
//!   `last`, `min_at`, `min`, `max_at`, `max`, `count`, `sum` (an `_at` is the axis value less
//!   `origin`);
//! - the rows, if given: `at` (the axis less the rows' origin), each field's values, then each
//!   field's missing mask, a byte a row (1: missing).
//!
//! A number an f64 cannot hold exactly (an axis offset or an integer past 2^53) has no binary
//! form: [`survey`] answers `None` and the page gets the JSON columns instead.

use serde_json::json;
use strata::{FieldBuckets, Num, Survey, Value};

use super::super::survey::Scope;

/// Rows read for a page: their axis values, and each measured field's values.
pub(super) struct Rows<'a> {
    pub axis: &'a [u64],
    pub columns: &'a [(&'a str, Vec<Value>)],
    pub more: bool,
}

/// What a survey's answer carries of rows.
pub(super) enum RowsPart<'a> {
    None,
    /// The range reaches beneath a floor: rows beneath it are retired.
    Retired(u64),
    Rows(Rows<'a>),
}

/// One column of a field's buckets: a number of each, if it has an exact f64.
type Column<'a> = dyn Fn(&strata::Bucket) -> Option<f64> + 'a;

/// The largest integer an f64 holds exactly, with every one beneath it.
const EXACT: u64 = 1 << 53;

fn whole(v: u64) -> Option<f64> {
    #[expect(clippy::cast_precision_loss, reason = "exact: at most 2^53")]
    (v <= EXACT).then_some(v as f64)
}

fn number(value: Num) -> Option<f64> {
    #[expect(clippy::cast_precision_loss, reason = "exact: at most 2^53 either way")]
    match value {
        Num::U64(v) => whole(v),
        Num::I64(v) => (v.unsigned_abs() <= EXACT).then_some(v as f64),
        Num::F64(v) => Some(v),
    }
}

/// The answer's bytes, or `None` where a number has no exact f64.
pub(super) fn survey(survey: &Survey, scope: &Scope<'_>, rows: &RowsPart<'_>) -> Option<Vec<u8>> {
    let origin = super::super::json::columns_origin(survey);
    let rows_origin = match rows {
        RowsPart::Rows(rows) => rows.axis.iter().copied().min().unwrap_or(0),
        _ => 0,
    };
    let rows_header = match rows {
        RowsPart::None => serde_json::Value::Null,
        RowsPart::Retired(floor) => json!({"retired_below": floor.to_string()}),
        RowsPart::Rows(rows) => json!({
            "origin": rows_origin.to_string(),
            "rows": rows.axis.len(),
            "more": rows.more,
            "fields": rows.columns.iter().map(|(name, _)| *name).collect::<Vec<_>>(),
        }),
    };
    let header = json!({
        "axis": scope.axis_name(),
        "origin": origin.to_string(),
        "span": survey.span.map(|[lo, hi]| [lo.to_string(), hi.to_string()]),
        "bucket_width": scope.bucket_width(survey).map(|w| w.to_string()),
        "level": survey.level,
        "group": survey.group.to_string(),
        "fields": survey.fields.iter().map(|f| json!({"field": f.field, "buckets": f.buckets.len()})).collect::<Vec<_>>(),
        "rows": rows_header,
    })
    .to_string();
    let mut out = Vec::new();
    out.extend_from_slice(&u32::try_from(header.len()).ok()?.to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.resize(out.len().next_multiple_of(8), 0);
    let mut put = |v: f64| out.extend_from_slice(&v.to_le_bytes());
    for FieldBuckets { buckets, .. } in &survey.fields {
        let at = |axis: u64| whole(axis - origin);
        let columns: [&Column; 10] = [
            &|b| at(b.first.axis),
            &|b| number(b.first.value),
            &|b| at(b.last.axis),
            &|b| number(b.last.value),
            &|b| at(b.min.axis),
            &|b| number(b.min.value),
            &|b| at(b.max.axis),
            &|b| number(b.max.value),
            &|b| whole(b.count),
            &|b| Some(b.sum),
        ];
        for column in columns {
            for bucket in buckets {
                put(column(bucket)?);
            }
        }
    }
    if let RowsPart::Rows(rows) = rows {
        for &axis in rows.axis {
            put(whole(axis - rows_origin)?);
        }
        for (_, values) in rows.columns {
            for value in values {
                put(match *value {
                    Value::U64(v) => number(Num::U64(v))?,
                    Value::I64(v) => number(Num::I64(v))?,
                    Value::F64(v) => v,
                    _ => 0.0,
                });
            }
        }
        for (_, values) in rows.columns {
            out.extend(values.iter().map(|v| u8::from(matches!(v, Value::Null))));
        }
    }
    Some(out)
}
