//! `strata view` (#34): its JSON API over a real socket. Hostile requests get a 4xx
//! with one line saying why, never a panic or a hang; the view follows barriers a writer in
//! another process seals; more requests at once than the bound are refused with 503.

use std::fmt::Write as _;
use std::io::Write as _;
use std::time::Duration;

use serde_json::json;

use super::cli::{DECLARE_CAPTURE, Scratch};
use super::viewing::{Viewing, answer, get, get_head, send};

fn view(s: &Scratch) -> Viewing {
    super::viewing::view(s.dir.path(), "store")
}

fn rows(from: u64, to: u64) -> String {
    let mut csv = String::from("run,probe,t,value\n");
    for i in from..to {
        let probe = if i % 2 == 0 { "p0" } else { "p1" };
        let _ = writeln!(csv, "r1,{probe},{},{}", i * 10, (i % 17) as f64);
    }
    csv
}

#[test]
#[expect(
    clippy::too_many_lines,
    reason = "one table of hostile requests, each with its status and its words"
)]
fn hostile_requests_get_a_4xx_with_one_line_and_the_view_answers_after_them() {
    let s = Scratch::new();
    s.ok(&DECLARE_CAPTURE, "");
    s.ok(&["ingest", "capture", "-"], &rows(0, 2_000));
    let v = view(&s);
    let a = v.addr.as_str();
    let long = "x".repeat(5_000);
    let cases: Vec<(String, u16, &str)> = vec![
        (
            "/api/survey?stream=nope&budget=40".into(),
            400,
            "no stream \"nope\"",
        ),
        (
            "/api/survey?stream=capture&budget=40&track=zz".into(),
            400,
            "zz",
        ),
        (
            "/api/survey?stream=capture&budget=0".into(),
            400,
            "budget=0",
        ),
        (
            "/api/survey?stream=capture&budget=18446744073709551616".into(),
            400,
            "not a whole number",
        ),
        (
            "/api/survey?stream=capture&budget=99999999".into(),
            400,
            "a survey spends 1 to",
        ),
        (
            "/api/survey?stream=capture&budget=40&from=9&to=3".into(),
            400,
            "the range starts at axis value 9, above its end 3",
        ),
        (
            "/api/survey?stream=capture&budget=40&form=100".into(),
            400,
            "unknown parameter \"form\": this endpoint takes stream, track, from, to, from_position, to_position, budget, rows",
        ),
        (
            "/api/watermark?stream=capture&track=a".into(),
            400,
            "unknown parameter \"track\"",
        ),
        ("/api/streams?x=1".into(), 400, "unknown parameter \"x\""),
        (
            "/api/survey?stream=capture".into(),
            400,
            "\"budget\" is missing",
        ),
        (
            "/api/survey?stream=capture&budget=40&budget=41".into(),
            400,
            "given twice",
        ),
        (
            "/api/fold?stream=capture&agg=median".into(),
            400,
            "agg=\"median\"",
        ),
        (
            format!("/api/survey?stream=capture&budget=40&junk={long}"),
            414,
            "at most 4096",
        ),
        (
            "/api/survey?stream=capture&budget=40&rows=0".into(),
            400,
            "rows=0: a page reads 1 to 65536 rows at once",
        ),
        (
            "/api/rows?stream=capture&limit=65537".into(),
            400,
            "limit=65537: a page reads 1 to 65536 rows at once",
        ),
        (
            "/api/rows?stream=capture".into(),
            400,
            "\"limit\" is missing",
        ),
        (
            "/api/rows?stream=capture&limit=10&from=9&to=3".into(),
            400,
            "the range starts at axis value 9, above its end 3",
        ),
        ("/../../etc/passwd".into(), 404, "no such page"),
        ("/view.js/../../../etc/passwd".into(), 404, "no such page"),
        ("/api/nothing".into(), 404, "no such page"),
    ];
    for (target, status, says) in &cases {
        let (got, body) = get(a, target);
        let shown: String = target.chars().take(80).collect();
        assert_eq!(got, *status, "{shown}: {body}");
        assert!(body.contains(says), "{shown}: {says:?} in {body:?}");
        assert_eq!(
            body.trim_end().lines().count(),
            1,
            "{shown}: one line: {body:?}"
        );
    }
}

