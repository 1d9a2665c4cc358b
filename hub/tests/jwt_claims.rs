//! Property test over the hub's JWT verifier, the one every JWT path goes through
//! (bearer JWTs on REST and gRPC, and the ID token of the dashboard's and CLI's
//! sign-in, checked against the login client's audiences): from a valid ES256 token
//! signed with the issuer's key, one claim or header field at a time is removed,
//! mangled or mistyped, and the token must be refused exactly when RFC 7519 /
//! RFC 8725 (and the hub's documented rules) make it invalid.

mod jwt_forge;

use std::time::Duration;

use chrono::{TimeZone, Utc};
use fleetgate_api_types::IdentityKind;
use fleetgate_hub::identity::config::ClaimMapping;
use fleetgate_hub::identity::jwt::{JwtError, JwtVerifier, Trusted};
use fleetgate_hub::identity::keys::{KeyCache, KeySet};
use fleetgate_hub::identity::metrics::IdentityMetrics;
use jsonwebtoken::jwk::JwkSet;
use jwt_forge::{Change, Signers, ec_jwk, keypair, mistyped, sign};
use proptest::prelude::*;
use ring::signature::EcdsaKeyPair;
use serde_json::{Map, Value, json};

const WORKLOAD: &str = "https://ci.example.com";
const LOGIN: &str = "https://idp.example.com";
const SKEW: i64 = 60;

struct Issuer {
    pair: EcdsaKeyPair,
    jwks: JwkSet,
}

fn issuer(kid: &str) -> Issuer {
    fleetgate_hub::identity::crypto::install();
    let pair = keypair();
    let mut jwk = ec_jwk(&pair);
    jwk.extend([
        ("kid".to_string(), json!(kid)),
        ("alg".to_string(), json!("ES256")),
        ("use".to_string(), json!("sig")),
    ]);
    let jwks = serde_json::from_value(json!({"keys": [jwk]})).unwrap();
    Issuer { pair, jwks }
}

/// The verifier as the hub builds it: a workload issuer and the login provider
/// (the dashboard's and the CLI's client ids as audiences).
fn verifier(workload: &Issuer, login: &Issuer) -> JwtVerifier {
    let trusted = |iss: &str, aud: &[&str], kind, keys: &Issuer| Trusted {
        issuer: iss.into(),
        audiences: aud.iter().map(|a| a.to_string()).collect(),
        claims: ClaimMapping::default(),
        kind,
        keys: KeyCache::with_keys(iss.into(), KeySet::from_jwks(&keys.jwks)),
    };
    JwtVerifier::new(
        vec![
            trusted(WORKLOAD, &["fleetgate"], IdentityKind::Workload, workload),
            trusted(
                LOGIN,
                &["fleetgate-dashboard", "fleetgate-cli"],
                IdentityKind::Person,
                login,
            ),
        ],
        Duration::from_secs(SKEW as u64),
        IdentityMetrics::default(),
    )
}

/// Which JWT path: a workload's bearer token, or a person's ID token.
#[derive(Debug, Clone, Copy)]
enum Path {
    Workload,
    IdToken,
}

impl Path {
    fn iss(self) -> &'static str {
        match self {
            Path::Workload => WORKLOAD,
            Path::IdToken => LOGIN,
        }
    }
    fn aud(self) -> &'static str {
        match self {
            Path::Workload => "fleetgate",
            Path::IdToken => "fleetgate-dashboard",
        }
    }
}

/// One change to a valid token.
fn text() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9:/._-]{1,24}"
}

