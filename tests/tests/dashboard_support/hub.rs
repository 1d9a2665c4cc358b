//! A real hub process for the browser tests: on a fresh database (or a
//! second replica on the same one), optionally signing people in through the
//! test OpenID provider, seeded through REST.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use fleetgate_tests::oidc::OidcProvider;
use fleetgate_tests::{ChildGuard, TestDb, bin_path, free_port, test_db};
use serde_json::{Value, json};

use super::{ADMIN_TOKEN, WAIT, output_dir};

/// A running hub process.
pub struct Hub {
    pub child: ChildGuard,
    pub db: TestDb,
    pub http_port: u16,
    pub grpc_port: u16,
    pub base: String,
    pub http: reqwest::Client,
    /// Environment beside the defaults (e.g. an identity config), kept for restarts.
    env: Vec<(String, String)>,
}

impl Hub {
    /// Starts `fleetgate-hub serve` on a fresh database.
    pub async fn start(test: &str) -> Hub {
        Hub::start_on(test, free_port(), &[]).await
    }

    /// Starts `fleetgate-hub serve` on a fresh database, on `http_port`, with
    /// `env` beside the defaults (for a config that must name the hub's own
    /// address, e.g. an identity provider's redirect URI).
    pub async fn start_on(test: &str, http_port: u16, env: &[(&str, &str)]) -> Hub {
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Hub::start_with(test, test_db().await, http_port, env).await
    }

    async fn start_with(test: &str, db: TestDb, http_port: u16, env: Vec<(String, String)>) -> Hub {
        let grpc_port = free_port();
        let child = spawn_hub(&db, http_port, grpc_port, test, &env);
        let hub = Hub {
            child,
            db,
            http_port,
            grpc_port,
            base: format!("http://127.0.0.1:{http_port}"),
            // Every call bounded: a hub that stops answering fails the step that asked.
            http: reqwest::Client::builder()
                .timeout(WAIT)
                .build()
                .expect("HTTP client"),
            env,
        };
        hub.wait_ready().await;
        hub
    }

    /// A hub that signs people in through `idp` (config in `dir`, see
    /// [`OidcProvider::hub_identity_config`] for the roles and `more`).
    pub async fn start_with_sign_in(
        test: &str,
        idp: &OidcProvider,
        dir: &Path,
        more_roles: &[&str],
        more: &str,
    ) -> Hub {
        let http_port = free_port();
        let callback = format!("http://127.0.0.1:{http_port}/auth/callback");
        let config = idp
            .hub_identity_config(dir, &callback, more_roles, more)
            .await;
        let config = config.display().to_string();
        Hub::start_on(
            test,
            http_port,
            &[
                ("FLEETGATE_IDENTITY_CONFIG", &config),
                // The provider runs on loopback over plain http.
                ("FLEETGATE_EGRESS_ALLOW_PRIVATE", "true"),
                ("FLEETGATE_EGRESS_ALLOW_HTTP", "true"),
            ],
        )
        .await
    }

    /// A second replica: another hub process on the same database, with the
    /// same environment.
    pub async fn replica(&self, test: &str) -> Hub {
        Hub::start_with(test, self.db.clone(), free_port(), self.env.clone()).await
    }

