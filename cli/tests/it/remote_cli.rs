//! `--remote URL` (docs/remote.md, "The command line"), over a `file://` bucket: writers publish
//! what they made durable when they are done; query, survey and fold read the bucket as a
//! replica and answer exactly as the local store does; a bad URL or a mix of --store and
//! --remote on a read is refused with a message naming it.

use std::fmt::Write as _;

use super::cli::{Scratch, strata_in};

const DECLARE: [&str; 13] = [
    "declare", "s", "--field", "site:str", "--field", "t:u64", "--field", "v:f64", "--track",
    "site", "--axis", "t", "--ladder",
];

fn csv(from: u64, to: u64) -> String {
    let mut csv = String::from("site,t,v\n");
    for i in from..to {
        for site in ["north", "south"] {
            let v = f64::from(u32::try_from((i * 37 + 11) % 101).unwrap()) / 4.0;
            writeln!(csv, "{site},{},{v}", i * 3).unwrap();
        }
    }
    csv
}

/// A scratch folder and the `file://` URL of a bucket folder inside it.
fn scratch() -> (Scratch, String) {
    let s = Scratch::new();
    let url = format!("file://{}/bucket", s.dir.path().display());
    (s, url)
}

/// `strata --store store --remote URL ARGS`, insisting on exit 0.
fn write(s: &Scratch, url: &str, args: &[&str], stdin: &str) -> String {
    let mut all = vec!["--remote", url];
    all.extend_from_slice(args);
    let run = s.ok(&all, stdin);
    run.stderr
}

/// `strata --remote URL ARGS` (no --store).
fn read_remote(s: &Scratch, url: &str, args: &[&str]) -> super::cli::Run {
    let mut all = vec!["--remote", url];
    all.extend_from_slice(args);
    strata_in(s.dir.path(), &all, "")
}

const READS: [&[&str]; 6] = [
    &["query", "s"],
    &["query", "s", "--track", "north", "--from-position", "2"],
    &["survey", "s", "--budget", "64"],
    &[
        "survey", "s", "--budget", "400", "--format", "json", "--from", "90",
    ],
    &["fold", "s", "--agg", "mean"],
    &["fold", "s", "--agg", "p50", "--track", "south"],
];

/// Every read answers from the bucket exactly as from the local store: the same exit code
/// (a floor's refusal too) and the same output. Returns the reads that answered.
fn same_reads(s: &Scratch, url: &str) -> usize {
    let mut answered = 0;
    for args in READS {
        let local = s.run(args);
        let remote = read_remote(s, url, args);
        assert_eq!(remote.code, local.code, "{args:?}: {remote:?} / {local:?}");
        assert_eq!(
            remote.stdout, local.stdout,
            "{args:?}: the bucket answers otherwise"
        );
        if local.code == 0 {
            assert!(!local.stdout.is_empty(), "{args:?} printed nothing");
            answered += 1;
        }
    }
    answered
}

#[test]
fn writers_publish_and_reads_from_the_bucket_answer_as_the_store() {
    let (s, url) = scratch();
    let mut declare = DECLARE.to_vec();
    declare.push("10:2");
    let said = write(&s, &url, &declare, "");
    assert!(said.contains("strata: published to file://"), "{said}");
    let said = write(
        &s,
        &url,
        &["ingest", "s", "-", "--seal-every", "50"],
        &csv(0, 200),
    );
    assert!(
        said.contains("segment"),
        "the ingest uploaded its segments: {said}"
    );
    // It published as it sealed: one log/ object per barrier (400 rows, a seal every 50), the
    // declaration's, and the end's (its manifest rewrite).
    let logs = std::fs::read_dir(s.dir.path().join("bucket/log"))
        .unwrap()
        .count();
    assert!(logs >= 9, "{logs} log/ objects after 8 barriers");
    assert_eq!(same_reads(&s, &url), READS.len());
    // More rows, a compaction, a trim: each publishes, and the bucket follows.
    write(
        &s,
        &url,
        &["ingest", "s", "-", "--seal-every", "40"],
        &csv(200, 300),
    );
    write(&s, &url, &["compact"], "");
    write(&s, &url, &["trim", "s", "--to-position", "1"], "");
    let answered = same_reads(&s, &url);
    assert!(
        (1..READS.len()).contains(&answered),
        "the trim's floor refuses some reads, alike from the bucket ({answered})"
    );
    // Nothing new: the publish says so and puts nothing.
    let said = write(&s, &url, &["seal"], "");
    assert!(said.contains("already up to date"), "{said}");
}

