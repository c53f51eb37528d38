//! A running `strata view` and plain HTTP/1.1 requests to it, for the tests of `tests/it`
//! (`view_cli`), of `tests/view_live.rs` (the browser, the load) and of `benches/view.rs`. Each
//! uses a part of it.
#![allow(
    dead_code,
    reason = "shared by two test binaries and a bench, each using a part"
)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use strata::{FieldKind, Stream, StreamDecl};

/// The stream the browser test, the load test and the latency bench view: `t` on the axis, a
/// `value`, under tracks of a `run` and a `probe`.
pub fn probe_stream() -> StreamDecl {
    Stream::new("probe")
        .field("run", FieldKind::Str)
        .field("probe", FieldKind::Str)
        .field("t", FieldKind::U64)
        .field("value", FieldKind::F64)
        .track(["run", "probe"])
        .axis("t")
        .build()
        .unwrap()
}

/// A running `strata view`, killed when dropped.
pub struct Viewing {
    pub child: Child,
    /// `127.0.0.1:PORT`, as the URL it printed names it.
    pub addr: String,
}

impl Drop for Viewing {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `strata --store STORE view` in `cwd` on a free loopback port and waits for its URL.
pub fn view(cwd: &Path, store: &str) -> Viewing {
    let mut child = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["--store", store, "view", "--addr", "127.0.0.1:0"])
        .current_dir(cwd)
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

/// Sends `request` (a whole HTTP/1.1 request head) on a new connection and answers the status
/// and the body.
pub fn send(addr: &str, request: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    answer(&mut stream)
}

/// Reads a whole answer (to the end of the connection) and splits off its status and body.
pub fn answer(stream: &mut TcpStream) -> (u16, String) {
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

/// `GET target` on a new connection, closed after the answer: its status and its body's bytes
/// (an answer that is not text, the page's binary survey).
pub fn get_bytes(addr: &str, target: &str) -> (u16, Vec<u8>) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    stream.write_all(get_head(addr, target).as_bytes()).unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).unwrap();
    let end = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("a head in {} bytes", answer.len()));
    let head = String::from_utf8_lossy(&answer[..end]).into_owned();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("a status line in {head:?}"));
    (status, answer[end + 4..].to_vec())
}

/// `GET target` on a new connection, closed after the answer.
pub fn get(addr: &str, target: &str) -> (u16, String) {
    send(addr, &get_head(addr, target))
}

/// The request head of `GET target` on a connection closed after its answer.
pub fn get_head(addr: &str, target: &str) -> String {
    format!("GET {target} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n")
}

/// The peak resident memory (`VmHWM`) of a running process, in KiB; `None` once it has exited.
pub fn peak_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The resident memory (`VmRSS`) of a running process now, in KiB; `None` once it has exited.
pub fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Writes a census line to the test process's standard error itself, past the test harness's
/// capture, so that CI's log shows it for a test that passes.
pub fn census(line: &str) {
    let _ = writeln!(std::io::stderr().lock(), "census: {line}");
}
