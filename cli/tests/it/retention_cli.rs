//! Retention from the command line, run for real: `strata retire` ends tracks, `strata
//! retention` sets what `strata compact` and `strata ingest` sweep (DIR/retention.json), reads
//! beneath what they retired exit 4, bad settings and files are refused clearly, and `fsck`
//! shows the retention and the floors.

use std::fmt::Write as _;
use std::path::PathBuf;

use serde_json::Value as Json;

use super::cli::Scratch;

/// Stream `c`: tracks `run,probe`, axis `t`, one measured `v`, ladder 16:4; stream `n`: no
/// axis.
fn store() -> Scratch {
    let s = Scratch::new();
    s.ok(
        &[
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
        ],
        "",
    );
    s.ok(
        &[
            "declare", "n", "--field", "k:str", "--field", "v:i64", "--track", "k",
        ],
        "",
    );
    s
}

/// `n_rows` rows of `c` from axis `first`: runs r0/r1 and probes p0/p1 in turn.
fn rows(first: u64, n_rows: u64) -> String {
    let mut csv = String::from("run,probe,t,v\n");
    for t in first..first + n_rows {
        writeln!(csv, "r{},p{},{t},{}", t % 2, (t / 2) % 2, t % 13).unwrap();
    }
    csv
}

fn retention_path(s: &Scratch) -> PathBuf {
    s.dir.path().join("store").join("retention.json")
}

