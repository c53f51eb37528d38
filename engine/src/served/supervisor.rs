//! The supervisor: one thread owning the store, taking feeds and commands from the lanes,
//! handing barriers and compaction steps to its writer and reads to the read pool.

use std::collections::VecDeque;
use std::sync::Arc;

use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, mpsc, oneshot};

use crate::error::EngineError;
use crate::series::{no_buckets, no_stats, or_nothing};
use crate::store::Store;
use crate::view::Snapshot;
use crate::write::compact::MergeDone;
use crate::write::seal::Sealed;
use crate::write::snapshot::remove_segments;

use super::{Command, Feed, Reply, ServeConfig, seal_and_retire, seal_and_trim};

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
pub(super) async fn supervise(
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
            sup.store.writer.metrics.backpressure_waits += 1;
        } else if sup.takes_feeds() {
            sup.paused = false;
        }
    }
}

/// What closed a barrier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Trigger {
    Tick,
    Size,
    Asked,
}

/// What a worker wrote: a barrier, a compaction step, or the removal of retired files.
pub(super) enum Done {
    Barrier(Sealed),
    Merge(MergeDone),
    Removed(Result<(), EngineError>),
}

/// The write in flight on the worker: a barrier (with what closed it and the seals waiting
/// for it) or a compaction step (`trigger` `None`, no seals).
pub(super) struct InFlight {
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
pub(super) struct Writer {
    jobs: std::sync::mpsc::Sender<Box<dyn FnOnce() + Send>>,
}

impl Writer {
    /// # Panics
    /// If the operating system refuses a thread (as `Served::spawn` documents).
    pub(super) fn spawn(nice: i32) -> Writer {
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
pub(super) fn lower_priority(nice: i32) {
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

pub(super) struct Supervisor {
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
pub(super) async fn landed(
    in_flight: Option<&mut InFlight>,
) -> Result<Done, oneshot::error::RecvError> {
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
        store.writer.defer_removals = true;
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
                self.store.writer.sealing = false;
                Err(self.store.poison(EngineError::Internal {
                    reason: "the writer thread's write panicked".to_owned(),
                }))
            }
        };
        if outcome.is_ok() {
            self.store.writer.metrics.reads_during_barriers += in_flight.reads;
            if in_flight.trigger == Some(Trigger::Size) {
                self.store.writer.metrics.size_barriers += 1;
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
        self.store.writer.defer_removals = false;
        let _ = self.store.remove_unpinned();
        drop(self); // releases the lock before the caller hears back
        sealed
    }
}

/// A read in the pool: its snapshot, its reader, and the supervisor's wake-up, told once the
/// snapshot is let go (also when the read panics), so that files waiting for it go.
pub(super) struct ReadGuard {
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
pub(super) fn permits(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Answers a read on `snapshot`.
/// A read's answer, computed and not sent yet: sent once its snapshot is let go.
pub(super) type Answer = Box<dyn FnOnce() + Send>;

/// Answers a read on `snapshot`: what sends the answer.
pub(super) fn answer_read(snapshot: &Snapshot, command: Command) -> Answer {
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

pub(super) async fn tick(ticker: Option<&mut tokio::time::Interval>) {
    match ticker {
        Some(ticker) => {
            ticker.tick().await;
        }
        None => std::future::pending().await,
    }
}
