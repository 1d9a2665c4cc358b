//! Every call the hub makes to the outside world (webhooks, admission
//! webhooks, calendar feeds, OpenID discovery and JWKS) goes through
//! [`Egress`]: a reqwest client with connect and total timeouts, a response
//! size cap, https only unless plain http is allowed, an optional extra CA
//! bundle, redirects followed only to the same scheme, host and port (and
//! only a few), no proxy from the environment, and a destination check made
//! on the DNS answer that is actually dialled ([`resolver`]): loopback,
//! private (RFC 1918, CGNAT, fc00::/7), link-local (cloud metadata),
//! unspecified, multicast and reserved addresses are refused unless the
//! operator allows private destinations. Link-local and special ranges are
//! never allowed. Why: a hub sits inside the organisation's network with a
//! database behind it; a webhook URL typed by an admin must not turn it into
//! a proxy to the metadata service or internal admin ports (SSRF).
//!
//! ```no_run
//! # async fn f() -> Result<(), fleetgate_hub_adapters::egress::EgressError> {
//! use fleetgate_hub_adapters::egress::{Egress, EgressPolicy};
//! let egress = Egress::new(EgressPolicy::default())?;
//! let req = egress.request(reqwest::Method::GET, "https://example.com/.well-known/openid-configuration")?;
//! let resp = egress.send(req).await?;
//! let body = resp.body_within_cap()?;
//! # Ok(()) }
//! ```

mod destination;
mod error;
mod resolver;
#[cfg(test)]
mod tests;

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use clap::Args;
use reqwest::header::HeaderMap;
use reqwest::{Method, RequestBuilder, StatusCode, Url};

pub use destination::{Refusal, check as check_ip, classify};
use error::RedirectRefused;
pub use error::{DestinationRefused, EgressError};
pub use resolver::CheckingResolver;

/// Defaults of the `--egress-*` flags.
pub mod defaults {
    /// `--egress-connect-timeout`.
    pub const CONNECT_TIMEOUT: &str = "5s";
    /// `--egress-timeout`: the whole exchange, body included.
    pub const TIMEOUT: &str = "15s";
    /// `--egress-max-response-bytes`: 1 MiB.
    pub const MAX_RESPONSE_BYTES: usize = 1024 * 1024;
    /// Redirects followed (same host only) by callers that follow any.
    pub const MAX_REDIRECTS: usize = 3;
}

/// `--egress-*` flags of `fleetgate-hub serve`, shared by every feature
/// that calls out. Features add their own allow flag
/// (e.g. `--webhook-allow-private`) and OR it in with
/// [`EgressPolicy::allow_private`].
#[derive(Debug, Clone, Args)]
pub struct EgressOptions {
    /// Allow outbound calls (webhooks, feeds, identity providers) to
    /// loopback and private addresses (RFC 1918, CGNAT, fc00::/7).
    /// Link-local (cloud metadata) stays refused.
    #[arg(long, env = "FLEETGATE_EGRESS_ALLOW_PRIVATE")]
    pub egress_allow_private: bool,
    /// Allow plain `http://` destinations (default: https only).
    #[arg(long, env = "FLEETGATE_EGRESS_ALLOW_HTTP")]
    pub egress_allow_http: bool,
    /// PEM bundle of extra CA certificates trusted for outbound HTTPS
    /// (beside the built-in web roots).
    #[arg(long, env = "FLEETGATE_EGRESS_CA_BUNDLE")]
    pub egress_ca_bundle: Option<PathBuf>,
    /// Connect timeout of outbound calls (Go-style duration).
    #[arg(long, env = "FLEETGATE_EGRESS_CONNECT_TIMEOUT", default_value = defaults::CONNECT_TIMEOUT, value_parser = crate::options::parse_std_duration)]
    pub egress_connect_timeout: Duration,
    /// Total timeout of one outbound call, response body included.
    #[arg(long, env = "FLEETGATE_EGRESS_TIMEOUT", default_value = defaults::TIMEOUT, value_parser = crate::options::parse_std_duration)]
    pub egress_timeout: Duration,
    /// Largest response body read from an outbound call, in bytes.
    #[arg(long, env = "FLEETGATE_EGRESS_MAX_RESPONSE_BYTES", default_value_t = defaults::MAX_RESPONSE_BYTES)]
    pub egress_max_response_bytes: usize,
}

impl Default for EgressOptions {
    fn default() -> Self {
        let p = EgressPolicy::default();
        Self {
            egress_allow_private: p.allow_private,
            egress_allow_http: p.allow_http,
            egress_ca_bundle: None,
            egress_connect_timeout: p.connect_timeout,
            egress_timeout: p.timeout,
            egress_max_response_bytes: p.max_response_bytes,
        }
    }
}

