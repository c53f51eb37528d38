//! Ctrl-C during `strata ingest`, for real: the binary is sent SIGINT while it reads its input
//! from a pipe the test holds, so where it stops is up to the test and not to timing.
//!
//! The input is fed so that after the first seal (row `SEAL_EVERY`) half a batch is available:
//! once the ingest has sealed and is blocked reading (Linux's `/proc/PID/syscall` says so), it
//! cannot reach another batch boundary until the test writes more. Every wait is bounded and
//! polls what the binary shows (its manifest, its syscall, its stderr); none sleeps a fixed time
//! and hopes.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::thread;
use std::time::{Duration, Instant};

use super::cli::Scratch;

/// Rows in the file.
const N_ROWS: u64 = 20_000;
const BATCH: u64 = 100;
const SEAL_EVERY: u64 = 1_000;
/// Rows written before the first signal: one seal's worth and half a batch.
const N_ROWS_FIRST: u64 = SEAL_EVERY + BATCH / 2;
/// How long any one wait may take before the test fails.
pub(crate) const WAIT_MAX: Duration = Duration::from_secs(120);
pub(crate) const POLL: Duration = Duration::from_millis(5);

/// The CSV line of row `t` (1-based): the axis and a value derived from it.
fn line(t: u64) -> String {
    format!("{t},{}\n", t * 7 + 3)
}

/// A store holding stream `x` (axis `t`, measured `v`), and `rows.csv` with every row.
fn store_and_file() -> Scratch {
    let s = Scratch::new();
    s.ok(
        &[
            "declare", "x", "--field", "t:u64", "--field", "v:i64", "--axis", "t",
        ],
        "",
    );
    let mut csv = String::from("t,v\n");
    for t in 1..=N_ROWS {
        csv.push_str(&line(t));
    }
    s.write("rows.csv", &csv);
    s
}

/// A running `strata` child whose stderr is read line by line as it comes, so a test can wait
/// for what it says before it signals it again.
pub(crate) struct Running {
    child: Child,
    stderr: Receiver<String>,
    said: Vec<String>,
}

impl Running {
    /// Spawns `command` with stderr piped (stdin and stdout as `command` has them).
    pub(crate) fn spawn(command: &mut Command) -> Running {
        let mut child = command
            .stderr(Stdio::piped())
            .spawn()
            .expect("the strata binary runs");
        let stderr = BufReader::new(child.stderr.take().unwrap());
        let (send, receive) = mpsc::channel();
        thread::spawn(move || {
            for line in stderr.lines() {
                if send.send(line.unwrap()).is_err() {
                    break;
                }
            }
        });
        Running {
            child,
            stderr: receive,
            said: Vec::new(),
        }
    }

    pub(crate) fn id(&self) -> u32 {
        self.child.id()
    }

    /// Whether the process has exited (it is reaped then).
    pub(crate) fn has_exited(&mut self) -> bool {
        self.child.try_wait().unwrap().is_some()
    }

    pub(crate) fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .args(["-s", name, &self.child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill -s {name} failed");
    }

    /// Waits for a stderr line containing `needle`, and returns it.
    pub(crate) fn wait_for_stderr(&mut self, needle: &str) -> String {
        let deadline = Instant::now() + WAIT_MAX;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.stderr.recv_timeout(left) {
                Ok(line) => {
                    self.said.push(line.clone());
                    if line.contains(needle) {
                        return line;
                    }
                }
                Err(error) => panic!("no {needle:?} on stderr ({error}); said {:?}", self.said),
            }
        }
    }

    /// Waits for the process to exit and returns its code, everything it said on stderr, and
    /// its stdout if that was piped.
    pub(crate) fn wait_for_exit(mut self) -> (i32, String, String) {
        let deadline = Instant::now() + WAIT_MAX;
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() > deadline {
                self.child.kill().unwrap();
                panic!("strata did not exit; said {:?}", self.said);
            }
            thread::sleep(POLL);
        };
        // The stderr thread ends when the pipe closes, once the process is gone.
        while let Ok(line) = self.stderr.recv_timeout(WAIT_MAX) {
            self.said.push(line);
        }
        let mut stdout = String::new();
        if let Some(mut out) = self.child.stdout.take() {
            out.read_to_string(&mut stdout).unwrap();
        }
        let code = status
            .code()
            .unwrap_or_else(|| panic!("killed: {status:?}"));
        (code, self.said.join("\n"), stdout)
    }
}

