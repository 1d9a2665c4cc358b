//! Each simulated cluster is a service-account token issuer: the real kubectl gets a token
//! through TokenRequest (`kubectl create token`), the discovery document and JWKS are served
//! without credentials even with RBAC on, the token verifies with the published key, each
//! cluster has its own key, a rotated key is published beside the old one until retired,
//! the projected-volume file is refreshed before it expires, and an offline issuer answers
//! 503.

mod common;

use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use common::{CLUSTER, Kubectl, start_default};
use fleetgate_sim::{RbacConfig, SimConfig};
use serde_json::{Value, json};

fn claims(token: &str) -> Value {
    let part = token.split('.').nth(1).expect("a JWT");
    serde_json::from_slice(&B64.decode(part).unwrap()).unwrap()
}

/// Whether `token`'s ES256 signature verifies with a key of `jwks` with its `kid`.
fn verifies(token: &str, jwks: &Value) -> bool {
    let (message, sig) = token.rsplit_once('.').unwrap();
    let header: Value =
        serde_json::from_slice(&B64.decode(message.split('.').next().unwrap()).unwrap()).unwrap();
    jwks["keys"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|k| k["kid"] == header["kid"])
        .any(|k| {
            let mut point = vec![4u8];
            point.extend(B64.decode(k["x"].as_str().unwrap()).unwrap());
            point.extend(B64.decode(k["y"].as_str().unwrap()).unwrap());
            ring::signature::UnparsedPublicKey::new(
                &ring::signature::ECDSA_P256_SHA256_FIXED,
                point,
            )
            .verify(message.as_bytes(), &B64.decode(sig).unwrap())
            .is_ok()
        })
}

async fn get_json(http: &reqwest::Client, url: &str) -> Value {
    let r = http.get(url).send().await.unwrap();
    assert_eq!(r.status(), 200, "GET {url}");
    r.json().await.unwrap()
}

async fn post(http: &reqwest::Client, url: &str, body: Value) -> reqwest::Response {
    http.post(url).json(&body).send().await.unwrap()
}

#[tokio::test]
async fn kubectl_create_token_follows_token_request() {
    let sim = start_default().await;
    let k = Kubectl::new(&sim);
    k.ok(&["create", "namespace", "fleetgate-system"]).await;
    k.ok(&[
        "create",
        "serviceaccount",
        "fleetgate-spoke",
        "-n",
        "fleetgate-system",
    ])
    .await;
    let token = k
        .ok(&[
            "create",
            "token",
            "fleetgate-spoke",
            "-n",
            "fleetgate-system",
            "--audience",
            "fleetgate",
            "--duration",
            "10m",
        ])
        .await;
    let token = token.trim();
    let c = claims(token);
    let url = sim.url(CLUSTER).unwrap();
    assert_eq!(c["iss"], url);
    assert_eq!(
        c["sub"],
        "system:serviceaccount:fleetgate-system:fleetgate-spoke"
    );
    assert_eq!(c["aud"], json!(["fleetgate"]));
    assert_eq!(c["exp"].as_i64().unwrap() - c["iat"].as_i64().unwrap(), 600);
    assert_eq!(c["nbf"], c["iat"]);
    assert_eq!(c["kubernetes.io"]["namespace"], "fleetgate-system");
    assert_eq!(
        c["kubernetes.io"]["serviceaccount"]["name"],
        "fleetgate-spoke"
    );
    let http = reqwest::Client::new();
    let jwks = get_json(&http, &format!("{url}/openid/v1/jwks")).await;
    assert!(verifies(token, &jwks), "signed with the published key");

    // validation.go: under ten minutes is refused; token.go: the ServiceAccount must exist.
    k.run(&[
        "create",
        "token",
        "fleetgate-spoke",
        "-n",
        "fleetgate-system",
        "--duration",
        "5m",
    ])
    .await
    .assert_fails_with("may not specify a duration less than 10 minutes");
    k.run(&["create", "token", "nobody", "-n", "fleetgate-system"])
        .await
        .assert_fails_with("not found");
}

