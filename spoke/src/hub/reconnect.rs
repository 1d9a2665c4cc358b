//! When to dial the hub again: the reconnect schedule shared by the spoke's
//! hub connection and the benchmark's simulated spokes (`fleetgate-bench`),
//! so the storm is measured with the schedule the spoke ships.
//!
//! Every delay is drawn uniformly from a window, so a fleet that lost its hub
//! at the same instant spreads its reconnects over the window instead of
//! arriving as one wave. Three ways a connection can end:
//!
//! - **Failed** (no message: refused, timed out, rejected): exponential,
//!   [d/2, d] with d = min·2^k after the k-th failure in a row, capped at max.
//! - **Lost** (it carried messages, then broke: reset, error status, idle
//!   timeout): [min/2, min], then the series above from [min, 2·min].
//! - **Ended by the hub** (status OK after at least one message: a draining
//!   hub on SIGTERM, or the stream's maximum age): [0, min/2], then the same
//!   series as after a loss. The hub is going away on purpose, and behind a
//!   Service the other replicas are already serving, so the first retry does
//!   not wait for the floor of the first delay; the window is as wide as
//!   after a loss, so the fleet is spread as much. The later delays are those
//!   after a loss, so a hub that stays down (a single replica restarting) is
//!   approached as before: the early first try costs no attempt later on.

use std::time::Duration;

use rand::RngExt;

/// `--reconnect-min`'s default.
pub const DEFAULT_MIN: Duration = Duration::from_millis(500);
/// `--reconnect-max`'s default.
pub const DEFAULT_MAX: Duration = Duration::from_secs(60);

/// How a connection attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The hub ended the stream with status OK after sending at least one
    /// message (drain, maximum stream age).
    Ended,
    /// The stream carried messages, then broke.
    Lost,
    /// No message arrived on it.
    Failed,
}

impl Outcome {
    /// The outcome of a stream on which a message was `received` (or not)
    /// and that the hub `ended` with status OK (or not).
    pub fn of(received: bool, ended: bool) -> Self {
        match (received, ended) {
            (false, _) => Outcome::Failed,
            (true, true) => Outcome::Ended,
            (true, false) => Outcome::Lost,
        }
    }
}

/// One connection's reconnect schedule.
#[derive(Debug, Clone)]
pub struct Reconnect {
    min: Duration,
    max: Duration,
    /// Failed attempts in a row; one after a loss or an end.
    failures: u32,
}

impl Default for Reconnect {
    fn default() -> Self {
        Self::new(DEFAULT_MIN, DEFAULT_MAX)
    }
}

impl Reconnect {
    /// The schedule between `min` and `max` (`--reconnect-min/max`).
    pub fn new(min: Duration, max: Duration) -> Self {
        Self {
            min,
            max,
            failures: 0,
        }
    }

    /// The delay before the next attempt, after one that ended with `outcome`.
    pub fn after(&mut self, outcome: Outcome) -> Duration {
        match outcome {
            Outcome::Ended => {
                self.failures = 1;
                jitter(Duration::ZERO, self.min / 2)
            }
            Outcome::Lost => {
                self.failures = 1;
                backoff(0, self.min, self.max)
            }
            Outcome::Failed => {
                let d = backoff(self.failures, self.min, self.max);
                self.failures = self.failures.saturating_add(1);
                d
            }
        }
    }
}

/// Jittered exponential backoff: a uniformly random delay in [d/2, d] with
/// d = min(max, min·2^attempt).
pub fn backoff(attempt: u32, min: Duration, max: Duration) -> Duration {
    let exp = min.saturating_mul(2u32.saturating_pow(attempt.min(20)));
    let d = exp.min(max).max(Duration::from_millis(1));
    jitter(d / 2, d)
}

/// Uniform in [lo, hi], to the millisecond.
fn jitter(lo: Duration, hi: Duration) -> Duration {
    let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    let (lo, hi) = (ms(lo), ms(hi).max(ms(lo)));
    Duration::from_millis(rand::rng().random_range(lo..=hi))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: Duration = Duration::from_millis(100);
    const MAX: Duration = Duration::from_secs(5);

    fn within(d: Duration, lo_ms: u64, hi_ms: u64) {
        assert!(
            d >= Duration::from_millis(lo_ms) && d <= Duration::from_millis(hi_ms),
            "{d:?} not in [{lo_ms}, {hi_ms}] ms"
        );
    }

    #[test]
    fn a_stream_without_a_message_failed_whatever_ended_it() {
        assert_eq!(Outcome::of(false, false), Outcome::Failed);
        assert_eq!(Outcome::of(false, true), Outcome::Failed);
        assert_eq!(Outcome::of(true, true), Outcome::Ended);
        assert_eq!(Outcome::of(true, false), Outcome::Lost);
    }

    #[test]
    fn backoff_grows_jittered_and_capped() {
        for _ in 0..100 {
            within(backoff(0, MIN, MAX), 50, 100);
            within(backoff(3, MIN, MAX), 400, 800);
            within(backoff(40, MIN, MAX), 2500, 5000);
        }
    }

    #[test]
    fn a_failing_hub_is_approached_exponentially() {
        for _ in 0..50 {
            let mut r = Reconnect::new(MIN, MAX);
            within(r.after(Outcome::Failed), 50, 100);
            within(r.after(Outcome::Failed), 100, 200);
            within(r.after(Outcome::Failed), 200, 400);
            for _ in 0..20 {
                r.after(Outcome::Failed);
            }
            within(r.after(Outcome::Failed), 2500, 5000);
        }
    }

    #[test]
    fn a_hub_ending_the_stream_is_dialled_soon_then_as_after_a_loss() {
        for _ in 0..50 {
            let mut r = Reconnect::new(MIN, MAX);
            for _ in 0..10 {
                r.after(Outcome::Failed);
            }
            // The drain's end: at once, spread over [0, min/2]…
            within(r.after(Outcome::Ended), 0, 50);
            // …and if the hub is not back yet, the series after a loss.
            within(r.after(Outcome::Failed), 100, 200);
            within(r.after(Outcome::Failed), 200, 400);
            within(r.after(Outcome::Ended), 0, 50);
        }
    }

    #[test]
    fn a_lost_stream_waits_a_first_delay_and_continues_from_the_second() {
        for _ in 0..50 {
            let mut r = Reconnect::new(MIN, MAX);
            for _ in 0..10 {
                r.after(Outcome::Failed);
            }
            within(r.after(Outcome::Lost), 50, 100);
            within(r.after(Outcome::Failed), 100, 200);
        }
    }

    #[test]
    fn the_fleet_is_spread_over_the_whole_window() {
        // 2,000 spokes ended by a drain: no instant gets a crowd.
        let mut buckets = [0u32; 5];
        for _ in 0..2000 {
            let d = Reconnect::new(MIN, MAX).after(Outcome::Ended);
            buckets[usize::try_from(d.as_millis() / 10).unwrap().min(4)] += 1;
        }
        assert!(
            buckets.iter().all(|&n| (250..=550).contains(&n)),
            "{buckets:?}"
        );
    }
}
