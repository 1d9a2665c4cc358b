//! Forging JWTs for the verifier property tests (`jwt_claims`, `spoke_jwt_claims`):
//! P-256 keys, their public JWKs, and tokens with any header and claims, signed with
//! ES256 or (the key-confusion attack) HS256 — tokens no JWT library would emit.

#![allow(dead_code)]

use base64::Engine as _;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair as _};
use serde_json::{Map, Value, json};

pub fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// A new P-256 key pair.
pub fn keypair() -> EcdsaKeyPair {
    let rng = ring::rand::SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
    EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng).unwrap()
}

/// The public JWK members of a P-256 key (`kty`, `crv`, `x`, `y`).
pub fn ec_jwk(pair: &EcdsaKeyPair) -> Map<String, Value> {
    let (x, y) = fleetgate_hub::identity::crypto::ec_public_xy(
        &jsonwebtoken::jwk::EllipticCurve::P256,
        pair.public_key().as_ref(),
    )
    .unwrap();
    serde_json::from_value(json!({"kty": "EC", "crv": "P-256", "x": b64(&x), "y": b64(&y)}))
        .unwrap()
}

/// `header.claims`, each base64url-encoded JSON.
fn signing_input(header: &Value, claims: &Value) -> String {
    format!(
        "{}.{}",
        b64(&serde_json::to_vec(header).unwrap()),
        b64(&serde_json::to_vec(claims).unwrap())
    )
}

/// Any header and claims (even ones no library would emit), ES256-signed.
pub fn sign(key: &EcdsaKeyPair, header: &Value, claims: &Value) -> String {
    let input = signing_input(header, claims);
    let rng = ring::rand::SystemRandom::new();
    let sig = key.sign(&rng, input.as_bytes()).unwrap();
    format!("{input}.{}", b64(sig.as_ref()))
}

/// HS256 over the token with `secret` (the key-confusion attack).
pub fn hmac(header: &Value, claims: &Value, secret: &[u8]) -> String {
    let input = signing_input(header, claims);
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret);
    let tag = ring::hmac::sign(&key, input.as_bytes());
    format!("{input}.{}", b64(tag.as_ref()))
}

/// One change to a valid token: the cases of both property tests.
#[derive(Debug, Clone)]
pub enum Change {
    None,
    Remove(&'static str),
    Set(&'static str, Value),
    Header(&'static str, Option<Value>),
    Hs256WithPublicKey,
    OtherKey,
    /// Signed with the trust domain's X.509 authority, which has no `kid` (`None`: none in
    /// the header either). Spoke tokens only.
    X509Authority(Option<&'static str>),
}

/// Values of the wrong JSON type for any claim.
pub fn mistyped() -> impl proptest::strategy::Strategy<Value = Value> {
    use proptest::prelude::*;
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        Just(json!({"nested": "object"})),
        Just(json!([1, 2])),
    ]
}

/// `change` applied to a valid token's `claims` and `header`. Times are relative to `now`
/// (seconds); `@soon`/`@past` are dates written as strings (mistyped); `@ours` is `aud`.
fn apply(
    change: &Change,
    claims: &mut Map<String, Value>,
    header: &mut Map<String, Value>,
    now: i64,
    aud: &str,
) {
    let ours = |v: &Value| if v == "@ours" { json!(aud) } else { v.clone() };
    let resolve = |v: &Value| match v {
        Value::Number(n) => json!(now + n.as_i64().unwrap()),
        Value::String(s) if s == "@soon" => json!((now + 300).to_string()),
        Value::String(s) if s == "@past" => json!((now - 10).to_string()),
        Value::Array(items) => Value::Array(items.iter().map(ours).collect()),
        other => ours(other),
    };
    match change {
        Change::Remove(c) => {
            claims.remove(*c);
        }
        Change::Set(c @ ("exp" | "nbf" | "iat" | "aud"), v) => {
            claims.insert((*c).into(), resolve(v));
        }
        Change::Set(c, v) => {
            claims.insert((*c).into(), v.clone());
        }
        Change::Header(h, None) => {
            header.remove(*h);
        }
        Change::X509Authority(None) => {
            header.remove("kid");
        }
        Change::Header(h, Some(v)) => {
            header.insert((*h).into(), v.clone());
        }
        Change::X509Authority(Some(k)) => {
            header.insert("kid".into(), json!(k));
        }
        _ => {}
    }
}

/// The keys a forged token may be signed with.
pub struct Signers<'a> {
    /// The issuer's key (`kid` k1).
    pub key: &'a EcdsaKeyPair,
    /// A key published nowhere.
    pub other: &'a EcdsaKeyPair,
    /// The trust domain's X.509 authority (spoke tokens).
    pub x509: Option<&'a EcdsaKeyPair>,
    /// The published JWK of `key`, as bytes: the HS256 confusion's secret.
    pub jwk: &'a [u8],
}

/// The token of `header` and `claims`, signed as `change` says: with the issuer's key,
/// another key, the X.509 authority, HS256 over the public key, or unsigned (`alg: none`).
fn signed(change: &Change, header: Value, claims: Value, keys: &Signers) -> String {
    match change {
        Change::Hs256WithPublicKey => hmac(
            &json!({"alg": "HS256", "kid": "k1", "typ": "JWT"}),
            &claims,
            keys.jwk,
        ),
        Change::Header("alg", Some(a)) if a == "none" => {
            let input = sign(keys.key, &header, &claims);
            let cut = input.rfind('.').unwrap();
            input[..=cut].to_string()
        }
        Change::OtherKey => sign(keys.other, &header, &claims),
        Change::X509Authority(_) => sign(keys.x509.expect("an X.509 authority"), &header, &claims),
        _ => sign(keys.key, &header, &claims),
    }
}

/// The rules both token kinds share (RFC 7519 / RFC 8725), for the changes the tests'
/// own oracles do not decide first: `typ`/`kid` optional (null reads as absent), `aud` a
/// string or an array of strings naming `aud`, NumericDates as numbers within the skew,
/// `kid` k1, any other header value or signing key refused.
pub fn valid_by_common_rules(change: &Change, aud: &str, skew: i64) -> bool {
    let rel = |v: &Value| v.as_i64();
    match change {
        Change::None => true,
        Change::Header(h, None) => matches!(*h, "typ" | "kid"),
        Change::Header("typ" | "kid", Some(Value::Null)) => true,
        Change::Set("aud", v) => match v {
            Value::String(s) => s == aud || s == "@ours",
            Value::Array(items) => {
                items.iter().all(Value::is_string) && items.iter().any(|a| a == "@ours" || a == aud)
            }
            _ => false,
        },
        // NumericDates are numbers: a date as a string is mistyped.
        Change::Set("exp", v) => rel(v).is_some_and(|d| d + skew > 0),
        Change::Set("nbf" | "iat", v) => rel(v).is_some_and(|d| d - skew <= 0),
        Change::Header("kid", Some(Value::String(k))) => k == "k1",
        _ => false,
    }
}

/// The token of `claims` under the header a valid token has (`ES256`, `kid` k1, `typ`
/// JWT), with `change` applied ([`apply`]; `aud` is what `@ours` stands for) and signed
/// as it says ([`signed`]).
pub fn forge(
    change: &Change,
    mut claims: Map<String, Value>,
    now: i64,
    aud: &str,
    keys: &Signers,
) -> String {
    let mut header: Map<String, Value> =
        serde_json::from_value(json!({"alg": "ES256", "kid": "k1", "typ": "JWT"})).unwrap();
    apply(change, &mut claims, &mut header, now, aud);
    signed(change, Value::Object(header), Value::Object(claims), keys)
}
