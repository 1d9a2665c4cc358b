//! The cluster's service-account token issuer: a signing key of its own per simulated
//! cluster (ES256, generated; or RS256 from a given RSA key, what managed clusters' and
//! kubeadm's issuers sign with), the tokens it signs (TokenRequest, projected volumes, JWT-SVIDs) and
//! what it publishes for OIDC discovery. Follows kubernetes `pkg/serviceaccount/jwt.go`
//! (signing, `kid`), `pkg/serviceaccount/claims.go` (claims) and
//! `pkg/serviceaccount/openidmetadata.go` (discovery document and JWKS).
//!
//! Signed with ring directly rather than through `jsonwebtoken::encode`: that needs a
//! process-wide crypto provider, and a test process that runs the simulator beside the
//! hub's code must keep the hub's provider (which also verifies) as the only one.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use ring::rand::SystemRandom;
use ring::signature::{
    ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair as _, RSA_PKCS1_SHA256, RsaKeyPair,
};
use serde_json::{Value, json};

/// DER prefix of a P-256 `SubjectPublicKeyInfo` (id-ecPublicKey, prime256v1, BIT STRING
/// of 66 bytes); followed by the 65-byte uncompressed point it is what Go's
/// `x509.MarshalPKIXPublicKey` returns for a P-256 key.
const P256_SPKI_PREFIX: [u8; 26] = [
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a,
    0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
];

/// DER of the rsaEncryption `AlgorithmIdentifier` (OID 1.2.840.113549.1.1.1, NULL).
const RSA_ALGORITHM: [u8; 15] = [
    0x30, 0x0d, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01, 0x05, 0x00,
];

/// A DER element: `tag`, the definite length, `content`.
fn der(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let len = content.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes: Vec<u8> = len
            .to_be_bytes()
            .into_iter()
            .skip_while(|b| *b == 0)
            .collect();
        out.push(0x80 | bytes.len() as u8);
        out.extend(bytes);
    }
    out.extend_from_slice(content);
    out
}

/// How a key signs.
enum Signer {
    Ec(EcdsaKeyPair),
    Rsa(RsaKeyPair),
}

/// One signing key and its public JWK.
struct SigningKey {
    kid: String,
    signer: Signer,
    jwk: Value,
}

impl SigningKey {
    fn alg(&self) -> &'static str {
        match self.signer {
            Signer::Ec(_) => "ES256",
            Signer::Rsa(_) => "RS256",
        }
    }

    /// An RSA key (PKCS#8 or PKCS#1 DER), as kube-apiserver loads
    /// `--service-account-signing-key-file` (jwt.go, `signerFromRSAPrivateKey`: RS256).
    fn rsa(der_key: &[u8]) -> Result<SigningKey, String> {
        let pair = RsaKeyPair::from_pkcs8(der_key)
            .or_else(|_| RsaKeyPair::from_der(der_key))
            .map_err(|e| format!("not an RSA private key in DER: {e}"))?;
        // jwt.go, keyIDFromPublicKey: base64url(SHA-256(PKIX DER of the public key));
        // ring's public key is the PKCS#1 `RSAPublicKey` the SPKI's BIT STRING wraps.
        let mut bits = vec![0u8];
        bits.extend_from_slice(pair.public().as_ref());
        let mut spki_content = RSA_ALGORITHM.to_vec();
        spki_content.extend(der(0x03, &bits));
        let spki = der(0x30, &spki_content);
        let kid = B64.encode(ring::digest::digest(&ring::digest::SHA256, &spki));
        let public = ring::rsa::PublicKeyComponents::<Vec<u8>>::from(pair.public());
        let jwk = json!({
            "use": "sig", "kty": "RSA", "kid": kid, "alg": "RS256",
            "n": B64.encode(&public.n), "e": B64.encode(&public.e),
        });
        Ok(SigningKey {
            kid,
            signer: Signer::Rsa(pair),
            jwk,
        })
    }

    fn generate(rng: &SystemRandom) -> SigningKey {
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, rng)
            .expect("generating a P-256 key");
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), rng)
            .expect("a key ring just generated");
        let public = pair.public_key().as_ref();
        // jwt.go, keyIDFromPublicKey: base64url(SHA-256(PKIX DER of the public key)).
        let mut spki = P256_SPKI_PREFIX.to_vec();
        spki.extend_from_slice(public);
        let kid = B64.encode(ring::digest::digest(&ring::digest::SHA256, &spki));
        let (x, y) = public[1..].split_at(32);
        // openidmetadata.go, publicJWKSFromKeys: use "sig", the key's algorithm and kid.
        let jwk = json!({
            "use": "sig", "kty": "EC", "kid": kid, "crv": "P-256", "alg": "ES256",
            "x": B64.encode(x), "y": B64.encode(y),
        });
        SigningKey {
            kid,
            signer: Signer::Ec(pair),
            jwk,
        }
    }
}

