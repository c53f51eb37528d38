//! `Served`: one `Store` owned by a supervisor, reached through bounded lanes.
//!
//! The supervisor runs on a thread of its own (with a single-threaded tokio runtime), so a
//! barrier's syncs never block the caller's runtime. Callers hold a cloneable handle. Rows fed
//! for staging cross a feed lane; reads, seals and the stop cross a command lane; each waits on a
//! single-use reply. Delivery has priority: every ready feed is staged before a command is
//! answered. A ticker closes one barrier per `seal_interval` for every stream, a size trigger
//! closes one whenever staging reaches `seal_at_staged_share` of its bound, and a clean stop
//! (or the last handle dropped) closes a last barrier. Each barrier grants a bounded number of
//! compaction steps, which alternate with requests so that traffic cannot starve them
//! (`supervise`). If the supervisor is gone, a failed send or a dropped reply answers
//! `Unserved` to a read or a seal and `EngineError::Stopped` to a publish or a stop — never a
//! hang, and never `Poisoned`: the store was closed, not damaged.

use std::collections::VecDeque;
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;
use std::time::Duration;

use strata_levels::Aggregate;
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, mpsc, oneshot};

use crate::error::EngineError;
use crate::metrics::Metrics;
use crate::series::{BeneathWindow, Series, no_buckets, no_stats, or_nothing};
use crate::store::Store;
use crate::value::Row;
use crate::view::Snapshot;
use crate::view::read::StoredRow;
use crate::view::survey::{FieldBuckets, FieldStat, Survey};
use crate::write::columns::{Column, Positions};
use crate::write::compact::MergeDone;
use crate::write::retention::Swept;
use crate::write::seal::Sealed;
use crate::write::snapshot::remove_segments;
use crate::write::trim::Trimmed;

/// How a served store runs. `ServeConfig::default()` is a sane start; the builder methods,
/// one per field and named after it, change it (`ServeConfig::default().seal_interval(None)`).
/// `#[non_exhaustive]`, like `Config`, so a new setting is not a breaking change.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ServeConfig {
    /// How often the supervisor closes a barrier on its own; `None`: only when asked. An
    /// interval below [`ServeConfig::SEAL_INTERVAL_MIN`] (zero, say) counts as that minimum, one above
    /// [`ServeConfig::SEAL_INTERVAL_MAX`] as that maximum: a ticker cannot run with no period, nor past the
    /// clock's range.
    pub seal_interval: Option<Duration>,
    /// Requests each lane holds before senders wait (`feed_lane_max` and `command_lane_max`).
    /// 0 counts as 1, and a value above what a lane can hold
    /// (`tokio::sync::Semaphore::MAX_PERMITS`) as that most.
    pub lane_max: usize,
    /// Compaction steps (`Store::compact_step`) the supervisor grants after each barrier it
    /// closes (and each trim or retire); 0: never. The worker writes them, one at a time,
    /// alternating with the other writes: a seal, trim, retire or sweep asked meanwhile waits
    /// for at most the step in flight, and a tick's barrier waits for the whole grant (so a
    /// cadence shorter than a barrier cannot starve compaction). Reads and publishes wait for
    /// none of them, but a step's pick (and its sweep, with retention) runs on the supervisor.
    /// A step is bounded by `Config::compact_inputs_max` and `Config::compact_step_bytes_max`
    /// (docs/embedding.md).
    pub compact_steps_per_tick: usize,
    /// The size trigger: after staging a feed, the supervisor closes a barrier (exactly as a
    /// tick does, compaction grant included) once the bytes staged reach this share of
    /// `Config::staged_bytes_max`; `None`: barriers only on the ticker or when asked. Default
    /// `Some(0.5)`: a barrier starts at half the bound, so a host publishing faster than the
    /// cadence (or with no cadence) is not refused with `StagingFull`; a batch is still
    /// refused if it is larger than what the bound leaves above the trigger (at the default,
    /// half the bound). A share rather than a byte count, so that it follows the store's bound
    /// and cannot name a trigger past it. A share below
    /// [`ServeConfig::SEAL_AT_STAGED_SHARE_MIN`] (zero, a negative one) counts as that minimum,
    /// one above 1 (infinity) or not a number as 1 (the bound itself: a barrier only once
    /// staging is exactly full, which rarely helps). Each such barrier counts in
    /// `Metrics::size_barriers` ([`Served::metrics`]).
    pub seal_at_staged_share: Option<f64>,
    /// Reads run at once, each on a snapshot of the current catalog version in a pool of
    /// blocking threads, off the supervisor's: a read waits for no barrier's or compaction
    /// step's writes (the worker's) and for no other read but for a free reader; it does wait
    /// for what still runs on the supervisor (a trim, a retire, a sweep, a manifest rewrite).
    /// More reads wait in order, up to `lane_max` of them held by the supervisor (each takes
    /// its snapshot when a reader frees, so it may see barriers that landed meanwhile) and
    /// the rest in the command lane; seals, stops and metrics are not held behind them until
    /// that many wait. A [`Served::read`] closure must not wait for any request to the same
    /// `Served` (a read, a seal, a stop): with every reader so held, nothing may be left to
    /// answer it. 0 counts as 1, a value above [`ServeConfig::READERS_MAX_LIMIT`] as that.
    pub readers_max: usize,
    /// How much lower than the host's the CPU priority of the supervisor's writer thread is
    /// (the nice value it adds on Linux, 0..=19; 0: the host's own; ignored elsewhere).
    /// Default 10: the writer encodes and checksums a barrier, a merge, on a core a read or a
    /// publish may need; at a lower priority the scheduler lets those go first, and the writer
    /// takes the rest. On a 2-core machine at a 50 ms cadence this took the survey p99 from
    /// about 4 to 1.7 times idle (docs/embedding.md). Under a host that keeps every core busy
    /// the writes slow down, staging fills, and back-pressure holds publishes until they
    /// catch up: nothing is lost, a seal only answers later.
    pub writer_nice: i32,
}

impl Default for ServeConfig {
    fn default() -> Self {
        ServeConfig {
            seal_interval: Some(Duration::from_millis(250)),
            lane_max: 1024,
            compact_steps_per_tick: 4,
            seal_at_staged_share: Some(0.5),
            readers_max: 4,
            writer_nice: 10,
        }
    }
}

impl ServeConfig {
    /// The shortest [`ServeConfig::seal_interval`] the supervisor ticks at: a shorter one (zero,
    /// which no ticker can run with) counts as this.
    pub const SEAL_INTERVAL_MIN: Duration = Duration::from_millis(1);

    /// The longest [`ServeConfig::seal_interval`] the supervisor ticks at (about a century): a
    /// longer one counts as this, so that the next tick's instant stays within the clock's range.
    pub const SEAL_INTERVAL_MAX: Duration = Duration::from_secs(100 * 365 * 24 * 60 * 60);

    /// Sets [`ServeConfig::seal_interval`] (`None`: barriers only when asked). An interval
    /// below [`ServeConfig::SEAL_INTERVAL_MIN`] (zero, say) counts as that minimum, one above
    /// [`ServeConfig::SEAL_INTERVAL_MAX`] as that maximum.
    #[must_use]
    pub fn seal_interval(mut self, seal_interval: Option<Duration>) -> Self {
        self.seal_interval = seal_interval;
        self
    }

    /// Sets [`ServeConfig::lane_max`] (0 counts as 1).
    #[must_use]
    pub fn lane_max(mut self, lane_max: usize) -> Self {
        self.lane_max = lane_max;
        self
    }

    /// Sets [`ServeConfig::compact_steps_per_tick`].
    #[must_use]
    pub fn compact_steps_per_tick(mut self, compact_steps_per_tick: usize) -> Self {
        self.compact_steps_per_tick = compact_steps_per_tick;
        self
    }

    /// The most readers [`ServeConfig::readers_max`] runs at once: each is a thread.
    pub const READERS_MAX_LIMIT: usize = 256;

    /// Sets [`ServeConfig::readers_max`] (0 counts as 1).
    #[must_use]
    pub fn readers_max(mut self, readers_max: usize) -> Self {
        self.readers_max = readers_max;
        self
    }

    /// Sets [`ServeConfig::writer_nice`] (clamped to 0..=19).
    #[must_use]
    pub fn writer_nice(mut self, writer_nice: i32) -> Self {
        self.writer_nice = writer_nice;
        self
    }

    /// The least [`ServeConfig::seal_at_staged_share`] the supervisor uses: a smaller one
    /// (zero, a negative one) counts as this.
    pub const SEAL_AT_STAGED_SHARE_MIN: f64 = 1.0 / 1024.0;

    /// Sets [`ServeConfig::seal_at_staged_share`] (`None`: no size trigger). A share below
    /// [`ServeConfig::SEAL_AT_STAGED_SHARE_MIN`] counts as that minimum; one above 1, or not a
    /// number, as 1.
    #[must_use]
    pub fn seal_at_staged_share(mut self, seal_at_staged_share: Option<f64>) -> Self {
        self.seal_at_staged_share = seal_at_staged_share;
        self
    }

