//! `engine-fsck`: look at a strata store without changing it.
//!
//! ```text
//! engine-fsck STORE [--verify] [--json]
//! engine-fsck quarantine STORE [--json] [--purge --yes]
//! engine-fsck repair STORE [--yes]
//! ```
//!
//! Exit codes: 0 clean, 1 findings (including evidence in quarantine), 2 unusable (not a store,
//! no usable manifest, a manifest whose history is damaged, an I/O error, bad arguments, or a
//! refused purge or repair). `repair --yes` exits 0 once it has repaired (or found nothing to). `docs/fsck.md` describes
//! the output and the JSON document.

use std::fmt::Write as _;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use serde::Serialize;
use strata::recover::fsck::{
    self, FsckReport, QuarantineEntry, Status, list_quarantine, purge_quarantine,
};
use strata::recover::{RecoverError, RepairPlan, WayBack, plan_repair};
use strata::segment::vfs::RealFs;

/// Inspects a strata store without changing anything: what boot would find and do, the
/// quarantine's evidence, and per stream and partition the live files, watermark and floors.
#[derive(Debug, Parser)]
#[command(name = "engine-fsck", version, args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// The store folder.
    #[arg(value_name = "STORE", required = true)]
    store: Option<PathBuf>,
    /// Also read every recorded file whole and check its length, digest and every checksum.
    #[arg(long)]
    verify: bool,
    /// Print one JSON document instead of the human report.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Lists the evidence in the store's quarantine/ (exit 1 when there is any).
    Quarantine {
        /// The store folder.
        #[arg(value_name = "STORE")]
        store: PathBuf,
        /// Print one JSON document.
        #[arg(long)]
        json: bool,
        /// Remove every file in quarantine/ for good (needs --yes too).
        #[arg(long)]
        purge: bool,
        /// Confirms --purge.
        #[arg(long, requires = "purge")]
        yes: bool,
    },
    /// Cuts a manifest whose history is damaged back to its trusted prefix, keeping every byte
    /// in quarantine/ and fencing every position the cut records held (needs --yes; without it,
    /// prints what it would do).
    Repair {
        /// The store folder.
        #[arg(value_name = "STORE")]
        store: PathBuf,
        /// Confirms the repair.
        #[arg(long)]
        yes: bool,
    },
}

/// `engine-fsck quarantine STORE --json`: the listing, or what a purge removed.
#[derive(Debug, Serialize)]
struct QuarantineReport {
    store: String,
    status: Status,
    error: Option<String>,
    quarantine: Vec<QuarantineEntry>,
    purged: Option<usize>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let code = match cli.command {
        Some(Command::Quarantine {
            store,
            json,
            purge,
            yes,
        }) => quarantine(&store, json, purge, yes),
        Some(Command::Repair { store, yes }) => repair(&store, yes),
        None => match cli.store {
            Some(store) => check(&store, cli.verify, cli.json),
            // clap requires STORE whenever no subcommand is given; this is only a fallback.
            None => usage_error("a STORE folder is required"),
        },
    };
    ExitCode::from(code)
}

fn check(store: &Path, verify: bool, json: bool) -> u8 {
    let mut report = match open(store) {
        Ok(vfs) => fsck::check(&vfs, verify),
        Err(error) => FsckReport::unusable(error),
    };
    report.store = Some(store.display().to_string());
    let text = if json {
        to_json(&report)
    } else {
        Ok(fsck::render(&report))
    };
    emit(text, report.exit_code())
}

