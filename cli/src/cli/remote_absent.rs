//! `--remote` in a build without the object-storage tier (feature `remote`): `run` refuses the
//! flag before any command starts, so nothing is written that could not then be published;
//! what is here stands in for `remote.rs` so the commands compile alike, and refuses again
//! should it ever be reached.

use std::path::Path;
use std::process::ExitCode;

use strata::Store;

use super::Failure;

/// The refusal of `--remote` in this build, naming the feature that adds it.
pub fn absent() -> Failure {
    super::features::not_built("--remote (the object-storage tier)", "remote")
}

/// Never built: `--remote-parquet` is refused before any command runs.
pub fn write_parquet(_retention: Option<u64>) {}

/// Refused: this build cannot publish.
pub fn publish_after(_dir: &Path, _url: &str, _code: ExitCode) -> Result<ExitCode, Failure> {
    Err(absent())
}

/// Refused: this build cannot adopt a bucket.
pub fn adopt(_dir: &Path, _url: &str, _args: &super::args::AdoptArgs) -> Result<ExitCode, Failure> {
    Err(absent())
}

/// A publisher this build cannot make: no value of it exists.
#[derive(Debug)]
pub enum Publishing {}

impl Publishing {
    /// Refused: this build cannot publish.
    pub fn attach(_dir: &Path, _url: &str, _store: &Store) -> Result<Publishing, Failure> {
        Err(absent())
    }

    /// Never called: no `Publishing` exists.
    pub fn publish(&mut self, _store: &Store) -> Result<String, Failure> {
        match *self {}
    }
}