struct Keys {
    /// Signs new tokens.
    current: Arc<SigningKey>,
    /// Still published (tokens they signed stay verifiable) until retired.
    previous: Vec<Arc<SigningKey>>,
}

/// The issuer of one simulated cluster.
pub struct Issuer {
    /// `iss` of its tokens: the cluster's own URL, where its discovery document is served
    /// (kube-apiserver's `--service-account-issuer`).
    pub url: String,
    keys: Mutex<Keys>,
    /// The discovery endpoints answer 503 (an issuer the hub cannot reach).
    offline: AtomicBool,
    rng: SystemRandom,
}

impl std::fmt::Debug for Issuer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Issuer")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

/// What a token says about its holder.
#[derive(Debug, Clone)]
pub enum Subject {
    /// A ServiceAccount (and, for a projected volume, the pod it is bound to).
    ServiceAccount {
        namespace: String,
        name: String,
        uid: String,
        pod: Option<(String, String)>,
    },
    /// A SPIFFE ID (a JWT-SVID as SPIRE signs it: sub, aud, exp, iat).
    Spiffe(String),
}

impl Issuer {
    pub fn new(url: String) -> Issuer {
        let rng = SystemRandom::new();
        Issuer {
            url,
            keys: Mutex::new(Keys {
                current: Arc::new(SigningKey::generate(&rng)),
                previous: Vec::new(),
            }),
            offline: AtomicBool::new(false),
            rng,
        }
    }

    /// An issuer signing RS256 with `der_key` (an RSA private key, PKCS#8 or PKCS#1
    /// DER). Keys it rotates to are ES256 (kube-apiserver publishes keys of both kinds
    /// side by side).
    pub fn with_rsa_key(url: String, der_key: &[u8]) -> Result<Issuer, String> {
        let issuer = Issuer::new(url);
        issuer.keys().current = Arc::new(SigningKey::rsa(der_key)?);
        Ok(issuer)
    }

