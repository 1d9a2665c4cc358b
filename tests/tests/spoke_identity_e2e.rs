//! Spokes signing in with their cluster's own identity, end to end with real processes:
//! PostgreSQL, `fleetgate-hub`, `fleetgate-sim` (two clusters, each its own
//! service-account issuer) and `fleetgate-spoke` reading a projected token the simulated
//! kubelet writes and rotates. A cluster registered with its issuer connects with no token,
//! enforces a gate and reports; its spoke reconnects with the rewritten token before the
//! old one expires; a key rotation at the cluster is followed through discovery; with the
//! issuer down, reconnects are verified with the cached keys and a key the hub never saw is
//! refused. Every refusal (another cluster's issuer, another ServiceAccount, another
//! audience, expired, a cluster registered with a token) is UNAUTHENTICATED, audited as
//! `spoke.refused` with its reason and counted.

use std::path::{Path, PathBuf};
use std::time::Duration;

use fleetgate_tests::spoke_sign_in::{connect, refusals, unauthenticated};
use fleetgate_tests::{
    ChildGuard, KUSTOMIZATION, Rest, binaries, dynamic_api, free_port, hub_serve, poll,
    spoke_connect, start_sim_clusters, test_db, watch_until,
};
use kube::api::{DynamicObject, PostParams};
use reqwest::Method;
use serde_json::{Value, json};

const ADMIN: &str = "fga_spoke-identity-admin-token-0123456789";
const NS: &str = "flux-system";
const SA_NS: &str = "fleetgate-system";
const SA: &str = "fleetgate-spoke";
/// Lifetime of the projected tokens: the kubelet rewrites them at 80%, the spoke
/// reconnects at 90%.
const TTL: i64 = 12;

/// The simulated cluster's issuer hooks.
struct Issuer {
    http: reqwest::Client,
    url: String,
}

impl Issuer {
    async fn post(&self, path: &str, body: Value) -> Value {
        let r = self
            .http
            .post(format!("{}{path}", self.url))
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = r.status();
        let v: Value = r.json().await.unwrap_or(Value::Null);
        assert!(status.is_success(), "{path}: {status} {v}");
        v
    }

    /// A projected token for `sa` (namespace/name) with `audience`, written to `path`
    /// and kept fresh by the simulated kubelet; the token written.
    async fn project(&self, path: &Path, sa: (&str, &str), audience: &str, ttl: i64) -> String {
        let v = self
            .post(
                "/sim/v1/projected-token",
                json!({"path": path, "namespace": sa.0, "serviceAccount": sa.1,
                       "audience": audience, "expirationSeconds": ttl}),
            )
            .await;
        v["token"].as_str().unwrap().to_string()
    }
}

