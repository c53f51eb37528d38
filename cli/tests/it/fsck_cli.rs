//! The real `engine-fsck` binary on real folders. Every store state is made by crashing the real
//! write path in the simulation, then written out with `support::materialize`.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::fs;
use std::path::Path;
use std::process::Command;

use serde_json::Value;
use strata_index::{Entry, Floor, Record, Retirement, Tier, TrackKey};
use strata_recover::boot;
use strata_segment::vfs::{RealFs, SimFs};
use tempfile::TempDir;

use crate::support::{Barrier, STREAM, barrier, list, materialize, merge, new_store, seal};

const BIN: &str = env!("CARGO_BIN_EXE_engine-fsck");

// Operation offsets inside one seal: the segment's two-phase write, then the manifest append.
const OP_RENAME: u64 = 3;
const OP_APPEND_WRITE: u64 = 6;
const OP_APPEND_SYNC: u64 = 7;

const TOP_LEVEL: [&str; 11] = [
    "store",
    "status",
    "error",
    "manifest",
    "rename",
    "findings",
    "quarantine",
    "retention",
    "streams",
    "files",
    "verified",
];

/// One run of the binary.
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Run {
    fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}", self.stdout))
    }
}

fn run<S: AsRef<OsStr>>(args: &[S]) -> Run {
    let output = Command::new(BIN)
        .args(args)
        .output()
        .expect("the binary runs");
    Run {
        code: output
            .status
            .code()
            .expect("the binary exits, not killed by a signal"),
        stdout: String::from_utf8(output.stdout).unwrap(),
        stderr: String::from_utf8(output.stderr).unwrap(),
    }
}

fn fsck(store: &Path, flags: &[&str]) -> Run {
    let mut args = vec![store.as_os_str().to_owned()];
    args.extend(flags.iter().copied().map(OsString::from));
    run(&args)
}

fn quarantine_cmd(store: &Path, flags: &[&str]) -> Run {
    let mut args = vec!["quarantine".into(), store.as_os_str().to_owned()];
    args.extend(flags.iter().copied().map(OsString::from));
    run(&args)
}

/// A store with two whole barriers of 10 rows (positions 0..=19), still open.
fn sealed_store() -> (SimFs, strata_recover::Booted) {
    let (fs, mut booted) = new_store();
    for seq in 1..=2 {
        let next = barrier(&booted, seq, 10);
        seal(&fs, &mut booted, &next).unwrap();
    }
    (fs, booted)
}

/// A store with one whole barrier whose second barrier crashed at `op` (relative to its start);
/// `crash` picks what the disk kept. Answers the image, the crashed barrier, and the manifest's
/// length before it.
fn crashed_second_seal(op: u64, crash: impl FnOnce(&SimFs) -> SimFs) -> (SimFs, Barrier, u64) {
    let (fs, mut booted) = new_store();
    let first = barrier(&booted, 1, 10);
    seal(&fs, &mut booted, &first).unwrap();
    let trusted_len = booted.manifest.len();
    let second = barrier(&booted, 2, 10);
    fs.crash_at(fs.ops() + op);
    seal(&fs, &mut booted, &second).unwrap_err();
    (crash(&fs), second, trusted_len)
}

fn on_disk(fs: &SimFs) -> TempDir {
    let dir = TempDir::new().unwrap();
    materialize(fs, dir.path());
    dir
}

fn findings_of(report: &Value, kind: &str) -> Vec<Value> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kind"] == kind)
        .cloned()
        .collect()
}

/// Every file and folder under `root`, path -> bytes (`None` for a folder).
fn snapshot(root: &Path) -> BTreeMap<String, Option<Vec<u8>>> {
    let mut out = BTreeMap::new();
    let mut pending = vec![root.to_owned()];
    while let Some(dir) = pending.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if path.is_dir() {
                out.insert(name, None);
                pending.push(path);
            } else {
                out.insert(name, Some(fs::read(&path).unwrap()));
            }
        }
    }
    out
}

fn boot_real(root: &Path) {
    let vfs = RealFs::open(root).unwrap();
    let booted = boot(&vfs, false).unwrap();
    drop(booted);
}

