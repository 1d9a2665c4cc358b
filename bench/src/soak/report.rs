//! The soak's results: the hub RSS series reduced to warm-up, early and late
//! means, the report and stream counts, and the verdicts.

use serde::Serialize;

use crate::stats::{Percentiles, fmt_ms};

/// After report round `round`: clusters whose row holds it (or newer).
#[derive(Debug, Clone, Default, Serialize)]
pub struct RoundStored {
    pub round: u64,
    pub stored: usize,
    /// From the round's last report sent until all were stored (or the bound).
    pub seconds_after_last_report: f64,
}

/// What the soak counted.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Counts {
    pub spokes: usize,
    /// As asked (`--soak`), and as it took.
    pub duration_seconds: f64,
    pub seconds: f64,
    pub report_every_seconds: f64,
    pub flip_every_seconds: f64,
    pub rounds: Vec<RoundStored>,
    /// Reports the swarm handed to a stream, and those it could not.
    pub reports_sent: u64,
    pub reports_not_sent: u64,
    /// The hub's `fleetgate_hub_grpc_reports_received_total`, its growth.
    pub reports_received: u64,
    /// Clusters whose row holds the last round's marker and content.
    pub last_report_stored: usize,
    /// Per flip: REST call → the last spoke held the new snapshot.
    pub flips: Percentiles,
    /// Flips that did not reach every spoke within 25 s.
    pub flips_late: usize,
    /// Streams ended: the hub's `stream_ends_total` growth; the swarm's own count.
    pub stream_ends_hub: u64,
    pub stream_ends_swarm: u64,
    /// Streams the swarm opened again.
    pub reconnects: u64,
    /// Hub RSS samples: (seconds since the soak began, KiB).
    pub rss: Vec<(f64, u64)>,
    /// Samples before this are warm-up (0: the warm-up ran before the clock).
    pub warmup_seconds: f64,
    /// The warm-up before the clock: every spoke's initial report stored.
    pub warmup: super::Warmup,
    /// The hub's average CPU over the soak.
    pub hub_millicores: f64,
}

/// The soak's result.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SoakResult {
    #[serde(flatten)]
    pub counts: Counts,
    /// Mean hub RSS (KiB) of the first and last quarter of the samples after
    /// warm-up, and the growth between them (%).
    pub rss_early_kib: f64,
    pub rss_late_kib: f64,
    pub rss_growth_percent: f64,
    pub rss_min_kib: u64,
    pub rss_max_kib: u64,
}

fn mean(v: &[u64]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<u64>() as f64 / v.len() as f64
    }
}

impl SoakResult {
    /// Reduces the series.
    pub fn new(counts: Counts) -> Self {
        let after: Vec<u64> = counts
            .rss
            .iter()
            .filter(|(t, _)| *t >= counts.warmup_seconds)
            .map(|(_, kib)| *kib)
            .collect();
        let quarter = (after.len() / 4).max(1).min(after.len());
        let early = mean(&after[..quarter]);
        let late = mean(&after[after.len() - quarter..]);
        Self {
            rss_early_kib: early,
            rss_late_kib: late,
            rss_growth_percent: if early > 0.0 {
                (late - early) / early * 100.0
            } else {
                0.0
            },
            rss_min_kib: after.iter().copied().min().unwrap_or(0),
            rss_max_kib: after.iter().copied().max().unwrap_or(0),
            counts,
        }
    }

    /// No report lost: every report sent arrived, every round was stored for
    /// every cluster, and every cluster holds its last report.
    pub fn no_report_lost(&self) -> bool {
        let c = &self.counts;
        c.reports_not_sent == 0
            && c.reports_received == c.reports_sent
            && c.rounds.iter().all(|r| r.stored == c.spokes)
            && c.last_report_stored == c.spokes
    }

    /// No stream dropped.
    pub fn no_stream_dropped(&self) -> bool {
        let c = &self.counts;
        c.stream_ends_hub == 0 && c.stream_ends_swarm == 0 && c.reconnects == 0
    }

