//! A store's lineage: the manifest states its history passed through before the current
//! generation, so that a copy of the store elsewhere (the object-storage tier's bucket) can be
//! proven to be an earlier state of this one, and not of another history, after the manifest
//! was rewritten.
//!
//! A manifest state is a generation's bytes up to a frame boundary, named by the generation, the
//! length and the crc32c of those bytes: what a `log/` object in a bucket records of the local
//! manifest it copied. Within one generation the manifest only grows, so a state of the current
//! generation is checked against the manifest's own bytes. A rewrite (a snapshot of the live
//! state in a new generation) forgets the frames it summarises; the [`Lineage`] it writes
//! remembers, for each frame boundary of the generations before, that state, so a state of an
//! earlier generation is checked against the lineage. The states are kept newest last, at most a
//! bound's worth (the engine's `Config::lineage_states_max`): a copy older than that can no
//! longer be proven and is refused as such.
//!
//! A repair (`engine-fsck repair`) writes the states of the damaged generation only up to where
//! it cut, so a copy that holds what the repair cut away is, rightly, not an earlier state of the
//! repaired store.

use std::fmt;

use serde::Serialize;

use crate::codec::{FRAME_HEADER_LEN, LOG_HEADER_LEN, decode_frame};

/// The most states one lineage may hold, whatever a configuration asks: what bounds the
/// allocation a manifest's `Lineage` entry can make (16 MiB of states).
pub const LINEAGE_STATES_LIMIT: usize = 1 << 20;

/// How many states a rewrite keeps unless configured otherwise: the frame boundaries of about
/// seven 1 MiB manifest generations of barriers, 128 KiB in each snapshot.
pub const LINEAGE_STATES_DEFAULT: usize = 16_384;

/// One manifest state: generation `generation`'s bytes `0..end`, whose crc32c is `crc`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct ManifestState {
    /// The manifest generation.
    pub generation: u32,
    /// The length of the prefix: a frame boundary (or the header's end).
    pub end: u64,
    /// crc32c of the prefix.
    pub crc: u32,
}

impl fmt::Display for ManifestState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "generation {} up to byte {} (crc32c {:#010x})",
            self.generation, self.end, self.crc
        )
    }
}

/// The states of one earlier generation, oldest first: `(end, crc)` with `end` strictly rising.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LineageRun {
    /// The generation.
    pub generation: u32,
    /// Its states, `(end, crc)`, ends strictly rising; never empty.
    pub states: Vec<(u64, u32)>,
}

/// Why a lineage read from a manifest is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineageError(pub String);

impl fmt::Display for LineageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for LineageError {}

/// The states of the generations before the current one, oldest first: runs by strictly rising
/// generation, each non-empty with strictly rising ends, at most [`LINEAGE_STATES_LIMIT`] states
/// in all. Built only through [`Lineage::from_runs`] and [`Lineage::extended`], which keep that.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct Lineage {
    runs: Vec<LineageRun>,
}

/// What a lineage says of one state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Holds {
    /// The history passed through it.
    Yes,
    /// The history has this generation up to that length with other bytes: a fork.
    Differs {
        /// The crc32c this history's prefix of that length has.
        crc: u32,
    },
    /// The history has this generation, but no frame of it ends there: not this history's
    /// state. `last` is the end of the generation's last state kept (where it left it).
    NoSuchEnd {
        /// The last end kept of that generation.
        last: u64,
    },
    /// The state is older than the oldest kept: it cannot be proven either way.
    Older {
        /// The oldest state kept, if any.
        oldest: Option<ManifestState>,
    },
    /// The state's generation is newer than every generation the lineage holds (it may be the
    /// current generation's: check that against the manifest's bytes).
    Newer,
    /// The history has generations before and after this one, but none of this one: not this
    /// history's state.
    Missing,
}

impl Lineage {
    /// A lineage of `runs`, checked: generations strictly rising, each run non-empty with ends
    /// strictly rising and at or after the manifest header, [`LINEAGE_STATES_LIMIT`] states at
    /// most.
    pub fn from_runs(runs: Vec<LineageRun>) -> Result<Lineage, LineageError> {
        let mut n_states = 0usize;
        for (i, run) in runs.iter().enumerate() {
            if i > 0 && runs[i - 1].generation >= run.generation {
                return Err(LineageError(format!(
                    "lineage run {i} is of generation {}, not after the run before's {}",
                    run.generation,
                    runs[i - 1].generation
                )));
            }
            let Some(&(first, _)) = run.states.first() else {
                return Err(LineageError(format!("lineage run {i} holds no state")));
            };
            if first < LOG_HEADER_LEN as u64 {
                return Err(LineageError(format!(
                    "lineage run {i} has a state ending at byte {first}, inside the header"
                )));
            }
            if let Some(w) = run.states.windows(2).find(|w| w[1].0 <= w[0].0) {
                return Err(LineageError(format!(
                    "lineage run {i} has a state ending at byte {} after one ending at {}",
                    w[1].0, w[0].0
                )));
            }
            n_states = n_states.saturating_add(run.states.len());
        }
        if n_states > LINEAGE_STATES_LIMIT {
            return Err(LineageError(format!(
                "the lineage holds {n_states} states, more than the {LINEAGE_STATES_LIMIT} any \
                 lineage may"
            )));
        }
        Ok(Lineage { runs })
    }

