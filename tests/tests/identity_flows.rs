//! Dashboard sessions against a real OpenID provider (npm's
//! `oidc-provider`), signed in without a browser by
//! [`fleetgate_tests::sign_in::Agent`] (same endpoints, cookies and
//! redirects as Chromium): a session refreshes past the provider's short
//! ID-token lifetime, once for concurrent requests, and ENDS when the
//! provider refuses the refresh (revoked grant), audited, never asked again;
//! sign-ins refused for a tampered nonce, a missing ID token or a person
//! without a role (a clear message, an audit entry, no session); the cookie
//! flags, with and without TLS; `fleetgate login` by loopback redirect with
//! PKCE where the provider has no device flow, and its refresh; and, in
//! Chromium, the dashboard's audit log filtered by person and by team.

mod dashboard_support;

use std::os::unix::fs::PermissionsExt as _;
use std::process::{Command, Stdio};
use std::time::Duration;

use chrono::{DateTime, Utc};
use fleetgate_tests::oidc::OidcProvider;
use fleetgate_tests::sign_in::{Agent, cli_login_url};
use fleetgate_tests::{
    ChildGuard, TestDb, bin_path, free_port, hub_serve, poll, test_db, wait_readyz,
};
use serde_json::Value;

const ADMIN: &str = dashboard_support::ADMIN_TOKEN;
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
    dir: tempfile::TempDir,
}

