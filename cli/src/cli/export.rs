//! `strata --store DIR export STREAM [--track A,B] [--from P] [--to P] [--survey BUDGET]
//! --format parquet|arrow OUT|-`: a stream's rows (or, with `--survey`, a survey's buckets) as a
//! Parquet file or an Arrow IPC stream, for DuckDB, Polars, pandas/pyarrow, Spark.
//!
//! Rows are streamed: the engine hands out Arrow batches of at most `Config::arrow_batch_rows`
//! rows (`Store::query_arrow`), each written as it is built, so memory holds a batch and the
//! Parquet row group being encoded, whatever the row count. The schema is the query's:
//! `position`, then the declared fields in order (docs/formats.md). A file is written under
//! `OUT.partial` and renamed to `OUT` once whole, so a failed export never leaves a file that
//! looks finished.
//!
//! A Parquet file carries, beside the Arrow schema, the stream (`strata:stream`), its declaration
//! in words (`strata:declaration`), and a crc32c of every byte before its page indexes and
//! footer (`strata:data_crc32c`, `strata:data_bytes`): `strata ingest` checks it, so a flipped
//! byte in a strata export is refused (Parquet's own page checksums are optional, and arrow-rs
//! does not write them).

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use strata::arrow_array::RecordBatch;
use strata::arrow_schema::Schema;
use strata::{ARROW_DECLARATION_KEY, ARROW_STREAM_KEY, Config, EngineError, describe};

use super::args::{ExportArgs, ExportCompression, ExportFormat};
use super::range::{Selected, axis_only, note_missed};
use super::{
    Failure, count, declared, grouped, open_to_read, quiet_pipe, selection, tell_watermark,
};
use strata::Timestamper;

/// The Parquet key-value metadata key holding the crc32c of the bytes before the page indexes
/// and footer (hex), and the key holding how many bytes that covers.
pub const DATA_CRC_KEY: &str = "strata:data_crc32c";
pub const DATA_BYTES_KEY: &str = "strata:data_bytes";

/// Segment readers an export keeps cached beyond the one each partition's cursor holds (as a
/// query: each file is read once, in order).
const EXPORT_OPEN_SEGMENTS_MAX: usize = 1;

pub fn run(source: &super::Source, args: &ExportArgs) -> Result<ExitCode, Failure> {
    let to_stdout = args.output == Path::new("-");
    let config = Config::default().open_segments_max(EXPORT_OPEN_SEGMENTS_MAX);
    let store = open_to_read(source, config)?;
    let decl = declared(&store, &args.stream)?;
    let selection = selection(args.track.as_ref());
    // A survey's buckets are over the axis: a position range is refused for it.
    let selected = match args.survey {
        Some(_) => Selected {
            axis: axis_only(&args.range, decl, "export --survey")?,
            positions: (std::ops::Bound::Unbounded, std::ops::Bound::Unbounded),
        },
        None => Selected::of(&args.range, decl)?,
    };
    let mut sink = Sink::create(&args.output, to_stdout, args)?;
    let written = if let Some(budget) = args.survey {
        {
            let batch = store.survey_arrow(&args.stream, &selection, selected.axis, budget)?;
            let schema = with_declaration(&batch.schema(), decl);
            let batch = batch
                .with_schema(Arc::clone(&schema))
                .map_err(|e| Failure::new(format!("cannot label the survey's batch: {e}")))?;
            let (schema, batch) = match Timestamper::new(&schema, decl, true) {
                Some(times) => {
                    let batch = times.apply(&batch).map_err(Failure::new)?;
                    (Arc::clone(times.schema()), batch)
                }
                None => (schema, batch),
            };
            sink.start(&schema, decl)?;
            sink.write(&batch).map(|()| batch.num_rows() as u64)
        }
    } else {
        {
            let batches = store.query_arrow_within(
                &args.stream,
                &selection,
                selected.positions,
                selected.axis,
            )?;
            let times = Timestamper::new(&batches.schema(), decl, false);
            let schema = times
                .as_ref()
                .map_or_else(|| batches.schema(), |t| Arc::clone(t.schema()));
            sink.start(&schema, decl)?;
            write_rows(&mut sink, batches, times.as_ref())
        }
    };
    let n_rows = match written.and_then(|n_rows| sink.finish(&args.output).map(|()| n_rows)) {
        Ok(n_rows) => n_rows,
        Err(stop) => {
            sink.abandon();
            return match stop {
                // A reader that closed the pipe wanted no more: not a failure.
                Stop::Write(error) if to_stdout => {
                    quiet_pipe(Err(error)).map(|()| ExitCode::SUCCESS)
                }
                Stop::Write(error) => Err(Failure::new(format!(
                    "cannot write {}: {error}",
                    args.output.display()
                ))),
                Stop::Read(error) => Err(Failure::from(error)),
            };
        }
    };
    if n_rows == 0 {
        note_missed(&store, decl, &selection, &selected);
    }
    let what = if args.survey.is_some() {
        count(n_rows, "bucket", "buckets")
    } else {
        count(n_rows, "row", "rows")
    };
    let into = if to_stdout {
        "standard output".to_owned()
    } else {
        args.output.display().to_string()
    };
    eprintln!(
        "strata: exported {} of {} as {} into {into}",
        what.replacen(&n_rows.to_string(), &grouped(n_rows), 1),
        args.stream,
        match args.format {
            ExportFormat::Parquet => "Parquet",
            ExportFormat::Arrow => "an Arrow IPC stream",
            ExportFormat::Csv => unreachable!("CSV is exported by query::export_csv"),
        }
    );
    tell_watermark(&store, &args.stream);
    Ok(ExitCode::SUCCESS)
}

