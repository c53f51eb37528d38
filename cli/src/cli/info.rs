//! `strata --store DIR info [STREAM] [--track A,B] [--format table|json]`: what a store holds,
//! from the manifest alone (no segment is opened): each stream's declaration, rows, axis range
//! and watermark; each track's rows, axis range, last position, levels and bytes; the live
//! segment files and their bytes. The half of `fsck`'s report a newcomer looks for, under the
//! name they look for it by; `fsck` checks the files, `info` says what they hold.
//!
//! Rows are the rows the store still holds (a trim or retirement takes rows away); bytes are a
//! track's blocks, every tier, in the live segment files. Reads only, as `query` does: beside a
//! writer in another process, or from a bucket with `--remote`.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::process::ExitCode;

use serde::Serialize;
use strata::index::{Tier, TrackKey};
use strata::{Config, StreamDecl, describe};

use super::args::{InfoArgs, ReadFormat};
use super::range::axis_text;
use super::{Failure, count, grouped, open_to_read, print, selection};

/// What `info` answers: the store, then each stream.
#[derive(Debug, Serialize)]
struct Info {
    /// The manifest state read: `manifest G byte N`.
    manifest: String,
    /// Live segment files, and their bytes.
    segment_files: u64,
    segment_bytes: u64,
    streams: Vec<StreamInfo>,
}

#[derive(Debug, Serialize)]
struct StreamInfo {
    stream: String,
    /// The declaration in words (`run:str t:u64 …; track (run); axis t (time, us); ladder 64x8`).
    declaration: String,
    /// The track fields, outermost first.
    track_fields: Vec<String>,
    /// The axis field, and its time unit when it is time.
    axis: Option<String>,
    time_unit: Option<&'static str>,
    /// The position through which the stream is durable (`None`: nothing is).
    watermark: Option<u64>,
    rows: u64,
    /// Axis values as stored (integers), and as text (RFC 3339 for a time axis).
    axis_range: Option<[u64; 2]>,
    axis_range_text: Option<[String; 2]>,
    tracks: Vec<TrackInfo>,
}

#[derive(Debug, Serialize)]
struct TrackInfo {
    /// The track's labels, outermost first (none for a stream without track fields).
    track: Vec<String>,
    rows: u64,
    axis_range: Option<[u64; 2]>,
    axis_range_text: Option<[String; 2]>,
    /// The highest position of a row the track holds.
    last_position: Option<u64>,
    /// The levels of its ladder stored (level 0 .. levels - 1).
    levels: u8,
    /// Its blocks' bytes, every tier, in the live segment files.
    bytes: u64,
    /// Live segment files holding some tier of it.
    segments: u64,
}

