//! `--remote URL`: a writer publishes its store to a bucket when its command is done; a reader
//! boots the bucket as a replica (docs/remote.md, "The command line").

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use strata::remote::{Adoption, Bucket, Publisher, RemoteConfig, RemoteError, Replica};
use strata::{Config, Store};

use super::{Failure, count, grouped, open_existing};

/// Whether publishers write Parquet beside the segments and commit the tables
/// (`--remote-parquet`), and the tables' retention in seconds (`--remote-table-retention`):
/// set once, before any command runs, and read by every publisher the command attaches.
static PARQUET: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();

/// Makes every publisher of this process write Parquet beside the segments and commit the
/// tables (`--remote-parquet`), keeping replaced versions `retention` seconds (the default's
/// when `None`).
pub fn write_parquet(retention: Option<u64>) {
    let _ = PARQUET.set(retention);
}

/// The tier's settings a publisher of this process attaches with.
fn publisher_config() -> RemoteConfig {
    let config = RemoteConfig::default();
    match PARQUET.get() {
        None => config,
        Some(retention) => {
            let retention = retention.map_or(config.table_retention, Duration::from_secs);
            config.parquet(true).table_retention(retention)
        }
    }
}

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
            Publisher::attach(store, bucket, publisher_config()).map_err(|e| failed(&e))?;
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
        let mut said = match (published.seq, published.restored.is_empty()) {
            (None, true) => "already up to date".to_owned(),
            (None, false) => format!(
                "{}, {} bytes; the log was already up to date",
                restored(&published.restored),
                grouped(published.bytes),
            ),
            (Some(seq), _) => format!(
                "{} ({} bytes) and log/{seq}{}",
                count(published.segments as u64, "segment", "segments"),
                grouped(published.bytes),
                if published.reset { " (a reset)" } else { "" }
            ),
        };
        if published.seq.is_some() && !published.restored.is_empty() {
            let _ = write!(said, "; of them, {}", restored(&published.restored));
        }
        if published.parquet + published.parquet_deleted + published.table_versions > 0 {
            let _ = write!(
                said,
                "; Parquet beside the segments: {} put ({} bytes), {} deleted, {} committed",
                count(published.parquet as u64, "object", "objects"),
                grouped(published.parquet_bytes),
                grouped(published.parquet_deleted as u64),
                count(
                    published.table_versions as u64,
                    "table version",
                    "table versions"
                ),
            );
        }
        Ok(said)
    }

    fn failed(&self, error: &RemoteError) -> Failure {
        publish_failure(&self.dir, &self.url, error)
    }
}

/// `put back 1 segment the bucket had lost (seg/…)`: the segments a publish put again.
fn restored(names: &[u64]) -> String {
    let mut keys: Vec<String> = names
        .iter()
        .take(4)
        .map(|&n| format!("seg/{n:012}.seg"))
        .collect();
    if names.len() > 4 {
        keys.push(format!("… {} more", names.len() - 4));
    }
    format!(
        "put back {} the bucket had lost ({})",
        count(names.len() as u64, "segment", "segments"),
        keys.join(", ")
    )
}

fn publish_failure(dir: &Path, url: &str, error: &RemoteError) -> Failure {
    let shown = dir.display();
    let next = match error {
        RemoteError::Diverged { .. } => adopt_hint(dir, url),
        RemoteError::Unreadable { key, .. } if key.starts_with("log/") => adopt_hint(dir, url),
        // A deleted `log/` object cannot be put back (its header names the epoch and parent of
        // the writer that put it), so publishing again meets the same refusal.
        RemoteError::Missing { key } if key.starts_with("log/") => adopt_hint(dir, url),
        RemoteError::Lost { .. } => format!(
            "the segment is gone from both; `engine-fsck {}` reports what the store holds",
            dir.display()
        ),
        RemoteError::Fenced { .. } => {
            "the local store keeps everything; another writer has the bucket now".to_owned()
        }
        RemoteError::Identity { .. }
        | RemoteError::Url { .. }
        | RemoteError::Refused { .. }
        | RemoteError::Unreadable { .. } => "the local store keeps everything".to_owned(),
        _ => "the local store keeps everything; publishing again resumes".to_owned(),
    };
    Failure::new(format!("cannot publish {shown} to {url}: {error} ({next})"))
}

