//! The `strata` binary, run for real: declare, ingest, query, seal, fsck and a tiny demo.

use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value as Json;
use tempfile::TempDir;

/// What a run of the binary left: its exit code and its output as text.
#[derive(Debug)]
pub(crate) struct Run {
    pub(crate) code: i32,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

/// Runs `strata ARGS` in `cwd` with `stdin` as its standard input.
pub(crate) fn strata_in(cwd: &Path, args: &[&str], stdin: &str) -> Run {
    let mut child = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the strata binary runs");
    let written = child.stdin.take().unwrap().write_all(stdin.as_bytes());
    if let Err(error) = written {
        // A command that refuses its input may exit before it has read all of it.
        assert_eq!(error.kind(), std::io::ErrorKind::BrokenPipe, "{error}");
    }
    let out = child.wait_with_output().unwrap();
    Run {
        code: out.status.code().expect("exited, not killed"),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

/// `declare capture` as the #28 reproducers declare it: tracks `run,probe`, axis `t`, one
/// measured `value`.
pub(crate) const DECLARE_CAPTURE: [&str; 14] = [
    "declare",
    "capture",
    "--field",
    "run:str",
    "--field",
    "probe:str",
    "--field",
    "t:u64",
    "--field",
    "value:f64",
    "--track",
    "run,probe",
    "--axis",
    "t",
];

/// A scratch folder holding a store at `store/` (not created until `declare`).
pub(crate) struct Scratch {
    pub(crate) dir: TempDir,
}

impl Scratch {
    pub(crate) fn new() -> Scratch {
        Scratch {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    /// `strata --store store ARGS`, with `stdin` as input.
    pub(crate) fn run_with(&self, args: &[&str], stdin: &str) -> Run {
        let mut all = vec!["--store", "store"];
        all.extend_from_slice(args);
        strata_in(self.dir.path(), &all, stdin)
    }

    pub(crate) fn run(&self, args: &[&str]) -> Run {
        self.run_with(args, "")
    }

    /// Runs and insists on exit 0.
    pub(crate) fn ok(&self, args: &[&str], stdin: &str) -> Run {
        let run = self.run_with(args, stdin);
        assert_eq!(run.code, 0, "strata {args:?} failed: {run:?}");
        run
    }

    pub(crate) fn write(&self, name: &str, text: &str) -> String {
        std::fs::write(self.dir.path().join(name), text).unwrap();
        name.to_owned()
    }
}

/// A store with stream `m`: every kind of field, tracked by `site`, axis `t`.
fn every_kind() -> Scratch {
    let s = Scratch::new();
    let declare = [
        "declare",
        "m",
        "--field",
        "site:str",
        "--field",
        "t:u64",
        "--field",
        "delta:i64",
        "--field",
        "x:f64",
        "--field",
        "note:str",
        "--field",
        "raw:bytes",
        "--track",
        "site",
        "--axis",
        "t",
    ];
    let run = s.ok(&declare, "");
    assert!(run.stdout.contains("stream m is declared"), "{run:?}");
    s
}

/// Declares stream `c`: `run,probe` tracks, axis `t`, one measured `v`.
const DECLARE_C: [&str; 16] = [
    "declare",
    "c",
    "--field",
    "run:str",
    "--field",
    "probe:str",
    "--field",
    "t:u64",
    "--field",
    "v:f64",
    "--track",
    "run,probe",
    "--axis",
    "t",
    "--ladder",
    "16:4",
];

/// A store with stream `c`: `run,probe` tracks, axis `t`, one measured `v`.
fn runs_and_probes() -> Scratch {
    let s = Scratch::new();
    s.ok(&DECLARE_C, "");
    s
}

/// The CSV `query` prints, without its header, as lines.
fn body(run: &Run) -> Vec<&str> {
    run.stdout.lines().skip(1).collect()
}

#[test]
fn csv_round_trips_every_kind_exactly() {
    let s = every_kind();
    // Header in another order than the declaration; awkward text and floats.
    let csv = "x,site,t,delta,note,raw\n\
               0.1,north,10,-5,\"a, \"\"quoted\"\" note\",00ff10\n\
               1e300,south,10,9223372036854775807,,\n\
               -2.5e-10,north,11,-9223372036854775808,ünïcode,DEADbeef\n";
    let run = s.ok(&["ingest", "m", "-"], csv);
    assert!(run.stdout.contains("ingested 3 rows"), "{run:?}");
    let run = s.ok(&["query", "m"], "");
    assert_eq!(
        run.stdout,
        "position,site,t,delta,x,note,raw\n\
         1,north,10,-5,0.1,\"a, \"\"quoted\"\" note\",00ff10\n\
         2,south,10,9223372036854775807,1e300,,\n\
         3,north,11,-9223372036854775808,-2.5e-10,ünïcode,deadbeef\n"
    );

    // What query prints ingests again into an identical stream, positions and all.
    let t = every_kind();
    let copy = t.write("copy.csv", &run.stdout);
    t.ok(&["ingest", "m", &copy], "");
    assert_eq!(t.ok(&["query", "m"], "").stdout, run.stdout);
}

#[test]
fn json_round_trips_every_kind_exactly() {
    let s = every_kind();
    let csv = "site,t,delta,x,note,raw\nnorth,10,-5,0.1,\"tab\there\",00ff\nsouth,3,7,1e300,,\n";
    s.ok(&["ingest", "m"], csv);
    let run = s.ok(&["query", "m", "--format", "json"], "");
    let json: Json = serde_json::from_str(&run.stdout).unwrap();
    let expected = serde_json::json!([
        {"position": 1, "site": "north", "t": 10, "delta": -5, "x": 0.1, "note": "tab\there", "raw": [0, 255]},
        {"position": 2, "site": "south", "t": 3, "delta": 7, "x": 1e300, "note": "", "raw": []},
    ]);
    assert_eq!(json, expected);
    // Keys come in declaration order, position first.
    let first_line = run.stdout.lines().nth(1).unwrap();
    assert!(
        first_line.starts_with("{\"position\":1,\"site\":\"north\",\"t\":10,\"delta\""),
        "{first_line}"
    );
    let empty = s.ok(
        &["query", "m", "--format", "json", "--from-position", "99"],
        "",
    );
    assert_eq!(
        serde_json::from_str::<Json>(&empty.stdout).unwrap(),
        serde_json::json!([])
    );
}

#[test]
fn a_bad_cell_refuses_its_batch_and_keeps_the_sealed_ones_before_it() {
    let s = runs_and_probes();
    // Batches of two rows, sealed after each: lines 2-3, 4-5, 6-7 (line 7 is bad), 8-9.
    let csv = "run,probe,t,v\n\
               a,p,1,1.0\na,p,2,2.0\n\
               a,p,3,3.0\na,p,4,4.0\n\
               a,p,5,5.0\na,p,6,oops\n\
               a,p,7,7.0\na,p,8,8.0\n";
    let run = s.run_with(&["ingest", "c", "--batch", "2", "--seal-every", "2"], csv);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("line 7:"), "{run:?}");
    assert!(run.stderr.contains("\"oops\""), "{run:?}");
    assert_eq!(run.stderr.lines().count(), 1, "one line: {run:?}");
    let rows = s.ok(&["query", "c"], "");
    assert_eq!(
        body(&rows),
        ["1,a,p,1,1.0", "2,a,p,2,2.0", "3,a,p,3,3.0", "4,a,p,4,4.0"]
    );
    assert_eq!(s.ok(&["seal"], "").stdout, "c: watermark 4\n");

    // The refusal says how to resume; with line 7 put right, that command stores the rest,
    // each row once (lines 2-5 are not read again).
    let resume = "once line 7 is put right, the same command with --skip-lines 4 stores the rest";
    assert!(run.stderr.contains(resume), "{run:?}");
    let fixed = csv.replace("oops", "6.0");
    let args = [
        "ingest",
        "c",
        "--batch",
        "2",
        "--seal-every",
        "2",
        "--skip-lines",
        "4",
    ];
    s.ok(&args, &fixed);
    let rows = s.ok(&["query", "c"], "");
    let values: Vec<&str> = body(&rows)
        .iter()
        .map(|line| line.rsplit(',').next().unwrap())
        .collect();
    assert_eq!(
        values,
        ["1.0", "2.0", "3.0", "4.0", "5.0", "6.0", "7.0", "8.0"]
    );
}

#[test]
fn an_engine_refusal_mid_batch_stores_nothing_of_that_batch() {
    let s = runs_and_probes();
    // No seal until the end: lines 2-3 are one batch, 4-5 the next. Line 4 is fine on its own
    // and is published before line 5 (the axis going backwards) is refused, so nothing of its
    // batch may survive, while lines 2-3 (staged, not yet sealed) must.
    let csv = "run,probe,t,v\n\
               a,p,10,1.0\nb,q,10,2.0\n\
               a,p,20,3.0\na,p,15,4.0\n\
               a,p,30,5.0\n";
    let run = s.run_with(&["ingest", "c", "--batch", "2"], csv);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("line 5:"), "{run:?}");
    assert!(run.stderr.contains("backwards"), "{run:?}");
    let rows = s.ok(&["query", "c"], "");
    assert_eq!(body(&rows), ["1,a,p,10,1.0", "2,b,q,10,2.0"]);

    // A NaN is a value a measured f64 may hold (#48): stored, not refused.
    let run = s.run_with(&["ingest", "c"], "run,probe,t,v\na,p,40,NaN\n");
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(body(&s.ok(&["query", "c"], "")).len(), 3);
}

#[test]
fn wrong_arity_and_unknown_columns_name_their_line() {
    let s = runs_and_probes();
    let run = s.run_with(&["ingest", "c"], "run,probe,t,v\na,p,1,1.0\na,p,2\n");
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.contains("line 3:") && run.stderr.contains("got 3"),
        "{run:?}"
    );

    let run = s.run_with(&["ingest", "c"], "run,probe,t,v,colour\n");
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.contains("line 1:") && run.stderr.contains("\"colour\""),
        "{run:?}"
    );

    let run = s.run_with(&["ingest", "c"], "run,probe,v\n");
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("no column for field \"t\""), "{run:?}");

