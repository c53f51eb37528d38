//! `strata ingest STREAM [FILE|-]`: CSV rows published in batches, sealed every N rows and at
//! the end.
//!
//! A batch is all or nothing. Rows are parsed a whole batch at a time, into columns
//! (`batch.rs`), before any is published, so a bad cell refuses its batch before anything of it
//! is staged. A refusal by the engine can come after part of the batch was staged (a batch spans
//! several publish calls: one per run of rows of one track), and staging cannot be taken back; so then the store is dropped unsealed (staging
//! never touched a file), reopened, and the batches before the bad one since the last seal are
//! published again and sealed. Seals only ever fall between batches.
//!
//! After each barrier it closes, an ingest takes up to `ServeConfig::compact_steps_per_tick`
//! (by default) compaction steps, as a served store does between barriers, stopping early when
//! the policy finds nothing to merge; so a long load leaves a few files per partition rather than
//! one per barrier, and each row is rewritten a few times (docs/compaction.md, "Where compaction
//! runs"). `--no-compact` leaves every barrier's file for a later `strata compact`. The store is
//! opened with the retention `DIR/retention.json` sets (`strata retention`), so those steps
//! sweep it after each barrier; the summary says how many tiers the sweeps retired.
//!
//! SIGINT or SIGTERM stops an ingest at the next batch boundary, or after the compaction step
//! under way (each step is one durable record): what is staged is sealed, and stderr says the
//! rows sealed, the watermark, and the first CSV line not stored, as the `--skip-lines N` that
//! resumes the same input where it stopped (exit 3; a second signal exits at once, see
//! `interrupt.rs`). `--skip-lines N` skips every record that begins within the N lines after the
//! header, so a resumed run never publishes a row twice.

use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use csv::{ByteRecord, Position};
use indicatif::ProgressBar;
use strata::{Config, ServeConfig, Store, StreamDecl};

use super::args::{IngestArgs, InputFormat};
use super::batch::{BadRow, Batch};
#[cfg(feature = "parquet")]
use super::columnar;
use super::compact::{Done, LiveFiles};
use super::interrupt::{EXIT_INTERRUPTED, INGEST, Interrupt};
use super::magic;
use super::parse::{Layout, POSITION_COLUMN, declares_position};
use super::retention;
use super::{
    Failure, count, declared, duration, grouped, grouped_f64, per_second, print_summary, progress,
};

/// Seal early, between batches, once staging holds this share of `staged_bytes_max`, so a
/// batch is never refused only because staging is full.
const STAGED_SHARE_BEFORE_SEAL: usize = 2;

/// The input: a file (whose length the progress bar can show) or standard input.
struct Input {
    read: Box<dyn Read>,
    len_bytes: Option<u64>,
    /// The file's path, or `standard input`, as messages name it.
    name: String,
}

/// What the input's records are called: CSV lines (the header is line 1), or the rows of a
/// Parquet or Arrow input (the first is row 1).
#[derive(Clone, Copy, Debug)]
struct Unit {
    /// `line`, `row`.
    word: &'static str,
    /// `lines`, `rows`.
    words: &'static str,
    /// `CSV line`, `row`: where the input resumes.
    long: &'static str,
}

const CSV_LINES: Unit = Unit {
    word: "line",
    words: "lines",
    long: "CSV line",
};

#[cfg(feature = "parquet")]
const ROWS: Unit = Unit {
    word: "row",
    words: "rows",
    long: "row",
};

/// Where the records come from.
enum Records {
    Csv(csv::Reader<Box<dyn Read>>),
    #[cfg(feature = "parquet")]
    Columnar(Box<columnar::Input>),
}

