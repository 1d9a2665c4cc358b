//! People signed in to the dashboard through a real OpenID provider (npm's
//! `oidc-provider`): the Sessions page (a person ends their other session,
//! an admin ends a person's sessions; an ended session's cookie is refused),
//! the same over REST, gRPC and the CLI.

mod dashboard_support;

use std::process::Command;

use dashboard_support::sso::{SESSION_COOKIE, forget_session, session_cookie};
use dashboard_support::{ADMIN_TOKEN, Browser, Hub, SERIAL, TEST_TIMEOUT, browser_binaries};
use fleetgate_proto::v1 as pb;
use fleetgate_tests::oidc::OidcProvider;
use fleetgate_tests::{bin_path, free_port};
use serde_json::{Value, json};

struct Env {
    idp: OidcProvider,
    hub: Hub,
    _dir: tempfile::TempDir,
}

/// The provider, and one hub that signs people in through it: alice
/// (platform-admins) is an admin, bob (sre) an operator, carol (developers)
/// a viewer.
async fn setup(test: &str) -> Env {
    let idp = OidcProvider::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let http = free_port();
    let callback = format!("http://127.0.0.1:{http}/auth/callback");
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
  scopes: [openid, profile, email, groups, offline_access]
roles:
  - {{group: platform-admins, role: admin}}
  - {{group: sre, role: operator}}
  - {{group: developers, role: viewer}}
",
            issuer = idp.issuer,
            secret = dir.path().join("client-secret").display(),
        ),
    )
    .unwrap();
    let config = config.display().to_string();
    let env = [
        ("FLEETGATE_IDENTITY_CONFIG", config.as_str()),
        // The provider runs on loopback over plain http.
        ("FLEETGATE_EGRESS_ALLOW_PRIVATE", "true"),
        ("FLEETGATE_EGRESS_ALLOW_HTTP", "true"),
    ];
    let hub = Hub::start_on(test, http, &env).await;
    Env {
        idp,
        hub,
        _dir: dir,
    }
}

impl Env {
    /// (status, body) of a REST call with a session cookie (and its CSRF
    /// token on writes, when `csrf`).
    async fn with_cookie(
        &self,
        secret: &str,
        method: &str,
        path: &str,
        body: Option<Value>,
        csrf: bool,
    ) -> (u16, Value) {
        let cookie = format!("{SESSION_COOKIE}={secret}");
        let mut req = self
            .hub
            .http
            .request(method.parse().unwrap(), format!("{}{path}", self.hub.base))
            .header("cookie", &cookie);
        if csrf {
            let me = self.with_cookie_get(&cookie).await;
            req = req.header("x-csrf-token", me["csrfToken"].as_str().unwrap_or_default());
        }
        if let Some(b) = body {
            req = req.json(&b);
        }
        let r = req.send().await.expect("request");
        let status = r.status().as_u16();
        (status, r.json().await.unwrap_or(Value::Null))
    }

    async fn with_cookie_get(&self, cookie: &str) -> Value {
        let r = self
            .hub
            .http
            .get(format!("{}/api/v1/whoami", self.hub.base))
            .header("cookie", cookie)
            .send()
            .await
            .expect("whoami");
        r.json().await.unwrap_or(Value::Null)
    }

    /// (status, body) of a REST call with a bearer token.
    async fn bearer(
        &self,
        token: &str,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let mut req = self
            .hub
            .http
            .request(method.parse().unwrap(), format!("{}{path}", self.hub.base))
            .bearer_auth(token);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let r = req.send().await.expect("request");
        let status = r.status().as_u16();
        (status, r.json().await.unwrap_or(Value::Null))
    }

    /// An ID-token-shaped JWT for a person, signed by the provider (what
    /// `fleetgate login` stores).
    async fn person_jwt(&self, sub: &str, groups: &[&str]) -> String {
        let claims = json!({"sub": sub, "aud": "fleetgate-dashboard", "name": format!("{sub} person"),
            "email": format!("{sub}@example.com"), "groups": groups});
        self.idp.mint(claims, None).await
    }
}