    let run = s.run_with(&["ingest", "nope"], "run,probe,t,v\n");
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("no stream \"nope\""), "{run:?}");
    assert!(
        body(&s.ok(&["query", "c"], "")).is_empty(),
        "nothing was stored"
    );
}

#[test]
fn a_position_column_groups_rows_and_positions_otherwise_continue() {
    let s = runs_and_probes();
    let csv = "position,run,probe,t,v\n5,a,p,1,1.5\n5,b,q,1,2.5\n9,a,p,2,3.5\n";
    s.ok(&["ingest", "c", "--batch", "2"], csv);
    let rows = s.ok(&["query", "c"], "");
    assert_eq!(body(&rows), ["5,a,p,1,1.5", "5,b,q,1,2.5", "9,a,p,2,3.5"]);

    // A position below the stream's last one is the engine's refusal.
    let run = s.run_with(&["ingest", "c"], "position,run,probe,t,v\n8,a,p,3,0.0\n");
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.contains("line 2:") && run.stderr.contains("position 8"),
        "{run:?}"
    );

    // Without the column, each row gets the next position after the watermark.
    s.ok(
        &["ingest", "c", "-"],
        "run,probe,t,v\na,p,3,4.5\nb,q,2,5.5\n",
    );
    let rows = s.ok(&["query", "c", "--from-position", "10"], "");
    assert_eq!(body(&rows), ["10,a,p,3,4.5", "11,b,q,2,5.5"]);
}

