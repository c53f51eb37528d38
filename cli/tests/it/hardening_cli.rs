//! #47's reproducers, run as a hostile stranger ran them on the binaries: each ends in a named
//! refusal or a right answer within a deadline, never a hang, and never a lock a writer needs.

use std::io::Read as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::cli::{Run, Scratch};

/// How long a reproducer may take before it counts as a hang.
const DEADLINE: Duration = Duration::from_secs(5);

/// `strata --store store ARGS` in `cwd`, killed (and the test failed) if it has not exited
/// within `DEADLINE`.
fn within_deadline(cwd: &Path, args: &[&str], stdin: &str) -> Run {
    let mut child = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["--store", "store"])
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write as _;
        let _ = child.stdin.take().unwrap().write_all(stdin.as_bytes());
    }
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            panic!("strata {args:?} was still running after {DEADLINE:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let (mut stdout, mut stderr) = (String::new(), String::new());
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    Run {
        code: status.code().expect("exited, not killed"),
        stdout,
        stderr,
    }
}

/// A store with stream `s` (`t` on the axis, a measured `v`) and one row sealed.
fn one_row() -> Scratch {
    let s = Scratch::new();
    s.ok(
        &[
            "declare", "s", "--field", "t:u64", "--field", "v:f64", "--axis", "t",
        ],
        "",
    );
    s.ok(&["ingest", "s", "-"], "t,v\n1,1.5\n");
    s
}

fn mkfifo(path: &Path) {
    let made = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(made.success(), "mkfifo {}", path.display());
}

/// What every command that opens the store does, reading or writing.
const COMMANDS: [(&[&str], &str); 6] = [
    (&["query", "s"], ""),
    (&["fold", "s", "--agg", "count"], ""),
    (&["survey", "s", "--budget", "64"], ""),
    (&["compact"], ""),
    (&["trim", "s", "--to-position", "0"], ""),
    (&["ingest", "s", "-"], "t,v\n2,2.5\n"),
];

/// #47 item 1: a named pipe (or a socket) of a pin's name in `readers/` is no reader's pin: every
/// command answers at once, as if it were not there. It used to hang each of them in open(2).
#[test]
fn a_named_pipe_or_socket_in_readers_hangs_nothing() {
    let s = one_row();
    let readers = s.dir.path().join("store/readers");
    std::fs::create_dir_all(&readers).unwrap();
    mkfifo(&readers.join("1.0.0"));
    let _socket = std::os::unix::net::UnixListener::bind(readers.join("2.0.0")).unwrap();
    for (args, stdin) in COMMANDS {
        let run = within_deadline(s.dir.path(), args, stdin);
        assert_eq!(run.code, 0, "{args:?}: {run:?}");
    }
    let run = within_deadline(s.dir.path(), &["query", "s"], "");
    assert_eq!(run.stdout, "position,t,v\n1,1,1.5\n2,2,2.5\n", "{run:?}");
    assert!(
        readers.join("1.0.0").exists(),
        "a stranger's file is left alone"
    );
}

/// #47 items 1 and 9: a plain file where `readers/` should be is named as what it is by every
/// command, not "File exists" or "Not a directory".
#[test]
fn a_file_in_place_of_readers_is_named_by_every_command() {
    let s = one_row();
    std::fs::write(s.dir.path().join("store/readers"), b"").unwrap();
    for (args, stdin) in COMMANDS {
        let run = within_deadline(s.dir.path(), args, stdin);
        if run.code == 0 {
            // A command that never needs `readers/` (a writer with nothing to remove) is fine.
            continue;
        }
        assert!(
            run.stderr
                .contains("readers is a regular file, not a directory"),
            "{args:?}: {run:?}"
        );
        assert!(!run.stderr.contains("os error"), "{args:?}: {run:?}");
    }
}

/// #47 item 10: a read with nothing to tell writes nothing on stderr, as sqlite3 and duckdb do;
/// with `--verbose` it names the watermark and manifest position it answered at.
#[test]
fn a_read_says_nothing_on_stderr_unless_asked() {
    let s = one_row();
    let reads: [&[&str]; 4] = [
        &["query", "s"],
        &["survey", "s", "--budget", "64"],
        &["fold", "s", "--agg", "mean"],
        &["export", "s", "--format", "arrow", "out.arrow"],
    ];
    for args in reads {
        let quiet = within_deadline(s.dir.path(), args, "");
        // An export into a file says what it wrote, as a copy does; only that.
        let said = if args[0] == "export" {
            "strata: exported 1 row of s as an Arrow IPC stream into out.arrow\n"
        } else {
            ""
        };
        assert_eq!((quiet.code, quiet.stderr.as_str()), (0, said), "{args:?}");
        let mut verbose = vec!["--verbose"];
        verbose.extend_from_slice(args);
        let told = within_deadline(s.dir.path(), &verbose, "");
        assert_eq!(told.code, 0, "{args:?}: {told:?}");
        assert!(
            told.stderr
                .contains("strata: answered at stream \"s\"'s watermark 1 (manifest 1 byte "),
            "{args:?}: {told:?}"
        );
        assert_eq!(told.stdout, quiet.stdout, "{args:?}");
    }
}