    /// The staged bytes at which the size trigger closes a barrier, for a store whose bound is
    /// `staged_bytes_max`: the share clamped as documented, times the bound, rounded up, and at
    /// least 1 (so an empty staging never triggers). `None`: no size trigger.
    fn seal_at_staged_bytes(&self, staged_bytes_max: usize) -> Option<usize> {
        let share = self.seal_at_staged_share?;
        let share = if share.is_nan() {
            1.0
        } else {
            share.clamp(Self::SEAL_AT_STAGED_SHARE_MIN, 1.0)
        };
        // The share is within (0, 1], so the product is within [0, staged_bytes_max] and
        // the cast back cannot wrap; precision lost on a bound beyond 2^53 bytes moves the
        // trigger by less than a byte in 2^53.
        #[allow(
            clippy::cast_precision_loss,
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss
        )]
        let bytes = (share * staged_bytes_max as f64).ceil() as usize;
        Some(bytes.clamp(1, staged_bytes_max.max(1)))
    }
}

struct Feed {
    stream: String,
    batch: Batch,
    reply: oneshot::Sender<Result<(), EngineError>>,
}

/// What a publish hands the supervisor to stage, as the store's own calls take it.
enum Batch {
    Rows {
        position: u64,
        rows: Vec<Row>,
    },
    Columns {
        /// One position for every row, or one each.
        positions: Result<u64, Vec<u64>>,
        track: Vec<String>,
        columns: Vec<Column>,
    },
}

impl Batch {
    /// Stages the batch and answers `reply` with the store's verdict. A columnar batch is
    /// answered as soon as it is accepted (every check passed, room made under
    /// `staged_bytes_max`) and copied into staging after: nothing can refuse it by then, the
    /// copy comes before anything else the supervisor does, so no read or seal can tell the
    /// difference, and the caller goes on while the supervisor copies (docs/embedding.md).
    fn stage(
        &self,
        store: &mut Store,
        stream: &str,
        reply: oneshot::Sender<Result<(), EngineError>>,
    ) {
        match self {
            Batch::Rows { position, rows } => {
                let _ = reply.send(store.publish(stream, *position, rows));
            }
            Batch::Columns {
                positions,
                track,
                columns,
            } => {
                let track = strs(track);
                let positions = match positions {
                    Ok(position) => Positions::Same(*position),
                    Err(each) => Positions::Each(each),
                };
                Column::borrowed(columns, |columns| {
                    match store.accept_columns(stream, positions, &track, columns) {
                        Ok(accepted) => {
                            let _ = reply.send(Ok(()));
                            accepted.stage();
                        }
                        Err(refused) => {
                            let _ = reply.send(Err(refused));
                        }
                    }
                });
            }
        }
    }
}

type Reply<T> = oneshot::Sender<Result<T, BeneathWindow>>;

struct Span {
    stream: String,
    track: Vec<String>,
    start: Bound<u64>,
    end: Bound<u64>,
}

enum Command {
    Rows(Span, Reply<Vec<StoredRow>>),
    Buckets(Span, u64, Reply<Vec<FieldBuckets>>),
    Aggregate(Span, Aggregate, Reply<Vec<FieldStat>>),
    Seal(String, Vec<String>, Reply<Option<u64>>),
    Trim(String, u64, oneshot::Sender<Result<Trimmed, EngineError>>),
    /// Retires a selection; answers what was recorded and the selection's raw floor after.
    Retire(
        String,
        Retiring,
        oneshot::Sender<Result<(Swept, Option<u64>), EngineError>>,
    ),
    Sweep(oneshot::Sender<Result<Vec<Swept>, EngineError>>),
    Metrics(oneshot::Sender<Metrics>),
    Watermark(String, oneshot::Sender<Result<Option<u64>, EngineError>>),
    /// Runs a caller's read on a snapshot (`Served::read`); it answers through its own reply.
    Read(Box<dyn FnOnce(&Snapshot) -> Answer + Send>),
    Stop(oneshot::Sender<Result<(), EngineError>>),
}

/// A cloneable handle to a store served by a supervisor.
#[derive(Clone, Debug)]
pub struct Served {
    feed: mpsc::Sender<Feed>,
    commands: mpsc::Sender<Command>,
}

impl std::fmt::Debug for Feed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Feed")
            .field("stream", &self.stream)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for Command {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Command")
    }
}

impl Served {
    /// Hands `store` to a new supervisor and answers the handle to it.
    ///
    /// # Panics
    /// If the operating system refuses a thread or a runtime for the supervisor.
    pub fn spawn(store: Store, config: ServeConfig) -> Served {
        // A lane of 0 requests, or of more than a semaphore can count, panics in `channel`.
        let lane_max = config
            .lane_max
            .clamp(1, tokio::sync::Semaphore::MAX_PERMITS);
        let (feed, feed_rx) = mpsc::channel(lane_max);
        let (commands, commands_rx) = mpsc::channel(lane_max);
        let writer = Writer::spawn(config.writer_nice);
        std::thread::Builder::new()
            .name("strata-supervisor".into())
            .spawn(move || {
                // The blocking pool runs the readers.
                let blocking = config.readers_max.clamp(1, ServeConfig::READERS_MAX_LIMIT);
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_time()
                    .max_blocking_threads(blocking)
                    .build()
                    .expect("a single-threaded runtime for the supervisor");
                runtime.block_on(supervise(store, writer, feed_rx, commands_rx, &config));
            })
            .expect("a thread for the supervisor");
        Served { feed, commands }
    }

    /// Stops the supervisor: everything staged is sealed (a last barrier), the store is closed
    /// and its lock released, then this returns. Requests still queued behind the stop, and any
    /// made after it, answer `Unserved` (a publish or another stop: `EngineError::Stopped`).
    pub async fn stop(&self) -> Result<(), EngineError> {
        let (reply, answer) = oneshot::channel();
        let unserved = || EngineError::Stopped;
        self.commands
            .send(Command::Stop(reply))
            .await
            .map_err(|_| unserved())?;
        answer.await.map_err(|_| unserved())?
    }

    /// `Store::trim_to` on the served store: closes a barrier for everything staged first (as
    /// `seal` does, so that no staged row is left beneath the floor), then retires every row of
    /// `stream` at or below `horizon` (at most the watermark that barrier leaves) in one record.
    /// Reads beneath the floor then answer `BeneathWindow::Floor` (docs/retention.md).
    pub async fn trim_to(&self, stream: &str, horizon: u64) -> Result<Trimmed, EngineError> {
        let (reply, answer) = oneshot::channel();
        self.commands
            .send(Command::Trim(stream.to_owned(), horizon, reply))
            .await
            .map_err(|_| EngineError::Stopped)?;
        answer.await.map_err(|_| EngineError::Stopped)?
    }

    /// `Store::retire` on the served store: closes a barrier for everything staged first (as
    /// `trim_to` does: a retire is refused while rows are staged), then ends every partition of
    /// `stream` under `selection` in one record. Reads of them reaching beneath the floors it
    /// raises answer `BeneathWindow::Floor` (docs/retention.md).
    pub async fn retire(&self, stream: &str, selection: &[&str]) -> Result<Swept, EngineError> {
        let selection = selection.iter().map(|s| (*s).to_owned()).collect();
        Ok(self
            .retire_floor(stream.to_owned(), Retiring::Tracks(selection))
            .await?
            .0)
    }

    /// `Store::retire_all` on the served store, as [`Served::retire`] runs `Store::retire`.
    pub async fn retire_all(&self, stream: &str) -> Result<Swept, EngineError> {
        Ok(self.retire_floor(stream.to_owned(), Retiring::All).await?.0)
    }

    async fn retire_floor(
        &self,
        stream: String,
        what: Retiring,
    ) -> Result<(Swept, Option<u64>), EngineError> {
        let (reply, answer) = oneshot::channel();
        self.commands
            .send(Command::Retire(stream, what, reply))
            .await
            .map_err(|_| EngineError::Stopped)?;
        answer.await.map_err(|_| EngineError::Stopped)?
    }

    /// `Store::sweep` on the served store: applies the configured retention once (compaction
    /// steps sweep too; this is the sweep alone).
    pub async fn sweep(&self) -> Result<Vec<Swept>, EngineError> {
        let (reply, answer) = oneshot::channel();
        self.commands
            .send(Command::Sweep(reply))
            .await
            .map_err(|_| EngineError::Stopped)?;
        answer.await.map_err(|_| EngineError::Stopped)?
    }

    /// `Store::metrics` of the served store, once every feed ready before it is staged.
    /// `Metrics::size_barriers` counts the barriers the size trigger closed
    /// ([`ServeConfig::seal_at_staged_share`]).
    pub async fn metrics(&self) -> Result<Metrics, EngineError> {
        let (reply, answer) = oneshot::channel();
        self.commands
            .send(Command::Metrics(reply))
            .await
            .map_err(|_| EngineError::Stopped)?;
        answer.await.map_err(|_| EngineError::Stopped)
    }