#[test]
fn a_clean_store_exits_0_and_reports_every_stream_and_partition() {
    let (fs, _booted) = sealed_store();
    let dir = on_disk(&fs);

    let human = fsck(dir.path(), &[]);
    assert_eq!(human.code, 0, "{}{}", human.stdout, human.stderr);
    let first_line = human.stdout.lines().next().unwrap();
    assert_eq!(
        first_line,
        format!("strata store {}: CLEAN", dir.path().display())
    );
    assert!(human.stdout.contains("Findings: none"), "{}", human.stdout);
    assert!(
        human.stdout.contains("Quarantine: empty"),
        "{}",
        human.stdout
    );
    assert!(human.stdout.contains("run_70"), "{}", human.stdout);

    let machine = fsck(dir.path(), &["--json"]);
    assert_eq!(machine.code, 0);
    let report = machine.json();
    assert_eq!(report["status"], "clean");
    assert_eq!(report["error"], Value::Null);
    assert_eq!(report["manifest"]["generation"], 1);
    assert_eq!(
        report["manifest"]["frames"], 3,
        "declaration and two barriers"
    );
    assert_eq!(
        report["manifest"]["length"],
        report["manifest"]["trusted_length"]
    );
    let stream = &report["streams"][0];
    assert_eq!(stream["id"], STREAM);
    assert_eq!(stream["watermark"], 19);
    assert_eq!(stream["track"], serde_json::json!(["run"]));
    assert_eq!(stream["axis"], Value::Null);
    assert_eq!(
        stream["fields"][1],
        serde_json::json!({"name": "value", "kind": "i64"})
    );
    let partitions = stream["partitions"].as_array().unwrap();
    assert_eq!(partitions.len(), 2);
    // Track-key order: run_7 sorts before run_70.
    let run_7 = &partitions[0];
    assert_eq!(run_7["track"], serde_json::json!(["run_7"]));
    assert_eq!(run_7["rows"], 10);
    assert_eq!(run_7["positions"], serde_json::json!([0, 18]));
    assert_eq!(
        run_7["raw_files"],
        serde_json::json!(["000000000001", "000000000002"])
    );
    assert_eq!(run_7["level_files"], serde_json::json!([]));
    assert_eq!(run_7["raw_floor"], Value::Null);
    assert_eq!(run_7["raw_floor_axis"], Value::Null);
    assert_eq!(run_7["level_floors"], serde_json::json!({}));
    assert_eq!(partitions[1]["positions"], serde_json::json!([1, 19]));
}

#[test]
fn json_has_every_documented_field() {
    let (fs, _booted) = sealed_store();
    let dir = on_disk(&fs);
    fs::write(dir.path().join("tmp/000000000009.seg"), b"left behind").unwrap();

    let report = fsck(dir.path(), &["--json", "--verify"]).json();
    let keys = |v: &Value| {
        let mut keys: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        keys.sort();
        keys
    };
    let mut expected: Vec<String> = TOP_LEVEL.iter().map(|&k| k.to_owned()).collect();
    expected.sort();
    assert_eq!(keys(&report), expected);
    assert_eq!(
        keys(&report["manifest"]),
        [
            "frames",
            "generation",
            "length",
            "previous",
            "trusted_length"
        ]
    );
    assert_eq!(
        keys(&report["streams"][0]),
        [
            "axis",
            "fields",
            "id",
            "ladder",
            "partitions",
            "retention",
            "track",
            "watermark"
        ]
    );
    assert_eq!(
        keys(&report["streams"][0]["partitions"][0]),
        [
            "axis",
            "level_files",
            "level_floors",
            "levels_stored_from",
            "live_bytes",
            "live_files",
            "positions",
            "raw_files",
            "raw_floor",
            "raw_floor_axis",
            "rows",
            "track"
        ]
    );
    assert_eq!(
        keys(&report["files"]),
        [
            "barrier_bytes",
            "barrier_files",
            "live_bytes",
            "live_files",
            "merge_bytes",
            "merge_files",
            "write_amplification"
        ]
    );
    assert_eq!(
        keys(&report["findings"][0]),
        ["action", "bytes", "file", "kind", "offset", "reason", "to"]
    );
    assert_eq!(
        keys(&report["verified"][0]),
        ["error", "file", "offset", "ok"]
    );
    assert_eq!(report["verified"].as_array().unwrap().len(), 2);

    // Without --verify the field is there, and null.
    let plain = fsck(dir.path(), &["--json"]).json();
    assert_eq!(keys(&plain), expected);
    assert_eq!(plain["verified"], Value::Null);
}