async fn create_service_account(client: &kube::Client, ns: &str, name: &str) {
    let api: kube::Api<k8s_openapi::api::core::v1::ServiceAccount> =
        kube::Api::namespaced(client.clone(), ns);
    let sa = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
    api.create(&PostParams::default(), &sa).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spokes_sign_in_with_their_clusters_identity() {
    binaries(&["fleetgate-hub", "fleetgate-sim", "fleetgate-spoke"]);
    let db = test_db().await;
    let dir = tempfile::tempdir().unwrap();
    let (_sim, clusters) = start_sim_clusters(dir.path(), 2).await;
    let (c0, c1) = (&clusters[0], &clusters[1]);
    let client = fleetgate_tests::kube_client_from_file(&c0.kubeconfig).await;
    let client1 = fleetgate_tests::kube_client_from_file(&c1.kubeconfig).await;
    for c in [&client, &client1] {
        fleetgate_tests::create_namespaces(c, &[NS, SA_NS]).await;
        create_service_account(c, SA_NS, SA).await;
    }
    create_service_account(&client, "default", "default").await;
    let http = reqwest::Client::new();
    let issuer0 = Issuer {
        http: http.clone(),
        url: c0.url.clone(),
    };
    let issuer1 = Issuer {
        http: http.clone(),
        url: c1.url.clone(),
    };

    // The hub reaches the simulated issuers on loopback over http; clock skew 1 s so an
    // expired token is refused soon, keys refetched at most every second.
    let settings = dir.path().join("identity.yaml");
    std::fs::write(&settings, "clockSkew: 1s\njwksMinRefetch: 1s\n").unwrap();
    let (hub_http, hub_grpc) = (free_port(), free_port());
    let _hub = ChildGuard(
        hub_serve(&db.url, hub_http, hub_grpc, ADMIN)
            .env("FLEETGATE_EGRESS_ALLOW_PRIVATE", "true")
            .env("FLEETGATE_EGRESS_ALLOW_HTTP", "true")
            .env("FLEETGATE_IDENTITY_CONFIG", &settings)
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("starting fleetgate-hub"),
    );
    let rest = Rest::new(format!("http://127.0.0.1:{hub_http}"), ADMIN);
    rest.wait_ready().await;

    // Registered with its issuer: no token; `cluster get` shows the binding.
    let registered = rest
        .ok(
            Method::POST,
            "/clusters",
            Some(json!({"name": c0.name, "issuer": c0.url})),
        )
        .await;
    assert_eq!(registered["token"], "");
    let subject = format!("system:serviceaccount:{SA_NS}:{SA}");
    assert_eq!(
        registered["cluster"]["identity"],
        json!({"issuer": c0.url, "subject": subject, "jwksPinned": false})
    );
    let token1 = rest.register(&c1.name, json!({})).await;
    // Bad input names the field and changes nothing.
    let (code, e) = rest
        .send(
            Method::POST,
            "/clusters",
            Some(json!({"name": "bad", "issuer": c0.url, "serviceAccount": "no-slash"})),
        )
        .await;
    assert_eq!(code, 422, "{e}");
    assert!(e.to_string().contains("serviceAccount"), "{e}");
    assert!(rest.get("/clusters/bad").await.is_none());
    let (code, e) = rest
        .send(
            Method::POST,
            &format!("/clusters/{}/rotate-token", c0.name),
            None,
        )
        .await;
    assert_eq!(code, 422, "no token to rotate: {e}");

    // A Flux object to govern and a gate closing it by default.
    let gitrepos = dynamic_api(
        &client,
        ("source.toolkit.fluxcd.io", "v1", "GitRepository"),
        NS,
    );
    let repo = serde_json::from_value(json!({
        "apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
        "metadata": {"name": "repo", "namespace": NS},
        "spec": {"interval": "1m", "url": "https://example.com/repo.git"}
    }))
    .unwrap();
    gitrepos
        .create(&PostParams::default(), &repo)
        .await
        .unwrap();
    let ks: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
        "metadata": {"name": "apps", "namespace": NS},
        "spec": {"interval": "1m", "path": "./", "prune": true, "sourceRef": {"kind": "GitRepository", "name": "repo"}}
    }))
    .unwrap();
    let ks_api = dynamic_api(&client, KUSTOMIZATION, NS);
    ks_api.create(&PostParams::default(), &ks).await.unwrap();
    rest.ok(
        Method::POST,
        "/gates",
        Some(json!({
            "apiVersion": "fleetgate.io/v1", "kind": "Gate", "metadata": {"name": "freeze"},
            "spec": {"clusters": {"names": [c0.name]},
                     "targets": {"kinds": ["Kustomization"], "namespaces": [NS]},
                     "default": "closed"}
        })),
    )
    .await;

    // The spoke reads the projected token the kubelet keeps fresh: connected, the gate
    // enforced, reports at the hub.
    let token_path: PathBuf = dir.path().join("projected").join("token");
    let first = issuer0
        .project(&token_path, (SA_NS, SA), "fleetgate", TTL)
        .await;
    let spoke_http = free_port();
    let _spoke = ChildGuard(
        spoke_connect(&c0.name, hub_grpc, &c0.kubeconfig, "", spoke_http)
            .env("FLEETGATE_SPOKE_TOKEN_FILE", &token_path)
            .args(["--report-debounce", "200ms", "--reconnect-max", "1s"])
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("starting fleetgate-spoke"),
    );
    watch_until(
        ks_api.clone(),
        "apps",
        "suspended by the gate",
        Duration::from_secs(60),
        |o| o.data.pointer("/spec/suspend") == Some(&json!(true)),
    )
    .await;
    let status_path = format!("/clusters/{}/status", c0.name);
    poll("connected and reporting", || async {
        let s = rest.get(&status_path).await?;
        (s["cluster"]["connected"] == json!(true)
            && s["objects"].as_array().is_some_and(|o| !o.is_empty()))
        .then_some(())
    })
    .await;

    // Token rotation mid-stream: after the first token's expiry the spoke is connected
    // on a later token (the hub ends any stream at its token's expiry).
    let exp = |t: &str| -> i64 {
        use base64::Engine as _;
        let claims = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(t.split('.').nth(1).unwrap())
            .unwrap();
        serde_json::from_slice::<Value>(&claims).unwrap()["exp"]
            .as_i64()
            .unwrap()
    };
    let first_exp = exp(&first);
    poll(
        "connected on a fresh token after the first expired",
        || async {
            let now = chrono::Utc::now().timestamp();
            let s = rest.get(&format!("/clusters/{}", c0.name)).await?;
            let rewritten = std::fs::read_to_string(&token_path).ok()?;
            (now > first_exp + 1 && s["connected"] == json!(true) && exp(&rewritten) > first_exp)
                .then_some(())
        },
    )
    .await;

    // Each refusal: UNAUTHENTICATED with the reason, audited, counted.
    let scratch = |n: &str| dir.path().join("scratch").join(n).join("token");
    let other_issuer = issuer1
        .project(&scratch("a"), (SA_NS, SA), "fleetgate", 600)
        .await;
    unauthenticated(
        connect(hub_grpc, &c0.name, &other_issuer).await,
        "is not this cluster's issuer",
    );
    let other_sa = issuer0
        .project(&scratch("b"), ("default", "default"), "fleetgate", 600)
        .await;
    unauthenticated(
        connect(hub_grpc, &c0.name, &other_sa).await,
        "system:serviceaccount:default:default",
    );
    let other_aud = issuer0
        .project(&scratch("c"), (SA_NS, SA), "vault", 600)
        .await;
    unauthenticated(connect(hub_grpc, &c0.name, &other_aud).await, "audience");
    let for_token_cluster = issuer1
        .project(&scratch("d"), (SA_NS, SA), "fleetgate", 600)
        .await;
    unauthenticated(
        connect(hub_grpc, &c1.name, &for_token_cluster).await,
        "registered with a cluster token",
    );
    let short = issuer0
        .project(&scratch("e"), (SA_NS, SA), "fleetgate", 1)
        .await;
    let short_exp = exp(&short);
    poll(
        "the short token is past its expiry and the skew",
        || async { (chrono::Utc::now().timestamp() > short_exp + 1).then_some(()) },
    )
    .await;
    unauthenticated(connect(hub_grpc, &c0.name, &short).await, "expired");
    // The cluster token still works for its own cluster.
    connect(hub_grpc, &c1.name, &token1)
        .await
        .expect("token cluster connects");
    for reason in [
        "untrusted_issuer",
        "wrong_subject",
        "wrong_audience",
        "token_cluster",
        "expired",
    ] {
        assert_eq!(refusals(&rest, reason).await, 1, "{reason}");
    }
    let audit = rest
        .ok(Method::GET, "/audit?action=spoke.refused", None)
        .await;
    let entries = audit["items"].as_array().expect("audit items");
    let mut reasons: Vec<&str> = entries
        .iter()
        .map(|e| e["after"]["reason"].as_str().unwrap())
        .collect();
    reasons.sort();
    assert_eq!(
        reasons,
        [
            "expired",
            "token_cluster",
            "untrusted_issuer",
            "wrong_audience",
            "wrong_subject"
        ]
    );
    let text = audit.to_string();
    for token in [
        &other_issuer,
        &other_sa,
        &other_aud,
        &for_token_cluster,
        &short,
    ] {
        assert!(!text.contains(token.as_str()), "a token in the audit log");
    }

    // Key rotation at the cluster: the new key signs the rewritten token; the hub fetches
    // the keys again for its unknown kid and the spoke reconnects on it.
    issuer0.post("/sim/v1/issuer/rotate", json!({})).await;
    let rotated = issuer0
        .project(&token_path, (SA_NS, SA), "fleetgate", TTL)
        .await;
    connect(hub_grpc, &c0.name, &rotated)
        .await
        .expect("new key accepted");
    issuer0.post("/sim/v1/issuer/retire", json!({})).await;
    let rotated_exp = exp(&rotated);
    poll("the spoke reconnected on the new key", || async {
        let s = rest.get(&format!("/clusters/{}", c0.name)).await?;
        (chrono::Utc::now().timestamp() > rotated_exp + 1 && s["connected"] == json!(true))
            .then_some(())
    })
    .await;

    // Issuer down: the spoke stays connected and its reconnects (on the known key) are
    // verified with the cached keys; a key the hub never saw is refused with the reason.
    issuer0
        .post("/sim/v1/issuer/offline", json!({"offline": true}))
        .await;
    let cached = issuer0
        .project(&scratch("f"), (SA_NS, SA), "fleetgate", 600)
        .await;
    connect(hub_grpc, &c0.name, &cached)
        .await
        .expect("cached keys verify");
    let current = std::fs::read_to_string(&token_path).unwrap();
    let current_exp = exp(&current);
    poll(
        "still connected across a reconnect while the issuer is down",
        || async {
            let s = rest.get(&format!("/clusters/{}", c0.name)).await?;
            (chrono::Utc::now().timestamp() > current_exp + 1 && s["connected"] == json!(true))
                .then_some(())
        },
    )
    .await;
    issuer0.post("/sim/v1/issuer/rotate", json!({})).await;
    let unseen = issuer0
        .project(&scratch("g"), (SA_NS, SA), "fleetgate", 600)
        .await;
    unauthenticated(connect(hub_grpc, &c0.name, &unseen).await, "no signing key");
    assert!(refusals(&rest, "unknown_key").await >= 1);
}
