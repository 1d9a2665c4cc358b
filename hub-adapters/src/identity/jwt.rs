//! Bearer JWTs of trusted issuers → [`Identity`]. Checked: the signature
//! with the issuer's published keys (asymmetric algorithms only: `none` and
//! HS* are refused before any key is looked at, and a key is only used with
//! an algorithm of its own family, so an RSA public key can never serve as an
//! HMAC secret), `iss`, `aud` and `exp` (all three required: a token minted
//! for no audience is refused as `wrong_audience`), `sub` (a non-empty string),
//! `nbf` and `iat` (optional, but numbers when present), with the configured
//! clock skew, against the service's clock. Explicit typing (RFC 8725 §3.11):
//! the header's `typ` is absent or `JWT` (ID tokens and workload tokens);
//! any other type (`at+jwt`, `logout+jwt`, `secevent+jwt`, …) names a token
//! made for another purpose and is refused. A verifier of JWT-SVIDs
//! ([`JwtVerifier::for_jwt_svids`]) follows SPIFFE's JWT-SVID rules on the two
//! points where they differ: `typ` may also be `JOSE`, and `iss` may be absent.

use std::collections::HashMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use fleetgate_api_types::IdentityKind;
use futures::FutureExt as _;
use futures::future::BoxFuture;
use jsonwebtoken::{Algorithm, Validation};
use serde_json::{Map, Value};

use super::config::ClaimMapping;
use super::keys::{KeyCache, KeySet};
use super::metrics::IdentityMetrics;
pub use fleetgate_hub_core::identity::provider::TokenVerifier;
pub use fleetgate_hub_core::identity::token::{JwtError, Verified, identity_of, looks_like_jwt};

/// One trusted issuer.
#[derive(Debug)]
pub struct Trusted {
    pub issuer: String,
    pub audiences: Vec<String>,
    pub claims: ClaimMapping,
    pub kind: IdentityKind,
    pub keys: KeyCache,
}

/// Every trusted issuer, by `iss`.
#[derive(Debug, Default)]
pub struct JwtVerifier {
    issuers: HashMap<String, Trusted>,
    skew: Duration,
    metrics: IdentityMetrics,
    /// JWT-SVID rules (see [`JwtVerifier::for_jwt_svids`]).
    jwt_svid: bool,
}

impl JwtVerifier {
    pub fn new(issuers: Vec<Trusted>, skew: Duration, metrics: IdentityMetrics) -> Self {
        Self {
            issuers: issuers.into_iter().map(|t| (t.issuer.clone(), t)).collect(),
            skew,
            metrics,
            jwt_svid: false,
        }
    }

    /// The same verifier for JWT-SVIDs (SPIFFE `standards/JWT-SVID.md`): the header's
    /// `typ` may also be `JOSE` (§2.3), and `iss` may be absent (§3 requires only `sub`,
    /// `aud` and `exp`; SPIRE adds `iss` only when its `jwt_issuer` is set): a token
    /// without one is checked as one of the verifier's only issuer, whose keys must
    /// verify it. A present `iss` must still be a trusted issuer.
    pub fn for_jwt_svids(mut self) -> Self {
        self.jwt_svid = true;
        self
    }

    /// The issuer entry of `iss`.
    pub fn issuer(&self, iss: &str) -> Option<&Trusted> {
        self.issuers.get(iss)
    }

    /// Verifies `token`, refetching the issuer's keys (rate-limited) when its
    /// `kid` is unknown.
    pub async fn verify(&self, token: &str, now: DateTime<Utc>) -> Result<Verified, JwtError> {
        let result = match self.verify_with(token, now, None) {
            Err(JwtError::UnknownKey(iss)) => match self.issuers.get(&iss) {
                Some(t) => {
                    let keys = t.keys.refresh().await;
                    self.verify_with(token, now, Some(&keys))
                }
                None => Err(JwtError::UntrustedIssuer(iss)),
            },
            other => other,
        };
        self.metrics.jwt(match &result {
            Ok(_) => "ok",
            Err(e) => e.outcome(),
        });
        result
    }

    /// Verifies `token` with the cached keys only (no I/O).
    pub fn verify_cached(&self, token: &str, now: DateTime<Utc>) -> Result<Verified, JwtError> {
        self.verify_with(token, now, None)
    }