#[test]
fn interleaved_tracks_and_spelling_read_back_in_csv_order() {
    let s = runs_and_probes();
    // Tracks alternate row by row and run in runs; numbers carry spaces, a sign, leading zeros
    // and exponents (the text path's spellings), so every path a cell can take is taken.
    let csv = "run,probe,t,v\n\
               a,p,1,1.5\nb,q,1, 2.5\na,p,2,3e2\na,p, 3 ,+4\nb,q,002,-0.5\nb,q,3,1E-3\n";
    s.ok(&["ingest", "c", "--batch", "4"], csv);
    let rows = s.ok(&["query", "c"], "");
    assert_eq!(
        body(&rows),
        [
            "1,a,p,1,1.5",
            "2,b,q,1,2.5",
            "3,a,p,2,300.0",
            "4,a,p,3,4.0",
            "5,b,q,2,-0.5",
            "6,b,q,3,0.001",
        ]
    );
}

#[test]
fn a_position_going_back_within_a_batch_or_text_that_is_not_utf8_names_its_line() {
    let s = runs_and_probes();
    let csv = "position,run,probe,t,v\n7,a,p,1,1.0\n8,a,p,2,2.0\n6,a,p,3,3.0\n";
    let run = s.run_with(&["ingest", "c"], csv);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr
            .contains("line 4: position 6 is below the stream's last position 8"),
        "{run:?}"
    );
    assert!(
        body(&s.ok(&["query", "c"], "")).is_empty(),
        "nothing stored"
    );

    let mut csv = b"run,probe,t,v\na,p,1,1.0\na,p".to_vec();
    csv.extend_from_slice(&[0xff, b',', b'2', b',', b'2', b'.', b'0', b'\n']);
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["--store", "store", "ingest", "c", "-"])
        .current_dir(s.dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&csv).unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("line 3: field 2 is not valid UTF-8 (byte 1)"),
        "{stderr}"
    );
    assert!(
        body(&s.ok(&["query", "c"], "")).is_empty(),
        "nothing stored"
    );
}

#[test]
fn query_narrows_by_track_prefix_and_position_range() {
    let s = runs_and_probes();
    let csv = "run,probe,t,v\n\
               r1,p1,1,1.0\nr1,p2,1,2.0\nr10,p1,1,3.0\nr1,p1,2,4.0\nr2,p1,1,5.0\n";
    s.ok(&["ingest", "c", "--seal-every", "2"], csv);
    let run1 = s.ok(&["query", "c", "--track", "r1"], "");
    assert_eq!(
        body(&run1),
        ["1,r1,p1,1,1.0", "2,r1,p2,1,2.0", "4,r1,p1,2,4.0"]
    );
    let probe = s.ok(&["query", "c", "--track", "r1,p1"], "");
    assert_eq!(body(&probe), ["1,r1,p1,1,1.0", "4,r1,p1,2,4.0"]);
    let span = s.ok(
        &["query", "c", "--from-position", "2", "--to-position", "4"],
        "",
    );
    assert_eq!(
        body(&span),
        ["2,r1,p2,1,2.0", "3,r10,p1,1,3.0", "4,r1,p1,2,4.0"]
    );
    let both = s.ok(&["query", "c", "--track", "r1", "--to-position", "2"], "");
    assert_eq!(body(&both), ["1,r1,p1,1,1.0", "2,r1,p2,1,2.0"]);
    // A track that holds nothing is refused, not answered with a bare header (#14).
    let none = s.run(&["query", "c", "--track", "r3"]);
    assert_eq!(none.code, 1, "{none:?}");
    assert_eq!(none.stdout, "", "{none:?}");
    assert!(
        none.stderr
            .contains("no track of stream \"c\" lies under r3 (its tracks: r1,p1, r1,p2"),
        "{none:?}"
    );

    let too_deep = s.run(&["query", "c", "--track", "a,b,c"]);
    assert_eq!(too_deep.code, 1, "{too_deep:?}");
    let backwards = s.run(&["query", "c", "--from-position", "5", "--to-position", "4"]);
    assert_eq!(backwards.code, 2, "a usage error: {backwards:?}");
}

