//! Typed rows: any `T: Serialize` whose fields match the declaration by name, and back.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Number, Value as Json};
use strata_index::{FieldKind, StreamDecl};

use crate::error::EngineError;
use crate::store::Store;
use crate::value::{Row, Value};

impl Store {
    /// Publishes typed rows: each is serialized and its fields matched to the declaration by
    /// name. A missing, extra or mistyped field refuses the whole batch, naming row and field.
    pub fn publish_as<T: Serialize>(
        &mut self,
        stream: &str,
        position: u64,
        rows: &[T],
    ) -> Result<(), EngineError> {
        let decl = self
            .stream(stream)
            .ok_or_else(|| EngineError::UnknownStream {
                stream: stream.to_owned(),
            })?
            .clone();
        let rows = rows
            .iter()
            .enumerate()
            .map(|(row_idx, row)| to_row(&decl, row_idx, row))
            .collect::<Result<Vec<_>, _>>()?;
        self.publish(stream, position, &rows)
    }

    /// Reads rows back as `T` (see [`Store::query`]), each with its position.
    pub fn query_as<T: DeserializeOwned>(
        &self,
        stream: &str,
        selection: &[&str],
        positions: impl std::ops::RangeBounds<u64>,
    ) -> Result<Vec<(u64, T)>, EngineError> {
        let decl = self
            .stream(stream)
            .ok_or_else(|| EngineError::UnknownStream {
                stream: stream.to_owned(),
            })?;
        let rows = self.query(stream, selection, positions)?;
        rows.into_iter()
            .map(|row| {
                let object: Map<String, Json> = decl
                    .fields
                    .iter()
                    .zip(row.values)
                    .map(|(field, value)| (field.name.clone(), to_json(value)))
                    .collect();
                serde_json::from_value(Json::Object(object))
                    .map(|typed| (row.position, typed))
                    .map_err(|e| EngineError::BadRead {
                        reason: format!("a stored row does not deserialize: {e}"),
                    })
            })
            .collect()
    }
}

fn to_row<T: Serialize>(decl: &StreamDecl, row_idx: usize, row: &T) -> Result<Row, EngineError> {
    let refuse = |reason: String| EngineError::refused(&decl.id, row_idx, reason);
    let json = serde_json::to_value(row).map_err(|e| refuse(format!("does not serialize: {e}")))?;
    let Json::Object(mut object) = json else {
        return Err(refuse("is not a struct or map of named fields".into()));
    };
    let mut values = Vec::with_capacity(decl.fields.len());
    for field in &decl.fields {
        let json = object
            .remove(&field.name)
            .ok_or_else(|| refuse(format!("has no field {:?}", field.name)))?;
        let value = from_json(field.kind, &json).ok_or_else(|| {
            refuse(format!(
                "field {:?} is not {}: {json}",
                field.name,
                field.kind.with_article()
            ))
        })?;
        values.push(value);
    }
    if let Some(extra) = object.keys().next() {
        return Err(refuse(format!(
            "has field {extra:?}, which the stream does not declare"
        )));
    }
    Ok(values)
}

fn from_json(kind: FieldKind, json: &Json) -> Option<Value> {
    match kind {
        FieldKind::U64 => json.as_u64().map(Value::U64),
        FieldKind::I64 => json.as_i64().map(Value::I64),
        FieldKind::F64 => json.as_f64().map(Value::F64),
        FieldKind::Str => json.as_str().map(|s| Value::Str(s.to_owned())),
        FieldKind::Bytes => json
            .as_array()?
            .iter()
            .map(|b| b.as_u64().and_then(|b| u8::try_from(b).ok()))
            .collect::<Option<Vec<u8>>>()
            .map(Value::Bytes),
        _ => None,
    }
}

fn to_json(value: Value) -> Json {
    match value {
        Value::U64(v) => Json::Number(v.into()),
        Value::I64(v) => Json::Number(v.into()),
        Value::F64(v) => Number::from_f64(v).map_or(Json::Null, Json::Number),
        Value::Str(v) => Json::String(v),
        Value::Bytes(v) => Json::Array(v.into_iter().map(|b| Json::Number(b.into())).collect()),
    }
}
