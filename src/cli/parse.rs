//! CSV cells to values and back: the header's columns matched to a stream's fields, a record to a
//! row in declaration order, and a value to the text `query` prints.

use csv::StringRecord;
use strata::{FieldKind, Row, StreamDecl, Value};

/// The column name that carries a row's position (unless the stream declares a field of that
/// name, in which case the column is that field and positions are assigned).
pub const POSITION_COLUMN: &str = "position";

/// Where each of a stream's fields (and the position) sits in a CSV header.
#[derive(Debug)]
pub struct Layout {
    /// Per declared field, in declaration order: its column index, its name and kind.
    fields: Vec<(usize, String, FieldKind)>,
    /// The position column's index, if the header has one.
    position: Option<usize>,
    /// Columns in the header, so a record of another length is refused.
    n_columns: usize,
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
        for field in &decl.fields {
            let column = names
                .iter()
                .position(|n| *n == field.name)
                .ok_or_else(|| format!("the header has no column for field {:?}", field.name))?;
            fields.push((column, field.name.clone(), field.kind));
        }
        let declares_position = decl.fields.iter().any(|f| f.name == POSITION_COLUMN);
        let position = if declares_position {
            None
        } else {
            names.iter().position(|n| *n == POSITION_COLUMN)
        };
        Ok(Layout {
            fields,
            position,
            n_columns: names.len(),
        })
    }

    /// Whether rows carry their own positions (else the caller assigns them in order).
    pub fn has_position(&self) -> bool {
        self.position.is_some()
    }

    /// One record as a row in declaration order, with its position if the header has one.
    pub fn row(&self, record: &StringRecord) -> Result<(Option<u64>, Row), String> {
        if record.len() != self.n_columns {
            return Err(format!(
                "expected {} values (one per header column), got {}",
                self.n_columns,
                record.len()
            ));
        }
        let cell = |column: usize| record.get(column).unwrap_or_default();
        let position = self
            .position
            .map(|column| {
                let text = cell(column);
                text.trim().parse::<u64>().map_err(|e| {
                    format!("column {POSITION_COLUMN:?}: {text:?} is not a position (a u64): {e}")
                })
            })
            .transpose()?;
        let row = self
            .fields
            .iter()
            .map(|(column, name, kind)| {
                let text = cell(*column);
                value(*kind, text)
                    .map_err(|why| format!("field {name:?}: {text:?} is not a {kind}{why}"))
            })
            .collect::<Result<Row, String>>()?;
        Ok((position, row))
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
    if text.len() % 2 != 0 {
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
