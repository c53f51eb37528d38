//! CSV cells to values and back: the header's columns matched to a stream's fields, a record to a
//! row in declaration order, and a value to the text `query` prints.

use csv::StringRecord;
use strata::{FieldKind, StreamDecl, Value};

/// The column name that carries a row's position (`strata::POSITION_COLUMN`, which a new
/// declaration may not name a field). A stream declared before the name was reserved may have a
/// field of that name: the column is then that field, and positions are assigned.
pub use strata::POSITION_COLUMN;

/// Whether `decl` has a field named [`POSITION_COLUMN`] (only a stream declared before the name
/// was reserved can): its rows are printed and read without a position column.
pub fn declares_position(decl: &StreamDecl) -> bool {
    decl.fields.iter().any(|f| f.name == POSITION_COLUMN)
}

/// Where each of a stream's fields (and the position) sits in a CSV header.
#[derive(Debug)]
pub struct Layout {
    /// Per declared field, in declaration order.
    fields: Vec<Field>,
    /// The track fields' columns, in the order the declaration names the track.
    track_columns: Vec<usize>,
    /// The position column's index, if the header has one.
    position: Option<usize>,
    /// Columns in the header, so a record of another length is refused.
    n_columns: usize,
}

/// A declared field and where the header puts it.
#[derive(Debug)]
pub struct Field {
    /// Its column index in the header.
    pub column: usize,
    pub name: String,
    pub kind: FieldKind,
    /// Its place in the track (the declaration's order), if it is a track field.
    pub track_slot: Option<usize>,
    /// The unit of a time axis (#48), if this field is one: its cells may be RFC 3339 times.
    pub time: Option<strata::TimeUnit>,
}

impl Layout {
    /// Matches `header` to `decl`: every declared field exactly once, in any order, plus an
    /// optional `position` column; any other column is an error naming it.
    pub fn new(decl: &StreamDecl, header: &StringRecord) -> Result<Layout, String> {
        let names: Vec<&str> = header.iter().collect();
        for (idx, name) in names.iter().enumerate() {
            if names[..idx].contains(name) {
                return Err(format!("column {name:?} appears twice in the header"));
            }
            let known = decl.fields.iter().any(|f| f.name == *name) || *name == POSITION_COLUMN;
            if !known {
                let fields: Vec<&str> = decl.fields.iter().map(|f| f.name.as_str()).collect();
                return Err(format!(
                    "column {name:?} is not a field of stream {:?} (its fields: {})",
                    decl.id,
                    fields.join(", ")
                ));
            }
        }
        let mut fields = Vec::with_capacity(decl.fields.len());
        for (field_idx, field) in decl.fields.iter().enumerate() {
            let column = names
                .iter()
                .position(|n| *n == field.name)
                .ok_or_else(|| format!("the header has no column for field {:?}", field.name))?;
            let track_slot = decl.track.iter().position(|&t| usize::from(t) == field_idx);
            let is_axis = decl.axis.is_some_and(|axis| usize::from(axis) == field_idx);
            fields.push(Field {
                column,
                name: field.name.clone(),
                kind: field.kind,
                track_slot,
                time: decl.time.filter(|_| is_axis),
            });
        }
        let track_columns = decl
            .track
            .iter()
            .map(|&t| fields[usize::from(t)].column)
            .collect();
        let position = if declares_position(decl) {
            None
        } else {
            names.iter().position(|n| *n == POSITION_COLUMN)
        };
        Ok(Layout {
            fields,
            track_columns,
            position,
            n_columns: names.len(),
        })
    }

    /// Whether rows carry their own positions (else the caller assigns them in order).
    pub fn has_position(&self) -> bool {
        self.position.is_some()
    }

    /// The position column's index, if the header has one.
    pub fn position_column(&self) -> Option<usize> {
        self.position
    }

    /// The declared fields in declaration order.
    pub fn fields(&self) -> &[Field] {
        &self.fields
    }

    /// The track fields' columns, in the order the declaration names the track.
    pub fn track_columns(&self) -> &[usize] {
        &self.track_columns
    }

    /// Refuses a record whose length is not the header's.
    pub fn check_len(&self, n_values: usize) -> Result<(), String> {
        if n_values != self.n_columns {
            return Err(format!(
                "expected {} values (one per header column), got {n_values}",
                self.n_columns,
            ));
        }
        Ok(())
    }
}

/// The position column's cell as a position.
pub fn position(text: &str) -> Result<u64, String> {
    text.trim()
        .parse::<u64>()
        .map_err(|e| format!("column {POSITION_COLUMN:?}: {text:?} is not a position (a u64): {e}"))
}

