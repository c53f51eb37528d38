//! A track selection as text: how a person names a track prefix (`--track r0,p1`), and how a
//! message spells one so that it can be typed back.
//!
//! Labels are separated by a comma. A label may hold any character but a control character
//! (`label.rs`), a comma and a backslash among them, so inside a label a comma is written `\,`
//! and a backslash `\\`; a backslash before anything else is refused rather than guessed at.
//! [`parse_selection`] and [`selection_text`] are inverses: every tuple of labels spells as
//! text that parses back to it (a property test states it).
//!
//! A shell takes a backslash (and spaces, quotes, `$` and the rest) for itself, so a message
//! that lists tracks spells each one with [`selection_word`]: the text as it is typed in a
//! POSIX shell, bare when no character in it means anything to a shell, else in single quotes.
//! A bare word never holds a space and a quoted one is delimited, so a list of words separated
//! by `", "` reads back unambiguously.

use std::fmt;

/// What separates the labels of a selection's text.
pub const LABEL_SEPARATOR: char = ',';

/// What makes the next character part of a label: `\,` is a comma, `\\` a backslash.
pub const LABEL_ESCAPE: char = '\\';

/// Why a selection's text was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SelectionTextError {
    /// A backslash followed by a character it does not escape.
    UnknownEscape {
        /// Byte offset of the backslash in the text.
        byte_offset: usize,
        /// The character after it.
        ch: char,
    },
    /// The text ends in a backslash that escapes nothing.
    TrailingEscape {
        /// Byte offset of the backslash in the text.
        byte_offset: usize,
    },
}

impl fmt::Display for SelectionTextError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnknownEscape { byte_offset, ch } => write!(
                f,
                "`\\{ch}` at byte {byte_offset}: a backslash escapes only a comma within a label \
                 (`\\,`) or a backslash (`\\\\`)"
            ),
            Self::TrailingEscape { byte_offset } => write!(
                f,
                "the backslash at byte {byte_offset} ends the text and escapes nothing (a \
                 backslash within a label is written `\\\\`)"
            ),
        }
    }
}

impl std::error::Error for SelectionTextError {}

/// The labels `text` names, outermost first: split at each comma that no backslash escapes,
/// `\,` and `\\` taken as a comma and a backslash. The empty text names no label (every track).
/// The labels themselves are not checked here (an empty one, `a,,b`, is the engine's to refuse
/// with the field it selects).
pub fn parse_selection(text: &str) -> Result<Vec<String>, SelectionTextError> {
    if text.is_empty() {
        return Ok(Vec::new());
    }
    let mut labels = Vec::new();
    let mut label = String::new();
    let mut chars = text.char_indices();
    while let Some((byte_offset, ch)) = chars.next() {
        match ch {
            LABEL_SEPARATOR => labels.push(std::mem::take(&mut label)),
            LABEL_ESCAPE => match chars.next() {
                Some((_, escaped @ (LABEL_SEPARATOR | LABEL_ESCAPE))) => label.push(escaped),
                Some((_, ch)) => {
                    return Err(SelectionTextError::UnknownEscape { byte_offset, ch });
                }
                None => return Err(SelectionTextError::TrailingEscape { byte_offset }),
            },
            ch => label.push(ch),
        }
    }
    labels.push(label);
    Ok(labels)
}

/// The text that names `labels`, which [`parse_selection`] reads back: labels joined by commas,
/// a comma within a label written `\,` and a backslash `\\`. No label is the empty text.
pub fn selection_text<S: AsRef<str>>(labels: &[S]) -> String {
    let mut text = String::new();
    for (idx, label) in labels.iter().enumerate() {
        if idx > 0 {
            text.push(LABEL_SEPARATOR);
        }
        for ch in label.as_ref().chars() {
            if matches!(ch, LABEL_SEPARATOR | LABEL_ESCAPE) {
                text.push(LABEL_ESCAPE);
            }
            text.push(ch);
        }
    }
    text
}

/// [`selection_text`] as a POSIX shell word: bare when every character is one no shell treats
/// specially, else in single quotes (a single quote within written `'\''`).
pub fn selection_word<S: AsRef<str>>(labels: &[S]) -> String {
    shell_word(&selection_text(labels))
}

