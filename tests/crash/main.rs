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
mod pinned;
mod repair;
mod scenarios;
mod soak;

/// Prints one census line where CI's log shows it even when the test passes: straight to the
/// process's standard error, past libtest's capture (which takes only `print!`/`eprint!`).
pub fn census(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "census: {line}");
}

/// What the harness's tests checked, added up across them.
#[derive(Default, Clone, Copy, Debug)]
pub(crate) struct Total {
    pub(crate) scenarios: u64,
    pub(crate) points: u64,
    pub(crate) images: u64,
    pub(crate) distinct: u64,
    pub(crate) second_crashes: u64,
    pub(crate) faults: u64,
}

/// The harness's tests that add to the total: one per scenario, boot heal, the repair's three
/// (a cut and a rebuild crashed, and their faults), and the two fault tests.
fn harness_tests() -> usize {
    scenarios::scenarios().len() + 6
}

/// Adds one finished harness test's figures to the total; the last to finish prints the one
/// summary census line (a filtered run, which finishes fewer, prints none).
pub(crate) fn total(add: Total) {
    static TOTAL: std::sync::Mutex<(usize, Total)> = std::sync::Mutex::new((
        0,
        Total {
            scenarios: 0,
            points: 0,
            images: 0,
            distinct: 0,
            second_crashes: 0,
            faults: 0,
        },
    ));
    let mut guard = TOTAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let (finished, total) = &mut *guard;
    *finished += 1;
    total.scenarios += add.scenarios;
    total.points += add.points;
    total.images += add.images;
    total.distinct += add.distinct;
    total.second_crashes += add.second_crashes;
    total.faults += add.faults;
    if *finished == harness_tests() && std::env::var("STRATA_CRASH_ONLY").is_err() {
        census(&format!(
            "total: {} scenarios; {} crash points; {} crash images, {} distinct booted and \
             checked; {} distinct boots after a crash inside boot's heal; {} I/O faults injected",
            total.scenarios,
            total.points,
            total.images,
            total.distinct,
            total.second_crashes,
            total.faults
        ));
    }
}
