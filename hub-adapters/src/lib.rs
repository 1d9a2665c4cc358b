//! fleetgate hub, **adapters** layer: the parts that talk to the outside world, behind the
//! traits core declares: the one outbound HTTP client and its rules ([`egress`]), webhook
//! delivery ([`webhook_delivery`], with the [`notifier`] that runs it beside core's
//! notification scheduler, and core's `WebhookClient`), calendar feed fetching
//! ([`calendar_sync`]), admission webhook calls ([`admission`], core's `AdmissionClient`),
//! and the identity provider client and token verification ([`identity`]: discovery,
//! JWKS, JWT verification, the sign-in flow; core's `TokenVerifier`, `IdentityProvider` and
//! `SpokeVerifier`). [`ServiceDefaults`] builds a `Service` with the default adapters
//! (`Service::new`, `Service::with_clock`); [`identity::identities`] builds core's
//! `Identities` from the settings file.
//!
//! Layers, bottom to top: `fleetgate-hub-store` → `fleetgate-hub-core` →
//! **`fleetgate-hub-adapters`** → `fleetgate-hub-api` → `fleetgate-hub` (binary). This crate
//! may import the store and core (re-exported here under their old paths, `crate::service`,
//! `crate::notify`, ...), never an API surface or the binary's configuration; core never
//! imports it: what core needs from an adapter it declares itself (a trait, options, plain
//! data) and the binary wires the adapter in. Inside this crate no two files import each
//! other in a circle.
#![forbid(unsafe_code)]

pub mod admission;
pub mod calendar_sync;
pub mod defaults;
pub mod egress;
pub mod identity;
pub mod notifier;
pub mod webhook_delivery;

pub use defaults::ServiceDefaults;
pub use fleetgate_hub_core::{Error, Result, clock, db, notify, options, service};
