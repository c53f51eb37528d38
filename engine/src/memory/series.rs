//! The `Series` adapter surface over the in-memory reference.

use std::ops::Bound;

use strata_levels::Aggregate;

use crate::error::EngineError;
use crate::series::{BeneathWindow, Series, no_buckets, no_stats, or_nothing};
use crate::value::Row;
use crate::view::read::StoredRow;
use crate::view::survey::{FieldBuckets, FieldStat};

use super::{MemorySeries, check, declared_mut};

fn strs(track: &[String]) -> Vec<&str> {
    track.iter().map(String::as_str).collect()
}

impl Series for MemorySeries {
    async fn publish(
        &mut self,
        stream: &str,
        position: u64,
        rows: Vec<Row>,
    ) -> Result<(), EngineError> {
        self.with(|streams| {
            let (decl, m) = declared_mut(streams, stream)?;
            check(&decl, m, position, &rows)?;
            m.staged.extend(rows.into_iter().map(|row| (position, row)));
            Ok(())
        })
    }

    async fn rows(
        &mut self,
        stream: &str,
        track: &[String],
        start: Bound<u64>,
        end: Bound<u64>,
    ) -> Result<Vec<StoredRow>, BeneathWindow> {
        Ok(or_nothing(
            self.query(stream, &strs(track), (start, end)),
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
        let answer = self.survey(stream, &strs(track), (start, end), budget);
        let decl = self.with(|s| s.get(stream).and_then(|m| m.decl.clone()));
        Ok(or_nothing(answer.map(|survey| survey.fields), || {
            no_buckets(decl.as_ref())
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
        let answer = self.fold(stream, &strs(track), (start, end), kind);
        let decl = self.with(|s| s.get(stream).and_then(|m| m.decl.clone()));
        Ok(or_nothing(answer, || no_stats(decl.as_ref(), kind))?)
    }

    async fn seal(&mut self, stream: &str, track: &[String]) -> Result<Option<u64>, BeneathWindow> {
        self.selection(stream, &strs(track))?;
        Ok(self.with(|streams| {
            for m in streams.values_mut() {
                if let Some((position, _)) = m.staged.last() {
                    m.watermark = Some(*position);
                }
                let staged = std::mem::take(&mut m.staged);
                m.sealed.extend(staged);
            }
            streams[stream].watermark
        }))
    }

    async fn trim_to(&mut self, stream: &str, horizon: u64) -> Result<Option<u64>, BeneathWindow> {
        self.seal(stream, &[]).await?;
        let floors = MemorySeries::trim_to(self, stream, horizon)?;
        Ok(floors.iter().map(|(_, f)| f.position).max())
    }

    async fn retire(
        &mut self,
        stream: &str,
        track: &[String],
    ) -> Result<Option<u64>, BeneathWindow> {
        self.seal(stream, &[]).await?;
        // An empty selection ends every track; one with nothing live ends nothing (a host's
        // tracks are typed: no typo), as a served store answers it.
        match MemorySeries::retire_under(self, stream, &strs(track)) {
            Ok(_) | Err(EngineError::NothingToRetire { .. } | EngineError::UnknownTrack { .. }) => {
            }
            Err(error) => return Err(error.into()),
        }
        Ok(self.with(|s| s[stream].floor(track, false)))
    }
}
