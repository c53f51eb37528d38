//! `strata view` in a real browser and under load from a second process (#34).
//!
//! - `a_browser_zooms_into_a_spike_and_the_page_draws_what_the_store_holds`: Debian's chromium,
//!   driven over WebDriver (chromedriver, through `fantoccini`), loads the page over a store of
//!   10^7 rows with spikes and a dropout, selects a track, zooms into one spike with wheel
//!   events at the spike's pixel, and reads the page's own state (`window.strataView`) and its
//!   canvas: the survey asked for the new range with a budget of 4 points a device pixel, the
//!   drawn maximum is `strata fold --agg max` over the visible range, the dropout's columns are
//!   blank, and the browser logged no error. It saves a screenshot beside the test's target
//!   files and reports each zoom's repaint time.
//! - `sixty_four_connections_of_mixed_surveys_for_30_s_answer_every_request`: `wrk` (a second
//!   process) keeps 64 connections of mixed surveys and folds open for 30 s: no error, no
//!   status but 200, the latency percentiles printed, the server's peak memory bounded.
//! - `twenty_thousand_half_sent_requests_are_closed_in_time_and_the_memory_comes_back` (#47):
//!   four python3 processes (`viewing/half_open.py`) open 20,000 connections that each send
//!   half a request head; beside them ordinary requests are answered or refused with 503
//!   within 1 s, every half-sent one ends within the head deadline, and the server's memory
//!   stays bounded and comes back. It prints the figures.
//!
//! The first two need programs `.ci/run` installs from Debian (`chromium`, `chromium-driver`,
//! `wrk`), the third python3; without them they fail saying so. A test binary of its own, so
//! that no other test shares the machine with the loads or the timed repaints; they run one
//! after the other.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::cast_possible_truncation,
    clippy::cast_precision_loss,
    clippy::cast_sign_loss,
    clippy::float_cmp,
    reason = "test code: a failed unwrap is a failed test; the values compared are stored and read back exactly"
)]

#[path = "viewing/mod.rs"]
mod viewing;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use fantoccini::actions::{
    InputSource, MOUSE_BUTTON_LEFT, MouseActions, PointerAction, WheelAction, WheelActions,
};
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};
use strata::{Config, Store, Values};
use viewing::{Viewing, peak_kib, probe_stream, view};

/// The two tests run one after the other: neither shares the machine with the other.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Rows are `STEP` apart on the axis.
const STEP: u64 = 10;
/// The axis range (half-open) where neither track has a row.
const DROPOUT: [u64; 2] = [20_000_000, 21_000_000];
/// Single rows far above the wave: (probe, axis, value). The p0 spike beside the p1 one at
/// 35,000,000 is higher, so a view that ignored the track would show it.
const SPIKES: [(&str, u64, f64); 5] = [
    ("p1", 10_000_000, 40.0),
    ("p1", 35_000_000, 25.0),
    ("p1", 45_000_000, 60.0),
    ("p0", 12_000_000, 80.0),
    ("p0", 35_000_050, 90.0),
];
/// The spike the browser zooms into.
const ZOOM_INTO: u64 = 35_000_000;

/// A row's value: its track's spike, or a slow wave a little apart per probe.
fn value(probe: &str, t: u64) -> f64 {
    SPIKES
        .iter()
        .find(|&&(p, at, _)| p == probe && at == t)
        .map_or_else(
            || (t as f64 / 400_000.0).sin() + if probe == "p0" { 0.5 } else { 0.0 },
            |&(_, _, v)| v,
        )
}

