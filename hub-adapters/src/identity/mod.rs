//! The identity provider client and token verification, behind core's
//! `identity::provider` traits: discovery and cached JWKS (`keys`), bearer JWT verification
//! (`jwt`, with ring as JWT crypto in `crypto`), the dashboard's authorization code flow and
//! refresh at the token endpoint (`login`), spokes' own JWTs (`spoke_jwt`), and the calls
//! to providers under the egress rules (`outbound`). [`identities`] builds core's
//! [`Identities`] from the settings file.

pub mod crypto;
pub mod jwt;
pub mod keys;
pub mod login;
pub mod outbound;
pub mod spoke_jwt;

pub use fleetgate_hub_core::identity::{DEFAULT_MIN_REFETCH, Identities, config, metrics};

use fleetgate_api_types::IdentityKind;

use self::config::IdentityConfig;
use self::jwt::{JwtVerifier, Trusted};
use self::keys::KeyCache;
use self::login::Login;
use self::metrics::IdentityMetrics;
use self::outbound::Outbound;
use crate::{Error, Result};

/// Identities from `config`, calling providers under `egress` (no network yet: keys and
/// discovery are fetched on first use).
pub fn identities(
    config: IdentityConfig,
    egress: crate::egress::EgressPolicy,
    metrics: IdentityMetrics,
) -> Result<Identities> {
    crypto::install();
    let outbound =
        Outbound::new(egress).map_err(|e| Error::invalid("--egress-ca-bundle", e.to_string()))?;
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
    Ok(Identities {
        config,
        jwt: Box::new(jwt),
        login: login.map(|l| {
            Box::new(l) as Box<dyn fleetgate_hub_core::identity::provider::IdentityProvider>
        }),
        metrics,
        refusals: Default::default(),
    })
}

/// The identities of a replica without a settings file: no issuer trusted, no sign-in
/// (API tokens only).
pub fn no_settings() -> Identities {
    Identities {
        config: IdentityConfig::default(),
        jwt: Box::new(JwtVerifier::default()),
        login: None,
        metrics: IdentityMetrics::default(),
        refusals: Default::default(),
    }
}

#[cfg(test)]
pub mod jwt_tests;
