//! The identity settings file (`--identity-config`, YAML or JSON): the
//! provider people sign in with, the issuers whose JWTs are trusted as bearer
//! tokens, and (until access policies decide) which groups get which role.
//! Secrets come from a file or an environment variable, never from the
//! command line or the file itself.

use std::path::Path;
use std::time::Duration;

use serde::Deserialize;

use crate::{Error, Result};

/// The whole file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct IdentityConfig {
    /// The OpenID provider of the dashboard and `fleetgate login`.
    #[serde(default)]
    pub login: Option<LoginConfig>,
    /// Issuers whose JWTs are accepted as bearer tokens (CI, service accounts).
    #[serde(default)]
    pub trusted: Vec<TrustedIssuer>,
    /// Interim: which role a group (or subject) gets.
    #[serde(default)]
    pub roles: Vec<RoleGrant>,
    /// Role of an identity that no entry of `roles` names (none: refused).
    #[serde(default)]
    pub default_role: Option<fleetgate_api_types::Role>,
    /// Clock skew allowed on `exp`, `nbf` and `iat` (Go-style duration).
    #[serde(default = "default_skew", with = "duration")]
    pub clock_skew: Duration,
    /// Longest a dashboard session lives, however long the provider's tokens do.
    #[serde(default = "default_session_max", with = "duration")]
    pub session_max_age: Duration,
    /// Least time between two fetches of an issuer's keys caused by unknown
    /// `kid`s (default 10s).
    #[serde(default, with = "opt_duration")]
    pub jwks_min_refetch: Option<Duration>,
}

fn default_skew() -> Duration {
    Duration::from_secs(60)
}

fn default_session_max() -> Duration {
    Duration::from_secs(12 * 3600)
}

/// The provider people sign in with.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LoginConfig {
    /// Shown on the button: "Sign in with <displayName>".
    #[serde(default = "default_display")]
    pub display_name: String,
    /// Issuer URL; discovery reads `<issuer>/.well-known/openid-configuration`.
    pub issuer: String,
    /// The dashboard's (confidential) client.
    pub client_id: String,
    /// File holding the client secret.
    #[serde(default)]
    pub client_secret_file: Option<String>,
    /// Environment variable holding the client secret.
    #[serde(default)]
    pub client_secret_env: Option<String>,
    /// The exact redirect URI registered at the provider:
    /// `https://<hub>/auth/callback`.
    pub redirect_uri: String,
    /// Scopes asked for (`openid` is always included).
    #[serde(default = "default_scopes")]
    pub scopes: Vec<String>,
    /// The public client of `fleetgate login` (device flow / loopback); default: `clientId`.
    #[serde(default)]
    pub cli_client_id: Option<String>,
    /// Extra audiences accepted on bearer ID tokens of this issuer.
    #[serde(default)]
    pub audiences: Vec<String>,
    /// Which claims carry the name, email and groups.
    #[serde(default)]
    pub claims: ClaimMapping,
    /// Mark the session and sign-in cookies `Secure` (sent over https only).
    /// Default: when `redirectUri` is https (the hub is served over TLS,
    /// itself or behind a proxy).
    #[serde(default)]
    pub secure_cookies: Option<bool>,
    /// How long a check that the provider answers is trusted before a sign-in sends a
    /// person there (its discovery document fetched again); a failed check is kept as
    /// long, so a dead provider is not asked at every click. Default 10s.
    #[serde(default = "default_provider_check", with = "duration")]
    pub provider_check: Duration,
}

fn default_provider_check() -> Duration {
    Duration::from_secs(10)
}

fn default_display() -> String {
    "your identity provider".into()
}

fn default_scopes() -> Vec<String> {
    ["openid", "profile", "email", "offline_access"]
        .map(String::from)
        .to_vec()
}

/// A trusted issuer of workload JWTs.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TrustedIssuer {
    /// `iss` of its tokens; keys from its discovery document's `jwks_uri`.
    pub issuer: String,
    /// Audiences accepted (`aud` must contain one).
    pub audiences: Vec<String>,
    /// JWKS URL when the issuer serves no discovery document.
    #[serde(default)]
    pub jwks_uri: Option<String>,
    #[serde(default)]
    pub claims: ClaimMapping,
}

/// Claim names.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClaimMapping {
    #[serde(default = "claim_name")]
    pub name: String,
    #[serde(default = "claim_email")]
    pub email: String,
    #[serde(default = "claim_groups")]
    pub groups: String,
}

impl Default for ClaimMapping {
    fn default() -> Self {
        Self {
            name: claim_name(),
            email: claim_email(),
            groups: claim_groups(),
        }
    }
}

fn claim_name() -> String {
    "name".into()
}
fn claim_email() -> String {
    "email".into()
}
fn claim_groups() -> String {
    "groups".into()
}

/// One line of the interim role mapping: exactly one of `group`, `subject`, `email`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RoleGrant {
    #[serde(default)]
    pub group: Option<String>,
    #[serde(default)]
    pub subject: Option<String>,
    #[serde(default)]
    pub email: Option<String>,
    pub role: fleetgate_api_types::Role,
}

mod duration {
    use serde::{Deserialize, Deserializer};
    use std::time::Duration;

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let s = String::deserialize(d)?;
        crate::options::parse_std_duration(&s).map_err(serde::de::Error::custom)
    }
}

mod opt_duration {
    use serde::{Deserialize, Deserializer};
    use std::time::Duration;

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        let s = String::deserialize(d)?;
        crate::options::parse_std_duration(&s)
            .map(Some)
            .map_err(serde::de::Error::custom)
    }
}