/// A store of `rows_per_track` rows axis `0, STEP, ..` for each of the tracks `r1,p0` and
/// `r1,p1` (less the dropout), sealed a million rows a barrier.
fn spiky_store(path: &Path, rows_per_track: u64) -> u64 {
    let mut store = Store::create(path, Config::default(), &[probe_stream()]).unwrap();
    let chunk = 500_000;
    let (mut position, mut rows) = (0, 0);
    for start in (0..rows_per_track).step_by(chunk as usize) {
        for probe in ["p0", "p1"] {
            let t: Vec<u64> = (start..(start + chunk).min(rows_per_track))
                .map(|i| i * STEP)
                .filter(|t| !(DROPOUT[0]..DROPOUT[1]).contains(t))
                .collect();
            let v: Vec<f64> = t.iter().map(|&t| value(probe, t)).collect();
            position += 1;
            rows += t.len() as u64;
            store
                .publish_columns(
                    "probe",
                    position,
                    &["r1", probe],
                    &[Values::U64(&t), Values::F64(&v)],
                )
                .unwrap();
        }
        store.seal().unwrap();
    }
    rows
}

/// A program from Debian's packages, or a failure naming the package.
fn program(name: &str, package: &str) -> PathBuf {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(name))
            .find(|path| path.is_file())
    });
    found.unwrap_or_else(|| {
        panic!("`{name}` is not on PATH: install Debian's {package} (.ci/run does: apt-get install {package})")
    })
}

/// A child process killed when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `strata fold` over the range, through the command line: the value of its one field.
fn fold_max(cwd: &Path, track: &str, from: &str, to: &str) -> f64 {
    let out = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args([
            "--store", "store", "fold", "probe", "--track", track, "--from", from, "--to", to,
            "--agg", "max", "--format", "json",
        ])
        .current_dir(cwd)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stats: Value = serde_json::from_slice(&out.stdout).unwrap();
    stats[0]["value"]
        .as_f64()
        .unwrap_or_else(|| panic!("a value in {stats}"))
}

/// chromedriver's `browser` log: what the page's console and network said.
#[derive(Debug)]
struct BrowserLog;

impl fantoccini::wd::WebDriverCompatibleCommand for BrowserLog {
    fn endpoint(
        &self,
        base: &url::Url,
        session: Option<&str>,
    ) -> Result<url::Url, url::ParseError> {
        base.join(&format!("session/{}/se/log", session.unwrap_or_default()))
    }

    fn method_and_body(&self, _: &url::Url) -> (axum::http::Method, Option<String>) {
        (
            axum::http::Method::POST,
            Some(json!({"type": "browser"}).to_string()),
        )
    }
}