impl Field {
    /// A cell of this field as a value; the error names the field and the text.
    pub fn value(&self, text: &str) -> Result<Value, String> {
        if let Some(unit) = self.time
            && text.trim().parse::<u64>().is_err()
        {
            // A time axis's cell: the integer, or an RFC 3339 time exact in the unit.
            return super::time::parse(text, unit, super::time::Round::Exact)
                .map(Value::U64)
                .map_err(|why| format!("field {:?}: {why}", self.name));
        }
        value(self.kind, text).map_err(|why| {
            format!(
                "field {:?}: {text:?} is not {}{why}",
                self.name,
                self.kind.with_article()
            )
        })
    }

    /// A cell of this `u64` field.
    pub fn u64(&self, text: &str) -> Result<u64, String> {
        match self.value(text)? {
            Value::U64(v) => Ok(v),
            other => unreachable!("a u64 field parsed as {other:?}"),
        }
    }

    /// A cell of this `i64` field.
    pub fn i64(&self, text: &str) -> Result<i64, String> {
        match self.value(text)? {
            Value::I64(v) => Ok(v),
            other => unreachable!("an i64 field parsed as {other:?}"),
        }
    }

    /// A cell of this `f64` field.
    pub fn f64(&self, text: &str) -> Result<f64, String> {
        match self.value(text)? {
            Value::F64(v) => Ok(v),
            other => unreachable!("an f64 field parsed as {other:?}"),
        }
    }

    /// A cell of this `bytes` field (hex).
    pub fn bytes(&self, text: &str) -> Result<Vec<u8>, String> {
        match self.value(text)? {
            Value::Bytes(v) => Ok(v),
            other => unreachable!("a bytes field parsed as {other:?}"),
        }
    }
}

/// Parses one cell as a value of `kind`. Numbers may carry spaces around them; text is taken
/// as it is; bytes are hex. The error is a suffix for "is not a KIND".
fn value(kind: FieldKind, text: &str) -> Result<Value, String> {
    let why = |e: &dyn std::fmt::Display| format!(" ({e})");
    match kind {
        FieldKind::U64 => text.trim().parse().map(Value::U64).map_err(|e| why(&e)),
        FieldKind::I64 => text.trim().parse().map(Value::I64).map_err(|e| why(&e)),
        FieldKind::F64 => text.trim().parse().map(Value::F64).map_err(|e| why(&e)),
        FieldKind::Str => Ok(Value::Str(text.to_owned())),
        FieldKind::Bytes => unhex(text.trim()).map(Value::Bytes).map_err(|e| why(&e)),
        _ => Err(" (a kind this command line does not know)".to_owned()),
    }
}

/// Hex text (two digits a byte, either case) to bytes.
pub fn unhex(text: &str) -> Result<Vec<u8>, String> {
    if !text.len().is_multiple_of(2) {
        return Err(format!(
            "hex needs two digits a byte; {} digits",
            text.len()
        ));
    }
    text.as_bytes()
        .chunks(2)
        .map(|pair| {
            let digit = |d: u8| {
                char::from(d)
                    .to_digit(16)
                    .and_then(|v| u8::try_from(v).ok())
                    .ok_or_else(|| format!("{:?} is not a hex digit", char::from(d)))
            };
            Ok((digit(pair[0])? << 4) | digit(pair[1])?)
        })
        .collect()
}

/// A value as `query` prints it in CSV: numbers so that they parse back to the same value
/// (floats in Rust's shortest round-trip form), text as it is, bytes as hex.
pub fn cell(value: &Value) -> String {
    match value {
        // `{:?}` is the shortest text that parses back to the same f64, with an exponent for
        // very large or small magnitudes (`{}` would print every digit of 1e300).
        Value::F64(v) => format!("{v:?}"),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trips() {
        assert_eq!(unhex("00ffA0").unwrap(), vec![0, 255, 160]);
        assert_eq!(unhex("").unwrap(), Vec::<u8>::new());
        assert!(unhex("abc").is_err());
        assert!(unhex("zz").is_err());
        assert_eq!(cell(&Value::Bytes(vec![0, 255, 160])), "00ffa0");
    }

    #[test]
    fn floats_print_so_they_parse_back_exactly() {
        for v in [0.1, 1.0, -2.5e-300, 1e300, f64::MAX, 123_456.789] {
            let text = cell(&Value::F64(v));
            assert_eq!(
                text.parse::<f64>().unwrap().to_bits(),
                v.to_bits(),
                "{text}"
            );
        }
    }
}
