//! Peak heap during a seal against the bytes it seals, counted by a global allocator: the
//! segment is streamed to its file, so a seal holds little beyond the staged rows themselves
//! (one partition's level cells at a time, a write buffer of at most 1 MiB, the directory).
//!
//! Its own test binary, one test, so no other thread allocates while it counts.
//! `cargo test --release --test seal_memory -- --nocapture` prints the figures.
#![allow(
    clippy::unwrap_used,
    clippy::cast_possible_truncation,
    reason = "test code: a failed unwrap is a failed test"
)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use strata::{Config, FieldKind, Store, Stream, Values};

/// The system allocator, counting the bytes live now and the most live since the last reset.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is passed on to `System` unchanged; the counters only observe sizes.
#[expect(
    unsafe_code,
    reason = "a global allocator is an unsafe trait; it only counts"
)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc` is passed on as it is.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(live, Ordering::Relaxed);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract for `dealloc` is passed on as it is.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract for `realloc` is passed on as it is.
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            let live = LIVE.fetch_add(new_size, Ordering::Relaxed) + new_size;
            // The old block is live until realloc returns (a move copies from it).
            PEAK.fetch_max(live, Ordering::Relaxed);
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        }
        new
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// What packing one chunk may hold at a time: pco's buffers for `PACK_ROWS` (10,000) values,
/// measured at about 35 bytes a value; 48 a value is the bound.
const PACK_WORKSPACE: usize = 48 * 10_000;

/// Seals `n_batches` staged batches of `batch_rows` rows of a u64 axis and an f64 (no track):
/// answers the staged bytes (32 a row: position, ordinal, axis, value), the heap live just
/// before the seal, and the peak during it.
fn seal_peak(n_batches: u64, batch_rows: u64) -> (usize, usize, usize) {
    let decl = Stream::new("s")
        .field("t", FieldKind::U64)
        .field("v", FieldKind::F64)
        .axis("t")
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::create(dir.path(), Config::default(), &[decl]).unwrap();
    for batch_idx in 0..n_batches {
        let t: Vec<u64> = (0..batch_rows)
            .map(|i| batch_idx * batch_rows + i)
            .collect();
        let v: Vec<f64> = t.iter().map(|&t| (t as f64 * 0.001).sin()).collect();
        store
            .publish_columns("s", batch_idx + 1, &[], &[Values::U64(&t), Values::F64(&v)])
            .unwrap();
    }
    let staged = store.staged_bytes();
    assert_eq!(staged as u64, n_batches * batch_rows * 32, "32 bytes a row");
    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    store.seal().unwrap();
    let peak = PEAK.load(Ordering::Relaxed);
    drop(store);
    (staged, before, peak)
}

#[test]
fn a_seal_holds_at_most_a_fifth_of_its_staged_bytes_beyond_them() {
    // 1.28 M rows in 10,000-row batches (staged vectors grow to exactly their length), and one
    // batch of 10,000: a large barrier and a small one.
    for (n_batches, batch_rows) in [(128u64, 10_000u64), (1, 10_000)] {
        let (staged, before, peak) = seal_peak(n_batches, batch_rows);
        let extra = peak - before;
        let mib = |b: usize| b as f64 / f64::from(1 << 20);
        eprintln!(
            "{} rows: staged {:.2} MiB, heap before the seal {:.2} MiB, peak during it {:.2} MiB \
             ({:.3}x staged); the seal's own {:.3} MiB ({:.3}x staged)",
            n_batches * batch_rows,
            mib(staged),
            mib(before),
            mib(peak),
            peak as f64 / staged as f64,
            mib(extra),
            extra as f64 / staged as f64,
        );
        // Packing a block (format 5) holds pco's working memory for one chunk of at most
        // `PACK_ROWS` rows: a constant beside the fifth, whatever the barrier's size.
        assert!(
            extra <= staged / 5 + PACK_WORKSPACE,
            "a seal of {staged} staged bytes held {extra} more"
        );
    }
}