#[test]
fn query_streams_and_a_damaged_block_part_way_ends_the_output_there_with_exit_1() {
    let s = runs_and_probes();
    // One partition, two barriers: a file each.
    s.ok(
        &["ingest", "c", "--seal-every", "2", "--no-compact"],
        "run,probe,t,v\na,p,1,1.0\na,p,2,2.0\na,p,3,3.0\na,p,4,4.0\n",
    );
    let seg = s.dir.path().join("store/seg");
    let names = names_in(&seg);
    assert_eq!(names.len(), 2, "{names:?}");
    // The second file's first block (just past the 32-byte header) no longer matches its crc.
    let second = seg.join(&names[1]);
    let mut bytes = std::fs::read(&second).unwrap();
    bytes[32] ^= 0xff;
    std::fs::write(&second, bytes).unwrap();
    for (format, first) in [("csv", "1,a,p,1,1.0"), ("json", "{\"position\":1,")] {
        let run = s.run(&["query", "c", "--format", format]);
        assert_eq!(run.code, 1, "{run:?}");
        assert_eq!(run.stderr.lines().count(), 1, "{run:?}");
        assert!(
            run.stderr.contains(&names[1]) && run.stderr.contains("checksum mismatch"),
            "the error names the file: {run:?}"
        );
        // The first file's rows were written before the damage was reached, and none after.
        assert!(
            run.stdout.lines().nth(1).unwrap().starts_with(first),
            "{run:?}"
        );
        assert_eq!(run.stdout.lines().count(), 3, "{run:?}");
        assert!(!run.stdout.contains("3.0"), "{run:?}");
    }
}

#[test]
fn seal_prints_each_watermark() {
    let s = runs_and_probes();
    s.ok(&["declare", "empty", "--field", "v:f64"], "");
    assert_eq!(
        s.ok(&["seal"], "").stdout,
        "c: watermark none (nothing sealed yet)\nempty: watermark none (nothing sealed yet)\n"
    );
    s.ok(
        &["ingest", "c"],
        "position,run,probe,t,v\n41,a,p,1,1.0\n42,a,p,2,2.0\n",
    );
    let run = s.ok(&["seal"], "");
    assert_eq!(
        run.stdout,
        "c: watermark 42\nempty: watermark none (nothing sealed yet)\n"
    );
}

#[test]
fn fsck_is_clean_on_a_fresh_store() {
    let s = runs_and_probes();
    s.ok(&["ingest", "c"], "run,probe,t,v\na,p,1,1.0\n");
    let run = s.ok(&["fsck", "--verify"], "");
    assert!(
        run.stdout.starts_with("strata store store: CLEAN"),
        "{run:?}"
    );
    let run = s.ok(&["fsck", "--json"], "");
    let json: Json = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(json["status"], "clean");
    assert_eq!(json["streams"][0]["id"], "c");
    assert_eq!(json["streams"][0]["watermark"], 1);

    let missing = strata_in(s.dir.path(), &["--store", "elsewhere", "fsck"], "");
    assert_eq!(
        missing.code, 2,
        "unusable, as engine-fsck says: {missing:?}"
    );
    assert!(missing.stdout.contains("UNUSABLE"), "{missing:?}");
}

#[test]
fn a_missing_store_is_a_clear_error() {
    let s = Scratch::new();
    for args in [&["query", "c"][..], &["seal"], &["ingest", "c", "-"]] {
        let run = s.run(args);
        assert_eq!(run.code, 1, "{args:?}: {run:?}");
        assert!(
            run.stderr.contains("cannot open the store store"),
            "{run:?}"
        );
        assert!(run.stderr.contains("does not exist"), "{run:?}");
        assert_eq!(run.stderr.lines().count(), 1, "{run:?}");
    }
    assert!(
        !s.dir.path().join("store").exists(),
        "only declare creates a store"
    );

    let no_store = strata_in(s.dir.path(), &["seal"], "");
    assert_eq!(no_store.code, 2, "--store is missing: {no_store:?}");
}