    /// The runs, oldest first.
    pub fn runs(&self) -> &[LineageRun] {
        &self.runs
    }

    /// How many states it holds.
    pub fn len(&self) -> usize {
        self.runs.iter().map(|r| r.states.len()).sum()
    }

    /// Whether it holds no state (a store never rewritten, or rewritten by a build that kept
    /// none).
    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    /// The oldest state kept.
    pub fn oldest(&self) -> Option<ManifestState> {
        let run = self.runs.first()?;
        let &(end, crc) = run.states.first()?;
        Some(ManifestState {
            generation: run.generation,
            end,
            crc,
        })
    }

    /// This lineage followed by every state of `manifest`'s trusted prefix (the bytes of
    /// `generation`, the generation being replaced), keeping the newest `states_max` states (clamped to [`LINEAGE_STATES_LIMIT`]).
    /// What a rewrite or a repair writes into the generation after `generation`; a repair
    /// passes the prefix it keeps, so the states after its cut are not this store's history.
    ///
    /// A run of `generation` or after, which only a damaged or hand-made manifest holds (no
    /// rewrite records the generation it writes, or a later one), is no state of this history
    /// and is dropped.
    #[must_use]
    pub fn extended(&self, generation: u32, manifest: &[u8], states_max: usize) -> Lineage {
        let mut runs: Vec<LineageRun> = self
            .runs
            .iter()
            .filter(|r| r.generation < generation)
            .cloned()
            .collect();
        let states: Vec<(u64, u32)> = manifest_states(generation, manifest)
            .map(|s| (s.end, s.crc))
            .collect();
        if !states.is_empty() {
            runs.push(LineageRun { generation, states });
        }
        let keep = states_max.min(LINEAGE_STATES_LIMIT);
        let mut excess = runs.iter().map(|r| r.states.len()).sum::<usize>();
        excess = excess.saturating_sub(keep);
        while excess > 0 {
            let first = &mut runs[0];
            if first.states.len() <= excess {
                excess -= first.states.len();
                runs.remove(0);
            } else {
                first.states.drain(..excess);
                excess = 0;
            }
        }
        Lineage { runs }
    }

    /// What this lineage says of `state`, for a history whose current generation is newer
    /// than every run (check states of the current generation against its bytes, with
    /// [`state_of`]).
    pub fn holds(&self, state: ManifestState) -> Holds {
        let older = Holds::Older {
            oldest: self.oldest(),
        };
        let (Some(first), Some(last)) = (self.runs.first(), self.runs.last()) else {
            return older;
        };
        if state.generation < first.generation {
            return older;
        }
        if state.generation > last.generation {
            return Holds::Newer;
        }
        let Some(run) = self.runs.iter().find(|r| r.generation == state.generation) else {
            // Rewrites and repairs extend a lineage by the generation they replace, so a
            // generation between two kept ones is not this history's.
            return Holds::Missing;
        };
        if run.generation == first.generation
            && run.states.first().is_some_and(|&(end, _)| state.end < end)
        {
            return older;
        }
        match run.states.binary_search_by_key(&state.end, |&(end, _)| end) {
            Ok(i) if run.states[i].1 == state.crc => Holds::Yes,
            Ok(i) => Holds::Differs {
                crc: run.states[i].1,
            },
            Err(_) => Holds::NoSuchEnd {
                last: run.states.last().map_or(0, |&(end, _)| end),
            },
        }
    }
}

/// The state of `manifest` (generation `generation`'s bytes) at `end`, if a frame of its
/// trusted prefix ends there (or its header does): what a copy that recorded `end` must have
/// recorded as the crc.
pub fn state_of(generation: u32, manifest: &[u8], end: u64) -> Option<ManifestState> {
    manifest_states(generation, manifest).find(|s| s.end == end)
}

