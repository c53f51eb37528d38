//! `strata --store DIR declare STREAM --field NAME:KIND ...`: record a stream's declaration.

use std::path::Path;
use std::process::ExitCode;

use strata::{Config, EngineError, Store, Stream, StreamDecl};

use super::args::DeclareArgs;
use super::{Failure, open_failure, print};

pub fn run(dir: &Path, args: &DeclareArgs) -> Result<ExitCode, Failure> {
    let mut stream = Stream::new(&args.stream);
    for (name, kind) in &args.fields {
        stream = stream.field(name, *kind);
    }
    stream = stream.track(&args.track);
    if let Some(axis) = &args.axis {
        stream = stream.axis(axis);
    }
    if let Some((base, fanout)) = args.ladder {
        stream = stream.ladder(base, fanout);
    }
    let decl = stream.build()?;
    // Opening with the declaration records it (or checks it against the recorded one): a
    // conflict is the engine's `Declaration` error, printed as it words it.
    let store =
        Store::open(dir, Config::default(), std::slice::from_ref(&decl)).map_err(|error| {
            match error {
                EngineError::Declaration { .. } => Failure::from(error),
                other => open_failure(dir, &other),
            }
        })?;
    drop(store);
    print(&format!(
        "stream {} is declared in {}: {}\n",
        decl.id,
        dir.display(),
        describe(&decl)
    ))?;
    Ok(ExitCode::SUCCESS)
}

/// A declaration in words: `run:str t:u64 value:f64; track (run); axis t; ladder 64x8`.
fn describe(decl: &StreamDecl) -> String {
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
