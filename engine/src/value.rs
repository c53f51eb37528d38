//! Rows as values: what `publish` takes and `query` answers.

use std::fmt;

use serde::{Deserialize, Serialize};
use strata_index::FieldKind;

/// One value of a declared field.
///
/// Equality is what a read promises: a value comes back as it was published, so NaN equals
/// NaN here (and only NaN), unlike `f64`'s own `==`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Value {
    /// A `u64` field.
    U64(u64),
    /// An `i64` field.
    I64(i64),
    /// An `f64` field. A measured one may hold NaN or an infinity: both are stored as they
    /// are; levels fold the values that are present (an infinity is a value, NaN is not).
    F64(f64),
    /// A `str` field.
    Str(String),
    /// A `bytes` field.
    Bytes(Vec<u8>),
    /// A missing value of a measured field (`u64`, `i64` or `f64`, neither the axis nor a
    /// track component): the row is stored whole, this field of it as null, and levels fold
    /// the field's present values. JSON `null`. A track label or the axis is never missing.
    Null,
}

impl PartialEq for Value {
    fn eq(&self, other: &Value) -> bool {
        match (self, other) {
            (Value::U64(a), Value::U64(b)) => a == b,
            (Value::I64(a), Value::I64(b)) => a == b,
            (Value::F64(a), Value::F64(b)) => a == b || (a.is_nan() && b.is_nan()),
            (Value::Str(a), Value::Str(b)) => a == b,
            (Value::Bytes(a), Value::Bytes(b)) => a == b,
            (Value::Null, Value::Null) => true,
            _ => false,
        }
    }
}

/// One row: a value per declared field, in declaration order.
pub type Row = Vec<Value>;

impl Value {
    /// The kind of field this value fits; `None` for [`Value::Null`], which fits any measured
    /// field.
    pub fn kind(&self) -> Option<FieldKind> {
        match self {
            Value::U64(_) => Some(FieldKind::U64),
            Value::I64(_) => Some(FieldKind::I64),
            Value::F64(_) => Some(FieldKind::F64),
            Value::Str(_) => Some(FieldKind::Str),
            Value::Bytes(_) => Some(FieldKind::Bytes),
            Value::Null => None,
        }
    }

    /// Whether the value is missing: null, or an `f64` NaN. A level folds every value of a
    /// measured field that is not missing; an infinity is a value.
    pub fn is_missing(&self) -> bool {
        match self {
            Value::Null => true,
            Value::F64(v) => v.is_nan(),
            _ => false,
        }
    }

    /// The value as a track label, as a selection names it and `publish_columns` takes it:
    /// text as it is, integers in decimal (`None` for an `f64` or `bytes`, which no track
    /// holds). How a host holding typed track values publishes columns:
    /// `store.publish_columns("s", 1, &[&value.label().unwrap()], &columns)`.
    pub fn label(&self) -> Option<String> {
        match self {
            Value::U64(v) => Some(v.to_string()),
            Value::I64(v) => Some(v.to_string()),
            Value::Str(v) => Some(v.clone()),
            Value::F64(_) | Value::Bytes(_) | Value::Null => None,
        }
    }

    /// The value of a track field from its label (the inverse of `label`).
    pub(crate) fn from_label(kind: FieldKind, label: &str) -> Option<Value> {
        match kind {
            FieldKind::U64 => label.parse().ok().map(Value::U64),
            FieldKind::I64 => label.parse().ok().map(Value::I64),
            FieldKind::Str => Some(Value::Str(label.to_owned())),
            _ => None,
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::U64(v) => write!(f, "{v}"),
            Value::I64(v) => write!(f, "{v}"),
            Value::F64(v) => write!(f, "{v}"),
            Value::Str(v) => f.write_str(v),
            Value::Bytes(v) => {
                for b in v {
                    write!(f, "{b:02x}")?;
                }
                Ok(())
            }
            Value::Null => Ok(()),
        }
    }
}
