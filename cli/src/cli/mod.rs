//! The `strata` command line: one module per command, sharing here how a store is opened, how a
//! failure is reported, and how output reaches stdout.
//!
//! Every failure is one line on stderr and exit code 1; clap's usage errors exit 2; `fsck` exits
//! with `engine-fsck`'s codes (0 clean, 1 findings, 2 unusable); an `ingest` that SIGINT or
//! SIGTERM stopped at a batch boundary (or between the compaction steps it takes after a seal)
//! exits 3 after sealing, a `compact` they stopped between steps exits 3, and a second signal ends
//! either at once with 128 + the signal (130, 143). A read refused because its range reaches
//! beneath a floor (`strata trim`, `strata retire`, retention swept by `strata compact`) exits 4,
//! its message carrying the floor. A `--track` that no sealed partition lies beneath is a
//! failure (exit 1), as an unknown stream is. A command whose work is durable but whose summary
//! could not be written to stdout exits 5 (and with --remote still publishes).

pub mod args;
mod batch;
#[cfg(feature = "parquet")]
mod columnar;
mod compact;
mod declare;
mod demo;
#[cfg(feature = "parquet")]
mod export;
mod features;
mod fold;
mod fsck;
mod info;
mod ingest;
mod interrupt;
mod json;
mod magic;
mod parse;
mod progress;
mod query;
mod range;
#[cfg(feature = "remote")]
mod remote;
/// A build without the object-storage tier: every `--remote` refused, naming the feature.
#[cfg(not(feature = "remote"))]
#[path = "remote_absent.rs"]
mod remote;
mod retention;
mod retire;
mod seal;
mod survey;
mod svg;
mod time;
mod time_ticks;
mod trim;
mod units;
#[cfg(feature = "view")]
mod view;

use std::fmt::{self, Write as _};
use std::io::{self, Write as _};
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use clap::CommandFactory as _;
use strata::index::selection_word;
use strata::{Config, EngineError, Num, Reader, Store, StreamDecl, View};

use args::{AxisRangeArgs, Cli, Command, TrackArg};

/// The exit code of a read refused because its range reaches beneath a floor.
pub const EXIT_FLOOR: u8 = 4;

/// The exit code of a command whose work is done and durable but whose summary could not be
/// written to stdout (a full disk, a closed terminal): not 1, which would say the work failed.
pub const EXIT_UNREPORTED: u8 = 5;

/// Why a command failed, in one line for stderr. The process exits 1, or `EXIT_FLOOR` for a
/// read refused by a floor.
#[derive(Debug)]
pub struct Failure(String, u8);

impl Failure {
    /// A failure saying `message`.
    pub fn new(message: impl Into<String>) -> Failure {
        Failure(message.into(), 1)
    }

