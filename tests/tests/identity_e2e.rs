//! Single sign-on end to end against a real OpenID provider (npm's
//! `oidc-provider`, one process for this binary): two hub replicas on one
//! database trust it. Bearer JWTs (good, expired, wrong audience, wrong
//! issuer, `alg: none`, HS256 confusion, key rotation) on REST and gRPC;
//! then, in Chromium, the dashboard sign-in (provider login form, callback,
//! session on both replicas, CSRF, sign-out, an admin ending the session),
//! `fleetgate login` with the device flow approved in the browser, and the
//! provider going down (sessions and cached keys keep working, new sign-ins
//! fail with a clear message).

mod dashboard_support;

use std::os::unix::fs::PermissionsExt as _;
use std::process::{Command, Stdio};
use std::time::Duration;

use base64::Engine as _;
use dashboard_support::{Browser, SERIAL, TEST_TIMEOUT, browser_binaries};
use fleetgate_proto::v1 as pb;
use fleetgate_tests::oidc::OidcProvider;
use fleetgate_tests::{ChildGuard, TestDb, bin_path, free_port, test_db};
use serde_json::{Value, json};

const ADMIN: &str = "fga_identity-test-admin-secret";
const CI_ISSUER: &str = "https://token.actions.githubusercontent.example";
const CI_SUBJECT: &str = "repo:acme/app:ref:refs/heads/main";

struct Env {
    idp: OidcProvider,
    db: TestDb,
    dir: tempfile::TempDir,
    a: Replica,
    b: Replica,
    http: reqwest::Client,
}

struct Replica {
    base: String,
    grpc: u16,
    _child: ChildGuard,
}

fn spawn_hub(env_db: &TestDb, config: &std::path::Path, http: u16, grpc: u16, id: &str) -> Replica {
    let child = Command::new(bin_path("fleetgate-hub"))
        .arg("serve")
        .env("DATABASE_URL", &env_db.url)
        .env("FLEETGATE_HTTP_ADDR", format!("127.0.0.1:{http}"))
        .env("FLEETGATE_GRPC_ADDR", format!("127.0.0.1:{grpc}"))
        .env("FLEETGATE_ADMIN_TOKEN", ADMIN)
        .env("FLEETGATE_REPLICA_ID", id)
        .env("FLEETGATE_IDENTITY_CONFIG", config)
        // The provider runs on loopback over plain http.
        .env("FLEETGATE_EGRESS_ALLOW_PRIVATE", "true")
        .env("FLEETGATE_EGRESS_ALLOW_HTTP", "true")
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .expect("starting fleetgate-hub");
    Replica {
        base: format!("http://127.0.0.1:{http}"),
        grpc,
        _child: ChildGuard(child),
    }
}

async fn setup() -> Env {
    let idp = OidcProvider::start().await;
    let db = test_db().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let (http_a, http_b) = (free_port(), free_port());
    let callback = format!("http://127.0.0.1:{http_a}/auth/callback");
    idp.add_web_client(
        "fleetgate-dashboard",
        "dashboard-secret",
        std::slice::from_ref(&callback),
    )
    .await;
    idp.add_cli_client("fleetgate-cli").await;
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
trusted:
  - issuer: {CI_ISSUER}
    jwksUri: {issuer}/jwks
    audiences: [fleetgate-ci]
    claims: {{name: repository}}
roles:
  - {{group: platform-admins, role: admin}}
  - {{group: sre, role: operator}}
  - {{group: developers, role: viewer}}
  - {{subject: '{CI_SUBJECT}', role: operator}}
jwksMinRefetch: 100ms
",
            issuer = idp.issuer,
            secret = dir.path().join("client-secret").display(),
        ),
    )
    .unwrap();
    let a = spawn_hub(&db, &config, http_a, free_port(), "identity-a");
    let b = spawn_hub(&db, &config, http_b, free_port(), "identity-b");
    let http = reqwest::Client::new();
    for r in [&a, &b] {
        fleetgate_tests::poll("hub ready", || async {
            let resp = http.get(format!("{}/readyz", r.base)).send().await.ok()?;
            resp.status().is_success().then_some(())
        })
        .await;
    }
    Env {
        idp,
        db,
        dir,
        a,
        b,
        http,
    }
}

