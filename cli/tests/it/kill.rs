//! A real process killed mid-write: `strata ingest` is SIGKILLed at several moments, and every
//! time the store reopens, serves a prefix of what was ingested in order, and takes more.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use strata::{Config, Store, Value};

const ROWS: u64 = 400_000;
const SEAL_EVERY: u64 = 10_000;

fn strata(store: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_strata"));
    command.arg("--store").arg(store);
    command
}

fn segment_files(store: &Path) -> usize {
    std::fs::read_dir(store.join("seg")).map_or(0, Iterator::count)
}

fn value(t: u64) -> f64 {
    (t % 977) as f64 * 0.5
}

fn write_csv(path: &Path, from: u64, to: u64) {
    let mut file = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    writeln!(file, "t,v").unwrap();
    for t in from..to {
        writeln!(file, "{t},{:?}", value(t)).unwrap();
    }
}

/// The rows the store serves: they must be exactly rows 0..n of the series, in order, at
/// positions 1..=n, with n a whole number of barriers and the watermark at n.
fn check_prefix(dir: &Path, context: &str) -> u64 {
    let store = Store::open(dir, Config::default(), &[])
        .unwrap_or_else(|e| panic!("{context}: reopen failed: {e}"));
    let rows = store.query("s", &[], ..).unwrap();
    let n = rows.len() as u64;
    for (i, row) in rows.iter().enumerate() {
        let t = i as u64;
        assert_eq!(row.position, t + 1, "{context}: row {i}");
        assert_eq!(
            row.values,
            [Value::U64(t), Value::F64(value(t))],
            "{context}: row {i}"
        );
    }
    assert_eq!(
        n % SEAL_EVERY,
        0,
        "{context}: {n} rows is not a whole number of barriers"
    );
    assert_eq!(
        store.watermark("s", &[]).unwrap(),
        (n > 0).then_some(n),
        "{context}"
    );
    n
}

#[test]
fn ingest_killed_at_any_moment_leaves_a_served_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let status = strata(&store)
        .args([
            "declare", "s", "--field", "t:u64", "--field", "v:f64", "--axis", "t",
        ])
        .status()
        .unwrap();
    assert!(status.success());

    let mut served = 0;
    let mut kills = 0;
    let mut killed_mid_series = false;
    // Each round kills the ingest once it has written `files` more segments (0: at once), so the
    // kills land mid-series however fast or loaded the machine is; where in a barrier they land
    // is up to the scheduler.
    for (round, files) in [0usize, 1, 2, 3, 5, 8].into_iter().enumerate() {
        // Ingest the rest of the series from where the store stands.
        let csv = dir.path().join(format!("rows-{round}.csv"));
        write_csv(&csv, served, ROWS);
        let start_files = segment_files(&store);
        let mut child = strata(&store)
            .arg("ingest")
            .arg("s")
            .arg(&csv)
            .args(["--seal-every", &SEAL_EVERY.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(120);
        while segment_files(&store) < start_files + files
            && child.try_wait().unwrap().is_none()
            && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(1));
        }
        let killed = child.try_wait().unwrap().is_none();
        if killed {
            child.kill().unwrap(); // SIGKILL: no destructor, no last barrier
            kills += 1;
        }
        child.wait().unwrap();
        let context = format!("round {round}, killed after {files} new segments");
        let now = check_prefix(&store, &context);
        assert!(
            now >= served,
            "{context}: rows went missing ({now} < {served})"
        );
        killed_mid_series |= killed && now > 0 && now < ROWS;
        served = now;
    }
    assert!(
        kills >= 3,
        "only {kills} ingests were still running when killed"
    );
    assert!(
        killed_mid_series,
        "no kill landed after some barriers and before the end"
    );

    // The store takes the rest afterwards, and then holds the whole series.
    let csv = dir.path().join("rest.csv");
    write_csv(&csv, served, ROWS);
    let status = strata(&store)
        .arg("ingest")
        .arg("s")
        .arg(&csv)
        .args(["--seal-every", &SEAL_EVERY.to_string()])
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(check_prefix(&store, "after the last ingest"), ROWS);
    let fsck = strata(&store).arg("fsck").output().unwrap();
    // Evidence of the kills (torn tails, orphan temps) may sit in quarantine: exit 0 or 1.
    assert!(matches!(fsck.status.code(), Some(0 | 1)), "{fsck:?}");
}
