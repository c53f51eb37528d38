//! The command line's grammar (clap derive). Parsing words into values happens here, so a bad
//! word is a usage error (exit 2) before any store is opened.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use strata::recover::retention_file::LifetimeSpec;
use strata::{Aggregate, FieldKind};

/// strata: an embedded, log-structured segment engine for partitioned numeric time series.
#[derive(Debug, Parser)]
#[command(name = "strata", version, propagate_version = true)]
pub struct Cli {
    /// The store's folder (every command but `demo` needs one).
    #[arg(long, global = true, value_name = "DIR")]
    pub store: Option<PathBuf>,

    /// An object store the store is published to, or read from (docs/remote.md):
    /// `s3://BUCKET/PREFIX` (credentials, region and endpoint from the `AWS_*` environment) or
    /// `file:///ABSOLUTE/PATH`. With --store, a command that writes (declare, ingest, seal,
    /// compact, trim, retire, retention) publishes what it made durable there when it is done.
    /// Without --store, query, survey and fold read the bucket as a replica.
    #[arg(long, global = true, value_name = "URL")]
    pub remote: Option<String>,

    /// With --remote and --store: a command that publishes also writes every live segment's
    /// rows as Parquet beside the store's objects, `parquet/STREAM/NAME.parquet`, and commits
    /// them as a version of the stream's Delta table, `parquet/STREAM/` (Spark, Trino, DuckDB's
    /// delta_scan and Polars read_delta read one published state at a time: docs/remote.md,
    /// "The bucket as a table"). Give it to every writing command: one without it leaves
    /// `parquet/` as it is.
    #[arg(long, global = true)]
    pub remote_parquet: bool,

    /// With --remote-parquet: how long, in seconds, a table keeps offering a version a newer
    /// one replaced (its objects are deleted once this has passed, by a later publish).
    /// Default 3600. A reader of an older version needs its objects until it is done.
    #[arg(long, global = true, value_name = "SECONDS")]
    pub remote_table_retention: Option<u64>,

    /// Say on stderr what each read answered at: the stream's watermark and the manifest
    /// position read. Without it a read says so only when a writer recorded more while it ran.
    #[arg(long, short, global = true)]
    pub verbose: bool,

    #[command(subcommand)]
    pub command: Command,
}

