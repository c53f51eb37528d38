//! `--remote URL`: a writer publishes its store to a bucket when its command is done; a reader
//! boots the bucket as a replica (docs/remote.md, "The command line").

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use strata::remote::{Bucket, Publisher, RemoteConfig, RemoteError, Replica};
use strata::{Config, Store};

use super::{Failure, count, grouped, open_existing};

/// After a writing command ended with `code` (success, or 3 for an ingest or compact a signal
/// stopped after sealing): uploads what the store in `dir` made durable and the records that
/// claim it, then deletes what the grace period no longer protects. The command's exit code
/// stands unless the publish fails (exit 1, the command's own work kept locally: run any
/// writing command with --remote again, `strata seal` for one that writes nothing, to retry).
pub fn publish_after(dir: &Path, url: &str, code: ExitCode) -> Result<ExitCode, Failure> {
    let store = open_existing(dir)?;
    let mut publishing = Publishing::attach(dir, url, &store)?;
    let said = publishing.publish(&store)?;
    // Deletes what was retired more than the grace period ago, by the object store's clock
    // (an earlier command's retirements), and the epoch markers of earlier writers.
    let deleted = match publishing.publisher.collect() {
        Ok(collected) => match (collected.segments + collected.logs) as u64 {
            0 => String::new(),
            n => format!(
                "; deleted {} past the grace period",
                count(n, "object", "objects")
            ),
        },
        // The command and its publish succeeded: a delete refused (a bucket policy without
        // delete, an object lock) is said, and the objects wait for a later collect.
        Err(error) => {
            format!("; warning: deleting what the grace period no longer protects failed: {error}")
        }
    };
    eprintln!("strata: published to {url}: {said}{deleted}");
    Ok(code)
}

/// A publisher of the store in a folder to the bucket a URL names, whose failures name both.
pub struct Publishing {
    publisher: Publisher,
    dir: PathBuf,
    url: String,
}

impl Publishing {
    /// Attaches `store` (opened from `dir`) to the bucket `url` names, creating a `file://`
    /// folder if missing.
    pub fn attach(dir: &Path, url: &str, store: &Store) -> Result<Publishing, Failure> {
        let failed = |error: &RemoteError| publish_failure(dir, url, error);
        let bucket = Bucket::open_url(url, true).map_err(|e| failed(&e))?;
        let publisher =
            Publisher::attach(store, bucket, RemoteConfig::default()).map_err(|e| failed(&e))?;
        Ok(Publishing {
            publisher,
            dir: dir.to_owned(),
            url: url.to_owned(),
        })
    }

    /// Publishes what `store` made durable since the last publish; says what it put.
    pub fn publish(&mut self, store: &Store) -> Result<String, Failure> {
        let published = self
            .publisher
            .publish(store)
            .map_err(|error| self.failed(&error))?;
        Ok(match published.seq {
            None => "already up to date".to_owned(),
            Some(seq) => format!(
                "{} ({} bytes) and log/{seq}{}",
                count(published.segments as u64, "segment", "segments"),
                grouped(published.bytes),
                if published.reset { " (a reset)" } else { "" }
            ),
        })
    }

    fn failed(&self, error: &RemoteError) -> Failure {
        publish_failure(&self.dir, &self.url, error)
    }
}

fn publish_failure(dir: &Path, url: &str, error: &RemoteError) -> Failure {
    Failure::new(format!(
        "cannot publish {} to {url}: {error} (the local store keeps everything; publishing again \
         resumes)",
        dir.display()
    ))
}

/// Boots a replica of the bucket `url` names with `config`; it never writes to the bucket.
pub fn open_replica(url: &str, config: Config) -> Result<Replica, Failure> {
    Replica::open_url(url, config, RemoteConfig::default())
        .map_err(|error| Failure::new(format!("cannot read {url} as a replica: {error}")))
}