#[test]
fn redeclaring_identically_is_fine_and_a_conflict_exits_1() {
    let s = runs_and_probes();
    s.ok(&DECLARE_C, "");
    let conflict = s.run(&["declare", "c", "--field", "run:str", "--field", "v:f64"]);
    assert_eq!(conflict.code, 1, "{conflict:?}");
    assert!(
        conflict
            .stderr
            .contains("conflicts with the recorded declaration"),
        "{conflict:?}"
    );

    let bad_kind = s.run(&["declare", "d", "--field", "v:float"]);
    assert_eq!(bad_kind.code, 2, "{bad_kind:?}");
    assert!(
        bad_kind.stderr.contains("unknown kind \"float\""),
        "{bad_kind:?}"
    );
    let bad_axis = s.run(&["declare", "d", "--field", "v:f64", "--axis", "v"]);
    assert_eq!(bad_axis.code, 1, "{bad_axis:?}");
}

/// The number right after `word ` in `line` (commas allowed).
fn number_after(text: &str, word: &str) -> u64 {
    let at = text
        .find(word)
        .unwrap_or_else(|| panic!("{word:?} in {text}"))
        + word.len();
    let digits: String = text[at..]
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == ',')
        .filter(char::is_ascii_digit)
        .collect();
    digits
        .parse()
        .unwrap_or_else(|_| panic!("a number after {word:?} in {text}"))
}

#[test]
fn the_demo_reports_what_it_measured_at_a_tiny_size() {
    let cwd = tempfile::tempdir().unwrap();
    // 200 ticks of 32 tracks in windows of 32 ticks (the last of 8), less the dropout (ticks
    // 80..88, 40% to 44% of the series): 192 ticks, 6,144 rows in 7 batches of 1,024, 1,024,
    // 768, 1,024, 1,024, 1,024 and 256 rows. Sealing once 2,048 rows are unsealed: after the
    // 2nd batch and the 5th, and at the end: 3 barriers.
    let args = ["demo", "--rows", "6400", "--seal-every", "2048"];
    let run = strata_in(cwd.path(), &args, "");
    assert_eq!(run.code, 0, "{run:?}");
    let out = &run.stdout;
    assert_eq!(number_after(out, "ingested"), 6144, "{out}");
    assert_eq!(number_after(out, "rows in"), 7, "batches: {out}");
    assert_eq!(number_after(out, "sealed"), 6144, "{out}");
    assert_eq!(number_after(out, "MiB) in"), 3, "barriers: {out}");
    assert_eq!(number_after(out, "watermark"), 7, "{out}");
    let syncs = number_after(out, "barriers:");
    assert!(syncs >= 4, "at least one sync a barrier: {out}");
    assert!(out.contains("equal to what was published"), "{out}");
    for label in [
        "signal ",
        "ingested ",
        "on disk ",
        "sealed ",
        "reopened ",
        "query ",
        "survey ",
        "kept ",
        "fold ",
    ] {
        let lines: Vec<&str> = out.lines().filter(|l| l.starts_with(label)).collect();
        assert!(!lines.is_empty(), "no {label:?} line: {out}");
        for line in lines {
            assert!(
                line.chars().any(|c| c.is_ascii_digit()),
                "a line without a figure: {line}"
            );
        }
    }
    assert!(cwd.path().join("strata-demo/manifest-000001").exists());
    // Bytes per row on disk, as the files measure: every file of the store (the picture the
    // demo draws afterwards is not the store's).
    let on_disk = out.lines().find(|l| l.starts_with("on disk ")).unwrap();
    let mut n_bytes = 0;
    let mut folders = vec![cwd.path().join("strata-demo")];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(folder).unwrap() {
            let entry = entry.unwrap();
            if entry.file_type().unwrap().is_dir() {
                folders.push(entry.path());
            } else if entry.file_name() != "survey.svg" {
                n_bytes += entry.metadata().unwrap().len();
            }
        }
    }
    assert_eq!(number_after(on_disk, "on disk"), n_bytes, "{on_disk}");
    let per_row: f64 = on_disk
        .split(": ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        (per_row - n_bytes as f64 / 6144.0).abs() < 0.05 + 1e-9,
        "{per_row} bytes per row, {n_bytes} bytes: {on_disk}"
    );
    assert!(on_disk.contains("bytes per row"), "{on_disk}");
    for aggregate in ["mean", "min", "max", "p50", "p99"] {
        let fold = out
            .lines()
            .find(|l| l.starts_with("fold ") && l.contains(&format!(" {aggregate} ")));
        assert!(fold.is_some(), "no {aggregate} fold: {out}");
    }
    let svg = std::fs::read_to_string(cwd.path().join("strata-demo/survey.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    assert_eq!(
        svg.matches("<path class=\"band\"").count(),
        2,
        "value and temp: {svg}"
    );
    assert!(!svg.contains("NaN"), "{svg}");

    // Run again: the old demo store is replaced, and the new one is clean.
    let again = strata_in(cwd.path(), &args, "");
    assert_eq!(again.code, 0, "{again:?}");
    let fsck = strata_in(cwd.path(), &["--store", "strata-demo", "fsck"], "");
    assert_eq!(fsck.code, 0, "{fsck:?}");
}