    /// Rows for the benchmark's table.
    pub fn rows(&self) -> Vec<crate::e2e::Row> {
        let c = &self.counts;
        let head = format!(
            "soak {:.0} s, {} spokes, flip every {:.0} s, 100-object report every {:.0} s",
            c.duration_seconds, c.spokes, c.flip_every_seconds, c.report_every_seconds
        );
        let stored: Vec<String> = c.rounds.iter().map(|r| r.stored.to_string()).collect();
        let w = &c.warmup;
        vec![
            (
                format!("{head}: warm-up before the clock (every spoke's initial report stored)"),
                format!(
                    "{} reports, {} object rows stored in {:.1} s ({:.0} object rows/s); the same again at the soak's pace, stored after {:.1} s; {} reports re-sent after a dropped stream; hub settled {}after {:.0} s at {} MiB RSS (peak {} MiB)",
                    w.reports,
                    w.object_rows,
                    w.stored_seconds,
                    w.object_rows_per_second,
                    w.paced_round_seconds,
                    w.reports_resent,
                    if w.settled {
                        ""
                    } else {
                        "(not within the bound) "
                    },
                    w.settle_seconds,
                    w.rss_settled_kib / 1024,
                    w.rss_peak_kib / 1024
                ),
                "all stored".into(),
                Some(w.reports == c.spokes),
            ),
            (
                format!("{head}: hub RSS growth after warm-up"),
                format!(
                    "{:+.1} % (mean of first quarter {:.0} MiB → last quarter {:.0} MiB; min {} / max {} MiB over {} samples from {:.0} s; hub CPU {:.0} millicores)",
                    self.rss_growth_percent,
                    self.rss_early_kib / 1024.0,
                    self.rss_late_kib / 1024.0,
                    self.rss_min_kib / 1024,
                    self.rss_max_kib / 1024,
                    c.rss.iter().filter(|(t, _)| *t >= c.warmup_seconds).count(),
                    c.warmup_seconds,
                    c.hub_millicores
                ),
                "≤ 5 % (#19)".into(),
                Some(self.rss_growth_percent <= 5.0),
            ),
            (
                format!("{head}: streams dropped"),
                format!(
                    "hub stream ends {}, swarm stream ends {}, reconnects {}; flips {} reaching all (per flip p50 / p99 / max {} / {} / {} ms), {} late",
                    c.stream_ends_hub,
                    c.stream_ends_swarm,
                    c.reconnects,
                    c.flips.samples,
                    fmt_ms(c.flips.p50_ms),
                    fmt_ms(c.flips.p99_ms),
                    fmt_ms(c.flips.max_ms),
                    c.flips_late
                ),
                "none (#19)".into(),
                Some(self.no_stream_dropped() && c.flips_late == 0),
            ),
            (
                format!("{head}: reports lost"),
                format!(
                    "sent {} (not sent {}), hub received {}; clusters holding each round: {}; last report stored {} of {}",
                    c.reports_sent,
                    c.reports_not_sent,
                    c.reports_received,
                    stored.join(", "),
                    c.last_report_stored,
                    c.spokes
                ),
                "none (#19)".into(),
                Some(self.no_report_lost()),
            ),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(rss: &[(f64, u64)]) -> Counts {
        Counts {
            spokes: 2,
            rounds: vec![RoundStored {
                round: 0,
                stored: 2,
                seconds_after_last_report: 0.1,
            }],
            reports_sent: 2,
            reports_received: 2,
            last_report_stored: 2,
            rss: rss.to_vec(),
            warmup_seconds: 10.0,
            warmup: super::super::Warmup {
                reports: 2,
                ..Default::default()
            },
            ..Counts::default()
        }
    }

    #[test]
    fn growth_compares_first_and_last_quarter_after_warm_up() {
        // Warm-up samples (t < 10) are ignored however large.
        let rss = [
            (0.0, 1),
            (5.0, 9999),
            (10.0, 100),
            (15.0, 100),
            (20.0, 104),
            (25.0, 110),
            (30.0, 110),
            (35.0, 110),
            (40.0, 111),
            (45.0, 109),
        ];
        let r = SoakResult::new(counts(&rss));
        assert!((r.rss_early_kib - 100.0).abs() < 1e-9);
        assert!((r.rss_late_kib - 110.0).abs() < 1e-9);
        assert!((r.rss_growth_percent - 10.0).abs() < 1e-9);
        assert_eq!((r.rss_min_kib, r.rss_max_kib), (100, 111));
        assert!(!r.rows()[1].3.unwrap(), "10 % growth fails the 5 % target");
        assert!(SoakResult::new(counts(&[])).rss_growth_percent.abs() < 1e-9);
    }

    #[test]
    fn any_missing_report_or_stream_end_fails_its_verdict() {
        let ok = SoakResult::new(counts(&[(10.0, 1)]));
        assert!(ok.no_report_lost() && ok.no_stream_dropped());
        for broken in [
            Counts {
                reports_received: 1,
                ..counts(&[])
            },
            Counts {
                last_report_stored: 1,
                ..counts(&[])
            },
            Counts {
                reports_not_sent: 1,
                ..counts(&[])
            },
            Counts {
                rounds: vec![RoundStored::default()],
                ..counts(&[])
            },
        ] {
            assert!(!SoakResult::new(broken).no_report_lost());
        }
        for dropped in [
            Counts {
                stream_ends_hub: 1,
                ..counts(&[])
            },
            Counts {
                reconnects: 1,
                ..counts(&[])
            },
            Counts {
                stream_ends_swarm: 1,
                ..counts(&[])
            },
        ] {
            assert!(!SoakResult::new(dropped).no_stream_dropped());
        }
    }
}