    /// Runs `read` on a snapshot of the store's current version, in the supervisor's pool of
    /// readers (at most [`ServeConfig::readers_max`] at once), and answers what it returns:
    /// several reads that must agree (a watermark and the rows beneath it, a survey and a
    /// fold) answer from one version, never a mix of two. The snapshot sees what barriers made
    /// durable up to the moment the read was taken from the lane (not rows staged, nor a
    /// barrier still in flight), and waits for none of them: files the store retires
    /// meanwhile stay until the read is done. `EngineError::Stopped` if the supervisor is
    /// gone, before or during the read, and also if `read` panics (its reply is dropped; the
    /// store goes on serving). `read` must not wait for another read of this `Served`: with
    /// every reader so held, none is left to answer it.
    ///
    /// ```no_run
    /// # async fn example(served: strata_engine::Served) -> Result<(), strata_engine::EngineError> {
    /// let (watermark, rows) = served
    ///     .read(|snapshot| {
    ///         let watermark = snapshot.watermark("s", &[])?;
    ///         Ok::<_, strata_engine::EngineError>((watermark, snapshot.query("s", &[], ..)?))
    ///     })
    ///     .await??;
    /// # let _ = (watermark, rows);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn read<T, F>(&self, read: F) -> Result<T, EngineError>
    where
        T: Send + 'static,
        F: FnOnce(&Snapshot) -> T + Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let read: Box<dyn FnOnce(&Snapshot) -> Answer + Send> =
            Box::new(move |snapshot: &Snapshot| {
                let value = read(snapshot);
                Box::new(move || {
                    let _ = reply.send(value);
                }) as Answer
            });
        self.commands
            .send(Command::Read(read))
            .await
            .map_err(|_| EngineError::Stopped)?;
        answer.await.map_err(|_| EngineError::Stopped)
    }

    /// Stages `rows` of `stream` at `position` (durable after the next barrier), as
    /// `Store::publish` does, with its refusals; a refused batch stages nothing. Waits while the
    /// lane is full (at most [`ServeConfig::lane_max`] publishes queued), never while a barrier
    /// is written.
    pub async fn publish(
        &self,
        stream: &str,
        position: u64,
        rows: Vec<Row>,
    ) -> Result<(), EngineError> {
        self.feed(stream, Batch::Rows { position, rows }).await
    }

    /// Stages a batch given as columns, as `Store::publish_columns` does, with its refusals
    /// (the same error, row and reason as the rows would get); a refused batch stages nothing.
    /// The supervisor stages the columns as they are: no `Value` a row. `track` holds the
    /// track fields' labels, once for the batch, as a selection names them; `columns` every other field's, in
    /// declaration order.
    pub async fn publish_columns(
        &self,
        stream: &str,
        position: u64,
        track: &[&str],
        columns: Vec<Column>,
    ) -> Result<(), EngineError> {
        let batch = Batch::Columns {
            positions: Ok(position),
            track: track.iter().map(|&label| label.to_owned()).collect(),
            columns,
        };
        self.feed(stream, batch).await
    }

    /// As [`Served::publish_columns`] with a position per row (`Store::publish_columns_at`).
    pub async fn publish_columns_at(
        &self,
        stream: &str,
        positions: Vec<u64>,
        track: &[&str],
        columns: Vec<Column>,
    ) -> Result<(), EngineError> {
        let batch = Batch::Columns {
            positions: Err(positions),
            track: track.iter().map(|&label| label.to_owned()).collect(),
            columns,
        };
        self.feed(stream, batch).await
    }

    async fn feed(&self, stream: &str, batch: Batch) -> Result<(), EngineError> {
        let (reply, answer) = oneshot::channel();
        let feed = Feed {
            stream: stream.to_owned(),
            batch,
            reply,
        };
        let unserved = || EngineError::Stopped;
        self.feed.send(feed).await.map_err(|_| unserved())?;
        answer.await.map_err(|_| unserved())?
    }

    /// The position through which `stream` is durable (`None`: nothing yet), as the last
    /// barrier that landed left it: asked of the supervisor, costing no barrier and no reader
    /// (`Series::seal` answers it too, but closes a barrier first when rows are staged).
    pub async fn watermark(&self, stream: &str) -> Result<Option<u64>, EngineError> {
        let (reply, answer) = oneshot::channel();
        self.commands
            .send(Command::Watermark(stream.to_owned(), reply))
            .await
            .map_err(|_| EngineError::Stopped)?;
        answer.await.map_err(|_| EngineError::Stopped)?
    }

    /// Durable rows of `stream` under `selection` with positions in `positions`, in publish
    /// order: `Store::query`, on a snapshot in the supervisor's pool of readers
    /// ([`Served::read`]).
    pub async fn query(
        &self,
        stream: &str,
        selection: &[&str],
        positions: impl RangeBounds<u64>,
    ) -> Result<Vec<StoredRow>, EngineError> {
        let (stream, selection, range) = owned(stream, selection, &positions);
        self.read(move |snapshot| snapshot.query(&stream, &strs(&selection), range))
            .await?
    }

    /// `Store::survey` (a display read of at most `budget` points), on a snapshot in the pool
    /// of readers.
    pub async fn survey(
        &self,
        stream: &str,
        selection: &[&str],
        axis: impl RangeBounds<u64>,
        budget: u64,
    ) -> Result<Survey, EngineError> {
        let (stream, selection, range) = owned(stream, selection, &axis);
        self.read(move |snapshot| snapshot.survey(&stream, &strs(&selection), range, budget))
            .await?
    }

    /// `Store::fold` (a statistic per measured field), on a snapshot in the pool of readers.
    pub async fn fold(
        &self,
        stream: &str,
        selection: &[&str],
        axis: impl RangeBounds<u64>,
        aggregate: Aggregate,
    ) -> Result<Vec<FieldStat>, EngineError> {
        let (stream, selection, range) = owned(stream, selection, &axis);
        self.read(move |snapshot| snapshot.fold(&stream, &strs(&selection), range, aggregate))
            .await?
    }

    async fn ask<T>(&self, command: impl FnOnce(Reply<T>) -> Command) -> Result<T, BeneathWindow> {
        let (reply, answer) = oneshot::channel();
        self.commands
            .send(command(reply))
            .await
            .map_err(|_| BeneathWindow::Unserved)?;
        answer.await.map_err(|_| BeneathWindow::Unserved)?
    }
}

/// A read's arguments owned, for the reader it is handed to.
fn owned(
    stream: &str,
    selection: &[&str],
    range: &impl RangeBounds<u64>,
) -> (String, Vec<String>, (Bound<u64>, Bound<u64>)) {
    (
        stream.to_owned(),
        selection.iter().map(|&label| label.to_owned()).collect(),
        (range.start_bound().cloned(), range.end_bound().cloned()),
    )
}

fn strs(labels: &[String]) -> Vec<&str> {
    labels.iter().map(String::as_str).collect()
}

fn span(stream: &str, track: &[String], start: Bound<u64>, end: Bound<u64>) -> Span {
    Span {
        stream: stream.to_owned(),
        track: track.to_vec(),
        start,
        end,
    }
}

impl Series for Served {
    async fn publish(
        &mut self,
        stream: &str,
        position: u64,
        rows: Vec<Row>,
    ) -> Result<(), EngineError> {
        Served::publish(self, stream, position, rows).await
    }

    async fn rows(
        &mut self,
        stream: &str,
        track: &[String],
        start: Bound<u64>,
        end: Bound<u64>,
    ) -> Result<Vec<StoredRow>, BeneathWindow> {
        let span = span(stream, track, start, end);
        self.ask(|reply| Command::Rows(span, reply)).await
    }

    async fn buckets(
        &mut self,
        stream: &str,
        track: &[String],
        start: Bound<u64>,
        end: Bound<u64>,
        budget: u64,
    ) -> Result<Vec<FieldBuckets>, BeneathWindow> {
        let span = span(stream, track, start, end);
        self.ask(|reply| Command::Buckets(span, budget, reply))
            .await
    }

    async fn aggregate(
        &mut self,
        stream: &str,
        track: &[String],
        start: Bound<u64>,
        end: Bound<u64>,
        kind: Aggregate,
    ) -> Result<Vec<FieldStat>, BeneathWindow> {
        let span = span(stream, track, start, end);
        self.ask(|reply| Command::Aggregate(span, kind, reply))
            .await
    }

    async fn seal(&mut self, stream: &str, track: &[String]) -> Result<Option<u64>, BeneathWindow> {
        let (stream, track) = (stream.to_owned(), track.to_vec());
        self.ask(|reply| Command::Seal(stream, track, reply)).await
    }

    async fn trim_to(&mut self, stream: &str, horizon: u64) -> Result<Option<u64>, BeneathWindow> {
        let trimmed = Served::trim_to(self, stream, horizon).await?;
        Ok(trimmed.floors.iter().map(|(_, f)| f.position).max())
    }

    async fn retire(
        &mut self,
        stream: &str,
        track: &[String],
    ) -> Result<Option<u64>, BeneathWindow> {
        let (_, floor) = self
            .retire_floor(stream.to_owned(), Retiring::Series(track.to_vec()))
            .await?;
        Ok(floor)
    }
}

/// The store itself, unserved: each call runs on the caller's task (a barrier's syncs block
/// it). What `Served` answers, the same way.
impl Series for Store {
    async fn publish(
        &mut self,
        stream: &str,
        position: u64,
        rows: Vec<Row>,
    ) -> Result<(), EngineError> {
        Store::publish(self, stream, position, &rows)
    }

    async fn rows(
        &mut self,
        stream: &str,
        track: &[String],
        start: Bound<u64>,
        end: Bound<u64>,
    ) -> Result<Vec<StoredRow>, BeneathWindow> {
        let track: Vec<&str> = track.iter().map(String::as_str).collect();
        Ok(or_nothing(
            self.query(stream, &track, (start, end)),
            Vec::new,
        )?)
    }

