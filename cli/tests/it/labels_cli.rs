//! Labels that hold the selection's separator (issue #28, item 6): a comma within a label is
//! named `\,` in every `--track` (a backslash `\\`), and every message that lists tracks spells
//! each one as it is typed back after `--track` in a shell.

use std::path::Path;
use std::process::Command;

use super::cli::{DECLARE_CAPTURE, Run, Scratch};

/// Stream `capture` (tracks `run,probe`, axis `t`, measured `value`) holding two tracks whose
/// labels joined by commas read alike: `"r0,p1"/x` and `r0/p1`, one row each; and stream `one`
/// (one track field) holding the track `a,b`.
fn store_with_commas() -> Scratch {
    let s = Scratch::new();
    s.ok(&DECLARE_CAPTURE, "");
    s.ok(
        &["ingest", "capture", "-"],
        "run,probe,t,value\n\"r0,p1\",x,10,1.5\nr0,p1,10,2.5\n",
    );
    s.ok(
        &[
            "declare", "one", "--field", "k:str", "--field", "v:f64", "--track", "k",
        ],
        "",
    );
    s.ok(&["ingest", "one", "-"], "k,v\n\"a,b\",1.5\nc,2.5\n");
    s
}

/// The rows `query` printed, without the header.
fn rows(run: &Run) -> Vec<&str> {
    run.stdout.lines().skip(1).collect()
}

#[test]
fn a_label_holding_a_comma_is_selected_by_escaping_it_in_every_command() {
    let s = store_with_commas();

    let plain = s.ok(&["query", "capture", "--track", "r0,p1"], "");
    assert_eq!(rows(&plain), ["2,r0,p1,10,2.5"], "{plain:?}");
    for track in [r"r0\,p1", r"r0\,p1,x"] {
        let run = s.ok(&["query", "capture", "--track", track], "");
        assert_eq!(rows(&run), ["1,\"r0,p1\",x,10,1.5"], "{track}: {run:?}");
        let run = s.ok(&["fold", "capture", "--track", track, "--agg", "sum"], "");
        assert_eq!(run.stdout, "value: 1.5\n", "{track}: {run:?}");
        let run = s.ok(
            &[
                "survey", "capture", "--track", track, "--budget", "8", "--format", "json",
            ],
            "",
        );
        let survey: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
        let buckets = survey["fields"][0]["buckets"].as_array().unwrap();
        assert_eq!(buckets.len(), 1, "{track}: {run:?}");
        assert_eq!(buckets[0]["count"], 1, "{track}: {run:?}");
        assert_eq!(buckets[0]["max"]["value"], 1.5, "{track}: {run:?}");
    }

    // A one-field track labelled `a,b` is retired by its escaped name, and nothing else is.
    let run = s.ok(&["retire", "one", "--track", r"a\,b"], "");
    assert!(
        run.stdout
            .starts_with(r"retired 1 partition of one under track 'a\,b': "),
        "{run:?}"
    );
    assert!(run.stdout.contains(r"  one 'a\,b': "), "{run:?}");
    let left = s.ok(&["query", "one", "--track", "c"], "");
    assert_eq!(rows(&left), ["2,c,2.5"], "{left:?}");
    let gone = s.run(&["query", "one", "--track", r"a\,b"]);
    assert_eq!(gone.code, 4, "{gone:?}");
}

#[test]
fn a_backslash_that_escapes_nothing_is_a_usage_error_naming_it() {
    let s = store_with_commas();
    for (args, says) in [
        (
            &["query", "capture", "--track", r"r0\p1"][..],
            r"`\p` at byte 2",
        ),
        (
            &["fold", "capture", "--track", r"r0\", "--agg", "max"][..],
            "ends the text",
        ),
        (
            &["survey", "capture", "--track", r"a\b", "--budget", "8"][..],
            r"`\b` at byte 1",
        ),
        (&["retire", "one", "--track", r"a\b"][..], r"`\b` at byte 1"),
    ] {
        let run = s.run(args);
        assert_eq!(run.code, 2, "{args:?}: {run:?}");
        assert!(
            run.stderr.contains("--track") && run.stderr.contains(says),
            "{args:?}: {run:?}"
        );
    }
    // Nothing was retired by the refused command.
    assert_eq!(rows(&s.ok(&["query", "one"], "")).len(), 2);
}

#[test]
fn too_many_labels_say_how_a_comma_within_a_label_is_written() {
    let s = store_with_commas();
    let run = s.run(&["retire", "one", "--track", "a,b"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.contains(r"the selection a,b names 2 labels")
            && run.stderr.contains(r"--track 'a\,b'"),
        "{run:?}"
    );
    assert_eq!(
        rows(&s.ok(&["query", "one"], "")).len(),
        2,
        "nothing retired"
    );
}

/// A stream without track fields has no label to escape a comma in: its refusal of any
/// `--track` says only that it has none (it used to add the comma hint, which cannot help).
#[test]
fn a_track_on_a_stream_without_track_fields_gets_no_comma_hint() {
    let s = store_with_commas();
    s.ok(&["declare", "flat", "--field", "v:f64"], "");
    s.ok(&["ingest", "flat", "-"], "v\n1.5\n");
    for track in ["a", "a,b"] {
        let run = s.run(&["query", "flat", "--track", track]);
        assert_eq!(run.code, 1, "{run:?}");
        assert!(
            run.stderr.contains("has 0 track fields (none)") && !run.stderr.contains("comma"),
            "{run:?}"
        );
    }
}

/// Runs `strata --store store ARGS TRACK_WORD` through `sh`, the word pasted as a message
/// spelt it: what a person does with a listed track.
fn typed_back(dir: &Path, args: &str, word: &str) -> Run {
    let strata = env!("CARGO_BIN_EXE_strata");
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!("'{strata}' --store store {args} --track {word}"))
        .current_dir(dir)
        .output()
        .unwrap();
    Run {
        code: out.status.code().unwrap(),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

#[test]
fn a_listed_track_types_back_as_its_track() {
    let s = store_with_commas();
    let run = s.run(&["query", "capture", "--track", "nosuch"]);
    assert_eq!(run.code, 1, "{run:?}");
    let listed = run
        .stderr
        .split("(its tracks: ")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .unwrap_or_else(|| panic!("no track list: {run:?}"));
    assert_eq!(listed, r"r0,p1, 'r0\,p1,x'", "{run:?}");
    // Each word, pasted after --track, selects exactly the track it names.
    let words: Vec<&str> = listed.split(", ").collect();
    let r0p1 = typed_back(s.dir.path(), "query capture", words[0]);
    assert_eq!(rows(&r0p1), ["2,r0,p1,10,2.5"], "{r0p1:?}");
    let comma = typed_back(s.dir.path(), "query capture", words[1]);
    assert_eq!(rows(&comma), ["1,\"r0,p1\",x,10,1.5"], "{comma:?}");

    // The partitions a trim lists are spelt the same way.
    let trim = s.ok(&["trim", "capture", "--to-position", "1"], "");
    assert!(
        trim.stdout
            .contains(r"capture 'r0\,p1,x': position 2, axis 11"),
        "{trim:?}"
    );
    // And fsck's table.
    let fsck = s.ok(&["fsck"], "");
    assert!(
        fsck.stdout
            .lines()
            .any(|l| l.trim_start().starts_with(r"'r0\,p1,x' ")),
        "{fsck:?}"
    );
}