impl EgressOptions {
    /// The policy these flags describe (reads the CA bundle file).
    pub fn policy(&self) -> Result<EgressPolicy, EgressError> {
        let ca_bundle_pem = match &self.egress_ca_bundle {
            Some(path) => Some(std::fs::read(path).map_err(|e| {
                EgressError::Config(format!("--egress-ca-bundle {}: {e}", path.display()))
            })?),
            None => None,
        };
        Ok(EgressPolicy {
            allow_private: self.egress_allow_private,
            allow_http: self.egress_allow_http,
            ca_bundle_pem,
            connect_timeout: self.egress_connect_timeout,
            timeout: self.egress_timeout,
            max_response_bytes: self.egress_max_response_bytes,
            max_redirects: defaults::MAX_REDIRECTS,
        })
    }
}

/// What one [`Egress`] client may do.
#[derive(Debug, Clone)]
pub struct EgressPolicy {
    /// Loopback and private destinations allowed.
    pub allow_private: bool,
    /// `http://` allowed beside `https://`.
    pub allow_http: bool,
    /// Extra trusted CA certificates (PEM).
    pub ca_bundle_pem: Option<Vec<u8>>,
    pub connect_timeout: Duration,
    pub timeout: Duration,
    /// Response bytes read at most; more marks the response truncated.
    pub max_response_bytes: usize,
    /// Same-host redirects followed; 0 returns the 3xx response as it is
    /// (webhooks count a 3xx as a failed delivery).
    pub max_redirects: usize,
}

impl Default for EgressPolicy {
    fn default() -> Self {
        let d = |s| crate::options::parse_std_duration(s).expect("valid default duration");
        Self {
            allow_private: false,
            allow_http: false,
            ca_bundle_pem: None,
            connect_timeout: d(defaults::CONNECT_TIMEOUT),
            timeout: d(defaults::TIMEOUT),
            max_response_bytes: defaults::MAX_RESPONSE_BYTES,
            max_redirects: defaults::MAX_REDIRECTS,
        }
    }
}

impl EgressPolicy {
    /// Also allow private destinations when `allow` (a feature's own flag).
    pub fn allow_private(mut self, allow: bool) -> Self {
        self.allow_private |= allow;
        self
    }

    /// Also allow plain http when `allow`.
    pub fn allow_http(mut self, allow: bool) -> Self {
        self.allow_http |= allow;
        self
    }

    /// Follow at most `n` same-host redirects (0: none).
    pub fn max_redirects(mut self, n: usize) -> Self {
        self.max_redirects = n;
        self
    }
}

/// The outbound HTTP client. Cheap to clone (the connection pool is shared).
#[derive(Debug, Clone)]
pub struct Egress {
    client: reqwest::Client,
    policy: Arc<EgressPolicy>,
}

/// A response read under the size cap.
#[derive(Debug)]
pub struct EgressResponse {
    pub status: StatusCode,
    pub headers: HeaderMap,
    /// At most `max_response_bytes` of the body.
    pub body: Bytes,
    /// The body was longer than the cap (the rest was not read).
    pub truncated: bool,
    /// From sending the request to the end of the body.
    pub elapsed: Duration,
    /// The address actually connected to.
    pub remote_addr: Option<SocketAddr>,
}

impl EgressResponse {
    /// The whole body, or [`EgressError::TooLarge`] if it was cut.
    pub fn body_within_cap(self) -> Result<Bytes, EgressError> {
        if self.truncated {
            Err(EgressError::TooLarge(self.body.len()))
        } else {
            Ok(self.body)
        }
    }
}

