//! `fleetgate login`: signs in through the hub's OpenID provider with the
//! device authorization grant (RFC 8628), or, where the provider has no
//! device endpoint, a loopback redirect with PKCE (RFC 8252, like kubelogin
//! and `argocd login --sso`). The ID token is then the bearer token for that
//! hub. Tokens are stored per hub in `credentials.json` beside the config
//! file, readable by the owner only (0600), and refreshed before they expire.

use std::collections::BTreeMap;
use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
use std::path::PathBuf;
use std::time::Duration;

use chrono::{DateTime, Utc};
use fleetgate_api_types::AuthConfig;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Stored tokens of one hub.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Stored {
    pub issuer: String,
    pub client_id: String,
    pub id_token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    pub expires_at: DateTime<Utc>,
}

#[derive(Debug, Deserialize)]
struct Metadata {
    #[serde(default)]
    authorization_endpoint: Option<String>,
    token_endpoint: String,
    #[serde(default)]
    device_authorization_endpoint: Option<String>,
    #[serde(default)]
    revocation_endpoint: Option<String>,
}

#[derive(Debug, Deserialize)]
struct DeviceAuth {
    device_code: String,
    user_code: String,
    verification_uri: String,
    #[serde(default)]
    verification_uri_complete: Option<String>,
    #[serde(default)]
    expires_in: Option<u64>,
    #[serde(default)]
    interval: Option<u64>,
}

#[derive(Debug, Deserialize)]
struct Tokens {
    #[serde(default)]
    id_token: Option<String>,
    #[serde(default)]
    refresh_token: Option<String>,
}

/// The credentials file: `$XDG_CONFIG_HOME/fleetgate/credentials.json`.
pub fn credentials_path() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(base.join("fleetgate").join("credentials.json"))
}

fn load_all() -> BTreeMap<String, Stored> {
    credentials_path()
        .and_then(|p| std::fs::read_to_string(p).ok())
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default()
}

fn save_all(all: &BTreeMap<String, Stored>) -> Result<()> {
    let path =
        credentials_path().ok_or_else(|| Error::Other("no HOME to store credentials in".into()))?;
    let dir = path.parent().expect("a file in a directory");
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir.display(), e))?;
    let tmp = path.with_extension("json.tmp");
    let text = serde_json::to_string_pretty(all).map_err(|e| Error::Other(e.to_string()))?;
    {
        use std::io::Write as _;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)
            .map_err(|e| Error::io(tmp.display(), e))?;
        // Also when the file existed with wider permissions.
        f.set_permissions(std::fs::Permissions::from_mode(0o600))
            .map_err(|e| Error::io(tmp.display(), e))?;
        f.write_all(text.as_bytes())
            .map_err(|e| Error::io(tmp.display(), e))?;
    }
    std::fs::rename(&tmp, &path).map_err(|e| Error::io(path.display(), e))
}

fn http(timeout: Duration) -> Result<reqwest::Client> {
    reqwest::Client::builder()
        .timeout(timeout)
        .user_agent(concat!("fleetgate-cli/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| Error::Other(format!("building the HTTP client: {e}")))
}

/// Who answers a request: the hub, or its identity provider (named for the message).
#[derive(Clone, Copy)]
enum Peer<'a> {
    Hub,
    Provider(&'a str),
}

impl Peer<'_> {
    /// The error for `url` not answering (or, from the provider, answering 5xx).
    fn unreachable(self, url: &str, message: String) -> Error {
        match self {
            Peer::Hub => Error::Unreachable {
                hub: url.to_string(),
                message,
            },
            Peer::Provider(name) => Error::ProviderUnreachable {
                provider: name.to_string(),
                url: url.to_string(),
                message,
            },
        }
    }
}

async fn get_json<T: DeserializeOwned>(
    http: &reqwest::Client,
    url: &str,
    peer: Peer<'_>,
) -> Result<T> {
    let r = http
        .get(url)
        .send()
        .await
        .map_err(|e| peer.unreachable(url, e.to_string()))?;
    let status = r.status();
    if status.is_server_error() && matches!(peer, Peer::Provider(_)) {
        return Err(peer.unreachable(url, format!("HTTP {status}")));
    }
    if !status.is_success() {
        return Err(Error::Other(format!("{url}: HTTP {status}")));
    }
    r.json()
        .await
        .map_err(|e| Error::Other(format!("{url}: {e}")))
}

/// POSTs a form to the provider; `Err(Ok(code))` is an OAuth error answer.
async fn post_form<T: DeserializeOwned>(
    http: &reqwest::Client,
    url: &str,
    form: &[(&str, &str)],
) -> Result<std::result::Result<T, String>> {
    let r = http
        .post(url)
        .header("accept", "application/json")
        .form(form)
        .send()
        .await
        .map_err(|e| Peer::Provider("").unreachable(url, e.to_string()))?;
    let status = r.status();
    let v: serde_json::Value = r
        .json()
        .await
        .map_err(|e| Error::Other(format!("{url}: {e}")))?;
    if status.is_success() {
        return serde_json::from_value(v)
            .map(Ok)
            .map_err(|e| Error::Other(format!("{url}: {e}")));
    }
    Ok(Err(v["error"].as_str().unwrap_or("error").to_string()))
}

/// The provider's discovery document; `name` (its display name, may be empty) is for the
/// error when the provider cannot be reached.
async fn metadata(http: &reqwest::Client, issuer: &str, name: &str) -> Result<Metadata> {
    get_json(
        http,
        &format!(
            "{}/.well-known/openid-configuration",
            issuer.trim_end_matches('/')
        ),
        Peer::Provider(name),
    )
    .await
}

/// The `exp` of a JWT (not verified: the hub verifies; this only schedules refreshes).
fn expiry(id_token: &str) -> DateTime<Utc> {
    use base64::Engine as _;
    let exp = id_token
        .split('.')
        .nth(1)
        .and_then(|p| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(p)
                .ok()
        })
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .and_then(|v| v["exp"].as_i64())
        .unwrap_or(0);
    DateTime::from_timestamp(exp, 0).unwrap_or_default()
}

