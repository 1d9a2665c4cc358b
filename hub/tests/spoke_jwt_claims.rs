//! Property test over the spoke path: the verifier the hub's gRPC `SpokeService.Connect`
//! calls for a JWT credential (`Service::authenticate_spoke_jwt` reads the cluster's
//! binding and calls `SpokeVerifier::verify` of the adapters' `SpokeIssuers` with it,
//! called here the same way), for both kinds of binding: a
//! projected ServiceAccount token (keys pinned as `kubectl get --raw /openid/v1/jwks`
//! prints them) and a SPIFFE JWT-SVID (keys pinned as the trust domain's SPIFFE bundle,
//! X.509 authority included). From a valid ES256 token, one claim or header field at a
//! time is removed, mangled or mistyped, or the token is signed otherwise, and it must be
//! refused exactly when RFC 7519 / RFC 8725, the JWT-SVID specification (SPIFFE
//! `standards/JWT-SVID.md`: `typ` JWT or JOSE, `iss` optional) and the binding (`iss` the
//! registered issuer, `sub` exactly the registered subject, `aud` the hub's spoke
//! audience) make it invalid.

mod jwt_forge;

use std::sync::OnceLock;

use chrono::{TimeZone, Utc};
use fleetgate_hub::identity::spoke_jwt::{Binding, SpokeIssuers, SpokeVerifier};
use jwt_forge::{Change, Signers, ec_jwk, keypair, mistyped};
use proptest::prelude::*;
use ring::signature::EcdsaKeyPair;
use serde_json::{Map, Value, json};

const SA_ISS: &str = "https://oidc.eks.eu-west-1.amazonaws.com/id/EXAMPLED539D4633E53DE1B71EXAMPLE";
const SA_SUB: &str = "system:serviceaccount:fleetgate-system:fleetgate-spoke";
const TD_ISS: &str = "https://oidc-discovery.example.org";
const SVID_SUB: &str = "spiffe://example.org/ns/fleetgate-system/sa/fleetgate-spoke";
const AUD: &str = "fleetgate";
/// `SpokeIssuers::default()`'s clock skew.
const SKEW: i64 = 60;

/// Keys, bindings and the verifier, made once for every case.
struct Fixture {
    /// Signs the valid tokens (`kid` k1).
    key: EcdsaKeyPair,
    /// Another key, published nowhere.
    other: EcdsaKeyPair,
    /// The trust domain's X.509 authority (in its bundle, `use: x509-svid`, no `kid`).
    x509: EcdsaKeyPair,
    /// The published JWK of `key` (the HS256 confusion's secret).
    jwk: Value,
    sa: Binding,
    svid: Binding,
    issuers: SpokeIssuers,
    rt: tokio::runtime::Runtime,
}

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        fleetgate_hub::identity::crypto::install();
        let (key, other, x509) = (keypair(), keypair(), keypair());
        let mut jwk = ec_jwk(&key);
        jwk.insert("kid".into(), json!("k1"));
        // `kubectl get --raw /openid/v1/jwks`: use sig, alg ES256.
        let mut sa_jwk = jwk.clone();
        sa_jwk.insert("use".into(), json!("sig"));
        sa_jwk.insert("alg".into(), json!("ES256"));
        // `spire-server bundle show -format spiffe`.
        let mut svid_jwk = jwk.clone();
        svid_jwk.insert("use".into(), json!("jwt-svid"));
        let mut x509_jwk = ec_jwk(&x509);
        x509_jwk.insert("use".into(), json!("x509-svid"));
        x509_jwk.insert("x5c".into(), json!(["MIIBfake"]));
        Fixture {
            sa: Binding {
                issuer: SA_ISS.into(),
                subject: SA_SUB.into(),
                jwks: Some(json!({"keys": [sa_jwk]})),
            },
            svid: Binding {
                issuer: TD_ISS.into(),
                subject: SVID_SUB.into(),
                jwks: Some(json!({"keys": [x509_jwk, svid_jwk],
                                  "spiffe_sequence": 7, "spiffe_refresh_hint": 300})),
            },
            jwk: Value::Object(jwk),
            key,
            other,
            x509,
            issuers: SpokeIssuers::default(),
            rt: tokio::runtime::Builder::new_current_thread()
                .build()
                .unwrap(),
        }
    })
}

