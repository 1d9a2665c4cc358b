//! The hub as the demo starts it (in process) and talks to it: waiting until
//! it answers, and registering the demo's clusters.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use fleetgate_api_types::{ClusterWithToken, FleetSummary, RegisterCluster};
use serde_json::json;

use crate::error::other;
use crate::fleet;
use fleetgate::client::{Client, seg};
use fleetgate::error::{Error, Result};

/// `addr` with an unspecified IP (0.0.0.0) as 127.0.0.1, for clients.
pub(crate) fn loopback(addr: SocketAddr) -> SocketAddr {
    if addr.ip().is_unspecified() {
        SocketAddr::from(([127, 0, 0, 1], addr.port()))
    } else {
        addr
    }
}

/// Waits (bounded) until the hub answers; says why if its task ended first.
pub(crate) async fn wait_ready(
    client: &Client,
    hub_url: &str,
    hub_task: &mut tokio::task::JoinHandle<fleetgate_hub::Result<()>>,
) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if client.get::<FleetSummary>("/status", &[]).await.is_ok() {
            return Ok(());
        }
        if hub_task.is_finished() {
            let why = match hub_task.await.map_err(|e| other("hub", e))? {
                Err(e) => e.to_string(),
                Ok(()) => "it stopped".to_string(),
            };
            return Err(other(
                "the hub did not start",
                format!("{why} (pick other ports with --http-addr / --grpc-addr)"),
            ));
        }
        if Instant::now() > deadline {
            return Err(other("hub", format!("not ready at {hub_url} within 60 s")));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Registers the cluster (or, on a reused database, rotates its token).
pub(crate) async fn register(client: &Client, c: &fleet::DemoCluster) -> Result<String> {
    let body = RegisterCluster {
        name: c.name.clone(),
        labels: c.labels.clone(),
        ..Default::default()
    };
    let v: ClusterWithToken = match client.post("/clusters", &[], &body).await {
        Ok(v) => v,
        Err(Error::Api { status: 409, .. }) => {
            client
                .post(
                    &format!("/clusters/{}/rotate-token", seg(&c.name)),
                    &[],
                    &json!({}),
                )
                .await?
        }
        Err(e) => return Err(e),
    };
    Ok(v.token)
}