/// The `t` and `value` of the rows `rows(0, n)` writes for probe `p0`, `lo <= t <= hi`.
fn p0_rows(n: u64, lo: u64, hi: u64) -> Vec<(u64, f64)> {
    (0..n)
        .filter(|i| i % 2 == 0 && (lo..=hi).contains(&(i * 10)))
        .map(|i| (i * 10, (i % 17) as f64))
        .collect()
}

/// The page's binary survey (view/binary.rs): its JSON header, and its f64s in order.
fn unpack(bytes: &[u8]) -> (serde_json::Value, impl Iterator<Item = f64> + '_) {
    let length = u32::from_le_bytes(bytes[..4].try_into().unwrap()) as usize;
    let header: serde_json::Value = serde_json::from_slice(&bytes[4..4 + length]).unwrap();
    let start = (4 + length).next_multiple_of(8);
    let f64s = bytes[start..]
        .chunks_exact(8)
        .map(|b| f64::from_le_bytes(b.try_into().unwrap()));
    (header, f64s)
}

/// `(axis, value)` pairs of a rows answer: its axis values are offsets from its `origin`.
fn pairs(rows: &serde_json::Value) -> Vec<(u64, f64)> {
    let origin: u64 = rows["origin"].as_str().unwrap().parse().unwrap();
    let at = rows["at"].as_array().unwrap();
    let values = rows["fields"][0]["values"].as_array().unwrap();
    assert_eq!(rows["fields"][0]["field"], "value", "{rows}");
    at.iter()
        .zip(values)
        .map(|(a, v)| (origin + a.as_u64().unwrap(), v.as_f64().unwrap()))
        .collect()
}

#[test]
fn rows_for_a_deep_zoom_are_the_stored_rows_and_say_when_more_or_retired() {
    let s = Scratch::new();
    s.ok(&DECLARE_CAPTURE, "");
    s.ok(&["ingest", "capture", "-"], &rows(0, 2_000));
    let v = view(&s);
    let a = v.addr.as_str();
    let json = |target: &str| -> serde_json::Value {
        let (status, body) = get(a, target);
        assert_eq!(status, 200, "{target}: {body}");
        serde_json::from_str(&body).unwrap()
    };
    // Every row in the range, as ingested, in axis order.
    let all = json("/api/rows?stream=capture&track=r1,p0&from=1000&to=2990&limit=1000");
    assert_eq!(pairs(&all), p0_rows(2_000, 1_000, 2_990));
    assert_eq!(all["rows"], 100);
    assert_eq!(all["more"], false);
    // A limit below the rows there: the first of them, and `more`.
    let some = json("/api/rows?stream=capture&track=r1,p0&from=1000&to=2990&limit=7");
    assert_eq!(pairs(&some), p0_rows(2_000, 1_000, 2_990)[..7]);
    assert_eq!(some["more"], true);
    // A survey with `rows=`: the rows too where its buckets hold no more, none where they do.
    let near = json("/api/survey?stream=capture&track=r1,p0&from=1000&to=1190&budget=400&rows=50");
    assert_eq!(pairs(&near["rows"]), p0_rows(2_000, 1_000, 1_190));
    assert!(
        near["fields"][0]["buckets"]
            .as_array()
            .is_some_and(|b| !b.is_empty()),
        "{near}"
    );
    // In the page's columns, rows given whole leave the buckets out.
    let near_columns = json(
        "/api/survey?stream=capture&track=r1,p0&from=1000&to=1190&budget=400&rows=50&format=columns",
    );
    assert_eq!(pairs(&near_columns["rows"]), p0_rows(2_000, 1_000, 1_190));
    assert_eq!(
        near_columns["fields"][0]["count"],
        json!([]),
        "{near_columns}"
    );
    let far = json("/api/survey?stream=capture&track=r1,p0&budget=400&rows=50");
    assert_eq!(far.get("rows"), None, "1,000 rows are more than 50: {far}");
    // The whole range asked open-ended: the rows from the first to the last.
    let open = json("/api/survey?stream=capture&track=r1,p0&budget=4000&rows=2000");
    assert_eq!(pairs(&open["rows"]), p0_rows(2_000, 0, u64::MAX));
    // The page's columns are the survey's buckets, value for value.
    let target = "/api/survey?stream=capture&track=r1,p0&from=300&to=15000&budget=64";
    let (objects, columns) = (json(target), json(&format!("{target}&format=columns")));
    let origin: u64 = columns["origin"].as_str().unwrap().parse().unwrap();
    let buckets = objects["fields"][0]["buckets"].as_array().unwrap();
    let c = &columns["fields"][0];
    assert!(buckets.len() > 4, "{objects}");
    assert_eq!(c["count"].as_array().unwrap().len(), buckets.len());
    for (i, b) in buckets.iter().enumerate() {
        for point in ["first", "last", "min", "max"] {
            let at = origin + c[format!("{point}_at")][i].as_u64().unwrap();
            assert_eq!(Some(at), b[point]["axis"].as_u64(), "{point} of bucket {i}");
            assert_eq!(c[point][i], b[point]["value"], "{point} of bucket {i}");
        }
        assert_eq!(c["count"][i], b["count"]);
        assert_eq!(c["sum"][i], b["sum"]);
    }
    assert_eq!(columns["span"], json!(["300", "15000"]));
    assert_eq!(columns["level"], objects["level"]);
    // Its binary form holds the same numbers as f64s, read as a page reads them.
    let (status, bytes) = super::viewing::get_bytes(a, &format!("{target}&format=binary"));
    assert_eq!(status, 200);
    let (header, mut f64s) = unpack(&bytes);
    assert_eq!(header["origin"], columns["origin"]);
    assert_eq!(header["fields"][0]["buckets"], buckets.len());
    for name in [
        "first_at", "first", "last_at", "last", "min_at", "min", "max_at", "max", "count", "sum",
    ] {
        let column: Vec<f64> = (&mut f64s).take(buckets.len()).collect();
        let json: Vec<f64> = c[name]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        assert_eq!(column, json, "{name}");
    }
    assert_eq!(f64s.next(), None, "nothing after the columns");
    // Beneath a floor, the rows were retired: the answer says where they start.
    s.ok(&["trim", "capture", "--to-position", "1"], "");
    std::thread::sleep(REFRESH_AND_THEN);
    let beneath = json("/api/rows?stream=capture&track=r1,p0&from=0&to=100&limit=10");
    assert_eq!(beneath["rows"], 0, "{beneath}");
    assert!(beneath["retired_below"].as_u64().is_some(), "{beneath}");
}