impl Egress {
    /// A client enforcing `policy`.
    pub fn new(policy: EgressPolicy) -> Result<Self, EgressError> {
        let max_redirects = policy.max_redirects;
        let redirect = if max_redirects == 0 {
            reqwest::redirect::Policy::none()
        } else {
            reqwest::redirect::Policy::custom(move |attempt| {
                let Some(first) = attempt.previous().first().cloned() else {
                    return attempt.stop();
                };
                if attempt.previous().len() > max_redirects {
                    let msg = format!("more than {max_redirects} redirects");
                    return attempt.error(RedirectRefused(msg));
                }
                let to = attempt.url();
                if !same_origin(&first, to) {
                    let msg = format!(
                        "{} redirects to another origin ({})",
                        error::shown_url(&first),
                        error::shown_url(to)
                    );
                    return attempt.error(RedirectRefused(msg));
                }
                attempt.follow()
            })
        };
        let mut builder = reqwest::Client::builder()
            .user_agent(concat!("fleetgate-hub/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(policy.connect_timeout)
            .timeout(policy.timeout)
            .redirect(redirect)
            .no_proxy()
            .https_only(!policy.allow_http)
            .dns_resolver(Arc::new(CheckingResolver {
                allow_private: policy.allow_private,
            }));
        if let Some(pem) = &policy.ca_bundle_pem {
            let certs = reqwest::Certificate::from_pem_bundle(pem)
                .map_err(|e| EgressError::Config(format!("CA bundle: {e}")))?;
            if certs.is_empty() {
                return Err(EgressError::Config("CA bundle holds no certificate".into()));
            }
            for cert in certs {
                builder = builder.add_root_certificate(cert);
            }
        }
        let client = builder
            .build()
            .map_err(|e| EgressError::Config(format!("HTTP client: {e}")))?;
        Ok(Self {
            client,
            policy: Arc::new(policy),
        })
    }

    /// The policy this client enforces.
    pub fn policy(&self) -> &EgressPolicy {
        &self.policy
    }

    /// Parses `url` and checks what can be checked without DNS: scheme,
    /// host present, an IP-literal host against the destination rules
    /// (IP literals are never resolved, so the resolver cannot see them).
    pub fn check_url(&self, url: &str) -> Result<Url, EgressError> {
        let url = Url::parse(url).map_err(|e| EgressError::InvalidUrl(e.to_string()))?;
        self.check_parsed(&url)?;
        Ok(url)
    }

    fn check_parsed(&self, url: &Url) -> Result<(), EgressError> {
        match url.scheme() {
            "https" => {}
            "http" if self.policy.allow_http => {}
            other => return Err(EgressError::Scheme(other.to_string())),
        }
        let Some(ip) = literal_ip(url)? else {
            return Ok(());
        };
        destination::check(ip, self.policy.allow_private).map_err(|refusal| {
            EgressError::Refused(DestinationRefused {
                host: ip.to_string(),
                ip,
                refusal,
            })
        })
    }

    /// [`Self::check_url`] plus a DNS lookup now, for early feedback when a
    /// URL is configured: a name resolving to a refused address is refused.
    /// A name that does not resolve yet passes (delivery checks again).
    pub async fn preflight(&self, url: &str) -> Result<Url, EgressError> {
        use reqwest::dns::Resolve;
        let parsed = self.check_url(url)?;
        if literal_ip(&parsed)?.is_none()
            && let Some(Ok(name)) = parsed.host_str().map(str::parse)
        {
            let resolver = CheckingResolver {
                allow_private: self.policy.allow_private,
            };
            if let Err(e) = resolver.resolve(name).await
                && let Some(refused) = e.downcast_ref::<DestinationRefused>()
            {
                return Err(EgressError::Refused(refused.clone()));
            }
        }
        Ok(parsed)
    }

    /// A request to `url` after [`Self::check_url`].
    pub fn request(&self, method: Method, url: &str) -> Result<RequestBuilder, EgressError> {
        let url = self.check_url(url)?;
        Ok(self.client.request(method, url))
    }

    /// Sends the request and reads at most `max_response_bytes` of the body.
    pub async fn send(&self, request: RequestBuilder) -> Result<EgressResponse, EgressError> {
        self.send_within(request, self.policy.max_response_bytes)
            .await
    }

    /// Sends the request and reads at most `limit` bytes of the body (never more than
    /// `max_response_bytes`): reading stops at the first byte past it (`truncated`), so an
    /// answer with a smaller budget than the shared cap is refused as soon as it is over its
    /// own, not after the cap was read or the time ran out.
    pub async fn send_within(
        &self,
        request: RequestBuilder,
        limit: usize,
    ) -> Result<EgressResponse, EgressError> {
        let request = request
            .build()
            .map_err(|e| EgressError::InvalidUrl(e.to_string()))?;
        // Built elsewhere? Check again: the URL is what decides.
        self.check_parsed(request.url())?;
        let start = Instant::now();
        let mut resp = self
            .client
            .execute(request)
            .await
            .map_err(EgressError::from_reqwest)?;
        let status = resp.status();
        let headers = resp.headers().clone();
        let remote_addr = resp.remote_addr();
        let cap = limit.min(self.policy.max_response_bytes);
        let mut body = BytesMut::new();
        let mut truncated = false;
        while let Some(chunk) = resp.chunk().await.map_err(EgressError::from_reqwest)? {
            let room = cap - body.len();
            if chunk.len() > room {
                body.extend_from_slice(&chunk[..room]);
                truncated = true;
                break;
            }
            body.extend_from_slice(&chunk);
        }
        Ok(EgressResponse {
            status,
            headers,
            body: body.freeze(),
            truncated,
            elapsed: start.elapsed(),
            remote_addr,
        })
    }
}

/// The URL's host if it is an IP literal (the URL parser has normalised
/// forms like `0x7f.1` to dotted quads), `None` for a domain name.
fn literal_ip(url: &Url) -> Result<Option<IpAddr>, EgressError> {
    let host = url
        .host_str()
        .filter(|h| !h.is_empty())
        .ok_or_else(|| EgressError::InvalidUrl("no host".into()))?;
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    Ok(bare.parse().ok())
}

/// Scheme, host and port equal (a redirect may change only path and query).
fn same_origin(a: &Url, b: &Url) -> bool {
    a.scheme() == b.scheme()
        && a.host_str() == b.host_str()
        && a.port_or_known_default() == b.port_or_known_default()
}