/// One ingest in progress.
struct Ingest {
    dir: PathBuf,
    stream: String,
    store: Store,
    layout: Layout,
    /// The position the next row gets when the CSV has no position column; `None`: exhausted.
    next_position: Option<u64>,
    /// Batches published since the last seal, kept to publish again after a refusal.
    pending: Vec<Batch>,
    n_rows_pending: u64,
    n_rows_sealed: u64,
    batch_rows_max: u64,
    seal_every_rows: u64,
    /// The CSV line where the data begins, after the header: `--skip-lines` counts from it.
    data_line: u64,
    /// Records that begin before this line are skipped (`--skip-lines`).
    skip_before_line: u64,
    n_rows_skipped: u64,
    /// The first CSV line not yet published.
    next_line: u64,
    /// The first CSV line not yet sealed: where a resumed ingest starts.
    sealed_line: u64,
    /// The stream's watermark as the store answered it at open and at each seal since: what a
    /// message says is durable. Asked again of a store a failed write poisoned, the store
    /// refuses to answer, which must not read as "none".
    watermark: Option<u64>,
    /// Compaction steps to take after each barrier; 0 with `--no-compact`.
    compact_steps_per_barrier: usize,
    /// Time spent reading, parsing and staging rows, and in seals: the two halves of a load.
    stage_elapsed: Duration,
    seal_elapsed: Duration,
    /// What the compaction steps of this run did, and the time they took.
    compacted: Done,
    compact_elapsed: Duration,
    /// Whether `retention.json` sets any retention (the steps' sweeps then apply it).
    retention_set: bool,
    interrupt: Interrupt,
    /// What a record is called in messages: a CSV `line`, or a Parquet or Arrow `row`.
    unit: Unit,
    /// With `--remote`: publishes each barrier and its compaction steps as they become durable
    /// (the command's end publishes the last, with everything else).
    publisher: Option<super::remote::Publishing>,
}

pub fn run(dir: &Path, args: &IngestArgs, remote: Option<&str>) -> Result<ExitCode, Failure> {
    // Taken before the store is opened, so a signal during a long open still gets its answer.
    let interrupt = Interrupt::watch(
        INGEST,
        format!(
            "nothing sealed in this run: resume with --skip-lines {}",
            args.skip_lines
        ),
    )?;
    let input = open_input(args.input.as_deref(), args.format)?;
    let len_bytes = match &input {
        Opened::Csv(input) => input.len_bytes,
        #[cfg(feature = "parquet")]
        Opened::Columnar(_) => None,
    };
    let retention = retention::load(dir)?;
    let retention_set = !retention.is_empty();
    let store = open_to_compact(dir, retention)?;
    let decl = declared(&store, &args.stream)?.clone();
    let publisher = match remote {
        Some(url) => Some(super::remote::Publishing::attach(dir, url, &store)?),
        None => None,
    };
    let (mut records, layout, data_line, unit) = records(input, &decl)?;
    if declares_position(&decl) {
        eprintln!(
            "strata: note: stream {:?} declares a field named {POSITION_COLUMN:?} (declared \
             before the name was reserved for each row's position), so the {POSITION_COLUMN:?} \
             column is that field and rows get the positions after the stream's watermark",
            args.stream
        );
    }
    let skip_before_line = data_line.checked_add(args.skip_lines).ok_or_else(|| {
        Failure::new(format!(
            "--skip-lines {} is beyond any input",
            args.skip_lines
        ))
    })?;
    // The store says where free positions start (above the watermark, a repair's fence and
    // anything else taken); the command line numbers a fresh stream's rows from 1.
    let next_position = match store.next_position(&args.stream)? {
        Some(next) => Some(next.max(1)),
        None if store.watermark(&args.stream, &[])? == Some(u64::MAX) => {
            return Err(Failure::new(
                "the stream's positions are exhausted (its watermark is u64::MAX)",
            ));
        }
        None => {
            return Err(Failure::new(
                "the stream's positions are exhausted (u64::MAX is taken)",
            ));
        }
    };
    let watermark = store.watermark(&args.stream, &[])?;
    let ingest = Ingest {
        dir: dir.to_owned(),
        stream: args.stream.clone(),
        store,
        layout,
        next_position,
        pending: Vec::new(),
        n_rows_pending: 0,
        n_rows_sealed: 0,
        batch_rows_max: args.batch,
        seal_every_rows: args.seal_every,
        data_line,
        skip_before_line,
        n_rows_skipped: 0,
        next_line: skip_before_line,
        sealed_line: skip_before_line,
        watermark,
        compact_steps_per_barrier: if args.no_compact {
            0
        } else {
            // What a served store takes after each barrier, for the same reasons: a bounded
            // delay per barrier, and a backlog that never builds up.
            ServeConfig::default().compact_steps_per_tick
        },
        stage_elapsed: Duration::ZERO,
        seal_elapsed: Duration::ZERO,
        compacted: Done::default(),
        compact_elapsed: Duration::ZERO,
        retention_set,
        interrupt,
        unit,
        publisher,
    };
    ingest.run(&mut records, len_bytes)
}

