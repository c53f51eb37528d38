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
        &["trim", "nosuch", "--to-position", "1"],
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
            run.stderr
                .contains("no track of stream \"c\" lies under nosuch (its tracks: r1, r2)"),
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

/// Runs `declare d` with `args` after it and returns its one line of refusal.
fn declare_refused(s: &Scratch, args: &[&str]) -> String {
    let mut all = vec!["declare", "d"];
    all.extend_from_slice(args);
    let run = s.run(&all);
    assert_eq!(run.code, 1, "{args:?}: {run:?}");
    assert!(run.stdout.is_empty(), "{args:?}: {run:?}");
    assert_eq!(run.stderr.lines().count(), 1, "{args:?}: {run:?}");
    run.stderr
}

#[test]
fn declaration_refusals_name_the_field_and_count_from_one() {
    let s = Scratch::new();
    let fields = ["--field", "run:str", "--field", "t:u64", "--field", "v:f64"];
    let with = |more: &[&'static str]| -> Vec<&'static str> {
        fields.iter().chain(more).copied().collect()
    };
    let cases: [(Vec<&str>, &str); 5] = [
        (
            with(&["--track", "v"]),
            "stream \"d\": track field \"v\" is an f64; a track field is a u64, an i64 or a str",
        ),
        (
            with(&["--axis", "v"]),
            "stream \"d\": axis field \"v\" is an f64; the axis is a u64",
        ),
        (
            with(&["--track", "run,run"]),
            "stream \"d\": the track names field \"run\" twice",
        ),
        (
            with(&["--track", "t", "--axis", "t"]),
            "stream \"d\": field \"t\" is both the axis and a track field",
        ),
        (
            vec![
                "--field",
                "a:str",
                "--field",
                "b:str",
                "--field",
                "c:str",
                "--field",
                "d:str",
                "--field",
                "e:str",
                "--track",
                "a,b,c,d,e",
            ],
            "stream \"d\": the track names 5 fields; a track has at most 4",
        ),
    ];
    for (args, expected) in cases {
        let stderr = declare_refused(&s, &args);
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
        assert!(!stderr.contains("component"), "{args:?}: {stderr}");
        assert!(!stderr.contains("field 0"), "{args:?}: {stderr}");
    }
    // A name holding a control character: the field and the character are counted from 1.
    let stderr = declare_refused(&s, &["--field", "t:u64", "--field", "a\tb:u64"]);
    assert!(
        stderr.contains(
            "field 2 (counting from 1) has no legal name: \
             label \"a\\tb\" holds control character U+0009 at character 2"
        ),
        "{stderr}"
    );
    // A refused declaration is refused before the store is opened: nothing was created.
    assert!(!s.dir.path().join("store").exists());
}

#[test]
fn a_control_character_in_a_track_label_is_counted_from_one() {
    let s = store_c();
    let run = s.run_with(&["ingest", "c"], "run,t,v\nr\u{1},1,1.5\n");
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.contains(
            "line 2: track field \"run\": label \"r\\u{1}\" holds control character U+0001 \
             at character 2"
        ),
        "{run:?}"
    );
}

#[test]
fn a_selection_deeper_than_the_track_counts_labels_in_the_singular() {
    let s = store_c();
    s.ok(&["ingest", "c"], "run,t,v\nr1,1,1.5\n");
    let run = s.run(&["query", "c", "--track", "r1,x"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.contains(
            "the selection r1,x names 2 labels but stream \"c\" has 1 track field (run); a comma \
             within a label is written `\\,`: --track 'r1\\,x' names the one label \"r1,x\""
        ),
        "{run:?}"
    );
    assert!(!run.stderr.contains("1 track fields"), "{run:?}");
}

#[test]
fn an_empty_label_in_a_selection_names_its_track_field() {
    let s = Scratch::new();
    s.ok(
        &[
            "declare", "e", "--field", "site:str", "--field", "run:str", "--field", "v:f64",
            "--track", "site,run",
        ],
        "",
    );
    s.ok(&["ingest", "e"], "site,run,v\nnorth,r1,1.5\n");
    let run = s.run(&["query", "e", "--track", ",r1"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr
            .contains("the selection's label for track field \"site\": label is empty"),
        "{run:?}"
    );
    assert!(!run.stderr.contains("component 0"), "{run:?}");
}

#[test]
fn fsck_counts_one_manifest_frame_in_the_singular() {
    // The declaration is the store's one frame.
    let s = store_c();
    let run = s.ok(&["fsck"], "");
    let manifest = run
        .stdout
        .lines()
        .find(|line| line.starts_with("manifest "))
        .unwrap_or_else(|| panic!("no manifest line: {run:?}"));
    assert!(manifest.ends_with(" trusted, 1 frame"), "{run:?}");
}