/// What to do.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Declare a stream (creating the store if missing); the store records the declaration.
    Declare(DeclareArgs),
    /// Publish rows from CSV (a header naming the fields), sealing every N rows and at the end,
    /// and compacting a little after each seal.
    ///
    /// After each barrier a few compaction steps (as many as a served store takes after each of
    /// its barriers) merge partitions' newest segments, so a long load leaves a few live files
    /// per partition rather than one per barrier; --no-compact leaves them all for a later
    /// `strata compact`. The steps sweep the retention `strata retention` set
    /// (DIR/retention.json).
    ///
    /// SIGINT or SIGTERM (Ctrl-C) stops at the next batch boundary, or after the compaction step
    /// under way: what is staged is sealed,
    /// stderr says the rows sealed, the watermark and the --skip-lines N that resumes the same
    /// input, and the exit code is 3. A second signal exits at once (130 for SIGINT, 143 for
    /// SIGTERM); rows staged since the last seal are then not stored.
    Ingest(IngestArgs),
    /// Print a stream's sealed rows in publish order, as CSV or JSON.
    Query(QueryArgs),
    /// A point-budgeted display read from the level ladder (M4 buckets), as a table, JSON or SVG.
    Survey(SurveyArgs),
    /// One statistic per measured field over an axis range.
    Fold(FoldArgs),
    /// Write a stream's rows (or a survey's buckets) as a Parquet file or an Arrow IPC stream,
    /// for DuckDB, Polars, pandas/pyarrow or Spark: streamed, in bounded memory whatever the row
    /// count (docs/formats.md).
    Export(ExportArgs),
    /// Close a barrier for anything staged (nothing, in a fresh process) and print watermarks.
    Seal,
    /// Merge segments until no partition has more live files than the policy allows, a bounded
    /// step (one durable record) at a time; print live files before and after, bytes written,
    /// steps and time taken.
    ///
    /// First it sweeps the retention `strata retention` set (DIR/retention.json), and the report
    /// ends with what that retired and the floors it recorded.
    ///
    /// SIGINT or SIGTERM (Ctrl-C) stops after the step under way: stderr says what was done and
    /// the exit code is 3; `compact` again carries on. A second signal exits at once (130, 143).
    Compact,
    /// Retire every row of a stream at or below a position (one durable record), and print the
    /// raw floors it recorded. A query or percentile reaching beneath a floor then exits 4.
    Trim(TrimArgs),
    /// Retire whole tracks of a stream (every row and level, one durable record) and print the
    /// floors it recorded. A read of a retired track then exits 4.
    Retire(RetireArgs),
    /// Show or set the retention `strata compact` and `strata ingest` apply (DIR/retention.json):
    /// how long each stream keeps its raw rows and levels.
    ///
    /// Without STREAM, shows every declared stream's. With STREAM and --raw, --levels-from or
    /// --clear, changes that stream's (the store checks the whole setting first; a refused one
    /// leaves the file as it was) and shows it. A LIFETIME is `forever`, `axis:N` (kept while
    /// within N axis units of the stream's newest axis value) or `positions:N` (within N
    /// positions of its last).
    Retention(RetentionArgs),
    /// What the store holds: each stream's declaration, rows, axis range and watermark, each
    /// track's rows, range and levels, and the bytes on disk. Reads only, beside a writer.
    Info(InfoArgs),
    /// Inspect the store without changing it (the same report and exit code as `engine-fsck`).
    Fsck(FsckArgs),
    /// Create ./strata-demo, ingest a synthetic multi-track series, reopen it, and report.
    Demo(DemoArgs),
    /// Serve, read-only, a page that pans and zooms over any track (each view a budgeted
    /// survey) and its JSON API, on loopback by default; beside a writer in another process.
    View(ViewArgs),
    /// Put this store's history in place of the bucket's (--store DIR --remote URL): for a
    /// store the bucket refuses as diverged (repaired, restored from a backup, or a bucket whose
    /// log is damaged). Without --discard-bucket-history it only says what it would do.
    ///
    /// It deletes nothing now: the old history's segments and log/ objects are deleted by a
    /// later writing command once the grace period (10 minutes) has passed, so replicas reading
    /// the old history read on, then follow the new one.
    Adopt(AdoptArgs),
}

/// `info [STREAM] [--track A,B] [--format table|json]`.
#[derive(Debug, Args)]
pub struct InfoArgs {
    /// Only this stream (every stream when absent).
    pub stream: Option<String>,
    /// Only the tracks under this prefix (with STREAM): labels of the track fields, outermost
    /// first, comma-separated (a comma within a label is written `\,`, a backslash `\\`).
    #[arg(long, value_name = "A,B", value_parser = parse_track, requires = "stream")]
    pub track: Option<TrackArg>,
    /// The output format.
    #[arg(long, value_enum, default_value_t = ReadFormat::Table)]
    pub format: ReadFormat,
}

/// `view [--addr IP:PORT]`.
#[derive(Debug, Args)]
pub struct ViewArgs {
    /// Where to listen: loopback by default (port 0 picks a free port, which the URL printed
    /// names).
    #[arg(long, value_name = "IP:PORT", default_value = "127.0.0.1:8080")]
    pub addr: std::net::SocketAddr,
    /// Open the page in the desktop's browser once the server listens (`xdg-open`, or `open`
    /// on macOS); if that fails, say so and serve on.
    #[arg(long)]
    pub open: bool,
}

/// `adopt [--discard-bucket-history]`.
#[derive(Debug, Args)]
pub struct AdoptArgs {
    /// Do it: the bucket's history is replaced by this store's (after the grace period, what
    /// only the old history holds is deleted).
    #[arg(long)]
    pub discard_bucket_history: bool,
}

