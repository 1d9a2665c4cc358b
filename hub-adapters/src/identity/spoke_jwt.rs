//! Spokes signing in with their cluster's own identity: a projected ServiceAccount token
//! or a SPIFFE JWT-SVID, checked by the same [`JwtVerifier`] and [`KeyCache`] as people's
//! and workloads' tokens. A cluster registered with an issuer binds its spoke to that
//! issuer and one exact `sub` (`system:serviceaccount:NS:NAME` or a SPIFFE ID); the
//! audience is the hub's `--spoke-audience`. Keys come from the issuer's discovery
//! document (cached per issuer, refetched on an unknown `kid` at most once per
//! `min_refetch`, kept while the issuer is unreachable) or are pinned at registration.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use fleetgate_api_types::IdentityKind;
use futures::FutureExt as _;
use futures::future::BoxFuture;
use jsonwebtoken::jwk::JwkSet;
use serde_json::Value;

use super::jwt::{JwtError, JwtVerifier, Trusted};
use super::keys::{KeyCache, KeySet};
use super::metrics::IdentityMetrics;
use super::outbound::Outbound;
use crate::egress::EgressPolicy;
pub use fleetgate_hub_core::identity::provider::SpokeVerifier;
pub use fleetgate_hub_core::identity::token::{Binding, DEFAULT_AUDIENCE, SpokeRefusal, peek};

/// The verifiers of the issuers clusters are registered with, shared by a replica's
/// streams (one per issuer, or per issuer and pinned key set).
pub struct SpokeIssuers {
    audience: String,
    skew: Duration,
    min_refetch: Duration,
    outbound: Outbound,
    metrics: IdentityMetrics,
    /// Per issuer (and JWT-SVID rules or not): found in O(1) however many clusters (each with an issuer of its own)
    /// sign in at once.
    verifiers: Mutex<HashMap<(String, bool), IssuerVerifiers>>,
}

/// One issuer's verifiers (under JWT or JWT-SVID rules, [`JwtVerifier::for_jwt_svids`]):
/// with keys from discovery, and with the pinned key set it was built from (one at a
/// time: a set replaced by `cluster set-jwks` goes).
#[derive(Default)]
struct IssuerVerifiers {
    discovery: Option<Arc<JwtVerifier>>,
    pinned: Option<(Value, Arc<JwtVerifier>)>,
}

impl std::fmt::Debug for SpokeIssuers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpokeIssuers")
            .field("audience", &self.audience)
            .finish_non_exhaustive()
    }
}

impl Default for SpokeIssuers {
    fn default() -> Self {
        Self::new(
            EgressPolicy::default(),
            DEFAULT_AUDIENCE.into(),
            Duration::from_secs(60),
            fleetgate_hub_core::identity::DEFAULT_MIN_REFETCH,
            IdentityMetrics::default(),
        )
        .expect("the default egress policy builds")
    }
}

impl SpokeIssuers {
    /// Verifiers calling issuers under `egress`, accepting `audience`.
    pub fn new(
        egress: EgressPolicy,
        audience: String,
        skew: Duration,
        min_refetch: Duration,
        metrics: IdentityMetrics,
    ) -> Result<Self, crate::egress::EgressError> {
        super::crypto::install();
        Ok(Self {
            audience,
            skew,
            min_refetch,
            outbound: Outbound::new(egress)?,
            metrics,
            verifiers: Mutex::default(),
        })
    }

    pub fn audience(&self) -> &str {
        &self.audience
    }

