//! Declaring streams: fields in order, up to four of them as the track, at most one u64 axis.

use strata_index::{
    FieldDecl, FieldKind, LadderSpec, Record, StreamDecl, TimeUnit, check_header, format_of,
};
use strata_segment::ManifestWriter;
use strata_segment::read_manifest;
use strata_segment::vfs::Vfs;

use crate::error::EngineError;

/// The level ladder a stream gets unless it asks for another: level-0 cells 1 axis unit wide,
/// each level twice as wide, so every width a power of two is on the grid and a survey answers
/// at the finest the data supports, whatever the axis's units. With the default
/// `LevelStorage::Adaptive`, a file stores only the levels whose cells fold enough rows to pay
/// for themselves and folds the finer ones from its rows when read, so the fine grid costs no
/// bytes. See `docs/levels.md`, "The default ladder".
pub const DEFAULT_LADDER: LadderSpec = LadderSpec { base: 1, fanout: 2 };

/// The name every face that prints rows gives a row's position: the first column of the
/// command line's CSV, a key of its JSON objects, and the column the Arrow export and the
/// Python face carry. A new declaration may not name a field so ([`Stream::build`] refuses
/// it), or a row would carry two values of one name. The rule is the builder's, not
/// [`StreamDecl::validate`]'s: that check runs when recorded declarations replay, and a store
/// declared before the name was reserved must still open.
pub const POSITION_COLUMN: &str = "position";

/// Builds a [`StreamDecl`]: `Stream::new("capture").field("run", FieldKind::Str)
/// .field("t", FieldKind::U64).field("value", FieldKind::F64).track(["run"]).axis("t").build()`.
#[derive(Clone, Debug)]
pub struct Stream {
    id: String,
    fields: Vec<FieldDecl>,
    track: Vec<String>,
    axis: Option<String>,
    ladder: LadderSpec,
    time: Option<TimeUnit>,
}

impl Stream {
    /// A stream with no fields yet.
    pub fn new(id: impl Into<String>) -> Stream {
        Stream {
            id: id.into(),
            fields: Vec::new(),
            track: Vec::new(),
            axis: None,
            ladder: DEFAULT_LADDER,
            time: None,
        }
    }

    /// Appends a field (declaration order is durable and is the order of a row's values).
    #[must_use]
    pub fn field(mut self, name: impl Into<String>, kind: FieldKind) -> Stream {
        self.fields.push(FieldDecl {
            name: name.into(),
            kind,
        });
        self
    }

    /// Names the track fields, outermost first (at most four).
    #[must_use]
    pub fn track<S: Into<String>>(mut self, fields: impl IntoIterator<Item = S>) -> Stream {
        self.track = fields.into_iter().map(Into::into).collect();
        self
    }

    /// Names the one `u64` axis field.
    #[must_use]
    pub fn axis(mut self, field: impl Into<String>) -> Stream {
        self.axis = Some(field.into());
        self
    }

    /// Names the one `u64` axis field and says it counts `unit`s since the Unix epoch: the
    /// faces read and print it as a time (RFC 3339, Arrow's `Timestamp(unit, UTC)`, numpy's
    /// `datetime64`); the engine stores and compares it as the same `u64`. Recorded in the
    /// manifest (format 4): reopening with another unit, or none, is a conflict.
    #[must_use]
    pub fn time_axis(mut self, field: impl Into<String>, unit: TimeUnit) -> Stream {
        self.axis = Some(field.into());
        self.time = Some(unit);
        self
    }

    /// Sets the level ladder: level-0 cells `base` wide, each level `fanout` times wider.
    #[must_use]
    pub fn ladder(mut self, base: u64, fanout: u64) -> Stream {
        self.ladder = LadderSpec { base, fanout };
        self
    }

    /// The declaration, validated; a field named [`POSITION_COLUMN`] is refused.
    pub fn build(self) -> Result<StreamDecl, EngineError> {
        let bad = |reason: String| EngineError::Declaration {
            stream: self.id.clone(),
            reason,
        };
        if let Some(field_idx) = self.fields.iter().position(|f| f.name == POSITION_COLUMN) {
            return Err(bad(format!(
                "field {POSITION_COLUMN:?} (field {}): the name is reserved for each row's \
                 position, which reads print under it beside the fields; name the field \
                 otherwise",
                field_idx + 1
            )));
        }
        let index_of = |name: &str| {
            self.fields
                .iter()
                .position(|f| f.name == name)
                .and_then(|i| u16::try_from(i).ok())
                .ok_or_else(|| bad(format!("no field named {name:?}")))
        };
        let track = self
            .track
            .iter()
            .map(|name| index_of(name))
            .collect::<Result<Vec<_>, _>>()?;
        let axis = self.axis.as_deref().map(index_of).transpose()?;
        let decl = StreamDecl {
            id: self.id.clone(),
            fields: self.fields.clone(),
            track,
            axis,
            ladder: self.ladder,
            time: self.time,
        };
        decl.validate().map_err(|e| bad(e.to_string()))?;
        Ok(decl)
    }
}

