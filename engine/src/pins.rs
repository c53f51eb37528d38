//! The catalog versions in-process readers hold (each `Snapshot` pins the version it reads),
//! so that a file retired at a later version is removed only once no reader older than its
//! retirement is left (snapshot.rs says how removal waits on them).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use strata_index::FileName;

use crate::readers::ManifestPosition;

/// The catalog versions snapshots hold: each version and how many snapshots hold it.
#[derive(Default)]
pub(crate) struct Pins {
    held: Mutex<BTreeMap<u64, usize>>,
    /// Called whenever a snapshot is let go (`Served` wakes its supervisor, so that files
    /// waiting for it go), wherever the snapshot went: a read's, or one a read handed out.
    on_release: Mutex<Option<Box<dyn Fn() + Send + Sync>>>,
}

impl std::fmt::Debug for Pins {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pins")
            .field("held", &self.held)
            .finish_non_exhaustive()
    }
}

impl Pins {
    pub(crate) fn pin(self: &Arc<Self>, version: u64) -> Pin {
        *self.lock().entry(version).or_default() += 1;
        Pin {
            pins: Arc::clone(self),
            version,
        }
    }

    /// Sets what is called each time a snapshot is let go.
    pub(crate) fn on_release(&self, hook: impl Fn() + Send + Sync + 'static) {
        *self
            .on_release
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(Box::new(hook));
    }

    /// The oldest version a snapshot holds, if any does.
    pub(crate) fn oldest(&self) -> Option<u64> {
        self.lock().keys().next().copied()
    }

    /// How many snapshots are alive.
    pub(crate) fn count(&self) -> usize {
        self.lock().values().sum()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, usize>> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// One snapshot's hold on its version, let go when the snapshot is dropped.
#[derive(Debug)]
pub(crate) struct Pin {
    pins: Arc<Pins>,
    pub(crate) version: u64,
}

impl Drop for Pin {
    fn drop(&mut self) {
        {
            let mut held = self.pins.lock();
            if let Some(count) = held.get_mut(&self.version) {
                *count -= 1;
                if *count == 0 {
                    held.remove(&self.version);
                }
            }
        }
        if let Some(hook) = self
            .pins
            .on_release
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
        {
            hook();
        }
    }
}

/// A retired file waiting for what may still read it: snapshots older than `version`, readers
/// in other processes before manifest position `at`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Removal {
    /// The catalog version that retired it.
    pub(crate) version: u64,
    /// The manifest position just past the frame that retired it.
    pub(crate) at: ManifestPosition,
    pub(crate) name: FileName,
}
