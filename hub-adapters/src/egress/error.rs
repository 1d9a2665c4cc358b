//! What can go wrong on an outbound call, sorted so callers can tell a
//! refused destination (configuration) from a receiver that is down.

use std::net::IpAddr;

use super::destination::Refusal;

/// A destination address outside what the policy allows.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{host} resolves to {ip}, a {} address, which is refused ({})", refusal.describe(), refusal.remedy())]
pub struct DestinationRefused {
    pub host: String,
    pub ip: IpAddr,
    pub refusal: Refusal,
}

/// An outbound call's failure.
#[derive(Debug, thiserror::Error)]
pub enum EgressError {
    /// The URL does not parse, has no host, or has credentials in it.
    #[error("invalid URL: {0}")]
    InvalidUrl(String),
    /// `http://` where only `https://` is allowed, or another scheme.
    #[error("scheme '{0}' is not allowed (https only; plain http needs the allow-http flag)")]
    Scheme(String),
    /// The destination address is refused.
    #[error(transparent)]
    Refused(#[from] DestinationRefused),
    /// The connect or the whole exchange took longer than allowed.
    #[error("timed out")]
    Timeout,
    /// A redirect to another host, or too many redirects.
    #[error("redirect refused: {0}")]
    Redirect(String),
    /// The response body is larger than the cap.
    #[error("response body larger than {0} bytes")]
    TooLarge(usize),
    /// The client could not be built (bad CA bundle).
    #[error("egress configuration: {0}")]
    Config(String),
    /// Connection, TLS or protocol failure.
    #[error("{0}")]
    Transport(String),
}

impl EgressError {
    /// A short label for metrics and attempt records.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::InvalidUrl(_) => "invalid_url",
            Self::Scheme(_) => "scheme",
            Self::Refused(_) => "refused",
            Self::Timeout => "timeout",
            Self::Redirect(_) => "redirect",
            Self::TooLarge(_) => "too_large",
            Self::Config(_) => "config",
            Self::Transport(_) => "transport",
        }
    }

    /// True when retrying cannot help until the configuration changes.
    pub fn is_permanent(&self) -> bool {
        matches!(
            self,
            Self::InvalidUrl(_) | Self::Scheme(_) | Self::Refused(_) | Self::Config(_)
        )
    }

    /// Sorts a reqwest error: our own refusal travels inside its source chain. The message
    /// names the URL without credentials or query ([`shown_url`]): it is recorded where
    /// people read it (a feed's last error, a webhook attempt), and feeds and webhooks often
    /// carry their access key in the URL.
    pub(super) fn from_reqwest(e: reqwest::Error) -> Self {
        let shown = e.url().map(shown_url);
        let e = e.without_url();
        let named = |msg: String| match &shown {
            Some(url) => format!("{msg} (url: {url})"),
            None => msg,
        };
        let mut source: Option<&(dyn std::error::Error + 'static)> = Some(&e);
        while let Some(err) = source {
            if let Some(refused) = err.downcast_ref::<DestinationRefused>() {
                return Self::Refused(refused.clone());
            }
            if let Some(redirect) = err.downcast_ref::<RedirectRefused>() {
                return Self::Redirect(redirect.0.clone());
            }
            source = err.source();
        }
        if e.is_timeout() {
            Self::Timeout
        } else if e.is_redirect() {
            Self::Redirect(named(e.to_string()))
        } else {
            // The chain names the cause ("connection refused", a TLS alert).
            let mut msg = e.to_string();
            let mut source = std::error::Error::source(&e);
            while let Some(err) = source {
                msg.push_str(": ");
                msg.push_str(&err.to_string());
                source = err.source();
            }
            Self::Transport(named(msg))
        }
    }
}

/// `url` as errors and logs show it: without user, password, query or fragment (the
/// notifications' [`display_url`](crate::notify::calendars::display_url)).
pub(super) fn shown_url(url: &reqwest::Url) -> String {
    crate::notify::calendars::display_url(url.as_str())
}

/// Raised inside the redirect policy.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(super) struct RedirectRefused(pub String);