    async fn buckets(
        &mut self,
        stream: &str,
        track: &[String],
        start: Bound<u64>,
        end: Bound<u64>,
        budget: u64,
    ) -> Result<Vec<FieldBuckets>, BeneathWindow> {
        let track: Vec<&str> = track.iter().map(String::as_str).collect();
        let answer = self.survey(stream, &track, (start, end), budget);
        Ok(or_nothing(answer.map(|survey| survey.fields), || {
            no_buckets(self.stream(stream))
        })?)
    }

    async fn aggregate(
        &mut self,
        stream: &str,
        track: &[String],
        start: Bound<u64>,
        end: Bound<u64>,
        kind: Aggregate,
    ) -> Result<Vec<FieldStat>, BeneathWindow> {
        let track: Vec<&str> = track.iter().map(String::as_str).collect();
        let answer = self.fold(stream, &track, (start, end), kind);
        Ok(or_nothing(answer, || no_stats(self.stream(stream), kind))?)
    }

    async fn seal(&mut self, stream: &str, track: &[String]) -> Result<Option<u64>, BeneathWindow> {
        let track: Vec<&str> = track.iter().map(String::as_str).collect();
        Store::seal(self)?;
        Ok(self.watermark(stream, &track)?)
    }

    async fn trim_to(&mut self, stream: &str, horizon: u64) -> Result<Option<u64>, BeneathWindow> {
        Ok(seal_and_trim(self, stream, horizon)?
            .floors
            .iter()
            .map(|(_, f)| f.position)
            .max())
    }

    async fn retire(
        &mut self,
        stream: &str,
        track: &[String],
    ) -> Result<Option<u64>, BeneathWindow> {
        Ok(seal_and_retire(self, stream, &Retiring::Series(track.to_vec()))?.1)
    }
}

/// Closes a barrier for everything staged, then trims: what `Served::trim_to` runs.
fn seal_and_trim(store: &mut Store, stream: &str, horizon: u64) -> Result<Trimmed, EngineError> {
    Store::seal(store)?;
    Store::trim_to(store, stream, horizon)
}

/// What a retirement ends.
enum Retiring {
    /// The tracks under a selection (`Store::retire`).
    Tracks(Vec<String>),
    /// Every track (`Store::retire_all`).
    All,
    /// What `Series::retire` names: every track for an empty selection, and a selection with
    /// nothing live (or nothing ever sealed) ends nothing and answers its floor, since a host's
    /// tracks are typed and such a selection is no typo.
    Series(Vec<String>),
}

/// Closes a barrier for everything staged, then retires: what `Served::retire` and
/// `Served::retire_all` run. Answers the record and the selection's raw floor (by position)
/// after.
fn seal_and_retire(
    store: &mut Store,
    stream: &str,
    what: &Retiring,
) -> Result<(Swept, Option<u64>), EngineError> {
    Store::seal(store)?;
    let (swept, track) = match what {
        Retiring::Tracks(track) => (
            Store::retire(store, stream, &strs(track))?,
            track.as_slice(),
        ),
        Retiring::All => (Store::retire_all(store, stream)?, &[][..]),
        Retiring::Series(track) => {
            let retired = if track.is_empty() {
                Store::retire_all(store, stream)
            } else {
                Store::retire(store, stream, &strs(track))
            };
            let swept = match retired {
                Ok(swept) => swept,
                Err(EngineError::NothingToRetire { .. } | EngineError::UnknownTrack { .. }) => {
                    Swept::nothing(stream)
                }
                Err(error) => return Err(error),
            };
            (swept, track.as_slice())
        }
    };
    let prefix = store.selection_key(stream, &strs(track))?;
    Ok((swept, store.raw_floor(stream, &prefix, false)))
}

/// The supervisor's loop: stage feeds first, answer commands, seal on the ticker and the size
/// trigger, and compact in a bounded slice of each barrier.
///
/// **Nothing queues behind an fsync.** A barrier is sealed off in memory (`Store::seal_off`)
/// and written by the writer thread (`Writer`, at `writer_nice`) while the loop goes on: feeds are staged into the
/// emptied staging, and reads run on snapshots of the current catalog version in a pool of at
/// most `readers_max` blocking tasks, so neither waits for the barrier's syncs. One barrier is
/// in flight at a time (still one writer, barriers in order); its acknowledgement swaps in the
/// version that claims it and answers the seals waiting on it. Memory stays bounded: one
/// barrier in flight and one staging buffer; once staging reaches the size trigger while a
/// barrier is in flight, feeds wait in their lane (back-pressure, counted in
/// `Metrics::backpressure_waits`) until it lands. A compaction step is written by the same
/// worker (`Store::start_compaction` picks it here, `Merging::run` merges, writes and claims
/// it there), one write in flight at a time: a barrier waits for a step in flight and a step
/// for a barrier. Every other write (trim, retire, sweep, the stop, and a step's sweep when
/// retention is due) waits for the write in flight, then runs on the loop.
///
/// Each barrier (a tick, the size trigger or a `seal`) grants `compact_steps_per_tick`
/// compaction steps once it lands. A granted step runs at the lowest priority when nothing is
/// ready, and otherwise **alternates** with the requests: after any turn that was not a step
/// (a feed, a command or a barrier) the next turn is a step if one is still granted, ahead of
/// whatever is waiting. So:
///
/// - compaction cannot be starved: under traffic with no idle moment, a barrier's grant is used
///   within the next `compact_steps_per_tick` requests;
/// - it stays bounded: at most one step is in flight between two writes asked for, so a seal,
///   trim or retire waits for at most one step (a tick's barrier waits for the grant), and a
///   read or a publish for none (a publish held by back-pressure waits for the write in
///   flight, and for the barrier after it); the steps between two
///   barriers are at most one grant;
/// - idle moments are still preferred: with nothing waiting the grant runs back to back, and a
///   write asked meanwhile waits for the one step in flight.
///
/// Grants do not accumulate past one barrier's worth, and a tick grants steps even when it has
/// nothing to seal, so a store left alone catches up. (A step whose policy finds nothing, or
/// that fails, ends the grant. A failed write poisons the store and the next request hears
/// it; a failed read of an input leaves the store as it was, and the next pick moves on.)
async fn supervise(
    store: Store,
    writer: Writer,
    mut feed: mpsc::Receiver<Feed>,
    mut commands: mpsc::Receiver<Command>,
    config: &ServeConfig,
) {
    let mut sup = Supervisor::new(store, writer, config);
    // Whether the last turn of the loop was a compaction step: if not, a granted step goes
    // first on this turn, ahead of anything waiting (the interleaving above).
    let mut stepped = false;
    let mut ticker = config.seal_interval.map(|period| {
        // A zero period panics in `interval_at` (the supervisor died, and every handle heard
        // only that it had stopped); one past the clock's range panics adding it to now.
        let period = period.clamp(
            ServeConfig::SEAL_INTERVAL_MIN,
            ServeConfig::SEAL_INTERVAL_MAX,
        );
        let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        ticker
    });
    loop {
        let idle_writer = sup.in_flight.is_none();
        let step_owed = idle_writer && sup.steps_granted > 0 && !stepped;
        stepped = false;
        let take_feeds = sup.takes_feeds();
        // A command is taken while there is room to hold it: a read waiting for a reader, a
        // write waiting for the write in flight. Otherwise commands wait in their lane.
        let take_commands =
            sup.queued_reads.len() < sup.deferred_max && sup.deferred.len() < sup.deferred_max;
        let reserve = sup.spare.is_none();
        // Removals wait for the write in flight too: nothing but the worker writes meanwhile.
        let removals_wait = idle_writer && sup.store.removals_pending() > 0;
        tokio::select! {
            biased;
            done = landed(sup.in_flight.as_mut()) => {
                // A step landing counts as the step's turn: what waits goes next.
                stepped = sup.land(done);
            }
            permit = Arc::clone(&sup.reads).acquire_owned(), if reserve => {
                // A reader is free again: the oldest read waiting takes it, or the next.
                sup.spare = permit.ok();
                if let Some(read) = sup.queued_reads.pop_front() {
                    sup.read(read);
                }
            }
            () = sup.read_done.notified(), if removals_wait => {
                // A read let go of its snapshot: files retired under it may go now
                // (`resume` hands them to the worker).
            }
            () = std::future::ready(()), if step_owed => {
                sup.compact_one();
                stepped = true;
            }
            item = feed.recv(), if take_feeds => match item {
                Some(item) => sup.stage(item),
                // Both lanes' senders live in every handle: one lane closed means every
                // handle is gone.
                None => return drop(sup.stop(&mut feed).await),
            },
            command = commands.recv(), if take_commands => {
                let Some(command) = command else {
                    return drop(sup.stop(&mut feed).await);
                };
                // Delivery has priority: a read is answered only after every ready feed
                // (while staging has room: past it, the feeds wait for the barrier).
                while sup.takes_feeds() {
                    let Ok(item) = feed.try_recv() else { break };
                    sup.stage(item);
                }
                if let Command::Stop(reply) = command {
                    let sealed = sup.stop(&mut feed).await;
                    let _ = reply.send(sealed);
                    return;
                }
                sup.command(command);
            }
            () = tick(ticker.as_mut()) => {
                if sup.in_flight.is_some() || sup.steps_granted > 0 {
                    // The write in flight, or the last barrier's compaction grant, goes
                    // first; the tick's barrier starts once both are done (`resume`), so
                    // that a cadence shorter than a barrier cannot starve compaction.
                    sup.tick_owed = true;
                } else {
                    sup.start_barrier(Trigger::Tick, Vec::new());
                }
            }
            () = std::future::ready(()), if idle_writer && sup.steps_granted > 0 => {
                // Idle: nothing is waiting, so the grant runs on.
                sup.compact_one();
                stepped = true;
            }
        }
        sup.resume(stepped);
        if !sup.paused && !sup.takes_feeds() {
            sup.paused = true;
            writer!(sup.store).metrics.backpressure_waits += 1;
        } else if sup.takes_feeds() {
            sup.paused = false;
        }
    }
}

