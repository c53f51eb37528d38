//! Track keys: a track tuple encoded once, as bytes whose order and prefixes are the tuple's.
//!
//! Encoding: each label's UTF-8 followed by U+001F (the byte 0x1F), including the last; the
//! empty tuple (the root) is the empty byte string. Because no label byte is below 0x20 (labels
//! refuse control characters), two laws hold:
//! 1. byte order of keys is component-wise order of tuples, and a tuple sorts immediately before
//!    everything beneath it;
//! 2. a key starts with another key exactly when its tuple starts with that tuple (`run_70` is
//!    not beneath `run_7`: `run_7\x1F` is not a prefix of `run_70\x1F`).
//!
//! A prefix selection is therefore a range scan ([`TrackKey::range`], [`select`]).

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Bound;

use crate::label::{LabelError, validate_label, validate_stored_label};

/// The most components a track tuple may have.
pub const TRACK_DEPTH_MAX: usize = 4;

/// The byte that terminates every component of an encoded key (U+001F, unit separator).
pub const SEPARATOR: u8 = 0x1F;

/// Why a track tuple or an encoded key was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum KeyError {
    /// A component beyond [`TRACK_DEPTH_MAX`]; `component_idx` is the first one too many.
    TooDeep {
        /// 0-based index of the first component past the limit.
        component_idx: usize,
    },
    /// A component is not a legal label (empty, or holds a control character).
    Label {
        /// 0-based index of the component.
        component_idx: usize,
        /// Byte offset of the component inside the encoded key.
        byte_offset: usize,
        /// What is wrong with the label.
        error: LabelError,
    },
    /// The encoded bytes are not UTF-8.
    NotUtf8 {
        /// Length of the longest valid UTF-8 prefix: the first bad byte is here.
        byte_offset: usize,
    },
    /// A non-empty encoding does not end with the separator 0x1F.
    MissingSeparator {
        /// Length of the encoding (the separator was expected at `len - 1`).
        len: usize,
    },
}

impl fmt::Display for KeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TooDeep { component_idx } => write!(
                f,
                "track label {} is past the limit: a track has at most {TRACK_DEPTH_MAX} labels",
                component_idx + 1
            ),
            // Counted from 1 as the user wrote the labels; the key byte is for a debugger, not
            // for the message.
            Self::Label {
                component_idx,
                error,
                ..
            } => write!(f, "track label {}: {error}", component_idx + 1),
            Self::NotUtf8 { byte_offset } => {
                write!(f, "track key is not UTF-8 at byte {byte_offset}")
            }
            Self::MissingSeparator { len } => write!(
                f,
                "track key of {len} bytes does not end with the separator 0x1F"
            ),
        }
    }
}

impl std::error::Error for KeyError {}

/// An encoded track tuple. Ordered, hashed and compared as bytes.
///
/// Invariant: the bytes are the encoding of 0..=[`TRACK_DEPTH_MAX`] legal labels, except for the
/// exclusive upper bound that [`TrackKey::range`] builds (see there).
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct TrackKey(
    // Held as a `String` rather than `Vec<u8>`: every key is UTF-8 by construction, so the labels
    // can be handed out as `&str` without a fallible conversion. `String` orders by bytes.
    String,
);

impl TrackKey {
    /// The root: the empty tuple, beneath which every key lies.
    pub const ROOT: TrackKey = TrackKey(String::new());

    /// Encodes a tuple of labels, outermost first.
    pub fn encode<S: AsRef<str>>(labels: &[S]) -> Result<TrackKey, KeyError> {
        if labels.len() > TRACK_DEPTH_MAX {
            return Err(KeyError::TooDeep {
                component_idx: TRACK_DEPTH_MAX,
            });
        }
        let mut key = String::with_capacity(labels.iter().map(|l| l.as_ref().len() + 1).sum());
        for (component_idx, label) in labels.iter().enumerate() {
            let label = label.as_ref();
            validate_label(label).map_err(|error| KeyError::Label {
                component_idx,
                byte_offset: key.len(),
                error,
            })?;
            key.push_str(label);
            key.push(char::from(SEPARATOR));
        }
        Ok(TrackKey(key))
    }

