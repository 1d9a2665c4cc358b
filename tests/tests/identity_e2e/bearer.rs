//! Bearer JWTs from the provider on REST and gRPC: a person's ID token and
//! a CI job's workload token, each refused kind (expired, wrong audience,
//! wrong issuer, `alg: none`, HS256 confusion, unknown key) audited once and
//! counted in the metrics; refused sign-in callbacks; key rotation.

use base64::Engine as _;
use fleetgate_proto::v1 as pb;
use serde_json::{Value, json};

use crate::dashboard_support::ADMIN_TOKEN;
use crate::{CI_ISSUER, CI_SUBJECT, Env};

fn b64(v: &Value) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(serde_json::to_vec(v).unwrap())
}

pub async fn bearer_jwts(env: &Env) {
    let idp = &env.idp;
    // A person's ID token: admin through the platform-admins group.
    let alice = idp
        .mint(env.person("alice", &["platform-admins"]), None)
        .await;
    let (s, me) = env.a.request(&alice, "GET", "/api/v1/whoami", None).await;
    assert_eq!(s, 200, "{me}");
    assert_eq!(me["role"], "admin");
    assert_eq!(me["identity"]["kind"], "person");
    assert_eq!(me["identity"]["subject"], "alice");
    assert_eq!(me["identity"]["issuer"], json!(idp.issuer));
    let (s, v) = env
        .a
        .request(
            &alice,
            "POST",
            "/api/v1/tokens",
            Some(json!({"name": "by-alice", "role": "viewer"})),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    let (_, audit) = env
        .a
        .request(ADMIN_TOKEN, "GET", "/api/v1/audit?limit=1", None)
        .await;
    let entry = &audit["items"][0];
    assert_eq!(entry["actor"], "alice@example.com", "{entry}");
    assert_eq!(entry["actorKind"], "person", "{entry}");
    assert_eq!(entry["actorIssuer"], json!(idp.issuer), "{entry}");
    assert_eq!(entry["actorSubject"], "alice", "{entry}");

    // A CI job's token from the trusted workload issuer: operator by subject.
    let ci = idp
        .mint(json!({"iss": CI_ISSUER, "sub": CI_SUBJECT, "aud": "fleetgate-ci", "repository": "acme/app"}), None)
        .await;
    let (s, me) = env.a.request(&ci, "GET", "/api/v1/whoami", None).await;
    assert_eq!(s, 200, "{me}");
    assert_eq!(me["role"], "operator");
    assert_eq!(me["identity"]["kind"], "workload");
    assert_eq!(me["identity"]["name"], "acme/app");
    // A person without any role mapping: authenticated, but 403, audited once
    // however often he tries.
    let dave = idp.mint(env.person("dave", &[]), None).await;
    assert_eq!(
        env.a.request(&dave, "GET", "/api/v1/gates", None).await.0,
        403
    );
    assert_eq!(
        env.a.request(&dave, "GET", "/api/v1/gates", None).await.0,
        403
    );
    let refused = env.refusals().await;
    let no_role: Vec<&Value> = refused
        .iter()
        .filter(|e| e["after"]["reason"] == "no_role")
        .collect();
    assert_eq!(no_role.len(), 1, "{refused:#?}");
    assert_eq!(no_role[0]["actor"], "dave@example.com");
    assert_eq!(no_role[0]["actorIssuer"], json!(idp.issuer));
    assert!(
        no_role[0]["reason"]
            .as_str()
            .unwrap()
            .contains("no access policy grants it any role"),
        "{}",
        no_role[0]
    );

    // Each refused with 401, and nothing written.
    let now = chrono::Utc::now().timestamp();
    let mut expired = env.person("alice", &["platform-admins"]);
    expired["exp"] = json!(now - 3600);
    expired["iat"] = json!(now - 7200);
    let mut wrong_aud = env.person("alice", &["platform-admins"]);
    wrong_aud["aud"] = json!("another-service");
    let mut wrong_iss = env.person("alice", &["platform-admins"]);
    wrong_iss["iss"] = json!("https://evil.example");
    let claims = env.person("alice", &["platform-admins"]);
    let mut live = claims.clone();
    live["iss"] = json!(idp.issuer);
    live["exp"] = json!(now + 300);
    let jwk = idp.public_jwk().await;
    let none = format!(
        "{}.{}.",
        b64(&json!({"alg": "none", "typ": "JWT"})),
        b64(&live)
    );
    // HS256 "signed" with the provider's public key as the HMAC secret.
    let hs_input = format!(
        "{}.{}",
        b64(&json!({"alg": "HS256", "kid": jwk["kid"]})),
        b64(&live)
    );
    let secret = jwk["n"].as_str().unwrap().as_bytes().to_vec();
    let sig = ring::hmac::sign(
        &ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &secret),
        hs_input.as_bytes(),
    );
    let hs = format!(
        "{hs_input}.{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sig)
    );
    let forged_kid = idp.mint(claims.clone(), Some("no-such-kid")).await;
    let before = env.audit_count().await;
    let bad = [
        ("expired", idp.mint(expired, None).await),
        ("wrong audience", idp.mint(wrong_aud, None).await),
        ("wrong issuer", idp.mint(wrong_iss, None).await),
        ("alg none", none),
        ("HS256 confusion", hs),
        ("unknown kid", forged_kid),
    ];
    for (what, token) in &bad {
        let (s, v) = env
            .a
            .request(
                token,
                "POST",
                "/api/v1/tokens",
                Some(json!({"name": "must-not-exist", "role": "admin"})),
            )
            .await;
        assert_eq!(s, 401, "{what}: {v}");
        assert_eq!(v["error"]["code"], "unauthenticated", "{what}");
    }
    // Nothing written but one `sign_in.refused` entry per refusal, naming
    // alice where her signature vouches for it (expired, wrong audience),
    // only as `claimed` where it does not, never the token.
    let refused = env.refusals().await;
    assert_eq!(env.audit_count().await, before + bad.len(), "{refused:#?}");
    let fresh = &refused[..bad.len()];
    let reasons: std::collections::BTreeSet<&str> = fresh
        .iter()
        .map(|e| e["after"]["reason"].as_str().unwrap())
        .collect();
    for r in [
        "expired",
        "wrong_audience",
        "untrusted_issuer",
        "algorithm",
        "unknown_key",
    ] {
        assert!(reasons.contains(r), "no {r} refusal in {reasons:?}");
    }
    for e in fresh {
        assert_eq!(e["after"]["flow"], "bearer", "{e}");
        let text = e.to_string();
        for (_, token) in &bad {
            let sig = token.rsplit('.').next().unwrap();
            assert!(sig.is_empty() || !text.contains(sig), "token in {e}");
        }
        match e["after"]["reason"].as_str().unwrap() {
            "expired" | "wrong_audience" => {
                assert_eq!(e["actor"], "alice@example.com", "{e}");
                assert_eq!(e["actorSubject"], "alice", "{e}");
                assert_eq!(e["after"]["identity"]["subject"], "alice", "{e}");
            }
            _ => {
                assert_eq!(e["actor"], "anonymous", "{e}");
                assert_eq!(e["after"]["claimed"]["subject"], "alice", "{e}");
            }
        }
    }
    // The same refusals again within the minute: counted, not audited.
    for (_, token) in &bad {
        assert_eq!(
            env.a.request(token, "GET", "/api/v1/whoami", None).await.0,
            401
        );
    }
    assert_eq!(
        env.refusals().await.len(),
        refused.len(),
        "a repeat was audited"
    );
    let (s, v) = env
        .a
        .request(ADMIN_TOKEN, "GET", "/api/v1/tokens", None)
        .await;
    assert_eq!(s, 200);
    assert!(!v.to_string().contains("must-not-exist"));

    // Metrics count validations by outcome.
    let metrics = env
        .a
        .http
        .get(format!("{}/metrics", env.a.base))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for series in [
        "fleetgate_hub_identity_refusals_total{flow=\"bearer\",reason=\"expired\"} 2",
        "fleetgate_hub_identity_refusals_total{flow=\"bearer\",reason=\"no_role\"} 2",
        "fleetgate_hub_identity_refusals_not_audited_total 7",
    ] {
        assert!(metrics.contains(series), "no `{series}` in /metrics");
    }
    for outcome in ["ok", "expired", "wrong_audience", "untrusted_issuer"] {
        assert!(
            metrics.contains(&format!(
                "fleetgate_hub_identity_jwt_validations_total{{outcome=\"{outcome}\"}}"
            )),
            "no {outcome} series in /metrics"
        );
    }
}