/// A running `strata ingest x -` and the pipe to its stdin.
struct Ingest {
    running: Running,
    stdin: Option<ChildStdin>,
}

impl Ingest {
    fn start(s: &Scratch) -> Ingest {
        let batch = BATCH.to_string();
        let seal_every = SEAL_EVERY.to_string();
        let args = [
            "--store",
            "store",
            "ingest",
            "x",
            "-",
            "--batch",
            &batch,
            "--seal-every",
            &seal_every,
        ];
        let mut running = Running::spawn(
            Command::new(env!("CARGO_BIN_EXE_strata"))
                .args(args)
                .current_dir(s.dir.path())
                .stdin(Stdio::piped())
                .stdout(Stdio::null()),
        );
        let mut ingest = Ingest {
            stdin: running.child.stdin.take(),
            running,
        };
        let mut first = String::from("t,v\n");
        for t in 1..=N_ROWS_FIRST {
            first.push_str(&line(t));
        }
        ingest.feed(first);
        ingest
    }

    /// Writes `text` to the ingest's input; a pipe it closed by exiting is not an error here.
    fn feed(&mut self, text: String) {
        let mut stdin = self.stdin.take().unwrap();
        let writer = thread::spawn(move || {
            if let Err(error) = stdin.write_all(text.as_bytes()) {
                assert_eq!(error.kind(), std::io::ErrorKind::BrokenPipe, "{error}");
            }
            stdin
        });
        // More than a pipe's capacity is written from a thread, so this never blocks on it.
        self.stdin = Some(writer.join().unwrap());
    }

    /// Waits until the ingest has sealed at least once and its main thread is blocked reading
    /// standard input: it has read everything written so far.
    fn wait_until_sealed_and_reading(&self, store: &Path, manifest_bytes_before: u64) {
        wait_for_a_seal(store, manifest_bytes_before);
        // `/proc/PID/syscall` names the syscall a blocked thread is in, then its arguments (the
        // first is read's fd); a running thread reads "running".
        let read = if cfg!(target_arch = "x86_64") {
            "0"
        } else {
            "63" // the generic syscall table: aarch64, riscv64
        };
        let path = format!("/proc/{}/syscall", self.running.id());
        let deadline = Instant::now() + WAIT_MAX;
        loop {
            let syscall = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("cannot read {path} (Linux, same user): {e}"));
            let mut words = syscall.split_whitespace();
            if words.next() == Some(read) && words.next() == Some("0x0") {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "never blocked reading stdin: {syscall}"
            );
            thread::sleep(POLL);
        }
    }

    fn signal(&self, name: &str) {
        self.running.signal(name);
    }

    fn wait_for_stderr(&mut self, needle: &str) -> String {
        self.running.wait_for_stderr(needle)
    }

    /// Waits for the process to exit, its input still open, and returns its code and
    /// everything it said on stderr.
    fn wait_for_exit(self) -> (i32, String) {
        let Ingest { running, stdin } = self;
        let (code, stderr, _) = running.wait_for_exit();
        drop(stdin);
        (code, stderr)
    }
}

/// The total length of the store's manifest files, which grows with every seal.
fn manifest_bytes(store: &Path) -> u64 {
    std::fs::read_dir(store)
        .unwrap()
        .map(|entry| entry.unwrap())
        .filter(|entry| entry.file_name().to_string_lossy().starts_with("manifest-"))
        .map(|entry| entry.metadata().unwrap().len())
        .sum()
}

/// Waits until the manifest grows past `before` bytes: a seal is durable.
fn wait_for_a_seal(store: &Path, before: u64) {
    let deadline = Instant::now() + WAIT_MAX;
    while manifest_bytes(store) <= before {
        assert!(Instant::now() < deadline, "no seal within {WAIT_MAX:?}");
        thread::sleep(POLL);
    }
}

/// The number right after `word` in `text`, digits grouped with commas or not.
fn number_after(text: &str, word: &str) -> u64 {
    let at = text
        .find(word)
        .unwrap_or_else(|| panic!("{word:?} in {text}"))
        + word.len();
    text[at..]
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == ',')
        .filter(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .unwrap_or_else(|_| panic!("a number after {word:?} in {text}"))
}