/// Writes every batch of `batches` into `sink` (a time axis as timestamps, with `times`), and
/// answers the rows written.
fn write_rows(
    sink: &mut Sink,
    batches: impl Iterator<Item = Result<RecordBatch, EngineError>>,
    times: Option<&Timestamper>,
) -> Result<u64, Stop> {
    let mut n_rows = 0u64;
    for batch in batches {
        let batch = batch.map_err(Stop::Read)?;
        let batch = match times {
            Some(times) => times
                .apply(&batch)
                .map_err(|reason| Stop::Write(io::Error::other(reason)))?,
            None => batch,
        };
        n_rows += batch.num_rows() as u64;
        sink.write(&batch)?;
    }
    Ok(n_rows)
}

/// The schema with the stream and its declaration in its metadata (a survey's batch carries
/// only its level and group).
fn with_declaration(schema: &Schema, decl: &strata::StreamDecl) -> Arc<Schema> {
    let mut metadata = schema.metadata().clone();
    metadata.insert(ARROW_STREAM_KEY.to_owned(), decl.id.clone());
    metadata.insert(ARROW_DECLARATION_KEY.to_owned(), describe(decl));
    Arc::new(schema.clone().with_metadata(metadata))
}

/// Why an export stopped short.
enum Stop {
    Write(io::Error),
    /// The read failed part-way.
    Read(EngineError),
}

fn write_error(error: impl std::fmt::Display) -> Stop {
    Stop::Write(io::Error::other(error.to_string()))
}

/// A `Write` that keeps the crc32c and count of every byte through it.
#[derive(Debug)]
pub struct Checksummed<W> {
    inner: W,
    crc: u32,
    bytes: u64,
}

impl<W: Write> Write for Checksummed<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.crc = crc32c::crc32c_append(self.crc, &buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// The file being written, or standard output.
enum Target {
    File(File),
    Stdout(io::Stdout),
}

impl Write for Target {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Target::File(f) => f.write(buf),
            Target::Stdout(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Target::File(f) => f.flush(),
            Target::Stdout(s) => s.flush(),
        }
    }
}

type Out = BufWriter<Target>;

/// Where the batches go.
enum Sink {
    /// Not started: the output is open, the writer not yet made (it needs the schema).
    Opened {
        out: Out,
        partial: Option<PathBuf>,
        format: ExportFormat,
        properties: Box<WriterProperties>,
    },
    Parquet {
        writer: Box<ArrowWriter<Checksummed<Out>>>,
        partial: Option<PathBuf>,
    },
    Arrow {
        writer: Box<strata_ipc::StreamWriter<Out>>,
        partial: Option<PathBuf>,
    },
    Done,
}

/// arrow-ipc, named apart from the engine's re-exports.
mod strata_ipc {
    pub use arrow_ipc::writer::StreamWriter;
}

impl Sink {
    fn create(output: &Path, to_stdout: bool, args: &ExportArgs) -> Result<Sink, Failure> {
        let (out, partial) = if to_stdout {
            (Target::Stdout(io::stdout()), None)
        } else {
            if output.is_dir() {
                return Err(Failure::new(format!(
                    "{} is a folder: export writes one file (or - for standard output)",
                    output.display()
                )));
            }
            if let Some(file) = super::query::special_output(output)? {
                // Written in place: no partial file, nothing renamed over it.
                (Target::File(file), None)
            } else {
                let mut partial = output.as_os_str().to_owned();
                partial.push(".partial");
                let partial = PathBuf::from(partial);
                let file = File::create(&partial).map_err(|e| {
                    Failure::new(format!("cannot create {}: {e}", partial.display()))
                })?;
                (Target::File(file), Some(partial))
            }
        };
        let compression = match args.compression {
            ExportCompression::Zstd => Compression::ZSTD(ZstdLevel::default()),
            ExportCompression::None => Compression::UNCOMPRESSED,
        };
        let row_group_rows = usize::try_from(args.row_group_rows).unwrap_or(usize::MAX);
        let properties = WriterProperties::builder()
            .set_compression(compression)
            .set_max_row_group_row_count(Some(row_group_rows))
            .build();
        Ok(Sink::Opened {
            out: BufWriter::with_capacity(1 << 20, out),
            partial,
            format: args.format,
            properties: Box::new(properties),
        })
    }