fn quarantine(store: &Path, json: bool, purge: bool, yes: bool) -> u8 {
    if purge && !yes {
        eprintln!(
            "engine-fsck: refusing to purge {}: removing evidence needs --purge --yes; \
             nothing was changed",
            store.display()
        );
        return Status::Unusable.exit_code();
    }
    let mut report = QuarantineReport {
        store: store.display().to_string(),
        status: Status::Clean,
        error: None,
        quarantine: Vec::new(),
        purged: None,
    };
    let outcome = open(store).and_then(|vfs| {
        if purge {
            report.purged = Some(purge_quarantine(&vfs).map_err(|e| e.to_string())?);
        }
        list_quarantine(&vfs).map_err(|e| e.to_string())
    });
    match outcome {
        Ok(entries) => {
            report.status = if entries.is_empty() {
                Status::Clean
            } else {
                Status::Findings
            };
            report.quarantine = entries;
        }
        Err(error) => {
            report.status = Status::Unusable;
            report.error = Some(error);
        }
    }
    // A purge the caller confirmed and that went through is a success, whatever is left (a
    // folder inside quarantine/ is never strata's and is not removed).
    let code = match (report.status, report.purged) {
        (Status::Unusable, _) => Status::Unusable.exit_code(),
        (_, Some(_)) => 0,
        (status, None) => status.exit_code(),
    };
    let text = if json {
        to_json(&report)
    } else {
        Ok(render_quarantine(&report))
    };
    emit(text, code)
}

fn repair(store: &Path, yes: bool) -> u8 {
    let vfs = match open(store) {
        Ok(vfs) => vfs,
        Err(error) => return usage_error(&error),
    };
    let shown = store.display();
    if !yes {
        return match plan_repair(&vfs) {
            Ok(plan) => {
                print!("{}", render_repair_plan(&shown.to_string(), &plan));
                eprintln!(
                    "engine-fsck: refusing to repair {shown} without --yes; nothing was changed"
                );
                Status::Unusable.exit_code()
            }
            Err(RecoverError::NothingToRepair) => {
                println!("strata store {shown}: {}", RecoverError::NothingToRepair);
                0
            }
            Err(error) => usage_error(&format!("{shown}: {error}")),
        };
    }
    match strata::recover::repair(&vfs) {
        Ok(repaired) => {
            let mut text = format!("strata store {shown}: repaired.\n");
            for aside in &repaired.set_aside {
                let _ = writeln!(
                    text,
                    "  set aside: {} ({}) is in quarantine/ as {}",
                    aside.stray.file,
                    aside.stray.what(),
                    aside.to
                );
            }
            if let Some(cut) = &repaired.cut
                && let Some(way_back) = &cut.rebuilt
            {
                let _ = writeln!(
                    text,
                    "  {} was damaged at byte {} in the part written whole; generation {} now \
                     holds the store rebuilt from what survived: {}.",
                    cut.corruption.file,
                    cut.corruption.offset,
                    cut.generation,
                    rebuilt_from(way_back)
                );
            } else if let Some(cut) = &repaired.cut {
                let _ = writeln!(
                    text,
                    "  the manifest was cut at byte {} of {}; generation {} now holds its trusted \
                     prefix.",
                    cut.corruption.offset, cut.corruption.file, cut.generation
                );
                let _ = writeln!(text, "  dropped: {}", cut.corruption.describe_repair());
                for (stream, fence) in &cut.fences {
                    let _ = writeln!(
                        text,
                        "  stream {stream:?}: positions at or below {fence} are fenced (never \
                         reused)"
                    );
                }
            }
            text.push_str(&fsck::render_findings(&repaired.report));
            text.push_str(
                "  every byte is kept in quarantine/ (`engine-fsck quarantine STORE` lists it)\n",
            );
            emit(Ok(text), 0)
        }
        Err(RecoverError::NothingToRepair) => {
            println!("strata store {shown}: {}", RecoverError::NothingToRepair);
            0
        }
        Err(error) => usage_error(&format!("{shown}: {error}")),
    }
}

