//! `SegmentCache`: a replica's segments in memory, at most `cache_bytes` of them.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};

use strata_index::FileName;

/// Fetched segments by name, least recently used evicted first once their bytes pass the budget.
/// A segment larger than the whole budget is handed out but not kept.
#[derive(Debug)]
pub struct SegmentCache {
    budget: u64,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    by_name: HashMap<FileName, (Arc<[u8]>, u64)>,
    by_use: BTreeMap<u64, FileName>,
    tick: u64,
    bytes: u64,
    hits: u64,
    misses: u64,
    evictions: u64,
}

impl SegmentCache {
    /// An empty cache that keeps at most `budget` bytes.
    pub fn new(budget: u64) -> SegmentCache {
        SegmentCache {
            budget,
            inner: Mutex::new(Inner::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The bytes of `name`, if held, now the most recently used.
    pub fn get(&self, name: FileName) -> Option<Arc<[u8]>> {
        let mut inner = self.lock();
        inner.tick += 1;
        let tick = inner.tick;
        let Some((bytes, last)) = inner.by_name.get_mut(&name) else {
            inner.misses += 1;
            return None;
        };
        let bytes = Arc::clone(bytes);
        let old = std::mem::replace(last, tick);
        inner.by_use.remove(&old);
        inner.by_use.insert(tick, name);
        inner.hits += 1;
        Some(bytes)
    }

    /// Keeps `bytes` as segment `name`, evicting the least recently used until the budget holds.
    pub fn insert(&self, name: FileName, bytes: Arc<[u8]>) {
        let len = bytes.len() as u64;
        if len > self.budget {
            return;
        }
        let mut inner = self.lock();
        if let Some((old, last)) = inner.by_name.remove(&name) {
            inner.by_use.remove(&last);
            inner.bytes -= old.len() as u64;
        }
        while inner.bytes + len > self.budget {
            let Some((_, victim)) = inner.by_use.pop_first() else {
                break;
            };
            if let Some((old, _)) = inner.by_name.remove(&victim) {
                inner.bytes -= old.len() as u64;
                inner.evictions += 1;
            }
        }
        inner.tick += 1;
        let tick = inner.tick;
        inner.by_use.insert(tick, name);
        inner.by_name.insert(name, (bytes, tick));
        inner.bytes += len;
    }

    /// Bytes held now (never above the budget).
    pub fn bytes(&self) -> u64 {
        self.lock().bytes
    }

    /// The budget.
    pub fn budget(&self) -> u64 {
        self.budget
    }

    /// Segments held now.
    pub fn len(&self) -> usize {
        self.lock().by_name.len()
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Lookups answered from the cache, lookups that were not, and segments evicted.
    pub fn counts(&self) -> (u64, u64, u64) {
        let inner = self.lock();
        (inner.hits, inner.misses, inner.evictions)
    }

    /// Forgets every segment.
    pub fn clear(&self) {
        let mut inner = self.lock();
        inner.by_name.clear();
        inner.by_use.clear();
        inner.bytes = 0;
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn bytes(n: usize) -> Arc<[u8]> {
        vec![0u8; n].into()
    }

    #[test]
    fn the_budget_is_reached_and_never_passed() {
        let cache = SegmentCache::new(100);
        for name in 1..=10u64 {
            cache.insert(name, bytes(30));
            assert!(cache.bytes() <= 100, "{} bytes held", cache.bytes());
        }
        assert_eq!(
            cache.bytes(),
            90,
            "three segments of 30 fit a budget of 100"
        );
        assert_eq!(cache.len(), 3);
        assert!(cache.get(10).is_some() && cache.get(9).is_some() && cache.get(8).is_some());
        assert!(cache.get(7).is_none(), "the least recently used went first");
        assert_eq!(cache.counts().2, 7);
    }

    #[test]
    fn a_use_saves_a_segment_from_eviction() {
        let cache = SegmentCache::new(60);
        cache.insert(1, bytes(30));
        cache.insert(2, bytes(30));
        assert!(cache.get(1).is_some());
        cache.insert(3, bytes(30));
        assert!(cache.get(1).is_some(), "used last, kept");
        assert!(cache.get(2).is_none(), "least recently used, evicted");
    }

    #[test]
    fn a_segment_over_the_budget_is_not_kept() {
        let cache = SegmentCache::new(10);
        cache.insert(1, bytes(5));
        cache.insert(2, bytes(11));
        assert!(cache.get(2).is_none());
        assert!(
            cache.get(1).is_some(),
            "nothing evicted for a segment not kept"
        );
    }

    #[test]
    fn inserting_a_held_name_again_counts_its_bytes_once() {
        let cache = SegmentCache::new(100);
        cache.insert(1, bytes(40));
        cache.insert(1, bytes(10));
        assert_eq!(
            cache.bytes(),
            10,
            "the old 40 bytes went with the old entry"
        );
        cache.insert(1, bytes(60));
        cache.insert(2, bytes(40));
        assert_eq!(cache.bytes(), 100);
        assert_eq!(cache.len(), 2);
    }
}
