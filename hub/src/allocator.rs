//! Returning at once the pages freed while a fleet connects (issue 50).
//!
//! When a fleet connects (a start, a restart, a reconnect storm) the hub
//! allocates and frees a lot besides what each stream keeps: sign-ins, the
//! first snapshot reads, connection writes. With jemalloc's decay (1 s) those
//! freed pages stay resident for a while and are reused for the new
//! connections' buffers, which h2 allocates large and touches little: reused,
//! they are resident whole; fresh, only their touched pages are. That cost
//! ~5 KiB per connected spoke (a purge of every arena after the burst, tried
//! first, released 0.25 MiB of it: the pages were already in use). Freeing
//! every page at once all the time (decays at 0) cost the status ingest ~7 %,
//! so the hub does it only during a burst of connections ([`BurstTrigger`]):
//! from the moment ≥ [`MIN_BURST`] streams connected (over the lowest count
//! since the last burst) until [`QUIET`] passed without a new one, every
//! arena's dirty decay is 0; then it is set back. Ingest and steady traffic
//! never start one.
//!
//! The decay is set per arena through `mallctl` (`arena.<i>.dirty_decay_ms`;
//! setting it to 0 also purges the arena's dirty pages at once).

use std::time::{Duration, Instant};

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use tikv_jemalloc_ctl::{Access, AsName as _};
use tokio_util::sync::CancellationToken;

/// Streams that must have connected over the lowest count since the last
/// burst for a burst to begin.
pub const MIN_BURST: i64 = 256;
/// A burst ends when no new stream arrived for this long.
pub const QUIET: Duration = Duration::from_millis(750);
/// How often the connected-stream count is read.
pub const TICK: Duration = Duration::from_millis(250);

/// What to do with the allocator's decay now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Burst {
    /// A burst of connections began: free pages at once.
    Began,
    /// It ended (no new stream for the quiet time): back to the usual decay.
    Ended,
}

/// Tells when a burst of connections begins and ends from the number of
/// connected streams, read every [`TICK`]: it begins once the count rose by
/// ≥ `min_burst` over its lowest value since the last burst, and ends once
/// the count did not rise for `quiet`.
#[derive(Debug, Clone)]
pub struct BurstTrigger {
    min_burst: i64,
    quiet: Duration,
    /// The lowest count since the last burst ended (or the start).
    low: i64,
    last: i64,
    /// When the count last rose.
    last_rise: Option<Instant>,
    in_burst: bool,
}

impl BurstTrigger {
    /// A trigger for a replica with `connected` streams now.
    pub fn new(min_burst: i64, quiet: Duration, connected: i64) -> Self {
        Self {
            min_burst,
            quiet,
            low: connected,
            last: connected,
            last_rise: None,
            in_burst: false,
        }
    }

    /// Feeds the count read at `now`; answers a burst's beginning or end.
    pub fn observe(&mut self, now: Instant, connected: i64) -> Option<Burst> {
        if connected > self.last {
            self.last_rise = Some(now);
        }
        self.last = connected;
        self.low = self.low.min(connected);
        if !self.in_burst {
            if connected - self.low >= self.min_burst {
                self.in_burst = true;
                return Some(Burst::Began);
            }
        } else if self
            .last_rise
            .is_none_or(|rise| now.saturating_duration_since(rise) >= self.quiet)
        {
            self.in_burst = false;
            self.low = connected;
            return Some(Burst::Ended);
        }
        None
    }
}

/// Sets every initialised arena's dirty decay to `decay_ms(arena)`, answering
/// each arena's previous value. Setting 0 purges the arena's dirty pages at
/// once (one `madvise` per run of free pages): call it on a blocking thread.
pub fn set_dirty_decay(
    decay_ms: impl Fn(usize) -> Option<isize>,
) -> Result<Vec<(usize, isize)>, tikv_jemalloc_ctl::Error> {
    let arenas = tikv_jemalloc_ctl::arenas::narenas::read()?;
    let mut previous = Vec::new();
    for i in 0..arenas as usize {
        let Some(ms) = decay_ms(i) else { continue };
        let name = format!("arena.{i}.dirty_decay_ms\0");
        // An index without an initialised arena answers an error: skipped.
        if let Ok(old) = Access::<isize>::update(name.as_bytes().name(), ms) {
            previous.push((i, old));
        }
    }
    Ok(previous)
}