/// The input's records, the layout of its columns, the record its data begins at (as
/// `--skip-lines` counts) and what its records are called.
fn records(input: Opened, decl: &StreamDecl) -> Result<(Records, Layout, u64, Unit), Failure> {
    Ok(match input {
        Opened::Csv(input) => {
            let mut reader = csv::ReaderBuilder::new()
                .flexible(true)
                .from_reader(input.read);
            let header = reader
                .headers()
                .map_err(|e| Failure::new(format!("line 1: {e}")))?;
            if header.is_empty() {
                return Err(Failure::new(format!(
                    "{} is empty (no header line): nothing to ingest",
                    input.name
                )));
            }
            let layout =
                Layout::new(decl, header).map_err(|e| Failure::new(format!("line 1: {e}")))?;
            let data_line = reader.position().line();
            (Records::Csv(reader), layout, data_line, CSV_LINES)
        }
        #[cfg(feature = "parquet")]
        Opened::Columnar(input) => {
            let layout = Layout::new(decl, &input.header())
                .map_err(|e| Failure::new(format!("{}: its columns: {e}", input.name)))?;
            (Records::Columnar(input), layout, 1, ROWS)
        }
    })
}

/// Opens the store to publish and compact into, with the retention `retention.json` sets (the
/// compaction steps after each barrier sweep it).
fn open_to_compact(
    dir: &Path,
    retention: std::collections::BTreeMap<String, strata::Retention>,
) -> Result<Store, Failure> {
    retention::open_to_compact(dir, Config::default().retention(retention))
}

/// The input, opened as the format `--format` names, or as its first bytes say (CSV when they
/// say neither Parquet nor Arrow). Standard input is told by its first bytes too, which are
/// put back in front of the rest: an Arrow IPC stream is read from it, and Parquet (whose footer
/// is at its end) is refused, naming the file it needs, rather than parsed as CSV.
enum Opened {
    Csv(Input),
    #[cfg(feature = "parquet")]
    Columnar(Box<columnar::Input>),
}

fn open_input(path: Option<&Path>, format: Option<InputFormat>) -> Result<Opened, Failure> {
    let path = path.filter(|p| *p != Path::new("-"));
    if let Some(path) = path
        && path.is_dir()
    {
        return Err(Failure::new(format!(
            "{} is a folder, not a file: ingest reads one CSV, Parquet or Arrow file (or \
             standard input)",
            path.display()
        )));
    }
    let format = match (format, path) {
        (Some(format), _) => format,
        (None, Some(path)) => match magic::sniff(path)? {
            Some(magic::Format::Parquet) => InputFormat::Parquet,
            Some(magic::Format::Arrow) => InputFormat::Arrow,
            None => InputFormat::Csv,
        },
        (None, None) => return open_stdin(),
    };
    let columnar = match format {
        InputFormat::Csv => return open_csv(path).map(Opened::Csv),
        InputFormat::Parquet => magic::Format::Parquet,
        InputFormat::Arrow => magic::Format::Arrow,
    };
    open_columnar(path, columnar)
}

/// A Parquet or Arrow input (`None`: standard input), read a batch at a time.
#[cfg(feature = "parquet")]
fn open_columnar(path: Option<&Path>, format: magic::Format) -> Result<Opened, Failure> {
    columnar::Input::open(path, format).map(|input| Opened::Columnar(Box::new(input)))
}

