//! The simulated spokes in a process of their own (`fleetgate-bench swarm`),
//! so that 10,000 reconnecting streams do not compete with the benchmark's
//! clocks and readiness probe for its runtime: the child runs a [`Swarm`]
//! and writes one line per attempt and per snapshot to stdout; the parent
//! mirrors them into the slots of a [`Swarm`] of its own, on which every
//! scenario (flips, storm, replicas) runs unchanged. Arrival times cross the
//! process boundary as wall-clock microseconds (both processes read the same
//! kernel clock) and are turned into the parent swarm's epoch. The child ends
//! when its stdin closes, so it never outlives the benchmark.

use std::net::SocketAddr;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::process::Command;
use tokio::sync::mpsc;

use crate::swarm::{Credential, Event, Failures, Slot, Swarm, count_failure};
use crate::{Error, Result};

/// How long the child may take to exit after its stdin closed.
const EXIT_BOUND: Duration = Duration::from_secs(10);

fn unix_us(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

/// `fleetgate-bench swarm`: runs the spokes of `creds_file` (one `cluster
/// token` per line) against `addrs` (round-robin), `concurrency` connecting
/// at a time, reporting on stdout, until stdin closes.
pub async fn serve(creds_file: &Path, addrs: &[SocketAddr], concurrency: usize) -> Result<()> {
    let creds = read_creds(creds_file)?;
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut swarm = Swarm::with_events(tx);
    let writer = tokio::spawn(async move {
        let mut out = tokio::io::BufWriter::new(tokio::io::stdout());
        while let Some(ev) = rx.recv().await {
            let mut batch = line(ev);
            // Whatever else is queued goes out in the same write.
            while let Ok(ev) = rx.try_recv() {
                batch.push_str(&line(ev));
            }
            if out.write_all(batch.as_bytes()).await.is_err() || out.flush().await.is_err() {
                return; // the parent is gone
            }
        }
    });
    swarm.start_spread(addrs, &creds, concurrency);
    let mut stdin = BufReader::new(tokio::io::stdin()).lines();
    while let Ok(Some(_)) = stdin.next_line().await {}
    swarm.shutdown().await;
    writer.abort();
    Ok(())
}

fn line(ev: Event) -> String {
    match ev {
        Event::Attempt {
            i,
            attempt,
            addr,
            at,
        } => format!("a {i} {attempt} {} {addr}\n", unix_us(at)),
        Event::Connected { i, at } => format!("c {i} {}\n", unix_us(at)),
        Event::Accepted { i, at } => format!("h {i} {}\n", unix_us(at)),
        Event::Snapshot { i, revision, at } => format!("s {i} {revision} {}\n", unix_us(at)),
        Event::Failed { i, why, addr } => format!("f {i} {}\n", why.label_at(addr)),
        Event::Ended { i, at } => format!("e {i} {}\n", unix_us(at)),
    }
}

fn read_creds(path: &Path) -> Result<Vec<Credential>> {
    let text = std::fs::read_to_string(path)?;
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let (cluster, token) = l
                .split_once(' ')
                .ok_or_else(|| Error::setup(format!("{}: bad line {l:?}", path.display())))?;
            Ok(Credential {
                cluster: cluster.into(),
                token: token.into(),
            })
        })
        .collect()
}

/// Starts `fleetgate-bench swarm` (the executable `bench`) with `creds`
/// dialling `addrs` round-robin and waits (≤ `bound`) until every spoke holds
/// a first snapshot. The returned swarm mirrors the child's; shutting it down
/// ends the child.
pub async fn start(
    bench: &Path,
    addrs: &[SocketAddr],
    creds: &[Credential],
    concurrency: usize,
    bound: Duration,
    dir: &Path,
) -> Result<Swarm> {
    let file = dir.join(format!("swarm-{}.creds", creds.len()));
    let text: String = creds
        .iter()
        .map(|c| format!("{} {}\n", c.cluster, c.token))
        .collect();
    std::fs::write(&file, text)?;
    let addr_list: Vec<String> = addrs.iter().map(ToString::to_string).collect();
    let mut child = Command::new(bench)
        .arg("swarm")
        .arg("--creds")
        .arg(&file)
        .arg("--addrs")
        .arg(addr_list.join(","))
        .arg("--concurrency")
        .arg(concurrency.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| Error::setup(format!("starting {} swarm: {e}", bench.display())))?;
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(Error::setup("swarm process without stdio pipes"));
    };
    let mut swarm = Swarm::new();
    let slots: Arc<Vec<Arc<Slot>>> = Arc::new(swarm.push_slots(creds.len()));
    // The parent epoch on the wall clock: arrival = wall µs − this.
    let epoch_unix = unix_us(SystemTime::now()).saturating_sub(swarm.micros(Instant::now()));
    let (total, cancel) = swarm.handles();
    let failures = swarm.failures.clone();
    swarm.spawn(async move {
        let mut lines = BufReader::new(stdout).lines();
        loop {
            tokio::select! {
                () = cancel.cancelled() => break,
                l = lines.next_line() => match l {
                    Ok(Some(l)) => apply(&l, &slots, &total, &failures, epoch_unix),
                    _ => {
                        eprintln!("swarm process ended its output");
                        break;
                    }
                },
            }
        }
        drop(stdin); // the child ends on EOF
        if tokio::time::timeout(EXIT_BOUND, child.wait())
            .await
            .is_err()
        {
            let _ = child.kill().await;
        }
    });
    swarm.wait_first_snapshots(0, bound).await?;
    Ok(swarm)
}

