//! SIGINT and SIGTERM during a long command (`strata ingest`, `strata compact`). The first asks
//! the command to stop at its next durable boundary (ingest: the next batch, after sealing what
//! is staged, or the end of the compaction step under way; compact: after the step under way,
//! each step being one record): it says what is
//! durable and how to continue, and exits [`EXIT_INTERRUPTED`]. A second ends the process at once
//! with `128 + signal` (130 for SIGINT, 143 for SIGTERM), the shell's code for a process a signal
//! ended, after one line saying what is durable and what exiting at once loses: a segment it was
//! writing stays behind as crash evidence for the next open to quarantine.
//!
//! The signals are taken by a thread of their own (signal-hook's iterator), so the handler does
//! nothing but wake it, and everything said is said by ordinary code. A command reports its
//! stop through [`Interrupt::report_stop`]; a signal after that changes nothing (the work is
//! durable and the command is ending with the code it reported), so a stop is reported once.

use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;

use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

use super::Failure;

/// The exit code of a command that a signal stopped at a durable boundary, after it printed
/// what it made durable and how to continue.
pub const EXIT_INTERRUPTED: u8 = 3;

/// The signals that stop a command.
const STOP_SIGNALS: [i32; 2] = [SIGINT, SIGTERM];

/// What a command says about a signal: at the first, where it stops; at a second, what exiting
/// at once loses.
#[derive(Debug, Clone, Copy)]
pub struct Says {
    /// After "strata: SIGINT: ".
    pub stopping: &'static str,
    /// After "strata: SIGINT again: exiting at once; ".
    pub lost: &'static str,
}

/// `strata ingest`.
pub const INGEST: Says = Says {
    stopping: "stopping at the next batch boundary and sealing what is staged (or after the \
               compaction step under way)",
    lost: "rows staged since the last seal are not stored, and a compaction step under way is \
           recorded whole or not at all (the next open quarantines an output it never recorded)",
};

/// Whether a stop was asked for, and what to say if a second signal ends the process at once.
#[derive(Debug, Clone)]
pub struct Interrupt {
    /// The first stop signal received; 0 while none was.
    first: Arc<AtomicI32>,
    /// What a second signal would say, and whether the command has said how it stopped. One
    /// lock, taken to say either, so the two are never both said: a command that reported its
    /// stop has nothing left to lose, and ends with the code it reported.
    said: Arc<Mutex<Said>>,
    says: Says,
}

#[derive(Debug)]
struct Said {
    /// What is durable and how to continue from it, in words.
    durable: String,
    /// Whether the command reported its stop ([`Interrupt::report_stop`]).
    stop_reported: bool,
}

impl Interrupt {
    /// Takes SIGINT and SIGTERM from here on. `durable` says what is stored before anything is.
    pub fn watch(says: Says, durable: String) -> Result<Interrupt, Failure> {
        let mut signals = Signals::new(STOP_SIGNALS)
            .map_err(|e| Failure::new(format!("cannot take SIGINT and SIGTERM: {e}")))?;
        let interrupt = Interrupt {
            first: Arc::new(AtomicI32::new(0)),
            said: Arc::new(Mutex::new(Said {
                durable,
                stop_reported: false,
            })),
            says,
        };
        let watcher = interrupt.clone();
        thread::Builder::new()
            .name("strata-signals".to_owned())
            .spawn(move || {
                for signal in signals.forever() {
                    watcher.receive(signal);
                }
            })
            .map_err(|e| Failure::new(format!("cannot start the signal thread: {e}")))?;
        Ok(interrupt)
    }

    /// The name of the signal that asked for a stop, if one did.
    pub fn requested(&self) -> Option<&'static str> {
        match self.first.load(Ordering::SeqCst) {
            0 => None,
            signal => Some(name(signal)),
        }
    }

    /// Records what is durable now, for a second signal to say.
    pub fn durable(&self, durable: String) {
        self.lock().durable = durable;
    }

    /// Says on stderr how the command stopped for the signal it heard (`line`, after
    /// "strata: "), once its work is durable and nothing is left but to exit: from here on a
    /// further signal changes nothing, so one stop is never reported twice (a stop line, then
    /// "exiting at once" and another exit code).
    pub fn report_stop(&self, line: &str) {
        let mut said = self.lock();
        eprintln!("strata: {line}");
        said.stop_reported = true;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Said> {
        self.said.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn receive(&self, signal: i32) {
        let first = self
            .first
            .compare_exchange(0, signal, Ordering::SeqCst, Ordering::SeqCst);
        if first.is_ok() {
            eprintln!(
                "strata: {}: {} (a second signal exits at once)",
                name(signal),
                self.says.stopping
            );
            return;
        }
        // Held to the exit, so the command cannot report a stop after this says it exits.
        let said = self.lock();
        if said.stop_reported {
            return;
        }
        eprintln!(
            "strata: {} again: exiting at once; {}; {}",
            name(signal),
            self.says.lost,
            said.durable
        );
        std::process::exit(128 + signal);
    }
}

fn name(signal: i32) -> &'static str {
    match signal {
        SIGINT => "SIGINT",
        SIGTERM => "SIGTERM",
        _ => "a signal",
    }
}