/// #47 item 3: a view that cannot open as a reader (here: `readers` is a plain file) refuses to
/// start, naming why, rather than holding the store's lock read-only and locking every writer
/// out without a word.
#[test]
fn a_view_that_cannot_be_a_reader_refuses_and_never_locks_a_writer_out() {
    let s = one_row();
    std::fs::write(s.dir.path().join("store/readers"), b"").unwrap();
    let run = within_deadline(s.dir.path(), &["view", "--addr", "127.0.0.1:0"], "");
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.contains("cannot view")
            && run
                .stderr
                .contains("readers is a regular file, not a directory"),
        "{run:?}"
    );
    std::fs::remove_file(s.dir.path().join("store/readers")).unwrap();
    let ingest = within_deadline(s.dir.path(), &["ingest", "s", "-"], "t,v\n2,2.5\n");
    assert_eq!(ingest.code, 0, "{ingest:?}");
}

/// #47 item 3: with as many readers open as the store allows, the view refuses to start, naming
/// the bound, and a writer beside them goes on.
#[test]
fn a_view_past_the_reader_bound_refuses_naming_it() {
    let s = one_row();
    let dir = s.dir.path().join("store");
    let max = strata::Config::default().reader_processes_max;
    let readers: Vec<strata::Reader> = (0..max)
        .map(|_| strata::Store::open_reader(&dir, strata::Config::default()).unwrap())
        .collect();
    let started = Instant::now();
    let mut view = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["--store", "store", "view", "--addr", "127.0.0.1:0"])
        .current_dir(s.dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A view that fell back to a read-only open would be serving (holding the lock) by now.
    let status = loop {
        if let Some(status) = view.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > DEADLINE {
            let ingest = within_deadline(s.dir.path(), &["ingest", "s", "-"], "t,v\n2,2.5\n");
            let _ = view.kill();
            panic!("the view is serving past the reader bound; an ingest beside it: {ingest:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    view.stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("cannot view") && stderr.contains(&format!("{max} readers open")),
        "{stderr}"
    );
    let ingest = within_deadline(s.dir.path(), &["ingest", "s", "-"], "t,v\n2,2.5\n");
    assert_eq!(ingest.code, 0, "{ingest:?}");
    drop(readers);
}

/// #47 item 9: Parquet on standard input without `--format` is known by its magic bytes and
/// refused, naming what to give instead (it was parsed as CSV: "invalid utf-8"); an Arrow IPC
/// stream there is known the same way and ingested; CSV still is CSV.
#[test]
fn standard_input_is_told_by_its_first_bytes() {
    let s = one_row();
    s.ok(&["export", "s", "--format", "parquet", "rows.parquet"], "");
    s.ok(&["export", "s", "--format", "arrow", "rows.arrow"], "");
    let piped = |file: &str| {
        let input = std::fs::File::open(s.dir.path().join(file)).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_strata"))
            .args(["--store", "store", "ingest", "s", "-"])
            .current_dir(s.dir.path())
            .stdin(input)
            .output()
            .unwrap();
        (out.status.code(), String::from_utf8(out.stderr).unwrap())
    };
    let (code, stderr) = piped("rows.parquet");
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("standard input holds Parquet (it begins `PAR1`)")
            && stderr.contains("give the file's path"),
        "{stderr}"
    );
    // Nothing of it was kept: the store answers its one row.
    let run = within_deadline(s.dir.path(), &["query", "s"], "");
    assert_eq!(run.stdout, "position,t,v\n1,1,1.5\n");
    // The export's row again, from an Arrow stream on standard input (at its own position,
    // which a batch may share).
    let (code, stderr) = piped("rows.arrow");
    assert_eq!(code, Some(0), "{stderr}");
    let run = within_deadline(s.dir.path(), &["query", "s"], "");
    assert_eq!(run.stdout, "position,t,v\n1,1,1.5\n1,1,1.5\n");
}
