//! `retention.json`: the retention the `strata` command line applies to a store, kept in the
//! store's folder beside the manifest (docs/retention.md, "The command line").
//!
//! The engine does not read this file: a library embedder declares retention in code
//! (`Config::retention`). The command line reads it into that setting whenever it opens a store
//! to compact (`strata compact`, `strata ingest`), and `engine-fsck` shows it. The format lives
//! here, in the crate both of them depend on, so the two never read it differently; turning it
//! into the engine's own `Retention` is the command line's business.
//!
//! ```json
//! {
//!   "capture": { "raw": { "axis_span": 86400 }, "levels": [[0, { "axis_span": 86400 }], [3, "forever"]] },
//!   "counter": { "raw": { "positions": 1000000 } }
//! }
//! ```
//!
//! One object keyed by stream id. Per stream, `raw` is the raw rows' lifetime and `levels` lists
//! `[from_level, lifetime]` pairs (level `k` lives by the entry with the highest `from <= k`);
//! both may be left out (forever, none). A lifetime is `"forever"`, `{"axis_span": N}` or
//! `{"positions": N}`. Unknown keys are refused, so a misspelt setting is never silently ignored.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use strata_segment::vfs::Vfs;

/// The file's name, in the store's root folder.
pub const RETENTION_FILE: &str = "retention.json";

/// How long one tier is kept, as the file spells it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LifetimeSpec {
    /// Never retired (`"forever"`).
    #[default]
    Forever,
    /// Kept while within this axis span of the stream's newest axis value
    /// (`{"axis_span": N}`).
    AxisSpan(u64),
    /// Kept while within this many positions of the stream's last position
    /// (`{"positions": N}`).
    Positions(u64),
}

impl LifetimeSpec {
    /// Reads the command line's spelling: `forever`, `axis:N` or `positions:N`, N a positive
    /// integer. The error says what is wrong with `word`.
    pub fn parse(word: &str) -> Result<LifetimeSpec, String> {
        if word == "forever" {
            return Ok(LifetimeSpec::Forever);
        }
        let bad = || format!("{word:?} is not a lifetime: one of forever, axis:N, positions:N");
        let (kind, n) = word.split_once(':').ok_or_else(bad)?;
        let make: fn(u64) -> LifetimeSpec = match kind {
            "axis" => LifetimeSpec::AxisSpan,
            "positions" => LifetimeSpec::Positions,
            _ => return Err(bad()),
        };
        let n: u64 = n.parse().map_err(|_| {
            format!("{word:?}: {n:?} is not a whole number (N in {kind}:N counts from 1)")
        })?;
        if n == 0 {
            return Err(format!(
                "{word:?}: a lifetime of 0 keeps nothing (to retire everything, use `strata \
                 trim` or `strata retire`)"
            ));
        }
        Ok(make(n))
    }
}

impl fmt::Display for LifetimeSpec {
    /// The command line's spelling, which [`LifetimeSpec::parse`] reads back.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LifetimeSpec::Forever => f.write_str("forever"),
            LifetimeSpec::AxisSpan(n) => write!(f, "axis:{n}"),
            LifetimeSpec::Positions(n) => write!(f, "positions:{n}"),
        }
    }
}

/// One stream's retention, as the file spells it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StreamRetention {
    /// The raw rows' lifetime.
    #[serde(default)]
    pub raw: LifetimeSpec,
    /// `(from_level, lifetime)`, ascending by level: level `k` lives by the entry with the
    /// highest `from <= k`; levels beneath every entry live forever.
    #[serde(default)]
    pub levels: Vec<(u8, LifetimeSpec)>,
}

impl StreamRetention {
    /// Whether nothing of the stream is ever retired.
    pub fn is_forever(&self) -> bool {
        self.raw == LifetimeSpec::Forever
            && self.levels.iter().all(|(_, l)| *l == LifetimeSpec::Forever)
    }
}

impl fmt::Display for StreamRetention {
    /// `raw axis:3600; levels 0+ axis:3600, 3+ forever`, or `raw forever` alone.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "raw {}", self.raw)?;
        if self.levels.is_empty() {
            return Ok(());
        }
        let levels: Vec<String> = self
            .levels
            .iter()
            .map(|(k, lifetime)| format!("{k}+ {lifetime}"))
            .collect();
        write!(f, "; levels {}", levels.join(", "))
    }
}

/// The whole file: each stream's retention, by stream id.
pub type RetentionFile = BTreeMap<String, StreamRetention>;

/// Parses the file's bytes; the error says what is wrong, and where (serde_json's line and
/// column), but not which file (the caller names it). A stream named twice is refused: a map
/// would keep the last of them silently, and which one a person meant is theirs to say.
pub fn parse_retention(bytes: &[u8]) -> Result<RetentionFile, String> {
    serde_json::from_slice::<UniqueStreams>(bytes)
        .map(|unique| unique.0)
        .map_err(|e| e.to_string())
}

/// The file's object, refusing a key it has seen before while it is read (so serde_json's
/// error carries the line and column of the second one).
struct UniqueStreams(RetentionFile);

impl<'de> Deserialize<'de> for UniqueStreams {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Streams;

