//! What a refusal beneath a floor offers instead (#47): a narrowing that answers the rows there
//! are. A floor refusal of a selection takes the highest floor of any partition under it, and a
//! track retired whole has its floors past everything it held, so "start at the floor" can lead
//! past every row the other tracks hold: followed, it answered nothing. The refusal says
//! instead whether a range from the floor answers anything, and names the tracks that hold rows
//! with the range each answers alone, found by asking the read's own floor check of each track.
//!
//! One function builds it for the store and for the in-memory model (`MemorySeries`), each
//! handing in its tracks and its own floor check, so the two answer a refusal alike and the
//! model checks the store's floors.

use strata_index::{PartitionEntry, Tier, TrackKey};
use strata_levels::LEVELS_MAX;

use crate::error::{EngineError, HeldTrack, Narrowing, TRACKS_NAMED_MAX};
use crate::view::View;
use crate::view::floors::beneath;

/// What a refused read reaches, which decides what a track holds for it and the unit of its
/// floor: positions of raw rows (a query), axis values of raw rows (a percentile), or axis
/// values of level cells (a survey, a level fold).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reach {
    Positions,
    RawAxis,
    LevelAxis,
}

impl Reach {
    /// The unit of a floor of this reach, as `EngineError::Floor` names it.
    pub(crate) fn unit(self) -> &'static str {
        match self {
            Reach::Positions => "position",
            Reach::RawAxis | Reach::LevelAxis => "axis value",
        }
    }

    /// Whether it reads raw rows (and so only the raw tier holds anything for it).
    pub(crate) fn raw(self) -> bool {
        !matches!(self, Reach::LevelAxis)
    }
}

impl View {
    /// Refuses a read of raw rows of `stream` under `prefix` from axis value `start` on, if it
    /// reaches beneath the raw floor's axis value of any partition it covers (a percentile's,
    /// a query by axis range), with the narrowing that answers instead. Catalog only.
    pub(crate) fn refuse_beneath_raw_axis(
        &self,
        stream: &str,
        prefix: &TrackKey,
        start: u64,
    ) -> Result<(), EngineError> {
        let Some(floor) = self
            .raw_floor(stream, prefix, true)
            .filter(|&f| beneath(start, f))
        else {
            return Ok(());
        };
        Err(
            self.beneath_floor(stream, prefix, floor, Reach::RawAxis, |key, [start, _]| {
                self.raw_floor(stream, key, true)
                    .filter(|&f| beneath(start, f))
            }),
        )
    }

    /// The refusal of a read of `stream` under `prefix` beneath `floor`, with its narrowing:
    /// `refused` is the read's own floor check of one key over a range (the floor it is
    /// refused at, if any). Catalog only, no read.
    pub(crate) fn beneath_floor(
        &self,
        stream: &str,
        prefix: &TrackKey,
        floor: u64,
        reach: Reach,
        refused: impl Fn(&TrackKey, [u64; 2]) -> Option<u64>,
    ) -> EngineError {
        let with_tracks = self
            .stream(stream)
            .is_some_and(|decl| !decl.track.is_empty());
        let candidates = self.catalog.partitions(stream, prefix).filter_map(|view| {
            let entries: Vec<&PartitionEntry> = if reach.raw() {
                view.segments(Tier::Raw).map(|(_, entry)| entry).collect()
            } else {
                view.live_segments()
                    .into_iter()
                    .map(|(_, entry, _)| entry)
                    .collect()
            };
            let held = entries
                .iter()
                .filter_map(|entry| match reach {
                    Reach::Positions => Some(entry.positions),
                    Reach::RawAxis | Reach::LevelAxis => entry.axis,
                })
                .reduce(|[lo, hi], [l, h]| [lo.min(l), hi.max(h)])?;
            Some(Candidate {
                key: view.track().clone(),
                labels: view.track().labels().map(str::to_owned).collect(),
                held,
                floored: self.catalog.floors_of(stream, view.track()).is_some(),
            })
        });
        EngineError::Floor {
            stream: stream.to_owned(),
            selection: prefix.labels().map(str::to_owned).collect(),
            floor,
            unit: reach.unit(),
            narrowing: narrowing(floor, prefix, with_tracks, candidates, refused),
        }
    }
}

/// A track under a refused selection that holds something live for the read: its key, its
/// labels, the lowest and highest value (in the read's unit) of what it holds, and whether any
/// floor was ever recorded for it.
#[derive(Debug)]
pub(crate) struct Candidate<K> {
    pub(crate) key: K,
    pub(crate) labels: Vec<String>,
    pub(crate) held: [u64; 2],
    pub(crate) floored: bool,
}

