//! One mistake, one refusal (#47 item 7): each mistake a person can make in naming what to
//! read is refused with the same words by every face — the Rust API, the command line and
//! `strata view`'s API — and is never answered empty. (Python's face is the fourth column of
//! this table, in `python/tests/test_mistakes.py`, which holds its answers to the command
//! line's.)
//!
//! The table's rows: an unknown track, a retired track, a track of the wrong depth, an unknown
//! stream, a range given backwards, a selection with nothing live (a stream every track of
//! which was retired), and a retire with no track (which the read-only view does not take).

use std::fmt::Write as _;
use std::path::Path;

use strata::{Config, EngineError, Store};

use super::cli::{DECLARE_CAPTURE, Scratch};
use super::viewing::{get, view};

/// One row of the table: the mistake, and how each face makes it.
struct Mistake {
    name: &'static str,
    /// The engine's answer to it, through the Rust API.
    rust: fn(&Path) -> Result<(), EngineError>,
    /// The same mistake on the command line.
    cli: &'static [&'static str],
    /// The same mistake asked of the view's API (`None`: the view does not write).
    view: Option<&'static str>,
    /// The exit code the command line refuses it with.
    code: i32,
}

fn survey(dir: &Path, stream: &str, track: &[&str], range: (u64, u64)) -> Result<(), EngineError> {
    let store = Store::open_reader(dir, Config::default())?;
    store.survey(stream, track, range.0..=range.1, 64).map(drop)
}

const MISTAKES: [Mistake; 7] = [
    Mistake {
        name: "unknown track",
        rust: |dir| survey(dir, "capture", &["r9"], (0, u64::MAX)),
        cli: &["survey", "capture", "--track", "r9", "--budget", "64"],
        view: Some("/api/survey?stream=capture&track=r9&budget=64"),
        code: 1,
    },
    Mistake {
        name: "retired track",
        rust: |dir| survey(dir, "capture", &["r1", "p0"], (0, u64::MAX)),
        cli: &["survey", "capture", "--track", "r1,p0", "--budget", "64"],
        view: Some("/api/survey?stream=capture&track=r1,p0&budget=64"),
        code: 4,
    },
    Mistake {
        name: "track of the wrong depth",
        rust: |dir| survey(dir, "capture", &["r1", "p5", "x"], (0, u64::MAX)),
        cli: &["survey", "capture", "--track", "r1,p5,x", "--budget", "64"],
        view: Some("/api/survey?stream=capture&track=r1,p5,x&budget=64"),
        code: 1,
    },
    Mistake {
        name: "unknown stream",
        rust: |dir| survey(dir, "captur", &[], (0, u64::MAX)),
        cli: &["survey", "captur", "--budget", "64"],
        view: Some("/api/survey?stream=captur&budget=64"),
        code: 1,
    },
    Mistake {
        name: "inverted range",
        rust: |dir| survey(dir, "capture", &[], (9, 3)),
        cli: &[
            "survey", "capture", "--from", "9", "--to", "3", "--budget", "64",
        ],
        view: Some("/api/survey?stream=capture&from=9&to=3&budget=64"),
        code: 2,
    },
    Mistake {
        name: "selection with nothing live",
        rust: |dir| survey(dir, "gone", &[], (0, u64::MAX)),
        cli: &["survey", "gone", "--budget", "64"],
        view: Some("/api/survey?stream=gone&budget=64"),
        code: 4,
    },
    Mistake {
        name: "retire with no track",
        rust: |dir| {
            let mut store = Store::open(dir, Config::default(), &[])?;
            store.retire("capture", &[]).map(drop)
        },
        cli: &["retire", "capture", "--track", ""],
        view: None,
        code: 1,
    },
];

/// A store holding `capture` (tracks r1,p0 and r1,p5; r1,p0 retired) and `gone` (every track
/// retired), made by the command line.
fn store() -> Scratch {
    let s = Scratch::new();
    s.ok(&DECLARE_CAPTURE, "");
    let mut csv = String::from("run,probe,t,value\n");
    for i in 0..100 {
        let t = i * 10;
        writeln!(csv, "r1,p0,{t},1.5\nr1,p5,{t},2.5").unwrap();
    }
    s.ok(&["ingest", "capture", "-"], &csv);
    s.ok(&["retire", "capture", "--track", "r1,p0"], "");
    let mut gone = DECLARE_CAPTURE;
    gone[1] = "gone";
    s.ok(&gone, "");
    s.ok(&["ingest", "gone", "-"], "run,probe,t,value\nr1,p0,5,1.0\n");
    s.ok(&["retire", "gone", "--all"], "");
    s
}

#[test]
fn every_mistake_gets_one_refusal_from_every_face() {
    let s = store();
    let dir = s.dir.path().join("store");
    let viewing = view(s.dir.path(), "store");
    for mistake in &MISTAKES {
        let name = mistake.name;
        let said = match (mistake.rust)(&dir) {
            Err(error) => error.to_string(),
            Ok(()) => panic!("{name}: the Rust API answered it"),
        };
        let run = s.run(mistake.cli);
        assert_eq!(run.code, mistake.code, "{name}: {run:?}");
        assert!(run.stdout.is_empty(), "{name}: {run:?}");
        assert!(
            run.stderr.starts_with(&format!("strata: {said}")),
            "{name}: the command line said\n{}\nthe engine\n{said}",
            run.stderr
        );
        if let Some(target) = mistake.view {
            let (status, body) = get(&viewing.addr, target);
            assert_eq!(status, 400, "{name}: {body}");
            assert_eq!(body.trim_end(), said, "{name}: the view said");
        }
    }
}
