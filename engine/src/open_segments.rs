//! The open segments: a bounded cache of segment readers, least recently used evicted first.
//!
//! Every open reader is one memory map, and a process may hold only so many (65,530 by default
//! on Linux, `vm.max_map_count`), while a store's files grow with every barrier. So the store
//! keeps at most `Config::open_segments_max` readers open and maps the rest again when a read
//! comes back to them. A read holds its reader by `Arc`: eviction drops only the cache's handle,
//! and the map lives until the last read using it lets go, so an evicted reader keeps answering
//! the read that holds it.

use std::collections::{BTreeMap, HashMap};
use std::ops::Deref;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use strata_index::FileName;
use strata_segment::SegmentReader;
use strata_segment::vfs::Mapped;

/// The readers a store keeps open, at most `cap` of them, with their last use. Lookups and
/// inserts are O(log n): a hash map finds a reader, and an ordered map from last use to name
/// finds the least recently used one.
#[derive(Debug)]
pub(crate) struct OpenSegments<V> {
    cap: usize,
    /// Each open reader and the tick of its last use.
    by_name: HashMap<FileName, (V, u64)>,
    /// Last use to name: the first entry is the least recently used reader.
    by_use: BTreeMap<u64, FileName>,
    /// Ticks are issued in order and never reused, so they order uses.
    tick: u64,
    evictions: u64,
}

impl<V: Clone> OpenSegments<V> {
    /// An empty cache that holds at most `cap` readers.
    pub(crate) fn new(cap: usize) -> Self {
        assert!(cap > 0, "the store refuses a cap of 0 at open");
        OpenSegments {
            cap,
            by_name: HashMap::new(),
            by_use: BTreeMap::new(),
            tick: 0,
            evictions: 0,
        }
    }

    /// The reader of `name`, if open, now the most recently used.
    pub(crate) fn get(&mut self, name: FileName) -> Option<V> {
        let tick = self.next_tick();
        let (value, last_use) = self.by_name.get_mut(&name)?;
        let removed = self.by_use.remove(last_use);
        assert_eq!(removed, Some(name), "the two maps name the same readers");
        *last_use = tick;
        self.by_use.insert(tick, name);
        Some(value.clone())
    }

    /// Keeps `value` as the reader of `name`, the most recently used, evicting the least
    /// recently used reader first if the cache is full.
    pub(crate) fn insert(&mut self, name: FileName, value: V) {
        assert!(!self.by_name.contains_key(&name), "{name} is open already");
        if self.by_name.len() == self.cap {
            let (_, evicted) = self.by_use.pop_first().expect("a full cache is not empty");
            let removed = self.by_name.remove(&evicted);
            assert!(removed.is_some(), "the two maps name the same readers");
            self.evictions += 1;
        }
        let tick = self.next_tick();
        self.by_name.insert(name, (value, tick));
        self.by_use.insert(tick, name);
        assert!(self.by_name.len() <= self.cap);
        assert_eq!(self.by_name.len(), self.by_use.len());
    }

    /// Lets go of the reader of `name`, if open: its file is gone (retired by compaction), so
    /// no read will ask for it again. Not an eviction; a read holding it keeps it.
    pub(crate) fn remove(&mut self, name: FileName) -> Option<V> {
        let (value, last_use) = self.by_name.remove(&name)?;
        let removed = self.by_use.remove(&last_use);
        assert_eq!(removed, Some(name), "the two maps name the same readers");
        Some(value)
    }

    /// Readers open now.
    pub(crate) fn len(&self) -> usize {
        self.by_name.len()
    }

    /// Readers evicted since the cache was made.
    pub(crate) fn evictions(&self) -> u64 {
        self.evictions
    }

    fn next_tick(&mut self) -> u64 {
        self.tick += 1;
        self.tick
    }
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