/// What closed a barrier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Trigger {
    Tick,
    Size,
    Asked,
}

/// What a worker wrote: a barrier, a compaction step, or the removal of retired files.
enum Done {
    Barrier(Sealed),
    Merge(MergeDone),
    Removed(Result<(), EngineError>),
}

/// The write in flight on the worker: a barrier (with what closed it and the seals waiting
/// for it) or a compaction step (`trigger` `None`, no seals).
struct InFlight {
    worker: oneshot::Receiver<Done>,
    trigger: Option<Trigger>,
    waiting: Vec<(String, Vec<String>, Reply<Option<u64>>)>,
    /// Reads started while this barrier was in flight: counted in
    /// `Metrics::reads_during_barriers` when it lands, with the barrier itself, so the two
    /// counters never disagree (reads during a barrier that metrics do not count yet).
    reads: u64,
}

/// The thread that writes for the supervisor (barriers, compaction steps, removals), one
/// job at a time, at a lower CPU priority than the host's threads (`ServeConfig::writer_nice`)
/// so that a read or a publish is not kept off a core by a barrier being encoded.
struct Writer {
    jobs: std::sync::mpsc::Sender<Box<dyn FnOnce() + Send>>,
}

impl Writer {
    /// # Panics
    /// If the operating system refuses a thread (as `Served::spawn` documents).
    fn spawn(nice: i32) -> Writer {
        let (jobs, queue) = std::sync::mpsc::channel::<Box<dyn FnOnce() + Send>>();
        std::thread::Builder::new()
            .name("strata-writer".into())
            .spawn(move || {
                lower_priority(nice);
                for job in queue {
                    // A job that panics drops its reply, and the supervisor poisons the
                    // store; the thread goes on for the jobs after it (which hear poison).
                    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
                }
            })
            .expect("a thread for the supervisor's writes");
        Writer { jobs }
    }

    /// Runs `write` on the thread and answers its outcome (an error if it panicked).
    fn run(&self, write: impl FnOnce() -> Done + Send + 'static) -> oneshot::Receiver<Done> {
        let (reply, done) = oneshot::channel();
        // A send fails only if the thread is gone; the dropped reply then says so.
        let _ = self.jobs.send(Box::new(move || {
            let _ = reply.send(write());
        }));
        done
    }
}

/// Raises the calling thread's nice value by `nice` (clamped to 0..=19; 0: unchanged). Best
/// effort: raising it needs no privilege on Linux, and where it is refused the writes run at
/// the host's priority, only with less headroom for reads.
fn lower_priority(nice: i32) {
    let nice = nice.clamp(0, 19);
    if nice == 0 {
        return;
    }
    #[cfg(target_os = "linux")]
    {
        // On Linux a thread's nice value is its own: `setpriority` of its thread id.
        let tid = rustix::thread::gettid();
        if let Ok(now) = rustix::process::getpriority_process(Some(tid)) {
            let _ = rustix::process::setpriority_process(Some(tid), (now + nice).min(19));
        }
    }
}

struct Supervisor {
    store: Store,
    writer: Writer,
    in_flight: Option<InFlight>,
    /// Writes that arrived while a barrier was in flight, in order: run once it lands.
    deferred: VecDeque<Command>,
    deferred_max: usize,
    /// One permit per read running; `readers_max` in all.
    reads: Arc<Semaphore>,
    /// A reader reserved for the next read, waited for by a branch of its own (so a read
    /// finishing wakes the loop).
    spare: Option<OwnedSemaphorePermit>,
    /// Reads taken from the lane while every reader was busy, in order: each starts as a
    /// reader frees. Bounded like `deferred`; past it, commands wait in their lane. Seals,
    /// stops and metrics never wait behind them.
    queued_reads: VecDeque<Command>,
    /// Told by each read once its snapshot is dropped, so that files waiting for it go.
    read_done: Arc<Notify>,
    readers_max: usize,
    steps_granted: usize,
    steps_per_barrier: usize,
    /// A tick came while a barrier was in flight: the next starts when it lands.
    tick_owed: bool,
    /// Whether feeds are held in their lane (counted once each time they start waiting).
    paused: bool,
    seal_at: Option<usize>,
}

/// The barrier in flight's outcome, once its worker is done; pending with none in flight.
async fn landed(in_flight: Option<&mut InFlight>) -> Result<Done, oneshot::error::RecvError> {
    match in_flight {
        Some(in_flight) => (&mut in_flight.worker).await,
        None => std::future::pending().await,
    }
}

impl Supervisor {
    /// The supervisor of `store`, writing through `writer`, as `config` says.
    fn new(store: Store, writer: Writer, config: &ServeConfig) -> Supervisor {
        let seal_at = config.seal_at_staged_bytes(store.config.staged_bytes_max);
        let readers_max = config.readers_max.clamp(1, ServeConfig::READERS_MAX_LIMIT);
        let mut store = store;
        // Retired files are removed by the worker, never on the supervisor's thread.
        writer!(store).defer_removals = true;
        let read_done = Arc::new(Notify::new());
        // Any snapshot let go wakes the loop, one a read handed out included.
        let wake = Arc::clone(&read_done);
        store.pins.on_release(move || wake.notify_one());
        Supervisor {
            store,
            writer,
            in_flight: None,
            deferred: VecDeque::new(),
            deferred_max: config.lane_max.max(1),
            reads: Arc::new(Semaphore::new(readers_max)),
            spare: None,
            queued_reads: VecDeque::new(),
            read_done,
            readers_max,
            steps_granted: 0,
            steps_per_barrier: config.compact_steps_per_tick,
            tick_owed: false,
            paused: false,
            seal_at,
        }
    }

    /// Whether the loop takes feeds: always but while a barrier is in flight and staging has
    /// reached the size trigger behind it (the two buffers the bound allows are full).
    fn takes_feeds(&self) -> bool {
        match (self.seal_at, &self.in_flight) {
            (Some(seal_at), Some(_)) => self.store.staged_bytes() < seal_at,
            _ => true,
        }
    }

    /// Staging touches no file: the supervisor is back in its loop in microseconds. Then the
    /// size trigger: once staging reaches it with no barrier in flight, one starts.
    fn stage(&mut self, item: Feed) {
        item.batch.stage(&mut self.store, &item.stream, item.reply);
        self.size_trigger();
    }

    fn size_trigger(&mut self) {
        if self.in_flight.is_none()
            && let Some(seal_at) = self.seal_at
            && self.store.staged_bytes() >= seal_at
        {
            self.start_barrier(Trigger::Size, Vec::new());
        }
    }

    /// Seals off what is staged and hands it to a worker; with nothing staged (or a store
    /// that refuses to seal), answers the seals `waiting` at once. A tick grants compaction
    /// steps even when it has nothing to seal.
    fn start_barrier(
        &mut self,
        trigger: Trigger,
        waiting: Vec<(String, Vec<String>, Reply<Option<u64>>)>,
    ) {
        debug_assert!(self.in_flight.is_none(), "one barrier in flight at a time");
        match self.store.try_seal_off() {
            Ok(Some(sealing)) => {
                let worker = self.writer.run(move || Done::Barrier(sealing.run()));
                self.in_flight = Some(InFlight {
                    worker,
                    trigger: Some(trigger),
                    waiting,
                    reads: 0,
                });
            }
            outcome => {
                let outcome = outcome.map(|_| ());
                self.answer_seals(&outcome, waiting);
                if trigger == Trigger::Tick {
                    self.steps_granted = self.steps_per_barrier;
                }
            }
        }
    }

