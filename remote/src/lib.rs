//! strata-remote: the object-storage tier of #17, first brick.
//!
//! The tier will upload sealed segments and publish the manifest's records to a bucket through the
//! [`object_store`] crate. This first brick holds no tier yet: it fixes the client (object_store
//! with its S3 backend only, over reqwest and rustls) and proves, in its integration tests, the
//! primitives the tier will rest on, against a real S3-compatible server (moto's server mode, which
//! the tests start and stop themselves on loopback) and against [`object_store::memory::InMemory`]
//! alike:
//!
//! - a put and a get round-trip the bytes, and a ranged get (bounded, from an offset, or a suffix)
//!   returns exactly that slice;
//! - [`PutMode::Create`](object_store::PutMode::Create) on a key that exists fails with
//!   [`Error::AlreadyExists`](object_store::Error::AlreadyExists) and leaves the first bytes in
//!   place, and of two racing creates exactly one wins: the conditional put that the tier's
//!   records and its writer fencing will rely on;
//! - a list under a prefix returns the keys with their sizes, in lexicographic order (S3 and
//!   `InMemory` both sort; the trait itself does not promise it);
//! - a get of a missing key is [`Error::NotFound`](object_store::Error::NotFound), naming the key.
//!
//! Because `InMemory` behaves as the real server does for these primitives, the tier's fault tests
//! can run over it (wrapped to fail or tear puts) rather than over a server.

#![forbid(unsafe_code)]

pub use object_store;

use object_store::aws::{AmazonS3, AmazonS3Builder, S3ConditionalPut};

/// Builds an S3 store from `builder` with conditional puts turned on, whatever `builder` (or the
/// environment it was read from) said.
///
/// The tier never runs against a bucket without them: its records are created, never
/// overwritten, and a second writer is fenced by a create that fails. With conditional puts off,
/// object_store refuses [`PutMode::Create`](object_store::PutMode::Create) on S3 rather than
/// silently overwriting, but the tier would then be unable to write at all; turning them on here
/// makes the requirement explicit. The server must honour `If-None-Match: *` on `PutObject`
/// (AWS S3 has since 2024, as do MinIO, Cloudflare R2 and moto 5.1 and later).
pub fn conditional_s3(builder: AmazonS3Builder) -> object_store::Result<AmazonS3> {
    builder
        .with_conditional_put(S3ConditionalPut::ETagMatch)
        .build()
}
