//! A Delta table's checkpoint (#53, [`crate::delta`]): the actions that make up the state at
//! one version — `protocol`, `metaData`, `txn`, an `add` per file — as one Parquet file, a
//! row an action, in the columns Delta's protocol names (a struct column per kind of action,
//! null where a row is another kind). Written and read through arrow-json, so the actions are
//! the same `serde_json` values the JSON commits hold.

#[cfg(feature = "parquet")]
use std::sync::Arc;

use serde_json::Value as Json;
#[cfg(feature = "parquet")]
use strata_engine::arrow_schema::{DataType, Field, Fields, Schema};

/// A map of strings to strings, as a checkpoint's `partitionValues`, `options` and
/// `configuration` are (Parquet's map: entries `key_value` of `key` and `value`).
#[cfg(feature = "parquet")]
fn string_map(values_nullable: bool) -> DataType {
    let entries = Field::new(
        "key_value",
        DataType::Struct(Fields::from(vec![
            Field::new("key", DataType::Utf8, false),
            Field::new("value", DataType::Utf8, values_nullable),
        ])),
        false,
    );
    DataType::Map(Arc::new(entries), false)
}

/// The columns of a checkpoint: the actions strata writes, with the fields it writes of them.
#[cfg(feature = "parquet")]
fn schema() -> Schema {
    use DataType::{Boolean, Int32, Int64, Utf8};
    let text = |name: &str, nullable: bool| Field::new(name, Utf8, nullable);
    let long = |name: &str, nullable: bool| Field::new(name, Int64, nullable);
    let strukt = |name: &str, fields: Vec<Field>, nullable: bool| {
        Field::new(name, DataType::Struct(Fields::from(fields)), nullable)
    };
    Schema::new(vec![
        strukt(
            "txn",
            vec![
                text("appId", false),
                long("version", false),
                long("lastUpdated", true),
            ],
            true,
        ),
        strukt(
            "add",
            vec![
                text("path", false),
                Field::new("partitionValues", string_map(true), false),
                long("size", false),
                long("modificationTime", false),
                Field::new("dataChange", Boolean, false),
                text("stats", true),
            ],
            true,
        ),
        strukt(
            "remove",
            vec![
                text("path", false),
                long("deletionTimestamp", true),
                Field::new("dataChange", Boolean, false),
            ],
            true,
        ),
        strukt(
            "metaData",
            vec![
                text("id", false),
                text("name", true),
                text("description", true),
                strukt(
                    "format",
                    vec![
                        text("provider", false),
                        Field::new("options", string_map(false), false),
                    ],
                    false,
                ),
                text("schemaString", false),
                Field::new(
                    "partitionColumns",
                    DataType::List(Arc::new(Field::new("element", Utf8, false))),
                    false,
                ),
                long("createdTime", true),
                Field::new("configuration", string_map(false), false),
            ],
            true,
        ),
        strukt(
            "protocol",
            vec![
                Field::new("minReaderVersion", Int32, false),
                Field::new("minWriterVersion", Int32, false),
            ],
            true,
        ),
    ])
}

/// `actions` (each `{"KIND": {...}}`, as a commit's lines are) as a checkpoint's bytes.
#[cfg(feature = "parquet")]
pub(crate) fn encode(actions: &[Json]) -> Result<Vec<u8>, String> {
    let schema = Arc::new(schema());
    let mut decoder = arrow_json::ReaderBuilder::new(Arc::clone(&schema))
        .with_batch_size(actions.len().max(1))
        .build_decoder()
        .map_err(|e| e.to_string())?;
    decoder.serialize(actions).map_err(|e| e.to_string())?;
    let batch = decoder
        .flush()
        .map_err(|e| e.to_string())?
        .ok_or("a checkpoint of no actions")?;
    let mut writer = parquet::arrow::ArrowWriter::try_new(Vec::new(), schema, None)
        .map_err(|e| e.to_string())?;
    writer.write(&batch).map_err(|e| e.to_string())?;
    writer.into_inner().map_err(|e| e.to_string())
}

/// A checkpoint's actions, as [`encode`] took them (a row's null columns left out).
#[cfg(feature = "parquet")]
pub(crate) fn decode(bytes: Vec<u8>) -> Result<Vec<Json>, String> {
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
        bytes::Bytes::from(bytes),
    )
    .and_then(parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::build)
    .map_err(|e| format!("not a checkpoint's Parquet: {e}"))?;
    let mut actions = Vec::new();
    for batch in reader {
        let batch = batch.map_err(|e| e.to_string())?;
        let mut writer = arrow_json::ArrayWriter::new(Vec::new());
        writer.write(&batch).map_err(|e| e.to_string())?;
        writer.finish().map_err(|e| e.to_string())?;
        let rows: Vec<Json> =
            serde_json::from_slice(&writer.into_inner()).map_err(|e| e.to_string())?;
        actions.extend(rows);
    }
    Ok(actions)
}

/// Built without the `parquet` feature: never reached (a publisher asked for Parquet is
/// refused when it attaches).
#[cfg(not(feature = "parquet"))]
pub(crate) fn encode(_: &[Json]) -> Result<Vec<u8>, String> {
    Err(crate::parquet::NO_FEATURE.to_owned())
}

/// Built without the `parquet` feature: never reached.
#[cfg(not(feature = "parquet"))]
pub(crate) fn decode(_: Vec<u8>) -> Result<Vec<Json>, String> {
    Err(crate::parquet::NO_FEATURE.to_owned())
}

#[cfg(all(test, feature = "parquet"))]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn actions_come_back_from_a_checkpoint_as_they_went_in() {
        let actions = vec![
            json!({"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}),
            json!({"metaData": {"id": "x", "name": "line 4/β", "format": {"provider": "parquet",
                "options": {}}, "schemaString": "{}", "partitionColumns": [],
                "configuration": {"delta.deletedFileRetentionDuration": "interval 60 seconds"},
                "createdTime": 5}}),
            json!({"txn": {"appId": "strata", "version": 41, "lastUpdated": 7}}),
            json!({"add": {"path": "a.parquet", "partitionValues": {}, "size": 10,
                "modificationTime": 3, "dataChange": false, "stats": "{\"numRecords\":1}"}}),
            json!({"add": {"path": "b.parquet", "partitionValues": {}, "size": 20,
                "modificationTime": 4, "dataChange": false}}),
        ];
        let bytes = encode(&actions).unwrap();
        assert!(bytes.starts_with(b"PAR1"));
        assert_eq!(decode(bytes).unwrap(), actions);
        assert!(decode(b"not parquet".to_vec()).is_err());
    }
}
