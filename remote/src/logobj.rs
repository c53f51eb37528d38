//! `log/S`: one publish, the local manifest's bytes it brings the bucket to, checksummed, and the
//! object before it named by its digest, so the bucket's log is a chain.
//!
//! Layout (little-endian) of format 2 (`STRLOG02`, what this build writes): 78 bytes of header,
//! the body, then a crc32c of everything before it (the object's *digest*):
//!
//! | bytes | field |
//! |---|---|
//! | 8 | magic `STRLOG02` |
//! | 16 | the store's identity |
//! | 8 | the writer's epoch |
//! | 8 | `seq`, this object's number (as in its key) |
//! | 8 | `reset`, the number of the reset this object builds on (itself, for a reset) |
//! | 1 | kind: 0 reset, 1 append |
//! | 4 | the local manifest's generation |
//! | 8 | `end`: the local manifest's length after this object's body |
//! | 4 | crc32c of the local manifest's bytes `0..end` |
//! | 4 | `parent`: the digest of `log/seq-1`, the object this one extends (0 for `log/0`) |
//! | 1 | flags: bit 0 `adopted` (a reset an operator put in place of the bucket's history, not one that extends it); the other bits 0 |
//! | 8 | the body's length |
//! | … | the body: exactly the local manifest's bytes `end - len..end` |
//! | 4 | crc32c of everything above: the digest |
//!
//! A reset's body is the whole manifest, header included (`0..end`); an append's follows on from
//! the object before it (same generation, its `end` where this body starts). A replica's
//! manifest is a reset's body and every append after it, and its crc32c must equal the last
//! object's `prefix_crc`: the replica holds byte for byte the writer's manifest up to `end`.
//!
//! Format 1 (`STRLOG01`, written by earlier builds, still read) has no `parent` or flags (73
//! bytes of header), and a reset's body is the manifest after its 16-byte header, which was of
//! manifest format 1.

use strata_index::{LOG_HEADER_LEN, ManifestState};

const MAGIC_V1: &[u8; 8] = b"STRLOG01";
const MAGIC_V2: &[u8; 8] = b"STRLOG02";
const HEADER_LEN_V1: usize = 8 + 16 + 8 + 8 + 8 + 1 + 4 + 8 + 4 + 8;
const HEADER_LEN_V2: usize = HEADER_LEN_V1 + 4 + 1;
const FLAG_ADOPTED: u8 = 1;

/// What a log object's body is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogKind {
    /// The whole manifest: a replica may start here.
    Reset,
    /// Frames that follow on from the object before.
    Append,
}

/// One `log/S` object, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogObject {
    /// Its format: 1 (`STRLOG01`, read only) or 2 (`STRLOG02`, written).
    pub version: u8,
    /// The store's identity.
    pub identity: [u8; 16],
    /// The epoch of the writer that published it.
    pub epoch: u64,
    /// Its number.
    pub seq: u64,
    /// The reset it builds on (its own `seq` for a reset).
    pub reset: u64,
    /// Reset or append.
    pub kind: LogKind,
    /// The local manifest generation its bytes come from.
    pub generation: u32,
    /// The local manifest's length after the body.
    pub end: u64,
    /// crc32c of the local manifest's bytes `0..end`.
    pub prefix_crc: u32,
    /// The digest of the object before it, which it extends; `None` for `log/0` and for an
    /// object of format 1, which names none.
    pub parent: Option<u32>,
    /// A reset an operator put in place of the bucket's history (`Publisher::adopt`): it need
    /// not extend the object before it.
    pub adopted: bool,
    /// The manifest bytes.
    pub body: Vec<u8>,
    /// Its own digest: the crc32c its bytes end with (set by [`LogObject::decode`] and by the
    /// publisher once it has encoded it; not encoded as a field).
    pub digest: u32,
}

impl LogObject {
    /// Where the body starts in the local manifest.
    pub fn start(&self) -> u64 {
        // decode refuses a body longer than `end`; saturating keeps a hand-built one harmless.
        self.end.saturating_sub(self.body.len() as u64)
    }

