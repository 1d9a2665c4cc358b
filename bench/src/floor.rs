//! The physical floor, measured in the same run: (1) the same snapshot bytes
//! fanned out to N streams by a bare tonic server with no hub logic (a separate
//! process, `fleetgate-bench floor-server`, like the hub), published on a line
//! on its stdin; (2) a PostgreSQL NOTIFY round-trip.

use std::net::SocketAddr;
use std::path::Path;
use std::pin::Pin;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use fleetgate_proto::v1::{self as pb, hub_message};
use fleetgate_proto::{SpokeService, SpokeServiceServer};
use futures::{Stream, StreamExt as _};
use prost::Message as _;
use sqlx::postgres::PgListener;
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::watch;
use tonic::{Request, Response, Status, Streaming};

use crate::stats::Percentiles;
use crate::{Error, Result};

/// The bare fan-out service: every stream gets the current message, then each
/// new one. Nothing else: no auth, no database, no per-cluster state.
struct Floor {
    current: watch::Receiver<Arc<pb::HubMessage>>,
}

type HubStream = Pin<Box<dyn Stream<Item = Result<pb::HubMessage, Status>> + Send>>;

#[tonic::async_trait]
impl SpokeService for Floor {
    type ConnectStream = HubStream;

    async fn connect(
        &self,
        req: Request<Streaming<pb::SpokeMessage>>,
    ) -> Result<Response<HubStream>, Status> {
        // Keep the inbound half open for the stream's lifetime (a real spoke
        // stream is bidirectional), without reading it.
        let inbound = req.into_inner();
        let out = tokio_stream::wrappers::WatchStream::new(self.current.clone()).map(move |m| {
            let _keep = &inbound;
            Ok(m.as_ref().clone())
        });
        Ok(Response::new(Box::pin(out)))
    }
}

/// `fleetgate-bench floor-server`: serves the floor on `addr` with the
/// snapshot in `snapshot_file` (protobuf `Snapshot`); each stdin line publishes
/// it again with the next revision; stdin EOF ends the server.
pub async fn serve(addr: SocketAddr, snapshot_file: &Path) -> Result<()> {
    let bytes = std::fs::read(snapshot_file)?;
    let mut snapshot = pb::Snapshot::decode(bytes.as_slice())
        .map_err(|e| Error::setup(format!("decoding {}: {e}", snapshot_file.display())))?;
    let msg = |s: &pb::Snapshot| {
        Arc::new(pb::HubMessage {
            msg: Some(hub_message::Msg::Snapshot(s.clone())),
        })
    };
    let (tx, rx) = watch::channel(msg(&snapshot));
    let stop = async move {
        let mut lines = BufReader::new(tokio::io::stdin()).lines();
        while let Ok(Some(_)) = lines.next_line().await {
            snapshot.revision += 1;
            tx.send_replace(msg(&snapshot));
        }
    };
    let listener = tokio::net::TcpListener::bind(addr).await?;
    tonic::transport::Server::builder()
        .tcp_nodelay(true)
        .add_service(SpokeServiceServer::new(Floor { current: rx }))
        .serve_with_incoming_shutdown(
            tokio_stream::wrappers::TcpListenerStream::new(listener),
            stop,
        )
        .await?;
    Ok(())
}

/// A running floor server process.
pub struct FloorProcess {
    child: Child,
    pub addr: SocketAddr,
}

impl FloorProcess {
    /// Starts `bench_bin floor-server` and waits (≤ 30 s) until it accepts.
    pub async fn start(bench_bin: &Path, snapshot_file: &Path) -> Result<Self> {
        let addr = SocketAddr::from(([127, 0, 0, 1], fleetgate_tests::free_port()));
        Self::start_on(bench_bin, snapshot_file, addr).await
    }

    /// [`FloorProcess::start`] on `addr` (a restart on the port its spokes dial).
    pub async fn start_on(
        bench_bin: &Path,
        snapshot_file: &Path,
        addr: SocketAddr,
    ) -> Result<Self> {
        let child = Command::new(bench_bin)
            .arg("floor-server")
            .arg("--addr")
            .arg(addr.to_string())
            .arg("--snapshot")
            .arg(snapshot_file)
            .stdin(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| Error::setup(format!("starting floor server: {e}")))?;
        let deadline = Instant::now() + Duration::from_secs(30);
        while tokio::net::TcpStream::connect(addr).await.is_err() {
            if Instant::now() > deadline {
                return Err(Error::Timeout("floor server not accepting".into()));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Ok(Self { child, addr })
    }

    /// The server's process id (for its RSS).
    pub fn pid(&self) -> Result<u32> {
        self.child
            .id()
            .ok_or_else(|| Error::setup("floor server exited"))
    }

    /// Publishes the snapshot again (next revision).
    pub async fn publish(&mut self) -> Result<()> {
        let stdin = self
            .child
            .stdin
            .as_mut()
            .ok_or_else(|| Error::setup("floor server stdin closed"))?;
        stdin.write_all(b"publish\n").await?;
        stdin.flush().await?;
        Ok(())
    }

    /// Closes stdin and reaps the server (≤ 10 s, then kills): every stream ends
    /// with status OK (the watch the streams follow is dropped), as a draining
    /// hub ends its spoke streams, and the server exits once its connections close.
    pub async fn stop(mut self) -> Result<()> {
        drop(self.child.stdin.take());
        if tokio::time::timeout(Duration::from_secs(10), self.child.wait())
            .await
            .is_err()
        {
            self.child.kill().await?;
        }
        Ok(())
    }
}

/// Round-trips of `select pg_notify(..)` on one connection to a LISTEN on
/// another: the floor under the hub's change notification.
pub async fn notify_rtt(database_url: &str, samples: usize) -> Result<Percentiles> {
    const CHANNEL: &str = "fleetgate_bench_rtt";
    let mut listener = PgListener::connect(database_url).await?;
    listener.listen(CHANNEL).await?;
    let pool = fleetgate_hub::db::connect(database_url, 1).await?;
    let mut rtts = Vec::with_capacity(samples);
    for i in 0..samples {
        let payload = i.to_string();
        let start = Instant::now();
        sqlx::query("select pg_notify($1, $2)")
            .bind(CHANNEL)
            .bind(&payload)
            .execute(&pool)
            .await?;
        loop {
            let n = tokio::time::timeout(Duration::from_secs(10), listener.recv())
                .await
                .map_err(|_| Error::Timeout("NOTIFY round-trip".into()))??;
            if n.payload() == payload {
                break;
            }
        }
        rtts.push(start.elapsed());
    }
    pool.close().await;
    Ok(Percentiles::of(&rtts))
}