/// Refused in a build without the columnar formats, naming the feature that reads them.
#[cfg(not(feature = "parquet"))]
fn open_columnar(path: Option<&Path>, format: magic::Format) -> Result<Opened, Failure> {
    let name = path.map_or_else(|| "standard input".to_owned(), |p| p.display().to_string());
    let what = match format {
        magic::Format::Parquet => "Parquet",
        magic::Format::Arrow => "Arrow IPC",
    };
    Err(super::features::not_built(
        &format!("ingesting {name}, which holds {what},"),
        "parquet",
    ))
}

/// Standard input, as its first bytes say it is.
fn open_stdin() -> Result<Opened, Failure> {
    let mut stdin = io::stdin().lock();
    let head = magic::read_head(&mut stdin)
        .map_err(|e| Failure::new(format!("cannot read standard input: {e}")))?;
    let format = magic::format_of(&head);
    let read: Box<dyn Read> = Box::new(io::Cursor::new(head).chain(stdin));
    let name = "standard input".to_owned();
    match format {
        Some(magic::Format::Parquet) => Err(Failure::new(
            "standard input holds Parquet (it begins `PAR1`), which is read from a file (its \
             footer is at the end): give the file's path instead of `-`",
        )),
        #[cfg(feature = "parquet")]
        Some(magic::Format::Arrow) => {
            columnar::Input::stream(read, name).map(|input| Opened::Columnar(Box::new(input)))
        }
        #[cfg(not(feature = "parquet"))]
        Some(magic::Format::Arrow) => open_columnar(None, magic::Format::Arrow),
        None => Ok(Opened::Csv(Input {
            read,
            len_bytes: None,
            name,
        })),
    }
}

fn open_csv(path: Option<&Path>) -> Result<Input, Failure> {
    match path {
        Some(path) => {
            let cannot =
                |e: io::Error| Failure::new(format!("cannot read {}: {e}", path.display()));
            let file = File::open(path).map_err(cannot)?;
            let metadata = file.metadata().map_err(cannot)?;
            // Opening a folder succeeds; reading it fails as "Is a directory", which would
            // otherwise be reported against line 1 of a file that is not there.
            if metadata.is_dir() {
                return Err(Failure::new(format!(
                    "{} is a folder, not a file: ingest reads one CSV file (or standard input)",
                    path.display()
                )));
            }
            Ok(Input {
                read: Box::new(file),
                len_bytes: Some(metadata.len()),
                name: path.display().to_string(),
            })
        }
        _ => Ok(Input {
            read: Box::new(io::stdin().lock()),
            len_bytes: None,
            name: "standard input".to_owned(),
        }),
    }
}

