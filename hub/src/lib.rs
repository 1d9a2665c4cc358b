//! fleetgate hub, **binary** layer: the command line and configuration (`config`, which
//! assembles each component's own options type) and the wiring that starts a replica
//! (`serve`). Nothing below imports this crate.
//!
//! Layers, bottom to top: `fleetgate-hub-store` (PostgreSQL) → `fleetgate-hub-core`
//! (decisions, event and identity models) → `fleetgate-hub-adapters` (the outside world) →
//! `fleetgate-hub-api` (REST, gRPC, dashboard) → **`fleetgate-hub`**. The library re-exports
//! the layers under their old module paths (`fleetgate_hub::service`, `fleetgate_hub::db`, ...)
//! so tests and tools keep one import root; `identity` joins core's identity model and the
//! adapters' provider client and token verification under one path.
#![forbid(unsafe_code)]

pub mod allocator;
pub mod config;
pub mod identity;
pub mod serve;

pub use fleetgate_hub_adapters::{
    ServiceDefaults, admission, calendar_sync, egress, notifier, webhook_delivery,
};
pub use fleetgate_hub_api::{
    AppState, app, dashboard, drain, fleet_feed, grpc, http, openapi, replica, rest, startup,
};
pub use fleetgate_hub_core::{
    Actor, Error, Result, Role, Service, auth, build_info, clock, db, error, fanout, liveness,
    metrics, notify, rollout, schema, service, validate,
};
pub use serve::{Drained, serve, serve_drained};
