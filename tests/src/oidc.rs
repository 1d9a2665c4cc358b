//! A real OpenID provider for the identity tests: npm's `oidc-provider`
//! run by Node.js from `tests/oidc/provider.mjs` (its packages installed
//! from the committed lockfile on first use: [`crate::npm`]). One process per test binary; tests
//! act on it through its `/__test/*` endpoints (register a client, rotate
//! the signing key, go down and up, mint tokens with chosen claims, revoke
//! a user's grants, shorten ID tokens' lifetime, spoil the next token
//! answer, switch the device flow off).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::{ChildGuard, free_port, poll};

/// Users of the provider (password `<login>-pw`) and their groups:
/// alice (platform-admins), bob and erin (sre), carol (developers), dave (none).
pub const USERS: [&str; 5] = ["alice", "bob", "carol", "dave", "erin"];

/// A running provider.
pub struct OidcProvider {
    pub issuer: String,
    http: reqwest::Client,
    child: Option<ChildGuard>,
}

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("oidc")
}

impl OidcProvider {
    /// Starts the provider on a free loopback port and waits for its
    /// discovery document.
    pub async fn start() -> OidcProvider {
        let dir = dir();
        if let Err(e) = crate::npm::ensure_installed(&dir) {
            panic!("installing the test OpenID provider from tests/oidc/package-lock.json: {e}");
        }
        let port = free_port();
        let child = Command::new("node")
            .arg(dir.join("provider.mjs"))
            .arg(port.to_string())
            .current_dir(&dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("starting node (apt-get install nodejs)");
        let provider = OidcProvider {
            issuer: format!("http://127.0.0.1:{port}"),
            // Bounded: a provider that stops answering fails the step that asked.
            http: reqwest::Client::builder()
                .timeout(std::time::Duration::from_secs(30))
                .build()
                .expect("HTTP client"),
            child: Some(ChildGuard(child)),
        };
        let url = format!("{}/.well-known/openid-configuration", provider.issuer);
        poll("the OpenID provider's discovery document", || async {
            let r = provider.http.get(&url).send().await.ok()?;
            r.status().is_success().then_some(())
        })
        .await;
        provider
    }

    async fn post(&self, path: &str, body: Value) -> Value {
        let r = self
            .http
            .post(format!("{}{path}", self.issuer))
            .json(&body)
            .send()
            .await
            .unwrap_or_else(|e| panic!("{path}: {e}"));
        assert!(r.status().is_success(), "{path}: {}", r.status());
        r.json().await.expect("JSON")
    }

    /// Registers the hub's confidential dashboard client.
    pub async fn add_web_client(&self, id: &str, secret: &str, redirect_uris: &[String]) {
        self.post(
            "/__test/clients",
            json!({
                "client_id": id, "client_secret": secret,
                "redirect_uris": redirect_uris,
                "grant_types": ["authorization_code", "refresh_token"],
                "response_types": ["code"],
                "token_endpoint_auth_method": "client_secret_basic",
            }),
        )
        .await;
    }

    /// Registers a public client for the CLI (device flow, loopback redirect).
    pub async fn add_cli_client(&self, id: &str) {
        self.post(
            "/__test/clients",
            json!({
                "client_id": id,
                "redirect_uris": ["http://127.0.0.1/callback"],
                "grant_types": ["authorization_code", "refresh_token",
                                "urn:ietf:params:oauth:grant-type:device_code"],
                "response_types": ["code"],
                "token_endpoint_auth_method": "none",
                "application_type": "native",
            }),
        )
        .await;
    }

    /// Registers the dashboard's client (redirecting to `callback`, the hub's
    /// `/auth/callback`) and the CLI's, and writes into `dir` the hub's
    /// identity config for signing people in through this provider: scopes
    /// with refresh tokens, `platform-admins` → admin and `sre` → operator,
    /// then `more_roles` (YAML flow maps) and `more` (further top-level keys).
    /// Returns the config's path (for `FLEETGATE_IDENTITY_CONFIG`).
    pub async fn hub_identity_config(
        &self,
        dir: &Path,
        callback: &str,
        more_roles: &[&str],
        more: &str,
    ) -> PathBuf {
        self.add_web_client(
            "fleetgate-dashboard",
            "dashboard-secret",
            &[callback.to_string()],
        )
        .await;
        self.add_cli_client("fleetgate-cli").await;
        let secret = dir.join("client-secret");
        std::fs::write(&secret, "dashboard-secret\n").expect("writing the client secret");
        let mut roles = String::new();
        for role in [
            "{group: platform-admins, role: admin}",
            "{group: sre, role: operator}",
        ]
        .iter()
        .chain(more_roles)
        {
            roles.push_str(&format!("  - {role}\n"));
        }
        let config = dir.join("identity.yaml");
        std::fs::write(
            &config,
            format!(
                "login:
  displayName: Test IdP
  issuer: {issuer}
  clientId: fleetgate-dashboard
  clientSecretFile: {secret}
  redirectUri: {callback}
  cliClientId: fleetgate-cli
  scopes: [openid, profile, email, groups, offline_access]
{more}roles:
{roles}",
                issuer = self.issuer,
                secret = secret.display(),
            ),
        )
        .expect("writing the identity config");
        config
    }

    /// A token signed with the provider's current key (or naming `kid`),
    /// with `claims` over `iss` = the provider, `iat` = now, `exp` = now + 300.
    pub async fn mint(&self, claims: Value, kid: Option<&str>) -> String {
        let mut body = json!({ "claims": claims });
        if let Some(kid) = kid {
            body["kid"] = json!(kid);
        }
        self.post("/__test/mint", body).await["token"]
            .as_str()
            .expect("token")
            .to_string()
    }

    /// The current public signing key (JWK).
    pub async fn public_jwk(&self) -> Value {
        let v = self.post("/__test/mint", json!({"claims": {}})).await;
        v["publicJwk"].clone()
    }

    /// Replaces the signing key; returns the new `kid`.
    pub async fn rotate(&self) -> String {
        self.post("/__test/rotate", json!({})).await["kid"]
            .as_str()
            .expect("kid")
            .to_string()
    }

    /// Destroys every grant `login` gave: their refresh tokens stop working.
    /// Returns how many.
    pub async fn revoke(&self, login: &str) -> u64 {
        self.post("/__test/revoke", json!({"login": login})).await["revoked"]
            .as_u64()
            .expect("revoked")
    }

    /// ID tokens issued from now on live `seconds`.
    pub async fn id_token_ttl(&self, seconds: u64) {
        self.post("/__test/ttl", json!({"idToken": seconds})).await;
    }

    /// Spoils the next token response: `nonce` (an ID token, signed by the
    /// provider, over another nonce) or `no_id_token`.
    pub async fn tamper(&self, mode: &str) {
        self.post("/__test/tamper", json!({"mode": mode})).await;
    }

    /// Switches the device authorization grant off (its endpoint leaves the
    /// discovery document: the CLI then uses a loopback redirect) or on.
    pub async fn device_flow(&self, enabled: bool) {
        self.post("/__test/device", json!({"enabled": enabled}))
            .await;
    }

    /// Token requests from now on are answered `ms` milliseconds late (0: at once).
    pub async fn delay_tokens(&self, ms: u64) {
        self.post("/__test/delay", json!({"ms": ms})).await;
    }

    /// How many token requests the provider is holding back now ([`Self::delay_tokens`]).
    pub async fn delayed(&self) -> u64 {
        self.http
            .get(format!("{}/__test/delayed", self.issuer))
            .send()
            .await
            .expect("the provider answers")
            .json::<Value>()
            .await
            .expect("JSON")["delayed"]
            .as_u64()
            .expect("delayed")
    }

    /// Stops the provider's process (SIGKILL, reaped): nothing listens at the issuer
    /// any more.
    pub fn stop(&mut self) {
        drop(self.child.take());
    }

    /// Every provider endpoint answers 503 until [`OidcProvider::up`].
    pub async fn down(&self) {
        self.post("/__test/down", json!({})).await;
    }

    pub async fn up(&self) {
        self.post("/__test/up", json!({})).await;
    }
}
