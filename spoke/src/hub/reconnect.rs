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
//!   hub on SIGTERM, or the stream's maximum age): [0, min/2], then up to
//!   [`QUICK_TRIES`] more tries [min/4, min/2] apart while they fail, then
//!   the same series as after a loss. The hub is going away on purpose:
//!   behind a Service the other replicas are already serving, and a single
//!   replica that restarts is back within about a second (fleetgate-bench:
//!   SIGTERM → new hub ready ~1 s with 10,000 spokes). While nothing listens
//!   a try is refused by the kernel (or answered `UNAVAILABLE` by the
//!   draining replica) and costs the hub nothing, so the spoke keeps trying
//!   every [min/4, min/2] for about one to two seconds after the end: it
//!   reaches a restarted hub within min/2 of its start instead of in the
//!   series' [min, 2·min] step (before: with the hub down ~1 s, most spokes'
//!   second try came 0.5–1 s after the first and ~10 % needed a third, 1–2 s
//!   later). Each try's delay is drawn anew, so the fleet's tries stay spread
//!   over the window (a restarted hub sees them arrive over min/2, not as
//!   one wave). The later delays are those after a loss, so a hub that stays
//!   down for minutes is approached as before, backing off to max: the quick
//!   tries cost no step of the series, and they come only after an end (a
//!   failing hub that never ended a stream is never dialled quickly).

use std::time::Duration;

use rand::RngExt;

/// `--reconnect-min`'s default.
pub const DEFAULT_MIN: Duration = Duration::from_millis(500);
/// `--reconnect-max`'s default.
pub const DEFAULT_MAX: Duration = Duration::from_secs(60);
/// Tries [min/4, min/2] apart after the hub ended a stream and the first try
/// failed, before the series after a loss: with the default min, 0.75–1.5 s
/// of quick tries (1.0–1.75 s after the end), a single replica's restart.
pub const QUICK_TRIES: u32 = 6;

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
    /// Quick tries left after the hub ended a stream (see [`QUICK_TRIES`]).
    quick: u32,
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
            quick: 0,
        }
    }

    /// The delay before the next attempt, after one that ended with `outcome`.
    pub fn after(&mut self, outcome: Outcome) -> Duration {
        match outcome {
            Outcome::Ended => {
                self.failures = 1;
                self.quick = QUICK_TRIES;
                jitter(Duration::ZERO, self.min / 2)
            }
            Outcome::Lost => {
                self.failures = 1;
                self.quick = 0;
                backoff(0, self.min, self.max)
            }
            Outcome::Failed if self.quick > 0 => {
                self.quick -= 1;
                jitter(self.min / 4, self.min / 2)
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
    fn a_hub_ending_the_stream_is_dialled_soon_then_quickly_then_as_after_a_loss() {
        for _ in 0..50 {
            let mut r = Reconnect::new(MIN, MAX);
            for _ in 0..10 {
                r.after(Outcome::Failed);
            }
            // The drain's end: at once, spread over [0, min/2]…
            within(r.after(Outcome::Ended), 0, 50);
            // …then, while nothing answers, quick tries [min/4, min/2] apart…
            for _ in 0..QUICK_TRIES {
                within(r.after(Outcome::Failed), 25, 50);
            }
            // …and if the hub is not back yet, the series after a loss.
            within(r.after(Outcome::Failed), 100, 200);
            within(r.after(Outcome::Failed), 200, 400);
            // The next end starts over, quick tries included.
            within(r.after(Outcome::Ended), 0, 50);
            within(r.after(Outcome::Failed), 25, 50);
        }
    }

    #[test]
    fn a_hub_that_stays_down_after_an_end_is_backed_off_to_max() {
        for _ in 0..20 {
            let mut r = Reconnect::new(MIN, MAX);
            let mut waited = r.after(Outcome::Ended);
            let mut quick = Duration::ZERO;
            for _ in 0..QUICK_TRIES {
                quick += r.after(Outcome::Failed);
            }
            // The quick tries cover about one to two seconds at the default min (here
            // a fifth of it), no more.
            assert!(quick <= MIN / 2 * QUICK_TRIES, "{quick:?}");
            waited += quick;
            for _ in 0..30 {
                waited += r.after(Outcome::Failed);
            }
            within(r.after(Outcome::Failed), 2500, 5000);
            assert!(waited > Duration::from_secs(60), "{waited:?}");
        }
    }

    #[test]
    fn a_stream_lost_after_an_end_gets_no_quick_tries() {
        for _ in 0..50 {
            let mut r = Reconnect::new(MIN, MAX);
            r.after(Outcome::Ended);
            within(r.after(Outcome::Failed), 25, 50);
            // Reconnected, then the stream broke: a loss, whatever came before.
            within(r.after(Outcome::Lost), 50, 100);
            within(r.after(Outcome::Failed), 100, 200);
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
        // Their quick tries too: each delay drawn anew over [min/4, min/2].
        let mut buckets = [0u32; 5];
        for _ in 0..2000 {
            let mut r = Reconnect::new(MIN, MAX);
            r.after(Outcome::Ended);
            let d = r.after(Outcome::Failed).as_millis();
            buckets[usize::try_from((d - 25) / 5).unwrap().min(4)] += 1;
        }
        assert!(
            buckets.iter().all(|&n| (250..=550).contains(&n)),
            "{buckets:?}"
        );
    }
}
