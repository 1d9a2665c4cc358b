//! Resident memory and CPU time of a process, read from `/proc/<pid>/status`
//! (VmRSS) and `/proc/<pid>/stat` (utime + stime over all threads).

use std::time::{Duration, Instant};

use crate::{Error, Result};

/// Clock ticks per second of `/proc/<pid>/stat` times (USER_HZ; 100 on Linux).
const TICKS_PER_SEC: f64 = 100.0;

/// A process's resident set size in KiB.
pub fn rss_kib(pid: u32) -> Result<u64> {
    status_kib(pid, "VmRSS")
}

/// A `/proc/<pid>/status` field in KiB (`VmRSS`, `RssAnon`, `RssFile`).
pub fn status_kib(pid: u32, field: &str) -> Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let prefix = format!("{field}:");
    status
        .lines()
        .find_map(|l| l.strip_prefix(prefix.as_str()))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| Error::setup(format!("no {field} in /proc/{pid}/status")))
}

/// A process's CPU time so far (user + system, all threads).
pub fn cpu_time(pid: u32) -> Result<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // Fields after the command name (which may contain spaces) in parentheses;
    // utime and stime are fields 14 and 15, i.e. 12 and 13 after the ')'.
    let rest = stat
        .rsplit_once(')')
        .map(|(_, r)| r)
        .ok_or_else(|| Error::setup(format!("malformed /proc/{pid}/stat")))?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let tick = |i: usize| -> Result<u64> {
        fields
            .get(i)
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| Error::setup(format!("malformed /proc/{pid}/stat")))
    };
    let ticks = tick(11)? + tick(12)?;
    Ok(Duration::from_secs_f64(ticks as f64 / TICKS_PER_SEC))
}

/// CPU time all cores of the machine spent busy so far (`/proc/stat`: every
/// state but idle and iowait), summed over cores.
pub fn machine_busy() -> Result<Duration> {
    let stat = std::fs::read_to_string("/proc/stat")?;
    let ticks: Vec<u64> = stat
        .lines()
        .find_map(|l| l.strip_prefix("cpu "))
        .ok_or_else(|| Error::setup("no cpu line in /proc/stat"))?
        .split_whitespace()
        .filter_map(|v| v.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal (guest is inside user).
    let busy: u64 = ticks
        .iter()
        .take(8)
        .enumerate()
        .filter(|(i, _)| *i != 3 && *i != 4)
        .map(|(_, t)| t)
        .sum();
    Ok(Duration::from_secs_f64(busy as f64 / TICKS_PER_SEC))
}

/// Average CPU use of `pid` over `window`, in millicores (1000 = one core busy).
pub async fn cpu_millicores(pid: u32, window: Duration) -> Result<f64> {
    let start = Instant::now();
    let before = cpu_time(pid)?;
    tokio::time::sleep(window).await;
    let after = cpu_time(pid)?;
    let wall = start.elapsed().as_secs_f64();
    Ok((after.saturating_sub(before)).as_secs_f64() / wall * 1000.0)
}

/// The soft limit on open files of this process (`/proc/self/limits`).
pub fn open_files_limit() -> Result<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits")?;
    limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .and_then(|l| l.split_whitespace().nth(3))
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| Error::setup("no 'Max open files' in /proc/self/limits"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_own_process() {
        let me = std::process::id();
        assert!(rss_kib(me).unwrap() > 0);
        cpu_time(me).unwrap();
        assert!(open_files_limit().unwrap() > 0);
    }
}