/// Parses a field kind as the command line writes it (`u64`, `i64`, `f64`, `str`, `bytes`).
pub fn parse_kind(word: &str) -> Option<FieldKind> {
    match word {
        "u64" => Some(FieldKind::U64),
        "i64" => Some(FieldKind::I64),
        "f64" => Some(FieldKind::F64),
        "str" => Some(FieldKind::Str),
        "bytes" => Some(FieldKind::Bytes),
        _ => None,
    }
}

/// A declaration in words: `run:str t:u64 value:f64; track (run); axis t; ladder 64x8`, the
/// axis followed by its unit when it is time (`axis t (time, us)`).
pub fn describe(decl: &StreamDecl) -> String {
    let fields: Vec<String> = decl
        .fields
        .iter()
        .map(|f| format!("{}:{}", f.name, f.kind))
        .collect();
    let name = |idx: u16| {
        decl.fields
            .get(usize::from(idx))
            .map_or("?", |f| f.name.as_str())
    };
    let track: Vec<&str> = decl.track.iter().map(|&idx| name(idx)).collect();
    let time = decl
        .time
        .map_or_else(String::new, |unit| format!(" (time, {unit})"));
    format!(
        "{}; track ({}); axis {}{time}; ladder {}x{}",
        fields.join(" "),
        track.join(", "),
        decl.axis.map_or("none", name),
        decl.ladder.base,
        decl.ladder.fanout
    )
}

/// Whether `record`, a declaration's frame, needs a newer manifest format than the generation
/// `manifest` appends to: a time axis's declaration (format 4) in a generation an earlier build
/// wrote. Such a generation cannot take the frame (this build would refuse it on the next boot,
/// a body version above the header's), so the store writes a new generation of this build's
/// format instead, whose snapshot holds the declaration. Reads the generation's header only then.
pub(crate) fn needs_newer_format(
    vfs: &dyn Vfs,
    manifest: &ManifestWriter,
    record: &Record,
) -> Result<bool, EngineError> {
    let needs = format_of(std::slice::from_ref(record));
    if needs <= strata_index::LOG_VERSION_MIN {
        return Ok(false);
    }
    let bytes = read_manifest(vfs, manifest.generation()).map_err(EngineError::read)?;
    let format = check_header(&bytes).map_err(|reason| EngineError::Internal {
        reason: format!("the manifest booted from has a bad header: {reason}"),
    })?;
    Ok(format < needs)
}

/// The refusal of a time axis's declaration that the manifest's rewrite (to a format that holds
/// it) could not record yet: files retired while readers in other processes read them wait to
/// be removed, and a rewrite would forget them.
pub(crate) fn upgrade_deferred(streams: &[StreamDecl]) -> EngineError {
    let stream = streams
        .iter()
        .find(|decl| decl.time.is_some())
        .map_or_else(String::new, |decl| decl.id.clone());
    EngineError::Declaration {
        stream,
        reason: "a time axis needs the manifest in format 4, which this store's manifest is \
                 rewritten to; the rewrite waits for readers in other processes to let go of \
                 retired files: open it again once they have closed"
            .to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_field_named_position_is_refused_and_a_recorded_one_still_validates() {
        let refused = Stream::new("p")
            .field("v", FieldKind::F64)
            .field(POSITION_COLUMN, FieldKind::U64)
            .build()
            .unwrap_err();
        assert!(
            refused
                .to_string()
                .starts_with("stream \"p\": field \"position\" (field 2): the name is reserved"),
            "{refused}"
        );
        // Any other name, `Position` and `position_2` among them, is a field like any other.
        for name in ["Position", "position_2", "positions"] {
            let decl = Stream::new("p").field(name, FieldKind::U64).build();
            assert!(decl.is_ok(), "{name}: {decl:?}");
        }
        // A declaration recorded before the name was reserved replays: replay validates with
        // `StreamDecl::validate`, which knows no reserved name.
        let recorded = StreamDecl {
            id: "p".to_owned(),
            fields: vec![FieldDecl {
                name: POSITION_COLUMN.to_owned(),
                kind: FieldKind::U64,
            }],
            track: Vec::new(),
            axis: None,
            ladder: DEFAULT_LADDER,
            time: None,
        };
        assert_eq!(recorded.validate(), Ok(()));
    }
}