impl Env {
    /// (status, body) of a REST call with `bearer`.
    async fn call(
        &self,
        bearer: &str,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let mut req = self
            .http
            .request(method.parse().unwrap(), format!("{}{path}", self.a.base))
            .bearer_auth(bearer);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let r = req.send().await.expect("request");
        let status = r.status().as_u16();
        (status, r.json().await.unwrap_or(Value::Null))
    }

    async fn audit_count(&self) -> usize {
        let (s, v) = self
            .call(ADMIN, "GET", "/api/v1/audit?limit=500", None)
            .await;
        assert_eq!(s, 200, "{v}");
        v["items"].as_array().unwrap().len()
    }

    /// The `sign_in.refused` entries, newest first.
    async fn refusals(&self) -> Vec<Value> {
        let (s, v) = self
            .call(
                ADMIN,
                "GET",
                "/api/v1/audit?action=sign_in.refused&limit=500",
                None,
            )
            .await;
        assert_eq!(s, 200, "{v}");
        v["items"].as_array().unwrap().clone()
    }

    fn person(&self, sub: &str, groups: &[&str]) -> Value {
        json!({"sub": sub, "aud": "fleetgate-dashboard", "name": format!("{sub} person"),
               "email": format!("{sub}@example.com"), "groups": groups})
    }
}

