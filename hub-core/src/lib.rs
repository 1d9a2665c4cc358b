//! fleetgate hub, **core** layer: the decisions (access, gates, overrides, approvals, freezes,
//! rollouts, calendars, reports, fleet evaluation, the fan-out index) and the models of
//! notification events and identities, over the store.
//!
//! Layers, bottom to top: `fleetgate-hub-store` → **`fleetgate-hub-core`** →
//! `fleetgate-hub-adapters` → `fleetgate-hub-api` → `fleetgate-hub` (binary). This crate may
//! import the store (re-exported here as [`db`], with [`Error`] and [`Result`]), the policy
//! and API-type crates, never an adapter, an API surface (REST, gRPC, dashboard) or the
//! binary's configuration, and it has no HTTP client and no JWT library: what it needs from
//! the outside world it declares as a trait or plain data the layers above implement and
//! wire (the [`service::Adapters`] a service is built with): the admission webhook client
//! ([`service::admission::outside`]), the webhook client of subscriptions
//! ([`service::webhooks::outside`]), token verification and the identity provider client
//! ([`identity::provider`]).
//!
//! Inside it: [`service`] holds one folder per capability (`access`, `admission`,
//! `approvals`, `audit`, `calendars`, `clusters`, `fleet`, `freezes`, `gates`,
//! `local_gates`, `overrides`, `reports`, `rollouts`, `webhooks`) beside the shared
//! `page` and `types`; [`notify`] and [`identity`] are the event and identity models the
//! service produces and consumes. No two files import each other in a circle.
#![forbid(unsafe_code)]

pub mod auth;
pub mod build_info;
pub mod clock;
pub mod fanout;
pub mod identity;
pub mod metrics;
pub mod notify;
pub mod options;
pub mod rollout;
pub mod service;
pub mod validate;

pub use fleetgate_api_types::schema;
pub use fleetgate_hub_store as db;
pub use fleetgate_hub_store::{Error, Result, error, liveness};
pub use service::{Actor, Role, Service};
