//! Declaring streams: fields in order, up to four of them as the track, at most one u64 axis.

use strata_index::{FieldDecl, FieldKind, LadderSpec, StreamDecl};

use crate::error::EngineError;

/// The level ladder a stream gets unless it asks for another: level-0 cells 64 axis units wide,
/// each level 4 times wider. See `docs/levels.md` for how the defaults were chosen.
pub const DEFAULT_LADDER: LadderSpec = LadderSpec {
    base: 64,
    fanout: 4,
};

/// Builds a [`StreamDecl`]: `Stream::new("capture").field("run", FieldKind::Str)
/// .field("t", FieldKind::U64).field("value", FieldKind::F64).track(["run"]).axis("t").build()`.
#[derive(Clone, Debug)]
pub struct Stream {
    id: String,
    fields: Vec<FieldDecl>,
    track: Vec<String>,
    axis: Option<String>,
    ladder: LadderSpec,
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

    /// Sets the level ladder: level-0 cells `base` wide, each level `fanout` times wider.
    #[must_use]
    pub fn ladder(mut self, base: u64, fanout: u64) -> Stream {
        self.ladder = LadderSpec { base, fanout };
        self
    }

    /// The declaration, validated.
    pub fn build(self) -> Result<StreamDecl, EngineError> {
        let bad = |reason: String| EngineError::Declaration {
            stream: self.id.clone(),
            reason,
        };
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

/// A declaration in words: `run:str t:u64 value:f64; track (run); axis t; ladder 64x8`.
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
    format!(
        "{}; track ({}); axis {}; ladder {}x{}",
        fields.join(" "),
        track.join(", "),
        decl.axis.map_or("none", name),
        decl.ladder.base,
        decl.ladder.fanout
    )
}
