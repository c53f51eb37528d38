//! Integration tests of strata-remote: the object_store primitives the tier relies on, run
//! alike against a real S3-compatible server (moto's server mode on loopback, started and stopped
//! by the tests: `server.rs`) and against object_store's `InMemory` (`primitives.rs`); the tier
//! end to end (`tier.rs`).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::cast_possible_truncation,
    clippy::cast_precision_loss,
    reason = "test code: sizes are small, and a failed unwrap is a failed test"
)]

mod acceptance;
mod chain;
mod fault_store;
mod faults;
mod missing;
mod parquet;
mod primitives;
mod server;
mod support;
mod table;
mod tier;
mod tiered;