fn change() -> impl Strategy<Value = Change> {
    let claim = prop_oneof![
        Just("iss"),
        Just("sub"),
        Just("aud"),
        Just("exp"),
        Just("nbf"),
        Just("iat")
    ];
    let header = prop_oneof![Just("alg"), Just("kid"), Just("typ")];
    prop_oneof![
        Just(Change::None),
        claim.clone().prop_map(Change::Remove),
        (claim, mistyped()).prop_map(|(c, v)| Change::Set(c, v)),
        text().prop_map(|s| Change::Set("iss", json!(s))),
        text().prop_map(|s| Change::Set("sub", json!(s))),
        Just(Change::Set("sub", json!(""))),
        Just(Change::Set("sub", json!(42))),
        Just(Change::Set("iss", json!(7))),
        text().prop_map(|s| Change::Set("aud", json!(s))),
        text().prop_map(|s| Change::Set("aud", json!([s]))),
        text().prop_map(|s| Change::Set("aud", json!([s, "@ours"]))),
        Just(Change::Set("aud", json!([]))),
        Just(Change::Set("aud", json!(["@ours", 5]))),
        Just(Change::Set("aud", json!(12))),
        // Times, relative to now (seconds).
        (-100_000i64..100_000).prop_map(|d| Change::Set("exp", json!(d))),
        (-100_000i64..100_000).prop_map(|d| Change::Set("nbf", json!(d))),
        (-100_000i64..100_000).prop_map(|d| Change::Set("iat", json!(d))),
        Just(Change::Set("exp", json!("@soon"))),
        Just(Change::Set("nbf", json!("@past"))),
        Just(Change::Set("iat", json!("@past"))),
        header.clone().prop_map(|h| Change::Header(h, None)),
        (header, mistyped()).prop_map(|(h, v)| Change::Header(h, Some(v))),
        prop_oneof![
            Just("none"),
            Just("HS256"),
            Just("RS256"),
            Just("ES384"),
            Just("EdDSA"),
            Just("PS256"),
            Just("es256"),
        ]
        .prop_map(|a| Change::Header("alg", Some(json!(a)))),
        text().prop_map(|k| Change::Header("kid", Some(json!(k)))),
        prop_oneof![
            Just("JWT"),
            Just("jwt"),
            Just("application/jwt"),
            Just("at+jwt"),
            Just("logout+jwt"),
            Just("secevent+jwt"),
            Just("JOSE"),
            Just(""),
        ]
        .prop_map(|t| Change::Header("typ", Some(json!(t)))),
        Just(Change::Hs256WithPublicKey),
        Just(Change::OtherKey),
    ]
}

/// Whether the token with `change` is valid (the oracle).
fn valid(path: Path, change: &Change) -> bool {
    match change {
        // Optional: nbf, iat (RFC 7519 §4.1); typ (RFC 7515 §4.1.9); kid (one key).
        Change::Remove(c) => matches!(*c, "nbf" | "iat"),
        Change::Set("sub", v) => v.as_str().is_some_and(|s| !s.is_empty()),
        Change::Set("iss", v) => v.as_str() == Some(path.iss()),
        Change::Header("typ", Some(Value::String(t))) => {
            matches!(t.as_str(), "JWT" | "jwt" | "application/jwt")
        }
        _ => jwt_forge::valid_by_common_rules(change, path.aud(), SKEW),
    }
}

fn token(path: Path, keys: &Issuer, other: &Issuer, change: &Change, now: i64) -> String {
    let claims: Map<String, Value> = serde_json::from_value(json!({
        "iss": path.iss(), "sub": "subject-1", "aud": path.aud(),
        "exp": now + 300, "nbf": now - 10, "iat": now - 10, "nonce": "n",
    }))
    .unwrap();
    let jwk = serde_json::to_vec(&keys.jwks.keys[0]).unwrap();
    let signers = Signers {
        key: &keys.pair,
        other: &other.pair,
        x509: None,
        jwk: &jwk,
    };
    jwt_forge::forge(change, claims, now, path.aud(), &signers)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn every_change_that_invalidates_a_token_is_refused(
        change in change(),
        id_token in any::<bool>(),
    ) {
        let (workload, login, other) = (issuer("k1"), issuer("k1"), issuer("k1"));
        let v = verifier(&workload, &login);
        let now = Utc.with_ymd_and_hms(2026, 11, 25, 12, 0, 0).unwrap();
        let (path, keys) = if id_token { (Path::IdToken, &login) } else { (Path::Workload, &workload) };
        let t = token(path, keys, &other, &change, now.timestamp());
        let got = v.verify_cached(&t, now);
        if valid(path, &change) {
            let ok = got.map_err(|e| TestCaseError::fail(format!("{change:?} on {path:?} refused: {e}")))?;
            prop_assert_eq!(ok.identity.issuer.as_str(), path.iss());
        } else {
            prop_assert!(got.is_err(), "{:?} on {:?} accepted", change, path);
        }
    }
}

/// The token: `{iss, sub, iat, exp}` with the issuer's key and no `aud`,
/// on each path: refused as `wrong_audience` (the audit's reason).
#[test]
fn a_token_for_no_audience_is_refused_as_wrong_audience() {
    let (workload, login) = (issuer("k1"), issuer("k1"));
    let v = verifier(&workload, &login);
    let now = Utc.with_ymd_and_hms(2026, 11, 25, 12, 0, 0).unwrap();
    for (path, keys) in [(Path::Workload, &workload), (Path::IdToken, &login)] {
        let claims = json!({"iss": path.iss(), "sub": "s", "iat": now.timestamp(), "exp": now.timestamp() + 300});
        let t = sign(&keys.pair, &json!({"alg": "ES256", "kid": "k1"}), &claims);
        let e = v.verify_cached(&t, now).unwrap_err();
        assert_eq!(e, JwtError::WrongAudience, "{path:?}");
        assert_eq!(e.outcome(), "wrong_audience");
    }
}
