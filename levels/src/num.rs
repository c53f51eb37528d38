//! Numeric values of measured fields, kept in their own kind.
//!
//! Extremes (`first`, `last`, `min`, `max`) keep the field's native kind so that an integer above
//! 2^53 stays exact; only the accumulators (`sum`, `sum_sq`) are `f64`.

use std::cmp::Ordering;
use std::fmt;

use serde::{Deserialize, Serialize};

/// The kind of a measured field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NumKind {
    /// Unsigned 64-bit integer.
    U64,
    /// Signed 64-bit integer.
    I64,
    /// 64-bit float. Measured values are finite by contract (publish refuses NaN and infinities).
    F64,
}

/// One value of a measured field.
///
/// Values of one field always share a kind; comparing values of two kinds is an authoring error
/// and panics (see [`Num::cmp_same_kind`]).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Num {
    /// An unsigned value.
    U64(u64),
    /// A signed value.
    I64(i64),
    /// A finite float.
    F64(f64),
}

impl Num {
    /// The kind of this value.
    pub fn kind(self) -> NumKind {
        match self {
            Num::U64(_) => NumKind::U64,
            Num::I64(_) => NumKind::I64,
            Num::F64(_) => NumKind::F64,
        }
    }

    /// The value as `f64`, for the accumulators. Integers above 2^53 round here and only here.
    pub fn as_f64(self) -> f64 {
        match self {
            Num::U64(v) => v as f64,
            Num::I64(v) => v as f64,
            Num::F64(v) => v,
        }
    }

    /// Compares two values of the same kind.
    ///
    /// Floats compare by `f64::total_cmp`, which agrees with `<` on the finite values publish
    /// admits except that `-0.0 < +0.0`; any total order keeps the merge law associative.
    ///
    /// # Panics
    /// If the kinds differ: one field has one kind, so this is an authoring error.
    pub fn cmp_same_kind(self, other: Num) -> Ordering {
        match (self, other) {
            (Num::U64(a), Num::U64(b)) => a.cmp(&b),
            (Num::I64(a), Num::I64(b)) => a.cmp(&b),
            (Num::F64(a), Num::F64(b)) => a.total_cmp(&b),
            (a, b) => panic!(
                "compared a {:?} value with a {:?} value",
                a.kind(),
                b.kind()
            ),
        }
    }

    /// The value's 8 little-endian bytes, as stored on disk (the kind is known from the field).
    pub fn to_le_bytes(self) -> [u8; 8] {
        match self {
            Num::U64(v) => v.to_le_bytes(),
            Num::I64(v) => v.to_le_bytes(),
            Num::F64(v) => v.to_le_bytes(),
        }
    }

    /// Reads a value of `kind` from its 8 little-endian bytes.
    pub fn from_le_bytes(kind: NumKind, bytes: [u8; 8]) -> Num {
        match kind {
            NumKind::U64 => Num::U64(u64::from_le_bytes(bytes)),
            NumKind::I64 => Num::I64(i64::from_le_bytes(bytes)),
            NumKind::F64 => Num::F64(f64::from_le_bytes(bytes)),
        }
    }
}

impl fmt::Display for Num {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Num::U64(v) => write!(f, "{v}"),
            Num::I64(v) => write!(f, "{v}"),
            Num::F64(v) => write!(f, "{v}"),
        }
    }
}