/// `redirect` overrides the redirect URI's origin (`https://…`: the hub
/// behind a TLS proxy).
async fn setup(redirect: Option<&str>) -> Env {
    let idp = OidcProvider::start().await;
    let db = test_db().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let (http_port, grpc) = (free_port(), free_port());
    let base = format!("http://127.0.0.1:{http_port}");
    let callback = format!("{}/auth/callback", redirect.unwrap_or(&base));
    let config = idp
        .hub_identity_config(dir.path(), &callback, &[], "")
        .await;
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
        dir,
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

/// Builds the binaries first when they are stale (outside the test's
/// timeout: a nested `cargo build` on a loaded machine takes minutes).
fn binaries() {
    fleetgate_tests::binaries(&["fleetgate-hub", "fleetgate"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_refresh_and_end_when_the_provider_refuses() {
    binaries();
    tokio::time::timeout(TIMEOUT, async {
        let started = std::time::Instant::now();
        let env = setup(None).await;
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

/// A slow provider holds no session row and no connection: while a refresh waits 3 s for
/// the token endpoint, an admin ends the session at once (before, the end waited on the
/// refresh's row lock until the provider answered), other reads go on, and the refresh
/// then answers "session ended": the end wins over the late answer. The times are
/// printed, not asserted; what is asserted is the order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_provider_holds_no_lock_and_an_end_during_the_refresh_wins() {
    binaries();
    tokio::time::timeout(TIMEOUT, async {
        let env = setup(None).await;
        env.idp.id_token_ttl(2).await;
        let mut agent = Agent::new();
        let bob = agent.dashboard_sign_in(&env.base, "bob").await;
        let bob = bob.session.expect("a session cookie");
        until_past(env.expires_at(&bob).await).await;

        env.idp.delay_tokens(3000).await;
        let started = std::time::Instant::now();
        let refresh = {
            let (http, base, bob) = (env.http.clone(), env.base.clone(), bob.clone());
            tokio::spawn(async move {
                let r = http
                    .get(format!("{base}/api/v1/whoami"))
                    .header("cookie", format!("fleetgate_session={bob}"))
                    .send()
                    .await
                    .expect("request");
                let status = r.status().as_u16();
                let body: Value = r.json().await.unwrap_or(Value::Null);
                (status, body, std::time::Instant::now())
            })
        };
        // The refresh is at the provider.
        poll("the refresh at the provider", || async {
            (env.idp.delayed().await == 1).then_some(())
        })
        .await;
        let asked = started.elapsed();
        // Other database work goes on meanwhile: a read of the sessions table, and the
        // admin ending bob's session (an update of the row the refresh is about).
        let t = std::time::Instant::now();
        env.admin("/api/v1/sessions?subject=bob").await;
        let read = t.elapsed();
        let t = std::time::Instant::now();
        let r = env
            .http
            .post(format!("{}/api/v1/sessions/end", env.base))
            .bearer_auth(ADMIN)
            .json(&serde_json::json!({"subject": "bob", "reason": "leaving"}))
            .send()
            .await
            .expect("end");
        assert!(r.status().is_success(), "{}", r.status());
        let end = t.elapsed();
        let ended_at = std::time::Instant::now();
        assert_eq!(
            env.idp.delayed().await,
            1,
            "the session ended while the provider still held the refresh"
        );
        let (status, body, answered_at) = refresh.await.expect("refresh task");
        assert!(answered_at > ended_at);
        assert_eq!(status, 401, "{body}");
        assert_eq!(
            body["error"]["message"], "session ended; sign in again",
            "{body}"
        );
        assert_eq!(
            env.refreshes("ok").await,
            0,
            "the late answer was not written"
        );
        assert_eq!(env.refreshes("superseded").await, 1);
        let (s, v) = env.with_cookie(&bob, "/api/v1/whoami").await;
        assert_eq!(s, 401, "{v}");
        println!(
            "slow provider (3 s token endpoint): the refresh reached it after {asked:?}; during \
             it a sessions read took {read:?} and ending the session {end:?}; the refresh \
             answered after {:?} (load average {})",
            answered_at - started,
            std::fs::read_to_string("/proc/loadavg")
                .unwrap_or_default()
                .split(' ')
                .next()
                .unwrap_or("?")
        );
        env.idp.delay_tokens(0).await;
    })
    .await
    .expect("slow provider test timed out");
}

/// The `fleetgate_session` cookie's `Set-Cookie` of a callback.
fn session_set_cookie(set: &[String]) -> &str {
    set.iter()
        .find(|c| c.starts_with("fleetgate_session=") && !c.starts_with("fleetgate_session=;"))
        .unwrap_or_else(|| panic!("no session cookie in {set:?}"))
}

/// A cookie's attributes, lower-cased, without its value.
fn attributes(cookie: &str) -> Vec<String> {
    cookie
        .split(';')
        .skip(1)
        .map(|a| a.trim().to_ascii_lowercase())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_sign_ins_say_why_are_audited_and_make_no_session() {
    binaries();
    tokio::time::timeout(TIMEOUT, async {
        let env = setup(None).await;
        let mut agent = Agent::new();
        // A good sign-in: the session cookie's flags over plain http.
        let bob = agent.dashboard_sign_in(&env.base, "bob").await;
        assert!(bob.location.ends_with("/#/gates"), "{bob:?}");
        let flags = attributes(session_set_cookie(&bob.set_cookies));
        for want in ["path=/", "httponly", "samesite=lax"] {
            assert!(flags.iter().any(|f| f == want), "{want} in {flags:?}");
        }
        assert!(!flags.iter().any(|f| f == "secure"), "{flags:?}");
        assert!(
            !flags
                .iter()
                .any(|f| f.starts_with("max-age") || f.starts_with("expires")),
            "a browser-session cookie (the hub decides expiry): {flags:?}"
        );

        // Each refusal: the way back says why, no session cookie, an entry.
        let cases = [
            (Some("nonce"), "bob", "nonce", "nonce"),
            (Some("no_id_token"), "bob", "no_id_token", "no ID token"),
            (None, "dave", "no_role", "no access policy grants"),
        ];
        for (tamper, user, reason, words) in cases {
            agent.clear();
            if let Some(mode) = tamper {
                env.idp.tamper(mode).await;
            }
            let cb = agent.dashboard_sign_in(&env.base, user).await;
            assert_eq!(cb.session, None, "{reason}: {cb:?}");
            let to = reqwest::Url::parse(&cb.location).expect("a URL");
            let shown = to
                .query_pairs()
                .find(|(k, _)| k == "signin_error")
                .map(|(_, v)| v.to_string())
                .unwrap_or_else(|| panic!("{reason}: no signin_error in {to}"));
            assert!(shown.contains(words), "{reason}: {shown}");
            assert!(
                cb.set_cookies
                    .iter()
                    .any(|c| c.starts_with("fleetgate_login=;")),
                "{reason}: the sign-in's cookie is cleared: {cb:?}"
            );
        }
        let refused = env
            .admin("/api/v1/audit?action=sign_in.refused&limit=50")
            .await;
        let reasons: Vec<(&str, &str)> = refused["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e["after"]["reason"].as_str().unwrap_or_default(),
                    e["after"]["flow"].as_str().unwrap_or_default(),
                )
            })
            .collect();
        assert_eq!(
            reasons,
            [
                ("no_role", "dashboard"),
                ("no_id_token", "dashboard"),
                ("nonce", "dashboard")
            ],
            "{refused}"
        );
        // The provider's signature vouches for dave: the entry names him.
        assert_eq!(refused["items"][0]["actorSubject"], "dave", "{refused}");
        // Only bob's good sign-in made a session.
        let live = env.admin("/api/v1/sessions").await;
        let subjects: Vec<&str> = live["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["identity"]["subject"].as_str().unwrap_or_default())
            .collect();
        assert_eq!(subjects, ["bob"], "{live}");
    })
    .await
    .expect("refusals test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn behind_tls_the_session_cookie_is_secure() {
    binaries();
    tokio::time::timeout(TIMEOUT, async {
        // The redirect URI is the TLS proxy's https origin; the agent takes
        // the provider's redirect to the hub itself, as the proxy would.
        let env = setup(Some("https://fleetgate.example.test")).await;
        let mut agent = Agent::new();
        let alice = agent.dashboard_sign_in(&env.base, "alice").await;
        let flags = attributes(session_set_cookie(&alice.set_cookies));
        for want in ["path=/", "httponly", "samesite=lax", "secure"] {
            assert!(flags.iter().any(|f| f == want), "{want} in {flags:?}");
        }
        let (s, me) = env
            .with_cookie(&alice.session.expect("session"), "/api/v1/whoami")
            .await;
        assert_eq!((s, me["role"].as_str()), (200, Some("admin")), "{me}");
    })
    .await
    .expect("TLS cookie test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_login_by_loopback_redirect_with_pkce_and_refresh() {
    binaries();
    tokio::time::timeout(TIMEOUT, async {
        let env = setup(None).await;
        // No device endpoint at the provider: `fleetgate login` redirects.
        env.idp.device_flow(false).await;
        env.idp.id_token_ttl(2).await;
        let home = env.dir.path().join("cli-home");
        let fleetgate = |args: &[&str]| {
            let mut c = Command::new(bin_path("fleetgate"));
            c.args(["--hub", &env.base])
                .args(args)
                .env("XDG_CONFIG_HOME", &home)
                .env_remove("FLEETGATE_TOKEN")
                .stdin(Stdio::null());
            c
        };
        let mut login = fleetgate(&["login"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("fleetgate login");
        let stderr = login.stderr.take().unwrap();
        let mut login = ChildGuard(login);
        let (url, rest) = cli_login_url(stderr).await;
        let url = reqwest::Url::parse(&url).expect("an authorization URL");
        let param = |k: &str| {
            url.query_pairs()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.to_string())
        };
        assert_eq!(
            param("code_challenge_method").as_deref(),
            Some("S256"),
            "{url}"
        );
        assert!(
            param("code_challenge").is_some_and(|c| c.len() >= 43),
            "{url}"
        );
        assert!(param("state").is_some_and(|c| c.len() >= 32), "{url}");
        let redirect = param("redirect_uri").expect("redirect_uri");
        assert!(redirect.starts_with("http://127.0.0.1:"), "{redirect}");
        // The person signs in at the provider; it redirects to the CLI's
        // loopback listener, which completes the sign-in.
        let mut agent = Agent::new();
        let back = agent
            .follow(&url, "bob", |u| u.as_str().starts_with(&redirect))
            .await;
        let (s, _, _, body) = agent.request(reqwest::Method::GET, &back, None).await;
        assert_eq!(s, 200, "{body}");
        let status = poll("fleetgate login exits", || {
            let st = login.0.try_wait().expect("wait");
            async move { st }
        })
        .await;
        assert!(
            status.success(),
            "fleetgate login failed: {}",
            rest.join().unwrap_or_default()
        );
        let creds = home.join("fleetgate/credentials.json");
        let mode = std::fs::metadata(&creds).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "credentials readable by others");
        let stored = |key: &str| -> Value {
            let all: Value =
                serde_json::from_str(&std::fs::read_to_string(&creds).unwrap()).unwrap();
            all[&env.base][key].clone()
        };
        assert!(
            stored("refreshToken").is_string(),
            "offline_access gave a refresh token"
        );
        let whoami = || {
            let out = fleetgate(&["whoami"]).output().unwrap();
            let text = String::from_utf8_lossy(&out.stdout).to_string();
            assert!(
                out.status.success(),
                "{text} {}",
                String::from_utf8_lossy(&out.stderr)
            );
            text
        };
        let text = whoami();
        assert!(text.contains("bob"), "{text}");
        assert!(
            text.contains(&format!("issuer: {}", env.idp.issuer)),
            "{text}"
        );

        // Past the 2 s ID token the CLI refreshes before calling the hub.
        let first: DateTime<Utc> = stored("expiresAt").as_str().unwrap().parse().unwrap();
        until_past(first).await;
        let text = whoami();
        assert!(text.contains("bob"), "{text}");
        let second: DateTime<Utc> = stored("expiresAt").as_str().unwrap().parse().unwrap();
        assert!(second > first, "refreshed: {first} → {second}");
    })
    .await
    .expect("CLI loopback test timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_audit_log_filters_by_person_and_team() {
    use dashboard_support::{Browser, SERIAL, TEST_TIMEOUT, browser_binaries};
    let Some((chromium, driver)) = browser_binaries() else {
        eprintln!("SKIPPED: chromium and chromedriver are not installed");
        return;
    };
    binaries();
    let _serial = SERIAL.lock().await;
    tokio::time::timeout(TEST_TIMEOUT, async {
        let env = setup(None).await;
        // bob (group sre) and alice (platform-admins) sign in: audited.
        let mut agent = Agent::new();
        agent.dashboard_sign_in(&env.base, "bob").await;
        agent.clear();
        agent.dashboard_sign_in(&env.base, "alice").await;
        let browser = Browser::start(&chromium, &driver).await;
        browser.sign_in(&env.base, ADMIN).await;
        browser.route("#/audit").await;
        browser.wait_page("audit").await;
        // Every row shown is `who`'s, and there is at least one.
        let only = |who: &'static str| {
            format!(
                "(() => {{ const rows = [...document.querySelectorAll('#audit-table tr[data-audit]')]; \
                 return rows.length > 0 && rows.every((r) => r.dataset.subject === '{who}'); }})()"
            )
        };
        browser.fill("#audit-person", "bob@example.com").await;
        browser.click("#audit-filters button[type=submit]").await;
        browser.wait_js(&only("bob"), "only bob's entries").await;
        browser.fill("#audit-person", "").await;
        browser.fill("#audit-team", "platform-admins").await;
        browser.click("#audit-filters button[type=submit]").await;
        browser.wait_js(&only("alice"), "only the platform-admins' entries").await;
        browser.close().await;
    })
    .await
    .expect("audit filter test timed out");
}