    fn verify_with(
        &self,
        token: &str,
        now: DateTime<Utc>,
        keys: Option<&KeySet>,
    ) -> Result<Verified, JwtError> {
        let header =
            jsonwebtoken::decode_header(token).map_err(|e| JwtError::Malformed(e.to_string()))?;
        let alg = header.alg;
        if let Some(typ) = header.typ.as_deref()
            && !accepted_typ(typ, self.jwt_svid)
        {
            let accepted = if self.jwt_svid {
                "JWT, JOSE or none"
            } else {
                "JWT or none"
            };
            return Err(JwtError::Claim(format!(
                "typ '{typ}' is not a type this hub accepts ({accepted})"
            )));
        }
        if matches!(alg, Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512) {
            return Err(JwtError::Algorithm(format!("{alg:?}")));
        }
        let peek: Map<String, Value> = jsonwebtoken::dangerous::insecure_decode_claims(token)
            .map_err(|e| JwtError::Malformed(e.to_string()))?;
        let iss = match peek.get("iss") {
            // A JWT-SVID without `iss`: the only issuer's, if its keys verify it.
            None if self.jwt_svid && self.issuers.len() == 1 => self
                .issuers
                .keys()
                .next()
                .map(String::as_str)
                .unwrap_or_default(),
            claim => claim
                .and_then(Value::as_str)
                .ok_or_else(|| JwtError::Claim("iss missing".into()))?,
        };
        let trusted = self
            .issuers
            .get(iss)
            .ok_or_else(|| JwtError::UntrustedIssuer(iss.to_string()))?;
        let cached;
        let keys = match keys {
            Some(k) => k,
            None => {
                cached = trusted.keys.current();
                &cached
            }
        };
        let candidates = keys
            .find(header.kid.as_deref())
            .ok_or_else(|| JwtError::UnknownKey(iss.to_string()))?;
        let mut validation = Validation::new(alg);
        validation.validate_exp = false;
        validation.validate_nbf = false;
        // `aud` must be present: the library checks it only when it is.
        // `exp` is checked against the service clock in `checked`.
        validation.required_spec_claims = ["aud", "exp"].map(String::from).into();
        if peek.contains_key("iss") {
            validation.set_issuer(&[iss]);
        }
        validation.set_audience(&trusted.audiences);
        let mut last = JwtError::BadSignature;
        for key in candidates {
            if key.alg.is_some_and(|a| a != alg) {
                continue;
            }
            match jsonwebtoken::decode::<Map<String, Value>>(token, &key.key, &validation) {
                Ok(data) => return self.checked(trusted, data.claims, now),
                Err(e) => {
                    last = match e.kind() {
                        jsonwebtoken::errors::ErrorKind::InvalidAudience => {
                            return Err(JwtError::WrongAudience);
                        }
                        jsonwebtoken::errors::ErrorKind::MissingRequiredClaim(c) if c == "aud" => {
                            return Err(JwtError::WrongAudience);
                        }
                        jsonwebtoken::errors::ErrorKind::MissingRequiredClaim(c) => {
                            return Err(JwtError::Claim(format!("{c} missing")));
                        }
                        jsonwebtoken::errors::ErrorKind::InvalidAlgorithm => {
                            JwtError::Algorithm(format!("{alg:?}"))
                        }
                        jsonwebtoken::errors::ErrorKind::InvalidSignature => JwtError::BadSignature,
                        other => JwtError::Malformed(format!("{other:?}")),
                    }
                }
            }
        }
        Err(last)
    }

    /// Time claims against the service clock, then the identity.
    fn checked(
        &self,
        trusted: &Trusted,
        claims: Map<String, Value>,
        now: DateTime<Utc>,
    ) -> Result<Verified, JwtError> {
        let now_s = now.timestamp();
        let skew = i64::try_from(self.skew.as_secs()).unwrap_or(i64::MAX);
        if !audience_ok(claims.get("aud"), &trusted.audiences) {
            return Err(JwtError::WrongAudience);
        }
        let exp =
            numeric_date(&claims, "exp")?.ok_or_else(|| JwtError::Claim("exp missing".into()))?;
        if exp.saturating_add(skew) <= now_s {
            return Err(JwtError::Expired);
        }
        for name in ["nbf", "iat"] {
            if numeric_date(&claims, name)?.is_some_and(|t| t.saturating_sub(skew) > now_s) {
                return Err(JwtError::NotYetValid);
            }
        }
        let identity = identity_of(&trusted.issuer, trusted.kind, &trusted.claims, &claims)?;
        let expires_at = DateTime::from_timestamp(exp, 0).unwrap_or(now);
        Ok(Verified {
            identity,
            claims,
            expires_at,
        })
    }
}

/// Whether the header's `typ` (RFC 7515 §4.1.9: case-insensitive, the
/// `application/` prefix optional) is `JWT`, or for a JWT-SVID also `JOSE`.
fn accepted_typ(typ: &str, jwt_svid: bool) -> bool {
    let t = typ.to_ascii_lowercase();
    let t = t.strip_prefix("application/").unwrap_or(&t);
    t == "jwt" || (jwt_svid && t == "jose")
}

/// Whether `aud` (a string, or a non-empty list of strings) names one of
/// `audiences`. Absent, mistyped or empty: no.
fn audience_ok(aud: Option<&Value>, audiences: &[String]) -> bool {
    let ours = |a: &str| audiences.iter().any(|x| x == a);
    match aud {
        Some(Value::String(a)) => ours(a),
        Some(Value::Array(items)) => {
            items.iter().all(Value::is_string) && items.iter().filter_map(Value::as_str).any(ours)
        }
        _ => false,
    }
}

/// The NumericDate claim `name` in whole seconds (RFC 7519 §2: fractions
/// allowed), `None` when absent, refused when not a number.
fn numeric_date(claims: &Map<String, Value>, name: &str) -> Result<Option<i64>, JwtError> {
    match claims.get(name) {
        None => Ok(None),
        Some(Value::Number(n)) => n
            .as_i64()
            .or_else(|| {
                n.as_f64()
                    .filter(|f| f.is_finite())
                    .map(|f| f.floor() as i64)
            })
            .map(Some)
            .ok_or_else(|| JwtError::Claim(format!("{name} is not a NumericDate"))),
        Some(_) => Err(JwtError::Claim(format!("{name} is not a NumericDate"))),
    }
}

impl TokenVerifier for JwtVerifier {
    fn verify<'a>(
        &'a self,
        token: &'a str,
        now: DateTime<Utc>,
    ) -> BoxFuture<'a, Result<Verified, JwtError>> {
        JwtVerifier::verify(self, token, now).boxed()
    }

    fn issuer(&self, iss: &str) -> Option<(IdentityKind, ClaimMapping)> {
        JwtVerifier::issuer(self, iss).map(|t| (t.kind, t.claims.clone()))
    }
}
