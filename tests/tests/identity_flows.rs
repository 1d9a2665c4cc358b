//! Dashboard sessions against a real OpenID provider (npm's
//! `oidc-provider`), signed in without a browser by
//! [`fleetgate_tests::sign_in::Agent`] (same endpoints, cookies and
//! redirects as Chromium): a session refreshes past the provider's short
//! ID-token lifetime, once for concurrent requests, and ENDS when the
//! provider refuses the refresh (revoked grant), audited, never asked again.

use std::process::Stdio;
use std::time::Duration;

use chrono::{DateTime, Utc};
use fleetgate_tests::oidc::OidcProvider;
use fleetgate_tests::sign_in::Agent;
use fleetgate_tests::{ChildGuard, TestDb, free_port, hub_serve, test_db, wait_readyz};
use serde_json::Value;

const ADMIN: &str = "fga_identity-flows-admin-secret";
/// The whole test, setup included (PostgreSQL and Node.js start slowly on a
/// loaded machine).
const TIMEOUT: Duration = Duration::from_secs(180);

/// A provider and one hub signing people in through it: alice
/// (platform-admins) admin, bob and erin (sre) operators; carol
/// (developers) and dave map to no role.
struct Env {
    idp: OidcProvider,
    base: String,
    http: reqwest::Client,
    _hub: ChildGuard,
    _db: TestDb,
    _dir: tempfile::TempDir,
}

/// `redirect` overrides the redirect URI's origin (`https://…`: the hub
/// behind a TLS proxy); `extra` is appended to the identity settings.
async fn setup(redirect: Option<&str>, extra: &str) -> Env {
    let idp = OidcProvider::start().await;
    let db = test_db().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let (http_port, grpc) = (free_port(), free_port());
    let base = format!("http://127.0.0.1:{http_port}");
    let callback = format!("{}/auth/callback", redirect.unwrap_or(&base));
    idp.add_web_client(
        "fleetgate-dashboard",
        "dashboard-secret",
        std::slice::from_ref(&callback),
    )
    .await;
    std::fs::write(dir.path().join("client-secret"), "dashboard-secret\n").unwrap();
    let config = dir.path().join("identity.yaml");
    std::fs::write(
        &config,
        format!(
            "login:
  displayName: Test IdP
  issuer: {issuer}
  clientId: fleetgate-dashboard
  clientSecretFile: {secret}
  redirectUri: {callback}
  cliClientId: fleetgate-cli
  scopes: [openid, profile, email, groups, offline_access]
roles:
  - {{group: platform-admins, role: admin}}
  - {{group: sre, role: operator}}
{extra}",
            issuer = idp.issuer,
            secret = dir.path().join("client-secret").display(),
        ),
    )
    .unwrap();
    let mut hub = ChildGuard(
        hub_serve(&db.url, http_port, grpc, ADMIN)
            .env("FLEETGATE_IDENTITY_CONFIG", &config)
            // The provider runs on loopback over plain http.
            .env("FLEETGATE_EGRESS_ALLOW_PRIVATE", "true")
            .env("FLEETGATE_EGRESS_ALLOW_HTTP", "true")
            .stderr(Stdio::inherit())
            .spawn()
            .expect("starting fleetgate-hub"),
    );
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .expect("HTTP client");
    wait_readyz(&http, &base, 200, &mut hub).await;
    Env {
        idp,
        base,
        http,
        _hub: hub,
        _db: db,
        _dir: dir,
    }
}

impl Env {
    /// (status, body) of a GET with the session cookie `secret`.
    async fn with_cookie(&self, secret: &str, path: &str) -> (u16, Value) {
        let r = self
            .http
            .get(format!("{}{path}", self.base))
            .header("cookie", format!("fleetgate_session={secret}"))
            .send()
            .await
            .expect("request");
        let status = r.status().as_u16();
        (status, r.json().await.unwrap_or(Value::Null))
    }

    /// (status, body) of a GET with the admin token.
    async fn admin(&self, path: &str) -> Value {
        let r = self
            .http
            .get(format!("{}{path}", self.base))
            .bearer_auth(ADMIN)
            .send()
            .await
            .expect("request");
        assert_eq!(r.status(), 200, "{path}");
        r.json().await.expect("JSON")
    }

    /// The caller's one session's `expiresAt`.
    async fn expires_at(&self, secret: &str) -> DateTime<Utc> {
        let (s, v) = self.with_cookie(secret, "/api/v1/auth/sessions").await;
        assert_eq!(s, 200, "{v}");
        let items = v["items"].as_array().expect("items");
        assert_eq!(items.len(), 1, "{v}");
        items[0]["expiresAt"]
            .as_str()
            .expect("expiresAt")
            .parse()
            .expect("RFC 3339")
    }

