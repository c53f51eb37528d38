//! The open segments: a bounded cache of segment readers, least recently used evicted first.
//!
//! Every open reader is one memory map, and a process may hold only so many (65,530 by default
//! on Linux, `vm.max_map_count`), while a store's files grow with every barrier. So the store
//! keeps at most `Config::open_segments_max` readers open and maps the rest again when a read
//! comes back to them. A read holds its reader by `Arc`: eviction drops only the cache's handle,
//! and the map lives until the last read using it lets go, so an evicted reader keeps answering
//! the read that holds it.

use std::cell::Cell;
use std::collections::{BTreeSet, HashMap};
use std::ops::Deref;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use strata_index::FileName;
use strata_segment::SegmentReader;
use strata_segment::vfs::Mapped;

/// The most stripes of last-use stamps a cache keeps (`OpenSegments`): one a core, up to
/// this; threads past it share stripes.
const STAMP_STRIPES_MAX: usize = 16;

/// The readers a store keeps open, at most `cap` of them, with their last use: least recently
/// used evicted first. A lookup takes `&self` (the store's reads share the cache behind a read
/// lock, #49) and only stamps the reader's last use with a tick of the clock (`next_tick`) in
/// its thread's own stripe of stamps, so threads reading the same files write to no memory
/// they share; an insert or a removal takes `&mut self`. The ordered set of (last use, name)
/// is brought up to date lazily, at eviction: its first entry is popped and, if the reader was
/// used since (its newest stamp in any stripe), put back at its last use, until one unused
/// since is found. Ticks only rise, so the one found is the least recently used (of a thread's
/// uses exactly; of two threads' at the same nanosecond, either), and each use costs at most
/// one reinsertion. Memory: `cap` slots and `cap` stamps a stripe, allocated once.
#[derive(Debug)]
pub(crate) struct OpenSegments<V> {
    cap: usize,
    /// Each open reader's slot.
    by_name: HashMap<FileName, usize>,
    slots: Vec<Option<Slot<V>>>,
    /// Slots let go, to be used again.
    free: Vec<usize>,
    /// Last-use stamps, a stripe of `cap` a thread (threads past the stripes share them), so
    /// that two threads stamping one reader write to lines of their own.
    stamps: Vec<Box<[AtomicU64]>>,
    /// The tick each reader was last filed under to its name (a use since moves it only at
    /// the next eviction): the first entry is the least recently used reader or one used since.
    by_use: BTreeSet<(u64, FileName)>,
    evictions: u64,
}

#[derive(Debug)]
struct Slot<V> {
    name: FileName,
    value: V,
    /// The tick it is filed under in `by_use`.
    filed: u64,
}

impl<V: Clone> OpenSegments<V> {
    /// An empty cache that holds at most `cap` readers.
    pub(crate) fn new(cap: usize) -> Self {
        assert!(cap > 0, "the store refuses a cap of 0 at open");
        let stripes = std::thread::available_parallelism()
            .map_or(1, std::num::NonZero::get)
            .clamp(1, STAMP_STRIPES_MAX);
        OpenSegments {
            cap,
            by_name: HashMap::new(),
            slots: Vec::new(),
            free: Vec::new(),
            stamps: (0..stripes)
                .map(|_| (0..cap).map(|_| AtomicU64::new(0)).collect())
                .collect(),
            by_use: BTreeSet::new(),
            evictions: 0,
        }
    }

    /// The reader of `name`, if open, now the most recently used.
    pub(crate) fn get(&self, name: FileName) -> Option<V> {
        self.get_ref(name).cloned()
    }

    /// The reader of `name`, if open, borrowed for as long as the cache is (a read that asks
    /// for many readers under one read lock, with no count of each taken and let go), now the
    /// most recently used.
    pub(crate) fn get_ref(&self, name: FileName) -> Option<&V> {
        let &idx = self.by_name.get(&name)?;
        let slot = self.slots[idx].as_ref()?;
        self.stamps[stripe() % self.stamps.len()][idx].store(next_tick(), Ordering::Relaxed);
        Some(&slot.value)
    }