/// Which registration the spoke's cluster has.
#[derive(Debug, Clone, Copy)]
enum Kind {
    ServiceAccount,
    Svid,
}

impl Kind {
    fn iss(self) -> &'static str {
        match self {
            Kind::ServiceAccount => SA_ISS,
            Kind::Svid => TD_ISS,
        }
    }
    fn sub(self) -> &'static str {
        match self {
            Kind::ServiceAccount => SA_SUB,
            Kind::Svid => SVID_SUB,
        }
    }
    fn binding(self) -> &'static Binding {
        match self {
            Kind::ServiceAccount => &fixture().sa,
            Kind::Svid => &fixture().svid,
        }
    }
}

/// Subjects that are not the registered one but look like it.
fn near_subjects(kind: Kind) -> Vec<String> {
    let fixed: &[&str] = match kind {
        Kind::ServiceAccount => &[
            "system:serviceaccount:default:fleetgate-spoke",
            "system:serviceaccount:fleetgate-system:default",
            "system:serviceaccount:fleetgate-system:fleetgate-spoke-x",
            "system:serviceaccount:fleetgate-system:fleetgate-spok",
            "system:serviceaccount:fleetgate-system-x:fleetgate-spoke",
            "system:serviceaccount:fleetgate:system:fleetgate-spoke",
            "system:serviceaccount:fleetgate-system",
            "system:serviceaccounts:fleetgate-system",
            "system:serviceaccount:fleetgate-system:fleetgate-spoke:x",
            "System:ServiceAccount:fleetgate-system:fleetgate-spoke",
            "system:serviceaccount:fleetgate-system:Fleetgate-spoke",
            " system:serviceaccount:fleetgate-system:fleetgate-spoke",
            "system:serviceaccount:fleetgate-system:fleetgate-spoke\n",
            "system:serviceaccount:fleetgate-system:fleetgate-spoke\u{0}",
            "system:node:fleetgate-spoke",
            SVID_SUB,
        ],
        Kind::Svid => &[
            "spiffe://example.org/ns/fleetgate-system/sa/fleetgate-spoke/",
            "spiffe://example.org/ns/fleetgate-system/sa/fleetgate-spoke/x",
            "spiffe://example.org/ns/fleetgate-system/sa/fleetgate-spok",
            "spiffe://example.org/ns/default/sa/fleetgate-spoke",
            "spiffe://example.org/ns/fleetgate-system/sa/default",
            "spiffe://example.org/ns/fleetgate-system",
            "spiffe://example.org/",
            "spiffe://example.org",
            "spiffe://other.org/ns/fleetgate-system/sa/fleetgate-spoke",
            "spiffe://example.org.evil.example/ns/fleetgate-system/sa/fleetgate-spoke",
            "spiffe://evil.example/example.org/ns/fleetgate-system/sa/fleetgate-spoke",
            "spiffe://EXAMPLE.ORG/ns/fleetgate-system/sa/fleetgate-spoke",
            "SPIFFE://example.org/ns/fleetgate-system/sa/fleetgate-spoke",
            "spiffe://example.org/NS/fleetgate-system/sa/fleetgate-spoke",
            "spiffe://example.org//ns/fleetgate-system/sa/fleetgate-spoke",
            "spiffe://example.org/ns/fleetgate-system/sa/./fleetgate-spoke",
            "spiffe://example.org/ns/fleetgate-system/sa/../sa/fleetgate-spoke",
            "spiffe://example.org/ns/fleetgate-system/sa/%66leetgate-spoke",
            "spiffe://example.org:443/ns/fleetgate-system/sa/fleetgate-spoke",
            "spiffe://user@example.org/ns/fleetgate-system/sa/fleetgate-spoke",
            "spiffe://example.org/ns/fleetgate-system/sa/fleetgate-spoke?x=1",
            "spiffe://example.org/ns/fleetgate-system/sa/fleetgate-spoke#f",
            "spiffe:/example.org/ns/fleetgate-system/sa/fleetgate-spoke",
            "https://example.org/ns/fleetgate-system/sa/fleetgate-spoke",
            "example.org/ns/fleetgate-system/sa/fleetgate-spoke",
            SA_SUB,
        ],
    };
    fixed.iter().map(|s| s.to_string()).collect()
}