#[tokio::test]
async fn discovery_is_open_and_each_cluster_has_its_own_key() {
    let sim = common::start(SimConfig {
        rbac: Some(RbacConfig::default()),
        ..SimConfig::with_clusters(2)
    })
    .await;
    let http = reqwest::Client::new();
    let mut kids = Vec::new();
    for cluster in sim.clusters() {
        let url = sim.url(&cluster).unwrap();
        // The API itself wants credentials; discovery does not.
        let api = http
            .get(format!("{url}/api/v1/namespaces"))
            .send()
            .await
            .unwrap();
        assert_eq!(api.status(), 401);
        let meta = get_json(&http, &format!("{url}/.well-known/openid-configuration")).await;
        assert_eq!(meta["issuer"], url);
        assert_eq!(meta["jwks_uri"], format!("{url}/openid/v1/jwks"));
        let jwks = get_json(&http, meta["jwks_uri"].as_str().unwrap()).await;
        kids.push(jwks["keys"][0]["kid"].clone());
    }
    assert_ne!(kids[0], kids[1], "one signing key per cluster");
}

#[tokio::test]
async fn projected_file_refreshes_and_keys_rotate() {
    let sim = start_default().await;
    let k = Kubectl::new(&sim);
    k.ok(&["create", "namespace", "fleetgate-system"]).await;
    k.ok(&[
        "create",
        "serviceaccount",
        "fleetgate-spoke",
        "-n",
        "fleetgate-system",
    ])
    .await;
    let url = sim.url(CLUSTER).unwrap();
    let http = reqwest::Client::new();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("token");
    let project = |ttl: i64| {
        json!({"path": path, "namespace": "fleetgate-system", "serviceAccount": "fleetgate-spoke",
               "audience": "fleetgate", "expirationSeconds": ttl, "pod": "spoke-0"})
    };

    // Missing ServiceAccount: the kubelet's TokenRequest would fail.
    let r = post(
        &http,
        &format!("{url}/sim/v1/projected-token"),
        json!({"path": path, "namespace": "fleetgate-system", "serviceAccount": "nobody",
               "audience": "fleetgate"}),
    )
    .await;
    assert_eq!(r.status(), 404);

    let r = post(&http, &format!("{url}/sim/v1/projected-token"), project(2)).await;
    assert_eq!(r.status(), 200);
    let first = std::fs::read_to_string(&path).unwrap();
    assert_eq!(claims(&first)["kubernetes.io"]["pod"]["name"], "spoke-0");
    // Rewritten at 80% of its two seconds.
    common::eventually("the projected token refreshed", || async {
        let now = std::fs::read_to_string(&path).unwrap();
        (now != first).then_some(())
    })
    .await;

    let jwks_url = format!("{url}/openid/v1/jwks");
    let jwks = || get_json(&http, &jwks_url);
    let old = std::fs::read_to_string(&path).unwrap();
    let rotated = post(&http, &format!("{url}/sim/v1/issuer/rotate"), json!({})).await;
    let new_kid = rotated.json::<Value>().await.unwrap()["kid"].clone();
    post(
        &http,
        &format!("{url}/sim/v1/projected-token"),
        project(3600),
    )
    .await;
    let new = std::fs::read_to_string(&path).unwrap();
    let both = jwks().await;
    assert_eq!(both["keys"].as_array().unwrap().len(), 2);
    assert_eq!(both["keys"][0]["kid"], new_kid, "the signing key first");
    assert!(verifies(&old, &both) && verifies(&new, &both));
    post(&http, &format!("{url}/sim/v1/issuer/retire"), json!({})).await;
    let only_new = jwks().await;
    assert!(!verifies(&old, &only_new), "the retired key is gone");
    assert!(verifies(&new, &only_new));

    // A JWT-SVID through the same issuer.
    let svid_path = dir.path().join("svid").join("jwt_svid.token");
    let r = post(
        &http,
        &format!("{url}/sim/v1/projected-token"),
        json!({"path": svid_path, "spiffeId": "spiffe://example.org/fleetgate/cluster-000",
               "audience": "fleetgate", "expirationSeconds": 300}),
    )
    .await;
    assert_eq!(r.status(), 200);
    let svid = claims(&std::fs::read_to_string(&svid_path).unwrap());
    assert_eq!(svid["sub"], "spiffe://example.org/fleetgate/cluster-000");
    assert!(svid.get("kubernetes.io").is_none());

    let offline_url = format!("{url}/sim/v1/issuer/offline");
    let off = |o: bool| post(&http, &offline_url, json!({"offline": o}));
    off(true).await;
    for p in ["/.well-known/openid-configuration", "/openid/v1/jwks"] {
        let r = http.get(format!("{url}{p}")).send().await.unwrap();
        assert_eq!(r.status(), 503, "{p} while offline");
    }
    off(false).await;
    jwks().await;
    tokio::time::timeout(Duration::from_secs(10), sim.shutdown())
        .await
        .unwrap();
}
