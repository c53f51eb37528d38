//! #28's reproducers, run as written (over a `file://` bucket): a stale copy of a store, a
//! repaired store and a junk epoch marker meet a named refusal and leave the bucket's history
//! as it was; `strata adopt` says what it would delete and, told to, puts the store's history in
//! the bucket's place, deleting nothing a replica may still need.

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use super::cli::{DECLARE_CAPTURE, Run, strata_in};

/// `gen.py N RUNS PROBES START`: `run,probe,t,value` rows, `t = 10·i` for `i` in
/// `START..START+N`, for every run and probe.
fn gen_rows(n: u64, runs: u64, probes: u64, start: u64) -> String {
    let mut csv = String::from("run,probe,t,value\n");
    for i in start..start + n {
        for r in 0..runs {
            for p in 0..probes {
                let v = ((i * 7 + r * 3 + p) % 100) as f64 / 4.0;
                writeln!(csv, "r{r},p{p},{},{v}", 10 * i).unwrap();
            }
        }
    }
    csv
}

struct Scene {
    dir: tempfile::TempDir,
    url: String,
}

impl Scene {
    fn new() -> Scene {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("x/bucket")).unwrap();
        let url = format!("file://{}/x/bucket", dir.path().display());
        Scene { dir, url }
    }

    fn run(&self, args: &[&str], stdin: &str) -> Run {
        strata_in(self.dir.path(), args, stdin)
    }

    fn ok(&self, args: &[&str], stdin: &str) -> Run {
        let run = self.run(args, stdin);
        assert_eq!(run.code, 0, "strata {args:?}: {run:?}");
        run
    }

    /// `strata --store STORE --remote URL ingest capture - EXTRA...` of `csv`, insisting on
    /// exit 0.
    fn ingest(&self, store: &str, csv: &str, extra: &[&str]) -> Run {
        let mut args = vec![
            "--store", store, "--remote", &self.url, "ingest", "capture", "-",
        ];
        args.extend_from_slice(extra);
        self.ok(&args, csv)
    }

    fn declare(&self, store: &str) {
        self.ok(&[&["--store", store][..], &DECLARE_CAPTURE].concat(), "");
    }

    /// `strata --remote URL query capture --from P --to P`: the replica's row at position P.
    fn replica_row(&self, position: u64) -> String {
        let p = position.to_string();
        self.ok(
            &[
                "--remote",
                &self.url,
                "query",
                "capture",
                "--from-position",
                &p,
                "--to-position",
                &p,
            ],
            "",
        )
        .stdout
    }

    fn replica_rows(&self) -> usize {
        let out = self
            .ok(&["--remote", &self.url, "query", "capture"], "")
            .stdout;
        out.lines().count() - 1
    }

    fn keys(&self, folder: &str) -> Vec<String> {
        let mut keys: Vec<String> =
            std::fs::read_dir(self.dir.path().join("x/bucket").join(folder))
                .map(|entries| {
                    entries
                        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                        .collect()
                })
                .unwrap_or_default();
        keys.sort();
        keys
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Reproducer 1: a stale copy, compacted until its manifest generation passes the bucket's,
/// published to the bucket: it was taken for a reset, replicas answered another history, and
/// the real writer's objects were deleted once the grace passed. Now it is refused naming
/// log/S and why, the replicas answer the real history, and the real writer goes on.
#[test]
fn a_stale_copy_of_a_store_is_refused_and_the_real_writer_goes_on() {
    let s = Scene::new();
    let url = s.url.clone();
    s.declare("fa");
    s.ingest("fa", &gen_rows(500, 2, 2, 0), &[]);
    copy_dir(&s.dir.path().join("fa"), &s.dir.path().join("fa.old"));
    s.ingest("fa", &gen_rows(1000, 2, 2, 500), &[]);
    let real = s.replica_row(2001);
    assert!(real.contains(",5000,"), "t = 5000: {real}");
    for start in ["9000", "11000"] {
        s.ok(
            &[
                "--store",
                "fa.old",
                "ingest",
                "capture",
                "-",
                "--seal-every",
                "100",
                "--no-compact",
            ],
            &gen_rows(2000, 2, 2, start.parse().unwrap()),
        );
        s.ok(&["--store", "fa.old", "compact"], "");
    }
    let logs = s.keys("log");
    let segments = s.keys("seg");
    let epochs = s.keys("epoch");
    let refused = s.run(&["--store", "fa.old", "--remote", &url, "seal"], "");
    assert_eq!(refused.code, 1, "{refused:?}");
    for words in [
        "store and bucket diverged",
        "log/1",
        "not a state of this store's history",
        "adopt",
    ] {
        assert!(
            refused.stderr.contains(words),
            "{words:?}: {}",
            refused.stderr
        );
    }
    assert!(
        !refused.stderr.contains("publishing again resumes"),
        "{}",
        refused.stderr
    );
    assert_eq!(
        (s.keys("log"), s.keys("seg"), s.keys("epoch")),
        (logs, segments, epochs),
        "the refused copy put and deleted nothing, and took no epoch"
    );
    assert_eq!(
        s.replica_row(2001),
        real,
        "replicas answer the real history"
    );
    // The real writer goes on, and the bucket follows it.
    s.ingest("fa", &gen_rows(10, 2, 2, 1500), &[]);
    assert_eq!(s.replica_rows(), 4 * 1510);
}

/// Reproducer 2: a published store, a byte flipped in the middle of its manifest, repaired,
/// then published: the bucket was rewound to the repaired prefix and its intact copy deleted
/// after the grace. Now it is refused, the bucket keeps every row, and `adopt` without
/// `--discard-bucket-history` only says what it would delete; with it, the repaired history
/// replaces the bucket's and nothing is deleted before the grace.
#[test]
fn a_repaired_store_cannot_rewind_the_bucket_unless_an_operator_adopts() {
    let s = Scene::new();
    let url = s.url.clone();
    s.declare("s");
    for b in 0..20 {
        s.ingest("s", &gen_rows(500, 2, 2, b * 500), &["--no-compact"]);
    }
    assert_eq!(s.replica_rows(), 40_000);
    let manifest = s.dir.path().join("s/manifest-000001");
    let mut bytes = std::fs::read(&manifest).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x40;
    std::fs::write(&manifest, bytes).unwrap();
    let repaired = Command::new(env!("CARGO_BIN_EXE_engine-fsck"))
        .args(["repair", "s", "--yes"])
        .current_dir(s.dir.path())
        .output()
        .unwrap();
    assert!(repaired.status.success(), "{repaired:?}");
    let logs = s.keys("log");
    let segments = s.keys("seg");
    let refused = s.run(&["--store", "s", "--remote", &url, "seal"], "");
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(
        refused.stderr.contains("log/19") && refused.stderr.contains("left generation 1"),
        "{}",
        refused.stderr
    );
    assert_eq!(s.replica_rows(), 40_000, "the bucket keeps every row");
    let dry = s.run(&["--store", "s", "--remote", &url, "adopt"], "");
    assert_eq!(dry.code, 1, "{dry:?}");
    assert!(
        dry.stdout
            .contains("would replace the history of log/0..=19")
            && dry.stdout.contains("20 log/ objects"),
        "{}",
        dry.stdout
    );
    assert!(
        dry.stderr.contains("without --discard-bucket-history"),
        "{}",
        dry.stderr
    );
    assert_eq!(
        (s.keys("log"), s.keys("seg")),
        (logs.clone(), segments.clone())
    );
    let adopted = s.ok(
        &[
            "--store",
            "s",
            "--remote",
            &url,
            "adopt",
            "--discard-bucket-history",
        ],
        "",
    );
    assert!(adopted.stdout.contains("adopted"), "{}", adopted.stdout);
    let kept = s.replica_rows();
    assert!(
        kept < 40_000,
        "the replica follows the repaired history ({kept} rows)"
    );
    // Nothing of the old history is deleted before the grace: every object is still there.
    let now_logs = s.keys("log");
    let now_segments = s.keys("seg");
    assert!(logs.iter().all(|k| now_logs.contains(k)), "{now_logs:?}");
    assert!(
        segments.iter().all(|k| now_segments.contains(k)),
        "{now_segments:?}"
    );
    // And the store publishes on as the bucket's writer.
    let said = s.ingest("s", &gen_rows(10, 2, 2, 100_000), &[]);
    assert!(said.stderr.contains("published"), "{}", said.stderr);
    assert_eq!(s.replica_rows(), kept + 40);
}

/// Reproducer 4: `touch epoch/18446744073709551615`, then any --remote command, was "fenced
/// (this writer is epoch 0)", then "16 epochs were taken by other writers", for good. Now the
/// junk marker is refused naming it, and once it is removed the writer publishes.
#[test]
fn a_junk_epoch_marker_is_refused_naming_it() {
    let s = Scene::new();
    let url = s.url.clone();
    s.declare("s");
    s.ingest("s", &gen_rows(10, 1, 1, 0), &[]);
    let junk = s.dir.path().join("x/bucket/epoch/18446744073709551615");
    std::fs::write(&junk, b"").unwrap();
    for _ in 0..2 {
        let refused = s.run(&["--store", "s", "--remote", &url, "seal"], "");
        assert_eq!(refused.code, 1, "{refused:?}");
        assert!(
            refused.stderr.contains("epoch/18446744073709551615")
                && refused.stderr.contains("junk")
                && !refused.stderr.contains("fenced")
                && !refused.stderr.contains("adopt"),
            "{}",
            refused.stderr
        );
    }
    std::fs::remove_file(junk).unwrap();
    let said = s.ingest("s", &gen_rows(10, 1, 1, 10), &[]);
    assert!(said.stderr.contains("published"), "{}", said.stderr);
    assert_eq!(s.replica_rows(), 20);
}

/// Rough edge: a damaged middle `log/` object made every publish fail with "publishing again
/// resumes", which it never does. Now the refusal names the object and points at `adopt`,
/// which works over the damage and leaves the damaged object for the grace.
#[test]
fn a_damaged_log_object_is_named_and_adopt_gets_past_it() {
    let s = Scene::new();
    let url = s.url.clone();
    s.declare("s");
    for b in 0..3 {
        s.ingest("s", &gen_rows(10, 1, 1, b * 10), &["--no-compact"]);
    }
    let logs = s.keys("log");
    assert!(logs.len() >= 3, "{logs:?}");
    let middle = s.dir.path().join("x/bucket/log").join(&logs[1]);
    let mut bytes = std::fs::read(&middle).unwrap();
    bytes[40] ^= 0x01;
    std::fs::write(&middle, bytes).unwrap();
    let refused = s.run(&["--store", "s", "--remote", &url, "seal"], "");
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(
        refused.stderr.contains(&format!("log/{}", logs[1]))
            && refused.stderr.contains("adopt")
            && !refused.stderr.contains("publishing again resumes"),
        "{}",
        refused.stderr
    );
    s.ok(
        &[
            "--store",
            "s",
            "--remote",
            &url,
            "adopt",
            "--discard-bucket-history",
        ],
        "",
    );
    assert_eq!(s.replica_rows(), 30);
    assert!(s.keys("log").contains(&logs[1]), "kept for the grace");
}