/// The page's state once it has drawn at least `draws` times and asks nothing more.
async fn settled(client: &Client, draws: u64) -> Value {
    let started = Instant::now();
    loop {
        let state = client
            .execute(
                "const s = window.strataView; return s ? {draws: s.draws, busy: s.busy} : null;",
                vec![],
            )
            .await
            .unwrap();
        if state["draws"].as_u64().is_some_and(|d| d >= draws) && state["busy"] == json!(0) {
            return client
                .execute(
                    "return JSON.parse(JSON.stringify(window.strataView,
                        (k, v) => (typeof v === 'bigint' ? String(v) : v)));",
                    vec![],
                )
                .await
                .unwrap();
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the page did not settle: {state}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Where on the page (CSS pixels, from the viewport's corner) the panel draws `axis`.
async fn pixel_of(client: &Client, axis: u64) -> (f64, f64) {
    let at = client
        .execute(
            "const c = document.querySelector('canvas'); const r = c.getBoundingClientRect();
             const [lo, hi] = window.strataView.drawn.value.range.map(BigInt);
             const share = Number(BigInt(arguments[0]) - lo) / Number(hi - lo);
             return [r.left + share * r.width, r.top + r.height / 2];",
            vec![json!(axis.to_string())],
        )
        .await
        .unwrap();
    (at[0].as_f64().unwrap(), at[1].as_f64().unwrap())
}

/// The canvas's painted pixels in the columns strictly between where it draws axes `a` and
/// `b` (less two pixels each side): `(columns, painted)`.
async fn painted_between(client: &Client, a: &str, b: &str) -> (u64, u64) {
    let got = client
        .execute(
            "const c = document.querySelector('canvas'); const g = c.getContext('2d');
             const [lo, hi] = window.strataView.drawn.value.range.map(BigInt);
             const x = (v) => (Number(BigInt(v) - lo) / Number(hi - lo)) * (c.width - 1);
             const x0 = Math.ceil(x(arguments[0])) + 2, x1 = Math.floor(x(arguments[1])) - 2;
             if (x1 <= x0) return [0, 0];
             const data = g.getImageData(x0, 0, x1 - x0, c.height).data;
             let painted = 0;
             for (let i = 3; i < data.length; i += 4) if (data[i] !== 0) painted += 1;
             return [x1 - x0, painted];",
            vec![json!(a), json!(b)],
        )
        .await
        .unwrap();
    (got[0].as_u64().unwrap(), got[1].as_u64().unwrap())
}

/// A free loopback port (for chromedriver, which takes a port, not a listener).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// chromedriver on a free port, and a WebDriver session of headless chromium over it.
async fn browser(profile: &Path) -> (Killed, Client) {
    let driver = program("chromedriver", "chromium-driver");
    let chromium = program("chromium", "chromium");
    let port = free_port();
    let child = Command::new(driver)
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let driver = Killed(child);
    // The flags Debian's chromium needs here: headless, as root without a sandbox, and none
    // of its background calls to the network, which this machine refuses.
    let capabilities = json!({
        "browserName": "chrome",
        "goog:chromeOptions": {
            "binary": chromium,
            "args": [
                "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-quic", "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--window-size=1280,900",
                "--force-device-scale-factor=1",
                format!("--user-data-dir={}", profile.display()),
            ],
        },
        "goog:loggingPrefs": {"browser": "ALL"},
    });
    let Value::Object(capabilities) = capabilities else {
        unreachable!()
    };
    let connector = hyper_util::client::legacy::connect::HttpConnector::new();
    let started = Instant::now();
    loop {
        match ClientBuilder::new(connector.clone())
            .capabilities(capabilities.clone())
            .connect(&format!("http://127.0.0.1:{port}"))
            .await
        {
            Ok(client) => return (driver, client),
            Err(e) if started.elapsed() < Duration::from_secs(30) => {
                let _ = e;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("no WebDriver session from chromedriver on port {port}: {e}"),
        }
    }
}

#[test]
fn a_browser_zooms_into_a_spike_and_the_page_draws_what_the_store_holds() {
    let _one = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    let rows = spiky_store(&cwd.join("store"), 5_100_000);
    assert!(rows >= 10_000_000, "{rows} rows");
    let viewing = view(cwd, "store");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(drive(cwd, &viewing));
}

#[expect(
    clippy::too_many_lines,
    reason = "one session of the page: load, select, zoom, reset, each checked in turn"
)]
async fn drive(cwd: &Path, viewing: &Viewing) {
    let (_driver, client) = browser(&cwd.join("profile")).await;
    client
        .goto(&format!("http://{}/", viewing.addr))
        .await
        .unwrap();
    let first = settled(&client, 1).await;
    assert_eq!(first["stream"], "probe", "{first}");

    // Select a track: type it and press Enter.
    let track = client.find(Locator::Css("#track")).await.unwrap();
    track.send_keys("r1,p1\u{E007}").await.unwrap();
    let whole = settled(&client, first["draws"].as_u64().unwrap() + 1).await;
    assert_eq!(whole["track"], "r1,p1", "{whole}");
    let asked = whole["requests"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(asked["track"], "r1,p1");
    let drawn = &whole["drawn"]["value"];
    let canvas_px = drawn["canvasWidth"].as_u64().unwrap();
    assert_eq!(asked["width"].as_u64(), Some(canvas_px), "{asked}");
    assert_eq!(asked["budget"].as_u64(), Some(4 * canvas_px), "{asked}");
    // The whole track: its highest spike, as the command line folds it.
    let [lo, hi] = [&drawn["range"][0], &drawn["range"][1]].map(|v| v.as_str().unwrap());
    assert_eq!(drawn["max"].as_f64(), Some(fold_max(cwd, "r1,p1", lo, hi)));
    assert_eq!(drawn["max"].as_f64(), Some(60.0));
    // (c) The dropout is the one gap, and the canvas is blank across it but not beside it.
    let gaps = drawn["gapsAt"].as_array().unwrap();
    assert_eq!(gaps.len(), 1, "{drawn}");
    let [before, after] = [&gaps[0][0], &gaps[0][1]].map(|v| {
        v.as_str()
            .map_or_else(|| v.as_u64().unwrap().to_string(), str::to_owned)
    });
    let (before_n, after_n): (u64, u64) = (before.parse().unwrap(), after.parse().unwrap());
    assert!(
        before_n < DROPOUT[0] && after_n >= DROPOUT[1],
        "the gap {before}..{after} spans the dropout {DROPOUT:?}"
    );
    let (columns, painted) = painted_between(&client, &before, &after).await;
    assert!(columns >= 10, "{columns} columns across the dropout");
    assert_eq!(painted, 0, "pixels painted across the dropout");
    let (columns, painted) = painted_between(&client, "1000000", "11000000").await;
    assert!(
        columns >= 10 && painted > 0,
        "where rows are, the panel is painted"
    );
    let whole_level = whole["survey"]["level"].as_u64().unwrap();

    // Zoom into one spike: wheel notches at the spike's pixel, each a new survey.
    let mut draws = whole["draws"].as_u64().unwrap();
    let mut repaints = Vec::new();
    let mut state = whole.clone();
    for notch in 0..8 {
        let (x, y) = pixel_of(&client, ZOOM_INTO).await;
        let wheel = WheelActions::new(format!("wheel{notch}")).then(WheelAction::Scroll {
            duration: None,
            x: x.round() as i64,
            y: y.round() as i64,
            delta_x: 0,
            delta_y: -120,
        });
        client.perform_actions(wheel).await.unwrap();
        state = settled(&client, draws + 1).await;
        draws = state["draws"].as_u64().unwrap();
        let last = state["repaints"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()
            .clone();
        repaints.push((
            last["ms"].as_f64().unwrap(),
            last["serverMs"].as_f64().unwrap_or(f64::NAN),
        ));
    }
    // The view is in the URL, to be shared.
    let url = client.current_url().await.unwrap();
    let fragment: std::collections::HashMap<String, String> =
        url::form_urlencoded::parse(url.fragment().unwrap_or_default().as_bytes())
            .into_owned()
            .collect();
    let from = state["from"].as_str().unwrap().to_owned();
    let to = state["to"].as_str().unwrap().to_owned();
    assert_eq!(fragment.get("from"), Some(&from), "{url}");
    assert_eq!(fragment.get("to"), Some(&to), "{url}");
    let (from_n, to_n): (u64, u64) = (from.parse().unwrap(), to.parse().unwrap());
    assert!(
        from_n < ZOOM_INTO && ZOOM_INTO < to_n,
        "{from}..{to} holds the spike"
    );
    assert!(
        to_n - from_n < (DROPOUT[1] * 2) / 100,
        "{from}..{to}: zoomed in"
    );
    assert_eq!(fragment.get("track").map(String::as_str), Some("r1,p1"));
    // (a) The survey the zoom asked: this range, 4 points a device pixel of the panel.
    let asked = state["requests"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    let drawn = &state["drawn"]["value"];
    let canvas_px = drawn["canvasWidth"].as_u64().unwrap();
    assert_eq!(asked["from"].as_str(), Some(from.as_str()), "{asked}");
    assert_eq!(asked["to"].as_str(), Some(to.as_str()), "{asked}");
    assert_eq!(asked["width"].as_u64(), Some(canvas_px), "{asked}");
    assert_eq!(asked["budget"].as_u64(), Some(4 * canvas_px), "{asked}");
    assert_eq!(drawn["range"], json!([from, to]), "{drawn}");
    let level = state["survey"]["level"].as_u64().unwrap();
    assert!(
        level < whole_level,
        "the zoom asked finer cells: level {level}, whole track {whole_level}"
    );
    // (b) The drawn maximum in view is the store's, over the visible range, for this track
    // (the p0 spike beside it is higher).
    let max = fold_max(cwd, "r1,p1", &from, &to);
    assert_eq!(drawn["max"].as_f64(), Some(max), "{drawn}");
    assert_eq!(max, 25.0);
    assert_eq!(drawn["gaps"], 0, "{drawn}");

    // A double-click resets to the whole track.
    let (x, y) = pixel_of(&client, ZOOM_INTO).await;
    let click = MouseActions::new("mouse".to_owned())
        .then(PointerAction::MoveTo {
            duration: None,
            x,
            y,
        })
        .then(PointerAction::Down {
            button: MOUSE_BUTTON_LEFT,
        })
        .then(PointerAction::Up {
            button: MOUSE_BUTTON_LEFT,
        })
        .then(PointerAction::Down {
            button: MOUSE_BUTTON_LEFT,
        })
        .then(PointerAction::Up {
            button: MOUSE_BUTTON_LEFT,
        });
    client.perform_actions(click).await.unwrap();
    let reset = settled(&client, draws + 1).await;
    assert_eq!(reset["from"], Value::Null, "{}", reset["from"]);
    assert_eq!(reset["survey"]["level"].as_u64(), Some(whole_level));

    // (d) No error on the page, nor in the browser's console.
    assert_eq!(reset["errors"], json!([]), "{}", reset["errors"]);
    let log = client.issue_cmd(BrowserLog).await.unwrap();
    let severe: Vec<&Value> = log
        .as_array()
        .unwrap()
        .iter()
        .filter(|entry| entry["level"] == "SEVERE")
        .collect();
    assert!(severe.is_empty(), "the console: {severe:?}");

    // The picture: the whole track, its spikes and its dropout (the page, cut to its content).
    let body = client.find(Locator::Css("body")).await.unwrap();
    let png = body.screenshot().await.unwrap();
    let shot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("strata-view.png");
    std::fs::write(&shot, png).unwrap();
    client.close().await.unwrap();
    let slowest = repaints.iter().map(|r| r.0).fold(0.0, f64::max);
    viewing::census(&format!(
        "view over {} of the axis; zoom repaints (ms, and the server's part): {repaints:.1?}, the slowest {slowest:.1}; screenshot {}",
        to_n - from_n,
        shot.display()
    ));
    assert!(
        slowest <= 100.0,
        "a zoom repainted in {slowest:.1} ms, above 100"
    );
}

/// wrk's script: mixed surveys (ranges from the whole axis to 1/4096 of it, budgets of 100 to
/// 1,600 pixels, every track prefix) and one request in ten a fold from cells.
const MIXED: &str = r#"
math.randomseed(34)
local tracks = {"", "r1", "r1%2Cp0", "r1%2Cp1"}
local aggs = {"min", "max", "mean", "count"}
local span = SPAN
request = function()
  local width = math.floor(span / (2 ^ math.random(0, 12)))
  local from = math.random(0, span - width)
  local track = tracks[math.random(#tracks)]
  local path
  if math.random(10) == 1 then
    path = string.format("/api/fold?stream=probe&from=%d&to=%d&agg=%s", from, from + width, aggs[math.random(#aggs)])
  else
    path = string.format("/api/survey?stream=probe&from=%d&to=%d&budget=%d", from, from + width, 4 * math.random(100, 1600))
  end
  if track ~= "" then path = path .. "&track=" .. track end
  return wrk.format("GET", path)
end
"#;

/// A line of wrk's report that starts with `label`, split into words.
fn report_line<'a>(report: &'a str, label: &str) -> Option<Vec<&'a str>> {
    report
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with(label))
        .map(|l| l.split_whitespace().collect())
}

#[test]
fn sixty_four_connections_of_mixed_surveys_for_30_s_answer_every_request() {
    let _one = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let wrk = program("wrk", "wrk");
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    let rows_per_track = 1_000_000;
    spiky_store(&cwd.join("store"), rows_per_track);
    let viewing = view(cwd, "store");
    let script = cwd.join("mixed.lua");
    std::fs::write(
        &script,
        MIXED.replace("SPAN", &(rows_per_track * STEP).to_string()),
    )
    .unwrap();
    let seconds: u64 = 30;
    let mut load = Command::new(wrk)
        .args(["-t2", "-c64", &format!("-d{seconds}s"), "--timeout", "10s"])
        .arg("--latency")
        .arg("-s")
        .arg(&script)
        .arg(format!("http://{}/", viewing.addr))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The view's peak memory while wrk runs (wrk stops itself after `seconds`).
    let pid = viewing.child.id();
    let mut peak = 0;
    let started = Instant::now();
    while load.try_wait().unwrap().is_none() {
        if let Some(kib) = peak_kib(pid) {
            peak = peak.max(kib);
        }
        if started.elapsed() > Duration::from_secs(seconds + 60) {
            let _ = load.kill();
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = load.wait_with_output().unwrap();
    let report = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{report}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    if let Some(kib) = peak_kib(pid) {
        peak = peak.max(kib);
    }
    viewing::census(&format!(
        "wrk, 64 connections, {seconds} s of mixed surveys:\n{report}"
    ));
    viewing::census(&format!("the view's peak memory {} MiB", peak / 1024));
    let requests: u64 = report
        .lines()
        .find(|l| l.contains("requests in"))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("a request count in {report}"));
    assert!(requests > 1_000, "{requests} requests in {seconds} s");
    assert!(
        report_line(&report, "Socket errors").is_none(),
        "no connect, read, write or timeout error: {report}"
    );
    assert!(
        report_line(&report, "Non-2xx").is_none(),
        "every answer a 200: {report}"
    );
    let p99 = report_line(&report, "99%").unwrap_or_else(|| panic!("a p99 in {report}"));
    assert!(p99.len() == 2, "{p99:?}");
    assert!(peak > 0, "the view was seen running");
    assert!(
        peak <= 256 * 1024,
        "the view peaked at {} MiB under load, above 256",
        peak / 1024
    );
    // And it still answers.
    let (status, _) = viewing::get(&viewing.addr, "/api/watermark?stream=probe");
    assert_eq!(status, 200);
}

/// view.rs's `HEAD_DEADLINE_MS`: how long a connection may take to send a whole request head.
const HEAD_DEADLINE: Duration = Duration::from_secs(5);
/// How late past its deadline a connection may be seen to close on this busy machine (the
/// clients are python processes sharing its cores with the server).
const LATE: Duration = Duration::from_secs(2);
/// The half-sent connections, and the processes opening them: one process cannot hold them
/// all under a descriptor limit of 20,000.
const HALF_OPEN: usize = 20_000;
const HALF_OPEN_CLIENTS: usize = 4;
/// Each client's connections a second: all of them open in about 8 s, so the first the server
/// admitted reach their deadline while more arrive, and the bound's slots are taken again.
const HALF_OPEN_RATE: f64 = 625.0;

/// An ordinary request on a new connection: its status, or what went wrong, and its time.
fn ordinary(addr: &str) -> (Result<u16, String>, Duration) {
    use std::io::{Read as _, Write as _};
    let asked = Instant::now();
    let answer = (|| {
        let at = addr.parse().map_err(|e| format!("{e}"))?;
        let mut stream = std::net::TcpStream::connect_timeout(&at, Duration::from_secs(5))
            .map_err(|e| format!("connect: {e}"))?;
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .map_err(|e| e.to_string())?;
        stream
            .write_all(viewing::get_head(addr, "/api/watermark?stream=probe").as_bytes())
            .map_err(|e| format!("write: {e}"))?;
        let mut got = Vec::new();
        stream
            .read_to_end(&mut got)
            .map_err(|e| format!("read: {e} after {} bytes", got.len()))?;
        let got = String::from_utf8_lossy(&got);
        got.split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| format!("no status in {got:?}"))
    })();
    (answer, asked.elapsed())
}

#[test]
#[expect(
    clippy::too_many_lines,
    reason = "one load: its clients, the ordinary requests beside them, memory, then the checks"
)]
fn twenty_thousand_half_sent_requests_are_closed_in_time_and_the_memory_comes_back() {
    let _one = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let python = program("python3", "python3");
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    spiky_store(&cwd.join("store"), 100_000);
    let viewing = view(cwd, "store");
    let pid = viewing.child.id();
    let addr = viewing.addr.clone();
    let (status, body) = viewing::get(&addr, "/api/watermark?stream=probe");
    assert_eq!(status, 200, "{body}");
    std::thread::sleep(Duration::from_millis(500));
    let idle = viewing::rss_kib(pid).unwrap();

    let (host, port) = addr.rsplit_once(':').unwrap();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/viewing/half_open.py");
    let wait = HEAD_DEADLINE + LATE * 4;
    let clients: Vec<Killed> = (0..HALF_OPEN_CLIENTS)
        .map(|_| {
            Killed(
                Command::new(&python)
                    .arg(script)
                    .args([host, port])
                    .arg((HALF_OPEN / HALF_OPEN_CLIENTS).to_string())
                    .arg(HALF_OPEN_RATE.to_string())
                    .arg(wait.as_secs_f64().to_string())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap(),
            )
        })
        .collect();
    let started = Instant::now();
    // Ordinary requests beside the load, one every 100 ms, until the clients are done.
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let prober = {
        let (addr, done) = (addr.clone(), std::sync::Arc::clone(&done));
        std::thread::spawn(move || {
            let mut seen = Vec::new();
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                seen.push(ordinary(&addr));
                std::thread::sleep(Duration::from_millis(100));
            }
            seen
        })
    };
    // The server's memory while they run.
    let mut peak_rss = idle;
    let mut clients: Vec<Option<Killed>> = clients.into_iter().map(Some).collect();
    let mut reports = Vec::new();
    while clients.iter().any(Option::is_some) {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the clients did not finish"
        );
        if let Some(kib) = viewing::rss_kib(pid) {
            peak_rss = peak_rss.max(kib);
        }
        for slot in &mut clients {
            if slot
                .as_mut()
                .is_some_and(|c| c.0.try_wait().unwrap().is_some())
            {
                let mut client = slot.take().unwrap();
                let mut out = String::new();
                let mut err = String::new();
                std::io::Read::read_to_string(client.0.stdout.as_mut().unwrap(), &mut out).unwrap();
                std::io::Read::read_to_string(client.0.stderr.as_mut().unwrap(), &mut err).unwrap();
                assert!(client.0.wait().unwrap().success(), "a client failed: {err}");
                reports.push(
                    serde_json::from_str::<Value>(&out)
                        .unwrap_or_else(|e| panic!("a client's report: {e}: {out:?} {err}")),
                );
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let load_s = started.elapsed().as_secs_f64();
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let probes = prober.join().unwrap();
    // Memory once they are gone: what the server freed is given back (or kept for reuse
    // within the bound).
    std::thread::sleep(Duration::from_secs(1));
    let after = viewing::rss_kib(pid).unwrap();
    let peak = peak_kib(pid).unwrap().max(peak_rss);

    let total = |key: &str| -> u64 { reports.iter().map(|r| r[key].as_u64().unwrap()).sum() };
    let longest = |kind: &str| -> f64 {
        reports
            .iter()
            .filter_map(|r| r["close_s_max"][kind].as_f64())
            .fold(0.0, f64::max)
    };
    let median = |kind: &str| -> Vec<f64> {
        reports
            .iter()
            .filter_map(|r| r["close_s"][kind].as_f64())
            .collect()
    };
    let answered: Vec<&(Result<u16, String>, Duration)> = probes.iter().collect();
    let slowest = answered
        .iter()
        .map(|p| p.1.as_secs_f64())
        .fold(0.0, f64::max);
    let n_ok = answered.iter().filter(|p| p.0 == Ok(200)).count();
    let n_busy = answered.iter().filter(|p| p.0 == Ok(503)).count();
    let opened_s = reports
        .iter()
        .filter_map(|r| r["opened_s"].as_f64())
        .fold(0.0, f64::max);
    let others: Vec<&Value> = reports
        .iter()
        .flat_map(|r| r["other_answers"].as_array().unwrap())
        .collect();
    viewing::census(&format!(
        "{HALF_OPEN} half-sent requests from {HALF_OPEN_CLIENTS} processes, opened in {opened_s:.1} s, \
         every one ended and the clients done {load_s:.1} s after they started: {} refused with 503 (median per \
         client {:.3?} s, longest {:.3} s from the head's sending to the connection's end), {} \
         closed unanswered (median {:.2?} s, longest {:.2} s), {} reset (longest {:.2} s), {} \
         answered otherwise {others:?}, {} still open, {} failed to connect",
        total("refused_503"),
        median("refused_503"),
        longest("refused_503"),
        total("closed_silent"),
        median("closed_silent"),
        longest("closed_silent"),
        total("reset"),
        longest("reset"),
        total("other"),
        total("still_open"),
        total("connect_failed"),
    ));
    let mut times: Vec<f64> = answered.iter().map(|p| p.1.as_secs_f64()).collect();
    times.sort_by(f64::total_cmp);
    viewing::census(&format!(
        "ordinary requests beside them: {} asked, {n_ok} answered 200, {n_busy} refused 503; \
         their time from connecting to the answer's end: median {:.1} ms, the slowest {:.1} ms",
        answered.len(),
        times.get(times.len() / 2).copied().unwrap_or(f64::NAN) * 1e3,
        slowest * 1e3
    ));
    let mib = |kib: u64| kib as f64 / 1024.0;
    viewing::census(&format!(
        "the view's memory (VmRSS; the peak is VmHWM): idle {:.1} MiB, peak {:.1} MiB, {:.1} MiB 1 s after the load",
        mib(idle),
        mib(peak),
        mib(after)
    ));

    assert_eq!(total("opened"), HALF_OPEN as u64, "{reports:?}");
    assert_eq!(total("connect_failed"), 0, "{reports:?}");
    assert_eq!(
        total("still_open"),
        0,
        "every half-sent request's connection ended"
    );
    assert_eq!(
        total("other"),
        0,
        "nothing but a 503 or no answer: {reports:?}"
    );
    for kind in ["refused_503", "closed_silent", "reset"] {
        assert!(
            longest(kind) <= (HEAD_DEADLINE + LATE).as_secs_f64(),
            "a connection ({kind}) ended {:.2} s after its head, past the deadline {HEAD_DEADLINE:?}",
            longest(kind)
        );
    }
    assert!(answered.len() >= 10, "{} ordinary requests", answered.len());
    for (answer, took) in &answered {
        assert!(
            matches!(answer, Ok(200 | 503)),
            "an ordinary request got {answer:?} after {took:.2?}"
        );
    }
    assert!(
        slowest <= 1.0,
        "an ordinary request took {:.0} ms under the load",
        slowest * 1e3
    );
    assert!(
        peak <= 128 * 1024,
        "the view peaked at {} MiB, above 128",
        peak / 1024
    );
    assert!(
        after <= idle + 32 * 1024,
        "the view holds {} MiB after the load, {} MiB above its idle {} MiB",
        after / 1024,
        (after.saturating_sub(idle)) / 1024,
        idle / 1024
    );
    let (status, body) = viewing::get(&addr, "/api/watermark?stream=probe");
    assert_eq!(status, 200, "{body}");
}
