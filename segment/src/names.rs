//! File names: what a store's files are called, and the parse that refuses everything else.
//!
//! Data files are named by a number issued above everything the store has ever held, written as
//! 12 zero-padded digits with the file's kind as the extension (`000000000042.seg`). Manifest
//! generations are `manifest-` and 6 zero-padded digits (`manifest-000001`).

use std::fmt;

use strata_index::FileName;

/// The folder of live segment files.
pub const SEG_DIR: &str = "seg";
/// The folder of files written but not yet renamed into place.
pub const TMP_DIR: &str = "tmp";
/// The folder of evidence a crash left behind. Nothing in it is ever adopted or deleted by boot.
pub const QUARANTINE_DIR: &str = "quarantine";

/// The folder of readers' pins: one file per reader in another process, held under flock,
/// naming the manifest position it reads at (the engine's `readers.rs`). Nothing in it is data.
pub const READERS_DIR: &str = "readers";

/// Digits in a numbered file's name. 10^12 names at one per barrier outlast any store.
pub const NAME_DIGITS: usize = 12;
/// Digits in a manifest generation's name.
pub const MANIFEST_DIGITS: usize = 6;
/// The last generation a name can spell. A rewrite happens when the log passes a size
/// threshold, so a million generations are far beyond any store's life.
pub const MANIFEST_GENERATION_MAX: u32 = 999_999;
const MANIFEST_PREFIX: &str = "manifest-";

/// The kinds of numbered file, by extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FileKind {
    /// A segment: partitions' raw columns and level cells (`.seg`).
    Segment,
    /// A torn manifest tail kept as evidence (`.tail`).
    ManifestTail,
}

impl FileKind {
    /// The extension, without the dot.
    pub fn extension(self) -> &'static str {
        match self {
            FileKind::Segment => "seg",
            FileKind::ManifestTail => "tail",
        }
    }

    fn from_extension(extension: &str) -> Option<FileKind> {
        match extension {
            "seg" => Some(FileKind::Segment),
            "tail" => Some(FileKind::ManifestTail),
            _ => None,
        }
    }
}

/// A numbered file's name: its number and kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NumberedName {
    /// The number, unique across the store's whole history.
    pub number: FileName,
    /// What the file holds.
    pub kind: FileKind,
}

impl NumberedName {
    /// A segment's name.
    pub fn segment(number: FileName) -> NumberedName {
        NumberedName {
            number,
            kind: FileKind::Segment,
        }
    }

    /// Parses `000000000042.seg`-style names; `None` for anything else (wrong digit count, a
    /// sign, an unknown extension, a path).
    pub fn parse(name: &str) -> Option<NumberedName> {
        let (digits, extension) = name.split_once('.')?;
        let kind = FileKind::from_extension(extension)?;
        let number = parse_digits(digits, NAME_DIGITS)?;
        Some(NumberedName { number, kind })
    }

    /// The name's path inside `dir`.
    pub fn path_in(&self, dir: &str) -> String {
        format!("{dir}/{self}")
    }
}

impl fmt::Display for NumberedName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:0width$}.{}",
            self.number,
            self.kind.extension(),
            width = NAME_DIGITS
        )
    }
}

/// A manifest generation's file name (`manifest-000001`), in the store's root.
pub fn manifest_name(generation: u32) -> String {
    format!("{MANIFEST_PREFIX}{generation:0MANIFEST_DIGITS$}")
}

/// Parses a manifest file name; `None` for anything else.
pub fn parse_manifest_name(name: &str) -> Option<u32> {
    let digits = name.strip_prefix(MANIFEST_PREFIX)?;
    u32::try_from(parse_digits(digits, MANIFEST_DIGITS)?).ok()
}

/// Exactly `n` ASCII digits (so one number has one spelling).
fn parse_digits(digits: &str, n: usize) -> Option<u64> {
    if digits.len() != n || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbered_names_round_trip_and_refuse_the_rest() {
        let name = NumberedName::segment(42);
        assert_eq!(name.to_string(), "000000000042.seg");
        assert_eq!(NumberedName::parse("000000000042.seg"), Some(name));
        assert_eq!(
            NumberedName::parse("999999999999.tail"),
            Some(NumberedName {
                number: 999_999_999_999,
                kind: FileKind::ManifestTail
            })
        );
        for bad in [
            "42.seg",
            "0000000000042.seg",
            "00000000042.seg",
            "000000000042.SEG",
            "000000000042.seg.tmp",
            "000000000042",
            "+00000000042.seg",
            "-00000000042.seg",
            "00000000004a.seg",
            "000000000042.log",
            "",
            ".seg",
            "seg/000000000042.seg",
            "٠٠٠٠٠٠٠٠٠٠٤٢.seg",
        ] {
            assert_eq!(NumberedName::parse(bad), None, "{bad:?}");
        }
        assert_eq!(name.path_in(SEG_DIR), "seg/000000000042.seg");
    }

    #[test]
    fn manifest_names_round_trip_and_refuse_the_rest() {
        assert_eq!(manifest_name(1), "manifest-000001");
        assert_eq!(parse_manifest_name("manifest-000001"), Some(1));
        assert_eq!(parse_manifest_name("manifest-999999"), Some(999_999));
        for bad in [
            "manifest-1",
            "manifest-0000001",
            "manifest-00000x",
            "MANIFEST-000001",
            "manifest",
        ] {
            assert_eq!(parse_manifest_name(bad), None, "{bad:?}");
        }
    }
}