impl IdentityConfig {
    /// Reads and checks the file at `path`.
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::invalid("--identity-config", format!("{}: {e}", path.display())))?;
        Self::parse(&text)
    }

    /// Parses and checks a settings text.
    pub fn parse(text: &str) -> Result<Self> {
        let config: Self = fleetgate_policy::yaml::from_str(text).map_err(|e| {
            Error::invalid(
                format!("--identity-config {}", e.path)
                    .trim_end()
                    .to_string(),
                e.message,
            )
        })?;
        config.check()?;
        Ok(config)
    }

    fn check(&self) -> Result<()> {
        if let Some(login) = &self.login {
            url("login.issuer", &login.issuer)?;
            url("login.redirectUri", &login.redirect_uri)?;
            if login.client_secret_file.is_some() && login.client_secret_env.is_some() {
                return Err(Error::invalid(
                    "login.clientSecretFile",
                    "set clientSecretFile or clientSecretEnv, not both",
                ));
            }
        }
        for (i, t) in self.trusted.iter().enumerate() {
            url(&format!("trusted[{i}].issuer"), &t.issuer)?;
            if t.audiences.is_empty() {
                return Err(Error::invalid(
                    format!("trusted[{i}].audiences"),
                    "at least one audience: tokens minted for other services must not work here",
                ));
            }
        }
        for (i, g) in self.roles.iter().enumerate() {
            let set = [&g.group, &g.subject, &g.email]
                .iter()
                .filter(|v| v.is_some())
                .count();
            if set != 1 {
                return Err(Error::invalid(
                    format!("roles[{i}]"),
                    "exactly one of group, subject, email",
                ));
            }
        }
        Ok(())
    }
}

impl LoginConfig {
    /// The client secret from its file or variable (none: a public client).
    pub fn client_secret(&self) -> Result<Option<String>> {
        if let Some(file) = &self.client_secret_file {
            let s = std::fs::read_to_string(file)
                .map_err(|e| Error::invalid("login.clientSecretFile", format!("{file}: {e}")))?;
            return Ok(Some(s.trim().to_string()));
        }
        if let Some(var) = &self.client_secret_env {
            let s = std::env::var(var).map_err(|_| {
                Error::invalid("login.clientSecretEnv", format!("{var} is not set"))
            })?;
            return Ok(Some(s.trim().to_string()));
        }
        Ok(None)
    }

    /// Whether cookies are `Secure`: as configured, else when the redirect
    /// URI is https.
    pub fn secure_cookies(&self) -> bool {
        self.secure_cookies
            .unwrap_or_else(|| self.redirect_uri.starts_with("https://"))
    }

    /// The CLI's client id.
    pub fn cli_client(&self) -> &str {
        self.cli_client_id.as_deref().unwrap_or(&self.client_id)
    }

    /// The scopes, `openid` first.
    pub fn scope_list(&self) -> Vec<String> {
        let mut scopes = vec!["openid".to_string()];
        scopes.extend(self.scopes.iter().filter(|s| *s != "openid").cloned());
        scopes
    }
}

fn url(field: &str, value: &str) -> Result<()> {
    let ok = value.starts_with("https://") || value.starts_with("http://");
    if ok && url::Url::parse(value).is_ok() {
        Ok(())
    } else {
        Err(Error::invalid(field, "must be an http(s) URL"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_full_file() {
        let c = IdentityConfig::parse(
            r"
login:
  displayName: Keycloak
  issuer: https://kc.example.com/realms/ops
  clientId: fleetgate
  clientSecretEnv: KC_SECRET
  redirectUri: https://fleetgate.example.com/auth/callback
  claims: {groups: roles}
trusted:
  - issuer: https://token.actions.githubusercontent.com
    audiences: [fleetgate]
roles:
  - {group: sre, role: operator}
defaultRole: viewer
clockSkew: 30s
",
        )
        .unwrap();
        let login = c.login.unwrap();
        assert_eq!(login.claims.groups, "roles");
        assert_eq!(login.claims.email, "email");
        assert_eq!(login.scope_list()[0], "openid");
        assert_eq!(c.clock_skew, Duration::from_secs(30));
        assert_eq!(c.trusted.len(), 1);
    }

    #[test]
    fn cookies_are_secure_behind_tls_or_when_configured() {
        let login = |extra: &str, redirect: &str| {
            let text = format!(
                "login: {{issuer: 'https://idp', clientId: a, redirectUri: '{redirect}'{extra}}}"
            );
            IdentityConfig::parse(&text).unwrap().login.unwrap()
        };
        assert!(login("", "https://hub.example/auth/callback").secure_cookies());
        assert!(!login("", "http://localhost:8080/auth/callback").secure_cookies());
        let forced = login(", secureCookies: true", "http://hub:8080/auth/callback");
        assert!(forced.secure_cookies());
        let off = login(
            ", secureCookies: false",
            "https://hub.example/auth/callback",
        );
        assert!(!off.secure_cookies());
    }

    #[test]
    fn refuses_bad_entries() {
        let e =
            IdentityConfig::parse("trusted: [{issuer: 'https://x', audiences: []}]").unwrap_err();
        assert_eq!(e.field(), Some("trusted[0].audiences"));
        let e = IdentityConfig::parse("roles: [{role: admin}]").unwrap_err();
        assert_eq!(e.field(), Some("roles[0]"));
        let e =
            IdentityConfig::parse("login: {issuer: x, clientId: a, redirectUri: 'https://h/cb'}")
                .unwrap_err();
        assert_eq!(e.field(), Some("login.issuer"));
        assert!(IdentityConfig::parse("bogus: 1").is_err());
    }
}