/// `trim STREAM (--to AXIS|TIME | --to-position P)`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("horizon").required(true).args(["to", "to_position"])))]
pub struct TrimArgs {
    /// The stream to trim.
    pub stream: String,
    /// The horizon as an axis value (an integer, or for a time axis an RFC 3339 time): rows at
    /// positions up to the last one whose rows all lie at or below it are retired (a trim
    /// retires whole positions).
    #[arg(long, value_name = "AXIS|TIME")]
    pub to: Option<String>,
    /// The horizon as a position: rows at or below it are retired (at most the stream's
    /// watermark). Before #48 this was `--to`.
    #[arg(long, value_name = "P")]
    pub to_position: Option<u64>,
}

/// Which rows a read selects (#48): an axis range and a position range, each end optional and
/// inclusive, the same flags in every command. An axis value is an integer, or for a stream
/// whose axis is time (`declare --time UNIT`) an RFC 3339 time too; a time range's ends are
/// rounded inward to the unit.
#[derive(Debug, Args, Clone, Default)]
pub struct RangeArgs {
    /// The lowest axis value to select (inclusive): an integer, or an RFC 3339 time for a time
    /// axis (`2026-12-01T00:00:00Z`).
    #[arg(long, value_name = "AXIS|TIME")]
    pub from: Option<String>,
    /// The highest axis value to select (inclusive): an integer, or an RFC 3339 time.
    #[arg(long, value_name = "AXIS|TIME")]
    pub to: Option<String>,
    /// The lowest position to select (inclusive). Before #48, `query --from` and `export
    /// --from`.
    #[arg(long, value_name = "P")]
    pub from_position: Option<u64>,
    /// The highest position to select (inclusive). Before #48, `query --to` and `export --to`.
    #[arg(long, value_name = "P")]
    pub to_position: Option<u64>,
}

/// `retire STREAM (--track A,B | --all) [--format table|json]`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("which").required(true).args(["track", "all"])))]
pub struct RetireArgs {
    /// The stream whose tracks to retire.
    pub stream: String,
    /// The tracks to retire: a track prefix, labels of the track fields outermost first,
    /// comma-separated (fewer labels than the stream has track fields retire every track
    /// beneath them); a comma within a label is written `\,`, a backslash `\\`.
    #[arg(long, value_name = "A,B", value_parser = parse_track)]
    pub track: Option<TrackArg>,
    /// Retire every track of the stream (instead of --track).
    #[arg(long)]
    pub all: bool,
    /// The output format.
    #[arg(long, value_enum, default_value_t = ReadFormat::Table)]
    pub format: ReadFormat,
}

/// `retention [STREAM [--raw LIFETIME] [--levels-from K=LIFETIME ...] [--clear]]
/// [--format table|json]`.
#[derive(Debug, Args)]
pub struct RetentionArgs {
    /// The stream to show or change; every declared stream's is shown when absent.
    pub stream: Option<String>,
    /// The raw rows' lifetime: forever, axis:N or positions:N.
    #[arg(long, value_name = "LIFETIME", requires = "stream", value_parser = parse_lifetime)]
    pub raw: Option<LifetimeSpec>,
    /// Levels K and up (to the next --levels-from) kept for LIFETIME; repeat for more entries.
    /// Levels beneath every entry are kept forever.
    #[arg(long = "levels-from", value_name = "K=LIFETIME", requires = "stream", value_parser = parse_levels_from)]
    pub levels_from: Vec<(u8, LifetimeSpec)>,
    /// Forget the stream's retention first (keep everything), then apply --raw and
    /// --levels-from if given.
    #[arg(long, requires = "stream")]
    pub clear: bool,
    /// The output format.
    #[arg(long, value_enum, default_value_t = ReadFormat::Table)]
    pub format: ReadFormat,
}

