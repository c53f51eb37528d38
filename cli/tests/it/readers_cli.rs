//! `strata query|survey|fold` on a store `strata ingest` is writing (#32): each answers (exit 0)
//! at a watermark it names, no higher than what the ingest has been given, and once the ingest
//! is done the same commands answer exactly what a read-only open of a copy answers.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use super::cli::{Scratch, strata_in};
use super::read_only_cli::copy_tree;

const READS: [&[&str]; 4] = [
    &[
        "query",
        "s",
        "--track",
        "north",
        "--from-position",
        "3",
        "--to-position",
        "40",
    ],
    &["survey", "s", "--budget", "64", "--format", "json"],
    &["fold", "s", "--agg", "mean"],
    &["fold", "s", "--agg", "count", "--track", "south"],
];

/// Rows `from..to` of the CSV the ingest is fed: two sites a row each.
fn rows(from: u64, to: u64) -> String {
    let mut csv = String::new();
    for i in from..to {
        for site in ["north", "south"] {
            let v = f64::from(u32::try_from((i * 37 + 11) % 101).unwrap()) / 4.0;
            writeln!(csv, "{site},{},{v}", i * 3).unwrap();
        }
    }
    csv
}

/// The watermark an answer's note names.
fn noted(stderr: &str) -> Option<u64> {
    stderr
        .split("'s watermark ")
        .nth(1)?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// A read that names its watermark on stderr (`--verbose`).
fn read(cwd: &Path, store: &str, args: &[&str]) -> (i32, String, String) {
    let mut all = vec!["--verbose", "--store", store];
    all.extend_from_slice(args);
    let run = strata_in(cwd, &all, "");
    (run.code, run.stdout, run.stderr)
}

#[test]
fn reads_beside_a_running_ingest_answer_at_a_watermark_it_has_reached() {
    let s = Scratch::new();
    s.ok(
        &[
            "declare", "s", "--field", "site:str", "--field", "t:u64", "--field", "v:f64",
            "--track", "site", "--axis", "t", "--ladder", "10:2",
        ],
        "",
    );
    let mut ingest = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["--store", "store", "ingest", "s", "-", "--seal-every", "50"])
        .current_dir(s.dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = ingest.stdin.take().unwrap();
    stdin.write_all(b"site,t,v\n").unwrap();
    let mut fed = 0;
    let mut beside = 0;
    let mut highest = 0;
    for round in 0..12u64 {
        stdin.write_all(rows(fed, fed + 60).as_bytes()).unwrap();
        stdin.flush().unwrap();
        fed += 60;
        std::thread::sleep(Duration::from_millis(60));
        for args in READS {
            let (code, out, err) = read(s.dir.path(), "store", args);
            assert_eq!(code, 0, "{args:?} beside the ingest, round {round}: {err}");
            assert!(!out.is_empty(), "{args:?}: {err}");
            // Positions are one a row, from 1: what the ingest was given bounds them.
            let Some(watermark) = noted(&err) else {
                // Nothing sealed yet.
                assert!(err.contains("no watermark"), "{args:?}: {err}");
                continue;
            };
            assert!(
                watermark <= 2 * fed,
                "{args:?} answered at watermark {watermark}, above the {} rows fed",
                2 * fed
            );
            assert!(watermark >= highest, "the watermark went back");
            highest = watermark;
            beside += 1;
        }
    }
    assert!(
        ingest.try_wait().unwrap().is_none(),
        "the ingest ran through every read"
    );
    assert!(beside >= 20, "reads answered beside the ingest: {beside}");
    drop(stdin);
    let done = ingest.wait_with_output().unwrap();
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );

    // Done: every read answers the final state, the same as a read-only open of a copy.
    let source = s.dir.path().join("store");
    let copy = s.dir.path().join("copy");
    copy_tree(&source, &copy);
    std::fs::remove_file(copy.join("LOCK")).unwrap();
    for args in READS {
        let (code, out, err) = read(s.dir.path(), "store", args);
        assert_eq!(code, 0, "{args:?}: {err}");
        assert_eq!(noted(&err), Some(2 * fed), "{args:?}: {err}");
        let (copy_code, copy_out, _) = read(s.dir.path(), "copy", args);
        assert_eq!((code, &out), (copy_code, &copy_out), "{args:?}");
    }
    let (_, count, _) = read(s.dir.path(), "store", &["fold", "s", "--agg", "count"]);
    assert_eq!(count.trim(), format!("v: {}", 2 * fed));
}