/// The `(t, v)` of every stored row of `x`, sorted.
fn stored(s: &Scratch) -> Vec<(u64, u64)> {
    let run = s.ok(&["query", "x"], "");
    let mut rows: Vec<(u64, u64)> = run
        .stdout
        .lines()
        .skip(1)
        .map(|line| {
            let cells: Vec<u64> = line.split(',').map(|c| c.parse().unwrap()).collect();
            (cells[1], cells[2])
        })
        .collect();
    rows.sort_unstable();
    rows
}

fn expected(n_rows: u64) -> Vec<(u64, u64)> {
    (1..=n_rows).map(|t| (t, t * 7 + 3)).collect()
}

#[test]
fn ctrl_c_during_ingest_seals_what_is_staged_and_says_where_to_resume() {
    let s = store_and_file();
    let store = s.dir.path().join("store");
    let before = manifest_bytes(&store);
    let mut ingest = Ingest::start(&s);
    ingest.wait_until_sealed_and_reading(&store, before);
    ingest.signal("INT");
    ingest.wait_for_stderr("stopping at the next batch boundary");
    // Only now can a batch boundary be reached: the rest of the file follows. The ingest fills
    // the batch it was reading, publishes it, and stops there.
    let mut rest = String::new();
    for t in N_ROWS_FIRST + 1..=N_ROWS {
        rest.push_str(&line(t));
    }
    ingest.feed(rest);
    let (code, stderr) = ingest.wait_for_exit();

    assert_eq!(code, 3, "an ingest stopped by a signal exits 3: {stderr}");
    let n_sealed = number_after(&stderr, "sealed ");
    let watermark = number_after(&stderr, "(watermark ");
    let first_unstored = number_after(&stderr, "CSV line ");
    let skip = number_after(&stderr, "--skip-lines ");
    assert_eq!(n_sealed, SEAL_EVERY + BATCH, "{stderr}");
    assert_eq!(watermark, n_sealed, "positions run from 1: {stderr}");
    assert_eq!(skip, n_sealed, "a line a row after the header: {stderr}");
    assert_eq!(first_unstored, skip + 2, "line 1 is the header: {stderr}");
    assert_eq!(
        stored(&s),
        expected(n_sealed),
        "what it said is what is stored"
    );

    // The same file, resumed where it said: every row of the file exactly once.
    let skip = skip.to_string();
    let resumed = s.ok(&["ingest", "x", "rows.csv", "--skip-lines", &skip], "");
    assert_eq!(
        number_after(&resumed.stdout, "ingested "),
        N_ROWS - n_sealed
    );
    assert_eq!(number_after(&resumed.stdout, "skipped "), n_sealed);
    assert_eq!(stored(&s), expected(N_ROWS));
}

#[test]
fn a_second_ctrl_c_ends_ingest_at_once() {
    let s = store_and_file();
    let store = s.dir.path().join("store");
    let before = manifest_bytes(&store);
    let mut ingest = Ingest::start(&s);
    ingest.wait_until_sealed_and_reading(&store, before);
    ingest.signal("INT");
    ingest.wait_for_stderr("stopping at the next batch boundary");
    // No batch boundary can come (the input holds half a batch more and stays open), so only
    // the second signal can end the process.
    ingest.signal("INT");
    let (code, stderr) = ingest.wait_for_exit();

    assert_eq!(code, 130, "128 + SIGINT: {stderr}");
    assert!(stderr.contains("SIGINT again: exiting at once"), "{stderr}");
    assert!(stderr.contains("not stored"), "{stderr}");
    // It says what the last seal stored, and that is what is stored.
    assert_eq!(number_after(&stderr, "sealed "), SEAL_EVERY, "{stderr}");
    assert_eq!(number_after(&stderr, "(watermark "), SEAL_EVERY, "{stderr}");
    let skip = number_after(&stderr, "--skip-lines ");
    assert_eq!(skip, SEAL_EVERY, "{stderr}");
    assert_eq!(stored(&s), expected(SEAL_EVERY));

    let skip = skip.to_string();
    s.ok(&["ingest", "x", "rows.csv", "--skip-lines", &skip], "");
    assert_eq!(stored(&s), expected(N_ROWS));
}
