//! `strata --store DIR view [--addr 127.0.0.1:PORT]`: serves, read-only, one page and a small
//! JSON API over a store, so a browser pans and zooms over any track, each view a budgeted
//! survey (#34, docs/view.md).
//!
//! The store is opened once, as a reader (`Store::open_reader`: no lock, one pin, beside a
//! writer in another process), and refreshed before a request when the last refresh is older
//! than `REFRESH_EVERY`; a store without a `LOCK` (a copy) or on a read-only mount is opened
//! read-only. Each request reads from a [`strata::View`] of that one opening, taken as it
//! starts: reads run on as many threads as there are cores, none waiting for another or for a
//! refresh. The API:
//!
//! - `GET /api/streams`: every stream's declaration (fields and kinds, track, axis, measured).
//! - `GET /api/tracks?stream=S[&track=A,B]`: the tracks under a prefix (at most `TRACKS_MAX`).
//! - `GET /api/survey?stream=S[&track=A,B][&from=A][&to=B]&budget=N[&rows=M][&format=F]`:
//!   `strata survey`'s JSON, or for a page its columns (`format=columns`,
//!   `json::survey_columns`) or the same as f64s (`format=binary`, `binary.rs`); with `rows`,
//!   where its buckets hold at most `M` rows, those rows too (as `/api/rows` answers them,
//!   under `"rows"`).
//! - `GET /api/surveys?stream=S&track=A&track=B..[&from=A][&to=B]&budget=N[&rows=M][&format=F]`:
//!   those surveys of each track at once (at most `SURVEY_TRACKS_MAX`), as the page asks them:
//!   binary (a count, then each answer's length and bytes) or a JSON array of columns.
//! - `GET /api/fold?stream=S[&track=A,B][&from=A][&to=B]&agg=NAME`: `strata fold`'s JSON.
//! - `GET /api/rows?stream=S[&track=A,B][&from=A][&to=B]&limit=N`: at most `N` sealed rows in
//!   the axis range, axis and measured fields as columns, and whether more lie there: what the
//!   page draws when a window holds fewer rows than a survey's budget.
//! - `GET /api/watermark?stream=S`: the stream's watermark and the manifest position.
//!
//! What a request can grow is bounded: the query string (`QUERY_BYTES_MAX`), a survey's budget
//! (`BUDGET_MAX` points), the requests answered at once (`REQUESTS_MAX`; more are refused with
//! 503, never queued without bound), the reads running at once (two a core, at most
//! `READ_SLOTS_MAX`: the rest of the admitted requests wait for a slot; each a thread of the
//! blocking pool, over the one opening), and the tracks listed.
//! So are the connections held at once (`CONNECTIONS_MAX`; more are answered 503 and closed)
//! and how long each waits on its client (`HEAD_DEADLINE_MS`, `STALL_DEADLINE_MS`): `conn.rs`.
//! Every refusal is a 4xx (or 503) with one line saying why; only GET (and HEAD) is answered;
//! the static files are the binary's own, so no path reaches the file system. Every answer
//! carries a `Server-Timing: read;dur=MS` header: the server's own time for it, queueing
//! included, and a `Strata-Manifest` header: the manifest position it was read at.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::json;
use strata::{Aggregate, Config, EngineError, Reader, View, describe};

use super::args::ViewArgs;
use super::survey::Scope;
use super::{Failure, json};

mod binary;
mod conn;

