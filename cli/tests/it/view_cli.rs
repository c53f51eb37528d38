//! `strata view` (#34, first part): its JSON API over a real socket. Hostile requests get a 4xx
//! with one line saying why, never a panic or a hang; the view follows barriers a writer in
//! another process seals.

use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use super::cli::{DECLARE_CAPTURE, Scratch};

/// A running `strata view`, killed when dropped.
struct Viewing {
    child: Child,
    addr: String,
}

impl Drop for Viewing {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn view(s: &Scratch) -> Viewing {
    let mut child = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["--store", "store", "view", "--addr", "127.0.0.1:0"])
        .current_dir(s.dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .unwrap_or_else(|| panic!("the URL in {line:?}"))
        .to_owned();
    Viewing { child, addr }
}

/// Sends `request` (a whole HTTP/1.1 request head) and answers the status and the body.
fn send(addr: &str, request: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).unwrap();
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let status = answer
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("a status line in {answer:?}"));
    let body = answer
        .split("\r\n\r\n")
        .nth(1)
        .unwrap_or_default()
        .to_owned();
    (status, body)
}

fn get(addr: &str, target: &str) -> (u16, String) {
    send(
        addr,
        &format!("GET {target} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"),
    )
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
            "above to=3",
        ),
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