    /// `fleetgate_hub_identity_session_refreshes_total{outcome}`.
    async fn refreshes(&self, outcome: &str) -> u64 {
        let text = self
            .http
            .get(format!("{}/metrics", self.base))
            .send()
            .await
            .expect("metrics")
            .text()
            .await
            .expect("text");
        let series =
            format!("fleetgate_hub_identity_session_refreshes_total{{outcome=\"{outcome}\"}} ");
        text.lines()
            .find_map(|l| l.strip_prefix(&series))
            .map_or(0, |n| n.trim().parse::<f64>().expect("a number") as u64)
    }
}

/// Waits (real time: the provider's tokens expire on its clock) until `at`
/// has passed, plus a little for the second boundary of `exp`.
async fn until_past(at: DateTime<Utc>) {
    let wait = (at - Utc::now()).to_std().unwrap_or_default() + Duration::from_millis(300);
    assert!(wait < Duration::from_secs(30), "expiry {at} too far off");
    tokio::time::sleep(wait).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_refresh_and_end_when_the_provider_refuses() {
    tokio::time::timeout(TIMEOUT, async {
        let started = std::time::Instant::now();
        let env = setup(None, "").await;
        eprintln!("provider and hub ready in {:?}", started.elapsed());
        // ID tokens live 2 s: a session must refresh to outlive one.
        env.idp.id_token_ttl(2).await;
        let mut agent = Agent::new();
        let bob = agent.dashboard_sign_in(&env.base, "bob").await;
        let bob = bob.session.expect("a session cookie");
        let (s, me) = env.with_cookie(&bob, "/api/v1/whoami").await;
        assert_eq!((s, me["role"].as_str()), (200, Some("operator")), "{me}");
        let first = env.expires_at(&bob).await;
        assert!(
            first <= Utc::now() + chrono::Duration::seconds(3),
            "the session ends with the provider's 2 s ID token, not later: {first}"
        );
        assert_eq!(env.refreshes("ok").await, 0);

        // Past the ID token: the next request refreshes, and goes on.
        until_past(first).await;
        let (s, me) = env.with_cookie(&bob, "/api/v1/whoami").await;
        assert_eq!(s, 200, "refreshed: {me}");
        let second = env.expires_at(&bob).await;
        assert!(second > first, "the expiry moved: {first} → {second}");
        assert_eq!(env.refreshes("ok").await, 1);

        // Concurrent requests past the expiry: one refresh, all answered.
        until_past(second).await;
        let calls = (0..6).map(|_| env.with_cookie(&bob, "/api/v1/whoami"));
        for (s, v) in futures::future::join_all(calls).await {
            assert_eq!(s, 200, "{v}");
        }
        assert_eq!(env.refreshes("ok").await, 2, "one refresh for six requests");
        let third = env.expires_at(&bob).await;

        // The provider revokes bob's grant: the refresh is refused and the
        // session ends, for this request and every later one.
        assert!(env.idp.revoke("bob").await >= 1);
        until_past(third).await;
        let (s, v) = env.with_cookie(&bob, "/api/v1/whoami").await;
        assert_eq!(s, 401, "{v}");
        let msg = v["error"]["message"].as_str().unwrap_or_default();
        assert!(msg.contains("refused to refresh"), "{v}");
        let (s, v) = env.with_cookie(&bob, "/api/v1/whoami").await;
        assert_eq!(s, 401, "{v}");
        assert!(
            v["error"]["message"] == "session ended; sign in again",
            "{v}"
        );
        assert_eq!(env.refreshes("refused").await, 1, "asked the provider once");
        let live = env.admin("/api/v1/sessions?subject=bob").await;
        assert_eq!(live["items"], serde_json::json!([]), "{live}");

        // Audited, naming bob: the session's end and the refused refresh.
        let ends = env
            .admin("/api/v1/audit?action=session.end&person=bob")
            .await;
        let end = &ends["items"][0];
        assert_eq!(end["actorSubject"], "bob", "{ends}");
        assert_eq!(end["after"]["endReason"], "refresh_refused", "{end}");
        assert_eq!(end["after"]["endedBy"], "identity-provider", "{end}");
        let refused = env
            .admin("/api/v1/audit?action=sign_in.refused&person=bob")
            .await;
        let r = &refused["items"][0];
        assert_eq!(r["after"]["flow"], "refresh", "{refused}");
        assert_eq!(r["after"]["reason"], "refresh_refused", "{refused}");

        // Signing in again works.
        agent.clear();
        let again = agent.dashboard_sign_in(&env.base, "bob").await;
        let (s, _) = env
            .with_cookie(&again.session.expect("a session"), "/api/v1/whoami")
            .await;
        assert_eq!(s, 200);
    })
    .await
    .expect("refresh test timed out");
}
