//! Labels: the text of one track component, of a stream id, or of a field name.
//!
//! A label is refused for a control character not because it would mis-sort but because it would
//! mis-select: U+001F terminates every component of an encoded track key, and a prefix selection
//! is a byte range that is only exact when no label byte is below 0x20.

use std::fmt;

/// The longest label, in bytes of UTF-8: a track label, a stream id or a field name.
///
/// Labels are names, not payloads: every barrier's record repeats the track key of each partition
/// it touches, reports print them in columns, and a key is compared on every selection. 1 KiB
/// holds any identifier, path or UUID-laden run name people use as a label, while keeping a
/// four-level key under 4 KiB and a record per partition small. Text longer than this belongs in
/// a `str` field, not in the track.
pub const LABEL_BYTES_MAX: usize = 1024;

/// Why a label was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LabelError {
    /// The label is the empty string.
    Empty,
    /// The label is longer than [`LABEL_BYTES_MAX`] bytes.
    TooLong {
        /// Its length in bytes.
        n_bytes: usize,
        /// Its first characters, for recognising it.
        start: String,
    },
    /// The label holds a control character (Unicode general category Cc).
    ControlChar {
        /// The whole label as given.
        label: String,
        /// Position of the offending character, 0-based, counted in chars.
        char_idx: usize,
        /// Byte offset of the offending character inside the label's UTF-8.
        byte_offset: usize,
        /// The offending character.
        ch: char,
    },
}

impl fmt::Display for LabelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Empty => write!(f, "label is empty"),
            Self::TooLong { n_bytes, start } => write!(
                f,
                "label {start:?}… is {n_bytes} bytes long; a label has at most {LABEL_BYTES_MAX}"
            ),
            // The label is printed escaped, so its characters counted from 1 find the culprit;
            // a byte offset would be one more number to misread.
            Self::ControlChar {
                label,
                char_idx,
                ch,
                ..
            } => write!(
                f,
                "label {label:?} holds control character U+{:04X} at character {}",
                u32::from(*ch),
                char_idx + 1
            ),
        }
    }
}

impl std::error::Error for LabelError {}

/// Checks that `label` is a legal label: non-empty, at most [`LABEL_BYTES_MAX`] bytes, with no
/// control character (`char::is_control`: U+0000..=U+001F and U+007F..=U+009F).
///
/// Everything else — dots, hyphens, spaces, any script, emoji — is legal.
pub fn validate_label(label: &str) -> Result<(), LabelError> {
    if label.len() > LABEL_BYTES_MAX {
        return Err(LabelError::TooLong {
            n_bytes: label.len(),
            start: label.chars().take(24).collect(),
        });
    }
    validate_stored_label(label)
}

/// Checks what a label read back from disk must be for keys to order and select correctly:
/// non-empty, with no control character. The length bound is not checked here: it is a limit on
/// what is accepted, and a store written before it must still open.
pub(crate) fn validate_stored_label(label: &str) -> Result<(), LabelError> {
    if label.is_empty() {
        return Err(LabelError::Empty);
    }
    match label
        .char_indices()
        .enumerate()
        .find(|(_, (_, ch))| ch.is_control())
    {
        None => Ok(()),
        Some((char_idx, (byte_offset, ch))) => Err(LabelError::ControlChar {
            label: label.to_owned(),
            char_idx,
            byte_offset,
            ch,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_label_of_the_maximum_length_is_legal_and_one_byte_more_is_refused() {
        let longest = "a".repeat(LABEL_BYTES_MAX);
        assert_eq!(validate_label(&longest), Ok(()));
        let over = "é".repeat(LABEL_BYTES_MAX / 2) + "a";
        assert_eq!(over.len(), LABEL_BYTES_MAX + 1);
        match validate_label(&over) {
            Err(LabelError::TooLong { n_bytes, start }) => {
                assert_eq!(n_bytes, LABEL_BYTES_MAX + 1);
                assert_eq!(start.chars().count(), 24);
            }
            other => panic!("expected TooLong, got {other:?}"),
        }
        // Read back from disk, a long label is still a label (stores written before the bound).
        assert_eq!(validate_stored_label(&over), Ok(()));
    }

    #[test]
    fn a_twenty_megabyte_label_is_refused_without_echoing_it() {
        let huge = "x".repeat(20 * 1024 * 1024);
        let error = validate_label(&huge).expect_err("too long");
        let message = error.to_string();
        assert!(message.contains("20971520 bytes"), "{message}");
        assert!(
            message.len() < 200,
            "the message echoes the label: {} bytes",
            message.len()
        );
    }

    #[test]
    fn ordinary_labels_are_legal() {
        for label in [
            "run_7",
            "a.b.c",
            "probe-3",
            "with space",
            "日本",
            "😀",
            "\u{a0}",
            "~",
        ] {
            assert_eq!(validate_label(label), Ok(()), "{label:?}");
        }
    }

    #[test]
    fn empty_is_refused() {
        assert_eq!(validate_label(""), Err(LabelError::Empty));
    }

    #[test]
    fn control_chars_are_refused_with_their_position() {
        // (label, char_idx, byte_offset, ch): the multi-byte prefix makes chars and bytes differ.
        let cases = [
            ("\u{0}", 0, 0, '\u{0}'),
            ("ab\u{1f}", 2, 2, '\u{1f}'),
            ("é\u{7f}x", 1, 2, '\u{7f}'),
            ("日本\u{85}", 2, 6, '\u{85}'),
            ("a\u{9f}", 1, 1, '\u{9f}'),
        ];
        for (label, char_idx, byte_offset, ch) in cases {
            let err = validate_label(label).unwrap_err();
            assert_eq!(
                err,
                LabelError::ControlChar {
                    label: label.to_owned(),
                    char_idx,
                    byte_offset,
                    ch
                },
                "{label:?}"
            );
        }
    }

    #[test]
    fn the_first_control_char_is_reported() {
        let err = validate_label("a\tb\n").unwrap_err();
        assert!(matches!(
            err,
            LabelError::ControlChar {
                char_idx: 1,
                ch: '\t',
                ..
            }
        ));
    }

    #[test]
    fn display_names_label_char_and_position() {
        let err = validate_label("é\u{85}").unwrap_err();
        assert_eq!(
            err.to_string(),
            "label \"é\\u{85}\" holds control character U+0085 at character 2"
        );
    }
}
