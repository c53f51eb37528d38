//! Integration tests of strata-segment: format round trips, corruption, crashes of the real write
//! path over the simulated file system, and the manifest file.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::cast_possible_truncation,
    reason = "test code: generated sizes are small, and a failed unwrap is a failed test"
)]

mod corruption;
mod crash;
mod fuzz_corpus;
mod generate;
mod manifest;
mod merge;
mod packed;
mod roundtrip;
mod runs;
mod streaming;
mod validity;
