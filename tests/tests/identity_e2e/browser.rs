//! The browser parts, in Chromium: the dashboard sign-in through the
//! provider's login form (CSRF, the session on both replicas, sign-out, an
//! admin ending the session), `fleetgate login` with the device flow approved
//! in the browser, and the provider going down.

use std::os::unix::fs::PermissionsExt as _;
use std::process::{Command, Stdio};

use fleetgate_tests::sign_in::cli_login_url;
use fleetgate_tests::{ChildGuard, bin_path};
use serde_json::{Value, json};

use crate::Env;
use crate::dashboard_support::{ADMIN_TOKEN, Browser, ME};

async fn fetch_status(browser: &Browser, method: &str, path: &str, csrf: bool) -> Value {
    let expr = format!(
        "(async () => {{ const me = await fetch('/api/v1/whoami', {{credentials: 'same-origin'}}).then(r => r.ok ? r.json() : {{}});
           const headers = {{'Content-Type': 'application/json'}};
           if ({csrf} && me.csrfToken) headers['X-CSRF-Token'] = me.csrfToken;
           const r = await fetch('{path}', {{method: '{method}', headers, credentials: 'same-origin',
             body: '{method}' === 'GET' ? undefined : JSON.stringify({{name: 'from-browser', role: 'viewer'}})}});
           return r.status; }})()"
    );
    let script = format!(
        "const done = arguments[arguments.length - 1]; ({expr}).then(done, e => done(String(e)));"
    );
    let status = browser.eval_async("fetch in page", &script).await;
    // A refusal the test provokes on purpose is in the console (Chromium logs failed
    // requests, and the browser tests fail on any other SEVERE entry): take it out.
    if status.as_i64().is_some_and(|s| s >= 400) {
        browser
            .expect_console(&["/api/v1/whoami - ", &format!("{path} - ")], false)
            .await;
    }
    status
}

pub async fn dashboard_sign_in(env: &Env, browser: &Browser) {
    browser.sign_in_with_provider(&env.a.base, "alice").await;
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
    browser.sign_in_with_provider(&env.a.base, "alice").await;
    let (s, v) = env
        .a
        .request(
            ADMIN_TOKEN,
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
    let (_, audit) = env
        .a
        .request(ADMIN_TOKEN, "GET", "/api/v1/audit?limit=20", None)
        .await;
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

pub async fn cli_device_flow(env: &Env, browser: &Browser) {
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
    let (url, rest) = cli_login_url(stderr).await;
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

pub async fn provider_down(env: &Env, browser: &Browser) {
    browser.sign_in_with_provider(&env.a.base, "alice").await;
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
    let (s, me) = env.a.request(&cached, "GET", "/api/v1/whoami", None).await;
    assert_eq!(s, 200, "{me}");
    // API tokens are untouched.
    assert_eq!(
        env.a
            .request(ADMIN_TOKEN, "GET", "/api/v1/gates", None)
            .await
            .0,
        200
    );
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
}