impl Ingest {
    fn run(mut self, records: &mut Records, len_bytes: Option<u64>) -> Result<ExitCode, Failure> {
        let bar = len_bytes.map_or_else(progress::spinner, progress::bytes);
        let start = Instant::now();
        loop {
            if let Some(signal) = self.interrupt.requested() {
                bar.finish_and_clear();
                return self.stop(signal);
            }
            let room = self
                .batch_rows_max
                .min(self.seal_every_rows - self.n_rows_pending);
            let staging = Instant::now();
            let batch = match self.read_batch(records, room) {
                Ok(batch) if batch.is_empty() => break,
                Ok(batch) => batch,
                Err(bad) => {
                    bar.finish_and_clear();
                    return Err(self.refuse_unstaged(&bad));
                }
            };
            if let Err(bad) = batch.publish(&mut self.store, &self.stream) {
                bar.finish_and_clear();
                return Err(self.refuse_staged(&bad, &batch));
            }
            self.stage_elapsed += staging.elapsed();
            self.n_rows_pending += batch.n_rows() as u64;
            self.next_line = batch.next_line;
            self.pending.push(batch);
            if (self.n_rows_pending >= self.seal_every_rows || self.staging_is_crowded())
                && self.seal()?
            {
                // A signal heard between steps is answered at the top of the loop.
                self.compact()?;
                if let Some(publisher) = &mut self.publisher {
                    publisher.publish(&self.store).map_err(|failure| {
                        Failure::new(format!("{failure}; {}", self.durable()))
                    })?;
                }
            }
            show(&bar, records, self.n_rows_sealed + self.n_rows_pending);
        }
        if self.seal()? && self.compact()? {
            bar.finish_and_clear();
            if let Some(signal) = self.interrupt.requested() {
                return self.stop(signal);
            }
        }
        // The boot after this (every command's) reads the live state, not the records of every
        // barrier and step since the last rewrite, as after `strata compact`.
        self.store.checkpoint().map_err(|error| {
            Failure::new(format!(
                "rewriting the manifest after the ingest failed: {error}; {}",
                self.durable()
            ))
        })?;
        bar.finish_and_clear();
        let elapsed = start.elapsed();
        let n_rows = self.n_rows_sealed;
        let barriers = self.store.metrics().barriers;
        let watermark = self.watermark;
        let live = LiveFiles::of(self.store.catalog());
        let mut summary = format!(
            "ingested {} into {} in {} ({} rows/s; reading and staging {} rows/s, seals \
             {}); barriers: {barriers}; {}; live segment files: {}, most in one partition {}; \
             watermark {}",
            count(n_rows, "row", "rows"),
            self.stream,
            duration(elapsed),
            grouped_f64(per_second(n_rows, elapsed)),
            grouped_f64(per_second(n_rows, self.stage_elapsed)),
            duration(self.seal_elapsed),
            self.compaction(),
            grouped(live.n_files as u64),
            grouped(live.most_in_one() as u64),
            watermark.map_or_else(|| "none".to_owned(), |w| w.to_string()),
        );
        if self.skip_before_line > self.data_line {
            let _ = write!(
                summary,
                "; skipped {} in the first {}",
                count(self.n_rows_skipped, "row", "rows"),
                count(
                    self.skip_before_line - self.data_line,
                    self.unit.word,
                    self.unit.words
                )
            );
        }
        print_summary(&(summary + "\n"))?;
        Ok(ExitCode::SUCCESS)
    }

    /// Stops at this batch boundary for `signal`: seals what is staged and says what is stored
    /// and where to resume, on stderr (stdout carries answers only).
    fn stop(mut self, signal: &str) -> Result<ExitCode, Failure> {
        self.seal()?;
        self.interrupt.report_stop(&format!(
            "stopped by {signal}; {}; {}",
            self.durable(),
            self.compaction()
        ));
        Ok(ExitCode::from(EXIT_INTERRUPTED))
    }

    /// What compaction did in this run, in one clause.
    fn compaction(&self) -> String {
        if self.compact_steps_per_barrier == 0 {
            return "compaction: off (--no-compact)".to_owned();
        }
        let mut said = format!(
            "compaction steps: {} ({} bytes written, {})",
            grouped(self.compacted.n_steps),
            grouped(self.compacted.bytes_written),
            duration(self.compact_elapsed),
        );
        if self.retention_set {
            // Counted since this process opened the store (a reopen after a refused batch
            // starts the count again).
            let _ = write!(
                said,
                "; retention swept {} tiers",
                grouped(self.store.metrics().tiers_retired)
            );
        }
        said
    }

    /// Up to `compact_steps_per_barrier` compaction steps after a barrier, as a served store
    /// takes them: stops early when the policy finds nothing to merge, and before a step once a
    /// stop was asked for (each step is one durable record, so between two is a durable
    /// boundary). Answers whether a stop cut the steps short.
    fn compact(&mut self) -> Result<bool, Failure> {
        let start = Instant::now();
        let mut cut_short = false;
        for _ in 0..self.compact_steps_per_barrier {
            if self.interrupt.requested().is_some() {
                cut_short = true;
                break;
            }
            let step = self.store.compact_step().map_err(|error| {
                Failure::new(format!(
                    "compaction step {} failed: {error}; {}",
                    self.compacted.n_steps + 1,
                    self.durable()
                ))
            })?;
            let Some(step) = step else {
                break;
            };
            self.compacted.add(&step);
        }
        self.compact_elapsed += start.elapsed();
        Ok(cut_short)
    }