    /// The exit code the process ends with.
    pub fn code(&self) -> u8 {
        self.1
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<EngineError> for Failure {
    /// The engine's refusal, in its own words (every face says one mistake alike), with the
    /// exit code of its kind: a floor's 4, a range given backwards a bad command line's 2. A
    /// selection of several labels, more than the stream's track fields (one or more), most
    /// likely meant a comma within a label, which the command line's text spells `\,`: that
    /// much is added. Not for a stream without track fields, where no label is a selection.
    fn from(error: EngineError) -> Failure {
        let code = match error {
            EngineError::Floor { .. } => EXIT_FLOOR,
            EngineError::InvertedRange { .. } => 2,
            _ => 1,
        };
        let mut message = error.to_string();
        if let EngineError::TrackDepth {
            selection, fields, ..
        } = &error
            && selection.len() > 1
            && !fields.is_empty()
        {
            let joined = selection.join(",");
            let _ = write!(
                message,
                "; a comma within a label is written `\\,`: --track {} names the one label \
                 {joined:?}",
                selection_word(&[joined.as_str()])
            );
        }
        Failure(message, code)
    }
}

/// Runs the command `cli` names.
pub fn run(cli: Cli) -> Result<ExitCode, Failure> {
    VERBOSE.store(cli.verbose, Ordering::Relaxed);
    refuse_unbuilt(&cli)?;
    let (store, url) = (cli.store, cli.remote);
    if cli.remote_parquet {
        if url.is_none() || store.is_none() {
            usage_error(
                "--remote-parquet writes Parquet beside a store's objects in a bucket: it needs \
                 --store DIR and --remote URL",
            );
        }
        remote::write_parquet(cli.remote_table_retention);
    } else if cli.remote_table_retention.is_some() {
        usage_error(
            "--remote-table-retention is the retention of --remote-parquet's tables: give both",
        );
    }
    // A command that writes, with --remote: publish what it made durable once it is done,
    // also when only its summary could not be written (the work is durable all the same).
    let written = |dir: PathBuf, code: Result<ExitCode, Failure>| match (&url, code) {
        (Some(url), Err(unreported)) if unreported.code() == EXIT_UNREPORTED => {
            match remote::publish_after(&dir, url, ExitCode::from(EXIT_UNREPORTED)) {
                Ok(_) => Err(unreported),
                Err(failure) => Err(Failure::new(format!("{unreported}; then {failure}"))),
            }
        }
        (Some(url), code) => remote::publish_after(&dir, url, code?),
        (None, code) => code,
    };
    match cli.command {
        Command::Declare(args) => {
            let dir = store_dir(store, "declare");
            written(dir.clone(), declare::run(&dir, &args))
        }
        Command::Ingest(args) => {
            let dir = store_dir(store, "ingest");
            written(dir.clone(), ingest::run(&dir, &args, url.as_deref()))
        }
        Command::Query(args) => query::run(&source(store, url, "query"), &args),
        Command::Survey(args) => survey::run(&source(store, url, "survey"), &args),
        Command::Fold(args) => fold::run(&source(store, url, "fold"), &args),
        Command::Export(args) => export(&source(store, url, "export"), &args),
        Command::Seal => {
            let dir = store_dir(store, "seal");
            written(dir.clone(), seal::run(&dir))
        }
        Command::Compact => {
            let dir = store_dir(store, "compact");
            written(dir.clone(), compact::run(&dir))
        }
        Command::Trim(args) => {
            let dir = store_dir(store, "trim");
            written(dir.clone(), trim::run(&dir, &args))
        }
        Command::Retire(args) => {
            let dir = store_dir(store, "retire");
            written(dir.clone(), retire::run(&dir, &args))
        }
        Command::Retention(args) => {
            let dir = store_dir(store, "retention");
            written(dir.clone(), retention::run(&dir, &args))
        }
        Command::Info(args) => info::run(&source(store, url, "info"), &args),
        Command::Fsck(args) => {
            if url.is_some() {
                usage_error("`strata fsck` inspects a local store; --remote does not apply");
            }
            fsck::run(&store_dir(store, "fsck"), &args)
        }
        Command::Adopt(args) => {
            let dir = store_dir(store, "adopt");
            let url = url.unwrap_or_else(|| {
                usage_error("`strata adopt` needs --remote URL (the bucket to adopt)")
            });
            remote::adopt(&dir, &url, &args)
        }
        Command::View(args) => {
            if url.is_some() {
                usage_error("`strata view` serves a local store: --remote does not apply");
            }
            view(&store_dir(store, "view"), &args)
        }
        Command::Demo(args) => {
            if store.is_some() || url.is_some() {
                usage_error(
                    "`strata demo` makes its own store in ./strata-demo; --store and --remote do \
                     not apply",
                );
            }
            demo::run(&args)
        }
    }
}

/// Refuses, before any command runs, a flag this build left out, so that nothing is written
/// that could not then be published.
fn refuse_unbuilt(cli: &Cli) -> Result<(), Failure> {
    #[cfg(not(feature = "remote"))]
    if cli.remote.is_some() {
        return Err(remote::absent());
    }
    if cli.remote_parquet && !cfg!(feature = "remote-parquet") {
        return Err(features::not_built(
            "--remote-parquet (Parquet beside the segments in a bucket)",
            "remote-parquet",
        ));
    }
    Ok(())
}

/// `strata export`: CSV in every build, Parquet and Arrow in a build with the columnar formats.
fn export(source: &Source, args: &args::ExportArgs) -> Result<ExitCode, Failure> {
    if args.format == args::ExportFormat::Csv {
        if args.survey.is_some() {
            usage_error(
                "`strata export --survey` writes a survey's buckets as Parquet or Arrow \
                 (--format parquet|arrow); CSV exports rows",
            );
        }
        return query::export_csv(source, args);
    }
    #[cfg(feature = "parquet")]
    return export::run(source, args);
    #[cfg(not(feature = "parquet"))]
    Err(features::not_built(
        "`strata export --format parquet|arrow`",
        "parquet",
    ))
}

/// `strata view`, in a build with it.
#[cfg(feature = "view")]
fn view(dir: &Path, args: &args::ViewArgs) -> Result<ExitCode, Failure> {
    view::run(dir, args)
}

/// `strata view`, refused in a build without it.
#[cfg(not(feature = "view"))]
fn view(_dir: &Path, _args: &args::ViewArgs) -> Result<ExitCode, Failure> {
    Err(features::not_built("`strata view`", "view"))
}

/// Where a read command reads: a local store's folder, or a bucket read as a replica.
#[derive(Debug)]
pub enum Source {
    /// `--store DIR`.
    Dir(PathBuf),
    /// `--remote URL` (without --store).
    Remote(
        #[cfg_attr(
            not(feature = "remote"),
            expect(dead_code, reason = "a build without the tier refuses --remote first")
        )]
        String,
    ),
}