#[test]
fn a_read_names_one_store_not_two() {
    let (s, url) = scratch();
    let mut declare = DECLARE.to_vec();
    declare.push("10:2");
    write(&s, &url, &declare, "");
    let both = s.run(&["--remote", &url, "query", "s"]);
    assert_eq!(both.code, 2, "{both:?}");
    assert!(both.stderr.contains("not both"), "{}", both.stderr);
    let neither = strata_in(s.dir.path(), &["fold", "s", "--agg", "max"], "");
    assert_eq!(neither.code, 2, "{neither:?}");
    assert!(
        neither.stderr.contains("--remote URL"),
        "{}",
        neither.stderr
    );
    let fsck = s.run(&["--remote", &url, "fsck"]);
    assert_eq!(fsck.code, 2, "{fsck:?}");
}

#[test]
fn bad_urls_are_refused_naming_them() {
    let (s, _) = scratch();
    let mut declare = DECLARE.to_vec();
    declare.push("10:2");
    s.ok(&declare, "");
    for url in [
        "ftp://example.org/x",
        "file://relative/path",
        "s3://",
        "",
        "bucket",
    ] {
        let read = read_remote(&s, url, &["query", "s"]);
        assert_eq!(read.code, 1, "{url:?}: {read:?}");
        assert!(
            read.stderr.contains("cannot read"),
            "{url:?}: {}",
            read.stderr
        );
        assert!(read.stdout.is_empty());
        let written = s.run(&["--remote", url, "seal"]);
        assert_eq!(written.code, 1, "{url:?}: {written:?}");
        assert!(
            written.stderr.contains("cannot publish") && written.stderr.contains(url),
            "{url:?}: {}",
            written.stderr
        );
        assert_eq!(
            written.stderr.lines().count(),
            1,
            "one line: {}",
            written.stderr
        );
    }
    // The store is untouched by the refusals, and still reads.
    s.ok(&["query", "s"], "");
}

#[test]
fn an_empty_bucket_is_refused_and_another_stores_bucket_too() {
    let (s, url) = scratch();
    std::fs::create_dir_all(s.dir.path().join("bucket")).unwrap();
    let empty = read_remote(&s, &url, &["query", "s"]);
    assert_eq!(empty.code, 1, "{empty:?}");
    assert!(
        empty.stderr.contains("nothing was ever published"),
        "{}",
        empty.stderr
    );
    let mut declare = DECLARE.to_vec();
    declare.push("10:2");
    write(&s, &url, &declare, "");
    // A second store may not publish to the first one's bucket.
    let other = Scratch::new();
    other.ok(&declare, "");
    let refused = other.run(&["--remote", &url, "seal"]);
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(refused.stderr.contains("holds store"), "{}", refused.stderr);
}

#[test]
fn a_failed_command_publishes_nothing() {
    let (s, url) = scratch();
    let mut declare = DECLARE.to_vec();
    declare.push("10:2");
    write(&s, &url, &declare, "");
    let bad = s.run_with(
        &["--remote", &url, "ingest", "s", "-"],
        "site,t,v\nnorth,x,1\n",
    );
    assert_eq!(bad.code, 1, "{bad:?}");
    assert!(!bad.stderr.contains("published"), "{}", bad.stderr);
    let logs = std::fs::read_dir(s.dir.path().join("bucket/log"))
        .unwrap()
        .count();
    assert_eq!(logs, 1, "only the declaration's record is in the bucket");
}

