//! A manifest generation as a whole: the part written before it had its name, and the frames
//! appended to it since.
//!
//! A generation is born one of two ways. The store's first is created empty (a header) and every
//! frame in it is an append: synced once acknowledged, but an append in flight can be torn, so
//! damage in its last frame is read as a torn tail. Every later one is written whole by a
//! rewrite or a repair — header, [`Preamble`] and snapshot to `tmp/`, synced, then renamed into
//! place — so no crash can tear any of those bytes, and damage there is damage to acknowledged
//! history however late in the file it lies. The preamble, always the first frame of such a
//! generation in format 3, says where that part ends ([`WrittenWhole`]); appends follow it as in
//! any generation.

use crate::codec::{FRAME_HEADER_LEN, LOG_HEADER_LEN, encode_frame, log_header};
use crate::lineage::ManifestState;
use crate::record::{Entry, Preamble, Record};

/// The length of a preamble's frame: fixed, whatever it says, so that in a generation whose
/// preamble is damaged the snapshot is still known to start right after it.
pub const PREAMBLE_FRAME_LEN: usize = FRAME_HEADER_LEN + 5 + 1 + 24;

/// The manifest format from which a generation above 1 begins with a [`Preamble`].
pub const PREAMBLE_FORMAT: u32 = 3;

/// Whether `record` is a preamble (a preamble is always its record's only entry).
pub fn is_preamble(record: &Record) -> bool {
    preamble_of(record).is_some()
}

/// The preamble `record` holds, if it is one.
pub fn preamble_of(record: &Record) -> Option<&Preamble> {
    match record.entries.as_slice() {
        [Entry::Preamble(preamble)] => Some(preamble),
        _ => None,
    }
}

/// The state of generation `generation` at the end of `bytes`, its whole contents: what a
/// rewrite records of the generation it takes its snapshot from, and what a repair checks the
/// file it finds under that name against.
pub fn whole_state(generation: u32, bytes: &[u8]) -> ManifestState {
    ManifestState {
        generation,
        end: bytes.len() as u64,
        crc: crc32c::crc32c(bytes),
    }
}

/// The bytes of a new manifest generation `generation` holding `records`, in this build's
/// format: the header, then (above generation 1) a preamble saying the whole of it is written
/// before it is named and which generation's bytes `replaces` names, then a frame per record.
///
/// # Panics
/// If generation 1 is said to replace one (no generation is below it), or a record does not
/// fit a frame ([`encode_frame`]'s contract).
pub fn generation_bytes(
    generation: u32,
    replaces: Option<ManifestState>,
    records: &[Record],
) -> Vec<u8> {
    assert!(
        generation > 1 || replaces.is_none(),
        "generation 1 replaces nothing"
    );
    let frames: Vec<Vec<u8>> = records.iter().map(encode_frame).collect();
    let mut bytes = log_header().to_vec();
    if generation > 1 {
        let whole_len =
            LOG_HEADER_LEN + PREAMBLE_FRAME_LEN + frames.iter().map(Vec::len).sum::<usize>();
        let preamble = encode_frame(&Record {
            entries: vec![Entry::Preamble(Preamble {
                whole_len: whole_len as u64,
                replaces,
            })],
        });
        assert_eq!(
            preamble.len(),
            PREAMBLE_FRAME_LEN,
            "a preamble is fixed-width"
        );
        bytes.extend_from_slice(&preamble);
    }
    for frame in &frames {
        bytes.extend_from_slice(frame);
    }
    bytes
}

/// How much of a manifest generation was written whole: synced, with its header, before the
/// generation had its name. A frame that fails there is damage, never a torn tail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WrittenWhole {
    /// The header alone: generation 1, created empty, whose every frame is an append.
    Header,
    /// The first frame at least: a generation above 1 of format 1 or 2, which earlier builds
    /// wrote only as a rewrite's or a repair's snapshot (at least one frame) and recorded no
    /// more about.
    FirstFrame,
    /// The first `len` bytes, as the generation's preamble says.
    Through(u64),
    /// A generation above 1 of format 3 whose first frame is not a preamble that passes its
    /// check: the preamble was written whole, and how far the rest goes is lost with it.
    PreambleLost,
}

