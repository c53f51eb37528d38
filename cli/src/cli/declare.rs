//! `strata --store DIR declare STREAM --field NAME:KIND ...`: record a stream's declaration.

use std::path::Path;
use std::process::ExitCode;

use strata::{Config, EngineError, Store, Stream};

use super::args::DeclareArgs;
use super::{Failure, open_failure, print_summary};

pub fn run(dir: &Path, args: &DeclareArgs) -> Result<ExitCode, Failure> {
    let mut stream = Stream::new(&args.stream);
    for (name, kind) in &args.fields {
        stream = stream.field(name, *kind);
    }
    stream = stream.track(&args.track);
    match (&args.axis, args.time) {
        (Some(axis), Some(unit)) => stream = stream.time_axis(axis, unit),
        (Some(axis), None) => stream = stream.axis(axis),
        // clap requires --axis with --time.
        (None, _) => {}
    }
    if let Some((base, fanout)) = args.ladder {
        stream = stream.ladder(base, fanout);
    }
    let decl = stream.build()?;
    // Opening with the declaration records it (or checks it against the recorded one): a
    // conflict is the engine's `Declaration` error, printed as it words it.
    let store = Store::open_or_create(dir, Config::default(), std::slice::from_ref(&decl))
        .map_err(|error| match error {
            EngineError::Declaration { .. } => Failure::from(error),
            other => open_failure(dir, &other),
        })?;
    drop(store);
    // The grid is the declaration's; which of its levels each file stores follows the rows.
    let stored = if decl.axis.is_some() && !decl.measured().is_empty() {
        "; levels stored where their cells fold enough rows to pay for themselves, finer ones \
         folded from the rows when read (docs/levels.md)"
    } else {
        ""
    };
    print_summary(&format!(
        "stream {} is declared in {}: {}{stored}\n",
        decl.id,
        dir.display(),
        strata::describe(&decl)
    ))?;
    Ok(ExitCode::SUCCESS)
}
