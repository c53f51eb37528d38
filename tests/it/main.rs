//! Integration tests of strata, through the facade and the real binaries.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::cast_possible_truncation,
    reason = "test code: a failed unwrap is a failed test"
)]

mod bytes_per_row;
mod cli;
mod columns;
mod compact;
mod compact_cli;
mod compact_realfs;
mod damaged_reads;
mod engine;
mod errors;
mod full_disk;
mod interrupt;
mod kill;
mod levels;
mod limits;
mod manifest_damage;
mod messages_cli;
mod model;
mod open_segments;
mod retention;
mod retention_cli;
mod retention_crash;
mod retention_reads;
mod retention_reclaim;
mod retention_twin;
mod series;
mod support;
mod survey_cli;
mod survey_fill;
mod trim;
