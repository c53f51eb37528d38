//! The rows of the store-v6 fixture (`tests/fixtures/store-v6/`), by formula, and the schedule
//! of barriers, compactions, trims and the retirement that wrote it: what
//! `examples/make_fixture_v6.rs` published with the engine of its day, and what
//! `tests/it/fixture_v6.rs` expects back from every later engine.
//!
//! Plain arithmetic, nothing of strata: the test recomputes every expected answer from here. Every
//! `f64` is a multiple of 1/64 below 64 in magnitude and every integer is small, so every sum and
//! sum of squares the fixture can fold is exact in `f64`, whatever the grouping.
//!
//! Never change a formula or the schedule: the committed fixture was written from them, and is
//! never written again (a generator of a later engine would write that engine's formats).

/// The axial stream: `run:str probe:u64 t:u64 temp:f64 delta:i64 total:u64 note:str
/// blob:bytes; track (run, probe); axis t; ladder 4x4`.
pub const PROBES: &str = "probes";
/// The stream without an axis: `source:str seq:u64 level:i64 msg:str; track (source)`.
pub const EVENTS: &str = "events";

/// The tracks of `PROBES`, by index: `(run, probe)`.
pub const TRACKS: [(&str, u64); 4] = [("r1", 1), ("r1", 2), ("r2", 1), ("r2", 2)];
/// The tracks of `EVENTS`.
pub const SOURCES: [&str; 2] = ["alpha", "beta"];
/// `PROBES`' ladder: level-0 cells 4 axis units wide, each level 4 times wider.
pub const LADDER: (u64, u64) = (4, 4);

/// Barriers (seals), each one segment file.
pub const BARRIERS: u64 = 10;
/// `PROBES` batches per barrier (each batch one position, shared by its rows).
pub const BATCHES_PER_BARRIER: u64 = 2;
/// Rows of each live track of `PROBES` in one batch.
pub const ROWS_PER_BATCH: u64 = 24;
/// Rows of `EVENTS` in a barrier (one batch).
pub const EVENT_ROWS_PER_BARRIER: u64 = 5;

/// Barriers `0..PLAIN_BARRIERS` were sealed with plain columns and every level stored whole
/// (`pack_columns(false)`, `LevelStorage::Whole`); the store was then reopened with packed
/// columns and adaptive levels for the rest.
pub const PLAIN_BARRIERS: u64 = 2;
/// `Store::compact` ran after sealing each of these barriers.
pub const COMPACT_AFTER: [u64; 2] = [4, 8];
/// After sealing this barrier (and before the next), `PROBES` was trimmed to
/// `PROBES_HORIZON` and `EVENTS` to `EVENTS_HORIZON` (`Store::trim_to`).
pub const TRIM_AFTER: u64 = 5;
/// Rows of `PROBES` at or below this position are trimmed: barriers 0 to 2.
pub const PROBES_HORIZON: u64 = probe_position(3 * BATCHES_PER_BARRIER - 1);
/// Rows of `EVENTS` at or below this position are trimmed: barriers 0 to 3.
pub const EVENTS_HORIZON: u64 = event_position(3);
/// After sealing this barrier, track `TRACKS[RETIRED]` was retired (`Store::retire`); it has
/// no rows in later barriers.
pub const RETIRE_AFTER: u64 = 6;
/// The index in `TRACKS` of the retired track.
pub const RETIRED: usize = 3;
/// The store's `Config::manifest_rewrite_bytes`, small so that its manifest was rewritten (a
/// generation above 1 with a preamble) and frames were appended after the rewrite.
pub const MANIFEST_REWRITE_BYTES: u64 = 4096;

/// The position of `PROBES` batch `batch` (batch `b` of barrier `n` is `n *
/// BATCHES_PER_BARRIER + b`).
pub const fn probe_position(batch: u64) -> u64 {
    1000 + 10 * batch
}

/// The position of the one `EVENTS` batch of barrier `barrier`.
pub const fn event_position(barrier: u64) -> u64 {
    50 + 5 * barrier
}