/// The most bytes of a query string.
pub const QUERY_BYTES_MAX: usize = 4096;
/// The most points one survey may ask for: 4 a pixel over 16,384 device pixels.
pub const BUDGET_MAX: u64 = 1 << 16;
/// The most requests answered at once; one more is refused with 503.
pub const REQUESTS_MAX: usize = 64;
/// The most connections held at once; one more is answered 503 and closed (`conn.rs`). Four
/// times `REQUESTS_MAX`, room for browsers' idle kept-alive connections (about six a page)
/// beside the requests being answered; their descriptors stay well under the usual soft limit
/// of 1,024, and their buffers (a few KiB each, at most `HEAD_BYTES_MAX` read) a few MiB.
pub const CONNECTIONS_MAX: usize = 256;
/// How long a connection may take to send a request's whole head, from its opening or from
/// the end of the answer before it (so also how long a connection kept alive may sit idle). A
/// head is a packet or two; 5 s is ample on a slow network and bounds how long a client that
/// never finishes one holds a connection.
pub const HEAD_DEADLINE_MS: u64 = 5_000;
/// How long an answer may wait on a client that reads none of it before the connection is
/// dropped. Longer than the head's: a slow link takes a survey's answer (up to a few MB of
/// JSON) in steps, each a wait.
pub const STALL_DEADLINE_MS: u64 = 10_000;
/// The most bytes of a request's head (hyper's read buffer grows no further; a larger head is
/// refused with 431). A browser's head, cookies and all, is a few KiB; a query string is at
/// most `QUERY_BYTES_MAX`.
pub const HEAD_BYTES_MAX: usize = 32 * 1024;
/// The most reads running at once (threads reading the one opening), whatever the cores.
pub const READ_SLOTS_MAX: usize = 8;
/// The most rows one `/api/rows` answers (a page asks at most a survey's budget: it draws rows
/// only where they are fewer than the points a survey would spend).
pub const ROWS_MAX: u64 = BUDGET_MAX;
/// The most tracks one `/api/surveys` reads (a page overlays at most 8). Its surveys run on
/// threads of their own within the request's read slot, so at most `READ_SLOTS_MAX` times this
/// many read at once.
pub const SURVEY_TRACKS_MAX: usize = 8;
/// The most tracks `/api/tracks` lists.
pub const TRACKS_MAX: usize = 10_000;
/// How old the reader's view of the manifest may be before a request refreshes it.
const REFRESH_EVERY: Duration = Duration::from_millis(250);

const INDEX_HTML: &str = include_str!("view/index.html");
const VIEW_JS: &str = include_str!("view/view.js");
// uPlot 1.6.32 (MIT), vendored unchanged: view/uplot/VENDORED.md.
const UPLOT_JS: &str = include_str!("view/uplot/uPlot.iife.min.js");
const UPLOT_CSS: &str = include_str!("view/uplot/uPlot.min.css");

/// The served store.
struct Server {
    /// The one opening of the store, and when it last followed the manifest: locked only to
    /// refresh it (by one request at a time; the others read `current` meanwhile).
    opening: Mutex<Opening>,
    /// The view reads take: the opening's, as of its last refresh. Replaced only by a newer
    /// one, so no answer is older than one given before it.
    current: Mutex<View>,
    /// `REQUESTS_MAX` requests admitted at once.
    permits: tokio::sync::Semaphore,
    /// Reads running at once: two a core (`slots_for`), so admitted requests queue rather
    /// than each holding a thread and its read's memory.
    slots: Arc<tokio::sync::Semaphore>,
    dir: PathBuf,
}

struct Opening {
    store: Reader,
    refreshed: Instant,
}

/// A refusal: its status and one line.
struct Refusal(StatusCode, String);

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        (
            self.0,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            self.1 + "\n",
        )
            .into_response()
    }
}

fn bad(reason: impl Into<String>) -> Refusal {
    Refusal(StatusCode::BAD_REQUEST, reason.into())
}

