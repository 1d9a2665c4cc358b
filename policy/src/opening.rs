//! When the gate's current open period began: the instant a rollout release names
//! (`GateRule.release.opening_at`). The hub and a spoke compute it from the same gate and
//! overrides, so a release for one open period never opens a later one (an offline spoke
//! released on Monday stays closed when Tuesday's window opens). Overrides that ended are
//! no longer among the overrides either side reads, so the hub also sends an *opening
//! fence* (the latest end of a closing override that ended): an open period never began
//! before it ([`CompiledGate::open_since_fenced`]).

use chrono::{DateTime, Duration, Utc};

use crate::timeline::sweep;
use crate::{CompiledGate, Override};

/// What [`CompiledGate::open_since`] answers for a gate open for as long as it looked back
/// (a gate whose default is open and that has no windows, or windows of minutes for a year).
pub const OPEN_SINCE_EVER: DateTime<Utc> = DateTime::UNIX_EPOCH;

/// Look-back steps: most open periods began within a day.
const LOOKBACK_DAYS: [i64; 4] = [1, 8, 64, 400];

/// Stop looking further back when the next step would expand more window occurrences than this.
const OCCURRENCE_BUDGET: usize = 100_000;

impl CompiledGate {
    /// The instant the open period containing `at` began (the latest closed→open change at or
    /// before `at`), given the overrides for this gate and cluster; `None` while the gate is
    /// closed at `at`. A gate open throughout the look-back (about 400 days, less for windows
    /// that fire every few minutes) answers [`OPEN_SINCE_EVER`]. Constant for every `at` of one
    /// open period with the same overrides.
    pub fn open_since(&self, at: DateTime<Utc>, overrides: &[Override]) -> Option<DateTime<Utc>> {
        let mut previous: Option<(usize, i64)> = None;
        for days in LOOKBACK_DAYS {
            if let Some((occurrences, previous_days)) = previous {
                let growth = usize::try_from(days / previous_days.max(1)).unwrap_or(usize::MAX);
                if occurrences.saturating_mul(growth) > OCCURRENCE_BUDGET {
                    break;
                }
            }
            let swept = sweep(self, at - Duration::days(days), at, overrides);
            let now = swept
                .changes
                .last()
                .map_or(swept.initial.state, |(_, d)| d.state);
            if !now.is_open() {
                return None;
            }
            if let Some((t, _)) = swept.changes.last() {
                return Some(*t);
            }
            previous = Some((swept.occurrences, days));
        }
        Some(OPEN_SINCE_EVER)
    }

    /// [`Self::open_since`], never before `fence`: the latest instant a closing override
    /// that has ended (expired or cancelled) stopped closing the gate. An ended override is
    /// not among `overrides` any more, so without the fence the freeze would leave no trace
    /// and a release from before it would stay valid after it (the whole fleet reopening at
    /// once). A fence later than the period's true start only makes a release older than it
    /// invalid — the reopening is staged once more, never less.
    pub fn open_since_fenced(
        &self,
        at: DateTime<Utc>,
        overrides: &[Override],
        fence: Option<DateTime<Utc>>,
    ) -> Option<DateTime<Utc>> {
        let since = self.open_since(at, overrides)?;
        Some(fence.map_or(since, |f| since.max(f)))
    }
}
