//! `strata --store DIR seal`: close a barrier for anything staged and print each watermark.
//!
//! A fresh process has staged nothing, so this costs no barrier: it is how a person reads the
//! watermarks the store recorded.

use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;

use super::{Failure, open_existing, print};

pub fn run(dir: &Path) -> Result<ExitCode, Failure> {
    let mut store = open_existing(dir)?;
    let watermarks = store.seal()?;
    let mut out = String::new();
    if watermarks.is_empty() {
        out.push_str("no streams declared\n");
    }
    for (stream, watermark) in &watermarks {
        match watermark {
            Some(position) => writeln!(out, "{stream}: watermark {position}"),
            None => writeln!(out, "{stream}: watermark none (nothing sealed yet)"),
        }
        .map_err(|e| Failure::new(e.to_string()))?;
    }
    print(&out)?;
    Ok(ExitCode::SUCCESS)
}