/// `declare STREAM --field NAME:KIND ... [--track F1,F2] [--axis F [--time UNIT]]
/// [--ladder BASE:FANOUT]`.
#[derive(Debug, Args)]
pub struct DeclareArgs {
    /// The stream's id.
    pub stream: String,
    /// A field, in declaration order: NAME:KIND with KIND one of u64 i64 f64 str bytes.
    #[arg(long = "field", value_name = "NAME:KIND", required = true, value_parser = parse_field)]
    pub fields: Vec<(String, FieldKind)>,
    /// The track fields, outermost first (at most four).
    #[arg(long, value_name = "F1,F2", value_delimiter = ',')]
    pub track: Vec<String>,
    /// The one u64 axis field.
    #[arg(long, value_name = "FIELD")]
    pub axis: Option<String>,
    /// The axis is time since the Unix epoch in this unit: s, ms, us (or µs) or ns. It is then
    /// printed as RFC 3339 in UTC, read as RFC 3339 or the integer, and exported as Arrow's
    /// `Timestamp(UNIT, "UTC")`. Recorded with the declaration (a store an earlier build made
    /// is rewritten in manifest format 4, which earlier builds do not open).
    #[arg(long, value_name = "UNIT", requires = "axis", value_parser = parse_time_unit)]
    pub time: Option<strata::TimeUnit>,
    /// The level ladder: level-0 cells BASE axis units wide, each level FANOUT times wider.
    #[arg(long, value_name = "BASE:FANOUT", value_parser = parse_ladder)]
    pub ladder: Option<(u64, u64)>,
}

/// `ingest STREAM [FILE|-]`.
#[derive(Debug, Args)]
pub struct IngestArgs {
    /// The stream to publish into.
    pub stream: String,
    /// The CSV, Parquet or Arrow file; `-` or nothing reads standard input.
    #[arg(value_name = "FILE|-")]
    pub input: Option<PathBuf>,
    /// The input's format; by default what its first bytes say (Parquet's `PAR1`, Arrow's
    /// `ARROW1` or an IPC stream), else CSV (standard input: CSV).
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub format: Option<InputFormat>,
    /// Rows per batch: a bad row refuses its whole batch and nothing of it is stored.
    #[arg(long, value_name = "N", default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    pub batch: u64,
    /// Seal (close a barrier) every N rows, and at the end.
    #[arg(long, value_name = "N", default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub seal_every: u64,
    /// Skip the N lines after the header (a record that begins within them is skipped whole):
    /// how an ingest stopped by Ctrl-C resumes; it prints the N to give.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub skip_lines: u64,
    /// Take no compaction steps: every barrier's file stays live until `strata compact` (the
    /// fastest load; compacting a large backlog afterwards rewrites far more than compacting
    /// as it seals).
    #[arg(long)]
    pub no_compact: bool,
}

/// What `ingest` reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum InputFormat {
    /// CSV with a header naming the fields.
    Csv,
    /// Apache Parquet (a file, not standard input).
    Parquet,
    /// An Arrow IPC file or stream.
    Arrow,
}

/// `query STREAM [--track a,b] [--from A] [--to B] [--from-position P] [--to-position P]
/// [--format csv|json]`.
#[derive(Debug, Args)]
pub struct QueryArgs {
    /// The stream to read.
    pub stream: String,
    /// A track prefix: labels of the track fields, outermost first, comma-separated (a comma
    /// within a label is written `\,`, a backslash `\\`).
    #[arg(long, value_name = "A,B", value_parser = parse_track)]
    pub track: Option<TrackArg>,
    #[command(flatten)]
    pub range: RangeArgs,
    /// The output format.
    #[arg(long, value_enum, default_value_t = Format::Csv)]
    pub format: Format,
}

/// How `query` prints rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// A header `position,<fields...>`, then a line per row; bytes as hex.
    Csv,
    /// One JSON array of objects with `position` and the fields; bytes as arrays.
    Json,
}

