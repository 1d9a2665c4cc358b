//! Read endpoints the dashboard needs beyond the REST API, each one request
//! per page: who am I, the fleet grid (every gate on every cluster), and a
//! gate's page (rules in words, 7-day preview, overrides, clusters in scope).
//! They only compose service-layer reads.

use std::collections::{BTreeMap, HashMap};

use axum::Json;
use axum::extract::{Path, State};
use chrono::{DateTime, Utc};
use fleetgate_policy::Preview;
use serde::Serialize;
use utoipa::ToSchema;

use crate::Result;
use crate::rest::AppState;
use crate::rest::extract::ApiActor;
use crate::service::overrides::OverrideQuery;
use crate::service::page::MAX_LIMIT;
use crate::service::types::{Cluster, GateRecord, OverrideRecord};
use crate::service::{Actor, PageRequest, Role, Service};

/// The caller (`GET /api/v1/whoami`).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct WhoAmI {
    /// The API token's name.
    pub name: String,
    pub role: Role,
}

/// Who holds the presented token; the dashboard shows actions by role.
#[utoipa::path(get, path = "/api/v1/whoami", tag = "dashboard",
    responses(
        (status = 200, description = "The token's name and role", body = WhoAmI),
        (status = 401, description = "Missing or invalid token", body = crate::error::ErrorBody),
    ), security(("bearer" = [])))]
pub async fn whoami(ApiActor(actor): ApiActor) -> Json<WhoAmI> {
    Json(WhoAmI {
        name: actor.name,
        role: actor.role,
    })
}

/// One gate on one cluster in the grid.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Cell {
    /// `open` or `closed`.
    pub state: String,
    pub reason: String,
    pub next_transition: Option<DateTime<Utc>>,
    /// Reported objects governed by this gate with a change waiting.
    pub held: u32,
}

/// A row of the grid.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FleetRow {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub connected: bool,
    pub last_seen_at: Option<DateTime<Utc>>,
    pub spoke_version: Option<String>,
    /// Objects with a change waiting for a gate.
    pub held: u32,
    /// Aligned with [`FleetGrid::gates`]; `None` where the gate does not apply.
    pub cells: Vec<Option<Cell>>,
}

/// The fleet grid (`GET /api/v1/dashboard/fleet`).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FleetGrid {
    pub at: DateTime<Utc>,
    pub gates: Vec<String>,
    pub clusters: Vec<FleetRow>,
    /// Live overrides (active now or starting later).
    pub overrides: usize,
}

/// Held objects per (cluster, gate) (viewer).
async fn held_by_gate(service: &Service, actor: &Actor) -> Result<HashMap<(String, String), u32>> {
    actor.require(Role::Viewer)?;
    let mut conn = service.conn().await?;
    let rows = crate::db::status::held_by_gate(&mut conn).await?;
    Ok(rows
        .into_iter()
        .map(|(c, g, n)| ((c, g), u32::try_from(n).unwrap_or(u32::MAX)))
        .collect())
}

/// Every registered cluster (the REST list, all pages).
async fn all_clusters(service: &Service, actor: &Actor) -> Result<Vec<Cluster>> {
    let mut out = Vec::new();
    let mut page = PageRequest::first(MAX_LIMIT);
    loop {
        let p = service.list_clusters(actor, &page).await?;
        out.extend(p.items);
        match p.next_cursor {
            Some(c) => page.cursor = Some(c),
            None => return Ok(out),
        }
    }
}

/// Every gate on every cluster now, with reasons, next transitions,
/// connections and held counts.
#[utoipa::path(get, path = "/api/v1/dashboard/fleet", tag = "dashboard",
    responses(
        (status = 200, description = "The clusters x gates grid", body = FleetGrid),
        (status = 401, description = "Missing or invalid token", body = crate::error::ErrorBody),
    ), security(("bearer" = [])))]
