//! A small REST client for the hub's `/api/v1`: Bearer auth, JSON in and
//! out, the hub's error body mapped to [`Error::Api`], and cursor paging.

use reqwest::{Method, StatusCode};
use serde_json::Value;

use crate::config::Connection;
use crate::error::{Error, Result};

#[derive(Debug, Clone)]
pub struct Client {
    http: reqwest::Client,
    conn: Connection,
}

/// A successful response: its JSON body (Null when empty) and ETag.
#[derive(Debug)]
pub struct Response {
    pub body: Value,
    pub etag: Option<String>,
}

impl Client {
    pub fn new(conn: Connection) -> Result<Self> {
        let http = reqwest::Client::builder()
            .timeout(conn.timeout)
            .user_agent(concat!("fleetgate-cli/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| Error::Other(format!("building the HTTP client: {e}")))?;
        Ok(Client { http, conn })
    }

    pub async fn get(&self, path: &str, query: &[(&str, String)]) -> Result<Value> {
        Ok(self.send(Method::GET, path, query, None, None).await?.body)
    }

    pub async fn get_full(&self, path: &str) -> Result<Response> {
        self.send(Method::GET, path, &[], None, None).await
    }

    pub async fn post(&self, path: &str, query: &[(&str, String)], body: &Value) -> Result<Value> {
        Ok(self
            .send(Method::POST, path, query, Some(body), None)
            .await?
            .body)
    }

    pub async fn put(
        &self,
        path: &str,
        query: &[(&str, String)],
        body: &Value,
        if_match: Option<&str>,
    ) -> Result<Value> {
        Ok(self
            .send(Method::PUT, path, query, Some(body), if_match)
            .await?
            .body)
    }

    pub async fn delete(&self, path: &str, query: &[(&str, String)]) -> Result<Value> {
        Ok(self
            .send(Method::DELETE, path, query, None, None)
            .await?
            .body)
    }

    /// Follows `nextCursor` until `limit` items (or all when None) are read.
    /// Accepts both `{"items": [...]}` pages and a bare array.
    pub async fn list(
        &self,
        path: &str,
        query: &[(&str, String)],
        limit: Option<usize>,
    ) -> Result<Vec<Value>> {
        let mut items = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let mut q: Vec<(&str, String)> = query.to_vec();
            if let Some(c) = &cursor {
                q.push(("cursor", c.clone()));
            }
            if let Some(l) = limit {
                q.push(("limit", (l - items.len()).min(500).to_string()));
            }
            let page = self.get(path, &q).await?;
            let (page_items, next) = match page {
                Value::Array(a) => (a, None),
                Value::Object(mut o) => {
                    let its = match o.remove("items") {
                        Some(Value::Array(a)) => a,
                        _ => Vec::new(),
                    };
                    let next = o
                        .remove("nextCursor")
                        .or_else(|| o.remove("next_cursor"))
                        .and_then(|v| v.as_str().map(String::from));
                    (its, next)
                }
                _ => (Vec::new(), None),
            };
            let empty = page_items.is_empty();
            items.extend(page_items);
            if let Some(l) = limit
                && items.len() >= l
            {
                items.truncate(l);
                break;
            }
            match next {
                Some(n) if !empty && !n.is_empty() => cursor = Some(n),
                _ => break,
            }
        }
        Ok(items)
    }

    async fn send(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, String)],
        body: Option<&Value>,
        if_match: Option<&str>,
    ) -> Result<Response> {
        let url = format!("{}/api/v1{path}", self.conn.hub);
        let mut req = self.http.request(method, &url);
        if !query.is_empty() {
            req = req.query(query);
        }
        if let Some(t) = &self.conn.token {
            req = req.bearer_auth(t);
        }
        if let Some(b) = body {
            req = req.json(b);
        }
        if let Some(m) = if_match {
            req = req.header(reqwest::header::IF_MATCH, m);
        }
        let resp = req.send().await.map_err(|e| Error::Unreachable {
            hub: self.conn.hub.clone(),
            message: error_chain(&e),
        })?;
        let status = resp.status();
        let etag = resp
            .headers()
            .get(reqwest::header::ETAG)
            .and_then(|v| v.to_str().ok())
            .map(String::from);
        let bytes = resp.bytes().await.map_err(|e| Error::Unreachable {
            hub: self.conn.hub.clone(),
            message: error_chain(&e),
        })?;
        let json: Option<Value> = if bytes.is_empty() {
            None
        } else {
            serde_json::from_slice(&bytes).ok()
        };
        if status.is_success() {
            return Ok(Response {
                body: json.unwrap_or(Value::Null),
                etag,
            });
        }
        Err(api_error(status, json, &bytes))
    }
}

/// Maps the hub's `{"error": {"code", "message", "field"}}` body (or any
/// other body) to an error carrying the HTTP status.
fn api_error(status: StatusCode, json: Option<Value>, raw: &[u8]) -> Error {
    let err = json.as_ref().and_then(|j| j.get("error"));
    let text = |k: &str| {
        err.and_then(|e| e.get(k))
            .and_then(|v| v.as_str())
            .map(String::from)
    };
    let message = text("message").unwrap_or_else(|| {
        let raw = String::from_utf8_lossy(raw).trim().to_string();
        if raw.is_empty() {
            status
                .canonical_reason()
                .unwrap_or("request failed")
                .to_string()
        } else {
            raw.chars().take(500).collect()
        }
    });
    Error::Api {
        status: status.as_u16(),
        code: text("code").unwrap_or_else(|| {
            status
                .canonical_reason()
                .unwrap_or("error")
                .to_lowercase()
                .replace(' ', "_")
        }),
        message,
        field: text("field"),
    }
}

/// reqwest's Display hides the cause ("error sending request"); show it.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let m = c.to_string();
        if !s.contains(&m) {
            s.push_str(": ");
            s.push_str(&m);
        }
        cur = c.source();
    }
    s
}

/// `?reason=...` for writes (recorded in the audit log), or nothing.
pub fn reason(reason: &Option<String>) -> Vec<(&'static str, String)> {
    reason
        .iter()
        .filter(|r| !r.trim().is_empty())
        .map(|r| ("reason", r.clone()))
        .collect()
}

/// Percent-encodes one path segment (names are DNS labels, but be safe).
pub fn seg(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
