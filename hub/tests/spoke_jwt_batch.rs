//! Spokes signing in with their clusters' own JWTs at once (a reconnect storm) have
//! their clusters' identity bindings read in batches (`SpokeAuth::authenticate_jwt`,
//! one query per batch instead of one per spoke); each spoke gets exactly what the
//! one-by-one check (`Service::authenticate_spoke_jwt`) answers it: accepted with its
//! token's expiry, or refused with the same reason (real PostgreSQL).

mod common;

use base64::Engine as _;
use common::{Hub, t0};
use fleetgate_hub::service::clusters::spoke_auth::SpokeAuth;
use http::StatusCode;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair as _};
use serde_json::{Value, json};

const SUBJECT: &str = "system:serviceaccount:fleetgate-system:fleetgate-spoke";

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// A cluster's service-account issuer: its URL, signing key and published keys.
struct Issuer {
    url: String,
    pair: EcdsaKeyPair,
    jwks: Value,
}

fn issuer(i: usize) -> Issuer {
    let rng = ring::rand::SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
    let pair =
        EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng).unwrap();
    let (x, y) = pair.public_key().as_ref()[1..].split_at(32);
    let jwks = json!({"keys": [{
        "kty": "EC", "crv": "P-256", "kid": format!("k{i}"), "alg": "ES256", "use": "sig",
        "x": b64(x), "y": b64(y),
    }]});
    Issuer {
        url: format!("https://issuer-{i}.example.com"),
        pair,
        jwks,
    }
}

/// A projected-token-like JWT of `issuer` for `sub`, valid for an hour from the hub's clock.
fn token(issuer: &Issuer, kid: usize, sub: &str) -> String {
    let now = t0().timestamp();
    let header = json!({"alg": "ES256", "kid": format!("k{kid}")});
    let claims = json!({
        "iss": issuer.url, "sub": sub, "aud": ["fleetgate"],
        "iat": now, "nbf": now, "exp": now + 3600,
    });
    let input = format!(
        "{}.{}",
        b64(&serde_json::to_vec(&header).unwrap()),
        b64(&serde_json::to_vec(&claims).unwrap())
    );
    let rng = ring::rand::SystemRandom::new();
    let sig = issuer.pair.sign(&rng, input.as_bytes()).unwrap();
    format!("{input}.{}", b64(sig.as_ref()))
}

#[tokio::test]
async fn batched_jwt_sign_ins_answer_what_one_by_one_checks_answer() {
    let hub = Hub::new().await;
    let issuers: Vec<Issuer> = (0..24).map(issuer).collect();
    for (i, iss) in issuers.iter().enumerate() {
        let r = hub
            .post_json(
                "/api/v1/clusters",
                &hub.admin,
                json!({"name": format!("j{i}"), "issuer": iss.url, "jwks": iss.jwks}),
            )
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    }
    hub.register("with-token", json!({})).await;

    // Every cluster's own spoke, then one of each refusal.
    let mut cases: Vec<(String, String)> = issuers
        .iter()
        .enumerate()
        .map(|(i, iss)| (format!("j{i}"), token(iss, i, SUBJECT)))
        .collect();
    cases.push(("j0".into(), token(&issuers[1], 1, SUBJECT))); // another cluster's issuer
    cases.push((
        "j2".into(),
        token(&issuers[2], 2, "system:serviceaccount:x:y"),
    )); // another account
    cases.push(("j3".into(), token(&issuers[3], 9, SUBJECT))); // a key it never published
    cases.push(("nowhere".into(), token(&issuers[4], 4, SUBJECT))); // no such cluster
    cases.push(("with-token".into(), token(&issuers[5], 5, SUBJECT))); // registered with a token

    let auth = SpokeAuth::new(hub.service.clone());
    let batched =
        futures::future::join_all(cases.iter().map(|(c, t)| auth.authenticate_jwt(c, t))).await;
    let mut accepted = 0;
    for ((cluster, token), got) in cases.iter().zip(batched) {
        let alone = hub.service.authenticate_spoke_jwt(cluster, token).await;
        assert_eq!(format!("{got:?}"), format!("{alone:?}"), "{cluster}");
        if let Ok(exp) = got {
            assert_eq!(
                exp.expires.timestamp(),
                t0().timestamp() + 3600,
                "{cluster}"
            );
            accepted += 1;
        }
    }
    assert_eq!(
        accepted,
        issuers.len(),
        "every cluster's own spoke, and only those"
    );
}