/// `strata ARGS` in `s`'s folder, its stdout on `/dev/full`: every write to it fails (ENOSPC).
fn to_a_full_stdout(s: &Scratch, args: &[&str]) -> super::cli::Run {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(args)
        .current_dir(s.dir.path())
        .stdin(std::process::Stdio::null())
        .stdout(full)
        .output()
        .unwrap();
    super::cli::Run {
        code: out.status.code().unwrap(),
        stdout: String::new(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

/// A command whose work is durable (`trim`, `retire`) and whose summary cannot be written
/// (stdout on a full device) says so and exits 5, not 1 as if the work had failed; with
/// --remote it still publishes what it made durable, and a replica reads it.
#[test]
fn a_summary_lost_to_a_full_stdout_fails_no_durable_work_and_still_publishes() {
    let (s, url) = scratch();
    let mut declare = DECLARE.to_vec();
    declare.push("10:2");
    write(&s, &url, &declare, "");
    write(&s, &url, &["ingest", "s", "-"], &csv(0, 50));

    let trim = to_a_full_stdout(
        &s,
        &[
            "--store",
            "store",
            "--remote",
            &url,
            "trim",
            "s",
            "--to-position",
            "10",
        ],
    );
    assert_eq!(trim.code, 5, "{trim:?}");
    assert!(
        trim.stderr.contains("cannot write to stdout")
            && trim.stderr.contains("only its summary was lost"),
        "{}",
        trim.stderr
    );
    assert!(
        trim.stderr.contains("strata: published to file://"),
        "{}",
        trim.stderr
    );
    // The trim is in the store and in the bucket: reads beneath it are refused by both.
    for run in [
        s.run(&["query", "s"]),
        read_remote(&s, &url, &["query", "s"]),
    ] {
        assert_eq!(run.code, 4, "{run:?}");
        assert!(run.stderr.contains("position 11"), "{}", run.stderr);
    }

    let retire = to_a_full_stdout(&s, &["--store", "store", "retire", "s", "--track", "north"]);
    assert_eq!(retire.code, 5, "{retire:?}");
    assert!(
        retire.stderr.contains("only its summary was lost"),
        "{}",
        retire.stderr
    );
    let gone = s.run(&["query", "s", "--track", "north", "--from-position", "11"]);
    assert_eq!(gone.code, 4, "the retirement is durable: {gone:?}");
    assert!(gone.stderr.contains("was retired"), "{}", gone.stderr);
}

/// `strata ARGS` in `s`'s folder, with the `AWS_*` environment that reaches moto on `port`
/// (and no other AWS setting of the machine's).
fn strata_s3(s: &Scratch, port: u16, args: &[&str], stdin: &str) -> super::cli::Run {
    use std::io::Write as _;
    use std::process::{Command, Stdio};
    let mut command = Command::new(env!("CARGO_BIN_EXE_strata"));
    for (key, _) in std::env::vars() {
        if key.starts_with("AWS_") {
            command.env_remove(key);
        }
    }
    let mut child = command
        .args(args)
        .current_dir(s.dir.path())
        .env("AWS_ENDPOINT", format!("http://127.0.0.1:{port}"))
        .env("AWS_ALLOW_HTTP", "true")
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ACCESS_KEY_ID", "strata-test")
        .env("AWS_SECRET_ACCESS_KEY", "strata-test")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    super::cli::Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

/// The same over S3 (moto on loopback): the writer publishes as it ingests and compacts, and a
/// reader with only the URL answers every read exactly as the local store.
#[test]
fn an_s3_bucket_is_published_to_and_read_from() {
    let server = crate::server::shared();
    let _ = server.store("strata-cli");
    let port = server.port();
    let url = "s3://strata-cli/lab";
    let s = Scratch::new();
    let mut declare = vec!["--store", "store", "--remote", url];
    declare.extend_from_slice(&DECLARE);
    declare.push("10:2");
    let run = strata_s3(&s, port, &declare, "");
    assert_eq!(run.code, 0, "{run:?}");
    for args in [
        &["ingest", "s", "-", "--seal-every", "60"][..],
        &["compact"],
    ] {
        let mut all = vec!["--store", "store", "--remote", url];
        all.extend_from_slice(args);
        let run = strata_s3(&s, port, &all, &csv(0, 150));
        assert_eq!(run.code, 0, "{args:?}: {run:?}");
        assert!(
            run.stderr
                .contains("strata: published to s3://strata-cli/lab"),
            "{run:?}"
        );
    }
    for args in READS {
        let local = s.ok(args, "");
        let mut all = vec!["--remote", url];
        all.extend_from_slice(args);
        let remote = strata_s3(&s, port, &all, "");
        assert_eq!(remote.code, 0, "{args:?}: {remote:?}");
        assert_eq!(
            remote.stdout, local.stdout,
            "{args:?}: S3 answers otherwise"
        );
    }
    // Another prefix of the same bucket holds nothing.
    let empty = strata_s3(
        &s,
        port,
        &["--remote", "s3://strata-cli/other", "query", "s"],
        "",
    );
    assert_eq!(empty.code, 1, "{empty:?}");
    assert!(
        empty.stderr.contains("nothing was ever published"),
        "{}",
        empty.stderr
    );
}

/// The names and lengths of the objects under the bucket folder's `dir`.
fn listed(s: &Scratch, dir: &str) -> Vec<(String, u64)> {
    let mut all: Vec<(String, u64)> = std::fs::read_dir(s.dir.path().join("bucket").join(dir))
        .unwrap()
        .map(|entry| {
            let entry = entry.unwrap();
            let name = entry.file_name().to_string_lossy().into_owned();
            (name, entry.metadata().unwrap().len())
        })
        .collect();
    all.sort();
    all
}

/// #47, item 5, as reported: a live segment deleted from a `file://` bucket made every replica
/// read fail "… is missing" while later publishes said "already up to date", until `adopt
/// --discard-bucket-history`. The next writing command (a new process, which attaches after the
/// deletion) puts it back, with nothing new and with an ingest, and a replica then reads every
/// row as the store does. When the store holds no whole copy of it either, the command is
/// refused in one line naming it, and puts nothing.
#[test]
fn a_segment_deleted_from_the_bucket_is_put_back_by_the_next_writing_command() {
    let (s, url) = scratch();
    let mut declare = DECLARE.to_vec();
    declare.push("10:2");
    write(&s, &url, &declare, "");
    write(
        &s,
        &url,
        &["ingest", "s", "-", "--no-compact"],
        &csv(0, 100),
    );
    let object = s.dir.path().join("bucket/seg/000000000001.seg");
    let local = s.dir.path().join("store/seg/000000000001.seg");
    let kept = std::fs::read(&object).unwrap();
    assert_eq!(kept, std::fs::read(&local).unwrap());
    assert_eq!(same_reads(&s, &url), READS.len());

    let started = std::time::Instant::now();
    std::fs::remove_file(&object).unwrap();
    let failed = read_remote(&s, &url, &["query", "s"]);
    assert_ne!(failed.code, 0, "{failed:?}");
    assert!(
        failed.stderr.contains("seg/000000000001.seg") && failed.stderr.contains("missing"),
        "{}",
        failed.stderr
    );
    let said = write(&s, &url, &["seal"], "");
    assert!(
        said.contains("put back 1 segment the bucket had lost (seg/000000000001.seg)")
            && said.contains("the log was already up to date"),
        "{said}"
    );
    assert_eq!(std::fs::read(&object).unwrap(), kept, "the same bytes");
    assert_eq!(same_reads(&s, &url), READS.len());
    let took = started.elapsed();
    assert!(took < std::time::Duration::from_secs(5), "{took:?}");

    // Deleted again, then more rows: put back beside the new segment, before the log/ object.
    std::fs::remove_file(&object).unwrap();
    let said = write(
        &s,
        &url,
        &["ingest", "s", "-", "--no-compact"],
        &csv(100, 150),
    );
    assert!(
        said.contains("2 segments")
            && said.contains("and log/")
            && said.contains("of them, put back 1 segment the bucket had lost"),
        "{said}"
    );
    assert_eq!(std::fs::read(&object).unwrap(), kept);
    assert_eq!(same_reads(&s, &url), READS.len());

    // Gone from the bucket, and the local copy damaged: nothing to put back.
    std::fs::remove_file(&object).unwrap();
    let mut damaged = kept.clone();
    let middle = damaged.len() / 2;
    damaged[middle] ^= 0x5a;
    std::fs::write(&local, &damaged).unwrap();
    let (segs, logs) = (listed(&s, "seg"), listed(&s, "log"));
    let refused = s.run(&["--remote", &url, "seal"]);
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(
        refused
            .stderr
            .contains("object seg/000000000001.seg is lost")
            && refused.stderr.contains("engine-fsck"),
        "{}",
        refused.stderr
    );
    assert_eq!(refused.stderr.lines().count(), 1, "{}", refused.stderr);
    assert_eq!((listed(&s, "seg"), listed(&s, "log")), (segs, logs));
    // The local copy made whole again, the next command puts it back.
    std::fs::write(&local, &kept).unwrap();
    let said = write(&s, &url, &["seal"], "");
    assert!(said.contains("put back 1 segment"), "{said}");
    assert_eq!(same_reads(&s, &url), READS.len());
}

/// A `log/` object deleted below the head cannot be put back: the writer's next command is
/// refused naming it, and, since publishing again meets the same refusal, points at `adopt`
/// (it once said "publishing again resumes"), which gets past it.
#[test]
fn a_deleted_log_object_below_the_head_is_named_and_points_at_adopt() {
    let (s, url) = scratch();
    let mut declare = DECLARE.to_vec();
    declare.push("10:2");
    write(&s, &url, &declare, "");
    for (from, to) in [(0, 20), (20, 40), (40, 60)] {
        write(
            &s,
            &url,
            &["ingest", "s", "-", "--no-compact"],
            &csv(from, to),
        );
    }
    let middle = s.dir.path().join("bucket/log/00000000000000000001");
    std::fs::remove_file(&middle).unwrap();
    let refused = s.run(&["--remote", &url, "seal"]);
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(
        refused
            .stderr
            .contains("object log/00000000000000000001 is missing")
            && refused.stderr.contains("adopt")
            && !refused.stderr.contains("publishing again resumes"),
        "{}",
        refused.stderr
    );
    s.ok(&["--remote", &url, "adopt", "--discard-bucket-history"], "");
    assert_eq!(same_reads(&s, &url), READS.len());
}
