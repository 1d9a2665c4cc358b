//! Bearer JWT checks against an ES256 key made in the test.

use chrono::{TimeZone, Utc};
use fleetgate_api_types::IdentityKind;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair as _};
use serde_json::{Value, json};

use super::config::ClaimMapping;
use super::jwt::{JwtError, JwtVerifier, Trusted};
use super::keys::{KeyCache, KeySet};
use super::metrics::IdentityMetrics;

const ISS: &str = "https://idp.example.com";

/// A P-256 key: its PKCS#8 form for signing and its JWKS.
pub fn test_key(kid: &str) -> (EncodingKey, JwkSet) {
    super::crypto::install();
    let rng = ring::rand::SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
    let pair =
        EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng).unwrap();
    let (x, y) = super::crypto::ec_public_xy(
        &jsonwebtoken::jwk::EllipticCurve::P256,
        pair.public_key().as_ref(),
    )
    .unwrap();
    use base64::Engine as _;
    let b64 = |b: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b);
    let jwks: JwkSet = serde_json::from_value(json!({"keys": [{
        "kty": "EC", "crv": "P-256", "kid": kid, "alg": "ES256", "use": "sig",
        "x": b64(&x), "y": b64(&y),
    }]}))
    .unwrap();
    (EncodingKey::from_ec_der(pkcs8.as_ref()), jwks)
}

fn verifier(jwks: &JwkSet) -> JwtVerifier {
    JwtVerifier::new(
        vec![Trusted {
            issuer: ISS.into(),
            audiences: vec!["fleetgate".into()],
            claims: ClaimMapping::default(),
            kind: IdentityKind::Workload,
            keys: KeyCache::with_keys(ISS.into(), KeySet::from_jwks(jwks)),
        }],
        std::time::Duration::from_secs(60),
        IdentityMetrics::default(),
    )
}

fn sign(key: &EncodingKey, kid: &str, claims: &Value) -> String {
    let mut h = Header::new(Algorithm::ES256);
    h.kid = Some(kid.into());
    jsonwebtoken::encode(&h, claims, key).unwrap()
}

fn claims(exp: i64) -> Value {
    json!({"iss": ISS, "sub": "repo:org/app:ref:refs/heads/main", "aud": "fleetgate",
           "exp": exp, "iat": exp - 600, "groups": ["ci"]})
}

fn unsigned(header: &Value, claims: &Value, sig: &str) -> String {
    use base64::Engine as _;
    let b64 = |v: &Value| {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(serde_json::to_vec(v).unwrap())
    };
    format!("{}.{}.{sig}", b64(header), b64(claims))
}

#[test]
fn checks_signature_issuer_audience_and_time() {
    let (key, jwks) = test_key("k1");
    let v = verifier(&jwks);
    let now = Utc.with_ymd_and_hms(2026, 11, 25, 12, 0, 0).unwrap();
    let exp = now.timestamp() + 300;

    let ok = v
        .verify_cached(&sign(&key, "k1", &claims(exp)), now)
        .unwrap();
    assert_eq!(ok.identity.subject, "repo:org/app:ref:refs/heads/main");
    assert_eq!(ok.identity.groups, ["ci"]);
    assert_eq!(ok.identity.kind, IdentityKind::Workload);

    // Within the 60 s skew: still fine; past it: expired.
    let t = sign(&key, "k1", &claims(now.timestamp() - 30));
    assert!(v.verify_cached(&t, now).is_ok());
    let t = sign(&key, "k1", &claims(now.timestamp() - 61));
    assert_eq!(v.verify_cached(&t, now).unwrap_err(), JwtError::Expired);

    let mut c = claims(exp);
    c["aud"] = json!("someone-else");
    assert_eq!(
        v.verify_cached(&sign(&key, "k1", &c), now).unwrap_err(),
        JwtError::WrongAudience
    );

    let mut c = claims(exp);
    c["iss"] = json!("https://evil.example.com");
    assert!(matches!(
        v.verify_cached(&sign(&key, "k1", &c), now),
        Err(JwtError::UntrustedIssuer(_))
    ));

    let mut c = claims(exp);
    c["nbf"] = json!(now.timestamp() + 120);
    assert_eq!(
        v.verify_cached(&sign(&key, "k1", &c), now).unwrap_err(),
        JwtError::NotYetValid
    );

    let mut c = claims(exp);
    c.as_object_mut().unwrap().remove("exp");
    assert!(matches!(
        v.verify_cached(&sign(&key, "k1", &c), now),
        Err(JwtError::Claim(_))
    ));

    // Another key with the same kid: the signature fails.
    let (other, _) = test_key("k1");
    assert_eq!(
        v.verify_cached(&sign(&other, "k1", &claims(exp)), now)
            .unwrap_err(),
        JwtError::BadSignature
    );
    // An unknown kid asks for a refetch.
    assert!(matches!(
        v.verify_cached(&sign(&key, "k2", &claims(exp)), now),
        Err(JwtError::UnknownKey(_))
    ));
}

#[test]
fn refuses_alg_none_and_hmac() {
    let (_, jwks) = test_key("k1");
    let v = verifier(&jwks);
    let now = Utc.with_ymd_and_hms(2026, 11, 25, 12, 0, 0).unwrap();
    let c = claims(now.timestamp() + 300);
    let none = unsigned(&json!({"alg": "none", "kid": "k1"}), &c, "");
    assert!(matches!(
        v.verify_cached(&none, now),
        Err(JwtError::Malformed(_))
    ));
    // HS256 "signed" with the public JWK as the secret (the confusion attack).
    let secret = serde_json::to_vec(&jwks.keys[0]).unwrap();
    let mut h = Header::new(Algorithm::HS256);
    h.kid = Some("k1".into());
    let hs = jsonwebtoken::encode(&h, &c, &EncodingKey::from_secret(&secret)).unwrap();
    assert!(matches!(
        v.verify_cached(&hs, now),
        Err(JwtError::Algorithm(_))
    ));
}
