//! Spokes signing in with a SPIFFE JWT-SVID, end to end with real processes: PostgreSQL,
//! `fleetgate-hub`, `fleetgate-sim` (the clusters the spokes govern), `fleetgate-spoke`
//! and the `fleetgate` CLI, against a SPIFFE trust domain served like SPIRE's OIDC
//! Discovery Provider ([`fleetgate_tests::spire`]). One cluster is registered with
//! `--spiffe-id` against the trust domain's discovery, another with its pinned bundle
//! (`--jwks-file`); each spoke reads its JWT-SVID from a file a SPIFFE helper rewrites
//! (atomically, and in place as spiffe-helper does). Rotation mid-stream and a key
//! rotation at the trust domain (ES256 → RS256) keep the spoke connected; every refusal
//! (another trust domain, another SPIFFE ID, another audience, expired, a SPIFFE
//! registration presented a ServiceAccount token and the other way round) is
//! UNAUTHENTICATED, audited as `spoke.refused` without the token and counted. A change of
//! the pinned keys (`cluster set-jwks`) ends the cluster's open stream at once and its
//! reconnect is verified against the new keys.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use fleetgate_tests::spire::{KeyType, TrustDomain, Write, jwt_exp, jwt_header};
use fleetgate_tests::spoke_sign_in::{connect, refusals, unauthenticated};
use fleetgate_tests::{
    ChildGuard, Rest, bin_path, binaries, free_port, hub_serve, output, poll, spoke_connect,
    start_sim_clusters, test_db,
};
use reqwest::Method;
use serde_json::{Value, json};

const ADMIN: &str = "fga_spoke-spiffe-admin-token-0123456789";
const SA_NS: &str = "fleetgate-system";
const SA: &str = "fleetgate-spoke";
const SPOKE_PATH: &str = "/ns/fleetgate-system/sa/fleetgate-spoke";
/// Lifetime of the discovery cluster's JWT-SVIDs: the helper rewrites them after half
/// the time left plus a second, the spoke reconnects at 90%.
const TTL: i64 = 12;

