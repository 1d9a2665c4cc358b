//! The flips of the hub and of the floor server taken in pairs (`flips::interleaved`):
//! what each pair measured, and its rows of the report.

use serde::Serialize;

use crate::stats::{Percentiles, fmt_ms};

/// One hub flip and one floor flip, one right after the other.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct FlipPair {
    /// The hub's flip came first (else the floor's).
    pub hub_first: bool,
    /// The hub's flip closed the gate (created an override); else it cancelled one.
    pub closes: bool,
    /// The hub's REST call (ms).
    pub rest_ms: f64,
    /// Each spoke's latency of the hub's flip, and of the floor's.
    pub hub: Percentiles,
    pub floor: Percentiles,
    /// Until the last spoke had it (ms): the hub's flip, the floor's.
    pub hub_all_ms: f64,
    pub floor_all_ms: f64,
}

impl FlipPair {
    /// The hub's p99 over the floor's, in this pair (0 without a floor).
    pub fn ratio(&self) -> f64 {
        over(self.hub.p99_ms, self.floor.p99_ms)
    }
}

/// `a / b`, 0 when `b` is not positive (not measured).
fn over(a: f64, b: f64) -> f64 {
    if b > 0.0 { a / b } else { 0.0 }
}

/// The pairs of one fleet size, in order.
#[derive(Debug, Clone, Default, Serialize)]
pub struct FlipPairs {
    pub pairs: Vec<FlipPair>,
    /// CPU time per flip (ms) over the paired flips: the hub's process (its flips, the
    /// spokes' reports that follow, and its idle time during the floor's flips), and the
    /// floor server's. 0 when not measured.
    pub hub_cpu_ms_per_flip: f64,
    pub floor_cpu_ms_per_flip: f64,
    /// The database server's CPU time per flip over the same pairs (the hub's flips are
    /// its only work then); `None` when it does not run on this machine.
    pub db_cpu_ms_per_flip: Option<f64>,
}

/// Nearest-rank median of `v` (0 when empty).
fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    v[v.len().div_ceil(2) - 1]
}

impl FlipPairs {
    /// The median of `value` over the pairs `keep` selects.
    fn median_of(&self, keep: impl Fn(&FlipPair) -> bool, value: impl Fn(&FlipPair) -> f64) -> f64 {
        median(self.pairs.iter().filter(|p| keep(p)).map(value).collect())
    }

    /// The per-pair ratios' median and largest.
    pub fn ratio_median_max(&self) -> (f64, f64) {
        let r: Vec<f64> = self.pairs.iter().map(FlipPair::ratio).collect();
        let max = r.iter().copied().fold(0.0, f64::max);
        (median(r), max)
    }

    /// The per-pair ratios' median where the floor's flip came first (the hub's second),
    /// and where the hub's came first: a flip's place in its pair moves its ratio (what
    /// the flip before it left running), so the two are shown apart.
    pub fn ratio_median_by_order(&self) -> (f64, f64) {
        let of = |hub_first: bool| self.median_of(|p| p.hub_first == hub_first, FlipPair::ratio);
        (of(false), of(true))
    }

    /// The REST call's median for the closes and for the cancels (ms).
    pub fn rest_close_cancel(&self) -> (f64, f64) {
        let of = |closes: bool| self.median_of(|p| p.closes == closes, |p| p.rest_ms);
        (of(true), of(false))
    }