/// One change to a valid token.
fn text() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9:/._@%-]{1,24}"
}

fn change(kind: Kind) -> impl Strategy<Value = Change> {
    let claim = prop_oneof![
        Just("iss"),
        Just("sub"),
        Just("aud"),
        Just("exp"),
        Just("nbf"),
        Just("iat")
    ];
    let header = prop_oneof![Just("alg"), Just("kid"), Just("typ")];
    let exact = kind.sub();
    let subjects = prop_oneof![
        prop::sample::select(near_subjects(kind)),
        text().prop_map(move |t| format!("{exact}{t}")),
        text().prop_map(move |t| format!("{t}{exact}")),
        (0..exact.len()).prop_map(move |n| exact[..n].to_string()),
        Just(exact.to_string()),
    ]
    .prop_map(|s| Change::Set("sub", json!(s)));
    prop_oneof![
        Just(Change::None),
        claim.clone().prop_map(Change::Remove),
        (claim, mistyped()).prop_map(|(c, v)| Change::Set(c, v)),
        text().prop_map(|s| Change::Set("iss", json!(s))),
        prop_oneof![
            Just(SA_ISS),
            Just(TD_ISS),
            Just("https://oidc-discovery.example.org/"),
            Just("http://oidc-discovery.example.org"),
        ]
        .prop_map(|s| Change::Set("iss", json!(s))),
        subjects,
        Just(Change::Set("sub", json!(""))),
        Just(Change::Set("sub", json!([exact]))),
        Just(Change::Set("iss", json!(7))),
        text().prop_map(|s| Change::Set("aud", json!(s))),
        text().prop_map(|s| Change::Set("aud", json!([s]))),
        text().prop_map(|s| Change::Set("aud", json!([s, "@ours"]))),
        Just(Change::Set("aud", json!([]))),
        Just(Change::Set("aud", json!(["@ours", 5]))),
        Just(Change::Set("aud", json!(12))),
        Just(Change::Set("aud", json!("Fleetgate"))),
        Just(Change::Set("aud", json!(["fleetgate "]))),
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
            Just("ES512"),
            Just("EdDSA"),
            Just("PS256"),
            Just("es256"),
        ]
        .prop_map(|a| Change::Header("alg", Some(json!(a)))),
        text().prop_map(|k| Change::Header("kid", Some(json!(k)))),
        Just(Change::Header("kid", Some(json!("")))),
        prop_oneof![
            Just("JWT"),
            Just("jwt"),
            Just("application/jwt"),
            Just("JOSE"),
            Just("jose"),
            Just("application/jose"),
            Just("JOSE+JSON"),
            Just("at+jwt"),
            Just("secevent+jwt"),
            Just(""),
        ]
        .prop_map(|t| Change::Header("typ", Some(json!(t)))),
        Just(Change::Hs256WithPublicKey),
        Just(Change::OtherKey),
        Just(Change::X509Authority(None)),
        Just(Change::X509Authority(Some(""))),
    ]
}

