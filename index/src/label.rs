//! Labels: the text of one track component, of a stream id, or of a field name.
//!
//! A label is refused for a control character not because it would mis-sort but because it would
//! mis-select: U+001F terminates every component of an encoded track key, and a prefix selection
//! is a byte range that is only exact when no label byte is below 0x20.

use std::fmt;

/// Why a label was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LabelError {
    /// The label is the empty string.
    Empty,
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
            Self::ControlChar {
                label,
                char_idx,
                byte_offset,
                ch,
            } => write!(
                f,
                "label {label:?} holds control character U+{:04X} at char {char_idx} (byte {byte_offset})",
                u32::from(*ch)
            ),
        }
    }
}

impl std::error::Error for LabelError {}

/// Checks that `label` is a legal label: non-empty, with no control character
/// (`char::is_control`: U+0000..=U+001F and U+007F..=U+009F).
///
/// Everything else — dots, hyphens, spaces, any script, emoji — is legal.
pub fn validate_label(label: &str) -> Result<(), LabelError> {
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
            "label \"é\\u{85}\" holds control character U+0085 at char 1 (byte 2)"
        );
    }
}