fn render_repair_plan(store: &str, plan: &RepairPlan) -> String {
    let mut text = String::new();
    for aside in &plan.set_aside {
        let _ = writeln!(
            text,
            "strata store {store}: {} ({} bytes) is not a whole manifest: {}.\n\
             A repair would move it into quarantine/ as {} and go on from the whole generation \
             below it.",
            aside.stray.file,
            aside.stray.len,
            aside.stray.what(),
            aside.to
        );
    }
    let Some(cut) = &plan.cut else {
        text.push_str("  the store then opens as it is; nothing else would change\n");
        return text;
    };
    let corruption = &cut.corruption;
    if let Some(way_back) = &cut.rebuilt {
        let _ = writeln!(
            text,
            "strata store {store}: the manifest {} is damaged at byte {} ({}), in the part written \
             whole.\nA repair would write generation {} holding the store rebuilt from what \
             survived ({}), and then quarantine {} whole.",
            corruption.file,
            corruption.offset,
            corruption.fault,
            cut.generation + 1,
            rebuilt_from(way_back),
            corruption.file,
        );
    } else {
        let _ = write!(
            text,
            "strata store {store}: the manifest {} is damaged at byte {} ({}).\n\
         A repair would write generation {} holding the {} bytes before it, and then quarantine \
         {} whole.\n  it drops: {}\n",
            corruption.file,
            corruption.offset,
            corruption.fault,
            cut.generation + 1,
            corruption.offset,
            corruption.file,
            corruption.describe_repair()
        );
    }
    for (stream, fence) in &cut.fences {
        let _ = writeln!(
            text,
            "  stream {stream:?}: positions at or below {fence} would be fenced (never reused)"
        );
    }
    for file in &cut.files_read {
        let _ = write!(text, "  read for its positions: {}", file.path);
        for (stream, (n_rows, [lo, hi])) in &file.streams {
            let _ = write!(text, "; {stream:?} {n_rows} row(s) at {lo}..={hi}");
        }
        let _ = writeln!(text);
    }
    for path in &cut.files_unreadable {
        let _ = writeln!(text, "  not a readable segment (not used): {path}");
    }
    text
}

/// What a rebuild brings back from, in a few words.
fn rebuilt_from(way_back: &WayBack) -> String {
    match way_back {
        WayBack::Replay { from, n_frames } => format!(
            "the {n_frames} frame(s) from byte {from} on, which hold the whole snapshot and \
             everything appended after it; every acknowledged row is back"
        ),
        WayBack::Predecessor {
            file,
            n_appended,
            n_beyond: 0,
        } => format!(
            "the snapshot taken again from {file} and the {n_appended} frame(s) appended after \
             the damaged one; every acknowledged row is back"
        ),
        WayBack::Predecessor {
            file,
            n_appended,
            n_beyond,
        } => format!(
            "the snapshot taken again from {file} and {n_appended} frame(s) appended after it; \
             {n_beyond} frame(s) past a second failure could not be replayed and their positions \
             are fenced"
        ),
        WayBack::Cut { why } => why.clone(),
    }
}

fn render_quarantine(report: &QuarantineReport) -> String {
    if let Some(error) = &report.error {
        return format!("strata store {}: UNUSABLE: {error}\n", report.store);
    }
    let mut text = fsck::render_quarantine(&report.store, &report.quarantine);
    if let Some(n_removed) = report.purged {
        let noun = if n_removed == 1 { "entry" } else { "entries" };
        text = format!("purged {n_removed} {noun} from quarantine/\n{text}");
    }
    text
}

/// Opens the store folder; a path that is missing or not a folder is unusable, named.
fn open(store: &Path) -> Result<RealFs, String> {
    RealFs::open(store)
        .map_err(|e| format!("cannot open {} as a store folder: {e}", store.display()))
}

fn to_json(value: &impl Serialize) -> Result<String, String> {
    serde_json::to_string_pretty(value)
        .map(|mut text| {
            text.push('\n');
            text
        })
        .map_err(|e| format!("cannot write the JSON report: {e}"))
}

/// Prints `text` and answers `code`; a report that cannot be printed is an unusable run.
fn emit(text: Result<String, String>, code: u8) -> u8 {
    let printed = text.and_then(|text| {
        let mut stdout = io::stdout().lock();
        stdout
            .write_all(text.as_bytes())
            .and_then(|()| stdout.flush())
            .map_err(|e| format!("cannot print the report: {e}"))
    });
    match printed {
        Ok(()) => code,
        Err(error) => usage_error(&error),
    }
}

fn usage_error(message: &str) -> u8 {
    eprintln!("engine-fsck: {message}");
    Status::Unusable.exit_code()
}