    /// The names of the readers open now, in no order.
    pub(crate) fn names(&self) -> impl Iterator<Item = FileName> + '_ {
        self.by_name.keys().copied()
    }

    /// Whether a reader of `name` is open (not a use of it).
    pub(crate) fn contains(&self, name: FileName) -> bool {
        self.by_name.contains_key(&name)
    }

    /// Keeps `value` as the reader of `name`, the most recently used, evicting the least
    /// recently used reader first if the cache is full.
    pub(crate) fn insert(&mut self, name: FileName, value: V) {
        assert!(!self.by_name.contains_key(&name), "{name} is open already");
        if self.by_name.len() == self.cap {
            self.evict_least_recently_used();
            self.evictions += 1;
        }
        let tick = next_tick();
        let idx = self.free.pop().unwrap_or_else(|| {
            self.slots.push(None);
            self.slots.len() - 1
        });
        for stripe in &mut self.stamps {
            *stripe[idx].get_mut() = 0;
        }
        let mine = stripe() % self.stamps.len();
        *self.stamps[mine][idx].get_mut() = tick;
        self.slots[idx] = Some(Slot {
            name,
            value,
            filed: tick,
        });
        self.by_name.insert(name, idx);
        self.by_use.insert((tick, name));
        assert!(self.by_name.len() <= self.cap);
        assert_eq!(self.by_name.len(), self.by_use.len());
    }

    /// The tick of slot `idx`'s last use, on any thread.
    fn used(&self, idx: usize) -> u64 {
        self.stamps
            .iter()
            .map(|stripe| stripe[idx].load(Ordering::Relaxed))
            .max()
            .unwrap_or(0)
    }

    fn evict_least_recently_used(&mut self) {
        loop {
            let (filed, name) = self.by_use.pop_first().expect("a full cache is not empty");
            let idx = self.by_name[&name];
            let used = self.used(idx);
            if used <= filed {
                self.free_slot(name);
                return;
            }
            // Used since it was filed: filed again at its last use.
            if let Some(slot) = self.slots[idx].as_mut() {
                slot.filed = used;
            }
            self.by_use.insert((used, name));
        }
    }

    /// Takes `name`'s slot out of the maps, answering its reader.
    fn free_slot(&mut self, name: FileName) -> Option<V> {
        let idx = self.by_name.remove(&name)?;
        let slot = self.slots[idx].take()?;
        debug_assert_eq!(slot.name, name);
        self.free.push(idx);
        Some(slot.value)
    }

    /// Lets go of the reader of `name`, if open: its file is gone (retired by compaction), so
    /// no read will ask for it again. Not an eviction; a read holding it keeps it.
    pub(crate) fn remove(&mut self, name: FileName) -> Option<V> {
        let &idx = self.by_name.get(&name)?;
        let filed = self.slots[idx].as_ref()?.filed;
        let removed = self.by_use.remove(&(filed, name));
        assert!(removed, "the two maps name the same readers");
        self.free_slot(name)
    }

    /// Readers open now.
    pub(crate) fn len(&self) -> usize {
        self.by_name.len()
    }

    /// Readers evicted since the cache was made.
    pub(crate) fn evictions(&self) -> u64 {
        self.evictions
    }
}

/// A use's tick: nanoseconds since the process first asked, and past every tick this thread
/// took before. A thread's uses are ordered exactly, and the threads' by the clock, with no
/// counter the threads share: a shared one cost two threads reading one opening a fifth of
/// their throughput (#49).
fn next_tick() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    thread_local! {
        static LAST: Cell<u64> = const { Cell::new(0) };
    }
    let since = EPOCH.get_or_init(Instant::now).elapsed().as_nanos();
    let now = u64::try_from(since).unwrap_or(u64::MAX);
    LAST.with(|last| {
        let tick = now.max(last.get().saturating_add(1));
        last.set(tick);
        tick
    })
}

/// This thread's stripe of stamps: threads are numbered as they first stamp.
fn stripe() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static STRIPE: usize = NEXT.fetch_add(1, Ordering::Relaxed);
    }
    STRIPE.with(|stripe| *stripe)
}

/// How many segment maps are alive, in the cache or held by reads past their eviction, and the
/// most there have been at once.
#[derive(Debug, Default)]
pub(crate) struct LiveMaps {
    now: AtomicU64,
    peak: AtomicU64,
}

