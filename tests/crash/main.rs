//! The crash-interleaving harness (#16): every write path crashed at every operation, under
//! every crash image, then crashed again while boot heals; the seed's three named
//! interleavings; I/O faults at every operation; and a process-kill soak on the real file
//! system. Each test prints its census past libtest's capture, so CI's log shows it. See
//! docs/crash.md.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::cast_possible_truncation,
    reason = "test code: a failed unwrap is a failed test"
)]

mod faults;
mod harness;
mod interleavings;
mod logged;
mod repair;
mod scenarios;
mod soak;

/// Prints one census line where CI's log shows it even when the test passes: straight to the
/// process's standard error, past libtest's capture (which takes only `print!`/`eprint!`).
pub fn census(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "census: {line}");
}
