//! Typed rows: any `T: Serialize` whose fields match the declaration by name, and back.
//!
//! A row goes straight between `T` and its values in declaration order — a serializer over the
//! declaration on the way in (`ser`), a deserializer over the stored values on the way out
//! (`de`) — with no tree of `serde_json::Value`s between them (see docs/performance.md for what
//! that bought).

mod de;
mod ser;
#[cfg(test)]
mod tests;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::EngineError;
use crate::store::Store;
use crate::view::View;

impl Store {
    /// Publishes typed rows: each is serialized and its fields matched to the declaration by
    /// name (a struct or a map), or by place (a tuple or tuple struct, in declaration order). A
    /// missing, unknown, repeated or mistyped field refuses the whole batch, naming row and
    /// field; nothing of a refused batch is staged.
    ///
    /// Integers of any width go into `u64`, `i64` and `f64` fields within range, `f32` into
    /// `f64`; a `str` field takes strings, chars and unit enum variants (by name); a `bytes`
    /// field takes bytes or a sequence of integers each 0..=255. `Some(v)` is `v`; `None` is
    /// a missing value in a number field (refused for the axis and track fields, by publish),
    /// and refused in a `str` or `bytes` field.
    pub fn publish_as<T: Serialize>(
        &mut self,
        stream: &str,
        position: u64,
        rows: &[T],
    ) -> Result<(), EngineError> {
        let decl = &crate::store::stream_state(&self.streams, stream)?.decl;
        // Every row is converted before any is published, so a refusal stages nothing.
        let rows = rows
            .iter()
            .enumerate()
            .map(|(row_idx, row)| {
                ser::to_row(decl, row)
                    .map_err(|fault| EngineError::refused(&decl.id, row_idx, fault.to_string()))
            })
            .collect::<Result<Vec<_>, _>>()?;
        self.publish(stream, position, &rows)
    }
}

impl View {
    /// Reads rows back as `T` (see [`View::query`]), each with its position. `T` takes fields
    /// by name (it may leave declared fields out) or, as a tuple, every field by place.
    pub fn query_as<T: DeserializeOwned>(
        &self,
        stream: &str,
        selection: &[&str],
        positions: impl std::ops::RangeBounds<u64>,
    ) -> Result<Vec<(u64, T)>, EngineError> {
        let decl = self.declaration(stream)?;
        self.query_iter(stream, selection, positions)?
            .map(|row| {
                let row = row?;
                de::from_row(decl, row.values)
                    .map(|typed| (row.position, typed))
                    .map_err(|e| EngineError::BadRead {
                        reason: format!(
                            "the stored row at position {} does not deserialize: {e}",
                            row.position
                        ),
                    })
            })
            .collect()
    }
}
