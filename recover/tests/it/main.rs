//! Integration tests of strata-recover: every store state is produced by crashing the real write
//! path (segment two-phase writes and manifest appends) over the simulated file system.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::cast_possible_truncation,
    reason = "test code: a failed unwrap is a failed test"
)]

mod boot;
mod repair;
mod support;
mod whole_part;