/// Signs in to `hub` and stores the tokens; returns the provider's name.
pub async fn login(hub: &str, timeout: Duration) -> Result<String> {
    let http = http(timeout)?;
    let cfg: AuthConfig = get_json(&http, &format!("{hub}/api/v1/auth/config"), Peer::Hub).await?;
    let (Some(issuer), Some(client_id)) = (cfg.issuer.clone(), cfg.cli_client_id.clone()) else {
        return Err(Error::Usage(format!(
            "the hub at {hub} has no identity provider configured; use an API token (--token)"
        )));
    };
    let meta = metadata(&http, &issuer, cfg.provider.as_deref().unwrap_or_default()).await?;
    let scope = cfg.cli_scopes.join(" ");
    let tokens = match &meta.device_authorization_endpoint {
        Some(endpoint) => device_flow(&http, &meta, endpoint, &client_id, &scope).await?,
        None => loopback_flow(&http, &meta, &client_id, &scope).await?,
    };
    let id_token = tokens
        .id_token
        .ok_or_else(|| Error::Other("the provider returned no ID token".into()))?;
    let mut all = load_all();
    all.insert(
        hub.to_string(),
        Stored {
            issuer,
            client_id,
            expires_at: expiry(&id_token),
            id_token,
            refresh_token: tokens.refresh_token,
        },
    );
    save_all(&all)?;
    Ok(cfg.provider.unwrap_or_default())
}

async fn device_flow(
    http: &reqwest::Client,
    meta: &Metadata,
    endpoint: &str,
    client_id: &str,
    scope: &str,
) -> Result<Tokens> {
    let auth: DeviceAuth = post_form(
        http,
        endpoint,
        &[("client_id", client_id), ("scope", scope)],
    )
    .await?
    .map_err(|e| Error::Other(format!("the provider refused the device sign-in: {e}")))?;
    let open = auth
        .verification_uri_complete
        .clone()
        .unwrap_or_else(|| auth.verification_uri.clone());
    eprintln!("To sign in, open {open}");
    eprintln!("and confirm the code {}", auth.user_code);
    let mut interval = Duration::from_secs(auth.interval.unwrap_or(5).max(1));
    let deadline = std::time::Instant::now() + Duration::from_secs(auth.expires_in.unwrap_or(600));
    loop {
        tokio::time::sleep(interval).await;
        let answer = post_form::<Tokens>(
            http,
            &meta.token_endpoint,
            &[
                ("grant_type", "urn:ietf:params:oauth:grant-type:device_code"),
                ("device_code", &auth.device_code),
                ("client_id", client_id),
            ],
        )
        .await?;
        match answer {
            Ok(tokens) => return Ok(tokens),
            Err(e) if e == "authorization_pending" => {}
            Err(e) if e == "slow_down" => interval += Duration::from_secs(5),
            Err(e) => return Err(Error::Other(format!("sign-in failed: {e}"))),
        }
        if std::time::Instant::now() > deadline {
            return Err(Error::Other(
                "the code expired before it was confirmed".into(),
            ));
        }
    }
}

