//! The write half of a store: staging (`stage.rs`, `columns.rs`), compaction (`compact.rs`),
//! retention (`retention.rs`, `trim.rs`) and the removals that wait for views (`snapshot.rs`).
//! The barrier (`seal.rs`) and the commit path every record goes through (`commit.rs`) are
//! here too; boot is in `store.rs`; what every write half shares with
//! the reads is the catalog version a [`View`](crate::View) holds, which writes replace and
//! never change.

pub(crate) mod columns;
pub(crate) mod commit;
pub(crate) mod compact;
pub(crate) mod fold;
pub(crate) mod manifest;
pub(crate) mod policy;
pub(crate) mod retention;
pub(crate) mod seal;
pub(crate) mod snapshot;
pub(crate) mod stage;
pub(crate) mod trim;
