//! The read commands (`query`, `survey`, `fold`) open the store read-only: on a read-only bind
//! mount they answer exactly what they answer on the store itself and change nothing; on a
//! folder that holds no store they fail naming it and create nothing.

use std::fmt::Write as _;
use std::path::Path;

use super::cli::{Scratch, strata_in};
use crate::read_only_mount::{ReadOnlyMount, tree};

/// A store with stream `s` (site, t, v, n), several barriers, a compaction and a trim, so that
/// reads cross merged files and a raw floor.
fn store() -> Scratch {
    let s = Scratch::new();
    let declare = [
        "declare", "s", "--field", "site:str", "--field", "t:u64", "--field", "v:f64", "--field",
        "n:i64", "--track", "site", "--axis", "t", "--ladder", "10:2",
    ];
    s.ok(&declare, "");
    let mut csv = String::from("site,t,v,n\n");
    for i in 0..400u64 {
        for site in ["north", "south"] {
            let v = f64::from(u32::try_from((i * 37 + 11) % 101).unwrap()) / 4.0;
            writeln!(csv, "{site},{},{v},{}", i * 3, i % 17).unwrap();
        }
    }
    s.ok(&["ingest", "s", "-", "--seal-every", "100"], &csv);
    s.ok(&["compact"], "");
    s.ok(&["trim", "s", "--to-position", "2"], "");
    s
}

const READS: [&[&str]; 8] = [
    &["query", "s", "--from-position", "3"],
    &[
        "query",
        "s",
        "--track",
        "north",
        "--from-position",
        "5",
        "--to-position",
        "7",
    ],
    &["query", "s", "--from-position", "0"],
    &["survey", "s", "--budget", "64"],
    &[
        "survey", "s", "--budget", "400", "--format", "json", "--from", "90",
    ],
    &["fold", "s", "--agg", "mean"],
    &[
        "fold", "s", "--agg", "p50", "--track", "south", "--from", "600",
    ],
    &["fold", "s", "--agg", "max", "--format", "json"],
];

/// `strata --store STORE ARGS` in the scratch folder: exit code and standard output.
fn read(s: &Scratch, store: &str, args: &[&str]) -> (i32, String) {
    let mut all = vec!["--store", store];
    all.extend_from_slice(args);
    let run = strata_in(s.dir.path(), &all, "");
    (run.code, run.stdout)
}

/// Copies the folder `from` to `to`, files and folders alike.
pub(crate) fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// On a read-only bind mount of a store, every read command answers exactly what it answers
/// on the store itself (exit code and output), a writing command fails, and the store is left
/// byte-identical, no `LOCK` created or changed. Skipped, saying why, where this process
/// cannot mount (the engine's own read-only test then still runs on a simulated mount).
#[test]
fn the_read_commands_answer_exactly_on_a_read_only_mount_and_change_nothing() {
    let s = store();
    let want: Vec<(i32, String)> = READS.iter().map(|args| read(&s, "store", args)).collect();
    let answered = want
        .iter()
        .filter(|(code, out)| *code == 0 && !out.is_empty())
        .count();
    assert!(answered >= 6, "{want:?}");
    let source = s.dir.path().join("store");
    let before = tree(&source);

    // Everywhere, mount or not: a copy without LOCK (a backup) answers alike and is left
    // byte-identical, no LOCK created. A read that wrote would show here even where the
    // read-only mount below cannot be made.
    let copy = s.dir.path().join("copy");
    copy_tree(&source, &copy);
    std::fs::remove_file(copy.join("LOCK")).unwrap();
    let copied = tree(&copy);
    for (args, want) in READS.iter().zip(&want) {
        assert_eq!(&read(&s, "copy", args), want, "{args:?}");
    }
    assert_eq!(
        tree(&copy),
        copied,
        "the copy is byte-identical, no LOCK created"
    );

    let at = s.dir.path().join("ro");
    std::fs::create_dir(&at).unwrap();
    let mount = match ReadOnlyMount::new(&source, &at) {
        Ok(mount) => mount,
        Err(why) => {
            eprintln!(
                "read_only_cli: the read-only bind mount part did not run: {why}; the copy \
                 without LOCK above did"
            );
            return;
        }
    };
    for (args, want) in READS.iter().zip(&want) {
        assert_eq!(&read(&s, "ro", args), want, "{args:?}");
    }
    let sealed = strata_in(s.dir.path(), &["--store", "ro", "seal"], "");
    assert_ne!(
        sealed.code, 0,
        "a writing command on a read-only mount: {sealed:?}"
    );
    assert!(
        sealed
            .stderr
            .contains("read-only file system, where query, survey, fold and fsck"),
        "a writing command on a read-only mount says what still works: {sealed:?}"
    );
    drop(mount);
    assert_eq!(tree(&source), before, "byte-identical");
}

/// A read command on a folder that does not exist fails, naming it, and creates nothing.
#[test]
fn a_read_command_on_a_missing_folder_fails_naming_it_and_creates_nothing() {
    let s = Scratch::new();
    for args in [
        &["query", "s"][..],
        &["survey", "s", "--budget", "64"],
        &["fold", "s", "--agg", "sum"],
    ] {
        let mut all = vec!["--store", "mistyped/store"];
        all.extend_from_slice(args);
        let run = strata_in(s.dir.path(), &all, "");
        assert_eq!(run.code, 1, "{args:?}: {run:?}");
        assert!(run.stderr.contains("mistyped/store"), "{args:?}: {run:?}");
        assert!(
            !s.dir.path().join("mistyped").exists(),
            "{args:?} created it"
        );
    }
}

/// A store whose empty `tmp/` and `quarantine/` a backup tool dropped is not damaged: a read
/// answers exactly and warns of nothing (the boot's "missing folder" findings are routine).
#[test]
fn a_read_warns_of_nothing_when_only_empty_folders_are_missing() {
    let s = store();
    let want = read(&s, "store", READS[0]);
    for folder in ["tmp", "quarantine"] {
        std::fs::remove_dir(s.dir.path().join("store").join(folder)).unwrap();
    }
    let run = s.ok(READS[0], "");
    assert_eq!((run.code, run.stdout), want);
    assert_eq!(
        run.stderr, "",
        "a routine finding was told, or a read with nothing to tell said something"
    );
}

/// A segment file gone from under the manifest (damage, not a crash: a writable open cannot
/// heal it either) is told by every read, which the read-only open used to keep quiet.
#[test]
fn a_read_tells_of_a_recorded_file_that_is_missing() {
    let s = store();
    let seg = s.dir.path().join("store").join("seg");
    let mut files: Vec<_> = std::fs::read_dir(&seg)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    files.sort();
    std::fs::remove_file(&files[0]).unwrap();
    let run = s.run(&["fold", "s", "--agg", "count"]);
    let name = files[0].file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        run.stderr.contains("warning")
            && run.stderr.contains(&name)
            && run.stderr.contains("this read-only open changed nothing"),
        "{run:?}"
    );
}