impl From<EngineError> for Refusal {
    /// The engine's refusal in its own words, as every face says it: a mistake in the request
    /// is a 400, anything else the server's (500).
    fn from(error: EngineError) -> Refusal {
        let status = match error {
            EngineError::UnknownStream { .. }
            | EngineError::UnknownTrack { .. }
            | EngineError::TrackDepth { .. }
            | EngineError::InvertedRange { .. }
            | EngineError::BadRead { .. }
            | EngineError::Floor { .. }
            | EngineError::Refused { .. } => StatusCode::BAD_REQUEST,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        Refusal(status, error.to_string())
    }
}

pub fn run(dir: &Path, args: &ViewArgs) -> Result<ExitCode, Failure> {
    let store = open(dir)?;
    let server = Arc::new(Server {
        current: Mutex::new(store.view()),
        opening: Mutex::new(Opening {
            store,
            refreshed: Instant::now(),
        }),
        permits: tokio::sync::Semaphore::new(REQUESTS_MAX),
        slots: Arc::new(tokio::sync::Semaphore::new(read_slots())),
        dir: dir.to_owned(),
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_io()
        .enable_time()
        .build()
        .map_err(|e| Failure::new(format!("cannot start the server's runtime: {e}")))?;
    runtime.block_on(serve(server, args.addr, args.open))
}

/// Opens `url` in the desktop's browser, without waiting for it; a failure is only said.
fn open_in_browser(url: &str) {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    let spawned = std::process::Command::new(opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    match spawned {
        // Reaped on a thread of its own, so no zombie is left behind.
        Ok(mut child) => {
            std::thread::spawn(move || child.wait());
        }
        Err(e) => eprintln!("strata: cannot open a browser ({opener}: {e}); open {url} by hand"),
    }
}

/// How many reads run at once: the cores this process may use, at most
/// `READ_SLOTS_MAX`.
fn read_slots() -> usize {
    slots_for(std::thread::available_parallelism().map_or(1, std::num::NonZero::get))
}

/// The read slots for `cores` cores: two a core, at least one, at most `READ_SLOTS_MAX`. A page
/// asks one survey a track it overlays, all at once, and repaints when the last is answered:
/// three tracks on a 2-core machine with a slot a core waited for two surveys one after the
/// other (the last done at 2T), where three sharing the cores are done at 1.5T (the browser
/// test's repaint p99 ~55 → ~47 ms in release, #51).
fn slots_for(cores: usize) -> usize {
    (2 * cores).clamp(1, READ_SLOTS_MAX)
}

/// Opens the store as `strata query` does: a reader beside a writer, or read-only where no
/// writer can run, and never a read-only open that would hold the lock a writer needs (a
/// reader refused for another reason refuses the view, naming it), saying what damage it found.
fn open(dir: &Path) -> Result<Reader, Failure> {
    super::open_dir_to_read(dir, Config::default(), true)
        .map_err(|failure| Failure::new(format!("cannot view: {failure}")))
}

async fn serve(view: Arc<Server>, addr: SocketAddr, open: bool) -> Result<ExitCode, Failure> {
    let app = Router::new()
        .route(
            "/",
            get(|| async { page(INDEX_HTML, "text/html; charset=utf-8") }),
        )
        .route(
            "/view.js",
            get(|| async { page(VIEW_JS, "text/javascript; charset=utf-8") }),
        )
        .route(
            "/uPlot.iife.min.js",
            get(|| async { page(UPLOT_JS, "text/javascript; charset=utf-8") }),
        )
        .route(
            "/uPlot.min.css",
            get(|| async { page(UPLOT_CSS, "text/css; charset=utf-8") }),
        )
        .route("/api/streams", get(streams))
        .route("/api/tracks", get(tracks))
        .route("/api/survey", get(survey))
        .route("/api/surveys", get(surveys))
        .route("/api/fold", get(fold))
        .route("/api/rows", get(rows))
        .route("/api/watermark", get(watermark))
        .fallback(|| async { Refusal(StatusCode::NOT_FOUND, "no such page".to_owned()) })
        .layer(middleware::from_fn_with_state(Arc::clone(&view), guard))
        .with_state(Arc::clone(&view));
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| Failure::new(format!("cannot listen on {addr}: {e}")))?;
    let bound = listener
        .local_addr()
        .map_err(|e| Failure::new(format!("cannot listen on {addr}: {e}")))?;
    let url = format!("http://{bound}/");
    println!("strata: viewing {} at {url}", view.dir.display());
    if open {
        open_in_browser(&url);
    }
    match conn::accept(listener, app, conn::Limits::VIEW).await {}
}

fn page(body: &'static str, kind: &'static str) -> Response {
    ([(header::CONTENT_TYPE, kind)], body).into_response()
}

/// What every request passes first: the method, the query string's length, and a permit.
async fn guard(State(view): State<Arc<Server>>, request: Request, next: Next) -> Response {
    if request.method() != Method::GET && request.method() != Method::HEAD {
        return Refusal(
            StatusCode::METHOD_NOT_ALLOWED,
            format!(
                "{} is not served: the view answers GET only",
                request.method()
            ),
        )
        .into_response();
    }
    let query = request.uri().query().map_or(0, str::len);
    if query > QUERY_BYTES_MAX {
        return Refusal(
            StatusCode::URI_TOO_LONG,
            format!("the query string is {query} bytes; at most {QUERY_BYTES_MAX}"),
        )
        .into_response();
    }
    let Ok(_permit) = view.permits.try_acquire() else {
        return Refusal(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("{REQUESTS_MAX} requests are being answered; try again"),
        )
        .into_response();
    };
    let started = Instant::now();
    let mut response = next.run(request).await;
    // The server's own time for the answer, as browsers' developer tools and the latency
    // bench read it (https://www.w3.org/TR/server-timing/).
    let spent = format!("read;dur={:.3}", started.elapsed().as_secs_f64() * 1e3);
    if let Ok(value) = header::HeaderValue::from_str(&spent) {
        response.headers_mut().insert("server-timing", value);
    }
    response
}

/// The query string's parameters, each one of `known` (the endpoint's): a name given twice
/// is refused, and so is one the endpoint does not take (`form=100` for `from` would otherwise
/// answer the whole range without a word).
fn params(request: &axum::http::Uri, known: &[&str]) -> Result<HashMap<String, String>, Refusal> {
    let mut params = HashMap::new();
    let query = request.query().unwrap_or_default();
    for (name, value) in form_urlencoded::parse(query.as_bytes()) {
        if !known.contains(&name.as_ref()) {
            return Err(bad(format!(
                "unknown parameter {name:?}: this endpoint takes {}",
                known.join(", ")
            )));
        }
        if params.insert(name.to_string(), value.to_string()).is_some() {
            return Err(bad(format!("parameter {name:?} is given twice")));
        }
    }
    Ok(params)
}

/// The query string's parameters as [`params`] reads them, but for `track`, which may be given
/// once a track: its values in order.
fn params_and_tracks(
    request: &axum::http::Uri,
    known: &[&str],
) -> Result<(HashMap<String, String>, Vec<String>), Refusal> {
    let mut params = HashMap::new();
    let mut tracks = Vec::new();
    let query = request.query().unwrap_or_default();
    for (name, value) in form_urlencoded::parse(query.as_bytes()) {
        if name == "track" {
            tracks.push(value.into_owned());
        } else if !known.contains(&name.as_ref()) {
            return Err(bad(format!(
                "unknown parameter {name:?}: this endpoint takes track, {}",
                known.join(", ")
            )));
        } else if params.insert(name.to_string(), value.to_string()).is_some() {
            return Err(bad(format!("parameter {name:?} is given twice")));
        }
    }
    Ok((params, tracks))
}

/// A u64 parameter, if given.
fn number(params: &HashMap<String, String>, name: &str) -> Result<Option<u64>, Refusal> {
    params
        .get(name)
        .map(|text| {
            text.parse().map_err(|_| {
                bad(format!(
                    "{name}={text:?} is not a whole number from 0 to 2^64-1"
                ))
            })
        })
        .transpose()
}

fn required<'a>(params: &'a HashMap<String, String>, name: &str) -> Result<&'a str, Refusal> {
    params
        .get(name)
        .map(String::as_str)
        .ok_or_else(|| bad(format!("parameter {name:?} is missing")))
}

/// The track prefix `track=A,B` names (labels as `--track` spells them).
fn selection(params: &HashMap<String, String>) -> Result<Vec<String>, Refusal> {
    params
        .get("track")
        .map_or(Ok(Vec::new()), |word| labels(word))
}

/// The labels of a track prefix as `track=` spells it; none (every track) for an empty one.
fn labels(word: &str) -> Result<Vec<String>, Refusal> {
    if word.is_empty() {
        return Ok(Vec::new());
    }
    super::args::parse_track(word)
        .map(|t| t.0)
        .map_err(|e| bad(format!("track={word:?}: {e}")))
}

/// A survey's `budget`: required, 1 to `BUDGET_MAX` points.
fn budget(params: &HashMap<String, String>) -> Result<u64, Refusal> {
    let budget = number(params, "budget")?.ok_or_else(|| bad("parameter \"budget\" is missing"))?;
    if budget == 0 || budget > BUDGET_MAX {
        return Err(bad(format!(
            "budget={budget}: a survey spends 1 to {BUDGET_MAX} points"
        )));
    }
    Ok(budget)
}

/// A survey's `format`, `default` where none is given.
fn format(params: &HashMap<String, String>, default: Format) -> Result<Format, Refusal> {
    match params.get("format").map(String::as_str) {
        None => Ok(default),
        Some("json") => Ok(Format::Json),
        Some("columns") => Ok(Format::Columns),
        Some("binary") => Ok(Format::Binary),
        Some(other) => Err(bad(format!(
            "format={other:?}: a survey is answered as json (strata survey's document), or columns or binary (a page's)"
        ))),
    }
}

/// The range parameters, as the command line's flags (#48): `from`/`to` bound the axis (an
/// integer, or for a time axis an RFC 3339 time), `from_position`/`to_position` positions,
/// which a survey or fold (over the axis) refuses, naming the axis ones.
fn range_args(params: &HashMap<String, String>) -> Result<super::args::RangeArgs, Refusal> {
    Ok(super::args::RangeArgs {
        from: params.get("from").cloned(),
        to: params.get("to").cloned(),
        from_position: number(params, "from_position")?,
        to_position: number(params, "to_position")?,
    })
}

/// The axis range `range` names for a levelled read of `decl`'s stream; an absent end is
/// unbounded. One given backwards the engine refuses, as it does for every face.
fn axis(
    range: &super::args::RangeArgs,
    decl: &strata::StreamDecl,
    endpoint: &str,
) -> Result<(std::ops::Bound<u64>, std::ops::Bound<u64>), Refusal> {
    super::range::axis_only(range, decl, endpoint).map_err(|failure| {
        bad(failure
            .to_string()
            .replace("--from-position", "from_position")
            .replace("--to-position", "to_position")
            .replace("--from", "from")
            .replace("--to", "to"))
    })
}

/// Runs `read` on a view of the one opening (refreshed first if it is older than
/// `REFRESH_EVERY`) off the async workers, once a read slot is free, and answers its JSON.
/// How a survey is answered: `strata survey`'s JSON document, or for a page its columns, as
/// JSON or as f64s (`binary.rs`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Format {
    Json,
    Columns,
    Binary,
}