    /// The barrier in flight landed: its version is swapped in (or the store poisoned), the
    /// seals waiting on it answered, compaction granted, and the writes deferred behind it
    /// run, until one of them starts the next barrier.
    /// Answers whether it was a compaction step.
    fn land(&mut self, done: Result<Done, oneshot::error::RecvError>) -> bool {
        let in_flight = self
            .in_flight
            .take()
            .expect("a write landed: one was in flight");
        let outcome = match done {
            Ok(Done::Barrier(sealed)) => self
                .store
                .finish_barrier(sealed)
                .and_then(|()| self.store.maybe_rewrite_manifest()),
            Ok(Done::Removed(removed)) => {
                // A failure poisons the store; the next request hears about it.
                let _ = self.store.finish_removals(removed);
                return true;
            }
            Ok(Done::Merge(merged)) => {
                // Nothing merged, or a failure (which poisons the store, and the next request
                // hears about it): no more steps until the next barrier.
                self.steps_granted = match self.store.finish_compaction(merged) {
                    Ok(Some(_)) => self.steps_granted.saturating_sub(1),
                    Ok(None) | Err(_) => 0,
                };
                return true;
            }
            Err(_) => {
                // The write panicked, and the manifest's writer it held is lost with it: the
                // store is poisoned, and nothing is in flight any more.
                writer!(self.store).sealing = false;
                Err(self.store.poison(EngineError::Internal {
                    reason: "the writer thread's write panicked".to_owned(),
                }))
            }
        };
        if outcome.is_ok() {
            writer!(self.store).metrics.reads_during_barriers += in_flight.reads;
            if in_flight.trigger == Some(Trigger::Size) {
                writer!(self.store).metrics.size_barriers += 1;
            }
        }
        self.answer_seals(&outcome, in_flight.waiting);
        if in_flight.trigger.is_some() {
            self.steps_granted = self.steps_per_barrier;
        }
        in_flight.trigger.is_none()
    }

    /// With no barrier in flight and the step a landed barrier owes taken (or none granted):
    /// runs the writes deferred behind it, in order, until one starts the next barrier; then
    /// the tick owed and the size trigger. So a barrier is followed by a compaction step
    /// before anything else writes, and a cadence shorter than a barrier cannot starve
    /// compaction.
    fn resume(&mut self, stepped: bool) {
        if self.in_flight.is_some() || !(stepped || self.steps_granted == 0) {
            return;
        }
        // Retired files no snapshot reads any more go first: the worker unlinks them and
        // syncs `seg/`, one write like the others.
        if self.store.removals_due() {
            let names = self.store.take_due_removals();
            let vfs = Arc::clone(&self.store.vfs);
            let worker = self
                .writer
                .run(move || Done::Removed(remove_segments(vfs.as_ref(), &names)));
            self.in_flight = Some(InFlight {
                worker,
                trigger: None,
                waiting: Vec::new(),
                reads: 0,
            });
            return;
        }
        while self.in_flight.is_none() {
            let Some(command) = self.deferred.pop_front() else {
                break;
            };
            self.write(command);
        }
        // Seals deferred right behind the one that started this barrier arrived before it
        // was sealed off, with their rows staged (feeds go first): it answers them too, rather
        // than one barrier each.
        if let Some(in_flight) = self.in_flight.as_mut() {
            while let Some(Command::Seal(..)) = self.deferred.front() {
                if let Some(Command::Seal(stream, track, reply)) = self.deferred.pop_front() {
                    in_flight.waiting.push((stream, track, reply));
                }
            }
        }
        if self.in_flight.is_none() && self.steps_granted == 0 && self.tick_owed {
            self.tick_owed = false;
            self.start_barrier(Trigger::Tick, Vec::new());
        }
        self.size_trigger();
    }

    fn answer_seals(
        &self,
        outcome: &Result<(), EngineError>,
        waiting: Vec<(String, Vec<String>, Reply<Option<u64>>)>,
    ) {
        for (stream, track, reply) in waiting {
            let track: Vec<&str> = track.iter().map(String::as_str).collect();
            let answer = match outcome {
                Ok(()) => self.store.watermark(&stream, &track),
                Err(error) => Err(error.duplicate()),
            };
            let _ = reply.send(answer.map_err(Into::into));
        }
    }

    /// Starts one granted compaction step on the worker: the pick (and a sweep, if one is
    /// due) here, the merge, its writes and its record there. Nothing left to merge, or a
    /// failure (which poisons the store, and the next request hears about it): no more steps
    /// until the next barrier.
    fn compact_one(&mut self) {
        debug_assert!(self.in_flight.is_none(), "one write in flight at a time");
        match self.store.start_compaction() {
            Ok(Some(merging)) => {
                let worker = self.writer.run(move || Done::Merge(merging.run()));
                self.in_flight = Some(InFlight {
                    worker,
                    trigger: None,
                    waiting: Vec::new(),
                    reads: 0,
                });
            }
            Ok(None) | Err(_) => self.steps_granted = 0,
        }
    }

    /// Answers a command: a read on a snapshot in the pool, a write now or (a barrier being
    /// in flight) once it lands. A stop is the loop's own.
    fn command(&mut self, command: Command) {
        match command {
            Command::Rows(..)
            | Command::Buckets(..)
            | Command::Aggregate(..)
            | Command::Read(_) => {
                if self.spare.is_some() && self.queued_reads.is_empty() {
                    self.read(command);
                } else {
                    self.queued_reads.push_back(command);
                }
            }
            Command::Metrics(reply) => {
                let _ = reply.send(self.store.metrics());
            }
            Command::Watermark(stream, reply) => {
                let _ = reply.send(self.store.watermark(&stream, &[]));
            }
            Command::Stop(_) => unreachable!("the loop stops"),
            write if self.in_flight.is_some() || !self.deferred.is_empty() => {
                self.deferred.push_back(write);
            }
            write => self.write(write),
        }
    }

    /// A write, with no barrier in flight.
    fn write(&mut self, command: Command) {
        let store = &mut self.store;
        match command {
            Command::Seal(stream, track, reply) => {
                self.start_barrier(Trigger::Asked, vec![(stream, track, reply)]);
            }
            Command::Trim(stream, horizon, reply) => {
                let _ = reply.send(seal_and_trim(store, &stream, horizon));
                self.steps_granted = self.steps_per_barrier;
            }
            Command::Retire(stream, what, reply) => {
                let _ = reply.send(seal_and_retire(store, &stream, &what));
                self.steps_granted = self.steps_per_barrier;
            }
            Command::Sweep(reply) => {
                let _ = reply.send(store.sweep());
            }
            Command::Rows(..)
            | Command::Buckets(..)
            | Command::Aggregate(..)
            | Command::Read(_)
            | Command::Metrics(_)
            | Command::Watermark(..)
            | Command::Stop(_) => unreachable!("answered by `command`"),
        }
    }

    /// Runs a read on a snapshot of the current version in the pool (a permit is free: the
    /// loop takes a command only then), so that it waits for no barrier and no other read.
    fn read(&mut self, command: Command) {
        let snapshot = self.store.snapshot();
        let permit = self
            .spare
            .take()
            .expect("a command is taken only with a reader free");
        if let Some(in_flight) = self
            .in_flight
            .as_mut()
            .filter(|in_flight| in_flight.trigger.is_some())
        {
            in_flight.reads += 1;
        }
        let guard = ReadGuard {
            snapshot: Some(snapshot),
            _permit: permit,
            read_done: Arc::clone(&self.read_done),
        };
        tokio::task::spawn_blocking(move || {
            let answer = guard
                .snapshot
                .as_ref()
                .map(|snapshot| answer_read(snapshot, command));
            // The snapshot goes, then the wake-up, then the reader, and only then is the
            // answer sent: a caller who has heard back holds no snapshot.
            drop(guard);
            if let Some(answer) = answer {
                answer();
            }
        });
    }

    /// Stops: the barrier in flight lands (and the writes deferred behind it run), a last
    /// barrier closes for everything staged, reads in progress finish, then the store (and
    /// its lock) is let go; answers the last barrier's outcome. What a `stop` runs, and what
    /// runs once every handle is gone.
    ///
    /// Not a `select!` `else`: that runs only once every branch is disabled, and the ticker's
    /// branch never is (with no ticker it is pending, not disabled), so a supervisor whose
    /// handles were all dropped without a `stop` went on forever, holding the store's lock.
    async fn stop(mut self, feed: &mut mpsc::Receiver<Feed>) -> Result<(), EngineError> {
        // The feeds in the lane now were sent before the stop (or with it): staged, as
        // delivery goes first, with barriers as the size trigger asks. Only those: a host
        // that goes on publishing cannot keep the stop from ending.
        let mut feeds_before = feed.len();
        loop {
            if self.in_flight.is_some() {
                let done = landed(self.in_flight.as_mut()).await;
                self.land(done);
            }
            // No step before the stop's barrier: the deferred writes run now.
            self.resume(true);
            if self.in_flight.is_some() || !self.deferred.is_empty() {
                continue;
            }
            if feeds_before == 0 {
                break;
            }
            let Ok(item) = feed.try_recv() else { break };
            feeds_before -= 1;
            self.stage(item);
        }
        // Reads taken from the lane before the stop are answered, not dropped, and from the
        // state before its last barrier, as if they had found a reader free.
        while let Some(read) = self.queued_reads.pop_front() {
            if self.spare.is_none() {
                self.spare = Arc::clone(&self.reads).acquire_owned().await.ok();
            }
            if self.spare.is_none() {
                break;
            }
            self.read(read);
        }
        let sealed = self.store.seal().map(|_| ());
        drop(self.spare.take());
        let _ = self.reads.acquire_many(permits(self.readers_max)).await;
        // The reads are over: what they held may go, here (a failure is boot's to heal).
        writer!(self.store).defer_removals = false;
        let _ = self.store.remove_unpinned();
        drop(self); // releases the lock before the caller hears back
        sealed
    }
}

