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

use std::ops::{Bound, RangeBounds};
use std::time::Duration;

use strata_levels::Aggregate;
use tokio::sync::{mpsc, oneshot};

use crate::error::EngineError;
use crate::metrics::Metrics;
use crate::series::BeneathWindow;
use crate::store::Store;
use crate::value::Row;
use crate::view::Snapshot;
use crate::view::read::StoredRow;
use crate::view::survey::{FieldBuckets, FieldStat, Survey};
use crate::write::columns::{Column, Positions};
use crate::write::retention::Swept;
use crate::write::trim::Trimmed;

mod series;
mod supervisor;
#[cfg(test)]
mod tests;

use series::{Retiring, seal_and_retire, seal_and_trim};
use supervisor::{Answer, Writer, supervise};

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