#[test]
fn a_survey_past_what_an_f64_holds_exactly_goes_to_the_page_as_json_columns() {
    let s = Scratch::new();
    s.ok(&DECLARE_CAPTURE, "");
    let far = (1u64 << 60) + 1;
    s.ok(
        &["ingest", "capture", "-"],
        &format!("run,probe,t,value\nr1,p0,0,1\nr1,p0,{far},2\n"),
    );
    let v = view(&s);
    let target = "/api/survey?stream=capture&track=r1,p0&budget=8&rows=8&format=binary";
    let (status, body) = get(&v.addr, target);
    assert_eq!(status, 200, "{body}");
    // Not bytes: JSON, whose offsets are exact.
    let answer: serde_json::Value = serde_json::from_str(&body).unwrap();
    let origin: u64 = answer["origin"].as_str().unwrap().parse().unwrap();
    let rows = &answer["rows"];
    let at: Vec<u64> = rows["at"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| origin + v.as_u64().unwrap())
        .collect();
    assert_eq!(at, [0, far], "{answer}");
}

#[test]
fn the_pages_binary_rows_say_which_values_are_missing_and_keep_nan() {
    let s = Scratch::new();
    s.ok(&DECLARE_CAPTURE, "");
    s.ok(
        &["ingest", "capture", "-"],
        "run,probe,t,value\nr1,p0,10,1.5\nr1,p0,20,\nr1,p0,30,NaN\nr1,p0,40,-2\n",
    );
    let v = view(&s);
    let (status, bytes) = super::viewing::get_bytes(
        &v.addr,
        "/api/survey?stream=capture&track=r1,p0&budget=64&rows=64&format=binary",
    );
    assert_eq!(status, 200);
    let (header, f64s) = unpack(&bytes);
    let rows = &header["rows"];
    assert_eq!(rows["rows"], 4, "{header}");
    assert_eq!(rows["more"], false);
    assert_eq!(rows["fields"], json!(["value"]));
    // Every row whole: the buckets are left out.
    assert_eq!(header["fields"][0]["buckets"], 0, "{header}");
    let numbers: Vec<f64> = f64s.collect();
    let origin: f64 = rows["origin"].as_str().unwrap().parse().unwrap();
    let at: Vec<f64> = numbers[..4].iter().map(|a| origin + a).collect();
    assert_eq!(at, [10.0, 20.0, 30.0, 40.0]);
    let values = &numbers[4..8];
    assert_eq!(values[0].to_bits(), 1.5f64.to_bits(), "{values:?}");
    assert!(values[2].is_nan(), "NaN is a value: {values:?}");
    assert_eq!(values[3].to_bits(), (-2.0f64).to_bits(), "{values:?}");
    // The missing mask, a byte a row after the f64s.
    let mask = &bytes[bytes.len() - 4..];
    assert_eq!(mask, [0, 1, 0, 0], "the second row's value is missing");
}