/// A read in the pool: its snapshot, its reader, and the supervisor's wake-up, told once the
/// snapshot is let go (also when the read panics), so that files waiting for it go.
struct ReadGuard {
    snapshot: Option<Snapshot>,
    _permit: OwnedSemaphorePermit,
    read_done: Arc<Notify>,
}

impl Drop for ReadGuard {
    fn drop(&mut self) {
        drop(self.snapshot.take());
        self.read_done.notify_one();
    }
}

/// `n` permits, as a semaphore counts them (`readers_max` is clamped far below `u32::MAX`).
fn permits(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Answers a read on `snapshot`.
/// A read's answer, computed and not sent yet: sent once its snapshot is let go.
type Answer = Box<dyn FnOnce() + Send>;

/// Answers a read on `snapshot`: what sends the answer.
fn answer_read(snapshot: &Snapshot, command: Command) -> Answer {
    /// What sends `answer` through `reply`.
    fn send<T: Send + 'static>(reply: Reply<T>, answer: Result<T, EngineError>) -> Answer {
        Box::new(move || {
            let _ = reply.send(answer.map_err(Into::into));
        })
    }
    match command {
        // The `Series` reads: a selection with nothing sealed under it answers nothing.
        Command::Rows(s, reply) => {
            let track: Vec<&str> = s.track.iter().map(String::as_str).collect();
            let answer = snapshot.query(&s.stream, &track, (s.start, s.end));
            send(reply, or_nothing(answer, Vec::new))
        }
        Command::Buckets(s, budget, reply) => {
            let track: Vec<&str> = s.track.iter().map(String::as_str).collect();
            let answer = snapshot.survey(&s.stream, &track, (s.start, s.end), budget);
            let nothing = || no_buckets(snapshot.stream(&s.stream));
            send(
                reply,
                or_nothing(answer.map(|survey| survey.fields), nothing),
            )
        }
        Command::Aggregate(s, kind, reply) => {
            let track: Vec<&str> = s.track.iter().map(String::as_str).collect();
            let answer = snapshot.fold(&s.stream, &track, (s.start, s.end), kind);
            let nothing = || no_stats(snapshot.stream(&s.stream), kind);
            send(reply, or_nothing(answer, nothing))
        }
        Command::Read(read) => read(snapshot),
        _ => unreachable!("only reads run on a snapshot"),
    }
}