/// `export STREAM [--track A,B] [--from A] [--to B] [--from-position P] [--to-position P]
/// [--survey BUDGET] --format parquet|arrow OUT|-`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The stream to export.
    pub stream: String,
    /// A track prefix: labels of the track fields, outermost first, comma-separated (a comma
    /// within a label is written `\,`, a backslash `\\`).
    #[arg(long, value_name = "A,B", value_parser = parse_track)]
    pub track: Option<TrackArg>,
    #[command(flatten)]
    pub range: RangeArgs,
    /// Export a survey's buckets at this point budget (a row per bucket: the field, the four
    /// placed points, count, sum and sum_sq) instead of the rows.
    #[arg(long, value_name = "BUDGET")]
    pub survey: Option<u64>,
    /// The file format: `csv`, `parquet`, or `arrow` (an Arrow IPC stream).
    #[arg(long, value_enum)]
    pub format: ExportFormat,
    /// Rows per Parquet row group (the unit a reader skips or reads in parallel).
    #[arg(long, value_name = "N", default_value_t = 1 << 20, value_parser = clap::value_parser!(u64).range(1..))]
    pub row_group_rows: u64,
    /// Parquet's page compression.
    #[arg(long, value_enum, default_value_t = ExportCompression::Zstd)]
    pub compression: ExportCompression,
    /// The file to write (written as OUT.partial, renamed once whole); `-` writes to standard
    /// output.
    #[arg(value_name = "OUT|-")]
    pub output: PathBuf,
}

/// The format `export` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    /// CSV, as `query` prints it (what `ingest`, DuckDB and pandas read); rows only. Built
    /// whatever the features.
    Csv,
    /// Apache Parquet.
    Parquet,
    /// An Arrow IPC stream (`pyarrow.ipc.open_stream`).
    Arrow,
}

/// Parquet's page compression.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ExportCompression {
    /// zstd at its default level.
    Zstd,
    /// None.
    None,
}

/// Which rows a levelled read covers: a stream, a track prefix and an axis range.
#[derive(Debug, Args)]
pub struct AxisRangeArgs {
    /// The stream to read (it must declare an axis).
    pub stream: String,
    /// A track prefix: labels of the track fields, outermost first, comma-separated (a comma
    /// within a label is written `\,`, a backslash `\\`).
    #[arg(long, value_name = "A,B", value_parser = parse_track)]
    pub track: Option<TrackArg>,
    /// The axis range (the recorded lowest and highest where absent); a levelled read is over
    /// the axis, so a position range is refused, naming the axis flags.
    #[command(flatten)]
    pub range: RangeArgs,
}

/// `survey STREAM [--track A,B] [--from A] [--to B] --budget N [--fill finest|spend]
/// [--format table|json] [--svg FILE]`.
#[derive(Debug, Args)]
pub struct SurveyArgs {
    #[command(flatten)]
    pub range: AxisRangeArgs,
    /// The most points to answer with, over all measured fields (4 points a bucket).
    #[arg(long, value_name = "N", required = true)]
    pub budget: u64,
    /// Which plan answers: `finest`, the finest level whose cells fit the budget (the
    /// contract's rule), or `spend`, groups of a finer level's cells that answer with most of
    /// the buckets the budget buys (docs/levels.md).
    #[arg(long, value_enum, default_value_t = FillArg::Finest)]
    pub fill: FillArg,
    /// The output format.
    #[arg(long, value_enum, default_value_t = ReadFormat::Table)]
    pub format: ReadFormat,
    /// Also draw the survey as an SVG picture into FILE (one panel per measured field).
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
}

/// `fold STREAM [--track A,B] [--from A] [--to B] --agg NAME [--format table|json]`.
#[derive(Debug, Args)]
pub struct FoldArgs {
    #[command(flatten)]
    pub range: AxisRangeArgs,
    /// The statistic: min max mean sum count, or a nearest-rank percentile p0..p100.
    #[arg(long, value_name = "NAME", required = true, value_parser = parse_aggregate)]
    pub agg: Aggregate,
    /// The output format.
    #[arg(long, value_enum, default_value_t = ReadFormat::Table)]
    pub format: ReadFormat,
}

/// `survey --fill`: `Config::survey_fill`, spelt as `SurveyFill::name` spells it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FillArg {
    /// The finest level whose cells over the span fit the budget.
    Finest,
    /// Zero-anchored groups of a finer level's cells: most of the budget's buckets.
    Spend,
}