/// Whether the token with `change` is valid (the oracle).
fn valid(kind: Kind, change: &Change) -> bool {
    let svid = matches!(kind, Kind::Svid);
    match change {
        // Optional: nbf, iat (RFC 7519 §4.1); iss of a JWT-SVID (JWT-SVID §3: only sub,
        // aud and exp are required; SPIRE sets it only with `jwt_issuer`); typ (RFC 7515
        // §4.1.9) and kid (the set has one JWT key).
        Change::Remove(c) => matches!(*c, "nbf" | "iat") || (svid && *c == "iss"),
        Change::Set("sub", v) => v.as_str() == Some(kind.sub()),
        Change::Set("iss", v) => v.as_str() == Some(kind.iss()),
        // RFC 7515 §4.1.9: case-insensitive, `application/` optional. JWT-SVID §2.3 also
        // allows JOSE.
        Change::Header("typ", Some(Value::String(t))) => {
            let t = t.to_ascii_lowercase();
            let t = t.strip_prefix("application/").unwrap_or(&t);
            t == "jwt" || (svid && t == "jose")
        }
        _ => jwt_forge::valid_by_common_rules(change, AUD, SKEW),
    }
}

fn token(kind: Kind, change: &Change, now: i64) -> String {
    let f = fixture();
    let mut claims: Map<String, Value> = serde_json::from_value(json!({
        "iss": kind.iss(), "sub": kind.sub(), "aud": [AUD],
        "exp": now + 300, "nbf": now - 10, "iat": now - 10,
    }))
    .unwrap();
    if let Kind::ServiceAccount = kind {
        claims.insert(
            "kubernetes.io".into(),
            json!({"namespace": "fleetgate-system",
                   "serviceaccount": {"name": "fleetgate-spoke", "uid": "u-1"}}),
        );
        claims.insert("jti".into(), json!("j-1"));
    }
    let jwk = serde_json::to_vec(&f.jwk).unwrap();
    let signers = Signers {
        key: &f.key,
        other: &f.other,
        x509: Some(&f.x509),
        jwk: &jwk,
    };
    jwt_forge::forge(change, claims, now, AUD, &signers)
}

fn kind_and_change() -> impl Strategy<Value = (Kind, Change)> {
    prop_oneof![Just(Kind::ServiceAccount), Just(Kind::Svid)]
        .prop_flat_map(|kind| (Just(kind), change(kind)))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    #[test]
    fn every_change_that_invalidates_a_spoke_token_is_refused(
        (kind, change) in kind_and_change(),
    ) {
        let f = fixture();
        let now = Utc.with_ymd_and_hms(2026, 12, 2, 5, 0, 0).unwrap();
        let t = token(kind, &change, now.timestamp());
        let got = f.rt.block_on(SpokeVerifier::verify(&f.issuers, kind.binding(), &t, now));
        if valid(kind, &change) {
            got.map_err(|e| TestCaseError::fail(format!("{change:?} on {kind:?} refused: {} ({})", e.message, e.reason)))?;
        } else {
            prop_assert!(got.is_err(), "{:?} on {:?} accepted", change, kind);
        }
    }
}

/// The unmodified token of each kind is accepted, and each kind's token is refused by
/// the other registration (a SPIFFE registration presented a ServiceAccount token and the
/// other way round), with the reason the audit records.
#[test]
fn each_registration_accepts_its_own_token_only() {
    let f = fixture();
    let now = Utc.with_ymd_and_hms(2026, 12, 2, 5, 0, 0).unwrap();
    for kind in [Kind::ServiceAccount, Kind::Svid] {
        let t = token(kind, &Change::None, now.timestamp());
        let exp =
            f.rt.block_on(SpokeVerifier::verify(&f.issuers, kind.binding(), &t, now));
        assert_eq!(exp.unwrap().timestamp(), now.timestamp() + 300, "{kind:?}");
        let other = match kind {
            Kind::ServiceAccount => Kind::Svid,
            Kind::Svid => Kind::ServiceAccount,
        };
        let refused =
            f.rt.block_on(SpokeVerifier::verify(&f.issuers, other.binding(), &t, now))
                .unwrap_err();
        assert_eq!(refused.reason, "untrusted_issuer", "{kind:?}");
    }
}
