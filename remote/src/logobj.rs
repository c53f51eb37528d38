//! `log/S`: one publish, the local manifest's bytes it brings the bucket to, checksummed.
//!
//! Layout (little-endian), 73 bytes of header, the body, then a crc32c of everything before it:
//!
//! | bytes | field |
//! |---|---|
//! | 8 | magic `STRLOG01` |
//! | 16 | the store's identity |
//! | 8 | the writer's epoch |
//! | 8 | `seq`, this object's number (as in its key) |
//! | 8 | `reset`, the number of the reset this object builds on (itself, for a reset) |
//! | 1 | kind: 0 reset, 1 append |
//! | 4 | the local manifest's generation |
//! | 8 | `end`: the local manifest's length after this object's body |
//! | 4 | crc32c of the local manifest's bytes `0..end` |
//! | 8 | the body's length |
//! | … | the body: manifest frames, exactly the local manifest's bytes `end - len..end` |
//! | 4 | crc32c of everything above |
//!
//! A reset's body is the whole manifest after its header (`16..end`); an append's follows on
//! from the object before it (same generation, its `end` where this body starts). A replica's
//! manifest is the log header, then a reset's body and every append after it, and its crc32c
//! must equal the last object's `prefix_crc`: the replica holds byte for byte the writer's
//! manifest up to `end`.

use strata_index::LOG_HEADER_LEN;

const MAGIC: &[u8; 8] = b"STRLOG01";
const HEADER_LEN: usize = 8 + 16 + 8 + 8 + 8 + 1 + 4 + 8 + 4 + 8;

/// What a log object's body is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogKind {
    /// The whole manifest (after its header): a replica may start here.
    Reset,
    /// Frames that follow on from the object before.
    Append,
}

/// One `log/S` object, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogObject {
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
    /// The manifest frames.
    pub body: Vec<u8>,
}

impl LogObject {
    /// Where the body starts in the local manifest.
    pub fn start(&self) -> u64 {
        // decode refuses a body longer than `end`; saturating keeps a hand-built one harmless.
        self.end.saturating_sub(self.body.len() as u64)
    }

    /// The object's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER_LEN + self.body.len() + 4);
        out.extend_from_slice(MAGIC);
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
        out.extend_from_slice(&(self.body.len() as u64).to_le_bytes());
        out.extend_from_slice(&self.body);
        let crc = crc32c::crc32c(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    /// Whether `bytes` are a torn object: shorter than a header and checksum, or failing the
    /// checksum over what is there. An object whose checksum holds is never torn, even if it
    /// does not decode (a later format's, or nonsense written whole): that is refused, never
    /// removed.
    pub fn torn(bytes: &[u8]) -> bool {
        bytes.len() < HEADER_LEN + 4 || {
            let (covered, crc) = bytes.split_at(bytes.len() - 4);
            crc32c::crc32c(covered).to_le_bytes() != crc
        }
    }

    /// Decodes an object read from `log/seq`; the reason, if its bytes are not one.
    pub fn decode(bytes: &[u8], seq: u64) -> Result<LogObject, String> {
        if bytes.len() < HEADER_LEN + 4 {
            return Err(format!(
                "{} bytes, shorter than a log object's {} of header and checksum",
                bytes.len(),
                HEADER_LEN + 4
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
        if r.take(8)? != MAGIC {
            return Err("not a log object (bad magic)".into());
        }
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
            identity,
            epoch,
            seq,
            reset,
            kind,
            generation,
            end,
            prefix_crc,
            body,
        };
        let header = LOG_HEADER_LEN as u64;
        // Where the body starts in the writer's manifest: at or after its header.
        let start = end
            .checked_sub(body_len)
            .filter(|&start| start >= header)
            .ok_or_else(|| {
                format!(
                    "its body ({body_len} bytes) would start before the manifest's header ends \
                     (the manifest ends at byte {end})"
                )
            })?;
        match kind {
            LogKind::Reset if reset != seq || start != header => {
                return Err("a reset that does not hold a whole manifest".into());
            }
            LogKind::Append if reset >= seq => {
                return Err("an append that builds on nothing before it".into());
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
            identity: [7; 16],
            epoch: 3,
            seq: 9,
            reset: 4,
            kind: LogKind::Append,
            generation: 2,
            end: 400,
            prefix_crc: 0xdead_beef,
            body: vec![1, 2, 3, 4, 5],
        }
    }

    #[test]
    fn round_trips() {
        let object = sample();
        assert_eq!(LogObject::decode(&object.encode(), 9).unwrap(), object);
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
        let header = LOG_HEADER_LEN as u64;
        let cases: [(&str, Spoil); 6] = [
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
        ];
        for (what, spoil) in cases {
            let mut object = sample();
            spoil(&mut object);
            assert!(
                !LogObject::torn(&object.encode()),
                "{what}: whole, so never removed"
            );
            assert!(
                LogObject::decode(&object.encode(), 9).is_err(),
                "{what}: accepted"
            );
        }
        let mut reset = sample();
        reset.kind = LogKind::Reset;
        reset.reset = 9;
        reset.end = header + 5;
        assert_eq!(LogObject::decode(&reset.encode(), 9).unwrap(), reset);
    }

    #[test]
    fn wrong_sequence_is_refused() {
        let error = LogObject::decode(&sample().encode(), 10).unwrap_err();
        assert!(error.contains("sequence 9"), "{error}");
    }
}