    /// Makes the writer for `schema`, with the stream's declaration in the file's metadata.
    fn start(&mut self, schema: &Arc<Schema>, decl: &strata::StreamDecl) -> Result<(), Failure> {
        let Sink::Opened {
            out,
            partial,
            format,
            properties,
        } = std::mem::replace(self, Sink::Done)
        else {
            unreachable!("an export starts once")
        };
        let failed =
            |e: &dyn std::fmt::Display| Failure::new(format!("cannot start the export: {e}"));
        *self = match format {
            ExportFormat::Parquet => {
                let mut properties = *properties;
                let metadata = vec![
                    KeyValue::new(ARROW_STREAM_KEY.to_owned(), decl.id.clone()),
                    KeyValue::new(ARROW_DECLARATION_KEY.to_owned(), describe(decl)),
                ];
                properties = properties
                    .into_builder()
                    .set_key_value_metadata(Some(metadata))
                    .build();
                let crc = Checksummed {
                    inner: out,
                    crc: 0,
                    bytes: 0,
                };
                let writer = ArrowWriter::try_new(crc, Arc::clone(schema), Some(properties))
                    .map_err(|e| failed(&e))?;
                Sink::Parquet {
                    writer: Box::new(writer),
                    partial,
                }
            }
            ExportFormat::Csv => unreachable!("CSV is exported by query::export_csv"),
            ExportFormat::Arrow => {
                let writer =
                    strata_ipc::StreamWriter::try_new(out, schema).map_err(|e| failed(&e))?;
                Sink::Arrow {
                    writer: Box::new(writer),
                    partial,
                }
            }
        };
        Ok(())
    }

    fn write(&mut self, batch: &RecordBatch) -> Result<(), Stop> {
        match self {
            Sink::Parquet { writer, .. } => writer.write(batch).map_err(parquet_io),
            Sink::Arrow { writer, .. } => writer.write(batch).map_err(arrow_io),
            Sink::Opened { .. } | Sink::Done => unreachable!("batches are written once started"),
        }
    }

    /// Ends the file (footer, end of stream), flushes it, syncs it and renames it into place.
    fn finish(&mut self, output: &Path) -> Result<(), Stop> {
        let (out, partial) = match std::mem::replace(self, Sink::Done) {
            Sink::Parquet {
                mut writer,
                partial,
            } => {
                // Every row group's pages reach the file (and the crc) before the footer: the
                // crc covers what the footer describes, and is recorded in it.
                writer.flush().map_err(parquet_io)?;
                writer.sync().map_err(Stop::Write)?;
                let (crc, bytes) = (writer.inner().crc, writer.inner().bytes);
                writer.append_key_value_metadata(KeyValue::new(
                    DATA_CRC_KEY.to_owned(),
                    format!("{crc:08x}"),
                ));
                writer.append_key_value_metadata(KeyValue::new(
                    DATA_BYTES_KEY.to_owned(),
                    bytes.to_string(),
                ));
                // Writes the footer, and hands back the file.
                (writer.into_inner().map_err(parquet_io)?.inner, partial)
            }
            Sink::Arrow {
                mut writer,
                partial,
            } => {
                writer.finish().map_err(arrow_io)?;
                (writer.into_inner().map_err(arrow_io)?, partial)
            }
            Sink::Opened { out, partial, .. } => (out, partial),
            Sink::Done => return Ok(()),
        };
        let target = out.into_inner().map_err(|e| Stop::Write(e.into_error()))?;
        if let (Target::File(file), Some(partial)) = (target, partial) {
            file.sync_all().map_err(Stop::Write)?;
            drop(file);
            fs::rename(&partial, output).map_err(Stop::Write)?;
            // The rename is durable once the folder is synced.
            let parent = output
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            if let Ok(dir) = File::open(parent) {
                dir.sync_all().map_err(Stop::Write)?;
            }
        }
        Ok(())
    }

    /// Removes a partial file after a failure (a pipe has nothing to remove).
    fn abandon(&mut self) {
        let partial = match std::mem::replace(self, Sink::Done) {
            Sink::Opened { partial, .. }
            | Sink::Parquet { partial, .. }
            | Sink::Arrow { partial, .. } => partial,
            Sink::Done => None,
        };
        if let Some(partial) = partial {
            let _ = fs::remove_file(partial);
        }
    }
}

fn parquet_io(error: parquet::errors::ParquetError) -> Stop {
    match error {
        parquet::errors::ParquetError::External(e) => match e.downcast::<io::Error>() {
            Ok(e) => Stop::Write(*e),
            Err(e) => write_error(e),
        },
        other => write_error(other),
    }
}

fn arrow_io(error: strata::arrow_schema::ArrowError) -> Stop {
    match error {
        strata::arrow_schema::ArrowError::IoError(_, e) => Stop::Write(e),
        other => write_error(other),
    }
}