    /// Stops the hub (SIGTERM, then waits for it to exit).
    pub async fn stop(&mut self) {
        self.child.terminate();
        let start = Instant::now();
        while self.child.0.try_wait().expect("waiting for hub").is_none() {
            assert!(start.elapsed() < WAIT, "hub did not stop on SIGTERM");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Starts the hub again on the same ports and database.
    pub async fn restart(&mut self, test: &str) {
        self.child = spawn_hub(&self.db, self.http_port, self.grpc_port, test, &self.env);
        self.wait_ready().await;
    }

    async fn wait_ready(&self) {
        let start = Instant::now();
        loop {
            if let Ok(r) = self.http.get(format!("{}/readyz", self.base)).send().await
                && r.status().is_success()
            {
                return;
            }
            assert!(start.elapsed() < WAIT, "hub not ready at {}", self.base);
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// A REST call as `token`; panics on a non-2xx answer.
    pub async fn call(&self, token: &str, method: &str, path: &str, body: Option<Value>) -> Value {
        let url = format!("{}{path}", self.base);
        let mut req = self
            .http
            .request(method.parse().expect("method"), &url)
            .bearer_auth(token);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let res = req
            .send()
            .await
            .unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        let status = res.status();
        let text = res.text().await.unwrap_or_default();
        assert!(status.is_success(), "{method} {path}: {status}: {text}");
        if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).expect("JSON answer")
        }
    }

    /// (status, body) of a REST call as `token` (a bearer: API token or JWT),
    /// whatever the status; the body is `null` where it is not JSON.
    pub async fn request(
        &self,
        token: &str,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let mut req = self
            .http
            .request(
                method.parse().expect("method"),
                format!("{}{path}", self.base),
            )
            .bearer_auth(token);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let r = req
            .send()
            .await
            .unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        let status = r.status().as_u16();
        (status, r.json().await.unwrap_or(Value::Null))
    }

    /// Creates an API token with `role`; returns its secret.
    pub async fn token(&self, name: &str, role: &str) -> String {
        let r = self
            .call(
                ADMIN_TOKEN,
                "POST",
                "/api/v1/tokens",
                Some(json!({"name": name, "role": role})),
            )
            .await;
        r["secret"].as_str().expect("secret").to_string()
    }

    /// Registers a cluster; returns its spoke token.
    pub async fn cluster(&self, name: &str, labels: Value) -> String {
        let r = self
            .call(
                ADMIN_TOKEN,
                "POST",
                "/api/v1/clusters",
                Some(json!({"name": name, "labels": labels})),
            )
            .await;
        r["token"].as_str().expect("spoke token").to_string()
    }

    pub async fn gate(&self, manifest: Value) {
        self.call(ADMIN_TOKEN, "POST", "/api/v1/gates", Some(manifest))
            .await;
    }
}

fn spawn_hub(
    db: &TestDb,
    http_port: u16,
    grpc_port: u16,
    test: &str,
    env: &[(String, String)],
) -> ChildGuard {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(output_dir().join(format!("hub-{test}.log")))
        .expect("hub log file");
    let child = Command::new(bin_path("fleetgate-hub"))
        .arg("serve")
        .env("DATABASE_URL", &db.url)
        .env("FLEETGATE_HTTP_ADDR", format!("127.0.0.1:{http_port}"))
        .env("FLEETGATE_GRPC_ADDR", format!("127.0.0.1:{grpc_port}"))
        .env("FLEETGATE_ADMIN_TOKEN", ADMIN_TOKEN)
        .env("FLEETGATE_REPLICA_ID", format!("dashboard-{test}"))
        // Webhooks to the hub itself (the webhooks page test).
        .env("FLEETGATE_WEBHOOK_ALLOW_PRIVATE", "true")
        .env("FLEETGATE_WEBHOOK_ALLOW_HTTP", "true")
        .env("RUST_LOG", "info")
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("starting fleetgate-hub");
    ChildGuard(child)
}

/// The small fleet most tests use: three clusters, an approval gate closed by
/// default on the two prod clusters, and a fleet-wide Friday freeze.
pub async fn seed_small(hub: &Hub) {
    hub.cluster("prod-eu-1", json!({"env": "prod", "region": "eu"}))
        .await;
    hub.cluster("prod-us-1", json!({"env": "prod", "region": "us"}))
        .await;
    hub.cluster("staging-1", json!({"env": "staging", "region": "eu"}))
        .await;
    hub.gate(json!({
        "apiVersion": "fleetgate.io/v1", "kind": "Gate",
        "metadata": {"name": "sre-approval"},
        "spec": {
            "description": "Production changes only while an SRE has opened the gate.",
            "clusters": {"selector": {"matchLabels": {"env": "prod"}}},
            "targets": {"kinds": ["Kustomization", "HelmRelease"]},
            "default": "closed",
            "timeZone": "Europe/Berlin"
        }
    }))
    .await;
    hub.gate(json!({
        "apiVersion": "fleetgate.io/v1", "kind": "Gate",
        "metadata": {"name": "no-deploy-friday"},
        "spec": {
            "description": "Nothing rolls out from Friday 00:00 until Monday 00:00.",
            "clusters": {"selector": {}},
            "default": "open",
            "timeZone": "Europe/Berlin",
            "windows": [{"name": "weekend", "kind": "deny", "schedule": "0 0 * * FRI", "duration": "72h"}]
        }
    }))
    .await;
}
