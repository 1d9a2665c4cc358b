//! A SPIFFE trust domain as a relying party sees it, for the spoke identity tests: the
//! SPIRE Server's JWT authorities signing JWT-SVIDs, SPIRE's OIDC Discovery Provider
//! serving their public keys over HTTP on loopback, the trust domain's bundle in the SPIFFE
//! format (what an operator pins), and a SPIFFE helper writing a workload's JWT-SVID to a
//! file and rewriting it before it expires.
//!
//! Upstream sources followed:
//! - JWT-SVID: SPIFFE `standards/JWT-SVID.md` (header `alg`, optional `kid`, `typ` JWT or
//!   JOSE; claims `sub` = the SPIFFE ID, `aud` required, `exp` required) as SPIRE mints it
//!   (`pkg/server/credtemplate/builder.go`, `BuildWorkloadJWTSVIDClaims`: `sub`, `aud` as a
//!   list, `exp`, `iat`, and `iss` only when the server's `jwt_issuer` is set; signed by
//!   the active JWT authority with its `kid` and `typ: JWT`).
//! - Discovery: SPIRE `support/oidc-discovery-provider/handler.go`:
//!   `/.well-known/openid-configuration` (`issuer` is the configured `jwt_issuer`, else
//!   scheme and Host of the request; `jwks_uri` is `<issuer>/keys`; a fixed
//!   `authorization_endpoint: ""`, `response_types_supported: [id_token]`,
//!   `subject_types_supported: []`, `id_token_signing_alg_values_supported: [RS256, ES256,
//!   ES384]`) and `/keys` (every JWT authority, `alg` filled in from the key, `use` only
//!   with `set_key_use`).
//! - Bundle: SPIFFE `standards/SPIFFE_Trust_Domain_and_Bundle.md` §4 (`spire-server bundle
//!   show -format spiffe`): JWT authorities with `use: jwt-svid` and their `kid`, X.509
//!   authorities with `use: x509-svid` and `x5c`, `spiffe_sequence`, `spiffe_refresh_hint`.
//! - Helper: spiffe-helper `pkg/sidecar/sidecar.go` (`getRefreshInterval`: rewritten after
//!   half the time left plus a second) and `pkg/disk/json.go` (`WriteJWTSVID`:
//!   `os.WriteFile`, truncating and writing the file in place: [`Write::InPlace`]); or
//!   written beside it and renamed over it ([`Write::AtomicRename`]).
//!
//! ES256 keys come from ring; RS256 keys (SPIRE's `jwt_key_type = "rsa-2048"`) and the X.509
//! authority's certificate from the `openssl` CLI, as [`crate::pki`] does.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD as B64};
use ring::rand::SystemRandom;
use ring::signature::{self, EcdsaKeyPair, KeyPair as _, RsaKeyPair};
use serde_json::{Value, json};

/// The key type of a JWT authority (SPIRE's `jwt_key_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyType {
    /// `ec-p256` (SPIRE's default): ES256.
    Ec256,
    /// `rsa-2048`: RS256.
    Rsa2048,
}

enum Signer {
    Ec(EcdsaKeyPair),
    Rsa(RsaKeyPair),
}

/// One JWT authority: its key, `kid` and public JWK.
struct Authority {
    kid: String,
    signer: Signer,
    /// Public JWK without `use` (as `/keys` serves it).
    jwk: Value,
}