/// A read's answer: JSON, or the page's binary columns.
enum Answer {
    Json(String),
    Binary(Vec<u8>),
}

impl From<String> for Answer {
    fn from(json: String) -> Answer {
        Answer::Json(json)
    }
}

async fn read<A: Into<Answer>>(
    server: Arc<Server>,
    read: impl FnOnce(&View) -> Result<A, Refusal> + Send + 'static,
) -> Result<Response, Refusal> {
    let failed = |what: &str| Refusal(StatusCode::INTERNAL_SERVER_ERROR, format!("a read {what}"));
    // The slot goes with the read: a request dropped while its read runs (its client gone)
    // frees the slot only when the read is done.
    let slot = Arc::clone(&server.slots)
        .acquire_owned()
        .await
        .map_err(|_| failed("found the server closing"))?;
    let answer = tokio::task::spawn_blocking(move || {
        let _slot = slot;
        refresh_if_due(&server)?;
        // Taken as the read starts, and let go as it ends: the read pins its version, and
        // holds no lock while it runs.
        let view = server
            .current
            .lock()
            .map_err(|_| failed("panicked"))?
            .clone();
        let at = view.manifest_position().to_string();
        read(&view).map(|answer| (answer.into(), at))
    })
    .await
    .map_err(|e| failed(&format!("failed: {e}")))??;
    let (answer, at) = answer;
    let mut response = match answer {
        Answer::Json(json) => ([(header::CONTENT_TYPE, "application/json")], json).into_response(),
        Answer::Binary(bytes) => {
            ([(header::CONTENT_TYPE, "application/octet-stream")], bytes).into_response()
        }
    };
    // Where in the manifest the answer was read: a page following a writer compares it with
    // the watermark's to know whether what it drew is the newest.
    if let Ok(value) = header::HeaderValue::from_str(&at) {
        response.headers_mut().insert("strata-manifest", value);
    }
    Ok(response)
}

