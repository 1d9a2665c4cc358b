//! A spoke's JWT against its cluster's binding, with pinned keys (the discovery path is
//! exercised end to end against the simulator's issuers).

use chrono::{TimeZone, Utc};
use serde_json::{Value, json};

use super::*;
use crate::identity::jwt_tests::test_key;

const ISS: &str = "https://oidc.eks.eu-west-1.amazonaws.com/id/ABC";
const SUB: &str = "system:serviceaccount:fleetgate-system:fleetgate-spoke";

fn sign(key: &jsonwebtoken::EncodingKey, kid: &str, claims: &Value) -> String {
    let mut h = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256);
    h.kid = Some(kid.into());
    jsonwebtoken::encode(&h, claims, key).unwrap()
}

fn claims(iss: &str, sub: &str, aud: &str, exp: i64) -> Value {
    json!({"iss": iss, "sub": sub, "aud": [aud], "exp": exp, "iat": exp - 600, "nbf": exp - 600})
}

#[tokio::test]
async fn checks_issuer_subject_audience_time_and_pinned_keys() {
    let (key, jwks) = test_key("k1");
    let issuers = SpokeIssuers::default();
    let binding = Binding {
        issuer: ISS.into(),
        subject: SUB.into(),
        jwks: Some(serde_json::to_value(&jwks).unwrap()),
    };
    let now = Utc.with_ymd_and_hms(2026, 12, 2, 1, 0, 0).unwrap();
    let exp = now.timestamp() + 300;
    let verify = |token: String| {
        let (issuers, binding) = (&issuers, &binding);
        async move { issuers.verify(binding, &token, now).await }
    };

    let ok = verify(sign(&key, "k1", &claims(ISS, SUB, "fleetgate", exp))).await;
    assert_eq!(ok.unwrap().timestamp(), exp, "answers the token's expiry");

    let refused = |r: Result<_, SpokeRefusal>| r.unwrap_err();
    let other_iss = refused(
        verify(sign(
            &key,
            "k1",
            &claims("https://other", SUB, "fleetgate", exp),
        ))
        .await,
    );
    assert_eq!(other_iss.reason, "untrusted_issuer");
    assert!(other_iss.message.contains("https://other"), "{other_iss:?}");

    let other_sa = refused(
        verify(sign(
            &key,
            "k1",
            &claims(
                ISS,
                "system:serviceaccount:default:default",
                "fleetgate",
                exp,
            ),
        ))
        .await,
    );
    assert_eq!(other_sa.reason, "wrong_subject");

    let other_aud = refused(verify(sign(&key, "k1", &claims(ISS, SUB, "vault", exp))).await);
    assert_eq!(other_aud.reason, "wrong_audience");

    let expired = refused(
        verify(sign(
            &key,
            "k1",
            &claims(ISS, SUB, "fleetgate", now.timestamp() - 120),
        ))
        .await,
    );
    assert_eq!(expired.reason, "expired");

    // A key the pinned set does not hold (the cluster rotated): never fetched.
    let (new_key, _) = test_key("k2");
    let unknown = refused(verify(sign(&new_key, "k2", &claims(ISS, SUB, "fleetgate", exp))).await);
    assert_eq!(unknown.reason, "unknown_key");
    assert!(unknown.message.contains("set-jwks"), "{unknown:?}");

    // Same kid, another key: the signature does not verify.
    let forged = refused(verify(sign(&new_key, "k1", &claims(ISS, SUB, "fleetgate", exp))).await);
    assert_eq!(forged.reason, "bad_signature");
}

#[tokio::test]
async fn a_spiffe_id_is_a_subject_like_any_other() {
    let (key, jwks) = test_key("spire");
    let issuers = SpokeIssuers::default();
    let id = "spiffe://example.org/fleetgate/eu-1";
    let binding = Binding {
        issuer: "https://oidc.spire.example.org".into(),
        subject: id.into(),
        jwks: Some(serde_json::to_value(&jwks).unwrap()),
    };
    let now = Utc::now();
    let exp = now.timestamp() + 300;
    let svid = json!({"iss": binding.issuer, "sub": id, "aud": ["fleetgate"], "exp": exp, "iat": exp - 300});
    assert!(
        issuers
            .verify(&binding, &sign(&key, "spire", &svid), now)
            .await
            .is_ok()
    );
    let other = json!({"iss": binding.issuer, "sub": "spiffe://example.org/other", "aud": ["fleetgate"], "exp": exp});
    let refused = issuers
        .verify(&binding, &sign(&key, "spire", &other), now)
        .await
        .unwrap_err();
    assert_eq!(refused.reason, "wrong_subject");
}
