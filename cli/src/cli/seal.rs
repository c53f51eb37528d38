//! `strata --store DIR seal`: close a barrier for anything staged and print each watermark.
//!
//! A fresh process has staged nothing, so this costs no barrier: it is how a person reads the
//! watermarks the store recorded.

use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;

use super::{Failure, open_existing, print_summary};

pub fn run(dir: &Path) -> Result<ExitCode, Failure> {
    let mut store = open_existing(dir)?;
    let watermarks = store.seal()?;
    let mut out = String::new();
    if watermarks.is_empty() {
        out.push_str("no streams declared\n");
    }
    for (stream, watermark) in &watermarks {
        match watermark {
            Some(position) => write!(out, "{stream}: watermark {position}"),
            None => write!(out, "{stream}: watermark none (nothing sealed yet)"),
        }
        .map_err(|e| Failure::new(e.to_string()))?;
        // A repair's fence constrains positions whether or not anything is sealed: say so, and
        // where free positions start, rather than let "none" read as "anything goes".
        if let Some(fence) = store.fence(stream)?
            && watermark.is_none_or(|w| w < fence)
        {
            let next = store.next_position(stream)?;
            let _ = write!(
                out,
                "; fenced at {fence} by a repair: positions at or below it are never reused, \
                 the next free is {}",
                next.map_or_else(|| "none".to_owned(), |n| n.to_string())
            );
        }
        out.push('\n');
    }
    print_summary(&out)?;
    Ok(ExitCode::SUCCESS)
}
