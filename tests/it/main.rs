//! Integration tests of strata, through the facade. The binaries are tested in `cli/tests`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::cast_possible_truncation,
    reason = "test code: a failed unwrap is a failed test"
)]

mod adaptive;
#[cfg(feature = "arrow")]
mod arrow;
mod bytes_per_row;
mod columns;
mod compact;
mod compact_realfs;
mod damaged_reads;
mod embedding;
mod engine;
mod errors;
mod fixture_v6;
mod levels;
mod missing;
mod model;
mod narrowing;
mod open_segments;
mod packed_reads;
mod read_only;
mod read_only_mount;
mod readers;
mod retention;
mod retention_crash;
mod retention_reads;
mod retention_reclaim;
mod retention_twin;
mod series;
mod served_crash;
mod served_reads;
mod snapshot;
mod support;
mod survey_fill;
mod time_axis;
mod trim;
