//! Support for the dashboard browser tests: a real hub process on a fresh
//! database seeded through REST, and headless Chromium driven through a
//! chromedriver we spawn, with bounded polling and screenshots.

#![allow(dead_code)] // each test binary uses a different part

/// Runs `body` with a browser, or skips (with a note) where Chromium or
/// chromedriver is not installed. Browser tests run one at a time.
#[allow(unused_macros)] // not every test binary has browser tests
macro_rules! browser_test {
    ($name:ident, |$browser:ident| $body:expr) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $name() {
            use $crate::dashboard_support::{Browser, SERIAL, TEST_TIMEOUT, browser_binaries};
            let Some((chromium, driver)) = browser_binaries() else {
                eprintln!(
                    "SKIPPED {}: chromium and chromedriver are not installed \
                     (apt-get install chromium chromium-driver)",
                    stringify!($name)
                );
                return;
            };
            // A stale binary is built before the bound starts (minutes under load).
            fleetgate_tests::binaries(&["fleetgate-hub"]);
            let _serial = SERIAL.lock().await;
            tokio::time::timeout(TEST_TIMEOUT, async {
                let $browser = Browser::start(&chromium, &driver).await;
                $body;
                $browser.close().await;
            })
            .await
            .expect("browser test timed out");
        }
    };
}

pub mod fleet;
mod hub;
pub mod spoke;
pub mod sso;

#[allow(unused_imports)] // not every test binary seeds
pub use hub::{Hub, seed_small};

use std::fmt::Display;
use std::future::Future;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use fleetgate_tests::free_port;
use serde_json::{Value, json};

/// How long any wait for the page (and any one WebDriver command or REST call)
/// may take before the test fails.
pub const WAIT: Duration = Duration::from_secs(20);
/// How long Chromium may take to start (a WebDriver session) on a loaded machine.
const SESSION_START: Duration = Duration::from_secs(60);
/// A whole browser test.
pub const TEST_TIMEOUT: Duration = Duration::from_secs(240);

pub const ADMIN_TOKEN: &str = "fga_dashboard-test-admin-secret";

/// The signed-in person's name in the dashboard's header (a JS expression).
pub const ME: &str = "document.querySelector('#me .who')?.textContent || ''";

/// Browser tests run one at a time: each starts a Chromium, and two cores
/// do not run several of them well.
pub static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Console entries of a hub that went away (stopped, restarted): its event
/// stream cut, requests refused, and a poll caught on a socket the hub's exit
/// closed under it (`ERR_SOCKET_NOT_CONNECTED`, seen once in CI when the hub of
/// `dashboard_approvals` stopped during the page's approvals poll).
pub const TEARDOWN: [&str; 3] = [
    "ERR_INCOMPLETE_CHUNKED_ENCODING",
    "ERR_CONNECTION_REFUSED",
    "ERR_SOCKET_NOT_CONNECTED",
];

/// `target/test-output/dashboard/`, created.
pub fn output_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    // target/<profile>/deps/<test> → target
    let target = exe.ancestors().nth(3).expect("target dir").to_path_buf();
    let dir = target.join("test-output").join("dashboard");
    std::fs::create_dir_all(&dir).expect("creating test output dir");
    dir
}

/// Chromium and chromedriver, or None (the test is then skipped with a note).
pub fn browser_binaries() -> Option<(PathBuf, PathBuf)> {
    let find = |env: &str, names: &[&str]| -> Option<PathBuf> {
        if let Ok(p) = std::env::var(env) {
            return Some(PathBuf::from(p));
        }
        names.iter().find_map(|n| {
            std::env::var_os("PATH").and_then(|paths| {
                std::env::split_paths(&paths)
                    .map(|d| d.join(n))
                    .find(|p| p.is_file())
            })
        })
    };
    let chromium = find(
        "FLEETGATE_CHROMIUM",
        &["chromium", "chromium-browser", "google-chrome"],
    )?;
    let driver = find("FLEETGATE_CHROMEDRIVER", &["chromedriver"])?;
    Some((chromium, driver))
}

/// One step that talks to the browser or the hub (a WebDriver command, a
/// REST or gRPC call), bounded by [`WAIT`]: whatever stops answering fails
/// the test at once, naming `step`.
pub async fn step<T, E: Display>(step: &str, call: impl Future<Output = Result<T, E>>) -> T {
    match tokio::time::timeout(WAIT, call).await {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => panic!("{step}: {e}"),
        Err(_) => panic!("{step}: no answer within {WAIT:?}"),
    }
}

/// Waits until a TCP port accepts connections.
async fn wait_port(port: u16, what: &str) {
    let start = Instant::now();
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(start.elapsed() < WAIT, "{what} did not listen on {port}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// chromedriver in its own process group: dropping it kills the group, so
/// the Chromium it started goes too even when a test failed before closing
/// its session.
struct DriverGuard(std::process::Child);

impl Drop for DriverGuard {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.0.id())])
            .status();
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Headless Chromium behind a chromedriver we started.
pub struct Browser {
    pub client: Client,
    /// chromedriver's port, for the browser log (not part of W3C WebDriver).
    driver_port: u16,
    /// Fail on SEVERE console entries (the dashboard tests); off for a test that
    /// provokes refusals on purpose all along (identity: 401, 403, 502).
    pub strict_console: bool,
    _driver: DriverGuard,
    _profile: tempfile::TempDir,
}

