//! JSON views of the read answers (`survey`, `fold`) that never turn a number into `null`.
//!
//! serde_json writes a non-finite f64 as `null`, the word these answers keep for "no rows". A
//! measured value is always finite (publish refuses anything else), but a float accumulator can
//! overflow f64: a `sum` or `sum_sq` past ±1.8e308, and a `mean` taken from such a sum. Here
//! such a number is the JSON string `"inf"` or `"-inf"`, or `"nan"` where overflows of both
//! signs met; every finite number is written exactly as serde_json writes it. A consumer that
//! reads a number finds a string instead, which it cannot mistake for `null` or for a value.
//!
//! The fold view mirrors the engine's `FieldStat` field for field. The survey view is the
//! engine's `Survey` with the axis named and each bucket's width in axis units added, and
//! without the engine's per-bucket field index (each field's buckets sit under its name).

use serde::{Serialize, Serializer};
use strata::{Bucket, FieldBuckets, FieldStat, Num, Point, Survey};

use super::survey::Scope;

/// The word for a float that is not finite: `inf`, `-inf` or `nan`.
pub fn non_finite_word(value: f64) -> &'static str {
    debug_assert!(!value.is_finite());
    if value.is_nan() {
        "nan"
    } else if value > 0.0 {
        "inf"
    } else {
        "-inf"
    }
}

/// An f64 that is written as a number when finite and as its word otherwise.
#[derive(Clone, Copy, Debug)]
struct Float(f64);

impl Serialize for Float {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if self.0.is_finite() {
            serializer.serialize_f64(self.0)
        } else {
            serializer.serialize_str(non_finite_word(self.0))
        }
    }
}

/// A value of any numeric kind; only an f64 can be non-finite.
#[derive(Clone, Copy, Debug)]
struct Value(Num);

impl Serialize for Value {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Num::F64(v) => Float(v).serialize(serializer),
            other => other.serialize(serializer),
        }
    }
}

/// A row read's answer for a page (`strata view`'s `/api/rows`): the rows' axis values, as
/// offsets from `origin` (a decimal string, exact past 2^53; the offsets are the rows' distance
/// from the first, small), and each named field's values, column by column, in the rows' order;
/// `more` says rows beyond these were left unread. A missing value is `null`, a non-finite
/// float its word.
#[cfg(feature = "view")]
pub fn rows(
    axis: &[u64],
    fields: &[(&str, Vec<strata::Value>)],
    more: bool,
) -> serde_json::Result<String> {
    #[derive(Serialize)]
    struct RowsView<'a> {
        rows: usize,
        more: bool,
        origin: String,
        at: Vec<u64>,
        fields: Vec<ColumnView<'a>>,
    }
    #[derive(Serialize)]
    struct ColumnView<'a> {
        field: &'a str,
        values: Vec<Option<Value>>,
    }
    let number = |value: &strata::Value| match *value {
        strata::Value::U64(v) => Some(Value(Num::U64(v))),
        strata::Value::I64(v) => Some(Value(Num::I64(v))),
        strata::Value::F64(v) => Some(Value(Num::F64(v))),
        strata::Value::Str(_) | strata::Value::Bytes(_) | strata::Value::Null => None,
    };
    let origin = axis.iter().copied().min().unwrap_or(0);
    serde_json::to_string(&RowsView {
        rows: axis.len(),
        more,
        origin: origin.to_string(),
        at: axis.iter().map(|a| a - origin).collect(),
        fields: fields
            .iter()
            .map(|(field, values)| ColumnView {
                field,
                values: values.iter().map(number).collect(),
            })
            .collect(),
    })
}

/// Where a page's columns of `survey` count their axis values from: the least of its span and
/// of its buckets' first points (a boundary bucket may start before the span).
#[cfg(feature = "view")]
pub fn columns_origin(survey: &Survey) -> u64 {
    survey
        .fields
        .iter()
        .flat_map(|f| f.buckets.iter().map(|b| b.first.axis))
        .chain(survey.span.map(|[lo, _]| lo))
        .min()
        .unwrap_or(0)
}