    /// Decodes and validates an encoded key. Never panics.
    pub fn decode(bytes: &[u8]) -> Result<TrackKey, KeyError> {
        let text = std::str::from_utf8(bytes).map_err(|e| KeyError::NotUtf8 {
            byte_offset: e.valid_up_to(),
        })?;
        if !(text.is_empty() || text.ends_with(char::from(SEPARATOR))) {
            return Err(KeyError::MissingSeparator { len: text.len() });
        }
        let mut byte_offset = 0;
        for (component_idx, label) in text.split_terminator(char::from(SEPARATOR)).enumerate() {
            if component_idx >= TRACK_DEPTH_MAX {
                return Err(KeyError::TooDeep { component_idx });
            }
            validate_stored_label(label).map_err(|error| KeyError::Label {
                component_idx,
                byte_offset,
                error,
            })?;
            byte_offset += label.len() + 1;
        }
        Ok(TrackKey(text.to_owned()))
    }

    /// The encoded bytes.
    pub fn as_bytes(&self) -> &[u8] {
        self.0.as_bytes()
    }

    /// The labels, outermost first.
    pub fn labels(&self) -> impl DoubleEndedIterator<Item = &str> + Clone {
        self.0.split_terminator(char::from(SEPARATOR))
    }

    /// The number of components (0 for the root).
    pub fn depth(&self) -> usize {
        self.0.bytes().filter(|&b| b == SEPARATOR).count()
    }

    /// Whether this is the empty tuple.
    pub fn is_root(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `prefix`'s tuple is a prefix of (or equal to) this key's tuple.
    ///
    /// A byte prefix test; by law 2 it equals the component-wise test.
    pub fn starts_with(&self, prefix: &TrackKey) -> bool {
        self.0.as_bytes().starts_with(prefix.0.as_bytes())
    }

    /// The bounds selecting exactly `self` and every key beneath it, for `BTreeMap::range`.
    ///
    /// For the root both ends are unbounded. Otherwise the upper bound is `self` with its last
    /// byte (the separator 0x1F) replaced by 0x20. That bound is a sentinel, not a legal key: do
    /// not use it as anything but a bound.
    pub fn range(&self) -> (Bound<TrackKey>, Bound<TrackKey>) {
        // Why this is exact. Let `p` be self's bytes and `u` the bound, equal to `p` except that
        // its last byte is 0x20 where `p` has 0x1F.
        // - A key beneath self starts with `p`, so it is >= `p`, and it is < `u` because at the
        //   last position of `p` it has 0x1F < 0x20 after an equal prefix.
        // - A key that does not start with `p` either differs from `p` before the last byte of `p`
        //   (then `p` and `u` agree there, so the key is below both or above both), or is a proper
        //   prefix of `p` (then it is < `p`), or shares all but the last byte of `p` and continues
        //   the last label there. Every label byte is >= 0x20 — ASCII control bytes are refused
        //   and every byte of a multi-byte UTF-8 sequence is >= 0x80 — so that key has a byte
        //   >= 0x20 where `u` has 0x20 and sorts at or after `u`: excluded.
        if self.is_root() {
            return (Bound::Unbounded, Bound::Unbounded);
        }
        // A legal non-root key ends with the one-byte separator; replacing it keeps UTF-8.
        // (Called on the sentinel itself, this yields an empty range rather than a panic.)
        let mut upper = self.0.clone();
        upper.pop();
        upper.push(' ');
        (
            Bound::Included(self.clone()),
            Bound::Excluded(TrackKey(upper)),
        )
    }
}

impl fmt::Debug for TrackKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TrackKey")?;
        f.debug_list().entries(self.labels()).finish()
    }
}

impl serde::Serialize for TrackKey {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.labels())
    }
}

impl<'de> serde::Deserialize<'de> for TrackKey {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let labels = <Vec<String> as serde::Deserialize>::deserialize(deserializer)?;
        TrackKey::encode(&labels).map_err(serde::de::Error::custom)
    }
}

/// The entries of `map` whose key is `prefix` or lies beneath it, in key order.
///
/// A range scan: it visits nothing outside the subtree.
pub fn select<'a, V>(
    map: &'a BTreeMap<TrackKey, V>,
    prefix: &TrackKey,
) -> impl DoubleEndedIterator<Item = (&'a TrackKey, &'a V)> + use<'a, V> {
    map.range(prefix.range())
}

#[cfg(test)]
mod tests;
