//! The `Series` adapter surface over `Served` and over a `Store` used directly.

use std::ops::Bound;

use strata_levels::Aggregate;

use crate::error::EngineError;
use crate::series::{BeneathWindow, Series, no_buckets, no_stats, or_nothing};
use crate::store::Store;
use crate::value::Row;
use crate::view::read::StoredRow;
use crate::view::survey::{FieldBuckets, FieldStat};
use crate::write::retention::Swept;
use crate::write::trim::Trimmed;

use super::{Command, Served, span, strs};

impl Series for Served {
    async fn publish(
        &mut self,
        stream: &str,
        position: u64,
        rows: Vec<Row>,
    ) -> Result<(), EngineError> {
        Served::publish(self, stream, position, rows).await
    }

    async fn rows(
        &mut self,
        stream: &str,
        track: &[String],
        start: Bound<u64>,
        end: Bound<u64>,
    ) -> Result<Vec<StoredRow>, BeneathWindow> {
        let span = span(stream, track, start, end);
        self.ask(|reply| Command::Rows(span, reply)).await
    }

    async fn buckets(
        &mut self,
        stream: &str,
        track: &[String],
        start: Bound<u64>,
        end: Bound<u64>,
        budget: u64,
    ) -> Result<Vec<FieldBuckets>, BeneathWindow> {
        let span = span(stream, track, start, end);
        self.ask(|reply| Command::Buckets(span, budget, reply))
            .await
    }

    async fn aggregate(
        &mut self,
        stream: &str,
        track: &[String],
        start: Bound<u64>,
        end: Bound<u64>,
        kind: Aggregate,
    ) -> Result<Vec<FieldStat>, BeneathWindow> {
        let span = span(stream, track, start, end);
        self.ask(|reply| Command::Aggregate(span, kind, reply))
            .await
    }

    async fn seal(&mut self, stream: &str, track: &[String]) -> Result<Option<u64>, BeneathWindow> {
        let (stream, track) = (stream.to_owned(), track.to_vec());
        self.ask(|reply| Command::Seal(stream, track, reply)).await
    }

    async fn trim_to(&mut self, stream: &str, horizon: u64) -> Result<Option<u64>, BeneathWindow> {
        let trimmed = Served::trim_to(self, stream, horizon).await?;
        Ok(trimmed.floors.iter().map(|(_, f)| f.position).max())
    }

    async fn retire(
        &mut self,
        stream: &str,
        track: &[String],
    ) -> Result<Option<u64>, BeneathWindow> {
        let (_, floor) = self
            .retire_floor(stream.to_owned(), Retiring::Series(track.to_vec()))
            .await?;
        Ok(floor)
    }
}

/// The store itself, unserved: each call runs on the caller's task (a barrier's syncs block
/// it). What `Served` answers, the same way.
impl Series for Store {
    async fn publish(
        &mut self,
        stream: &str,
        position: u64,
        rows: Vec<Row>,
    ) -> Result<(), EngineError> {
        Store::publish(self, stream, position, &rows)
    }

    async fn rows(
        &mut self,
        stream: &str,
        track: &[String],
        start: Bound<u64>,
        end: Bound<u64>,
    ) -> Result<Vec<StoredRow>, BeneathWindow> {
        let track: Vec<&str> = track.iter().map(String::as_str).collect();
        Ok(or_nothing(
            self.query(stream, &track, (start, end)),
            Vec::new,
        )?)
    }

    async fn buckets(
        &mut self,
        stream: &str,
        track: &[String],
        start: Bound<u64>,
        end: Bound<u64>,
        budget: u64,
    ) -> Result<Vec<FieldBuckets>, BeneathWindow> {
        let track: Vec<&str> = track.iter().map(String::as_str).collect();
        let answer = self.survey(stream, &track, (start, end), budget);
        Ok(or_nothing(answer.map(|survey| survey.fields), || {
            no_buckets(self.stream(stream))
        })?)
    }

    async fn aggregate(
        &mut self,
        stream: &str,
        track: &[String],
        start: Bound<u64>,
        end: Bound<u64>,
        kind: Aggregate,
    ) -> Result<Vec<FieldStat>, BeneathWindow> {
        let track: Vec<&str> = track.iter().map(String::as_str).collect();
        let answer = self.fold(stream, &track, (start, end), kind);
        Ok(or_nothing(answer, || no_stats(self.stream(stream), kind))?)
    }

    async fn seal(&mut self, stream: &str, track: &[String]) -> Result<Option<u64>, BeneathWindow> {
        let track: Vec<&str> = track.iter().map(String::as_str).collect();
        Store::seal(self)?;
        Ok(self.watermark(stream, &track)?)
    }

    async fn trim_to(&mut self, stream: &str, horizon: u64) -> Result<Option<u64>, BeneathWindow> {
        Ok(seal_and_trim(self, stream, horizon)?
            .floors
            .iter()
            .map(|(_, f)| f.position)
            .max())
    }

    async fn retire(
        &mut self,
        stream: &str,
        track: &[String],
    ) -> Result<Option<u64>, BeneathWindow> {
        Ok(seal_and_retire(self, stream, &Retiring::Series(track.to_vec()))?.1)
    }
}

/// Closes a barrier for everything staged, then trims: what `Served::trim_to` runs.
pub(super) fn seal_and_trim(
    store: &mut Store,
    stream: &str,
    horizon: u64,
) -> Result<Trimmed, EngineError> {
    Store::seal(store)?;
    Store::trim_to(store, stream, horizon)
}

/// What a retirement ends.
pub(super) enum Retiring {
    /// The tracks under a selection (`Store::retire`).
    Tracks(Vec<String>),
    /// Every track (`Store::retire_all`).
    All,
    /// What `Series::retire` names: every track for an empty selection, and a selection with
    /// nothing live (or nothing ever sealed) ends nothing and answers its floor, since a host's
    /// tracks are typed and such a selection is no typo.
    Series(Vec<String>),
}

/// Closes a barrier for everything staged, then retires: what `Served::retire` and
/// `Served::retire_all` run. Answers the record and the selection's raw floor (by position)
/// after.
pub(super) fn seal_and_retire(
    store: &mut Store,
    stream: &str,
    what: &Retiring,
) -> Result<(Swept, Option<u64>), EngineError> {
    Store::seal(store)?;
    let (swept, track) = match what {
        Retiring::Tracks(track) => (
            Store::retire(store, stream, &strs(track))?,
            track.as_slice(),
        ),
        Retiring::All => (Store::retire_all(store, stream)?, &[][..]),
        Retiring::Series(track) => {
            let retired = if track.is_empty() {
                Store::retire_all(store, stream)
            } else {
                Store::retire(store, stream, &strs(track))
            };
            let swept = match retired {
                Ok(swept) => swept,
                Err(EngineError::NothingToRetire { .. } | EngineError::UnknownTrack { .. }) => {
                    Swept::nothing(stream)
                }
                Err(error) => return Err(error),
            };
            (swept, track.as_slice())
        }
    };
    let prefix = store.selection_key(stream, &strs(track))?;
    Ok((swept, store.raw_floor(stream, &prefix, false)))
}
