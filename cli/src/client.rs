//! A small REST client for the hub's `/api/v1`: Bearer auth, JSON in and
//! out, the hub's error body mapped to [`Error::Api`], and cursor paging.

use fleetgate_api_types::{ErrorBody, Page};
use reqwest::{Method, StatusCode};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::config::Connection;
use crate::error::{Error, Result};

#[derive(Debug, Clone)]
pub struct Client {
    http: reqwest::Client,
    conn: Connection,
}

/// A successful response: its body and ETag.
#[derive(Debug)]
pub struct Response<T> {
    pub body: T,
    pub etag: Option<String>,
}

/// No request body.
const NO_BODY: Option<&()> = None;

impl Client {
    pub fn new(conn: Connection) -> Result<Self> {
        let http = reqwest::Client::builder()
            .timeout(conn.timeout)
            .user_agent(concat!("fleetgate-cli/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| Error::Other(format!("building the HTTP client: {e}")))?;
        Ok(Client { http, conn })
    }

    pub async fn get<T: DeserializeOwned>(
        &self,
        path: &str,
        query: &[(&str, String)],
    ) -> Result<T> {
        Ok(self
            .send(Method::GET, path, query, NO_BODY, None)
            .await?
            .body)
    }

    pub async fn get_full<T: DeserializeOwned>(&self, path: &str) -> Result<Response<T>> {
        self.send(Method::GET, path, &[], NO_BODY, None).await
    }

    pub async fn post<B: Serialize, T: DeserializeOwned>(
        &self,
        path: &str,
        query: &[(&str, String)],
        body: &B,
    ) -> Result<T> {
        Ok(self
            .send(Method::POST, path, query, Some(body), None)
            .await?
            .body)
    }

    pub async fn put<B: Serialize, T: DeserializeOwned>(
        &self,
        path: &str,
        query: &[(&str, String)],
        body: &B,
        if_match: Option<&str>,
    ) -> Result<T> {
        Ok(self
            .send(Method::PUT, path, query, Some(body), if_match)
            .await?
            .body)
    }

    /// DELETE; the answer is `T` (`()` for 204 No Content).
    pub async fn delete<T: DeserializeOwned>(
        &self,
        path: &str,
        query: &[(&str, String)],
    ) -> Result<T> {
        Ok(self
            .send(Method::DELETE, path, query, NO_BODY, None)
            .await?
            .body)
    }

    /// Follows `nextCursor` until `limit` items (or all when None) are read.
    pub async fn list<T: DeserializeOwned>(
        &self,
        path: &str,
        query: &[(&str, String)],
        limit: Option<usize>,
    ) -> Result<Vec<T>> {
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
            let page: Page<T> = self.get(path, &q).await?;
            let empty = page.items.is_empty();
            items.extend(page.items);
            if let Some(l) = limit
                && items.len() >= l
            {
                items.truncate(l);
                break;
            }
            match page.next_cursor {
                Some(n) if !empty && !n.is_empty() => cursor = Some(n),
                _ => break,
            }
        }
        Ok(items)
    }

    async fn send<B: Serialize, T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, String)],
        body: Option<&B>,
        if_match: Option<&str>,
    ) -> Result<Response<T>> {
        let url = format!("{}/api/v1{path}", self.conn.hub);
        let mut req = self.http.request(method.clone(), &url);
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
        if !status.is_success() {
            return Err(api_error(status, &bytes));
        }
        // An empty body (204) reads as JSON null, which `()` and `Option` accept.
        let json: &[u8] = if bytes.is_empty() { b"null" } else { &bytes };
        let body = serde_json::from_slice(json).map_err(|e| {
            Error::Other(format!(
                "the hub's answer to {method} {path} is not what this CLI expects: {e}"
            ))
        })?;
        Ok(Response { body, etag })
    }
}

/// Maps the hub's `{"error": {"code", "message", "field"}}` body (or any
/// other body) to an error carrying the HTTP status.
fn api_error(status: StatusCode, raw: &[u8]) -> Error {
    let detail = serde_json::from_slice::<ErrorBody>(raw)
        .ok()
        .map(|b| b.error);
    let reason = status.canonical_reason();
    let message = match &detail {
        Some(d) => d.message.clone(),
        None => {
            let raw = String::from_utf8_lossy(raw).trim().to_string();
            if raw.is_empty() {
                reason.unwrap_or("request failed").to_string()
            } else {
                raw.chars().take(500).collect()
            }
        }
    };
    Error::Api {
        status: status.as_u16(),
        code: match &detail {
            Some(d) => d.code.clone(),
            None => reason.unwrap_or("error").to_lowercase().replace(' ', "_"),
        },
        message,
        field: detail.and_then(|d| d.field),
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