impl Browser {
    pub async fn start(chromium: &Path, driver: &Path) -> Browser {
        let port = free_port();
        let driver = DriverGuard(
            Command::new(driver)
                .arg(format!("--port={port}"))
                .process_group(0)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("starting chromedriver"),
        );
        wait_port(port, "chromedriver").await;
        let profile = tempfile::tempdir().expect("profile dir");
        let args = [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-quic",
            "--no-first-run",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
            "--window-size=1400,1000",
            &format!("--user-data-dir={}", profile.path().display()),
        ];
        let caps = json!({
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": chromium, "args": args},
            // Keep the console (and failed requests, which Chromium logs as SEVERE) for
            // `console_errors`.
            "goog:loggingPrefs": {"browser": "ALL"},
        });
        let caps = match caps {
            Value::Object(m) => m,
            _ => unreachable!(),
        };
        let url = format!("http://127.0.0.1:{port}");
        let mut builder =
            ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new());
        builder.capabilities(caps);
        let client = tokio::time::timeout(SESSION_START, builder.connect(&url))
            .await
            .unwrap_or_else(|_| panic!("no WebDriver session (Chromium) within {SESSION_START:?}"))
            .expect("WebDriver session");
        Browser {
            client,
            driver_port: port,
            strict_console: true,
            _driver: driver,
            _profile: profile,
        }
    }

    /// Evaluates a JS expression.
    pub async fn eval(&self, expr: &str) -> Value {
        let script = format!("return ({expr});");
        step(
            &format!("evaluating {expr}"),
            self.client.execute(&script, vec![]),
        )
        .await
    }

    /// Runs an asynchronous script (it calls its last argument with the
    /// result; bounded by [`WAIT`]).
    pub async fn eval_async(&self, what: &str, script: &str) -> Value {
        step(what, self.client.execute_async(script, vec![])).await
    }

    /// Polls a JS expression until it is truthy (bounded by [`WAIT`]).
    pub async fn wait_js(&self, expr: &str, what: &str) {
        let start = Instant::now();
        let script = format!("return !!({expr});");
        loop {
            // Each poll bounded too: a page that stops answering is a hang, not a "no".
            let v = tokio::time::timeout(WAIT, self.client.execute(&script, vec![]))
                .await
                .unwrap_or_else(|_| {
                    panic!("waiting for {what}: no answer from the browser within {WAIT:?}")
                });
            if matches!(v, Ok(Value::Bool(true))) {
                return;
            }
            if start.elapsed() > WAIT {
                let shot = self.screenshot("failure").await;
                panic!("timed out waiting for {what} ({expr}); last: {v:?}; screenshot {shot:?}");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Waits until the live event stream is connected.
    pub async fn wait_live(&self) {
        self.wait_js(
            "document.getElementById('live').dataset.state === 'live'",
            "live stream",
        )
        .await;
    }

    /// Waits until the JS expression `expr` equals the string `value`.
    pub async fn wait_eq(&self, expr: &str, value: &str) {
        self.wait_js(
            &format!("{expr} === {value:?}"),
            &format!("{expr} = {value}"),
        )
        .await;
    }

    /// Waits until the page has rendered its data; fails the test if the
    /// browser's console has a SEVERE entry (a script error, a failed request).
    pub async fn wait_page(&self, page: &str) {
        self.wait_js(
            &format!(
                "document.body.dataset.page === '{page}' && document.getElementById('main').dataset.ready === '1'"
            ),
            &format!("page {page}"),
        )
        .await;
        if page == "signin" {
            // The live stream a sign-out ended answers 401, which Chromium logs. A visitor
            // who is not signed in is normal: the page asks whoami only when the hub saw a
            // session cookie, so no refused whoami may appear here.
            self.expect_console(
                &["/api/v1/events - Failed to load resource: the server responded with a status of 401"],
                false,
            )
            .await;
        }
        self.assert_console_clean(&format!("page {page}")).await;
    }

    /// The SEVERE entries of the browser's console since the last call
    /// (chromedriver hands each entry out once).
    pub async fn console_errors(&self) -> Vec<String> {
        let id = step("the WebDriver session id", self.client.session_id())
            .await
            .expect("a session");
        let v: Value = reqwest::Client::new()
            .post(format!(
                "http://127.0.0.1:{}/session/{id}/se/log",
                self.driver_port
            ))
            .json(&json!({"type": "browser"}))
            .timeout(WAIT)
            .send()
            .await
            .expect("chromedriver log")
            .json()
            .await
            .expect("chromedriver log JSON");
        v["value"]
            .as_array()
            .unwrap_or_else(|| panic!("browser log: {v}"))
            .iter()
            .filter(|e| e["level"] == "SEVERE")
            // The test identity provider's own pages (sign-in with OIDC) name no icon; the
            // hub serves /favicon.ico.
            .filter(|e| {
                !e["message"]
                    .as_str()
                    .unwrap_or_default()
                    .contains("/favicon.ico - ")
            })
            .map(|e| e["message"].as_str().unwrap_or_default().to_string())
            .collect()
    }

    /// Drains the console, asserting that each SEVERE entry names one of
    /// `expected` (errors the test provoked on purpose) and, if `some`, that
    /// there is one.
    pub async fn expect_console(&self, expected: &[&str], some: bool) {
        let errors = self.console_errors().await;
        if !self.strict_console {
            return;
        }
        assert!(
            (!some || !errors.is_empty())
                && errors
                    .iter()
                    .all(|e| expected.iter().any(|x| e.contains(x))),
            "expected SEVERE console entries naming one of {expected:?}: {errors:#?}"
        );
    }

    /// Fails the test if the console has SEVERE entries, naming `place`.
    pub async fn assert_console_clean(&self, place: &str) {
        if !self.strict_console {
            return;
        }
        let errors = self.console_errors().await;
        if !errors.is_empty() {
            let shot = self.screenshot("console-error").await;
            panic!("SEVERE console entries on {place}: {errors:#?} (screenshot {shot:?})");
        }
    }

    pub async fn click(&self, css: &str) {
        self.wait_js(
            &format!("document.querySelector({css:?})"),
            &format!("element {css}"),
        )
        .await;
        // In the middle of the viewport, where no toast (bottom right) covers it.
        step(
            &format!("scrolling to {css}"),
            self.client.execute(
                "document.querySelector(arguments[0]).scrollIntoView({block: 'center'});",
                vec![json!(css)],
            ),
        )
        .await;
        let el = step(
            &format!("finding {css}"),
            self.client.find(Locator::Css(css)),
        )
        .await;
        step(&format!("clicking {css}"), el.click()).await;
    }

    /// Replaces an input's text.
    pub async fn fill(&self, css: &str, text: &str) {
        let el = step(
            &format!("finding {css}"),
            self.client.find(Locator::Css(css)),
        )
        .await;
        step(&format!("clearing {css}"), el.clear()).await;
        step(&format!("typing into {css}"), el.send_keys(text)).await;
    }

    pub async fn goto(&self, url: &str) {
        step(&format!("navigating to {url}"), self.client.goto(url)).await;
    }

    /// Signs in at `base` through the OpenID provider's own login form as
    /// `user` (password `<user>-pw`), unless the provider still has a session.
    pub async fn sign_in_with_provider(&self, base: &str, user: &str) {
        self.goto(base).await;
        self.wait_page("signin").await;
        self.click("#sso-signin").await;
        self.wait_js(
            "document.querySelector('#login') || document.querySelector('#me .who')",
            "provider login form or dashboard",
        )
        .await;
        if self.eval("!!document.querySelector('#login')").await == json!(true) {
            self.fill("#login", user).await;
            self.fill("#password", &format!("{user}-pw")).await;
            self.click("#sign-in").await;
        }
        self.wait_page("fleet").await;
    }

    /// Sets the hash route without reloading the page.
    pub async fn route(&self, hash: &str) {
        let script = format!("location.hash = {hash:?};");
        step(
            &format!("routing to {hash}"),
            self.client.execute(&script, vec![]),
        )
        .await;
    }

    pub async fn sign_in(&self, base: &str, token: &str) {
        self.goto(base).await;
        self.wait_page("signin").await;
        self.screenshot("signin").await;
        self.fill("#token", token).await;
        self.click("#signin-submit").await;
        self.wait_page("fleet").await;
    }

    /// Saves a PNG under the test output dir; returns its path (None where
    /// the browser gave none within [`WAIT`]: a failing test still fails).
    pub async fn screenshot(&self, name: &str) -> Option<PathBuf> {
        let png = tokio::time::timeout(WAIT, self.client.screenshot())
            .await
            .ok()?
            .ok()?;
        let path = output_dir().join(format!("{name}.png"));
        std::fs::write(&path, png).ok()?;
        Some(path)
    }

    /// The state shown in the grid cell of `gate` on `cluster`.
    pub fn cell(gate: &str, cluster: &str) -> String {
        format!(
            "document.querySelector('td[data-gate=\"{gate}\"][data-cluster=\"{cluster}\"]')?.dataset.state"
        )
    }

    /// Ends the session; fails the test if the page logged script errors or
    /// the console has SEVERE entries.
    pub async fn close(self) {
        let errors = self.eval("window.fleetgateErrors || []").await;
        // The test's hub stops before the browser does (it is dropped with the test's
        // body): the cut event stream and refused refreshes are the teardown's, not the page's.
        let console: Vec<String> = self
            .console_errors()
            .await
            .into_iter()
            .filter(|e| !TEARDOWN.iter().any(|t| e.contains(t)))
            .collect();
        let _ = tokio::time::timeout(WAIT, self.client.close()).await;
        assert_eq!(errors, json!([]), "script errors in the page");
        assert!(
            !self.strict_console || console.is_empty(),
            "SEVERE console entries: {console:#?}"
        );
    }
}
