//! People signed in to the dashboard through a real OpenID provider (npm's
//! `oidc-provider`): the Sessions page (a person ends their other session,
//! an admin ends a person's sessions; an ended session's cookie is refused),
//! the same over REST, gRPC and the CLI; a team member whose access policy
//! is scoped sees only the team's gates and clusters, gets no open button
//! where they may not operate, and a forged write is refused.

mod dashboard_support;

use std::process::Command;

use dashboard_support::sso::{SESSION_COOKIE, forget_session, session_cookie};
use dashboard_support::{ADMIN_TOKEN, Browser, Hub, SERIAL, TEST_TIMEOUT, browser_binaries, step};
use fleetgate_proto::v1 as pb;
use fleetgate_tests::oidc::OidcProvider;
use fleetgate_tests::{bin_path, output};
use serde_json::{Value, json};

struct Env {
    idp: OidcProvider,
    hub: Hub,
    _dir: tempfile::TempDir,
}

/// The provider, and one hub that signs people in through it: alice
/// (platform-admins) is an admin, bob (sre) an operator; carol (developers)
/// and dave hold only what access policies give them.
async fn setup(test: &str) -> Env {
    let idp = OidcProvider::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let hub = Hub::start_with_sign_in(test, &idp, dir.path(), &[], "").await;
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
    // Stale binaries are built before the bound starts (minutes under load).
    fleetgate_tests::binaries(&["fleetgate-hub", "fleetgate"]);
    let _serial = SERIAL.lock().await;
    tokio::time::timeout(TEST_TIMEOUT, async {
        let env = setup("identity-sessions").await;
        let mut browser = Browser::start(&chromium, &driver).await;
        // Ended sessions answer 401 on purpose (the live stream, refreshes).
        browser.strict_console = false;
        sessions_page(&env, &browser).await;
        forget_session(&browser, true).await;
        scoped_team(&env, &browser).await;
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
        .hub
        .request(
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
        .hub
        .request(ADMIN_TOKEN, "GET", "/api/v1/auth/sessions", None)
        .await;
    assert_eq!(s, 403, "{v}");
    let carol = env.person_jwt("bob", &["sre"]).await;
    let (_, listed) = env
        .hub
        .request(
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
        .hub
        .request(
            &carol,
            "POST",
            "/api/v1/auth/sessions/end",
            Some(json!({"id": id})),
        )
        .await;
    assert_eq!(s, 404, "{v}");
    let (s, v) = env
        .hub
        .request(&carol, "GET", "/api/v1/auth/sessions", None)
        .await;
    assert_eq!(
        (s, v["items"].as_array().map(Vec::len)),
        (200, Some(0)),
        "{v}"
    );

    // gRPC with her JWT: her one live session.
    let jwt = env.person_jwt("alice", &["platform-admins"]).await;
    let endpoint =
        tonic::transport::Endpoint::from_shared(format!("http://127.0.0.1:{}", env.hub.grpc_port))
            .unwrap();
    let channel = step("gRPC connect", endpoint.connect()).await;
    let mut client = pb::admin_service_client::AdminServiceClient::new(channel);
    let mut req = tonic::Request::new(pb::ListMySessionsRequest {});
    req.metadata_mut()
        .insert("authorization", format!("Bearer {jwt}").parse().unwrap());
    let mine = step("ListMySessions", client.list_my_sessions(req))
        .await
        .into_inner();
    assert_eq!(mine.sessions.len(), 1);
    assert_eq!(mine.sessions[0].id, id);
    assert!(mine.sessions[0].user_agent.contains("Chrome"));

    // The CLI: list hers, then end that one by id.
    let fleetgate = async |args: &[&str]| {
        let mut cmd = Command::new(bin_path("fleetgate"));
        cmd.args(["--hub", &env.hub.base, "-o", "json"])
            .args(args)
            .env("FLEETGATE_TOKEN", &jwt)
            .env("XDG_CONFIG_HOME", env._dir.path());
        let out = output(cmd, &format!("fleetgate {args:?}")).await;
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<Value>(&out.stdout).expect("JSON output")
    };
    let listed = fleetgate(&["session", "list", "--mine"]).await;
    assert_eq!(listed[0]["id"], json!(id), "{listed}");
    let ended = fleetgate(&["session", "end", "--mine", "--id", &id]).await;
    assert_eq!(ended["ended"], 1, "{ended}");
    assert_eq!(
        env.with_cookie(alice, "GET", "/api/v1/whoami", None, false)
            .await
            .0,
        401
    );
}

/// Two teams' clusters and gates; carol (group developers) operates team
/// a's only; dave reads the whole fleet and operates team a's.
async fn seed_teams(env: &Env) {
    let hub = &env.hub;
    for (name, team) in [("a-prod", "a"), ("a-dev", "a"), ("b-prod", "b")] {
        hub.cluster(name, json!({"team": team})).await;
    }
    for (gate, team) in [("gate-a", "a"), ("gate-b", "b")] {
        hub.gate(json!({
            "apiVersion": "fleetgate.io/v1", "kind": "Gate",
            "metadata": {"name": gate, "labels": {"team": team}},
            "spec": {"clusters": {"selector": {"matchLabels": {"team": team}}}, "default": "closed"}
        }))
        .await;
    }
    let team_a = json!({"clusters": {"selector": {"matchLabels": {"team": "a"}}},
                        "gates": {"selector": {"matchLabels": {"team": "a"}}}});
    let policies = [
        (
            "team-a",
            json!({"groups": ["developers"], "users": ["dave@example.com"]}),
            "operator",
            team_a,
        ),
        (
            "dave-reads-all",
            json!({"users": ["dave@example.com"]}),
            "viewer",
            Value::Null,
        ),
    ];
    for (name, subjects, role, scope) in policies {
        let mut spec = json!({"subjects": subjects, "role": role});
        if !scope.is_null() {
            spec["scope"] = scope;
        }
        let manifest = json!({"apiVersion": "fleetgate.io/v1", "kind": "AccessPolicy",
                              "metadata": {"name": name}, "spec": spec});
        hub.call(
            ADMIN_TOKEN,
            "PUT",
            &format!("/api/v1/access-policies/{name}"),
            Some(manifest),
        )
        .await;
    }
}

/// Whether the page shows an open button for `gate`.
fn open_button(gate: &str) -> String {
    format!(r#"!!document.querySelector('button[data-action="open"][data-gate="{gate}"]')"#)
}

async fn scoped_team(env: &Env, browser: &Browser) {
    seed_teams(env).await;
    let base = &env.hub.base;

    // carol: the grid has team a's clusters and gate only.
    browser.sign_in_with_provider(base, "carol").await;
    let carol = session_cookie(browser).await;
    browser
        .wait_js(
            "window.fleetgateTimings && fleetgateTimings.clusters === 2 && fleetgateTimings.gates === 1",
            "team a's grid",
        )
        .await;
    for c in ["a-prod", "a-dev"] {
        assert_eq!(
            browser.eval(&Browser::cell("gate-a", c)).await,
            json!("closed")
        );
    }
    let b_cells =
        r#"document.querySelectorAll('td[data-cluster="b-prod"], td[data-gate="gate-b"]').length"#;
    assert_eq!(browser.eval(b_cells).await, json!(0));
    browser.screenshot("identity-scoped-grid").await;
    // Lists, through her session: the same.
    let names = |v: &Value, key: &str| -> Vec<String> {
        let items = v["items"]
            .as_array()
            .or(v.as_array())
            .cloned()
            .unwrap_or_default();
        let mut n: Vec<String> = items
            .iter()
            .map(|i| {
                i[key]
                    .as_str()
                    .or(i["metadata"]["name"].as_str())
                    .unwrap_or_default()
                    .to_string()
            })
            .collect();
        n.sort();
        n
    };
    let (_, gates) = env
        .with_cookie(&carol, "GET", "/api/v1/gates", None, false)
        .await;
    assert_eq!(names(&gates, "name"), ["gate-a"], "{gates}");
    let (_, clusters) = env
        .with_cookie(&carol, "GET", "/api/v1/clusters", None, false)
        .await;
    assert_eq!(names(&clusters, "name"), ["a-dev", "a-prod"], "{clusters}");
    // Her gate page has the open button; gate-b's page is refused.
    browser.route("#/gates/gate-a").await;
    browser.wait_page("gate").await;
    browser
        .wait_js(&open_button("gate-a"), "open button on gate-a")
        .await;
    browser.route("#/gates/gate-b").await;
    browser
        .wait_js(
            "document.querySelector('.error-card') && document.body.dataset.page === 'gate'",
            "gate-b refused",
        )
        .await;
    assert_eq!(browser.eval(&open_button("gate-b")).await, json!(false));
    // Forged writes with her cookie and CSRF token: 403, nothing written.
    let open = json!({"for": "1h", "reason": "forged"});
    let (s, v) = env
        .with_cookie(
            &carol,
            "POST",
            "/api/v1/gates/gate-b/open",
            Some(open.clone()),
            true,
        )
        .await;
    assert_eq!(s, 403, "{v}");
    // An operator does not write gates, not even the team's own.
    let (s, v) = env
        .with_cookie(&carol, "DELETE", "/api/v1/gates/gate-a", None, true)
        .await;
    assert_eq!(s, 403, "{v}");
    let (_, overrides) = env
        .hub
        .request(ADMIN_TOKEN, "GET", "/api/v1/overrides", None)
        .await;
    assert_eq!(overrides["items"], json!([]), "{overrides}");

    // dave sees the whole fleet, and an open button only where he operates.
    forget_session(browser, true).await;
    browser.sign_in_with_provider(base, "dave").await;
    browser
        .wait_js(
            "window.fleetgateTimings && fleetgateTimings.clusters === 3 && fleetgateTimings.gates === 2",
            "the whole grid",
        )
        .await;
    browser.route("#/gates/gate-b").await;
    browser.wait_page("gate").await;
    assert_eq!(browser.eval(&open_button("gate-b")).await, json!(false));
    browser.route("#/clusters/b-prod").await;
    browser.wait_page("cluster").await;
    assert_eq!(browser.eval(&open_button("gate-b")).await, json!(false));
    browser.route("#/clusters/a-prod").await;
    browser.wait_page("cluster").await;
    browser
        .wait_js(&open_button("gate-a"), "open button on a-prod")
        .await;
    browser.route("#/gates/gate-a").await;
    browser.wait_page("gate").await;
    browser
        .wait_js(&open_button("gate-a"), "open button on gate-a")
        .await;
    // He opens gate-a through the dashboard: his override, on team a's clusters.
    browser.click("#open-gate").await;
    browser.fill("#dlg-reason", "team a release").await;
    browser.click("#dlg-confirm").await;
    browser
        .wait_eq("document.getElementById('gate-open').textContent", "2")
        .await;
    let (_, overrides) = env
        .hub
        .request(ADMIN_TOKEN, "GET", "/api/v1/overrides?gate=gate-a", None)
        .await;
    assert_eq!(
        overrides["items"][0]["actor"], "dave@example.com",
        "{overrides}"
    );
}