/// The demo's schedule, restated from its description (not read from its code): spikes in
/// `value` at these thousandths of the series' ticks, with these values; no rows from any track
/// over 400..440 thousandths; `value` stuck at 0 over 700..740 thousandths. A tick is 1 ms, and
/// `t` counts µs.
const DEMO_SPIKES: [(u64, f64); 4] = [(130, 6.0), (310, -5.0), (580, 7.5), (860, -6.5)];
const DEMO_OFFLINE: (u64, u64) = (400, 440);
const DEMO_STUCK: (u64, u64) = (700, 740);
/// The first tick's `t`, as the demo's first line says: 2025-12-01T00:00:00Z in µs.
const DEMO_START_US: u64 = 1_764_547_200_000_000;

/// A demo of `n_ticks` ticks a track in a fresh folder.
fn demo_of(n_ticks: u64) -> (tempfile::TempDir, Run) {
    let cwd = tempfile::tempdir().unwrap();
    let rows = (n_ticks * 32).to_string();
    let run = strata_in(cwd.path(), &["demo", "--rows", &rows], "");
    assert_eq!(run.code, 0, "{run:?}");
    (cwd, run)
}

/// 4,000 ticks a track: the drawn survey (2,000 points over two fields: at most 250 buckets a
/// field) answers from level 0, whose cells are 64 ticks (64,000 µs) wide: 63 buckets over
/// 0 ..= 3,999,000 µs. The dropout, ticks 1,600 ..= 1,759, empties buckets 25 and 26 whole.
#[test]
fn the_demo_survey_keeps_every_spike_and_leaves_the_dropout_as_a_gap() {
    let n_ticks = 4000;
    let (cwd, run) = demo_of(n_ticks);
    let at = |per_mille: u64| n_ticks * per_mille / 1000;
    let survey = strata_in(
        cwd.path(),
        &[
            "--store",
            "strata-demo",
            "survey",
            "capture",
            "--track",
            "run_1,probe_3",
            "--budget",
            "2000",
            "--format",
            "json",
        ],
        "",
    );
    assert_eq!(survey.code, 0, "{survey:?}");
    let json: serde_json::Value = serde_json::from_str(&survey.stdout).unwrap();
    assert_eq!(json["bucket_width"], 64_000, "{json}");
    let field = |name: &str| {
        json["fields"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["field"] == name)
            .unwrap_or_else(|| panic!("no {name}: {json}"))["buckets"]
            .as_array()
            .unwrap()
            .clone()
    };
    let value = field("value");
    let point = |b: &serde_json::Value, which: &str| {
        (
            b[which]["axis"].as_u64().unwrap(),
            b[which]["value"].as_f64().unwrap(),
        )
    };
    for (per_mille, spike) in DEMO_SPIKES {
        let want = (DEMO_START_US + at(per_mille) * 1000, spike);
        let which = if spike > 0.0 { "max" } else { "min" };
        assert!(
            value.iter().any(|b| point(b, which) == want),
            "the spike {spike} at t {} is no bucket's {which}: {json}",
            want.0
        );
    }
    let t = |tick: u64| DEMO_START_US + tick * 1000;
    let (from, to) = (t(at(DEMO_OFFLINE.0)), t(at(DEMO_OFFLINE.1) - 1));
    for name in ["value", "temp"] {
        let buckets = field(name);
        let axis = |b: &serde_json::Value, p: &str| b[p]["axis"].as_u64().unwrap();
        assert!(
            buckets
                .iter()
                .all(|b| axis(b, "last") < from || axis(b, "first") > to),
            "{name}: a bucket covers the dropout {from}..={to}: {json}"
        );
        // The rows either side of it are there: the gap is exactly the dropout.
        assert!(
            buckets.iter().any(|b| axis(b, "last") == from - 1000),
            "{json}"
        );
        assert!(
            buckets.iter().any(|b| axis(b, "first") == to + 1000),
            "{json}"
        );
        assert_eq!(buckets.len(), 63 - 2, "{name}: two buckets skipped");
    }
    // Buckets wholly inside the stuck stretch (ticks 2,800 ..= 2,959) read 0 throughout.
    let (stuck_from, stuck_to) = (t(at(DEMO_STUCK.0)), t(at(DEMO_STUCK.1) - 1));
    let inside: Vec<&serde_json::Value> = value
        .iter()
        .filter(|b| point(b, "first").0 >= stuck_from && point(b, "last").0 <= stuck_to)
        .collect();
    assert_eq!(inside.len(), 2, "{json}");
    for b in inside {
        assert_eq!((point(b, "min").1, point(b, "max").1), (0.0, 0.0), "{b}");
    }

    // The picture breaks both panels' band and line once, at a stripe marking no rows.
    let svg = std::fs::read_to_string(cwd.path().join("strata-demo/survey.svg")).unwrap();
    assert_eq!(
        svg.matches("class=\"gap\"").count(),
        2,
        "one a panel: {svg}"
    );
    for path in svg.split("<path class=\"line\" d=\"").skip(1) {
        let d = path.split('"').next().unwrap();
        assert_eq!(d.matches('M').count(), 2, "the line breaks once: {d}");
    }
    // And the demo says so, from what it measured.
    let out = &run.stdout;
    assert!(
        out.contains("4 of 4 spikes, each as its bucket's highest or lowest value"),
        "{out}"
    );
    assert!(
        out.contains("no bucket covers the dropout: it is a gap of 2 buckets"),
        "{out}"
    );
}

