//! `strata --store DIR query STREAM [--track a,b] [--from P] [--to P] [--format csv|json]`: the
//! sealed rows, in publish order.

use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::process::ExitCode;

use strata::StoredRow;

use super::args::{Format, QueryArgs};
use super::parse::{POSITION_COLUMN, cell};
use super::{Failure, open_existing, quiet_pipe, usage_error};

pub fn run(dir: &Path, args: &QueryArgs) -> Result<ExitCode, Failure> {
    let from = args.from.unwrap_or(0);
    let to = args.to.unwrap_or(u64::MAX);
    if from > to {
        usage_error(&format!(
            "--from {from} is above --to {to}: the range holds no position"
        ));
    }
    let selection: Vec<&str> = match args.track.as_deref() {
        None | Some("") => Vec::new(),
        Some(track) => track.split(',').collect(),
    };
    let store = open_existing(dir)?;
    let rows = store.query(&args.stream, &selection, from..=to)?;
    let names: Vec<&str> = store
        .stream(&args.stream)
        .map(|decl| decl.fields.iter().map(|f| f.name.as_str()).collect())
        .unwrap_or_default();
    let out = BufWriter::new(io::stdout().lock());
    let written = match args.format {
        Format::Csv => write_csv(out, &names, &rows),
        Format::Json => write_json(out, &names, &rows),
    };
    quiet_pipe(written)?;
    Ok(ExitCode::SUCCESS)
}

/// A header `position,<fields...>`, then one record per row.
fn write_csv(out: impl Write, names: &[&str], rows: &[StoredRow]) -> io::Result<()> {
    let mut writer = csv::Writer::from_writer(out);
    let header = std::iter::once(POSITION_COLUMN).chain(names.iter().copied());
    writer.write_record(header).map_err(csv_io)?;
    for row in rows {
        let cells = std::iter::once(row.position.to_string()).chain(row.values.iter().map(cell));
        writer.write_record(cells).map_err(csv_io)?;
    }
    writer.flush()
}

/// One JSON array, an object per row on its own line: `position` first, then the fields in
/// declaration order (bytes as arrays of numbers). Written row by row, never built whole.
fn write_json(mut out: impl Write, names: &[&str], rows: &[StoredRow]) -> io::Result<()> {
    out.write_all(b"[")?;
    for (row_idx, row) in rows.iter().enumerate() {
        out.write_all(if row_idx == 0 { b"\n" } else { b",\n" })?;
        write!(out, "{{\"{POSITION_COLUMN}\":{}", row.position)?;
        for (name, value) in names.iter().zip(&row.values) {
            out.write_all(b",")?;
            serde_json::to_writer(&mut out, name)?;
            out.write_all(b":")?;
            serde_json::to_writer(&mut out, value)?;
        }
        out.write_all(b"}")?;
    }
    out.write_all(if rows.is_empty() { b"]\n" } else { b"\n]\n" })?;
    out.flush()
}

/// csv's error as the I/O error beneath it, so a closed pipe stays recognisable.
fn csv_io(error: csv::Error) -> io::Error {
    match error.into_kind() {
        csv::ErrorKind::Io(error) => error,
        other => io::Error::other(format!("{other:?}")),
    }
}
