//! The hub's REST API as the end-to-end tests call it over HTTP: one bearer
//! token, `/api/v1` paths, JSON in and out, every call bounded.

use std::time::Duration;

use reqwest::Method;
use serde_json::Value;

/// A hub process's REST API, called as one token.
#[derive(Clone)]
pub struct Rest {
    pub http: reqwest::Client,
    /// `http://127.0.0.1:PORT`
    pub base: String,
    token: String,
}

impl Rest {
    /// The API at `base` as `token`; each call may take 30 s at most.
    pub fn new(base: impl Into<String>, token: &str) -> Rest {
        Rest {
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(30))
                .build()
                .expect("HTTP client"),
            base: base.into(),
            token: token.to_owned(),
        }
    }

    /// (status, body) of `METHOD /api/v1{path}`: the body as JSON, or as a
    /// string where it is not JSON.
    pub async fn send(&self, method: Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut req = self
            .http
            .request(method.clone(), format!("{}/api/v1{path}", self.base))
            .bearer_auth(&self.token);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req
            .send()
            .await
            .unwrap_or_else(|e| panic!("{method} {path}: hub not reachable: {e}"));
        let status = resp.status().as_u16();
        let text = resp.text().await.unwrap_or_default();
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    /// The JSON answer of `METHOD /api/v1{path}`, which must be a success.
    pub async fn ok(&self, method: Method, path: &str, body: Option<Value>) -> Value {
        let (status, v) = self.send(method.clone(), path, body).await;
        assert!(
            (200..300).contains(&status),
            "{method} {path}: {status} {v}"
        );
        v
    }

    /// Waits (60 s at most) until the hub's `/readyz` answers 2xx.
    pub async fn wait_ready(&self) {
        crate::poll("hub ready", || async {
            let r = self
                .http
                .get(format!("{}/readyz", self.base))
                .send()
                .await
                .ok()?;
            r.status().is_success().then_some(())
        })
        .await;
    }

    /// Registers cluster `name` with `labels`; its spoke token.
    pub async fn register(&self, name: &str, labels: Value) -> String {
        let body = serde_json::json!({"name": name, "labels": labels});
        let registered = self.ok(Method::POST, "/clusters", Some(body)).await;
        registered["token"]
            .as_str()
            .expect("spoke token")
            .to_owned()
    }

    /// `GET /api/v1{path}` when it succeeds (for polling: None otherwise).
    pub async fn get(&self, path: &str) -> Option<Value> {
        let r = self
            .http
            .get(format!("{}/api/v1{path}", self.base))
            .bearer_auth(&self.token)
            .send()
            .await
            .ok()?;
        r.status().is_success().then_some(())?;
        r.json().await.ok()
    }
}
