//! `strata --store DIR query STREAM [--track a,b] [--from P] [--to P] [--format csv|json]`: the
//! sealed rows, in publish order, streamed: each row is written as it is read
//! (`Store::query_iter`), so memory does not grow with the rows printed. A block found damaged
//! part-way ends the output there: stderr says why and the command exits 1.

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use strata::{Config, EngineError, StoredRow, TimeUnit, Value};

use super::args::{ExportArgs, Format, QueryArgs};
use super::parse::{POSITION_COLUMN, cell, declares_position};
use super::range::{Selected, note_missed};
use super::{Failure, count, declared, open_to_read, quiet_pipe, selection, tell_watermark};

/// Segment readers a query keeps cached beyond the one each partition's cursor holds.
const QUERY_OPEN_SEGMENTS_MAX: usize = 1;

pub fn run(source: &super::Source, args: &QueryArgs) -> Result<ExitCode, Failure> {
    // A query reads each file once, in order: a file done with is let go (unmapped) rather
    // than cached, so the pages of what was printed leave the process as the rows do.
    let config = Config::default().open_segments_max(QUERY_OPEN_SEGMENTS_MAX);
    let store = open_to_read(source, config)?;
    let decl = declared(&store, &args.stream)?;
    let selection = selection(args.track.as_ref());
    let selected = Selected::of(&args.range, decl)?;
    // The selection, the range and the floors are checked here, before anything is written.
    let rows =
        store.query_iter_within(&args.stream, &selection, selected.positions, selected.axis)?;
    let shape = Shape::of(decl);
    let out = BufWriter::new(io::stdout().lock());
    let written = match args.format {
        Format::Csv => write_csv(out, &shape, rows),
        Format::Json => write_json(out, &shape, rows),
    };
    match written {
        Ok(n_rows) => {
            if n_rows == 0 {
                note_missed(&store, decl, &selection, &selected);
            }
            tell_watermark(&store, &args.stream);
            Ok(ExitCode::SUCCESS)
        }
        Err(Stop::Write(error)) => {
            quiet_pipe(Err(error))?;
            Ok(ExitCode::SUCCESS)
        }
        Err(Stop::Read(error)) => Err(error.into()),
    }
}

/// `strata export STREAM --format csv OUT|-`: the rows `query --format csv` prints, into `OUT`
/// (written as `OUT.partial` and renamed once whole, so a failed export never leaves a file that
/// looks finished) or standard output. Streamed, as `query` is.
/// `output`, opened for writing, when it already exists and is not a regular file (a FIFO, a
/// device such as `/dev/null`, a socket): an export writes into it as it is, rather than into
/// `OUT.partial` renamed over it, which would replace the special file with a regular one (and
/// hide a full device). `None` for a regular file or a path with nothing there.
pub(crate) fn special_output(output: &Path) -> Result<Option<File>, Failure> {
    match fs::metadata(output) {
        Ok(meta) if !meta.is_file() && !meta.is_dir() => fs::OpenOptions::new()
            .write(true)
            .open(output)
            .map(Some)
            .map_err(|e| Failure::new(format!("cannot open {}: {e}", output.display()))),
        _ => Ok(None),
    }
}

pub fn export_csv(source: &super::Source, args: &ExportArgs) -> Result<ExitCode, Failure> {
    let to_stdout = args.output == Path::new("-");
    if !to_stdout && args.output.is_dir() {
        return Err(Failure::new(format!(
            "{} is a folder: export writes one file (or - for standard output)",
            args.output.display()
        )));
    }
    let config = Config::default().open_segments_max(QUERY_OPEN_SEGMENTS_MAX);
    let store = open_to_read(source, config)?;
    let decl = declared(&store, &args.stream)?;
    let selection = selection(args.track.as_ref());
    let selected = Selected::of(&args.range, decl)?;
    let rows =
        store.query_iter_within(&args.stream, &selection, selected.positions, selected.axis)?;
    let shape = Shape::of(decl);
    let special = if to_stdout {
        None
    } else {
        special_output(&args.output)?
    };
    let written = if to_stdout {
        let out = BufWriter::new(io::stdout().lock());
        match write_csv(out, &shape, rows) {
            Ok(n_rows) => n_rows,
            Err(Stop::Write(error)) => {
                quiet_pipe(Err(error))?;
                return Ok(ExitCode::SUCCESS);
            }
            Err(Stop::Read(error)) => return Err(error.into()),
        }
    } else if let Some(file) = special {
        match write_csv(BufWriter::new(file), &shape, rows) {
            Ok(n_rows) => n_rows,
            Err(Stop::Write(error)) => {
                return Err(Failure::new(format!(
                    "cannot write {}: {error}",
                    args.output.display()
                )));
            }
            Err(Stop::Read(error)) => return Err(error.into()),
        }
    } else {
        let mut partial = args.output.as_os_str().to_owned();
        partial.push(".partial");
        let partial = PathBuf::from(partial);
        let file = File::create(&partial)
            .map_err(|e| Failure::new(format!("cannot create {}: {e}", partial.display())))?;
        let written = write_csv(BufWriter::new(&file), &shape, rows)
            .and_then(|n_rows| file.sync_all().map(|()| n_rows).map_err(Stop::Write))
            .and_then(|n_rows| {
                fs::rename(&partial, &args.output)
                    .map(|()| n_rows)
                    .map_err(Stop::Write)
            });
        match written {
            Ok(n_rows) => n_rows,
            Err(stop) => {
                let _ = fs::remove_file(&partial);
                return Err(match stop {
                    Stop::Write(error) => {
                        Failure::new(format!("cannot write {}: {error}", args.output.display()))
                    }
                    Stop::Read(error) => error.into(),
                });
            }
        }
    };
    if written == 0 {
        note_missed(&store, decl, &selection, &selected);
    }
    let into = if to_stdout {
        "standard output".to_owned()
    } else {
        args.output.display().to_string()
    };
    eprintln!(
        "strata: exported {} of {} as CSV into {into}",
        count(written, "row", "rows"),
        args.stream,
    );
    tell_watermark(&store, &args.stream);
    Ok(ExitCode::SUCCESS)
}