async fn loopback_flow(
    http: &reqwest::Client,
    meta: &Metadata,
    client_id: &str,
    scope: &str,
) -> Result<Tokens> {
    use base64::Engine as _;
    use sha2::Digest as _;
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let endpoint = meta.authorization_endpoint.as_deref().ok_or_else(|| {
        Error::Other("the provider has neither a device nor an authorization endpoint".into())
    })?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| Error::Other(format!("loopback listener: {e}")))?;
    let port = listener
        .local_addr()
        .map_err(|e| Error::Other(e.to_string()))?
        .port();
    let redirect = format!("http://127.0.0.1:{port}/callback");
    let b64 = |b: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b);
    let random = || {
        let mut bytes = [0u8; 32];
        rand::Rng::fill_bytes(&mut rand::rng(), &mut bytes);
        b64(&bytes)
    };
    let (state, verifier) = (random(), random());
    let challenge = b64(&sha2::Sha256::digest(verifier.as_bytes()));
    let mut params = vec![
        ("response_type", "code"),
        ("client_id", client_id),
        ("redirect_uri", &redirect),
        ("scope", scope),
        ("state", &state),
        ("code_challenge", &challenge),
        ("code_challenge_method", "S256"),
    ];
    // A refresh token for offline_access needs consent (OIDC Core 11);
    // without it providers drop the scope and the sign-in cannot refresh.
    if scope.split(' ').any(|s| s == "offline_access") {
        params.push(("prompt", "consent"));
    }
    let url = reqwest::Url::parse_with_params(endpoint, &params)
        .map_err(|e| Error::Other(e.to_string()))?;
    eprintln!("To sign in, open {url}");
    let (mut sock, _) = listener
        .accept()
        .await
        .map_err(|e| Error::Other(e.to_string()))?;
    let mut buf = vec![0u8; 8192];
    let n = sock
        .read(&mut buf)
        .await
        .map_err(|e| Error::Other(e.to_string()))?;
    let head = String::from_utf8_lossy(&buf[..n]);
    let target = head.split_whitespace().nth(1).unwrap_or("/");
    let got = reqwest::Url::parse(&format!("http://127.0.0.1{target}"))
        .map_err(|e| Error::Other(e.to_string()))?;
    let param = |k: &str| {
        got.query_pairs()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.to_string())
    };
    let _ = sock
        .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\nSigned in to fleetgate; you can close this tab.\n")
        .await;
    if param("state").as_deref() != Some(state.as_str()) {
        return Err(Error::Other("sign-in answered with the wrong state".into()));
    }
    let code = param("code").ok_or_else(|| {
        Error::Other(format!(
            "sign-in failed: {}",
            param("error").unwrap_or_else(|| "no code".into())
        ))
    })?;
    post_form(
        http,
        &meta.token_endpoint,
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("redirect_uri", &redirect),
            ("client_id", client_id),
            ("code_verifier", &verifier),
        ],
    )
    .await?
    .map_err(|e| Error::Other(format!("sign-in failed: {e}")))
}

/// The stored ID token for `hub`, refreshed first when it expires within a
/// minute; `None` without a stored sign-in.
pub async fn token_for(hub: &str, timeout: Duration) -> Result<Option<String>> {
    let mut all = load_all();
    let Some(stored) = all.get(hub).cloned() else {
        return Ok(None);
    };
    if stored.expires_at > Utc::now() + chrono::Duration::seconds(60) {
        return Ok(Some(stored.id_token));
    }
    let Some(refresh) = &stored.refresh_token else {
        return Err(Error::Api {
            status: 401,
            code: "unauthenticated".into(),
            message: "your sign-in expired: run `fleetgate login` again".into(),
            field: None,
        });
    };
    let http = http(timeout)?;
    let meta = metadata(&http, &stored.issuer, "").await?;
    let tokens: Tokens = post_form(
        &http,
        &meta.token_endpoint,
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh),
            ("client_id", &stored.client_id),
        ],
    )
    .await?
    .map_err(|e| Error::Api {
        status: 401,
        code: "unauthenticated".into(),
        message: format!("refreshing your sign-in failed ({e}): run `fleetgate login` again"),
        field: None,
    })?;
    let id_token = tokens
        .id_token
        .ok_or_else(|| Error::Other("the provider returned no ID token".into()))?;
    let renewed = Stored {
        expires_at: expiry(&id_token),
        id_token: id_token.clone(),
        refresh_token: tokens.refresh_token.or(stored.refresh_token),
        ..stored
    };
    all.insert(hub.to_string(), renewed);
    save_all(&all)?;
    Ok(Some(id_token))
}

/// Forgets the stored sign-in for `hub` (and revokes its refresh token at
/// the provider when it can); whether there was one.
pub async fn logout(hub: &str, timeout: Duration) -> Result<bool> {
    let mut all = load_all();
    let Some(stored) = all.remove(hub) else {
        return Ok(false);
    };
    save_all(&all)?;
    if let Some(refresh) = &stored.refresh_token
        && let Ok(http) = http(timeout)
        && let Ok(meta) = metadata(&http, &stored.issuer, "").await
        && let Some(endpoint) = meta.revocation_endpoint
    {
        let _ = post_form::<serde_json::Value>(
            &http,
            &endpoint,
            &[
                ("token", refresh),
                ("token_type_hint", "refresh_token"),
                ("client_id", &stored.client_id),
            ],
        )
        .await;
    }
    Ok(true)
}
