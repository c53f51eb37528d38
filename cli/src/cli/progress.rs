//! Progress bars, drawn on stderr only when stderr is a terminal: piped or captured output (CI,
//! tests, `2> log`) gets no control sequences.

use std::io::IsTerminal as _;

use indicatif::{ProgressBar, ProgressStyle};

/// A bar over `total` rows.
pub fn rows(total: u64) -> ProgressBar {
    bar(
        Some(total),
        "{spinner} {elapsed_precise} [{wide_bar}] {human_pos}/{human_len} rows {msg}",
    )
}

/// A bar over `total` bytes of input, with a message for the rows read so far.
pub fn bytes(total: u64) -> ProgressBar {
    bar(
        Some(total),
        "{spinner} {elapsed_precise} [{wide_bar}] {bytes}/{total_bytes} {msg}",
    )
}

/// A spinner for input of unknown length (standard input), with a message for the rows.
pub fn spinner() -> ProgressBar {
    bar(None, "{spinner} {elapsed_precise} {msg}")
}

fn bar(total: Option<u64>, template: &str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = total.map_or_else(ProgressBar::new_spinner, ProgressBar::new);
    // The templates are constants of this file; a bad one would show as the default style.
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}
