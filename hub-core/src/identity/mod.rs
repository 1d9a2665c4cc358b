//! Single sign-on, the model: people sign in through the organisation's OpenID
//! provider (dashboard: authorization code + PKCE, sessions in PostgreSQL;
//! CLI: the provider's device flow, then its ID token as a bearer JWT), and
//! workloads call with JWTs of trusted issuers (CI jobs, Kubernetes service
//! accounts). This module decides who is signed in and yields an [`Identity`];
//! [`roles::actor_for`] turns it into the service layer's `Actor`. Verifying a
//! token's signature and calling the provider are the adapters' (behind
//! [`provider`]'s traits, wired in by the binary).
//!
//! - `config`: the settings file; `token`: verified tokens, refusals, identities of claims;
//! - `provider`: the traits of token verification and the provider client;
//! - `sessions`: cookies; `refresh`: sessions refreshed at the provider, or ended when
//!   it refuses; `manage_sessions`: listing and ending them;
//! - `roles`: the interim role mapping;
//! - `refusals`: refused sign-ins, counted and audited (rate-limited).

pub mod config;
pub mod manage_sessions;
pub mod metrics;
pub mod provider;
pub mod refresh;
pub mod refusals;
pub mod roles;
pub mod sessions;
pub mod token;

use std::time::Duration;

pub use fleetgate_api_types::{Identity, IdentityKind};

use self::config::IdentityConfig;
use self::metrics::IdentityMetrics;
use self::provider::{IdentityProvider, TokenVerifier};

/// How soon after a fetch an unknown `kid` may fetch an issuer's keys again.
pub const DEFAULT_MIN_REFETCH: Duration = Duration::from_secs(10);

/// A replica's identity settings and the adapters that verify tokens and call the
/// provider (`fleetgate-hub-adapters` builds them from the settings). Without a settings
/// file it trusts no issuer and offers no sign-in (API tokens only).
#[derive(Debug)]
pub struct Identities {
    pub config: IdentityConfig,
    /// Verifies bearer JWTs of the trusted issuers (the login provider's among them).
    pub jwt: Box<dyn TokenVerifier>,
    /// The provider people sign in with, when one is configured.
    pub login: Option<Box<dyn IdentityProvider>>,
    pub metrics: IdentityMetrics,
    /// Which refused sign-ins get an audit entry.
    pub refusals: refusals::RefusalLimiter,
}