async fn tick(ticker: Option<&mut tokio::time::Interval>) {
    match ticker {
        Some(ticker) => {
            ticker.tick().await;
        }
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use strata_segment::vfs::SimFs;

    use super::*;
    use crate::config::Config;

    /// A simulated disk whose directory syncs wait while `held`: a barrier stays in flight
    /// (it syncs `seg/` after its rename) until the test lets it go.
    #[derive(Debug, Clone)]
    struct Held {
        fs: SimFs,
        held: Arc<(std::sync::Mutex<bool>, std::sync::Condvar)>,
    }

    impl Held {
        fn hold(&self, held: bool) {
            *self.held.0.lock().unwrap() = held;
            self.held.1.notify_all();
        }
    }

    impl strata_segment::vfs::Vfs for Held {
        fn create_dir(&self, dir: &str) -> std::io::Result<()> {
            self.fs.create_dir(dir)
        }
        fn create(&self, path: &str) -> std::io::Result<Box<dyn strata_segment::vfs::VfsFile>> {
            self.fs.create(path)
        }
        fn open_append(
            &self,
            path: &str,
        ) -> std::io::Result<Box<dyn strata_segment::vfs::VfsFile>> {
            self.fs.open_append(path)
        }
        fn map(&self, path: &str) -> std::io::Result<strata_segment::vfs::Mapped> {
            self.fs.map(path)
        }
        fn len(&self, path: &str) -> std::io::Result<u64> {
            self.fs.len(path)
        }
        fn rename_noreplace(&self, from: &str, to: &str) -> std::io::Result<()> {
            self.fs.rename_noreplace(from, to)
        }
        fn rename_mode(&self) -> strata_segment::vfs::RenameMode {
            self.fs.rename_mode()
        }
        fn location(&self) -> String {
            self.fs.location()
        }
        fn remove(&self, path: &str) -> std::io::Result<()> {
            self.fs.remove(path)
        }
        fn sync_dir(&self, dir: &str) -> std::io::Result<()> {
            let (held, released) = &*self.held;
            let _held = released
                .wait_while(held.lock().unwrap(), |held| *held)
                .unwrap();
            self.fs.sync_dir(dir)
        }
        fn list(&self, dir: &str) -> std::io::Result<Vec<strata_segment::vfs::DirEntry>> {
            self.fs.list(dir)
        }
        fn exists(&self, path: &str) -> std::io::Result<bool> {
            self.fs.exists(path)
        }
        fn lock(&self) -> std::io::Result<Box<dyn strata_segment::vfs::VfsLock>> {
            self.fs.lock()
        }
        fn lock_shared(&self) -> std::io::Result<Option<Box<dyn strata_segment::vfs::VfsLock>>> {
            self.fs.lock_shared()
        }
    }

    /// Metrics read while a barrier is in flight and reads run beside it agree with
    /// themselves: the reads are counted with the barrier, when it lands (before, a host saw
    /// `reads_during_barriers: 3` beside `barriers: 0`); after it, every counter says what was
    /// done.
    #[test]
    fn metrics_counted_beside_a_barrier_in_flight_never_contradict_each_other() {
        let held = Held {
            fs: SimFs::new(),
            held: Arc::new((std::sync::Mutex::new(false), std::sync::Condvar::new())),
        };
        let decl = crate::Stream::new("s")
            .field("t", strata_index::FieldKind::U64)
            .field("v", strata_index::FieldKind::F64)
            .axis("t")
            .build()
            .unwrap();
        let store = Store::create_in(Arc::new(held.clone()), Config::default(), &[decl]).unwrap();
        let served = Served::spawn(
            store,
            ServeConfig::default()
                .seal_interval(None)
                .seal_at_staged_share(None)
                .compact_steps_per_tick(0),
        );
        runtime().block_on(async {
            let rows: Vec<Row> = (0..100).map(row).collect();
            served.publish("s", 1, rows).await.unwrap();
            held.hold(true);
            let mut sealer = served.clone();
            let sealing = tokio::spawn(async move { sealer.seal("s", &[]).await });
            // The barrier reaches its held sync; reads go on beside it.
            while held.fs.paths().iter().all(|p| !p.starts_with("seg/")) {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            for _ in 0..3 {
                assert!(served.query("s", &[], ..).await.unwrap().is_empty());
            }
            let during = served.metrics().await.unwrap();
            assert_eq!(during.barriers, 0, "{during:?}");
            assert_eq!(during.reads_during_barriers, 0, "{during:?}");
            assert_eq!(during.rows_sealed, 0, "{during:?}");
            held.hold(false);
            assert_eq!(sealing.await.unwrap(), Ok(Some(1)));
            let after = served.metrics().await.unwrap();
            assert_eq!(after.barriers, 1, "{after:?}");
            assert_eq!(after.reads_during_barriers, 3, "{after:?}");
            assert_eq!(after.rows_sealed, 100, "{after:?}");
            assert_eq!(after.size_barriers, 0, "{after:?}");
            served.stop().await.unwrap();
        });
    }

    /// Dropping every handle without a `stop` closes a last barrier and the store, with a
    /// ticker or without: the rows fed are durable, and the store opens again. Before, the
    /// supervisor never noticed (it waited in `select!` for an `else` that the ticker's branch
    /// kept from ever running) and held the lock for the life of the process.
    #[test]
    fn dropping_every_handle_seals_and_closes_the_store() {
        for seal_interval in [None, Some(Duration::from_millis(5))] {
            let fs = SimFs::new();
            let decl = crate::Stream::new("s")
                .field("t", strata_index::FieldKind::U64)
                .field("v", strata_index::FieldKind::F64)
                .axis("t")
                .build()
                .unwrap();
            let store = Store::create_in(Arc::new(fs.clone()), Config::default(), &[decl]).unwrap();
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .build()
                .unwrap();
            runtime.block_on(async {
                let served = Served::spawn(
                    store,
                    ServeConfig {
                        seal_interval,
                        ..ServeConfig::default()
                    },
                );
                let row = vec![crate::Value::U64(3), crate::Value::F64(0.5)];
                served.publish("s", 1, vec![row]).await.unwrap();
                let other = served.clone();
                drop(served);
                drop(other);
            });
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            let store = loop {
                match Store::open_in(Arc::new(fs.clone()), Config::default(), &[]) {
                    Ok(store) => break store,
                    Err(error) if error.is_locked() && std::time::Instant::now() < deadline => {
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    Err(error) => panic!("{seal_interval:?}: {error}"),
                }
            };
            assert_eq!(
                store.watermark("s", &[]).unwrap(),
                Some(1),
                "{seal_interval:?}"
            );
        }
    }

    /// Requests queued behind a stop are dropped with the supervisor: their callers hear
    /// `Unserved` (a dropped reply, or a failed send once the lane is closed), never a hang.
    #[test]
    fn requests_queued_behind_a_stop_answer_unserved() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        runtime.block_on(async {
            let store = Store::create_in(Arc::new(SimFs::new()), Config::default(), &[]).unwrap();
            let served = Served::spawn(
                store,
                ServeConfig {
                    seal_interval: None,
                    lane_max: 64,
                    compact_steps_per_tick: 0,
                    seal_at_staged_share: None,
                    readers_max: 4,
                    writer_nice: 10,
                },
            );
            let (stop_reply, stopped) = oneshot::channel();
            // The stop goes first into the lane; the reads queue behind it, mid-request.
            served
                .commands
                .send(Command::Stop(stop_reply))
                .await
                .unwrap();
            let mut answers = Vec::new();
            for _ in 0..16 {
                let (reply, answer) = oneshot::channel();
                let span = span("s", &[], Bound::Unbounded, Bound::Unbounded);
                if served
                    .commands
                    .send(Command::Rows(span, reply))
                    .await
                    .is_ok()
                {
                    answers.push(answer);
                }
            }
            stopped.await.unwrap().unwrap();
            for answer in answers {
                let heard = tokio::time::timeout(Duration::from_secs(5), answer)
                    .await
                    .expect("no hang");
                assert!(heard.is_err(), "a request behind the stop was answered");
            }
            let mut handle = served.clone();
            let after = tokio::time::timeout(
                Duration::from_secs(5),
                handle.rows("s", &[], Bound::Unbounded, Bound::Unbounded),
            )
            .await
            .expect("no hang");
            assert_eq!(after, Err(BeneathWindow::Unserved));
        });
    }

    /// A zero seal interval panicked the supervisor (`interval_at` needs a period) and every
    /// handle call then answered that it had stopped; it counts as the least interval, so the
    /// store is served while its ticker fires. Likewise an interval past the clock's range
    /// and a lane of 0 or of more than a semaphore counts.
    #[test]
    fn extreme_serve_settings_do_not_kill_the_supervisor() {
        for (seal_interval, lane_max) in
            [(Some(Duration::ZERO), 0), (Some(Duration::MAX), usize::MAX)]
        {
            let decl = crate::Stream::new("s")
                .field("t", strata_index::FieldKind::U64)
                .field("v", strata_index::FieldKind::F64)
                .axis("t")
                .build()
                .unwrap();
            let store =
                Store::create_in(Arc::new(SimFs::new()), Config::default(), &[decl]).unwrap();
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .build()
                .unwrap();
            runtime.block_on(async {
                let mut served = Served::spawn(
                    store,
                    ServeConfig::default()
                        .seal_interval(seal_interval)
                        .lane_max(lane_max),
                );
                let row = vec![crate::Value::U64(3), crate::Value::F64(0.5)];
                served.publish("s", 1, vec![row]).await.unwrap();
                // Let a ticker of the least interval fire, several times, with rows staged.
                tokio::time::sleep(Duration::from_millis(20)).await;
                assert_eq!(served.seal("s", &[]).await, Ok(Some(1)));
                let rows = served
                    .rows("s", &[], Bound::Unbounded, Bound::Unbounded)
                    .await
                    .unwrap();
                assert_eq!(rows.len(), 1, "{seal_interval:?}");
                served.stop().await.unwrap();
            });
        }
    }

    /// Rows of 32 staged bytes each (`stage::row_bytes`: 16, then 8 per value), 1,024 a batch.
    const BATCH_ROWS: u64 = 1024;
    const ROW_BYTES: u64 = 32;
    const STAGED_MAX: usize = 1 << 20;

    fn row(t: u64) -> crate::Row {
        #[allow(clippy::cast_precision_loss)]
        let v = t as f64 * 0.5;
        vec![crate::Value::U64(t), crate::Value::F64(v)]
    }

    /// Publishes `bytes` of rows through a served store whose staging bound is 1 MiB, with no
    /// seal cadence and the size trigger at `share`; stops at the first refusal. Answers the
    /// handle (still serving), the batches published and the first refusal, if any.
    async fn publish_past_the_bound(
        share: Option<f64>,
        bytes: u64,
    ) -> (Served, u64, Option<EngineError>) {
        let decl = crate::Stream::new("s")
            .field("t", strata_index::FieldKind::U64)
            .field("v", strata_index::FieldKind::F64)
            .axis("t")
            .build()
            .unwrap();
        let config = Config::default().staged_bytes_max(STAGED_MAX);
        let store = Store::create_in(Arc::new(SimFs::new()), config, &[decl]).unwrap();
        let served = Served::spawn(
            store,
            ServeConfig::default()
                .seal_interval(None)
                .seal_at_staged_share(share),
        );
        let batches = bytes / (BATCH_ROWS * ROW_BYTES);
        for batch in 0..batches {
            let rows = (batch * BATCH_ROWS..(batch + 1) * BATCH_ROWS)
                .map(row)
                .collect();
            if let Err(error) = served.publish("s", batch + 1, rows).await {
                return (served, batch, Some(error));
            }
        }
        (served, batches, None)
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap()
    }

    /// With no cadence, publishing 20 times the staging bound is never refused: the size
    /// trigger (default, half the bound) closes a barrier each time staging reaches half (or
    /// when the step in flight lands), at least (published / bound) - 2 of them by the time
    /// metrics answer, and every row reads back exactly as published.
    #[test]
    fn the_size_trigger_keeps_a_fast_host_from_staging_full() {
        runtime().block_on(async {
            let bytes = 20 * STAGED_MAX as u64;
            let share = ServeConfig::default().seal_at_staged_share;
            assert_eq!(share, Some(0.5), "the trigger is on by default");
            let (mut served, batches, refused) = publish_past_the_bound(share, bytes).await;
            assert!(refused.is_none(), "refused after {batches}: {refused:?}");
            let metrics = served.metrics().await.unwrap();
            // A barrier seals at most the bound (a trigger that fires while a compaction step
            // is in flight waits for it, and seals what staged meanwhile), one may still be in
            // flight when metrics answer, and less than a trigger's worth may remain staged.
            let landed_at_least = bytes / STAGED_MAX as u64 - 2;
            assert!(
                metrics.size_barriers >= landed_at_least,
                "{} size barriers for {bytes} bytes, bound {STAGED_MAX}",
                metrics.size_barriers
            );
            assert!(metrics.barriers >= metrics.size_barriers);
            assert_eq!(served.seal("s", &[]).await, Ok(Some(batches)));
            let rows = served
                .rows("s", &[], Bound::Unbounded, Bound::Unbounded)
                .await
                .unwrap();
            let want: Vec<StoredRow> = (0..batches * BATCH_ROWS)
                .map(|t| StoredRow {
                    position: t / BATCH_ROWS + 1,
                    values: row(t),
                })
                .collect();
            assert_eq!(rows.len(), want.len());
            assert!(
                rows == want,
                "the rows read back differ from those published"
            );
            served.stop().await.unwrap();
        });
    }

    /// The same publish with the trigger off is refused with `StagingFull` once the bound is
    /// reached (after 1 MiB, 32 batches): the trigger is what keeps the host from it.
    #[test]
    fn without_the_size_trigger_the_same_publish_is_refused() {
        runtime().block_on(async {
            let (served, batches, refused) =
                publish_past_the_bound(None, 20 * STAGED_MAX as u64).await;
            assert!(
                matches!(refused, Some(EngineError::StagingFull { .. })),
                "{refused:?}"
            );
            assert_eq!(batches, STAGED_MAX as u64 / (BATCH_ROWS * ROW_BYTES));
            assert_eq!(served.metrics().await.unwrap().size_barriers, 0);
            served.stop().await.unwrap();
        });
    }

    /// No share panics the supervisor or stalls it: zero, negative, above 1, infinite and NaN
    /// are clamped (to the least share, or to 1), and the store is served.
    #[test]
    fn extreme_size_triggers_do_not_kill_the_supervisor() {
        for share in [0.0, -1.0, 2.0, f64::INFINITY, f64::NEG_INFINITY, f64::NAN] {
            runtime().block_on(async {
                let (mut served, batches, refused) =
                    publish_past_the_bound(Some(share), 2 * STAGED_MAX as u64).await;
                let staging_full = matches!(refused, Some(EngineError::StagingFull { .. }));
                // At 1 (above 1, NaN) the trigger fires only at exactly full: these batches fill
                // the bound exactly, so it does; every other share seals long before.
                assert!(refused.is_none() || staging_full, "{share}: {refused:?}");
                // Served still: a seal waits behind any barrier the trigger has in flight (the
                // metrics alone race it), and every accepted row reads back.
                let watermark = served.seal("s", &[]).await;
                assert_eq!(watermark, Ok((batches > 0).then_some(batches)), "{share}");
                assert_eq!(served.metrics().await.unwrap().barriers > 0, batches > 0);
                let rows = served
                    .rows("s", &[], Bound::Unbounded, Bound::Unbounded)
                    .await
                    .unwrap();
                assert_eq!(rows.len() as u64, batches * BATCH_ROWS, "{share}");
                served.stop().await.unwrap();
            });
        }
        let bytes = |share| ServeConfig::default().seal_at_staged_share(Some(share));
        assert_eq!(bytes(0.0).seal_at_staged_bytes(1 << 20), Some(1024));
        assert_eq!(bytes(f64::NAN).seal_at_staged_bytes(1 << 20), Some(1 << 20));
        assert_eq!(bytes(7.0).seal_at_staged_bytes(0), Some(1));
        assert_eq!(bytes(0.5).seal_at_staged_bytes(1 << 20), Some(1 << 19));
    }
}
