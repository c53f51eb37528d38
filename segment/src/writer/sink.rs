//! Where a segment's bytes go as the writer produces them: memory ([`Vec<u8>`]), a file through
//! a bounded buffer ([`FileSink`]), or nowhere but a count ([`CountingSink`]).
//!
//! A sink only moves bytes. Checksums are the writer's, computed once per byte as the bytes
//! pass on their way here.

use std::io;

use crate::vfs::VfsFile;

/// Receives a segment's bytes in order.
pub trait SegmentSink {
    /// Takes `bytes`, the next bytes of the file.
    fn put(&mut self, bytes: &[u8]) -> io::Result<()>;
    /// Passes on anything held back, once the last byte was put.
    fn flush(&mut self) -> io::Result<()>;
}

impl SegmentSink for Vec<u8> {
    fn put(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.extend_from_slice(bytes);
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Counts the bytes and keeps none: how long a segment would be, without writing it.
#[derive(Clone, Copy, Debug, Default)]
pub struct CountingSink {
    /// Bytes put so far.
    pub len: u64,
}

impl SegmentSink for CountingSink {
    fn put(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.len += bytes.len() as u64;
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The most bytes a [`FileSink`] gathers before it writes them: writes of this size run at the
/// disk's sequential speed, and it is the most memory a segment write holds beyond its input.
pub const WRITE_CHUNK_BYTES: usize = 1 << 20;

/// Pieces at least this long go to the file as they are, after what is gathered: copying a
/// column into the buffer would cost a pass over its bytes for nothing.
pub const WRITE_DIRECT_BYTES: usize = 64 << 10;

/// The fewest bytes a [`FileSink`] sized by [`FileSink::for_input`] gathers: a page.
pub const WRITE_CHUNK_MIN_BYTES: usize = 4 << 10;

/// Appends a segment to a file in chunks: small pieces (run records, cells, crcs, the
/// directory) are gathered up to [`WRITE_CHUNK_BYTES`], pieces of [`WRITE_DIRECT_BYTES`] or more
/// (columns) are written straight from the caller's memory.
///
/// The buffer is allocated once, at its full size, on the first small piece: it never holds a
/// second, grown copy of itself.
#[derive(Debug)]
pub struct FileSink<'f> {
    file: &'f mut dyn VfsFile,
    buf: Vec<u8>,
    chunk_bytes: usize,
    direct_bytes: usize,
}

impl<'f> FileSink<'f> {
    /// A sink into `file` with the default chunk sizes.
    pub fn new(file: &'f mut dyn VfsFile) -> FileSink<'f> {
        FileSink::with_chunks(file, WRITE_CHUNK_BYTES, WRITE_DIRECT_BYTES)
    }

    /// A sink for a segment written from `input_bytes` of memory (what a seal stages): chunks
    /// of a 32nd of that, from [`WRITE_CHUNK_MIN_BYTES`] to [`WRITE_CHUNK_BYTES`], so the buffer
    /// stays a small part of the memory the write already needs; pieces of a chunk or more are
    /// written as they are.
    pub fn for_input(file: &'f mut dyn VfsFile, input_bytes: usize) -> FileSink<'f> {
        let chunk = (input_bytes / 32).clamp(WRITE_CHUNK_MIN_BYTES, WRITE_CHUNK_BYTES);
        FileSink::with_chunks(file, chunk, chunk)
    }

    /// A sink gathering up to `chunk_bytes` and writing pieces of `direct_bytes` or more
    /// directly (tests use small ones, to cut a file into many writes).
    ///
    /// # Panics
    /// If either is zero.
    pub fn with_chunks(
        file: &'f mut dyn VfsFile,
        chunk_bytes: usize,
        direct_bytes: usize,
    ) -> FileSink<'f> {
        assert!(chunk_bytes > 0 && direct_bytes > 0, "chunks of no bytes");
        FileSink {
            file,
            buf: Vec::new(),
            chunk_bytes,
            direct_bytes,
        }
    }

    fn write_buffer(&mut self) -> io::Result<()> {
        if !self.buf.is_empty() {
            self.file.write_all(&self.buf)?;
            self.buf.clear();
        }
        Ok(())
    }
}

impl SegmentSink for FileSink<'_> {
    fn put(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        if bytes.len() >= self.direct_bytes {
            self.write_buffer()?;
            // Still in chunks, so no single write is longer than a chunk.
            for chunk in bytes.chunks(self.chunk_bytes.max(self.direct_bytes)) {
                self.file.write_all(chunk)?;
            }
            return Ok(());
        }
        if self.buf.capacity() == 0 {
            self.buf.reserve_exact(self.chunk_bytes);
        }
        while !bytes.is_empty() {
            let room = self.chunk_bytes - self.buf.len();
            let (now, later) = bytes.split_at(room.min(bytes.len()));
            self.buf.extend_from_slice(now);
            bytes = later;
            if self.buf.len() == self.chunk_bytes {
                self.write_buffer()?;
            }
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.write_buffer()
    }
}
