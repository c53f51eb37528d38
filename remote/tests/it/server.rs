//! `S3Server`: a real S3-compatible server, moto's server mode, that the tests start on loopback and
//! stop themselves.
//!
//! The server is `moto.server` run by `python3` (found on PATH; moto's own `moto_server` script
//! need not be), under a few lines of Python that also watch its stdin: the test process holds the
//! write end of that pipe, so when the test process ends — normally, by a panic, or killed with
//! SIGKILL — the pipe closes and the server exits. No orphan outlives the test binary even though
//! the shared server lives in a static, whose `Drop` never runs. A server owned by a test is also
//! killed (and reaped) by its `Drop`, which runs on unwind.
//!
//! moto needs no credentials and keeps everything in memory; each test takes a bucket of its own
//! on the one server that the test binary shares.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use object_store::ObjectStore;
use object_store::RetryConfig;
use object_store::aws::AmazonS3Builder;

/// How to install what the server needs (`.ci/run` does it on a fresh machine).
const INSTALL: &str = "python3 -m pip install --user 'moto[server]>=5.1'";

/// How long moto may take to import and answer (it takes a second or two).
const READY_WITHIN: Duration = Duration::from_secs(60);

/// `python3 -c LAUNCH PORT`: moto's server on 127.0.0.1:PORT, ending when its stdin closes.
///
/// moto answers requests one at a time here. Its `PutObject` checks `If-None-Match: *` and then
/// stores the object without a lock between the two, so two racing creates can both succeed (moto
/// 5.2.1 let both win in round 154 of `racing_creates_have_one_winner` once Python switched threads
/// every microsecond; never in 2,000 rounds at Python's default 5 ms). S3 itself makes the check
/// and the write one step, so the lock restores S3's semantics rather than hiding a fault of
/// object_store's; connections are still accepted concurrently, each on a thread of its own.
/// (The lock wraps moto's WSGI application, `DomainDispatcherApplication`; a moto that renamed it
/// would fail to start, with its traceback in the panic.)
///
/// Request logging is turned down to warnings, so the log file holds only what went wrong.
const LAUNCH: &str = r#"
import logging, os, sys, threading
import moto.server
from moto.moto_server.werkzeug_app import DomainDispatcherApplication

def orphaned():
    sys.stdin.buffer.read()  # returns at end of file: the test process has gone
    os._exit(0)

threading.Thread(target=orphaned, daemon=True).start()
logging.getLogger("werkzeug").setLevel(logging.WARNING)

serve = DomainDispatcherApplication.__call__
one_at_a_time = threading.Lock()

def serialized(self, environ, start_response):
    with one_at_a_time:
        return serve(self, environ, start_response)

DomainDispatcherApplication.__call__ = serialized
moto.server.main(["--host", "127.0.0.1", "--port", sys.argv[1]])
"#;

/// moto's S3 server on a loopback port of its own, killed when dropped.
#[derive(Debug)]
pub struct S3Server {
    child: Child,
    port: u16,
}

/// Why a start failed: a port another process took in the meantime (worth another try), or
/// anything else (not).
enum StartError {
    PortTaken(String),
    Failed(String),
}

impl S3Server {
    /// Starts moto on a free loopback port and waits (bounded) until it answers.
    ///
    /// # Panics
    /// If python3 or moto is missing, or the server does not answer in time; the message names
    /// what failed, the server's output, and how to install moto.
    pub fn start() -> S3Server {
        let mut taken = Vec::new();
        for _ in 0..3 {
            match S3Server::try_start() {
                Ok(server) => return server,
                Err(StartError::PortTaken(why)) => taken.push(why),
                Err(StartError::Failed(why)) => {
                    panic!("could not start moto's S3 server: {why}\n(install it with: {INSTALL})")
                }
            }
        }
        panic!("could not start moto's S3 server, three ports taken: {taken:?}")
    }

