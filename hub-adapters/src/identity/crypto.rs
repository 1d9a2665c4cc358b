//! The signature algorithms of JWTs, on ring: a `jsonwebtoken` crypto provider
//! so the hub keeps one crypto library (rustls' ring) instead of linking
//! aws-lc-rs or the RustCrypto crates beside it. Verification covers what
//! OpenID providers sign with (RS*, PS*, ES256/384, EdDSA) plus HS* for
//! completeness; signing (tests and the benchmark only) covers HS* and ES*.

use jsonwebtoken::crypto::{CryptoProvider, JwtSigner, JwtVerifier, KeyUtils};
use jsonwebtoken::errors::{Error, ErrorKind, Result};
use jsonwebtoken::jwk::{EllipticCurve, ThumbprintHash};
use jsonwebtoken::signature::{self, Signer, Verifier};
use jsonwebtoken::{Algorithm, AlgorithmFamily, DecodingKey, DecodingKeyKind, EncodingKey};
use ring::signature as sig;

/// The provider; installed once per process by [`install`].
static PROVIDER: CryptoProvider = CryptoProvider {
    signer_factory: signer,
    verifier_factory: verifier,
    key_utils: KeyUtils {
        rsa_pub_components_from_private_key: |_| {
            Err(ErrorKind::InvalidRsaKey("unsupported".into()).into())
        },
        rsa_pub_components_from_public_key: |_| {
            Err(ErrorKind::InvalidRsaKey("unsupported".into()).into())
        },
        ec_pub_components_from_private_key: |_, _| Err(ErrorKind::InvalidEcdsaKey.into()),
        ed_pub_components_from_private_key: |_, _| Err(ErrorKind::InvalidEddsaKey.into()),
        compute_digest,
    },
};

/// Makes ring the process's JWT crypto provider (idempotent).
pub fn install() {
    // Err means already installed, by us: the only provider this binary has.
    let _ = PROVIDER.install_default();
}

fn compute_digest(data: &[u8], hash: ThumbprintHash) -> Result<Vec<u8>> {
    let alg = match hash {
        ThumbprintHash::SHA256 => &ring::digest::SHA256,
        ThumbprintHash::SHA384 => &ring::digest::SHA384,
        ThumbprintHash::SHA512 => &ring::digest::SHA512,
        _ => return Err(ErrorKind::InvalidAlgorithm.into()),
    };
    Ok(ring::digest::digest(alg, data).as_ref().to_vec())
}

/// Verifies one algorithm with one key.
struct RingVerifier {
    alg: Algorithm,
    key: DecodingKey,
}

impl Verifier<Vec<u8>> for RingVerifier {
    fn verify(&self, msg: &[u8], signature: &Vec<u8>) -> std::result::Result<(), signature::Error> {
        let ok = match (self.alg, self.key.kind()) {
            (
                Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512,
                DecodingKeyKind::SecretOrDer(secret),
            ) => {
                let key = ring::hmac::Key::new(hmac_alg(self.alg), secret);
                ring::hmac::verify(&key, msg, signature).is_ok()
            }
            (_, DecodingKeyKind::RsaModulusExponent { n, e }) => {
                let params = rsa_params(self.alg).ok_or_else(signature::Error::new)?;
                sig::RsaPublicKeyComponents { n, e }
                    .verify(params, msg, signature)
                    .is_ok()
            }
            (_, DecodingKeyKind::SecretOrDer(der)) => {
                let alg: &dyn sig::VerificationAlgorithm = match self.alg {
                    Algorithm::ES256 => &sig::ECDSA_P256_SHA256_FIXED,
                    Algorithm::ES384 => &sig::ECDSA_P384_SHA384_FIXED,
                    Algorithm::EdDSA => &sig::ED25519,
                    other => rsa_params(other).ok_or_else(signature::Error::new)?,
                };
                sig::UnparsedPublicKey::new(alg, der)
                    .verify(msg, signature)
                    .is_ok()
            }
        };
        if ok {
            Ok(())
        } else {
            Err(signature::Error::new())
        }
    }
}

impl JwtVerifier for RingVerifier {
    fn algorithm(&self) -> Algorithm {
        self.alg
    }
}

