//! Spokes signing in with their clusters' own identity (#52) in the benchmark: a
//! fleet of clusters registered with an issuer each (the simulator's
//! service-account issuer, tokens with kube-apiserver's claims; RS256 by default,
//! what the issuers of EKS, GKE, AKS and kubeadm clusters sign with, or ES256, SPIRE's
//! default for JWT-SVIDs) and their keys pinned at registration, so the hub verifies with
//! keys it holds (cached keys: no discovery fetch during the storm); and the
//! cost of one verification with cached keys, measured in this process with the
//! hub's own verifier.

use std::collections::BTreeMap;
use std::time::Instant;

use fleetgate_hub::Service;
use fleetgate_hub::identity::spoke_jwt::{Binding, SpokeIssuers};
use fleetgate_hub::service::types::RegisterCluster;
use fleetgate_sim::issuer::{Issuer, Subject};
use futures::StreamExt as _;
use serde::Serialize;

use crate::swarm::Credential;
use crate::{Error, Result, fleet};

/// How many registrations run at once (as [`fleet::register`]).
const REGISTER_CONCURRENCY: usize = 16;

/// The audience the hub accepts from spokes by default (`--spoke-audience`).
const AUDIENCE: &str = "fleetgate";

/// Lifetime of the benchmark's spoke tokens: longer than any run, so no stream
/// ends at its token's expiry during a measurement.
const TOKEN_TTL_SECONDS: i64 = 3600;

/// The signature algorithm of the JWT fleet's tokens (`--jwt-alg`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum JwtAlg {
    /// RSA 2048 (kube-apiserver's usual `--service-account-signing-key-file`).
    #[default]
    Rs256,
    /// ECDSA P-256 (SPIRE's default JWT-SVID key).
    Es256,
}

impl JwtAlg {
    pub fn name(self) -> &'static str {
        match self {
            JwtAlg::Rs256 => "RS256",
            JwtAlg::Es256 => "ES256",
        }
    }
}

/// RSA keys the RS256 issuers take in turn: generating 2048-bit keys costs tens of
/// milliseconds each, and a verification costs the same whichever key signed (every
/// cluster still has an issuer, a pinned key set and a verifier of its own).
const RSA_KEYS: usize = 8;

/// `RSA_KEYS` fresh RSA 2048 private keys (DER), from `openssl genpkey` (ring cannot
/// generate RSA keys).
fn rsa_keys() -> Result<Vec<Vec<u8>>> {
    (0..RSA_KEYS)
        .map(|_| {
            let out = std::process::Command::new("openssl")
                .args([
                    "genpkey",
                    "-algorithm",
                    "RSA",
                    "-pkeyopt",
                    "rsa_keygen_bits:2048",
                ])
                .args(["-outform", "DER"])
                .output()
                .map_err(|e| Error::setup(format!("running openssl for RS256 keys: {e}")))?;
            if !out.status.success() || out.stdout.is_empty() {
                return Err(Error::setup("openssl genpkey failed (use --jwt-alg es256)"));
            }
            Ok(out.stdout)
        })
        .collect()
}

/// An issuer at `url` signing with `alg` (RS256: the `i`-th of `rsa`, in turn).
fn issuer(url: String, alg: JwtAlg, rsa: &[Vec<u8>], i: usize) -> Result<Issuer> {
    match alg {
        JwtAlg::Es256 => Ok(Issuer::new(url)),
        JwtAlg::Rs256 => Issuer::with_rsa_key(url, &rsa[i % rsa.len()]).map_err(Error::setup),
    }
}

/// The name of JWT cluster `i`.
pub fn cluster_name(i: usize) -> String {
    format!("j-{i:05}")
}

/// The spoke's ServiceAccount (the registration's default).
fn subject() -> Subject {
    Subject::ServiceAccount {
        namespace: "fleetgate-system".into(),
        name: "fleetgate-spoke".into(),
        uid: "00000000-0000-4000-8000-000000000000".into(),
        pod: None,
    }
}

/// A spoke token `issuer` signs now.
fn token(issuer: &Issuer) -> String {
    let now = chrono::Utc::now().timestamp();
    issuer.sign(&issuer.claims(&subject(), &[AUDIENCE.into()], now, TOKEN_TTL_SECONDS))
}