/// A survey for a page (`strata view`'s `/api/survey?format=columns`): what
/// [`survey`] answers, each field's buckets as columns rather than objects (a page parses a
/// few arrays of numbers several times faster than thousands of objects), and the axis values
/// as offsets from `origin` (a decimal string, as are `span` and `bucket_width`): `first_at`,
/// `first`, `last_at`, `last`, `min_at`, `min`, `max_at`, `max`, `count`, `sum`.
#[cfg(feature = "view")]
pub fn survey_columns(survey: &Survey, scope: &Scope<'_>) -> serde_json::Result<String> {
    #[derive(Serialize)]
    struct SurveyColumns<'a> {
        axis: String,
        origin: String,
        span: Option<[String; 2]>,
        bucket_width: Option<String>,
        level: u8,
        group: u128,
        fields: Vec<FieldColumns<'a>>,
    }
    #[derive(Serialize, Default)]
    struct FieldColumns<'a> {
        field: &'a str,
        first_at: Vec<u64>,
        first: Vec<Value>,
        last_at: Vec<u64>,
        last: Vec<Value>,
        min_at: Vec<u64>,
        min: Vec<Value>,
        max_at: Vec<u64>,
        max: Vec<Value>,
        count: Vec<u64>,
        sum: Vec<Float>,
    }
    let origin = columns_origin(survey);
    let view = SurveyColumns {
        axis: scope.axis_name(),
        origin: origin.to_string(),
        span: survey.span.map(|[lo, hi]| [lo.to_string(), hi.to_string()]),
        bucket_width: scope.bucket_width(survey).map(|w| w.to_string()),
        level: survey.level,
        group: survey.group,
        fields: survey
            .fields
            .iter()
            .map(|FieldBuckets { field, buckets }| {
                let mut columns = FieldColumns {
                    field,
                    ..FieldColumns::default()
                };
                for b in buckets {
                    columns.first_at.push(b.first.axis - origin);
                    columns.first.push(Value(b.first.value));
                    columns.last_at.push(b.last.axis - origin);
                    columns.last.push(Value(b.last.value));
                    columns.min_at.push(b.min.axis - origin);
                    columns.min.push(Value(b.min.value));
                    columns.max_at.push(b.max.axis - origin);
                    columns.max.push(Value(b.max.value));
                    columns.count.push(b.count);
                    columns.sum.push(Float(b.sum));
                }
                columns
            })
            .collect(),
    };
    serde_json::to_string(&view)
}

/// A fold's answer: a `{"field", "value"}` object per measured field, `value` null for no rows.
pub fn fold(stats: &[FieldStat]) -> serde_json::Result<String> {
    #[derive(Serialize)]
    struct Stat<'a> {
        field: &'a str,
        value: Option<Value>,
    }
    let stats: Vec<Stat<'_>> = stats
        .iter()
        .map(|stat| Stat {
            field: &stat.field,
            value: stat.value.map(Value),
        })
        .collect();
    serde_json::to_string(&stats)
}

/// A survey's answer: the axis field's name, the span covered, each bucket's width in axis
/// units (`null` where one bucket holds the whole axis), the ladder level and the cells of it
/// merged per bucket, and the buckets of each measured field under its name.
pub fn survey(survey: &Survey, scope: &Scope<'_>) -> serde_json::Result<String> {
    #[derive(Serialize)]
    struct SurveyView<'a> {
        axis: String,
        span: Option<[u64; 2]>,
        bucket_width: Option<u64>,
        level: u8,
        group: u128,
        fields: Vec<FieldView<'a>>,
    }
    #[derive(Serialize)]
    struct FieldView<'a> {
        field: &'a str,
        buckets: Vec<BucketView>,
    }
    let view = SurveyView {
        axis: scope.axis_name(),
        span: survey.span,
        bucket_width: scope
            .bucket_width(survey)
            .and_then(|w| u64::try_from(w).ok()),
        level: survey.level,
        group: survey.group,
        fields: survey
            .fields
            .iter()
            .map(|FieldBuckets { field, buckets }| FieldView {
                field,
                buckets: buckets.iter().map(BucketView::of).collect(),
            })
            .collect(),
    };
    serde_json::to_string(&view)
}

#[derive(Serialize)]
struct PointView {
    axis: u64,
    value: Value,
}

impl PointView {
    fn of(point: Point) -> PointView {
        PointView {
            axis: point.axis,
            value: Value(point.value),
        }
    }
}

#[derive(Serialize)]
struct BucketView {
    first: PointView,
    last: PointView,
    min: PointView,
    max: PointView,
    count: u64,
    sum: Float,
    sum_sq: Float,
}

impl BucketView {
    fn of(bucket: &Bucket) -> BucketView {
        // Destructured whole, so a field added to `Bucket` fails to compile here instead of
        // silently missing from the JSON. The field index is left out: the buckets sit under
        // their field's name.
        let Bucket {
            field: _,
            first,
            last,
            min,
            max,
            count,
            sum,
            sum_sq,
        } = *bucket;
        BucketView {
            first: PointView::of(first),
            last: PointView::of(last),
            min: PointView::of(min),
            max: PointView::of(max),
            count,
            sum: Float(sum),
            sum_sq: Float(sum_sq),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_non_finite_float_is_a_word_and_a_finite_one_a_number() {
        let json = |v: f64| serde_json::to_string(&Float(v)).expect("serializes");
        assert_eq!(json(f64::INFINITY), "\"inf\"");
        assert_eq!(json(f64::NEG_INFINITY), "\"-inf\"");
        assert_eq!(json(f64::NAN), "\"nan\"");
        assert_eq!(json(2.5), "2.5");
        assert_eq!(json(1e308), "1e+308");
        let value = |n: Num| serde_json::to_string(&Value(n)).expect("serializes");
        assert_eq!(value(Num::U64(u64::MAX)), "18446744073709551615");
        assert_eq!(value(Num::I64(-3)), "-3");
    }
}
