//! fleetgate hub, **API** layer: the REST API and its OpenAPI document, the gRPC services
//! (admin and the spoke stream), the dashboard, the fleet feed (WatchFleet, SSE), and the
//! replica those surfaces serve.
//!
//! Layers, bottom to top: `fleetgate-hub-store` → `fleetgate-hub-core` →
//! `fleetgate-hub-adapters` → **`fleetgate-hub-api`** → `fleetgate-hub` (binary). This crate
//! may import every layer below it (re-exported here under their old paths, `crate::service`,
//! `crate::db`, ...), never the binary's configuration: each surface owns its options
//! ([`options`]). Inside it, no two files import each other in a circle.
#![forbid(unsafe_code)]

pub mod dashboard;
pub mod drain;
pub mod fleet_feed;
pub mod grpc;
pub mod http;
pub mod openapi;
pub mod options;
pub mod replica;
pub mod rest;
pub mod startup;

pub use fleetgate_hub_adapters::{calendar_sync, egress, notifier, webhook_delivery};
pub use fleetgate_hub_core::{
    Actor, Error, Result, Role, Service, auth, build_info, clock, db, error, fanout, identity,
    liveness, metrics, notify, rollout, schema, service, validate,
};
pub use http::app;
pub use rest::AppState;
