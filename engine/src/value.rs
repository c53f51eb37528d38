//! Rows as values: what `publish` takes and `query` answers.

use std::fmt;

use serde::{Deserialize, Serialize};
use strata_index::FieldKind;

/// One value of a declared field.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Value {
    /// A `u64` field.
    U64(u64),
    /// An `i64` field.
    I64(i64),
    /// An `f64` field (finite when measured: publish refuses NaN and infinities).
    F64(f64),
    /// A `str` field.
    Str(String),
    /// A `bytes` field.
    Bytes(Vec<u8>),
}

/// One row: a value per declared field, in declaration order.
pub type Row = Vec<Value>;

impl Value {
    /// The kind of field this value fits.
    pub fn kind(&self) -> FieldKind {
        match self {
            Value::U64(_) => FieldKind::U64,
            Value::I64(_) => FieldKind::I64,
            Value::F64(_) => FieldKind::F64,
            Value::Str(_) => FieldKind::Str,
            Value::Bytes(_) => FieldKind::Bytes,
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
            Value::F64(_) | Value::Bytes(_) => None,
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
        }
    }
}