/// One row of `PROBES`.
#[derive(Clone, Debug, PartialEq)]
pub struct ProbeRow {
    /// The position of its batch.
    pub position: u64,
    /// Its track, an index into `TRACKS`.
    pub track: usize,
    /// Its index within its track (rows of a track are numbered 0, 1, ... in publish order).
    pub k: u64,
    /// The axis.
    pub t: u64,
    /// A measured `f64`: a multiple of 1/64.
    pub temp: f64,
    /// A measured `i64`.
    pub delta: i64,
    /// A measured `u64`.
    pub total: u64,
    /// A `str` column (sometimes empty).
    pub note: String,
    /// A `bytes` column (0 to 3 bytes).
    pub blob: Vec<u8>,
}

/// One row of `EVENTS`.
#[derive(Clone, Debug, PartialEq)]
pub struct EventRow {
    /// The position of its batch.
    pub position: u64,
    /// Its track, an index into `SOURCES`.
    pub source: usize,
    /// A `u64` (its index within its track).
    pub seq: u64,
    /// An `i64`.
    pub level: i64,
    /// A `str` (sometimes empty).
    pub msg: String,
}

/// The axis of row `k` of track `track`: non-decreasing, with ties in the retired track.
pub fn probe_t(track: usize, k: u64) -> u64 {
    match track {
        0 => 5 * k,
        1 => 3 * k + 1,
        2 => 7 * k + 2,
        _ => 6 * (k / 2),
    }
}

/// Row `k` of track `track`, published at `position`.
pub fn probe_row(track: usize, k: u64, position: u64) -> ProbeRow {
    let tr = track as u64;
    let x = (k * 13 + tr * 101) % 400;
    let temp = (x as f64 - 200.0) / 4.0 + ((k * k) % 17) as f64 / 64.0;
    let delta = i64::try_from((k * 7 + tr * 3) % 1000).expect("below 1000") - 500;
    let total = (k * k) % 4099 + tr * 10;
    let (run, probe) = TRACKS[track];
    let note = if k.is_multiple_of(11) {
        String::new()
    } else {
        format!("{run}/{probe} k={k}")
    };
    let blob = (0..k % 4)
        .map(|i| u8::try_from((k * 3 + i) % 256).expect("a byte"))
        .collect();
    ProbeRow {
        position,
        track,
        k,
        t: probe_t(track, k),
        temp,
        delta,
        total,
        note,
        blob,
    }
}

/// The tracks with rows in barrier `barrier`.
pub fn live_tracks(barrier: u64) -> Vec<usize> {
    (0..TRACKS.len())
        .filter(|&track| track != RETIRED || barrier <= RETIRE_AFTER)
        .collect()
}

/// `PROBES` batch `batch`, in publish order: its rows interleaved across the live tracks.
pub fn probe_batch(batch: u64) -> Vec<ProbeRow> {
    let barrier = batch / BATCHES_PER_BARRIER;
    let position = probe_position(batch);
    let mut rows = Vec::new();
    for j in 0..ROWS_PER_BATCH {
        for track in live_tracks(barrier) {
            rows.push(probe_row(track, batch * ROWS_PER_BATCH + j, position));
        }
    }
    rows
}

/// The `EVENTS` batch of barrier `barrier`, in publish order.
pub fn event_batch(barrier: u64) -> Vec<EventRow> {
    let position = event_position(barrier);
    let mut counts = [0u64; 2];
    (0..EVENT_ROWS_PER_BARRIER)
        .map(|j| {
            let source = usize::from(j % 2 == 1);
            // Alpha has 3 rows a barrier, beta 2.
            let per_barrier = if source == 0 { 3 } else { 2 };
            let seq = barrier * per_barrier + counts[source];
            counts[source] += 1;
            let msg = if seq % 4 == 3 {
                String::new()
            } else {
                format!("{} event {seq}", SOURCES[source])
            };
            EventRow {
                position,
                source,
                seq,
                level: i64::try_from((seq * 5) % 7).expect("below 7") - 3,
                msg,
            }
        })
        .collect()
}

/// Every `PROBES` row ever published, in publish order.
pub fn all_probe_rows() -> Vec<ProbeRow> {
    (0..BARRIERS * BATCHES_PER_BARRIER)
        .flat_map(probe_batch)
        .collect()
}

/// Every `EVENTS` row ever published, in publish order.
pub fn all_event_rows() -> Vec<EventRow> {
    (0..BARRIERS).flat_map(event_batch).collect()
}