/// Follows the manifest if the last refresh is older than `REFRESH_EVERY`, and makes what it
/// read the view reads take. One request refreshes at a time: one that finds another doing it
/// reads the view before (a refresh is a listing and a read of what was appended). A refresh
/// the engine refuses refuses the request that tried it, in the engine's words.
fn refresh_if_due(server: &Server) -> Result<(), Refusal> {
    let panicked = || {
        Refusal(
            StatusCode::INTERNAL_SERVER_ERROR,
            "a read panicked".to_owned(),
        )
    };
    let mut opening = match server.opening.try_lock() {
        Ok(opening) => opening,
        Err(std::sync::TryLockError::WouldBlock) => return Ok(()),
        Err(std::sync::TryLockError::Poisoned(_)) => return Err(panicked()),
    };
    if !opening.store.is_reader() || opening.refreshed.elapsed() < REFRESH_EVERY {
        return Ok(());
    }
    if opening.store.refresh()? {
        *server.current.lock().map_err(|_| panicked())? = opening.store.view();
    }
    opening.refreshed = Instant::now();
    Ok(())
}

fn to_json(value: &serde_json::Value) -> Result<String, Refusal> {
    serde_json::to_string(value)
        .map_err(|e| Refusal(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))
}

async fn streams(
    State(view): State<Arc<Server>>,
    uri: axum::http::Uri,
) -> Result<Response, Refusal> {
    params(&uri, &[])?;
    read(view, |store| {
        let streams: Vec<_> = store
            .streams()
            .map(|decl| {
                let name = |idx: u16| decl.fields[usize::from(idx)].name.clone();
                json!({
                    "id": decl.id,
                    "fields": decl.fields.iter().map(|f| json!({"name": f.name, "kind": f.kind.to_string()})).collect::<Vec<_>>(),
                    "track": decl.track.iter().map(|&t| name(t)).collect::<Vec<_>>(),
                    "axis": decl.axis.map(name),
                    "time": decl.time.map(strata::TimeUnit::name),
                    "measured": decl.measured().into_iter().map(name).collect::<Vec<_>>(),
                    "declaration": describe(decl),
                })
            })
            .collect();
        to_json(&json!(streams))
    })
    .await
}

