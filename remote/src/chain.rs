//! The bucket's log is a chain: a writer extends exactly the head it read, and only when the
//! head is a state its own history passed through.
//!
//! A `log/` object records the local manifest state it brings the bucket to (generation, length,
//! crc32c of the bytes before: [`ManifestState`]). A history passed through a state of its
//! current generation when a frame of its manifest ends there with that crc; through a state of
//! an earlier generation when its lineage (`strata_index::Lineage`, written by every rewrite and
//! repair) holds it. Nothing else counts: generation numbers and epochs order writers, they do
//! not prove a history (a stale copy compacted often enough passes any generation).

use std::fmt;

use strata_index::{Holds, Lineage, ManifestState, state_of};

/// Why a history is not known to pass through a state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Apart {
    /// It went another way: another history, a copy that diverged, a repair that cut there.
    Fork(String),
    /// The state is newer than anything it holds: the history is behind.
    Behind(String),
    /// The state is older than its lineage keeps: it cannot be proven either way.
    Unprovable(String),
}

impl fmt::Display for Apart {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Apart::Fork(why) | Apart::Behind(why) | Apart::Unprovable(why) => f.write_str(why),
        }
    }
}

/// Whether the history whose current manifest is `manifest` (the trusted bytes of generation
/// `generation`) and whose lineage is `lineage` passed through `state`; if not, why, in words
/// that name `whose` history ("this store's", "log/7's").
pub(crate) fn passes_through(
    whose: &str,
    generation: u32,
    manifest: &[u8],
    lineage: &Lineage,
    state: ManifestState,
) -> Result<(), Apart> {
    let g = state.generation;
    let end = state.end;
    if g > generation {
        return Err(Apart::Behind(format!(
            "{whose} manifest is at generation {generation}, before generation {g}"
        )));
    }
    if g == generation {
        return match state_of(generation, manifest, end) {
            Some(mine) if mine.crc == state.crc => Ok(()),
            Some(mine) => Err(Apart::Fork(format!(
                "{whose} generation {g} holds other bytes up to byte {end} (crc32c {:#010x}, \
                 not {:#010x})",
                mine.crc, state.crc
            ))),
            None if end > manifest.len() as u64 => Err(Apart::Behind(format!(
                "{whose} generation {g} holds {} bytes, fewer than {end}",
                manifest.len()
            ))),
            None => Err(Apart::Fork(format!(
                "no frame of {whose} generation {g} ends at byte {end}"
            ))),
        };
    }
    match lineage.holds(state) {
        Holds::Yes => Ok(()),
        Holds::Differs { crc } => Err(Apart::Fork(format!(
            "{whose} history passed through generation {g} at byte {end} with other bytes \
             (crc32c {crc:#010x}, not {:#010x})",
            state.crc
        ))),
        Holds::NoSuchEnd { last } if end > last => Err(Apart::Fork(format!(
            "{whose} history left generation {g} at byte {last}, before byte {end} (another \
             copy of the store went on in it, or a repair cut it there)"
        ))),
        Holds::NoSuchEnd { .. } => Err(Apart::Fork(format!(
            "no frame of {whose} generation {g} ended at byte {end}"
        ))),
        Holds::Missing | Holds::Newer => Err(Apart::Fork(format!(
            "{whose} history holds no state of generation {g}"
        ))),
        Holds::Older {
            oldest: Some(oldest),
        } => Err(Apart::Unprovable(format!(
            "generation {g} byte {end} is older than the oldest state {whose} lineage keeps \
             ({oldest}; Config::lineage_states_max bounds it): it cannot be proven an earlier \
             state of this history"
        ))),
        Holds::Older { oldest: None } => Err(Apart::Unprovable(format!(
            "{whose} lineage keeps no state of the generations before {generation} (it was \
             rewritten by a build that kept none, or with Config::lineage_states_max 0): \
             generation {g} cannot be proven an earlier state of this history"
        ))),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use strata_index::{Entry, Record, encode_frame, log_header, manifest_states};

    fn manifest(names: &[u64]) -> Vec<u8> {
        let mut bytes = log_header().to_vec();
        for &n in names {
            bytes.extend(encode_frame(&Record {
                entries: vec![Entry::NameHigh(n)],
            }));
        }
        bytes
    }

    #[test]
    fn a_state_is_passed_through_only_with_its_bytes() {
        let mine = manifest(&[1, 2, 3]);
        let other = manifest(&[1, 2, 4]);
        let none = Lineage::default();
        let at = |bytes: &[u8], i| manifest_states(5, bytes).nth(i).unwrap();
        // The current generation: its own states pass, another copy's (same length) do not.
        assert_eq!(passes_through("my", 5, &mine, &none, at(&mine, 2)), Ok(()));
        assert!(matches!(
            passes_through("my", 5, &mine, &none, at(&other, 3)),
            Err(Apart::Fork(_))
        ));
        // Longer than mine: behind, as is a newer generation.
        let longer = manifest(&[1, 2, 3, 4]);
        assert!(matches!(
            passes_through("my", 5, &mine, &none, at(&longer, 4)),
            Err(Apart::Behind(_))
        ));
        let newer = ManifestState {
            generation: 6,
            ..at(&mine, 1)
        };
        assert!(matches!(
            passes_through("my", 5, &mine, &none, newer),
            Err(Apart::Behind(_))
        ));
        // An earlier generation: only through a lineage that holds it.
        let old = at(&mine, 3);
        let old = ManifestState {
            generation: 4,
            ..old
        };
        assert!(matches!(
            passes_through("my", 5, &mine, &none, old),
            Err(Apart::Unprovable(_))
        ));
        let lineage = Lineage::default().extended(4, &mine, 100);
        assert_eq!(passes_through("my", 5, &mine, &lineage, old), Ok(()));
        let forked = Lineage::default().extended(4, &other, 100);
        assert!(matches!(
            passes_through("my", 5, &mine, &forked, old),
            Err(Apart::Fork(_))
        ));
        // A lineage that left generation 4 early (a repair's cut) does not hold what follows.
        let kept = usize::try_from(manifest_states(4, &mine).nth(1).unwrap().end).unwrap();
        let cut = Lineage::default().extended(4, &mine[..kept], 100);
        let error = passes_through("my", 5, &mine, &cut, old).unwrap_err();
        assert!(error.to_string().contains("left generation 4"), "{error}");
    }
}