impl Authority {
    fn generate(key_type: KeyType, rng: &SystemRandom) -> Authority {
        // SPIRE's key ids are random strings.
        let kid: String = {
            let mut bytes = [0u8; 24];
            ring::rand::SecureRandom::fill(rng, &mut bytes).expect("random kid");
            B64.encode(bytes)
        };
        let (signer, jwk) = match key_type {
            KeyType::Ec256 => {
                let alg = &signature::ECDSA_P256_SHA256_FIXED_SIGNING;
                let pkcs8 = EcdsaKeyPair::generate_pkcs8(alg, rng).expect("P-256 key");
                let pair = EcdsaKeyPair::from_pkcs8(alg, pkcs8.as_ref(), rng).expect("P-256 key");
                let (x, y) = pair.public_key().as_ref()[1..].split_at(32);
                let jwk = json!({"kty": "EC", "kid": kid, "crv": "P-256",
                                 "x": B64.encode(x), "y": B64.encode(y), "alg": "ES256"});
                (Signer::Ec(pair), jwk)
            }
            KeyType::Rsa2048 => {
                let der = openssl_stdout(&[
                    "genpkey",
                    "-algorithm",
                    "RSA",
                    "-pkeyopt",
                    "rsa_keygen_bits:2048",
                    "-outform",
                    "DER",
                ]);
                // OpenSSL 3 writes a DER RSA key as PKCS#1 `RSAPrivateKey`.
                let pair = RsaKeyPair::from_der(&der)
                    .or_else(|_| RsaKeyPair::from_pkcs8(&der))
                    .expect("an RSA key from openssl");
                let public = ring::rsa::PublicKeyComponents::<Vec<u8>>::from(pair.public());
                let jwk = json!({"kty": "RSA", "kid": kid, "n": B64.encode(&public.n),
                                 "e": B64.encode(&public.e), "alg": "RS256"});
                (Signer::Rsa(pair), jwk)
            }
        };
        Authority { kid, signer, jwk }
    }

    fn alg(&self) -> &'static str {
        match self.signer {
            Signer::Ec(_) => "ES256",
            Signer::Rsa(_) => "RS256",
        }
    }

    /// `header.claims` signed: a compact JWS.
    fn sign(&self, header: &Value, claims: &Value, rng: &SystemRandom) -> String {
        let part = |v: &Value| B64.encode(serde_json::to_vec(v).expect("JSON"));
        let input = format!("{}.{}", part(header), part(claims));
        let sig = match &self.signer {
            Signer::Ec(pair) => pair
                .sign(rng, input.as_bytes())
                .expect("ECDSA signing")
                .as_ref()
                .to_vec(),
            Signer::Rsa(pair) => {
                let mut sig = vec![0; pair.public().modulus_len()];
                pair.sign(
                    &signature::RSA_PKCS1_SHA256,
                    rng,
                    input.as_bytes(),
                    &mut sig,
                )
                .expect("RSA signing");
                sig
            }
        };
        format!("{input}.{}", B64.encode(sig))
    }
}