/// Registers clusters `range` (named [`cluster_name`], labelled `labels`),
/// each with an issuer of its own whose keys are pinned; returns each
/// cluster's spoke JWT.
pub async fn register(
    service: &Service,
    range: std::ops::Range<usize>,
    labels: &[(&str, &str)],
    alg: JwtAlg,
) -> Result<Vec<Credential>> {
    let rsa = match alg {
        JwtAlg::Rs256 => rsa_keys()?,
        JwtAlg::Es256 => Vec::new(),
    };
    let actor = fleet::actor();
    let labels: BTreeMap<String, String> = labels
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let results: Vec<Result<Credential>> = futures::stream::iter(range)
        .map(|i| {
            let name = cluster_name(i);
            let issuer = issuer(format!("https://{name}.oidc.bench.invalid"), alg, &rsa, i);
            let actor = &actor;
            let labels = &labels;
            async move {
                let issuer = issuer?;
                let req = RegisterCluster {
                    name: name.clone(),
                    labels: labels.clone(),
                    issuer: Some(issuer.url.clone()),
                    jwks: Some(issuer.jwks()),
                    ..Default::default()
                };
                service
                    .register_cluster(actor, req, Some("scale benchmark (JWT)"))
                    .await?;
                Ok(Credential {
                    cluster: name,
                    token: token(&issuer),
                })
            }
        })
        .buffered(REGISTER_CONCURRENCY)
        .collect()
        .await;
    results.into_iter().collect()
}

/// The cost of one spoke JWT verification with cached keys.
#[derive(Debug, Clone, Default, Serialize)]
pub struct VerifyCost {
    /// The signature algorithm of the tokens.
    pub algorithm: String,
    pub samples: usize,
    pub p50_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
    pub mean_us: f64,
}

/// Verifies one spoke token `samples` times with the hub's verifier (pinned
/// keys, after one verification that built the verifier) and times each; for
/// each algorithm, `first` first.
pub async fn verify_costs(samples: usize, first: JwtAlg) -> Result<Vec<VerifyCost>> {
    let rsa = rsa_keys()?;
    let mut out = Vec::new();
    for alg in [first, JwtAlg::Rs256, JwtAlg::Es256] {
        if out.iter().any(|c: &VerifyCost| c.algorithm == alg.name()) {
            continue;
        }
        let issuer = issuer("https://verify.oidc.bench.invalid".into(), alg, &rsa, 0)?;
        out.push(verify_cost(samples, &issuer, alg).await?);
    }
    Ok(out)
}

async fn verify_cost(samples: usize, issuer: &Issuer, alg: JwtAlg) -> Result<VerifyCost> {
    let issuers = SpokeIssuers::default();
    let binding = Binding {
        issuer: issuer.url.clone(),
        subject: "system:serviceaccount:fleetgate-system:fleetgate-spoke".into(),
        jwks: Some(issuer.jwks()),
    };
    let token = token(issuer);
    let now = chrono::Utc::now();
    issuers
        .verify(&binding, &token, now)
        .await
        .map_err(|r| Error::setup(format!("the bench's spoke JWT is refused: {}", r.message)))?;
    let mut us: Vec<f64> = Vec::with_capacity(samples);
    for _ in 0..samples.max(1) {
        let t = Instant::now();
        let verified = issuers.verify(&binding, &token, now).await;
        us.push(t.elapsed().as_secs_f64() * 1e6);
        if verified.is_err() {
            return Err(Error::setup("a verification of the bench's JWT failed"));
        }
    }
    let mean = us.iter().sum::<f64>() / us.len() as f64;
    us.sort_by(f64::total_cmp);
    let rank = |p: f64| us[((p * us.len() as f64).ceil() as usize).clamp(1, us.len()) - 1];
    Ok(VerifyCost {
        algorithm: alg.name().into(),
        samples: us.len(),
        p50_us: rank(0.50),
        p99_us: rank(0.99),
        max_us: us[us.len() - 1],
        mean_us: mean,
    })
}
