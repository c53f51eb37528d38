//! What an input is, told by its first bytes: Parquet (`PAR1`), Arrow IPC (`ARROW1`, or a
//! stream's continuation marker), or CSV. Built whatever the features: a build without the
//! columnar formats still tells a Parquet file from CSV, and says which feature reads it rather
//! than parsing it as text.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use super::Failure;

/// Which columnar format an input is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Parquet,
    /// An Arrow IPC file (`ARROW1` magic) or stream.
    Arrow,
}

/// The bytes at the start of an input that say its format.
pub const MAGIC_BYTES: usize = 6;

/// What the first bytes of `path` say it is: Parquet (`PAR1`), Arrow (`ARROW1`, or an IPC
/// stream's continuation marker), or neither (`None`: CSV).
pub fn sniff(path: &Path) -> Result<Option<Format>, Failure> {
    let mut head = [0u8; MAGIC_BYTES];
    let mut file = File::open(path)
        .map_err(|e| Failure::new(format!("cannot read {}: {e}", path.display())))?;
    let n = read_up_to(&mut file, &mut head)
        .map_err(|e| Failure::new(format!("cannot read {}: {e}", path.display())))?;
    Ok(format_of(&head[..n]))
}

/// The format an input's first bytes say it is (`None`: CSV).
pub fn format_of(head: &[u8]) -> Option<Format> {
    match head {
        [b'P', b'A', b'R', b'1', ..] => Some(Format::Parquet),
        b"ARROW1" | [0xFF, 0xFF, 0xFF, 0xFF, ..] => Some(Format::Arrow),
        _ => None,
    }
}

/// Reads the first bytes of `read` (fewer at its end), to tell its format by.
pub fn read_head(read: &mut impl Read) -> io::Result<Vec<u8>> {
    let mut head = [0u8; MAGIC_BYTES];
    let n = read_up_to(read, &mut head)?;
    Ok(head[..n].to_vec())
}

/// Reads until `buf` is full or the input ends; answers how many bytes were read.
pub fn read_up_to(read: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match read.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}
