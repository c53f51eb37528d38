//! The command line's messages in a user's words (#14): each names what the user typed or gave,
//! counts as a user does, and agrees in number.

use crate::cli::Scratch;

/// A store with stream `c`: track `run`, axis `t`, one measured `v`.
fn store_c() -> Scratch {
    let s = Scratch::new();
    s.ok(
        &[
            "declare", "c", "--field", "run:str", "--field", "t:u64", "--field", "v:f64",
            "--track", "run", "--axis", "t",
        ],
        "",
    );
    s
}

#[test]
fn ingesting_a_folder_names_it_as_a_folder_without_a_line() {
    let s = store_c();
    std::fs::create_dir(s.dir.path().join("SOME_FOLDER")).unwrap();
    let run = s.run(&["ingest", "c", "SOME_FOLDER"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("SOME_FOLDER"), "{run:?}");
    assert!(run.stderr.contains("is a folder, not a file"), "{run:?}");
    assert!(!run.stderr.contains("line 1"), "{run:?}");
}

#[test]
fn ingesting_an_empty_file_says_it_has_no_header_line() {
    let s = store_c();
    let empty = s.write("empty.csv", "");
    let run = s.run(&["ingest", "c", &empty]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("empty.csv"), "{run:?}");
    assert!(run.stderr.contains("is empty (no header line)"), "{run:?}");
    assert!(!run.stderr.contains("no column for field"), "{run:?}");
    let run = s.run_with(&["ingest", "c"], "");
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr
            .contains("standard input is empty (no header line)"),
        "{run:?}"
    );
}

#[test]
fn a_repeated_field_is_named_and_counted_from_one() {
    let s = Scratch::new();
    let run = s.run(&["declare", "d", "--field", "x:u64", "--field", "x:f64"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.contains("fields 1 and 2 are both named \"x\""),
        "{run:?}"
    );
    assert!(!run.stderr.contains("field 0"), "{run:?}");
}

#[test]
fn every_command_taking_a_stream_names_the_declared_streams() {
    let s = store_c();
    let commands: [&[&str]; 7] = [
        &["ingest", "nosuch"],
        &["query", "nosuch"],
        &["survey", "nosuch", "--budget", "8"],
        &["fold", "nosuch", "--agg", "max"],
        &["trim", "nosuch", "--to", "1"],
        &["retire", "nosuch", "--all"],
        &["retention", "nosuch", "--clear"],
    ];
    for args in commands {
        let run = s.run_with(args, "run,t,v\n");
        assert_eq!(run.code, 1, "{args:?}: {run:?}");
        assert!(
            run.stderr
                .contains("no stream \"nosuch\" in the store (declared: c)"),
            "{args:?}: {run:?}"
        );
    }
}

#[test]
fn a_track_holding_nothing_is_refused_naming_the_tracks_there_are() {
    let s = store_c();
    s.ok(&["ingest", "c"], "run,t,v\nr1,1,1.5\nr2,2,2.5\n");
    let commands: [&[&str]; 3] = [
        &["query", "c", "--track", "nosuch"],
        &["survey", "c", "--track", "nosuch", "--budget", "8"],
        &["fold", "c", "--track", "nosuch", "--agg", "max"],
    ];
    for args in commands {
        let run = s.run(args);
        assert_eq!(run.code, 1, "{args:?}: {run:?}");
        assert!(run.stdout.is_empty(), "{args:?}: {run:?}");
        assert!(
            run.stderr.contains(
                "no partition of stream \"c\" matches --track nosuch (its tracks: r1, r2)"
            ),
            "{args:?}: {run:?}"
        );
    }
    // A track that does hold rows still reads.
    let run = s.ok(&["query", "c", "--track", "r1"], "");
    assert_eq!(run.stdout.lines().count(), 2, "{run:?}");
}

#[test]
fn one_row_is_singular_and_kinds_take_their_article() {
    let s = store_c();
    let run = s.ok(&["ingest", "c"], "run,t,v\nr1,1,1.5\n");
    assert!(run.stdout.contains("ingested 1 row into c"), "{run:?}");
    assert!(!run.stdout.contains("ingested 1 rows"), "{run:?}");
    let run = s.run_with(&["ingest", "c"], "run,t,v\nr1,x,1.5\n");
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("is not a u64"), "{run:?}");
    let run = s.run_with(&["ingest", "c"], "run,t,v\nr1,3,x\n");
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("is not an f64"), "{run:?}");
}
