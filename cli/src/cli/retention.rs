//! `strata --store DIR retention [STREAM [--raw LIFETIME] [--levels-from K=LIFETIME ...]
//! [--clear]]`: the retention the command line applies, kept in `DIR/retention.json`
//! (docs/retention.md, "The command line"), and how the commands that compact load it.
//!
//! The engine never reads the file: `Config::retention` is how an embedder declares retention.
//! The commands that compact (`compact`, `ingest`) read the file into that setting each time they
//! open the store, and the engine's sweeps apply it. A change is checked by opening the store with
//! the whole new setting (the engine refuses an unknown stream, an axis span on a stream without
//! an axis, lifetimes of two kinds, a coarser level retiring before a finer one) before the file
//! is written, so a refused change leaves the file as it was. The file is replaced atomically:
//! written beside it, synced, renamed over it, and the folder synced; the store's lock is held
//! throughout, so two changes never interleave.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write as _};
use std::path::Path;
use std::process::ExitCode;

use strata::index::shell_word;
use strata::recover::retention_file::{
    LifetimeSpec, RETENTION_FILE, RetentionFile, StreamRetention, parse_retention,
    render_retention, undeclared_problem, undeclared_streams,
};
use strata::segment::vfs::RealFs;
use strata::{Config, EngineError, Lifetime, Retention, Store};

use super::args::{ReadFormat, RetentionArgs};
use super::{Failure, declared, open_failure, print, print_summary, unknown_stream, warn_healed};

/// Where a change is written before it is renamed over `retention.json`.
const RETENTION_TEMP: &str = "retention.json.tmp";

pub fn run(dir: &Path, args: &RetentionArgs) -> Result<ExitCode, Failure> {
    let changes = args.raw.is_some() || !args.levels_from.is_empty() || args.clear;
    match &args.stream {
        Some(stream) if changes => set(dir, stream, args),
        stream => show(dir, stream.as_deref(), args.format),
    }
}

/// The store's `retention.json`, as the engine's setting: empty when there is none. A file
/// that cannot be read or parsed, or that names a stream the store does not declare, is a
/// failure naming it, what is wrong and how to fix it.
pub(super) fn load(dir: &Path) -> Result<BTreeMap<String, Retention>, Failure> {
    let file = read(dir)?.unwrap_or_default();
    if !file.is_empty() {
        refuse_undeclared(dir, &file, &declared_streams(dir)?)?;
    }
    Ok(file
        .iter()
        .map(|(stream, kept)| (stream.clone(), to_engine(kept)))
        .collect())
}

/// Refuses `file` whole while it names a stream that is not in `declared`, naming the file,
/// the stream, and the command that removes its entry.
fn refuse_undeclared(dir: &Path, file: &RetentionFile, declared: &[String]) -> Result<(), Failure> {
    let undeclared = undeclared_streams(file, |id| declared.iter().any(|d| d == id));
    match undeclared.first() {
        None => Ok(()),
        Some(stream) => Err(Failure::new(format!(
            "the retention in {} is refused: it {}",
            dir.join(RETENTION_FILE).display(),
            undeclared_problem(stream)
        ))),
    }
}

/// The streams the store in `dir` declares, read from its manifest as `fsck` reads it (no
/// lock, nothing written).
fn declared_streams(dir: &Path) -> Result<Vec<String>, Failure> {
    let vfs = RealFs::open(dir).map_err(|error| {
        Failure::new(format!(
            "cannot open {} as a store folder: {error}",
            dir.display()
        ))
    })?;
    let plan = strata::recover::inspect(&vfs).map_err(|error| {
        Failure::new(format!("cannot open the store {}: {error}", dir.display()))
    })?;
    Ok(plan.catalog.streams().map(|d| d.id.clone()).collect())
}

/// Opens the store in `dir` with `config`, whose retention is what `load` read from
/// `retention.json`, to compact (the sweeps compaction runs apply it). A refused retention is a
/// failure naming the file.
pub(super) fn open_to_compact(dir: &Path, config: Config) -> Result<Store, Failure> {
    let store = Store::open(dir, config, &[]).map_err(|error| match error {
        EngineError::Config {
            setting: "retention",
            reason,
        } => Failure::new(format!(
            "the retention in {} is refused: {reason}; change it with `strata retention`",
            dir.join(RETENTION_FILE).display()
        )),
        other => open_failure(dir, &other),
    })?;
    warn_healed(dir, store.boot_report());
    Ok(store)
}

