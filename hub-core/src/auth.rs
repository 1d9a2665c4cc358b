//! Secrets: generation (`fga_` API tokens, `fgs_` spoke tokens, 32 random
//! bytes so secret scanners recognise them), sha256 hashing for storage, and
//! constant-time comparison of stored hashes.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rand::Rng as _;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// Prefix of API (user) tokens.
pub const API_TOKEN_PREFIX: &str = "fga_";
/// Prefix of spoke (cluster) tokens.
pub const SPOKE_TOKEN_PREFIX: &str = "fgs_";

/// A new random secret: `prefix` + base64url(32 random bytes).
pub fn generate_token(prefix: &str) -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    format!("{prefix}{}", URL_SAFE_NO_PAD.encode(bytes))
}

/// The stored form of a secret: sha256 of its UTF-8 bytes.
pub fn hash_token(token: &str) -> Vec<u8> {
    Sha256::digest(token.as_bytes()).to_vec()
}

/// Compares a stored hash with the hash of a presented secret without
/// leaking, through timing, how many leading bytes matched.
pub fn hashes_equal(stored: &[u8], presented: &[u8]) -> bool {
    stored.ct_eq(presented).into()
}

/// The token from an `Authorization: Bearer <token>` header value.
pub fn bearer_token(header: &str) -> Option<&str> {
    let (scheme, token) = header.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_have_prefix_and_differ() {
        let a = generate_token(API_TOKEN_PREFIX);
        let b = generate_token(API_TOKEN_PREFIX);
        assert!(a.starts_with("fga_"));
        assert_eq!(a.len(), 4 + 43);
        assert_ne!(a, b);
    }

    #[test]
    fn hash_comparison() {
        let h = hash_token("fga_x");
        assert!(hashes_equal(&h, &hash_token("fga_x")));
        assert!(!hashes_equal(&h, &hash_token("fga_y")));
        assert!(!hashes_equal(&h, &h[..10]));
    }

    #[test]
    fn bearer_parsing() {
        assert_eq!(bearer_token("Bearer abc"), Some("abc"));
        assert_eq!(bearer_token("bearer  abc "), Some("abc"));
        assert_eq!(bearer_token("Basic abc"), None);
        assert_eq!(bearer_token("Bearer"), None);
        assert_eq!(bearer_token("Bearer "), None);
    }
}
