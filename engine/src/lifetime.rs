//! The lifetimes a store is assembled with (`Config::retention`): how long each tier of a
//! stream is kept. The policy only; the sweeps that apply it, `retire` and the floors they
//! record are in `retention.rs` (docs/retention.md).

use strata_index::{StreamDecl, Tier};
use strata_levels::LEVELS_MAX;

use crate::error::EngineError;

/// How long one tier of a stream is kept.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Lifetime {
    /// Never retired by a sweep (the default).
    #[default]
    Forever,
    /// Kept while the newest axis value it holds is no more than this far behind the stream's
    /// newest axis value: a segment whose rows all lie below `newest - span` is retired. Only
    /// for a stream with an axis.
    AxisSpan(u64),
    /// Kept while within this many positions of the stream's last position: a segment whose
    /// rows all lie at or below `last - count` is retired.
    Positions(u64),
}

impl Lifetime {
    /// Whether a segment whose newest row is at `axis_hi` / `position_hi` has outlived this,
    /// in a stream whose newest axis value is `newest_axis` and last position `last_position`.
    pub(crate) fn expired(
        self,
        axis_hi: Option<u64>,
        position_hi: u64,
        newest_axis: Option<u64>,
        last_position: u64,
    ) -> bool {
        match self {
            Lifetime::Forever => false,
            Lifetime::AxisSpan(span) => match (axis_hi, newest_axis) {
                (Some(hi), Some(newest)) => newest.checked_sub(span).is_some_and(|cut| hi < cut),
                _ => false,
            },
            Lifetime::Positions(count) => last_position
                .checked_sub(count)
                .is_some_and(|cut| position_hi <= cut),
        }
    }

    /// The lifetime's length for ordering lifetimes of one kind; `Forever` is the longest.
    fn length(self) -> u128 {
        match self {
            Lifetime::Forever => u128::MAX,
            Lifetime::AxisSpan(n) | Lifetime::Positions(n) => u128::from(n),
        }
    }

    fn describe(self) -> String {
        match self {
            Lifetime::Forever => "forever".to_owned(),
            Lifetime::AxisSpan(span) => format!("an axis span of {span}"),
            Lifetime::Positions(count) => format!("{count} positions"),
        }
    }
}

/// How long a stream keeps its raw rows and each level. Declared where the store is assembled
/// (`Config::retention`), not in the stream's definition: two stores of one stream may keep it
/// differently.
///
/// ```
/// use strata_engine::{Lifetime, Retention};
/// // Raw rows for an axis span of 86_400 (a day of seconds), levels 0 and 1 as long, level 2
/// // and up for a year.
/// let retention = Retention::raw(Lifetime::AxisSpan(86_400))
///     .levels_from(0, Lifetime::AxisSpan(86_400))
///     .levels_from(2, Lifetime::AxisSpan(365 * 86_400));
/// assert_eq!(retention.level(1), Lifetime::AxisSpan(86_400));
/// assert_eq!(retention.level(9), Lifetime::AxisSpan(365 * 86_400));
/// ```
///
/// `#[non_exhaustive]`: built with [`Retention::raw`] and [`Retention::levels_from`], which
/// keep `levels` ascending, never with a struct literal outside this crate.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Retention {
    /// The raw rows' lifetime.
    pub raw: Lifetime,
    /// Level lifetimes as `(from, lifetime)`, ascending by `from`: level `k` lives by the entry
    /// with the highest `from <= k`. Levels beneath every entry live forever.
    pub levels: Vec<(u8, Lifetime)>,
}

impl Retention {
    /// Raw rows kept for `lifetime`, levels forever.
    pub fn raw(lifetime: Lifetime) -> Retention {
        Retention {
            raw: lifetime,
            levels: Vec::new(),
        }
    }

    /// Levels `from` and up (to the next entry) kept for `lifetime`.
    #[must_use]
    pub fn levels_from(mut self, from: u8, lifetime: Lifetime) -> Retention {
        self.levels.retain(|&(k, _)| k != from);
        self.levels.push((from, lifetime));
        self.levels.sort_by_key(|&(k, _)| k);
        self
    }