fn hmac_alg(alg: Algorithm) -> ring::hmac::Algorithm {
    match alg {
        Algorithm::HS384 => ring::hmac::HMAC_SHA384,
        Algorithm::HS512 => ring::hmac::HMAC_SHA512,
        _ => ring::hmac::HMAC_SHA256,
    }
}

fn rsa_params(alg: Algorithm) -> Option<&'static sig::RsaParameters> {
    Some(match alg {
        Algorithm::RS256 => &sig::RSA_PKCS1_2048_8192_SHA256,
        Algorithm::RS384 => &sig::RSA_PKCS1_2048_8192_SHA384,
        Algorithm::RS512 => &sig::RSA_PKCS1_2048_8192_SHA512,
        Algorithm::PS256 => &sig::RSA_PSS_2048_8192_SHA256,
        Algorithm::PS384 => &sig::RSA_PSS_2048_8192_SHA384,
        Algorithm::PS512 => &sig::RSA_PSS_2048_8192_SHA512,
        _ => return None,
    })
}

/// The family an algorithm needs its key in: a key of another family is
/// refused before any verification (the RS256 → HS256 confusion).
fn family(alg: Algorithm) -> AlgorithmFamily {
    match alg {
        Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512 => AlgorithmFamily::Hmac,
        Algorithm::ES256 | Algorithm::ES384 => AlgorithmFamily::Ec,
        Algorithm::EdDSA => AlgorithmFamily::Ed,
        _ => AlgorithmFamily::Rsa,
    }
}

fn verifier(alg: &Algorithm, key: &DecodingKey) -> Result<Box<dyn JwtVerifier>> {
    if key.family() != family(*alg) {
        return Err(ErrorKind::InvalidAlgorithm.into());
    }
    Ok(Box::new(RingVerifier {
        alg: *alg,
        key: key.clone(),
    }))
}

/// Signs HS* (shared secret) or ES256/ES384 (PKCS#8 key).
struct RingSigner {
    alg: Algorithm,
    key: EncodingKey,
}

impl Signer<Vec<u8>> for RingSigner {
    fn try_sign(&self, msg: &[u8]) -> std::result::Result<Vec<u8>, signature::Error> {
        let bytes = self.key.as_bytes();
        match self.alg {
            Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512 => {
                let key = ring::hmac::Key::new(hmac_alg(self.alg), bytes);
                Ok(ring::hmac::sign(&key, msg).as_ref().to_vec())
            }
            Algorithm::ES256 | Algorithm::ES384 => {
                let alg = if self.alg == Algorithm::ES256 {
                    &sig::ECDSA_P256_SHA256_FIXED_SIGNING
                } else {
                    &sig::ECDSA_P384_SHA384_FIXED_SIGNING
                };
                let rng = ring::rand::SystemRandom::new();
                let pair = sig::EcdsaKeyPair::from_pkcs8(alg, bytes, &rng)
                    .map_err(|_| signature::Error::new())?;
                let signed = pair.sign(&rng, msg).map_err(|_| signature::Error::new())?;
                Ok(signed.as_ref().to_vec())
            }
            _ => Err(signature::Error::new()),
        }
    }
}

impl JwtSigner for RingSigner {
    fn algorithm(&self) -> Algorithm {
        self.alg
    }
}

fn signer(alg: &Algorithm, key: &EncodingKey) -> Result<Box<dyn JwtSigner>> {
    match alg {
        Algorithm::HS256
        | Algorithm::HS384
        | Algorithm::HS512
        | Algorithm::ES256
        | Algorithm::ES384
            if key.family() == family(*alg) =>
        {
            Ok(Box::new(RingSigner {
                alg: *alg,
                key: key.clone(),
            }))
        }
        _ => Err(Error::from(ErrorKind::InvalidAlgorithm)),
    }
}

/// The x and y coordinates of an uncompressed P-256/P-384 public key (the
/// `x`, `y` of its JWK).
pub fn ec_public_xy(curve: &EllipticCurve, public: &[u8]) -> Option<(Vec<u8>, Vec<u8>)> {
    let len = match curve {
        EllipticCurve::P256 => 32,
        EllipticCurve::P384 => 48,
        _ => return None,
    };
    if public.len() != 1 + 2 * len || public[0] != 4 {
        return None;
    }
    let (x, y) = public[1..].split_at(len);
    Some((x.to_vec(), y.to_vec()))
}