    /// The report's rows for `n` spokes: (metric, measured).
    pub fn rows(&self, n: usize) -> Vec<(String, String)> {
        if self.pairs.is_empty() {
            return Vec::new();
        }
        let each: Vec<String> = self
            .pairs
            .iter()
            .map(|p| {
                format!(
                    "{}{} / {} = {:.2}×",
                    if p.hub_first { "h " } else { "f " },
                    fmt_ms(p.hub.p99_ms),
                    fmt_ms(p.floor.p99_ms),
                    p.ratio()
                )
            })
            .collect();
        let (ratio_median, ratio_max) = self.ratio_median_max();
        let (floor_first, hub_first) = self.ratio_median_by_order();
        let (close, cancel) = self.rest_close_cancel();
        let all = |_: &FlipPair| true;
        let hub_p99 = self.median_of(all, |p| p.hub.p99_ms);
        let floor_p99 = self.median_of(all, |p| p.floor.p99_ms);
        let hub_all = self.median_of(all, |p| p.hub_all_ms);
        let floor_all = self.median_of(all, |p| p.floor_all_ms);
        vec![
            (
                format!(
                    "interleaved flips, {n} spokes: per pair hub p99 / floor p99 (h: hub first, f: floor first)"
                ),
                each.join("; "),
            ),
            (
                format!(
                    "interleaved flips, {n} spokes: per-pair ratio median / max; median of the flips' p99 hub / floor; flip → all median hub / floor"
                ),
                format!(
                    "{ratio_median:.2}× / {ratio_max:.2}×; {} / {} ms; {} / {} ms",
                    fmt_ms(hub_p99),
                    fmt_ms(floor_p99),
                    fmt_ms(hub_all),
                    fmt_ms(floor_all)
                ),
            ),
            (
                format!(
                    "interleaved flips, {n} spokes: per-pair ratio median, floor's flip first / hub's first"
                ),
                format!("{floor_first:.2}× / {hub_first:.2}×"),
            ),
            (
                format!("REST call p50, {n} spokes: close (creates an override) / cancel"),
                format!("{} / {} ms", fmt_ms(close), fmt_ms(cancel)),
            ),
            (
                format!("interleaved flips, {n} spokes: CPU per flip, hub process / floor server"),
                format!(
                    "{} / {} ms = {:.2}×",
                    fmt_ms(self.hub_cpu_ms_per_flip),
                    fmt_ms(self.floor_cpu_ms_per_flip),
                    over(self.hub_cpu_ms_per_flip, self.floor_cpu_ms_per_flip)
                ),
            ),
            (
                format!(
                    "interleaved flips, {n} spokes: CPU per flip with the database, hub + PostgreSQL / floor server"
                ),
                match self.db_cpu_ms_per_flip {
                    Some(db) => format!(
                        "{} + {} ms = {:.2}× the floor's",
                        fmt_ms(self.hub_cpu_ms_per_flip),
                        fmt_ms(db),
                        over(self.hub_cpu_ms_per_flip + db, self.floor_cpu_ms_per_flip)
                    ),
                    None => "not measured (the database runs elsewhere)".into(),
                },
            ),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(hub_p99: f64, floor_p99: f64, closes: bool, rest_ms: f64) -> FlipPair {
        FlipPair {
            closes,
            rest_ms,
            hub: Percentiles {
                samples: 1,
                p99_ms: hub_p99,
                ..Percentiles::default()
            },
            floor: Percentiles {
                samples: 1,
                p99_ms: floor_p99,
                ..Percentiles::default()
            },
            ..FlipPair::default()
        }
    }

    #[test]
    fn ratios_and_rest_calls_per_pair() {
        let pairs = FlipPairs {
            pairs: vec![
                pair(200.0, 100.0, true, 30.0),
                pair(110.0, 100.0, false, 10.0),
                pair(300.0, 100.0, true, 50.0),
            ],
            hub_cpu_ms_per_flip: 300.0,
            floor_cpu_ms_per_flip: 200.0,
            db_cpu_ms_per_flip: Some(40.0),
        };
        let (median, max) = pairs.ratio_median_max();
        assert!((median - 2.0).abs() < 1e-9, "{median}");
        assert!((max - 3.0).abs() < 1e-9, "{max}");
        let (close, cancel) = pairs.rest_close_cancel();
        assert!((close - 30.0).abs() < 1e-9 && (cancel - 10.0).abs() < 1e-9);
        let rows = pairs.rows(10);
        assert_eq!(rows.len(), 6);
        assert!(rows[0].1.contains("f 200 / 100 = 2.00×"), "{}", rows[0].1);
        assert_eq!(rows[4].1, "300 / 200 ms = 1.50×");
        assert_eq!(rows[5].1, "300 + 40.0 ms = 1.70× the floor's");
        assert!(FlipPairs::default().rows(10).is_empty());
        // The hub's flip second in the first and third pairs (ratios 2 and 3), first in
        // the second (1.1).
        let mut ordered = pairs.clone();
        ordered.pairs[1].hub_first = true;
        let (floor_first, hub_first) = ordered.ratio_median_by_order();
        assert!((floor_first - 2.0).abs() < 1e-9, "{floor_first}");
        assert!((hub_first - 1.1).abs() < 1e-9, "{hub_first}");
        assert_eq!(ordered.rows(10)[2].1, "2.00× / 1.10×");
        assert_eq!(pair(1.0, 0.0, true, 0.0).ratio(), 0.0);
    }
}