#[test]
fn surveys_of_several_tracks_at_once_are_each_tracks_survey() {
    let s = Scratch::new();
    s.ok(&DECLARE_CAPTURE, "");
    s.ok(&["ingest", "capture", "-"], &rows(0, 4_000));
    let v = view(&s);
    let a = v.addr.as_str();
    let ask = "stream=capture&from=100&to=30000&budget=64&rows=40&format=binary";
    let (status, many) = super::viewing::get_bytes(
        a,
        &format!("/api/surveys?{ask}&track=r1,p0&track=r1,p1&track="),
    );
    assert_eq!(status, 200);
    // A count, then each answer's length and bytes, each from a multiple of 8.
    let count = u64::from_le_bytes(many[..8].try_into().unwrap());
    assert_eq!(count, 3);
    let mut at = 8;
    for track in ["r1,p0", "r1,p1", ""] {
        let length =
            usize::try_from(u64::from_le_bytes(many[at..at + 8].try_into().unwrap())).unwrap();
        let one = &many[at + 8..at + 8 + length];
        let (status, alone) =
            super::viewing::get_bytes(a, &format!("/api/survey?{ask}&track={track}"));
        assert_eq!(status, 200);
        assert_eq!(
            one,
            alone.as_slice(),
            "track {track:?}: the same bytes as asked alone"
        );
        at += 8 + length.next_multiple_of(8);
    }
    assert_eq!(at, many.len());
    for (target, says) in [
        (
            "/api/surveys?stream=capture&budget=8",
            "0 tracks: /api/surveys reads 1 to 8",
        ),
        (
            "/api/surveys?stream=capture&budget=8&track=a&track=b&track=c&track=d&track=e&track=f&track=g&track=h&track=i",
            "9 tracks",
        ),
        (
            "/api/surveys?stream=capture&budget=8&track=r1&format=json",
            "binary or columns",
        ),
        (
            "/api/surveys?stream=capture&budget=8&track=r1&form=3",
            "unknown parameter \"form\"",
        ),
        ("/api/surveys?stream=capture&budget=8&track=zz", "zz"),
    ] {
        let (status, body) = get(a, target);
        assert_eq!(status, 400, "{target}: {body}");
        assert!(body.contains(says), "{target}: {says:?} in {body:?}");
    }
}

