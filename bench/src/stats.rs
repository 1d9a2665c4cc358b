//! Latency samples and their percentiles (nearest-rank), in milliseconds.

use std::time::Duration;

use serde::Serialize;

/// p50 / p99 / max of a set of samples, in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Percentiles {
    pub samples: usize,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

impl Percentiles {
    /// Nearest-rank percentiles of `samples` (all zero when empty).
    pub fn of(samples: &[Duration]) -> Self {
        if samples.is_empty() {
            return Self::default();
        }
        let mut ms: Vec<f64> = samples.iter().map(|d| d.as_secs_f64() * 1e3).collect();
        ms.sort_by(f64::total_cmp);
        let rank = |p: f64| {
            let i = ((p * ms.len() as f64).ceil() as usize).clamp(1, ms.len()) - 1;
            ms[i]
        };
        Self {
            samples: ms.len(),
            p50_ms: rank(0.50),
            p99_ms: rank(0.99),
            max_ms: ms[ms.len() - 1],
        }
    }

    /// `p50 / p99 / max` formatted for the table.
    pub fn cell(&self) -> String {
        format!(
            "{} / {} / {} ms",
            fmt_ms(self.p50_ms),
            fmt_ms(self.p99_ms),
            fmt_ms(self.max_ms)
        )
    }
}

/// Milliseconds with sensible precision.
pub fn fmt_ms(ms: f64) -> String {
    if ms < 10.0 {
        format!("{ms:.2}")
    } else if ms < 100.0 {
        format!("{ms:.1}")
    } else {
        format!("{ms:.0}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank() {
        let s: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        let p = Percentiles::of(&s);
        assert_eq!(p.samples, 100);
        assert!((p.p50_ms - 50.0).abs() < 1e-9);
        assert!((p.p99_ms - 99.0).abs() < 1e-9);
        assert!((p.max_ms - 100.0).abs() < 1e-9);
        assert_eq!(Percentiles::of(&[]), Percentiles::default());
        let one = Percentiles::of(&[Duration::from_millis(7)]);
        assert!((one.p99_ms - 7.0).abs() < 1e-9);
    }
}
