//! The identity module's calls to providers (discovery, JWKS, token
//! endpoint): JSON over the hub's one outbound client, [`crate::egress`]
//! (timeouts, each answer read no further than its own size budget, same-host redirects only, private destinations
//! refused unless `--egress-allow-private`, https unless `--egress-allow-http`).

use fleetgate_policy::budgets::{
    DISCOVERY_MAX_BYTES, IDENTITY_ANSWER_MAX_TIME, JWKS_MAX_BYTES, TOKEN_ANSWER_MAX_BYTES,
};
use serde::de::DeserializeOwned;

use crate::egress::{Egress, EgressError, EgressPolicy};

/// The size budget of one kind of provider answer (`fleetgate_policy::budgets`); every answer
/// also has the time budget [`IDENTITY_ANSWER_MAX_TIME`] (or `--egress-timeout` if shorter).
/// An answer over either is not used: no keys replaced, no sign-in.
#[derive(Debug, Clone, Copy)]
pub struct AnswerBudget {
    /// What the answer is, for the error.
    pub what: &'static str,
    pub max_bytes: usize,
}

impl AnswerBudget {
    /// `/.well-known/openid-configuration`.
    pub const DISCOVERY: Self = Self {
        what: "a discovery document",
        max_bytes: DISCOVERY_MAX_BYTES,
    };
    /// A provider's key set.
    pub const JWKS: Self = Self {
        what: "a JWKS",
        max_bytes: JWKS_MAX_BYTES,
    };
    /// The token endpoint's answer.
    pub const TOKEN: Self = Self {
        what: "a token endpoint answer",
        max_bytes: TOKEN_ANSWER_MAX_BYTES,
    };
}

/// Why a call to a provider failed, in words for the person waiting on it.
#[derive(Debug, thiserror::Error)]
pub enum OutboundError {
    #[error("{url}: {message}")]
    Transport { url: String, message: String },
    /// The provider answered with an error status and its OAuth `error`, if any.
    #[error("{url}: HTTP {status}{}", .error.as_ref().map(|e| format!(": {e}")).unwrap_or_default())]
    Status {
        url: String,
        status: u16,
        error: Option<String>,
    },
}

impl OutboundError {
    /// The provider's `invalid_grant` (RFC 6749 5.2): the grant or refresh
    /// token is invalid, expired or revoked.
    pub fn is_invalid_grant(&self) -> bool {
        matches!(self, OutboundError::Status { status: 400, error: Some(e), .. } if e == "invalid_grant")
    }
}

/// An HTTP client for providers. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Outbound {
    egress: Egress,
}

impl Outbound {
    /// A client with `policy` (the `--egress-*` flags).
    pub fn new(policy: EgressPolicy) -> Result<Self, EgressError> {
        Ok(Self {
            egress: Egress::new(policy)?,
        })
    }

    /// GET `url` as JSON, within `budget`.
    pub async fn get_json<T: DeserializeOwned>(
        &self,
        url: &str,
        budget: AnswerBudget,
    ) -> Result<T, OutboundError> {
        let req = self
            .egress
            .request(reqwest::Method::GET, url)
            .map_err(|e| transport(url, &e))?
            .header("accept", "application/json");
        self.json(url, req, budget).await
    }

    /// POST a form to `url`, optionally with HTTP Basic client credentials, within `budget`.
    pub async fn post_form<T: DeserializeOwned>(
        &self,
        url: &str,
        form: &[(&str, &str)],
        basic: Option<(&str, &str)>,
        budget: AnswerBudget,
    ) -> Result<T, OutboundError> {
        let body = form
            .iter()
            .map(|(k, v)| format!("{}={}", enc(k), enc(v)))
            .collect::<Vec<_>>()
            .join("&");
        let mut req = self
            .egress
            .request(reqwest::Method::POST, url)
            .map_err(|e| transport(url, &e))?
            .header("accept", "application/json")
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body);
        if let Some((user, pass)) = basic {
            // RFC 6749 2.3.1: the id and secret are form-encoded first.
            req = req.basic_auth(enc(user), Some(enc(pass)));
        }
        self.json(url, req, budget).await
    }

    async fn json<T: DeserializeOwned>(
        &self,
        url: &str,
        req: reqwest::RequestBuilder,
        budget: AnswerBudget,
    ) -> Result<T, OutboundError> {
        let policy = self.egress.policy();
        let req = req.timeout(policy.timeout.min(IDENTITY_ANSWER_MAX_TIME));
        let max_bytes = budget.max_bytes.min(policy.max_response_bytes);
        // Read no further than the budget: a provider sending more is refused at once.
        let resp = self
            .egress
            .send_within(req, max_bytes)
            .await
            .map_err(|e| transport(url, &e))?;
        if resp.truncated || resp.body.len() > max_bytes {
            return Err(OutboundError::Transport {
                url: url.to_string(),
                message: format!(
                    "the answer is larger than the budget of {max_bytes} bytes for {}",
                    budget.what
                ),
            });
        }
        let status = resp.status;
        let body = resp.body;
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
        serde_json::from_slice(&body).map_err(|e| OutboundError::Transport {
            url: url.to_string(),
            message: format!("malformed JSON: {e}"),
        })
    }
}

fn transport(url: &str, e: &EgressError) -> OutboundError {
    OutboundError::Transport {
        url: url.to_string(),
        message: e.to_string(),
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
