//! `strata trim` driven through the binary.

use std::fmt::Write as _;

/// `strata trim` prints the floors it recorded; a query or percentile reaching beneath them
/// exits 4 with the floor in its message, one above them is answered; survey and level folds
/// still answer; a horizon above the watermark is refused.
#[test]
fn the_cli_trims_and_a_read_beneath_the_floor_exits_4() {
    let s = crate::cli::Scratch::new();
    let declare = [
        "declare", "s", "--field", "site:str", "--field", "t:u64", "--field", "v:f64", "--track",
        "site", "--axis", "t", "--ladder", "10:2",
    ];
    s.ok(&declare, "");
    let mut csv = String::from("site,t,v\n");
    for position in 1..=10u64 {
        let site = if position % 2 == 1 { "north" } else { "south" };
        writeln!(csv, "{site},{},{}", position * 10, position).unwrap();
    }
    s.ok(&["ingest", "s", "-", "--seal-every", "4"], &csv);

    let trim = s.ok(&["trim", "s", "--to-position", "4"], "");
    assert!(
        trim.stdout.contains("s north: position 5, axis 50")
            && trim.stdout.contains("s south: position 5, axis 60"),
        "{}",
        trim.stdout
    );
    let again = s.ok(&["trim", "s", "--to-position", "3"], "");
    assert!(again.stdout.contains("nothing to trim"), "{}", again.stdout);

    let query = s.run(&["query", "s"]);
    assert_eq!(query.code, 4, "{query:?}");
    assert!(query.stderr.contains("position 5"), "{}", query.stderr);
    let above = s.ok(&["query", "s", "--from-position", "5"], "");
    assert_eq!(above.stdout.lines().count(), 1 + 6, "{}", above.stdout);

    let p50 = s.run(&["fold", "s", "--agg", "p50"]);
    assert_eq!(p50.code, 4, "{p50:?}");
    assert!(p50.stderr.contains("axis value 60"), "{}", p50.stderr);
    s.ok(&["fold", "s", "--agg", "p50", "--from", "60"], "");
    let mean = s.ok(&["fold", "s", "--agg", "count"], "");
    assert!(mean.stdout.contains("v: 10"), "{}", mean.stdout);
    s.ok(&["survey", "s", "--budget", "40"], "");

    let beyond = s.run(&["trim", "s", "--to-position", "11"]);
    assert_eq!(beyond.code, 1, "{beyond:?}");
    assert!(
        beyond.stderr.contains("to 11") && beyond.stderr.contains("watermark 10"),
        "{}",
        beyond.stderr
    );
}

/// After a trim to `u64::MAX` no position lies above the floor, so the refusal cannot advise
/// narrowing to it (a range cannot start past `u64::MAX`): it says nothing is left to read.
#[test]
fn a_trim_to_the_last_position_leaves_nothing_and_the_refusal_says_so() {
    let s = crate::cli::Scratch::new();
    let declare = [
        "declare", "s", "--field", "site:str", "--field", "t:u64", "--field", "v:f64", "--track",
        "site", "--axis", "t",
    ];
    s.ok(&declare, "");
    let max = u64::MAX.to_string();
    s.ok(
        &["ingest", "s", "-"],
        &format!("position,site,t,v\n7,north,10,1.5\n{max},north,20,2.5\n"),
    );
    s.ok(&["trim", "s", "--to-position", &max], "");
    for from in ["0", "7", max.as_str()] {
        let query = s.run(&["query", "s", "--from-position", from]);
        assert_eq!(query.code, 4, "--from {from}: {query:?}");
        assert!(query.stdout.is_empty(), "{query:?}");
        assert!(
            query.stderr.contains(
                "every track of stream \"s\" was retired (by retention, `retire` or `trim`), \
                 up to the last position there is: nothing of it is left to read, whatever the \
                 range"
            ),
            "--from {from}: {}",
            query.stderr
        );
        assert!(!query.stderr.contains("narrow"), "{}", query.stderr);
    }
}
