//! `Bucket`: one store's objects under a prefix, driven blocking on a runtime of its own.

use std::fmt;
use std::future::Future;
use std::ops::Range;
use std::sync::Arc;
use std::time::SystemTime;

use futures_util::TryStreamExt;
use object_store::aws::{AmazonS3, AmazonS3Builder, S3ConditionalPut};
use object_store::local::LocalFileSystem;
use object_store::path::{Path, PathPart};
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};

use crate::error::RemoteError;

/// Builds an S3 store from `builder` with conditional puts turned on, whatever `builder` (or the
/// environment it was read from) said.
///
/// The tier never runs against a bucket without them: its records are created, never
/// overwritten, and a second writer is fenced by a create that fails. The server must honour
/// `If-None-Match: *` on `PutObject` (AWS S3 has since 2024, as do MinIO, Cloudflare R2 and
/// moto 5.1 and later).
pub fn conditional_s3(builder: AmazonS3Builder) -> object_store::Result<AmazonS3> {
    builder
        .with_conditional_put(S3ConditionalPut::ETagMatch)
        .build()
}

/// What a create-only put found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Created {
    /// The object is ours.
    New,
    /// An object was there already (perhaps our own, from a put whose answer was lost).
    Exists,
}

/// One store's objects in a bucket: every key is under `prefix`. Blocking: each call runs the
/// object store's future to completion on the bucket's own runtime.
pub struct Bucket {
    store: Arc<dyn ObjectStore>,
    prefix: Path,
    runtime: tokio::runtime::Runtime,
    location: String,
}

impl fmt::Debug for Bucket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Bucket")
            .field("location", &self.location)
            .finish_non_exhaustive()
    }
}