/// `text` as one POSIX shell word that the shell turns back into exactly `text`.
pub fn shell_word(text: &str) -> String {
    let bare = |ch: char| {
        ch.is_ascii_alphanumeric()
            || matches!(
                ch,
                ',' | '_' | '-' | '.' | '/' | ':' | '=' | '+' | '@' | '%'
            )
            || (!ch.is_ascii() && ch.is_alphanumeric())
    };
    if !text.is_empty() && text.chars().all(bare) {
        return text.to_owned();
    }
    format!("'{}'", text.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::strategies::tuple;

    /// What a POSIX shell makes of a word built of bare runs and single-quoted runs, and `\'`
    /// (all `shell_word` writes): written apart from it, so the two cannot share a mistake.
    fn unshell(word: &str) -> String {
        let mut out = String::new();
        let mut quoted = false;
        let mut chars = word.chars();
        while let Some(ch) = chars.next() {
            match (quoted, ch) {
                (_, '\'') => quoted = !quoted,
                (false, '\\') => out.extend(chars.next()),
                (_, ch) => out.push(ch),
            }
        }
        assert!(!quoted, "an unterminated quote in {word}");
        out
    }

    /// Labels that hold what the text escapes and what a shell takes for itself.
    fn awkward_label() -> impl Strategy<Value = String> {
        const ALPHABET: &[char] = &['a', ',', '\\', '\'', ' ', '"', '$', '~', 'é', '日', '*'];
        prop_oneof![
            crate::strategies::label(),
            proptest::collection::vec(proptest::sample::select(ALPHABET), 1..=5)
                .prop_map(|chars| chars.into_iter().collect()),
        ]
    }

    proptest! {
        #[test]
        fn text_and_parse_are_inverses(labels in proptest::collection::vec(awkward_label(), 1..=4)) {
            let text = selection_text(&labels);
            prop_assert_eq!(parse_selection(&text).unwrap(), labels.clone());
            prop_assert_eq!(unshell(&selection_word(&labels)), text);
        }

        #[test]
        fn plain_labels_spell_as_they_are_joined(labels in tuple()) {
            prop_assume!(labels.iter().all(|l| !l.contains([',', '\\'])));
            prop_assert_eq!(selection_text(&labels), labels.join(","));
        }
    }

    #[test]
    fn a_comma_within_a_label_is_escaped_and_named_back() {
        assert_eq!(parse_selection("r0,p1").unwrap(), ["r0", "p1"]);
        assert_eq!(parse_selection(r"r0\,p1").unwrap(), ["r0,p1"]);
        assert_eq!(parse_selection(r"r0\,p1,x").unwrap(), ["r0,p1", "x"]);
        assert_eq!(parse_selection(r"a\\,b").unwrap(), [r"a\", "b"]);
        assert_eq!(parse_selection(r"a\\\,b").unwrap(), [r"a\,b"]);
        assert_eq!(parse_selection("").unwrap(), Vec::<String>::new());
        assert_eq!(parse_selection("a,").unwrap(), ["a", ""]);
        assert_eq!(selection_text(&["r0,p1", "x"]), r"r0\,p1,x");
        assert_eq!(selection_word(&["r0,p1", "x"]), r"'r0\,p1,x'");
        assert_eq!(selection_word(&["r0", "p1"]), "r0,p1");
        assert_eq!(selection_word(&["it's"]), r"'it'\''s'");
        assert_eq!(selection_word(&[" lead"]), "' lead'");
        assert_eq!(selection_word(&["日本", "é"]), "日本,é");
        assert_eq!(shell_word(""), "''");
    }

    #[test]
    fn a_backslash_before_anything_else_is_refused_naming_where() {
        assert_eq!(
            parse_selection(r"a\b"),
            Err(SelectionTextError::UnknownEscape {
                byte_offset: 1,
                ch: 'b'
            })
        );
        assert_eq!(
            parse_selection(r"ab\"),
            Err(SelectionTextError::TrailingEscape { byte_offset: 2 })
        );
        assert!(
            parse_selection(r"a\b")
                .unwrap_err()
                .to_string()
                .starts_with(r"`\b` at byte 1")
        );
    }
}
