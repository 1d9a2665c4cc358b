//! The identity module's calls to providers (discovery, JWKS, token and
//! device endpoints): JSON answers with a timeout, a size cap and no
//! redirects. Interim until the shared `crate::egress` module lands, which
//! adds the destination checks; callers only see [`Outbound`].

use std::time::Duration;

use serde::de::DeserializeOwned;

/// Largest provider answer read (a JWKS with many keys is a few KiB).
const MAX_BODY: usize = 512 * 1024;
/// Whole-exchange timeout of one call.
const TIMEOUT: Duration = Duration::from_secs(10);

/// Why a call to a provider failed, in words for the person waiting on it.
#[derive(Debug, thiserror::Error)]
pub enum OutboundError {
    #[error("{url}: {message}")]
    Transport { url: String, message: String },
    /// The provider answered with an error status; `body` is its (OAuth) error JSON if any.
    #[error("{url}: HTTP {status}{}", .error.as_ref().map(|e| format!(": {e}")).unwrap_or_default())]
    Status {
        url: String,
        status: u16,
        error: Option<String>,
    },
}

impl OutboundError {
    /// The OAuth `error` code of an error answer (`authorization_pending`, ...).
    pub fn oauth_error(&self) -> Option<&str> {
        match self {
            Self::Status { error, .. } => error.as_deref(),
            Self::Transport { .. } => None,
        }
    }
}

/// An HTTP client for providers. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Outbound {
    client: reqwest::Client,
}

impl Outbound {
    pub fn new() -> Self {
        let client = reqwest::Client::builder()
            .timeout(TIMEOUT)
            .connect_timeout(Duration::from_secs(5))
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .build()
            .expect("a client without custom TLS settings builds");
        Self { client }
    }

    /// GET `url` as JSON.
    pub async fn get_json<T: DeserializeOwned>(&self, url: &str) -> Result<T, OutboundError> {
        let req = self.client.get(url).header("accept", "application/json");
        self.json(url, req).await
    }

    /// POST a form to `url`, optionally with HTTP Basic client credentials.
    pub async fn post_form<T: DeserializeOwned>(
        &self,
        url: &str,
        form: &[(&str, &str)],
        basic: Option<(&str, &str)>,
    ) -> Result<T, OutboundError> {
        let body = form
            .iter()
            .map(|(k, v)| format!("{}={}", enc(k), enc(v)))
            .collect::<Vec<_>>()
            .join("&");
        let mut req = self
            .client
            .post(url)
            .header("accept", "application/json")
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body);
        if let Some((user, pass)) = basic {
            // RFC 6749 2.3.1: the id and secret are form-encoded first.
            req = req.basic_auth(enc(user), Some(enc(pass)));
        }
        self.json(url, req).await
    }

    async fn json<T: DeserializeOwned>(
        &self,
        url: &str,
        req: reqwest::RequestBuilder,
    ) -> Result<T, OutboundError> {
        let transport = |message: String| OutboundError::Transport {
            url: url.to_string(),
            message,
        };
        let mut resp = req.send().await.map_err(|e| transport(describe(&e)))?;
        let status = resp.status();
        let mut body = Vec::new();
        while let Some(chunk) = resp.chunk().await.map_err(|e| transport(describe(&e)))? {
            if body.len() + chunk.len() > MAX_BODY {
                return Err(transport(format!("answer larger than {MAX_BODY} bytes")));
            }
            body.extend_from_slice(&chunk);
        }
        if !status.is_success() {
            let error = serde_json::from_slice::<serde_json::Value>(&body)
                .ok()
                .and_then(|v| v.get("error").and_then(|e| e.as_str()).map(String::from));
            return Err(OutboundError::Status {
                url: url.to_string(),
                status: status.as_u16(),
                error,
            });
        }
        serde_json::from_slice(&body).map_err(|e| transport(format!("malformed JSON: {e}")))
    }
}

impl Default for Outbound {
    fn default() -> Self {
        Self::new()
    }
}

fn describe(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        "timed out".into()
    } else if e.is_connect() {
        "cannot connect".into()
    } else {
        e.to_string()
    }
}

/// `application/x-www-form-urlencoded` encoding of one value.
pub fn enc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                out.push(b as char);
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}
