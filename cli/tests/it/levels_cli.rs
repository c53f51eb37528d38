//! The level ladder driven through the `strata` binary.

/// `strata declare S --field t:u64 --field v:i64 --axis t --ladder 1:FANOUT`, rows `0,1` and
/// `5,2`, then `fold S --agg count --from 1 --to 18446744073709551614`: the fold covers the
/// level-0 cells 1 ..= 2^64 - 2 (base 1), which hold one row (t = 5). The fold used to list every
/// one of those cells: "capacity overflow" at fanout 2^64 - 1, ten seconds and 1.5 GB at 2^24,
/// an abort allocating 64 GiB at 2^32.
#[test]
fn fold_with_a_huge_ladder_fanout_answers_from_stored_cells_quickly() {
    for fanout in ["18446744073709551615", "16777216", "4294967296"] {
        let s = crate::cli::Scratch::new();
        let ladder = format!("1:{fanout}");
        let declare = [
            "declare", "S", "--field", "t:u64", "--field", "v:i64", "--axis", "t", "--ladder",
            &ladder,
        ];
        s.ok(&declare, "");
        s.ok(&["ingest", "S"], "t,v\n0,1\n5,2\n");
        let started = std::time::Instant::now();
        let range = ["--from", "1", "--to", "18446744073709551614"];
        let fold = |agg: &str| {
            let mut args = vec!["fold", "S", "--agg", agg];
            args.extend_from_slice(&range);
            s.ok(&args, "").stdout
        };
        assert_eq!(fold("count"), "v: 1\n", "fanout {fanout}");
        assert_eq!(fold("sum"), "v: 2.0\n", "fanout {fanout}");
        assert_eq!(fold("min"), "v: 2\n", "fanout {fanout}");
        assert_eq!(fold("p50"), "v: 2\n", "fanout {fanout}");
        let everything = s.ok(&["fold", "S", "--agg", "count"], "").stdout;
        assert_eq!(everything, "v: 2\n", "fanout {fanout}");
        let elapsed = started.elapsed();
        assert!(
            elapsed < std::time::Duration::from_secs(10),
            "fanout {fanout}: five folds took {elapsed:?}"
        );
    }
}