async fn tracks(
    State(view): State<Arc<Server>>,
    uri: axum::http::Uri,
) -> Result<Response, Refusal> {
    let params = params(&uri, &["stream", "track"])?;
    let stream = required(&params, "stream")?.to_owned();
    let selection = selection(&params)?;
    read(view, move |store| {
        let prefix: Vec<&str> = selection.iter().map(String::as_str).collect();
        let key =
            strata::index::TrackKey::encode(&prefix).map_err(|e| bad(format!("track: {e}")))?;
        store.declaration(&stream)?;
        let mut tracks = Vec::new();
        let mut more = false;
        for view in store.catalog().partitions(&stream, &key) {
            if tracks.len() == TRACKS_MAX {
                more = true;
                break;
            }
            tracks.push(view.track().labels().map(str::to_owned).collect::<Vec<_>>());
        }
        to_json(&json!({"stream": stream, "tracks": tracks, "more": more}))
    })
    .await
}

async fn survey(
    State(view): State<Arc<Server>>,
    uri: axum::http::Uri,
) -> Result<Response, Refusal> {
    let params = params(
        &uri,
        &[
            "stream",
            "track",
            "from",
            "to",
            "from_position",
            "to_position",
            "budget",
            "rows",
            "format",
        ],
    )?;
    let stream = required(&params, "stream")?.to_owned();
    let selection = selection(&params)?;
    let range = range_args(&params)?;
    let budget = budget(&params)?;
    let rows = row_limit(&params, "rows")?;
    let format = format(&params, Format::Json)?;
    read(view, move |store| {
        survey_answer(store, &stream, &selection, &range, budget, rows, format)
    })
    .await
}

/// `/api/surveys`: one survey a `track` (1 to `SURVEY_TRACKS_MAX`, each a prefix as `track=`
/// spells it, empty for every track), read at once on threads of their own in one read slot,
/// answered together: a page overlaying tracks asks once, not once a track (three fetches at
/// once cost a page on a 2-core machine ~9 ms where one costs ~4).
async fn surveys(
    State(view): State<Arc<Server>>,
    uri: axum::http::Uri,
) -> Result<Response, Refusal> {
    let (params, tracks) =
        params_and_tracks(&uri, &["stream", "from", "to", "budget", "rows", "format"])?;
    let stream = required(&params, "stream")?.to_owned();
    if tracks.is_empty() || tracks.len() > SURVEY_TRACKS_MAX {
        return Err(bad(format!(
            "{} tracks: /api/surveys reads 1 to {SURVEY_TRACKS_MAX} (track=A,B&track=C,D)",
            tracks.len()
        )));
    }
    let selections = tracks
        .iter()
        .map(|word| labels(word))
        .collect::<Result<Vec<_>, _>>()?;
    let range = range_args(&params)?;
    let budget = budget(&params)?;
    let rows = row_limit(&params, "rows")?;
    let format = format(&params, Format::Binary)?;
    if format == Format::Json {
        return Err(bad(
            "format=\"json\": /api/surveys answers binary or columns".to_owned(),
        ));
    }
    read(view, move |store| {
        let answer = |selection: &Vec<String>, format| {
            survey_answer(store, &stream, selection, &range, budget, rows, format)
        };
        let answers: Vec<Result<Answer, Refusal>> = std::thread::scope(|scope| {
            let running: Vec<_> = selections
                .iter()
                .map(|selection| scope.spawn(move || answer(selection, format)))
                .collect();
            running
                .into_iter()
                .map(|thread| {
                    thread.join().unwrap_or_else(|_| {
                        Err(Refusal(
                            StatusCode::INTERNAL_SERVER_ERROR,
                            "a read panicked".to_owned(),
                        ))
                    })
                })
                .collect()
        });
        let answers = answers.into_iter().collect::<Result<Vec<_>, _>>()?;
        if answers.iter().all(|a| matches!(a, Answer::Binary(_))) {
            // A count, then each answer's length and bytes, each from a multiple of 8.
            let mut out = Vec::new();
            out.extend_from_slice(&u64::try_from(answers.len()).unwrap_or(0).to_le_bytes());
            for answer in answers {
                if let Answer::Binary(bytes) = answer {
                    out.extend_from_slice(&u64::try_from(bytes.len()).unwrap_or(0).to_le_bytes());
                    out.extend_from_slice(&bytes);
                    out.resize(out.len().next_multiple_of(8), 0);
                }
            }
            return Ok(Answer::Binary(out));
        }
        // One past 2^53: every track's as JSON columns, in an array.
        let mut json = String::from("[");
        for (i, selection) in selections.iter().enumerate() {
            if i > 0 {
                json.push(',');
            }
            match answer(selection, Format::Columns)? {
                Answer::Json(one) => json.push_str(&one),
                Answer::Binary(_) => unreachable!("columns are JSON"),
            }
        }
        json.push(']');
        Ok(Answer::Json(json))
    })
    .await
}

