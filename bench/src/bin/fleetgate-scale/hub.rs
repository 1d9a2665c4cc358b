//! The hub under measurement: `fleetgate-hub serve` as a process on a throwaway PostgreSQL,
//! with plain-http loopback webhooks allowed (the receivers are local).

use std::path::{Path, PathBuf};
use std::process::Stdio;

use fleetgate_tests::{ChildGuard, TestDb, free_port, hub_serve_with, test_db, wait_readyz};
use serde_json::Value;

use crate::common::{ADMIN, Result};

/// `fleetgate-hub` beside this executable, built first (same profile) when run by cargo.
pub fn hub_binary() -> Result<PathBuf> {
    let exe = std::env::current_exe()?;
    let mut dir = exe.parent().ok_or("no directory")?.to_path_buf();
    if dir.file_name().is_some_and(|n| n == "deps") {
        dir.pop();
    }
    if let Ok(cargo) = std::env::var("CARGO") {
        let mut cmd = std::process::Command::new(cargo);
        cmd.args(["build", "-p", "fleetgate-hub", "--bin", "fleetgate-hub"]);
        if dir.file_name().is_some_and(|n| n == "release") {
            cmd.arg("--release");
        }
        if !cmd.status()?.success() {
            return Err("building fleetgate-hub failed".into());
        }
    }
    let hub = dir.join("fleetgate-hub");
    if !hub.exists() {
        return Err(format!("{} not found: cargo build -p fleetgate-hub", hub.display()).into());
    }
    Ok(hub)
}

/// A running hub with its database.
pub struct Hub {
    /// The database, owned (and dropped) by the first hub started on it.
    _db: Option<TestDb>,
    pub url: String,
    pub base: String,
    pub grpc: u16,
    pub http: reqwest::Client,
    _child: ChildGuard,
}

impl Hub {
    pub async fn start(bin: &Path) -> Result<Hub> {
        let db = test_db().await;
        let url = db.url.clone();
        Self::serve(bin, Some(db), url).await
    }

    /// Another hub process (`bin`, e.g. an older build to compare with) serving this hub's
    /// database, as a second replica does.
    pub async fn beside(&self, bin: &Path) -> Result<Hub> {
        Self::serve(bin, None, self.url.clone()).await
    }

    async fn serve(bin: &Path, db: Option<TestDb>, url: String) -> Result<Hub> {
        let (http_port, grpc) = (free_port(), free_port());
        let mut cmd = hub_serve_with(bin, &url, http_port, grpc, ADMIN);
        cmd.args([
            "--webhook-allow-private",
            "--webhook-allow-http",
            "--webhook-poll",
            "100ms",
        ])
        .stderr(Stdio::null());
        let mut child = ChildGuard(cmd.spawn()?);
        let http = reqwest::Client::builder()
            .timeout(std::time::Duration::from_secs(120))
            .build()?;
        let base = format!("http://127.0.0.1:{http_port}");
        wait_readyz(&http, &base, 200, &mut child).await;
        Ok(Hub {
            _db: db,
            url,
            base,
            grpc,
            http,
            _child: child,
        })
    }

    /// A REST call as `token`; the JSON answer, or an error naming the call and status.
    pub async fn call(
        &self,
        token: &str,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<Value> {
        let mut req = self
            .http
            .request(method.clone(), format!("{}{path}", self.base))
            .bearer_auth(token);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let res = req.send().await?;
        let status = res.status();
        let text = res.text().await?;
        if !status.is_success() {
            return Err(format!("{method} {path}: {status}: {text}").into());
        }
        Ok(if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text)?
        })
    }

    pub async fn post(&self, path: &str, body: Value) -> Result<Value> {
        self.call(ADMIN, reqwest::Method::POST, path, Some(body))
            .await
    }

    pub async fn pool(&self) -> Result<sqlx::PgPool> {
        Ok(sqlx::PgPool::connect(&self.url).await?)
    }
}