/// The read's source: --store or --remote, exactly one, or a usage error (exit 2).
fn source(store: Option<PathBuf>, url: Option<String>, command: &str) -> Source {
    match (store, url) {
        (Some(dir), None) => Source::Dir(dir),
        (None, Some(url)) => Source::Remote(url),
        (Some(_), Some(_)) => usage_error(&format!(
            "`strata {command}` reads one store: --store DIR (the local folder) or --remote URL \
             (the bucket, as a replica), not both"
        )),
        (None, None) => usage_error(&format!(
            "`strata {command}` needs --store DIR (or --remote URL to read a bucket)"
        )),
    }
}

/// The `--store` folder, or a usage error (exit 2) naming the command that needs it.
fn store_dir(store: Option<PathBuf>, command: &str) -> PathBuf {
    store.unwrap_or_else(|| usage_error(&format!("`strata {command}` needs --store DIR")))
}

/// Ends the process the way clap ends it for a bad command line: the message, usage, exit 2.
fn usage_error(message: &str) -> ! {
    Cli::command()
        .error(clap::error::ErrorKind::MissingRequiredArgument, message)
        .exit()
}

/// `1 row`, `2 rows`: a count with its noun in the number it takes; `n` is grouped in threes.
fn count(n: u64, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{} {many}", grouped(n))
    }
}

/// The declaration of `stream`, or the engine's refusal naming the streams the store declares:
/// every command that takes a stream refuses an unknown one in these words.
fn declared<'a>(store: &'a View, stream: &str) -> Result<&'a StreamDecl, Failure> {
    Ok(store.declaration(stream)?)
}

/// Whether `--verbose` was given: every read then says on stderr what it answered at.
static VERBOSE: AtomicBool = AtomicBool::new(false);