/// Every state of `manifest`'s trusted prefix, oldest first: the header's end, then the end of
/// each whole frame, each with the crc32c of the bytes before it. Stops at the first frame that
/// does not decode (the trusted prefix's end); yields nothing for bytes without a header.
pub fn manifest_states(generation: u32, manifest: &[u8]) -> impl Iterator<Item = ManifestState> {
    let header_ok = manifest.len() >= LOG_HEADER_LEN;
    let mut at = 0usize;
    let mut crc = 0u32;
    let mut done = !header_ok;
    std::iter::from_fn(move || {
        if done {
            return None;
        }
        let next = if at == 0 {
            LOG_HEADER_LEN
        } else {
            match manifest.get(at..).map(decode_frame) {
                Some(Ok((_, consumed))) if consumed >= FRAME_HEADER_LEN => at + consumed,
                _ => {
                    done = true;
                    return None;
                }
            }
        };
        crc = crc32c::crc32c_append(crc, &manifest[at..next]);
        at = next;
        Some(ManifestState {
            generation,
            end: at as u64,
            crc,
        })
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::codec::{encode_frame, log_header};
    use crate::record::{Entry, Record};

    fn manifest(n_frames: u64) -> Vec<u8> {
        let mut bytes = log_header().to_vec();
        for i in 0..n_frames {
            bytes.extend(encode_frame(&Record {
                entries: vec![Entry::NameHigh(i + 1)],
            }));
        }
        bytes
    }

    #[test]
    fn states_are_every_frame_boundary_with_the_prefix_crc() {
        let bytes = manifest(3);
        let states: Vec<_> = manifest_states(4, &bytes).collect();
        assert_eq!(states.len(), 4, "the header's end and three frames");
        assert_eq!(states[0].end, 16);
        assert_eq!(states.last().unwrap().end, bytes.len() as u64);
        for s in &states {
            assert_eq!(s.generation, 4);
            assert_eq!(
                s.crc,
                crc32c::crc32c(&bytes[..usize::try_from(s.end).unwrap()])
            );
        }
        // A torn tail is not a state.
        let torn = &bytes[..bytes.len() - 3];
        assert_eq!(manifest_states(4, torn).count(), 3);
        assert_eq!(manifest_states(4, &bytes[..10]).count(), 0);
        assert!(state_of(4, &bytes, states[2].end).is_some());
        assert!(state_of(4, &bytes, states[2].end + 1).is_none());
    }

    #[test]
    fn holds_tells_a_fork_from_an_ancestor_and_from_what_it_cannot_know() {
        let a = manifest(4);
        let lineage = Lineage::default().extended(2, &a, 100);
        let mine = manifest_states(2, &a).nth(2).unwrap();
        assert_eq!(lineage.holds(mine), Holds::Yes);
        assert_eq!(
            lineage.holds(ManifestState {
                crc: mine.crc ^ 1,
                ..mine
            }),
            Holds::Differs { crc: mine.crc }
        );
        assert_eq!(
            lineage.holds(ManifestState {
                end: mine.end + 1,
                ..mine
            }),
            Holds::NoSuchEnd {
                last: a.len() as u64
            }
        );
        assert_eq!(
            lineage.holds(ManifestState {
                generation: 1,
                ..mine
            }),
            Holds::Older {
                oldest: lineage.oldest()
            }
        );
        assert_eq!(
            lineage.holds(ManifestState {
                generation: 3,
                ..mine
            }),
            Holds::Newer
        );
    }

    #[test]
    fn extending_keeps_the_newest_states_up_to_the_bound() {
        let a = manifest(5); // 6 states
        let b = manifest(3); // 4 states
        let lineage = Lineage::default().extended(1, &a, 8).extended(2, &b, 8);
        assert_eq!(lineage.len(), 8);
        assert_eq!(lineage.runs()[0].generation, 1);
        assert_eq!(lineage.runs()[0].states.len(), 4, "the two oldest dropped");
        let dropped = manifest_states(1, &a).next().unwrap();
        assert!(matches!(lineage.holds(dropped), Holds::Older { .. }));
        let kept = manifest_states(1, &a).nth(2).unwrap();
        assert_eq!(lineage.holds(kept), Holds::Yes);
        let lineage = lineage.extended(3, &a, 3);
        assert_eq!(lineage.len(), 3);
        assert_eq!(lineage.runs().len(), 1, "older generations dropped whole");
        assert!(matches!(lineage.holds(kept), Holds::Older { .. }));
    }

    /// A lineage read from damaged bytes may name the generation being replaced, or a later
    /// one: extending it drops those runs, never panics.
    #[test]
    fn runs_of_the_replaced_generation_or_later_are_dropped() {
        let a = manifest(2);
        let odd = Lineage::default().extended(7, &a, 100);
        let next = odd.extended(5, &a, 100);
        assert_eq!(
            next.runs().iter().map(|r| r.generation).collect::<Vec<_>>(),
            [5]
        );
    }

    #[test]
    fn from_runs_refuses_what_extending_never_builds() {
        let run = |generation, states: Vec<(u64, u32)>| LineageRun { generation, states };
        assert!(Lineage::from_runs(vec![run(1, vec![(16, 0), (20, 1)])]).is_ok());
        for (what, runs) in [
            ("empty run", vec![run(1, vec![])]),
            ("inside the header", vec![run(1, vec![(8, 0)])]),
            ("ends not rising", vec![run(1, vec![(20, 0), (20, 1)])]),
            (
                "generations not rising",
                vec![run(2, vec![(16, 0)]), run(2, vec![(16, 0)])],
            ),
        ] {
            assert!(Lineage::from_runs(runs).is_err(), "{what}");
        }
    }
}