/// Sign-in callbacks the hub refuses, each audited with its reason: a
/// state this browser never started, the provider's own error, and a code
/// the provider will not exchange.
pub async fn refused_callbacks(env: &Env) {
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let callback = |query: String, cookie: Option<String>| {
        let mut req = http.get(format!("{}/auth/callback?{query}", env.a.base));
        if let Some(c) = cookie {
            req = req.header("cookie", c);
        }
        async move {
            let r = req.send().await.expect("callback");
            assert_eq!(r.status(), 303);
            r.headers()["location"].to_str().unwrap().to_string()
        }
    };
    let to = callback("code=c&state=never-started".into(), None).await;
    assert!(to.starts_with("/?signin_error="), "{to}");
    let to = callback(
        "error=access_denied&error_description=the+person+declined".into(),
        None,
    )
    .await;
    assert!(to.contains("access_denied"), "{to}");
    // A real start (state and login cookie), then a code the provider never issued.
    let r = http
        .post(format!("{}/api/v1/auth/login", env.a.base))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let cookie = r.headers()["set-cookie"].to_str().unwrap().to_string();
    let state = cookie
        .split(';')
        .next()
        .unwrap()
        .strip_prefix("fleetgate_login=")
        .unwrap()
        .to_string();
    let to = callback(
        format!("code=forged-code&state={state}"),
        Some(format!("fleetgate_login={state}")),
    )
    .await;
    assert!(to.starts_with("/?signin_error="), "{to}");
    let refused = env.refusals().await;
    let dashboard: Vec<(&str, &str)> = refused
        .iter()
        .filter(|e| e["after"]["flow"] == "dashboard")
        .map(|e| {
            (
                e["after"]["reason"].as_str().unwrap(),
                e["reason"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        dashboard.iter().map(|d| d.0).collect::<Vec<_>>(),
        ["token_exchange", "provider_error", "state"],
        "{dashboard:?}"
    );
    assert!(
        dashboard[1].1.contains("the person declined"),
        "{dashboard:?}"
    );
    assert!(
        !refused
            .iter()
            .any(|e| e.to_string().contains("forged-code"))
    );
}

pub async fn grpc_bearer_jwts(env: &Env) {
    let alice = env
        .idp
        .mint(env.person("alice", &["platform-admins"]), None)
        .await;
    let mut expired = env.person("alice", &["platform-admins"]);
    expired["exp"] = json!(chrono::Utc::now().timestamp() - 3600);
    let expired = env.idp.mint(expired, None).await;
    let channel =
        tonic::transport::Endpoint::from_shared(format!("http://127.0.0.1:{}", env.b.grpc_port))
            .unwrap()
            .connect()
            .await
            .expect("gRPC connect");
    let mut client = pb::admin_service_client::AdminServiceClient::new(channel);
    let call = |token: &str| {
        let mut req = tonic::Request::new(pb::ListGatesRequest {
            limit: 10,
            cursor: String::new(),
        });
        req.metadata_mut()
            .insert("authorization", format!("Bearer {token}").parse().unwrap());
        req
    };
    client
        .list_gates(call(&alice))
        .await
        .expect("a valid JWT lists gates over gRPC");
    let err = client.list_gates(call(&expired)).await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::Unauthenticated, "{err}");
}

pub async fn key_rotation(env: &Env) {
    let old = env.idp.mint(env.person("bob", &["sre"]), None).await;
    assert_eq!(
        env.a.request(&old, "GET", "/api/v1/whoami", None).await.0,
        200
    );
    env.idp.rotate().await;
    // A token under the new key: its unknown kid makes the hub refetch the keys.
    let new = env.idp.mint(env.person("bob", &["sre"]), None).await;
    let (s, me) = env.a.request(&new, "GET", "/api/v1/whoami", None).await;
    assert_eq!(s, 200, "{me}");
    assert_eq!(me["role"], "operator");
    // The retired key is gone from the provider's JWKS, so from the hub's.
    assert_eq!(
        env.a.request(&old, "GET", "/api/v1/whoami", None).await.0,
        401
    );
}