/// What of generation `generation`, of manifest format `log_version`, was written whole, given
/// its first frame that passed its check (`None` if it did not, or there is none).
pub fn written_whole(generation: u32, log_version: u32, first: Option<&Record>) -> WrittenWhole {
    if let Some(preamble) = first.and_then(preamble_of) {
        return WrittenWhole::Through(preamble.whole_len);
    }
    match generation {
        0 | 1 => WrittenWhole::Header,
        _ if log_version >= PREAMBLE_FORMAT => WrittenWhole::PreambleLost,
        _ => WrittenWhole::FirstFrame,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::codec::parse_log;

    fn state() -> ManifestState {
        ManifestState {
            generation: 4,
            end: 1_234,
            crc: 0xdead_beef,
        }
    }

    #[test]
    fn a_preamble_frame_has_one_length_whatever_it_says() {
        for replaces in [None, Some(state())] {
            let frame = encode_frame(&Record {
                entries: vec![Entry::Preamble(Preamble {
                    whole_len: u64::MAX,
                    replaces,
                })],
            });
            assert_eq!(frame.len(), PREAMBLE_FRAME_LEN);
        }
    }

    #[test]
    fn a_generation_above_one_begins_with_a_preamble_that_says_where_its_whole_part_ends() {
        let records = vec![
            Record {
                entries: vec![Entry::NameHigh(7)],
            },
            Record {
                entries: vec![Entry::NameHigh(9)],
            },
        ];
        let bytes = generation_bytes(5, Some(state()), &records);
        let parsed = parse_log(&bytes);
        assert_eq!(parsed.fault, None);
        assert_eq!(parsed.records.len(), 3);
        let preamble = preamble_of(&parsed.records[0]).unwrap();
        // Counted by hand: header 16, preamble 38, two frames of 22.
        assert_eq!(preamble.whole_len, 16 + 38 + 22 + 22);
        assert_eq!(preamble.whole_len, bytes.len() as u64);
        assert_eq!(preamble.replaces, Some(state()));
        assert_eq!(&parsed.records[1..], &records[..]);
        assert_eq!(
            written_whole(5, 3, parsed.records.first()),
            WrittenWhole::Through(98)
        );
    }

    #[test]
    fn generation_one_has_no_preamble_and_only_its_header_is_written_whole() {
        let bytes = generation_bytes(1, None, &[]);
        assert_eq!(bytes, log_header());
        assert_eq!(written_whole(1, 3, None), WrittenWhole::Header);
        let declare = Record {
            entries: vec![Entry::NameHigh(1)],
        };
        assert_eq!(written_whole(1, 3, Some(&declare)), WrittenWhole::Header);
        assert_eq!(
            written_whole(2, 2, Some(&declare)),
            WrittenWhole::FirstFrame
        );
        assert_eq!(
            written_whole(2, 3, Some(&declare)),
            WrittenWhole::PreambleLost
        );
        assert_eq!(written_whole(2, 3, None), WrittenWhole::PreambleLost);
    }

    #[test]
    fn a_preamble_anywhere_but_first_ends_the_trusted_prefix() {
        let mut bytes = generation_bytes(2, None, &[]);
        let first_end = bytes.len();
        let again = bytes[LOG_HEADER_LEN..].to_vec();
        bytes.extend_from_slice(&again);
        let parsed = parse_log(&bytes);
        assert_eq!(parsed.records.len(), 1);
        assert_eq!(parsed.trusted_len, first_end as u64);
        let fault = parsed.fault.unwrap();
        assert_eq!(fault.offset, first_end as u64);
        assert!(fault.to_string().contains("Preamble after"), "{fault}");
    }
}