/// The file, parsed; `None` when there is none.
fn read(dir: &Path) -> Result<Option<RetentionFile>, Failure> {
    let path = dir.join(RETENTION_FILE);
    let bytes = match fs::read(&path) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(error) => {
            return Err(Failure::new(format!(
                "cannot read {}: {error}",
                path.display()
            )));
        }
    };
    parse_retention(&bytes).map(Some).map_err(|error| {
        Failure::new(format!(
            "{} is malformed: {error}; fix it by hand or remove it (then set retention again \
             with `strata retention`)",
            path.display()
        ))
    })
}

fn to_engine(kept: &StreamRetention) -> Retention {
    // The file's order is kept, not sorted as `levels_from` would: a file whose levels do not
    // ascend is refused at open, naming the file, rather than silently reordered.
    let mut retention = Retention::raw(lifetime(kept.raw));
    retention.levels = kept.levels.iter().map(|&(k, l)| (k, lifetime(l))).collect();
    retention
}

fn lifetime(spec: LifetimeSpec) -> Lifetime {
    match spec {
        LifetimeSpec::Forever => Lifetime::Forever,
        LifetimeSpec::AxisSpan(span) => Lifetime::AxisSpan(span),
        LifetimeSpec::Positions(count) => Lifetime::Positions(count),
    }
}

/// Changes `stream`'s retention: checked by the store, then written.
fn set(dir: &Path, stream: &str, args: &RetentionArgs) -> Result<ExitCode, Failure> {
    let mut levels: BTreeMap<u8, LifetimeSpec> = BTreeMap::new();
    for &(level, spec) in &args.levels_from {
        if levels
            .insert(level, spec)
            .is_some_and(|earlier| earlier != spec)
        {
            return Err(Failure::new(format!(
                "--levels-from names level {level} twice, with different lifetimes; \
                 {RETENTION_FILE} is unchanged"
            )));
        }
    }
    let before = read(dir)?;
    let declared_ids = declared_streams(dir)?;
    if !declared_ids.iter().any(|d| d == stream) {
        return remove_undeclared(dir, stream, args, before, &declared_ids);
    }
    let mut file = before.clone().unwrap_or_default();
    let mut kept = if args.clear {
        StreamRetention::default()
    } else {
        file.get(stream).cloned().unwrap_or_default()
    };
    if let Some(raw) = args.raw {
        kept.raw = raw;
    }
    if !levels.is_empty() {
        let mut merged: BTreeMap<u8, LifetimeSpec> = kept.levels.iter().copied().collect();
        merged.extend(levels);
        kept.levels = merged.into_iter().collect();
    }
    if kept.is_forever() {
        file.remove(stream);
    } else {
        file.insert(stream.to_owned(), kept);
    }
    // Every other entry must name a declared stream too, or `compact` would refuse the file.
    refuse_undeclared(dir, &file, &declared_ids)
        .map_err(|refused| Failure::new(format!("{refused}; {RETENTION_FILE} is unchanged")))?;
    // The store checks the whole setting as `compact` will open it; its lock is held until the
    // file is written.
    let config = Config::default().retention(
        file.iter()
            .map(|(s, k)| (s.clone(), to_engine(k)))
            .collect(),
    );
    let store = Store::open(dir, config, &[]).map_err(|error| match error {
        EngineError::Config {
            setting: "retention",
            reason,
        } => Failure::new(format!("refused: {reason}; {RETENTION_FILE} is unchanged")),
        other => open_failure(dir, &other),
    })?;
    warn_healed(dir, store.boot_report());
    declared(&store, stream)?;
    if before.as_ref() != Some(&file) {
        replace_file(dir, &file)?;
    }
    drop(store);
    let mut out = String::new();
    match args.format {
        ReadFormat::Table => {
            let _ = writeln!(out, "{}", line(stream, file.get(stream), true));
        }
        ReadFormat::Json => {
            let shown = BTreeMap::from([(stream, file.get(stream).cloned().unwrap_or_default())]);
            out = to_json(&shown)?;
        }
    }
    print_summary(&out)?;
    Ok(ExitCode::SUCCESS)
}

/// Replaces the store's retention file with `file`, whole or not at all.
fn replace_file(dir: &Path, file: &RetentionFile) -> Result<(), Failure> {
    write_atomically(dir, &render_retention(file)).map_err(|error| {
        Failure::new(format!(
            "cannot write {}: {error}; it is unchanged",
            dir.join(RETENTION_FILE).display()
        ))
    })
}