pub fn run(source: &super::Source, args: &InfoArgs) -> Result<ExitCode, Failure> {
    let store = open_to_read(source, Config::default())?;
    let catalog = store.catalog();
    let decls: Vec<&StreamDecl> = match &args.stream {
        Some(stream) => vec![store.declaration(stream)?],
        None => store.streams().collect(),
    };
    let labels = selection(args.track.as_ref());
    if let Some(stream) = &args.stream {
        // The prefix is checked as every read checks it (depth, labels).
        store.watermark(stream, &labels)?;
    }
    let prefix = TrackKey::encode(&labels)
        .map_err(|e| Failure::new(format!("--track {}: {e}", labels.join(","))))?;
    let mut streams = Vec::with_capacity(decls.len());
    for decl in decls {
        let mut tracks = Vec::new();
        for view in catalog.partitions(&decl.id, &prefix) {
            let mut track = TrackInfo {
                track: view.track().labels().map(str::to_owned).collect(),
                rows: 0,
                axis_range: None,
                axis_range_text: None,
                last_position: None,
                levels: 0,
                bytes: 0,
                segments: 0,
            };
            let mut levels = BTreeSet::new();
            for (name, entry, _) in view.live_segments() {
                track.segments += 1;
                track.bytes += entry.len;
                levels.extend((0..entry.n_levels).filter(|&k| view.is_live(name, Tier::Level(k))));
            }
            for (_, entry) in view.segments(Tier::Raw) {
                track.rows += entry.n_rows;
                track.last_position = track.last_position.max(Some(entry.positions[1]));
                track.axis_range = widen(track.axis_range, entry.axis);
            }
            track.levels = u8::try_from(levels.len()).unwrap_or(u8::MAX);
            track.axis_range_text = texts(track.axis_range, decl);
            tracks.push(track);
        }
        let name = |idx: u16| decl.fields[usize::from(idx)].name.clone();
        let axis_range = tracks.iter().fold(None, |r, t| widen(r, t.axis_range));
        streams.push(StreamInfo {
            stream: decl.id.clone(),
            declaration: describe(decl),
            track_fields: decl.track.iter().map(|&idx| name(idx)).collect(),
            axis: decl.axis.map(name),
            time_unit: decl.time.map(strata::TimeUnit::name),
            watermark: catalog.watermark(&decl.id),
            rows: tracks.iter().map(|t| t.rows).sum(),
            axis_range,
            axis_range_text: texts(axis_range, decl),
            tracks,
        });
    }
    let files: Vec<u64> = catalog.live_files().map(|f| f.len).collect();
    let info = Info {
        manifest: store.manifest_position().to_string(),
        segment_files: files.len() as u64,
        segment_bytes: files.iter().sum(),
        streams,
    };
    let text = match args.format {
        ReadFormat::Json => {
            let mut json = serde_json::to_string_pretty(&info)
                .map_err(|e| Failure::new(format!("cannot render the answer as JSON: {e}")))?;
            json.push('\n');
            json
        }
        ReadFormat::Table => table(&info),
    };
    print(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// `range` widened to take in `more`.
fn widen(range: Option<[u64; 2]>, more: Option<[u64; 2]>) -> Option<[u64; 2]> {
    match (range, more) {
        (Some([a, b]), Some([lo, hi])) => Some([a.min(lo), b.max(hi)]),
        (range, more) => range.or(more),
    }
}

/// An axis range in words: times for a time axis, integers otherwise.
fn texts(range: Option<[u64; 2]>, decl: &StreamDecl) -> Option<[String; 2]> {
    range.map(|[lo, hi]| [axis_text(lo, decl), axis_text(hi, decl)])
}

/// The answer for people: a paragraph a stream, with a table of its tracks.
fn table(info: &Info) -> String {
    let rows: u64 = info.streams.iter().map(|s| s.rows).sum();
    let n_tracks: usize = info.streams.iter().map(|s| s.tracks.len()).sum();
    let mut out = format!(
        "{}, {} in {}; {} ({} bytes); read at {}\n",
        count(info.streams.len() as u64, "stream", "streams"),
        count(rows, "row", "rows"),
        count(n_tracks as u64, "track", "tracks"),
        count(info.segment_files, "segment file", "segment files"),
        grouped(info.segment_bytes),
        info.manifest
    );
    for stream in &info.streams {
        let _ = write!(
            out,
            "\nstream {}: {}\n  {} in {}",
            stream.stream,
            stream.declaration,
            count(stream.rows, "row", "rows"),
            count(stream.tracks.len() as u64, "track", "tracks"),
        );
        if let (Some(axis), Some([lo, hi])) = (&stream.axis, &stream.axis_range_text) {
            let _ = write!(out, "; {axis} {lo} .. {hi}");
        }
        let _ = match stream.watermark {
            Some(watermark) => writeln!(out, "; durable through position {}", grouped(watermark)),
            None => writeln!(out, "; nothing durable yet"),
        };
        if stream.tracks.is_empty() {
            continue;
        }
        let axis = stream.axis.as_deref().unwrap_or("axis");
        let mut lines = vec![[
            "track".to_owned(),
            "rows".to_owned(),
            format!("{axis} from"),
            format!("{axis} to"),
            "last position".to_owned(),
            "levels".to_owned(),
            "bytes".to_owned(),
        ]];
        for track in &stream.tracks {
            let [from, to] = track
                .axis_range_text
                .clone()
                .unwrap_or_else(|| ["-".to_owned(), "-".to_owned()]);
            lines.push([
                if track.track.is_empty() {
                    "(root)".to_owned()
                } else {
                    strata::index::selection_word(&track.track)
                },
                grouped(track.rows),
                from,
                to,
                track.last_position.map_or_else(|| "-".to_owned(), grouped),
                track.levels.to_string(),
                grouped(track.bytes),
            ]);
        }
        let mut widths = [0usize; 7];
        for line in &lines {
            for (width, cell) in widths.iter_mut().zip(line) {
                *width = (*width).max(cell.chars().count());
            }
        }
        for line in &lines {
            out.push_str("  ");
            for (k, (cell, width)) in line.iter().zip(widths).enumerate() {
                // The track and the times read left to right; counts line up on the right.
                let left = matches!(k, 0 | 2 | 3);
                let pad = " ".repeat(width - cell.chars().count());
                if k > 0 {
                    out.push_str("  ");
                }
                if left {
                    out.push_str(cell);
                    if k + 1 < line.len() {
                        out.push_str(&pad);
                    }
                } else {
                    out.push_str(&pad);
                    out.push_str(cell);
                }
            }
            out.push('\n');
        }
    }
    out
}