    /// The local manifest state this object brings the bucket to.
    pub fn state(&self) -> ManifestState {
        ManifestState {
            generation: self.generation,
            end: self.end,
            crc: self.prefix_crc,
        }
    }

    /// The object's bytes, in format 2 (whatever `version` says: this build writes only the
    /// newest); their digest is the crc32c they end with ([`LogObject::digest_of`]).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER_LEN_V2 + self.body.len() + 4);
        out.extend_from_slice(MAGIC_V2);
        out.extend_from_slice(&self.identity);
        out.extend_from_slice(&self.epoch.to_le_bytes());
        out.extend_from_slice(&self.seq.to_le_bytes());
        out.extend_from_slice(&self.reset.to_le_bytes());
        out.push(match self.kind {
            LogKind::Reset => 0,
            LogKind::Append => 1,
        });
        out.extend_from_slice(&self.generation.to_le_bytes());
        out.extend_from_slice(&self.end.to_le_bytes());
        out.extend_from_slice(&self.prefix_crc.to_le_bytes());
        out.extend_from_slice(&self.parent.unwrap_or(0).to_le_bytes());
        out.push(if self.adopted { FLAG_ADOPTED } else { 0 });
        out.extend_from_slice(&(self.body.len() as u64).to_le_bytes());
        out.extend_from_slice(&self.body);
        let crc = crc32c::crc32c(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    /// The digest of an object's bytes: the crc32c they end with (0 for bytes too short to
    /// hold one). Of a whole object, its digest; of a torn one, nothing anyone can rely on.
    pub fn digest_of(bytes: &[u8]) -> u32 {
        bytes
            .last_chunk::<4>()
            .map_or(0, |crc| u32::from_le_bytes(*crc))
    }

    /// Whether `bytes` are a torn object: shorter than a header and checksum, or failing the
    /// checksum over what is there. An object whose checksum holds is never torn, even if it
    /// does not decode (a later format's, or nonsense written whole): that is refused, never
    /// removed.
    pub fn torn(bytes: &[u8]) -> bool {
        bytes.len() < HEADER_LEN_V1 + 4 || {
            let (covered, crc) = bytes.split_at(bytes.len() - 4);
            crc32c::crc32c(covered).to_le_bytes() != crc
        }
    }

    /// Decodes an object read from `log/seq`; the reason, if its bytes are not one.
    pub fn decode(bytes: &[u8], seq: u64) -> Result<LogObject, String> {
        if bytes.len() < HEADER_LEN_V1 + 4 {
            return Err(format!(
                "{} bytes, shorter than a log object's {} of header and checksum",
                bytes.len(),
                HEADER_LEN_V1 + 4
            ));
        }
        let (covered, crc) = bytes.split_at(bytes.len() - 4);
        let stored = u32::from_le_bytes(crc.try_into().map_err(|_| "short checksum")?);
        let actual = crc32c::crc32c(covered);
        if stored != actual {
            return Err(format!(
                "checksum {actual:#010x} differs from the stored {stored:#010x}"
            ));
        }
        let mut r = Reader { bytes: covered };
        let version = match r.take(8)? {
            m if m == MAGIC_V1 => 1,
            m if m == MAGIC_V2 => 2,
            _ => return Err("not a log object (bad magic)".into()),
        };
        let identity: [u8; 16] = r.take(16)?.try_into().map_err(|_| "short identity")?;
        let epoch = r.u64()?;
        let stored_seq = r.u64()?;
        let reset = r.u64()?;
        let kind = match r.take(1)?[0] {
            0 => LogKind::Reset,
            1 => LogKind::Append,
            other => return Err(format!("unknown kind {other}")),
        };
        let generation = u32::from_le_bytes(r.take(4)?.try_into().map_err(|_| "short")?);
        let end = r.u64()?;
        let prefix_crc = u32::from_le_bytes(r.take(4)?.try_into().map_err(|_| "short")?);
        let (parent, adopted) = if version == 2 {
            let parent = u32::from_le_bytes(r.take(4)?.try_into().map_err(|_| "short")?);
            let flags = r.take(1)?[0];
            if flags & !FLAG_ADOPTED != 0 {
                return Err(format!("unknown flags {flags:#04x}"));
            }
            if stored_seq == 0 && parent != 0 {
                return Err("log/0 names a parent, but nothing is before it".into());
            }
            (
                (stored_seq > 0).then_some(parent),
                flags & FLAG_ADOPTED != 0,
            )
        } else {
            (None, false)
        };
        let body_len = r.u64()?;
        if body_len != r.bytes.len() as u64 {
            return Err(format!(
                "body length {body_len} differs from the {} bytes present",
                r.bytes.len()
            ));
        }
        let body = r.bytes.to_vec();
        if stored_seq != seq {
            return Err(format!("holds sequence {stored_seq}, not {seq}"));
        }
        let object = LogObject {
            version,
            identity,
            epoch,
            seq,
            reset,
            kind,
            generation,
            end,
            prefix_crc,
            parent,
            adopted,
            body,
            digest: stored,
        };
        // Where a reset's body starts in the writer's manifest: at its header (format 1) or
        // at its first byte (format 2); an append's, after the header.
        let header = LOG_HEADER_LEN as u64;
        let reset_start = if version == 1 { header } else { 0 };
        let start = end.checked_sub(body_len).ok_or_else(|| {
            format!("its body ({body_len} bytes) is longer than the manifest it ends (byte {end})")
        })?;
        match kind {
            LogKind::Reset if reset != seq || start != reset_start => {
                return Err("a reset that does not hold a whole manifest".into());
            }
            LogKind::Append if reset >= seq => {
                return Err("an append that builds on nothing before it".into());
            }
            LogKind::Append if start < header => {
                return Err(format!(
                    "its body ({body_len} bytes) would start before the manifest's header ends \
                     (the manifest ends at byte {end})"
                ));
            }
            LogKind::Append if adopted => {
                return Err("an append marked adopted (only a reset may be)".into());
            }
            _ => {}
        }
        Ok(object)
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        if self.bytes.len() < n {
            return Err("header cut short".into());
        }
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Ok(head)
    }

    fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().map_err(|_| "short")?,
        ))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn sample() -> LogObject {
        LogObject {
            version: 2,
            identity: [7; 16],
            epoch: 3,
            seq: 9,
            reset: 4,
            kind: LogKind::Append,
            generation: 2,
            end: 400,
            prefix_crc: 0xdead_beef,
            parent: Some(0x0123_4567),
            adopted: false,
            body: vec![1, 2, 3, 4, 5],
            digest: 0,
        }
    }

    /// `object` as decoding its encoding gives it: with its digest.
    fn sealed(mut object: LogObject) -> LogObject {
        object.digest = LogObject::digest_of(&object.encode());
        object
    }

    #[test]
    fn round_trips() {
        let object = sealed(sample());
        let bytes = object.encode();
        assert_eq!(&bytes[..8], b"STRLOG02");
        assert_eq!(LogObject::decode(&bytes, 9).unwrap(), object);
        assert_eq!(
            object.digest,
            crc32c::crc32c(&bytes[..bytes.len() - 4]),
            "the digest is the crc32c of everything before it"
        );
    }

    /// Format 1, as earlier builds wrote it (built here byte by byte): still read, with no
    /// parent, and a reset's body after the manifest header.
    #[test]
    fn format_1_objects_are_read() {
        let mut bytes = b"STRLOG01".to_vec();
        bytes.extend_from_slice(&[7; 16]);
        for v in [3u64, 9, 9] {
            bytes.extend_from_slice(&v.to_le_bytes());
        }
        bytes.push(0);
        bytes.extend_from_slice(&2u32.to_le_bytes());
        bytes.extend_from_slice(&21u64.to_le_bytes());
        bytes.extend_from_slice(&0xdead_beefu32.to_le_bytes());
        bytes.extend_from_slice(&5u64.to_le_bytes());
        bytes.extend_from_slice(&[1, 2, 3, 4, 5]);
        let crc = crc32c::crc32c(&bytes);
        bytes.extend_from_slice(&crc.to_le_bytes());
        let object = LogObject::decode(&bytes, 9).unwrap();
        assert_eq!(
            (object.version, object.kind, object.parent, object.adopted),
            (1, LogKind::Reset, None, false)
        );
        assert_eq!((object.start(), object.end, object.digest), (16, 21, crc));
    }

    #[test]
    fn every_flipped_byte_is_refused() {
        let bytes = sample().encode();
        for i in 0..bytes.len() {
            for bit in [0x01u8, 0x80] {
                let mut bad = bytes.clone();
                bad[i] ^= bit;
                assert!(LogObject::decode(&bad, 9).is_err(), "byte {i} bit {bit:#x}");
            }
        }
        for len in 0..bytes.len() {
            assert!(LogObject::decode(&bytes[..len], 9).is_err(), "cut at {len}");
            assert!(LogObject::torn(&bytes[..len]), "cut at {len} is torn");
        }
        assert!(!LogObject::torn(&bytes), "the whole object is not torn");
    }

    /// An object whose checksum holds but whose fields contradict each other is refused with a
    /// reason, never a panic or an overflow.
    #[test]
    fn checksummed_nonsense_is_refused() {
        type Spoil = fn(&mut LogObject);
        let cases: [(&str, Spoil); 9] = [
            ("body longer than the manifest", |o| o.end = 2),
            ("body before the header", |o| {
                o.end = LOG_HEADER_LEN as u64 + 2;
            }),
            ("reset not at its own sequence", |o| {
                o.kind = LogKind::Reset;
                o.reset = 3;
            }),
            ("reset not holding the whole manifest", |o| {
                o.kind = LogKind::Reset;
                o.reset = 9;
            }),
            ("append on a later reset", |o| o.reset = 9),
            ("append at u64::MAX on nothing", |o| {
                o.end = u64::MAX;
                o.reset = u64::MAX;
            }),
            ("an adopted append", |o| o.adopted = true),
            ("log/0 with a parent", |o| {
                o.seq = 0;
                o.kind = LogKind::Reset;
                o.reset = 0;
                o.end = 5;
            }),
            ("a reset from the header on (format 1's layout)", |o| {
                o.kind = LogKind::Reset;
                o.reset = 9;
                o.end = LOG_HEADER_LEN as u64 + 5;
            }),
        ];
        for (what, spoil) in cases {
            let mut object = sample();
            spoil(&mut object);
            let seq = object.seq;
            assert!(
                !LogObject::torn(&object.encode()),
                "{what}: whole, so never removed"
            );
            assert!(
                LogObject::decode(&object.encode(), seq).is_err(),
                "{what}: accepted"
            );
        }
        let mut bytes = sample().encode();
        bytes[HEADER_LEN_V1 - 8 + 4] = 0x02; // the flags, after `parent`
        let n = bytes.len() - 4;
        let crc = crc32c::crc32c(&bytes[..n]);
        bytes[n..].copy_from_slice(&crc.to_le_bytes());
        assert!(LogObject::decode(&bytes, 9).unwrap_err().contains("flags"));
        let mut reset = sample();
        reset.kind = LogKind::Reset;
        reset.reset = 9;
        reset.end = 5;
        reset.adopted = true;
        let reset = sealed(reset);
        assert_eq!(LogObject::decode(&reset.encode(), 9).unwrap(), reset);
    }

    #[test]
    fn wrong_sequence_is_refused() {
        let error = LogObject::decode(&sample().encode(), 10).unwrap_err();
        assert!(error.contains("sequence 9"), "{error}");
    }
}