/// `spoke.refused` audit entries as (cluster, reason), and the whole answer's text.
async fn refused_audit(rest: &Rest) -> (BTreeSet<(String, String)>, String) {
    let audit = rest
        .ok(Method::GET, "/audit?action=spoke.refused&limit=200", None)
        .await;
    let pairs = audit["items"]
        .as_array()
        .expect("audit items")
        .iter()
        .map(|e| {
            (
                e["targetName"].as_str().unwrap().to_string(),
                e["after"]["reason"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    (pairs, audit.to_string())
}

async fn connected(rest: &Rest, cluster: &str) -> Option<bool> {
    let c = rest.get(&format!("/clusters/{cluster}")).await?;
    c["connected"].as_bool()
}

/// `fleetgate ARGS` against the hub as the admin; its stdout.
async fn cli(hub_http: u16, args: &[&str]) -> String {
    let mut cmd = Command::new(bin_path("fleetgate"));
    cmd.args(args)
        .env("FLEETGATE_HUB", format!("http://127.0.0.1:{hub_http}"))
        .env("FLEETGATE_TOKEN", ADMIN)
        .env_remove("FLEETGATE_CONFIG");
    let out = output(cmd, "fleetgate").await;
    assert!(
        out.status.success(),
        "fleetgate {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn write_json(path: &Path, v: &Value) -> String {
    std::fs::write(path, serde_json::to_vec_pretty(v).unwrap()).unwrap();
    path.to_string_lossy().into_owned()
}

/// The simulated cluster's kubelet (or SPIFFE helper) writing a token of the cluster's
/// own service-account issuer to `path`; the token.
async fn sim_token(http: &reqwest::Client, sim_url: &str, path: &Path, subject: Value) -> String {
    let mut body = json!({"path": path, "audience": "fleetgate", "expirationSeconds": 600});
    body.as_object_mut()
        .unwrap()
        .extend(subject.as_object().unwrap().clone());
    let r = http
        .post(format!("{sim_url}/sim/v1/projected-token"))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "projected-token: {}", r.status());
    let v: Value = r.json().await.unwrap();
    v["token"].as_str().unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spokes_sign_in_with_a_spiffe_jwt_svid() {
    binaries(&[
        "fleetgate-hub",
        "fleetgate-sim",
        "fleetgate-spoke",
        "fleetgate",
    ]);
    let db = test_db().await;
    let dir = tempfile::tempdir().unwrap();
    let (_sim, clusters) = start_sim_clusters(dir.path(), 2).await;
    let (c0, c1) = (&clusters[0], &clusters[1]);
    for c in [c0, c1] {
        let client = fleetgate_tests::kube_client_from_file(&c.kubeconfig).await;
        fleetgate_tests::create_namespaces(&client, &[SA_NS]).await;
        let api: kube::Api<k8s_openapi::api::core::v1::ServiceAccount> =
            kube::Api::namespaced(client, SA_NS);
        let sa = serde_json::from_value(json!({"metadata": {"name": SA}})).unwrap();
        api.create(&Default::default(), &sa).await.unwrap();
    }
    let td = Arc::new(TrustDomain::start("example.org", KeyType::Ec256).await);
    let other = TrustDomain::start("other.example", KeyType::Ec256).await;
    let spoke_id = td.id(SPOKE_PATH);
    let http = reqwest::Client::new();

    // The hub reaches the discovery provider on loopback over http; clock skew 1 s so an
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

    // Registered with the CLI: c0 against the trust domain's discovery, c1 with its
    // pinned bundle (the SPIFFE bundle format, X.509 authority included).
    cli(
        hub_http,
        &[
            "cluster",
            "register",
            &c0.name,
            "--issuer",
            td.issuer(),
            "--spiffe-id",
            &spoke_id,
        ],
    )
    .await;
    let bundle = write_json(&dir.path().join("bundle.json"), &td.bundle());
    cli(
        hub_http,
        &[
            "cluster",
            "register",
            &c1.name,
            "--issuer",
            td.issuer(),
            "--spiffe-id",
            &spoke_id,
            "--jwks-file",
            &bundle,
        ],
    )
    .await;
    // A cluster bound to a ServiceAccount of the simulated cluster's own issuer.
    rest.ok(
        Method::POST,
        "/clusters",
        Some(json!({"name": "sa-bound", "issuer": c0.url})),
    )
    .await;
    for (name, pinned) in [(&c0.name, false), (&c1.name, true)] {
        let c = rest.get(&format!("/clusters/{name}")).await.unwrap();
        assert_eq!(
            c["identity"],
            json!({"issuer": td.issuer(), "subject": spoke_id, "jwksPinned": pinned}),
            "{name}"
        );
    }

    // Each spoke reads the JWT-SVID its helper keeps fresh: c0's helper renames a new
    // file into place, c1's writes in place (spiffe-helper's os.WriteFile).
    let helper0 = td.helper(
        &dir.path().join("c0").join("jwt_svid.token"),
        &spoke_id,
        "fleetgate",
        TTL,
        Write::AtomicRename,
    );
    let helper1 = td.helper(
        &dir.path().join("c1").join("jwt_svid.token"),
        &spoke_id,
        "fleetgate",
        300,
        Write::InPlace,
    );
    let mut spokes = Vec::new();
    for (c, helper) in [(c0, &helper0), (c1, &helper1)] {
        spokes.push(ChildGuard(
            spoke_connect(&c.name, hub_grpc, &c.kubeconfig, "", free_port())
                .env("FLEETGATE_SPOKE_TOKEN_FILE", &helper.path)
                .args(["--reconnect-max", "1s"])
                .stderr(std::process::Stdio::null())
                .spawn()
                .expect("starting fleetgate-spoke"),
        ));
    }
    for c in [c0, c1] {
        poll("the SPIFFE spokes connected", || async {
            connected(&rest, &c.name).await?.then_some(())
        })
        .await;
    }

    // Rotation mid-stream: after the first JWT-SVID's expiry the spoke is connected on a
    // later one (the hub ends any stream at its token's expiry).
    let first_exp = jwt_exp(&helper0.current());
    poll("c0 connected on a fresh JWT-SVID", || async {
        let now = chrono::Utc::now().timestamp();
        (now > first_exp + 1
            && connected(&rest, &c0.name).await?
            && jwt_exp(&helper0.current()) > first_exp)
            .then_some(())
    })
    .await;

    // Each refusal: UNAUTHENTICATED with the reason, audited without the token, counted.
    let scratch = |n: &str| dir.path().join("scratch").join(n).join("token");
    let from_other_domain = other.mint(&other.id(SPOKE_PATH), "fleetgate", 600);
    unauthenticated(
        connect(hub_grpc, &c0.name, &from_other_domain).await,
        "is not this cluster's issuer",
    );
    let other_path = td.mint(&td.id("/ns/default/sa/default"), "fleetgate", 600);
    unauthenticated(
        connect(hub_grpc, &c0.name, &other_path).await,
        "spiffe://example.org/ns/default/sa/default",
    );
    let other_aud = td.mint(&spoke_id, "vault", 600);
    unauthenticated(connect(hub_grpc, &c0.name, &other_aud).await, "audience");
    let short = td.mint(&spoke_id, "fleetgate", 1);
    let short_exp = jwt_exp(&short);
    poll(
        "the short JWT-SVID past its expiry and the skew",
        || async { (chrono::Utc::now().timestamp() > short_exp + 1).then_some(()) },
    )
    .await;
    unauthenticated(connect(hub_grpc, &c0.name, &short).await, "expired");
    // A SPIFFE registration presented a ServiceAccount token (of the cluster's own issuer,
    // and one the trust domain signed with a ServiceAccount subject).
    let sa_token = sim_token(
        &http,
        &c0.url,
        &scratch("a"),
        json!({"namespace": SA_NS, "serviceAccount": SA}),
    )
    .await;
    unauthenticated(
        connect(hub_grpc, &c1.name, &sa_token).await,
        "is not this cluster's issuer",
    );
    let sa_subject = format!("system:serviceaccount:{SA_NS}:{SA}");
    let sa_shaped = td.mint(&sa_subject, "fleetgate", 600);
    unauthenticated(connect(hub_grpc, &c1.name, &sa_shaped).await, &sa_subject);
    // A ServiceAccount registration presented a JWT-SVID (the trust domain's, and one its
    // own issuer signed for a SPIFFE ID).
    let svid = td.mint(&spoke_id, "fleetgate", 600);
    unauthenticated(
        connect(hub_grpc, "sa-bound", &svid).await,
        "is not this cluster's issuer",
    );
    let sim_svid = sim_token(&http, &c0.url, &scratch("b"), json!({"spiffeId": spoke_id})).await;
    unauthenticated(connect(hub_grpc, "sa-bound", &sim_svid).await, &spoke_id);
    // The right token is still accepted next to them.
    connect(hub_grpc, "sa-bound", &sa_token)
        .await
        .expect("the ServiceAccount token signs in to its own registration");
    connect(hub_grpc, &c1.name, &svid)
        .await
        .expect("the JWT-SVID signs in with the pinned bundle");

    for (reason, n) in [
        ("untrusted_issuer", 3),
        ("wrong_subject", 3),
        ("wrong_audience", 1),
        ("expired", 1),
    ] {
        assert_eq!(refusals(&rest, reason).await, n, "{reason}");
    }
    let (pairs, text) = refused_audit(&rest).await;
    for (cluster, reason) in [
        (c0.name.as_str(), "untrusted_issuer"),
        (&c0.name, "wrong_subject"),
        (&c0.name, "wrong_audience"),
        (&c0.name, "expired"),
        (&c1.name, "untrusted_issuer"),
        (&c1.name, "wrong_subject"),
        ("sa-bound", "untrusted_issuer"),
        ("sa-bound", "wrong_subject"),
    ] {
        assert!(
            pairs.contains(&(cluster.to_string(), reason.to_string())),
            "{cluster} {reason} not in {pairs:?}"
        );
    }
    assert_eq!(pairs.len(), 8, "{pairs:?}");
    for token in [
        &from_other_domain,
        &other_path,
        &other_aud,
        &short,
        &sa_token,
        &sa_shaped,
        &svid,
        &sim_svid,
    ] {
        let signature = token.rsplit('.').next().unwrap();
        assert!(!text.contains(signature), "a token in the audit log");
    }
    assert_eq!(connected(&rest, &c1.name).await, Some(true));

    // A change of the registration ends the cluster's open stream at once: pinned keys
    // without the spoke's key end c1's stream long before its JWT-SVID (300 s) expires,
    // and the reconnect is refused with the reason.
    let unknown_before = refusals(&rest, "unknown_key").await;
    let wrong_keys = write_json(&dir.path().join("other-bundle.json"), &other.bundle());
    cli(
        hub_http,
        &["cluster", "set-jwks", &c1.name, "--jwks-file", &wrong_keys],
    )
    .await;
    tokio::time::timeout(Duration::from_secs(20), async {
        while connected(&rest, &c1.name).await != Some(false) {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .expect("c1's stream ended within 20 s of set-jwks (its JWT-SVID lives 300 s)");
    poll("c1's reconnect refused for its unknown key", || async {
        (refusals(&rest, "unknown_key").await > unknown_before).then_some(())
    })
    .await;
    let (pairs, _) = refused_audit(&rest).await;
    assert!(
        pairs.contains(&(c1.name.clone(), "unknown_key".into())),
        "{pairs:?}"
    );
    assert_eq!(
        connected(&rest, &c0.name).await,
        Some(true),
        "another cluster's stream stays"
    );
    // The right bundle again: the spoke's next reconnect is verified and accepted.
    let bundle = write_json(&dir.path().join("bundle-now.json"), &td.bundle());
    cli(
        hub_http,
        &["cluster", "set-jwks", &c1.name, "--jwks-file", &bundle],
    )
    .await;
    poll("c1 reconnected with the restored bundle", || async {
        connected(&rest, &c1.name).await?.then_some(())
    })
    .await;
    // The trust domain rotates its JWT authority to an RSA key: the helper's next
    // JWT-SVID is RS256 with a kid the hub never saw; the hub refetches the keys through
    // discovery and c0's spoke stays connected past every ES256 token's expiry. The
    // pinned cluster takes the new bundle (both keys) with set-jwks: its stream ends, and
    // its reconnect (on its ES256 JWT-SVID) is verified against the new bundle.
    td.rotate(KeyType::Rsa2048);
    let rotated_at = chrono::Utc::now().timestamp();
    poll("an RS256 JWT-SVID in c0's file", || async {
        (jwt_header(&helper0.current())["alg"] == "RS256").then_some(())
    })
    .await;
    poll("c0 connected on the RS256 JWT-SVID", || async {
        let now = chrono::Utc::now().timestamp();
        (now > rotated_at + TTL + 1 && connected(&rest, &c0.name).await?).then_some(())
    })
    .await;

    let both = write_json(&dir.path().join("bundle-rotated.json"), &td.bundle());
    cli(
        hub_http,
        &["cluster", "set-jwks", &c1.name, "--jwks-file", &both],
    )
    .await;
    poll("c1 reconnected with the rotated bundle", || async {
        connected(&rest, &c1.name).await?.then_some(())
    })
    .await;
    drop(spokes);
}