    fn verifier(&self, b: &Binding) -> Result<Arc<JwtVerifier>, SpokeRefusal> {
        let svid = b.subject.starts_with("spiffe://");
        let key = (b.issuer.clone(), svid);
        let mut all = self.verifiers.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(found) = all.get(&key) {
            let same = match &b.jwks {
                Some(doc) => found.pinned.as_ref().filter(|(set, _)| set == doc),
                None => None,
            };
            match (&b.jwks, same, &found.discovery) {
                (Some(_), Some((_, v)), _) | (None, _, Some(v)) => return Ok(v.clone()),
                _ => {}
            }
        }
        let keys = match &b.jwks {
            Some(doc) => {
                let set: JwkSet = serde_json::from_value(doc.clone()).map_err(|e| {
                    SpokeRefusal::new("pinned_keys", format!("the pinned JWKS is unusable: {e}"))
                })?;
                KeyCache::pinned(b.issuer.clone(), KeySet::from_jwks(&set))
            }
            None => KeyCache::new(
                b.issuer.clone(),
                None,
                self.min_refetch,
                self.outbound.clone(),
                self.metrics.clone(),
            ),
        };
        let v = JwtVerifier::new(
            vec![Trusted {
                issuer: b.issuer.clone(),
                audiences: vec![self.audience.clone()],
                claims: Default::default(),
                kind: IdentityKind::Workload,
                keys,
            }],
            self.skew,
            self.metrics.clone(),
        );
        let v = Arc::new(if svid { v.for_jwt_svids() } else { v });
        // A pinned set replaced by `cluster set-jwks` is not needed any more (the
        // discovery cache stays: its keys verify reconnects while the issuer is
        // unreachable).
        let entry = all.entry(key).or_default();
        match &b.jwks {
            Some(doc) => entry.pinned = Some((doc.clone(), v.clone())),
            None => entry.discovery = Some(v.clone()),
        }
        Ok(v)
    }

    /// Verifies `token` against the cluster's binding; answers when it expires.
    pub async fn verify(
        &self,
        binding: &Binding,
        token: &str,
        now: DateTime<Utc>,
    ) -> Result<DateTime<Utc>, SpokeRefusal> {
        let verifier = self.verifier(binding)?;
        let verified = verifier
            .verify(token, now)
            .await
            .map_err(|e| self.refusal(binding, e))?;
        let sub = verified.identity.subject;
        if sub != binding.subject {
            return Err(SpokeRefusal::new(
                "wrong_subject",
                format!(
                    "token subject '{sub}' is not the one registered for this cluster ('{}')",
                    binding.subject
                ),
            ));
        }
        Ok(verified.expires_at)
    }

    fn refusal(&self, b: &Binding, e: JwtError) -> SpokeRefusal {
        let reason = e.outcome();
        let message = match e {
            JwtError::UntrustedIssuer(iss) => format!(
                "token issuer '{iss}' is not this cluster's issuer '{}'",
                b.issuer
            ),
            JwtError::UnknownKey(_) if b.jwks.is_some() => format!(
                "no pinned key of issuer '{}' matches the token's kid (did the cluster rotate \
                 its signing key? update the keys with `fleetgate cluster set-jwks`)",
                b.issuer
            ),
            JwtError::UnknownKey(_) => format!(
                "no signing key of issuer '{}' matches the token's kid (the hub refetches its \
                 keys at most every {}s, and keeps its cached keys while the issuer is unreachable)",
                b.issuer,
                self.min_refetch.as_secs()
            ),
            JwtError::WrongAudience => format!(
                "token audience is not this hub's spoke audience '{}'",
                self.audience
            ),
            other => other.to_string(),
        };
        SpokeRefusal::new(reason, message)
    }
}

impl SpokeVerifier for SpokeIssuers {
    fn audience(&self) -> &str {
        SpokeIssuers::audience(self)
    }

    fn verify<'a>(
        &'a self,
        binding: &'a Binding,
        token: &'a str,
        now: DateTime<Utc>,
    ) -> BoxFuture<'a, Result<DateTime<Utc>, SpokeRefusal>> {
        SpokeIssuers::verify(self, binding, token, now).boxed()
    }

    fn usable_keys(&self, jwks: &Value) -> Result<bool, String> {
        let set: JwkSet = serde_json::from_value(jwks.clone()).map_err(|e| e.to_string())?;
        Ok(!KeySet::from_jwks(&set).by_kid.is_empty())
    }
}

#[cfg(test)]
#[path = "spoke_jwt_tests.rs"]
mod tests;
