//! Identities under one path: core's model (`config`, `sessions`, `token`, `provider`, ...)
//! and the adapters' provider client and verification (`jwt`, `keys`, `login`, `outbound`,
//! `spoke_jwt`, `crypto`), with the constructor [`identities`].

pub use fleetgate_hub_adapters::identity::{
    crypto, identities, jwt, keys, login, no_settings, outbound, spoke_jwt,
};
pub use fleetgate_hub_core::identity::*;
