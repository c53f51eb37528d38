//! `FaultStore`: object_store's `InMemory` with a fault armed at a chosen put (it fails before
//! it lands, lands but loses its acknowledgement, or lands torn), and a hook run just before a
//! chosen put goes through. What the fault tests (`faults.rs`, `chain.rs`) drive the tier over.
//! It also counts the requests of each kind it serves, so a test can price a publish.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use futures_util::stream::BoxStream;
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult,
};
use strata_remote::Bucket;

/// What the fault does to the put it strikes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The put fails and nothing lands.
    FailBefore,
    /// The put lands, but its caller is told it failed.
    LostAck,
    /// Half the bytes land, and the caller is told it failed.
    Torn,
}

pub type Hook = Box<dyn FnOnce() + Send>;

#[derive(Default)]
struct Plan {
    puts: u64,
    fault: Option<(u64, Fault)>,
    fired: u64,
    hook: Option<(u64, Hook)>,
}

/// How many requests of each kind an object store served: what a publish costs on S3, where
/// each is one request (a LIST of more than 1,000 keys is one request per 1,000).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Requests {
    pub puts: u64,
    pub gets: u64,
    pub heads: u64,
    pub lists: u64,
    pub deletes: u64,
}

#[derive(Default)]
struct Counters {
    gets: AtomicU64,
    heads: AtomicU64,
    lists: AtomicU64,
    deletes: AtomicU64,
}

/// `InMemory`, with a fault armed at the k-th put, and a hook run (on a thread of its own)
/// just before the k-th put goes through.
pub struct FaultStore {
    inner: InMemory,
    plan: Mutex<Plan>,
    counters: Arc<Counters>,
}

impl FaultStore {
    pub fn new() -> Arc<FaultStore> {
        Arc::new(FaultStore {
            inner: InMemory::new(),
            plan: Mutex::new(Plan::default()),
            counters: Arc::new(Counters::default()),
        })
    }

    /// The requests served so far.
    pub fn requests(&self) -> Requests {
        let count = |c: &AtomicU64| c.load(Ordering::SeqCst);
        Requests {
            puts: self.puts(),
            gets: count(&self.counters.gets),
            heads: count(&self.counters.heads),
            lists: count(&self.counters.lists),
            deletes: count(&self.counters.deletes),
        }
    }

    fn plan(&self) -> std::sync::MutexGuard<'_, Plan> {
        self.plan.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Arms `fault` at the `k`-th put from now (1 is the next).
    pub fn arm(&self, k: u64, fault: Fault) {
        let mut plan = self.plan();
        plan.fault = Some((plan.puts + k, fault));
    }

    /// Runs `hook` just before the `k`-th put from now.
    pub fn before_put(&self, k: u64, hook: Hook) {
        let mut plan = self.plan();
        plan.hook = Some((plan.puts + k, hook));
    }

    /// Drops a hook whose put never came.
    pub fn disarm(&self) {
        self.plan().hook = None;
    }

    pub fn puts(&self) -> u64 {
        self.plan().puts
    }

    pub fn fired(&self) -> u64 {
        self.plan().fired
    }

    pub fn bucket(self: &Arc<Self>) -> Bucket {
        Bucket::new(Arc::clone(self) as Arc<dyn ObjectStore>, "store-1").expect("a bucket")
    }
}

fn injected(what: &str) -> object_store::Error {
    object_store::Error::Generic {
        store: "FaultStore",
        source: format!("injected: {what}").into(),
    }
}

impl fmt::Debug for FaultStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("FaultStore")
    }
}

impl fmt::Display for FaultStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("FaultStore")
    }
}

#[async_trait]
impl ObjectStore for FaultStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        let (n, hook) = {
            let mut plan = self.plan();
            plan.puts += 1;
            let n = plan.puts;
            let hook = match plan.hook.take() {
                Some((at, hook)) if at == n => Some(hook),
                other => {
                    plan.hook = other;
                    None
                }
            };
            (n, hook)
        };
        if let Some(hook) = hook {
            // Its own thread: the hook drives another Bucket's runtime, which cannot start
            // inside this one's.
            std::thread::spawn(hook).join().expect("the hook ran");
        }
        let fault = {
            let mut plan = self.plan();
            match plan.fault {
                Some((at, fault)) if at == n => {
                    plan.fault = None;
                    plan.fired += 1;
                    Some(fault)
                }
                _ => None,
            }
        };
        match fault {
            None => self.inner.put_opts(location, payload, opts).await,
            Some(Fault::FailBefore) => Err(injected("the put failed before it landed")),
            Some(Fault::LostAck) => {
                self.inner.put_opts(location, payload, opts).await?;
                Err(injected("the put landed, its acknowledgement was lost"))
            }
            Some(Fault::Torn) => {
                let bytes: Vec<u8> = payload.iter().flat_map(|b| b.iter().copied()).collect();
                let half = PutPayload::from(bytes[..bytes.len() / 2].to_vec());
                self.inner.put_opts(location, half, opts).await?;
                Err(injected("the put was torn"))
            }
        }
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(
        &self,
        location: &Path,
        options: GetOptions,
    ) -> object_store::Result<GetResult> {
        let counter = if options.head {
            &self.counters.heads
        } else {
            &self.counters.gets
        };
        counter.fetch_add(1, Ordering::SeqCst);
        self.inner.get_opts(location, options).await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<Path>>,
    ) -> BoxStream<'static, object_store::Result<Path>> {
        use futures_util::StreamExt;
        let counters = Arc::clone(&self.counters);
        self.inner.delete_stream(
            locations
                .inspect(move |_| {
                    counters.deletes.fetch_add(1, Ordering::SeqCst);
                })
                .boxed(),
        )
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.counters.lists.fetch_add(1, Ordering::SeqCst);
        self.inner.list(prefix)
    }

    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.counters.lists.fetch_add(1, Ordering::SeqCst);
        self.inner.list_with_offset(prefix, offset)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> object_store::Result<ListResult> {
        self.counters.lists.fetch_add(1, Ordering::SeqCst);
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(
        &self,
        from: &Path,
        to: &Path,
        options: CopyOptions,
    ) -> object_store::Result<()> {
        self.inner.copy_opts(from, to, options).await
    }
}
