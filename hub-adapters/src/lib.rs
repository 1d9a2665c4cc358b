//! fleetgate hub, **adapters** layer: the parts that talk to the outside world and run as
//! workers on every replica: webhook delivery ([`webhook_delivery`], with the [`notifier`]
//! that runs it beside core's notification scheduler), calendar feed fetching
//! ([`calendar_sync`]) and admission webhook calls ([`admission`], core's
//! `service::outside::AdmissionClient`). [`ServiceDefaults`] builds a `Service` with the
//! default adapters (`Service::new`, `Service::with_clock`).
//!
//! Layers, bottom to top: `fleetgate-hub-store` → `fleetgate-hub-core` →
//! **`fleetgate-hub-adapters`** → `fleetgate-hub-api` → `fleetgate-hub` (binary). This crate
//! may import the store and core (re-exported here under their old paths, `crate::service`,
//! `crate::notify`, ...), never an API surface or the binary's configuration; core never
//! imports it: what core needs from an adapter it declares itself (options, plain data) and
//! the binary wires the adapter in. Still in core, to move here behind core-declared traits:
//! the outbound client (`egress`) and the identity provider client and token verification. Inside this crate no two files import each other in a circle.
#![forbid(unsafe_code)]

pub mod admission;
pub mod calendar_sync;
pub mod defaults;
pub mod notifier;
pub mod webhook_delivery;

pub use defaults::ServiceDefaults;
pub use fleetgate_hub_core::{Error, Result, clock, db, egress, notify, options, service};
