//! The hub's listeners queue a reconnect storm's connections instead of
//! dropping them: more connections than tokio's default backlog (1024)
//! complete while nobody accepts, so no spoke waits for TCP's 1 s SYN
//! retransmission when the whole fleet dials a restarted hub at once.

use std::time::Duration;

use tokio::net::TcpStream;

/// tokio's `TcpListener::bind` backlog, which a storm used to overflow.
const TOKIO_DEFAULT_BACKLOG: usize = 1024;
const BOUND: Duration = Duration::from_secs(5);

fn read_number(path: &str, pick: impl Fn(&str) -> Option<&str>) -> Option<usize> {
    let text = std::fs::read_to_string(path).ok()?;
    pick(&text)?.trim().parse().ok()
}

#[tokio::test]
async fn listener_queues_more_connections_than_tokios_default_backlog() {
    // The kernel caps the backlog at net.core.somaxconn (4096 on current Linux).
    let somaxconn = read_number("/proc/sys/net/core/somaxconn", |t| Some(t)).unwrap_or(4096);
    let n = (TOKIO_DEFAULT_BACKLOG + 400).min(somaxconn.saturating_sub(1));
    assert!(
        n > TOKIO_DEFAULT_BACKLOG + 1,
        "net.core.somaxconn = {somaxconn} leaves nothing to show (needs ≥ 1100)"
    );
    let open_files = read_number("/proc/self/limits", |t| {
        t.lines()
            .find(|l| l.starts_with("Max open files"))?
            .split_whitespace()
            .nth(3)
    });
    assert!(
        open_files.is_none_or(|l| l >= n + 256),
        "open-files limit {open_files:?} is too low for {n} connections: run under `ulimit -n 4096`"
    );

    let backlog = fleetgate_hub::config::defaults::LISTEN_BACKLOG;
    let listener = fleetgate_hub::serve::bind("127.0.0.1:0".parse().unwrap(), backlog).unwrap();
    let addr = listener.local_addr().unwrap();
    let mut clients = Vec::with_capacity(n);
    for i in 0..n {
        let connected = tokio::time::timeout(BOUND, TcpStream::connect(addr)).await;
        let stream = connected
            .unwrap_or_else(|_| panic!("connection {i} was not queued within {BOUND:?}"))
            .unwrap_or_else(|e| panic!("connection {i}: {e}"));
        clients.push(stream);
    }
    // Every queued connection is a real one the server then accepts.
    for i in 0..n {
        tokio::time::timeout(BOUND, listener.accept())
            .await
            .unwrap_or_else(|_| panic!("accept {i} timed out"))
            .unwrap();
    }
}