/// Sets every arena's dirty decay to 0 during each burst of connections (see
/// [`BurstTrigger`]) and back after it, until `stop`, counting the bursts in
/// `bursts`.
pub async fn eager_during_bursts(connected: Gauge, bursts: Counter, stop: CancellationToken) {
    let mut trigger = BurstTrigger::new(MIN_BURST, QUIET, connected.get());
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut previous: Vec<(usize, isize)> = Vec::new();
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tick.tick() => {}
        }
        let Some(burst) = trigger.observe(Instant::now(), connected.get()) else {
            continue;
        };
        let rss_before = rss_kib();
        let started = Instant::now();
        let result = match burst {
            Burst::Began => tokio::task::spawn_blocking(|| set_dirty_decay(|_| Some(0))).await,
            Burst::Ended => {
                let restore = std::mem::take(&mut previous);
                tokio::task::spawn_blocking(move || {
                    set_dirty_decay(|i| restore.iter().find(|(a, _)| *a == i).map(|(_, ms)| *ms))
                })
                .await
            }
        };
        match result {
            Ok(Ok(old)) => {
                if burst == Burst::Began {
                    bursts.inc();
                    previous = old;
                }
                tracing::debug!(
                    ?burst,
                    arenas = previous.len(),
                    took_ms = started.elapsed().as_secs_f64() * 1e3,
                    connected = connected.get(),
                    rss_before_kib = rss_before,
                    rss_after_kib = rss_kib(),
                    "allocator: burst of spoke connections"
                );
            }
            Ok(Err(e)) => tracing::debug!(error = %e, "allocator: setting the decay failed"),
            Err(e) => tracing::debug!(error = %e, "allocator: setting the decay failed"),
        }
    }
}

/// This process's resident set in KiB (0 where `/proc` cannot tell), for the log.
fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const Q: Duration = Duration::from_secs(2);

    /// Feeds `counts`, one per second from `t0`; answers what it said when.
    fn feed(trigger: &mut BurstTrigger, t0: Instant, counts: &[i64]) -> Vec<(usize, Burst)> {
        counts
            .iter()
            .enumerate()
            .filter_map(|(s, &c)| {
                trigger
                    .observe(t0 + Duration::from_secs(s as u64), c)
                    .map(|b| (s, b))
            })
            .collect()
    }

    #[test]
    fn a_burst_begins_once_and_ends_once_quiet() {
        let t0 = Instant::now();
        let mut t = BurstTrigger::new(256, Q, 0);
        // Rising to 1,000, then steady: begins at the first ≥ 256, ends `quiet`
        // after the last rise, once.
        let counts = [0, 100, 300, 700, 1000, 1000, 1000, 1000, 1000, 1000];
        assert_eq!(
            feed(&mut t, t0, &counts),
            vec![(2, Burst::Began), (6, Burst::Ended)]
        );
    }

    #[test]
    fn does_not_end_while_streams_keep_arriving() {
        let t0 = Instant::now();
        let mut t = BurstTrigger::new(256, Q, 0);
        let counts: Vec<i64> = (0..30).map(|s| s * 100).collect();
        assert_eq!(feed(&mut t, t0, &counts), vec![(3, Burst::Began)]);
        // ... and ends once they stop.
        let later = t0 + Duration::from_secs(30);
        assert_eq!(t.observe(later, 2900), None);
        assert_eq!(t.observe(later + Q, 2900), Some(Burst::Ended));
        assert_eq!(t.observe(later + Q * 5, 2900), None);
    }

    #[test]
    fn churn_does_not_begin_one() {
        let t0 = Instant::now();
        let mut t = BurstTrigger::new(256, Q, 10_000);
        // Spokes leaving and coming back a few at a time: never 256 above the low.
        let counts = [10_000, 9_900, 9_950, 9_990, 9_800, 10_000, 10_000, 10_000];
        assert_eq!(feed(&mut t, t0, &counts), vec![]);
    }

    #[test]
    fn a_reconnect_storm_is_another_burst() {
        let t0 = Instant::now();
        let mut t = BurstTrigger::new(256, Q, 0);
        // Connect (a burst that ends at 3), all drop (a restart), reconnect
        // (another, ending at 10), then stay idle.
        let counts = [
            0, 5000, 5000, 5000, 5000, 0, 0, 2000, 5000, 5000, 5000, 5000, 5000,
        ];
        assert_eq!(
            feed(&mut t, t0, &counts),
            vec![
                (1, Burst::Began),
                (3, Burst::Ended),
                (7, Burst::Began),
                (10, Burst::Ended)
            ]
        );
    }

    #[test]
    fn a_fleet_already_connected_is_no_burst() {
        let t0 = Instant::now();
        let mut t = BurstTrigger::new(256, Q, 5000);
        assert_eq!(feed(&mut t, t0, &[5000; 10]), vec![]);
    }

    #[test]
    fn the_decay_is_set_and_restored() {
        // jemalloc's controls answer whatever the test's global allocator is
        // (its arenas are initialised on first use).
        let before = set_dirty_decay(|_| Some(0)).expect("decay set");
        let zero = set_dirty_decay(|i| before.iter().find(|(a, _)| *a == i).map(|(_, ms)| *ms))
            .expect("decay restored");
        assert!(zero.iter().all(|&(_, ms)| ms == 0), "{zero:?}");
        assert_eq!(zero.len(), before.len());
    }
}
