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
    let stat = Stat::read(pid)?;
    Ok(ticks(stat.field(11)? + stat.field(12)?))
}

/// The CPU time so far of a server made of a parent process and the children it forks
/// (PostgreSQL: the postmaster and its backends): the parent's own, that of the children
/// it has reaped (`cutime`, `cstime`), and that of each child still running.
pub fn server_cpu_time(parent: u32) -> Result<Duration> {
    let stat = Stat::read(parent)?;
    let mut total = ticks((11..=14).map(|i| stat.field(i)).sum::<Result<u64>>()?);
    for entry in std::fs::read_dir("/proc")?.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
            continue;
        };
        // A child that exits meanwhile is counted in the parent's `cutime` instead.
        if let Ok(child) = Stat::read(pid)
            && child.field(1).ok() == Some(u64::from(parent))
        {
            total += ticks(child.field(11)? + child.field(12)?);
        }
    }
    Ok(total)
}

fn ticks(n: u64) -> Duration {
    Duration::from_secs_f64(n as f64 / TICKS_PER_SEC)
}

/// The fields of `/proc/<pid>/stat` after the command name (which may contain spaces,
/// in parentheses): 0 is the state, 1 the parent's pid, 11 and 12 utime and stime, 13
/// and 14 those of reaped children (fields 3, 4 and 14–17 of proc(5)).
struct Stat {
    pid: u32,
    fields: Vec<u64>,
}

impl Stat {
    fn read(pid: u32) -> Result<Self> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
        let rest = stat
            .rsplit_once(')')
            .map(|(_, r)| r)
            .ok_or_else(|| Error::setup(format!("malformed /proc/{pid}/stat")))?;
        // The state is a letter: kept as 0 so the indices stay those above.
        let fields = rest
            .split_whitespace()
            .map(|v| v.parse().unwrap_or(0))
            .collect();
        Ok(Self { pid, fields })
    }

    fn field(&self, i: usize) -> Result<u64> {
        self.fields
            .get(i)
            .copied()
            .ok_or_else(|| Error::setup(format!("malformed /proc/{}/stat", self.pid)))
    }
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

    #[test]
    fn a_server_s_cpu_counts_its_children() {
        // A child that burns CPU until it is reaped: counted while it runs, and in the
        // parent's reaped children's time after.
        let mut child = std::process::Command::new("sh")
            .args(["-c", "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done"])
            .spawn()
            .unwrap();
        let me = std::process::id();
        let before = server_cpu_time(me).unwrap();
        child.wait().unwrap();
        let after = server_cpu_time(me).unwrap();
        assert!(after >= before, "{after:?} < {before:?}");
        assert!(
            after.saturating_sub(cpu_time(me).unwrap()) >= Duration::from_millis(10),
            "the reaped child's CPU is missing: {after:?} in all"
        );
    }
}