pub async fn fleet(
    State(s): State<AppState>,
    ApiActor(actor): ApiActor,
) -> Result<Json<FleetGrid>> {
    let view = s.service.fleet_view(&actor).await?;
    let clusters = all_clusters(&s.service, &actor).await?;
    let held = held_by_gate(&s.service, &actor).await?;
    let mut gates: Vec<String> = view.gates.keys().map(|(g, _)| g.clone()).collect();
    gates.dedup();
    // Gates without any cluster in scope still get a column.
    for g in s
        .service
        .list_gates(&actor, &PageRequest::first(MAX_LIMIT))
        .await?
        .items
    {
        if !gates.contains(&g.name) {
            gates.push(g.name);
        }
    }
    gates.sort();
    let rows = clusters
        .into_iter()
        .map(|c| {
            let cells = gates
                .iter()
                .map(|g| {
                    view.gates.get(&(g.clone(), c.name.clone())).map(|e| Cell {
                        state: e.state.to_string(),
                        reason: e.reason.clone(),
                        next_transition: e.next_transition,
                        held: held.get(&(c.name.clone(), g.clone())).copied().unwrap_or(0),
                    })
                })
                .collect();
            let spoke = view.spokes.get(&c.name);
            FleetRow {
                connected: spoke.map_or(c.connected, |s| s.connected),
                held: view.held.get(&c.name).copied().unwrap_or(0),
                name: c.name,
                labels: c.labels,
                last_seen_at: c.last_seen_at,
                spoke_version: c.spoke_version,
                cells,
            }
        })
        .collect();
    Ok(Json(FleetGrid {
        at: view.at,
        gates,
        clusters: rows,
        overrides: view.overrides.len(),
    }))
}

/// A cluster in a gate's scope, with the gate's state there.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScopedCluster {
    pub name: String,
    pub connected: bool,
    /// Reported objects governed by this gate with a change waiting.
    pub held: u32,
    pub state: String,
    pub reason: String,
    pub next_transition: Option<DateTime<Utc>>,
}

/// A gate's page (`GET /api/v1/dashboard/gates/{name}`).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GateView {
    pub gate: GateRecord,
    /// The rules in words.
    pub rules: Vec<String>,
    /// The gate's IANA time zone (UTC when it names none).
    pub time_zone: String,
    /// The schedule over the next 7 days, without overrides.
    #[schema(value_type = crate::openapi::PreviewDoc)]
    pub preview: Preview,
    /// Live overrides (active now or starting later).
    pub overrides: Vec<OverrideRecord>,
    pub clusters: Vec<ScopedCluster>,
}

/// The gate, its rules in words, its next 7 days, its overrides and its
/// clusters.
#[utoipa::path(get, path = "/api/v1/dashboard/gates/{name}", tag = "dashboard",
    params(("name" = String, Path, description = "Gate name")),
    responses(
        (status = 200, description = "Everything the gate page shows", body = GateView),
        (status = 401, description = "Missing or invalid token", body = crate::error::ErrorBody),
        (status = 404, description = "No such gate", body = crate::error::ErrorBody),
    ), security(("bearer" = [])))]
pub async fn gate(
    State(s): State<AppState>,
    ApiActor(actor): ApiActor,
    Path(name): Path<String>,
) -> Result<Json<GateView>> {
    let record = s.service.get_gate(&actor, &name).await?;
    let parsed = fleetgate_policy::parse_gate_json(record.manifest.clone())
        .map_err(|e| crate::Error::Internal(format!("stored gate '{name}': {e}")))?;
    let compiled = crate::service::gates::compile(&parsed)?;
    let preview = s
        .service
        .preview_gate(&actor, &name, None, None, None)
        .await?;
    let overrides = s
        .service
        .list_overrides(
            &actor,
            &OverrideQuery {
                gate: Some(name.clone()),
                limit: Some(MAX_LIMIT),
                ..OverrideQuery::default()
            },
        )
        .await?
        .items;
    let view = s.service.fleet_view(&actor).await?;
    let held = held_by_gate(&s.service, &actor).await?;
    let clusters = view
        .gates
        .iter()
        .filter(|((g, _), _)| *g == name)
        .map(|((_, c), e)| ScopedCluster {
            name: c.clone(),
            connected: view.spokes.get(c).is_some_and(|s| s.connected),
            held: held.get(&(c.clone(), name.clone())).copied().unwrap_or(0),
            state: e.state.to_string(),
            reason: e.reason.clone(),
            next_transition: e.next_transition,
        })
        .collect();
    Ok(Json(GateView {
        gate: record,
        rules: compiled.describe(),
        time_zone: compiled.time_zone().name().to_string(),
        preview,
        overrides,
        clusters,
    }))
}