#[test]
fn methods_other_than_get_are_refused_with_405() {
    let s = Scratch::new();
    s.ok(&DECLARE_CAPTURE, "");
    s.ok(&["ingest", "capture", "-"], &rows(0, 100));
    let v = view(&s);
    let a = v.addr.as_str();
    for method in ["POST", "PUT", "DELETE", "PATCH"] {
        let (got, body) = send(
            a,
            &format!(
                "{method} /api/streams HTTP/1.1\r\nHost: {a}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            ),
        );
        assert_eq!(got, 405, "{method}: {body}");
        assert!(body.contains("GET only"), "{body}");
    }
}

#[test]
fn an_oversized_request_head_and_an_absurd_range_are_answered_and_the_view_goes_on() {
    let s = Scratch::new();
    s.ok(&DECLARE_CAPTURE, "");
    s.ok(&["ingest", "capture", "-"], &rows(0, 2_000));
    let v = view(&s);
    let a = v.addr.as_str();
    // A 1 MB query string: hyper refuses the request head before it reaches the view (431, its
    // bound on a head's size), and the server goes on.
    let (got, _) = get(
        a,
        &format!("/api/survey?stream=capture&junk={}", "x".repeat(1 << 20)),
    );
    assert_eq!(got, 431);
    // An absurd but valid range answers (the whole u64 axis, one bucket's worth of cells).
    let (got, body) = get(
        a,
        "/api/survey?stream=capture&budget=40&from=0&to=18446744073709551615",
    );
    assert_eq!(got, 200, "{body}");
    // After all of that, the view answers as the command line does.
    let (got, body) = get(a, "/api/fold?stream=capture&agg=count");
    assert_eq!(got, 200, "{body}");
    let fold = s.ok(
        &["fold", "capture", "--agg", "count", "--format", "json"],
        "",
    );
    assert_eq!(body.trim(), fold.stdout.trim());
    let (got, page) = get(a, "/");
    assert_eq!(got, 200);
    assert!(page.contains("<script src=\"view.js\">"), "{page}");
}

#[test]
fn the_view_follows_barriers_a_writer_seals_beside_it() {
    let s = Scratch::new();
    s.ok(&DECLARE_CAPTURE, "");
    s.ok(&["ingest", "capture", "-"], &rows(0, 1_000));
    let v = view(&s);
    let watermark = |v: &Viewing| {
        let (got, body) = get(&v.addr, "/api/watermark?stream=capture");
        assert_eq!(got, 200, "{body}");
        let value: serde_json::Value = serde_json::from_str(&body).unwrap();
        value["watermark"].as_u64().unwrap()
    };
    assert_eq!(watermark(&v), 1_000);
    // A writer in another process seals more while the view runs.
    s.ok(&["ingest", "capture", "-"], &rows(1_000, 1_500));
    let mut seen = 0;
    for _ in 0..100 {
        seen = watermark(&v);
        if seen == 1_500 {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(seen, 1_500, "the view refreshes to the new barrier");
    let (got, body) = get(&v.addr, "/api/fold?stream=capture&agg=count");
    assert_eq!(got, 200);
    let fold = s.ok(
        &["fold", "capture", "--agg", "count", "--format", "json"],
        "",
    );
    assert_eq!(body.trim(), fold.stdout.trim());
}

#[test]
fn more_requests_at_once_than_the_bound_are_refused_with_503_and_the_view_goes_on() {
    let s = Scratch::new();
    // Enough rows that a percentile (folded from raw rows) keeps a read slot busy a while.
    {
        let decl = strata::Stream::new("m")
            .field("t", strata::FieldKind::U64)
            .field("value", strata::FieldKind::F64)
            .axis("t")
            .build()
            .unwrap();
        let mut store = strata::Store::create(
            s.dir.path().join("store"),
            strata::Config::default(),
            &[decl],
        )
        .unwrap();
        let t: Vec<u64> = (0..2_000_000).collect();
        let value: Vec<f64> = t.iter().map(|&t| (t % 1_000) as f64).collect();
        store
            .publish_columns(
                "m",
                1,
                &[],
                &[strata::Values::U64(&t), strata::Values::F64(&value)],
            )
            .unwrap();
        store.seal().unwrap();
    }
    let v = view(&s);
    let target = "/api/fold?stream=m&agg=p99";
    // Four times the bound, all sent before any is read: at most REQUESTS_MAX are admitted at
    // once, and the rest are refused at once rather than queued. (256 connections: as many as
    // the view holds at once, CONNECTIONS_MAX, so none is refused for that.)
    let mut connections: Vec<std::net::TcpStream> = (0..4 * 64)
        .map(|_| std::net::TcpStream::connect(&v.addr).unwrap())
        .collect();
    for connection in &mut connections {
        connection
            .write_all(get_head(&v.addr, target).as_bytes())
            .unwrap();
    }
    let want = s.ok(&["fold", "m", "--agg", "p99", "--format", "json"], "");
    let (mut answered, mut refused) = (0, 0);
    for connection in &mut connections {
        connection
            .set_read_timeout(Some(Duration::from_secs(120)))
            .unwrap();
        match answer(connection) {
            (200, body) => {
                assert_eq!(body.trim(), want.stdout.trim());
                answered += 1;
            }
            (503, body) => {
                assert_eq!(
                    body, "64 requests are being answered; try again\n",
                    "one line"
                );
                refused += 1;
            }
            (status, body) => panic!("{status}: {body}"),
        }
    }
    super::viewing::census(&format!(
        "256 requests at once: {answered} answered, {refused} refused with 503"
    ));
    assert!(refused > 0, "the bound was reached");
    assert!(
        answered >= 64,
        "{answered}: the bound's worth were admitted"
    );
    // Once they are done, the view answers again.
    let (status, body) = get(&v.addr, target);
    assert_eq!(status, 200, "{body}");
}

#[test]
fn open_hands_the_url_it_serves_to_the_desktops_browser() {
    use std::io::BufRead as _;
    use std::os::unix::fs::PermissionsExt as _;
    let s = Scratch::new();
    s.ok(&DECLARE_CAPTURE, "");
    s.ok(&["ingest", "capture", "-"], &rows(0, 100));
    // A stand-in for the desktop's opener, first on PATH: it writes down what it was given.
    let bin = s.dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let opener = bin.join("xdg-open");
    std::fs::write(
        &opener,
        "#!/bin/sh\nprintf '%s' \"$1\" > \"$(dirname \"$0\")/opened.tmp\"\nmv \"$(dirname \"$0\")/opened.tmp\" \"$(dirname \"$0\")/opened\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&opener, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_strata"))
        .args([
            "--store",
            "store",
            "view",
            "--addr",
            "127.0.0.1:0",
            "--open",
        ])
        .current_dir(s.dir.path())
        .env("PATH", path)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let viewing = Viewing {
        child,
        addr: String::new(),
    };
    let url = line.split(" at ").nth(1).unwrap().trim().to_owned();
    assert!(url.starts_with("http://127.0.0.1:"), "{line}");
    let opened = bin.join("opened");
    for _ in 0..200 {
        if opened.exists() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(std::fs::read_to_string(&opened).unwrap(), url);
    drop(viewing);
}

#[test]
fn answers_read_at_once_from_several_stores_never_go_back_while_a_writer_seals() {
    let s = Scratch::new();
    s.ok(&DECLARE_CAPTURE, "");
    s.ok(&["ingest", "capture", "-"], &rows(0, 100));
    let v = view(&s);
    let addr = v.addr.clone();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    // Four clients at once, so more than one of the view's stores answers; each answer with
    // when it was asked and when it came.
    let clients: Vec<_> = (0..4)
        .map(|_| {
            let (addr, done) = (addr.clone(), std::sync::Arc::clone(&done));
            std::thread::spawn(move || {
                let mut seen = Vec::new();
                while !done.load(std::sync::atomic::Ordering::Relaxed) {
                    let asked = std::time::Instant::now();
                    let (status, body) = get(&addr, "/api/watermark?stream=capture");
                    assert_eq!(status, 200, "{body}");
                    let value: serde_json::Value = serde_json::from_str(&body).unwrap();
                    seen.push((
                        asked,
                        std::time::Instant::now(),
                        value["watermark"].as_u64(),
                    ));
                }
                seen
            })
        })
        .collect();
    // A writer in another process seals a barrier every 2 rows, for a few seconds.
    s.ok(
        &[
            "ingest",
            "capture",
            "-",
            "--batch",
            "2",
            "--seal-every",
            "2",
        ],
        &rows(100, 1_100),
    );
    std::thread::sleep(REFRESH_AND_THEN);
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut answers: Vec<_> = clients
        .into_iter()
        .flat_map(|c| c.join().unwrap())
        .collect();
    // An answer given before another was asked is never newer than it.
    answers.sort_by_key(|&(_, came, _)| came);
    let mut by_asked = answers.clone();
    by_asked.sort_by_key(|&(asked, _, _)| asked);
    let (mut before, mut newest) = (0, None);
    for &(asked, _, watermark) in &by_asked {
        while before < answers.len() && answers[before].1 < asked {
            newest = newest.max(answers[before].2);
            before += 1;
        }
        assert!(
            watermark >= newest,
            "an answer of {watermark:?} after one of {newest:?}"
        );
    }
    let last = answers.iter().map(|a| a.2).max().flatten();
    super::viewing::census(&format!(
        "{} watermark answers from 4 clients at once, the last {last:?}",
        answers.len()
    ));
    assert_eq!(
        last,
        Some(1_100),
        "the view reached the writer's last barrier"
    );
}

/// Longer than the view's refresh interval (250 ms), so the last barrier is seen.
const REFRESH_AND_THEN: Duration = Duration::from_millis(600);

/// view.rs's `HEAD_DEADLINE_MS`: how long a connection may take to send a whole request head,
/// from its opening or from the end of the answer before.
const HEAD_DEADLINE: Duration = Duration::from_secs(5);
/// view.rs's `STALL_DEADLINE_MS`: how long an answer may wait on a client that reads none of it.
const STALL_DEADLINE: Duration = Duration::from_secs(10);
/// How late past a deadline the server may close: its timer and the kernel on a busy machine.
const LATE: Duration = Duration::from_secs(2);

/// How a connection ended, as its client saw it.
#[derive(Debug, PartialEq)]
enum Ended {
    /// The server closed it (an orderly end of the stream).
    Closed,
    /// The server reset it (closed with bytes of the client's still unread).
    Reset,
    /// Still open when the client gave up waiting.
    Open,
}

/// Reads `stream` until it ends or `wait` has passed: how it ended, when (from `since`), and
/// the bytes that came.
fn until_ended(
    stream: &mut std::net::TcpStream,
    since: std::time::Instant,
    wait: Duration,
) -> (Ended, Duration, Vec<u8>) {
    use std::io::Read as _;
    let mut got = Vec::new();
    let mut buf = vec![0; 1 << 16];
    loop {
        let left = wait.saturating_sub(since.elapsed());
        if left.is_zero() {
            return (Ended::Open, since.elapsed(), got);
        }
        stream.set_read_timeout(Some(left)).unwrap();
        match stream.read(&mut buf) {
            Ok(0) => return (Ended::Closed, since.elapsed(), got),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {
                return (Ended::Reset, since.elapsed(), got);
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(e) => panic!("reading: {e}"),
        }
    }
}

#[test]
fn a_half_sent_request_is_closed_within_the_head_deadline() {
    let s = Scratch::new();
    s.ok(&DECLARE_CAPTURE, "");
    s.ok(&["ingest", "capture", "-"], &rows(0, 100));
    let v = view(&s);
    // The head of a request, less the blank line that ends it: the server waits for more.
    let mut half = std::net::TcpStream::connect(&v.addr).unwrap();
    half.write_all(b"GET /api/watermark?stream=capture HTTP/1.1\r\nHost: x\r\n")
        .unwrap();
    let sent = std::time::Instant::now();
    let (ended, after, got) = until_ended(&mut half, sent, HEAD_DEADLINE + LATE + LATE);
    super::viewing::census(&format!(
        "a half-sent request: {ended:?} after {:.2} s (head deadline {:.1} s)",
        after.as_secs_f64(),
        HEAD_DEADLINE.as_secs_f64()
    ));
    assert_ne!(ended, Ended::Open, "still open after {after:.1?}");
    assert!(
        after <= HEAD_DEADLINE + LATE,
        "closed after {after:.2?}, past the head deadline {HEAD_DEADLINE:?}"
    );
    assert!(
        after >= HEAD_DEADLINE.mul_f64(0.9),
        "closed after {after:.2?}: a client has its whole head deadline"
    );
    assert!(got.is_empty(), "no answer to half a request: {got:?}");
    // The view answers others all along.
    let (status, body) = get(&v.addr, "/api/watermark?stream=capture");
    assert_eq!(status, 200, "{body}");
}

#[test]
fn a_kept_alive_connection_idle_past_the_head_deadline_is_closed() {
    use std::io::Read as _;
    let s = Scratch::new();
    s.ok(&DECLARE_CAPTURE, "");
    s.ok(&["ingest", "capture", "-"], &rows(0, 100));
    let v = view(&s);
    let mut kept = std::net::TcpStream::connect(&v.addr).unwrap();
    // One whole request on a connection kept alive (HTTP/1.1's default), its answer read.
    kept.write_all(b"GET /api/watermark?stream=capture HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    kept.set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let mut answer = Vec::new();
    let mut buf = [0; 4096];
    let body_at = loop {
        let n = kept.read(&mut buf).unwrap();
        assert!(n > 0, "the answer: {answer:?}");
        answer.extend_from_slice(&buf[..n]);
        if let Some(at) = answer.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
    };
    let head = String::from_utf8_lossy(&answer[..body_at]).to_lowercase();
    assert!(head.starts_with("http/1.1 200"), "{head}");
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("a content-length in {head}"));
    while answer.len() < body_at + length {
        let n = kept.read(&mut buf).unwrap();
        assert!(n > 0, "the body");
        answer.extend_from_slice(&buf[..n]);
    }
    let answered = std::time::Instant::now();
    // Then nothing: the server waits for the next request's head no longer than for a first.
    let (ended, after, got) = until_ended(&mut kept, answered, HEAD_DEADLINE + LATE + LATE);
    super::viewing::census(&format!(
        "a kept-alive connection left idle: {ended:?} after {:.2} s",
        after.as_secs_f64()
    ));
    assert_ne!(ended, Ended::Open, "still open after {after:.1?}");
    assert!(
        after <= HEAD_DEADLINE + LATE,
        "closed after {after:.2?}, past the head deadline {HEAD_DEADLINE:?}"
    );
    assert!(got.is_empty(), "{got:?}");
}

#[test]
fn an_answer_its_client_does_not_read_is_dropped_after_the_stall_deadline() {
    let s = Scratch::new();
    s.ok(&DECLARE_CAPTURE, "");
    s.ok(&["ingest", "capture", "-"], &rows(0, 100));
    let v = view(&s);
    let (_, script) = get(&v.addr, "/view.js");
    // Requests sent one after another on one connection (pipelined), and none of their answers
    // read: far more answer than the kernel's buffers on both sides hold, so the server's
    // writes wait on the client.
    let n_requests = 2_000;
    let wanted = n_requests * script.len();
    assert!(wanted > 20 << 20, "{wanted} bytes of answers");
    let mut stalled = std::net::TcpStream::connect(&v.addr).unwrap();
    stalled
        .set_write_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    stalled
        .write_all(&b"GET /view.js HTTP/1.1\r\nHost: x\r\n\r\n".repeat(n_requests))
        .unwrap();
    let sent = std::time::Instant::now();
    std::thread::sleep(STALL_DEADLINE + LATE);
    let looked = sent.elapsed();
    // Past the deadline the server has given up on it: what the kernel had buffered arrives,
    // then the end, not the rest of the answers.
    let (ended, after, got) = until_ended(&mut stalled, sent, STALL_DEADLINE + LATE * 5);
    super::viewing::census(&format!(
        "an unread answer, read from {:.1} s after its requests (stall deadline {:.0} s): {ended:?} at {:.2} s, {} of {wanted} bytes of answers taken",
        looked.as_secs_f64(),
        STALL_DEADLINE.as_secs_f64(),
        after.as_secs_f64(),
        got.len()
    ));
    assert_ne!(
        ended,
        Ended::Open,
        "still open after {after:.1?}, {} bytes read",
        got.len()
    );
    assert!(got.len() < wanted / 2, "{} of {wanted} bytes", got.len());
    let (status, body) = get(&v.addr, "/api/watermark?stream=capture");
    assert_eq!(status, 200, "{body}");
}

#[test]
fn a_connection_past_the_bound_is_refused_with_503_and_one_line() {
    let s = Scratch::new();
    s.ok(&DECLARE_CAPTURE, "");
    s.ok(&["ingest", "capture", "-"], &rows(0, 100));
    let v = view(&s);
    // view.rs's CONNECTIONS_MAX connections, each holding half a request head.
    let connections_max = 256;
    let held: Vec<std::net::TcpStream> = (0..connections_max)
        .map(|_| {
            let mut c = std::net::TcpStream::connect(&v.addr).unwrap();
            c.write_all(b"GET / HTTP/1.1\r\n").unwrap();
            c
        })
        .collect();
    let asked = std::time::Instant::now();
    let (status, body) = get(&v.addr, "/api/watermark?stream=capture");
    let took = asked.elapsed();
    assert_eq!(status, 503, "{body}");
    assert_eq!(body, "256 connections are open; try again\n", "one line");
    assert!(took < Duration::from_secs(1), "refused after {took:?}");
    // Once their head deadline has closed them, the view answers again.
    std::thread::sleep(HEAD_DEADLINE + LATE);
    let (status, body) = get(&v.addr, "/api/watermark?stream=capture");
    assert_eq!(status, 200, "{body}");
    drop(held);
}