/// Says on stderr what an answer of `stream` is at (its watermark and the manifest position
/// read) where that informs: with `--verbose`, or when a writer in another process recorded
/// more while the read ran, so the answer is at an older state than the store's now. A read
/// that answers the store as it is says nothing, as sqlite3 and duckdb say nothing on success.
fn tell_watermark(store: &Reader, stream: &str) {
    let verbose = VERBOSE.load(Ordering::Relaxed);
    let behind = store.behind();
    if !verbose && !behind {
        return;
    }
    let watermark = match store.watermark(stream, &[]) {
        Ok(Some(position)) => format!("watermark {position}"),
        Ok(None) | Err(_) => "no watermark (nothing durable)".to_owned(),
    };
    let since = if behind {
        "; a writer has recorded more since the read began, and the next read answers it"
    } else {
        ""
    };
    eprintln!(
        "strata: answered at stream {stream:?}'s {watermark} ({}){since}",
        store.manifest_position()
    );
}

/// The engine's refusal of an unknown stream, for a command that knows the declared streams
/// without opening the store (`retention` reads its file).
fn unknown_stream<'a>(stream: &str, declared: impl Iterator<Item = &'a str>) -> Failure {
    EngineError::UnknownStream {
        stream: stream.to_owned(),
        declared: declared.map(str::to_owned).collect(),
    }
    .into()
}

/// The track prefix `--track` names (every track when absent or empty).
fn selection(track: Option<&TrackArg>) -> Vec<&str> {
    track.map(TrackArg::labels).unwrap_or_default()
}

/// `capture r0,p1`, or `capture (root)` for a stream without track fields: a partition named
/// in a report, its track spelt as it is typed after `--track`.
fn partition_name<S: AsRef<str>>(stream: &str, labels: &[S]) -> String {
    if labels.is_empty() {
        format!("{stream} (root)")
    } else {
        format!("{stream} {}", selection_word(labels))
    }
}

/// The axis bounds `--from`/`--to` name, both inclusive, read against `decl` (a time for a
/// time axis); a position range is refused (`range::axis_only`). An absent end stays unbounded,
/// so the engine clamps it to the selection's recorded axis range (an explicit `0..=u64::MAX`
/// would plan over the whole u64 axis instead). `--from` above `--to` the engine refuses
/// (exit 2).
fn axis_bounds(
    range: &AxisRangeArgs,
    decl: &StreamDecl,
    command: &str,
) -> Result<(Bound<u64>, Bound<u64>), Failure> {
    range::axis_only(&range.range, decl, command)
}

/// Opens the store in `dir` with the streams it recorded; a missing store is an error, never
/// created here (only `declare` creates a store).
fn open_existing(dir: &Path) -> Result<Store, Failure> {
    open_existing_with(dir, Config::default())
}

/// Opens the store `source` names for reading only, with `config`. A folder is opened as a
/// reader (`Store::open_reader`): it takes no lock, so a writer in another process (`strata
/// ingest`, an application) goes on beside it and is never kept out, and it heals nothing;
/// its only write is its pin in `readers/`. A folder where that pin cannot be written (a
/// read-only mount) or without a `LOCK` (a copy, a backup) is opened with
/// `Store::open_read_only`, which writes nothing at all and leaves it byte-identical (no writer
/// runs there). A missing store is an error naming the folder, never created. A bucket is booted
/// as a replica (`strata::remote::Replica`), which never writes to it. Every answer then says
/// the watermark it is at (`tell_watermark`).
fn open_to_read(source: &Source, config: Config) -> Result<Opened, Failure> {
    match source {
        Source::Dir(dir) => Ok(Opened::Local(Box::new(open_dir_to_read(
            dir, config, true,
        )?))),
        #[cfg(feature = "remote")]
        Source::Remote(url) => Ok(Opened::Remote(Box::new(remote::open_replica(url, config)?))),
        #[cfg(not(feature = "remote"))]
        Source::Remote(_) => Err(remote::absent()),
    }
}

