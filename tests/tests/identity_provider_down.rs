//! Sign-in while the identity provider is down, with a real provider process (npm's
//! `oidc-provider`) stopped after the hub reached it once: the hub checks the provider
//! before it sends a person there, so `POST /api/v1/auth/login` answers 502 "sign-in is
//! unavailable: the identity provider … cannot be reached" (what a hub that never reached it
//! answers, and what the dashboard's sign-in page shows), not a URL to a dead provider.

use std::process::Stdio;
use std::time::Duration;

use fleetgate_tests::oidc::OidcProvider;
use fleetgate_tests::{ChildGuard, free_port, hub_serve, test_db, wait_readyz};
use serde_json::{Value, json};

const ADMIN: &str = "fga_identity-provider-down-admin-0123456789";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sign_in_after_the_provider_went_down_is_refused_with_the_reason() {
    fleetgate_tests::binaries(&["fleetgate-hub"]);
    let mut idp = OidcProvider::start().await;
    let db = test_db().await;
    let dir = tempfile::tempdir().unwrap();
    let (http_port, grpc) = (free_port(), free_port());
    let base = format!("http://127.0.0.1:{http_port}");
    // Checked again at every sign-in here (the default trusts a check for 10 s).
    let config = idp
        .hub_identity_config(
            dir.path(),
            &format!("{base}/auth/callback"),
            &[],
            "  providerCheck: 1ms\n",
        )
        .await;
    let mut hub = ChildGuard(
        hub_serve(&db.url, http_port, grpc, ADMIN)
            .env("FLEETGATE_IDENTITY_CONFIG", &config)
            .env("FLEETGATE_EGRESS_ALLOW_PRIVATE", "true")
            .env("FLEETGATE_EGRESS_ALLOW_HTTP", "true")
            .stderr(Stdio::inherit())
            .spawn()
            .expect("starting fleetgate-hub"),
    );
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap();
    wait_readyz(&http, &base, 200, &mut hub).await;
    let login = || async {
        let r = http
            .post(format!("{base}/api/v1/auth/login"))
            .json(&json!({"returnTo": "/"}))
            .send()
            .await
            .expect("POST /api/v1/auth/login");
        let status = r.status().as_u16();
        (status, r.json::<Value>().await.unwrap_or(Value::Null))
    };

    // The provider answers: the hub fetched its discovery document and sends people there.
    let (status, body) = login().await;
    assert_eq!(status, 200, "{body}");
    assert!(
        body["url"].as_str().unwrap().starts_with(&idp.issuer),
        "{body}"
    );

    // Stopped: the next sign-in is refused with the reason instead of a dead URL.
    let issuer = idp.issuer.clone();
    idp.stop();
    let (status, body) = login().await;
    assert_eq!(status, 502, "{body}");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with(&format!(
            "sign-in is unavailable: the identity provider {issuer} cannot be reached"
        )),
        "{body}"
    );
}