    fn try_start() -> Result<S3Server, StartError> {
        // The kernel names a free port; moto binds it a moment later (another process taking it in
        // between is caught below and retried).
        let port = TcpListener::bind(("127.0.0.1", 0))
            .and_then(|listener| listener.local_addr())
            .map_err(|e| StartError::Failed(format!("no free loopback port: {e}")))?
            .port();
        let mut log = tempfile::tempfile()
            .map_err(|e| StartError::Failed(format!("no temporary file for its log: {e}")))?;
        let stderr = log
            .try_clone()
            .map_err(|e| StartError::Failed(format!("cannot share its log: {e}")))?;
        let stdout = log
            .try_clone()
            .map_err(|e| StartError::Failed(format!("cannot share its log: {e}")))?;
        let child = Command::new("python3")
            .args(["-c", LAUNCH, &port.to_string()])
            .stdin(Stdio::piped())
            .stdout(stdout)
            .stderr(stderr)
            .spawn()
            .map_err(|e| StartError::Failed(format!("cannot run python3: {e}")))?;
        let mut server = S3Server { child, port };

        let started = Instant::now();
        loop {
            match server.child.try_wait() {
                Ok(None) => {}
                Ok(Some(status)) => {
                    let output = read_log(&mut log);
                    let why = format!("python3 exited ({status}) before answering:\n{output}");
                    return Err(if output.contains("Address already in use") {
                        StartError::PortTaken(why)
                    } else {
                        StartError::Failed(why)
                    });
                }
                Err(e) => return Err(StartError::Failed(format!("cannot watch python3: {e}"))),
            }
            // ListBuckets: moto asks for no signature.
            if let Ok(response) = request(port, "GET", "/")
                && status(&response) == Some(200)
            {
                return Ok(server);
            }
            if started.elapsed() > READY_WITHIN {
                // `server` is dropped here, which kills it.
                let output = read_log(&mut log);
                return Err(StartError::Failed(format!(
                    "no answer on 127.0.0.1:{port} within {READY_WITHIN:?}:\n{output}"
                )));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The server's loopback port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Creates the bucket `bucket` and returns a store over it, as the tier will build one:
    /// path-style requests over plain HTTP, dummy credentials, conditional puts on.
    ///
    /// # Panics
    /// If the bucket cannot be created (it exists already, or its name is not a valid S3 name).
    pub fn store(&self, bucket: &str) -> Arc<dyn ObjectStore> {
        let response = request(self.port, "PUT", &format!("/{bucket}"))
            .unwrap_or_else(|e| panic!("creating bucket {bucket} on moto: {e}"));
        assert_eq!(
            status(&response),
            Some(200),
            "creating bucket {bucket} on moto:\n{response}"
        );
        // `new`, not `from_env`: no AWS_* variable of the machine's reaches the tests.
        let builder = AmazonS3Builder::new()
            .with_endpoint(format!("http://127.0.0.1:{}", self.port))
            .with_allow_http(true)
            .with_virtual_hosted_style_request(false)
            .with_region("us-east-1")
            .with_bucket_name(bucket)
            .with_access_key_id("strata-test")
            .with_secret_access_key("strata-test")
            // A test that fails should fail within seconds, not after three minutes of backoff.
            .with_retry(RetryConfig {
                max_retries: 2,
                retry_timeout: Duration::from_secs(10),
                ..RetryConfig::default()
            });
        Arc::new(strata_remote::conditional_s3(builder).expect("an S3 store over moto"))
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        // Errors mean it has gone already.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The server this test binary shares, started by the first test that asks for it. It lives in a
/// static, so its `Drop` never runs: it ends when the test process does (see the module's docs).
pub fn shared() -> &'static S3Server {
    static SERVER: OnceLock<S3Server> = OnceLock::new();
    SERVER.get_or_init(S3Server::start)
}

/// One HTTP/1.1 request with an empty body and no signature; the whole response, as text.
fn request(port: u16, method: &str, path: &str) -> std::io::Result<String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 0\r\n\
         Connection: close\r\n\r\n"
    )?;
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    Ok(response)
}

/// The status code of an HTTP response.
fn status(response: &str) -> Option<u16> {
    response.split_whitespace().nth(1)?.parse().ok()
}

/// What the server wrote to its stdout and stderr.
fn read_log(log: &mut File) -> String {
    let mut output = String::new();
    let _ = log.seek(SeekFrom::Start(0));
    let _ = log.read_to_string(&mut output);
    output
}

#[test]
fn dropping_the_server_stops_it() {
    let server = S3Server::start();
    let port = server.port();
    let pid = server.pid();
    assert!(
        request(port, "GET", "/").is_ok(),
        "moto answers while it is owned"
    );
    drop(server);
    if cfg!(target_os = "linux") {
        assert!(
            !std::path::Path::new(&format!("/proc/{pid}")).exists(),
            "moto's process {pid} outlived its S3Server"
        );
    }
    assert!(
        TcpStream::connect(("127.0.0.1", port)).is_err(),
        "port {port} still answers after its S3Server was dropped"
    );
}

#[test]
fn the_server_ends_when_its_stdin_closes() {
    // What happens to the shared server when the test process ends, however it ends.
    let mut server = S3Server::start();
    drop(server.child.stdin.take());
    let started = Instant::now();
    while server.child.try_wait().expect("watch moto").is_none() {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "moto still runs 10 s after its stdin closed"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