fn openssl_stdout(args: &[&str]) -> Vec<u8> {
    let out = Command::new("openssl")
        .args(args)
        .output()
        .expect("running openssl");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// The trust domain's X.509 authority as a bundle entry: a self-signed P-256 CA certificate
/// for `spiffe://<trust_domain>` (`use: x509-svid`, its key and `x5c`).
fn x509_authority(trust_domain: &str) -> Value {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = |n: &str| dir.path().join(n).to_string_lossy().into_owned();
    let san = format!("subjectAltName=URI:spiffe://{trust_domain}");
    openssl_stdout(&[
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-days",
        "1",
        "-subj",
        "/C=US/O=SPIFFE",
        "-addext",
        &san,
        "-addext",
        "basicConstraints=critical,CA:true",
        "-keyout",
        &path("ca.key"),
        "-outform",
        "DER",
        "-out",
        &path("ca.der"),
    ]);
    let cert = std::fs::read(path("ca.der")).expect("the CA certificate");
    let spki = openssl_stdout(&["pkey", "-in", &path("ca.key"), "-pubout", "-outform", "DER"]);
    // A P-256 SubjectPublicKeyInfo ends with the 65-byte uncompressed point.
    let point = &spki[spki.len() - 65..];
    let (x, y) = point[1..].split_at(32);
    json!({"use": "x509-svid", "kty": "EC", "crv": "P-256",
           "x": B64.encode(x), "y": B64.encode(y), "x5c": [STANDARD.encode(cert)]})
}

struct Domain {
    /// The `iss` of its JWT-SVIDs and the discovery document (`jwt_issuer`).
    issuer: String,
    /// The active JWT authority first; older ones stay published until retired.
    authorities: Mutex<Vec<Arc<Authority>>>,
    x509: Value,
    /// The discovery provider answers 503 (unreachable).
    down: AtomicBool,
    rng: SystemRandom,
}

impl Domain {
    fn authorities(&self) -> std::sync::MutexGuard<'_, Vec<Arc<Authority>>> {
        self.authorities.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A running trust domain: its JWT authorities and its OIDC Discovery Provider.
pub struct TrustDomain {
    /// e.g. `example.org`.
    pub name: String,
    domain: Arc<Domain>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for TrustDomain {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl std::fmt::Debug for TrustDomain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TrustDomain")
            .field("name", &self.name)
            .field("issuer", &self.domain.issuer)
            .finish_non_exhaustive()
    }
}

async fn well_known(State(d): State<Arc<Domain>>) -> Response {
    if d.down.load(Ordering::Relaxed) {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    }
    Json(json!({
        "issuer": d.issuer,
        "jwks_uri": format!("{}/keys", d.issuer),
        "authorization_endpoint": "",
        "response_types_supported": ["id_token"],
        "subject_types_supported": [],
        "id_token_signing_alg_values_supported": ["RS256", "ES256", "ES384"],
    }))
    .into_response()
}

async fn keys(State(d): State<Arc<Domain>>) -> Response {
    if d.down.load(Ordering::Relaxed) {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    }
    let keys: Vec<Value> = d.authorities().iter().map(|a| a.jwk.clone()).collect();
    (
        [("cache-control", "no-cache, no-store, must-revalidate")],
        Json(json!({ "keys": keys })),
    )
        .into_response()
}

impl TrustDomain {
    /// Trust domain `name` with one JWT authority of `key_type`, its discovery provider
    /// listening on a free loopback port (plain HTTP, as with `allow_insecure_scheme`);
    /// the issuer is that provider's URL.
    pub async fn start(name: &str, key_type: KeyType) -> TrustDomain {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("binding the discovery provider");
        let addr = listener.local_addr().expect("local address");
        let rng = SystemRandom::new();
        let domain = Arc::new(Domain {
            issuer: format!("http://{addr}"),
            authorities: Mutex::new(vec![Arc::new(Authority::generate(key_type, &rng))]),
            x509: x509_authority(name),
            down: AtomicBool::new(false),
            rng,
        });
        let app = axum::Router::new()
            .route("/.well-known/openid-configuration", get(well_known))
            .route("/keys", get(keys))
            .with_state(domain.clone());
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        TrustDomain {
            name: name.into(),
            domain,
            server,
        }
    }

    /// The issuer URL: where the discovery document is, and the JWT-SVIDs' `iss`.
    pub fn issuer(&self) -> &str {
        &self.domain.issuer
    }

    /// `spiffe://<trust domain><path>`.
    pub fn id(&self, path: &str) -> String {
        format!("spiffe://{}{path}", self.name)
    }

    /// A JWT-SVID for `spiffe_id` with `audience`, living `ttl` seconds from now, signed by
    /// the active JWT authority.
    pub fn mint(&self, spiffe_id: &str, audience: &str, ttl: i64) -> String {
        let now = chrono::Utc::now().timestamp();
        self.mint_claims(json!({
            "iss": self.issuer(), "sub": spiffe_id, "aud": [audience],
            "iat": now, "exp": now + ttl,
        }))
    }

    /// Any claims, signed by the active JWT authority (header `alg`, `kid`, `typ: JWT`).
    pub fn mint_claims(&self, claims: Value) -> String {
        let active = self.domain.authorities()[0].clone();
        let header = json!({"alg": active.alg(), "kid": active.kid, "typ": "JWT"});
        active.sign(&header, &claims, &self.domain.rng)
    }

    /// A new JWT authority of `key_type` signs from now on; the old ones stay published
    /// (SPIRE prepares the next key and publishes it before activating it). Its `kid`.
    pub fn rotate(&self, key_type: KeyType) -> String {
        let fresh = Arc::new(Authority::generate(key_type, &self.domain.rng));
        let kid = fresh.kid.clone();
        self.domain.authorities().insert(0, fresh);
        kid
    }

    /// The discovery provider answers 503 (`true`) or serves again.
    pub fn set_down(&self, down: bool) {
        self.domain.down.store(down, Ordering::Relaxed);
    }

    /// The trust domain's bundle in the SPIFFE format (`spire-server bundle show -format
    /// spiffe`): the X.509 authority and every JWT authority.
    pub fn bundle(&self) -> Value {
        let mut keys = vec![self.domain.x509.clone()];
        for a in self.domain.authorities().iter() {
            let mut jwk = a.jwk.clone();
            let o = jwk.as_object_mut().expect("a JWK object");
            // The bundle names the key's use; `alg` is the discovery provider's addition.
            o.remove("alg");
            o.insert("use".into(), json!("jwt-svid"));
            keys.push(jwk);
        }
        json!({"keys": keys, "spiffe_sequence": 1, "spiffe_refresh_hint": 300})
    }

    /// Keeps `path` holding a fresh JWT-SVID for `spiffe_id` and `audience` (lifetime
    /// `ttl` s), written now and again after half the time left plus a second, as
    /// spiffe-helper does, until the returned [`Helper`] is dropped.
    pub fn helper(
        self: &Arc<Self>,
        path: &Path,
        spiffe_id: &str,
        audience: &str,
        ttl: i64,
        write: Write,
    ) -> Helper {
        let first = self.mint(spiffe_id, audience, ttl);
        write.to(path, &first);
        let (td, path_buf, id, aud) = (
            self.clone(),
            path.to_path_buf(),
            spiffe_id.to_string(),
            audience.to_string(),
        );
        let task = tokio::spawn(async move {
            let mut token = first;
            loop {
                let exp = jwt_exp(&token);
                let left = (exp - chrono::Utc::now().timestamp()).max(0);
                let refresh = Duration::from_millis(u64::try_from(left).unwrap_or(0) * 500 + 1000);
                tokio::time::sleep(refresh).await;
                token = td.mint(&id, &aud, ttl);
                write.to(&path_buf, &token);
            }
        });
        Helper {
            path: path.to_path_buf(),
            task,
        }
    }
}

/// How the helper replaces the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Write {
    /// Written beside the file and renamed over it: a reader sees the old or the new one.
    AtomicRename,
    /// Truncated and written in place (spiffe-helper's `os.WriteFile`): a reader can see
    /// an empty or partly written file.
    InPlace,
}

impl Write {
    fn to(self, path: &Path, token: &str) {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).expect("the helper's directory");
        }
        match self {
            Write::AtomicRename => {
                let tmp = path.with_extension("tmp");
                std::fs::write(&tmp, token).expect("writing the JWT-SVID");
                std::fs::rename(&tmp, path).expect("renaming the JWT-SVID into place");
            }
            Write::InPlace => std::fs::write(path, token).expect("writing the JWT-SVID"),
        }
    }
}

/// A running helper; stops on drop.
#[derive(Debug)]
pub struct Helper {
    pub path: PathBuf,
    task: tokio::task::JoinHandle<()>,
}

impl Helper {
    /// The JWT-SVID in the file now.
    pub fn current(&self) -> String {
        std::fs::read_to_string(&self.path).unwrap_or_default()
    }
}

impl Drop for Helper {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The unverified claims of a JWT (`Null` if it is not one).
pub fn jwt_claims(token: &str) -> Value {
    jwt_part(token, 1)
}

/// The unverified header of a JWT (`Null` if it is not one).
pub fn jwt_header(token: &str) -> Value {
    jwt_part(token, 0)
}

fn jwt_part(token: &str, i: usize) -> Value {
    token
        .split('.')
        .nth(i)
        .and_then(|p| B64.decode(p).ok())
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(Value::Null)
}

/// `exp` of a JWT (0 if none).
pub fn jwt_exp(token: &str) -> i64 {
    jwt_claims(token)["exp"].as_i64().unwrap_or(0)
}
