//! `position` as a field name (issue #28, item 9). Every face that prints rows gives each row's
//! position under the name `position` (CSV's first column, a JSON key; the Arrow export and the
//! Python face will too), so a new declaration may not name a field so: `declare` refuses it.
//! A store declared before the name was reserved still opens and reads: its rows print with
//! their fields only (the `position` column is the field), which `ingest` reads back alike.

use std::path::Path;

use strata::index::{FieldDecl, FieldKind};
use strata::{Config, DEFAULT_LADDER, Store, StreamDecl, Value};

use super::cli::Scratch;

#[test]
fn declare_refuses_a_field_named_position_and_creates_nothing() {
    let s = Scratch::new();
    for args in [
        &[
            "declare",
            "p",
            "--field",
            "position:u64",
            "--field",
            "v:f64",
        ][..],
        &[
            "declare",
            "p",
            "--field",
            "t:u64",
            "--field",
            "position:str",
            "--track",
            "position",
            "--axis",
            "t",
        ][..],
    ] {
        let run = s.run(args);
        assert_eq!(run.code, 1, "{args:?}: {run:?}");
        assert!(
            run.stderr.contains("field \"position\"") && run.stderr.contains("reserved"),
            "{args:?}: {}",
            run.stderr
        );
        assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
        assert!(!s.dir.path().join("store").exists(), "{args:?}");
    }
}

/// A store whose stream `p` declares `position:u64` and `v:f64`, made as an older build made
/// it (the declaration recorded as it is, not through the builder that now refuses it), with
/// rows at positions 1 and 2 whose `position` fields are 70 and 90.
fn store_declaring_position(dir: &Path) {
    let decl = StreamDecl {
        id: "p".to_owned(),
        fields: vec![
            FieldDecl {
                name: "position".to_owned(),
                kind: FieldKind::U64,
            },
            FieldDecl {
                name: "v".to_owned(),
                kind: FieldKind::F64,
            },
        ],
        track: Vec::new(),
        axis: None,
        ladder: DEFAULT_LADDER,
        time: None,
    };
    let mut store = Store::create(dir, Config::default(), &[decl]).unwrap();
    store
        .publish("p", 1, &[vec![Value::U64(70), Value::F64(1.5)]])
        .unwrap();
    store
        .publish("p", 2, &[vec![Value::U64(90), Value::F64(2.5)]])
        .unwrap();
    store.seal().unwrap();
}

#[test]
fn a_stream_declaring_position_reads_back_unambiguously_in_csv_and_json() {
    let s = Scratch::new();
    store_declaring_position(&s.dir.path().join("store"));

    let csv = s.ok(&["query", "p"], "");
    assert_eq!(csv.stdout, "position,v\n70,1.5\n90,2.5\n", "{csv:?}");
    assert!(
        csv.stderr.contains("declares a field named \"position\""),
        "{}",
        csv.stderr
    );
    // Positions still bound the rows read.
    let second = s.ok(&["query", "p", "--from-position", "2"], "");
    assert_eq!(second.stdout, "position,v\n90,2.5\n", "{second:?}");

    let json = s.ok(&["query", "p", "--format", "json"], "");
    assert_eq!(
        json.stdout, "[\n{\"position\":70,\"v\":1.5},\n{\"position\":90,\"v\":2.5}\n]\n",
        "{json:?}"
    );

    // What it prints ingests again: the column is the field, positions come after the
    // watermark, and ingest says so.
    let again = s.ok(&["ingest", "p", "-"], &csv.stdout);
    assert!(
        again.stderr.contains("declares a field named \"position\""),
        "{again:?}"
    );
    let all = s.ok(&["query", "p", "--from-position", "3"], "");
    assert_eq!(all.stdout, "position,v\n70,1.5\n90,2.5\n", "{all:?}");
    let seal = s.ok(&["seal"], "");
    assert_eq!(seal.stdout, "p: watermark 4\n");
}