/// What to do when the bucket will not take this store's history as a continuation of its own
/// (and publishing again would meet the same refusal).
fn adopt_hint(dir: &Path, url: &str) -> String {
    let shown = dir.display();
    format!(
        "the local store keeps everything; if this store's history is the one the bucket should \
         hold, `strata --store {shown} --remote {url} adopt` says what putting it in the \
         bucket's place would delete"
    )
}

/// `strata --store DIR --remote URL adopt [--discard-bucket-history]`: says what putting the
/// store's history in the bucket's place deletes (after the grace period), and with the flag
/// does it.
pub fn adopt(dir: &Path, url: &str, args: &super::args::AdoptArgs) -> Result<ExitCode, Failure> {
    let mut store = open_existing(dir)?;
    let failed = |error: &RemoteError| {
        Failure::new(format!("cannot adopt {url} for {}: {error}", dir.display()))
    };
    let bucket = Bucket::open_url(url, true).map_err(|e| failed(&e))?;
    let config = publisher_config();
    if !args.discard_bucket_history {
        let plan = Publisher::plan_adoption(&store, &bucket, &config).map_err(|e| failed(&e))?;
        super::print(&describe_adoption(url, &plan, false))?;
        return Err(Failure::new(format!(
            "refusing to adopt {url} without --discard-bucket-history; nothing was changed"
        )));
    }
    let (mut publisher, adoption) =
        Publisher::adopt(&mut store, bucket, config).map_err(|e| failed(&e))?;
    super::print_summary(&describe_adoption(url, &adoption, true))?;
    // Whatever an earlier history left past its grace (nothing of the one just replaced).
    if let Err(error) = publisher.collect() {
        eprintln!(
            "strata: warning: deleting what the grace period no longer protects failed: {error}"
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn describe_adoption(url: &str, adoption: &Adoption, done: bool) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let replaces = match adoption.replaces {
        Some(seq) => format!("the history of log/0..={seq}"),
        None => "an empty log".to_owned(),
    };
    let minutes = adoption.grace.as_secs().div_ceil(60);
    let _ = writeln!(
        out,
        "{} {url}: log/{} (a reset marked adopted) {} {replaces}",
        if done { "adopted" } else { "adopting" },
        adoption.seq,
        if done { "replaced" } else { "would replace" },
    );
    if done {
        let p = &adoption.published;
        let _ = writeln!(
            out,
            "  uploaded {} ({} bytes); {} already there",
            count(p.segments as u64, "segment", "segments"),
            grouped(p.bytes),
            p.already_there
        );
    }
    let names = |keys: Vec<String>| {
        let n = keys.len();
        let mut shown: Vec<String> = keys.into_iter().take(6).collect();
        if n > 6 {
            shown.push(format!("… {} more", n - 6));
        }
        shown.join(", ")
    };
    let _ = writeln!(
        out,
        "  deleted once the grace period ({minutes} min) has passed, by a later writing command: \
         {} and {} that only the old history holds{}",
        count(adoption.logs.len() as u64, "log/ object", "log/ objects"),
        count(adoption.segments.len() as u64, "segment", "segments"),
        if adoption.logs.is_empty() && adoption.segments.is_empty() {
            String::new()
        } else {
            format!(
                " ({})",
                names(
                    adoption
                        .logs
                        .iter()
                        .map(|s| format!("log/{s}"))
                        .chain(
                            adoption
                                .segments
                                .iter()
                                .map(|&n| format!("seg/{n:012}.seg"))
                        )
                        .collect()
                )
            )
        }
    );
    if !adoption.collisions.is_empty() {
        let _ = writeln!(
            out,
            "  refused: the bucket holds {} under names this store uses, with other bytes ({}); \
             its replicas may still read them, so publish this store to another prefix instead",
            count(adoption.collisions.len() as u64, "segment", "segments"),
            names(
                adoption
                    .collisions
                    .iter()
                    .map(|&n| format!("seg/{n:012}.seg"))
                    .collect()
            )
        );
    }
    out
}

/// Boots a replica of the bucket `url` names with `config`; it never writes to the bucket.
pub fn open_replica(url: &str, config: Config) -> Result<Replica, Failure> {
    Replica::open_url(url, config, RemoteConfig::default())
        .map_err(|error| Failure::new(format!("cannot read {url} as a replica: {error}")))
}