/// The folder `dir` opened to read, as [`open_to_read`] opens it: a reader beside a writer, or
/// read-only where no writer can run (no `LOCK`, or no pin can be written). Any other reason a
/// reader is refused (as many readers open as the store allows, a `readers` that is not a
/// folder) refuses the open, naming it: a read-only open would hold the store's lock, and a
/// writer would then be refused for as long as the read lasts, told only "the store is
/// locked". `warn` says on stderr what damage the open found.
fn open_dir_to_read(dir: &Path, config: Config, warn: bool) -> Result<Reader, Failure> {
    if dir.join(strata::recover::LOCK_FILE).is_file() {
        match Store::open_reader(dir, config.clone()) {
            Ok(store) => {
                if warn {
                    warn_damage(dir, store.boot_report());
                }
                return Ok(store);
            }
            // No pin can be written here: nor can a writer run, so nothing changes.
            Err(error) if cannot_write(&error) => {}
            Err(error) => return Err(open_failure(dir, &error)),
        }
    }
    let store =
        Store::open_read_only(dir, config, &[]).map_err(|error| open_failure(dir, &error))?;
    if warn {
        warn_heal_pending(dir, store.boot_report());
    }
    Ok(store)
}

/// Says on stderr what damage a reader's look found (a recorded file missing or unreadable,
/// history damaged, a stray manifest) and a manifest whose last frame is not whole: the answer
/// leaves that frame out, which is never silent, though beside a running writer it can be an
/// append in flight. A crash's other leftovers (an orphan temp, an unclaimed segment) look
/// exactly like a writer's writes in flight, and are left to the next writable open and
/// `engine-fsck`.
fn warn_damage(dir: &Path, report: &strata::recover::Report) {
    use strata::recover::FindingKind;
    let mut damage = report.findings.iter().filter(|f| {
        matches!(
            f.kind,
            FindingKind::TornManifestTail
                | FindingKind::MissingFile
                | FindingKind::WrongLength
                | FindingKind::BadChecksum
                | FindingKind::DamagedHistory
                | FindingKind::StrayManifest
        )
    });
    let Some(first) = damage.next() else {
        return;
    };
    let found = match damage.count() {
        0 => first.to_string(),
        n => format!("{first} (and {n} more)"),
    };
    eprintln!(
        "strata: warning: {} holds what a crash or damage left: {found}; this read-only open \
         changed nothing, and `engine-fsck {}` lists it",
        dir.display(),
        dir.display()
    );
}

/// Whether `error` comes from a folder this process may not write (a read-only mount, or no
/// permission): where a reader cannot hold its pin.
fn cannot_write(error: &EngineError) -> bool {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(error) = cause {
        if let Some(io) = error.downcast_ref::<io::Error>()
            && matches!(
                io.kind(),
                io::ErrorKind::ReadOnlyFilesystem | io::ErrorKind::PermissionDenied
            )
        {
            return true;
        }
        cause = error.source();
    }
    false
}

/// A store opened to read: a local one, or a replica of a bucket (which owns its store).
enum Opened {
    Local(Box<Reader>),
    #[cfg(feature = "remote")]
    Remote(Box<strata::remote::Replica>),
}

impl std::ops::Deref for Opened {
    type Target = Reader;

    fn deref(&self) -> &Reader {
        match self {
            Opened::Local(store) => store,
            #[cfg(feature = "remote")]
            Opened::Remote(replica) => replica.store(),
        }
    }
}

/// Says on stderr what a crash (or damage) left that this read-only open found, so that a read
/// on a store that needs healing is never silent about it. Nothing was changed: the answer
/// comes from the manifest's trusted prefix, as a writable open's would.
fn warn_heal_pending(dir: &Path, report: &strata::recover::Report) {
    let Some(found) = worth_telling(report) else {
        return;
    };
    eprintln!(
        "strata: warning: {} holds what a crash or damage left: {found}; this read-only open \
         changed nothing (the next writable open, such as seal or compact, heals what it can), \
         and `engine-fsck {}` lists it",
        dir.display(),
        dir.display()
    );
}

/// The first finding of a boot worth telling a user about, and how many more there are. A
/// missing empty folder (a backup tool may drop one) and a file whose retirement is recorded
/// are routine, not damage, and are not told.
fn worth_telling(report: &strata::recover::Report) -> Option<String> {
    let mut told = report.findings.iter().filter(|f| {
        !matches!(
            f.kind,
            strata::recover::FindingKind::MissingFolder | strata::recover::FindingKind::RetiredFile
        )
    });
    let first = told.next()?;
    Some(match told.count() {
        0 => first.to_string(),
        n => format!("{first} (and {n} more)"),
    })
}

