//! Fixtures every integration test of a simulated store shares.

use std::sync::Arc;

use strata::segment::vfs::{RenameMode, SimFs, Vfs};

/// Both ways a file system can rename without replacing: a crash test runs on each.
pub const MODES: [RenameMode; 2] = [RenameMode::Noreplace, RenameMode::LinkUnlink];

/// The simulated file system as the `Vfs` a store opens on (sharing its state).
pub fn sim(fs: &SimFs) -> Arc<dyn Vfs> {
    Arc::new(fs.clone())
}
