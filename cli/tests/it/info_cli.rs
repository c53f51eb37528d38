//! `strata info`: what a store holds, checked against what reads of the same store answer.

use std::collections::BTreeMap;

use serde_json::Value as Json;

use crate::cli::strata_in;

/// The demo's store at a small size: 32 tracks (4 runs x 8 probes) on a µs time axis.
fn demo_store() -> tempfile::TempDir {
    let cwd = tempfile::tempdir().unwrap();
    let run = strata_in(
        cwd.path(),
        &["demo", "--rows", "6400", "--seal-every", "2048"],
        "",
    );
    assert_eq!(run.code, 0, "{run:?}");
    cwd
}

/// Each track's rows and first and last `t`, as `strata query` prints them (CSV, one line a
/// row, `t` as RFC 3339): the segments read row by row, not the manifest `info` reads.
fn queried(cwd: &std::path::Path) -> BTreeMap<String, (u64, String, String)> {
    let run = strata_in(cwd, &["--store", "strata-demo", "query", "capture"], "");
    assert_eq!(run.code, 0, "{run:?}");
    let mut lines = run.stdout.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (run_col, probe_col, t_col) = (col("run"), col("probe"), col("t"));
    let mut tracks: BTreeMap<String, (u64, String, String)> = BTreeMap::new();
    for line in lines {
        let cells: Vec<&str> = line.split(',').collect();
        let key = format!("{},{}", cells[run_col], cells[probe_col]);
        let t = cells[t_col].to_owned();
        let entry = tracks.entry(key).or_insert((0, t.clone(), t.clone()));
        entry.0 += 1;
        // RFC 3339 at one precision sorts as text sorts.
        if t < entry.1 {
            entry.1.clone_from(&t);
        }
        if t > entry.2 {
            entry.2 = t;
        }
    }
    tracks
}

#[test]
fn info_lists_the_demo_stores_32_tracks_with_their_rows_and_time_ranges() {
    let cwd = demo_store();
    let expected = queried(cwd.path());
    assert_eq!(expected.len(), 32, "the demo writes 32 tracks");

    let run = strata_in(
        cwd.path(),
        &["--store", "strata-demo", "info", "--format", "json"],
        "",
    );
    assert_eq!(run.code, 0, "{run:?}");
    let info: Json = serde_json::from_str(&run.stdout).unwrap();
    let streams = info["streams"].as_array().unwrap();
    assert_eq!(streams.len(), 1, "{info}");
    let stream = &streams[0];
    assert_eq!(stream["stream"], "capture");
    assert_eq!(stream["axis"], "t");
    assert_eq!(stream["time_unit"], "us");
    assert_eq!(stream["track_fields"], serde_json::json!(["run", "probe"]));
    let tracks = stream["tracks"].as_array().unwrap();
    assert_eq!(tracks.len(), 32, "{info}");
    let mut total = 0;
    for track in tracks {
        let labels: Vec<&str> = track["track"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l.as_str().unwrap())
            .collect();
        let key = labels.join(",");
        let (rows, first, last) = &expected[&key];
        assert_eq!(track["rows"].as_u64().unwrap(), *rows, "{key}: {track}");
        assert_eq!(track["axis_range_text"][0], first.as_str(), "{key}");
        assert_eq!(track["axis_range_text"][1], last.as_str(), "{key}");
        assert!(track["levels"].as_u64().unwrap() >= 1, "{key}: {track}");
        assert!(track["bytes"].as_u64().unwrap() > 0, "{key}: {track}");
        total += rows;
    }
    assert_eq!(stream["rows"].as_u64().unwrap(), total);
    // The demo reports its watermark; info reads the same.
    let watermark = stream["watermark"].as_u64().unwrap();
    let fsck = strata_in(
        cwd.path(),
        &["--store", "strata-demo", "fsck", "--json"],
        "",
    );
    assert!(
        fsck.stdout.contains(&format!("{watermark}")),
        "{}",
        fsck.stdout
    );
    // The segment files and their bytes are the store's files on disk.
    let mut on_disk = (0u64, 0u64);
    for entry in std::fs::read_dir(cwd.path().join("strata-demo/seg")).unwrap() {
        let entry = entry.unwrap();
        on_disk.0 += 1;
        on_disk.1 += entry.metadata().unwrap().len();
    }
    assert_eq!(
        (
            info["segment_files"].as_u64().unwrap(),
            info["segment_bytes"].as_u64().unwrap()
        ),
        on_disk
    );

    // The table says the same for people: a line a track, with its rows and its times.
    let table = strata_in(cwd.path(), &["--store", "strata-demo", "info"], "");
    assert_eq!(table.code, 0, "{table:?}");
    for (key, (rows, first, last)) in &expected {
        let line = table
            .stdout
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{key} ")))
            .unwrap_or_else(|| panic!("no line for {key}: {}", table.stdout));
        let rows = rows.to_string();
        assert!(
            line.split_whitespace().any(|w| w.replace(',', "") == rows),
            "{line}"
        );
        assert!(
            line.contains(first.as_str()) && line.contains(last.as_str()),
            "{line}"
        );
    }
    assert!(table.stdout.contains("32 tracks"), "{}", table.stdout);
}

#[test]
fn info_narrows_to_a_stream_and_a_track_prefix_and_refuses_what_is_not_there() {
    let cwd = demo_store();
    let run = strata_in(
        cwd.path(),
        &[
            "--store",
            "strata-demo",
            "info",
            "capture",
            "--track",
            "run_1",
            "--format",
            "json",
        ],
        "",
    );
    assert_eq!(run.code, 0, "{run:?}");
    let info: Json = serde_json::from_str(&run.stdout).unwrap();
    let tracks = info["streams"][0]["tracks"].as_array().unwrap();
    assert_eq!(tracks.len(), 8, "run_1's 8 probes: {info}");
    assert!(tracks.iter().all(|t| t["track"][0] == "run_1"), "{info}");

    let unknown = strata_in(cwd.path(), &["--store", "strata-demo", "info", "nope"], "");
    assert_eq!(unknown.code, 1, "{unknown:?}");
    assert!(
        unknown.stderr.contains("\"nope\"") && unknown.stderr.contains("capture"),
        "{unknown:?}"
    );
    let deep = strata_in(
        cwd.path(),
        &[
            "--store",
            "strata-demo",
            "info",
            "capture",
            "--track",
            "a,b,c",
        ],
        "",
    );
    assert_ne!(deep.code, 0, "{deep:?}");
    assert!(deep.stderr.contains("2 track fields"), "{deep:?}");
    let missing = strata_in(cwd.path(), &["--store", "no-such-store", "info"], "");
    assert_eq!(missing.code, 1, "{missing:?}");
    assert!(missing.stderr.contains("no-such-store"), "{missing:?}");
    assert!(
        !cwd.path().join("no-such-store").exists(),
        "info creates nothing"
    );
}