    /// What is sealed and where the input resumes, in words.
    fn durable(&self) -> String {
        format!(
            "sealed {} into {} in this run (watermark {}); {} {} is the first not \
             stored: resume with the same command and --skip-lines {}",
            count(self.n_rows_sealed, "row", "rows"),
            self.stream,
            self.watermark
                .map_or_else(|| "none".to_owned(), |w| w.to_string()),
            self.unit.long,
            self.sealed_line,
            self.sealed_line - self.data_line,
        )
    }

    /// Reads and parses up to `room` records; an empty batch is the end of the input.
    fn read_batch(&mut self, records: &mut Records, room: u64) -> Result<Batch, BadRow> {
        #[cfg_attr(
            not(feature = "parquet"),
            expect(
                clippy::infallible_destructuring_match,
                reason = "CSV is the one input format of this build"
            )
        )]
        let reader = match records {
            Records::Csv(reader) => reader,
            #[cfg(feature = "parquet")]
            Records::Columnar(input) => {
                return input.read_batch(
                    &self.layout,
                    room,
                    self.skip_before_line,
                    &mut self.n_rows_skipped,
                    || assign_position(&mut self.next_position),
                );
            }
        };
        let mut batch = Batch::new(&self.layout);
        let mut record = ByteRecord::new();
        while (batch.n_rows() as u64) < room {
            let more = reader.read_byte_record(&mut record).map_err(|e| BadRow {
                line: e.position().unwrap_or(reader.position()).line(),
                reason: csv_reason(&e),
            })?;
            if !more {
                break;
            }
            let line = record.position().map_or(0, Position::line);
            // Checked whole, as reading a `StringRecord` checks it, and before the skip (as
            // that did): a record that is not UTF-8 refuses its batch wherever it is.
            utf8(&record).map_err(|reason| BadRow { line, reason })?;
            if line < self.skip_before_line {
                self.n_rows_skipped += 1;
                continue;
            }
            batch
                .push(&self.layout, &record, line, || {
                    assign_position(&mut self.next_position)
                })
                .map_err(|reason| BadRow { line, reason })?;
        }
        debug_assert!(
            self.layout.has_position() || batch.positions.windows(2).all(|w| w[0] < w[1])
        );
        batch.next_line = reader.position().line();
        Ok(batch)
    }

    fn staging_is_crowded(&self) -> bool {
        self.store.staged_bytes() > Config::default().staged_bytes_max / STAGED_SHARE_BEFORE_SEAL
    }

    /// Seals what is staged; answers whether that closed a barrier (nothing staged: no barrier).
    fn seal(&mut self) -> Result<bool, Failure> {
        let last_position = self.pending.iter().flat_map(|b| &b.positions).max();
        if let Some(last_position) = last_position {
            // A second signal can end the process inside the seal, which then may or may not
            // have landed: what it says must hold either way.
            self.interrupt.durable(format!(
                "a seal was under way: if `strata seal` shows watermark {last_position}, resume \
                 with --skip-lines {}; if not, {}",
                self.next_line - self.data_line,
                self.durable()
            ));
        }
        let barriers_before = self.store.metrics().barriers;
        let start = Instant::now();
        let watermarks = self.store.seal()?;
        self.watermark = watermarks.get(&self.stream).copied().flatten();
        self.seal_elapsed += start.elapsed();
        self.n_rows_sealed += self.n_rows_pending;
        self.n_rows_pending = 0;
        self.pending.clear();
        self.sealed_line = self.next_line;
        self.interrupt.durable(self.durable());
        Ok(self.store.metrics().barriers > barriers_before)
    }

    /// A bad row found before its batch was published: seal the batches before it, and fail.
    fn refuse_unstaged(mut self, bad: &BadRow) -> Failure {
        match self.seal() {
            Ok(_) => self.refusal(bad),
            Err(failure) => failure,
        }
    }

    /// The engine refused a row after part of its batch was staged: drop the store unsealed,
    /// reopen it, publish the batches before this one again, seal them, and fail.
    fn refuse_staged(self, bad: &BadRow, batch: &Batch) -> Failure {
        debug_assert!(batch.lines.contains(&bad.line));
        let Ingest { store, .. } = self;
        // Dropping the store discards everything staged and releases its lock; staging never
        // touched a file, so the refused batch's staged part leaves no trace.
        drop(store);
        let store = match retention::load(&self.dir).and_then(|r| open_to_compact(&self.dir, r)) {
            Ok(store) => store,
            Err(failure) => return failure,
        };
        let mut ingest = Ingest { store, ..self };
        for earlier in &ingest.pending {
            if let Err(again) = earlier.publish(&mut ingest.store, &ingest.stream) {
                return Failure::new(format!(
                    "{} {}: {}; then publishing the batches before it again failed at {} {}: {}",
                    ingest.unit.word,
                    bad.line,
                    bad.reason,
                    ingest.unit.word,
                    again.line,
                    again.reason
                ));
            }
        }
        ingest.refuse_unstaged(bad)
    }

    /// The failure for a refused batch: the line and reason, and what was kept.
    fn refusal(&self, bad: &BadRow) -> Failure {
        let watermark = self.watermark;
        // A repair's fence above the watermark is what refuses low positions: say it.
        let fence = self
            .store
            .fence(&self.stream)
            .ok()
            .flatten()
            .filter(|&f| watermark.is_none_or(|w| w < f));
        // The batches before the bad one are sealed: the input resumes at its first line.
        Failure::new(format!(
            "{} {}: {}; nothing of its batch was stored (rows sealed before it: {}; watermark \
             {}{}); once {} {} is put right, the same command with --skip-lines {} stores the \
             rest",
            self.unit.word,
            bad.line,
            bad.reason,
            grouped(self.n_rows_sealed),
            watermark.map_or_else(|| "none".to_owned(), |w| w.to_string()),
            fence.map_or_else(String::new, |f| format!("; fenced at {f}")),
            self.unit.word,
            bad.line,
            self.sealed_line - self.data_line,
        ))
    }
}