/// Why writing the rows stopped short.
enum Stop {
    Write(io::Error),
    /// The read failed part-way (after the rows before it were written).
    Read(EngineError),
}

impl From<io::Error> for Stop {
    fn from(error: io::Error) -> Stop {
        Stop::Write(error)
    }
}

impl From<serde_json::Error> for Stop {
    fn from(error: serde_json::Error) -> Stop {
        Stop::Write(error.into())
    }
}

/// The columns a stream's rows are written in, by `query` and `export --format csv` alike.
struct Shape<'a> {
    /// The declared fields, in order.
    names: Vec<&'a str>,
    /// Whether each row's position leads it. A stream declared before `position` was reserved
    /// may have a field of that name: a column or key of it is the field, and the positions are
    /// left out, so nothing is named twice and what is written ingests again.
    with_position: bool,
    /// A time axis (its field index and unit), written in CSV as RFC 3339 (which ingest reads
    /// back); JSON keeps the integer.
    time_axis: Option<(usize, TimeUnit)>,
}

impl<'a> Shape<'a> {
    /// The shape of `decl`'s rows; says on stderr when its positions are left out.
    fn of(decl: &'a strata::StreamDecl) -> Shape<'a> {
        let with_position = !declares_position(decl);
        if !with_position {
            eprintln!(
                "strata: note: stream {:?} declares a field named {POSITION_COLUMN:?} (declared \
                 before the name was reserved for each row's position), so its rows are written \
                 without their positions: the {POSITION_COLUMN:?} column is the field",
                decl.id
            );
        }
        Shape {
            names: decl.fields.iter().map(|f| f.name.as_str()).collect(),
            with_position,
            time_axis: super::time::unit_of(decl)
                .zip(decl.axis)
                .map(|(unit, idx)| (usize::from(idx), unit)),
        }
    }
}

/// A header `position,<fields...>` (the fields alone without the positions), then one record
/// per row; a time axis as RFC 3339. Answers the rows written.
fn write_csv(
    out: impl Write,
    shape: &Shape<'_>,
    rows: impl Iterator<Item = Result<StoredRow, EngineError>>,
) -> Result<u64, Stop> {
    let Shape {
        names,
        with_position,
        time_axis,
    } = shape;
    let (with_position, time_axis) = (*with_position, *time_axis);
    let mut n_rows = 0u64;
    let mut writer = csv::Writer::from_writer(out);
    let position = with_position.then_some(POSITION_COLUMN);
    let header = position.into_iter().chain(names.iter().copied());
    writer.write_record(header).map_err(csv_io)?;
    for row in rows {
        let row = match row {
            Ok(row) => row,
            Err(error) => {
                // What was read before the damage is on its way out, as in a pipe.
                writer.flush()?;
                return Err(Stop::Read(error));
            }
        };
        let position = with_position.then(|| row.position.to_string());
        let cells =
            row.values
                .iter()
                .enumerate()
                .map(|(field_idx, value)| match (time_axis, value) {
                    (Some((axis_idx, unit)), Value::U64(v)) if axis_idx == field_idx => {
                        super::time::format(*v, unit)
                    }
                    _ => cell(value),
                });
        writer
            .write_record(position.into_iter().chain(cells))
            .map_err(csv_io)?;
        n_rows += 1;
    }
    writer.flush()?;
    Ok(n_rows)
}

/// One JSON array, an object per row on its own line: `position` first (unless not
/// `with_position`), then the fields in declaration order (bytes as arrays of numbers). Written
/// row by row, never built whole.
fn write_json(
    mut out: impl Write,
    shape: &Shape<'_>,
    rows: impl Iterator<Item = Result<StoredRow, EngineError>>,
) -> Result<u64, Stop> {
    let (names, with_position) = (&shape.names, shape.with_position);
    out.write_all(b"[")?;
    let mut n_rows = 0u64;
    for row in rows {
        let row = match row {
            Ok(row) => row,
            Err(error) => {
                out.flush()?;
                return Err(Stop::Read(error));
            }
        };
        out.write_all(if n_rows == 0 { b"\n" } else { b",\n" })?;
        n_rows += 1;
        out.write_all(b"{")?;
        if with_position {
            write!(out, "\"{POSITION_COLUMN}\":{}", row.position)?;
        }
        for (field_idx, (name, value)) in names.iter().zip(&row.values).enumerate() {
            if with_position || field_idx > 0 {
                out.write_all(b",")?;
            }
            serde_json::to_writer(&mut out, name)?;
            out.write_all(b":")?;
            match value {
                // JSON has no NaN or infinity (serde_json would write `null`, the word for a
                // missing value): they are the strings the read answers use for them.
                Value::F64(v) if !v.is_finite() => {
                    serde_json::to_writer(&mut out, super::json::non_finite_word(*v))?;
                }
                value => serde_json::to_writer(&mut out, value)?,
            }
        }
        out.write_all(b"}")?;
    }
    out.write_all(if n_rows == 0 { b"]\n" } else { b"\n]\n" })?;
    out.flush()?;
    Ok(n_rows)
}

/// csv's error as the I/O error beneath it, so a closed pipe stays recognisable.
fn csv_io(error: csv::Error) -> io::Error {
    match error.into_kind() {
        csv::ErrorKind::Io(error) => error,
        other => io::Error::other(format!("{other:?}")),
    }
}