        impl<'de> serde::de::Visitor<'de> for Streams {
            type Value = UniqueStreams;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object of stream retentions, keyed by stream id")
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<UniqueStreams, A::Error> {
                let mut file = RetentionFile::new();
                while let Some(stream) = map.next_key::<String>()? {
                    if file.contains_key(&stream) {
                        return Err(serde::de::Error::custom(format!(
                            "stream {stream:?} is named twice (keep one of its entries)"
                        )));
                    }
                    let kept = map.next_value::<StreamRetention>()?;
                    file.insert(stream, kept);
                }
                Ok(UniqueStreams(file))
            }
        }

        deserializer.deserialize_map(Streams)
    }
}

/// The streams `file` names that `is_declared` says the store does not declare, in id order:
/// the file is refused whole while it names any (a sweep could never apply them, and a stream
/// declared later would silently inherit them).
pub fn undeclared_streams(file: &RetentionFile, is_declared: impl Fn(&str) -> bool) -> Vec<&str> {
    file.keys()
        .map(String::as_str)
        .filter(|stream| !is_declared(stream))
        .collect()
}

/// What is wrong with a file naming `stream`, which the store does not declare, and the
/// command that removes its entry, after "retention.json" or "it": said alike by the command
/// line and by fsck.
pub fn undeclared_problem(stream: &str) -> String {
    format!(
        "names stream {stream:?}, which the store does not declare: remove its entry with \
         `strata retention {} --clear`",
        strata_index::shell_word(stream)
    )
}

/// The file's text: pretty-printed, a newline at the end.
pub fn render_retention(file: &RetentionFile) -> String {
    // A map of strings to plain structs always serializes.
    let mut text = serde_json::to_string_pretty(file).unwrap_or_else(|_| "{}".to_owned());
    text.push('\n');
    text
}

/// The store's `retention.json` read through `vfs`: `Ok(None)` when there is none, an error
/// saying what is wrong when it cannot be read or parsed.
pub fn read_retention(vfs: &dyn Vfs) -> Result<Option<RetentionFile>, String> {
    match vfs.exists(RETENTION_FILE) {
        Ok(false) => return Ok(None),
        Ok(true) => {}
        Err(e) => return Err(format!("cannot read {RETENTION_FILE}: {e}")),
    }
    let bytes = vfs
        .read(RETENTION_FILE)
        .map_err(|e| format!("cannot read {RETENTION_FILE}: {e}"))?;
    parse_retention(&bytes)
        .map(Some)
        .map_err(|e| format!("{RETENTION_FILE} is malformed: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn undeclared_streams_are_named_in_id_order() {
        let file = parse_retention(br#"{"z": {}, "c": {}, "a": {}}"#).unwrap();
        assert_eq!(undeclared_streams(&file, |s| s == "c"), ["a", "z"]);
        assert!(undeclared_streams(&file, |_| true).is_empty());
        assert!(undeclared_problem("it's").ends_with(r"`strata retention 'it'\''s' --clear`"));
        assert_eq!(
            undeclared_problem("a"),
            "names stream \"a\", which the store does not declare: remove its entry with \
             `strata retention a --clear`"
        );
    }

    #[test]
    fn lifetimes_parse_from_the_command_line_and_print_back() {
        for word in ["forever", "axis:86400", "positions:1"] {
            assert_eq!(LifetimeSpec::parse(word).unwrap().to_string(), word);
        }
        for bad in [
            "", "axis", "axis:", "axis:0", "axis:abc", "axis:-1", "days:3", "Forever",
        ] {
            assert!(LifetimeSpec::parse(bad).is_err(), "{bad:?}");
        }
        assert!(
            LifetimeSpec::parse("axis:0")
                .unwrap_err()
                .contains("keeps nothing")
        );
        assert!(
            LifetimeSpec::parse("axis:abc")
                .unwrap_err()
                .contains("not a whole number")
        );
    }

    #[test]
    fn the_file_round_trips_and_refuses_what_it_does_not_know() {
        let text = r#"{"c": {"raw": {"axis_span": 100}, "levels": [[0, {"axis_span": 100}], [3, "forever"]]},
                      "d": {"raw": {"positions": 5}}, "e": {}}"#;
        let file = parse_retention(text.as_bytes()).unwrap();
        assert_eq!(file["c"].raw, LifetimeSpec::AxisSpan(100));
        assert_eq!(
            file["c"].levels,
            vec![(0, LifetimeSpec::AxisSpan(100)), (3, LifetimeSpec::Forever)]
        );
        assert_eq!(file["d"].raw, LifetimeSpec::Positions(5));
        assert!(file["e"].is_forever());
        assert_eq!(
            file["c"].to_string(),
            "raw axis:100; levels 0+ axis:100, 3+ forever"
        );
        assert_eq!(
            parse_retention(render_retention(&file).as_bytes()).unwrap(),
            file
        );
        let twice = parse_retention(
            b"{\"c\": {\"raw\": \"forever\"},\n \"c\": {\"raw\": {\"positions\": 5}}}",
        )
        .unwrap_err();
        assert!(
            twice.starts_with("stream \"c\" is named twice") && twice.contains("line 2"),
            "{twice}"
        );
        assert!(parse_retention(br#"{"c": {}, "d": {}}"#).is_ok());
        for bad in [
            "",
            "[]",
            r#"{"c": {"raw": "never"}}"#,
            r#"{"c": {"raw": {"axis_span": -1}}}"#,
            r#"{"c": {"raw": "forever", "level": []}}"#,
            r#"{"c": {"levels": [[300, "forever"]]}}"#,
        ] {
            assert!(parse_retention(bad.as_bytes()).is_err(), "{bad}");
        }
    }
}
