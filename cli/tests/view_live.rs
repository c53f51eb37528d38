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
//!
//! Both need programs `.ci/run` installs from Debian (`chromium`, `chromium-driver`, `wrk`);
//! without them they fail saying so. A test binary of its own, so that no other test shares
//! the machine with the load or the timed repaints; the two run one after the other.
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
