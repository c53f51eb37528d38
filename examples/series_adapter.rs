//! A host embedding strata as the durable tier beneath an in-memory stream window.
//!
//! The window is a bounded ring of recent rows. Every row published goes into the ring and is fed
//! to the served store; a ticker seals on a cadence. On restart the ring is empty, so the host
//! asks the store for the position it is durable through (a seal with nothing staged costs no
//! barrier) and stands the window on it. A read then splices: at or beneath the watermark is the
//! store's, above it the ring's — exactly one tier owns each position, and neither sorts.
//!
//! `cargo run --example series_adapter` (CI runs it; it exits non-zero if the splice is wrong).

use std::collections::VecDeque;
use std::ops::Bound::{Included, Unbounded};
use std::time::Duration;

use strata::{
    Config, FieldKind, Row, Series, ServeConfig, Served, Store, StoredRow, Stream, Value,
};

const WINDOW_ROWS_MAX: usize = 256;

/// The in-memory window: recent rows and the floor it stands on (everything at or beneath the
/// floor belongs to the tier below).
struct Window {
    rows: VecDeque<StoredRow>,
    floor: Option<u64>,
}

impl Window {
    fn push(&mut self, position: u64, values: Row) {
        self.rows.push_back(StoredRow { position, values });
        while self.rows.len() > WINDOW_ROWS_MAX {
            // Eviction raises the floor to the evicted row's position. Positions are not unique,
            // so the floor's own stamp belongs wholly to the tier beneath: drop its rows too.
            let evicted = self.rows.pop_front().map(|r| r.position);
            self.floor = evicted.max(self.floor);
            while self
                .rows
                .front()
                .is_some_and(|r| Some(r.position) <= self.floor)
            {
                self.rows.pop_front();
            }
        }
    }

    /// Rows above the floor, from one snapshot of the ring.
    fn above_floor(&self) -> (Option<u64>, Vec<StoredRow>) {
        (
            self.floor,
            self.rows
                .iter()
                .filter(|r| Some(r.position) > self.floor)
                .cloned()
                .collect(),
        )
    }
}

struct Host {
    window: Window,
    store: Served,
}

impl Host {
    async fn publish(&mut self, position: u64, row: Row) -> Result<(), Box<dyn std::error::Error>> {
        self.window.push(position, row.clone());
        self.store.publish("capture", position, vec![row]).await?;
        Ok(())
    }

    /// The splice: the window's floor and rows come from one snapshot; at or beneath the floor is
    /// asked of the store, capped at the same floor.
    async fn query(&mut self) -> Result<Vec<StoredRow>, Box<dyn std::error::Error>> {
        let (floor, above) = self.window.above_floor();
        let mut rows = match floor {
            Some(floor) => {
                self.store
                    .rows("capture", &[], Unbounded, Included(floor))
                    .await?
            }
            None => Vec::new(),
        };
        rows.extend(above);
        Ok(rows)
    }
}

fn row(t: u64) -> Row {
    vec![
        Value::Str(format!("probe_{}", t % 3)),
        Value::U64(t),
        Value::F64((t as f64 * 0.1).sin()),
    ]
}

async fn boot(dir: &std::path::Path) -> Result<Host, Box<dyn std::error::Error>> {
    let decl = Stream::new("capture")
        .field("probe", FieldKind::Str)
        .field("t", FieldKind::U64)
        .field("value", FieldKind::F64)
        .track(["probe"])
        .axis("t")
        .build()?;
    let store = Store::open_or_create(dir, Config::default(), &[decl])?;
    let config = ServeConfig::default().seal_interval(Some(Duration::from_millis(20)));
    let mut served = Served::spawn(store, config);
    // Stand the window on what the tier below is durable through.
    let floor = served.seal("capture", &[]).await?;
    Ok(Host {
        window: Window {
            rows: VecDeque::new(),
            floor,
        },
        store: served,
    })
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let mut host = boot(dir.path()).await?;
    assert_eq!(
        host.window.floor, None,
        "a new store is durable through nothing"
    );
    for position in 1..=1000 {
        host.publish(position, row(position)).await?;
        if position % 100 == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await; // let the cadence seal
        }
    }
    // Reads beneath the window see what seals made durable: seal, then read.
    host.store.seal("capture", &[]).await?;
    let first_life = host.query().await?;
    host.store.stop().await?; // a clean stop closes a last barrier
    println!(
        "first run: published 1000 rows; the window holds {}",
        host.window.rows.len()
    );

    // Restart: the window is empty and stands on the store's watermark.
    let mut host = boot(dir.path()).await?;
    println!(
        "restart: the store is durable through position {:?}",
        host.window.floor
    );
    assert_eq!(
        host.window.floor,
        Some(1000),
        "the clean stop sealed everything"
    );
    for position in 1001..=1100 {
        host.publish(position, row(position)).await?;
    }
    let spliced = host.query().await?;
    let positions: Vec<u64> = spliced.iter().map(|r| r.position).collect();
    let want: Vec<u64> = (1..=1100).collect();
    assert_eq!(
        positions, want,
        "the splice holds every position exactly once, in order"
    );
    assert_eq!(
        spliced[..1000],
        first_life[..],
        "history read beneath the window is what was published"
    );
    println!(
        "splice: {} rows from the store at or beneath {:?}, {} from the window above it",
        spliced.len() - host.window.rows.len(),
        host.window.floor,
        host.window.rows.len()
    );
    host.store.stop().await?;
    Ok(())
}
