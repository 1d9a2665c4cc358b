//! A provider's discovery document and signing keys. Keys are cached and
//! kept while the provider is unreachable (tokens keep validating); a token
//! naming an unknown `kid` refetches them, at most once per
//! `min_refetch` per issuer, so forged `kid`s cannot make the hub hammer the
//! provider.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{Jwk, JwkSet, KeyAlgorithm, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey};
use serde::Deserialize;

use super::metrics::IdentityMetrics;
use super::outbound::{AnswerBudget, Outbound, OutboundError};

/// What the hub reads of `/.well-known/openid-configuration`.
#[derive(Debug, Clone, Deserialize)]
pub struct Metadata {
    pub issuer: String,
    #[serde(default)]
    pub authorization_endpoint: Option<String>,
    #[serde(default)]
    pub token_endpoint: Option<String>,
    #[serde(default)]
    pub jwks_uri: Option<String>,
    #[serde(default)]
    pub device_authorization_endpoint: Option<String>,
    #[serde(default)]
    pub end_session_endpoint: Option<String>,
    #[serde(default)]
    pub code_challenge_methods_supported: Vec<String>,
}

/// Reads an issuer's discovery document; its `issuer` must be the one asked
/// for (OpenID Connect Discovery 4.3), or a provider could speak for another.
pub async fn discover(outbound: &Outbound, issuer: &str) -> Result<Metadata, String> {
    let url = format!(
        "{}/.well-known/openid-configuration",
        issuer.trim_end_matches('/')
    );
    let meta: Metadata = outbound
        .get_json(&url, AnswerBudget::DISCOVERY)
        .await
        .map_err(|e: OutboundError| e.to_string())?;
    if meta.issuer != issuer {
        return Err(format!(
            "{url} names issuer '{}', expected '{issuer}'",
            meta.issuer
        ));
    }
    Ok(meta)
}

/// One verification key.
#[derive(Clone)]
pub struct Key {
    pub key: DecodingKey,
    /// The algorithm the JWK pins, if any.
    pub alg: Option<Algorithm>,
}

/// The keys of one issuer, by `kid` (keys without one under "").
#[derive(Clone, Default)]
pub struct KeySet {
    pub by_kid: HashMap<String, Vec<Key>>,
}

impl KeySet {
    /// The usable signature keys of a JWKS (encryption keys, symmetric keys
    /// and unsupported types are left out).
    pub fn from_jwks(jwks: &JwkSet) -> Self {
        let mut by_kid: HashMap<String, Vec<Key>> = HashMap::new();
        for jwk in &jwks.keys {
            if let Some(key) = usable(jwk) {
                let kid = jwk.common.key_id.clone().unwrap_or_default();
                by_kid.entry(kid).or_default().push(key);
            }
        }
        Self { by_kid }
    }

    /// The keys a token with `kid` may be signed with.
    pub fn find(&self, kid: Option<&str>) -> Option<&[Key]> {
        match kid {
            Some(kid) => self.by_kid.get(kid).map(Vec::as_slice),
            // No kid: only unambiguous when the set has a single key.
            None if self.by_kid.len() == 1 => self.by_kid.values().next().map(Vec::as_slice),
            None => None,
        }
    }
}

fn usable(jwk: &Jwk) -> Option<Key> {
    match &jwk.common.public_key_use {
        // Encryption keys, and keys for another purpose: a SPIFFE bundle's X.509
        // authorities (`x509-svid`) sign certificates, never a JWT; its JWT authorities
        // are `jwt-svid` (SPIFFE_Trust_Domain_and_Bundle.md §4.2).
        Some(PublicKeyUse::Encryption) => return None,
        Some(PublicKeyUse::Other(purpose)) if purpose != "jwt-svid" => return None,
        _ => {}
    }
    if matches!(
        jwk.algorithm,
        jsonwebtoken::jwk::AlgorithmParameters::OctetKey(_)
    ) {
        return None;
    }
    let alg = match jwk.common.key_algorithm {
        None => None,
        Some(a) => Some(signing_alg(a)?),
    };
    let key = DecodingKey::from_jwk(jwk).ok()?;
    Some(Key { key, alg })
}