impl Bucket {
    /// The objects under `prefix` (may be empty) of `store`.
    pub fn new(store: Arc<dyn ObjectStore>, prefix: &str) -> Result<Bucket, RemoteError> {
        let location = format!("{store}/{prefix}");
        let prefix = Path::parse(prefix).map_err(|e| RemoteError::Url {
            url: location.clone(),
            reason: format!("bad prefix: {e}"),
        })?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| RemoteError::Url {
                url: location.clone(),
                reason: format!("cannot start the runtime that drives the object store: {e}"),
            })?;
        Ok(Bucket {
            store,
            prefix,
            runtime,
            location,
        })
    }

    /// The bucket a URL names: `s3://BUCKET/PREFIX` (credentials, region and endpoint from the
    /// `AWS_*` environment, as the AWS tools read them: `AWS_ENDPOINT` and `AWS_ALLOW_HTTP=true`
    /// for a server such as MinIO or moto) or `file:///ABSOLUTE/PATH` (a folder as the bucket,
    /// created if missing when `create` is set).
    pub fn open_url(url: &str, create: bool) -> Result<Bucket, RemoteError> {
        let refuse = |reason: String| RemoteError::Url {
            url: url.to_owned(),
            reason,
        };
        if let Some(rest) = url.strip_prefix("s3://") {
            let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
            if bucket.is_empty() {
                return Err(refuse("no bucket named (s3://BUCKET/PREFIX)".into()));
            }
            let builder = AmazonS3Builder::from_env().with_bucket_name(bucket);
            let store = conditional_s3(builder).map_err(|e| refuse(e.to_string()))?;
            return Bucket::new(Arc::new(store), prefix.trim_end_matches('/'));
        }
        if let Some(path) = url.strip_prefix("file://") {
            if !path.starts_with('/') {
                return Err(refuse("a file:// URL needs an absolute path".into()));
            }
            if create {
                std::fs::create_dir_all(path).map_err(|e| refuse(format!("{path}: {e}")))?;
            } else if !std::path::Path::new(path).is_dir() {
                return Err(refuse(format!("{path} is not a folder")));
            }
            let store = LocalFileSystem::new_with_prefix(path)
                .map_err(|e| refuse(e.to_string()))?
                .with_automatic_cleanup(true);
            return Bucket::new(Arc::new(store), "");
        }
        Err(refuse(
            "not an object store URL this build reaches (s3://BUCKET/PREFIX or file:///PATH)"
                .into(),
        ))
    }

    /// Where the objects are, for messages.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// The object store beneath.
    pub fn store(&self) -> &Arc<dyn ObjectStore> {
        &self.store
    }

    /// The object store's path of `key`: its `/`-separated parts under the prefix. A part
    /// object_store takes as it is (no control character, not `.` or `..`) is kept byte for
    /// byte, so the names strata writes (the escaped stream ids under `parquet/` included,
    /// whose `%` object_store would escape once more) are the keys in the bucket; any other
    /// part is escaped as object_store escapes it.
    fn path(&self, key: &str) -> Path {
        key.split('/').fold(self.prefix.clone(), |path, part| {
            path.join(PathPart::parse(part).unwrap_or_else(|_| PathPart::from(part)))
        })
    }

    fn block<F: Future>(&self, future: F) -> F::Output {
        self.runtime.block_on(future)
    }

    /// The whole object at `key`, refused (`RemoteError::Bound`, before its body is read) if
    /// it holds more than `max` bytes: a damaged or hostile bucket cannot make a reader
    /// allocate without end.
    pub(crate) fn get(&self, key: &str, max: u64) -> Result<Vec<u8>, RemoteError> {
        let path = self.path(key);
        let got = self.block(async {
            let result = self.store.get(&path).await?;
            let size = result.meta.size;
            if size > max {
                return Ok(Err(size));
            }
            result.bytes().await.map(Ok)
        });
        match got {
            Ok(Ok(bytes)) => Ok(bytes.to_vec()),
            Ok(Err(size)) => Err(RemoteError::Bound {
                reason: format!(
                    "{}/{key} holds {size} bytes, more than the {max} a reader takes of it",
                    self.location
                ),
            }),
            Err(e) => Err(RemoteError::object(key, e)),
        }
    }

    /// The object at `key` (at most `max` bytes, as [`Bucket::get`]), or `None` if there is
    /// none.
    pub(crate) fn get_opt(&self, key: &str, max: u64) -> Result<Option<Vec<u8>>, RemoteError> {
        match self.get(key, max) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(RemoteError::Missing { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Bytes `range` of the object at `key`.
    pub(crate) fn get_range(&self, key: &str, range: Range<u64>) -> Result<Vec<u8>, RemoteError> {
        let path = self.path(key);
        self.block(self.store.get_range(&path, range))
            .map(|b| b.to_vec())
            .map_err(|e| RemoteError::object(key, e))
    }

    /// Puts `bytes` at `key` unless an object is there (never overwrites).
    pub(crate) fn put_create(&self, key: &str, bytes: Vec<u8>) -> Result<Created, RemoteError> {
        let path = self.path(key);
        let options = PutOptions::from(PutMode::Create);
        match self.block(self.store.put_opts(&path, PutPayload::from(bytes), options)) {
            Ok(_) => Ok(Created::New),
            Err(object_store::Error::AlreadyExists { .. }) => Ok(Created::Exists),
            Err(e) => Err(RemoteError::object(key, e)),
        }
    }

    /// Puts `bytes` at `key`, over whatever is there (a whole put: readers see the old object
    /// or the new, never part of one).
    pub(crate) fn put(&self, key: &str, bytes: Vec<u8>) -> Result<(), RemoteError> {
        let path = self.path(key);
        self.block(self.store.put(&path, PutPayload::from(bytes)))
            .map(|_| ())
            .map_err(|e| RemoteError::object(key, e))
    }

    /// Deletes the object at `key` (a missing one is not an error).
    pub(crate) fn delete(&self, key: &str) -> Result<(), RemoteError> {
        let path = self.path(key);
        match self.block(self.store.delete(&path)) {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(RemoteError::object(key, e)),
        }
    }

    /// When the object at `key` was last written, by the object store's clock.
    pub(crate) fn modified(&self, key: &str) -> Result<SystemTime, RemoteError> {
        let path = self.path(key);
        self.block(self.store.head(&path))
            .map(|meta| SystemTime::from(meta.last_modified))
            .map_err(|e| RemoteError::object(key, e))
    }

    /// The keys under folder `dir` (relative to the prefix, without `dir/`), with when each was
    /// last written by the object store's clock.
    pub(crate) fn list_modified(
        &self,
        dir: &str,
    ) -> Result<Vec<(String, SystemTime)>, RemoteError> {
        let folder = self.path(dir);
        let metas: Vec<object_store::ObjectMeta> = self
            .block(self.store.list(Some(&folder)).try_collect())
            .map_err(|e| RemoteError::object(dir, e))?;
        Ok(metas
            .into_iter()
            .filter_map(|meta| {
                let mut parts = meta.location.prefix_match(&folder)?;
                let name = parts.next()?.as_ref().to_owned();
                parts
                    .next()
                    .is_none()
                    .then(|| (name, SystemTime::from(meta.last_modified)))
            })
            .collect())
    }

    /// Every key under folder `dir` however deep, relative to `dir` (`a/b` for `dir/a/b`),
    /// sorted, with its size and when it was last written by the object store's clock.
    pub(crate) fn list_deep_meta(
        &self,
        dir: &str,
    ) -> Result<Vec<(String, u64, SystemTime)>, RemoteError> {
        let folder = self.path(dir);
        let metas: Vec<object_store::ObjectMeta> = self
            .block(self.store.list(Some(&folder)).try_collect())
            .map_err(|e| RemoteError::object(dir, e))?;
        let mut keys: Vec<(String, u64, SystemTime)> = metas
            .into_iter()
            .filter_map(|meta| {
                let parts: Vec<String> = meta
                    .location
                    .prefix_match(&folder)?
                    .map(|part| part.as_ref().to_owned())
                    .collect();
                (!parts.is_empty()).then(|| {
                    (
                        parts.join("/"),
                        meta.size,
                        SystemTime::from(meta.last_modified),
                    )
                })
            })
            .collect();
        keys.sort();
        Ok(keys)
    }

    /// The keys under folder `dir` (relative to the prefix, without `dir/`), sorted, with their
    /// sizes; only those after `after` if given.
    pub(crate) fn list(
        &self,
        dir: &str,
        after: Option<&str>,
    ) -> Result<Vec<(String, u64)>, RemoteError> {
        let folder = self.path(dir);
        let metas: Vec<object_store::ObjectMeta> = self
            .block(async {
                match after {
                    Some(name) => {
                        let offset = folder.clone().join(name);
                        self.store
                            .list_with_offset(Some(&folder), &offset)
                            .try_collect()
                            .await
                    }
                    None => self.store.list(Some(&folder)).try_collect().await,
                }
            })
            .map_err(|e| RemoteError::object(dir, e))?;
        let mut keys: Vec<(String, u64)> = metas
            .into_iter()
            .filter_map(|meta| {
                let mut parts = meta.location.prefix_match(&folder)?;
                let name = parts.next()?.as_ref().to_owned();
                // Only direct children: nothing strata writes nests deeper.
                parts.next().is_none().then_some((name, meta.size))
            })
            .filter(|(name, _)| after.is_none_or(|a| name.as_str() > a))
            .collect();
        keys.sort();
        Ok(keys)
    }
}