#[test]
fn a_torn_manifest_tail_exits_1_with_its_offset() {
    let (image, _, trusted_len) = crashed_second_seal(OP_APPEND_SYNC, |fs| fs.crash_tearing(5));
    let dir = on_disk(&image);

    let run = fsck(dir.path(), &["--json"]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    let report = run.json();
    assert_eq!(report["status"], "findings");
    let torn = findings_of(&report, "torn_manifest_tail");
    assert_eq!(torn.len(), 1, "{report:#}");
    assert_eq!(torn[0]["file"], "manifest-000001");
    assert_eq!(torn[0]["offset"], trusted_len);
    assert_eq!(torn[0]["bytes"], 5);
    assert_eq!(torn[0]["action"], "quarantine");
    assert_eq!(report["manifest"]["trusted_length"], trusted_len);
    assert_eq!(report["manifest"]["length"], trusted_len + 5);

    let human = fsck(dir.path(), &[]);
    assert_eq!(human.code, 1);
    assert!(
        human.stdout.contains("torn manifest tail"),
        "{}",
        human.stdout
    );
}

#[test]
fn an_orphan_temp_exits_1() {
    // The temp's data was synced, and the journal kept its name; the rename never happened.
    let (image, second, _) = crashed_second_seal(OP_RENAME, |fs| fs.crash_keeping_dir_ops(1));
    assert_eq!(list(&image, "tmp"), std::slice::from_ref(&second.file));
    let dir = on_disk(&image);

    let run = fsck(dir.path(), &["--json"]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    let report = run.json();
    let orphans = findings_of(&report, "orphan_temp");
    assert_eq!(orphans.len(), 1, "{report:#}");
    assert_eq!(orphans[0]["file"], format!("tmp/{}", second.file));
    assert_eq!(orphans[0]["bytes"], second.bytes.len());
    assert_eq!(orphans[0]["to"], format!("tmp-{}", second.file));
}

#[test]
fn an_unrecorded_segment_exits_1() {
    let (image, second, _) = crashed_second_seal(OP_APPEND_WRITE, SimFs::crash);
    assert!(list(&image, "seg").contains(&second.file));
    let dir = on_disk(&image);

    let run = fsck(dir.path(), &["--json"]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    let report = run.json();
    let unrecorded = findings_of(&report, "unrecorded_segment");
    assert_eq!(unrecorded.len(), 1, "{report:#}");
    assert_eq!(unrecorded[0]["file"], format!("seg/{}", second.file));
    // What fsck says boot would do is what boot then does.
    let planned = unrecorded[0]["to"].as_str().unwrap().to_owned();
    boot_real(dir.path());
    assert!(dir.path().join("quarantine").join(planned).is_file());
}

#[test]
fn evidence_in_quarantine_is_a_finding_with_size_and_reason() {
    let (image, second, _) = crashed_second_seal(OP_APPEND_WRITE, SimFs::crash);
    let dir = on_disk(&image);
    boot_real(dir.path());

    // Boot healed everything: no finding is left, yet the evidence keeps the exit code at 1.
    let run = fsck(dir.path(), &["--json"]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    let report = run.json();
    assert_eq!(report["status"], "findings");
    assert_eq!(report["findings"], serde_json::json!([]));
    let name = format!("seg-{}", second.file);
    assert_eq!(
        report["quarantine"],
        serde_json::json!([{
            "name": name,
            "bytes": second.bytes.len(),
            "reason": strata_recover::quarantine_reason(&name),
        }])
    );

    let human = fsck(dir.path(), &[]);
    assert_eq!(human.code, 1);
    assert!(
        human
            .stdout
            .lines()
            .next()
            .unwrap()
            .ends_with(": 1 ENTRY IN QUARANTINE")
    );
    let line = human
        .stdout
        .lines()
        .find(|l| l.contains(&name))
        .expect("listed");
    assert!(
        line.contains(&format!("{} B", second.bytes.len())),
        "{line}"
    );
    assert!(line.contains("unrecorded segment"), "{line}");

    let listing = quarantine_cmd(dir.path(), &["--json"]);
    assert_eq!(listing.code, 1, "{}", listing.stdout);
    assert_eq!(listing.json()["quarantine"], report["quarantine"]);
    let listing = quarantine_cmd(dir.path(), &[]);
    assert_eq!(listing.code, 1);
    assert!(listing.stdout.contains(&name), "{}", listing.stdout);
}

#[test]
fn a_flipped_byte_is_found_by_verify_with_file_and_offset_and_boot_still_starts() {
    let (fs, booted) = sealed_store();
    let part = booted.catalog.file(1).unwrap().partitions[0].clone();
    drop(booted);
    let dir = on_disk(&fs);
    boot_real(dir.path());
    let seg = dir.path().join("seg/000000000001.seg");
    let mut bytes = fs::read(&seg).unwrap();
    let flipped_at = usize::try_from(part.offset).unwrap() + 3;
    bytes[flipped_at] ^= 0x40;
    fs::write(&seg, &bytes).unwrap();

    // Without --verify fsck reads no rows, as boot does: the lengths still match.
    assert_eq!(fsck(dir.path(), &[]).code, 0);

    let run = fsck(dir.path(), &["--verify", "--json"]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    let report = run.json();
    let bad = findings_of(&report, "bad_checksum");
    assert_eq!(bad.len(), 1, "{report:#}");
    assert_eq!(bad[0]["file"], "seg/000000000001.seg");
    // The first block of the partition holds the flipped byte; its payload starts the extent.
    assert_eq!(bad[0]["offset"], part.offset);
    assert_eq!(bad[0]["action"], "keep_unreadable");
    let verified = report["verified"].as_array().unwrap();
    assert_eq!(verified.len(), 2);
    assert_eq!(verified[0]["ok"], false);
    assert_eq!(verified[0]["offset"], part.offset);
    assert_eq!(verified[1]["ok"], true);

    let human = fsck(dir.path(), &["--verify"]);
    assert_eq!(human.code, 1);
    let expected = format!("FAILED seg/000000000001.seg at offset {}", part.offset);
    assert!(human.stdout.contains(&expected), "{}", human.stdout);
    assert!(human.stdout.contains("1 ok, 1 failed"), "{}", human.stdout);

    // Boot reads the manifest, not the rows: it starts, and reads of the bad block will refuse.
    let vfs = RealFs::open(dir.path()).unwrap();
    assert!(boot(&vfs, false).is_ok());
}

#[test]
fn a_missing_or_short_file_is_one_finding_each_even_with_verify() {
    let (fs, _booted) = sealed_store();
    let dir = on_disk(&fs);
    fs::remove_file(dir.path().join("seg/000000000001.seg")).unwrap();
    let second = dir.path().join("seg/000000000002.seg");
    let bytes = fs::read(&second).unwrap();
    fs::write(&second, &bytes[..bytes.len() - 1]).unwrap();

    for flags in [&["--json"][..], &["--json", "--verify"][..]] {
        let run = fsck(dir.path(), flags);
        assert_eq!(run.code, 1, "{}", run.stdout);
        let report = run.json();
        let findings = report["findings"].as_array().unwrap();
        assert_eq!(findings.len(), 2, "{flags:?}: {report:#}");
        assert_eq!(
            findings_of(&report, "missing_file")[0]["file"],
            "seg/000000000001.seg"
        );
        let short = &findings_of(&report, "wrong_length")[0];
        assert_eq!(short["file"], "seg/000000000002.seg");
        assert_eq!(short["offset"], bytes.len() - 1);
    }
    let verified = fsck(dir.path(), &["--json", "--verify"]).json()["verified"].clone();
    assert!(
        verified
            .as_array()
            .unwrap()
            .iter()
            .all(|v| v["ok"] == false),
        "{verified:#}"
    );
}

/// Floors are what `Floor` records say, never what is on disk: retiring run_7's rows in file 1
/// (its positions 0 to 8) records its floor at 10, the lowest position it still holds; retiring
/// run_70's too retires file 1 whole, and boot removes it, and the floors stay as recorded.
#[test]
fn floors_come_from_retirement_records() {
    let (fs, mut booted) = sealed_store();
    let retire = |run: &str, position: u64| {
        vec![
            Entry::Retire(Retirement {
                file: 1,
                stream: STREAM.into(),
                track: TrackKey::encode(&[run]).unwrap(),
                tier: Tier::Raw,
            }),
            Entry::Floor(Floor {
                stream: STREAM.into(),
                track: TrackKey::encode(&[run]).unwrap(),
                tier: Tier::Raw,
                position: Some(position),
                axis: None,
            }),
        ]
    };
    let record = Record {
        entries: retire("run_7", 10),
    };
    booted.catalog.apply(&record).unwrap();
    booted.manifest.append(&record).unwrap();
    let dir = on_disk(&fs);

    let run = fsck(dir.path(), &["--json"]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    let partitions = run.json()["streams"][0]["partitions"].clone();
    assert_eq!(partitions[0]["raw_floor"], 10);
    assert_eq!(
        partitions[0]["raw_files"],
        serde_json::json!(["000000000002"])
    );
    assert_eq!(partitions[0]["rows"], 5);
    assert_eq!(
        partitions[1]["raw_floor"],
        Value::Null,
        "nothing of run_70 was retired"
    );
    let table = fsck(dir.path(), &[]);
    assert!(table.stdout.contains("10/-"), "{}", table.stdout);

    let record = Record {
        entries: retire("run_70", 11),
    };
    booted.catalog.apply(&record).unwrap();
    booted.manifest.append(&record).unwrap();
    let dir = on_disk(&fs);
    let run = fsck(dir.path(), &["--json"]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    let report = run.json();
    assert_eq!(
        findings_of(&report, "retired_file")[0]["file"],
        "seg/000000000001.seg"
    );
    boot_real(dir.path());
    let run = fsck(dir.path(), &["--json"]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    let partitions = run.json()["streams"][0]["partitions"].clone();
    assert_eq!(partitions[0]["raw_floor"], 10);
    assert_eq!(partitions[1]["raw_floor"], 11);
}

/// The retention `retention.json` sets is shown per stream (or that there is none, or that the
/// file is malformed, which changes no verdict), and a track retired whole is listed with no
/// live file and its floor.
#[test]
fn retention_and_the_floors_of_a_retired_track_are_shown() {
    let (fs, mut booted) = sealed_store();
    let track = TrackKey::encode(&["run_7"]).unwrap();
    let mut entries: Vec<Entry> = [1, 2]
        .map(|file| {
            Entry::Retire(Retirement {
                file,
                stream: STREAM.into(),
                track: track.clone(),
                tier: Tier::Raw,
            })
        })
        .into();
    entries.push(Entry::Floor(Floor {
        stream: STREAM.into(),
        track,
        tier: Tier::Raw,
        position: Some(20),
        axis: None,
    }));
    let record = Record { entries };
    booted.catalog.apply(&record).unwrap();
    booted.manifest.append(&record).unwrap();
    let dir = on_disk(&fs);

    let human = fsck(dir.path(), &[]);
    assert_eq!(human.code, 0, "{}", human.stdout);
    assert!(
        human
            .stdout
            .contains("    retention: forever (no retention.json)"),
        "{}",
        human.stdout
    );
    let retired_row = human
        .stdout
        .lines()
        .find(|l| l.trim_start().starts_with("run_7 "))
        .unwrap_or_else(|| panic!("run_7 is listed: {}", human.stdout));
    assert!(retired_row.ends_with("20/-"), "{retired_row}");
    let report = fsck(dir.path(), &["--json"]).json();
    assert_eq!(
        report["retention"],
        serde_json::json!({"file": "retention.json", "present": false, "error": null})
    );
    let stream = &report["streams"][0];
    assert_eq!(stream["retention"], Value::Null);
    let run_7 = &stream["partitions"][0];
    assert_eq!(run_7["track"], serde_json::json!(["run_7"]));
    assert_eq!(run_7["live_files"], 0);
    assert_eq!(run_7["rows"], 0);
    assert_eq!(run_7["raw_floor"], 20);
    assert_eq!(stream["partitions"][1]["live_files"], 2);

    let file = dir.path().join("retention.json");
    fs::write(&file, r#"{"capture": {"raw": {"positions": 100}}}"#).unwrap();
    let human = fsck(dir.path(), &[]);
    assert_eq!(human.code, 0, "{}", human.stdout);
    assert!(
        human
            .stdout
            .contains("    retention: raw positions:100 (retention.json)"),
        "{}",
        human.stdout
    );
    let report = fsck(dir.path(), &["--json"]).json();
    assert_eq!(report["retention"]["present"], true);
    assert_eq!(
        report["streams"][0]["retention"],
        serde_json::json!({"raw": {"positions": 100}, "levels": []})
    );

    fs::write(&file, r#"{"capture": {"raw": "sometimes"}}"#).unwrap();
    let run = fsck(dir.path(), &["--json"]);
    assert_eq!(
        run.code, 0,
        "a malformed retention.json is no finding: {}",
        run.stdout
    );
    let report = run.json();
    let error = report["retention"]["error"].as_str().unwrap();
    assert!(
        error.starts_with("retention.json is malformed: unknown variant `sometimes`"),
        "{error}"
    );
    assert_eq!(report["streams"][0]["retention"], Value::Null);
    let human = fsck(dir.path(), &[]);
    assert!(
        human
            .stdout
            .contains("Retention: retention.json is malformed: unknown variant `sometimes`")
            && human
                .stdout
                .contains("    retention: unknown (retention.json is refused, above)"),
        "{}",
        human.stdout
    );
}

#[test]
fn what_is_not_a_store_exits_2() {
    let empty = TempDir::new().unwrap();
    let foreign = TempDir::new().unwrap();
    fs::write(foreign.path().join("notes.txt"), b"not a store").unwrap();
    let missing = empty.path().join("nowhere");
    let file = foreign.path().join("notes.txt");
    let garbled = TempDir::new().unwrap();
    fs::write(
        garbled.path().join("manifest-000001"),
        b"STRATAMF but no header",
    )
    .unwrap();

    for store in [
        empty.path(),
        foreign.path(),
        missing.as_path(),
        file.as_path(),
        garbled.path(),
    ] {
        let human = fsck(store, &[]);
        assert_eq!(
            human.code,
            2,
            "{}: {}{}",
            store.display(),
            human.stdout,
            human.stderr
        );
        assert!(human.stdout.contains("UNUSABLE"), "{}", human.stdout);
        let machine = fsck(store, &["--json", "--verify"]);
        assert_eq!(machine.code, 2);
        let report = machine.json();
        assert_eq!(report["status"], "unusable");
        assert!(report["error"].is_string());
        assert_eq!(report["manifest"], Value::Null);
        assert_eq!(quarantine_cmd(store, &[]).code, 2);
    }
    let report = fsck(&missing, &["--json"]).json();
    assert!(
        report["error"].as_str().unwrap().contains("nowhere"),
        "{report:#}"
    );
    let report = fsck(garbled.path(), &["--json"]).json();
    let error = report["error"].as_str().unwrap();
    assert!(error.contains("manifest-000001 is unusable"), "{error}");
    let report = fsck(foreign.path(), &["--json"]).json();
    assert!(
        report["error"]
            .as_str()
            .unwrap()
            .contains("not a strata store"),
        "{report:#}"
    );
    // Nothing was laid over the foreign folder.
    assert_eq!(snapshot(foreign.path()).len(), 1);
    assert_eq!(snapshot(empty.path()).len(), 0);
}

#[test]
fn bad_arguments_exit_2() {
    assert_eq!(run::<&str>(&[]).code, 2);
    assert_eq!(run(&["--verify"]).code, 2);
    assert_eq!(run(&["quarantine"]).code, 2);
    let dir = TempDir::new().unwrap();
    let store = dir.path().to_str().unwrap();
    assert_eq!(
        run(&["quarantine", store, "--yes"]).code,
        2,
        "--yes alone means nothing"
    );
    assert_eq!(run(&["--help"]).code, 0);
}

#[test]
fn purge_needs_yes_and_then_empties_the_quarantine() {
    let (image, _, _) = crashed_second_seal(OP_APPEND_WRITE, SimFs::crash);
    let dir = on_disk(&image);
    boot_real(dir.path());
    let before = snapshot(dir.path());
    assert_eq!(
        fs::read_dir(dir.path().join("quarantine")).unwrap().count(),
        1
    );

    let refused = quarantine_cmd(dir.path(), &["--purge"]);
    assert_eq!(refused.code, 2);
    assert!(
        refused.stderr.contains("--purge --yes"),
        "{}",
        refused.stderr
    );
    assert_eq!(
        snapshot(dir.path()),
        before,
        "a refused purge changes nothing"
    );
    let refused = quarantine_cmd(dir.path(), &["--purge", "--json"]);
    assert_eq!(refused.code, 2);
    assert_eq!(snapshot(dir.path()), before);

    let purged = quarantine_cmd(dir.path(), &["--purge", "--yes", "--json"]);
    assert_eq!(purged.code, 0, "{}{}", purged.stdout, purged.stderr);
    let report = purged.json();
    assert_eq!(report["purged"], 1);
    assert_eq!(report["quarantine"], serde_json::json!([]));
    assert_eq!(
        fs::read_dir(dir.path().join("quarantine")).unwrap().count(),
        0
    );
    assert!(
        dir.path().join("seg/000000000001.seg").is_file(),
        "only evidence goes"
    );

    assert_eq!(fsck(dir.path(), &[]).code, 0, "nothing is left to find");
    let again = quarantine_cmd(dir.path(), &["--purge", "--yes"]);
    assert_eq!(again.code, 0);
    assert!(
        again.stdout.starts_with("purged 0 entries"),
        "{}",
        again.stdout
    );
}

#[test]
fn purge_refuses_a_store_that_is_open() {
    let (image, _, _) = crashed_second_seal(OP_APPEND_WRITE, SimFs::crash);
    let dir = on_disk(&image);
    let vfs = RealFs::open(dir.path()).unwrap();
    let booted = boot(&vfs, false).unwrap();
    let before = snapshot(dir.path());

    let run = quarantine_cmd(dir.path(), &["--purge", "--yes"]);
    assert_eq!(run.code, 2, "{}", run.stdout);
    assert!(run.stdout.contains("locked"), "{}", run.stdout);
    assert_eq!(snapshot(dir.path()), before);
    // Looking is fine while it is open: fsck takes no lock.
    assert_eq!(fsck(dir.path(), &[]).code, 1);
    drop(booted);
}

#[test]
fn fsck_changes_nothing() {
    // A torn tail, the unrecorded segment under it, and an orphan temp beside them.
    let (image, _, _) = crashed_second_seal(OP_APPEND_SYNC, |fs| fs.crash_tearing(9));
    let dir = on_disk(&image);
    fs::write(dir.path().join("tmp/000000000007.seg"), b"half a segment").unwrap();
    let before = snapshot(dir.path());
    assert!(!before.contains_key("LOCK"));

    for flags in [&[][..], &["--verify"], &["--json"], &["--json", "--verify"]] {
        let run = fsck(dir.path(), flags);
        assert_eq!(run.code, 1, "{flags:?}: {}", run.stdout);
        assert_eq!(snapshot(dir.path()), before, "{flags:?} changed the store");
    }
    assert_eq!(quarantine_cmd(dir.path(), &["--json"]).code, 0);
    assert_eq!(snapshot(dir.path()), before);

    let report = fsck(dir.path(), &["--json"]).json();
    let kinds: Vec<&str> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["orphan_temp", "torn_manifest_tail", "unrecorded_segment"]
    );
    let human = fsck(dir.path(), &[]).stdout;
    assert!(
        human.lines().next().unwrap().ends_with(": 3 FINDINGS"),
        "{human}"
    );
}

/// Where each frame of a manifest starts.
fn frame_starts(manifest: &[u8]) -> Vec<usize> {
    let mut starts = Vec::new();
    let mut at = strata_index::LOG_HEADER_LEN;
    while at < manifest.len() {
        starts.push(at);
        at += strata_index::decode_frame(&manifest[at..]).unwrap().1;
    }
    starts
}

/// Damage inside the first barrier's frame, with two good barriers after it: `engine-fsck`
/// reports it as damaged history and exits 2; `repair` without `--yes` shows what it would do
/// and changes nothing; with `--yes` it cuts, keeps every byte in quarantine, and fences the
/// positions the cut frames held.
#[test]
fn engine_fsck_reports_interior_manifest_damage_and_repairs_only_when_told() {
    let (fs, mut booted) = sealed_store();
    let third = barrier(&booted, 3, 10);
    seal(&fs, &mut booted, &third).unwrap();
    drop(booted);
    let dir = on_disk(&fs);
    let manifest_path = dir.path().join("manifest-000001");
    let mut manifest = fs::read(&manifest_path).unwrap();
    let starts = frame_starts(&manifest);
    assert_eq!(starts.len(), 4, "a declaration and three barriers");
    manifest[starts[1] + 30] ^= 0x04;
    fs::write(&manifest_path, &manifest).unwrap();
    let before = snapshot(dir.path());

    let human = fsck(dir.path(), &[]);
    assert_eq!(human.code, 2, "{}{}", human.stdout, human.stderr);
    assert!(human.stdout.contains("UNUSABLE"), "{}", human.stdout);
    assert!(
        human.stdout.contains("damaged manifest history"),
        "{}",
        human.stdout
    );
    assert!(
        human
            .stdout
            .contains(&format!("manifest-000001 is damaged at byte {}", starts[1])),
        "{}",
        human.stdout
    );
    let machine = fsck(dir.path(), &["--json"]);
    assert_eq!(machine.code, 2);
    let damage = findings_of(&machine.json(), "damaged_history");
    assert_eq!(damage.len(), 1, "{}", machine.stdout);
    assert_eq!(damage[0]["offset"], starts[1]);
    assert_eq!(damage[0]["action"], "refuse_until_repaired");
    let reason = damage[0]["reason"].as_str().unwrap();
    // Barriers 2 and 3 after the damage, and barrier 1 itself: every row is lost.
    assert!(
        reason.contains("\"capture\": 30 row(s) at positions 0..=29"),
        "{reason}"
    );

    let dry = run(&[OsStr::new("repair"), dir.path().as_os_str()]);
    assert_eq!(dry.code, 2, "{}{}", dry.stdout, dry.stderr);
    assert!(dry.stderr.contains("without --yes"), "{}", dry.stderr);
    assert!(dry.stdout.contains("at or below 29"), "{}", dry.stdout);
    // The damaged frame's own barrier is named too, from its segment's own directory.
    assert!(
        dry.stdout.contains("\"capture\" 10 row(s) at 0..=9"),
        "{}",
        dry.stdout
    );
    assert_eq!(snapshot(dir.path()), before, "a dry run changed the store");

    let done = run(&[
        OsStr::new("repair"),
        dir.path().as_os_str(),
        OsStr::new("--yes"),
    ]);
    assert_eq!(done.code, 0, "{}{}", done.stdout, done.stderr);
    assert!(done.stdout.contains("repaired"), "{}", done.stdout);

    // Every byte is kept: the damaged manifest whole, every segment somewhere.
    let after = snapshot(dir.path());
    let kept: Vec<&Vec<u8>> = after
        .iter()
        .filter(|(p, _)| p.starts_with("quarantine/"))
        .filter_map(|(_, b)| b.as_ref())
        .collect();
    assert!(
        kept.contains(&&manifest),
        "the damaged manifest is kept whole"
    );
    for (path, bytes) in before.iter().filter(|(p, _)| p.starts_with("seg/")) {
        let bytes = bytes.as_ref().unwrap();
        let still = after.get(path).and_then(Option::as_ref) == Some(bytes);
        assert!(still || kept.contains(&bytes), "{path} was lost");
    }

    let vfs = RealFs::open(dir.path()).unwrap();
    let booted = boot(&vfs, false).unwrap();
    assert_eq!(booted.catalog.fence(STREAM), Some(29));
    assert_eq!(booted.catalog.watermark(STREAM), Some(29));
    assert!(booted.catalog.live_files().next().is_none());
    drop(booted);

    let again = fsck(dir.path(), &[]);
    assert_eq!(again.code, 1, "evidence in quarantine: {}", again.stdout);
    let twice = run(&[
        OsStr::new("repair"),
        dir.path().as_os_str(),
        OsStr::new("--yes"),
    ]);
    assert_eq!(twice.code, 0, "{}{}", twice.stdout, twice.stderr);
    assert!(
        twice.stdout.contains("nothing to repair"),
        "{}",
        twice.stdout
    );
}

/// A 65,536-character label made both fsck reports panic on a format width. Labels this long are
/// refused where they are accepted now, but a report must not panic on any stored name: this
/// store is written through the real segment writer and manifest append, with a key decoded the
/// way boot decodes one from disk.
#[test]
fn fsck_does_not_panic_on_a_65536_character_stored_label() {
    let (fs, mut booted) = new_store();
    let label = "L".repeat(65_536);
    let key = strata_index::TrackKey::decode(format!("{label}\u{1f}").as_bytes()).unwrap();
    let mut writer = strata_segment::SegmentWriter::new();
    writer.add_partition(&strata_segment::PartitionInput {
        stream: STREAM,
        track: &key,
        positions: &[0],
        ordinals: &[0],
        axis: None,
        columns: vec![(1, strata_segment::ColumnData::I64(&[5]))],
        nulls: Vec::new(),
        cells: Vec::new(),
        stored_from: 0,
    });
    let written = writer.finish();
    let name = booted.next_name;
    let long = Barrier {
        name,
        file: format!("{name:012}.seg"),
        record: Record {
            entries: vec![
                Entry::AddFile(written.claim(name)),
                Entry::Watermark {
                    stream: STREAM.into(),
                    position: 0,
                },
            ],
        },
        bytes: written.bytes,
    };
    seal(&fs, &mut booted, &long).unwrap();
    drop(booted);
    let dir = on_disk(&fs);
    for flags in [&[][..], &["--verify"], &["--json"]] {
        let run = fsck(dir.path(), flags);
        assert_eq!(run.code, 0, "{flags:?}: {}", run.stderr);
        assert!(run.stdout.contains(&label[..1000]), "{flags:?}");
    }
}

/// The bytes of the one partition a merge output holds, as its record says.
fn merged_partition_len(merged: &Barrier) -> u64 {
    match &merged.record.entries[0] {
        Entry::Merge { file, .. } => file.partitions[0].len,
        other => panic!("a merge's first entry is its Merge, not {other:?}"),
    }
}

#[test]
fn merges_show_live_files_per_partition_and_the_write_amplification() {
    let (fs, mut booted) = sealed_store();
    let barrier_bytes: u64 = [1, 2]
        .iter()
        .map(|&n| booted.catalog.file(n).unwrap().len)
        .sum();
    let first = merge(&fs, &booted, "run_7", &[1, 2]);
    seal(&fs, &mut booted, &first).unwrap();
    let first_bytes = first.bytes.len() as u64;

    // Half way: run_7 lives in its merge output alone; run_70 still in both barrier files,
    // which stay live for it.
    let dir = on_disk(&fs);
    let half = fsck(dir.path(), &["--json"]);
    assert_eq!(half.code, 0, "{}", half.stdout);
    let report = half.json();
    let partitions = &report["streams"][0]["partitions"];
    assert_eq!(partitions[0]["track"], serde_json::json!(["run_7"]));
    assert_eq!(partitions[0]["live_files"], 1);
    assert_eq!(partitions[0]["live_bytes"], merged_partition_len(&first));
    assert_eq!(
        partitions[0]["raw_files"],
        serde_json::json!(["000000000003"])
    );
    assert_eq!(partitions[0]["rows"], 10);
    assert_eq!(partitions[1]["live_files"], 2);
    let files = &report["files"];
    assert_eq!(files["live_files"], 3);
    assert_eq!(files["live_bytes"], barrier_bytes + first_bytes);
    assert_eq!(files["barrier_files"], 2);
    assert_eq!(files["barrier_bytes"], barrier_bytes);
    assert_eq!(files["merge_files"], 1);
    assert_eq!(files["merge_bytes"], first_bytes);
    let amplification = |report: &Value| report["files"]["write_amplification"].as_f64().unwrap();
    assert!((amplification(&report) - first_bytes as f64 / barrier_bytes as f64).abs() < 1e-12);

    // Then run_70 too: the barrier files are wholly retired, and removed as compaction does
    // once the record is durable. They still count as written.
    let second = merge(&fs, &booted, "run_70", &[1, 2]);
    seal(&fs, &mut booted, &second).unwrap();
    let second_bytes = second.bytes.len() as u64;
    let dir = on_disk(&fs);
    for name in ["000000000001.seg", "000000000002.seg"] {
        fs::remove_file(dir.path().join("seg").join(name)).unwrap();
    }
    let done = fsck(dir.path(), &["--json", "--verify"]);
    assert_eq!(done.code, 0, "{}", done.stdout);
    let report = done.json();
    let partitions = &report["streams"][0]["partitions"];
    for (part, merged) in [(&partitions[0], &first), (&partitions[1], &second)] {
        assert_eq!(part["live_files"], 1);
        assert_eq!(part["live_bytes"], merged_partition_len(merged));
        assert_eq!(part["rows"], 10);
    }
    let files = &report["files"];
    assert_eq!(files["live_files"], 2);
    assert_eq!(files["live_bytes"], first_bytes + second_bytes);
    assert_eq!(files["barrier_files"], 2);
    assert_eq!(files["merge_files"], 2);
    assert_eq!(files["merge_bytes"], first_bytes + second_bytes);
    let expected = (first_bytes + second_bytes) as f64 / barrier_bytes as f64;
    assert!((amplification(&report) - expected).abs() < 1e-12);
    assert_eq!(report["verified"].as_array().unwrap().len(), 2);

    let human = fsck(dir.path(), &[]);
    assert_eq!(human.code, 0, "{}", human.stdout);
    let line = human
        .stdout
        .lines()
        .find(|l| l.starts_with("Files: "))
        .unwrap_or_else(|| panic!("no Files line:\n{}", human.stdout));
    assert!(line.starts_with("Files: 2 live"), "{line}");
    assert!(line.contains("2 by barriers"), "{line}");
    assert!(line.contains("2 by compaction"), "{line}");
    assert!(
        line.contains(&format!("write amplification {expected:.2} ")),
        "{line}"
    );
    assert!(human.stdout.contains("LIVE FILES"), "{}", human.stdout);
}

#[test]
fn a_store_never_compacted_has_write_amplification_zero_and_a_new_one_none() {
    let (fs, _booted) = sealed_store();
    let report = fsck(on_disk(&fs).path(), &["--json"]).json();
    assert_eq!(report["files"]["merge_files"], 0);
    assert_eq!(report["files"]["write_amplification"], 0.0);
    let (fs, _booted) = new_store();
    let report = fsck(on_disk(&fs).path(), &["--json"]).json();
    assert_eq!(report["files"]["live_files"], 0);
    assert_eq!(report["files"]["write_amplification"], Value::Null);
}
