//! The hub as a real `fleetgate-hub serve` process (so its RSS and CPU are its
//! own): start on fixed loopback ports, wait until `/readyz`, stop or restart.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use fleetgate_tests::ChildGuard;

use crate::{Error, Result};

/// Readiness probe interval: short next to the 0.5 s start target.
const PROBE_EVERY: Duration = Duration::from_millis(2);
/// One readiness probe's bound (a ready hub answers `/readyz` within ~1 ms).
const PROBE_TIMEOUT: Duration = Duration::from_millis(500);

/// A running hub process.
#[derive(Debug)]
pub struct HubProcess {
    child: ChildGuard,
    pub http: SocketAddr,
    pub grpc: SocketAddr,
}

/// How to start (and restart) the hub.
#[derive(Debug, Clone)]
pub struct HubSpec {
    pub bin: PathBuf,
    pub database_url: String,
    pub admin_token: String,
    pub http: SocketAddr,
    pub grpc: SocketAddr,
    /// The hub's stderr goes here (appended across restarts).
    pub log: PathBuf,
    /// `FLEETGATE_REPLICA_ID` (replicas on one database need distinct ids).
    pub replica: String,
}

impl HubSpec {
    /// A spec on fresh loopback ports.
    pub fn new(bin: &Path, database_url: &str, admin_token: &str, log: PathBuf) -> Self {
        let port = |_| SocketAddr::from(([127, 0, 0, 1], fleetgate_tests::free_port()));
        Self {
            bin: bin.to_path_buf(),
            database_url: database_url.to_string(),
            admin_token: admin_token.to_string(),
            http: port(()),
            grpc: port(()),
            log,
            replica: "bench-hub".into(),
        }
    }

    /// Another replica on the same database: fresh ports, its own id and log.
    pub fn replica(&self, id: &str, log: PathBuf) -> Self {
        Self {
            replica: id.into(),
            ..Self::new(&self.bin, &self.database_url, &self.admin_token, log)
        }
    }

    /// Starts the hub and waits (≤ 60 s) until it is ready.
    pub async fn start(&self) -> Result<HubProcess> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)?;
        let child = Command::new(&self.bin)
            .arg("serve")
            .env("DATABASE_URL", &self.database_url)
            .env("FLEETGATE_HTTP_ADDR", self.http.to_string())
            .env("FLEETGATE_GRPC_ADDR", self.grpc.to_string())
            .env("FLEETGATE_ADMIN_TOKEN", &self.admin_token)
            .env("FLEETGATE_REPLICA_ID", &self.replica)
            // Plain log lines: the storm reads the hub's startup phases from them.
            .env("NO_COLOR", "1")
            .env(
                "RUST_LOG",
                std::env::var("BENCH_HUB_LOG").unwrap_or("info".into()),
            )
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .map_err(|e| Error::setup(format!("starting {}: {e}", self.bin.display())))?;
        let mut hub = HubProcess {
            child: ChildGuard(child),
            http: self.http,
            grpc: self.grpc,
        };
        hub.wait_ready(Duration::from_secs(60)).await?;
        Ok(hub)
    }
}

impl HubProcess {
    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.0.id()
    }

    /// The REST base URL.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.http)
    }

    /// Probes every [`PROBE_EVERY`] until `/readyz` answers 200 and the gRPC
    /// port accepts: the benchmark's (outside) view of "ready".
    async fn wait_ready(&mut self, bound: Duration) -> Result<()> {
        // No pooled connection: each probe is what a fresh client would see.
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(0)
            .build()?;
        let url = format!("{}/readyz", self.base_url());
        let deadline = Instant::now() + bound;
        loop {
            if let Some(status) = self.child.0.try_wait()? {
                return Err(Error::setup(format!("hub exited during start: {status}")));
            }
            let ready = client
                .get(&url)
                .timeout(PROBE_TIMEOUT)
                .send()
                .await
                .is_ok_and(|r| r.status().is_success());
            // The gRPC port must accept too (it binds after HTTP).
            if ready && tokio::net::TcpStream::connect(self.grpc).await.is_ok() {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(Error::Timeout(format!("hub not ready within {bound:?}")));
            }
            tokio::time::sleep(PROBE_EVERY).await;
        }
    }

    /// SIGTERM (graceful drain), then SIGKILL if it has not exited within 30 s.
    pub async fn stop(self) -> Result<()> {
        self.terminate();
        self.exited().await
    }

    /// SIGTERM (graceful drain), without waiting; [`HubProcess::exited`] waits.
    pub fn terminate(&self) {
        self.child.terminate();
    }

    /// Waits until the process exited after [`HubProcess::terminate`]; SIGKILL if it
    /// has not within 30 s.
    pub async fn exited(mut self) -> Result<()> {
        let deadline = Instant::now() + Duration::from_secs(30);
        while self.child.0.try_wait()?.is_none() {
            if Instant::now() > deadline {
                break; // ChildGuard's drop kills it
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        Ok(())
    }
}
