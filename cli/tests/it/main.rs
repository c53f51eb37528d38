//! Integration tests of the `strata` and `engine-fsck` binaries, driven as a user drives them.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::cast_possible_truncation,
    reason = "test code: a failed unwrap is a failed test"
)]

mod cli;
mod compact_cli;
mod formats_cli;
mod fsck_cli;
mod full_disk;
mod hardening_cli;
mod info_cli;
mod interrupt;
mod kill;
mod labels_cli;
mod levels_cli;
mod limits;
mod manifest_damage;
mod messages_cli;
mod missing_cli;
mod mistakes_cli;
mod position_cli;
mod read_only_cli;
mod readers_cli;
mod remote_chain;
mod remote_cli;
mod remote_parquet_cli;
mod retention_cli;
mod survey_cli;
mod time_cli;
mod trim_cli;
mod view_cli;

/// A running `strata view` and plain HTTP requests to it: shared with `tests/view_live.rs`.
#[path = "../viewing/mod.rs"]
mod viewing;

/// Barriers written through the real write path over the simulated file system, and ways to
/// look at a store's files: shared with strata-recover's own tests, which own it.
#[path = "../../../recover/tests/it/support.rs"]
mod support;

/// A real read-only bind mount, and a folder's tree: shared with the library's read-only tests,
/// which own it.
#[path = "../../../tests/it/read_only_mount.rs"]
mod read_only_mount;

/// moto's S3 server, started and stopped by the tests: shared with strata-remote's tests, which
/// own it.
#[path = "../../../remote/tests/it/server.rs"]
mod server;