/// Applies one line of the child's output to the mirrored slots.
fn apply(line: &str, slots: &[Arc<Slot>], total: &AtomicU64, failures: &Failures, epoch_unix: u64) {
    if let Some((_, why)) = line.strip_prefix("f ").and_then(|r| r.split_once(' ')) {
        count_failure(failures, why.to_string());
        return;
    }
    let mut f = line.split(' ');
    let kind = f.next();
    let mut num = || f.next().and_then(|v| v.parse::<u64>().ok());
    let since = |at: u64| at.saturating_sub(epoch_unix);
    match (kind, num(), num(), num()) {
        (Some("a"), Some(i), Some(attempt), Some(at)) => {
            let addr = num().unwrap_or(0);
            if let Some(s) = slots.get(i as usize) {
                s.attempt(
                    u32::try_from(attempt).unwrap_or(u32::MAX),
                    usize::try_from(addr).unwrap_or(usize::MAX),
                );
                s.dialled_us.store(since(at), Ordering::Release);
            }
        }
        (Some("c"), Some(i), Some(at), None) => {
            if let Some(s) = slots.get(i as usize) {
                s.connected_us.store(since(at), Ordering::Release);
            }
        }
        (Some("h"), Some(i), Some(at), None) => {
            if let Some(s) = slots.get(i as usize) {
                s.accepted_us.store(since(at), Ordering::Release);
            }
        }
        (Some("e"), Some(i), Some(at), None) => {
            if let Some(s) = slots.get(i as usize) {
                s.ends.fetch_add(1, Ordering::AcqRel);
                s.ended_us.store(since(at), Ordering::Release);
            }
        }
        (Some("s"), Some(i), Some(revision), Some(at)) => {
            if let Some(s) = slots.get(i as usize) {
                s.snapshot(revision, since(at), total);
            }
        }
        _ => eprintln!("swarm process: unexpected line {line:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::swarm::Failure;

    #[test]
    fn lines_round_trip_into_slots() {
        let slots: Vec<Arc<Slot>> = (0..2).map(|_| Arc::new(Slot::default())).collect();
        let total = AtomicU64::new(0);
        let failures = Failures::default();
        let at = SystemTime::UNIX_EPOCH + Duration::from_micros(5_000_250);
        let epoch = 5_000_000;
        let t = |us: u64| SystemTime::UNIX_EPOCH + Duration::from_micros(5_000_000 + us);
        for ev in [
            Event::Attempt {
                i: 1,
                attempt: 2,
                addr: 0,
                at: t(10),
            },
            Event::Attempt {
                i: 1,
                attempt: 1,
                addr: 1,
                at: t(100),
            },
            Event::Connected { i: 1, at: t(120) },
            Event::Accepted { i: 1, at: t(200) },
            Event::Snapshot {
                i: 1,
                revision: 7,
                at,
            },
            Event::Failed {
                i: 1,
                why: Failure::Connect,
                addr: None,
            },
            Event::Ended { i: 1, at: t(300) },
            Event::Failed {
                i: 0,
                why: Failure::Status(tonic::Code::Unavailable),
                addr: None,
            },
            Event::Failed {
                i: 0,
                why: Failure::Refused,
                addr: None,
            },
            Event::Failed {
                i: 0,
                why: Failure::Refused,
                addr: Some(1),
            },
        ] {
            apply(line(ev).trim_end(), &slots, &total, &failures, epoch);
        }
        apply("garbage", &slots, &total, &failures, epoch);
        assert_eq!(
            *failures.lock().unwrap(),
            [
                ("connect".to_string(), 1),
                ("refused".to_string(), 1),
                ("refused@1".to_string(), 1),
                ("status-Unavailable".to_string(), 1)
            ]
            .into()
        );
        let s = &slots[1];
        assert_eq!(s.max_attempts.load(Ordering::Acquire), 2);
        assert_eq!(s.attempts.load(Ordering::Acquire), 1);
        assert_eq!(s.revision.load(Ordering::Acquire), 7);
        assert_eq!(s.received_us.load(Ordering::Acquire), 250);
        assert_eq!(s.dialled_us.load(Ordering::Acquire), 100);
        // The latest attempt's address, and the first one's since the slot was made.
        assert_eq!(s.addr.load(Ordering::Acquire), 1);
        assert_eq!(s.first_addr(), Some(0));
        s.clear_first_addr();
        assert_eq!(s.first_addr(), None);
        assert_eq!(slots[0].first_addr(), None);
        assert_eq!(s.connected_us.load(Ordering::Acquire), 120);
        assert_eq!(s.accepted_us.load(Ordering::Acquire), 200);
        assert_eq!(total.load(Ordering::Acquire), 1);
        assert_eq!(s.ends.load(Ordering::Acquire), 1);
        assert_eq!(s.ended_us.load(Ordering::Acquire), 300);
        assert_eq!(slots[0].ends.load(Ordering::Acquire), 0);
        assert_eq!(slots[0].snapshots.load(Ordering::Acquire), 0);
    }
}