fn json(text: &str) -> Json {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// The partitions `strata fsck --json` lists for stream `id`.
fn fsck_partitions(s: &Scratch, id: &str) -> Vec<Json> {
    let report = json(&s.ok(&["fsck", "--json"], "").stdout);
    let stream = report["streams"]
        .as_array()
        .unwrap()
        .iter()
        .find(|st| st["id"] == id)
        .unwrap()
        .clone();
    stream["partitions"].as_array().unwrap().clone()
}

#[test]
fn retiring_a_track_makes_its_reads_exit_4_with_the_floor_and_leaves_the_others() {
    let s = store();
    s.ok(&["ingest", "c", "-", "--seal-every", "40"], &rows(0, 200));

    let retired = s.ok(&["retire", "c", "--track", "r0"], "");
    // Two partitions under r0 (p0, p1); positions 1..=200, so the raw floor is 201.
    assert!(
        retired
            .stdout
            .starts_with("retired 2 partitions of c under track r0: "),
        "{}",
        retired.stdout
    );
    assert!(
        retired.stdout.contains("c r0,p0: ") && retired.stdout.contains("raw floor 201@"),
        "{}",
        retired.stdout
    );
    assert!(!retired.stdout.contains("c r1,"), "{}", retired.stdout);

    let query = s.run(&["query", "c", "--track", "r0"]);
    assert_eq!(query.code, 4, "{query:?}");
    assert!(
        query.stderr.contains("under r0 was retired"),
        "{}",
        query.stderr
    );
    let survey = s.run(&[
        "survey", "c", "--track", "r0,p1", "--budget", "64", "--from", "0", "--to", "199",
    ]);
    assert_eq!(survey.code, 4, "{survey:?}");
    let count = s.run(&[
        "fold", "c", "--track", "r0", "--agg", "count", "--from", "0", "--to", "199",
    ]);
    assert_eq!(count.code, 4, "{count:?}");
    // The other run is whole.
    let r1 = s.ok(&["query", "c", "--track", "r1"], "");
    assert_eq!(r1.stdout.lines().count(), 1 + 100, "{}", r1.stdout);
    s.ok(&["fold", "c", "--track", "r1", "--agg", "p50"], "");

    // fsck lists the retired partitions with no live file and their floors.
    let partitions = fsck_partitions(&s, "c");
    let r0p0 = partitions
        .iter()
        .find(|p| p["track"] == serde_json::json!(["r0", "p0"]))
        .unwrap();
    assert_eq!(r0p0["live_files"], 0, "{r0p0:#}");
    assert_eq!(r0p0["raw_floor"], 201, "{r0p0:#}");
    assert!(
        r0p0["level_floors"]["0"].as_u64().unwrap() > 0,
        "levels retired too: {r0p0:#}"
    );
    let human = s.ok(&["fsck"], "").stdout;
    assert!(human.contains("201@"), "{human}");

    // Retiring it again finds nothing live: a failure that names stream and selection.
    let again = s.run(&["retire", "c", "--track", "r0"]);
    assert_eq!(again.code, 1, "{again:?}");
    assert!(
        again
            .stderr
            .contains("nothing of stream \"c\" under r0 is live to retire"),
        "{}",
        again.stderr
    );
    let unknown = s.run(&["retire", "c", "--track", "r9,p0"]);
    assert_eq!(unknown.code, 1, "{unknown:?}");
    assert!(
        unknown
            .stderr
            .contains("no track of stream \"c\" lies under r9,p0"),
        "{}",
        unknown.stderr
    );
}

#[test]
fn retiring_every_track_takes_all_and_json_says_what_was_retired() {
    let s = store();
    s.ok(&["ingest", "c", "-", "--seal-every", "50"], &rows(0, 100));

    let bare = s.run(&["retire", "c"]);
    assert_eq!(bare.code, 2, "a usage error: {bare:?}");
    assert!(bare.stderr.contains("--all"), "{}", bare.stderr);
    let empty = s.run(&["retire", "c", "--track", ""]);
    assert_eq!(empty.code, 1, "{empty:?}");
    assert!(empty.stderr.contains("--all"), "{}", empty.stderr);
    let both = s.run(&["retire", "c", "--track", "r0", "--all"]);
    assert_eq!(both.code, 2, "{both:?}");
    // Nothing was retired by the refusals.
    s.ok(&["query", "c", "--track", "r0"], "");

    let run = s.ok(&["retire", "c", "--all", "--format", "json"], "");
    let report = json(&run.stdout);
    assert_eq!(report["stream"], "c");
    let partitions = report["partitions"].as_array().unwrap();
    assert_eq!(partitions.len(), 4, "{report:#}");
    for part in partitions {
        assert_eq!(part["raw_floor"]["position"], 101, "{part:#}");
        assert!(part["tiers_retired"].as_u64().unwrap() > 0, "{part:#}");
    }
    // Two barrier files, every tier of them retired: both removed.
    assert_eq!(
        report["files_removed"].as_array().unwrap().len(),
        report["files_retired"].as_array().unwrap().len(),
        "{report:#}"
    );
    let query = s.run(&["query", "c"]);
    assert_eq!(query.code, 4, "{query:?}");
    assert!(
        query
            .stderr
            .contains("every track of stream \"c\" was retired"),
        "{}",
        query.stderr
    );
}

#[test]
fn retention_set_then_compact_sweeps_and_reads_beneath_exit_4() {
    let s = store();
    // No retention yet: compact says nothing about it.
    s.ok(&["ingest", "c", "-", "--seal-every", "50"], &rows(0, 40));
    let plain = s.ok(&["compact"], "");
    assert!(!plain.stdout.contains("retention"), "{}", plain.stdout);

    let set = s.ok(&["retention", "c", "--raw", "axis:100"], "");
    assert_eq!(set.stdout, "c: raw axis:100\n");
    let text = std::fs::read_to_string(retention_path(&s)).unwrap();
    assert_eq!(
        json(&text),
        serde_json::json!({"c": {"raw": {"axis_span": 100}, "levels": []}})
    );
    // 1,000 more rows (axis 40..=1039), a barrier file per 50, none compacted yet.
    s.ok(
        &["ingest", "c", "-", "--seal-every", "50", "--no-compact"],
        &rows(40, 1000),
    );
    s.ok(&["query", "c", "--from-position", "1"], "");

    let compact = s.ok(&["compact"], "");
    assert!(
        compact.stdout.contains("retention: c swept: "),
        "{}",
        compact.stdout
    );
    // The newest axis value is 1039: rows wholly below 939 are past. Every partition's raw
    // floor rose; reading from position 1 reaches beneath them.
    let query = s.run(&["query", "c", "--from-position", "1"]);
    assert_eq!(query.code, 4, "{query:?}");
    assert!(query.stderr.contains("floor"), "{}", query.stderr);
    let p50 = s.run(&["fold", "c", "--agg", "p50"]);
    assert_eq!(p50.code, 4, "{p50:?}");
    // Levels live forever: counts over everything still answer, every row counted.
    let count = s.ok(&["fold", "c", "--agg", "count"], "");
    assert!(count.stdout.contains("v: 1040"), "{}", count.stdout);
    for part in fsck_partitions(&s, "c") {
        let floor = part["raw_floor_axis"].as_u64().unwrap();
        assert!((800..=939).contains(&floor), "{part:#}");
    }
    // The floor's own position answers.
    let floor = fsck_partitions(&s, "c")
        .iter()
        .map(|p| p["raw_floor"].as_u64().unwrap())
        .max()
        .unwrap();
    s.ok(&["query", "c", "--from-position", &floor.to_string()], "");

    // A second compact has nothing past its lifetime.
    let again = s.ok(&["compact"], "");
    assert!(
        again
            .stdout
            .contains("retention: nothing past its lifetime"),
        "{}",
        again.stdout
    );
    // An ingest's compaction steps sweep too, and say so.
    let ingest = s.ok(
        &["ingest", "c", "-", "--seal-every", "50"],
        &rows(1040, 400),
    );
    assert!(
        ingest.stdout.contains("retention swept "),
        "{}",
        ingest.stdout
    );
    let risen = fsck_partitions(&s, "c")
        .iter()
        .map(|p| p["raw_floor"].as_u64().unwrap())
        .max()
        .unwrap();
    assert!(risen > floor, "{risen} > {floor}");
}

#[test]
fn level_lifetimes_are_set_shown_and_cleared() {
    let s = store();
    let none = s.ok(&["retention"], "");
    assert_eq!(
        none.stdout,
        "c: forever (keeps everything; no retention.json)\n\
         n: forever (keeps everything; no retention.json)\n"
    );
    s.ok(
        &[
            "retention",
            "c",
            "--raw",
            "axis:100",
            "--levels-from",
            "2=axis:5000",
            "--levels-from",
            "0=axis:200",
        ],
        "",
    );
    s.ok(&["retention", "n", "--raw", "positions:10"], "");
    let all = s.ok(&["retention"], "");
    assert_eq!(
        all.stdout,
        "c: raw axis:100; levels 0+ axis:200, 2+ axis:5000\nn: raw positions:10\n"
    );
    let one = s.ok(&["retention", "c", "--format", "json"], "");
    assert_eq!(
        json(&one.stdout),
        serde_json::json!({"c": {"raw": {"axis_span": 100},
            "levels": [[0, {"axis_span": 200}], [2, {"axis_span": 5000}]]}})
    );
    // A change keeps what it does not name.
    s.ok(&["retention", "c", "--levels-from", "2=forever"], "");
    let c = s.ok(&["retention", "c"], "");
    assert_eq!(
        c.stdout,
        "c: raw axis:100; levels 0+ axis:200, 2+ forever\n"
    );
    // --clear forgets the stream's entry; the file keeps the others.
    s.ok(&["retention", "c", "--clear"], "");
    let all = s.ok(&["retention", "--format", "json"], "");
    assert_eq!(
        json(&all.stdout),
        serde_json::json!({"c": {"raw": "forever", "levels": []},
            "n": {"raw": {"positions": 10}, "levels": []}})
    );
    let text = std::fs::read_to_string(retention_path(&s)).unwrap();
    assert_eq!(
        json(&text),
        serde_json::json!({"n": {"raw": {"positions": 10}, "levels": []}})
    );
    let c = s.ok(&["retention", "c"], "");
    assert_eq!(
        c.stdout,
        "c: forever (keeps everything; not in retention.json)\n"
    );
    // No temp is left beside it.
    assert!(!s.dir.path().join("store/retention.json.tmp").exists());
    // fsck shows each stream's retention.
    let human = s.ok(&["fsck"], "").stdout;
    assert!(
        human.contains("retention: raw positions:10 (retention.json)")
            && human.contains("retention: forever (not in retention.json)"),
        "{human}"
    );
}

#[test]
fn bad_settings_are_refused_clearly_and_leave_the_file_as_it_was() {
    let s = store();
    s.ok(&["retention", "c", "--raw", "axis:100"], "");
    let before = std::fs::read(retention_path(&s)).unwrap();

    // Bad words: usage errors (exit 2) before the store is opened.
    for (spec, says) in [
        ("axis:0", "keeps nothing"),
        ("axis:abc", "not a whole number"),
        ("axis", "one of forever, axis:N, positions:N"),
        ("days:3", "one of forever, axis:N, positions:N"),
    ] {
        let run = s.run(&["retention", "c", "--raw", spec]);
        assert_eq!(run.code, 2, "{spec}: {run:?}");
        assert!(run.stderr.contains(says), "{spec}: {}", run.stderr);
    }
    let run = s.run(&["retention", "c", "--levels-from", "x=forever"]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("not a level number"), "{}", run.stderr);

    // Settings the store refuses: exit 1, the engine's reason, the file unchanged.
    for (args, says) in [
        (
            &["retention", "n", "--raw", "axis:10"][..],
            "the stream declares no axis",
        ),
        (
            &["retention", "zz", "--raw", "positions:5"][..],
            "no stream \"zz\" in the store (declared: c, n)",
        ),
        (
            &["retention", "c", "--levels-from", "0=axis:50"][..],
            "would retire before",
        ),
        (
            &[
                "retention",
                "c",
                "--levels-from",
                "0=axis:500",
                "--levels-from",
                "3=axis:200",
            ][..],
            "would retire before",
        ),
        (
            &["retention", "c", "--levels-from", "1=positions:500"][..],
            "all axis spans or all positions",
        ),
        (
            &["retention", "c", "--levels-from", "200=axis:500"][..],
            "beyond the deepest level",
        ),
        (
            &[
                "retention",
                "c",
                "--levels-from",
                "1=axis:500",
                "--levels-from",
                "1=axis:600",
            ][..],
            "level 1 twice",
        ),
    ] {
        let run = s.run(args);
        assert_eq!(run.code, 1, "{args:?}: {run:?}");
        assert!(run.stderr.contains(says), "{args:?}: {}", run.stderr);
        assert!(
            run.stderr.contains("retention.json is unchanged"),
            "{args:?}: {}",
            run.stderr
        );
        assert_eq!(
            std::fs::read(retention_path(&s)).unwrap(),
            before,
            "{args:?}"
        );
    }
    assert!(!s.dir.path().join("store/retention.json.tmp").exists());
}

#[test]
fn a_malformed_retention_file_is_a_clear_error_never_a_panic() {
    let s = store();
    s.ok(&["ingest", "c", "-", "--seal-every", "50"], &rows(0, 100));
    for (text, says) in [
        ("{not json", "key must be a string"),
        (r#"{"c": {"raw": "never"}}"#, "unknown variant `never`"),
        (
            r#"{"c": {"raw": "forever", "lvls": []}}"#,
            "unknown field `lvls`",
        ),
        (r#"{"c": {"raw": {"axis_span": -5}}}"#, "invalid value"),
        ("[]", "invalid type"),
    ] {
        std::fs::write(retention_path(&s), text).unwrap();
        for args in [
            &["compact"][..],
            &["ingest", "c", "-"][..],
            &["retention"][..],
            &["retention", "c", "--raw", "axis:10"][..],
        ] {
            let run = s.run_with(args, "run,probe,t,v\n");
            assert_eq!(run.code, 1, "{text} {args:?}: {run:?}");
            assert!(
                run.stderr.contains("retention.json is malformed") && run.stderr.contains(says),
                "{text} {args:?}: {}",
                run.stderr
            );
            assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
        }
        // The file is left for a person to fix.
        assert_eq!(std::fs::read_to_string(retention_path(&s)).unwrap(), text);
        // Reads do not need it; fsck says what is wrong and still reports.
        s.ok(&["query", "c", "--to-position", "3"], "");
        let human = s.ok(&["fsck"], "").stdout;
        assert!(
            human.contains("Retention: retention.json is malformed")
                && human.contains("retention: unknown (retention.json is refused, above)"),
            "{human}"
        );
    }
    // A file that parses but that the store refuses (levels out of order) names the file.
    std::fs::write(
        retention_path(&s),
        r#"{"c": {"levels": [[2, {"axis_span": 500}], [1, {"axis_span": 900}]]}}"#,
    )
    .unwrap();
    let run = s.run(&["compact"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.contains("retention.json is refused") && run.stderr.contains("ascend"),
        "{}",
        run.stderr
    );
}

/// A read of a track retired whole is refused (exit 4) saying that the track was retired, how
/// far, and that nothing was sealed above: not with a floor to narrow to, which would answer
/// nothing. A read from above its floors answers what is there: nothing, until the track is
/// published to again.
#[test]
fn a_read_of_a_retired_track_says_it_was_retired_and_offers_no_narrowing() {
    let s = store();
    s.ok(&["ingest", "c", "-", "--seal-every", "40"], &rows(0, 200));
    s.ok(&["retire", "c", "--track", "r0,p0"], "");
    let reads: [&[&str]; 5] = [
        &["query", "c", "--track", "r0,p0"],
        &["survey", "c", "--track", "r0,p0", "--budget", "64"],
        &["fold", "c", "--track", "r0,p0", "--agg", "mean"],
        &["fold", "c", "--track", "r0,p0", "--agg", "p50"],
        &[
            "fold", "c", "--track", "r0,p0", "--agg", "p50", "--from", "100", "--to", "300",
        ],
    ];
    for args in reads {
        let run = s.run(args);
        assert_eq!(run.code, 4, "{args:?}: {run:?}");
        assert!(run.stdout.is_empty(), "{args:?}: {run:?}");
        assert!(
            run.stderr
                .contains("every track of stream \"c\" under r0,p0 was retired"),
            "{args:?}: {}",
            run.stderr
        );
        assert!(!run.stderr.contains("narrow"), "{args:?}: {}", run.stderr);
    }
    // From above its floor, the retired track answers what is there: nothing yet.
    let above = s.ok(
        &["query", "c", "--track", "r0,p0", "--from-position", "201"],
        "",
    );
    assert_eq!(above.stdout, "position,run,probe,t,v\n", "{above:?}");
    // A prefix holding a retired track and a live one: nothing lies at or above the floor the
    // retired one set, so the refusal offers no range from it (which answered nothing, #47) but
    // the live track and the range it holds; followed, that answers every row it holds.
    let run = s.run(&["query", "c", "--track", "r0"]);
    assert_eq!(run.code, 4, "{run:?}");
    let live = s.ok(&["query", "c", "--track", "r0,p1"], "");
    let positions: Vec<u64> = live
        .stdout
        .lines()
        .skip(1)
        .map(|line| line.split(',').next().unwrap().parse().unwrap())
        .collect();
    let (first, last) = (positions[0], positions[positions.len() - 1]);
    assert!(
        run.stderr.contains(&format!(
            "nothing under it lies at or above position 201: read one track alone: r0,p1 \
             (positions {first} to {last})"
        )) && !run.stderr.contains("narrow the range"),
        "{}",
        run.stderr
    );
    let first = first.to_string();
    let last = last.to_string();
    let followed = s.ok(
        &[
            "query",
            "c",
            "--track",
            "r0,p1",
            "--from-position",
            &first,
            "--to-position",
            &last,
        ],
        "",
    );
    assert_eq!(
        followed.stdout, live.stdout,
        "following the refusal answers every row"
    );

    // Every track retired: an unnarrowed read says so too.
    s.ok(&["retire", "c", "--all"], "");
    let run = s.run(&["query", "c"]);
    assert_eq!(run.code, 4, "{run:?}");
    assert!(
        run.stderr
            .contains("every track of stream \"c\" was retired, up to "),
        "{}",
        run.stderr
    );
}

/// A `retention.json` naming a stream the store does not declare is refused whole by every
/// command that reads it, each saying which file, which stream and the fix; the fix
/// (`strata retention STREAM --clear`) works, for two such streams as for one; `strata
/// retention` and fsck report it.
#[test]
fn an_undeclared_stream_in_the_retention_file_is_refused_and_clear_removes_it() {
    let s = store();
    s.ok(&["ingest", "c", "-", "--seal-every", "50"], &rows(0, 100));
    let text = r#"{"c": {"raw": {"positions": 1000}},
                   "nosuch": {"raw": {"axis_span": 5}},
                   "other": {"raw": {"positions": 7}}}"#;
    std::fs::write(retention_path(&s), text).unwrap();
    for args in [
        &["compact"][..],
        &["ingest", "c", "-"][..],
        &["retention"][..],
        &["retention", "c"][..],
        &["retention", "c", "--raw", "axis:10"][..],
    ] {
        let run = s.run_with(args, "run,probe,t,v\n");
        assert_eq!(run.code, 1, "{args:?}: {run:?}");
        assert!(
            run.stderr.contains("retention.json")
                && run
                    .stderr
                    .contains("names stream \"nosuch\", which the store does not declare")
                && run.stderr.contains("`strata retention nosuch --clear`"),
            "{args:?}: {}",
            run.stderr
        );
        assert_eq!(run.stderr.lines().count(), 1, "{args:?}: {}", run.stderr);
    }
    assert_eq!(std::fs::read_to_string(retention_path(&s)).unwrap(), text);
    let human = s.ok(&["fsck"], "").stdout;
    assert!(
        human.contains(
            "Retention: retention.json names stream \"nosuch\", which the store does not declare"
        ),
        "{human}"
    );
    let report = json(&s.ok(&["fsck", "--json"], "").stdout);
    let error = report["retention"]["error"].as_str().unwrap();
    assert!(error.contains("\"nosuch\""), "{report:#}");

    // The fix the messages give works, one stream at a time, and keeps the rest.
    let cleared = s.ok(&["retention", "nosuch", "--clear"], "");
    assert!(cleared.stdout.contains("nosuch"), "{cleared:?}");
    let run = s.run(&["compact"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.contains("`strata retention other --clear`"),
        "{}",
        run.stderr
    );
    s.ok(&["retention", "other", "--clear"], "");
    let file = json(&std::fs::read_to_string(retention_path(&s)).unwrap());
    assert_eq!(
        file,
        serde_json::json!({"c": {"raw": {"positions": 1000}, "levels": []}})
    );
    s.ok(&["compact"], "");
    let shown = s.ok(&["retention"], "");
    assert!(shown.stdout.contains("c: raw positions:1000"), "{shown:?}");

    // A stream neither declared nor in the file is still an unknown stream.
    let run = s.run(&["retention", "nosuch", "--clear"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.contains("no stream \"nosuch\" in the store"),
        "{}",
        run.stderr
    );
}

/// A stream named twice in `retention.json` is refused as malformed (serde_json's map would
/// keep the last silently), naming the stream and where, by every command that reads the file.
#[test]
fn a_stream_named_twice_in_the_retention_file_is_refused() {
    let s = store();
    s.ok(&["ingest", "c", "-", "--seal-every", "50"], &rows(0, 100));
    let text = "{\n  \"c\": {\"raw\": {\"positions\": 1000}},\n  \"c\": {\"raw\": {\"positions\": 5}}\n}\n";
    std::fs::write(retention_path(&s), text).unwrap();
    for args in [
        &["compact"][..],
        &["ingest", "c", "-"][..],
        &["retention"][..],
        &["retention", "c", "--clear"][..],
    ] {
        let run = s.run_with(args, "run,probe,t,v\n");
        assert_eq!(run.code, 1, "{args:?}: {run:?}");
        assert!(
            run.stderr.contains("retention.json is malformed")
                && run.stderr.contains("stream \"c\" is named twice")
                && run.stderr.contains("line 3"),
            "{args:?}: {}",
            run.stderr
        );
    }
    assert_eq!(std::fs::read_to_string(retention_path(&s)).unwrap(), text);
    let human = s.ok(&["fsck"], "").stdout;
    assert!(
        human.contains("Retention: retention.json is malformed: stream \"c\" is named twice"),
        "{human}"
    );
}