/// The position the next row gets when the CSV has none, and the one after it: `None` once
/// `u64::MAX` is taken. The store takes a batch at `u64::MAX`, so that position is assigned too.
fn assign_position(next_position: &mut Option<u64>) -> Result<u64, String> {
    let position = next_position
        .ok_or_else(|| "the stream's positions are exhausted (u64::MAX)".to_owned())?;
    *next_position = position.checked_add(1);
    Ok(position)
}

/// Refuses a record that is not UTF-8 as reading it as a `StringRecord` would: naming the
/// first field that is not, and the byte within it where it stops being.
fn utf8(record: &ByteRecord) -> Result<(), String> {
    if record.as_slice().is_ascii() {
        return Ok(());
    }
    for (field_idx, field) in record.iter().enumerate() {
        if let Err(e) = std::str::from_utf8(field) {
            return Err(format!(
                "field {} is not valid UTF-8 (byte {})",
                field_idx + 1,
                e.valid_up_to()
            ));
        }
    }
    Ok(())
}

/// A CSV reading error in words, without csv's own position prefix (the line is ours to say).
fn csv_reason(error: &csv::Error) -> String {
    match error.kind() {
        csv::ErrorKind::Utf8 { err, .. } => {
            format!(
                "field {} is not valid UTF-8 (byte {})",
                err.field() + 1,
                err.valid_up_to()
            )
        }
        csv::ErrorKind::Io(error) => format!("cannot read the input: {error}"),
        _ => error.to_string(),
    }
}

fn show(bar: &ProgressBar, records: &Records, n_rows: u64) {
    if bar.is_hidden() {
        return;
    }
    #[cfg_attr(
        not(feature = "parquet"),
        expect(
            irrefutable_let_patterns,
            reason = "CSV is the one input format of this build"
        )
    )]
    if let Records::Csv(reader) = records {
        bar.set_position(reader.position().byte());
    }
    bar.set_message(format!("{} rows", grouped(n_rows)));
}