/// Waits until the sessions table under `css` shows `n` rows.
async fn wait_rows(browser: &Browser, css: &str, n: usize) {
    browser
        .wait_js(
            &format!("document.querySelectorAll('{css} tr[data-session]').length === {n}"),
            &format!("{n} sessions in {css}"),
        )
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_page_ends_sessions() {
    let Some((chromium, driver)) = browser_binaries() else {
        eprintln!("SKIPPED: chromium and chromedriver are not installed");
        return;
    };
    let _serial = SERIAL.lock().await;
    tokio::time::timeout(TEST_TIMEOUT, async {
        let env = setup("identity-sessions").await;
        let mut browser = Browser::start(&chromium, &driver).await;
        // Ended sessions answer 401 on purpose (the live stream, refreshes).
        browser.strict_console = false;
        sessions_page(&env, &browser).await;
        browser.close().await;
    })
    .await
    .expect("sessions test timed out");
}

async fn sessions_page(env: &Env, browser: &Browser) {
    let base = &env.hub.base;
    // bob signs in once; alice twice (two browsers, as it were).
    browser.sign_in_with_provider(base, "bob").await;
    let bob = session_cookie(browser).await;
    forget_session(browser, true).await;
    browser.sign_in_with_provider(base, "alice").await;
    let alice_old = session_cookie(browser).await;
    forget_session(browser, false).await;
    browser.sign_in_with_provider(base, "alice").await;
    let alice = session_cookie(browser).await;
    assert_ne!(alice, alice_old);

    // Her Sessions page: both, this one marked, device and last use shown.
    browser.click("#nav-sessions").await;
    browser.wait_page("sessions").await;
    wait_rows(browser, "#my-sessions", 2).await;
    browser
        .wait_js(
            "document.querySelectorAll('#my-sessions tr[data-current]').length === 1",
            "current marked",
        )
        .await;
    let device = browser
        .eval("document.querySelector('#my-sessions tr[data-session] td').textContent")
        .await;
    assert_eq!(device, json!("Chrome on Linux"), "device column");
    browser.screenshot("identity-sessions").await;
    // REST says the same: two, one current, with user agent and last use.
    let (s, mine) = env
        .with_cookie(&alice, "GET", "/api/v1/auth/sessions", None, false)
        .await;
    assert_eq!(s, 200, "{mine}");
    let items = mine["items"].as_array().unwrap();
    assert_eq!(items.len(), 2, "{mine}");
    assert!(
        items
            .iter()
            .all(|i| i["userAgent"].as_str().unwrap().contains("Chrome")),
        "{mine}"
    );
    assert!(items.iter().all(|i| i["lastUsedAt"].is_string()), "{mine}");
    assert_eq!(
        items.iter().filter(|i| i["current"] == json!(true)).count(),
        1
    );

    // She ends the other one: its cookie is refused from now on; hers works.
    browser
        .click("#my-sessions tr:not([data-current]) .end-session")
        .await;
    wait_rows(browser, "#my-sessions", 1).await;
    assert_eq!(
        env.with_cookie(&alice_old, "GET", "/api/v1/whoami", None, false)
            .await
            .0,
        401
    );
    assert_eq!(
        env.with_cookie(&alice, "GET", "/api/v1/whoami", None, false)
            .await
            .0,
        200
    );
    // "End all other sessions" has nothing left to end.
    browser
        .wait_js(
            "document.getElementById('end-other-sessions').disabled",
            "nothing else to end",
        )
        .await;

    // As an admin she finds bob's session and ends it.
    browser.fill("#sessions-person", "bob@example.com").await;
    browser.click("#sessions-filter button[type=submit]").await;
    wait_rows(browser, "#all-sessions-list", 1).await;
    assert_eq!(
        env.with_cookie(&bob, "GET", "/api/v1/whoami", None, false)
            .await
            .0,
        200
    );
    browser.click("#end-person-sessions").await;
    wait_rows(browser, "#all-sessions-list", 0).await;
    assert_eq!(
        env.with_cookie(&bob, "GET", "/api/v1/whoami", None, false)
            .await
            .0,
        401
    );

    // Audited: who ended whose sessions.
    let (_, audit) = env
        .bearer(
            ADMIN_TOKEN,
            "GET",
            "/api/v1/audit?action=session.end&limit=10",
            None,
        )
        .await;
    let ends: Vec<(String, String)> = audit["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["actor"].as_str().unwrap().to_string(),
                e["targetName"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(ends.len(), 2, "{audit}");
    assert!(
        ends.iter().all(|(actor, _)| actor == "alice@example.com"),
        "{ends:?}"
    );
    assert!(
        ends[0].1.contains("bob@example.com") && ends[1].1.contains("alice@example.com"),
        "{ends:?}"
    );

    rest_grpc_cli(env, &alice).await;
    // The CLI ended her last session: the page's next request signs her out.
    browser.route("#/fleet").await;
    browser.wait_page("signin").await;
}

/// The same operations without the browser: REST refusals, gRPC and the CLI
/// with her provider-signed JWT; the CLI ends her dashboard session.
async fn rest_grpc_cli(env: &Env, alice: &str) {
    // A cookie write needs the CSRF token.
    let body = json!({"keepCurrent": true});
    let (s, v) = env
        .with_cookie(
            alice,
            "POST",
            "/api/v1/auth/sessions/end",
            Some(body.clone()),
            false,
        )
        .await;
    assert_eq!(s, 403, "{v}");
    let (s, v) = env
        .with_cookie(alice, "POST", "/api/v1/auth/sessions/end", Some(body), true)
        .await;
    assert_eq!((s, &v["ended"]), (200, &json!(0)), "{v}");
    // An API token has no sessions; someone else's session id is not found.
    let (s, v) = env
        .bearer(ADMIN_TOKEN, "GET", "/api/v1/auth/sessions", None)
        .await;
    assert_eq!(s, 403, "{v}");
    let carol = env.person_jwt("carol", &["developers"]).await;
    let (_, listed) = env
        .bearer(
            ADMIN_TOKEN,
            "GET",
            "/api/v1/sessions?subject=alice@example.com",
            None,
        )
        .await;
    let id = listed["items"][0]["id"]
        .as_str()
        .expect("alice's session")
        .to_string();
    let (s, v) = env
        .bearer(
            &carol,
            "POST",
            "/api/v1/auth/sessions/end",
            Some(json!({"id": id})),
        )
        .await;
    assert_eq!(s, 404, "{v}");
    let (s, v) = env
        .bearer(&carol, "GET", "/api/v1/auth/sessions", None)
        .await;
    assert_eq!(
        (s, v["items"].as_array().map(Vec::len)),
        (200, Some(0)),
        "{v}"
    );

    // gRPC with her JWT: her one live session.
    let jwt = env.person_jwt("alice", &["platform-admins"]).await;
    let channel =
        tonic::transport::Endpoint::from_shared(format!("http://127.0.0.1:{}", env.hub.grpc_port))
            .unwrap()
            .connect()
            .await
            .expect("gRPC connect");
    let mut client = pb::admin_service_client::AdminServiceClient::new(channel);
    let mut req = tonic::Request::new(pb::ListMySessionsRequest {});
    req.metadata_mut()
        .insert("authorization", format!("Bearer {jwt}").parse().unwrap());
    let mine = client
        .list_my_sessions(req)
        .await
        .expect("ListMySessions")
        .into_inner();
    assert_eq!(mine.sessions.len(), 1);
    assert_eq!(mine.sessions[0].id, id);
    assert!(mine.sessions[0].user_agent.contains("Chrome"));

    // The CLI: list hers, then end that one by id.
    let fleetgate = |args: &[&str]| {
        let out = Command::new(bin_path("fleetgate"))
            .args(["--hub", &env.hub.base, "-o", "json"])
            .args(args)
            .env("FLEETGATE_TOKEN", &jwt)
            .env("XDG_CONFIG_HOME", env._dir.path())
            .output()
            .expect("fleetgate");
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<Value>(&out.stdout).expect("JSON output")
    };
    let listed = fleetgate(&["session", "list", "--mine"]);
    assert_eq!(listed[0]["id"], json!(id), "{listed}");
    let ended = fleetgate(&["session", "end", "--mine", "--id", &id]);
    assert_eq!(ended["ended"], 1, "{ended}");
    assert_eq!(
        env.with_cookie(alice, "GET", "/api/v1/whoami", None, false)
            .await
            .0,
        401
    );
}
