//! `DecodedChunks`: packed chunks a read decoded, kept for the reads that come back to them, at
//! most `Config::decoded_chunks_bytes_max` bytes of them, least recently used evicted.
//!
//! A packed chunk (segment format 5) holds up to 10,000 rows and decodes in tens of
//! microseconds, so a read that touches a few rows of it — a fold's or a survey's edge, a
//! search of the axis — costs that much where the plain column it replaced was read in place.
//! Reads that come back to the same rows (a dashboard polling a window, a fold after a survey)
//! share the chunk kept here instead, copying only the rows they read. A query streams
//! through every chunk once and does not use it (`Packed::uncached`): it would only push out
//! what other reads come back to. Keys name files by their `FileName`, which a store never
//! gives other bytes, so an entry is never stale; a retired file's entries age out.

use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{Arc, Mutex, PoisonError};

use strata_segment::{ChunkCache, ChunkKey, Decoded};

/// The cache: shared by the store, its snapshots and the readers they open.
#[derive(Debug)]
pub(crate) struct DecodedChunks {
    bytes_max: usize,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// Each chunk kept, and the tick of its last use that moved it in `by_use`.
    chunks: HashMap<ChunkKey, (Arc<Decoded>, u64), BuildHasherDefault<KeyHasher>>,
    /// Last use to key: the first entry is the least recently used.
    by_use: BTreeMap<u64, ChunkKey>,
    bytes: usize,
    tick: u64,
    hits: u64,
    misses: u64,
    evictions: u64,
}

/// Hashes a [`ChunkKey`] (three `u64`s) by multiplying and rotating, as rustc's own hasher
/// does: a lookup is on every read of a kept chunk, and SipHash's resistance to chosen keys buys
/// nothing for keys the store makes itself.
#[derive(Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }

    fn write_u64(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// What the cache holds and has done, for `Metrics`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ChunkCounts {
    pub bytes: u64,
    pub hits: u64,
    pub misses: u64,
    pub evictions: u64,
}

/// The bytes a decoded chunk takes: 8 a value.
fn size_of_chunk(decoded: &Decoded) -> usize {
    decoded.len() * 8
}

impl DecodedChunks {
    /// A cache of at most `bytes_max` bytes of decoded values (0 keeps nothing).
    pub(crate) fn new(bytes_max: usize) -> DecodedChunks {
        DecodedChunks {
            bytes_max,
            inner: Mutex::new(Inner::default()),
        }
    }

    pub(crate) fn counts(&self) -> ChunkCounts {
        let inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        ChunkCounts {
            bytes: inner.bytes as u64,
            hits: inner.hits,
            misses: inner.misses,
            evictions: inner.evictions,
        }
    }
}

impl ChunkCache for DecodedChunks {
    fn get(&self, key: ChunkKey) -> Option<Arc<Decoded>> {
        let mut guard = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let inner = &mut *guard;
        inner.tick += 1;
        let (tick, lately) = (inner.tick, (inner.chunks.len() / 2) as u64);
        let Some((decoded, used)) = inner.chunks.get_mut(&key) else {
            inner.misses += 1;
            return None;
        };
        let decoded = Arc::clone(decoded);
        // Used lately (within the last half as many uses as it holds chunks): its place in
        // the eviction order stands. A hit is then a lookup, not two B-tree updates, which
        // were a fifth of a fold's time where its edge cells are packed (segment format 8).
        if tick - *used > lately {
            let before = std::mem::replace(used, tick);
            inner.by_use.remove(&before);
            inner.by_use.insert(tick, key);
        }
        inner.hits += 1;
        Some(decoded)
    }

    fn put(&self, key: ChunkKey, decoded: &Arc<Decoded>) {
        let size = size_of_chunk(decoded);
        if size > self.bytes_max {
            return;
        }
        let kept = Arc::clone(decoded);
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        inner.tick += 1;
        let tick = inner.tick;
        if let Some((before, used)) = inner.chunks.insert(key, (kept, tick)) {
            // Two reads decoded it at once: the newer copy replaces the older.
            inner.by_use.remove(&used);
            inner.bytes -= size_of_chunk(&before);
        }
        inner.by_use.insert(tick, key);
        inner.bytes += size;
        while inner.bytes > self.bytes_max {
            let Some((_, oldest)) = inner.by_use.pop_first() else {
                break;
            };
            if let Some((evicted, _)) = inner.chunks.remove(&oldest) {
                inner.bytes -= size_of_chunk(&evicted);
                inner.evictions += 1;
            }
        }
        debug_assert!(inner.bytes <= self.bytes_max);
        debug_assert_eq!(inner.chunks.len(), inner.by_use.len());
    }
}

#[cfg(test)]
mod tests {
    use zerocopy::little_endian::U64;

    use super::*;

    fn chunk(n: usize, value: u64) -> Arc<Decoded> {
        Arc::new(Decoded::U64(vec![U64::new(value); n]))
    }

    fn key(chunk: u64) -> ChunkKey {
        ChunkKey {
            file: 7,
            block: 32,
            chunk,
        }
    }

    #[test]
    fn the_cache_keeps_at_most_its_bound_evicting_the_least_recently_used() {
        // Room for three chunks of 100 values.
        let cache = DecodedChunks::new(3 * 800);
        for i in 0..3 {
            cache.put(key(i), &chunk(100, i));
        }
        assert_eq!(cache.counts().bytes, 2400, "filled to the bound");
        // Chunk 0 used again, so chunk 1 is the least recently used when a fourth comes.
        assert_eq!(cache.get(key(0)), Some(chunk(100, 0)));
        cache.put(key(3), &chunk(100, 3));
        assert_eq!(cache.get(key(1)), None, "evicted");
        for i in [0, 2, 3] {
            assert_eq!(cache.get(key(i)), Some(chunk(100, i)), "chunk {i} kept");
        }
        let counts = cache.counts();
        assert_eq!((counts.bytes, counts.evictions), (2400, 1));
        assert_eq!((counts.hits, counts.misses), (4, 1));
        // A chunk bigger than the whole cache is not kept, and evicts nothing.
        cache.put(key(9), &chunk(400, 9));
        assert_eq!(cache.get(key(9)), None);
        assert_eq!(cache.counts().bytes, 2400);
        // A chunk read between every two others that come and go is never the one evicted,
        // though a hit moves it in the eviction order only every few uses.
        let cache = DecodedChunks::new(4 * 800);
        cache.put(key(0), &chunk(100, 0));
        for i in 1..40 {
            cache.put(key(i), &chunk(100, i));
            assert_eq!(
                cache.get(key(0)),
                Some(chunk(100, 0)),
                "the hot chunk, at {i}"
            );
        }
        assert_eq!(cache.counts().evictions, 39 - 3);
        assert_eq!(cache.get(key(1)), None, "an old chunk was evicted");
        // A cache of nothing keeps nothing.
        let none = DecodedChunks::new(0);
        none.put(key(0), &chunk(1, 0));
        assert_eq!((none.get(key(0)), none.counts().bytes), (None, 0));
    }
}