fn b64(v: &Value) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(serde_json::to_vec(v).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identity_end_to_end() {
    tokio::time::timeout(TEST_TIMEOUT + Duration::from_secs(120), async {
        let env = setup().await;
        bearer_jwts(&env).await;
        refused_callbacks(&env).await;
        grpc_bearer_jwts(&env).await;
        key_rotation(&env).await;
        match browser_binaries() {
            Some((chromium, driver)) => {
                let _serial = SERIAL.lock().await;
                let mut browser = Browser::start(&chromium, &driver).await;
                // It provokes refusals (401, 403, 502) on purpose throughout.
                browser.strict_console = false;
                dashboard_sign_in(&env, &browser).await;
                cli_device_flow(&env, &browser).await;
                provider_down(&env, &browser).await;
                browser.close().await;
            }
            None => {
                eprintln!("SKIPPED the browser parts: chromium and chromedriver are not installed")
            }
        }
    })
    .await
    .expect("identity test timed out");
}

async fn bearer_jwts(env: &Env) {
    let idp = &env.idp;
    // A person's ID token: admin through the platform-admins group.
    let alice = idp
        .mint(env.person("alice", &["platform-admins"]), None)
        .await;
    let (s, me) = env.call(&alice, "GET", "/api/v1/whoami", None).await;
    assert_eq!(s, 200, "{me}");
    assert_eq!(me["role"], "admin");
    assert_eq!(me["identity"]["kind"], "person");
    assert_eq!(me["identity"]["subject"], "alice");
    assert_eq!(me["identity"]["issuer"], json!(idp.issuer));
    let (s, v) = env
        .call(
            &alice,
            "POST",
            "/api/v1/tokens",
            Some(json!({"name": "by-alice", "role": "viewer"})),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    let (_, audit) = env.call(ADMIN, "GET", "/api/v1/audit?limit=1", None).await;
    let entry = &audit["items"][0];
    assert_eq!(entry["actor"], "alice@example.com", "{entry}");
    assert_eq!(entry["actorKind"], "person", "{entry}");
    assert_eq!(entry["actorIssuer"], json!(idp.issuer), "{entry}");
    assert_eq!(entry["actorSubject"], "alice", "{entry}");

    // A CI job's token from the trusted workload issuer: operator by subject.
    let ci = idp
        .mint(json!({"iss": CI_ISSUER, "sub": CI_SUBJECT, "aud": "fleetgate-ci", "repository": "acme/app"}), None)
        .await;
    let (s, me) = env.call(&ci, "GET", "/api/v1/whoami", None).await;
    assert_eq!(s, 200, "{me}");
    assert_eq!(me["role"], "operator");
    assert_eq!(me["identity"]["kind"], "workload");
    assert_eq!(me["identity"]["name"], "acme/app");
    // A person without any role mapping: authenticated, but 403, audited once
    // however often he tries.
    let dave = idp.mint(env.person("dave", &[]), None).await;
    assert_eq!(env.call(&dave, "GET", "/api/v1/gates", None).await.0, 403);
    assert_eq!(env.call(&dave, "GET", "/api/v1/gates", None).await.0, 403);
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
            .call(
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
        assert_eq!(env.call(token, "GET", "/api/v1/whoami", None).await.0, 401);
    }
    assert_eq!(
        env.refusals().await.len(),
        refused.len(),
        "a repeat was audited"
    );
    let (s, v) = env.call(ADMIN, "GET", "/api/v1/tokens", None).await;
    assert_eq!(s, 200);
    assert!(!v.to_string().contains("must-not-exist"));

    // Metrics count validations by outcome.
    let metrics = env
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
async fn refused_callbacks(env: &Env) {
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

async fn grpc_bearer_jwts(env: &Env) {
    let alice = env
        .idp
        .mint(env.person("alice", &["platform-admins"]), None)
        .await;
    let mut expired = env.person("alice", &["platform-admins"]);
    expired["exp"] = json!(chrono::Utc::now().timestamp() - 3600);
    let expired = env.idp.mint(expired, None).await;
    let channel =
        tonic::transport::Endpoint::from_shared(format!("http://127.0.0.1:{}", env.b.grpc))
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

async fn key_rotation(env: &Env) {
    let old = env.idp.mint(env.person("bob", &["sre"]), None).await;
    assert_eq!(env.call(&old, "GET", "/api/v1/whoami", None).await.0, 200);
    env.idp.rotate().await;
    // A token under the new key: its unknown kid makes the hub refetch the keys.
    let new = env.idp.mint(env.person("bob", &["sre"]), None).await;
    let (s, me) = env.call(&new, "GET", "/api/v1/whoami", None).await;
    assert_eq!(s, 200, "{me}");
    assert_eq!(me["role"], "operator");
    // The retired key is gone from the provider's JWKS, so from the hub's.
    assert_eq!(env.call(&old, "GET", "/api/v1/whoami", None).await.0, 401);
}

/// The signed-in name in the header.
const ME: &str = "document.querySelector('#me .who')?.textContent || ''";

async fn sign_in_with_provider(env: &Env, browser: &Browser, user: &str) {
    browser.goto(&env.a.base).await;
    browser.wait_page("signin").await;
    browser.click("#sso-signin").await;
    // The provider's own login form (unless it still has a session for us).
    browser
        .wait_js(
            "document.querySelector('#login') || document.querySelector('#me .who')",
            "provider login form or dashboard",
        )
        .await;
    if browser.eval("!!document.querySelector('#login')").await == json!(true) {
        browser.fill("#login", user).await;
        browser.fill("#password", &format!("{user}-pw")).await;
        browser.click("#sign-in").await;
    }
    browser.wait_page("fleet").await;
}

async fn fetch_status(browser: &Browser, method: &str, path: &str, csrf: bool) -> Value {
    let expr = format!(
        "(async () => {{ const me = await fetch('/api/v1/whoami', {{credentials: 'same-origin'}}).then(r => r.ok ? r.json() : {{}});
           const headers = {{'Content-Type': 'application/json'}};
           if ({csrf} && me.csrfToken) headers['X-CSRF-Token'] = me.csrfToken;
           const r = await fetch('{path}', {{method: '{method}', headers, credentials: 'same-origin',
             body: '{method}' === 'GET' ? undefined : JSON.stringify({{name: 'from-browser', role: 'viewer'}})}});
           return r.status; }})()"
    );
    let status = browser
        .client
        .execute_async(&format!("const done = arguments[arguments.length - 1]; ({expr}).then(done, e => done(String(e)));"), vec![])
        .await
        .expect("fetch in page");
    // A refusal the test provokes on purpose is in the console (Chromium logs failed
    // requests, and the browser tests fail on any other SEVERE entry): take it out.
    if status.as_i64().is_some_and(|s| s >= 400) {
        browser
            .expect_console(&["/api/v1/whoami - ", &format!("{path} - ")], false)
            .await;
    }
    status
}

async fn dashboard_sign_in(env: &Env, browser: &Browser) {
    sign_in_with_provider(env, browser, "alice").await;
    browser.wait_eq(ME, "Alice Admin").await;
    browser.screenshot("identity-signed-in").await;
    // The cookie's writes need the CSRF token.
    assert_eq!(
        fetch_status(browser, "POST", "/api/v1/tokens", false).await,
        json!(403)
    );
    assert_eq!(
        fetch_status(browser, "POST", "/api/v1/tokens", true).await,
        json!(201)
    );
    // The other replica knows the session (state in PostgreSQL).
    browser.goto(&env.b.base).await;
    browser.wait_page("fleet").await;
    browser.wait_eq(ME, "Alice Admin").await;
    // Sign-out ends the session for every replica.
    browser.click("#signout").await;
    browser.wait_page("signin").await;
    assert_eq!(
        fetch_status(browser, "GET", "/api/v1/whoami", false).await,
        json!(401)
    );

    // An admin ends a person's sessions: the next request needs a new sign-in.
    sign_in_with_provider(env, browser, "alice").await;
    let (s, v) = env
        .call(
            ADMIN,
            "POST",
            "/api/v1/sessions/end",
            Some(json!({"subject": "alice@example.com", "reason": "offboarding"})),
        )
        .await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["ended"], 1);
    assert_eq!(
        fetch_status(browser, "GET", "/api/v1/whoami", false).await,
        json!(401)
    );
    let (_, audit) = env.call(ADMIN, "GET", "/api/v1/audit?limit=20", None).await;
    let actions: Vec<&str> = audit["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["action"].as_str())
        .collect();
    for a in ["session.sign_in", "session.sign_out", "session.end"] {
        assert!(actions.contains(&a), "{a} missing from {actions:?}");
    }
}

async fn cli_device_flow(env: &Env, browser: &Browser) {
    let home = env.dir.path().join("cli-home");
    let fleetgate = |args: &[&str]| {
        let mut c = Command::new(bin_path("fleetgate"));
        c.args(["--hub", &env.a.base])
            .args(args)
            .env("XDG_CONFIG_HOME", &home)
            .env_remove("FLEETGATE_TOKEN");
        c
    };
    let mut login = fleetgate(&["login"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("fleetgate login");
    let stderr = login.stderr.take().unwrap();
    // The URL comes first; the rest of stderr is kept for a failure message.
    let (url_tx, url_rx) = std::sync::mpsc::channel();
    let rest = std::thread::spawn(move || {
        use std::io::BufRead as _;
        let mut text = String::new();
        for line in std::io::BufReader::new(stderr).lines() {
            let line = line.unwrap_or_default();
            if let Some(url) = line.strip_prefix("To sign in, open ") {
                let _ = url_tx.send(url.to_string());
            }
            text.push_str(&line);
            text.push('\n');
        }
        text
    });
    let url = tokio::task::spawn_blocking(move || url_rx.recv_timeout(Duration::from_secs(30)))
        .await
        .unwrap()
        .expect("fleetgate login printed no URL");
    let mut login = ChildGuard(login);
    // The person approves the code in a browser.
    browser.goto(&url).await;
    browser.click("#device-confirm").await;
    browser
        .wait_js(
            "document.querySelector('#login') || document.querySelector('#device-done')",
            "login or done",
        )
        .await;
    if browser.eval("!!document.querySelector('#login')").await == json!(true) {
        browser.fill("#login", "bob").await;
        browser.fill("#password", "bob-pw").await;
        browser.click("#sign-in").await;
    }
    browser
        .wait_js("document.querySelector('#device-done')", "device flow done")
        .await;
    let status = fleetgate_tests::poll("fleetgate login exits", || {
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
    let out = fleetgate(&["whoami"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains(&format!("issuer: {}", env.idp.issuer)),
        "{text}"
    );
    assert!(fleetgate(&["logout"]).status().unwrap().success());
    let out = fleetgate(&["whoami"]).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(5),
        "whoami after logout: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

async fn provider_down(env: &Env, browser: &Browser) {
    sign_in_with_provider(env, browser, "alice").await;
    let cached = env
        .idp
        .mint(env.person("carol", &["developers"]), None)
        .await;
    env.idp.down().await;
    // The session keeps working, on both replicas.
    browser.goto(&env.b.base).await;
    browser.wait_page("fleet").await;
    browser.wait_eq(ME, "Alice Admin").await;
    // JWTs validate with the cached keys.
    let (s, me) = env.call(&cached, "GET", "/api/v1/whoami", None).await;
    assert_eq!(s, 200, "{me}");
    // API tokens are untouched.
    assert_eq!(env.call(ADMIN, "GET", "/api/v1/gates", None).await.0, 200);
    // A new sign-in fails with a clear message.
    browser.click("#signout").await;
    browser.wait_page("signin").await;
    browser.click("#sso-signin").await;
    browser
        .wait_js(
            "document.getElementById('signin-error').textContent.includes('cannot be reached')",
            "sign-in error",
        )
        .await;
    env.idp.up().await;
    let _ = &env.db;
}
