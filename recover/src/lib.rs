//! strata-recover: boot that heals before it claims.
//!
//! Boot reads the manifest's trusted prefix and stops at the first frame that fails its own
//! check (or that the catalog refuses). It copies the failed tail into `quarantine/` and syncs it
//! before cutting the manifest back (heal before claim) — only a tail of appended frames: damage
//! before frames that pass, or in the part of a generation written whole, is refused, and an
//! operator's [`repair`] rebuilds or cuts it. Every file in `tmp/` and every segment no
//! record claims is moved to `quarantine/` — never adopted, never deleted. Files whose retirement
//! is recorded are removed. Recorded files that are missing or the wrong length stay where they
//! are, are reported, and become `Unreadable` to reads. New names are issued above every name seen
//! anywhere. Boot reads the manifest and the folder listings, not the rows.
//!
//! [`inspect`] plans all of that without changing anything; [`boot`] carries the plan out. The
//! `engine-fsck` binary prints the plan, the quarantine and the per-stream state.

mod boot;
mod corruption;
mod error;
pub mod fsck;
mod heal;
mod loss;
mod plan;
mod repair;
mod report;
pub mod retention_file;
mod stray;
mod whole_part;

pub use boot::{
    Booted, Viewed, boot, boot_keeping_retired, boot_new, boot_read_only, holds_no_store,
};
pub use corruption::Corruption;
pub use error::RecoverError;
pub use loss::StreamLoss;
pub use plan::{LOCK_FILE, Plan, inspect, is_empty_folder, quarantine_reason, quarantined_number};
pub use repair::{Cut, CutPlan, FileHolds, RepairPlan, Repaired, SetAside, plan_repair, repair};
pub use report::{Action, Finding, FindingKind, Report};
pub use stray::{STRAY_PREFIX, StrayGeneration, StrayManifests};
pub use whole_part::{WayBack, WholeDamage};
