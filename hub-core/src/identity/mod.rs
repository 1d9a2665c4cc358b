//! Single sign-on: people sign in through the organisation's OpenID
//! provider (dashboard: authorization code + PKCE, sessions in PostgreSQL;
//! CLI: the provider's device flow, then its ID token as a bearer JWT), and
//! workloads call with JWTs of trusted issuers (CI jobs, Kubernetes service
//! accounts). This module authenticates and yields an [`Identity`];
//! [`roles::actor_for`] turns it into the service layer's `Actor`.
//!
//! - `config`: the settings file; `keys`: discovery and cached JWKS;
//! - `jwt`: bearer JWT verification; `crypto`: ring as JWT crypto;
//! - `login`: the dashboard's authorization code flow; `sessions`: cookies;
//!   `refresh`: sessions refreshed at the provider, or ended when it refuses;
//! - `outbound`: calls to providers; `roles`: the interim role mapping;
//! - `refusals`: refused sign-ins, counted and audited (rate-limited).

pub mod config;
pub mod crypto;
pub mod jwt;
pub mod keys;
pub mod login;
pub mod manage_sessions;
pub mod metrics;
pub mod outbound;
pub mod refresh;
pub mod refusals;
pub mod roles;
pub mod sessions;

use std::time::Duration;

pub use fleetgate_api_types::{Identity, IdentityKind};

use self::config::IdentityConfig;
use self::jwt::{JwtVerifier, Trusted};
use self::keys::KeyCache;
use self::login::Login;
use self::metrics::IdentityMetrics;
use self::outbound::Outbound;
use crate::{Error, Result};

/// How soon after a fetch an unknown `kid` may fetch an issuer's keys again.
pub const DEFAULT_MIN_REFETCH: Duration = Duration::from_secs(10);

/// A replica's identity settings and caches. Without a settings file it
/// trusts no issuer and offers no sign-in (API tokens only).
#[derive(Debug, Default)]
pub struct Identities {
    pub config: IdentityConfig,
    pub jwt: JwtVerifier,
    pub login: Option<Login>,
    pub metrics: IdentityMetrics,
    /// Which refused sign-ins get an audit entry.
    pub refusals: refusals::RefusalLimiter,
}

impl Identities {
    /// Identities from `config`, calling providers under `egress` (no
    /// network yet: keys and discovery are fetched on first use).
    pub fn new(
        config: IdentityConfig,
        egress: crate::egress::EgressPolicy,
        metrics: IdentityMetrics,
    ) -> Result<Self> {
        crypto::install();
        let outbound = Outbound::new(egress)
            .map_err(|e| Error::invalid("--egress-ca-bundle", e.to_string()))?;
        let min_refetch = config.jwks_min_refetch.unwrap_or(DEFAULT_MIN_REFETCH);
        let cache = |issuer: &str, jwks: Option<String>| {
            KeyCache::new(
                issuer.to_string(),
                jwks,
                min_refetch,
                outbound.clone(),
                metrics.clone(),
            )
        };
        let mut trusted = Vec::new();
        let mut login = None;
        if let Some(l) = &config.login {
            let mut audiences = vec![l.client_id.clone()];
            if l.cli_client() != l.client_id {
                audiences.push(l.cli_client().to_string());
            }
            audiences.extend(l.audiences.iter().cloned());
            trusted.push(Trusted {
                issuer: l.issuer.clone(),
                audiences,
                claims: l.claims.clone(),
                kind: IdentityKind::Person,
                keys: cache(&l.issuer, None),
            });
            login = Some(Login::new(l.clone(), l.client_secret()?, outbound.clone()));
        }
        for (i, t) in config.trusted.iter().enumerate() {
            if trusted.iter().any(|x| x.issuer == t.issuer) {
                return Err(Error::invalid(
                    format!("trusted[{i}].issuer"),
                    "listed twice (the login provider's tokens are trusted already; add audiences under login.audiences)",
                ));
            }
            trusted.push(Trusted {
                issuer: t.issuer.clone(),
                audiences: t.audiences.clone(),
                claims: t.claims.clone(),
                kind: IdentityKind::Workload,
                keys: cache(&t.issuer, t.jwks_uri.clone()),
            });
        }
        let jwt = JwtVerifier::new(trusted, config.clock_skew, metrics.clone());
        Ok(Self {
            config,
            jwt,
            login,
            metrics,
            refusals: Default::default(),
        })
    }
}

#[cfg(test)]
pub mod jwt_tests;