/// `open_existing`, with `config`.
fn open_existing_with(dir: &Path, config: Config) -> Result<Store, Failure> {
    let store = Store::open(dir, config, &[]).map_err(|error| open_failure(dir, &error))?;
    warn_healed(dir, store.boot_report());
    Ok(store)
}

/// Says on stderr what this open's boot healed, so a cut is never silent: a torn manifest tail
/// is the last barrier's record, cut back (it may have been acknowledged: a flipped bit in a
/// synced last frame looks exactly like an append that never finished).
fn warn_healed(dir: &Path, report: &strata::recover::Report) {
    let Some(found) = worth_telling(report) else {
        return;
    };
    eprintln!(
        "strata: warning: opening {} healed what a crash left: {found}; \
         `engine-fsck {}` lists the evidence kept in quarantine/",
        dir.display(),
        dir.display()
    );
}

fn open_failure(dir: &Path, error: &EngineError) -> Failure {
    let hint = if on_a_read_only_file_system(error) {
        "; the store is on a read-only file system, where query, survey, fold and fsck still \
         read it"
    } else {
        ""
    };
    Failure::new(format!(
        "cannot open the store {}: {error}{hint}",
        dir.display()
    ))
}

/// Whether `error` comes, somewhere down its chain, from a read-only file system (EROFS).
fn on_a_read_only_file_system(error: &EngineError) -> bool {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(error) = cause {
        if let Some(io) = error.downcast_ref::<io::Error>()
            && io.kind() == io::ErrorKind::ReadOnlyFilesystem
        {
            return true;
        }
        cause = error.source();
    }
    false
}

/// Writes `text` to stdout. A reader that went away (`strata query ... | head`) is not a
/// failure of ours: the rest of the output is dropped quietly, as other tools do.
fn print(text: &str) -> Result<(), Failure> {
    let mut stdout = io::stdout().lock();
    quiet_pipe(
        stdout
            .write_all(text.as_bytes())
            .and_then(|()| stdout.flush()),
    )
}

/// Writes the summary of a command whose work is done and durable. A write that fails is
/// reported as what it is (exit [`EXIT_UNREPORTED`]): the work stands, and with --remote it is
/// still published.
fn print_summary(text: &str) -> Result<(), Failure> {
    print(text).map_err(|failure| {
        Failure(
            format!("{failure}; the command's work is done and durable: only its summary was lost"),
            EXIT_UNREPORTED,
        )
    })
}

/// `Ok` for success and for a closed pipe; any other write error is a failure.
fn quiet_pipe(written: io::Result<()>) -> Result<(), Failure> {
    match written {
        Err(error) if error.kind() != io::ErrorKind::BrokenPipe => {
            Err(Failure::new(format!("cannot write to stdout: {error}")))
        }
        _ => Ok(()),
    }
}

/// `n` with a comma between each group of three digits: `3,200,000`.
fn grouped(n: u64) -> String {
    group_digits(&n.to_string())
}

/// A rate or other non-negative measure, rounded to a whole number and grouped.
fn grouped_f64(x: f64) -> String {
    group_digits(&format!("{x:.0}"))
}