impl LiveMaps {
    pub(crate) fn now(&self) -> u64 {
        self.now.load(Ordering::Relaxed)
    }

    pub(crate) fn peak(&self) -> u64 {
        self.peak.load(Ordering::Relaxed)
    }
}

/// An open segment reader, counted in `LiveMaps` from the moment it is opened until its map is
/// dropped.
pub(crate) struct OpenSegment {
    reader: SegmentReader<Mapped>,
    live: Arc<LiveMaps>,
}

impl OpenSegment {
    pub(crate) fn new(reader: SegmentReader<Mapped>, live: &Arc<LiveMaps>) -> Self {
        let now = live.now.fetch_add(1, Ordering::Relaxed) + 1;
        live.peak.fetch_max(now, Ordering::Relaxed);
        OpenSegment {
            reader,
            live: Arc::clone(live),
        }
    }
}

impl Deref for OpenSegment {
    type Target = SegmentReader<Mapped>;

    fn deref(&self) -> &SegmentReader<Mapped> {
        &self.reader
    }
}

impl Drop for OpenSegment {
    fn drop(&mut self) {
        let before = self.live.now.fetch_sub(1, Ordering::Relaxed);
        assert!(before > 0, "a map is counted once and dropped once");
    }
}

#[cfg(test)]
mod tests {
    use super::OpenSegments;

    #[test]
    fn the_least_recently_used_reader_is_evicted_first() {
        let mut open = OpenSegments::new(2);
        open.insert(1, "one");
        open.insert(2, "two");
        // A use of 1 makes 2 the least recently used.
        assert_eq!(open.get(1), Some("one"));
        open.insert(3, "three");
        assert_eq!(open.len(), 2);
        assert_eq!(open.evictions(), 1);
        assert_eq!(open.get(2), None);
        assert_eq!(open.get(1), Some("one"));
        assert_eq!(open.get(3), Some("three"));
        open.insert(4, "four");
        assert_eq!(open.get(1), None, "1 was used before 3");
        assert_eq!(open.get(3), Some("three"));
        assert_eq!(open.get(4), Some("four"));
        assert_eq!(open.evictions(), 2);
    }

    #[test]
    fn a_removed_reader_frees_its_place_without_an_eviction() {
        let mut open = OpenSegments::new(2);
        open.insert(1, "one");
        open.insert(2, "two");
        assert_eq!(open.remove(1), Some("one"));
        assert_eq!(open.remove(1), None);
        assert_eq!(open.len(), 1);
        open.insert(3, "three");
        assert_eq!(open.evictions(), 0);
        assert_eq!(open.get(2), Some("two"));
        assert_eq!(open.get(3), Some("three"));
        open.insert(4, "four");
        assert_eq!(open.evictions(), 1);
        assert_eq!(open.get(2), None, "2 was used before 3");
    }

    #[test]
    fn a_cache_of_one_holds_the_last_reader_inserted() {
        let mut open = OpenSegments::new(1);
        for name in 0..10 {
            open.insert(name, name * 10);
            assert_eq!(open.get(name), Some(name * 10));
            assert_eq!(open.len(), 1);
        }
        assert_eq!(open.evictions(), 9);
        assert_eq!(open.get(8), None);
    }

    #[test]
    fn the_cache_never_holds_more_than_its_cap() {
        // Against a plain list as the model of recency: front is least recent.
        let cap = 5;
        let mut open = OpenSegments::new(cap);
        let mut model: Vec<u64> = Vec::new();
        let mut evictions = 0;
        for step in 0u64..500 {
            let name = (step * 7 + step / 3) % 13;
            let found = open.get(name);
            if let Some(at) = model.iter().position(|&n| n == name) {
                assert_eq!(found, Some(name));
                model.remove(at);
            } else {
                assert_eq!(found, None);
                open.insert(name, name);
                if model.len() == cap {
                    model.remove(0);
                    evictions += 1;
                }
            }
            model.push(name);
            assert_eq!(open.len(), model.len());
            assert!(open.len() <= cap);
        }
        assert_eq!(open.evictions(), evictions);
        assert!(evictions > 0);
    }
}
