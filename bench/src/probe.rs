//! Measurements the size phases and the end-to-end phase share: the bare
//! floor server's flips to `n` streams, and the snapshot the hub sends a
//! cluster (whose bytes the floor server publishes).

use std::time::Duration;

use fleetgate_proto::SpokeServiceClient;
use fleetgate_proto::v1::{self as pb, hub_message, spoke_message};
use tonic::metadata::MetadataValue;

use crate::config::BenchConfig;
use crate::fleet;
use crate::floor::FloorProcess;
use crate::swarm::{Credential, Swarm};
use crate::{Error, Result, flips};

/// Spokes connecting at once while a fleet comes up.
pub(crate) const CONNECT_CONCURRENCY: usize = 64;
/// Per size: how long connecting may take before the run fails.
pub(crate) const CONNECT_BOUND: Duration = Duration::from_secs(300);

/// `cfg.flips` publications of the snapshot by the bare floor server to `n` streams.
pub(crate) async fn floor_flips(
    cfg: &BenchConfig,
    snapshot_file: &std::path::Path,
    n: usize,
) -> Result<(flips::FlipTimes, f64)> {
    let mut server = FloorProcess::start(&cfg.bins.bench, snapshot_file).await?;
    let mut swarm = Swarm::new();
    let creds = floor_credentials(n);
    let connect = swarm.add(server.addr, &creds, CONNECT_CONCURRENCY, CONNECT_BOUND);
    let ((), per_stream) = connected_measured(&server, n, connect).await?;
    let times = flips::through_floor(&swarm, &mut server, cfg.flips).await?;
    swarm.shutdown().await;
    server.stop().await?;
    Ok((times, per_stream))
}

/// The bare floor server with `n` streams connected by spokes in a process of their own
/// ([`crate::swarm_process`]: the open-files limit is per process, and this one holds
/// the hub's spokes meanwhile), and its memory per stream (KiB, measured as in
/// [`floor_flips`]). Stop both when done.
pub(crate) async fn floor_connected(
    cfg: &BenchConfig,
    snapshot_file: &std::path::Path,
    n: usize,
    dir: &std::path::Path,
) -> Result<(FloorProcess, Swarm, f64)> {
    let server = FloorProcess::start(&cfg.bins.bench, snapshot_file).await?;
    let (creds, addrs) = (floor_credentials(n), [server.addr]);
    let connect = crate::swarm_process::start(
        &cfg.bins.bench,
        &addrs,
        &creds,
        CONNECT_CONCURRENCY,
        CONNECT_BOUND,
        dir,
    );
    let (swarm, per_stream) = connected_measured(&server, n, connect).await?;
    Ok((server, swarm, per_stream))
}

/// Runs `connect` (`n` streams to the floor `server`) and measures the server's memory
/// per stream (KiB) as the hub's is (`run`): RSS 1 s after start, then with every stream
/// connected and 2 s idle.
async fn connected_measured<T>(
    server: &FloorProcess,
    n: usize,
    connect: impl std::future::Future<Output = Result<T>>,
) -> Result<(T, f64)> {
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    let rss0 = crate::proc_stats::rss_kib(server.pid()?)?;
    let connected = connect.await?;
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    let rss = crate::proc_stats::rss_kib(server.pid()?)?;
    Ok((connected, rss.saturating_sub(rss0) as f64 / n.max(1) as f64))
}

/// Credentials for `n` spokes of the bare floor server, which checks none.
pub(crate) fn floor_credentials(n: usize) -> Vec<Credential> {
    (0..n)
        .map(|i| Credential {
            cluster: fleet::cluster_name(i),
            token: "floor".into(),
        })
        .collect()
}

/// The snapshot the hub sends to `cred`'s cluster (its bytes feed the floor).
pub(crate) async fn fetch_snapshot(
    addr: std::net::SocketAddr,
    cred: &Credential,
) -> Result<pb::Snapshot> {
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .map_err(|e| Error::setup(e.to_string()))?
        .connect()
        .await?;
    let auth = MetadataValue::try_from(format!("Bearer {}", cred.token))
        .map_err(|e| Error::setup(e.to_string()))?;
    let mut client =
        SpokeServiceClient::with_interceptor(channel, move |mut r: tonic::Request<()>| {
            r.metadata_mut().insert("authorization", auth.clone());
            Ok(r)
        });
    let hello = pb::SpokeMessage {
        msg: Some(spoke_message::Msg::Hello(pb::Hello {
            local_gates_enforced: Default::default(),
            cluster: cred.cluster.clone(),
            spoke_version: "bench".into(),
            revision: 0,
            ..Default::default()
        })),
    };
    // Keep the outbound half open until the snapshot arrived.
    let (tx, rx) = tokio::sync::mpsc::channel(1);
    tx.send(hello).await.map_err(|_| Error::setup("hello"))?;
    let mut inbound = client
        .connect(tokio_stream::wrappers::ReceiverStream::new(rx))
        .await?
        .into_inner();
    loop {
        let msg = tokio::time::timeout(Duration::from_secs(30), inbound.message())
            .await
            .map_err(|_| Error::Timeout("first snapshot".into()))??
            .ok_or_else(|| Error::setup("hub ended the stream before a snapshot"))?;
        if let Some(hub_message::Msg::Snapshot(s)) = msg.msg {
            drop(tx);
            return Ok(s);
        }
    }
}