    fn keys(&self) -> std::sync::MutexGuard<'_, Keys> {
        self.keys.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A new signing key signs from now on; the old one stays published (the first step
    /// of rotating `--service-account-signing-key-file`, with the old key kept in
    /// `--service-account-key-file`). Returns the new `kid`.
    pub fn rotate(&self) -> String {
        let fresh = Arc::new(SigningKey::generate(&self.rng));
        let mut keys = self.keys();
        let old = std::mem::replace(&mut keys.current, fresh);
        keys.previous.push(old);
        keys.current.kid.clone()
    }

    /// Stops publishing every key but the signing one (the rotation's last step): tokens
    /// the old keys signed no longer verify. Returns the `kid`s retired.
    pub fn retire(&self) -> Vec<String> {
        std::mem::take(&mut self.keys().previous)
            .iter()
            .map(|k| k.kid.clone())
            .collect()
    }

    /// The signing key's `kid`.
    pub fn kid(&self) -> String {
        self.keys().current.kid.clone()
    }

    pub fn set_offline(&self, offline: bool) {
        self.offline.store(offline, Ordering::Relaxed);
    }

    pub fn offline(&self) -> bool {
        self.offline.load(Ordering::Relaxed)
    }

    /// `/.well-known/openid-configuration` (openidmetadata.go, `openIDMetadata`).
    pub fn discovery(&self) -> Value {
        json!({
            "issuer": self.url,
            "jwks_uri": format!("{}/openid/v1/jwks", self.url.trim_end_matches('/')),
            "response_types_supported": ["id_token"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": self.algs(),
        })
    }

    /// The algorithms of the published keys (openidmetadata.go, `getAlgs`), sorted.
    fn algs(&self) -> Vec<&'static str> {
        let keys = self.keys();
        let mut algs: Vec<&'static str> = std::iter::once(&keys.current)
            .chain(keys.previous.iter())
            .map(|k| k.alg())
            .collect();
        algs.sort_unstable();
        algs.dedup();
        algs
    }

    /// `/openid/v1/jwks`: every published key, the signing one first.
    pub fn jwks(&self) -> Value {
        let keys = self.keys();
        let all: Vec<&Value> = std::iter::once(&keys.current)
            .chain(keys.previous.iter())
            .map(|k| &k.jwk)
            .collect();
        json!({ "keys": all })
    }

    /// The claims of a token for `subject` (claims.go, `Claims`): sub, aud, iat, nbf, exp,
    /// jti and the private `kubernetes.io` claim; `iss` as the generator adds it
    /// (jwt.go, `GenerateToken`).
    pub fn claims(&self, subject: &Subject, audiences: &[String], iat: i64, ttl: i64) -> Value {
        let mut claims = json!({
            "iss": self.url,
            "aud": audiences,
            "iat": iat,
            "exp": iat + ttl,
        });
        match subject {
            Subject::ServiceAccount {
                namespace,
                name,
                uid,
                pod,
            } => {
                claims["sub"] = json!(format!("system:serviceaccount:{namespace}:{name}"));
                claims["nbf"] = json!(iat);
                // The credential id of 1.29+ (ServiceAccountTokenJTI).
                claims["jti"] = json!(uuid::Uuid::new_v4().to_string());
                let mut k8s = json!({
                    "namespace": namespace,
                    "serviceaccount": {"name": name, "uid": uid},
                });
                if let Some((pod_name, pod_uid)) = pod {
                    k8s["pod"] = json!({"name": pod_name, "uid": pod_uid});
                }
                claims["kubernetes.io"] = k8s;
            }
            Subject::Spiffe(id) => claims["sub"] = json!(id),
        }
        claims
    }

    /// `claims` signed with the current key: `header.claims.signature`, ES256 or RS256.
    pub fn sign(&self, claims: &Value) -> String {
        let key = self.keys().current.clone();
        let header = json!({"alg": key.alg(), "kid": key.kid});
        let part = |v: &Value| B64.encode(serde_json::to_vec(v).unwrap_or_default());
        let message = format!("{}.{}", part(&header), part(claims));
        let signature = match &key.signer {
            Signer::Ec(pair) => pair
                .sign(&self.rng, message.as_bytes())
                .expect("ECDSA signing")
                .as_ref()
                .to_vec(),
            Signer::Rsa(pair) => {
                let mut sig = vec![0u8; pair.public().modulus_len()];
                pair.sign(&RSA_PKCS1_SHA256, &self.rng, message.as_bytes(), &mut sig)
                    .expect("RSA signing");
                sig
            }
        };
        format!("{message}.{}", B64.encode(signature))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verify(token: &str, jwks: &Value) -> bool {
        let (message, sig) = token.rsplit_once('.').unwrap();
        let header: Value =
            serde_json::from_slice(&B64.decode(message.split('.').next().unwrap()).unwrap())
                .unwrap();
        jwks["keys"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|k| k["kid"] == header["kid"])
            .any(|k| {
                if k["kty"] == "RSA" {
                    let n = B64.decode(k["n"].as_str().unwrap()).unwrap();
                    let e = B64.decode(k["e"].as_str().unwrap()).unwrap();
                    return ring::signature::RsaPublicKeyComponents { n, e }
                        .verify(
                            &ring::signature::RSA_PKCS1_2048_8192_SHA256,
                            message.as_bytes(),
                            &B64.decode(sig).unwrap(),
                        )
                        .is_ok();
                }
                let mut point = vec![4u8];
                point.extend(B64.decode(k["x"].as_str().unwrap()).unwrap());
                point.extend(B64.decode(k["y"].as_str().unwrap()).unwrap());
                ring::signature::UnparsedPublicKey::new(
                    &ring::signature::ECDSA_P256_SHA256_FIXED,
                    point,
                )
                .verify(message.as_bytes(), &B64.decode(sig).unwrap())
                .is_ok()
            })
    }

    #[test]
    fn tokens_verify_with_the_published_keys_until_retired() {
        let issuer = Issuer::new("https://127.0.0.1:1".into());
        let sa = Subject::ServiceAccount {
            namespace: "fleetgate-system".into(),
            name: "fleetgate-spoke".into(),
            uid: "u".into(),
            pod: None,
        };
        let claims = issuer.claims(&sa, &["fleetgate".into()], 1000, 600);
        assert_eq!(
            claims["sub"],
            "system:serviceaccount:fleetgate-system:fleetgate-spoke"
        );
        assert_eq!(claims["exp"], 1600);
        assert_eq!(claims["kubernetes.io"]["namespace"], "fleetgate-system");
        let old = issuer.sign(&claims);
        assert!(verify(&old, &issuer.jwks()));

        let old_kid = issuer.kid();
        let new_kid = issuer.rotate();
        assert_ne!(old_kid, new_kid);
        let new = issuer.sign(&claims);
        assert!(verify(&old, &issuer.jwks()), "old key still published");
        assert!(verify(&new, &issuer.jwks()));

        assert_eq!(issuer.retire(), vec![old_kid]);
        assert!(!verify(&old, &issuer.jwks()), "old key retired");
        assert!(verify(&new, &issuer.jwks()));
    }

    #[test]
    fn kid_is_the_hash_of_the_pkix_key() {
        // The kid is 43 base64url characters: a SHA-256.
        let issuer = Issuer::new("https://x".into());
        assert_eq!(issuer.kid().len(), 43);
        assert_eq!(issuer.jwks()["keys"][0]["kid"], issuer.kid());
        assert_eq!(
            issuer.discovery()["jwks_uri"],
            "https://x/openid/v1/jwks",
            "jwks_uri under the issuer"
        );
    }

    fn openssl(args: &[&str], input: &[u8]) -> Vec<u8> {
        use std::io::Write as _;
        let mut child = std::process::Command::new("openssl")
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("openssl runs");
        child.stdin.take().unwrap().write_all(input).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "openssl {args:?}");
        out.stdout
    }

    #[test]
    fn an_rsa_issuer_signs_rs256_with_kube_apiservers_kid() {
        let key = openssl(
            &[
                "genpkey",
                "-algorithm",
                "RSA",
                "-pkeyopt",
                "rsa_keygen_bits:2048",
                "-outform",
                "DER",
            ],
            b"",
        );
        let issuer = Issuer::with_rsa_key("https://r".into(), &key).unwrap();
        // keyIDFromPublicKey over the PKIX DER openssl writes for the same key.
        let spki = openssl(
            &["pkey", "-inform", "DER", "-pubout", "-outform", "DER"],
            &key,
        );
        let want = B64.encode(ring::digest::digest(&ring::digest::SHA256, &spki));
        assert_eq!(issuer.kid(), want);
        let jwk = &issuer.jwks()["keys"][0];
        assert_eq!(
            (jwk["kty"].as_str(), jwk["alg"].as_str()),
            (Some("RSA"), Some("RS256"))
        );
        assert_eq!(
            issuer.discovery()["id_token_signing_alg_values_supported"],
            json!(["RS256"])
        );
        let sa = Subject::Spiffe("spiffe://d/x".into());
        let token = issuer.sign(&issuer.claims(&sa, &["a".into()], 1, 60));
        assert!(token.starts_with(&B64.encode(format!(r#"{{"alg":"RS256","kid":"{want}"}}"#))));
        assert!(verify(&token, &issuer.jwks()));
        issuer.rotate();
        assert_eq!(
            issuer.discovery()["id_token_signing_alg_values_supported"],
            json!(["ES256", "RS256"])
        );
        assert!(
            verify(&token, &issuer.jwks()),
            "the RSA key is still published"
        );
        assert!(Issuer::with_rsa_key("https://r".into(), b"not a key").is_err());
    }
}
