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
//!   hub on SIGTERM, or the stream's maximum age): [0, min/2]. The hub is
//!   going away on purpose, and behind a Service the other replicas are
//!   already serving, so the first retry does not wait for the floor of the
//!   first delay; the window is as wide as after a loss, so the fleet is
//!   spread as much.
//!
//! **Quick tries after an end.** If no hub listens after an end (a single
//! replica restarting: its listener closed at the signal, the new process not
//! bound yet), the connect is refused at once by the peer's kernel (TCP RST):
//! such a try costs the hub nothing and the spoke a round trip. For the first
//! [`QUICK_WINDOW_MINS`]·min after the end (2 s by default) the spoke tries
//! again while its connects are refused, with decorrelated jitter: each delay
//! uniform in [min/4, 3 × the previous delay], at most min (125–500 ms by
//! default), so a hub that is back within that window is found within about
//! half a second of binding, by a fleet still spread over a window. Anything
//! else (a timeout, an error status: a hub that is up but overloaded or turns
//! the spoke away) ends the quick tries, and so does the window's end: then
//! the delays double from [4·min, 8·min] ([2 s, 4 s] by default) up to max,
//! where the schedule without quick tries was at that time (its fourth try
//! after an end), so a hub that stays down is tried as often as before from
//! the window's end on: a long outage costs a spoke at most the window's few
//! quick tries more, once per end.

use std::time::Duration;

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};

/// `--reconnect-min`'s default.
pub const DEFAULT_MIN: Duration = Duration::from_millis(500);
/// `--reconnect-max`'s default.
pub const DEFAULT_MAX: Duration = Duration::from_secs(60);
/// How long after a stream the hub ended the spoke tries again quickly while
/// its connects are refused, in units of min (2 s by default).
pub const QUICK_WINDOW_MINS: u32 = 4;
/// The failure count the series continues from after the quick tries: the
/// next delay is [d/2, d] with d = min·2^3 = 8·min ([2 s, 4 s] by default).
const AFTER_QUICK: u32 = 3;

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
    /// The connect was refused: nothing listens at the hub's address (a
    /// failure too, told apart for the quick tries after an end).
    Refused,
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

/// Whether `err` (a connect's error, with its sources) is a refused
/// connection: the peer answered the SYN with a reset, nothing listens.
pub fn refused(err: &(dyn std::error::Error + 'static)) -> bool {
    let mut cur = Some(err);
    while let Some(e) = cur {
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            if io.kind() == std::io::ErrorKind::ConnectionRefused {
                return true;
            }
        }
        cur = e.source();
    }
    false
}

/// One connection's reconnect schedule.
#[derive(Debug, Clone)]
pub struct Reconnect {
    min: Duration,
    max: Duration,
    /// Failed attempts in a row; one after a loss or an end.
    failures: u32,
    /// Quick tries after an end: time since the end (the delays so far) and
    /// the last delay; `None` outside them.
    quick: Option<Quick>,
    rng: SmallRng,
}

#[derive(Debug, Clone, Copy)]
struct Quick {
    since_end: Duration,
    last: Duration,
}

impl Default for Reconnect {
    fn default() -> Self {
        Self::new(DEFAULT_MIN, DEFAULT_MAX)
    }
}

impl Reconnect {
    /// The schedule between `min` and `max` (`--reconnect-min/max`).
    pub fn new(min: Duration, max: Duration) -> Self {
        Self::with_rng(min, max, SmallRng::from_rng(&mut rand::rng()))
    }

    /// [`Reconnect::new`] drawing its delays from `rng` (tests: a seeded one).
    pub fn with_rng(min: Duration, max: Duration, rng: SmallRng) -> Self {
        Self {
            min,
            max,
            failures: 0,
            quick: None,
            rng,
        }
    }

    /// The delay before the next attempt, after one that ended with `outcome`.
    pub fn after(&mut self, outcome: Outcome) -> Duration {
        match outcome {
            Outcome::Ended => {
                self.failures = 1;
                let d = jitter(&mut self.rng, Duration::ZERO, self.min / 2);
                self.quick = Some(Quick {
                    since_end: d,
                    last: self.quick_floor(),
                });
                d
            }
            Outcome::Lost => {
                self.failures = 1;
                self.quick = None;
                backoff(&mut self.rng, 0, self.min, self.max)
            }
            Outcome::Refused if self.quick.is_some() => self.quick_try(),
            Outcome::Failed | Outcome::Refused => {
                self.quick = None;
                let d = backoff(&mut self.rng, self.failures, self.min, self.max);
                self.failures = self.failures.saturating_add(1);
                d
            }
        }
    }

