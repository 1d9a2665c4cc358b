//! Two hub replicas on one PostgreSQL (the horizontal-scale claim): the
//! largest fleet's spokes, in their own process, dial the replicas
//! round-robin (as an L4 load balancer would spread them); gate flips go
//! through each replica's REST API in turn, and every spoke must receive
//! every flip, whichever replica it is connected to. Compared with the same
//! flips against one replica, with the same spoke process, in the same run.
//! Then a rolling restart of replica 1 ([`crate::rolling`]).

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use serde::Serialize;

use crate::fleet::Flipper;
use crate::flips::{self, FlipTimes};
use crate::hub_gauges::streams;
use crate::hub_process::{HubProcess, HubSpec};
use crate::rolling::{self, RollingResult};
use crate::stats::Percentiles;
use crate::swarm::Credential;
use crate::{Result, swarm_process};

/// What the replicas phase measured.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ReplicasResult {
    pub spokes: usize,
    pub replicas: usize,
    /// Streams each replica held during the flips (its `spokes_connected`).
    pub streams_per_replica: Vec<u64>,
    /// Flip → spoke, one replica (same spoke process, same run).
    pub single: Percentiles,
    pub single_all: Percentiles,
    /// Flip → spoke with the spokes spread over the replicas, flips through
    /// each replica in turn.
    pub spread: Percentiles,
    pub spread_all: Percentiles,
    /// spread p99 / single p99.
    pub ratio_p99: f64,
    /// The rolling restart of one replica after the flips.
    pub rolling: Option<RollingResult>,
}

/// How the phase is run.
pub struct Setup<'a> {
    pub bench: &'a Path,
    pub spec: &'a HubSpec,
    pub creds: &'a [Credential],
    pub workdir: &'a Path,
    pub concurrency: usize,
    pub connect_bound: Duration,
    pub flips: usize,
    /// The hub's database (the rolling restart's target revision).
    pub pool: &'a sqlx::PgPool,
    /// The clusters of `creds` are named `prefix…`.
    pub prefix: &'a str,
}

/// Starts `setup.replicas - 1` more replicas beside `hub`, connects the
/// fleet spread over all of them, flips through each in turn (`single` is
/// the same fleet's flips against `hub` alone), then restarts replica 1 as a
/// rolling update does.
pub async fn run(
    setup: &Setup<'_>,
    hub: &HubProcess,
    replicas: usize,
    flipper: &mut Flipper,
    single: &FlipTimes,
    progress: &dyn Fn(&str),
) -> Result<ReplicasResult> {
    let mut others = Vec::new();
    let mut specs = Vec::new();
    for r in 1..replicas.max(2) {
        let id = format!("bench-hub-{r}");
        let spec = setup
            .spec
            .replica(&id, setup.workdir.join(format!("{id}.log")));
        others.push(spec.start().await?);
        specs.push(spec);
    }
    let all: Vec<&HubProcess> = std::iter::once(hub).chain(others.iter()).collect();
    let addrs: Vec<SocketAddr> = all.iter().map(|h| h.grpc).collect();
    let bases: Vec<String> = all.iter().map(|h| h.base_url()).collect();
    let count = all.len();
    progress(&format!(
        "replicas: {} spokes (own process) spread over {} replicas",
        setup.creds.len(),
        count
    ));
    let swarm = swarm_process::start(
        setup.bench,
        &addrs,
        setup.creds,
        setup.concurrency,
        setup.connect_bound,
        setup.workdir,
    )
    .await?;
    let streams = streams(&all).await?;
    progress(&format!(
        "replicas: {} flips through each replica in turn (streams per replica {streams:?})",
        setup.flips
    ));
    drop(all);
    let spread = flips::through_hubs(&swarm, flipper, &bases, setup.flips).await;
    let rolling = match &spread {
        Ok(_) => {
            progress(&format!(
                "replicas: rolling restart of replica {} (SIGTERM, the gate changed through replica 0)",
                rolling::DRAINED
            ));
            let replicas = rolling::Replicas {
                hub,
                others: &mut others,
                specs: &specs,
            };
            let r = rolling::run(
                &swarm,
                replicas,
                flipper,
                setup.flips,
                setup.pool,
                setup.prefix,
            )
            .await;
            if let Ok(r) = &r {
                progress(&format!(
                    "replicas: rolling restart, {} spokes moved; all re-synced {:.2} s after SIGTERM",
                    r.handover.moved,
                    r.handover.resync_all.max_ms / 1e3
                ));
            }
            Some(r)
        }
        Err(_) => None,
    };
    flipper.via(hub.base_url());
    swarm.shutdown().await;
    for h in others {
        h.stop().await?;
    }
    let spread = spread?;
    let rolling = rolling.transpose()?;
    Ok(ReplicasResult {
        spokes: setup.creds.len(),
        replicas: count,
        streams_per_replica: streams,
        single: single.per_spoke,
        single_all: single.per_flip_all,
        spread: spread.per_spoke,
        spread_all: spread.per_flip_all,
        ratio_p99: if single.per_spoke.p99_ms > 0.0 {
            spread.per_spoke.p99_ms / single.per_spoke.p99_ms
        } else {
            0.0
        },
        rolling,
    })
}