impl FillArg {
    /// The engine's choice of the same name.
    pub fn fill(self) -> strata::SurveyFill {
        match self {
            FillArg::Finest => strata::SurveyFill::FinestLevel,
            FillArg::Spend => strata::SurveyFill::Spend,
        }
    }
}

/// How `survey` and `fold` print their answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ReadFormat {
    /// For people: a header line and a table per field (`fold`: `field: value` lines).
    Table,
    /// The answer as one JSON document.
    Json,
}

/// `fsck [--verify] [--json]`.
#[derive(Debug, Args)]
pub struct FsckArgs {
    /// Read every recorded file whole and check every digest.
    #[arg(long)]
    pub verify: bool,
    /// Print one JSON document instead of the report for people.
    #[arg(long)]
    pub json: bool,
}

/// `demo` takes no arguments; the hidden ones shrink it for tests.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Rows to ingest (rounded down to whole ticks of every track).
    #[arg(long, hide = true, default_value_t = 3_200_000)]
    pub rows: u64,
    /// Seal every N rows.
    #[arg(long, hide = true, default_value_t = 250_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub seal_every: u64,
}

/// A `--track` value: the labels it names, outermost first (none: every track).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TrackArg(pub Vec<String>);

impl TrackArg {
    /// The labels, as the engine's reads take them.
    pub fn labels(&self) -> Vec<&str> {
        self.0.iter().map(String::as_str).collect()
    }
}

/// `--track` text split into labels at each comma no backslash escapes (`strata::index::
/// selection`); a backslash before anything but a comma or a backslash is refused, naming it.
pub fn parse_track(word: &str) -> Result<TrackArg, String> {
    strata::index::parse_selection(word)
        .map(TrackArg)
        .map_err(|e| e.to_string())
}

fn parse_field(word: &str) -> Result<(String, FieldKind), String> {
    let (name, kind) = word
        .rsplit_once(':')
        .ok_or_else(|| format!("{word:?} is not NAME:KIND (e.g. value:f64)"))?;
    if name.is_empty() {
        return Err(format!("{word:?} has an empty field name"));
    }
    let kind = strata::parse_kind(kind)
        .ok_or_else(|| format!("unknown kind {kind:?} (one of u64 i64 f64 str bytes)"))?;
    Ok((name.to_owned(), kind))
}

/// The one spelling of each aggregate; anything else (`median`, `P50`, `p101`) is refused naming
/// the word and listing the vocabulary.
pub fn parse_aggregate(word: &str) -> Result<Aggregate, String> {
    Aggregate::parse(word).ok_or_else(|| {
        format!(
            "unknown aggregate {word:?}: one of min max mean sum count p0..p100 \
             (nearest-rank percentiles; the median is p50)"
        )
    })
}

fn parse_time_unit(word: &str) -> Result<strata::TimeUnit, String> {
    strata::TimeUnit::parse(word)
        .ok_or_else(|| format!("unknown time unit {word:?} (one of s ms us ns)"))
}

fn parse_lifetime(word: &str) -> Result<LifetimeSpec, String> {
    LifetimeSpec::parse(word)
}

fn parse_levels_from(word: &str) -> Result<(u8, LifetimeSpec), String> {
    let (level, lifetime) = word.split_once('=').ok_or_else(|| {
        format!("{word:?} is not K=LIFETIME (e.g. 2=axis:86400, a level and a lifetime)")
    })?;
    let level = level
        .parse()
        .map_err(|_| format!("{word:?}: level {level:?} is not a level number (0 to 255)"))?;
    Ok((level, LifetimeSpec::parse(lifetime)?))
}

fn parse_ladder(word: &str) -> Result<(u64, u64), String> {
    let bad = || format!("{word:?} is not BASE:FANOUT (two positive integers, e.g. 64:8)");
    let (base, fanout) = word.split_once(':').ok_or_else(bad)?;
    let base = base.parse().map_err(|_| bad())?;
    let fanout = fanout.parse().map_err(|_| bad())?;
    Ok((base, fanout))
}
