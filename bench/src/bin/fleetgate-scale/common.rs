//! What every measurement shares: the hub's admin secret, the result type, the load
//! average and the distributions printed.

use std::future::Future;
use std::time::{Duration, Instant};

/// Bootstrap admin secret of the benchmark's private hub.
pub const ADMIN: &str = "fga_fleetgate-scale-admin-secret";

/// The machine's 1-minute load average.
pub fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "?".into())
}

/// `rounds` measured rounds after one unmeasured warm-up round (it fills the hub's and
/// PostgreSQL's caches): each measured round's samples, in order. `round` gets the round's
/// number (0 is the warm-up).
pub async fn rounds<T, F, Fut>(rounds: usize, mut round: F) -> Result<Vec<T>>
where
    F: FnMut(usize) -> Fut,
    Fut: Future<Output = Result<T>>,
{
    let mut out = Vec::with_capacity(rounds);
    for r in 0..=rounds {
        let sample = round(r).await?;
        if r > 0 {
            out.push(sample);
        }
    }
    Ok(out)
}

/// `call`'s answer and how long it took.
pub async fn timed<T>(call: impl Future<Output = Result<T>>) -> Result<(T, Duration)> {
    let t = Instant::now();
    let answer = call.await?;
    Ok((answer, t.elapsed()))
}

/// Sample `i` of every round.
pub fn column<const N: usize>(samples: &[[Duration; N]], i: usize) -> Vec<Duration> {
    samples.iter().map(|s| s[i]).collect()
}

/// Median and max of `samples`, in ms.
pub fn stats(samples: &[Duration]) -> (f64, f64, f64) {
    let mut ms: Vec<f64> = samples.iter().map(|d| d.as_secs_f64() * 1000.0).collect();
    ms.sort_by(f64::total_cmp);
    let at = |q: f64| ms[((ms.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.9), ms[ms.len() - 1])
}

/// `median / p90 / max ms` of `samples`.
pub fn cell(samples: &[Duration]) -> String {
    let (p50, p90, max) = stats(samples);
    format!("p50 {p50:.1} ms, p90 {p90:.1} ms, max {max:.1} ms")
}

pub type Result<T> = std::result::Result<T, Box<dyn std::error::Error + Send + Sync>>;