fn group_digits(digits: &str) -> String {
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (idx, c) in digits.chars().enumerate() {
        if idx > 0 && (digits.len() - idx).is_multiple_of(3) && c.is_ascii_digit() {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A measured value as exactly as it is stored: integers whole, floats in Rust's shortest
/// round-trip form (so the text parses back to the same f64).
fn exact(value: Num) -> String {
    match value {
        Num::F64(v) => format!("{v:?}"),
        other => other.to_string(),
    }
}

/// A measured value for a table a person reads: integers whole, floats to five significant
/// digits (trailing zeros dropped), with an exponent outside `1e-4 ..= 1e7`.
fn compact(value: Num) -> String {
    match value {
        Num::F64(v) => compact_f64(v),
        other => other.to_string(),
    }
}

fn compact_f64(v: f64) -> String {
    const SIGNIFICANT: i32 = 5;
    let magnitude = v.abs();
    if v == 0.0 || !v.is_finite() {
        // Zero of either sign prints as `0`; a non-finite value cannot be measured (publish
        // refuses it) but a mean of huge values could overflow, and prints as Rust spells it.
        return if v == 0.0 {
            "0".to_owned()
        } else {
            v.to_string()
        };
    }
    if (1e-4..1e7).contains(&magnitude) {
        #[expect(
            clippy::cast_possible_truncation,
            reason = "the magnitude lies in 1e-4..1e7, so its exponent in -4..=6"
        )]
        let exponent = magnitude.log10().floor() as i32;
        let decimals = usize::try_from(SIGNIFICANT - 1 - exponent).unwrap_or(0);
        trim_zeros(&format!("{v:.decimals$}"))
    } else {
        let text = format!("{v:.4e}");
        match text.split_once('e') {
            Some((mantissa, exponent)) => format!("{}e{exponent}", trim_zeros(mantissa)),
            None => text,
        }
    }
}

/// `1.2500` -> `1.25`, `3.000` -> `3`; text without a decimal point is left alone.
fn trim_zeros(text: &str) -> String {
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        text.to_owned()
    }
}

/// A duration at a precision a person reads at a glance: `2.84 s`, `12.3 ms`, `85 µs`.
fn duration(elapsed: Duration) -> String {
    let secs = elapsed.as_secs_f64();
    if secs >= 1.0 {
        format!("{secs:.2} s")
    } else if secs >= 0.001 {
        format!("{:.1} ms", secs * 1e3)
    } else {
        format!("{:.0} µs", secs * 1e6)
    }
}

/// Rows per second over `elapsed` (wall clock); zero time counts as one microsecond.
fn per_second(n_rows: u64, elapsed: Duration) -> f64 {
    n_rows as f64 / elapsed.as_secs_f64().max(1e-6)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_digits_in_threes() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1000), "1,000");
        assert_eq!(grouped(3_200_000), "3,200,000");
        assert_eq!(grouped_f64(1_234_567.6), "1,234,568");
    }

    #[test]
    fn compact_numbers_keep_five_significant_digits() {
        assert_eq!(compact(Num::F64(0.0)), "0");
        assert_eq!(compact(Num::F64(-0.0)), "0");
        assert_eq!(compact(Num::F64(21.634_56)), "21.635");
        assert_eq!(compact(Num::F64(-1.5)), "-1.5");
        assert_eq!(compact(Num::F64(9.999_996)), "10");
        assert_eq!(compact(Num::F64(1_234_567.8)), "1234568");
        assert_eq!(compact(Num::F64(1e300)), "1e300");
        assert_eq!(compact(Num::F64(-2.5e-10)), "-2.5e-10");
        assert_eq!(compact(Num::F64(0.001_234_56)), "0.0012346");
        assert_eq!(compact(Num::F64(5.303_84e-4)), "0.00053038");
        assert_eq!(compact(Num::F64(5.303_84e-5)), "5.3038e-5");
        assert_eq!(compact(Num::U64(u64::MAX)), "18446744073709551615");
        assert_eq!(compact(Num::I64(-7)), "-7");
        assert_eq!(exact(Num::F64(0.1)), "0.1");
        assert_eq!(exact(Num::F64(1e300)), "1e300");
    }

    #[test]
    fn durations_read_at_a_glance() {
        assert_eq!(duration(Duration::from_millis(2840)), "2.84 s");
        assert_eq!(duration(Duration::from_micros(12_300)), "12.3 ms");
        assert_eq!(duration(Duration::from_micros(85)), "85 µs");
    }
}