/// The demo speaks in the axis's units and says what a position is where it first shows one;
/// no ladder level, group or cell width appears.
#[test]
fn the_demo_speaks_in_axis_units_and_explains_a_position() {
    let (_cwd, run) = demo_of(4000);
    let out = &run.stdout;
    // 4,000 ticks 1 ms apart: t 0 .. 3.999 s from the start; level-0 cells of 64 ticks at 2,000
    // points (63 of them, less the 2 the dropout empties: the start is on their grid), and level
    // 2 (64 x 8^2 ticks = 4.096 s) at 48 points: two cells, as the start lies 1.024 s into one
    // (1,764,547,200 s is 430,797 x 4.096 s and 1.024 s more).
    assert!(
        out.contains("(t in µs from 2025-12-01T00:00:00Z, 0 .. 3.999 s)"),
        "{out}"
    );
    assert!(
        out.contains("61 buckets a field, each summarising 64 ms of t"),
        "{out}"
    );
    assert!(
        out.contains("2 buckets a field, each summarising 4.096 s of t"),
        "{out}"
    );
    assert!(
        out.contains("6 at t 520 ms, -5 at t 1.24 s, 7.5 at t 2.32 s, -6.5 at t 3.44 s"),
        "{out}"
    );
    assert!(
        out.contains("no rows from any track (t 1.6 .. 1.759 s)"),
        "{out}"
    );
    let first_position = out.find("position").unwrap();
    let explained = out
        .find("a position is the number of the batch a row was published in")
        .unwrap();
    let line_of = |at: usize| out[..at].matches('\n').count();
    assert!(
        line_of(explained) <= line_of(first_position) + 1,
        "explained where a position is first shown: {out}"
    );
    for word in ["level", "group", "cells", "wide)"] {
        assert!(!out.contains(word), "{word:?} in {out}");
    }
}

#[test]
fn the_demo_never_deletes_a_folder_that_is_not_a_store() {
    let cwd = tempfile::tempdir().unwrap();
    let precious = cwd.path().join("strata-demo/precious.txt");
    std::fs::create_dir(cwd.path().join("strata-demo")).unwrap();
    std::fs::write(&precious, "mine").unwrap();
    let run = strata_in(cwd.path(), &["demo", "--rows", "64"], "");
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("not a strata store"), "{run:?}");
    assert_eq!(std::fs::read_to_string(&precious).unwrap(), "mine");
}

/// The names in `dir`, sorted.
fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

#[test]
fn read_commands_leave_no_lock_in_a_folder_that_is_not_a_store() {
    let s = Scratch::new();
    let store = s.dir.path().join("store");
    std::fs::create_dir(&store).unwrap();
    std::fs::write(store.join("mine.txt"), "mine").unwrap();
    let commands: [&[&str]; 7] = [
        &["query", "x"],
        &["survey", "x", "--budget", "64"],
        &["fold", "x", "--agg", "sum"],
        &["ingest", "x", "-"],
        &["seal"],
        // A creator refuses a folder that holds someone else's files, and writes nothing there.
        &["declare", "x", "--field", "t:u64", "--axis", "t"],
        &["fsck"],
    ];
    for args in commands {
        let run = s.run_with(args, "t\n1\n");
        assert_ne!(run.code, 0, "{args:?}: {run:?}");
        assert!(
            run.stdout.contains("not a strata store") || run.stderr.contains("not a strata store"),
            "{args:?}: {run:?}"
        );
        assert_eq!(
            names_in(&store),
            ["mine.txt"],
            "{args:?} wrote into the folder"
        );
        assert_eq!(
            std::fs::read_to_string(store.join("mine.txt")).unwrap(),
            "mine"
        );
    }

    // An empty folder is not a store either until `declare` makes it one.
    let empty = s.dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    for args in &commands[..5] {
        let mut all = vec!["--store", "empty"];
        all.extend_from_slice(args);
        let run = strata_in(s.dir.path(), &all, "t\n1\n");
        assert_eq!(run.code, 1, "{args:?}: {run:?}");
        assert!(
            names_in(&empty).is_empty(),
            "{args:?} wrote into an empty folder"
        );
    }

    // And a missing folder is not created by a command that reads.
    for args in &commands[..5] {
        let mut all = vec!["--store", "missing/deeper"];
        all.extend_from_slice(args);
        let run = strata_in(s.dir.path(), &all, "t\n1\n");
        assert_eq!(run.code, 1, "{args:?}: {run:?}");
        assert!(run.stderr.contains("does not exist"), "{args:?}: {run:?}");
        assert!(
            !s.dir.path().join("missing").exists(),
            "{args:?} created it"
        );
    }
}

