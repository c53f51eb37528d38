//! strata: an embedded, log-structured segment engine for partitioned numeric time series.
//!
//! This crate is the facade: it re-exports the public API of the workspace crates.

pub use strata_index as index;
pub use strata_levels as levels;