/// One survey's answer in `format`, with its rows where asked (`rows`) and few enough.
fn survey_answer(
    store: &View,
    stream: &str,
    selection: &[String],
    range: &super::args::RangeArgs,
    budget: u64,
    rows: Option<u64>,
    format: Format,
) -> Result<Answer, Refusal> {
    let labels: Vec<&str> = selection.iter().map(String::as_str).collect();
    let decl = store.declaration(stream)?;
    let range = axis(range, decl, "survey")?;
    let survey = store.survey(stream, &labels, range, budget)?;
    let scope = Scope {
        decl,
        selection: &labels,
        budget,
        units: &[],
    };
    // `rows=N`: where the buckets hold at most N rows, the rows too, in the same answer (a
    // page's deep zoom is one round trip, not two).
    let rows = match (rows, survey.span) {
        (Some(limit), Some([lo, hi])) if super::survey::rows_beneath(&survey) <= limit => {
            let ends = |bound: std::ops::Bound<u64>, span_end: u64| match bound {
                std::ops::Bound::Unbounded => std::ops::Bound::Included(span_end),
                bound => bound,
            };
            let within = (ends(range.0, lo), ends(range.1, hi));
            Some(read_rows(store, decl, &labels, within, limit)?)
        }
        _ => None,
    };
    let mut survey = survey;
    if format != Format::Json && rows.as_ref().is_some_and(RowsRead::whole) {
        // The page draws the rows, every one of them: the buckets would be bytes to parse.
        for field in &mut survey.fields {
            field.buckets.clear();
        }
    }
    if format == Format::Binary {
        let part = match &rows {
            None => binary::RowsPart::None,
            Some(RowsRead::Retired(floor)) => binary::RowsPart::Retired(*floor),
            Some(RowsRead::Rows {
                axis,
                columns,
                more,
            }) => binary::RowsPart::Rows(binary::Rows {
                axis,
                columns,
                more: *more,
            }),
        };
        // A number past 2^53 has no exact f64: such an answer goes as JSON columns.
        if let Some(bytes) = binary::survey(&survey, &scope, &part) {
            return Ok(Answer::Binary(bytes));
        }
    }
    let answer = if format == Format::Json {
        json::survey(&survey, &scope)
    } else {
        json::survey_columns(&survey, &scope)
    }
    .map_err(|e| Refusal(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
    Ok(Answer::Json(match rows {
        Some(rows) => with_rows(answer, &rows.json()?),
        None => answer,
    }))
}

async fn fold(State(view): State<Arc<Server>>, uri: axum::http::Uri) -> Result<Response, Refusal> {
    let params = params(
        &uri,
        &[
            "stream",
            "track",
            "from",
            "to",
            "from_position",
            "to_position",
            "agg",
        ],
    )?;
    let stream = required(&params, "stream")?.to_owned();
    let selection = selection(&params)?;
    let range = range_args(&params)?;
    let word = required(&params, "agg")?;
    let aggregate: Aggregate =
        super::args::parse_aggregate(word).map_err(|e| bad(format!("agg={word:?}: {e}")))?;
    read(view, move |store| {
        let labels: Vec<&str> = selection.iter().map(String::as_str).collect();
        let range = axis(&range, store.declaration(&stream)?, "fold")?;
        let stats = store.fold(&stream, &labels, range, aggregate)?;
        json::fold(&stats).map_err(|e| Refusal(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))
    })
    .await
}

/// The `limit` parameter of a row read (`/api/rows`' `limit`, `/api/survey`'s `rows`).
fn row_limit(params: &HashMap<String, String>, name: &str) -> Result<Option<u64>, Refusal> {
    let limit = number(params, name)?;
    if let Some(limit) = limit
        && (limit == 0 || limit > ROWS_MAX)
    {
        return Err(bad(format!(
            "{name}={limit}: a page reads 1 to {ROWS_MAX} rows at once"
        )));
    }
    Ok(limit)
}

async fn rows(State(view): State<Arc<Server>>, uri: axum::http::Uri) -> Result<Response, Refusal> {
    let params = params(&uri, &["stream", "track", "from", "to", "limit"])?;
    let stream = required(&params, "stream")?.to_owned();
    let selection = selection(&params)?;
    let range = range_args(&params)?;
    let limit =
        row_limit(&params, "limit")?.ok_or_else(|| bad("parameter \"limit\" is missing"))?;
    read(view, move |store| {
        let labels: Vec<&str> = selection.iter().map(String::as_str).collect();
        let decl = store.declaration(&stream)?;
        let range = axis(&range, decl, "rows")?;
        read_rows(store, decl, &labels, range, limit)?.json()
    })
    .await
}

/// Rows a page reads: at most `limit` of them, or where they were retired.
enum RowsRead<'d> {
    /// The range reaches beneath a floor: rows beneath it were retired (trimmed, or by
    /// retention), and their cells are all there is to draw, which the page says.
    Retired(u64),
    Rows {
        axis: Vec<u64>,
        columns: Vec<(&'d str, Vec<strata::Value>)>,
        more: bool,
    },
}

impl RowsRead<'_> {
    /// Every row of the range.
    fn whole(&self) -> bool {
        matches!(self, RowsRead::Rows { more: false, .. })
    }

    /// As [`json::rows`] writes them; `{"rows": 0, "more": true, "retired_below": FLOOR}`
    /// where retired.
    fn json(&self) -> Result<String, Refusal> {
        match self {
            RowsRead::Retired(floor) => {
                to_json(&json!({"rows": 0, "more": true, "retired_below": floor}))
            }
            RowsRead::Rows {
                axis,
                columns,
                more,
            } => json::rows(axis, columns, *more)
                .map_err(|e| Refusal(StatusCode::INTERNAL_SERVER_ERROR, e.to_string())),
        }
    }
}

/// At most `limit` rows of `decl`'s stream under `labels` in the axis range: the axis and
/// each measured field.
fn read_rows<'d>(
    store: &View,
    decl: &'d strata::StreamDecl,
    labels: &[&str],
    range: (std::ops::Bound<u64>, std::ops::Bound<u64>),
    limit: u64,
) -> Result<RowsRead<'d>, Refusal> {
    let stream = &decl.id;
    let Some(axis_idx) = decl.axis.map(usize::from) else {
        return Err(bad(format!(
            "stream {stream:?} declares no axis, so the page cannot place its rows"
        )));
    };
    let measured = decl.measured();
    let mut axis_values = Vec::new();
    let mut columns: Vec<(&str, Vec<strata::Value>)> = measured
        .iter()
        .map(|&idx| (decl.fields[usize::from(idx)].name.as_str(), Vec::new()))
        .collect();
    let mut more = false;
    let found = match store.query_iter_within(stream, labels, .., range) {
        Err(EngineError::Floor { floor, .. }) => return Ok(RowsRead::Retired(floor)),
        found => found?,
    };
    for row in found {
        if axis_values.len() as u64 == limit {
            more = true;
            break;
        }
        let mut values = row?.values;
        let strata::Value::U64(at) = values[axis_idx] else {
            return Err(Refusal(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("stream {stream:?}: a row's axis value is not a u64"),
            ));
        };
        axis_values.push(at);
        for (&idx, (_, column)) in measured.iter().zip(&mut columns) {
            column.push(std::mem::replace(
                &mut values[usize::from(idx)],
                strata::Value::Null,
            ));
        }
    }
    Ok(RowsRead::Rows {
        axis: axis_values,
        columns,
        more,
    })
}

/// A survey's JSON object with a `"rows"` member added.
fn with_rows(mut survey: String, rows: &str) -> String {
    debug_assert!(survey.ends_with('}'), "a survey is one JSON object");
    survey.pop();
    survey.push_str(",\"rows\":");
    survey.push_str(rows);
    survey.push('}');
    survey
}

async fn watermark(
    State(view): State<Arc<Server>>,
    uri: axum::http::Uri,
) -> Result<Response, Refusal> {
    let params = params(&uri, &["stream"])?;
    let stream = required(&params, "stream")?.to_owned();
    read(view, move |store| {
        let watermark = store.watermark(&stream, &[])?;
        to_json(&json!({
            "stream": stream,
            "watermark": watermark,
            "manifest": store.manifest_position().to_string(),
        }))
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_slots_are_two_a_core_and_stop_at_their_bound() {
        assert_eq!(slots_for(0), 1);
        assert_eq!(slots_for(1), 2);
        assert_eq!(slots_for(2), 4);
        assert_eq!(slots_for(READ_SLOTS_MAX / 2), READ_SLOTS_MAX);
        assert_eq!(slots_for(READ_SLOTS_MAX / 2 + 1), 8, "the bound is reached");
        assert_eq!(slots_for(1024), 8);
    }
}