/// The narrowing of a refusal of `selection` at `floor`, from `candidates` (the tracks under
/// it that hold something live, in track-key order) and `refused` (the read's floor check: the
/// floor a read of that key over `[start, end]` is refused at, or `None` if it is answered).
///
/// A track's range starts at the lowest start its own check answers: found from its first
/// held value when it never had a floor, else from 0 up through the floors the check names
/// (each step rises; at most one a level and one for the rows). A track whose floors lie past
/// all it holds is left out: nothing of it answers this read. `with_tracks` is false for a
/// stream without track fields, whose one partition is the selection itself.
pub(crate) fn narrowing<K>(
    floor: u64,
    selection: &K,
    with_tracks: bool,
    candidates: impl IntoIterator<Item = Candidate<K>>,
    refused: impl Fn(&K, [u64; 2]) -> Option<u64>,
) -> Narrowing {
    let mut narrowing = Narrowing::default();
    let mut last_held: Option<u64> = None;
    for candidate in candidates {
        let [first, last] = candidate.held;
        last_held = last_held.max(Some(last));
        if !with_tracks {
            continue;
        }
        let Some(start) = lowest_answered(&candidate, first, last, &refused) else {
            continue;
        };
        if narrowing.tracks.len() == TRACKS_NAMED_MAX {
            narrowing.more = true;
            continue;
        }
        narrowing.tracks.push(HeldTrack {
            track: candidate.labels,
            range: [start, last],
        });
    }
    narrowing.above =
        last_held.is_some_and(|last| last >= floor && refused(selection, [floor, last]).is_none());
    narrowing
}

/// The lowest start from which a read of `candidate` alone over `[start, last]` is answered,
/// or `None` if none at or below `last` is.
fn lowest_answered<K>(
    candidate: &Candidate<K>,
    first: u64,
    last: u64,
    refused: &impl Fn(&K, [u64; 2]) -> Option<u64>,
) -> Option<u64> {
    let mut start = if candidate.floored { 0 } else { first };
    // Every step rises to a floor the check named; there are at most one a level and one for
    // the rows, so a check that keeps naming new floors past that is a bug, not a long climb.
    for _ in 0..=usize::from(LEVELS_MAX) + 2 {
        if start > last {
            return None;
        }
        match refused(&candidate.key, [start, last]) {
            None => return Some(start),
            Some(floor) if floor > start => start = floor,
            // A check that refuses at or beneath where it was asked from answers nothing here.
            Some(_) => return None,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate(name: &str, held: [u64; 2], floored: bool) -> Candidate<String> {
        Candidate {
            key: name.to_owned(),
            labels: vec![name.to_owned()],
            held,
            floored,
        }
    }

    /// Floors per key; the selection ("") takes the highest of all.
    fn check<'a>(floors: &'a [(&'a str, u64)]) -> impl Fn(&String, [u64; 2]) -> Option<u64> + 'a {
        move |key, [start, _]| {
            floors
                .iter()
                .filter(|(k, _)| key.is_empty() || k == key)
                .map(|&(_, f)| f)
                .max()
                .filter(|&f| start < f)
        }
    }

    #[test]
    fn a_track_retired_whole_leaves_the_others_named_with_their_ranges() {
        // `a` was retired whole (its floor past everything), `b` holds 2..=2000 unfloored.
        let floors = [("a", 2001)];
        let got = narrowing(
            2001,
            &String::new(),
            true,
            [candidate("b", [2, 2000], false)],
            check(&floors),
        );
        assert_eq!(
            got,
            Narrowing {
                above: false,
                tracks: vec![HeldTrack {
                    track: vec!["b".to_owned()],
                    range: [2, 2000]
                }],
                more: false,
            }
        );
    }

    #[test]
    fn a_floored_track_starts_at_its_floor_and_one_floored_past_all_it_holds_is_left_out() {
        let floors = [("a", 50), ("b", 700), ("c", 10)];
        let got = narrowing(
            700,
            &String::new(),
            true,
            [
                candidate("a", [0, 900], true),
                candidate("b", [0, 600], true),
                candidate("c", [12, 15], true),
            ],
            check(&floors),
        );
        let ranges: Vec<(String, [u64; 2])> = got
            .tracks
            .iter()
            .map(|t| (t.track[0].clone(), t.range))
            .collect();
        assert_eq!(
            ranges,
            vec![("a".to_owned(), [50, 900]), ("c".to_owned(), [10, 15])]
        );
        assert!(got.above, "a holds 701..=900, at or above the floor 700");
    }

    #[test]
    fn tracks_are_named_up_to_the_bound_and_the_rest_said() {
        let candidates =
            (0..=TRACKS_NAMED_MAX).map(|i| candidate(&format!("t{i:02}"), [0, 5], false));
        let got = narrowing(9, &String::new(), true, candidates, |_, _| None);
        assert_eq!(got.tracks.len(), TRACKS_NAMED_MAX);
        assert!(got.more, "one more track than the bound holds rows");
        assert!(!got.above);
    }

    #[test]
    fn a_stream_without_tracks_gets_a_range_only() {
        let floors = [("", 5)];
        let got = narrowing(
            5,
            &String::new(),
            false,
            [candidate("", [0, 9], true)],
            check(&floors),
        );
        assert_eq!(
            got,
            Narrowing {
                above: true,
                tracks: Vec::new(),
                more: false
            }
        );
    }

    #[test]
    fn a_check_that_never_settles_gives_up_rather_than_loops() {
        let got = narrowing(
            5,
            &String::new(),
            true,
            [candidate("a", [0, u64::MAX], true)],
            |_, [start, _]| Some(start + 1),
        );
        assert!(got.tracks.is_empty());
    }
}