    /// The next quick try's delay, or the series' once the window is over.
    fn quick_try(&mut self) -> Duration {
        let window = self.min.saturating_mul(QUICK_WINDOW_MINS);
        match self.quick {
            Some(q) if q.since_end < window => {
                let floor = self.quick_floor();
                let ceil = q.last.saturating_mul(3).min(self.min).max(floor);
                let d = jitter(&mut self.rng, floor, ceil).min(self.max);
                self.quick = Some(Quick {
                    since_end: q.since_end + d,
                    last: d,
                });
                d
            }
            _ => {
                self.quick = None;
                self.failures = self.failures.max(AFTER_QUICK);
                self.after(Outcome::Failed)
            }
        }
    }

    /// The quick tries' shortest delay: min/4 (125 ms by default).
    fn quick_floor(&self) -> Duration {
        (self.min / 4).max(Duration::from_millis(1))
    }
}

/// Jittered exponential backoff: a uniformly random delay in [d/2, d] with
/// d = min(max, min·2^attempt).
fn backoff(rng: &mut SmallRng, attempt: u32, min: Duration, max: Duration) -> Duration {
    let exp = min.saturating_mul(2u32.saturating_pow(attempt.min(20)));
    let d = exp.min(max).max(Duration::from_millis(1));
    jitter(rng, d / 2, d)
}