fn signing_alg(a: KeyAlgorithm) -> Option<Algorithm> {
    Some(match a {
        KeyAlgorithm::RS256 => Algorithm::RS256,
        KeyAlgorithm::RS384 => Algorithm::RS384,
        KeyAlgorithm::RS512 => Algorithm::RS512,
        KeyAlgorithm::PS256 => Algorithm::PS256,
        KeyAlgorithm::PS384 => Algorithm::PS384,
        KeyAlgorithm::PS512 => Algorithm::PS512,
        KeyAlgorithm::ES256 => Algorithm::ES256,
        KeyAlgorithm::ES384 => Algorithm::ES384,
        KeyAlgorithm::EdDSA => Algorithm::EdDSA,
        _ => return None,
    })
}

/// The cached keys of one issuer and where to refresh them.
pub struct KeyCache {
    issuer: String,
    /// Configured JWKS URL; else read from discovery.
    jwks_uri: Option<String>,
    keys: RwLock<Arc<KeySet>>,
    /// When keys were last fetched (or tried), serialising fetches.
    fetched: tokio::sync::Mutex<Option<Instant>>,
    min_refetch: Duration,
    outbound: Outbound,
    metrics: IdentityMetrics,
    /// Keys given, never fetched (a cluster's `--jwks-file`).
    pinned: bool,
}

impl std::fmt::Debug for KeyCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyCache")
            .field("issuer", &self.issuer)
            .finish_non_exhaustive()
    }
}

impl KeyCache {
    pub fn new(
        issuer: String,
        jwks_uri: Option<String>,
        min_refetch: Duration,
        outbound: Outbound,
        metrics: IdentityMetrics,
    ) -> Self {
        Self {
            issuer,
            jwks_uri,
            keys: RwLock::default(),
            fetched: tokio::sync::Mutex::new(None),
            min_refetch,
            outbound,
            metrics,
            pinned: false,
        }
    }

    /// A cache of `keys` that never fetches: an unknown `kid` stays unknown.
    pub fn pinned(issuer: String, keys: KeySet) -> Self {
        Self {
            pinned: true,
            ..Self::with_keys(issuer, keys)
        }
    }

    /// A cache holding `keys` already (tests, the benchmark).
    pub fn with_keys(issuer: String, keys: KeySet) -> Self {
        let cache = Self::new(
            issuer,
            None,
            Duration::from_secs(3600),
            Outbound::new(crate::egress::EgressPolicy::default()).expect("default egress"),
            IdentityMetrics::default(),
        );
        *cache.keys.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(keys);
        cache
    }

    /// The cached keys.
    pub fn current(&self) -> Arc<KeySet> {
        self.keys.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Fetches the keys again unless that happened less than `min_refetch`
    /// ago; returns the (possibly unchanged) keys. A failed fetch keeps the
    /// cached keys.
    pub async fn refresh(&self) -> Arc<KeySet> {
        if self.pinned {
            return self.current();
        }
        let mut fetched = self.fetched.lock().await;
        if fetched.is_some_and(|at| at.elapsed() < self.min_refetch) {
            return self.current();
        }
        *fetched = Some(Instant::now());
        match self.fetch().await {
            Ok(set) => {
                let set = Arc::new(set);
                *self.keys.write().unwrap_or_else(|e| e.into_inner()) = set.clone();
                self.metrics.jwks_fetch("ok");
                set
            }
            Err(e) => {
                tracing::warn!(issuer = %self.issuer, error = %e, "fetching signing keys failed; keeping the cached ones");
                self.metrics.jwks_fetch("error");
                self.current()
            }
        }
    }

    async fn fetch(&self) -> Result<KeySet, String> {
        let uri = match &self.jwks_uri {
            Some(uri) => uri.clone(),
            None => discover(&self.outbound, &self.issuer)
                .await?
                .jwks_uri
                .ok_or("the discovery document has no jwks_uri")?,
        };
        let jwks: JwkSet = self
            .outbound
            .get_json(&uri, AnswerBudget::JWKS)
            .await
            .map_err(|e| e.to_string())?;
        Ok(KeySet::from_jwks(&jwks))
    }
}
