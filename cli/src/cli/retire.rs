//! `strata --store DIR retire STREAM (--track A,B | --all)`: ends whole tracks (`Store::retire`):
//! every tier of every live segment of each partition under the track prefix, rows and levels,
//! in one durable record with the floors it raises past everything they held
//! (docs/retention.md, "The command line"). Retiring every track of a stream needs `--all`, said on purpose.
//!
//! It prints how many partitions, tiers and files it retired, the files it removed, and per
//! partition the floors it recorded; a query, survey or fold of a retired track then exits 4
//! with the floor. A selection with nothing live is a failure (exit 1) naming the stream and
//! selection. What a sweep retires (`strata compact`) is described the same way.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;

use serde::Serialize;
use strata::Swept;
use strata::index::{Tier, TrackKey, selection_word};
use strata::recover::fsck::{level_floors_text, raw_floor_text};

use super::args::{ReadFormat, RetireArgs};
use super::{Failure, count, open_existing, partition_name, print_summary, selection};

pub fn run(dir: &Path, args: &RetireArgs) -> Result<ExitCode, Failure> {
    let mut store = open_existing(dir)?;
    // The engine refuses a track of no label (`--track ""`: every track, which takes --all), an
    // unknown one, and one with nothing live, with nothing recorded.
    let (swept, described) = if args.all {
        (store.retire_all(&args.stream)?, "every track".to_owned())
    } else {
        let labels = selection(args.track.as_ref());
        let swept = store.retire(&args.stream, &labels)?;
        (swept, format!("track {}", selection_word(&labels)))
    };
    let view = SweptView::of(&swept);
    let out = match args.format {
        ReadFormat::Table => {
            let mut out = String::new();
            let _ = writeln!(
                out,
                "retired {} of {} under {described}: {}",
                count(view.partitions.len() as u64, "partition", "partitions"),
                args.stream,
                view.totals()
            );
            for line in view.floor_lines() {
                let _ = writeln!(out, "{line}");
            }
            out
        }
        ReadFormat::Json => {
            let mut json = serde_json::to_string_pretty(&view)
                .map_err(|e| Failure::new(format!("cannot render JSON: {e}")))?;
            json.push('\n');
            json
        }
    };
    print_summary(&out)?;
    Ok(ExitCode::SUCCESS)
}

/// What one retirement record (a `retire`, or one stream's sweep) did, for output.
#[derive(Debug, Serialize)]
pub(super) struct SweptView {
    stream: String,
    /// Tiers retired: raw or one level, of one partition of one file.
    tiers_retired: usize,
    /// The files holding them, as 12-digit names.
    files_retired: Vec<String>,
    /// Of those, the files left wholly retired, and so removed.
    files_removed: Vec<String>,
    /// Per partition touched, in track-key order.
    partitions: Vec<PartitionView>,
}

#[derive(Debug, Serialize)]
struct PartitionView {
    track: Vec<String>,
    tiers_retired: usize,
    /// The raw floor recorded: the lowest position (and axis value) still held.
    raw_floor: Option<RawFloorView>,
    /// Per level, the floor recorded: the lowest axis value its cells still hold.
    level_floors: BTreeMap<u8, u64>,
}

#[derive(Debug, Serialize)]
struct RawFloorView {
    position: u64,
    axis: Option<u64>,
}

impl SweptView {
    pub(super) fn of(swept: &Swept) -> SweptView {
        let mut partitions: BTreeMap<&TrackKey, PartitionView> = BTreeMap::new();
        let part = |track: &TrackKey| PartitionView {
            track: track.labels().map(str::to_owned).collect(),
            tiers_retired: 0,
            raw_floor: None,
            level_floors: BTreeMap::new(),
        };
        for retired in &swept.retired {
            partitions
                .entry(&retired.track)
                .or_insert_with(|| part(&retired.track))
                .tiers_retired += 1;
        }
        for floor in &swept.floors {
            let view = partitions
                .entry(&floor.track)
                .or_insert_with(|| part(&floor.track));
            match (floor.tier, floor.position, floor.axis) {
                (Tier::Raw, Some(position), axis) => {
                    view.raw_floor = Some(RawFloorView { position, axis });
                }
                (Tier::Level(k), _, Some(axis)) => {
                    view.level_floors.insert(k, axis);
                }
                _ => {}
            }
        }
        let files: BTreeSet<u64> = swept.retired.iter().map(|r| r.file).collect();
        SweptView {
            stream: swept.stream.clone(),
            tiers_retired: swept.retired.len(),
            files_retired: files.iter().map(|&f| format!("{f:012}")).collect(),
            files_removed: swept.removed.iter().map(|&f| format!("{f:012}")).collect(),
            partitions: partitions.into_values().collect(),
        }
    }

    /// `12 tiers in 4 segment files; 2 files removed`.
    pub(super) fn totals(&self) -> String {
        format!(
            "{} in {}; {} removed",
            count(self.tiers_retired as u64, "tier", "tiers"),
            count(
                self.files_retired.len() as u64,
                "segment file",
                "segment files"
            ),
            count(self.files_removed.len() as u64, "file", "files"),
        )
    }

    /// One line per partition: `c run_7,3: raw floor 41@1200, level floors L0-2:1216`.
    pub(super) fn floor_lines(&self) -> Vec<String> {
        self.partitions
            .iter()
            .map(|part| {
                let name = partition_name(&self.stream, &part.track);
                let raw = part.raw_floor.as_ref().map_or_else(
                    || "-".to_owned(),
                    |f| raw_floor_text(Some(f.position), f.axis),
                );
                format!(
                    "  {name}: {} retired; raw floor {raw}, level floors {}",
                    count(part.tiers_retired as u64, "tier", "tiers"),
                    level_floors_text(&part.level_floors)
                )
            })
            .collect()
    }
}