/// `strata retention STREAM --clear` for a stream the store does not declare: removes its
/// entry, the fix a refusal of the file names (the store never applies it, so nothing but the
/// file changes, and the rest of the file need not be valid for this). Anything else asked of
/// an undeclared stream is the unknown stream's refusal.
fn remove_undeclared(
    dir: &Path,
    stream: &str,
    args: &RetentionArgs,
    before: Option<RetentionFile>,
    declared: &[String],
) -> Result<ExitCode, Failure> {
    let unknown = || unknown_stream(stream, declared.iter().map(String::as_str));
    let Some(mut file) = before.filter(|file| file.contains_key(stream)) else {
        return Err(Failure::new(format!(
            "{}; {RETENTION_FILE} is unchanged",
            unknown()
        )));
    };
    if !args.clear || args.raw.is_some() || !args.levels_from.is_empty() {
        return Err(Failure::new(format!(
            "{}; {RETENTION_FILE} names it: `strata retention {} --clear` removes its entry \
             ({RETENTION_FILE} is unchanged)",
            unknown(),
            shell_word(stream)
        )));
    }
    file.remove(stream);
    // The store's lock is held while the file is replaced, as for any change.
    let store = Store::open(dir, Config::default(), &[]).map_err(|e| open_failure(dir, &e))?;
    warn_healed(dir, store.boot_report());
    replace_file(dir, &file)?;
    drop(store);
    let out = match args.format {
        ReadFormat::Table => format!(
            "{stream}: removed from {RETENTION_FILE} (the store declares no stream {stream:?})\n"
        ),
        ReadFormat::Json => to_json(&BTreeMap::<&str, StreamRetention>::new())?,
    };
    print_summary(&out)?;
    Ok(ExitCode::SUCCESS)
}

/// Replaces `retention.json` with `text` whole or not at all: a temp beside it, synced, renamed
/// over it, then the folder synced so the rename is durable.
fn write_atomically(dir: &Path, text: &str) -> io::Result<()> {
    let temp = dir.join(RETENTION_TEMP);
    let written = (|| {
        let mut file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&temp)?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        fs::rename(&temp, dir.join(RETENTION_FILE))
    })();
    if let Err(error) = written {
        let _ = fs::remove_file(&temp);
        return Err(error);
    }
    File::open(dir)?.sync_all()
}

/// Shows the retention of `stream`, or of every declared stream, without taking the store's
/// lock (the streams come from the manifest, read as `fsck` reads it).
fn show(dir: &Path, stream: Option<&str>, format: ReadFormat) -> Result<ExitCode, Failure> {
    let file = read(dir)?;
    let present = file.is_some();
    let file = file.unwrap_or_default();
    let declared = declared_streams(dir)?;
    // What the file sets is applied only when the whole file is accepted.
    refuse_undeclared(dir, &file, &declared)?;
    let streams: Vec<String> = match stream {
        Some(stream) if declared.iter().any(|d| d == stream) => vec![stream.to_owned()],
        Some(stream) => {
            return Err(unknown_stream(stream, declared.iter().map(String::as_str)));
        }
        None => declared,
    };
    let mut out = String::new();
    match format {
        ReadFormat::Table => {
            if streams.is_empty() {
                out.push_str("no streams declared\n");
            }
            for id in &streams {
                let _ = writeln!(out, "{}", line(id, file.get(id), present));
            }
        }
        ReadFormat::Json => {
            let shown: BTreeMap<&String, StreamRetention> = streams
                .iter()
                .map(|id| (id, file.get(id).cloned().unwrap_or_default()))
                .collect();
            out = to_json(&shown)?;
        }
    }
    print(&out)?;
    Ok(ExitCode::SUCCESS)
}

/// `c: raw axis:3600; levels 0+ axis:3600, 3+ forever`, or `c: forever (...)`.
fn line(stream: &str, kept: Option<&StreamRetention>, present: bool) -> String {
    match kept {
        Some(kept) => format!("{stream}: {kept}"),
        None if present => format!("{stream}: forever (keeps everything; not in {RETENTION_FILE})"),
        None => format!("{stream}: forever (keeps everything; no {RETENTION_FILE})"),
    }
}

fn to_json(value: &impl serde::Serialize) -> Result<String, Failure> {
    let mut json = serde_json::to_string_pretty(value)
        .map_err(|e| Failure::new(format!("cannot render JSON: {e}")))?;
    json.push('\n');
    Ok(json)
}
