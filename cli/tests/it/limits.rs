//! Names have a documented maximum length, refused where they are accepted, through the real
//! binary: a 65,536-character label once made `strata fsck` panic, and a 20 MB label was accepted
//! into a 20 MB manifest.

use strata::index::LABEL_BYTES_MAX;

use crate::cli::Scratch;

#[test]
fn a_65536_character_label_is_refused_at_ingest_and_the_store_stays_usable() {
    let s = Scratch::new();
    s.ok(
        &[
            "declare", "m", "--field", "run:str", "--field", "t:u64", "--field", "v:f64",
            "--track", "run", "--axis", "t",
        ],
        "",
    );
    let label = "r".repeat(65_536);
    let csv = format!("run,t,v\nok,1,1.0\n{label},2,2.0\n");
    let run = s.run_with(&["ingest", "m", "-"], &csv);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("65536 bytes long"), "{}", run.stderr);
    assert!(
        run.stderr.contains(&format!("at most {LABEL_BYTES_MAX}")),
        "{}",
        run.stderr
    );
    assert!(run.stderr.len() < 2_000, "the message echoes the label");
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    // Nothing of the refused batch was kept, the store answers, and fsck reports it whole.
    let query = s.ok(&["query", "m"], "");
    assert!(!query.stdout.contains("rrrr"), "{}", query.stdout);
    let fsck = s.run(&["fsck"]);
    assert_eq!(fsck.code, 0, "{fsck:?}");
    let at_limit = "r".repeat(LABEL_BYTES_MAX);
    s.ok(
        &["ingest", "m", "-"],
        &format!("run,t,v\n{at_limit},3,3.0\n"),
    );
    let fsck = s.run(&["fsck"]);
    assert_eq!(fsck.code, 0, "{fsck:?}");
    assert!(fsck.stdout.contains(&at_limit), "{}", fsck.stdout);
}

#[test]
fn an_over_long_stream_id_or_field_name_is_refused_at_declare() {
    let s = Scratch::new();
    let long = "s".repeat(LABEL_BYTES_MAX + 1);
    let field = format!("{long}:f64");
    for args in [
        vec!["declare", long.as_str(), "--field", "v:f64"],
        vec!["declare", "m", "--field", field.as_str()],
    ] {
        let run = s.run(&args);
        assert_ne!(run.code, 0, "{run:?}");
        assert!(run.stderr.contains("bytes long"), "{}", run.stderr);
        assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    }
}