/// A stream whose watermark is `u64::MAX - 1`: one position is left to assign.
fn one_position_left() -> Scratch {
    let s = Scratch::new();
    let declare = [
        "declare", "k", "--field", "id:u64", "--field", "t:u64", "--field", "x:f64", "--track",
        "id", "--axis", "t",
    ];
    s.ok(&declare, "");
    s.ok(
        &["ingest", "k", "-"],
        "position,id,t,x\n18446744073709551614,1,1,1.0\n",
    );
    s
}

#[test]
fn a_bad_cell_is_named_before_exhausted_positions() {
    let s = one_position_left();
    // Line 2 takes the last position; line 3 has both a bad cell and no position left, and
    // its cells are checked first (as the text path did).
    let run = s.run_with(&["ingest", "k", "-"], "id,t,x\n1,2,2.0\n1,3,zz\n");
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("line 3:"), "{run:?}");
    assert!(
        run.stderr.contains("field \"x\": \"zz\" is not an f64"),
        "{:?}",
        run.stderr
    );
    // A row with good cells and no position left names the exhaustion.
    let run = s.run_with(&["ingest", "k", "-"], "id,t,x\n1,2,2.0\n1,3,3.0\n");
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.contains("line 3:") && run.stderr.contains("exhausted (u64::MAX)"),
        "{run:?}"
    );
}

#[test]
fn the_last_position_u64_max_is_assigned_as_the_store_takes_it() {
    let s = one_position_left();
    s.ok(&["ingest", "k", "-"], "id,t,x\n1,2,2.0\n");
    let rows = s.ok(
        &["query", "k", "--from-position", "18446744073709551615"],
        "",
    );
    assert_eq!(body(&rows), ["18446744073709551615,1,2,2.0"]);
    let run = s.run_with(&["ingest", "k", "-"], "id,t,x\n1,3,3.0\n");
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("watermark is u64::MAX"), "{run:?}");
}

/// An OUT that exists and is not a regular file — here a FIFO another process reads — is
/// written in place: before, the export wrote `OUT.partial` and renamed it over OUT, replacing
/// the FIFO (or a device such as `/dev/full`, whose full-disk error then went unseen) with a
/// regular file. CSV in every build, Parquet and Arrow alike.
#[test]
fn export_writes_into_a_fifo_in_place_rather_than_replacing_it() {
    use std::os::unix::fs::FileTypeExt as _;
    let s = runs_and_probes();
    s.ok(
        &["ingest", "c"],
        "run,probe,t,v\na,p,1,1.5\na,q,2,\nb,p,3,2.5\n",
    );
    let fifo = s.dir.path().join("out.fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let query = s.ok(&["query", "c"], "").stdout;
    for format in ["csv", "parquet", "arrow"] {
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read(fifo).unwrap())
        };
        s.ok(&["export", "c", "--format", format, "out.fifo"], "");
        // First: a FIFO renamed over leaves its reader waiting for a writer for good.
        let kind = std::fs::symlink_metadata(&fifo).unwrap().file_type();
        assert!(kind.is_fifo(), "{format}: out.fifo is still a FIFO");
        assert!(!s.dir.path().join("out.fifo.partial").exists());
        let got = reader.join().unwrap();
        match format {
            "csv" => assert_eq!(String::from_utf8(got).unwrap(), query),
            "parquet" => assert!(got.starts_with(b"PAR1") && got.ends_with(b"PAR1")),
            _ => assert!(got.len() > 100, "{} bytes of Arrow", got.len()),
        }
    }
}

#[test]
fn export_csv_writes_what_query_prints_into_a_file_or_standard_output() {
    let s = runs_and_probes();
    let csv = "run,probe,t,v\na,p,1,1.5\na,q,2,\nb,p,3,NaN\n";
    s.ok(&["ingest", "c"], csv);
    let query = s.ok(&["query", "c", "--track", "a"], "");
    let run = s.ok(
        &["export", "c", "--track", "a", "--format", "csv", "a.csv"],
        "",
    );
    assert!(
        run.stderr
            .contains("exported 2 rows of c as CSV into a.csv"),
        "{run:?}"
    );
    let written = std::fs::read_to_string(s.dir.path().join("a.csv")).unwrap();
    assert_eq!(written, query.stdout);
    assert!(!s.dir.path().join("a.csv.partial").exists());
    // Standard output, and what it wrote ingests again into a stream of the same declaration.
    let out = s.ok(&["export", "c", "--format", "csv", "-"], "");
    assert_eq!(out.stdout, s.ok(&["query", "c"], "").stdout);
    // A survey's buckets are not rows: --survey takes Parquet or Arrow.
    let refused = s.run(&["export", "c", "--format", "csv", "--survey", "40", "b.csv"]);
    assert_eq!(refused.code, 2, "{refused:?}");
    assert!(
        refused.stderr.contains("--format parquet|arrow"),
        "{refused:?}"
    );
    assert!(!s.dir.path().join("b.csv").exists() && !s.dir.path().join("b.csv.partial").exists());
}