    /// The lifetime of level `level`.
    pub fn level(&self, level: u8) -> Lifetime {
        self.levels
            .iter()
            .rev()
            .find(|&&(from, _)| from <= level)
            .map_or(Lifetime::Forever, |&(_, lifetime)| lifetime)
    }

    /// Whether nothing of the stream is ever retired by a sweep.
    pub fn is_forever(&self) -> bool {
        self.raw == Lifetime::Forever && self.levels.iter().all(|(_, l)| *l == Lifetime::Forever)
    }

    /// The lifetime after which a sweep retires a whole segment, if finite: its longest-lived
    /// tier's — the coarsest level's for a stream with levels, the raw rows' otherwise.
    pub(crate) fn segment_lifetime(&self, has_levels: bool) -> Option<Lifetime> {
        let lifetime = if has_levels {
            self.level(LEVELS_MAX)
        } else {
            self.raw
        };
        (lifetime != Lifetime::Forever).then_some(lifetime)
    }

    /// The lifetime of `tier` of a segment storing `n_levels` levels: its top level answers
    /// every coarser level too, so it lives as long as the coarsest does.
    pub(crate) fn of_tier(&self, tier: Tier, n_levels: u8) -> Lifetime {
        match tier {
            Tier::Raw => self.raw,
            Tier::Level(k) if k + 1 == n_levels => self.level(LEVELS_MAX),
            Tier::Level(k) => self.level(k),
        }
    }

    /// Refuses a retention no sweep can honour for `decl`: an axis span on a stream without
    /// an axis, a lifetime of 0, levels out of order or beyond the ladder, lifetimes of two
    /// kinds, or a level that would retire before the tier beneath it (a coarser level is
    /// folded from the finer one, and the raw rows beneath them all).
    pub(crate) fn validate(&self, decl: &StreamDecl) -> Result<(), EngineError> {
        let refuse = |reason: String| EngineError::Config {
            setting: "retention",
            reason: format!("for stream {:?}: {reason}", decl.id),
        };
        if self.levels.windows(2).any(|w| w[0].0 >= w[1].0) {
            return Err(refuse(
                "level entries must ascend by level, each level once".to_owned(),
            ));
        }
        if let Some(&(k, _)) = self.levels.iter().find(|&&(k, _)| k > LEVELS_MAX) {
            return Err(refuse(format!(
                "level {k} is beyond the deepest level of any ladder ({LEVELS_MAX})"
            )));
        }
        // The tiers from the finest up: raw, then every level.
        let chain: Vec<(String, Lifetime)> = std::iter::once(("raw rows".to_owned(), self.raw))
            .chain((0..=LEVELS_MAX).map(|k| (format!("level {k}"), self.level(k))))
            .collect();
        let mut kind: Option<(&str, Lifetime)> = None;
        for (tier, lifetime) in &chain {
            match lifetime {
                Lifetime::AxisSpan(0) | Lifetime::Positions(0) => {
                    return Err(refuse(format!(
                        "{tier}: a lifetime of 0 keeps nothing; use `trim_to` or `retire`"
                    )));
                }
                Lifetime::AxisSpan(_) if decl.axis.is_none() => {
                    return Err(refuse(format!(
                        "{tier}: an axis span, but the stream declares no axis"
                    )));
                }
                _ => {}
            }
            if *lifetime != Lifetime::Forever {
                match kind {
                    Some((first, seen))
                        if std::mem::discriminant(&seen) != std::mem::discriminant(lifetime) =>
                    {
                        return Err(refuse(format!(
                            "{first} is kept for {} and {tier} for {}: one stream's lifetimes \
                             are all axis spans or all positions",
                            seen.describe(),
                            lifetime.describe()
                        )));
                    }
                    None => kind = Some((tier, *lifetime)),
                    Some(_) => {}
                }
            }
        }
        for pair in chain.windows(2) {
            let [(finer, short), (coarser, long)] = pair else {
                unreachable!("windows of 2")
            };
            if long.length() < short.length() {
                return Err(refuse(format!(
                    "{coarser} ({}) would retire before {finer} ({}), which it is folded \
                     from; a coarser tier may only outlive a finer one",
                    long.describe(),
                    short.describe()
                )));
            }
        }
        Ok(())
    }
}