/// Uniform in [lo, hi], to the millisecond.
fn jitter(rng: &mut SmallRng, lo: Duration, hi: Duration) -> Duration {
    let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    let (lo, hi) = (ms(lo), ms(hi).max(ms(lo)));
    Duration::from_millis(rng.random_range(lo..=hi))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: Duration = Duration::from_millis(100);
    const MAX: Duration = Duration::from_secs(5);

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn within(d: Duration, lo_ms: u64, hi_ms: u64) {
        assert!(
            d >= ms(lo_ms) && d <= ms(hi_ms),
            "{d:?} not in [{lo_ms}, {hi_ms}] ms"
        );
    }

    /// A schedule with a seeded generator: every run draws the same delays.
    fn seeded(seed: u64) -> Reconnect {
        Reconnect::with_rng(MIN, MAX, SmallRng::seed_from_u64(seed))
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
        let mut rng = SmallRng::seed_from_u64(1);
        for _ in 0..100 {
            within(backoff(&mut rng, 0, MIN, MAX), 50, 100);
            within(backoff(&mut rng, 3, MIN, MAX), 400, 800);
            within(backoff(&mut rng, 40, MIN, MAX), 2500, 5000);
        }
    }

    #[test]
    fn the_same_seed_draws_the_same_delays() {
        let draw = |seed| {
            let mut r = seeded(seed);
            let mut ds = vec![r.after(Outcome::Ended)];
            ds.extend((0..8).map(|_| r.after(Outcome::Refused)));
            ds
        };
        assert_eq!(draw(7), draw(7));
        assert_ne!(draw(7), draw(8));
    }

    #[test]
    fn a_failing_hub_is_approached_exponentially() {
        for seed in 0..50 {
            // Refused or not: without an end before, no quick tries.
            for outcome in [Outcome::Failed, Outcome::Refused] {
                let mut r = seeded(seed);
                within(r.after(outcome), 50, 100);
                within(r.after(outcome), 100, 200);
                within(r.after(outcome), 200, 400);
                for _ in 0..20 {
                    r.after(outcome);
                }
                within(r.after(outcome), 2500, 5000);
            }
        }
    }

    #[test]
    fn a_hub_ending_the_stream_is_dialled_soon_then_as_after_a_loss() {
        for seed in 0..50 {
            let mut r = seeded(seed);
            for _ in 0..10 {
                r.after(Outcome::Failed);
            }
            // The drain's end: at once, spread over [0, min/2]…
            within(r.after(Outcome::Ended), 0, 50);
            // …and if the try is not refused but fails (timed out, turned away),
            // the series after a loss.
            within(r.after(Outcome::Failed), 100, 200);
            within(r.after(Outcome::Failed), 200, 400);
            // A refused connect after that is a failure like any other.
            within(r.after(Outcome::Refused), 400, 800);
            within(r.after(Outcome::Ended), 0, 50);
        }
    }

    #[test]
    fn refused_after_an_end_is_tried_quickly_for_the_window_then_as_before() {
        let window = MIN * QUICK_WINDOW_MINS;
        for seed in 0..200 {
            let mut r = seeded(seed);
            let mut since_end = r.after(Outcome::Ended);
            within(since_end, 0, 50);
            let mut last = MIN / 4;
            let mut quick = 0;
            // Decorrelated jitter: [min/4, 3 × the last delay], at most min.
            while since_end < window {
                let d = r.after(Outcome::Refused);
                within(d, 25, 100);
                assert!(d <= last * 3, "{d:?} after {last:?}");
                last = d;
                since_end += d;
                quick += 1;
            }
            // At most window / (min/4) quick tries, at least window / min.
            assert!((4..=16).contains(&quick), "{quick} quick tries");
            // Then the series after a loss from its third step, doubling to max.
            within(r.after(Outcome::Refused), 400, 800);
            within(r.after(Outcome::Refused), 800, 1600);
            within(r.after(Outcome::Refused), 1600, 3200);
            for _ in 0..10 {
                within(r.after(Outcome::Refused), 2500, 5000);
            }
        }
    }

    #[test]
    fn a_failure_other_than_refused_ends_the_quick_tries() {
        for seed in 0..50 {
            let mut r = seeded(seed);
            r.after(Outcome::Ended);
            within(r.after(Outcome::Refused), 25, 75);
            // Timed out or turned away by a hub that is up: back off.
            within(r.after(Outcome::Failed), 100, 200);
            within(r.after(Outcome::Refused), 200, 400);
            // A loss is no end: no quick tries after it.
            r.after(Outcome::Lost);
            within(r.after(Outcome::Refused), 100, 200);
        }
    }

    /// Tries a spoke makes in `horizon` after the end of its stream while every
    /// connect is refused (`quick`) or fails otherwise (the schedule without the
    /// quick tries).
    fn tries_in(seed: u64, horizon: Duration, then: Outcome) -> u32 {
        let mut r = seeded(seed);
        let mut t = r.after(Outcome::Ended);
        let mut tries = 0;
        while t < horizon {
            tries += 1;
            t += r.after(then);
        }
        tries
    }

    #[test]
    fn a_long_outage_costs_only_the_windows_quick_tries() {
        let horizon = Duration::from_secs(600);
        for seed in 0..50 {
            let refused = tries_in(seed, horizon, Outcome::Refused);
            let failed = tries_in(seed, horizon, Outcome::Failed);
            // 10 minutes at max 5 s: ~160 tries either way; refused ones add at
            // most the window's quick tries.
            assert!(
                refused <= failed + 16,
                "{refused} tries refused vs {failed} failing"
            );
        }
    }

    #[test]
    fn the_fleet_is_spread_over_the_whole_window() {
        // 2,000 spokes ended by a drain: no instant gets a crowd.
        let mut buckets = [0u32; 5];
        for seed in 0..2000 {
            let d = seeded(seed).after(Outcome::Ended);
            buckets[usize::try_from(d.as_millis() / 10).unwrap().min(4)] += 1;
        }
        assert!(
            buckets.iter().all(|&n| (250..=550).contains(&n)),
            "{buckets:?}"
        );
    }

    #[test]
    fn the_quick_tries_stay_spread() {
        // 2,000 spokes refused after an end: their third try (the end plus two
        // quick delays) is spread over most of a min (min 500 ms: ~0.4 s).
        let mut at = Vec::new();
        for seed in 0..2000 {
            let mut r = seeded(seed);
            let t = r.after(Outcome::Ended) + r.after(Outcome::Refused) + r.after(Outcome::Refused);
            at.push(t.as_millis());
        }
        at.sort_unstable();
        let (p5, p95) = (at[100], at[1900]);
        assert!(p95 - p5 >= 75, "p5 {p5} ms, p95 {p95} ms");
    }

    #[test]
    fn a_reset_in_an_errors_sources_is_a_refusal() {
        #[derive(Debug)]
        struct Wrap(std::io::Error);
        impl std::fmt::Display for Wrap {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("connect failed")
            }
        }
        impl std::error::Error for Wrap {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                Some(&self.0)
            }
        }
        let io = |kind| std::io::Error::from(kind);
        assert!(refused(&Wrap(io(std::io::ErrorKind::ConnectionRefused))));
        assert!(refused(&io(std::io::ErrorKind::ConnectionRefused)));
        assert!(!refused(&Wrap(io(std::io::ErrorKind::TimedOut))));
        assert!(!refused(&Wrap(io(std::io::ErrorKind::ConnectionReset))));
    }

    #[tokio::test]
    async fn a_connect_to_a_closed_port_is_refused() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        drop(listener);
        let err = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
            .unwrap()
            .connect()
            .await
            .expect_err("nothing listens");
        assert!(refused(&err), "{err:?}");
    }
}
