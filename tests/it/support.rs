//! Fixtures every integration test of a simulated store shares.

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use strata::segment::vfs::{RenameMode, SimFs, Vfs};

/// Both ways a file system can rename without replacing: a crash test runs on each.
pub const MODES: [RenameMode; 2] = [RenameMode::Noreplace, RenameMode::LinkUnlink];

/// The simulated file system as the `Vfs` a store opens on (sharing its state).
pub fn sim(fs: &SimFs) -> Arc<dyn Vfs> {
    Arc::new(fs.clone())
}

/// Polls a `MemorySeries` future, which never waits, to its end.
pub fn ready<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    match future
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(out) => out,
        Poll::Pending => panic!("MemorySeries never waits"),
    }
}
