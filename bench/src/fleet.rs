//! The benchmark fleet in the hub's database: N clusters registered in bulk
//! through the hub's service layer (the same code path as `POST /clusters`:
//! validation, token hashing, audit row, revision bump, notification, one
//! transaction each; 16 concurrent), one gate over all of them, and gate flips
//! through the REST API as an operator would do them.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use fleetgate_hub::service::types::RegisterCluster;
use fleetgate_hub::{Actor, Role, Service};
use futures::StreamExt as _;
use serde::Deserialize;

use crate::swarm::Credential;
use crate::{Error, Result};

/// The gate every benchmark cluster is governed by.
pub const GATE: &str = "bench-window";

/// A realistic gate: weekday window, Friday freeze, over every bench cluster
/// (`bench/bench-window.yaml`, which the hub's `write_cost` test seeds too).
const GATE_YAML: &str = include_str!("../bench-window.yaml");

/// How many registrations run at once.
const REGISTER_CONCURRENCY: usize = 16;

/// The name of bench cluster `i`.
pub fn cluster_name(i: usize) -> String {
    format!("b-{i:05}")
}

/// The benchmark's admin actor for service-layer writes.
pub fn actor() -> Actor {
    Actor::new("fleetgate-bench", Role::Admin)
}

/// Registers clusters `range` (labelled `fleet=bench`); returns their tokens.
pub async fn register(
    service: &Service,
    range: std::ops::Range<usize>,
    labels: &[(&str, &str)],
) -> Result<Vec<Credential>> {
    let actor = actor();
    let mut labels_map = BTreeMap::new();
    for (k, v) in labels {
        labels_map.insert(k.to_string(), v.to_string());
    }
    let results: Vec<Result<Credential>> = futures::stream::iter(range)
        .map(|i| {
            let req = RegisterCluster {
                name: cluster_name(i),
                labels: labels_map.clone(),
                ..Default::default()
            };
            let actor = &actor;
            async move {
                let c = service
                    .register_cluster(actor, req, Some("scale benchmark"))
                    .await?;
                Ok(Credential {
                    cluster: c.cluster.name,
                    token: c.token,
                })
            }
        })
        .buffered(REGISTER_CONCURRENCY)
        .collect()
        .await;
    results.into_iter().collect()
}

/// Creates the bench gate, and `extra` copies of it named `bench-extra-<i>`.
pub async fn create_gate(service: &Service, extra: usize) -> Result<()> {
    let gate = fleetgate_policy::parse_gate(GATE_YAML)
        .map_err(|e| Error::setup(format!("bench gate: {e}")))?;
    let copies = (0..extra).map(|i| {
        let mut copy = gate.clone();
        copy.metadata.name = format!("bench-extra-{i}");
        copy
    });
    for g in std::iter::once(gate.clone()).chain(copies) {
        service.create_gate(&actor(), g, None).await?;
    }
    Ok(())
}

/// Flips the bench gate through the REST API: closes it by override, or
/// cancels that override (back to its schedule, open).
pub struct Flipper {
    client: reqwest::Client,
    base: String,
    token: String,
    gate: String,
    open_override: Option<String>,
}

#[derive(Deserialize)]
struct Created {
    id: String,
}

impl Flipper {
    /// A flipper against the hub at `base` (`http://host:port`).
    pub fn new(base: String, token: String) -> Self {
        Self {
            client: reqwest::Client::new(),
            base,
            token,
            gate: GATE.into(),
            open_override: None,
        }
    }

    /// Sends the next flips to the hub (replica) at `base`.
    pub fn via(&mut self, base: String) {
        self.base = base;
    }

    /// The same for another gate than the bench gate.
    pub fn with_gate(mut self, gate: &str) -> Self {
        self.gate = gate.into();
        self
    }

    /// Warms up the HTTP connection so a flip does not pay the TCP handshake.
    pub async fn warm_up(&self) -> Result<()> {
        self.client
            .get(format!("{}/healthz", self.base))
            .send()
            .await?;
        Ok(())
    }

    /// Whether the next [`Flipper::flip`] closes the gate (creates an override);
    /// otherwise it cancels the override the last one created.
    pub fn next_closes(&self) -> bool {
        self.open_override.is_none()
    }

    /// One flip; returns when the hub answered. Call right after taking the
    /// start time.
    pub async fn flip(&mut self, n: usize) -> Result<Duration> {
        let start = Instant::now();
        let resp = match self.open_override.take() {
            None => {
                let resp = self
                    .client
                    .post(format!("{}/api/v1/gates/{}/close", self.base, self.gate))
                    .bearer_auth(&self.token)
                    .json(&serde_json::json!({"for": "1h", "reason": format!("bench flip {n}")}))
                    .send()
                    .await?
                    .error_for_status()?;
                let created: Created = resp.json().await?;
                self.open_override = Some(created.id);
                return Ok(start.elapsed());
            }
            Some(id) => {
                self.client
                    .delete(format!("{}/api/v1/overrides/{id}", self.base))
                    .query(&[("reason", format!("bench flip {n}"))])
                    .bearer_auth(&self.token)
                    .send()
                    .await?
            }
        };
        resp.error_for_status()?;
        Ok(start.elapsed())
    }
}

/// Creates a close override through the service layer (no REST; used while
/// the hub is down); returns it, for [`cancel_by_service`].
pub async fn close_by_service(
    service: &Service,
    reason: &str,
) -> Result<fleetgate_hub::db::overrides::OverrideRecord> {
    let req = fleetgate_hub::service::types::OverrideRequest {
        duration: Some("1h".into()),
        reason: reason.into(),
        ..Default::default()
    };
    Ok(service
        .create_override(&actor(), GATE, fleetgate_policy::GateState::Closed, req)
        .await?)
}

/// Cancels an override made by [`close_by_service`].
pub async fn cancel_by_service(
    service: &Service,
    record: &fleetgate_hub::db::overrides::OverrideRecord,
) -> Result<()> {
    service
        .cancel_override(&actor(), record.id, Some("benchmark phase over"))
        .await?;
    Ok(())
}
